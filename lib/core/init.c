/* Starting and closing a context: triad_init and triad_fini.  The one place
 * above every feature: it opens the world, the fabric and the peers, sets
 * up the features in order (each registers what the lower files call: see
 * ctx.h), starts the progress thread and connects; at close, the same
 * backwards.  See ctx.h for the layers and the locking. */
#include <arpa/inet.h>
#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <unistd.h>

#include "base/log.h"
#include "core/am.h"
#include "core/barrier.h"
#include "core/bcast.h"
#include "core/chan.h"
#include "core/copy.h"
#include "core/ctl.h"
#include "core/init.h"
#include "core/onesided.h"
#include "core/peer.h"
#include "core/pmix.h"
#include "core/progress.h"
#include "core/req.h"
#include "core/rma.h"
#include "core/win.h"
#include "proto/addr.h"

static int lanes_settled(void *arg)
{
	struct triad_ctx *ctx = arg;

	if (ctx->key_refused && !ctx->initialized)
		return 1; /* another job's rank answered: no point waiting */
	for (int r = 0; r < ctx->size; r++)
		for (int p = 0; r != ctx->rank && p < ctx->nplanes; p++) {
			enum tr_lane_state s = ctx->peers[r].lane[p].state;

			if (s != TR_LANE_UP && s != TR_LANE_FAILED && s != TR_LANE_DRAINING)
				return 0;
		}
	return 1;
}

/* ---- the world: from a world file, or from a PMIx launcher ------------------------*/
static void list_devices(char *buf, size_t len, const struct tr_fab_dev *devs, int n)
{
	buf[0] = '\0';
	for (int i = 0; i < n; i++)
		snprintf(buf + strlen(buf), len - strlen(buf), "%s%s:%d", i ? "," : "", devs[i].name,
			 devs[i].port);
	if (!n)
		snprintf(buf, len, "none");
}

/* The local devices this rank's planes open, in plane order: those
 * TRIAD_DEVICES names, or every port with an IPv4 address.  -ENODEV (with
 * the devices there are) when one is not here. */
static int local_devices(const struct tr_config *cfg, struct tr_fab_dev *out, int *n_p)
{
	struct tr_fab_dev *all = calloc(TR_FAB_MAX_DEVS, sizeof(*all));
	struct tr_devspec want[TRIAD_MAX_PLANES];
	char err[300], names[512];
	int nall, n, ret = 0;

	if (!all)
		return -ENOMEM;
	n = tr_devices_parse(cfg->devices, want, TRIAD_MAX_PLANES, err, sizeof(err));
	nall = tr_fab_devices(all, TR_FAB_MAX_DEVS);
	if (n < 0 || nall < 0) {
		if (n < 0)
			tr_error("%s", err);
		ret = n < 0 ? n : nall;
		goto out;
	}
	list_devices(names, sizeof(names), all, nall);
	if (n == 0) { /* every device of the node */
		if (nall == 0 || nall > TRIAD_MAX_PLANES) {
			tr_error("%d RDMA ports with an IPv4 address here (%s): set TRIAD_DEVICES "
				 "to 1..%d of them", nall, names, TRIAD_MAX_PLANES);
			ret = -ENODEV;
			goto out;
		}
		memcpy(out, all, sizeof(*all) * (size_t)nall);
		*n_p = nall;
		goto out;
	}
	for (int i = 0; i < n; i++) {
		int k;

		for (k = 0; k < nall; k++)
			if (!strcmp(all[k].name, want[i].name) &&
			    (!want[i].port || want[i].port == all[k].port))
				break;
		if (k == nall) {
			tr_error("TRIAD_DEVICES: no RDMA device %s%s%.0d with an IPv4 address here "
				 "(there are: %s)", want[i].name, want[i].port ? ":" : "",
				 want[i].port, names);
			ret = -ENODEV;
			goto out;
		}
		out[i] = all[k];
	}
	*n_p = n;
out:
	free(all);
	return ret;
}

static int world_from_pmix(triad_ctx_t *ctx)
{
	struct tr_fab_dev devs[TRIAD_MAX_PLANES];
	struct tr_addr_blob mine = { 0 };
	int local_rank, ret = tr_pmix_init(ctx, &local_rank);

	if (ret)
		return ret;
	/* Ranks that share a node (and so maybe its devices) listen apart. */
	if (TR_WORLD_DEFAULT_PORT + local_rank > 65535) {
		tr_error("PMIx: local rank %d: no port left above %d", local_rank,
			 TR_WORLD_DEFAULT_PORT);
		return -EINVAL;
	}
	mine.port = (uint16_t)(TR_WORLD_DEFAULT_PORT + local_rank);
	tr_log_rank = ctx->rank;
	ret = local_devices(&ctx->cfg, devs, &mine.nplanes);
	if (ret)
		return ret;
	for (int p = 0; p < mine.nplanes; p++)
		mine.addr[p] = devs[p].addr;
	ret = tr_pmix_exchange(ctx, &mine);
	if (ret)
		return ret;
	ctx->nplanes = ctx->world.nplanes;
	return 0;
}

/* With a world file, TRIAD_DEVICES must name this rank's planes as the
 * file has them: a rank that would bind another device's address is told
 * so, instead of routing through the wrong port (docs/fabric.md). */
static int check_devices(triad_ctx_t *ctx)
{
	struct tr_fab_dev devs[TRIAD_MAX_PLANES];
	char want[INET_ADDRSTRLEN], have[INET_ADDRSTRLEN];
	int n, ret = local_devices(&ctx->cfg, devs, &n);

	if (ret)
		return ret;
	if (n != ctx->nplanes) {
		tr_error("TRIAD_DEVICES names %d devices, the world file %d planes", n,
			 ctx->nplanes);
		return -EINVAL;
	}
	for (int p = 0; p < n; p++) {
		struct in_addr a = ctx->world.addr[ctx->rank][p];

		if (a.s_addr == devs[p].addr.s_addr)
			continue;
		inet_ntop(AF_INET, &a, want, sizeof(want));
		inet_ntop(AF_INET, &devs[p].addr, have, sizeof(have));
		tr_error("TRIAD_DEVICES: plane %d is %s:%d (%s), but the world file gives rank %d "
			 "%s there", p, devs[p].name, devs[p].port, have, ctx->rank, want);
		return -EINVAL;
	}
	return 0;
}

static int world_from_file(triad_ctx_t *ctx, const struct triad_ctx_attr *attr)
{
	const char *path = ctx->cfg.world;
	char err[300];
	int ret;

	if (attr && (attr->field_mask & TRIAD_CTX_ATTR_WORLD_FILE))
		path = attr->world_file;
	if (attr && (attr->field_mask & TRIAD_CTX_ATTR_RANK))
		ctx->rank = attr->rank;
	else
		ctx->rank = ctx->cfg.rank;
	if (!path || !*path) {
		tr_error("no world file: set TRIAD_WORLD or pass attr.world_file (or start "
			 "under a PMIx launcher)");
		return -EINVAL;
	}
	ret = tr_world_load(path, &ctx->world, err, sizeof(err));
	if (ret) {
		tr_error("%s", err);
		return ret;
	}
	if (ctx->rank < 0 || ctx->rank >= ctx->world.size) {
		tr_error("rank %d is not in %s (ranks 0..%d); set TRIAD_RANK", ctx->rank, path,
			 ctx->world.size - 1);
		return -EINVAL;
	}
	ctx->size = ctx->world.size;
	ctx->nplanes = ctx->world.nplanes;
	ctx->job_key = ctx->world.key;
	tr_log_rank = ctx->rank;
	return ctx->cfg.devices[0] ? check_devices(ctx) : 0;
}

/* A PMIx launcher's world comes first, unless the caller names its own;
 * when PMIx cannot start, the world file (said at debug level). */
static int open_world(triad_ctx_t *ctx, const struct triad_ctx_attr *attr)
{
	int ret;

	if (tr_pmix_launched() &&
	    !(attr && (attr->field_mask & (TRIAD_CTX_ATTR_WORLD_FILE | TRIAD_CTX_ATTR_RANK)))) {
		ret = world_from_pmix(ctx);
		if (ret != -ENOTSUP)
			return ret;
	}
	return world_from_file(ctx, attr);
}

/* What the fabric reports, and to whom in core: the lanes. */
static const struct tr_fab_ops fab_ops = {
	.on_recv = tr_lane_on_recv,
	.on_send = tr_lane_on_send,
	.on_conn_request = tr_lane_on_conn_request,
	.on_cm = tr_lane_on_cm,
	.on_port = tr_lane_on_port,
};

static int open_fabric(triad_ctx_t *ctx)
{
	struct tr_fab_cfg fcfg = {
		.sq_depth = ctx->cfg.sq_depth,
		.rq_depth = ctx->cfg.slots + TR_LANE_EXTRA_BUFS,
		/* Every lane's send queue and receive buffers on one plane. */
		.cqe = (ctx->cfg.sq_depth + ctx->cfg.slots + TR_LANE_EXTRA_BUFS) *
			       (ctx->size > 1 ? ctx->size - 1 : 1) + 64,
		.ack_timeout = ctx->cfg.ack_timeout,
		.retry_count = ctx->cfg.retry_count,
	};
	int ret = tr_fab_open(&fab_ops, ctx, &fcfg, &ctx->fab);

	for (int p = 0; !ret && p < ctx->nplanes; p++)
		ret = tr_fab_plane_open(ctx->fab, p, ctx->world.addr[ctx->rank][p],
					tr_world_port(&ctx->world, ctx->rank));
	if (!ret)
		ret = tr_rma_setup(ctx);
	return ret;
}

static int open_peers(triad_ctx_t *ctx)
{
	struct tr_choice_cfg want = {
		.threshold = (uint32_t)ctx->cfg.adaptive_t,
		.alpha_pct = (uint32_t)ctx->cfg.adaptive_alpha,
		.cont_threshold = TR_CHOICE_DEF_CONT_THRESHOLD,
		.rules = tr_ctx_choice_rules(ctx->cfg.adaptive),
	};

	tr_list_init(&ctx->orphans);
	tr_chan_setup(ctx);
	if (tr_choice_cfg_init(&ctx->choice, &want))
		return -EINVAL; /* the config table's ranges are the engine's */
	ctx->peers = calloc((size_t)ctx->size, sizeof(*ctx->peers));
	if (!ctx->peers)
		return -ENOMEM;
	for (int r = 0; r < ctx->size; r++) {
		ctx->peers[r].rank = r;
		tr_psw_init(&ctx->peers[r].psw, (unsigned)ctx->nplanes);
		for (int q = 0; q < TR_FC_NPRIO; q++) {
			tr_list_init(&ctx->peers[r].parked[q]);
			tr_list_init(&ctx->peers[r].full[q]);
			tr_stream_tx_init(&ctx->peers[r].pl.tx[q], 0, 0);
			tr_stream_rx_init(&ctx->peers[r].pl.rx[q], 0, 0);
		}
		tr_list_init(&ctx->peers[r].await_msgs);
		tr_list_init(&ctx->peers[r].await_rma);
		tr_list_init(&ctx->peers[r].fenceq);
		tr_list_init(&ctx->peers[r].held);
		for (int p = 0; p < ctx->nplanes; p++) {
			tr_lane_init(ctx, &ctx->peers[r].lane[p], r, p);
			ctx->peers[r].lane[p].pl = &ctx->peers[r].pl;
		}
	}
	tr_peer_setup(ctx);
	return 0;
}

/* Connects every lane (the lower rank connects, the higher accepts) and
 * waits until each is up or has failed; -ETIMEDOUT when a rank is
 * unreachable on every plane.  TRIAD_CONNECT=lazy: nothing yet (the planes
 * listen already), see tr_peer_await(). */
static int connect_start(triad_ctx_t *ctx)
{
	int ret = 0, r, p;

	tr_ctx_lock(ctx);
	if (ctx->cfg.connect == TR_CONNECT_LAZY) {
		/* Listening is enough: the first use of a peer connects it. */
		ctx->initialized = 1;
		pthread_mutex_unlock(&ctx->lock);
		return 0;
	}
	for (r = ctx->rank + 1; r < ctx->size && !ret; r++)
		for (p = 0; p < ctx->nplanes && !ret; p++)
			ret = tr_lane_connect(&ctx->peers[r].lane[p]); /* retries by itself */
	pthread_mutex_unlock(&ctx->lock);
	return ret;
}

/* Once every lane is up or has failed: gives up on those that failed (they
 * are retried from now on); -ETIMEDOUT when a rank is unreachable on every
 * plane. */
static int connect_settle(triad_ctx_t *ctx)
{
	int ret = 0, r, p;

	tr_ctx_lock(ctx);
	if (ctx->initialized) { /* lazy */
		pthread_mutex_unlock(&ctx->lock);
		return 0;
	}
	if (ctx->key_refused) {
		pthread_mutex_unlock(&ctx->lock);
		return -EACCES;
	}
	for (r = 0; r < ctx->size; r++) {
		if (r == ctx->rank)
			continue;
		for (p = 0; p < ctx->nplanes; p++) {
			struct tr_lane *l = &ctx->peers[r].lane[p];

			if (l->state != TR_LANE_UP) {
				tr_warn("rank %d plane %d: not connected (%s)", r, p,
					tr_lane_state_str(l->state));
				tr_lane_give_up(l);
			}
		}
		if (!tr_peer_reachable(ctx, r)) {
			tr_error("rank %d is unreachable on every plane", r);
			ret = -ETIMEDOUT;
		}
	}
	if (!ret) {
		ctx->initialized = 1;
		/* Lanes that failed at start-up are retried from now on. */
		for (r = ctx->rank + 1; r < ctx->size; r++)
			for (p = 0; p < ctx->nplanes; p++)
				if (ctx->peers[r].lane[p].state == TR_LANE_FAILED)
					ctx->peers[r].lane[p].want_reconnect = 1;
		tr_progress_kick(ctx);
	}
	pthread_mutex_unlock(&ctx->lock);
	return ret;
}

static int connect_all(triad_ctx_t *ctx)
{
	int ret = connect_start(ctx);

	if (ret || ctx->initialized) /* lazy: nothing to wait for */
		return ret;
	tr_wait_until(ctx, lanes_settled, ctx, ctx->cfg.connect_timeout_ms + 5000);
	return connect_settle(ctx);
}

/* This process's random name (proto/conn.h).  Without the kernel's
 * randomness, the clock, the pid and the context's address: two processes
 * of one rank still differ. */
static uint64_t new_incarnation(void)
{
	uint64_t x = 0;

	if (getrandom(&x, sizeof(x), 0) != (ssize_t)sizeof(x) || !x) {
		x = tr_now_ns() ^ (uint64_t)getpid() << 40 ^ (uint64_t)(uintptr_t)&x;
		x ^= x >> 31;
		x *= 0x9e3779b97f4a7c15ull;
	}
	return x ? x : 1;
}

/* triad_init; driven: tr_init_driven's (no progress thread, the connections
 * started and not waited for). */
static int init(const struct triad_ctx_attr *attr, triad_ctx_t **ctx_p, int driven)
{
	pthread_mutexattr_t mattr;
	triad_ctx_t *ctx;
	char err[300];
	int ret;

	if (!ctx_p || (attr && (attr->field_mask & ~(uint64_t)(TRIAD_CTX_ATTR_RANK |
							      TRIAD_CTX_ATTR_WORLD_FILE))))
		return -EINVAL;
	ctx = calloc(1, sizeof(*ctx));
	if (!ctx)
		return -ENOMEM;
	/* Recursive: an active-message handler runs with the lock held and may
	 * send or release. */
	pthread_mutexattr_init(&mattr);
	pthread_mutexattr_settype(&mattr, PTHREAD_MUTEX_RECURSIVE);
	pthread_mutex_init(&ctx->lock, &mattr);
	pthread_mutexattr_destroy(&mattr);
	tr_list_init(&ctx->waiters);
	tr_reaper_init(&ctx->reaper);
	ret = tr_config_load(&ctx->cfg, tr_config_getenv, NULL, err, sizeof(err));
	if (ret) {
		tr_error("%s", err);
		goto err;
	}
	tr_log_level = ctx->cfg.log_level;
	tr_log_time = ctx->cfg.log_time;
	ctx->incarnation = new_incarnation();
	ret = open_world(ctx, attr);
	if (!ret)
		ret = tr_trace_open(&ctx->trace, ctx->cfg.trace, ctx->rank);
	if (!ret)
		ret = open_fabric(ctx);
	if (!ret)
		ret = tr_progress_setup(ctx);
	if (!ret)
		ret = open_peers(ctx);
	/* The features register their messages and peer hooks (the lost
	 * hooks run in this order: windows, copies, broadcasts). */
	if (!ret)
		ret = tr_win_setup(ctx, tr_rma_start);
	if (!ret)
		ret = tr_am_setup(ctx);
	if (!ret)
		ret = tr_barrier_setup(ctx);
	if (!ret)
		ret = tr_copy_setup(ctx);
	if (!ret)
		ret = tr_bcast_setup(ctx);
	if (!ret)
		ret = tr_ctl_setup(ctx);
	if (!ret && !driven)
		ret = tr_progress_start(ctx);
	if (!ret)
		ret = driven ? connect_start(ctx) : connect_all(ctx);
	if (ret)
		goto err;
	if (!driven)
		tr_info("rank %d of %d up on %d planes", ctx->rank, ctx->size, ctx->nplanes);
	*ctx_p = ctx;
	return 0;
err:
	triad_fini(ctx);
	return ret;
}

int triad_init(const struct triad_ctx_attr *attr, triad_ctx_t **ctx_p)
{
	return init(attr, ctx_p, 0);
}

int tr_init_driven(const struct triad_ctx_attr *attr, triad_ctx_t **ctx_p)
{
	return init(attr, ctx_p, 1);
}

int tr_init_connected(triad_ctx_t *ctx)
{
	int settled;

	tr_ctx_lock(ctx);
	settled = ctx->initialized || lanes_settled(ctx);
	pthread_mutex_unlock(&ctx->lock);
	return settled ? connect_settle(ctx) : -EAGAIN;
}

/* Messages this side sent or queued that are not acknowledged yet. */
static unsigned unsent(const struct triad_ctx *ctx)
{
	unsigned n = 0;

	for (int r = 0; r < ctx->size; r++) {
		for (int p = 0; r != ctx->rank && p < ctx->nplanes; p++)
			n += tr_lane_unsent(&ctx->peers[r].lane[p]);
		n += ctx->peers[r].nawait_msgs; /* waiting for a first connection */
		n += ctx->peers[r].nfull;	/* waiting for their stream */
	}
	return n;
}

static int all_sent(void *arg)
{
	return unsent(arg) == 0;
}

/* Lets what we sent (the last barrier release, say) reach the peers before
 * the disconnect overtakes it: waits while messages keep being
 * acknowledged, up to how long the transport takes to give up on a plane,
 * but no more than FINI_STALL_MS once nothing moves (a receiver that keeps
 * its slots, a dead peer). */
#define FINI_STALL_MS 1000

static void flush_messages(struct triad_ctx *ctx)
{
	uint64_t end = tr_now_ns() + (uint64_t)((ctx->cfg.retry_count + 2) * 4.096e3 *
						(double)(1ull << ctx->cfg.ack_timeout)) +
		       FINI_STALL_MS * 1000000ull;
	unsigned left, before;

	tr_ctx_lock(ctx);
	left = unsent(ctx);
	pthread_mutex_unlock(&ctx->lock);
	while (left && tr_now_ns() < end) {
		before = left;
		tr_wait_until(ctx, all_sent, ctx, FINI_STALL_MS);
		tr_ctx_lock(ctx);
		left = unsent(ctx);
		pthread_mutex_unlock(&ctx->lock);
		if (left >= before)
			break;
	}
	if (left)
		tr_info("closing with %u message(s) unacknowledged: cancelled", left);
}

/* Every lane still up is broken and drained: what is posted comes back
 * flushed, and every request still open completes as cancelled.  The
 * progress thread is gone; this thread polls. */
#define FINI_DRAIN_MS 2000

static void cancel_all(struct triad_ctx *ctx)
{
	uint64_t end = tr_now_ns() + FINI_DRAIN_MS * 1000000ull;
	int r, p, draining;

	tr_peer_await_cancel(ctx);
	for (r = 0; r < ctx->size; r++)
		for (p = 0; r != ctx->rank && p < ctx->nplanes; p++)
			tr_lane_cancel(&ctx->peers[r].lane[p]);
	do {
		tr_progress(ctx);
		draining = 0;
		for (r = 0; r < ctx->size; r++)
			for (p = 0; r != ctx->rank && p < ctx->nplanes; p++)
				draining |= ctx->peers[r].lane[p].state == TR_LANE_DRAINING;
		if (draining) {
			pthread_mutex_unlock(&ctx->lock);
			sched_yield();
			tr_ctx_lock(ctx);
		}
	} while (draining && tr_now_ns() < end);
	if (draining)
		tr_warn("closing: the NIC did not flush every work request in %d ms",
			FINI_DRAIN_MS);
}

/* Tells every peer we are closing, so that it does not try to rebuild the
 * lanes our exit breaks. */
static void say_bye(struct triad_ctx *ctx)
{
	tr_ctx_lock(ctx);
	for (int r = 0; r < ctx->size; r++) {
		struct tr_msg m = { .type = TR_MSG_BYE };

		/* A peer being connected gets it once it is up; one never
		 * talked to is not connected for it. */
		if (r != ctx->rank && (tr_peer_reachable(ctx, r) || ctx->peers[r].awaiting) &&
		    !ctx->peers[r].pl.gone)
			tr_peer_send(ctx, r, &m, TR_FC_HIGH, NULL);
	}
	pthread_mutex_unlock(&ctx->lock);
}

void triad_fini(triad_ctx_t *ctx)
{
	int r, p;

	if (!ctx)
		return;
	if (ctx->thread_started && ctx->peers) {
		say_bye(ctx);
		flush_messages(ctx);
	}
	tr_ctx_lock(ctx);
	ctx->closing = 1;
	pthread_mutex_unlock(&ctx->lock);
	tr_progress_stop(ctx);
	tr_ctl_teardown(ctx);
	tr_ctx_lock(ctx);
	if (ctx->peers)
		cancel_all(ctx);
	tr_bcast_teardown(ctx); /* requests still open complete as cancelled */
	tr_copy_teardown(ctx);
	tr_barrier_teardown(ctx);
	for (r = 0; ctx->peers && r < ctx->size; r++) {
		for (p = 0; p < ctx->nplanes; p++)
			tr_lane_destroy(&ctx->peers[r].lane[p]);
		tr_rwins_free(ctx, r);
		tr_rma_peer_free(ctx, r);
		tr_peer_free(&ctx->peers[r]);
	}
	if (ctx->peers)
		tr_lane_orphans_free(&ctx->orphans);
	tr_lane_qcache_free(ctx);
	tr_am_teardown(ctx);
	tr_win_teardown(ctx);
	tr_rma_teardown(ctx);
	tr_lane_lput_cache_free(ctx);
	pthread_mutex_unlock(&ctx->lock);
	tr_reaper_stop(&ctx->reaper); /* every QP gone before the planes' PDs and CQs */
	tr_fab_close(ctx->fab);
	tr_progress_teardown(ctx);
	free(ctx->peers);
	tr_world_free(&ctx->world);
	tr_pmix_fini(ctx);
	tr_trace_close(ctx->trace);
	pthread_mutex_destroy(&ctx->lock);
	free(ctx);
}

