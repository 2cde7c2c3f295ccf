/* Peers: one rank over one lane per plane.  The plane choice, the per-peer
 * sequence numbers (every message carries the next one of its (sender,
 * peer) pair, whatever lane it takes, and the receiver accepts each once),
 * message dispatch to the features, resending what a broken lane may have
 * lost, and what a lane's state change means for the peer. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "base/log.h"
#include "core/ctx.h"

int tr_lane_live(const struct triad_ctx *ctx, const struct tr_lane *l)
{
	return l->state == TR_LANE_UP && tr_fab_plane_port_up(ctx->fab, l->plane);
}

int tr_plane_choose(struct triad_ctx *ctx, int peer, unsigned flags)
{
	struct tr_peer *p = &ctx->peers[peer];
	unsigned plane;
	int home, i, q;

	if (flags & TR_F_PLANE_PIN)
		return (int)(flags & TR_F_PLANE_MASK) < ctx->nplanes ? (int)(flags & TR_F_PLANE_MASK)
								     : -1;
	home = (ctx->rank + peer) % ctx->nplanes;
	/* The switch maps the home plane to the one to use now (itself, or
	 * its alternate while it is failed or drained). */
	if (tr_psw_unordered(&p->psw, (unsigned)home, &plane) == TR_PSW_POST &&
	    tr_lane_live(ctx, &p->lane[plane]))
		return (int)plane;
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

int tr_peer_wants(const struct triad_ctx *ctx, const struct tr_peer *p, int plane)
{
	return !((ctx->drained | p->peer_drained) >> plane & 1u);
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

int tr_peer_send_on(struct tr_lane *l, struct tr_msg *m, unsigned prio, struct triad_req *req)
{
	struct tr_peer *p = &l->ctx->peers[l->peer];
	size_t need = tr_msg_len(m);
	char stack[TR_WIRE_CTRL_LEN], *buf = stack;
	int len, ret;

	if (l->state != TR_LANE_UP || l->ctx->closing) /* closing: nothing is sent any more */
		return -ENOTCONN;
	if (need > l->peer_slot_size)
		return -EMSGSIZE;
	if (need > sizeof(stack) && !(buf = malloc(need)))
		return -ENOMEM;
	m->seq = p->tx_seq;
	m->slot = 0; /* the link fields are set when it is posted */
	m->prio = (uint8_t)prio;
	len = tr_msg_encode(m, buf, need);
	ret = len < 0 ? len : tr_lane_send(l, buf, len, prio, req);
	if (!ret)
		p->tx_seq++;
	if (buf != stack)
		free(buf);
	return ret;
}

int tr_peer_send(struct triad_ctx *ctx, int peer, struct tr_msg *m, unsigned prio,
		 struct triad_req *req)
{
	struct tr_lane *l = tr_peer_lane(ctx, peer, 0);
	int ret = tr_peer_send_on(l, m, prio, req);

	if (ret)
		tr_debug("%s to rank %d on plane %d: %s", tr_msg_type_str(m->type), peer, l->plane,
			 strerror(-ret));
	return ret;
}

/* ---- messages lost for good --------------------------------------------------*/
static void skip_add(struct tr_peer *p, uint32_t seq)
{
	if (p->nskip == p->skip_cap) {
		unsigned cap = p->skip_cap ? 2 * p->skip_cap : 64;
		uint32_t *n = realloc(p->skip, cap * sizeof(*n));

		if (!n) {
			tr_error("rank %d: no memory to remember a lost message: its later "
				 "messages may be refused", p->rank);
			return;
		}
		p->skip = n;
		p->skip_cap = cap;
	}
	p->skip[p->nskip++] = seq;
}

/* A lost message's numbers go back on the list: a lost SEQ_SKIP gives back
 * the numbers it carried, anything else its own. */
static void skip_lost(struct tr_peer *p, const void *data, int len)
{
	struct tr_msg m;

	if (tr_wire_type(data) != TR_MSG_SEQ_SKIP) {
		skip_add(p, tr_wire_seq(data));
		return;
	}
	if (tr_msg_decode(data, (size_t)len, &m) == 0)
		for (unsigned i = 0; i < m.u.seq_skip.count; i++)
			skip_add(p, m.u.seq_skip.seq[i]);
}

static int serial_cmp(const void *a, const void *b)
{
	int32_t d = (int32_t)(*(const uint32_t *)a - *(const uint32_t *)b);

	return (d > 0) - (d < 0);
}

/* Tells the peer, on l, every number it will never get, lowest first (its
 * window moves up as each hole fills).  SEQ_SKIP itself carries no number. */
static void skip_flush(struct tr_lane *l)
{
	struct tr_peer *p = &l->ctx->peers[l->peer];
	unsigned sent = 0;

	qsort(p->skip, p->nskip, sizeof(*p->skip), serial_cmp);
	while (sent < p->nskip) {
		struct tr_msg m = { .type = TR_MSG_SEQ_SKIP, .prio = TR_FC_HIGH };
		char buf[TR_WIRE_CTRL_LEN];
		int len;

		m.u.seq_skip.count = p->nskip - sent < TR_WIRE_SKIP_MAX ? p->nskip - sent
								       : TR_WIRE_SKIP_MAX;
		memcpy(m.u.seq_skip.seq, p->skip + sent, m.u.seq_skip.count * sizeof(uint32_t));
		len = tr_msg_encode(&m, buf, sizeof(buf));
		if (len < 0 || tr_lane_send(l, buf, len, TR_FC_HIGH, NULL))
			break;
		sent += m.u.seq_skip.count;
	}
	tr_info("rank %d: told it of %u message(s) lost while no plane reached it", l->peer,
		sent);
	memmove(p->skip, p->skip + sent, (p->nskip - sent) * sizeof(*p->skip));
	p->nskip -= sent;
}

static void skip_receive(struct tr_lane *l, const struct tr_msg *m)
{
	struct tr_peer *p = &l->ctx->peers[l->peer];

	for (unsigned i = 0; i < m->u.seq_skip.count; i++)
		if (tr_seq_rx_accept(&p->rx_seq, m->u.seq_skip.seq[i]) == TR_SEQ_TOO_FAR)
			tr_warn("peer %d: lost message %u is beyond the window (expected %u)",
				l->peer, m->u.seq_skip.seq[i], p->rx_seq.next);
	tr_debug("peer %d: %u lost message(s) skipped", l->peer, m->u.seq_skip.count);
}

void tr_peer_free(struct tr_peer *p)
{
	free(p->skip);
	p->skip = NULL;
	p->nskip = p->skip_cap = 0;
}

/* ---- lane events ----------------------------------------------------------------*/
int tr_peer_on_msg(struct tr_lane *l, const struct tr_msg *m, struct tr_buf *b)
{
	struct triad_ctx *ctx = l->ctx;
	struct tr_peer *p = &ctx->peers[l->peer];
	int kept = 0;

	if (m->type == TR_MSG_SEQ_SKIP) { /* carries no number of its own */
		skip_receive(l, m);
		return 0;
	}
	switch (tr_seq_rx_accept(&p->rx_seq, m->seq)) {
	case TR_SEQ_NEW:
		break;
	case TR_SEQ_DUPLICATE:
		tr_debug("peer %d: duplicate %s seq %u dropped", l->peer, tr_msg_type_str(m->type),
			 m->seq);
		return 0;
	case TR_SEQ_TOO_FAR:
		tr_lane_count_drop(l, 0);
		tr_warn("peer %d: %s seq %u beyond the window (expected %u): dropped", l->peer,
			tr_msg_type_str(m->type), m->seq, p->rx_seq.next);
		return 0;
	}
	switch (m->type) {
	case TR_MSG_WIN_QUERY:
		tr_win_on_query(ctx, l->peer, m);
		break;
	case TR_MSG_WIN_INFO:
		tr_win_on_info(ctx, l->peer, m);
		break;
	case TR_MSG_WIN_GONE:
		tr_win_on_gone(ctx, l->peer, m);
		break;
	case TR_MSG_BARRIER:
	case TR_MSG_BARRIER_REL:
	case TR_MSG_BARRIER_FAIL:
		tr_barrier_on_msg(ctx, l->peer, m);
		break;
	case TR_MSG_AM:
		kept = tr_am_deliver(ctx, l, m, b);
		break;
	case TR_MSG_COPY:
		tr_copy_on_msg(ctx, l->peer, m);
		break;
	case TR_MSG_BCAST_DONE:
		tr_bcast_on_msg(ctx, l->peer, m);
		break;
	case TR_MSG_BYE:
		/* A clean exit: its disconnects follow; rebuilding them would
		 * retry until we close. */
		tr_info("peer %d: closing", l->peer);
		p->gone = 1;
		break;
	case TR_MSG_PLANE_DRAIN:
		if ((int)m->u.plane_drain.plane < ctx->nplanes) {
			unsigned bit = 1u << m->u.plane_drain.plane;

			tr_info("peer %d asks %s plane %u", l->peer,
				m->u.plane_drain.on ? "to leave" : "to use again", m->u.plane_drain.plane);
			p->peer_drained = m->u.plane_drain.on ? p->peer_drained | bit
							      : p->peer_drained & ~bit;
			tr_peer_plane_event(ctx, p, (int)m->u.plane_drain.plane);
		}
		break;
	case TR_MSG_PLANE_DOWN:
		if ((int)m->u.plane_down.plane < ctx->nplanes) {
			struct tr_lane *broken = &p->lane[m->u.plane_down.plane];

			if (broken->state == TR_LANE_UP) {
				tr_warn("peer %d plane %u: the peer reports the connection broken",
					l->peer, m->u.plane_down.plane);
				tr_lane_fail(broken, TRIAD_S_UNREACHABLE);
			}
		}
		break;
	default:
		break;
	}
	tr_ctx_signal(ctx);
	return kept;
}

void tr_peer_msg_lost(struct tr_lane *l, const void *data, int len, unsigned prio,
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
	 * it if the first copy did arrive. */
	if (alt == l || tr_lane_send(alt, data, len, prio, req)) {
		/* Nobody waits for our BYE, nor for anything to a peer that said
		 * its own: that is a peer closing first, not a fault. */
		if (ctx->peers[l->peer].gone || tr_wire_type(data) == TR_MSG_BYE)
			tr_info("a message to rank %d is lost: it is closing", l->peer);
		else
			tr_warn("a message to rank %d is lost: no live plane left", l->peer);
		skip_lost(&ctx->peers[l->peer], data, len);
		if (req)
			tr_req_complete(req, l->down_status);
		return;
	}
	tr_debug("message to rank %d moved from plane %d to plane %d", l->peer, l->plane,
		 alt->plane);
}

void tr_peer_lane_changed(struct tr_lane *l)
{
	struct triad_ctx *ctx = l->ctx;

	if (l->state == TR_LANE_UP || l->state == TR_LANE_DRAINING || l->state == TR_LANE_FAILED)
		tr_peer_plane_event(ctx, &ctx->peers[l->peer], l->plane);
	if (l->state == TR_LANE_UP && ctx->peers[l->peer].nskip && !ctx->closing)
		skip_flush(l);
	if (l->state == TR_LANE_DRAINING || l->state == TR_LANE_FAILED) {
		/* Operations not yet posted whole on it are done again elsewhere
		 * or fail (rma.c); posted ones come back flushed. */
		while (!tr_list_empty(&l->rmaq))
			tr_rma_lane_broken(tr_list_first(&l->rmaq, struct triad_req, link),
					   l->down_status);
		tr_win_lane_broken(ctx, l);
		if (ctx->initialized && !ctx->closing && !tr_peer_reachable(ctx, l->peer)) {
			tr_copy_peer_lost(ctx, l->peer);
			tr_bcast_peer_lost(ctx, l->peer);
		}
		if (l->state == TR_LANE_DRAINING && !ctx->closing && !l->peer_closed &&
		    !ctx->peers[l->peer].gone) {
			/* The peer may not have noticed (a link fault loses its DREQ):
			 * tell it on another plane, so it drops its side and the pair
			 * can rebuild the connection. */
			struct tr_msg m = { .type = TR_MSG_PLANE_DOWN };
			struct tr_lane *alt = tr_peer_lane(ctx, l->peer, 0);

			m.u.plane_down.plane = (uint32_t)l->plane;
			if (alt != l && alt->state == TR_LANE_UP)
				tr_peer_send_on(alt, &m, TR_FC_HIGH, NULL);
		}
	}
	tr_ctx_signal(ctx);
}
