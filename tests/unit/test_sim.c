/* Unit tests for triad-sim's network model (sim/model.c): cases whose time
 * follows exactly from the model's definition, and properties of the
 * event trace that must hold whatever the network (docs/sim.md).
 *
 * The expected times are written out from the model: o CPU per handled
 * event and per post, a message or WRITE of n bytes occupies the NIC
 * max(g, n / B), then L on the link; a WRITE's RC acknowledgement takes L
 * back to the source. */
#include <math.h>
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

#include "model.h"

static struct sim_net net_exact(void)
{
	struct sim_net n;

	sim_net_default(&n);
	n.lat_us = 10;
	n.o_us = 1;
	n.gap_us = 2;
	n.bw = 1; /* one byte per us: sizes are times */
	n.msg_bytes = 128;
	n.copy_chunk = 4096;
	return n;
}

static double xmit(const struct sim_net *n, double bytes)
{
	double t = n->bw > 0 ? bytes / n->bw : 0;

	return t > n->gap_us ? t : n->gap_us;
}

/* Three ranks, one copy in transport-ack mode: the order I -> S, the WRITE
 * S -> D, the acknowledgement D -> S (the RC ack) and S -> I (COPY_DONE). */
static void test_copy_legs(void **state)
{
	struct sim_net n = net_exact();
	char err[200];
	double t;
	double order = n.o_us + xmit(&n, n.msg_bytes) + n.lat_us + n.o_us; /* I posts, S handles */
	double write = n.o_us + xmit(&n, 100) + n.lat_us;		     /* S posts, lands at D */
	double ack = n.lat_us + n.o_us					     /* RC ack, S polls */
		     + n.o_us + xmit(&n, n.msg_bytes) + n.lat_us + n.o_us; /* DONE to I */

	(void)state;
	assert_int_equal(sim_copy(&n, 3, 0, 1, 2, 100, &t, err, sizeof(err)), 0);
	assert_true(t == order + write + ack);
	assert_true(t == 6 * n.o_us + 4 * n.lat_us + 2 * 128 + 100);

	/* More than one WRITE: they follow each other on S's NIC (bandwidth),
	 * and S reports once the last is acknowledged. */
	assert_int_equal(sim_copy(&n, 3, 0, 1, 2, 3 * 4096, &t, err, sizeof(err)), 0);
	assert_true(t == order + (n.o_us + 3 * 4096 + n.lat_us) + ack);

	/* Relay adds COPY_DATA to D and D's COPY_RESP to S. */
	n.mode = TR_COPY_RELAY;
	assert_int_equal(sim_copy(&n, 3, 0, 1, 2, 100, &t, err, sizeof(err)), 0);
	assert_true(t > 6 * n.o_us + 4 * n.lat_us + 2 * 128 + 100);
}

/* Two ranks: the broadcast is the root's own PUT (no order leg), then its
 * RANK_DONE, then DONE. */
static void test_two_ranks(void **state)
{
	struct sim_net n = net_exact();
	struct sim_bcast_cfg cfg = { .nranks = 2, .len = 1000, .algo = TR_BCAST_GREEDY };
	struct sim_result r;
	char err[200];

	(void)state;
	assert_int_equal(sim_bcast(&n, &cfg, NULL, NULL, &r, err, sizeof(err)), 0);
	assert_true(r.t_done == n.o_us + xmit(&n, 1000) + 2 * n.lat_us + n.o_us + n.o_us);
	assert_true(r.t_all == r.t_done + xmit(&n, n.msg_bytes) + n.lat_us + n.o_us);
	assert_int_equal(r.puts, 1);
	assert_int_equal(r.copies, 0);
	assert_int_equal(r.root_peers, 1);
	assert_int_equal(r.max_peers, 1);
}

/* Binomial with equal latencies and no CPU, gap or bandwidth cost: one
 * copy time per round, ceil(log2 N) rounds.  A copy is 4 L (order, WRITE,
 * RC ack, DONE); a round in which only the root sends is its PUT, 2 L.
 * The buffer is 16 copy chunks: every WRITE of a copy is in flight at
 * once (a 17th would wait for the first one's acknowledgement). */
static void test_binomial_rounds(void **state)
{
	static const uint32_t ns[] = { 2, 3, 4, 5, 7, 8, 12, 16, 100, 1024, 1025 };
	struct sim_net n = net_exact();
	char err[200];

	(void)state;
	n.o_us = 0;
	n.gap_us = 0;
	n.bw = 0;
	for (size_t i = 0; i < sizeof(ns) / sizeof(ns[0]); i++) {
		struct sim_bcast_cfg cfg = { .nranks = ns[i], .len = 16 * n.copy_chunk,
					     .algo = TR_BCAST_BINOMIAL };
		struct sim_result r;
		double want = 0;
		unsigned rounds = 0;

		for (uint64_t step = 1; step < ns[i]; step *= 2, rounds++) {
			uint64_t cnt = ns[i] - step < step ? ns[i] - step : step;

			want += cnt >= 2 ? 4 * n.lat_us : 2 * n.lat_us;
		}
		assert_int_equal(sim_bcast(&n, &cfg, NULL, NULL, &r, err, sizeof(err)), 0);
		assert_true(r.t_done == want);
		assert_true(want <= rounds * 4 * n.lat_us);
		assert_int_equal(r.copies + r.puts, ns[i] - 1);
	}
}

/* ---- the trace ----------------------------------------------------------- */

struct landed {
	uint32_t dst;
	uint64_t off, len;
	double t;
};

struct rec {
	uint32_t n, root;
	bool *holder, *busy, *targeted;
	double *rank_done;
	unsigned *rank_dones;
	struct landed *land;
	size_t nland, cap;
	unsigned reports, orders, dones;
	bool greedy;
};

static void rec_init(struct rec *r, uint32_t n, uint32_t root, bool greedy)
{
	*r = (struct rec){ .n = n, .root = root, .greedy = greedy };
	r->holder = calloc(n, sizeof(bool));
	r->busy = calloc(n, sizeof(bool));
	r->targeted = calloc(n, sizeof(bool));
	r->rank_done = calloc(n, sizeof(double));
	r->rank_dones = calloc(n, sizeof(unsigned));
	assert_non_null(r->holder);
	assert_non_null(r->busy);
	assert_non_null(r->targeted);
	assert_non_null(r->rank_done);
	assert_non_null(r->rank_dones);
	r->holder[root] = true;
	r->targeted[root] = true;
}

static void rec_free(struct rec *r)
{
	free(r->holder);
	free(r->busy);
	free(r->targeted);
	free(r->rank_done);
	free(r->rank_dones);
	free(r->land);
}

/* Greedy's promise, checked whenever the root is about to learn of a
 * completion (all it ordered after the previous one is in the trace): no
 * holder idle while a rank still waits for a sender. */
static void check_no_idle_holder(const struct rec *r)
{
	bool waiting = false;

	for (uint32_t i = 0; i < r->n; i++)
		waiting |= !r->targeted[i];
	if (!waiting)
		return;
	for (uint32_t i = 0; i < r->n; i++)
		if (r->holder[i] && !r->busy[i])
			fail_msg("rank %u holds the data and is idle while a rank waits", i);
}

static void on_trace(void *arg, const struct sim_trace *ev)
{
	struct rec *r = arg;

	switch (ev->type) {
	case SIM_TR_ORDER:
		assert_true(r->holder[ev->src]);
		assert_false(r->busy[ev->src] && r->greedy);
		r->busy[ev->src] = true;
		r->targeted[ev->dst] = true;
		r->orders++;
		break;
	case SIM_TR_REPORT:
		if (r->greedy)
			check_no_idle_holder(r);
		r->busy[ev->src] = false;
		r->holder[ev->dst] = true;
		r->reports++;
		break;
	case SIM_TR_LANDED:
		if (r->nland == r->cap) {
			r->cap = r->cap ? 2 * r->cap : 256;
			r->land = realloc(r->land, r->cap * sizeof(*r->land));
			assert_non_null(r->land);
		}
		r->land[r->nland++] = (struct landed){ ev->dst, ev->off, ev->len, ev->t };
		break;
	case SIM_TR_RANK_DONE:
		r->rank_done[ev->dst] = ev->t;
		r->rank_dones[ev->dst]++;
		break;
	case SIM_TR_DONE:
		if (r->greedy)
			check_no_idle_holder(r);
		r->dones++;
		break;
	default:
		fail_msg("unknown trace event %d", ev->type);
	}
}

static int landed_cmp(const void *a, const void *b)
{
	const struct landed *x = a, *y = b;

	if (x->dst != y->dst)
		return x->dst < y->dst ? -1 : 1;
	return x->off < y->off ? -1 : x->off > y->off;
}

/* Every non-root rank's buffer is written exactly once, every byte, and it
 * hears RANK_DONE once, after its last byte landed. */
static void check_exactly_once(struct rec *r, uint64_t len)
{
	size_t i = 0;

	qsort(r->land, r->nland, sizeof(*r->land), landed_cmp);
	for (uint32_t d = 0; d < r->n; d++) {
		uint64_t at = 0;
		double last = 0;

		for (; i < r->nland && r->land[i].dst == d; i++) {
			assert_true(d != r->root);
			if (r->land[i].off != at)
				fail_msg("rank %u: bytes from %llu written %s", d,
					 (unsigned long long)at,
					 r->land[i].off < at ? "twice" : "never");
			at += r->land[i].len;
			if (r->land[i].t > last)
				last = r->land[i].t;
		}
		if (d == r->root) {
			assert_int_equal(r->rank_dones[d], 0);
			continue;
		}
		assert_int_equal(at, len);
		assert_int_equal(r->rank_dones[d], 1);
		assert_true(r->rank_done[d] >= last);
	}
	assert_int_equal(r->dones, 1);
	assert_int_equal(r->orders, r->reports);
}

static void run_traced(const struct sim_net *n, uint32_t nranks, uint32_t root, uint64_t len,
		       enum tr_bcast_algo algo, uint64_t pipe_chunk)
{
	struct sim_bcast_cfg cfg = { .nranks = nranks, .root = root, .len = len, .algo = algo,
				     .chunk = pipe_chunk };
	struct sim_result res;
	struct rec r;
	char err[200];

	rec_init(&r, nranks, root, algo == TR_BCAST_GREEDY);
	assert_int_equal(sim_bcast(n, &cfg, on_trace, &r, &res, err, sizeof(err)), 0);
	check_exactly_once(&r, len);
	assert_int_equal(res.copies + res.puts, r.reports);
	assert_true(res.t_all >= res.t_done);
	rec_free(&r);
}

/* Greedy never leaves a holder idle while a rank waits, with equal and
 * with unequal latencies, with and without CPU and bandwidth costs. */
static void test_greedy_keeps_holders_busy(void **state)
{
	struct sim_net n = net_exact();

	(void)state;
	n.bw = 1000;
	run_traced(&n, 64, 0, 1 << 20, TR_BCAST_GREEDY, 0);
	n.lat_model = SIM_LAT_RANDOM;
	n.lat_spread = 10;
	for (n.seed = 1; n.seed <= 5; n.seed++)
		run_traced(&n, 100, 7, 300000, TR_BCAST_GREEDY, 0);
	n.lat_model = SIM_LAT_RACKS;
	n.rack_size = 8;
	n.o_us = 0;
	n.gap_us = 0;
	n.bw = 0;
	run_traced(&n, 37, 36, 4096, TR_BCAST_GREEDY, 0);
}

static void test_exactly_once(void **state)
{
	static const uint32_t ns[] = { 2, 3, 5, 8, 33 };
	static const enum tr_bcast_algo algos[] = { TR_BCAST_GREEDY, TR_BCAST_BINOMIAL,
						    TR_BCAST_PIPELINE };
	struct sim_net n = net_exact();

	(void)state;
	n.bw = 500;
	n.lat_model = SIM_LAT_RANDOM;
	n.lat_spread = 4;
	for (size_t a = 0; a < 3; a++)
		for (size_t i = 0; i < sizeof(ns) / sizeof(ns[0]); i++) {
			/* several copy chunks per transfer, several pipeline chunks */
			run_traced(&n, ns[i], 0, 5 * 4096 + 17, algos[a], 8192);
			run_traced(&n, ns[i], ns[i] - 1, 3 * 8192, algos[a], 8192);
		}
}

/* The seed's claim, on one case: with two racks far apart, greedy's
 * holders pick up work as they finish, binomial waits for every round's
 * slowest (cross-rack) transfer. */
static void test_greedy_beats_binomial_unequal(void **state)
{
	struct sim_net n;
	struct sim_bcast_cfg cfg = { .nranks = 64, .len = 65536 };
	struct sim_result g, b;
	char err[200];

	(void)state;
	sim_net_default(&n);
	n.lat_model = SIM_LAT_RACKS;
	n.rack_size = 32;
	n.lat_spread = 20;
	cfg.algo = TR_BCAST_GREEDY;
	assert_int_equal(sim_bcast(&n, &cfg, NULL, NULL, &g, err, sizeof(err)), 0);
	cfg.algo = TR_BCAST_BINOMIAL;
	assert_int_equal(sim_bcast(&n, &cfg, NULL, NULL, &b, err, sizeof(err)), 0);
	assert_true(g.t_done < b.t_done);
}

/* The same run twice gives the same figures; N = 4096 x 64 MiB runs. */
static void test_deterministic_and_large(void **state)
{
	struct sim_net n;
	struct sim_bcast_cfg cfg = { .nranks = 4096, .len = 64u << 20, .algo = TR_BCAST_GREEDY };
	struct sim_result a, b;
	char err[200];

	(void)state;
	sim_net_default(&n);
	n.lat_model = SIM_LAT_RANDOM;
	n.lat_spread = 3;
	assert_int_equal(sim_bcast(&n, &cfg, NULL, NULL, &a, err, sizeof(err)), 0);
	assert_int_equal(sim_bcast(&n, &cfg, NULL, NULL, &b, err, sizeof(err)), 0);
	assert_true(a.t_done == b.t_done);
	assert_int_equal(a.copies + a.puts, 4095);
	assert_int_equal(a.root_peers, 4095);
	/* never faster than the lower bound */
	assert_true(a.t_done >= sim_lower_bound(&n, 4096, 64u << 20));
}

static void test_links(void **state)
{
	struct sim_net n;

	(void)state;
	sim_net_default(&n);
	n.lat_us = 2;
	n.lat_model = SIM_LAT_RACKS;
	n.lat_spread = 5;
	n.rack_size = 4;
	assert_true(sim_link_lat(&n, 0, 3) == 2);
	assert_true(sim_link_lat(&n, 3, 4) == 10);
	assert_true(sim_link_lat(&n, 9, 1) == sim_link_lat(&n, 1, 9));
	n.lat_model = SIM_LAT_RANDOM;
	for (uint32_t a = 0; a < 50; a++)
		for (uint32_t b = a + 1; b < 50; b++) {
			double l = sim_link_lat(&n, a, b);

			assert_true(l >= 2 && l <= 10);
			assert_true(l == sim_link_lat(&n, b, a));
		}
	/* max(S / B, ceil(log2 N) x L) */
	n.bw = 100;
	assert_true(sim_lower_bound(&n, 8, 100) == 6);
	assert_true(sim_lower_bound(&n, 9, 10000) == 100);
}

static void test_bad_input(void **state)
{
	struct sim_net n;
	struct sim_bcast_cfg cfg = { .nranks = 0, .len = 1, .algo = TR_BCAST_GREEDY };
	struct sim_result r;
	char err[200] = "";
	double t;

	(void)state;
	sim_net_default(&n);
	assert_int_equal(sim_bcast(&n, &cfg, NULL, NULL, &r, err, sizeof(err)), -EINVAL);
	assert_true(err[0] != '\0');
	cfg.nranks = 4;
	cfg.root = 4;
	assert_int_equal(sim_bcast(&n, &cfg, NULL, NULL, &r, err, sizeof(err)), -EINVAL);
	cfg.root = 0;
	cfg.algo = TR_BCAST_NALGOS;
	assert_int_equal(sim_bcast(&n, &cfg, NULL, NULL, &r, err, sizeof(err)), -EINVAL);
	cfg.algo = TR_BCAST_GREEDY;
	n.lat_us = -1;
	err[0] = '\0';
	assert_int_equal(sim_bcast(&n, &cfg, NULL, NULL, &r, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "latency"));
	sim_net_default(&n);
	n.lat_model = SIM_LAT_RACKS;
	n.rack_size = 0;
	assert_int_equal(sim_bcast(&n, &cfg, NULL, NULL, &r, err, sizeof(err)), -EINVAL);
	sim_net_default(&n);
	n.lat_spread = 0.5;
	assert_int_equal(sim_bcast(&n, &cfg, NULL, NULL, &r, err, sizeof(err)), -EINVAL);
	sim_net_default(&n);
	assert_int_equal(sim_copy(&n, 3, 0, 1, 3, 10, &t, err, sizeof(err)), -EINVAL);
}


/* ---- the delegated broadcast and the reference models ------------------------ */

struct dtrace {
	uint32_t n;
	uint64_t len;
	uint8_t **wrote; /* per rank, per byte: times it landed */
	unsigned *released;
	unsigned done;
};

static void dtrace_cb(void *arg, const struct sim_trace *ev)
{
	struct dtrace *d = arg;

	if (ev->type == SIM_TR_LANDED) {
		assert_true(ev->off + ev->len <= d->len);
		for (uint64_t b = ev->off; b < ev->off + ev->len; b++)
			d->wrote[ev->dst][b]++;
	} else if (ev->type == SIM_TR_RANK_DONE) {
		d->released[ev->dst]++;
	} else if (ev->type == SIM_TR_DONE) {
		d->done++;
	}
}

/* Every byte of every non-root lands exactly once, every rank releases
 * once, the root's DONE once; each shape, equal and random latencies. */
static void test_deleg_exactly_once(void **state)
{
	static const uint32_t ns[] = { 2, 3, 8, 33, 100 };
	static const uint64_t lens[] = { 8, 5000, 300000 };
	struct sim_net net;

	(void)state;
	sim_net_default(&net);
	for (unsigned m = 0; m < 2; m++) {
		net.lat_model = m ? SIM_LAT_RANDOM : SIM_LAT_EQUAL;
		net.lat_spread = m ? 10 : 1;
		for (unsigned i = 0; i < sizeof(ns) / sizeof(ns[0]); i++)
			for (unsigned l = 0; l < sizeof(lens) / sizeof(lens[0]); l++)
				for (unsigned sh = TR_BNODE_AUTO; sh <= TR_BNODE_TWOTREE; sh++) {
					struct sim_bcast_cfg cfg = { .nranks = ns[i], .root = ns[i] / 2,
								     .len = lens[l], .deleg = true,
								     .shape = (enum tr_bnode_shape)sh };
					struct dtrace d = { .n = ns[i], .len = lens[l] };
					struct sim_result res;
					char err[256];

					d.wrote = calloc(ns[i], sizeof(*d.wrote));
					d.released = calloc(ns[i], sizeof(*d.released));
					for (uint32_t r = 0; r < ns[i]; r++)
						d.wrote[r] = calloc(lens[l], 1);
					assert_int_equal(sim_bcast(&net, &cfg, dtrace_cb, &d, &res, err,
								   sizeof(err)), 0);
					assert_int_equal(d.done, 1);
					for (uint32_t r = 0; r < ns[i]; r++) {
						assert_int_equal(d.released[r], 1);
						for (uint64_t b = 0; r != cfg.root && b < lens[l]; b++)
							assert_int_equal(d.wrote[r][b], 1);
						free(d.wrote[r]);
					}
					assert_true(res.t_all <= res.t_done);
					free(d.wrote);
					free(d.released);
				}
	}
}

/* The targets at points cheap enough for a unit test: at 8 B the
 * root handles at most 64 events at N = 4096 and at most twice its count
 * at N = 64, and every rank has its data before the best reference model
 * would give it; at 16 MiB and N = 64 within 1.3 x the lower bound. */
static void test_deleg_targets(void **state)
{
	struct sim_net net;
	struct sim_result r64, r4k, big;
	struct sim_bcast_cfg cfg = { .nranks = 64, .len = 8, .deleg = true };
	char err[256];
	double best = -1;

	(void)state;
	sim_net_default(&net);
	assert_int_equal(sim_bcast(&net, &cfg, NULL, NULL, &r64, err, sizeof(err)), 0);
	cfg.nranks = 4096;
	assert_int_equal(sim_bcast(&net, &cfg, NULL, NULL, &r4k, err, sizeof(err)), 0);
	assert_int_equal(r4k.shape, TR_BNODE_TREE);
	assert_true(r4k.root_events <= 64);
	assert_true(r4k.root_events <= 2 * r64.root_events);
	for (unsigned m = 0; m < SIM_REF_N; m++) {
		double t = sim_ref_time(&net, (enum sim_ref)m, 4096, 0, 8, NULL);

		if (best < 0 || t < best)
			best = t;
	}
	assert_true(r4k.t_all <= best);
	cfg.nranks = 64;
	cfg.len = 16u << 20;
	assert_int_equal(sim_bcast(&net, &cfg, NULL, NULL, &big, err, sizeof(err)), 0);
	assert_int_equal(big.shape, TR_BNODE_TWOTREE);
	assert_true(big.t_all <= 1.3 * sim_lower_bound(&net, 64, cfg.len));
}

/* A NIC's receive side is taken span by span as WRITEs arrive, not in
 * the order they were posted: one posted later that arrives first lands
 * in the gap before an earlier one, spans that touch join, and an
 * arrival while it is taken waits for the span's end. */
static void test_rx_spans(void **state)
{
	struct sim_rx rx = { 0 };

	(void)state;
	assert_true(sim_rx_take(&rx, 0, 10, 5) == 15);
	assert_true(sim_rx_take(&rx, 0, 0, 5) == 5);	 /* before [10, 15) */
	assert_true(sim_rx_take(&rx, 0, 3, 5) == 10);	 /* after [0, 5), fills the gap */
	assert_int_equal(rx.n, 1);			 /* [0, 15) */
	assert_true(sim_rx_take(&rx, 0, 12, 2) == 17);
	assert_true(sim_rx_take(&rx, 16, 30, 0) == 30); /* nothing taken */
	assert_true(sim_rx_take(&rx, 18, 20, 1) == 21); /* [0, 17) ended: dropped */
	assert_int_equal(rx.n, 1);
	free(rx.v);
}

/* Random links, 16 MiB to 128 ranks: the two trees stream within 1.3 x
 * the bound.  While a rank's receive side was held from the post of a
 * WRITE over a slow link, one over a fast link posted later waited behind
 * the gap: 1.43 x. */
static void test_deleg_random_links_stream(void **state)
{
	struct sim_net net;
	struct sim_result r;
	struct sim_bcast_cfg cfg = { .nranks = 128, .len = 16u << 20, .deleg = true };
	char err[256];

	(void)state;
	sim_net_default(&net);
	net.lat_model = SIM_LAT_RANDOM;
	net.lat_spread = 10;
	assert_int_equal(sim_bcast(&net, &cfg, NULL, NULL, &r, err, sizeof(err)), 0);
	assert_int_equal(r.shape, TR_BNODE_TWOTREE);
	assert_true(r.t_all <= 1.3 * sim_lower_bound(&net, 128, cfg.len));
}

/* The reference models where they follow from their definitions: with o
 * = g = 0 and no bandwidth cost, binomial takes its depth in hops of L;
 * the chain N - 1; scatter + recursive doubling the depth and ceil(log2 N). */
static void test_ref_models(void **state)
{
	struct sim_net net;

	(void)state;
	sim_net_default(&net);
	net.o_us = 0;
	net.gap_us = 0;
	net.bw = 0;
	net.lat_us = 2;
	for (uint32_t n = 2; n <= 1025; n = n * 2 + 1) {
		unsigned lg = 0, depth = 0;

		while ((1u << lg) < n)
			lg++;
		/* The deepest rank of a binomial tree: the most bits set below n. */
		for (uint32_t v = 0; v < n; v++)
			if ((unsigned)__builtin_popcount(v) > depth)
				depth = (unsigned)__builtin_popcount(v);
		assert_true(fabs(sim_ref_time(&net, SIM_REF_BINOMIAL, n, 0, 100, NULL) - 2.0 * depth) <
			    1e-9);
		assert_true(fabs(sim_ref_time(&net, SIM_REF_CHAIN, n, 0, 100, NULL) -
				 2.0 * (n - 1)) < 1e-9);
		/* the scatter down the same tree, then ceil(log2 N) exchanges */
		assert_true(fabs(sim_ref_time(&net, SIM_REF_SCATTER_RD, n, 0, 100, NULL) -
				 2.0 * (depth + lg)) < 1e-9);
	}
	assert_true(strcmp(sim_ref_str(SIM_REF_CHAIN), "ref:chain") == 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_copy_legs),
		cmocka_unit_test(test_two_ranks),
		cmocka_unit_test(test_binomial_rounds),
		cmocka_unit_test(test_greedy_keeps_holders_busy),
		cmocka_unit_test(test_exactly_once),
		cmocka_unit_test(test_greedy_beats_binomial_unequal),
		cmocka_unit_test(test_deterministic_and_large),
		cmocka_unit_test(test_links),
		cmocka_unit_test(test_bad_input),
		cmocka_unit_test(test_deleg_exactly_once),
		cmocka_unit_test(test_deleg_targets),
		cmocka_unit_test(test_ref_models),
		cmocka_unit_test(test_rx_spans),
		cmocka_unit_test(test_deleg_random_links_stream),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
