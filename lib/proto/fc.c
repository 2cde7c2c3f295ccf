#include "proto/fc.h"

#include <errno.h>
#include <stddef.h>

static uint64_t slot_mask(unsigned nslots)
{
	return nslots >= 64 ? UINT64_MAX : (1ull << nslots) - 1;
}

/* 0 when need[] suits nslots (tr_fc_tx_init()), -EINVAL otherwise. */
static int need_check(unsigned nslots, const unsigned need[TR_FC_NPRIO])
{
	if (nslots < 1 || nslots > TR_FC_MAX_SLOTS || !need)
		return -EINVAL;
	for (unsigned p = 0; p < TR_FC_NPRIO; p++) {
		if (need[p] < 1 || need[p] > nslots)
			return -EINVAL;
		if (p > 0 && need[p] < need[p - 1])
			return -EINVAL;
	}
	return 0;
}

/* need, or the defaults clamped to nslots when need is NULL. */
static void need_or_default(unsigned nslots, const unsigned *need, unsigned out[TR_FC_NPRIO])
{
	static const unsigned def[TR_FC_NPRIO] = { TR_FC_NEED_HIGH, TR_FC_NEED_MEDIUM,
						   TR_FC_NEED_LOW };

	for (unsigned p = 0; p < TR_FC_NPRIO; p++) {
		out[p] = need ? need[p] : def[p];
		if (!need && out[p] > nslots)
			out[p] = nslots;
	}
}

/* ---- sender ------------------------------------------------------------ */

/* The one place the sender's registers change.  A slot whose state changes
 * loses its timer flag; BBR follows. */
static void tx_set(struct tr_fc_tx *tx, uint64_t sanrr, uint64_t rcfr)
{
	uint64_t changed = (tx->sanrr ^ sanrr) | (tx->rcfr ^ rcfr);

	tx->sanrr = sanrr;
	tx->rcfr = rcfr;
	tx->bbr = sanrr | rcfr;
	tx->flag &= ~changed;
	tx->overdue &= ~changed;
}

int tr_fc_tx_init(struct tr_fc_tx *tx, unsigned nslots, const unsigned need[TR_FC_NPRIO])
{
	unsigned n[TR_FC_NPRIO];

	if (nslots < 1 || nslots > TR_FC_MAX_SLOTS)
		return -EINVAL;
	need_or_default(nslots, need, n);
	if (need_check(nslots, n))
		return -EINVAL;
	*tx = (struct tr_fc_tx){ .mask = slot_mask(nslots), .nslots = nslots };
	for (unsigned p = 0; p < TR_FC_NPRIO; p++)
		tx->need[p] = n[p];
	tx_set(tx, 0, tx->mask); /* state III everywhere */
	return 0;
}

int tr_fc_tx_pick(const struct tr_fc_tx *tx, unsigned prio)
{
	uint64_t free = ~tx->bbr & tx->mask;

	if (prio >= TR_FC_NPRIO)
		return -EINVAL;
	if (tr_popcount64(free) < tx->need[prio])
		return -EAGAIN;
	return __builtin_ctzll(free); /* need >= 1, so free != 0 */
}

int tr_fc_tx_sent(struct tr_fc_tx *tx, unsigned slot)
{
	if (slot >= tx->nslots)
		return -EINVAL;
	if (tx->bbr & 1ull << slot)
		return -EBUSY;
	tx_set(tx, tx->sanrr | 1ull << slot, tx->rcfr);
	return 0;
}

int tr_fc_tx_bsm2(struct tr_fc_tx *tx, uint64_t n, uint64_t c)
{
	n &= tx->mask;
	c &= tx->mask;
	if (c & ~n) {
		tx->bad_bsms++;
		return -EPROTO;
	}
	tx_set(tx, tx->sanrr & ~n, c);
	return 0;
}

unsigned tr_fc_tx_tick(struct tr_fc_tx *tx, bool reliable)
{
	uint64_t expired = tx->flag; /* flags only ever cover state II */
	unsigned count = tr_popcount64(expired);

	if (reliable)
		tx->overdue |= expired;
	else
		tx_set(tx, tx->sanrr & ~expired, tx->rcfr);
	tx->errors += count;
	tx->flag = tx->sanrr & ~tx->rcfr & ~tx->overdue;
	return count;
}

/* ---- receiver ---------------------------------------------------------- */

int tr_fc_rx_init(struct tr_fc_rx *rx, unsigned nslots)
{
	if (nslots < 1 || nslots > TR_FC_MAX_SLOTS)
		return -EINVAL;
	*rx = (struct tr_fc_rx){ .mask = slot_mask(nslots), .nslots = nslots, .resync = true };
	return 0;
}

int tr_fc_rx_arrive(struct tr_fc_rx *rx, unsigned slot)
{
	uint64_t bit;

	if (slot >= rx->nslots)
		return -EINVAL;
	bit = 1ull << slot;
	if (rx->cfr & bit) {
		rx->overruns++;
		return -EBUSY;
	}
	rx->nmtsr |= bit;
	rx->cfr |= bit;
	rx->touched |= bit;
	return 0;
}

int tr_fc_rx_drain(struct tr_fc_rx *rx, unsigned slot)
{
	uint64_t bit;

	if (slot >= rx->nslots)
		return -EINVAL;
	bit = 1ull << slot;
	if (!(rx->cfr & bit))
		return -EINVAL;
	rx->cfr &= ~bit;
	rx->touched |= bit;
	return 0;
}

void tr_fc_rx_bsm(struct tr_fc_rx *rx, uint64_t *n_p, uint64_t *c_p)
{
	*n_p = rx->nmtsr;
	*c_p = rx->cfr;
	rx->nmtsr = rx->cfr;
	rx->touched = 0;
	rx->resync = false;
}

bool tr_fc_rx_bsm_due(const struct tr_fc_rx *rx)
{
	return rx->resync || rx->touched;
}

/* Urgent: see fc.h. */
static bool bsm_urgent(const struct tr_fc_rx *rx, const unsigned need[TR_FC_NPRIO])
{
	unsigned seen = rx->nslots - tr_popcount64(rx->nmtsr);
	unsigned next = rx->nslots - tr_popcount64(rx->cfr);
	unsigned n[TR_FC_NPRIO];

	if (rx->resync)
		return true;
	need_or_default(rx->nslots, need, n);
	for (unsigned p = 0; p < TR_FC_NPRIO; p++)
		if (seen < n[p] && n[p] <= next)
			return true;
	return false;
}

enum tr_fc_bsm_action tr_fc_rx_bsm_decide(const struct tr_fc_rx *rx,
					  const unsigned need[TR_FC_NPRIO],
					  const struct tr_fc_bsm_in *in)
{
	unsigned unreported = tr_popcount64(rx->nmtsr);
	bool urgent;

	if (!tr_fc_rx_bsm_due(rx))
		return TR_FC_BSM_NONE;
	if (!in->room)
		return TR_FC_BSM_WAIT_ROOM;
	urgent = bsm_urgent(rx, need);
	if (in->inflight >= TR_FC_BSM_MAX_INFLIGHT ||
	    (in->inflight == TR_FC_BSM_MAX_INFLIGHT - 1 && !urgent))
		return TR_FC_BSM_BUSY;
	if (urgent || 3 * unreported >= 2 * rx->nslots || in->force)
		return TR_FC_BSM_SEND;
	return TR_FC_BSM_LINGER;
}
