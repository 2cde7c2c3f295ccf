/* Lanes: one peer on one plane (see lane.h).
 *
 * The lower rank connects, the higher rank accepts; the active side retries
 * (the peer may not listen yet) until TRIAD_CONNECT_TIMEOUT_MS.  A lane
 * that breaks after it was up goes DRAINING: its QP is moved to the error
 * state, every posted work request comes back flushed (and fails its
 * request or is sent again on another lane), and only then are the QP and
 * buffers released (FAILED).  Every state change goes through
 * lane_set_state(), which tells the peer (peer.c).
 *
 * With TRIAD_CONNECT=lazy a lane is connected when an operation first
 * wants its peer (tr_lane_use), by whichever rank that is; when both are
 * first at once, proto/conn's rule keeps the lower rank's attempt.  Once a
 * lane has been up, the lower rank rebuilds it as above. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "base/log.h"
#include "core/lane.h"
#include "core/progress.h"
#include "core/req.h"
#include "proto/conn.h"

static const char *const state_names[] = {
	[TR_LANE_DOWN] = "DOWN",	   [TR_LANE_CONNECTING] = "CONNECTING",
	[TR_LANE_ACCEPTING] = "ACCEPTING", [TR_LANE_UP] = "UP",
	[TR_LANE_DRAINING] = "DRAINING",   [TR_LANE_FAILED] = "FAILED",
};

const char *tr_lane_state_str(enum tr_lane_state s)
{
	return state_names[s];
}

static void retry_cb(struct ev_loop *loop, ev_timer *w, int revents);

/* A lane that failed after start-up is rebuilt (by the lower rank): always
 * when connected eagerly; lazily, once it has been up, or when its first
 * connection failed while the peer is in use on another plane (as eager
 * start-up's failed lanes are).  A lazy lane whose peer cannot be reached
 * at all is tried again by the next operation instead. */
static int rebuilt(const struct tr_lane *l)
{
	const struct triad_ctx *ctx = l->ctx;

	return ctx->cfg.connect != TR_CONNECT_LAZY || l->ever_up ||
	       ctx->lane_owner->reachable(ctx, l->peer);
}

static void lane_set_state(struct tr_lane *l, enum tr_lane_state s)
{
	struct triad_ctx *ctx = l->ctx;

	if (l->state == s)
		return;
	tr_debug("peer %d plane %d: %s -> %s", l->peer, l->plane, state_names[l->state],
		 state_names[s]);
	l->state = s;
	l->stats.up = s == TR_LANE_UP;
	if (s == TR_LANE_UP) {
		l->ever_up = 1;
		l->stats.established++;
	}
	if (s == TR_LANE_UP || s == TR_LANE_FAILED)
		l->first_use = 0; /* settled */
	if (s == TR_LANE_UP) /* the peer accepted no new one while its old end lived */
		tr_fence_lane_up(&l->fence);
	if (s == TR_LANE_DRAINING) {
		tr_fence_lane_broke(&l->fence, l->peer_closed);
		/* The flow-control engines start afresh with the next connection:
		 * keep their error counts in the totals. */
		l->stats.fc_timeouts += tr_fc_tx_errors(&l->fc_tx);
		l->stats.rx_overruns += tr_fc_rx_overruns(&l->fc_rx);
	}
	/* After start-up a broken lane is rebuilt: the side that connects asks
	 * the progress thread (which owns the timers) to retry. */
	if (s == TR_LANE_FAILED && ctx->initialized && !ctx->closing &&
	    tr_conn_rebuilds(ctx->rank, l->peer) && !l->pl->gone && rebuilt(l)) {
		l->want_reconnect = 1;
		tr_progress_kick(ctx);
	}
	ctx->lane_owner->changed(l);
}

void tr_lane_init(struct triad_ctx *ctx, struct tr_lane *l, int peer, int plane)
{
	memset(l, 0, sizeof(*l));
	l->ctx = ctx;
	l->peer = peer;
	l->plane = plane;
	l->down_status = TRIAD_S_UNREACHABLE;
	for (int p = 0; p < TR_FC_NPRIO; p++)
		tr_list_init(&l->msgq[p]);
	tr_list_init(&l->rmaq);
	ev_init(&l->retry_w, retry_cb);
	l->retry_w.data = l;
}

/* ---- resources -----------------------------------------------------------------*/
/* A broken lane's QP and message buffers, on their way to the reaper. */
struct lane_grave {
	struct tr_reap_item item;
	struct tr_qp *qp;
	struct tr_mr *mr;
	void *mem;
	int peer, plane;
};

/* A release this slow would have held the progress thread as long. */
#define SLOW_RELEASE_NS 500000000ull

static void grave_release(struct tr_reap_item *item)
{
	struct lane_grave *g = tr_container_of(item, struct lane_grave, item);
	uint64_t t0 = tr_now_ns(), took;

	tr_fab_qp_free(g->qp);
	took = tr_now_ns() - t0;
	if (took >= SLOW_RELEASE_NS)
		tr_info("peer %d plane %d: the broken connection's QP took %.1f s to release "
			"(the kernel still held its packets)", g->peer, g->plane, (double)took * 1e-9);
	tr_fab_mr_dereg(g->mr); /* after the QP, as release() does */
	free(g->mem);
	free(g);
}

/* Hands the QP of a lane that was up (nothing posted any more) and its
 * buffers to the context's reaper, which releases them without the lock:
 * the progress thread goes on at once, where releasing them here held it
 * (and the lock, and so every thread of the process and the daemon's
 * policy) for about 3 s after a link down (lib/base/reaper.h).  release()
 * does the rest, and everything when no memory is left for the grave. */
static void bury(struct tr_lane *l)
{
	struct lane_grave *g = l->qp ? malloc(sizeof(*g)) : NULL;

	if (!g)
		return;
	*g = (struct lane_grave){ .item.release = grave_release, .qp = l->qp, .mr = l->buf_mr,
				  .mem = l->bufmem, .peer = l->peer, .plane = l->plane };
	tr_fab_qp_retire(l->qp);
	if (tr_reaper_queue(&l->ctx->reaper, &g->item))
		grave_release(&g->item); /* stopped (closing), or no thread: here then */
	l->qp = NULL;
	l->buf_mr = NULL;
	l->bufmem = NULL;
}

/* Releases the QP and the buffers: only when nothing is posted. */
static void release(struct tr_lane *l)
{
	tr_fab_qp_destroy(l->qp);
	tr_fab_mr_dereg(l->buf_mr);
	free(l->bufmem);
	free(l->rx);
	free(l->tx);
	l->qp = NULL;
	l->buf_mr = NULL;
	l->bufmem = NULL;
	l->rx = l->tx = l->tx_free = NULL;
	l->rma_posted = l->req_msgs = 0;
	l->ctx->lane_parts->released(l);
}

static void established(struct tr_lane *l, const struct tr_conn_priv *peer)
{
	/* The request (passive side) or the accept (active) was checked to be
	 * of our run; the first lane up names the peer's process. */
	if (!l->pl->incarnation)
		l->pl->incarnation = peer->incarnation;
	l->peer_closed = 0;
	if (l->ctx->lane_parts->setup(l, peer)) {
		release(l);
		lane_set_state(l, TR_LANE_FAILED);
		return;
	}
	l->qpn = tr_fab_qp_num(l->qp);
	l->remote_qpn = tr_fab_qp_remote_num(l->qp);
	lane_set_state(l, TR_LANE_UP);
	if (l->ctx->lane_parts->post_recvs(l)) {
		tr_lane_fail(l, TRIAD_S_TRANSPORT);
		return;
	}
	tr_info("peer %d plane %d: connected, qp 0x%x, %u slots of %u B each way", l->peer,
		l->plane, tr_fab_qp_num(l->qp), l->peer_slots, l->peer_slot_size);
	l->ctx->lane_parts->pump(l); /* the first BSM: the peer can send nothing before it */
}

/* ---- active side --------------------------------------------------------------*/
static void attempt_failed(struct tr_lane *l, const char *why);

/* Seconds a reconnect attempt may wait for its answer. */
#define TR_LANE_CONNECT_WATCHDOG 5.0

int tr_lane_connect(struct tr_lane *l)
{
	struct triad_ctx *ctx = l->ctx;
	uint8_t priv[TR_WIRE_PRIV_LEN];
	int ret;

	if (!l->deadline)
		l->deadline = ev_now(ctx->loop) + ctx->cfg.connect_timeout_ms / 1000.0;
	l->attempts++;
	l->stats.connects++;
	tr_conn_priv_ours(l->ctx, l->plane, l->peer, priv);
	ret = tr_fab_connect(ctx->fab, l->plane, ctx->world.addr[l->peer][l->plane],
			     tr_world_port(&ctx->world, l->peer), priv, sizeof(priv), l, &l->qp);
	if (ret == -EAGAIN) {
		l->qp = NULL;
		attempt_failed(l, "rdma_resolve_addr");
		return 0;
	}
	if (ret) { /* this side cannot connect at all (logged) */
		l->qp = NULL;
		l->down_status = TRIAD_S_UNREACHABLE;
		lane_set_state(l, TR_LANE_FAILED);
		return ret;
	}
	lane_set_state(l, TR_LANE_CONNECTING);
	if (ctx->initialized) {
		/* A request sent while the path was down is retried by the
		 * connection manager for minutes; start afresh instead. */
		ev_timer_stop(ctx->loop, &l->retry_w);
		ev_timer_set(&l->retry_w, TR_LANE_CONNECT_WATCHDOG, 0);
		ev_timer_start(ctx->loop, &l->retry_w);
	}
	return 0;
}

static void retry_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
	struct tr_lane *l = w->data;
	struct triad_ctx *ctx = l->ctx;

	(void)loop;
	(void)revents;
	tr_ctx_lock_progress(ctx);
	if (l->state == TR_LANE_CONNECTING && !ctx->closing) /* the watchdog */
		attempt_failed(l, "no answer to the connection request");
	else if (l->state == TR_LANE_DOWN && !ctx->closing && l->pl->gone)
		lane_set_state(l, TR_LANE_FAILED); /* it closed while we waited to retry */
	else if (l->state == TR_LANE_DOWN && !ctx->closing)
		tr_lane_connect(l);
	tr_ctx_signal(ctx);
	pthread_mutex_unlock(&ctx->lock);
}

/* An attempt failed before the lane was up: try again or give up. */
static void attempt_failed(struct tr_lane *l, const char *why)
{
	struct triad_ctx *ctx = l->ctx;
	/* A rebuild does not hammer a plane that is down; a first use is
	 * waited for. */
	double delay = 0.05 * l->attempts + (ctx->initialized && !l->first_use ? 0.5 : 0);

	release(l);
	if (l->pl->gone) {
		/* It said BYE while this lane was being rebuilt: nobody answers
		 * any more, and nobody waits for the answer. */
		tr_debug("peer %d plane %d: it closed: not reconnecting", l->peer, l->plane);
		l->down_status = TRIAD_S_UNREACHABLE;
		lane_set_state(l, TR_LANE_FAILED);
		return;
	}
	if (ev_now(ctx->loop) + delay >= l->deadline) {
		tr_error("peer %d plane %d: cannot connect after %d attempts (%s)", l->peer,
			 l->plane, l->attempts, why);
		l->down_status = TRIAD_S_UNREACHABLE;
		lane_set_state(l, TR_LANE_FAILED);
		return;
	}
	tr_debug("peer %d plane %d: attempt %d failed (%s), retry in %.2f s", l->peer, l->plane,
		 l->attempts, why, delay > 1 ? 1.0 : delay);
	lane_set_state(l, TR_LANE_DOWN);
	ev_timer_stop(ctx->loop, &l->retry_w);
	ev_timer_set(&l->retry_w, delay > 1 ? 1.0 : delay, 0);
	ev_timer_start(ctx->loop, &l->retry_w);
}

void tr_lane_reconnect(struct tr_lane *l)
{
	struct triad_ctx *ctx = l->ctx;

	if (!l->want_reconnect || l->state != TR_LANE_FAILED || ctx->closing)
		return;
	l->want_reconnect = 0;
	l->attempts = 0;
	l->deadline = ev_now(ctx->loop) + 1e9; /* until it works or we close */
	lane_set_state(l, TR_LANE_DOWN);
	ev_timer_stop(ctx->loop, &l->retry_w);
	ev_timer_set(&l->retry_w, 0.5, 0);
	ev_timer_start(ctx->loop, &l->retry_w);
	tr_info("peer %d plane %d: reconnecting", l->peer, l->plane);
}

/* ---- connect on first use ------------------------------------------------------*/
int tr_lane_setting_up(const struct tr_lane *l)
{
	if (l->ever_up)
		return 0;
	return l->state == TR_LANE_CONNECTING || l->state == TR_LANE_ACCEPTING ||
	       (l->state == TR_LANE_DOWN && l->first_use);
}

int tr_lane_use(struct tr_lane *l)
{
	struct triad_ctx *ctx = l->ctx;

	if (l->ever_up || ctx->closing || l->pl->gone ||
	    !tr_conn_may_start(ctx->rank, l->peer, 1, l->ever_up))
		return tr_lane_setting_up(l);
	/* Never up and idle (never tried, or its last first use gave up);
	 * not one being rebuilt, whose retry timer runs. */
	if (!l->first_use && !l->want_reconnect && !ev_is_active(&l->retry_w) &&
	    (l->state == TR_LANE_DOWN || l->state == TR_LANE_FAILED)) {
		tr_debug("peer %d plane %d: first use: connecting", l->peer, l->plane);
		l->first_use = 1;
		l->want_connect = 1;
		l->attempts = 0;
		l->deadline = 0; /* a whole TRIAD_CONNECT_TIMEOUT_MS from now */
		lane_set_state(l, TR_LANE_DOWN);
		tr_progress_kick(ctx);
	}
	return tr_lane_setting_up(l);
}

void tr_lane_connect_wanted(struct tr_lane *l)
{
	struct triad_ctx *ctx = l->ctx;

	if (!l->want_connect)
		return;
	l->want_connect = 0;
	/* The peer's request came first (ACCEPTING), or we close. */
	if (l->state != TR_LANE_DOWN || !l->first_use || ctx->closing ||
	    ev_is_active(&l->retry_w))
		return;
	tr_lane_connect(l); /* a failure that cannot be retried leaves it FAILED */
}

void tr_lane_give_up(struct tr_lane *l)
{
	if (l->state == TR_LANE_DOWN)
		lane_set_state(l, TR_LANE_FAILED);
}

/* ---- passive side ----------------------------------------------------------------*/
static enum tr_conn_phase conn_phase(const struct tr_lane *l)
{
	switch (l->state) {
	case TR_LANE_CONNECTING:
		return TR_CONN_ATTEMPT;
	case TR_LANE_ACCEPTING:
		return TR_CONN_ACCEPTING;
	case TR_LANE_UP:
		return TR_CONN_UP;
	case TR_LANE_DRAINING:
		return TR_CONN_BROKEN;
	default:
		return TR_CONN_IDLE;
	}
}

static enum tr_conn_verdict request_verdict(const struct tr_lane *l)
{
	const struct triad_ctx *ctx = l->ctx;
	struct tr_conn_view v = {
		.me = ctx->rank,
		.from = l->peer,
		.phase = conn_phase(l),
		.lazy = ctx->cfg.connect == TR_CONNECT_LAZY,
		.ever_up = l->ever_up,
		.closing = ctx->closing,
	};

	return tr_conn_on_request(&v);
}

/* Whether the process on the other side of l's request or answer (d) is
 * of our run (proto/conn.h).  One of another run is refused, and said once
 * per lane and kind.  A later one answering for the peer means the
 * process we knew left without a word (it died): nothing is rebuilt for it
 * any more, as after its BYE.  An earlier one (it knows another process as
 * our rank) is left to finish: the requester retries until it is gone. */
static int same_run(struct tr_lane *l, const struct tr_conn_priv *d, const char *what)
{
	struct triad_ctx *ctx = l->ctx;
	struct tr_peer_link *p = l->pl;
	enum tr_conn_run run = tr_conn_same_run(ctx->incarnation, p->incarnation,
						 d->incarnation, d->peer_incarnation);

	if (run == TR_CONN_SAME_RUN)
		return 1;
	l->stats.other_run++;
	if (run == TR_CONN_LATER_RUN) {
		if (!p->gone)
			tr_info("peer %d plane %d: a process of a later run of this world %s as "
				"rank %d: the one we knew is gone", l->peer, l->plane, what, l->peer);
		p->gone = 1;
	} else if (l->stats.other_run == 1) {
		tr_info("peer %d plane %d: a process of an earlier run of this world %s as rank "
			"%d (it knows another process as rank %d): not our peer, waiting for it "
			"to go", l->peer, l->plane, what, l->peer, ctx->rank);
	}
	return 0;
}

/* Both ranks were first on this lane: the lower rank's request, just
 * come, wins over ours.  Nothing is posted before ESTABLISHED: the QP goes
 * at once, and its rejection, when it comes, is for a stale id. */
static void abandon_attempt(struct tr_lane *l)
{
	tr_debug("peer %d plane %d: the peer's request wins: our %s is abandoned", l->peer,
		 l->plane, l->state == TR_LANE_ACCEPTING ? "accept, never up," : "attempt");
	ev_timer_stop(l->ctx->loop, &l->retry_w);
	release(l);
	lane_set_state(l, TR_LANE_DOWN);
}

static void *conn_request(void *arg, int plane, const uint8_t *priv, size_t len,
			  uint8_t *reply, size_t *reply_len)
{
	struct triad_ctx *ctx = arg;
	enum tr_conn_verdict verdict;
	struct tr_conn_priv d;
	struct tr_lane *l;

	if (tr_conn_priv_decode(priv, len, &d)) {
		tr_warn("plane %d: connection request without triad private data: rejected", plane);
		return NULL;
	}
	if (d.size != (uint32_t)ctx->size || d.rank >= d.size || (int)d.rank == ctx->rank ||
	    d.plane != (uint32_t)plane) {
		tr_warn("plane %d: connection request from rank %u plane %u world %u does not "
			"fit this world (%d ranks, rank %d): rejected",
			plane, d.rank, d.plane, d.size, ctx->size, ctx->rank);
		return NULL;
	}
	l = ctx->lane_owner->lane(ctx, (int)d.rank, plane);
	if (!same_run(l, &d, "asks to connect")) {
		/* what we know goes back: the requester can tell */
		tr_conn_priv_ours(l->ctx, l->plane, l->peer, reply);
		*reply_len = TR_WIRE_PRIV_LEN;
		return NULL;
	}
	/* FAILED: the peer rebuilds a lane that broke (its side found out first,
	 * or ours is about to: a stale one is dropped by its peer). */
	verdict = request_verdict(l);
	tr_debug("peer %u plane %d: connection request while %s: %s", d.rank, plane,
		 state_names[l->state], tr_conn_verdict_str(verdict));
	switch (verdict) {
	case TR_CONN_REJECT_STALE:
		/* The peer connects only what it lost: ours is stale (it broke
		 * while no plane could tell us, every plane down at once, say).
		 * Drop it; the peer's next attempt finds it gone. */
		tr_info("peer %u plane %d: the peer reconnects: the connection is stale", d.rank,
			plane);
		tr_lane_fail(l, TRIAD_S_UNREACHABLE);
		return NULL;
	case TR_CONN_REJECT: /* ours goes first, or the peer retries */
		return NULL;
	case TR_CONN_ACCEPT_ABANDON:
		abandon_attempt(l);
		break;
	default:
		break;
	}
	tr_conn_priv_ours(l->ctx, l->plane, l->peer, reply);
	*reply_len = TR_WIRE_PRIV_LEN;
	return l;
}

/* An accept that failed: the peer may take the connection for up (an RTU
 * lost under a burst of set-ups leaves its side established, and its
 * sends then fail after the transport's retries).  Connected lazily, this
 * side connects itself when it waits for the lane, or when it is the
 * lower rank: its request makes the peer drop a stale side (the verdict
 * TR_CONN_REJECT_STALE) and then wins.  (Eagerly the lower rank is always
 * the one that connected, and it rebuilds what breaks.) */
static void retry_failed_accept(struct tr_lane *l)
{
	struct triad_ctx *ctx = l->ctx;

	if (ctx->cfg.connect != TR_CONNECT_LAZY || ctx->closing || l->pl->gone ||
	    !(l->first_use || tr_conn_rebuilds(ctx->rank, l->peer)))
		return;
	if (!l->first_use) {
		l->first_use = 1;
		l->attempts = 0;
		l->deadline = 0;
	}
	l->want_connect = 1;
	tr_progress_kick(ctx);
}

/* ---- rdma_cm events --------------------------------------------------------------*/
static void lane_break(struct tr_lane *l, enum triad_status why);

static void cm_event(void *arg, void *owner, struct tr_qp *qp, enum tr_cm_event ev,
		     const uint8_t *priv, size_t len, const char *why)
{
	struct triad_ctx *ctx = arg;
	struct tr_lane *l = owner;
	struct tr_conn_priv d;

	if (ev == TR_CM_ACCEPTED) {
		if (tr_conn_priv_decode(priv, len, &d)) { /* checked at the request */
			tr_fab_qp_destroy(qp);
			return;
		}
		l->qp = qp;
		l->accept_priv = d;
		lane_set_state(l, TR_LANE_ACCEPTING);
		goto out;
	}
	if (l->qp != qp) {
		tr_debug("peer %d plane %d: cm event %s for a stale QP", l->peer, l->plane,
			 tr_cm_event_str(ev));
		goto out;
	}
	tr_debug("peer %d plane %d: %s", l->peer, l->plane, tr_cm_event_str(ev));
	switch (ev) {
	case TR_CM_ESTABLISHED:
		d = l->accept_priv;
		/* The active side learns the peer's slots from the accept. */
		if (l->state == TR_LANE_CONNECTING && tr_conn_priv_decode(priv, len, &d)) {
			tr_error("peer %d plane %d: the accept carries no valid slot description",
				 l->peer, l->plane);
			attempt_failed(l, "bad accept data");
			break;
		}
		if (l->state == TR_LANE_CONNECTING && !same_run(l, &d, "accepted")) {
			attempt_failed(l, "a process of another run accepted");
			break;
		}
		if (l->state == TR_LANE_CONNECTING || l->state == TR_LANE_ACCEPTING)
			established(l, &d);
		break;
	case TR_CM_NO_LISTENER:
		/* Nothing listens where a process we were connected to did: it
		 * is gone (killed, or it exited without closing), and nothing
		 * waits for it to come back.  (Before a first connection the
		 * peer may just not have started: retried as any failure.)  A
		 * peer still connected on another plane is alive: it could not
		 * open this plane (its port was down when it started), and the
		 * attempt is retried as any failure; were it gone, that
		 * connection breaks too, and the next attempt says so. */
		if (l->state == TR_LANE_CONNECTING && l->pl->incarnation &&
		    !l->pl->gone) {
			if (!ctx->lane_owner->reachable(ctx, l->peer))
				ctx->lane_owner->gone(ctx, l->peer, "nothing listens at its address any more");
			else
				tr_info("peer %d plane %d: nothing listens there, though the peer is "
					"connected on another plane", l->peer, l->plane);
		}
		/* fall through */
	case TR_CM_FAILED:
		if (l->state == TR_LANE_CONNECTING) {
			/* A rejection says who rejected: one of another run is
			 * not our peer (a later one: ours is gone). */
			if (len && !tr_conn_priv_decode(priv, len, &d))
				same_run(l, &d, "refused us");
			attempt_failed(l, why);
		} else if (l->state == TR_LANE_ACCEPTING) {
			tr_info("peer %d plane %d: the accepted connection failed (%s)", l->peer,
				l->plane, why);
			release(l);
			lane_set_state(l, TR_LANE_DOWN);
			retry_failed_accept(l);
		}
		break;
	case TR_CM_DISCONNECTED:
		/* The peer is closing, or it died and its kernel said so.  What it
		 * sent before (the release of the barrier it just left, say) sits
		 * in the CQs: handle it before the disconnect. */
		tr_progress(ctx);
		if (l->qp == qp && l->state == TR_LANE_UP) {
			tr_info("peer %d plane %d: disconnected by the peer", l->peer, l->plane);
			l->peer_closed = 1;
			lane_break(l, TRIAD_S_UNREACHABLE);
		}
		break;
	case TR_CM_DEVICE_REMOVED:
		tr_lane_fail(l, TRIAD_S_UNREACHABLE);
		break;
	default:
		break;
	}
out:
	tr_ctx_signal(ctx);
}

/* ---- failure and drain ---------------------------------------------------------------*/
static void orphan_free(struct tr_orphan *o)
{
	tr_list_del(&o->link);
	tr_fab_mr_dereg(o->mr);
	free(o->bufmem);
	free(o->rx);
	free(o);
}

void tr_lane_orphans_free(struct tr_list *orphans)
{
	while (!tr_list_empty(orphans))
		orphan_free(tr_list_first(orphans, struct tr_orphan, link));
}

void tr_lane_orphan_put(struct tr_orphan *o)
{
	if (--o->held == 0)
		orphan_free(o);
}

/* Handlers hold some of l's receive buffers (an active message kept, or
 * one waiting for its turn in strict order): they move out of the lane,
 * which can then be rebuilt without waiting for them. */
static int orphan(struct tr_lane *l)
{
	struct tr_orphan *o = malloc(sizeof(*o));

	if (!o)
		return -ENOMEM;
	*o = (struct tr_orphan){ .bufmem = l->bufmem, .mr = l->buf_mr, .rx = l->rx,
				 .held = l->rx_held };
	for (int i = 0; i < l->nrx; i++)
		l->rx[i].orphan = o;
	tr_list_add_tail(&l->ctx->orphans, &o->link);
	l->bufmem = NULL;
	l->buf_mr = NULL;
	l->rx = NULL;
	l->rx_held = 0;
	return 0;
}

void tr_lane_drained(struct tr_lane *l)
{
	/* Every send came back: what waits for a slot can overtake nothing
	 * any more, and goes now; flushed receives do not hold it up (a stream
	 * stalled behind them under load, chaos seed 2002). */
	l->ctx->lane_parts->give_back(l);
	if (l->rq_posted)
		return;
	/* At close, buffers a handler kept are taken back. */
	if (l->rx_held && !l->ctx->closing && orphan(l))
		return; /* no memory: the lane waits for them */
	bury(l);
	release(l);
	lane_set_state(l, TR_LANE_FAILED);
}

static void lane_break(struct tr_lane *l, enum triad_status why)
{
	l->down_status = why;
	l->bsm_linger = 0;
	l->drain_ticks = 0;
	/* Error state flushes everything posted, and the peer is told. */
	tr_fab_qp_break(l->qp);
	lane_set_state(l, TR_LANE_DRAINING);
	l->ctx->lane_parts->broke(l);
	/* What waits for a slot goes elsewhere once the lane is drained. */
	tr_lane_check_drained(l);
}

void tr_lane_fail(struct tr_lane *l, enum triad_status why)
{
	if (l->state != TR_LANE_UP)
		return;
	tr_warn("peer %d plane %d: connection broken (%s)", l->peer, l->plane,
		triad_status_str(why));
	lane_break(l, why);
}

unsigned tr_lane_unsent(const struct tr_lane *l)
{
	if (l->state != TR_LANE_UP)
		return 0;
	return (unsigned)(l->sq_posted - l->rma_posted - l->bsm_inflight) + l->nqueued;
}

/* Its plane's local port went down: break l now (what is posted comes
 * back flushed and moves to a live plane) rather than after the RC
 * transport's retries; it is rebuilt once the port is back. */
static void port_down(struct tr_lane *l)
{
	if (l->state == TR_LANE_UP)
		lane_break(l, TRIAD_S_PLANE_DOWN);
}

void tr_lane_cancel(struct tr_lane *l)
{
	if (l->state == TR_LANE_UP) {
		lane_break(l, TRIAD_S_CANCELLED);
	} else if (l->state == TR_LANE_CONNECTING || l->state == TR_LANE_ACCEPTING) {
		release(l); /* nothing is posted before ESTABLISHED */
		lane_set_state(l, TR_LANE_FAILED);
	}
}

int tr_lane_send_wanted(const struct tr_lane *l)
{
	/* Unsignalled light puts alone raise no completion to wait for; a
	 * fence that waits for room does. */
	return l->sq_posted &&
	       (l->rma_posted > l->lp_unsig || l->req_msgs || l->nqueued || !l->tx_free ||
		l->bsm_linger || l->fence_wanted || l->state == TR_LANE_DRAINING ||
		(l->bsm_inflight && tr_fc_rx_bsm_due(&l->fc_rx)));
}

void tr_lane_destroy(struct tr_lane *l)
{
	struct triad_ctx *ctx = l->ctx;

	if (ctx->loop)
		ev_timer_stop(ctx->loop, &l->retry_w);
	release(l);
	lane_set_state(l, TR_LANE_FAILED);
}

/* ---- for a diagnosis -----------------------------------------------------------------*/
int tr_msg_carries(const void *data, int len, unsigned prio, uint32_t seq)
{
	unsigned type;
	struct tr_msg m;

	if (len < TR_WIRE_HDR_LEN || tr_wire_prio(data) != prio)
		return 0;
	type = tr_wire_type(data);
	if (type == TR_MSG_BSM)
		return 0;
	if (type != TR_MSG_SEQ_SKIP)
		return tr_wire_seq(data) == seq;
	if (tr_msg_decode(data, (size_t)len, &m))
		return 0;
	for (unsigned i = 0; i < m.u.seq_skip.count; i++)
		if (m.u.seq_skip.seq[i] == seq)
			return 2;
	return 0;
}

/* ---- counters: their one writer ----------------------------------------------------*/
void tr_lane_count(struct tr_lane *l, const struct triad_req *req, int done)
{
	if (!done) {
		if (req->kind == TR_REQ_PUT)
			l->stats.puts++;
		else if (req->kind == TR_REQ_GET)
			l->stats.gets++;
		return;
	}
	if (req->kind == TR_REQ_CHUNK) /* a copy's chunk is sent data too */
		l->stats.copy_bytes += req->len;
	if (req->kind == TR_REQ_PUT || req->kind == TR_REQ_CHUNK)
		l->stats.tx_bytes += req->len;
	else if (req->kind == TR_REQ_GET)
		l->stats.rx_bytes += req->len;
}

void tr_lane_count_drop(struct tr_lane *l, int am_unknown)
{
	if (am_unknown)
		l->stats.am_unknown++;
	else
		l->stats.errors++;
}

/* A broken lane waits for everything it posted to come back flushed
 * before it is released and rebuilt.  rxe flushes both queues when the QP
 * enters the error state; a work request posted from user space just after
 * (a receive reposted while the lane was still up for us, the fence behind
 * light puts) may stay posted until the kernel looks at the queue again,
 * which nothing does on a dead connection: the lane would stay DRAINING for
 * good, never rebuilt, and the peer's side would refuse every new request
 * meanwhile.  From two timer periods after the break, every period, the QP
 * is moved to the error state again, which flushes what is left. */
void tr_lane_drain_tick(struct tr_lane *l)
{
	if ((!l->sq_posted && !l->rq_posted) || ++l->drain_ticks < 2)
		return;
	if (l->drain_ticks == 2)
		tr_warn("peer %d plane %d: %d send(s) and %d receive(s) of the broken connection "
			"not flushed after a timer period: its QP is moved to the error state "
			"again", l->peer, l->plane, l->sq_posted, l->rq_posted);
	else if (l->drain_ticks == 8)
		tr_error("peer %d plane %d: %d send(s) and %d receive(s) of the broken "
			 "connection still not flushed after %d timer periods: the device does "
			 "not flush them, and the connection is not rebuilt while they wait",
			 l->peer, l->plane, l->sq_posted, l->rq_posted, l->drain_ticks);
	tr_fab_qp_reflush(l->qp);
}

/* ---- what the fabric reports -------------------------------------------------------*/
void tr_lane_on_port(void *arg, int plane, int up)
{
	struct triad_ctx *ctx = arg;

	if (!up && ctx->peers && ctx->initialized && !ctx->closing) {
		tr_info("plane %d: port down: its connections move to the other planes", plane);
		for (int r = 0; r < ctx->size; r++)
			if (r != ctx->rank)
				port_down(ctx->lane_owner->lane(ctx, r, plane));
	}
	tr_ctx_signal(ctx);
}

void tr_conn_priv_ours(const struct triad_ctx *ctx, int plane, int peer,
		       uint8_t buf[TR_WIRE_PRIV_LEN])
{
	const struct tr_conn_priv d = {
		.plane = (uint32_t)plane,
		.rank = (uint32_t)ctx->rank,
		.size = (uint32_t)ctx->size,
		.slots = (uint32_t)ctx->cfg.slots,
		.slot_size = (uint32_t)ctx->cfg.slot_size,
		.key = ctx->job_key,
		.incarnation = ctx->incarnation,
		.peer_incarnation = peer >= 0 ? ctx->lane_owner->lane(ctx, peer, plane)->pl->incarnation : 0,
		.flags = tr_ctx_takes_bare(ctx) ? TR_CONN_F_BARE_AM : 0,
	};

	tr_conn_priv_encode(buf, &d);
}

void *tr_lane_on_conn_request(void *arg, int plane, const uint8_t *priv, size_t len,
			      uint8_t *reply, size_t *reply_len)
{
	struct triad_ctx *ctx = arg;
	struct tr_conn_priv d;
	int ret = tr_conn_priv_decode(priv, len, &d);

	if (ret == -EPROTONOSUPPORT) {
		tr_warn("plane %d: connection request from a triad speaking connection version %u, "
			"this one %d: rejected (every rank must run the same triad)",
			plane, tr_conn_priv_version(priv, len), TR_WIRE_PRIV_VERSION);
		return NULL;
	}
	if (!ret && d.key != ctx->job_key) {
		ctx->key_rejects[plane]++;
		tr_warn("plane %d: connection request from rank %u of another job (key %016llx, "
			"ours %016llx): rejected", plane, d.rank, (unsigned long long)d.key,
			(unsigned long long)ctx->job_key);
		/* Our key goes with the rejection: the other side stops trying. */
		tr_conn_priv_ours(ctx, plane, -1, reply);
		*reply_len = TR_WIRE_PRIV_LEN;
		return NULL;
	}
	return conn_request(arg, plane, priv, len, reply, reply_len);
}

/* Active side: a rejection that carries another job's key means the
 * address belongs to another job; triad_init gives up with -EACCES
 * instead of retrying until its timeout. */
void tr_lane_on_cm(void *arg, void *owner, struct tr_qp *qp, enum tr_cm_event ev,
		   const uint8_t *priv, size_t len, const char *why)
{
	struct triad_ctx *ctx = arg;
	const struct tr_lane *l = owner;
	struct tr_conn_priv d;

	if (ev == TR_CM_FAILED && len && !tr_conn_priv_decode(priv, len, &d) &&
	    d.key != ctx->job_key) {
		if (!ctx->key_refused++)
			tr_error("rank %d plane %d: its address belongs to another job (key "
				 "%016llx, ours %016llx): refused", l->peer, l->plane,
				 (unsigned long long)d.key, (unsigned long long)ctx->job_key);
		tr_ctx_signal(ctx);
	}
	cm_event(arg, owner, qp, ev, priv, len, why);
}
