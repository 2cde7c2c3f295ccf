/* Windows (win.c): this rank's exposed regions, and what peers told us of
 * theirs (a descriptor per window asked for, kept per peer until close).
 * Every function here is called with the context lock held. */
#ifndef TRIAD_CORE_WIN_H
#define TRIAD_CORE_WIN_H

#include "core/ctx.h"

/* A peer's window as its owner described it (WIN_INFO).  GONE: the owner
 * destroyed it (WIN_GONE); the next access asks again, since the id may
 * be in use again.  A descriptor is freed only at close: requests in
 * flight keep pointing at it. */
enum tr_rwin_state { TR_RWIN_QUERYING, TR_RWIN_READY, TR_RWIN_GONE };

struct tr_rwin {
	struct tr_rwin *next;
	uint32_t id;
	enum tr_rwin_state state;
	uint32_t qid;	     /* query in flight */
	uint64_t deadline_ns; /* of the query */
	uint64_t base, len;
	uint32_t access;
	uint32_t rkey[TRIAD_MAX_PLANES];
	/* The WIN_INFO that described it, by its number in the owner's stream
	 * (a WIN_GONE sent before it is about an earlier window). */
	uint32_t info_seq;
	uint8_t info_prio;
	struct tr_list waiters; /* requests waiting for the answer */
};

struct triad_win {
	struct triad_ctx *ctx;
	uint32_t id;
	char *base;
	size_t len;
	uint32_t access;
	int notify;
	struct tr_mr *mr[TRIAD_MAX_PLANES];
	struct tr_rc_entry *rc[TRIAD_MAX_PLANES]; /* cached: the entry mr[] is of */
	uint8_t asked[];			   /* [size bits]: peers it was described to */
};

/* Windows (win.c).  Setup: its messages (WIN_QUERY, WIN_INFO, WIN_GONE),
 * peer hooks (a lost or unreached peer fails its lookups) and tick (the
 * lookups' deadlines); ready starts a request whose window is described
 * (tr_win_lookup). */
int tr_win_setup(struct triad_ctx *ctx, void (*ready)(struct triad_req *req));
struct triad_win *tr_win_find(struct triad_ctx *ctx, uint32_t id);
struct triad_win *tr_win_find_addr(struct triad_ctx *ctx, const void *addr, size_t len);
/* peer's window id as described and still good, or NULL (not asked yet,
 * being asked, gone). */
struct tr_rwin *tr_rwin_ready(struct triad_ctx *ctx, int peer, uint32_t id);
/* Resolve req->rwin: 1 when the window is described (req->rwin set), and
 * the caller starts req now; 0 when req waits for the description (then
 * setup's ready starts it), or failed (it is complete). */
int tr_win_lookup(struct triad_ctx *ctx, struct triad_req *req);
/* rw's keys are no good any more (NULL: nothing): the next access asks
 * the owner again. */
void tr_win_stale(struct triad_ctx *ctx, struct tr_rwin *rw);
/* Drops the cached windows' registrations of [addr, addr + len) (those of
 * windows alive once they are destroyed); how many (triad_mem_release). */
unsigned tr_win_uncache(struct triad_ctx *ctx, const void *addr, size_t len);
/* For a test's look: the state of this rank's descriptor of peer's
 * window id, or -1 when it has none. */
int tr_rwin_state(struct triad_ctx *ctx, int peer, uint32_t id);
/* At close: peer's descriptors dropped, their waiters cancelled; then
 * (teardown) this rank's windows destroyed, their state freed. */
void tr_rwins_free(struct triad_ctx *ctx, int peer);
void tr_win_teardown(struct triad_ctx *ctx);

#endif
