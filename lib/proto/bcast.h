/* Broadcast schedulers (docs/spec/tree-broadcast.md, after JP6740683B2
 * Fig. 11), sans I/O.
 *
 * One engine (struct tr_bcast) per broadcast, run at the ROOT: it sends
 * len bytes from the root's buffer to the same offsets of every other
 * rank's buffer.  The root drives everything: it decides who sends what to
 * whom and orders it; the other ranks' libraries only serve the copies
 * (third-party copy, lib/proto/copy) and learn the end from a small
 * message (RANK_DONE); their application threads make no calls.
 *
 * Events in (one function each), actions out (struct tr_bcast_act):
 *   tr_bcast_start()       begin
 *   tr_bcast_xfer_done()   a transfer the engine asked for finished, with
 *                          a status, as the root learns it: its own PUT's
 *                          completion, or the COMPLETE of the copy it
 *                          ordered (relay, direct or transport-ack mode)
 *   tr_bcast_rank_failed() a rank is gone (peer gone, every plane down)
 *   tr_bcast_poll()        more actions, when a call filled the array
 * Actions:
 *   COPY       order rank src to copy [off, off + len) of its buffer into
 *              the same range of rank dst's buffer (triad_copy, I = root)
 *   PUT        the root's own RDMA write of [off, off + len) to dst
 *   RANK_DONE  send rank dst a small message: the broadcast is over for it,
 *              with status (OK: its buffer holds the data)
 *   DONE       the broadcast is over at the root: status, and the first
 *              rank that failed (TR_BCAST_NO_RANK when OK).  Always last.
 * Every COPY and PUT names (dst, chunk); each (dst, chunk) is asked for
 * exactly once, and must be reported exactly once with
 * tr_bcast_xfer_done(src, dst, chunk, status), OK or not, including those
 * that touch a rank reported failed (the copy engine's COMPLETE and the
 * verbs completion do that: they have deadlines and peer-gone).
 *
 * Actions go into the caller's array acts of cap entries; a call returns
 * how many it filled, in the order the caller must execute them.  If it
 * returns cap, more may be waiting: call tr_bcast_poll() until it returns
 * less than cap (tr_bcast_acts_max() entries always suffice for one call).
 * A negative errno means the caller broke the interface: nothing happened.
 *
 * Algorithms (enum tr_bcast_algo), all through the same actions:
 *
 *   GREEDY (the patent's).  The root keeps the holders (ranks whose
 *     incoming transfer it has learned is complete; the root from the
 *     start) and the busy senders (one transfer in flight each).  Whenever
 *     a holder is idle and some rank lacks the data and is not being sent
 *     it, the root at once orders that holder to copy to the lowest such
 *     rank (its own sends are PUTs); it never waits for a round.  N - 1
 *     transfers of the whole buffer.  When several holders are idle at once
 *     (at a completion: its sender and its receiver), they are served in
 *     cyclic rank order starting at the sender served last (next-fit), so
 *     work spreads over the holders instead of always going to the lowest
 *     ranks.  With equal latencies (every transfer 1 unit, the root's PUT
 *     overlapping the copies it orders, completions at the same instant
 *     reported in sender rank order) this gives the patent's Fig. 11 for 8
 *     ranks exactly: 0->{1,2,5}, 1->{3,6}, 2->{4}, 3->{7}.  (Plain
 *     lowest-rank-first sender order gives the same tree with ranks 4 and 5
 *     swapped, 0->{1,2,4}, 2->{5}; no order that depends only on ranks and
 *     roles can give the patent's labels: at the completion of the PUT to 1
 *     the root must be served before the new holder, at that of the PUT
 *     to 2 after it.)
 *
 *   BINOMIAL (the classic doubling tree, the baseline the patent argues
 *     against).  In relative ranks v = (rank - root) mod N, round j sends
 *     v -> v + 2^j for every v < 2^j with v + 2^j < N, ceil(log2 N)
 *     rounds.  Expressed as root-ordered copies along those edges, round
 *     synchronous: round j + 1 is ordered only once every transfer of
 *     round j completed (each round waits for its slowest transfer).
 *
 *   PIPELINE.  The buffer is cut into chunks of cfg.chunk bytes (the last
 *     may be shorter); the ranks form a tree of cfg.fanout children per
 *     rank in relative-rank heap order (parent of v is (v - 1) / fanout),
 *     fanout 1 being a chain root -> root+1 -> root+2 ...  Each link
 *     (parent -> child) carries every chunk in increasing order, at most
 *     cfg.window chunks in flight; chunk k is ordered on a link as soon as
 *     the parent holds chunk k (reported complete into it), so transfers
 *     overlap down the tree.  Why these shapes: every spanning tree costs
 *     the root the same (N - 1) * nchunks orders; what differs is the
 *     time.  A chain sends each chunk once per rank, so its time is about
 *     (nchunks + N - 2) chunk times: bandwidth-optimal when the stream is
 *     long.  A fanout-f tree sends each chunk f times per inner rank but is
 *     only log_f N deep: about f * (nchunks + log_f N).  fanout 0 (auto)
 *     takes the chain when nchunks >= N - 2 - 2 floor(log2 N), the point
 *     where the two estimates cross for f = 2, else the binary tree.  The
 *     window hides the order/acknowledge round trip of each chunk copy
 *     (4 one-way latencies in relay mode) behind the data.
 *
 *   AUTO picks PIPELINE when len >= cfg.auto_len, N >= cfg.auto_ranks and
 *     there are at least two chunks, else GREEDY.  Defaults 32 MiB
 *     (TRIAD_BCAST_PIPELINE) and 3 ranks, from measurements: on the test
 *     fabric (8 ranks x 1 plane of Soft-RoCE in one 2-vCPU VM, root 0,
 *     1 MiB pipeline chunks, bench/bcast) greedy and binomial were within
 *     10% of each other at every size from 4 KiB to 16 MiB, and pipelined
 *     was the slowest: 4 KiB 8.8 / 15.8 ms (greedy / pipelined), 64 KiB 26 / 33,
 *     256 KiB 74 / 91, 1 MiB 229 / 336, 4 MiB 606 / 677, 16 MiB 2407 /
 *     2587.  There the CPUs are the bottleneck, not the links: every byte
 *     costs rxe the same CPU whichever tree carries it, so the tree's
 *     depth buys nothing and the pipeline's extra orders cost.  On a
 *     fabric whose links are the bottleneck the chain's (nchunks + N - 2)
 *     chunk times beat greedy's about log2(N) whole-buffer times for
 *     large buffers; 32 MiB keeps AUTO on the measured side and the
 *     setting moves it.  With two ranks there is nothing to overlap.
 *     BINOMIAL is never chosen by AUTO: it only serves as the baseline.
 *
 * Completion at a rank.  RANK_DONE(r, OK) is emitted once r holds all the
 * data AND will never again be asked to send: its buffer is then free for
 * its application (it is read by the copies r serves until then).  So a
 * greedy holder is released once no rank is left to be given a sender and
 * its own send completed; a binomial rank after its last round's send; a
 * pipeline rank once all its children hold every chunk.  No RANK_DONE to
 * the root (DONE is its own) or to a rank reported failed.  len == 0 or
 * N == 1: every rank is done at tr_bcast_start() (RANK_DONE for each
 * non-root, then DONE).
 *
 * Failure.  The first transfer reported with an error status, or the
 * first rank reported failed that still mattered (not yet released),
 * aborts the broadcast: that status and rank are kept (for a failed
 * transfer the rank is its dst, the one the data did not reach; a caller
 * that knows the source is to blame reports tr_bcast_rank_failed(src)
 * first), no more COPY or PUT is issued, and every rank not yet released
 * (and not failed) gets RANK_DONE as soon as nothing is in flight into or
 * out of it: OK if it holds all the data (a pipeline rank needs every
 * chunk), else the abort's status, so no rank waits forever.  DONE(status,
 * rank) follows once nothing at all is in flight, so no buffer is in use
 * by this broadcast any more when the root's application sees it.  Later
 * failures are only accounted.  A failure of a rank already released
 * changes nothing.
 *
 * Everything here is pure: no clock, no I/O, no allocation (per-rank state
 * lives in the storage the caller gives to tr_bcast_init()), no locks; the
 * caller serialises the calls on one engine.  Each event costs O(1)
 * amortised (O(fanout) for a pipeline), except an abort, which looks at
 * every rank once.  The structures are public so they can be embedded; read them
 * through the accessors, write them only through the functions. */
#ifndef TRIAD_PROTO_BCAST_H
#define TRIAD_PROTO_BCAST_H

#include <stdbool.h>
#include <stdint.h>

#include "triad.h"

/* DONE's rank when nothing failed; also "no rank" in the tables. */
#define TR_BCAST_NO_RANK UINT32_MAX

/* Pipeline defaults and limits. */
#define TR_BCAST_CHUNK_DEFAULT (64u * 1024u)
#define TR_BCAST_WINDOW_DEFAULT 4u
#define TR_BCAST_MAX_WINDOW 64u
/* AUTO crossover defaults. */
#define TR_BCAST_AUTO_LEN_DEFAULT (32u * 1024u * 1024u)
#define TR_BCAST_AUTO_RANKS_DEFAULT 3u

enum tr_bcast_algo {
	TR_BCAST_AUTO,	   /* choose from len and N (see above) */
	TR_BCAST_GREEDY,   /* root keeps every holder busy, no rounds */
	TR_BCAST_BINOMIAL, /* round-synchronous doubling tree */
	TR_BCAST_PIPELINE, /* chunks down a chain or tree */
	TR_BCAST_NALGOS
};

enum tr_bcast_act_type {
	TR_BCAST_ACT_COPY,	/* order src to copy to dst */
	TR_BCAST_ACT_PUT,	/* the root writes to dst itself */
	TR_BCAST_ACT_RANK_DONE, /* tell dst its broadcast is over */
	TR_BCAST_ACT_DONE,	/* the broadcast is over (last action) */
	TR_BCAST_NACTS
};

struct tr_bcast_act {
	enum tr_bcast_act_type type;
	uint32_t src;	 /* COPY: the source; PUT: the root */
	uint32_t dst;	 /* COPY, PUT: the destination; RANK_DONE: the rank told */
	uint64_t chunk;	 /* COPY, PUT: chunk number (0 unless PIPELINE) */
	uint64_t off;	 /* COPY, PUT: byte range, same in every rank's buffer */
	uint64_t len;
	uint16_t status; /* RANK_DONE, DONE: enum triad_status */
	uint32_t failed; /* DONE: the first rank that failed, or TR_BCAST_NO_RANK */
};

/* Per-rank state, in the caller's storage (nranks entries). */
struct tr_bcast_rank {
	uint64_t have;	    /* chunks 0 .. have - 1 are held */
	uint64_t bits;	    /* bit i: chunk have + i held too (out of order) */
	uint64_t lost;	    /* bit i: chunk have + i was reported failed */
	uint64_t sent;	    /* chunks 0 .. sent - 1 were asked for into this rank */
	uint32_t src;	    /* the rank that sends into it (PIPELINE: its parent) */
	uint32_t in;	    /* transfers into it in flight */
	uint32_t busy;	    /* transfers out of it in flight */
	uint32_t kids_left; /* PIPELINE: children that lack a chunk */
	uint32_t rnext;	    /* ready queue link */
	uint32_t lnext;	    /* release queue link */
	uint8_t flags;	    /* private */
};

struct tr_bcast_stats {
	uint64_t copies;     /* COPY actions */
	uint64_t puts;	     /* PUT actions */
	uint64_t rank_dones; /* RANK_DONE actions */
	uint64_t reports;    /* transfer reports accepted */
	uint64_t errors;     /* ... of them with an error status */
	uint64_t unexpected; /* reports refused (-ENOENT): no such transfer in flight */
	uint64_t rounds;     /* BINOMIAL: rounds ordered */
};

struct tr_bcast_cfg {
	uint32_t nranks;	     /* >= 1, < TR_BCAST_NO_RANK */
	uint32_t root;		     /* < nranks: this process */
	uint64_t len;		     /* bytes to broadcast */
	enum tr_bcast_algo algo;
	uint64_t chunk;		     /* PIPELINE bytes per chunk, 0: default */
	uint32_t fanout;	     /* PIPELINE children per rank, 0: auto, 1: chain */
	uint32_t window;	     /* PIPELINE chunks in flight per link, 0: default */
	uint64_t auto_len;	     /* AUTO: pipeline from this many bytes, 0: default */
	uint32_t auto_ranks;	     /* AUTO: ... and this many ranks, 0: default */
	struct tr_bcast_rank *ranks; /* storage, nranks entries (no initialisation needed) */
};

struct tr_bcast {
	struct tr_bcast_cfg cfg; /* as resolved: algo, chunk, fanout, window never 0 */
	struct tr_bcast_stats stats;
	uint64_t nchunks;      /* 0 when len == 0 */
	uint64_t inflight;     /* transfers in flight */
	uint32_t ncomplete;    /* non-root ranks that hold all the data */
	uint32_t next_target;  /* GREEDY: lowest rank maybe not yet asked for */
	uint32_t cursor;       /* GREEDY: the sender served last */
	uint32_t round;	       /* BINOMIAL: the round in progress */
	uint32_t nrounds;      /* BINOMIAL: ceil(log2 N) */
	uint32_t round_left;   /* BINOMIAL: transfers of the round not yet reported */
	uint32_t rhead, rtail; /* ready queue (GREEDY: idle holders; BINOMIAL: the
				* round's senders; PIPELINE: links by child) */
	uint32_t lhead, ltail; /* release queue: ranks owed a RANK_DONE */
	uint32_t failed;       /* first failed rank */
	uint16_t status;       /* first failure's status, OK */
	bool started, aborted, finished;
};

const char *tr_bcast_algo_str(unsigned algo);
const char *tr_bcast_act_str(unsigned type);

/* Sets up an engine for one broadcast over the storage in cfg (which it
 * keeps using), resolving AUTO and the defaults.  Returns 0, or -EINVAL
 * (b untouched) for a bad cfg: nranks 0 or >= TR_BCAST_NO_RANK, root >=
 * nranks, no storage, unknown algo, window > TR_BCAST_MAX_WINDOW. */
int tr_bcast_init(struct tr_bcast *b, const struct tr_bcast_cfg *cfg);

/* Begins: the first transfers (or, with len 0 or one rank, everything).
 * Returns the number of actions; -EALREADY if started before, -EINVAL for
 * a bad array. */
int tr_bcast_start(struct tr_bcast *b, struct tr_bcast_act *acts, unsigned cap);

/* Transfer (src -> dst, chunk) finished with status (OK or an error;
 * PENDING is not a final status).  Returns the number of actions; -ENOENT
 * (counted in stats.unexpected) if no such transfer is in flight
 * (reported before, wrong source, never asked for); -EINVAL before start, for a
 * rank >= nranks, a status that is not final, or a bad array. */
int tr_bcast_xfer_done(struct tr_bcast *b, uint32_t src, uint32_t dst, uint64_t chunk,
		       enum triad_status status, struct tr_bcast_act *acts, unsigned cap);

/* Rank is gone, for reason status (an error, e.g. UNREACHABLE).  Aborts
 * unless the rank was released already or the broadcast is over (then
 * nothing but the rank's RANK_DONE, if still owed, is skipped).  Returns
 * the number of actions; -EINVAL before start, for the root, a rank >=
 * nranks, status OK or not final, or a bad array. */
int tr_bcast_rank_failed(struct tr_bcast *b, uint32_t rank, enum triad_status status,
			 struct tr_bcast_act *acts, unsigned cap);

/* The actions an earlier call had no room for.  Returns their number (0
 * when none are waiting), -EINVAL for a bad array. */
int tr_bcast_poll(struct tr_bcast *b, struct tr_bcast_act *acts, unsigned cap);

/* Room that lets every single call return all its actions at once. */
static inline unsigned tr_bcast_acts_max(const struct tr_bcast *b)
{
	uint64_t pipe = (uint64_t)b->cfg.fanout * b->cfg.window + b->cfg.window;
	uint64_t n = (uint64_t)b->cfg.nranks + 2;

	if (b->cfg.algo == TR_BCAST_PIPELINE && pipe + 4 > n)
		n = pipe + 4;
	return n > UINT32_MAX ? UINT32_MAX : (unsigned)n;
}

static inline const struct tr_bcast_stats *tr_bcast_stats(const struct tr_bcast *b)
{
	return &b->stats;
}

/* The algorithm in use (AUTO resolved). */
static inline enum tr_bcast_algo tr_bcast_algo(const struct tr_bcast *b)
{
	return b->cfg.algo;
}

static inline uint64_t tr_bcast_nchunks(const struct tr_bcast *b)
{
	return b->nchunks;
}

static inline uint64_t tr_bcast_inflight(const struct tr_bcast *b)
{
	return b->inflight;
}

/* DONE was emitted. */
static inline bool tr_bcast_finished(const struct tr_bcast *b)
{
	return b->finished;
}

/* Rank r (< nranks) holds all the data, as far as the root knows. */
static inline bool tr_bcast_holds(const struct tr_bcast *b, uint32_t r)
{
	return r == b->cfg.root || b->cfg.ranks[r].have == b->nchunks;
}

#endif
