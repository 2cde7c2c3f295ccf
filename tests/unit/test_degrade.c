/* Unit tests for lib/ctl/degrade: which counters are evidence, the
 * scores from one period's evidence, and the rule over sequences of
 * periods (degrade after degrade_ms bad, restore after the hold clean,
 * a plane bad again on its probation degraded at its second bad period
 * with its hold doubled, the last plane in use never degraded, no
 * flapping). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "ctl/degrade.h"

#define MS 1000000ull

static void test_counter_kinds(void **state)
{
	static const struct {
		const char *name;
		enum tr_ctl_dgr_kind kind;
	} t[] = {
		{ "sent_pkts", TR_CTL_DGR_PKTS },	     { "rcvd_pkts", TR_CTL_DGR_PKTS },
		{ "port_xmit_packets", TR_CTL_DGR_PKTS },    { "port_rcv_packets", TR_CTL_DGR_PKTS },
		{ "completer_retry_err", TR_CTL_DGR_ERRS },  { "duplicate_request", TR_CTL_DGR_ERRS },
		{ "out_of_seq_request", TR_CTL_DGR_ERRS },   { "rcvd_seq_err", TR_CTL_DGR_ERRS },
		{ "rcvd_rnr_err", TR_CTL_DGR_ERRS },	     { "send_rnr_err", TR_CTL_DGR_ERRS },
		{ "retry_exceeded_err", TR_CTL_DGR_ERRS },   { "local_ack_timeout_err", TR_CTL_DGR_ERRS },
		{ "np_cnp_sent", TR_CTL_DGR_ERRS },	     { "rdma_sends", TR_CTL_DGR_OTHER },
		{ "ack_deferred", TR_CTL_DGR_OTHER },	     { "link_downed", TR_CTL_DGR_OTHER },
		{ "lifespan", TR_CTL_DGR_OTHER },	     { "", TR_CTL_DGR_OTHER },
		{ "sent_pkts2", TR_CTL_DGR_OTHER },
	};

	(void)state;
	for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
		if (tr_ctl_dgr_counter_kind(t[i].name) != t[i].kind)
			fail_msg("counter '%s': kind %d, want %d", t[i].name,
				 tr_ctl_dgr_counter_kind(t[i].name), t[i].kind);
	}
}

/* Scores of two planes from one period's evidence. */
static void test_scores(void **state)
{
	static const struct {
		const char *what;
		uint32_t latency_ratio;
		struct tr_ctl_dgr_sample s[2];
		uint32_t want[2];
	} t[] = {
		{ "clean", 8, { { 1000, 0, 0, 0 }, { 1000, 0, 0, 0 } }, { 0, 0 } },
		{ "errors at the threshold", 8, { { 1000, 0, 0, 0 }, { 1000, 10, 0, 0 } }, { 0, 50 } },
		{ "half the threshold", 8, { { 1000, 0, 0, 0 }, { 2000, 10, 0, 0 } }, { 0, 25 } },
		{ "capped", 8, { { 1000, 0, 0, 0 }, { 1000, 900, 0, 0 } }, { 0, 100 } },
		{ "too few packets: no evidence", 8, { { 99, 50, 0, 0 }, { 0, 7, 0, 0 } },
		  { TR_CTL_DGR_UNKNOWN, TR_CTL_DGR_UNKNOWN } },
		{ "the same latency", 8,
		  { { 0, 0, 1000000, 10 }, { 0, 0, 1000000, 10 } }, { 6, 6 } },
		{ "ten times slower", 8,
		  { { 0, 0, 1000000, 10 }, { 0, 0, 100000, 10 } }, { 0, 62 } },
		{ "eighty times slower", 8,
		  { { 0, 0, 1000000, 10 }, { 0, 0, 100000, 80 } }, { 0, 100 } },
		{ "stuck: in flight, nothing sent", 8,
		  { { 0, 0, 1000000, 0 }, { 0, 0, 0, 10 } }, { TR_CTL_DGR_UNKNOWN, 100 } },
		{ "light load: no latency evidence", 8,
		  { { 0, 0, 1000000, 0 }, { 0, 0, 10, 3 } },
		  { TR_CTL_DGR_UNKNOWN, TR_CTL_DGR_UNKNOWN } },
		{ "no other plane carried traffic", 8,
		  { { 0, 0, 0, 0 }, { 0, 0, 0, 10 } }, { TR_CTL_DGR_UNKNOWN, TR_CTL_DGR_UNKNOWN } },
		{ "latency unused", 0,
		  { { 100, 0, 1000000, 10 }, { 100, 0, 100, 80 } }, { 0, 0 } },
		{ "the larger of the two", 8,
		  { { 1000, 0, 1000000, 10 }, { 1000, 5, 100000, 10 } }, { 0, 62 } },
	};

	(void)state;
	for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
		struct tr_ctl_dgr_cfg c;
		uint32_t got[2];

		tr_ctl_dgr_cfg_default(&c);
		c.latency_ratio = t[i].latency_ratio;
		tr_ctl_dgr_score(&c, t[i].s, 2, got);
		if (got[0] != t[i].want[0] || got[1] != t[i].want[1])
			fail_msg("%s: scores %u %u, want %u %u", t[i].what, got[0], got[1],
				 t[i].want[0], t[i].want[1]);
	}
	assert_int_equal(tr_ctl_dgr_weight(0), 0);
	assert_int_equal(tr_ctl_dgr_weight(9), 0);
	assert_int_equal(tr_ctl_dgr_weight(55), 50);
	assert_int_equal(tr_ctl_dgr_weight(100), 100);
	assert_int_equal(tr_ctl_dgr_weight(1000), 100);
}

/* A sequence of periods, 1 s apart from t = 1 s: per period one letter,
 *   B bad (score 100), b bad but the last plane in use (may not degrade),
 *   M between (30: neither bad nor clean), C clean (0), U no evidence,
 *   F forgotten (someone else moved it; then clean)
 * and the steps wanted: D degrade, R restore, . nothing. */
static void run(const struct tr_ctl_dgr_cfg *c, const char *what, const char *in,
		const char *want, uint32_t want_hold)
{
	struct tr_ctl_dgr s;
	char got[512];
	size_t n = strlen(in);

	assert_true(n < sizeof(got) && strlen(want) == n);
	tr_ctl_dgr_init(&s, c);
	for (size_t i = 0; i < n; i++) {
		uint64_t now = (i + 1) * 1000 * MS;
		uint32_t score = in[i] == 'B' || in[i] == 'b' ? 100
				 : in[i] == 'M'		    ? 30
				 : in[i] == 'U'		    ? TR_CTL_DGR_UNKNOWN
							    : 0;

		if (in[i] == 'F')
			tr_ctl_dgr_forget(&s, now);
		switch (tr_ctl_dgr_step(c, &s, score, in[i] != 'b', now)) {
		case TR_CTL_DGR_DEGRADE: got[i] = 'D'; break;
		case TR_CTL_DGR_RESTORE: got[i] = 'R'; break;
		default: got[i] = '.'; break;
		}
		if (score != TR_CTL_DGR_UNKNOWN)
			assert_int_equal(s.score, score);
	}
	got[n] = '\0';
	if (strcmp(got, want))
		fail_msg("%s:\n  in   %s\n  got  %s\n  want %s", what, in, got, want);
	if (want_hold && s.hold_ms != want_hold)
		fail_msg("%s: hold %u ms, want %u", what, s.hold_ms, want_hold);
}

static void test_rule(void **state)
{
	struct tr_ctl_dgr_cfg c;
	/* degrade_ms 3000, restore_ms 5000, restore_max_ms 20000 */
	static const struct {
		const char *what, *in, *want;
		uint32_t hold;
	} t[] = {
		{ "bad for degrade_ms", "BBBB", "...D", 5000 },
		{ "not yet", "BBB", "...", 0 },
		{ "a clean period breaks it", "BBCBBBB", "......D", 0 },
		{ "between neither starts nor breaks a run", "BBBMBBB", "....D..", 5000 },
		{ "between alone is not bad", "MMMMMMM", ".......", 0 },
		{ "no evidence neither starts nor breaks a run", "BUUBB", "...D.", 5000 },
		{ "no evidence alone is not bad", "UUUUUU", "......", 0 },
		{ "degraded: no evidence is clean", "BBBBUUUUUU", "...D.....R", 5000 },
		{ "restored after the hold clean", "BBBBCCCCCC", "...D.....R", 5000 },
		{ "between breaks the clean run", "BBBBCCMCCCCCC", "...D........R", 5000 },
		{ "the last plane in use is never degraded", "bbbbbbbb", "........", 0 },
		{ "degraded once another plane is in use", "bbbbB", "....D", 0 },
		{ "the last plane, then clean", "bbbbC", ".....", 0 },
		{ "a plane mended stays", "BBBBCCCCCCCCCCCCCCCCCCCCCCCCCC",
		  "...D.....R....................", 5000 },
		/* Bad again within twice its hold of the restore (on
		 * probation): degraded at its second bad period, and the hold
		 * doubles, 5 -> 10 -> 20 -> 20 s (restore_max_ms). */
		{ "the fault stays: two periods per probation, the hold doubles",
		  "BBBB" "CCCCCC" "BB" "CCCCCCCCCCC" "BB" "CCCCCCCCCCCCCCCCCCCCC" "BB",
		  "...D" ".....R" ".D" "..........R" ".D" "....................R" ".D", 20000 },
		{ "on probation, one bad period is not enough", "BBBBCCCCCCBCCC",
		  "...D.....R....", 5000 },
		{ "on probation, no evidence then bad", "BBBBCCCCCCUUBUB", "...D.....R....D",
		  10000 },
		{ "on probation, the last plane in use: degraded once another is", "BBBBCCCCCCbbB",
		  "...D.....R..D", 10000 },
		/* Bad again long after the restore: the hold is restore_ms. */
		{ "a new fault later: degrade_ms again, the hold starts over",
		  "BBBB" "CCCCCC" "BB" "CCCCCCCCCCC" "CCCCCCCCCCCCCCCCCCCCC" "BBBB",
		  "...D" ".....R" ".D" "..........R" "....................." "...D", 5000 },
		/* Someone else restored it: on probation from then on. */
		{ "forgotten, bad again at once: probation", "BBBBCFBB", "...D...D", 10000 },
		{ "forgotten, bad long after: degrade_ms", "BBBBCF" "CCCCCCCCCC" "BBBB",
		  "...D.." ".........." "...D", 5000 },
	};

	(void)state;
	tr_ctl_dgr_cfg_default(&c);
	c.degrade_ms = 3000;
	c.restore_ms = 5000;
	c.restore_max_ms = 20000;
	for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++)
		run(&c, t[i].what, t[i].in, t[i].want, t[i].hold);
	c.enabled = 0;
	run(&c, "disabled: scores only", "BBBBBBBBBB", "..........", 0);
	c.enabled = 1;
	c.degrade_ms = 0;
	run(&c, "degrade_ms 0: the first bad period", "CB", ".D", 5000);
}

/* No flapping: a plane whose fault never goes (bad whenever it carries
 * traffic, clean while degraded, as it carries none) over an hour of 1 s
 * periods changes state at most twice per hold once the hold reached
 * restore_max_ms, and is in use degrade_ms + 1 period at first, then two
 * periods per probation. */
static void test_no_flap(void **state)
{
	struct tr_ctl_dgr_cfg c;
	struct tr_ctl_dgr s;
	unsigned changes = 0, in_use = 0, last_restore = 0, min_gap = ~0u;

	(void)state;
	tr_ctl_dgr_cfg_default(&c);
	c.degrade_ms = 3000;
	c.restore_ms = 10000;
	c.restore_max_ms = 160000;
	tr_ctl_dgr_init(&s, &c);
	for (unsigned t = 1; t <= 3600; t++) {
		enum tr_ctl_dgr_step st =
			tr_ctl_dgr_step(&c, &s, s.degraded ? 0 : 100, 1, (uint64_t)t * 1000 * MS);

		in_use += !s.degraded;
		if (st == TR_CTL_DGR_RESTORE) {
			if (last_restore && t - last_restore < min_gap && t > 600)
				min_gap = t - last_restore;
			last_restore = t;
		}
		changes += st != TR_CTL_DGR_STAY;
	}
	/* 10, 20, 40, 80 s holds and then 160 s: 4 s in use before the
	 * first degradation, then 2 s per probation. */
	assert_true(changes <= 2 * (4 + 3600 / 160 + 1));
	if (in_use > 4 + 2 * (changes / 2))
		fail_msg("in use %u s of the hour over %u restores", in_use, changes / 2);
	assert_true(min_gap >= 160);
	assert_int_equal(s.hold_ms, 160000);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_counter_kinds),
		cmocka_unit_test(test_scores),
		cmocka_unit_test(test_rule),
		cmocka_unit_test(test_no_flap),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
