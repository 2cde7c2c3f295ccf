#include "base/trace.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "base/log.h"

struct tr_trace_ev {
	uint64_t ns;
	const char *what;
	long a, b;
	int tid;
};

struct tr_trace {
	char path[300];
	int rank;
	uint64_t next; /* events recorded so far; the ring keeps the last CAP */
	struct tr_trace_ev ev[TR_TRACE_CAP];
};

static _Thread_local int my_tid;

int tr_trace_open(struct tr_trace **t_p, const char *dir, int rank)
{
	struct tr_trace *t;

	*t_p = NULL;
	if (!dir || !*dir)
		return 0;
	if (access(dir, W_OK | X_OK)) {
		tr_error("TRIAD_TRACE=%s: not a writable directory: %m", dir);
		return -EINVAL;
	}
	t = calloc(1, sizeof(*t));
	if (!t)
		return -ENOMEM;
	snprintf(t->path, sizeof(t->path), "%s/triad-trace.%d", dir, rank);
	t->rank = rank;
	*t_p = t;
	return 0;
}

void tr_trace_rec(struct tr_trace *t, const char *what, long a, long b)
{
	struct timespec ts;
	uint64_t i = __atomic_fetch_add(&t->next, 1, __ATOMIC_RELAXED);
	struct tr_trace_ev *e = &t->ev[i % TR_TRACE_CAP];

	if (!my_tid)
		my_tid = (int)syscall(SYS_gettid);
	clock_gettime(CLOCK_MONOTONIC, &ts);
	e->ns = (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
	e->what = what;
	e->a = a;
	e->b = b;
	e->tid = my_tid;
}

void tr_trace_close(struct tr_trace *t)
{
	FILE *f;
	uint64_t first, i;

	if (!t)
		return;
	f = fopen(t->path, "w");
	if (!f) {
		tr_error("TRIAD_TRACE: cannot write %s: %m", t->path);
		free(t);
		return;
	}
	first = t->next > TR_TRACE_CAP ? t->next - TR_TRACE_CAP : 0;
	for (i = first; i < t->next; i++) {
		const struct tr_trace_ev *e = &t->ev[i % TR_TRACE_CAP];

		fprintf(f, "%llu r%d t%d %s %ld %ld\n", (unsigned long long)e->ns, t->rank,
			e->tid, e->what, e->a, e->b);
	}
	if (fclose(f))
		tr_error("TRIAD_TRACE: writing %s failed: %m", t->path);
	free(t);
}
