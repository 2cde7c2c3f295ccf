/* putget: the smallest complete triad program.
 *
 * Every rank exposes a window; each rank puts a buffer into the next
 * rank's window on every plane in turn, then gets the previous rank's
 * buffer back, and checks every byte.  Run one process per rank with
 * TRIAD_WORLD and TRIAD_RANK set (tests/vm/vmn does that for each VM):
 *
 *     putget [SIZE_BYTES]        (default 1 MiB)
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "triad.h"

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static uint8_t byte_of(int rank, size_t i)
{
	return (uint8_t)(rank * 37 + i * 7 + (i >> 10));
}

/* Runs one operation to completion; returns 0 or prints why not. */
static int finish(const char *what, int ret, triad_req_t *req)
{
	enum triad_status st;

	if (ret) {
		fprintf(stderr, "%s: %s\n", what, strerror(-ret));
		return -1;
	}
	ret = triad_wait(req, 120000);
	st = triad_req_status(req);
	if (ret || st != TRIAD_S_OK) {
		fprintf(stderr, "%s: %s\n", what, ret ? strerror(-ret) : triad_status_str(st));
		return -1;
	}
	triad_req_free(req);
	return 0;
}

int main(int argc, char **argv)
{
	size_t size = argc > 1 ? strtoull(argv[1], NULL, 0) : 1 << 20;
	triad_ctx_t *ctx;
	triad_win_t *win;
	triad_req_t *req;
	int ret, rank, n, bad = 0;
	char *inbox, *mine, *back;
	double t0, t_put, t_get;

	if (!size) {
		fprintf(stderr, "usage: triad-putget [SIZE_BYTES > 0]\n");
		return 2;
	}
	ret = triad_init(NULL, &ctx);
	if (ret) {
		fprintf(stderr, "triad_init: %s\n", strerror(-ret));
		return 1;
	}
	rank = triad_rank(ctx);
	n = triad_size(ctx);
	inbox = calloc(1, size);
	mine = malloc(size);
	back = malloc(size);
	if (!inbox || !mine || !back)
		return 1;
	for (size_t i = 0; i < size; i++)
		mine[i] = (char)byte_of(rank, i);
	ret = triad_win_create(ctx, 1, inbox, size, NULL, &win);
	if (ret) {
		fprintf(stderr, "triad_win_create: %s\n", strerror(-ret));
		return 1;
	}
	triad_barrier(ctx, -1);

	/* Put into the next rank, once per plane. */
	t0 = now_s();
	for (int p = 0; p < triad_nplanes(ctx) && !bad; p++) {
		ret = triad_put(ctx, mine, size, (rank + 1) % n, 1, 0, TRIAD_F_PLANE(p), &req);
		bad |= finish("put", ret, req);
	}
	t_put = now_s() - t0;
	triad_barrier(ctx, -1);
	for (size_t i = 0; i < size && !bad; i++)
		if ((uint8_t)inbox[i] != byte_of((rank + n - 1) % n, i)) {
			fprintf(stderr, "rank %d: byte %zu from rank %d is wrong\n", rank, i,
				(rank + n - 1) % n);
			bad = 1;
		}
	/* Get it back from where it went. */
	t0 = now_s();
	if (!bad) {
		ret = triad_get(ctx, back, size, (rank + 1) % n, 1, 0, 0, &req);
		bad |= finish("get", ret, req);
	}
	t_get = now_s() - t0;
	if (!bad && memcmp(back, mine, size)) {
		fprintf(stderr, "rank %d: what came back from rank %d differs\n", rank, (rank + 1) % n);
		bad = 1;
	}
	printf("rank %d: put %zu B x %d planes to rank %d in %.1f ms, got it back in %.1f ms: %s\n",
	       rank, size, triad_nplanes(ctx), (rank + 1) % n, t_put * 1e3, t_get * 1e3,
	       bad ? "FAILED" : "verified");
	triad_barrier(ctx, 60000);
	triad_fini(ctx);
	free(inbox);
	free(mine);
	free(back);
	return bad;
}
