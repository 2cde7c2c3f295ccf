/* One-sided operations on a lane (onesided.c): RDMA WRITEs and READs posted
 * for a request (a put, a get, a copy's chunk) or for a light put, and
 * their completions.  A WRITE or READ keeps the send queue's room for
 * every message the peer's slots allow (chan.h), so that bulk transfers
 * never hold a message or an acknowledgement back.
 *
 * Every function here is called with the context lock held. */
#ifndef TRIAD_CORE_ONESIDED_H
#define TRIAD_CORE_ONESIDED_H

#include "core/lane.h"
#include "core/req.h"

/* What a WRITE or READ posted on a lane is for.  Its cookie, a request
 * or a light put's record, carries the functions its completion calls,
 * set by whoever posted it (rma.c): the lane calls no feature by name.
 * An entry of the lane's queue (rmaq) carries the same: an operation's
 * (rma.c), or an ordered message's (below: pump and broken only). */
struct tr_rma_ops {
	/* One WRITE or READ of req came back with st; conn_fault: its
	 * connection failed it (flushed, retries exceeded, an invalid-request
	 * NAK: fabric/wc.h), so it may be done again elsewhere. */
	void (*done)(struct triad_req *req, enum triad_status st, int conn_fault);
	/* The NIC refused req's remote keys: called before the lane breaks for
	 * it, so that nothing else goes out with them. */
	void (*refused)(struct triad_req *req);
	/* l's send queue has room again, and an entry of this owner heads its
	 * queue (rmaq): post what it takes of its entries there, up to the
	 * first that is not its own. */
	void (*pump)(struct tr_lane *l);
	/* The lane req was queued on broke before req was posted whole. */
	void (*broken)(struct triad_req *req, enum triad_status st);
	/* req, held by the redo fence (peer.c), may settle now: done again
	 * or completed. */
	void (*fenced)(struct triad_req *req);
};
struct tr_lput;
struct tr_lput_ops {
	/* The light put's WRITE is known complete (st OK), or never will be
	 * (CANCELLED: its lane was released): the record is the callee's. */
	void (*done)(struct tr_lput *lp, enum triad_status st);
	/* Its WRITE failed: the request it stands for, as posted once on its
	 * lane (its rma ops set), which then takes the general path. */
	struct triad_req *(*failed)(struct tr_lput *lp);
};

/* A light put: a put issued with no request (req_p NULL) that rides in its
 * work request, to a window already described, on a live lane with nothing
 * queued ahead (rma.c, lput_post).  It is posted at once (most of them
 * unsignalled: onesided.c, light puts) with this record as its cookie instead
 * of a request: what its completion needs (ops, above), and a copy
 * of its bytes (the WRITE took them inline at the post; a redo takes them
 * from here, not from a buffer the caller may have reused, as UCX's short
 * puts allow).  Should its work request fail, the record becomes the request it stands
 * for (req, ops->failed) and takes the general path from there: done
 * again on a live plane, or its error kept for the next flush.  A lane's
 * fence (onesided.c) is such a record too, with no ops. */
#define TR_LPUT_MAX 64
struct tr_lput {
	struct tr_lput *next; /* in the context's cache of free ones, or its lane's list */
	struct tr_lane *lane;
	uint8_t signalled;    /* its completion comes back even when it succeeds */
	uint8_t fence;	      /* an empty WRITE that only retires those before it */
	const struct tr_lput_ops *ops;
	struct tr_rwin *rwin;
	struct tr_epoch *ep;
	uint64_t off;
	uint32_t win, len;
	unsigned flags;
	char data[TR_LPUT_MAX];
	struct triad_req req; /* only once its work request failed */
};

/* Post one RDMA WRITE or READ for req (req->rma set): the number of work
 * requests it took (a READ may take two: tr_fab_qp_read_wrs), each
 * completing once, or -EAGAIN when the send queue must keep its room for
 * messages. */
int tr_lane_post_rma(struct tr_lane *l, enum tr_rma_op op, void *laddr, uint32_t len,
		     const struct tr_mr *mr, uint64_t raddr, uint32_t rkey,
		     struct triad_req *req);
/* Post a light put's WRITE (its bytes inline, from the record; lp->ops
 * set): 1, or the same errors. */
int tr_lane_post_lput(struct tr_lane *l, struct tr_lput *lp, uint64_t raddr, uint32_t rkey);
/* The ordered send (the peer layer's tr_peer_send_after numbers and
 * encodes the message): data goes on l after every WRITE and READ posted
 * or queued on l so far, and on its priority after the messages queued
 * before it; at once (the channel's send) when nothing is queued.  req (its lost
 * set) completes once it arrived; if l breaks before that, the message
 * goes back to req->lost.  0, -ENOTCONN, -EMSGSIZE, -ENOMEM. */
int tr_lane_send_after(struct tr_lane *l, const void *data, int len, unsigned prio,
		       struct triad_req *req);
/* For a diagnosis: where on l number seq of prio waits as such a message,
 * or NULL. */
const char *tr_lane_after_where(const struct tr_lane *l, unsigned prio, uint32_t seq);
/* Light-put records (struct tr_lput), light puts' and the lanes'
 * fences: from a cache of free ones that keeps malloc off the path (NULL:
 * no memory), given back, and the cache freed at close. */
struct tr_lput *tr_lane_lput_new(struct triad_ctx *ctx);
void tr_lane_lput_free(struct triad_ctx *ctx, struct tr_lput *lp);
void tr_lane_lput_cache_free(struct triad_ctx *ctx);
/* triad_flush: every light put posted on l so far is to come back, the
 * unsignalled ones at the end of its list too (a fence behind them, now
 * or as soon as the send queue has room). */
void tr_lane_lput_fence(struct tr_lane *l);
uint32_t tr_lane_max_inline(const struct tr_lane *l);

/* ---- for the channel (chan.c) -----------------------------------------------*/
/* A WRITE or READ came back (tr_lane_on_send): of
 * req, or of the light put lp (the other NULL). */
void tr_lane_on_rma(struct tr_lane *l, struct triad_req *req, struct tr_lput *lp,
		    const struct tr_fab_wc *wc);
/* l broke: unsignalled light puts at the end of its list that succeeded
 * would never come back; a fence behind them does, flushed. */
void tr_lane_lputs_broken(struct tr_lane *l);
/* l's QP is released: light puts that never came back (a provider that
 * would not flush a fence, or the close) complete as cancelled, and their
 * flushes learn they failed. */
void tr_lane_lputs_cancel(struct tr_lane *l);

/* Room in l's send queue came back: the operations queued on it go, by
 * the pump of whoever queued them (tr_rma_ops), in order, each owner's
 * up to the first entry that is not its own.  Inline: every send
 * completion asks. */
void tr_lane_rma_pump_queue(struct tr_lane *l);
static inline void tr_lane_rma_pump(struct tr_lane *l)
{
	if (!tr_list_empty(&l->rmaq))
		tr_lane_rma_pump_queue(l);
}

#endif
