/* Small helpers shared by the fabric tests: checks that count failures
 * instead of aborting (so one rank's failure does not hang the others in a
 * barrier), data patterns, and waiting with a bound. */
#ifndef TRIAD_FT_H
#define TRIAD_FT_H

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "triad.h"

extern int ft_failures;
extern int ft_rank;

#define FT_CHECK(cond, ...)                                                          \
	do {                                                                         \
		if (!(cond)) {                                                       \
			ft_failures++;                                               \
			fprintf(stderr, "rank %d: FAIL %s:%d: %s: ", ft_rank, __FILE__, \
				__LINE__, #cond);                                    \
			fprintf(stderr, __VA_ARGS__);                                \
			fputc('\n', stderr);                                         \
		}                                                                    \
	} while (0)

/* A byte that depends on the seed and the position: misplaced data shows. */
static inline uint8_t ft_pattern(uint32_t seed, uint64_t i)
{
	uint64_t x = (i + 1) * 0x9e3779b97f4a7c15ull ^ ((uint64_t)seed << 32 | seed);

	x ^= x >> 29;
	return (uint8_t)(x ^ (x >> 17) ^ (i >> 8));
}

static inline void ft_fill(void *buf, uint64_t len, uint32_t seed, uint64_t base)
{
	uint8_t *p = buf;

	for (uint64_t i = 0; i < len; i++)
		p[i] = ft_pattern(seed, base + i);
}

/* Slots of `slot` bytes (at most 256), the i-th written by a put of the
 * first 1 + i % slot bytes of pattern seed at offset i * slot, zeros after
 * them: how many of the n slots are wrong, the first in *first (-1: none). */
static inline int ft_small_slots_wrong(const void *buf, int n, int slot, uint32_t seed,
				       int *first)
{
	uint8_t want[256];
	int wrong = 0;

	*first = -1;
	for (int i = 0; i < n; i++) {
		memset(want, 0, (size_t)slot);
		ft_fill(want, (uint64_t)(1 + i % slot), seed, (uint64_t)i * (uint64_t)slot);
		if (memcmp((const uint8_t *)buf + (size_t)i * (size_t)slot, want, (size_t)slot) &&
		    !wrong++)
			*first = i;
	}
	return wrong;
}

/* Returns the index of the first wrong byte, or -1 when all match. */
static inline int64_t ft_verify(const void *buf, uint64_t len, uint32_t seed, uint64_t base)
{
	const uint8_t *p = buf;

	for (uint64_t i = 0; i < len; i++)
		if (p[i] != ft_pattern(seed, base + i))
			return (int64_t)i;
	return -1;
}

/* Waits for req (bounded), frees it, returns its status (or PENDING on
 * timeout, which is itself a failure the caller checks). */
enum triad_status ft_wait(triad_req_t *req, int timeout_ms);

/* Seconds on the monotonic clock. */
double ft_now_s(void);

/* triad_init from the environment; exits on failure. */
triad_ctx_t *ft_init(void);
/* Barrier that counts a failure instead of hanging. */
void ft_barrier(triad_ctx_t *ctx);
/* Runs the harness's fabric-ctl (path in $TRIAD_FABRIC_CTL) with the
 * arguments printf makes of fmt; its exit status as system() gives it.
 * End fmt with "&" to run it in the background. */
int ft_ctl(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* A fault on purpose on this rank's plane: triad_plane_refuse_writes when
 * refuse, else triad_plane_fail; a failure counts (checked here). */
void ft_fault_plane(triad_ctx_t *ctx, int plane, int refuse);
/* Prints the verdict, finalises, returns the exit status. */
int ft_finish(triad_ctx_t *ctx, const char *name);

#endif
