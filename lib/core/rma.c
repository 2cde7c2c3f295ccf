/* One-sided operations (put, get) and requests.
 *
 * An operation goes: argument checks -> plane choice -> local registration
 * -> window lookup (cached after the first) -> bounds and access checks ->
 * the connection's queue -> chunks of at most TRIAD_CHUNK_SIZE posted as
 * long as the send queue has room -> complete when every chunk completed. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "core/ctx.h"
#include "base/log.h"
#include "proto/chunk.h"

void tr_req_complete(struct triad_req *req, enum triad_status st)
{
	struct triad_ctx *ctx = req->ctx;

	free(req->then); /* never posted: its op fails with this request */
	req->then = NULL;
	if (req->kind == TR_REQ_CHUNK && st == TRIAD_S_OK && req->lane) {
		req->lane->stats.tx_bytes += req->len;
		req->lane->stats.copy_bytes += req->len;
	}
	if (req->kind == TR_REQ_CHUNK || req->kind == TR_REQ_LOOKUP) {
		tr_copy_req_done(req, st); /* reports to the copy engine, frees req */
		return;
	}
	if (req->tmp_mr) {
		tr_fab_mr_dereg(req->tmp_mr);
		req->tmp_mr = NULL;
	}
	if (st == TRIAD_S_OK && req->lane) {
		if (req->kind == TR_REQ_PUT)
			req->lane->stats.tx_bytes += req->len;
		else if (req->kind == TR_REQ_GET)
			req->lane->stats.rx_bytes += req->len;
	}
	req->status = st;
	if (req->on_done) { /* internal: the owner takes it from here */
		req->on_done(req);
		tr_ctx_signal(ctx);
		return;
	}
	atomic_store_explicit(&req->done, 1, memory_order_release);
	tr_ctx_signal(ctx);
}

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
		tr_req_complete(req, l->down_status);
		return;
	}
	if (req->len == 0) {
		tr_req_complete(req, TRIAD_S_OK);
		return;
	}
	tr_list_add_tail(&l->rmaq, &req->link);
	tr_rma_pump(l);
}

void tr_rma_pump(struct tr_lane *l)
{
	uint64_t chunk = l->ctx->cfg.chunk_size;

	while (!tr_list_empty(&l->rmaq)) {
		struct triad_req *req = tr_list_first(&l->rmaq, struct triad_req, link);
		struct tr_rwin *rw = req->rwin;

		while (req->posted < req->len) {
			uint64_t n = tr_chunk_len(req->len, chunk, req->posted);
			int ret = tr_lane_post_rma(l, req->kind == TR_REQ_GET ? TR_RMA_READ : TR_RMA_WRITE,
						   req->buf + req->posted, (uint32_t)n, req->mr,
						   rw->base + req->off + req->posted,
						   rw->rkey[l->plane], req);

			if (ret == -EAGAIN)
				return;
			if (ret) {
				/* The lane is unusable: fail it, which fails the queue. */
				req->status = TRIAD_S_TRANSPORT;
				tr_lane_fail(l, TRIAD_S_TRANSPORT);
				return;
			}
			req->posted += n;
			req->inflight++;
		}
		tr_list_del(&req->link);
		if (req->then) { /* it waited for this request's last chunk */
			struct tr_msg *m = req->then;

			req->then = NULL;
			if (tr_peer_send_on(l, m, TR_FC_MEDIUM, NULL))
				tr_warn("peer %d plane %d: %s after the data could not be sent",
					l->peer, l->plane, tr_msg_type_str(m->type));
			free(m);
		}
	}
}

void tr_rma_done(struct triad_req *req, enum triad_status st)
{
	req->inflight--;
	if (st != TRIAD_S_OK && req->status == TRIAD_S_OK) {
		req->status = st;
		if (req->posted < req->len) { /* still queued: post no more */
			tr_list_del(&req->link);
			req->posted = req->len;
		}
	}
	if (!req->inflight && req->posted == req->len)
		tr_req_complete(req, req->status);
}

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

static int rma_submit(struct triad_ctx *ctx, enum tr_req_kind kind, void *buf, size_t len,
		      int rank, uint32_t win, uint64_t off, unsigned flags, triad_req_t **req_p)
{
	const char *what = kind == TR_REQ_PUT ? "put" : "get";
	struct triad_req *req;
	struct tr_lane *l;
	struct triad_win *lw;

	if (!ctx || !req_p || (!buf && len)) {
		if (ctx)
			tr_debug("%s: needs a request pointer and a buffer", what);
		return -EINVAL;
	}
	if (rank < 0 || rank >= ctx->size) {
		tr_debug("%s: rank %d is not in the world (0..%d)", what, rank, ctx->size - 1);
		return -EINVAL;
	}
	if ((flags & ~TR_F_ALL) ||
	    ((flags & TR_F_PLANE_PIN) && (int)(flags & TR_F_PLANE_MASK) >= ctx->nplanes)) {
		tr_debug("%s: bad flags 0x%x (%d planes)", what, flags, ctx->nplanes);
		return -EINVAL;
	}
	req = tr_req_new(ctx, kind, rank);
	if (!req)
		return -ENOMEM;
	req->win = win;
	req->off = off;
	req->len = len;
	req->buf = buf;
	*req_p = req;

	pthread_mutex_lock(&ctx->lock);
	if (rank == ctx->rank) {
		rma_self(ctx, req);
		goto out;
	}
	l = tr_peer_lane(ctx, rank, flags);
	req->plane = l->plane;
	req->lane = l;
	if (!tr_fab_plane_port_up(ctx->fab, l->plane)) {
		tr_req_complete(req, TRIAD_S_PLANE_DOWN);
		goto out;
	}
	if (l->state != TR_LANE_UP) {
		tr_req_complete(req, l->down_status);
		goto out;
	}
	if (len == 0) {
		tr_req_complete(req, TRIAD_S_OK);
		goto out;
	}
	if ((lw = tr_win_find_addr(ctx, buf, len)))
		req->mr = lw->mr[l->plane];
	else if (!(kind == TR_REQ_PUT && len <= tr_lane_max_inline(l))) {
		req->tmp_mr = tr_fab_mr_reg(ctx->fab, l->plane, buf, len, TR_MR_LOCAL_WRITE);
		if (!req->tmp_mr) {
			tr_req_complete(req, TRIAD_S_NO_MEMORY);
			goto out;
		}
		req->mr = req->tmp_mr;
	}
	if (kind == TR_REQ_PUT)
		l->stats.puts++;
	else
		l->stats.gets++;
	tr_win_lookup(ctx, req);
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

/* ---- requests ---------------------------------------------------------------------*/
static int req_done(void *arg)
{
	struct triad_req *req = arg;

	return atomic_load_explicit(&req->done, memory_order_acquire);
}

int triad_test(triad_req_t *req)
{
	if (!req)
		return -EINVAL;
	if (req_done(req))
		return 1;
	pthread_mutex_lock(&req->ctx->lock);
	tr_progress_app(req->ctx);
	pthread_mutex_unlock(&req->ctx->lock);
	return req_done(req);
}

int triad_progress(triad_ctx_t *ctx)
{
	if (!ctx)
		return -EINVAL;
	pthread_mutex_lock(&ctx->lock);
	tr_progress_app(ctx);
	pthread_mutex_unlock(&ctx->lock);
	return 0;
}

int triad_wait(triad_req_t *req, int timeout_ms)
{
	if (!req)
		return -EINVAL;
	if (req_done(req))
		return 0;
	return tr_wait_until(req->ctx, req_done, req, timeout_ms);
}

enum triad_status triad_req_status(const triad_req_t *req)
{
	if (!req)
		return TRIAD_S_PENDING;
	return atomic_load_explicit(&((triad_req_t *)req)->done, memory_order_acquire)
		       ? req->status : TRIAD_S_PENDING;
}

int triad_req_free(triad_req_t *req)
{
	if (!req)
		return 0;
	if (!req_done(req))
		return -EBUSY;
	free(req);
	return 0;
}
