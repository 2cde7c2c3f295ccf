/* Connections: one RC QP per (peer, plane), set up with rdma_cm.
 *
 * The lower rank connects, the higher rank accepts; the active side retries
 * (the peer may not listen yet) until TRIAD_CONNECT_TIMEOUT_MS.  No work
 * request is posted before the connection is established, so an attempt
 * that fails owns nothing on the wire and is torn down at once; the sender
 * RNR-retries until the receive buffers are posted.  A connection that
 * breaks after it was up goes DRAINING: its QP is moved to the error state,
 * every posted work request comes back flushed (and fails its request),
 * and only then are the QP and buffers released (FAILED).
 *
 * Messages (control, active messages, BSMs) use the peer's receive slots
 * under buffer-status flow control (proto/fc): a message waits in its
 * priority's queue until the peer's last BSM leaves a slot for it; every
 * message carries this side's BSM for the reverse direction in its header,
 * and a standalone BSM goes out when a status changed and no message could
 * carry it (at most one in flight, two when a priority threshold was just
 * crossed).  Each side tells the other its slot count and size in the
 * rdma_cm private data; buffers are sized from them at ESTABLISHED. */
#include <arpa/inet.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "core/ctx.h"
#include "core/log.h"
#include "fabric/fabric.h"
#include "fabric/internal.h"

#define PRIV_MAGIC 0x74726961u /* "tria" */
#define PRIV_LEN 24

static const char *const state_names[] = {
	[TR_CONN_DOWN] = "DOWN",	 [TR_CONN_CONNECTING] = "CONNECTING",
	[TR_CONN_ACCEPTING] = "ACCEPTING", [TR_CONN_UP] = "UP",
	[TR_CONN_DRAINING] = "DRAINING", [TR_CONN_FAILED] = "FAILED",
};

const char *tr_conn_state_str(enum tr_conn_state s)
{
	return state_names[s];
}

struct queued_msg {
	struct tr_list link;
	int len;
	struct triad_req *req;
	char data[];
};

#define NO_SLOT TR_WIRE_NO_SLOT

static void retry_cb(struct ev_loop *loop, ev_timer *w, int revents);

static void set_state(struct tr_conn *c, enum tr_conn_state s)
{
	struct triad_ctx *ctx = c->ctx;

	tr_debug("peer %d plane %d: %s -> %s", c->peer, c->plane, state_names[c->state],
		 state_names[s]);
	c->state = s;
	c->stats.up = s == TR_CONN_UP;
	tr_core_conn_changed(c);
	/* After start-up a broken connection is rebuilt: the side that connects
	 * asks the progress thread (which owns the timers) to retry. */
	if (s == TR_CONN_FAILED && ctx->initialized && !ctx->closing && c->peer > ctx->rank &&
	    !ctx->peers[c->peer].gone) {
		c->want_reconnect = 1;
		ev_async_send(ctx->loop, &ctx->kick_w);
	}
}

void tr_conn_reconnect_all(struct triad_ctx *ctx)
{
	for (int r = ctx->rank + 1; r < ctx->size; r++) {
		for (int p = 0; p < ctx->nplanes; p++) {
			struct tr_conn *c = &ctx->peers[r].conn[p];

			if (!c->want_reconnect || c->state != TR_CONN_FAILED || ctx->closing)
				continue;
			c->want_reconnect = 0;
			c->attempts = 0;
			c->deadline = ev_now(ctx->loop) + 1e9; /* until it works or we close */
			c->state = TR_CONN_DOWN;
			ev_timer_stop(ctx->loop, &c->retry_w);
			ev_timer_init(&c->retry_w, retry_cb, 0.5, 0);
			c->retry_w.data = c;
			ev_timer_start(ctx->loop, &c->retry_w);
			tr_info("peer %d plane %d: reconnecting", c->peer, c->plane);
		}
	}
}

/* ---- private data: who is connecting, on which plane, with what slots -------*/
static void priv_encode(uint8_t *p, const struct triad_ctx *ctx, int plane)
{
	uint32_t v[PRIV_LEN / 4] = {
		htonl(PRIV_MAGIC),	   htonl((uint32_t)plane),
		htonl((uint32_t)ctx->rank), htonl((uint32_t)ctx->size),
		htonl((uint32_t)ctx->cfg.slots), htonl((uint32_t)ctx->cfg.slot_size),
	};

	memcpy(p, v, PRIV_LEN);
}

static int priv_decode(const uint8_t *p, size_t len, struct tr_conn_priv *d)
{
	uint32_t v[PRIV_LEN / 4];

	if (len < PRIV_LEN)
		return -EBADMSG;
	memcpy(v, p, PRIV_LEN);
	if (ntohl(v[0]) != PRIV_MAGIC)
		return -EBADMSG;
	d->plane = ntohl(v[1]);
	d->rank = ntohl(v[2]);
	d->size = ntohl(v[3]);
	d->slots = ntohl(v[4]);
	d->slot_size = ntohl(v[5]);
	if (d->slots < 1 || d->slots > TR_FC_MAX_SLOTS || d->slot_size < 512 ||
	    d->slot_size > TR_WIRE_MAX_LEN)
		return -EPROTO;
	return 0;
}

void tr_conn_init(struct triad_ctx *ctx, struct tr_conn *c, int peer, int plane)
{
	memset(c, 0, sizeof(*c));
	c->ctx = ctx;
	c->peer = peer;
	c->plane = plane;
	c->down_status = TRIAD_S_UNREACHABLE;
	for (int p = 0; p < TR_FC_NPRIO; p++)
		tr_list_init(&c->msgq[p]);
	tr_list_init(&c->rmaq);
}

/* ---- resources -----------------------------------------------------------------*/
static int setup_qp(struct tr_conn *c, struct rdma_cm_id *id)
{
	struct triad_ctx *ctx = c->ctx;
	struct tr_plane *pl = &ctx->plane[c->plane];
	struct ibv_qp_init_attr attr = {
		.send_cq = pl->scq,
		.recv_cq = pl->cq,
		.cap = { .max_send_wr = (uint32_t)ctx->cfg.sq_depth,
			 .max_recv_wr = (uint32_t)ctx->cfg.slots + 3,
			 .max_send_sge = 1, .max_recv_sge = 1, .max_inline_data = 64 },
		.qp_type = IBV_QPT_RC,
	};
	uint8_t tmo = (uint8_t)ctx->cfg.ack_timeout;

	if (id->verbs != pl->verbs) {
		/* The routing trap of a one-host fabric (docs/fabric.md): rdma_cm picked
		 * another device than the plane's own. */
		tr_error("peer %d plane %d: rdma_cm chose device %s, the plane is %s; "
			 "fix the routing (one table per address)", c->peer, c->plane,
			 id->verbs ? ibv_get_device_name(id->verbs->device) : "none", pl->devname);
		return -EXDEV;
	}
	if (rdma_create_qp(id, pl->pd, &attr)) {
		attr.cap.max_inline_data = 0;
		if (rdma_create_qp(id, pl->pd, &attr)) {
			tr_error("peer %d plane %d: rdma_create_qp: %m", c->peer, c->plane);
			return -errno;
		}
	}
	if (rdma_set_option(id, RDMA_OPTION_ID, RDMA_OPTION_ID_ACK_TIMEOUT, &tmo, sizeof(tmo)))
		tr_warn("peer %d plane %d: cannot set the ack timeout: %m", c->peer, c->plane);
	c->id = id;
	c->qp = id->qp;
	c->max_inline = attr.cap.max_inline_data;
	c->sq_avail = ctx->cfg.sq_depth;
	return 0;
}

/* At ESTABLISHED, once the peer's slots are known: message buffers (ours
 * for the peer's messages, the peer's size for ours) and flow control. */
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

static int setup_msgs(struct tr_conn *c, const struct tr_conn_priv *peer)
{
	struct triad_ctx *ctx = c->ctx;
	size_t rsz = ctx->cfg.slot_size, tsz = peer->slot_size, total;
	unsigned need[TR_FC_NPRIO];
	int i;

	fc_need(&ctx->cfg, peer->slots, need);		       /* the peer's slots, for our sends */
	fc_need(&ctx->cfg, (unsigned)ctx->cfg.slots, c->rx_need); /* ours, for its sends */

	c->peer_slots = peer->slots;
	c->peer_slot_size = peer->slot_size;
	c->nrx = ctx->cfg.slots + 3; /* + standalone BSMs in flight, and a spare */
	c->ntx = (int)peer->slots + 3;
	if (c->ntx > ctx->cfg.sq_depth / 2) /* the rest of the send queue is for put/get */
		c->ntx = ctx->cfg.sq_depth / 2;
	if (tr_fc_tx_init(&c->fc_tx, peer->slots, need) ||
	    tr_fc_rx_init(&c->fc_rx, (unsigned)ctx->cfg.slots)) {
		tr_error("peer %d plane %d: flow-control thresholds %u/%u/%u do not fit %u slots",
			 c->peer, c->plane, need[0], need[1], need[2], peer->slots);
		return -EINVAL;
	}
	total = (size_t)c->nrx * rsz + (size_t)c->ntx * tsz;
	if (posix_memalign((void **)&c->bufmem, 4096, total))
		c->bufmem = NULL;
	c->rx = calloc((size_t)c->nrx, sizeof(*c->rx));
	c->tx = calloc((size_t)c->ntx, sizeof(*c->tx));
	if (!c->bufmem || !c->rx || !c->tx)
		goto nomem;
	c->buf_mr = tr_mr_reg(&ctx->plane[c->plane], c->bufmem, total, IBV_ACCESS_LOCAL_WRITE);
	if (!c->buf_mr)
		goto nomem;
	for (i = 0; i < c->nrx; i++) {
		c->rx[i].conn = c;
		c->rx[i].data = c->bufmem + (size_t)i * rsz;
	}
	c->tx_free = NULL;
	for (i = c->ntx - 1; i >= 0; i--) {
		c->tx[i].conn = c;
		c->tx[i].data = c->bufmem + (size_t)c->nrx * rsz + (size_t)i * tsz;
		c->tx[i].next_free = c->tx_free;
		c->tx_free = &c->tx[i];
	}
	return 0;
nomem:
	tr_error("peer %d plane %d: no memory for message buffers", c->peer, c->plane);
	return -ENOMEM;
}

/* Releases the QP, the id and the buffers: only when nothing is posted. */
static void release(struct tr_conn *c)
{
	if (c->qp)
		rdma_destroy_qp(c->id);
	if (c->id)
		rdma_destroy_id(c->id);
	tr_mr_dereg(c->buf_mr);
	free(c->bufmem);
	free(c->rx);
	free(c->tx);
	c->qp = NULL;
	c->id = NULL;
	c->buf_mr = NULL;
	c->bufmem = NULL;
	c->rx = c->tx = c->tx_free = NULL;
	c->rma_posted = c->req_msgs = 0;
	for (int p = 0; p < TR_FC_NPRIO; p++) {
		while (!tr_list_empty(&c->msgq[p])) {
			struct queued_msg *q = tr_list_first(&c->msgq[p], struct queued_msg, link);

			tr_list_del(&q->link);
			free(q);
		}
	}
	c->nqueued = 0;
}

static int post_recv(struct tr_buf *b)
{
	struct tr_conn *c = b->conn;
	struct ibv_sge sge = { (uintptr_t)b->data, (uint32_t)c->ctx->cfg.slot_size,
			       c->buf_mr->lkey };
	struct ibv_recv_wr wr = { .wr_id = (uintptr_t)b | TR_WR_RECV, .sg_list = &sge,
				  .num_sge = 1 };
	struct ibv_recv_wr *bad;
	int ret = ibv_post_recv(c->qp, &wr, &bad);

	if (ret) {
		tr_error("peer %d plane %d: ibv_post_recv: %s", c->peer, c->plane, strerror(ret));
		return -ret;
	}
	c->rq_posted++;
	return 0;
}

static void pump(struct tr_conn *c);

static void established(struct tr_conn *c, const struct tr_conn_priv *peer)
{
	int i;

	c->peer_closed = 0;
	if (setup_msgs(c, peer)) {
		release(c);
		set_state(c, TR_CONN_FAILED);
		return;
	}
	for (i = 0; i < c->nrx; i++) {
		if (post_recv(&c->rx[i])) {
			set_state(c, TR_CONN_UP);
			tr_conn_fail(c, TRIAD_S_TRANSPORT);
			return;
		}
	}
	tr_info("peer %d plane %d: connected, qp 0x%x, %u slots of %u B each way", c->peer,
		c->plane, c->qp->qp_num, c->peer_slots, c->peer_slot_size);
	set_state(c, TR_CONN_UP);
	pump(c); /* the first BSM: the peer can send nothing before it */
}

/* ---- active side --------------------------------------------------------------*/
static void attempt_failed(struct tr_conn *c, const char *why);
static void on_disconnected(struct tr_conn *c);

int tr_conn_connect(struct tr_conn *c)
{
	struct triad_ctx *ctx = c->ctx;
	struct sockaddr_in src = ctx->plane[c->plane].addr, dst = src;
	struct rdma_cm_id *id;

	if (!c->deadline)
		c->deadline = ev_now(ctx->loop) + ctx->cfg.connect_timeout_ms / 1000.0;
	src.sin_port = 0;
	dst.sin_addr = ctx->world.addr[c->peer][c->plane];
	dst.sin_port = htons(ctx->world.port);
	c->attempts++;
	c->stats.connects++;
	if (rdma_create_id(ctx->cm_chan, &id, c, RDMA_PS_TCP)) {
		tr_error("peer %d plane %d: rdma_create_id: %m", c->peer, c->plane);
		return -errno;
	}
	c->id = id;
	set_state(c, TR_CONN_CONNECTING);
	/* Bind the source address: on a one-host fabric this is what keeps the
	 * connection on this plane's device. */
	if (rdma_resolve_addr(id, (struct sockaddr *)&src, (struct sockaddr *)&dst, 5000)) {
		tr_warn("peer %d plane %d: rdma_resolve_addr: %m", c->peer, c->plane);
		attempt_failed(c, "rdma_resolve_addr");
	}
	return 0;
}

static void retry_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
	struct tr_conn *c = w->data;
	struct triad_ctx *ctx = c->ctx;

	(void)loop;
	(void)revents;
	pthread_mutex_lock(&ctx->lock);
	if (c->state == TR_CONN_DOWN)
		tr_conn_connect(c);
	pthread_mutex_unlock(&ctx->lock);
}

/* An attempt failed before the connection was up: try again or give up. */
static void attempt_failed(struct tr_conn *c, const char *why)
{
	struct triad_ctx *ctx = c->ctx;
	double delay = 0.05 * c->attempts + (ctx->initialized ? 0.5 : 0);

	release(c);
	if (ev_now(ctx->loop) + delay >= c->deadline) {
		tr_error("peer %d plane %d: cannot connect after %d attempts (%s)", c->peer,
			 c->plane, c->attempts, why);
		c->down_status = TRIAD_S_UNREACHABLE;
		set_state(c, TR_CONN_FAILED);
		return;
	}
	tr_debug("peer %d plane %d: attempt %d failed (%s), retry in %.2f s", c->peer,
		 c->plane, c->attempts, why, delay > 1 ? 1.0 : delay);
	set_state(c, TR_CONN_DOWN);
	ev_timer_init(&c->retry_w, retry_cb, delay > 1 ? 1.0 : delay, 0);
	c->retry_w.data = c;
	ev_timer_start(ctx->loop, &c->retry_w);
}

static void on_addr_resolved(struct tr_conn *c)
{
	if (rdma_resolve_route(c->id, 5000))
		attempt_failed(c, "rdma_resolve_route");
}

static void on_route_resolved(struct tr_conn *c)
{
	struct triad_ctx *ctx = c->ctx;
	struct tr_plane *pl = &ctx->plane[c->plane];
	uint8_t priv[PRIV_LEN];
	struct rdma_conn_param param = {
		.private_data = priv,
		.private_data_len = PRIV_LEN,
		.responder_resources = (uint8_t)pl->max_rd_atom,
		.initiator_depth = (uint8_t)pl->max_init_rd_atom,
		.retry_count = (uint8_t)ctx->cfg.retry_count,
		.rnr_retry_count = 7, /* infinite: receive buffers are posted at ESTABLISHED */
	};

	if (setup_qp(c, c->id)) {
		attempt_failed(c, "QP setup");
		return;
	}
	priv_encode(priv, ctx, c->plane);
	if (rdma_connect(c->id, &param))
		attempt_failed(c, "rdma_connect");
}

/* ---- passive side ----------------------------------------------------------------*/
static void on_connect_request(struct triad_ctx *ctx, struct tr_plane *pl,
			       struct rdma_cm_id *id, const uint8_t *priv, size_t len)
{
	struct tr_conn_priv d;
	uint32_t plane, rank, size;
	struct tr_conn *c;
	uint8_t mine[PRIV_LEN];
	struct rdma_conn_param param = {
		.responder_resources = (uint8_t)pl->max_rd_atom,
		.initiator_depth = (uint8_t)pl->max_init_rd_atom,
		.retry_count = (uint8_t)ctx->cfg.retry_count,
		.rnr_retry_count = 7,
		.private_data = mine,
		.private_data_len = PRIV_LEN,
	};

	priv_encode(mine, ctx, pl->index);
	if (priv_decode(priv, len, &d)) {
		tr_warn("plane %d: connection request without triad private data: rejected",
			pl->index);
		goto reject;
	}
	plane = d.plane;
	rank = d.rank;
	size = d.size;
	if (size != (uint32_t)ctx->size || rank >= size || (int)rank >= ctx->rank ||
	    plane != (uint32_t)pl->index) {
		tr_warn("plane %d: connection request from rank %u plane %u world %u does not "
			"fit this world (%d ranks, rank %d): rejected",
			pl->index, rank, plane, size, ctx->size, ctx->rank);
		goto reject;
	}
	c = &ctx->peers[rank].conn[plane];
	/* FAILED: the peer rebuilds a connection that broke (its side found out
	 * first, or ours is about to: a stale one is dropped by its peer). */
	if (c->state != TR_CONN_DOWN && c->state != TR_CONN_FAILED) {
		tr_warn("peer %u plane %u: connection request while %s: rejected", rank, plane,
			state_names[c->state]);
		goto reject;
	}
	id->context = c;
	if (setup_qp(c, id)) {
		int owned = c->id == id;

		rdma_reject(id, NULL, 0);
		release(c); /* destroys id once setup_qp took it */
		if (!owned)
			rdma_destroy_id(id);
		return;
	}
	c->accept_priv = d;
	set_state(c, TR_CONN_ACCEPTING);
	if (rdma_accept(id, &param)) {
		tr_warn("peer %u plane %u: rdma_accept: %m", rank, plane);
		release(c);
		set_state(c, TR_CONN_DOWN);
	}
	return;
reject:
	rdma_reject(id, NULL, 0);
	rdma_destroy_id(id);
}

/* ---- rdma_cm events ----------------------------------------------------------------*/
static int is_listener(const struct triad_ctx *ctx, const struct rdma_cm_id *id)
{
	for (int i = 0; i < ctx->nplanes; i++)
		if (ctx->plane[i].listen_id == id)
			return 1;
	return 0;
}

void tr_cm_cb(struct ev_loop *loop, ev_io *w, int revents)
{
	struct triad_ctx *ctx = w->data;
	struct rdma_cm_event *ev;

	(void)loop;
	(void)revents;
	pthread_mutex_lock(&ctx->lock);
	while (rdma_get_cm_event(ctx->cm_chan, &ev) == 0) {
		/* Copy what we need and ack first: an id may be destroyed below,
		 * which would wait forever for an unacknowledged event. */
		enum rdma_cm_event_type type = ev->event;
		struct rdma_cm_id *id = ev->id, *listen = ev->listen_id;
		uint8_t priv[64];
		size_t plen = 0;
		int status = ev->status;

		if (type == RDMA_CM_EVENT_CONNECT_REQUEST || type == RDMA_CM_EVENT_ESTABLISHED) {
			plen = ev->param.conn.private_data_len;
			if (plen > sizeof(priv))
				plen = sizeof(priv);
			memcpy(priv, ev->param.conn.private_data, plen);
		}
		rdma_ack_cm_event(ev);

		if (type == RDMA_CM_EVENT_CONNECT_REQUEST) {
			on_connect_request(ctx, listen->context, id, priv, plen);
			continue;
		}
		if (is_listener(ctx, id)) {
			tr_warn("cm event %s on a listener", rdma_event_str(type));
			continue;
		}
		struct tr_conn *c = id->context;

		if (!c || c->id != id) {
			tr_debug("cm event %s for a stale id", rdma_event_str(type));
			continue;
		}
		tr_debug("peer %d plane %d: %s (status %d)", c->peer, c->plane,
			 rdma_event_str(type), status);
		switch (type) {
		case RDMA_CM_EVENT_ADDR_RESOLVED:
			on_addr_resolved(c);
			break;
		case RDMA_CM_EVENT_ROUTE_RESOLVED:
			on_route_resolved(c);
			break;
		case RDMA_CM_EVENT_ESTABLISHED: {
			struct tr_conn_priv d = c->accept_priv;

			/* The active side learns the peer's slots from the accept. */
			if (c->state == TR_CONN_CONNECTING && priv_decode(priv, plen, &d)) {
				tr_error("peer %d plane %d: the accept carries no valid slot "
					 "description", c->peer, c->plane);
				rdma_disconnect(id);
				attempt_failed(c, "bad accept data");
				break;
			}
			established(c, &d);
			break;
		}
		case RDMA_CM_EVENT_ADDR_ERROR:
		case RDMA_CM_EVENT_ROUTE_ERROR:
		case RDMA_CM_EVENT_UNREACHABLE:
		case RDMA_CM_EVENT_REJECTED:
		case RDMA_CM_EVENT_CONNECT_ERROR:
			if (c->state == TR_CONN_CONNECTING)
				attempt_failed(c, rdma_event_str(type));
			else if (c->state == TR_CONN_ACCEPTING) {
				release(c);
				set_state(c, TR_CONN_DOWN);
			}
			break;
		case RDMA_CM_EVENT_DISCONNECTED:
			on_disconnected(c);
			break;
		case RDMA_CM_EVENT_DEVICE_REMOVAL:
			tr_conn_fail(c, TRIAD_S_UNREACHABLE);
			break;
		default:
			break;
		}
	}
	tr_ctx_signal(ctx);
	pthread_mutex_unlock(&ctx->lock);
}

/* ---- failure and drain ---------------------------------------------------------------*/
static void check_drained(struct tr_conn *c)
{
	if (c->state == TR_CONN_DRAINING && c->sq_posted == 0 && c->rq_posted == 0 &&
	    c->rx_held == 0) {
		release(c);
		set_state(c, TR_CONN_FAILED);
	}
}

static void conn_break(struct tr_conn *c, enum triad_status why)
{
	struct ibv_qp_attr attr = { .qp_state = IBV_QPS_ERR };

	c->down_status = why;
	c->state = TR_CONN_DRAINING;
	c->stats.up = 0;
	/* The flow-control engines start afresh with the next connection: keep
	 * their error counts in the totals. */
	c->stats.fc_timeouts += tr_fc_tx_errors(&c->fc_tx);
	c->stats.rx_overruns += tr_fc_rx_overruns(&c->fc_rx);
	/* Error state flushes everything posted; tell the peer too.  The
	 * flushed sends must wake someone for the connection to drain. */
	tr_plane_want_send(&c->ctx->plane[c->plane]);
	if (ibv_modify_qp(c->qp, &attr, IBV_QP_STATE))
		tr_warn("peer %d plane %d: ibv_modify_qp(ERR): %m", c->peer, c->plane);
	rdma_disconnect(c->id);
	/* Messages still waiting for a slot go to another plane. */
	for (int p = 0; p < TR_FC_NPRIO; p++) {
		while (!tr_list_empty(&c->msgq[p])) {
			struct queued_msg *q = tr_list_first(&c->msgq[p], struct queued_msg, link);

			tr_list_del(&q->link);
			c->nqueued--;
			tr_core_msg_lost(c, q->data, q->len, (unsigned)p, q->req);
			free(q);
		}
	}
	tr_core_conn_changed(c);
	check_drained(c);
}

void tr_conn_fail(struct tr_conn *c, enum triad_status why)
{
	if (c->state != TR_CONN_UP)
		return;
	tr_warn("peer %d plane %d: connection broken (%s)", c->peer, c->plane,
		triad_status_str(why));
	conn_break(c, why);
}

/* The peer disconnected: it is closing, or it died and its kernel said so. */
static void on_disconnected(struct tr_conn *c)
{
	if (c->state != TR_CONN_UP)
		return;
	tr_info("peer %d plane %d: disconnected by the peer", c->peer, c->plane);
	c->peer_closed = 1;
	conn_break(c, TRIAD_S_UNREACHABLE);
}

int tr_conn_idle(const struct tr_conn *c)
{
	return c->state != TR_CONN_UP ||
	       (c->sq_posted == c->bsm_inflight && c->nqueued == 0);
}

void tr_conn_destroy(struct tr_conn *c)
{
	if (c->state == TR_CONN_UP)
		rdma_disconnect(c->id);
	release(c);
	c->state = TR_CONN_FAILED;
}

unsigned tr_conn_max_msg(const struct tr_conn *c)
{
	return c->state == TR_CONN_UP ? c->peer_slot_size : (unsigned)c->ctx->cfg.slot_size;
}

/* ---- sending ------------------------------------------------------------------------*/
static int post_send(struct tr_conn *c, struct tr_buf *b, int len)
{
	struct ibv_sge sge = { (uintptr_t)b->data, (uint32_t)len, c->buf_mr->lkey };
	struct ibv_send_wr wr = {
		.wr_id = (uintptr_t)b | TR_WR_SEND,
		.sg_list = &sge,
		.num_sge = 1,
		.opcode = IBV_WR_SEND,
		.send_flags = IBV_SEND_SIGNALED | ((uint32_t)len <= c->max_inline ? IBV_SEND_INLINE : 0),
	};
	struct ibv_send_wr *bad;
	int ret;

	TR_EV(c->ctx, "post_send", c->peer, len);
	ret = ibv_post_send(c->qp, &wr, &bad);
	if (ret) {
		tr_error("peer %d plane %d: ibv_post_send: %s", c->peer, c->plane, strerror(ret));
		return -ret;
	}
	b->len = len;
	c->tx_free = b->next_free;
	c->sq_avail--;
	c->sq_posted++;
	c->stats.tx_msgs++;
	c->stats.tx_bytes += (uint64_t)len;
	return 0;
}

/* Posts one encoded message into the peer's slot, with our buffer status
 * for the reverse direction in its header (always: a repeat is harmless
 * and repairs nothing less than a standalone BSM would). */
static int post_msg(struct tr_conn *c, const void *data, int len, int slot, unsigned prio,
		    struct triad_req *req)
{
	struct tr_buf *b = c->tx_free;
	uint64_t n, cf;
	bool due;
	int ret;

	memcpy(b->data, data, (size_t)len);
	due = tr_fc_rx_bsm_due(&c->fc_rx); /* does the status say something new? */
	tr_fc_rx_bsm(&c->fc_rx, &n, &cf);
	tr_wire_set_link(b->data, (uint8_t)slot, (uint8_t)prio, 1, n, cf);
	b->slot = (uint8_t)slot;
	b->prio = (uint8_t)prio;
	b->req = req;
	if (req)
		tr_plane_want_send(&c->ctx->plane[c->plane]);
	ret = post_send(c, b, len);
	if (ret)
		return ret;
	if (req)
		c->req_msgs++;
	tr_fc_tx_sent(&c->fc_tx, (unsigned)slot);
	if (due)
		c->stats.bsm_piggyback++;
	TR_EV(c->ctx, "tx_msg", c->peer, tr_wire_type(data));
	return 0;
}

static void pump_bsm(struct tr_conn *c, int force);

static int post_bsm(struct tr_conn *c)
{
	struct tr_msg m = { .type = TR_MSG_BSM, .slot = NO_SLOT, .has_bsm = 1 };
	struct tr_buf *b = c->tx_free;
	int len, ret;

	tr_fc_rx_bsm(&c->fc_rx, &m.bsm_n, &m.bsm_c);
	len = tr_msg_encode(&m, b->data, c->peer_slot_size);
	if (len < 0)
		return len;
	b->slot = NO_SLOT;
	b->req = NULL;
	ret = post_send(c, b, len);
	if (ret)
		return ret;
	c->bsm_inflight++;
	c->stats.bsm_standalone++;
	TR_EV(c->ctx, "tx_bsm", c->peer, 0);
	return 0;
}

/* Sends what flow control allows: queued messages by priority (a
 * priority that must wait blocks the lower ones, which need more free
 * slots), then a standalone BSM if our status changed and nothing carried
 * it. */
static void pump(struct tr_conn *c)
{
	unsigned p;

	if (c->state != TR_CONN_UP)
		return;
	for (p = 0; p < TR_FC_NPRIO; p++) {
		while (!tr_list_empty(&c->msgq[p])) {
			struct queued_msg *q = tr_list_first(&c->msgq[p], struct queued_msg, link);
			int slot;

			if (!c->tx_free || !c->sq_avail)
				return;
			slot = tr_fc_tx_pick(&c->fc_tx, p);
			if (slot < 0)
				goto bsm;
			if (post_msg(c, q->data, q->len, slot, p, q->req)) {
				tr_conn_fail(c, TRIAD_S_TRANSPORT);
				return;
			}
			tr_list_del(&q->link);
			c->nqueued--;
			free(q);
		}
	}
bsm:
	pump_bsm(c, 0);
}

/* A standalone BSM goes at once when it is urgent (a priority threshold
 * was crossed) or when two thirds of the slots are unreported (the sender
 * may soon run short); otherwise it lingers up to TRIAD_BSM_LINGER_US to
 * cover more slots (force), so a streaming sender costs a BSM per several
 * messages, not one each.  At most one is in flight, two when urgent. */
static void pump_bsm(struct tr_conn *c, int force)
{
	unsigned unreported = (unsigned)__builtin_popcountll(c->fc_rx.nmtsr);
	int urgent;

	if (!tr_fc_rx_bsm_due(&c->fc_rx))
		return;
	if (!c->tx_free || !c->sq_avail) {
		tr_plane_want_send(&c->ctx->plane[c->plane]); /* a completion frees room */
		return;
	}
	urgent = tr_fc_rx_bsm_urgent(&c->fc_rx, c->rx_need);
	if (c->bsm_inflight >= 2 || (c->bsm_inflight == 1 && !urgent))
		return; /* its completion pumps again */
	if (!urgent && !force && 3 * unreported < 2 * c->fc_rx.nslots) {
		if (!c->bsm_linger) {
			c->bsm_linger = 1;
			tr_core_bsm_linger(c);
		}
		return;
	}
	c->bsm_linger = 0;
	if (post_bsm(c))
		tr_conn_fail(c, TRIAD_S_TRANSPORT);
}

void tr_conn_bsm_flush(struct tr_conn *c)
{
	if (c->state != TR_CONN_UP || !c->bsm_linger)
		return;
	c->bsm_linger = 0;
	pump_bsm(c, 1);
}

int tr_conn_send_raw(struct tr_conn *c, const void *data, int len, unsigned prio,
		     struct triad_req *req)
{
	struct queued_msg *q;
	int slot;

	if (c->state != TR_CONN_UP)
		return -ENOTCONN;
	if (len < TR_WIRE_HDR_LEN || (unsigned)len > c->peer_slot_size || prio >= TR_FC_NPRIO)
		return len > 0 && (unsigned)len > c->peer_slot_size ? -EMSGSIZE : -EINVAL;
	/* Straight out when nothing of this priority waits and a slot is free. */
	if (tr_list_empty(&c->msgq[prio]) && c->tx_free && c->sq_avail &&
	    (slot = tr_fc_tx_pick(&c->fc_tx, prio)) >= 0) {
		if (post_msg(c, data, len, slot, prio, req)) {
			tr_conn_fail(c, TRIAD_S_TRANSPORT);
			return -EIO;
		}
		return 0;
	}
	q = malloc(sizeof(*q) + (size_t)len);
	if (!q)
		return -ENOMEM;
	memcpy(q->data, data, (size_t)len);
	q->len = len;
	q->req = req;
	tr_list_add_tail(&c->msgq[prio], &q->link);
	c->nqueued++;
	if (!c->tx_free || !c->sq_avail)
		tr_plane_want_send(&c->ctx->plane[c->plane]); /* waits for send room */
	pump(c);
	return 0;
}

int tr_conn_send(struct tr_conn *c, struct tr_msg *m, unsigned prio, struct triad_req *req)
{
	struct tr_peer *p = &c->ctx->peers[c->peer];
	size_t need = tr_msg_len(m);
	char stack[TR_WIRE_CTRL_LEN], *buf = stack;
	int len, ret;

	if (c->state != TR_CONN_UP)
		return -ENOTCONN;
	if (need > c->peer_slot_size)
		return -EMSGSIZE;
	if (need > sizeof(stack) && !(buf = malloc(need)))
		return -ENOMEM;
	m->seq = p->tx_seq;
	m->slot = 0; /* the link fields are set when it is posted */
	m->prio = (uint8_t)prio;
	len = tr_msg_encode(m, buf, need);
	ret = len < 0 ? len : tr_conn_send_raw(c, buf, len, prio, req);
	if (!ret)
		p->tx_seq++;
	if (buf != stack)
		free(buf);
	return ret;
}

int tr_conn_post_rma(struct tr_conn *c, enum ibv_wr_opcode op, void *laddr, uint32_t len,
		     uint32_t lkey, uint64_t raddr, uint32_t rkey, struct triad_req *req)
{
	struct ibv_sge sge = { (uintptr_t)laddr, len, lkey };
	struct ibv_send_wr wr = {
		.wr_id = (uintptr_t)req | TR_WR_RMA,
		.sg_list = &sge,
		.num_sge = 1,
		.opcode = op,
		.send_flags = IBV_SEND_SIGNALED,
		.wr.rdma = { .remote_addr = raddr, .rkey = rkey },
	};
	struct ibv_send_wr *bad;
	int ret;

	if (c->state != TR_CONN_UP)
		return -ENOTCONN;
	/* Keep room in the send queue for every message the slots allow, so
	 * that bulk transfers never hold acknowledgements back. */
	if (c->sq_avail <= c->ntx)
		return -EAGAIN;
	if (op == IBV_WR_RDMA_WRITE && len <= c->max_inline)
		wr.send_flags |= IBV_SEND_INLINE;
	tr_plane_want_send(&c->ctx->plane[c->plane]);
	ret = ibv_post_send(c->qp, &wr, &bad);
	if (ret) {
		tr_error("peer %d plane %d: ibv_post_send(%s, %u bytes): %s", c->peer, c->plane,
			 op == IBV_WR_RDMA_WRITE ? "WRITE" : "READ", len, strerror(ret));
		return -ret;
	}
	c->sq_avail--;
	c->sq_posted++;
	c->rma_posted++;
	TR_EV(c->ctx, op == IBV_WR_RDMA_WRITE ? "tx_write" : "tx_read", c->peer, len);
	return 0;
}

/* ---- completions and arrivals -----------------------------------------------------------*/
static void repost(struct tr_buf *b)
{
	struct tr_conn *c = b->conn;

	if (c->state == TR_CONN_UP && post_recv(b))
		tr_conn_fail(c, TRIAD_S_TRANSPORT);
}

void tr_conn_release(struct tr_buf *b)
{
	struct tr_conn *c = b->conn;

	c->rx_held--;
	tr_fc_rx_drain(&c->fc_rx, b->slot);
	repost(b);
	pump(c);
	check_drained(c);
}

void tr_conn_on_recv(struct tr_buf *b, const struct ibv_wc *wc, enum triad_status st)
{
	struct tr_conn *c = b->conn;
	struct tr_msg m;
	int ret;

	c->rq_posted--;
	if (wc->status != IBV_WC_SUCCESS) {
		if (wc->status != IBV_WC_WR_FLUSH_ERR) {
			tr_warn("peer %d plane %d: receive failed: %s", c->peer, c->plane,
				ibv_wc_status_str(wc->status));
			tr_conn_fail(c, st);
		}
		check_drained(c);
		return;
	}
	c->stats.rx_msgs++;
	c->stats.rx_bytes += wc->byte_len;
	ret = tr_msg_decode(b->data, wc->byte_len, &m);
	if (ret) {
		c->stats.rx_dropped++;
		tr_warn("peer %d plane %d: dropped a malformed message (%u bytes): %s", c->peer,
			c->plane, wc->byte_len, strerror(-ret));
		goto done;
	}
	TR_EV(c->ctx, "rx_msg", c->peer, m.type);
	if (m.has_bsm && tr_fc_tx_bsm2(&c->fc_tx, m.bsm_n, m.bsm_c))
		tr_warn("peer %d plane %d: inconsistent buffer status ignored", c->peer, c->plane);
	if (m.type == TR_MSG_BSM)
		goto done;
	if (tr_fc_rx_arrive(&c->fc_rx, m.slot)) {
		/* The peer broke flow control (or its slot count): never trust it. */
		tr_error("peer %d plane %d: %s into slot %u, which is %s: dropped", c->peer,
			 c->plane, tr_msg_type_str(m.type), m.slot,
			 m.slot < c->fc_rx.nslots ? "occupied" : "not one of ours");
		goto done;
	}
	b->slot = m.slot;
	if (m.type != TR_MSG_AM) {
		/* Everything but an active message is whole in m: free the slot
		 * before handling it, so that the answer the handler sends (a
		 * copy's DATA, RESP or DONE) already reports it free and no
		 * standalone BSM has to follow. */
		tr_fc_rx_drain(&c->fc_rx, m.slot);
		repost(b);
		tr_core_msg(c, &m, NULL);
		pump(c);
		return;
	}
	if (tr_core_msg(c, &m, b)) {
		c->rx_held++; /* a handler kept it: tr_conn_release() frees it */
		pump(c);
		return;
	}
	tr_fc_rx_drain(&c->fc_rx, m.slot);
done:
	repost(b);
	pump(c);
}

void tr_conn_on_send(struct tr_buf *b, const struct ibv_wc *wc, enum triad_status st)
{
	struct tr_conn *c = b->conn;
	int bsm = b->slot == NO_SLOT;

	c->sq_posted--;
	c->sq_avail++;
	b->next_free = c->tx_free;
	c->tx_free = b;
	if (bsm)
		c->bsm_inflight--;
	if (b->req)
		c->req_msgs--;
	if (wc->status != IBV_WC_SUCCESS) {
		if (wc->status != IBV_WC_WR_FLUSH_ERR) {
			c->stats.errors++;
			tr_warn("peer %d plane %d: send failed: %s", c->peer, c->plane,
				ibv_wc_status_str(wc->status));
			tr_conn_fail(c, st);
		}
		/* It may or may not have arrived; the core sends it again on another
		 * plane and the receiver drops a duplicate by its sequence number.
		 * A BSM belongs to this connection: it dies with it. */
		if (!bsm)
			tr_core_msg_lost(c, b->data, b->len, b->prio, b->req);
		check_drained(c);
		return;
	}
	if (b->req)
		tr_core_msg_done(b->req, TRIAD_S_OK);
	pump(c);
	tr_core_sq_room(c);
}

void tr_conn_on_rma(struct triad_req *req, const struct ibv_wc *wc, enum triad_status st)
{
	struct tr_conn *c = req->conn;

	TR_EV(c->ctx, "rma_done", c->peer, wc->status);
	c->sq_posted--;
	c->sq_avail++;
	c->rma_posted--;
	if (wc->status != IBV_WC_SUCCESS) {
		if (wc->status == IBV_WC_WR_FLUSH_ERR) {
			st = c->down_status;
		} else {
			c->stats.errors++;
			tr_warn("peer %d plane %d: %s failed: %s", c->peer, c->plane,
				req->kind == TR_REQ_PUT ? "put" : "get",
				ibv_wc_status_str(wc->status));
			tr_conn_fail(c, st);
		}
	}
	tr_core_rma_done(c, req, st);
	if (c->state == TR_CONN_UP) {
		pump(c);
		tr_core_sq_room(c);
	}
	check_drained(c);
}

void tr_conn_fc_tick(struct tr_conn *c)
{
	unsigned n;

	if (c->state != TR_CONN_UP)
		return;
	n = tr_fc_tx_tick(&c->fc_tx);
	if (n) {
		tr_warn("peer %d plane %d: %u slot(s) unconfirmed for a whole timer period: "
			"freed", c->peer, c->plane, n);
		pump(c);
	}
}
