/* The memo of the exhaustive tests (test_stream, test_plane): an
 * open-addressing map from a state, encoded as a fixed-length key, to the
 * number of interleavings that end from it, so that each state is
 * explored once however many paths lead to it. */
#ifndef TRIAD_TEST_MEMO_H
#define TRIAD_TEST_MEMO_H

#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

struct memo {
	size_t klen;	/* bytes per key */
	uint8_t *keys;	/* cap keys of klen bytes */
	uint64_t *paths;
	bool *used;
	size_t cap, len; /* cap: a power of two */
};

/* 0, or -1 when out of memory. */
static inline int memo_init(struct memo *m, size_t klen, size_t cap)
{
	m->klen = klen;
	m->cap = cap;
	m->len = 0;
	m->keys = calloc(cap, klen);
	m->paths = calloc(cap, sizeof(*m->paths));
	m->used = calloc(cap, sizeof(*m->used));
	return m->keys && m->paths && m->used ? 0 : -1;
}

static inline void memo_free(struct memo *m)
{
	free(m->keys);
	free(m->paths);
	free(m->used);
}

static inline size_t memo_slot(const struct memo *m, const uint8_t *key)
{
	uint64_t h = 0xcbf29ce484222325ull; /* FNV-1a */
	size_t i;

	for (size_t j = 0; j < m->klen; j++)
		h = (h ^ key[j]) * 0x100000001b3ull;
	i = (size_t)h & (m->cap - 1);
	while (m->used[i] && memcmp(m->keys + i * m->klen, key, m->klen))
		i = (i + 1) & (m->cap - 1);
	return i;
}

/* The paths recorded for key, or NULL when it was never seen. */
static inline const uint64_t *memo_get(const struct memo *m, const uint8_t *key)
{
	size_t i = memo_slot(m, key);

	return m->used[i] ? &m->paths[i] : NULL;
}

/* Records a key not seen before; 0, or -1 when out of memory. */
static inline int memo_put(struct memo *m, const uint8_t *key, uint64_t paths)
{
	size_t i;

	if (2 * (m->len + 1) > m->cap) {
		struct memo big;

		if (memo_init(&big, m->klen, 2 * m->cap)) {
			memo_free(&big);
			return -1;
		}
		for (size_t j = 0; j < m->cap; j++)
			if (m->used[j])
				memo_put(&big, m->keys + j * m->klen, m->paths[j]);
		memo_free(m);
		*m = big;
	}
	i = memo_slot(m, key);
	m->used[i] = true;
	memcpy(m->keys + i * m->klen, key, m->klen);
	m->paths[i] = paths;
	m->len++;
	return 0;
}

#endif
