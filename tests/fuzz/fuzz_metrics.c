/* libFuzzer target: the parser of triadd's metrics (lib/ctl/metrics.c),
 * which triadctl top reads from the daemon's socket, on arbitrary bytes
 * (not NUL-terminated: the parser takes a length).  An error is one line
 * naming what is wrong; a snapshot that parses keeps metrics.h's
 * promises, and top's table of it (with itself as the one before) is
 * made within its buffer. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "ctl/metrics.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct tr_ctl_msnap s, t;
	char err[200], frame[4096];
	size_t n;

	err[0] = '\0';
	if (tr_ctl_metrics_parse((const char *)data, size, &s, err, sizeof(err))) {
		if (!err[0] || strchr(err, '\n'))
			abort();
		return 0;
	}
	if (s.nplanes < 1 || s.nplanes > TRIAD_MAX_PLANES)
		abort();
	for (unsigned p = 0; p < s.nplanes; p++) {
		const struct tr_ctl_mplane *e = &s.plane[p];
		size_t len = strnlen(e->name, sizeof(e->name));

		if (!len || len == sizeof(e->name) || e->state < -1 ||
		    e->state >= TR_CTL_PSTATE_MAX || e->reason < -1 || e->reason >= TR_CTL_REASON_MAX)
			abort();
		for (unsigned q = 0; q < p; q++)
			if (!strcmp(e->name, s.plane[q].name))
				abort();
	}
	t = s;
	n = tr_ctl_top_frame(&t, &s, 1.0, frame, sizeof(frame));
	if (strlen(frame) != (n < sizeof(frame) ? n : sizeof(frame) - 1))
		abort();
	return 0;
}
