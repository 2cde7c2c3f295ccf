/* Time, for every layer that may read a clock (proto may not: its engines
 * take the time as an argument). */
#ifndef TRIAD_BASE_TIME_H
#define TRIAD_BASE_TIME_H

#include <stdint.h>
#include <time.h>

/* CLOCK_MONOTONIC in nanoseconds. */
static inline uint64_t tr_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

#endif
