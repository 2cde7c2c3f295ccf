/* The ranks' side of tests/fabric/daemon-drain: traffic that a node's
 * triadd drains, restores, fails and is killed under, until the script
 * says stop.
 *
 * Every rank streams to every other rank, round after round: a put of a
 * pattern that depends on (sender, round), read back at once with a get
 * and compared, and an active message numbered per sender, which the
 * receiver must see exactly once and in order (run with TRIAD_ORDER=strict:
 * the default keeps order only within a plane, and a fail moves messages).  It stops once the file
 * $TRIAD_TEST_STOP exists; then every rank tells every other how many
 * messages it sent, and after a barrier each checks it received exactly
 * those.  Every request must complete OK: the daemon's drains move
 * traffic, they never fail it.
 *
 * Each round also sends a burst of BURST messages to the peer at once,
 * so that a plane's backlog can pass TRIAD_ADAPTIVE_T and the adaptive
 * choice has something to move; twice a second every rank prints how
 * many messages its connections took as detours ("detours N"), which
 * daemon-drain reads to see the choice follow the knobs triadd
 * publishes. */
#include <unistd.h>

#include "ft.h"

#define WIN 1
#define PUT_LEN (8u << 10)
#define AM_ID 7
#define AM_DONE 8
#define MAXR 8
#define MAX_ROUNDS 1000000
#define BURST 8

static int rank, size;
static uint32_t next_idx[MAXR], told[MAXR];
static long out_of_order;

struct am {
	uint32_t src, idx;
};

static int am_handler(void *arg, int src, const void *data, size_t len, triad_am_msg_t *msg)
{
	struct am a;

	(void)arg;
	(void)msg;
	if (len != sizeof(a) || src < 0 || src >= MAXR) {
		out_of_order++;
		return TRIAD_AM_DONE;
	}
	memcpy(&a, data, sizeof(a));
	if (a.src != (uint32_t)src || a.idx != next_idx[src])
		out_of_order++;
	next_idx[src] = a.idx + 1;
	return TRIAD_AM_DONE;
}

static int done_handler(void *arg, int src, const void *data, size_t len, triad_am_msg_t *msg)
{
	(void)arg;
	(void)msg;
	if (len == sizeof(uint32_t) && src >= 0 && src < MAXR)
		memcpy(&told[src], data, sizeof(uint32_t));
	return TRIAD_AM_DONE;
}

static uint32_t next_out[MAXR]; /* the number of our next message to each peer */

/* One round to peer r: a burst of messages, a put, a get of it back,
 * compared. */
static void round_to(triad_ctx_t *ctx, char *win, int r, uint32_t round)
{
	char *src = win + (size_t)(size + r) * PUT_LEN, *back = win + (size_t)(2 * size + r) * PUT_LEN;
	struct am a[BURST];
	triad_req_t *put, *get, *am[BURST];
	enum triad_status st;

	ft_fill(src, PUT_LEN, (uint32_t)rank * 100003u + round, 0);
	for (int i = 0; i < BURST; i++) {
		a[i] = (struct am){ (uint32_t)rank, next_out[r]++ };
		FT_CHECK(triad_am_send(ctx, r, AM_ID, &a[i], sizeof(a[i]), TRIAD_PRIO_MEDIUM,
				       &am[i]) == 0, "am");
	}
	FT_CHECK(triad_put(ctx, src, PUT_LEN, r, WIN, (uint64_t)rank * PUT_LEN, 0, &put) == 0,
		 "put");
	st = ft_wait(put, 60000);
	FT_CHECK(st == TRIAD_S_OK, "put to %d, round %u: %s", r, round, triad_status_str(st));
	FT_CHECK(triad_get(ctx, back, PUT_LEN, r, WIN, (uint64_t)rank * PUT_LEN, 0, &get) == 0,
		 "get");
	st = ft_wait(get, 60000);
	FT_CHECK(st == TRIAD_S_OK, "get from %d, round %u: %s", r, round, triad_status_str(st));
	FT_CHECK(ft_verify(back, PUT_LEN, (uint32_t)rank * 100003u + round, 0) < 0,
		 "round %u: rank %d's copy of our put is wrong", round, r);
	for (int i = 0; i < BURST; i++) {
		st = ft_wait(am[i], 60000);
		FT_CHECK(st == TRIAD_S_OK, "am to %d, round %u: %s", r, round,
			 triad_status_str(st));
	}
}

/* The messages this rank's connections took over from busier ones. */
static uint64_t detours(triad_ctx_t *ctx)
{
	uint64_t n = 0;

	for (int r = 0; r < size; r++)
		for (int p = 0; r != rank && p < triad_nplanes(ctx); p++) {
			struct triad_conn_stats s = { .field_mask = TRIAD_CONN_STATS_CHOICE };

			if (triad_conn_stats(ctx, r, p, &s) == 0)
				n += s.detours;
		}
	return n;
}

int main(void)
{
	triad_ctx_t *ctx = ft_init();
	const char *stop = getenv("TRIAD_TEST_STOP");
	size_t len;
	uint32_t round = 0, sent;
	double said = 0;
	triad_win_t *w;
	char *win;

	rank = triad_rank(ctx);
	size = triad_size(ctx);
	if (!stop || size > MAXR) {
		fprintf(stderr, "test_daemon: set TRIAD_TEST_STOP; at most %d ranks\n", MAXR);
		return 2;
	}
	/* [0, size): peers' puts land here; then our sources; then get buffers. */
	len = (size_t)3 * (size_t)size * PUT_LEN;
	win = calloc(1, len);
	FT_CHECK(win && triad_win_create(ctx, WIN, win, len, NULL, &w) == 0, "window");
	FT_CHECK(triad_am_register(ctx, AM_ID, am_handler, NULL) == 0, "handler");
	FT_CHECK(triad_am_register(ctx, AM_DONE, done_handler, NULL) == 0, "handler");
	ft_barrier(ctx);
	if (rank == 0)
		printf("test_daemon: streaming until %s exists\n", stop);
	fflush(stdout);
	while (access(stop, F_OK) != 0 && round < MAX_ROUNDS && !ft_failures) {
		for (int r = 0; r < size; r++)
			if (r != rank)
				round_to(ctx, win, r, round);
		round++;
		if (ft_now_s() - said >= 0.5) {
			said = ft_now_s();
			printf("test_daemon: rank %d detours %llu\n", rank,
			       (unsigned long long)detours(ctx));
			fflush(stdout);
		}
	}
	sent = next_out[rank ? 0 : 1]; /* the same count to every peer */
	for (int r = 0; r < size; r++) {
		triad_req_t *req;

		if (r == rank)
			continue;
		FT_CHECK(triad_am_send(ctx, r, AM_DONE, &sent, sizeof(sent), TRIAD_PRIO_MEDIUM,
				       &req) == 0, "done");
		FT_CHECK(ft_wait(req, 60000) == TRIAD_S_OK, "done message to %d", r);
	}
	ft_barrier(ctx);
	for (int r = 0; r < size; r++)
		FT_CHECK(r == rank || next_idx[r] == told[r],
			 "from rank %d: %u messages received, %u sent", r, next_idx[r], told[r]);
	FT_CHECK(out_of_order == 0, "%ld messages out of order or malformed", out_of_order);
	printf("test_daemon: rank %d: %u rounds to each peer, all verified\n", rank, round);
	return ft_finish(ctx, "test_daemon");
}
