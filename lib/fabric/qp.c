/* QPs: creation on the plane's device, the error state, release, and the
 * posts.  Every post carries the caller's opaque cookie, returned in its
 * completion; every send-queue post is signalled. */
#include <endian.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "base/log.h"
#include "fabric/internal.h"

struct tr_qp *tr_qp_new(struct tr_fab *fab, int plane, void *owner)
{
	struct tr_qp *qp = calloc(1, sizeof(*qp));

	if (qp) {
		qp->fab = fab;
		qp->plane = plane;
		qp->owner = owner;
	}
	return qp;
}

int tr_qp_setup(struct tr_qp *qp, struct rdma_cm_id *id)
{
	struct tr_fab *fab = qp->fab;
	struct tr_fab_plane *pl = &fab->plane[qp->plane];
	struct ibv_qp_init_attr attr = {
		.send_cq = pl->scq,
		.recv_cq = pl->cq,
		.cap = { .max_send_wr = (uint32_t)fab->cfg.sq_depth,
			 .max_recv_wr = (uint32_t)fab->cfg.rq_depth,
			 .max_send_sge = 1, .max_recv_sge = 1, .max_inline_data = 64 },
		.qp_type = IBV_QPT_RC,
	};
	uint8_t tmo = (uint8_t)fab->cfg.ack_timeout;

	if (id->verbs != pl->verbs) {
		/* The routing trap of a one-host fabric (docs/fabric.md): rdma_cm
		 * picked another device than the plane's own. */
		tr_error("plane %d: rdma_cm chose device %s, the plane is %s; fix the routing "
			 "(one table per address)", qp->plane,
			 id->verbs ? ibv_get_device_name(id->verbs->device) : "none", pl->devname);
		return -EXDEV;
	}
	if (rdma_create_qp(id, pl->pd, &attr)) {
		attr.cap.max_inline_data = 0;
		if (rdma_create_qp(id, pl->pd, &attr)) {
			int ret = -errno;

			tr_error("plane %d: rdma_create_qp: %m", qp->plane);
			return ret;
		}
	}
	if (rdma_set_option(id, RDMA_OPTION_ID, RDMA_OPTION_ID_ACK_TIMEOUT, &tmo, sizeof(tmo)))
		tr_warn("plane %d qp 0x%x: cannot set the ack timeout: %m", qp->plane,
			id->qp->qp_num);
	qp->id = id;
	qp->qp = id->qp;
	qp->max_inline = attr.cap.max_inline_data;
	qp->read_check = pl->read_check;
	return 0;
}

void tr_qp_release(struct tr_qp *qp)
{
	if (qp->qp)
		rdma_destroy_qp(qp->id); /* void: nothing to check */
	if (qp->id && rdma_destroy_id(qp->id))
		tr_warn("plane %d: rdma_destroy_id: %m", qp->plane);
	free(qp);
}

/* Disconnect fails when the peer's disconnect already completed the
 * exchange: not worth more than a debug line. */
static void disconnect(struct tr_qp *qp)
{
	qp->connected = 0;
	if (rdma_disconnect(qp->id))
		tr_debug("plane %d: rdma_disconnect: %m", qp->plane);
}

static void to_error(struct tr_qp *qp)
{
	struct ibv_qp_attr attr = { .qp_state = IBV_QPS_ERR };
	int ret;

	if (qp->qp && (ret = ibv_modify_qp(qp->qp, &attr, IBV_QP_STATE)))
		tr_warn("plane %d qp 0x%x: ibv_modify_qp(ERR): %s", qp->plane, qp->qp->qp_num,
			strerror(ret));
}

void tr_fab_qp_break(struct tr_qp *qp)
{
	/* The send CQ must raise an event for the flushed sends. */
	tr_fab_plane_arm(qp->fab, qp->plane, TR_FAB_CQ_SEND);
	to_error(qp);
	if (qp->connected)
		disconnect(qp);
}

void tr_fab_qp_reflush(struct tr_qp *qp)
{
	tr_fab_plane_arm(qp->fab, qp->plane, TR_FAB_CQ_SEND);
	to_error(qp); /* error to error is a valid transition (IBTA 10.3.1) */
}

int tr_fab_qp_refuse_writes(struct tr_qp *qp)
{
	/* READs stay allowed: only the peer's WRITEs meet the fault. */
	struct ibv_qp_attr attr = { .qp_access_flags = IBV_ACCESS_REMOTE_READ };
	int ret;

	if (!qp->qp)
		return -ENOTCONN;
	ret = ibv_modify_qp(qp->qp, &attr, IBV_QP_ACCESS_FLAGS);
	if (ret) {
		struct ibv_qp_init_attr init;
		struct ibv_qp_attr now;

		/* A QP the NIC moved to the error state already (a fault whose
		 * completions nobody polled yet) takes no change, and refuses
		 * everything anyway: done. */
		if (!ibv_query_qp(qp->qp, &now, IBV_QP_STATE, &init) &&
		    (now.qp_state == IBV_QPS_ERR || now.qp_state == IBV_QPS_SQE))
			return 0;
		tr_warn("plane %d qp 0x%x: ibv_modify_qp(access flags): %s", qp->plane,
			qp->qp->qp_num, strerror(ret));
		return -ret;
	}
	return 0;
}

void tr_fab_qp_retire(struct tr_qp *qp)
{
	if (qp->connected)
		disconnect(qp);
	/* tr_fab_cm_dispatch takes an event whose id has no context for a
	 * stale one, and reads the context before it acknowledges the event:
	 * until then rdma_destroy_id, on the thread that frees the QP, waits. */
	if (qp->id)
		qp->id->context = NULL;
}

void tr_fab_qp_free(struct tr_qp *qp)
{
	tr_qp_release(qp);
}

void tr_fab_qp_destroy(struct tr_qp *qp)
{
	if (!qp)
		return;
	tr_fab_qp_retire(qp);
	tr_fab_qp_free(qp);
}

uint32_t tr_fab_qp_num(const struct tr_qp *qp)
{
	return qp->qp ? qp->qp->qp_num : 0;
}

uint32_t tr_fab_qp_remote_num(const struct tr_qp *qp)
{
	return qp->remote_qpn;
}

uint32_t tr_fab_qp_max_inline(const struct tr_qp *qp)
{
	return qp->max_inline;
}

unsigned tr_fab_qp_read_wrs(const struct tr_qp *qp)
{
	return qp->read_check ? 2 : 1;
}

int tr_fab_post_recv(struct tr_qp *qp, void *addr, uint32_t len, const struct tr_mr *mr,
		     uint64_t cookie)
{
	struct ibv_sge sge = { (uintptr_t)addr, len, mr->mr->lkey };
	struct ibv_recv_wr wr = { .wr_id = cookie, .sg_list = &sge, .num_sge = 1 };
	struct ibv_recv_wr *bad;
	int ret = ibv_post_recv(qp->qp, &wr, &bad);

	if (ret) {
		tr_error("plane %d qp 0x%x: ibv_post_recv: %s", qp->plane, qp->qp->qp_num,
			 strerror(ret));
		return -ret;
	}
	return 0;
}

/* Posts the chain at wr: 0, or the negative errno of the first that could
 * not be posted (logged); *posted (if asked) counts those that were. */
static int post_n(struct tr_qp *qp, struct ibv_send_wr *wr, const char *what, unsigned *posted)
{
	struct ibv_send_wr *bad = NULL;
	int ret = ibv_post_send(qp->qp, wr, &bad);

	if (posted) {
		*posted = 0;
		for (struct ibv_send_wr *w = wr; w && w != bad; w = w->next)
			(*posted)++;
	}
	if (ret) {
		tr_error("plane %d qp 0x%x: ibv_post_send(%s, %u bytes): %s", qp->plane,
			 qp->qp->qp_num, what, bad && bad->num_sge ? bad->sg_list->length : 0,
			 strerror(ret));
		return -ret;
	}
	return 0;
}

static int post(struct tr_qp *qp, struct ibv_send_wr *wr, const char *what)
{
	return post_n(qp, wr, what, NULL);
}

int tr_fab_post_send(struct tr_qp *qp, const void *addr, uint32_t len, const struct tr_mr *mr,
		     uint64_t cookie, const uint32_t *imm)
{
	struct ibv_sge sge = { (uintptr_t)addr, len, mr ? mr->mr->lkey : 0 };
	struct ibv_send_wr wr = {
		.wr_id = cookie,
		.sg_list = &sge,
		.num_sge = 1,
		.opcode = imm ? IBV_WR_SEND_WITH_IMM : IBV_WR_SEND,
		.send_flags = IBV_SEND_SIGNALED | (len <= qp->max_inline ? IBV_SEND_INLINE : 0),
		.imm_data = imm ? htobe32(*imm) : 0,
	};

	return post(qp, &wr, "SEND");
}

/* A READ and its check (tr_fab_qp_read_wrs): a zero-length READ of the
 * same cookie behind it, nothing to read and nothing to place.  Kept off
 * the path of the others. */
static __attribute__((noinline)) int post_checked_read(struct tr_qp *qp, struct ibv_send_wr *wr)
{
	struct ibv_send_wr check = {
		.wr_id = wr->wr_id,
		.opcode = IBV_WR_RDMA_READ,
		.send_flags = IBV_SEND_SIGNALED,
		.wr.rdma = wr->wr.rdma,
	};
	unsigned n;
	int ret;

	wr->next = &check;
	ret = post_n(qp, wr, "READ", &n);
	/* The READ went without its check: it is done once, unchecked. */
	return n ? (int)n : ret;
}

int tr_fab_post_rma(struct tr_qp *qp, enum tr_rma_op op, void *laddr, uint32_t len,
		    const struct tr_mr *mr, uint64_t raddr, uint32_t rkey, uint64_t cookie,
		    int signalled)
{
	struct ibv_sge sge = { (uintptr_t)laddr, len, mr ? mr->mr->lkey : 0 };
	struct ibv_send_wr wr = {
		.wr_id = cookie,
		.sg_list = &sge,
		.num_sge = 1,
		.opcode = op == TR_RMA_READ ? IBV_WR_RDMA_READ : IBV_WR_RDMA_WRITE,
		.send_flags = signalled || op == TR_RMA_READ ? IBV_SEND_SIGNALED : 0,
		.wr.rdma = { .remote_addr = raddr, .rkey = rkey },
	};

	int ret;

	if (op == TR_RMA_READ && qp->read_check)
		return post_checked_read(qp, &wr);
	if (op == TR_RMA_WRITE && len <= qp->max_inline)
		wr.send_flags |= IBV_SEND_INLINE;
	ret = post(qp, &wr, op == TR_RMA_READ ? "READ" : "WRITE");
	return ret ? ret : 1;
}
