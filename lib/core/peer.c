/* Peers: one rank over one lane per plane.  The plane choice, the per-peer
 * sequence numbers (every message carries the next one of its (sender,
 * peer) pair, whatever lane it takes, and the receiver accepts each once),
 * message dispatch to the features, resending what a broken lane may have
 * lost, and what a lane's state change means for the peer. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/log.h"
#include "core/chan.h"
#include "core/onesided.h"
#include "core/peer.h"
#include "core/progress.h"
#include "core/req.h"

/* A message that arrived beyond the receive window (see park()). */
struct tr_parked {
	struct tr_list link;
	struct tr_lane *l;
	struct tr_buf *b; /* an active message's receive buffer, else NULL */
	struct tr_msg m;
	char data[];	  /* a copy's carried data, when b is NULL */
};
/* A sender posts a number only below its window's base (the oldest it has
 * not seen arrive) + TR_STREAM_WINDOW, and every number below that base
 * sits in one of our receive buffers or was handled.  So what lies beyond
 * our window of a priority is at most one per receive buffer of ours to the
 * peer: more is a sender that broke the protocol (proto/stream.h). */
#define TR_PARKED_MAX (TRIAD_MAX_PLANES * (TR_WIRE_MAX_SLOTS + TR_LANE_EXTRA_BUFS)) /* a priority's */

/* What waits for the redo fence (see there): an operation (rma.c). */
struct tr_fence_wait {
	struct tr_list link;
	struct triad_req *req;
};

/* A message its owner holds back (tr_peer_msg_hold). */
struct tr_held_msg {
	struct tr_list link;
	struct triad_req *req;
	int plane; /* the lane that gave it back */
	unsigned prio;
	int len;
	char data[];
};


int tr_lane_live(const struct triad_ctx *ctx, const struct tr_lane *l)
{
	return l->state == TR_LANE_UP && tr_fab_plane_port_up(ctx->fab, l->plane);
}

/* What the choice knows of plane q to p, but room (which depends on what
 * is to be posted): live, and the occupancy of its lane. */
static void choice_in(const struct triad_ctx *ctx, const struct tr_peer *p, int q,
		      struct tr_choice_plane *in)
{
	const struct tr_lane *l = &p->lane[q];

	in->live = tr_peer_plane_open(ctx, p, q);
	in->occ = in->live ? (uint32_t)l->sq_posted + l->nqueued : 0;
	in->cont = ctx->plane_weight[q]; /* triadd's weight of the plane (ctl.c) */
}

/* Adaptive choice (proto/choice): the plane the switch gives may hand
 * this message or operation to a less loaded live plane when its own
 * backlog to the peer is long; never to one that cannot take it now. */
static int adapt(struct triad_ctx *ctx, struct tr_peer *p, unsigned plane)
{
	struct tr_choice_plane in[TRIAD_MAX_PLANES] = { 0 };
	struct tr_choice_msg m;
	struct tr_choice out;

	if (!tr_ctx_adapts(ctx))
		return (int)plane;
	for (int q = 0; q < ctx->nplanes; q++) {
		const struct tr_lane *l = &p->lane[q];

		choice_in(ctx, p, q, &in[q]);
		in[q].room = in[q].live && l->sq_avail > l->ntx && l->tx_free;
	}
	in[plane].live = true; /* the switch's choice, live (checked by the caller) */
	tr_choice_msg_init(&m, plane);
	if (tr_choice_decide(&ctx->choice, in, (unsigned)ctx->nplanes, &m, &out) ||
	    out.plane == TR_CHOICE_NONE || !out.detour)
		return (int)plane;
	/* Counted by the lane that takes it over, as tr_lane_move() counts a
	 * message moved while it waits: with a low TRIAD_ADAPTIVE_T most
	 * detours are taken here, and few messages are left to wait. */
	p->lane[out.plane].stats.detours++;
	return out.plane;
}

int tr_plane_choose(struct triad_ctx *ctx, int peer, unsigned flags)
{
	struct tr_peer *p = &ctx->peers[peer];
	unsigned plane;
	int home, i, q;

	if (flags & TR_F_PLANE_PIN)
		return (int)(flags & TR_F_PLANE_MASK) < ctx->nplanes ? (int)(flags & TR_F_PLANE_MASK)
								     : -1;
	/* One plane (a single-rail node): the choice below always ends there,
	 * at about 70 instructions a message or operation. */
	if (ctx->nplanes == 1)
		return 0;
	home = (ctx->rank + peer) % ctx->nplanes;
	/* The switch maps the home plane to the one to use now (itself, or
	 * its alternate while it is failed or drained). */
	if (tr_psw_unordered(&p->psw, (unsigned)home, &plane) == TR_PSW_POST &&
	    tr_lane_live(ctx, &p->lane[plane]))
		return flags & TR_F_NO_DETOUR ? (int)plane : adapt(ctx, p, plane);
	/* A lane the switch has not heard about yet: the next live usable one,
	 * else any live one (a drained plane rather than none). */
	for (i = 0; i < ctx->nplanes; i++) {
		q = (home + i) % ctx->nplanes;
		if (tr_lane_live(ctx, &p->lane[q]) && tr_psw_usable(&p->psw, (unsigned)q))
			return q;
	}
	for (i = 0; i < ctx->nplanes; i++) {
		q = (home + i) % ctx->nplanes;
		if (tr_lane_live(ctx, &p->lane[q]))
			return q;
	}
	return home; /* nothing live: the caller reports the home plane's state */
}

/* The choice again, for messages that wait (docs/spec/adaptive-plane-
 * choice.md: re-decided on every scheduler pass while queued).  Deciding
 * once, when a message is queued, does not steer a stream: under load every
 * lane is full at that moment, and a detour must be postable now.  So on
 * every pass of a lane, the oldest movable message of each priority on the
 * busiest lane is offered to the others: where the rules say a detour
 * qualifies (the home's backlog over T, the other's under alpha of it, room
 * there now), it is posted there at once.  This is its one detour.  The
 * receiver's window and strict order do not care which lane a message
 * took. */
/* Only a queued message can move: most passes (after every completion)
 * find none, and stop here rather than ask the choice per priority. */
static bool queued_anywhere(const struct triad_ctx *ctx, const struct tr_peer *p)
{
	for (int q = 0; q < ctx->nplanes; q++)
		if (p->lane[q].nqueued)
			return true;
	return false;
}

/* A pass of the adaptive choice over the waiting messages of l's peer. */
static void redecide(struct tr_lane *l)
{
	struct triad_ctx *ctx = l->ctx;
	struct tr_peer *p = &ctx->peers[l->peer];
	struct tr_choice_plane in[TRIAD_MAX_PLANES];
	struct tr_choice_msg m;
	struct tr_choice out;

	if (ctx->nplanes < 2 || ctx->closing || !queued_anywhere(ctx, p))
		return;
	for (unsigned prio = 0; prio < TR_FC_NPRIO; prio++) {
		for (int moves = 0; moves < TR_SEQ_WINDOW; moves++) {
			int from = -1;

			for (int q = 0; q < ctx->nplanes; q++) {
				const struct tr_lane *l = &p->lane[q];

				choice_in(ctx, p, q, &in[q]);
				in[q].room = in[q].live && tr_lane_room(l, prio);
				if (tr_lane_movable(l, prio) && (from < 0 || in[q].occ > in[from].occ))
					from = q;
			}
			if (from < 0)
				break;
			in[from].live = true; /* where it waits: up (tr_lane_movable) */
			tr_choice_msg_init(&m, (unsigned)from);
			if (tr_choice_decide(&ctx->choice, in, (unsigned)ctx->nplanes, &m, &out) ||
			    !out.detour || out.plane == TR_CHOICE_NONE ||
			    tr_lane_move(&p->lane[from], &p->lane[out.plane], prio))
				break;
		}
	}
}

int tr_peer_wants(const struct triad_ctx *ctx, const struct tr_peer *p, int plane)
{
	return !((ctx->drained | p->peer_drained) >> plane & 1u);
}

int tr_peer_plane_open(const struct triad_ctx *ctx, const struct tr_peer *p, int plane)
{
	return tr_lane_live(ctx, &p->lane[plane]) && tr_psw_usable(&p->psw, (unsigned)plane) &&
	       tr_peer_wants(ctx, p, plane);
}

void tr_peer_plane_event(struct triad_ctx *ctx, struct tr_peer *p, int plane)
{
	struct tr_lane *l = &p->lane[plane];
	unsigned alt;

	if (l->state == TR_LANE_UP && tr_peer_wants(ctx, p, plane)) {
		if (!tr_psw_usable(&p->psw, (unsigned)plane))
			tr_psw_restore(&p->psw, (unsigned)plane);
	} else if (l->state != TR_LANE_UP) {
		if (tr_psw_usable(&p->psw, (unsigned)plane))
			tr_psw_fault(&p->psw, (unsigned)plane, &alt);
	} else if (tr_psw_usable(&p->psw, (unsigned)plane) &&
		   tr_psw_drain(&p->psw, (unsigned)plane) == -EBUSY) {
		/* Up but drained, and the only usable plane to this peer: it
		 * stays in use (triad_plane_drain refuses this; a peer's drain
		 * request may not get it). */
		tr_info("peer %d plane %d: drained, but the only plane left to it: still used",
			p->rank, plane);
	}
}

struct tr_lane *tr_peer_lane(struct triad_ctx *ctx, int peer, unsigned flags)
{
	int plane = tr_plane_choose(ctx, peer, flags);

	return plane < 0 ? NULL : &ctx->peers[peer].lane[plane];
}

int tr_peer_reachable(const struct triad_ctx *ctx, int peer)
{
	for (int p = 0; p < ctx->nplanes; p++)
		if (ctx->peers[peer].lane[p].state == TR_LANE_UP)
			return 1;
	return 0;
}

int tr_peer_alive(const struct triad_ctx *ctx, int peer)
{
	if (tr_peer_reachable(ctx, peer) || ctx->peers[peer].rejoin == TR_REJOIN_WAIT)
		return 1;
	if (ctx->cfg.connect != TR_CONNECT_LAZY)
		return 0;
	for (int q = 0; q < ctx->nplanes; q++) {
		const struct tr_lane *l = &ctx->peers[peer].lane[q];

		if (!l->ever_up && l->state != TR_LANE_FAILED)
			return 1;
	}
	return 0;
}

static const char *oldest_where(const struct triad_ctx *ctx, const struct tr_peer *p,
				unsigned prio, uint32_t seq, int *plane);

#define PUTF(...)                                                                      \
	do {                                                                           \
		if (at < n)                                                            \
			at += (size_t)snprintf(buf + at, n - at, __VA_ARGS__);         \
	} while (0)

void tr_peer_describe(const struct triad_ctx *ctx, int peer, char *buf, size_t n)
{
	const struct tr_peer *p = &ctx->peers[peer];
	size_t at = 0;

	buf[0] = 0;
	for (int q = 0; q < ctx->nplanes; q++) {
		const struct tr_lane *l = &p->lane[q];

		PUTF("%splane %d %s", q ? "; " : "", q, tr_lane_state_str(l->state));
		if (l->state == TR_LANE_UP || l->state == TR_LANE_DRAINING)
			PUTF(" (posted %d: %d rma, %d bsm; receives posted %d; queued %u; peer "
			     "slots busy 0x%llx of 0x%llx; rx held %d)",
			     l->sq_posted, l->rma_posted, l->bsm_inflight, l->rq_posted,
			     l->nqueued, (unsigned long long)l->fc_tx.bbr,
			     (unsigned long long)l->fc_tx.mask, l->rx_held);
	}
	PUTF("; seq sent h/m/l %u/%u/%u, settled below %u/%u/%u, unsettled %u/%u/%u, lost "
	     "%u/%u/%u, expected %u/%u/%u; parked %u; waiting for a window %d%s%s%s",
	     p->pl.tx[0].next, p->pl.tx[1].next, p->pl.tx[2].next, tr_stream_tx_base(&p->pl.tx[0]),
	     tr_stream_tx_base(&p->pl.tx[1]), tr_stream_tx_base(&p->pl.tx[2]),
	     tr_stream_tx_unsettled(&p->pl.tx[0]), tr_stream_tx_unsettled(&p->pl.tx[1]),
	     tr_stream_tx_unsettled(&p->pl.tx[2]),
	     tr_stream_tx_nlost(&p->pl.tx[0]), tr_stream_tx_nlost(&p->pl.tx[1]),
	     tr_stream_tx_nlost(&p->pl.tx[2]), tr_stream_rx_next(&p->pl.rx[0]),
	     tr_stream_rx_next(&p->pl.rx[1]), tr_stream_rx_next(&p->pl.rx[2]), p->nparked,
	     p->pl.blocked,
	     p->rejoin == TR_REJOIN_WAIT ? "; awaited back after a fault"
	     : p->rejoin == TR_REJOIN_LOST ? "; lost (not back in time)" : "",
	     p->awaiting ? "; operations and messages wait for a connection" : "",
	     p->pl.gone ? "; said BYE" : "");
	/* What holds each stream: where its oldest unsettled number is. */
	for (unsigned q = 0; q < TR_FC_NPRIO; q++) {
		uint32_t seq = tr_stream_tx_base(&p->pl.tx[q]);
		const char *where;
		int plane = -1;

		if (!tr_stream_tx_unsettled(&p->pl.tx[q]))
			continue;
		where = oldest_where(ctx, p, q, seq, &plane);
		if (plane >= 0)
			PUTF("; %u of priority %u: %s on plane %d", seq, q, where, plane);
		else
			PUTF("; %u of priority %u: %s", seq, q, where);
	}
}

#undef PUTF

static int await_msg(struct tr_peer *p, struct tr_msg *m, unsigned prio, struct triad_req *req);
static int full_msg(struct tr_peer *p, struct tr_msg *m, unsigned prio, struct triad_req *req);

/* A message of prio to p must wait for its stream: its window is full, or
 * others wait for it already (they go first). */
static int stream_full(const struct tr_peer *p, unsigned prio)
{
	return !tr_list_empty(&p->full[prio]) || !tr_stream_tx_can_assign(&p->pl.tx[prio]);
}

/* m goes on l (the choice's: another lane may take it while it waits),
 * or, after, behind everything posted or queued on l (tr_lane_send_after). */
static int send_on(struct tr_lane *l, struct tr_msg *m, unsigned prio, struct triad_req *req,
		   int after)
{
	struct tr_peer *p = &l->ctx->peers[l->peer];
	size_t need = tr_msg_len(m);
	char stack[TR_WIRE_CTRL_LEN], *buf, *heap = NULL;
	int len, ret;

	if (l->ctx->closing) /* nothing is sent any more */
		return -ENOTCONN;
	/* A free choice may wait for a first connection (or one back). */
	if (l->state != TR_LANE_UP && (after || !tr_peer_await(l->ctx, l->peer)))
		return -ENOTCONN;
	/* TR_STREAM_AHEAD of the peer's numbers unsettled: a free choice
	 * waits for the window; an ordered send is its owner's to hold. */
	if (stream_full(p, prio))
		return after ? -EAGAIN : full_msg(p, m, prio, req);
	if (l->state != TR_LANE_UP)
		return await_msg(p, m, prio, req);
	if (need > l->peer_slot_size)
		return -EMSGSIZE;
	/* Encoded where it is posted from when it can go at once; else the
	 * queue copies it from there. */
	buf = tr_lane_msg_buf(l);
	if (!buf && need > sizeof(stack) && !(buf = heap = malloc(need)))
		return -ENOMEM;
	if (!buf)
		buf = stack;
	m->seq = tr_stream_tx_next(&p->pl.tx[prio]); /* taken once it is sent */
	m->slot = 0; /* the link fields are set when it is posted */
	m->prio = (uint8_t)prio;
	len = tr_msg_encode(m, buf, need);
	ret = len < 0 ? len
	      : after ? tr_lane_send_after(l, buf, len, prio, req)
		      : tr_lane_send(l, buf, len, prio, req, 1);
	if (!ret)
		tr_stream_tx_assign(&p->pl.tx[prio], &m->seq);
	free(heap);
	return ret;
}

int tr_peer_send_after(struct tr_lane *l, struct tr_msg *m, unsigned prio,
		       struct triad_req *req)
{
	return send_on(l, m, prio, req, 1);
}

int tr_peer_send_chosen(struct tr_lane *l, struct tr_msg *m, unsigned prio,
			struct triad_req *req)
{
	return send_on(l, m, prio, req, 0);
}

int tr_peer_send(struct triad_ctx *ctx, int peer, struct tr_msg *m, unsigned prio,
		 struct triad_req *req)
{
	struct tr_lane *l = tr_peer_lane(ctx, peer, 0);
	int ret = tr_peer_send_chosen(l, m, prio, req);

	if (ret)
		tr_debug("%s to rank %d on plane %d: %s", tr_msg_type_str(m->type), peer, l->plane,
			 strerror(-ret));
	return ret;
}

/* ---- the sender's window ------------------------------------------------------*/
/* (The channel asks it before it posts: tr_lane_seq_ok, chan.c.) */
static void skips_tell(struct triad_ctx *ctx, struct tr_peer *p);

static void full_send(struct triad_ctx *ctx, struct tr_peer *p, unsigned prio);

static void settled(struct triad_ctx *ctx, struct tr_peer *p, unsigned prio, uint32_t seq)
{
	if (!tr_stream_tx_settled(&p->pl.tx[prio], seq))
		return;
	/* The window moved: lost numbers it reaches now can be told, and what
	 * waited for it may go. */
	if (tr_stream_tx_nlost(&p->pl.tx[prio]))
		skips_tell(ctx, p);
	if (!tr_list_empty(&p->full[prio]))
		full_send(ctx, p, prio);
	if (!p->pl.blocked)
		return;
	p->pl.blocked = 0; /* set again by a lane that still must wait */
	for (int q = 0; q < ctx->nplanes; q++)
		tr_lane_pump(&p->lane[q]);
}

/* A message arrived; a SEQ_SKIP that arrived settles the numbers it
 * carried (lost for good: until the peer knows, they hold the window). */
static void seq_done(struct tr_lane *l, const void *data, int len)
{
	struct tr_peer *p = &l->ctx->peers[l->peer];
	unsigned type = tr_wire_type(data);
	struct tr_msg m;

	if (type == TR_MSG_BSM)
		return;
	if (type != TR_MSG_SEQ_SKIP) {
		settled(l->ctx, p, tr_wire_prio(data), tr_wire_seq(data));
		return;
	}
	if (tr_msg_decode(data, (size_t)len, &m) == 0)
		for (unsigned i = 0; i < m.u.seq_skip.count; i++)
			settled(l->ctx, p, m.prio, m.u.seq_skip.seq[i]);
}

/* ---- messages lost for good --------------------------------------------------*/
static int skips_pending(const struct tr_peer *p)
{
	for (unsigned q = 0; q < TR_FC_NPRIO; q++)
		if (tr_stream_tx_nlost(&p->pl.tx[q]))
			return 1;
	return 0;
}

/* A lost message's numbers go back to the stream: a lost SEQ_SKIP gives
 * back the numbers it carried, anything else its own (a receiver in strict
 * order waits for no number once it is skipped, am.c). */
static void skip_lost(struct tr_peer *p, const void *data, int len)
{
	unsigned prio = tr_wire_prio(data);
	struct tr_msg m;

	if (tr_wire_type(data) != TR_MSG_SEQ_SKIP) {
		if (tr_stream_tx_lost(&p->pl.tx[prio], tr_wire_seq(data)))
			tr_debug("rank %d: lost message %u of priority %u was settled already",
				 p->rank, tr_wire_seq(data), prio);
		return;
	}
	if (tr_msg_decode(data, (size_t)len, &m))
		return;
	for (unsigned i = 0; i < m.u.seq_skip.count; i++)
		tr_stream_tx_lost(&p->pl.tx[prio], m.u.seq_skip.seq[i]);
}

/* Tells the peer, on l, every lost number the window reaches, lowest first
 * (the window moves up as each hole fills, and settled() tells the next).
 * A SEQ_SKIP carries no number of its own and goes with the priority whose
 * numbers it carries, ahead of that priority's later messages on the lane. */
static void skip_flush(struct tr_lane *l)
{
	struct tr_peer *p = &l->ctx->peers[l->peer];

	for (unsigned q = 0; q < TR_FC_NPRIO; q++) {
		unsigned sent = 0;

		while (tr_stream_tx_tellable(&p->pl.tx[q])) {
			struct tr_msg m = { .type = TR_MSG_SEQ_SKIP, .prio = (uint8_t)q };
			char buf[TR_WIRE_CTRL_LEN];
			int len;

			m.u.seq_skip.count =
				tr_stream_tx_skips(&p->pl.tx[q], m.u.seq_skip.seq, TR_WIRE_SKIP_MAX);
			len = tr_msg_encode(&m, buf, sizeof(buf));
			if (len < 0 || tr_lane_send(l, buf, len, q, NULL, 0)) {
				for (unsigned i = 0; i < m.u.seq_skip.count; i++)
					tr_stream_tx_lost(&p->pl.tx[q], m.u.seq_skip.seq[i]);
				break;
			}
			sent += m.u.seq_skip.count;
		}
		if (sent)
			tr_info("rank %d: told it of %u message(s) of priority %u lost while no "
				"plane reached it", l->peer, sent, q);
	}
}

/* Numbers lost for good are told as soon as a lane to the peer is up: at
 * once when one is (a message lost while another lane lives, a first
 * connection's message that could not go), else when one comes up
 * (lane_changed).  Until then they hold the peer's window, and our
 * own (tx_done): told only when a lane turned up, a loss beside a live lane
 * stopped the stream for good. */
static void skips_tell(struct triad_ctx *ctx, struct tr_peer *p)
{
	struct tr_lane *l;

	if (!skips_pending(p) || ctx->closing || p->pl.gone)
		return;
	l = tr_peer_lane(ctx, p->rank, TR_F_NO_DETOUR);
	if (l && l->state == TR_LANE_UP)
		skip_flush(l);
}

void tr_peer_msg_skip(struct tr_lane *l, const void *data, int len)
{
	struct tr_peer *p = &l->ctx->peers[l->peer];

	skip_lost(p, data, len);
	skips_tell(l->ctx, p);
}

static int park(struct tr_lane *l, const struct tr_msg *m, struct tr_buf *b);

/* The peer will never send these numbers: the window moves past them.  One
 * beyond the window parks the SEQ_SKIP, tried whole again once it fits
 * (the numbers before it are known then, and count as duplicates).  0; -1
 * when the peer broke its window (the lane is broken). */
static int skip_receive(struct tr_lane *l, const struct tr_msg *m)
{
	struct tr_peer *p = &l->ctx->peers[l->peer];

	for (unsigned i = 0; i < m->u.seq_skip.count; i++) {
		uint32_t seq = m->u.seq_skip.seq[i];
		struct tr_msg at;

		switch (tr_stream_rx_skip(&p->pl.rx[m->prio], seq, TR_PARKED_MAX)) {
		case TR_STREAM_PARK:
			at = *m;
			at.seq = seq; /* parked by the number it waits for */
			if (park(l, &at, NULL) == 0)
				return 0;
			tr_stream_rx_unparked(&p->pl.rx[m->prio]);
			/* fall through */
		case TR_STREAM_BROKEN:
			tr_error("peer %d: lost message %u of priority %u is beyond the window "
				 "(expected %u) and cannot be parked: the connection is broken",
				 l->peer, seq, m->prio, tr_stream_rx_next(&p->pl.rx[m->prio]));
			tr_lane_fail(l, TRIAD_S_TRANSPORT);
			return -1;
		default:
			break;
		}
	}
	tr_debug("peer %d: %u lost message(s) skipped", l->peer, m->u.seq_skip.count);
	return 0;
}

/* ---- connect on first use (TRIAD_CONNECT=lazy) ------------------------------------*/
/* While a peer's first connection is set up, a message to it waits here,
 * encoded with its sequence number (so the order of everything sent to
 * the peer is that of the calls), and goes on the first lane up.  A
 * message that cannot go is lost like one no plane was left for: its
 * numbers are skipped (SEQ_SKIP) should a lane come up later. */
struct tr_await_msg {
	struct tr_list link;
	struct triad_req *req;
	unsigned prio;
	int len;
	char data[];
};

/* Where number seq of prio to p is, for a diagnosis (tr_peer_describe):
 * every place a number waits or travels; "nowhere" is a number leaked. */
static const char *oldest_where(const struct triad_ctx *ctx, const struct tr_peer *p,
				unsigned prio, uint32_t seq, int *plane)
{
	const char *where;

	if (tr_stream_tx_is_lost(&p->pl.tx[prio], seq))
		return "lost, not told yet";
	for (int q = 0; q < ctx->nplanes; q++)
		if ((where = tr_lane_seq_where(&p->lane[q], prio, seq))) {
			*plane = q;
			return where;
		}
	for (const struct tr_list *e = p->await_msgs.next; e != &p->await_msgs; e = e->next) {
		const struct tr_await_msg *a = tr_container_of(e, struct tr_await_msg, link);

		if (tr_msg_carries(a->data, a->len, prio, seq))
			return "waiting for a connection";
	}
	for (const struct tr_list *e = p->held.next; e != &p->held; e = e->next) {
		const struct tr_held_msg *h = tr_container_of(e, struct tr_held_msg, link);

		if (tr_msg_carries(h->data, h->len, prio, seq))
			return "given back by a broken lane, held by its owner";
	}
	return "in no queue, send buffer, wait or hold (leaked)";
}

/* Past the connect timeout, a margin for the last attempt's answer. */
#define AWAIT_SLACK_MS 5000

int tr_peer_coming(const struct triad_ctx *ctx, const struct tr_peer *p)
{
	if (p->rejoin == TR_REJOIN_WAIT)
		return 1;
	for (int q = 0; q < ctx->nplanes; q++)
		if (tr_lane_setting_up(&p->lane[q]))
			return 1;
	return 0;
}

int tr_peer_await(struct triad_ctx *ctx, int peer)
{
	struct tr_peer *p = &ctx->peers[peer];
	int busy = 0;

	if (!ctx->initialized || ctx->closing || p->pl.gone || peer == ctx->rank)
		return 0;
	if (p->rejoin == TR_REJOIN_WAIT) {
		if (!p->awaiting) {
			p->awaiting = 1;
			p->await_deadline_ns = p->rejoin_deadline_ns;
		}
		return 1;
	}
	if (ctx->cfg.connect != TR_CONNECT_LAZY)
		return 0;
	for (int q = 0; q < ctx->nplanes; q++)
		busy |= tr_lane_use(&p->lane[q]);
	if (busy && !p->awaiting) {
		p->awaiting = 1;
		p->await_deadline_ns =
			tr_now_ns() + (uint64_t)(ctx->cfg.connect_timeout_ms + AWAIT_SLACK_MS) *
					      1000000;
	}
	return busy;
}

/* a, filled in, waits for the peer's first lane up. */
static void await_push(struct tr_peer *p, struct tr_await_msg *a)
{
	tr_list_add_tail(&p->await_msgs, &a->link);
	p->nawait_msgs++;
}

/* m encoded into a node of its own (numbered seq: 0 until its stream
 * gives it one), to wait; NULL with *ret -EMSGSIZE, -ENOMEM or the
 * encoder's error.  The peer's slot size comes with its connection: ours
 * is the guess (checked again when it goes). */
static struct tr_await_msg *msg_keep(struct tr_peer *p, struct tr_msg *m, unsigned prio,
				     uint32_t seq, struct triad_req *req, int *ret)
{
	size_t need = tr_msg_len(m);
	struct tr_await_msg *a;

	if (need > (size_t)p->lane[0].ctx->cfg.slot_size) {
		*ret = -EMSGSIZE;
		return NULL;
	}
	a = malloc(sizeof(*a) + need);
	if (!a) {
		*ret = -ENOMEM;
		return NULL;
	}
	m->seq = seq;
	m->slot = 0;
	m->prio = (uint8_t)prio;
	a->len = tr_msg_encode(m, a->data, need);
	if (a->len < 0) {
		*ret = a->len;
		free(a);
		return NULL;
	}
	a->prio = prio;
	a->req = req;
	return a;
}

static int await_msg(struct tr_peer *p, struct tr_msg *m, unsigned prio, struct triad_req *req)
{
	struct tr_await_msg *a;
	int ret;

	/* (The window has room: send_on.) */
	if (!(a = msg_keep(p, m, prio, tr_stream_tx_next(&p->pl.tx[prio]), req, &ret)))
		return ret;
	tr_stream_tx_assign(&p->pl.tx[prio], &m->seq);
	await_push(p, a);
	return 0;
}

static void await_msg_lost(struct tr_peer *p, struct tr_await_msg *a, enum triad_status st)
{
	tr_list_del(&a->link);
	p->nawait_msgs--;
	skip_lost(p, a->data, a->len);
	if (a->req)
		tr_req_complete(a->req, st);
	free(a);
	skips_tell(p->lane[0].ctx, p);
}

/* ---- messages waiting for their stream's window ---------------------------------*/
/* m waits, encoded but not numbered, for a number of prio's stream to p;
 * 0, -EMSGSIZE or -ENOMEM. */
static int full_msg(struct tr_peer *p, struct tr_msg *m, unsigned prio, struct triad_req *req)
{
	int ret;
	struct tr_await_msg *f = msg_keep(p, m, prio, 0, req, &ret);

	if (!f)
		return ret;
	tr_list_add_tail(&p->full[prio], &f->link);
	p->nfull++;
	return 0;
}

static void full_done(struct tr_peer *p, struct tr_await_msg *f, enum triad_status st)
{
	tr_list_del(&f->link);
	p->nfull--;
	if (f->req && st != TRIAD_S_OK)
		tr_req_complete(f->req, st);
	free(f);
}

/* What waits for prio's window goes as far as it moved, in order: on the
 * lane the choice gives, or (the same node) to wait for a connection,
 * numbered now. */
static void full_send(struct triad_ctx *ctx, struct tr_peer *p, unsigned prio)
{
	while (!tr_list_empty(&p->full[prio]) && tr_stream_tx_can_assign(&p->pl.tx[prio])) {
		struct tr_await_msg *f = tr_list_first(&p->full[prio], struct tr_await_msg, link);
		struct tr_lane *l = tr_peer_lane(ctx, p->rank, 0);
		uint32_t seq = tr_stream_tx_next(&p->pl.tx[prio]);
		int ret;

		tr_wire_set_seq(f->data, seq);
		if (l->state == TR_LANE_UP) {
			ret = f->len > (int)l->peer_slot_size
				      ? -EMSGSIZE
				      : tr_lane_send(l, f->data, f->len, prio, f->req, 1);
			if (ret) {
				tr_warn("rank %d: a %s that waited for its stream cannot go: %s",
					p->rank, tr_msg_type_str(tr_wire_type(f->data)),
					strerror(-ret));
				full_done(p, f, TRIAD_S_TRANSPORT);
				continue;
			}
			f->req = NULL; /* it went with the message */
			full_done(p, f, TRIAD_S_OK);
		} else if (tr_peer_await(ctx, p->rank)) {
			tr_list_del(&f->link);
			p->nfull--;
			await_push(p, f);
		} else {
			full_done(p, f, TRIAD_S_UNREACHABLE);
			continue;
		}
		tr_stream_tx_assign(&p->pl.tx[prio], &seq);
	}
}

/* p is not reachable: nothing that waits for its streams will go. */
static void full_fail(struct tr_peer *p, enum triad_status st)
{
	for (unsigned q = 0; q < TR_FC_NPRIO; q++)
		while (!tr_list_empty(&p->full[q]))
			full_done(p, tr_list_first(&p->full[q], struct tr_await_msg, link), st);
}

/* A lane is up: what waited goes, in order, where the choice says now. */
static void await_msgs_send(struct triad_ctx *ctx, struct tr_peer *p)
{
	while (!tr_list_empty(&p->await_msgs)) {
		struct tr_await_msg *a = tr_list_first(&p->await_msgs, struct tr_await_msg, link);
		struct tr_lane *l = tr_peer_lane(ctx, p->rank, 0);
		int ret;

		if (l->state != TR_LANE_UP)
			return; /* up, but not live (its port is down): the next change */
		ret = tr_lane_send(l, a->data, a->len, a->prio, a->req, 1);
		if (ret) {
			tr_warn("rank %d: a %s that waited for the connection cannot go: %s",
				p->rank, tr_msg_type_str(tr_wire_type(a->data)), strerror(-ret));
			await_msg_lost(p, a, TRIAD_S_TRANSPORT);
			continue;
		}
		tr_list_del(&a->link);
		p->nawait_msgs--;
		free(a);
	}
}

/* What the features keep waiting for p's connection (their await hooks). */
static void await_hooks(struct triad_ctx *ctx, struct tr_peer *p, int all, enum triad_status st)
{
	for (unsigned i = 0; i < ctx->nawait; i++)
		ctx->await[i](ctx, p, all, st);
}

static void await_fail(struct triad_ctx *ctx, struct tr_peer *p, enum triad_status st)
{
	if (p->nawait_msgs || !tr_list_empty(&p->await_rma))
		tr_warn("rank %d: not connected on any plane: %u message(s) and the puts and gets "
			"waiting for it fail (%s)", p->rank, p->nawait_msgs, triad_status_str(st));
	while (!tr_list_empty(&p->await_msgs))
		await_msg_lost(p, tr_list_first(&p->await_msgs, struct tr_await_msg, link), st);
	if (!tr_peer_reachable(ctx, p->rank))
		full_fail(p, st); /* else its window moves on a lane up */
	await_hooks(ctx, p, 1, st);
	if (!tr_peer_reachable(ctx, p->rank))
		for (unsigned i = 0; i < ctx->nunreached; i++)
			ctx->unreached[i](ctx, p->rank, st); /* lookups whose query waited */
	p->awaiting = 0;
}

/* A lane of p changed state: what waits goes, keeps waiting while a lane
 * is being set up, or fails once every lane gave up. */
static void await_settle(struct triad_ctx *ctx, struct tr_peer *p)
{
	if (!p->awaiting || p->await_settling)
		return;
	p->await_settling = 1; /* sending may break a lane, which calls in again */
	if (tr_peer_reachable(ctx, p->rank))
		await_msgs_send(ctx, p);
	await_hooks(ctx, p, 0, TRIAD_S_OK);
	if (!tr_peer_coming(ctx, p)) {
		if (p->nawait_msgs || !tr_list_empty(&p->await_rma) ||
		    !tr_peer_reachable(ctx, p->rank))
			await_fail(ctx, p, TRIAD_S_UNREACHABLE);
		p->awaiting = 0;
	}
	p->await_settling = 0;
}

/* ---- rejoin ----------------------------------------------------------------------*/
/* A peer no lane reaches any more: what the features do that needs it
 * fails (its windows' lookups, copies, broadcasts). */
static void full_fail(struct tr_peer *p, enum triad_status st);

static void peer_lost(struct triad_ctx *ctx, int peer, enum triad_status st)
{
	full_fail(&ctx->peers[peer], st); /* no window will move for them */
	for (unsigned i = 0; i < ctx->nlost; i++)
		ctx->lost[i](ctx, peer, st);
}

/* l, the last lane up to p, left UP by a fault (a peer that closes says
 * BYE first): what goes to p now waits, for TRIAD_REJOIN_MS at most, for
 * a connection back, which the side that connects rebuilds.  On rxe a
 * pair loses every plane now and then while both processes live (a
 * fault on one plane, rxe's retries failing on the other under the burst
 * moved to it); a single-plane job loses its only one at every link flap. */
static void rejoin_begin(struct triad_ctx *ctx, struct tr_peer *p, const struct tr_lane *l)
{
	if (p->rejoin != TR_REJOIN_NONE || !l->ever_up || ctx->cfg.rejoin_ms <= 0 ||
	    !ctx->initialized || ctx->closing || p->pl.gone || tr_peer_reachable(ctx, p->rank))
		return;
	p->rejoin = TR_REJOIN_WAIT;
	p->rejoin_deadline_ns = tr_now_ns() + (uint64_t)ctx->cfg.rejoin_ms * 1000000;
	tr_warn("rank %d: no connection left (plane %d %s: %s): what goes to it waits up to "
		"%d ms for one back", p->rank, l->plane, tr_lane_state_str(l->state),
		triad_status_str(l->down_status), ctx->cfg.rejoin_ms);
}

static void rejoin_back(struct triad_ctx *ctx, struct tr_peer *p, const struct tr_lane *l)
{
	if (p->rejoin == TR_REJOIN_WAIT) {
		uint64_t began = p->rejoin_deadline_ns - (uint64_t)ctx->cfg.rejoin_ms * 1000000;

		tr_warn("rank %d: connected again on plane %d after %.2f s: what waited goes",
			p->rank, l->plane, (double)(tr_now_ns() - began) * 1e-9);
	}
	p->rejoin = TR_REJOIN_NONE;
}

static void rejoin_give_up(struct triad_ctx *ctx, struct tr_peer *p)
{
	if (p->pl.gone)
		tr_warn("rank %d: closed while awaited back: lost", p->rank);
	else
		tr_warn("rank %d: no connection back within %d ms (TRIAD_REJOIN_MS): lost",
			p->rank, ctx->cfg.rejoin_ms);
	p->rejoin = TR_REJOIN_LOST;
	tr_peer_fence_settle(ctx, p);
	if (p->awaiting)
		await_fail(ctx, p, TRIAD_S_UNREACHABLE);
	if (!tr_peer_alive(ctx, p->rank))
		peer_lost(ctx, p->rank, TRIAD_S_UNREACHABLE);
}

static void peer_gone(struct triad_ctx *ctx, int peer, const char *why)
{
	struct tr_peer *p = &ctx->peers[peer];

	tr_warn("rank %d: %s: its process is gone", peer, why);
	p->pl.gone = 1;
	tr_peer_fence_settle(ctx, p);
	if (p->rejoin == TR_REJOIN_WAIT && !p->await_settling)
		rejoin_give_up(ctx, p);
	tr_ctx_signal(ctx);
}

/* Periodically (the flow-control timer): what waits past its deadline
 * fails, and a peer not back within TRIAD_REJOIN_MS is lost. */
static void await_tick(struct triad_ctx *ctx)
{
	uint64_t now = tr_now_ns();

	for (int r = 0; r < ctx->size; r++) {
		struct tr_peer *p = &ctx->peers[r];

		if (p->rejoin == TR_REJOIN_WAIT && !p->await_settling &&
		    (p->pl.gone || now >= p->rejoin_deadline_ns))
			rejoin_give_up(ctx, p);
		if (p->awaiting && !p->await_settling && now >= p->await_deadline_ns) {
			tr_warn("rank %d: no connection after %d ms", r, ctx->cfg.connect_timeout_ms);
			await_fail(ctx, p, TRIAD_S_UNREACHABLE);
		}
	}
}

void tr_peer_await_cancel(struct triad_ctx *ctx)
{
	for (int r = 0; r < ctx->size; r++) {
		struct tr_peer *p = &ctx->peers[r];

		while (!tr_list_empty(&p->await_msgs))
			await_msg_lost(p, tr_list_first(&p->await_msgs, struct tr_await_msg, link),
				       TRIAD_S_CANCELLED);
		full_fail(p, TRIAD_S_CANCELLED);
		await_hooks(ctx, p, 1, TRIAD_S_CANCELLED);
		p->awaiting = 0;
	}
}

void tr_peer_free(struct tr_peer *p)
{
	full_fail(p, TRIAD_S_OK); /* their owners let them go at close */
	while (!tr_list_empty(&p->fenceq)) { /* settled at close: none is left */
		struct tr_fence_wait *e = tr_list_first(&p->fenceq, struct tr_fence_wait, link);

		tr_list_del(&e->link);
		free(e);
	}
	p->nfenced = 0;
	while (!tr_list_empty(&p->held)) { /* their owners let them go at close */
		struct tr_held_msg *h = tr_list_first(&p->held, struct tr_held_msg, link);

		tr_list_del(&h->link);
		free(h);
	}
	for (unsigned q = 0; q < TR_FC_NPRIO; q++)
		while (!tr_list_empty(&p->parked[q])) {
			struct tr_parked *e = tr_list_first(&p->parked[q], struct tr_parked, link);

			tr_list_del(&e->link);
			free(e); /* its buffer, if any, is taken back with the lane's */
		}
	p->nparked = 0;
}

/* ---- arrivals beyond the window ------------------------------------------------*/
/* The sender posts a number only inside the window of its oldest one not
 * yet acknowledged by the NIC.  Acknowledged is not handled: that one may
 * still wait in another plane's completion queue while this plane's keep
 * coming, so a number beyond our window is not the sender's fault.  It is
 * parked, and handled as soon as the window reaches it; the ones it waits
 * for are already here (they were acknowledged), so this never waits for
 * the network.  An active message keeps its receive buffer (and slot) while
 * parked; anything else is whole in its struct tr_msg.  A sender that
 * really broke the bound cannot make us park more than TR_PARKED_MAX. */

static int park(struct tr_lane *l, const struct tr_msg *m, struct tr_buf *b)
{
	struct tr_peer *p = &l->ctx->peers[l->peer];
	struct tr_msg at = *m;
	struct tr_parked *e;
	/* Carried data (a copy's, an ORDER's) points into a receive buffer
	 * that is posted again: it is kept with the message. */
	size_t extra = 0;
	const void **carried = b ? NULL : tr_msg_carried(&at, &extra);

	if (!carried)
		extra = 0;
	if (!(e = malloc(sizeof(*e) + extra)))
		return -1;
	*e = (struct tr_parked){ .l = l, .b = b, .m = *m };
	if (extra) {
		memcpy(e->data, *carried, extra);
		*tr_msg_carried(&e->m, &extra) = e->data;
	}
	tr_list_add_tail(&p->parked[m->prio], &e->link);
	p->nparked++;
	tr_debug("peer %d: %s seq %u of priority %u beyond the window (expected %u): parked",
		 l->peer, tr_msg_type_str(m->type), m->seq, m->prio,
		 tr_stream_rx_next(&p->pl.rx[m->prio]));
	return 0;
}

/* The window of prio moved: handle what it reaches now (one at a time:
 * a handler may move the window again, or park more). */
static int on_msg(struct tr_lane *l, const struct tr_msg *m, struct tr_buf *b);

static void unpark(struct tr_peer *p, unsigned prio)
{
	if (p->unparking)
		return; /* the outer call rescans */
	p->unparking = 1;
	for (;;) {
		struct tr_parked *e = NULL;

		for (struct tr_list *i = p->parked[prio].next; i != &p->parked[prio]; i = i->next) {
			struct tr_parked *x = tr_container_of(i, struct tr_parked, link);

			if (tr_stream_rx_fits(&p->pl.rx[prio], x->m.seq)) {
				e = x;
				break;
			}
		}
		if (!e)
			break;
		tr_list_del(&e->link);
		p->nparked--;
		tr_stream_rx_unparked(&p->pl.rx[prio]);
		if (!on_msg(e->l, &e->m, e->b) && e->b)
			tr_lane_release(e->b); /* handled and not kept: its slot is free */
		free(e);
	}
	p->unparking = 0;
}

/* ---- the redo fence -------------------------------------------------------------*/
/* A WRITE that a break flushed may have been executed, or not, or may still
 * be on its way: delayed in a switch or a queue of the broken plane, it is
 * executed by the peer's end of the old connection whenever it arrives, as
 * long as that end is alive.  A verbs fence on the new connection orders
 * nothing on the old one.  So an operation one of whose WRITEs a break
 * flushed is done again, or completed, only once the peer's end of that
 * connection can execute nothing more:
 *   - we ask it (PLANE_DOWN with the peer's QP number and our count of the
 *     lane's breaks), it moves its end to the error state and answers
 *     (PLANE_DOWN, ack = 1, the same count);
 *   - or it closed that end itself (a disconnect, its own PLANE_DOWN);
 *   - or the lane is connected again (the peer accepts a connection only
 *     once its old end on the plane is gone: lane.c, REJECT_STALE);
 *   - or the peer is gone, lost, or we are closing.
 * Held operations settle in the order they came. */
static struct tr_fence_lane *fence_lanes(const struct triad_ctx *ctx, const struct tr_peer *p,
				       struct tr_fence_lane f[TRIAD_MAX_PLANES])
{
	for (int q = 0; q < ctx->nplanes; q++)
		f[q] = p->lane[q].fence;
	return f;
}

/* Nothing of the peer's can land any more, or nobody cares. */
static int fence_moot(const struct triad_ctx *ctx, const struct tr_peer *p)
{
	return ctx->closing || p->pl.gone || p->rejoin == TR_REJOIN_LOST;
}

static int fence_push(struct tr_peer *p, struct triad_req *req)
{
	struct tr_fence_wait *e = malloc(sizeof(*e));

	if (!e) {
		tr_error("rank %d: no memory to hold an operation for the redo fence: it goes "
			 "now, and its first attempt may still land", p->rank);
		return 0;
	}
	e->req = req;
	tr_list_add_tail(&p->fenceq, &e->link);
	p->nfenced++;
	return 1;
}

int tr_peer_fence_hold(struct triad_req *req)
{
	struct triad_ctx *ctx = req->ctx;
	struct tr_peer *p = &ctx->peers[req->peer];
	struct tr_fence_lane f[TRIAD_MAX_PLANES];

	if (!tr_fence_holds(fence_lanes(ctx, p, f), ctx->nplanes, req->fence_planes, p->nfenced,
			    fence_moot(ctx, p)) ||
	    !fence_push(p, req))
		return 0;
	tr_debug("rank %d: a %s waits for the redo fence (planes 0x%x)", p->rank,
		 req->kind == TR_REQ_CHUNK ? "copy chunk" : "put", req->fence_planes);
	return 1;
}

void tr_peer_fence_settle(struct triad_ctx *ctx, struct tr_peer *p)
{
	if (p->fence_settling)
		return; /* the outer call goes on */
	p->fence_settling = 1;
	while (!tr_list_empty(&p->fenceq)) {
		struct tr_fence_wait *e = tr_list_first(&p->fenceq, struct tr_fence_wait, link);
		struct tr_fence_lane f[TRIAD_MAX_PLANES];
		struct triad_req *req = e->req;

		if (!tr_fence_may_go(fence_lanes(ctx, p, f), ctx->nplanes, req->fence_planes,
				     fence_moot(ctx, p)))
			break;
		tr_list_del(&e->link);
		p->nfenced--;
		free(e);
		req->rma->fenced(req);
	}
	p->fence_settling = 0;
}

/* The peer asks us to close our end of the connection on a plane (ack 0),
 * or answers that it closed its own (ack 1). */
static void on_plane_down(struct triad_ctx *ctx, struct tr_peer *p,
			  const struct tr_plane_down_body *d)
{
	struct tr_lane *l = &p->lane[d->plane];
	struct tr_msg m = { .type = TR_MSG_PLANE_DOWN };
	int ret;

	if (d->ack) {
		tr_fence_lane_answer(&l->fence, d->gen);
		tr_peer_fence_settle(ctx, p);
		return;
	}
	/* Only the end it names: a late question must not break a connection
	 * rebuilt meanwhile (whose QP is another). */
	if (l->state == TR_LANE_UP && (!d->qpn || d->qpn == l->qpn)) {
		tr_warn("peer %d plane %u: the peer reports the connection broken", p->rank,
			d->plane);
		l->peer_closed = 1; /* its end is closed: nothing to ask back */
		tr_lane_fail(l, TRIAD_S_UNREACHABLE);
	}
	/* Our end of that connection is in the error state now (or was never
	 * up, or is another connection): nothing it was sent executes here. */
	m.u.plane_down = *d;
	m.u.plane_down.ack = 1;
	ret = tr_peer_send(ctx, p->rank, &m, TR_FC_HIGH, NULL);
	if (ret)
		tr_debug("rank %d: no answer to its PLANE_DOWN of plane %u: %s", p->rank,
			 d->plane, strerror(-ret));
}

/* ---- the peer layer's own messages --------------------------------------------------*/
/* A clean exit: its disconnects follow; rebuilding them would retry until
 * we close. */
static int on_bye(struct tr_lane *l, const struct tr_msg *m, struct tr_buf *b)
{
	struct tr_peer *p = &l->ctx->peers[l->peer];

	(void)m;
	(void)b;
	tr_info("peer %d: closing", l->peer);
	p->pl.gone = 1;
	tr_peer_fence_settle(l->ctx, p);
	return 0;
}

static int on_plane_drain(struct tr_lane *l, const struct tr_msg *m, struct tr_buf *b)
{
	struct triad_ctx *ctx = l->ctx;
	struct tr_peer *p = &ctx->peers[l->peer];

	(void)b;
	if ((int)m->u.plane_drain.plane < ctx->nplanes) {
		unsigned bit = 1u << m->u.plane_drain.plane;

		tr_info("peer %d asks %s plane %u", l->peer,
			m->u.plane_drain.on ? "to leave" : "to use again", m->u.plane_drain.plane);
		p->peer_drained = m->u.plane_drain.on ? p->peer_drained | bit
						      : p->peer_drained & ~bit;
		tr_peer_plane_event(ctx, p, (int)m->u.plane_drain.plane);
	}
	return 0;
}

static int on_plane_down_msg(struct tr_lane *l, const struct tr_msg *m, struct tr_buf *b)
{
	struct triad_ctx *ctx = l->ctx;

	(void)b;
	if ((int)m->u.plane_down.plane < ctx->nplanes)
		on_plane_down(ctx, &ctx->peers[l->peer], &m->u.plane_down);
	return 0;
}

static void lane_changed(struct tr_lane *l);
static void msg_lost(struct tr_lane *l, const void *data, int len, unsigned prio,
		     struct triad_req *req);

static struct tr_lane *lane_of(const struct triad_ctx *ctx, int peer, int plane)
{
	return &ctx->peers[peer].lane[plane];
}

/* ---- what the progress engine asks of the lanes ---------------------------------------*/
static int lanes_send_wanted(const struct triad_ctx *ctx, int plane)
{
	for (int r = 0; r < ctx->size; r++)
		if (r != ctx->rank && tr_lane_send_wanted(&ctx->peers[r].lane[plane]))
			return 1;
	return 0;
}

/* Calls fn on every lane of every peer. */
static void each_lane(struct triad_ctx *ctx, void (*fn)(struct tr_lane *))
{
	for (int r = 0; r < ctx->size; r++)
		for (int p = 0; r != ctx->rank && p < ctx->nplanes; p++)
			fn(&ctx->peers[r].lane[p]);
}

static void lanes_period(struct triad_ctx *ctx)
{
	each_lane(ctx, tr_lane_fc_tick);
	await_tick(ctx);
}

static void lanes_kicked(struct triad_ctx *ctx)
{
	each_lane(ctx, tr_lane_reconnect);
	each_lane(ctx, tr_lane_connect_wanted); /* first uses (TRIAD_CONNECT=lazy) */
}

static void lanes_linger(struct triad_ctx *ctx)
{
	each_lane(ctx, tr_lane_bsm_flush);
}

void tr_peer_setup(struct triad_ctx *ctx)
{
	static const struct tr_lane_owner owner = {
		.lane = lane_of,
		.reachable = tr_peer_reachable,
		.gone = peer_gone,
		.changed = lane_changed,
		.on_msg = on_msg,
		.msg_lost = msg_lost,
		.seq_done = seq_done,
		.redecide = redecide,
		.describe = tr_peer_describe,
	};

	static const struct tr_progress_lanes lanes = {
		.send_wanted = lanes_send_wanted,
		.period = lanes_period,
		.kicked = lanes_kicked,
		.linger = lanes_linger,
	};

	ctx->lane_owner = &owner;
	ctx->progress_lanes = &lanes;
	tr_peer_handle(ctx, TR_MSG_BYE, on_bye);
	tr_peer_handle(ctx, TR_MSG_PLANE_DRAIN, on_plane_drain);
	tr_peer_handle(ctx, TR_MSG_PLANE_DOWN, on_plane_down_msg);
}

void tr_peer_handle(struct triad_ctx *ctx, enum tr_msg_type type, tr_msg_fn fn)
{
	ctx->on_msg[type] = fn;
}

int tr_peer_hooks_add(struct triad_ctx *ctx, const struct tr_peer_hooks *h)
{
	if (ctx->nrx_moved == TR_PEER_HOOKS_MAX || ctx->nunreached == TR_PEER_HOOKS_MAX ||
	    ctx->nlost == TR_PEER_HOOKS_MAX || ctx->nawait == TR_PEER_HOOKS_MAX)
		return -ENOSPC;
	if (h->rx_moved)
		ctx->rx_moved[ctx->nrx_moved++] = h->rx_moved;
	if (h->unreached)
		ctx->unreached[ctx->nunreached++] = h->unreached;
	if (h->lost)
		ctx->lost[ctx->nlost++] = h->lost;
	if (h->await)
		ctx->await[ctx->nawait++] = h->await;
	return 0;
}

/* p's receive stream of prio moved on: the features' rx_moved hooks. */
static void rx_moved(struct triad_ctx *ctx, struct tr_peer *p, unsigned prio)
{
	for (unsigned i = 0; i < ctx->nrx_moved; i++)
		ctx->rx_moved[i](ctx, p, prio);
}

/* ---- lane events ----------------------------------------------------------------*/
static int on_msg(struct tr_lane *l, const struct tr_msg *m, struct tr_buf *b)
{
	struct triad_ctx *ctx = l->ctx;
	struct tr_peer *p = &ctx->peers[l->peer];
	enum tr_stream_verdict v;
	tr_msg_fn fn;
	int kept = 0;

	if (m->type == TR_MSG_SEQ_SKIP) { /* carries no number of its own */
		skip_receive(l, m);
		rx_moved(ctx, p, m->prio);
		unpark(p, m->prio);
		return 0;
	}
	v = tr_stream_rx_accept(&p->pl.rx[m->prio], m->seq, TR_PARKED_MAX);
	if (v != TR_STREAM_DELIVER)
		tr_debug("peer %d: %s seq %u of priority %u: %s", l->peer,
			 tr_msg_type_str(m->type), m->seq, m->prio, tr_stream_verdict_str(v));
	switch (v) {
	case TR_STREAM_DELIVER:
		break;
	case TR_STREAM_DUPLICATE:
		return 0;
	case TR_STREAM_PARK:
		if (park(l, m, b) == 0)
			return b != NULL; /* an active message's buffer stays held */
		tr_stream_rx_unparked(&p->pl.rx[m->prio]);
		/* no memory to keep it */
		/* fall through */
	default:
		tr_lane_count_drop(l, 0);
		tr_error("peer %d: %s seq %u of priority %u beyond the window (expected %u), "
			 "and %u parked already (or no memory): the peer broke its window, or we "
			 "are out of memory: the connection is broken",
			 l->peer, tr_msg_type_str(m->type), m->seq, m->prio,
			 tr_stream_rx_next(&p->pl.rx[m->prio]), p->nparked);
		tr_lane_fail(l, TRIAD_S_TRANSPORT);
		return 0;
	}
	fn = ctx->on_msg[m->type]; /* the decoder knows every type */
	if (fn)
		kept = fn(l, m, b);
	rx_moved(ctx, p, m->prio); /* this number may be what some waited for */
	if (!tr_list_empty(&p->parked[m->prio]))
		unpark(p, m->prio);
	tr_ctx_signal(ctx);
	return kept;
}

/* TRIAD_CONNECT=lazy: the lane that broke was the peer's only one up so
 * far, and another is still being set up (a burst of first connections
 * can break the first one up before the rest are).  The message, encoded
 * with its sequence number, waits for that one as the messages sent before
 * any lane was up do (the receiver drops it should its first copy have
 * arrived).  1 when it waits. */
static int await_again(struct tr_lane *l, const void *data, int len, unsigned prio,
		       struct triad_req *req)
{
	struct triad_ctx *ctx = l->ctx;
	struct tr_peer *p = &ctx->peers[l->peer];
	struct tr_await_msg *a;

	if (!tr_peer_await(ctx, p->rank) || !(a = malloc(sizeof(*a) + (size_t)len)))
		return 0;
	memcpy(a->data, data, (size_t)len);
	a->len = len;
	a->prio = prio;
	a->req = req;
	await_push(p, a);
	tr_debug("a message to rank %d waits for a plane being connected (plane %d broke)",
		 p->rank, l->plane);
	return 1;
}

static void msg_lost(struct tr_lane *l, const void *data, int len, unsigned prio,
		     struct triad_req *req)
{
	if (req && req->lost) /* an ordered send: its owner decides */
		req->lost(req, l, data, len, prio);
	else
		tr_peer_msg_resend(l, data, len, prio, req);
}

void tr_peer_msg_resend(struct tr_lane *l, const void *data, int len, unsigned prio,
			struct triad_req *req)
{
	struct triad_ctx *ctx = l->ctx;
	struct tr_lane *alt = tr_peer_lane(ctx, l->peer, 0);

	if (ctx->closing) {
		if (req)
			tr_req_complete(req, TRIAD_S_CANCELLED);
		return;
	}
	/* The encoded message keeps its sequence number: the receiver drops
	 * it if the first copy did arrive.  (l itself is a choice once it is
	 * up again.) */
	if ((alt == l && l->state != TR_LANE_UP) || tr_lane_send(alt, data, len, prio, req, 0)) {
		/* Nobody waits for our BYE, nor for anything to a peer that said
		 * its own: that is a peer closing first, not a fault. */
		int closing = l->pl->gone || tr_wire_type(data) == TR_MSG_BYE;

		if (!closing && await_again(l, data, len, prio, req))
			return;
		if (closing)
			tr_info("a message to rank %d is lost: it is closing", l->peer);
		else
			tr_warn("a message to rank %d is lost: no live plane left (it broke on "
				"plane %d; the choice gave plane %d, %s)",
				l->peer, l->plane, alt->plane, tr_lane_state_str(alt->state));
		skip_lost(&ctx->peers[l->peer], data, len);
		if (req)
			tr_req_complete(req, l->down_status);
		skips_tell(ctx, &ctx->peers[l->peer]);
		return;
	}
	tr_debug("message to rank %d moved from plane %d to plane %d", l->peer, l->plane,
		 alt->plane);
}

struct tr_held_msg *tr_peer_msg_hold(struct tr_lane *l, const void *data, int len,
				     unsigned prio, struct triad_req *req)
{
	struct tr_held_msg *h = malloc(sizeof(*h) + (size_t)len);

	if (!h)
		return NULL;
	h->req = req;
	h->plane = l->plane;
	h->prio = prio;
	h->len = len;
	memcpy(h->data, data, (size_t)len);
	tr_list_add_tail(&l->ctx->peers[l->peer].held, &h->link);
	return h;
}

void tr_peer_msg_unhold(struct triad_ctx *ctx, struct tr_held_msg *h, int go)
{
	struct tr_lane *l = &ctx->peers[h->req->peer].lane[h->plane];

	tr_list_del(&h->link);
	if (go)
		tr_peer_msg_resend(l, h->data, h->len, h->prio, h->req);
	else
		tr_peer_msg_skip(l, h->data, h->len);
	free(h);
}

static void lane_changed(struct tr_lane *l)
{
	struct triad_ctx *ctx = l->ctx;
	struct tr_peer *p = &ctx->peers[l->peer];

	if (l->state == TR_LANE_UP)
		rejoin_back(ctx, p, l);
	else
		rejoin_begin(ctx, p, l);
	if (l->state == TR_LANE_UP || l->state == TR_LANE_DRAINING || l->state == TR_LANE_FAILED)
		tr_peer_plane_event(ctx, p, l->plane);
	if (l->state == TR_LANE_UP && skips_pending(p) && !ctx->closing && !p->pl.gone)
		skip_flush(l);
	if (l->state == TR_LANE_DRAINING || l->state == TR_LANE_FAILED) {
		/* Operations not yet posted whole on it are done again elsewhere
		 * or fail (their rma ops); posted ones come back flushed. */
		while (!tr_list_empty(&l->rmaq)) {
			struct triad_req *req = tr_list_first(&l->rmaq, struct triad_req, link);

			req->rma->broken(req, l->down_status);
		}
		/* A window query in flight on it goes again on another lane with
		 * the lane's other messages (the same query number, so its
		 * answer is still the one expected); its lookups fail only once
		 * the peer is lost: no plane left, none being set up (lazy) and
		 * none awaited back (rejoin).  Failing them here had failed puts that only
		 * needed the answer: with the lane's own status, and the answer
		 * then came and was dropped as unexpected. */
		if (!tr_peer_alive(ctx, l->peer))
			peer_lost(ctx, l->peer, l->down_status);
		if (l->state == TR_LANE_DRAINING && !ctx->closing && !l->peer_closed &&
		    !p->pl.gone) {
			/* The peer may not have noticed (a link fault loses its DREQ):
			 * tell it on another plane, so it closes its end (the redo
			 * fence waits for its answer) and the pair can rebuild the
			 * connection.  With no plane left it waits for one (rejoin),
			 * or the rebuilt connection is the fence. */
			struct tr_msg m = { .type = TR_MSG_PLANE_DOWN };
			struct tr_lane *alt = tr_peer_lane(ctx, l->peer, 0);

			m.u.plane_down.plane = (uint32_t)l->plane;
			m.u.plane_down.qpn = l->remote_qpn;
			m.u.plane_down.gen = l->fence.down_gen;
			if (alt != l || p->rejoin == TR_REJOIN_WAIT)
				tr_peer_send_chosen(alt, &m, TR_FC_HIGH, NULL);
		}
	}
	tr_peer_fence_settle(ctx, p);
	await_settle(ctx, p);
	tr_ctx_signal(ctx);
}

/* ---- counters -----------------------------------------------------------------------*/
int triad_conn_stats(triad_ctx_t *ctx, int rank, int plane, struct triad_conn_stats *stats_p)
{
	struct triad_conn_stats *o = stats_p;
	const struct tr_lane *l;
	const struct triad_conn_stats *c;
	uint64_t want;

	if (!ctx || !stats_p || rank < 0 || rank >= ctx->size || plane < 0 ||
	    plane >= ctx->nplanes || rank == ctx->rank ||
	    (stats_p->field_mask & ~(uint64_t)TRIAD_CONN_STATS_ALL))
		return -EINVAL;
	want = stats_p->field_mask;
	tr_ctx_lock(ctx);
	tr_progress(ctx); /* count what already completed */
	l = &ctx->peers[rank].lane[plane];
	c = &l->stats;
	if (want & TRIAD_CONN_STATS_LINK) {
		o->up = c->up;
		o->connects = c->connects;
		o->tx_msgs = c->tx_msgs;
		o->rx_msgs = c->rx_msgs;
		o->tx_bytes = c->tx_bytes;
		o->rx_bytes = c->rx_bytes;
		o->puts = c->puts;
		o->gets = c->gets;
		o->errors = c->errors;
	}
	if (want & TRIAD_CONN_STATS_FC) {
		int up = l->state == TR_LANE_UP;

		o->bsm_standalone = c->bsm_standalone;
		o->bsm_piggyback = c->bsm_piggyback;
		o->tx_slots_busy =
			up ? tr_popcount64(l->fc_tx.bbr & l->fc_tx.mask) : 0;
		o->rx_slots_busy = up ? tr_popcount64(l->fc_rx.cfr) : 0;
		o->tx_queued = l->nqueued;
		/* The engines of a broken lane were added to the totals when it broke. */
		o->fc_timeouts = c->fc_timeouts + (up ? tr_fc_tx_errors(&l->fc_tx) : 0);
		o->rx_overruns = c->rx_overruns + (up ? tr_fc_rx_overruns(&l->fc_rx) : 0);
		o->rx_dropped = c->rx_dropped;
	}
	if (want & TRIAD_CONN_STATS_AM)
		o->am_unknown = c->am_unknown;
	if (want & TRIAD_CONN_STATS_COPY)
		o->copy_bytes = c->copy_bytes;
	if (want & TRIAD_CONN_STATS_CHOICE)
		o->detours = c->detours;
	if (want & TRIAD_CONN_STATS_CONN)
		o->established = c->established;
	if (want & TRIAD_CONN_STATS_RUN)
		o->other_run = c->other_run;
	if (want & TRIAD_CONN_STATS_BARE) {
		o->am_bare_tx = c->am_bare_tx;
		o->am_bare_rx = c->am_bare_rx;
	}
	pthread_mutex_unlock(&ctx->lock);
	return 0;
}
