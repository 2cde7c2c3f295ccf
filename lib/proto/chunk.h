/* Cutting an operation of len bytes into work requests of at most chunk
 * bytes: chunk i covers [i * chunk, min(len, (i + 1) * chunk)). */
#ifndef TRIAD_PROTO_CHUNK_H
#define TRIAD_PROTO_CHUNK_H

#include <stdint.h>

static inline uint64_t tr_chunk_count(uint64_t len, uint64_t chunk)
{
	return len / chunk + (len % chunk != 0);
}

/* Length of the chunk that starts at byte off of the operation. */
static inline uint64_t tr_chunk_len(uint64_t len, uint64_t chunk, uint64_t off)
{
	uint64_t left = off < len ? len - off : 0;

	return left < chunk ? left : chunk;
}

/* 1 when [off, off + len) lies inside a region of size bytes (no overflow). */
static inline int tr_range_ok(uint64_t size, uint64_t off, uint64_t len)
{
	return off <= size && len <= size - off;
}

#endif
