/* Planes as the application (and later the node's daemon) sees them:
 * planned drain and restore, and what is still in flight on a plane.
 *
 * A drain feeds every peer's plane switch (proto/plane_switch): every new
 * choice leaves the plane for its alternate.  Every message and put/get is
 * one unit here (a message is one send, an operation's chunks all take the
 * lane it was queued on), so every choice is a message boundary.  A copy
 * this rank serves is several sends to one peer (WRITE chunks, then the
 * message that must arrive after them): copy.c keeps them on the lane of
 * its first chunk while that connection lives, drained or not, the message
 * as the lane's ordered send.  The peers are asked to leave the plane too
 * (PLANE_DRAIN), so that the NIC can be taken out once both directions are
 * quiet. */
#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "base/log.h"
#include "core/peer.h"
#include "core/progress.h"

static const char *const plane_state_names[] = {
	[TRIAD_PLANE_NORMAL] = "normal",
	[TRIAD_PLANE_DRAINING] = "draining",
	[TRIAD_PLANE_DRAINED] = "drained",
	[TRIAD_PLANE_DOWN] = "down",
};

const char *triad_plane_state_str(enum triad_plane_state s)
{
	return (unsigned)s < sizeof(plane_state_names) / sizeof(plane_state_names[0])
		       ? plane_state_names[s] : "unknown plane state";
}

/* ---- drain and restore ------------------------------------------------------------*/
static int plane_ok(const struct triad_ctx *ctx, int plane)
{
	return ctx && plane >= 0 && plane < ctx->nplanes;
}

/* Every reachable peer keeps a live lane on another plane not drained. */
static int others_left(const struct triad_ctx *ctx, int plane)
{
	for (int r = 0; r < ctx->size; r++) {
		const struct tr_peer *p = &ctx->peers[r];
		int other = 0, reachable = 0;

		if (r == ctx->rank)
			continue;
		for (int q = 0; q < ctx->nplanes; q++) {
			int up = tr_lane_live(ctx, &p->lane[q]);

			reachable |= up;
			other |= up && q != plane && tr_peer_wants(ctx, p, q);
		}
		if (reachable && !other)
			return 0;
	}
	return 1;
}

/* Tells every reachable peer whether to send to us on plane. */
static void tell_peers(struct triad_ctx *ctx, int plane, int on)
{
	for (int r = 0; r < ctx->size; r++) {
		struct tr_msg m = { .type = TR_MSG_PLANE_DRAIN };

		m.u.plane_drain.plane = (uint32_t)plane;
		m.u.plane_drain.on = (uint32_t)on;
		if (r != ctx->rank && tr_peer_reachable(ctx, r))
			tr_peer_send(ctx, r, &m, TR_FC_HIGH, NULL);
	}
}

static void each_peer_event(struct triad_ctx *ctx, int plane)
{
	for (int r = 0; r < ctx->size; r++)
		if (r != ctx->rank)
			tr_peer_plane_event(ctx, &ctx->peers[r], plane);
}

int triad_plane_drain(triad_ctx_t *ctx, int plane)
{
	int ret = 0;

	if (!plane_ok(ctx, plane))
		return -EINVAL;
	tr_ctx_lock(ctx);
	if (ctx->drained >> plane & 1u)
		goto out;
	if (!others_left(ctx, plane)) {
		tr_info("plane %d: not drained: a peer has no other live plane", plane);
		ret = -EBUSY;
		goto out;
	}
	ctx->drained |= 1u << plane;
	each_peer_event(ctx, plane);
	tell_peers(ctx, plane, 1); /* on the other planes: this one is left */
	tr_info("plane %d: draining", plane);
out:
	pthread_mutex_unlock(&ctx->lock);
	return ret;
}

int triad_plane_restore(triad_ctx_t *ctx, int plane)
{
	if (!plane_ok(ctx, plane))
		return -EINVAL;
	tr_ctx_lock(ctx);
	if (ctx->drained >> plane & 1u) {
		ctx->drained &= ~(1u << plane);
		tell_peers(ctx, plane, 0);
		each_peer_event(ctx, plane);
		tr_info("plane %d: restored", plane);
	}
	pthread_mutex_unlock(&ctx->lock);
	return 0;
}

int triad_plane_fail(triad_ctx_t *ctx, int plane)
{
	unsigned n = 0;

	if (!plane_ok(ctx, plane))
		return -EINVAL;
	tr_ctx_lock(ctx);
	for (int r = 0; r < ctx->size; r++) {
		struct tr_lane *l = &ctx->peers[r].lane[plane];

		if (r != ctx->rank && l->state == TR_LANE_UP) {
			tr_lane_fail(l, TRIAD_S_TRANSPORT);
			n++;
		}
	}
	tr_info("plane %d: %u connection(s) failed on request", plane, n);
	pthread_mutex_unlock(&ctx->lock);
	return 0;
}

int triad_plane_refuse_writes(triad_ctx_t *ctx, int plane)
{
	unsigned n = 0;
	int ret = 0;

	if (!plane_ok(ctx, plane))
		return -EINVAL;
	tr_ctx_lock(ctx);
	for (int r = 0; r < ctx->size && !ret; r++) {
		struct tr_lane *l = &ctx->peers[r].lane[plane];

		if (r == ctx->rank || l->state != TR_LANE_UP)
			continue;
		ret = tr_fab_qp_refuse_writes(l->qp);
		n += !ret;
	}
	tr_info("plane %d: %u connection(s) refuse RDMA WRITEs on request", plane, n);
	pthread_mutex_unlock(&ctx->lock);
	return ret;
}

int triad_plane_info(triad_ctx_t *ctx, int plane, struct triad_plane_info *info_p)
{
	struct triad_plane_info in = { 0 };
	unsigned busy, tried = 0;

	if (!plane_ok(ctx, plane) || !info_p || (info_p->field_mask & ~(uint64_t)TRIAD_PLANE_INFO_ALL))
		return -EINVAL;
	in.field_mask = info_p->field_mask;
	tr_ctx_lock(ctx);
	tr_progress(ctx); /* count what already completed */
	in.port_up = tr_fab_plane_port_up(ctx->fab, plane);
	for (int r = 0; r < ctx->size; r++) {
		const struct tr_lane *l = &ctx->peers[r].lane[plane];

		if (r != ctx->rank && (l->ever_up || l->state == TR_LANE_FAILED))
			tried++;
		if (r == ctx->rank || l->state != TR_LANE_UP)
			continue;
		in.peers_up++;
		in.msgs_inflight += (unsigned)(l->sq_posted - l->rma_posted - l->bsm_inflight);
		in.msgs_queued += l->nqueued;
		in.rma_inflight += (unsigned)l->rma_posted;
		for (const struct tr_list *e = l->rmaq.next; e != &l->rmaq; e = e->next)
			in.rma_inflight++;
	}
	busy = in.msgs_inflight + in.msgs_queued + in.rma_inflight;
	if (ctx->drained >> plane & 1u)
		in.state = busy ? TRIAD_PLANE_DRAINING : TRIAD_PLANE_DRAINED;
	else if (!in.port_up || (ctx->size > 1 && !in.peers_up &&
				 (ctx->cfg.connect != TR_CONNECT_LAZY || tried)))
		/* lazy: a plane nobody was connected on yet is not down */
		in.state = TRIAD_PLANE_DOWN;
	else
		in.state = TRIAD_PLANE_NORMAL;
	in.conn_rejected_key = ctx->key_rejects[plane];
	pthread_mutex_unlock(&ctx->lock);
	/* The groups asked for, and nothing else. */
	if (in.field_mask & TRIAD_PLANE_INFO_STATE) {
		info_p->state = in.state;
		info_p->port_up = in.port_up;
		info_p->peers_up = in.peers_up;
		info_p->msgs_inflight = in.msgs_inflight;
		info_p->msgs_queued = in.msgs_queued;
		info_p->rma_inflight = in.rma_inflight;
	}
	if (in.field_mask & TRIAD_PLANE_INFO_REJECTS)
		info_p->conn_rejected_key = in.conn_rejected_key;
	return 0;
}
