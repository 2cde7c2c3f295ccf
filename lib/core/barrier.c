/* The barrier: every rank tells rank 0 it arrived, rank 0 releases
 * everyone.  Epochs number the barriers; each rank keeps the one it is in.
 *
 * Failure: a barrier cannot complete once a rank it needs is unreachable
 * on every plane.  Rank 0 then fails its own barrier and tells every rank
 * it can still reach (BARRIER_FAIL), so every survivor fails at once, not
 * at its own timeout; a rank that loses rank 0 fails by itself.
 *
 * Retry: a barrier that timed out (-ETIMEDOUT) is still entered: the
 * rank's arrival counts.  Calling triad_barrier again waits for that same
 * barrier, without arriving twice, so a retry completes together with the
 * ranks that were late.  Any other outcome ends the barrier: the next call
 * enters the next one. */
#include <errno.h>
#include <stdlib.h>

#include "base/log.h"
#include "core/barrier.h"
#include "core/peer.h"
#include "core/progress.h"
#include "core/req.h"

/* The barrier's state (ctx->barrier), under the context lock. */
struct tr_barrier {
	uint32_t epoch;	     /* barriers this rank entered */
	uint32_t arrived[2]; /* rank 0: arrivals per epoch parity */
	uint32_t released;   /* epochs released by rank 0 */
	uint32_t failed;     /* the last epoch rank 0 reported failed */
	int retry;	     /* the barrier in epoch timed out: a retry waits for it */
	uint32_t peer_in[];  /* rank 0: the latest barrier each rank arrived in */
};

static int on_msg(struct tr_lane *l, const struct tr_msg *m, struct tr_buf *b)
{
	struct tr_barrier *bar = l->ctx->barrier;
	int peer = l->peer;
	uint32_t e = m->u.barrier.epoch;

	(void)b;

	if (m->type == TR_MSG_BARRIER && l->ctx->rank == 0) {
		/* An arrival may be for the epoch after the one rank 0 is in. */
		if (e != bar->epoch && e != bar->epoch + 1) {
			tr_warn("rank %d: barrier epoch %u, expected %u", peer, e, bar->epoch);
			return 0;
		}
		bar->arrived[e & 1]++;
		bar->peer_in[peer] = e;
	} else if (m->type == TR_MSG_BARRIER_REL && peer == 0) {
		if ((int32_t)(e - bar->released) > 0)
			bar->released = e;
	} else if (m->type == TR_MSG_BARRIER_FAIL && peer == 0) {
		if ((int32_t)(e - bar->failed) > 0)
			bar->failed = e;
	}
	return 0;
}

int tr_barrier_setup(struct triad_ctx *ctx)
{
	ctx->barrier = calloc(1, sizeof(*ctx->barrier) +
				     (ctx->rank == 0 ? (size_t)ctx->size * sizeof(uint32_t) : 0));
	if (!ctx->barrier)
		return -ENOMEM;
	tr_peer_handle(ctx, TR_MSG_BARRIER, on_msg);
	tr_peer_handle(ctx, TR_MSG_BARRIER_REL, on_msg);
	tr_peer_handle(ctx, TR_MSG_BARRIER_FAIL, on_msg);
	return 0;
}

void tr_barrier_teardown(struct triad_ctx *ctx)
{
	free(ctx->barrier);
	ctx->barrier = NULL;
}

/* Rank 0: peer has arrived in epoch (or a later one). */
static int arrived(const struct triad_ctx *ctx, int peer, uint32_t epoch)
{
	return (int32_t)(ctx->barrier->peer_in[peer] - epoch) >= 0;
}

struct bar_wait {
	struct triad_ctx *ctx;
	uint32_t epoch;
	int error;
};

/* Rank 0 could not complete epoch: tell everyone it still reaches. */
static void tell_failed(struct triad_ctx *ctx, uint32_t epoch)
{
	for (int peer = 1; peer < ctx->size; peer++) {
		struct tr_msg m = { .type = TR_MSG_BARRIER_FAIL, .u.barrier.epoch = epoch };

		if (tr_peer_alive(ctx, peer))
			tr_peer_send(ctx, peer, &m, TR_FC_HIGH, NULL);
	}
}

static int barrier_done(void *arg)
{
	struct bar_wait *b = arg;
	struct triad_ctx *ctx = b->ctx;
	struct tr_barrier *bar = ctx->barrier;
	int peer;

	if (ctx->rank == 0) {
		if (bar->arrived[b->epoch & 1] < (uint32_t)ctx->size - 1)
			goto check_peers;
		bar->arrived[b->epoch & 1] = 0;
		for (peer = 1; peer < ctx->size; peer++) {
			struct tr_msg m = { .type = TR_MSG_BARRIER_REL, .u.barrier.epoch = b->epoch };

			if (tr_peer_send(ctx, peer, &m, TR_FC_HIGH, NULL))
				b->error = -EIO;
		}
		return 1;
	}
	if ((int32_t)(bar->released - b->epoch) >= 0)
		return 1;
	if (bar->failed == b->epoch) {
		tr_info("barrier %u: rank 0 reports a rank gone", b->epoch);
		b->error = -EIO;
		return 1;
	}
check_peers:
	/* Give up when a rank we need can no longer be reached on any plane. */
	for (peer = ctx->rank == 0 ? 1 : 0; peer < (ctx->rank == 0 ? ctx->size : 1); peer++) {
		if (!tr_peer_alive(ctx, peer)) { /* lazy: or being connected */
			tr_warn("barrier %u: rank %d is unreachable on every plane%s", b->epoch,
				peer,
				ctx->rank != 0			   ? ""
				: arrived(ctx, peer, b->epoch) ? " (it had arrived)"
							       : " (it had not arrived)");
			if (ctx->rank == 0)
				tell_failed(ctx, b->epoch);
			b->error = -EIO;
			return 1;
		}
	}
	return 0;
}

/* A barrier that timed out says whom it waited for and how the lanes to
 * them stand: a message that never came shows there (queued, a slot or a
 * sequence number waited for), where a bare -ETIMEDOUT says nothing. */
#define EXPLAIN_MAX 8

static void explain_timeout(struct triad_ctx *ctx, uint32_t epoch, int timeout_ms)
{
	char line[1024];
	int late = 0;

	if (ctx->rank != 0) {
		tr_peer_describe(ctx, 0, line, sizeof(line));
		tr_warn("barrier %u: no release from rank 0 after %d ms; to rank 0: %s", epoch,
			timeout_ms, line);
		return;
	}
	for (int r = 1; r < ctx->size; r++) {
		if (arrived(ctx, r, epoch))
			continue;
		if (late++ < EXPLAIN_MAX) {
			tr_peer_describe(ctx, r, line, sizeof(line));
			tr_warn("barrier %u: rank %d has not arrived after %d ms; to rank %d: %s",
				epoch, r, timeout_ms, r, line);
		}
	}
	if (late > EXPLAIN_MAX)
		tr_warn("barrier %u: %d ranks in all have not arrived", epoch, late);
}

int triad_barrier(triad_ctx_t *ctx, int timeout_ms)
{
	struct bar_wait b = { .ctx = ctx };
	struct tr_barrier *bar;
	int ret;

	if (!ctx)
		return -EINVAL;
	if (ctx->size == 1)
		return 0;
	bar = ctx->barrier;
	tr_ctx_lock(ctx);
	if (bar->retry) {
		b.epoch = bar->epoch; /* the barrier that timed out: arrived already */
	} else {
		b.epoch = ++bar->epoch;
		if (ctx->rank != 0) {
			struct tr_msg m = { .type = TR_MSG_BARRIER, .u.barrier.epoch = b.epoch };

			if (tr_peer_send(ctx, 0, &m, TR_FC_HIGH, NULL)) {
				pthread_mutex_unlock(&ctx->lock);
				tr_info("barrier %u: rank 0 is unreachable", b.epoch);
				return -EIO;
			}
		}
	}
	pthread_mutex_unlock(&ctx->lock);
	ret = tr_wait_until(ctx, barrier_done, &b, timeout_ms);
	tr_ctx_lock(ctx);
	bar->retry = ret == -ETIMEDOUT;
	if (ret == -ETIMEDOUT)
		explain_timeout(ctx, b.epoch, timeout_ms);
	pthread_mutex_unlock(&ctx->lock);
	return ret ? ret : b.error;
}
