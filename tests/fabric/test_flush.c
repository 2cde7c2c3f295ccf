/* triad_flush and request-less puts and gets on a real fabric.
 *
 *   test_flush [--count N]
 *
 * Every rank r works on its neighbour t = r + 1 (mod size), the ranks all
 * at once:
 *   stream   N puts of 4 KiB with no request (req_p NULL), alternating
 *            planes, every other one from unregistered memory, each into
 *            its own slot of t's window, and a last one with a request;
 *            one flush; once it completes, that request is complete too
 *            (without a test or wait of its own); after a barrier t
 *            verifies every byte of its slots.
 *   gets     N request-less gets of the same slots back into unregistered
 *            memory, one flush, every byte verified at r.
 *   small    N request-less puts of 1 to 64 bytes (light puts: no request,
 *            their bytes in the work request), alternating planes, each into
 *            its own 64-byte slot of t's cleared window; one flush; after a
 *            barrier t finds every slot holding its bytes and zeros after.
 *   idle     a flush to t with nothing outstanding, and one to r itself,
 *            are complete when triad_flush returns, status OK.
 *   errors   request-less puts out of bounds and to an unknown window
 *            between good ones: the flush reports the first error
 *            (OUT_OF_BOUNDS), the next flush OK; a put with a request that
 *            fails reports there, not in the flush; bad arguments -EINVAL.
 *   broken   (2 planes or more) a few light puts on the last plane land,
 *            then every rank fails that plane (triad_plane_fail): the
 *            flush after still completes OK (the puts that succeeded
 *            unsignalled are accounted for by a fence the break posts to
 *            the broken QP), and every byte is there.
 */
#include <getopt.h>
#include <unistd.h>

#include "ft.h"

#define WIN 1
#define SLOT 4096

static int count = 2000;
static int rank, size, nplanes;

static unsigned plane_flag(int i)
{
	return TRIAD_F_PLANE(i % nplanes);
}

/* Flushes to t and waits; the flush's status. */
static enum triad_status flush_wait(triad_ctx_t *ctx, int t, int *pending_at_return)
{
	triad_req_t *req = NULL;
	int ret = triad_flush(ctx, t, &req);

	FT_CHECK(ret == 0, "triad_flush(%d): %s", t, strerror(-ret));
	if (ret)
		return TRIAD_S_PENDING;
	if (pending_at_return)
		*pending_at_return = triad_req_status(req) == TRIAD_S_PENDING;
	return ft_wait(req, 60000);
}

static void phase_stream(triad_ctx_t *ctx, char *win_buf, char *own)
{
	int t = (rank + 1) % size, from = (rank + size - 1) % size, ret;
	triad_req_t *last = NULL;
	enum triad_status st;
	int64_t bad;

	for (int i = 0; i < count - 1; i++) {
		/* Even puts from the window (registered), odd ones from malloc'ed memory. */
		char *src = i % 2 ? own + (size_t)i * SLOT : win_buf + (size_t)i * SLOT;
		int ret;

		ft_fill(src, SLOT, (uint32_t)rank, (uint64_t)i * SLOT);
		ret = triad_put(ctx, src, SLOT, t, WIN, (uint64_t)(count + i) * SLOT, plane_flag(i),
				NULL);
		FT_CHECK(ret == 0, "request-less put %d: %s", i, strerror(-ret));
	}
	/* The last slot's put has a request: the flush must wait for it too. */
	ft_fill(own + (size_t)(count - 1) * SLOT, SLOT, (uint32_t)rank, (uint64_t)(count - 1) * SLOT);
	ret = triad_put(ctx, own + (size_t)(count - 1) * SLOT, SLOT, t, WIN,
			(uint64_t)(2 * count - 1) * SLOT, 0, &last);
	FT_CHECK(ret == 0, "the last put: %s", strerror(-ret));
	st = flush_wait(ctx, t, NULL);
	FT_CHECK(st == TRIAD_S_OK, "flush after %d puts: %s", count, triad_status_str(st));
	if (!ret) {
		FT_CHECK(triad_req_status(last) == TRIAD_S_OK, "the put with a request, after the "
			 "flush: %s", triad_status_str(triad_req_status(last)));
		FT_CHECK(ft_wait(last, 60000) == TRIAD_S_OK, "the put with a request");
	}
	ft_barrier(ctx);
	bad = ft_verify(win_buf + (size_t)count * SLOT, (uint64_t)count * SLOT, (uint32_t)from, 0);
	FT_CHECK(bad < 0, "puts from rank %d: byte %lld of %d slots wrong", from, (long long)bad,
		 count);
	ft_barrier(ctx);
}

static void phase_gets(triad_ctx_t *ctx, char *back)
{
	int t = (rank + 1) % size;
	enum triad_status st;
	int64_t bad;

	memset(back, 0, (size_t)count * SLOT);
	for (int i = 0; i < count; i++) {
		int ret = triad_get(ctx, back + (size_t)i * SLOT, SLOT, t, WIN,
				    (uint64_t)(count + i) * SLOT, plane_flag(i), NULL);

		FT_CHECK(ret == 0, "request-less get %d: %s", i, strerror(-ret));
	}
	st = flush_wait(ctx, t, NULL);
	FT_CHECK(st == TRIAD_S_OK, "flush after %d gets: %s", count, triad_status_str(st));
	bad = ft_verify(back, (uint64_t)count * SLOT, (uint32_t)rank, 0);
	FT_CHECK(bad < 0, "gets from rank %d: byte %lld wrong", t, (long long)bad);
	ft_barrier(ctx);
}

#define SMALL 64

static void phase_small(triad_ctx_t *ctx, char *win_buf, char *own)
{
	int t = (rank + 1) % size, from = (rank + size - 1) % size;
	enum triad_status st;
	int wrong, first;

	memset(win_buf, 0, (size_t)count * SMALL);
	ft_fill(own, (uint64_t)count * SMALL, (uint32_t)rank + 100, 0);
	ft_barrier(ctx); /* every window cleared before anyone writes it */
	for (int i = 0; i < count; i++) {
		int ret = triad_put(ctx, own + (size_t)i * SMALL, 1 + i % SMALL, t, WIN,
				    (uint64_t)i * SMALL, plane_flag(i), NULL);

		FT_CHECK(ret == 0, "small request-less put %d: %s", i, strerror(-ret));
	}
	st = flush_wait(ctx, t, NULL);
	FT_CHECK(st == TRIAD_S_OK, "flush after %d small puts: %s", count, triad_status_str(st));
	ft_barrier(ctx);
	wrong = ft_small_slots_wrong(win_buf, count, SMALL, (uint32_t)from + 100, &first);
	FT_CHECK(!wrong, "%d of %d small puts from rank %d wrong, the first %d", wrong, count,
		 from, first);
	ft_barrier(ctx);
}

/* broken: a few light puts to t on the last plane, given time to land,
 * then this rank's connections on that plane fail (triad_plane_fail).  A
 * light put that succeeded unsignalled never comes back by itself: the
 * break puts a fence behind it on the broken QP, whose flushed completion
 * accounts for it.  The flush completes OK, and t finds every byte. */
static void phase_broken(triad_ctx_t *ctx, char *win_buf, char *own)
{
	int t = (rank + 1) % size, from = (rank + size - 1) % size, plane = nplanes - 1, n = 5;
	enum triad_status st;
	int wrong, first, ret;

	memset(win_buf, 0, (size_t)n * SMALL);
	ft_fill(own, (uint64_t)n * SMALL, (uint32_t)rank + 200, 0);
	ft_barrier(ctx);
	for (int i = 0; i < n; i++) {
		ret = triad_put(ctx, own + (size_t)i * SMALL, 1 + i % SMALL, t, WIN,
				(uint64_t)i * SMALL, TRIAD_F_PLANE(plane), NULL);
		FT_CHECK(ret == 0, "small put %d before the break: %s", i, strerror(-ret));
	}
	usleep(200000); /* they land */
	ret = triad_plane_fail(ctx, plane);
	FT_CHECK(ret == 0, "triad_plane_fail(%d): %s", plane, strerror(-ret));
	st = flush_wait(ctx, t, NULL);
	FT_CHECK(st == TRIAD_S_OK, "flush of %d small puts that landed before their plane broke: "
		 "%s", n, triad_status_str(st));
	ft_barrier(ctx);
	wrong = ft_small_slots_wrong(win_buf, n, SMALL, (uint32_t)from + 200, &first);
	FT_CHECK(!wrong, "%d of %d small puts from rank %d before the break wrong, the first %d",
		 wrong, n, from, first);
	printf("rank %d: %d small puts, plane %d failed, flushed: %s\n", rank, n, plane,
	       triad_status_str(st));
	ft_barrier(ctx);
}

static void phase_idle(triad_ctx_t *ctx)
{
	int t = (rank + 1) % size, pending = 1;
	enum triad_status st;

	st = flush_wait(ctx, t, &pending);
	FT_CHECK(st == TRIAD_S_OK && !pending, "idle flush to %d: %s, %s at return", t,
		 triad_status_str(st), pending ? "pending" : "complete");
	pending = 1;
	st = flush_wait(ctx, rank, &pending);
	FT_CHECK(st == TRIAD_S_OK && !pending, "flush to itself: %s, %s at return",
		 triad_status_str(st), pending ? "pending" : "complete");
	ft_barrier(ctx);
}

static void phase_errors(triad_ctx_t *ctx, char *own)
{
	int t = (rank + 1) % size;
	uint64_t win_len = (uint64_t)2 * count * SLOT;
	triad_req_t *req = NULL;
	enum triad_status st;

	ft_fill(own, SLOT, 7, 0);
	for (int i = 0; i < 8; i++)
		FT_CHECK(triad_put(ctx, own, SLOT, t, WIN, (uint64_t)i * SLOT, 0, NULL) == 0,
			 "good put %d", i);
	FT_CHECK(triad_put(ctx, own, 8, t, WIN, win_len - 4, 0, NULL) == 0,
		 "small out-of-bounds put: not refused at once");
	FT_CHECK(triad_put(ctx, own, SLOT, t, WIN, win_len - 1, 0, NULL) == 0,
		 "out-of-bounds put: not refused at once");
	FT_CHECK(triad_put(ctx, own, SLOT, t, WIN + 100, 0, 0, NULL) == 0,
		 "put to an unknown window: not refused at once");
	for (int i = 8; i < 16; i++)
		FT_CHECK(triad_put(ctx, own, SLOT, t, WIN, (uint64_t)i * SLOT, 0, NULL) == 0,
			 "good put %d", i);
	st = flush_wait(ctx, t, NULL);
	FT_CHECK(st == TRIAD_S_OUT_OF_BOUNDS, "flush after a bad put: %s, want %s",
		 triad_status_str(st), triad_status_str(TRIAD_S_OUT_OF_BOUNDS));
	st = flush_wait(ctx, t, NULL);
	FT_CHECK(st == TRIAD_S_OK, "second flush: %s (an error is reported once)",
		 triad_status_str(st));

	/* An operation with a request reports its own error. */
	FT_CHECK(triad_put(ctx, own, SLOT, t, WIN, win_len, 0, &req) == 0, "put with request");
	st = flush_wait(ctx, t, NULL);
	FT_CHECK(st == TRIAD_S_OK, "flush after a failed put with a request: %s",
		 triad_status_str(st));
	FT_CHECK(triad_req_status(req) == TRIAD_S_OUT_OF_BOUNDS,
		 "that put's own status: %s", triad_status_str(triad_req_status(req)));
	FT_CHECK(ft_wait(req, 1000) == TRIAD_S_OUT_OF_BOUNDS, "freed");

	FT_CHECK(triad_flush(NULL, t, &req) == -EINVAL, "flush without ctx");
	FT_CHECK(triad_flush(ctx, t, NULL) == -EINVAL, "flush without req_p");
	FT_CHECK(triad_flush(ctx, -1, &req) == -EINVAL, "flush to rank -1");
	FT_CHECK(triad_flush(ctx, size, &req) == -EINVAL, "flush to rank %d", size);
	FT_CHECK(triad_put(ctx, NULL, 8, t, WIN, 0, 0, NULL) == -EINVAL, "NULL buffer");
	FT_CHECK(triad_put(ctx, own, 8, size, WIN, 0, 0, NULL) == -EINVAL, "bad rank");
	ft_barrier(ctx);
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "count", required_argument, NULL, 'c' },
		{ NULL, 0, NULL, 0 },
	};
	triad_ctx_t *ctx;
	triad_win_t *win;
	char *win_buf, *own;
	int c, ret;

	while ((c = getopt_long(argc, argv, "c:", opts, NULL)) != -1) {
		switch (c) {
		case 'c': count = atoi(optarg); break;
		default:
			fprintf(stderr, "usage: %s [--count N]\n", argv[0]);
			return 2;
		}
	}
	if (count < 16) {
		fprintf(stderr, "--count must be at least 16\n");
		return 2;
	}
	ctx = ft_init();
	rank = triad_rank(ctx);
	size = triad_size(ctx);
	nplanes = triad_nplanes(ctx);
	/* [0, count) slots: sources; [count, 2 count): the neighbour's puts. */
	win_buf = calloc(2, (size_t)count * SLOT);
	own = malloc((size_t)count * SLOT);
	if (!win_buf || !own)
		return 1;
	ret = triad_win_create(ctx, WIN, win_buf, (size_t)2 * count * SLOT, NULL, &win);
	FT_CHECK(ret == 0, "triad_win_create: %s", strerror(-ret));
	ft_barrier(ctx);
	if (size > 1) {
		phase_stream(ctx, win_buf, own);
		phase_gets(ctx, own);
		phase_small(ctx, win_buf, own);
	}
	phase_idle(ctx);
	if (size > 1)
		phase_errors(ctx, own);
	if (size > 1 && nplanes > 1)
		phase_broken(ctx, win_buf, own);
	triad_win_destroy(win);
	ret = ft_finish(ctx, "test_flush");
	free(win_buf);
	free(own);
	return ret;
}
