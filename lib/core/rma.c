/* One-sided operations (put, get) and their flush.
 *
 * An operation goes: argument checks -> plane choice -> window lookup
 * (cached after the first) -> bounds and access checks -> registration of
 * a buffer outside every window -> the lane's queue -> chunks of at most TRIAD_CHUNK_SIZE posted as
 * long as the send queue has room -> complete when every chunk completed.
 * A small request-less put skips all of it when it can (light puts, below). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "core/onesided.h"
#include "core/peer.h"
#include "core/progress.h"
#include "core/regcache.h"
#include "core/req.h"
#include "core/rma.h"
#include "core/win.h"
#include "base/log.h"
#include "proto/chunk.h"

/* The operations a flush waits for: those issued to one peer between two
 * flushes.  Every flush called while it is the newest waits on it. */
struct tr_epoch {
	struct tr_list link;	/* in the peer's ep_closed, once flushed */
	unsigned long out;	/* its operations not complete yet */
	enum triad_status err;	/* the first error of a request-less one */
	struct tr_list flushes; /* the flush requests waiting for it */
};

/* triad_flush's state for one peer: the puts and gets to it since the
 * last flush (an open epoch, created by the first of them), the epochs
 * flushed and not yet complete (oldest first), and the first error of a
 * request-less operation since the last flush completed. */
struct tr_flushes {
	struct tr_epoch *ep_open;
	struct tr_list ep_closed;
	enum triad_status ep_err;
};

/* What puts and gets keep (ctx->rma), made by tr_rma_setup and freed by
 * tr_rma_teardown, under the context lock. */
struct tr_rmas {
	/* Registrations of buffers outside every window (TRIAD_REG_CACHE). */
	struct tr_rc_plane {
		struct triad_ctx *ctx;
		int plane;
		struct tr_regcache rc;
	} rcache[TRIAD_MAX_PLANES];
	struct tr_flushes peer[]; /* [size] */
};

/* ---- registrations of buffers outside every window ---------------------------------*/
static void *rc_reg(void *arg, uintptr_t addr, size_t len)
{
	struct tr_rc_plane *rp = arg;

	return tr_fab_mr_reg(rp->ctx->fab, rp->plane, (void *)addr, len, TR_MR_LOCAL_WRITE);
}

static void rc_dereg(void *arg, void *handle)
{
	(void)arg;
	tr_fab_mr_dereg(handle);
}

static const struct tr_rc_ops rc_ops = { rc_reg, rc_dereg };

static void rma_complete(struct triad_req *req, enum triad_status st);
static void await_flush(struct triad_ctx *ctx, struct tr_peer *p, int all, enum triad_status st);
static struct tr_epoch *epoch_take(struct triad_ctx *ctx, int peer);
static void epoch_done(struct triad_ctx *ctx, int peer, struct tr_epoch *ep,
		       enum triad_status err);

int tr_rma_setup(struct triad_ctx *ctx)
{
	static const struct tr_peer_hooks hooks = { .await = await_flush };
	struct tr_rmas *rs;

	rs = calloc(1, sizeof(*rs) + (size_t)ctx->size * sizeof(rs->peer[0]));
	if (!rs)
		return -ENOMEM;
	ctx->rma = rs;
	for (int r = 0; r < ctx->size; r++)
		tr_list_init(&rs->peer[r].ep_closed);
	for (int p = 0; p < ctx->nplanes; p++) {
		rs->rcache[p].ctx = ctx;
		rs->rcache[p].plane = p;
		tr_rc_init(&rs->rcache[p].rc, ctx->cfg.reg_cache, &rc_ops, &rs->rcache[p]);
	}
	tr_req_kind_done(ctx, TR_REQ_PUT, rma_complete);
	tr_req_kind_done(ctx, TR_REQ_GET, rma_complete);
	return tr_peer_hooks_add(ctx, &hooks);
}

void tr_rma_teardown(struct triad_ctx *ctx)
{
	struct tr_rmas *rs = ctx->rma;

	if (!rs)
		return;
	for (int p = 0; p < ctx->nplanes; p++)
		tr_rc_fini(&rs->rcache[p].rc);
	free(rs);
	ctx->rma = NULL;
}

/* The registration of req's buffer on its lane's plane: from the cache
 * when TRIAD_REG_CACHE is on, else for this request only.  0 or -1. */
static int register_buf(struct triad_req *req, struct tr_lane *l)
{
	struct triad_ctx *ctx = l->ctx;

	if (ctx->cfg.reg_cache) {
		req->rc_ent = tr_rc_get(&ctx->rma->rcache[l->plane].rc, req->buf, req->len);
		if (!req->rc_ent)
			return -1;
		req->rc_plane = l->plane;
		req->mr = req->rc_ent->handle;
		return 0;
	}
	req->tmp_mr = tr_fab_mr_reg(ctx->fab, l->plane, req->buf, req->len, TR_MR_LOCAL_WRITE);
	req->mr = req->tmp_mr;
	return req->tmp_mr ? 0 : -1;
}

static void unregister(struct triad_req *req)
{
	if (req->tmp_mr) {
		tr_fab_mr_dereg(req->tmp_mr);
		req->tmp_mr = NULL;
	}
	if (req->rc_ent) {
		tr_rc_put(&req->ctx->rma->rcache[req->rc_plane].rc, req->rc_ent);
		req->rc_ent = NULL;
	}
}

/* A put or get is complete (its kinds' completion, req.c): its
 * registration released, then the operation complete before any flush
 * that waits for it is: a thread that sees the flush done then sees it
 * done too.  (Once done, the request may be freed at once: its epoch is
 * kept here.) */
static void rma_complete(struct triad_req *req, enum triad_status st)
{
	struct triad_ctx *ctx = req->ctx;
	struct tr_epoch *ep = req->ep;
	int peer = req->peer;
	enum triad_status err = req->flags & TR_F_NO_REQ ? st : TRIAD_S_OK;

	if (st == TRIAD_S_OK && req->lane)
		tr_lane_count(req->lane, req, 1);
	unregister(req);
	req->ep = NULL;
	tr_req_finish(req, st);
	if (ep)
		epoch_done(ctx, peer, ep, err);
	tr_ctx_signal(ctx);
}

int triad_mem_release(triad_ctx_t *ctx, const void *addr, size_t len)
{
	unsigned n = 0;

	if (!ctx || !addr || !len)
		return -EINVAL;
	tr_ctx_lock(ctx);
	for (int p = 0; ctx->cfg.reg_cache && p < ctx->nplanes; p++)
		n += tr_rc_invalidate(&ctx->rma->rcache[p].rc, addr, len);
	n += tr_win_uncache(ctx, addr, len);
	pthread_mutex_unlock(&ctx->lock);
	return (int)n;
}

/* Posts req's next n bytes on l: 0, or tr_lane_post_rma's error.  Each of
 * its work requests (a READ may take two) comes back once. */
static int post_chunk(struct tr_lane *l, struct triad_req *req, uint64_t n)
{
	struct tr_rwin *rw = req->rwin;
	int ret = tr_lane_post_rma(l, req->kind == TR_REQ_GET ? TR_RMA_READ : TR_RMA_WRITE,
				   req->buf + req->posted, (uint32_t)n, req->mr,
				   rw->base + req->off + req->posted, rw->rkey[l->plane], req);

	if (ret < 0)
		return ret;
	req->posted += n;
	req->inflight += ret;
	return 0;
}

/* The common case, one chunk and nothing queued ahead on the lane: posted
 * here, without the queue.  1 when it went out; 0 leaves it to the queue
 * (several chunks, a message to send after it, no room). */
static int post_whole(struct tr_lane *l, struct triad_req *req)
{
	int ret;

	if (req->len > l->ctx->cfg.chunk_size || req->rwin->state != TR_RWIN_READY)
		return 0;
	ret = post_chunk(l, req, req->len);
	if (ret == -EAGAIN)
		return 0;
	if (ret) {
		req->posted = req->len; /* nothing more of it goes out */
		req->status = TRIAD_S_TRANSPORT;
		tr_lane_fail(l, TRIAD_S_TRANSPORT); /* its queue is empty: nothing else fails */
		tr_req_complete(req, TRIAD_S_TRANSPORT);
	}
	return 1;
}

/* A put small enough to ride in its work request: no registration needed. */
static int rides_inline(const struct triad_req *req, const struct tr_lane *l)
{
	return req->kind == TR_REQ_PUT && req->len <= tr_lane_max_inline(l);
}

static int may_redo(const struct triad_req *req);
static void redo(struct triad_req *req);

/* A put or get given up because of its lane's state, not an error of its
 * own: the path is named at debug level, so that a rare "transport error"
 * under faults says which one it took (the lane's own warning, if any,
 * names only the lane). */
static void give_up(struct triad_req *req, enum triad_status st, const char *why)
{
	tr_debug("%s of %llu B to rank %d (plane %d, %d redos): %s: %s",
		 req->kind == TR_REQ_GET ? "get" : req->kind == TR_REQ_PUT ? "put" : "copy chunk",
		 (unsigned long long)req->len, req->peer, req->plane, req->redos, why,
		 triad_status_str(st));
	tr_req_complete(req, st);
}

static const struct tr_rma_ops rma_ops;

void tr_rma_start(struct triad_req *req)
{
	struct tr_rwin *rw = req->rwin;
	struct tr_lane *l = req->lane;
	uint32_t need = req->kind == TR_REQ_GET ? TRIAD_WIN_READ : TRIAD_WIN_WRITE;

	if (req->kind == TR_REQ_LOOKUP) { /* a copy's source only wanted the descriptor */
		tr_req_complete(req, TRIAD_S_OK);
		return;
	}
	if (!(rw->access & need)) {
		tr_info("%s on rank %d window %u: the window does not allow it",
			req->kind == TR_REQ_PUT ? "put" : "get", req->peer, req->win);
		tr_req_complete(req, TRIAD_S_ACCESS);
		return;
	}
	if (!tr_range_ok(rw->len, req->off, req->len)) {
		tr_info("%s on rank %d window %u: [%llu, +%llu) outside its %llu bytes",
			req->kind == TR_REQ_PUT ? "put" : "get", req->peer, req->win,
			(unsigned long long)req->off, (unsigned long long)req->len,
			(unsigned long long)rw->len);
		tr_req_complete(req, TRIAD_S_OUT_OF_BOUNDS);
		return;
	}
	if (l->state != TR_LANE_UP) {
		/* Its lane broke while it waited for the window's description
		 * (its query went again on another plane): done on a live
		 * plane, as a flushed one is. */
		if (may_redo(req))
			redo(req);
		else
			give_up(req, l->down_status,
				"its lane broke while the window was asked for, and no redo is left");
		return;
	}
	if (req->len == 0) {
		tr_req_complete(req, TRIAD_S_OK);
		return;
	}
	if (!req->mr && !rides_inline(req, l) && register_buf(req, l)) {
		tr_req_complete(req, TRIAD_S_NO_MEMORY);
		return;
	}
	req->rma = &rma_ops;
	if (tr_list_empty(&l->rmaq) && post_whole(l, req))
		return;
	tr_list_add_tail(&l->rmaq, &req->link);
	tr_lane_rma_pump(l);
}

/* Posts what l's send queue takes of the operations queued on it, up to
 * the first entry that is not one of ours (an ordered message). */
static void pump(struct tr_lane *l)
{
	uint64_t chunk = l->ctx->cfg.chunk_size;

	while (!tr_list_empty(&l->rmaq)) {
		struct triad_req *req = tr_list_first(&l->rmaq, struct triad_req, link);
		struct tr_rwin *rw = req->rwin;

		if (req->rma != &rma_ops)
			return; /* not ours: tr_lane_rma_pump() hands it to its owner */
		if (rw->state != TR_RWIN_READY) {
			/* The owner destroyed the window meanwhile: nothing more of it
			 * goes to the NIC, which would refuse it and break the lane. */
			tr_list_del(&req->link);
			req->posted = req->len;
			if (!req->status)
				req->status = TRIAD_S_NO_WINDOW;
			if (!req->inflight)
				tr_req_complete(req, req->status);
			continue;
		}
		while (req->posted < req->len) {
			int ret = post_chunk(l, req, tr_chunk_len(req->len, chunk, req->posted));

			if (ret == -EAGAIN)
				return;
			if (ret) {
				/* The lane is unusable: fail it, which fails the queue. */
				tr_debug("rank %d plane %d: posting a chunk failed (%d): the lane fails",
					 req->peer, l->plane, ret);
				req->status = TRIAD_S_TRANSPORT;
				tr_lane_fail(l, TRIAD_S_TRANSPORT);
				return;
			}
		}
		tr_list_del(&req->link);
	}
}

/* A put, get or copy chunk whose connection failed it (flushed, retries
 * exceeded, an invalid-request NAK) is done again, whole, on the lane the
 * plane choice gives now (each may be repeated): a stale access or a
 * plane fault then fails only the request it hit.  Pinned ones are not
 * moved, and each is moved at most twice per plane. */
static int may_redo(const struct triad_req *req)
{
	return !(req->flags & TR_F_PLANE_PIN) && req->status == TRIAD_S_OK &&
	       req->redos < 2 * req->ctx->nplanes && !req->ctx->closing &&
	       (req->kind == TR_REQ_PUT || req->kind == TR_REQ_GET || req->kind == TR_REQ_CHUNK);
}

static void redo(struct triad_req *req)
{
	struct triad_ctx *ctx = req->ctx;
	struct triad_win *lw;

	req->redo = 0;
	req->redos++;
	req->posted = 0;
	req->lane = tr_peer_lane(ctx, req->peer, TR_F_NO_DETOUR);
	if (req->lane->state != TR_LANE_UP && tr_peer_await(ctx, req->peer)) {
		/* No lane up, and one is coming: the peer's only lane up so
		 * far broke while another is being set up (lazy), or a fault
		 * broke its last one (rejoin).  Wait for it, as a first use
		 * does (registered again for its plane when it goes; a copy
		 * chunk finds its window again then, below). */
		if (req->kind != TR_REQ_CHUNK) {
			unregister(req);
			req->mr = NULL;
		}
		tr_rma_await(ctx, req);
		return;
	}
	tr_debug("%s to rank %d: done again on plane %d",
		 req->kind == TR_REQ_GET ? "get" : req->kind == TR_REQ_PUT ? "put" : "copy chunk",
		 req->peer, req->lane->plane);
	if (req->kind == TR_REQ_CHUNK) {
		/* A copy chunk reads this rank's window for another rank's
		 * order, and the window may have gone (its registrations with
		 * it) while the chunk came back: read it only if it is still
		 * there. */
		lw = tr_win_find_addr(ctx, req->buf, req->len);
		if (!lw || !(lw->access & TRIAD_WIN_READ)) {
			tr_req_complete(req, TRIAD_S_NO_WINDOW);
			return;
		}
		req->mr = lw->mr[req->lane->plane];
		req->plane = req->lane->plane;
	} else if (req->plane != req->lane->plane) {
		/* Registrations are per plane. */
		unregister(req);
		lw = tr_win_find_addr(ctx, req->buf, req->len);
		req->mr = lw ? lw->mr[req->lane->plane] : NULL;
		req->plane = req->lane->plane;
	}
	if (tr_win_lookup(ctx, req))
		tr_rma_start(req);
}

static void fenced(struct triad_req *req);

/* Every WRITE and READ of req is back: done again, or complete.  A
 * WRITE that a break flushed may still be on its way to the peer (RC
 * cannot tell a flushed WRITE from one executed, or from one delayed on
 * the wire): req waits for the redo fence first, so that the old attempt
 * can land neither after the new one nor after the completion. */
static void settle(struct triad_req *req)
{
	if (req->fence_planes && tr_peer_fence_hold(req))
		return;
	fenced(req);
}

static void fenced(struct triad_req *req)
{
	req->fence_planes = 0;
	if (req->redo && req->status == TRIAD_S_OK && !req->ctx->closing)
		redo(req);
	else if (req->redo || req->status)
		give_up(req, req->status ? req->status : TRIAD_S_CANCELLED,
			req->status ? "a WRITE or READ of it failed, and it is not done again"
				    : "closing while it waited to be done again");
	else
		tr_req_complete(req, TRIAD_S_OK);
}

static void lane_broken(struct triad_req *req, enum triad_status st)
{
	tr_list_del(&req->link);
	req->posted = req->len; /* post nothing more here */
	if (may_redo(req))
		req->redo = 1;
	else if (!req->status)
		req->status = st;
	if (req->inflight)
		return; /* the flushed chunks come back first */
	settle(req);
}

static void rma_done(struct triad_req *req, enum triad_status st, int conn_fault)
{
	req->inflight--;
	if (st != TRIAD_S_OK && conn_fault && req->kind != TR_REQ_GET)
		req->fence_planes |= 1u << req->lane->plane; /* a WRITE: see settle() */
	if (st != TRIAD_S_OK && conn_fault && may_redo(req)) {
		req->redo = 1;
	} else if (st != TRIAD_S_OK && req->status == TRIAD_S_OK) {
		req->status = st;
		req->redo = 0;
		if (req->posted < req->len) { /* still queued: post no more */
			tr_list_del(&req->link);
			req->posted = req->len;
		}
	}
	if (req->inflight || req->posted < req->len)
		return;
	settle(req);
}

/* The NIC refused req's keys: the owner destroyed the window and its
 * notice is still on the way.  Nothing else goes to it with them; the next
 * access asks the owner again. */
static void refused(struct triad_req *req)
{
	tr_win_stale(req->ctx, req->rwin);
}

static const struct tr_rma_ops rma_ops = {
	.done = rma_done,
	.refused = refused,
	.pump = pump,
	.broken = lane_broken,
	.fenced = fenced,
};

/* Operations on this rank's own windows are memory copies. */
static void rma_self(struct triad_ctx *ctx, struct triad_req *req)
{
	struct triad_win *w = tr_win_find(ctx, req->win);
	uint32_t need = req->kind == TR_REQ_PUT ? TRIAD_WIN_WRITE : TRIAD_WIN_READ;

	if (!w)
		tr_req_complete(req, TRIAD_S_NO_WINDOW);
	else if (!(w->access & need))
		tr_req_complete(req, TRIAD_S_ACCESS);
	else if (!tr_range_ok(w->len, req->off, req->len))
		tr_req_complete(req, TRIAD_S_OUT_OF_BOUNDS);
	else {
		if (req->kind == TR_REQ_PUT)
			memmove(w->base + req->off, req->buf, req->len);
		else
			memmove(req->buf, w->base + req->off, req->len);
		tr_req_complete(req, TRIAD_S_OK);
	}
}

/* ---- striping --------------------------------------------------------------------*/
/* A striped operation is cut into one part per live plane to the peer,
 * each an internal request of its own (its chunks stay on its plane, and
 * a part a fault flushes is done again whole on a live plane like any
 * put or get).  The user's request completes once every part did, with
 * the first error of any. */
static void stripe_done(struct triad_req *part)
{
	struct triad_req *req = part->cb_arg;

	if (part->status != TRIAD_S_OK && req->status == TRIAD_S_OK)
		req->status = part->status;
	free(part);
	if (--req->inflight == 0)
		tr_req_complete(req, req->status);
}

static int stripe_planes(struct triad_ctx *ctx, int rank, int *planes)
{
	struct tr_peer *p = &ctx->peers[rank];
	int n = 0;

	for (int q = 0; q < ctx->nplanes; q++)
		if (tr_peer_plane_open(ctx, p, q))
			planes[n++] = q;
	return n;
}

/* 0: too few planes, the caller does it as one operation. */
static int stripe(struct triad_ctx *ctx, struct triad_req *req)
{
	int planes[TRIAD_MAX_PLANES], n = stripe_planes(ctx, req->peer, planes);
	uint64_t part, done = 0;

	if (n < 2)
		return 0;
	/* Equal parts, page multiples (the last takes the rest). */
	part = (req->len / (uint64_t)n + 4095) & ~(uint64_t)4095;
	req->lane = NULL; /* its parts count their own bytes */
	req->inflight = 1; /* held until every part is out */
	for (int i = 0; i < n && done < req->len; i++) {
		uint64_t len = i == n - 1 || req->len - done < part ? req->len - done : part;
		struct triad_req *sub = tr_req_new(ctx, req->kind, req->peer);
		struct triad_win *lw;

		if (!sub) {
			if (req->status == TRIAD_S_OK)
				req->status = TRIAD_S_NO_MEMORY;
			break;
		}
		sub->win = req->win;
		sub->off = req->off + done;
		sub->len = len;
		sub->buf = req->buf + done;
		sub->plane = planes[i];
		sub->lane = &ctx->peers[req->peer].lane[planes[i]];
		sub->on_done = stripe_done;
		sub->cb_arg = req;
		if ((lw = tr_win_find_addr(ctx, sub->buf, len)))
			sub->mr = lw->mr[sub->plane];
		req->inflight++;
		done += len;
		tr_lane_count(sub->lane, sub, 0);
		if (tr_win_lookup(ctx, sub))
			tr_rma_start(sub);
	}
	if (--req->inflight == 0)
		tr_req_complete(req, req->status);
	return 1;
}

/* req's lane is not up: does it wait for a connection?  For the peer's
 * first one (lazy), on a plane whose port is up; or for one back after a
 * fault broke the last (rejoin; a local port that went down is such a
 * fault too), unless it is pinned to its plane: then it fails with it. */
static int awaits(struct triad_ctx *ctx, const struct triad_req *req, int port_up)
{
	int rejoin = ctx->peers[req->peer].rejoin == TR_REJOIN_WAIT;

	if (rejoin ? (req->flags & TR_F_PLANE_PIN) != 0 : !port_up)
		return 0;
	return tr_peer_await(ctx, req->peer);
}

/* A put or get to another rank goes to the lane the choice gives; it may
 * first wait for a connection (may_wait: not when that wait is over). */
static void rma_issue(struct triad_ctx *ctx, struct triad_req *req, int may_wait)
{
	struct tr_lane *l = tr_peer_lane(ctx, req->peer, req->flags | TR_F_NO_DETOUR);
	struct triad_win *lw;
	int port_up = tr_fab_plane_port_up(ctx->fab, l->plane);

	req->plane = l->plane;
	req->lane = l;
	if (l->state != TR_LANE_UP && may_wait && awaits(ctx, req, port_up)) {
		tr_rma_await(ctx, req);
		return;
	}
	if (!port_up) {
		give_up(req, TRIAD_S_PLANE_DOWN, "the plane chosen is down");
		return;
	}
	if (l->state != TR_LANE_UP) {
		give_up(req, l->down_status, "the lane chosen is not up and no connection is awaited");
		return;
	}
	if ((req->flags & TRIAD_F_STRIPE) && req->len >= ctx->cfg.stripe_min && stripe(ctx, req))
		return;
	/* A buffer inside a window is registered already; any other is
	 * registered once the target's window has accepted the range.  An
	 * inline put needs no registration (its data rides in the work
	 * request), so its buffer's window is not looked for. */
	if (req->len && !rides_inline(req, l) && (lw = tr_win_find_addr(ctx, req->buf, req->len)))
		req->mr = lw->mr[l->plane];
	tr_lane_count(l, req, 0);
	if (tr_win_lookup(ctx, req))
		tr_rma_start(req);
}

void tr_rma_put_internal(struct triad_ctx *ctx, struct triad_req *req)
{
	rma_issue(ctx, req, 1);
}

/* ---- connect on first use --------------------------------------------------------*/
void tr_rma_await(struct triad_ctx *ctx, struct triad_req *req)
{
	tr_list_add_tail(&ctx->peers[req->peer].await_rma, &req->link);
}

/* Still to wait: its lane is not up, and is being set up (a pinned one),
 * or a connection to the peer is coming (tr_peer_coming). */
static int still_waits(struct triad_ctx *ctx, struct tr_peer *p, const struct triad_req *req)
{
	const struct tr_lane *l = tr_peer_lane(ctx, p->rank, req->flags | TR_F_NO_DETOUR);

	if (l->state == TR_LANE_UP)
		return 0;
	if (req->flags & TR_F_PLANE_PIN)
		return tr_lane_setting_up(l);
	return tr_peer_coming(ctx, p);
}

/* The peer hook: what waits for p's connection goes, waits or fails. */
static void await_flush(struct triad_ctx *ctx, struct tr_peer *p, int all, enum triad_status st)
{
	struct tr_list todo;

	/* Each once, in the order issued: what still waits goes back. */
	tr_list_init(&todo);
	while (!tr_list_empty(&p->await_rma)) {
		struct tr_list *e = p->await_rma.next;

		tr_list_del(e);
		tr_list_add_tail(&todo, e);
	}
	while (!tr_list_empty(&todo)) {
		struct triad_req *req = tr_list_first(&todo, struct triad_req, link);

		tr_list_del(&req->link);
		if (all)
			tr_req_complete(req, st);
		else if (still_waits(ctx, p, req))
			tr_list_add_tail(&p->await_rma, &req->link);
		else if (req->kind == TR_REQ_CHUNK)
			redo(req); /* its window looked for again, on the plane chosen now */
		else
			rma_issue(ctx, req, 0);
	}
}

/* ---- light puts ------------------------------------------------------------------*/
static const struct tr_lput_ops lput_ops;

static void lput_req_done(struct triad_req *req)
{
	tr_lane_lput_free(req->ctx, tr_container_of(req, struct tr_lput, req));
}

/* The common small put of a request-less stream, posted here with no
 * request (struct tr_lput).  1 when posted; 0 when it takes the general
 * path, which then reports whatever is wrong with it (an unknown window,
 * its bounds, a lane being set up or broken) or queues it. */
static int lput_post(struct triad_ctx *ctx, const void *buf, uint32_t len, int rank,
		     uint32_t win, uint64_t off, unsigned flags)
{
	struct tr_lane *l = tr_peer_lane(ctx, rank, flags | TR_F_NO_DETOUR);
	struct tr_lput *lp;
	struct tr_rwin *rw;

	if (l->state != TR_LANE_UP || !tr_list_empty(&l->rmaq) || len > tr_lane_max_inline(l) ||
	    !tr_fab_plane_port_up(ctx->fab, l->plane))
		return 0;
	rw = tr_rwin_ready(ctx, rank, win);
	if (!rw || !(rw->access & TRIAD_WIN_WRITE) || !tr_range_ok(rw->len, off, len))
		return 0;
	if (!(lp = tr_lane_lput_new(ctx)))
		return 0;
	lp->ops = &lput_ops;
	lp->lane = l;
	lp->rwin = rw;
	lp->off = off;
	lp->win = win;
	lp->len = len;
	lp->flags = flags;
	memcpy(lp->data, buf, len);
	if (tr_lane_post_lput(l, lp, rw->base + off, rw->rkey[l->plane]) < 0) {
		tr_lane_lput_free(ctx, lp); /* no room, or the post failed: the general path decides */
		return 0;
	}
	lp->ep = epoch_take(ctx, rank); /* its completion comes under this lock */
	return 1;
}

/* Its WRITE is complete (or never will be): its epoch counts it done. */
static void lput_done(struct tr_lput *lp, enum triad_status st)
{
	struct triad_ctx *ctx = lp->lane->ctx;
	struct tr_epoch *ep = lp->ep;
	int peer = lp->lane->peer;

	tr_lane_lput_free(ctx, lp);
	if (ep)
		epoch_done(ctx, peer, ep, st);
}

/* Its WRITE failed: the request-less put it stands for, as posted once on
 * its lane (then rma_done, as for any). */
static struct triad_req *lput_failed(struct tr_lput *lp)
{
	struct triad_req *req = &lp->req;
	struct tr_lane *l = lp->lane;

	tr_req_init(req, l->ctx, TR_REQ_PUT, l->peer);
	req->win = lp->win;
	req->off = lp->off;
	req->len = lp->len;
	req->buf = lp->data;
	req->flags = lp->flags | TR_F_NO_REQ;
	req->lane = l;
	req->plane = l->plane;
	req->rwin = lp->rwin;
	req->ep = lp->ep;
	req->posted = lp->len;
	req->inflight = 1;
	req->on_done = lput_req_done;
	req->rma = &rma_ops;
	return req;
}

static const struct tr_lput_ops lput_ops = { .done = lput_done, .failed = lput_failed };

/* Small operations are looked for among the send completions right after
 * their post: rxe does a small READ or WRITE, its answer included, inside
 * the post's system call, and a wait (or test) that finds the request done
 * takes no lock and polls nothing.  On a NIC that answers later this is
 * one empty poll of the send CQ.  Per get it took the path from 1589 to
 * 1247 instructions (bench/icount, 4ae8d1d). */
#define DONE_IN_POST_MAX 4096

/* req (held by the caller) was just posted whole, and is small; it is
 * not complete while a chunk of it is in flight. */
static int done_in_post(const struct triad_req *req)
{
	return req->len <= DONE_IN_POST_MAX && req->inflight && req->posted == req->len;
}

static int rma_submit(struct triad_ctx *ctx, enum tr_req_kind kind, void *buf, size_t len,
		      int rank, uint32_t win, uint64_t off, unsigned flags, triad_req_t **req_p)
{
	const char *what = kind == TR_REQ_PUT ? "put" : "get";
	struct triad_req *req;

	if (!ctx || (!buf && len)) {
		if (ctx)
			tr_debug("%s: needs a buffer", what);
		return -EINVAL;
	}
	if (rank < 0 || rank >= ctx->size) {
		tr_debug("%s: rank %d is not in the world (0..%d)", what, rank, ctx->size - 1);
		return -EINVAL;
	}
	if ((flags & ~TR_F_ALL) ||
	    ((flags & TR_F_PLANE_PIN) && (int)(flags & TR_F_PLANE_MASK) >= ctx->nplanes) ||
	    ((flags & TR_F_PLANE_PIN) && (flags & TRIAD_F_STRIPE))) {
		tr_debug("%s: bad flags 0x%x (%d planes)", what, flags, ctx->nplanes);
		return -EINVAL;
	}
	tr_ctx_lock(ctx);
	if (!req_p && kind == TR_REQ_PUT && rank != ctx->rank && len && len <= TR_LPUT_MAX &&
	    !(flags & TRIAD_F_STRIPE) && lput_post(ctx, buf, (uint32_t)len, rank, win, off, flags))
		goto out;
	req = tr_req_new(ctx, kind, rank);
	if (!req) {
		pthread_mutex_unlock(&ctx->lock);
		return -ENOMEM;
	}
	req->win = win;
	req->off = off;
	req->len = len;
	req->buf = buf;
	req->flags = flags;
	if (req_p)
		*req_p = req;
	else
		req->flags |= TR_F_NO_REQ;
	req->ep = epoch_take(ctx, rank);
	if (rank == ctx->rank) {
		rma_self(ctx, req);
	} else {
		rma_issue(ctx, req, 1);
		if (req_p && done_in_post(req))
			tr_fab_plane_poll_send(ctx->fab, req->plane);
	}
out:
	pthread_mutex_unlock(&ctx->lock);
	return 0;
}

int triad_put(triad_ctx_t *ctx, const void *buf, size_t len, int rank, uint32_t win,
	      uint64_t off, unsigned flags, triad_req_t **req_p)
{
	return rma_submit(ctx, TR_REQ_PUT, (void *)(uintptr_t)buf, len, rank, win, off, flags,
			  req_p);
}

int triad_get(triad_ctx_t *ctx, void *buf, size_t len, int rank, uint32_t win, uint64_t off,
	      unsigned flags, triad_req_t **req_p)
{
	return rma_submit(ctx, TR_REQ_GET, buf, len, rank, win, off, flags, req_p);
}

/* ---- flush ----------------------------------------------------------------------*/
/* The puts and gets to a peer are counted in epochs: the open one takes
 * every new operation; triad_flush closes it (it joins the peer's closed
 * epochs, oldest first) and waits for it.  Operations complete in any
 * order, so an epoch whose count reached 0 waits for the older ones before
 * its flushes complete: a flush then knows that everything issued before
 * it is done.  One epoch per flush, not per operation: nothing is
 * allocated on the put path but the first put after a flush. */
static struct tr_epoch *epoch_new(void)
{
	struct tr_epoch *ep = calloc(1, sizeof(*ep));

	if (ep) {
		tr_list_init(&ep->link);
		tr_list_init(&ep->flushes);
	}
	return ep;
}

static struct tr_epoch *epoch_take(struct triad_ctx *ctx, int peer)
{
	struct tr_flushes *p = &ctx->rma->peer[peer];

	if (!p->ep_open && !(p->ep_open = epoch_new())) {
		tr_warn("put/get to rank %d: out of memory for its flush epoch: "
			"a triad_flush will not wait for it", peer);
		return NULL;
	}
	p->ep_open->out++;
	return p->ep_open;
}


/* A flush reports the first error of a request-less operation to its rank
 * since the last flush there completed (an operation with a request
 * reports its own), and the slate is clean again. */
static void flush_complete(struct tr_flushes *p, struct triad_req *fl)
{
	tr_list_del(&fl->link);
	tr_req_complete(fl, p->ep_err);
}

/* Completes the flushes of every closed epoch that is done and has no
 * older one still going. */
static void epochs_retire(struct tr_flushes *p)
{
	while (!tr_list_empty(&p->ep_closed)) {
		struct tr_epoch *ep = tr_list_first(&p->ep_closed, struct tr_epoch, link);

		if (ep->out)
			return;
		tr_list_del(&ep->link);
		if (ep->err && !p->ep_err)
			p->ep_err = ep->err;
		while (!tr_list_empty(&ep->flushes))
			flush_complete(p, tr_list_first(&ep->flushes, struct triad_req, link));
		p->ep_err = TRIAD_S_OK;
		free(ep);
	}
}

/* The last operation counted in ep completed. */
static void epoch_idle(struct tr_flushes *p, struct tr_epoch *ep)
{
	if (ep == p->ep_open) { /* not flushed yet: it keeps counting */
		if (ep->err && !p->ep_err)
			p->ep_err = ep->err;
		ep->err = TRIAD_S_OK;
		return;
	}
	epochs_retire(p);
}

static void epoch_done(struct triad_ctx *ctx, int peer, struct tr_epoch *ep,
		       enum triad_status err)
{
	if (err && !ep->err)
		ep->err = err;
	if (!--ep->out)
		epoch_idle(&ctx->rma->peer[peer], ep);
}

int triad_flush(triad_ctx_t *ctx, int rank, triad_req_t **req_p)
{
	struct triad_req *fl;
	struct tr_flushes *p;
	struct tr_epoch *last;

	if (!ctx || !req_p)
		return -EINVAL;
	if (rank < 0 || rank >= ctx->size) {
		tr_debug("flush: rank %d is not in the world (0..%d)", rank, ctx->size - 1);
		return -EINVAL;
	}
	fl = tr_req_new(ctx, TR_REQ_FLUSH, rank);
	if (!fl)
		return -ENOMEM;
	*req_p = fl;
	p = &ctx->rma->peer[rank];
	tr_ctx_lock(ctx);
	if (p->ep_open && p->ep_open->out) { /* close it: this flush waits for it */
		tr_list_add_tail(&p->ep_closed, &p->ep_open->link);
		p->ep_open = NULL;
		/* Light puts that succeeded unsignalled come back only behind a
		 * signalled one. */
		for (int i = 0; i < ctx->nplanes; i++)
			tr_lane_lput_fence(&ctx->peers[rank].lane[i]);
	}
	if (tr_list_empty(&p->ep_closed)) {
		/* Nothing outstanding: done at once, with what failed since. */
		tr_req_complete(fl, p->ep_err);
		p->ep_err = TRIAD_S_OK;
	} else {
		/* The newest closed epoch holds everything issued so far. */
		last = tr_container_of(p->ep_closed.prev, struct tr_epoch, link);
		tr_list_add_tail(&last->flushes, &fl->link);
	}
	pthread_mutex_unlock(&ctx->lock);
	return 0;
}

/* At triad_fini every operation has completed (cancelled), so every epoch
 * has retired; what may be left is the open one, empty. */
void tr_rma_peer_free(struct triad_ctx *ctx, int peer)
{
	struct tr_flushes *p;

	if (!ctx->rma) /* not set up */
		return;
	p = &ctx->rma->peer[peer];
	free(p->ep_open);
	p->ep_open = NULL;
	while (!tr_list_empty(&p->ep_closed)) { /* not expected: freed, flushes cancelled */
		struct tr_epoch *ep = tr_list_first(&p->ep_closed, struct tr_epoch, link);

		tr_list_del(&ep->link);
		while (!tr_list_empty(&ep->flushes)) {
			struct triad_req *fl = tr_list_first(&ep->flushes, struct triad_req, link);

			tr_list_del(&fl->link);
			tr_req_complete(fl, TRIAD_S_CANCELLED);
		}
		free(ep);
	}
}
