/* Unit tests for the message stream (lib/proto/stream.[ch]), and an
 * exhaustive exploration of one stream over two planes that break, come
 * back and lose or delay what they carried. */
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

#define DELIVER TR_STREAM_DELIVER
#define DUP TR_STREAM_DUPLICATE
#define PARK TR_STREAM_PARK
#define BROKEN TR_STREAM_BROKEN

static uint32_t assign(struct tr_stream_tx *tx)
{
	uint32_t seq = 0;

	assert_int_equal(tr_stream_tx_assign(tx, &seq), 0);
	return seq;
}

/* ---- plain unit tests ------------------------------------------------------ */

static void test_tx_window_and_bound(void **state)
{
	struct tr_stream_tx tx;
	uint32_t s;

	(void)state;
	tr_stream_tx_init(&tx, 0xfffffff0u, 0);
	assert_int_equal(tx.window, TR_STREAM_WINDOW);
	tr_stream_tx_init(&tx, 0xfffffff0u, 1000); /* clamped */
	assert_int_equal(tx.window, TR_STREAM_WINDOW);
	tr_stream_tx_init(&tx, 0xfffffff0u, 4);
	for (unsigned i = 0; i < TR_STREAM_AHEAD; i++)
		assert_int_equal(assign(&tx), 0xfffffff0u + i); /* across 2^32 */
	s = 12345;
	assert_int_equal(tr_stream_tx_assign(&tx, &s), -EAGAIN);
	assert_int_equal(s, 12345);
	assert_false(tr_stream_tx_can_assign(&tx));
	assert_int_equal(tr_stream_tx_unsettled(&tx), TR_STREAM_AHEAD);
	/* The window: base .. base + 3. */
	assert_true(tr_stream_tx_may_post(&tx, 0xfffffff0u));
	assert_true(tr_stream_tx_may_post(&tx, 0xfffffff3u));
	assert_false(tr_stream_tx_may_post(&tx, 0xfffffff4u));
	/* Settling out of order moves base only over a prefix. */
	assert_false(tr_stream_tx_settled(&tx, 0xfffffff1u));
	assert_false(tr_stream_tx_settled(&tx, 0xfffffff1u)); /* twice: nothing */
	assert_int_equal(tr_stream_tx_unsettled(&tx), TR_STREAM_AHEAD - 1);
	assert_true(tr_stream_tx_settled(&tx, 0xfffffff0u));
	assert_int_equal(tr_stream_tx_base(&tx), 0xfffffff2u);
	assert_true(tr_stream_tx_may_post(&tx, 0xfffffff5u));
	assert_true(tr_stream_tx_can_assign(&tx));
	assert_int_equal(assign(&tx), 0xfffffff0u + TR_STREAM_AHEAD);
	/* Settled or never assigned: nothing. */
	assert_false(tr_stream_tx_settled(&tx, 0xfffffff0u));
	assert_false(tr_stream_tx_settled(&tx, 0x7fffffffu));
}

static void test_tx_lost_and_skips(void **state)
{
	struct tr_stream_tx tx;
	uint32_t out[8];

	(void)state;
	tr_stream_tx_init(&tx, 100, 4);
	for (int i = 0; i < 10; i++)
		assign(&tx);
	assert_int_equal(tr_stream_tx_lost(&tx, 99), -EINVAL);	 /* settled */
	assert_int_equal(tr_stream_tx_lost(&tx, 110), -EINVAL);	 /* not assigned */
	assert_int_equal(tr_stream_tx_lost(&tx, 108), 0);
	assert_int_equal(tr_stream_tx_lost(&tx, 108), -EINVAL); /* once */
	assert_int_equal(tr_stream_tx_lost(&tx, 101), 0);
	assert_int_equal(tr_stream_tx_lost(&tx, 103), 0);
	assert_int_equal(tr_stream_tx_nlost(&tx), 3);
	assert_true(tr_stream_tx_is_lost(&tx, 101) && tr_stream_tx_is_lost(&tx, 108));
	assert_false(tr_stream_tx_is_lost(&tx, 100) || tr_stream_tx_is_lost(&tx, 99) ||
		     tr_stream_tx_is_lost(&tx, 110));
	/* Only within the window (100 .. 103), lowest first, at most max. */
	assert_int_equal(tr_stream_tx_tellable(&tx), 2);
	assert_int_equal(tr_stream_tx_skips(&tx, out, 1), 1);
	assert_int_equal(out[0], 101);
	assert_int_equal(tr_stream_tx_skips(&tx, out, 8), 1);
	assert_int_equal(out[0], 103);
	assert_false(tr_stream_tx_is_lost(&tx, 103)); /* handed to a SEQ_SKIP */
	assert_int_equal(tr_stream_tx_skips(&tx, out, 8), 0);
	assert_int_equal(tr_stream_tx_nlost(&tx), 1);
	/* The SEQ_SKIP carrying 103 was lost: 103 is lost again. */
	assert_int_equal(tr_stream_tx_lost(&tx, 103), 0);
	/* 100 and 102 arrive, 101 is told: base 103, and 108 still waits. */
	tr_stream_tx_settled(&tx, 100);
	tr_stream_tx_settled(&tx, 102);
	tr_stream_tx_settled(&tx, 101);
	assert_int_equal(tr_stream_tx_base(&tx), 103);
	assert_int_equal(tr_stream_tx_tellable(&tx), 1); /* 103; 108 is beyond */
	assert_int_equal(tr_stream_tx_skips(&tx, out, 8), 1);
	assert_int_equal(out[0], 103);
	assert_int_equal(tx.skipped, 3);
	/* A lost number that arrives after all is settled, not told. */
	for (uint32_t s = 103; s < 108; s++)
		tr_stream_tx_settled(&tx, s);
	assert_int_equal(tr_stream_tx_tellable(&tx), 1);
	assert_true(tr_stream_tx_settled(&tx, 108));
	assert_false(tr_stream_tx_is_lost(&tx, 108)); /* settled */
	assert_int_equal(tr_stream_tx_nlost(&tx), 0);
	assert_int_equal(tr_stream_tx_skips(&tx, out, 8), 0);
}

static void test_rx(void **state)
{
	struct tr_stream_rx rx;

	(void)state;
	tr_stream_rx_init(&rx, 0xfffffffeu, 0);
	assert_int_equal(rx.window, TR_STREAM_WINDOW);
	assert_int_equal(tr_stream_rx_accept(&rx, 0xffffffffu, 2), DELIVER);
	assert_int_equal(tr_stream_rx_accept(&rx, 0xffffffffu, 2), DUP);
	assert_int_equal(tr_stream_rx_next(&rx), 0xfffffffeu);
	assert_int_equal(tr_stream_rx_skip(&rx, 0xfffffffeu, 2), DELIVER);
	assert_int_equal(tr_stream_rx_next(&rx), 0);
	/* Beyond the window: parked, up to park_max; then a broken sender. */
	assert_false(tr_stream_rx_fits(&rx, TR_STREAM_WINDOW + 1));
	assert_int_equal(tr_stream_rx_accept(&rx, TR_STREAM_WINDOW + 1, 2), PARK);
	assert_int_equal(tr_stream_rx_skip(&rx, TR_STREAM_WINDOW + 2, 2), PARK);
	assert_int_equal(tr_stream_rx_accept(&rx, TR_STREAM_WINDOW + 3, 2), BROKEN);
	assert_int_equal(rx.parked, 2);
	tr_stream_rx_unparked(&rx);
	assert_int_equal(tr_stream_rx_accept(&rx, 0, 2), DELIVER);
	assert_true(tr_stream_rx_fits(&rx, TR_STREAM_WINDOW + 1));
	assert_int_equal(tr_stream_rx_accept(&rx, TR_STREAM_WINDOW + 1, 2), DELIVER);
	assert_int_equal(rx.delivered, 3);
	assert_int_equal(rx.skipped, 1);
	assert_int_equal(rx.duplicates, 1);
	assert_string_equal(tr_stream_verdict_str(PARK), "park");
	assert_string_equal(tr_stream_verdict_str((enum tr_stream_verdict)9), "?");
}

/* ---- exhaustive exploration ------------------------------------------------ */

/* One stream (one priority, one direction) of N messages over two planes,
 * each an RC connection, as lib/core drives it (peer.c, lane.c):
 *   send     the next message gets its number and is queued on a live
 *            plane, in order of number (lane.c's queue_place)
 *   post     a plane posts its first queued item: a message only within
 *            the sender's window, a SEQ_SKIP always
 *   arrive   the oldest item in flight on a live plane reaches the peer
 *   take     the peer handles the oldest item that arrived on a plane (RC:
 *            in order; each plane at its own pace): accept or skip, park
 *            beyond its window, and every parked one that fits then
 *   ack      the oldest arrived item's send completion: settled
 *   break    a live plane breaks (at most B times): what it has in flight
 *            comes back flushed (RC cannot say whether it arrived), and
 *            what is flushed or queued there is sent again on the other
 *            plane in order of number, or lost for good when none lives;
 *            a flushed SEQ_SKIP gives its numbers back.  What is still on
 *            the wire may yet arrive at the peer's end (ghost), until
 *   mend     the plane is rebuilt: the peer's old end is gone (ghosts
 *            dropped), the plane is live and empty again
 *   tell     lost numbers the window reaches go out in a SEQ_SKIP on a
 *            live plane, ahead of its queued messages
 * Checked after every move: no number handed over twice, nor both handed
 * over and skipped; the peer never sees a broken sender; a message is
 * posted only within the window.  At every end state (no move left):
 * every number handed over once or skipped, and the sender's window
 * empty (nothing stalls).  Equal states are explored once (memo). */

#define XN 5	 /* messages at most */
#define XP 2	 /* planes */
#define XQ 8	 /* items per plane queue / in flight / ghosts */
#define SKIPF 0x80u
#define XPARK 64

struct xcfg {
	unsigned n, window, breaks;
	uint32_t first;
	bool home; /* new messages take plane 0 (the home plane) while it lives */
};

/* An item: a message (its index g) or a SEQ_SKIP (SKIPF | a mask of g). */
struct xplane {
	uint8_t live;
	uint8_t nq, nf, na, nr, ng;
	uint8_t q[XQ]; /* queued, not posted */
	uint8_t f[XQ]; /* posted, not acknowledged, in order; the first na arrived */
	uint8_t r[XQ]; /* arrived at the peer, not handled yet (its CQ), in order */
	uint8_t g[XQ]; /* ghosts: flushed here, still on the wire */
};

struct xworld {
	struct tr_stream_tx tx;
	struct tr_stream_rx rx;
	struct xplane pl[XP];
	uint8_t sent, breaks;
	/* Parked at the peer under number g: copies of message g (a copy
	 * sent again may park beside the first), and SEQ_SKIPs waiting for g
	 * (how many, and the union of their numbers: tried again whole). */
	uint8_t parked_msg[XN], parked_skips[XN], parked_mask[XN];
	uint8_t handed[XN], skipped[XN];
};

struct xstats {
	uint64_t states, ends, lost, parks, ghosts_late;
};

static const struct xcfg *xc;
static struct memo xmemo;
static struct xstats xs;

static uint32_t seq_of(unsigned g)
{
	return xc->first + g;
}

static unsigned g_of(uint32_t seq)
{
	return seq - xc->first;
}

static void qput(struct xplane *p, uint8_t item)
{
	unsigned at = p->nq;

	assert_true(p->nq < XQ);
	/* lane.c: SEQ_SKIPs first, then messages in order of number. */
	while (at > 0 && (item & SKIPF ? !(p->q[at - 1] & SKIPF)
				       : !(p->q[at - 1] & SKIPF) && p->q[at - 1] > item))
		at--;
	memmove(p->q + at + 1, p->q + at, p->nq - at);
	p->q[at] = item;
	p->nq++;
}

static int other_live(const struct xworld *w, int p)
{
	for (int k = 0; k < XP; k++)
		if (k != p && w->pl[k].live)
			return k;
	return -1;
}

/* An item given back by plane p (flushed or queued): sent again on a live
 * plane, else lost for good (peer.c's msg_resend, skip_lost). */
static void give_back(struct xworld *w, int p, uint8_t item)
{
	int to = other_live(w, p);

	if (to >= 0) {
		qput(&w->pl[to], item);
		return;
	}
	if (item & SKIPF) {
		for (unsigned g = 0; g < XN; g++)
			if (item >> g & 1u)
				assert_int_equal(tr_stream_tx_lost(&w->tx, seq_of(g)), 0);
	} else {
		assert_int_equal(tr_stream_tx_lost(&w->tx, seq_of(item)), 0);
		xs.lost++;
	}
}

static void rx_hand(struct xworld *w, unsigned g)
{
	assert_int_equal(w->handed[g] + w->skipped[g], 0);
	w->handed[g] = 1;
}

/* The peer takes a SEQ_SKIP of mask; 0, or the g it parked under. */
static void rx_skip(struct xworld *w, uint8_t mask)
{
	for (unsigned g = 0; g < XN; g++) {
		if (!(mask >> g & 1u))
			continue;
		switch (tr_stream_rx_skip(&w->rx, seq_of(g), XPARK)) {
		case DELIVER:
			assert_int_equal(w->handed[g] + w->skipped[g], 0);
			w->skipped[g] = 1;
			break;
		case DUP:
			break;
		case PARK:
			w->parked_skips[g]++;
			w->parked_mask[g] |= mask;
			xs.parks++;
			return;
		default:
			fail_msg("a broken sender (skip %u)", g);
		}
	}
}

static void rx_take(struct xworld *w, uint8_t item)
{
	if (item & SKIPF) {
		rx_skip(w, item & (uint8_t)~SKIPF);
	} else {
		switch (tr_stream_rx_accept(&w->rx, seq_of(item), XPARK)) {
		case DELIVER:
			rx_hand(w, item);
			break;
		case DUP:
			break;
		case PARK:
			w->parked_msg[item]++;
			xs.parks++;
			break;
		default:
			fail_msg("a broken sender (message %u)", item);
		}
	}
	/* peer.c's unpark: every parked one that fits now, until none. */
	for (bool again = true; again;) {
		again = false;
		for (unsigned g = 0; g < XN; g++) {
			if (!(w->parked_msg[g] + w->parked_skips[g]) ||
			    !tr_stream_rx_fits(&w->rx, seq_of(g)))
				continue;
			for (; w->parked_msg[g]; w->parked_msg[g]--) {
				tr_stream_rx_unparked(&w->rx);
				if (tr_stream_rx_accept(&w->rx, seq_of(g), XPARK) == DELIVER)
					rx_hand(w, g);
			}
			if (w->parked_skips[g]) {
				uint8_t mask = w->parked_mask[g];

				for (; w->parked_skips[g]; w->parked_skips[g]--)
					tr_stream_rx_unparked(&w->rx);
				w->parked_mask[g] = 0;
				rx_skip(w, mask);
			}
			again = true;
		}
	}
}

static void tx_settle(struct xworld *w, uint8_t item)
{
	if (item & SKIPF) {
		for (unsigned g = 0; g < XN; g++)
			if (item >> g & 1u)
				tr_stream_tx_settled(&w->tx, seq_of(g));
	} else {
		tr_stream_tx_settled(&w->tx, seq_of(item));
	}
}

static void xend(const struct xworld *w)
{
	xs.ends++;
	assert_int_equal(w->sent, xc->n);
	for (unsigned g = 0; g < xc->n; g++)
		if (w->handed[g] + w->skipped[g] != 1)
			fail_msg("message %u: handed over %u, skipped %u", g, w->handed[g],
				 w->skipped[g]);
	assert_int_equal(tr_stream_tx_unsettled(&w->tx), 0);
	assert_int_equal(tr_stream_rx_next(&w->rx), seq_of(xc->n));
	assert_int_equal(w->rx.parked, 0);
}

static void explore(const struct xworld *w);

static bool try_move(const struct xworld *w, int move, int p)
{
	struct xworld n = *w;
	struct xplane *pl = &n.pl[p];
	uint32_t s, out[XN];
	unsigned k;

	switch (move) {
	case 0: /* send */
		if (n.sent == xc->n || !pl->live || !tr_stream_tx_can_assign(&n.tx) ||
		    (xc->home && p != 0 && n.pl[0].live))
			return false;
		assert_int_equal(tr_stream_tx_assign(&n.tx, &s), 0);
		assert_int_equal(s, seq_of(n.sent));
		qput(pl, n.sent++);
		break;
	case 1: /* post */
		if (!pl->live || !pl->nq || pl->nf == XQ ||
		    (!(pl->q[0] & SKIPF) && !tr_stream_tx_may_post(&n.tx, seq_of(pl->q[0]))))
			return false;
		pl->f[pl->nf++] = pl->q[0];
		memmove(pl->q, pl->q + 1, --pl->nq);
		break;
	case 2: /* arrive */
		if (!pl->live || pl->na == pl->nf)
			return false;
		pl->r[pl->nr++] = pl->f[pl->na++];
		break;
	case 3: /* the peer handles the oldest arrival (a broken plane's too) */
		if (!pl->nr)
			return false;
		rx_take(&n, pl->r[0]);
		memmove(pl->r, pl->r + 1, --pl->nr);
		break;
	case 4: /* ack: in order, once arrived, handled or not */
		if (!pl->live || !pl->na)
			return false;
		tx_settle(&n, pl->f[0]);
		memmove(pl->f, pl->f + 1, --pl->nf);
		pl->na--;
		break;
	case 5: { /* break */
		uint8_t back[2 * XQ];
		unsigned nback = 0;

		if (!pl->live || n.breaks == xc->breaks)
			return false;
		n.breaks++;
		pl->live = 0;
		/* What arrived stays in the peer's CQ (r); the rest of what was
		 * posted may still be on the wire. */
		for (k = pl->na; k < pl->nf; k++)
			pl->g[pl->ng++] = pl->f[k];
		/* Flushed (everything not acked), then the queue: given back in
		 * order of number, as lane.c sorts them where they go. */
		for (k = 0; k < pl->nf; k++)
			back[nback++] = pl->f[k];
		for (k = 0; k < pl->nq; k++)
			back[nback++] = pl->q[k];
		pl->nf = pl->na = pl->nq = 0;
		for (k = 0; k < nback; k++)
			give_back(&n, p, back[k]);
		break;
	}
	case 6: /* a ghost arrives at the peer's old end */
		if (pl->live || !pl->ng)
			return false;
		rx_take(&n, pl->g[0]);
		memmove(pl->g, pl->g + 1, --pl->ng);
		xs.ghosts_late++;
		break;
	case 7: /* mend: the peer's old end is gone (ghosts dropped); its CQ stays */
		if (pl->live)
			return false;
		pl->ng = 0;
		memset(pl->g, 0, sizeof(pl->g));
		pl->live = 1;
		break;
	case 8: { /* tell */
		uint8_t mask = 0;

		if (!pl->live || !tr_stream_tx_tellable(&n.tx) || pl->nq == XQ)
			return false;
		k = tr_stream_tx_skips(&n.tx, out, XN);
		assert_true(k > 0);
		while (k--)
			mask |= (uint8_t)(1u << g_of(out[k]));
		qput(pl, SKIPF | mask);
		break;
	}
	default:
		return false;
	}
	explore(&n);
	return true;
}

/* The key: the world's bytes (it is memset before use, so padding is 0),
 * less the engines' counters, which change no future. */
static void explore(const struct xworld *w)
{
	struct xworld key = *w;
	bool moved = false;

	assert_true(w->rx.parked <= 4 * XQ);
	key.tx.skipped = 0;
	key.rx.delivered = key.rx.skipped = key.rx.duplicates = 0;
	if (memo_get(&xmemo, (const uint8_t *)&key))
		return;
	assert_int_equal(memo_put(&xmemo, (const uint8_t *)&key, 0), 0);
	xs.states++;
	for (int move = 0; move <= 8; move++)
		for (int p = 0; p < XP; p++)
			moved |= try_move(w, move, p);
	if (!moved)
		xend(w);
}

static void run(const struct xcfg *c)
{
	struct xworld w;

	memset(&w, 0, sizeof(w));
	xc = c;
	xs = (struct xstats){ 0 };
	tr_stream_tx_init(&w.tx, c->first, c->window);
	tr_stream_rx_init(&w.rx, c->first, c->window);
	for (int p = 0; p < XP; p++)
		w.pl[p].live = 1;
	assert_int_equal(memo_init(&xmemo, sizeof(w), 1u << 16), 0);
	explore(&w);
	memo_free(&xmemo);
	printf("stream: %u messages, window %u, %u breaks, first %u: %llu states, %llu ends, "
	       "%llu lost, %llu parked, %llu late arrivals\n",
	       c->n, c->window, c->breaks, c->first, (unsigned long long)xs.states,
	       (unsigned long long)xs.ends, (unsigned long long)xs.lost,
	       (unsigned long long)xs.parks, (unsigned long long)xs.ghosts_late);
	assert_true(xs.ends > 0);
}

static void test_exhaustive_window_1(void **state)
{
	static const struct xcfg c = { .n = 3, .window = 1, .breaks = 2, .first = 0xfffffffeu };

	(void)state;
	run(&c);
	assert_true(xs.lost > 0);
}

static void test_exhaustive_window_2(void **state)
{
	static const struct xcfg c = { .n = 4, .window = 2, .breaks = 1, .first = 7, .home = 1 };

	(void)state;
	run(&c);
	assert_true(xs.parks > 0 && xs.ghosts_late > 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_tx_window_and_bound),
		cmocka_unit_test(test_tx_lost_and_skips),
		cmocka_unit_test(test_rx),
		cmocka_unit_test(test_exhaustive_window_1),
		cmocka_unit_test(test_exhaustive_window_2),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
