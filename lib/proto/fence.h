/* The redo fence, without I/O (docs/spec/plane-switching.md, "the redo
 * fence").  A WRITE that a break flushed may have been executed, or not, or
 * may still be on its way to the peer: it is executed by the peer's end of
 * the broken connection whenever it arrives, for as long as that end lives.
 * So an operation one of whose WRITEs a break flushed is done again, or
 * completed, only once the peer's end of that connection can execute
 * nothing more.
 *
 * Per (peer, plane) lane the fence counts the lane's breaks (down_gen) and
 * remembers the latest break known fenced (fenced_gen): the peer answered
 * that it moved its end to the error state (it answers a question naming
 * the break's count once it has), or it closed that end itself before we
 * noticed, or the lane was connected again (the peer accepts a new
 * connection on a plane only once its old end there is gone).  An
 * operation remembers the planes on which a break flushed one of its
 * WRITEs; it is clear once each of those lanes has every break fenced.
 * Held operations go in the order they came: the caller keeps the queue
 * and asks tr_fence_holds() and tr_fence_may_go().
 *
 * tests/unit/test_fence.c checks it exhaustively against a model of both
 * ends, the connections' incarnations and the WRITEs still able to land:
 * no operation completes, nor is done again, while an earlier attempt of it
 * can still land, and nothing is held for good. */
#ifndef TRIAD_PROTO_FENCE_H
#define TRIAD_PROTO_FENCE_H

#include <stdint.h>

struct tr_fence_lane {
	uint32_t down_gen;   /* the lane's breaks */
	uint32_t fenced_gen; /* the latest of them known fenced */
};

/* The lane broke (the count the question to the peer carries is down_gen
 * after this); peer_closed: the peer closed its end first (its notice
 * came while the lane was up), which fences the break at once. */
void tr_fence_lane_broke(struct tr_fence_lane *f, int peer_closed);

/* The lane is connected again: every break of it is fenced. */
void tr_fence_lane_up(struct tr_fence_lane *f);

/* The peer's answer for break gen of the lane: it fences every break up to
 * gen (serial arithmetic; a gen from before the latest fenced one, or
 * beyond the lane's count, changes nothing).  Returns 1 when it fenced a
 * break not fenced before. */
int tr_fence_lane_answer(struct tr_fence_lane *f, uint32_t gen);

/* An operation whose WRITEs breaks flushed on planes (bit q: lanes[q]) is
 * held when something is held already (nheld: order) or a break of one of
 * those lanes is not fenced yet; moot: nothing of the peer's can land any
 * more, or nobody cares (the peer is gone or lost, or we are closing). */
int tr_fence_holds(const struct tr_fence_lane *lanes, int nplanes, unsigned planes,
		   unsigned nheld, int moot);

/* The oldest held entry may go: moot, or every break of its planes'
 * lanes is fenced (an entry with no planes only waits its turn). */
int tr_fence_may_go(const struct tr_fence_lane *lanes, int nplanes, unsigned planes, int moot);

#endif
