/* mp_bw: bandwidth of one put stream from rank 0 to rank 1 over 1..K planes,
 * in the steps of perf_tests.c (prepare -> barrier -> measure -> barrier ->
 * verify -> report), one line per plane count.
 *
 *  spread   put i is pinned to plane i mod k (TRIAD_F_PLANE): the planes of
 *           consecutive operations go round-robin over planes 0 .. k-1;
 *  striped  every put carries TRIAD_F_STRIPE and the library splits it over
 *           the planes itself, when this triad.h has that flag (otherwise
 *           the report says that striping is not available).
 *
 * Each line also gives the payload bytes rank 0 sent on every plane during
 * the measured puts (tx_bytes of triad_conn_stats towards rank 1), so the
 * spread shows, and the bandwidth against the one-plane line of the same
 * run. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "perf.h"

#define MIB (1024.0 * 1024.0)

struct mp_bw_arg {
	int k;		/* spread over planes 0 .. k-1; 0: striped */
	unsigned flags; /* for the striped puts */
};

/* Payload bytes rank 0 sent to rank 1 on every plane. */
static int plane_tx_bytes(struct perf_run *r, uint64_t *bytes)
{
	for (int p = 0; p < triad_nplanes(r->ctx); p++) {
		struct triad_conn_stats s = { .field_mask = TRIAD_CONN_STATS_LINK };
		int ret = triad_conn_stats(r->ctx, PERF_SERVER, p, &s);

		if (ret) {
			perf_err(r, "triad_conn_stats", ret);
			return ret;
		}
		bytes[p] = s.tx_bytes;
	}
	return 0;
}

static int post_mp(struct perf_run *r, size_t size, long i, triad_req_t **req_p, void *arg)
{
	const struct mp_bw_arg *a = arg;
	unsigned flags = a->k ? TRIAD_F_PLANE(i % a->k) : a->flags;
	int ret = triad_put(r->ctx, perf_send_area(r), size, PERF_SERVER, PERF_WIN_ID, 0, flags,
			    req_p);

	if (ret)
		perf_err(r, "triad_put", ret);
	return ret;
}

static void mp_header(struct perf_run *r)
{
	int np = triad_nplanes(r->ctx);

	perf_print_rule();
	printf(" triad mp_bw: rank %d -> rank %d, %d ranks, %d plane(s), %d puts outstanding;\n"
	       " spread k: put i pinned to plane i mod k; striped: TRIAD_F_STRIPE, the library "
	       "splits each put\n", PERF_CLIENT, PERF_SERVER, triad_size(r->ctx), np,
	       r->o->window);
	perf_print_rule();
	printf(" %-8s %-10s %-11s %15s %18s %14s %9s", "#bytes", "mode", "#iterations",
	       "BW peak[MiB/s]", "BW average[MiB/s]", "MsgRate[Mpps]", "vs 1 pl.");
	for (int p = 0; p < np; p++)
		printf("  plane%d[MiB]", p);
	printf("\n");
	r->header_done = 1;
}

static void mp_report(struct perf_run *r, size_t size, long iters, long warmup, int k,
		      const struct perf_bw *b, double one, const uint64_t *bytes)
{
	int np = triad_nplanes(r->ctx);
	char mode[16];

	if (k)
		snprintf(mode, sizeof(mode), "spread %d", k);
	else
		snprintf(mode, sizeof(mode), "striped");
	if (r->o->json) {
		printf("{\"test\":\"mp_bw\",\"mode\":\"%s\",\"planes_used\":%d,\"bytes\":%zu,"
		       "\"iterations\":%ld,\"warmup\":%ld,\"ranks\":%d,\"planes\":%d,\"window\":%d,"
		       "\"bw_peak_mib_s\":%.3f,\"bw_avg_mib_s\":%.3f,\"msg_rate_mpps\":%.6f,"
		       "\"vs_one_plane\":%.3f,\"plane_tx_bytes\":[",
		       k ? "spread" : "striped", k ? k : np, size, iters, warmup,
		       triad_size(r->ctx), np, r->o->window, b->peak_mib_s, b->avg_mib_s, b->mpps,
		       one > 0 ? b->avg_mib_s / one : 0.0);
		for (int p = 0; p < np; p++)
			printf("%s%llu", p ? "," : "", (unsigned long long)bytes[p]);
		printf("]}\n");
		fflush(stdout);
		return;
	}
	if (!r->header_done)
		mp_header(r);
	printf(" %-8zu %-10s %-11ld %15.2f %18.2f %14.6f %9.3f", size, mode, iters,
	       b->peak_mib_s, b->avg_mib_s, b->mpps, one > 0 ? b->avg_mib_s / one : 0.0);
	for (int p = 0; p < np; p++)
		printf(" %12.2f", (double)bytes[p] / MIB);
	printf("\n");
	fflush(stdout);
}

/* One stream of warmup + iters puts; every rank calls it.  *avg_p: the
 * average bandwidth (client). */
static int mp_one(struct perf_run *r, size_t size, long iters, long warmup,
		  struct mp_bw_arg *a, struct perf_bufs *b, double one, double *avg_p)
{
	const struct perf_stream_ops ops = { .what = "put", .post = post_mp, .arg = a };
	uint64_t before[TRIAD_MAX_PLANES], after[TRIAD_MAX_PLANES];
	struct perf_bw bw;
	int ret;

	perf_prepare(r, size);
	ret = perf_barrier(r, r->timeout_ms, "before mp_bw");
	if (!ret && r->rank == PERF_CLIENT) {
		ret = perf_stream(r, size, warmup, b->ring, NULL, NULL, &ops);
		if (!ret)
			ret = plane_tx_bytes(r, before);
		if (!ret)
			ret = perf_stream(r, size, iters, b->ring, b->tpost, b->tcomp, &ops);
		if (!ret)
			ret = plane_tx_bytes(r, after);
	}
	if (!ret)
		ret = perf_barrier(r, perf_phase_timeout_ms(r, size, warmup + iters, 1),
				   "after mp_bw");
	if (!ret && r->rank == PERF_SERVER)
		perf_verify(r, size, size, "mp_bw");
	if (!ret && r->rank == PERF_CLIENT) {
		for (int p = 0; p < triad_nplanes(r->ctx); p++)
			after[p] -= before[p];
		perf_bw_summarize(b->tpost, b->tcomp, (size_t)iters, size, &bw);
		if (one <= 0) /* this is the one-plane line */
			one = bw.avg_mib_s;
		mp_report(r, size, iters, warmup, a->k, &bw, one, after);
		*avg_p = bw.avg_mib_s;
	}
	return ret;
}

int perf_mp_bw(struct perf_run *r, size_t size, long iters, long warmup)
{
	int np = triad_nplanes(r->ctx);
	int kmax = r->o->planes > 0 ? r->o->planes : np;
	struct perf_bufs b = { 0 };
	double one = 0, avg = 0;
	int ret = 0;

	if (r->rank == PERF_CLIENT && (ret = perf_bufs_alloc(r, &b, iters, "mp_bw")))
		return ret;
	for (int k = 1; !ret && k <= kmax; k++) {
		struct mp_bw_arg a = { .k = k };

		ret = mp_one(r, size, iters, warmup, &a, &b, one, &avg);
		if (k == 1)
			one = avg;
	}
#ifdef TRIAD_F_STRIPE
	if (!ret) {
		struct mp_bw_arg a = { .k = 0, .flags = TRIAD_F_STRIPE };

		ret = mp_one(r, size, iters, warmup, &a, &b, one, &avg);
	}
#else
	static int said; /* once, not for every size of a sweep */

	if (!ret && r->rank == PERF_CLIENT && !said) {
		if (r->o->json)
			printf("{\"test\":\"mp_bw\",\"mode\":\"striped\",\"available\":false,"
			       "\"why\":\"triad.h has no TRIAD_F_STRIPE\"}\n");
		else
			printf(" %-8s %-10s striping is not available: this triad.h has no "
			       "TRIAD_F_STRIPE\n", "", "striped");
		fflush(stdout);
		said = 1;
	}
#endif
	perf_bufs_free(&b);
	return ret;
}
