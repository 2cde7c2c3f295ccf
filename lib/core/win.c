/* Windows: this rank's exposed regions, and what peers told us of theirs.
 *
 * The owner validates: a peer's library asks the owner once per window
 * (WIN_QUERY); the owner answers with the window's exact extent, its
 * access rights and one rkey per plane (WIN_INFO), or with the reason it
 * refuses.  The answer is cached; the initiator's library then checks every
 * operation against it before posting, and the NIC enforces the same
 * extent (the MR covers exactly the window) as the last line; a cached
 * window's registration (TRIAD_WIN_ATTR_CACHED) covers its pages, and may
 * cover more of a buffer registered before, so there the library's check
 * is the only one.  WIN_GONE goes to the peers that asked. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "core/peer.h"
#include "core/progress.h"
#include "core/regcache.h"
#include "core/req.h"
#include "core/win.h"
#include "base/log.h"
#include "proto/chunk.h"

/* This rank's windows, its lookups in flight and the descriptors of the
 * peers' windows (ctx->wins), under the context lock. */
struct tr_wins {
	struct triad_win **v;
	int n, cap;
	uint32_t next_qid;
	int nqueries; /* WIN_QUERYs awaiting their answer */
	/* What starts a request once its window is described (rma.c's
	 * tr_rma_start, given at setup): windows call no feature by name. */
	void (*ready)(struct triad_req *req);
	/* Registrations of cached windows, per plane (TRIAD_REG_CACHE bytes
	 * each; remote rights, unlike rma.c's cache of put/get buffers). */
	struct tr_wcache {
		struct triad_ctx *ctx;
		int plane;
		struct tr_regcache rc;
	} cache[TRIAD_MAX_PLANES];
	struct tr_rwin *rwins[]; /* [size]: each peer's, as asked for */
};

struct triad_win *tr_win_find(struct triad_ctx *ctx, uint32_t id)
{
	const struct tr_wins *ws = ctx->wins;

	for (int i = 0; i < ws->n; i++)
		if (ws->v[i]->id == id)
			return ws->v[i];
	return NULL;
}

struct triad_win *tr_win_find_addr(struct triad_ctx *ctx, const void *addr, size_t len)
{
	const struct tr_wins *ws = ctx->wins;
	uintptr_t a = (uintptr_t)addr;

	for (int i = 0; i < ws->n; i++) {
		struct triad_win *w = ws->v[i];
		uintptr_t base = (uintptr_t)w->base;

		if (a >= base && tr_range_ok(w->len, a - base, len))
			return w;
	}
	return NULL;
}

static void *wc_reg(void *arg, uintptr_t addr, size_t len)
{
	struct tr_wcache *wc = arg;

	return tr_fab_mr_reg(wc->ctx->fab, wc->plane, (void *)addr, len,
			     TR_MR_LOCAL_WRITE | TR_MR_REMOTE_READ | TR_MR_REMOTE_WRITE);
}

static void wc_dereg(void *arg, void *handle)
{
	(void)arg;
	tr_fab_mr_dereg(handle);
}

static const struct tr_rc_ops wc_ops = { wc_reg, wc_dereg };

/* Lock held. */
static void win_free(struct triad_win *w)
{
	for (int p = 0; p < TRIAD_MAX_PLANES; p++) {
		if (w->rc[p])
			tr_rc_put(&w->ctx->wins->cache[p].rc, w->rc[p]);
		else
			tr_fab_mr_dereg(w->mr[p]);
	}
	free(w);
}

/* w's registration on plane p: 0, or -ENOMEM. */
static int win_reg(struct triad_win *w, int p, int cached)
{
	struct triad_ctx *ctx = w->ctx;
	unsigned acc = TR_MR_LOCAL_WRITE;

	if (cached && ctx->cfg.reg_cache) {
		w->rc[p] = tr_rc_get(&ctx->wins->cache[p].rc, w->base, w->len);
		w->mr[p] = w->rc[p] ? w->rc[p]->handle : NULL;
		return w->rc[p] ? 0 : -ENOMEM;
	}
	if (w->access & TRIAD_WIN_READ)
		acc |= TR_MR_REMOTE_READ;
	if (w->access & TRIAD_WIN_WRITE)
		acc |= TR_MR_REMOTE_WRITE;
	w->mr[p] = tr_fab_mr_reg(ctx->fab, p, w->base, w->len, acc);
	return w->mr[p] ? 0 : -ENOMEM;
}

int triad_win_create(triad_ctx_t *ctx, uint32_t id, void *base, size_t len,
		     const struct triad_win_attr *attr, triad_win_t **win_p)
{
	uint32_t access = TRIAD_WIN_READ | TRIAD_WIN_WRITE;
	uint64_t known = TRIAD_WIN_ATTR_ACCESS | TRIAD_WIN_ATTR_NOTIFY | TRIAD_WIN_ATTR_CACHED;
	struct tr_wins *ws;
	struct triad_win *w;
	int p, cached, ret = 0;

	if (!ctx || !win_p || !base || !len) {
		tr_debug("window %u: needs a context, a base address and a length > 0", id);
		return -EINVAL;
	}
	if (attr && (attr->field_mask & ~known)) {
		tr_debug("window %u: unknown attribute bits 0x%llx", id,
			 (unsigned long long)attr->field_mask);
		return -EINVAL;
	}
	if (attr && (attr->field_mask & TRIAD_WIN_ATTR_ACCESS)) {
		access = attr->access;
		if (access & ~(uint32_t)(TRIAD_WIN_READ | TRIAD_WIN_WRITE)) {
			tr_debug("window %u: unknown access bits 0x%x", id, access);
			return -EINVAL;
		}
	}
	cached = attr && (attr->field_mask & TRIAD_WIN_ATTR_CACHED) && attr->cached;
	if (cached && access != (TRIAD_WIN_READ | TRIAD_WIN_WRITE)) {
		tr_debug("window %u: a cached window allows READ | WRITE only", id);
		return -EINVAL;
	}
	w = calloc(1, sizeof(*w) + ((size_t)ctx->size + 7) / 8);
	if (!w)
		return -ENOMEM;
	w->ctx = ctx;
	w->id = id;
	w->base = base;
	w->len = len;
	w->access = access;
	w->notify = attr && (attr->field_mask & TRIAD_WIN_ATTR_NOTIFY) && attr->notify;

	tr_ctx_lock(ctx);
	if (tr_win_find(ctx, id)) {
		tr_debug("window %u already exists on rank %d", id, ctx->rank);
		ret = -EEXIST;
		goto out;
	}
	for (p = 0; p < ctx->nplanes && !ret; p++)
		ret = win_reg(w, p, cached);
	if (ret)
		goto out;
	ws = ctx->wins;
	if (ws->n == ws->cap) {
		int cap = ws->cap ? 2 * ws->cap : 8;
		struct triad_win **n = realloc(ws->v, (size_t)cap * sizeof(*n));

		if (!n) {
			ret = -ENOMEM;
			goto out;
		}
		ws->v = n;
		ws->cap = cap;
	}
	ws->v[ws->n++] = w;
out:
	if (ret)
		win_free(w);
	pthread_mutex_unlock(&ctx->lock);
	if (ret)
		return ret;
	*win_p = w;
	return 0;
}

/* Lock held. */
static void win_remove(struct triad_win *w)
{
	struct tr_wins *ws = w->ctx->wins;

	for (int i = 0; i < ws->n; i++) {
		if (ws->v[i] == w) {
			ws->v[i] = ws->v[--ws->n];
			break;
		}
	}
	win_free(w);
}

int triad_win_destroy(triad_win_t *w)
{
	struct triad_ctx *ctx;

	if (!w)
		return -EINVAL;
	ctx = w->ctx;
	tr_ctx_lock(ctx);
	/* Peers drop their descriptor before the keys die: their next access
	 * fails alone (NO_WINDOW) instead of breaking the connection at the
	 * NIC, and a window created again under the same id is asked anew.
	 * Only those that asked hold one (one message per window and peer
	 * that used it, not per window and rank of the world). */
	for (int r = 0; r < ctx->size; r++) {
		struct tr_msg m = { .type = TR_MSG_WIN_GONE, .u.win_gone.win = w->id };

		if ((w->asked[r / 8] >> (r % 8) & 1) && tr_peer_reachable(ctx, r))
			tr_peer_send(ctx, r, &m, TR_FC_HIGH, NULL);
	}
	win_remove(w);
	pthread_mutex_unlock(&ctx->lock);
	return 0;
}

/* ---- the owner's side --------------------------------------------------------------*/
static int on_query(struct tr_lane *l, const struct tr_msg *m, struct tr_buf *b)
{
	struct triad_ctx *ctx = l->ctx;
	int peer = l->peer;
	struct triad_win *w = tr_win_find(ctx, m->u.win_query.win);
	struct tr_msg r = { .type = TR_MSG_WIN_INFO };

	(void)b;
	r.u.win_info.qid = m->u.win_query.qid;
	r.u.win_info.win = m->u.win_query.win;
	if (!w) {
		r.u.win_info.status = TRIAD_S_NO_WINDOW;
		tr_info("rank %d asked for window %u, which does not exist", peer,
			m->u.win_query.win);
	} else {
		w->asked[peer / 8] |= (uint8_t)(1u << (peer % 8));
		r.u.win_info.status = TRIAD_S_OK;
		r.u.win_info.nplanes = (uint16_t)ctx->nplanes;
		r.u.win_info.access = w->access;
		r.u.win_info.base = (uintptr_t)w->base;
		r.u.win_info.len = w->len;
		for (int p = 0; p < ctx->nplanes; p++)
			r.u.win_info.rkey[p] = tr_fab_mr_rkey(w->mr[p]);
	}
	tr_peer_send(ctx, peer, &r, TR_FC_HIGH, NULL);
	return 0;
}

/* ---- the initiator's side ------------------------------------------------------------*/
static struct tr_rwin **rwin_slot(struct triad_ctx *ctx, int peer, uint32_t id)
{
	struct tr_rwin **s = &ctx->wins->rwins[peer];

	while (*s && (*s)->id != id)
		s = &(*s)->next;
	return s;
}

struct tr_rwin *tr_rwin_ready(struct triad_ctx *ctx, int peer, uint32_t id)
{
	struct tr_rwin *rw = *rwin_slot(ctx, peer, id);

	return rw && rw->state == TR_RWIN_READY ? rw : NULL;
}

int tr_rwin_state(struct triad_ctx *ctx, int peer, uint32_t id)
{
	const struct tr_rwin *rw = *rwin_slot(ctx, peer, id);

	return rw ? (int)rw->state : -1;
}

/* Fails everyone waiting for rw's description; the next access asks
 * again (not cached: the window may be created later).  rw stays listed:
 * requests in flight may still point at it. */
static void rwin_fail(struct triad_ctx *ctx, struct tr_rwin *rw, enum triad_status st)
{
	if (rw->state == TR_RWIN_QUERYING)
		ctx->wins->nqueries--;
	rw->state = TR_RWIN_GONE;
	while (!tr_list_empty(&rw->waiters)) {
		struct triad_req *req = tr_list_first(&rw->waiters, struct triad_req, link);

		tr_list_del(&req->link);
		req->rwin = NULL;
		tr_req_complete(req, st);
	}
}

int tr_win_lookup(struct triad_ctx *ctx, struct triad_req *req)
{
	struct tr_rwin **slot = rwin_slot(ctx, req->peer, req->win), *rw = *slot;
	struct tr_msg m;

	if (rw && rw->state != TR_RWIN_GONE) {
		req->rwin = rw;
		if (rw->state == TR_RWIN_READY)
			return 1;
		tr_list_add_tail(&rw->waiters, &req->link);
		return 0;
	}
	if (!rw) { /* a GONE one is asked again in place */
		rw = calloc(1, sizeof(*rw));
		if (!rw) {
			tr_req_complete(req, TRIAD_S_NO_MEMORY);
			return 0;
		}
		*slot = rw;
	}
	rw->id = req->win;
	rw->state = TR_RWIN_QUERYING;
	rw->qid = ++ctx->wins->next_qid;
	rw->deadline_ns = tr_now_ns() + (uint64_t)ctx->cfg.query_timeout_ms * 1000000;
	tr_list_init(&rw->waiters);
	tr_list_add_tail(&rw->waiters, &req->link);
	req->rwin = rw;
	ctx->wins->nqueries++;
	/* Built only here: zeroing a message on every cached lookup cost a put
	 * about 25 instructions. */
	m = (struct tr_msg){ .type = TR_MSG_WIN_QUERY };
	m.u.win_query.qid = rw->qid;
	m.u.win_query.win = rw->id;
	if (tr_peer_send(ctx, req->peer, &m, TR_FC_MEDIUM, NULL))
		rwin_fail(ctx, rw, TRIAD_S_UNREACHABLE);
	return 0;
}

static int on_info(struct tr_lane *l, const struct tr_msg *m, struct tr_buf *b)
{
	struct triad_ctx *ctx = l->ctx;
	int peer = l->peer;
	struct tr_rwin **slot = rwin_slot(ctx, peer, m->u.win_info.win), *rw = *slot;

	(void)b;
	if (!rw || rw->state != TR_RWIN_QUERYING || rw->qid != m->u.win_info.qid) {
		tr_warn("rank %d: unexpected WIN_INFO for window %u (query %u): dropped", peer,
			m->u.win_info.win, m->u.win_info.qid);
		return 0;
	}
	if (m->u.win_info.status != TRIAD_S_OK) {
		/* Not cached: the window may be created later. */
		rwin_fail(ctx, rw, (enum triad_status)m->u.win_info.status);
		return 0;
	}
	if (m->u.win_info.nplanes != ctx->nplanes) {
		tr_error("rank %d describes window %u on %u planes, this world has %d", peer,
			 rw->id, m->u.win_info.nplanes, ctx->nplanes);
		rwin_fail(ctx, rw, TRIAD_S_TRANSPORT);
		return 0;
	}
	rw->state = TR_RWIN_READY;
	ctx->wins->nqueries--;
	rw->base = m->u.win_info.base;
	rw->len = m->u.win_info.len;
	rw->access = m->u.win_info.access;
	memcpy(rw->rkey, m->u.win_info.rkey, sizeof(rw->rkey));
	rw->info_seq = m->seq;
	rw->info_prio = m->prio;
	while (!tr_list_empty(&rw->waiters)) {
		struct triad_req *req = tr_list_first(&rw->waiters, struct triad_req, link);

		tr_list_del(&req->link);
		ctx->wins->ready(req);
	}
	return 0;
}

/* No plane to peer is left (or none could be connected): its lookups fail with st. */
static void peer_lost(struct triad_ctx *ctx, int peer, enum triad_status st)
{
	for (struct tr_rwin *rw = ctx->wins->rwins[peer]; rw; rw = rw->next)
		if (rw->state == TR_RWIN_QUERYING)
			rwin_fail(ctx, rw, st);
}

/* The progress tick: lookups whose query was not answered in time fail. */
static void check_timeouts(struct triad_ctx *ctx)
{
	uint64_t now;

	if (!ctx->wins->nqueries)
		return;
	now = tr_now_ns();
	for (int r = 0; r < ctx->size; r++) {
		for (struct tr_rwin *rw = ctx->wins->rwins[r]; rw; rw = rw->next) {
			if (rw->state == TR_RWIN_QUERYING && now > rw->deadline_ns) {
				tr_warn("rank %d did not describe window %u in time", r, rw->id);
				rwin_fail(ctx, rw, TRIAD_S_TIMEOUT);
			}
		}
	}
}

void tr_win_stale(struct triad_ctx *ctx, struct tr_rwin *rw)
{
	(void)ctx;
	if (rw && rw->state == TR_RWIN_READY) {
		tr_debug("window %u: descriptor dropped", rw->id);
		rw->state = TR_RWIN_GONE;
		memset(rw->rkey, 0, sizeof(rw->rkey));
	}
}

unsigned tr_win_uncache(struct triad_ctx *ctx, const void *addr, size_t len)
{
	unsigned n = 0;

	for (int p = 0; ctx->cfg.reg_cache && p < ctx->nplanes; p++)
		n += tr_rc_invalidate(&ctx->wins->cache[p].rc, addr, len);
	return n;
}

int triad_win_forget(triad_ctx_t *ctx, uint32_t id)
{
	int n = 0;

	if (!ctx)
		return -EINVAL;
	tr_ctx_lock(ctx);
	for (int r = 0; r < ctx->size; r++) {
		struct tr_rwin *rw = *rwin_slot(ctx, r, id);

		n += rw && rw->state == TR_RWIN_READY;
		tr_win_stale(ctx, rw);
	}
	pthread_mutex_unlock(&ctx->lock);
	return n;
}

/* The owner destroyed the window: its descriptor goes, unless it is of a
 * window made again since.  Both messages travel on one stream of the
 * owner's, in order of their numbers, but across planes one may overtake
 * the other (a drain or a fault moved the stream while the notice was in
 * flight): a notice numbered before the description is about the window
 * that one replaced, and would drop a good descriptor (the window's next
 * chunks would then fail with NO_WINDOW). */
static int on_gone(struct tr_lane *l, const struct tr_msg *m, struct tr_buf *b)
{
	struct triad_ctx *ctx = l->ctx;
	struct tr_rwin *rw = *rwin_slot(ctx, l->peer, m->u.win_gone.win);

	(void)b;
	if (rw && rw->state == TR_RWIN_READY && rw->info_prio == m->prio &&
	    tr_seq_before(m->seq, rw->info_seq)) {
		tr_debug("rank %d: window %u: the notice of an earlier one's end: kept", l->peer,
			 rw->id);
		return 0;
	}
	tr_win_stale(ctx, rw);
	return 0;
}

void tr_rwins_free(struct triad_ctx *ctx, int peer)
{
	struct tr_rwin **head;

	if (!ctx->wins) /* not set up */
		return;
	head = &ctx->wins->rwins[peer];
	while (*head) {
		struct tr_rwin *rw = *head;

		rwin_fail(ctx, rw, TRIAD_S_CANCELLED);
		*head = rw->next;
		free(rw);
	}
}

int tr_win_setup(struct triad_ctx *ctx, void (*ready)(struct triad_req *req))
{
	static const struct tr_peer_hooks hooks = { .unreached = peer_lost, .lost = peer_lost };
	static const struct tr_progress_hooks progress = { .tick = check_timeouts };

	ctx->wins = calloc(1, sizeof(*ctx->wins) + (size_t)ctx->size * sizeof(struct tr_rwin *));
	if (!ctx->wins)
		return -ENOMEM;
	ctx->wins->ready = ready;
	for (int p = 0; p < ctx->nplanes; p++) {
		ctx->wins->cache[p].ctx = ctx;
		ctx->wins->cache[p].plane = p;
		tr_rc_init(&ctx->wins->cache[p].rc, ctx->cfg.reg_cache, &wc_ops,
			   &ctx->wins->cache[p]);
	}
	tr_peer_handle(ctx, TR_MSG_WIN_QUERY, on_query);
	tr_peer_handle(ctx, TR_MSG_WIN_INFO, on_info);
	tr_peer_handle(ctx, TR_MSG_WIN_GONE, on_gone);
	if (tr_peer_hooks_add(ctx, &hooks))
		return -ENOSPC;
	return tr_progress_hooks_add(ctx, &progress);
}

void tr_win_teardown(struct triad_ctx *ctx)
{
	struct tr_wins *ws = ctx->wins;

	if (!ws)
		return;
	while (ws->n)
		win_remove(ws->v[ws->n - 1]);
	for (int p = 0; p < ctx->nplanes; p++)
		tr_rc_fini(&ws->cache[p].rc);
	free(ws->v);
	free(ws);
	ctx->wins = NULL;
}
