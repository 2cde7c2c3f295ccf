#include "proto/stream.h"

#include <errno.h>

_Static_assert(TR_STREAM_WINDOW <= 64, "proto/seq's filter holds 64 numbers above its base");
_Static_assert(TR_STREAM_AHEAD % 64 == 0, "lost numbers are whole words");

/* ---- sender ------------------------------------------------------------ */

void tr_stream_tx_init(struct tr_stream_tx *tx, uint32_t first, unsigned window)
{
	*tx = (struct tr_stream_tx){ .next = first };
	tr_seq_rx_init(&tx->done, first);
	tx->window = window && window < TR_STREAM_WINDOW ? window : TR_STREAM_WINDOW;
}

int tr_stream_tx_assign(struct tr_stream_tx *tx, uint32_t *seq_p)
{
	if (!tr_stream_tx_can_assign(tx))
		return -EAGAIN;
	*seq_p = tx->next++;
	return 0;
}

/* Whether seq is assigned and not settled. */
static bool unsettled(const struct tr_stream_tx *tx, uint32_t seq)
{
	uint32_t d = seq - tx->done.next;

	return d < tx->next - tx->done.next && (d == 0 || !(tx->done.above >> (d - 1) & 1));
}

static bool lost_bit(const struct tr_stream_tx *tx, uint32_t seq)
{
	return tx->lost[seq % TR_STREAM_AHEAD / 64] >> (seq % 64) & 1;
}

static void lost_flip(struct tr_stream_tx *tx, uint32_t seq)
{
	tx->lost[seq % TR_STREAM_AHEAD / 64] ^= 1ull << (seq % 64);
}

bool tr_stream_tx_settled(struct tr_stream_tx *tx, uint32_t seq)
{
	uint32_t before = tx->done.next;

	if (!unsettled(tx, seq))
		return false;
	if (lost_bit(tx, seq)) { /* it arrived after all (a late SEQ_SKIP's twin) */
		lost_flip(tx, seq);
		tx->nlost--;
	}
	tr_seq_rx_accept(&tx->done, seq); /* within the window: never too far */
	return tx->done.next != before;
}

int tr_stream_tx_lost(struct tr_stream_tx *tx, uint32_t seq)
{
	if (!unsettled(tx, seq) || lost_bit(tx, seq))
		return -EINVAL;
	lost_flip(tx, seq);
	tx->nlost++;
	return 0;
}

unsigned tr_stream_tx_tellable(const struct tr_stream_tx *tx)
{
	unsigned n = 0;

	for (uint32_t d = 0; d < tx->window && n < tx->nlost; d++)
		n += lost_bit(tx, tx->done.next + d);
	return n;
}

bool tr_stream_tx_is_lost(const struct tr_stream_tx *tx, uint32_t seq)
{
	return unsettled(tx, seq) && lost_bit(tx, seq);
}

unsigned tr_stream_tx_skips(struct tr_stream_tx *tx, uint32_t *out, unsigned max)
{
	unsigned n = 0;

	for (uint32_t d = 0; d < tx->window && n < max && tx->nlost; d++) {
		uint32_t seq = tx->done.next + d;

		if (lost_bit(tx, seq)) {
			lost_flip(tx, seq);
			tx->nlost--;
			out[n++] = seq;
		}
	}
	tx->skipped += n;
	return n;
}

/* ---- receiver ---------------------------------------------------------- */

static const char *const verdict_names[] = {
	[TR_STREAM_DELIVER] = "deliver",
	[TR_STREAM_DUPLICATE] = "duplicate",
	[TR_STREAM_PARK] = "park",
	[TR_STREAM_BROKEN] = "broken",
};

const char *tr_stream_verdict_str(enum tr_stream_verdict v)
{
	return (unsigned)v < sizeof(verdict_names) / sizeof(verdict_names[0]) ? verdict_names[v]
									     : "?";
}

void tr_stream_rx_init(struct tr_stream_rx *rx, uint32_t first, unsigned window)
{
	*rx = (struct tr_stream_rx){ .parked = 0 };
	tr_seq_rx_init(&rx->seq, first);
	rx->window = window && window < TR_STREAM_WINDOW ? window : TR_STREAM_WINDOW;
}

static enum tr_stream_verdict rx_take(struct tr_stream_rx *rx, uint32_t seq, unsigned park_max)
{
	if (!tr_stream_rx_fits(rx, seq)) {
		if (rx->parked >= park_max)
			return TR_STREAM_BROKEN;
		rx->parked++;
		return TR_STREAM_PARK;
	}
	if (tr_seq_rx_accept(&rx->seq, seq) == TR_SEQ_NEW) /* fits: never too far */
		return TR_STREAM_DELIVER;
	rx->duplicates++;
	return TR_STREAM_DUPLICATE;
}

enum tr_stream_verdict tr_stream_rx_accept(struct tr_stream_rx *rx, uint32_t seq,
					   unsigned park_max)
{
	enum tr_stream_verdict v = rx_take(rx, seq, park_max);

	rx->delivered += v == TR_STREAM_DELIVER;
	return v;
}

enum tr_stream_verdict tr_stream_rx_skip(struct tr_stream_rx *rx, uint32_t seq,
					 unsigned park_max)
{
	enum tr_stream_verdict v = rx_take(rx, seq, park_max);

	rx->skipped += v == TR_STREAM_DELIVER;
	return v;
}
