/* The fabric layer: the only code that calls libibverbs and librdmacm.
 *
 * A plane is one local RDMA device/port with one IPv4 address: a PD, a CQ
 * with its completion channel, and an rdma_cm listener.  A connection is one
 * RC QP to one peer on one plane, with a ring of registered buffers for
 * control messages.  The layer executes what the core asks (send a message,
 * post an RDMA WRITE/READ) and turns completions and rdma_cm events into
 * calls of the tr_core_* functions below.  Every function here is called
 * with the context lock held. */
#ifndef TRIAD_FABRIC_H
#define TRIAD_FABRIC_H

#include <ev.h>
#include <infiniband/verbs.h>
#include <netinet/in.h>
#include <rdma/rdma_cma.h>
#include <stdint.h>

#include "core/list.h"
#include "proto/fc.h"
#include "proto/wire.h"
#include "triad.h"

struct triad_ctx;
struct triad_req;

enum tr_conn_state {
	TR_CONN_DOWN,	    /* nothing yet (passive side waits for the peer) */
	TR_CONN_CONNECTING, /* active side: resolving or connecting */
	TR_CONN_ACCEPTING,  /* passive side: accepted, not yet established */
	TR_CONN_UP,
	TR_CONN_DRAINING,   /* broken: waiting for the flushed work requests */
	TR_CONN_FAILED,	    /* resources released; operations fail at once */
};
const char *tr_conn_state_str(enum tr_conn_state s);

struct tr_plane {
	struct triad_ctx *ctx;
	int index;
	struct sockaddr_in addr; /* this rank's address on the plane */
	struct rdma_cm_id *listen_id;
	struct ibv_context *verbs;
	uint8_t port_num;
	int port_up;
	int armed;	/* the receive CQ will raise an event on its next completion */
	int sarmed;	/* the send CQ likewise */
	int owns_async; /* first plane on its device: watches its async events */
	char devname[64];
	struct ibv_pd *pd;
	struct ibv_comp_channel *chan; /* both CQs' events */
	struct ibv_cq *cq;  /* receive completions */
	struct ibv_cq *scq; /* send, WRITE and READ completions */
	int max_rd_atom, max_init_rd_atom;
	ev_io cq_w, async_w;
};

/* Registered buffer for one message; wr_id = address | tag.  A receive
 * buffer whose message a handler kept is the triad_am_msg_t handle. */
struct tr_buf {
	struct tr_conn *conn;
	char *data;
	int len;		/* of the message in it */
	uint8_t slot;		/* the flow-control slot it occupies */
	uint8_t prio;
	struct triad_req *req;	/* send: completes when the message arrived */
	struct tr_buf *next_free;
};

/* What each side tells the other when connecting (rdma_cm private data). */
struct tr_conn_priv {
	uint32_t plane, rank, size, slots, slot_size;
};

struct tr_conn {
	struct triad_ctx *ctx;
	int peer;
	int plane;
	enum tr_conn_state state;
	enum triad_status down_status; /* why it broke */
	struct rdma_cm_id *id;
	struct ibv_qp *qp;
	uint32_t max_inline;
	int sq_avail;  /* send work requests that may still be posted */
	int sq_posted; /* posted and not yet completed (incl. flushed) */
	int rq_posted;
	int rx_held;   /* receive buffers a handler kept */
	char *bufmem;
	struct ibv_mr *buf_mr;
	int nrx, ntx;
	struct tr_buf *rx, *tx, *tx_free;
	/* Flow control: our sends into the peer's slots, and the peer's into ours. */
	struct tr_fc_tx fc_tx;
	struct tr_fc_rx fc_rx;
	unsigned rx_need[TR_FC_NPRIO]; /* the peer's thresholds on our slots */
	unsigned peer_slots, peer_slot_size; /* from the peer's connect data */
	struct tr_conn_priv accept_priv;     /* passive side: the request's */
	int bsm_inflight; /* standalone BSMs posted, not completed */
	int rma_posted;	  /* WRITEs and READs posted, not completed */
	int req_msgs;	  /* messages with a request posted, not completed */
	int bsm_linger;	  /* a BSM is due but waits to cover more slots */
	struct tr_list msgq[TR_FC_NPRIO]; /* encoded messages waiting for a slot */
	unsigned nqueued;
	struct tr_list rmaq; /* requests with chunks left to post (core's) */
	struct triad_conn_stats stats;
	ev_timer retry_w;
	ev_tstamp deadline;
	int attempts;
	int want_reconnect; /* broken after start-up: the progress thread retries */
	int peer_closed;    /* it broke because the peer disconnected */
};

/* Planes */
int tr_plane_open(struct triad_ctx *ctx, struct tr_plane *pl, int index,
		  struct in_addr addr, uint16_t port);
void tr_plane_close(struct tr_plane *pl);
int tr_plane_poll(struct tr_plane *pl); /* drain the CQs; completions handled */
/* Events on, if they were off: always for arrivals; for send completions
 * only when someone waits for one (all = 0, the progress thread going to
 * sleep: an RMA, a message with a request, a queued message or BSM, a
 * draining connection), or always (all = 1, an application thread going
 * to sleep).  A message's own completion only recycles its buffer: waking
 * the progress thread for it cost a wake-up per message sent. */
void tr_plane_arm(struct tr_plane *pl, int all);
/* Someone will wait for a send completion (called before the post): make
 * sure one raises an event. */
void tr_plane_want_send(struct tr_plane *pl);
/* Event callbacks for the progress loop. */
void tr_cm_cb(struct ev_loop *loop, ev_io *w, int revents);
void tr_cq_cb(struct ev_loop *loop, ev_io *w, int revents);
void tr_async_cb(struct ev_loop *loop, ev_io *w, int revents);

/* Connections */
void tr_conn_init(struct triad_ctx *ctx, struct tr_conn *c, int peer, int plane);
int tr_conn_connect(struct tr_conn *c); /* active side: start */
void tr_conn_fail(struct tr_conn *c, enum triad_status why);
/* 1 when nothing this side sent is still unacknowledged. */
int tr_conn_idle(const struct tr_conn *c);
void tr_conn_destroy(struct tr_conn *c); /* at context close */
/* Progress thread: start reconnecting every broken connection this side
 * connects (the lower rank), retrying until it is up or the context closes. */
void tr_conn_reconnect_all(struct triad_ctx *ctx);
/* Encode and queue a message on priority prio; fills in m->seq and sends
 * it as soon as the peer has a slot for it.  req (may be NULL) completes
 * when it arrived.  -EMSGSIZE if it does not fit the peer's slots. */
int tr_conn_send(struct tr_conn *c, struct tr_msg *m, unsigned prio, struct triad_req *req);
/* Queue an already encoded message (a resend keeps its sequence number). */
int tr_conn_send_raw(struct tr_conn *c, const void *data, int len, unsigned prio,
		     struct triad_req *req);
/* A handler is done with a kept receive buffer: free its slot. */
void tr_conn_release(struct tr_buf *b);
/* One flow-control timer period passed. */
void tr_conn_fc_tick(struct tr_conn *c);
/* The linger time of a deferred BSM is over: send it. */
void tr_conn_bsm_flush(struct tr_conn *c);
/* Largest message the peer's slots take on this connection (header incl.). */
unsigned tr_conn_max_msg(const struct tr_conn *c);
/* Post one RDMA WRITE (IBV_WR_RDMA_WRITE) or READ; -EAGAIN when the send
 * queue is full.  lkey is ignored when the data goes inline. */
int tr_conn_post_rma(struct tr_conn *c, enum ibv_wr_opcode op, void *laddr,
		     uint32_t len, uint32_t lkey, uint64_t raddr, uint32_t rkey,
		     struct triad_req *req);

/* Memory registration on one plane (access: IBV_ACCESS_* flags). */
struct ibv_mr *tr_mr_reg(struct tr_plane *pl, void *addr, size_t len, int access);
void tr_mr_dereg(struct ibv_mr *mr);

/* ---- implemented by the core, called by the fabric ---------------------------*/
/* A message arrived in receive buffer b; returns 1 when the core keeps the
 * buffer (an active message whose handler kept it), 0 when it is done. */
int tr_core_msg(struct tr_conn *c, const struct tr_msg *m, struct tr_buf *b);
void tr_core_rma_done(struct tr_conn *c, struct triad_req *req, enum triad_status st);
void tr_core_sq_room(struct tr_conn *c);
void tr_core_conn_changed(struct tr_conn *c); /* went UP, or broke */
/* A BSM was deferred: call tr_conn_bsm_flush within TRIAD_BSM_LINGER_US. */
void tr_core_bsm_linger(struct tr_conn *c);
/* A message sent or queued on c may not have arrived: c broke. */
void tr_core_msg_lost(struct tr_conn *c, const void *data, int len, unsigned prio,
		      struct triad_req *req);
/* A message's request: the message arrived (OK) or cannot be delivered. */
void tr_core_msg_done(struct triad_req *req, enum triad_status st);

#endif
