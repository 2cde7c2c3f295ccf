/* The fabric layer: a verbs executor, and the only code that calls
 * libibverbs and librdmacm.
 *
 * It opens planes (one local device/port with an IPv4 address: a PD, a
 * receive CQ and a send CQ on one completion channel, an rdma_cm
 * listener), creates, connects, accepts, breaks and destroys RC QPs,
 * registers memory (it alone reads lkeys and rkeys), posts sends, receives,
 * WRITEs and READs with an opaque 64-bit cookie, and polls completions.
 *
 * It reports upward only through the ops table the caller registers at
 * tr_fab_open(), the way an rdma-core provider fills verbs_context_ops or
 * UCX's uct reports to ucp through registered handlers.  It knows nothing
 * of peers, requests, flow control, threads or event loops: it has no
 * lock (the caller serialises every call) and exposes file descriptors for
 * the caller's loop to watch. */
#ifndef TRIAD_FABRIC_H
#define TRIAD_FABRIC_H

#include <netinet/in.h>
#include <stddef.h>
#include <stdint.h>

#include "triad.h"

struct tr_fab;
struct tr_qp; /* one RC QP and its rdma_cm id */
struct tr_mr; /* one memory registration on one plane */

/* What a completion says; flushed: the QP was broken (IBV_WC_WR_FLUSH_ERR);
 * conn_fault: the connection failed it, another may do it (fabric/wc.h). */
struct tr_fab_wc {
	uint64_t cookie;
	uint32_t len;		/* receives: bytes that arrived */
	enum triad_status status;
	int flushed;
	int conn_fault;
	const char *why;	/* the verbs status, for the log (NULL on success) */
	uint32_t qp_num;	/* the QP the work request was posted on */
	int has_imm;		/* receives: the SEND carried an immediate */
	uint32_t imm;		/* ... this one (host order) */
};

enum tr_cm_event {
	TR_CM_ACCEPTED,	    /* passive side: accepted, not yet established */
	TR_CM_ESTABLISHED,  /* priv: the peer's private data (active side) */
	TR_CM_FAILED,	    /* an attempt failed before it was up; why says which step;
			     * priv: a rejection's private data, if it had any */
	TR_CM_DISCONNECTED, /* the peer disconnected */
	TR_CM_DEVICE_REMOVED,
	TR_CM_NO_LISTENER,  /* an attempt failed: the peer's connection manager
			     * found nothing listening at the address and port
			     * (no process there, or not yet) */
};
const char *tr_cm_event_str(enum tr_cm_event ev);

/* Private data of a connection request or accept; at most this long. */
#define TR_FAB_PRIV_MAX 56

struct tr_fab_ops {
	/* A receive (on_recv) or any send-queue work request (on_send)
	 * completed. */
	void (*on_recv)(void *arg, const struct tr_fab_wc *wc);
	void (*on_send)(void *arg, const struct tr_fab_wc *wc);
	/* Passive side: a peer asks to connect on plane.  Return the owner
	 * (the caller's object for the connection) and fill reply/reply_len
	 * with the accept's private data, or NULL to reject (reply/reply_len,
	 * when set, then go with the rejection). */
	void *(*on_conn_request)(void *arg, int plane, const uint8_t *priv, size_t len,
				 uint8_t *reply, size_t *reply_len);
	/* A connection owned by owner changed (see enum tr_cm_event). */
	void (*on_cm)(void *arg, void *owner, struct tr_qp *qp, enum tr_cm_event ev,
		      const uint8_t *priv, size_t len, const char *why);
	/* A plane's port went up or down. */
	void (*on_port)(void *arg, int plane, int up);
};

/* How QPs and CQs are sized and timed. */
struct tr_fab_cfg {
	int sq_depth;	 /* send work requests per QP */
	int rq_depth;	 /* receive work requests per QP */
	int cqe;	 /* entries per CQ */
	int ack_timeout; /* IB local ACK timeout exponent: 4.096 us x 2^n */
	int retry_count;
};

/* Opens the fabric: the rdma_cm event channel; planes are added with
 * tr_fab_plane_open().  0 or a negative errno (logged). */
int tr_fab_open(const struct tr_fab_ops *ops, void *arg, const struct tr_fab_cfg *cfg,
		struct tr_fab **fab_p);
/* Closes every plane, then the channel.  Every QP and MR must be gone. */
void tr_fab_close(struct tr_fab *fab);
/* The rdma_cm channel's fd (non-blocking): readable when an event waits. */
int tr_fab_cm_fd(const struct tr_fab *fab);
/* Handles every waiting rdma_cm event (through ops). */
void tr_fab_cm_dispatch(struct tr_fab *fab);

/* ---- devices ------------------------------------------------------------------*/
/* A port of a local RDMA device that has an IPv4 address in its GID table
 * (RoCE, rxe): what tr_fab_plane_open() binds to. */
struct tr_fab_dev {
	char name[64];
	int port;
	int active; /* IBV_PORT_ACTIVE now */
	struct in_addr addr;
};
#define TR_FAB_MAX_DEVS 128
/* Every such port of this host, in the verbs device order, at most max.
 * Returns how many, or a negative errno (logged). */
int tr_fab_devices(struct tr_fab_dev *out, int max);

/* ---- planes -------------------------------------------------------------------*/
/* Opens plane index on the device that owns addr and listens on port. */
int tr_fab_plane_open(struct tr_fab *fab, int index, struct in_addr addr, uint16_t port);
int tr_fab_plane_port_up(const struct tr_fab *fab, int index);
/* The completion channel's fd (non-blocking; both CQs raise events on it),
 * and the device's async-event fd, or -1 when another plane on the same
 * device already watches it. */
int tr_fab_plane_cq_fd(const struct tr_fab *fab, int index);
int tr_fab_plane_async_fd(const struct tr_fab *fab, int index);
/* Polls the plane's send CQ, then its receive CQ, until both are empty;
 * every completion goes to ops.  Returns how many there were. */
int tr_fab_plane_poll(struct tr_fab *fab, int index);
/* Polls the plane's send CQ alone, once: an operation just posted may be
 * complete already (rxe does a small READ or WRITE inside the post). */
int tr_fab_plane_poll_send(struct tr_fab *fab, int index);

enum { TR_FAB_CQ_RECV = 1, TR_FAB_CQ_SEND = 2 };
/* Reads and acknowledges the channel's events; returns which CQs raised
 * one (TR_FAB_CQ_* bits), which are then disarmed. */
unsigned tr_fab_plane_events(struct tr_fab *fab, int index);
/* Arms the CQs in which (TR_FAB_CQ_* bits) that are not armed yet: the next
 * completion raises an event.  Arm before the last poll, so nothing that
 * lands after it is missed. */
void tr_fab_plane_arm(struct tr_fab *fab, int index, unsigned which);
/* Handles the device's async events (port up/down through ops). */
void tr_fab_async_dispatch(struct tr_fab *fab, int index);

/* ---- memory ---------------------------------------------------------------------*/
enum { TR_MR_LOCAL_WRITE = 1, TR_MR_REMOTE_READ = 2, TR_MR_REMOTE_WRITE = 4 };
/* NULL when it fails (logged). */
struct tr_mr *tr_fab_mr_reg(struct tr_fab *fab, int plane, void *addr, size_t len,
			    unsigned access);
void tr_fab_mr_dereg(struct tr_mr *mr); /* NULL: nothing */
/* The key a peer names the region with in its WRITEs and READs. */
uint32_t tr_fab_mr_rkey(const struct tr_mr *mr);

/* ---- QPs --------------------------------------------------------------------------*/
/* Active side: starts connecting owner's QP from plane's address to dst
 * (address resolution, route, QP creation, connect with priv); the outcome
 * comes through ops->on_cm (ESTABLISHED or FAILED).  0; -EAGAIN when address
 * resolution could not start (worth another attempt); another negative
 * errno when nothing can be started (logged; no event follows either way). */
int tr_fab_connect(struct tr_fab *fab, int plane, struct in_addr dst, uint16_t port,
		   const uint8_t *priv, size_t len, void *owner, struct tr_qp **qp_p);
/* Moves the QP to the error state (every posted work request completes,
 * flushed) and disconnects. */
void tr_fab_qp_break(struct tr_qp *qp);
/* Moves a QP that is in the error state there again, so that a provider
 * that flushes only when told (rxe: work requests posted from user space
 * after its flush stay posted until the kernel looks at the queue again)
 * flushes what is still posted; the send CQ raises an event for it. */
void tr_fab_qp_reflush(struct tr_qp *qp);
/* A fault on purpose (triad_plane_refuse_writes): the QP stops allowing
 * RDMA WRITEs into this side, so the next one that arrives is NAKed as an
 * invalid request, which moves both ends into the error state.  0 (also
 * for a QP in the error state already: it refuses everything) or a
 * negative errno. */
int tr_fab_qp_refuse_writes(struct tr_qp *qp);
/* Disconnects (if connected) and releases the QP and its id.  Only when
 * nothing is posted any more, or at close. */
void tr_fab_qp_destroy(struct tr_qp *qp);
/* tr_fab_qp_destroy in two steps, for a QP that was established.
 * tr_fab_qp_retire() disconnects it (if connected) and cuts it from its
 * owner: no event reaches ops for it any more.  tr_fab_qp_free() then
 * releases it, and is the one call that may run on another thread, beside
 * the caller's serialised ones: releasing a QP can block in the kernel for
 * seconds (rxe: until the kernel lets go of the QP's last packet, which a
 * link down can leave queued for about 3 s, docs/fabric.md).  Not for an
 * attempt that never connected: librdmacm itself still moves its QP on a
 * late REJECTED or connect response. */
void tr_fab_qp_retire(struct tr_qp *qp);
void tr_fab_qp_free(struct tr_qp *qp);
uint32_t tr_fab_qp_num(const struct tr_qp *qp);
/* The QP number of the connection's other end (from rdma_cm's request or
 * accept), 0 before it is known. */
uint32_t tr_fab_qp_remote_num(const struct tr_qp *qp);
/* Largest payload that goes inline (no registration needed). */
uint32_t tr_fab_qp_max_inline(const struct tr_qp *qp);
/* The work requests a READ takes on qp, each completing once with its
 * cookie: 1, or 2 on a device that may report a READ done without its data
 * (rxe, internal.h): a zero-length READ follows it, so that such a READ is
 * followed by a flushed completion (the device fails the QP right after
 * it), never by a second success.  A READ is done when all of its work
 * requests are, and OK when every one of them is. */
unsigned tr_fab_qp_read_wrs(const struct tr_qp *qp);

/* Posts.  Each returns 0 or a negative errno (logged); every post
 * completes exactly once through ops (flushed when the QP breaks), except
 * an unsignalled WRITE (signalled 0), which comes back only if it fails:
 * it is known complete once a later work request of the same QP is.  A
 * post to a QP in the error state completes flushed.  mr may be NULL for
 * a payload that goes inline.  A SEND carries the immediate *imm when imm
 * is not NULL. */
int tr_fab_post_recv(struct tr_qp *qp, void *addr, uint32_t len, const struct tr_mr *mr,
		     uint64_t cookie);
int tr_fab_post_send(struct tr_qp *qp, const void *addr, uint32_t len, const struct tr_mr *mr,
		     uint64_t cookie, const uint32_t *imm);
enum tr_rma_op { TR_RMA_WRITE, TR_RMA_READ };
/* tr_fab_post_rma returns the number of work requests posted (1, or for a
 * READ up to tr_fab_qp_read_wrs), each completing once, or a negative
 * errno when none was. */
int tr_fab_post_rma(struct tr_qp *qp, enum tr_rma_op op, void *laddr, uint32_t len,
		    const struct tr_mr *mr, uint64_t raddr, uint32_t rkey, uint64_t cookie,
		    int signalled);

#endif
