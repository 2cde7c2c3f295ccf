/* Bit counting for the slot and acknowledgement bitmaps. */
#ifndef TRIAD_BASE_BITS_H
#define TRIAD_BASE_BITS_H

#include <stdint.h>

/* The set bits of x.  Without the popcnt instruction (the x86-64
 * baseline Debian builds for) __builtin_popcountll is a call to libgcc's
 * __popcountdi2: about 85 instructions per message received went there
 * (flow control counts three masks per BSM decision; bench/run-icount).
 * The same arithmetic, inline, where the instruction is not available. */
static inline unsigned tr_popcount64(uint64_t x)
{
#ifdef __POPCNT__
	return (unsigned)__builtin_popcountll(x);
#else
	x -= (x >> 1) & 0x5555555555555555ull;
	x = (x & 0x3333333333333333ull) + ((x >> 2) & 0x3333333333333333ull);
	x = (x + (x >> 4)) & 0x0f0f0f0f0f0f0f0full;
	return (unsigned)((x * 0x0101010101010101ull) >> 56);
#endif
}

#endif
