/* Unit tests of the redo fence (lib/proto/fence.[ch]), and an exhaustive
 * exploration of it against a model of both ends of a pair's connections.
 *
 * The model: NP planes, each a sequence of connection incarnations (the
 * first and up to MAXINC - 1 rebuilds); NR operations of one WRITE each,
 * every attempt of which can land at the peer for as long as the peer's
 * end of the incarnation it went on lives (RC cannot tell a flushed WRITE
 * from one executed or still on the wire).  Every interleaving of: a
 * WRITE posted on a live lane, executed and acknowledged, our end breaking
 * (its WRITEs come back flushed, the fence counts the break), the peer's
 * end failing by itself (its notice on its way to us), our question for a
 * break reaching the peer (which moves that end to the error state, then
 * answers), its answer reaching us, and a lane connected again (which the
 * peer accepts only once every older end of it is gone).  An operation a
 * flush came back for is redone (MAXREDO times at most, then it fails),
 * through the fence as lane.c, rma.c and peer.c use it: held in order
 * while tr_fence_holds(), released in order while tr_fence_may_go().
 *
 * Asserted in every state: no operation completes OK, nor is posted again,
 * while an earlier attempt of it can still land; in every final state,
 * nothing is held (the fence always opens).  Three mutants (no fence, a
 * peer that answers before closing its end, a peer that accepts a new
 * connection beside its old end) must each be caught. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "memo.h"

#include "proto/fence.h"

/* ---- plain unit tests ------------------------------------------------------ */

static void test_lane_counts(void **state)
{
	struct tr_fence_lane f[2] = { { 0, 0 }, { 0, 0 } };

	(void)state;
	assert_true(tr_fence_may_go(f, 2, 3, 0));
	tr_fence_lane_broke(&f[1], 0);
	assert_true(tr_fence_may_go(f, 2, 1, 0));
	assert_false(tr_fence_may_go(f, 2, 2, 0));
	assert_false(tr_fence_may_go(f, 2, 3, 0));
	assert_true(tr_fence_may_go(f, 2, 0, 0)); /* a message held behind: no planes */
	/* Answers from before, or from beyond the count, change nothing. */
	assert_int_equal(tr_fence_lane_answer(&f[1], 0), 0);
	assert_int_equal(tr_fence_lane_answer(&f[1], 2), 0);
	assert_false(tr_fence_may_go(f, 2, 2, 0));
	assert_int_equal(tr_fence_lane_answer(&f[1], 1), 1);
	assert_true(tr_fence_may_go(f, 2, 2, 0));
	assert_int_equal(tr_fence_lane_answer(&f[1], 1), 0); /* twice */
	/* Two breaks; the answer for the later fences both. */
	tr_fence_lane_broke(&f[1], 0);
	tr_fence_lane_broke(&f[1], 0);
	assert_int_equal(tr_fence_lane_answer(&f[1], 3), 1);
	assert_true(tr_fence_may_go(f, 2, 2, 0));
	/* The earlier answer, late, moves nothing back. */
	assert_int_equal(tr_fence_lane_answer(&f[1], 2), 0);
	assert_int_equal(f[1].fenced_gen, 3);
	/* A break the peer closed first is fenced at once; a connection
	 * made again fences everything. */
	tr_fence_lane_broke(&f[0], 1);
	assert_true(tr_fence_may_go(f, 2, 1, 0));
	tr_fence_lane_broke(&f[0], 0);
	tr_fence_lane_broke(&f[0], 0);
	assert_false(tr_fence_may_go(f, 2, 1, 0));
	tr_fence_lane_up(&f[0]);
	assert_true(tr_fence_may_go(f, 2, 1, 0));
}

static void test_serial_wrap(void **state)
{
	struct tr_fence_lane f = { 0xfffffffeu, 0xfffffffeu };

	(void)state;
	tr_fence_lane_broke(&f, 0);
	tr_fence_lane_broke(&f, 0);
	tr_fence_lane_broke(&f, 0); /* down_gen 1, across 2^32 */
	assert_int_equal(f.down_gen, 1);
	assert_int_equal(tr_fence_lane_answer(&f, 0xfffffffdu), 0); /* before */
	assert_int_equal(tr_fence_lane_answer(&f, 2), 0);	     /* beyond */
	assert_int_equal(tr_fence_lane_answer(&f, 0xffffffffu), 1);
	assert_false(tr_fence_may_go(&f, 1, 1, 0));
	assert_int_equal(tr_fence_lane_answer(&f, 1), 1);
	assert_true(tr_fence_may_go(&f, 1, 1, 0));
}

static void test_hold_order(void **state)
{
	struct tr_fence_lane f[2] = { { 1, 0 }, { 0, 0 } };

	(void)state;
	assert_true(tr_fence_holds(f, 2, 1, 0, 0));  /* plane 0 not fenced */
	assert_false(tr_fence_holds(f, 2, 2, 0, 0)); /* plane 1 clear */
	assert_true(tr_fence_holds(f, 2, 2, 1, 0));  /* clear, but behind one held */
	assert_false(tr_fence_holds(f, 2, 1, 3, 1)); /* moot: the peer is gone */
	assert_false(tr_fence_may_go(f, 2, 1, 0));
	assert_true(tr_fence_may_go(f, 2, 1, 1));
	assert_true(tr_fence_may_go(f, 2, 0, 0)); /* a message behind */
}

/* ---- the model ------------------------------------------------------------- */

#define NP 2	  /* planes */
#define NR 2	  /* operations */
#define MAXINC 2  /* incarnations of a plane's connection: the first, a rebuild */
#define MAXREDO 1 /* attempts after the first */

enum { L_UP, L_DRAINING, L_DOWN };
enum { R_WAIT, R_POSTED, R_FLUSHING, R_HELD, R_DONE, R_FAILED };

enum mutant {
	M_NONE,
	M_NO_FENCE,	 /* holds nothing */
	M_EARLY_ANSWER,	 /* the peer answers, and closes its end later */
	M_ACCEPT_BESIDE, /* the peer accepts a new connection beside its old end */
};

struct world {
	struct tr_fence_lane f[NP];
	uint8_t lstate[NP], inc[NP], closed_by_peer[NP];
	uint8_t peer_alive[NP]; /* bit i: the peer's end of incarnation i executes */
	uint8_t note[NP];	/* bit i: its notice that it closed incarnation i, on its way */
	uint8_t ask[NP];	/* bit g: our question for break g, on its way */
	uint8_t answer[NP];	/* bit g: its answer for break g, on its way */
	uint8_t late_close[NP]; /* M_EARLY_ANSWER: bit i answered, still alive */
	uint8_t rs[NR], rq[NR], ri[NR], mask[NR], redos[NR];
	uint8_t ghost[NR][NP]; /* bit i: an attempt on incarnation i can still land */
	uint8_t fifo[NR], nfifo;
};

static enum mutant mutant;
static struct memo xmemo;
static uint64_t xstates, xfinals, xviolations, xstuck;
static char xwhy[200];

static void violation(const char *fmt, int r)
{
	if (!xviolations++)
		snprintf(xwhy, sizeof(xwhy), fmt, r);
}

/* r has an attempt that can still land. */
static int can_land(const struct world *w, int r)
{
	for (int q = 0; q < NP; q++)
		if (w->ghost[r][q] & w->peer_alive[q])
			return 1;
	return 0;
}

static int holds(const struct world *w, unsigned planes)
{
	return mutant == M_NO_FENCE ? 0 : tr_fence_holds(w->f, NP, planes, w->nfifo, 0);
}

static int may_go(const struct world *w, unsigned planes)
{
	return mutant == M_NO_FENCE ? 1 : tr_fence_may_go(w->f, NP, planes, 0);
}

/* rma.c's tr_rma_fenced: done again, or completed. */
static void fenced(struct world *w, int r, int ok)
{
	w->mask[r] = 0;
	if (ok) {
		if (can_land(w, r))
			violation("operation %d completed while an earlier attempt could land", r);
		w->rs[r] = R_DONE;
	} else if (w->redos[r] < MAXREDO) {
		if (can_land(w, r))
			violation("operation %d done again while an earlier attempt could land", r);
		w->redos[r]++;
		w->rs[r] = R_WAIT;
	} else {
		w->rs[r] = R_FAILED;
	}
}

/* rma.c's settle(): every WRITE back. */
static void settle(struct world *w, int r, int ok)
{
	if (w->mask[r] && holds(w, w->mask[r])) {
		w->rs[r] = R_HELD;
		w->fifo[w->nfifo++] = (uint8_t)r;
		return;
	}
	fenced(w, r, ok);
}

/* peer.c's tr_peer_fence_settle(), and lanes whose flushes are all back
 * ask the peer about their break (unless it closed first). */
static void after(struct world *w)
{
	for (int q = 0; q < NP; q++) {
		int flushing = 0;

		if (w->lstate[q] != L_DRAINING)
			continue;
		for (int r = 0; r < NR; r++)
			flushing |= w->rs[r] == R_FLUSHING && w->rq[r] == q;
		if (flushing)
			continue;
		w->lstate[q] = L_DOWN;
		if (!w->closed_by_peer[q])
			w->ask[q] |= (uint8_t)(1u << w->f[q].down_gen);
	}
	while (w->nfifo && may_go(w, w->mask[w->fifo[0]])) {
		int r = w->fifo[0];

		memmove(w->fifo, w->fifo + 1, --w->nfifo);
		w->fifo[w->nfifo] = 0;
		fenced(w, r, 0); /* held: only what a flush came back for */
	}
}

static void lane_break(struct world *w, int q, int peer_closed)
{
	w->lstate[q] = L_DRAINING;
	w->closed_by_peer[q] = (uint8_t)peer_closed;
	tr_fence_lane_broke(&w->f[q], peer_closed);
	for (int r = 0; r < NR; r++)
		if (w->rs[r] == R_POSTED && w->rq[r] == q)
			w->rs[r] = R_FLUSHING;
}

static void explore(const struct world *w);

static void step(const struct world *from, void (*act)(struct world *, int, int), int a, int b)
{
	struct world w = *from;

	act(&w, a, b);
	after(&w);
	explore(&w);
}

static void do_post(struct world *w, int r, int q)
{
	w->rs[r] = R_POSTED;
	w->rq[r] = (uint8_t)q;
	w->ri[r] = w->inc[q];
	w->ghost[r][q] |= (uint8_t)(1u << w->inc[q]);
}

static void do_ack(struct world *w, int r, int q)
{
	(void)q;
	/* Executed once: that attempt cannot land again. */
	w->ghost[r][w->rq[r]] &= (uint8_t)~(1u << w->ri[r]);
	settle(w, r, 1);
}

static void do_break(struct world *w, int q, int unused)
{
	(void)unused;
	lane_break(w, q, 0);
}

static void do_flush(struct world *w, int r, int q)
{
	(void)q;
	w->mask[r] |= (uint8_t)(1u << w->rq[r]);
	settle(w, r, 0);
}

static void do_peer_fails(struct world *w, int q, int i)
{
	w->peer_alive[q] &= (uint8_t)~(1u << i);
	w->note[q] |= (uint8_t)(1u << i);
}

static void do_note(struct world *w, int q, int i)
{
	w->note[q] &= (uint8_t)~(1u << i);
	if (w->lstate[q] == L_UP && w->inc[q] == i)
		lane_break(w, q, 1);
}

static void do_ask(struct world *w, int q, int g)
{
	w->ask[q] &= (uint8_t)~(1u << g);
	/* Break g was of incarnation g - 1 (each breaks once, in turn). */
	if (mutant == M_EARLY_ANSWER && w->peer_alive[q] >> (g - 1) & 1u)
		w->late_close[q] |= (uint8_t)(1u << (g - 1));
	else
		w->peer_alive[q] &= (uint8_t)~(1u << (g - 1));
	w->answer[q] |= (uint8_t)(1u << g);
}

static void do_late_close(struct world *w, int q, int i)
{
	w->late_close[q] &= (uint8_t)~(1u << i);
	w->peer_alive[q] &= (uint8_t)~(1u << i);
}

static void do_answer(struct world *w, int q, int g)
{
	w->answer[q] &= (uint8_t)~(1u << g);
	tr_fence_lane_answer(&w->f[q], (uint32_t)g);
}

static void do_rebuild(struct world *w, int q, int unused)
{
	(void)unused;
	w->inc[q]++;
	w->lstate[q] = L_UP;
	w->closed_by_peer[q] = 0;
	w->peer_alive[q] |= (uint8_t)(1u << w->inc[q]);
	tr_fence_lane_up(&w->f[q]);
}

static void explore(const struct world *w)
{
	int moves = 0;

	if (xviolations || memo_get(&xmemo, (const uint8_t *)w))
		return;
	assert_int_equal(memo_put(&xmemo, (const uint8_t *)w, 0), 0);
	xstates++;
	for (int r = 0; r < NR; r++) {
		for (int q = 0; q < NP; q++)
			if (w->rs[r] == R_WAIT && w->lstate[q] == L_UP) {
				step(w, do_post, r, q);
				moves++;
			}
		if (w->rs[r] == R_POSTED && w->lstate[w->rq[r]] == L_UP &&
		    w->inc[w->rq[r]] == w->ri[r] && (w->peer_alive[w->rq[r]] >> w->ri[r] & 1u)) {
			step(w, do_ack, r, 0);
			moves++;
		}
		if (w->rs[r] == R_FLUSHING) {
			step(w, do_flush, r, 0);
			moves++;
		}
	}
	for (int q = 0; q < NP; q++) {
		if (w->lstate[q] == L_UP) {
			step(w, do_break, q, 0);
			moves++;
		}
		if (w->lstate[q] == L_DOWN && w->inc[q] + 1 < MAXINC &&
		    (mutant == M_ACCEPT_BESIDE ||
		     !(w->peer_alive[q] & ((1u << (w->inc[q] + 1)) - 1)))) {
			step(w, do_rebuild, q, 0);
			moves++;
		}
		for (int i = 0; i <= MAXINC; i++) {
			if (w->peer_alive[q] >> i & 1u) {
				step(w, do_peer_fails, q, i);
				moves++;
			}
			if (w->note[q] >> i & 1u) {
				step(w, do_note, q, i);
				moves++;
			}
			if (w->ask[q] >> i & 1u) {
				step(w, do_ask, q, i);
				moves++;
			}
			if (w->answer[q] >> i & 1u) {
				step(w, do_answer, q, i);
				moves++;
			}
			if (w->late_close[q] >> i & 1u) {
				step(w, do_late_close, q, i);
				moves++;
			}
		}
	}
	if (moves)
		return;
	xfinals++;
	for (int r = 0; r < NR; r++)
		if (w->rs[r] == R_HELD && !xstuck++)
			violation("operation %d held for good", r);
}

static void run_model(enum mutant m)
{
	struct world w;

	memset(&w, 0, sizeof(w));
	for (int q = 0; q < NP; q++)
		w.peer_alive[q] = 1;
	mutant = m;
	xstates = xfinals = xviolations = xstuck = 0;
	xwhy[0] = 0;
	assert_int_equal(memo_init(&xmemo, sizeof(w), 1u << 16), 0);
	explore(&w);
	memo_free(&xmemo);
}

static void test_model(void **state)
{
	(void)state;
	run_model(M_NONE);
	printf("fence model: %d planes x %d incarnations, %d operations x %d attempts: %llu "
	       "states, %llu final, %llu violations%s%s\n", NP, MAXINC, NR, MAXREDO + 1,
	       (unsigned long long)xstates, (unsigned long long)xfinals,
	       (unsigned long long)xviolations, xviolations ? ": " : "", xwhy);
	assert_int_equal(xviolations, 0);
	assert_true(xfinals > 0);
}

/* The model can fail: each broken premise is caught. */
static void test_mutants(void **state)
{
	static const char *const names[] = { "", "no fence", "answer before closing",
					     "accept beside the old end" };

	(void)state;
	for (enum mutant m = M_NO_FENCE; m <= M_ACCEPT_BESIDE; m++) {
		run_model(m);
		printf("fence model, mutant \"%s\": %s\n", names[m], xviolations ? xwhy : "not caught");
		assert_true(xviolations > 0);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_lane_counts),
		cmocka_unit_test(test_serial_wrap),
		cmocka_unit_test(test_hold_order),
		cmocka_unit_test(test_model),
		cmocka_unit_test(test_mutants),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
