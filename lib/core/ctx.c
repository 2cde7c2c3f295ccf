/* The context: configuration, world, planes, connections, the progress
 * engine and its thread, waiting, the barrier.  See ctx.h for the locking. */
#include "core/ctx.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/log.h"

static const char *const status_names[TRIAD_S_MAX] = {
	[TRIAD_S_OK] = "ok",
	[TRIAD_S_PENDING] = "pending",
	[TRIAD_S_NO_WINDOW] = "no such window",
	[TRIAD_S_OUT_OF_BOUNDS] = "out of the window's bounds",
	[TRIAD_S_ACCESS] = "access not allowed by the window",
	[TRIAD_S_REMOTE_ACCESS] = "remote access error",
	[TRIAD_S_PLANE_DOWN] = "plane down",
	[TRIAD_S_UNREACHABLE] = "peer unreachable",
	[TRIAD_S_TRANSPORT] = "transport error",
	[TRIAD_S_TIMEOUT] = "timed out",
	[TRIAD_S_NO_MEMORY] = "out of memory",
	[TRIAD_S_CANCELLED] = "cancelled",
};

const char *triad_status_str(enum triad_status s)
{
	return (unsigned)s < TRIAD_S_MAX ? status_names[s] : "unknown status";
}

uint64_t tr_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* ---- engine -------------------------------------------------------------------*/
int tr_progress(struct triad_ctx *ctx)
{
	int n = 0;

	for (int i = 0; i < ctx->nplanes; i++)
		n += tr_plane_poll(&ctx->plane[i]);
	if (ctx->nqueries)
		tr_win_check_timeouts(ctx);
	tr_copy_progress(ctx);
	return n;
}

void tr_progress_app(struct triad_ctx *ctx)
{
	ctx->app_poll_ns = tr_now_ns();
	tr_progress(ctx);
}

/* An application thread that called in within this window is taken to be
 * polling: it will reap its own completions, so the progress thread leaves
 * completion events off and checks again one window later (one wake-up per
 * window at most, instead of one per completion). */
#define APP_ACTIVE_NS 2000000ull

int tr_ctx_app_polling(struct triad_ctx *ctx)
{
	return tr_now_ns() - ctx->app_poll_ns < APP_ACTIVE_NS;
}

int tr_ctx_rearm_pending(struct triad_ctx *ctx)
{
	return tr_ctx_app_polling(ctx) && ev_is_active(&ctx->rearm_w);
}

void tr_ctx_arm_all(struct triad_ctx *ctx, int all)
{
	for (int i = 0; i < ctx->nplanes; i++)
		tr_plane_arm(&ctx->plane[i], all);
	tr_progress(ctx); /* what landed before the arming raised no event */
}

void tr_ctx_rearm_later(struct triad_ctx *ctx)
{
	if (!ev_is_active(&ctx->rearm_w)) {
		ev_timer_set(&ctx->rearm_w, APP_ACTIVE_NS * 1e-9, 0.);
		ev_timer_start(ctx->loop, &ctx->rearm_w);
	}
}

static void rearm_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
	struct triad_ctx *ctx = w->data;

	(void)loop;
	(void)revents;
	pthread_mutex_lock(&ctx->lock);
	if (tr_ctx_app_polling(ctx))
		tr_ctx_rearm_later(ctx);
	else
		tr_ctx_arm_all(ctx, 0);
	tr_ctx_signal(ctx);
	pthread_mutex_unlock(&ctx->lock);
}

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
	uint64_t start = tr_now_ns();
	uint64_t spin_end = start + (uint64_t)ctx->cfg.spin_us * 1000;
	uint64_t end = timeout_ms < 0 ? UINT64_MAX : start + (uint64_t)timeout_ms * 1000000;
	int ret = 0;

	pthread_mutex_lock(&ctx->lock);
	for (;;) {
		uint64_t now, wake;
		struct timespec ts;

		tr_progress_app(ctx);
		if (pred(arg))
			break;
		now = tr_now_ns();
		if (now >= end) {
			ret = -ETIMEDOUT;
			break;
		}
		if (now < spin_end) {
			/* Poll without starving the progress thread of the lock. */
			pthread_mutex_unlock(&ctx->lock);
			pthread_mutex_lock(&ctx->lock);
			continue;
		}
		/* Sleep until the progress thread signals; wake up at least every
		 * 50 ms to check query deadlines. */
		ctx->app_poll_ns = 0; /* not polling any more: events on */
		tr_ctx_arm_all(ctx, 1);
		if (pred(arg))
			break;
		wake = now + 50 * 1000000ull;
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

static void wake_cb(struct ev_loop *loop, ev_async *w, int revents)
{
	(void)w;
	(void)revents;
	ev_break(loop, EVBREAK_ALL);
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
	}
}

static int on_progress_thread(const struct triad_ctx *ctx)
{
	return ctx->thread_started && pthread_equal(pthread_self(), ctx->thread);
}

void tr_core_bsm_linger(struct tr_conn *c)
{
	struct triad_ctx *ctx = c->ctx;

	if (on_progress_thread(ctx)) {
		start_linger(ctx);
	} else if (!ctx->linger_wanted) {
		ctx->linger_wanted = 1; /* the progress thread owns the timers */
		ev_async_send(ctx->loop, &ctx->kick_w);
	}
}

static void linger_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
	struct triad_ctx *ctx = w->data;

	(void)loop;
	(void)revents;
	pthread_mutex_lock(&ctx->lock);
	for (int r = 0; r < ctx->size; r++)
		for (int p = 0; r != ctx->rank && p < ctx->nplanes; p++)
			tr_conn_bsm_flush(&ctx->peers[r].conn[p]);
	pthread_mutex_unlock(&ctx->lock);
}

static void kick_cb(struct ev_loop *loop, ev_async *w, int revents)
{
	struct triad_ctx *ctx = w->data;

	(void)loop;
	(void)revents;
	pthread_mutex_lock(&ctx->lock);
	tr_conn_reconnect_all(ctx);
	if (ctx->linger_wanted)
		start_linger(ctx);
	pthread_mutex_unlock(&ctx->lock);
}

static void fc_timer_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
	struct triad_ctx *ctx = w->data;

	(void)loop;
	(void)revents;
	pthread_mutex_lock(&ctx->lock);
	for (int r = 0; r < ctx->size; r++)
		for (int p = 0; r != ctx->rank && p < ctx->nplanes; p++)
			tr_conn_fc_tick(&ctx->peers[r].conn[p]);
	tr_copy_progress(ctx);
	tr_ctx_signal(ctx);
	pthread_mutex_unlock(&ctx->lock);
}

static void *progress_thread(void *arg)
{
	struct triad_ctx *ctx = arg;

	ev_run(ctx->loop, 0);
	return NULL;
}

/* ---- plane choice and messages ---------------------------------------------------*/
int tr_plane_choose(struct triad_ctx *ctx, int peer, unsigned flags)
{
	int home, i;

	if (flags & 0x100u)
		return (int)(flags & 0xffu) < ctx->nplanes ? (int)(flags & 0xffu) : -1;
	home = (ctx->rank + peer) % ctx->nplanes;
	for (i = 0; i < ctx->nplanes; i++) {
		int p = (home + i) % ctx->nplanes;

		if (ctx->peers[peer].conn[p].state == TR_CONN_UP && ctx->plane[p].port_up)
			return p;
	}
	return home; /* nothing live: the caller reports the home plane's state */
}

int tr_send_msg(struct triad_ctx *ctx, int peer, struct tr_msg *m, unsigned prio,
		struct triad_req *req)
{
	int plane = tr_plane_choose(ctx, peer, 0);
	int ret = tr_conn_send(&ctx->peers[peer].conn[plane], m, prio, req);

	if (ret)
		tr_warn("%s to rank %d on plane %d: %s", tr_msg_type_str(m->type), peer, plane,
			strerror(-ret));
	return ret;
}

/* ---- fabric -> core ----------------------------------------------------------------*/
int tr_core_msg(struct tr_conn *c, const struct tr_msg *m, struct tr_buf *b)
{
	struct triad_ctx *ctx = c->ctx;
	struct tr_peer *p = &ctx->peers[c->peer];
	int kept = 0;

	switch (tr_seq_rx_accept(&p->rx_seq, m->seq)) {
	case TR_SEQ_NEW:
		break;
	case TR_SEQ_DUPLICATE:
		tr_debug("peer %d: duplicate %s seq %u dropped", c->peer,
			 tr_msg_type_str(m->type), m->seq);
		return 0;
	case TR_SEQ_TOO_FAR:
		c->stats.errors++;
		tr_warn("peer %d: %s seq %u beyond the window (expected %u): dropped", c->peer,
			tr_msg_type_str(m->type), m->seq, p->rx_seq.next);
		return 0;
	}
	switch (m->type) {
	case TR_MSG_WIN_QUERY:
		tr_win_on_query(ctx, c->peer, m);
		break;
	case TR_MSG_WIN_INFO:
		tr_win_on_info(ctx, c->peer, m);
		break;
	case TR_MSG_BARRIER:
	case TR_MSG_BARRIER_REL:
		tr_barrier_on_msg(ctx, c->peer, m);
		break;
	case TR_MSG_AM:
		kept = tr_am_deliver(ctx, c, m, b);
		break;
	case TR_MSG_COPY:
		tr_copy_on_msg(ctx, c->peer, m);
		break;
	case TR_MSG_BCAST_DONE:
		tr_bcast_on_msg(ctx, c->peer, m);
		break;
	case TR_MSG_BYE:
		/* A clean exit: its disconnects follow; rebuilding them would
		 * retry until we close. */
		tr_info("peer %d: closing", c->peer);
		p->gone = 1;
		break;
	case TR_MSG_PLANE_DOWN:
		if ((int)m->u.plane_down.plane < ctx->nplanes) {
			struct tr_conn *broken = &p->conn[m->u.plane_down.plane];

			if (broken->state == TR_CONN_UP) {
				tr_warn("peer %d plane %u: the peer reports the connection broken",
					c->peer, m->u.plane_down.plane);
				tr_conn_fail(broken, TRIAD_S_UNREACHABLE);
			}
		}
		break;
	default:
		break;
	}
	tr_ctx_signal(ctx);
	return kept;
}

void tr_core_msg_done(struct triad_req *req, enum triad_status st)
{
	tr_req_complete(req, st);
}

void tr_core_msg_lost(struct tr_conn *c, const void *data, int len, unsigned prio,
		      struct triad_req *req)
{
	struct triad_ctx *ctx = c->ctx;
	int plane = tr_plane_choose(ctx, c->peer, 0);
	struct tr_conn *alt = &ctx->peers[c->peer].conn[plane];

	if (ctx->closing) {
		if (req)
			tr_req_complete(req, TRIAD_S_CANCELLED);
		return;
	}
	if (alt == c || tr_conn_send_raw(alt, data, len, prio, req)) {
		/* Nobody waits for our BYE, nor for anything to a peer that said
		 * its own: that is a peer closing first, not a fault. */
		if (ctx->peers[c->peer].gone || tr_wire_type(data) == TR_MSG_BYE)
			tr_info("a message to rank %d is lost: it is closing", c->peer);
		else
			tr_error("a message to rank %d is lost: no live plane left", c->peer);
		if (req)
			tr_req_complete(req, c->down_status);
		return;
	}
	tr_debug("message to rank %d moved from plane %d to plane %d", c->peer, c->plane, plane);
}

void tr_core_conn_changed(struct tr_conn *c)
{
	struct triad_ctx *ctx = c->ctx;

	if (c->state == TR_CONN_DRAINING || c->state == TR_CONN_FAILED) {
		/* Requests not yet posted on it fail now; posted ones come back flushed. */
		while (!tr_list_empty(&c->rmaq)) {
			struct triad_req *req = tr_list_first(&c->rmaq, struct triad_req, link);

			tr_list_del(&req->link);
			req->posted = req->len; /* post nothing more */
			if (!req->status)
				req->status = c->down_status;
			if (!req->inflight)
				tr_req_complete(req, req->status);
		}
		tr_win_conn_broken(ctx, c);
		if (ctx->initialized && !ctx->closing) {
			int live = 0;

			for (int p = 0; p < ctx->nplanes; p++)
				live |= ctx->peers[c->peer].conn[p].state == TR_CONN_UP;
			if (!live) {
				tr_copy_peer_lost(ctx, c->peer);
				tr_bcast_peer_lost(ctx, c->peer);
			}
		}
		if (c->state == TR_CONN_DRAINING && !ctx->closing && !c->peer_closed &&
		    !ctx->peers[c->peer].gone) {
			/* The peer may not have noticed (a link fault loses its DREQ):
			 * tell it on another plane, so it drops its side and the pair
			 * can rebuild the connection. */
			struct tr_msg m = { .type = TR_MSG_PLANE_DOWN };
			int alt = tr_plane_choose(ctx, c->peer, 0);

			m.u.plane_down.plane = (uint32_t)c->plane;
			if (alt != c->plane && ctx->peers[c->peer].conn[alt].state == TR_CONN_UP)
				tr_conn_send(&ctx->peers[c->peer].conn[alt], &m, TR_FC_HIGH, NULL);
		}
	}
	tr_ctx_signal(ctx);
}

/* ---- barrier: everyone tells rank 0, rank 0 releases everyone ------------------------*/
void tr_barrier_on_msg(struct triad_ctx *ctx, int peer, const struct tr_msg *m)
{
	uint32_t e = m->u.barrier.epoch;

	if (m->type == TR_MSG_BARRIER && ctx->rank == 0) {
		/* An arrival may be for the epoch after the one rank 0 is in. */
		if (e != ctx->bar_epoch && e != ctx->bar_epoch + 1) {
			tr_warn("rank %d: barrier epoch %u, expected %u", peer, e, ctx->bar_epoch);
			return;
		}
		ctx->bar_arrived[e & 1]++;
	} else if (m->type == TR_MSG_BARRIER_REL && peer == 0) {
		if ((int32_t)(e - ctx->bar_released) > 0)
			ctx->bar_released = e;
	}
}

struct bar_wait {
	struct triad_ctx *ctx;
	uint32_t epoch;
	int error;
};

static int barrier_done(void *arg)
{
	struct bar_wait *b = arg;
	struct triad_ctx *ctx = b->ctx;
	int peer, p;

	if (ctx->rank == 0) {
		if (ctx->bar_arrived[b->epoch & 1] < (uint32_t)ctx->size - 1)
			goto check_peers;
		ctx->bar_arrived[b->epoch & 1] = 0;
		for (peer = 1; peer < ctx->size; peer++) {
			struct tr_msg m = { .type = TR_MSG_BARRIER_REL, .u.barrier.epoch = b->epoch };

			if (tr_send_msg(ctx, peer, &m, TR_FC_HIGH, NULL))
				b->error = -EIO;
		}
		return 1;
	}
	if ((int32_t)(ctx->bar_released - b->epoch) >= 0)
		return 1;
check_peers:
	/* Give up when a rank we need can no longer be reached on any plane. */
	for (peer = ctx->rank == 0 ? 1 : 0; peer < (ctx->rank == 0 ? ctx->size : 1); peer++) {
		int live = 0;

		for (p = 0; p < ctx->nplanes; p++)
			live |= ctx->peers[peer].conn[p].state == TR_CONN_UP;
		if (!live) {
			tr_error("barrier: rank %d is unreachable", peer);
			b->error = -EIO;
			return 1;
		}
	}
	return 0;
}

int triad_barrier(triad_ctx_t *ctx, int timeout_ms)
{
	struct bar_wait b = { .ctx = ctx };
	int ret;

	if (!ctx)
		return -EINVAL;
	if (ctx->size == 1)
		return 0;
	pthread_mutex_lock(&ctx->lock);
	b.epoch = ++ctx->bar_epoch;
	if (ctx->rank != 0) {
		struct tr_msg m = { .type = TR_MSG_BARRIER, .u.barrier.epoch = b.epoch };

		if (tr_send_msg(ctx, 0, &m, TR_FC_HIGH, NULL)) {
			pthread_mutex_unlock(&ctx->lock);
			return -EIO;
		}
	}
	pthread_mutex_unlock(&ctx->lock);
	ret = tr_wait_until(ctx, barrier_done, &b, timeout_ms);
	return ret ? ret : b.error;
}

/* ---- init / fini ------------------------------------------------------------------------*/
static int conns_settled(void *arg)
{
	struct triad_ctx *ctx = arg;

	for (int r = 0; r < ctx->size; r++)
		for (int p = 0; r != ctx->rank && p < ctx->nplanes; p++) {
			enum tr_conn_state s = ctx->peers[r].conn[p].state;

			if (s != TR_CONN_UP && s != TR_CONN_FAILED && s != TR_CONN_DRAINING)
				return 0;
		}
	return 1;
}

static int open_world(triad_ctx_t *ctx, const struct triad_ctx_attr *attr)
{
	const char *path = ctx->cfg.world;
	char err[300];
	int ret;

	if (attr && (attr->field_mask & TRIAD_CTX_ATTR_WORLD_FILE))
		path = attr->world_file;
	if (attr && (attr->field_mask & TRIAD_CTX_ATTR_RANK))
		ctx->rank = attr->rank;
	else
		ctx->rank = ctx->cfg.rank;
	if (!path || !*path) {
		tr_error("no world file: set TRIAD_WORLD or pass attr.world_file");
		return -EINVAL;
	}
	ret = tr_world_load(path, &ctx->world, err, sizeof(err));
	if (ret) {
		tr_error("%s", err);
		return ret;
	}
	if (ctx->rank < 0 || ctx->rank >= ctx->world.size) {
		tr_error("rank %d is not in %s (ranks 0..%d); set TRIAD_RANK", ctx->rank, path,
			 ctx->world.size - 1);
		return -EINVAL;
	}
	ctx->size = ctx->world.size;
	ctx->nplanes = ctx->world.nplanes;
	tr_log_rank = ctx->rank;
	return 0;
}

int triad_init(const struct triad_ctx_attr *attr, triad_ctx_t **ctx_p)
{
	triad_ctx_t *ctx;
	char err[300];
	int ret, r, p, fl;

	if (!ctx_p)
		return -EINVAL;
	ctx = calloc(1, sizeof(*ctx));
	if (!ctx)
		return -ENOMEM;
	pthread_mutexattr_t mattr;

	/* Recursive: an active-message handler runs with the lock held and may
	 * send or release. */
	pthread_mutexattr_init(&mattr);
	pthread_mutexattr_settype(&mattr, PTHREAD_MUTEX_RECURSIVE);
	pthread_mutex_init(&ctx->lock, &mattr);
	pthread_mutexattr_destroy(&mattr);
	tr_list_init(&ctx->waiters);
	ret = tr_config_load(&ctx->cfg, tr_config_getenv, NULL, err, sizeof(err));
	if (ret) {
		tr_error("%s", err);
		goto err;
	}
	tr_log_level = ctx->cfg.log_level;
	ret = open_world(ctx, attr);
	if (ret)
		goto err;
	ret = tr_trace_open(&ctx->trace, ctx->cfg.trace, ctx->rank);
	if (ret)
		goto err;

	ctx->loop = ev_loop_new(EVFLAG_AUTO);
	ctx->cm_chan = rdma_create_event_channel();
	if (!ctx->loop || !ctx->cm_chan) {
		tr_error("cannot create the event loop or the rdma_cm channel: %m");
		ret = -ENOMEM;
		goto err;
	}
	fl = fcntl(ctx->cm_chan->fd, F_GETFL);
	fcntl(ctx->cm_chan->fd, F_SETFL, fl | O_NONBLOCK);
	ev_io_init(&ctx->cm_w, tr_cm_cb, ctx->cm_chan->fd, EV_READ);
	ctx->cm_w.data = ctx;
	ev_io_start(ctx->loop, &ctx->cm_w);
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
	ev_timer_init(&ctx->rearm_w, rearm_cb, 0., 0.);
	ctx->rearm_w.data = ctx;
	ev_timer_init(&ctx->linger_w, linger_cb, 0., 0.);
	ctx->linger_w.data = ctx;

	for (p = 0; p < ctx->nplanes; p++) {
		ret = tr_plane_open(ctx, &ctx->plane[p], p, ctx->world.addr[ctx->rank][p],
				    ctx->world.port);
		if (ret)
			goto err;
	}
	ctx->peers = calloc((size_t)ctx->size, sizeof(*ctx->peers));
	if (!ctx->peers) {
		ret = -ENOMEM;
		goto err;
	}
	for (r = 0; r < ctx->size; r++) {
		ctx->peers[r].rank = r;
		for (p = 0; p < ctx->nplanes; p++)
			tr_conn_init(ctx, &ctx->peers[r].conn[p], r, p);
	}
	ret = tr_copy_setup(ctx);
	if (!ret)
		ret = tr_bcast_setup(ctx);
	if (ret)
		goto err;
	/* The lower rank connects. */
	for (r = ctx->rank + 1; r < ctx->size; r++)
		for (p = 0; p < ctx->nplanes; p++)
			tr_conn_connect(&ctx->peers[r].conn[p]); /* retries by itself */
	ret = pthread_create(&ctx->thread, NULL, progress_thread, ctx);
	if (ret) {
		tr_error("cannot start the progress thread: %s", strerror(ret));
		ret = -ret;
		goto err;
	}
	ctx->thread_started = 1;

	tr_wait_until(ctx, conns_settled, ctx, ctx->cfg.connect_timeout_ms + 5000);
	pthread_mutex_lock(&ctx->lock);
	ret = 0;
	for (r = 0; r < ctx->size; r++) {
		int up = 0;

		for (p = 0; r != ctx->rank && p < ctx->nplanes; p++) {
			struct tr_conn *c = &ctx->peers[r].conn[p];

			if (c->state == TR_CONN_UP) {
				up++;
			} else {
				tr_warn("rank %d plane %d: not connected (%s)", r, p,
					tr_conn_state_str(c->state));
				if (c->state == TR_CONN_DOWN)
					c->state = TR_CONN_FAILED; /* stop accepting it */
			}
		}
		if (r != ctx->rank && !up) {
			tr_error("rank %d is unreachable on every plane", r);
			ret = -ETIMEDOUT;
		}
	}
	if (!ret) {
		ctx->initialized = 1;
		/* Connections that failed at start-up are retried from now on. */
		for (r = ctx->rank + 1; r < ctx->size; r++)
			for (p = 0; p < ctx->nplanes; p++)
				if (ctx->peers[r].conn[p].state == TR_CONN_FAILED)
					ctx->peers[r].conn[p].want_reconnect = 1;
		ev_async_send(ctx->loop, &ctx->kick_w);
	}
	pthread_mutex_unlock(&ctx->lock);
	if (ret)
		goto err;
	tr_info("rank %d of %d up on %d planes", ctx->rank, ctx->size, ctx->nplanes);
	*ctx_p = ctx;
	return 0;
err:
	triad_fini(ctx);
	return ret;
}

static int all_sent(void *arg)
{
	struct triad_ctx *ctx = arg;

	for (int r = 0; r < ctx->size; r++)
		for (int p = 0; r != ctx->rank && p < ctx->nplanes; p++)
			if (!tr_conn_idle(&ctx->peers[r].conn[p]))
				return 0;
	return 1;
}

/* Tells every peer we are closing, so that it does not try to rebuild the
 * connections our exit breaks. */
static void say_bye(struct triad_ctx *ctx)
{
	pthread_mutex_lock(&ctx->lock);
	for (int r = 0; r < ctx->size; r++) {
		struct tr_msg m = { .type = TR_MSG_BYE };
		int live = 0;

		for (int p = 0; r != ctx->rank && p < ctx->nplanes; p++)
			live |= ctx->peers[r].conn[p].state == TR_CONN_UP;
		if (live && !ctx->peers[r].gone)
			tr_send_msg(ctx, r, &m, TR_FC_HIGH, NULL);
	}
	pthread_mutex_unlock(&ctx->lock);
}

void triad_fini(triad_ctx_t *ctx)
{
	int r, p;

	if (!ctx)
		return;
	if (ctx->thread_started) {
		/* Let what we sent (the last barrier release, say) reach the peers
		 * before the disconnect overtakes it. */
		/* Bounded by how long the transport takes to give up on a plane. */
		int ms = (int)((ctx->cfg.retry_count + 2) * 4.096e-3 *
			       (double)(1ull << ctx->cfg.ack_timeout)) + 1000;

		if (ctx->peers)
			say_bye(ctx);
		if (ctx->peers && tr_wait_until(ctx, all_sent, ctx, ms))
			tr_warn("closing with messages still unacknowledged");
		pthread_mutex_lock(&ctx->lock);
		ctx->closing = 1;
		pthread_mutex_unlock(&ctx->lock);
		ev_async_send(ctx->loop, &ctx->wake_w);
		pthread_join(ctx->thread, NULL);
	}
	pthread_mutex_lock(&ctx->lock);
	tr_bcast_teardown(ctx); /* requests still open complete as cancelled */
	tr_copy_teardown(ctx);
	for (r = 0; ctx->peers && r < ctx->size; r++) {
		for (p = 0; p < ctx->nplanes; p++) {
			struct tr_conn *c = &ctx->peers[r].conn[p];

			if (ctx->loop)
				ev_timer_stop(ctx->loop, &c->retry_w);
			tr_conn_destroy(c);
		}
		tr_rwins_free(&ctx->peers[r]);
	}
	tr_wins_destroy_all(ctx);
	for (p = 0; p < ctx->nplanes; p++)
		tr_plane_close(&ctx->plane[p]);
	pthread_mutex_unlock(&ctx->lock);
	if (ctx->cm_chan)
		rdma_destroy_event_channel(ctx->cm_chan);
	if (ctx->loop)
		ev_loop_destroy(ctx->loop);
	free(ctx->wins);
	free(ctx->peers);
	tr_world_free(&ctx->world);
	tr_trace_close(ctx->trace);
	pthread_mutex_destroy(&ctx->lock);
	free(ctx);
}

int triad_rank(const triad_ctx_t *ctx) { return ctx->rank; }
int triad_size(const triad_ctx_t *ctx) { return ctx->size; }
int triad_nplanes(const triad_ctx_t *ctx) { return ctx->nplanes; }

int triad_conn_stats(triad_ctx_t *ctx, int rank, int plane, struct triad_conn_stats *stats_p)
{
	struct tr_conn *c;

	if (!ctx || !stats_p || rank < 0 || rank >= ctx->size || plane < 0 ||
	    plane >= ctx->nplanes || rank == ctx->rank)
		return -EINVAL;
	pthread_mutex_lock(&ctx->lock);
	c = &ctx->peers[rank].conn[plane];
	*stats_p = c->stats;
	if (c->state == TR_CONN_UP) {
		stats_p->tx_slots_busy = (unsigned)__builtin_popcountll(c->fc_tx.bbr & c->fc_tx.mask);
		stats_p->rx_slots_busy = (unsigned)__builtin_popcountll(c->fc_rx.cfr);
		stats_p->fc_timeouts += tr_fc_tx_errors(&c->fc_tx);
		stats_p->rx_overruns += tr_fc_rx_overruns(&c->fc_rx);
	}
	stats_p->tx_queued = c->nqueued;
	pthread_mutex_unlock(&ctx->lock);
	return 0;
}

void triad_config_print(FILE *out)
{
	struct tr_config cfg;
	char err[300];

	if (tr_config_load(&cfg, tr_config_getenv, NULL, err, sizeof(err))) {
		fprintf(out, "configuration error: %s\n", err);
		tr_config_load(&cfg, NULL, NULL, err, sizeof(err));
	}
	tr_config_print_table(out, &cfg);
}
