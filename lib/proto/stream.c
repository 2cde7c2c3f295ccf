#include "proto/stream.h"

#include <errno.h>
#include <string.h>

_Static_assert(TR_STREAM_WINDOW == 64, "the acked map is one uint64_t");
_Static_assert(TR_STREAM_MAX_PLANES < TR_STREAM_NO_PLANE, "a plane index fits a uint8_t");

/* ---- sender ------------------------------------------------------------ */

void tr_stream_tx_init(struct tr_stream_tx *tx, uint32_t first)
{
	*tx = (struct tr_stream_tx){ .next = first, .base = first };
	memset(tx->plane, TR_STREAM_NO_PLANE, sizeof(tx->plane));
}

static uint8_t *slot_of(struct tr_stream_tx *tx, uint32_t seq)
{
	return &tx->plane[seq % TR_STREAM_WINDOW];
}

/* Whether seq is assigned and not acknowledged. */
static bool unacked(const struct tr_stream_tx *tx, uint32_t seq)
{
	uint32_t d = seq - tx->base;

	return d < tx->next - tx->base && !(tx->acked >> d & 1);
}

int tr_stream_tx_assign(struct tr_stream_tx *tx, unsigned plane, uint32_t *seq_p)
{
	if (plane >= TR_STREAM_MAX_PLANES)
		return -EINVAL;
	if (!tr_stream_tx_can_assign(tx))
		return -EAGAIN;
	*slot_of(tx, tx->next) = (uint8_t)plane;
	tx->inflight[plane]++;
	*seq_p = tx->next++;
	return 0;
}

int tr_stream_tx_acked(struct tr_stream_tx *tx, uint32_t seq)
{
	uint8_t *p = slot_of(tx, seq);

	if (!unacked(tx, seq) || *p == TR_STREAM_NO_PLANE)
		return -EINVAL;
	tx->inflight[*p]--;
	*p = TR_STREAM_NO_PLANE;
	tx->acked |= 1ull << (seq - tx->base);
	/* Slide past every acknowledged number; bit 0 is then clear again. */
	while (tx->acked & 1) {
		tx->acked >>= 1;
		tx->base++;
	}
	return 0;
}

int tr_stream_tx_lost(struct tr_stream_tx *tx, uint32_t seq)
{
	uint8_t *p = slot_of(tx, seq);

	if (!unacked(tx, seq) || *p == TR_STREAM_NO_PLANE)
		return -EINVAL;
	tx->inflight[*p]--;
	*p = TR_STREAM_NO_PLANE;
	tx->waiting++;
	return 0;
}

unsigned tr_stream_tx_plane_lost(struct tr_stream_tx *tx, unsigned plane)
{
	unsigned count = 0;

	if (plane >= TR_STREAM_MAX_PLANES)
		return 0;
	for (uint32_t s = tx->base; s != tx->next; s++) {
		uint8_t *p = slot_of(tx, s);

		if (*p == plane) { /* acknowledged entries hold NO_PLANE */
			*p = TR_STREAM_NO_PLANE;
			count++;
		}
	}
	tx->inflight[plane] -= count;
	tx->waiting += count;
	return count;
}

int tr_stream_tx_moved(struct tr_stream_tx *tx, uint32_t seq, unsigned plane)
{
	uint8_t *p = slot_of(tx, seq);

	if (!unacked(tx, seq) || plane >= TR_STREAM_MAX_PLANES)
		return -EINVAL;
	if (*p == TR_STREAM_NO_PLANE)
		tx->waiting--;
	else
		tx->inflight[*p]--;
	*p = (uint8_t)plane;
	tx->inflight[plane]++;
	tx->resent++;
	return 0;
}

int tr_stream_tx_plane(const struct tr_stream_tx *tx, uint32_t seq)
{
	if (!unacked(tx, seq))
		return -EINVAL;
	return tx->plane[seq % TR_STREAM_WINDOW];
}

int tr_stream_tx_first_on(const struct tr_stream_tx *tx, unsigned plane, uint32_t *seq_p)
{
	for (uint32_t s = tx->base; s != tx->next; s++) {
		if (tx->plane[s % TR_STREAM_WINDOW] == plane && unacked(tx, s)) {
			*seq_p = s;
			return 0;
		}
	}
	return -ENOENT;
}

/* ---- receiver ---------------------------------------------------------- */

void tr_stream_rx_init(struct tr_stream_rx *rx, uint32_t first)
{
	*rx = (struct tr_stream_rx){ 0 };
	tr_seq_rx_init(&rx->seq, first);
}

enum tr_seq_verdict tr_stream_rx_accept(struct tr_stream_rx *rx, uint32_t seq)
{
	enum tr_seq_verdict v = tr_seq_rx_accept(&rx->seq, seq);

	switch (v) {
	case TR_SEQ_NEW: rx->delivered++; break;
	case TR_SEQ_DUPLICATE: rx->duplicates++; break;
	case TR_SEQ_TOO_FAR: rx->too_far++; break;
	}
	return v;
}
