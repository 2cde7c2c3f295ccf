/* A lane: one peer on one plane.  It holds the fabric's QP handle, the
 * connection's state machine (one writer: lane_set_state in lane.c), the
 * message buffers, both directions' flow-control registers, the message
 * queues by priority, the queue of one-sided operations waiting for
 * send-queue room, and the counters.  Three files share it: lane.c sets
 * the connection up, breaks, drains and rebuilds it (this header); chan.c
 * carries messages over it (chan.h); onesided.c posts WRITEs and READs on
 * it (onesided.h).
 *
 * Every function here is called with the context lock held. */
#ifndef TRIAD_CORE_LANE_H
#define TRIAD_CORE_LANE_H

#include <ev.h>

#include "base/list.h"
#include "fabric/fabric.h"
#include "proto/fc.h"
#include "proto/fence.h"
#include "proto/stream.h"
#include "proto/wire.h"
#include "triad.h"

struct triad_ctx;
struct triad_req;

enum tr_lane_state {
	TR_LANE_DOWN,	    /* nothing yet (passive side waits for the peer) */
	TR_LANE_CONNECTING, /* active side: resolving or connecting */
	TR_LANE_ACCEPTING,  /* passive side: accepted, not yet established */
	TR_LANE_UP,
	TR_LANE_DRAINING,   /* broken: waiting for the flushed work requests */
	TR_LANE_FAILED,	    /* resources released; operations fail at once */
};
const char *tr_lane_state_str(enum tr_lane_state s);

/* Receive buffers beyond the slots: standalone BSMs in flight (at most
 * two) and a spare.  Send buffers likewise beyond the peer's slots. */
#define TR_LANE_EXTRA_BUFS 3

/* Registered buffer for one message.  A receive buffer whose message a
 * handler kept is the triad_am_msg_t handle. */
struct tr_buf {
	struct tr_lane *lane;
	char *data;
	int len;		/* of the message in it */
	uint8_t slot;		/* the flow-control slot it occupies */
	uint8_t prio;
	struct triad_req *req;	/* send: completes when the message arrived */
	struct tr_buf *next_free;
	struct tr_orphan *orphan; /* kept past its lane's break (lane.c) */
};

/* Receive buffers handlers still held when their lane broke: set apart,
 * so that the lane is rebuilt with fresh ones at once; freed with the
 * last one given back (or at close). */
struct tr_orphan {
	struct tr_list link; /* in the context's orphans */
	char *bufmem;
	struct tr_mr *mr;
	struct tr_buf *rx;
	int held;
};
/* At close: frees what handlers never gave back. */
void tr_lane_orphans_free(struct tr_list *orphans);

struct tr_lane {
	struct triad_ctx *ctx;
	int peer;
	int plane;
	enum tr_lane_state state;
	enum triad_status down_status; /* why it broke */
	struct tr_qp *qp;
	uint32_t qpn;		/* its number, to check completions against */
	int sq_avail;  /* send work requests that may still be posted */
	int sq_posted; /* posted and not yet completed (incl. flushed) */
	int rq_posted;
	int rx_held;   /* receive buffers a handler kept */
	int drain_ticks; /* DRAINING: timer periods since the break */
	int held_ticks;	 /* UP: timer periods with every receive slot held */
	char *bufmem;
	struct tr_mr *buf_mr;
	int nrx, ntx;
	struct tr_buf *rx, *tx, *tx_free;
	/* Flow control: our sends into the peer's slots, and the peer's into ours. */
	struct tr_fc_tx fc_tx;
	struct tr_fc_rx fc_rx;
	unsigned rx_need[TR_FC_NPRIO]; /* the thresholds on our slots */
	unsigned peer_slots, peer_slot_size; /* from the peer's connect data */
	int peer_bare; /* ... which asked for bare active messages (proto/wire.h) */
	struct tr_conn_priv accept_priv;     /* passive side: the request's */
	int bsm_inflight; /* standalone BSMs posted, not completed */
	int rma_posted;	  /* WRITEs and READs posted, not completed */
	int req_msgs;	  /* messages with a request posted, not completed */
	int bsm_linger;	  /* a BSM is due but waits to cover more slots */
	struct tr_list msgq[TR_FC_NPRIO]; /* encoded messages waiting for a slot */
	unsigned nqueued;
	struct tr_list rmaq; /* requests with chunks left to post */
	/* Light puts posted (onesided.h), oldest first, linked by their
	 * next.  All but one in TR_LPUT_SIGNAL go unsignalled: one comes back
	 * only if it fails, and is known complete once a light put posted
	 * after it comes back.  Unsignalled ones at the tail (a flush waits
	 * for them, a break must account for them) get a fence behind them. */
	struct tr_lput *lp_head, *lp_tail;
	int lp_unsig;	   /* unsignalled ones in the list */
	int lp_since_sig;  /* posted since the last signalled one */
	int fence_wanted;  /* a flush wants a fence that found no room yet */
	uint64_t lp_raddr; /* where the last one went: its fence goes there */
	uint32_t lp_rkey;
	struct triad_conn_stats stats;
	ev_timer retry_w;
	ev_tstamp deadline;
	int attempts;
	int want_reconnect; /* broken after start-up: the progress thread retries */
	int peer_closed;    /* it broke because the peer closed its end (a
			     * disconnect, or its PLANE_DOWN) */
	int in_rma_wc;	    /* WRITE or READ completions being handled:
			     * what waits for a slot is given back only after
			     * it (tr_lane_check_drained) */
	/* The redo fence (proto/fence.h, peer.c): a WRITE flushed by a break
	 * may still be on its way and land at the peer, until the peer's end
	 * of the QP is in the error state.  The lane's breaks and the latest
	 * known fenced (the peer's answer to our PLANE_DOWN, its own
	 * disconnect or PLANE_DOWN, or a connection rebuilt, which the peer
	 * accepts only once its old end is gone). */
	struct tr_fence_lane fence;
	uint32_t remote_qpn; /* the peer's end of the current connection */
	/* Connect on first use (TRIAD_CONNECT=lazy, tr_lane_use). */
	int ever_up;	  /* it has been up: from now on the lower rank rebuilds it */
	int first_use;	  /* its first connection is being set up for an operation */
	int want_connect; /* the progress thread makes that attempt (it owns the timers) */
	struct tr_peer_link *pl; /* its peer's (set with the peer) */
};

/* What a peer's lanes share (struct tr_peer holds it, each lane points to
 * it).  The message streams (proto/stream), one per priority and
 * direction: a priority's messages keep their order on a lane, while a
 * higher one overtakes a lower one held back by flow control for as long
 * as it likes.  The engine numbers, bounds and settles them, keeps the
 * window, says which lost numbers to tell (SEQ_SKIP), and judges every
 * arrival; peer.c carries out what it says, the channel (chan.c) asks the
 * send window before it posts and reads the numbers expected next to
 * decode a bare message.  And the peer's process as the connections
 * know it. */
struct tr_peer_link {
	struct tr_stream_tx tx[TR_FC_NPRIO];
	struct tr_stream_rx rx[TR_FC_NPRIO];
	int blocked; /* a lane holds a message back for the window */
	int gone; /* it said BYE, or another process has its address now: its
		   * connections are not rebuilt */
	uint64_t incarnation; /* its process's, from its first lane up; 0 before */
};

/* What the lane's files (lane.c, chan.c, onesided.c) tell the peer layer
 * above them, as the fabric tells core through its ops table: they call
 * no peer function by name.  peer.c registers it at setup (tr_peer_setup,
 * before any lane connects; ctx->lane_owner). */
struct tr_lane_owner {
	/* The lane to peer on plane (peer is not this rank). */
	struct tr_lane *(*lane)(const struct triad_ctx *ctx, int peer, int plane);
	/* 1 when some lane to peer is up. */
	int (*reachable)(const struct triad_ctx *ctx, int peer);
	/* peer's process is gone without a BYE (why says how we know): its
	 * connections are not rebuilt. */
	void (*gone)(struct triad_ctx *ctx, int peer, const char *why);
	/* l changed state. */
	void (*changed)(struct tr_lane *l);
	/* A message arrived on l in receive buffer b (NULL: m is whole, b is
	 * free already): 1 when its handler kept b (tr_lane_release). */
	int (*on_msg)(struct tr_lane *l, const struct tr_msg *m, struct tr_buf *b);
	/* A message of ours (encoded, numbered) sent or queued on l may not
	 * have arrived (l broke): req (may be NULL) goes with it. */
	void (*msg_lost)(struct tr_lane *l, const void *data, int len, unsigned prio,
			 struct triad_req *req);
	/* That message arrived (its send completed): its number is settled. */
	void (*seq_done)(struct tr_lane *l, const void *data, int len);
	/* The adaptive choice's pass over the messages l's peer has waiting
	 * (after a pump, or a send completion, when TRIAD_ADAPTIVE is on). */
	void (*redecide)(struct tr_lane *l);
	/* One line on what stands between this rank and peer (a warning's). */
	void (*describe)(const struct triad_ctx *ctx, int peer, char *buf, size_t n);
};

/* What lane.c, which sets the connection up and breaks it, asks of the
 * lane's upper parts, and onesided.c of the channel: the channel (chan.c)
 * registers it at setup (tr_chan_setup; ctx->lane_parts), so that the
 * lane's files call upwards no function by name. */
struct tr_lane_parts {
	/* At ESTABLISHED, once the peer's slots are known: message buffers
	 * (ours for the peer's messages, the peer's size for ours) and flow
	 * control; 0, -EINVAL, -ENOMEM.  Then, once l is up, every receive
	 * buffer posted (0, or -EIO: the lane is to fail); and what l can
	 * send (its first BSM). */
	int (*setup)(struct tr_lane *l, const struct tr_conn_priv *peer);
	int (*post_recvs)(struct tr_lane *l);
	void (*pump)(struct tr_lane *l);
	/* l broke: its light puts are accounted for (onesided.c). */
	void (*broke)(struct tr_lane *l);
	/* A broken lane's messages still waiting for a slot go to another
	 * lane (the owner's msg_lost), once everything it had posted has come
	 * back. */
	void (*give_back)(struct tr_lane *l);
	/* l's QP and buffers are released: its light puts complete as
	 * cancelled, what waits for a slot is dropped. */
	void (*released)(struct tr_lane *l);
	/* Queue an encoded message on l (chan.h, tr_lane_send). */
	int (*send)(struct tr_lane *l, const void *data, int len, unsigned prio,
		    struct triad_req *req, int movable);
};

/* Completion cookies: pointer | tag; every pointer is 8-byte aligned. */
enum { TR_CK_RMA = 0, TR_CK_SEND = 1, TR_CK_RECV = 2, TR_CK_LPUT = 3, TR_CK_TAG_MASK = 7 };

void tr_lane_init(struct triad_ctx *ctx, struct tr_lane *l, int peer, int plane);
int tr_lane_connect(struct tr_lane *l); /* active side: start an attempt */
void tr_lane_fail(struct tr_lane *l, enum triad_status why);
/* Start-up is over and l never came up: stop accepting it. */
void tr_lane_give_up(struct tr_lane *l);
/* Messages sent or queued on l and not acknowledged yet (0 when down). */
unsigned tr_lane_unsent(const struct tr_lane *l);
/* At close: break l if it is up (everything posted comes back flushed and
 * its requests complete as cancelled); drop an attempt in progress. */
void tr_lane_cancel(struct tr_lane *l);
/* 1 when a send completion must raise an event: someone waits for one. */
int tr_lane_send_wanted(const struct tr_lane *l);
void tr_lane_destroy(struct tr_lane *l); /* at context close */
/* Progress thread: start reconnecting l if it broke after start-up and
 * this side connects (the lower rank); retries until up or closing. */
void tr_lane_reconnect(struct tr_lane *l);
/* Connect on first use: an operation wants the peer.  A lane never up,
 * with no attempt under way, is connected now (by the progress thread).
 * 1 while the lane's first connection is being set up (by either side). */
int tr_lane_use(struct tr_lane *l);
int tr_lane_setting_up(const struct tr_lane *l);
/* Progress thread: make the attempt tr_lane_use asked for. */
void tr_lane_connect_wanted(struct tr_lane *l);
/* The counters (triad_conn_stats) are written by the lane's files alone
 * (lane.c, chan.c, onesided.c), and by others through these: an operation
 * issued (done = 0) or completed OK (done = 1: its bytes); a message
 * dropped (an active message for no handler, or a sequence number beyond
 * the window). */
void tr_lane_count(struct tr_lane *l, const struct triad_req *req, int done);
void tr_lane_count_drop(struct tr_lane *l, int am_unknown);

/* ---- for the lane's own files (chan.c, onesided.c) ----------------------------------*/
/* One flow-control timer period passed on a broken lane (tr_lane_fc_tick). */
void tr_lane_drain_tick(struct tr_lane *l);
/* A handler gave back a receive buffer of o (tr_lane_release): o is freed
 * with the last. */
void tr_lane_orphan_put(struct tr_orphan *o);
/* A completion came back or a kept receive buffer was given back: a
 * broken lane whose work requests all came back gives back what waits for
 * a slot, and once its receives are back too it is released (FAILED).
 * Not while a WRITE's completion is being handled, even its lane's last:
 * its request is done again, held by the redo fence or completed first,
 * and only then do the messages queued behind it go back to their owners
 * (the owner's msg_lost), who find it settled (chaos seed 5006: a chunk NAKed
 * by a destination refusing WRITEs; the copy's COPY_DATA, queued for a
 * slot behind it, went out on the other plane first).  Inline: every send
 * completion asks. */
void tr_lane_drained(struct tr_lane *l);
static inline void tr_lane_check_drained(struct tr_lane *l)
{
	if (l->state == TR_LANE_DRAINING && !l->sq_posted && !l->in_rma_wc)
		tr_lane_drained(l);
}

/* A flushed work request means the QP is in the error state already: the
 * peer's disconnect, or an error on another work request, whose event is
 * not handled yet.  The lane is broken from now on, so that what comes back
 * flushed goes to another lane rather than to this one again. */
static inline void tr_lane_flushed_while_up(struct tr_lane *l, const struct tr_fab_wc *wc)
{
	if (wc->flushed && l->state == TR_LANE_UP)
		tr_lane_fail(l, TRIAD_S_UNREACHABLE);
}

/* For a diagnosis: 1 when the encoded message data is number seq of
 * prio, 2 when it is a SEQ_SKIP that carries it, else 0. */
int tr_msg_carries(const void *data, int len, unsigned prio, uint32_t seq);

/* The fabric's connection events (its ops table, which init.c opens it
 * with): a request is first checked to come from this job and this
 * version of triad, a rejection to name another job; then the lane they
 * are for decides.  A local port that goes down breaks every lane of its
 * plane at once. */
void *tr_lane_on_conn_request(void *arg, int plane, const uint8_t *priv, size_t len,
			      uint8_t *reply, size_t *reply_len);
void tr_lane_on_cm(void *arg, void *owner, struct tr_qp *qp, enum tr_cm_event ev,
		   const uint8_t *priv, size_t len, const char *why);
void tr_lane_on_port(void *arg, int plane, int up);
/* What this rank tells the other side of a connection on plane: the
 * rdma_cm private data of a request, an accept or a rejection.  peer -1:
 * a rank not ours to name (another job's), whose incarnation we do not
 * know. */
void tr_conn_priv_ours(const struct triad_ctx *ctx, int plane, int peer,
		       uint8_t buf[TR_WIRE_PRIV_LEN]);

#endif
