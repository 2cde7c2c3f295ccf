/* The message stream between two ranks: one direction, one priority.
 *
 * Every message of the stream carries the next sequence number, whatever
 * plane takes it; the receiver hands each number over once, in any order
 * the planes bring them, and drops a second copy (a message sent again on
 * another plane after a break, whose first copy had arrived).  This engine
 * holds every decision about the numbers; lib/core carries out what it says
 * (peer.c: posting, resending, SEQ_SKIP, parking).
 *
 * Sender (struct tr_stream_tx).  A number is *settled* once the peer has it
 * for sure: its message arrived (the RC send completed), or it was lost for
 * good and a SEQ_SKIP carrying it arrived.  base is the lowest unsettled
 * number.
 *   - Bounded: at most TR_STREAM_AHEAD numbers are unsettled at a time;
 *     tr_stream_tx_assign() says -EAGAIN beyond (the caller's queues, and
 *     the memory they take, are bounded by it).
 *   - Window: a message is posted only while its number is below base +
 *     window (tr_stream_tx_may_post()).  The receiver has everything below
 *     base in its buffers or handled, so what it sees beyond its own
 *     window is bounded by its receive buffers (it parks those).
 *   - A break gives back what it flushed: sent again (the same number) on
 *     a live plane, or lost for good (tr_stream_tx_lost()).  Lost numbers
 *     are told to the peer, lowest first and only within the window, by
 *     tr_stream_tx_skips(); a SEQ_SKIP that is lost in turn gives its
 *     numbers back (tr_stream_tx_lost() again).  So every number ends
 *     delivered once or skipped, and the window always moves again.
 *
 * Receiver (struct tr_stream_rx): proto/seq's filter, a window of the same
 * size, and a count of what is parked beyond it.  A number beyond the
 * window is parked by the caller (PARK) and handled once the window
 * reaches it (tr_stream_rx_fits()); more parked than the caller's bound
 * means a sender that broke the protocol (BROKEN).
 *
 * Pure: no clock, no I/O, no allocation, no locks; the caller serialises
 * access.  Numbers compare in serial arithmetic (RFC 1982): the stream runs
 * across 2^32. */
#ifndef TRIAD_PROTO_STREAM_H
#define TRIAD_PROTO_STREAM_H

#include <stdbool.h>
#include <stdint.h>

#include "base/bits.h"
#include "proto/seq.h"

#define TR_STREAM_WINDOW TR_SEQ_WINDOW /* the default window, and its largest */
#define TR_STREAM_AHEAD 1024	       /* unsettled numbers, at most */

/* ---- sender ------------------------------------------------------------ */

struct tr_stream_tx {
	uint32_t next;	       /* the next number to assign */
	struct tr_seq_rx done; /* settled numbers: done.next is base */
	unsigned window;       /* 1 .. TR_STREAM_WINDOW */
	/* By number % TR_STREAM_AHEAD, base <= number < next: lost for good
	 * and not yet carried by a SEQ_SKIP. */
	uint64_t lost[TR_STREAM_AHEAD / 64];
	unsigned nlost;
	uint64_t skipped; /* numbers handed to SEQ_SKIPs, ever */
};

/* An empty stream whose first number is first, with a window of window
 * numbers (0: TR_STREAM_WINDOW; more is clamped to it). */
void tr_stream_tx_init(struct tr_stream_tx *tx, uint32_t first, unsigned window);

/* The next number, in *seq_p: 0, or -EAGAIN when TR_STREAM_AHEAD numbers
 * are unsettled (nothing changes). */
int tr_stream_tx_assign(struct tr_stream_tx *tx, uint32_t *seq_p);

/* Whether tr_stream_tx_assign() would succeed, and the number it gives. */
static inline bool tr_stream_tx_can_assign(const struct tr_stream_tx *tx)
{
	return tx->next - tx->done.next < TR_STREAM_AHEAD;
}

static inline uint32_t tr_stream_tx_next(const struct tr_stream_tx *tx)
{
	return tx->next;
}

/* Whether the message numbered seq (assigned, unsettled) may be posted now. */
static inline bool tr_stream_tx_may_post(const struct tr_stream_tx *tx, uint32_t seq)
{
	return (uint32_t)(seq - tx->done.next) < tx->window;
}

/* seq is settled: its message arrived, or a SEQ_SKIP carrying it did.
 * Returns true when base moved (what waited for the window may go).  A
 * number settled already, or never assigned, changes nothing. */
bool tr_stream_tx_settled(struct tr_stream_tx *tx, uint32_t seq);

/* The message numbered seq is lost for good (no plane to send it again),
 * or the SEQ_SKIP that carried it is: it is to be told.  0; -EINVAL when
 * seq is not an unsettled number, or is told already (nothing changes). */
int tr_stream_tx_lost(struct tr_stream_tx *tx, uint32_t seq);

/* Takes up to max lost numbers for a SEQ_SKIP, lowest first, and only
 * those within the window (so that the receiver can take them): written
 * to out, no longer counted lost.  Returns how many. */
unsigned tr_stream_tx_skips(struct tr_stream_tx *tx, uint32_t *out, unsigned max);

/* Assigned and not settled (in flight, queued, lost or being told). */
static inline unsigned tr_stream_tx_unsettled(const struct tr_stream_tx *tx)
{
	return tx->next - tx->done.next - tr_popcount64(tx->done.above);
}

/* Lost and not yet handed to a SEQ_SKIP; how many of those
 * tr_stream_tx_skips() would take now. */
static inline unsigned tr_stream_tx_nlost(const struct tr_stream_tx *tx)
{
	return tx->nlost;
}
unsigned tr_stream_tx_tellable(const struct tr_stream_tx *tx);
/* Whether seq is lost and not yet handed to a SEQ_SKIP. */
bool tr_stream_tx_is_lost(const struct tr_stream_tx *tx, uint32_t seq);

static inline uint32_t tr_stream_tx_base(const struct tr_stream_tx *tx)
{
	return tx->done.next;
}

/* ---- receiver ---------------------------------------------------------- */

enum tr_stream_verdict {
	TR_STREAM_DELIVER,   /* new: hand it over */
	TR_STREAM_DUPLICATE, /* seen before (or skipped): drop it */
	TR_STREAM_PARK,	     /* beyond the window: keep it, try again once it fits */
	TR_STREAM_BROKEN,    /* beyond the window with park_max parked: a broken sender */
};
const char *tr_stream_verdict_str(enum tr_stream_verdict v);

struct tr_stream_rx {
	struct tr_seq_rx seq;
	unsigned window;     /* the sender's: 1 .. TR_STREAM_WINDOW */
	unsigned parked;     /* parked now */
	uint64_t delivered;  /* numbers handed over, ever */
	uint64_t skipped;    /* numbers the sender told lost, ever */
	uint64_t duplicates; /* copies dropped, ever */
};

/* The receiver of a stream whose first number is first, and whose sender
 * posts within a window of window numbers (0: TR_STREAM_WINDOW, more is
 * clamped to it); counters at 0. */
void tr_stream_rx_init(struct tr_stream_rx *rx, uint32_t first, unsigned window);

/* A message numbered seq arrived (or a parked one is tried again: the
 * caller takes it off its parking first, tr_stream_rx_unparked()).  With
 * PARK the caller keeps it, and it counts in parked. */
enum tr_stream_verdict tr_stream_rx_accept(struct tr_stream_rx *rx, uint32_t seq,
					   unsigned park_max);

/* A SEQ_SKIP says seq will never come: DELIVER (settled now: nothing to
 * hand over), DUPLICATE (known already), or PARK/BROKEN as above (the
 * caller keeps the SEQ_SKIP and tries it whole again once seq fits). */
enum tr_stream_verdict tr_stream_rx_skip(struct tr_stream_rx *rx, uint32_t seq,
					 unsigned park_max);

/* A parked message or SEQ_SKIP is taken off the parking. */
static inline void tr_stream_rx_unparked(struct tr_stream_rx *rx)
{
	rx->parked--;
}

/* Whether seq is within the window now (a parked one can be tried). */
static inline bool tr_stream_rx_fits(const struct tr_stream_rx *rx, uint32_t seq)
{
	return (int32_t)(seq - rx->seq.next) <= (int32_t)rx->window;
}

/* The lowest number not handed over yet: everything below was, or was
 * skipped. */
static inline uint32_t tr_stream_rx_next(const struct tr_stream_rx *rx)
{
	return rx->seq.next;
}

#endif
