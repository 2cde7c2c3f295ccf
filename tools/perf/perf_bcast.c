/* bcast: triad_bcast among all ranks, in the manner of nccl-tests'
 * broadcast_perf, plus how much computing the non-root ranks keep while a
 * broadcast runs under them.
 *
 * Every rank broadcasts [0, size) of its window's receive area from --root
 * (which holds the pattern; the others start zeroed).  Three steps per size:
 *  1. time: warmup + iters times: barrier, every rank calls triad_bcast
 *     and waits.  A sample is the root's time from its call to its
 *     request's completion (every rank holds the data).  Afterwards every
 *     non-root checks its window (outside the timing).
 *  2. compute: iters times, two phases each, interleaved so that drifts of
 *     the host hit both alike:
 *     idle:  barrier; every non-root runs work slices (a fixed unit of
 *            integer arithmetic, WORK_UNIT steps) for as long as its own
 *            median broadcast took in step 1, and counts them; the root
 *            sleeps as long as its own median.  No broadcast runs.
 *     bcast: barrier; every rank calls triad_bcast; the root waits; every
 *            non-root runs the same slices for the same time, making no
 *            triad call at all (its progress thread serves the copies it
 *            is ordered to make), then waits for its request.
 *     A non-root's fraction = (slices/s during bcast) / (slices/s idle).
 *     (An earlier version called triad_test between slices: that made the
 *     computing thread the progress engine, so every copy waited for the
 *     end of a slice and the broadcast ran 2-3x slower under compute.)
 *  3. every non-root puts its figures into the root's send area; barrier;
 *     the root reports: time (median and average of step 1), algbw =
 *     size / median time, busbw = algbw (nccl-tests' definitions: a
 *     broadcast's bus factor is 1; MB/s = 10^6 bytes/s), the aggregate
 *     size * (n - 1) / time that the fabric moved, and the non-roots'
 *     compute fraction (median and minimum over the non-roots).
 * The CPUs are shared by every rank's threads: on the emulated test VM
 * (8 ranks, 2 vCPUs) the idle baseline has the root asleep, the bcast
 * phase has the root and the progress engines running, so the fraction
 * includes the CPU the broadcast machinery takes on a shared CPU.  With
 * Soft-RoCE that machinery is mostly the kernel's (rxe packs, checksums
 * and places every byte): the root also reads /proc/stat around both
 * phases (the bcast phase for the non-roots' compute window only) and
 * reports the share of all CPU time the kernel took in each (system + irq
 * + softirq), where it can read it. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "perf.h"

/* One work slice: WORK_UNIT dependent multiply-xorshift steps. */
#define WORK_UNIT 8192
/* Default iterations (-n not given): 20 up to 1 MiB, scaled by 1 MiB/size
 * above, at least 3; warm-up 2. */
#define BCAST_ITERS 20
#define BCAST_MIN_ITERS 3
#define BCAST_WARMUP 2

/* What a non-root sends the root after step 2. */
struct bc_share {
	double fraction;      /* (slices/s during bcast) / (slices/s idle) */
	double rate_idle;     /* slices per second */
	double rate_bcast;
	double slice_ns;      /* one idle slice */
};

/* The root's /proc/stat totals over the idle [0] and bcast [1] phases. */
struct cpu_acc {
	uint64_t kernel[2], all[2];
	uint64_t k0, a0; /* at the start of the phase in progress */
	int ok;		 /* /proc/stat was readable every time */
};

/* Reads the kernel and total jiffies of all CPUs; 0 when unreadable. */
static int cpu_read(uint64_t *kernel, uint64_t *all)
{
	unsigned long long v[8] = { 0 };
	FILE *f = fopen("/proc/stat", "r");
	int n;

	if (!f)
		return 0;
	n = fscanf(f, "cpu %llu %llu %llu %llu %llu %llu %llu %llu", &v[0], &v[1], &v[2], &v[3],
		   &v[4], &v[5], &v[6], &v[7]);
	fclose(f);
	if (n != 8)
		return 0;
	*kernel = v[2] + v[5] + v[6]; /* system, irq, softirq */
	*all = v[0] + v[1] + v[2] + v[3] + v[4] + v[5] + v[6] + v[7];
	return 1;
}

/* Phase p starts (start != 0) or ends: adds its jiffies to acc. */
static void cpu_mark(struct cpu_acc *acc, int p, int start)
{
	uint64_t k, a;

	if (!cpu_read(&k, &a)) {
		acc->ok = 0;
		return;
	}
	if (start) {
		acc->k0 = k;
		acc->a0 = a;
	} else {
		acc->kernel[p] += k - acc->k0;
		acc->all[p] += a - acc->a0;
	}
}

static double cpu_share(const struct cpu_acc *acc, int p)
{
	return acc->ok && acc->all[p] ? (double)acc->kernel[p] / (double)acc->all[p] : -1;
}

static volatile uint64_t work_sink;

static uint64_t work_slice(uint64_t x)
{
	for (int i = 0; i < WORK_UNIT; i++) {
		x = x * 6364136223846793005ull + 1442695040888963407ull;
		x ^= x >> 29;
	}
	return x;
}

static const char *algo_str(enum triad_bcast_algo a)
{
	switch (a) {
	case TRIAD_BCAST_AUTO: return "auto";
	case TRIAD_BCAST_GREEDY: return "greedy";
	case TRIAD_BCAST_BINOMIAL: return "binomial";
	case TRIAD_BCAST_PIPELINED: return "pipelined";
	case TRIAD_BCAST_TREE: return "tree";
	}
	return "?";
}

static void sleep_ns(uint64_t ns)
{
	struct timespec ts = { .tv_sec = (time_t)(ns / 1000000000ull),
			       .tv_nsec = (long)(ns % 1000000000ull) };

	while (nanosleep(&ts, &ts) && errno == EINTR)
		;
}

static int start_bcast(struct perf_run *r, size_t size, triad_req_t **req_p)
{
	int ret = triad_bcast(r->ctx, r->o->root, PERF_WIN_ID, 0, size,
			      (enum triad_bcast_algo)r->o->algo, req_p);

	if (ret)
		perf_err(r, "triad_bcast", ret);
	return ret;
}

static int finish_bcast(struct perf_run *r, triad_req_t *req)
{
	int ret = triad_wait(req, r->timeout_ms);

	if (ret) {
		char msg[96];

		snprintf(msg, sizeof(msg), "triad_wait (bcast, %d ms)", r->timeout_ms);
		perf_err(r, msg, ret);
		return ret; /* leaked on purpose: the library may still complete it */
	}
	if (triad_req_status(req) != TRIAD_S_OK && r->rank == r->o->root)
		fprintf(stderr, "triad-perf: rank %d: bcast did not reach rank %d\n", r->rank,
			triad_req_failed_rank(req));
	return perf_finish_req(r, req, "bcast");
}

/* Step 1: t[i] = this rank's time from its call to its completion. */
static int time_pass(struct perf_run *r, size_t size, long iters, long warmup, int bar_ms,
		     uint64_t *t)
{
	triad_req_t *req;
	int ret;

	for (long i = 0; i < warmup + iters; i++) {
		uint64_t t0;

		ret = perf_barrier(r, bar_ms, "before bcast");
		if (ret)
			return ret;
		t0 = perf_now_ns();
		ret = start_bcast(r, size, &req);
		if (!ret)
			ret = finish_bcast(r, req);
		if (ret)
			return ret;
		if (i >= warmup)
			t[i - warmup] = perf_now_ns() - t0;
	}
	return 0;
}

/* Step 2 (see the top of the file); med_ns: this rank's median of step 1;
 * the root's broadcast times go to tb[]. */
static int compute_pass(struct perf_run *r, size_t size, long iters, int bar_ms, uint64_t med_ns,
			uint64_t *tb, struct bc_share *sh, struct cpu_acc *cpu)
{
	int root = r->rank == r->o->root;
	uint64_t x = (uint64_t)r->rank + 1, idle_n = 0, idle_ns = 0, bc_n = 0, bc_ns = 0;
	triad_req_t *req;
	int ret;

	if (med_ns < 1000000)
		med_ns = 1000000; /* at least 1 ms of idle work per iteration */
	for (long i = 0; i < iters; i++) {
		uint64_t t0, t1;

		ret = perf_barrier(r, bar_ms, "before idle compute");
		if (ret)
			return ret;
		t0 = perf_now_ns();
		if (root) {
			cpu_mark(cpu, 0, 1);
			sleep_ns(med_ns);
			cpu_mark(cpu, 0, 0);
		} else {
			do {
				x = work_slice(x);
				idle_n++;
				t1 = perf_now_ns();
			} while (t1 - t0 < med_ns);
			idle_ns += t1 - t0;
		}
		ret = perf_barrier(r, bar_ms, "before bcast with compute");
		if (ret)
			return ret;
		t0 = perf_now_ns();
		if (root)
			cpu_mark(cpu, 1, 1);
		ret = start_bcast(r, size, &req);
		if (ret)
			return ret;
		if (root) {
			/* The kernel's share is taken over the non-roots' compute
			 * window (about med_ns), not over the whole broadcast: after
			 * that window they stop computing and wait. */
			int ms = (int)(med_ns / 1000000);

			ret = triad_wait(req, ms > 0 ? ms : 1);
			cpu_mark(cpu, 1, 0);
			if (ret && ret != -ETIMEDOUT) {
				perf_err(r, "triad_wait (bcast)", ret);
				return ret;
			}
			ret = finish_bcast(r, req);
			tb[i] = perf_now_ns() - t0;
		} else {
			do {
				x = work_slice(x);
				bc_n++;
				t1 = perf_now_ns();
			} while (t1 - t0 < med_ns);
			bc_ns += t1 - t0;
			ret = finish_bcast(r, req);
		}
		if (ret)
			return ret;
	}
	work_sink = x;
	*sh = (struct bc_share){ 0 };
	if (!root && idle_n && idle_ns && bc_ns) {
		sh->rate_idle = (double)idle_n / ((double)idle_ns / 1e9);
		sh->rate_bcast = (double)bc_n / ((double)bc_ns / 1e9);
		sh->fraction = sh->rate_bcast / sh->rate_idle;
		sh->slice_ns = (double)idle_ns / (double)idle_n;
	}
	return 0;
}

/* Step 3: the non-roots' figures land in the root's send area, slot = rank. */
static int share(struct perf_run *r, const struct bc_share *sh)
{
	if (r->rank != r->o->root)
		*(struct bc_share *)(void *)perf_send_area(r) = *sh;
	return perf_share_with_root(r, sizeof(*sh));
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static const struct perf_plot bcast_plot = {
	.title = "triad_bcast", .xlabel = "broadcast size", .ylabel = "MB/s (10^6 B/s)",
	.x = "bytes", .y = { "algbw_mb_s", "agg_mb_s" },
	.ytitle = { "algbw = busbw (size/time)", "aggregate (size*(n-1)/time)" },
};

static void report(struct perf_run *r, size_t size, long iters, long warmup,
		   const struct perf_lat *l, const struct perf_lat *lb, const struct cpu_acc *cpu)
{
	int n = triad_size(r->ctx), k = 0;
	const struct bc_share *sh = (const struct bc_share *)(const void *)perf_send_area(r);
	double f[n], fmed = 0, fmin = 0, slice = 0;
	/* nccl-tests: algbw = size / time; a broadcast's busbw is algbw
	 * (factor 1: every byte crosses one link to each rank, like the
	 * bus's peak).  The aggregate is what the fabric moved in all. */
	double algbw = l->typical > 0 ? (double)size / l->typical : 0; /* bytes/us = MB/s */
	double busbw = algbw, agg = algbw * (n - 1);
	const char *algo = algo_str((enum triad_bcast_algo)r->o->algo);
	char fractions[16 * 256 + 4], title[1024];
	size_t len = 0;

	for (int i = 0; i < n; i++) {
		if (i == r->o->root)
			continue;
		f[k++] = sh[i].fraction;
		slice += sh[i].slice_ns;
		len += (size_t)snprintf(fractions + len, sizeof(fractions) - len, "%s%.4f",
					k == 1 ? "[" : ",", sh[i].fraction);
		if (len >= sizeof(fractions))
			len = sizeof(fractions) - 1;
	}
	snprintf(fractions + len, sizeof(fractions) - len, k ? "]" : "[]");
	if (k) {
		qsort(f, (size_t)k, sizeof(f[0]), cmp_double);
		fmed = k % 2 ? f[k / 2] : (f[k / 2 - 1] + f[k / 2]) / 2;
		fmin = f[0];
		slice /= k;
	}
	const struct perf_field row[] = {
		PF_STR("test", NULL, 0, "bcast"),
		PF_STR("algo", NULL, 0, algo),
		PF_INT("bytes", "#bytes", 9, size),
		PF_INT("count", "count", 9, size), /* nccl-tests' count, of 1-byte elements */
		PF_INT("iterations", "#iterations", 11, iters),
		PF_INT("warmup", NULL, 0, warmup),
		PF_INT("ranks", NULL, 0, n),
		PF_INT("root", NULL, 0, r->o->root),
		PF_DBL("t_median_us", "time[usec]", 12, 2, l->typical),
		PF_DBL("t_avg_us", "t_avg[usec]", 12, 2, l->avg),
		PF_DBL("t_min_us", NULL, 0, 3, l->min),
		PF_DBL("t_max_us", NULL, 0, 3, l->max),
		PF_DBL("algbw_mb_s", "algbw[MB/s]", 12, 3, algbw),
		PF_DBL("busbw_mb_s", "busbw[MB/s]", 12, 3, busbw),
		PF_DBL("agg_mb_s", "agg[MB/s]", 10, 3, agg),
		PF_DBL("t_busy_median_us", "t_busy[usec]", 13, 2, lb->typical),
		PF_DBL("compute_fraction_median", "compute_med", 12, 4, fmed),
		PF_DBL("compute_fraction_min", "compute_min", 12, 4, fmin),
		PF_RAW("compute_fractions", fractions),
		PF_DBL("slice_us", NULL, 0, 3, slice / 1000.0),
		PF_INT("work_unit", NULL, 0, WORK_UNIT),
		PF_DBL("kernel_cpu_idle", "kcpu_idle", 10, 4, cpu_share(cpu, 0)),
		PF_DBL("kernel_cpu_bcast", "kcpu_bc", 8, 4, cpu_share(cpu, 1)),
	};

	snprintf(title, sizeof(title),
		 " triad bcast (%s) from rank %d to %d ranks; time = the root's median, from "
		 "its call to every rank holding the data;\n"
		 " algbw = size/time; busbw = algbw (a broadcast's bus factor is 1, as in "
		 "nccl-tests); agg = size*(n-1)/time; MB/s = 10^6 B/s;\n"
		 " compute = non-roots' work rate during the bcast / idle; kcpu = the kernel's "
		 "share of all CPU time, idle / bcast phase (/proc/stat; -1: unreadable)\n",
		 algo, r->o->root, n);
	perf_out_row(r, title, row, PF_N(row), &bcast_plot);
}

int perf_bcast(struct perf_run *r, size_t size, long iters, long warmup)
{
	const struct perf_opts *o = r->o;
	int n = triad_size(r->ctx), root = r->rank == o->root, ret;
	uint64_t *t = NULL, *tb = NULL, med_ns;
	struct bc_share sh = { 0 };
	struct cpu_acc cpu = { .ok = 1 };
	struct perf_lat l, lb;
	int bar_ms;

	if (o->root >= n) {
		if (r->rank == 0)
			fprintf(stderr, "triad-perf: --root %d: the world has %d ranks\n", o->root, n);
		return -EINVAL;
	}
	if ((size_t)n * sizeof(struct bc_share) > r->area) {
		if (r->rank == 0)
			fprintf(stderr, "triad-perf: bcast: %d ranks do not fit the report area\n", n);
		return -EINVAL;
	}
	if (!o->iters) {
		iters = BCAST_ITERS;
		if (size > (1u << 20))
			iters = (long)((double)BCAST_ITERS * (1u << 20) / (double)size);
		if (iters < BCAST_MIN_ITERS)
			iters = BCAST_MIN_ITERS;
	}
	if (o->warmup < 0)
		warmup = BCAST_WARMUP;
	t = calloc((size_t)iters, sizeof(*t));
	tb = calloc((size_t)iters, sizeof(*tb));
	if (!t || !tb) {
		perf_err(r, "bcast", -ENOMEM);
		ret = -ENOMEM;
		goto out;
	}
	/* The root holds the pattern, the others zeroes. */
	if (root)
		for (size_t i = 0; i < size; i++)
			perf_recv_area(r)[i] = perf_pattern(i, size);
	else
		memset(perf_recv_area(r), 0, size);
	/* A barrier waits for the slowest rank's whole broadcast. */
	bar_ms = perf_phase_timeout_ms(r, size, 1, n);
	ret = perf_barrier(r, bar_ms, "before bcast");
	if (!ret)
		ret = time_pass(r, size, iters, warmup, bar_ms, t);
	if (!ret && !root)
		perf_verify(r, size, size, "bcast");
	if (ret)
		goto out;
	/* This rank's own median of step 1: how long the idle phase computes. */
	memcpy(tb, t, (size_t)iters * sizeof(*t));
	perf_lat_summarize(tb, (size_t)iters, 1.0, &l);
	med_ns = (uint64_t)(l.typical * 1000.0);
	ret = compute_pass(r, size, iters, bar_ms, med_ns, tb, &sh, &cpu);
	if (!ret)
		ret = share(r, &sh);
	if (!ret)
		ret = perf_barrier(r, bar_ms, "after bcast");
	if (!ret && !root)
		perf_verify(r, size, size, "bcast (with compute)");
	if (!ret && root) {
		perf_lat_summarize(t, (size_t)iters, 1.0, &l);
		perf_lat_summarize(tb, (size_t)iters, 1.0, &lb); /* step 2: t_busy */
		report(r, size, iters, warmup, &l, &lb, &cpu);
	}
out:
	free(t);
	free(tb);
	return ret;
}
