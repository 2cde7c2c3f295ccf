/* Unit tests for the broadcast schedulers (lib/proto/bcast.[ch]), following
 * docs/spec/tree-broadcast.md.
 *
 * Most tests drive one engine (the root's) through a discrete-event
 * simulation: every COPY or PUT it asks for becomes a transfer that
 * finishes after a latency (the model says which: every transfer 1 unit,
 * a fixed random latency per link, or a random one per transfer); the
 * transfer that finishes first is reported next, ties broken by the
 * sender's rank, then the receiver's, then the chunk.  The simulation
 * moves real bytes (the source's buffer is read when the transfer is
 * ordered, so forwarding a chunk the source does not hold shows up as bad
 * data) and checks every action against what the root may know: a source
 * holds the chunk (reported complete into it), no (rank, chunk) is asked
 * for twice, the pipeline window, nothing out of or into a rank after its
 * RANK_DONE, RANK_DONE(OK) only with all the data and nothing in flight,
 * DONE last, once, with nothing in flight; for GREEDY, after every event,
 * no holder idle while a rank has not been given a sender.  Failures are
 * injected at every event: a transfer reported with an error, or a rank
 * reported failed (its transfers then come back UNREACHABLE). */
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

#include "proto/bcast.h"
#include "proto/bnode.h"
#include "proto/chunk.h"

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

static uint8_t pattern(uint64_t off)
{
	return (uint8_t)(off * 7u + (off >> 8) * 13u + 1u);
}

/* ---- the simulation ---------------------------------------------------------- */

enum lat_model {
	LAT_EQUAL, /* every transfer 1 unit */
	LAT_LINK,  /* a random latency 1..100 per (src, dst), fixed */
	LAT_XFER,  /* a random latency 1..100 per transfer */
};

struct xfer {
	uint32_t src, dst;
	uint64_t chunk, off, len;
	uint64_t t_start, t_done;
	unsigned round; /* BINOMIAL: the round the test expects */
};

struct edge {
	uint32_t src, dst;
	uint64_t chunk, t;
};

struct sim {
	struct tr_bcast b;
	struct tr_bcast_rank *ranks;
	uint32_t n, root;
	uint64_t len, chunk, nchunks;
	enum tr_bcast_algo algo; /* resolved */
	enum lat_model lat;
	uint32_t *link_lat;
	unsigned cap; /* action array size used */
	struct tr_bcast_act *acts;

	uint8_t **buf;	    /* per rank, len bytes */
	uint8_t *asked;	    /* [r * nchunks + k]: times asked for */
	uint8_t *known;	    /* [r * nchunks + k]: reported complete OK */
	uint32_t *busy;	    /* transfers out of r in flight */
	uint32_t *in;	    /* transfers into r in flight */
	uint32_t *rank_done; /* RANK_DONE count */
	uint16_t *rank_status;
	bool *dead;

	struct xfer *pend; /* in flight */
	size_t npend, cappend;
	struct edge *edges; /* every COPY/PUT, in order */
	size_t nedges, capedges;

	uint64_t now;
	uint64_t events; /* reports delivered */
	uint64_t puts, copies;
	bool done;
	uint16_t done_status;
	uint32_t done_failed;
	uint64_t t_done;
	bool failure_told; /* a failure reached the engine: no new transfers */

	/* failure injection: at report number fail_at (0-based) */
	int64_t fail_at;
	uint32_t fail_rank;	/* TR_BCAST_NO_RANK: fail the transfer instead */
	enum triad_status fail_status;
	bool injected;
	uint32_t expect_failed; /* the rank DONE must name */
	bool expect_abort;

	/* BINOMIAL: reports of the round in progress not yet delivered */
	unsigned round, round_left, round_issued;
	bool check_rounds;
};

static uint64_t sim_lat(struct sim *s, uint32_t src, uint32_t dst)
{
	switch (s->lat) {
	case LAT_EQUAL:
		return 1;
	case LAT_LINK:
		return s->link_lat[(uint64_t)src * s->n + dst];
	default:
		return 1 + rnd_below(100);
	}
}

static struct sim *sim_new(uint32_t n, uint32_t root, uint64_t len, const struct tr_bcast_cfg *base,
			   enum lat_model lat, unsigned cap)
{
	struct sim *s = calloc(1, sizeof(*s));
	struct tr_bcast_cfg cfg = *base;

	assert_non_null(s);
	s->n = n;
	s->root = root;
	s->len = len;
	s->lat = lat;
	s->ranks = calloc(n, sizeof(*s->ranks));
	assert_non_null(s->ranks);
	cfg.nranks = n;
	cfg.root = root;
	cfg.len = len;
	cfg.ranks = s->ranks;
	assert_int_equal(tr_bcast_init(&s->b, &cfg), 0);
	s->algo = tr_bcast_algo(&s->b);
	s->chunk = s->b.cfg.chunk;
	s->nchunks = tr_bcast_nchunks(&s->b);
	assert_int_equal(s->nchunks, tr_chunk_count(len, s->chunk));
	s->cap = cap ? cap : tr_bcast_acts_max(&s->b);
	s->acts = calloc(s->cap, sizeof(*s->acts));
	s->link_lat = calloc((size_t)n * n, sizeof(*s->link_lat));
	s->buf = calloc(n, sizeof(*s->buf));
	s->asked = calloc((size_t)n * (s->nchunks ? s->nchunks : 1), 1);
	s->known = calloc((size_t)n * (s->nchunks ? s->nchunks : 1), 1);
	s->busy = calloc(n, sizeof(*s->busy));
	s->in = calloc(n, sizeof(*s->in));
	s->rank_done = calloc(n, sizeof(*s->rank_done));
	s->rank_status = calloc(n, sizeof(*s->rank_status));
	s->dead = calloc(n, sizeof(*s->dead));
	assert_true(s->acts && s->link_lat && s->buf && s->asked && s->known && s->busy && s->in &&
		    s->rank_done && s->rank_status && s->dead);
	for (uint64_t i = 0; i < (uint64_t)n * n; i++)
		s->link_lat[i] = (uint32_t)(1 + rnd_below(100));
	for (uint32_t r = 0; r < n; r++) {
		s->buf[r] = calloc(1, len ? len : 1);
		assert_non_null(s->buf[r]);
		if (r == root)
			for (uint64_t i = 0; i < len; i++)
				s->buf[r][i] = pattern(i);
	}
	for (uint64_t k = 0; k < s->nchunks; k++)
		s->known[(uint64_t)root * s->nchunks + k] = 1;
	s->fail_at = -1;
	s->fail_rank = TR_BCAST_NO_RANK;
	s->expect_failed = TR_BCAST_NO_RANK;
	return s;
}

static void sim_free(struct sim *s)
{
	for (uint32_t r = 0; r < s->n; r++)
		free(s->buf[r]);
	free(s->buf);
	free(s->ranks);
	free(s->acts);
	free(s->link_lat);
	free(s->asked);
	free(s->known);
	free(s->busy);
	free(s->in);
	free(s->rank_done);
	free(s->rank_status);
	free(s->dead);
	free(s->pend);
	free(s->edges);
	free(s);
}

static bool sim_known(const struct sim *s, uint32_t r, uint64_t k)
{
	return s->known[(uint64_t)r * s->nchunks + k] != 0;
}

static bool sim_has_all(const struct sim *s, uint32_t r)
{
	for (uint64_t k = 0; k < s->nchunks; k++)
		if (!sim_known(s, r, k))
			return false;
	return true;
}

static uint32_t rel(const struct sim *s, uint32_t r)
{
	return (r + s->n - s->root) % s->n;
}

static uint64_t sim_inflight_into(const struct sim *s, uint32_t r)
{
	return s->in[r];
}

/* GREEDY: no holder is idle while some rank has not been given a sender. */
static void check_greedy_busy(const struct sim *s)
{
	bool lacking = false;

	if (s->algo != TR_BCAST_GREEDY || s->failure_told || s->nchunks == 0)
		return;
	for (uint32_t r = 0; r < s->n; r++)
		if (r != s->root && !s->asked[(uint64_t)r * s->nchunks])
			lacking = true;
	if (!lacking)
		return;
	for (uint32_t r = 0; r < s->n; r++)
		if (sim_known(s, r, 0) && s->busy[r] == 0) {
			fprintf(stderr, "rank %u idle while a rank lacks the data\n", r);
			fail();
		}
}

static void sim_exec_one(struct sim *s, const struct tr_bcast_act *a, bool last)
{
	switch (a->type) {
	case TR_BCAST_ACT_COPY:
	case TR_BCAST_ACT_PUT: {
		struct xfer x = { .src = a->src, .dst = a->dst, .chunk = a->chunk, .off = a->off,
				  .len = a->len, .t_start = s->now };
		uint64_t idx;

		assert_false(s->done);
		assert_false(s->failure_told);
		assert_true(a->src < s->n && a->dst < s->n && a->src != a->dst);
		assert_int_not_equal(a->dst, s->root);
		assert_int_equal(a->type == TR_BCAST_ACT_PUT, a->src == s->root);
		assert_true(a->chunk < s->nchunks);
		assert_int_equal(a->off, a->chunk * s->chunk);
		assert_int_equal(a->len, tr_chunk_len(s->len, s->chunk, a->off));
		assert_true(a->len > 0);
		/* the source holds it, as the root knows */
		assert_true(sim_known(s, a->src, a->chunk));
		assert_memory_equal(s->buf[a->src] + a->off, s->buf[s->root] + a->off, a->len);
		/* nothing out of or into a released rank */
		assert_int_equal(s->rank_done[a->src], 0);
		assert_int_equal(s->rank_done[a->dst], 0);
		idx = (uint64_t)a->dst * s->nchunks + a->chunk;
		assert_int_equal(s->asked[idx], 0);
		s->asked[idx] = 1;
		if (s->algo == TR_BCAST_PIPELINE) {
			/* one parent per rank, chunks in order, window */
			uint32_t v = rel(s, a->dst), f = s->b.cfg.fanout;

			assert_int_equal(rel(s, a->src), (v - 1) / f);
			assert_true(s->in[a->dst] < s->b.cfg.window);
			if (a->chunk > 0)
				assert_int_equal(s->asked[idx - 1], 1);
		} else {
			assert_int_equal(s->busy[a->src], 0); /* one at a time */
		}
		if (s->algo == TR_BCAST_BINOMIAL && s->check_rounds) {
			uint32_t vs = rel(s, a->src), vd = rel(s, a->dst);

			/* round r: v -> v + 2^r for v < 2^r */
			assert_int_equal(vd - vs, 1u << s->round);
			assert_true(vs < (1u << s->round));
			s->round_issued++;
			x.round = s->round;
		}
		memcpy(s->buf[a->dst] + a->off, s->buf[a->src] + a->off, a->len);
		s->busy[a->src]++;
		s->in[a->dst]++;
		if (a->type == TR_BCAST_ACT_PUT)
			s->puts++;
		else
			s->copies++;
		x.t_done = s->now + sim_lat(s, a->src, a->dst);
		if (s->npend == s->cappend) {
			s->cappend = s->cappend ? 2 * s->cappend : 64;
			s->pend = realloc(s->pend, s->cappend * sizeof(*s->pend));
			assert_non_null(s->pend);
		}
		s->pend[s->npend++] = x;
		if (s->nedges == s->capedges) {
			s->capedges = s->capedges ? 2 * s->capedges : 64;
			s->edges = realloc(s->edges, s->capedges * sizeof(*s->edges));
			assert_non_null(s->edges);
		}
		s->edges[s->nedges++] = (struct edge){ a->src, a->dst, a->chunk, s->now };
		break;
	}
	case TR_BCAST_ACT_RANK_DONE:
		assert_false(s->done);
		assert_true(a->dst < s->n);
		assert_int_not_equal(a->dst, s->root);
		assert_false(s->dead[a->dst]);
		assert_int_equal(s->rank_done[a->dst], 0);
		s->rank_done[a->dst]++;
		s->rank_status[a->dst] = a->status;
		/* its buffer is free now: nothing moves into or out of it */
		assert_int_equal(s->busy[a->dst], 0);
		assert_int_equal(sim_inflight_into(s, a->dst), 0);
		if (a->status == TRIAD_S_OK) {
			assert_true(sim_has_all(s, a->dst));
			assert_memory_equal(s->buf[a->dst], s->buf[s->root], s->len);
		} else {
			assert_true(s->failure_told);
			assert_false(sim_has_all(s, a->dst));
		}
		break;
	case TR_BCAST_ACT_DONE:
		assert_false(s->done);
		assert_true(last);
		assert_int_equal(s->npend, 0);
		s->done = true;
		s->done_status = a->status;
		s->done_failed = a->failed;
		s->t_done = s->now;
		for (uint32_t r = 0; r < s->n; r++) {
			if (r == s->root)
				continue;
			if (s->dead[r]) {
				assert_true(s->rank_done[r] <= 1);
				continue;
			}
			assert_int_equal(s->rank_done[r], 1);
		}
		if (a->status == TRIAD_S_OK) {
			assert_int_equal(a->failed, TR_BCAST_NO_RANK);
			for (uint32_t r = 0; r < s->n; r++) {
				assert_true(sim_has_all(s, r));
				assert_memory_equal(s->buf[r], s->buf[s->root], s->len);
				if (r != s->root)
					assert_int_equal(s->rank_status[r], TRIAD_S_OK);
			}
		} else {
			assert_true(a->failed < s->n);
		}
		break;
	default:
		fail();
	}
}

/* Runs the actions of one call (and polls until nothing is left). */
static void sim_exec(struct sim *s, int ret)
{
	bool bound = s->cap == tr_bcast_acts_max(&s->b);
	bool first = true;

	for (;;) {
		assert_true(ret >= 0);
		assert_true((unsigned)ret <= s->cap);
		/* tr_bcast_acts_max() is room for any one call */
		if (bound && !first)
			assert_int_equal(ret, 0);
		first = false;
		for (int i = 0; i < ret; i++) {
			if (s->done)
				fail_msg("action after DONE");
			sim_exec_one(s, &s->acts[i], i == ret - 1);
		}
		if ((unsigned)ret < s->cap)
			break;
		ret = tr_bcast_poll(&s->b, s->acts, s->cap);
	}
	/* a full array means a poll: one more must find nothing new */
	assert_int_equal(tr_bcast_poll(&s->b, s->acts, s->cap), 0);
	check_greedy_busy(s);
}

static size_t sim_next(const struct sim *s)
{
	size_t best = 0;

	for (size_t i = 1; i < s->npend; i++) {
		const struct xfer *a = &s->pend[i], *b = &s->pend[best];

		if (a->t_done != b->t_done ? a->t_done < b->t_done
		    : a->src != b->src	   ? a->src < b->src
		    : a->dst != b->dst	   ? a->dst < b->dst
					   : a->chunk < b->chunk)
			best = i;
	}
	return best;
}

static void sim_run(struct sim *s)
{
	sim_exec(s, tr_bcast_start(&s->b, s->acts, s->cap));
	while (s->npend > 0) {
		size_t i = sim_next(s);
		struct xfer x = s->pend[i];
		enum triad_status st = TRIAD_S_OK;
		int ret;

		s->pend[i] = s->pend[--s->npend];
		s->now = x.t_done;
		if (s->fail_at >= 0 && (uint64_t)s->fail_at == s->events && !s->injected) {
			s->injected = true;
			if (s->fail_rank != TR_BCAST_NO_RANK) {
				bool mattered = s->rank_done[s->fail_rank] == 0;

				s->dead[s->fail_rank] = true;
				if (mattered && !s->failure_told) {
					s->expect_abort = true;
					s->expect_failed = s->fail_rank;
					s->failure_told = true;
				}
				ret = tr_bcast_rank_failed(&s->b, s->fail_rank, s->fail_status,
							   s->acts, s->cap);
				sim_exec(s, ret);
			} else {
				st = s->fail_status;
			}
		}
		if (s->dead[x.src] || s->dead[x.dst])
			st = TRIAD_S_UNREACHABLE;
		if (st != TRIAD_S_OK && !s->failure_told) {
			s->failure_told = true;
			s->expect_abort = true;
			s->expect_failed = x.dst;
		}
		s->busy[x.src]--;
		s->in[x.dst]--;
		if (st == TRIAD_S_OK)
			s->known[(uint64_t)x.dst * s->nchunks + x.chunk] = 1;
		if (s->algo == TR_BCAST_BINOMIAL && s->check_rounds) {
			uint32_t step = 1u << s->round;

			assert_int_equal(x.round, s->round);
			if (++s->round_left == s->round_issued) {
				/* the whole round was ordered at once */
				uint32_t want = s->n - step < step ? s->n - step : step;

				assert_int_equal(s->round_issued, want);
				s->round++;
				s->round_left = 0;
				s->round_issued = 0;
			}
		}
		s->events++;
		ret = tr_bcast_xfer_done(&s->b, x.src, x.dst, x.chunk, st, s->acts, s->cap);
		sim_exec(s, ret);
	}
	assert_true(s->done);
	assert_true(tr_bcast_finished(&s->b));
	assert_int_equal(tr_bcast_inflight(&s->b), 0);
	if (s->expect_abort) {
		assert_int_not_equal(s->done_status, TRIAD_S_OK);
		assert_int_equal(s->done_failed, s->expect_failed);
	} else {
		assert_int_equal(s->done_status, TRIAD_S_OK);
	}
	assert_int_equal(tr_bcast_stats(&s->b)->copies, s->copies);
	assert_int_equal(tr_bcast_stats(&s->b)->puts, s->puts);
	assert_int_equal(tr_bcast_stats(&s->b)->unexpected, 0);
}

static struct tr_bcast_cfg cfg_algo(enum tr_bcast_algo algo)
{
	return (struct tr_bcast_cfg){ .algo = algo };
}

/* Runs one clean broadcast and checks the totals. */
static struct sim *run_ok(uint32_t n, uint32_t root, uint64_t len, const struct tr_bcast_cfg *cfg,
			  enum lat_model lat, unsigned cap)
{
	struct sim *s = sim_new(n, root, len, cfg, lat, cap);

	sim_run(s);
	assert_int_equal(s->done_status, TRIAD_S_OK);
	assert_int_equal(s->nedges, (uint64_t)(n - 1) * s->nchunks);
	for (uint32_t r = 0; r < n; r++)
		for (uint64_t k = 0; k < s->nchunks; k++)
			assert_int_equal(s->asked[(uint64_t)r * s->nchunks + k], r != root);
	return s;
}

static bool has_edge(const struct sim *s, uint32_t src, uint32_t dst)
{
	for (size_t i = 0; i < s->nedges; i++)
		if (s->edges[i].src == src && s->edges[i].dst == dst)
			return true;
	return false;
}

/* ---- tests --------------------------------------------------------------------- */

static void test_names(void **state)
{
	(void)state;
	assert_string_equal(tr_bcast_algo_str(TR_BCAST_AUTO), "auto");
	assert_string_equal(tr_bcast_algo_str(TR_BCAST_GREEDY), "greedy");
	assert_string_equal(tr_bcast_algo_str(TR_BCAST_BINOMIAL), "binomial");
	assert_string_equal(tr_bcast_algo_str(TR_BCAST_PIPELINE), "pipeline");
	assert_string_equal(tr_bcast_algo_str(TR_BCAST_NALGOS), "?");
	assert_string_equal(tr_bcast_act_str(TR_BCAST_ACT_COPY), "copy");
	assert_string_equal(tr_bcast_act_str(TR_BCAST_ACT_PUT), "put");
	assert_string_equal(tr_bcast_act_str(TR_BCAST_ACT_RANK_DONE), "rank_done");
	assert_string_equal(tr_bcast_act_str(TR_BCAST_ACT_DONE), "done");
	assert_string_equal(tr_bcast_act_str(-1u), "?");
	for (unsigned i = 0; i < TR_BCAST_NALGOS; i++)
		assert_string_not_equal(tr_bcast_algo_str(i), "?");
	for (unsigned i = 0; i < TR_BCAST_NACTS; i++)
		assert_string_not_equal(tr_bcast_act_str(i), "?");
}

static void test_init_validation(void **state)
{
	struct tr_bcast_rank ranks[8];
	struct tr_bcast b, before;
	struct tr_bcast_cfg cfg = { .nranks = 8, .root = 3, .len = 100, .ranks = ranks };

	(void)state;
	memset(&b, 0x5a, sizeof(b));
	before = b;
	cfg.nranks = 0;
	assert_int_equal(tr_bcast_init(&b, &cfg), -EINVAL);
	cfg.nranks = TR_BCAST_NO_RANK;
	assert_int_equal(tr_bcast_init(&b, &cfg), -EINVAL);
	cfg.nranks = 8;
	cfg.root = 8;
	assert_int_equal(tr_bcast_init(&b, &cfg), -EINVAL);
	cfg.root = 3;
	cfg.ranks = NULL;
	assert_int_equal(tr_bcast_init(&b, &cfg), -EINVAL);
	cfg.ranks = ranks;
	cfg.algo = TR_BCAST_NALGOS;
	assert_int_equal(tr_bcast_init(&b, &cfg), -EINVAL);
	cfg.algo = TR_BCAST_PIPELINE;
	cfg.window = TR_BCAST_MAX_WINDOW + 1;
	assert_int_equal(tr_bcast_init(&b, &cfg), -EINVAL);
	assert_memory_equal(&b, &before, sizeof(b));

	/* defaults */
	cfg.window = 0;
	assert_int_equal(tr_bcast_init(&b, &cfg), 0);
	assert_int_equal(tr_bcast_algo(&b), TR_BCAST_PIPELINE);
	assert_int_equal(b.cfg.chunk, TR_BCAST_CHUNK_DEFAULT);
	assert_int_equal(b.cfg.window, TR_BCAST_WINDOW_DEFAULT);
	assert_int_equal(b.cfg.auto_len, TR_BCAST_AUTO_LEN_DEFAULT);
	assert_int_equal(b.cfg.auto_ranks, TR_BCAST_AUTO_RANKS_DEFAULT);
	assert_int_equal(tr_bcast_nchunks(&b), 1);
	assert_false(tr_bcast_finished(&b));
	assert_true(tr_bcast_holds(&b, 3));
	assert_false(tr_bcast_holds(&b, 0));
	/* GREEDY and BINOMIAL move the buffer whole */
	cfg.algo = TR_BCAST_GREEDY;
	cfg.chunk = 7;
	assert_int_equal(tr_bcast_init(&b, &cfg), 0);
	assert_int_equal(tr_bcast_nchunks(&b), 1);
	cfg.len = 0;
	assert_int_equal(tr_bcast_init(&b, &cfg), 0);
	assert_int_equal(tr_bcast_nchunks(&b), 0);
	assert_true(tr_bcast_holds(&b, 0));
	assert_true(tr_bcast_acts_max(&b) >= 8 + 1);
}

static void test_auto(void **state)
{
	struct tr_bcast_rank ranks[64];
	struct tr_bcast b;
	struct tr_bcast_cfg cfg = { .nranks = 8, .ranks = ranks, .algo = TR_BCAST_AUTO };

	(void)state;
	/* defaults: pipeline from 256 KiB and 3 ranks */
	cfg.len = TR_BCAST_AUTO_LEN_DEFAULT - 1;
	assert_int_equal(tr_bcast_init(&b, &cfg), 0);
	assert_int_equal(tr_bcast_algo(&b), TR_BCAST_GREEDY);
	cfg.len = TR_BCAST_AUTO_LEN_DEFAULT;
	assert_int_equal(tr_bcast_init(&b, &cfg), 0);
	assert_int_equal(tr_bcast_algo(&b), TR_BCAST_PIPELINE);
	cfg.nranks = 2;
	assert_int_equal(tr_bcast_init(&b, &cfg), 0);
	assert_int_equal(tr_bcast_algo(&b), TR_BCAST_GREEDY);
	/* the crossover constants come from the config */
	cfg.nranks = 5;
	cfg.auto_len = 1000;
	cfg.auto_ranks = 5;
	cfg.chunk = 100;
	cfg.len = 999;
	assert_int_equal(tr_bcast_init(&b, &cfg), 0);
	assert_int_equal(tr_bcast_algo(&b), TR_BCAST_GREEDY);
	cfg.len = 1000;
	assert_int_equal(tr_bcast_init(&b, &cfg), 0);
	assert_int_equal(tr_bcast_algo(&b), TR_BCAST_PIPELINE);
	cfg.nranks = 4;
	assert_int_equal(tr_bcast_init(&b, &cfg), 0);
	assert_int_equal(tr_bcast_algo(&b), TR_BCAST_GREEDY);
	/* one chunk: nothing to pipeline */
	cfg.nranks = 5;
	cfg.chunk = 1000;
	assert_int_equal(tr_bcast_init(&b, &cfg), 0);
	assert_int_equal(tr_bcast_algo(&b), TR_BCAST_GREEDY);
	/* BINOMIAL only when asked */
	cfg.algo = TR_BCAST_BINOMIAL;
	assert_int_equal(tr_bcast_init(&b, &cfg), 0);
	assert_int_equal(tr_bcast_algo(&b), TR_BCAST_BINOMIAL);

	/* pipeline shape: chain for a long stream, binary tree for a short
	 * one over many ranks (nchunks >= N - 2 - 2 floor(log2 N)) */
	cfg = (struct tr_bcast_cfg){ .nranks = 64, .ranks = ranks, .algo = TR_BCAST_PIPELINE,
				     .chunk = 1, .len = 50 };
	assert_int_equal(tr_bcast_init(&b, &cfg), 0);
	assert_int_equal(b.cfg.fanout, 1);
	cfg.len = 49;
	assert_int_equal(tr_bcast_init(&b, &cfg), 0);
	assert_int_equal(b.cfg.fanout, 2);
	cfg.fanout = 3;
	assert_int_equal(tr_bcast_init(&b, &cfg), 0);
	assert_int_equal(b.cfg.fanout, 3);
}

/* The patent's Fig. 11: 8 ranks (nodes 11..18), equal latencies, the
 * root's PUT overlapping the copies it orders, lowest rank first among
 * those lacking.  Time 0: 0->1.  Time 1: 0->2 and 1->3.  Time 2: the PUT
 * to 2 and the copy to 3 complete together (reported in sender order):
 * 2->4, 0->5, then 1->6, 3->7.  Done at time 3 = log2 8. */
static void fig11(unsigned cap)
{
	struct tr_bcast_cfg cfg = cfg_algo(TR_BCAST_GREEDY);
	struct sim *s = run_ok(8, 0, 1000, &cfg, LAT_EQUAL, cap);
	static const struct edge want[] = {
		{ 0, 1, 0, 0 }, { 0, 2, 0, 1 }, { 1, 3, 0, 1 }, { 2, 4, 0, 2 },
		{ 0, 5, 0, 2 }, { 1, 6, 0, 2 }, { 3, 7, 0, 2 },
	};

	assert_int_equal(s->nedges, 7);
	for (size_t i = 0; i < 7; i++) {
		assert_int_equal(s->edges[i].src, want[i].src);
		assert_int_equal(s->edges[i].dst, want[i].dst);
		assert_int_equal(s->edges[i].t, want[i].t);
	}
	/* 0->{1,2,5}, 1->{3,6}, 2->{4}, 3->{7} */
	assert_true(has_edge(s, 0, 1) && has_edge(s, 0, 2) && has_edge(s, 0, 5));
	assert_true(has_edge(s, 1, 3) && has_edge(s, 1, 6));
	assert_true(has_edge(s, 2, 4));
	assert_true(has_edge(s, 3, 7));
	assert_int_equal(s->puts, 3);
	assert_int_equal(s->copies, 4);
	assert_int_equal(s->t_done, 3);
	sim_free(s);
}

static void test_fig11(void **state)
{
	(void)state;
	fig11(0);
	/* the same with room for one action per call (tr_bcast_poll) */
	fig11(1);
	fig11(2);
}

/* Equal latencies: greedy doubles the holders every unit, like the
 * binomial tree, for every N and root. */
static void test_greedy_equal_latency(void **state)
{
	struct tr_bcast_cfg cfg = cfg_algo(TR_BCAST_GREEDY);

	(void)state;
	for (uint32_t n = 1; n <= 64; n++) {
		unsigned lg = 0;

		while ((1u << lg) < n)
			lg++;
		for (uint32_t root = 0; root < n; root += 1 + n / 8) {
			struct sim *s = run_ok(n, root, 33, &cfg, LAT_EQUAL, 0);

			assert_int_equal(s->t_done, lg);
			assert_int_equal(s->puts + s->copies, n - 1);
			/* targets lowest rank first */
			for (size_t i = 1; i < s->nedges; i++)
				assert_true(s->edges[i].dst > s->edges[i - 1].dst);
			sim_free(s);
		}
	}
}

/* Random latencies: N - 1 transfers, each rank once, never an idle holder
 * while a rank lacks the data (checked after every event), DONE last. */
static void test_greedy_unequal_latency(void **state)
{
	struct tr_bcast_cfg cfg = cfg_algo(TR_BCAST_GREEDY);

	(void)state;
	for (unsigned seed = 0; seed < 300; seed++) {
		uint32_t n = 2 + (uint32_t)rnd_below(63);
		uint32_t root = (uint32_t)rnd_below(n);
		enum lat_model lat = seed & 1 ? LAT_LINK : LAT_XFER;
		struct sim *s = run_ok(n, root, 1 + rnd_below(3000), &cfg, lat, 0);

		assert_int_equal(s->puts + s->copies, n - 1);
		assert_int_equal(tr_bcast_stats(&s->b)->reports, n - 1);
		assert_int_equal(tr_bcast_stats(&s->b)->rank_dones, n - 1);
		sim_free(s);
	}
}

/* The patent's claim: without rounds, nobody waits for the slowest
 * transfer of a round.  Under the same random link latencies greedy ends
 * no later than the round-synchronous tree on average, and mostly
 * earlier. */
static void test_greedy_vs_binomial(void **state)
{
	uint64_t tg = 0, tb = 0;
	unsigned better = 0, runs = 200;

	(void)state;
	for (unsigned seed = 0; seed < runs; seed++) {
		uint32_t n = 8 + (uint32_t)rnd_below(57);
		uint64_t saved = rng_state;
		struct tr_bcast_cfg cg = cfg_algo(TR_BCAST_GREEDY);
		struct tr_bcast_cfg cb = cfg_algo(TR_BCAST_BINOMIAL);
		struct sim *g, *b;

		g = run_ok(n, 0, 64, &cg, LAT_LINK, 0);
		rng_state = saved; /* the same link latencies */
		b = run_ok(n, 0, 64, &cb, LAT_LINK, 0);
		assert_memory_equal(g->link_lat, b->link_lat, (size_t)n * n * sizeof(uint32_t));
		tg += g->t_done;
		tb += b->t_done;
		better += g->t_done < b->t_done;
		sim_free(g);
		sim_free(b);
	}
	assert_true(tg < tb);
	assert_true(better > runs / 2);
}

static void check_binomial(uint32_t n, uint32_t root, enum lat_model lat)
{
	struct tr_bcast_cfg cfg = cfg_algo(TR_BCAST_BINOMIAL);
	struct sim *s = sim_new(n, root, 17, &cfg, lat, 0);
	unsigned lg = 0;

	while ((1u << lg) < n)
		lg++;
	s->check_rounds = true;
	sim_run(s);
	assert_int_equal(s->done_status, TRIAD_S_OK);
	assert_int_equal(s->nedges, n - 1);
	assert_int_equal(s->round, lg);
	assert_int_equal(tr_bcast_stats(&s->b)->rounds, lg);
	if (lat == LAT_EQUAL)
		assert_int_equal(s->t_done, lg);
	sim_free(s);
}

/* Round j orders v -> v + 2^j (v < 2^j) only once every transfer of
 * round j - 1 was reported (the simulation checks both). */
static void test_binomial_rounds(void **state)
{
	struct tr_bcast_cfg cfg = cfg_algo(TR_BCAST_BINOMIAL);
	struct sim *s;
	static const struct edge want[] = {
		{ 0, 1, 0, 0 }, { 0, 2, 0, 1 }, { 1, 3, 0, 1 }, { 0, 4, 0, 2 },
		{ 1, 5, 0, 2 }, { 2, 6, 0, 2 }, { 3, 7, 0, 2 },
	};

	(void)state;
	s = run_ok(8, 0, 100, &cfg, LAT_EQUAL, 0);
	for (size_t i = 0; i < 7; i++) {
		assert_int_equal(s->edges[i].src, want[i].src);
		assert_int_equal(s->edges[i].dst, want[i].dst);
		assert_int_equal(s->edges[i].t, want[i].t);
	}
	sim_free(s);

	/* rounds wait for their slowest transfer: with a slow 0 -> 2 link,
	 * round 2 is ordered only at 51, though 1 and 3 hold the data at 2 */
	s = sim_new(8, 0, 10, &cfg, LAT_LINK, 0);
	for (uint32_t i = 0; i < 64; i++)
		s->link_lat[i] = 1;
	s->link_lat[0 * 8 + 2] = 50;
	s->check_rounds = true;
	sim_run(s);
	for (size_t i = 3; i < 7; i++)
		assert_int_equal(s->edges[i].t, 51);
	assert_int_equal(s->t_done, 52);
	sim_free(s);

	for (uint32_t n = 1; n <= 40; n++)
		for (uint32_t root = 0; root < n; root += 1 + n / 5) {
			check_binomial(n, root, LAT_EQUAL);
			check_binomial(n, root, LAT_XFER);
		}
}

/* Chain, equal latencies, one chunk per link: chunk k reaches relative
 * rank v at time k + v, so the last arrives at nchunks + N - 2, and the
 * links work at the same time. */
static void test_pipeline_chain_overlap(void **state)
{
	struct tr_bcast_cfg cfg = { .algo = TR_BCAST_PIPELINE, .chunk = 10, .fanout = 1,
				    .window = 1 };
	struct sim *s;
	unsigned max_active = 0;

	(void)state;
	s = run_ok(5, 2, 80, &cfg, LAT_EQUAL, 0);
	assert_int_equal(s->nchunks, 8);
	assert_int_equal(s->t_done, 8 + 5 - 2);
	for (uint64_t t = 0; t < s->t_done; t++) {
		unsigned active = 0;

		for (size_t i = 0; i < s->nedges; i++)
			active += s->edges[i].t == t;
		if (active > max_active)
			max_active = active;
	}
	assert_int_equal(max_active, 4); /* every link busy at once */
	for (size_t i = 0; i < s->nedges; i++)
		assert_int_equal(rel(s, s->edges[i].dst), rel(s, s->edges[i].src) + 1);
	sim_free(s);

	/* a window hides latency: 4 chunks in flight per link */
	cfg.window = 4;
	s = run_ok(5, 2, 80, &cfg, LAT_EQUAL, 0);
	assert_int_equal(s->t_done, 2 + 5 - 2);
	sim_free(s);

	/* binary tree: depth 2 for 7 ranks */
	cfg.window = 1;
	cfg.fanout = 2;
	s = run_ok(7, 0, 80, &cfg, LAT_EQUAL, 0);
	assert_int_equal(s->t_done, 8 + 2 - 1);
	assert_true(has_edge(s, 0, 1) && has_edge(s, 0, 2) && has_edge(s, 1, 3) &&
		    has_edge(s, 1, 4) && has_edge(s, 2, 5) && has_edge(s, 2, 6));
	sim_free(s);
}

/* Every chunk to every rank exactly once, forwarded only once held, in
 * order per link within the window, real bytes, for many shapes. */
static void test_pipeline_correctness(void **state)
{
	static const uint64_t lens[] = { 1, 7, 100, 1000, 4096, 10007, 65539 };
	static const uint64_t chunks[] = { 1, 3, 64, 1000, 4096, 100000 };
	static const uint32_t ns[] = { 2, 3, 5, 8, 17, 33 };
	static const uint32_t fanouts[] = { 0, 1, 2, 3, 40 };
	static const uint32_t windows[] = { 1, 2, 4, 64 };
	unsigned runs = 0;

	(void)state;
	for (size_t li = 0; li < sizeof(lens) / sizeof(lens[0]); li++)
		for (size_t ci = 0; ci < sizeof(chunks) / sizeof(chunks[0]); ci++)
			for (size_t ni = 0; ni < sizeof(ns) / sizeof(ns[0]); ni++) {
				uint64_t k = tr_chunk_count(lens[li], chunks[ci]);
				uint32_t n = ns[ni];

				if (k * n > 6000)
					continue;
				for (size_t fi = 0; fi < 5; fi++) {
					struct tr_bcast_cfg cfg = {
						.algo = TR_BCAST_PIPELINE, .chunk = chunks[ci],
						.fanout = fanouts[fi],
						.window = windows[rnd_below(4)],
					};
					struct sim *s = run_ok(n, (uint32_t)rnd_below(n), lens[li],
							       &cfg, runs & 1 ? LAT_XFER : LAT_LINK,
							       0);

					assert_int_equal(s->nchunks, k);
					sim_free(s);
					runs++;
				}
			}
	assert_true(runs > 300);
}

/* len 0: every rank is done at start, for every N, root and algorithm. */
static void test_zero_length(void **state)
{
	struct tr_bcast_rank ranks[64];
	struct tr_bcast_act acts[66];

	(void)state;
	for (uint32_t n = 1; n <= 64; n++)
		for (uint32_t root = 0; root < n; root++)
			for (unsigned algo = 0; algo < TR_BCAST_NALGOS; algo++) {
				struct tr_bcast_cfg cfg = { .nranks = n, .root = root, .len = 0,
							    .algo = algo, .ranks = ranks };
				struct tr_bcast b;
				uint32_t seen = 0;
				int ret;

				assert_int_equal(tr_bcast_init(&b, &cfg), 0);
				ret = tr_bcast_start(&b, acts, 66);
				assert_int_equal(ret, n);
				for (int i = 0; i < ret - 1; i++) {
					assert_int_equal(acts[i].type, TR_BCAST_ACT_RANK_DONE);
					assert_int_equal(acts[i].status, TRIAD_S_OK);
					assert_int_not_equal(acts[i].dst, root);
					seen++;
				}
				assert_int_equal(seen, n - 1);
				assert_int_equal(acts[ret - 1].type, TR_BCAST_ACT_DONE);
				assert_int_equal(acts[ret - 1].status, TRIAD_S_OK);
				assert_int_equal(acts[ret - 1].failed, TR_BCAST_NO_RANK);
				assert_true(tr_bcast_finished(&b));
				assert_int_equal(tr_bcast_poll(&b, acts, 66), 0);
				assert_int_equal(tr_bcast_start(&b, acts, 66), -EALREADY);
			}
}

/* Every N from 1 to 64, every root, every algorithm, random latencies. */
static void test_all_sizes_all_roots(void **state)
{
	(void)state;
	for (uint32_t n = 1; n <= 64; n++)
		for (uint32_t root = 0; root < n; root++)
			for (unsigned algo = TR_BCAST_GREEDY; algo < TR_BCAST_NALGOS; algo++) {
				struct tr_bcast_cfg cfg = { .algo = algo, .chunk = 2, .window = 2 };
				struct sim *s = run_ok(n, root, 5, &cfg, LAT_XFER, 0);

				if (algo != TR_BCAST_PIPELINE)
					assert_int_equal(s->nedges, n - 1);
				else
					assert_int_equal(s->nedges, 3 * (n - 1));
				sim_free(s);
			}
}

/* One rank: DONE at once, nothing moves. */
static void test_single_rank(void **state)
{
	struct tr_bcast_rank ranks[1];
	struct tr_bcast_act acts[4];

	(void)state;
	for (unsigned algo = 0; algo < TR_BCAST_NALGOS; algo++) {
		struct tr_bcast_cfg cfg = { .nranks = 1, .len = 1 << 20, .algo = algo,
					    .ranks = ranks };
		struct tr_bcast b;

		assert_int_equal(tr_bcast_init(&b, &cfg), 0);
		assert_int_equal(tr_bcast_start(&b, acts, 4), 1);
		assert_int_equal(acts[0].type, TR_BCAST_ACT_DONE);
		assert_int_equal(acts[0].status, TRIAD_S_OK);
		assert_int_equal(tr_bcast_stats(&b)->puts + tr_bcast_stats(&b)->copies, 0);
	}
}

static void fail_sweep(enum tr_bcast_algo algo, uint32_t n, bool rank_failure, unsigned cap)
{
	struct tr_bcast_cfg cfg = { .algo = algo, .chunk = 3, .window = 2 };
	uint64_t total;
	struct sim *s;

	/* how many reports a clean run has */
	s = run_ok(n, 1 % n, 11, &cfg, LAT_XFER, cap);
	total = s->events;
	sim_free(s);
	for (uint64_t at = 0; at < total; at++) {
		uint32_t rmax = rank_failure ? n : 1;

		for (uint32_t x = 0; x < rmax; x++) {
			if (rank_failure && x == 1 % n)
				continue;
			s = sim_new(n, 1 % n, 11, &cfg, LAT_XFER, cap);
			s->fail_at = (int64_t)at;
			s->fail_rank = rank_failure ? x : TR_BCAST_NO_RANK;
			s->fail_status = rank_failure ? TRIAD_S_UNREACHABLE : TRIAD_S_REMOTE_ACCESS;
			sim_run(s);
			if (s->injected && !rank_failure) {
				/* the transfer that failed names its dst */
				assert_true(s->expect_abort);
				assert_int_equal(s->done_status, TRIAD_S_REMOTE_ACCESS);
			}
			if (s->expect_abort) {
				/* no rank waits: each live one told, the lacking ones with
				 * the error */
				assert_int_equal(s->done_failed, s->expect_failed);
				for (uint32_t r = 0; r < n; r++)
					if (r != s->root && !s->dead[r])
						assert_int_equal(s->rank_status[r] == TRIAD_S_OK,
								 sim_has_all(s, r));
			}
			sim_free(s);
		}
	}
}

/* A transfer reported with an error at every point: DONE(error, its dst)
 * once nothing is in flight, no transfer after the report. */
static void test_fail_transfer(void **state)
{
	(void)state;
	for (unsigned algo = TR_BCAST_GREEDY; algo < TR_BCAST_NALGOS; algo++)
		for (uint32_t n = 2; n <= 13; n += 1 + n / 3) {
			fail_sweep(algo, n, false, 0);
			fail_sweep(algo, n, false, 1);
		}
}

/* Every rank reported failed at every point: DONE(UNREACHABLE, that rank)
 * unless it had been released already (then nothing changes). */
static void test_fail_rank(void **state)
{
	(void)state;
	for (unsigned algo = TR_BCAST_GREEDY; algo < TR_BCAST_NALGOS; algo++)
		for (uint32_t n = 2; n <= 9; n += 1 + n / 3)
			fail_sweep(algo, n, true, 0);
}

/* Random failures over random shapes, and the first failure wins. */
static void test_fail_random(void **state)
{
	(void)state;
	for (unsigned seed = 0; seed < 400; seed++) {
		unsigned algo = TR_BCAST_GREEDY + (unsigned)rnd_below(3);
		uint32_t n = 2 + (uint32_t)rnd_below(40);
		struct tr_bcast_cfg cfg = { .algo = algo, .chunk = 1 + rnd_below(50),
					    .fanout = (uint32_t)rnd_below(4),
					    .window = 1 + (uint32_t)rnd_below(8) };
		struct sim *s = sim_new(n, (uint32_t)rnd_below(n), 1 + rnd_below(300), &cfg,
					LAT_XFER, seed % 5 == 0 ? 1 : 0);

		s->fail_at = (int64_t)rnd_below(s->nchunks * n + 1);
		if (seed & 1) {
			s->fail_rank = (uint32_t)rnd_below(n);
			if (s->fail_rank == s->root)
				s->fail_rank = (s->root + 1) % n;
			s->fail_status = seed & 2 ? TRIAD_S_TIMEOUT : TRIAD_S_UNREACHABLE;
		} else {
			s->fail_status = TRIAD_S_TRANSPORT;
		}
		sim_run(s);
		sim_free(s);
	}
}

/* Calls out of turn, reports that match nothing, late failures. */
static void test_bad_events(void **state)
{
	struct tr_bcast_rank ranks[4];
	struct tr_bcast_act acts[8];
	struct tr_bcast_cfg cfg = { .nranks = 4, .root = 0, .len = 10, .ranks = ranks,
				    .algo = TR_BCAST_GREEDY };
	struct tr_bcast b;
	int ret;

	(void)state;
	assert_int_equal(tr_bcast_init(&b, &cfg), 0);
	/* before start */
	assert_int_equal(tr_bcast_xfer_done(&b, 0, 1, 0, TRIAD_S_OK, acts, 8), -EINVAL);
	assert_int_equal(tr_bcast_rank_failed(&b, 1, TRIAD_S_UNREACHABLE, acts, 8), -EINVAL);
	assert_int_equal(tr_bcast_start(&b, NULL, 8), -EINVAL);
	assert_int_equal(tr_bcast_start(&b, acts, 8), 1);
	assert_int_equal(acts[0].type, TR_BCAST_ACT_PUT);
	assert_int_equal(acts[0].dst, 1);
	assert_int_equal(acts[0].off, 0);
	assert_int_equal(acts[0].len, 10);
	assert_int_equal(tr_bcast_start(&b, acts, 8), -EALREADY);
	/* bad arguments */
	assert_int_equal(tr_bcast_xfer_done(&b, 0, 4, 0, TRIAD_S_OK, acts, 8), -EINVAL);
	assert_int_equal(tr_bcast_xfer_done(&b, 4, 1, 0, TRIAD_S_OK, acts, 8), -EINVAL);
	assert_int_equal(tr_bcast_xfer_done(&b, 0, 1, 0, TRIAD_S_PENDING, acts, 8), -EINVAL);
	assert_int_equal(tr_bcast_xfer_done(&b, 0, 1, 0, TRIAD_S_MAX, acts, 8), -EINVAL);
	assert_int_equal(tr_bcast_xfer_done(&b, 0, 1, 0, TRIAD_S_OK, NULL, 8), -EINVAL);
	assert_int_equal(tr_bcast_rank_failed(&b, 0, TRIAD_S_UNREACHABLE, acts, 8), -EINVAL);
	assert_int_equal(tr_bcast_rank_failed(&b, 4, TRIAD_S_UNREACHABLE, acts, 8), -EINVAL);
	assert_int_equal(tr_bcast_rank_failed(&b, 1, TRIAD_S_OK, acts, 8), -EINVAL);
	assert_int_equal(tr_bcast_poll(&b, NULL, 1), -EINVAL);
	/* reports that match no transfer in flight */
	assert_int_equal(tr_bcast_xfer_done(&b, 2, 1, 0, TRIAD_S_OK, acts, 8), -ENOENT);
	assert_int_equal(tr_bcast_xfer_done(&b, 0, 2, 0, TRIAD_S_OK, acts, 8), -ENOENT);
	assert_int_equal(tr_bcast_xfer_done(&b, 0, 1, 1, TRIAD_S_OK, acts, 8), -ENOENT);
	assert_int_equal(tr_bcast_xfer_done(&b, 1, 0, 0, TRIAD_S_OK, acts, 8), -ENOENT);
	assert_int_equal(tr_bcast_stats(&b)->unexpected, 4);
	assert_int_equal(tr_bcast_inflight(&b), 1);
	/* the real one: 0 -> 2, 1 -> 3 */
	ret = tr_bcast_xfer_done(&b, 0, 1, 0, TRIAD_S_OK, acts, 8);
	assert_int_equal(ret, 2);
	assert_true(tr_bcast_holds(&b, 1));
	assert_int_equal(acts[0].type, TR_BCAST_ACT_PUT);
	assert_int_equal(acts[0].dst, 2);
	assert_int_equal(acts[1].type, TR_BCAST_ACT_COPY);
	assert_int_equal(acts[1].src, 1);
	assert_int_equal(acts[1].dst, 3);
	/* a duplicate */
	assert_int_equal(tr_bcast_xfer_done(&b, 0, 1, 0, TRIAD_S_OK, acts, 8), -ENOENT);
	assert_int_equal(tr_bcast_stats(&b)->unexpected, 5);
	/* 3 arrives: nobody left to send to, 1 and 3 are released */
	ret = tr_bcast_xfer_done(&b, 1, 3, 0, TRIAD_S_OK, acts, 8);
	assert_int_equal(ret, 2);
	assert_int_equal(acts[0].type, TR_BCAST_ACT_RANK_DONE);
	assert_int_equal(acts[0].dst, 1);
	assert_int_equal(acts[1].type, TR_BCAST_ACT_RANK_DONE);
	assert_int_equal(acts[1].dst, 3);
	/* a released rank failing changes nothing */
	assert_int_equal(tr_bcast_rank_failed(&b, 3, TRIAD_S_UNREACHABLE, acts, 8), 0);
	assert_int_equal(tr_bcast_rank_failed(&b, 3, TRIAD_S_UNREACHABLE, acts, 8), 0);
	ret = tr_bcast_xfer_done(&b, 0, 2, 0, TRIAD_S_OK, acts, 8);
	assert_int_equal(ret, 2);
	assert_int_equal(acts[0].type, TR_BCAST_ACT_RANK_DONE);
	assert_int_equal(acts[0].dst, 2);
	assert_int_equal(acts[1].type, TR_BCAST_ACT_DONE);
	assert_int_equal(acts[1].status, TRIAD_S_OK);
	assert_true(tr_bcast_finished(&b));
	/* after DONE: failures are ignored, nothing is in flight */
	assert_int_equal(tr_bcast_rank_failed(&b, 2, TRIAD_S_UNREACHABLE, acts, 8), 0);
	assert_int_equal(tr_bcast_xfer_done(&b, 0, 2, 0, TRIAD_S_OK, acts, 8), -ENOENT);
	assert_int_equal(tr_bcast_poll(&b, acts, 8), 0);
}

/* Two failures: the first one is reported, the second only accounted; the
 * ranks that got nothing hear the first status. */
static void test_first_failure_wins(void **state)
{
	struct tr_bcast_rank ranks[8];
	struct tr_bcast_act acts[16];
	struct tr_bcast_cfg cfg = { .nranks = 8, .root = 0, .len = 10, .ranks = ranks,
				    .algo = TR_BCAST_GREEDY };
	struct tr_bcast b;
	int ret;

	(void)state;
	assert_int_equal(tr_bcast_init(&b, &cfg), 0);
	assert_int_equal(tr_bcast_start(&b, acts, 16), 1);		  /* 0 -> 1 */
	assert_int_equal(tr_bcast_xfer_done(&b, 0, 1, 0, TRIAD_S_OK, acts, 16), 2); /* 0->2, 1->3 */
	/* rank 3 dies: nothing new; 4..7 were never sent anything and are
	 * told at once; 3 gets nothing; 1 and 2 are busy */
	ret = tr_bcast_rank_failed(&b, 3, TRIAD_S_TIMEOUT, acts, 16);
	assert_int_equal(ret, 4);
	for (int i = 0; i < 4; i++) {
		assert_int_equal(acts[i].type, TR_BCAST_ACT_RANK_DONE);
		assert_int_equal(acts[i].dst, 4 + i);
		assert_int_equal(acts[i].status, TRIAD_S_TIMEOUT);
	}
	/* the PUT to 2 fails too: accounted, 2 told with the first status */
	ret = tr_bcast_xfer_done(&b, 0, 2, 0, TRIAD_S_REMOTE_ACCESS, acts, 16);
	assert_int_equal(ret, 1);
	assert_int_equal(acts[0].type, TR_BCAST_ACT_RANK_DONE);
	assert_int_equal(acts[0].dst, 2);
	assert_int_equal(acts[0].status, TRIAD_S_TIMEOUT);
	/* the copy into the dead rank comes back: 1 had the data */
	ret = tr_bcast_xfer_done(&b, 1, 3, 0, TRIAD_S_UNREACHABLE, acts, 16);
	assert_int_equal(ret, 2);
	assert_int_equal(acts[0].type, TR_BCAST_ACT_RANK_DONE);
	assert_int_equal(acts[0].dst, 1);
	assert_int_equal(acts[0].status, TRIAD_S_OK);
	assert_int_equal(acts[1].type, TR_BCAST_ACT_DONE);
	assert_int_equal(acts[1].status, TRIAD_S_TIMEOUT);
	assert_int_equal(acts[1].failed, 3);
	assert_int_equal(tr_bcast_stats(&b)->errors, 2);
}

/* Pipeline: reports inside a window after one failed; the failed chunk
 * reported again is refused. */
static void test_pipeline_lost_chunk(void **state)
{
	struct tr_bcast_rank ranks[3];
	struct tr_bcast_act acts[32];
	struct tr_bcast_cfg cfg = { .nranks = 3, .root = 0, .len = 40, .chunk = 10,
				    .fanout = 1, .window = 4, .ranks = ranks,
				    .algo = TR_BCAST_PIPELINE };
	struct tr_bcast b;
	int ret;

	(void)state;
	assert_int_equal(tr_bcast_init(&b, &cfg), 0);
	assert_int_equal(tr_bcast_start(&b, acts, 32), 4); /* chunks 0..3 into 1 */
	for (int i = 0; i < 4; i++) {
		assert_int_equal(acts[i].type, TR_BCAST_ACT_PUT);
		assert_int_equal(acts[i].chunk, (uint64_t)i);
		assert_int_equal(acts[i].off, 10u * (uint64_t)i);
		assert_int_equal(acts[i].len, 10);
	}
	/* chunk 1 arrives first: nothing to forward yet (2 needs chunk 0) */
	assert_int_equal(tr_bcast_xfer_done(&b, 0, 1, 1, TRIAD_S_OK, acts, 32), 0);
	/* chunk 2 fails: abort; 2 has nothing moving and is told at once */
	assert_int_equal(tr_bcast_xfer_done(&b, 0, 1, 2, TRIAD_S_TRANSPORT, acts, 32), 1);
	assert_int_equal(acts[0].type, TR_BCAST_ACT_RANK_DONE);
	assert_int_equal(acts[0].dst, 2);
	assert_int_equal(acts[0].status, TRIAD_S_TRANSPORT);
	assert_int_equal(tr_bcast_xfer_done(&b, 0, 1, 2, TRIAD_S_TRANSPORT, acts, 32), -ENOENT);
	assert_int_equal(tr_bcast_xfer_done(&b, 0, 1, 1, TRIAD_S_OK, acts, 32), -ENOENT);
	assert_int_equal(tr_bcast_xfer_done(&b, 0, 1, 0, TRIAD_S_OK, acts, 32), 0);
	assert_int_equal(tr_bcast_xfer_done(&b, 0, 1, 0, TRIAD_S_OK, acts, 32), -ENOENT);
	/* the last one in flight: 1 lacks chunk 2 */
	ret = tr_bcast_xfer_done(&b, 0, 1, 3, TRIAD_S_OK, acts, 32);
	assert_int_equal(ret, 2);
	assert_int_equal(acts[0].type, TR_BCAST_ACT_RANK_DONE);
	assert_int_equal(acts[0].dst, 1);
	assert_int_equal(acts[0].status, TRIAD_S_TRANSPORT);
	assert_int_equal(acts[1].type, TR_BCAST_ACT_DONE);
	assert_int_equal(acts[1].status, TRIAD_S_TRANSPORT);
	assert_int_equal(acts[1].failed, 1);
	assert_int_equal(tr_bcast_stats(&b)->copies, 0);
	assert_int_equal(tr_bcast_stats(&b)->unexpected, 3);
}

/* Pipeline: a failure deep in the chain; the ranks before it that got
 * every chunk are told OK, those after it the error. */
static void test_pipeline_failure_status(void **state)
{
	struct tr_bcast_cfg cfg = { .algo = TR_BCAST_PIPELINE, .chunk = 1, .fanout = 1,
				    .window = 1 };
	struct sim *s = sim_new(6, 0, 4, &cfg, LAT_EQUAL, 0);

	(void)state;
	/* chain 0-1-2-3-4-5, chunk k reaches v at time k + v, reported in
	 * sender order: (0,1) | (1,1) (0,2) | (2,1) (1,2) (0,3) | (3,1) ...
	 * The 7th report, chunk 3 into 1, fails: nobody has everything. */
	s->fail_at = 6;
	s->fail_status = TRIAD_S_TRANSPORT;
	sim_run(s);
	assert_int_equal(s->done_status, TRIAD_S_TRANSPORT);
	assert_int_equal(s->done_failed, 1);
	assert_int_equal(s->nedges, 10); /* 1 + 2 + 3 + 4 by time 3, nothing after */
	for (uint32_t r = 1; r < 6; r++) {
		assert_int_equal(s->rank_done[r], 1);
		assert_int_equal(s->rank_status[r], TRIAD_S_TRANSPORT);
	}
	sim_free(s);

	/* The last report (chunk 3 into 5 at time 8) fails: 1..3 were released
	 * already (their children had everything), 4 is told OK at the abort,
	 * 5 the error. */
	s = sim_new(6, 0, 4, &cfg, LAT_EQUAL, 0);
	s->fail_at = 19;
	s->fail_status = TRIAD_S_TRANSPORT;
	sim_run(s);
	assert_true(s->injected);
	assert_int_equal(s->done_failed, 5);
	for (uint32_t r = 1; r < 5; r++)
		assert_int_equal(s->rank_status[r], TRIAD_S_OK);
	assert_int_equal(s->rank_status[5], TRIAD_S_TRANSPORT);
	sim_free(s);
}


static double far_lat(void *arg, uint32_t a, uint32_t b)
{
	(void)arg;
	return (a == 0 && b >= 1 && b <= 3) || (b == 0 && a >= 1 && a <= 3) ? 15.0 : 1.5;
}

/* ---- the delegated broadcast (proto/bnode): every rank's engine ---------------
 * A message-passing harness: every rank runs its own tr_bnode; WRITEs copy
 * the source's bytes at once (the source must hold them) and queue their
 * completion; ORDERs, REPORTs and ABORTs queue on their link, FIFO per
 * (from, to) as on one RC connection (a WRITE's completion included);
 * the next delivery is drawn at random among the links' heads.  Checked:
 * every byte of every non-root written exactly once, right; RELEASE once
 * per rank, OK, with the data all there; DONE once, at the root, last; the
 * root's events within the bound the spec gives. */

enum dn_kind { DN_ORDER, DN_REPORT, DN_ABORT, DN_WDONE };

struct dn_msg {
	enum dn_kind kind;
	uint32_t from, to;
	struct tr_bnode_act a;
	uint64_t seq;
};

struct dn {
	uint32_t n, root;
	uint64_t len;
	struct tr_bnode *bn;
	uint8_t **buf;
	uint8_t **wrote;  /* per byte: times written */
	bool *dead;
	unsigned *released, *done;
	uint16_t done_status;
	uint32_t done_failed;
	struct dn_msg *q;
	size_t nq, capq;
	uint64_t seq;
	struct tr_bnode_act *acts;
	unsigned cap;
	bool finished_last; /* nothing happened after DONE */
};

static void dn_push(struct dn *d, enum dn_kind kind, uint32_t from, uint32_t to,
		    const struct tr_bnode_act *a)
{
	if (d->nq == d->capq) {
		d->capq = d->capq ? 2 * d->capq : 256;
		d->q = realloc(d->q, d->capq * sizeof(*d->q));
		assert_non_null(d->q);
	}
	d->q[d->nq++] = (struct dn_msg){ .kind = kind, .from = from, .to = to, .a = *a,
					 .seq = d->seq++ };
}

static void dn_exec(struct dn *d, uint32_t r, int n);

static void dn_place(struct dn *d, uint32_t from, uint32_t to, uint64_t off, uint64_t len)
{
	assert_true(off + len <= d->len);
	for (uint64_t i = off; i < off + len; i++) {
		/* The source holds what it sends. */
		assert_int_equal(d->buf[from][i], pattern(i));
		d->buf[to][i] = d->buf[from][i];
		d->wrote[to][i]++;
	}
}

static void dn_exec(struct dn *d, uint32_t r, int n)
{
	assert_true(n >= 0);
	while (n >= 0) {
		struct tr_bnode_act acts[n > 0 ? n : 1];

		memcpy(acts, d->acts, (size_t)n * sizeof(*acts));
		for (int i = 0; i < n; i++) {
			const struct tr_bnode_act *a = &acts[i];

			/* DONE is the root's last action (ranks aborted without
			 * data may release after it: nothing of theirs moves). */
			assert_false(r == d->root && d->done[r]);
			switch (a->type) {
			case TR_BNODE_ACT_WRITE:
				if (!d->dead[a->to])
					dn_place(d, r, a->to, a->off, a->len);
				dn_push(d, DN_WDONE, a->to, r, a);
				break;
			case TR_BNODE_ACT_ORDER:
				if (a->ord.carried && !d->dead[a->to])
					dn_place(d, r, a->to, a->off, a->len);
				dn_push(d, DN_ORDER, r, a->to, a);
				break;
			case TR_BNODE_ACT_REPORT:
				dn_push(d, DN_REPORT, r, a->to, a);
				break;
			case TR_BNODE_ACT_ABORT:
				dn_push(d, DN_ABORT, r, a->to, a);
				break;
			case TR_BNODE_ACT_RELEASE:
				d->released[r]++;
				if (a->status == TRIAD_S_OK)
					for (uint64_t b = 0; b < d->len; b++)
						assert_int_equal(d->buf[r][b], pattern(b));
				break;
			case TR_BNODE_ACT_DONE:
				assert_int_equal(r, d->root);
				d->done[r]++;
				d->done_status = a->status;
				d->done_failed = a->failed;
				break;
			default:
				fail();
			}
		}
		if (!tr_bnode_pending(&d->bn[r]))
			break;
		n = tr_bnode_poll(&d->bn[r], d->acts, d->cap);
	}
}

/* Delivers the head of a random link. */
static bool dn_step(struct dn *d)
{
	size_t pick, head = SIZE_MAX;
	struct dn_msg m;
	int n = 0;

	if (d->nq == 0)
		return false;
	pick = rnd_below(d->nq);
	/* The oldest message on the picked one's link goes first. */
	for (size_t i = 0; i < d->nq; i++)
		if (d->q[i].from == d->q[pick].from && d->q[i].to == d->q[pick].to &&
		    (head == SIZE_MAX || d->q[i].seq < d->q[head].seq))
			head = i;
	m = d->q[head];
	d->q[head] = d->q[--d->nq];
	if (m.kind == DN_WDONE) {
		/* m.from is the destination, m.to the writer. */
		n = tr_bnode_write_done(&d->bn[m.to], m.from, m.a.k,
					d->dead[m.from] ? TRIAD_S_UNREACHABLE : TRIAD_S_OK, d->acts,
					d->cap);
		assert_true(n >= 0);
		dn_exec(d, m.to, n);
		return true;
	}
	if (d->dead[m.to]) {
		/* The sender's transport says the peer is gone. */
		dn_exec(d, m.from, tr_bnode_rank_failed(&d->bn[m.from], m.to, TRIAD_S_UNREACHABLE,
							d->acts, d->cap));
		return true;
	}
	if (m.kind == DN_ORDER)
		n = tr_bnode_on_order(&d->bn[m.to], m.from, &m.a.ord, d->acts, d->cap);
	else if (m.kind == DN_REPORT)
		n = tr_bnode_on_report(&d->bn[m.to], m.from, (enum triad_status)m.a.status,
				       m.a.failed, &m.a.ord, d->acts, d->cap);
	else
		n = tr_bnode_on_abort(&d->bn[m.to], m.from, (enum triad_status)m.a.status,
				      m.a.failed, &m.a.ord, d->acts, d->cap);
	assert_true(n >= 0);
	dn_exec(d, m.to, n);
	return true;
}

static struct dn *dn_new(uint32_t n, uint32_t root, uint64_t len, enum tr_bnode_shape shape,
			 uint64_t chunk, uint64_t inline_max)
{
	struct dn *d = calloc(1, sizeof(*d));
	struct tr_bnode_cfg cfg = { .nranks = n, .root = root, .len = len, .shape = shape,
				    .chunk = chunk, .inline_max = inline_max,
				    .cost = { .lat_us = 1.5, .o_us = 0.5, .gap_us = 0.1, .bw = 12500,
					      .msg_bytes = 128 } };

	assert_non_null(d);
	d->n = n;
	d->root = root;
	d->len = len;
	d->bn = calloc(n, sizeof(*d->bn));
	d->buf = calloc(n, sizeof(*d->buf));
	d->wrote = calloc(n, sizeof(*d->wrote));
	d->dead = calloc(n, sizeof(*d->dead));
	d->released = calloc(n, sizeof(*d->released));
	d->done = calloc(n, sizeof(*d->done));
	for (uint32_t r = 0; r < n; r++) {
		d->buf[r] = calloc(len + 1, 1);
		d->wrote[r] = calloc(len + 1, 1);
		cfg.rank = r;
		assert_int_equal(tr_bnode_init(&d->bn[r], &cfg), 0);
	}
	for (uint64_t b = 0; b < len; b++)
		d->buf[root][b] = pattern(b);
	d->cap = tr_bnode_acts_max(&d->bn[root]);
	d->acts = calloc(d->cap, sizeof(*d->acts));
	return d;
}

static void dn_free(struct dn *d)
{
	for (uint32_t r = 0; r < d->n; r++) {
		free(d->buf[r]);
		free(d->wrote[r]);
	}
	free(d->bn);
	free(d->buf);
	free(d->wrote);
	free(d->dead);
	free(d->released);
	free(d->done);
	free(d->q);
	free(d->acts);
	free(d);
}

static void dn_run(struct dn *d)
{
	dn_exec(d, d->root, tr_bnode_start(&d->bn[d->root], d->acts, d->cap));
	while (dn_step(d))
		;
}

/* Every rank got every byte exactly once, released once; DONE once, OK;
 * the root handled at most its bound of events. */
static void dn_check_ok(struct dn *d)
{
	const struct tr_bnode *rb = &d->bn[d->root];

	assert_int_equal(d->done[d->root], 1);
	assert_int_equal(d->done_status, TRIAD_S_OK);
	assert_int_equal(d->done_failed, TR_BNODE_NO_RANK);
	for (uint32_t r = 0; r < d->n; r++) {
		assert_int_equal(d->released[r], 1);
		for (uint64_t b = 0; r != d->root && b < d->len; b++) {
			assert_int_equal(d->wrote[r][b], 1);
			assert_int_equal(d->buf[r][b], pattern(b));
		}
	}
	if (rb->shape == TR_BNODE_TREE) {
		/* The start, a WRITE completion (when not carried) and a REPORT
		 * per child, at most max_kids children. */
		assert_true(rb->nkids <= rb->cfg.max_kids);
		assert_true(rb->stats.events <= 1 + 2ull * rb->cfg.max_kids);
	} else {
		/* Two children (the trees' roots; with groups, also group 1's):
		 * a completion per chunk and child of its tree, a REPORT per
		 * tree-0 child. */
		unsigned per = rb->perm.grp ? 2 : 1;

		assert_true(rb->nkids <= 2 * per);
		assert_true(rb->stats.events <= 1 + per + per * rb->nchunks);
	}
}

static void test_deleg_all_sizes_all_roots(void **state)
{
	static const uint32_t ns[] = { 1, 2, 3, 4, 5, 7, 8, 9, 16, 17, 31, 64, 100 };
	static const uint64_t lens[] = { 1, 100, 4096, 5000, 70000 };

	(void)state;
	for (unsigned i = 0; i < sizeof(ns) / sizeof(ns[0]); i++)
		for (unsigned l = 0; l < sizeof(lens) / sizeof(lens[0]); l++)
			for (unsigned sh = TR_BNODE_TREE; sh <= TR_BNODE_TWOTREE; sh++) {
				uint32_t roots[2] = { 0, ns[i] - 1 };

				for (unsigned ri = 0; ri < 2; ri++) {
					/* TWOTREE in 4 KiB chunks, carried or written. */
					struct dn *d = dn_new(ns[i], roots[ri], lens[l],
							      (enum tr_bnode_shape)sh, 4096,
							      ri ? 4096 : 1024);

					dn_run(d);
					dn_check_ok(d);
					dn_free(d);
				}
			}
}

static void test_deleg_many_carried_chunks(void **state)
{
	static const uint32_t ns[] = { 2, 3, 8, 9, 33 };

	(void)state;
	/* Carried chunks hold no window: the root has more ORDERs at once
	 * than one call's array takes, and says so (tr_bnode_pending). */
	for (unsigned i = 0; i < sizeof(ns) / sizeof(ns[0]); i++) {
		struct dn *d = dn_new(ns[i], ns[i] - 1, 100000, TR_BNODE_TWOTREE, 512, 1024);

		dn_run(d);
		dn_check_ok(d);
		dn_free(d);
	}
}

static void test_deleg_auto_and_root_events(void **state)
{
	struct tr_bnode_cost c = { .lat_us = 1.5, .o_us = 0.5, .gap_us = 0.1, .bw = 12500,
				   .msg_bytes = 128 };
	struct tr_bnode b;
	struct tr_bnode_cfg cfg = { .nranks = 4096, .len = 8, .cost = c,
				    .inline_max = TR_BNODE_INLINE_DEFAULT };

	(void)state;
	/* Small: the tree, at most ceil(log2 N) + 8 = 20 children per rank
	 * but the root, which takes at most what it would for 64 ranks, 14:
	 * its events do not grow with N (random links in triad-sim: 44 at
	 * 8 B and N = 16384, 2.4x N = 64's, now 24). */
	cfg.rank = 1;
	assert_int_equal(tr_bnode_init(&b, &cfg), 0);
	assert_int_equal(b.cfg.max_kids, 20);
	cfg.rank = 0;
	assert_int_equal(tr_bnode_init(&b, &cfg), 0);
	assert_int_equal(b.shape, TR_BNODE_TREE);
	assert_int_equal(b.cfg.max_kids, 14);
	/* Large: the two trees. */
	cfg.len = 16u << 20;
	assert_int_equal(tr_bnode_init(&b, &cfg), 0);
	assert_int_equal(b.shape, TR_BNODE_TWOTREE);
	assert_true(b.cfg.chunk >= 4096 && b.cfg.chunk <= (4u << 20));
	/* 8 B over 4096 ranks, every rank's engine: the root's events stay
	 * within 64 and its children within the cap. */
	{
		struct dn *d = dn_new(4096, 7, 8, TR_BNODE_AUTO, 0, TR_BNODE_INLINE_DEFAULT);

		dn_run(d);
		dn_check_ok(d);
		assert_true(d->bn[7].stats.events <= 64);
		assert_true(d->bn[7].nkids <= 14);
		dn_free(d);
	}
}

/* The relabelling tag names for N = n as an engine takes it (from an
 * ABORT, its first message): 0, or -ENOENT when refused. */
static int perm_told(uint32_t n, const struct tr_bnode_order *tag, struct tr_bnode_perm *pm)
{
	struct tr_bnode_cfg cfg = { .nranks = n, .rank = 1 };
	struct tr_bnode b;
	struct tr_bnode_act acts[2 * TR_BNODE_MAX_KIDS + 4];
	int ret;

	assert_int_equal(tr_bnode_init(&b, &cfg), 0);
	ret = tr_bnode_on_abort(&b, 0, TRIAD_S_TRANSPORT, 0, tag, acts,
				sizeof(acts) / sizeof(acts[0]));
	*pm = b.perm;
	return ret < 0 ? ret : 0;
}

static void test_deleg_twotree_shape(void **state)
{
	static const uint32_t muls[] = { 0, 1, 2, 3, 5, 7, 11, 13, 17, 255 };

	(void)state;
	/* Every non-root is inner (has children) in at most one tree; each
	 * tree spans the non-roots: every rank's parent chain reaches the root
	 * and names it as a child.  The same under every relabelling a root
	 * may send (mul coprime to N - 1, any rot); the others are refused. */
	for (uint32_t n = 2; n <= 300; n++) {
		uint32_t root = n / 3;

		for (unsigned mi = 0; mi < sizeof(muls) / sizeof(muls[0]); mi++) {
			struct tr_bnode_order tag = { .shape = TR_BNODE_TWOTREE, .mul = muls[mi],
						      .rot = muls[mi] ? (n * 7 + mi) % (n - 1 + !(n - 1))
								      : 0 };
			struct tr_bnode_perm pm;

			if (perm_told(n, &tag, &pm)) {
				/* Refused: not coprime, or too big for N - 1. */
				uint32_t a = muls[mi], b = n - 1;

				while (b) {
					uint32_t x = a % b;

					a = b;
					b = x;
				}
				assert_true(muls[mi] >= n - 1 || a != 1);
				continue;
			}
			for (uint32_t r = 0; r < n; r++) {
				uint32_t k0[TR_BNODE_TKIDS], k1[TR_BNODE_TKIDS];
				unsigned c0 = tr_bnode_tkids(&pm, n, root, r, 0, k0);
				unsigned c1 = tr_bnode_tkids(&pm, n, root, r, 1, k1);

				if (r == root)
					continue;
				assert_false(c0 > 0 && c1 > 0);
				for (unsigned t = 0; t < 2; t++) {
					uint32_t p = tr_bnode_tparent(&pm, n, root, r, t);
					uint32_t kids[TR_BNODE_TKIDS];
					uint32_t steps = 0;
					unsigned c = tr_bnode_tkids(&pm, n, root, p, t, kids);

					assert_true(c >= 1);
					assert_true(kids[0] == r || (c == 2 && kids[1] == r));
					for (uint32_t x = r; x != root;
					     x = tr_bnode_tparent(&pm, n, root, x, t))
						assert_true(++steps < n);
				}
			}
		}
	}
}

static void test_deleg_greedy_latency(void **state)
{
	(void)state;
	/* A far child gets less work: with every link from rank 0 to ranks
	 * 1..3 ten times longer, the root gives them smaller pieces than over
	 * equal links, and everything still arrives once. */
	struct dn *eq = dn_new(64, 0, 8, TR_BNODE_TREE, 0, 1024);
	uint32_t eq_first, far_first;

	dn_run(eq);
	dn_check_ok(eq);
	eq_first = eq->bn[0].kids[0].hi - 1;
	{
		struct dn *d = dn_new(64, 0, 8, TR_BNODE_TREE, 0, 1024);
		struct tr_bnode_cfg cfg = d->bn[0].cfg;

		cfg.lat = far_lat;
		assert_int_equal(tr_bnode_init(&d->bn[0], &cfg), 0);
		dn_run(d);
		dn_check_ok(d);
		far_first = d->bn[0].kids[0].hi - 1;
		assert_true(far_first < eq_first);
		dn_free(d);
	}
	dn_free(eq);
}

/* Link latencies as triad-sim's models give them: racks of arg ranks with
 * 10 x L between racks, or a fixed draw per link in [L, 10 L]. */
static double racks_lat(void *arg, uint32_t a, uint32_t b)
{
	uint32_t rack = (uint32_t)(uintptr_t)arg;

	return a / rack == b / rack ? 1.5 : 15.0;
}

static double random_lat(void *arg, uint32_t a, uint32_t b)
{
	uint64_t lo = a < b ? a : b, hi = a < b ? b : a, z = (lo << 32 | hi) ^ (uintptr_t)arg;

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	z ^= z >> 31;
	return 1.5 + 13.5 * (double)(z >> 11) / 9007199254740992.0;
}

/* Links rank r's tree-t chunks cross between groups of g on their way
 * from the root. */
static unsigned crossings(const struct tr_bnode_perm *pm, uint32_t n, uint32_t root, uint32_t r,
			  unsigned t, uint32_t g)
{
	unsigned c = 0;

	for (uint32_t p; r != root; r = p) {
		p = tr_bnode_tparent(pm, n, root, r, t);
		c += p / g != r / g;
	}
	return c;
}

static void test_deleg_groups(void **state)
{
	(void)state;
	/* Grouped trees, for every group size and fan-out a root may send:
	 * both trees span the non-roots (every parent chain reaches the root,
	 * every parent names the rank as its child); a rank has at most two
	 * children inside its group per tree, inside its group in one tree
	 * only, and at most one outside per tree; every chunk crosses groups
	 * once per level of the groups' tree.  Tags no root sends: refused. */
	for (uint32_t n = 3; n <= 140; n += n < 40 ? 1 : 17) {
		for (uint32_t g = 1; g <= n; g++) {
			for (uint32_t f = 0; f <= 9; f++) {
				uint32_t root = (n * 5 + g) % n, ng = (n + g - 1) / g, levels = 0;
				struct tr_bnode_order tag = { .shape = TR_BNODE_TWOTREE, .grp = g,
							      .fan = f };
				struct tr_bnode_cfg cfg = { .nranks = n, .root = root,
							    .rank = (root + 1) % n };
				struct tr_bnode b;
				struct tr_bnode_act acts[2 * TR_BNODE_MAX_KIDS + 4];
				uint32_t smin = UINT32_MAX;
				int ret;

				for (uint32_t q = 0; q < ng; q++) {
					uint32_t s = (q + 1) * g > n ? n - q * g : g;

					s -= root / g == q;
					smin = s < smin ? s : smin;
				}
				for (uint64_t reach = 1, w = 1; f && reach < ng; levels++)
					reach += (w *= f);
				assert_int_equal(tr_bnode_init(&b, &cfg), 0);
				ret = tr_bnode_on_abort(&b, root, TRIAD_S_TRANSPORT, 0, &tag, acts,
							sizeof(acts) / sizeof(acts[0]));
				if (g < 2 || g >= n || f == 0 || f > ng - 1 || f > smin) {
					assert_int_equal(ret, -ENOENT);
					continue;
				}
				assert_true(ret >= 0);
				assert_int_equal(b.perm.grp, g);
				for (uint32_t r = 0; r < n; r++) {
					unsigned inner = 0;

					for (unsigned t = 0; t < 2; t++) {
						uint32_t kids[TR_BNODE_TKIDS], p;
						unsigned c = tr_bnode_tkids(&b.perm, n, root, r, t, kids);
						unsigned in = 0, out = 0;

						for (unsigned i = 0; i < c; i++) {
							in += kids[i] / g == r / g;
							out += kids[i] / g != r / g;
							assert_int_equal(tr_bnode_tparent(&b.perm, n, root,
											  kids[i], t),
									 r);
						}
						assert_true(in <= 2 && out <= 1);
						inner += r != root && in > 0;
						if (r == root)
							continue;
						p = tr_bnode_tparent(&b.perm, n, root, r, t);
						c = tr_bnode_tkids(&b.perm, n, root, p, t, kids);
						assert_true(kids[0] == r || (c > 1 && kids[1] == r) ||
							    (c > 2 && kids[2] == r));
						assert_true(crossings(&b.perm, n, root, r, t, g) <= levels);
					}
					assert_true(inner <= 1);
				}
			}
		}
	}
}

/* The root's trees for len bytes over n ranks with racks of rack. */
static void racks_root(struct tr_bnode *b, uint32_t n, uint64_t len, uint32_t rack)
{
	struct tr_bnode_cfg cfg = { .nranks = n, .len = len, .shape = TR_BNODE_TWOTREE,
				    .inline_max = TR_BNODE_INLINE_DEFAULT,
				    .cost = { .lat_us = 1.5, .o_us = 0.5, .gap_us = 0.1, .bw = 12500,
					      .msg_bytes = 128 },
				    .lat = racks_lat, .lat_arg = (void *)(uintptr_t)rack };

	assert_int_equal(tr_bnode_init(b, &cfg), 0);
}

/* AUTO weighs the time until every rank holds the data (what an MPI_Bcast
 * returning everywhere takes), not the root's DONE, whose reports come up
 * TWOTREE's deeper trees later; and with link latencies, the plans each
 * shape makes over them (triad-sim: 32 KiB at N = 64 went to TREE, 1.31x
 * the best MPI model, TWOTREE 1.08x; 16 KiB over racks of 64 at N = 128
 * to TREE, 1.67x, TWOTREE with groups 1.01x). */
static void test_deleg_auto_shape(void **state)
{
	struct tr_bnode_cfg cfg = { .nranks = 64, .len = 32768,
				    .inline_max = TR_BNODE_INLINE_DEFAULT,
				    .cost = { .lat_us = 1.5, .o_us = 0.5, .gap_us = 0.1, .bw = 12500,
					      .msg_bytes = 128 } };
	struct tr_bnode b;

	(void)state;
	assert_int_equal(tr_bnode_init(&b, &cfg), 0);
	assert_int_equal(b.shape, TR_BNODE_TWOTREE);
	cfg.len = 16384;
	assert_int_equal(tr_bnode_init(&b, &cfg), 0);
	assert_int_equal(b.shape, TR_BNODE_TREE);
	/* Racks of 64: within one rack as without latencies; across two the
	 * groups. */
	cfg.lat = racks_lat;
	cfg.lat_arg = (void *)(uintptr_t)64;
	assert_int_equal(tr_bnode_init(&b, &cfg), 0);
	assert_int_equal(b.shape, TR_BNODE_TREE);
	cfg.nranks = 128;
	assert_int_equal(tr_bnode_init(&b, &cfg), 0);
	assert_int_equal(b.shape, TR_BNODE_TWOTREE);
	assert_true(b.perm.grp > 0);
	/* 8 B stays with TREE. */
	cfg.len = 8;
	assert_int_equal(tr_bnode_init(&b, &cfg), 0);
	assert_int_equal(b.shape, TR_BNODE_TREE);
}

static void test_deleg_groups_racks(void **state)
{
	static const uint32_t ns[] = { 64, 512, 4096 };

	(void)state;
	/* Racks of 32, 64 KiB (carried chunks of 7936 B): the in-order trees
	 * cross racks at every level above the rack, so some rank's chunks
	 * crossed 2 (N = 64), 6 (512) and 9 (4096) slow links under the best
	 * relabelling (triad-sim: 1.15-1.24x the pipelined binary tree
	 * model).  The root now takes groups (the racks, or halves of them at
	 * N = 64): at most 1, 2 and 2 crossings (0.60-1.05x).  It feeds its
	 * own group only: one child per tree, every chunk sent once (it fed
	 * the next group too, and at 512 KiB handled 136 events at N = 4096
	 * against 49 at N = 64). */
	for (unsigned i = 0; i < sizeof(ns) / sizeof(ns[0]); i++) {
		struct tr_bnode b;
		unsigned worst = 0;
		uint32_t kids[TR_BNODE_TKIDS];

		racks_root(&b, ns[i], 65536, 32);
		assert_true(b.perm.grp > 0 && 32 % b.perm.grp == 0);
		for (unsigned t = 0; t < 2; t++)
			assert_int_equal(tr_bnode_tkids(&b.perm, ns[i], 0, 0, t, kids), 1);
		assert_int_equal(b.nkids, 2);
		for (uint32_t r = 1; r < ns[i]; r++)
			for (unsigned t = 0; t < 2; t++) {
				unsigned c = crossings(&b.perm, ns[i], 0, r, t, 32);

				worst = c > worst ? c : worst;
			}
		assert_true(worst <= (ns[i] == 64 ? 1u : 2u));
	}
	/* 16 MiB: a group's feeders sending each chunk of their tree three
	 * times cost more than the racks save; the flat trees stay
	 * (relabelled). */
	{
		struct tr_bnode b;

		racks_root(&b, 64, 16u << 20, 32);
		assert_int_equal(b.perm.grp, 0);
	}
	/* Every byte once, every rank released once, from any root, with
	 * racks of 32 and 8; and a rank dead from the start. */
	for (uint32_t n = 40; n <= 130; n += 45)
		for (uint32_t rack = 8; rack <= 32; rack *= 4)
			for (uint32_t root = 0; root < n; root += n / 3) {
				struct dn *d = dn_new(n, root, 65536, TR_BNODE_TWOTREE, 0,
						      TR_BNODE_INLINE_DEFAULT);

				for (uint32_t r = 0; r < n; r++) {
					struct tr_bnode_cfg cfg = d->bn[r].cfg;

					cfg.lat = racks_lat;
					cfg.lat_arg = (void *)(uintptr_t)rack;
					assert_int_equal(tr_bnode_init(&d->bn[r], &cfg), 0);
				}
				/* N = 130's last rank has one other in its rack to
				 * feed every group through: it keeps flat trees. */
				if (root != n - 1 || n % rack != 2)
					assert_int_not_equal(d->bn[root].perm.grp, 0);
				dn_run(d);
				dn_check_ok(d);
				dn_free(d);
			}
}

static void test_deleg_latency_models(void **state)
{
	static const uint32_t ns[] = { 2, 3, 5, 9, 17, 33, 64, 100, 257, 700 };
	static const uint64_t lens[] = { 8, 5000, 70000 };

	(void)state;
	/* TREE: pieces cut for each link (heads moved to fast links, sizes
	 * for the latency inside); TWOTREE: far children get wider windows
	 * (2 KiB chunks written, up to TR_BNODE_MAX_WINDOW in flight).  Still
	 * every byte once, every rank released once, the root's events and
	 * children bounded, from any root. */
	for (unsigned i = 0; i < sizeof(ns) / sizeof(ns[0]); i++)
		for (unsigned l = 0; l < 2 * sizeof(lens) / sizeof(lens[0]); l++)
			for (unsigned m = 0; m < 3; m++) {
				uint32_t roots[3] = { 0, ns[i] / 2, ns[i] - 1 };
				bool two = l >= sizeof(lens) / sizeof(lens[0]);
				uint64_t len = lens[l % (sizeof(lens) / sizeof(lens[0]))];

				if ((!two && len > 5000) || (two && ns[i] > 100))
					continue;
				for (unsigned ri = 0; ri < 3; ri++) {
					struct dn *d = dn_new(ns[i], roots[ri], len,
							      two ? TR_BNODE_TWOTREE : TR_BNODE_TREE,
							      two ? 2048 : 0, 1024);

					for (uint32_t r = 0; r < ns[i]; r++) {
						struct tr_bnode_cfg cfg = d->bn[r].cfg;

						cfg.lat = m == 2 ? random_lat : racks_lat;
						cfg.lat_arg = (void *)(uintptr_t)(m == 0 ? 4
									  : m == 1 ? 32
										   : 7 + i);
						assert_int_equal(tr_bnode_init(&d->bn[r], &cfg), 0);
					}
					dn_run(d);
					dn_check_ok(d);
					dn_free(d);
				}
			}
}

/* TREE's hops from the root to rank r in a finished run. */
static unsigned dn_depth(const struct dn *d, uint32_t r)
{
	unsigned h = 0;

	for (; r != d->root; r = d->bn[r].parent) {
		assert_true(d->bn[r].parent < d->n);
		h++;
	}
	return h;
}

static void test_deleg_tree_racks(void **state)
{
	struct dn *d = dn_new(128, 0, 1024, TR_BNODE_TREE, 0, TR_BNODE_INLINE_DEFAULT);
	unsigned deep = 0;

	(void)state;
	/* Racks of 64, two racks, carried data: each piece is sized with the
	 * latency its own ranks meet.  Sized with the whole range's (half
	 * its pairs across racks), a child behind a fast link looked able to
	 * cover most of the other rack, and so did its own first child: 13
	 * hops deep, 3 now. */
	for (uint32_t r = 0; r < d->n; r++) {
		struct tr_bnode_cfg cfg = d->bn[r].cfg;

		cfg.lat = racks_lat;
		cfg.lat_arg = (void *)(uintptr_t)64;
		assert_int_equal(tr_bnode_init(&d->bn[r], &cfg), 0);
	}
	dn_run(d);
	dn_check_ok(d);
	for (uint32_t r = 1; r < d->n; r++)
		deep = deep > dn_depth(d, r) ? deep : dn_depth(d, r);
	assert_true(deep <= 6);
	dn_free(d);
}

static void test_deleg_tree_far_first(void **state)
{
	(void)state;
	/* Carried data (in one ORDER or, 8 KiB, in pieces: each child's
	 * all before the next child's), random links: a rank orders the
	 * children behind its slowest links first (its pieces are cut as
	 * before); written data (above TR_BNODE_TREE_PIECES pieces) keeps the
	 * pieces' order. */
	static const uint64_t lens[] = { 1024, 8192, 96 << 10 };

	for (uint32_t n = 8; n <= 64; n *= 2)
		for (uintptr_t seed = 1; seed <= 4; seed++)
			for (unsigned w = 0; w < 3; w++) {
				struct tr_bnode_cfg cfg = {
					.nranks = n, .len = lens[w], .shape = TR_BNODE_TREE,
					.inline_max = TR_BNODE_INLINE_DEFAULT,
					.cost = { .lat_us = 1.5, .o_us = 0.5, .gap_us = 0.1,
						  .bw = 12500, .msg_bytes = 128 },
					.lat = random_lat, .lat_arg = (void *)seed
				};
				struct tr_bnode b;
				struct tr_bnode_act acts[2 * TR_BNODE_MAX_KIDS + 4];
				double last = 1e9;
				uint32_t prev = 0;
				int na;

				assert_int_equal(tr_bnode_init(&b, &cfg), 0);
				na = tr_bnode_start(&b, acts, sizeof(acts) / sizeof(acts[0]));
				assert_true(na > 1);
				for (int i = 0; i < na; i++) {
					double l;

					if (acts[i].type != TR_BNODE_ACT_ORDER)
						continue;
					l = random_lat((void *)seed, 0, acts[i].to);
					assert_int_equal(acts[i].ord.carried, w < 2);
					if (w == 2)
						assert_true(acts[i].to > prev);
					else
						assert_true(l <= last);
					last = l;
					prev = acts[i].to;
				}
			}
}

/* TREE above a receive slot: the data in carried pieces (each within
 * inline_max) where the estimate says they beat a WRITE and its ORDER,
 * which wait for the WRITE's completion (triad-sim, 8 KiB at N = 8:
 * 1.11x the binomial model written); each child's pieces before the next
 * child's, the same piece of ranks in each; a rank forwards each piece as
 * it comes and takes them only in order from its parent. */
static void test_deleg_tree_pieces(void **state)
{
	static const struct {
		uint64_t len, chunk;
	} cases[] = { { 8192, 4096 }, { 16384, 16384 }, { 96 << 10, 96 << 10 } };
	struct tr_bnode_cfg cfg = { .nranks = 64, .shape = TR_BNODE_AUTO,
				    .inline_max = TR_BNODE_INLINE_DEFAULT,
				    .cost = { .lat_us = 1.5, .o_us = 0.5, .gap_us = 0.1, .bw = 12500,
					      .msg_bytes = 128 } };
	struct tr_bnode_act acts[2 * TR_BNODE_MAX_KIDS + 4], a0, a1;
	struct tr_bnode b, c;
	uint32_t head, nk;
	int na;

	(void)state;
	for (unsigned i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		cfg.len = cases[i].len;
		cfg.shape = i == 2 ? TR_BNODE_TREE : TR_BNODE_AUTO;
		assert_int_equal(tr_bnode_init(&b, &cfg), 0);
		assert_int_equal(b.shape, TR_BNODE_TREE);
		assert_int_equal(b.cfg.chunk, cases[i].chunk);
		na = tr_bnode_start(&b, acts, sizeof(acts) / sizeof(acts[0]));
		assert_true(na > 0);
		for (int j = 0; j < na; j++) {
			uint64_t k = j % b.nchunks, off = k * b.cfg.chunk;

			if (acts[j].type == TR_BNODE_ACT_RELEASE) {
				assert_int_equal(j, na - 1);
				continue;
			}
			assert_int_equal(acts[j].type, i && j % 2 == 0 ? TR_BNODE_ACT_WRITE
									: TR_BNODE_ACT_ORDER);
			if (i)
				continue;
			assert_true(acts[j].ord.carried);
			assert_int_equal(acts[j].ord.k, k);
			assert_int_equal(acts[j].off, off);
			assert_int_equal(acts[j].len, cfg.len - off < b.cfg.chunk ? cfg.len - off
										  : b.cfg.chunk);
			assert_true(acts[j].len <= TR_BNODE_INLINE_DEFAULT);
			if (k) {
				assert_int_equal(acts[j].to, acts[j - 1].to);
				assert_int_equal(acts[j].ord.hi, acts[j - 1].ord.hi);
			}
		}
	}

	/* 8 KiB: the first child forwards piece 0 to its own children as it
	 * comes, then piece 1, and RELEASEs with it. */
	cfg.len = 8192;
	cfg.shape = TR_BNODE_AUTO;
	assert_int_equal(tr_bnode_init(&b, &cfg), 0);
	na = tr_bnode_start(&b, acts, sizeof(acts) / sizeof(acts[0]));
	a0 = acts[0];
	a1 = acts[1];
	head = a0.to;
	cfg.rank = head;
	assert_int_equal(tr_bnode_init(&c, &cfg), 0);
	/* Piece 1 first, or written, or from another rank: not ours. */
	assert_int_equal(tr_bnode_on_order(&c, 0, &a1.ord, acts, sizeof(acts) / sizeof(acts[0])),
			 -ENOENT);
	a0.ord.carried = false;
	assert_int_equal(tr_bnode_on_order(&c, 0, &a0.ord, acts, sizeof(acts) / sizeof(acts[0])),
			 -ENOENT);
	a0.ord.carried = true;
	na = tr_bnode_on_order(&c, 0, &a0.ord, acts, sizeof(acts) / sizeof(acts[0]));
	assert_true(na > 0);
	nk = c.nkids;
	assert_true(nk > 0);
	assert_int_equal((uint32_t)na, nk);
	for (int j = 0; j < na; j++) {
		assert_int_equal(acts[j].type, TR_BNODE_ACT_ORDER);
		assert_int_equal(acts[j].ord.k, 0);
		assert_true(acts[j].ord.carried);
	}
	assert_int_equal(tr_bnode_on_order(&c, 5, &a1.ord, acts, sizeof(acts) / sizeof(acts[0])),
			 -ENOENT);
	a1.ord.hi--;
	assert_int_equal(tr_bnode_on_order(&c, 0, &a1.ord, acts, sizeof(acts) / sizeof(acts[0])),
			 -ENOENT);
	a1.ord.hi++;
	na = tr_bnode_on_order(&c, 0, &a1.ord, acts, sizeof(acts) / sizeof(acts[0]));
	assert_int_equal((uint32_t)na, nk + 1);
	for (uint32_t j = 0; j < nk; j++)
		assert_int_equal(acts[j].ord.k, 1);
	assert_int_equal(acts[nk].type, TR_BNODE_ACT_RELEASE);
	assert_int_equal(acts[nk].status, TRIAD_S_OK);
	assert_int_equal(tr_bnode_on_order(&c, 0, &a1.ord, acts, sizeof(acts) / sizeof(acts[0])),
			 -ENOENT);

	/* Aborted after piece 0 (its window could not take piece 1): every
	 * rank of its children's pieces is told, since they got only part of
	 * the data from it, and nothing more goes out. */
	cfg.rank = head;
	assert_int_equal(tr_bnode_init(&c, &cfg), 0);
	a0.ord.carried = true;
	assert_true(tr_bnode_on_order(&c, 0, &a0.ord, acts, sizeof(acts) / sizeof(acts[0])) > 0);
	{
		struct tr_bnode_order tag = tr_bnode_tag(&c);
		uint32_t aborts = 0;

		na = tr_bnode_on_abort(&c, 0, TRIAD_S_NO_WINDOW, head, &tag, acts,
				       sizeof(acts) / sizeof(acts[0]));
		assert_true(na > 0);
		for (int j = 0; j < na; j++) {
			assert_true(acts[j].type == TR_BNODE_ACT_ABORT ||
				    acts[j].type == TR_BNODE_ACT_RELEASE);
			if (acts[j].type == TR_BNODE_ACT_ABORT) {
				assert_true(acts[j].to > head && acts[j].to < a0.ord.hi);
				aborts++;
			} else {
				assert_int_not_equal(acts[j].status, TRIAD_S_OK);
			}
		}
		assert_int_equal(aborts, a0.ord.hi - head - 1);
		assert_int_equal(tr_bnode_on_order(&c, 0, &a1.ord, acts,
						   sizeof(acts) / sizeof(acts[0])),
				 0);
	}
}

static void test_deleg_relabel(void **state)
{
	struct tr_bnode_cfg cfg = { .nranks = 64, .len = 16u << 20, .shape = TR_BNODE_TWOTREE,
				    .chunk = 32768, .inline_max = 7936,
				    .cost = { .lat_us = 1.5, .o_us = 0.5, .gap_us = 0.1,
					      .bw = 12500, .msg_bytes = 128 },
				    .lat_arg = (void *)(uintptr_t)32 };
	struct tr_bnode root, kid;
	struct tr_bnode_act acts[2 * TR_BNODE_MAX_KIDS + 4];
	int n;

	(void)state;
	/* Racks of 32, N = 64, 16 MiB: the trees' roots are ranks 32 and 33,
	 * across the racks from the root (triad-sim: 1836 us, 1.15x the chain
	 * model); with the latencies the root relabels the trees so that
	 * both are in its own rack (1536 us, 0.96x). */
	assert_int_equal(tr_bnode_init(&root, &cfg), 0);
	assert_int_equal(root.nkids, 2);
	assert_true(root.kids[0].rank >= 32 && root.kids[1].rank >= 32);
	cfg.lat = racks_lat;
	assert_int_equal(tr_bnode_init(&root, &cfg), 0);
	assert_int_equal(root.nkids, 2);
	assert_true(root.kids[0].rank < 32 && root.kids[1].rank < 32);
	/* Its ORDERs tell the relabelling; the tree-0 root takes it and
	 * refuses any other afterwards. */
	n = tr_bnode_start(&root, acts, sizeof(acts) / sizeof(acts[0]));
	assert_true(n >= 2);
	assert_int_equal(acts[1].type, TR_BNODE_ACT_ORDER);
	assert_true(acts[1].ord.mul != 0);
	cfg.rank = acts[1].to;
	assert_int_equal(tr_bnode_init(&kid, &cfg), 0);
	assert_true(tr_bnode_on_order(&kid, 0, &acts[1].ord, acts, sizeof(acts) / sizeof(acts[0])) >= 0);
	assert_int_equal(kid.perm.mul, root.perm.mul);
	assert_int_equal(kid.perm.rot, root.perm.rot);
	{
		struct tr_bnode_order id = { .shape = TR_BNODE_TWOTREE };

		assert_int_equal(tr_bnode_on_abort(&kid, 0, TRIAD_S_TRANSPORT, 0, &id, acts,
						   sizeof(acts) / sizeof(acts[0])),
				 -ENOENT);
	}
	/* Without latencies (the library today) nothing is relabelled. */
	cfg.lat = NULL;
	cfg.rank = 0;
	assert_int_equal(tr_bnode_init(&root, &cfg), 0);
	n = tr_bnode_start(&root, acts, sizeof(acts) / sizeof(acts[0]));
	for (int i = 0; i < n; i++)
		assert_true(acts[i].ord.mul == 0 && acts[i].ord.rot == 0);
}

static void test_deleg_failures(void **state)
{
	unsigned grouped = 0;

	(void)state;
	/* A rank dead from the start, at random: every live rank releases
	 * exactly once, the root's DONE reports an error and a failed rank,
	 * nothing is left in flight.  Some roots take groups (racks of 4). */
	for (unsigned iter = 0; iter < 300; iter++) {
		uint32_t n = 2 + (uint32_t)rnd_below(40);
		uint32_t root = (uint32_t)rnd_below(n), dead = (uint32_t)rnd_below(n);
		unsigned sh = TR_BNODE_TREE + (unsigned)rnd_below(2);
		struct dn *d;

		if (dead == root)
			dead = (root + 1) % n;
		/* Carried whole, in 2 pieces (TREE) or written. */
		d = dn_new(n, root, 9000, (enum tr_bnode_shape)sh, 2048,
			   iter % 4 == 1 ? 16384 : iter % 4 == 3 ? 4500 : 0);
		if (sh == TR_BNODE_TREE)
			assert_int_equal(d->bn[root].nchunks, iter % 4 == 3 ? 2 : 1);
		/* A third with racks or random latencies: TWOTREE relabelled,
		 * an ABORT reaching a rank first tells it the trees. */
		for (uint32_t r = 0; iter % 3 && r < n; r++) {
			struct tr_bnode_cfg cfg = d->bn[r].cfg;

			cfg.lat = iter % 3 == 1 ? racks_lat : random_lat;
			cfg.lat_arg = (void *)(uintptr_t)(iter % 3 == 1 ? 4 : iter);
			assert_int_equal(tr_bnode_init(&d->bn[r], &cfg), 0);
		}
		d->dead[dead] = true;
		grouped += d->bn[root].perm.grp != 0;
		dn_exec(d, root, tr_bnode_start(&d->bn[root], d->acts, d->cap));
		/* Peer loss reaches every live rank at a random moment. */
		{
			uint64_t when = rnd_below(20);
			bool told = false;

			for (uint64_t step = 0;; step++) {
				if (step == when || (d->nq == 0 && !told)) {
					for (uint32_t r = 0; r < n; r++)
						if (!d->dead[r])
							dn_exec(d, r,
								tr_bnode_rank_failed(&d->bn[r], dead,
										     TRIAD_S_UNREACHABLE,
										     d->acts, d->cap));
					told = true;
				}
				if (!dn_step(d) && told)
					break;
			}
		}
		assert_int_equal(d->done[root], 1);
		assert_int_not_equal(d->done_status, TRIAD_S_OK);
		assert_true(d->done_failed < n);
		for (uint32_t r = 0; r < n; r++) {
			if (d->dead[r])
				continue;
			assert_int_equal(d->released[r], 1);
			for (uint64_t b = 0; r != root && b < d->len; b++)
				assert_true(d->wrote[r][b] <= 1);
		}
		assert_int_equal(d->nq, 0);
		dn_free(d);
	}
	assert_true(grouped > 0);
}

static void test_deleg_bad_events(void **state)
{
	struct dn *d = dn_new(8, 0, 100, TR_BNODE_TREE, 0, 1024);
	struct tr_bnode_order o = { .shape = TR_BNODE_TREE, .len = 100, .chunk = 100, .hi = 8,
				    .carried = 1 };

	(void)state;
	/* A report from a rank that was never a child, an ORDER to the root,
	 * a second ORDER, a WRITE completion never asked for: refused. */
	assert_int_equal(tr_bnode_on_report(&d->bn[0], 3, TRIAD_S_OK, TR_BNODE_NO_RANK, &o,
					    d->acts, d->cap), -ENOENT);
	assert_int_equal(tr_bnode_on_order(&d->bn[0], 1, &o, d->acts, d->cap), -ENOENT);
	o.hi = 4;
	assert_true(tr_bnode_on_order(&d->bn[3], 0, &o, d->acts, d->cap) >= 0);
	assert_int_equal(tr_bnode_on_order(&d->bn[3], 0, &o, d->acts, d->cap), -ENOENT);
	assert_int_equal(tr_bnode_write_done(&d->bn[3], 4, 0, TRIAD_S_OK, d->acts, d->cap),
			 -ENOENT);
	assert_int_equal(d->bn[3].stats.unexpected, 1 + 1);
	/* Relabellings no root sends (N = 10: mul coprime to 9, below it;
	 * rot below 9; none on TREE), on every kind of message. */
	{
		static const uint32_t bad[][3] = { { 2, 3, 0 }, { 2, 9, 0 }, { 2, 2, 9 },
						   { 2, 0, 1 }, { 1, 2, 0 }, { 2, 256, 0 } };
		struct tr_bnode_cfg cfg = { .nranks = 10, .rank = 4 };
		struct tr_bnode b;

		for (unsigned i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
			struct tr_bnode_order t = { .shape = (uint8_t)bad[i][0], .mul = bad[i][1],
						    .rot = bad[i][2], .len = 100, .chunk = 10 };

			assert_int_equal(tr_bnode_init(&b, &cfg), 0);
			assert_int_equal(tr_bnode_on_order(&b, 0, &t, d->acts, d->cap), -ENOENT);
			assert_int_equal(tr_bnode_on_report(&b, 0, TRIAD_S_OK, TR_BNODE_NO_RANK,
							    &t, d->acts, d->cap),
					 -ENOENT);
			assert_int_equal(tr_bnode_on_abort(&b, 0, TRIAD_S_TRANSPORT, 0, &t,
							   d->acts, d->cap),
					 -ENOENT);
			assert_int_equal(b.stats.unexpected, 3);
		}
	}
	/* A small array, a bad configuration. */
	assert_int_equal(tr_bnode_start(&d->bn[0], d->acts, 3), -EINVAL);
	{
		struct tr_bnode b;
		struct tr_bnode_cfg cfg = { .nranks = 4, .root = 4 };

		assert_int_equal(tr_bnode_init(&b, &cfg), -EINVAL);
		cfg.root = 0;
		cfg.max_kids = TR_BNODE_MAX_KIDS + 1;
		assert_int_equal(tr_bnode_init(&b, &cfg), -EINVAL);
	}
	dn_free(d);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_names),
		cmocka_unit_test(test_deleg_all_sizes_all_roots),
		cmocka_unit_test(test_deleg_many_carried_chunks),
		cmocka_unit_test(test_deleg_auto_and_root_events),
		cmocka_unit_test(test_deleg_auto_shape),
		cmocka_unit_test(test_deleg_twotree_shape),
		cmocka_unit_test(test_deleg_groups),
		cmocka_unit_test(test_deleg_groups_racks),
		cmocka_unit_test(test_deleg_greedy_latency),
		cmocka_unit_test(test_deleg_latency_models),
		cmocka_unit_test(test_deleg_tree_racks),
		cmocka_unit_test(test_deleg_tree_far_first),
		cmocka_unit_test(test_deleg_tree_pieces),
		cmocka_unit_test(test_deleg_relabel),
		cmocka_unit_test(test_deleg_failures),
		cmocka_unit_test(test_deleg_bad_events),
		cmocka_unit_test(test_init_validation),
		cmocka_unit_test(test_auto),
		cmocka_unit_test(test_fig11),
		cmocka_unit_test(test_greedy_equal_latency),
		cmocka_unit_test(test_greedy_unequal_latency),
		cmocka_unit_test(test_greedy_vs_binomial),
		cmocka_unit_test(test_binomial_rounds),
		cmocka_unit_test(test_pipeline_chain_overlap),
		cmocka_unit_test(test_pipeline_correctness),
		cmocka_unit_test(test_zero_length),
		cmocka_unit_test(test_all_sizes_all_roots),
		cmocka_unit_test(test_single_rank),
		cmocka_unit_test(test_fail_transfer),
		cmocka_unit_test(test_fail_rank),
		cmocka_unit_test(test_fail_random),
		cmocka_unit_test(test_bad_events),
		cmocka_unit_test(test_first_failure_wins),
		cmocka_unit_test(test_pipeline_lost_chunk),
		cmocka_unit_test(test_pipeline_failure_status),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
