/* Broadcast: the glue between the schedulers (proto/bcast and proto/bnode,
 * pure) and the fabric.
 *
 * Root-driven (greedy, binomial, pipelined): the root runs one engine per
 * broadcast and executes its actions: COPY and the root's own PUT both
 * become third-party copies with the root as initiator (transport-ack
 * mode: the source's RC write completion already means the data is in the
 * destination's memory), and RANK_DONE a BCAST_DONE message.  Other ranks
 * only wait for that message: their progress engines serve the copies,
 * their application threads make no call.
 *
 * Delegated (TRIAD_BCAST_TREE): every rank runs a proto/bnode engine, a
 * non-root's from its progress engine, created by the first BNODE message
 * of the broadcast (before or after the local call).  A WRITE is an
 * internal put from this rank's window into the same range of the child's
 * (rma.c: plane choice, descriptor, chunks, done again on a live plane
 * when a lane breaks); its ORDER goes once the WRITE completed (RC: the
 * data is in the child's memory, the guarantee the root-driven copies
 * rely on too), so a break that makes the WRITE go again cannot let the
 * ORDER overtake it.  WRITEs to one child complete, and their ORDERs go,
 * in the order the engine asked for them; ORDERs that arrive ahead of
 * their turn (another plane: TWOTREE's chunks, TREE's carried pieces)
 * wait in the broadcast's stash.  A non-root's
 * triad_bcast only waits for the engine's RELEASE.
 *
 * Groups (triad_group_create): a broadcast runs over a group of world
 * ranks, triad_bcast's over the world's own group (id 0).  The engines
 * number the group's ranks 0 .. n-1 (group ranks); the glue sends to the
 * world rank of each group rank they name (proto/group.h) and gives them
 * the group rank of each member a message comes from.  A broadcast's root
 * is kept as its world rank (BCAST_DONE comes from it).
 *
 * Broadcasts are matched by (group, root, sequence number): every rank
 * counts the broadcasts it called per group and root, so the calls must
 * come in the same order everywhere within a group (as MPI collectives
 * within a communicator); a BCAST_DONE that arrives before the local call
 * waits in bc_early, a BNODE message makes the broadcast's state at once,
 * or, when its group is not created here yet, waits for it in grp_early. */
#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "core/bcast.h"
#include "core/copy.h"
#include "core/peer.h"
#include "core/req.h"
#include "core/rma.h"
#include "core/win.h"
#include "base/log.h"
#include "proto/bcast.h"
#include "proto/bnode.h"
#include "proto/chunk.h"
#include "proto/group.h"

_Static_assert((int)TRIAD_BCAST_PIPELINED == (int)TR_BCAST_PIPELINE &&
		       (int)TRIAD_BCAST_BINOMIAL == (int)TR_BCAST_BINOMIAL,
	       "public and engine algorithms differ");

struct tr_dbc;

/* The broadcasts' state (ctx->bcast), made by tr_bcast_setup and freed
 * by tr_bcast_teardown, under the context lock. */
struct tr_bcasts {
	struct tr_list bcasts;	  /* broadcasts in progress here */
	struct tr_list bc_early;  /* BCAST_DONEs that came before the local call */
	struct triad_group *world_group; /* triad_bcast's: every rank, id 0 */
	struct tr_list groups;	  /* the groups triad_group_create made, live */
	struct tr_list grp_early; /* BNODE messages of a group not created here yet */
	unsigned ngrp_early;	  /* on grp_early, at most GRP_EARLY_MAX */
};

/* BNODE messages kept for groups not created here yet.  A member ahead of
 * this rank has a few of each broadcast it started in flight to it, so
 * this is far above what correct use leaves waiting; beyond it the groups
 * are not being created here (an id that differs between members), and
 * memory must not grow with what peers send. */
#define GRP_EARLY_MAX 4096

struct triad_group {
	struct tr_list link; /* ctx->bcast->groups, while created (not the world's) */
	struct triad_ctx *ctx;
	uint32_t id;
	struct tr_group_map map;
	uint32_t *seq; /* broadcasts called so far, per root (group rank) */
	int refs;      /* the creator's until destroyed, and one per broadcast state */
};

struct tr_bc {
	struct tr_list link;
	struct triad_group *g; /* its group (a reference) */
	int root;	       /* world rank */
	uint32_t seq;
	uint32_t win;
	uint64_t off;
	struct triad_req *req;
	/* root only */
	struct tr_bcast eng;
	struct tr_bcast_rank *ranks;
	struct tr_bcast_act *acts;
	unsigned cap;
	/* delegated: its engine; NULL for a root-driven one (or a non-root's
	 * call that no BNODE message reached yet) */
	struct tr_dbc *d;
	int called; /* the local triad_bcast came (0: made by a message) */
};

struct tr_bc_early {
	struct tr_list link;
	uint32_t group;
	int root;
	uint32_t seq;
	enum triad_status status;
};

static int on_bcast_done(struct tr_lane *l, const struct tr_msg *m, struct tr_buf *b);
static int on_bnode(struct tr_lane *l, const struct tr_msg *m, struct tr_buf *b);
static void peer_lost(struct triad_ctx *ctx, int peer, enum triad_status st);

/* A group of the map's ranks (taken over), one reference; NULL: no memory
 * (the map is freed). */
static struct triad_group *group_new(struct triad_ctx *ctx, uint32_t id, struct tr_group_map *map)
{
	struct triad_group *g = calloc(1, sizeof(*g));
	uint32_t *seq = calloc((size_t)map->n, sizeof(*seq));

	if (!g || !seq) {
		free(g);
		free(seq);
		tr_group_map_free(map);
		return NULL;
	}
	g->ctx = ctx;
	g->id = id;
	g->map = *map;
	g->seq = seq;
	g->refs = 1;
	tr_list_init(&g->link);
	return g;
}

static void group_put(struct triad_group *g)
{
	if (!g || --g->refs > 0)
		return;
	tr_group_map_free(&g->map);
	free(g->seq);
	free(g);
}

/* The group rank of world rank w in bc's group, -1 outside. */
static int grank(const struct tr_bc *bc, int w)
{
	return tr_group_index(&bc->g->map, w);
}

/* The world rank of group rank r of bc's group. */
static int wrank(const struct tr_bc *bc, uint32_t r)
{
	return bc->g->map.world[r];
}

/* Frees every record of list h, each malloc'd with its link at offset off. */
static void list_free_all(struct tr_list *h, size_t off)
{
	while (!tr_list_empty(h)) {
		struct tr_list *l = h->next;

		tr_list_del(l);
		free((char *)l - off);
	}
}

static struct triad_group *group_find(struct triad_ctx *ctx, uint32_t id)
{
	if (id == 0)
		return ctx->bcast->world_group;
	for (struct tr_list *l = ctx->bcast->groups.next; l != &ctx->bcast->groups; l = l->next) {
		struct triad_group *g = tr_container_of(l, struct triad_group, link);

		if (g->id == id)
			return g;
	}
	return NULL;
}

int tr_bcast_setup(struct triad_ctx *ctx)
{
	static const struct tr_peer_hooks hooks = { .lost = peer_lost };
	struct tr_group_map map;
	struct tr_bcasts *bs = calloc(1, sizeof(*bs));

	if (!bs)
		return -ENOMEM;
	ctx->bcast = bs;
	tr_list_init(&bs->bcasts);
	tr_list_init(&bs->bc_early);
	tr_list_init(&bs->groups);
	tr_list_init(&bs->grp_early);
	if (tr_group_map_world(&map, ctx->size, ctx->rank) ||
	    !(bs->world_group = group_new(ctx, 0, &map)))
		return -ENOMEM;
	tr_peer_handle(ctx, TR_MSG_BCAST_DONE, on_bcast_done);
	tr_peer_handle(ctx, TR_MSG_BNODE, on_bnode);
	return tr_peer_hooks_add(ctx, &hooks);
}

static void dbc_free(struct tr_dbc *d);

static void bc_free(struct tr_bc *bc)
{
	tr_list_del(&bc->link);
	group_put(bc->g);
	dbc_free(bc->d);
	free(bc->ranks);
	free(bc->acts);
	free(bc);
}

/* A BNODE message of a group not created here yet, with its data. */
struct tr_grp_early {
	struct tr_list link;
	int peer;
	struct tr_wire_bnode w;
	unsigned char data[];
};

void tr_bcast_teardown(struct triad_ctx *ctx)
{
	struct tr_bcasts *bs = ctx->bcast;

	if (!bs)
		return;
	while (!tr_list_empty(&bs->bcasts)) {
		struct tr_bc *bc = tr_list_first(&bs->bcasts, struct tr_bc, link);

		if (bc->req)
			tr_req_complete(bc->req, TRIAD_S_CANCELLED);
		bc_free(bc);
	}
	list_free_all(&bs->bc_early, offsetof(struct tr_bc_early, link));
	list_free_all(&bs->grp_early, offsetof(struct tr_grp_early, link));
	while (!tr_list_empty(&bs->groups)) {
		struct triad_group *g = tr_list_first(&bs->groups, struct triad_group, link);

		tr_list_del(&g->link);
		group_put(g);
	}
	group_put(bs->world_group);
	free(bs);
	ctx->bcast = NULL;
}

/* ---- delegated: every rank's engine (proto/bnode) -----------------------------*/
/* The network the engines plan for: the simulator's default cluster
 * (docs/sim.md, L 1.5 us, o 0.5 us, g 0.1 us, 100 Gb/s).  The engines
 * use it for the shape, TWOTREE's chunk and TREE's pieces; the library
 * does not measure its links yet. */
static const struct tr_bnode_cost bnode_cost = {
	.lat_us = 1.5, .o_us = 0.5, .gap_us = 0.1, .bw = 12500, .msg_bytes = 128,
};

/* A WRITE the engine asked for, kept until it is reported to the engine
 * (in the order asked, per child and tree) with its ORDER sent. */
struct tr_bwrite {
	struct tr_list link;
	struct tr_bc *bc;
	uint32_t to;
	uint64_t k;
	struct tr_bnode_order ord;
	int done;
	enum triad_status status;
};

/* An ORDER that came ahead of its turn (TWOTREE, over another plane). */
struct tr_bstash {
	struct tr_list link;
	uint32_t from;
	struct tr_bnode_order ord;
};

struct tr_dbc {
	struct tr_bnode eng;
	struct tr_bnode_act *acts;
	unsigned cap;
	struct tr_list writes; /* struct tr_bwrite, in the order asked */
	struct tr_list stash;  /* struct tr_bstash */
	int busy;	       /* dexec calls under way on it */
	int released;	       /* RELEASE came, with rel_status */
	enum triad_status rel_status;
};

static void dbc_free(struct tr_dbc *d)
{
	if (!d)
		return;
	list_free_all(&d->writes, offsetof(struct tr_bwrite, link));
	list_free_all(&d->stash, offsetof(struct tr_bstash, link));
	free(d->acts);
	free(d);
}

/* bc's engine, for its root's broadcast (cfg: the root's, else only the
 * group's shape).  0 or -ENOMEM / -EINVAL. */
static int dbc_new(struct tr_bc *bc, const struct tr_bnode_cfg *root_cfg)
{
	struct tr_bnode_cfg cfg = {
		.nranks = (uint32_t)bc->g->map.n,
		.root = (uint32_t)grank(bc, bc->root),
		.rank = (uint32_t)bc->g->map.me,
		.cost = bnode_cost,
	};
	struct tr_dbc *d = calloc(1, sizeof(*d));
	int ret;

	if (!d)
		return -ENOMEM;
	tr_list_init(&d->writes);
	tr_list_init(&d->stash);
	ret = tr_bnode_init(&d->eng, root_cfg ? root_cfg : &cfg);
	if (!ret) {
		d->cap = tr_bnode_acts_max(&d->eng);
		d->acts = calloc(d->cap, sizeof(*d->acts));
		ret = d->acts ? 0 : -ENOMEM;
	}
	if (ret) {
		dbc_free(d);
		return ret;
	}
	bc->d = d;
	return 0;
}

/* A delegated broadcast this rank has no more part in: the engine has
 * said its last (the root's DONE, a non-root's REPORT) and the local call
 * has its request back. */
static int dbc_over(const struct tr_bc *bc)
{
	const struct tr_bnode *b = &bc->d->eng;

	return bc->called && !bc->req && b->released && b->reported;
}

static void dexec(struct triad_ctx *ctx, struct tr_bc *bc, int n);

static void bnode_msg(struct tr_bc *bc, struct tr_msg *m, enum tr_wire_bnode_kind kind)
{
	m->type = TR_MSG_BNODE;
	m->u.bnode.kind = (uint8_t)kind;
	m->u.bnode.shape = bc->d->eng.shape;
	m->u.bnode.root = (uint32_t)bc->root;
	m->u.bnode.seq = bc->seq;
	m->u.bnode.group = bc->g->id;
	m->u.bnode.win = bc->win;
	m->u.bnode.off = bc->off;
	m->u.bnode.failed = TR_BNODE_NO_RANK;
}

/* A message the engine asked for, to group rank `to`; one that cannot go
 * tells the engine its peer failed (the transport gave up on it). */
static void bnode_send(struct triad_ctx *ctx, struct tr_bc *bc, uint32_t to, struct tr_msg *m)
{
	int ret = tr_peer_send(ctx, wrank(bc, to), m, TR_FC_MEDIUM, NULL);

	if (ret) {
		tr_warn("broadcast %u of rank %d: cannot send a %s to rank %u: %s", bc->seq,
			bc->root, m->u.bnode.kind == TR_WIRE_BNODE_ORDER ? "ORDER"
				  : m->u.bnode.kind == TR_WIRE_BNODE_REPORT ? "REPORT" : "ABORT",
			to, strerror(-ret));
		dexec(ctx, bc, tr_bnode_rank_failed(&bc->d->eng, to, TRIAD_S_UNREACHABLE,
						    bc->d->acts, bc->d->cap));
	}
}

static void send_order(struct triad_ctx *ctx, struct tr_bc *bc, uint32_t to,
		       const struct tr_bnode_order *o, const void *data, uint64_t nbytes)
{
	struct tr_msg m = { 0 };

	bnode_msg(bc, &m, TR_WIRE_BNODE_ORDER);
	m.u.bnode.shape = o->shape;
	m.u.bnode.carried = o->carried;
	m.u.bnode.hi = o->hi;
	m.u.bnode.len = o->len;
	m.u.bnode.chunk = o->chunk;
	m.u.bnode.k = o->k;
	m.u.bnode.mul = (uint8_t)o->mul;
	m.u.bnode.rot = o->rot;
	m.u.bnode.grp = (uint16_t)o->grp;
	m.u.bnode.fan = (uint8_t)o->fan;
	m.u.bnode.nbytes = (uint32_t)nbytes;
	m.u.bnode.data = data;
	bnode_send(ctx, bc, to, &m);
}

/* Reports every completed WRITE whose elders to the same child and tree
 * are reported, each after its ORDER went (OK) or without one (failed). */
static void writes_report(struct triad_ctx *ctx, struct tr_bc *bc)
{
	struct tr_dbc *d = bc->d;
	struct tr_list *l;

again:
	for (l = d->writes.next; l != &d->writes; l = l->next) {
		struct tr_bwrite *w = tr_container_of(l, struct tr_bwrite, link);
		int first = 1;

		if (!w->done)
			continue;
		for (struct tr_list *e = d->writes.next; e != l && first; e = e->next) {
			const struct tr_bwrite *x = tr_container_of(e, struct tr_bwrite, link);

			first = x->to != w->to || x->k % 2 != w->k % 2;
		}
		if (!first)
			continue;
		tr_list_del(&w->link);
		if (w->status == TRIAD_S_OK)
			send_order(ctx, bc, w->to, &w->ord, NULL, 0);
		else
			tr_warn("broadcast %u of rank %d: WRITE of chunk %llu to rank %u failed: %s",
				bc->seq, bc->root, (unsigned long long)w->k, w->to,
				triad_status_str(w->status));
		dexec(ctx, bc, tr_bnode_write_done(&d->eng, w->to, w->k, w->status, d->acts,
						   d->cap));
		free(w);
		goto again; /* the list may have changed under the calls */
	}
}

static void write_done(struct triad_req *req)
{
	struct tr_bwrite *w = req->cb_arg;
	struct tr_bc *bc = w->bc;
	struct triad_ctx *ctx = req->ctx;

	w->done = 1;
	w->status = req->status;
	free(req);
	if (ctx->closing)
		return; /* teardown frees the record with its broadcast */
	bc->d->busy++;
	writes_report(ctx, bc);
	bc->d->busy--;
	dexec(ctx, bc, 0);
}

/* WRITE [off, off + len) of the broadcast to the same range of rank `to`,
 * its ORDER o to follow once it completed. */
static void act_bwrite(struct triad_ctx *ctx, struct tr_bc *bc, const struct tr_bnode_act *a,
		       const struct tr_bnode_order *o)
{
	struct triad_win *w = tr_win_find(ctx, bc->win);
	struct tr_bwrite *rec = calloc(1, sizeof(*rec));
	struct triad_req *req = tr_req_new(ctx, TR_REQ_PUT, wrank(bc, a->to));

	if (!rec || !req) {
		free(rec);
		free(req);
		dexec(ctx, bc, tr_bnode_write_done(&bc->d->eng, a->to, a->k, TRIAD_S_NO_MEMORY,
						   bc->d->acts, bc->d->cap));
		return;
	}
	rec->bc = bc;
	rec->to = a->to;
	rec->k = a->k;
	rec->ord = *o;
	tr_list_add_tail(&bc->d->writes, &rec->link);
	req->win = bc->win;
	req->off = bc->off + a->off;
	req->len = a->len;
	req->on_done = write_done;
	req->cb_arg = rec;
	if (!w || !(w->access & TRIAD_WIN_READ) || !tr_range_ok(w->len, bc->off + a->off, a->len)) {
		tr_req_complete(req, TRIAD_S_NO_WINDOW); /* gone under the broadcast */
		return;
	}
	req->buf = w->base + bc->off + a->off;
	tr_rma_put_internal(ctx, req);
}

/* A carried ORDER: the data travels in it. */
static void act_carried(struct triad_ctx *ctx, struct tr_bc *bc, const struct tr_bnode_act *a)
{
	struct triad_win *w = tr_win_find(ctx, bc->win);

	if (!w || !tr_range_ok(w->len, bc->off + a->off, a->len)) {
		tr_error("broadcast %u of rank %d: window %u cannot serve [%llu, +%llu) any more",
			 bc->seq, bc->root, bc->win, (unsigned long long)(bc->off + a->off),
			 (unsigned long long)a->len);
		dexec(ctx, bc, tr_bnode_rank_failed(&bc->d->eng, a->to, TRIAD_S_NO_WINDOW,
						    bc->d->acts, bc->d->cap));
		return;
	}
	send_order(ctx, bc, a->to, &a->ord, w->base + bc->off + a->off, a->len);
}

static void act_report(struct triad_ctx *ctx, struct tr_bc *bc, const struct tr_bnode_act *a)
{
	struct tr_msg m = { 0 };

	bnode_msg(bc, &m, a->type == TR_BNODE_ACT_REPORT ? TR_WIRE_BNODE_REPORT
							 : TR_WIRE_BNODE_ABORT);
	m.u.bnode.shape = a->ord.shape;
	m.u.bnode.mul = (uint8_t)a->ord.mul;
	m.u.bnode.rot = a->ord.rot;
	m.u.bnode.grp = (uint16_t)a->ord.grp;
	m.u.bnode.fan = (uint8_t)a->ord.fan;
	m.u.bnode.status = a->status;
	m.u.bnode.failed = a->failed;
	bnode_send(ctx, bc, a->to, &m);
}

static void dexec(struct triad_ctx *ctx, struct tr_bc *bc, int n)
{
	struct tr_dbc *d = bc->d;

	d->busy++;
	while (n > 0) {
		/* The array is reused by nested calls: work on a copy. */
		struct tr_bnode_act acts[n];
		int full = (unsigned)n == d->cap;

		memcpy(acts, d->acts, sizeof(acts));
		for (int i = 0; i < n; i++) {
			const struct tr_bnode_act *a = &acts[i];

			switch (a->type) {
			case TR_BNODE_ACT_WRITE:
				/* The engine asks for its ORDER right after it. */
				if (i + 1 < n && acts[i + 1].type == TR_BNODE_ACT_ORDER &&
				    acts[i + 1].to == a->to) {
					act_bwrite(ctx, bc, a, &acts[i + 1].ord);
					i++;
				} else {
					tr_error("broadcast %u of rank %d: a WRITE to rank %u with "
						 "no ORDER", bc->seq, bc->root, a->to);
				}
				break;
			case TR_BNODE_ACT_ORDER:
				act_carried(ctx, bc, a);
				break;
			case TR_BNODE_ACT_REPORT:
			case TR_BNODE_ACT_ABORT:
				act_report(ctx, bc, a);
				break;
			case TR_BNODE_ACT_RELEASE:
				d->released = 1;
				d->rel_status = (enum triad_status)a->status;
				if (bc->root != ctx->rank && bc->req) {
					tr_req_complete(bc->req, d->rel_status);
					bc->req = NULL;
				}
				break;
			case TR_BNODE_ACT_DONE:
				if (bc->req) {
					bc->req->failed_rank =
						a->failed == TR_BNODE_NO_RANK ? -1 : (int)a->failed;
					tr_req_complete(bc->req, (enum triad_status)a->status);
					bc->req = NULL;
				}
				break;
			default:
				break;
			}
		}
		n = full || tr_bnode_pending(&d->eng) ? tr_bnode_poll(&d->eng, d->acts, d->cap) : 0;
	}
	if (--d->busy == 0 && dbc_over(bc))
		bc_free(bc);
}

/* What an ORDER may carry: a receive slot less the headers, the smallest
 * any connection announced (TRIAD_SLOT_SIZE may differ between ranks). */
static uint64_t bnode_inline_max(const struct triad_ctx *ctx)
{
	uint64_t slot = ctx->cfg.slot_size;

	for (int r = 0; r < ctx->size; r++)
		for (int q = 0; q < ctx->nplanes; q++) {
			unsigned s = ctx->peers[r].lane[q].peer_slot_size;

			if (s && s < slot)
				slot = s;
		}
	return slot - TR_WIRE_HDR_LEN - TR_WIRE_BNODE_LEN;
}

static void tell_rank(struct triad_ctx *ctx, struct tr_bc *bc, int rank, enum triad_status st);

/* The shape TRIAD_BCAST_SHAPE asks of this root's broadcasts over n ranks:
 * AUTO unless set; two trees need two non-roots, so TWOTREE over fewer is
 * one tree (what AUTO would take there). */
static enum tr_bnode_shape root_shape(const struct triad_ctx *ctx, int n)
{
	static const enum tr_bnode_shape shapes[] = { TR_BNODE_AUTO, TR_BNODE_TREE,
						      TR_BNODE_TWOTREE };
	enum tr_bnode_shape s = shapes[ctx->cfg.bcast_shape];

	return s == TR_BNODE_TWOTREE && n < 3 ? TR_BNODE_TREE : s;
}

/* The root's start: its engine, shape by its estimate.  Nothing to move
 * (0 bytes): the engine would send nothing, so the ranks are told it is
 * over as a root-driven broadcast tells them. */
static int droot_start(struct triad_ctx *ctx, struct tr_bc *bc, uint64_t len)
{
	struct tr_bnode_cfg cfg = {
		.nranks = (uint32_t)bc->g->map.n,
		.root = (uint32_t)bc->g->map.me,
		.rank = (uint32_t)bc->g->map.me,
		.len = len,
		.shape = root_shape(ctx, bc->g->map.n),
		.inline_max = bnode_inline_max(ctx),
		.cost = bnode_cost,
	};

	if (len == 0) {
		for (int r = 0; r < bc->g->map.n; r++)
			if (r != bc->g->map.me)
				tell_rank(ctx, bc, wrank(bc, (uint32_t)r), TRIAD_S_OK);
		tr_req_complete(bc->req, TRIAD_S_OK);
		bc->req = NULL;
		bc_free(bc);
		return 0;
	}
	if (dbc_new(bc, &cfg))
		return -ENOMEM;
	tr_debug("broadcast %u: %llu B, delegated, %s", bc->seq, (unsigned long long)len,
		 tr_bnode_shape_str(bc->d->eng.shape));
	dexec(ctx, bc, tr_bnode_start(&bc->d->eng, bc->d->acts, bc->d->cap));
	return 0;
}

/* Place an ORDER's carried bytes in this rank's window, checked as a
 * COPY_DATA's are: the window exists, allows WRITE, holds the range. */
static enum triad_status place(struct triad_ctx *ctx, const struct tr_bc *bc,
			       const struct tr_wire_bnode *w)
{
	struct triad_win *win = tr_win_find(ctx, bc->win);
	uint64_t at = bc->off + w->k * w->chunk;

	if (!win)
		return TRIAD_S_NO_WINDOW;
	if (!(win->access & TRIAD_WIN_WRITE))
		return TRIAD_S_ACCESS;
	if (bc->off > UINT64_MAX - w->k * w->chunk || !tr_range_ok(win->len, at, w->nbytes))
		return TRIAD_S_OUT_OF_BOUNDS;
	memcpy(win->base + at, w->data, w->nbytes);
	return TRIAD_S_OK;
}

/* ORDERs that waited for their turn, while one is taken. */
static void stash_retry(struct triad_ctx *ctx, struct tr_bc *bc)
{
	struct tr_dbc *d = bc->d;
	int again = 1;

	while (again) {
		again = 0;
		for (struct tr_list *l = d->stash.next; l != &d->stash; l = l->next) {
			struct tr_bstash *e = tr_container_of(l, struct tr_bstash, link);
			int n = tr_bnode_on_order(&d->eng, e->from, &e->ord, d->acts, d->cap);

			if (n == -ENOENT)
				continue;
			tr_list_del(&e->link);
			free(e);
			dexec(ctx, bc, n);
			again = 1;
			break;
		}
	}
}

/* An ORDER from group rank `from`. */
static void on_order(struct triad_ctx *ctx, struct tr_bc *bc, uint32_t from,
		     const struct tr_wire_bnode *w)
{
	struct tr_dbc *d = bc->d;
	struct tr_bnode_order ord = { .shape = w->shape, .carried = w->carried, .hi = w->hi,
				      .len = w->len, .chunk = w->chunk, .k = w->k, .mul = w->mul,
				      .rot = w->rot, .grp = w->grp, .fan = w->fan };
	enum triad_status st = w->carried ? place(ctx, bc, w) : TRIAD_S_OK;
	struct tr_bstash *e;
	int n;

	if (st != TRIAD_S_OK) {
		/* Nothing moves on from here; the parent hears it in the report. */
		tr_error("broadcast %u of rank %d: window %u cannot take chunk %llu: %s", bc->seq,
			 bc->root, bc->win, (unsigned long long)w->k, triad_status_str(st));
		dexec(ctx, bc, tr_bnode_on_abort(&d->eng, from, st, (uint32_t)bc->g->map.me, &ord,
						 d->acts, d->cap));
	}
	n = tr_bnode_on_order(&d->eng, from, &ord, d->acts, d->cap);
	/* TWOTREE's chunks and TREE's carried pieces come in order from their
	 * parent, but one may overtake another on another plane. */
	if (n != -ENOENT || (w->shape != TR_BNODE_TWOTREE && w->chunk >= w->len)) {
		if (n < 0)
			tr_warn("broadcast %u of rank %d: ORDER from rank %d refused: %s", bc->seq,
				bc->root, wrank(bc, from), strerror(-n));
		dexec(ctx, bc, n);
		stash_retry(ctx, bc);
		return;
	}
	/* Ahead of an elder that took another plane: it waits for it. */
	e = malloc(sizeof(*e));
	if (!e) {
		tr_error("broadcast %u of rank %d: no memory to keep chunk %llu", bc->seq, bc->root,
			 (unsigned long long)w->k);
		return;
	}
	e->from = from;
	e->ord = ord;
	tr_list_add_tail(&d->stash, &e->link);
}

static struct tr_bc *bc_find(struct triad_ctx *ctx, const struct triad_group *g, int root,
			     uint32_t seq, int uncalled)
{
	for (struct tr_list *l = ctx->bcast->bcasts.next; l != &ctx->bcast->bcasts; l = l->next) {
		struct tr_bc *bc = tr_container_of(l, struct tr_bc, link);

		if (bc->g == g && bc->root == root && bc->seq == seq && (!uncalled || !bc->called))
			return bc;
	}
	return NULL;
}

/* Keeps a BNODE message of a group not created here yet, data and all:
 * triad_group_create hands it on. */
static void grp_early_keep(struct triad_ctx *ctx, int peer, const struct tr_wire_bnode *w)
{
	struct tr_grp_early *e;

	if (ctx->bcast->ngrp_early >= GRP_EARLY_MAX) {
		tr_error("broadcast %u of rank %u: a message of group %u, not created here, "
			 "dropped: %d such messages wait already (is triad_group_create called "
			 "with the same id at every member?)", w->seq, w->root, w->group,
			 GRP_EARLY_MAX);
		return;
	}
	e = malloc(sizeof(*e) + w->nbytes);
	if (!e) {
		tr_error("broadcast %u of rank %u: no memory to keep a message of group %u", w->seq,
			 w->root, w->group);
		return;
	}
	tr_debug("broadcast %u of rank %u: a message of group %u, not created here yet: kept",
		 w->seq, w->root, w->group);
	e->peer = peer;
	e->w = *w;
	if (w->nbytes)
		memcpy(e->data, w->data, w->nbytes);
	e->w.data = w->nbytes ? e->data : NULL;
	tr_list_add_tail(&ctx->bcast->grp_early, &e->link);
	ctx->bcast->ngrp_early++;
}

/* A BNODE message from world rank peer. */
static void bnode_in(struct triad_ctx *ctx, int peer, const struct tr_wire_bnode *w)
{
	struct triad_group *g = group_find(ctx, w->group);
	int root = (int)w->root, groot, from;
	struct tr_bc *bc;

	if (!g) {
		grp_early_keep(ctx, peer, w);
		return;
	}
	groot = w->root < (uint32_t)ctx->size ? tr_group_index(&g->map, root) : -1;
	from = tr_group_index(&g->map, peer);
	if (groot < 0 || from < 0) {
		tr_warn("rank %d: a broadcast message of group %u for root %u: %s not a member: "
			"dropped", peer, w->group, w->root, from < 0 ? "the sender is" : "the root is");
		return;
	}
	bc = bc_find(ctx, g, root, w->seq, 0);
	if (!bc || !bc->d) {
		/* Over here already (a late ABORT, or the call took the broadcast
		 * to be root-driven): nothing to do. */
		if (!bc && (root == ctx->rank || (int32_t)(w->seq - g->seq[groot]) < 0)) {
			tr_debug("broadcast %u of rank %d: a %u from rank %d after its end", w->seq,
				 root, w->kind, peer);
			return;
		}
		if (!bc && (bc = calloc(1, sizeof(*bc)))) {
			bc->g = g;
			g->refs++;
			bc->root = root;
			bc->seq = w->seq;
			tr_list_add_tail(&ctx->bcast->bcasts, &bc->link);
		}
		if (!bc || (bc->win = w->win, bc->off = w->off, dbc_new(bc, NULL))) {
			tr_error("broadcast %u of rank %d: no memory for its state", w->seq, root);
			if (bc && !bc->called)
				bc_free(bc);
			return;
		}
	}
	struct tr_bnode_order tag = { .shape = w->shape, .mul = w->mul, .rot = w->rot,
				      .grp = w->grp, .fan = w->fan };

	bc->d->busy++;
	switch (w->kind) {
	case TR_WIRE_BNODE_ORDER:
		on_order(ctx, bc, (uint32_t)from, w);
		break;
	case TR_WIRE_BNODE_REPORT:
		dexec(ctx, bc, tr_bnode_on_report(&bc->d->eng, (uint32_t)from,
						  (enum triad_status)w->status, w->failed, &tag,
						  bc->d->acts, bc->d->cap));
		break;
	default:
		dexec(ctx, bc, tr_bnode_on_abort(&bc->d->eng, (uint32_t)from,
						 (enum triad_status)w->status, w->failed, &tag,
						 bc->d->acts, bc->d->cap));
		break;
	}
	bc->d->busy--;
	dexec(ctx, bc, 0);
}

static int on_bnode(struct tr_lane *l, const struct tr_msg *m, struct tr_buf *b)
{
	(void)b;
	bnode_in(l->ctx, l->peer, &m->u.bnode);
	return 0;
}

/* A lost peer (group rank gp): a child the engine waits for, or the root
 * whose broadcast this rank has not all of (nobody is left to tell it). */
static void dpeer_lost(struct triad_ctx *ctx, struct tr_bc *bc, int peer, uint32_t gp)
{
	struct tr_dbc *d = bc->d;

	d->busy++;
	if (peer != ctx->rank)
		dexec(ctx, bc, tr_bnode_rank_failed(&d->eng, gp, TRIAD_S_UNREACHABLE,
						    d->acts, d->cap));
	if (bc->root == peer && !d->eng.released) {
		struct tr_bnode_order tag = tr_bnode_tag(&d->eng);

		dexec(ctx, bc, tr_bnode_on_abort(&d->eng, gp, TRIAD_S_UNREACHABLE, gp, &tag,
						 d->acts, d->cap));
	}
	d->busy--;
	dexec(ctx, bc, 0);
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
		.source = (uint32_t)wrank(bc, a->src),
		.destination = (uint32_t)wrank(bc, a->dst),
		.src_win = bc->win,
		.dst_win = bc->win,
		.src_off = bc->off + a->off,
		.dst_off = bc->off + a->off,
		.len = a->len,
		.mode = TR_COPY_TRANSPORT_ACK,
	};
	struct triad_req *req = tr_req_new(ctx, TR_REQ_COPY, wrank(bc, a->src));
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

/* Tells world rank `rank` the broadcast is over for it. */
static void tell_rank(struct triad_ctx *ctx, struct tr_bc *bc, int rank, enum triad_status st)
{
	struct tr_msg m = { .type = TR_MSG_BCAST_DONE };

	m.u.bcast_done.seq = bc->seq;
	m.u.bcast_done.group = bc->g->id;
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
				tell_rank(ctx, bc, wrank(bc, a->dst), (enum triad_status)a->status);
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
		.nranks = (uint32_t)bc->g->map.n,
		.root = (uint32_t)bc->g->map.me,
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
	if (st == TRIAD_S_OK && algo == TRIAD_BCAST_TREE) {
		if (!droot_start(ctx, bc, len))
			return 0;
		st = TRIAD_S_NO_MEMORY;
	}
	bc->ranks = calloc((size_t)bc->g->map.n, sizeof(*bc->ranks));
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
		for (int r = 0; r < bc->g->map.n; r++)
			if (r != bc->g->map.me)
				tell_rank(ctx, bc, wrank(bc, (uint32_t)r), st);
		bc->req->failed_rank = bc->g->map.me;
		tr_req_complete(bc->req, st);
		bc->req = NULL;
		bc_free(bc);
		return 0;
	}
	n = tr_bcast_start(&bc->eng, bc->acts, bc->cap);
	exec(ctx, bc, n);
	return 0;
}


static void peer_lost(struct triad_ctx *ctx, int peer, enum triad_status st)
{
	struct tr_list *l, *next;

	(void)st;
	if (!ctx->initialized || ctx->closing)
		return; /* not while starting or closing (the teardown cancels) */
	for (l = ctx->bcast->bcasts.next; l != &ctx->bcast->bcasts; l = next) {
		struct tr_bc *bc = tr_container_of(l, struct tr_bc, link);
		int gp = grank(bc, peer), n;

		next = l->next;
		if (gp < 0)
			continue; /* not a member of its group */
		if (bc->d) {
			dpeer_lost(ctx, bc, peer, (uint32_t)gp); /* may free bc */
		} else if (bc->root == ctx->rank) {
			n = tr_bcast_rank_failed(&bc->eng, (uint32_t)gp, TRIAD_S_UNREACHABLE,
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
static int on_bcast_done(struct tr_lane *l, const struct tr_msg *m, struct tr_buf *b)
{
	struct triad_ctx *ctx = l->ctx;
	int peer = l->peer;
	struct tr_list *i;
	struct tr_bc_early *e;

	(void)b;
	for (i = ctx->bcast->bcasts.next; i != &ctx->bcast->bcasts; i = i->next) {
		struct tr_bc *bc = tr_container_of(i, struct tr_bc, link);

		if (bc->g->id == m->u.bcast_done.group && bc->root == peer &&
		    bc->seq == m->u.bcast_done.seq && !bc->d) {
			tr_req_complete(bc->req, (enum triad_status)m->u.bcast_done.status);
			bc->req = NULL;
			bc_free(bc);
			return 0;
		}
	}
	e = malloc(sizeof(*e));
	if (!e) {
		tr_error("broadcast %u from rank %d: no memory to remember its end", m->u.bcast_done.seq,
			 peer);
		return 0;
	}
	e->group = m->u.bcast_done.group;
	e->root = peer;
	e->seq = m->u.bcast_done.seq;
	e->status = (enum triad_status)m->u.bcast_done.status;
	tr_list_add_tail(&ctx->bcast->bc_early, &e->link);
	return 0;
}

/* A broadcast of group g from its group rank root (checked). */
static int bcast_start(struct triad_ctx *ctx, struct triad_group *g, int root, uint32_t win,
		       uint64_t off, uint64_t len, enum triad_bcast_algo algo, triad_req_t **req_p)
{
	int wroot = g->map.world[root];
	struct triad_req *req = tr_req_new(ctx, TR_REQ_BCAST, wroot);
	struct tr_bc *bc = calloc(1, sizeof(*bc)), *early;
	struct tr_list *l;
	int ret = 0;

	if (!req || !bc) {
		free(req);
		free(bc);
		return -ENOMEM;
	}
	req->len = len;
	req->failed_rank = -1;
	bc->root = wroot;
	bc->win = win;
	bc->off = off;
	bc->req = req;
	bc->called = 1;
	*req_p = req;
	tr_ctx_lock(ctx);
	bc->seq = g->seq[root]++;
	if (wroot != ctx->rank && (early = bc_find(ctx, g, wroot, bc->seq, 1))) {
		/* Its messages came first: the engine runs already. */
		free(bc);
		early->called = 1;
		early->req = req;
		early->d->busy++;
		if (early->d->released) {
			tr_req_complete(req, early->d->rel_status);
			early->req = NULL;
		}
		early->d->busy--;
		dexec(ctx, early, 0); /* may free it */
		pthread_mutex_unlock(&ctx->lock);
		return 0;
	}
	bc->g = g;
	g->refs++;
	tr_list_add_tail(&ctx->bcast->bcasts, &bc->link);
	if (wroot == ctx->rank) {
		ret = root_start(ctx, bc, len, algo);
	} else {
		for (l = ctx->bcast->bc_early.next; l != &ctx->bcast->bc_early; l = l->next) {
			struct tr_bc_early *e = tr_container_of(l, struct tr_bc_early, link);

			if (e->group == g->id && e->root == wroot && e->seq == bc->seq) {
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

int triad_bcast(triad_ctx_t *ctx, int root, uint32_t win, uint64_t off, uint64_t len,
		enum triad_bcast_algo algo, triad_req_t **req_p)
{
	if (!ctx || !req_p || root < 0 || root >= ctx->size || (unsigned)algo > TRIAD_BCAST_TREE) {
		if (ctx)
			tr_debug("bcast: bad arguments (root %d of %d ranks, algorithm %d)", root,
				 ctx->size, (int)algo);
		return -EINVAL;
	}
	return bcast_start(ctx, ctx->bcast->world_group, root, win, off, len, algo, req_p);
}

int triad_group_bcast(triad_group_t *group, int root, uint32_t win, uint64_t off,
		      uint64_t len, enum triad_bcast_algo algo, triad_req_t **req_p)
{
	if (!group || !req_p || root < 0 || root >= group->map.n ||
	    (unsigned)algo > TRIAD_BCAST_TREE) {
		if (group)
			tr_debug("group %u bcast: bad arguments (root %d of %d ranks, algorithm %d)",
				 group->id, root, group->map.n, (int)algo);
		return -EINVAL;
	}
	return bcast_start(group->ctx, group, root, win, off, len, algo, req_p);
}

int triad_group_create(triad_ctx_t *ctx, uint32_t id, const int *ranks, int n,
		       triad_group_t **group_p)
{
	struct tr_group_map map;
	struct triad_group *g;
	struct tr_list *l, *next;
	int ret;

	if (!ctx || !group_p || id == 0)
		return -EINVAL;
	ret = tr_group_map_init(&map, ranks, n, ctx->size, ctx->rank);
	if (ret) {
		tr_debug("group %u: bad ranks (%d of them, in a world of %d)", id, n, ctx->size);
		return ret;
	}
	g = group_new(ctx, id, &map);
	if (!g)
		return -ENOMEM;
	tr_ctx_lock(ctx);
	if (group_find(ctx, id)) {
		pthread_mutex_unlock(&ctx->lock);
		group_put(g);
		return -EEXIST;
	}
	tr_list_add_tail(&ctx->bcast->groups, &g->link);
	/* Messages of its broadcasts that came first, in their order. */
	for (l = ctx->bcast->grp_early.next; l != &ctx->bcast->grp_early; l = next) {
		struct tr_grp_early *e = tr_container_of(l, struct tr_grp_early, link);

		next = l->next;
		if (e->w.group != id)
			continue;
		tr_list_del(&e->link);
		ctx->bcast->ngrp_early--;
		bnode_in(ctx, e->peer, &e->w);
		free(e);
		next = ctx->bcast->grp_early.next; /* the list may have changed */
	}
	pthread_mutex_unlock(&ctx->lock);
	*group_p = g;
	return 0;
}

int triad_group_destroy(triad_group_t *group)
{
	struct triad_ctx *ctx;

	if (!group)
		return -EINVAL;
	ctx = group->ctx;
	tr_ctx_lock(ctx);
	tr_list_del(&group->link);
	group_put(group); /* its broadcasts under way keep it until they end */
	pthread_mutex_unlock(&ctx->lock);
	return 0;
}

int triad_group_rank(const triad_group_t *group)
{
	return group ? group->map.me : -EINVAL;
}

int triad_group_size(const triad_group_t *group)
{
	return group ? group->map.n : -EINVAL;
}

int triad_req_failed_rank(const triad_req_t *req)
{
	return req && req->kind == TR_REQ_BCAST ? req->failed_rank : -1;
}
