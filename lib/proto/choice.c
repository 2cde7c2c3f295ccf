#include "proto/choice.h"

#include <errno.h>
#include <stddef.h>

_Static_assert(TR_CHOICE_MAX_PLANES <= UINT8_MAX, "a home plane fits a uint8_t");

/* The checks tr_choice_cfg_init() makes (choice.h): 0, or -EINVAL. */
static int cfg_check(const struct tr_choice_cfg *cfg)
{
	if (!cfg)
		return -EINVAL;
	if (cfg->alpha_pct < 1 || cfg->alpha_pct > 100)
		return -EINVAL;
	if (cfg->cont_threshold < 1)
		return -EINVAL;
	if (cfg->rules & ~(unsigned)TR_CHOICE_RULES)
		return -EINVAL;
	return 0;
}

int tr_choice_cfg_init(struct tr_choice_cfg *cfg, const struct tr_choice_cfg *want)
{
	static const struct tr_choice_cfg def = {
		.threshold = TR_CHOICE_DEF_THRESHOLD,
		.alpha_pct = TR_CHOICE_DEF_ALPHA_PCT,
		.cont_threshold = TR_CHOICE_DEF_CONT_THRESHOLD,
		.rules = TR_CHOICE_DEF_RULES,
	};

	if (!cfg)
		return -EINVAL;
	if (!want)
		want = &def;
	if (cfg_check(want))
		return -EINVAL;
	*cfg = *want;
	return 0;
}

void tr_choice_msg_init(struct tr_choice_msg *m, unsigned home)
{
	*m = (struct tr_choice_msg){ .home = (uint8_t)home };
}

void tr_choice_posted(struct tr_choice_msg *m, unsigned plane)
{
	if (plane != m->home)
		m->detoured = true;
}

int tr_choice_queued(struct tr_choice_plane *planes, unsigned nplanes, unsigned home)
{
	if (!planes || nplanes > TR_CHOICE_MAX_PLANES || home >= nplanes)
		return -EINVAL;
	if (planes[home].cont == UINT32_MAX)
		return -EOVERFLOW;
	planes[home].cont++;
	return 0;
}

int tr_choice_done(struct tr_choice_plane *planes, unsigned nplanes, unsigned home)
{
	if (!planes || nplanes > TR_CHOICE_MAX_PLANES || home >= nplanes)
		return -EINVAL;
	if (planes[home].cont == 0)
		return -ERANGE;
	planes[home].cont--;
	return 0;
}

/* Whether the trigger of every enabled rule holds for the home plane. */
static bool triggered(const struct tr_choice_cfg *cfg, const struct tr_choice_plane *planes,
		      unsigned nplanes, unsigned home)
{
	const struct tr_choice_plane *h = &planes[home];

	if (!cfg->rules)
		return false;
	if ((cfg->rules & TR_CHOICE_OCC) && !(h->occ > cfg->threshold))
		return false;
	if ((cfg->rules & TR_CHOICE_CONT_STATIC) && !(h->cont > cfg->cont_threshold))
		return false;
	if (cfg->rules & TR_CHOICE_CONT_MEAN) {
		uint64_t sum = 0;

		for (unsigned p = 0; p < nplanes; p++)
			sum += planes[p].cont;
		if (!((uint64_t)h->cont * nplanes > sum))
			return false;
	}
	return true;
}

/* The least loaded plane other than home that is live, has room and, if
 * scaled, is below alpha x occ[home]; -1 if there is none. */
static int candidate(const struct tr_choice_cfg *cfg, const struct tr_choice_plane *planes,
		     unsigned nplanes, unsigned home, bool scaled)
{
	uint64_t limit = (uint64_t)cfg->alpha_pct * planes[home].occ;
	int best = -1;

	for (unsigned i = 1; i < nplanes; i++) {
		unsigned d = (home + i) % nplanes;
		const struct tr_choice_plane *c = &planes[d];

		if (!c->live || !c->room)
			continue;
		if (scaled && !((uint64_t)c->occ * 100 < limit))
			continue;
		if (best < 0 || c->occ < planes[best].occ ||
		    (c->occ == planes[best].occ && c->cont < planes[best].cont))
			best = (int)d;
	}
	return best;
}

static void answer(struct tr_choice *out, int plane, enum tr_choice_why why, bool detour,
		   bool post)
{
	*out = (struct tr_choice){ .plane = plane, .why = why, .detour = detour, .post = post };
}

int tr_choice_decide(const struct tr_choice_cfg *cfg, const struct tr_choice_plane *planes,
		     unsigned nplanes, const struct tr_choice_msg *m, struct tr_choice *out)
{
	unsigned home;
	int d;

	if (cfg_check(cfg) || !planes || !m || !out)
		return -EINVAL;
	if (nplanes < 1 || nplanes > TR_CHOICE_MAX_PLANES || m->home >= nplanes)
		return -EINVAL;
	home = m->home;

	if (planes[home].live) {
		bool room = planes[home].room;

		if (m->detoured) {
			answer(out, (int)home, TR_CHOICE_WHY_SPENT, false, room);
			return 0;
		}
		if (!triggered(cfg, planes, nplanes, home)) {
			answer(out, (int)home, TR_CHOICE_WHY_HOME, false, room);
			return 0;
		}
		d = candidate(cfg, planes, nplanes, home, cfg->rules & TR_CHOICE_OCC);
		if (d < 0) {
			answer(out, (int)home, TR_CHOICE_WHY_HOLD, false, room);
			return 0;
		}
		if (!(cfg->rules & TR_CHOICE_OCC))
			answer(out, d, TR_CHOICE_WHY_CONT, true, true);
		else if (cfg->rules & ~(unsigned)TR_CHOICE_OCC)
			answer(out, d, TR_CHOICE_WHY_BOTH, true, true);
		else
			answer(out, d, TR_CHOICE_WHY_OCC, true, true);
		return 0;
	}

	if (m->detoured) {
		answer(out, TR_CHOICE_NONE, TR_CHOICE_WHY_SPENT, false, false);
		return 0;
	}
	d = candidate(cfg, planes, nplanes, home, false);
	if (d >= 0) {
		answer(out, d, TR_CHOICE_WHY_HOME_DOWN, true, true);
		return 0;
	}
	for (unsigned p = 0; p < nplanes; p++) {
		if (planes[p].live) {
			answer(out, TR_CHOICE_NONE, TR_CHOICE_WHY_NO_ROOM, false, false);
			return 0;
		}
	}
	answer(out, TR_CHOICE_NONE, TR_CHOICE_WHY_ALL_DOWN, false, false);
	return 0;
}
