/* Unit tests for the reaper (lib/base/reaper.[ch]): a release that blocks
 * does not block whoever queues it, items are released in order on a
 * thread of the reaper's own, stopping waits for every queued item, and
 * nothing is queued once stopped. */
#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <time.h>

#include <cmocka.h>

#include "base/reaper.h"
#include "base/time.h"

#define NITEMS 5
#define GATE_GIVE_UP_S 3

/* What the items saw, shared with their release function. */
static struct {
	pthread_mutex_t mu;
	pthread_cond_t cond;
	int gate_open;		/* a gated release waits for it */
	int order[NITEMS];	/* the items' numbers, in the order released */
	int nreleased;
	int on_caller;		/* a release ran on the thread that queued it */
	pthread_t caller;
} seen = { .mu = PTHREAD_MUTEX_INITIALIZER, .cond = PTHREAD_COND_INITIALIZER };

struct item {
	struct tr_reap_item it;
	int num;
	int gated;	 /* waits for the gate: a QP destroy the kernel holds */
	unsigned sleep_ms; /* then takes this long */
};

static void item_release(struct tr_reap_item *it)
{
	struct item *i = tr_container_of(it, struct item, it);
	struct timespec ts = { 0, (long)i->sleep_ms * 1000000L }, give_up;

	/* Not forever: a reaper that released on the caller's thread would
	 * then hang the test instead of failing it. */
	clock_gettime(CLOCK_REALTIME, &give_up);
	give_up.tv_sec += GATE_GIVE_UP_S;
	pthread_mutex_lock(&seen.mu);
	while (i->gated && !seen.gate_open &&
	       pthread_cond_timedwait(&seen.cond, &seen.mu, &give_up) != ETIMEDOUT)
		;
	pthread_mutex_unlock(&seen.mu);
	nanosleep(&ts, NULL);
	pthread_mutex_lock(&seen.mu);
	seen.on_caller |= pthread_equal(pthread_self(), seen.caller);
	seen.order[seen.nreleased++] = i->num;
	pthread_cond_broadcast(&seen.cond);
	pthread_mutex_unlock(&seen.mu);
	free(i);
}

static struct item *new_item(int num, int gated, unsigned sleep_ms)
{
	struct item *i = calloc(1, sizeof(*i));

	assert_non_null(i);
	i->it.release = item_release;
	i->num = num;
	i->gated = gated;
	i->sleep_ms = sleep_ms;
	return i;
}

static int reset(void **state)
{
	(void)state;
	seen.gate_open = 0;
	seen.nreleased = 0;
	seen.on_caller = 0;
	seen.caller = pthread_self();
	return 0;
}

static int released(void)
{
	int n;

	pthread_mutex_lock(&seen.mu);
	n = seen.nreleased;
	pthread_mutex_unlock(&seen.mu);
	return n;
}

/* The first release blocks until the gate opens: queueing it and the
 * others returns at once all the same, and nothing is released meanwhile
 * (one thread, in order); once open, all of them are, in order, on the
 * reaper's thread. */
static void test_blocking_release_does_not_block_the_caller(void **state)
{
	struct timespec ts = { 0, 100 * 1000000L };
	struct tr_reaper r;
	uint64_t t0;

	(void)state;
	tr_reaper_init(&r);
	t0 = tr_now_ns();
	assert_int_equal(tr_reaper_queue(&r, &new_item(0, 1, 0)->it), 0);
	for (int n = 1; n < NITEMS; n++)
		assert_int_equal(tr_reaper_queue(&r, &new_item(n, 0, 0)->it), 0);
	/* Well under the gated release's own give-up, even on a slow machine. */
	assert_true(tr_now_ns() - t0 < 1000000000ull);
	nanosleep(&ts, NULL);
	assert_int_equal(released(), 0);

	pthread_mutex_lock(&seen.mu);
	seen.gate_open = 1;
	pthread_cond_broadcast(&seen.cond);
	while (seen.nreleased < NITEMS)
		pthread_cond_wait(&seen.cond, &seen.mu);
	pthread_mutex_unlock(&seen.mu);
	for (int n = 0; n < NITEMS; n++)
		assert_int_equal(seen.order[n], n);
	assert_false(seen.on_caller);
	tr_reaper_stop(&r);
	assert_int_equal(tr_reaper_released(&r), NITEMS);
}

/* Stopping waits until every item queued is released, slow ones too. */
static void test_stop_waits_for_every_item(void **state)
{
	struct tr_reaper r;

	(void)state;
	tr_reaper_init(&r);
	for (int n = 0; n < NITEMS; n++)
		assert_int_equal(tr_reaper_queue(&r, &new_item(n, 0, 20)->it), 0);
	tr_reaper_stop(&r);
	assert_int_equal(released(), NITEMS);
	assert_int_equal(tr_reaper_released(&r), NITEMS);
	for (int n = 0; n < NITEMS; n++)
		assert_int_equal(seen.order[n], n);
}

/* Once stopped, an item is refused and left to the caller; stopping
 * again, or a reaper that never had an item, is harmless. */
static void test_refused_once_stopped(void **state)
{
	struct tr_reaper r;
	struct item *i = new_item(7, 0, 0);

	(void)state;
	tr_reaper_init(&r);
	tr_reaper_stop(&r); /* no thread was ever started */
	assert_int_equal(tr_reaper_queue(&r, &i->it), -ESHUTDOWN);
	assert_int_equal(released(), 0);
	i->it.release(&i->it); /* the caller's, as lane.c does */
	assert_int_equal(released(), 1);
	assert_true(seen.on_caller);
	tr_reaper_stop(&r);
	assert_int_equal(tr_reaper_released(&r), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup(test_blocking_release_does_not_block_the_caller, reset),
		cmocka_unit_test_setup(test_stop_waits_for_every_item, reset),
		cmocka_unit_test_setup(test_refused_once_stopped, reset),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
