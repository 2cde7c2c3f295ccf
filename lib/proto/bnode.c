#include "proto/bnode.h"

#include <errno.h>
#include <stddef.h>

#define NIL TR_BNODE_NO_RANK

/* struct tr_bnode_kid.flags */
#define K_REPORTS 0x01	/* owes this rank a REPORT */
#define K_REPORTED 0x02 /* ... and sent it */
#define K_DEAD 0x04	/* reported failed */
#define K_CUT 0x08	/* no more WRITEs to it (failed, or this rank aborted) */
#define K_FAR 0x10	/* TWOTREE: in another group than this rank (served first) */

static const char *const shape_names[TR_BNODE_NSHAPES] = {
	[TR_BNODE_AUTO] = "auto",
	[TR_BNODE_TREE] = "tree",
	[TR_BNODE_TWOTREE] = "twotree",
};

static const char *const act_names[TR_BNODE_NACTS] = {
	[TR_BNODE_ACT_WRITE] = "write",	    [TR_BNODE_ACT_ORDER] = "order",
	[TR_BNODE_ACT_REPORT] = "report",   [TR_BNODE_ACT_ABORT] = "abort",
	[TR_BNODE_ACT_RELEASE] = "release", [TR_BNODE_ACT_DONE] = "done",
};

const char *tr_bnode_shape_str(unsigned shape)
{
	return shape < TR_BNODE_NSHAPES ? shape_names[shape] : "?";
}

const char *tr_bnode_act_str(unsigned type)
{
	return type < TR_BNODE_NACTS ? act_names[type] : "?";
}

/* ---- helpers -------------------------------------------------------------- */

static unsigned ceil_log2(uint64_t x)
{
	unsigned l = 0;

	while ((1ull << l) < x)
		l++;
	return l;
}

static bool status_final(unsigned s)
{
	return s < TRIAD_S_MAX && s != TRIAD_S_PENDING;
}

static uint32_t rel_of(uint32_t n, uint32_t root, uint32_t r)
{
	return (uint32_t)(((uint64_t)r + n - root) % n);
}

static uint32_t abs_of(uint32_t n, uint32_t root, uint32_t v)
{
	return (uint32_t)(((uint64_t)v + root) % n);
}

static uint64_t chunks_in(const struct tr_bnode *b, unsigned t)
{
	if (b->shape == TR_BNODE_TREE)
		return t == 0 ? b->nchunks : 0;
	return (b->nchunks + 1 - t) / 2;
}

static bool holds_all(const struct tr_bnode *b)
{
	if (b->v != 0 && !b->known)
		return false;
	return b->have[0] == chunks_in(b, 0) && b->have[1] == chunks_in(b, 1);
}

static void fail_first(struct tr_bnode *b, unsigned status, uint32_t rank)
{
	if (b->status == TRIAD_S_OK) {
		b->status = (uint16_t)status;
		b->failed = rank;
	}
}

/* ---- the two trees ----------------------------------------------------------
 * Over the n = N - 1 non-roots, x = relative rank - 1.  Tree 0 numbers x as
 * j = x + 1 in 1..n, tree 1 as n - x (n even) or x with 0 as n (n odd).  In
 * both, j's children are j -+ 2^(i) below its lowest set bit 2^k (left j -
 * 2^(k-1), right the first j + 2^i <= n, i = k-1 .. 0) and the root is the
 * largest power of two <= n: odd j are leaves, so x even is a leaf in tree
 * 0 and x odd one in tree 1 (n odd: x = 0 in both).  Every rank is an inner
 * node of at most one tree. */

static uint32_t j_of(uint32_t n, uint32_t x, unsigned t)
{
	if (t == 0)
		return x + 1;
	if (n % 2 == 0)
		return n - x;
	return x == 0 ? n : x;
}

static uint32_t x_of(uint32_t n, uint32_t j, unsigned t)
{
	if (t == 0)
		return j - 1;
	if (n % 2 == 0)
		return n - j;
	return j == n ? 0 : j;
}

static unsigned ix_kids(uint32_t n, uint32_t j, uint32_t kids[2])
{
	unsigned k = 0, cnt = 0;

	while (!(j >> k & 1))
		k++;
	if (k == 0)
		return 0;
	kids[cnt++] = j - (1u << (k - 1));
	for (int i = (int)k - 1; i >= 0; i--)
		if ((uint64_t)j + (1u << i) <= n) {
			kids[cnt++] = j + (1u << i);
			break;
		}
	return cnt;
}

static uint32_t ix_root(uint32_t n)
{
	uint32_t r = 1;

	while ((uint64_t)r * 2 <= n)
		r *= 2;
	return r;
}

/* The parent index of j, 0 for the root. */
static uint32_t ix_parent(uint32_t n, uint32_t j)
{
	uint32_t p = ix_root(n), up = 0;

	while (p != j) {
		uint32_t kids[2];
		unsigned c = ix_kids(n, p, kids);

		up = p;
		if (c == 0)
			return 0; /* not reached for 1 <= j <= n */
		p = j < p || c == 1 ? kids[0] : kids[1];
	}
	return up;
}

/* The trees' positions x are relabelled: position x is relative rank
 * 1 + (mul x + rot) mod n (gcd(mul, n) = 1; the identity is mul 1, rot 0),
 * so that the root can move the trees onto fast links (choose_perm()). */
static const struct tr_bnode_perm identity = { .mul = 1, .rot = 0, .inv = 1 };

static uint32_t rel_at(const struct tr_bnode_perm *p, uint32_t n, uint32_t x)
{
	return 1 + (uint32_t)(((uint64_t)p->mul * x + p->rot) % n);
}

static uint32_t pos_of(const struct tr_bnode_perm *p, uint32_t n, uint32_t v)
{
	return (uint32_t)((uint64_t)p->inv * (((uint64_t)v - 1 + n - p->rot) % n) % n);
}

/* mul's inverse mod n, 0 if gcd(mul, n) != 1 (n >= 1). */
static uint32_t inverse(uint32_t mul, uint32_t n)
{
	int64_t r0 = n, r1 = mul % n, t0 = 0, t1 = 1;

	if (n == 1)
		return 1;
	while (r1) {
		int64_t q = r0 / r1, r = r0 - q * r1, t = t0 - q * t1;

		r0 = r1;
		r1 = r;
		t0 = t1;
		t1 = t;
	}
	if (r0 != 1)
		return 0;
	return (uint32_t)(t0 < 0 ? t0 + n : t0);
}

/* ---- TWOTREE over groups ---------------------------------------------------
 * With link latencies that come in groups (racks: the ranks a / grp), the
 * in-order trees cross between groups at every level above the group size,
 * whatever the relabelling.  Grouped, each group's members (in rank order,
 * the root left out) form a two-tree of their own, and the groups a tree
 * of fanout fan in heap order of their index relative to the root's group
 * (group g feeds groups 1 + g fan + i, i < fan): the i-th feeder of a
 * group sends tree t's chunks to the child group's tree-t root.  A group's
 * feeders are its tree-t members, the highest first (the earliest to hold
 * a chunk); the root feeds its own group's tree roots only, so that it
 * sends every chunk once, as with flat trees.  Every member feeds at most
 * one group (fan <= the smallest group), so a rank has at most two
 * children inside its group and one outside per tree.  A chunk crosses
 * groups once per level of the groups' tree, not once per level of a
 * binary tree over all ranks. */

struct gview {
	uint32_t nr, root, grp, fan, ng, qr; /* ng groups; qr: the root's */
};

static struct gview gview_of(const struct tr_bnode_perm *p, uint32_t nranks, uint32_t root)
{
	return (struct gview){ .nr = nranks, .root = root, .grp = p->grp, .fan = p->fan,
			       .ng = (uint32_t)(((uint64_t)nranks + p->grp - 1) / p->grp),
			       .qr = root / p->grp };
}

/* Group g (relative to the root's): its absolute number, members, the
 * x-th of them, and a member's x. */
static uint32_t g_abs(const struct gview *gv, uint32_t g)
{
	return (uint32_t)(((uint64_t)g + gv->qr) % gv->ng);
}

static uint32_t g_size(const struct gview *gv, uint32_t g)
{
	uint32_t q = g_abs(gv, g);
	uint64_t base = (uint64_t)q * gv->grp, end = base + gv->grp;

	if (end > gv->nr)
		end = gv->nr;
	return (uint32_t)(end - base) - (q == gv->qr);
}

static uint32_t g_member(const struct gview *gv, uint32_t g, uint32_t x)
{
	uint32_t q = g_abs(gv, g), a = q * gv->grp + x;

	return q == gv->qr && a >= gv->root ? a + 1 : a;
}

static uint32_t g_pos(const struct gview *gv, uint32_t a)
{
	uint32_t q = a / gv->grp, x = a - q * gv->grp;

	return q == gv->qr && a > gv->root ? x - 1 : x;
}

static uint32_t g_rel(const struct gview *gv, uint32_t a)
{
	return (uint32_t)(((uint64_t)a / gv->grp + gv->ng - gv->qr) % gv->ng);
}

/* Indices 1..n by height (their lowest set bit), highest first, then in
 * order: the index's place, and the place's index (the feeders). */
static uint32_t at_height(uint32_t n, unsigned h)
{
	return (uint32_t)((((uint64_t)n >> h) + 1) / 2);
}

static uint32_t hord_of(uint32_t n, uint32_t j)
{
	unsigned h = 0;
	uint32_t before = 0;

	while (!(j >> h & 1))
		h++;
	for (unsigned g = h + 1; g < 32 && (1ull << g) <= n; g++)
		before += at_height(n, g);
	return before + (j >> (h + 1));
}

static uint32_t j_at_hord(uint32_t n, uint32_t i)
{
	unsigned h = 0;

	while (h < 31 && (1ull << (h + 1)) <= n)
		h++;
	for (;; h--) {
		uint32_t c = at_height(n, h);

		if (i < c || h == 0)
			return (uint32_t)((2ull * i + 1) << h);
		i -= c;
	}
}

/* Group g's tree-t root. */
static uint32_t g_troot(const struct gview *gv, uint32_t g, unsigned t)
{
	uint32_t s = g_size(gv, g);

	return g_member(gv, g, x_of(s, ix_root(s), t));
}

/* The feeder place of non-root a in tree t: the groups it feeds are
 * 1 + g fan + place (one at most: fan <= every group's size). */
static uint32_t g_place(const struct gview *gv, uint32_t a, unsigned t)
{
	uint32_t g = g_rel(gv, a), s = g_size(gv, g);

	return hord_of(s, j_of(s, g_pos(gv, a), t));
}

static uint32_t g_tparent(const struct gview *gv, uint32_t a, unsigned t)
{
	uint32_t g = g_rel(gv, a), s = g_size(gv, g), pg, i, p;

	p = ix_parent(s, j_of(s, g_pos(gv, a), t));
	if (p)
		return g_member(gv, g, x_of(s, p, t));
	if (g == 0)
		return gv->root;
	pg = (g - 1) / gv->fan;
	i = (g - 1) % gv->fan;
	s = g_size(gv, pg);
	return g_member(gv, pg, x_of(s, j_at_hord(s, i), t));
}

/* Children: the group fed first (its chunks cross the slow link), then
 * the two inside the group. */
static unsigned g_tkids(const struct gview *gv, uint32_t a, unsigned t,
			uint32_t kids[TR_BNODE_TKIDS])
{
	uint32_t g, place, ix[2];
	uint64_t c;
	unsigned cnt = 0, k;

	if (a == gv->root) {
		/* Its own group only (never empty: fan <= its size). */
		kids[0] = g_troot(gv, 0, t);
		return 1;
	}
	g = g_rel(gv, a);
	place = g_place(gv, a, t);
	c = 1 + (uint64_t)g * gv->fan + place;
	if (place < gv->fan && c < gv->ng)
		kids[cnt++] = g_troot(gv, (uint32_t)c, t);
	k = ix_kids(g_size(gv, g), j_of(g_size(gv, g), g_pos(gv, a), t), ix);
	for (unsigned i = 0; i < k; i++)
		kids[cnt++] = g_member(gv, g, x_of(g_size(gv, g), ix[i], t));
	return cnt;
}

uint32_t tr_bnode_tparent(const struct tr_bnode_perm *pm, uint32_t nranks, uint32_t root,
			  uint32_t r, unsigned t)
{
	uint32_t n = nranks - 1, v = rel_of(nranks, root, r), p;

	if (!pm)
		pm = &identity;
	if (v == 0)
		return NIL;
	if (pm->grp) {
		struct gview gv = gview_of(pm, nranks, root);

		return g_tparent(&gv, r, t);
	}
	p = ix_parent(n, j_of(n, pos_of(pm, n, v), t));
	return p == 0 ? root : abs_of(nranks, root, rel_at(pm, n, x_of(n, p, t)));
}

unsigned tr_bnode_tkids(const struct tr_bnode_perm *pm, uint32_t nranks, uint32_t root,
			uint32_t r, unsigned t, uint32_t kids[TR_BNODE_TKIDS])
{
	uint32_t n = nranks - 1, v = rel_of(nranks, root, r), ix[2];
	unsigned c;

	if (!pm)
		pm = &identity;
	if (n == 0)
		return 0;
	if (pm->grp) {
		struct gview gv = gview_of(pm, nranks, root);

		return g_tkids(&gv, r, t, kids);
	}
	if (v == 0) {
		kids[0] = abs_of(nranks, root, rel_at(pm, n, x_of(n, ix_root(n), t)));
		return 1;
	}
	c = ix_kids(n, j_of(n, pos_of(pm, n, v), t), ix);
	for (unsigned i = 0; i < c; i++)
		kids[i] = abs_of(nranks, root, rel_at(pm, n, x_of(n, ix[i], t)));
	return c;
}

/* The smallest group's members (the root left out of its own). */
static uint32_t g_min_size(uint32_t nranks, uint32_t root, uint32_t grp)
{
	uint32_t ng = (uint32_t)(((uint64_t)nranks + grp - 1) / grp);
	uint32_t last = nranks - (ng - 1) * grp, qr = root / grp;
	uint32_t m = last - (qr == ng - 1);

	if (qr != ng - 1 && grp - 1 < m)
		m = grp - 1;
	return m;
}

/* The relabelling a message's tag (shape, mul, rot, grp, fan) names for
 * nranks ranks: 0, or -EINVAL (p untouched) if no root would send it: TREE
 * with one, rot without mul, mul >= N - 1, > 255 or not coprime to N - 1,
 * rot >= N - 1; groups with a relabelling too, of fewer than 2 ranks or not
 * fewer than N, more than 65535, fan 0, above 255, above the groups but
 * one or above the smallest group. */
static int perm_of(uint32_t nranks, uint32_t root, const struct tr_bnode_order *tag,
		   struct tr_bnode_perm *p)
{
	uint32_t n = nranks ? nranks - 1 : 0;
	struct tr_bnode_perm q = identity;

	if (tag->grp || tag->fan) {
		uint32_t g = tag->grp;

		if (tag->shape != TR_BNODE_TWOTREE || tag->mul || tag->rot || g < 2 ||
		    g >= nranks || g > UINT16_MAX || !tag->fan || tag->fan > UINT8_MAX ||
		    tag->fan > (nranks + g - 1) / g - 1 || tag->fan > g_min_size(nranks, root, g))
			return -EINVAL;
		q.grp = g;
		q.fan = tag->fan;
	} else if (tag->mul || tag->rot) {
		if (tag->shape != TR_BNODE_TWOTREE || !tag->mul || tag->mul >= n ||
		    tag->mul > UINT8_MAX || tag->rot >= n)
			return -EINVAL;
		q = (struct tr_bnode_perm){ .mul = tag->mul, .rot = tag->rot,
					    .inv = inverse(tag->mul, n) };
		if (!q.inv)
			return -EINVAL;
	}
	*p = q;
	return 0;
}

/* ---- TREE's budgets --------------------------------------------------------- */

struct budget {
	double q;	   /* us per time step */
	uint32_t s;	   /* steps a send occupies the sender */
	double d_fix;	   /* us from a send to the report, but the two latencies */
	uint32_t kmax;
};

/* TREE's data to one child: a WRITE and an ORDER (0), or carried in this
 * many ORDERs (1: the whole buffer in one). */
static void budget_of(struct budget *bu, const struct tr_bnode_cost *c, uint64_t len,
		      uint64_t pieces, uint32_t kmax)
{
	bool carried = pieces > 0;
	double xfer = c->bw > 0 ? (double)(len + pieces * c->msg_bytes) / c->bw : 0;
	double msg = c->bw > 0 ? (double)c->msg_bytes / c->bw : 0;
	/* A send: one post per piece (carried) or a WRITE and an ORDER, and
	 * the WRITE's completion later; the NIC: the bytes. */
	double cpu = carried ? (double)pieces * c->o_us : 3 * c->o_us;
	double nic = xfer > c->gap_us ? xfer : c->gap_us;
	double s_us = cpu > nic ? cpu : nic;
	/* From the send to the child's report handled: the data (and the
	 * ORDER), the child handles it, posts its report, which takes a
	 * message's time, and the sender handles that. */
	double d_fix = xfer + (carried ? 0 : msg) + 3 * c->o_us + msg + c->gap_us;
	double d_us = d_fix + 2 * c->lat_us;
	double q = s_us;

	if (q < d_us / 64)
		q = d_us / 64;
	if (q <= 0)
		q = 1;
	bu->q = q;
	bu->s = (uint32_t)(s_us / q + 0.5);
	if (bu->s < 1)
		bu->s = 1;
	bu->d_fix = d_fix;
	bu->kmax = kmax;
}

static uint32_t steps(const struct budget *bu, double lat_us)
{
	double d = (bu->d_fix + 2 * lat_us) / bu->q - 1e-9;
	uint32_t u = d > 0 ? (uint32_t)d : 0;

	return d > (double)u ? u + 1 : u;
}

/* F[t] = 1 + sum_{i=1..K} F[t - i s - d] (saturating), for t <= upto. */
static void budget_table_to(const struct budget *bu, uint32_t d, uint32_t *f, uint32_t upto)
{
	for (uint32_t t = 0; t <= upto && t < TR_BNODE_TMAX; t++) {
		uint64_t sum = 1;

		for (uint32_t i = 1; i <= bu->kmax; i++) {
			uint64_t back = (uint64_t)i * bu->s + d;

			if (back > t)
				break;
			sum += f[t - back];
			if (sum >= UINT32_MAX) {
				sum = UINT32_MAX;
				break;
			}
		}
		f[t] = (uint32_t)sum;
	}
}

static void budget_table(const struct budget *bu, uint32_t d, uint32_t *f)
{
	budget_table_to(bu, d, f, TR_BNODE_TMAX - 1);
}

/* The least t whose F covers m ranks (TMAX - 1 if none does). */
static uint32_t budget_need(const uint32_t *f, uint64_t m)
{
	uint32_t lo = 0, hi = TR_BNODE_TMAX - 1;

	if (f[hi] < m)
		return hi;
	while (lo < hi) {
		uint32_t mid = (lo + hi) / 2;

		if (f[mid] >= m)
			hi = mid;
		else
			lo = mid + 1;
	}
	return lo;
}

static uint32_t kids_default(uint32_t nranks)
{
	uint32_t k = ceil_log2(nranks) + 8;

	return k > TR_BNODE_MAX_KIDS ? TR_BNODE_MAX_KIDS : k;
}

/* ---- estimates ------------------------------------------------------------- */

static double mx(double a, double b)
{
	return a > b ? a : b;
}

/* A REPORT's way up one level: the message, its latency, its handling. */
static double up_leg(const struct tr_bnode_cost *c)
{
	return c->lat_us + 2 * c->o_us + c->gap_us;
}

/* TWOTREE until every rank holds the data: the first chunk down the
 * deeper tree, the rest at the pace of the busiest rank. */
static double est_twotree(const struct tr_bnode_cost *c, uint32_t nranks, uint64_t len,
			  uint64_t chunk, uint64_t inline_max)
{
	bool carried = chunk <= inline_max;
	uint64_t nch = (len + chunk - 1) / chunk;
	double cb = c->bw > 0 ? (double)(chunk + (carried ? c->msg_bytes : 0)) / c->bw : 0;
	double nic = mx(cb, c->gap_us);
	/* Per level: the ORDER handled, then up to two children's sends. */
	double level = (carried ? 3 : 5) * c->o_us + nic + c->lat_us;
	/* Per two chunks a rank sends two (as an inner node of one tree) and
	 * handles two ORDERs. */
	double cpu = ((carried ? 2 : 6) + 2) * c->o_us;
	double pair = mx(2 * nic, cpu);
	double depth = ceil_log2(nranks) + 1;

	return depth * level + (double)((nch + 1) / 2) * pair;
}

/* TREE's data in pieces of chunk bytes: how many ORDERs carry it to a
 * child (0: a WRITE and one ORDER). */
static uint64_t tree_pieces(uint64_t len, uint64_t chunk, uint64_t inline_max)
{
	if (chunk && chunk < len)
		return (len + chunk - 1) / chunk;
	return len <= inline_max ? 1 : 0;
}

/* TREE until every rank holds the data: F's budget runs to the last
 * REPORT handled, and the last rank's data came at least one report's way
 * up before. */
static double est_tree(const struct tr_bnode_cost *c, uint32_t nranks, uint64_t len,
		       uint64_t chunk, uint32_t max_kids, uint64_t inline_max)
{
	uint32_t f[TR_BNODE_TMAX];
	struct budget bu;

	budget_of(&bu, c, len, tree_pieces(len, chunk, inline_max),
		  max_kids ? max_kids : kids_default(nranks));
	budget_table(&bu, steps(&bu, c->lat_us), f);
	return budget_need(f, nranks) * bu.q - up_leg(c);
}

/* The estimated time in us until every rank holds len bytes of a
 * broadcast to nranks ranks in shape (TREE or TWOTREE, chunk bytes per
 * chunk for TWOTREE or per carried piece for TREE, 0: the best) under cost: what AUTO compares (what an
 * MPI_Bcast returning on every rank takes; the reports that then go up to
 * the root's DONE take longer down TWOTREE's deeper trees).  *chunk_p (may
 * be NULL) gets the chunk. */
static double estimate(const struct tr_bnode_cost *cost, uint32_t nranks, uint64_t len,
		       enum tr_bnode_shape shape, uint64_t chunk, uint32_t max_kids,
		       uint64_t inline_max, uint64_t *chunk_p)
{
	if (nranks <= 1 || len == 0) {
		if (chunk_p)
			*chunk_p = len ? len : 1;
		return 0;
	}
	if (shape == TR_BNODE_TWOTREE) {
		double best = 1e300;
		uint64_t bc = chunk;

		if (chunk) {
			best = est_twotree(cost, nranks, len, chunk, inline_max);
		} else {
			for (uint64_t p = 1024; p <= (4u << 20); p *= 2) {
				/* Powers of two, and the largest chunk still carried. */
				uint64_t c = inline_max > p / 2 && inline_max < p ? inline_max : p;
				double e = est_twotree(cost, nranks, len, c, inline_max);

				if (c != p && e < best) {
					best = e;
					bc = c;
				}
				c = p;
				e = est_twotree(cost, nranks, len, c, inline_max);

				if (e < best) {
					best = e;
					bc = c;
				}
				if (p >= len)
					break;
			}
		}
		if (chunk_p)
			*chunk_p = bc;
		return best;
	} else {
		double best = 1e300;
		uint64_t bc = len;

		/* Given: that chunk; else the whole buffer (in the ORDER up to
		 * inline_max, else written) and, above inline_max, the fewest
		 * carried pieces, when their estimate is lower. */
		for (unsigned i = 0; i < 2; i++) {
			uint64_t c = chunk ? chunk : len;
			double e;

			if (i == 1) {
				uint64_t np = inline_max ? (len + inline_max - 1) / inline_max : 0;

				if (chunk || !np || len <= inline_max || np > TR_BNODE_TREE_PIECES)
					break;
				c = (len + np - 1) / np;
			}
			e = est_tree(cost, nranks, len, c, max_kids, inline_max);
			if (e < best) {
				best = e;
				bc = c;
			}
		}
		if (chunk_p)
			*chunk_p = bc;
		return best;
	}
}

/* ---- actions ------------------------------------------------------------------ */

struct out {
	struct tr_bnode_act *a;
	unsigned n, cap;
};

static struct tr_bnode_act *out_add(struct out *o, enum tr_bnode_act_type type)
{
	struct tr_bnode_act *a = &o->a[o->n++];

	*a = (struct tr_bnode_act){ .type = type, .failed = NIL };
	return a;
}

static struct tr_bnode_kid *kid_add(struct tr_bnode *b, uint32_t rank, uint32_t hi, unsigned tree,
				    bool reports)
{
	struct tr_bnode_kid *k = &b->kids[b->nkids++];

	*k = (struct tr_bnode_kid){ .rank = rank, .hi = hi, .abort_next = hi, .tree = (uint8_t)tree,
				    .flags = reports ? K_REPORTS : 0 };
	if (reports)
		b->kids_open++;
	return k;
}

/* What every message of this rank carries: the shape and the relabelling. */
static struct tr_bnode_order tag_of(const struct tr_bnode *b)
{
	bool id = b->perm.mul == 1 && b->perm.rot == 0;

	return (struct tr_bnode_order){ .shape = b->shape, .mul = id ? 0 : b->perm.mul,
					.rot = id ? 0 : b->perm.rot, .grp = b->perm.grp,
					.fan = b->perm.fan };
}

struct tr_bnode_order tr_bnode_tag(const struct tr_bnode *b)
{
	struct tr_bnode_order o = tag_of(b);

	if (!o.shape)
		o.shape = TR_BNODE_TREE;
	return o;
}

static struct tr_bnode_order order_of(const struct tr_bnode *b)
{
	struct tr_bnode_order o = tag_of(b);

	o.len = b->cfg.len;
	o.chunk = b->cfg.chunk;
	return o;
}

/* TREE with link latencies (cfg.lat): a piece's head is its first rank,
 * and the cut before piece i (i >= 2) may move back by up to HEAD_WINDOW
 * ranks, into piece i - 1 (which only gets smaller): the cut takes the
 * rank whose link from this rank is the fastest, so that children sit
 * behind fast links where there is a choice. */
#define HEAD_WINDOW 8u
#define LAT_SAMPLES 32u

static double lat_of(const struct tr_bnode_cfg *cf, uint32_t a, uint32_t c)
{
	uint32_t n = cf->nranks;
	double l = cf->lat(cf->lat_arg, abs_of(n, cf->root, a), abs_of(n, cf->root, c));

	return l > cf->cost.lat_us ? l : cf->cost.lat_us;
}

/* The latency the ranks of [lo, hi) will meet among themselves: the mean
 * over a fixed sample of their pairs (what F's pieces are sized with). */
static double lat_inside(const struct tr_bnode_cfg *cf, uint32_t lo, uint32_t hi)
{
	uint64_t m = (uint64_t)hi - lo;
	double sum = 0;
	unsigned cnt = 0;

	if (m < 2)
		return cf->cost.lat_us;
	for (uint64_t j = 0; j < LAT_SAMPLES; j++) {
		uint32_t x = (uint32_t)(lo + (j * 7919u) % m);
		uint32_t y = (uint32_t)(lo + (j * 104729u + m / 2) % m);

		if (x == y)
			continue;
		sum += lat_of(cf, x, y);
		cnt++;
	}
	return cnt ? sum / cnt : cf->cost.lat_us;
}

/* TREE with link latencies: F for one base latency d (a piece's own),
 * f[0 .. upto] valid. */
struct ftab {
	uint32_t d, upto;
	uint32_t f[TR_BNODE_TMAX];
};

/* How many ranks a piece [p, p + m) covers in tl steps with F built with
 * the latency its own ranks meet: the whole piece if it fits. */
static uint32_t piece_covers(const struct tr_bnode_cfg *cf, const struct budget *bu,
			     const uint32_t *f, uint32_t base, struct ftab *g, uint32_t p, uint32_t m,
			     uint32_t tl, uint32_t t)
{
	uint32_t d = steps(bu, lat_inside(cf, p, p + m));

	if (d == base)
		return f[tl];
	if (g->d != d || g->upto < t) {
		budget_table_to(bu, d, g->f, t);
		g->d = d;
		g->upto = t;
	}
	return g->f[tl];
}

/* A piece from p for a head with tl steps left: starting from m ranks
 * (what F with the range's latency gives), the largest of a few that its
 * head covers with F built with the latency the piece's own ranks meet,
 * each next one what F with the last one's latency covers (at most hi - p;
 * one rank always fits).  A piece inside a rack is faster than one across
 * two, which the latency of the whole range cannot tell: sized with that,
 * the root's first child took most of the other rack. */
#define PIECE_TRIES 4u

static uint32_t piece_size(const struct tr_bnode_cfg *cf, const struct budget *bu,
			   const uint32_t *f, uint32_t base, struct ftab *g, uint32_t p, uint32_t hi,
			   uint32_t m, uint32_t tl, uint32_t t)
{
	uint32_t best = 1;

	for (unsigned i = 0; i < PIECE_TRIES; i++) {
		uint32_t cov;

		if (m > hi - p)
			m = hi - p;
		if (m <= best)
			break;
		cov = piece_covers(cf, bu, f, base, g, p, m, tl, t);
		if (cov >= m)
			best = m;
		if (cov == m || (cov > m && m == hi - p))
			break;
		m = cov;
	}
	return best;
}

/* TREE: rank v's pieces of (v, hi) for t steps, child i + 1's piece [ends[i],
 * ends[i + 1]) (ends[0] = v + 1), every rank in one (the last piece takes
 * what is left).  Returns how many; *fits: each piece within what F says
 * its child covers in the time left to it (with link latencies, F with
 * the latency of that piece's ranks: g is the scratch table). */
static uint32_t tree_plan(const struct tr_bnode_cfg *cf, uint32_t v, const struct budget *bu,
			  const uint32_t *f, struct ftab *g, uint32_t base, uint32_t t, uint32_t hi,
			  uint32_t *ends, bool *fits)
{
	uint32_t p = v + 1, k = 0;

	*fits = true;

	ends[0] = p;
	while (p < hi && k < bu->kmax) {
		uint32_t d = base, size;
		uint64_t back;

		if (cf->lat) {
			double best = lat_of(cf, v, p);
			uint32_t lo = k == 0 ? p : ends[k - 1] + 1;

			/* The fastest head among the last ranks of the piece before. */
			for (uint32_t c = p; c > lo && p - c < HEAD_WINDOW;) {
				double l = lat_of(cf, v, --c);

				if (l < best) {
					best = l;
					ends[k] = c;
				}
			}
			p = ends[k];
			d = steps(bu, best);
		}
		back = (uint64_t)(k + 1) * bu->s + d;
		size = back <= t ? f[t - back] : 0;
		if (size == 0)
			size = 1;
		if (k + 1 == bu->kmax)
			size = hi - p;
		if (back > t) {
			*fits = false;
		} else if (cf->lat && tree_pieces(cf->len, cf->chunk, cf->inline_max)) {
			uint32_t fit = piece_size(cf, bu, f, base, g, p, hi, size,
						  (uint32_t)(t - back), t);

			if (k + 1 < bu->kmax)
				size = fit;
			else if (fit < size)
				*fits = false;
		} else if (f[t - back] < size) {
			*fits = false;
		}
		if (size > hi - p)
			size = hi - p;
		p += size;
		ends[++k] = p;
	}
	return k;
}

/* TREE: the budget (bu, F in f, base) and the time steps rank v takes to
 * cover (v, hi); g: tree_plan()'s scratch. */
static uint32_t tree_steps(const struct tr_bnode_cfg *cf, uint32_t v, struct budget *bu,
			   uint32_t *f, struct ftab *g, uint32_t hi, uint32_t *base)
{
	uint32_t ends[TR_BNODE_MAX_KIDS + 1], t;
	bool fits;

	g->d = UINT32_MAX;
	budget_of(bu, &cf->cost, cf->len, tree_pieces(cf->len, cf->chunk, cf->inline_max),
		  cf->max_kids);
	/* F's pieces with the latency their ranks meet inside (with no
	 * latencies given: the model's one). */
	*base = steps(bu, cf->lat ? lat_inside(cf, v + 1, hi) : cf->cost.lat_us);
	budget_table(bu, *base, f);
	t = budget_need(f, (uint64_t)hi - v);
	if (cf->lat) {
		/* Each child's link sizes its piece: the least t that fits. */
		uint32_t lo = 0, top = TR_BNODE_TMAX - 1;

		while (lo < top) {
			uint32_t mid = (lo + top) / 2;

			tree_plan(cf, v, bu, f, g, *base, mid, hi, ends, &fits);
			if (fits)
				top = mid;
			else
				lo = mid + 1;
		}
		t = lo;
	}
	return t;
}

/* TREE: this rank holds the data: cut (v, hi) into the children's pieces. */
static void tree_split(struct tr_bnode *b, struct out *o, uint32_t hi)
{
	uint32_t n = b->cfg.nranks, v = b->v;
	bool carried = tree_pieces(b->cfg.len, b->cfg.chunk, b->cfg.inline_max) > 0, fits;
	uint32_t f[TR_BNODE_TMAX], ends[TR_BNODE_MAX_KIDS + 1], order[TR_BNODE_MAX_KIDS];
	struct budget bu;
	struct ftab g;
	uint32_t t, base, k;

	if (v + 1 >= hi)
		return;
	t = tree_steps(&b->cfg, v, &bu, f, &g, hi, &base);
	k = tree_plan(&b->cfg, v, &bu, f, &g, base, t, hi, ends, &fits);
	for (uint32_t i = 0; i < k; i++)
		order[i] = i;
	if (b->cfg.lat && carried) {
		/* The children behind the slowest links first (stable). */
		double l[TR_BNODE_MAX_KIDS];

		for (uint32_t i = 0; i < k; i++) {
			uint32_t j = i, x = i;

			l[i] = lat_of(&b->cfg, v, ends[i]);
			while (j > 0 && l[order[j - 1]] < l[x]) {
				order[j] = order[j - 1];
				j--;
			}
			order[j] = x;
		}
	}
	for (uint32_t q = 0; q < k; q++) {
		uint32_t i = order[q], head = abs_of(n, b->cfg.root, ends[i]);
		struct tr_bnode_act *a;

		kid_add(b, head, ends[i + 1], 0, true);
		if (b->nchunks > 1)
			continue; /* carried pieces: tree_pump() */
		if (!carried) {
			a = out_add(o, TR_BNODE_ACT_WRITE);
			a->to = head;
			a->len = b->cfg.len;
			b->kids[b->nkids - 1].sent = 1;
			b->inflight++;
			b->stats.writes++;
		}
		a = out_add(o, TR_BNODE_ACT_ORDER);
		a->to = head;
		a->ord = order_of(b);
		a->ord.hi = ends[i + 1];
		a->ord.carried = carried;
		if (carried)
			a->len = b->cfg.len;
		b->stats.orders++;
	}
}

/* TREE in carried pieces: every piece this rank holds to each child in
 * turn, the first child's all before the next one's (the root holds them
 * all: its biggest piece of ranks gets the data first); a rank that
 * receives them forwards each as it comes. */
static void tree_pump(struct tr_bnode *b, struct out *o)
{
	for (uint32_t i = 0; i < b->nkids; i++) {
		struct tr_bnode_kid *k = &b->kids[i];

		while (!(k->flags & K_CUT) && k->sent < b->have[0] && o->n < o->cap) {
			uint64_t off = k->sent * b->cfg.chunk;
			struct tr_bnode_act *a = out_add(o, TR_BNODE_ACT_ORDER);

			a->to = k->rank;
			a->k = k->sent;
			a->off = off;
			a->len = b->cfg.len - off < b->cfg.chunk ? b->cfg.len - off : b->cfg.chunk;
			a->ord = order_of(b);
			a->ord.hi = k->hi;
			a->ord.k = k->sent;
			a->ord.carried = true;
			k->sent++;
			k->done++;
			b->stats.orders++;
		}
	}
}

/* TREE: a carried piece some child may have now. */
static bool tree_sendable(const struct tr_bnode *b)
{
	if (b->aborted || b->nchunks < 2)
		return false;
	for (uint32_t i = 0; i < b->nkids; i++)
		if (!(b->kids[i].flags & K_CUT) && b->kids[i].sent < b->have[0])
			return true;
	return false;
}

/* TWOTREE: WRITEs in flight to child k at most: cfg.window, or with link
 * latencies (cfg.lat) as many as cover the time from a WRITE's post to its
 * completion on that link, so that a far child's WRITEs keep the NIC busy. */
static uint64_t kid_window(const struct tr_bnode *b, const struct tr_bnode_kid *k)
{
	const struct tr_bnode_cost *c = &b->cfg.cost;
	double xfer, rtt, w;

	if (!b->cfg.lat || b->cfg.chunk <= b->cfg.inline_max || c->bw <= 0)
		return b->cfg.window;
	xfer = (double)b->cfg.chunk / c->bw;
	if (xfer < c->gap_us)
		xfer = c->gap_us;
	if (xfer <= 0)
		return b->cfg.window;
	rtt = 2 * b->cfg.lat(b->cfg.lat_arg, b->cfg.rank, k->rank) + 3 * c->o_us + xfer;
	w = rtt / xfer + 2;
	if (w <= b->cfg.window)
		return b->cfg.window;
	return w >= TR_BNODE_MAX_WINDOW ? TR_BNODE_MAX_WINDOW : (uint64_t)w;
}

/* TWOTREE: every WRITE the children may have now, lowest chunk first (a
 * child whose chunk comes earlier in the buffer goes first, and the
 * children of one tree take turns per chunk): the root alternates between
 * the two trees and a rank holding several chunks at once does not make
 * its second child wait for all of them. */
static void twotree_pump(struct tr_bnode *b, struct out *o)
{
	bool carried = b->cfg.chunk <= b->cfg.inline_max;

	while (o->cap - o->n >= 2) {
		struct tr_bnode_kid *k = NULL;
		uint64_t kc = UINT64_MAX;

		for (uint32_t i = 0; i < b->nkids; i++) {
			struct tr_bnode_kid *x = &b->kids[i];
			uint64_t c = 2 * x->sent + x->tree;

			if (!(x->flags & K_FAR))
				c += b->nchunks;
			if (!(x->flags & K_CUT) && x->sent < b->have[x->tree] &&
			    x->sent < chunks_in(b, x->tree) && x->sent - x->done < kid_window(b, x) &&
			    c < kc) {
				k = x;
				kc = c;
			}
		}
		if (!k)
			break;

		uint64_t c = 2 * k->sent + k->tree, off = c * b->cfg.chunk;
		uint64_t len = b->cfg.len - off < b->cfg.chunk ? b->cfg.len - off : b->cfg.chunk;
		struct tr_bnode_act *a;

		if (!carried) {
			a = out_add(o, TR_BNODE_ACT_WRITE);
			a->to = k->rank;
			a->k = c;
			a->off = off;
			a->len = len;
			b->inflight++;
			b->stats.writes++;
		}
		a = out_add(o, TR_BNODE_ACT_ORDER);
		a->to = k->rank;
		a->k = c;
		a->off = off;
		a->len = len;
		a->ord = order_of(b);
		a->ord.k = c;
		a->ord.carried = carried;
		k->sent++;
		/* Carried: the bytes were copied into the message. */
		if (carried)
			k->done++;
		b->stats.orders++;
	}
}

/* No more WRITEs will be asked for. */
static bool sends_over(const struct tr_bnode *b)
{
	if (b->aborted)
		return true;
	if (!holds_all(b))
		return false;
	for (uint32_t i = 0; i < b->nkids; i++) {
		const struct tr_bnode_kid *k = &b->kids[i];

		if (!(k->flags & K_CUT) && k->sent < chunks_in(b, k->tree) &&
		    (b->shape == TR_BNODE_TWOTREE || b->nchunks > 1))
			return false;
	}
	return true;
}

static bool aborts_left(const struct tr_bnode *b)
{
	for (uint32_t i = b->abort_kid; i < b->nkids; i++)
		if (b->kids[i].abort_next < b->kids[i].hi)
			return true;
	return false;
}

/* TWOTREE: a chunk some child may have now (more than one call's array
 * holds when carried chunks, which hold no window, pile up). */
static bool twotree_sendable(const struct tr_bnode *b)
{
	if (b->aborted)
		return false;
	for (uint32_t i = 0; i < b->nkids; i++) {
		const struct tr_bnode_kid *x = &b->kids[i];

		if (!(x->flags & K_CUT) && x->sent < b->have[x->tree] &&
		    x->sent < chunks_in(b, x->tree) && x->sent - x->done < kid_window(b, x))
			return true;
	}
	return false;
}

bool tr_bnode_pending(const struct tr_bnode *b)
{
	if (b->shape == TR_BNODE_TWOTREE)
		return twotree_sendable(b);
	return b->shape == TR_BNODE_TREE && (aborts_left(b) || tree_sendable(b));
}

/* Everything the state owes: transfers, ABORTs, RELEASE, REPORT or DONE. */
static int pump(struct tr_bnode *b, struct out *o)
{
	uint32_t n = b->cfg.nranks;

	if (b->shape == TR_BNODE_TWOTREE && !b->aborted)
		twotree_pump(b, o);
	if (b->shape == TR_BNODE_TREE && !b->aborted && b->nchunks > 1)
		tree_pump(b, o);
	/* TREE: a failed child's piece, rank by rank. */
	while (b->shape == TR_BNODE_TREE && b->abort_kid < b->nkids) {
		struct tr_bnode_kid *k = &b->kids[b->abort_kid];

		if (k->abort_next >= k->hi) {
			b->abort_kid++;
			continue;
		}
		if (o->n >= o->cap)
			break;
		struct tr_bnode_act *a = out_add(o, TR_BNODE_ACT_ABORT);

		a->to = abs_of(n, b->cfg.root, k->abort_next++);
		a->status = b->status;
		a->failed = b->failed;
		a->ord = tag_of(b);
		b->stats.aborts++;
	}
	if (!b->released && b->started && b->inflight == 0 && sends_over(b) && o->n < o->cap) {
		struct tr_bnode_act *a = out_add(o, TR_BNODE_ACT_RELEASE);

		b->released = true;
		a->status = holds_all(b) ? TRIAD_S_OK
					 : (b->status != TRIAD_S_OK ? b->status : TRIAD_S_TRANSPORT);
		if (!holds_all(b))
			fail_first(b, a->status, b->cfg.rank);
	}
	if (b->released && !b->reported && b->kids_open == 0 && !aborts_left(b) &&
	    (b->parent != NIL || b->v == 0) && o->n < o->cap) {
		struct tr_bnode_act *a;

		b->reported = true;
		if (b->v == 0) {
			a = out_add(o, TR_BNODE_ACT_DONE);
			b->finished = true;
		} else {
			a = out_add(o, TR_BNODE_ACT_REPORT);
			a->to = b->parent;
			a->ord = tag_of(b);
			b->stats.reports++;
		}
		a->status = b->status;
		a->failed = b->failed;
	}
	return (int)o->n;
}

static bool acts_ok(const struct tr_bnode *b, const struct tr_bnode_act *acts, unsigned cap)
{
	return acts != NULL && cap >= tr_bnode_acts_max(b);
}

/* ---- TWOTREE's relabelling ------------------------------------------------- */

/* Relabellings the root tries: about PERM_WORK latency look-ups in all
 * (two per rank and try), at least 16 and at most 256 tries. */
#define PERM_WORK (1u << 20)

static uint64_t mix64(uint64_t z)
{
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

#define GSTACK 256u

static uint64_t nchunks_of(const struct tr_bnode_cfg *cf)
{
	return (cf->len + cf->chunk - 1) / cf->chunk;
}

struct pnode {
	uint32_t j, r; /* tree index, rank */
	double at;
};

/* The cost of relabelling p: when the last rank has the first chunk of
 * either tree (a rank's children get it in turn, each a hop later; hop:
 * the chunk's fixed cost; step: what a send occupies the sender), plus
 * what a slow link from the root to a tree's root costs the stream:
 * triad-sim, racks of 32 at 16 MiB, N = 64, lost 300-400 us whenever
 * one of them crossed racks (every rotation), about a tenth of the extra
 * latency per chunk of a tree. */
static double perm_cost(const struct tr_bnode_cfg *cf, const struct tr_bnode_perm *p, double hop,
			double step)
{
	uint32_t nr = cf->nranks, n = nr - 1, root = cf->root;
	double worst = 0, far = 0;

	for (unsigned t = 0; t < 2; t++) {
		struct pnode st[128];
		unsigned top = 0;
		uint32_t j0 = ix_root(n), r0 = abs_of(nr, root, rel_at(p, n, x_of(n, j0, t)));
		double l0 = cf->lat(cf->lat_arg, root, r0);

		far = mx(far, l0 - cf->cost.lat_us);
		st[top++] = (struct pnode){ j0, r0, t * step + hop + l0 };
		while (top) {
			struct pnode e = st[--top];
			uint32_t ix[2];
			unsigned c = ix_kids(n, e.j, ix);

			worst = mx(worst, e.at);
			for (unsigned i = 0; i < c; i++) {
				uint32_t r = abs_of(nr, root, rel_at(p, n, x_of(n, ix[i], t)));

				st[top++] = (struct pnode){ ix[i], r,
							     e.at + i * step + hop +
								     cf->lat(cf->lat_arg, e.r, r) };
			}
		}
	}
	return worst + 0.1 * far * (double)(nchunks_of(cf) / 2);
}

/* The time the last chunk reaches the last rank under p, as
 * tr_bnode_tkids() gives the trees: a rank sends each chunk of its tree to
 * its children in turn (first: a child in another group, which the
 * root serves all its chunks first), m per tree; hop: a chunk's fixed
 * cost, step: what a send occupies the sender.  -1: more levels than the
 * walk has room for.  What the root compares groups against the flat
 * trees with. */
static double tree_cost(const struct tr_bnode_cfg *cf, const struct tr_bnode_perm *p, double hop,
			double step)
{
	uint32_t nr = cf->nranks, root = cf->root;
	double m = (double)((nchunks_of(cf) + 1) / 2), worst = 0;

	if (p->grp) {
		uint32_t ng = (nr + p->grp - 1) / p->grp;
		uint64_t reach = 1, width = 1;
		unsigned lv = 0;

		while (reach < ng) {
			width *= p->fan;
			reach += width;
			lv++;
		}
		if (2 * (lv + 1) * (ceil_log2(p->grp) + 1) + 4 > GSTACK)
			return -1;
	}
	for (unsigned t = 0; t < 2; t++) {
		struct { uint32_t r; double f, l; } st[GSTACK];
		uint32_t kids[TR_BNODE_TKIDS];
		unsigned top = 0, c = tr_bnode_tkids(p, nr, root, root, t, kids);

		for (unsigned i = 0; i < c; i++) {
			double l = cf->lat(cf->lat_arg, root, kids[i]) + hop;

			st[top].r = kids[i];
			st[top].f = (t + 2 * i * m) * step + l;
			st[top++].l = 2 * (i + 1) * m * step + l;
		}
		while (top) {
			uint32_t r = st[--top].r;
			double f = st[top].f, l = st[top].l;

			worst = mx(worst, l);
			c = tr_bnode_tkids(p, nr, root, r, t, kids);
			for (unsigned i = 0; i < c; i++) {
				double h = hop + cf->lat(cf->lat_arg, r, kids[i]);

				st[top].r = kids[i];
				st[top].f = f + i * step + h;
				st[top++].l = mx(l + (i + 1) * step, f + m * (i + 1) * step) + h;
			}
		}
	}
	return worst;
}

/* Groups of g ranks are worth trying: the root's links to (up to 8 of) its
 * own group's members are faster on average than those to (up to 8)
 * other groups' first members, by a tenth. */
static bool grouped_links(const struct tr_bnode_cfg *cf, uint32_t g)
{
	struct tr_bnode_perm p = { .grp = g, .fan = 1 };
	struct gview gv = gview_of(&p, cf->nranks, cf->root);
	double in = 0, out = 0;
	uint32_t ni = 0, no = 0;

	for (uint32_t x = 0; x < 8 && x < g_size(&gv, 0); x++, ni++)
		in += cf->lat(cf->lat_arg, cf->root, g_member(&gv, 0, x));
	for (uint32_t q = 1; q <= 8 && q < gv.ng; q++, no++)
		out += cf->lat(cf->lat_arg, cf->root, g_member(&gv, q, 0));
	return ni && no && in / ni < 0.9 * out / no;
}

/* The root, TWOTREE with link latencies: of the relabellings tried (the
 * identity first, then rotations and small multipliers drawn from a fixed
 * sequence) the one whose first chunk reaches the last rank soonest; then
 * groups instead, if their last chunk arrives sooner than the flat trees'
 * (racks: a chunk crosses between them once per level of the groups'
 * tree, but a group's feeders send each chunk of their tree three
 * times, so they win where latency rules, not bandwidth).  *pick gets the choice (the identity without
 * latencies); returns the last chunk's estimated arrival in us under it
 * (for auto_lat()), -1 without latencies.  Reads cfg only: estimating
 * changes no engine. */
static double choose_perm(const struct tr_bnode_cfg *cf, struct tr_bnode_perm *pick)
{
	static const uint32_t muls[] = { 1, 2, 3, 5, 7, 11, 13, 17 };
	const struct tr_bnode_cost *c = &cf->cost;
	uint32_t n = cf->nranks - 1;
	bool carried = cf->chunk <= cf->inline_max;
	double xfer = c->bw > 0 ? (double)(cf->chunk + (carried ? c->msg_bytes : 0)) / c->bw : 0;
	double step = mx(carried ? c->o_us : 2 * c->o_us, mx(xfer, c->gap_us));
	double hop = 2 * c->o_us + mx(xfer, c->gap_us), best;
	uint32_t tries = PERM_WORK / 2 / (n + 1);

	*pick = identity;
	if (!cf->lat || n < 3)
		return -1;
	tries = tries < 16 ? 16 : tries > 256 ? 256 : tries;
	best = perm_cost(cf, &identity, hop, step);
	for (uint32_t i = 1; i < tries; i++) {
		uint64_t h = mix64(i);
		struct tr_bnode_perm p = { .mul = muls[h % 8] % n, .rot = (uint32_t)((h >> 8) % n) };
		double e;

		p.inv = p.mul ? inverse(p.mul, n) : 0;
		if (!p.inv)
			continue;
		e = perm_cost(cf, &p, hop, step);
		if (e < best) {
			best = e;
			*pick = p;
		}
	}
	/* Groups of a power of two ranks whose links inside are faster than
	 * those between them, each feeding a power of two, against the flat
	 * trees chosen: by the last chunk's arrival. */
	best = tree_cost(cf, pick, hop, step);
	for (uint32_t g = 2; g < cf->nranks && g <= UINT16_MAX; g *= 2) {
		uint32_t nr = cf->nranks, ng = (nr + g - 1) / g;
		uint32_t fmax = g_min_size(nr, cf->root, g);

		if (fmax == 0 || !grouped_links(cf, g))
			continue;
		for (uint32_t f = 1; f <= fmax && f < ng && f <= UINT8_MAX; f *= 2) {
			struct tr_bnode_perm p = { .mul = 1, .rot = 0, .inv = 1, .grp = g, .fan = f };
			double e = tree_cost(cf, &p, hop, step);

			if (e >= 0 && e < best) {
				best = e;
				*pick = p;
			}
		}
	}
	return best;
}

/* ---- set-up ------------------------------------------------------------------ */

/* Shape, length and chunk known: the rest of the state. */
static void set_shape(struct tr_bnode *b, unsigned shape, uint64_t len, uint64_t chunk)
{
	uint32_t n = b->cfg.nranks, r = b->cfg.rank, root = b->cfg.root;
	bool had = b->shape != 0;

	b->shape = (uint8_t)shape;
	b->cfg.shape = (enum tr_bnode_shape)shape;
	b->cfg.len = len;
	b->cfg.chunk = chunk;
	b->nchunks = (len + chunk - 1) / chunk;
	if (shape == TR_BNODE_TREE)
		return;
	if (had)
		return; /* the trees were set up by an earlier REPORT or ABORT */
	for (unsigned t = 0; t < 2; t++) {
		uint32_t kids[TR_BNODE_TKIDS];
		unsigned c = tr_bnode_tkids(&b->perm, n, root, r, t, kids);

		b->tparent[t] = tr_bnode_tparent(&b->perm, n, root, r, t);
		for (unsigned i = 0; i < c; i++) {
			struct tr_bnode_kid *k = kid_add(b, kids[i], 0, t, t == 0);

			if (b->perm.grp && kids[i] / b->perm.grp != r / b->perm.grp)
				k->flags |= K_FAR;
		}
	}
	b->parent = b->tparent[0];
}

/* Every link the model's latency (cfg.cost.lat_us). */
static double lat_flat(void *arg, uint32_t a, uint32_t c)
{
	(void)a;
	(void)c;
	return *(const double *)arg;
}

/* AUTO at the root with link latencies: each shape's estimate() (the
 * model's one latency) times how much later its plan here has every rank
 * hold the data with the links' latencies than with the model's:
 * TREE's budget (its pieces sized with the latencies their ranks meet,
 * each child's with its own link), TWOTREE's trees as chosen (flat or in
 * groups).  estimate() alone sent every size below 32 KiB through TREE
 * over racks, up to 1.7x the best MPI model where TWOTREE's groups took
 * 0.6-1.04x. */
static enum tr_bnode_shape auto_lat(const struct tr_bnode_cfg *cfg, double tt, double t2)
{
	/* What is estimated with (cfg stays as it is): TREE's pieces in t,
	 * TWOTREE's chunks in c. */
	struct tr_bnode_cfg c = *cfg, t = *cfg;
	uint32_t f[TR_BNODE_TMAX], base, s_lat, s_flat;
	struct tr_bnode_perm p;
	struct budget bu;
	struct ftab g;
	double c_lat, c_flat;

	estimate(&t.cost, t.nranks, t.len, TR_BNODE_TREE, 0, t.max_kids, t.inline_max, &t.chunk);
	s_lat = tree_steps(&t, 0, &bu, f, &g, t.nranks, &base);
	if (!c.chunk)
		estimate(&c.cost, c.nranks, c.len, TR_BNODE_TWOTREE, 0, 0, c.inline_max, &c.chunk);
	c_lat = choose_perm(&c, &p);
	t.lat = c.lat = lat_flat;
	t.lat_arg = c.lat_arg = &c.cost.lat_us;
	s_flat = tree_steps(&t, 0, &bu, f, &g, t.nranks, &base);
	c_flat = choose_perm(&c, &p);
	if (s_flat && c_flat > 0) {
		tt *= (double)s_lat / s_flat;
		t2 *= c_lat / c_flat;
	}
	return t2 < tt ? TR_BNODE_TWOTREE : TR_BNODE_TREE;
}

int tr_bnode_init(struct tr_bnode *b, const struct tr_bnode_cfg *cfg)
{
	struct tr_bnode_cfg c = *cfg;

	if (c.nranks == 0 || c.nranks >= NIL || c.root >= c.nranks || c.rank >= c.nranks ||
	    (unsigned)c.shape >= TR_BNODE_NSHAPES || c.window > TR_BNODE_MAX_WINDOW ||
	    c.max_kids > TR_BNODE_MAX_KIDS)
		return -EINVAL;
	if (c.window == 0)
		c.window = TR_BNODE_WINDOW_DEFAULT;
	if (c.max_kids == 0)
		c.max_kids = kids_default(c.nranks);
	/* The root's children, its work, do not grow with N past 64 ranks. */
	if (!cfg->max_kids && c.rank == c.root && c.max_kids > kids_default(TR_BNODE_ROOT_KIDS_N))
		c.max_kids = kids_default(TR_BNODE_ROOT_KIDS_N);
	*b = (struct tr_bnode){ .cfg = c, .parent = NIL, .tparent = { NIL, NIL }, .failed = NIL,
				.status = TRIAD_S_OK, .perm = identity,
				.v = rel_of(c.nranks, c.root, c.rank) };
	if (b->v == 0) {
		enum tr_bnode_shape shape = c.shape;

		b->known = true;
		uint64_t chunk = c.chunk;

		if (shape == TR_BNODE_AUTO) {
			double tt = estimate(&c.cost, c.nranks, c.len, TR_BNODE_TREE, 0,
					     c.max_kids, c.inline_max, NULL);
			double t2 = estimate(&c.cost, c.nranks, c.len, TR_BNODE_TWOTREE, chunk,
					     c.max_kids, c.inline_max, NULL);

			if (c.lat && c.nranks > 3 && c.len)
				shape = auto_lat(&b->cfg, tt, t2);
			else
				shape = t2 < tt && c.nranks > 2 ? TR_BNODE_TWOTREE : TR_BNODE_TREE;
		}
		if (shape == TR_BNODE_TWOTREE && !chunk)
			estimate(&c.cost, c.nranks, c.len, shape, 0, 0, c.inline_max, &chunk);
		if (shape == TR_BNODE_TREE)
			estimate(&c.cost, c.nranks, c.len, shape, 0, c.max_kids, c.inline_max,
				 &chunk);
		if (chunk == 0)
			chunk = 1;
		if (shape == TR_BNODE_TWOTREE) {
			b->cfg.chunk = chunk;
			choose_perm(&b->cfg, &b->perm);
		}
		set_shape(b, shape, c.len, chunk);
		b->have[0] = chunks_in(b, 0);
		b->have[1] = chunks_in(b, 1);
	}
	return 0;
}

/* ---- events --------------------------------------------------------------- */

int tr_bnode_start(struct tr_bnode *b, struct tr_bnode_act *acts, unsigned cap)
{
	struct out o = { .a = acts, .cap = cap };

	if (!acts_ok(b, acts, cap) || b->v != 0)
		return -EINVAL;
	if (b->started)
		return -EALREADY;
	b->started = true;
	b->stats.events++;
	if (b->shape == TR_BNODE_TREE && b->nchunks)
		tree_split(b, &o, b->cfg.nranks);
	return pump(b, &o);
}

static int unexpected(struct tr_bnode *b)
{
	b->stats.unexpected++;
	return -ENOENT;
}

/* The relabelling a message tells (its shape, mul and rot): taken while
 * this rank has no TWOTREE state, else it must be the one it has.  false:
 * one no root sends. */
static bool perm_told(struct tr_bnode *b, const struct tr_bnode_order *o)
{
	struct tr_bnode_perm p;

	if (perm_of(b->cfg.nranks, b->cfg.root, o, &p))
		return false;
	if (b->shape == TR_BNODE_TWOTREE)
		return b->perm.mul == p.mul && b->perm.rot == p.rot && b->perm.grp == p.grp &&
		       b->perm.fan == p.fan;
	b->perm = p;
	return true;
}

int tr_bnode_on_order(struct tr_bnode *b, uint32_t from, const struct tr_bnode_order *ord,
		      struct tr_bnode_act *acts, unsigned cap)
{
	struct out o = { .a = acts, .cap = cap };
	uint32_t n = b->cfg.nranks;

	if (!acts_ok(b, acts, cap) || !ord || from >= n)
		return -EINVAL;
	if (b->v != 0 && b->aborted && !b->known) {
		/* Told to give up before this came: nothing moves on, but a
		 * TREE rank now knows whom to report to. */
		if (ord->shape == TR_BNODE_TREE && b->shape == TR_BNODE_TREE && b->parent == NIL)
			b->parent = from;
		b->stats.events++;
		return pump(b, &o);
	}
	if (b->v == 0 || from == b->cfg.rank ||
	    (ord->shape != TR_BNODE_TREE && ord->shape != TR_BNODE_TWOTREE) ||
	    (b->shape && ord->shape != b->shape) ||
	    (b->known && (ord->len != b->cfg.len || ord->chunk != b->cfg.chunk)) ||
	    ord->len == 0 || ord->chunk == 0 || !perm_told(b, ord))
		return unexpected(b);
	if (ord->shape == TR_BNODE_TREE) {
		/* The whole buffer, or (carried only) piece k of chunk bytes,
		 * the first one first, every one naming the same piece of
		 * ranks. */
		if (ord->hi <= b->v || ord->hi > n || ord->chunk > ord->len ||
		    (ord->chunk < ord->len && !ord->carried) ||
		    (b->started ? from != b->parent || ord->k != b->have[0] ||
					  ord->k >= b->nchunks || ord->hi != b->hi
				: ord->k != 0))
			return unexpected(b);
		b->stats.events++;
		b->have[0]++;
		if (b->started)
			return pump(b, &o);
		if (!b->known)
			set_shape(b, TR_BNODE_TREE, ord->len, ord->chunk);
		b->started = true;
		b->known = true;
		b->parent = from;
		b->hi = ord->hi;
		/* Carried or written: the children get it the same way. */
		b->cfg.inline_max = ord->carried ? ord->chunk : 0;
		if (!b->aborted)
			tree_split(b, &o, ord->hi);
		return pump(b, &o);
	}
	{
		unsigned t = (unsigned)(ord->k % 2);
		uint64_t nch = (ord->len + ord->chunk - 1) / ord->chunk;

		if ((b->shape && ord->carried != (b->cfg.chunk <= b->cfg.inline_max)) ||
		    ord->k >= nch ||
		    from != tr_bnode_tparent(&b->perm, n, b->cfg.root, b->cfg.rank, t) ||
		    (b->known && ord->k != 2 * b->have[t] + t) || (!b->known && ord->k != t))
			return unexpected(b);
		if (!b->known) {
			set_shape(b, TR_BNODE_TWOTREE, ord->len, ord->chunk);
			b->cfg.inline_max = ord->carried ? ord->chunk : 0;
		}
		b->started = true;
		b->known = true;
		b->have[t]++;
		b->stats.events++;
		return pump(b, &o);
	}
}

static struct tr_bnode_kid *kid_find(struct tr_bnode *b, uint32_t rank, int tree)
{
	for (uint32_t i = 0; i < b->nkids; i++)
		if (b->kids[i].rank == rank && (tree < 0 || b->kids[i].tree == tree))
			return &b->kids[i];
	return NULL;
}

/* Child k will get nothing more from here: what it was to serve is told. */
static void kid_cut(struct tr_bnode *b, struct tr_bnode_kid *k, struct out *o, bool dead)
{
	uint32_t n = b->cfg.nranks;

	if (k->flags & K_CUT)
		return;
	k->flags |= K_CUT;
	if (b->shape == TR_BNODE_TREE) {
		/* Its whole piece; itself too unless it is gone. */
		uint32_t v = rel_of(n, b->cfg.root, k->rank);

		k->abort_next = dead ? v + 1 : v;
		if (b->abort_kid > (uint32_t)(k - b->kids))
			b->abort_kid = (uint32_t)(k - b->kids);
	} else {
		uint32_t kids[TR_BNODE_TKIDS];
		unsigned c = tr_bnode_tkids(&b->perm, n, b->cfg.root, k->rank, k->tree, kids);

		for (unsigned i = 0; i < c + !dead; i++) {
			struct tr_bnode_act *a = out_add(o, TR_BNODE_ACT_ABORT);

			a->to = i < c ? kids[i] : k->rank;
			a->status = b->status;
			a->failed = b->failed;
			a->ord = tag_of(b);
			b->stats.aborts++;
		}
	}
}

int tr_bnode_write_done(struct tr_bnode *b, uint32_t to, uint64_t chunk, enum triad_status status,
			struct tr_bnode_act *acts, unsigned cap)
{
	struct out o = { .a = acts, .cap = cap };
	struct tr_bnode_kid *k;

	if (!acts_ok(b, acts, cap) || to >= b->cfg.nranks || !status_final(status))
		return -EINVAL;
	k = b->shape ? kid_find(b, to, b->shape == TR_BNODE_TREE ? 0 : (int)(chunk % 2)) : NULL;
	if (!k || k->done >= k->sent ||
	    chunk != (b->shape == TR_BNODE_TREE ? 0 : 2 * k->done + k->tree))
		return unexpected(b);
	k->done++;
	b->inflight--;
	b->stats.events++;
	if (status != TRIAD_S_OK) {
		fail_first(b, status, to);
		kid_cut(b, k, &o, false);
	}
	return pump(b, &o);
}

int tr_bnode_on_report(struct tr_bnode *b, uint32_t from, enum triad_status status,
		       uint32_t failed, const struct tr_bnode_order *tag, struct tr_bnode_act *acts,
		       unsigned cap)
{
	struct out o = { .a = acts, .cap = cap };
	struct tr_bnode_kid *k = NULL;

	if (!acts_ok(b, acts, cap) || from >= b->cfg.nranks || !status_final(status) ||
	    (failed != NIL && failed >= b->cfg.nranks) || !tag)
		return -EINVAL;
	if (!perm_told(b, tag))
		return unexpected(b);
	/* A TWOTREE child may report (after an ABORT) before this rank heard
	 * anything: its children are known all the same. */
	if (!b->shape && tag->shape == TR_BNODE_TWOTREE)
		set_shape(b, TR_BNODE_TWOTREE, 0, 1);
	for (uint32_t i = 0; i < b->nkids; i++)
		if (b->kids[i].rank == from && (b->kids[i].flags & K_REPORTS))
			k = &b->kids[i];
	if (!k || (k->flags & (K_REPORTED | K_DEAD)))
		return unexpected(b);
	k->flags |= K_REPORTED;
	b->kids_open--;
	b->stats.events++;
	if (status != TRIAD_S_OK)
		fail_first(b, status, failed);
	return pump(b, &o);
}

static void abort_self(struct tr_bnode *b, struct out *o)
{
	if (b->aborted)
		return;
	b->aborted = true;
	if (b->shape == TR_BNODE_TREE) {
		/* A child still owed pieces: it and its piece are told. */
		for (uint32_t i = 0; i < b->nkids; i++) {
			struct tr_bnode_kid *k = &b->kids[i];

			if (b->nchunks > 1 && !(k->flags & K_DEAD) && k->sent < b->nchunks)
				kid_cut(b, k, o, false);
		}
		return;
	}
	if (b->shape != TR_BNODE_TWOTREE)
		return;
	/* Flood: the children will get nothing more from here. */
	for (uint32_t i = 0; i < b->nkids; i++) {
		struct tr_bnode_kid *k = &b->kids[i];

		if (!(k->flags & (K_CUT | K_DEAD))) {
			struct tr_bnode_act *a = out_add(o, TR_BNODE_ACT_ABORT);

			k->flags |= K_CUT;
			a->to = k->rank;
			a->status = b->status;
			a->failed = b->failed;
			a->ord = tag_of(b);
			b->stats.aborts++;
		}
	}
}

int tr_bnode_on_abort(struct tr_bnode *b, uint32_t from, enum triad_status status,
		      uint32_t failed, const struct tr_bnode_order *tag, struct tr_bnode_act *acts,
		      unsigned cap)
{
	struct out o = { .a = acts, .cap = cap };
	unsigned shape = tag ? tag->shape : 0;

	if (!acts_ok(b, acts, cap) || from >= b->cfg.nranks || !status_final(status) ||
	    status == TRIAD_S_OK || (failed != NIL && failed >= b->cfg.nranks) ||
	    (shape != TR_BNODE_TREE && shape != TR_BNODE_TWOTREE))
		return -EINVAL;
	if (b->v == 0 || (b->shape && b->shape != shape) || !perm_told(b, tag))
		return unexpected(b);
	b->stats.events++;
	fail_first(b, status, failed);
	if (b->shape == TR_BNODE_TWOTREE && b->parent == NIL)
		b->parent = tr_bnode_tparent(&b->perm, b->cfg.nranks, b->cfg.root, b->cfg.rank, 0);
	if (!b->shape) {
		/* Nothing came: no data, but TWOTREE's parents and children are
		 * known all the same (the report goes up tree 0). */
		if (shape == TR_BNODE_TWOTREE)
			set_shape(b, TR_BNODE_TWOTREE, 0, 1);
		else
			b->shape = TR_BNODE_TREE;
	}
	abort_self(b, &o);
	b->started = true;
	return pump(b, &o);
}

int tr_bnode_rank_failed(struct tr_bnode *b, uint32_t rank, enum triad_status status,
			 struct tr_bnode_act *acts, unsigned cap)
{
	struct out o = { .a = acts, .cap = cap };

	if (!acts_ok(b, acts, cap) || rank >= b->cfg.nranks || rank == b->cfg.rank ||
	    !status_final(status) || status == TRIAD_S_OK)
		return -EINVAL;
	for (uint32_t i = 0; i < b->nkids; i++) {
		struct tr_bnode_kid *k = &b->kids[i];

		if (k->rank != rank || (k->flags & K_DEAD))
			continue;
		k->flags |= K_DEAD;
		if ((k->flags & K_REPORTS) && !(k->flags & K_REPORTED)) {
			b->kids_open--;
			fail_first(b, status, rank);
			kid_cut(b, k, &o, true);
		} else if (b->shape == TR_BNODE_TWOTREE) {
			/* What it was to forward down its tree may be missing,
			 * however much it was sent. */
			fail_first(b, status, rank);
			kid_cut(b, k, &o, true);
		}
		/* Its WRITEs in flight still come back (with an error). */
	}
	if (o.n)
		b->stats.events++;
	return pump(b, &o);
}

int tr_bnode_poll(struct tr_bnode *b, struct tr_bnode_act *acts, unsigned cap)
{
	struct out o = { .a = acts, .cap = cap };

	if (!acts || cap == 0)
		return -EINVAL;
	return pump(b, &o);
}
