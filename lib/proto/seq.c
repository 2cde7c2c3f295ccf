#include "proto/seq.h"

enum tr_seq_verdict tr_seq_rx_accept(struct tr_seq_rx *rx, uint32_t seq)
{
	int32_t d = (int32_t)(seq - rx->next);

	if (d < 0)
		return TR_SEQ_DUPLICATE;
	if (d > TR_SEQ_WINDOW)
		return TR_SEQ_TOO_FAR;
	if (d > 0) {
		uint64_t bit = 1ull << (d - 1);

		if (rx->above & bit)
			return TR_SEQ_DUPLICATE;
		rx->above |= bit;
		return TR_SEQ_NEW;
	}
	/* d == 0: the expected one; slide past every number already seen. */
	rx->next++;
	while (rx->above & 1) {
		rx->above >>= 1;
		rx->next++;
	}
	rx->above >>= 1;
	return TR_SEQ_NEW;
}
