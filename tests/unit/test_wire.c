/* Unit tests for the control message codec (lib/proto/wire.[ch]). */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "proto/wire.h"

/* ---- helpers ----------------------------------------------------------------- */

static uint64_t rng_state = 0x9e3779b97f4a7c15ull;

static uint64_t rnd(void)
{
	/* splitmix64: deterministic, so every run tests the same messages */
	uint64_t z = (rng_state += 0x9e3779b97f4a7c15ull);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

static void put16(uint8_t *p, uint16_t v)
{
	p[0] = (uint8_t)v;
	p[1] = (uint8_t)(v >> 8);
}

static void put32(uint8_t *p, uint32_t v)
{
	for (int i = 0; i < 4; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

static void put64(uint8_t *p, uint64_t v)
{
	for (int i = 0; i < 8; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

static void assert_msg_equal(const struct tr_msg *a, const struct tr_msg *b)
{
	assert_int_equal(a->type, b->type);
	assert_int_equal(a->seq, b->seq);
	switch (a->type) {
	case TR_MSG_WIN_QUERY:
		assert_int_equal(a->u.win_query.qid, b->u.win_query.qid);
		assert_int_equal(a->u.win_query.win, b->u.win_query.win);
		break;
	case TR_MSG_WIN_INFO:
		assert_int_equal(a->u.win_info.qid, b->u.win_info.qid);
		assert_int_equal(a->u.win_info.win, b->u.win_info.win);
		assert_int_equal(a->u.win_info.status, b->u.win_info.status);
		assert_int_equal(a->u.win_info.nplanes, b->u.win_info.nplanes);
		assert_int_equal(a->u.win_info.access, b->u.win_info.access);
		assert_true(a->u.win_info.base == b->u.win_info.base);
		assert_true(a->u.win_info.len == b->u.win_info.len);
		for (unsigned i = 0; i < a->u.win_info.nplanes; i++)
			assert_int_equal(a->u.win_info.rkey[i], b->u.win_info.rkey[i]);
		break;
	case TR_MSG_BARRIER:
	case TR_MSG_BARRIER_REL:
		assert_int_equal(a->u.barrier.epoch, b->u.barrier.epoch);
		break;
	default:
		fail_msg("bad type %d", a->type);
	}
}

/* Expected encoded length of m (header + body, as the format defines it). */
static size_t wire_len(const struct tr_msg *m)
{
	switch (m->type) {
	case TR_MSG_WIN_QUERY: return 16 + 8;
	case TR_MSG_WIN_INFO: return 16 + 32 + 4 * (size_t)m->u.win_info.nplanes;
	default: return 16 + 4;
	}
}

static int encode(const struct tr_msg *m, uint8_t *buf)
{
	int n = tr_msg_encode(m, buf, TR_WIRE_MAX_LEN);

	assert_int_equal(n, (int)wire_len(m));
	return n;
}

/* Decode must reject buf with exactly want, and leave out untouched. */
static void decode_bad(const uint8_t *buf, size_t len, int want)
{
	struct tr_msg out, before;

	memset(&out, 0xa5, sizeof(out));
	memcpy(&before, &out, sizeof(out));
	assert_int_equal(tr_msg_decode(buf, len, &out), want);
	assert_memory_equal(&out, &before, sizeof(out));
}

static void round_trip(const struct tr_msg *m)
{
	uint8_t buf[TR_WIRE_MAX_LEN], again[TR_WIRE_MAX_LEN];
	struct tr_msg out;
	int n = encode(m, buf), n2;

	memset(&out, 0xa5, sizeof(out));
	assert_int_equal(tr_msg_decode(buf, (size_t)n, &out), 0);
	assert_msg_equal(m, &out);
	n2 = encode(&out, again);
	assert_int_equal(n2, n);
	assert_memory_equal(buf, again, (size_t)n);
}

static struct tr_msg win_info(uint16_t nplanes)
{
	struct tr_msg m;

	memset(&m, 0, sizeof(m));
	m.type = TR_MSG_WIN_INFO;
	m.seq = 77;
	m.u.win_info.qid = 5;
	m.u.win_info.win = 9;
	m.u.win_info.status = TRIAD_S_OK;
	m.u.win_info.nplanes = nplanes;
	m.u.win_info.access = TRIAD_WIN_READ | TRIAD_WIN_WRITE;
	m.u.win_info.base = 0x7f0000001000ull;
	m.u.win_info.len = 1 << 20;
	for (unsigned i = 0; i < nplanes && i < TRIAD_MAX_PLANES; i++)
		m.u.win_info.rkey[i] = 0x1000 + i;
	return m;
}

static struct tr_msg random_msg(void)
{
	struct tr_msg m;

	memset(&m, 0, sizeof(m));
	m.type = (enum tr_msg_type)(1 + rnd() % (TR_MSG_TYPE_MAX - 1));
	m.seq = (uint32_t)rnd();
	switch (m.type) {
	case TR_MSG_WIN_QUERY:
		m.u.win_query.qid = (uint32_t)rnd();
		m.u.win_query.win = (uint32_t)rnd();
		break;
	case TR_MSG_WIN_INFO:
		m.u.win_info.qid = (uint32_t)rnd();
		m.u.win_info.win = (uint32_t)rnd();
		m.u.win_info.status = (uint16_t)(rnd() % TRIAD_S_MAX);
		m.u.win_info.nplanes = (uint16_t)(rnd() % (TRIAD_MAX_PLANES + 1));
		m.u.win_info.access = (uint32_t)(rnd() % 4);
		m.u.win_info.base = rnd() >> (rnd() % 64);
		m.u.win_info.len = m.u.win_info.base ? rnd() % (UINT64_MAX - m.u.win_info.base + 1)
						     : rnd();
		for (unsigned i = 0; i < m.u.win_info.nplanes; i++)
			m.u.win_info.rkey[i] = (uint32_t)rnd();
		break;
	default:
		m.u.barrier.epoch = (uint32_t)rnd();
		break;
	}
	return m;
}

/* ---- encoding: exact bytes ------------------------------------------------------ */

static void test_layout_win_query(void **state)
{
	static const uint8_t want[] = {
		0x72, 0x54, 0x01, 0x01, 24, 0, 0, 0, /* magic, version, type, length, rsvd */
		0x44, 0x33, 0x22, 0x11, 0, 0, 0, 0,  /* seq, rsvd */
		0xef, 0xbe, 0xad, 0xde, 0x04, 0x03, 0x02, 0x01,
	};
	struct tr_msg m = { .type = TR_MSG_WIN_QUERY, .seq = 0x11223344 };
	uint8_t buf[TR_WIRE_MAX_LEN];

	(void)state;
	m.u.win_query.qid = 0xdeadbeef;
	m.u.win_query.win = 0x01020304;
	assert_int_equal(tr_msg_encode(&m, buf, sizeof(buf)), sizeof(want));
	assert_memory_equal(buf, want, sizeof(want));
}

static void test_layout_win_info(void **state)
{
	static const uint8_t want[] = {
		0x72, 0x54, 0x01, 0x02, 56, 0, 0, 0, 0x01, 0, 0, 0, 0, 0, 0, 0,
		0x0a, 0, 0, 0,				/* qid */
		0x0b, 0, 0, 0,				/* win */
		0x03, 0x00,				/* status */
		0x02, 0x00,				/* nplanes */
		0x01, 0, 0, 0,				/* access */
		0x08, 0x07, 0x06, 0x05, 0x04, 0x03, 0x02, 0x01, /* base */
		0x00, 0x10, 0, 0, 0, 0, 0, 0,		/* len */
		0x11, 0x22, 0x33, 0x44, 0x55, 0x66, 0x77, 0x88, /* rkeys */
	};
	struct tr_msg m = { .type = TR_MSG_WIN_INFO, .seq = 1 };
	uint8_t buf[TR_WIRE_MAX_LEN];

	(void)state;
	m.u.win_info.qid = 10;
	m.u.win_info.win = 11;
	m.u.win_info.status = TRIAD_S_OUT_OF_BOUNDS;
	m.u.win_info.nplanes = 2;
	m.u.win_info.access = TRIAD_WIN_READ;
	m.u.win_info.base = 0x0102030405060708ull;
	m.u.win_info.len = 0x1000;
	m.u.win_info.rkey[0] = 0x44332211;
	m.u.win_info.rkey[1] = 0x88776655;
	m.u.win_info.rkey[2] = 0xffffffff; /* beyond nplanes: not sent */
	assert_int_equal(TRIAD_S_OUT_OF_BOUNDS, 3);
	assert_int_equal(tr_msg_encode(&m, buf, sizeof(buf)), sizeof(want));
	assert_memory_equal(buf, want, sizeof(want));
}

static void test_layout_barrier(void **state)
{
	static const uint8_t want[] = {
		0x72, 0x54, 0x01, 0x04, 20, 0, 0, 0, 0xff, 0xff, 0xff, 0xff, 0, 0, 0, 0,
		0x78, 0x56, 0x34, 0x12,
	};
	struct tr_msg m = { .type = TR_MSG_BARRIER_REL, .seq = UINT32_MAX };
	uint8_t buf[TR_WIRE_MAX_LEN];

	(void)state;
	m.u.barrier.epoch = 0x12345678;
	assert_int_equal(tr_msg_encode(&m, buf, sizeof(buf)), sizeof(want));
	assert_memory_equal(buf, want, sizeof(want));
	m.type = TR_MSG_BARRIER;
	assert_int_equal(tr_msg_encode(&m, buf, sizeof(buf)), sizeof(want));
	assert_int_equal(buf[3], 0x03);
}

/* ---- round trips ------------------------------------------------------------------- */

static void test_round_trip_each_type(void **state)
{
	struct tr_msg m;

	(void)state;
	memset(&m, 0, sizeof(m));
	m.type = TR_MSG_WIN_QUERY;
	m.seq = 1;
	m.u.win_query.qid = 42;
	m.u.win_query.win = 7;
	round_trip(&m);
	m.seq = UINT32_MAX;
	m.u.win_query.qid = UINT32_MAX;
	m.u.win_query.win = UINT32_MAX;
	round_trip(&m);

	memset(&m, 0, sizeof(m));
	m.type = TR_MSG_BARRIER;
	m.u.barrier.epoch = 3;
	round_trip(&m);
	m.type = TR_MSG_BARRIER_REL;
	m.u.barrier.epoch = UINT32_MAX;
	round_trip(&m);

	for (uint16_t np = 0; np <= TRIAD_MAX_PLANES; np++) {
		m = win_info(np);
		round_trip(&m);
	}
	/* Extremes of every WIN_INFO field that are still valid. */
	m = win_info(TRIAD_MAX_PLANES);
	m.u.win_info.status = TRIAD_S_MAX - 1;
	m.u.win_info.access = 0;
	m.u.win_info.base = UINT64_MAX;
	m.u.win_info.len = 0;
	round_trip(&m);
	m.u.win_info.base = 0;
	m.u.win_info.len = UINT64_MAX;
	round_trip(&m);
	m.u.win_info.base = 1;
	m.u.win_info.len = UINT64_MAX - 1;
	round_trip(&m);
	for (int s = 0; s < TRIAD_S_MAX; s++) {
		m.u.win_info.status = (uint16_t)s;
		round_trip(&m);
	}
}

static void test_round_trip_random(void **state)
{
	(void)state;
	for (int i = 0; i < 100000; i++) {
		struct tr_msg m = random_msg();

		round_trip(&m);
	}
}

static void test_decode_clears_unused_rkeys(void **state)
{
	struct tr_msg m = win_info(1), out;
	uint8_t buf[TR_WIRE_MAX_LEN];
	int n = encode(&m, buf);

	(void)state;
	memset(&out, 0xa5, sizeof(out));
	assert_int_equal(tr_msg_decode(buf, (size_t)n, &out), 0);
	for (int i = 1; i < TRIAD_MAX_PLANES; i++)
		assert_int_equal(out.u.win_info.rkey[i], 0);
}

/* ---- decoder rejects ------------------------------------------------------------------ */

static void test_decode_short_and_long_buffers(void **state)
{
	uint8_t buf[TR_WIRE_MAX_LEN + 16];
	struct tr_msg m = win_info(TRIAD_MAX_PLANES);
	int n;

	(void)state;
	memset(buf, 0, sizeof(buf));
	n = encode(&m, buf);
	/* Every truncation, including below the header. */
	for (int len = 0; len < n; len++)
		decode_bad(buf, (size_t)len, -EBADMSG);
	/* Longer than the length field says (trailing bytes, field not updated). */
	for (int len = n + 1; len <= n + 8; len++)
		decode_bad(buf, (size_t)len, -EBADMSG);
	/* Longer than any control message, even with a matching length field. */
	put16(buf + 4, TR_WIRE_MAX_LEN + 1);
	decode_bad(buf, TR_WIRE_MAX_LEN + 1, -EBADMSG);
	decode_bad(buf, sizeof(buf), -EBADMSG);
}

static void test_decode_bad_magic_version(void **state)
{
	struct tr_msg m = { .type = TR_MSG_BARRIER };
	uint8_t buf[TR_WIRE_MAX_LEN], bad[TR_WIRE_MAX_LEN];
	int n = encode(&m, buf);

	(void)state;
	memcpy(bad, buf, (size_t)n);
	put16(bad, 0x7254); /* byte-swapped magic */
	decode_bad(bad, (size_t)n, -EBADMSG);
	memcpy(bad, buf, (size_t)n);
	bad[0] ^= 1;
	decode_bad(bad, (size_t)n, -EBADMSG);
	memcpy(bad, buf, (size_t)n);
	bad[1] = 0;
	decode_bad(bad, (size_t)n, -EBADMSG);
	for (int v = 0; v < 256; v++) {
		if (v == TR_WIRE_VERSION)
			continue;
		memcpy(bad, buf, (size_t)n);
		bad[2] = (uint8_t)v;
		decode_bad(bad, (size_t)n, -EBADMSG);
	}
}

static void test_decode_nonzero_reserved(void **state)
{
	static const int reserved[] = { 6, 7, 12, 13, 14, 15 };
	struct tr_msg m = win_info(3);
	uint8_t buf[TR_WIRE_MAX_LEN], bad[TR_WIRE_MAX_LEN];
	int n = encode(&m, buf);

	(void)state;
	for (size_t i = 0; i < sizeof(reserved) / sizeof(reserved[0]); i++) {
		for (int bit = 0; bit < 8; bit++) {
			memcpy(bad, buf, (size_t)n);
			bad[reserved[i]] = (uint8_t)(1u << bit);
			decode_bad(bad, (size_t)n, -EBADMSG);
		}
	}
}

static void test_decode_length_mismatch(void **state)
{
	struct tr_msg m = { .type = TR_MSG_WIN_QUERY };
	uint8_t buf[TR_WIRE_MAX_LEN];
	int n = encode(&m, buf);

	(void)state;
	for (unsigned v = 0; v <= 0xffff; v++) {
		if (v == (unsigned)n)
			continue;
		put16(buf + 4, (uint16_t)v);
		decode_bad(buf, (size_t)n, -EBADMSG);
	}
	put16(buf + 4, (uint16_t)n);
	assert_int_equal(tr_msg_decode(buf, (size_t)n, &m), 0);
}

static void test_decode_body_length_wrong_for_type(void **state)
{
	uint8_t buf[TR_WIRE_MAX_LEN];
	struct tr_msg m = { .type = TR_MSG_BARRIER };
	int n;

	(void)state;
	/* A BARRIER header with a WIN_QUERY-sized body, length field consistent. */
	memset(buf, 0, sizeof(buf));
	n = encode(&m, buf);
	put16(buf + 4, (uint16_t)(n + 4));
	decode_bad(buf, (size_t)n + 4, -EBADMSG); /* trailing bytes */
	/* A WIN_QUERY header with a BARRIER-sized body. */
	buf[3] = TR_MSG_WIN_QUERY;
	put16(buf + 4, (uint16_t)n);
	decode_bad(buf, (size_t)n, -EBADMSG); /* short body */
	/* Header only. */
	for (int t = 1; t < TR_MSG_TYPE_MAX; t++) {
		buf[3] = (uint8_t)t;
		put16(buf + 4, 16);
		decode_bad(buf, 16, -EBADMSG);
	}
	/* WIN_INFO whose plane count says 3 rkeys but 2 or 4 follow. */
	m = win_info(3);
	n = encode(&m, buf);
	put16(buf + 4, (uint16_t)(n - 4));
	decode_bad(buf, (size_t)n - 4, -EBADMSG);
	put16(buf + 4, (uint16_t)(n + 4));
	decode_bad(buf, (size_t)n + 4, -EBADMSG);
}

static void test_decode_unknown_type(void **state)
{
	uint8_t buf[TR_WIRE_MAX_LEN];
	struct tr_msg m = { .type = TR_MSG_BARRIER };
	int n = encode(&m, buf);

	(void)state;
	buf[3] = 0;
	decode_bad(buf, (size_t)n, -EPROTO);
	for (int t = TR_MSG_TYPE_MAX; t < 256; t++) {
		buf[3] = (uint8_t)t;
		decode_bad(buf, (size_t)n, -EPROTO);
	}
	/* A header alone with an unknown type. */
	put16(buf + 4, 16);
	decode_bad(buf, 16, -EPROTO);
}

static void test_decode_too_many_planes(void **state)
{
	uint8_t buf[TR_WIRE_MAX_LEN];
	struct tr_msg m = win_info(TRIAD_MAX_PLANES);
	int n;

	(void)state;
	memset(buf, 0, sizeof(buf));
	n = encode(&m, buf);
	/* nplanes = 9 with nine rkeys actually present and the length consistent. */
	put16(buf + 4, (uint16_t)(n + 4));
	put16(buf + 16 + 10, TRIAD_MAX_PLANES + 1);
	put32(buf + n, 0x1234);
	decode_bad(buf, (size_t)n + 4, -EPROTO);
	/* The largest plane count, with as many rkeys as fit. */
	put16(buf + 16 + 10, 0xffff);
	put16(buf + 4, TR_WIRE_MAX_LEN);
	decode_bad(buf, TR_WIRE_MAX_LEN, -EPROTO);
}

static void test_decode_bad_status(void **state)
{
	uint8_t buf[TR_WIRE_MAX_LEN];
	struct tr_msg m = win_info(2), out;
	int n = encode(&m, buf);

	(void)state;
	put16(buf + 16 + 8, TRIAD_S_MAX);
	decode_bad(buf, (size_t)n, -EPROTO);
	put16(buf + 16 + 8, 0xffff);
	decode_bad(buf, (size_t)n, -EPROTO);
	put16(buf + 16 + 8, TRIAD_S_MAX - 1);
	assert_int_equal(tr_msg_decode(buf, (size_t)n, &out), 0);
	assert_int_equal(out.u.win_info.status, TRIAD_S_MAX - 1);
}

static void test_decode_bad_access(void **state)
{
	uint8_t buf[TR_WIRE_MAX_LEN];
	struct tr_msg m = win_info(2), out;
	int n = encode(&m, buf);

	(void)state;
	for (int bit = 2; bit < 32; bit++) {
		put32(buf + 16 + 12, (uint32_t)1 << bit | TRIAD_WIN_READ);
		decode_bad(buf, (size_t)n, -EPROTO);
	}
	for (uint32_t a = 0; a < 4; a++) {
		put32(buf + 16 + 12, a);
		assert_int_equal(tr_msg_decode(buf, (size_t)n, &out), 0);
		assert_int_equal(out.u.win_info.access, a);
	}
}

static void test_decode_base_len_overflow(void **state)
{
	static const uint64_t bad[][2] = {
		{ UINT64_MAX, 1 },
		{ 1, UINT64_MAX },
		{ UINT64_MAX, UINT64_MAX },
		{ 1ull << 63, 1ull << 63 },
		{ 0x7f0000000000ull, UINT64_MAX - 0x7f0000000000ull + 1 },
	};
	static const uint64_t good[][2] = {
		{ UINT64_MAX, 0 },
		{ 0, UINT64_MAX },
		{ (1ull << 63) - 1, 1ull << 63 },
		{ 0x7f0000000000ull, UINT64_MAX - 0x7f0000000000ull },
	};
	uint8_t buf[TR_WIRE_MAX_LEN];
	struct tr_msg m = win_info(1), out;
	int n = encode(&m, buf);

	(void)state;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		put64(buf + 16 + 16, bad[i][0]);
		put64(buf + 16 + 24, bad[i][1]);
		decode_bad(buf, (size_t)n, -EPROTO);
	}
	for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
		put64(buf + 16 + 16, good[i][0]);
		put64(buf + 16 + 24, good[i][1]);
		assert_int_equal(tr_msg_decode(buf, (size_t)n, &out), 0);
		assert_true(out.u.win_info.base == good[i][0]);
		assert_true(out.u.win_info.len == good[i][1]);
	}
}

/* Flipping any bit of a valid message either is rejected or yields a
 * message that encodes back to exactly the flipped bytes. */
static void test_decode_bit_flips(void **state)
{
	(void)state;
	for (int i = 0; i < 2000; i++) {
		struct tr_msg m = random_msg(), out;
		uint8_t buf[TR_WIRE_MAX_LEN], again[TR_WIRE_MAX_LEN];
		int n = encode(&m, buf);
		size_t bit = rnd() % ((size_t)n * 8);

		buf[bit / 8] ^= (uint8_t)(1u << (bit % 8));
		if (tr_msg_decode(buf, (size_t)n, &out) == 0) {
			size_t byte = bit / 8;

			/* Magic, version, length and reserved fields are always checked;
			 * the type byte may legitimately turn into another type. */
			assert_true(byte == 3 || (byte >= 8 && byte < 12) || byte >= 16);
			assert_int_equal(tr_msg_encode(&out, again, sizeof(again)), n);
			assert_memory_equal(buf, again, (size_t)n);
		}
	}
}

/* ---- encoder rejects --------------------------------------------------------------- */

static void test_encode_bad_type(void **state)
{
	struct tr_msg m = { .type = TR_MSG_BARRIER };
	uint8_t buf[TR_WIRE_MAX_LEN];

	(void)state;
	m.type = (enum tr_msg_type)0;
	assert_int_equal(tr_msg_encode(&m, buf, sizeof(buf)), -EINVAL);
	m.type = TR_MSG_TYPE_MAX;
	assert_int_equal(tr_msg_encode(&m, buf, sizeof(buf)), -EINVAL);
	m.type = (enum tr_msg_type)200;
	assert_int_equal(tr_msg_encode(&m, buf, sizeof(buf)), -EINVAL);
	m.type = (enum tr_msg_type)-1;
	assert_int_equal(tr_msg_encode(&m, buf, sizeof(buf)), -EINVAL);
}

static void test_encode_inconsistent_win_info(void **state)
{
	uint8_t buf[TR_WIRE_MAX_LEN];
	struct tr_msg m;

	(void)state;
	m = win_info(TRIAD_MAX_PLANES);
	m.u.win_info.nplanes = TRIAD_MAX_PLANES + 1;
	assert_int_equal(tr_msg_encode(&m, buf, sizeof(buf)), -EINVAL);
	m.u.win_info.nplanes = 0xffff;
	assert_int_equal(tr_msg_encode(&m, buf, sizeof(buf)), -EINVAL);

	m = win_info(1);
	m.u.win_info.status = TRIAD_S_MAX;
	assert_int_equal(tr_msg_encode(&m, buf, sizeof(buf)), -EINVAL);

	/* Whatever the decoder rejects, the encoder must not produce. */
	m = win_info(1);
	m.u.win_info.access = 4;
	assert_int_equal(tr_msg_encode(&m, buf, sizeof(buf)), -EINVAL);
	m = win_info(1);
	m.u.win_info.access = 0x80000000u | TRIAD_WIN_WRITE;
	assert_int_equal(tr_msg_encode(&m, buf, sizeof(buf)), -EINVAL);
	m = win_info(1);
	m.u.win_info.base = UINT64_MAX;
	m.u.win_info.len = 1;
	assert_int_equal(tr_msg_encode(&m, buf, sizeof(buf)), -EINVAL);
	m.u.win_info.base = 2;
	m.u.win_info.len = UINT64_MAX - 1;
	assert_int_equal(tr_msg_encode(&m, buf, sizeof(buf)), -EINVAL);
}

static void test_encode_small_buffer(void **state)
{
	struct tr_msg msgs[4];

	(void)state;
	memset(msgs, 0, sizeof(msgs));
	msgs[0].type = TR_MSG_WIN_QUERY;
	msgs[1] = win_info(TRIAD_MAX_PLANES);
	msgs[2].type = TR_MSG_BARRIER;
	msgs[3] = win_info(0);
	for (int i = 0; i < 4; i++) {
		size_t len = wire_len(&msgs[i]);

		/* Exactly-sized heap buffers: ASan flags any write past size. */
		for (size_t size = 0; size < len; size++) {
			uint8_t *buf = malloc(size ? size : 1);

			assert_non_null(buf);
			memset(buf, 0xcc, size ? size : 1);
			assert_int_equal(tr_msg_encode(&msgs[i], buf, size), -ENOSPC);
			for (size_t j = 0; j < size; j++)
				assert_int_equal(buf[j], 0xcc);
			free(buf);
		}
		uint8_t *exact = malloc(len);

		assert_non_null(exact);
		assert_int_equal(tr_msg_encode(&msgs[i], exact, len), (int)len);
		free(exact);
	}
}

/* Encode succeeds exactly for the messages that decode accepts. */
static void test_encode_iff_decodable(void **state)
{
	(void)state;
	for (int i = 0; i < 20000; i++) {
		struct tr_msg m = win_info((uint16_t)(rnd() % (TRIAD_MAX_PLANES + 1))), out;
		uint8_t buf[TR_WIRE_MAX_LEN];
		int n;

		m.u.win_info.status = (uint16_t)(rnd() % (TRIAD_S_MAX + 2));
		m.u.win_info.access = (uint32_t)(rnd() % 6);
		m.u.win_info.base = rnd() % 3 ? rnd() : UINT64_MAX - rnd() % 4;
		m.u.win_info.len = rnd() % 3 ? rnd() >> (rnd() % 64) : rnd() % 4;
		n = tr_msg_encode(&m, buf, sizeof(buf));
		int valid = m.u.win_info.status < TRIAD_S_MAX && m.u.win_info.access < 4 &&
			    m.u.win_info.len <= UINT64_MAX - m.u.win_info.base;
		if (valid) {
			assert_int_equal(n, (int)wire_len(&m));
			assert_int_equal(tr_msg_decode(buf, (size_t)n, &out), 0);
			assert_msg_equal(&m, &out);
		} else {
			assert_int_equal(n, -EINVAL);
		}
	}
}

static void test_type_str(void **state)
{
	(void)state;
	assert_string_equal(tr_msg_type_str(TR_MSG_WIN_QUERY), "WIN_QUERY");
	assert_string_equal(tr_msg_type_str(TR_MSG_WIN_INFO), "WIN_INFO");
	assert_string_equal(tr_msg_type_str(TR_MSG_BARRIER), "BARRIER");
	assert_string_equal(tr_msg_type_str(TR_MSG_BARRIER_REL), "BARRIER_REL");
	assert_string_equal(tr_msg_type_str(0), "?");
	assert_string_equal(tr_msg_type_str(TR_MSG_TYPE_MAX), "?");
	assert_string_equal(tr_msg_type_str(UINT32_MAX), "?");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_layout_win_query),
		cmocka_unit_test(test_layout_win_info),
		cmocka_unit_test(test_layout_barrier),
		cmocka_unit_test(test_round_trip_each_type),
		cmocka_unit_test(test_round_trip_random),
		cmocka_unit_test(test_decode_clears_unused_rkeys),
		cmocka_unit_test(test_decode_short_and_long_buffers),
		cmocka_unit_test(test_decode_bad_magic_version),
		cmocka_unit_test(test_decode_nonzero_reserved),
		cmocka_unit_test(test_decode_length_mismatch),
		cmocka_unit_test(test_decode_body_length_wrong_for_type),
		cmocka_unit_test(test_decode_unknown_type),
		cmocka_unit_test(test_decode_too_many_planes),
		cmocka_unit_test(test_decode_bad_status),
		cmocka_unit_test(test_decode_bad_access),
		cmocka_unit_test(test_decode_base_len_overflow),
		cmocka_unit_test(test_decode_bit_flips),
		cmocka_unit_test(test_encode_bad_type),
		cmocka_unit_test(test_encode_inconsistent_win_info),
		cmocka_unit_test(test_encode_small_buffer),
		cmocka_unit_test(test_encode_iff_decodable),
		cmocka_unit_test(test_type_str),
	};

	return cmocka_run_group_tests_name("wire", tests, NULL, NULL);
}
