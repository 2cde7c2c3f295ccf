/* The registration cache (see regcache.h): a sorted array of disjoint
 * page ranges, binary-searched, and an LRU list of the same entries. */
#include <stdlib.h>
#include <string.h>

#include "core/regcache.h"

#define RC_PAGE 4096u

void tr_rc_init(struct tr_regcache *rc, uint64_t cap, const struct tr_rc_ops *ops, void *arg)
{
	memset(rc, 0, sizeof(*rc));
	rc->cap = cap;
	rc->ops = ops;
	rc->arg = arg;
	tr_list_init(&rc->lru);
}

/* The first index whose entry ends after addr (the only one that may hold
 * it, since entries are disjoint and sorted). */
static size_t first_ending_after(const struct tr_regcache *rc, uintptr_t addr)
{
	size_t lo = 0, hi = rc->n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (rc->ent[mid]->end <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

static void entry_free(struct tr_regcache *rc, struct tr_rc_entry *e)
{
	rc->ops->dereg(rc->arg, e->handle);
	rc->bytes -= e->end - e->start;
	free(e);
}

/* Takes index i out of the index and the LRU list; freed now if unused,
 * else by its last tr_rc_put. */
static void unindex(struct tr_regcache *rc, size_t i)
{
	struct tr_rc_entry *e = rc->ent[i];

	memmove(&rc->ent[i], &rc->ent[i + 1], (rc->n - i - 1) * sizeof(*rc->ent));
	rc->n--;
	e->indexed = 0;
	tr_list_del(&e->lru);
	if (!e->users)
		entry_free(rc, e);
}

static int index_insert(struct tr_regcache *rc, struct tr_rc_entry *e)
{
	size_t i;

	if (rc->n == rc->alloc) {
		size_t na = rc->alloc ? 2 * rc->alloc : 16;
		struct tr_rc_entry **ne = realloc(rc->ent, na * sizeof(*ne));

		if (!ne)
			return -1;
		rc->ent = ne;
		rc->alloc = na;
	}
	i = first_ending_after(rc, e->start);
	memmove(&rc->ent[i + 1], &rc->ent[i], (rc->n - i) * sizeof(*rc->ent));
	rc->ent[i] = e;
	rc->n++;
	e->indexed = 1;
	tr_list_add_tail(&rc->lru, &e->lru);
	return 0;
}

/* Unused entries, least recently used first, until the cap holds (the
 * entry just made, keep, stays). */
static void evict(struct tr_regcache *rc, const struct tr_rc_entry *keep)
{
	struct tr_list *l = rc->lru.next;

	while (rc->bytes > rc->cap && l != &rc->lru) {
		struct tr_rc_entry *e = tr_container_of(l, struct tr_rc_entry, lru);

		l = l->next;
		if (e == keep || e->users)
			continue;
		unindex(rc, first_ending_after(rc, e->start));
		rc->evictions++;
	}
}

struct tr_rc_entry *tr_rc_get(struct tr_regcache *rc, const void *addr, size_t len)
{
	uintptr_t start = (uintptr_t)addr & ~(uintptr_t)(RC_PAGE - 1);
	uintptr_t end = ((uintptr_t)addr + len + RC_PAGE - 1) & ~(uintptr_t)(RC_PAGE - 1);
	size_t i = first_ending_after(rc, start);
	struct tr_rc_entry *e;

	if (i < rc->n && rc->ent[i]->start <= start && rc->ent[i]->end >= end) {
		e = rc->ent[i];
		tr_list_del(&e->lru); /* most recently used: the tail */
		tr_list_add_tail(&rc->lru, &e->lru);
		e->users++;
		rc->hits++;
		return e;
	}
	rc->misses++;
	/* Every entry the new range touches is merged into it and retired. */
	while (i < rc->n && rc->ent[i]->start < end) {
		if (rc->ent[i]->start < start)
			start = rc->ent[i]->start;
		if (rc->ent[i]->end > end)
			end = rc->ent[i]->end;
		unindex(rc, i);
	}
	e = calloc(1, sizeof(*e));
	if (!e)
		return NULL;
	e->start = start;
	e->end = end;
	tr_list_init(&e->lru);
	e->handle = rc->ops->reg(rc->arg, start, end - start);
	if (!e->handle) {
		free(e);
		return NULL;
	}
	rc->bytes += end - start;
	e->users = 1;
	/* Larger than the whole cache, or no room in the index: used once. */
	if (end - start > rc->cap || index_insert(rc, e))
		return e;
	evict(rc, e);
	return e;
}

void tr_rc_put(struct tr_regcache *rc, struct tr_rc_entry *e)
{
	if (--e->users)
		return;
	if (!e->indexed)
		entry_free(rc, e);
	else if (rc->bytes > rc->cap)
		evict(rc, NULL);
}

unsigned tr_rc_invalidate(struct tr_regcache *rc, const void *addr, size_t len)
{
	uintptr_t start = (uintptr_t)addr, end = start + len;
	size_t i = first_ending_after(rc, start);
	unsigned n = 0;

	while (i < rc->n && rc->ent[i]->start < end) {
		unindex(rc, i);
		n++;
	}
	return n;
}

void tr_rc_fini(struct tr_regcache *rc)
{
	while (rc->n)
		unindex(rc, rc->n - 1);
	free(rc->ent);
	rc->ent = NULL;
	rc->alloc = 0;
}
