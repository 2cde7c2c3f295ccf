/* One-sided operations on a lane (see onesided.h): the RDMA WRITEs and
 * READs posted for requests, the light puts and the fence behind them, and
 * their completions.  What a WRITE or READ was for is not known here: its
 * cookie carries what its completion calls, set by whoever posted it. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "base/log.h"
#include "core/onesided.h"
#include "core/progress.h"
#include "core/req.h"

static int post_rma(struct tr_lane *l, enum tr_rma_op op, void *laddr, uint32_t len,
		    const struct tr_mr *mr, uint64_t raddr, uint32_t rkey, uint64_t cookie,
		    int signalled)
{
	unsigned wrs = op == TR_RMA_READ ? tr_fab_qp_read_wrs(l->qp) : 1;
	int ret;

	if (l->state != TR_LANE_UP)
		return -ENOTCONN;
	/* Keep room in the send queue for every message the slots allow, so
	 * that bulk transfers never hold acknowledgements back, and for a
	 * fence behind the light puts. */
	if (l->sq_avail < (int)(l->ntx + 1 + wrs))
		return -EAGAIN;
	tr_progress_want_send(l->ctx, l->plane);
	/* With tx_write/tx_read after it: how long the post itself takes (rxe
	 * does the request inside it). */
	TR_EV(l->ctx, "rma_post", l->peer, len);
	ret = tr_fab_post_rma(l->qp, op, laddr, len, mr, raddr, rkey, cookie, signalled);
	if (ret < 0)
		return ret;
	l->sq_avail -= ret;
	l->sq_posted += ret;
	l->rma_posted += ret;
	TR_EV(l->ctx, op == TR_RMA_WRITE ? "tx_write" : "tx_read", l->peer, len);
	return ret;
}

int tr_lane_post_rma(struct tr_lane *l, enum tr_rma_op op, void *laddr, uint32_t len,
		     const struct tr_mr *mr, uint64_t raddr, uint32_t rkey,
		     struct triad_req *req)
{
	return post_rma(l, op, laddr, len, mr, raddr, rkey, (uintptr_t)req | TR_CK_RMA, 1);
}

uint32_t tr_lane_max_inline(const struct tr_lane *l)
{
	return l->qp ? tr_fab_qp_max_inline(l->qp) : 0;
}

/* ---- light puts ------------------------------------------------------------------*/
/* One light put in this many is signalled (UCX's rc_verbs: one in 64):
 * the others cost no completion to write, poll and handle. */
#define TR_LPUT_SIGNAL 16
/* Free records kept, like the request cache; freed at close. */
#define LPUT_CACHE 256

void tr_lane_lput_free(struct triad_ctx *ctx, struct tr_lput *lp)
{
	if (ctx->nlputs >= LPUT_CACHE) {
		free(lp);
		return;
	}
	lp->next = ctx->lputs;
	ctx->lputs = lp;
	ctx->nlputs++;
}

struct tr_lput *tr_lane_lput_new(struct triad_ctx *ctx)
{
	struct tr_lput *lp = ctx->lputs;

	if (lp) {
		ctx->lputs = lp->next;
		ctx->nlputs--;
	} else if (!(lp = malloc(sizeof(*lp)))) {
		return NULL;
	}
	lp->ep = NULL;
	lp->fence = 0;
	lp->ops = NULL;
	return lp;
}

void tr_lane_lput_cache_free(struct triad_ctx *ctx)
{
	while (ctx->lputs) {
		struct tr_lput *lp = ctx->lputs;

		ctx->lputs = lp->next;
		free(lp);
	}
	ctx->nlputs = 0;
}

static void lput_append(struct tr_lane *l, struct tr_lput *lp)
{
	lp->next = NULL;
	if (l->lp_tail)
		l->lp_tail->next = lp;
	else
		l->lp_head = lp;
	l->lp_tail = lp;
	if (lp->signalled) {
		l->lp_since_sig = 0;
	} else {
		l->lp_since_sig++;
		l->lp_unsig++;
	}
}

/* A light put's WRITE completed OK: counted, and its record given back. */
/* A light put (or a fence) left the lane's list: its completion (a fence
 * counts in no epoch: the record is just given back). */
static void lput_retire(struct tr_lane *l, struct tr_lput *lp, enum triad_status st)
{
	if (lp->fence)
		tr_lane_lput_free(l->ctx, lp);
	else
		lp->ops->done(lp, st);
}

static void lput_ok(struct tr_lane *l, struct tr_lput *lp)
{
	l->stats.tx_bytes += lp->len;
	lput_retire(l, lp, TRIAD_S_OK);
}

/* lp came back: every light put posted before it has completed (one that
 * failed would have come back first, in order), and they leave the list
 * with it. */
static void lput_unlink(struct tr_lane *l, struct tr_lput *lp)
{
	while (l->lp_head && l->lp_head != lp) {
		struct tr_lput *done = l->lp_head;

		l->lp_head = done->next;
		l->lp_unsig -= !done->signalled;
		l->sq_posted--;
		l->sq_avail++;
		l->rma_posted--;
		lput_ok(l, done);
	}
	if (l->lp_head == lp)
		l->lp_head = lp->next;
	if (!l->lp_head)
		l->lp_tail = NULL;
	l->lp_unsig -= !lp->signalled;
}

static int lput_fence_needed(const struct tr_lane *l)
{
	return l->lp_tail && !l->lp_tail->signalled;
}

/* Posts an empty signalled WRITE behind the light puts: once it comes
 * back, they all have.  On a broken lane it comes back flushed, as any
 * post to a QP in the error state (what ib_drain_sq relies on). */
static int post_fence(struct tr_lane *l)
{
	struct tr_lput *lp;
	int ret;

	/* Up, messages keep their share of the send queue (post_rma keeps one
	 * more slot for this); broken, nothing else is posted any more. */
	if (l->sq_avail <= (l->state == TR_LANE_UP ? l->ntx : 0))
		return -EAGAIN;
	lp = tr_lane_lput_new(l->ctx);
	if (!lp)
		return -ENOMEM;
	lp->lane = l;
	lp->len = 0;
	lp->fence = 1;
	lp->signalled = 1;
	ret = tr_fab_post_rma(l->qp, TR_RMA_WRITE, lp->data, 0, NULL, l->lp_raddr, l->lp_rkey,
			      (uintptr_t)lp | TR_CK_LPUT, 1);
	if (ret < 0) {
		tr_lane_lput_free(l->ctx, lp);
		return ret;
	}
	l->sq_avail--;
	l->sq_posted++;
	l->rma_posted++;
	lput_append(l, lp);
	tr_progress_want_send(l->ctx, l->plane);
	return 0;
}

void tr_lane_lput_fence(struct tr_lane *l)
{
	int ret;

	l->fence_wanted = 0;
	if (l->state != TR_LANE_UP || !lput_fence_needed(l))
		return; /* a broken lane put one there when it broke */
	ret = post_fence(l);
	if (ret == -EAGAIN || ret == -ENOMEM)
		l->fence_wanted = 1; /* after the next completion (pump) */
	else if (ret)
		tr_lane_fail(l, TRIAD_S_TRANSPORT);
}

int tr_lane_post_lput(struct tr_lane *l, struct tr_lput *lp, uint64_t raddr, uint32_t rkey)
{
	/* Signalled: one in TR_LPUT_SIGNAL, and every one once the send queue
	 * runs short, so that its slots come back soon. */
	int sig = l->lp_since_sig + 1 >= TR_LPUT_SIGNAL ||
		  l->sq_avail <= l->ntx + 2 + TR_LPUT_SIGNAL;
	int ret = post_rma(l, TR_RMA_WRITE, lp->data, lp->len, NULL, raddr, rkey,
			   (uintptr_t)lp | TR_CK_LPUT, sig);

	if (ret < 0)
		return ret;
	lp->signalled = (uint8_t)sig;
	lput_append(l, lp);
	l->lp_raddr = raddr;
	l->lp_rkey = rkey;
	l->stats.puts++;
	return 0;
}

void tr_lane_lputs_cancel(struct tr_lane *l)
{
	while (l->lp_head) {
		struct tr_lput *lp = l->lp_head;

		l->lp_head = lp->next;
		lput_retire(l, lp, TRIAD_S_CANCELLED);
	}
	l->lp_tail = NULL;
	l->lp_unsig = l->lp_since_sig = l->fence_wanted = 0;
}

void tr_lane_lputs_broken(struct tr_lane *l)
{
	if (lput_fence_needed(l) && post_fence(l))
		tr_error("peer %d plane %d: no fence behind the last light puts on the broken "
			 "connection: it cannot be released", l->peer, l->plane);
}

/* ---- completions ---------------------------------------------------------------------*/
/* What a WRITE or READ was for, for the log. */
static const char *rma_what(const struct triad_req *req)
{
	if (!req)
		return "light put";
	return req->kind == TR_REQ_GET ? "get" : req->kind == TR_REQ_CHUNK ? "copy chunk" : "put";
}

/* A WRITE or READ came back: of req, or of the light put lp (the other
 * NULL).  A light put that failed becomes its request here, and everything
 * after is the same for both. */
void tr_lane_on_rma(struct tr_lane *l, struct triad_req *req, struct tr_lput *lp,
		    const struct tr_fab_wc *wc)
{
	enum triad_status st = wc->status;
	int failed = st != TRIAD_S_OK; /* it may break the lane: see tr_lane_check_drained */

	TR_EV(l->ctx, "rma_done", l->peer, wc->status);
	l->in_rma_wc += failed;
	/* A work request's cookie is its request (or light put), trusted to
	 * be alive until its completion.  One compare each catches a cookie
	 * that outlived its request (memory reused by another, which this
	 * completion would then complete) or a request that moved lanes while
	 * posted: bugs that showed once as a get reporting OK with its buffer
	 * unwritten (CI, fabric/copy-plane-failed). */
	if (wc->qp_num != l->qpn)
		tr_error("peer %d plane %d: completion (%s) of qp 0x%x for a %s on qp 0x%x: "
			 "not its own", l->peer, l->plane, wc->why ? wc->why : "ok", wc->qp_num,
			 rma_what(req), l->qpn);
	if (req && !req->inflight)
		tr_error("peer %d plane %d: completion (%s) of a %s with nothing in flight",
			 l->peer, l->plane, wc->why ? wc->why : "ok", rma_what(req));
	if (lp)
		lput_unlink(l, lp);
	l->sq_posted--;
	l->sq_avail++;
	l->rma_posted--;
	if (lp && lp->fence) {
		/* It only stood behind the others. */
		if (st != TRIAD_S_OK && !wc->flushed) {
			l->stats.errors++;
			tr_warn("peer %d plane %d: fence failed: %s", l->peer, l->plane, wc->why);
			tr_lane_fail(l, st);
		}
		tr_lane_flushed_while_up(l, wc);
		lput_retire(l, lp, TRIAD_S_OK);
		goto out;
	}
	if (st != TRIAD_S_OK) {
		if (lp)
			req = lp->ops->failed(lp);
		tr_lane_flushed_while_up(l, wc);
		if (wc->flushed) {
			st = l->down_status;
		} else {
			l->stats.errors++;
			tr_warn("peer %d plane %d: %s failed: %s", l->peer, l->plane,
				rma_what(req), wc->why);
			/* The NIC refused the keys: the owner destroyed the window and
			 * its notice is still on the way.  Nothing else goes to it
			 * with them; the next access asks the owner again. */
			if (st == TRIAD_S_REMOTE_ACCESS)
				req->rma->refused(req);
			tr_lane_fail(l, st);
		}
	}
	/* A fault of the connection, not of the operation (flushed, retries
	 * exceeded, the responder's invalid-request NAK: fabric/wc.h) may be
	 * done again on another plane.  CI once saw rxe NAK a copy chunk's
	 * WRITE as an invalid request: final, it failed the copy although
	 * two planes were live. */
	if (req) {
		req->rma->done(req, st, wc->conn_fault);
	} else {
		lput_ok(l, lp);
	}
out:
	l->in_rma_wc -= failed;
	if (l->state == TR_LANE_UP) {
		/* RMA leaves room in the send queue for every message the buffers
		 * allow (post_rma): a message or buffer status waits for the
		 * entry this completion freed only when the queue was full. */
		if (l->sq_avail == 1 || l->fence_wanted)
			l->ctx->lane_parts->pump(l);
		else if (tr_ctx_adapts(l->ctx)) /* less in flight here: a pass */
			l->ctx->lane_owner->redecide(l);
		tr_lane_rma_pump(l);
	} else {
		tr_lane_check_drained(l);
	}
}

/* ---- the ordered send ------------------------------------------------------------------*/
/* A message that must follow everything posted or queued on its lane (the
 * WRITEs it reports on, for one) waits in the lane's queue of one-sided
 * operations (rmaq) as an entry of its own, its request's, behind the
 * operations queued before it; once they are all posted it goes to the
 * message channel of the same lane, and so onto the same QP after them
 * (RC executes one QP's work requests in order).  It belongs to no other
 * request: one of those failing, finishing or moving to another lane
 * leaves it where it is.  Should the lane break first, the message goes
 * back to its owner (req->lost), as it does when it was sent and the
 * break flushed it (the lane owner's msg_lost). */
struct tr_after_msg {
	struct tr_lane *l;
	int len;
	unsigned prio;
	char data[];
};

/* Takes req's message out of l's queue and hands it on: sent on l (0), or
 * back to the owner (the lane broke, or the send failed). */
static void after_go(struct triad_req *req, int send)
{
	struct tr_after_msg *a = req->after;

	tr_list_del(&req->link);
	req->after = NULL;
	if (!send || a->l->ctx->lane_parts->send(a->l, a->data, a->len, a->prio, req, 0))
		req->lost(req, a->l, a->data, a->len, a->prio);
	free(a);
}

/* Its turn in the queue (it heads it): what was before it is posted. */
static void after_pump(struct tr_lane *l)
{
	after_go(tr_list_first(&l->rmaq, struct triad_req, link), l->state == TR_LANE_UP);
}

static void after_broken(struct triad_req *req, enum triad_status st)
{
	(void)st;
	after_go(req, 0);
}

static const struct tr_rma_ops after_ops = {
	.pump = after_pump,
	.broken = after_broken,
};

int tr_lane_send_after(struct tr_lane *l, const void *data, int len, unsigned prio,
		       struct triad_req *req)
{
	struct tr_after_msg *a;

	if (tr_list_empty(&l->rmaq))
		return l->ctx->lane_parts->send(l, data, len, prio, req, 0); /* posted ones are ahead */
	if (l->state != TR_LANE_UP)
		return -ENOTCONN;
	if ((unsigned)len > l->peer_slot_size)
		return -EMSGSIZE;
	if (!(a = malloc(sizeof(*a) + (size_t)len)))
		return -ENOMEM;
	a->l = l;
	a->len = len;
	a->prio = prio;
	memcpy(a->data, data, (size_t)len);
	req->after = a;
	req->rma = &after_ops;
	tr_list_add_tail(&l->rmaq, &req->link);
	return 0;
}

void tr_lane_rma_pump_queue(struct tr_lane *l)
{
	while (!tr_list_empty(&l->rmaq)) {
		struct triad_req *head = tr_list_first(&l->rmaq, struct triad_req, link);

		head->rma->pump(l);
		if (!tr_list_empty(&l->rmaq) && tr_list_first(&l->rmaq, struct triad_req, link) == head)
			return; /* it waits for room */
	}
}

const char *tr_lane_after_where(const struct tr_lane *l, unsigned prio, uint32_t seq)
{
	for (const struct tr_list *e = l->rmaq.next; e != &l->rmaq; e = e->next) {
		const struct triad_req *req = tr_container_of(e, struct triad_req, link);

		if (req->rma == &after_ops &&
		    tr_msg_carries(req->after->data, req->after->len, prio, seq))
			return "queued behind the lane's WRITEs and READs";
	}
	return NULL;
}
