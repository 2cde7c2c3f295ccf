/* overlap: how much of a broadcast hides behind the non-roots' compute,
 * triad only (examples/overlap.c measures the same against MPI_Ibcast,
 * under mpirun; both take the compute and the hidden fraction from
 * examples/overlap.h).
 *
 * Every rank broadcasts [0, size) of its window's receive area from --root.
 * Per size, after --warmup broadcasts, --iters rounds of three phases,
 * interleaved so that drifts of the host hit all three alike, each framed
 * by a barrier and timed by every rank from the barrier's end:
 *   bcast alone  every rank starts the broadcast and waits for it;
 *   compute      every non-root computes --compute us (a spin on the clock,
 *                overlap_compute) alone; the root does nothing;
 *   total        every non-root starts the broadcast, computes the same
 *                time making no library call (its progress thread serves
 *                the copies it is ordered to make), then waits; the root
 *                starts and waits.
 * Each rank takes its median of each phase; the non-roots put theirs into
 * the root's send area, and the root reports the slowest rank's median of
 * each, and
 *   hidden = (bcast alone + compute - total) / min(bcast alone, compute):
 * 1 when the shorter of the two vanished behind the other, 0 when they
 * simply added up.  Every broadcast's data is checked at every non-root,
 * outside the timed part. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "overlap.h" /* examples/overlap.h, shared with examples/overlap.c */
#include "perf.h"

#define OVERLAP_ITERS 10
#define OVERLAP_WARMUP 1

enum { PH_ALONE, PH_COMPUTE, PH_TOTAL, NPHASES };

/* What a non-root puts into the root's send area, slot = its rank. */
struct ov_share {
	double med_us[NPHASES];
};

static int bcast_once(struct perf_run *r, size_t size, long compute_us)
{
	int busy = compute_us > 0 && r->rank != r->o->root;
	triad_req_t *req;
	int ret = triad_bcast(r->ctx, r->o->root, PERF_WIN_ID, 0, size,
			      (enum triad_bcast_algo)r->o->algo, &req);

	if (ret) {
		perf_err(r, "triad_bcast", ret);
		return ret;
	}
	if (busy)
		overlap_compute(compute_us);
	ret = triad_wait(req, r->timeout_ms + (int)(compute_us / 1000));
	if (ret) {
		perf_err(r, "triad_wait (bcast)", ret);
		return ret; /* leaked on purpose: the library may still complete it */
	}
	return perf_finish_req(r, req, "bcast");
}

/* The non-roots' area is zeroed before every broadcast that carries data:
 * a broadcast that did not reach them shows. */
static void clear(struct perf_run *r, size_t size)
{
	if (r->rank != r->o->root)
		memset(perf_recv_area(r), 0, size);
}

/* One timed phase; *us: this rank's time from the barrier's end. */
static int phase(struct perf_run *r, int ph, size_t size, int bar_ms, double *us)
{
	long c = r->o->compute_us;
	double t0;
	int ret;

	if (ph != PH_COMPUTE)
		clear(r, size);
	ret = perf_barrier(r, bar_ms, "before an overlap phase");
	if (ret)
		return ret;
	t0 = overlap_now_us();
	if (ph == PH_COMPUTE) {
		if (r->rank != r->o->root)
			overlap_compute(c);
		ret = 0;
	} else {
		ret = bcast_once(r, size, ph == PH_TOTAL ? c : 0);
	}
	*us = overlap_now_us() - t0;
	if (!ret && ph != PH_COMPUTE && r->rank != r->o->root)
		perf_verify(r, size, size, ph == PH_TOTAL ? "overlap (with compute)" : "overlap");
	return ret;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static double median(double *v, long n)
{
	qsort(v, (size_t)n, sizeof(*v), cmp_double);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

static int share(struct perf_run *r, const struct ov_share *mine)
{
	if (r->rank != r->o->root)
		*(struct ov_share *)(void *)perf_send_area(r) = *mine;
	return perf_share_with_root(r, sizeof(*mine));
}

static const struct perf_plot overlap_plot = {
	.title = "triad_bcast with compute", .xlabel = "broadcast size", .ylabel = "usec",
	.x = "bytes", .y = { "t_bcast_us", "t_compute_us", "t_total_us" },
	.ytitle = { "bcast alone", "compute alone", "bcast + compute" }, .logy = 1,
};

/* At the root: the slowest rank's median of each phase (the root's own
 * counts for the broadcast alone; it does not compute). */
static void report(struct perf_run *r, size_t size, long iters, long warmup,
		   const struct ov_share *own)
{
	const struct ov_share *sh = (const struct ov_share *)(const void *)perf_send_area(r);
	int n = triad_size(r->ctx);
	double slow[NPHASES] = { own->med_us[PH_ALONE], 0, 0 };
	char title[512];

	for (int i = 0; i < n; i++)
		for (int p = 0; p < NPHASES && i != r->o->root; p++)
			if (sh[i].med_us[p] > slow[p])
				slow[p] = sh[i].med_us[p];

	double hidden = overlap_hidden(slow[PH_ALONE], slow[PH_COMPUTE], slow[PH_TOTAL]);
	const struct perf_field row[] = {
		PF_STR("test", NULL, 0, "overlap"),
		PF_STR("algo", NULL, 0, r->o->algo == TRIAD_BCAST_GREEDY	  ? "greedy"
					: r->o->algo == TRIAD_BCAST_BINOMIAL  ? "binomial"
					: r->o->algo == TRIAD_BCAST_PIPELINED ? "pipelined"
					: r->o->algo == TRIAD_BCAST_TREE      ? "tree"
									      : "auto"),
		PF_INT("bytes", "#bytes", 9, size),
		PF_INT("iterations", "#iterations", 11, iters),
		PF_INT("warmup", NULL, 0, warmup),
		PF_INT("ranks", NULL, 0, n),
		PF_INT("root", NULL, 0, r->o->root),
		PF_INT("compute_us", "C[usec]", 10, r->o->compute_us),
		PF_DBL("t_bcast_us", "bcast[usec]", 12, 1, slow[PH_ALONE]),
		PF_DBL("t_compute_us", "compute[usec]", 14, 1, slow[PH_COMPUTE]),
		PF_DBL("t_total_us", "total[usec]", 12, 1, slow[PH_TOTAL]),
		PF_DBL("hidden", "hidden", 8, 3, hidden),
	};

	snprintf(title, sizeof(title),
		 " triad overlap from rank %d to %d ranks: every non-root starts the broadcast, "
		 "computes C us with no\n"
		 " library call, then waits; the slowest rank's median of: the broadcast alone, "
		 "the compute alone, both\n"
		 " (total); hidden = (bcast + compute - total) / min(bcast, compute): 1 = the "
		 "shorter vanished, 0 = they added up\n",
		 r->o->root, n);
	perf_out_row(r, title, row, PF_N(row), &overlap_plot);
}

int perf_overlap(struct perf_run *r, size_t size, long iters, long warmup)
{
	const struct perf_opts *o = r->o;
	int n = triad_size(r->ctx), bar_ms, ret = 0;
	double *t[NPHASES] = { 0 }, dummy;
	struct ov_share mine = { { 0 } };

	if (o->root >= n) {
		if (r->rank == 0)
			fprintf(stderr, "triad-perf: --root %d: the world has %d ranks\n", o->root, n);
		return -EINVAL;
	}
	if ((size_t)n * sizeof(struct ov_share) > r->area) {
		if (r->rank == 0)
			fprintf(stderr, "triad-perf: overlap: %d ranks do not fit the report area\n",
				n);
		return -EINVAL;
	}
	if (!o->iters)
		iters = OVERLAP_ITERS;
	if (o->warmup < 0)
		warmup = OVERLAP_WARMUP;
	for (int p = 0; p < NPHASES; p++) {
		t[p] = calloc((size_t)iters, sizeof(*t[p]));
		if (!t[p]) {
			perf_err(r, "overlap", -ENOMEM);
			ret = -ENOMEM;
			goto out;
		}
	}
	if (r->rank == o->root)
		for (size_t i = 0; i < size; i++)
			perf_recv_area(r)[i] = perf_pattern(i, size);
	/* A barrier waits for the slowest rank's broadcast and compute. */
	bar_ms = perf_phase_timeout_ms(r, size, 1, n) + (int)(o->compute_us / 1000);
	for (long i = 0; !ret && i < warmup; i++)
		ret = phase(r, PH_ALONE, size, bar_ms, &dummy);
	for (long i = 0; !ret && i < iters; i++)
		for (int p = 0; !ret && p < NPHASES; p++)
			ret = phase(r, p, size, bar_ms, &t[p][i]);
	if (ret)
		goto out;
	for (int p = 0; p < NPHASES; p++)
		mine.med_us[p] = median(t[p], iters);
	ret = share(r, &mine);
	if (!ret)
		ret = perf_barrier(r, bar_ms, "after overlap");
	if (!ret && r->rank == o->root)
		report(r, size, iters, warmup, &mine);
out:
	for (int p = 0; p < NPHASES; p++)
		free(t[p]);
	return ret;
}
