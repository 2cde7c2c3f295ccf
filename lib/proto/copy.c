#include "proto/copy.h"

#include <errno.h>
#include <stddef.h>

#include "proto/chunk.h"

#define NIL UINT32_MAX
/* The most actions failing one op can produce (a SEND, or a COMPLETE when
 * the report is internal): the bulk calls keep this much room per op. */
#define ACTS_PER_OP 1

static const char *const mode_names[TR_COPY_NMODES] = {
	[TR_COPY_RELAY] = "relay",
	[TR_COPY_DIRECT] = "direct",
	[TR_COPY_TRANSPORT_ACK] = "transport_ack",
};

static const char *const msg_names[TR_COPY_NMSGS] = {
	[TR_COPY_START] = "COPY_START",
	[TR_COPY_DATA] = "COPY_DATA",
	[TR_COPY_RESP] = "COPY_RESP",
	[TR_COPY_DONE] = "COPY_DONE",
};

static const char *const leg_names[TR_COPY_NLEGS] = {
	[TR_COPY_LEG_NONE] = "none",
	[TR_COPY_LEG_AT_SRC] = "at source",
	[TR_COPY_LEG_AT_DST] = "at destination",
	[TR_COPY_LEG_I_S] = "I->S",
	[TR_COPY_LEG_S_D] = "S->D",
	[TR_COPY_LEG_D_RESP] = "D->S/I",
	[TR_COPY_LEG_S_I] = "S->I",
};

static const char *const act_names[TR_COPY_NACTS] = {
	[TR_COPY_ACT_SEND] = "send",
	[TR_COPY_ACT_WRITE] = "write",
	[TR_COPY_ACT_LOCAL] = "local",
	[TR_COPY_ACT_LOOKUP] = "lookup",
	[TR_COPY_ACT_NOTIFY] = "notify",
	[TR_COPY_ACT_COMPLETE] = "complete",
	[TR_COPY_ACT_CARRY] = "carry",
	[TR_COPY_ACT_PLACE] = "place",
};

static const char *const istate_names[TR_COPY_I_NSTATES] = {
	[TR_COPY_I_FREE] = "free",
	[TR_COPY_I_ORDERED] = "ordered",
	[TR_COPY_I_DELIVERED] = "delivered",
};

static const char *const sstate_names[TR_COPY_S_NSTATES] = {
	[TR_COPY_S_FREE] = "free",
	[TR_COPY_S_DESC] = "desc",
	[TR_COPY_S_WRITE] = "write",
	[TR_COPY_S_RESP] = "resp",
	[TR_COPY_S_DRAIN] = "drain",
};

const char *tr_copy_mode_str(unsigned mode)
{
	return mode < TR_COPY_NMODES ? mode_names[mode] : "?";
}

const char *tr_copy_msg_str(unsigned msg)
{
	return msg < TR_COPY_NMSGS ? msg_names[msg] : "?";
}

const char *tr_copy_leg_str(unsigned leg)
{
	return leg < TR_COPY_NLEGS ? leg_names[leg] : "?";
}

const char *tr_copy_act_str(unsigned type)
{
	return type < TR_COPY_NACTS ? act_names[type] : "?";
}

const char *tr_copy_istate_str(unsigned state)
{
	return state < TR_COPY_I_NSTATES ? istate_names[state] : "?";
}

const char *tr_copy_sstate_str(unsigned state)
{
	return state < TR_COPY_S_NSTATES ? sstate_names[state] : "?";
}

/* ---- actions ----------------------------------------------------------- */

/* The caller's array.  Each call reserves the room it needs up front
 * (TR_COPY_ACTS, ACTS_PER_OP), so scratch only ever takes an action in
 * case of a bug, which overflow counts. */
struct out {
	struct tr_copy_act *a;
	unsigned n, cap;
	struct tr_copy_act scratch;
};

static struct tr_copy_act *out_add(struct tr_copy *c, struct out *o, enum tr_copy_act_type type,
				   const struct tr_copy_hdr *h)
{
	struct tr_copy_act *a = &o->scratch;

	if (o->n < o->cap)
		a = &o->a[o->n++];
	else
		c->stats.overflow++;
	*a = (struct tr_copy_act){ .type = type, .hdr = *h };
	return a;
}

static unsigned out_room(const struct out *o)
{
	return o->cap - o->n;
}

static bool status_final(unsigned s)
{
	return s < TRIAD_S_MAX && s != TRIAD_S_PENDING;
}

/* A window error, as opposed to a failure to reach the window. */
static bool status_window(unsigned s)
{
	return s == TRIAD_S_NO_WINDOW || s == TRIAD_S_OUT_OF_BOUNDS || s == TRIAD_S_ACCESS;
}

/* 0 when win can serve [off, off + len) with access, else the status. */
static enum triad_status win_check(const struct tr_copy_win *w, uint32_t access, uint64_t off,
				   uint64_t len)
{
	if ((w->access & access) != access)
		return TRIAD_S_ACCESS;
	if (!tr_range_ok(w->size, off, len))
		return TRIAD_S_OUT_OF_BOUNDS;
	return TRIAD_S_OK;
}

static enum triad_status local_win(struct tr_copy *c, uint32_t id, uint32_t access, uint64_t off,
				   uint64_t len, struct tr_copy_win *w)
{
	if (c->cfg.win(c->cfg.win_arg, id, w))
		return TRIAD_S_NO_WINDOW;
	return win_check(w, access, off, len);
}

/* The tuple: every field but status and leg. */
static bool same_tuple(const struct tr_copy_hdr *a, const struct tr_copy_hdr *b)
{
	return a->op_id == b->op_id && a->initiator == b->initiator && a->source == b->source &&
	       a->destination == b->destination && a->src_win == b->src_win &&
	       a->dst_win == b->dst_win && a->src_off == b->src_off && a->dst_off == b->dst_off &&
	       a->len == b->len && a->mode == b->mode;
}

/* The checks that need no table. */
static bool hdr_sane(const struct tr_copy *c, const struct tr_copy_hdr *h)
{
	uint32_t n = c->cfg.nranks;

	if (h->op_id == 0 || h->initiator >= n || h->source >= n || h->destination >= n)
		return false;
	if (h->mode >= TR_COPY_NMODES || h->leg >= TR_COPY_NLEGS || !status_final(h->status))
		return false;
	return (h->status == TRIAD_S_OK) == (h->leg == TR_COPY_LEG_NONE);
}

static void dispatch(struct tr_copy *c, enum tr_copy_msg msg, uint32_t from,
		     const struct tr_copy_hdr *h, const void *data, uint64_t carried,
		     struct out *o);

/* A message: to another rank an action, to this rank handled at once. */
static void send_msg(struct tr_copy *c, struct out *o, enum tr_copy_msg msg, uint32_t to,
		     const struct tr_copy_hdr *h, enum triad_status status, enum tr_copy_leg leg)
{
	struct tr_copy_hdr m = *h;
	struct tr_copy_act *a;

	m.status = (uint16_t)status;
	m.leg = (uint8_t)leg;
	if (to == c->cfg.rank) {
		dispatch(c, msg, c->cfg.rank, &m, NULL, 0, o);
		return;
	}
	a = out_add(c, o, TR_COPY_ACT_SEND, &m);
	a->msg = msg;
	a->to = to;
}

/* ---- initiator table ---------------------------------------------------- */

static struct tr_copy_iop *iop_find(struct tr_copy *c, uint64_t op_id)
{
	struct tr_copy_iop *e;

	if (op_id == 0)
		return NULL;
	e = &c->cfg.iops[(op_id - 1) % c->cfg.niops];
	return e->state != TR_COPY_I_FREE && e->hdr.op_id == op_id ? e : NULL;
}

/* The one place an initiator entry changes state; FREE returns it to the
 * free list. */
static void iop_set_state(struct tr_copy *c, struct tr_copy_iop *e, enum tr_copy_istate state)
{
	if (e->state == TR_COPY_I_FREE && state != TR_COPY_I_FREE)
		c->ilive++;
	if (e->state != TR_COPY_I_FREE && state == TR_COPY_I_FREE) {
		c->ilive--;
		e->next_free = c->ifree;
		c->ifree = (uint32_t)(e - c->cfg.iops);
	}
	e->state = (uint8_t)state;
}

static struct tr_copy_sop *sop_find(struct tr_copy *c, uint32_t initiator, uint64_t op_id);
static void sop_set_state(struct tr_copy *c, struct tr_copy_sop *e, enum tr_copy_sstate state);

/* Completes request e and frees its entry.  With I == S, a source op of
 * the same copy still serving is dropped: nobody waits for it any more. */
static void iop_complete(struct tr_copy *c, struct tr_copy_iop *e, enum triad_status status,
			 enum tr_copy_leg leg, struct out *o)
{
	struct tr_copy_act *a = out_add(c, o, TR_COPY_ACT_COMPLETE, &e->hdr);
	struct tr_copy_sop *s;

	a->hdr.status = (uint16_t)status;
	a->hdr.leg = (uint8_t)leg;
	a->req = e->req;
	c->stats.completed++;
	iop_set_state(c, e, TR_COPY_I_FREE);
	if (status != TRIAD_S_OK && e->hdr.source == c->cfg.rank) {
		s = sop_find(c, c->cfg.rank, e->hdr.op_id);
		if (s)
			sop_set_state(c, s, TR_COPY_S_FREE);
	}
}

/* ---- source table -------------------------------------------------------- */

static uint32_t sop_hash(const struct tr_copy *c, uint32_t initiator, uint64_t op_id)
{
	uint64_t h = (op_id ^ ((uint64_t)initiator << 40)) * 0x9e3779b97f4a7c15ull;

	return (uint32_t)((h >> 32) % c->cfg.nsops);
}

static struct tr_copy_sop *sop_find(struct tr_copy *c, uint32_t initiator, uint64_t op_id)
{
	uint32_t i = c->cfg.sops[sop_hash(c, initiator, op_id)].bucket;

	while (i != NIL) {
		struct tr_copy_sop *e = &c->cfg.sops[i];

		if (e->hdr.op_id == op_id && e->hdr.initiator == initiator)
			return e;
		i = e->chain;
	}
	return NULL;
}

/* The one place a source entry changes state: leaving FREE puts it in its
 * hash chain (the caller set hdr before), entering FREE takes it out and
 * back on the free list. */
static void sop_set_state(struct tr_copy *c, struct tr_copy_sop *e, enum tr_copy_sstate state)
{
	uint32_t idx = (uint32_t)(e - c->cfg.sops);

	if (e->state == TR_COPY_S_FREE && state != TR_COPY_S_FREE) {
		uint32_t *head = &c->cfg.sops[sop_hash(c, e->hdr.initiator, e->hdr.op_id)].bucket;

		e->chain = *head;
		*head = idx;
		c->slive++;
	} else if (e->state != TR_COPY_S_FREE && state == TR_COPY_S_FREE) {
		uint32_t *p = &c->cfg.sops[sop_hash(c, e->hdr.initiator, e->hdr.op_id)].bucket;

		while (*p != idx)
			p = &c->cfg.sops[*p].chain;
		*p = e->chain;
		e->chain = c->sfree;
		c->sfree = idx;
		c->slive--;
	}
	e->state = (uint8_t)state;
}

/* The source op is over: report to I (silently in DIRECT when all went
 * well: D answers I itself) and free the entry. */
static void sop_finish(struct tr_copy *c, struct tr_copy_sop *e, enum triad_status status,
		       enum tr_copy_leg leg, struct out *o)
{
	struct tr_copy_hdr h = e->hdr;

	sop_set_state(c, e, TR_COPY_S_FREE);
	if (h.mode == TR_COPY_DIRECT && status == TRIAD_S_OK)
		return;
	send_msg(c, o, TR_COPY_DONE, h.initiator, &h, status, leg);
}

/* The op met a failure: report it once the chunks in flight are back. */
static void sop_fail(struct tr_copy *c, struct tr_copy_sop *e, enum triad_status status,
		     enum tr_copy_leg leg, struct out *o)
{
	if (e->inflight == 0) {
		sop_finish(c, e, status, leg, o);
		return;
	}
	e->hdr.status = (uint16_t)status;
	e->hdr.leg = (uint8_t)leg;
	sop_set_state(c, e, TR_COPY_S_DRAIN);
}

/* The op must end now (peer gone, timeout): the first outcome it knew
 * wins over the one given. */
static void sop_abort(struct tr_copy *c, struct tr_copy_sop *e, enum triad_status status,
		      enum tr_copy_leg leg, struct out *o)
{
	if (e->state == TR_COPY_S_DRAIN) {
		status = e->hdr.status;
		leg = e->hdr.leg;
	} else if (e->resp_in) {
		status = e->resp_status;
		leg = e->resp_leg;
	}
	sop_finish(c, e, status, leg, o);
}

/* The leg an op in its present state breaks when D (or time) fails it. */
static enum tr_copy_leg sop_waiting_leg(const struct tr_copy_sop *e)
{
	return e->state == TR_COPY_S_RESP ? TR_COPY_LEG_D_RESP : TR_COPY_LEG_S_D;
}

/* Ends the op if nothing is left to wait for. */
static void sop_check(struct tr_copy *c, struct tr_copy_sop *e, struct out *o)
{
	if (e->inflight > 0)
		return;
	if (e->state == TR_COPY_S_DRAIN) {
		sop_finish(c, e, e->hdr.status, e->hdr.leg, o);
		return;
	}
	if (e->state != TR_COPY_S_WRITE || e->next < e->nchunks)
		return;
	if (e->hdr.mode != TR_COPY_RELAY)
		sop_finish(c, e, TRIAD_S_OK, TR_COPY_LEG_NONE, o);
	else if (e->resp_in)
		sop_finish(c, e, e->resp_status, e->resp_leg, o);
	else
		sop_set_state(c, e, TR_COPY_S_RESP);
}

/* Posts chunks, COPY_DATA after the last.  The window is counted from the
 * lowest chunk not reported yet, not in chunks outstanding: reports out
 * of order then cannot stretch it beyond the bitmap. */
static void sop_pump(struct tr_copy *c, struct tr_copy_sop *e, struct out *o)
{
	uint64_t chunk = c->cfg.chunk;

	while (e->next < e->nchunks && e->next - e->base < c->cfg.inflight) {
		uint64_t off = e->next * chunk;
		struct tr_copy_act *a = out_add(c, o, TR_COPY_ACT_WRITE, &e->hdr);

		a->to = e->hdr.destination;
		a->chunk = e->next;
		a->src_off = e->hdr.src_off + off;
		a->dst_off = e->hdr.dst_off + off;
		a->len = tr_chunk_len(e->hdr.len, chunk, off);
		e->next++;
		e->inflight++;
		c->stats.chunks++;
	}
	if (e->next == e->nchunks && !e->data_sent && e->hdr.mode != TR_COPY_TRANSPORT_ACK) {
		e->data_sent = true;
		send_msg(c, o, TR_COPY_DATA, e->hdr.destination, &e->hdr, TRIAD_S_OK,
			 TR_COPY_LEG_NONE);
	}
	sop_check(c, e, o);
}

/* Descriptor of the destination window in hand (S != D): write. */
static void sop_write(struct tr_copy *c, struct tr_copy_sop *e, const struct tr_copy_win *d,
		      struct out *o)
{
	enum triad_status st = win_check(d, TRIAD_WIN_WRITE, e->hdr.dst_off, e->hdr.len);

	if (st != TRIAD_S_OK) {
		sop_finish(c, e, st, TR_COPY_LEG_AT_DST, o);
		return;
	}
	e->nchunks = tr_chunk_count(e->hdr.len, c->cfg.chunk);
	sop_set_state(c, e, TR_COPY_S_WRITE);
	sop_pump(c, e, o);
}

/* ---- messages ------------------------------------------------------------ */

/* At S.  The answer to I is a COPY_DONE, except from D's role (S == D in
 * DIRECT mode: COPY_RESP). */
static void on_start(struct tr_copy *c, uint32_t from, const struct tr_copy_hdr *h, struct out *o)
{
	uint32_t self = c->cfg.rank;
	struct tr_copy_win w;
	enum triad_status st;
	struct tr_copy_sop *e;
	struct tr_copy_act *a;

	if (h->source != self || from != h->initiator || h->status != TRIAD_S_OK) {
		c->stats.inconsistent++;
		return;
	}
	if (sop_find(c, h->initiator, h->op_id)) {
		c->stats.duplicate++;
		return;
	}
	st = local_win(c, h->src_win, TRIAD_WIN_READ, h->src_off, h->len, &w);
	if (st != TRIAD_S_OK) {
		send_msg(c, o, TR_COPY_DONE, h->initiator, h, st, TR_COPY_LEG_AT_SRC);
		return;
	}
	if (h->destination == self) {
		st = local_win(c, h->dst_win, TRIAD_WIN_WRITE, h->dst_off, h->len, &w);
		if (st != TRIAD_S_OK) {
			send_msg(c, o, TR_COPY_DONE, h->initiator, h, st, TR_COPY_LEG_AT_DST);
			return;
		}
		a = out_add(c, o, TR_COPY_ACT_LOCAL, h);
		a->src_off = h->src_off;
		a->dst_off = h->dst_off;
		a->len = h->len;
		c->stats.local_copies++;
		if (w.notify && h->mode != TR_COPY_TRANSPORT_ACK) {
			a = out_add(c, o, TR_COPY_ACT_NOTIFY, h);
			a->dst_off = h->dst_off;
			a->len = h->len;
		}
		send_msg(c, o, h->mode == TR_COPY_DIRECT ? TR_COPY_RESP : TR_COPY_DONE,
			 h->initiator, h, TRIAD_S_OK, TR_COPY_LEG_NONE);
		return;
	}
	if (c->sfree == NIL) {
		c->stats.refused++;
		send_msg(c, o, TR_COPY_DONE, h->initiator, h, TRIAD_S_NO_MEMORY,
			 TR_COPY_LEG_AT_SRC);
		return;
	}
	e = &c->cfg.sops[c->sfree];
	c->sfree = e->chain;
	*e = (struct tr_copy_sop){ .hdr = *h, .bucket = e->bucket,
				   .deadline = TR_COPY_NO_DEADLINE, .state = TR_COPY_S_FREE };
	c->stats.orders++;
	if (h->len && h->len <= c->cfg.eager && h->mode != TR_COPY_TRANSPORT_ACK &&
	    (!c->cfg.carry_max || h->len <= c->cfg.carry_max(c->cfg.win_arg, h->destination))) {
		/* Carried: COPY_DATA is the only chunk, and D checks its window. */
		e->nchunks = e->next = 1;
		e->inflight = 1;
		e->data_sent = true;
		sop_set_state(c, e, TR_COPY_S_WRITE);
		a = out_add(c, o, TR_COPY_ACT_CARRY, h);
		a->to = h->destination;
		a->src_off = h->src_off;
		a->dst_off = h->dst_off;
		a->len = h->len;
		c->stats.carried++;
		return;
	}
	sop_set_state(c, e, TR_COPY_S_DESC);
	a = out_add(c, o, TR_COPY_ACT_LOOKUP, h);
	a->to = h->destination;
}

/* At D: stateless.  The data is in (it preceded this header on the QP), or
 * in this message (carried); check that it was allowed to land (place it)
 * and answer. */
static void on_data(struct tr_copy *c, uint32_t from, const struct tr_copy_hdr *h,
		    const void *data, uint64_t carried, struct out *o)
{
	uint32_t self = c->cfg.rank;
	struct tr_copy_win w;
	enum triad_status st;

	if (h->destination != self || h->source == self || from != h->source ||
	    h->mode == TR_COPY_TRANSPORT_ACK || h->status != TRIAD_S_OK ||
	    (carried && carried != h->len)) {
		c->stats.inconsistent++;
		return;
	}
	st = local_win(c, h->dst_win, TRIAD_WIN_WRITE, h->dst_off, h->len, &w);
	c->stats.answered++;
	if (st == TRIAD_S_OK && carried) {
		struct tr_copy_act *a = out_add(c, o, TR_COPY_ACT_PLACE, h);

		a->data = data;
		a->dst_off = h->dst_off;
		a->len = h->len;
	}
	if (st == TRIAD_S_OK && w.notify) {
		struct tr_copy_act *a = out_add(c, o, TR_COPY_ACT_NOTIFY, h);

		a->dst_off = h->dst_off;
		a->len = h->len;
	}
	send_msg(c, o, TR_COPY_RESP, h->mode == TR_COPY_RELAY ? h->source : h->initiator, h, st,
		 st == TRIAD_S_OK ? TR_COPY_LEG_NONE : TR_COPY_LEG_AT_DST);
}

/* D's answer carries OK, or a window error at D. */
static bool resp_sane(const struct tr_copy_hdr *h)
{
	return h->leg == (h->status == TRIAD_S_OK ? TR_COPY_LEG_NONE : TR_COPY_LEG_AT_DST) &&
	       (h->status == TRIAD_S_OK || status_window(h->status));
}

/* S reports what it saw itself or heard from D, never a leg of I's. */
static bool done_sane(const struct tr_copy_hdr *h)
{
	if (h->leg == TR_COPY_LEG_I_S || h->leg == TR_COPY_LEG_S_I)
		return false;
	/* In DIRECT, S speaks only of its own failures. */
	return h->mode != TR_COPY_DIRECT ||
	       (h->status != TRIAD_S_OK && h->leg != TR_COPY_LEG_D_RESP);
}

/* At I: the outcome. */
static void on_outcome(struct tr_copy *c, enum tr_copy_msg msg, uint32_t from,
		       const struct tr_copy_hdr *h, struct out *o)
{
	struct tr_copy_iop *e;

	if (h->initiator != c->cfg.rank) {
		c->stats.inconsistent++;
		return;
	}
	e = iop_find(c, h->op_id);
	if (!e) {
		c->stats.unknown++;
		return;
	}
	if (!same_tuple(h, &e->hdr)) {
		c->stats.inconsistent++;
		return;
	}
	/* RESP: DIRECT only, from D; DONE: from S, and in DIRECT an error. */
	if (msg == TR_COPY_RESP ? from != h->destination || !resp_sane(h)
				: from != h->source || !done_sane(h)) {
		c->stats.inconsistent++;
		return;
	}
	iop_complete(c, e, h->status, h->leg, o);
}

/* At S in RELAY: D's answer. */
static void on_resp_relay(struct tr_copy *c, uint32_t from, const struct tr_copy_hdr *h,
			  struct out *o)
{
	struct tr_copy_sop *e;

	if (h->source != c->cfg.rank || from != h->destination || !resp_sane(h)) {
		c->stats.inconsistent++;
		return;
	}
	e = sop_find(c, h->initiator, h->op_id);
	if (!e) {
		c->stats.unknown++;
		return;
	}
	if (!same_tuple(h, &e->hdr)) {
		c->stats.inconsistent++;
		return;
	}
	if (e->resp_in) {
		c->stats.duplicate++;
		return;
	}
	/* D answers only after COPY_DATA, which follows every chunk. */
	if (!e->data_sent || e->state == TR_COPY_S_DRAIN) {
		c->stats.inconsistent++;
		return;
	}
	e->resp_in = true;
	e->resp_status = h->status;
	e->resp_leg = h->leg;
	if (e->state == TR_COPY_S_RESP)
		sop_finish(c, e, h->status, h->leg, o);
}

static void dispatch(struct tr_copy *c, enum tr_copy_msg msg, uint32_t from,
		     const struct tr_copy_hdr *h, const void *data, uint64_t carried,
		     struct out *o)
{
	/* Only COPY_DATA carries data. */
	if (from >= c->cfg.nranks || !hdr_sane(c, h) || (carried && msg != TR_COPY_DATA)) {
		c->stats.inconsistent++;
		return;
	}
	switch (msg) {
	case TR_COPY_START:
		on_start(c, from, h, o);
		break;
	case TR_COPY_DATA:
		on_data(c, from, h, data, carried, o);
		break;
	case TR_COPY_RESP:
		if (h->mode == TR_COPY_RELAY)
			on_resp_relay(c, from, h, o);
		else if (h->mode == TR_COPY_DIRECT)
			on_outcome(c, msg, from, h, o);
		else
			c->stats.inconsistent++;
		break;
	default: /* TR_COPY_DONE */
		on_outcome(c, msg, from, h, o);
		break;
	}
}

/* ---- events ---------------------------------------------------------------- */

int tr_copy_init(struct tr_copy *c, const struct tr_copy_cfg *cfg)
{
	if (!cfg || cfg->nranks == 0 || cfg->rank >= cfg->nranks || cfg->chunk == 0 ||
	    cfg->inflight < 1 || cfg->inflight > TR_COPY_MAX_INFLIGHT || !cfg->iops ||
	    cfg->niops == 0 || cfg->niops == NIL || !cfg->sops || cfg->nsops == 0 ||
	    cfg->nsops == NIL || !cfg->win)
		return -EINVAL;
	*c = (struct tr_copy){ .cfg = *cfg };
	c->ifree = NIL;
	for (uint32_t i = cfg->niops; i-- > 0;) {
		cfg->iops[i] = (struct tr_copy_iop){ .state = TR_COPY_I_FREE, .next_free = c->ifree };
		c->ifree = i;
	}
	c->sfree = NIL;
	for (uint32_t i = cfg->nsops; i-- > 0;) {
		cfg->sops[i] = (struct tr_copy_sop){ .state = TR_COPY_S_FREE, .chain = c->sfree,
						     .bucket = NIL };
		c->sfree = i;
	}
	return 0;
}

static int out_init(struct out *o, struct tr_copy_act *acts, unsigned cap)
{
	if (!acts || cap < TR_COPY_ACTS)
		return -EINVAL;
	*o = (struct out){ .a = acts, .cap = cap };
	return 0;
}

int tr_copy_request(struct tr_copy *c, const struct tr_copy_hdr *order, void *req,
		    uint64_t deadline, uint64_t *op_id_p, struct tr_copy_act *acts, unsigned cap)
{
	uint32_t self = c->cfg.rank;
	struct tr_copy_iop *e;
	uint32_t slot;
	struct out o;

	if (out_init(&o, acts, cap) || !order || !op_id_p || order->source >= c->cfg.nranks ||
	    order->destination >= c->cfg.nranks || order->mode >= TR_COPY_NMODES)
		return -EINVAL;
	if (c->ifree == NIL)
		return -EAGAIN;
	slot = c->ifree;
	e = &c->cfg.iops[slot];
	c->ifree = e->next_free;
	*e = (struct tr_copy_iop){ .hdr = *order, .req = req, .deadline = deadline };
	e->hdr.op_id = c->seq++ * c->cfg.niops + slot + 1; /* iop_find: (id - 1) % n == slot */
	e->hdr.initiator = self;
	e->hdr.status = TRIAD_S_OK;
	e->hdr.leg = TR_COPY_LEG_NONE;
	c->stats.requests++;
	*op_id_p = e->hdr.op_id;
	if (order->source == self) {
		struct tr_copy_hdr h = e->hdr;

		iop_set_state(c, e, TR_COPY_I_DELIVERED);
		dispatch(c, TR_COPY_START, self, &h, NULL, 0, &o);
	} else {
		iop_set_state(c, e, TR_COPY_I_ORDERED);
		send_msg(c, &o, TR_COPY_START, order->source, &e->hdr, TRIAD_S_OK,
			 TR_COPY_LEG_NONE);
	}
	return (int)o.n;
}

int tr_copy_start_delivered(struct tr_copy *c, uint64_t op_id)
{
	struct tr_copy_iop *e = iop_find(c, op_id);

	if (!e || e->state != TR_COPY_I_ORDERED)
		return -ENOENT;
	iop_set_state(c, e, TR_COPY_I_DELIVERED);
	return 0;
}

int tr_copy_recv(struct tr_copy *c, enum tr_copy_msg msg, uint32_t from,
		 const struct tr_copy_hdr *hdr, const void *data, uint64_t carried,
		 struct tr_copy_act *acts, unsigned cap)
{
	struct out o;

	if (out_init(&o, acts, cap) || !hdr || (unsigned)msg >= TR_COPY_NMSGS)
		return -EINVAL;
	dispatch(c, msg, from, hdr, data, carried, &o);
	return (int)o.n;
}

int tr_copy_desc(struct tr_copy *c, uint32_t initiator, uint64_t op_id,
		 enum triad_status status, const struct tr_copy_win *desc,
		 struct tr_copy_act *acts, unsigned cap)
{
	struct tr_copy_sop *e;
	struct out o;

	if (out_init(&o, acts, cap) || !status_final(status) || (status == TRIAD_S_OK && !desc))
		return -EINVAL;
	e = sop_find(c, initiator, op_id);
	if (!e) {
		c->stats.unknown++;
		return 0;
	}
	if (e->state != TR_COPY_S_DESC) {
		c->stats.duplicate++;
		return 0;
	}
	if (status != TRIAD_S_OK)
		sop_finish(c, e, status,
			   status_window(status) ? TR_COPY_LEG_AT_DST : TR_COPY_LEG_S_D, &o);
	else
		sop_write(c, e, desc, &o);
	return (int)o.n;
}

/* A chunk's report; a failure ends the op on leg fail_leg. */
static int chunk_report(struct tr_copy *c, uint32_t initiator, uint64_t op_id, uint64_t chunk,
			enum triad_status status, enum tr_copy_leg fail_leg,
			struct tr_copy_act *acts, unsigned cap)
{
	struct tr_copy_sop *e;
	uint64_t bit;
	struct out o;

	if (out_init(&o, acts, cap) || !status_final(status))
		return -EINVAL;
	e = sop_find(c, initiator, op_id);
	if (!e) {
		c->stats.unknown++;
		return 0;
	}
	if (e->state == TR_COPY_S_DESC || chunk >= e->next) {
		c->stats.inconsistent++; /* never posted */
		return 0;
	}
	/* next - base <= cfg.inflight <= 32 (sop_pump): the map holds them all. */
	bit = chunk >= e->base ? 1ull << (chunk - e->base) : 0;
	if (!bit || (e->done & bit)) {
		c->stats.duplicate++;
		return 0;
	}
	e->done |= bit;
	e->inflight--;
	while (e->done & 1) {
		e->done >>= 1;
		e->base++;
	}
	if (status != TRIAD_S_OK && e->state != TR_COPY_S_DRAIN) {
		sop_fail(c, e, status, fail_leg, &o);
		return (int)o.n;
	}
	if (e->state == TR_COPY_S_WRITE)
		sop_pump(c, e, &o);
	else
		sop_check(c, e, &o);
	return (int)o.n;
}

int tr_copy_chunk_done(struct tr_copy *c, uint32_t initiator, uint64_t op_id, uint64_t chunk,
		       enum triad_status status, struct tr_copy_act *acts, unsigned cap)
{
	return chunk_report(c, initiator, op_id, chunk, status, TR_COPY_LEG_S_D, acts, cap);
}

int tr_copy_chunk_refused(struct tr_copy *c, uint32_t initiator, uint64_t op_id, uint64_t chunk,
			  enum triad_status status, struct tr_copy_act *acts, unsigned cap)
{
	if (!status_window(status))
		return -EINVAL;
	return chunk_report(c, initiator, op_id, chunk, status, TR_COPY_LEG_AT_SRC, acts, cap);
}

int tr_copy_peer_gone(struct tr_copy *c, uint32_t rank, struct tr_copy_act *acts, unsigned cap)
{
	uint32_t self = c->cfg.rank;
	struct out o;

	if (out_init(&o, acts, cap) || rank == self || rank >= c->cfg.nranks)
		return -EINVAL;
	/* Source ops first: they know best which leg broke, and with I == S
	 * their report completes the request. */
	for (uint32_t i = 0; i < c->cfg.nsops; i++) {
		struct tr_copy_sop *e = &c->cfg.sops[i];

		if (e->state == TR_COPY_S_FREE)
			continue;
		if (out_room(&o) < ACTS_PER_OP)
			return (int)o.n;
		if (e->hdr.initiator == rank) {
			c->stats.orphaned++;
			sop_set_state(c, e, TR_COPY_S_FREE);
		} else if (e->hdr.destination == rank) {
			sop_abort(c, e, TRIAD_S_UNREACHABLE, sop_waiting_leg(e), &o);
		}
	}
	for (uint32_t i = 0; i < c->cfg.niops; i++) {
		struct tr_copy_iop *e = &c->cfg.iops[i];
		enum tr_copy_leg leg;

		if (e->state == TR_COPY_I_FREE)
			continue;
		if (out_room(&o) < ACTS_PER_OP)
			return (int)o.n;
		if (e->hdr.source == rank)
			leg = e->state == TR_COPY_I_ORDERED ? TR_COPY_LEG_I_S : TR_COPY_LEG_S_I;
		else if (e->hdr.destination == rank && e->hdr.mode == TR_COPY_DIRECT)
			leg = TR_COPY_LEG_D_RESP;
		else
			continue;
		iop_complete(c, e, TRIAD_S_UNREACHABLE, leg, &o);
	}
	return (int)o.n;
}

static bool expired(uint64_t deadline, uint64_t now)
{
	return deadline != TR_COPY_NO_DEADLINE && deadline <= now;
}

int tr_copy_tick(struct tr_copy *c, uint64_t now, struct tr_copy_act *acts, unsigned cap)
{
	uint32_t self = c->cfg.rank;
	struct out o;

	if (out_init(&o, acts, cap))
		return -EINVAL;
	if (now > c->now)
		c->now = now;
	now = c->now;
	for (uint32_t i = 0; i < c->cfg.nsops; i++) {
		struct tr_copy_sop *e = &c->cfg.sops[i];

		if (e->state == TR_COPY_S_FREE || c->cfg.src_timeout == 0)
			continue;
		if (!e->stamped) {
			e->stamped = true;
			e->deadline = now + c->cfg.src_timeout < now ? TR_COPY_NO_DEADLINE
								       : now + c->cfg.src_timeout;
			continue;
		}
		if (!expired(e->deadline, now))
			continue;
		if (out_room(&o) < ACTS_PER_OP)
			return (int)o.n;
		sop_abort(c, e, TRIAD_S_TIMEOUT, sop_waiting_leg(e), &o);
	}
	for (uint32_t i = 0; i < c->cfg.niops; i++) {
		struct tr_copy_iop *e = &c->cfg.iops[i];
		enum tr_copy_leg leg;

		if (e->state == TR_COPY_I_FREE || !expired(e->deadline, now))
			continue;
		if (out_room(&o) < ACTS_PER_OP)
			return (int)o.n;
		if (e->state == TR_COPY_I_ORDERED) {
			leg = TR_COPY_LEG_I_S;
		} else if (e->hdr.source == self) {
			/* I == S: the source op knows where it is stuck. */
			struct tr_copy_sop *s = sop_find(c, self, e->hdr.op_id);

			leg = s ? sop_waiting_leg(s) : TR_COPY_LEG_D_RESP;
		} else {
			leg = e->hdr.mode == TR_COPY_DIRECT ? TR_COPY_LEG_D_RESP : TR_COPY_LEG_S_I;
		}
		iop_complete(c, e, TRIAD_S_TIMEOUT, leg, &o);
	}
	return (int)o.n;
}

int tr_copy_cancel_all(struct tr_copy *c, struct tr_copy_act *acts, unsigned cap)
{
	struct out o;

	if (out_init(&o, acts, cap))
		return -EINVAL;
	for (uint32_t i = 0; i < c->cfg.nsops; i++)
		if (c->cfg.sops[i].state != TR_COPY_S_FREE)
			sop_set_state(c, &c->cfg.sops[i], TR_COPY_S_FREE);
	for (uint32_t i = 0; i < c->cfg.niops; i++) {
		struct tr_copy_iop *e = &c->cfg.iops[i];

		if (e->state == TR_COPY_I_FREE)
			continue;
		if (out_room(&o) < ACTS_PER_OP)
			return (int)o.n;
		iop_complete(c, e, TRIAD_S_CANCELLED, TR_COPY_LEG_NONE, &o);
	}
	return (int)o.n;
}
