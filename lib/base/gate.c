/* The lock's courtesy (gate.h). */
#include "base/gate.h"

#include <sched.h>
#include <time.h>

/* An application thread that lets the progress thread in first yields its
 * CPU a few times (the progress thread may be waiting for this very CPU),
 * then naps between looks: the holder of the moment may keep the lock a
 * while (a 64 KiB put's post lasts milliseconds on an emulated guest). */
#define YIELDS 16
#define NAP_NS 20000

void tr_gate_app_queue(struct tr_gate *g, pthread_mutex_t *lock)
{
	/* Only the thread itself stores its own name there: it holds the
	 * lock, inside a callback (gate.h). */
	if (atomic_load_explicit(&g->in_callback, memory_order_relaxed) ==
	    (unsigned long)pthread_self()) {
		pthread_mutex_lock(lock);
		return;
	}
	atomic_fetch_add_explicit(&g->app_wanted, 1, memory_order_relaxed);
	for (int i = 0; atomic_load_explicit(&g->progress_wanted, memory_order_acquire); i++) {
		if (i < YIELDS) {
			sched_yield();
		} else {
			struct timespec nap = { 0, NAP_NS };

			nanosleep(&nap, NULL);
		}
	}
	pthread_mutex_lock(lock);
	atomic_fetch_sub_explicit(&g->app_wanted, 1, memory_order_relaxed);
}

void tr_gate_progress_queue(struct tr_gate *g, pthread_mutex_t *lock)
{
	atomic_store_explicit(&g->progress_wanted, 1, memory_order_release);
	pthread_mutex_lock(lock);
	atomic_store_explicit(&g->progress_wanted, 0, memory_order_release);
}
