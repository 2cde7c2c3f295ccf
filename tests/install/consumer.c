/* consumer: a program outside the triad tree, built only from what
 * `meson install` put down (tests/install/run compiles it with
 * `pkg-config --cflags --libs triad` against the installed tree).
 *
 * Every rank exposes a window, puts a rank-stamped buffer into the next
 * rank's window, waits in a barrier, and checks that the previous rank's
 * buffer arrived byte for byte.  Exit 0 when it did, 1 otherwise; run
 * with TRIAD_WORLD and TRIAD_RANK set (triad-run does that). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <triad.h>

#define WIN_ID 7u
#define LEN (256u * 1024u)
#define TIMEOUT_MS 60000

static uint8_t stamp(int rank, size_t i)
{
	return (uint8_t)(rank * 131 + i * 7 + (i >> 8) + 1);
}

static int fail(int rank, const char *what, int ret)
{
	fprintf(stderr, "consumer: rank %d: %s: %s\n", rank, what, strerror(-ret));
	return 1;
}

/* Puts src into window WIN_ID of rank `to` and waits for it to land. */
static int put_next(triad_ctx_t *ctx, int rank, const uint8_t *src, int to)
{
	enum triad_status st;
	triad_req_t *req;
	int ret;

	ret = triad_put(ctx, src, LEN, to, WIN_ID, 0, 0, &req);
	if (ret)
		return fail(rank, "triad_put", ret);
	ret = triad_wait(req, TIMEOUT_MS);
	if (ret)
		return fail(rank, "triad_wait", ret);
	st = triad_req_status(req);
	triad_req_free(req);
	if (st != TRIAD_S_OK) {
		fprintf(stderr, "consumer: rank %d: put to %d: %s\n", rank, to,
			triad_status_str(st));
		return 1;
	}
	return 0;
}

static size_t count_wrong(const uint8_t *got, int from)
{
	size_t bad = 0;

	for (size_t i = 0; i < LEN; i++)
		bad += got[i] != stamp(from, i);
	return bad;
}

int main(void)
{
	uint8_t *inbox = calloc(1, LEN), *mine = malloc(LEN);
	triad_ctx_t *ctx;
	triad_win_t *win;
	int ret, rank, n, status = 1;
	size_t bad;

	if (!inbox || !mine) {
		fprintf(stderr, "consumer: no memory\n");
		return 1;
	}
	ret = triad_init(NULL, &ctx);
	if (ret) {
		fprintf(stderr, "consumer: triad_init: %s\n", strerror(-ret));
		return 1;
	}
	rank = triad_rank(ctx);
	n = triad_size(ctx);
	for (size_t i = 0; i < LEN; i++)
		mine[i] = stamp(rank, i);
	ret = triad_win_create(ctx, WIN_ID, inbox, LEN, NULL, &win);
	if (ret) {
		fail(rank, "triad_win_create", ret);
		goto fini;
	}
	/* Every window exists before anyone puts; every put landed before
	 * anyone checks. */
	ret = triad_barrier(ctx, TIMEOUT_MS);
	if (!ret && put_next(ctx, rank, mine, (rank + 1) % n))
		goto destroy;
	if (!ret)
		ret = triad_barrier(ctx, TIMEOUT_MS);
	if (ret) {
		fail(rank, "triad_barrier", ret);
		goto destroy;
	}
	bad = count_wrong(inbox, (rank + n - 1) % n);
	if (bad)
		fprintf(stderr, "consumer: rank %d: %zu of %u bytes from rank %d wrong\n", rank,
			bad, LEN, (rank + n - 1) % n);
	else
		printf("consumer: rank %d of %d: %u bytes from rank %d verified\n", rank, n, LEN,
		       (rank + n - 1) % n);
	status = bad ? 1 : 0;
	/* Nobody destroys a window the previous rank may still check. */
	ret = triad_barrier(ctx, TIMEOUT_MS);
	if (ret)
		status = fail(rank, "triad_barrier (end)", ret);
destroy:
	ret = triad_win_destroy(win);
	if (ret)
		status = fail(rank, "triad_win_destroy", ret);
fini:
	triad_fini(ctx);
	free(inbox);
	free(mine);
	return status;
}
