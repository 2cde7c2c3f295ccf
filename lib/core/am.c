/* Active messages: user handlers, run by the progress engine, fed by the
 * flow-controlled message channel (core/chan.c). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "core/am.h"
#include "core/chan.h"
#include "core/peer.h"
#include "core/progress.h"
#include "core/req.h"
#include "base/log.h"

/* An application's messages to one rank on one priority, queued or in
 * flight (unsettled), at most: triad_am_send says -EAGAIN beyond, which
 * bounds every queue on the way and the memory it takes, through a slow
 * peer or an outage.  The stream's own bound (TR_STREAM_AHEAD) leaves the
 * rest to the library's messages (copies' orders, window queries,
 * barriers), so that an application flooding a peer never fails them. */
#define TR_AM_QUEUE_MAX 256
_Static_assert(TR_AM_QUEUE_MAX <= TR_STREAM_AHEAD / 2, "room for the library's messages");

struct tr_am_entry {
	triad_am_handler_t fn;
	void *arg;
};

/* The active messages' state (ctx->am), under the context lock: the
 * handlers, and per peer and priority the messages that came before a
 * number sent earlier, copied out of their slots, in order of number
 * (strict order). */
struct tr_ams {
	struct tr_am_entry h[TRIAD_AM_MAX_ID + 1];
	struct tr_list early[][TR_FC_NPRIO];
};

int triad_am_register(triad_ctx_t *ctx, unsigned id, triad_am_handler_t handler, void *arg)
{
	int ret = 0;

	if (!ctx || !handler || id > TRIAD_AM_MAX_ID) {
		tr_debug("am_register: needs a handler and an id <= %d (got %u)", TRIAD_AM_MAX_ID, id);
		return -EINVAL;
	}
	tr_ctx_lock(ctx);
	if (ctx->am->h[id].fn) {
		tr_debug("am_register: id %u already has a handler", id);
		ret = -EEXIST;
	} else {
		ctx->am->h[id].fn = handler;
		ctx->am->h[id].arg = arg;
	}
	pthread_mutex_unlock(&ctx->lock);
	return ret;
}

size_t triad_am_max_size(const triad_ctx_t *ctx)
{
	if (!ctx)
		return 0;
	return ctx->cfg.slot_size - TR_WIRE_HDR_LEN - TR_WIRE_AM_HDR_LEN;
}

/* ---- delivery, in strict order when asked --------------------------------------*/
/* Strict order goes by the sequence number, which numbers every message
 * of a priority in the order it was sent (an active message's is given
 * under the same lock as its call): an active message is handed over once
 * every number before it has come, or has been given up for good by the
 * sender (SEQ_SKIP).  So what it waits for is never only another active
 * message: a window query sent before it on another plane holds it too,
 * which the order promised to the application allows.  The number is all
 * a bare message carries (proto/wire.h), so bare messages keep their
 * order as whole ones do. */

/* An active message that came before a number sent earlier (on another
 * plane, or sent again after a fault): it waits, copied out of its slot,
 * for its turn. */
struct tr_am_early {
	struct tr_list link;
	struct tr_buf *b;
	struct tr_lane *l;
	uint32_t seq;
	uint16_t id;
	uint32_t len;
	const void *data;
};

/* The application's handler, under the lock: it may call in again
 * (base/gate.h, tr_gate_callback_begin). */
static int call(struct triad_ctx *ctx, const struct tr_am_entry *e, int src, const void *data,
		size_t len, struct tr_buf *b)
{
	unsigned long prev = tr_gate_callback_begin(&ctx->gate);
	int ret = e->fn(e->arg, src, data, len, (triad_am_msg_t *)b);

	tr_gate_callback_end(&ctx->gate, prev);
	return ret;
}

/* Runs the handler; 1 when it kept the buffer. */
static int handle(struct triad_ctx *ctx, struct tr_lane *l, unsigned id, const void *data,
		  uint32_t len, struct tr_buf *b)
{
	struct tr_am_entry *e = id <= TRIAD_AM_MAX_ID ? &ctx->am->h[id] : NULL; /* u16 on the wire */

	if (!e || !e->fn) {
		tr_lane_count_drop(l, 1);
		tr_warn("rank %d sent an active message for id %u, which has no handler: dropped",
			l->peer, id);
		return 0;
	}
	return call(ctx, e, l->peer, data, len, b) == TRIAD_AM_KEEP;
}

/* Hands over the early ones numbered before upto, in order. */
static void deliver_early(struct triad_ctx *ctx, struct tr_peer *p, unsigned prio, uint32_t upto)
{
	struct tr_list *q = &ctx->am->early[p->rank][prio];

	while (!tr_list_empty(q)) {
		struct tr_am_early *e = tr_list_first(q, struct tr_am_early, link);

		if (!tr_seq_before(e->seq, upto))
			return;
		tr_list_del(&e->link);
		if (!handle(ctx, e->l, e->id, e->data, e->len, e->b)) {
			free(e->b->data);
			free(e->b);
		}
		free(e);
	}
}

/* The peer hook: p's numbers of prio moved; hand over the active messages
 * that waited for them (strict order). */
static void rx_moved(struct triad_ctx *ctx, struct tr_peer *p, unsigned prio)
{
	if (!tr_list_empty(&ctx->am->early[p->rank][prio]))
		deliver_early(ctx, p, prio, tr_stream_rx_next(&p->pl.rx[prio]));
}

/* Copies m out of its slot into the early list, in order of number: early
 * messages must never hold the slots that the one they wait for needs (it
 * may come on this very lane, sent again after its own lane broke).  0, or
 * -ENOMEM. */
static int hold(struct tr_lane *l, const struct tr_msg *m)
{
	struct tr_list *q = &l->ctx->am->early[l->peer][m->prio];
	struct tr_buf *copy = calloc(1, sizeof(*copy));
	struct tr_am_early *e = malloc(sizeof(*e)), *at = NULL;

	if (copy)
		copy->data = malloc(m->u.am.len ? m->u.am.len : 1);
	if (!e || !copy || !copy->data) {
		free(e);
		if (copy)
			free(copy->data);
		free(copy);
		return -ENOMEM;
	}
	memcpy(copy->data, m->u.am.data, m->u.am.len);
	copy->len = (int)m->u.am.len;
	/* lane NULL: triad_am_release() frees it like a message to self */
	*e = (struct tr_am_early){ .b = copy, .l = l, .seq = m->seq, .id = m->u.am.id,
				   .len = m->u.am.len, .data = copy->data };
	/* Most come last: look from the end. */
	for (struct tr_list *i = q->prev; i != q; i = i->prev) {
		struct tr_am_early *x = tr_container_of(i, struct tr_am_early, link);

		if (tr_seq_before(x->seq, e->seq)) {
			at = x;
			break;
		}
	}
	/* After the last one it follows (add_tail inserts before). */
	tr_list_add_tail(at ? at->link.next : q->next, &e->link);
	return 0;
}

/* The AM handler: deliver m, which sits in receive buffer b; 1 when the
 * application's handler kept it. */
static int am_deliver(struct tr_lane *l, const struct tr_msg *m, struct tr_buf *b)
{
	struct triad_ctx *ctx = l->ctx;
	struct tr_peer *p = &ctx->peers[l->peer];
	unsigned prio = m->prio;

	if (ctx->cfg.order != TR_ORDER_STRICT)
		return handle(ctx, l, m->u.am.id, m->u.am.data, m->u.am.len, b);
	/* Its own number is in (the caller accepted it): has every one before? */
	if (!tr_seq_before(m->seq, tr_stream_rx_next(&p->pl.rx[prio]))) {
		if (hold(l, m) == 0)
			return 0; /* its slot is free again */
		tr_error("rank %d: no memory to hold an early active message: handled out of "
			 "order", l->peer);
		return handle(ctx, l, m->u.am.id, m->u.am.data, m->u.am.len, b);
	}
	/* Its turn has come, and with it that of the early ones before it
	 * (the number that held them was this one's, or one just before);
	 * those after it go when the caller, peer.c's dispatch, calls
	 * rx_moved() as after every message. */
	deliver_early(ctx, p, prio, m->seq);
	return handle(ctx, l, m->u.am.id, m->u.am.data, m->u.am.len, b);
}

int tr_am_setup(struct triad_ctx *ctx)
{
	static const struct tr_peer_hooks hooks = { .rx_moved = rx_moved };

	ctx->am = calloc(1, sizeof(*ctx->am) + (size_t)ctx->size * sizeof(ctx->am->early[0]));
	if (!ctx->am)
		return -ENOMEM;
	for (int r = 0; r < ctx->size; r++)
		for (unsigned prio = 0; prio < TR_FC_NPRIO; prio++)
			tr_list_init(&ctx->am->early[r][prio]);
	tr_peer_handle(ctx, TR_MSG_AM, am_deliver);
	return tr_peer_hooks_add(ctx, &hooks);
}

void tr_am_teardown(struct triad_ctx *ctx)
{
	if (!ctx->am)
		return;
	for (int r = 0; r < ctx->size; r++)
		for (unsigned prio = 0; prio < TR_FC_NPRIO; prio++) {
			struct tr_list *q = &ctx->am->early[r][prio];

			while (!tr_list_empty(q)) {
				struct tr_am_early *e = tr_list_first(q, struct tr_am_early, link);

				tr_list_del(&e->link);
				free(e->b->data);
				free(e->b);
				free(e);
			}
		}
	free(ctx->am);
	ctx->am = NULL;
}

/* A message to this rank itself: no slot, the handler gets a private copy. */
static int am_self(struct triad_ctx *ctx, unsigned id, const void *buf, size_t len)
{
	struct tr_am_entry *e = &ctx->am->h[id];
	struct tr_buf *b;

	if (!e->fn) {
		tr_warn("active message to this rank for id %u, which has no handler: dropped", id);
		return 0;
	}
	b = calloc(1, sizeof(*b));
	if (!b || !(b->data = malloc(len ? len : 1))) {
		free(b);
		return -ENOMEM;
	}
	memcpy(b->data, buf, len);
	if (call(ctx, e, ctx->rank, b->data, len, b) != TRIAD_AM_KEEP)
		triad_am_release((triad_am_msg_t *)b);
	return 0;
}

int triad_am_send(triad_ctx_t *ctx, int rank, unsigned id, const void *buf, size_t len,
		  enum triad_prio prio, triad_req_t **req_p)
{
	struct tr_msg m = { .type = TR_MSG_AM };
	struct triad_req *req = NULL;
	struct tr_lane *l;
	int ret = 0;

	if (!ctx || (!buf && len) || id > TRIAD_AM_MAX_ID || (unsigned)prio > TRIAD_PRIO_LOW ||
	    rank < 0 || rank >= (ctx ? ctx->size : 0)) {
		if (ctx)
			tr_debug("am_send: bad arguments (rank %d of %d, id %u, prio %d)", rank,
				 ctx->size, id, (int)prio);
		return -EINVAL;
	}
	if (len > triad_am_max_size(ctx))
		return -EMSGSIZE;
	if (req_p) {
		req = tr_req_new(ctx, TR_REQ_AM, rank);
		if (!req)
			return -ENOMEM;
		req->len = len;
	}
	tr_ctx_lock(ctx);
	if (rank == ctx->rank) {
		ret = am_self(ctx, id, buf, len);
		if (!ret && req)
			tr_req_complete(req, TRIAD_S_OK);
		goto out;
	}
	if (tr_stream_tx_unsettled(&ctx->peers[rank].pl.tx[prio]) >= TR_AM_QUEUE_MAX) {
		ret = -EAGAIN; /* progress lets the oldest arrive */
		goto out;
	}
	l = tr_peer_lane(ctx, rank, 0);
	m.u.am.id = (uint16_t)id;
	m.u.am.len = (uint32_t)len;
	m.u.am.data = buf;
	ret = tr_peer_send_chosen(l, &m, (unsigned)prio, req);
	if (ret == -ENOTCONN && req) {
		tr_req_complete(req, l->down_status);
		ret = 0;
	}
out:
	pthread_mutex_unlock(&ctx->lock);
	if (ret) {
		free(req);
		return ret;
	}
	if (req_p)
		*req_p = req;
	return 0;
}

int triad_am_release(triad_am_msg_t *msg)
{
	struct tr_buf *b = (struct tr_buf *)msg;
	struct triad_ctx *ctx;

	if (!b)
		return -EINVAL;
	if (!b->lane) { /* a message to self */
		free(b->data);
		free(b);
		return 0;
	}
	ctx = b->lane->ctx;
	tr_ctx_lock(ctx);
	tr_lane_release(b);
	tr_ctx_signal(ctx);
	pthread_mutex_unlock(&ctx->lock);
	return 0;
}
