/* The classic MPI broadcasts as analytic models on triad-sim's network
 * (docs/sim.md, "Reference rows").  These are models, not implementations:
 * no engine runs, nothing is simulated event by event.  Every message of m
 * bytes over link a - b costs the LogGP-like network of sim/model.h
 *
 *   hop(m, a, b) = o + max(g, m / B) + L(a, b) + o
 *
 * from the moment the sender starts it to the moment the receiver has
 * handled it, and occupies the sender for step(m) = max(o, g, m / B)
 * before its next send.  A rank forwards only what it has received whole
 * (store and forward, per message or segment).  Times are when the last
 * rank holds all the data; no rank reports anything back. */
#include <stdlib.h>

#include "model.h"

static double mx(double a, double b)
{
	return a > b ? a : b;
}

static double xfer(const struct sim_net *n, double bytes)
{
	return mx(n->gap_us, n->bw > 0 ? bytes / n->bw : 0);
}

static double step(const struct sim_net *n, double bytes)
{
	return mx(n->o_us, xfer(n, bytes));
}

static double hop(const struct sim_net *n, double bytes, uint32_t a, uint32_t b)
{
	return 2 * n->o_us + xfer(n, bytes) + sim_link_lat(n, a, b);
}

static double ceil_div(double a, double b)
{
	double q = a / b;
	uint64_t u = (uint64_t)q;

	return q > (double)u ? (double)(u + 1) : (double)u;
}

static uint32_t abs_of(uint32_t n, uint32_t root, uint32_t v)
{
	return (uint32_t)(((uint64_t)v + root) % n);
}

static unsigned ceil_log2(uint64_t x)
{
	unsigned l = 0;

	while ((1ull << l) < x)
		l++;
	return l;
}

/* Binomial tree in relative ranks: v's children v + 2^j for 2^j > v, the
 * largest subtree first (MPICH); child c's message is bytes(c).  Returns
 * the time the last rank has its message.  With whole = true every message
 * is the whole buffer, else c gets its subtree's share (a scatter). */
static double binomial(const struct sim_net *net, uint32_t n, uint32_t root, double len,
		       bool whole, double *t)
{
	double last = 0;

	t[0] = 0;
	for (uint32_t v = 0; v < n; v++) {
		unsigned hi = 0, i = 0;

		/* v's children: v + 2^j below v's lowest set bit (all j for 0). */
		if (v == 0)
			hi = ceil_log2(n);
		else
			while (!(v >> hi & 1))
				hi++;
		for (int j = (int)hi - 1; j >= 0; j--) {
			uint64_t c = (uint64_t)v + (1ull << j), sub;
			double bytes;

			if (c >= n)
				continue;
			sub = (1ull << j) < n - c ? (1ull << j) : n - c;
			bytes = whole ? len : len * (double)sub / n;
			t[c] = t[v] + i * step(net, bytes) +
			       hop(net, bytes, abs_of(n, root, v), abs_of(n, root, (uint32_t)c));
			i++;
		}
		if (t[v] > last)
			last = t[v];
	}
	return last;
}

static double ring_allgather(const struct sim_net *net, uint32_t n, uint32_t root, double len)
{
	double worst = 0;

	for (uint32_t v = 0; v < n; v++) {
		double h = hop(net, len / n, abs_of(n, root, v), abs_of(n, root, (v + 1) % n));

		worst = mx(worst, h);
	}
	return (n - 1) * worst;
}

static double rd_allgather(const struct sim_net *net, uint32_t n, uint32_t root, double len)
{
	double sum = 0;

	for (unsigned k = 0; (1u << k) < n; k++) {
		double bytes = len * (double)(1u << k) / n, worst = 0;

		for (uint32_t v = 0; v < n; v++) {
			uint32_t p = v ^ (1u << k);

			if (p < n)
				worst = mx(worst, hop(net, bytes, abs_of(n, root, v), abs_of(n, root, p)));
		}
		sum += worst;
	}
	return sum;
}

/* Pipelined along a tree of fanout f in heap order (f = 1: a chain), in
 * segments of seg bytes: a rank sends each segment to its children in
 * turn; the first segment needs the path's hops (each child waits its
 * turn), the others follow at the busiest rank's pace: its NIC sends f
 * segments, its CPU handles one and posts f. */
static double pipelined(const struct sim_net *net, uint32_t n, uint32_t root, double len,
			uint32_t f, double seg, double *t)
{
	double nseg = len > seg ? ceil_div(len, seg) : 1, last = 0, per, pace;

	if (seg > len)
		seg = len;
	per = step(net, seg);
	pace = mx((f > 1 && n > 2 ? f : 1) * xfer(net, seg), ((f > 1 && n > 2 ? f : 1) + 1) * net->o_us);
	t[0] = 0;
	for (uint64_t c = 1; c < n; c++) {
		uint64_t p = (c - 1) / f, i = (c - 1) % f;

		t[c] = t[p] + (double)i * per +
		       hop(net, seg, abs_of(n, root, (uint32_t)p), abs_of(n, root, (uint32_t)c));
		last = mx(last, t[c]);
	}
	return last + (nseg - 1) * pace;
}

static const char *const names[SIM_REF_N] = {
	[SIM_REF_BINOMIAL] = "ref:binomial",
	[SIM_REF_SCATTER_RING] = "ref:scat+ring",
	[SIM_REF_SCATTER_RD] = "ref:scat+rd",
	[SIM_REF_PIPE_BINARY] = "ref:pipe-bin",
	[SIM_REF_CHAIN] = "ref:chain",
};

const char *sim_ref_str(enum sim_ref ref)
{
	return (unsigned)ref < SIM_REF_N ? names[ref] : "?";
}

double sim_ref_time(const struct sim_net *net, enum sim_ref ref, uint32_t nranks, uint32_t root,
		    uint64_t len, uint64_t *seg_p)
{
	double *t, best = 0, l = (double)len;
	uint64_t bseg = len;

	if (nranks <= 1 || len == 0) {
		if (seg_p)
			*seg_p = len;
		return 0;
	}
	t = malloc(nranks * sizeof(*t));
	if (!t)
		return -1;
	switch (ref) {
	case SIM_REF_BINOMIAL:
		best = binomial(net, nranks, root, l, true, t);
		break;
	case SIM_REF_SCATTER_RING:
		best = binomial(net, nranks, root, l, false, t) + ring_allgather(net, nranks, root, l);
		break;
	case SIM_REF_SCATTER_RD:
		best = binomial(net, nranks, root, l, false, t) + rd_allgather(net, nranks, root, l);
		break;
	case SIM_REF_PIPE_BINARY:
	case SIM_REF_CHAIN: {
		uint32_t f = ref == SIM_REF_CHAIN ? 1 : 2;

		best = -1;
		/* The best segment size: powers of two from 64 B to the buffer. */
		for (uint64_t seg = 64;; seg *= 2) {
			uint64_t sz = seg < len ? seg : len;
			double x = pipelined(net, nranks, root, l, f, (double)sz, t);

			if (best < 0 || x < best) {
				best = x;
				bseg = sz;
			}
			if (seg >= len)
				break;
		}
		break;
	}
	default:
		best = -1;
		break;
	}
	free(t);
	if (seg_p)
		*seg_p = bseg;
	return best;
}
