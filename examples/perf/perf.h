/* triad_perf: ib_write_lat / ib_read_lat / ib_write_bw, on the public triad
 * API only.  Shared between the command line (triad_perf.c), the tests
 * (perf_tests.c) and the statistics (perf_stats.c). */
#ifndef TRIAD_PERF_H
#define TRIAD_PERF_H

#include <stddef.h>
#include <stdint.h>

#include "triad.h"

#define PERF_WIN_ID 1u
#define PERF_CLIENT 0 /* the rank that measures and reports */
#define PERF_SERVER 1 /* its peer */

/* Exit statuses. */
enum { PERF_EXIT_OK = 0, PERF_EXIT_FAIL = 1, PERF_EXIT_USAGE = 2 };

enum perf_kind { PERF_LAT, PERF_BW };

struct perf_run;
/* Runs one size; every rank calls it (ranks other than the client and the
 * server only take part in the barriers).  0, or a negative errno after
 * printing why. */
typedef int (*perf_test_fn)(struct perf_run *r, size_t size, long iters, long warmup);

struct perf_cmd {
	const char *name;
	perf_test_fn run;
	enum perf_kind kind;
	size_t def_size;
	const char *summary;
};

struct perf_opts {
	const struct perf_cmd *cmd; /* NULL: nothing to run (--config alone) */
	size_t size;		    /* 0: the command's default */
	int all;		    /* -a: sweep 2 B .. 8 MiB */
	long iters;		    /* 0: default, scaled by size */
	long warmup;		    /* < 0: default */
	int window;		    /* put_bw: puts outstanding */
	int plane;		    /* < 0: the library chooses */
	int json;
	int config;
	int timeout_s;		    /* bound on every single wait */
};

struct perf_run {
	const struct perf_opts *o;
	triad_ctx_t *ctx;
	int rank;
	unsigned flags;	  /* TRIAD_F_PLANE(plane) or 0 */
	int timeout_ms;
	/* One window: [0, area) receives, [area, 2 * area) sends. */
	uint8_t *buf;
	size_t area;
	triad_win_t *win;
	int header_done;  /* the table header was printed */
	long verify_errors;
};

/* perf_tests.c */
extern const struct perf_cmd perf_cmds[];
extern const size_t perf_ncmds;
/* Defaults that depend on the size (documented in --help). */
long perf_default_iters(enum perf_kind kind, size_t size);
long perf_default_warmup(long iters);

/* perf_stats.c: summaries of one size's samples. */
struct perf_lat {
	double min, max, typical, avg, stdev, p99, p999; /* usec */
};
/* Sorts ns[] in place; scale multiplies every sample (0.5: half round
 * trip). */
void perf_lat_summarize(uint64_t *ns, size_t n, double scale, struct perf_lat *out);

struct perf_bw {
	double peak_mib_s, avg_mib_s, mpps;
};
/* tpost[i], tcomp[i]: when operation i was posted and seen complete (ns). */
void perf_bw_summarize(const uint64_t *tpost, const uint64_t *tcomp, size_t n, size_t size,
		       struct perf_bw *out);

#endif
