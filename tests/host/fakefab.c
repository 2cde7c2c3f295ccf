/* A scripted fabric: every function lib/fabric/fabric.h declares, with no
 * verbs, rdma_cm or sockets, for host tests of lib/core (test_host.c).
 *
 * How core is driven.  Every rank is a context of its own in this one
 * process (tr_init_driven, lib/core/init.c: triad_init without the
 * progress thread), and the test's thread drives them all: fh_step() does
 * one thing the fabric could do, then the test runs each context's own
 * libev loop once without blocking (tr_progress_step: the watchers whose
 * fds are ready, the timers that are due, the kicks other calls asked for)
 * and polls it as an application thread does (triad_progress).  So core
 * runs its real callbacks (cq_cb, cm_cb, async_cb, kick_cb, fc_timer_cb)
 * on fds this file owns, eventfds that stand for the completion channel,
 * the rdma_cm channel and the device's async events, written exactly when
 * the real ones would become readable (a completion on an armed CQ, an
 * event handed over).  The fabric's order of events is the seed's alone;
 * core's timers (reconnection, flow-control period, deadlines) still run
 * on the real clock, so a replayed seed gives the same fabric choices, and
 * the same run as long as no timer fires at a different step.
 *
 * The model, mirroring lib/fabric/{cm,qp,plane}.c and what verbs do:
 * - a connection is two QP ends; a post goes on the wire at once (the NIC
 *   may have sent it: the most a fault can leave in flight), in a FIFO per
 *   sending end; fh_step lets the head of a channel arrive: a SEND takes
 *   the receiver's oldest posted receive (none: it waits, RNR retried for
 *   ever as conn_param asks), a WRITE or READ is checked against the
 *   target's registrations (rkey, range, access) and carried out; then the
 *   sender's completion is queued, in posting order (an unsignalled WRITE
 *   that succeeds gives none);
 * - an end in the error state completes everything it has outstanding as
 *   flushed (receives too), and completes every later post flushed; what
 *   it had already sent stays in flight and still lands at the other end,
 *   unless that end is in the error state by then (the packet is dropped,
 *   and a sender still waiting gets RETRY_EXC_ERR and breaks): exactly the
 *   hazard of the redo fence;
 * - tr_fab_qp_break (and fh_break) moves its end to the error state and,
 *   if connected, disconnects: DISCONNECTED for both ends, handed over by
 *   fh_step like every connection manager event; the other end stays as
 *   it is until its owner breaks it (rdma_cm does not touch a QP on a
 *   DREQ received);
 * - a connection request goes to the listener of (address, port);
 *   on_conn_request decides; an accept reports ACCEPTED at once (cm.c) and
 *   queues ESTABLISHED for both sides, with the accept's private data for
 *   the active side; a rejection reaches the requester as TR_CM_FAILED
 *   with the reply, no listener as TR_CM_NO_LISTENER;
 * - a port down stops the packets and cm messages of its plane to and from
 *   the rank, and reports on_port through the async fd.
 * The only call on another thread is tr_fab_qp_free (core's reaper): one
 * mutex guards this file's state, never held while core is called. */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "fabric/fabric.h"
#include "fakefab.h"

#define FH_MAX_FABS 8

enum pkt_op { OP_SEND, OP_WRITE, OP_READ };

/* A send-queue work request: outstanding at its sender (in_sq) until its
 * completion is queued, in flight (in_wire) until it arrives. */
struct pkt {
	struct pkt *sq_next, *wire_next;
	struct tr_qp *src, *dst; /* NULL once released */
	unsigned chan; /* the sending end's id: one FIFO per sending end */
	int srank, drank, plane; /* which link it crosses (fh_hold, ports) */
	enum pkt_op op;
	uint64_t cookie;
	int signalled, in_sq, in_wire;
	char *data; /* SEND, WRITE: the bytes, taken at the post */
	uint32_t len;
	void *laddr; /* READ: where the bytes go */
	uint64_t raddr;
	uint32_t rkey;
	int has_imm;
	uint32_t imm;
};

struct rwr { /* a posted receive */
	struct rwr *next;
	void *addr;
	uint32_t len;
	uint64_t cookie;
};

struct tr_qp {
	struct tr_fab *fab;
	int plane;
	void *owner;
	unsigned id;
	uint32_t num, remote_num;
	struct tr_qp *peer; /* the other end, once accepted; NULL once released */
	int peer_rank;	    /* ... its rank, kept: the link to it stays */
	struct tr_qp *all_next;
	int err, connected, retired, refuse_writes;
	int told_up; /* its owner heard ESTABLISHED */
	int disconnected; /* the connection's DISCONNECTED is queued already */
	struct pkt *sq_head, *sq_tail;
	struct rwr *rq_head, *rq_tail;
	uint8_t priv[TR_FAB_PRIV_MAX];
	size_t priv_len;
};

struct tr_mr {
	struct tr_mr *next;
	struct tr_fab *fab;
	int plane;
	char *addr;
	size_t len;
	unsigned access;
	uint32_t key;
};

struct cqe {
	struct cqe *next;
	struct tr_fab_wc wc;
};

struct cq {
	struct cqe *head, *tail;
	int armed, hw_armed;
};

struct fplane {
	int open, refuse;
	int port_up; /* as the rank was told (tr_fab_plane_port_up) */
	int link_up; /* as it is: packets and cm messages cross it */
	struct in_addr addr;
	uint16_t port;
	struct cq rcq, scq;
	unsigned ev_pending; /* TR_FAB_CQ_* raised, not read yet */
	int cq_fd, async_fd;
	int port_events[8]; /* port states to report, in order */
	int nport_events;
};

struct tr_fab {
	int index; /* the rank, by order of opening */
	const struct tr_fab_ops *ops;
	void *arg;
	int cm_fd;
	int hold_cm;
	struct fplane plane[TRIAD_MAX_PLANES];
};

enum cm_kind { CE_REQUEST, CE_ESTABLISHED, CE_FAILED, CE_NO_LISTENER, CE_DISCONNECTED };

/* A connection manager event on its way to fab (about qp, or for a
 * request, from the active end qp to the listener on plane). */
struct cmev {
	struct cmev *next;
	struct tr_fab *to, *from;
	int plane;
	enum cm_kind kind;
	struct tr_qp *qp;
	int ready; /* handed over: the next tr_fab_cm_dispatch of `to` reports it */
	const char *why;
	uint8_t priv[TR_FAB_PRIV_MAX];
	size_t len;
	uint32_t remote_num;
};

static struct {
	pthread_mutex_t lock;
	struct tr_fab *fabs[FH_MAX_FABS];
	int nfabs;
	struct tr_qp *qps;
	struct tr_mr *mrs;
	struct pkt *wire_head, *wire_tail;
	struct cmev *cm_head;
	unsigned next_id;
	uint32_t next_num, next_key;
	uint64_t rng;
	unsigned held[64][3]; /* (rank, peer, plane) whose packets wait */
	int nheld;
	uint64_t writes_dropped, writes_applied;
} fh = { .lock = PTHREAD_MUTEX_INITIALIZER };

static void lock(void)
{
	pthread_mutex_lock(&fh.lock);
}

static void unlock(void)
{
	pthread_mutex_unlock(&fh.lock);
}

static void die(const char *what)
{
	fprintf(stderr, "fakefab: %s\n", what);
	abort();
}

static void *zalloc(size_t n)
{
	void *p = calloc(1, n);

	if (!p)
		die("out of memory");
	return p;
}

static void poke(int fd)
{
	uint64_t one = 1;

	if (write(fd, &one, sizeof(one)) != sizeof(one))
		die("eventfd write");
}

static void drain_fd(int fd)
{
	uint64_t n;

	while (read(fd, &n, sizeof(n)) == sizeof(n))
		;
}

/* xorshift64*: the seed's draws */
unsigned fh_rand(unsigned n)
{
	uint64_t x = fh.rng;

	x ^= x >> 12;
	x ^= x << 25;
	x ^= x >> 27;
	fh.rng = x;
	return n ? (unsigned)((x * 0x2545f4914f6cdd1dull) >> 33) % n : 0;
}

void fh_reset(uint64_t seed)
{
	lock();
	for (int i = 0; i < fh.nfabs; i++)
		if (fh.fabs[i])
			die("fh_reset with a fabric still open");
	while (fh.wire_head) {
		struct pkt *p = fh.wire_head;

		fh.wire_head = p->wire_next;
		free(p->data);
		free(p);
	}
	while (fh.cm_head) {
		struct cmev *e = fh.cm_head;

		fh.cm_head = e->next;
		free(e);
	}
	if (fh.qps || fh.mrs)
		die("fh_reset: QPs or registrations left");
	fh.wire_tail = NULL;
	fh.nfabs = 0;
	fh.nheld = 0;
	fh.next_id = 1;
	fh.next_num = 0x100;
	fh.next_key = 0x1000;
	fh.writes_dropped = fh.writes_applied = 0;
	fh.rng = seed * 0x9e3779b97f4a7c15ull + 1;
	unlock();
}

/* ---- completions ------------------------------------------------------------------*/
static void cq_push(struct tr_fab *fab, int plane, int send, const struct tr_fab_wc *wc)
{
	struct fplane *pl = &fab->plane[plane];
	struct cq *cq = send ? &pl->scq : &pl->rcq;
	struct cqe *e = zalloc(sizeof(*e));

	e->wc = *wc;
	if (cq->tail)
		cq->tail->next = e;
	else
		cq->head = e;
	cq->tail = e;
	if (cq->hw_armed) { /* the completion channel raises an event */
		cq->hw_armed = 0;
		pl->ev_pending |= send ? TR_FAB_CQ_SEND : TR_FAB_CQ_RECV;
		poke(pl->cq_fd);
	}
}

/* What plane.c's deliver() makes of a verbs status (fabric/wc.h). */
enum fstat { ST_OK, ST_FLUSH, ST_RETRY, ST_REM_ACCESS, ST_REM_INV };

static void wc_status(struct tr_fab_wc *w, enum fstat s)
{
	static const char *const why[] = { NULL, "Work Request Flushed Error",
					   "Transport Retry Counter Exceeded",
					   "remote access error", "remote invalid request error" };

	w->why = why[s];
	w->flushed = s == ST_FLUSH;
	w->conn_fault = s == ST_FLUSH || s == ST_RETRY || s == ST_REM_INV;
	w->status = s == ST_OK		  ? TRIAD_S_OK
		    : s == ST_REM_ACCESS  ? TRIAD_S_REMOTE_ACCESS
		    : s == ST_REM_INV	  ? TRIAD_S_TRANSPORT
					  : TRIAD_S_UNREACHABLE;
}

static void send_done(struct tr_qp *qp, struct pkt *p, enum fstat s)
{
	struct tr_fab_wc w = { .cookie = p->cookie, .qp_num = qp->num };

	wc_status(&w, s);
	cq_push(qp->fab, qp->plane, 1, &w);
}

static void recv_done(struct tr_qp *qp, struct rwr *r, uint32_t len, enum fstat s,
		      const struct pkt *p)
{
	struct tr_fab_wc w = { .cookie = r->cookie, .len = len, .qp_num = qp->num };

	wc_status(&w, s);
	if (p && p->has_imm) {
		w.has_imm = 1;
		w.imm = p->imm;
	}
	cq_push(qp->fab, qp->plane, 0, &w);
}

static void pkt_put(struct pkt *p)
{
	if (!p->in_sq && !p->in_wire) {
		free(p->data);
		free(p);
	}
}

/* Unlinks p, the head of its sender's queue (completions are in order). */
static void sq_pop(struct tr_qp *qp, struct pkt *p)
{
	if (qp->sq_head != p)
		die("a completion out of order");
	qp->sq_head = p->sq_next;
	if (!qp->sq_head)
		qp->sq_tail = NULL;
	p->in_sq = 0;
}

/* The end moves to the error state: everything outstanding completes
 * flushed, in order; what it sent stays in flight. */
static void to_error(struct tr_qp *qp)
{
	qp->err = 1;
	while (qp->sq_head) {
		struct pkt *p = qp->sq_head;

		sq_pop(qp, p);
		send_done(qp, p, ST_FLUSH);
		pkt_put(p);
	}
	while (qp->rq_head) {
		struct rwr *r = qp->rq_head;

		qp->rq_head = r->next;
		recv_done(qp, r, 0, ST_FLUSH, NULL);
		free(r);
	}
	qp->rq_tail = NULL;
}

/* ---- connection manager events -------------------------------------------------*/
static struct cmev *cm_queue(struct tr_fab *to, struct tr_fab *from, int plane,
			     enum cm_kind kind, struct tr_qp *qp, const char *why)
{
	struct cmev *e = zalloc(sizeof(*e)), **tail = &fh.cm_head;

	e->to = to;
	e->from = from;
	e->plane = plane;
	e->kind = kind;
	e->qp = qp;
	e->why = why;
	while (*tail)
		tail = &(*tail)->next;
	*tail = e;
	return e;
}

/* Both ends hear that the connection is gone (once). */
static void disconnect(struct tr_qp *qp)
{
	struct tr_qp *peer = qp->peer;

	qp->connected = 0;
	if (qp->disconnected)
		return;
	qp->disconnected = 1;
	if (!qp->retired)
		cm_queue(qp->fab, qp->fab, qp->plane, CE_DISCONNECTED, qp, NULL);
	if (peer && !peer->disconnected) {
		peer->disconnected = 1;
		cm_queue(peer->fab, qp->fab, qp->plane, CE_DISCONNECTED, peer, NULL);
	}
}

/* ---- the fabric ----------------------------------------------------------------*/
const char *tr_cm_event_str(enum tr_cm_event ev)
{
	static const char *const names[] = {
		[TR_CM_ACCEPTED] = "accepted", [TR_CM_ESTABLISHED] = "established",
		[TR_CM_FAILED] = "failed", [TR_CM_DISCONNECTED] = "disconnected",
		[TR_CM_DEVICE_REMOVED] = "device removed",
		[TR_CM_NO_LISTENER] = "nothing listens there",
	};

	return (unsigned)ev < sizeof(names) / sizeof(names[0]) ? names[ev] : "?";
}

int tr_fab_open(const struct tr_fab_ops *ops, void *arg, const struct tr_fab_cfg *cfg,
		struct tr_fab **fab_p)
{
	struct tr_fab *fab;

	(void)cfg;
	lock();
	if (fh.nfabs == FH_MAX_FABS)
		die("too many fabrics");
	fab = zalloc(sizeof(*fab));
	fab->index = fh.nfabs;
	fab->ops = ops;
	fab->arg = arg;
	fab->cm_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (fab->cm_fd < 0)
		die("eventfd");
	fh.fabs[fh.nfabs++] = fab;
	unlock();
	*fab_p = fab;
	return 0;
}

static void cq_free(struct cq *cq)
{
	while (cq->head) {
		struct cqe *e = cq->head;

		cq->head = e->next;
		free(e);
	}
}

void tr_fab_close(struct tr_fab *fab)
{
	struct cmev **e;

	if (!fab)
		return;
	lock();
	for (struct tr_qp *q = fh.qps; q; q = q->all_next)
		if (q->fab == fab)
			die("tr_fab_close with a QP left");
	for (struct tr_mr *m = fh.mrs; m; m = m->next)
		if (m->fab == fab)
			die("tr_fab_close with a registration left");
	for (e = &fh.cm_head; *e;) {
		struct cmev *x = *e;

		if (x->to == fab || x->from == fab) {
			*e = x->next;
			free(x);
		} else {
			e = &x->next;
		}
	}
	for (int i = 0; i < TRIAD_MAX_PLANES; i++) {
		struct fplane *pl = &fab->plane[i];

		if (!pl->open)
			continue;
		cq_free(&pl->rcq);
		cq_free(&pl->scq);
		close(pl->cq_fd);
		close(pl->async_fd);
	}
	close(fab->cm_fd);
	fh.fabs[fab->index] = NULL;
	free(fab);
	unlock();
}

int tr_fab_cm_fd(const struct tr_fab *fab)
{
	return fab->cm_fd;
}

static struct tr_qp *qp_new(struct tr_fab *fab, int plane, void *owner)
{
	struct tr_qp *qp = zalloc(sizeof(*qp));

	qp->fab = fab;
	qp->plane = plane;
	qp->owner = owner;
	qp->id = fh.next_id++;
	qp->num = fh.next_num++;
	qp->peer_rank = -1;
	qp->all_next = fh.qps;
	fh.qps = qp;
	return qp;
}

/* A request reaches the listener: accepted or refused, as cm.c does. */
static void on_request(struct tr_fab *fab, struct cmev *e)
{
	uint8_t reply[TR_FAB_PRIV_MAX];
	size_t reply_len = 0;
	struct tr_qp *act = e->qp, *qp;
	struct cmev *x;
	void *owner;

	if (!act || act->retired) /* the attempt was given up meanwhile */
		return;
	unlock();
	owner = fab->ops->on_conn_request(fab->arg, e->plane, e->priv, e->len, reply, &reply_len);
	lock();
	act = e->qp; /* still there: only this thread releases a QP that never connected */
	if (!owner) {
		x = cm_queue(act->fab, fab, e->plane, CE_FAILED, act, "RDMA_CM_EVENT_REJECTED");
		memcpy(x->priv, reply, reply_len);
		x->len = reply_len;
		return;
	}
	qp = qp_new(fab, e->plane, owner);
	qp->peer = act;
	act->peer = qp;
	qp->peer_rank = act->fab->index;
	act->peer_rank = fab->index;
	qp->remote_num = act->num;
	memcpy(qp->priv, reply, reply_len);
	qp->priv_len = reply_len;
	x = cm_queue(act->fab, fab, e->plane, CE_ESTABLISHED, act, NULL);
	memcpy(x->priv, reply, reply_len);
	x->len = reply_len;
	x->remote_num = qp->num;
	cm_queue(fab, act->fab, e->plane, CE_ESTABLISHED, qp, NULL); /* the RTU */
	unlock();
	fab->ops->on_cm(fab->arg, owner, qp, TR_CM_ACCEPTED, e->priv, e->len, NULL);
	lock();
}

void tr_fab_cm_dispatch(struct tr_fab *fab)
{
	lock();
	drain_fd(fab->cm_fd);
	for (;;) {
		struct cmev **pp = &fh.cm_head, *e;
		struct tr_qp *qp;
		enum tr_cm_event ev;

		while (*pp && !((*pp)->to == fab && (*pp)->ready))
			pp = &(*pp)->next;
		if (!(e = *pp))
			break;
		*pp = e->next;
		qp = e->qp;
		if (e->kind == CE_REQUEST) {
			on_request(fab, e);
			free(e);
			continue;
		}
		if (!qp || qp->retired) { /* a stale id */
			free(e);
			continue;
		}
		switch (e->kind) {
		case CE_ESTABLISHED:
			qp->connected = !qp->disconnected;
			qp->told_up = 1;
			if (!qp->remote_num)
				qp->remote_num = e->remote_num;
			ev = TR_CM_ESTABLISHED;
			break;
		case CE_FAILED:
			/* The other side gave up after this one was told it is up:
			 * rdma_cm says so as a disconnect. */
			ev = qp->told_up ? TR_CM_DISCONNECTED : TR_CM_FAILED;
			break;
		case CE_NO_LISTENER:
			ev = TR_CM_NO_LISTENER;
			break;
		default:
			ev = TR_CM_DISCONNECTED;
			break;
		}
		unlock();
		fab->ops->on_cm(fab->arg, qp->owner, qp, ev, e->len ? e->priv : NULL, e->len,
				e->why);
		lock();
		free(e);
	}
	unlock();
}

int tr_fab_devices(struct tr_fab_dev *out, int max)
{
	(void)out;
	(void)max;
	return 0; /* the world file names the planes */
}

int tr_fab_plane_open(struct tr_fab *fab, int index, struct in_addr addr, uint16_t port)
{
	struct fplane *pl = &fab->plane[index];

	lock();
	pl->open = 1;
	pl->port_up = pl->link_up = 1;
	pl->addr = addr;
	pl->port = port;
	pl->cq_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	pl->async_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (pl->cq_fd < 0 || pl->async_fd < 0)
		die("eventfd");
	pl->rcq.armed = pl->rcq.hw_armed = 1; /* plane.c arms both at open */
	pl->scq.armed = pl->scq.hw_armed = 1;
	unlock();
	return 0;
}

int tr_fab_plane_port_up(const struct tr_fab *fab, int index)
{
	return fab->plane[index].port_up;
}

int tr_fab_plane_cq_fd(const struct tr_fab *fab, int index)
{
	return fab->plane[index].cq_fd;
}

int tr_fab_plane_async_fd(const struct tr_fab *fab, int index)
{
	return fab->plane[index].async_fd; /* a device per plane */
}

static int poll_cq(struct tr_fab *fab, int index, int send)
{
	void (*fn)(void *, const struct tr_fab_wc *) = send ? fab->ops->on_send : fab->ops->on_recv;
	int n = 0;

	for (;;) {
		struct cq *cq;
		struct cqe *e;
		struct tr_fab_wc w;

		lock();
		cq = send ? &fab->plane[index].scq : &fab->plane[index].rcq;
		e = cq->head;
		if (e) {
			cq->head = e->next;
			if (!cq->head)
				cq->tail = NULL;
			w = e->wc;
			free(e);
		}
		unlock();
		if (!e)
			return n;
		fn(fab->arg, &w);
		n++;
	}
}

int tr_fab_plane_poll(struct tr_fab *fab, int index)
{
	if (!fab->plane[index].open)
		return 0;
	return poll_cq(fab, index, 1) + poll_cq(fab, index, 0);
}

int tr_fab_plane_poll_send(struct tr_fab *fab, int index)
{
	return fab->plane[index].open ? poll_cq(fab, index, 1) : 0;
}

unsigned tr_fab_plane_events(struct tr_fab *fab, int index)
{
	struct fplane *pl = &fab->plane[index];
	unsigned which;

	lock();
	drain_fd(pl->cq_fd);
	which = pl->ev_pending;
	pl->ev_pending = 0;
	if (which & TR_FAB_CQ_RECV)
		pl->rcq.armed = 0;
	if (which & TR_FAB_CQ_SEND)
		pl->scq.armed = 0;
	unlock();
	return which;
}

void tr_fab_plane_arm(struct tr_fab *fab, int index, unsigned which)
{
	struct fplane *pl = &fab->plane[index];

	lock();
	if (pl->open) {
		if ((which & TR_FAB_CQ_RECV) && !pl->rcq.armed)
			pl->rcq.armed = pl->rcq.hw_armed = 1;
		if ((which & TR_FAB_CQ_SEND) && !pl->scq.armed)
			pl->scq.armed = pl->scq.hw_armed = 1;
	}
	unlock();
}

void tr_fab_async_dispatch(struct tr_fab *fab, int index)
{
	struct fplane *pl = &fab->plane[index];

	lock();
	drain_fd(pl->async_fd);
	while (pl->nport_events) {
		int up = pl->port_events[0];

		memmove(pl->port_events, pl->port_events + 1,
			sizeof(int) * (size_t)--pl->nport_events);
		pl->port_up = up;
		unlock();
		fab->ops->on_port(fab->arg, index, up);
		lock();
	}
	unlock();
}

/* ---- memory ---------------------------------------------------------------------*/
struct tr_mr *tr_fab_mr_reg(struct tr_fab *fab, int plane, void *addr, size_t len,
			    unsigned access)
{
	struct tr_mr *mr = zalloc(sizeof(*mr));

	lock();
	mr->fab = fab;
	mr->plane = plane;
	mr->addr = addr;
	mr->len = len;
	mr->access = access;
	mr->key = fh.next_key++;
	mr->next = fh.mrs;
	fh.mrs = mr;
	unlock();
	return mr;
}

void tr_fab_mr_dereg(struct tr_mr *mr)
{
	if (!mr)
		return;
	lock();
	for (struct tr_mr **pp = &fh.mrs; *pp; pp = &(*pp)->next)
		if (*pp == mr) {
			*pp = mr->next;
			break;
		}
	unlock();
	free(mr);
}

uint32_t tr_fab_mr_rkey(const struct tr_mr *mr)
{
	return mr->key;
}

/* The registration of fab's plane that key names and that covers
 * [addr, addr + len) with access, or NULL. */
static struct tr_mr *mr_find(const struct tr_fab *fab, int plane, uint32_t key, uint64_t addr,
			     uint64_t len, unsigned access)
{
	for (struct tr_mr *m = fh.mrs; m; m = m->next)
		if (m->fab == fab && m->plane == plane && m->key == key &&
		    (m->access & access) == access && addr >= (uintptr_t)m->addr &&
		    addr + len <= (uintptr_t)m->addr + m->len)
			return m;
	return NULL;
}

/* ---- QPs ------------------------------------------------------------------------*/
static struct tr_fab *listener(struct in_addr addr, uint16_t port, int *plane_p)
{
	for (int i = 0; i < fh.nfabs; i++)
		for (int p = 0; fh.fabs[i] && p < TRIAD_MAX_PLANES; p++) {
			const struct fplane *pl = &fh.fabs[i]->plane[p];

			if (pl->open && pl->addr.s_addr == addr.s_addr && pl->port == port) {
				*plane_p = p;
				return fh.fabs[i];
			}
		}
	return NULL;
}

int tr_fab_connect(struct tr_fab *fab, int plane, struct in_addr dst, uint16_t port,
		   const uint8_t *priv, size_t len, void *owner, struct tr_qp **qp_p)
{
	struct tr_qp *qp;
	struct tr_fab *to;
	int to_plane = 0;

	if (len > TR_FAB_PRIV_MAX)
		return -EINVAL;
	lock();
	qp = qp_new(fab, plane, owner);
	memcpy(qp->priv, priv, len);
	qp->priv_len = len;
	to = listener(dst, port, &to_plane);
	if (!to) {
		cm_queue(fab, fab, plane, CE_NO_LISTENER, qp, "RDMA_CM_EVENT_REJECTED");
	} else if (to->plane[to_plane].refuse == FH_NO_LISTENER) {
		cm_queue(fab, to, plane, CE_NO_LISTENER, qp, "RDMA_CM_EVENT_REJECTED");
	} else if (to->plane[to_plane].refuse) {
		cm_queue(fab, to, plane, CE_FAILED, qp, "RDMA_CM_EVENT_UNREACHABLE");
	} else {
		struct cmev *e = cm_queue(to, fab, to_plane, CE_REQUEST, qp, NULL);

		memcpy(e->priv, priv, len);
		e->len = len;
		e->remote_num = qp->num;
	}
	unlock();
	*qp_p = qp;
	return 0;
}

void tr_fab_qp_break(struct tr_qp *qp)
{
	lock();
	if (!qp->fab->plane[qp->plane].scq.armed) /* the send CQ raises an event */
		qp->fab->plane[qp->plane].scq.armed = qp->fab->plane[qp->plane].scq.hw_armed = 1;
	to_error(qp);
	if (qp->connected)
		disconnect(qp);
	unlock();
}

void tr_fab_qp_reflush(struct tr_qp *qp)
{
	lock();
	to_error(qp);
	unlock();
}

int tr_fab_qp_refuse_writes(struct tr_qp *qp)
{
	lock();
	qp->refuse_writes = 1;
	unlock();
	return 0;
}

/* No more events for qp, and what is in flight forgets it. */
static void cut(struct tr_qp *qp)
{
	for (struct cmev *e = fh.cm_head; e; e = e->next)
		if (e->qp == qp)
			e->qp = NULL;
}

void tr_fab_qp_retire(struct tr_qp *qp)
{
	lock();
	if (qp->connected) {
		disconnect(qp);
	} else if (qp->peer && !qp->peer->disconnected) {
		/* An attempt abandoned after the accept: the passive side's
		 * connection fails (a disconnect if it was told it is up). */
		qp->peer->disconnected = 1;
		cm_queue(qp->peer->fab, qp->fab, qp->plane, CE_FAILED, qp->peer,
			 "RDMA_CM_EVENT_CONNECT_ERROR");
	}
	qp->retired = 1;
	cut(qp);
	unlock();
}

void tr_fab_qp_free(struct tr_qp *qp)
{
	lock();
	for (struct tr_qp **pp = &fh.qps; *pp; pp = &(*pp)->all_next)
		if (*pp == qp) {
			*pp = qp->all_next;
			break;
		}
	if (qp->peer)
		qp->peer->peer = NULL;
	cut(qp);
	for (struct pkt *p = fh.wire_head; p; p = p->wire_next) {
		if (p->src == qp)
			p->src = NULL;
		if (p->dst == qp)
			p->dst = NULL;
	}
	while (qp->sq_head) {
		struct pkt *p = qp->sq_head;

		qp->sq_head = p->sq_next;
		p->in_sq = 0;
		pkt_put(p);
	}
	while (qp->rq_head) {
		struct rwr *r = qp->rq_head;

		qp->rq_head = r->next;
		free(r);
	}
	unlock();
	free(qp);
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
	return qp->num;
}

uint32_t tr_fab_qp_remote_num(const struct tr_qp *qp)
{
	return qp->remote_num;
}

uint32_t tr_fab_qp_max_inline(const struct tr_qp *qp)
{
	(void)qp;
	return 64;
}

unsigned tr_fab_qp_read_wrs(const struct tr_qp *qp)
{
	(void)qp;
	return 1;
}

int tr_fab_post_recv(struct tr_qp *qp, void *addr, uint32_t len, const struct tr_mr *mr,
		     uint64_t cookie)
{
	struct rwr *r = zalloc(sizeof(*r));

	(void)mr;
	r->addr = addr;
	r->len = len;
	r->cookie = cookie;
	lock();
	if (qp->err) {
		recv_done(qp, r, 0, ST_FLUSH, NULL);
		free(r);
	} else {
		if (qp->rq_tail)
			qp->rq_tail->next = r;
		else
			qp->rq_head = r;
		qp->rq_tail = r;
	}
	unlock();
	return 0;
}

/* Posts p on qp: on the wire at once (it may be in flight whatever comes
 * next), outstanding until its completion. */
static void post(struct tr_qp *qp, struct pkt *p)
{
	p->src = qp;
	p->dst = qp->peer;
	p->chan = qp->id;
	p->srank = qp->fab->index;
	p->drank = qp->peer_rank;
	p->plane = qp->plane;
	if (qp->err) {
		send_done(qp, p, ST_FLUSH);
		free(p->data);
		free(p);
		return;
	}
	p->in_sq = 1;
	if (qp->sq_tail)
		qp->sq_tail->sq_next = p;
	else
		qp->sq_head = p;
	qp->sq_tail = p;
	p->in_wire = 1;
	if (fh.wire_tail)
		fh.wire_tail->wire_next = p;
	else
		fh.wire_head = p;
	fh.wire_tail = p;
}

int tr_fab_post_send(struct tr_qp *qp, const void *addr, uint32_t len, const struct tr_mr *mr,
		     uint64_t cookie, const uint32_t *imm)
{
	struct pkt *p = zalloc(sizeof(*p));

	(void)mr;
	p->op = OP_SEND;
	p->cookie = cookie;
	p->signalled = 1;
	p->len = len;
	p->data = zalloc(len ? len : 1);
	memcpy(p->data, addr, len);
	if (imm) {
		p->has_imm = 1;
		p->imm = *imm;
	}
	lock();
	post(qp, p);
	unlock();
	return 0;
}

int tr_fab_post_rma(struct tr_qp *qp, enum tr_rma_op op, void *laddr, uint32_t len,
		    const struct tr_mr *mr, uint64_t raddr, uint32_t rkey, uint64_t cookie,
		    int signalled)
{
	struct pkt *p = zalloc(sizeof(*p));

	(void)mr;
	p->op = op == TR_RMA_READ ? OP_READ : OP_WRITE;
	p->cookie = cookie;
	p->signalled = signalled || op == TR_RMA_READ;
	p->len = len;
	p->raddr = raddr;
	p->rkey = rkey;
	if (op == TR_RMA_WRITE) {
		p->data = zalloc(len ? len : 1);
		memcpy(p->data, laddr, len);
	} else {
		p->laddr = laddr;
	}
	lock();
	post(qp, p);
	unlock();
	return 1;
}

/* ---- the steps ------------------------------------------------------------------*/
static int held(const struct pkt *p)
{
	for (int i = 0; i < fh.nheld; i++)
		if (fh.held[i][0] == (unsigned)p->srank && fh.held[i][1] == (unsigned)p->drank &&
		    fh.held[i][2] == (unsigned)p->plane)
			return 1;
	return 0;
}

static struct tr_fab *fab_or_null(int rank)
{
	return rank >= 0 && rank < fh.nfabs ? fh.fabs[rank] : NULL;
}

/* A port down on the way. */
static int port_blocked(const struct tr_fab *a, const struct tr_fab *b, int plane)
{
	return (a && !a->plane[plane].link_up) || (b && !b->plane[plane].link_up);
}

/* An end that takes no packet: gone, retired (its QP number is no more)
 * or in the error state. */
static int dead(const struct tr_qp *qp)
{
	return !qp || qp->err || qp->retired;
}

static int pkt_ready(const struct pkt *p)
{
	if (held(p) || port_blocked(fab_or_null(p->srank), fab_or_null(p->drank), p->plane))
		return 0;
	/* A SEND waits for a receive (RNR, retried for ever). */
	return p->op != OP_SEND || dead(p->dst) || p->dst->rq_head;
}

/* The sender learns that p failed at the responder: it is completed with s
 * and the sender's end breaks (everything after it flushed). */
static void src_fail(struct pkt *p, enum fstat s)
{
	struct tr_qp *src = p->src;

	if (dead(src) || !p->in_sq)
		return;
	sq_pop(src, p);
	send_done(src, p, s);
	to_error(src);
}

static void src_ok(struct pkt *p)
{
	struct tr_qp *src = p->src;

	if (dead(src) || !p->in_sq)
		return;
	sq_pop(src, p);
	if (p->signalled)
		send_done(src, p, ST_OK);
}

static void arrive(struct pkt *p)
{
	struct tr_qp *dst = p->dst;

	if (dead(dst)) {
		if (p->op == OP_WRITE)
			fh.writes_dropped++;
		src_fail(p, ST_RETRY); /* nobody answers: retries exceeded */
		return;
	}
	switch (p->op) {
	case OP_SEND: {
		struct rwr *r = dst->rq_head;

		dst->rq_head = r->next;
		if (!dst->rq_head)
			dst->rq_tail = NULL;
		if (p->len > r->len)
			die("a SEND longer than the receive buffer");
		memcpy(r->addr, p->data, p->len);
		recv_done(dst, r, p->len, ST_OK, p);
		free(r);
		src_ok(p);
		break;
	}
	case OP_WRITE:
		if (dst->refuse_writes) {
			src_fail(p, ST_REM_INV); /* both ends in the error state */
			to_error(dst);
			fh.writes_dropped++;
			break;
		}
		if (p->len && !mr_find(dst->fab, dst->plane, p->rkey, p->raddr, p->len,
				       TR_MR_REMOTE_WRITE)) {
			src_fail(p, ST_REM_ACCESS);
			fh.writes_dropped++;
			break;
		}
		if (p->len) {
			memcpy((void *)(uintptr_t)p->raddr, p->data, p->len);
			fh.writes_applied++;
		}
		src_ok(p);
		break;
	case OP_READ:
		if (!mr_find(dst->fab, dst->plane, p->rkey, p->raddr, p->len, TR_MR_REMOTE_READ)) {
			src_fail(p, ST_REM_ACCESS);
			break;
		}
		/* The bytes reach the reader only if it still waits for them. */
		if (!dead(p->src) && p->in_sq)
			memcpy(p->laddr, (void *)(uintptr_t)p->raddr, p->len);
		src_ok(p);
		break;
	}
}

static int cm_ready(const struct cmev *e)
{
	if (e->ready || e->to->hold_cm)
		return 0;
	return e->to == e->from || !port_blocked(e->to, e->from, e->plane);
}

int fh_step(void)
{
	struct pkt *cand[256];
	struct cmev *cme[64];
	unsigned nc = 0, ne = 0, pick;
	unsigned seen[256];
	unsigned nseen = 0;

	lock();
	/* The head of every channel. */
	for (struct pkt *p = fh.wire_head; p && nc < 256; p = p->wire_next) {
		unsigned i;

		for (i = 0; i < nseen && seen[i] != p->chan; i++)
			;
		if (i < nseen)
			continue;
		if (nseen < 256)
			seen[nseen++] = p->chan;
		if (pkt_ready(p))
			cand[nc++] = p;
	}
	for (struct cmev *e = fh.cm_head; e && ne < 64; e = e->next)
		if (cm_ready(e))
			cme[ne++] = e;
	if (!nc && !ne) {
		unlock();
		return 0;
	}
	pick = fh_rand(nc + ne);
	if (pick < nc) {
		struct pkt *p = cand[pick], **pp = &fh.wire_head, *prev = NULL;

		while (*pp != p) {
			prev = *pp;
			pp = &(*pp)->wire_next;
		}
		*pp = p->wire_next;
		if (fh.wire_tail == p)
			fh.wire_tail = prev;
		p->wire_next = NULL;
		p->in_wire = 0;
		arrive(p);
		pkt_put(p);
	} else {
		struct cmev *e = cme[pick - nc];

		e->ready = 1;
		poke(e->to->cm_fd);
	}
	unlock();
	return 1;
}

/* ---- faults ---------------------------------------------------------------------*/
static struct tr_fab *fab_at(int rank)
{
	if (rank < 0 || rank >= fh.nfabs || !fh.fabs[rank])
		die("no such rank");
	return fh.fabs[rank];
}

void fh_hold(int rank, int peer, int plane, int on)
{
	lock();
	for (int i = 0; i < fh.nheld; i++)
		if (fh.held[i][0] == (unsigned)rank && fh.held[i][1] == (unsigned)peer &&
		    fh.held[i][2] == (unsigned)plane) {
			if (!on)
				memmove(fh.held[i], fh.held[i + 1],
					sizeof(fh.held[0]) * (size_t)(--fh.nheld - i));
			unlock();
			return;
		}
	if (on) {
		if (fh.nheld == 64)
			die("too many holds");
		fh.held[fh.nheld][0] = (unsigned)rank;
		fh.held[fh.nheld][1] = (unsigned)peer;
		fh.held[fh.nheld++][2] = (unsigned)plane;
	}
	unlock();
}

int fh_break(int rank, int peer, int plane)
{
	struct tr_fab *a, *b;
	struct tr_qp *qp;

	lock();
	a = fab_at(rank);
	b = fab_at(peer);
	for (qp = fh.qps; qp; qp = qp->all_next)
		if (qp->fab == a && qp->plane == plane && qp->peer && qp->peer->fab == b &&
		    !qp->err && !qp->retired && qp->connected)
			break;
	if (!qp) {
		unlock();
		return -ENOENT;
	}
	to_error(qp);
	disconnect(qp);
	unlock();
	return 0;
}

void fh_port(int rank, int plane, int up)
{
	struct fplane *pl;

	lock();
	pl = &fab_at(rank)->plane[plane];
	if (pl->nport_events == 8)
		die("too many port events");
	pl->port_events[pl->nport_events++] = up;
	/* The link itself changes at once; the rank hears of it through its
	 * async fd (and tr_fab_plane_port_up says so from then on). */
	pl->link_up = up;
	poke(pl->async_fd);
	unlock();
}

void fh_refuse(int rank, int plane, int on)
{
	lock();
	fab_at(rank)->plane[plane].refuse = on;
	unlock();
}

void fh_hold_cm(int rank, int on)
{
	lock();
	fab_at(rank)->hold_cm = on;
	unlock();
}

int fh_can_land(const void *addr, size_t len)
{
	uintptr_t a = (uintptr_t)addr;
	int ret = 0;

	lock();
	for (struct pkt *p = fh.wire_head; p && !ret; p = p->wire_next)
		ret = p->op == OP_WRITE && p->len && !dead(p->dst) &&
		      p->raddr < a + len && a < p->raddr + p->len;
	unlock();
	return ret;
}

uint64_t fh_writes_dropped(void)
{
	return fh.writes_dropped;
}

uint64_t fh_writes_applied(void)
{
	return fh.writes_applied;
}

unsigned fh_in_flight(void)
{
	unsigned n = 0;

	lock();
	for (struct pkt *p = fh.wire_head; p; p = p->wire_next)
		n++;
	unlock();
	return n;
}
