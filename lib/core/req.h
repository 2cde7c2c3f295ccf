/* Requests (req.c): the generic request, its constructor, completion and
 * the public request API.  Below the lanes and the features: what
 * completes a request of a feature's kind is what the feature registered
 * (tr_req_kind_done). */
#ifndef TRIAD_CORE_REQ_H
#define TRIAD_CORE_REQ_H

#include <stdatomic.h>
#include <string.h>

#include "base/list.h"
#include "core/ctx.h"

struct triad_req {
	struct triad_ctx *ctx;
	enum tr_req_kind kind;
	_Atomic int done;
	enum triad_status status;
	struct tr_list link; /* in a lane's rmaq or an rwin's waiters */
	struct tr_lane *lane;
	int peer, plane;
	uint32_t win;
	uint64_t off, len;
	char *buf;
	uint64_t posted;   /* bytes handed to the NIC */
	int inflight;	   /* work requests posted and not completed */
	unsigned flags;		/* TRIAD_F_*: a pinned op is never moved */
	int redo;		/* flushed by a lane that broke: done again, whole */
	int redos;		/* times it was */
	unsigned fence_planes;	/* planes whose break flushed a WRITE of it, which
				 * may still land: it settles once they are fenced */
	const struct tr_mr *mr; /* of buf; NULL: inline */
	struct tr_mr *tmp_mr;	/* registration for this request only */
	struct tr_rc_entry *rc_ent; /* or the cached one it holds, of plane rc_plane */
	int rc_plane;
	struct tr_rwin *rwin;
	/* copies */
	int leg;		 /* COPY: enum triad_copy_leg of a failure */
	uint32_t c_init;	 /* CHUNK, LOOKUP: the op (initiator, id, chunk) */
	uint64_t c_op, c_chunk;
	/* internal requests: called once complete; it frees the request */
	void (*on_done)(struct triad_req *req);
	struct tr_epoch *ep; /* PUT, GET: the flush epoch it counts in */
	void *cb_arg;
	uint32_t cb_src, cb_dst;
	uint64_t cb_chunk;
	int failed_rank; /* BCAST */
	/* What its WRITEs and READs are for, or what it waits for in its
	 * lane's queue of one-sided operations (onesided.h; set when it is
	 * queued there). */
	const struct tr_rma_ops *rma;
	/* A message sent with this request that its lane gave back before it
	 * was delivered (the lane broke) is its owner's again, encoded and
	 * numbered: the peer layer's msg_lost calls this instead of sending it again
	 * itself, and the owner decides where it goes (tr_peer_msg_resend,
	 * tr_peer_msg_hold) or skips its number (tr_peer_msg_skip).  NULL: the
	 * peer layer sends it again on the lane the choice gives. */
	void (*lost)(struct triad_req *req, struct tr_lane *l, const void *data, int len,
		     unsigned prio);
	/* That message while it waits behind its lane's one-sided operations
	 * (tr_lane_send_after, onesided.c). */
	struct tr_after_msg *after;
};

/* What completes a request of a kind (tr_req_kind_done), in place of
 * tr_req_finish(). */
typedef void (*tr_req_fn)(struct triad_req *req, enum triad_status st);

/* The one request constructor: zeroed, status OK, of kind for peer. */
struct triad_req *tr_req_new(struct triad_ctx *ctx, enum tr_req_kind kind, int peer);
/* The same in place, for a request held inside another record. */
static inline void tr_req_init(struct triad_req *req, struct triad_ctx *ctx,
			       enum tr_req_kind kind, int peer)
{
	memset(req, 0, sizeof(*req));
	req->ctx = ctx;
	req->kind = kind;
	req->status = TRIAD_S_OK;
	req->peer = peer;
	tr_list_init(&req->link);
}
/* Frees a request of tr_req_new (kept in the calling thread's cache). */
void tr_req_free(struct triad_req *req);
/* req is complete with st (lock held): it is counted, and then its kind's owner takes it
 * (tr_req_kind_done), or else tr_req_finish() and the sleepers' wake-up. */
void tr_req_complete(struct triad_req *req, enum triad_status st);
/* Registers fn (at setup) as what completes requests of kind, in place
 * of tr_req_finish(): it frees or hands over the request, and wakes the
 * sleepers (tr_ctx_signal). */
void tr_req_kind_done(struct triad_ctx *ctx, enum tr_req_kind kind, tr_req_fn fn);
/* The end of a request's completion: its status, then its owner's
 * on_done, its freeing (a request-less one) or its waiter's flag. */
void tr_req_finish(struct triad_req *req, enum triad_status st);

#endif
