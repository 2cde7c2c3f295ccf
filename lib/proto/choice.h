/* Adaptive plane choice for one message to one peer
 * (docs/spec/adaptive-plane-choice.md, after the decision rules of
 * ES2395955B2, application examples 2 and 3).
 *
 * The patent's router picks, in every arbitration cycle, between a
 * minimal route and a non-minimal one.  Here the host picks between
 *   the home plane  the message's minimal route: its static spread plane
 *                   to the peer (today (rank + peer) mod planes), and
 *   a detour        any other live plane: the non-minimal route.
 * A message takes at most one detour (the patent's global misrouting
 * limit of 1): once it was posted on a plane other than its home it never
 * detours again.
 *
 * Per plane the caller passes (struct tr_choice_plane):
 *   live   the lane to the peer is up: a plane that is not live is never
 *          chosen;
 *   room   the lane can take this message now (a send-queue entry, a
 *          flow-control slot of the message's priority, a buffer): a detour
 *          is taken only when possible now, it never blocks;
 *   occ    occupancy: what the library knows locally of the lane's queue,
 *          in the caller's unit (send work requests posted and not
 *          completed plus messages queued on the lane, say); the patent's
 *          credit-derived queue occupancy;
 *   cont   contention counter: how many messages to the peer have this
 *          plane as their home and are not finished, whichever plane they
 *          take (tr_choice_queued() when one is queued, tr_choice_done()
 *          when it completes, fails or is flushed for good).
 *
 * The rules (cfg.rules is a set of them; with none, every message takes
 * its home plane, as today):
 *
 *   OCC (example 2, threshold and scaled comparison):
 *     trigger    occ[home] > T
 *     candidate  occ[d] < alpha * occ[home], in integers
 *                occ[d] * 100 < alpha_pct * occ[home]
 *   CONT_STATIC (example 3, static threshold):
 *     trigger    cont[home] > cont_threshold
 *   CONT_MEAN (example 3, against the average):
 *     trigger    cont[home] > mean of cont over all nplanes planes, in
 *                integers cont[home] * nplanes > sum(cont)
 *   Combined (more than one rule in cfg.rules): a message detours only
 *     when every enabled trigger holds, and the candidate meets the OCC
 *     candidate condition whenever OCC is enabled.  The counters say many
 *     messages want the home plane, the occupancy confirms the detour is
 *     the shorter queue (the patent's "contention counters, optionally
 *     together with the queuing status").
 *
 *   Every candidate d must also be d != home, live[d] and room[d].  Among
 *   the candidates the least loaded is taken: lowest occ, then lowest
 *   cont, then the first in the order home+1, home+2, ... (mod nplanes).
 *   If a trigger holds but there is no candidate the message stays on its
 *   home plane (TR_CHOICE_WHY_HOLD).
 *
 * First match wins:
 *   1. home live, detour spent         -> home     (SPENT)
 *   2. home live, a detour qualifies   -> detour   (OCC, CONT or BOTH)
 *   3. home live                       -> home     (HOME or HOLD)
 *   4. home down, detour spent         -> none     (SPENT): only the
 *      failover path of docs/spec/plane-switching.md moves it now
 *   5. home down, a live plane with room (least loaded, no alpha or
 *      threshold: the home is no option) -> detour (HOME_DOWN)
 *   6. home down, live planes, none with room -> none (NO_ROOM): it waits
 *   7. nothing live                    -> none     (ALL_DOWN)
 * On the home plane the answer says whether to post now (room[home]) or
 * to wait there; a detour is always postable now.
 *
 * The decision is a pure function of the configuration, the per-plane
 * inputs and the message: the caller asks again on every scheduler pass
 * while the message is queued, with the current inputs, and gets the
 * current answer; a waiting message goes back to its home plane as soon
 * as congestion clears.  Once the message is posted the caller calls
 * tr_choice_posted(); it does not move again but through failover.
 *
 * Pure: no clock, no I/O, no allocation, no locks, no randomness (the
 * patent's "at random" is replaced by "least loaded", which the spec
 * allows); the caller serialises access. */
#ifndef TRIAD_PROTO_CHOICE_H
#define TRIAD_PROTO_CHOICE_H

#include <stdbool.h>
#include <stdint.h>

#include "triad.h"

#define TR_CHOICE_MAX_PLANES TRIAD_MAX_PLANES
#define TR_CHOICE_NONE (-1)

/* The rules, cfg.rules is any OR of them (0: home plane only). */
enum {
	TR_CHOICE_OCC = 1u << 0,	 /* occupancy: threshold T and alpha */
	TR_CHOICE_CONT_STATIC = 1u << 1, /* contention above cont_threshold */
	TR_CHOICE_CONT_MEAN = 1u << 2,	 /* contention above the mean */
	TR_CHOICE_RULES = (1u << 3) - 1
};

/* Defaults (policy: the control daemon will publish its own).
 * Occupancy is in the caller's unit; for work requests plus queued
 * messages on a lane of TRIAD_SQ_DEPTH = 128, 8 means the home lane has a
 * real backlog, and alpha 1/2 means a detour only to a lane with less
 * than half that backlog.  A queued message counts itself in its home's
 * contention, so cont_threshold is the number of unfinished messages
 * wanting one plane beyond which the static rule detours. */
#define TR_CHOICE_DEF_THRESHOLD 8
#define TR_CHOICE_DEF_ALPHA_PCT 50
#define TR_CHOICE_DEF_CONT_THRESHOLD 16
#define TR_CHOICE_DEF_RULES TR_CHOICE_OCC

struct tr_choice_cfg {
	uint32_t threshold;	 /* T: occ[home] above it allows a detour */
	uint32_t alpha_pct;	 /* alpha in hundredths, 1..100 */
	uint32_t cont_threshold; /* static contention threshold, >= 1 */
	unsigned rules;		 /* TR_CHOICE_OCC | _CONT_STATIC | _CONT_MEAN */
};

/* want NULL: the defaults.  Otherwise *want is checked and copied:
 * 1 <= alpha_pct <= 100 (alpha > 1 would detour to a busier plane, 0
 * never), cont_threshold >= 1 (0 would detour every queued message, it
 * counts itself), no rule bits beyond TR_CHOICE_RULES; any threshold.
 * Returns 0, or -EINVAL with cfg untouched. */
int tr_choice_cfg_init(struct tr_choice_cfg *cfg, const struct tr_choice_cfg *want);

/* What the caller knows of one plane towards the peer, now. */
struct tr_choice_plane {
	uint32_t occ;  /* occupancy of the lane */
	uint32_t cont; /* contention: unfinished messages whose home it is */
	bool live;     /* the lane is up */
	bool room;     /* the lane can take this message now */
};

/* One queued message. */
struct tr_choice_msg {
	uint8_t home;  /* its home (minimal) plane */
	bool detoured; /* it was posted once on another plane: no more detours */
};

void tr_choice_msg_init(struct tr_choice_msg *m, unsigned home);

/* The message was posted on plane: on a plane other than its home it has
 * spent its one detour. */
void tr_choice_posted(struct tr_choice_msg *m, unsigned plane);

/* Contention counters.  queued: a message with this home plane was
 * queued, cont[home] + 1 (-EOVERFLOW at UINT32_MAX).  done: it finished
 * for good (completed, failed, or flushed and not sent again),
 * cont[home] - 1 (-ERANGE if already 0).  -EINVAL if home >= nplanes or
 * nplanes > TR_CHOICE_MAX_PLANES.  Counters unchanged on error. */
int tr_choice_queued(struct tr_choice_plane *planes, unsigned nplanes, unsigned home);
int tr_choice_done(struct tr_choice_plane *planes, unsigned nplanes, unsigned home);

/* Why the plane was chosen (for counters and the trace). */
enum tr_choice_why {
	TR_CHOICE_WHY_HOME,	 /* home live, no rule asks for a detour */
	TR_CHOICE_WHY_HOLD,	 /* a rule asks for a detour, no plane qualifies: home */
	TR_CHOICE_WHY_SPENT,	 /* the detour was spent: home, or none if it is down */
	TR_CHOICE_WHY_OCC,	 /* detour by the occupancy rule */
	TR_CHOICE_WHY_CONT,	 /* detour by a contention rule */
	TR_CHOICE_WHY_BOTH,	 /* detour by the occupancy and contention rules */
	TR_CHOICE_WHY_HOME_DOWN, /* home down: detour to a live plane */
	TR_CHOICE_WHY_NO_ROOM,	 /* home down, no live plane has room now: none, wait */
	TR_CHOICE_WHY_ALL_DOWN,	 /* no plane is live: none */
	TR_CHOICE_NWHY
};

struct tr_choice {
	int plane;		/* the plane, or TR_CHOICE_NONE */
	enum tr_choice_why why;
	bool detour;		/* plane is not the home plane */
	bool post;		/* post now; false: wait (on plane, or anywhere if none) */
};

/* The decision for m over planes[0 .. nplanes-1] (rules above); changes
 * nothing.  Returns 0, or -EINVAL (out untouched) if cfg fails
 * tr_choice_cfg_init()'s checks, nplanes is 0 or above TR_CHOICE_MAX_PLANES, or
 * m->home >= nplanes. */
int tr_choice_decide(const struct tr_choice_cfg *cfg, const struct tr_choice_plane *planes,
		     unsigned nplanes, const struct tr_choice_msg *m, struct tr_choice *out);

#endif
