/* Progress: the lock, the libev loop and its thread, the hand-over between
 * application threads that poll and the progress thread, spin budgets,
 * completion-event arming, and the waiters.  See ctx.h for the locking.
 *
 * Completion events cost a wake-up each (about 200 us on the emulated test
 * VM), so they are armed only when someone needs one:
 * receive events always while nobody polls; send events only when someone
 * waits for a send completion (the lanes' send_wanted), or always when an
 * application thread goes to sleep.  What an application thread posts it
 * reaps itself while it keeps calling in (tr_progress_want_send): events
 * for it come on only once it stops, through the idle timer. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/timerfd.h>
#include <unistd.h>

#include "base/log.h"
#include "core/progress.h"

/* An application thread that called in within this window is taken to be
 * polling: it will reap its own completions, so the progress thread leaves
 * completion events off until the idle timer finds it stopped (no wake-up
 * per completion, and none at all while it keeps polling). */
#define APP_ACTIVE_NS 2000000ull
/* A polling application thread looks at the idle timer (a clock read)
 * about this many times a window, every so many calls (app_call), and
 * when it would fire within a window moves it two windows ahead: one
 * timerfd_settime about every window of polling. */
#define APP_LOOKS 4
#define APP_LOOK_MAX_CALLS 4096
/* A sleeping application thread wakes at least this often, to check
 * deadlines (window queries, copies). */
#define APP_SLEEP_MAX_NS 50000000ull

int tr_progress(struct triad_ctx *ctx)
{
	int n = 0;

	for (int i = 0; i < ctx->nplanes; i++)
		n += tr_fab_plane_poll(ctx->fab, i);
	for (unsigned i = 0; i < ctx->ntick; i++)
		ctx->tick[i](ctx);
	return n;
}

int tr_progress_hooks_add(struct triad_ctx *ctx, const struct tr_progress_hooks *h)
{
	if (ctx->ntick == TR_PROGRESS_HOOKS_MAX || ctx->nawaited == TR_PROGRESS_HOOKS_MAX)
		return -ENOSPC;
	if (h->tick)
		ctx->tick[ctx->ntick++] = h->tick;
	if (h->awaited)
		ctx->awaited[ctx->nawaited++] = h->awaited;
	return 0;
}

static void app_call(struct triad_ctx *ctx);

void tr_progress_app(struct triad_ctx *ctx)
{
	app_call(ctx);
	tr_progress(ctx);
}

int triad_progress(triad_ctx_t *ctx)
{
	if (!ctx)
		return -EINVAL;
	tr_ctx_lock(ctx);
	tr_progress_app(ctx);
	pthread_mutex_unlock(&ctx->lock);
	return 0;
}

/* Dates the application threads' call count if it moved since last seen. */
static void app_date(struct triad_ctx *ctx, uint64_t now)
{
	if (ctx->app_calls != ctx->app_seen_calls) {
		ctx->app_seen_calls = ctx->app_calls;
		ctx->app_seen_ns = now;
	}
}

/* Has an application thread called in within the last APP_ACTIVE_NS (give
 * or take a look of the idle timer)?  It counts its calls, and the count
 * is dated when it is seen to have moved, here or by the caller's own
 * looks (app_call): not one clock read per call (a put, a get, every spin
 * of a wait). */
static int app_polling(struct triad_ctx *ctx)
{
	uint64_t now = tr_now_ns();

	app_date(ctx, now);
	return ctx->app_seen_ns && now - ctx->app_seen_ns < APP_ACTIVE_NS;
}

/* A thread about to sleep: not polling any more, events on. */
static void app_asleep(struct triad_ctx *ctx)
{
	ctx->app_seen_calls = ctx->app_calls;
	ctx->app_seen_ns = 0;
}

/* ---- the idle timer -----------------------------------------------------------
 * It turns completion events back on once the application threads stop
 * calling in (idle_cb).  A timerfd rather than a libev timer: a polling
 * thread pushes it forward itself (app_call), so the progress thread is
 * not woken every APP_ACTIVE_NS to find the application still polling.
 * Each such wake-up cost the poller 65-140 us on the test VM's shared
 * vCPU, 6-8 % of its time; a timerfd_settime in the poller costs a system
 * call. */
static void idle_timer_arm(int fd, uint64_t at_ns)
{
	struct itimerspec its = { .it_value = { .tv_sec = (time_t)(at_ns / 1000000000),
						.tv_nsec = (long)(at_ns % 1000000000) } };

	if (timerfd_settime(fd, TFD_TIMER_ABSTIME, &its, NULL))
		tr_warn("the idle timer: timerfd_settime: %s", strerror(errno));
}

/* (lock held) */
static void idle_timer_set(struct triad_ctx *ctx, uint64_t at_ns)
{
	ctx->idle_at_ns = at_ns;
	idle_timer_arm(ctx->idle_fd, at_ns);
}

/* Starts the idle timer one window from now, unless it runs. */
static void rearm_later(struct triad_ctx *ctx)
{
	if (!ctx->idle_at_ns)
		idle_timer_set(ctx, tr_now_ns() + APP_ACTIVE_NS);
}

static int rearm_pending(struct triad_ctx *ctx)
{
	return app_polling(ctx) && ctx->idle_at_ns;
}

/* An application thread called in (lock held).  Now and then it dates
 * its calls (app_date), and keeps the idle timer at least a
 * window ahead (APP_LOOKS).  How often: every app_look_every calls, a
 * count set from the rate of its calls so that it looks about APP_LOOKS
 * times a window (a get's few calls take 40 us, a 64 KiB put's post
 * alone 1.8 ms on the test VM: a fixed count either reads the clock all
 * the time or lets the timer fire). */
static void app_call(struct triad_ctx *ctx)
{
	uint64_t n = ++ctx->app_calls - ctx->app_look_calls, now, dt, every;

	if (n < ctx->app_look_every || !ctx->idle_at_ns)
		return;
	now = tr_now_ns();
	dt = now - ctx->app_look_ns;
	every = dt ? n * (APP_ACTIVE_NS / APP_LOOKS) / dt : APP_LOOK_MAX_CALLS;
	if (every > APP_LOOK_MAX_CALLS)
		every = APP_LOOK_MAX_CALLS;
	ctx->app_look_every = every ? every : 1;
	ctx->app_look_calls = ctx->app_calls;
	ctx->app_look_ns = now;
	app_date(ctx, now);
	if ((int64_t)(ctx->idle_at_ns - now) < (int64_t)APP_ACTIVE_NS)
		idle_timer_set(ctx, now + 2 * APP_ACTIVE_NS);
}

/* Does anyone wait for a send completion on this plane? */
static int send_wanted(const struct triad_ctx *ctx, int plane)
{
	return ctx->progress_lanes && ctx->progress_lanes->send_wanted(ctx, plane);
}

static int on_progress_thread(const struct triad_ctx *ctx);

/* An application thread that posts work is about to poll for it (test,
 * wait, a flush): it reaps the completion itself, and an event would
 * only wake the progress thread to race it for the lock, on the same
 * CPU (put_lat read 5.8x ib_write_lat when each put's completion woke the
 * progress thread, 2026-12-01).  So it is counted as
 * polling and no event is armed; the idle timer (started here, pushed
 * on by its later calls) turns events on once it stops polling, one to
 * three APP_ACTIVE_NS later.  A thread going to sleep arms
 * them itself (tr_wait_until).  On the progress thread, events are armed
 * as before: nobody else may poll for what it posted. */
void tr_progress_want_send(struct triad_ctx *ctx, int plane)
{
	if (!on_progress_thread(ctx) && ctx->thread_started) {
		app_call(ctx);
		rearm_later(ctx);
		return;
	}
	if (!rearm_pending(ctx))
		tr_fab_plane_arm(ctx->fab, plane, TR_FAB_CQ_SEND);
}

/* Events on for every plane (all: send events too, for an application
 * thread going to sleep), then one poll for what landed before. */
static void arm_all(struct triad_ctx *ctx, int all)
{
	for (int i = 0; i < ctx->nplanes; i++)
		tr_fab_plane_arm(ctx->fab, i,
				 TR_FAB_CQ_RECV | (all || send_wanted(ctx, i) ? TR_FAB_CQ_SEND : 0));
	tr_progress(ctx);
}

static void idle_cb(struct ev_loop *loop, ev_io *w, int revents)
{
	struct triad_ctx *ctx = w->data;
	uint64_t expirations;

	(void)loop;
	(void)revents;
	/* Nothing to read: a poller moved the timer after it fired. */
	if (read(ctx->idle_fd, &expirations, sizeof(expirations)) != sizeof(expirations))
		return;
	/* The lock is taken: an application thread is inside the library (a
	 * 64 KiB put's post alone lasts a window on the test VM), so it is
	 * not idle.  Look again a window later instead of queueing behind it
	 * for the lock (a futex wait and two more switches on its vCPU). */
	if (pthread_mutex_trylock(&ctx->lock)) {
		idle_timer_arm(ctx->idle_fd, tr_now_ns() + APP_ACTIVE_NS);
		return;
	}
	ctx->idle_at_ns = 0;
	/* A poller keeps the timer a window ahead: that it fired means the
	 * application has stopped, or nearly (a call or two since its last
	 * look).  Look again soon rather than a whole window later. */
	if (app_polling(ctx))
		idle_timer_set(ctx, tr_now_ns() + APP_ACTIVE_NS / APP_LOOKS);
	else
		arm_all(ctx, 0);
	tr_ctx_signal(ctx);
	pthread_mutex_unlock(&ctx->lock);
}

/* ---- the progress thread's watchers -----------------------------------------*/
/* The plane of a watcher in one of the per-plane arrays. */
static int plane_of(const ev_io *w, const ev_io *arr)
{
	return (int)(w - arr);
}

/* Does an answer to something of a feature's still have to come (a copy
 * this rank initiated or serves as the source, say)? */
static int awaited(const struct triad_ctx *ctx)
{
	for (unsigned i = 0; i < ctx->nawaited; i++)
		if (ctx->awaited[i](ctx))
			return 1;
	return 0;
}

/* Whether the progress thread, having served a wake-up that received rx
 * messages, should poll on before it sleeps again (TRIAD_BG_SPIN_US): only
 * when something is on its way to it, a copy's answer or more of a stream
 * (this wake-up found more than one message waiting).  A wake-up costs far
 * more than tens of microseconds of polling, but a spin that waits for
 * nothing takes the CPU from whoever shares it: on a vCPU shared by a
 * copy's source and destination, the destination spinning after its answer
 * delays the source that the answer is for (per-rank settings, relay
 * copy_lat: 1058 us with the destination spinning, 867 without).  A rank
 * that has only answered (a copy's destination,
 * a window's owner) sleeps at once. */
static int spin_wanted(const struct triad_ctx *ctx, uint64_t rx)
{
	return awaited(ctx) || rx > 1;
}

/* Between two polls of a spin: no system call, and a sibling hardware
 * thread gets the core's pipeline. */
static inline void cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
	__builtin_ia32_pause();
#elif defined(__aarch64__)
	__asm__ __volatile__("yield" ::: "memory");
#endif
}

static int app_wants_in(struct triad_ctx *ctx);

static void cq_cb(struct ev_loop *loop, ev_io *w, int revents)
{
	struct triad_ctx *ctx = w->data;
	int plane = plane_of(w, ctx->cq_w);
	unsigned which;
	uint64_t rx0;

	(void)loop;
	(void)revents;
	tr_ctx_lock_progress(ctx);
	which = tr_fab_plane_events(ctx->fab, plane);
	TR_EV(ctx, "cq_wake", plane, which);
	if (which) {
		/* While an application thread polls, it reaps the completions
		 * itself: leave events off rather than wake this thread for each
		 * one (idle_cb re-arms once it stops). */
		if (!app_polling(ctx))
			tr_fab_plane_arm(ctx->fab, plane,
					 TR_FAB_CQ_RECV |
						 (send_wanted(ctx, plane) ? TR_FAB_CQ_SEND : 0));
		else
			rearm_later(ctx);
	}
	rx0 = ctx->rx_msgs;
	tr_progress(ctx);
	TR_EV(ctx, "cq_served", plane, 0);
	/* Poll a little longer before sleeping when something is on its way
	 * (spin_wanted), for TRIAD_BG_SPIN_US since this thread last found
	 * something.  What renews it: a message, or a completion while a copy
	 * is awaited; not the completion of an answer's own send, which
	 * nobody waits for.  The spin keeps its CPU (no sched_yield): beside
	 * perftest a yielding loop made every wake-up on its CPU twice as long
	 * (ib_send_lat -e 247 us against 122), and beside a computing thread a
	 * yield would hand over the rest of a time slice, so the spin would
	 * poll once a slice.
	 * A thread woken on its CPU waits for it at most the budget, unless
	 * the scheduler preempts it.  Application threads do not wait: the
	 * spin stops when one queues for the lock or one it woke has yet to
	 * take it (app_wants_in).  The budget is monotonic time, which
	 * preemption only makes run out sooner; CPU time would cost a system
	 * call per look. */
	if (ctx->cfg.bg_spin_us && !app_polling(ctx) && spin_wanted(ctx, ctx->rx_msgs - rx0)) {
		uint64_t budget = (uint64_t)ctx->cfg.bg_spin_us * 1000, from = tr_now_ns();

		while (tr_now_ns() - from < budget && !app_polling(ctx) && !app_wants_in(ctx)) {
			pthread_mutex_unlock(&ctx->lock);
			cpu_relax();
			tr_ctx_lock_progress(ctx);
			rx0 = ctx->rx_msgs;
			if (tr_progress(ctx) > 0) {
				tr_ctx_signal(ctx); /* a sleeper let in at once */
				if (ctx->rx_msgs != rx0 || awaited(ctx))
					from = tr_now_ns();
			}
		}
		TR_EV(ctx, "bg_spin_end", plane, 0);
	}
	tr_ctx_signal(ctx);
	pthread_mutex_unlock(&ctx->lock);
}

static void async_cb(struct ev_loop *loop, ev_io *w, int revents)
{
	struct triad_ctx *ctx = w->data;

	(void)loop;
	(void)revents;
	tr_ctx_lock_progress(ctx);
	tr_fab_async_dispatch(ctx->fab, plane_of(w, ctx->async_w));
	tr_ctx_signal(ctx);
	pthread_mutex_unlock(&ctx->lock);
}

static void cm_cb(struct ev_loop *loop, ev_io *w, int revents)
{
	struct triad_ctx *ctx = w->data;

	(void)loop;
	(void)revents;
	tr_ctx_lock_progress(ctx);
	tr_fab_cm_dispatch(ctx->fab);
	tr_ctx_signal(ctx);
	pthread_mutex_unlock(&ctx->lock);
}

/* ---- waiters -----------------------------------------------------------------*/
/* A thread asleep in tr_wait_until.  The signaller checks its condition
 * and wakes it only when that holds: a thread waiting in a barrier sleeps
 * through the copies its progress thread serves, instead of waking (and
 * taking the lock and the CPU) for every message. */
struct tr_waiter {
	struct tr_list link;
	pthread_cond_t cond;
	int (*pred)(void *);
	void *arg;
	int woken;
};

void tr_ctx_signal(struct triad_ctx *ctx)
{
	for (struct tr_list *l = ctx->waiters.next; l != &ctx->waiters; l = l->next) {
		struct tr_waiter *w = tr_container_of(l, struct tr_waiter, link);

		if (!w->woken && w->pred(w->arg)) {
			w->woken = 1;
			pthread_cond_signal(&w->cond);
		}
	}
}

/* Is an application thread waiting for the lock: queued for it
 * (tr_ctx_lock), or woken from tr_wait_until and not yet back in? */
static int app_wants_in(struct triad_ctx *ctx)
{
	if (tr_gate_app_waits(&ctx->gate))
		return 1;
	for (struct tr_list *l = ctx->waiters.next; l != &ctx->waiters; l = l->next)
		if (tr_container_of(l, struct tr_waiter, link)->woken)
			return 1;
	return 0;
}

/* Sleeps until signalled for pred, or until the absolute CLOCK_MONOTONIC
 * deadline ts (lock held).  Returns 1 when pred was seen to hold, by the
 * signaller or here: it is evaluated once to true, never again (the
 * barrier's releases the epoch when it does). */
static int sleep_until(struct triad_ctx *ctx, int (*pred)(void *), void *arg,
		       const struct timespec *ts)
{
	struct tr_waiter w = { .pred = pred, .arg = arg };
	pthread_condattr_t attr;
	int held = 0;

	pthread_condattr_init(&attr);
	pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
	pthread_cond_init(&w.cond, &attr);
	pthread_condattr_destroy(&attr);
	tr_list_add_tail(&ctx->waiters, &w.link);
	TR_EV(ctx, "app_sleep", 0, 0);
	while (!w.woken && !(held = pred(arg))) {
		if (pthread_cond_timedwait(&w.cond, &ctx->lock, ts) == ETIMEDOUT)
			break;
	}
	TR_EV(ctx, "app_wake", w.woken, 0);
	tr_list_del(&w.link);
	pthread_cond_destroy(&w.cond);
	return w.woken || held;
}

int tr_wait_until(struct triad_ctx *ctx, int (*pred)(void *), void *arg, int timeout_ms)
{
	uint64_t start = 0, spin_end = 0, end = UINT64_MAX;
	int ret = 0;

	tr_ctx_lock(ctx);
	for (;;) {
		uint64_t now, wake;
		struct timespec ts;

		tr_progress_app(ctx);
		if (pred(arg))
			break;
		/* The clock is read only once the first pass did not do: a get,
		 * whose READ rxe completes inside its post, reads none. */
		now = tr_now_ns();
		if (!start) {
			start = now;
			spin_end = start + (uint64_t)ctx->cfg.spin_us * 1000;
			if (timeout_ms >= 0)
				end = start + (uint64_t)timeout_ms * 1000000;
		}
		if (now >= end) {
			ret = -ETIMEDOUT;
			break;
		}
		if (now < spin_end) {
			/* Poll without starving the progress thread of the lock. */
			pthread_mutex_unlock(&ctx->lock);
			tr_ctx_lock(ctx);
			continue;
		}
		/* Sleep until the progress thread signals. */
		app_asleep(ctx);
		arm_all(ctx, 1);
		if (pred(arg))
			break;
		wake = now + APP_SLEEP_MAX_NS;
		if (wake > end)
			wake = end;
		ts.tv_sec = (time_t)(wake / 1000000000);
		ts.tv_nsec = (long)(wake % 1000000000);
		if (sleep_until(ctx, pred, arg, &ts))
			break;
	}
	pthread_mutex_unlock(&ctx->lock);
	return ret;
}

/* ---- timers and requests from other threads -------------------------------------*/
static int on_progress_thread(const struct triad_ctx *ctx)
{
	return ctx->thread_started && pthread_equal(pthread_self(), ctx->thread);
}

static void start_linger(struct triad_ctx *ctx)
{
	ctx->linger_wanted = 0;
	if (!ev_is_active(&ctx->linger_w)) {
		/* Well inside the sender's timer, which would otherwise free the
		 * slots by timeout. */
		double s = ctx->cfg.bsm_linger_us * 1e-6, most = ctx->cfg.fc_timer_ms * 0.25e-3;

		ev_timer_set(&ctx->linger_w, s < most ? s : most, 0.);
		ev_timer_start(ctx->loop, &ctx->linger_w);
		ctx->linger_on = 1;
	}
}

void tr_progress_linger(struct triad_ctx *ctx)
{
	if (on_progress_thread(ctx)) {
		start_linger(ctx);
	} else if (!ctx->linger_wanted && !ctx->linger_on) {
		/* The progress thread owns the timers.  One that runs already
		 * flushes this lane too, only sooner: no wake-up for it (a
		 * polling receiver started a linger every few messages, each an
		 * eventfd write, a wake-up and a fight for the lock). */
		ctx->linger_wanted = 1;
		ev_async_send(ctx->loop, &ctx->kick_w);
	}
}

void tr_progress_kick(struct triad_ctx *ctx)
{
	ev_async_send(ctx->loop, &ctx->kick_w);
}

static void linger_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
	struct triad_ctx *ctx = w->data;

	(void)loop;
	(void)revents;
	tr_ctx_lock_progress(ctx);
	ctx->linger_on = 0;
	ctx->progress_lanes->linger(ctx);
	pthread_mutex_unlock(&ctx->lock);
}

static void kick_cb(struct ev_loop *loop, ev_async *w, int revents)
{
	struct triad_ctx *ctx = w->data;

	(void)loop;
	(void)revents;
	tr_ctx_lock_progress(ctx);
	ctx->progress_lanes->kicked(ctx);
	if (ctx->linger_wanted)
		start_linger(ctx);
	pthread_mutex_unlock(&ctx->lock);
}

static void fc_timer_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
	struct triad_ctx *ctx = w->data;

	(void)loop;
	(void)revents;
	tr_ctx_lock_progress(ctx);
	ctx->fc_ticks++;
	/* One poll of every plane per period, whatever the events say: a
	 * completion nobody asked an event for (a wake-up missed) waits one
	 * period at most, not until other traffic comes. */
	tr_progress(ctx); /* the features' deadlines too (their ticks) */
	ctx->progress_lanes->period(ctx); /* the lanes', and waits for connections */
	tr_ctx_signal(ctx);
	pthread_mutex_unlock(&ctx->lock);
}

static void wake_cb(struct ev_loop *loop, ev_async *w, int revents)
{
	(void)w;
	(void)revents;
	ev_break(loop, EVBREAK_ALL);
}

static void *progress_thread(void *arg)
{
	struct triad_ctx *ctx = arg;

	ev_run(ctx->loop, 0);
	return NULL;
}

/* ---- set-up ------------------------------------------------------------------*/
int tr_progress_setup(struct triad_ctx *ctx)
{
	ctx->idle_fd = -1;
	ctx->loop = ev_loop_new(EVFLAG_AUTO);
	if (!ctx->loop) {
		tr_error("cannot create the event loop");
		return -ENOMEM;
	}
	ctx->idle_fd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
	if (ctx->idle_fd < 0) {
		int ret = -errno;

		tr_error("cannot create the idle timer: timerfd_create: %s", strerror(errno));
		return ret;
	}
	ev_io_init(&ctx->cm_w, cm_cb, tr_fab_cm_fd(ctx->fab), EV_READ);
	ctx->cm_w.data = ctx;
	ev_io_start(ctx->loop, &ctx->cm_w);
	for (int p = 0; p < ctx->nplanes; p++) {
		int afd = tr_fab_plane_async_fd(ctx->fab, p);

		ev_io_init(&ctx->cq_w[p], cq_cb, tr_fab_plane_cq_fd(ctx->fab, p), EV_READ);
		ctx->cq_w[p].data = ctx;
		ev_io_start(ctx->loop, &ctx->cq_w[p]);
		if (afd >= 0) {
			ev_io_init(&ctx->async_w[p], async_cb, afd, EV_READ);
			ctx->async_w[p].data = ctx;
			ev_io_start(ctx->loop, &ctx->async_w[p]);
		}
	}
	ev_async_init(&ctx->wake_w, wake_cb);
	ev_async_start(ctx->loop, &ctx->wake_w);
	ev_async_init(&ctx->kick_w, kick_cb);
	ctx->kick_w.data = ctx;
	ev_async_start(ctx->loop, &ctx->kick_w);
	/* The flow-control timer: one wake-up per period, idle or not. */
	ev_timer_init(&ctx->fc_timer_w, fc_timer_cb, ctx->cfg.fc_timer_ms / 1000.0,
		      ctx->cfg.fc_timer_ms / 1000.0);
	ctx->fc_timer_w.data = ctx;
	ev_timer_start(ctx->loop, &ctx->fc_timer_w);
	ev_io_init(&ctx->idle_w, idle_cb, ctx->idle_fd, EV_READ);
	ctx->idle_w.data = ctx;
	ev_io_start(ctx->loop, &ctx->idle_w);
	ev_timer_init(&ctx->linger_w, linger_cb, 0., 0.);
	ctx->linger_w.data = ctx;
	return 0;
}

int tr_progress_start(struct triad_ctx *ctx)
{
	int ret = pthread_create(&ctx->thread, NULL, progress_thread, ctx);

	if (ret) {
		tr_error("cannot start the progress thread: %s", strerror(ret));
		return -ret;
	}
	ctx->thread_started = 1;
	return 0;
}

void tr_progress_step(struct triad_ctx *ctx)
{
	ev_run(ctx->loop, EVRUN_NOWAIT);
}

void tr_progress_teardown(struct triad_ctx *ctx)
{
	if (!ctx->loop)
		return;
	ev_loop_destroy(ctx->loop);
	ctx->loop = NULL;
	if (ctx->idle_fd >= 0)
		close(ctx->idle_fd);
	ctx->idle_fd = -1;
}

void tr_progress_stop(struct triad_ctx *ctx)
{
	if (!ctx->thread_started)
		return;
	ev_async_send(ctx->loop, &ctx->wake_w);
	pthread_join(ctx->thread, NULL);
	ctx->thread_started = 0;
}
