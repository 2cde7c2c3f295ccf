/* Third-party copy: the glue between the copy engine (proto/copy, pure)
 * and the fabric.  The engine decides; this file executes its actions:
 * messages on the flow-controlled channel (START low priority, DATA medium,
 * RESP and DONE high, so acknowledgements always find a slot), WRITE
 * chunks through the put machinery (window descriptor, bounds, the
 * connection's queue), small copies' data carried in COPY_DATA and placed
 * at D (TRIAD_COPY_EAGER), descriptor lookups through the window cache,
 * local copies, notifications, request completions; and it turns
 * completions, arrivals, lost peers and the clock back into engine
 * events. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "core/copy.h"
#include "core/peer.h"
#include "core/progress.h"
#include "core/req.h"
#include "core/rma.h"
#include "core/win.h"
#include "base/log.h"
#include "proto/chunk.h"

_Static_assert((int)TRIAD_LEG_S_I == (int)TR_COPY_LEG_S_I &&
		       (int)TRIAD_LEG_AT_DST == (int)TR_COPY_LEG_AT_DST,
	       "public and engine legs differ");
_Static_assert((int)TRIAD_COPY_TRANSPORT_ACK == (int)TR_COPY_TRANSPORT_ACK &&
		       (int)TRIAD_COPY_DIRECT == (int)TR_COPY_DIRECT,
	       "public and engine modes differ");

#define EVENTS_MAX 4096

/* A copy this rank serves as the source, while WRITE chunks of it are out
 * or its COPY_DATA is not delivered.  COPY_DATA tells the destination that
 * the data is whole, so it must arrive after every chunk's WRITE.  While
 * every chunk out is queued or posted on one connection (a lane, between
 * two of its breaks), COPY_DATA follows them there (the lane's ordered
 * send: RC executes one QP's work requests in order).  Once a chunk took
 * another way (done again elsewhere after a break, waiting for a
 * descriptor or a connection), COPY_DATA waits until every chunk out is
 * back (a chunk done again comes back only once the redo fence let it go),
 * and then goes on any lane. */
struct src_op {
	struct tr_list link;
	uint32_t initiator;
	uint64_t op;
	int to;
	int plane;	/* the lane its chunks take while it can */
	uint32_t gen;	/* that lane's breaks when it was chosen */
	unsigned out;	/* chunks handed over, not back yet */
	int scattered;	/* one of those is not on that connection */
	int failed;	/* a chunk failed: the destination hears no COPY_DATA */
	int settling;
	struct tr_msg *data;	   /* COPY_DATA waiting for every chunk back (no number yet) */
	struct tr_held_msg *held;  /* the same, given back by a broken lane (numbered) */
	struct triad_req *sending; /* COPY_DATA sent (or held), not delivered yet */
};

/* The copies of this rank (ctx->copies), under the context lock. */
struct tr_copies {
	struct tr_copy eng; /* the engine (proto/copy) */
	/* The last source op one of whose chunks failed (initiator, op id;
	 * op ids are never 0): a chunk that fails before it reaches the NIC
	 * fails while the engine's COPY_DATA for the op still waits in the
	 * same action array, and D must not hear of data that never came
	 * (in DIRECT its OK would race S's error to I). */
	uint64_t failed_op;
	uint32_t failed_init;
	struct triad_copy_event *events; /* notifications, a ring */
	unsigned ev_head, ev_count, ev_cap;
	uint64_t ev_dropped;
	struct tr_list srcs; /* struct src_op */
};

static struct tr_copy *eng(const struct triad_ctx *ctx)
{
	return &ctx->copies->eng;
}

const struct tr_copy *tr_copy_engine(const struct triad_ctx *ctx)
{
	return eng(ctx);
}

static struct src_op *src_find(struct triad_ctx *ctx, uint32_t initiator, uint64_t op)
{
	struct tr_copies *cs = ctx->copies;

	for (struct tr_list *e = cs->srcs.next; e != &cs->srcs; e = e->next) {
		struct src_op *s = tr_container_of(e, struct src_op, link);

		if (s->initiator == initiator && s->op == op)
			return s;
	}
	return NULL;
}

static struct src_op *src_get(struct triad_ctx *ctx, uint32_t initiator, uint64_t op, int to)
{
	struct src_op *s = src_find(ctx, initiator, op);

	if (s || !(s = calloc(1, sizeof(*s))))
		return s;
	s->initiator = initiator;
	s->op = op;
	s->to = to;
	s->plane = -1;
	tr_list_add_tail(&ctx->copies->srcs, &s->link);
	return s;
}

/* The lane the op's next chunk takes: the one its chunks out took, while
 * that connection lives; else the choice's (and the op is scattered if
 * chunks are still out elsewhere). */
static struct tr_lane *src_lane(struct triad_ctx *ctx, struct src_op *s)
{
	struct tr_lane *l;

	if (s->plane >= 0) {
		l = &ctx->peers[s->to].lane[s->plane];
		if (tr_lane_live(ctx, l) && l->fence.down_gen == s->gen)
			return l;
	}
	l = tr_peer_lane(ctx, s->to, 0);
	s->scattered = s->out > 0;
	s->plane = l->plane;
	s->gen = l->fence.down_gen;
	return l;
}

static void src_settle(struct triad_ctx *ctx, struct src_op *s);

/* Op s's COPY_DATA, held since a break gave it back, will not go: its
 * number is skipped and its request freed (it was never delivered). */
static void held_drop(struct triad_ctx *ctx, struct src_op *s)
{
	tr_peer_msg_unhold(ctx, s->held, 0);
	s->held = NULL;
	free(s->sending);
	s->sending = NULL;
}

const char *triad_copy_leg_str(enum triad_copy_leg leg)
{
	return tr_copy_leg_str((unsigned)leg);
}

static int win_cb(void *arg, uint32_t id, struct tr_copy_win *out)
{
	struct triad_win *w = tr_win_find(arg, id);

	if (!w)
		return -ENOENT;
	out->size = w->len;
	out->access = w->access;
	out->notify = w->notify;
	return 0;
}

/* What a COPY_DATA to rank may carry: its receive slots' room beside the
 * headers, the smallest its connections announced (TRIAD_SLOT_SIZE may
 * differ between ranks), or ours while it has none. */
static uint64_t carry_max(void *arg, uint32_t rank)
{
	struct triad_ctx *ctx = arg;
	uint64_t slot = ctx->cfg.slot_size;

	for (int q = 0; q < ctx->nplanes; q++) {
		unsigned peer_slot = ctx->peers[rank].lane[q].peer_slot_size;

		if (peer_slot && peer_slot < slot)
			slot = peer_slot;
	}
	/* Slots are at least 512 bytes (TRIAD_SLOT_SIZE, the private data). */
	return slot - TR_WIRE_HDR_LEN - TR_WIRE_COPY_LEN;
}

static int on_copy_msg(struct tr_lane *l, const struct tr_msg *m, struct tr_buf *b);
static void on_peer_lost(struct triad_ctx *ctx, int peer, enum triad_status st);
static void tick(struct triad_ctx *ctx);
static void req_done(struct triad_req *req, enum triad_status st);

/* Does an answer to a copy this rank initiated or serves as the source
 * still have to come (the engine's tables hold the op: START's RESP or
 * DONE, a WRITE's completion)? */
static int awaited(const struct triad_ctx *ctx)
{
	return eng(ctx)->ilive + eng(ctx)->slive > 0;
}

int tr_copy_setup(struct triad_ctx *ctx)
{
	static const struct tr_peer_hooks hooks = { .lost = on_peer_lost };
	static const struct tr_progress_hooks progress = { .tick = tick, .awaited = awaited };
	struct tr_copy_cfg cfg = {
		.rank = (uint32_t)ctx->rank,
		.nranks = (uint32_t)ctx->size,
		.chunk = ctx->cfg.chunk_size,
		.eager = ctx->cfg.copy_eager,
		.carry_max = carry_max,
		.inflight = 16,
		.src_timeout = (uint64_t)ctx->cfg.copy_timeout_ms * 1000000,
		.niops = (uint32_t)ctx->cfg.copy_ops,
		.nsops = (uint32_t)ctx->cfg.copy_ops,
		.win = win_cb,
		.win_arg = ctx,
	};

	struct tr_copies *cs = calloc(1, sizeof(*cs));

	if (!cs)
		return -ENOMEM;
	ctx->copies = cs;
	cfg.iops = calloc(cfg.niops, sizeof(*cfg.iops));
	cfg.sops = calloc(cfg.nsops, sizeof(*cfg.sops));
	cs->events = calloc(EVENTS_MAX, sizeof(*cs->events));
	cs->ev_cap = EVENTS_MAX;
	tr_list_init(&cs->srcs);
	if (!cfg.iops || !cfg.sops || !cs->events || tr_copy_init(&cs->eng, &cfg)) {
		free(cfg.iops);
		free(cfg.sops);
		cs->eng.cfg.iops = NULL;
		cs->eng.cfg.sops = NULL;
		tr_error("cannot set up the copy engine for %d ops", ctx->cfg.copy_ops);
		return -ENOMEM;
	}
	tr_peer_handle(ctx, TR_MSG_COPY, on_copy_msg);
	tr_req_kind_done(ctx, TR_REQ_CHUNK, req_done);
	tr_req_kind_done(ctx, TR_REQ_LOOKUP, req_done);
	if (tr_peer_hooks_add(ctx, &hooks))
		return -ENOSPC;
	return tr_progress_hooks_add(ctx, &progress);
}

static void exec(struct triad_ctx *ctx, const struct tr_copy_act *a, int n);
static void chunk_failed(struct triad_ctx *ctx, uint32_t initiator, uint64_t op);

/* Calls an engine function that may touch every op until it has no more. */
#define DRAIN(ctx, call)                                                      \
	do {                                                                  \
		struct tr_copy_act acts_[TR_COPY_ACTS];                       \
		int n_;                                                       \
		while ((n_ = (call)) > 0)                                     \
			exec((ctx), acts_, n_);                               \
	} while (0)
#define ACTS acts_, TR_COPY_ACTS

void tr_copy_teardown(struct triad_ctx *ctx)
{
	struct tr_copies *cs = ctx->copies;

	if (!cs)
		return;
	if (cs->eng.cfg.iops) {
		DRAIN(ctx, tr_copy_cancel_all(&cs->eng, ACTS));
		free(cs->eng.cfg.iops);
		free(cs->eng.cfg.sops);
	}
	while (!tr_list_empty(&cs->srcs)) {
		struct src_op *s = tr_list_first(&cs->srcs, struct src_op, link);

		tr_list_del(&s->link);
		free(s->data);
		if (s->held)
			held_drop(ctx, s);
		free(s); /* a COPY_DATA still sending is told (closing) without it */
	}
	free(cs->events);
	free(cs);
	ctx->copies = NULL;
}

/* The progress tick: the engine's deadlines. */
static void tick(struct triad_ctx *ctx)
{
	if (!tr_copy_requests_live(eng(ctx)) && !tr_copy_orders_live(eng(ctx)))
		return;
	DRAIN(ctx, tr_copy_tick(eng(ctx), tr_now_ns(), ACTS));
}

static void peer_lost(struct triad_ctx *ctx, int peer)
{
	tr_info("rank %d is unreachable on every plane: failing its copies", peer);
	DRAIN(ctx, tr_copy_peer_gone(eng(ctx), (uint32_t)peer, ACTS));
}

/* The peer hook: not while starting or closing (the teardown cancels). */
static void on_peer_lost(struct triad_ctx *ctx, int peer, enum triad_status st)
{
	(void)st;
	if (ctx->initialized && !ctx->closing)
		peer_lost(ctx, peer);
}

/* ---- actions -----------------------------------------------------------------*/
static struct triad_req *internal_req(struct triad_ctx *ctx, enum tr_req_kind kind,
				      const struct tr_copy_act *a)
{
	struct triad_req *req = tr_req_new(ctx, kind, (int)a->to);

	if (!req)
		return NULL;
	req->win = a->hdr.dst_win;
	req->c_init = a->hdr.initiator;
	req->c_op = a->hdr.op_id;
	req->c_chunk = a->chunk;
	req->lane = tr_peer_lane(ctx, req->peer, 0);
	req->plane = req->lane->plane;
	return req;
}

/* COPY_START's message request: it arrived, or cannot be delivered (the
 * engine hears of a lost source through peer_lost). */
static void start_delivered(struct triad_req *req)
{
	if (req->status == TRIAD_S_OK)
		tr_copy_start_delivered(eng(req->ctx), req->c_op);
	free(req);
}

/* COPY_DATA's request: it arrived, or it is lost for good (the peer layer
 * skipped its number). */
static void data_done(struct triad_req *req)
{
	struct triad_ctx *ctx = req->ctx;
	struct src_op *s = ctx->copies ? src_find(ctx, req->c_init, req->c_op) : NULL;

	free(req);
	if (!s)
		return;
	s->sending = NULL;
	src_settle(ctx, s);
}

/* COPY_DATA (data, numbered) came back from l, broken before it was
 * delivered: it goes again with its number once every chunk out is back
 * (they may be waiting for the redo fence, or done again on any lane);
 * not at all when a chunk failed. */
static void data_lost(struct triad_req *req, struct tr_lane *l, const void *data, int len,
		      unsigned prio)
{
	struct triad_ctx *ctx = req->ctx;
	struct src_op *s =
		ctx->copies && !ctx->closing ? src_find(ctx, req->c_init, req->c_op) : NULL;

	if (!s || s->failed) {
		tr_peer_msg_skip(l, data, len);
		data_done(req);
		return;
	}
	if (s->out && (s->held = tr_peer_msg_hold(l, data, len, prio, req)))
		return;
	tr_peer_msg_resend(l, data, len, prio, req);
}

/* COPY_DATA m of op s, some of whose chunks are out: right behind them on
 * their lane, or once they are back. */
static void data_send(struct triad_ctx *ctx, struct src_op *s, struct tr_msg *m)
{
	struct tr_lane *l = s->plane >= 0 ? &ctx->peers[s->to].lane[s->plane] : NULL;
	int after = s->out > 0;
	struct triad_req *req;
	int ret;

	if (after && (s->scattered || !l || l->state != TR_LANE_UP ||
		      l->fence.down_gen != s->gen))
		goto hold;
	req = tr_req_new(ctx, TR_REQ_MSG, s->to);
	if (!req && after)
		goto hold;
	if (req) {
		req->c_init = s->initiator;
		req->c_op = s->op;
		req->on_done = data_done;
		req->lost = data_lost;
	}
	ret = after ? tr_peer_send_after(l, m, TR_FC_MEDIUM, req)
		    : tr_peer_send(ctx, s->to, m, TR_FC_MEDIUM, req);
	if (ret == -EAGAIN && after) {
		free(req); /* the stream's window is full: once the chunks are back */
		goto hold;
	}
	if (ret) {
		free(req);
		peer_lost(ctx, s->to);
		return;
	}
	s->sending = req;
	return;
hold:
	if ((s->data = malloc(sizeof(*m))))
		*s->data = *m;
	else
		tr_error("copy %llu of rank %u: no memory to hold its COPY_DATA until its chunks "
			 "are back: the copy times out", (unsigned long long)s->op, s->initiator);
}

/* What waited for op s's chunks goes once they are all back; s goes once
 * nothing of it is left. */
static void src_settle(struct triad_ctx *ctx, struct src_op *s)
{
	if (s->settling)
		return; /* the outer call goes on */
	s->settling = 1;
	if (!s->out && s->data) {
		struct tr_msg *m = s->data;

		s->data = NULL;
		s->scattered = 0;
		if (!s->failed && !ctx->closing)
			data_send(ctx, s, m);
		free(m);
	}
	if (!s->out && s->held) {
		if (s->failed || ctx->closing) {
			held_drop(ctx, s);
		} else {
			struct tr_held_msg *h = s->held;

			s->held = NULL;
			tr_peer_msg_unhold(ctx, h, 1);
		}
	}
	s->settling = 0;
	if (!s->out && !s->data && !s->held && !s->sending) {
		tr_list_del(&s->link);
		free(s);
	}
}

static void act_send(struct triad_ctx *ctx, const struct tr_copy_act *a)
{
	static const unsigned prio[TR_COPY_NMSGS] = {
		[TR_COPY_START] = TR_FC_LOW,
		[TR_COPY_DATA] = TR_FC_MEDIUM,
		[TR_COPY_RESP] = TR_FC_HIGH,
		[TR_COPY_DONE] = TR_FC_HIGH,
	};
	struct tr_msg m = { .type = TR_MSG_COPY };

	m.u.copy.kind = (uint8_t)a->msg;
	m.u.copy.hdr = a->hdr;
	if (a->msg == TR_COPY_DATA && a->hdr.op_id == ctx->copies->failed_op &&
	    a->hdr.initiator == ctx->copies->failed_init) {
		tr_debug("copy %llu of rank %u: a chunk failed before the data went out: no "
			 "COPY_DATA", (unsigned long long)a->hdr.op_id, a->hdr.initiator);
		return;
	}
	if (a->msg == TR_COPY_DATA) {
		struct src_op *s = src_find(ctx, a->hdr.initiator, a->hdr.op_id);

		if (s && s->out) {
			data_send(ctx, s, &m);
			return;
		}
		/* Every chunk is back: the data is there, any lane will do. */
	}
	if (a->msg == TR_COPY_START) {
		/* Its arrival tells the engine that the order reached the source:
		 * a source lost after that is leg S_I (or S_D), not I_S. */
		struct triad_req *req = tr_req_new(ctx, TR_REQ_MSG, (int)a->to);

		if (req) {
			req->c_op = a->hdr.op_id;
			req->on_done = start_delivered;
		}
		if (tr_peer_send(ctx, (int)a->to, &m, prio[a->msg], req)) {
			free(req);
			peer_lost(ctx, (int)a->to);
		}
		return;
	}
	if (tr_peer_send(ctx, (int)a->to, &m, prio[a->msg], NULL))
		peer_lost(ctx, (int)a->to);
}

static void act_lookup(struct triad_ctx *ctx, const struct tr_copy_act *a)
{
	struct triad_req *req = internal_req(ctx, TR_REQ_LOOKUP, a);
	struct tr_copy_act acts[TR_COPY_ACTS];
	int n;

	if (!req) {
		n = tr_copy_desc(eng(ctx), a->hdr.initiator, a->hdr.op_id, TRIAD_S_NO_MEMORY,
				 NULL, acts, TR_COPY_ACTS);
		exec(ctx, acts, n);
		return;
	}
	if (tr_win_lookup(ctx, req)) /* answers through req_done() */
		tr_rma_start(req);
}

/* The source window as it is now, not as the order found it: between
 * COPY_START and a chunk (the destination's descriptor may take a round
 * trip) the window may have been destroyed, or created again under the
 * same id smaller or without READ.  A chunk past its registration would
 * make the NIC fail the whole connection; it fails alone instead. */
static enum triad_status chunk_source(struct triad_ctx *ctx, const struct tr_copy_act *a,
				      struct triad_win **sw_p)
{
	struct triad_win *sw = tr_win_find(ctx, a->hdr.src_win);

	*sw_p = sw;
	if (!sw)
		return TRIAD_S_NO_WINDOW;
	if (!(sw->access & TRIAD_WIN_READ))
		return TRIAD_S_ACCESS;
	if (!tr_range_ok(sw->len, a->src_off, a->len))
		return TRIAD_S_OUT_OF_BOUNDS;
	return TRIAD_S_OK;
}

/* A chunk (a WRITE, or a carried COPY_DATA) that never reached the NIC:
 * its window can no longer serve it (leg AT_SRC), or the rank had no
 * memory or the send failed (leg S_D). */
static void chunk_unposted(struct triad_ctx *ctx, const struct tr_copy_act *a,
			   enum triad_status st)
{
	struct tr_copy_act acts[TR_COPY_ACTS];
	int window = st == TRIAD_S_NO_WINDOW || st == TRIAD_S_ACCESS ||
		     st == TRIAD_S_OUT_OF_BOUNDS;
	int n = window ? tr_copy_chunk_refused(eng(ctx), a->hdr.initiator, a->hdr.op_id,
					       a->chunk, st, acts, TR_COPY_ACTS)
		       : tr_copy_chunk_done(eng(ctx), a->hdr.initiator, a->hdr.op_id, a->chunk,
					    st, acts, TR_COPY_ACTS);

	exec(ctx, acts, n);
}

static void act_write(struct triad_ctx *ctx, const struct tr_copy_act *a)
{
	struct triad_req *req = internal_req(ctx, TR_REQ_CHUNK, a);
	struct triad_win *sw = NULL;
	enum triad_status st = req ? chunk_source(ctx, a, &sw) : TRIAD_S_NO_MEMORY;

	if (st != TRIAD_S_OK) {
		if (st != TRIAD_S_NO_MEMORY)
			tr_info("copy %llu of rank %u: source window %u cannot serve [%llu, +%llu) "
				"any more: %s", (unsigned long long)a->hdr.op_id, a->hdr.initiator,
				a->hdr.src_win, (unsigned long long)a->src_off,
				(unsigned long long)a->len, triad_status_str(st));
		chunk_failed(ctx, a->hdr.initiator, a->hdr.op_id);
		free(req);
		chunk_unposted(ctx, a, st);
		return;
	}
	/* Transport-ack sends no COPY_DATA after the chunks: any lane will do. */
	if (a->hdr.mode != TR_COPY_TRANSPORT_ACK) {
		struct src_op *s = src_get(ctx, a->hdr.initiator, a->hdr.op_id, req->peer);

		if (!s) {
			chunk_failed(ctx, a->hdr.initiator, a->hdr.op_id);
			free(req);
			chunk_unposted(ctx, a, TRIAD_S_NO_MEMORY);
			return;
		}
		req->lane = src_lane(ctx, s);
		req->plane = req->lane->plane;
		s->out++;
		/* Not queued on its lane at once: it waits for a connection, or
		 * for the destination's window to be described again. */
		if (req->lane->state != TR_LANE_UP || !tr_rwin_ready(ctx, req->peer, req->win))
			s->scattered = 1;
	}
	req->off = a->dst_off;
	req->len = a->len;
	req->buf = sw->base + a->src_off;
	req->mr = sw->mr[req->plane];
	if (req->lane->state != TR_LANE_UP && tr_peer_await(ctx, req->peer))
		tr_rma_await(ctx, req); /* no lane up: it waits for one (rejoin) */
	else if (!tr_fab_plane_port_up(ctx->fab, req->plane))
		tr_req_complete(req, TRIAD_S_PLANE_DOWN);
	else if (req->lane->state != TR_LANE_UP)
		tr_req_complete(req, req->lane->down_status);
	else if (tr_win_lookup(ctx, req)) /* cached by the LOOKUP: posts at once */
		tr_rma_start(req);
}

/* COPY_DATA's send completion: its data's, reported as chunk 0. */
static void carry_done(struct triad_req *req)
{
	struct triad_ctx *ctx = req->ctx;
	struct tr_copy_act acts[TR_COPY_ACTS];
	int n = tr_copy_chunk_done(eng(ctx), req->c_init, req->c_op, 0, req->status, acts,
				   TR_COPY_ACTS);

	free(req);
	exec(ctx, acts, n);
}

/* A small copy: COPY_DATA carries the data (any lane: no chunk to follow). */
static void act_carry(struct triad_ctx *ctx, const struct tr_copy_act *a)
{
	struct triad_req *req = internal_req(ctx, TR_REQ_MSG, a);
	struct triad_win *sw = NULL;
	enum triad_status st = req ? chunk_source(ctx, a, &sw) : TRIAD_S_NO_MEMORY;
	struct tr_msg m = { .type = TR_MSG_COPY };
	int ret;

	if (st != TRIAD_S_OK) {
		free(req);
		chunk_unposted(ctx, a, st);
		return;
	}
	req->on_done = carry_done;
	m.u.copy.kind = TR_COPY_DATA;
	m.u.copy.hdr = a->hdr;
	m.u.copy.carried = (uint32_t)a->len;
	m.u.copy.data = sw->base + a->src_off;
	ret = tr_peer_send(ctx, (int)a->to, &m, TR_FC_MEDIUM, req);
	if (!ret)
		return;
	free(req);
	if (ret == -ENOTCONN) {
		peer_lost(ctx, (int)a->to);
		return;
	}
	/* no memory; too big for a slot the peer announced late */
	tr_warn("copy %llu of rank %u: cannot send its %llu bytes to rank %u: %s",
		(unsigned long long)a->hdr.op_id, a->hdr.initiator, (unsigned long long)a->len,
		a->to, strerror(-ret));
	chunk_unposted(ctx, a, ret == -ENOMEM ? TRIAD_S_NO_MEMORY : TRIAD_S_TRANSPORT);
}

static void act_place(struct triad_ctx *ctx, const struct tr_copy_act *a)
{
	struct triad_win *dw = tr_win_find(ctx, a->hdr.dst_win);

	/* The engine checked the window and the range in this same call. */
	if (dw)
		memcpy(dw->base + a->dst_off, a->data, a->len);
}

static void act_local(struct triad_ctx *ctx, const struct tr_copy_act *a)
{
	struct triad_win *sw = tr_win_find(ctx, a->hdr.src_win);
	struct triad_win *dw = tr_win_find(ctx, a->hdr.dst_win);

	/* The engine checked both windows in this same call. */
	if (sw && dw && a->len)
		memmove(dw->base + a->dst_off, sw->base + a->src_off, a->len);
}

static void act_notify(struct triad_ctx *ctx, const struct tr_copy_act *a)
{
	struct tr_copies *cs = ctx->copies;
	struct triad_copy_event *ev;

	if (cs->ev_count == cs->ev_cap) {
		if (!cs->ev_dropped++)
			tr_warn("copy notifications are not being polled: dropping them");
		return;
	}
	ev = &cs->events[(cs->ev_head + cs->ev_count++) % cs->ev_cap];
	ev->copy_id = a->hdr.op_id;
	ev->initiator = (int)a->hdr.initiator;
	ev->source = (int)a->hdr.source;
	ev->win = a->hdr.dst_win;
	ev->offset = a->dst_off;
	ev->length = a->len;
}

static void exec(struct triad_ctx *ctx, const struct tr_copy_act *a, int n)
{
	for (int i = 0; i < n; i++, a++) {
		switch (a->type) {
		case TR_COPY_ACT_SEND: act_send(ctx, a); break;
		case TR_COPY_ACT_WRITE: act_write(ctx, a); break;
		case TR_COPY_ACT_LOCAL: act_local(ctx, a); break;
		case TR_COPY_ACT_LOOKUP: act_lookup(ctx, a); break;
		case TR_COPY_ACT_CARRY: act_carry(ctx, a); break;
		case TR_COPY_ACT_PLACE: act_place(ctx, a); break;
		case TR_COPY_ACT_NOTIFY: act_notify(ctx, a); break;
		case TR_COPY_ACT_COMPLETE: {
			struct triad_req *req = a->req;

			req->leg = a->hdr.leg;
			tr_req_complete(req, (enum triad_status)a->hdr.status);
			break;
		}
		default: break;
		}
	}
	if (n)
		tr_ctx_signal(ctx);
}

/* ---- events --------------------------------------------------------------------*/
static void chunk_failed(struct triad_ctx *ctx, uint32_t initiator, uint64_t op)
{
	struct src_op *s = src_find(ctx, initiator, op);

	ctx->copies->failed_init = initiator;
	ctx->copies->failed_op = op;
	if (s)
		s->failed = 1;
}

/* A CHUNK or LOOKUP request is complete (its kinds' completion, req.c):
 * reported to the engine, and freed. */
static void req_done(struct triad_req *req, enum triad_status st)
{
	struct triad_ctx *ctx = req->ctx;
	struct tr_copy_act acts[TR_COPY_ACTS];
	struct tr_copy_win desc = { 0 };
	int n;

	if (req->kind == TR_REQ_CHUNK) {
		uint32_t init = req->c_init;
		uint64_t op = req->c_op;
		struct src_op *s = src_find(ctx, init, op);

		if (st == TRIAD_S_OK && req->lane) /* its bytes, on the lane that sent them */
			tr_lane_count(req->lane, req, 1);
		if (st != TRIAD_S_OK)
			chunk_failed(ctx, init, op);
		if (s)
			s->out--;
		n = tr_copy_chunk_done(eng(ctx), init, op, req->c_chunk, st, acts, TR_COPY_ACTS);
		free(req);
		exec(ctx, acts, n);
		/* (the actions may have sent more chunks of it, or its COPY_DATA) */
		if ((s = src_find(ctx, init, op)))
			src_settle(ctx, s);
		return;
	}
	if (st == TRIAD_S_OK && req->rwin) {
		desc.size = req->rwin->len;
		desc.access = req->rwin->access;
	}
	n = tr_copy_desc(eng(ctx), req->c_init, req->c_op, st, st == TRIAD_S_OK ? &desc : NULL,
			 acts, TR_COPY_ACTS);
	free(req);
	exec(ctx, acts, n);
}

static int on_copy_msg(struct tr_lane *l, const struct tr_msg *m, struct tr_buf *b)
{
	struct triad_ctx *ctx = l->ctx;
	int peer = l->peer;
	struct tr_copy_act acts[TR_COPY_ACTS];
	int n = tr_copy_recv(eng(ctx), (enum tr_copy_msg)m->u.copy.kind, (uint32_t)peer,
			     &m->u.copy.hdr, m->u.copy.data, m->u.copy.carried, acts, TR_COPY_ACTS);

	(void)b;
	TR_EV(ctx, "copy_rx", peer, m->u.copy.kind);
	if (n > 0)
		exec(ctx, acts, n);
	return 0;
}

/* ---- API -------------------------------------------------------------------------*/
int triad_copy(triad_ctx_t *ctx, int src_rank, uint32_t src_win, uint64_t src_off,
	       int dst_rank, uint32_t dst_win, uint64_t dst_off, uint64_t len, unsigned flags,
	       triad_req_t **req_p)
{
	struct tr_copy_hdr order = {
		.source = (uint32_t)src_rank,
		.destination = (uint32_t)dst_rank,
		.src_win = src_win,
		.dst_win = dst_win,
		.src_off = src_off,
		.dst_off = dst_off,
		.len = len,
		.mode = (uint8_t)flags,
	};
	struct triad_req *req;
	int n;

	if (!ctx || !req_p || src_rank < 0 || src_rank >= ctx->size || dst_rank < 0 ||
	    dst_rank >= ctx->size || flags > TRIAD_COPY_TRANSPORT_ACK) {
		if (ctx)
			tr_debug("copy: bad arguments (source %d, destination %d of %d ranks, "
				 "flags 0x%x)", src_rank, dst_rank, ctx->size, flags);
		return -EINVAL;
	}
	req = tr_req_new(ctx, TR_REQ_COPY, src_rank);
	if (!req)
		return -ENOMEM;
	req->len = len;
	TR_EV(ctx, "api_copy", src_rank, dst_rank);
	tr_ctx_lock(ctx);
	TR_EV(ctx, "api_locked", 0, 0);
	n = tr_copy_submit(ctx, &order, req);
	if (!n)
		*req_p = req;
	pthread_mutex_unlock(&ctx->lock);
	if (n)
		free(req);
	return n;
}

int tr_copy_submit(struct triad_ctx *ctx, const struct tr_copy_hdr *order, struct triad_req *req)
{
	struct tr_copy_act acts[TR_COPY_ACTS];
	uint64_t op;
	int n = tr_copy_request(eng(ctx), order, req,
				tr_now_ns() + (uint64_t)ctx->cfg.copy_timeout_ms * 1000000, &op,
				acts, TR_COPY_ACTS);

	if (n < 0) {
		if (n == -EAGAIN)
			tr_warn("copy: %d copies already outstanding (TRIAD_COPY_OPS)",
				ctx->cfg.copy_ops);
		return n;
	}
	exec(ctx, acts, n);
	return 0;
}

enum triad_copy_leg triad_req_copy_leg(const triad_req_t *req)
{
	return req && req->kind == TR_REQ_COPY ? (enum triad_copy_leg)req->leg : TRIAD_LEG_NONE;
}

int triad_copy_event_poll(triad_ctx_t *ctx, struct triad_copy_event *ev_p)
{
	struct tr_copies *cs;
	int ret = 0;

	if (!ctx || !ev_p)
		return -EINVAL;
	tr_ctx_lock(ctx);
	tr_progress_app(ctx);
	cs = ctx->copies;
	if (cs->ev_count) {
		*ev_p = cs->events[cs->ev_head];
		cs->ev_head = (cs->ev_head + 1) % cs->ev_cap;
		cs->ev_count--;
		ret = 1;
	}
	pthread_mutex_unlock(&ctx->lock);
	return ret;
}
