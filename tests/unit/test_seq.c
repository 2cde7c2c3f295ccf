/* Unit tests for per-peer sequence numbers (lib/proto/seq.[ch]). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "proto/seq.h"

#define NEW TR_SEQ_NEW
#define DUP TR_SEQ_DUPLICATE
#define FAR TR_SEQ_TOO_FAR

static void expect(struct tr_seq_rx *rx, uint32_t seq, enum tr_seq_verdict want)
{
	enum tr_seq_verdict got = tr_seq_rx_accept(rx, seq);

	if (got != want)
		fail_msg("seq %u (next %u): verdict %d, want %d", seq, rx->next, got, want);
}

static void test_init(void **state)
{
	struct tr_seq_rx rx;

	(void)state;
	memset(&rx, 0xff, sizeof(rx));
	tr_seq_rx_init(&rx, 1234);
	assert_int_equal(rx.next, 1234);
	assert_true(rx.above == 0);
}

static void test_in_order(void **state)
{
	struct tr_seq_rx rx;

	(void)state;
	tr_seq_rx_init(&rx, 100);
	for (uint32_t s = 100; s < 1100; s++) {
		expect(&rx, s, NEW);
		assert_int_equal(rx.next, s + 1);
		assert_true(rx.above == 0);
	}
}

static void test_duplicates(void **state)
{
	struct tr_seq_rx rx;

	(void)state;
	tr_seq_rx_init(&rx, 100);
	expect(&rx, 100, NEW);
	expect(&rx, 100, DUP);
	expect(&rx, 101, NEW);
	expect(&rx, 100, DUP);
	expect(&rx, 101, DUP);
	/* Everything before the first number counts as already received. */
	expect(&rx, 99, DUP);
	expect(&rx, 0, DUP);
	/* Serial arithmetic: up to 2^31 - 1 behind is "behind". */
	expect(&rx, 102u - 0x7fffffffu, DUP);
	/* Duplicates inside the window, ahead of next. */
	expect(&rx, 105, NEW);
	expect(&rx, 105, DUP);
	expect(&rx, 166, NEW); /* next + 64 */
	expect(&rx, 166, DUP);
	assert_int_equal(rx.next, 102);
	assert_true(rx.above == (1ull << 2 | 1ull << 63));
}

static void test_reorder(void **state)
{
	struct tr_seq_rx rx;

	(void)state;
	tr_seq_rx_init(&rx, 0);
	expect(&rx, 2, NEW);
	expect(&rx, 3, NEW);
	assert_int_equal(rx.next, 0);
	assert_true(rx.above == 0x6); /* bit i: next + 1 + i */
	expect(&rx, 2, DUP);
	expect(&rx, 0, NEW);
	assert_int_equal(rx.next, 1);
	assert_true(rx.above == 0x3);
	expect(&rx, 1, NEW);
	assert_int_equal(rx.next, 4);
	assert_true(rx.above == 0);
	expect(&rx, 3, DUP);

	/* Reverse order over the whole window. */
	tr_seq_rx_init(&rx, 1000);
	for (uint32_t s = 1000 + 64; s > 1000; s--)
		expect(&rx, s, NEW);
	assert_int_equal(rx.next, 1000);
	assert_true(rx.above == UINT64_MAX);
	expect(&rx, 1000 + 65, FAR);
	expect(&rx, 1000, NEW);
	assert_int_equal(rx.next, 1065);
	assert_true(rx.above == 0);
	for (uint32_t s = 1000; s < 1065; s++)
		expect(&rx, s, DUP);
	expect(&rx, 1065 + 64, NEW);
	expect(&rx, 1065 + 65, FAR);
}

static void test_too_far(void **state)
{
	struct tr_seq_rx rx, before;

	(void)state;
	tr_seq_rx_init(&rx, 10);
	expect(&rx, 10 + TR_SEQ_WINDOW, NEW);
	before = rx;
	expect(&rx, 10 + TR_SEQ_WINDOW + 1, FAR);
	expect(&rx, 10 + 1000, FAR);
	expect(&rx, 10 + 0x7fffffffu, FAR); /* the farthest that is still "ahead" */
	/* tr_seq_rx_fits says beforehand what accept would say about FAR. */
	assert_true(tr_seq_rx_fits(&rx, 10 + TR_SEQ_WINDOW));
	assert_false(tr_seq_rx_fits(&rx, 10 + TR_SEQ_WINDOW + 1));
	assert_false(tr_seq_rx_fits(&rx, 10 + 0x7fffffffu));
	assert_true(tr_seq_rx_fits(&rx, 9)); /* a duplicate is not too far */
	/* A number refused as too far leaves the state alone... */
	assert_int_equal(rx.next, before.next);
	assert_true(rx.above == before.above);
	/* ...and is accepted later, once the window has moved up to it. */
	for (uint32_t s = 10; s < 10 + TR_SEQ_WINDOW; s++)
		expect(&rx, s, NEW);
	assert_int_equal(rx.next, 10 + TR_SEQ_WINDOW + 1);
	expect(&rx, 10 + TR_SEQ_WINDOW + 1, NEW);
	expect(&rx, 10 + TR_SEQ_WINDOW + 2 + TR_SEQ_WINDOW, NEW);
	expect(&rx, 10 + TR_SEQ_WINDOW + 3 + TR_SEQ_WINDOW, FAR);
}

static void test_wrap(void **state)
{
	struct tr_seq_rx rx;

	(void)state;
	/* In order across 2^32. */
	tr_seq_rx_init(&rx, UINT32_MAX - 5);
	for (uint32_t i = 0, s = UINT32_MAX - 5; i < 20; i++, s++)
		expect(&rx, s, NEW);
	assert_int_equal(rx.next, 14);
	expect(&rx, UINT32_MAX, DUP);
	expect(&rx, 0, DUP);
	expect(&rx, 13, DUP);

	/* Reordered across 2^32. */
	tr_seq_rx_init(&rx, 0xfffffffeu);
	expect(&rx, 1, NEW); /* next + 3 */
	expect(&rx, 0xffffffffu, NEW);
	assert_int_equal(rx.next, 0xfffffffeu);
	assert_true(rx.above == 0x5);
	expect(&rx, 0, NEW);
	expect(&rx, 0xfffffffeu, NEW);
	assert_int_equal(rx.next, 2);
	assert_true(rx.above == 0);
	expect(&rx, 0xffffffffu, DUP);
	expect(&rx, 0xfffffffeu, DUP);
	expect(&rx, 2 + 64, NEW);
	expect(&rx, 2 + 65, FAR);

	/* The window itself straddles 2^32. */
	tr_seq_rx_init(&rx, 0xffffffe0u);
	expect(&rx, 0xffffffe0u + 64, NEW); /* = 0x20 */
	expect(&rx, 0x21, FAR);
	expect(&rx, 0xffffffdfu, DUP);
	assert_true(rx.above == 1ull << 63);
}

/* ---- randomised comparison with a reference model ------------------------------ */

static uint64_t rng_state = 0x243f6a8885a308d3ull;

static uint64_t rnd(void)
{
	uint64_t z = (rng_state += 0x9e3779b97f4a7c15ull);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

#define OPS 1000000
#define SPAN (OPS + 1024) /* logical numbers the model may mark as seen */

/* The model: the set of logical (unbounded) sequence numbers received so
 * far, everything below the first counting as received. */
struct model {
	uint64_t first;	 /* logical number of the first expected message */
	uint64_t lowest; /* lowest logical number not received */
	unsigned char *seen;
};

static int model_seen(const struct model *m, uint64_t l)
{
	if (l < m->first)
		return 1;
	return l - m->first < SPAN && m->seen[l - m->first];
}

static enum tr_seq_verdict model_accept(struct model *m, uint64_t l)
{
	if (model_seen(m, l))
		return DUP;
	if (l > m->lowest + TR_SEQ_WINDOW)
		return FAR;
	assert_true(l - m->first < SPAN);
	m->seen[l - m->first] = 1;
	while (model_seen(m, m->lowest))
		m->lowest++;
	return NEW;
}

static void run_model(uint32_t first32)
{
	/* Logical numbers start at 2^32 + first32 so that "behind" never underflows. */
	struct model m = { .first = (1ull << 32) + first32 };
	struct tr_seq_rx rx;
	unsigned long counts[3] = { 0, 0, 0 };

	m.lowest = m.first;
	m.seen = calloc(SPAN, 1);
	assert_non_null(m.seen);
	tr_seq_rx_init(&rx, first32);
	for (long op = 0; op < OPS; op++) {
		uint64_t r = rnd(), l;
		int64_t off;

		/* Mostly near the window, sometimes farther, rarely anywhere within
		 * +-2^31 (the receiver cannot tell farther numbers apart). */
		switch (r % 20) {
		case 0: off = (int64_t)(rnd() % 0xffffffffull) - 0x7fffffff; break;
		case 1: case 2: case 3: case 4: off = (int64_t)(rnd() % 401) - 200; break;
		default: off = (int64_t)(rnd() % 81) - 10; break;
		}
		l = m.lowest + (uint64_t)off;
		enum tr_seq_verdict want = model_accept(&m, l);
		enum tr_seq_verdict got = tr_seq_rx_accept(&rx, (uint32_t)l);

		if (got != want)
			fail_msg("op %ld: seq %u (offset %lld from lowest): verdict %d, model %d", op,
				 (uint32_t)l, (long long)off, got, want);
		counts[got]++;
		assert_int_equal(rx.next, (uint32_t)m.lowest);
		if (op % 997 == 0) {
			for (int i = 0; i < 64; i++)
				if (!!(rx.above >> i & 1) != model_seen(&m, m.lowest + 1 + (uint64_t)i))
					fail_msg("op %ld: bit %d of above disagrees with the model", op,
						 i);
		}
	}
	/* The run exercised every verdict and moved far (across 2^32 when asked). */
	assert_true(counts[NEW] > OPS / 10);
	assert_true(counts[DUP] > OPS / 10);
	assert_true(counts[FAR] > OPS / 50);
	assert_true(m.lowest - m.first > OPS / 10);
	free(m.seen);
}

static void test_random_against_model(void **state)
{
	(void)state;
	run_model(0);
}

static void test_random_against_model_wrapping(void **state)
{
	(void)state;
	/* Starts 50000 below 2^32: the 32-bit numbers wrap early in the run. */
	run_model(UINT32_MAX - 50000);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_init),
		cmocka_unit_test(test_in_order),
		cmocka_unit_test(test_duplicates),
		cmocka_unit_test(test_reorder),
		cmocka_unit_test(test_too_far),
		cmocka_unit_test(test_wrap),
		cmocka_unit_test(test_random_against_model),
		cmocka_unit_test(test_random_against_model_wrapping),
	};

	return cmocka_run_group_tests_name("seq", tests, NULL, NULL);
}
