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
#include "core/onesided.h"
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

struct queued_msg {
	struct tr_list link;
	struct queued_msg *next_free; /* in the context's cache of nodes */
	int len;
	int movable; /* its plane was a free choice: another lane may take it */
	int told;    /* its long wait was reported (tr_lane_fc_tick) */
	uint64_t tick; /* queued during this flow-control period (ctx->fc_ticks) */
	struct triad_req *req;
	char data[];
};

#define NO_SLOT TR_WIRE_NO_SLOT

/* ---- queued messages ------------------------------------------------------------------*/
/* A message that waits for a slot is copied into a queue node.  Nodes of
 * one slot's size are kept for the next (at most TR_QCACHE of them per
 * context): a sender that streams into full slots queues nearly every
 * message, and a node of a slot's size (8 KiB by default) is beyond
 * malloc's per-thread cache. */
#define TR_QCACHE 64

static size_t qnode_cap(const struct triad_ctx *ctx)
{
	return ctx->cfg.slot_size;
}

static struct queued_msg *qnode_get(struct triad_ctx *ctx, int len)
{
	struct queued_msg *q = ctx->qcache;

	if ((size_t)len > qnode_cap(ctx))
		return malloc(sizeof(*q) + (size_t)len);
	if (q) {
		ctx->qcache = q->next_free;
		ctx->nqcache--;
		return q;
	}
	return malloc(sizeof(*q) + qnode_cap(ctx));
}

static void qnode_put(struct triad_ctx *ctx, struct queued_msg *q)
{
	if ((size_t)q->len > qnode_cap(ctx) || ctx->nqcache >= TR_QCACHE) {
		free(q);
		return;
	}
	q->next_free = ctx->qcache;
	ctx->qcache = q;
	ctx->nqcache++;
}

void tr_lane_qcache_free(struct triad_ctx *ctx)
{
	while (ctx->qcache) {
		struct queued_msg *q = ctx->qcache;

		ctx->qcache = q->next_free;
		free(q);
	}
	ctx->nqcache = 0;
}

static void retry_cb(struct ev_loop *loop, ev_timer *w, int revents);
static void pump(struct tr_lane *l);

/* A lane that failed after start-up is rebuilt (by the lower rank): always
 * when connected eagerly; lazily, once it has been up, or when its first
 * connection failed while the peer is in use on another plane (as eager
 * start-up's failed lanes are).  A lazy lane whose peer cannot be reached
 * at all is tried again by the next operation instead. */
static int rebuilt(const struct tr_lane *l)
{
	const struct triad_ctx *ctx = l->ctx;

	return ctx->cfg.connect != TR_CONNECT_LAZY || l->ever_up ||
	       tr_peer_reachable(ctx, l->peer);
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
	    tr_conn_rebuilds(ctx->rank, l->peer) && !ctx->peers[l->peer].gone && rebuilt(l)) {
		l->want_reconnect = 1;
		tr_progress_kick(ctx);
	}
	tr_peer_lane_changed(l);
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
/* The free slots each priority needs (TRIAD_FC_NEED_*), for nslots slots:
 * with fewer slots than a threshold, every priority may use all of them. */
static void fc_need(const struct tr_config *cfg, unsigned nslots, unsigned need[TR_FC_NPRIO])
{
	need[TR_FC_HIGH] = 1;
	need[TR_FC_MEDIUM] = (unsigned)cfg->need_medium;
	need[TR_FC_LOW] = (unsigned)cfg->need_low;
	for (int p = 0; p < TR_FC_NPRIO; p++)
		if (need[p] > nslots)
			need[p] = nslots;
}

/* At ESTABLISHED, once the peer's slots are known: message buffers (ours
 * for the peer's messages, the peer's size for ours) and flow control. */
static int setup_msgs(struct tr_lane *l, const struct tr_conn_priv *peer)
{
	struct triad_ctx *ctx = l->ctx;
	size_t rsz = ctx->cfg.slot_size, tsz = peer->slot_size, total;
	unsigned need[TR_FC_NPRIO];
	int i;

	fc_need(&ctx->cfg, peer->slots, need);		       /* the peer's slots, for our sends */
	fc_need(&ctx->cfg, (unsigned)ctx->cfg.slots, l->rx_need); /* ours, for its sends */

	l->peer_slots = peer->slots;
	l->peer_slot_size = peer->slot_size;
	l->peer_bare = !!(peer->flags & TR_CONN_F_BARE_AM);
	l->nrx = ctx->cfg.slots + TR_LANE_EXTRA_BUFS;
	l->ntx = (int)peer->slots + TR_LANE_EXTRA_BUFS;
	if (l->ntx > ctx->cfg.sq_depth / 2) /* the rest of the send queue is for put/get */
		l->ntx = ctx->cfg.sq_depth / 2;
	l->sq_avail = ctx->cfg.sq_depth;
	if (tr_fc_tx_init(&l->fc_tx, peer->slots, need) ||
	    tr_fc_rx_init(&l->fc_rx, (unsigned)ctx->cfg.slots)) {
		tr_error("peer %d plane %d: flow-control thresholds %u/%u/%u do not fit %u slots",
			 l->peer, l->plane, need[0], need[1], need[2], peer->slots);
		return -EINVAL;
	}
	total = (size_t)l->nrx * rsz + (size_t)l->ntx * tsz;
	if (posix_memalign((void **)&l->bufmem, 4096, total))
		l->bufmem = NULL;
	l->rx = calloc((size_t)l->nrx, sizeof(*l->rx));
	l->tx = calloc((size_t)l->ntx, sizeof(*l->tx));
	if (!l->bufmem || !l->rx || !l->tx) {
		tr_error("peer %d plane %d: no memory for message buffers", l->peer, l->plane);
		return -ENOMEM;
	}
	l->buf_mr = tr_fab_mr_reg(ctx->fab, l->plane, l->bufmem, total, TR_MR_LOCAL_WRITE);
	if (!l->buf_mr)
		return -ENOMEM;
	for (i = 0; i < l->nrx; i++) {
		l->rx[i].lane = l;
		l->rx[i].data = l->bufmem + (size_t)i * rsz;
	}
	l->tx_free = NULL;
	for (i = l->ntx - 1; i >= 0; i--) {
		l->tx[i].lane = l;
		l->tx[i].data = l->bufmem + (size_t)l->nrx * rsz + (size_t)i * tsz;
		l->tx[i].next_free = l->tx_free;
		l->tx_free = &l->tx[i];
	}
	return 0;
}

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
	tr_lane_lputs_cancel(l);
	for (int p = 0; p < TR_FC_NPRIO; p++) {
		while (!tr_list_empty(&l->msgq[p])) {
			struct queued_msg *q = tr_list_first(&l->msgq[p], struct queued_msg, link);

			tr_list_del(&q->link);
			qnode_put(l->ctx, q);
		}
	}
	l->nqueued = 0;
}

static int post_recv(struct tr_buf *b)
{
	struct tr_lane *l = b->lane;
	int ret = tr_fab_post_recv(l->qp, b->data, (uint32_t)l->ctx->cfg.slot_size, l->buf_mr,
				   (uintptr_t)b | TR_CK_RECV);

	if (!ret)
		l->rq_posted++;
	return ret;
}

static void established(struct tr_lane *l, const struct tr_conn_priv *peer)
{
	struct tr_peer *p = &l->ctx->peers[l->peer];

	/* The request (passive side) or the accept (active) was checked to be
	 * of our run; the first lane up names the peer's process. */
	if (!p->incarnation)
		p->incarnation = peer->incarnation;
	l->peer_closed = 0;
	if (setup_msgs(l, peer)) {
		release(l);
		lane_set_state(l, TR_LANE_FAILED);
		return;
	}
	l->qpn = tr_fab_qp_num(l->qp);
	l->remote_qpn = tr_fab_qp_remote_num(l->qp);
	lane_set_state(l, TR_LANE_UP);
	for (int i = 0; i < l->nrx; i++) {
		if (post_recv(&l->rx[i])) {
			tr_lane_fail(l, TRIAD_S_TRANSPORT);
			return;
		}
	}
	tr_info("peer %d plane %d: connected, qp 0x%x, %u slots of %u B each way", l->peer,
		l->plane, tr_fab_qp_num(l->qp), l->peer_slots, l->peer_slot_size);
	pump(l); /* the first BSM: the peer can send nothing before it */
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
	else if (l->state == TR_LANE_DOWN && !ctx->closing && ctx->peers[l->peer].gone)
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
	if (ctx->peers[l->peer].gone) {
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

	if (l->ever_up || ctx->closing || ctx->peers[l->peer].gone ||
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
	struct tr_peer *p = &ctx->peers[l->peer];
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

void *tr_lane_on_conn_request(void *arg, int plane, const uint8_t *priv, size_t len,
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
	l = &ctx->peers[d.rank].lane[plane];
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

	if (ctx->cfg.connect != TR_CONNECT_LAZY || ctx->closing || ctx->peers[l->peer].gone ||
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

void tr_lane_on_cm(void *arg, void *owner, struct tr_qp *qp, enum tr_cm_event ev,
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
		 * peer may just not have started: retried as any failure.) */
		if (l->state == TR_LANE_CONNECTING && ctx->peers[l->peer].incarnation &&
		    !ctx->peers[l->peer].gone)
			tr_peer_gone(ctx, l->peer, "nothing listens at its address any more");
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

/* A broken lane's messages still waiting for a slot go to another lane,
 * once everything it had posted has come back: a message given back
 * earlier could overtake what was posted before it, and a copy's COPY_DATA
 * the chunks it follows, still in flight here (the destination would
 * answer before its data is written).  So they follow the posted
 * messages and the chunks done again elsewhere (tr_peer_msg_lost). */
static void give_back_queued(struct tr_lane *l)
{
	for (int p = 0; p < TR_FC_NPRIO; p++) {
		while (!tr_list_empty(&l->msgq[p])) {
			struct queued_msg *q = tr_list_first(&l->msgq[p], struct queued_msg, link);

			tr_list_del(&q->link);
			l->nqueued--;
			tr_peer_msg_lost(l, q->data, q->len, (unsigned)p, q->req);
			qnode_put(l->ctx, q);
		}
	}
}

void tr_lane_drained(struct tr_lane *l)
{
	/* Every send came back: what waits for a slot can overtake nothing
	 * any more, and goes now; flushed receives do not hold it up (a stream
	 * stalled behind them under load, chaos seed 2002). */
	give_back_queued(l);
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
	tr_lane_lputs_broken(l);
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

void tr_lane_port_down(struct tr_lane *l)
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

/* ---- sending ------------------------------------------------------------------------*/
/* Posts b's encoded message of len bytes, whole, or bare (imm not NULL):
 * its payload only, the headers in the immediate.  b keeps the whole
 * encoding either way: a message lost with its lane is sent again from it. */
static int post_send(struct tr_lane *l, struct tr_buf *b, int len, const uint32_t *imm)
{
	int skip = imm ? TR_WIRE_BARE_SKIP : 0, ret;

	TR_EV(l->ctx, "post_send", l->peer, len - skip);
	ret = tr_fab_post_send(l->qp, b->data + skip, (uint32_t)(len - skip), l->buf_mr,
			       (uintptr_t)b | TR_CK_SEND, imm);
	if (ret)
		return ret;
	b->len = len;
	l->tx_free = b->next_free;
	l->sq_avail--;
	l->sq_posted++;
	l->stats.tx_msgs++;
	l->stats.tx_bytes += (uint64_t)(len - skip);
	return 0;
}

/* Posts one encoded message into the peer's slot, with our buffer status
 * for the reverse direction in its header (always: a repeat is harmless
 * and repairs nothing less than a standalone BSM would); or, when the
 * status has nothing new and the peer takes them, an active message bare
 * (proto/wire.h), which carries none. */
static int post_msg(struct tr_lane *l, const void *data, int len, int slot, unsigned prio,
		    struct triad_req *req)
{
	struct tr_buf *b = l->tx_free;
	uint64_t n, cf;
	uint32_t imm;
	bool due, bare;
	int ret;

	if (data != b->data) /* else encoded in place (tr_lane_msg_buf) */
		memcpy(b->data, data, (size_t)len);
	due = tr_fc_rx_bsm_due(&l->fc_rx); /* does the status say something new? */
	tr_fc_rx_bsm(&l->fc_rx, &n, &cf);
	tr_wire_set_link(b->data, (uint8_t)slot, (uint8_t)prio, 1, n, cf);
	b->slot = (uint8_t)slot;
	b->prio = (uint8_t)prio;
	b->req = req;
	bare = l->peer_bare && !due && tr_wire_bare_imm(b->data, (size_t)len, &imm);
	if (req)
		tr_progress_want_send(l->ctx, l->plane);
	ret = post_send(l, b, len, bare ? &imm : NULL);
	if (ret)
		return ret;
	l->stats.am_bare_tx += bare;
	if (req)
		l->req_msgs++;
	tr_fc_tx_sent(&l->fc_tx, (unsigned)slot);
	if (due)
		l->stats.bsm_piggyback++;
	TR_EV(l->ctx, "tx_msg", l->peer, tr_wire_type(data));
	return 0;
}

static int post_bsm(struct tr_lane *l)
{
	struct tr_msg m = { .type = TR_MSG_BSM, .slot = NO_SLOT, .has_bsm = 1 };
	struct tr_buf *b = l->tx_free;
	int len, ret;

	tr_fc_rx_bsm(&l->fc_rx, &m.bsm_n, &m.bsm_c);
	len = tr_msg_encode(&m, b->data, l->peer_slot_size);
	if (len < 0)
		return len;
	b->slot = NO_SLOT;
	b->req = NULL;
	ret = post_send(l, b, len, NULL);
	if (ret)
		return ret;
	l->bsm_inflight++;
	l->stats.bsm_standalone++;
	TR_EV(l->ctx, "tx_bsm", l->peer, 0);
	return 0;
}

/* A standalone BSM when proto/fc's decision says so (urgent, two thirds
 * of the slots unreported, or a linger that ran out: force); a lingering
 * one waits up to TRIAD_BSM_LINGER_US to cover more slots, so a streaming
 * sender costs a BSM per several messages, not one each. */
static void pump_bsm(struct tr_lane *l, int force)
{
	struct tr_fc_bsm_in in = {
		.inflight = (unsigned)l->bsm_inflight,
		.room = l->tx_free && l->sq_avail,
		.force = force,
	};

	switch (tr_fc_rx_bsm_decide(&l->fc_rx, l->rx_need, &in)) {
	case TR_FC_BSM_WAIT_ROOM:
	case TR_FC_BSM_BUSY:
		/* A completion frees room, or the BSM in flight whose completion
		 * lets the next one go: somebody must poll for it.  (With send
		 * events off and nothing else on the way, nobody did: the sender
		 * waited for the status for minutes, am-backpressure in CI.) */
		tr_progress_want_send(l->ctx, l->plane);
		break;
	case TR_FC_BSM_LINGER:
		if (!l->bsm_linger) {
			l->bsm_linger = 1;
			tr_progress_linger(l->ctx);
		}
		break;
	case TR_FC_BSM_SEND:
		l->bsm_linger = 0;
		if (post_bsm(l))
			tr_lane_fail(l, TRIAD_S_TRANSPORT);
		break;
	default: /* nothing new, or one in flight: its completion pumps again */
		break;
	}
}

/* Sends the queued messages flow control allows, by priority (a priority
 * that must wait blocks the lower ones, which need more free slots).
 * -1 when the lane failed. */
static int pump_msgs(struct tr_lane *l)
{
	for (unsigned p = 0; p < TR_FC_NPRIO; p++) {
		while (!tr_list_empty(&l->msgq[p])) {
			struct queued_msg *q = tr_list_first(&l->msgq[p], struct queued_msg, link);
			int slot;

			if (!l->tx_free || !l->sq_avail)
				return 0; /* pump_bsm waits for room too */
			if (!tr_peer_seq_ok(l, q->data)) {
				/* Too far ahead of what the peer has: the completion
				 * that moves the window pumps it again. */
				l->ctx->peers[l->peer].seq_blocked = 1;
				break;
			}
			slot = tr_fc_tx_pick(&l->fc_tx, p);
			if (slot < 0)
				return 0;
			if (post_msg(l, q->data, q->len, slot, p, q->req)) {
				tr_lane_fail(l, TRIAD_S_TRANSPORT);
				return -1;
			}
			tr_list_del(&q->link);
			l->nqueued--;
			qnode_put(l->ctx, q);
		}
	}
	return 0;
}

/* What the lane can send now: queued messages, then a standalone BSM if
 * our status changed and nothing carried it.  Runs after every completion,
 * so what has nothing to do costs a test each. */
static void pump(struct tr_lane *l)
{
	if (l->state != TR_LANE_UP)
		return;
	if (l->fence_wanted)
		tr_lane_lput_fence(l);
	if (l->nqueued && pump_msgs(l))
		return;
	if (tr_fc_rx_bsm_due(&l->fc_rx)) /* else proto/fc would decide: nothing new */
		pump_bsm(l, 0);
	if (l->ctx->choice.rules) /* a pass: waiting messages may go elsewhere now */
		tr_peer_redecide(l->ctx, &l->ctx->peers[l->peer]);
}

void tr_lane_bsm_flush(struct tr_lane *l)
{
	if (l->state != TR_LANE_UP || !l->bsm_linger)
		return;
	l->bsm_linger = 0;
	pump_bsm(l, 1);
}

/* Where a message of prio goes in l's queue: a priority's queue is kept in
 * order of sequence number, so that its head is the lowest number waiting
 * on the lane.  The sender's window (tr_peer_seq_ok) then always lets the
 * oldest message of the stream go, whatever put it here: a resend from a
 * broken lane, a rejoin or a first connection, a later number sent first.
 * (A queue in arrival order once held a resent message beyond the window
 * ahead of an older one, and the stream stopped for good.)  A SEQ_SKIP,
 * which carries no number of its own, only older ones, goes first.
 * Before the returned node; new messages, the highest numbers, go last at
 * the cost of one compare. */
static struct tr_list *queue_place(struct tr_lane *l, unsigned prio, const void *data)
{
	struct tr_list *head = &l->msgq[prio], *at;
	uint32_t seq = tr_wire_seq(data);

	if (tr_wire_type(data) == TR_MSG_SEQ_SKIP) {
		for (at = head->next; at != head; at = at->next)
			if (tr_wire_type(tr_container_of(at, struct queued_msg, link)->data) !=
			    TR_MSG_SEQ_SKIP)
				break;
		return at;
	}
	for (at = head; at->prev != head; at = at->prev) {
		const void *prev = tr_container_of(at->prev, struct queued_msg, link)->data;

		if (tr_wire_type(prev) == TR_MSG_SEQ_SKIP || !tr_seq_before(seq, tr_wire_seq(prev)))
			break;
	}
	return at;
}

int tr_lane_send(struct tr_lane *l, const void *data, int len, unsigned prio,
		 struct triad_req *req, int movable)
{
	struct queued_msg *q;
	int slot;

	if (l->state != TR_LANE_UP)
		return -ENOTCONN;
	if (len < TR_WIRE_HDR_LEN || prio >= TR_FC_NPRIO)
		return -EINVAL;
	if ((unsigned)len > l->peer_slot_size)
		return -EMSGSIZE;
	/* Straight out when nothing of this priority waits and a slot is free. */
	if (tr_list_empty(&l->msgq[prio]) && l->tx_free && l->sq_avail &&
	    tr_peer_seq_ok(l, data) && (slot = tr_fc_tx_pick(&l->fc_tx, prio)) >= 0) {
		if (post_msg(l, data, len, slot, prio, req)) {
			tr_lane_fail(l, TRIAD_S_TRANSPORT);
			return -EIO;
		}
		return 0;
	}
	q = qnode_get(l->ctx, len);
	if (!q)
		return -ENOMEM;
	memcpy(q->data, data, (size_t)len);
	q->len = len;
	q->req = req;
	q->movable = movable;
	q->told = 0;
	q->tick = l->ctx->fc_ticks; /* no clock read on the queueing path */
	tr_list_add_tail(queue_place(l, prio, data), &q->link);
	l->nqueued++;
	if (!l->tx_free || !l->sq_avail)
		tr_progress_want_send(l->ctx, l->plane); /* waits for send room */
	pump(l);
	return 0;
}

void *tr_lane_msg_buf(struct tr_lane *l)
{
	return l->state == TR_LANE_UP && l->tx_free ? l->tx_free->data : NULL;
}

int tr_lane_room(const struct tr_lane *l, unsigned prio)
{
	return l->state == TR_LANE_UP && l->tx_free && l->sq_avail &&
	       tr_list_empty(&l->msgq[prio]) && tr_fc_tx_pick(&l->fc_tx, prio) >= 0;
}

int tr_lane_movable(const struct tr_lane *l, unsigned prio)
{
	const struct queued_msg *q;

	if (l->state != TR_LANE_UP || tr_list_empty(&l->msgq[prio]))
		return 0;
	q = tr_list_first(&l->msgq[prio], struct queued_msg, link);
	return q->movable && tr_peer_seq_ok(l, q->data);
}

int tr_lane_move(struct tr_lane *from, struct tr_lane *to, unsigned prio)
{
	struct queued_msg *q;
	int slot;

	if (!tr_lane_movable(from, prio) || !tr_lane_room(to, prio))
		return -EAGAIN;
	q = tr_list_first(&from->msgq[prio], struct queued_msg, link);
	slot = tr_fc_tx_pick(&to->fc_tx, prio);
	if (post_msg(to, q->data, q->len, slot, prio, q->req)) {
		tr_lane_fail(to, TRIAD_S_TRANSPORT);
		return -EIO; /* still queued on from */
	}
	tr_list_del(&q->link);
	from->nqueued--;
	to->stats.detours++;
	qnode_put(from->ctx, q);
	return 0;
}

/* ---- completions and arrivals -----------------------------------------------------------*/
static void repost(struct tr_buf *b)
{
	struct tr_lane *l = b->lane;

	if (l->state == TR_LANE_UP && post_recv(b))
		tr_lane_fail(l, TRIAD_S_TRANSPORT);
}

void tr_lane_release(struct tr_buf *b)
{
	struct tr_lane *l = b->lane;

	if (b->orphan) { /* its lane was rebuilt meanwhile */
		if (--b->orphan->held == 0)
			orphan_free(b->orphan);
		return;
	}
	l->rx_held--;
	tr_fc_rx_drain(&l->fc_rx, b->slot);
	repost(b);
	pump(l);
	tr_lane_check_drained(l);
}

/* A bare active message (proto/wire.h): only from a peer we asked for
 * them, and no longer than an active message's payload may be. */
static int decode_bare(const struct tr_lane *l, const struct tr_buf *b,
		       const struct tr_fab_wc *wc, struct tr_msg *m)
{
	const struct triad_ctx *ctx = l->ctx;
	const struct tr_peer *p = &ctx->peers[l->peer];
	uint32_t next[TR_WIRE_PRIOS];

	if (!tr_ctx_takes_bare(ctx) || wc->len > (uint32_t)ctx->cfg.slot_size - TR_WIRE_BARE_SKIP)
		return -EPROTO;
	for (int i = 0; i < TR_WIRE_PRIOS; i++)
		next[i] = tr_stream_rx_next(&p->srx[i]);
	return tr_msg_decode_bare(wc->imm, b->data, wc->len, next, m);
}

static void on_recv(struct tr_buf *b, const struct tr_fab_wc *wc)
{
	struct tr_lane *l = b->lane;
	struct tr_msg m;
	int ret;

	l->rq_posted--;
	if (wc->status != TRIAD_S_OK) {
		if (!wc->flushed) {
			tr_warn("peer %d plane %d: receive failed: %s", l->peer, l->plane, wc->why);
			tr_lane_fail(l, wc->status);
		}
		tr_lane_flushed_while_up(l, wc);
		tr_lane_check_drained(l);
		return;
	}
	l->stats.rx_msgs++;
	l->ctx->rx_msgs++;
	l->stats.rx_bytes += wc->len;
	if (wc->has_imm) {
		ret = decode_bare(l, b, wc, &m);
		l->stats.am_bare_rx += !ret;
	} else {
		ret = tr_msg_decode(b->data, wc->len, &m);
	}
	if (ret) {
		l->stats.rx_dropped++;
		tr_warn("peer %d plane %d: dropped a malformed message (%u bytes): %s", l->peer,
			l->plane, wc->len, strerror(-ret));
		goto done;
	}
	TR_EV(l->ctx, "rx_msg", l->peer, m.type);
	if (m.has_bsm && tr_fc_tx_bsm2(&l->fc_tx, m.bsm_n, m.bsm_c))
		tr_warn("peer %d plane %d: inconsistent buffer status ignored", l->peer, l->plane);
	if (m.type == TR_MSG_BSM)
		goto done;
	if (tr_fc_rx_arrive(&l->fc_rx, m.slot)) {
		/* The peer broke flow control (or its slot count).  The message
		 * is whole in its own receive buffer, and the peer's NIC was told
		 * it arrived: dropping it would lose it for good.  It is handled,
		 * outside the slot accounting (its buffer frees no slot). */
		tr_error("peer %d plane %d: %s into slot %u, which is %s: handled all the same",
			 l->peer, l->plane, tr_msg_type_str(m.type), m.slot,
			 m.slot < l->fc_rx.nslots ? "occupied" : "not one of ours");
		m.slot = NO_SLOT;
	}
	b->slot = m.slot;
	if (m.type != TR_MSG_AM) {
		/* Everything but an active message is whole in m: free the slot
		 * before handling it, so that the answer the handler sends (a
		 * copy's DATA, RESP or DONE) already reports it free and no
		 * standalone BSM has to follow. */
		tr_fc_rx_drain(&l->fc_rx, m.slot);
		repost(b);
		tr_peer_on_msg(l, &m, NULL);
		pump(l);
		return;
	}
	if (tr_peer_on_msg(l, &m, b)) {
		l->rx_held++; /* a handler kept it: tr_lane_release() frees it */
		pump(l);
		return;
	}
	tr_fc_rx_drain(&l->fc_rx, m.slot);
done:
	repost(b);
	pump(l);
}

void tr_lane_on_recv(void *arg, const struct tr_fab_wc *wc)
{
	(void)arg;
	on_recv((struct tr_buf *)(uintptr_t)(wc->cookie & ~(uint64_t)TR_CK_TAG_MASK), wc);
}

/* b's message is handled: its buffer is free again, and counted so. */
static void send_buf_done(struct tr_lane *l, struct tr_buf *b)
{
	l->sq_posted--;
	l->sq_avail++;
	b->next_free = l->tx_free;
	l->tx_free = b;
}

/* b stays ours (not free, still counted as posted) until its message is
 * handled: what runs meanwhile may post on l (a sequence number done
 * pumps every lane of the peer, l too) or break it, and must neither take
 * b for another message, nor release the lane's buffers under us.  (CI
 * caught the first: b, given back first, carried the next message, whose
 * request this completion then completed before it had arrived.) */
static void on_send(struct tr_buf *b, const struct tr_fab_wc *wc)
{
	struct tr_lane *l = b->lane;
	struct triad_req *req = b->req;
	int bsm = b->slot == NO_SLOT;

	b->req = NULL;
	if (bsm)
		l->bsm_inflight--;
	if (req)
		l->req_msgs--;
	if (wc->status != TRIAD_S_OK) {
		if (!wc->flushed) {
			l->stats.errors++;
			tr_warn("peer %d plane %d: send failed: %s", l->peer, l->plane, wc->why);
			tr_lane_fail(l, wc->status);
		}
		tr_lane_flushed_while_up(l, wc);
		/* It may or may not have arrived; the peer sends it again on
		 * another lane and the receiver drops a duplicate by its sequence
		 * number.  A BSM belongs to this lane: it dies with it. */
		if (!bsm)
			tr_peer_msg_lost(l, b->data, b->len, b->prio, req);
		send_buf_done(l, b);
		tr_lane_check_drained(l);
		return;
	}
	if (!bsm)
		tr_peer_seq_done(l, b->data, b->len);
	send_buf_done(l, b);
	if (req)
		tr_req_complete(req, TRIAD_S_OK);
	pump(l);
	tr_lane_rma_pump(l);
	tr_lane_check_drained(l); /* a post of the pumps above may have broken it */
}

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

const char *tr_lane_seq_where(const struct tr_lane *l, unsigned prio, uint32_t seq)
{
	static const char *const queued[] = { NULL, "queued", "its SEQ_SKIP queued" };
	static const char *const posted[] = { NULL, "in flight", "its SEQ_SKIP in flight" };

	for (const struct tr_list *e = l->msgq[prio].next; e != &l->msgq[prio]; e = e->next) {
		const struct queued_msg *q = tr_container_of(e, struct queued_msg, link);
		int c = tr_msg_carries(q->data, q->len, prio, seq);

		if (c)
			return queued[c];
	}
	for (int i = 0; l->tx && i < l->ntx; i++) { /* the send buffers not free */
		const struct tr_buf *b = &l->tx[i], *f;
		int c;

		for (f = l->tx_free; f && f != b; f = f->next_free)
			;
		if (!f && (c = tr_msg_carries(b->data, b->len, prio, seq)))
			return posted[c];
	}
	return NULL;
}

void tr_lane_pump(struct tr_lane *l)
{
	pump(l);
}

void tr_lane_on_send(void *arg, const struct tr_fab_wc *wc)
{
	void *ptr = (void *)(uintptr_t)(wc->cookie & ~(uint64_t)TR_CK_TAG_MASK);
	struct triad_req *req = ptr;
	struct tr_lput *lp = ptr;

	(void)arg;
	switch (wc->cookie & TR_CK_TAG_MASK) {
	case TR_CK_SEND:
		on_send(ptr, wc);
		break;
	case TR_CK_LPUT:
		tr_lane_on_rma(lp->lane, NULL, lp, wc);
		break;
	default:
		tr_lane_on_rma(req->lane, req, NULL, wc);
		break;
	}
}

/* A message queued this long on a live connection is stuck, not slow: a
 * peer's buffer status comes within a linger time of what it reports. */
#define STUCK_MS 5000

/* Says so, once per message, with what it waits for; the operator (and a
 * test that timed out on the other side) learns where it sits.  Its wait is
 * counted in whole timer periods (it was queued during period q->tick). */
static void tell_stuck(struct tr_lane *l)
{
	const struct triad_ctx *ctx = l->ctx;

	for (unsigned p = 0; p < TR_FC_NPRIO; p++) {
		struct queued_msg *q;
		uint64_t waited_ms; /* at least: whole periods since its own */
		char line[768];

		if (tr_list_empty(&l->msgq[p]))
			continue;
		q = tr_list_first(&l->msgq[p], struct queued_msg, link);
		if (q->told || ctx->fc_ticks - q->tick < 2)
			continue;
		waited_ms = (ctx->fc_ticks - q->tick - 1) * (uint64_t)ctx->cfg.fc_timer_ms;
		if (waited_ms < STUCK_MS)
			continue;
		q->told = 1;
		tr_peer_describe(ctx, l->peer, line, sizeof(line));
		tr_warn("peer %d plane %d: a %s message (priority %u, seq %u) has waited more than "
			"%.1f s to be sent: send buffers %s, send queue room %d, a slot for it %s, "
			"its number %s the window; to rank %d: %s",
			l->peer, l->plane, tr_msg_type_str(tr_wire_type(q->data)), p,
			tr_wire_seq(q->data), (double)waited_ms * 1e-3,
			l->tx_free ? "free" : "all in use", l->sq_avail,
			tr_fc_tx_pick(&l->fc_tx, p) >= 0 ? "free" : "not free",
			tr_peer_seq_ok(l, q->data) ? "within" : "beyond", l->peer, line);
	}
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
static void drain_tick(struct tr_lane *l)
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

void tr_lane_fc_tick(struct tr_lane *l)
{
	unsigned n;

	if (l->state == TR_LANE_DRAINING)
		drain_tick(l);
	if (l->state != TR_LANE_UP)
		return;
	/* RC: a slot unconfirmed this long has its message at the peer, whose
	 * status is late (a handler keeps it); it stays busy (proto/fc.h). */
	n = tr_fc_tx_tick(&l->fc_tx, true);
	if (n)
		tr_info("peer %d plane %d: %u slot(s) unconfirmed for a whole timer period: "
			"the peer still holds them", l->peer, l->plane, n);
	if (l->nqueued)
		tell_stuck(l);
	/* Queued messages and a due buffer status go as soon as what they
	 * wait for comes back; a pump here too costs nothing when they
	 * cannot, and a wake-up missed (a bug) then delays them by one period
	 * instead of for ever.  A status still lingering is overdue (the
	 * linger is at most a quarter period). */
	tr_lane_bsm_flush(l);
	if (n || l->nqueued || tr_fc_rx_bsm_due(&l->fc_rx))
		pump(l);
}
