/* rdma_cm: the active side's steps (address, route, QP, connect), the
 * passive side's accept, and the events that reach the owner through
 * ops->on_cm.  No work request is posted before ESTABLISHED, so a failed
 * attempt owns nothing on the wire and its QP is released at once. */
#include <arpa/inet.h>
#include <errno.h>
#include <string.h>

#include "base/log.h"
#include "fabric/internal.h"

/* The reason of a CM rejection (RDMA_CM_EVENT_REJECTED's status) sent by
 * the CM itself when no id listens on the service (InfiniBand
 * Architecture, REJ reason 8; the kernel's IB_CM_REJ_INVALID_SERVICE_ID,
 * which no user header exports). */
#define REJ_INVALID_SERVICE_ID 8

#define RESOLVE_TIMEOUT_MS 5000

static const char *const cm_names[] = {
	[TR_CM_ACCEPTED] = "accepted",	       [TR_CM_ESTABLISHED] = "established",
	[TR_CM_FAILED] = "failed",	       [TR_CM_DISCONNECTED] = "disconnected",
	[TR_CM_DEVICE_REMOVED] = "device removed", [TR_CM_NO_LISTENER] = "nothing listens there",
};

const char *tr_cm_event_str(enum tr_cm_event ev)
{
	return (unsigned)ev < sizeof(cm_names) / sizeof(cm_names[0]) ? cm_names[ev] : "?";
}

static void report(struct tr_qp *qp, enum tr_cm_event ev, const uint8_t *priv, size_t len,
		   const char *why)
{
	struct tr_fab *fab = qp->fab;

	fab->ops->on_cm(fab->arg, qp->owner, qp, ev, priv, len, why);
}

static void conn_param(const struct tr_qp *qp, struct rdma_conn_param *p)
{
	const struct tr_fab_plane *pl = &qp->fab->plane[qp->plane];

	memset(p, 0, sizeof(*p));
	p->private_data = qp->priv;
	p->private_data_len = (uint8_t)qp->priv_len;
	p->responder_resources = (uint8_t)pl->max_rd_atom;
	p->initiator_depth = (uint8_t)pl->max_init_rd_atom;
	p->retry_count = (uint8_t)qp->fab->cfg.retry_count;
	p->rnr_retry_count = 7; /* infinite: receive buffers are posted at ESTABLISHED */
}

int tr_fab_connect(struct tr_fab *fab, int plane, struct in_addr dst_addr, uint16_t port,
		   const uint8_t *priv, size_t len, void *owner, struct tr_qp **qp_p)
{
	struct sockaddr_in src = fab->plane[plane].addr, dst = src;
	struct tr_qp *qp;
	int ret;

	if (len > TR_FAB_PRIV_MAX)
		return -EINVAL;
	qp = tr_qp_new(fab, plane, owner);
	if (!qp)
		return -ENOMEM;
	memcpy(qp->priv, priv, len);
	qp->priv_len = len;
	if (rdma_create_id(fab->cm_chan, &qp->id, qp, RDMA_PS_TCP)) {
		ret = -errno;
		tr_error("plane %d: rdma_create_id: %m", plane);
		qp->id = NULL;
		tr_qp_release(qp);
		return ret;
	}
	src.sin_port = 0;
	dst.sin_addr = dst_addr;
	dst.sin_port = htons(port);
	/* Bind the source address: on a one-host fabric this is what keeps the
	 * connection on this plane's device. */
	if (rdma_resolve_addr(qp->id, (struct sockaddr *)&src, (struct sockaddr *)&dst,
			      RESOLVE_TIMEOUT_MS)) {
		tr_warn("plane %d: rdma_resolve_addr: %m", plane);
		tr_qp_release(qp);
		return -EAGAIN; /* worth another attempt */
	}
	*qp_p = qp;
	return 0;
}

static void on_addr_resolved(struct tr_qp *qp)
{
	if (rdma_resolve_route(qp->id, RESOLVE_TIMEOUT_MS))
		report(qp, TR_CM_FAILED, NULL, 0, "rdma_resolve_route");
}

static void on_route_resolved(struct tr_qp *qp)
{
	struct rdma_conn_param param;

	if (tr_qp_setup(qp, qp->id)) {
		report(qp, TR_CM_FAILED, NULL, 0, "QP setup");
		return;
	}
	conn_param(qp, &param);
	if (rdma_connect(qp->id, &param))
		report(qp, TR_CM_FAILED, NULL, 0, "rdma_connect");
}

/* The IB CM gives an RC QP the shortest RNR NAK timer of 655 ms (its
 * encoding 0).  A message that comes before the receiver posted its
 * buffers (posted at ESTABLISHED; the active side sends its first buffer
 * status at its own ESTABLISHED, before the passive side has seen the RTU)
 * then waits that long, and so does everything behind it on the QP: the
 * first message of every connection, on the critical path of a lazy first
 * use (the first put took 536 ms eager, 723 ms lazy).  0.64 ms instead
 * (encoding 12); the retries are unlimited (conn_param). */
#define MIN_RNR_TIMER 12

static void short_rnr_timer(const struct tr_qp *qp)
{
	struct ibv_qp_attr attr = { .min_rnr_timer = MIN_RNR_TIMER };
	int ret = ibv_modify_qp(qp->qp, &attr, IBV_QP_MIN_RNR_TIMER);

	if (ret)
		tr_debug("plane %d qp 0x%x: RNR timer left at 655 ms: %s", qp->plane,
			 qp->qp->qp_num, strerror(ret));
}

static void reject(const struct tr_fab_plane *pl, struct rdma_cm_id *id, const uint8_t *priv,
		   size_t len)
{
	if (rdma_reject(id, len ? priv : NULL, (uint8_t)len))
		tr_debug("plane %d: rdma_reject: %m", pl->index);
}

static void on_connect_request(struct tr_fab *fab, struct tr_fab_plane *pl,
			       struct rdma_cm_id *id, const uint8_t *priv, size_t len,
			       uint32_t remote_qpn)
{
	uint8_t reply[TR_FAB_PRIV_MAX];
	size_t reply_len = 0;
	struct rdma_conn_param param;
	struct tr_qp *qp;
	void *owner = fab->ops->on_conn_request(fab->arg, pl->index, priv, len, reply,
						&reply_len);

	if (!owner || !(qp = tr_qp_new(fab, pl->index, owner))) {
		/* The owner may say why (a request of another job, say). */
		reject(pl, id, reply, owner ? 0 : reply_len);
		if (rdma_destroy_id(id))
			tr_warn("plane %d: rdma_destroy_id: %m", pl->index);
		return;
	}
	id->context = qp;
	qp->remote_qpn = remote_qpn;
	if (tr_qp_setup(qp, id)) {
		reject(pl, id, NULL, 0);
		if (!qp->id && rdma_destroy_id(id))
			tr_warn("plane %d: rdma_destroy_id: %m", pl->index);
		tr_qp_release(qp);
		return;
	}
	memcpy(qp->priv, reply, reply_len);
	qp->priv_len = reply_len;
	conn_param(qp, &param);
	if (rdma_accept(id, &param)) {
		tr_warn("plane %d: rdma_accept: %m", pl->index);
		tr_qp_release(qp);
		return;
	}
	short_rnr_timer(qp); /* in RTS now, before the peer can send */
	/* The owner learns of its QP now; the request's data comes with it. */
	report(qp, TR_CM_ACCEPTED, priv, len, NULL);
}

static int is_listener(const struct tr_fab *fab, const struct rdma_cm_id *id)
{
	for (int i = 0; i < TRIAD_MAX_PLANES; i++)
		if (fab->plane[i].listen_id == id)
			return 1;
	return 0;
}

void tr_fab_cm_dispatch(struct tr_fab *fab)
{
	struct rdma_cm_event *ev;

	while (rdma_get_cm_event(fab->cm_chan, &ev) == 0) {
		/* Copy what we need and ack first: an id may be destroyed below,
		 * which would wait forever for an unacknowledged event.  The QP
		 * too, while the id cannot go yet: a retired QP's id may be
		 * destroyed on another thread as soon as the event is acked
		 * (tr_fab_qp_free), and its context says NULL already. */
		enum rdma_cm_event_type type = ev->event;
		struct rdma_cm_id *id = ev->id, *listen = ev->listen_id;
		struct tr_qp *qp = id->context;
		uint8_t priv[TR_FAB_PRIV_MAX];
		size_t plen = 0;
		int status = ev->status;
		uint32_t remote_qpn = 0; /* the other end's QP: in a request, an accept */

		if (type == RDMA_CM_EVENT_CONNECT_REQUEST || type == RDMA_CM_EVENT_ESTABLISHED ||
		    type == RDMA_CM_EVENT_REJECTED) {
			remote_qpn = ev->param.conn.qp_num;
			plen = ev->param.conn.private_data_len;
			if (plen > sizeof(priv))
				plen = sizeof(priv);
			if (plen)
				memcpy(priv, ev->param.conn.private_data, plen);
		}
		if (rdma_ack_cm_event(ev))
			tr_warn("rdma_ack_cm_event: %m");

		if (type == RDMA_CM_EVENT_CONNECT_REQUEST) {
			on_connect_request(fab, listen->context, id, priv, plen, remote_qpn);
			continue;
		}
		if (is_listener(fab, id)) {
			tr_warn("cm event %s on a listener", rdma_event_str(type));
			continue;
		}
		if (!qp || qp->id != id) {
			tr_debug("cm event %s for a stale id", rdma_event_str(type));
			continue;
		}
		tr_debug("plane %d: %s (status %d)", qp->plane, rdma_event_str(type), status);
		switch (type) {
		case RDMA_CM_EVENT_ADDR_RESOLVED:
			on_addr_resolved(qp);
			break;
		case RDMA_CM_EVENT_ROUTE_RESOLVED:
			on_route_resolved(qp);
			break;
		case RDMA_CM_EVENT_ESTABLISHED:
			short_rnr_timer(qp); /* the active side's (the passive's again) */
			qp->connected = 1;
			if (!qp->remote_qpn) /* the active side learns it now */
				qp->remote_qpn = remote_qpn;
			report(qp, TR_CM_ESTABLISHED, priv, plen, NULL);
			break;
		case RDMA_CM_EVENT_REJECTED:
			/* With the passive side's reason, when it gave one.  The
			 * CM's own "invalid service ID" says no id listens on the
			 * port: no process there (rdma_reject's is "consumer
			 * defined"). */
			report(qp, status == REJ_INVALID_SERVICE_ID ? TR_CM_NO_LISTENER
									  : TR_CM_FAILED,
			       priv, plen, rdma_event_str(type));
			break;
		case RDMA_CM_EVENT_ADDR_ERROR:
		case RDMA_CM_EVENT_ROUTE_ERROR:
		case RDMA_CM_EVENT_UNREACHABLE:
		case RDMA_CM_EVENT_CONNECT_ERROR:
			report(qp, TR_CM_FAILED, NULL, 0, rdma_event_str(type));
			break;
		case RDMA_CM_EVENT_DISCONNECTED:
			report(qp, TR_CM_DISCONNECTED, NULL, 0, NULL);
			break;
		case RDMA_CM_EVENT_DEVICE_REMOVAL:
			report(qp, TR_CM_DEVICE_REMOVED, NULL, 0, NULL);
			break;
		default:
			break;
		}
	}
}
