/* The reaper's queue and thread (reaper.h). */
#include "base/reaper.h"

#include <errno.h>

void tr_reaper_init(struct tr_reaper *r)
{
	pthread_mutex_init(&r->mu, NULL);
	pthread_cond_init(&r->cond, NULL);
	tr_list_init(&r->items);
	r->started = r->stopped = 0;
	r->released = 0;
}

/* Releases items as they come, with the queue's mutex let go meanwhile,
 * until stopped with nothing left. */
static void *reaper_thread(void *arg)
{
	struct tr_reaper *r = arg;

	pthread_mutex_lock(&r->mu);
	for (;;) {
		struct tr_reap_item *it;

		while (tr_list_empty(&r->items) && !r->stopped)
			pthread_cond_wait(&r->cond, &r->mu);
		if (tr_list_empty(&r->items))
			break;
		it = tr_list_first(&r->items, struct tr_reap_item, link);
		tr_list_del(&it->link);
		pthread_mutex_unlock(&r->mu);
		it->release(it);
		pthread_mutex_lock(&r->mu);
		r->released++;
	}
	pthread_mutex_unlock(&r->mu);
	return NULL;
}

int tr_reaper_queue(struct tr_reaper *r, struct tr_reap_item *item)
{
	int ret = 0;

	pthread_mutex_lock(&r->mu);
	if (r->stopped)
		ret = -ESHUTDOWN;
	else if (!r->started && (ret = -pthread_create(&r->thread, NULL, reaper_thread, r)) == 0)
		r->started = 1;
	if (!ret) {
		tr_list_add_tail(&r->items, &item->link);
		pthread_cond_signal(&r->cond);
	}
	pthread_mutex_unlock(&r->mu);
	return ret;
}

void tr_reaper_stop(struct tr_reaper *r)
{
	int started;

	pthread_mutex_lock(&r->mu);
	r->stopped = 1;
	started = r->started;
	pthread_cond_signal(&r->cond);
	pthread_mutex_unlock(&r->mu);
	if (started)
		pthread_join(r->thread, NULL);
	r->started = 0;
}

unsigned long tr_reaper_released(struct tr_reaper *r)
{
	unsigned long n;

	pthread_mutex_lock(&r->mu);
	n = r->released;
	pthread_mutex_unlock(&r->mu);
	return n;
}
