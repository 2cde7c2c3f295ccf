/* Unit tests for adaptive plane choice (lib/proto/choice.[ch]), following
 * the behaviours of docs/spec/adaptive-plane-choice.md and the rules of
 * ES2395955B2 (application examples 2 and 3) as lib/proto/choice.h states
 * them.  Every test asserts the exact plane, reason and post flag. */
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

#include "proto/choice.h"

/* Why a plane was chosen, for the messages. */
static const char *why_str(unsigned why)
{
	static const char *const names[TR_CHOICE_NWHY] = {
		"home", "hold", "spent", "occ", "cont", "both", "home_down", "no_room", "all_down",
	};

	return why < TR_CHOICE_NWHY ? names[why] : "?";
}

#define NONE TR_CHOICE_NONE
#define OCC TR_CHOICE_OCC
#define CSTAT TR_CHOICE_CONT_STATIC
#define CMEAN TR_CHOICE_CONT_MEAN

/* A live plane with room. */
#define UP(o, c) { .occ = (o), .cont = (c), .live = true, .room = true }
/* A live plane without room. */
#define FULL(o, c) { .occ = (o), .cont = (c), .live = true, .room = false }
/* A plane that is down (it may still report numbers: they must not count). */
#define DOWN(o, c) { .occ = (o), .cont = (c), .live = false, .room = true }

static struct tr_choice_cfg cfg_of(uint32_t t, uint32_t alpha_pct, uint32_t cont_t,
				   unsigned rules)
{
	struct tr_choice_cfg want = { .threshold = t, .alpha_pct = alpha_pct,
				      .cont_threshold = cont_t, .rules = rules };
	struct tr_choice_cfg cfg;

	assert_int_equal(tr_choice_cfg_init(&cfg, &want), 0);
	return cfg;
}

/* Decides for a fresh message of home (detoured as given) and checks the
 * whole answer, and that deciding changed none of its inputs. */
static void expect_at(const char *file, int line, const struct tr_choice_cfg *cfg,
		      const struct tr_choice_plane *planes, unsigned n, unsigned home,
		      bool detoured, int plane, enum tr_choice_why why, bool post)
{
	struct tr_choice_plane copy[TR_CHOICE_MAX_PLANES];
	struct tr_choice_msg m;
	struct tr_choice out;

	tr_choice_msg_init(&m, home);
	m.detoured = detoured;
	memcpy(copy, planes, n * sizeof(*planes));
	assert_int_equal(tr_choice_decide(cfg, planes, n, &m, &out), 0);
	if (out.plane != plane || out.why != why || out.post != post ||
	    out.detour != (plane != NONE && plane != (int)home))
		fail_msg("%s:%d: home %u: got plane %d why %s post %d detour %d, want plane %d why "
			 "%s post %d",
			 file, line, home, out.plane, why_str(out.why), out.post,
			 out.detour, plane, why_str(why), post);
	for (unsigned q = 0; q < n; q++) { /* unchanged (field by field: padding is not data) */
		assert_int_equal(copy[q].live, planes[q].live);
		assert_int_equal(copy[q].room, planes[q].room);
		assert_int_equal(copy[q].occ, planes[q].occ);
		assert_int_equal(copy[q].cont, planes[q].cont);
	}
	assert_int_equal(m.home, home);
	assert_int_equal(m.detoured, detoured);
}

#define expect(cfg, planes, n, home, plane, why, post)                                          \
	expect_at(__FILE__, __LINE__, cfg, planes, n, home, false, plane, why, post)
#define expect_spent(cfg, planes, n, home, plane, why, post)                                    \
	expect_at(__FILE__, __LINE__, cfg, planes, n, home, true, plane, why, post)

/* ---- configuration ----------------------------------------------------- */

static void test_cfg_defaults_and_validation(void **state)
{
	struct tr_choice_cfg cfg, want, before;
	struct tr_choice_plane pl[2] = { UP(0, 0), UP(0, 0) };
	struct tr_choice_msg m;
	struct tr_choice out = { .plane = 77 };

	(void)state;
	assert_int_equal(tr_choice_cfg_init(&cfg, NULL), 0);
	assert_int_equal(cfg.threshold, 8);
	assert_int_equal(cfg.alpha_pct, 50);
	assert_int_equal(cfg.cont_threshold, 16);
	assert_int_equal(cfg.rules, TR_CHOICE_OCC);

	/* Accepted boundaries. */
	want = (struct tr_choice_cfg){ 0, 1, 1, 0 };
	assert_int_equal(tr_choice_cfg_init(&cfg, &want), 0);
	assert_memory_equal(&cfg, &want, sizeof(cfg));
	want = (struct tr_choice_cfg){ UINT32_MAX, 100, UINT32_MAX, TR_CHOICE_RULES };
	assert_int_equal(tr_choice_cfg_init(&cfg, &want), 0);
	assert_memory_equal(&cfg, &want, sizeof(cfg));

	/* Refused, cfg untouched. */
	before = cfg;
	want = (struct tr_choice_cfg){ 8, 0, 16, OCC };
	assert_int_equal(tr_choice_cfg_init(&cfg, &want), -EINVAL);
	want.alpha_pct = 101;
	assert_int_equal(tr_choice_cfg_init(&cfg, &want), -EINVAL);
	want = (struct tr_choice_cfg){ 8, 50, 0, OCC };
	assert_int_equal(tr_choice_cfg_init(&cfg, &want), -EINVAL);
	want = (struct tr_choice_cfg){ 8, 50, 16, TR_CHOICE_RULES + 1 };
	assert_int_equal(tr_choice_cfg_init(&cfg, &want), -EINVAL);
	want.rules = 1u << 31;
	assert_int_equal(tr_choice_cfg_init(&cfg, &want), -EINVAL);
	assert_int_equal(tr_choice_cfg_init(NULL, NULL), -EINVAL);
	assert_memory_equal(&cfg, &before, sizeof(cfg));

	/* decide refuses a bad cfg, bad plane count or home; out untouched. */
	tr_choice_msg_init(&m, 0);
	assert_int_equal(tr_choice_decide(&want, pl, 2, &m, &out), -EINVAL);
	assert_int_equal(tr_choice_cfg_init(&cfg, NULL), 0);
	assert_int_equal(tr_choice_decide(&cfg, pl, 0, &m, &out), -EINVAL);
	assert_int_equal(tr_choice_decide(&cfg, pl, TR_CHOICE_MAX_PLANES + 1, &m, &out), -EINVAL);
	tr_choice_msg_init(&m, 2);
	assert_int_equal(tr_choice_decide(&cfg, pl, 2, &m, &out), -EINVAL);
	assert_int_equal(tr_choice_decide(&cfg, NULL, 2, &m, &out), -EINVAL);
	assert_int_equal(tr_choice_decide(&cfg, pl, 2, NULL, &out), -EINVAL);
	assert_int_equal(out.plane, 77);
	tr_choice_msg_init(&m, 1);
	assert_int_equal(tr_choice_decide(&cfg, pl, 2, &m, NULL), -EINVAL);
	assert_int_equal(tr_choice_decide(&cfg, pl, 2, &m, &out), 0);
	assert_int_equal(out.plane, 1);
}

/* ---- occupancy rule ---------------------------------------------------- */

/* Spec 1: up to T (occ[home] > T is the trigger, strictly) every message
 * uses its home plane, however empty the others are. */
static void test_threshold_exact_boundary(void **state)
{
	struct tr_choice_cfg cfg = cfg_of(8, 50, 16, OCC);
	struct tr_choice_plane pl[3] = { UP(8, 0), UP(0, 0), UP(0, 0) };

	(void)state;
	expect(&cfg, pl, 3, 0, 0, TR_CHOICE_WHY_HOME, true);
	pl[0].occ = 9;
	expect(&cfg, pl, 3, 0, 1, TR_CHOICE_WHY_OCC, true);
	pl[0].occ = 0;
	expect(&cfg, pl, 3, 0, 0, TR_CHOICE_WHY_HOME, true);

	/* T = 0: one queued unit is already above it. */
	cfg = cfg_of(0, 50, 16, OCC);
	pl[2].occ = 0;
	expect(&cfg, pl, 3, 2, 2, TR_CHOICE_WHY_HOME, true);
	pl[2].occ = 1;
	expect(&cfg, pl, 3, 2, 0, TR_CHOICE_WHY_OCC, true);

	/* T = UINT32_MAX: never above it. */
	cfg = cfg_of(UINT32_MAX, 50, 16, OCC);
	pl[0].occ = UINT32_MAX;
	expect(&cfg, pl, 3, 0, 0, TR_CHOICE_WHY_HOME, true);

	/* Below T, home without room waits there even if others are free. */
	cfg = cfg_of(8, 50, 16, OCC);
	pl[0] = (struct tr_choice_plane)FULL(8, 0);
	expect(&cfg, pl, 3, 0, 0, TR_CHOICE_WHY_HOME, false);
}

/* Spec 2: above T a detour must be strictly below alpha x occ[home]. */
static void test_alpha_exact_boundary(void **state)
{
	struct tr_choice_cfg cfg = cfg_of(8, 50, 16, OCC);
	struct tr_choice_plane pl[2] = { UP(10, 0), UP(5, 0) };

	(void)state;
	expect(&cfg, pl, 2, 0, 0, TR_CHOICE_WHY_HOLD, true); /* 5 = 0.5 x 10 */
	pl[1].occ = 4;
	expect(&cfg, pl, 2, 0, 1, TR_CHOICE_WHY_OCC, true);

	/* alpha 1: strictly less occupied is enough. */
	cfg = cfg_of(8, 100, 16, OCC);
	pl[1].occ = 10;
	expect(&cfg, pl, 2, 0, 0, TR_CHOICE_WHY_HOLD, true);
	pl[1].occ = 9;
	expect(&cfg, pl, 2, 0, 1, TR_CHOICE_WHY_OCC, true);

	/* alpha 0.33, occ[home] 9: limit 2.97, so 2 detours and 3 does not. */
	cfg = cfg_of(8, 33, 16, OCC);
	pl[0].occ = 9;
	pl[1].occ = 3;
	expect(&cfg, pl, 2, 0, 0, TR_CHOICE_WHY_HOLD, true);
	pl[1].occ = 2;
	expect(&cfg, pl, 2, 0, 1, TR_CHOICE_WHY_OCC, true);

	/* Large occupancies do not overflow the comparison. */
	cfg = cfg_of(8, 100, 16, OCC);
	pl[0].occ = UINT32_MAX;
	pl[1].occ = UINT32_MAX - 1;
	expect(&cfg, pl, 2, 0, 1, TR_CHOICE_WHY_OCC, true);
	pl[1].occ = UINT32_MAX;
	expect(&cfg, pl, 2, 0, 0, TR_CHOICE_WHY_HOLD, true);
}

/* Of the planes that qualify the least loaded is taken: lowest occ, then
 * lowest cont, then the first after home (mod nplanes). */
static void test_least_loaded_candidate(void **state)
{
	struct tr_choice_cfg cfg = cfg_of(8, 50, 16, OCC);
	struct tr_choice_plane pl[4] = { UP(3, 0), UP(20, 0), UP(2, 0), UP(4, 0) };

	(void)state;
	expect(&cfg, pl, 4, 1, 2, TR_CHOICE_WHY_OCC, true);
	pl[0].occ = 2;
	pl[0].cont = 1;
	expect(&cfg, pl, 4, 1, 2, TR_CHOICE_WHY_OCC, true); /* same occ, less cont */
	pl[0].cont = 0;
	pl[2].cont = 0;
	pl[3].occ = 2;
	expect(&cfg, pl, 4, 1, 2, TR_CHOICE_WHY_OCC, true); /* ties: 2 comes first after 1 */
	pl[2].occ = 3;
	expect(&cfg, pl, 4, 1, 3, TR_CHOICE_WHY_OCC, true); /* 3 before 0 after 1 */
}

/* With the occupancy rule alone (TRIAD_ADAPTIVE=occ, the default), the
 * contention input (triadd's weights in the data path) neither causes nor
 * stops a detour, whatever the threshold: over a grid of occupancies,
 * weights and thresholds, whether the message detours and why is what it
 * is with no weights; with two planes the plane too (with more, weights
 * order candidates of equal occupancy). */
static void test_occ_ignores_cont(void **state)
{
	static const uint32_t weights[] = { 0, 10, 50, 100 };

	(void)state;
	for (uint32_t t = 0; t <= 8; t += 8) {
		struct tr_choice_cfg cfg = cfg_of(t, 50, 16, OCC);

		for (unsigned n = 2; n <= 3; n++)
			for (uint32_t o = 0; o < 13 * 13 * 13; o++)
				for (uint32_t w = 0; w < 4 * 4 * 4; w++) {
					struct tr_choice_plane a[3], b[3];
					struct tr_choice_msg m;
					struct tr_choice x, y;

					for (unsigned q = 0; q < n; q++) {
						uint32_t occ = o / (q ? q == 1 ? 13 : 169 : 1) % 13;

						a[q] = (struct tr_choice_plane)UP(occ, 0);
						b[q] = a[q];
						b[q].cont = weights[w / (q ? q == 1 ? 4 : 16 : 1) % 4];
					}
					tr_choice_msg_init(&m, 0);
					assert_int_equal(tr_choice_decide(&cfg, a, n, &m, &x), 0);
					assert_int_equal(tr_choice_decide(&cfg, b, n, &m, &y), 0);
					if (x.detour != y.detour || x.why != y.why ||
					    (n == 2 && x.plane != y.plane))
						fail_msg("T %u, %u planes, occ %u %u %u: without weights "
							 "plane %d (%s), with weights %u %u %u plane %d (%s)",
							 t, n, a[0].occ, a[1].occ, n > 2 ? a[2].occ : 0,
							 x.plane, why_str(x.why), b[0].cont, b[1].cont,
							 n > 2 ? b[2].cont : 0, y.plane, why_str(y.why));
				}
	}
}

/* Never blocks on a detour: a plane that qualifies but has no room now is
 * passed over, and with no candidate the message stays on (and waits for)
 * its home.  Spec 5: all saturated, it waits on its home plane. */
static void test_never_blocks_on_detour(void **state)
{
	struct tr_choice_cfg cfg = cfg_of(8, 50, 16, OCC);
	struct tr_choice_plane pl[3] = { UP(20, 0), FULL(0, 0), UP(9, 0) };

	(void)state;
	expect(&cfg, pl, 3, 0, 2, TR_CHOICE_WHY_OCC, true); /* 1 is emptier but full */
	pl[2].room = false;
	expect(&cfg, pl, 3, 0, 0, TR_CHOICE_WHY_HOLD, true);
	pl[0].room = false; /* everything saturated: wait on home */
	expect(&cfg, pl, 3, 0, 0, TR_CHOICE_WHY_HOLD, false);
	pl[1].room = true; /* room comes back on a detour: take it */
	expect(&cfg, pl, 3, 0, 1, TR_CHOICE_WHY_OCC, true);
}

/* ---- contention rules -------------------------------------------------- */

static void test_contention_static_threshold(void **state)
{
	struct tr_choice_cfg cfg = cfg_of(8, 50, 3, CSTAT);
	struct tr_choice_plane pl[3] = { UP(5, 0), UP(5, 3), UP(6, 0) };

	(void)state;
	expect(&cfg, pl, 3, 1, 1, TR_CHOICE_WHY_HOME, true); /* 3 is not above 3 */
	pl[1].cont = 4;
	/* Occupancy plays no part in the trigger nor in alpha: 5 vs 5. */
	expect(&cfg, pl, 3, 1, 0, TR_CHOICE_WHY_CONT, true);
	pl[1].occ = 0;
	expect(&cfg, pl, 3, 1, 0, TR_CHOICE_WHY_CONT, true);
	/* No room anywhere else: home. */
	pl[0].room = false;
	pl[2].live = false;
	expect(&cfg, pl, 3, 1, 1, TR_CHOICE_WHY_HOLD, true);
	/* The other planes' counters do not matter to the static rule. */
	pl[0] = (struct tr_choice_plane)UP(5, 100);
	expect(&cfg, pl, 3, 1, 0, TR_CHOICE_WHY_CONT, true);
}

/* Home above the mean over all planes: cont[home] x n > sum(cont). */
static void test_contention_mean(void **state)
{
	struct tr_choice_cfg cfg = cfg_of(8, 50, 16, CMEAN);
	struct tr_choice_plane pl[4] = { UP(1, 3), UP(1, 1), UP(0, 5), UP(1, 3) };

	(void)state;
	expect(&cfg, pl, 4, 0, 0, TR_CHOICE_WHY_HOME, true); /* 3 = mean 12/4 */
	pl[2].cont = 4;						 /* mean 11/4 < 3 */
	expect(&cfg, pl, 4, 0, 2, TR_CHOICE_WHY_CONT, true);
	/* All equal: nobody is above the mean. */
	for (unsigned p = 0; p < 4; p++)
		pl[p].cont = 7;
	for (unsigned h = 0; h < 4; h++)
		expect(&cfg, pl, 4, h, (int)h, TR_CHOICE_WHY_HOME, true);
	/* A single plane is never above its own mean. */
	expect(&cfg, pl, 1, 0, 0, TR_CHOICE_WHY_HOME, true);
	/* Every plane's counter counts in the mean, a dead one's too: home 4,
	 * others 0 0 and a dead 9: mean 13/4 < 4. */
	pl[0].cont = 4;
	pl[1].cont = 0;
	pl[2].cont = 0;
	pl[3] = (struct tr_choice_plane)DOWN(0, 9);
	expect(&cfg, pl, 4, 0, 2, TR_CHOICE_WHY_CONT, true);
	pl[3].cont = 12; /* mean 16/4 = 4: not above */
	expect(&cfg, pl, 4, 0, 0, TR_CHOICE_WHY_HOME, true);
}

/* Combined rules: every enabled trigger must hold, and with OCC enabled
 * the candidate must meet alpha. */
static void test_combined_rules(void **state)
{
	struct tr_choice_cfg cfg = cfg_of(8, 50, 3, OCC | CMEAN);
	struct tr_choice_plane pl[2] = { UP(9, 4), UP(4, 0) };

	(void)state;
	expect(&cfg, pl, 2, 0, 1, TR_CHOICE_WHY_BOTH, true);
	pl[0].occ = 8; /* occupancy trigger fails */
	expect(&cfg, pl, 2, 0, 0, TR_CHOICE_WHY_HOME, true);
	pl[0].occ = 9;
	pl[1].cont = 4; /* contention at the mean */
	expect(&cfg, pl, 2, 0, 0, TR_CHOICE_WHY_HOME, true);
	pl[1].cont = 0;
	pl[1].occ = 5; /* both triggers, but 5 is not below 4.5 */
	expect(&cfg, pl, 2, 0, 0, TR_CHOICE_WHY_HOLD, true);

	/* With the static threshold instead. */
	cfg = cfg_of(8, 50, 3, OCC | CSTAT);
	pl[1].occ = 4;
	expect(&cfg, pl, 2, 0, 1, TR_CHOICE_WHY_BOTH, true);
	pl[0].cont = 3;
	expect(&cfg, pl, 2, 0, 0, TR_CHOICE_WHY_HOME, true);

	/* Both contention variants: above the threshold and the mean. */
	cfg = cfg_of(8, 50, 3, CSTAT | CMEAN);
	pl[0] = (struct tr_choice_plane)UP(0, 4);
	pl[1] = (struct tr_choice_plane)UP(0, 5);
	expect(&cfg, pl, 2, 0, 0, TR_CHOICE_WHY_HOME, true); /* above 3, not the mean */
	pl[1].cont = 3;
	expect(&cfg, pl, 2, 0, 1, TR_CHOICE_WHY_CONT, true);

	/* No rules: the home plane always, as today. */
	cfg = cfg_of(0, 1, 1, 0);
	pl[0] = (struct tr_choice_plane)UP(1000, 1000);
	pl[1] = (struct tr_choice_plane)UP(0, 0);
	expect(&cfg, pl, 2, 0, 0, TR_CHOICE_WHY_HOME, true);
}

/* ---- the message over time --------------------------------------------- */

/* Spec 3: the decision is remade on every pass from the current inputs; a
 * queued message goes back to its home once it drains. */
static void test_redecided_every_pass(void **state)
{
	struct tr_choice_cfg cfg = cfg_of(8, 50, 3, OCC | CSTAT);
	struct tr_choice_plane pl[2] = { UP(0, 0), UP(0, 0) };
	struct tr_choice_msg m;
	struct tr_choice a, b;

	(void)state;
	tr_choice_msg_init(&m, 0);
	for (unsigned i = 0; i < 5; i++)
		assert_int_equal(tr_choice_queued(pl, 2, 0), 0);
	pl[0].occ = 20;
	assert_int_equal(tr_choice_decide(&cfg, pl, 2, &m, &a), 0);
	assert_int_equal(a.plane, 1);
	assert_int_equal(a.why, TR_CHOICE_WHY_BOTH);
	/* Same inputs, same answer. */
	assert_int_equal(tr_choice_decide(&cfg, pl, 2, &m, &b), 0);
	assert_int_equal(b.plane, a.plane);
	assert_int_equal(b.why, a.why);
	assert_int_equal(b.detour, a.detour);
	assert_int_equal(b.post, a.post);
	/* The message was not posted (the caller's pass ended); the detour
	 * got busier meanwhile: back home. */
	pl[1].occ = 10;
	assert_int_equal(tr_choice_decide(&cfg, pl, 2, &m, &b), 0);
	assert_int_equal(b.plane, 0);
	assert_int_equal(b.why, TR_CHOICE_WHY_HOLD);
	pl[1].occ = 0;
	/* Home drains below T. */
	pl[0].occ = 8;
	assert_int_equal(tr_choice_decide(&cfg, pl, 2, &m, &b), 0);
	assert_int_equal(b.plane, 0);
	assert_int_equal(b.why, TR_CHOICE_WHY_HOME);
	/* Busy again, then the other messages finish: contention 1, home. */
	pl[0].occ = 20;
	assert_int_equal(tr_choice_decide(&cfg, pl, 2, &m, &b), 0);
	assert_int_equal(b.plane, 1);
	for (unsigned i = 0; i < 4; i++)
		assert_int_equal(tr_choice_done(pl, 2, 0), 0);
	assert_int_equal(tr_choice_decide(&cfg, pl, 2, &m, &b), 0);
	assert_int_equal(b.plane, 0);
	assert_int_equal(b.why, TR_CHOICE_WHY_HOME);
	assert_false(m.detoured);
}

/* At most one detour: once posted off its home the message never detours
 * again, whatever the congestion; posted on its home it still may. */
static void test_at_most_one_detour(void **state)
{
	struct tr_choice_cfg cfg = cfg_of(8, 50, 16, OCC);
	struct tr_choice_plane pl[3] = { UP(100, 0), UP(0, 0), UP(0, 0) };
	struct tr_choice_msg m;
	struct tr_choice out;

	(void)state;
	tr_choice_msg_init(&m, 0);
	tr_choice_posted(&m, 0); /* on home: no detour spent */
	assert_false(m.detoured);
	assert_int_equal(tr_choice_decide(&cfg, pl, 3, &m, &out), 0);
	assert_int_equal(out.plane, 1);
	tr_choice_posted(&m, 1); /* flushed from 1 later and queued again */
	assert_true(m.detoured);
	assert_int_equal(m.home, 0);
	assert_int_equal(tr_choice_decide(&cfg, pl, 3, &m, &out), 0);
	assert_int_equal(out.plane, 0);
	assert_int_equal(out.why, TR_CHOICE_WHY_SPENT);
	assert_true(out.post);
	assert_false(out.detour);
	tr_choice_posted(&m, 0);
	assert_true(m.detoured); /* going home does not give it back */

	expect_spent(&cfg, pl, 3, 0, 0, TR_CHOICE_WHY_SPENT, true);
	pl[0].room = false;
	expect_spent(&cfg, pl, 3, 0, 0, TR_CHOICE_WHY_SPENT, false);
	/* Home down and the detour spent: none (failover's business). */
	pl[0].live = false;
	expect_spent(&cfg, pl, 3, 0, NONE, TR_CHOICE_WHY_SPENT, false);
}

/* ---- planes that are down ---------------------------------------------- */

static void test_dead_planes_never_chosen(void **state)
{
	struct tr_choice_cfg cfg = cfg_of(8, 50, 3, OCC);
	struct tr_choice_plane pl[4] = { UP(30, 9), DOWN(0, 0), DOWN(0, 0), UP(2, 0) };
	uint32_t x = 12345;

	(void)state;
	expect(&cfg, pl, 4, 0, 3, TR_CHOICE_WHY_OCC, true);
	pl[3].live = false;
	expect(&cfg, pl, 4, 0, 0, TR_CHOICE_WHY_HOLD, true);

	/* Every rule set over many random inputs: never a dead plane, a
	 * detour always postable, never a detour with it spent. */
	for (unsigned it = 0; it < 200000; it++) {
		struct tr_choice_plane r[TR_CHOICE_MAX_PLANES];
		struct tr_choice_msg m;
		struct tr_choice out;
		unsigned n, bits;

		x = x * 1103515245u + 12345u;
		bits = x >> 8;
		n = 1 + bits % TR_CHOICE_MAX_PLANES;
		cfg = cfg_of(bits >> 3 & 7, 1 + (bits >> 6) % 100, 1 + (bits >> 13 & 3),
			     bits >> 15 & 7);
		for (unsigned p = 0; p < n; p++) {
			x = x * 1103515245u + 12345u;
			r[p] = (struct tr_choice_plane){ .occ = x >> 8 & 15, .cont = x >> 12 & 7,
							 .live = x >> 16 & 1, .room = x >> 17 & 1 };
		}
		tr_choice_msg_init(&m, (x >> 20) % n);
		m.detoured = x >> 24 & 1;
		assert_int_equal(tr_choice_decide(&cfg, r, n, &m, &out), 0);
		if (out.plane == NONE) {
			assert_false(out.post);
			assert_false(out.detour);
			assert_false(r[m.home].live);
			continue;
		}
		assert_true(out.plane >= 0 && (unsigned)out.plane < n);
		assert_true(r[out.plane].live);
		assert_int_equal(out.detour, (unsigned)out.plane != m.home);
		if (out.detour) {
			assert_true(r[out.plane].room);
			assert_true(out.post);
			assert_false(m.detoured);
		} else {
			assert_int_equal(out.post, r[m.home].room);
		}
		if (out.detour && r[m.home].live && (cfg.rules & OCC))
			assert_true((uint64_t)r[out.plane].occ * 100 <
				    (uint64_t)cfg.alpha_pct * r[m.home].occ);
	}
}

/* Home down: any live plane with room, least loaded, with no threshold or
 * alpha (and under every rule set, none included). */
static void test_home_down_takes_detour(void **state)
{
	static const unsigned rule_sets[] = { 0, OCC, CSTAT, CMEAN, OCC | CMEAN, TR_CHOICE_RULES };
	struct tr_choice_plane pl[3] = { DOWN(0, 0), UP(7, 2), UP(6, 9) };

	(void)state;
	for (unsigned i = 0; i < sizeof(rule_sets) / sizeof(rule_sets[0]); i++) {
		struct tr_choice_cfg cfg = cfg_of(8, 50, 16, rule_sets[i]);

		pl[1].room = pl[2].room = true;
		expect(&cfg, pl, 3, 0, 2, TR_CHOICE_WHY_HOME_DOWN, true);
		pl[2].room = false;
		expect(&cfg, pl, 3, 0, 1, TR_CHOICE_WHY_HOME_DOWN, true);
		/* Live planes but no room now: none, wait, decide again. */
		pl[1].room = false;
		expect(&cfg, pl, 3, 0, NONE, TR_CHOICE_WHY_NO_ROOM, false);
	}
}

static void test_all_down_none(void **state)
{
	struct tr_choice_cfg cfg = cfg_of(8, 50, 16, TR_CHOICE_RULES);
	struct tr_choice_plane pl[3] = { DOWN(0, 0), DOWN(0, 0), DOWN(0, 0) };

	(void)state;
	for (unsigned h = 0; h < 3; h++)
		expect(&cfg, pl, 3, h, NONE, TR_CHOICE_WHY_ALL_DOWN, false);
	expect(&cfg, pl, 1, 0, NONE, TR_CHOICE_WHY_ALL_DOWN, false);
	/* One plane, up: always home, even far above T (nowhere to go) and
	 * above the static contention threshold; never above its own mean. */
	pl[0] = (struct tr_choice_plane)UP(1000, 1000);
	expect(&cfg, pl, 1, 0, 0, TR_CHOICE_WHY_HOME, true);
	cfg = cfg_of(8, 50, 16, OCC | CSTAT);
	expect(&cfg, pl, 1, 0, 0, TR_CHOICE_WHY_HOLD, true);
}

/* Spec 4: the counters go up once per queued message and down once per
 * finished one, whatever the outcome, back to zero; misuse is refused. */
static void test_contention_counters(void **state)
{
	struct tr_choice_plane pl[3] = { UP(0, 0), UP(0, 0), UP(0, 0) };

	(void)state;
	for (unsigned i = 0; i < 30; i++)
		assert_int_equal(tr_choice_queued(pl, 3, i % 3), 0);
	assert_int_equal(pl[0].cont, 10);
	assert_int_equal(pl[1].cont, 10);
	assert_int_equal(pl[2].cont, 10);
	/* Completions, errors and flushes all end in done(home). */
	for (unsigned i = 0; i < 30; i++)
		assert_int_equal(tr_choice_done(pl, 3, i % 3), 0);
	for (unsigned p = 0; p < 3; p++)
		assert_int_equal(pl[p].cont, 0);
	assert_int_equal(tr_choice_done(pl, 3, 1), -ERANGE);
	assert_int_equal(pl[1].cont, 0);
	assert_int_equal(tr_choice_queued(pl, 3, 3), -EINVAL);
	assert_int_equal(tr_choice_done(pl, 3, 3), -EINVAL);
	assert_int_equal(tr_choice_queued(pl, TR_CHOICE_MAX_PLANES + 1, 0), -EINVAL);
	assert_int_equal(tr_choice_queued(NULL, 3, 0), -EINVAL);
	pl[2].cont = UINT32_MAX;
	assert_int_equal(tr_choice_queued(pl, 3, 2), -EOVERFLOW);
	assert_int_equal(pl[2].cont, UINT32_MAX);
	for (unsigned p = 0; p < 2; p++)
		assert_int_equal(pl[p].cont, 0);
}

/* ---- simulation -------------------------------------------------------- */

#define SIM_P 4
#define SIM_N 2000
#define SIM_CAP 16 /* a lane has room while fewer are in flight */

struct sim {
	struct tr_choice_plane pl[SIM_P];
	struct tr_choice_msg queue[SIM_N];
	unsigned nqueued;
	uint8_t inflight[SIM_P][SIM_CAP]; /* home of each message in flight, FIFO */
	unsigned ninflight[SIM_P];
	unsigned sent[SIM_P];		  /* messages posted on each plane */
	unsigned detours;
	unsigned steps;
};

/* Every step: 4 messages arrive (homes 0, 1, 2, 3 in turn); each plane
 * completes rate[p] messages every period[p] steps; then one scheduler
 * pass decides for every queued message, in order, posting where told.
 * A plane's occupancy is what it has in flight plus bg[p], traffic to
 * other peers, held constant. */
static void sim_run(struct sim *s, const struct tr_choice_cfg *cfg, const unsigned rate[SIM_P],
		    const unsigned period[SIM_P], const unsigned bg[SIM_P])
{
	unsigned arrived = 0, finished = 0;

	memset(s, 0, sizeof(*s));
	for (unsigned p = 0; p < SIM_P; p++)
		s->pl[p].live = true;
	while (finished < SIM_N) {
		unsigned keep = 0;

		assert_true(++s->steps < 100000);
		for (unsigned i = 0; i < SIM_P && arrived < SIM_N; i++, arrived++) {
			tr_choice_msg_init(&s->queue[s->nqueued++], arrived % SIM_P);
			assert_int_equal(tr_choice_queued(s->pl, SIM_P, arrived % SIM_P), 0);
		}
		for (unsigned p = 0; p < SIM_P; p++) {
			if (s->steps % period[p])
				continue;
			for (unsigned k = 0; k < rate[p] && s->ninflight[p]; k++) {
				assert_int_equal(tr_choice_done(s->pl, SIM_P, s->inflight[p][0]), 0);
				memmove(&s->inflight[p][0], &s->inflight[p][1], --s->ninflight[p]);
				finished++;
			}
		}
		for (unsigned q = 0; q < s->nqueued; q++) {
			struct tr_choice_msg *m = &s->queue[q];
			struct tr_choice out;

			for (unsigned p = 0; p < SIM_P; p++) {
				s->pl[p].occ = s->ninflight[p] + bg[p];
				s->pl[p].room = s->ninflight[p] < SIM_CAP;
			}
			assert_int_equal(tr_choice_decide(cfg, s->pl, SIM_P, m, &out), 0);
			assert_true(out.plane >= 0);
			if (!out.post) {
				s->queue[keep++] = *m;
				continue;
			}
			tr_choice_posted(m, (unsigned)out.plane);
			s->inflight[out.plane][s->ninflight[out.plane]++] = m->home;
			s->sent[out.plane]++;
			s->detours += out.detour;
		}
		s->nqueued = keep;
	}
	for (unsigned p = 0; p < SIM_P; p++)
		assert_int_equal(s->pl[p].cont, 0);
	assert_int_equal(s->sent[0] + s->sent[1] + s->sent[2] + s->sent[3], SIM_N);
}

static const unsigned sim_rules[] = { OCC, CSTAT, CMEAN, OCC | CSTAT, OCC | CMEAN };

/* No congestion: every plane keeps up, every message takes its home plane,
 * under every rule set. */
static void test_sim_no_congestion_all_home(void **state)
{
	static const unsigned rate[SIM_P] = { 2, 2, 2, 2 }, period[SIM_P] = { 1, 1, 1, 1 },
			      bg[SIM_P] = { 0, 0, 0, 0 };
	struct sim *s = malloc(sizeof(*s));

	(void)state;
	assert_non_null(s);
	for (unsigned i = 0; i < sizeof(sim_rules) / sizeof(sim_rules[0]); i++) {
		struct tr_choice_cfg cfg = cfg_of(8, 50, 16, sim_rules[i]);

		sim_run(s, &cfg, rate, period, bg);
		assert_int_equal(s->detours, 0);
		for (unsigned p = 0; p < SIM_P; p++)
			assert_int_equal(s->sent[p], SIM_N / SIM_P);
	}
	free(s);
}

/* Plane 1 congested: it completes one message every 4 steps where the
 * others complete 2 a step, and its occupancy is held 20 higher by
 * traffic to other peers.  It must get measurably fewer messages than
 * each of the others: under half of the fewest the others get. */
static void test_sim_congested_plane_avoided(void **state)
{
	static const unsigned rate[SIM_P] = { 2, 1, 2, 2 }, period[SIM_P] = { 1, 4, 1, 1 },
			      bg[SIM_P] = { 0, 20, 0, 0 };
	struct sim *s = malloc(sizeof(*s));

	(void)state;
	assert_non_null(s);
	for (unsigned i = 0; i < sizeof(sim_rules) / sizeof(sim_rules[0]); i++) {
		struct tr_choice_cfg cfg = cfg_of(8, 50, 16, sim_rules[i]);
		unsigned fewest = SIM_N;

		sim_run(s, &cfg, rate, period, bg);
		for (unsigned p = 0; p < SIM_P; p++)
			if (p != 1 && s->sent[p] < fewest)
				fewest = s->sent[p];
		print_message("rules %u: sent %u %u %u %u, detours %u, steps %u\n", sim_rules[i],
			      s->sent[0], s->sent[1], s->sent[2], s->sent[3], s->detours, s->steps);
		assert_true(s->sent[1] * 2 < fewest);
		assert_true(s->detours > 0);
	}

	/* Without adaptive choice every message stays home: plane 1 gets its
	 * full quarter (and the run takes far longer). */
	{
		struct tr_choice_cfg cfg = cfg_of(8, 50, 16, 0);

		sim_run(s, &cfg, rate, period, bg);
		assert_int_equal(s->detours, 0);
		assert_int_equal(s->sent[1], SIM_N / SIM_P);
	}
	free(s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_cfg_defaults_and_validation),
		cmocka_unit_test(test_threshold_exact_boundary),
		cmocka_unit_test(test_alpha_exact_boundary),
		cmocka_unit_test(test_least_loaded_candidate),
		cmocka_unit_test(test_occ_ignores_cont),
		cmocka_unit_test(test_never_blocks_on_detour),
		cmocka_unit_test(test_contention_static_threshold),
		cmocka_unit_test(test_contention_mean),
		cmocka_unit_test(test_combined_rules),
		cmocka_unit_test(test_redecided_every_pass),
		cmocka_unit_test(test_at_most_one_detour),
		cmocka_unit_test(test_dead_planes_never_chosen),
		cmocka_unit_test(test_home_down_takes_detour),
		cmocka_unit_test(test_all_down_none),
		cmocka_unit_test(test_contention_counters),
		cmocka_unit_test(test_sim_no_congestion_all_home),
		cmocka_unit_test(test_sim_congested_plane_avoided),
	};

	return cmocka_run_group_tests_name("choice", tests, NULL, NULL);
}
