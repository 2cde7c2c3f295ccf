/* Peers (peer.c): one per rank, reached over one lane per plane; the plane
 * choice, the message streams' numbers, dispatch to what the features
 * registered, what a broken lane lost, connect on first use and rejoin,
 * the redo fence.  Above the lanes, which report to it through the tables
 * it registers (struct tr_lane_owner, struct tr_progress_lanes); below the
 * features. */
#ifndef TRIAD_CORE_PEER_H
#define TRIAD_CORE_PEER_H

#include "base/list.h"
#include "core/ctx.h"
#include "core/lane.h"
#include "proto/plane_switch.h"

/* A peer: one rank, reached over one lane per plane.  Its stream (the
 * sequence numbers of what this side sends and receives) is shared by the
 * lanes, so a message resent on another lane after a failure is delivered
 * once. */

struct tr_peer {
	int rank;
	struct tr_lane lane[TRIAD_MAX_PLANES];
	struct tr_peer_link pl; /* its streams, and its process (lane.h) */
	struct tr_psw psw;	 /* plane switch: which plane each home plane maps to now */
	unsigned peer_drained;	 /* planes the peer asked us not to send on */
	/* Messages that arrived beyond the receive window (struct
	 * tr_parked): handled once the window reaches them (peer.c). */
	struct tr_list parked[TR_FC_NPRIO];
	unsigned nparked;
	int unparking;
	/* Connect on first use (TRIAD_CONNECT=lazy, peer.c): while its first
	 * connection is being set up, messages (encoded, numbered) and puts
	 * and gets (rma.c) wait here; they go once a lane is up, or fail as
	 * unreachable once every lane gave up or await_deadline_ns passed. */
	int awaiting, await_settling;
	uint64_t await_deadline_ns;
	struct tr_list await_msgs;
	struct tr_list await_rma;
	unsigned nawait_msgs;
	/* Rejoin (TRIAD_REJOIN_MS, peer.c): its last lane broke by a fault
	 * (it had not said BYE).  Until rejoin_deadline_ns what goes to it
	 * waits as above, for a connection back; then (LOST) it is declared
	 * lost, until a lane is up again. */
	enum { TR_REJOIN_NONE, TR_REJOIN_WAIT, TR_REJOIN_LOST } rejoin;
	uint64_t rejoin_deadline_ns;
	/* The redo fence (peer.c): puts and copy chunks whose WRITE a break
	 * flushed, held until the peer's end of that connection can execute
	 * nothing more, then done again or completed, in order. */
	struct tr_list fenceq;
	unsigned nfenced;
	int fence_settling;
	/* Messages of ours (encoded, numbered) that a broken lane gave back to
	 * their owner (req->lost), which holds them back for a while
	 * (tr_peer_msg_hold): each keeps its number meanwhile. */
	struct tr_list held;
	/* Messages (encoded, not numbered yet) that found their stream with
	 * TR_STREAM_AHEAD numbers unsettled, or others waiting so: numbered
	 * and sent in order as the window moves (peer.c, full_*), failed with
	 * what waits for a connection. */
	struct tr_list full[TR_FC_NPRIO];
	unsigned nfull;
};

/* ---- what features register (peer.c runs it) ----------------------------------*/
/* The handler of one message type, registered by the feature that owns
 * the type, in its setup (tr_peer_handle), before the progress thread
 * starts: m arrived on l, in order and once (peer.c judged its number);
 * b is its receive buffer when the handler may keep it (an active
 * message), else NULL.  1 when the handler kept b (tr_lane_release()
 * gives it back). */
typedef int (*tr_msg_fn)(struct tr_lane *l, const struct tr_msg *m, struct tr_buf *b);

/* What a feature hears of peers (tr_peer_hooks_add in its setup; any may
 * be NULL).  Hooks of one kind run in the order they were added. */
struct tr_peer_hooks {
	/* p's receive stream of priority prio moved on (a message handled,
	 * or numbers skipped): what a feature held back for order may go. */
	void (*rx_moved)(struct triad_ctx *ctx, struct tr_peer *p, unsigned prio);
	/* No lane reaches peer, and the wait for its connection (lazy, or
	 * rejoin) gave up: what waited for it fails with st. */
	void (*unreached)(struct triad_ctx *ctx, int peer, enum triad_status st);
	/* peer is lost: a lane of it broke (or TRIAD_REJOIN_MS ran out) and
	 * no lane reaches it, none is being set up, none is awaited back
	 * (tr_peer_alive); st says why.  Also while closing. */
	void (*lost)(struct triad_ctx *ctx, int peer, enum triad_status st);
	/* A lane of p changed state, or its wait ended: what of the
	 * feature's waits for p's connection goes now if its lane is up,
	 * keeps waiting while one is being set up, fails otherwise (all:
	 * every one fails with st). */
	void (*await)(struct triad_ctx *ctx, struct tr_peer *p, int all, enum triad_status st);
};

/* Registers fn as the handler of type (at setup; one per type), and a
 * feature's peer hooks (0, or -ENOSPC: TR_PEER_HOOKS_MAX of a kind). */
void tr_peer_handle(struct triad_ctx *ctx, enum tr_msg_type type, tr_msg_fn fn);
int tr_peer_hooks_add(struct triad_ctx *ctx, const struct tr_peer_hooks *h);
/* The peer layer's own messages (BYE, PLANE_DRAIN, PLANE_DOWN). */
void tr_peer_setup(struct triad_ctx *ctx);

/* The one plane-choice function: every message and operation to a peer
 * asks it.  Home plane for now ((rank + peer) mod planes, so both
 * directions of a pair agree), else the next live one; TR_F_PLANE_PIN
 * pins.  Returns the plane (the home plane when none is live: the caller
 * reports its state), or -1 for a pin to a plane that does not exist. */
int tr_plane_choose(struct triad_ctx *ctx, int peer, unsigned flags);
/* The lane a message or operation to peer takes (tr_plane_choose). */
struct tr_lane *tr_peer_lane(struct triad_ctx *ctx, int peer, unsigned flags);
/* 1 when l is up and its plane's local port too. */
int tr_lane_live(const struct triad_ctx *ctx, const struct tr_lane *l);
/* 1 when plane should carry traffic to p: drained neither here nor by p. */
int tr_peer_wants(const struct triad_ctx *ctx, const struct tr_peer *p, int plane);
/* 1 when plane may take new traffic to p now: its lane live, the switch
 * using it, and drained neither here nor by p (striping, adaptive choice). */
int tr_peer_plane_open(const struct triad_ctx *ctx, const struct tr_peer *p, int plane);
/* 1 when some lane to peer is up. */
int tr_peer_reachable(const struct triad_ctx *ctx, int peer);
/* 1 when peer is reachable or may still become so: with
 * TRIAD_CONNECT=lazy, a lane never up and not given up yet (never used, or
 * its first connection under way); or its last lane broke by a fault less
 * than TRIAD_REJOIN_MS ago. */
int tr_peer_alive(const struct triad_ctx *ctx, int peer);
/* 1 while a connection to p may still come without anything being given
 * up: a first one under way (lazy), or p awaited back (rejoin). */
int tr_peer_coming(const struct triad_ctx *ctx, const struct tr_peer *p);
/* One line on what stands between this rank and peer, for a warning when
 * something that needs the peer times out: every lane's state, what waits
 * in it, the peer's slots we see busy, and the sequence windows. */
void tr_peer_describe(const struct triad_ctx *ctx, int peer, char *buf, size_t n);
/* Nothing to peer can go now (no lane up).  1 when the operation is to
 * wait: for the peer's first connection (lazy; this starts it on every
 * plane if need be), or for its connection back after a fault broke the
 * last one (rejoin); 0 when it is to fail (eager and never broken,
 * closing, the peer closed, lost, or cannot be reached). */
int tr_peer_await(struct triad_ctx *ctx, int peer);
/* At close: what still waits for a connection is cancelled. */
void tr_peer_await_cancel(struct triad_ctx *ctx);
/* Send a message to a peer on its chosen lane, with a flow-control
 * priority (TR_FC_HIGH for answers, so they always find a slot); req (may
 * be NULL) completes when it arrived.  Assigns the peer's next sequence
 * number; when that stream has TR_STREAM_AHEAD numbers unsettled, the
 * message waits for it, in order (never -EAGAIN).  -ENOTCONN when no lane
 * is up, -EMSGSIZE, -ENOMEM. */
int tr_peer_send(struct triad_ctx *ctx, int peer, struct tr_msg *m, unsigned prio,
		 struct triad_req *req);
/* The ordered send: the same on lane l (up), after everything posted or
 * queued on it (tr_lane_send_after: its one-sided operations, and the
 * messages of prio queued before it), so that it follows them on the QP.
 * req (not NULL, its lost set) completes once it arrived; should l break
 * before that, the encoded message goes back to req->lost, and nowhere
 * else.  0, -ENOTCONN, -EMSGSIZE, -EAGAIN (the stream's window), -ENOMEM. */
int tr_peer_send_after(struct tr_lane *l, struct tr_msg *m, unsigned prio,
		       struct triad_req *req);
/* The same on the lane tr_peer_lane(ctx, peer, 0) chose: while it waits
 * there, the adaptive choice may move it to another lane of the peer. */
int tr_peer_send_chosen(struct tr_lane *l, struct tr_msg *m, unsigned prio,
			struct triad_req *req);
/* A message of ours (encoded, numbered) to l's peer will never be sent:
 * its number is told to the peer (SEQ_SKIP) as lost, at once if a lane
 * is up. */
void tr_peer_msg_skip(struct tr_lane *l, const void *data, int len);
/* A message of ours (encoded, numbered) that l gave back to its owner
 * (req->lost): sent again, with its number, on the lane the choice gives
 * now, or it waits for a connection, or (no plane left) its number is
 * skipped and req completes with l's status. */
void tr_peer_msg_resend(struct tr_lane *l, const void *data, int len, unsigned prio,
			struct triad_req *req);
/* The same message held back by its owner for a while: it waits on its
 * peer's list (where tr_peer_describe finds its number) until the owner
 * lets it go (tr_peer_msg_unhold: go, sent again as above; else its number
 * is skipped and the owner keeps req).  NULL: no memory (not held). */
struct tr_held_msg *tr_peer_msg_hold(struct tr_lane *l, const void *data, int len,
				     unsigned prio, struct triad_req *req);
void tr_peer_msg_unhold(struct triad_ctx *ctx, struct tr_held_msg *h, int go);
void tr_peer_free(struct tr_peer *p); /* at close */
/* The redo fence.  req (a put or copy chunk, its last WRITE back) had a
 * WRITE flushed by a break on each plane of req->fence_planes: 1 when it
 * must wait until each of those breaks is fenced (then its rma ops'
 * fenced() settles it); 0 when it may settle now.  tr_peer_fence_settle() releases,
 * in order, what no break holds back any more (a fence came, the peer is
 * gone or lost, or the context is closing). */
int tr_peer_fence_hold(struct triad_req *req);
void tr_peer_fence_settle(struct triad_ctx *ctx, struct tr_peer *p);
/* The switch of peer p hears what plane's lane and drain state now say
 * (up and wanted: restored; down: failed; up but drained: drained). */
void tr_peer_plane_event(struct triad_ctx *ctx, struct tr_peer *p, int plane);

#endif
