/* Unit tests for the per-peer stream (lib/proto/stream.[ch]), and a bounded
 * exhaustive exploration of senders, planes and failures around it. */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <errno.h>

#include <cmocka.h>

#include "memo.h"

#include "proto/stream.h"

#define NEW TR_SEQ_NEW
#define DUP TR_SEQ_DUPLICATE
#define FAR TR_SEQ_TOO_FAR
#define NOP TR_STREAM_NO_PLANE

static uint32_t assign(struct tr_stream_tx *tx, unsigned plane)
{
	uint32_t seq = 0;

	assert_int_equal(tr_stream_tx_assign(tx, plane, &seq), 0);
	return seq;
}

static void check_inflight(const struct tr_stream_tx *tx, unsigned p0, unsigned p1, unsigned p2)
{
	assert_int_equal(tr_stream_tx_inflight(tx, 0), p0);
	assert_int_equal(tr_stream_tx_inflight(tx, 1), p1);
	assert_int_equal(tr_stream_tx_inflight(tx, 2), p2);
	for (unsigned p = 3; p < TR_STREAM_MAX_PLANES; p++)
		assert_int_equal(tr_stream_tx_inflight(tx, p), 0);
}

/* ---- plain unit tests ------------------------------------------------------ */

static void test_limits(void **state)
{
	(void)state;
	assert_int_equal(TR_STREAM_WINDOW, TR_SEQ_WINDOW);
	assert_int_equal(TR_STREAM_MAX_PLANES, TRIAD_MAX_PLANES);
	assert_int_equal(TR_STREAM_MAX_PLANES, 8);
}

static void test_tx_init(void **state)
{
	struct tr_stream_tx tx;
	uint32_t s = 7;

	(void)state;
	memset(&tx, 0xa5, sizeof(tx));
	tr_stream_tx_init(&tx, 1000);
	assert_int_equal(tx.next, 1000);
	assert_int_equal(tx.base, 1000);
	assert_true(tx.acked == 0);
	assert_true(tx.resent == 0);
	assert_int_equal(tr_stream_tx_unacked(&tx), 0);
	assert_int_equal(tr_stream_tx_waiting(&tx), 0);
	assert_true(tr_stream_tx_can_assign(&tx));
	check_inflight(&tx, 0, 0, 0);
	for (unsigned i = 0; i < TR_STREAM_WINDOW; i++)
		assert_int_equal(tx.plane[i], NOP);
	assert_int_equal(tr_stream_tx_plane(&tx, 1000), -EINVAL);
	assert_int_equal(tr_stream_tx_first_on(&tx, 0, &s), -ENOENT);
	assert_int_equal(tr_stream_tx_first_on(&tx, NOP, &s), -ENOENT);
	assert_int_equal(s, 7);
}

static void test_tx_assign_and_ack_in_order(void **state)
{
	struct tr_stream_tx tx;

	(void)state;
	tr_stream_tx_init(&tx, 10);
	for (uint32_t i = 0; i < 6; i++) {
		assert_int_equal(assign(&tx, i % 3), 10 + i);
		assert_int_equal(tr_stream_tx_plane(&tx, 10 + i), (int)(i % 3));
	}
	check_inflight(&tx, 2, 2, 2);
	assert_int_equal(tr_stream_tx_unacked(&tx), 6);
	assert_int_equal(tx.next, 16);
	for (uint32_t i = 0; i < 6; i++) {
		assert_int_equal(tr_stream_tx_acked(&tx, 10 + i), 0);
		assert_int_equal(tx.base, 11 + i);
		assert_int_equal(tr_stream_tx_unacked(&tx), 5 - i);
		assert_int_equal(tr_stream_tx_plane(&tx, 10 + i), -EINVAL);
	}
	check_inflight(&tx, 0, 0, 0);
	assert_true(tx.acked == 0);
}

static void test_tx_ack_out_of_order(void **state)
{
	struct tr_stream_tx tx, before;

	(void)state;
	tr_stream_tx_init(&tx, 0);
	assign(&tx, 0); /* 0 */
	assign(&tx, 1); /* 1 */
	assign(&tx, 1); /* 2 */
	assign(&tx, 0); /* 3 */
	/* Planes complete independently: 1 and 2 before 0. */
	assert_int_equal(tr_stream_tx_acked(&tx, 2), 0);
	assert_int_equal(tx.base, 0);
	assert_true(tx.acked == 0x4);
	assert_int_equal(tr_stream_tx_unacked(&tx), 3);
	assert_int_equal(tr_stream_tx_acked(&tx, 1), 0);
	assert_int_equal(tx.base, 0);
	assert_true(tx.acked == 0x6);
	check_inflight(&tx, 2, 0, 0);
	assert_int_equal(tr_stream_tx_acked(&tx, 0), 0);
	assert_int_equal(tx.base, 3); /* past 0, 1 and 2 at once */
	assert_true(tx.acked == 0);
	assert_int_equal(tr_stream_tx_unacked(&tx), 1);

	/* Refused, and nothing changes: acked twice, below base, never
	 * assigned, far away. */
	before = tx;
	assert_int_equal(tr_stream_tx_acked(&tx, 2), -EINVAL);
	assert_int_equal(tr_stream_tx_acked(&tx, 0), -EINVAL);
	assert_int_equal(tr_stream_tx_acked(&tx, 4), -EINVAL);
	assert_int_equal(tr_stream_tx_acked(&tx, 3 + TR_STREAM_WINDOW), -EINVAL);
	assert_int_equal(tr_stream_tx_acked(&tx, UINT32_MAX), -EINVAL);
	assert_memory_equal(&tx, &before, sizeof(tx));
	assign(&tx, 2); /* 4 */
	assert_int_equal(tr_stream_tx_acked(&tx, 4), 0);
	assert_int_equal(tr_stream_tx_acked(&tx, 4), -EINVAL);
	assert_int_equal(tx.base, 3);
	assert_true(tx.acked == 0x2);
	assert_int_equal(tr_stream_tx_acked(&tx, 3), 0);
	assert_int_equal(tx.base, 5);
}

static void test_tx_window(void **state)
{
	struct tr_stream_tx tx, before;
	uint32_t s = 12345;

	(void)state;
	tr_stream_tx_init(&tx, 500);
	for (uint32_t i = 0; i < TR_STREAM_WINDOW; i++) {
		assert_true(tr_stream_tx_can_assign(&tx));
		assert_int_equal(assign(&tx, i % 2), 500 + i);
	}
	assert_false(tr_stream_tx_can_assign(&tx));
	assert_int_equal(tr_stream_tx_unacked(&tx), TR_STREAM_WINDOW);
	before = tx;
	assert_int_equal(tr_stream_tx_assign(&tx, 0, &s), -EAGAIN);
	assert_int_equal(s, 12345);
	assert_memory_equal(&tx, &before, sizeof(tx));
	/* Acknowledging anything but the oldest opens no room... */
	for (uint32_t i = 1; i < TR_STREAM_WINDOW; i++)
		assert_int_equal(tr_stream_tx_acked(&tx, 500 + i), 0);
	assert_int_equal(tr_stream_tx_unacked(&tx), 1);
	assert_int_equal(tr_stream_tx_assign(&tx, 1, &s), -EAGAIN);
	assert_int_equal(tx.base, 500);
	assert_true(tx.acked == ~1ull);
	/* ...the oldest opens the whole window. */
	assert_int_equal(tr_stream_tx_acked(&tx, 500), 0);
	assert_int_equal(tx.base, 500 + TR_STREAM_WINDOW);
	assert_true(tx.acked == 0);
	for (uint32_t i = 0; i < TR_STREAM_WINDOW; i++)
		assign(&tx, 3);
	assert_int_equal(tr_stream_tx_assign(&tx, 3, &s), -EAGAIN);
	for (unsigned p = 0; p < TR_STREAM_MAX_PLANES; p++)
		assert_int_equal(tr_stream_tx_inflight(&tx, p), p == 3 ? TR_STREAM_WINDOW : 0);

	/* A bad plane is refused, window full or not. */
	assert_int_equal(tr_stream_tx_assign(&tx, TR_STREAM_MAX_PLANES, &s), -EINVAL);
	tr_stream_tx_init(&tx, 0);
	before = tx;
	assert_int_equal(tr_stream_tx_assign(&tx, TR_STREAM_MAX_PLANES, &s), -EINVAL);
	assert_int_equal(tr_stream_tx_assign(&tx, NOP, &s), -EINVAL);
	assert_memory_equal(&tx, &before, sizeof(tx));
	assert_int_equal(tr_stream_tx_inflight(&tx, TR_STREAM_MAX_PLANES), 0);
	assert_int_equal(tr_stream_tx_inflight(&tx, NOP), 0);
}

static void test_tx_lost_and_moved(void **state)
{
	struct tr_stream_tx tx, before;
	uint32_t s;

	(void)state;
	tr_stream_tx_init(&tx, 0);
	for (int i = 0; i < 4; i++)
		assign(&tx, 0); /* 0..3 on plane 0 */
	assign(&tx, 1);		/* 4 on plane 1 */
	assert_int_equal(tr_stream_tx_acked(&tx, 0), 0);

	/* 2's copy fails: it waits, on no plane. */
	assert_int_equal(tr_stream_tx_lost(&tx, 2), 0);
	assert_int_equal(tr_stream_tx_plane(&tx, 2), NOP);
	assert_int_equal(tr_stream_tx_waiting(&tx), 1);
	check_inflight(&tx, 2, 1, 0);
	assert_int_equal(tr_stream_tx_unacked(&tx), 4); /* still unacknowledged */
	assert_int_equal(tr_stream_tx_first_on(&tx, NOP, &s), 0);
	assert_int_equal(s, 2);
	assert_int_equal(tr_stream_tx_first_on(&tx, 0, &s), 0);
	assert_int_equal(s, 1);
	/* Refused: lost or acked twice while waiting, lost after an ack. */
	before = tx;
	assert_int_equal(tr_stream_tx_lost(&tx, 2), -EINVAL);
	assert_int_equal(tr_stream_tx_acked(&tx, 2), -EINVAL);
	assert_int_equal(tr_stream_tx_lost(&tx, 0), -EINVAL);
	assert_int_equal(tr_stream_tx_lost(&tx, 5), -EINVAL);
	assert_int_equal(tr_stream_tx_moved(&tx, 0, 1), -EINVAL); /* acknowledged */
	assert_int_equal(tr_stream_tx_moved(&tx, 5, 1), -EINVAL); /* not assigned */
	assert_int_equal(tr_stream_tx_moved(&tx, 2, TR_STREAM_MAX_PLANES), -EINVAL);
	assert_int_equal(tr_stream_tx_moved(&tx, 2, NOP), -EINVAL);
	assert_memory_equal(&tx, &before, sizeof(tx));

	/* Sent again on plane 2. */
	assert_int_equal(tr_stream_tx_moved(&tx, 2, 2), 0);
	assert_int_equal(tr_stream_tx_plane(&tx, 2), 2);
	assert_int_equal(tr_stream_tx_waiting(&tx), 0);
	assert_true(tx.resent == 1);
	check_inflight(&tx, 2, 1, 1);
	assert_int_equal(tr_stream_tx_first_on(&tx, NOP, &s), -ENOENT);

	/* Moved straight from plane 0 to plane 1 (the caller saw the failure). */
	assert_int_equal(tr_stream_tx_moved(&tx, 3, 1), 0);
	check_inflight(&tx, 1, 2, 1);
	/* To the plane it is on (re-established): only the counter moves. */
	assert_int_equal(tr_stream_tx_moved(&tx, 3, 1), 0);
	check_inflight(&tx, 1, 2, 1);
	assert_true(tx.resent == 3);

	/* Whole plane 1 fails: 3 and 4. */
	assert_int_equal(tr_stream_tx_plane_lost(&tx, 1), 2);
	check_inflight(&tx, 1, 0, 1);
	assert_int_equal(tr_stream_tx_waiting(&tx), 2);
	assert_int_equal(tr_stream_tx_plane_lost(&tx, 1), 0);
	assert_int_equal(tr_stream_tx_plane_lost(&tx, 5), 0);
	assert_int_equal(tr_stream_tx_plane_lost(&tx, TR_STREAM_MAX_PLANES), 0);
	assert_int_equal(tr_stream_tx_plane_lost(&tx, NOP), 0);
	assert_int_equal(tr_stream_tx_waiting(&tx), 2);

	/* The resend loop of the header. */
	while (!tr_stream_tx_first_on(&tx, NOP, &s))
		assert_int_equal(tr_stream_tx_moved(&tx, s, 0), 0);
	check_inflight(&tx, 3, 0, 1);
	assert_int_equal(tr_stream_tx_first_on(&tx, 0, &s), 0);
	assert_int_equal(s, 1);
	/* Everything completes, in any order. */
	for (uint32_t q = 4; q >= 1; q--)
		assert_int_equal(tr_stream_tx_acked(&tx, q), 0);
	check_inflight(&tx, 0, 0, 0);
	assert_int_equal(tr_stream_tx_unacked(&tx), 0);
	assert_int_equal(tx.base, 5);
	assert_int_equal(tr_stream_tx_first_on(&tx, 0, &s), -ENOENT);
	for (unsigned i = 0; i < TR_STREAM_WINDOW; i++)
		assert_int_equal(tx.plane[i], NOP);
}

static void test_tx_wrap(void **state)
{
	struct tr_stream_tx tx;
	uint32_t s;

	(void)state;
	/* Numbers, acks out of order and base across 2^32. */
	tr_stream_tx_init(&tx, UINT32_MAX - 2);
	for (uint32_t i = 0; i < 6; i++)
		assert_int_equal(assign(&tx, i % 2), UINT32_MAX - 2 + i);
	assert_int_equal(tx.next, 3);
	assert_int_equal(tr_stream_tx_unacked(&tx), 6);
	assert_int_equal(tr_stream_tx_plane(&tx, UINT32_MAX), 0);
	assert_int_equal(tr_stream_tx_plane(&tx, 0), 1);
	assert_int_equal(tr_stream_tx_acked(&tx, 1), 0);
	assert_int_equal(tr_stream_tx_acked(&tx, UINT32_MAX - 1), 0);
	assert_int_equal(tx.base, UINT32_MAX - 2);
	assert_int_equal(tr_stream_tx_lost(&tx, 0), 0);
	assert_int_equal(tr_stream_tx_first_on(&tx, NOP, &s), 0);
	assert_int_equal(s, 0);
	assert_int_equal(tr_stream_tx_first_on(&tx, 0, &s), 0);
	assert_int_equal(s, UINT32_MAX - 2);
	assert_int_equal(tr_stream_tx_acked(&tx, UINT32_MAX - 2), 0);
	assert_int_equal(tx.base, UINT32_MAX);
	assert_int_equal(tr_stream_tx_acked(&tx, UINT32_MAX), 0);
	assert_int_equal(tx.base, 0); /* wrapped; 0 is waiting */
	assert_int_equal(tr_stream_tx_acked(&tx, UINT32_MAX), -EINVAL);
	assert_int_equal(tr_stream_tx_moved(&tx, 0, 1), 0);
	assert_int_equal(tr_stream_tx_acked(&tx, 0), 0);
	assert_int_equal(tx.base, 2);
	assert_int_equal(tr_stream_tx_acked(&tx, 2), 0);
	assert_int_equal(tx.base, 3);
	assert_int_equal(tr_stream_tx_unacked(&tx), 0);
	check_inflight(&tx, 0, 0, 0);

	/* The window bound across 2^32: 64 from UINT32_MAX - 10 end at 52. */
	tr_stream_tx_init(&tx, UINT32_MAX - 10);
	for (uint32_t i = 0; i < TR_STREAM_WINDOW; i++)
		s = assign(&tx, 0);
	assert_int_equal(s, 52);
	assert_int_equal(tr_stream_tx_assign(&tx, 0, &s), -EAGAIN);
	assert_int_equal(tr_stream_tx_acked(&tx, 0), 0);
	assert_int_equal(tr_stream_tx_assign(&tx, 0, &s), -EAGAIN);
	assert_int_equal(tr_stream_tx_acked(&tx, UINT32_MAX - 10), 0);
	assert_int_equal(assign(&tx, 0), 53);
	assert_int_equal(tr_stream_tx_assign(&tx, 0, &s), -EAGAIN);
	assert_int_equal(tr_stream_tx_plane_lost(&tx, 0), TR_STREAM_WINDOW - 1);
}

static void test_rx(void **state)
{
	struct tr_stream_rx rx;

	(void)state;
	memset(&rx, 0xff, sizeof(rx));
	tr_stream_rx_init(&rx, UINT32_MAX);
	assert_int_equal(tr_stream_rx_next(&rx), UINT32_MAX);
	assert_true(rx.delivered == 0 && rx.duplicates == 0 && rx.too_far == 0);
	assert_int_equal(tr_stream_rx_accept(&rx, 1), NEW);
	assert_int_equal(tr_stream_rx_accept(&rx, 1), DUP);
	assert_int_equal(tr_stream_rx_accept(&rx, UINT32_MAX), NEW);
	assert_int_equal(tr_stream_rx_next(&rx), 0);
	assert_int_equal(tr_stream_rx_accept(&rx, UINT32_MAX), DUP);
	assert_int_equal(tr_stream_rx_accept(&rx, 0), NEW);
	assert_int_equal(tr_stream_rx_next(&rx), 2);
	assert_int_equal(tr_stream_rx_accept(&rx, 2 + TR_SEQ_WINDOW + 1), FAR);
	assert_int_equal(tr_stream_rx_next(&rx), 2);
	assert_true(rx.delivered == 3);
	assert_true(rx.duplicates == 2);
	assert_true(rx.too_far == 1);
}

/* The invariant: the oldest message, sent again last after the rest of
 * the window went by on another plane, is still within the receiver's
 * window, whether its first copy arrived (a duplicate) or not (new). */
static void late_resend(uint32_t first, bool first_copy_arrived)
{
	struct tr_stream_tx tx;
	struct tr_stream_rx rx;
	uint32_t old, s;

	tr_stream_tx_init(&tx, first);
	tr_stream_rx_init(&rx, first);
	old = assign(&tx, 0);
	if (first_copy_arrived)
		assert_int_equal(tr_stream_rx_accept(&rx, old), NEW);
	for (uint32_t i = 1; i < TR_STREAM_WINDOW; i++) {
		s = assign(&tx, 1);
		assert_int_equal(tr_stream_rx_accept(&rx, s), NEW);
		assert_int_equal(tr_stream_tx_acked(&tx, s), 0);
	}
	assert_int_equal(tr_stream_tx_assign(&tx, 1, &s), -EAGAIN);
	/* Plane 0 fails: its copy of old is flushed, sent again on plane 1. */
	assert_int_equal(tr_stream_tx_plane_lost(&tx, 0), 1);
	assert_int_equal(tr_stream_tx_first_on(&tx, NOP, &s), 0);
	assert_int_equal(s, old);
	assert_int_equal(tr_stream_tx_moved(&tx, old, 1), 0);
	assert_int_equal(tr_stream_rx_accept(&rx, old), first_copy_arrived ? DUP : NEW);
	assert_int_equal(tr_stream_rx_next(&rx), first + TR_STREAM_WINDOW);
	assert_int_equal(tr_stream_tx_acked(&tx, old), 0);
	assert_int_equal(tx.base, first + TR_STREAM_WINDOW);
	check_inflight(&tx, 0, 0, 0);
	/* The next window goes through as well. */
	for (uint32_t i = 0; i < TR_STREAM_WINDOW; i++)
		assert_int_equal(tr_stream_rx_accept(&rx, assign(&tx, 0)), NEW);
	assert_true(rx.too_far == 0);
	assert_true(rx.delivered == 2 * TR_STREAM_WINDOW);
}

static void test_late_resend_within_window(void **state)
{
	(void)state;
	late_resend(0, false);
	late_resend(0, true);
	late_resend(UINT32_MAX - 5, false);
	late_resend(UINT32_MAX - 5, true);
}

/* ---- bounded exhaustive exploration ---------------------------------------- */

/* The world: one sender and one receiver stream; each plane an RC QP, a
 * FIFO of the copies posted on it, the first d of them delivered to the
 * receiver and waiting for their send completion (which RC gives in
 * order), the rest still on the wire.  The moves:
 *   send     the next message, on any live plane
 *   deliver  the first undelivered copy of a live plane reaches the
 *            receiver, which passes it to the application or drops it
 *   ack      the oldest delivered copy of a plane completes at the sender
 *   fail     a live plane fails while another stays live (at most
 *            max_fail times): every copy on it is flushed, delivered or
 *            not, and reported lost to the sender
 *   resend   a lost message is sent again on any live plane
 *   restore  a failed plane comes back, empty
 * From the initial state every sequence of moves is followed to its end
 * (no move left).  The state holds everything later moves depend on, so
 * equal states are explored once: the count of interleavings from a
 * state is memoised.  A second pass without memo walks every interleaving
 * one by one and must count the same. */

#define MAXP 3
#define MAXM 4
#define KEYLEN 64

/* Moves in which the receiver dropped a copy it already had. */
static uint64_t dup_moves;

struct cfg {
	unsigned planes, msgs, max_fail;
	uint32_t first;
};

struct world {
	struct tr_stream_tx tx;
	struct tr_stream_rx rx;
	unsigned sent, fails;
	bool live[MAXP];
	uint8_t q[MAXP][MAXM]; /* message index: seq - first */
	unsigned n[MAXP], d[MAXP];
	bool lost[MAXM];
	unsigned delivered[MAXM]; /* times the application got it */
	bool acked[MAXM];
};

static void world_init(const struct cfg *c, struct world *w)
{
	memset(w, 0, sizeof(*w));
	tr_stream_tx_init(&w->tx, c->first);
	tr_stream_rx_init(&w->rx, c->first);
	for (unsigned p = 0; p < c->planes; p++)
		w->live[p] = true;
}

/* The engine agrees with the model after every move. */
static void world_check(const struct cfg *c, const struct world *w)
{
	unsigned nacked = 0, nlost = 0, lowest = c->msgs;

	for (unsigned p = 0; p < TR_STREAM_MAX_PLANES; p++) {
		unsigned want = p < c->planes ? w->n[p] : 0;

		if (tr_stream_tx_inflight(&w->tx, p) != want)
			fail_msg("plane %u: %u in flight, model %u", p,
				 tr_stream_tx_inflight(&w->tx, p), want);
	}
	for (unsigned i = 0; i < w->sent; i++) {
		int plane = tr_stream_tx_plane(&w->tx, c->first + i);

		nacked += w->acked[i];
		nlost += w->lost[i];
		if (!w->delivered[i] && lowest == c->msgs)
			lowest = i;
		if (w->acked[i]) {
			assert_int_equal(plane, -EINVAL);
			assert_true(w->delivered[i] == 1);
		} else if (w->lost[i]) {
			assert_int_equal(plane, NOP);
		} else {
			assert_true(plane >= 0 && (unsigned)plane < c->planes);
			assert_true(w->live[plane]);
		}
	}
	if (w->sent < c->msgs && lowest == c->msgs)
		lowest = w->sent;
	assert_int_equal(tr_stream_tx_unacked(&w->tx), w->sent - nacked);
	assert_int_equal(tr_stream_tx_waiting(&w->tx), nlost);
	assert_int_equal(w->tx.next, c->first + w->sent);
	assert_int_equal(tr_stream_rx_next(&w->rx), c->first + lowest);
	assert_true(w->rx.too_far == 0);
}

/* The end: everything delivered exactly once and acknowledged, nothing
 * left in flight or waiting. */
static void world_check_end(const struct cfg *c, const struct world *w)
{
	assert_int_equal(w->sent, c->msgs);
	for (unsigned i = 0; i < c->msgs; i++) {
		assert_int_equal(w->delivered[i], 1);
		assert_true(w->acked[i]);
		assert_false(w->lost[i]);
	}
	for (unsigned p = 0; p < TR_STREAM_MAX_PLANES; p++)
		assert_int_equal(tr_stream_tx_inflight(&w->tx, p), 0);
	assert_int_equal(tr_stream_tx_unacked(&w->tx), 0);
	assert_int_equal(tr_stream_tx_waiting(&w->tx), 0);
	assert_int_equal(w->tx.base, c->first + c->msgs);
	assert_int_equal(w->tx.next, c->first + c->msgs);
	assert_int_equal(tr_stream_rx_next(&w->rx), c->first + c->msgs);
	assert_true(w->rx.delivered == c->msgs);
	assert_true(w->rx.too_far == 0);
}

static unsigned live_count(const struct cfg *c, const struct world *w)
{
	unsigned k = 0;

	for (unsigned p = 0; p < c->planes; p++)
		k += w->live[p];
	return k;
}

static void push(struct world *w, unsigned p, unsigned i)
{
	assert_true(w->n[p] < MAXM);
	w->q[p][w->n[p]++] = (uint8_t)i;
}

/* Every world one move away, in out[]; returns how many. */
#define MAXSUCC (5 * MAXP + MAXM * MAXP)
static unsigned successors(const struct cfg *c, const struct world *w, struct world *out)
{
	unsigned k = 0;

	for (unsigned p = 0; p < c->planes; p++) {
		struct world *x;

		if (w->live[p] && w->sent < c->msgs) { /* send */
			uint32_t seq = 0;

			x = &out[k++];
			*x = *w;
			assert_int_equal(tr_stream_tx_assign(&x->tx, p, &seq), 0);
			assert_int_equal(seq, c->first + x->sent);
			push(x, p, x->sent++);
		}
		if (w->live[p] && w->d[p] < w->n[p]) { /* deliver */
			unsigned i = w->q[p][w->d[p]];
			enum tr_seq_verdict v;

			x = &out[k++];
			*x = *w;
			x->d[p]++;
			v = tr_stream_rx_accept(&x->rx, c->first + i);
			if (v != (x->delivered[i] ? DUP : NEW))
				fail_msg("message %u on plane %u, delivered %u times: verdict %d", i, p,
					 x->delivered[i], v);
			if (v == NEW)
				x->delivered[i]++;
			else
				dup_moves++;
		}
		if (w->live[p] && w->d[p] > 0) { /* ack the oldest */
			unsigned i = w->q[p][0];

			x = &out[k++];
			*x = *w;
			memmove(x->q[p], x->q[p] + 1, MAXM - 1);
			x->n[p]--;
			x->d[p]--;
			assert_int_equal(tr_stream_tx_acked(&x->tx, c->first + i), 0);
			x->acked[i] = true;
		}
		if (w->live[p] && w->fails < c->max_fail && live_count(c, w) > 1) { /* fail */
			struct tr_stream_tx bulk;

			x = &out[k++];
			*x = *w;
			bulk = x->tx;
			/* The flushed completions, in order; tr_stream_tx_plane_lost()
			 * must do the same at once. */
			for (unsigned j = 0; j < x->n[p]; j++) {
				assert_int_equal(tr_stream_tx_lost(&x->tx, c->first + x->q[p][j]), 0);
				x->lost[x->q[p][j]] = true;
			}
			assert_int_equal(tr_stream_tx_plane_lost(&bulk, p), x->n[p]);
			assert_memory_equal(&bulk, &x->tx, sizeof(bulk));
			x->n[p] = x->d[p] = 0;
			x->live[p] = false;
			x->fails++;
		}
		if (!w->live[p]) { /* restore */
			x = &out[k++];
			*x = *w;
			x->live[p] = true;
		}
		for (unsigned i = 0; i < w->sent; i++) { /* resend i on p */
			if (!w->live[p] || !w->lost[i])
				continue;
			x = &out[k++];
			*x = *w;
			assert_int_equal(tr_stream_tx_moved(&x->tx, c->first + i, p), 0);
			x->lost[i] = false;
			push(x, p, i);
		}
	}
	assert_true(k <= MAXSUCC);
	for (unsigned j = 0; j < k; j++)
		world_check(c, &out[j]);
	return k;
}

/* The state as bytes, relative to first: everything later moves read
 * (not the counters, which no move reads). */
static void world_key(const struct cfg *c, const struct world *w, uint8_t key[KEYLEN])
{
	unsigned k = 0;

	memset(key, 0, KEYLEN);
	key[k++] = (uint8_t)(w->tx.next - c->first);
	key[k++] = (uint8_t)(w->tx.base - c->first);
	assert_true(w->tx.acked < 256);
	key[k++] = (uint8_t)w->tx.acked;
	for (unsigned i = 0; i < c->msgs; i++)
		key[k++] = w->tx.plane[(c->first + i) % TR_STREAM_WINDOW];
	for (unsigned p = 0; p < c->planes; p++)
		key[k++] = (uint8_t)w->tx.inflight[p];
	key[k++] = (uint8_t)w->tx.waiting;
	key[k++] = (uint8_t)(w->rx.seq.next - c->first);
	assert_true(w->rx.seq.above < 256);
	key[k++] = (uint8_t)w->rx.seq.above;
	key[k++] = (uint8_t)w->sent;
	key[k++] = (uint8_t)w->fails;
	for (unsigned p = 0; p < c->planes; p++) {
		key[k++] = w->live[p];
		key[k++] = (uint8_t)w->n[p];
		key[k++] = (uint8_t)w->d[p];
		for (unsigned j = 0; j < w->n[p]; j++)
			key[k++] = w->q[p][j];
	}
	for (unsigned i = 0; i < c->msgs; i++)
		key[k++] = (uint8_t)(w->lost[i] | w->acked[i] << 1 | w->delivered[i] << 2);
	assert_true(k <= KEYLEN);
}

struct explore {
	const struct cfg *c;
	struct memo memo;
	uint64_t moves;	   /* moves followed (memo: edges of the state graph) */
	uint64_t ends;	   /* distinct end states */
	unsigned max_depth;
};

#define MAX_DEPTH 64

static uint64_t explore_memo(struct explore *e, const struct world *w, unsigned depth)
{
	struct world next[MAXSUCC];
	uint8_t key[KEYLEN];
	const uint64_t *seen;
	uint64_t paths = 0;
	unsigned k;

	world_key(e->c, w, key);
	seen = memo_get(&e->memo, key);
	if (seen)
		return *seen;
	assert_true(depth < MAX_DEPTH); /* no cycle: every move makes progress */
	if (depth > e->max_depth)
		e->max_depth = depth;
	k = successors(e->c, w, next);
	if (!k) {
		world_check_end(e->c, w);
		e->ends++;
		paths = 1;
	}
	for (unsigned j = 0; j < k; j++) {
		uint64_t sub = explore_memo(e, &next[j], depth + 1);

		assert_false(__builtin_add_overflow(paths, sub, &paths));
		e->moves++;
	}
	assert_int_equal(memo_put(&e->memo, key, paths), 0);
	return paths;
}

/* Every interleaving, one by one. */
static uint64_t explore_all(const struct cfg *c, const struct world *w, unsigned depth)
{
	struct world next[MAXSUCC];
	unsigned k = successors(c, w, next);
	uint64_t paths = 0;

	assert_true(depth < MAX_DEPTH);
	if (!k) {
		world_check_end(c, w);
		return 1;
	}
	for (unsigned j = 0; j < k; j++)
		paths += explore_all(c, &next[j], depth + 1);
	return paths;
}

struct counts {
	uint64_t states, moves, ends, paths;
};

static struct counts run_exhaustive(const struct cfg *c, bool walk_all)
{
	struct explore e = { .c = c };
	struct world w;
	struct counts r;

	world_init(c, &w);
	world_check(c, &w);
	dup_moves = 0;
	assert_int_equal(memo_init(&e.memo, KEYLEN, 1 << 12), 0);
	r.paths = explore_memo(&e, &w, 0);
	r.states = e.memo.len;
	r.moves = e.moves;
	r.ends = e.ends;
	memo_free(&e.memo);
	printf("stream: %u messages, %u planes, <= %u failures, first %#x: %llu states, "
	       "%llu moves (%llu drop a duplicate), %llu end states, %llu interleavings, "
	       "longest %u moves\n",
	       c->msgs, c->planes, c->max_fail, c->first, (unsigned long long)r.states,
	       (unsigned long long)r.moves, (unsigned long long)dup_moves,
	       (unsigned long long)r.ends, (unsigned long long)r.paths, e.max_depth);
	assert_true(r.states > 0 && r.moves > 0 && r.ends > 0 && r.paths > 0);
	/* Failures after delivery do make the receiver drop duplicates. */
	assert_true(c->max_fail ? dup_moves > 0 : dup_moves == 0);
	if (walk_all) {
		uint64_t all = explore_all(c, &w, 0);

		printf("stream: every interleaving walked one by one: %llu\n",
		       (unsigned long long)all);
		assert_true(all == r.paths);
	}
	return r;
}

/* walked: the interleavings counted one by one by explore_all(), pinned
 * here; 0 where there are too many to walk. */
static void exhaustive(unsigned msgs, unsigned planes, unsigned max_fail, uint64_t walked)
{
	struct cfg c = { .planes = planes, .msgs = msgs, .max_fail = max_fail, .first = 0 };
	struct counts a, b;

	a = run_exhaustive(&c, walked != 0);
	if (walked)
		assert_true(a.paths == walked);
	/* The same across 2^32: the numbers wrap in the middle of the run. */
	c.first = UINT32_MAX - 1;
	b = run_exhaustive(&c, false);
	assert_memory_equal(&a, &b, sizeof(a));
}

static void test_exhaustive_3_messages_2_planes(void **state)
{
	(void)state;
	exhaustive(3, 2, 0, 924);
	exhaustive(3, 2, 1, 859186);
	exhaustive(3, 2, 2, 0);
	exhaustive(4, 2, 2, 0);
}

static void test_exhaustive_2_messages_3_planes(void **state)
{
	(void)state;
	exhaustive(2, 3, 1, 21477);
	exhaustive(2, 3, 2, 0);
	exhaustive(3, 3, 2, 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_limits),
		cmocka_unit_test(test_tx_init),
		cmocka_unit_test(test_tx_assign_and_ack_in_order),
		cmocka_unit_test(test_tx_ack_out_of_order),
		cmocka_unit_test(test_tx_window),
		cmocka_unit_test(test_tx_lost_and_moved),
		cmocka_unit_test(test_tx_wrap),
		cmocka_unit_test(test_rx),
		cmocka_unit_test(test_late_resend_within_window),
		cmocka_unit_test(test_exhaustive_3_messages_2_planes),
		cmocka_unit_test(test_exhaustive_2_messages_3_planes),
	};

	return cmocka_run_group_tests_name("stream", tests, NULL, NULL);
}
