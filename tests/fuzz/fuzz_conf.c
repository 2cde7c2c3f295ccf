/* libFuzzer target: triadd's configuration parser (lib/ctl/conf.c) on
 * arbitrary text.  An error must be one "FILE:LINE: message"; a
 * configuration that parses must keep conf.h's promises. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "ctl/conf.h"
#include "fuzz_text.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const char name[] = "fuzz.conf";
	struct tr_ctl_conf c;
	struct tr_ctl_policy p;
	char err[512], *text = fuzz_text(data, size), *colon;
	int ret;

	if (!text)
		return 0;
	err[0] = '\0';
	ret = tr_ctl_conf_parse(text, name, &c, err, sizeof(err));
	free(text);
	if (ret) {
		/* "fuzz.conf:" then a line number >= 1, ": ", a message */
		fuzz_error_names(ret, err, name);
		colon = err + sizeof(name);
		if (strtol(colon, &colon, 10) < 1 || strncmp(colon, ": ", 2) || !colon[2])
			abort();
		return 0;
	}
	if (c.nplanes < 1 || c.nplanes > TRIAD_MAX_PLANES || c.socket[0] != '/' ||
	    c.socket_mode > 0777)
		abort();
	/* [health]: in range, the hold's ceiling not below the hold */
	if (c.health.enabled > 1 || c.health.errors_permille < 1 ||
	    c.health.errors_permille > 1000 || c.health.latency_ratio > 1000 ||
	    c.health.restore_ms < 100 || c.health.restore_max_ms < c.health.restore_ms)
		abort();
	for (int i = 0; i < c.nplanes; i++) {
		if (!c.plane[i].name[0] || !c.plane[i].device[0] || c.plane[i].port < 1 ||
		    (!c.plane[i].netdev[0] && !c.plane[i].has_subnet))
			abort();
		for (int j = 0; j < i; j++)
			if (!strcmp(c.plane[i].name, c.plane[j].name))
				abort();
	}
	tr_ctl_conf_policy(&c, &p);
	if (tr_ctl_policy_check(&p))
		abort();
	return 0;
}
