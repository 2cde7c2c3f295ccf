/* Unit tests for the lock's courtesy (lib/base/gate.[ch]): an application
 * thread that comes to the lock while the progress thread waits for it
 * lets the progress thread in first, however fast the application
 * threads call in; application threads, queued, are seen by a spinning
 * progress thread; and a callback run under the lock takes it again at
 * once while the progress thread waits for it. */
#include <pthread.h>
#include <sched.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include <cmocka.h>

#include "base/gate.h"

#define NAPPS 2
#define ENTRIES 400 /* the progress thread's */

static struct tr_gate gate;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static atomic_int stop;
static atomic_ulong entries;   /* the progress thread's, counted with the lock */
static atomic_ulong app_calls; /* the application threads' */
static atomic_ulong overtaken; /* app entries made while the progress thread waited
				* since before the app came */

static void busy_ns(long ns)
{
	struct timespec t0, t;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	do
		clock_gettime(CLOCK_MONOTONIC, &t);
	while ((t.tv_sec - t0.tv_sec) * 1000000000L + (t.tv_nsec - t0.tv_nsec) < ns);
}

/* An application thread calling in back to back, as one that sends
 * active messages one after another does. */
static void *app(void *arg)
{
	(void)arg;
	while (!atomic_load(&stop)) {
		/* The count first, then the word: a progress thread that
		 * waits now has not entered since this count. */
		unsigned long before = atomic_load(&entries);
		unsigned waits = atomic_load(&gate.progress_wanted);

		tr_gate_lock_app(&gate, &lock);
		if (waits && atomic_load(&entries) == before)
			atomic_fetch_add(&overtaken, 1);
		atomic_fetch_add(&app_calls, 1);
		busy_ns(2000);
		pthread_mutex_unlock(&lock);
	}
	return NULL;
}

static void test_progress_goes_first(void **state)
{
	pthread_t th[NAPPS];
	struct timespec nap = { 0, 20000 };

	(void)state;
	for (int i = 0; i < NAPPS; i++)
		assert_int_equal(pthread_create(&th[i], NULL, app, NULL), 0);
	for (int i = 0; i < ENTRIES; i++) {
		nanosleep(&nap, NULL);
		tr_gate_lock_progress(&gate, &lock);
		atomic_fetch_add(&entries, 1);
		busy_ns(1000);
		pthread_mutex_unlock(&lock);
	}
	atomic_store(&stop, 1);
	for (int i = 0; i < NAPPS; i++)
		pthread_join(th[i], NULL);
	assert_true(atomic_load(&app_calls) > 0);
	assert_int_equal(atomic_load(&overtaken), 0);
	assert_int_equal(atomic_load(&gate.progress_wanted), 0);
	assert_int_equal(atomic_load(&gate.app_wanted), 0);
}

/* A progress thread holding the lock sees an application thread queue for
 * it, and no more once it is in. */
static void *one_app(void *arg)
{
	(void)arg;
	tr_gate_lock_app(&gate, &lock);
	pthread_mutex_unlock(&lock);
	return NULL;
}

static void test_app_seen_waiting(void **state)
{
	pthread_t th;
	int seen = 0;

	(void)state;
	tr_gate_lock_progress(&gate, &lock);
	assert_false(tr_gate_app_waits(&gate));
	assert_int_equal(pthread_create(&th, NULL, one_app, NULL), 0);
	for (int i = 0; i < 100000 && !seen; i++) {
		struct timespec nap = { 0, 100000 };

		seen = tr_gate_app_waits(&gate);
		if (!seen)
			nanosleep(&nap, NULL);
	}
	assert_true(seen);
	pthread_mutex_unlock(&lock);
	pthread_join(th, NULL);
	assert_false(tr_gate_app_waits(&gate));
}

/* The lock is recursive in the library: an active message handler, run
 * under it by an application thread, calls in again (triad_am_send) while
 * the progress thread waits for the lock that thread holds. */
static pthread_mutex_t rlock;
static atomic_int reentered;

static void *progress_queues(void *arg)
{
	(void)arg;
	tr_gate_lock_progress(&gate, &rlock);
	pthread_mutex_unlock(&rlock);
	return NULL;
}

static void *handler_thread(void *arg)
{
	pthread_t *prog = arg;
	unsigned long prev;

	tr_gate_lock_app(&gate, &rlock); /* the poll that runs the handler */
	pthread_create(prog, NULL, progress_queues, NULL);
	while (!atomic_load(&gate.progress_wanted))
		sched_yield();
	prev = tr_gate_callback_begin(&gate);
	tr_gate_lock_app(&gate, &rlock); /* the handler calls in */
	atomic_store(&reentered, 1);
	pthread_mutex_unlock(&rlock);
	tr_gate_callback_end(&gate, prev);
	pthread_mutex_unlock(&rlock);
	return NULL;
}

static void test_callback_takes_it_again(void **state)
{
	pthread_mutexattr_t a;
	pthread_t th, prog;

	(void)state;
	pthread_mutexattr_init(&a);
	pthread_mutexattr_settype(&a, PTHREAD_MUTEX_RECURSIVE);
	pthread_mutex_init(&rlock, &a);
	pthread_mutexattr_destroy(&a);
	assert_int_equal(pthread_create(&th, NULL, handler_thread, &prog), 0);
	for (int i = 0; i < 500 && !atomic_load(&reentered); i++) {
		struct timespec nap = { 0, 10000000 };

		nanosleep(&nap, NULL);
	}
	/* Without the mark the handler waits for the progress thread, which
	 * waits for the handler's lock: neither thread ever returns. */
	if (!atomic_load(&reentered))
		fail_msg("a callback's call in waits for ever for the progress thread");
	pthread_join(th, NULL);
	pthread_join(prog, NULL);
	assert_int_equal(atomic_load(&gate.progress_wanted), 0);
	assert_int_equal(atomic_load(&gate.app_wanted), 0);
	assert_int_equal(atomic_load(&gate.in_callback), 0);
	pthread_mutex_destroy(&rlock);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_progress_goes_first),
		cmocka_unit_test(test_app_seen_waiting),
		cmocka_unit_test(test_callback_takes_it_again),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
