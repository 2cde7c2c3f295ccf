/* Unit tests for buffer-status flow control (lib/proto/fc.[ch]), following
 * the list of behaviours in docs/spec/buffer-status-flow-control.md. */
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

#include "proto/fc.h"

#define S1 TR_FC_STATE_I
#define S2 TR_FC_STATE_II
#define S3 TR_FC_STATE_III

static const unsigned need_def[TR_FC_NPRIO] = { 1, 2, 3 };

static uint64_t mask_of(unsigned nslots)
{
	return nslots >= 64 ? UINT64_MAX : (1ull << nslots) - 1;
}

static unsigned ctz(uint64_t x)
{
	return (unsigned)__builtin_ctzll(x);
}

static unsigned popc(uint64_t x)
{
	return (unsigned)__builtin_popcountll(x);
}

/* The sender's state of one slot, and the slots in a state, as fc.h
 * defines them by the registers. */
static enum tr_fc_state tx_state(const struct tr_fc_tx *tx, unsigned slot)
{
	uint64_t bit = 1ull << slot;

	if (tx->rcfr & bit)
		return S3;
	return tx->sanrr & bit ? S2 : S1;
}

static uint64_t tx_slots(const struct tr_fc_tx *tx, enum tr_fc_state state)
{
	switch (state) {
	case S1: return ~tx->bbr & tx->mask;
	case S2: return tx->sanrr & ~tx->rcfr;
	default: return tx->rcfr;
	}
}

static unsigned tx_free(const struct tr_fc_tx *tx)
{
	return popc(tx_slots(tx, S1));
}

static const char *state_str(unsigned state)
{
	static const char *const names[TR_FC_NSTATES] = { "I", "II", "III" };

	return state < TR_FC_NSTATES ? names[state] : "?";
}

static const char *bsm_action_str(unsigned action)
{
	static const char *const names[TR_FC_BSM_NACTIONS] = { "none", "wait_room", "busy",
								"linger", "send" };

	return action < TR_FC_BSM_NACTIONS ? names[action] : "?";
}

/* Urgent (fc.h): a due BSM that may go as the second one in flight.  An
 * urgent BSM is always due (a resync, or a slot drained since the last
 * BSM), so the decision with one in flight says exactly this. */
static bool bsm_urgent(const struct tr_fc_rx *rx, const unsigned need[TR_FC_NPRIO])
{
	const struct tr_fc_bsm_in one_in_flight = { .inflight = 1, .room = true };

	return tr_fc_rx_bsm_decide(rx, need, &one_in_flight) == TR_FC_BSM_SEND;
}

static void check_tx(const struct tr_fc_tx *tx, uint64_t rcfr, uint64_t sanrr, uint64_t bbr,
		     const char *step)
{
	if (tx->rcfr != rcfr || tx->sanrr != sanrr || tx->bbr != bbr)
		fail_msg("%s: sender RCFR %#llx SANRR %#llx BBR %#llx, want %#llx %#llx %#llx",
			 step, (unsigned long long)tx->rcfr, (unsigned long long)tx->sanrr,
			 (unsigned long long)tx->bbr, (unsigned long long)rcfr,
			 (unsigned long long)sanrr, (unsigned long long)bbr);
}

static void check_rx(const struct tr_fc_rx *rx, uint64_t cfr, uint64_t nmtsr, const char *step)
{
	if (rx->cfr != cfr || rx->nmtsr != nmtsr)
		fail_msg("%s: receiver CFR %#llx NMTSR %#llx, want %#llx %#llx", step,
			 (unsigned long long)rx->cfr, (unsigned long long)rx->nmtsr,
			 (unsigned long long)cfr, (unsigned long long)nmtsr);
}

/* The register invariants that hold after every operation. */
static void check_tx_sane(const struct tr_fc_tx *tx)
{
	assert_true((tx->sanrr & tx->rcfr) == 0);
	assert_true(tx->bbr == (tx->sanrr | tx->rcfr));
	assert_true(((tx->sanrr | tx->rcfr | tx->flag) & ~tx->mask) == 0);
	assert_true((tx->flag & ~tx_slots(tx, S2)) == 0);
}

/* A sender with the slots of ii in state II, those of iii in state III and
 * every other slot in state I, reached through the API only. */
static void tx_with(struct tr_fc_tx *tx, unsigned nslots, const unsigned *need, uint64_t ii,
		    uint64_t iii)
{
	assert_int_equal(tr_fc_tx_init(tx, nslots, need), 0);
	assert_int_equal(tr_fc_tx_bsm2(tx, 0, 0), 0);
	for (uint64_t m = ii | iii; m; m &= m - 1)
		assert_int_equal(tr_fc_tx_sent(tx, ctz(m)), 0);
	assert_int_equal(tr_fc_tx_bsm2(tx, iii, iii), 0);
	assert_true(tx_slots(tx, S2) == ii);
	assert_true(tx_slots(tx, S3) == iii);
	assert_true(tx_slots(tx, S1) == (mask_of(nslots) & ~(ii | iii)));
	check_tx_sane(tx);
}

/* ---- names, validation ------------------------------------------------- */

static void test_init_validation(void **state)
{
	static const struct {
		unsigned nslots, need[3];
		int rc;
	} cases[] = {
		{ 6, { 1, 2, 3 }, 0 },
		{ 1, { 1, 1, 1 }, 0 },
		{ 64, { 1, 32, 64 }, 0 },
		{ 3, { 3, 3, 3 }, 0 },
		{ 0, { 1, 1, 1 }, -EINVAL },  /* no slot */
		{ 65, { 1, 2, 3 }, -EINVAL }, /* too many */
		{ 6, { 0, 2, 3 }, -EINVAL },  /* need 0 */
		{ 6, { 1, 2, 7 }, -EINVAL },  /* more than there are */
		{ 2, { 1, 2, 3 }, -EINVAL },
		{ 6, { 2, 1, 3 }, -EINVAL }, /* decreasing */
		{ 6, { 1, 3, 2 }, -EINVAL },
		{ 6, { 3, 3, 0 }, -EINVAL },
	};
	struct tr_fc_tx tx, before;
	struct tr_fc_rx rx, rbefore;

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		memset(&tx, 0xa5, sizeof(tx));
		before = tx;
		if (tr_fc_tx_init(&tx, cases[i].nslots, cases[i].need) != cases[i].rc)
			fail_msg("case %zu: nslots %u need %u %u %u", i, cases[i].nslots,
				 cases[i].need[0], cases[i].need[1], cases[i].need[2]);
		if (cases[i].rc) { /* outputs only on success */
			assert_memory_equal(&tx, &before, sizeof(tx));
			continue;
		}
		assert_int_equal(tx.nslots, cases[i].nslots);
		assert_memory_equal(tx.need, cases[i].need, sizeof(tx.need));
		assert_true(tx.mask == mask_of(cases[i].nslots));
	}

	/* NULL: the defaults 1, 2, 3, clamped to the number of slots. */
	assert_int_equal(tr_fc_tx_init(&tx, 6, NULL), 0);
	assert_memory_equal(tx.need, need_def, sizeof(tx.need));
	assert_int_equal(tr_fc_tx_init(&tx, 2, NULL), 0);
	assert_int_equal(tx.need[0], 1);
	assert_int_equal(tx.need[1], 2);
	assert_int_equal(tx.need[2], 2);
	assert_int_equal(tr_fc_tx_init(&tx, 1, NULL), 0);
	assert_int_equal(tx.need[0] + tx.need[1] + tx.need[2], 3);
	assert_int_equal(tr_fc_tx_init(&tx, 0, NULL), -EINVAL);
	assert_int_equal(tr_fc_tx_init(&tx, 65, NULL), -EINVAL);

	memset(&rx, 0x5a, sizeof(rx));
	rbefore = rx;
	assert_int_equal(tr_fc_rx_init(&rx, 0), -EINVAL);
	assert_int_equal(tr_fc_rx_init(&rx, 65), -EINVAL);
	assert_memory_equal(&rx, &rbefore, sizeof(rx));
	assert_int_equal(tr_fc_rx_init(&rx, 64), 0);
	check_rx(&rx, 0, 0, "init");
	assert_true(rx.mask == UINT64_MAX);
	assert_int_equal(popc(~rx.cfr & rx.mask), 64);
}

/* ---- behaviour 1: nothing is sent before the first BSM ------------------ */

static void expect_blocked(const struct tr_fc_tx *tx)
{
	struct tr_fc_tx copy = *tx;

	assert_int_equal(tx_free(tx), 0);
	for (unsigned p = 0; p < TR_FC_NPRIO; p++)
		assert_int_equal(tr_fc_tx_pick(tx, p), -EAGAIN);
	for (unsigned b = 0; b < tx->nslots; b++) {
		assert_int_equal(tx_state(tx, b), S3);
		assert_int_equal(tr_fc_tx_sent(&copy, b), -EBUSY);
	}
	assert_memory_equal(&copy, tx, sizeof(copy));
}

static void test_nothing_before_first_bsm(void **state)
{
	static const unsigned sizes[] = { 1, 3, 6, 63, 64 };

	(void)state;
	for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		unsigned k = sizes[i];
		uint64_t m = mask_of(k), n, c;
		struct tr_fc_tx tx;
		struct tr_fc_rx rx;

		assert_int_equal(tr_fc_tx_init(&tx, k, NULL), 0);
		assert_int_equal(tr_fc_rx_init(&rx, k), 0);
		check_tx(&tx, m, 0, m, "init");
		assert_true(tx_slots(&tx, S3) == m);
		expect_blocked(&tx);
		/* Time alone frees nothing: state III never times out. */
		for (int t = 0; t < 5; t++)
			assert_int_equal(tr_fc_tx_tick(&tx, false), 0);
		expect_blocked(&tx);
		assert_true(tx.errors == 0);

		/* The receiver owes a first BSM at once; it says "all empty". */
		assert_true(tr_fc_rx_bsm_due(&rx));
		assert_true(bsm_urgent(&rx, NULL));
		tr_fc_rx_bsm(&rx, &n, &c);
		assert_true(n == 0 && c == 0);
		assert_false(tr_fc_rx_bsm_due(&rx));
		assert_int_equal(tr_fc_tx_bsm2(&tx, n, c), 0);
		assert_int_equal(tx_free(&tx), k);
		assert_int_equal(tr_fc_tx_pick(&tx, TR_FC_HIGH), 0);

		/* Into a mixed state with a timeout counted, then a reconnect:
		 * the lane sets its sender up again. */
		assert_int_equal(tr_fc_tx_sent(&tx, 0), 0);
		assert_int_equal(tr_fc_tx_tick(&tx, false), 0);
		assert_int_equal(tr_fc_tx_tick(&tx, false), 1);
		assert_int_equal(tr_fc_tx_sent(&tx, 0), 0);
		assert_int_equal(tr_fc_tx_tick(&tx, false), 0); /* slot 0 flagged */
		if (k > 2) {
			assert_int_equal(tr_fc_tx_sent(&tx, 1), 0);
			assert_int_equal(tr_fc_tx_bsm2(&tx, 2, 2), 0); /* slot 1: III */
		}
		assert_true(tr_fc_tx_errors(&tx) == 1);
		assert_int_equal(tr_fc_tx_init(&tx, k, NULL), 0);
		check_tx(&tx, m, 0, m, "reconnect");
		assert_true(tx.flag == 0 && tx.overdue == 0);
		expect_blocked(&tx);
		for (int t = 0; t < 3; t++)
			assert_int_equal(tr_fc_tx_tick(&tx, false), 0);
		expect_blocked(&tx);
		assert_int_equal(tr_fc_tx_bsm2(&tx, 0, 0), 0);
		assert_int_equal(tx_free(&tx), k);
	}
}

/* ---- behaviour 9: the transition tables ------------------------------- */

enum ev { EV_B00, EV_B01, EV_B10, EV_B11, EV_SEND, EV_TIMEOUT };

static const struct row {
	enum ev ev;
	const char *name;
	enum tr_fc_state next[TR_FC_NSTATES]; /* from I, II, III */
	int rc[TR_FC_NSTATES];
} table[] = {
	/* Two-field BSM (N, C).  (0,1) breaks "C within N": refused whole. */
	{ EV_B00, "(0,0)", { S1, S2, S1 }, { 0, 0, 0 } },
	{ EV_B01, "(0,1)", { S1, S2, S3 }, { -EPROTO, -EPROTO, -EPROTO } },
	{ EV_B10, "(1,0)", { S1, S1, S1 }, { 0, 0, 0 } },
	{ EV_B11, "(1,1)", { S3, S3, S3 }, { 0, 0, 0 } },
	/* Sending needs a free slot; the timer frees state II only. */
	{ EV_SEND, "send", { S2, S2, S3 }, { 0, -EBUSY, -EBUSY } },
	{ EV_TIMEOUT, "timeout", { S1, S1, S3 }, { 0, 0, 0 } },
};

/* Applies ev to every slot of tx at once (send: slot by slot); returns the
 * return code seen for a slot in state from_state (BSMs: the one code). */
static void apply_event(struct tr_fc_tx *tx, enum ev ev, int rc_want[TR_FC_NSTATES])
{
	uint64_t all = tx->mask;
	enum tr_fc_state before[64];

	for (unsigned b = 0; b < tx->nslots; b++)
		before[b] = tx_state(tx, b);
	switch (ev) {
	case EV_B00: assert_int_equal(tr_fc_tx_bsm2(tx, 0, 0), rc_want[0]); break;
	case EV_B01: assert_int_equal(tr_fc_tx_bsm2(tx, 0, all), rc_want[0]); break;
	case EV_B10: assert_int_equal(tr_fc_tx_bsm2(tx, all, 0), rc_want[0]); break;
	case EV_B11: assert_int_equal(tr_fc_tx_bsm2(tx, all, all), rc_want[0]); break;
	case EV_SEND:
		for (unsigned b = 0; b < tx->nslots; b++)
			assert_int_equal(tr_fc_tx_sent(tx, b), rc_want[before[b]]);
		break;
	case EV_TIMEOUT: {
		unsigned nii = popc(tx_slots(tx, S2));
		uint64_t errors = tx->errors;

		assert_int_equal(tr_fc_tx_tick(tx, false), 0); /* flags */
		assert_int_equal(tr_fc_tx_tick(tx, false), nii);
		assert_true(tx->errors == errors + nii);
		break;
	}
	}
}

static void run_table(unsigned nslots)
{
	for (size_t r = 0; r < sizeof(table) / sizeof(table[0]); r++) {
		const struct row *row = &table[r];
		struct tr_fc_tx tx;
		uint64_t ii = 0, iii = 0;
		int rc[TR_FC_NSTATES];

		/* Slot b starts in state b % 3. */
		for (unsigned b = 0; b < nslots; b++) {
			if (b % 3 == S2)
				ii |= 1ull << b;
			if (b % 3 == S3)
				iii |= 1ull << b;
		}
		tx_with(&tx, nslots, NULL, ii, iii);
		memcpy(rc, row->rc, sizeof(rc));
		apply_event(&tx, row->ev, rc);
		check_tx_sane(&tx);
		for (unsigned b = 0; b < nslots; b++) {
			enum tr_fc_state from = (enum tr_fc_state)(b % 3);
			enum tr_fc_state got = tx_state(&tx, b);

			if (got != row->next[from])
				fail_msg("%u slots, slot %u: %s + %s -> %s, want %s", nslots, b,
					 state_str(from), row->name, state_str(got),
					 state_str(row->next[from]));
		}
		assert_true(tx.bad_bsms == (row->ev == EV_B01));
	}
}

static void test_transition_tables(void **state)
{
	(void)state;
	run_table(3);
	run_table(64);
	run_table(62);
}

/* One BSM carrying a different bit pair for every slot: 3 states x the
 * valid pairs, all judged at once. */
static void test_transition_mixed_bsm(void **state)
{
	static const struct {
		enum ev ev;
		unsigned n, c;
	} two[] = { { EV_B00, 0, 0 }, { EV_B10, 1, 0 }, { EV_B11, 1, 1 } };
	struct tr_fc_tx tx, before;
	uint64_t ii = 0, iii = 0, n = 0, c = 0;

	(void)state;
	/* Two-field: slot 3 * s + j is in state s and gets pair two[j]. */
	for (unsigned s = 0; s < 3; s++)
		for (unsigned j = 0; j < 3; j++) {
			unsigned b = 3 * s + j;

			ii |= (uint64_t)(s == S2) << b;
			iii |= (uint64_t)(s == S3) << b;
			n |= (uint64_t)two[j].n << b;
			c |= (uint64_t)two[j].c << b;
		}
	tx_with(&tx, 9, NULL, ii, iii);
	assert_int_equal(tr_fc_tx_bsm2(&tx, n, c), 0);
	for (unsigned b = 0; b < 9; b++)
		assert_int_equal(tx_state(&tx, b), table[two[b % 3].ev].next[b / 3]);

	/* A single (0,1) pair refuses the whole BSM: nothing changes. */
	tx_with(&tx, 9, NULL, ii, iii);
	before = tx;
	assert_int_equal(tr_fc_tx_bsm2(&tx, n & ~(1ull << 8), c), -EPROTO);
	before.bad_bsms++;
	assert_memory_equal(&tx, &before, sizeof(tx));
}

/* ---- behaviour 7: the patent's Fig. 9, steps (a) to (g) ---------------- */

/* One port of six buffers, as in the patent's embodiment.  The example uses
 * "the first buffer, or the buffer of tag 001": the first bit, slot 0 for
 * us, which is what tr_fc_tx_pick() chooses; it is also run on slot 1 in
 * case tag 001 is read as an index.  The other slots stay empty. */
static void fig9(unsigned slot)
{
	struct tr_fc_tx tx;
	struct tr_fc_rx rx;
	uint64_t n, c, b = 1ull << slot;

	assert_int_equal(tr_fc_tx_init(&tx, 6, NULL), 0);
	assert_int_equal(tr_fc_rx_init(&rx, 6), 0);

	/* (a) Initialised: RCFR and BBR all ones, every other register zero. */
	check_tx(&tx, 0x3f, 0, 0x3f, "(a)");
	check_rx(&rx, 0, 0, "(a)");

	/* The first BSM is (0,0). */
	tr_fc_rx_bsm(&rx, &n, &c);
	assert_true(n == 0 && c == 0);
	assert_int_equal(tr_fc_tx_bsm2(&tx, n, c), 0);

	/* (b) State III -> I: every register zero. */
	check_tx(&tx, 0, 0, 0, "(b)");
	check_rx(&rx, 0, 0, "(b)");
	assert_int_equal(tx_state(&tx, slot), S1);

	/* (c) A frame is sent to the buffer: SANRR and BBR set. */
	if (slot == 0)
		assert_int_equal(tr_fc_tx_pick(&tx, TR_FC_HIGH), 0);
	assert_int_equal(tr_fc_tx_sent(&tx, slot), 0);
	check_tx(&tx, 0, b, b, "(c)");
	check_rx(&rx, 0, 0, "(c)");
	assert_int_equal(tx_state(&tx, slot), S2);

	/* (d) It arrives: NMTSR and CFR set; the sender has heard nothing. */
	assert_int_equal(tr_fc_rx_arrive(&rx, slot), 0);
	check_tx(&tx, 0, b, b, "(d)");
	check_rx(&rx, b, b, "(d)");

	/* (e) It is forwarded before the second BSM: CFR cleared, NMTSR kept. */
	assert_int_equal(tr_fc_rx_drain(&rx, slot), 0);
	check_tx(&tx, 0, b, b, "(e)");
	check_rx(&rx, 0, b, "(e)");

	/* The second BSM is (1,0); then NMTSR := CFR = 0. */
	tr_fc_rx_bsm(&rx, &n, &c);
	assert_true(n == b && c == 0);
	check_rx(&rx, 0, 0, "second BSM");

	/* (g) II -> I: every register zero.  (Step (f), II -> III, is the
	 * one-field form's, which triad does not send.) */
	assert_int_equal(tr_fc_tx_bsm2(&tx, n, c), 0);
	check_tx(&tx, 0, 0, 0, "(g)");
	check_rx(&rx, 0, 0, "(g)");
	assert_int_equal(tx_free(&tx), 6);
	assert_true(tx.errors == 0 && rx.overruns == 0);
}

static void test_fig9_two_field(void **state)
{
	(void)state;
	fig9(0);
	fig9(1);
}

/* ---- behaviour 3: N[b] = 0 never clears SANRR[b] ---------------------- */

static uint64_t rng_state;

static uint64_t rnd(void)
{
	uint64_t z = (rng_state += 0x9e3779b97f4a7c15ull);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

static bool chance(unsigned permille)
{
	return rnd() % 1000 < permille;
}

/* Random bitmap with each bit set with probability about 1/2^k. */
static uint64_t sparse(unsigned k)
{
	uint64_t x = UINT64_MAX;

	while (k--)
		x &= rnd();
	return x;
}

static void test_stale_empty_never_frees(void **state)
{
	struct tr_fc_tx tx;
	struct tr_fc_rx rx;
	uint64_t n, c;

	(void)state;
	/* The classic race: the receiver reports slot 0 empty, the sender sends
	 * into it before that report arrives; the stale "empty" must not free it. */
	assert_int_equal(tr_fc_tx_init(&tx, 4, NULL), 0);
	assert_int_equal(tr_fc_rx_init(&rx, 4), 0);
	tr_fc_rx_bsm(&rx, &n, &c);
	assert_int_equal(tr_fc_tx_bsm2(&tx, n, c), 0);
	tr_fc_rx_bsm(&rx, &n, &c); /* (0,0), still on its way */
	assert_int_equal(tr_fc_tx_sent(&tx, 0), 0);
	assert_int_equal(tr_fc_tx_bsm2(&tx, n, c), 0);
	assert_int_equal(tx_state(&tx, 0), S2);
	assert_int_not_equal(tr_fc_tx_pick(&tx, TR_FC_HIGH), 0);

	/* Random walk over reachable states. */
	rng_state = 3;
	assert_int_equal(tr_fc_tx_init(&tx, 64, NULL), 0);
	for (int i = 0; i < 200000; i++) {
		uint64_t before = tx.sanrr, flags = tx.flag, ii = tx_slots(&tx, S2);
		int slot;

		switch (rnd() % 4) {
		case 0:
		case 1:
			n = sparse((unsigned)(rnd() % 4));
			c = n & rnd();
			assert_int_equal(tr_fc_tx_bsm2(&tx, n, c), 0);
			/* SANRR loses exactly the bits of N; RCFR follows C. */
			assert_true(tx.sanrr == (before & ~n));
			assert_true((before & ~n & ~tx.sanrr) == 0);
			assert_true(tx.rcfr == c);
			/* Flags survive exactly where the slot stayed in state II. */
			assert_true(tx.flag == (flags & ii & tx_slots(&tx, S2)));
			break;
		case 2:
			slot = tr_fc_tx_pick(&tx, (unsigned)(rnd() % 3));
			if (slot >= 0)
				assert_int_equal(tr_fc_tx_sent(&tx, (unsigned)slot), 0);
			break;
		default:
			if (chance(100))
				tr_fc_tx_tick(&tx, false);
			break;
		}
		check_tx_sane(&tx);
	}
}

/* ---- behaviours 4 and 5: the receiver's reports ----------------------- */

static void test_rx_reports(void **state)
{
	struct tr_fc_rx rx, before;
	uint64_t n, c;

	(void)state;
	/* An arrival drained before the next BSM is still reported: (1,0). */
	assert_int_equal(tr_fc_rx_init(&rx, 8), 0);
	tr_fc_rx_bsm(&rx, &n, &c);
	assert_int_equal(tr_fc_rx_arrive(&rx, 5), 0);
	assert_int_equal(tr_fc_rx_drain(&rx, 5), 0);
	tr_fc_rx_bsm(&rx, &n, &c);
	assert_true(n == 1u << 5 && c == 0);
	tr_fc_rx_bsm(&rx, &n, &c);
	assert_true(n == 0 && c == 0);
	/* A slot that stays full is reported with N = 1 in every BSM. */
	assert_int_equal(tr_fc_rx_arrive(&rx, 2), 0);
	for (int i = 0; i < 3; i++) {
		tr_fc_rx_bsm(&rx, &n, &c);
		assert_true(n == 4 && c == 4);
	}
	assert_int_equal(tr_fc_rx_drain(&rx, 2), 0);
	tr_fc_rx_bsm(&rx, &n, &c);
	assert_true(n == 4 && c == 0); /* the last report of that message */
	tr_fc_rx_bsm(&rx, &n, &c);
	assert_true(n == 0 && c == 0);

	/* Misuse. */
	assert_int_equal(tr_fc_rx_arrive(&rx, 8), -EINVAL);
	assert_int_equal(tr_fc_rx_drain(&rx, 8), -EINVAL);
	assert_int_equal(tr_fc_rx_drain(&rx, 3), -EINVAL); /* empty */
	assert_int_equal(tr_fc_rx_arrive(&rx, 3), 0);
	before = rx;
	assert_int_equal(tr_fc_rx_arrive(&rx, 3), -EBUSY); /* into a full slot */
	assert_true(tr_fc_rx_overruns(&rx) == 1);
	before.overruns = 1;
	assert_memory_equal(&rx, &before, sizeof(rx));

	/* Random: every arrival reported by N = 1 in the first BSM after it,
	 * C always within N, N = (arrivals since) | (full at the last BSM). */
	rng_state = 4;
	for (unsigned k = 1; k <= 64; k += 21) {
		uint64_t arrived = 0, full_then = 0, m = mask_of(k);

		assert_int_equal(tr_fc_rx_init(&rx, k), 0);
		for (int i = 0; i < 60000; i++) {
			unsigned b = (unsigned)(rnd() % k);

			switch (rnd() % 3) {
			case 0:
				if (rx.cfr >> b & 1)
					break;
				assert_int_equal(tr_fc_rx_arrive(&rx, b), 0);
				arrived |= 1ull << b;
				break;
			case 1: {
				int want = rx.cfr >> b & 1 ? 0 : -EINVAL;

				assert_int_equal(tr_fc_rx_drain(&rx, b), want);
				break;
			}
			default: {
				uint64_t cfr = rx.cfr;

				tr_fc_rx_bsm(&rx, &n, &c);
				assert_true((arrived & ~n) == 0);
				assert_true((c & ~n) == 0);
				assert_true(n == (arrived | full_then));
				assert_true(c == cfr);
				assert_true(rx.nmtsr == rx.cfr);
				assert_true(((n | c) & ~m) == 0);
				arrived = 0;
				full_then = c;
				break;
			}
			}
			assert_true((rx.cfr & ~rx.nmtsr) == 0);
		}
		assert_true(rx.overruns == 0);
	}
}

/* ---- the receiver's sending policy ------------------------------------ */

static void test_rx_policy(void **state)
{
	static const unsigned need_wide[TR_FC_NPRIO] = { 1, 3, 4 };
	struct tr_fc_rx rx;
	uint64_t n, c;

	(void)state;
	assert_int_equal(tr_fc_rx_init(&rx, 4), 0);
	assert_true(tr_fc_rx_bsm_due(&rx) && bsm_urgent(&rx, NULL));
	tr_fc_rx_bsm(&rx, &n, &c);
	assert_false(tr_fc_rx_bsm_due(&rx));
	assert_false(bsm_urgent(&rx, NULL));

	/* Arrivals: due, never urgent (they only take slots). */
	assert_int_equal(tr_fc_rx_arrive(&rx, 0), 0);
	assert_int_equal(tr_fc_rx_arrive(&rx, 1), 0);
	assert_true(tr_fc_rx_bsm_due(&rx));
	assert_false(bsm_urgent(&rx, NULL));
	tr_fc_rx_bsm(&rx, &n, &c); /* (0b11, 0b11): the sender sees 2 free */
	assert_false(tr_fc_rx_bsm_due(&rx));

	/* The sender sends to slot 2, it arrives and drains again.  The receiver
	 * has 2 free slots, as at the last BSM, but the sender sees only 1 (slot
	 * 2 busy until the next BSM): the BSM that frees it lifts the sender
	 * over the medium threshold, so it is urgent. */
	assert_int_equal(tr_fc_rx_arrive(&rx, 2), 0);
	assert_false(bsm_urgent(&rx, NULL)); /* seen 1, next 1 */
	assert_int_equal(tr_fc_rx_drain(&rx, 2), 0);
	assert_true(tr_fc_rx_bsm_due(&rx));
	assert_true(bsm_urgent(&rx, NULL)); /* seen 1 < 2 <= next 2 */
	assert_false(bsm_urgent(&rx, need_wide)); /* 1 < 3 but 3 > 2 */
	tr_fc_rx_bsm(&rx, &n, &c);
	assert_true(n == 7 && c == 3);
	assert_false(tr_fc_rx_bsm_due(&rx) || bsm_urgent(&rx, NULL));

	/* A drain from 2 to 3 free slots crosses low (3); from 3 to 4 nothing. */
	assert_int_equal(tr_fc_rx_drain(&rx, 0), 0);
	assert_true(bsm_urgent(&rx, NULL));
	assert_true(bsm_urgent(&rx, need_wide));
	tr_fc_rx_bsm(&rx, &n, &c);
	assert_int_equal(tr_fc_rx_drain(&rx, 1), 0);
	assert_true(tr_fc_rx_bsm_due(&rx));
	assert_false(bsm_urgent(&rx, NULL));
	assert_true(bsm_urgent(&rx, need_wide)); /* 3 < 4 <= 4 */
	tr_fc_rx_bsm(&rx, &n, &c);

	/* A reconnect sets the receiver up again: a BSM is due and urgent. */
	assert_int_equal(tr_fc_rx_init(&rx, 4), 0);
	assert_true(tr_fc_rx_bsm_due(&rx) && bsm_urgent(&rx, NULL));
	tr_fc_rx_bsm(&rx, &n, &c);
	assert_false(tr_fc_rx_bsm_due(&rx) || bsm_urgent(&rx, NULL));
}

/* ---- behaviour 6: priorities ------------------------------------------ */

static void expect_picks(const struct tr_fc_tx *tx, int high, int medium, int low)
{
	assert_int_equal(tr_fc_tx_pick(tx, TR_FC_HIGH), high);
	assert_int_equal(tr_fc_tx_pick(tx, TR_FC_MEDIUM), medium);
	assert_int_equal(tr_fc_tx_pick(tx, TR_FC_LOW), low);
}

static void deliver_bsm(struct tr_fc_rx *rx, struct tr_fc_tx *tx)
{
	uint64_t n, c;

	tr_fc_rx_bsm(rx, &n, &c);
	assert_int_equal(tr_fc_tx_bsm2(tx, n, c), 0);
}

static void test_priorities(void **state)
{
	static const unsigned need_246[TR_FC_NPRIO] = { 2, 4, 6 };
	const int A = -EAGAIN;
	struct tr_fc_tx tx;
	struct tr_fc_rx rx;

	(void)state;
	assert_int_equal(tr_fc_tx_init(&tx, 6, need_def), 0);
	assert_int_equal(tr_fc_rx_init(&rx, 6), 0);
	deliver_bsm(&rx, &tx);
	assert_int_equal(tr_fc_tx_pick(&tx, TR_FC_NPRIO), -EINVAL);

	/* Fill: low needs 3 free, medium 2, high 1; always the lowest slot. */
	for (int b = 0; b < 4; b++) {
		expect_picks(&tx, b, b, b);
		assert_int_equal(tr_fc_tx_sent(&tx, (unsigned)b), 0);
	}
	assert_int_equal(tx_free(&tx), 2);
	expect_picks(&tx, 4, 4, A);
	assert_int_equal(tr_fc_tx_sent(&tx, 4), 0);
	expect_picks(&tx, 5, A, A);
	assert_int_equal(tr_fc_tx_sent(&tx, 5), 0);
	expect_picks(&tx, A, A, A);

	/* All six arrive and stay: (1,1) everywhere, state III, still blocked. */
	for (unsigned b = 0; b < 6; b++)
		assert_int_equal(tr_fc_rx_arrive(&rx, b), 0);
	deliver_bsm(&rx, &tx);
	assert_true(tx_slots(&tx, S3) == 0x3f);
	expect_picks(&tx, A, A, A);

	/* The blocked messages go as slots free; each drain that lifts the
	 * sender over a threshold makes the BSM urgent. */
	assert_int_equal(tr_fc_rx_drain(&rx, 2), 0);
	assert_true(bsm_urgent(&rx, tx.need));
	deliver_bsm(&rx, &tx);
	expect_picks(&tx, 2, A, A);
	assert_int_equal(tr_fc_rx_drain(&rx, 4), 0);
	assert_true(bsm_urgent(&rx, tx.need));
	deliver_bsm(&rx, &tx);
	expect_picks(&tx, 2, 2, A);
	assert_int_equal(tr_fc_rx_drain(&rx, 0), 0);
	assert_true(bsm_urgent(&rx, tx.need));
	deliver_bsm(&rx, &tx);
	expect_picks(&tx, 0, 0, 0); /* slots 0, 2, 4 free: the lowest */
	assert_int_equal(tr_fc_tx_sent(&tx, 0), 0); /* the low one goes */
	expect_picks(&tx, 2, 2, A);
	assert_int_equal(tr_fc_rx_drain(&rx, 5), 0);
	assert_false(bsm_urgent(&rx, tx.need)); /* seen 3, next 4 */
	assert_true(tr_fc_rx_bsm_due(&rx));

	/* Configured thresholds 2, 4, 6 on six slots. */
	for (unsigned nfree = 0; nfree <= 6; nfree++) {
		uint64_t busy = mask_of(6) & ~mask_of(nfree);
		int low = nfree >= 6 ? 0 : A, med = nfree >= 4 ? 0 : A, high = nfree >= 2 ? 0 : A;

		tx_with(&tx, 6, need_246, busy & 0x15, busy & 0x2a);
		assert_int_equal(tx_free(&tx), nfree);
		expect_picks(&tx, high, med, low);
	}

	/* One slot: every priority needs just it. */
	assert_int_equal(tr_fc_tx_init(&tx, 1, NULL), 0);
	assert_int_equal(tr_fc_tx_bsm2(&tx, 0, 0), 0);
	expect_picks(&tx, 0, 0, 0);
	assert_int_equal(tr_fc_tx_sent(&tx, 0), 0);
	expect_picks(&tx, A, A, A);

	/* The lowest free slot, anywhere in 64. */
	tx_with(&tx, 64, NULL, ~(1ull << 37 | 1ull << 50 | 1ull << 63) & 0x5555555555555555ull,
		~(1ull << 37 | 1ull << 50 | 1ull << 63) & 0xaaaaaaaaaaaaaaaaull);
	expect_picks(&tx, 37, 37, 37);
	assert_int_equal(tr_fc_tx_sent(&tx, 37), 0);
	expect_picks(&tx, 50, 50, A);
	assert_int_equal(tr_fc_tx_sent(&tx, 50), 0);
	expect_picks(&tx, 63, A, A);
}

/* ---- behaviour 8: losses ----------------------------------------------- */

static void bsm_to(struct tr_fc_tx *tx, uint64_t n, uint64_t c)
{
	assert_int_equal(tr_fc_tx_bsm2(tx, n, c), 0);
}

static void pair_up(struct tr_fc_tx *tx, struct tr_fc_rx *rx, unsigned k)
{
	uint64_t n, c;

	assert_int_equal(tr_fc_tx_init(tx, k, NULL), 0);
	assert_int_equal(tr_fc_rx_init(rx, k), 0);
	tr_fc_rx_bsm(rx, &n, &c);
	bsm_to(tx, n, c);
}

/* Runs BSMs until slot's state is I, at most max; returns how many. */
static int bsms_until_free(struct tr_fc_tx *tx, struct tr_fc_rx *rx, unsigned slot, int max)
{
	uint64_t n, c;

	for (int i = 1; i <= max; i++) {
		tr_fc_rx_bsm(rx, &n, &c);
		bsm_to(tx, n, c);
		if (tx_state(tx, slot) == S1)
			return i;
	}
	return -1;
}

static void test_lost_bsm_strands_nothing(void **state)
{
	struct tr_fc_tx tx;
	struct tr_fc_rx rx;
	uint64_t n, c;

	(void)state;
	/* A (1,1) lost while the slot stays full: the next BSM repeats N = 1. */
	pair_up(&tx, &rx, 4);
	assert_int_equal(tr_fc_tx_sent(&tx, 0), 0);
	assert_int_equal(tr_fc_rx_arrive(&rx, 0), 0);
	tr_fc_rx_bsm(&rx, &n, &c); /* (1,1): lost */
	assert_true(n == 1 && c == 1);
	assert_int_equal(tr_fc_tx_tick(&tx, false), 0); /* slot 0 flagged */
	tr_fc_rx_bsm(&rx, &n, &c);
	assert_true(n == 1 && c == 1);
	bsm_to(&tx, n, c);
	assert_int_equal(tx_state(&tx, 0), S3);
	assert_true(tx.flag == 0);
	for (int t = 0; t < 4; t++)
		assert_int_equal(tr_fc_tx_tick(&tx, false), 0);
	assert_int_equal(tr_fc_rx_drain(&rx, 0), 0);
	assert_int_equal(bsms_until_free(&tx, &rx, 0, 3), 1);
	assert_true(tx.errors == 0);

	/* A (1,1) lost, then the slot drains before the next BSM: that one
	 * still has N = 1 and frees the slot. */
	pair_up(&tx, &rx, 4);
	assert_int_equal(tr_fc_tx_sent(&tx, 1), 0);
	assert_int_equal(tr_fc_rx_arrive(&rx, 1), 0);
	tr_fc_rx_bsm(&rx, &n, &c); /* lost */
	assert_int_equal(tr_fc_rx_drain(&rx, 1), 0);
	tr_fc_rx_bsm(&rx, &n, &c);
	assert_true(n == 2 && c == 0);
	bsm_to(&tx, n, c);
	assert_int_equal(tx_state(&tx, 1), S1);
	assert_int_equal(bsms_until_free(&tx, &rx, 1, 2), 1);
	assert_int_equal(tr_fc_tx_tick(&tx, false), 0);
	assert_int_equal(tr_fc_tx_tick(&tx, false), 0);
	assert_true(tx.errors == 0);

	/* A lost (1,0) of a slot in state III: the next BSM (0,0) frees it. */
	pair_up(&tx, &rx, 4);
	assert_int_equal(tr_fc_tx_sent(&tx, 2), 0);
	assert_int_equal(tr_fc_rx_arrive(&rx, 2), 0);
	tr_fc_rx_bsm(&rx, &n, &c); /* (1,1) */
	bsm_to(&tx, n, c);
	assert_int_equal(tr_fc_rx_drain(&rx, 2), 0);
	tr_fc_rx_bsm(&rx, &n, &c); /* (1,0): lost */
	assert_int_equal(tx_state(&tx, 2), S3);
	assert_int_equal(bsms_until_free(&tx, &rx, 2, 1), 1);
	assert_true(tx.errors == 0);
}

static void test_lost_message_or_report_times_out(void **state)
{
	struct tr_fc_tx tx;
	struct tr_fc_rx rx;
	uint64_t n, c;

	(void)state;
	/* The message is lost: the BSMs say (0,0), the slot stays in II
	 * until the timer frees it and counts it. */
	pair_up(&tx, &rx, 4);
	assert_int_equal(tr_fc_tx_sent(&tx, 0), 0);
	for (int i = 0; i < 5; i++) {
		tr_fc_rx_bsm(&rx, &n, &c);
		bsm_to(&tx, n, c);
		assert_int_equal(tx_state(&tx, 0), S2);
	}
	assert_int_equal(tr_fc_tx_tick(&tx, false), 0);
	tr_fc_rx_bsm(&rx, &n, &c);
	bsm_to(&tx, n, c);
	assert_int_equal(tx_state(&tx, 0), S2);
	assert_int_equal(tr_fc_tx_tick(&tx, false), 1);
	assert_int_equal(tx_state(&tx, 0), S1);
	assert_true(tr_fc_tx_errors(&tx) == 1);
	/* The slot is usable again and really empty. */
	assert_int_equal(tr_fc_tx_pick(&tx, TR_FC_LOW), 0);
	assert_int_equal(tr_fc_tx_sent(&tx, 0), 0);
	assert_int_equal(tr_fc_rx_arrive(&rx, 0), 0);

	/* The only BSM with N = 1 is lost (the slot drained before it): the
	 * next ones say (0,0) and only the timer frees the slot. */
	pair_up(&tx, &rx, 4);
	assert_int_equal(tr_fc_tx_sent(&tx, 0), 0);
	assert_int_equal(tr_fc_tx_sent(&tx, 1), 0);
	assert_int_equal(tr_fc_rx_arrive(&rx, 0), 0);
	assert_int_equal(tr_fc_rx_arrive(&rx, 1), 0);
	assert_int_equal(tr_fc_rx_drain(&rx, 0), 0);
	assert_int_equal(tr_fc_rx_drain(&rx, 1), 0);
	tr_fc_rx_bsm(&rx, &n, &c); /* (0b11, 0): lost */
	assert_true(n == 3 && c == 0);
	for (int i = 0; i < 3; i++) {
		tr_fc_rx_bsm(&rx, &n, &c);
		assert_true(n == 0 && c == 0);
		bsm_to(&tx, n, c);
	}
	assert_true(tx_slots(&tx, S2) == 3);
	assert_int_equal(tr_fc_tx_tick(&tx, false), 0);
	assert_int_equal(tr_fc_tx_tick(&tx, false), 2);
	assert_true(tr_fc_tx_errors(&tx) == 2);
	assert_int_equal(tx_free(&tx), 4);
	assert_int_equal(tr_fc_tx_sent(&tx, 1), 0);
	assert_int_equal(tr_fc_rx_arrive(&rx, 1), 0);
	assert_true(rx.overruns == 0);
}

/* ---- behaviour 10: the timer ------------------------------------------- */

/* On a reliable connection the timer frees nothing: a receiver whose
 * handler keeps a message for several periods, its status late, must not
 * get another message into that slot (it was dropped as an overrun). */
static void test_timer_reliable(void **state)
{
	struct tr_fc_tx tx;

	(void)state;
	assert_int_equal(tr_fc_tx_init(&tx, 2, NULL), 0);
	assert_int_equal(tr_fc_tx_bsm2(&tx, 0, 0), 0);
	assert_int_equal(tr_fc_tx_sent(&tx, 0), 0);
	assert_int_equal(tr_fc_tx_tick(&tx, true), 0);
	assert_int_equal(tr_fc_tx_tick(&tx, true), 1); /* overdue: counted once */
	for (int t = 0; t < 4; t++) {
		assert_int_equal(tr_fc_tx_tick(&tx, true), 0);
		assert_int_equal(tx_state(&tx, 0), S2); /* still busy */
		assert_int_equal(tr_fc_tx_pick(&tx, TR_FC_HIGH), 1);
	}
	assert_int_equal(tr_fc_tx_errors(&tx), 1);
	assert_int_equal(tr_fc_tx_sent(&tx, 1), 0);
	assert_int_equal(tr_fc_tx_pick(&tx, TR_FC_HIGH), -EAGAIN); /* both busy: wait */
	assert_int_equal(tr_fc_tx_bsm2(&tx, 1, 1), 0);	/* held: II -> III */
	assert_int_equal(tx_state(&tx, 0), S3);
	assert_int_equal(tr_fc_tx_bsm2(&tx, 3, 0), 0);	/* both released */
	assert_int_equal(tx_free(&tx), 2);
}

static void test_timer(void **state)
{
	struct tr_fc_tx tx;

	(void)state;
	assert_int_equal(tr_fc_tx_init(&tx, 8, NULL), 0);
	assert_int_equal(tr_fc_tx_bsm2(&tx, 0, 0), 0);
	for (int t = 0; t < 3; t++)
		assert_int_equal(tr_fc_tx_tick(&tx, false), 0); /* nothing in II */

	/* Sent in one period: flagged at the next tick, timed out at the one
	 * after, never at the first: between one and two periods. */
	assert_int_equal(tr_fc_tx_sent(&tx, 0), 0);
	assert_true(tx.flag == 0);
	assert_int_equal(tr_fc_tx_tick(&tx, false), 0);
	assert_true(tx.flag == 1);
	assert_int_equal(tr_fc_tx_sent(&tx, 1), 0); /* next period */
	assert_true(tx.flag == 1);
	assert_int_equal(tr_fc_tx_tick(&tx, false), 1); /* slot 0 only */
	assert_int_equal(tx_state(&tx, 0), S1);
	assert_int_equal(tx_state(&tx, 1), S2);
	assert_true(tx.flag == 2);
	assert_int_equal(tr_fc_tx_tick(&tx, false), 1); /* slot 1 */
	assert_true(tx.flag == 0 && tr_fc_tx_errors(&tx) == 2);
	assert_int_equal(tx_free(&tx), 8);

	/* Staying in II across a BSM (0,0) keeps the flag. */
	assert_int_equal(tr_fc_tx_sent(&tx, 2), 0);
	assert_int_equal(tr_fc_tx_tick(&tx, false), 0);
	assert_int_equal(tr_fc_tx_bsm2(&tx, 0, 0), 0);
	assert_true(tx.flag == 4);
	assert_int_equal(tr_fc_tx_tick(&tx, false), 1);

	/* A state change clears the flag: II -> III -> I -> II between two ticks
	 * restarts the wait. */
	assert_int_equal(tr_fc_tx_sent(&tx, 3), 0);
	assert_int_equal(tr_fc_tx_tick(&tx, false), 0);
	assert_true(tx.flag == 8);
	assert_int_equal(tr_fc_tx_bsm2(&tx, 8, 8), 0); /* II -> III */
	assert_true(tx.flag == 0);
	assert_int_equal(tr_fc_tx_bsm2(&tx, 8, 0), 0); /* III -> I */
	assert_int_equal(tr_fc_tx_sent(&tx, 3), 0);	/* I -> II */
	assert_int_equal(tr_fc_tx_tick(&tx, false), 0);	/* flagged afresh */
	assert_int_equal(tr_fc_tx_tick(&tx, false), 1);
	/* And II -> I directly. */
	assert_int_equal(tr_fc_tx_sent(&tx, 4), 0);
	assert_int_equal(tr_fc_tx_tick(&tx, false), 0);
	assert_int_equal(tr_fc_tx_bsm2(&tx, 16, 0), 0); /* II -> I */
	assert_true(tx.flag == 0);
	assert_int_equal(tr_fc_tx_sent(&tx, 4), 0);
	assert_int_equal(tr_fc_tx_tick(&tx, false), 0);
	assert_int_equal(tr_fc_tx_tick(&tx, false), 1);
	assert_true(tr_fc_tx_errors(&tx) == 5);

	/* A refused BSM is a lost one: the flag stays. */
	assert_int_equal(tr_fc_tx_sent(&tx, 5), 0);
	assert_int_equal(tr_fc_tx_tick(&tx, false), 0);
	assert_int_equal(tr_fc_tx_bsm2(&tx, 0, 32), -EPROTO);
	assert_int_equal(tr_fc_tx_tick(&tx, false), 1);

	/* Several slots, several periods, bitwise. */
	for (unsigned b = 0; b < 8; b++)
		assert_int_equal(tr_fc_tx_sent(&tx, b), 0);
	assert_int_equal(tr_fc_tx_tick(&tx, false), 0);
	assert_int_equal(tr_fc_tx_bsm2(&tx, 0x0f, 0x03), 0); /* 0,1: III; 2,3: I */
	assert_true(tx.flag == 0xf0);
	assert_int_equal(tr_fc_tx_sent(&tx, 2), 0);
	assert_int_equal(tr_fc_tx_tick(&tx, false), 4); /* 4..7 */
	assert_true(tx.flag == 0x04);
	assert_int_equal(tr_fc_tx_tick(&tx, false), 1); /* 2 */
	assert_int_equal(tr_fc_tx_tick(&tx, false), 0);
	assert_true(tx_slots(&tx, S3) == 3 && tx_free(&tx) == 6);
	assert_true(tr_fc_tx_errors(&tx) == 11);

	/* A reconnect sets the sender up again: no flag survives it. */
	assert_int_equal(tr_fc_tx_sent(&tx, 7), 0);
	assert_int_equal(tr_fc_tx_tick(&tx, false), 0);
	assert_int_equal(tr_fc_tx_init(&tx, 8, NULL), 0);
	assert_true(tx.flag == 0 && tr_fc_tx_errors(&tx) == 0);
	assert_int_equal(tr_fc_tx_bsm2(&tx, 0, 0), 0);
	assert_int_equal(tr_fc_tx_sent(&tx, 7), 0);
	assert_int_equal(tr_fc_tx_tick(&tx, false), 0);
	assert_int_equal(tr_fc_tx_tick(&tx, false), 1);
	assert_true(tr_fc_tx_errors(&tx) == 1);
}

/* ---- misuse and out-of-range bits ------------------------------------- */

static void test_misuse(void **state)
{
	struct tr_fc_tx tx, before;

	(void)state;
	tx_with(&tx, 6, NULL, 0x02, 0x04);
	before = tx;
	assert_int_equal(tr_fc_tx_sent(&tx, 6), -EINVAL);
	assert_int_equal(tr_fc_tx_sent(&tx, 64), -EINVAL);
	assert_int_equal(tr_fc_tx_sent(&tx, -1u), -EINVAL);
	assert_int_equal(tr_fc_tx_sent(&tx, 1), -EBUSY);
	assert_int_equal(tr_fc_tx_sent(&tx, 2), -EBUSY);
	assert_memory_equal(&tx, &before, sizeof(tx));

	/* Bits at or above nslots are ignored, in N as in C. */
	assert_int_equal(tr_fc_tx_bsm2(&tx, 0, ~0ull << 6), 0); /* not a (0,1) */
	assert_true(tx.bad_bsms == 0);
	check_tx(&tx, 0, 0x02, 0x02, "high bits");
	assert_int_equal(tr_fc_tx_bsm2(&tx, UINT64_MAX, UINT64_MAX), 0);
	check_tx(&tx, 0x3f, 0, 0x3f, "all ones");
	assert_int_equal(tr_fc_tx_bsm2(&tx, 1, 2), -EPROTO);
	assert_true(tx.bad_bsms == 1);
	check_tx(&tx, 0x3f, 0, 0x3f, "refused");
}

/* ---- behaviour 11: randomised, a sender and a receiver on a lossy link --
 *
 * Time runs in steps.  Messages go S -> R and BSMs R -> S on two FIFO
 * channels with a latency of 1..LAT steps; each item may be lost.  The
 * receiver builds a BSM when urgent, often when due, sometimes for nothing,
 * and at least every GAP steps.  BSMs are lost at random, but never so that
 * two BSMs that reach the sender were built more than GAPMAX steps apart;
 * the timer period is above GAPMAX plus a round trip (the spec's condition).
 * A consumer drains random full slots, a producer queues messages of random
 * priority, both at rates that change every few thousand steps; now and
 * then the connection is re-established (both channels flushed, sender
 * reset).  Each busy epoch ends in a quiet one (no new messages, no loss,
 * fast consumer) after which every slot must be free again.
 *
 * A model follows every message: whether it was lost, which BSMs report it
 * (N = 1) and whether one of them reached the sender.  It asserts, at every
 * step: no message is ever sent into a slot that holds one or has one on
 * the way; the receiver's registers match the model; the sender believes
 * busy every slot that is full or has a message on the way; a slot is in
 * state II exactly while its last message is unresolved; the first report
 * that reaches the sender finds the slot in state II; a slot times out only
 * if its message or every report of it was lost, between one and two
 * periods after it was sent; the error counter is the number of timeouts. */

#define LAT 6
#define GAP 8
#define GAPMAX 24
#define PERIOD (GAPMAX + 2 * LAT + 2)
#define MCAP 4096
#define BCAP 64
#define SIM_QUEUE 64

struct msg {
	uint32_t sent_at;
	uint32_t reports;  /* BSMs built with N = 1 for it */
	uint16_t inflight; /* of those, on their way to the sender */
	uint8_t slot;
	bool lost, arrived, closed, confirmed, timed_out, reset;
};

struct bsm_item {
	uint32_t due;
	uint64_t n, c;
	uint32_t id[64]; /* the message each N = 1 bit reports */
};

struct sim {
	/* configuration */
	unsigned k;
	unsigned need[TR_FC_NPRIO];
	uint64_t mask;
	uint32_t tick_phase;
	/* engines */
	struct tr_fc_tx tx;
	struct tr_fc_rx rx;
	uint32_t now;
	/* regime (per mille) */
	unsigned p_gen, p_drain, p_msg_loss, p_bsm_loss, p_due, p_idle, p_reconnect;
	bool quiet;
	/* model of the receiver */
	uint64_t full, nmtsr, touched;
	bool resync;
	uint32_t holder[64];
	/* model of the sender */
	uint32_t tx_msg[64];
	uint64_t on_way; /* slots with a message in the S -> R channel */
	unsigned queue[TR_FC_NPRIO];
	bool await_bsm; /* reset, and no BSM since */
	uint32_t unresolved;
	uint32_t last_send;
	/* channels */
	struct {
		uint32_t due, id;
	} mq[MCAP];
	unsigned mhead, mlen;
	struct bsm_item bq[BCAP];
	unsigned bhead, blen;
	uint32_t last_build, last_kept;
	/* every message sent */
	struct msg *msgs;
	uint32_t nmsgs, cap;
	/* counts */
	uint64_t events, sends, msg_lost, arrivals, drains, builds, bsm_lost, bsm_delivered;
	uint64_t ticks, timeouts, confirmed, reset_resolved, reconnects, blocked[TR_FC_NPRIO];
	uint64_t timeouts_before; /* counted by the senders of earlier connections */
	uint32_t quiet_max;
};

static unsigned nth_bit(uint64_t x, unsigned i)
{
	while (i--)
		x &= x - 1;
	return ctz(x);
}

static uint32_t latency_due(uint32_t now, uint32_t last_due)
{
	uint32_t due = now + 1 + (uint32_t)(rnd() % LAT);

	return due > last_due ? due : last_due; /* FIFO */
}

static void sim_send(struct sim *s)
{
	for (unsigned p = 0; p < TR_FC_NPRIO; p++) {
		while (s->queue[p]) {
			uint64_t freem = ~s->tx.bbr & s->mask;
			int slot = tr_fc_tx_pick(&s->tx, p);
			struct msg *m;
			uint64_t bit;

			if (popc(freem) >= s->need[p])
				assert_int_equal(slot, (int)ctz(freem));
			else
				assert_int_equal(slot, -EAGAIN);
			if (slot < 0) {
				s->blocked[p]++;
				break;
			}
			bit = 1ull << slot;
			if (s->await_bsm)
				fail_msg("step %u: slot %d free before the first BSM", s->now,
					 slot);
			/* Behaviour 2, checked at the source. */
			if ((s->full | s->on_way) & bit)
				fail_msg("step %u: sending into slot %d, which is %s", s->now, slot,
					 s->full & bit ? "full" : "about to be");
			assert_int_equal(tr_fc_tx_sent(&s->tx, (unsigned)slot), 0);
			if (s->nmsgs == s->cap) {
				s->cap = s->cap ? 2 * s->cap : 4096;
				s->msgs = realloc(s->msgs, s->cap * sizeof(*s->msgs));
				assert_non_null(s->msgs);
			}
			m = &s->msgs[s->nmsgs];
			*m = (struct msg){ .sent_at = s->now, .slot = (uint8_t)slot };
			s->tx_msg[slot] = s->nmsgs;
			m->lost = !s->quiet && chance(s->p_msg_loss);
			if (m->lost) {
				s->msg_lost++;
			} else {
				unsigned tail = (s->mhead + s->mlen) % MCAP;
				uint32_t last = s->mlen ? s->mq[(tail + MCAP - 1) % MCAP].due : 0;

				assert_true(s->mlen < MCAP);
				s->mq[tail].due = latency_due(s->now, last);
				s->mq[tail].id = s->nmsgs;
				s->mlen++;
				s->on_way |= bit;
			}
			s->nmsgs++;
			s->unresolved++;
			s->sends++;
			s->events++;
			s->last_send = s->now;
			s->queue[p]--;
		}
	}
}

static void sim_arrive(struct sim *s)
{
	while (s->mlen && s->mq[s->mhead].due <= s->now) {
		uint32_t id = s->mq[s->mhead].id;
		struct msg *m = &s->msgs[id];
		uint64_t bit = 1ull << m->slot;
		int rc = tr_fc_rx_arrive(&s->rx, m->slot);

		if (rc)
			fail_msg("step %u: message %u into slot %u: %d (full %#llx)", s->now, id,
				 m->slot, rc, (unsigned long long)s->full);
		s->mhead = (s->mhead + 1) % MCAP;
		s->mlen--;
		s->on_way &= ~bit;
		s->full |= bit;
		s->nmtsr |= bit;
		s->touched |= bit;
		s->holder[m->slot] = id;
		m->arrived = true;
		s->arrivals++;
		s->events++;
	}
}

static void sim_drain(struct sim *s)
{
	unsigned rounds = s->quiet ? 64 : 2;

	for (unsigned r = 0; r < rounds && s->full; r++) {
		unsigned b;

		if (!s->quiet && !chance(s->p_drain))
			continue;
		b = nth_bit(s->full, (unsigned)(rnd() % popc(s->full)));
		assert_int_equal(tr_fc_rx_drain(&s->rx, b), 0);
		s->full &= ~(1ull << b);
		s->touched |= 1ull << b;
		s->drains++;
		s->events++;
	}
}

static void sim_build(struct sim *s)
{
	bool urgent = bsm_urgent(&s->rx, s->need), due = tr_fc_rx_bsm_due(&s->rx);
	struct bsm_item item = { 0 };
	bool lost;

	assert_true(due == (s->resync || s->touched != 0));
	if (urgent)
		assert_true(due);
	if (!(urgent || (due && chance(s->p_due)) || chance(s->p_idle) ||
	      s->now - s->last_build >= GAP))
		return;
	tr_fc_rx_bsm(&s->rx, &item.n, &item.c);
	/* Behaviour 5, and the receiver against the model. */
	assert_true((item.c & ~item.n) == 0);
	assert_true(item.n == s->nmtsr && item.c == s->full);
	for (uint64_t x = item.n; x; x &= x - 1) {
		unsigned b = ctz(x);

		item.id[b] = s->holder[b];
		s->msgs[s->holder[b]].reports++;
	}
	/* A report of a slot that is empty now is its message's last. */
	for (uint64_t x = item.n & ~item.c; x; x &= x - 1)
		s->msgs[s->holder[ctz(x)]].closed = true;
	s->nmtsr = s->full;
	s->touched = 0;
	s->resync = false;
	s->last_build = s->now;
	s->builds++;
	s->events++;

	lost = !s->quiet && s->now - s->last_kept + GAP <= GAPMAX && chance(s->p_bsm_loss);
	if (lost) {
		s->bsm_lost++;
		return;
	}
	s->last_kept = s->now;
	for (uint64_t x = item.n; x; x &= x - 1)
		s->msgs[item.id[ctz(x)]].inflight++;
	assert_true(s->blen < BCAP);
	{
		unsigned tail = (s->bhead + s->blen) % BCAP;
		uint32_t last = s->blen ? s->bq[(tail + BCAP - 1) % BCAP].due : 0;

		item.due = latency_due(s->now, last);
		s->bq[tail] = item;
		s->blen++;
	}
}

static void sim_deliver_bsms(struct sim *s)
{
	while (s->blen && s->bq[s->bhead].due <= s->now) {
		const struct bsm_item *it = &s->bq[s->bhead];
		uint64_t ii = tx_slots(&s->tx, S2), first = 0;

		for (uint64_t x = it->n; x; x &= x - 1) {
			unsigned b = ctz(x);
			struct msg *m = &s->msgs[it->id[b]];

			assert_true(m->inflight > 0);
			m->inflight--;
			if (m->timed_out)
				fail_msg("step %u: a report of message %u (slot %u) arrives after "
					 "its timeout", s->now, it->id[b], b);
			if (m->confirmed || m->reset)
				continue;
			/* The first report to arrive finds the slot in II, waiting for it. */
			if (!(ii >> b & 1) || s->tx_msg[b] != it->id[b])
				fail_msg("step %u: report of message %u finds slot %u in %s",
					 s->now, it->id[b], b,
					 state_str(tx_state(&s->tx, b)));
			m->confirmed = true;
			first |= 1ull << b;
			s->confirmed++;
			s->unresolved--;
		}
		assert_int_equal(tr_fc_tx_bsm2(&s->tx, it->n, it->c), 0);
		assert_true((tx_slots(&s->tx, S2) & first) == 0);
		assert_true((s->tx.sanrr & it->n) == 0);
		s->await_bsm = false;
		s->bhead = (s->bhead + 1) % BCAP;
		s->blen--;
		s->bsm_delivered++;
		s->events++;
	}
}

static void sim_tick(struct sim *s)
{
	uint64_t ii = tx_slots(&s->tx, S2), flag = s->tx.flag, timed;
	uint64_t errors = s->tx.errors;
	unsigned count;

	if ((s->now + s->tick_phase) % PERIOD)
		return;
	count = tr_fc_tx_tick(&s->tx, false);
	timed = ii & ~tx_slots(&s->tx, S2);
	assert_true(timed == flag);
	assert_int_equal(count, popc(timed));
	assert_true(s->tx.errors == errors + count);
	for (uint64_t x = timed; x; x &= x - 1) {
		unsigned b = ctz(x);
		struct msg *m = &s->msgs[s->tx_msg[b]];
		uint32_t age = s->now - m->sent_at;

		/* Only a message lost, or whose every report was lost. */
		if (m->confirmed || m->reset || m->inflight || !(m->lost || m->closed))
			fail_msg("step %u: slot %u timed out early (message %u: lost %d arrived %d "
				 "closed %d reports %u inflight %u)", s->now, b, s->tx_msg[b],
				 m->lost, m->arrived, m->closed, m->reports, m->inflight);
		if (age <= PERIOD || age > 2 * PERIOD)
			fail_msg("step %u: slot %u timed out %u steps after sending", s->now, b,
				 age);
		m->timed_out = true;
		s->timeouts++;
		s->unresolved--;
	}
	s->ticks++;
	s->events++;
}

static void sim_reconnect(struct sim *s)
{
	/* The old QP's queues die with it. */
	for (; s->mlen; s->mlen--, s->mhead = (s->mhead + 1) % MCAP)
		s->msgs[s->mq[s->mhead].id].lost = true;
	for (; s->blen; s->blen--, s->bhead = (s->bhead + 1) % BCAP)
		for (uint64_t x = s->bq[s->bhead].n; x; x &= x - 1)
			s->msgs[s->bq[s->bhead].id[ctz(x)]].inflight--;
	s->on_way = 0;
	/* What was unresolved is settled by the reset, not by the timer. */
	for (uint64_t x = tx_slots(&s->tx, S2); x; x &= x - 1) {
		s->msgs[s->tx_msg[ctz(x)]].reset = true;
		s->reset_resolved++;
		s->unresolved--;
	}
	/* The lane sets both ends up again (the timeouts counted so far were
	 * the old connection's: the lane sums them).  Here the receiver keeps
	 * its slots and registers instead, the harder case for the sender,
	 * which must not use a slot still held; it owes an urgent first BSM,
	 * as tr_fc_rx_init() makes it. */
	s->timeouts_before += tr_fc_tx_errors(&s->tx);
	assert_int_equal(tr_fc_tx_init(&s->tx, s->k, s->need), 0);
	s->rx.resync = true;
	s->resync = true;
	s->await_bsm = true;
	s->last_kept = s->now;
	s->reconnects++;
}

static void sim_step(struct sim *s)
{
	s->now++;
	if (!s->quiet) {
		unsigned gen = s->p_gen;

		/* The producer stops while SIM_QUEUE messages wait. */
		for (; gen >= 1000; gen -= 1000)
			if (s->queue[0] + s->queue[1] + s->queue[2] < SIM_QUEUE)
				s->queue[rnd() % TR_FC_NPRIO]++;
		if (chance(gen) && s->queue[0] + s->queue[1] + s->queue[2] < SIM_QUEUE)
			s->queue[rnd() % TR_FC_NPRIO]++;
		if (chance(s->p_reconnect))
			sim_reconnect(s);
	}
	sim_deliver_bsms(s);
	sim_tick(s);
	sim_send(s);
	sim_arrive(s);
	sim_drain(s);
	sim_build(s);

	/* The invariants, all slots at once. */
	check_tx_sane(&s->tx);
	assert_true(s->rx.cfr == s->full && s->rx.nmtsr == s->nmtsr);
	assert_true((s->full & ~s->nmtsr) == 0);
	if ((s->full | s->on_way) & ~s->tx.bbr)
		fail_msg("step %u: slots %#llx full or on the way but free at the sender", s->now,
			 (unsigned long long)((s->full | s->on_way) & ~s->tx.bbr));
	assert_int_equal(s->unresolved, popc(tx_slots(&s->tx, S2)));
	if (s->await_bsm)
		assert_int_equal(tx_free(&s->tx), 0);
	assert_true(s->timeouts_before + s->tx.errors == s->timeouts);
}

static void sim_regime(struct sim *s)
{
	static const unsigned gen[] = { 50, 300, 1000, 2500, 6000 };
	static const unsigned drain[] = { 20, 200, 600, 1000 };

	s->p_gen = gen[rnd() % 5];
	s->p_drain = drain[rnd() % 4];
	s->p_msg_loss = (unsigned)(rnd() % 40);
	s->p_bsm_loss = (unsigned)(rnd() % 300);
	s->p_due = 100 + (unsigned)(rnd() % 900);
	s->p_idle = (unsigned)(rnd() % 100);
	s->p_reconnect = rnd() % 4 == 0;
}

/* No new messages, no loss, a fast consumer: once the messages still queued
 * are sent, every slot must be free within two timer periods (a slot whose
 * message or reports were lost before times out within two periods of its
 * sending; everything else takes a round trip and two BSMs). */
static void sim_quiet(struct sim *s)
{
	uint32_t start = s->now, from, end;

	s->quiet = true;
	while (s->queue[0] || s->queue[1] || s->queue[2]) {
		sim_step(s);
		if (s->now - start > 100000)
			fail_msg("queued messages never sent (%u %u %u)", s->queue[0], s->queue[1],
				 s->queue[2]);
	}
	from = s->last_send > start ? s->last_send : start;
	for (end = from + 2 * PERIOD + 1; s->now < end;) {
		sim_step(s);
		if (tx_free(&s->tx) == s->k && !s->mlen && !s->blen && !s->full) {
			uint32_t took = s->now - from;

			if (took > s->quiet_max)
				s->quiet_max = took;
			break;
		}
	}
	if (tx_free(&s->tx) != s->k)
		fail_msg("step %u: slots %#llx still busy %u steps after the traffic stopped",
			 s->now, (unsigned long long)s->tx.bbr, s->now - from);
	assert_int_equal(s->unresolved, 0);
	assert_true(s->full == 0 && s->on_way == 0 && s->mlen == 0);
	s->quiet = false;
}

/* Returns the number of events. */
static uint64_t run_sim(uint64_t seed, unsigned k, const unsigned need[TR_FC_NPRIO],
			uint32_t busy_steps)
{
	struct sim *s = calloc(1, sizeof(*s));
	uint32_t epochs = busy_steps / 20000;
	uint64_t events;

	assert_non_null(s);
	rng_state = seed;
	s->k = k;
	s->mask = mask_of(k);
	memcpy(s->need, need, sizeof(s->need));
	s->tick_phase = (uint32_t)(rnd() % PERIOD);
	assert_int_equal(tr_fc_tx_init(&s->tx, k, need), 0);
	assert_int_equal(tr_fc_rx_init(&s->rx, k), 0);
	s->resync = true;
	s->await_bsm = true;

	for (uint32_t e = 0; e < epochs; e++) {
		for (uint32_t i = 0; i < 20000; i++) {
			if (i % 2500 == 0)
				sim_regime(s);
			sim_step(s);
		}
		sim_quiet(s);
	}

	/* Every message is settled, once: by a report, by the timer (counted),
	 * or by a reset; every arrival was reported (behaviour 4). */
	assert_true(s->sends == s->confirmed + s->timeouts + s->reset_resolved);
	assert_true(s->timeouts_before + tr_fc_tx_errors(&s->tx) == s->timeouts);
	assert_true(s->rx.overruns == 0);
	for (uint32_t i = 0; i < s->nmsgs; i++) {
		const struct msg *m = &s->msgs[i];

		assert_true(m->inflight == 0);
		assert_int_equal(m->confirmed + m->timed_out + m->reset, 1);
		if (m->arrived && (!m->closed || m->reports == 0))
			fail_msg("message %u arrived but was never reported", i);
		if (m->confirmed)
			assert_true(m->arrived && m->reports > 0);
	}
	/* The run went through everything it is meant to. */
	assert_true(s->timeouts > 0 && s->msg_lost > 0 && s->bsm_lost > 0);
	assert_true(s->reconnects > 0 && s->reset_resolved > 0);
	for (unsigned p = 0; p < TR_FC_NPRIO; p++)
		assert_true(s->blocked[p] > 0);
	print_message("seed %llu k %u need %u/%u/%u: %llu events, %llu msgs (%llu lost), "
		      "%llu BSMs (%llu lost), %llu timeouts, %llu reconnects, quiet max %u\n",
		      (unsigned long long)seed, k, need[0], need[1], need[2],
		      (unsigned long long)s->events,
		      (unsigned long long)s->sends, (unsigned long long)s->msg_lost,
		      (unsigned long long)s->builds, (unsigned long long)s->bsm_lost,
		      (unsigned long long)s->timeouts, (unsigned long long)s->reconnects,
		      s->quiet_max);
	assert_true(s->events > busy_steps / 4);
	events = s->events;
	free(s->msgs);
	free(s);
	return events;
}

static const struct {
	uint64_t seed;
	unsigned k, need[TR_FC_NPRIO];
	uint32_t steps;
} sim_runs[] = {
	{ 0x6a09e667f3bcc908ull, 6, { 1, 2, 3 }, 1200000 }, /* the fixed one: the patent's port */
	{ 1, 64, { 1, 4, 16 }, 500000 },
	{ 2, 1, { 1, 1, 1 }, 200000 },
	{ 3, 3, { 1, 2, 3 }, 200000 },
	{ 4, 17, { 2, 2, 5 }, 500000 },
};

static void test_random_two_field(void **state)
{
	uint64_t events = 0;

	(void)state;
	for (size_t i = 0; i < sizeof(sim_runs) / sizeof(sim_runs[0]); i++)
		events += run_sim(sim_runs[i].seed, sim_runs[i].k, sim_runs[i].need,
				  sim_runs[i].steps);
	print_message("%llu events in all\n", (unsigned long long)events);
	assert_true(events > 3000000);
}

/* ---- the standalone BSM send decision ------------------------------------ */

#define NONE TR_FC_BSM_NONE
#define WAIT_ROOM TR_FC_BSM_WAIT_ROOM
#define BUSY TR_FC_BSM_BUSY
#define LINGER TR_FC_BSM_LINGER
#define SEND TR_FC_BSM_SEND

/* Asserts the decision for one set of inputs, and that deciding changed
 * nothing in the receiver. */
static void expect_decide(const struct tr_fc_rx *rx, const unsigned *need, unsigned inflight,
			  bool room, bool force, enum tr_fc_bsm_action want, const char *step)
{
	struct tr_fc_bsm_in in = { .inflight = inflight, .room = room, .force = force };
	struct tr_fc_rx before = *rx;
	enum tr_fc_bsm_action got = tr_fc_rx_bsm_decide(rx, need, &in);

	if (got != want)
		fail_msg("%s: inflight %u room %d force %d (NMTSR %#llx CFR %#llx): %s, want %s",
			 step, inflight, room, force, (unsigned long long)rx->nmtsr,
			 (unsigned long long)rx->cfr, bsm_action_str(got),
			 bsm_action_str(want));
	assert_memory_equal(rx, &before, sizeof(before));
}

/* A receiver with nslots slots whose first BSM went out (nothing due). */
static void rx_reported(struct tr_fc_rx *rx, unsigned nslots)
{
	uint64_t n, c;

	assert_int_equal(tr_fc_rx_init(rx, nslots), 0);
	tr_fc_rx_bsm(rx, &n, &c);
	assert_false(tr_fc_rx_bsm_due(rx));
}

static void arrive_n(struct tr_fc_rx *rx, unsigned from, unsigned count)
{
	for (unsigned i = 0; i < count; i++)
		assert_int_equal(tr_fc_rx_arrive(rx, from + i), 0);
}

static void report(struct tr_fc_rx *rx)
{
	uint64_t n, c;

	tr_fc_rx_bsm(rx, &n, &c);
}

static void test_bsm_decide_nothing_due(void **state)
{
	struct tr_fc_rx rx;

	(void)state;
	rx_reported(&rx, 6);
	for (unsigned inflight = 0; inflight < 4; inflight++)
		for (int room = 0; room < 2; room++)
			for (int force = 0; force < 2; force++)
				expect_decide(&rx, NULL, inflight, room, force, NONE, "reported");
	/* Full slots already reported are no news either, even with two
	 * thirds of the slots busy at the sender. */
	arrive_n(&rx, 0, 5);
	report(&rx);
	expect_decide(&rx, NULL, 0, true, false, NONE, "full, reported");
	expect_decide(&rx, NULL, 0, true, true, NONE, "full, reported, force");
	expect_decide(&rx, NULL, 0, false, true, NONE, "full, reported, no room");
}

static void test_bsm_decide_linger_and_force(void **state)
{
	struct tr_fc_rx rx;

	(void)state;
	rx_reported(&rx, 6);
	assert_int_equal(tr_fc_rx_arrive(&rx, 0), 0);
	expect_decide(&rx, NULL, 0, true, false, LINGER, "1 of 6");
	expect_decide(&rx, NULL, 0, true, true, SEND, "1 of 6, expired");
	arrive_n(&rx, 1, 2);
	expect_decide(&rx, NULL, 0, true, false, LINGER, "3 of 6");
	expect_decide(&rx, NULL, 0, true, true, SEND, "3 of 6, expired");
	/* A drain that crosses no threshold lingers too. */
	report(&rx);
	assert_int_equal(tr_fc_rx_drain(&rx, 2), 0);
	expect_decide(&rx, NULL, 0, true, false, LINGER, "drain, seen 3 next 4");
	expect_decide(&rx, NULL, 0, true, true, SEND, "drain, expired");
	/* Once sent, nothing is due and force sends nothing. */
	report(&rx);
	expect_decide(&rx, NULL, 0, true, true, NONE, "after the BSM");
}

static void test_bsm_decide_two_thirds(void **state)
{
	/* Hand-computed: the fewest unreported slots that send at once,
	 * ceil(2 * nslots / 3). */
	static const struct {
		unsigned nslots, first_send;
	} cases[] = {
		{ 1, 1 }, { 2, 2 }, { 3, 2 }, { 4, 3 }, { 5, 4 },
		{ 6, 4 }, { 7, 5 }, { 9, 6 }, { 63, 42 }, { 64, 43 },
	};
	struct tr_fc_rx rx;
	char step[64];

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		unsigned n = cases[i].nslots;

		rx_reported(&rx, n);
		for (unsigned k = 1; k <= n; k++) {
			assert_int_equal(tr_fc_rx_arrive(&rx, k - 1), 0);
			assert_false(bsm_urgent(&rx, NULL)); /* arrivals only */
			snprintf(step, sizeof(step), "%u of %u unreported", k, n);
			expect_decide(&rx, NULL, 0, true, false,
				      k < cases[i].first_send ? LINGER : SEND, step);
		}
	}

	/* The exact boundary with 6 slots: 3 linger, 4 send. */
	rx_reported(&rx, 6);
	arrive_n(&rx, 0, 3);
	expect_decide(&rx, NULL, 0, true, false, LINGER, "3 of 6");
	assert_int_equal(tr_fc_rx_arrive(&rx, 3), 0);
	expect_decide(&rx, NULL, 0, true, false, SEND, "4 of 6");

	/* Unreported counts NMTSR: the slots the sender still holds busy,
	 * including those full at the last BSM, not only the new arrivals. */
	rx_reported(&rx, 6);
	arrive_n(&rx, 0, 3);
	report(&rx); /* NMTSR = CFR = {0, 1, 2} */
	assert_int_equal(tr_fc_rx_drain(&rx, 0), 0);
	expect_decide(&rx, NULL, 0, true, false, LINGER, "3 busy at the sender, 1 drained");
	assert_int_equal(tr_fc_rx_arrive(&rx, 3), 0);
	expect_decide(&rx, NULL, 0, true, false, SEND, "4 busy at the sender");
}

static void test_bsm_decide_urgent(void **state)
{
	struct tr_fc_rx rx;

	(void)state;
	/* The first BSM after init: urgent with nothing unreported, so it goes
	 * even with one BSM already in flight. */
	assert_int_equal(tr_fc_rx_init(&rx, 6), 0);
	expect_decide(&rx, NULL, 0, true, false, SEND, "first BSM");
	expect_decide(&rx, NULL, 1, true, false, SEND, "first BSM, one in flight");
	expect_decide(&rx, NULL, 2, true, false, BUSY, "first BSM, two in flight");
	report(&rx);
	arrive_n(&rx, 0, 2);
	assert_int_equal(tr_fc_rx_init(&rx, 6), 0); /* a reconnect */
	expect_decide(&rx, NULL, 0, true, false, SEND, "reconnect");
	expect_decide(&rx, NULL, 1, true, false, SEND, "reconnect, one in flight");

	/* Every slot full and reported, then one drains: the sender's free
	 * count goes from 0 to 1, over the high threshold. */
	rx_reported(&rx, 6);
	arrive_n(&rx, 0, 6);
	report(&rx);
	assert_int_equal(tr_fc_rx_drain(&rx, 5), 0);
	assert_true(bsm_urgent(&rx, NULL));
	expect_decide(&rx, NULL, 1, true, false, SEND, "0 -> 1 free, one in flight");
}

static void test_bsm_decide_thresholds(void **state)
{
	static const unsigned need_125[TR_FC_NPRIO] = { 1, 2, 5 };
	static const unsigned need_124[TR_FC_NPRIO] = { 1, 2, 4 };
	struct tr_fc_rx rx;

	(void)state;
	/* 2 of 6 full and reported (seen 4), one drains (next 5): that crosses
	 * a low threshold of 5, not the default 3.  Only 2 slots unreported,
	 * so only urgency can send at once. */
	rx_reported(&rx, 6);
	arrive_n(&rx, 0, 2);
	report(&rx);
	assert_int_equal(tr_fc_rx_drain(&rx, 0), 0);
	expect_decide(&rx, need_125, 0, true, false, SEND, "4 -> 5 free, need 5");
	expect_decide(&rx, need_125, 1, true, false, SEND, "need 5, one in flight");
	expect_decide(&rx, need_125, 2, true, false, BUSY, "need 5, two in flight");
	expect_decide(&rx, NULL, 0, true, false, LINGER, "4 -> 5 free, need 3");
	expect_decide(&rx, NULL, 1, true, false, BUSY, "need 3, one in flight");
	expect_decide(&rx, need_124, 0, true, false, LINGER, "4 -> 5 free, need 4");

	/* 3 of 6 reported (seen 3), one drains (next 4): a threshold of 4 is
	 * crossed, the defaults are not. */
	rx_reported(&rx, 6);
	arrive_n(&rx, 0, 3);
	report(&rx);
	assert_int_equal(tr_fc_rx_drain(&rx, 1), 0);
	expect_decide(&rx, need_124, 0, true, false, SEND, "3 -> 4 free, need 4");
	expect_decide(&rx, need_125, 0, true, false, LINGER, "3 -> 4 free, need 5");
	expect_decide(&rx, NULL, 0, true, false, LINGER, "3 -> 4 free, need 3");
	/* The next drain reaches 5. */
	assert_int_equal(tr_fc_rx_drain(&rx, 2), 0);
	expect_decide(&rx, need_125, 0, true, false, SEND, "3 -> 5 free, need 5");
}

static void test_bsm_decide_inflight(void **state)
{
	struct tr_fc_rx rx;

	(void)state;
	/* Two thirds, not urgent: one in flight already blocks, force or not. */
	rx_reported(&rx, 6);
	arrive_n(&rx, 0, 4);
	assert_false(bsm_urgent(&rx, NULL));
	expect_decide(&rx, NULL, 0, true, false, SEND, "2/3, none in flight");
	for (unsigned inflight = 1; inflight < 4; inflight++) {
		expect_decide(&rx, NULL, inflight, true, false, BUSY, "2/3, in flight");
		expect_decide(&rx, NULL, inflight, true, true, BUSY, "2/3, in flight, force");
	}
	/* Lingering: the in-flight limit comes first. */
	rx_reported(&rx, 6);
	assert_int_equal(tr_fc_rx_arrive(&rx, 0), 0);
	expect_decide(&rx, NULL, 1, true, false, BUSY, "linger, one in flight");
	expect_decide(&rx, NULL, 1, true, true, BUSY, "expired, one in flight");

	/* Urgent: two may be in flight, not three. */
	assert_int_equal(tr_fc_rx_init(&rx, 6), 0);
	expect_decide(&rx, NULL, 0, true, false, SEND, "urgent, none in flight");
	expect_decide(&rx, NULL, 1, true, false, SEND, "urgent, one in flight");
	expect_decide(&rx, NULL, 2, true, false, BUSY, "urgent, two in flight");
	expect_decide(&rx, NULL, 2, true, true, BUSY, "urgent, two in flight, force");
	expect_decide(&rx, NULL, 1000, true, false, BUSY, "urgent, many in flight");
}

static void test_bsm_decide_room(void **state)
{
	struct tr_fc_rx rx;

	(void)state;
	/* No room comes before every other rule but "nothing due". */
	assert_int_equal(tr_fc_rx_init(&rx, 6), 0); /* urgent */
	for (unsigned inflight = 0; inflight < 4; inflight++) {
		expect_decide(&rx, NULL, inflight, false, false, WAIT_ROOM, "urgent, no room");
		expect_decide(&rx, NULL, inflight, false, true, WAIT_ROOM, "urgent, no room, force");
	}
	rx_reported(&rx, 6);
	assert_int_equal(tr_fc_rx_arrive(&rx, 0), 0);
	expect_decide(&rx, NULL, 0, false, false, WAIT_ROOM, "linger, no room");
	expect_decide(&rx, NULL, 0, false, true, WAIT_ROOM, "expired, no room");
	arrive_n(&rx, 1, 3);
	expect_decide(&rx, NULL, 0, false, false, WAIT_ROOM, "2/3, no room");
	expect_decide(&rx, NULL, 0, true, false, SEND, "2/3, room");
}

/* The inline bit count every bitmap count goes through (base/bits.h)
 * against the compiler's: edges, single bits, and a pseudo-random walk. */
static void test_popcount(void **state)
{
	uint64_t x = 0x9e3779b97f4a7c15ull;

	(void)state;
	assert_int_equal(tr_popcount64(0), 0);
	assert_int_equal(tr_popcount64(UINT64_MAX), 64);
	for (unsigned i = 0; i < 64; i++) {
		assert_int_equal(tr_popcount64(1ull << i), 1);
		assert_int_equal(tr_popcount64(mask_of(i)), i);
		assert_int_equal(tr_popcount64(~(1ull << i)), 63);
	}
	for (int i = 0; i < 100000; i++) {
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		assert_int_equal(tr_popcount64(x), popc(x));
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_popcount),
		cmocka_unit_test(test_init_validation),
		cmocka_unit_test(test_nothing_before_first_bsm),
		cmocka_unit_test(test_transition_tables),
		cmocka_unit_test(test_transition_mixed_bsm),
		cmocka_unit_test(test_fig9_two_field),
		cmocka_unit_test(test_stale_empty_never_frees),
		cmocka_unit_test(test_rx_reports),
		cmocka_unit_test(test_rx_policy),
		cmocka_unit_test(test_priorities),
		cmocka_unit_test(test_lost_bsm_strands_nothing),
		cmocka_unit_test(test_lost_message_or_report_times_out),
		cmocka_unit_test(test_timer),
		cmocka_unit_test(test_timer_reliable),
		cmocka_unit_test(test_misuse),
		cmocka_unit_test(test_random_two_field),
		cmocka_unit_test(test_bsm_decide_nothing_due),
		cmocka_unit_test(test_bsm_decide_linger_and_force),
		cmocka_unit_test(test_bsm_decide_two_thirds),
		cmocka_unit_test(test_bsm_decide_urgent),
		cmocka_unit_test(test_bsm_decide_thresholds),
		cmocka_unit_test(test_bsm_decide_inflight),
		cmocka_unit_test(test_bsm_decide_room),
	};

	return cmocka_run_group_tests_name("fc", tests, NULL, NULL);
}
