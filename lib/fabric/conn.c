/* Connections: one RC QP per (peer, plane), set up with rdma_cm.
 *
 * The lower rank connects, the higher rank accepts; the active side retries
 * (the peer may not listen yet) until TRIAD_CONNECT_TIMEOUT_MS.  No work
 * request is posted before the connection is established, so an attempt
 * that fails owns nothing on the wire and is torn down at once; the sender
 * RNR-retries until the receive buffers are posted.  A connection that
 * breaks after it was up goes DRAINING: its QP is moved to the error state,
 * every posted work request comes back flushed (and fails its request),
 * and only then are the QP and buffers released (FAILED). */
#include <arpa/inet.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "core/ctx.h"
#include "core/log.h"
#include "fabric/fabric.h"
#include "fabric/internal.h"

#define PRIV_MAGIC 0x74726961u /* "tria" */
#define PRIV_LEN 16

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
	char data[TR_WIRE_MAX_LEN];
};

static void set_state(struct tr_conn *c, enum tr_conn_state s)
{
	tr_debug("peer %d plane %d: %s -> %s", c->peer, c->plane, state_names[c->state],
		 state_names[s]);
	c->state = s;
	c->stats.up = s == TR_CONN_UP;
	tr_core_conn_changed(c);
}

/* ---- private data: who is connecting, on which plane -------------------------*/
static void priv_encode(uint8_t *p, const struct triad_ctx *ctx, int plane)
{
	uint32_t v[4] = { htonl(PRIV_MAGIC), htonl((uint32_t)plane), htonl((uint32_t)ctx->rank),
			  htonl((uint32_t)ctx->size) };

	memcpy(p, v, PRIV_LEN);
}

static int priv_decode(const uint8_t *p, size_t len, uint32_t *plane, uint32_t *rank,
		       uint32_t *size)
{
	uint32_t v[4];

	if (len < PRIV_LEN)
		return -EBADMSG;
	memcpy(v, p, PRIV_LEN);
	if (ntohl(v[0]) != PRIV_MAGIC)
		return -EBADMSG;
	*plane = ntohl(v[1]);
	*rank = ntohl(v[2]);
	*size = ntohl(v[3]);
	return 0;
}

void tr_conn_init(struct triad_ctx *ctx, struct tr_conn *c, int peer, int plane)
{
	memset(c, 0, sizeof(*c));
	c->ctx = ctx;
	c->peer = peer;
	c->plane = plane;
	c->down_status = TRIAD_S_UNREACHABLE;
	tr_list_init(&c->msgq);
	tr_list_init(&c->rmaq);
}

/* ---- resources -----------------------------------------------------------------*/
static int setup_qp(struct tr_conn *c, struct rdma_cm_id *id)
{
	struct triad_ctx *ctx = c->ctx;
	struct tr_plane *pl = &ctx->plane[c->plane];
	int nrx = ctx->cfg.rx_depth, ntx = ctx->cfg.sq_depth, i;
	struct ibv_qp_init_attr attr = {
		.send_cq = pl->cq,
		.recv_cq = pl->cq,
		.cap = { .max_send_wr = (uint32_t)ntx, .max_recv_wr = (uint32_t)nrx,
			 .max_send_sge = 1, .max_recv_sge = 1, .max_inline_data = 64 },
		.qp_type = IBV_QPT_RC,
	};
	uint8_t tmo = (uint8_t)ctx->cfg.ack_timeout;

	if (id->verbs != pl->verbs) {
		/* The routing trap of a one-host fabric (FABRIC.md): rdma_cm picked
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
	c->sq_avail = ntx;

	if (posix_memalign((void **)&c->bufmem, 4096, (size_t)(nrx + ntx) * TR_WIRE_MAX_LEN))
		c->bufmem = NULL;
	c->rx = calloc((size_t)nrx, sizeof(*c->rx));
	c->tx = calloc((size_t)ntx, sizeof(*c->tx));
	if (!c->bufmem || !c->rx || !c->tx)
		goto nomem;
	c->buf_mr = tr_mr_reg(pl, c->bufmem, (size_t)(nrx + ntx) * TR_WIRE_MAX_LEN,
			      IBV_ACCESS_LOCAL_WRITE);
	if (!c->buf_mr)
		goto nomem;
	for (i = 0; i < nrx; i++) {
		c->rx[i].conn = c;
		c->rx[i].data = c->bufmem + (size_t)i * TR_WIRE_MAX_LEN;
	}
	c->tx_free = NULL;
	for (i = ntx - 1; i >= 0; i--) {
		c->tx[i].conn = c;
		c->tx[i].data = c->bufmem + (size_t)(nrx + i) * TR_WIRE_MAX_LEN;
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
	while (!tr_list_empty(&c->msgq)) {
		struct queued_msg *q = tr_list_first(&c->msgq, struct queued_msg, link);

		tr_list_del(&q->link);
		free(q);
	}
}

static int post_recv(struct tr_buf *b)
{
	struct tr_conn *c = b->conn;
	struct ibv_sge sge = { (uintptr_t)b->data, TR_WIRE_MAX_LEN, c->buf_mr->lkey };
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

static void established(struct tr_conn *c)
{
	int i;

	for (i = 0; i < c->ctx->cfg.rx_depth; i++) {
		if (post_recv(&c->rx[i])) {
			tr_conn_fail(c, TRIAD_S_TRANSPORT);
			return;
		}
	}
	tr_info("peer %d plane %d: connected, qp 0x%x", c->peer, c->plane, c->qp->qp_num);
	set_state(c, TR_CONN_UP);
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
	double delay = 0.05 * c->attempts;

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
	uint32_t plane, rank, size;
	struct tr_conn *c;
	struct rdma_conn_param param = {
		.responder_resources = (uint8_t)pl->max_rd_atom,
		.initiator_depth = (uint8_t)pl->max_init_rd_atom,
		.retry_count = (uint8_t)ctx->cfg.retry_count,
		.rnr_retry_count = 7,
	};

	if (priv_decode(priv, len, &plane, &rank, &size)) {
		tr_warn("plane %d: connection request without triad private data: rejected",
			pl->index);
		goto reject;
	}
	if (size != (uint32_t)ctx->size || rank >= size || (int)rank >= ctx->rank ||
	    plane != (uint32_t)pl->index) {
		tr_warn("plane %d: connection request from rank %u plane %u world %u does not "
			"fit this world (%d ranks, rank %d): rejected",
			pl->index, rank, plane, size, ctx->size, ctx->rank);
		goto reject;
	}
	c = &ctx->peers[rank].conn[plane];
	if (c->state != TR_CONN_DOWN) {
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

		if (type == RDMA_CM_EVENT_CONNECT_REQUEST) {
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
		case RDMA_CM_EVENT_ESTABLISHED:
			established(c);
			break;
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
	if (c->state == TR_CONN_DRAINING && c->sq_posted == 0 && c->rq_posted == 0) {
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
	/* Error state flushes everything posted; tell the peer too. */
	if (ibv_modify_qp(c->qp, &attr, IBV_QP_STATE))
		tr_warn("peer %d plane %d: ibv_modify_qp(ERR): %m", c->peer, c->plane);
	rdma_disconnect(c->id);
	while (!tr_list_empty(&c->msgq)) {
		struct queued_msg *q = tr_list_first(&c->msgq, struct queued_msg, link);

		tr_list_del(&q->link);
		tr_core_msg_lost(c, q->data, q->len);
		free(q);
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
	conn_break(c, TRIAD_S_UNREACHABLE);
}

int tr_conn_idle(const struct tr_conn *c)
{
	return c->state != TR_CONN_UP || (c->sq_posted == 0 && tr_list_empty(&c->msgq));
}

void tr_conn_destroy(struct tr_conn *c)
{
	if (c->state == TR_CONN_UP)
		rdma_disconnect(c->id);
	release(c);
	c->state = TR_CONN_FAILED;
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
	int ret = ibv_post_send(c->qp, &wr, &bad);

	if (ret) {
		tr_error("peer %d plane %d: ibv_post_send: %s", c->peer, c->plane, strerror(ret));
		return -ret;
	}
	b->len = len;
	c->sq_avail--;
	c->sq_posted++;
	c->stats.tx_msgs++;
	c->stats.tx_bytes += (uint64_t)len;
	return 0;
}

/* Sends queued messages while there are buffers and send queue room. */
static void flush_msgq(struct tr_conn *c)
{
	while (c->state == TR_CONN_UP && !tr_list_empty(&c->msgq) && c->tx_free && c->sq_avail) {
		struct queued_msg *q = tr_list_first(&c->msgq, struct queued_msg, link);
		struct tr_buf *b = c->tx_free;

		memcpy(b->data, q->data, (size_t)q->len);
		if (post_send(c, b, q->len)) {
			tr_conn_fail(c, TRIAD_S_TRANSPORT);
			return;
		}
		c->tx_free = b->next_free;
		tr_list_del(&q->link);
		free(q);
	}
}

int tr_conn_send_raw(struct tr_conn *c, const void *data, int len)
{
	struct queued_msg *q;

	if (c->state != TR_CONN_UP)
		return -ENOTCONN;
	if (len <= 0 || len > TR_WIRE_MAX_LEN)
		return -EINVAL;
	if (tr_list_empty(&c->msgq) && c->tx_free && c->sq_avail) {
		struct tr_buf *b = c->tx_free;

		memcpy(b->data, data, (size_t)len);
		if (post_send(c, b, len))
			return -EIO;
		c->tx_free = b->next_free;
		return 0;
	}
	q = malloc(sizeof(*q));
	if (!q)
		return -ENOMEM;
	memcpy(q->data, data, (size_t)len);
	q->len = len;
	tr_list_add_tail(&c->msgq, &q->link);
	return 0;
}

int tr_conn_send(struct tr_conn *c, struct tr_msg *m)
{
	struct tr_peer *p = &c->ctx->peers[c->peer];
	char buf[TR_WIRE_MAX_LEN];
	int len, ret;

	m->seq = p->tx_seq;
	len = tr_msg_encode(m, buf, sizeof(buf));
	if (len < 0)
		return len;
	ret = tr_conn_send_raw(c, buf, len);
	if (!ret)
		p->tx_seq++;
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
	if (!c->sq_avail)
		return -EAGAIN;
	if (op == IBV_WR_RDMA_WRITE && len <= c->max_inline)
		wr.send_flags |= IBV_SEND_INLINE;
	ret = ibv_post_send(c->qp, &wr, &bad);
	if (ret) {
		tr_error("peer %d plane %d: ibv_post_send(%s, %u bytes): %s", c->peer, c->plane,
			 op == IBV_WR_RDMA_WRITE ? "WRITE" : "READ", len, strerror(ret));
		return -ret;
	}
	c->sq_avail--;
	c->sq_posted++;
	return 0;
}

/* ---- completions ---------------------------------------------------------------------*/
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
		c->stats.errors++;
		tr_warn("peer %d plane %d: dropped a malformed message (%u bytes): %s", c->peer,
			c->plane, wc->byte_len, strerror(-ret));
	}
	/* Repost before handling: the handler may break the connection. */
	if (c->state == TR_CONN_UP && post_recv(b))
		tr_conn_fail(c, TRIAD_S_TRANSPORT);
	if (!ret)
		tr_core_msg(c, &m);
}

void tr_conn_on_send(struct tr_buf *b, const struct ibv_wc *wc, enum triad_status st)
{
	struct tr_conn *c = b->conn;

	c->sq_posted--;
	c->sq_avail++;
	b->next_free = c->tx_free;
	c->tx_free = b;
	if (wc->status != IBV_WC_SUCCESS) {
		if (wc->status != IBV_WC_WR_FLUSH_ERR) {
			c->stats.errors++;
			tr_warn("peer %d plane %d: send failed: %s", c->peer, c->plane,
				ibv_wc_status_str(wc->status));
			tr_conn_fail(c, st);
		}
		/* It may or may not have arrived; the core sends it again on another
		 * plane and the receiver drops a duplicate by its sequence number. */
		tr_core_msg_lost(c, b->data, b->len);
		check_drained(c);
		return;
	}
	flush_msgq(c);
	tr_core_sq_room(c);
}

void tr_conn_on_rma(struct triad_req *req, const struct ibv_wc *wc, enum triad_status st)
{
	struct tr_conn *c = req->conn;

	c->sq_posted--;
	c->sq_avail++;
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
		flush_msgq(c);
		tr_core_sq_room(c);
	}
	check_drained(c);
}
