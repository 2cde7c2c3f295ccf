/* A registration cache for put/get buffers outside every window: one per
 * plane, pure (the registration itself is the caller's callback), so that
 * its interval and LRU logic is tested on the host.
 *
 * Entries cover whole pages and never overlap: a miss that touches cached
 * entries registers their union and retires them.  An entry in use (by an
 * operation in flight) is never deregistered; one that is evicted or
 * invalidated while in use leaves the index at once and is deregistered
 * when its last user lets go.  Unused entries are evicted least recently
 * used first once the registered bytes exceed the cap.
 *
 * Invalidation is explicit (tr_rc_invalidate, behind triad_mem_release):
 * the cache cannot see memory being freed, and a registration of freed
 * memory would keep its old pages pinned while the same addresses get new
 * ones -- data would silently go to the wrong place.  So the library only
 * caches when TRIAD_REG_CACHE asks for it, and the application then
 * releases memory it used with triad before freeing it. */
#ifndef TRIAD_CORE_REGCACHE_H
#define TRIAD_CORE_REGCACHE_H

#include <stddef.h>
#include <stdint.h>

#include "base/list.h"

struct tr_rc_ops {
	/* Registers [addr, addr + len); NULL on failure. */
	void *(*reg)(void *arg, uintptr_t addr, size_t len);
	void (*dereg)(void *arg, void *handle);
};

struct tr_rc_entry {
	uintptr_t start, end;	/* [start, end), page-aligned */
	void *handle;		/* what ops->reg returned */
	unsigned users;		/* operations holding it */
	int indexed;		/* in the index and the LRU list */
	struct tr_list lru;	/* least recently used first */
};

struct tr_regcache {
	const struct tr_rc_ops *ops;
	void *arg;
	uint64_t cap;		/* bytes registered at most (unused entries go first) */
	uint64_t bytes;		/* registered now, indexed or not */
	struct tr_rc_entry **ent; /* the index: sorted by start, disjoint */
	size_t n, alloc;
	struct tr_list lru;
	uint64_t hits, misses, evictions;
};

void tr_rc_init(struct tr_regcache *rc, uint64_t cap, const struct tr_rc_ops *ops, void *arg);
/* The entry covering [addr, addr + len), registered if need be, held until
 * tr_rc_put; NULL when the registration failed.  len > 0. */
struct tr_rc_entry *tr_rc_get(struct tr_regcache *rc, const void *addr, size_t len);
void tr_rc_put(struct tr_regcache *rc, struct tr_rc_entry *e);
/* Drops every entry overlapping [addr, addr + len) (in-use ones once
 * their users let go).  The number dropped. */
unsigned tr_rc_invalidate(struct tr_regcache *rc, const void *addr, size_t len);
/* Deregisters everything; entries still in use are a caller's bug. */
void tr_rc_fini(struct tr_regcache *rc);

#endif
