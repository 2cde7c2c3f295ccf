/* The ranks' side of tests/fabric/daemon-drain: traffic that a node's
 * triadd drains, restores, fails and is killed under, until the script
 * says stop.
 *
 * Every rank streams to every other rank, round after round: a put of a
 * pattern that depends on (sender, round), read back at once with a get
 * and compared, and active messages numbered per sender and priority,
 * which the receiver must see exactly once and in order (run with
 * TRIAD_ORDER=strict: the default keeps order only within a plane, and a
 * fail moves messages).  It stops once the file $TRIAD_TEST_STOP exists;
 * then every rank tells every other how many messages of each priority it
 * sent, and after a barrier each checks it received exactly those.  Every request must complete OK: the daemon's drains move
 * traffic, they never fail it.
 *
 * Each round also sends a burst of BURST messages to the peer at once,
 * so that a plane's backlog can pass TRIAD_ADAPTIVE_T and the adaptive
 * choice has something to move; twice a second every rank prints how
 * many messages its connections took as detours ("detours N"), which
 * daemon-drain reads to see the choice follow the knobs triadd
 * publishes.
 *
 * After the medium-priority burst and its put and get, a second burst of
 * BURST low-priority messages (a stream of its own, checked the same way).
 * Right after each burst is queued, the peer's slots this rank holds
 * (tx_slots_busy) are read on every plane: a message of priority p goes
 * out only with TRIAD_FC_NEED_* free slots of the peer's, so just after a
 * burst of priority p a connection that took some of it (and so posted
 * one of them last) holds no more than slots - need + 1.
 * Twice a second every rank prints, per plane, the most it saw since the
 * last such line after each kind of burst, and the fewest times one of
 * its connections on the plane was established ("slots p0 med M low L est
 * E ..."), which daemon-drain reads to see flow control follow the needs
 * triadd publishes, once the connections are made again. */
#include <unistd.h>

#include "ft.h"

#define WIN 1
#define PUT_LEN (8u << 10)
#define AM_ID 7
#define AM_DONE 8
#define AM_LOW 9
#define MAXR 8
#define MAX_ROUNDS 1000000
#define BURST 8

#define MAXP 8

static int rank, size;
/* Per sender, per stream (0: medium, AM_ID; 1: low, AM_LOW). */
static uint32_t next_idx[2][MAXR], told[2][MAXR];
static long out_of_order;
/* The most slots of a peer's one connection on a plane held just after a
 * burst (0: medium, 1: low), since the last line. */
static unsigned busy_max[2][MAXP];

struct am {
	uint32_t src, idx;
};

/* arg: the stream's next_idx[] */
static int am_handler(void *arg, int src, const void *data, size_t len, triad_am_msg_t *msg)
{
	uint32_t *next = arg;
	struct am a;

	(void)msg;
	if (len != sizeof(a) || src < 0 || src >= MAXR) {
		out_of_order++;
		return TRIAD_AM_DONE;
	}
	memcpy(&a, data, sizeof(a));
	if (a.src != (uint32_t)src || a.idx != next[src])
		out_of_order++;
	next[src] = a.idx + 1;
	return TRIAD_AM_DONE;
}

static int done_handler(void *arg, int src, const void *data, size_t len, triad_am_msg_t *msg)
{
	(void)arg;
	(void)msg;
	if (len == sizeof(uint32_t[2]) && src >= 0 && src < MAXR) {
		memcpy(&told[0][src], data, sizeof(uint32_t));
		memcpy(&told[1][src], (const char *)data + sizeof(uint32_t), sizeof(uint32_t));
	}
	return TRIAD_AM_DONE;
}

/* The number of our next message to each peer, per stream. */
static uint32_t next_out[2][MAXR];

/* Messages posted to peer r on plane p so far (buffer statuses sent on
 * their own take no slot), and the peer's slots held now; -1: no
 * connection. */
static int64_t posted(triad_ctx_t *ctx, int r, int p, unsigned *busy)
{
	struct triad_conn_stats s = { .field_mask = TRIAD_CONN_STATS_LINK | TRIAD_CONN_STATS_FC };

	if (triad_conn_stats(ctx, r, p, &s) || !s.up)
		return -1;
	*busy = s.tx_slots_busy;
	return (int64_t)(s.tx_msgs - s.bsm_standalone);
}

/* Queues a burst of BURST messages of stream k to peer r; notes the
 * peer's slots held then on every plane that took some of them (the
 * last it posted: one that took none may hold what an earlier burst of
 * another priority left). */
static void burst(triad_ctx_t *ctx, int r, int k, triad_req_t **req)
{
	static const enum triad_prio prio[2] = { TRIAD_PRIO_MEDIUM, TRIAD_PRIO_LOW };
	static const unsigned id[2] = { AM_ID, AM_LOW };
	int64_t before[MAXP];
	unsigned busy;
	struct am a;

	for (int p = 0; p < triad_nplanes(ctx) && p < MAXP; p++)
		before[p] = posted(ctx, r, p, &busy);
	for (int i = 0; i < BURST; i++) {
		a = (struct am){ (uint32_t)rank, next_out[k][r]++ };
		FT_CHECK(triad_am_send(ctx, r, id[k], &a, sizeof(a), prio[k], &req[i]) == 0,
			 "am");
	}
	for (int p = 0; p < triad_nplanes(ctx) && p < MAXP; p++) {
		int64_t now = posted(ctx, r, p, &busy);

		if (before[p] >= 0 && now > before[p] && busy > busy_max[k][p])
			busy_max[k][p] = busy;
	}
}

static void burst_wait(triad_req_t **req, int r, uint32_t round)
{
	for (int i = 0; i < BURST; i++) {
		enum triad_status st = ft_wait(req[i], 60000);

		FT_CHECK(st == TRIAD_S_OK, "am to %d, round %u: %s", r, round,
			 triad_status_str(st));
	}
}

/* One round to peer r: a burst of medium messages, a put, a get of it
 * back, compared; then a burst of low ones. */
static void round_to(triad_ctx_t *ctx, char *win, int r, uint32_t round)
{
	char *src = win + (size_t)(size + r) * PUT_LEN, *back = win + (size_t)(2 * size + r) * PUT_LEN;
	triad_req_t *put, *get, *am[BURST];
	enum triad_status st;

	ft_fill(src, PUT_LEN, (uint32_t)rank * 100003u + round, 0);
	burst(ctx, r, 0, am);
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
	burst_wait(am, r, round);
	/* Only now: what the low burst finds held was left by others. */
	burst(ctx, r, 1, am);
	burst_wait(am, r, round);
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

/* "slots p0 med M low L est E ...": busy_max since the last line (then
 * cleared), and the fewest times a connection on the plane came up. */
static void say_slots(triad_ctx_t *ctx)
{
	char line[512];
	int at;

	at = snprintf(line, sizeof(line), "test_daemon: rank %d slots", rank);
	for (int p = 0; p < triad_nplanes(ctx) && p < MAXP; p++) {
		uint64_t est = UINT64_MAX;

		for (int r = 0; r < size; r++) {
			struct triad_conn_stats s = { .field_mask = TRIAD_CONN_STATS_CONN };

			if (r != rank && triad_conn_stats(ctx, r, p, &s) == 0 && s.established < est)
				est = s.established;
		}
		at += snprintf(line + at, sizeof(line) - (size_t)at, " p%d med %u low %u est %llu", p,
			       busy_max[0][p], busy_max[1][p], (unsigned long long)est);
		busy_max[0][p] = busy_max[1][p] = 0;
	}
	printf("%s\n", line);
}

int main(void)
{
	triad_ctx_t *ctx = ft_init();
	const char *stop = getenv("TRIAD_TEST_STOP");
	size_t len;
	uint32_t round = 0, sent[2];
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
	FT_CHECK(triad_am_register(ctx, AM_ID, am_handler, next_idx[0]) == 0, "handler");
	FT_CHECK(triad_am_register(ctx, AM_LOW, am_handler, next_idx[1]) == 0, "handler");
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
			say_slots(ctx);
			fflush(stdout);
		}
	}
	for (int k = 0; k < 2; k++)
		sent[k] = next_out[k][rank ? 0 : 1]; /* the same count to every peer */
	for (int r = 0; r < size; r++) {
		triad_req_t *req;

		if (r == rank)
			continue;
		FT_CHECK(triad_am_send(ctx, r, AM_DONE, sent, sizeof(sent), TRIAD_PRIO_MEDIUM,
				       &req) == 0, "done");
		FT_CHECK(ft_wait(req, 60000) == TRIAD_S_OK, "done message to %d", r);
	}
	ft_barrier(ctx);
	for (int k = 0; k < 2; k++)
		for (int r = 0; r < size; r++)
			FT_CHECK(r == rank || next_idx[k][r] == told[k][r],
				 "from rank %d: %u %s messages received, %u sent", r, next_idx[k][r],
				 k ? "low" : "medium", told[k][r]);
	FT_CHECK(out_of_order == 0, "%ld messages out of order or malformed", out_of_order);
	printf("test_daemon: rank %d: %u rounds to each peer, all verified\n", rank, round);
	return ft_finish(ctx, "test_daemon");
}
