/* What the two overlap measurements share: examples/overlap.c (triad_bcast
 * against MPI_Ibcast, under mpirun) and triad-perf's overlap test
 * (tools/perf/perf_overlap.c, triad only).  The application's compute is
 * a spin on the clock that makes no library call, so whatever moves the
 * broadcast meanwhile is the library's own progress thread. */
#ifndef TRIAD_EXAMPLES_OVERLAP_H
#define TRIAD_EXAMPLES_OVERLAP_H

#include <stdint.h>
#include <time.h>

static inline double overlap_now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec * 1e-3;
}

/* The application's work for us microseconds: integer arithmetic and the
 * clock, nothing else. */
static inline void overlap_compute(long us)
{
	volatile uint64_t x = 1;
	double end = overlap_now_us() + (double)us;

	while (overlap_now_us() < end)
		for (int i = 0; i < 64; i++)
			x = x * 6364136223846793005ull + 1442695040888963407ull;
}

/* How much of the shorter of the broadcast alone and the compute alone
 * vanished behind the other: 1 when total is the longer of the two, 0 when
 * they simply added up, negative when overlapping cost more than doing
 * both in turn. */
static inline double overlap_hidden(double alone, double compute, double total)
{
	double shorter = alone < compute ? alone : compute;

	return shorter > 0 ? (alone + compute - total) / shorter : 0;
}

#endif
