/* Unit tests for cutting operations into chunks (lib/proto/chunk.h). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include <cmocka.h>

#include "proto/chunk.h"

#define KiB (1ull << 10)
#define MiB (1ull << 20)

typedef unsigned __int128 u128;

static uint64_t rng_state = 0x13198a2e03707344ull;

static uint64_t rnd(void)
{
	uint64_t z = (rng_state += 0x9e3779b97f4a7c15ull);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

/* Reference values in 128-bit arithmetic, which cannot overflow. */
static uint64_t ref_count(uint64_t len, uint64_t chunk)
{
	return (uint64_t)(((u128)len + chunk - 1) / chunk);
}

static uint64_t ref_len(uint64_t len, uint64_t chunk, uint64_t off)
{
	u128 end = (u128)off + chunk;

	if (off >= len)
		return 0;
	return (uint64_t)((end < len ? end : len) - off);
}

static int ref_range_ok(uint64_t size, uint64_t off, uint64_t len)
{
	return (u128)off + len <= size;
}

/* Walks every chunk of (len, chunk) and checks the definition:
 * chunk i covers [i * chunk, min(len, (i + 1) * chunk)). */
static void check_cut(uint64_t len, uint64_t chunk)
{
	uint64_t n = tr_chunk_count(len, chunk), sum = 0, off = 0, i;

	assert_true(n == ref_count(len, chunk));
	for (i = 0; i < n; i++, off += chunk) {
		uint64_t c = tr_chunk_len(len, chunk, off);

		assert_true(c > 0);
		assert_true(c <= chunk);
		if (i + 1 < n)
			assert_true(c == chunk);
		else
			assert_true(c == len - off);
		sum += c;
	}
	assert_true(sum == len);
	/* Past the last chunk there is nothing left. */
	assert_true(tr_chunk_len(len, chunk, len) == 0);
}

static void test_exact_division(void **state)
{
	(void)state;
	assert_true(tr_chunk_count(4 * MiB, MiB) == 4);
	assert_true(tr_chunk_len(4 * MiB, MiB, 0) == MiB);
	assert_true(tr_chunk_len(4 * MiB, MiB, 3 * MiB) == MiB);
	assert_true(tr_chunk_len(4 * MiB, MiB, 4 * MiB) == 0);
	assert_true(tr_chunk_count(4096, 4096) == 1);
	assert_true(tr_chunk_count(10, 1) == 10);
	check_cut(4 * MiB, MiB);
	check_cut(4096, 4096);
	check_cut(10, 1);
}

static void test_remainder(void **state)
{
	(void)state;
	assert_true(tr_chunk_count(4 * MiB + 1, MiB) == 5);
	assert_true(tr_chunk_len(4 * MiB + 1, MiB, 3 * MiB) == MiB);
	assert_true(tr_chunk_len(4 * MiB + 1, MiB, 4 * MiB) == 1);
	assert_true(tr_chunk_count(10, 3) == 4);
	assert_true(tr_chunk_len(10, 3, 9) == 1);
	assert_true(tr_chunk_count(5 * MiB - 1, MiB) == 5);
	assert_true(tr_chunk_len(5 * MiB - 1, MiB, 4 * MiB) == MiB - 1);
	check_cut(4 * MiB + 1, MiB);
	check_cut(10, 3);
	check_cut(5 * MiB - 1, MiB);
}

static void test_len_zero(void **state)
{
	(void)state;
	assert_true(tr_chunk_count(0, MiB) == 0);
	assert_true(tr_chunk_count(0, 1) == 0);
	assert_true(tr_chunk_len(0, MiB, 0) == 0);
	check_cut(0, MiB);
}

static void test_len_below_chunk(void **state)
{
	(void)state;
	assert_true(tr_chunk_count(1, MiB) == 1);
	assert_true(tr_chunk_len(1, MiB, 0) == 1);
	assert_true(tr_chunk_count(MiB - 1, MiB) == 1);
	assert_true(tr_chunk_len(MiB - 1, MiB, 0) == MiB - 1);
	assert_true(tr_chunk_len(100, UINT64_MAX, 0) == 100);
	assert_true(tr_chunk_count(100, UINT64_MAX) == 1);
	check_cut(1, MiB);
	check_cut(MiB - 1, MiB);
}

static void test_64mib_in_1mib_chunks(void **state)
{
	(void)state;
	assert_true(tr_chunk_count(64 * MiB, MiB) == 64);
	for (uint64_t i = 0; i < 64; i++)
		assert_true(tr_chunk_len(64 * MiB, MiB, i * MiB) == MiB);
	assert_true(tr_chunk_len(64 * MiB, MiB, 64 * MiB) == 0);
	/* An offset inside a chunk gives what is left up to one chunk. */
	assert_true(tr_chunk_len(64 * MiB, MiB, 63 * MiB + 4 * KiB) == MiB - 4 * KiB);
	assert_true(tr_chunk_len(64 * MiB, MiB, 10 * MiB + 1) == MiB);
	check_cut(64 * MiB, MiB);
	check_cut(64 * MiB, 64 * KiB);
	check_cut(64 * MiB + 123, MiB);
}

static void test_offset_beyond_len(void **state)
{
	(void)state;
	assert_true(tr_chunk_len(100, 10, 100) == 0);
	assert_true(tr_chunk_len(100, 10, 101) == 0);
	assert_true(tr_chunk_len(100, 10, UINT64_MAX) == 0);
}

static void test_huge_values(void **state)
{
	(void)state;
	assert_true(tr_chunk_count(UINT64_MAX, 1) == UINT64_MAX);
	assert_true(tr_chunk_count(UINT64_MAX, MiB) == (UINT64_MAX >> 20) + 1);
	assert_true(tr_chunk_count(UINT64_MAX, UINT64_MAX) == 1);
	assert_true(tr_chunk_count(UINT64_MAX - 1, UINT64_MAX) == 1);
	assert_true(tr_chunk_count(UINT64_MAX, 1ull << 63) == 2);
	assert_true(tr_chunk_count(1ull << 63, 1ull << 63) == 1);
	assert_true(tr_chunk_len(UINT64_MAX, MiB, UINT64_MAX - 5) == 5);
	assert_true(tr_chunk_len(UINT64_MAX, MiB, (UINT64_MAX >> 20) << 20) == MiB - 1);
	assert_true(tr_chunk_len(UINT64_MAX, MiB, ((UINT64_MAX >> 20) - 1) << 20) == MiB);
	assert_true(tr_chunk_len(UINT64_MAX, 1ull << 63, 1ull << 63) == (1ull << 63) - 1);
	assert_true(tr_chunk_len(UINT64_MAX, UINT64_MAX, 0) == UINT64_MAX);
	assert_true(tr_chunk_len(UINT64_MAX, UINT64_MAX, 1) == UINT64_MAX - 1);
	check_cut(UINT64_MAX, 1ull << 62);
	check_cut(UINT64_MAX, UINT64_MAX);
	check_cut(UINT64_MAX - 1, UINT64_MAX / 3);
}

static void test_range_ok(void **state)
{
	(void)state;
	assert_true(tr_range_ok(100, 0, 100));
	assert_true(tr_range_ok(100, 0, 0));
	assert_true(tr_range_ok(100, 100, 0));
	assert_true(tr_range_ok(100, 99, 1));
	assert_true(tr_range_ok(100, 50, 50));
	assert_false(tr_range_ok(100, 0, 101));
	assert_false(tr_range_ok(100, 101, 0));
	assert_false(tr_range_ok(100, 99, 2));
	assert_false(tr_range_ok(100, 50, 51));
	assert_true(tr_range_ok(0, 0, 0));
	assert_false(tr_range_ok(0, 0, 1));
	assert_false(tr_range_ok(0, 1, 0));
}

static void test_range_ok_no_overflow(void **state)
{
	(void)state;
	/* off + len wraps around: a naive "off + len <= size" would accept these. */
	assert_false(tr_range_ok(100, UINT64_MAX, 2));
	assert_false(tr_range_ok(100, 2, UINT64_MAX));
	assert_false(tr_range_ok(100, 1ull << 63, 1ull << 63));
	assert_false(tr_range_ok(UINT64_MAX, UINT64_MAX, 1));
	assert_false(tr_range_ok(UINT64_MAX, 1, UINT64_MAX));
	assert_false(tr_range_ok(UINT64_MAX - 1, UINT64_MAX, UINT64_MAX));
	assert_false(tr_range_ok(UINT64_MAX - 1, 0, UINT64_MAX));
	assert_true(tr_range_ok(UINT64_MAX, UINT64_MAX, 0));
	assert_true(tr_range_ok(UINT64_MAX, 0, UINT64_MAX));
	assert_true(tr_range_ok(UINT64_MAX, 1, UINT64_MAX - 1));
	assert_true(tr_range_ok(UINT64_MAX, 1ull << 63, (1ull << 63) - 1));
	assert_false(tr_range_ok(UINT64_MAX, 1ull << 63, 1ull << 63));
}

static void test_range_ok_exhaustive_small(void **state)
{
	(void)state;
	for (uint64_t size = 0; size < 24; size++)
		for (uint64_t off = 0; off < 24; off++)
			for (uint64_t len = 0; len < 24; len++)
				assert_int_equal(!!tr_range_ok(size, off, len),
						 ref_range_ok(size, off, len));
}

static void test_range_ok_random(void **state)
{
	static const uint64_t edges[] = { 0, 1, 2, 4095, 4096, 1ull << 32, 1ull << 63,
					  UINT64_MAX - 1, UINT64_MAX };
	(void)state;
	for (int i = 0; i < 1000000; i++) {
		uint64_t v[3];

		for (int k = 0; k < 3; k++) {
			switch (rnd() % 4) {
			case 0: v[k] = edges[rnd() % (sizeof(edges) / sizeof(edges[0]))]; break;
			case 1: v[k] = UINT64_MAX - rnd() % 1000; break;
			case 2: v[k] = rnd() % 1000; break;
			default: v[k] = rnd() >> (rnd() % 64); break;
			}
		}
		if (!!tr_range_ok(v[0], v[1], v[2]) != ref_range_ok(v[0], v[1], v[2]))
			fail_msg("tr_range_ok(%llu, %llu, %llu) is wrong", (unsigned long long)v[0],
				 (unsigned long long)v[1], (unsigned long long)v[2]);
	}
}

static void test_random_cuts(void **state)
{
	(void)state;
	/* Small operations: every (len, chunk) below 300 x 64. */
	for (uint64_t len = 0; len < 300; len++)
		for (uint64_t chunk = 1; chunk < 64; chunk++)
			check_cut(len, chunk);
	/* Random large operations cut into at most about 5000 chunks. */
	for (int i = 0; i < 2000; i++) {
		uint64_t len = rnd() >> (rnd() % 64);
		uint64_t chunk = len / (1 + rnd() % 5000) + rnd() % 64;

		if (chunk == 0)
			chunk = 1 + rnd() % 64;
		if (len / chunk > 10000)
			continue;
		check_cut(len, chunk);
	}
	/* tr_chunk_count and tr_chunk_len against the reference at random points. */
	for (int i = 0; i < 1000000; i++) {
		uint64_t len = rnd() >> (rnd() % 64), chunk = (rnd() >> (rnd() % 64)) | 1;
		uint64_t off = rnd() % 2 ? rnd() % (len + 1 ? len + 1 : len) : rnd();

		assert_true(tr_chunk_count(len, chunk) == ref_count(len, chunk));
		assert_true(tr_chunk_len(len, chunk, off) == ref_len(len, chunk, off));
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_exact_division),
		cmocka_unit_test(test_remainder),
		cmocka_unit_test(test_len_zero),
		cmocka_unit_test(test_len_below_chunk),
		cmocka_unit_test(test_64mib_in_1mib_chunks),
		cmocka_unit_test(test_offset_beyond_len),
		cmocka_unit_test(test_huge_values),
		cmocka_unit_test(test_range_ok),
		cmocka_unit_test(test_range_ok_no_overflow),
		cmocka_unit_test(test_range_ok_exhaustive_small),
		cmocka_unit_test(test_range_ok_random),
		cmocka_unit_test(test_random_cuts),
	};

	return cmocka_run_group_tests_name("chunk", tests, NULL, NULL);
}
