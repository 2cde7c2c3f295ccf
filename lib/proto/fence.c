/* The redo fence, without I/O: see fence.h. */
#include "proto/fence.h"

void tr_fence_lane_broke(struct tr_fence_lane *f, int peer_closed)
{
	f->down_gen++;
	if (peer_closed)
		f->fenced_gen = f->down_gen;
}

void tr_fence_lane_up(struct tr_fence_lane *f)
{
	f->fenced_gen = f->down_gen;
}

int tr_fence_lane_answer(struct tr_fence_lane *f, uint32_t gen)
{
	if ((int32_t)(gen - f->fenced_gen) <= 0 || (int32_t)(gen - f->down_gen) > 0)
		return 0;
	f->fenced_gen = gen;
	return 1;
}

/* Every break of each lane in planes is fenced. */
static int clear(const struct tr_fence_lane *lanes, int nplanes, unsigned planes)
{
	for (int q = 0; q < nplanes; q++)
		if (planes >> q & 1u && lanes[q].fenced_gen != lanes[q].down_gen)
			return 0;
	return 1;
}

int tr_fence_holds(const struct tr_fence_lane *lanes, int nplanes, unsigned planes,
		   unsigned nheld, int moot)
{
	return !moot && (nheld || !clear(lanes, nplanes, planes));
}

int tr_fence_may_go(const struct tr_fence_lane *lanes, int nplanes, unsigned planes, int moot)
{
	return moot || clear(lanes, nplanes, planes);
}
