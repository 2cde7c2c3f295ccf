/* Ordered streams across a plane fault: nothing lost, nothing twice, and
 * in strict order (TRIAD_ORDER=strict, the default) nothing overtaken.
 *
 * Any number of ranks >= 2 x >= 2 planes.  Every rank streams --count
 * active messages to its right neighbour, spread over the three
 * priorities, with payloads of 16 .. 1024 bytes; every 8th step also a
 * 4 KiB put into the neighbour's window followed, once the put completed,
 * by a notification (an active message).  Rank 0 injects a fault on the
 * home plane of the pair (0, 1) after a third of its stream and removes
 * it after two thirds (--fault):
 *   down  the port's link goes down, then up (fabric-ctl down/up);
 *   fail  its connections on the plane are forced into the error state,
 *         as a QP error would (triad_plane_fail); they are rebuilt by
 *         themselves;
 *   loss  5% of the plane's packets are dropped both ways (tc netem);
 *   fail-all  every plane of rank 0 at once, as fail: its pairs are left
 *         with no connection, and what they send waits for them to
 *         reconnect (TRIAD_REJOIN_MS);
 *   delay 20 ms of delay both ways (tc netem): congestion, not a fault;
 *         the adaptive choice (TRIAD_ADAPTIVE=occ, the default) must give
 *         the slow plane less of the pair's traffic than the other while
 *         it lasts (skipped with TRIAD_ADAPTIVE=off);
 *   freeze  rank 1's whole process is stopped (SIGSTOP) for --freeze-ms,
 *         and meanwhile rank 0 fails every plane: rank 0 cannot reconnect
 *         to it, gives it up after TRIAD_REJOIN_MS (which must be shorter)
 *         and fails what it sends it; once rank 1 runs again they
 *         reconnect and the stream goes on past the lost numbers
 *         (SEQ_SKIP).  The streams are paced over the freeze;
 *   none  no fault.
 * Each receiver checks: every message arrives exactly once with its
 * payload intact; in strict order, the messages of each priority arrive
 * in the order sent; every notification arrives once and finds its put's
 * bytes in place.  With freeze, a message or put to rank 1 may fail as
 * unreachable (every message then carries a request): rank 1 checks that
 * every message arrived or its sender was told it failed, none twice,
 * none overtaken, and that the stream did not stop.  Rank 0 checks that, while the fault lasted, the
 * pair's messages moved to another plane (down, fail) and that, once the
 * plane is back, its messages take the home plane again (the per-plane
 * counters show both). */
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <strings.h>
#include <stdatomic.h>
#include <unistd.h>

#include "ft.h"

#define AM_DATA 7
#define AM_NOTIFY 8
#define AM_PROBE 9 /* empty: only counted on its plane */
#define PUT_EVERY 8
#define BLOCK 4096
#define PUTS_INFLIGHT 16
#define WIN_ID 3

struct payload {
	uint32_t magic;
	uint32_t prio;
	uint32_t idx; /* among the sender's messages of this priority */
	uint32_t len; /* of the whole payload */
};
#define MAGIC 0x0d3d3e55u

#define AM_FAILED 10 /* freeze: how many of the sender's messages failed, per priority */

enum fault { F_NONE, F_DOWN, F_FAIL, F_LOSS, F_DELAY, F_FAIL_ALL, F_FREEZE, F_NFAULTS };
static const char *const fault_names[] = { "none",  "down",     "fail",  "loss",
					   "delay", "fail-all", "freeze" };

static struct {
	int count;
	enum fault fault;
	int strict;
	int left; /* the rank that streams to us */
	char *win;
	/* received, per priority */
	uint8_t *seen[3];
	uint32_t next[3];
	unsigned got, dups, reordered, gaps, corrupt;
	uint8_t *notified;
	unsigned notes, note_dups, note_bad;
	/* freeze */
	int freeze_ms;
	double t0;				/* after the first barrier: the schedule's start */
	triad_req_t **reqs;			/* every message's request */
	unsigned failed[3], told_failed[3]; /* ours to the right; the left's, as told */
	int told;
} st;

/* With freeze: the stream is spread over the freeze and 3 s after it, so
 * that it is running on both sides of it. */
#define FREEZE_AT_S 1.0	  /* rank 1 stops itself */
#define FREEZE_FAIL_AT_S 1.5 /* rank 0 fails its planes */

static uint32_t per_prio(int count, unsigned prio)
{
	/* Step i has priority i % 3. */
	return (uint32_t)(count / 3 + ((unsigned)count % 3 > prio));
}

static uint32_t msg_len(uint32_t prio, uint32_t idx)
{
	return (uint32_t)sizeof(struct payload) + (idx * 37 + prio * 11) % (1024 - 16);
}

static int on_data(void *arg, int src, const void *data, size_t len, triad_am_msg_t *msg)
{
	const struct payload *h = data;
	const uint8_t *body = (const uint8_t *)data + sizeof(*h);

	(void)arg;
	(void)msg;
	if (len < sizeof(*h) || h->magic != MAGIC || h->prio > 2 || h->len != len ||
	    h->idx >= per_prio(st.count, h->prio) || src != st.left ||
	    ft_verify(body, len - sizeof(*h), (uint32_t)src * 3 + h->prio, h->idx) >= 0) {
		st.corrupt++;
		return TRIAD_AM_DONE;
	}
	if (st.seen[h->prio][h->idx]) {
		st.dups++;
		return TRIAD_AM_DONE;
	}
	st.seen[h->prio][h->idx] = 1;
	/* Overtaken: an older one after a newer one (a lost one leaves a gap). */
	if (h->idx < st.next[h->prio])
		st.reordered++;
	else
		st.gaps += h->idx - st.next[h->prio];
	st.next[h->prio] = h->idx + 1;
	st.got++;
	return TRIAD_AM_DONE;
}

static int on_notify(void *arg, int src, const void *data, size_t len, triad_am_msg_t *msg)
{
	uint32_t b;

	(void)arg;
	(void)msg;
	if (len != sizeof(b) || src != st.left) {
		st.note_bad++;
		return TRIAD_AM_DONE;
	}
	memcpy(&b, data, sizeof(b));
	if (b >= (uint32_t)(st.count / PUT_EVERY + 1) ||
	    ft_verify(st.win + (size_t)b * BLOCK, BLOCK, (uint32_t)src + 100, b) >= 0) {
		st.note_bad++;
		return TRIAD_AM_DONE;
	}
	if (st.notified[b]++)
		st.note_dups++;
	else
		st.notes++;
	return TRIAD_AM_DONE;
}

static int on_failed(void *arg, int src, const void *data, size_t len, triad_am_msg_t *msg)
{
	(void)arg;
	(void)msg;
	if (len != sizeof(st.told_failed) || src != st.left || st.told++) {
		st.corrupt++;
		return TRIAD_AM_DONE;
	}
	memcpy(st.told_failed, data, sizeof(st.told_failed));
	return TRIAD_AM_DONE;
}

static unsigned told_failed(void)
{
	return st.told_failed[0] + st.told_failed[1] + st.told_failed[2];
}

static int on_probe(void *arg, int src, const void *data, size_t len, triad_am_msg_t *msg)
{
	(void)arg;
	(void)src;
	(void)data;
	(void)len;
	(void)msg;
	return TRIAD_AM_DONE;
}

static uint64_t msgs_on(triad_ctx_t *ctx, int peer, int plane)
{
	struct triad_conn_stats cs = { .field_mask = TRIAD_CONN_STATS_LINK };

	return triad_conn_stats(ctx, peer, plane, &cs) == 0 ? cs.tx_msgs : 0;
}

/* The messages on every plane but home for delay (the adaptive choice may
 * take any), on plane alt for a fault (the switch's alternate). */
static uint64_t others_on(triad_ctx_t *ctx, int peer, int home, int alt)
{
	uint64_t n = 0;

	if (st.fault != F_DELAY)
		return msgs_on(ctx, peer, alt);
	for (int p = 0; p < triad_nplanes(ctx); p++)
		if (p != home)
			n += msgs_on(ctx, peer, p);
	return n;
}

static int lane_up(triad_ctx_t *ctx, int peer, int plane)
{
	struct triad_conn_stats cs = { .field_mask = TRIAD_CONN_STATS_LINK };

	return triad_conn_stats(ctx, peer, plane, &cs) == 0 && cs.up;
}

/* The fault, on rank 0's port of the pair (0, 1)'s home plane. */
static void fault(triad_ctx_t *ctx, int plane, int on)
{
	int ret = 0;

	switch (st.fault) {
	case F_NONE:
		return;
	case F_DOWN:
		ret = ft_ctl("%s 0 %d", on ? "down" : "up", plane);
		break;
	case F_FAIL:
		if (on)
			ret = triad_plane_fail(ctx, plane);
		break;
	case F_FAIL_ALL: /* rank 0 is left with no connection at all */
	case F_FREEZE:
		for (int p = 0; on && !ret && p < triad_nplanes(ctx); p++)
			ret = triad_plane_fail(ctx, p);
		break;
	case F_LOSS:
		ret = on ? ft_ctl("netem 0 %d loss 5%%", plane) : ft_ctl("clear 0 %d", plane);
		break;
	case F_DELAY:
		ret = on ? ft_ctl("netem 0 %d delay 20ms", plane) : ft_ctl("clear 0 %d", plane);
		break;
	case F_NFAULTS:
		break;
	}
	FT_CHECK(ret == 0, "fault %s %s on plane %d: %d", fault_names[st.fault], on ? "on" : "off",
		 plane, ret);
	if (st.fault == F_FAIL_ALL || st.fault == F_FREEZE)
		printf("rank 0: fault %s %s on every plane\n", fault_names[st.fault],
		       on ? "on" : "off");
	else
		printf("rank 0: fault %s %s on plane %d\n", fault_names[st.fault],
		       on ? "on" : "off", plane);
	fflush(stdout);
}

/* freeze: rank 1 stops itself for --freeze-ms from FREEZE_AT_S on (a
 * child of its own sends the signals: a stopped process sends nothing). */
static void freeze_me_later(void)
{
	pid_t self = getpid(), pid = fork();

	FT_CHECK(pid >= 0, "fork: %s", strerror(errno));
	if (pid == 0) {
		usleep((useconds_t)(FREEZE_AT_S * 1e6));
		kill(self, SIGSTOP);
		usleep((useconds_t)st.freeze_ms * 1000);
		kill(self, SIGCONT);
		_exit(0);
	}
}

/* freeze: rank 0 fails its planes once rank 1 is stopped, by the clock. */
static void freeze_tick(triad_ctx_t *ctx)
{
	static int done;

	if (ft_rank == 0 && !done && ft_now_s() >= st.t0 + FREEZE_FAIL_AT_S) {
		done = 1;
		fault(ctx, 0, 1);
	}
}

/* freeze: every message's request; what failed, told to the receiver. */
static void freeze_settle(triad_ctx_t *ctx, int right)
{
	triad_req_t *req;
	int ret;

	for (int i = 0; i < st.count; i++) {
		enum triad_status s = ft_wait(st.reqs[i], 120000);

		FT_CHECK(s == TRIAD_S_OK || (right == 1 && s == TRIAD_S_UNREACHABLE),
			 "message %d to rank %d: %s", i, right, triad_status_str(s));
		st.failed[i % 3] += s != TRIAD_S_OK;
	}
	ret = triad_am_send(ctx, right, AM_FAILED, st.failed, sizeof(st.failed), TRIAD_PRIO_HIGH,
			    &req);
	FT_CHECK(ret == 0 && ft_wait(req, 120000) == TRIAD_S_OK, "telling rank %d what failed",
		 right);
	printf("rank %d: %u/%u/%u messages to rank %d failed (priority 0/1/2)\n", ft_rank,
	       st.failed[0], st.failed[1], st.failed[2], right);
}

struct puts {
	triad_req_t *req[PUTS_INFLIGHT];
	uint32_t block[PUTS_INFLIGHT];
	char *src;
	unsigned n;
};

/* Completes the oldest put and sends its notification. */
static void put_retire(triad_ctx_t *ctx, struct puts *p, int right)
{
	enum triad_status s = ft_wait(p->req[0], 120000);
	int ret;

	FT_CHECK(s == TRIAD_S_OK, "put of block %u: %s", p->block[0], triad_status_str(s));
	ret = triad_am_send(ctx, right, AM_NOTIFY, &p->block[0], sizeof(p->block[0]),
			    TRIAD_PRIO_MEDIUM, NULL);
	FT_CHECK(ret == 0, "notification of block %u: %s", p->block[0], strerror(-ret));
	p->n--;
	memmove(p->req, p->req + 1, p->n * sizeof(p->req[0]));
	memmove(p->block, p->block + 1, p->n * sizeof(p->block[0]));
}

static void put_block(triad_ctx_t *ctx, struct puts *p, int right, uint32_t b)
{
	int ret;

	if (p->n == PUTS_INFLIGHT)
		put_retire(ctx, p, right);
	ft_fill(p->src + (size_t)b * BLOCK, BLOCK, (uint32_t)ft_rank + 100, b);
	ret = triad_put(ctx, p->src + (size_t)b * BLOCK, BLOCK, right, WIN_ID, (uint64_t)b * BLOCK,
			0, &p->req[p->n]);
	FT_CHECK(ret == 0, "put of block %u: %s", b, strerror(-ret));
	if (ret == 0)
		p->block[p->n++] = b;
}

static void send_one(triad_ctx_t *ctx, int right, int i, char *buf)
{
	unsigned prio = (unsigned)i % 3;
	uint32_t idx = (uint32_t)i / 3;
	struct payload *h = (struct payload *)buf;
	triad_req_t *req = NULL;
	int ret;

	*h = (struct payload){ .magic = MAGIC, .prio = prio, .idx = idx, .len = msg_len(prio, idx) };
	ft_fill(buf + sizeof(*h), h->len - sizeof(*h), (uint32_t)ft_rank * 3 + prio, idx);
	if (st.fault == F_FREEZE) {
		/* Every message's outcome is counted at the end; a stream to a
		 * peer that does not take it says -EAGAIN beyond its bound. */
		for (double end = ft_now_s() + 120;;) {
			ret = triad_am_send(ctx, right, AM_DATA, buf, h->len, (enum triad_prio)prio,
					    &st.reqs[i]);
			if (ret != -EAGAIN || ft_now_s() > end)
				break;
			freeze_tick(ctx);
			triad_progress(ctx);
			usleep(1000);
		}
		FT_CHECK(ret == 0, "am_send %d: %s", i, strerror(-ret));
		return;
	}
	/* Every 64th waits for its request: the stream is paced by the peer. */
	ret = triad_am_send(ctx, right, AM_DATA, buf, h->len, (enum triad_prio)prio,
			    i % 64 == 63 ? &req : NULL);
	FT_CHECK(ret == 0, "am_send %d: %s", i, strerror(-ret));
	if (ret == 0 && req) {
		enum triad_status s = ft_wait(req, 120000);

		FT_CHECK(s == TRIAD_S_OK, "message %d: %s", i, triad_status_str(s));
	}
}

static void usage(const char *prog)
{
	fprintf(stderr,
		"usage: %s [--count N] [--fault none|down|fail|loss|delay|fail-all|freeze]\n"
		"       [--freeze-ms MS (freeze: longer than TRIAD_REJOIN_MS + 1500)]\n",
		prog);
	exit(2);
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "count", required_argument, NULL, 'n' },
		{ "fault", required_argument, NULL, 'f' },
		{ "freeze-ms", required_argument, NULL, 'z' },
		{ NULL, 0, NULL, 0 },
	};
	triad_ctx_t *ctx;
	triad_win_t *win;
	struct puts puts = { .n = 0 };
	size_t winlen;
	int opt, n, right, home, alt = -1, nplanes;
	unsigned notes_due;
	uint64_t home0 = 0, home1 = 0, alt0 = 0, alt1 = 0;
	char buf[1024];
	double t0;

	st.count = 10000;
	st.freeze_ms = 6000;
	while ((opt = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		if (opt == 'n') {
			st.count = atoi(optarg);
			if (st.count < 30)
				usage(argv[0]);
		} else if (opt == 'f') {
			unsigned k;

			for (k = 0; k < F_NFAULTS && strcmp(optarg, fault_names[k]); k++)
				;
			if (k == F_NFAULTS)
				usage(argv[0]);
			st.fault = (enum fault)k;
		} else if (opt == 'z') {
			st.freeze_ms = atoi(optarg);
		} else {
			usage(argv[0]);
		}
	}
	if (st.fault == F_FREEZE) {
		const char *rejoin = getenv("TRIAD_REJOIN_MS");

		/* Rank 0 must have given rank 1 up before it runs again. */
		if (st.freeze_ms < (rejoin ? atoi(rejoin) : 10000) + 1500) {
			fprintf(stderr, "test_order: --freeze-ms %d is not longer than "
				"TRIAD_REJOIN_MS (%s) + 1500\n", st.freeze_ms, rejoin ? rejoin : "10000");
			usage(argv[0]);
		}
		st.reqs = calloc((size_t)st.count, sizeof(*st.reqs));
		if (!st.reqs)
			return 1;
	}
	/* The library's default is strict. */
	st.strict = !getenv("TRIAD_ORDER") || strcasecmp(getenv("TRIAD_ORDER"), "any");
	ctx = ft_init();
	n = triad_size(ctx);
	nplanes = triad_nplanes(ctx);
	if (n < 2 || nplanes < 2) {
		fprintf(stderr, "test_order needs >= 2 ranks and >= 2 planes\n");
		return 1;
	}
	right = (ft_rank + 1) % n;
	st.left = (ft_rank + n - 1) % n;
	home = (ft_rank + right) % nplanes; /* the library's home plane of the pair */
	for (unsigned p = 0; p < 3; p++)
		st.seen[p] = calloc(per_prio(st.count, p), 1);
	winlen = (size_t)(st.count / PUT_EVERY + 1) * BLOCK;
	st.win = calloc(1, winlen);
	st.notified = calloc((size_t)st.count / PUT_EVERY + 1, 1);
	puts.src = calloc(1, winlen);
	if (!st.seen[0] || !st.seen[1] || !st.seen[2] || !st.win || !st.notified || !puts.src)
		return 1;
	FT_CHECK(triad_am_register(ctx, AM_DATA, on_data, NULL) == 0, "am_register");
	FT_CHECK(triad_am_register(ctx, AM_NOTIFY, on_notify, NULL) == 0, "am_register");
	FT_CHECK(triad_am_register(ctx, AM_PROBE, on_probe, NULL) == 0, "am_register");
	FT_CHECK(triad_am_register(ctx, AM_FAILED, on_failed, NULL) == 0, "am_register");
	FT_CHECK(triad_win_create(ctx, WIN_ID, st.win, winlen, NULL, &win) == 0, "win_create");
	ft_barrier(ctx);

	t0 = st.t0 = ft_now_s();
	if (st.fault == F_FREEZE && ft_rank == 1)
		freeze_me_later();
	for (int i = 0; i < st.count; i++) {
		if (st.fault == F_FREEZE) { /* paced over the freeze and 3 s after it */
			double due = t0 + (FREEZE_AT_S + st.freeze_ms / 1000.0 + 3.0) * i / st.count;

			while (ft_now_s() < due) {
				freeze_tick(ctx);
				usleep(500);
			}
		}
		if (ft_rank == 0 && i == st.count / 3 && st.fault != F_FREEZE) {
			home0 = msgs_on(ctx, right, home);
			fault(ctx, home, 1);
			if (st.fault == F_DOWN || st.fault == F_FAIL || st.fault == F_DELAY) {
				alt = (home + 1) % nplanes;
				alt0 = others_on(ctx, right, home, alt);
			}
		}
		if (ft_rank == 0 && i == 2 * st.count / 3 && st.fault != F_FREEZE) {
			if (alt >= 0)
				alt1 = others_on(ctx, right, home, alt);
			home1 = msgs_on(ctx, right, home);
			fault(ctx, home, 0);
		}
		send_one(ctx, right, i, buf);
		if (i % PUT_EVERY == 0 && st.fault != F_FREEZE)
			put_block(ctx, &puts, right, (uint32_t)(i / PUT_EVERY));
	}
	while (puts.n)
		put_retire(ctx, &puts, right);
	printf("rank %d: %d messages sent in %.1f s\n", ft_rank, st.count, ft_now_s() - t0);
	if (st.fault == F_FREEZE)
		freeze_settle(ctx, right);

	/* Everything sent to us arrives: every message, and a notification
	 * for every PUT_EVERY-th.  A rank that waits here says so now and
	 * then: when it waits long, its right neighbour times out in the final
	 * barrier first, and this line names the cause. */
	notes_due = st.fault == F_FREEZE ? 0 : (unsigned)(st.count - 1) / PUT_EVERY + 1;
	for (double start = ft_now_s(), end = start + 120, said = start;
	     (st.got + told_failed() < (unsigned)st.count || st.notes < notes_due ||
	      (st.fault == F_FREEZE && !st.told)) &&
	     ft_now_s() < end;) {
		triad_progress(ctx);
		if (ft_now_s() - said >= 20) {
			said = ft_now_s();
			printf("rank %d: still waiting after %.0f s: %u of %d messages, %u of %u "
			       "notifications from rank %d\n", ft_rank, said - start, st.got, st.count,
			       st.notes, notes_due, st.left);
			fflush(stdout);
		}
	}
	if (st.fault == F_FREEZE) {
		/* Every message arrived or its sender was told it failed (one can
		 * do both: it arrived, and its acknowledgement was lost with the
		 * connection); every gap is one that failed. */
		FT_CHECK(st.told, "rank %d never said what failed", st.left);
		FT_CHECK(st.got + told_failed() >= (unsigned)st.count,
			 "%u of %d messages from rank %d arrived and %u failed: %u lost unseen",
			 st.got, st.count, st.left, told_failed(),
			 st.count - st.got - told_failed());
		FT_CHECK(st.gaps <= told_failed(), "%u messages from rank %d missing, %u failed",
			 st.gaps, st.left, told_failed());
		printf("rank %d: %u of %d messages from rank %d arrived, %u failed (freeze)\n",
		       ft_rank, st.got, st.count, st.left, told_failed());
	} else {
		FT_CHECK(st.got == (unsigned)st.count, "%u of %d messages from rank %d arrived",
			 st.got, st.count, st.left);
	}
	FT_CHECK(st.notes == notes_due, "%u of %u notifications arrived", st.notes, notes_due);
	FT_CHECK(st.dups == 0 && st.note_dups == 0, "%u messages and %u notifications twice",
		 st.dups, st.note_dups);
	FT_CHECK(st.corrupt == 0 && st.note_bad == 0,
		 "%u messages corrupt, %u notifications found their block wrong", st.corrupt,
		 st.note_bad);
	if (st.strict)
		FT_CHECK(st.reordered == 0, "strict order: %u messages overtaken", st.reordered);
	printf("rank %d: %u messages, %u notifications from rank %d; %u out of order (%s)\n",
	       ft_rank, st.got, st.notes, st.left, st.reordered, st.strict ? "strict" : "any order");

	if (ft_rank == 0 && st.fault == F_DELAY) {
		const char *adaptive = getenv("TRIAD_ADAPTIVE");

		/* Congestion: the slow plane got less of the traffic. */
		FT_CHECK((adaptive && !strcasecmp(adaptive, "off")) || alt1 - alt0 > home1 - home0,
			 "while plane %d was slow it carried %llu messages, the other planes only %llu",
			 home, (unsigned long long)(home1 - home0), (unsigned long long)(alt1 - alt0));
		printf("rank 0: while plane %d was slow: %llu messages on it, %llu on %s\n",
		       home, (unsigned long long)(home1 - home0), (unsigned long long)(alt1 - alt0),
		       nplanes > 2 ? "the others" : "the other");
	} else if (ft_rank == 0 && alt >= 0) {
		/* The fault moved the pair's messages off the home plane ... */
		FT_CHECK(alt1 > alt0, "no message took plane %d during the fault", alt);
		/* ... and once the plane is back, they return to it. */
		for (double end = ft_now_s() + 60; !lane_up(ctx, right, home) && ft_now_s() < end;)
			usleep(20000);
		FT_CHECK(lane_up(ctx, right, home), "plane %d to rank %d never came back", home,
			 right);
		home0 = msgs_on(ctx, right, home);
		for (int i = 0; i < 100; i++) {
			triad_req_t *req;

			if (triad_am_send(ctx, right, AM_PROBE, NULL, 0, TRIAD_PRIO_HIGH, &req) == 0)
				ft_wait(req, 60000);
		}
		FT_CHECK(msgs_on(ctx, right, home) >= home0 + 100,
			 "after the fault only %llu of 100 messages took the home plane %d",
			 (unsigned long long)(msgs_on(ctx, right, home) - home0), home);
		printf("rank 0: during the fault %llu messages took plane %d; home plane %d is back\n",
		       (unsigned long long)(alt1 - alt0), alt, home);
	}
	printf("rank %d: checked, at the final barrier\n", ft_rank);
	fflush(stdout);
	ft_barrier(ctx);
	FT_CHECK(triad_win_destroy(win) == 0, "win_destroy");
	for (unsigned p = 0; p < 3; p++)
		free(st.seen[p]);
	free(st.win);
	free(st.notified);
	free(puts.src);
	free(st.reqs);
	return ft_finish(ctx, "order");
}
