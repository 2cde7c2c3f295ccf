/* The plane switch (docs/spec/plane-switching.md, after JP5310735B2) for
 * one peer: which plane each message or operation to the peer takes, its
 * nominal plane p (the home plane, or a pinned one) mapped to p itself
 * while p is usable, else to p's alternate.
 *
 * Per nominal plane p:
 *   alt[p]    the failover plane of p (the patent's switch-destination
 *             register): (p + 1) mod P at first; chosen again when p goes
 *             out, the first usable plane after p; kept (sticky) until it
 *             stops being usable itself; TR_PSW_NO_PLANE when none is.
 * and per peer the set of usable planes (neither failed nor drained).
 *
 * Only the patent's unordered half is here.  Its ordered half (the four
 * switch states per entry, one in-progress bit per stream, strict mode's
 * WAIT, a fault's RESEND of the message in progress, the drained report)
 * kept a message on one plane up to its last work request; triad keeps
 * order at the receiver by the stream's sequence numbers instead
 * (proto/stream), so nothing called it and it was removed.  Without
 * ordered messages an entry is in the patent's state 0 (NORMAL, use p)
 * while p is usable and in state 1 (SWITCH_PENDING, use alt[p]) while it
 * is not: states 2 and 3 are reached only by an ordered message's first
 * request.
 *
 * Plane events (the caller applies each to the switch of every peer):
 *   drain(k), fault(k)   k is not usable; alt[k] chosen again; every
 *                        entry p out of use whose alt[p] was k takes the
 *                        next usable plane after p
 *   restore(k)           k is usable; every entry p out of use that had
 *                        no alternate takes k
 * A fault is a drain that may take the last usable plane too: what it
 * flushed the caller posts again, through the switch, on a live plane, and
 * the receiver drops by sequence number what it already had.
 *
 * Return values: a function answers with an enum tr_psw_action (>= 0) and,
 * where it names a plane, *plane_p; or a negative errno for a misuse, and
 * then nothing changes.
 *
 * Pure: no clock, no I/O, no allocation, no locks; the caller serialises
 * access.  The structure is public so it can be embedded; write it only
 * through the functions. */
#ifndef TRIAD_PROTO_PLANE_SWITCH_H
#define TRIAD_PROTO_PLANE_SWITCH_H

#include <stdbool.h>
#include <stdint.h>

#include "triad.h"

#define TR_PSW_MAX_PLANES TRIAD_MAX_PLANES
#define TR_PSW_NO_PLANE 0xffu

/* What the caller must do. */
enum tr_psw_action {
	TR_PSW_NONE,	   /* nothing */
	TR_PSW_POST,	   /* post on *plane_p */
	TR_PSW_UNREACHABLE /* no usable plane: the message or operation fails */
};

struct tr_psw {
	uint8_t alt[TR_PSW_MAX_PLANES]; /* failover plane, TR_PSW_NO_PLANE when none */
	unsigned nplanes;
	unsigned usable; /* bit k: plane k neither failed nor drained */
};

/* Every plane usable, alt[p] = (p + 1) mod nplanes (TR_PSW_NO_PLANE when
 * nplanes is 1).  -EINVAL (sw untouched) unless 1 <= nplanes <=
 * TR_PSW_MAX_PLANES. */
int tr_psw_init(struct tr_psw *sw, unsigned nplanes);

/* ---- plane events ------------------------------------------------------- */

/* Planned drain of plane k (the patent's switch order).  NONE; NONE and no
 * change if k is not usable; -EBUSY (no change) if k is the last usable
 * plane; -EINVAL for k >= nplanes. */
int tr_psw_drain(struct tr_psw *sw, unsigned k);

/* Hard fault of plane k: as a drain, also of the last usable plane.
 * Returns UNREACHABLE when no usable plane is left, else NONE.  Calling it
 * for a plane not usable changes nothing.  -EINVAL for k >= nplanes.
 * *plane_p is not written: it named the plane of the ordered half's
 * RESEND, and goes once lib/core/peer.c's call drops it. */
int tr_psw_fault(struct tr_psw *sw, unsigned k, unsigned *plane_p);

/* Plane k is back (repaired, or the drain is over).  NONE; -EINVAL for
 * k >= nplanes. */
int tr_psw_restore(struct tr_psw *sw, unsigned k);

/* ---- the choice --------------------------------------------------------- */

/* A message or operation of nominal plane p: POST on *plane_p (p while it
 * is usable, else alt[p]), or UNREACHABLE.  -EINVAL for p >= nplanes. */
int tr_psw_unordered(const struct tr_psw *sw, unsigned p, unsigned *plane_p);

static inline bool tr_psw_usable(const struct tr_psw *sw, unsigned k)
{
	return k < sw->nplanes && (sw->usable >> k & 1u);
}

#endif
