/* Broadcast: the glue between the schedulers (proto/bcast, pure) and the
 * copy machinery.  The root runs one engine per broadcast and executes its
 * actions: COPY and the root's own PUT both become third-party copies with
 * the root as initiator (transport-ack mode: the source's RC write
 * completion already means the data is in the destination's memory), and
 * RANK_DONE a BCAST_DONE message.  Other ranks only wait for that message:
 * their progress engines serve the copies, their application threads make
 * no call.  Broadcasts are matched by (root, sequence number): every rank
 * counts the broadcasts it called per root, so the calls must come in the
 * same order everywhere (as MPI collectives); a BCAST_DONE that arrives
 * before the local call waits in bc_early. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "core/ctx.h"
#include "base/log.h"
#include "proto/bcast.h"

_Static_assert((int)TRIAD_BCAST_PIPELINED == (int)TR_BCAST_PIPELINE &&
		       (int)TRIAD_BCAST_BINOMIAL == (int)TR_BCAST_BINOMIAL,
	       "public and engine algorithms differ");

struct tr_bc {
	struct tr_list link;
	int root;
	uint32_t seq;
	uint32_t win;
	uint64_t off;
	struct triad_req *req;
	/* root only */
	struct tr_bcast eng;
	struct tr_bcast_rank *ranks;
	struct tr_bcast_act *acts;
	unsigned cap;
};

struct tr_bc_early {
	struct tr_list link;
	int root;
	uint32_t seq;
	enum triad_status status;
};

int tr_bcast_setup(struct triad_ctx *ctx)
{
	tr_list_init(&ctx->bcasts);
	tr_list_init(&ctx->bc_early);
	ctx->bc_seq = calloc((size_t)ctx->size, sizeof(*ctx->bc_seq));
	return ctx->bc_seq ? 0 : -ENOMEM;
}

static void bc_free(struct tr_bc *bc)
{
	tr_list_del(&bc->link);
	free(bc->ranks);
	free(bc->acts);
	free(bc);
}

void tr_bcast_teardown(struct triad_ctx *ctx)
{
	if (!ctx->bc_seq)
		return;
	while (!tr_list_empty(&ctx->bcasts)) {
		struct tr_bc *bc = tr_list_first(&ctx->bcasts, struct tr_bc, link);

		if (bc->req)
			tr_req_complete(bc->req, TRIAD_S_CANCELLED);
		bc_free(bc);
	}
	while (!tr_list_empty(&ctx->bc_early)) {
		struct tr_bc_early *e = tr_list_first(&ctx->bc_early, struct tr_bc_early, link);

		tr_list_del(&e->link);
		free(e);
	}
	free(ctx->bc_seq);
	ctx->bc_seq = NULL;
}

/* ---- root: executing the scheduler's actions ---------------------------------*/
static void exec(struct triad_ctx *ctx, struct tr_bc *bc, int n);

static void xfer_done(struct triad_req *req)
{
	struct tr_bc *bc = req->cb_arg;
	struct triad_ctx *ctx = req->ctx;
	int n = tr_bcast_xfer_done(&bc->eng, req->cb_src, req->cb_dst, req->cb_chunk,
				   req->status, bc->acts, bc->cap);

	if (req->status != TRIAD_S_OK)
		tr_warn("broadcast %u: transfer %u -> %u failed: %s (%s)", bc->seq, req->cb_src,
			req->cb_dst, triad_status_str(req->status),
			triad_copy_leg_str((enum triad_copy_leg)req->leg));
	free(req);
	exec(ctx, bc, n);
}

static void act_copy(struct triad_ctx *ctx, struct tr_bc *bc, const struct tr_bcast_act *a)
{
	struct tr_copy_hdr order = {
		.source = a->src,
		.destination = a->dst,
		.src_win = bc->win,
		.dst_win = bc->win,
		.src_off = bc->off + a->off,
		.dst_off = bc->off + a->off,
		.len = a->len,
		.mode = TR_COPY_TRANSPORT_ACK,
	};
	struct triad_req *req = tr_req_new(ctx, TR_REQ_COPY, (int)a->src);
	int ret;

	if (req) {
		req->len = a->len;
		req->on_done = xfer_done;
		req->cb_arg = bc;
		req->cb_src = a->src;
		req->cb_dst = a->dst;
		req->cb_chunk = a->chunk;
	}
	ret = req ? tr_copy_submit(ctx, &order, req) : -ENOMEM;
	if (ret) {
		/* Report it failed at once, as the engine requires every transfer be. */
		int n = tr_bcast_xfer_done(&bc->eng, a->src, a->dst, a->chunk,
					   ret == -EAGAIN ? TRIAD_S_NO_MEMORY : TRIAD_S_TRANSPORT,
					   bc->acts, bc->cap);

		free(req);
		exec(ctx, bc, n);
	}
}

static void tell_rank(struct triad_ctx *ctx, struct tr_bc *bc, int rank, enum triad_status st)
{
	struct tr_msg m = { .type = TR_MSG_BCAST_DONE };

	m.u.bcast_done.seq = bc->seq;
	m.u.bcast_done.status = (uint16_t)st;
	if (tr_peer_send(ctx, rank, &m, TR_FC_HIGH, NULL))
		tr_warn("broadcast %u: cannot tell rank %d it is over", bc->seq, rank);
}

static void exec(struct triad_ctx *ctx, struct tr_bc *bc, int n)
{
	while (n > 0) {
		/* The array is reused by nested calls: work on a copy. */
		struct tr_bcast_act acts[n];
		int full = (unsigned)n == bc->cap, done = 0;

		memcpy(acts, bc->acts, sizeof(acts));
		for (int i = 0; i < n; i++) {
			const struct tr_bcast_act *a = &acts[i];

			switch (a->type) {
			case TR_BCAST_ACT_COPY:
			case TR_BCAST_ACT_PUT:
				act_copy(ctx, bc, a);
				break;
			case TR_BCAST_ACT_RANK_DONE:
				tell_rank(ctx, bc, (int)a->dst, (enum triad_status)a->status);
				break;
			case TR_BCAST_ACT_DONE:
				bc->req->failed_rank = a->failed == TR_BCAST_NO_RANK ? -1 : (int)a->failed;
				tr_req_complete(bc->req, (enum triad_status)a->status);
				bc->req = NULL;
				done = 1;
				break;
			default:
				break;
			}
		}
		if (done) {
			bc_free(bc);
			return;
		}
		n = full ? tr_bcast_poll(&bc->eng, bc->acts, bc->cap) : 0;
	}
}

static int root_start(struct triad_ctx *ctx, struct tr_bc *bc, uint64_t len,
		      enum triad_bcast_algo algo)
{
	struct triad_win *w = tr_win_find(ctx, bc->win);
	struct tr_bcast_cfg cfg = {
		.nranks = (uint32_t)ctx->size,
		.root = (uint32_t)ctx->rank,
		.len = len,
		.algo = (enum tr_bcast_algo)algo,
		.chunk = ctx->cfg.chunk_size < (1u << 20) ? ctx->cfg.chunk_size : (1u << 20),
		.auto_len = ctx->cfg.bcast_pipeline,
	};
	enum triad_status st = TRIAD_S_OK;
	int n;

	if (!w)
		st = TRIAD_S_NO_WINDOW;
	else if (bc->off > w->len || len > w->len - bc->off)
		st = TRIAD_S_OUT_OF_BOUNDS;
	bc->ranks = calloc((size_t)ctx->size, sizeof(*bc->ranks));
	cfg.ranks = bc->ranks;
	if (st == TRIAD_S_OK && (!bc->ranks || tr_bcast_init(&bc->eng, &cfg)))
		st = TRIAD_S_NO_MEMORY;
	if (st == TRIAD_S_OK) {
		bc->cap = tr_bcast_acts_max(&bc->eng);
		bc->acts = calloc(bc->cap, sizeof(*bc->acts));
		if (!bc->acts)
			st = TRIAD_S_NO_MEMORY;
	}
	if (st != TRIAD_S_OK) {
		/* Nothing moves: tell everyone, so nobody waits for ever. */
		tr_error("broadcast %u: the root's window %u cannot serve [%llu, +%llu): %s",
			 bc->seq, bc->win, (unsigned long long)bc->off, (unsigned long long)len,
			 triad_status_str(st));
		for (int r = 0; r < ctx->size; r++)
			if (r != ctx->rank)
				tell_rank(ctx, bc, r, st);
		bc->req->failed_rank = ctx->rank;
		tr_req_complete(bc->req, st);
		bc->req = NULL;
		bc_free(bc);
		return 0;
	}
	n = tr_bcast_start(&bc->eng, bc->acts, bc->cap);
	exec(ctx, bc, n);
	return 0;
}

void tr_bcast_peer_lost(struct triad_ctx *ctx, int peer)
{
	struct tr_list *l, *next;

	for (l = ctx->bcasts.next; l != &ctx->bcasts; l = next) {
		struct tr_bc *bc = tr_container_of(l, struct tr_bc, link);
		int n;

		next = l->next;
		if (bc->root == ctx->rank) {
			n = tr_bcast_rank_failed(&bc->eng, (uint32_t)peer, TRIAD_S_UNREACHABLE,
						 bc->acts, bc->cap);
			if (n > 0)
				exec(ctx, bc, n); /* may free bc: next was taken before */
		} else if (bc->root == peer) {
			tr_req_complete(bc->req, TRIAD_S_UNREACHABLE);
			bc->req = NULL;
			bc_free(bc);
		}
	}
}

/* ---- every rank --------------------------------------------------------------*/
void tr_bcast_on_msg(struct triad_ctx *ctx, int peer, const struct tr_msg *m)
{
	struct tr_list *l;
	struct tr_bc_early *e;

	for (l = ctx->bcasts.next; l != &ctx->bcasts; l = l->next) {
		struct tr_bc *bc = tr_container_of(l, struct tr_bc, link);

		if (bc->root == peer && bc->seq == m->u.bcast_done.seq) {
			tr_req_complete(bc->req, (enum triad_status)m->u.bcast_done.status);
			bc->req = NULL;
			bc_free(bc);
			return;
		}
	}
	e = malloc(sizeof(*e));
	if (!e) {
		tr_error("broadcast %u from rank %d: no memory to remember its end", m->u.bcast_done.seq,
			 peer);
		return;
	}
	e->root = peer;
	e->seq = m->u.bcast_done.seq;
	e->status = (enum triad_status)m->u.bcast_done.status;
	tr_list_add_tail(&ctx->bc_early, &e->link);
}

int triad_bcast(triad_ctx_t *ctx, int root, uint32_t win, uint64_t off, uint64_t len,
		enum triad_bcast_algo algo, triad_req_t **req_p)
{
	struct triad_req *req;
	struct tr_bc *bc;
	struct tr_list *l;
	int ret = 0;

	if (!ctx || !req_p || root < 0 || root >= ctx->size ||
	    (unsigned)algo > TRIAD_BCAST_PIPELINED) {
		if (ctx)
			tr_debug("bcast: bad arguments (root %d of %d ranks, algorithm %d)", root,
				 ctx->size, (int)algo);
		return -EINVAL;
	}
	req = tr_req_new(ctx, TR_REQ_BCAST, root);
	bc = calloc(1, sizeof(*bc));
	if (!req || !bc) {
		free(req);
		free(bc);
		return -ENOMEM;
	}
	req->len = len;
	req->failed_rank = -1;
	bc->root = root;
	bc->win = win;
	bc->off = off;
	bc->req = req;
	*req_p = req;
	tr_ctx_lock(ctx);
	bc->seq = ctx->bc_seq[root]++;
	tr_list_add_tail(&ctx->bcasts, &bc->link);
	if (root == ctx->rank) {
		ret = root_start(ctx, bc, len, algo);
	} else {
		for (l = ctx->bc_early.next; l != &ctx->bc_early; l = l->next) {
			struct tr_bc_early *e = tr_container_of(l, struct tr_bc_early, link);

			if (e->root == root && e->seq == bc->seq) {
				tr_req_complete(req, e->status);
				bc->req = NULL;
				bc_free(bc);
				tr_list_del(&e->link);
				free(e);
				break;
			}
		}
	}
	pthread_mutex_unlock(&ctx->lock);
	return ret;
}

int triad_req_failed_rank(const triad_req_t *req)
{
	return req && req->kind == TR_REQ_BCAST ? req->failed_rank : -1;
}
