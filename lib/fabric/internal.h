/* The fabric's objects, shared between its own files only. */
#ifndef TRIAD_FABRIC_INTERNAL_H
#define TRIAD_FABRIC_INTERNAL_H

#include <infiniband/verbs.h>
#include <rdma/rdma_cma.h>

#include "fabric/fabric.h"

/* Soft-RoCE's vendor id (the kernel's rxe reports it for every device).  Its
 * requester may report a READ complete without its data: a response it
 * cannot place (a partial READ's retry, an acknowledgement in the middle of
 * a READ's responses) ends the READ through its error path with the status
 * still "success", and only then fails the QP (rxe_comp.c, COMPST_ERROR;
 * seen in CI as a get whose buffer stayed unwritten, right before its
 * connection broke with no error of its own).  tr_fab_qp_read_wrs. */
#define RXE_VENDOR_ID 0xffffffu

struct tr_fab_plane {
	struct tr_fab *fab;
	int index;
	int open;
	struct sockaddr_in addr; /* this rank's address on the plane */
	struct rdma_cm_id *listen_id;
	struct ibv_context *verbs;
	uint8_t port_num;
	int port_up;
	int armed;	/* the receive CQ raises an event on its next completion */
	int sarmed;	/* the send CQ likewise */
	int owns_async; /* first plane on its device: watches its async events */
	char devname[64];
	struct ibv_pd *pd;
	struct ibv_comp_channel *chan; /* both CQs' events */
	struct ibv_cq *cq;  /* receive completions */
	struct ibv_cq *scq; /* send, WRITE and READ completions */
	int max_rd_atom, max_init_rd_atom;
	int read_check; /* READs get a zero-length READ behind them (tr_fab_qp_read_wrs) */
};

struct tr_fab {
	const struct tr_fab_ops *ops;
	void *arg;
	struct tr_fab_cfg cfg;
	struct rdma_event_channel *cm_chan;
	struct tr_fab_plane plane[TRIAD_MAX_PLANES];
};

struct tr_qp {
	struct tr_fab *fab;
	int plane;
	void *owner;
	struct rdma_cm_id *id;
	struct ibv_qp *qp;
	uint32_t max_inline;
	int read_check; /* its plane's, kept here for the post path */
	int connected; /* ESTABLISHED seen, not yet disconnected */
	uint32_t remote_qpn; /* the other end's QP number, once known (0 before) */
	uint8_t priv[TR_FAB_PRIV_MAX];
	size_t priv_len;
};

struct tr_mr {
	struct ibv_mr *mr;
};

/* qp.c */
struct tr_qp *tr_qp_new(struct tr_fab *fab, int plane, void *owner);
/* Creates the QP on the id's device; -EXDEV when rdma_cm chose another
 * device than the plane's (the routing trap of a one-host fabric). */
int tr_qp_setup(struct tr_qp *qp, struct rdma_cm_id *id);
void tr_qp_release(struct tr_qp *qp); /* frees everything, qp included */

#endif
