/* A reaper: a thread of its own for releasing what may block its caller.
 *
 * The progress thread holds its context's lock while it handles a broken
 * connection, and everything else of the process waits for that lock: the
 * application's threads, and the node daemon's policy, which the progress
 * thread applies.  Releasing a QP can block in the kernel for seconds (rxe
 * waits until the kernel lets go of every packet of the QP, and a packet
 * queued for a neighbour that a link down left unresolved is let go only
 * when the resolution fails, about 3 s later; docs/fabric.md).  So what can
 * block is queued here instead, and released on the reaper's thread, which
 * holds no lock of its callers.
 *
 * Items are released in the order queued, each by its own function (which
 * frees the item too).  The thread starts with the first item; a process
 * that never queues one never has it. */
#ifndef TRIAD_BASE_REAPER_H
#define TRIAD_BASE_REAPER_H

#include <pthread.h>

#include "base/list.h"

struct tr_reap_item {
	struct tr_list link;
	void (*release)(struct tr_reap_item *item); /* frees item too */
};

struct tr_reaper {
	pthread_mutex_t mu;
	pthread_cond_t cond;
	struct tr_list items;	 /* queued, not yet taken */
	pthread_t thread;
	int started;		 /* the thread runs (until tr_reaper_stop) */
	int stopped;		 /* tr_reaper_stop was called: nothing is queued any more */
	unsigned long released;	 /* items released on the thread so far */
};

void tr_reaper_init(struct tr_reaper *r);
/* Queues item for release on the reaper's thread, starting it if need be.
 * 0; -ESHUTDOWN once stopped, or a negative errno when the thread cannot
 * start: item is not queued, and the caller releases it itself. */
int tr_reaper_queue(struct tr_reaper *r, struct tr_reap_item *item);
/* Waits until every item queued is released, and ends the thread.  Items
 * queued later are refused (the caller releases them). */
void tr_reaper_stop(struct tr_reaper *r);
/* Items released on the thread so far. */
unsigned long tr_reaper_released(struct tr_reaper *r);

#endif
