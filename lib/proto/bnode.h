/* The delegated broadcast (docs/spec/tree-broadcast.md, "Delegated
 * broadcast"), sans I/O: the engine EVERY rank runs, one per broadcast.
 *
 * The root-driven schedulers of proto/bcast.h make the root handle about
 * three events per copy, so its CPU sets the pace beyond a few dozen ranks.
 * Here the root drives only its own children.  An ORDER tells a rank that
 * data is in its buffer (written just before on the same connection, or
 * carried in the ORDER itself) and which part of the schedule it drives
 * next; the rank orders its own children at once, from its progress engine
 * (no application thread), and reports up once, when its subtree is done.
 * Holders are kept busy with no rounds: a rank sends as soon as it holds
 * data, to every child in turn.
 *
 * Shapes (enum tr_bnode_shape):
 *
 *   TREE (small and medium buffers).  A rank with relative ranks [v, hi) to
 *     cover (v its own) cuts (v, hi) into consecutive pieces, one per child,
 *     the first rank of a piece its head, and sends the whole buffer to each
 *     head in turn with the piece's end in the ORDER.  Piece sizes are the
 *     greedy, time-budgeted ones of a LogP broadcast: with s the time a send
 *     occupies the sender and d the time from a send to the child's report
 *     being handled (data, two latencies, three overheads), a rank with t
 *     time can cover F(t) = 1 + sum_{i=1..K} F(t - i s - d_i) ranks, d_i
 *     taken with the latency of the link to child i (cfg.lat: the greedy
 *     choice where latencies differ: a far child gets less work, as much as
 *     it can finish in the time left).  The rank takes the least t that
 *     covers its range and gives child i F(t - i s - d_i) of it, the
 *     biggest piece first; no more than K children (cfg.max_kids, default
 *     ceil(log2 N) + 8, at the root that of TR_BNODE_ROOT_KIDS_N ranks, so
 *     the root's work stops growing with N).  With cfg.lat,
 *     F is built with the mean latency of a fixed sample of the range's
 *     pairs (what the ranks inside a piece will meet), and each cut may
 *     move back up to 8 ranks to the rank with the fastest link from this
 *     one, the next child (bnode.c, tree_plan()).  Up to cfg.inline_max
 *     bytes travel in the ORDER itself.  Above, the data goes in the fewest
 *     carried pieces of equal size within it (at most TR_BNODE_TREE_PIECES;
 *     ORDERs naming piece k of cfg.chunk bytes and the same hi), where
 *     TREE's budget says they beat a WRITE of the whole buffer and its
 *     ORDER; else that.  A rank sends each child every piece it holds
 *     before the next child, and forwards each piece as it comes.
 *
 *   TWOTREE (large buffers; Sanders, Speck and Traeff's two-tree
 *     broadcast).  The buffer is cut into chunks of cfg.chunk bytes; even
 *     chunks flow down binary tree T0, odd ones down T1, both over the N - 1
 *     non-roots, built so that every rank is an inner node in at most one
 *     of them: each rank sends about S bytes in all and receives S, so the
 *     time approaches S / B plus a depth's worth of chunks.  Each chunk is a
 *     WRITE followed by an ORDER naming it; a rank forwards chunk k to its
 *     children as soon as it holds it (cut-through: chunk k goes on while
 *     k + 1 arrives), the lowest chunk first across its children (the
 *     root alternates between the trees), at most cfg.window WRITEs in
 *     flight per child (with cfg.lat: as many as cover the child's link's
 *     round trip, up to TR_BNODE_MAX_WINDOW).  Every rank computes its own
 *     parents and children from (N, root, rank) and the trees' relabelling:
 *     position x of both trees is relative rank 1 + (mul x + rot) mod
 *     (N - 1).  Without cfg.lat it is the identity (mul 1, rot 0).  With
 *     cfg.lat the root picks, of up to 256 (mul, rot) drawn from a fixed
 *     sequence (mul of 1 .. 17), the one under which the first chunk
 *     reaches the last rank soonest, counting a slow link from the root to
 *     a tree's root against the whole stream (bnode.c, choose_perm()); every
 *     message of the broadcast (ORDER, REPORT, ABORT) carries mul and rot,
 *     so that a rank whose first message is an ABORT knows the trees too.
 *     Or, where latencies come in groups (racks), the root may take groups
 *     of grp ranks instead, each a two-tree of its own, fed across groups
 *     by a heap of fan-out fan (bnode.c, "groups"), if its estimate of the
 *     last chunk's arrival is sooner than the flat trees'; every message
 *     carries grp and fan then.  Reports go up T0.
 *
 *   AUTO (the root only): the shape whose estimate from cfg.cost (the
 *     measured L, o, g, B) of the time until every rank holds the data is
 *     lower for this N and S, and for TWOTREE the chunk size minimising
 *     its estimate (bnode.c, estimate()).  With cfg.lat each shape's
 *     estimate is scaled by how much later its own plan over these links
 *     (TREE's budget, TWOTREE's chosen trees or groups) has the data
 *     everywhere than over links of the model's latency (auto_lat()).
 *
 * Completion.  RELEASE: this rank holds all the data and no transfer of
 * this broadcast reads its buffer any more; a non-root's request completes
 * here with the status (OK: its data is all there).  REPORT to its parent
 * once released and every child it ordered has reported (or failed): the
 * subtree's first failure, or OK.  DONE at the root only, once released and
 * every child reported: the root's request completes with the whole
 * broadcast's status and first failed rank.  Each is emitted exactly once.
 *
 * Failure.  A WRITE reported with an error, or a child reported failed
 * (tr_bnode_rank_failed) before it reported, keeps the first status and
 * rank and aborts what the child was to serve: TREE sends ABORT to every
 * rank of the child's piece but the child; TWOTREE sends ABORT to the
 * child's own children in the tree (which flood it down both trees).  An
 * aborted rank sends no new transfer, RELEASEs once nothing is in flight
 * out of it (OK only if it holds all the data), and reports up as usual;
 * so no live rank waits for ever and every rank's request completes once.
 *
 * Events in (one function each), actions out (struct tr_bnode_act):
 *   tr_bnode_start()       the root begins
 *   tr_bnode_on_order()    an ORDER arrived (a non-root's first event may be
 *                          it: the engine takes shape, length and chunk
 *                          from it)
 *   tr_bnode_write_done()  a WRITE this rank asked for completed, with a status
 *   tr_bnode_on_report()   a child's REPORT arrived
 *   tr_bnode_on_abort()    an ABORT arrived
 *   tr_bnode_rank_failed() a peer is gone, or a message to it could not be
 *                          delivered (its transport gave up on it)
 *   tr_bnode_poll()        more actions (ABORTs) a call had no room for
 * Actions:
 *   WRITE    RDMA-write [off, off + len) of this rank's buffer to the same
 *            range of rank `to`; report it with tr_bnode_write_done(to, k)
 *   ORDER    send rank `to` the ORDER in `ord`, behind the WRITE before it
 *            to the same rank, on the same connection (RC order: the data
 *            is in place when the ORDER is seen); with ord.carried, the
 *            bytes [off, off + len) travel in it
 *   REPORT   send the parent `to` status, failed and ord's shape, mul, rot
 *   ABORT    send rank `to` status, failed and ord's shape, mul, rot: nothing
 *            more will come
 *   RELEASE  this rank's request may complete (non-root) / its buffer is
 *            free (root), with status
 *   DONE     the root's request completes: status, first failed rank
 *
 * Pure: no clock, no I/O, no allocation, no locks; the caller serialises
 * the calls on one engine.  A call emits at most tr_bnode_acts_max()
 * actions but ABORTs and TWOTREE's chunks (carried ones hold no window, so
 * a rank may have more to send than an array takes), which wait for
 * tr_bnode_poll() when the array is full (tr_bnode_pending()).  A negative errno means the caller broke the
 * interface or the event is not one this rank can have been sent
 * (-ENOENT, counted in stats.unexpected): nothing happened. */
#ifndef TRIAD_PROTO_BNODE_H
#define TRIAD_PROTO_BNODE_H

#include <stdbool.h>
#include <stdint.h>

#include "triad.h"

#define TR_BNODE_NO_RANK UINT32_MAX
#define TR_BNODE_MAX_KIDS 64u	    /* TREE fanout cap; TWOTREE uses 4 */
/* TREE: the root takes at most the children it would for this many ranks
 * (max_kids 0), so that its events stop growing with N. */
#define TR_BNODE_ROOT_KIDS_N 64u
#define TR_BNODE_WINDOW_DEFAULT 4u
#define TR_BNODE_MAX_WINDOW 64u
/* Carried up to: a receive slot (TRIAD_SLOT_SIZE, 8 KiB) less headers. */
#define TR_BNODE_INLINE_DEFAULT 7936u
#define TR_BNODE_TMAX 2048u	    /* TREE: time steps of the budget table */
/* TREE: carried pieces per child at most (above: a WRITE). */
#define TR_BNODE_TREE_PIECES 8u

enum tr_bnode_shape {
	TR_BNODE_AUTO,
	TR_BNODE_TREE,
	TR_BNODE_TWOTREE,
	TR_BNODE_NSHAPES
};

enum tr_bnode_act_type {
	TR_BNODE_ACT_WRITE,
	TR_BNODE_ACT_ORDER,
	TR_BNODE_ACT_REPORT,
	TR_BNODE_ACT_ABORT,
	TR_BNODE_ACT_RELEASE,
	TR_BNODE_ACT_DONE,
	TR_BNODE_NACTS
};

/* The network as the root measured it (for AUTO and TREE's budgets). */
struct tr_bnode_cost {
	double lat_us;	    /* L, one way */
	double o_us;	    /* CPU per event (message handled, post, completion) */
	double gap_us;	    /* g between two posts on a NIC */
	double bw;	    /* B, bytes per us (MB/s); <= 0: free */
	uint32_t msg_bytes; /* a control message on the wire */
};

/* What an ORDER carries (the wire's fields).  A REPORT or ABORT carries
 * shape, mul and rot only. */
struct tr_bnode_order {
	uint8_t shape;	 /* TREE or TWOTREE */
	uint8_t carried; /* the data travels in the ORDER */
	uint32_t hi;	 /* TREE: the destination covers relative ranks [its own, hi) */
	uint64_t len;	 /* the broadcast's bytes */
	uint64_t chunk;	 /* chunk size (TREE: len, or a carried piece's) */
	uint64_t k;	 /* the chunk this ORDER names (TREE: 0 unless in pieces) */
	/* TWOTREE: the trees' position x is relative rank 1 + (mul x + rot)
	 * mod (N - 1), 0 < mul < 256 coprime to N - 1 (0 and 0: the
	 * identity); TREE: 0 */
	uint32_t mul, rot;
	/* TWOTREE over groups (0: none; then mul and rot are 0): the ranks
	 * a / grp form groups of grp, each a two-tree of its own, and every
	 * group feeds fan others (bnode.c, "groups"); TREE: 0 */
	uint32_t grp, fan;
};

/* TWOTREE's relabelling, or its groups, as the engine keeps them. */
struct tr_bnode_perm {
	uint32_t mul, rot, inv; /* inv: mul's inverse mod N - 1 */
	uint32_t grp, fan;	/* groups of grp ranks, each feeding fan groups; 0: flat */
};

/* TWOTREE: children per tree at most (two inside a group, one group fed). */
#define TR_BNODE_TKIDS 3u

struct tr_bnode_act {
	enum tr_bnode_act_type type;
	uint32_t to;	 /* WRITE, ORDER, REPORT, ABORT */
	uint64_t k;	 /* WRITE, ORDER: chunk */
	uint64_t off;	 /* WRITE, ORDER (carried): byte range */
	uint64_t len;
	struct tr_bnode_order ord; /* ORDER */
	uint16_t status; /* REPORT, ABORT, RELEASE, DONE: enum triad_status */
	uint32_t failed; /* REPORT, ABORT, DONE: first failed rank or TR_BNODE_NO_RANK */
};

struct tr_bnode_cfg {
	uint32_t nranks;    /* >= 1, < TR_BNODE_NO_RANK */
	uint32_t root;	    /* < nranks */
	uint32_t rank;	    /* this process, < nranks */
	uint64_t len;	    /* root: bytes; a non-root learns it from its first ORDER */
	enum tr_bnode_shape shape; /* root: the shape, AUTO to choose; non-root: ignored */
	uint64_t chunk;	    /* root, TWOTREE: bytes per chunk, 0: chosen from cost */
	uint32_t window;    /* TWOTREE: WRITEs in flight per child, 0: default */
	uint32_t max_kids;  /* TREE: children per rank at most, 0: ceil(log2 N) + 8
			     * (the root: of min(N, TR_BNODE_ROOT_KIDS_N)) */
	uint64_t inline_max; /* root, TREE: carry up to this many bytes in the ORDER */
	struct tr_bnode_cost cost;
	/* Optional: one-way latency in us of link a - b as this rank sees it
	 * (NULL: cost.lat_us for every link). */
	double (*lat)(void *arg, uint32_t a, uint32_t b);
	void *lat_arg;
};

struct tr_bnode_kid {
	uint32_t rank;
	uint32_t hi;	      /* TREE: its piece is [its relative rank, hi) */
	uint32_t abort_next;  /* TREE: the next relative rank owed an ABORT */
	uint8_t tree;	      /* TWOTREE: 0 or 1 */
	uint8_t flags;	      /* private */
	uint64_t sent, done;  /* WRITEs (TWOTREE: chunks of its tree) asked for, completed */
};

struct tr_bnode_stats {
	uint64_t events;     /* events accepted */
	uint64_t writes, orders, reports, aborts; /* actions */
	uint64_t unexpected; /* events refused with -ENOENT */
};

struct tr_bnode {
	struct tr_bnode_cfg cfg; /* as resolved */
	struct tr_bnode_stats stats;
	uint8_t shape;		 /* 0 until known */
	uint64_t nchunks;	 /* TWOTREE: chunks; TREE: 1 (0 when len 0) */
	uint64_t have[2];	 /* chunks of tree t held, in order (TREE: have[0]) */
	uint32_t v;		 /* relative rank */
	uint32_t parent;	 /* REPORT's destination, NO_RANK if none (yet) */
	uint32_t tparent[2];	 /* TWOTREE: the rank each tree's chunks come from */
	uint32_t nkids, kids_open; /* kids_open: children owing a REPORT */
	uint64_t inflight;	 /* WRITEs in flight */
	uint32_t abort_kid;	 /* TREE: first child whose piece is owed ABORTs */
	uint32_t hi;		 /* TREE, non-root: this rank covers [v, hi) */
	uint32_t failed;
	uint16_t status;
	struct tr_bnode_perm perm; /* TWOTREE: the root's choice, told by every message */
	bool started, aborted, released, reported, finished;
	bool known; /* shape, length and chunk came with an ORDER (or: the root) */
	struct tr_bnode_kid kids[TR_BNODE_MAX_KIDS];
};

const char *tr_bnode_shape_str(unsigned shape);
const char *tr_bnode_act_str(unsigned type);

/* Sets up rank cfg->rank's engine.  0, or -EINVAL (b untouched) for a bad
 * cfg: nranks 0 or too big, root or rank >= nranks, unknown shape, window
 * > TR_BNODE_MAX_WINDOW, max_kids > TR_BNODE_MAX_KIDS. */
int tr_bnode_init(struct tr_bnode *b, const struct tr_bnode_cfg *cfg);

/* Room for every call's actions but ABORTs. */
static inline unsigned tr_bnode_acts_max(const struct tr_bnode *b)
{
	return 2 * TR_BNODE_MAX_KIDS + 4 + 0 * b->nkids;
}

/* The root begins.  -EINVAL at a non-root or a bad array; -EALREADY. */
int tr_bnode_start(struct tr_bnode *b, struct tr_bnode_act *acts, unsigned cap);

/* An ORDER from rank `from` arrived (its WRITE, if any, is in place). */
int tr_bnode_on_order(struct tr_bnode *b, uint32_t from, const struct tr_bnode_order *o,
		      struct tr_bnode_act *acts, unsigned cap);

/* The WRITE of chunk k to rank `to` completed with status. */
int tr_bnode_write_done(struct tr_bnode *b, uint32_t to, uint64_t k, enum triad_status status,
			struct tr_bnode_act *acts, unsigned cap);

/* Child `from` reports its subtree: status, the first failed rank, and in
 * tag the shape and TWOTREE's mul and rot (a REPORT action's ord). */
int tr_bnode_on_report(struct tr_bnode *b, uint32_t from, enum triad_status status,
		       uint32_t failed, const struct tr_bnode_order *tag, struct tr_bnode_act *acts,
		       unsigned cap);

/* Rank `from` says nothing more will come: status, first failed rank, and
 * tag as for a REPORT (an ABORT action's ord). */
int tr_bnode_on_abort(struct tr_bnode *b, uint32_t from, enum triad_status status,
		      uint32_t failed, const struct tr_bnode_order *tag, struct tr_bnode_act *acts,
		      unsigned cap);

/* Peer `rank` is gone (status: an error). */
int tr_bnode_rank_failed(struct tr_bnode *b, uint32_t rank, enum triad_status status,
			 struct tr_bnode_act *acts, unsigned cap);

/* What this rank's REPORT or ABORT would carry (shape, mul, rot; TREE
 * while the shape is unknown): for an ABORT the caller makes up itself. */
struct tr_bnode_order tr_bnode_tag(const struct tr_bnode *b);

int tr_bnode_poll(struct tr_bnode *b, struct tr_bnode_act *acts, unsigned cap);

/* ABORTs, or TWOTREE chunks the last call had no room for, are waiting
 * for tr_bnode_poll(). */
bool tr_bnode_pending(const struct tr_bnode *b);

/* TWOTREE's trees under relabelling pm (NULL: none), for tests and tools:
 * rank r's parent in tree t (TR_BNODE_NO_RANK for the root) and its
 * children, the group it feeds first (returns how many, <= TR_BNODE_TKIDS;
 * <= 2 without groups). */
uint32_t tr_bnode_tparent(const struct tr_bnode_perm *pm, uint32_t nranks, uint32_t root,
			  uint32_t r, unsigned t);
unsigned tr_bnode_tkids(const struct tr_bnode_perm *pm, uint32_t nranks, uint32_t root,
			uint32_t r, unsigned t, uint32_t kids[TR_BNODE_TKIDS]);

static inline bool tr_bnode_finished(const struct tr_bnode *b)
{
	return b->finished;
}

#endif
