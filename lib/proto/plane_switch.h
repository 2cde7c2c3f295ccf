/* The order-keeping plane switch (docs/spec/plane-switching.md, after
 * JP5310735B2) for one peer stream: which plane each work request to the
 * peer takes, so that a plane is left or taken back only at a message
 * boundary, never in the middle of an ordered message.
 *
 * Per nominal plane p (the plane a message asks for: its home plane, or a
 * pinned one) one entry:
 *   state[p]  one of the four states below (the patent's 0 to 3)
 *   alt[p]    the failover plane of p: the first usable plane after p,
 *             (p + 1) mod P when every plane is usable (the patent's
 *             switch-destination register); chosen when p is left and
 *             kept (sticky) until it stops being usable itself
 *   last[p]   the plane of p's latest ordered message (strict mode)
 * and per stream:
 *   inprog    an ordered message has started and its last work request is
 *             not posted yet (the patent's in-progress register, one per
 *             sending processor: a stream sends one ordered message at a
 *             time), with msg_nominal and msg_plane, the nominal plane of
 *             that message and the plane all its work requests take.
 *
 * States, and the plane of each work request (nominal plane p):
 *
 *   state            ordered, in progress   ordered, first      unordered
 *   NORMAL           p (= msg_plane)        p                   p
 *   SWITCH_PENDING   msg_plane (stays)      alt[p], ->SWITCHED  alt[p]
 *   SWITCHED         alt[p] (= msg_plane)   alt[p]              alt[p]
 *   RESTORE_PENDING  alt[p] (= msg_plane)   p, ->NORMAL         p
 *
 * A last work request clears inprog and never changes a state; a message
 * of one work request is first and last at once: it makes the transition
 * of its first request and leaves inprog clear.  Unordered requests never
 * read or change inprog or a state.
 *
 * Plane events (usable = neither failed nor drained; the caller applies
 * each to the switch of every peer):
 *
 *   event               entry p == k                 entry p != k, alt[p] == k
 *   drain(k), fault(k)  NORMAL -> SWITCH_PENDING     SWITCH_PENDING: new alt
 *                       RESTORE_PENDING -> SWITCHED  SWITCHED: new alt; with p's
 *                                                      message in progress on k:
 *                                                      -> SWITCH_PENDING (it
 *                                                      finishes on k)
 *   restore(k)          SWITCHED -> RESTORE_PENDING  (alt[p] == NO_PLANE: k)
 *                       SWITCH_PENDING -> NORMAL (or
 *                         RESTORE_PENDING when p's message in progress is
 *                         on another plane)
 *
 * A fault is a drain whose plane cannot carry anything any more (its RC QP
 * flushed every work request posted on it): after the drain's transitions,
 * a message in progress on k is aborted and starts again at once as a new
 * message (a boundary), on the plane its entry now gives a first request
 * (SWITCH_PENDING -> SWITCHED, RESTORE_PENDING -> NORMAL): the action is
 * RESEND, and the caller posts again, there and in sequence order, what k
 * lost (tr_psw_resend() gives the plane of each lost message), then goes on
 * with the message there.  The receiver drops by sequence number what it
 * already had.  With no usable plane left, the action is UNREACHABLE:
 * every message fails until a plane is restored.
 *
 * Drained.  Plane k is drained for this stream when it is not usable,
 * nothing will be posted on it (no entry gives k to a new work request:
 * the transitions above see to it; the message in progress is not on k)
 * and nothing of the stream is in flight on it.  An entry left in
 * SWITCH_PENDING with no message in progress (an idle stream) posts
 * nothing on k: it does not keep k from being drained.
 * tr_psw_drained() reports each plane once, until it is restored.
 *
 * In flight.  The switch does not count completions: the caller passes the
 * stream's counts of copies in flight per plane (struct tr_stream_tx's
 * inflight[], as tr_stream_tx_inflight() reads them), whose one owner is
 * proto/stream.  NULL stands for nothing in flight.
 *
 * Strict mode (per-peer FIFO across messages): a message of nominal plane
 * p whose plane differs from last[p] waits (action WAIT, nothing changes)
 * until last[p] has nothing of the stream in flight; it counts every
 * message of the peer on that plane, whatever its nominal plane, so it may
 * wait longer than needed, never less.  So every message of p in flight is
 * on one plane, and messages of p arrive in order.  A peer whose messages
 * all have one nominal plane (the home plane) gets per-peer FIFO.  Without
 * strict mode nothing is ever held back: only the choice of plane waits
 * for a message boundary.
 *
 * Return values: a function answers with an enum tr_psw_action (>= 0) and,
 * where it names a plane, *plane_p; or a negative errno for a misuse, and
 * then nothing changes.
 *
 * Pure: no clock, no I/O, no allocation, no locks; the caller serialises
 * access.  The structure is public so it can be embedded; read it through
 * the accessors, write it only through the functions. */
#ifndef TRIAD_PROTO_PLANE_SWITCH_H
#define TRIAD_PROTO_PLANE_SWITCH_H

#include <stdbool.h>
#include <stdint.h>

#include "triad.h"

#define TR_PSW_MAX_PLANES TRIAD_MAX_PLANES
#define TR_PSW_NO_PLANE 0xffu

/* The state of one (stream, nominal plane) entry, numbered as the patent's
 * switch-state register. */
enum tr_psw_state {
	TR_PSW_NORMAL,		/* 0: use p */
	TR_PSW_SWITCH_PENDING,	/* 1: p is being left: the next ordered message goes to alt[p] */
	TR_PSW_SWITCHED,	/* 2: use alt[p] */
	TR_PSW_RESTORE_PENDING, /* 3: p is back: the next ordered message goes to p */
	TR_PSW_NSTATES
};

/* What the caller must do. */
enum tr_psw_action {
	TR_PSW_NONE,	    /* nothing */
	TR_PSW_POST,	    /* post the work request on *plane_p */
	TR_PSW_WAIT,	    /* strict: wait until plane *plane_p has nothing in flight, then ask again */
	TR_PSW_RESEND,	    /* the message in progress lost its plane: post again what was lost,
			     * then the rest of the message, on *plane_p */
	TR_PSW_UNREACHABLE, /* no usable plane: the message fails (the one in progress too) */
	TR_PSW_NACTIONS
};

/* tr_psw_init() flags */
#define TR_PSW_STRICT 0x1u /* per-peer FIFO across messages */

/* tr_psw_post() flags, as the patent's packet header */
#define TR_PSW_ORDERED 0x1u /* the request belongs to an ordered message */
#define TR_PSW_LAST 0x2u    /* ... and is its last one */

struct tr_psw_entry {
	uint8_t state; /* enum tr_psw_state */
	uint8_t alt;   /* failover plane, TR_PSW_NO_PLANE when none is usable */
	uint8_t last;  /* plane of the latest ordered message, TR_PSW_NO_PLANE before any */
};

struct tr_psw {
	struct tr_psw_entry ent[TR_PSW_MAX_PLANES];
	unsigned nplanes;
	unsigned usable;   /* bit k: plane k neither failed nor drained */
	unsigned failed;   /* bit k: plane k failed (hard fault), not restored since */
	unsigned reported; /* bit k: plane k reported drained, not restored since */
	bool strict;
	bool inprog;	     /* an ordered message is in progress */
	uint8_t msg_nominal; /* its nominal plane (valid while inprog) */
	uint8_t msg_plane;   /* the plane of all its requests (valid while inprog) */
};

/* "normal", "switch_pending", "switched", "restore_pending"; "?" else. */
const char *tr_psw_state_str(unsigned state);
/* "none", "post", "wait", "resend", "unreachable"; "?" else. */
const char *tr_psw_action_str(unsigned action);

/* Every plane usable, every entry NORMAL with alt (p + 1) mod nplanes
 * (TR_PSW_NO_PLANE when nplanes is 1), nothing in progress.  flags:
 * TR_PSW_STRICT or 0.  -EINVAL (sw untouched) unless 1 <= nplanes <=
 * TR_PSW_MAX_PLANES and flags are known. */
int tr_psw_init(struct tr_psw *sw, unsigned nplanes, unsigned flags);

/* ---- plane events ------------------------------------------------------- */

/* Planned drain of plane k (the patent's switch order): the transitions of
 * the table above; a message in progress on k finishes there.  NONE; NONE
 * and no change if k is not usable; -EBUSY (no change) if k is the last
 * usable plane; -EINVAL for k >= nplanes. */
int tr_psw_drain(struct tr_psw *sw, unsigned k);

/* Hard fault of plane k: as a drain (also of the last usable plane), then
 * a message in progress on k starts again: RESEND on *plane_p.  Returns
 * UNREACHABLE when no usable plane is left (a message in progress then
 * fails: inprog is cleared), else NONE.  Calling it again for a failed
 * plane changes nothing.  -EINVAL for k >= nplanes. */
int tr_psw_fault(struct tr_psw *sw, unsigned k, unsigned *plane_p);

/* Plane k is back (repaired, or the drain is over): the transitions of the
 * table above.  NONE; -EINVAL for k >= nplanes. */
int tr_psw_restore(struct tr_psw *sw, unsigned k);

/* ---- work requests ------------------------------------------------------ */

/* The first request of an ordered message of nominal plane p: POST on
 * *plane_p, which every request of the message takes (tr_psw_msg_plane()),
 * with the transition of the table (inprog set); WAIT (strict mode, nothing
 * changes); UNREACHABLE (no plane, nothing changes).  -EBUSY if a message
 * is in progress, -EINVAL for p >= nplanes. */
int tr_psw_msg_start(struct tr_psw *sw, unsigned p, const unsigned inflight[TR_PSW_MAX_PLANES],
		     unsigned *plane_p);

/* The last request of the message in progress was posted: inprog cleared,
 * no state changes.  NONE, or -EINVAL if no message is in progress. */
int tr_psw_msg_end(struct tr_psw *sw);

/* An unordered request of nominal plane p: POST on *plane_p, or
 * UNREACHABLE.  Reads and changes neither inprog nor a state.  -EINVAL
 * for p >= nplanes. */
int tr_psw_unordered(const struct tr_psw *sw, unsigned p, unsigned *plane_p);

/* One request as the patent's flowchart takes it: unordered without
 * TR_PSW_ORDERED; ordered, it is a first request when nothing is in
 * progress (tr_psw_msg_start()), and with TR_PSW_LAST a last one
 * (tr_psw_msg_end() after it).  -EBUSY if a message of another nominal
 * plane is in progress; -EINVAL for p >= nplanes or unknown flags. */
int tr_psw_post(struct tr_psw *sw, unsigned p, unsigned flags,
		const unsigned inflight[TR_PSW_MAX_PLANES], unsigned *plane_p);

/* A message of nominal plane p was lost with its plane (it waits in the
 * stream) and is posted again: POST on *plane_p, the plane of p's message
 * in progress if it is p's and usable, else the plane of p's next first
 * request (no transition); last[p] follows.  UNREACHABLE if none.  Call
 * it for the lost messages in sequence order, before any new request.
 * -EINVAL for p >= nplanes. */
int tr_psw_resend(struct tr_psw *sw, unsigned p, unsigned *plane_p);

/* ---- drained ------------------------------------------------------------ */

/* Whether plane k is drained for this stream (see above); false for
 * k >= nplanes. */
bool tr_psw_is_drained(const struct tr_psw *sw, unsigned k,
		       const unsigned inflight[TR_PSW_MAX_PLANES]);

/* The planes drained and not reported since they went out: bit k set for
 * each, now reported.  Call it after any event that can end a drain: a
 * completion, a message's last request, a drain, a fault. */
unsigned tr_psw_drained(struct tr_psw *sw, const unsigned inflight[TR_PSW_MAX_PLANES]);

/* ---- accessors ---------------------------------------------------------- */

/* State of nominal plane p; p must be < nplanes. */
static inline enum tr_psw_state tr_psw_state(const struct tr_psw *sw, unsigned p)
{
	return (enum tr_psw_state)sw->ent[p].state;
}

/* alt[p], TR_PSW_NO_PLANE when none; p must be < nplanes. */
static inline unsigned tr_psw_alt(const struct tr_psw *sw, unsigned p)
{
	return sw->ent[p].alt;
}

static inline bool tr_psw_inprog(const struct tr_psw *sw)
{
	return sw->inprog;
}

/* The plane of the message in progress, TR_PSW_NO_PLANE if none. */
static inline unsigned tr_psw_msg_plane(const struct tr_psw *sw)
{
	return sw->inprog ? sw->msg_plane : TR_PSW_NO_PLANE;
}

static inline bool tr_psw_usable(const struct tr_psw *sw, unsigned k)
{
	return k < sw->nplanes && (sw->usable >> k & 1u);
}

#endif
