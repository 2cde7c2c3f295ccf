/* Progress (progress.c): the lock's hand-over, the libev loop and its
 * thread, polling, completion events and the waiters.  Above the context
 * (ctx.h), below everything else of core: what it runs of the lanes and
 * the features, it runs through what they registered. */
#ifndef TRIAD_CORE_PROGRESS_H
#define TRIAD_CORE_PROGRESS_H

#include "core/ctx.h"

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

#endif
