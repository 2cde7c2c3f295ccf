/* Per-peer sequence numbers.  Every control message a rank sends to a peer
 * carries the next number of that (sender, peer) pair, whatever plane it
 * takes; the receiver accepts each number once, so that a message sent
 * again on another plane after a failure is delivered once.
 *
 * The receiver remembers the lowest number not yet seen (next) and a
 * 64-bit map of the numbers above it that already arrived.  Numbers are
 * 32-bit on the wire and compared with serial arithmetic (RFC 1982). */
#ifndef TRIAD_PROTO_SEQ_H
#define TRIAD_PROTO_SEQ_H

#include <stdint.h>

#define TR_SEQ_WINDOW 64

struct tr_seq_rx {
	uint32_t next;	/* lowest sequence number not yet received */
	uint64_t above; /* bit i: next + 1 + i already received */
};

enum tr_seq_verdict {
	TR_SEQ_NEW,	  /* deliver it */
	TR_SEQ_DUPLICATE, /* seen before: drop it */
	TR_SEQ_TOO_FAR,	  /* beyond the window: the sender broke its bound */
};

static inline void tr_seq_rx_init(struct tr_seq_rx *rx, uint32_t first)
{
	rx->next = first;
	rx->above = 0;
}

enum tr_seq_verdict tr_seq_rx_accept(struct tr_seq_rx *rx, uint32_t seq);

/* a comes before b (serial arithmetic). */
static inline int tr_seq_before(uint32_t a, uint32_t b)
{
	return (int32_t)(a - b) < 0;
}

/* 1 when tr_seq_rx_accept() would not say TR_SEQ_TOO_FAR. */
static inline int tr_seq_rx_fits(const struct tr_seq_rx *rx, uint32_t seq)
{
	return (int32_t)(seq - rx->next) <= TR_SEQ_WINDOW;
}

#endif
