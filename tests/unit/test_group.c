/* Unit tests for a broadcast group's ranks (lib/proto/group.[ch]):
 * validation with -EINVAL, translation both ways, the world's group. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "proto/group.h"

/* An odd-ranks group of a world of 8, seen from rank 5: group rank i is
 * world rank 2i + 1, both ways; even ranks are outside. */
static void test_odd_ranks(void **state)
{
	static const int ranks[] = { 1, 3, 5, 7 };
	struct tr_group_map m;

	(void)state;
	assert_int_equal(tr_group_map_init(&m, ranks, 4, 8, 5), 0);
	assert_int_equal(m.n, 4);
	assert_int_equal(m.me, 2);
	for (int i = 0; i < 4; i++) {
		assert_int_equal(m.world[i], 2 * i + 1);
		assert_int_equal(tr_group_index(&m, 2 * i + 1), i);
		assert_int_equal(tr_group_index(&m, 2 * i), -1);
	}
	assert_int_equal(tr_group_index(&m, -1), -1);
	assert_int_equal(tr_group_index(&m, 8), -1);
	tr_group_map_free(&m);
	assert_null(m.world);
	assert_null(m.index);
}

/* The order the caller gives is the group's order (an MPI communicator
 * whose ranks the split key reordered). */
static void test_order_kept(void **state)
{
	static const int ranks[] = { 6, 0, 3 };
	struct tr_group_map m;

	(void)state;
	assert_int_equal(tr_group_map_init(&m, ranks, 3, 7, 0), 0);
	assert_int_equal(m.me, 1);
	assert_int_equal(tr_group_index(&m, 6), 0);
	assert_int_equal(tr_group_index(&m, 0), 1);
	assert_int_equal(tr_group_index(&m, 3), 2);
	assert_int_equal(m.world[0], 6);
	tr_group_map_free(&m);
}

static void test_world(void **state)
{
	struct tr_group_map m;

	(void)state;
	assert_int_equal(tr_group_map_world(&m, 5, 4), 0);
	assert_int_equal(m.n, 5);
	assert_int_equal(m.me, 4);
	for (int i = 0; i < 5; i++) {
		assert_int_equal(m.world[i], i);
		assert_int_equal(tr_group_index(&m, i), i);
	}
	tr_group_map_free(&m);
	assert_int_equal(tr_group_map_world(&m, 0, 0), -EINVAL);
}

/* A lone member: a group of one (a broadcast in it moves nothing). */
static void test_one(void **state)
{
	static const int ranks[] = { 2 };
	struct tr_group_map m;

	(void)state;
	assert_int_equal(tr_group_map_init(&m, ranks, 1, 3, 2), 0);
	assert_int_equal(m.me, 0);
	assert_int_equal(tr_group_index(&m, 1), -1);
	tr_group_map_free(&m);
}

/* Every bad list is refused with -EINVAL and leaves the map as it was. */
static void test_invalid(void **state)
{
	static const int dup[] = { 0, 2, 0 }, out[] = { 0, 4 }, neg[] = { -1, 0 },
			 not_me[] = { 1, 2 }, all[] = { 0, 1, 2, 3 };
	struct tr_group_map m, before;

	(void)state;
	memset(&m, 0xa5, sizeof(m));
	before = m;
	assert_int_equal(tr_group_map_init(&m, dup, 3, 4, 0), -EINVAL);
	assert_int_equal(tr_group_map_init(&m, out, 2, 4, 0), -EINVAL);
	assert_int_equal(tr_group_map_init(&m, neg, 2, 4, 0), -EINVAL);
	assert_int_equal(tr_group_map_init(&m, not_me, 2, 4, 0), -EINVAL);
	assert_int_equal(tr_group_map_init(&m, NULL, 2, 4, 0), -EINVAL);
	assert_int_equal(tr_group_map_init(&m, all, 0, 4, 0), -EINVAL);
	assert_int_equal(tr_group_map_init(&m, all, -1, 4, 0), -EINVAL);
	assert_int_equal(tr_group_map_init(&m, all, 4, 3, 0), -EINVAL); /* more than the world */
	assert_int_equal(tr_group_map_init(&m, all, 4, 4, 4), -EINVAL); /* self not a rank */
	assert_int_equal(tr_group_map_init(NULL, all, 4, 4, 0), -EINVAL);
	assert_memory_equal(&m, &before, sizeof(m));
	/* The same lists but the fault: accepted. */
	assert_int_equal(tr_group_map_init(&m, all, 4, 4, 3), 0);
	tr_group_map_free(&m);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_odd_ranks),
		cmocka_unit_test(test_order_kept),
		cmocka_unit_test(test_world),
		cmocka_unit_test(test_one),
		cmocka_unit_test(test_invalid),
	};

	return cmocka_run_group_tests_name("group", tests, NULL, NULL);
}
