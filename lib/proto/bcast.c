#include "proto/bcast.h"

#include <errno.h>
#include <stddef.h>

#include "proto/chunk.h"

#define NIL TR_BCAST_NO_RANK

/* struct tr_bcast_rank.flags */
#define F_DEAD 0x01	/* reported failed */
#define F_READY 0x02	/* in the ready queue */
#define F_RELEASE 0x04	/* owed a RANK_DONE (queued) or told already */
#define F_COMPLETE 0x08 /* holds every chunk (counted in ncomplete) */

static const char *const algo_names[TR_BCAST_NALGOS] = {
	[TR_BCAST_AUTO] = "auto",
	[TR_BCAST_GREEDY] = "greedy",
	[TR_BCAST_BINOMIAL] = "binomial",
	[TR_BCAST_PIPELINE] = "pipeline",
};

static const char *const act_names[TR_BCAST_NACTS] = {
	[TR_BCAST_ACT_COPY] = "copy",
	[TR_BCAST_ACT_PUT] = "put",
	[TR_BCAST_ACT_RANK_DONE] = "rank_done",
	[TR_BCAST_ACT_DONE] = "done",
};

const char *tr_bcast_algo_str(unsigned algo)
{
	return algo < TR_BCAST_NALGOS ? algo_names[algo] : "?";
}

const char *tr_bcast_act_str(unsigned type)
{
	return type < TR_BCAST_NACTS ? act_names[type] : "?";
}

/* ---- helpers -------------------------------------------------------------- */

static unsigned floor_log2(uint64_t x)
{
	unsigned l = 0;

	while (x >>= 1)
		l++;
	return l;
}

static unsigned ceil_log2(uint64_t x)
{
	return x <= 1 ? 0 : floor_log2(x - 1) + 1;
}

static bool status_final(unsigned s)
{
	return s < TRIAD_S_MAX && s != TRIAD_S_PENDING;
}

static uint32_t rel_of(const struct tr_bcast *b, uint32_t r)
{
	uint32_t n = b->cfg.nranks;

	return (uint32_t)(((uint64_t)r + n - b->cfg.root) % n);
}

static uint32_t abs_of(const struct tr_bcast *b, uint32_t v)
{
	return (uint32_t)(((uint64_t)v + b->cfg.root) % b->cfg.nranks);
}

static struct tr_bcast_rank *rk(struct tr_bcast *b, uint32_t r)
{
	return &b->cfg.ranks[r];
}

/* Rank r holds chunk k. */
static bool holds(const struct tr_bcast *b, uint32_t r, uint64_t k)
{
	const struct tr_bcast_rank *e = &b->cfg.ranks[r];

	if (k < e->have)
		return true;
	return k - e->have < 64 && (e->bits >> (k - e->have) & 1);
}

/* PIPELINE tree, in absolute ranks. */
static uint32_t pipe_parent(const struct tr_bcast *b, uint32_t r)
{
	return abs_of(b, (rel_of(b, r) - 1) / b->cfg.fanout);
}

/* The first child's relative rank and how many children r has. */
static uint32_t pipe_kids(const struct tr_bcast *b, uint32_t r, uint64_t *first)
{
	uint64_t f = b->cfg.fanout, n = b->cfg.nranks;
	uint64_t c = (uint64_t)rel_of(b, r) * f + 1;

	*first = c;
	if (c >= n)
		return 0;
	return (uint32_t)(n - c < f ? n - c : f);
}

/* BINOMIAL: the last round in which relative rank v sends, or -1. */
static int binomial_last_round(const struct tr_bcast *b, uint32_t v)
{
	uint64_t n = b->cfg.nranks;
	unsigned first = v == 0 ? 0 : floor_log2(v) + 1;
	unsigned last;

	if (n - 1 - v < 1)
		return -1;
	last = floor_log2(n - 1 - v);
	return last >= first && last < b->nrounds ? (int)last : -1;
}

/* ---- queues ----------------------------------------------------------------- */

static void ready_push(struct tr_bcast *b, uint32_t r)
{
	struct tr_bcast_rank *e = rk(b, r);

	if (e->flags & F_READY)
		return;
	e->flags |= F_READY;
	e->rnext = NIL;
	if (b->rtail == NIL)
		b->rhead = r;
	else
		rk(b, b->rtail)->rnext = r;
	b->rtail = r;
}

static uint32_t ready_pop(struct tr_bcast *b)
{
	uint32_t r = b->rhead;

	if (r == NIL)
		return NIL;
	b->rhead = rk(b, r)->rnext;
	if (b->rhead == NIL)
		b->rtail = NIL;
	rk(b, r)->flags &= (uint8_t)~F_READY;
	return r;
}

/* Rank r is owed its RANK_DONE (once). */
static void release(struct tr_bcast *b, uint32_t r)
{
	struct tr_bcast_rank *e = rk(b, r);

	if (r == b->cfg.root || (e->flags & (F_RELEASE | F_DEAD)))
		return;
	e->flags |= F_RELEASE;
	e->lnext = NIL;
	if (b->ltail == NIL)
		b->lhead = r;
	else
		rk(b, b->ltail)->lnext = r;
	b->ltail = r;
}

/* After an abort: r gets its RANK_DONE once nothing moves into or out of
 * it. */
static void release_if_quiet(struct tr_bcast *b, uint32_t r)
{
	const struct tr_bcast_rank *e = rk(b, r);

	if (e->in == 0 && e->busy == 0)
		release(b, r);
}

/* ---- actions ------------------------------------------------------------------ */

struct out {
	struct tr_bcast_act *a;
	unsigned n, cap;
};

static bool out_full(const struct out *o)
{
	return o->n >= o->cap;
}

static struct tr_bcast_act *out_add(struct out *o, enum tr_bcast_act_type type)
{
	struct tr_bcast_act *a = &o->a[o->n++];

	*a = (struct tr_bcast_act){ .type = type, .failed = NIL };
	return a;
}

/* Asks for chunk sent(d) from s into d (the caller checked the room). */
static void emit_xfer(struct tr_bcast *b, struct out *o, uint32_t s, uint32_t d)
{
	struct tr_bcast_rank *de = rk(b, d);
	uint64_t chunk = de->sent;
	uint64_t off = chunk * b->cfg.chunk;
	struct tr_bcast_act *a;

	a = out_add(o, s == b->cfg.root ? TR_BCAST_ACT_PUT : TR_BCAST_ACT_COPY);
	a->src = s;
	a->dst = d;
	a->chunk = chunk;
	a->off = off;
	a->len = tr_chunk_len(b->cfg.len, b->cfg.chunk, off);
	if (s == b->cfg.root)
		b->stats.puts++;
	else
		b->stats.copies++;
	de->sent++;
	de->src = s;
	de->in++;
	rk(b, s)->busy++;
	b->inflight++;
}

/* GREEDY: serve the idle holders in the ready queue. */
static void greedy_pump(struct tr_bcast *b, struct out *o)
{
	uint32_t n = b->cfg.nranks;

	while (b->rhead != NIL) {
		uint32_t s = b->rhead, t;

		while (b->next_target < n && (b->next_target == b->cfg.root ||
					      rk(b, b->next_target)->sent > 0))
			b->next_target++;
		t = b->next_target;
		if (t == n) {
			/* Nobody left to send to: s is done for good. */
			ready_pop(b);
			release(b, s);
			continue;
		}
		if (out_full(o))
			return;
		ready_pop(b);
		emit_xfer(b, o, s, t);
		b->next_target++;
		b->cursor = s;
	}
}

/* GREEDY: the idle holders a completion made, in cyclic order from the
 * sender served last. */
static void greedy_ready(struct tr_bcast *b, uint32_t x, uint32_t y)
{
	uint64_t n = b->cfg.nranks;
	uint64_t dx = ((uint64_t)x + n - b->cursor) % n;
	uint64_t dy = ((uint64_t)y + n - b->cursor) % n;

	if (dy < dx) {
		uint32_t t = x;

		x = y;
		y = t;
	}
	ready_push(b, x);
	ready_push(b, y);
}

static void binomial_round(struct tr_bcast *b)
{
	uint64_t step = 1ull << b->round;
	uint64_t cnt = b->cfg.nranks - step < step ? b->cfg.nranks - step : step;

	b->stats.rounds++;
	b->round_left = (uint32_t)cnt;
	for (uint64_t v = 0; v < cnt; v++)
		ready_push(b, abs_of(b, (uint32_t)v));
}

static void binomial_pump(struct tr_bcast *b, struct out *o)
{
	uint64_t step = 1ull << b->round;

	while (b->rhead != NIL && !out_full(o)) {
		uint32_t s = ready_pop(b);

		emit_xfer(b, o, s, abs_of(b, (uint32_t)(rel_of(b, s) + step)));
	}
}

/* PIPELINE: fill the link into child c. */
static bool pipe_link(struct tr_bcast *b, struct out *o, uint32_t c)
{
	struct tr_bcast_rank *e = rk(b, c);
	uint32_t p = e->src;

	while (e->sent < b->nchunks && e->sent - e->have < b->cfg.window && holds(b, p, e->sent)) {
		if (out_full(o))
			return false;
		emit_xfer(b, o, p, c);
	}
	return true;
}

static void pipe_pump(struct tr_bcast *b, struct out *o)
{
	while (b->rhead != NIL) {
		if (!pipe_link(b, o, b->rhead))
			return;
		ready_pop(b);
	}
}

/* PIPELINE: the links out of r may move. */
static void pipe_ready_kids(struct tr_bcast *b, uint32_t r)
{
	uint64_t first;
	uint32_t k = pipe_kids(b, r, &first);

	for (uint32_t i = 0; i < k; i++) {
		uint32_t c = abs_of(b, (uint32_t)(first + i));
		const struct tr_bcast_rank *e = rk(b, c);

		if (e->sent < b->nchunks && holds(b, r, e->sent))
			ready_push(b, c);
	}
}

/* Everything the state owes the caller, in order: transfers, RANK_DONEs,
 * then DONE once nothing is left. */
static int pump(struct tr_bcast *b, struct out *o)
{
	if (!b->aborted) {
		switch (b->cfg.algo) {
		case TR_BCAST_GREEDY:
			greedy_pump(b, o);
			break;
		case TR_BCAST_BINOMIAL:
			binomial_pump(b, o);
			break;
		default:
			pipe_pump(b, o);
			break;
		}
	}
	while (b->lhead != NIL && !out_full(o)) {
		uint32_t r = b->lhead;
		struct tr_bcast_rank *e = rk(b, r);
		struct tr_bcast_act *a;

		b->lhead = e->lnext;
		if (b->lhead == NIL)
			b->ltail = NIL;
		if (e->flags & F_DEAD)
			continue;
		a = out_add(o, TR_BCAST_ACT_RANK_DONE);
		a->dst = r;
		a->status = (e->flags & F_COMPLETE) ? TRIAD_S_OK : b->status;
		b->stats.rank_dones++;
	}
	if (!b->finished && b->started && b->inflight == 0 && b->rhead == NIL &&
	    b->lhead == NIL && !out_full(o) &&
	    (b->aborted || b->ncomplete == b->cfg.nranks - 1)) {
		struct tr_bcast_act *a = out_add(o, TR_BCAST_ACT_DONE);

		a->status = b->status;
		a->failed = b->failed;
		b->finished = true;
	}
	return (int)o->n;
}

static bool acts_ok(const struct tr_bcast_act *acts, unsigned cap)
{
	return cap == 0 || acts != NULL;
}

/* ---- failure -------------------------------------------------------------- */

static void abort_bcast(struct tr_bcast *b, enum triad_status status, uint32_t rank)
{
	if (b->aborted)
		return;
	b->aborted = true;
	b->status = (uint16_t)status;
	b->failed = rank;
	while (ready_pop(b) != NIL)
		;
	for (uint32_t r = 0; r < b->cfg.nranks; r++)
		release_if_quiet(b, r);
}

/* ---- events --------------------------------------------------------------- */

int tr_bcast_init(struct tr_bcast *b, const struct tr_bcast_cfg *cfg)
{
	struct tr_bcast_cfg c = *cfg;
	uint64_t nchunks;

	if (c.nranks == 0 || c.nranks >= NIL || c.root >= c.nranks || !c.ranks ||
	    (unsigned)c.algo >= TR_BCAST_NALGOS || c.window > TR_BCAST_MAX_WINDOW)
		return -EINVAL;
	if (c.chunk == 0)
		c.chunk = TR_BCAST_CHUNK_DEFAULT;
	if (c.window == 0)
		c.window = TR_BCAST_WINDOW_DEFAULT;
	if (c.auto_len == 0)
		c.auto_len = TR_BCAST_AUTO_LEN_DEFAULT;
	if (c.auto_ranks == 0)
		c.auto_ranks = TR_BCAST_AUTO_RANKS_DEFAULT;
	if (c.algo == TR_BCAST_AUTO)
		c.algo = c.len >= c.auto_len && c.nranks >= c.auto_ranks &&
					 tr_chunk_count(c.len, c.chunk) >= 2
				 ? TR_BCAST_PIPELINE
				 : TR_BCAST_GREEDY;
	if (c.algo != TR_BCAST_PIPELINE) {
		/* One transfer of the whole buffer per rank. */
		c.chunk = c.len ? c.len : 1;
		c.fanout = 1;
		c.window = 1;
	}
	nchunks = tr_chunk_count(c.len, c.chunk);
	if (c.fanout == 0) {
		uint64_t n = c.nranks, l = floor_log2(n);

		c.fanout = nchunks + 2 * l + 2 >= n ? 1 : 2;
	}

	*b = (struct tr_bcast){ .cfg = c, .nchunks = nchunks, .rhead = NIL, .rtail = NIL,
				.lhead = NIL, .ltail = NIL, .failed = NIL, .status = TRIAD_S_OK,
				.cursor = c.root, .nrounds = ceil_log2(c.nranks) };
	for (uint32_t r = 0; r < c.nranks; r++) {
		struct tr_bcast_rank *e = &c.ranks[r];

		*e = (struct tr_bcast_rank){ .src = NIL, .rnext = NIL, .lnext = NIL };
		if (r == c.root || nchunks == 0) {
			e->have = nchunks;
			e->flags = F_COMPLETE;
			if (r != c.root)
				b->ncomplete++;
		}
	}
	if (c.algo == TR_BCAST_PIPELINE) {
		for (uint32_t r = 0; r < c.nranks; r++) {
			uint64_t first;

			c.ranks[r].kids_left = nchunks ? pipe_kids(b, r, &first) : 0;
			if (r != c.root)
				c.ranks[r].src = pipe_parent(b, r);
		}
	}
	return 0;
}

int tr_bcast_start(struct tr_bcast *b, struct tr_bcast_act *acts, unsigned cap)
{
	struct out o = { .a = acts, .cap = cap };

	if (!acts_ok(acts, cap))
		return -EINVAL;
	if (b->started)
		return -EALREADY;
	b->started = true;
	if (b->ncomplete == b->cfg.nranks - 1) {
		/* len 0 or a single rank: nothing to move. */
		for (uint32_t r = 0; r < b->cfg.nranks; r++)
			release(b, r);
		return pump(b, &o);
	}
	switch (b->cfg.algo) {
	case TR_BCAST_GREEDY:
		ready_push(b, b->cfg.root);
		break;
	case TR_BCAST_BINOMIAL:
		binomial_round(b);
		break;
	default:
		pipe_ready_kids(b, b->cfg.root);
		break;
	}
	return pump(b, &o);
}

/* Rank d received its last chunk. */
static void now_complete(struct tr_bcast *b, uint32_t d)
{
	struct tr_bcast_rank *e = rk(b, d);

	e->flags |= F_COMPLETE;
	b->ncomplete++;
	if (b->cfg.algo != TR_BCAST_PIPELINE)
		return;
	if (e->kids_left == 0)
		release(b, d);
	if (e->src != b->cfg.root) {
		struct tr_bcast_rank *pe = rk(b, e->src);

		if (--pe->kids_left == 0 && (pe->flags & F_COMPLETE))
			release(b, e->src);
	}
}

int tr_bcast_xfer_done(struct tr_bcast *b, uint32_t src, uint32_t dst, uint64_t chunk,
		       enum triad_status status, struct tr_bcast_act *acts, unsigned cap)
{
	struct out o = { .a = acts, .cap = cap };
	uint32_t n = b->cfg.nranks;
	struct tr_bcast_rank *de, *se;
	bool ok = status == TRIAD_S_OK;

	if (!acts_ok(acts, cap) || !b->started || src >= n || dst >= n || !status_final(status))
		return -EINVAL;
	de = rk(b, dst);
	if (dst == b->cfg.root || de->src != src || chunk >= de->sent || holds(b, dst, chunk) ||
	    (de->lost >> (chunk - de->have) & 1) || de->in == 0) {
		b->stats.unexpected++;
		return -ENOENT;
	}
	se = rk(b, src);
	/* The transfer is over either way: out of the books. */
	de->in--;
	se->busy--;
	b->inflight--;
	b->stats.reports++;
	if (!ok)
		b->stats.errors++;
	/* A chunk that arrived counts as held even after an abort (a rank
	 * whose every chunk came in is told OK); a failed one is gone: it is
	 * never asked for again, and the window never moves past it. */
	if (ok) {
		de->bits |= 1ull << (chunk - de->have);
		while (de->bits & 1) {
			de->have++;
			de->bits >>= 1;
			de->lost >>= 1;
		}
		if (de->have == b->nchunks && !(de->flags & F_COMPLETE))
			now_complete(b, dst);
	} else {
		de->lost |= 1ull << (chunk - de->have);
		abort_bcast(b, status, dst);
	}
	if (b->aborted) {
		release_if_quiet(b, src);
		release_if_quiet(b, dst);
		return pump(b, &o);
	}
	switch (b->cfg.algo) {
	case TR_BCAST_GREEDY:
		greedy_ready(b, src, dst);
		break;
	case TR_BCAST_BINOMIAL: {
		int ls = binomial_last_round(b, rel_of(b, src));
		int ld = binomial_last_round(b, rel_of(b, dst));

		if (ls == (int)b->round)
			release(b, src);
		if (ld < 0)
			release(b, dst);
		if (--b->round_left == 0 && ++b->round < b->nrounds)
			binomial_round(b);
		break;
	}
	default:
		/* The link into dst has room again; dst's children may use the
		 * new chunk. */
		if (de->sent < b->nchunks && holds(b, src, de->sent))
			ready_push(b, dst);
		pipe_ready_kids(b, dst);
		break;
	}
	return pump(b, &o);
}

int tr_bcast_rank_failed(struct tr_bcast *b, uint32_t rank, enum triad_status status,
			 struct tr_bcast_act *acts, unsigned cap)
{
	struct out o = { .a = acts, .cap = cap };
	struct tr_bcast_rank *e;

	if (!acts_ok(acts, cap) || !b->started || rank >= b->cfg.nranks || rank == b->cfg.root ||
	    !status_final(status) || status == TRIAD_S_OK)
		return -EINVAL;
	e = rk(b, rank);
	if (!(e->flags & F_DEAD)) {
		e->flags |= F_DEAD;
		if (!(e->flags & F_RELEASE) && !b->finished)
			abort_bcast(b, status, rank);
	}
	return pump(b, &o);
}

int tr_bcast_poll(struct tr_bcast *b, struct tr_bcast_act *acts, unsigned cap)
{
	struct out o = { .a = acts, .cap = cap };

	if (!acts_ok(acts, cap))
		return -EINVAL;
	return pump(b, &o);
}
