/* The context and what it owns.
 *
 * Layers (docs/design.md): core owns every piece of protocol state and
 * calls down into proto (pure engines) and fabric (the verbs executor);
 * fabric reports back only through its ops table (init.c).  Within
 * core, each object has one writer: a lane's state (lane.c, with its
 * message channel in chan.c and its WRITEs and READs in onesided.c), a peer's
 * stream and dispatch (peer.c), waiting and the event loop (progress.c),
 * requests (req.c), the barrier (barrier.c), the features (win, rma, am,
 * copy, bcast).  The files stand in floors, from the ground up: ctx,
 * progress, req, lane, onesided, chan, peer, the features, init
 * (docs/design.md; tests/check-layers).  A file calls and includes only
 * its floor and those below; what is above it, it reaches only through
 * what that registered at setup: the lane's parts (chan.c) and owner
 * (peer.c), the progress engine's lanes (peer.c), message handlers and
 * peer hooks (peer.c), progress hooks (progress.c), request completion by
 * kind (req.c), and the ops a WRITE's or READ's cookie carries
 * (onesided.h).  This header is the context alone, which every file
 * reaches through a pointer: the tables of what the files above it
 * registered are its own, their types theirs.
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

#include <ev.h>
#include <pthread.h>
#include <stdint.h>

#include "base/gate.h"
#include "base/list.h"
#include "base/reaper.h"
#include "base/time.h"
#include "base/trace.h"
#include "core/config.h"
#include "core/world.h"
#include "fabric/fabric.h"
#include "proto/choice.h"
#include "proto/wire.h"
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

/* The kinds of requests (core/req.h): what completes each is a table of
 * the context's. */
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

struct tr_buf;
struct tr_ctl_client;
struct tr_lane;
struct tr_lane_owner;
struct tr_lane_parts;
struct tr_lput;
struct tr_msg;
struct tr_peer;
struct tr_pmix;
struct tr_progress_lanes;
struct triad_req;

/* The sizes of the tables of what features register (core/peer.h,
 * core/progress.h). */
#define TR_PEER_HOOKS_MAX 8
#define TR_PROGRESS_HOOKS_MAX 4

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
	int (*on_msg[TR_MSG_TYPE_MAX])(struct tr_lane *l, const struct tr_msg *m, struct tr_buf *b);
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
	void (*req_done[TR_REQ_NKINDS])(struct triad_req *req, enum triad_status st);
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

/* TRIAD_ADAPTIVE's value as the choice engine's rules: off, occupancy,
 * or contention above the mean (the contention being triadd's weights). */
static inline unsigned tr_ctx_choice_rules(int adaptive)
{
	return adaptive == 2 ? TR_CHOICE_CONT_MEAN : adaptive ? TR_CHOICE_OCC : 0;
}

/* Is there an adaptive choice to make: rules on, and another plane?
 * Callers of the owner's pass ask it before the indirect call, which
 * cannot have this early return inlined (21 instructions a put on one
 * plane). */
static inline int tr_ctx_adapts(const struct triad_ctx *ctx)
{
	return ctx->choice.rules && ctx->nplanes > 1;
}

#endif
