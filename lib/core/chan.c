/* The message channel of a lane (see chan.h): its buffers and slots, the
 * queues by priority, the sends and their completions, the buffer status,
 * and the arrivals, handed to the peer layer in order of the wire. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "base/log.h"
#include "core/chan.h"
#include "core/onesided.h"
#include "core/progress.h"
#include "core/req.h"

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

/* ---- buffers ----------------------------------------------------------------------*/
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
static int chan_setup(struct tr_lane *l, const struct tr_conn_priv *peer)
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

static int post_recv(struct tr_buf *b)
{
	struct tr_lane *l = b->lane;
	int ret = tr_fab_post_recv(l->qp, b->data, (uint32_t)l->ctx->cfg.slot_size, l->buf_mr,
				   (uintptr_t)b | TR_CK_RECV);

	if (!ret)
		l->rq_posted++;
	return ret;
}

static int chan_post_recvs(struct tr_lane *l)
{
	for (int i = 0; i < l->nrx; i++)
		if (post_recv(&l->rx[i]))
			return -EIO;
	return 0;
}

static void chan_drop(struct tr_lane *l)
{
	for (int p = 0; p < TR_FC_NPRIO; p++) {
		while (!tr_list_empty(&l->msgq[p])) {
			struct queued_msg *q = tr_list_first(&l->msgq[p], struct queued_msg, link);

			tr_list_del(&q->link);
			qnode_put(l->ctx, q);
		}
	}
	l->nqueued = 0;
}

/* A broken lane's messages still waiting for a slot go to another lane,
 * or back to their owners (an ordered send: req->lost), once everything
 * it had posted has come back: a message given back earlier could
 * overtake what was posted before it, and the owner of an ordered send
 * would find the WRITEs it follows still in flight here.  So they follow
 * the posted messages, and the operations are settled first
 * (their owner's msg_lost). */
static void chan_give_back(struct tr_lane *l)
{
	for (int p = 0; p < TR_FC_NPRIO; p++) {
		while (!tr_list_empty(&l->msgq[p])) {
			struct queued_msg *q = tr_list_first(&l->msgq[p], struct queued_msg, link);

			tr_list_del(&q->link);
			l->nqueued--;
			l->ctx->lane_owner->msg_lost(l, q->data, q->len, (unsigned)p, q->req);
			qnode_put(l->ctx, q);
		}
	}
}

/* ---- sending ------------------------------------------------------------------------*/
/* A message may be posted while its number is within its stream's window
 * (proto/stream): spread over planes, one of which silently lost a batch,
 * the others must not run so far ahead that the receiver has to keep
 * more than its buffers hold. */
static int seq_ok(const struct tr_lane *l, const void *data)
{
	unsigned type = tr_wire_type(data);

	if (type == TR_MSG_SEQ_SKIP || type == TR_MSG_BSM) /* carry no number */
		return 1;
	return tr_stream_tx_may_post(&l->pl->tx[tr_wire_prio(data)], tr_wire_seq(data));
}

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
			if (!seq_ok(l, q->data)) {
				/* Too far ahead of what the peer has: the completion
				 * that moves the window pumps it again. */
				l->pl->blocked = 1;
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
	if (tr_ctx_adapts(l->ctx)) /* a pass: waiting messages may go elsewhere now */
		l->ctx->lane_owner->redecide(l);
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
 * on the lane.  The sender's window (seq_ok) then always lets the
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
	    seq_ok(l, data) && (slot = tr_fc_tx_pick(&l->fc_tx, prio)) >= 0) {
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
	return q->movable && seq_ok(l, q->data);
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
		tr_lane_orphan_put(b->orphan);
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
	uint32_t next[TR_WIRE_PRIOS];

	if (!tr_ctx_takes_bare(ctx) || wc->len > (uint32_t)ctx->cfg.slot_size - TR_WIRE_BARE_SKIP)
		return -EPROTO;
	for (int i = 0; i < TR_WIRE_PRIOS; i++)
		next[i] = tr_stream_rx_next(&l->pl->rx[i]);
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
		l->ctx->lane_owner->on_msg(l, &m, NULL);
		pump(l);
		return;
	}
	if (l->ctx->lane_owner->on_msg(l, &m, b)) {
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
			l->ctx->lane_owner->msg_lost(l, b->data, b->len, b->prio, req);
		send_buf_done(l, b);
		tr_lane_check_drained(l);
		return;
	}
	if (!bsm)
		l->ctx->lane_owner->seq_done(l, b->data, b->len);
	send_buf_done(l, b);
	if (req)
		tr_req_complete(req, TRIAD_S_OK);
	pump(l);
	tr_lane_rma_pump(l);
	tr_lane_check_drained(l); /* a post of the pumps above may have broken it */
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
	return tr_lane_after_where(l, prio, seq);
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
		ctx->lane_owner->describe(ctx, l->peer, line, sizeof(line));
		tr_warn("peer %d plane %d: a %s message (priority %u, seq %u) has waited more than "
			"%.1f s to be sent: send buffers %s, send queue room %d, a slot for it %s, "
			"its number %s the window; to rank %d: %s",
			l->peer, l->plane, tr_msg_type_str(tr_wire_type(q->data)), p,
			tr_wire_seq(q->data), (double)waited_ms * 1e-3,
			l->tx_free ? "free" : "all in use", l->sq_avail,
			tr_fc_tx_pick(&l->fc_tx, p) >= 0 ? "free" : "not free",
			seq_ok(l, q->data) ? "within" : "beyond", l->peer, line);
	}
}

/* Every receive slot of l held here (handlers keep the messages, or they
 * wait parked for their turn) for STUCK_MS: the peer can send nothing more
 * on it.  Said once per such stretch, with this side of the streams (the
 * sender's own report, tell_stuck, cannot see it). */
static void tell_held(struct tr_lane *l)
{
	/* the first period that ends STUCK_MS or more after the first */
	int period = l->ctx->cfg.fc_timer_ms;
	int told_at = period >= STUCK_MS ? 1 : (STUCK_MS + period - 1) / period;
	char line[768];

	if (l->rx_held < (int)l->fc_rx.nslots) {
		l->held_ticks = 0;
		return;
	}
	if (++l->held_ticks != told_at)
		return;
	l->ctx->lane_owner->describe(l->ctx, l->peer, line, sizeof(line));
	tr_warn("peer %d plane %d: all %d receive slots held here for more than %.1f s (kept "
		"by handlers, or waiting for an earlier number): from rank %d: %s",
		l->peer, l->plane, l->rx_held, STUCK_MS * 1e-3, l->peer, line);
}

void tr_lane_fc_tick(struct tr_lane *l)
{
	unsigned n;

	if (l->state == TR_LANE_DRAINING)
		tr_lane_drain_tick(l);
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
	tell_held(l);
	/* Queued messages and a due buffer status go as soon as what they
	 * wait for comes back; a pump here too costs nothing when they
	 * cannot, and a wake-up missed (a bug) then delays them by one period
	 * instead of for ever.  A status still lingering is overdue (the
	 * linger is at most a quarter period). */
	tr_lane_bsm_flush(l);
	if (n || l->nqueued || tr_fc_rx_bsm_due(&l->fc_rx))
		pump(l);
}

/* ---- the lane's parts ------------------------------------------------------------------*/
/* l's QP and buffers are released: its light puts and the messages
 * waiting for a slot. */
static void released(struct tr_lane *l)
{
	tr_lane_lputs_cancel(l);
	chan_drop(l);
}

void tr_chan_setup(struct triad_ctx *ctx)
{
	static const struct tr_lane_parts parts = {
		.setup = chan_setup,
		.post_recvs = chan_post_recvs,
		.pump = tr_lane_pump,
		.give_back = chan_give_back,
		.broke = tr_lane_lputs_broken,
		.released = released,
		.send = tr_lane_send,
	};

	ctx->lane_parts = &parts;
}
