/* Unit tests for the third-party copy engine (lib/proto/copy.[ch]),
 * following docs/spec/third-party-copy.md.
 *
 * Two kinds of tests: single steps, where the test calls one engine and
 * checks every action it returns; and flows, where one engine per
 * simulated rank is driven by a small router that carries messages and
 * RDMA writes between them (each (sender, receiver) pair is one FIFO, like
 * an RC QP), moves real bytes between the ranks' windows, answers
 * descriptor lookups, and delivers completions and 'peer gone' events.  The
 * router runs in FIFO order or, for the randomised test, picks any
 * independent event at random. */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <errno.h>

#include <cmocka.h>

#include "proto/chunk.h"
#include "proto/copy.h"

#define NR 8	   /* ranks at most */
#define NI 256	   /* initiator table per rank */
#define NS 192	   /* source table per rank */
#define NW 4	   /* windows per rank */
#define MAXREQ 512 /* requests per world */

#define RW (TRIAD_WIN_READ | TRIAD_WIN_WRITE)

/* Window ids every rank has (unless a test changes them). */
enum {
	W_SRC = 1,   /* READ, the data to copy */
	W_DST = 2,   /* WRITE, the copies land here */
	W_STALE = 3, /* the NIC (and the published descriptor) allows WRITE, D's
		      * own table no longer does: only D's software can tell */
	W_NONE = 9,  /* exists nowhere */
};

#define SRC_SIZE (64 * 1024)
#define DST_SIZE (1024 * 1024)

static uint64_t rng_state = 0x243f6a8885a308d3ull;

static uint64_t rnd(void)
{
	uint64_t z = (rng_state += 0x9e3779b97f4a7c15ull);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

static uint64_t rnd_below(uint64_t n)
{
	return n ? rnd() % n : 0;
}

static uint8_t pattern(uint32_t rank, uint64_t off)
{
	return (uint8_t)(rank * 131u + off * 7u + (off >> 8) * 13u + 1u);
}

/* ---- the simulated world -------------------------------------------------- */

struct win {
	bool live;
	uint32_t id;
	uint64_t size;
	uint32_t access;     /* what the owner's table says (cfg.win) */
	bool sw_gone;	     /* the owner's table lost it (the MR lingers) */
	uint32_t nic_access; /* what the MR and the published descriptor allow */
	uint64_t nic_size;
	bool notify;
	uint8_t *buf;
};

struct rank {
	uint32_t id;
	struct tr_copy c;
	struct tr_copy_iop iops[NI];
	struct tr_copy_sop sops[NS];
	struct win wins[NW];
	bool dead;
	bool mute; /* alive, but its software ignores every message */
	unsigned notified;
	uint64_t dst_next; /* bump allocator for distinct destination regions */
};

/* What the test knows of one request (the engine's req cookie). */
struct req {
	uint32_t rank; /* I */
	struct tr_copy_hdr order;
	uint64_t op_id;
	uint64_t nchunks;
	int ncomplete;
	uint16_t status;
	uint8_t leg;
	/* router bookkeeping, for the invariants */
	uint64_t posted, reported; /* WRITE actions, chunk reports delivered */
	unsigned inflight_max;
	bool data_sent;
	int64_t fault_chunk; /* this chunk's WRITE fails (REMOTE_ACCESS); -1 none */
	bool qp_broken;	     /* a chunk failed: later WRs of the op are flushed */
	bool lookup_fails;   /* the descriptor service answers UNREACHABLE */
	bool delivered;	     /* I was told COPY_START arrived */
	/* at completion */
	bool done_delivered, done_data_sent;
	uint64_t done_reported;
};

enum item_kind { IT_MSG, IT_WRITE, IT_CQE, IT_LOOKUP, IT_DELIVERED, IT_GONE };

struct item {
	enum item_kind kind;
	uint32_t from, to; /* MSG, WRITE: the channel; others: to = the rank it happens at */
	enum tr_copy_msg msg;
	struct tr_copy_hdr hdr;
	uint64_t chunk, src_off, dst_off, len;
	enum triad_status status;
	uint32_t gone; /* IT_GONE */
	uint64_t carried; /* IT_MSG: COPY_DATA with the data in it (malloc'd data) */
	uint8_t *data;
};

struct world {
	unsigned nr;
	struct rank r[NR];
	struct item *items;
	size_t nitems, capitems;
	struct req reqs[MAXREQ];
	unsigned nreqs;
	bool random;	  /* pick any independent event */
	bool lookup_hold; /* leave IT_LOOKUP items alone (the test answers) */
	uint64_t events;
	uint64_t chunk;
	unsigned inflight;
	uint64_t dst_size; /* of W_DST and W_STALE */
	uint64_t eager;	   /* every engine's cfg.eager */
};

static int win_lookup(void *arg, uint32_t id, struct tr_copy_win *out)
{
	struct rank *r = arg;

	for (unsigned i = 0; i < NW; i++) {
		const struct win *w = &r->wins[i];

		if (w->live && !w->sw_gone && w->id == id) {
			*out = (struct tr_copy_win){ .size = w->size, .access = w->access,
						     .notify = w->notify };
			return 0;
		}
	}
	return -ENOENT;
}

static struct win *win_of(struct rank *r, uint32_t id)
{
	for (unsigned i = 0; i < NW; i++)
		if (r->wins[i].live && r->wins[i].id == id)
			return &r->wins[i];
	return NULL;
}

static void win_set(struct rank *r, unsigned slot, uint32_t id, uint64_t size, uint32_t access,
		    uint32_t nic_access, bool notify)
{
	struct win *w = &r->wins[slot];

	free(w->buf);
	*w = (struct win){ .live = true, .id = id, .size = size, .access = access,
			   .nic_access = nic_access, .nic_size = size, .notify = notify };
	w->buf = calloc(1, size ? size : 1);
	assert_non_null(w->buf);
}

static struct tr_copy_cfg rank_cfg(struct rank *r, unsigned nr, uint64_t chunk, unsigned inflight,
				   uint64_t src_timeout)
{
	return (struct tr_copy_cfg){ .rank = r->id, .nranks = nr, .chunk = chunk,
				     .inflight = inflight, .src_timeout = src_timeout,
				     .iops = r->iops, .niops = NI, .sops = r->sops, .nsops = NS,
				     .win = win_lookup, .win_arg = r };
}

static struct world *world_new_sized(unsigned nr, uint64_t chunk, unsigned inflight,
				     uint64_t src_timeout, uint64_t dst_size)
{
	struct world *w = calloc(1, sizeof(*w));

	assert_non_null(w);
	assert_true(nr <= NR);
	w->nr = nr;
	w->dst_size = dst_size;
	w->chunk = chunk;
	w->inflight = inflight;
	for (unsigned i = 0; i < nr; i++) {
		struct rank *r = &w->r[i];
		struct tr_copy_cfg cfg;

		r->id = i;
		win_set(r, 0, W_SRC, SRC_SIZE, TRIAD_WIN_READ, TRIAD_WIN_READ, false);
		for (uint64_t b = 0; b < SRC_SIZE; b++)
			r->wins[0].buf[b] = pattern(i, b);
		win_set(r, 1, W_DST, dst_size, TRIAD_WIN_WRITE, TRIAD_WIN_WRITE, true);
		win_set(r, 2, W_STALE, dst_size, TRIAD_WIN_READ, RW, false);
		cfg = rank_cfg(r, nr, chunk, inflight, src_timeout);
		assert_int_equal(tr_copy_init(&r->c, &cfg), 0);
	}
	return w;
}

static struct world *world_new(unsigned nr, uint64_t chunk, unsigned inflight,
			       uint64_t src_timeout)
{
	return world_new_sized(nr, chunk, inflight, src_timeout, DST_SIZE);
}

/* Copies of 1..eager bytes carry their data in COPY_DATA from now on. */
static void world_eager(struct world *w, uint64_t eager)
{
	w->eager = eager;
	for (unsigned i = 0; i < w->nr; i++) {
		struct rank *r = &w->r[i];
		struct tr_copy_cfg cfg = rank_cfg(r, w->nr, w->chunk, w->inflight,
						  r->c.cfg.src_timeout);

		assert_int_equal(tr_copy_requests_live(&r->c) + tr_copy_orders_live(&r->c), 0);
		cfg.eager = eager;
		assert_int_equal(tr_copy_init(&r->c, &cfg), 0);
	}
}

/* Would the copy q orders carry its data? */
static bool carries(const struct world *w, const struct req *q)
{
	return q->order.len && q->order.len <= w->eager &&
	       q->order.mode != TR_COPY_TRANSPORT_ACK && q->order.source != q->order.destination;
}

static void world_free(struct world *w)
{
	for (unsigned i = 0; i < NR; i++)
		for (unsigned j = 0; j < NW; j++)
			free(w->r[i].wins[j].buf);
	for (size_t i = 0; i < w->nitems; i++)
		free(w->items[i].data);
	free(w->items);
	free(w);
}

static struct req *req_of(struct world *w, uint32_t initiator, uint64_t op_id)
{
	for (unsigned i = 0; i < w->nreqs; i++)
		if (w->reqs[i].rank == initiator && w->reqs[i].op_id == op_id)
			return &w->reqs[i];
	return NULL;
}

static void push(struct world *w, const struct item *it)
{
	if (w->nitems == w->capitems) {
		w->capitems = w->capitems ? 2 * w->capitems : 256;
		w->items = realloc(w->items, w->capitems * sizeof(*w->items));
		assert_non_null(w->items);
	}
	w->items[w->nitems++] = *it;
}

/* Executes the actions rank r's engine returned. */
static void run_acts(struct world *w, uint32_t r, const struct tr_copy_act *a, int n)
{
	struct rank *rk = &w->r[r];

	assert_true(n >= 0);
	assert_true(n <= TR_COPY_ACTS);
	for (int i = 0; i < n; i++) {
		const struct tr_copy_act *x = &a[i];
		struct req *q = req_of(w, x->hdr.initiator, x->hdr.op_id);
		struct item it = { .from = r, .to = x->to, .hdr = x->hdr };

		switch (x->type) {
		case TR_COPY_ACT_SEND:
			assert_true(x->to != r); /* messages to self stay inside */
			if (x->msg == TR_COPY_DATA && q) {
				assert_true(q->posted == q->nchunks);
				assert_false(q->data_sent);
				q->data_sent = true;
			}
			if (w->r[x->to].dead)
				break; /* lost */
			it.kind = IT_MSG;
			it.msg = x->msg;
			push(w, &it);
			break;
		case TR_COPY_ACT_WRITE:
			assert_true(x->to != r && x->to == x->hdr.destination);
			assert_true(x->hdr.source == r);
			assert_true(x->len > 0 && x->len <= w->chunk);
			assert_true(x->src_off == x->hdr.src_off + x->chunk * w->chunk);
			assert_true(x->dst_off == x->hdr.dst_off + x->chunk * w->chunk);
			if (q) {
				assert_true(x->chunk == q->posted); /* in order */
				q->posted++;
				if (q->posted - q->reported > q->inflight_max)
					q->inflight_max = (unsigned)(q->posted - q->reported);
				assert_true(q->posted - q->reported <= w->inflight);
			}
			it.kind = IT_WRITE;
			it.chunk = x->chunk;
			it.src_off = x->src_off;
			it.dst_off = x->dst_off;
			it.len = x->len;
			push(w, &it);
			break;
		case TR_COPY_ACT_LOCAL: {
			struct win *s = win_of(rk, x->hdr.src_win), *d = win_of(rk, x->hdr.dst_win);

			assert_true(x->hdr.source == r && x->hdr.destination == r);
			assert_non_null(s);
			assert_non_null(d);
			assert_true(tr_range_ok(s->size, x->src_off, x->len));
			assert_true(tr_range_ok(d->size, x->dst_off, x->len));
			memmove(d->buf + x->dst_off, s->buf + x->src_off, x->len);
			break;
		}
		case TR_COPY_ACT_LOOKUP:
			assert_true(x->to == x->hdr.destination && x->to != r);
			it.kind = IT_LOOKUP;
			it.to = r;
			it.gone = x->to;
			push(w, &it);
			break;
		case TR_COPY_ACT_CARRY: {
			struct win *s = win_of(rk, x->hdr.src_win);

			assert_true(x->to != r && x->to == x->hdr.destination);
			assert_true(x->hdr.source == r && x->hdr.mode != TR_COPY_TRANSPORT_ACK);
			assert_true(x->chunk == 0 && x->len == x->hdr.len && x->len > 0 &&
				    x->len <= w->eager);
			assert_true(x->src_off == x->hdr.src_off && x->dst_off == x->hdr.dst_off);
			assert_non_null(s);
			assert_true(tr_range_ok(s->size, x->src_off, x->len));
			if (q) {
				assert_true(q->posted == 0 && !q->data_sent);
				q->nchunks = 1; /* the message is the only chunk */
				q->posted = 1;
				q->data_sent = true;
				if (q->inflight_max < 1)
					q->inflight_max = 1;
			}
			it.kind = IT_MSG;
			it.msg = TR_COPY_DATA;
			it.carried = x->len;
			it.data = malloc(x->len);
			assert_non_null(it.data);
			memcpy(it.data, s->buf + x->src_off, x->len);
			push(w, &it);
			break;
		}
		case TR_COPY_ACT_PLACE: {
			struct win *d = win_of(rk, x->hdr.dst_win);

			assert_true(x->hdr.destination == r && x->len == x->hdr.len);
			assert_non_null(x->data);
			assert_non_null(d);
			assert_true(tr_range_ok(d->size, x->dst_off, x->len));
			memcpy(d->buf + x->dst_off, x->data, x->len);
			break;
		}
		case TR_COPY_ACT_NOTIFY:
			assert_true(x->hdr.destination == r);
			rk->notified++;
			break;
		case TR_COPY_ACT_COMPLETE: {
			struct req *c = x->req;

			assert_non_null(c);
			assert_true(c->rank == r && c->op_id == x->hdr.op_id);
			c->ncomplete++;
			c->status = x->hdr.status;
			c->leg = x->hdr.leg;
			c->done_delivered = c->delivered;
			c->done_data_sent = c->data_sent;
			c->done_reported = c->reported;
			if (c->ncomplete > 1)
				fail_msg("request %llu of rank %u completed twice",
					 (unsigned long long)c->op_id, r);
			/* A relayed success comes after every chunk completed,
			 * unless D answered and then went away (its answer
			 * proves the data landed: COPY_DATA followed it). */
			if (x->hdr.status == TRIAD_S_OK && x->hdr.mode != TR_COPY_DIRECT &&
			    x->hdr.source != x->hdr.destination && c->reported != c->nchunks &&
			    !(x->hdr.mode == TR_COPY_RELAY && w->r[x->hdr.destination].dead))
				fail_msg("op %llu (%s %u->%u->%u) OK after %llu of %llu chunks",
					 (unsigned long long)c->op_id,
					 tr_copy_mode_str(x->hdr.mode), r, x->hdr.source,
					 x->hdr.destination, (unsigned long long)c->reported,
					 (unsigned long long)c->nchunks);
			break;
		}
		default:
			fail_msg("unknown action %d", x->type);
		}
	}
}

/* Issues a request at rank i and runs its actions; returns the record. */
static struct req *issue(struct world *w, uint32_t i, uint32_t s, uint32_t d, uint32_t sw,
			 uint64_t so, uint32_t dw, uint64_t dof, uint64_t len, unsigned mode,
			 uint64_t deadline)
{
	struct tr_copy_act a[TR_COPY_ACTS];
	struct req *q;
	int n;

	assert_true(w->nreqs < MAXREQ);
	q = &w->reqs[w->nreqs++];
	*q = (struct req){ .rank = i, .fault_chunk = -1 };
	q->order = (struct tr_copy_hdr){ .source = s, .destination = d, .src_win = sw,
					 .src_off = so, .dst_win = dw, .dst_off = dof,
					 .len = len, .mode = (uint8_t)mode };
	q->nchunks = tr_chunk_count(len, w->chunk);
	n = tr_copy_request(&w->r[i].c, &q->order, q, deadline, &q->op_id, a, TR_COPY_ACTS);
	assert_true(n >= 0);
	run_acts(w, i, a, n);
	return q;
}

/* A distinct region of d's W_DST for one copy. */
static uint64_t dst_region(struct world *w, uint32_t d, uint64_t len)
{
	uint64_t off = w->r[d].dst_next;

	w->r[d].dst_next += len + 64;
	assert_true(w->r[d].dst_next <= w->dst_size);
	return off;
}

static void deliver_gone(struct world *w, uint32_t at, uint32_t gone)
{
	struct tr_copy_act a[TR_COPY_ACTS];
	int n, calls = 0;

	while ((n = tr_copy_peer_gone(&w->r[at].c, gone, a, TR_COPY_ACTS)) > 0) {
		run_acts(w, at, a, n);
		assert_true(++calls < 100);
	}
	assert_int_equal(n, 0);
}

static void tick(struct world *w, uint32_t at, uint64_t now)
{
	struct tr_copy_act a[TR_COPY_ACTS];
	int n, calls = 0;

	while ((n = tr_copy_tick(&w->r[at].c, now, a, TR_COPY_ACTS)) > 0) {
		run_acts(w, at, a, n);
		assert_true(++calls < 100);
	}
	assert_int_equal(n, 0);
}

static void answer_lookup(struct world *w, const struct item *it)
{
	struct tr_copy_act a[TR_COPY_ACTS];
	struct req *q = req_of(w, it->hdr.initiator, it->hdr.op_id);
	struct rank *d = &w->r[it->gone];
	struct win *dw = win_of(d, it->hdr.dst_win);
	struct tr_copy_win desc = { 0 };
	enum triad_status st = TRIAD_S_OK;
	int n;

	if (d->dead || (q && q->lookup_fails))
		st = TRIAD_S_UNREACHABLE;
	else if (!dw)
		st = TRIAD_S_NO_WINDOW;
	else
		desc = (struct tr_copy_win){ .size = dw->nic_size, .access = dw->nic_access };
	n = tr_copy_desc(&w->r[it->to].c, it->hdr.initiator, it->hdr.op_id, st,
			 st == TRIAD_S_OK ? &desc : NULL, a, TR_COPY_ACTS);
	run_acts(w, it->to, a, n);
}

static void drop_lookups(struct world *w)
{
	size_t j = 0;

	for (size_t i = 0; i < w->nitems; i++)
		if (w->items[i].kind != IT_LOOKUP)
			w->items[j++] = w->items[i];
	w->nitems = j;
}

/* Kills rank x: everything in flight from or to it is lost; every other
 * rank learns it later (an independent event each). */
static void kill_rank(struct world *w, uint32_t x)
{
	size_t j = 0;

	w->r[x].dead = true;
	for (size_t i = 0; i < w->nitems; i++) {
		struct item *it = &w->items[i];
		bool chan = it->kind == IT_MSG || it->kind == IT_WRITE;

		if ((chan && (it->from == x || it->to == x)) || (!chan && it->to == x)) {
			free(it->data);
			continue;
		}
		w->items[j++] = *it;
	}
	w->nitems = j;
	for (uint32_t r = 0; r < w->nr; r++) {
		struct item it = { .kind = IT_GONE, .to = r, .gone = x };

		if (!w->r[r].dead)
			push(w, &it);
	}
}

/* The index of the next event: the oldest, or in random mode any item
 * that is the oldest of its channel.  Channels: messages and writes from
 * one rank to another (one RC QP), and the completions of that QP's
 * writes (in order, as on a CQ: a failed write's error comes before the
 * flushes of the ones after it). */
static size_t pick(struct world *w)
{
	bool seen[NR][NR] = { { false } }, seen_cq[NR][NR] = { { false } };
	size_t cand = 0, chosen = SIZE_MAX;

	for (size_t i = 0; i < w->nitems; i++) {
		const struct item *it = &w->items[i];

		if (w->lookup_hold && it->kind == IT_LOOKUP)
			continue;
		if (it->kind == IT_MSG || it->kind == IT_WRITE) {
			if (seen[it->from][it->to])
				continue;
			seen[it->from][it->to] = true;
		}
		if (it->kind == IT_CQE) {
			if (seen_cq[it->to][it->from])
				continue;
			seen_cq[it->to][it->from] = true;
		}
		if (!w->random)
			return i;
		/* reservoir sampling over the eligible items */
		if (rnd_below(++cand) == 0)
			chosen = i;
	}
	return chosen;
}

/* Runs one event; false when there is none. */
static bool step(struct world *w)
{
	struct tr_copy_act a[TR_COPY_ACTS];
	size_t i = pick(w);
	struct item it;
	struct req *q;
	int n;

	if (i == SIZE_MAX)
		return false;
	it = w->items[i];
	memmove(&w->items[i], &w->items[i + 1], (w->nitems - i - 1) * sizeof(*w->items));
	w->nitems--;
	w->events++;
	q = req_of(w, it.hdr.initiator, it.hdr.op_id);

	switch (it.kind) {
	case IT_MSG:
		if (it.msg == TR_COPY_START) { /* the send completes at I */
			struct item dl = { .kind = IT_DELIVERED, .to = it.from, .hdr = it.hdr };

			push(w, &dl);
		}
		if (it.carried) { /* its send completion is chunk 0's */
			struct item cqe = { .kind = IT_CQE, .to = it.from, .from = it.to,
					    .hdr = it.hdr, .status = TRIAD_S_OK };

			if (q && (q->qp_broken || q->fault_chunk == 0)) {
				cqe.status = TRIAD_S_TRANSPORT; /* lost with the QP */
				q->qp_broken = true;
			}
			push(w, &cqe);
			if (cqe.status != TRIAD_S_OK || w->r[it.to].mute) {
				free(it.data);
				return true;
			}
		} else if ((it.msg == TR_COPY_DATA && q && q->qp_broken) || w->r[it.to].mute) {
			return true; /* flushed with the QP, or ignored */
		}
		n = tr_copy_recv(&w->r[it.to].c, it.msg, it.from, &it.hdr, it.data, it.carried, a,
				 TR_COPY_ACTS);
		run_acts(w, it.to, a, n);
		free(it.data);
		break;
	case IT_WRITE: {
		struct item cqe = { .kind = IT_CQE, .to = it.from, .from = it.to, .hdr = it.hdr,
				    .chunk = it.chunk, .status = TRIAD_S_OK };

		if (w->r[it.to].dead || (q && q->qp_broken)) {
			cqe.status = TRIAD_S_TRANSPORT; /* retries exceeded, or flushed */
		} else if (q && (int64_t)it.chunk == q->fault_chunk) {
			cqe.status = TRIAD_S_REMOTE_ACCESS;
			q->qp_broken = true;
		} else {
			struct win *s = win_of(&w->r[it.from], it.hdr.src_win);
			struct win *d = win_of(&w->r[it.to], it.hdr.dst_win);

			assert_non_null(s);
			if (d && (d->nic_access & TRIAD_WIN_WRITE) &&
			    tr_range_ok(d->nic_size, it.dst_off, it.len))
				memcpy(d->buf + it.dst_off, s->buf + it.src_off, it.len);
			else
				cqe.status = TRIAD_S_REMOTE_ACCESS;
		}
		push(w, &cqe);
		break;
	}
	case IT_CQE:
		if (q)
			q->reported++;
		n = tr_copy_chunk_done(&w->r[it.to].c, it.hdr.initiator, it.hdr.op_id, it.chunk,
				       it.status, a, TR_COPY_ACTS);
		run_acts(w, it.to, a, n);
		break;
	case IT_LOOKUP:
		answer_lookup(w, &it);
		break;
	case IT_DELIVERED:
		if (tr_copy_start_delivered(&w->r[it.to].c, it.hdr.op_id) == 0 && q)
			q->delivered = true;
		break;
	case IT_GONE:
		deliver_gone(w, it.to, it.gone);
		break;
	}
	return true;
}

static void run(struct world *w)
{
	while (step(w))
		assert_true(w->events < 50000000);
}

/* Every live engine is idle: no request, no order, nothing lost. */
static void check_idle(struct world *w)
{
	for (unsigned i = 0; i < w->nr; i++) {
		const struct rank *r = &w->r[i];

		if (r->dead)
			continue;
		if (tr_copy_requests_live(&r->c) || tr_copy_orders_live(&r->c))
			fail_msg("rank %u: %u requests, %u orders still live", i,
				 tr_copy_requests_live(&r->c), tr_copy_orders_live(&r->c));
		assert_true(tr_copy_stats(&r->c)->overflow == 0);
	}
}

static uint64_t sum_stat(struct world *w, size_t field)
{
	uint64_t sum = 0;

	for (unsigned i = 0; i < w->nr; i++)
		sum += *(const uint64_t *)((const char *)tr_copy_stats(&w->r[i].c) + field);
	return sum;
}

#define STAT(w, f) sum_stat(w, offsetof(struct tr_copy_stats, f))

static void check_data(struct world *w, const struct req *q)
{
	struct win *s = win_of(&w->r[q->order.source], q->order.src_win);
	struct win *d = win_of(&w->r[q->order.destination], q->order.dst_win);

	assert_non_null(s);
	assert_non_null(d);
	if (memcmp(d->buf + q->order.dst_off, s->buf + q->order.src_off, q->order.len))
		fail_msg("copy %llu: data differs", (unsigned long long)q->op_id);
}

static void check_done(const struct req *q, enum triad_status st, enum tr_copy_leg leg)
{
	if (q->ncomplete != 1 || q->status != st || q->leg != leg)
		fail_msg("op %llu (%s %u->%u->%u): %d completions, %u/%s, want %u/%s",
			 (unsigned long long)q->op_id, tr_copy_mode_str(q->order.mode), q->rank,
			 q->order.source, q->order.destination, q->ncomplete, q->status,
			 tr_copy_leg_str(q->leg), st, tr_copy_leg_str(leg));
}

static void check_ok(struct world *w, const struct req *q)
{
	check_done(q, TRIAD_S_OK, TR_COPY_LEG_NONE);
	check_data(w, q);
}

/* ---- single steps ------------------------------------------------------------ */

struct acts {
	struct tr_copy_act a[TR_COPY_ACTS];
	int n;
};

static struct tr_copy_hdr order_of(uint32_t s, uint32_t d, uint64_t len, unsigned mode)
{
	return (struct tr_copy_hdr){ .source = s, .destination = d, .src_win = W_SRC,
				     .src_off = 100, .dst_win = W_DST, .dst_off = 200,
				     .len = len, .mode = (uint8_t)mode };
}

static void expect_send(const struct tr_copy_act *a, enum tr_copy_msg msg, uint32_t to,
			uint64_t op_id, enum triad_status st, enum tr_copy_leg leg)
{
	if (a->type != TR_COPY_ACT_SEND || a->msg != msg || a->to != to ||
	    a->hdr.op_id != op_id || a->hdr.status != st || a->hdr.leg != leg)
		fail_msg("got %s %s to %u op %llu %u/%s, want send %s to %u op %llu %u/%s",
			 tr_copy_act_str(a->type), tr_copy_msg_str(a->msg), a->to,
			 (unsigned long long)a->hdr.op_id, a->hdr.status,
			 tr_copy_leg_str(a->hdr.leg), tr_copy_msg_str(msg), to,
			 (unsigned long long)op_id, st, tr_copy_leg_str(leg));
}

static void expect_complete(const struct tr_copy_act *a, void *req, enum triad_status st,
			    enum tr_copy_leg leg)
{
	if (a->type != TR_COPY_ACT_COMPLETE || a->req != req || a->hdr.status != st ||
	    a->hdr.leg != leg)
		fail_msg("got %s %u/%s, want complete %u/%s", tr_copy_act_str(a->type),
			 a->hdr.status, tr_copy_leg_str(a->hdr.leg), st, tr_copy_leg_str(leg));
}

static void expect_write(const struct tr_copy_act *a, uint32_t to, uint64_t chunk,
			 uint64_t src_off, uint64_t dst_off, uint64_t len)
{
	if (a->type != TR_COPY_ACT_WRITE || a->to != to || a->chunk != chunk ||
	    a->src_off != src_off || a->dst_off != dst_off || a->len != len)
		fail_msg("got %s to %u chunk %llu %llu->%llu len %llu, want write chunk %llu",
			 tr_copy_act_str(a->type), a->to, (unsigned long long)a->chunk,
			 (unsigned long long)a->src_off, (unsigned long long)a->dst_off,
			 (unsigned long long)a->len, (unsigned long long)chunk);
}

static struct tr_copy_sop *sop_of(struct rank *r, uint32_t initiator, uint64_t op_id)
{
	for (unsigned i = 0; i < NS; i++)
		if (r->sops[i].state != TR_COPY_S_FREE && r->sops[i].hdr.initiator == initiator &&
		    r->sops[i].hdr.op_id == op_id)
			return &r->sops[i];
	return NULL;
}

static struct tr_copy_iop *iop_of(struct rank *r, uint64_t op_id)
{
	for (unsigned i = 0; i < NI; i++)
		if (r->iops[i].state != TR_COPY_I_FREE && r->iops[i].hdr.op_id == op_id)
			return &r->iops[i];
	return NULL;
}

static enum tr_copy_sstate sstate(struct rank *r, uint32_t initiator, uint64_t op_id)
{
	struct tr_copy_sop *e = sop_of(r, initiator, op_id);

	return e ? (enum tr_copy_sstate)e->state : TR_COPY_S_FREE;
}

static enum tr_copy_istate istate(struct rank *r, uint64_t op_id)
{
	struct tr_copy_iop *e = iop_of(r, op_id);

	return e ? (enum tr_copy_istate)e->state : TR_COPY_I_FREE;
}

#define REQUEST(rk, ord, req, dl, op_p, x) \
	((x)->n = tr_copy_request(&(rk)->c, (ord), (req), (dl), (op_p), (x)->a, TR_COPY_ACTS))
#define RECV(rk, msg, from, h, x) \
	((x)->n = tr_copy_recv(&(rk)->c, (msg), (from), (h), NULL, 0, (x)->a, TR_COPY_ACTS))
#define RECV_CARRIED(rk, from, h, carried, x) \
	((x)->n = tr_copy_recv(&(rk)->c, TR_COPY_DATA, (from), (h), placed_bytes, (carried), (x)->a, \
			       TR_COPY_ACTS))
#define DESC(rk, i, op, st, d, x) \
	((x)->n = tr_copy_desc(&(rk)->c, (i), (op), (st), (d), (x)->a, TR_COPY_ACTS))
#define CHUNK(rk, i, op, k, st, x) \
	((x)->n = tr_copy_chunk_done(&(rk)->c, (i), (op), (k), (st), (x)->a, TR_COPY_ACTS))
#define REFUSE(rk, i, op, k, st, x) \
	((x)->n = tr_copy_chunk_refused(&(rk)->c, (i), (op), (k), (st), (x)->a, TR_COPY_ACTS))
#define GONE(rk, g, x) ((x)->n = tr_copy_peer_gone(&(rk)->c, (g), (x)->a, TR_COPY_ACTS))
#define TICK(rk, now, x) ((x)->n = tr_copy_tick(&(rk)->c, (now), (x)->a, TR_COPY_ACTS))

static const struct tr_copy_win dst_desc = { .size = DST_SIZE, .access = TRIAD_WIN_WRITE };

/* Drives I=0 -> S=1 -> D=2 by hand up to the point where S has its
 * descriptor and has posted the first chunks: returns op id, x holds S's
 * actions after the descriptor. */
static uint64_t by_hand_to_write(struct world *w, uint64_t len, unsigned mode, void *req,
				 struct acts *x)
{
	struct tr_copy_hdr o = order_of(1, 2, len, mode), start;
	uint64_t op;

	REQUEST(&w->r[0], &o, req, TR_COPY_NO_DEADLINE, &op, x);
	assert_int_equal(x->n, 1);
	expect_send(&x->a[0], TR_COPY_START, 1, op, TRIAD_S_OK, TR_COPY_LEG_NONE);
	assert_int_equal(istate(&w->r[0], op), TR_COPY_I_ORDERED);
	start = x->a[0].hdr;
	assert_int_equal(start.initiator, 0);
	assert_int_equal(start.len, len);
	assert_int_equal(start.mode, mode);

	RECV(&w->r[1], TR_COPY_START, 0, &start, x);
	assert_int_equal(x->n, 1);
	assert_int_equal(x->a[0].type, TR_COPY_ACT_LOOKUP);
	assert_int_equal(x->a[0].to, 2);
	assert_int_equal(x->a[0].hdr.dst_win, W_DST);
	assert_int_equal(sstate(&w->r[1], 0, op), TR_COPY_S_DESC);
	assert_int_equal(tr_copy_start_delivered(&w->r[0].c, op), 0);
	assert_int_equal(istate(&w->r[0], op), TR_COPY_I_DELIVERED);

	DESC(&w->r[1], 0, op, TRIAD_S_OK, &dst_desc, x);
	return op;
}

/* RELAY: every message and action of one chunked copy, step by step. */
static void test_relay_steps(void **state)
{
	struct world *w = world_new(3, 1000, 2, 0);
	struct acts x;
	int req;
	uint64_t op = by_hand_to_write(w, 2500, TR_COPY_RELAY, &req, &x);
	struct tr_copy_hdr data, resp, done;

	(void)state;
	/* 3 chunks (1000, 1000, 500), 2 in flight. */
	assert_int_equal(x.n, 2);
	expect_write(&x.a[0], 2, 0, 100, 200, 1000);
	expect_write(&x.a[1], 2, 1, 1100, 1200, 1000);
	assert_int_equal(sstate(&w->r[1], 0, op), TR_COPY_S_WRITE);

	CHUNK(&w->r[1], 0, op, 0, TRIAD_S_OK, &x); /* frees a slot: the last chunk, then DATA */
	assert_int_equal(x.n, 2);
	expect_write(&x.a[0], 2, 2, 2100, 2200, 500);
	expect_send(&x.a[1], TR_COPY_DATA, 2, op, TRIAD_S_OK, TR_COPY_LEG_NONE);
	data = x.a[1].hdr;

	CHUNK(&w->r[1], 0, op, 2, TRIAD_S_OK, &x); /* out of order is fine */
	assert_int_equal(x.n, 0);
	CHUNK(&w->r[1], 0, op, 1, TRIAD_S_OK, &x);
	assert_int_equal(x.n, 0);
	assert_int_equal(sstate(&w->r[1], 0, op), TR_COPY_S_RESP);

	RECV(&w->r[2], TR_COPY_DATA, 1, &data, &x); /* D: notify (W_DST asks), answer S */
	assert_int_equal(x.n, 2);
	assert_int_equal(x.a[0].type, TR_COPY_ACT_NOTIFY);
	assert_int_equal(x.a[0].dst_off, 200);
	assert_int_equal(x.a[0].len, 2500);
	assert_int_equal(x.a[0].hdr.initiator, 0);
	expect_send(&x.a[1], TR_COPY_RESP, 1, op, TRIAD_S_OK, TR_COPY_LEG_NONE);
	resp = x.a[1].hdr;
	assert_int_equal(tr_copy_orders_live(&w->r[2].c), 0); /* stateless */

	RECV(&w->r[1], TR_COPY_RESP, 2, &resp, &x);
	assert_int_equal(x.n, 1);
	expect_send(&x.a[0], TR_COPY_DONE, 0, op, TRIAD_S_OK, TR_COPY_LEG_NONE);
	done = x.a[0].hdr;
	assert_int_equal(tr_copy_orders_live(&w->r[1].c), 0);

	RECV(&w->r[0], TR_COPY_DONE, 1, &done, &x);
	assert_int_equal(x.n, 1);
	expect_complete(&x.a[0], &req, TRIAD_S_OK, TR_COPY_LEG_NONE);
	assert_int_equal(x.a[0].hdr.op_id, op);
	assert_int_equal(tr_copy_requests_live(&w->r[0].c), 0);

	/* Late copies of any of them are dropped and counted. */
	RECV(&w->r[0], TR_COPY_DONE, 1, &done, &x);
	RECV(&w->r[1], TR_COPY_RESP, 2, &resp, &x);
	CHUNK(&w->r[1], 0, op, 1, TRIAD_S_OK, &x);
	assert_int_equal(x.n, 0);
	assert_true(tr_copy_stats(&w->r[0].c)->unknown == 1);
	assert_true(tr_copy_stats(&w->r[1].c)->unknown == 2);
	assert_true(tr_copy_stats(&w->r[0].c)->completed == 1);
	assert_true(tr_copy_stats(&w->r[1].c)->chunks == 3);
	assert_true(tr_copy_stats(&w->r[2].c)->answered == 1);
	world_free(w);
}

/* The chunk window slides from the lowest chunk not reported: reports out
 * of order free no room until that one comes. */
static void test_window_out_of_order(void **state)
{
	struct world *w = world_new(3, 10, 3, 0);
	struct acts x;
	int req;
	uint64_t op = by_hand_to_write(w, 100, TR_COPY_TRANSPORT_ACK, &req, &x);

	(void)state;
	assert_int_equal(x.n, 3);
	CHUNK(&w->r[1], 0, op, 2, TRIAD_S_OK, &x);
	CHUNK(&w->r[1], 0, op, 1, TRIAD_S_OK, &x);
	assert_int_equal(x.n, 0);
	CHUNK(&w->r[1], 0, op, 0, TRIAD_S_OK, &x); /* slides by 3 */
	assert_int_equal(x.n, 3);
	expect_write(&x.a[0], 2, 3, 130, 230, 10);
	expect_write(&x.a[2], 2, 5, 150, 250, 10);
	for (uint64_t k = 5; k >= 3; k--) {
		CHUNK(&w->r[1], 0, op, k, TRIAD_S_OK, &x);
		assert_int_equal(x.n, k == 3 ? 3 : 0);
	}
	CHUNK(&w->r[1], 0, op, 6, TRIAD_S_OK, &x);
	assert_int_equal(x.n, 1);
	expect_write(&x.a[0], 2, 9, 190, 290, 10);
	CHUNK(&w->r[1], 0, op, 8, TRIAD_S_OK, &x);
	CHUNK(&w->r[1], 0, op, 7, TRIAD_S_OK, &x);
	assert_int_equal(x.n, 0);
	CHUNK(&w->r[1], 0, op, 9, TRIAD_S_OK, &x);
	assert_int_equal(x.n, 1);
	expect_send(&x.a[0], TR_COPY_DONE, 0, op, TRIAD_S_OK, TR_COPY_LEG_NONE);
	assert_true(tr_copy_stats(&w->r[1].c)->chunks == 10);
	world_free(w);
}

/* RELAY: D's answer may overtake the completions of the chunks: S relays
 * only when both are in. */
static void test_relay_resp_before_chunks(void **state)
{
	struct world *w = world_new(3, 1000, 4, 0);
	struct acts x;
	int req;
	uint64_t op = by_hand_to_write(w, 2000, TR_COPY_RELAY, &req, &x);
	struct tr_copy_hdr resp;

	(void)state;
	assert_int_equal(x.n, 3); /* two chunks and DATA at once */
	expect_send(&x.a[2], TR_COPY_DATA, 2, op, TRIAD_S_OK, TR_COPY_LEG_NONE);
	RECV(&w->r[2], TR_COPY_DATA, 1, &x.a[2].hdr, &x);
	resp = x.a[1].hdr;
	RECV(&w->r[1], TR_COPY_RESP, 2, &resp, &x);
	assert_int_equal(x.n, 0);
	assert_int_equal(sstate(&w->r[1], 0, op), TR_COPY_S_WRITE);
	RECV(&w->r[1], TR_COPY_RESP, 2, &resp, &x); /* twice: a duplicate */
	assert_int_equal(x.n, 0);
	assert_true(tr_copy_stats(&w->r[1].c)->duplicate == 1);
	CHUNK(&w->r[1], 0, op, 1, TRIAD_S_OK, &x);
	assert_int_equal(x.n, 0);
	CHUNK(&w->r[1], 0, op, 0, TRIAD_S_OK, &x);
	assert_int_equal(x.n, 1);
	expect_send(&x.a[0], TR_COPY_DONE, 0, op, TRIAD_S_OK, TR_COPY_LEG_NONE);
	world_free(w);
}

/* DIRECT: D answers I; S says nothing after the data. */
static void test_direct_steps(void **state)
{
	struct world *w = world_new(3, 1000, 4, 0);
	struct acts x;
	int req;
	uint64_t op = by_hand_to_write(w, 1500, TR_COPY_DIRECT, &req, &x);
	struct tr_copy_hdr resp;

	(void)state;
	assert_int_equal(x.n, 3);
	expect_write(&x.a[1], 2, 1, 1100, 1200, 500);
	expect_send(&x.a[2], TR_COPY_DATA, 2, op, TRIAD_S_OK, TR_COPY_LEG_NONE);
	RECV(&w->r[2], TR_COPY_DATA, 1, &x.a[2].hdr, &x);
	assert_int_equal(x.n, 2);
	expect_send(&x.a[1], TR_COPY_RESP, 0, op, TRIAD_S_OK, TR_COPY_LEG_NONE);
	resp = x.a[1].hdr;
	/* S's role ends silently with its completions, before or after. */
	CHUNK(&w->r[1], 0, op, 0, TRIAD_S_OK, &x);
	assert_int_equal(x.n, 0);
	RECV(&w->r[0], TR_COPY_RESP, 2, &resp, &x);
	assert_int_equal(x.n, 1);
	expect_complete(&x.a[0], &req, TRIAD_S_OK, TR_COPY_LEG_NONE);
	CHUNK(&w->r[1], 0, op, 1, TRIAD_S_OK, &x);
	assert_int_equal(x.n, 0);
	assert_int_equal(tr_copy_orders_live(&w->r[1].c), 0);
	/* A COPY_RESP in DIRECT mode is not for S, nor from S for I. */
	RECV(&w->r[0], TR_COPY_RESP, 1, &resp, &x);
	assert_true(tr_copy_stats(&w->r[0].c)->unknown == 1);
	world_free(w);
}

/* TRANSPORT_ACK: no COPY_DATA; S reports once its writes completed. */
static void test_transport_ack_steps(void **state)
{
	struct world *w = world_new(3, 1000, 1, 0);
	struct acts x;
	int req;
	uint64_t op = by_hand_to_write(w, 2000, TR_COPY_TRANSPORT_ACK, &req, &x);

	(void)state;
	assert_int_equal(x.n, 1); /* one in flight */
	expect_write(&x.a[0], 2, 0, 100, 200, 1000);
	CHUNK(&w->r[1], 0, op, 0, TRIAD_S_OK, &x);
	assert_int_equal(x.n, 1);
	expect_write(&x.a[0], 2, 1, 1100, 1200, 1000);
	CHUNK(&w->r[1], 0, op, 1, TRIAD_S_OK, &x);
	assert_int_equal(x.n, 1);
	expect_send(&x.a[0], TR_COPY_DONE, 0, op, TRIAD_S_OK, TR_COPY_LEG_NONE);
	RECV(&w->r[0], TR_COPY_DONE, 1, &x.a[0].hdr, &x);
	assert_int_equal(x.n, 1);
	expect_complete(&x.a[0], &req, TRIAD_S_OK, TR_COPY_LEG_NONE);
	world_free(w);
}

/* What the single-step tests' carried COPY_DATAs carry. */
static const uint8_t placed_bytes[1000];

/* Rank 2's slots hold 50 bytes of data, the others' any. */
static uint64_t carry_max_2(void *arg, uint32_t rank)
{
	(void)arg;
	return rank == 2 ? 50 : UINT64_MAX;
}

/* Carried data, RELAY: no descriptor, no WRITE; COPY_DATA carries the bytes,
 * D places them before it answers, and the message's send completion is
 * chunk 0. */
static void test_carried_steps(void **state)
{
	struct world *w = world_new(3, 1000, 4, 0);
	struct tr_copy_hdr o = order_of(1, 2, 100, TR_COPY_RELAY), start, data, resp;
	const struct tr_copy_stats *s2 = tr_copy_stats(&w->r[2].c);
	struct acts x;
	uint64_t op;
	int req;

	(void)state;
	world_eager(w, 1000);
	REQUEST(&w->r[0], &o, &req, TR_COPY_NO_DEADLINE, &op, &x);
	start = x.a[0].hdr;
	RECV(&w->r[1], TR_COPY_START, 0, &start, &x);
	assert_int_equal(x.n, 1);
	assert_int_equal(x.a[0].type, TR_COPY_ACT_CARRY);
	assert_int_equal(x.a[0].to, 2);
	assert_int_equal(x.a[0].chunk, 0);
	assert_int_equal(x.a[0].src_off, 100);
	assert_int_equal(x.a[0].dst_off, 200);
	assert_int_equal(x.a[0].len, 100);
	assert_int_equal(sstate(&w->r[1], 0, op), TR_COPY_S_WRITE);
	assert_true(tr_copy_stats(&w->r[1].c)->carried == 1);
	assert_true(tr_copy_stats(&w->r[1].c)->chunks == 0);
	data = x.a[0].hdr;

	/* D: the count must be the copy's length, and only COPY_DATA carries. */
	RECV_CARRIED(&w->r[2], 1, &data, 99, &x);
	assert_int_equal(x.n, 0);
	x.n = tr_copy_recv(&w->r[2].c, TR_COPY_START, 0, &start, placed_bytes, 100, x.a,
			   TR_COPY_ACTS);
	assert_int_equal(x.n, 0);
	assert_true(s2->inconsistent == 2 && s2->answered == 0);
	RECV_CARRIED(&w->r[2], 1, &data, 100, &x); /* place, notify, answer */
	assert_int_equal(x.n, 3);
	assert_int_equal(x.a[0].type, TR_COPY_ACT_PLACE);
	assert_int_equal(x.a[0].dst_off, 200);
	assert_int_equal(x.a[0].len, 100);
	assert_int_equal(x.a[1].type, TR_COPY_ACT_NOTIFY);
	expect_send(&x.a[2], TR_COPY_RESP, 1, op, TRIAD_S_OK, TR_COPY_LEG_NONE);
	resp = x.a[2].hdr;

	/* The answer may come before the send completion: S waits for both. */
	RECV(&w->r[1], TR_COPY_RESP, 2, &resp, &x);
	assert_int_equal(x.n, 0);
	CHUNK(&w->r[1], 0, op, 0, TRIAD_S_OK, &x);
	assert_int_equal(x.n, 1);
	expect_send(&x.a[0], TR_COPY_DONE, 0, op, TRIAD_S_OK, TR_COPY_LEG_NONE);
	RECV(&w->r[0], TR_COPY_DONE, 1, &x.a[0].hdr, &x);
	expect_complete(&x.a[0], &req, TRIAD_S_OK, TR_COPY_LEG_NONE);
	assert_int_equal(tr_copy_orders_live(&w->r[1].c), 0);

	/* D's window refuses the range: no PLACE, the error on leg AT_DST. */
	o = order_of(1, 2, 100, TR_COPY_DIRECT);
	o.dst_off = DST_SIZE - 50;
	REQUEST(&w->r[0], &o, &req, TR_COPY_NO_DEADLINE, &op, &x);
	RECV(&w->r[1], TR_COPY_START, 0, &x.a[0].hdr, &x);
	assert_int_equal(x.a[0].type, TR_COPY_ACT_CARRY);
	RECV_CARRIED(&w->r[2], 1, &x.a[0].hdr, 100, &x);
	assert_int_equal(x.n, 1);
	expect_send(&x.a[0], TR_COPY_RESP, 0, op, TRIAD_S_OUT_OF_BOUNDS, TR_COPY_LEG_AT_DST);
	RECV(&w->r[0], TR_COPY_RESP, 2, &x.a[0].hdr, &x);
	expect_complete(&x.a[0], &req, TRIAD_S_OUT_OF_BOUNDS, TR_COPY_LEG_AT_DST);
	CHUNK(&w->r[1], 0, op, 0, TRIAD_S_OK, &x); /* DIRECT: S ends silently */
	assert_int_equal(x.n, 0);
	assert_int_equal(tr_copy_orders_live(&w->r[1].c), 0);

	/* The message is lost: S reports the send's error on leg S_D. */
	o = order_of(1, 2, 1000, TR_COPY_RELAY);
	REQUEST(&w->r[0], &o, &req, TR_COPY_NO_DEADLINE, &op, &x);
	RECV(&w->r[1], TR_COPY_START, 0, &x.a[0].hdr, &x);
	assert_int_equal(x.a[0].type, TR_COPY_ACT_CARRY);
	CHUNK(&w->r[1], 0, op, 0, TRIAD_S_TRANSPORT, &x);
	assert_int_equal(x.n, 1);
	expect_send(&x.a[0], TR_COPY_DONE, 0, op, TRIAD_S_TRANSPORT, TR_COPY_LEG_S_D);

	/* Not carried: longer than eager, empty, TRANSPORT_ACK (D's software
	 * takes no part), or S == D (a local copy). */
	for (int i = 0; i < 4; i++) {
		uint64_t lens[] = { 1001, 0, 10, 10 };
		unsigned m = i == 2 ? TR_COPY_TRANSPORT_ACK : TR_COPY_RELAY;

		o = order_of(1, i == 3 ? 1 : 2, lens[i], m);
		REQUEST(&w->r[0], &o, &req, TR_COPY_NO_DEADLINE, &op, &x);
		RECV(&w->r[1], TR_COPY_START, 0, &x.a[0].hdr, &x);
		assert_true(x.n >= 1);
		assert_int_equal(x.a[0].type, i == 3 ? TR_COPY_ACT_LOCAL : TR_COPY_ACT_LOOKUP);
	}
	assert_true(tr_copy_stats(&w->r[1].c)->carried == 3);

	/* What the destination's slots hold bounds it too (cfg.carry_max). */
	{
		struct tr_copy_cfg cfg = rank_cfg(&w->r[1], 3, 1000, 4, 0);

		cfg.eager = 1000;
		cfg.carry_max = carry_max_2;
		assert_int_equal(tr_copy_init(&w->r[1].c, &cfg), 0);
	}
	for (int i = 0; i < 2; i++) {
		o = order_of(1, 2, i ? 50 : 51, TR_COPY_RELAY);
		REQUEST(&w->r[0], &o, &req, TR_COPY_NO_DEADLINE, &op, &x);
		RECV(&w->r[1], TR_COPY_START, 0, &x.a[0].hdr, &x);
		assert_int_equal(x.a[0].type, i ? TR_COPY_ACT_CARRY : TR_COPY_ACT_LOOKUP);
	}
	world_free(w);
}

/* ---- flows through the router ------------------------------------------------- */

static const unsigned modes[] = { TR_COPY_RELAY, TR_COPY_DIRECT, TR_COPY_TRANSPORT_ACK };
#define NMODES (sizeof(modes) / sizeof(modes[0]))

static void test_flows_ok(void **state)
{
	(void)state;
	for (size_t m = 0; m < 2 * NMODES; m++) {
		struct world *w = world_new(3, 4096, 4, 0);
		uint64_t lens[] = { 0, 1, 4095, 4096, 4097, 40000 }, carried = 0;

		if (m >= NMODES) /* the same with copies of up to 4096 bytes carried */
			world_eager(w, 4096);
		for (size_t i = 0; i < sizeof(lens) / sizeof(lens[0]); i++) {
			uint64_t len = lens[i], so = rnd_below(SRC_SIZE - len);
			struct req *q = issue(w, 0, 1, 2, W_SRC, so, W_DST,
					      dst_region(w, 2, len), len, modes[m % NMODES],
					      TR_COPY_NO_DEADLINE);
			carried += carries(w, q);
			run(w);
			check_ok(w, q);
		}
		check_idle(w);
		/* relay and direct carry 1, 4095 and 4096 bytes */
		assert_int_equal(STAT(w, carried), carried);
		assert_int_equal(carried, m >= NMODES && modes[m % NMODES] != TR_COPY_TRANSPORT_ACK
						  ? 3 : 0);
		/* W_DST asks to be told, except that D takes no part in TRANSPORT_ACK. */
		assert_int_equal(w->r[2].notified,
				 modes[m % NMODES] == TR_COPY_TRANSPORT_ACK ? 0 : 6);
		assert_true(STAT(w, unknown) + STAT(w, duplicate) + STAT(w, inconsistent) == 0);
		world_free(w);
	}
}

/* Errors found at S in its own source window: reported as COPY_DONE with
 * leg AT_SRC in every mode, nothing written. */
static void test_source_window_errors(void **state)
{
	(void)state;
	for (size_t m = 0; m < NMODES; m++) {
		struct world *w = world_new(3, 4096, 4, 0);
		struct {
			uint32_t win;
			uint64_t off, len;
			enum triad_status st;
		} cases[] = {
			{ W_NONE, 0, 10, TRIAD_S_NO_WINDOW },
			{ W_SRC, SRC_SIZE - 9, 10, TRIAD_S_OUT_OF_BOUNDS },
			{ W_SRC, SRC_SIZE + 1, 0, TRIAD_S_OUT_OF_BOUNDS },
			{ W_SRC, UINT64_MAX, 2, TRIAD_S_OUT_OF_BOUNDS },
			{ W_DST, 0, 10, TRIAD_S_ACCESS }, /* write-only window */
		};

		for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
			struct req *q = issue(w, 0, 1, 2, cases[i].win, cases[i].off, W_DST, 0,
					      cases[i].len, modes[m], TR_COPY_NO_DEADLINE);
			run(w);
			check_done(q, cases[i].st, TR_COPY_LEG_AT_SRC);
			assert_int_equal(q->posted, 0);
		}
		check_idle(w);
		assert_true(STAT(w, chunks) == 0 && STAT(w, answered) == 0);
		assert_int_equal(w->r[2].notified, 0);
		world_free(w);
	}
}

/* Destination window errors found at S through the descriptor (leg AT_DST),
 * a failed lookup (leg S_D), and found at D itself (AT_DST again). */
static void test_destination_errors(void **state)
{
	(void)state;
	for (size_t m = 0; m < NMODES; m++) {
		struct world *w = world_new(3, 4096, 4, 0);
		struct req *q;

		q = issue(w, 0, 1, 2, W_SRC, 0, W_NONE, 0, 10, modes[m], TR_COPY_NO_DEADLINE);
		run(w);
		check_done(q, TRIAD_S_NO_WINDOW, TR_COPY_LEG_AT_DST);
		q = issue(w, 0, 1, 2, W_SRC, 0, W_DST, DST_SIZE - 5, 10, modes[m],
			  TR_COPY_NO_DEADLINE);
		run(w);
		check_done(q, TRIAD_S_OUT_OF_BOUNDS, TR_COPY_LEG_AT_DST);
		q = issue(w, 0, 1, 2, W_SRC, 0, W_SRC, 0, 10, modes[m], TR_COPY_NO_DEADLINE);
		run(w);
		check_done(q, TRIAD_S_ACCESS, TR_COPY_LEG_AT_DST); /* read-only at D */
		assert_true(STAT(w, chunks) == 0);

		q = issue(w, 0, 1, 2, W_SRC, 0, W_DST, 0, 10, modes[m], TR_COPY_NO_DEADLINE);
		q->lookup_fails = true; /* the descriptor service cannot reach D */
		run(w);
		check_done(q, TRIAD_S_UNREACHABLE, TR_COPY_LEG_S_D);

		/* Stale descriptor: the NIC takes the data, D's software refuses it. */
		q = issue(w, 0, 1, 2, W_SRC, 0, W_STALE, 0, 5000, modes[m], TR_COPY_NO_DEADLINE);
		run(w);
		if (modes[m] == TR_COPY_TRANSPORT_ACK) {
			check_ok(w, q); /* D's software is never asked */
		} else {
			check_done(q, TRIAD_S_ACCESS, TR_COPY_LEG_AT_DST);
			assert_true(STAT(w, answered) == 1);
		}
		assert_int_equal(w->r[2].notified, 0);
		check_idle(w);
		world_free(w);
	}
}

/* D's window vanishes between the lookup and COPY_DATA (and grows too
 * small): D answers with the error. */
static void test_destination_errors_at_d(void **state)
{
	(void)state;
	for (size_t m = 0; m < 2; m++) { /* RELAY, DIRECT */
		struct world *w = world_new(3, 4096, 4, 0);
		struct req *q;

		w->r[2].wins[2].access = RW; /* W_STALE is fine for S and D... */
		q = issue(w, 0, 1, 2, W_SRC, 0, W_STALE, 1000, 100, modes[m],
			  TR_COPY_NO_DEADLINE);
		w->lookup_hold = true;
		run(w);
		w->lookup_hold = false;
		assert_true(step(w)); /* the lookup; then D's table shrinks it */
		w->r[2].wins[2].size = 1050;
		run(w);
		check_done(q, TRIAD_S_OUT_OF_BOUNDS, TR_COPY_LEG_AT_DST);

		q = issue(w, 0, 1, 2, W_SRC, 0, W_STALE, 0, 100, modes[m], TR_COPY_NO_DEADLINE);
		w->lookup_hold = true;
		run(w);
		w->lookup_hold = false;
		assert_true(step(w));
		w->r[2].wins[2].sw_gone = true; /* gone from D's table, the MR lingers */
		run(w);
		check_done(q, TRIAD_S_NO_WINDOW, TR_COPY_LEG_AT_DST);
		check_idle(w);
		world_free(w);
	}
}

/* A chunk fails: S posts no more, waits for the ones in flight, reports
 * the chunk's status on leg S->D; D never hears of it. */
static void test_chunk_error(void **state)
{
	(void)state;
	for (size_t m = 0; m < NMODES; m++) {
		struct world *w = world_new(3, 1000, 3, 0);
		struct acts x;
		int req;
		uint64_t op = by_hand_to_write(w, 10000, modes[m], &req, &x);

		assert_int_equal(x.n, 3);
		CHUNK(&w->r[1], 0, op, 1, TRIAD_S_REMOTE_ACCESS, &x);
		assert_int_equal(x.n, 0);
		assert_int_equal(sstate(&w->r[1], 0, op), TR_COPY_S_DRAIN);
		CHUNK(&w->r[1], 0, op, 0, TRIAD_S_OK, &x); /* no new chunk */
		assert_int_equal(x.n, 0);
		CHUNK(&w->r[1], 0, op, 0, TRIAD_S_OK, &x);
		assert_true(tr_copy_stats(&w->r[1].c)->duplicate == 1);
		CHUNK(&w->r[1], 0, op, 5, TRIAD_S_OK, &x); /* never posted */
		assert_true(tr_copy_stats(&w->r[1].c)->inconsistent == 1);
		CHUNK(&w->r[1], 0, op, 2, TRIAD_S_TRANSPORT, &x); /* flushed */
		assert_int_equal(x.n, 1);
		expect_send(&x.a[0], TR_COPY_DONE, 0, op, TRIAD_S_REMOTE_ACCESS, TR_COPY_LEG_S_D);
		RECV(&w->r[0], TR_COPY_DONE, 1, &x.a[0].hdr, &x);
		expect_complete(&x.a[0], &req, TRIAD_S_REMOTE_ACCESS, TR_COPY_LEG_S_D);
		assert_true(tr_copy_stats(&w->r[1].c)->chunks == 3);
		world_free(w);

		/* The same through the router, the fault on the last chunk. */
		w = world_new(3, 1000, 2, 0);
		struct req *q = issue(w, 0, 1, 2, W_SRC, 0, W_DST, 0, 7500, modes[m],
				      TR_COPY_NO_DEADLINE);
		q->fault_chunk = 7;
		run(w);
		check_done(q, TRIAD_S_REMOTE_ACCESS, TR_COPY_LEG_S_D);
		assert_int_equal(q->posted, 8);
		assert_true(STAT(w, answered) == 0);
		check_idle(w);
		world_free(w);
	}
}

/* S's window changed under an order it accepted (destroyed, or created
 * again smaller or without READ): the chunk is refused before any post,
 * the op ends on leg AT_SRC with the window's status, after the chunks
 * already in flight. */
static void test_chunk_refused(void **state)
{
	static const enum triad_status window_st[] = { TRIAD_S_NO_WINDOW, TRIAD_S_OUT_OF_BOUNDS,
						       TRIAD_S_ACCESS };

	(void)state;
	for (size_t m = 0; m < NMODES; m++) {
		for (size_t k = 0; k < sizeof(window_st) / sizeof(window_st[0]); k++) {
			struct world *w = world_new(3, 1000, 3, 0);
			struct acts x;
			int req;
			uint64_t op = by_hand_to_write(w, 10000, modes[m], &req, &x);

			assert_int_equal(x.n, 3);
			CHUNK(&w->r[1], 0, op, 0, TRIAD_S_OK, &x); /* chunk 3 posted */
			assert_int_equal(x.n, 1);
			expect_write(&x.a[0], 2, 3, 3100, 3200, 1000);
			/* chunk 1 never reaches the NIC; 2 and 3 are in flight */
			REFUSE(&w->r[1], 0, op, 1, window_st[k], &x);
			assert_int_equal(x.n, 0);
			assert_int_equal(sstate(&w->r[1], 0, op), TR_COPY_S_DRAIN);
			CHUNK(&w->r[1], 0, op, 2, TRIAD_S_OK, &x);
			assert_int_equal(x.n, 0);
			CHUNK(&w->r[1], 0, op, 3, TRIAD_S_OK, &x);
			assert_int_equal(x.n, 1);
			expect_send(&x.a[0], TR_COPY_DONE, 0, op, window_st[k], TR_COPY_LEG_AT_SRC);
			RECV(&w->r[0], TR_COPY_DONE, 1, &x.a[0].hdr, &x);
			expect_complete(&x.a[0], &req, window_st[k], TR_COPY_LEG_AT_SRC);
			assert_int_equal(tr_copy_orders_live(&w->r[1].c), 0);
			world_free(w);
		}
	}
	/* Only a window's status: anything else is a chunk error, not this. */
	struct world *w = world_new(3, 1000, 3, 0);
	struct acts x;
	int req;
	uint64_t op = by_hand_to_write(w, 10000, TR_COPY_RELAY, &req, &x);

	assert_int_equal(tr_copy_chunk_refused(&w->r[1].c, 0, op, 0, TRIAD_S_TRANSPORT, x.a,
					       TR_COPY_ACTS), -EINVAL);
	assert_int_equal(tr_copy_chunk_refused(&w->r[1].c, 0, op, 0, TRIAD_S_OK, x.a,
					       TR_COPY_ACTS), -EINVAL);
	assert_int_equal(sstate(&w->r[1], 0, op), TR_COPY_S_WRITE);
	world_free(w);
}

/* ---- peer gone at every leg ----------------------------------------------------- */

/* I learns S is gone before (I->S) and after (S->I) COPY_START arrived. */
static void test_gone_source(void **state)
{
	(void)state;
	for (size_t m = 0; m < NMODES; m++) {
		struct world *w = world_new(3, 1000, 2, 0);
		struct acts x;
		int req1, req2;
		struct tr_copy_hdr o = order_of(1, 2, 10, modes[m]);
		uint64_t op1, op2;

		REQUEST(&w->r[0], &o, &req1, TR_COPY_NO_DEADLINE, &op1, &x);
		REQUEST(&w->r[0], &o, &req2, TR_COPY_NO_DEADLINE, &op2, &x);
		assert_true(op1 != op2);
		assert_int_equal(tr_copy_start_delivered(&w->r[0].c, op2), 0);
		assert_int_equal(tr_copy_start_delivered(&w->r[0].c, op2), -ENOENT);
		GONE(&w->r[0], 2, &x); /* D: not I's business (S reports) unless DIRECT */
		if (modes[m] == TR_COPY_DIRECT) {
			assert_int_equal(x.n, 2);
			expect_complete(&x.a[0], &req1, TRIAD_S_UNREACHABLE, TR_COPY_LEG_D_RESP);
			world_free(w);
			continue;
		}
		assert_int_equal(x.n, 0);
		GONE(&w->r[0], 1, &x);
		assert_int_equal(x.n, 2);
		expect_complete(&x.a[0], &req1, TRIAD_S_UNREACHABLE, TR_COPY_LEG_I_S);
		expect_complete(&x.a[1], &req2, TRIAD_S_UNREACHABLE, TR_COPY_LEG_S_I);
		GONE(&w->r[0], 1, &x);
		assert_int_equal(x.n, 0);
		assert_int_equal(tr_copy_requests_live(&w->r[0].c), 0);
		world_free(w);
	}
}

/* S learns D is gone while looking up, writing, waiting for the answer;
 * with the answer in, D's outcome stands; I gone: S drops the order. */
static void test_gone_destination_at_source(void **state)
{
	(void)state;
	for (size_t m = 0; m < NMODES; m++) {
		struct world *w = world_new(4, 1000, 2, 0);
		struct acts x;
		struct tr_copy_hdr o = order_of(1, 2, 3000, modes[m]), h[4];
		int req[4];
		uint64_t op[4];

		for (int i = 0; i < 4; i++) {
			REQUEST(&w->r[0], &o, &req[i], TR_COPY_NO_DEADLINE, &op[i], &x);
			h[i] = x.a[0].hdr;
			RECV(&w->r[1], TR_COPY_START, 0, &h[i], &x);
			if (i > 0)
				DESC(&w->r[1], 0, op[i], TRIAD_S_OK, &dst_desc, &x);
		}
		/* op[1]: one chunk done, two to go */
		CHUNK(&w->r[1], 0, op[1], 0, TRIAD_S_OK, &x);
		/* op[2], op[3]: every chunk done */
		for (int i = 2; i < 4; i++)
			for (uint64_t k = 0; k < 3; k++)
				CHUNK(&w->r[1], 0, op[i], k, TRIAD_S_OK, &x);
		if (modes[m] == TR_COPY_RELAY) {
			struct tr_copy_hdr r = h[3];

			r.status = TRIAD_S_OUT_OF_BOUNDS;
			r.leg = TR_COPY_LEG_AT_DST;
			assert_int_equal(sstate(&w->r[1], 0, op[2]), TR_COPY_S_RESP);
			RECV(&w->r[1], TR_COPY_RESP, 2, &r, &x);
			assert_int_equal(x.n, 1);
			expect_send(&x.a[0], TR_COPY_DONE, 0, op[3], TRIAD_S_OUT_OF_BOUNDS,
				    TR_COPY_LEG_AT_DST);
		} else {
			/* DIRECT: forgotten silently; TRANSPORT_ACK: reported OK */
			assert_int_equal(sstate(&w->r[1], 0, op[2]), TR_COPY_S_FREE);
		}
		GONE(&w->r[1], 2, &x);
		if (modes[m] == TR_COPY_RELAY) {
			assert_int_equal(x.n, 3);
			expect_send(&x.a[2], TR_COPY_DONE, 0, op[2], TRIAD_S_UNREACHABLE,
				    TR_COPY_LEG_D_RESP);
		} else {
			assert_int_equal(x.n, 2);
		}
		/* in table order; each op once */
		for (int i = 0; i < x.n; i++)
			assert_int_equal(x.a[i].hdr.status, TRIAD_S_UNREACHABLE);
		for (int i = 0; i < 2; i++) {
			int j;

			for (j = 0; j < x.n && x.a[j].hdr.op_id != op[i]; j++)
				;
			assert_true(j < x.n);
			expect_send(&x.a[j], TR_COPY_DONE, 0, op[i], TRIAD_S_UNREACHABLE,
				    TR_COPY_LEG_S_D);
		}
		assert_int_equal(tr_copy_orders_live(&w->r[1].c), 0);
		/* the last completions, after the peer went: stale */
		CHUNK(&w->r[1], 0, op[1], 1, TRIAD_S_TRANSPORT, &x);
		assert_true(tr_copy_stats(&w->r[1].c)->unknown == 1);

		/* I gone: nobody to tell. */
		REQUEST(&w->r[3], &o, &req[0], TR_COPY_NO_DEADLINE, &op[0], &x);
		RECV(&w->r[1], TR_COPY_START, 3, &x.a[0].hdr, &x);
		DESC(&w->r[1], 3, op[0], TRIAD_S_OK, &dst_desc, &x);
		assert_int_equal(tr_copy_orders_live(&w->r[1].c), 1);
		GONE(&w->r[1], 3, &x);
		assert_int_equal(x.n, 0);
		assert_int_equal(tr_copy_orders_live(&w->r[1].c), 0);
		assert_true(tr_copy_stats(&w->r[1].c)->orphaned == 1);
		world_free(w);
	}
}

/* A chunk error, then D gone before the flushes come: the first error is
 * the one reported.  D (stateless) has nothing to fail. */
static void test_gone_keeps_first_error(void **state)
{
	struct world *w = world_new(3, 1000, 4, 0);
	struct acts x;
	int req;
	uint64_t op = by_hand_to_write(w, 3000, TR_COPY_RELAY, &req, &x);

	(void)state;
	CHUNK(&w->r[1], 0, op, 0, TRIAD_S_REMOTE_ACCESS, &x);
	assert_int_equal(x.n, 0);
	GONE(&w->r[1], 2, &x);
	assert_int_equal(x.n, 1);
	expect_send(&x.a[0], TR_COPY_DONE, 0, op, TRIAD_S_REMOTE_ACCESS, TR_COPY_LEG_S_D);
	GONE(&w->r[2], 0, &x);
	assert_int_equal(x.n, 0);
	GONE(&w->r[2], 1, &x);
	assert_int_equal(x.n, 0);
	world_free(w);
}

/* Peer gone through the router, each mode, S or D, at five points of the
 * copy (FIFO order: after 0 events nothing happened; after 2 S has the
 * order and I knows it was delivered; after 3 S has the descriptor and its
 * writes (+ DATA) are queued; after 7 the writes have landed and their
 * completions are queued behind DATA; after 8 D has answered, except in
 * TRANSPORT_ACK). Whatever was in flight from or to the victim is lost. */
static void test_gone_flows(void **state)
{
	static const int points[] = { 0, 2, 3, 7, 8 };
	/* [mode][victim S, D][point]: the leg I's request ends with; NONE: OK */
	static const enum tr_copy_leg want[3][2][5] = {
		[TR_COPY_RELAY] = {
			{ TR_COPY_LEG_I_S, TR_COPY_LEG_S_I, TR_COPY_LEG_S_I, TR_COPY_LEG_S_I,
			  TR_COPY_LEG_S_I },
			{ TR_COPY_LEG_S_D, TR_COPY_LEG_S_D, TR_COPY_LEG_S_D, TR_COPY_LEG_D_RESP,
			  TR_COPY_LEG_D_RESP } },
		[TR_COPY_DIRECT] = {
			{ TR_COPY_LEG_I_S, TR_COPY_LEG_S_I, TR_COPY_LEG_S_I, TR_COPY_LEG_S_I,
			  TR_COPY_LEG_NONE /* D's answer to I was on its way */ },
			{ TR_COPY_LEG_D_RESP, TR_COPY_LEG_D_RESP, TR_COPY_LEG_D_RESP,
			  TR_COPY_LEG_D_RESP, TR_COPY_LEG_D_RESP } },
		[TR_COPY_TRANSPORT_ACK] = {
			{ TR_COPY_LEG_I_S, TR_COPY_LEG_S_I, TR_COPY_LEG_S_I, TR_COPY_LEG_S_I,
			  TR_COPY_LEG_S_I },
			{ TR_COPY_LEG_S_D, TR_COPY_LEG_S_D, TR_COPY_LEG_S_D,
			  TR_COPY_LEG_NONE /* the data had landed */, TR_COPY_LEG_NONE } },
	};

	(void)state;
	for (size_t m = 0; m < NMODES; m++)
		for (int v = 0; v < 2; v++)
			for (int p = 0; p < 5; p++) {
				struct world *w = world_new(3, 1000, 8, 0);
				struct req *q = issue(w, 0, 1, 2, W_SRC, 0, W_DST, 0, 4000,
						      modes[m], TR_COPY_NO_DEADLINE);
				enum tr_copy_leg leg = want[modes[m]][v][p];

				for (int k = 0; k < points[p]; k++)
					assert_true(step(w));
				kill_rank(w, 1 + (uint32_t)v);
				run(w);
				if (q->ncomplete != 1 || q->leg != leg ||
				    q->status != (leg ? TRIAD_S_UNREACHABLE : TRIAD_S_OK))
					fail_msg("%s, %s gone after %d events: %d completions "
						 "%u/%s, want %s", tr_copy_mode_str(modes[m]),
						 v ? "D" : "S", points[p], q->ncomplete, q->status,
						 tr_copy_leg_str(q->leg), tr_copy_leg_str(leg));
				if (!leg)
					check_data(w, q);
				check_idle(w);
				world_free(w);
			}
}

/* ---- timeouts ---------------------------------------------------------------------- */

static void test_timeouts(void **state)
{
	(void)state;
	for (size_t m = 0; m < NMODES; m++) {
		struct world *w = world_new(3, 1000, 2, 0);
		struct acts x;
		struct tr_copy_hdr o = order_of(1, 2, 10, modes[m]);
		int req[3];
		uint64_t op[3];

		REQUEST(&w->r[0], &o, &req[0], 100, &op[0], &x);
		REQUEST(&w->r[0], &o, &req[1], 200, &op[1], &x);
		REQUEST(&w->r[0], &o, &req[2], TR_COPY_NO_DEADLINE, &op[2], &x);
		tr_copy_start_delivered(&w->r[0].c, op[1]);
		TICK(&w->r[0], 99, &x);
		assert_int_equal(x.n, 0);
		TICK(&w->r[0], 100, &x);
		assert_int_equal(x.n, 1);
		expect_complete(&x.a[0], &req[0], TRIAD_S_TIMEOUT, TR_COPY_LEG_I_S);
		TICK(&w->r[0], 50, &x); /* time does not go back */
		assert_int_equal(x.n, 0);
		TICK(&w->r[0], 1000, &x);
		assert_int_equal(x.n, 1);
		expect_complete(&x.a[0], &req[1], TRIAD_S_TIMEOUT,
				modes[m] == TR_COPY_DIRECT ? TR_COPY_LEG_D_RESP : TR_COPY_LEG_S_I);
		TICK(&w->r[0], UINT64_MAX, &x);
		assert_int_equal(x.n, 0);
		assert_int_equal(tr_copy_requests_live(&w->r[0].c), 1);
		world_free(w);
	}
}

/* The source's own timeout: measured from the first tick after the order
 * arrived; names where S was stuck. */
static void test_source_timeout(void **state)
{
	struct world *w = world_new(3, 1000, 2, 50);
	struct acts x;
	struct tr_copy_hdr o = order_of(1, 2, 1500, TR_COPY_RELAY);
	int req[2];
	uint64_t op[2];

	(void)state;
	for (int i = 0; i < 2; i++) {
		REQUEST(&w->r[0], &o, &req[i], TR_COPY_NO_DEADLINE, &op[i], &x);
		RECV(&w->r[1], TR_COPY_START, 0, &x.a[0].hdr, &x);
	}
	/* op[1]: written, waiting for D's answer */
	DESC(&w->r[1], 0, op[1], TRIAD_S_OK, &dst_desc, &x);
	CHUNK(&w->r[1], 0, op[1], 0, TRIAD_S_OK, &x);
	CHUNK(&w->r[1], 0, op[1], 1, TRIAD_S_OK, &x);
	assert_int_equal(sstate(&w->r[1], 0, op[1]), TR_COPY_S_RESP);
	TICK(&w->r[1], 1000, &x); /* stamps: deadline 1050 */
	assert_int_equal(x.n, 0);
	TICK(&w->r[1], 1049, &x);
	assert_int_equal(x.n, 0);
	TICK(&w->r[1], 1050, &x);
	assert_int_equal(x.n, 2);
	expect_send(&x.a[0], TR_COPY_DONE, 0, op[0], TRIAD_S_TIMEOUT, TR_COPY_LEG_S_D);
	expect_send(&x.a[1], TR_COPY_DONE, 0, op[1], TRIAD_S_TIMEOUT, TR_COPY_LEG_D_RESP);
	RECV(&w->r[0], TR_COPY_DONE, 1, &x.a[1].hdr, &x);
	expect_complete(&x.a[0], &req[1], TRIAD_S_TIMEOUT, TR_COPY_LEG_D_RESP);
	assert_int_equal(tr_copy_orders_live(&w->r[1].c), 0);
	world_free(w);
}

/* I == S: the request's deadline names the leg the source op is stuck on
 * and drops that op. */
static void test_timeout_initiator_is_source(void **state)
{
	struct world *w = world_new(2, 1000, 2, 0);
	struct acts x;
	struct tr_copy_hdr o = order_of(0, 1, 1500, TR_COPY_RELAY);
	int req[2];
	uint64_t op[2];

	(void)state;
	REQUEST(&w->r[0], &o, &req[0], 10, &op[0], &x);
	assert_int_equal(x.n, 1);
	assert_int_equal(x.a[0].type, TR_COPY_ACT_LOOKUP);
	REQUEST(&w->r[0], &o, &req[1], 10, &op[1], &x);
	DESC(&w->r[0], 0, op[1], TRIAD_S_OK, &dst_desc, &x);
	CHUNK(&w->r[0], 0, op[1], 0, TRIAD_S_OK, &x);
	CHUNK(&w->r[0], 0, op[1], 1, TRIAD_S_OK, &x);
	assert_int_equal(tr_copy_orders_live(&w->r[0].c), 2);
	TICK(&w->r[0], 10, &x);
	assert_int_equal(x.n, 2);
	expect_complete(&x.a[0], &req[0], TRIAD_S_TIMEOUT, TR_COPY_LEG_S_D);
	expect_complete(&x.a[1], &req[1], TRIAD_S_TIMEOUT, TR_COPY_LEG_D_RESP);
	assert_int_equal(tr_copy_orders_live(&w->r[0].c), 0);
	DESC(&w->r[0], 0, op[0], TRIAD_S_OK, &dst_desc, &x); /* too late */
	assert_int_equal(x.n, 0);
	assert_true(tr_copy_stats(&w->r[0].c)->unknown == 1);

	/* DIRECT: S's part ended with its writes; I waits for D alone */
	o.mode = TR_COPY_DIRECT;
	REQUEST(&w->r[0], &o, &req[0], 20, &op[0], &x);
	DESC(&w->r[0], 0, op[0], TRIAD_S_OK, &dst_desc, &x);
	assert_int_equal(x.n, 3);
	CHUNK(&w->r[0], 0, op[0], 0, TRIAD_S_OK, &x);
	CHUNK(&w->r[0], 0, op[0], 1, TRIAD_S_OK, &x);
	assert_int_equal(tr_copy_orders_live(&w->r[0].c), 0);
	TICK(&w->r[0], 20, &x);
	assert_int_equal(x.n, 1);
	expect_complete(&x.a[0], &req[0], TRIAD_S_TIMEOUT, TR_COPY_LEG_D_RESP);
	world_free(w);
}

/* Through the router: a rank that stays connected but never answers.
 * Whichever clock runs out first names the leg; the other outcome, coming
 * later, is dropped as unknown. */
static void test_timeout_flows(void **state)
{
	(void)state;
	for (size_t m = 0; m < NMODES; m++) {
		for (int mute = 1; mute <= 2; mute++) {
			struct world *w = world_new(3, 1000, 2, 100);
			struct req *early, *late;

			w->r[mute].mute = true;
			for (uint32_t r = 0; r < 3; r++)
				tick(w, r, 1000); /* stamps nothing yet: no orders */
			early = issue(w, 0, 1, 2, W_SRC, 0, W_DST, 0, 2500, modes[m], 1050);
			late = issue(w, 0, 1, 2, W_SRC, 0, W_DST, 0, 2500, modes[m], 5000);
			run(w);
			for (uint64_t t = 1010; t <= 1200; t += 10) {
				for (uint32_t r = 0; r < 3; r++)
					tick(w, r, t);
				run(w);
			}
			if (mute == 1) {
				/* S: the order was delivered, then nothing.  In DIRECT,
				 * I waits for D and cannot tell who is stuck. */
				enum tr_copy_leg leg = modes[m] == TR_COPY_DIRECT
							       ? TR_COPY_LEG_D_RESP
							       : TR_COPY_LEG_S_I;

				check_done(early, TRIAD_S_TIMEOUT, leg);
				assert_int_equal(late->ncomplete, 0);
				for (uint32_t r = 0; r < 3; r++)
					tick(w, r, 5000);
				check_done(late, TRIAD_S_TIMEOUT, leg);
			} else if (modes[m] == TR_COPY_TRANSPORT_ACK) {
				check_ok(w, early); /* D's software is not needed */
				check_ok(w, late);
			} else if (modes[m] == TR_COPY_DIRECT) {
				/* S is done once its writes completed; only I waits for D */
				check_done(early, TRIAD_S_TIMEOUT, TR_COPY_LEG_D_RESP);
				assert_int_equal(late->ncomplete, 0);
				for (uint32_t r = 0; r < 3; r++)
					tick(w, r, 5000);
				check_done(late, TRIAD_S_TIMEOUT, TR_COPY_LEG_D_RESP);
			} else {
				/* RELAY: I's own deadline first (S->I), then S's timeout
				 * (stamped at 1010, fires at 1110) reports D's leg */
				check_done(early, TRIAD_S_TIMEOUT, TR_COPY_LEG_S_I);
				check_done(late, TRIAD_S_TIMEOUT, TR_COPY_LEG_D_RESP);
				assert_true(tr_copy_stats(&w->r[0].c)->unknown == 1);
			}
			check_idle(w);
			world_free(w);
		}
	}
}

/* ---- trust: what is dropped and counted ------------------------------------------------ */

static void test_drops(void **state)
{
	struct world *w = world_new(4, 1000, 4, 0);
	struct acts x;
	int req;
	uint64_t op = by_hand_to_write(w, 1500, TR_COPY_RELAY, &req, &x);
	struct tr_copy_hdr data = x.a[2].hdr, start, bad, resp, done;
	const struct tr_copy_stats *s0 = tr_copy_stats(&w->r[0].c);
	const struct tr_copy_stats *s1 = tr_copy_stats(&w->r[1].c);
	const struct tr_copy_stats *s2 = tr_copy_stats(&w->r[2].c);
	struct tr_copy_sop before;
	uint64_t op2;

	(void)state;
	expect_send(&x.a[2], TR_COPY_DATA, 2, op, TRIAD_S_OK, TR_COPY_LEG_NONE);
	start = data;
	before = *sop_of(&w->r[1], 0, op);

	/* at S: START again while live */
	RECV(&w->r[1], TR_COPY_START, 0, &start, &x);
	assert_true(s1->duplicate == 1);
	/* START from someone who is not its initiator, or not for this source */
	RECV(&w->r[1], TR_COPY_START, 3, &start, &x);
	RECV(&w->r[2], TR_COPY_START, 0, &start, &x);
	assert_true(s1->inconsistent == 1 && s2->inconsistent == 1);
	/* malformed headers */
	const struct {
		size_t off, size;
		uint64_t val;
	} mangle[] = {
		{ offsetof(struct tr_copy_hdr, op_id), 8, 0 },
		{ offsetof(struct tr_copy_hdr, initiator), 4, 4 },
		{ offsetof(struct tr_copy_hdr, source), 4, 99 },
		{ offsetof(struct tr_copy_hdr, destination), 4, UINT32_MAX },
		{ offsetof(struct tr_copy_hdr, mode), 1, TR_COPY_NMODES },
		{ offsetof(struct tr_copy_hdr, leg), 1, TR_COPY_NLEGS },
		{ offsetof(struct tr_copy_hdr, leg), 1, TR_COPY_LEG_S_D }, /* error leg, OK status */
		{ offsetof(struct tr_copy_hdr, status), 2, TRIAD_S_PENDING },
		{ offsetof(struct tr_copy_hdr, status), 2, TRIAD_S_MAX },
		{ offsetof(struct tr_copy_hdr, status), 2, TRIAD_S_TIMEOUT }, /* leg NONE */
	};
	for (size_t i = 0; i < sizeof(mangle) / sizeof(mangle[0]); i++) {
		uint64_t before_inc = s1->inconsistent;

		bad = start;
		memcpy((char *)&bad + mangle[i].off, &mangle[i].val, mangle[i].size);
		bad.op_id += 1000; /* else it would also be a duplicate */
		if (mangle[i].off == offsetof(struct tr_copy_hdr, op_id))
			bad.op_id = 0;
		RECV(&w->r[1], TR_COPY_START, 0, &bad, &x);
		assert_int_equal(x.n, 0);
		if (s1->inconsistent != before_inc + 1)
			fail_msg("mangle %zu not counted", i);
	}
	RECV(&w->r[1], TR_COPY_START, 17, &start, &x); /* sender out of range */
	assert_int_equal(tr_copy_recv(&w->r[1].c, TR_COPY_NMSGS, 0, &start, NULL, 0, x.a,
				      TR_COPY_ACTS), -EINVAL);
	assert_int_equal(tr_copy_recv(&w->r[1].c, TR_COPY_START, 0, &start, NULL, 0, x.a,
				      TR_COPY_ACTS - 1), -EINVAL);
	assert_int_equal(tr_copy_recv(&w->r[1].c, TR_COPY_START, 0, NULL, NULL, 0, x.a,
				      TR_COPY_ACTS), -EINVAL);

	/* at D: DATA from a rank that is not S, in TRANSPORT_ACK mode, with a status */
	RECV(&w->r[2], TR_COPY_DATA, 3, &data, &x);
	bad = data;
	bad.mode = TR_COPY_TRANSPORT_ACK;
	RECV(&w->r[2], TR_COPY_DATA, 1, &bad, &x);
	bad = data;
	bad.destination = 3;
	RECV(&w->r[2], TR_COPY_DATA, 1, &bad, &x);
	assert_int_equal(x.n, 0);
	assert_true(s2->inconsistent == 4 && s2->answered == 0);

	/* the real DATA, and its answer */
	RECV(&w->r[2], TR_COPY_DATA, 1, &data, &x);
	resp = x.a[1].hdr;
	/* at S: RESP from the wrong peer, with another tuple, a wrong leg,
	 * a status that is not a window's, unknown op, TRANSPORT_ACK mode */
	RECV(&w->r[1], TR_COPY_RESP, 3, &resp, &x);
	bad = resp;
	bad.len++;
	RECV(&w->r[1], TR_COPY_RESP, 2, &bad, &x);
	bad = resp;
	bad.dst_off++;
	RECV(&w->r[1], TR_COPY_RESP, 2, &bad, &x);
	bad = resp;
	bad.status = TRIAD_S_ACCESS;
	bad.leg = TR_COPY_LEG_S_D;
	RECV(&w->r[1], TR_COPY_RESP, 2, &bad, &x);
	bad.status = TRIAD_S_TIMEOUT;
	bad.leg = TR_COPY_LEG_AT_DST;
	RECV(&w->r[1], TR_COPY_RESP, 2, &bad, &x);
	bad = resp;
	bad.mode = TR_COPY_TRANSPORT_ACK;
	RECV(&w->r[1], TR_COPY_RESP, 2, &bad, &x);
	assert_true(s1->inconsistent == 1 + 10 + 1 + 6);
	bad = resp;
	bad.op_id += 12345;
	RECV(&w->r[1], TR_COPY_RESP, 2, &bad, &x);
	assert_true(s1->unknown == 1);
	/* nothing of this touched the op */
	assert_memory_equal(sop_of(&w->r[1], 0, op), &before, sizeof(before));

	/* S completes; I checks DONE the same way */
	RECV(&w->r[1], TR_COPY_RESP, 2, &resp, &x);
	assert_int_equal(x.n, 0);
	CHUNK(&w->r[1], 0, op, 0, TRIAD_S_OK, &x);
	CHUNK(&w->r[1], 0, op, 1, TRIAD_S_OK, &x);
	assert_int_equal(x.n, 1);
	done = x.a[0].hdr;
	RECV(&w->r[0], TR_COPY_DONE, 2, &done, &x); /* not from S */
	bad = done;
	bad.src_win++;
	RECV(&w->r[0], TR_COPY_DONE, 1, &bad, &x);
	bad = done;
	bad.status = TRIAD_S_UNREACHABLE;
	bad.leg = TR_COPY_LEG_I_S; /* S cannot know that */
	RECV(&w->r[0], TR_COPY_DONE, 1, &bad, &x);
	bad = done;
	bad.mode = TR_COPY_DIRECT;
	RECV(&w->r[0], TR_COPY_DONE, 1, &bad, &x);
	bad = done;
	bad.initiator = 3;
	RECV(&w->r[0], TR_COPY_DONE, 1, &bad, &x);
	RECV(&w->r[0], TR_COPY_RESP, 1, &done, &x); /* a RELAY RESP is for S */
	assert_int_equal(x.n, 0);
	assert_true(s0->inconsistent == 6 && s0->completed == 0);
	RECV(&w->r[0], TR_COPY_DONE, 1, &done, &x);
	expect_complete(&x.a[0], &req, TRIAD_S_OK, TR_COPY_LEG_NONE);

	/* events for ops nobody has */
	DESC(&w->r[1], 0, 4242, TRIAD_S_OK, &dst_desc, &x);
	CHUNK(&w->r[1], 2, op, 0, TRIAD_S_OK, &x);
	assert_true(s1->unknown == 3);
	assert_int_equal(tr_copy_desc(&w->r[1].c, 0, op, TRIAD_S_PENDING, &dst_desc, x.a,
				      TR_COPY_ACTS), -EINVAL);
	assert_int_equal(tr_copy_desc(&w->r[1].c, 0, op, TRIAD_S_OK, NULL, x.a, TR_COPY_ACTS),
			 -EINVAL);
	assert_int_equal(tr_copy_chunk_done(&w->r[1].c, 0, op, 0, TRIAD_S_MAX, x.a,
					    TR_COPY_ACTS), -EINVAL);
	assert_int_equal(tr_copy_start_delivered(&w->r[0].c, 0), -ENOENT);
	assert_int_equal(tr_copy_start_delivered(&w->r[0].c, op), -ENOENT);

	/* DIRECT: a DONE saying OK is not S's to send; a second descriptor
	 * answer is a duplicate */
	struct tr_copy_hdr o = order_of(1, 2, 10, TR_COPY_DIRECT);
	REQUEST(&w->r[0], &o, &req, TR_COPY_NO_DEADLINE, &op, &x);
	bad = x.a[0].hdr;
	RECV(&w->r[1], TR_COPY_START, 0, &bad, &x);
	DESC(&w->r[1], 0, op, TRIAD_S_OK, &dst_desc, &x);
	DESC(&w->r[1], 0, op, TRIAD_S_OK, &dst_desc, &x);
	assert_int_equal(x.n, 0);
	assert_true(s1->duplicate == 2);
	/* RELAY: an answer from D before S sent COPY_DATA cannot be */
	o = order_of(1, 2, 10, TR_COPY_RELAY);
	REQUEST(&w->r[0], &o, &req, TR_COPY_NO_DEADLINE, &op2, &x);
	resp = x.a[0].hdr;
	RECV(&w->r[1], TR_COPY_START, 0, &resp, &x);
	RECV(&w->r[1], TR_COPY_RESP, 2, &resp, &x);
	assert_int_equal(x.n, 0);
	assert_true(s1->inconsistent == 19);
	assert_int_equal(sstate(&w->r[1], 0, op2), TR_COPY_S_DESC);
	RECV(&w->r[0], TR_COPY_DONE, 1, &bad, &x);
	assert_true(s0->inconsistent == 7);
	bad.status = TRIAD_S_REMOTE_ACCESS;
	bad.leg = TR_COPY_LEG_D_RESP; /* S never reports D's leg in DIRECT */
	RECV(&w->r[0], TR_COPY_DONE, 1, &bad, &x);
	assert_true(s0->inconsistent == 8);
	bad.leg = TR_COPY_LEG_S_D;
	RECV(&w->r[0], TR_COPY_DONE, 1, &bad, &x);
	expect_complete(&x.a[0], &req, TRIAD_S_REMOTE_ACCESS, TR_COPY_LEG_S_D);
	assert_true(s0->overflow + s1->overflow + s2->overflow == 0);
	world_free(w);
}

/* ---- many copies, large copies ----------------------------------------------------------- */

static void test_many_outstanding(void **state)
{
	(void)state;
	for (size_t m = 0; m < NMODES; m++) {
		struct world *w = world_new(6, 512, 3, 0);
		struct req *q[150];
		unsigned n = 0;

		/* 5 initiators, all ordering S = 1 to copy into D = 2, and 25
		 * more copies from 3 sources into D = 0: all outstanding at once. */
		for (uint32_t i = 0; i < 5; i++)
			for (int k = 0; k < 25; k++) {
				uint64_t len = 1 + rnd_below(3000);

				q[n++] = issue(w, i == 1 ? 5 : i, 1, 2, W_SRC,
					       rnd_below(SRC_SIZE - len), W_DST,
					       dst_region(w, 2, len), len, modes[m],
					       TR_COPY_NO_DEADLINE);
			}
		for (int k = 0; k < 25; k++) {
			uint64_t len = rnd_below(2000);
			uint32_t s = 3 + (uint32_t)(k % 3);

			q[n++] = issue(w, 4, s, 0, W_SRC, rnd_below(SRC_SIZE - len), W_DST,
				       dst_region(w, 0, len), len, modes[m],
				       TR_COPY_NO_DEADLINE);
		}
		w->random = true;
		uint32_t most = 0;
		while (step(w))
			if (tr_copy_orders_live(&w->r[1].c) > most)
				most = tr_copy_orders_live(&w->r[1].c);
		assert_true(most > 50); /* S = 1 served many at once */
		for (unsigned i = 0; i < n; i++)
			check_ok(w, q[i]);
		assert_true(STAT(w, orders) == 150);
		check_idle(w);
		assert_true(STAT(w, unknown) + STAT(w, duplicate) + STAT(w, inconsistent) == 0);
		world_free(w);
	}
}

/* A source with a full table refuses with NO_MEMORY at the source; an
 * initiator with a full table refuses the request. */
static void test_tables_full(void **state)
{
	struct world *w = world_new(3, 1000, 1, 0);
	struct acts x;
	struct tr_copy_hdr o = order_of(1, 2, 10, TR_COPY_RELAY);
	static int req;
	uint64_t op;

	(void)state;
	w->lookup_hold = true; /* orders stay in DESC */
	for (int i = 0; i < NS; i++)
		issue(w, 0, 1, 2, W_SRC, 0, W_DST, 0, 10, TR_COPY_RELAY, TR_COPY_NO_DEADLINE);
	run(w);
	assert_int_equal(tr_copy_orders_live(&w->r[1].c), NS);
	struct req *q = issue(w, 0, 1, 2, W_SRC, 0, W_DST, 0, 10, TR_COPY_RELAY,
			      TR_COPY_NO_DEADLINE);
	run(w);
	check_done(q, TRIAD_S_NO_MEMORY, TR_COPY_LEG_AT_SRC);
	assert_true(tr_copy_stats(&w->r[1].c)->refused == 1);
	w->lookup_hold = false;
	run(w);
	for (unsigned i = 0; i < NS; i++)
		check_ok(w, &w->reqs[i]);

	/* Fill I's table */
	for (int i = 0; i < NI; i++)
		REQUEST(&w->r[0], &o, &req, TR_COPY_NO_DEADLINE, &op, &x);
	assert_int_equal(REQUEST(&w->r[0], &o, &req, TR_COPY_NO_DEADLINE, &op, &x), -EAGAIN);
	/* peer gone, tick and cancel take more than one array: call until 0 */
	assert_int_equal(TICK(&w->r[0], 5, &x), 0);
	assert_int_equal(GONE(&w->r[0], 1, &x), TR_COPY_ACTS);
	int total = x.n, calls = 1;
	while (GONE(&w->r[0], 1, &x) > 0) {
		total += x.n;
		calls++;
	}
	assert_int_equal(total, NI);
	assert_true(calls >= NI / TR_COPY_ACTS);
	assert_int_equal(tr_copy_requests_live(&w->r[0].c), 0);

	for (int i = 0; i < NI; i++)
		REQUEST(&w->r[0], &o, &req, 7, &op, &x);
	total = 0;
	while (TICK(&w->r[0], 7, &x) > 0)
		total += x.n;
	assert_int_equal(total, NI);
	for (int i = 0; i < NI; i++)
		REQUEST(&w->r[0], &o, &req, 7, &op, &x);
	total = 0;
	while ((x.n = tr_copy_cancel_all(&w->r[0].c, x.a, TR_COPY_ACTS)) > 0) {
		for (int i = 0; i < x.n; i++)
			expect_complete(&x.a[i], &req, TRIAD_S_CANCELLED, TR_COPY_LEG_NONE);
		total += x.n;
	}
	assert_int_equal(total, NI);
	assert_true(tr_copy_stats(&w->r[0].c)->overflow == 0);
	world_free(w);
}

/* The source side of the bulk calls: a D that goes away, or a clock that
 * runs out, with more orders than one action array takes; cancel_all
 * drops the orders. */
static void test_bulk_source_side(void **state)
{
	struct world *w = world_new(3, 1000, 1, 100);
	struct tr_copy_act a[TR_COPY_ACTS];
	unsigned n = 2 * TR_COPY_ACTS + 3, total, calls;
	int k;

	(void)state;
	w->lookup_hold = true; /* orders stay in DESC at S */
	for (unsigned i = 0; i < n; i++)
		issue(w, 0, 1, 2, W_SRC, 0, W_DST, 0, 10, TR_COPY_RELAY, TR_COPY_NO_DEADLINE);
	run(w);
	assert_int_equal(tr_copy_orders_live(&w->r[1].c), n);
	total = calls = 0;
	while ((k = tr_copy_peer_gone(&w->r[1].c, 2, a, TR_COPY_ACTS)) > 0) {
		for (int i = 0; i < k; i++)
			expect_send(&a[i], TR_COPY_DONE, 0, a[i].hdr.op_id, TRIAD_S_UNREACHABLE,
				    TR_COPY_LEG_S_D);
		run_acts(w, 1, a, k);
		total += (unsigned)k;
		calls++;
	}
	assert_int_equal(total, n);
	assert_int_equal(calls, 3);
	drop_lookups(w); /* the fabric gave up on them */
	w->lookup_hold = false;
	run(w);
	for (unsigned i = 0; i < n; i++)
		check_done(&w->reqs[i], TRIAD_S_UNREACHABLE, TR_COPY_LEG_S_D);

	/* the same orders again, timed out by S */
	w->lookup_hold = true;
	for (unsigned i = 0; i < n; i++)
		issue(w, 0, 1, 2, W_SRC, 0, W_DST, 0, 10, TR_COPY_RELAY, TR_COPY_NO_DEADLINE);
	run(w);
	assert_int_equal(tr_copy_tick(&w->r[1].c, 1000, a, TR_COPY_ACTS), 0); /* stamps */
	assert_int_equal(tr_copy_tick(&w->r[1].c, 1099, a, TR_COPY_ACTS), 0);
	total = 0;
	while ((k = tr_copy_tick(&w->r[1].c, 1100, a, TR_COPY_ACTS)) > 0) {
		run_acts(w, 1, a, k);
		total += (unsigned)k;
	}
	assert_int_equal(total, n);
	drop_lookups(w);
	w->lookup_hold = false;
	run(w);
	for (unsigned i = n; i < 2 * n; i++)
		check_done(&w->reqs[i], TRIAD_S_TIMEOUT, TR_COPY_LEG_S_D);

	/* a deadline beyond the end of time never fires */
	issue(w, 0, 1, 2, W_SRC, 0, W_DST, 0, 10, TR_COPY_RELAY, TR_COPY_NO_DEADLINE);
	w->lookup_hold = true;
	run(w);
	tick(w, 1, UINT64_MAX - 10);
	tick(w, 1, UINT64_MAX);
	assert_int_equal(tr_copy_orders_live(&w->r[1].c), 1);

	/* cancel_all at S drops its orders silently */
	assert_int_equal(tr_copy_cancel_all(&w->r[1].c, a, TR_COPY_ACTS), 0);
	assert_int_equal(tr_copy_orders_live(&w->r[1].c), 0);
	assert_true(tr_copy_stats(&w->r[1].c)->overflow == 0);
	world_free(w);
}

/* Copies far larger than a chunk: completion only after every chunk and
 * the answer; never more chunks in flight than configured. */
static void test_large_chunked(void **state)
{
	(void)state;
	for (size_t m = 0; m < NMODES; m++) {
		static const struct {
			uint64_t chunk;
			unsigned inflight;
			uint64_t len;
		} cases[] = {
			{ 4096, 8, 1000000 + 123 }, { 1, 32, 3000 }, { 65536, 1, 1000000 },
			{ 777, 5, 777 * 64 },
		};

		for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
			struct world *w = world_new(3, cases[i].chunk, cases[i].inflight, 0);
			struct req *q;
			uint64_t len = cases[i].len;

			/* a source window large enough */
			win_set(&w->r[1], 0, W_SRC, len + 10, TRIAD_WIN_READ, TRIAD_WIN_READ,
				false);
			for (uint64_t b = 0; b < len + 10; b++)
				w->r[1].wins[0].buf[b] = pattern(1, b);
			q = issue(w, 0, 1, 2, W_SRC, 10, W_DST, 3, len, modes[m],
				  TR_COPY_NO_DEADLINE);
			w->random = i % 2;
			run(w);
			check_ok(w, q);
			assert_true(q->posted == tr_chunk_count(len, cases[i].chunk));
			assert_true(q->reported == q->posted);
			assert_int_equal(q->inflight_max, cases[i].inflight);
			check_idle(w);
			world_free(w);
		}
	}
}

/* ---- degenerate roles ------------------------------------------------------------------ */

static void test_degenerate_roles(void **state)
{
	static const uint32_t roles[][3] = {
		{ 0, 0, 1 }, /* I == S */
		{ 0, 1, 0 }, /* I == D */
		{ 0, 1, 1 }, /* S == D */
		{ 0, 0, 0 }, /* I == S == D */
	};

	(void)state;
	for (size_t m = 0; m < NMODES; m++) {
		for (size_t r = 0; r < sizeof(roles) / sizeof(roles[0]); r++) {
			struct world *w = world_new(2, 1000, 2, 0);
			uint32_t i = roles[r][0], s = roles[r][1], d = roles[r][2];
			bool local = s == d;
			struct req *q;

			q = issue(w, i, s, d, W_SRC, 5, W_DST, dst_region(w, d, 3500), 3500,
				  modes[m], TR_COPY_NO_DEADLINE);
			if (i == s && s == d) /* all done inside the request */
				assert_int_equal(q->ncomplete, 1);
			run(w);
			check_ok(w, q);
			assert_true(STAT(w, local_copies) == local);
			assert_true(STAT(w, chunks) == (local ? 0 : 4));
			/* notify: D's software takes part, or S == D */
			assert_int_equal(w->r[d].notified,
					 modes[m] == TR_COPY_TRANSPORT_ACK ? 0 : 1);

			/* and its errors */
			q = issue(w, i, s, d, W_NONE, 0, W_DST, 0, 10, modes[m],
				  TR_COPY_NO_DEADLINE);
			if (i == s)
				assert_int_equal(q->ncomplete, 1);
			run(w);
			check_done(q, TRIAD_S_NO_WINDOW, TR_COPY_LEG_AT_SRC);
			q = issue(w, i, s, d, W_SRC, 0, W_DST, DST_SIZE, 10, modes[m],
				  TR_COPY_NO_DEADLINE);
			run(w);
			check_done(q, TRIAD_S_OUT_OF_BOUNDS, TR_COPY_LEG_AT_DST);
			q = issue(w, i, s, d, W_SRC, 0, W_STALE, 0, 10, modes[m],
				  TR_COPY_NO_DEADLINE);
			run(w);
			if (local) /* S == D looks at its own table */
				check_done(q, TRIAD_S_ACCESS, TR_COPY_LEG_AT_DST);
			else if (modes[m] == TR_COPY_TRANSPORT_ACK)
				check_ok(w, q);
			else
				check_done(q, TRIAD_S_ACCESS, TR_COPY_LEG_AT_DST);
			if (!local) {
				q = issue(w, i, s, d, W_SRC, 0, W_DST, 0, 3000, modes[m],
					  TR_COPY_NO_DEADLINE);
				q->fault_chunk = 1;
				run(w);
				check_done(q, TRIAD_S_REMOTE_ACCESS, TR_COPY_LEG_S_D);
			}
			/* A copy within one window, overlapping itself */
			if (local) {
				struct win *dw = win_of(&w->r[d], W_DST);
				struct req *q2;

				win_set(&w->r[d], 1, W_DST, DST_SIZE, RW, RW, false);
				dw = win_of(&w->r[d], W_DST);
				for (int b = 0; b < 100; b++)
					dw->buf[b] = (uint8_t)b;
				q2 = issue(w, i, s, d, W_DST, 0, W_DST, 10, 90, modes[m],
					   TR_COPY_NO_DEADLINE);
				run(w);
				check_done(q2, TRIAD_S_OK, TR_COPY_LEG_NONE);
				for (int b = 10; b < 100; b++)
					assert_int_equal(dw->buf[b], b - 10);
			}
			check_idle(w);
			assert_true(STAT(w, unknown) + STAT(w, duplicate) + STAT(w, inconsistent) ==
				    0);
			world_free(w);
		}
	}
}

/* I == S and I == D when a peer goes. */
static void test_degenerate_gone(void **state)
{
	(void)state;
	for (size_t m = 0; m < NMODES; m++) {
		/* I == S, D gone while writing: S's view names the leg */
		struct world *w = world_new(2, 1000, 1, 0);
		struct req *q = issue(w, 0, 0, 1, W_SRC, 0, W_DST, 0, 3000, modes[m],
				      TR_COPY_NO_DEADLINE);

		assert_true(step(w)); /* the lookup */
		kill_rank(w, 1);
		run(w);
		assert_int_equal(q->ncomplete, 1);
		assert_int_equal(q->leg, TR_COPY_LEG_S_D);
		check_idle(w);
		world_free(w);

		/* I == D, S gone after delivery */
		w = world_new(2, 1000, 1, 0);
		q = issue(w, 0, 1, 0, W_SRC, 0, W_DST, 0, 3000, modes[m], TR_COPY_NO_DEADLINE);
		assert_true(step(w) && step(w)); /* START, delivered */
		kill_rank(w, 1);
		run(w);
		check_done(q, TRIAD_S_UNREACHABLE, TR_COPY_LEG_S_I);
		check_idle(w);
		world_free(w);
	}
}

/* ---- init, names ------------------------------------------------------------------------- */

static void test_names(void **state)
{
	(void)state;
	assert_string_equal(tr_copy_mode_str(TR_COPY_RELAY), "relay");
	assert_string_equal(tr_copy_mode_str(TR_COPY_DIRECT), "direct");
	assert_string_equal(tr_copy_mode_str(TR_COPY_TRANSPORT_ACK), "transport_ack");
	assert_string_equal(tr_copy_mode_str(TR_COPY_NMODES), "?");
	assert_string_equal(tr_copy_msg_str(TR_COPY_START), "COPY_START");
	assert_string_equal(tr_copy_msg_str(TR_COPY_DONE), "COPY_DONE");
	assert_string_equal(tr_copy_msg_str(-1u), "?");
	assert_string_equal(tr_copy_leg_str(TR_COPY_LEG_NONE), "none");
	assert_string_equal(tr_copy_leg_str(TR_COPY_LEG_D_RESP), "D->S/I");
	assert_string_equal(tr_copy_leg_str(TR_COPY_NLEGS), "?");
	assert_string_equal(tr_copy_act_str(TR_COPY_ACT_WRITE), "write");
	assert_string_equal(tr_copy_act_str(TR_COPY_NACTS), "?");
	assert_string_equal(tr_copy_istate_str(TR_COPY_I_DELIVERED), "delivered");
	assert_string_equal(tr_copy_istate_str(TR_COPY_I_NSTATES), "?");
	assert_string_equal(tr_copy_sstate_str(TR_COPY_S_DRAIN), "drain");
	assert_string_equal(tr_copy_sstate_str(TR_COPY_S_NSTATES), "?");
	for (unsigned i = 0; i < TR_COPY_NLEGS; i++)
		assert_string_not_equal(tr_copy_leg_str(i), "?");
	for (unsigned i = 0; i < TR_COPY_NACTS; i++)
		assert_string_not_equal(tr_copy_act_str(i), "?");
	for (unsigned i = 0; i < TR_COPY_S_NSTATES; i++)
		assert_string_not_equal(tr_copy_sstate_str(i), "?");
}

static void test_init_validation(void **state)
{
	struct world *w = world_new(2, 1, 1, 0);
	struct rank *r = &w->r[0];
	struct tr_copy c, before;
	struct tr_copy_cfg ok = rank_cfg(r, 2, 64, 4, 0), cfg;
	struct acts x;
	struct tr_copy_hdr o;
	int req;
	uint64_t op = 77;

	(void)state;
	memset(&c, 0x5a, sizeof(c));
	before = c;
	for (int i = 0; i < 12; i++) {
		cfg = ok;
		switch (i) {
		case 0: cfg.nranks = 0; break;
		case 1: cfg.rank = 2; break;
		case 2: cfg.chunk = 0; break;
		case 3: cfg.inflight = 0; break;
		case 4: cfg.inflight = TR_COPY_MAX_INFLIGHT + 1; break;
		case 5: cfg.iops = NULL; break;
		case 6: cfg.niops = 0; break;
		case 7: cfg.sops = NULL; break;
		case 8: cfg.nsops = 0; break;
		case 9: cfg.win = NULL; break;
		case 10: cfg.niops = UINT32_MAX; break;
		default: cfg.nsops = UINT32_MAX; break;
		}
		assert_int_equal(tr_copy_init(&c, &cfg), -EINVAL);
		assert_memory_equal(&c, &before, sizeof(c));
	}
	assert_int_equal(tr_copy_init(&c, NULL), -EINVAL);
	cfg = ok;
	cfg.inflight = TR_COPY_MAX_INFLIGHT;
	assert_int_equal(tr_copy_init(&r->c, &cfg), 0);

	/* bad requests change nothing */
	o = order_of(1, 2, 10, TR_COPY_RELAY);
	assert_int_equal(REQUEST(r, &o, &req, 0, &op, &x), -EINVAL);
	o = order_of(2, 1, 10, TR_COPY_RELAY);
	assert_int_equal(REQUEST(r, &o, &req, 0, &op, &x), -EINVAL);
	o = order_of(1, 0, 10, TR_COPY_NMODES);
	assert_int_equal(REQUEST(r, &o, &req, 0, &op, &x), -EINVAL);
	o = order_of(1, 0, 10, TR_COPY_RELAY);
	assert_int_equal(tr_copy_request(&r->c, NULL, &req, 0, &op, x.a, TR_COPY_ACTS), -EINVAL);
	assert_int_equal(tr_copy_request(&r->c, &o, &req, 0, NULL, x.a, TR_COPY_ACTS), -EINVAL);
	assert_int_equal(tr_copy_request(&r->c, &o, &req, 0, &op, NULL, TR_COPY_ACTS), -EINVAL);
	assert_int_equal(tr_copy_request(&r->c, &o, &req, 0, &op, x.a, 3), -EINVAL);
	assert_int_equal(op, 77);
	assert_int_equal(tr_copy_requests_live(&r->c), 0);
	assert_true(tr_copy_stats(&r->c)->requests == 0);
	assert_int_equal(GONE(r, 0, &x), -EINVAL);
	assert_int_equal(GONE(r, 2, &x), -EINVAL);
	assert_int_equal(tr_copy_tick(&r->c, 0, x.a, 1), -EINVAL);
	assert_int_equal(tr_copy_cancel_all(&r->c, NULL, 0), -EINVAL);

	/* op ids: never 0, distinct, also when slots are reused */
	uint64_t seen[3 * NI];
	for (int k = 0; k < 3 * NI; k++) {
		assert_true(REQUEST(r, &o, &req, 0, &seen[k], &x) == 1);
		assert_true(seen[k] != 0);
		for (int j = 0; j < k; j++)
			assert_true(seen[j] != seen[k]);
		if (k % 2)
			while (tr_copy_tick(&r->c, 1, x.a, TR_COPY_ACTS) > 0)
				;
	}
	world_free(w);
}

/* len 0 probes the path: no chunk, every message. */
static void test_zero_length(void **state)
{
	(void)state;
	for (size_t m = 0; m < NMODES; m++) {
		struct world *w = world_new(3, 1000, 2, 0);
		struct req *q = issue(w, 0, 1, 2, W_SRC, SRC_SIZE, W_DST, DST_SIZE, 0, modes[m],
				      TR_COPY_NO_DEADLINE);

		run(w);
		check_done(q, TRIAD_S_OK, TR_COPY_LEG_NONE);
		assert_true(STAT(w, chunks) == 0);
		assert_true(STAT(w, answered) == (modes[m] == TR_COPY_TRANSPORT_ACK ? 0 : 1));
		check_idle(w);
		world_free(w);
	}
}

/* ---- randomised ---------------------------------------------------------------------------- */

enum fault { F_NONE, F_SRC_WIN, F_SRC_OOB, F_SRC_ACCESS, F_DST_WIN, F_DST_OOB, F_DST_ACCESS,
	     F_DST_STALE, F_CHUNK, F_LOOKUP, F_NFAULTS };

struct rreq {
	struct req *q;
	enum fault f;
};

/* The outcome when nothing goes away: the first fault on the path.  A
 * copy that carries its data asks for no descriptor, and its one message
 * stands for chunk 0. */
static void expected(const struct world *w, const struct req *q, enum fault f,
		     enum triad_status *st, enum tr_copy_leg *leg)
{
	bool local = q->order.source == q->order.destination, carried = carries(w, q);

	*st = TRIAD_S_OK;
	*leg = TR_COPY_LEG_NONE;
	switch (f) {
	case F_SRC_WIN: *st = TRIAD_S_NO_WINDOW; *leg = TR_COPY_LEG_AT_SRC; break;
	case F_SRC_OOB: *st = TRIAD_S_OUT_OF_BOUNDS; *leg = TR_COPY_LEG_AT_SRC; break;
	case F_SRC_ACCESS: *st = TRIAD_S_ACCESS; *leg = TR_COPY_LEG_AT_SRC; break;
	case F_DST_WIN: *st = TRIAD_S_NO_WINDOW; *leg = TR_COPY_LEG_AT_DST; break;
	case F_DST_OOB: *st = TRIAD_S_OUT_OF_BOUNDS; *leg = TR_COPY_LEG_AT_DST; break;
	case F_DST_ACCESS: *st = TRIAD_S_ACCESS; *leg = TR_COPY_LEG_AT_DST; break;
	case F_DST_STALE:
		if (local || q->order.mode != TR_COPY_TRANSPORT_ACK) {
			*st = TRIAD_S_ACCESS;
			*leg = TR_COPY_LEG_AT_DST;
		}
		break;
	case F_CHUNK:
		if (carried && q->fault_chunk == 0) {
			*st = TRIAD_S_TRANSPORT;
			*leg = TR_COPY_LEG_S_D;
		} else if (!local && !carried && q->nchunks > 0) {
			*st = TRIAD_S_REMOTE_ACCESS;
			*leg = TR_COPY_LEG_S_D;
		}
		break;
	case F_LOOKUP:
		if (!local && !carried) {
			*st = TRIAD_S_UNREACHABLE;
			*leg = TR_COPY_LEG_S_D;
		}
		break;
	default: break;
	}
}

/* A failure a dead S or D explains, on the leg where the copy was. */
static bool death_explains(const struct world *w, const struct req *q)
{
	bool s_dead = w->r[q->order.source].dead, d_dead = w->r[q->order.destination].dead;

	switch (q->leg) {
	case TR_COPY_LEG_I_S:
		return s_dead && q->status == TRIAD_S_UNREACHABLE && !q->done_delivered;
	case TR_COPY_LEG_S_I:
		return s_dead && q->status == TRIAD_S_UNREACHABLE && q->done_delivered;
	case TR_COPY_LEG_S_D:
		return d_dead &&
		       (q->status == TRIAD_S_UNREACHABLE || q->status == TRIAD_S_TRANSPORT);
	case TR_COPY_LEG_D_RESP:
		/* at S (not DIRECT): every chunk had completed */
		if (q->order.mode != TR_COPY_DIRECT &&
		    (!q->done_data_sent || q->done_reported != q->nchunks))
			return false;
		return d_dead && q->status == TRIAD_S_UNREACHABLE;
	default:
		return false;
	}
}

#define RND_DST_SIZE (128 * 1024) /* 40 copies of up to 3000 bytes */

static void random_run(uint64_t seed, unsigned *stats)
{
	struct world *w;
	struct rreq rq[64];
	unsigned nr, nreq, nkill, killed = 0;
	uint64_t chunk;
	static const uint64_t chunks[] = { 1, 64, 256, 1000 };
	static const uint64_t eagers[] = { 0, 0, 1, 100, 1000, 4096 };

	rng_state = seed;
	if (getenv("COPY_SEED_TRACE")) /* to replay a failing run */
		fprintf(stderr, "seed %llu\n", (unsigned long long)seed);
	nr = 2 + (unsigned)rnd_below(5);
	chunk = chunks[rnd_below(4)];
	w = world_new_sized(nr, chunk, 1 + (unsigned)rnd_below(6), 0, RND_DST_SIZE);
	world_eager(w, eagers[rnd_below(6)]);
	nreq = 1 + (unsigned)rnd_below(40);
	nkill = (unsigned)rnd_below(3);
	if (nkill >= nr)
		nkill = nr - 1;

	for (unsigned k = 0; k < nreq; k++) {
		uint32_t i = (uint32_t)rnd_below(nr), s = (uint32_t)rnd_below(nr),
			 d = (uint32_t)rnd_below(nr);
		uint64_t len = rnd_below(chunk == 1 ? 300 : 3000);
		unsigned mode = (unsigned)rnd_below(TR_COPY_NMODES);
		enum fault f = rnd_below(3) ? F_NONE : (enum fault)(1 + rnd_below(F_NFAULTS - 1));
		uint32_t sw = W_SRC, dw = W_DST;
		uint64_t so = rnd_below(SRC_SIZE - len + 1), dof = dst_region(w, d, len);
		struct req *q;

		switch (f) {
		case F_SRC_WIN: sw = W_NONE; break;
		case F_SRC_OOB: so = SRC_SIZE - len + 1 + rnd_below(5); break;
		case F_SRC_ACCESS: sw = W_DST; break;
		case F_DST_WIN: dw = W_NONE; break;
		case F_DST_OOB: dof = RND_DST_SIZE - len + 1; break;
		case F_DST_ACCESS: dw = W_SRC; break;
		case F_DST_STALE: dw = W_STALE; break;
		default: break;
		}
		q = issue(w, i, s, d, sw, so, dw, dof, len, mode, TR_COPY_NO_DEADLINE);
		/* in time: the lookup and the writes come later */
		q->lookup_fails = f == F_LOOKUP;
		if (f == F_CHUNK && q->nchunks)
			q->fault_chunk = (int64_t)rnd_below(q->nchunks);
		rq[k] = (struct rreq){ q, f };
	}

	w->random = true;
	while (w->nitems) {
		if (killed < nkill && rnd_below(100) == 0) {
			uint32_t x = (uint32_t)rnd_below(nr);

			if (!w->r[x].dead) {
				kill_rank(w, x);
				killed++;
			}
		}
		step(w);
	}

	for (unsigned k = 0; k < nreq; k++) {
		struct req *q = rq[k].q;
		enum triad_status st;
		enum tr_copy_leg leg;

		if (w->r[q->rank].dead)
			continue;
		if (q->ncomplete != 1)
			fail_msg("seed %llu: op %llu completed %d times",
				 (unsigned long long)seed, (unsigned long long)q->op_id,
				 q->ncomplete);
		expected(w, q, rq[k].f, &st, &leg);
		if (q->status == st && q->leg == leg) {
			if (st == TRIAD_S_OK)
				check_data(w, q);
			stats[st == TRIAD_S_OK ? 0 : 1]++;
			continue;
		}
		if (!death_explains(w, q))
			fail_msg("seed %llu: op %llu (%s %u->%u->%u fault %d) ended %u/%s, "
				 "want %u/%s (dead S %d D %d)",
				 (unsigned long long)seed, (unsigned long long)q->op_id,
				 tr_copy_mode_str(q->order.mode), q->rank, q->order.source,
				 q->order.destination, rq[k].f, q->status,
				 tr_copy_leg_str(q->leg), st, tr_copy_leg_str(leg),
				 w->r[q->order.source].dead, w->r[q->order.destination].dead);
		stats[2]++;
	}
	check_idle(w);
	/* Nothing the engines said to each other was ever refused: the drops
	 * are late completions of chunks after a failure or a death. */
	assert_true(STAT(w, duplicate) + STAT(w, inconsistent) + STAT(w, overflow) == 0);
	stats[3] += (unsigned)STAT(w, unknown);
	world_free(w);
}

static void test_random(void **state)
{
	unsigned stats[4] = { 0 };

	(void)state;
	for (uint64_t seed = 1; seed <= 1500; seed++)
		random_run(seed * 0x9e3779b97f4a7c15ull, stats);
	print_message("random: %u OK, %u failed as expected, %u failed by a death, "
		      "%u stale events dropped\n", stats[0], stats[1], stats[2], stats[3]);
	assert_true(stats[0] > 10000 && stats[1] > 5000 && stats[2] > 1000 && stats[3] > 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_names),
		cmocka_unit_test(test_init_validation),
		cmocka_unit_test(test_relay_steps),
		cmocka_unit_test(test_relay_resp_before_chunks),
		cmocka_unit_test(test_window_out_of_order),
		cmocka_unit_test(test_direct_steps),
		cmocka_unit_test(test_transport_ack_steps),
		cmocka_unit_test(test_carried_steps),
		cmocka_unit_test(test_flows_ok),
		cmocka_unit_test(test_zero_length),
		cmocka_unit_test(test_source_window_errors),
		cmocka_unit_test(test_destination_errors),
		cmocka_unit_test(test_destination_errors_at_d),
		cmocka_unit_test(test_chunk_error),
		cmocka_unit_test(test_chunk_refused),
		cmocka_unit_test(test_gone_source),
		cmocka_unit_test(test_gone_destination_at_source),
		cmocka_unit_test(test_gone_keeps_first_error),
		cmocka_unit_test(test_gone_flows),
		cmocka_unit_test(test_timeouts),
		cmocka_unit_test(test_source_timeout),
		cmocka_unit_test(test_timeout_initiator_is_source),
		cmocka_unit_test(test_timeout_flows),
		cmocka_unit_test(test_drops),
		cmocka_unit_test(test_many_outstanding),
		cmocka_unit_test(test_tables_full),
		cmocka_unit_test(test_bulk_source_side),
		cmocka_unit_test(test_large_chunked),
		cmocka_unit_test(test_degenerate_roles),
		cmocka_unit_test(test_degenerate_gone),
		cmocka_unit_test(test_random),
	};

	return cmocka_run_group_tests_name("copy", tests, NULL, NULL);
}
