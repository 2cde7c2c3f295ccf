/* The courtesy around a lock shared by application threads and one
 * progress thread (core/ctx.h's context lock), in both directions.
 *
 * A pthread mutex is not fair: a thread that lets it go and takes it again
 * at once wins over a waiter, which the unlock only woke and which still
 * has to be scheduled.  So each side says when it queues for the lock:
 *  - application threads count themselves in app_wanted; the progress
 *    thread, spinning with the lock between polls, stops for them;
 *  - the progress thread raises progress_wanted; an application thread
 *    coming in lets it have the lock first.
 * Without the second, an application thread calling in back to back (one
 * sending active messages one after another) kept the progress thread
 * from the lock for as long as it went on: no connection event, timer or
 * completion event of the process was served meanwhile (the chaos soak's
 * seed 8005: the progress thread waiting for the lock for seconds, the
 * sending thread running).
 *
 * The progress thread never waits for an application thread's word, so
 * the two cannot wait for each other: progress_wanted falls as soon as
 * the lock's holder of the moment lets go of it and the progress thread
 * runs.  One exception, marked by its caller: the lock is recursive, and
 * an application's callback (an active message handler) runs under it
 * and may call in again; the thread running it holds the lock, so it
 * takes it again at once instead of waiting for a progress thread that
 * waits for it (tr_gate_callback_begin).  Without the mark, triad-perf
 * am_lat's server, answering each ping from its handler, hung for good
 * the first time its progress thread queued for the lock then. */
#ifndef TRIAD_BASE_GATE_H
#define TRIAD_BASE_GATE_H

#include <pthread.h>
#include <stdatomic.h>

struct tr_gate {
	atomic_uint app_wanted;	     /* application threads queued for the lock */
	atomic_uint progress_wanted; /* the progress thread is queued for it */
	atomic_ulong in_callback;    /* the thread running a callback under it, or 0 */
};

/* Slow paths (gate.c). */
void tr_gate_app_queue(struct tr_gate *g, pthread_mutex_t *lock);
void tr_gate_progress_queue(struct tr_gate *g, pthread_mutex_t *lock);

/* lock, as an application thread takes it: at once when it is free and the
 * progress thread does not wait for it; else after the progress thread. */
static inline void tr_gate_lock_app(struct tr_gate *g, pthread_mutex_t *lock)
{
	if (!atomic_load_explicit(&g->progress_wanted, memory_order_relaxed) &&
	    pthread_mutex_trylock(lock) == 0)
		return;
	tr_gate_app_queue(g, lock);
}

/* lock, as the progress thread takes it. */
static inline void tr_gate_lock_progress(struct tr_gate *g, pthread_mutex_t *lock)
{
	if (pthread_mutex_trylock(lock) == 0)
		return;
	tr_gate_progress_queue(g, lock);
}

/* Around an application's callback run with the lock held: the thread
 * may take the lock again from inside, at once.  begin returns what end
 * restores (callbacks nest). */
static inline unsigned long tr_gate_callback_begin(struct tr_gate *g)
{
	unsigned long prev = atomic_load_explicit(&g->in_callback, memory_order_relaxed);

	atomic_store_explicit(&g->in_callback, (unsigned long)pthread_self(),
			      memory_order_relaxed);
	return prev;
}

static inline void tr_gate_callback_end(struct tr_gate *g, unsigned long prev)
{
	atomic_store_explicit(&g->in_callback, prev, memory_order_relaxed);
}

/* Does an application thread wait for the lock? (for a spinning holder) */
static inline int tr_gate_app_waits(struct tr_gate *g)
{
	return atomic_load_explicit(&g->app_wanted, memory_order_relaxed) != 0;
}

#endif
