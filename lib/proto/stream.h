/* The per-peer message stream, for one peer and one direction: sequence
 * numbers, which plane carries each unacknowledged message, the resend of
 * a message whose plane failed, and the receiver's duplicate drop.
 *
 * Sender (struct tr_stream_tx).  Every message to the peer gets the next
 * sequence number, whatever plane it takes.  The sender remembers, for
 * each message not yet acknowledged, the plane of its current copy.  A
 * copy ends in one of two ways:
 *   - its send completes successfully: tr_stream_tx_acked();
 *   - its plane fails (the RC QP goes to error and flushes its work
 *     requests, delivered or not: RC cannot tell which arrived):
 *     tr_stream_tx_lost() (or tr_stream_tx_plane_lost() for all of a
 *     plane's at once) leaves the message waiting for a new copy, and
 *     tr_stream_tx_moved() records that copy once it is posted on a live
 *     plane.  The receiver drops the copy it already has, if any.
 *
 * The window.  At most TR_STREAM_WINDOW (= TR_SEQ_WINDOW) messages are
 * unacknowledged at a time: tr_stream_tx_assign() says -EAGAIN beyond.
 * Every message below the oldest unacknowledged one (base) was accepted
 * by the receiver, so the receiver's lowest missing number is at least
 * base and every number in flight, a late resend of base included, is at
 * most base + TR_STREAM_WINDOW - 1: within the receiver's window, never
 * TR_SEQ_TOO_FAR.  This needs "acknowledged" to mean that the receiver's
 * stream has accepted the message, or will before any message sent after
 * the acknowledgement.  An RC send completion says only that the message
 * reached the peer's receive queue: it is enough when the peer handles
 * its planes' arrivals without letting one plane lag, otherwise the
 * acknowledgement must come from the peer itself.
 *
 * Receiver (struct tr_stream_rx): proto/seq's duplicate filter plus
 * counters.  Both sides start at the same first number, agreed when the
 * peer's connection is set up.
 *
 * Pure: no clock, no I/O, no allocation, no locks; the caller serialises
 * access.  Sequence numbers compare in serial arithmetic (RFC 1982), so
 * the stream runs across 2^32. */
#ifndef TRIAD_PROTO_STREAM_H
#define TRIAD_PROTO_STREAM_H

#include <stdbool.h>
#include <stdint.h>

#include "base/bits.h"
#include "proto/seq.h"
#include "triad.h"

#define TR_STREAM_WINDOW TR_SEQ_WINDOW
#define TR_STREAM_MAX_PLANES TRIAD_MAX_PLANES
/* The "plane" of a message whose copy was lost and is not sent again yet. */
#define TR_STREAM_NO_PLANE 0xffu

/* ---- sender ------------------------------------------------------------ */

struct tr_stream_tx {
	uint32_t next;	/* next sequence number to assign */
	uint32_t base;	/* oldest not acknowledged; == next when none is */
	uint64_t acked; /* bit i: base + i acknowledged (bit 0 always clear) */
	/* By seq % TR_STREAM_WINDOW, for base <= seq < next not acked: the
	 * plane of its current copy, or TR_STREAM_NO_PLANE while it waits to
	 * be sent again; TR_STREAM_NO_PLANE for every other entry. */
	uint8_t plane[TR_STREAM_WINDOW];
	unsigned inflight[TR_STREAM_MAX_PLANES]; /* copies on each plane */
	unsigned waiting; /* messages lost and not sent again yet */
	uint64_t resent;  /* copies sent again (tr_stream_tx_moved()), ever */
};

/* An empty stream whose first message will be number first. */
void tr_stream_tx_init(struct tr_stream_tx *tx, uint32_t first);

/* A new message goes out on plane: *seq_p gets its number.  Returns 0;
 * -EAGAIN when TR_STREAM_WINDOW messages are unacknowledged (the message
 * waits for an acknowledgement); -EINVAL for plane >= TR_STREAM_MAX_PLANES.
 * Nothing changes on error. */
int tr_stream_tx_assign(struct tr_stream_tx *tx, unsigned plane, uint32_t *seq_p);

/* The current copy of seq was sent successfully: seq is acknowledged, its
 * plane has one copy fewer in flight, and base moves past every
 * acknowledged number.  -EINVAL (nothing changes) if seq has no copy in
 * flight: never assigned, already acknowledged, or waiting after a loss. */
int tr_stream_tx_acked(struct tr_stream_tx *tx, uint32_t seq);

/* The current copy of seq failed (its plane flushed it): seq waits for a
 * new copy, on no plane.  -EINVAL (nothing changes) if seq has no copy in
 * flight. */
int tr_stream_tx_lost(struct tr_stream_tx *tx, uint32_t seq);

/* Every copy in flight on plane failed, as tr_stream_tx_lost() for each.
 * Returns how many; 0 for plane >= TR_STREAM_MAX_PLANES. */
unsigned tr_stream_tx_plane_lost(struct tr_stream_tx *tx, unsigned plane);

/* A new copy of unacknowledged seq was posted on plane, after its previous
 * copy failed: the caller has seen that copy's failure, or reported it
 * with tr_stream_tx_lost() (seq is waiting).  The previous copy's plane,
 * if any, has one fewer in flight; plane one more.  Moving a copy to the
 * plane it is on (a plane that was re-established) changes only the
 * resent counter.  -EINVAL (nothing changes) if seq is not unacknowledged
 * or plane >= TR_STREAM_MAX_PLANES. */
int tr_stream_tx_moved(struct tr_stream_tx *tx, uint32_t seq, unsigned plane);

/* The plane of unacknowledged seq's current copy, TR_STREAM_NO_PLANE if it
 * is waiting; -EINVAL if seq is not unacknowledged. */
int tr_stream_tx_plane(const struct tr_stream_tx *tx, uint32_t seq);

/* The oldest unacknowledged message whose copy is on plane (with
 * TR_STREAM_NO_PLANE: the oldest waiting one) in *seq_p.  Returns 0, or
 * -ENOENT if there is none.  Resending after a failure:
 *   tr_stream_tx_plane_lost(tx, dead);
 *   while (!tr_stream_tx_first_on(tx, TR_STREAM_NO_PLANE, &s))
 *           { post s on live; tr_stream_tx_moved(tx, s, live); } */
int tr_stream_tx_first_on(const struct tr_stream_tx *tx, unsigned plane, uint32_t *seq_p);

/* Copies in flight on plane (0 for plane >= TR_STREAM_MAX_PLANES). */
static inline unsigned tr_stream_tx_inflight(const struct tr_stream_tx *tx, unsigned plane)
{
	return plane < TR_STREAM_MAX_PLANES ? tx->inflight[plane] : 0;
}

/* Messages assigned and not acknowledged (in flight or waiting). */
static inline unsigned tr_stream_tx_unacked(const struct tr_stream_tx *tx)
{
	return tx->next - tx->base - tr_popcount64(tx->acked);
}

/* Messages lost and not sent again yet. */
static inline unsigned tr_stream_tx_waiting(const struct tr_stream_tx *tx)
{
	return tx->waiting;
}

/* Whether tr_stream_tx_assign() would succeed on a valid plane. */
static inline bool tr_stream_tx_can_assign(const struct tr_stream_tx *tx)
{
	return tx->next - tx->base < TR_STREAM_WINDOW;
}

/* ---- receiver ---------------------------------------------------------- */

struct tr_stream_rx {
	struct tr_seq_rx seq;
	uint64_t delivered;  /* messages accepted, ever */
	uint64_t duplicates; /* copies dropped as seen before, ever */
	uint64_t too_far;    /* numbers beyond the window (a broken sender), ever */
};

/* A receiver expecting first as the first number, counters at 0. */
void tr_stream_rx_init(struct tr_stream_rx *rx, uint32_t first);

/* A message numbered seq arrived, on whatever plane: TR_SEQ_NEW, deliver
 * it; TR_SEQ_DUPLICATE, drop it (a copy sent again after a plane failure,
 * whose first copy had arrived); TR_SEQ_TOO_FAR, drop it and treat the
 * peer as broken (a correct sender never does this, see the window). */
enum tr_seq_verdict tr_stream_rx_accept(struct tr_stream_rx *rx, uint32_t seq);

/* The lowest number not received yet: everything below was delivered. */
static inline uint32_t tr_stream_rx_next(const struct tr_stream_rx *rx)
{
	return rx->seq.next;
}

#endif
