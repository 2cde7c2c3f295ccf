/* The context and what it owns.
 *
 * Layers (docs/design.md): core owns every piece of protocol state and
 * calls down into proto (pure engines) and fabric (the verbs executor);
 * fabric reports back only through its ops table (init.c).  Within
 * core, each object has one writer: a lane's state (lane.c, with its
 * message channel in chan.c and its WRITEs and READs in onesided.c), a peer's
 * stream and dispatch (peer.c), waiting and the event loop (progress.c),
 * requests (req.c), the barrier (barrier.c), the features (win, rma, am,
 * copy, bcast).  The lower files reach a feature only through what it
 * registered at setup: message handlers and peer hooks (peer.c), progress
 * hooks (progress.c), request completion by kind (req.c), and the ops a
 * WRITE's or READ's cookie carries (onesided.h).
 *
 * Locking, decided once (progress.c): one mutex per context (ctx->lock)
 * guards all of its state.  Whoever holds it may drive the engine (poll
 * every CQ).  Two kinds of threads do:
 *  - an application thread inside triad_test/triad_wait/triad_barrier polls
 *    for up to TRIAD_SPIN_US itself (no hand-off on the latency path), then
 *    sleeps on its own condition variable;
 *  - the progress thread runs a libev loop on the completion channels, the
 *    rdma_cm channel and the async event fds; it sleeps in the kernel when
 *    nothing happens, serves what nobody waits on (window lookups, copy
 *    orders, barrier messages) and wakes a sleeper when its condition holds.
 * Application threads take the lock with tr_ctx_lock, which counts those
 * that queue for it: the progress thread, when it spins, stops for them;
 * the progress thread takes it with tr_ctx_lock_progress, and application
 * threads coming in let it go first (base/gate.h).
 * Only the progress thread touches libev watchers after start-up.  A
 * third thread, the reaper (ctx->reaper, lib/base/reaper.h), takes no lock
 * of the context: it releases the QPs and buffers of lanes that broke,
 * which can block in the kernel for seconds, while the lock is free. */
#ifndef TRIAD_CORE_CTX_H
#define TRIAD_CORE_CTX_H

#include <pthread.h>
#include <stdatomic.h>
#include <string.h>

#include "base/gate.h"
#include "base/list.h"
#include "base/reaper.h"
#include "base/time.h"
#include "base/trace.h"
#include "core/config.h"
#include "core/lane.h"
#include "core/world.h"
#include "fabric/fabric.h"
#include "proto/choice.h"
#include "proto/copy.h"
#include "proto/plane_switch.h"
#include "proto/seq.h"
#include "proto/stream.h"
#include "triad.h"

/* TRIAD_F_PLANE(p): the pin bit and the plane number in an op's flags. */
#define TR_F_PLANE_PIN 0x100u
#define TR_F_PLANE_MASK 0xffu
#define TR_F_ALL (TR_F_PLANE_PIN | TR_F_PLANE_MASK | TRIAD_F_STRIPE)
/* Internal: the plane switch's choice, no adaptive detour.  Puts and gets
 * take it: a stale window's keys break every connection they reach (the
 * NIC's remote access error), and spread over every plane they would
 * leave none to do the others again on; TRIAD_F_STRIPE spreads them. */
#define TR_F_NO_DETOUR 0x10000u
/* Internal: issued with no request (req_p NULL); freed once complete, its
 * error kept for the next triad_flush to the rank. */
#define TR_F_NO_REQ 0x20000u

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
};

enum tr_req_kind {
	TR_REQ_PUT,
	TR_REQ_GET,
	TR_REQ_AM,
	TR_REQ_COPY,   /* the application's copy request */
	TR_REQ_CHUNK,  /* internal: one WRITE of a copy this rank serves as source */
	TR_REQ_LOOKUP, /* internal: a copy's source needs the destination's window */
	TR_REQ_BCAST,  /* the application's broadcast */
	TR_REQ_MSG,    /* internal: a message whose arrival someone waits for */
	TR_REQ_FLUSH,  /* the application's triad_flush */
	TR_REQ_NKINDS
};

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

struct tr_pmix;

/* ---- what features register (peer.c calls it) ----------------------------------*/
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
#define TR_PEER_HOOKS_MAX 8

/* What completes a request of a kind (tr_req_kind_done), in place of
 * tr_req_finish(). */
typedef void (*tr_req_fn)(struct triad_req *req, enum triad_status st);

/* What a feature asks of the progress engine (tr_progress_hooks_add in its
 * setup; either may be NULL).  They run under the lock, in the order they
 * were added. */
struct tr_progress_hooks {
	/* At every poll of the engine (tr_progress), by application threads
	 * and the progress thread, and at least once a timer period: the
	 * feature's deadlines.  On the latency path: cheap when nothing is due. */
	void (*tick)(struct triad_ctx *ctx);
	/* 1 while an answer to something of the feature's is on its way to
	 * this rank: the progress thread polls on for it before it sleeps. */
	int (*awaited)(const struct triad_ctx *ctx);
};
#define TR_PROGRESS_HOOKS_MAX 4

/* What the progress engine asks of the lanes, which it knows by no name:
 * the peer layer, which holds them, registers it (tr_peer_setup; NULL
 * before).  Under the lock, on the progress thread but send_wanted. */
struct tr_progress_lanes {
	/* Does anyone wait for a send completion on plane? */
	int (*send_wanted)(const struct triad_ctx *ctx, int plane);
	/* Every flow-control timer period, after a poll of every plane. */
	void (*period)(struct triad_ctx *ctx);
	/* Asked for (tr_progress_kick): rebuild and first connections. */
	void (*kicked)(struct triad_ctx *ctx);
	/* The linger time of deferred BSMs is over (tr_progress_linger). */
	void (*linger)(struct triad_ctx *ctx);
};

struct triad_ctx {
	struct tr_config cfg;
	struct tr_world world;
	int rank, size, nplanes;
	/* Connections are made only with ranks of the same job key (the PMIx
	 * namespace's, or the world file's 'key'; 0: none); requests of other
	 * jobs are refused and counted per plane. */
	uint64_t job_key;
	/* This process's random name, never 0 (proto/conn.h, tr_conn_same_run):
	 * runs of one world file that overlap never connect to each other. */
	uint64_t incarnation;
	uint64_t key_rejects[TRIAD_MAX_PLANES];
	unsigned key_refused; /* requests of ours another job's rank refused */
	struct tr_pmix *pmix; /* launched by PMIx (pmix.c), or NULL */

	pthread_mutex_t lock;
	/* Who queues for the lock, application threads or the progress
	 * thread: each lets the other in (base/gate.h). */
	struct tr_gate gate;
	struct tr_list waiters; /* threads asleep in tr_wait_until */

	struct ev_loop *loop;
	ev_async wake_w;
	ev_async kick_w; /* other threads ask the progress thread to reconnect */
	int initialized;
	pthread_t thread;
	int thread_started;
	int closing; /* triad_fini has begun: nothing is sent any more */

	struct tr_fab *fab;
	ev_io cm_w;
	ev_io cq_w[TRIAD_MAX_PLANES], async_w[TRIAD_MAX_PLANES];
	struct tr_peer *peers; /* [size]; peers[rank] unused */
	const struct tr_lane_owner *lane_owner; /* peer.c's (tr_peer_setup) */
	const struct tr_progress_lanes *progress_lanes; /* the same */
	const struct tr_lane_parts *lane_parts; /* chan.c's (tr_chan_setup) */

	struct tr_lput *lputs;	/* free light-put records (onesided.c), under the lock */
	unsigned nlputs;

	/* What the features registered at setup (peer.c runs them): the
	 * handler of each message type, and the peer hooks by kind. */
	tr_msg_fn on_msg[TR_MSG_TYPE_MAX];
	void (*rx_moved[TR_PEER_HOOKS_MAX])(struct triad_ctx *ctx, struct tr_peer *p, unsigned prio);
	void (*unreached[TR_PEER_HOOKS_MAX])(struct triad_ctx *ctx, int peer, enum triad_status st);
	void (*lost[TR_PEER_HOOKS_MAX])(struct triad_ctx *ctx, int peer, enum triad_status st);
	void (*await[TR_PEER_HOOKS_MAX])(struct triad_ctx *ctx, struct tr_peer *p, int all,
					 enum triad_status st);
	unsigned nrx_moved, nunreached, nlost, nawait;
	/* ... and the progress hooks by kind (progress.c runs them). */
	void (*tick[TR_PROGRESS_HOOKS_MAX])(struct triad_ctx *ctx);
	int (*awaited[TR_PROGRESS_HOOKS_MAX])(const struct triad_ctx *ctx);
	unsigned ntick, nawaited;
	/* ... and what completes each kind of request (req.c runs it). */
	tr_req_fn req_done[TR_REQ_NKINDS];
	ev_timer fc_timer_w;
	uint64_t fc_ticks; /* periods of fc_timer_w so far: a clock for slow things */
	/* Turns completion events back on once the application stops polling
	 * (progress.c, the idle timer): a timerfd that pollers move forward. */
	ev_io idle_w;
	int idle_fd;
	uint64_t idle_at_ns; /* when it fires (CLOCK_MONOTONIC); 0: off (under the lock) */
	ev_timer linger_w;	  /* flushes deferred BSMs */
	int linger_wanted;	  /* an application thread asked for linger_w (kick_w) */
	int linger_on;		  /* linger_w runs (set and cleared under the lock) */
	/* Application threads count their calls (a poll, a post, a wait's
	 * pass) instead of reading the clock; the progress thread dates the
	 * count when it sees it change (progress.c, app_polling). */
	uint64_t app_calls;	  /* under the lock */
	uint64_t app_seen_calls;  /* the count app_polling last saw */
	uint64_t app_seen_ns;	  /* when it saw it change; 0: a thread went to sleep */
	/* An application thread's own looks at the idle timer (progress.c,
	 * app_call): the count and time of its last, calls until the next. */
	uint64_t app_look_calls, app_look_ns, app_look_every;
	uint64_t rx_msgs;	  /* messages received on every lane (the spin's measure) */
	struct tr_trace *trace;	  /* TRIAD_TRACE, or NULL */


	unsigned drained;	  /* planes drained on request (triad_plane_drain) */
	struct tr_choice_cfg choice; /* adaptive plane choice (TRIAD_ADAPTIVE*) */
	/* triadd's weight of each plane, 0 .. 100 (0 without a daemon): how
	 * badly it does; the adaptive choice's contention input (peer.c). */
	uint32_t plane_weight[TRIAD_MAX_PLANES];
	struct tr_list orphans;	  /* receive buffers kept past their lane (lane.c) */
	struct tr_reaper reaper;  /* releases broken lanes' QPs, without the lock */
	struct queued_msg *qcache; /* free queue nodes of a slot's size (chan.c) */
	unsigned nqcache;

	struct tr_ctl_client *ctl; /* the node daemon's client (ctl.c), or NULL */

	/* Each feature's own state, defined in its file, made by its setup
	 * and freed by its teardown (NULL outside them). */
	struct tr_barrier *barrier; /* barrier.c */
	struct tr_copies *copies;   /* copy.c */
	struct tr_wins *wins;	    /* win.c */
	struct tr_ams *am;	    /* am.c */
	struct tr_rmas *rma;	    /* rma.c */
	struct tr_bcasts *bcast;    /* bcast.c */
};

/* ---- progress (progress.c) ---------------------------------------------------*/
/* Registers a feature's progress hooks: 0, or -ENOSPC. */
int tr_progress_hooks_add(struct triad_ctx *ctx, const struct tr_progress_hooks *h);
int tr_progress_setup(struct triad_ctx *ctx); /* the loop and its watchers */
void tr_progress_teardown(struct triad_ctx *ctx); /* the loop and the idle timer (after stop) */
int tr_progress_start(struct triad_ctx *ctx); /* the progress thread */
void tr_progress_stop(struct triad_ctx *ctx);
/* A context started by tr_init_driven (no progress thread): one pass of
 * its loop, in the calling thread, without blocking (the watchers that are
 * ready and the timers that are due); called without the lock. */
void tr_progress_step(struct triad_ctx *ctx);
/* Engine: poll everything once (lock held); completions handled. */
int tr_progress(struct triad_ctx *ctx);
/* The same, from an application thread: the progress thread then leaves
 * completion events off for a while, since this thread reaps them. */
void tr_progress_app(struct triad_ctx *ctx);
/* Someone will wait for a send completion on plane (called before the
 * post): make sure one raises an event, unless an application thread
 * polls (it reaps it, and the idle timer turns events back on). */
void tr_progress_want_send(struct triad_ctx *ctx, int plane);
/* A lane deferred a BSM: flush every deferred BSM within
 * TRIAD_BSM_LINGER_US (any thread). */
void tr_progress_linger(struct triad_ctx *ctx);
/* Ask the progress thread to rebuild the lanes that want it (any thread). */
void tr_progress_kick(struct triad_ctx *ctx);
/* Something completed: wake the sleeping waiters whose condition now holds
 * (lock held); the others sleep on. */
void tr_ctx_signal(struct triad_ctx *ctx);
/* Drive the engine until pred(arg) holds or timeout_ms passes (< 0:
 * forever); called without the lock.  0, or -ETIMEDOUT. */
int tr_wait_until(struct triad_ctx *ctx, int (*pred)(void *), void *arg, int timeout_ms);

/* ---- a context driven by its caller (init.c) -------------------------------------*/
/* For a host test that runs several ranks in one thread over a scripted
 * fabric (tests/host): triad_init without the progress thread, which
 * starts the connections of TRIAD_CONNECT=eager and does not wait for
 * them.  The caller drives every context (tr_progress_step, triad_progress)
 * until tr_init_connected() says 0 (every lane up or failed: the failed
 * ones are given up and retried from now on, as triad_init does), or a
 * negative errno: -EAGAIN while a lane is being set up, -ETIMEDOUT when a
 * rank is unreachable on every plane.  triad_fini closes it. */
int tr_init_driven(const struct triad_ctx_attr *attr, triad_ctx_t **ctx_p);
int tr_init_connected(triad_ctx_t *ctx);

/* ---- peers (peer.c) --------------------------------------------------------------*/
/* Registers fn as the handler of type (at setup; one per type), and a
 * feature's peer hooks (0, or -ENOSPC: TR_PEER_HOOKS_MAX of a kind). */
void tr_peer_handle(struct triad_ctx *ctx, enum tr_msg_type type, tr_msg_fn fn);
int tr_peer_hooks_add(struct triad_ctx *ctx, const struct tr_peer_hooks *h);
/* The peer layer's own messages (BYE, PLANE_DRAIN, PLANE_DOWN). */
void tr_peer_setup(struct triad_ctx *ctx);

/* TRIAD_ADAPTIVE's value as the choice engine's rules: off, occupancy,
 * or contention above the mean (the contention being triadd's weights). */
static inline unsigned tr_ctx_choice_rules(int adaptive)
{
	return adaptive == 2 ? TR_CHOICE_CONT_MEAN : adaptive ? TR_CHOICE_OCC : 0;
}

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
 * number.  -ENOTCONN when no lane is up, -EMSGSIZE. */
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

/* The node daemon's client (ctl.c): connects (or keeps trying) and
 * applies the daemon's plane policy.  Setup before the progress thread
 * starts, teardown after it stopped; TRIAD_DAEMON=off: nothing. */
struct tr_ctl_client;
int tr_ctl_setup(struct triad_ctx *ctx);
void tr_ctl_teardown(struct triad_ctx *ctx);


/* The context lock, as an application thread takes it: when another
 * thread holds it, it says so while it queues, and a progress thread
 * spinning on the lock's CPU (cq_cb) stops and lets it in; when the
 * progress thread queues for it, it goes first (base/gate.h). */
static inline void tr_ctx_lock(struct triad_ctx *ctx)
{
	tr_gate_lock_app(&ctx->gate, &ctx->lock);
}

/* The context lock, as the progress thread's callbacks take it. */
static inline void tr_ctx_lock_progress(struct triad_ctx *ctx)
{
	tr_gate_lock_progress(&ctx->gate, &ctx->lock);
}

/* Does this rank take bare active messages (proto/wire.h; TRIAD_BARE_AM)? */
static inline int tr_ctx_takes_bare(const struct triad_ctx *ctx)
{
	return ctx->cfg.bare_am;
}

/* ---- requests (req.c) -----------------------------------------------------------*/
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

/* ---- put, get, flush (rma.c) ------------------------------------------------------*/
/* The window is known: validate and queue on the lane. */
void tr_rma_start(struct triad_req *req);
/* An internal put to another rank (req: kind PUT, peer, win, off, len,
 * buf, on_done), under the context lock: triad_put's path from the plane
 * choice on (a wait for a connection, the window's descriptor, chunks,
 * done again on a live plane when its lane breaks). */
void tr_rma_put_internal(struct triad_ctx *ctx, struct triad_req *req);
/* Once the planes are open: its state (the per-plane registration caches,
 * TRIAD_REG_CACHE, and each peer's flush epochs), the completion of puts
 * and gets (their registration released, their flush epoch told), and the
 * peer hook of those that wait for a connection.  0, -ENOMEM, -ENOSPC. */
int tr_rma_setup(struct triad_ctx *ctx);
/* At close: peer's flush epochs (what is left of them at triad_fini);
 * then (teardown) the caches and the state. */
void tr_rma_peer_free(struct triad_ctx *ctx, int peer);
void tr_rma_teardown(struct triad_ctx *ctx);
/* Connect on first use: req waits on its peer's await_rma (the peer hook
 * await lets it go or fail). */
void tr_rma_await(struct triad_ctx *ctx, struct triad_req *req);

/* Active messages (am.c).  Setup: the handlers' table, the AM message and
 * the peer hook (early messages go once the numbers before them came). */
int tr_am_setup(struct triad_ctx *ctx);
void tr_am_teardown(struct triad_ctx *ctx);

/* Copies (copy.c).  Setup: the engine, the COPY message, a lost peer's
 * copies failed, the engine's deadlines (tick) and the answers it awaits,
 * the completion of its CHUNK and LOOKUP requests. */
int tr_copy_setup(struct triad_ctx *ctx);
void tr_copy_teardown(struct triad_ctx *ctx);
/* The copy engine, for a test's look at its counts. */
const struct tr_copy *tr_copy_engine(const struct triad_ctx *ctx);

/* Submit a copy with a prepared request (lock held); 0, -EAGAIN, -EINVAL. */
int tr_copy_submit(struct triad_ctx *ctx, const struct tr_copy_hdr *order, struct triad_req *req);

/* Broadcasts (bcast.c).  Setup: the world's group, BCAST_DONE, BNODE (a
 * delegated broadcast's ORDER, REPORT or ABORT), a lost peer's broadcasts. */
int tr_bcast_setup(struct triad_ctx *ctx);
void tr_bcast_teardown(struct triad_ctx *ctx);

/* The barrier (barrier.c).  Setup: its state and messages. */
int tr_barrier_setup(struct triad_ctx *ctx);
void tr_barrier_teardown(struct triad_ctx *ctx);

#endif
