/* Event trace: with TRIAD_TRACE=DIR, a context records timestamped events
 * (wake-ups, messages in and out, RDMA posts and completions) in a ring of
 * TR_TRACE_CAP entries and writes it to DIR/triad-trace.RANK at triad_fini.
 * Clocks are CLOCK_MONOTONIC, so the files of ranks in one host (or one VM)
 * merge into one timeline: scripts/trace-merge DIR prints it with the gaps.
 * Off, it costs one branch per event. */
#ifndef TRIAD_BASE_TRACE_H
#define TRIAD_BASE_TRACE_H

#include <stdint.h>

#define TR_TRACE_CAP (1u << 16)

struct tr_trace;

/* Allocates the ring; *t stays NULL when dir is empty.  -ENOMEM, or
 * -EINVAL with a message when dir is not a writable directory. */
int tr_trace_open(struct tr_trace **t, const char *dir, int rank);
/* Writes the file (the last TR_TRACE_CAP events) and frees the ring. */
void tr_trace_close(struct tr_trace *t);
/* Records one event: what must be a string literal (only its address is
 * kept); a and b are free-form (peer, type, length...).  Thread-safe. */
void tr_trace_rec(struct tr_trace *t, const char *what, long a, long b);

#define TR_EV(ctx, what, a, b)                                                 \
	do {                                                                   \
		if ((ctx)->trace)                                              \
			tr_trace_rec((ctx)->trace, (what), (long)(a), (long)(b)); \
	} while (0)

#endif
