/* Unit tests for the plane switch (lib/proto/plane_switch.[ch]): the
 * choice of plane per nominal plane, the alternates, and every plane event,
 * after docs/spec/plane-switching.md, and the part of JP5310735B2's worked
 * example (Figs. 6A to 6E) that does not need ordered messages.  The
 * message stream under faults is model-checked in test_stream.c. */
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

#include "proto/plane_switch.h"

#define NOP TR_PSW_NO_PLANE
#define X 'x' /* in a map: UNREACHABLE */

static struct tr_psw mk(unsigned planes)
{
	struct tr_psw sw;

	assert_int_equal(tr_psw_init(&sw, planes), 0);
	return sw;
}

/* The plane each nominal plane maps to now, as digits ('x': none). */
static void check_map(const struct tr_psw *sw, const char *want)
{
	assert_int_equal(strlen(want), sw->nplanes);
	for (unsigned p = 0; p < sw->nplanes; p++) {
		unsigned plane = 12345;
		int r = tr_psw_unordered(sw, p, &plane);
		char got = r == TR_PSW_POST ? (char)('0' + plane) : r == TR_PSW_UNREACHABLE ? X : '?';

		if (r == TR_PSW_UNREACHABLE)
			assert_int_equal(plane, 12345);
		if (got != want[p])
			fail_msg("nominal plane %u: plane %c, want %c", p, got, want[p]);
	}
}

static void check_alts(const struct tr_psw *sw, const unsigned *want)
{
	for (unsigned p = 0; p < sw->nplanes; p++)
		if (sw->alt[p] != want[p])
			fail_msg("alt[%u] = %u, want %u", p, sw->alt[p], want[p]);
}

static void test_init(void **state)
{
	struct tr_psw sw, before;
	static const unsigned alts4[] = { 1, 2, 3, 0 };

	(void)state;
	memset(&sw, 0xa5, sizeof(sw));
	assert_int_equal(tr_psw_init(&sw, 4), 0);
	check_map(&sw, "0123");
	check_alts(&sw, alts4); /* (p + 1) mod P */
	for (unsigned k = 0; k < 4; k++)
		assert_true(tr_psw_usable(&sw, k));
	assert_false(tr_psw_usable(&sw, 4));
	assert_false(tr_psw_usable(&sw, ~0u));

	assert_int_equal(tr_psw_init(&sw, 1), 0);
	assert_int_equal(sw.alt[0], NOP); /* one plane: nowhere to go */
	check_map(&sw, "0");
	assert_int_equal(tr_psw_init(&sw, TR_PSW_MAX_PLANES), 0);
	assert_int_equal(sw.alt[TR_PSW_MAX_PLANES - 1], 0);
	assert_int_equal(TR_PSW_MAX_PLANES, TRIAD_MAX_PLANES);

	before = sw;
	assert_int_equal(tr_psw_init(&sw, 0), -EINVAL);
	assert_int_equal(tr_psw_init(&sw, TR_PSW_MAX_PLANES + 1), -EINVAL);
	assert_memory_equal(&sw, &before, sizeof(sw));
}

/* A usable nominal plane maps to itself, one out of use to its alternate;
 * asking changes nothing. */
static void test_choice(void **state)
{
	struct tr_psw sw = mk(3), before;
	unsigned plane;

	(void)state;
	check_map(&sw, "012");
	assert_int_equal(tr_psw_drain(&sw, 1), TR_PSW_NONE);
	before = sw;
	for (int i = 0; i < 3; i++)
		check_map(&sw, "022");
	assert_memory_equal(&sw, &before, sizeof(sw));
	assert_int_equal(tr_psw_restore(&sw, 1), TR_PSW_NONE);
	check_map(&sw, "012");
	plane = 77;
	assert_int_equal(tr_psw_unordered(&sw, 3, &plane), -EINVAL);
	assert_int_equal(plane, 77);
}

static void test_drain_transitions(void **state)
{
	struct tr_psw sw = mk(4), before;

	(void)state;
	/* Out: alt[p] the next usable plane. */
	assert_int_equal(tr_psw_drain(&sw, 1), TR_PSW_NONE);
	check_map(&sw, "0223");
	assert_int_equal(sw.alt[1], 2);
	assert_false(tr_psw_usable(&sw, 1));
	/* Again: nothing changes. */
	before = sw;
	assert_int_equal(tr_psw_drain(&sw, 1), TR_PSW_NONE);
	assert_memory_equal(&sw, &before, sizeof(sw));
	/* An entry's alternate goes out: the next usable plane after it. */
	assert_int_equal(tr_psw_drain(&sw, 2), TR_PSW_NONE);
	check_map(&sw, "0333");
	check_alts(&sw, (const unsigned[]){ 1, 3, 3, 0 });
	/* A plane coming back does not take an entry from an alternate that
	 * still works (sticky): 1 back and out again would pick 2 now, but 2
	 * coming back leaves nominal 1 on 3. */
	assert_int_equal(tr_psw_restore(&sw, 2), TR_PSW_NONE);
	check_map(&sw, "0323");
	assert_int_equal(sw.alt[1], 3);
	/* Leaving again chooses afresh: the first usable plane after p. */
	tr_psw_restore(&sw, 1);
	check_map(&sw, "0123");
	tr_psw_drain(&sw, 1);
	check_map(&sw, "0223");
	/* (An entry in use does not use its alt: 2 keeps its old one.) */
	check_alts(&sw, (const unsigned[]){ 1, 2, 3, 0 });
	tr_psw_drain(&sw, 3);
	check_map(&sw, "0220");
	check_alts(&sw, (const unsigned[]){ 1, 2, 3, 0 });
	tr_psw_drain(&sw, 2);
	check_map(&sw, "0000");
	check_alts(&sw, (const unsigned[]){ 1, 0, 0, 0 });
	/* The last usable plane cannot be drained. */
	before = sw;
	assert_int_equal(tr_psw_drain(&sw, 0), -EBUSY);
	assert_memory_equal(&sw, &before, sizeof(sw));
	assert_int_equal(tr_psw_drain(&sw, 4), -EINVAL);
	assert_memory_equal(&sw, &before, sizeof(sw));
}

static void test_fault_transitions(void **state)
{
	struct tr_psw sw = mk(3), before;
	unsigned plane = 77;

	(void)state;
	/* A fault: like a drain. */
	assert_int_equal(tr_psw_fault(&sw, 2, &plane), TR_PSW_NONE);
	assert_int_equal(plane, 77);
	check_map(&sw, "010");
	assert_int_equal(sw.alt[2], 0);
	/* Again, or of a drained plane: nothing changes. */
	before = sw;
	assert_int_equal(tr_psw_fault(&sw, 2, &plane), TR_PSW_NONE);
	assert_memory_equal(&sw, &before, sizeof(sw));
	tr_psw_drain(&sw, 1);
	before = sw;
	assert_int_equal(tr_psw_fault(&sw, 1, &plane), TR_PSW_NONE);
	assert_memory_equal(&sw, &before, sizeof(sw));
	assert_int_equal(tr_psw_fault(&sw, 3, &plane), -EINVAL);
	assert_memory_equal(&sw, &before, sizeof(sw));
	assert_int_equal(plane, 77);
	check_map(&sw, "000");
	/* Unlike a drain, a fault takes the last usable plane too. */
	assert_int_equal(tr_psw_drain(&sw, 0), -EBUSY);
	assert_int_equal(tr_psw_fault(&sw, 0, NULL), TR_PSW_UNREACHABLE);
	check_map(&sw, "xxx");
}

/* A second fault while switched picks the next live plane; any number of
 * planes may fail while one lives; with none, everything fails until one
 * comes back. */
static void test_second_fault_and_none_left(void **state)
{
	struct tr_psw sw = mk(4);
	unsigned plane = 0;

	(void)state;
	assert_int_equal(tr_psw_fault(&sw, 1, &plane), TR_PSW_NONE);
	check_map(&sw, "0223");
	/* The alternate fails: the next live plane. */
	assert_int_equal(tr_psw_fault(&sw, 2, &plane), TR_PSW_NONE);
	check_map(&sw, "0333");
	check_alts(&sw, (const unsigned[]){ 1, 3, 3, 0 });
	/* And the next: 0 is all that lives. */
	assert_int_equal(tr_psw_fault(&sw, 3, &plane), TR_PSW_NONE);
	check_map(&sw, "0000");
	check_alts(&sw, (const unsigned[]){ 1, 0, 0, 0 });
	/* None left. */
	assert_int_equal(tr_psw_fault(&sw, 0, &plane), TR_PSW_UNREACHABLE);
	check_map(&sw, "xxxx");
	check_alts(&sw, (const unsigned[]){ NOP, NOP, NOP, NOP });
	assert_int_equal(tr_psw_fault(&sw, 0, &plane), TR_PSW_UNREACHABLE);
	/* One comes back: every entry finds it. */
	assert_int_equal(tr_psw_restore(&sw, 2), TR_PSW_NONE);
	check_map(&sw, "2222");
	check_alts(&sw, (const unsigned[]){ 2, 2, NOP, 2 });
	/* The next one back takes over only its own nominal plane. */
	assert_int_equal(tr_psw_restore(&sw, 0), TR_PSW_NONE);
	check_map(&sw, "0222");
}

static void test_restore_transitions(void **state)
{
	struct tr_psw sw = mk(3), before;

	(void)state;
	/* A drain called off: home again. */
	tr_psw_drain(&sw, 0);
	check_map(&sw, "112");
	assert_int_equal(tr_psw_restore(&sw, 0), TR_PSW_NONE);
	check_map(&sw, "012");
	/* A faulted plane repaired: home again. */
	tr_psw_fault(&sw, 1, NULL);
	check_map(&sw, "022");
	assert_int_equal(tr_psw_restore(&sw, 1), TR_PSW_NONE);
	check_map(&sw, "012");
	assert_true(tr_psw_usable(&sw, 1));
	/* Restoring a usable plane changes nothing. */
	before = sw;
	assert_int_equal(tr_psw_restore(&sw, 1), TR_PSW_NONE);
	assert_memory_equal(&sw, &before, sizeof(sw));
	assert_int_equal(tr_psw_restore(&sw, 3), -EINVAL);
	assert_memory_equal(&sw, &before, sizeof(sw));
}

/* ---- JP5310735B2, Figs. 6A to 6E ------------------------------------------- */

/* The patent's inter-plane crossbar 105: four input ports 301 to 304 (from
 * processors 113 to 116: our four sources, each with its own switch) and
 * four output ports 305 to 308 (network planes 101 to 104: our planes 0 to
 * 3).  Each source has a switch-state register per output port and a
 * switch-destination register ((port + 1) mod 4).  Output port 306 (plane
 * 1, network plane 102) is the one that fails and comes back.
 *
 * What is left of the example is the choice for unordered packets: the
 * register of a port out of use holds 1 (SWITCH_PENDING) and sends them
 * to the switch destination.  Its ordered packets (605 finishing its
 * message on plane 102 after the fault, 607 and 609 moving a register to 2
 * and from 3 to 0, 610 finishing on the alternate after the repair, and
 * the in-progress registers 312 to 324) are the ordered half, which triad
 * does not have: order is kept at the receiver by sequence number. */
static void check_crossbar(struct tr_psw src[4], const char *map)
{
	for (unsigned s = 0; s < 4; s++) {
		check_map(&src[s], map);
		for (unsigned p = 0; p < 4; p++)
			assert_int_equal(src[s].alt[p], (p + 1) % 4);
	}
}

static void test_patent_figs_6a_to_6e(void **state)
{
	struct tr_psw src[4];

	(void)state;
	for (unsigned s = 0; s < 4; s++)
		src[s] = mk(4);

	/* Fig. 6A: just before network plane 102 fails.  Every switch-state
	 * register holds 0: each port's packets take its own plane. */
	check_crossbar(src, "0123");

	/* Fig. 6B: just after the fault (announced while the plane still
	 * carries what is in progress: a drain).  In every source, the
	 * register of output port 306 (601 to 604) holds 1: its packets take
	 * the switch destination, number 2 (608): network plane 103. */
	for (unsigned s = 0; s < 4; s++)
		assert_int_equal(tr_psw_drain(&src[s], 1), TR_PSW_NONE);
	for (unsigned s = 0; s < 4; s++)
		assert_false(tr_psw_usable(&src[s], 1));
	check_crossbar(src, "0223");

	/* Fig. 6D: plane 102 comes back.  Without ordered messages nothing
	 * needs to finish on the alternate: port 306's packets take plane 102
	 * again at once. */
	for (unsigned s = 0; s < 4; s++)
		assert_int_equal(tr_psw_restore(&src[s], 1), TR_PSW_NONE);
	check_crossbar(src, "0123");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_init),
		cmocka_unit_test(test_choice),
		cmocka_unit_test(test_drain_transitions),
		cmocka_unit_test(test_fault_transitions),
		cmocka_unit_test(test_second_fault_and_none_left),
		cmocka_unit_test(test_restore_transitions),
		cmocka_unit_test(test_patent_figs_6a_to_6e),
	};

	return cmocka_run_group_tests_name("plane", tests, NULL, NULL);
}
