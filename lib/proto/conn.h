/* Who connects a lane, and what a connection request meets.
 *
 * Eager (TRIAD_CONNECT=eager): the lower rank of a pair connects every lane
 * at triad_init, the higher accepts.  Lazy: either side may be first to
 * use the pair, so either may send the first request; both may send it at
 * the same moment on the same plane.  The rule that settles it, so that a
 * pair never ends with two QPs on a plane, nor with none:
 *
 *   - the lower rank's request always wins: the higher rank accepts it,
 *     abandoning an attempt of its own still in flight;
 *   - the lower rank rejects the higher rank's request while its own is in
 *     flight (the higher rank is about to accept that one), or once the lane
 *     has been up before (the lower rank rebuilds lanes that broke); a lane
 *     it holds up is stale then (the higher rank asks only for a lane it
 *     does not have): dropped, and rebuilt by the lower rank;
 *   - an accept already under way, or a lane still draining, rejects: the
 *     requester retries.
 *
 * Pure: the caller (lib/core/lane.c) says what its lane is doing and
 * carries out the verdict. */
#ifndef TRIAD_PROTO_CONN_H
#define TRIAD_PROTO_CONN_H

#include <stdint.h>

/* What the lane the request is for is doing, as its owner sees it. */
enum tr_conn_phase {
	TR_CONN_IDLE,	   /* no connection and no attempt in flight (never, or given up) */
	TR_CONN_ATTEMPT,   /* our own request is in flight */
	TR_CONN_ACCEPTING, /* we accepted a request, not yet established */
	TR_CONN_UP,
	TR_CONN_BROKEN,	   /* broken, work requests still coming back */
};

struct tr_conn_view {
	int me, from;	   /* our rank, the requester's (different) */
	enum tr_conn_phase phase;
	int lazy;	   /* TRIAD_CONNECT=lazy */
	int ever_up;	   /* the lane has been up before */
	int closing;
};

enum tr_conn_verdict {
	TR_CONN_REJECT,		/* refuse; the requester retries or gives up */
	TR_CONN_ACCEPT,
	TR_CONN_ACCEPT_ABANDON, /* drop our own attempt (or the connection we accepted
				 * and that never came up), accept this one */
	TR_CONN_REJECT_STALE,	/* ours is stale (the peer rebuilds what it lost): drop
				 * it and refuse; the peer's next attempt finds it gone */
};

enum tr_conn_verdict tr_conn_on_request(const struct tr_conn_view *v);
const char *tr_conn_verdict_str(enum tr_conn_verdict v);

/* 1 when rank me may send the first request of a lane to peer: always the
 * lower rank; with lazy connection also the higher, for a lane never up. */
static inline int tr_conn_may_start(int me, int peer, int lazy, int ever_up)
{
	return me < peer || (lazy && !ever_up);
}

/* 1 when rank me rebuilds a lane to peer that broke after it was up. */
static inline int tr_conn_rebuilds(int me, int peer)
{
	return me < peer;
}

/* Two runs of one world file in a row (a script that calls two triad
 * programs, a job requeued after a crash) share the job key and every
 * address: a rank of the second run can meet a rank of the first that is
 * still alive, finishing or rebuilding what the other's exit broke.  Each
 * process is named by a random incarnation (never 0), sent in both
 * directions of a connection's set-up with the one the sender knows of the
 * receiver's rank (0 until a lane to it was up).  A connection is made only
 * between processes that do not contradict what either knows:
 *
 *   known      the incarnation we know of the other side's rank (0: none)
 *   theirs     the other side's own
 *   they_know  ours as the other side knows it (0: none)
 *
 * Checked by the receiver of a request, and by the requester on the
 * accept or the rejection that answers it. */
enum tr_conn_run {
	TR_CONN_SAME_RUN,    /* nothing contradicts: the same processes, or strangers */
	TR_CONN_LATER_RUN,   /* another process than the one we know answers for its
			      * rank: ours left, this one is of a later run */
	TR_CONN_EARLIER_RUN, /* it knows another process as our rank: it is of an
			      * earlier run, and its peer of our rank left */
};

static inline enum tr_conn_run tr_conn_same_run(uint64_t me, uint64_t known, uint64_t theirs,
						uint64_t they_know)
{
	if (they_know && they_know != me)
		return TR_CONN_EARLIER_RUN;
	if (known && theirs != known)
		return TR_CONN_LATER_RUN;
	return TR_CONN_SAME_RUN;
}

#endif
