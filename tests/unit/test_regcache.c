/* Unit tests of the registration cache's interval and LRU logic
 * (lib/core/regcache.h).  The registration callback records what it was
 * asked, so every test checks what was registered and deregistered, and
 * that everything registered was deregistered in the end. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include <cmocka.h>

#include "core/regcache.h"

#define PG 4096u

struct fake {
	int regs, deregs, live, fail;
	uintptr_t last_addr;
	size_t last_len;
};

struct handle {
	uintptr_t addr;
	size_t len;
};

static void *fake_reg(void *arg, uintptr_t addr, size_t len)
{
	struct fake *f = arg;
	struct handle *h;

	if (f->fail)
		return NULL;
	h = malloc(sizeof(*h));
	assert_non_null(h);
	h->addr = addr;
	h->len = len;
	f->regs++;
	f->live++;
	f->last_addr = addr;
	f->last_len = len;
	return h;
}

static void fake_dereg(void *arg, void *handle)
{
	struct fake *f = arg;

	f->deregs++;
	f->live--;
	free(handle);
}

static const struct tr_rc_ops ops = { fake_reg, fake_dereg };

static const void *at(uintptr_t a)
{
	return (const void *)a;
}

/* A hit reuses the registration; a range is rounded to whole pages. */
static void test_hit_and_pages(void **state)
{
	struct fake f = { 0 };
	struct tr_regcache rc;
	struct tr_rc_entry *a, *b;

	(void)state;
	tr_rc_init(&rc, 1 << 20, &ops, &f);
	a = tr_rc_get(&rc, at(0x10010), 100);
	assert_non_null(a);
	assert_int_equal(f.last_addr, 0x10000);
	assert_int_equal(f.last_len, PG);
	b = tr_rc_get(&rc, at(0x10800), 0x800); /* same page */
	assert_ptr_equal(a, b);
	assert_int_equal(f.regs, 1);
	assert_int_equal(rc.hits, 1);
	assert_int_equal(rc.misses, 1);
	tr_rc_put(&rc, a);
	tr_rc_put(&rc, b);
	assert_int_equal(f.deregs, 0); /* cached, not in use */
	tr_rc_fini(&rc);
	assert_int_equal(f.live, 0);
}

/* A miss that touches cached entries registers the union and retires them. */
static void test_merge(void **state)
{
	struct fake f = { 0 };
	struct tr_regcache rc;
	struct tr_rc_entry *a, *b, *c;

	(void)state;
	tr_rc_init(&rc, 1 << 20, &ops, &f);
	a = tr_rc_get(&rc, at(0x10000), PG);
	b = tr_rc_get(&rc, at(0x13000), PG);
	tr_rc_put(&rc, a);
	tr_rc_put(&rc, b);
	assert_int_equal(rc.n, 2);
	c = tr_rc_get(&rc, at(0x10800), 3 * PG); /* [0x10000, 0x14000) */
	assert_int_equal(f.last_addr, 0x10000);
	assert_int_equal(f.last_len, 4 * PG);
	assert_int_equal(rc.n, 1);
	assert_int_equal(f.deregs, 2);
	assert_int_equal(rc.bytes, 4 * PG);
	/* Both old ranges now hit the merged entry. */
	assert_ptr_equal(tr_rc_get(&rc, at(0x13000), 16), c);
	tr_rc_put(&rc, c);
	tr_rc_put(&rc, c);
	tr_rc_fini(&rc);
	assert_int_equal(f.live, 0);
}

/* An entry in use is retired from the index but deregistered only when
 * its last user lets go. */
static void test_merge_in_use(void **state)
{
	struct fake f = { 0 };
	struct tr_regcache rc;
	struct tr_rc_entry *a, *c;

	(void)state;
	tr_rc_init(&rc, 1 << 20, &ops, &f);
	a = tr_rc_get(&rc, at(0x20000), PG);
	c = tr_rc_get(&rc, at(0x1f000), 3 * PG);
	assert_ptr_not_equal(a, c);
	assert_int_equal(f.deregs, 0);
	assert_int_equal(rc.n, 1);
	assert_int_equal(rc.bytes, 4 * PG); /* both registered */
	tr_rc_put(&rc, a);
	assert_int_equal(f.deregs, 1);
	assert_int_equal(rc.bytes, 3 * PG);
	tr_rc_put(&rc, c);
	tr_rc_fini(&rc);
	assert_int_equal(f.live, 0);
}

/* Over the cap, unused entries go least recently used first; used ones stay. */
static void test_lru(void **state)
{
	struct fake f = { 0 };
	struct tr_regcache rc;
	struct tr_rc_entry *e[4];

	(void)state;
	tr_rc_init(&rc, 3 * PG, &ops, &f);
	for (int i = 0; i < 3; i++)
		e[i] = tr_rc_get(&rc, at(0x100000 + (uintptr_t)i * 0x10000), PG);
	for (int i = 0; i < 3; i++)
		tr_rc_put(&rc, e[i]);
	/* Touch 0 so that 1 is the least recently used. */
	tr_rc_put(&rc, tr_rc_get(&rc, at(0x100000), 8));
	e[3] = tr_rc_get(&rc, at(0x200000), PG);
	assert_int_equal(rc.evictions, 1);
	assert_int_equal(rc.n, 3);
	assert_int_equal(rc.misses, 4);
	/* 0 and 2 still hit, 1 is gone. */
	tr_rc_put(&rc, tr_rc_get(&rc, at(0x100000), 8));
	tr_rc_put(&rc, tr_rc_get(&rc, at(0x120000), 8));
	assert_int_equal(rc.misses, 4);
	tr_rc_put(&rc, e[3]);
	tr_rc_put(&rc, tr_rc_get(&rc, at(0x110000), 8));
	assert_int_equal(rc.misses, 5);
	assert_true(rc.bytes <= rc.cap);
	tr_rc_fini(&rc);
	assert_int_equal(f.live, 0);
}

/* Entries in use are never evicted, even over the cap; once they are let
 * go, the cap holds again. */
static void test_cap_in_use(void **state)
{
	struct fake f = { 0 };
	struct tr_regcache rc;
	struct tr_rc_entry *a, *b;

	(void)state;
	tr_rc_init(&rc, PG, &ops, &f);
	a = tr_rc_get(&rc, at(0x100000), PG);
	b = tr_rc_get(&rc, at(0x200000), PG);
	assert_int_equal(f.deregs, 0);
	assert_int_equal(rc.bytes, 2 * PG);
	tr_rc_put(&rc, a);
	assert_int_equal(f.deregs, 1);
	assert_int_equal(rc.bytes, PG);
	tr_rc_put(&rc, b);
	tr_rc_fini(&rc);
	assert_int_equal(f.live, 0);
}

/* Larger than the whole cache: registered for its user only. */
static void test_too_large(void **state)
{
	struct fake f = { 0 };
	struct tr_regcache rc;
	struct tr_rc_entry *a;

	(void)state;
	tr_rc_init(&rc, 2 * PG, &ops, &f);
	a = tr_rc_get(&rc, at(0x100000), 3 * PG);
	assert_non_null(a);
	assert_int_equal(rc.n, 0);
	tr_rc_put(&rc, a);
	assert_int_equal(f.deregs, 1);
	assert_int_equal(rc.bytes, 0);
	tr_rc_fini(&rc);
}

/* Invalidation drops what overlaps, in use or not, and nothing else. */
static void test_invalidate(void **state)
{
	struct fake f = { 0 };
	struct tr_regcache rc;
	struct tr_rc_entry *a, *b, *c;

	(void)state;
	tr_rc_init(&rc, 1 << 20, &ops, &f);
	a = tr_rc_get(&rc, at(0x100000), PG);
	b = tr_rc_get(&rc, at(0x110000), PG);
	c = tr_rc_get(&rc, at(0x120000), PG);
	tr_rc_put(&rc, a);
	tr_rc_put(&rc, c);
	/* [0x100fff, 0x110001) touches a and b (in use), not c. */
	assert_int_equal(tr_rc_invalidate(&rc, at(0x100fff), 0xf002), 2);
	assert_int_equal(f.deregs, 1);
	assert_int_equal(rc.n, 1);
	tr_rc_put(&rc, b);
	assert_int_equal(f.deregs, 2);
	assert_int_equal(tr_rc_invalidate(&rc, at(0x130000), PG), 0);
	/* After the invalidation the same range registers anew. */
	tr_rc_put(&rc, tr_rc_get(&rc, at(0x100000), 8));
	assert_int_equal(f.regs, 4);
	tr_rc_fini(&rc);
	assert_int_equal(f.live, 0);
}

static void test_reg_fails(void **state)
{
	struct fake f = { .fail = 1 };
	struct tr_regcache rc;

	(void)state;
	tr_rc_init(&rc, 1 << 20, &ops, &f);
	assert_null(tr_rc_get(&rc, at(0x100000), 8));
	assert_int_equal(rc.n, 0);
	assert_int_equal(rc.bytes, 0);
	tr_rc_fini(&rc);
}

/* Random gets, puts and invalidations against a model: the index stays
 * sorted and disjoint, every held entry covers what it was asked for, the
 * cap holds whenever nothing is in use, nothing leaks. */
static uint64_t rng = 0x243f6a8885a308d3ull;

static uint64_t rnd(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}

static void check_index(const struct tr_regcache *rc)
{
	for (size_t i = 0; i < rc->n; i++) {
		assert_true(rc->ent[i]->start < rc->ent[i]->end);
		assert_true(rc->ent[i]->indexed);
		if (i)
			assert_true(rc->ent[i - 1]->end <= rc->ent[i]->start);
	}
}

static void test_random(void **state)
{
	struct fake f = { 0 };
	struct tr_regcache rc;
	struct {
		struct tr_rc_entry *e;
		uintptr_t a;
		size_t len;
	} held[32] = { 0 };

	(void)state;
	tr_rc_init(&rc, 64 * PG, &ops, &f);
	for (int step = 0; step < 20000; step++) {
		unsigned k = (unsigned)(rnd() % 32), op = (unsigned)(rnd() % 10);

		if (op < 6 && !held[k].e) {
			uintptr_t a = 0x1000000 + (uintptr_t)(rnd() % (256 * PG));
			size_t len = 1 + (size_t)(rnd() % (8 * PG));

			held[k].e = tr_rc_get(&rc, at(a), len);
			assert_non_null(held[k].e);
			held[k].a = a;
			held[k].len = len;
		} else if (op < 9 && held[k].e) {
			assert_true(held[k].e->start <= held[k].a);
			assert_true(held[k].e->end >= held[k].a + held[k].len);
			tr_rc_put(&rc, held[k].e);
			held[k].e = NULL;
		} else if (op == 9) {
			tr_rc_invalidate(&rc, at(0x1000000 + (uintptr_t)(rnd() % (256 * PG))),
					 1 + (size_t)(rnd() % (4 * PG)));
		}
		check_index(&rc);
	}
	for (int k = 0; k < 32; k++)
		if (held[k].e)
			tr_rc_put(&rc, held[k].e);
	assert_true(rc.bytes <= rc.cap);
	tr_rc_fini(&rc);
	assert_int_equal(f.live, 0);
	assert_int_equal(rc.bytes, 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_hit_and_pages),
		cmocka_unit_test(test_merge),
		cmocka_unit_test(test_merge_in_use),
		cmocka_unit_test(test_lru),
		cmocka_unit_test(test_cap_in_use),
		cmocka_unit_test(test_too_large),
		cmocka_unit_test(test_invalidate),
		cmocka_unit_test(test_reg_fails),
		cmocka_unit_test(test_random),
	};

	return cmocka_run_group_tests_name("regcache", tests, NULL, NULL);
}
