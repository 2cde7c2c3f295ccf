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

/* A sweep's plot: the rows spread over every plane. */
static const struct perf_plot mp_plot = {
	.title = "put bandwidth spread over every plane", .xlabel = "message size",
	.ylabel = "MiB/s", .x = "bytes", .y = { "bw_avg_mib_s", "bw_peak_mib_s" },
	.ytitle = { "average", "peak" },
};

static void mp_report(struct perf_run *r, size_t size, long iters, long warmup, int k,
		      const struct perf_bw *b, double one, const uint64_t *bytes)
{
	static char keys[TRIAD_MAX_PLANES][24], heads[TRIAD_MAX_PLANES][24];
	int np = triad_nplanes(r->ctx);
	char title[512], tx[TRIAD_MAX_PLANES * 24 + 4];
	struct perf_field f[16 + TRIAD_MAX_PLANES];
	size_t n = 0, len;
	const struct perf_field figs[] = {
		PF_STR("test", NULL, 0, "mp_bw"),
		PF_INT("bytes", "#bytes", 8, size),
		PF_STR("mode", "mode", 7, k ? "spread" : "striped"),
		PF_INT("planes_used", "planes", 6, k ? k : np),
		PF_INT("iterations", "#iterations", 11, iters),
		PF_INT("warmup", NULL, 0, warmup),
		PF_INT("ranks", NULL, 0, triad_size(r->ctx)),
		PF_INT("planes", NULL, 0, np),
		PF_INT("window", NULL, 0, r->o->window),
		PF_DBL("bw_peak_mib_s", "BW peak[MiB/s]", 15, 3, b->peak_mib_s),
		PF_DBL("bw_avg_mib_s", "BW average[MiB/s]", 18, 3, b->avg_mib_s),
		PF_DBL("msg_rate_mpps", "MsgRate[Mpps]", 14, 6, b->mpps),
		PF_DBL("vs_one_plane", "vs 1 pl.", 9, 3, one > 0 ? b->avg_mib_s / one : 0.0),
		PF_RAW("plane_tx_bytes", tx),
	};

	perf_fields_add(f, &n, PF_N(f), figs, PF_N(figs));
	len = (size_t)snprintf(tx, sizeof(tx), "[");
	for (int p = 0; p < np; p++) {
		len += (size_t)snprintf(tx + len, sizeof(tx) - len, "%s%llu", p ? "," : "",
					(unsigned long long)bytes[p]);
		snprintf(keys[p], sizeof(keys[p]), "plane%d_mib", p);
		snprintf(heads[p], sizeof(heads[p]), "plane%d[MiB]", p);
		f[n++] = (struct perf_field)PF_DBL(keys[p], heads[p], 12, 2,
						   (double)bytes[p] / MIB);
	}
	snprintf(tx + len, sizeof(tx) - len, "]");
	snprintf(title, sizeof(title),
		 " triad mp_bw: rank %d -> rank %d, %d ranks, %d plane(s), %d puts outstanding;\n"
		 " spread k: put i pinned to plane i mod k; striped: TRIAD_F_STRIPE, the library "
		 "splits each put\n", PERF_CLIENT, PERF_SERVER, triad_size(r->ctx), np,
		 r->o->window);
	perf_out_row(r, title, f, n, k == np ? &mp_plot : NULL);
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
		if (r->o->format == PERF_FMT_JSON)
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
