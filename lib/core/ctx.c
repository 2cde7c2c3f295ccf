/* The context: the fabric's ops table (what the fabric reports, to whom in
 * core), the connection data this rank sends, the accessors and counters.
 * triad_init and triad_fini are in init.c.  See ctx.h for the layers and
 * the locking. */
#include "core/chan.h"
#include "core/ctx.h"

#include <errno.h>
#include <stdio.h>

#include "base/log.h"

/* What the fabric reports, and to whom in core.  A local port that goes
 * down switches every peer off the plane at once. */
static void on_port(void *arg, int plane, int up)
{
	struct triad_ctx *ctx = arg;

	if (!up && ctx->peers && ctx->initialized && !ctx->closing) {
		tr_info("plane %d: port down: its connections move to the other planes", plane);
		for (int r = 0; r < ctx->size; r++)
			if (r != ctx->rank)
				tr_lane_port_down(&ctx->peers[r].lane[plane]);
	}
	tr_ctx_signal(ctx);
}

void tr_conn_priv_ours(const struct triad_ctx *ctx, int plane, int peer,
		       uint8_t buf[TR_WIRE_PRIV_LEN])
{
	const struct tr_conn_priv d = {
		.plane = (uint32_t)plane,
		.rank = (uint32_t)ctx->rank,
		.size = (uint32_t)ctx->size,
		.slots = (uint32_t)ctx->cfg.slots,
		.slot_size = (uint32_t)ctx->cfg.slot_size,
		.key = ctx->job_key,
		.incarnation = ctx->incarnation,
		.peer_incarnation = peer >= 0 ? ctx->peers[peer].incarnation : 0,
		.flags = tr_ctx_takes_bare(ctx) ? TR_CONN_F_BARE_AM : 0,
	};

	tr_conn_priv_encode(buf, &d);
}

/* A connection request is first checked to come from this job and this
 * version of triad; then the lane it is for decides. */
static void *on_conn_request(void *arg, int plane, const uint8_t *priv, size_t len,
			     uint8_t *reply, size_t *reply_len)
{
	struct triad_ctx *ctx = arg;
	struct tr_conn_priv d;
	int ret = tr_conn_priv_decode(priv, len, &d);

	if (ret == -EPROTONOSUPPORT) {
		tr_warn("plane %d: connection request from a triad speaking connection version %u, "
			"this one %d: rejected (every rank must run the same triad)",
			plane, tr_conn_priv_version(priv, len), TR_WIRE_PRIV_VERSION);
		return NULL;
	}
	if (!ret && d.key != ctx->job_key) {
		ctx->key_rejects[plane]++;
		tr_warn("plane %d: connection request from rank %u of another job (key %016llx, "
			"ours %016llx): rejected", plane, d.rank, (unsigned long long)d.key,
			(unsigned long long)ctx->job_key);
		/* Our key goes with the rejection: the other side stops trying. */
		tr_conn_priv_ours(ctx, plane, -1, reply);
		*reply_len = TR_WIRE_PRIV_LEN;
		return NULL;
	}
	return tr_lane_on_conn_request(arg, plane, priv, len, reply, reply_len);
}

/* Active side: a rejection that carries another job's key means the
 * address belongs to another job; triad_init gives up with -EACCES
 * instead of retrying until its timeout. */
static void on_cm(void *arg, void *owner, struct tr_qp *qp, enum tr_cm_event ev,
		  const uint8_t *priv, size_t len, const char *why)
{
	struct triad_ctx *ctx = arg;
	const struct tr_lane *l = owner;
	struct tr_conn_priv d;

	if (ev == TR_CM_FAILED && len && !tr_conn_priv_decode(priv, len, &d) &&
	    d.key != ctx->job_key) {
		if (!ctx->key_refused++)
			tr_error("rank %d plane %d: its address belongs to another job (key "
				 "%016llx, ours %016llx): refused", l->peer, l->plane,
				 (unsigned long long)d.key, (unsigned long long)ctx->job_key);
		tr_ctx_signal(ctx);
	}
	tr_lane_on_cm(arg, owner, qp, ev, priv, len, why);
}

const struct tr_fab_ops tr_ctx_fab_ops = {
	.on_recv = tr_lane_on_recv,
	.on_send = tr_lane_on_send,
	.on_conn_request = on_conn_request,
	.on_cm = on_cm,
	.on_port = on_port,
};

int triad_rank(const triad_ctx_t *ctx)
{
	return ctx ? ctx->rank : -EINVAL;
}

int triad_size(const triad_ctx_t *ctx)
{
	return ctx ? ctx->size : -EINVAL;
}

int triad_nplanes(const triad_ctx_t *ctx)
{
	return ctx ? ctx->nplanes : -EINVAL;
}

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

void triad_config_print(FILE *out)
{
	struct tr_config cfg;
	char err[300];

	if (tr_config_load(&cfg, tr_config_getenv, NULL, err, sizeof(err))) {
		fprintf(out, "configuration error: %s\n", err);
		tr_config_load(&cfg, NULL, NULL, err, sizeof(err));
	}
	tr_config_print_table(out, &cfg);
}
