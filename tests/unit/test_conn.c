/* Unit tests for the connection request rule (lib/proto/conn.[ch]): the
 * table of verdicts, and every interleaving of two ranks that both connect
 * a lane at once (requests crossing, replies in any order, requests lost),
 * checked to end with exactly one connection, never two. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "proto/conn.h"

static enum tr_conn_verdict verdict(int me, int from, enum tr_conn_phase ph, int lazy,
				    int ever_up)
{
	struct tr_conn_view v = { .me = me, .from = from, .phase = ph, .lazy = lazy,
				  .ever_up = ever_up };

	return tr_conn_on_request(&v);
}

static void test_eager(void **state)
{
	(void)state;
	/* The higher rank accepts the lower's first request and its rebuilds. */
	assert_int_equal(verdict(3, 1, TR_CONN_IDLE, 0, 0), TR_CONN_ACCEPT);
	assert_int_equal(verdict(3, 1, TR_CONN_IDLE, 0, 1), TR_CONN_ACCEPT);
	assert_int_equal(verdict(3, 1, TR_CONN_UP, 0, 1), TR_CONN_REJECT_STALE);
	/* Asked again while our accept never came up: it is dead on the
	 * requester's side, take the new one. */
	assert_int_equal(verdict(3, 1, TR_CONN_ACCEPTING, 0, 0), TR_CONN_ACCEPT_ABANDON);
	assert_int_equal(verdict(3, 1, TR_CONN_ACCEPTING, 0, 1), TR_CONN_ACCEPT_ABANDON);
	assert_int_equal(verdict(3, 1, TR_CONN_BROKEN, 0, 1), TR_CONN_REJECT);
	/* The lower rank never accepts: it connects. */
	assert_int_equal(verdict(1, 3, TR_CONN_IDLE, 0, 0), TR_CONN_REJECT);
	assert_int_equal(verdict(1, 3, TR_CONN_ATTEMPT, 0, 0), TR_CONN_REJECT);
	assert_false(tr_conn_may_start(3, 1, 0, 0));
	assert_true(tr_conn_may_start(1, 3, 0, 0));
	assert_true(tr_conn_may_start(1, 3, 0, 1));
}

static void test_lazy(void **state)
{
	(void)state;
	/* Either side may be first on a lane never up. */
	assert_true(tr_conn_may_start(3, 1, 1, 0));
	assert_true(tr_conn_may_start(1, 3, 1, 0));
	assert_int_equal(verdict(1, 3, TR_CONN_IDLE, 1, 0), TR_CONN_ACCEPT);
	assert_int_equal(verdict(3, 1, TR_CONN_IDLE, 1, 0), TR_CONN_ACCEPT);
	/* Both at once: the lower rank's attempt wins on both sides. */
	assert_int_equal(verdict(1, 3, TR_CONN_ATTEMPT, 1, 0), TR_CONN_REJECT);
	assert_int_equal(verdict(3, 1, TR_CONN_ATTEMPT, 1, 0), TR_CONN_ACCEPT_ABANDON);
	/* Once up, the lower rank alone rebuilds. */
	assert_false(tr_conn_may_start(3, 1, 1, 1));
	assert_true(tr_conn_rebuilds(1, 3));
	assert_false(tr_conn_rebuilds(3, 1));
	assert_int_equal(verdict(1, 3, TR_CONN_IDLE, 1, 1), TR_CONN_REJECT);
	assert_int_equal(verdict(3, 1, TR_CONN_IDLE, 1, 1), TR_CONN_ACCEPT);
	/* The higher rank asks for a lane the lower holds up: half-open. */
	assert_int_equal(verdict(1, 3, TR_CONN_UP, 1, 1), TR_CONN_REJECT_STALE);
	assert_int_equal(verdict(1, 3, TR_CONN_UP, 0, 1), TR_CONN_REJECT);
	assert_int_equal(verdict(1, 3, TR_CONN_ACCEPTING, 1, 0), TR_CONN_REJECT);
}

/* Two runs of one world that overlap (proto/conn.h, tr_conn_same_run). */
static void test_runs(void **state)
{
	const uint64_t a1 = 0xa1, a2 = 0xa2, b1 = 0xb1, b2 = 0xb2; /* rank a, b; runs 1, 2 */

	(void)state;
	/* Strangers (a first connection), and the same two processes again. */
	assert_int_equal(tr_conn_same_run(b1, 0, a1, 0), TR_CONN_SAME_RUN);
	assert_int_equal(tr_conn_same_run(b1, a1, a1, b1), TR_CONN_SAME_RUN);
	assert_int_equal(tr_conn_same_run(b1, a1, a1, 0), TR_CONN_SAME_RUN);
	assert_int_equal(tr_conn_same_run(b1, 0, a1, b1), TR_CONN_SAME_RUN);
	/* Run 2's a asks run 1's b, which knows run 1's a: a later run,
	 * refused by b; a, told by the refusal, sees an earlier run. */
	assert_int_equal(tr_conn_same_run(b1, a1, a2, 0), TR_CONN_LATER_RUN);
	assert_int_equal(tr_conn_same_run(a2, 0, b1, a1), TR_CONN_EARLIER_RUN);
	/* Run 1's a rebuilds towards b's address, where run 2's b listens:
	 * b sees an earlier run; a, told by the refusal, a later one (the b
	 * it knew is gone). */
	assert_int_equal(tr_conn_same_run(b2, 0, a1, b1), TR_CONN_EARLIER_RUN);
	assert_int_equal(tr_conn_same_run(a1, b1, b2, 0), TR_CONN_LATER_RUN);
	/* Both known and both contradicted: the other side is of an earlier
	 * run as far as we can tell (it knows another process as us). */
	assert_int_equal(tr_conn_same_run(b2, a2, a1, b1), TR_CONN_EARLIER_RUN);
}

static void test_never(void **state)
{
	(void)state;
	for (int ph = TR_CONN_IDLE; ph <= TR_CONN_BROKEN; ph++) {
		struct tr_conn_view v = { .me = 2, .from = 1, .phase = ph, .lazy = 1,
					  .closing = 1 };

		assert_int_equal(tr_conn_on_request(&v), TR_CONN_REJECT);
		v.closing = 0;
		v.from = 2; /* from ourselves */
		assert_int_equal(tr_conn_on_request(&v), TR_CONN_REJECT);
	}
	assert_string_equal(tr_conn_verdict_str(TR_CONN_ACCEPT), "accept");
	assert_string_equal(tr_conn_verdict_str((enum tr_conn_verdict)99), "?");
}

/* ---- the race, exhaustively --------------------------------------------------------
 * Two ranks (0 lower, 1 higher), one lane, both wanting it.  A side that is
 * idle may start an attempt (up to BUDGET times); the network delivers the
 * messages in flight in any order and may lose a request (the requester's
 * attempt then times out).  Connections are named by (initiator, attempt). */
enum msg_type { REQ, REP, REJ, RTU };
struct msg {
	enum msg_type type;
	int to;
	int conn; /* initiator * 16 + attempt */
};
struct side {
	enum tr_conn_phase phase;
	int attempt;	 /* attempts started */
	int mine;	 /* conn of our attempt in flight, -1 */
	int accepted;	 /* conn we accepted, -1 */
	int up;		 /* conn established, -1 */
};
struct world {
	struct side s[2];
	struct msg net[8];
	int nnet, losses;
};

#define BUDGET 3
#define LOSSES 1

static unsigned long finals, paths;

static int initiator(int conn)
{
	return conn / 16;
}

static void send_msg(struct world *w, enum msg_type t, int to, int conn)
{
	assert_true(w->nnet < 8);
	w->net[w->nnet++] = (struct msg){ t, to, conn };
}

static void check_invariant(const struct world *w)
{
	/* At no moment two different connections are up, or up on one side
	 * only with the other side using another one. */
	for (int i = 0; i < 2; i++) {
		const struct side *a = &w->s[i], *b = &w->s[!i];

		if (a->up >= 0 && b->up >= 0)
			assert_int_equal(a->up, b->up);
		if (a->up >= 0 && b->accepted >= 0)
			assert_int_equal(a->up, b->accepted);
	}
}

static void explore(struct world *w, int depth);

static void step(const struct world *from, int depth, void (*act)(struct world *, int), int arg)
{
	struct world w = *from;

	act(&w, arg);
	check_invariant(&w);
	explore(&w, depth + 1);
}

static void act_start(struct world *w, int i)
{
	struct side *s = &w->s[i];

	s->mine = i * 16 + s->attempt++;
	s->phase = TR_CONN_ATTEMPT;
	send_msg(w, REQ, !i, s->mine);
}

static void on_msg(struct world *w, struct msg m)
{
	struct side *s = &w->s[m.to];
	struct tr_conn_view v = { .me = m.to, .from = !m.to, .phase = s->phase, .lazy = 1,
				  .ever_up = s->up >= 0 };

	switch (m.type) {
	case REQ:
		switch (tr_conn_on_request(&v)) {
		case TR_CONN_ACCEPT_ABANDON:
			s->mine = -1; /* its REQ may still arrive: it is rejected there */
			/* fall through */
		case TR_CONN_ACCEPT:
			assert_true(s->phase == TR_CONN_IDLE || s->phase == TR_CONN_ATTEMPT ||
				    s->phase == TR_CONN_ACCEPTING);
			s->phase = TR_CONN_ACCEPTING;
			s->accepted = m.conn;
			send_msg(w, REP, !m.to, m.conn);
			break;
		default:
			send_msg(w, REJ, !m.to, m.conn);
			break;
		}
		break;
	case REP:
		if (s->mine == m.conn) { /* else stale: the kernel drops it */
			s->mine = -1;
			s->phase = TR_CONN_UP;
			s->up = m.conn;
			send_msg(w, RTU, !m.to, m.conn);
		}
		break;
	case REJ:
		if (s->mine == m.conn) {
			s->mine = -1;
			s->phase = TR_CONN_IDLE;
		}
		break;
	case RTU:
		if (s->accepted == m.conn && s->phase == TR_CONN_ACCEPTING) {
			s->phase = TR_CONN_UP;
			s->up = m.conn;
		}
		break;
	}
}

static void act_deliver(struct world *w, int k)
{
	struct msg m = w->net[k];

	w->net[k] = w->net[--w->nnet];
	on_msg(w, m);
}

static void act_lose(struct world *w, int k)
{
	struct msg m = w->net[k];

	w->net[k] = w->net[--w->nnet];
	w->losses++;
	if (w->s[initiator(m.conn)].mine == m.conn) { /* its attempt times out */
		w->s[initiator(m.conn)].mine = -1;
		w->s[initiator(m.conn)].phase = TR_CONN_IDLE;
	}
}

static int may_start(const struct world *w, int i)
{
	const struct side *s = &w->s[i];

	return s->phase == TR_CONN_IDLE && s->attempt < BUDGET &&
	       tr_conn_may_start(i, !i, 1, s->up >= 0);
}

static void explore(struct world *w, int depth)
{
	int moved = 0;

	assert_true(depth < 64);
	paths++;
	for (int i = 0; i < 2; i++)
		if (may_start(w, i)) {
			step(w, depth, act_start, i);
			moved = 1;
		}
	for (int k = 0; k < w->nnet; k++) {
		step(w, depth, act_deliver, k);
		if (w->net[k].type == REQ && w->losses < LOSSES)
			step(w, depth, act_lose, k);
		moved = 1;
	}
	if (moved)
		return;
	/* Nothing in flight and nobody may try again: one connection, on both
	 * sides, unless both ran out of attempts (only after losses). */
	finals++;
	if (w->s[0].up < 0 || w->s[1].up < 0) {
		assert_true(w->losses > 0);
		assert_int_equal(w->s[0].attempt, BUDGET);
		assert_int_equal(w->s[0].up, -1);
		assert_int_equal(w->s[1].up, -1);
		return;
	}
	assert_int_equal(w->s[0].up, w->s[1].up);
}

static void test_race(void **state)
{
	struct world w = { .s = { { .mine = -1, .accepted = -1, .up = -1 },
				  { .mine = -1, .accepted = -1, .up = -1 } } };

	(void)state;
	explore(&w, 0);
	assert_true(finals > 100);
	print_message("%lu interleavings ended, %lu states visited\n", finals, paths);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_eager),
		cmocka_unit_test(test_lazy),
		cmocka_unit_test(test_runs),
		cmocka_unit_test(test_never),
		cmocka_unit_test(test_race),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
