/* triad-perf init: what connection set-up costs (TRIAD_CONNECT=eager or
 * lazy, docs/scaling.md).
 *
 *   init_ms        triad_init on every rank, timed around the call: eager
 *                  waits there for every lane of the world; lazy only
 *                  opens the planes and listens
 *   first_put_us   rank 0's first put (8 B, with a request) to rank 1, post
 *                  to completion: lazy connects the pair (every plane) and
 *                  asks for the window on the way; eager only the lookup
 *   later_put_us   the puts after it (-n, median): the steady state, both ways
 *   lanes_up       rank 0's connections after those puts: every peer x
 *                  planes eager, planes lazy
 *
 * No triad barrier comes before the first put (it would connect every rank
 * to rank 0): the ranks meet through files beside the world file
 * (triad-run's), or, without one (a PMIx launch), rank 0 waits a second.
 * The ranks' init times reach rank 0 by puts once it has measured. */
#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "perf.h"

#define PROG "triad-perf"

/* Every rank at tag (files TRIAD_WORLD.perf-TAG.RANK); 0, or -ETIMEDOUT. */
static int meet(int rank, int size, const char *tag, int timeout_ms)
{
	const char *world = getenv("TRIAD_WORLD");
	uint64_t end = perf_now_ns() + (uint64_t)timeout_ms * 1000000;
	char path[1024];
	FILE *f;

	if (!world || !*world) {
		if (rank == 0)
			sleep(1);
		return 0;
	}
	snprintf(path, sizeof(path), "%s.perf-%s.%d", world, tag, rank);
	if (!(f = fopen(path, "w")))
		return -errno;
	fclose(f);
	for (int r = 0; r < size; r++) {
		struct stat st;

		snprintf(path, sizeof(path), "%s.perf-%s.%d", world, tag, r);
		while (stat(path, &st))
			if (perf_now_ns() > end)
				return -ETIMEDOUT;
			else
				usleep(1000);
	}
	return 0;
}

static int put_timed(struct perf_run *r, uint64_t *ns)
{
	triad_req_t *req = NULL;
	uint64_t t0 = perf_now_ns();
	int ret = triad_put(r->ctx, perf_send_area(r), 8, PERF_SERVER, PERF_WIN_ID, 0, 0, &req);

	if (!ret)
		ret = triad_wait(req, r->timeout_ms);
	*ns = perf_now_ns() - t0;
	if (ret) {
		perf_err(r, "put to rank 1", ret);
		return ret;
	}
	return perf_finish_req(r, req, "put to rank 1");
}

static int lanes_up(triad_ctx_t *ctx)
{
	int n = 0, me = triad_rank(ctx);

	for (int peer = 0; peer < triad_size(ctx); peer++)
		for (int p = 0; peer != me && p < triad_nplanes(ctx); p++) {
			struct triad_conn_stats cs = { .field_mask = TRIAD_CONN_STATS_LINK };

			n += triad_conn_stats(ctx, peer, p, &cs) == 0 && cs.up;
		}
	return n;
}

static void report(struct perf_run *r, uint64_t init_ns, const uint64_t *inits,
		   uint64_t first_ns, uint64_t *later, long n, int lanes)
{
	const char *mode = getenv("TRIAD_CONNECT");
	int size = triad_size(r->ctx);
	uint64_t max = 0, sum = 0;
	struct perf_lat l;
	char title[256];

	for (int i = 0; i < size; i++) {
		max = inits[i] > max ? inits[i] : max;
		sum += inits[i];
	}
	perf_lat_summarize(later, (size_t)n, 1.0, &l);
	{
		const struct perf_field f[] = {
			PF_STR("test", NULL, 0, "init"),
			PF_STR("connect", "connect", 8, mode && *mode ? mode : "eager"),
			PF_INT("ranks", "ranks", 6, size),
			PF_INT("planes", "planes", 7, triad_nplanes(r->ctx)),
			PF_DBL("init_ms", "init[ms]", 10, 2, init_ns / 1e6),
			PF_DBL("init_max_ms", "init max[ms]", 13, 2, max / 1e6),
			PF_DBL("init_avg_ms", "init avg[ms]", 13, 2, (double)sum / size / 1e6),
			PF_DBL("first_put_us", "first put[us]", 14, 1, first_ns / 1e3),
			PF_DBL("later_put_us", "later put[us]", 14, 1, l.typical),
			PF_INT("later_puts", NULL, 0, n),
			PF_INT("lanes_up", "lanes up", 9, lanes),
		};

		snprintf(title, sizeof(title), " triad init: triad_init on every rank, then rank %d's "
			 "first put to rank %d and %ld more (8 B, median); rank 0's lanes up after "
			 "them\n", PERF_CLIENT, PERF_SERVER, n);
		perf_out_row(r, title, f, PF_N(f), NULL);
	}
}

int perf_init_run(const struct perf_opts *o)
{
	struct perf_run r = { .o = o, .rank = -1, .timeout_ms = o->timeout_s * 1000 };
	long n = o->iters ? o->iters : 100;
	uint64_t t0 = perf_now_ns(), init_ns, first_ns = 0, *later = NULL, *inits;
	int ret, size, lanes = 0, status = PERF_EXIT_FAIL;
	triad_req_t *req = NULL;

	ret = triad_init(NULL, &r.ctx);
	init_ns = perf_now_ns() - t0;
	if (ret) {
		fprintf(stderr, "%s: triad_init: %s\n", PROG, strerror(-ret));
		return PERF_EXIT_FAIL;
	}
	r.rank = triad_rank(r.ctx);
	size = triad_size(r.ctx);
	if (size < 2) {
		fprintf(stderr, "%s: init needs 2 ranks or more\n", PROG);
		goto fini;
	}
	/* [receive: every rank's init time | send] */
	r.area = 4096 + (size_t)size * 8;
	r.buf = aligned_alloc(4096, 2 * ((r.area + 4095) & ~(size_t)4095));
	later = calloc((size_t)n, sizeof(*later));
	if (!r.buf || !later) {
		perf_err(&r, "memory", -ENOMEM);
		goto fini;
	}
	r.area = (r.area + 4095) & ~(size_t)4095;
	memset(r.buf, 0, 2 * r.area);
	ret = triad_win_create(r.ctx, PERF_WIN_ID, r.buf, 2 * r.area, NULL, &r.win);
	if (ret) {
		perf_err(&r, "triad_win_create", ret);
		goto fini;
	}
	ret = meet(r.rank, size, "windows", r.timeout_ms);
	if (ret) {
		perf_err(&r, "meeting the other ranks (windows created)", ret);
		goto destroy;
	}
	if (r.rank == PERF_CLIENT) {
		ret = put_timed(&r, &first_ns);
		for (long i = 0; !ret && i < n; i++)
			ret = put_timed(&r, &later[i]);
		lanes = lanes_up(r.ctx);
		if (ret)
			goto destroy;
	}
	/* Nobody else talks to rank 0 before it measured (lazy: nor connects). */
	ret = meet(r.rank, size, "measured", r.timeout_ms);
	if (ret) {
		perf_err(&r, "meeting the other ranks (rank 0 measured)", ret);
		goto destroy;
	}
	/* Every rank's init time into rank 0's receive area, slot rank. */
	memcpy(perf_send_area(&r), &init_ns, 8);
	ret = triad_put(r.ctx, perf_send_area(&r), 8, PERF_CLIENT, PERF_WIN_ID,
			(uint64_t)r.rank * 8, 0, &req);
	if (!ret)
		ret = triad_wait(req, r.timeout_ms);
	if (!ret)
		ret = perf_finish_req(&r, req, "init time to rank 0") ? -EIO : 0;
	if (!ret)
		ret = perf_barrier(&r, r.timeout_ms, "init times gathered");
	if (ret)
		goto destroy;
	if (r.rank == PERF_CLIENT) {
		inits = (uint64_t *)(void *)perf_recv_area(&r);
		inits[0] = init_ns;
		report(&r, init_ns, inits, first_ns, later, n, lanes);
	}
	ret = perf_barrier(&r, r.timeout_ms, "end");
	if (!ret)
		status = PERF_EXIT_OK;
destroy:
	triad_win_destroy(r.win);
fini:
	free(later);
	free(r.buf);
	triad_fini(r.ctx);
	return status;
}
