/* Unit tests for the message codec (lib/proto/wire.[ch]), wire format v2. */
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

/* Header offsets (wire.h). */
#define OFF_TYPE 3
#define OFF_LEN 4
#define OFF_SLOT 6
#define OFF_FLAGS 7
#define OFF_SEQ 8
#define OFF_RSVD 12
#define OFF_BSM_N 16
#define OFF_BSM_C 24
#define BODY TR_WIRE_HDR_LEN
#define FLAG_BSM 0x04
/* The largest AM payload: the whole message within the length field's limit. */
#define AM_MAX (TR_WIRE_MAX_LEN - TR_WIRE_HDR_LEN - TR_WIRE_AM_HDR_LEN)
/* Scratch buffers hold the largest message and then some (decode of
 * over-long input); they are static, never on the stack. */
#define SCRATCH (TR_WIRE_MAX_LEN + 64)

static uint8_t buf_a[SCRATCH], buf_b[SCRATCH], buf_c[SCRATCH];
static uint8_t pool[AM_MAX + 64]; /* random AM payloads point into it */

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

static uint64_t get64(const uint8_t *p)
{
	uint64_t v = 0;

	for (int i = 0; i < 8; i++)
		v |= (uint64_t)p[i] << (8 * i);
	return v;
}

static void assert_msg_equal(const struct tr_msg *a, const struct tr_msg *b)
{
	assert_int_equal(a->type, b->type);
	assert_int_equal(a->seq, b->seq);
	assert_int_equal(a->slot, b->slot);
	assert_int_equal(a->prio, b->prio);
	assert_int_equal(!!a->has_bsm, !!b->has_bsm);
	assert_true(a->bsm_n == b->bsm_n);
	assert_true(a->bsm_c == b->bsm_c);
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
	case TR_MSG_BARRIER_FAIL:
		assert_int_equal(a->u.barrier.epoch, b->u.barrier.epoch);
		break;
	case TR_MSG_PLANE_DOWN:
		assert_int_equal(a->u.plane_down.plane, b->u.plane_down.plane);
		assert_int_equal(a->u.plane_down.qpn, b->u.plane_down.qpn);
		assert_int_equal(a->u.plane_down.gen, b->u.plane_down.gen);
		assert_int_equal(a->u.plane_down.ack, b->u.plane_down.ack);
		break;
	case TR_MSG_WIN_GONE:
		assert_int_equal(a->u.win_gone.win, b->u.win_gone.win);
		break;
	case TR_MSG_PLANE_DRAIN:
		assert_int_equal(a->u.plane_drain.plane, b->u.plane_drain.plane);
		assert_int_equal(a->u.plane_drain.on, b->u.plane_drain.on);
		break;
	case TR_MSG_SEQ_SKIP:
		assert_int_equal(a->u.seq_skip.count, b->u.seq_skip.count);
		for (unsigned i = 0; i < a->u.seq_skip.count; i++)
			assert_int_equal(a->u.seq_skip.seq[i], b->u.seq_skip.seq[i]);
		break;
	case TR_MSG_BCAST_DONE:
		assert_int_equal(a->u.bcast_done.seq, b->u.bcast_done.seq);
		assert_int_equal(a->u.bcast_done.status, b->u.bcast_done.status);
		assert_int_equal(a->u.bcast_done.group, b->u.bcast_done.group);
		break;
	case TR_MSG_COPY:
		assert_int_equal(a->u.copy.kind, b->u.copy.kind);
		assert_memory_equal(&a->u.copy.hdr, &b->u.copy.hdr, sizeof(a->u.copy.hdr));
		assert_int_equal(a->u.copy.carried, b->u.copy.carried);
		if (a->u.copy.carried)
			assert_memory_equal(a->u.copy.data, b->u.copy.data, a->u.copy.carried);
		break;
	case TR_MSG_BNODE: {
		const struct tr_wire_bnode *x = &a->u.bnode, *y = &b->u.bnode;

		assert_int_equal(x->kind, y->kind);
		assert_int_equal(x->shape, y->shape);
		assert_int_equal(x->carried, y->carried);
		assert_int_equal(x->status, y->status);
		assert_int_equal(x->root, y->root);
		assert_int_equal(x->seq, y->seq);
		assert_int_equal(x->win, y->win);
		assert_int_equal(x->hi, y->hi);
		assert_int_equal(x->mul, y->mul);
		assert_int_equal(x->rot, y->rot);
		assert_int_equal(x->grp, y->grp);
		assert_int_equal(x->fan, y->fan);
		assert_int_equal(x->failed, y->failed);
		assert_int_equal(x->group, y->group);
		assert_int_equal(x->off, y->off);
		assert_int_equal(x->len, y->len);
		assert_int_equal(x->chunk, y->chunk);
		assert_int_equal(x->k, y->k);
		assert_int_equal(x->nbytes, y->nbytes);
		if (x->nbytes)
			assert_memory_equal(x->data, y->data, x->nbytes);
		break;
	}
	case TR_MSG_BSM:
	case TR_MSG_BYE:
		break;
	case TR_MSG_AM:
		assert_int_equal(a->u.am.id, b->u.am.id);
		assert_int_equal(a->u.am.len, b->u.am.len);
		if (a->u.am.len)
			assert_memory_equal(a->u.am.data, b->u.am.data, a->u.am.len);
		break;
	default:
		fail_msg("bad type %d", a->type);
	}
}

/* Expected encoded length of m (header + body, as the format defines it). */
static size_t wire_len(const struct tr_msg *m)
{
	switch (m->type) {
	case TR_MSG_WIN_QUERY: return 32 + 8;
	case TR_MSG_WIN_INFO: return 32 + 32 + 4 * (size_t)m->u.win_info.nplanes;
	case TR_MSG_BARRIER:
	case TR_MSG_BARRIER_REL:
	case TR_MSG_BARRIER_FAIL:
	case TR_MSG_WIN_GONE: return 32 + 4;
	case TR_MSG_PLANE_DOWN: return 32 + 16;
	case TR_MSG_COPY: return 32 + 64 + (size_t)m->u.copy.carried;
	case TR_MSG_BNODE: return 32 + 64 + (size_t)m->u.bnode.nbytes;
	case TR_MSG_BCAST_DONE: return 32 + 12;
	case TR_MSG_PLANE_DRAIN: return 32 + 8;
	case TR_MSG_SEQ_SKIP: return 32 + 4 + 4 * (size_t)m->u.seq_skip.count;
	case TR_MSG_BSM:
	case TR_MSG_BYE: return 32;
	case TR_MSG_AM: return 32 + 2 + (size_t)m->u.am.len;
	default: fail_msg("bad type %d", m->type); return 0;
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

static void decode_ok(const uint8_t *buf, size_t len, struct tr_msg *out)
{
	memset(out, 0xa5, sizeof(*out));
	assert_int_equal(tr_msg_decode(buf, len, out), 0);
}

static void round_trip(const struct tr_msg *m)
{
	static uint8_t buf[TR_WIRE_MAX_LEN], again[TR_WIRE_MAX_LEN];
	struct tr_msg out;
	int n = encode(m, buf), n2;

	decode_ok(buf, (size_t)n, &out);
	assert_msg_equal(m, &out);
	if (m->type == TR_MSG_AM) /* the payload is not copied out */
		assert_ptr_equal(out.u.am.data, buf + BODY + TR_WIRE_AM_HDR_LEN);
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

static struct tr_msg bsm(uint64_t n, uint64_t c)
{
	struct tr_msg m;

	memset(&m, 0, sizeof(m));
	m.type = TR_MSG_BSM;
	m.seq = 12;
	m.slot = TR_WIRE_NO_SLOT;
	m.has_bsm = 1;
	m.bsm_n = n;
	m.bsm_c = c;
	return m;
}

static struct tr_msg am(uint16_t id, const void *data, uint32_t len)
{
	struct tr_msg m;

	memset(&m, 0, sizeof(m));
	m.type = TR_MSG_AM;
	m.seq = 99;
	m.slot = 7;
	m.u.am.id = id;
	m.u.am.data = data;
	m.u.am.len = len;
	return m;
}

/* A delegated broadcast's REPORT: status, first failed rank. */
static struct tr_msg bnode_report(uint16_t status, uint32_t failed)
{
	struct tr_msg m;

	memset(&m, 0, sizeof(m));
	m.type = TR_MSG_BNODE;
	m.seq = 5;
	m.u.bnode.kind = TR_WIRE_BNODE_REPORT;
	m.u.bnode.shape = 1;
	m.u.bnode.status = status;
	m.u.bnode.failed = failed;
	m.u.bnode.root = 3;
	m.u.bnode.seq = 17;
	m.u.bnode.group = 0x80000005u;
	return m;
}

/* A small valid message of type t (link fields zero unless the type needs
 * them). */
static struct tr_msg of_type(int t)
{
	struct tr_msg m;

	switch (t) {
	case TR_MSG_BNODE: return bnode_report(0, UINT32_MAX);
	case TR_MSG_WIN_INFO: return win_info(1);
	case TR_MSG_AM: return am(1, "a", 1);
	case TR_MSG_BSM: return bsm(1, 2);
	}
	memset(&m, 0, sizeof(m));
	m.type = (enum tr_msg_type)t;
	return m;
}

/* An AM payload length: mostly small, sometimes anything up to the limit. */
static uint32_t rnd_am_len(void)
{
	switch (rnd() % 4) {
	case 0: return (uint32_t)(rnd() % 4);
	case 1: return (uint32_t)(rnd() % 256);
	case 2: return (uint32_t)(rnd() % 4096);
	default: return (uint32_t)(AM_MAX - rnd() % (AM_MAX + 1));
	}
}

/* Valid link fields for a message of m->type. */
static void rnd_link(struct tr_msg *m)
{
	m->prio = (uint8_t)(rnd() % TR_WIRE_PRIOS);
	if (m->type == TR_MSG_BSM) {
		m->slot = TR_WIRE_NO_SLOT;
		m->has_bsm = 1;
	} else {
		m->slot = (uint8_t)(rnd() % TR_WIRE_MAX_SLOTS);
		m->has_bsm = (uint8_t)(rnd() % 2);
	}
	if (m->has_bsm) {
		m->bsm_n = rnd() % 4 ? rnd() : 0;
		m->bsm_c = rnd() % 4 ? rnd() : 0;
	}
}

static struct tr_msg random_msg(void)
{
	struct tr_msg m;

	memset(&m, 0, sizeof(m));
	m.type = (enum tr_msg_type)(1 + rnd() % (TR_MSG_TYPE_MAX - 1));
	m.seq = (uint32_t)rnd();
	rnd_link(&m);
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
	case TR_MSG_BARRIER:
	case TR_MSG_BARRIER_REL:
	case TR_MSG_BARRIER_FAIL:
		m.u.barrier.epoch = (uint32_t)rnd();
		break;
	case TR_MSG_PLANE_DOWN:
		m.u.plane_down.plane = (uint32_t)(rnd() % TRIAD_MAX_PLANES);
		m.u.plane_down.qpn = (uint32_t)rnd() & 0xffffff;
		m.u.plane_down.gen = (uint32_t)rnd();
		m.u.plane_down.ack = (uint32_t)(rnd() & 1);
		break;
	case TR_MSG_WIN_GONE:
		m.u.win_gone.win = (uint32_t)rnd();
		break;
	case TR_MSG_PLANE_DRAIN:
		m.u.plane_drain.plane = (uint32_t)(rnd() % TRIAD_MAX_PLANES);
		m.u.plane_drain.on = (uint32_t)(rnd() % 2);
		break;
	case TR_MSG_SEQ_SKIP:
		m.u.seq_skip.count = (uint32_t)(rnd() % (TR_WIRE_SKIP_MAX + 1));
		for (unsigned i = 0; i < m.u.seq_skip.count; i++)
			m.u.seq_skip.seq[i] = (uint32_t)rnd();
		break;
	case TR_MSG_BCAST_DONE:
		m.u.bcast_done.seq = (uint32_t)rnd();
		m.u.bcast_done.status = (uint16_t)(rnd() % TRIAD_S_MAX);
		m.u.bcast_done.group = (uint32_t)rnd();
		break;
	case TR_MSG_COPY:
		m.u.copy.kind = (uint8_t)(rnd() % TR_COPY_NMSGS);
		m.u.copy.hdr.op_id = rnd();
		m.u.copy.hdr.initiator = (uint32_t)rnd();
		m.u.copy.hdr.source = (uint32_t)rnd();
		m.u.copy.hdr.destination = (uint32_t)rnd();
		m.u.copy.hdr.src_win = (uint32_t)rnd();
		m.u.copy.hdr.dst_win = (uint32_t)rnd();
		m.u.copy.hdr.src_off = rnd();
		m.u.copy.hdr.dst_off = rnd();
		m.u.copy.hdr.len = rnd();
		m.u.copy.hdr.mode = (uint8_t)(rnd() % TR_COPY_NMODES);
		m.u.copy.hdr.leg = (uint8_t)(rnd() % TR_COPY_NLEGS);
		m.u.copy.hdr.status = (uint16_t)(rnd() % TRIAD_S_MAX);
		if (m.u.copy.kind == TR_COPY_DATA && rnd() % 2) { /* with its data */
			m.u.copy.carried = (uint32_t)(1 + rnd() % 300);
			m.u.copy.hdr.len = m.u.copy.carried;
			m.u.copy.data = pool + rnd() % 64;
		}
		break;
	case TR_MSG_BNODE: {
		struct tr_wire_bnode *b = &m.u.bnode;

		b->kind = (uint8_t)(rnd() % TR_WIRE_BNODE_NKINDS);
		b->shape = (uint8_t)(1 + rnd() % 2);
		b->root = (uint32_t)rnd();
		b->seq = (uint32_t)rnd();
		b->win = (uint32_t)rnd();
		b->group = (uint32_t)rnd();
		b->off = rnd();
		if (b->shape == 2 && rnd() % 3 == 1) {
			b->mul = (uint8_t)(1 + rnd() % 255);
			b->rot = (uint32_t)rnd();
		} else if (b->shape == 2 && rnd() % 2) {
			b->grp = (uint16_t)(1 + rnd() % 65535);
			b->fan = (uint8_t)(1 + rnd() % 255);
		}
		if (b->kind != TR_WIRE_BNODE_ORDER) {
			b->status = (uint16_t)(rnd() % TRIAD_S_MAX);
			b->failed = (uint32_t)rnd();
			break;
		}
		b->failed = UINT32_MAX;
		b->hi = b->shape == 1 ? (uint32_t)rnd() : 0;
		if (rnd() % 2) { /* carried: its chunk's bytes, exactly */
			b->carried = 1;
			b->len = 1 + rnd() % 3000;
			b->chunk = 1 + rnd() % b->len;
			b->k = rnd() % ((b->len + b->chunk - 1) / b->chunk);
			b->nbytes = (uint32_t)(b->len - b->k * b->chunk < b->chunk
						       ? b->len - b->k * b->chunk : b->chunk);
			b->data = pool + rnd() % 64;
		} else {
			b->len = rnd();
			b->chunk = rnd();
			b->k = rnd();
		}
		break;
	}
	case TR_MSG_BSM:
	case TR_MSG_BYE:
		break;
	case TR_MSG_AM:
		m.u.am.id = (uint16_t)rnd();
		m.u.am.len = rnd_am_len();
		m.u.am.data = m.u.am.len || rnd() % 2 ? pool + rnd() % 64 : NULL;
		break;
	default:
		fail();
	}
	return m;
}

static int pool_setup(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof(pool); i++)
		pool[i] = (uint8_t)rnd();
	return 0;
}

/* ---- encoding: exact bytes ------------------------------------------------------ */

static void test_layout_win_query(void **state)
{
	static const uint8_t want[] = {
		0x72, 0x54, 0x09, 0x01, 40, 0, 0, 0, /* magic, version, type, length, slot, flags */
		0x44, 0x33, 0x22, 0x11, 0, 0, 0, 0, /* seq, rsvd */
		0, 0, 0, 0, 0, 0, 0, 0,		    /* bsm_n */
		0, 0, 0, 0, 0, 0, 0, 0,		    /* bsm_c */
		0xef, 0xbe, 0xad, 0xde, 0x04, 0x03, 0x02, 0x01,
	};
	struct tr_msg m = { .type = TR_MSG_WIN_QUERY, .seq = 0x11223344 };

	(void)state;
	m.u.win_query.qid = 0xdeadbeef;
	m.u.win_query.win = 0x01020304;
	assert_int_equal(tr_msg_encode(&m, buf_a, TR_WIRE_MAX_LEN), sizeof(want));
	assert_memory_equal(buf_a, want, sizeof(want));
}

/* A BCAST_DONE names its broadcast by the root's number and the group. */
static void test_layout_bcast_done(void **state)
{
	static const uint8_t want[] = {
		0x72, 0x54, 0x09, TR_MSG_BCAST_DONE, 44, 0, 0, 0,
		0x02, 0, 0, 0, 0, 0, 0, 0,
		0, 0, 0, 0, 0, 0, 0, 0,
		0, 0, 0, 0, 0, 0, 0, 0,
		0x44, 0x33, 0x22, 0x11, TRIAD_S_UNREACHABLE, 0, 0, 0, /* seq, status, pad */
		0x09, 0x00, 0x00, 0x80,				      /* group */
	};
	struct tr_msg m = { .type = TR_MSG_BCAST_DONE, .seq = 2 }, out;

	(void)state;
	m.u.bcast_done.seq = 0x11223344;
	m.u.bcast_done.status = TRIAD_S_UNREACHABLE;
	m.u.bcast_done.group = 0x80000009u;
	assert_int_equal(tr_msg_encode(&m, buf_a, TR_WIRE_MAX_LEN), sizeof(want));
	assert_memory_equal(buf_a, want, sizeof(want));
	assert_int_equal(tr_msg_decode(buf_a, sizeof(want), &out), 0);
	assert_int_equal(out.u.bcast_done.group, 0x80000009u);
	/* The old 8-byte body is malformed now. */
	buf_a[4] = 40;
	assert_int_equal(tr_msg_decode(buf_a, 40, &out), -EBADMSG);
}

static void test_layout_link_fields(void **state)
{
	static const uint8_t want[] = {
		0x72, 0x54, 0x09, 0x03, 36, 0, 63, 0x06, /* slot 63, prio 2 | BSM */
		0x01, 0, 0, 0, 0, 0, 0, 0,
		0x08, 0x07, 0x06, 0x05, 0x04, 0x03, 0x02, 0x01, /* bsm_n */
		0xf0, 0xde, 0xbc, 0x9a, 0x78, 0x56, 0x34, 0x12, /* bsm_c */
		0x2a, 0, 0, 0,
	};
	struct tr_msg m = { .type = TR_MSG_BARRIER, .seq = 1, .slot = 63, .prio = 2, .has_bsm = 1 };

	(void)state;
	m.bsm_n = 0x0102030405060708ull;
	m.bsm_c = 0x123456789abcdef0ull;
	m.u.barrier.epoch = 42;
	assert_int_equal(tr_msg_encode(&m, buf_a, TR_WIRE_MAX_LEN), sizeof(want));
	assert_memory_equal(buf_a, want, sizeof(want));
	/* Priority alone, no BSM. */
	m.has_bsm = 0;
	m.bsm_n = m.bsm_c = 0;
	m.prio = 1;
	m.slot = 0;
	assert_int_equal(tr_msg_encode(&m, buf_a, TR_WIRE_MAX_LEN), sizeof(want));
	assert_int_equal(buf_a[OFF_SLOT], 0);
	assert_int_equal(buf_a[OFF_FLAGS], 0x01);
	for (int i = OFF_BSM_N; i < BODY; i++)
		assert_int_equal(buf_a[i], 0);
}

static void test_layout_win_info(void **state)
{
	static const uint8_t want[] = {
		0x72, 0x54, 0x09, 0x02, 72, 0, 3, 0, 0x01, 0, 0, 0, 0, 0, 0, 0,
		0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
		0x0a, 0, 0, 0,				/* qid */
		0x0b, 0, 0, 0,				/* win */
		0x03, 0x00,				/* status */
		0x02, 0x00,				/* nplanes */
		0x01, 0, 0, 0,				/* access */
		0x08, 0x07, 0x06, 0x05, 0x04, 0x03, 0x02, 0x01, /* base */
		0x00, 0x10, 0, 0, 0, 0, 0, 0,		/* len */
		0x11, 0x22, 0x33, 0x44, 0x55, 0x66, 0x77, 0x88, /* rkeys */
	};
	struct tr_msg m = { .type = TR_MSG_WIN_INFO, .seq = 1, .slot = 3 };

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
	assert_int_equal(tr_msg_encode(&m, buf_a, TR_WIRE_MAX_LEN), sizeof(want));
	assert_memory_equal(buf_a, want, sizeof(want));
}

static void test_layout_barrier(void **state)
{
	static const uint8_t want[] = {
		0x72, 0x54, 0x09, 0x04, 36, 0, 0, 0, 0xff, 0xff, 0xff, 0xff, 0, 0, 0, 0,
		0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
		0x78, 0x56, 0x34, 0x12,
	};
	struct tr_msg m = { .type = TR_MSG_BARRIER_REL, .seq = UINT32_MAX };

	(void)state;
	m.u.barrier.epoch = 0x12345678;
	assert_int_equal(tr_msg_encode(&m, buf_a, TR_WIRE_MAX_LEN), sizeof(want));
	assert_memory_equal(buf_a, want, sizeof(want));
	m.type = TR_MSG_BARRIER;
	assert_int_equal(tr_msg_encode(&m, buf_a, TR_WIRE_MAX_LEN), sizeof(want));
	assert_int_equal(buf_a[OFF_TYPE], 0x03);
}

static void test_layout_bsm(void **state)
{
	static const uint8_t want[] = {
		0x72, 0x54, 0x09, 0x05, 32, 0, 0xff, 0x04, 0x07, 0, 0, 0, 0, 0, 0, 0,
		0xff, 0, 0, 0, 0, 0, 0, 0x80, /* bsm_n */
		0x01, 0, 0, 0, 0, 0, 0, 0,    /* bsm_c */
	};
	struct tr_msg m = bsm(0x80000000000000ffull, 1);

	(void)state;
	m.seq = 7;
	assert_int_equal(tr_msg_encode(&m, buf_a, TR_WIRE_MAX_LEN), sizeof(want));
	assert_memory_equal(buf_a, want, sizeof(want));
	m.prio = 2;
	assert_int_equal(tr_msg_encode(&m, buf_a, TR_WIRE_MAX_LEN), sizeof(want));
	assert_int_equal(buf_a[OFF_FLAGS], 0x06);
}

static void test_layout_am(void **state)
{
	static const uint8_t want[] = {
		0x72, 0x54, 0x09, 0x06, 37, 0, 0x05, 0x01, 0x02, 0, 0, 0, 0, 0, 0, 0,
		0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
		0xef, 0xbe, 'a', 'b', 'c', /* id, payload */
	};
	struct tr_msg m = am(0xbeef, "abc", 3);

	(void)state;
	m.seq = 2;
	m.slot = 5;
	m.prio = 1;
	assert_int_equal(tr_msg_encode(&m, buf_a, TR_WIRE_MAX_LEN), sizeof(want));
	assert_memory_equal(buf_a, want, sizeof(want));
	/* The unchecked readers of what this side encoded. */
	assert_int_equal(tr_wire_type(buf_a), TR_MSG_AM);
	assert_int_equal(tr_wire_prio(buf_a), 1);
	assert_int_equal(tr_wire_seq(buf_a), 2);
	for (uint8_t prio = 0; prio < TR_WIRE_PRIOS; prio++) {
		m.prio = prio;
		m.seq = 0xa1b2c3d4u;
		m.has_bsm = 1;
		tr_msg_encode(&m, buf_a, TR_WIRE_MAX_LEN);
		assert_int_equal(tr_wire_prio(buf_a), prio);
		assert_int_equal(tr_wire_seq(buf_a), 0xa1b2c3d4u);
	}
	/* The largest AM: the length field is 0xffff. */
	m = am(1, pool, AM_MAX);
	assert_int_equal(tr_msg_encode(&m, buf_a, TR_WIRE_MAX_LEN), TR_WIRE_MAX_LEN);
	assert_int_equal(buf_a[OFF_LEN], 0xff);
	assert_int_equal(buf_a[OFF_LEN + 1], 0xff);
	assert_memory_equal(buf_a + BODY + TR_WIRE_AM_HDR_LEN, pool, AM_MAX);
}

/* A COPY_DATA that carries the copy's data: the bytes follow the 64 of the
 * copy header, exactly hdr.len of them; no other copy message carries. */
static void test_copy_carried(void **state)
{
	struct tr_msg m = { .type = TR_MSG_COPY }, out;
	size_t len;
	int n;

	(void)state;
	m.u.copy.kind = TR_COPY_DATA;
	m.u.copy.hdr = (struct tr_copy_hdr){ .op_id = 9, .initiator = 1, .source = 2,
					     .destination = 3, .len = 5 };
	m.u.copy.carried = 5;
	m.u.copy.data = "hello";
	n = encode(&m, buf_a);
	assert_int_equal(n, 32 + 64 + 5);
	assert_int_equal(buf_a[OFF_LEN], 101);
	assert_memory_equal(buf_a + BODY + TR_WIRE_COPY_LEN, "hello", 5);
	assert_true(buf_a[BODY + 56] == 5); /* hdr.len */
	decode_ok(buf_a, (size_t)n, &out);
	assert_int_equal(out.u.copy.carried, 5);
	assert_ptr_equal(out.u.copy.data, buf_a + BODY + TR_WIRE_COPY_LEN);
	/* What a parked message keeps: where its data pointer is, and how much. */
	assert_ptr_equal(tr_msg_carried(&out, &len), &out.u.copy.data);
	assert_int_equal(len, 5);
	/* Without data: no pointer, and 96 bytes as before. */
	m.u.copy.carried = 0;
	n = encode(&m, buf_a);
	assert_int_equal(n, 96);
	decode_ok(buf_a, (size_t)n, &out);
	assert_int_equal(out.u.copy.carried, 0);
	assert_null(out.u.copy.data);
	assert_non_null(tr_msg_carried(&out, &len));
	assert_int_equal(len, 0);
	out.type = TR_MSG_BYE; /* a type that carries nothing */
	assert_null(tr_msg_carried(&out, &len));
	assert_int_equal(len, 0);

	/* The encoder: not all of the copy, not a COPY_DATA, no data. */
	m.u.copy.carried = 4;
	m.u.copy.data = "hello";
	assert_int_equal(tr_msg_encode(&m, buf_a, TR_WIRE_MAX_LEN), -EINVAL);
	m.u.copy.carried = 5;
	m.u.copy.kind = TR_COPY_START;
	assert_int_equal(tr_msg_encode(&m, buf_a, TR_WIRE_MAX_LEN), -EINVAL);
	m.u.copy.kind = TR_COPY_DATA;
	m.u.copy.data = NULL;
	assert_int_equal(tr_msg_encode(&m, buf_a, TR_WIRE_MAX_LEN), -EINVAL);
	/* The largest: what the length field leaves. */
	m.u.copy.carried = TR_WIRE_MAX_LEN - 96;
	m.u.copy.hdr.len = m.u.copy.carried;
	m.u.copy.data = pool;
	assert_int_equal(tr_msg_encode(&m, buf_a, TR_WIRE_MAX_LEN), TR_WIRE_MAX_LEN);
	m.u.copy.carried++;
	m.u.copy.hdr.len++;
	assert_int_equal(tr_msg_encode(&m, buf_a, TR_WIRE_MAX_LEN), -EINVAL);

	/* The decoder: trailing bytes that are not the whole copy, or after
	 * a message that is not a COPY_DATA. */
	m.u.copy.carried = 5;
	m.u.copy.hdr.len = 5;
	m.u.copy.data = "hello";
	n = encode(&m, buf_a);
	put16(buf_a + OFF_LEN, (uint16_t)(n - 1));
	decode_bad(buf_a, (size_t)n - 1, -EPROTO); /* 4 bytes of a 5-byte copy */
	put16(buf_a + OFF_LEN, (uint16_t)n);
	buf_a[BODY] = TR_COPY_RESP;
	decode_bad(buf_a, (size_t)n, -EPROTO);
	/* A short copy header is malformed, not a copy with less data. */
	put16(buf_a + OFF_LEN, 32 + 63);
	decode_bad(buf_a, 32 + 63, -EBADMSG);
}

/* The delegated broadcast's messages: 64 bytes of body, an ORDER's carried
 * chunk after them, exactly its bytes (the last chunk may be short); a
 * REPORT or ABORT carries no ORDER field and no data; kinds and shapes are
 * known ones. */
/* A BNODE's tag: encoded with these bytes of the body, decoded as it
 * was; each of the bad bytes (put in alone, then undone) refused. */
struct byte_at {
	unsigned off;
	uint8_t v;
};

static void tag_bytes(const struct tr_msg *m, const struct byte_at *want, unsigned nw,
		      const struct byte_at *bad, unsigned nb)
{
	struct tr_msg out;
	int n = encode(m, buf_a);

	for (unsigned i = 0; i < nw; i++)
		assert_int_equal(buf_a[BODY + want[i].off], want[i].v);
	decode_ok(buf_a, (size_t)n, &out);
	assert_msg_equal(m, &out);
	for (unsigned i = 0; i < nb; i++) {
		uint8_t was = buf_a[BODY + bad[i].off];

		buf_a[BODY + bad[i].off] = bad[i].v;
		decode_bad(buf_a, (size_t)n, -EPROTO);
		buf_a[BODY + bad[i].off] = was;
	}
}

static void test_bnode(void **state)
{
	struct tr_msg m, out;
	struct tr_wire_bnode *b = &m.u.bnode;
	int n;

	(void)state;
	m = bnode_report(TRIAD_S_UNREACHABLE, 6);
	n = encode(&m, buf_a);
	assert_int_equal(n, 96);
	assert_int_equal(buf_a[3], TR_MSG_BNODE);
	assert_int_equal(buf_a[BODY], TR_WIRE_BNODE_REPORT);
	assert_int_equal(buf_a[BODY + 1], 1);			 /* shape */
	assert_int_equal(buf_a[BODY + 4], TRIAD_S_UNREACHABLE); /* status */
	assert_int_equal(buf_a[BODY + 8], 3);			 /* root */
	assert_int_equal(buf_a[BODY + 12], 17);			 /* seq */
	assert_int_equal(buf_a[BODY + 24], 6);			 /* failed */
	assert_int_equal(buf_a[BODY + 28], 5);			 /* group, little-endian */
	assert_int_equal(buf_a[BODY + 31], 0x80);
	decode_ok(buf_a, (size_t)n, &out);
	assert_msg_equal(&m, &out);
	assert_null(out.u.bnode.data);

	/* A carried ORDER of chunk 2 of 10 bytes in chunks of 4: 2 bytes. */
	memset(&m, 0, sizeof(m));
	m.type = TR_MSG_BNODE;
	b->kind = TR_WIRE_BNODE_ORDER;
	b->shape = 2;
	b->carried = 1;
	b->failed = UINT32_MAX;
	b->len = 10;
	b->chunk = 4;
	b->k = 2;
	b->nbytes = 2;
	b->data = "hi";
	n = encode(&m, buf_a);
	assert_int_equal(n, 98);
	assert_memory_equal(buf_a + BODY + TR_WIRE_BNODE_LEN, "hi", 2);
	decode_ok(buf_a, (size_t)n, &out);
	assert_msg_equal(&m, &out);
	assert_ptr_equal(out.u.bnode.data, buf_a + BODY + TR_WIRE_BNODE_LEN);
	/* One byte short of its chunk: refused both ways. */
	put16(buf_a + OFF_LEN, (uint16_t)(n - 1));
	decode_bad(buf_a, (size_t)n - 1, -EPROTO);
	b->nbytes = 1;
	assert_int_equal(tr_msg_encode(&m, buf_a, TR_WIRE_MAX_LEN), -EINVAL);
	/* Carried but no data; data but not carried; a chunk past the end. */
	b->nbytes = 0;
	assert_int_equal(tr_msg_encode(&m, buf_a, TR_WIRE_MAX_LEN), -EINVAL);
	b->carried = 0;
	b->nbytes = 2;
	assert_int_equal(tr_msg_encode(&m, buf_a, TR_WIRE_MAX_LEN), -EINVAL);
	b->carried = 1;
	b->k = 3;
	assert_int_equal(tr_msg_encode(&m, buf_a, TR_WIRE_MAX_LEN), -EINVAL);
	/* The last chunk of a whole number of them is whole. */
	b->len = 12;
	b->k = 2;
	b->nbytes = 4;
	b->data = "abcd";
	n = encode(&m, buf_a);
	assert_int_equal(n, 100);
	b->len = 10;
	b->nbytes = 2;
	b->data = "hi";
	/* An ORDER with a status or a failed rank. */
	b->k = 2;
	b->status = TRIAD_S_TRANSPORT;
	assert_int_equal(tr_msg_encode(&m, buf_a, TR_WIRE_MAX_LEN), -EINVAL);
	b->status = 0;
	b->failed = 1;
	assert_int_equal(tr_msg_encode(&m, buf_a, TR_WIRE_MAX_LEN), -EINVAL);
	b->failed = UINT32_MAX;
	n = encode(&m, buf_a);

	/* The decoder: unknown kind and shapes, a REPORT with ORDER fields or
	 * data, a bad status, non-zero padding. */
	buf_a[BODY] = TR_WIRE_BNODE_NKINDS;
	decode_bad(buf_a, (size_t)n, -EPROTO);
	buf_a[BODY] = TR_WIRE_BNODE_REPORT; /* with 2 bytes and a length */
	decode_bad(buf_a, (size_t)n, -EPROTO);
	buf_a[BODY] = TR_WIRE_BNODE_ORDER;
	buf_a[BODY + 1] = 0;
	decode_bad(buf_a, (size_t)n, -EPROTO);
	buf_a[BODY + 1] = 3;
	decode_bad(buf_a, (size_t)n, -EPROTO);
	buf_a[BODY + 1] = 2;
	buf_a[BODY + 6] = 1; /* groups without a fan-out */
	decode_bad(buf_a, (size_t)n, -EPROTO);
	buf_a[BODY + 6] = 0;
	buf_a[BODY + 28] = 7; /* any group id */
	decode_ok(buf_a, (size_t)n, &out);
	assert_int_equal(out.u.bnode.group, 7);
	m = bnode_report(TRIAD_S_MAX, 1);
	assert_int_equal(tr_msg_encode(&m, buf_a, TR_WIRE_MAX_LEN), -EINVAL);
	m = bnode_report(0, 1);
	m.u.bnode.len = 1;
	assert_int_equal(tr_msg_encode(&m, buf_a, TR_WIRE_MAX_LEN), -EINVAL);
	/* A short body is malformed. */
	m = bnode_report(0, 1);
	n = encode(&m, buf_a);
	put16(buf_a + OFF_LEN, 32 + 63);
	decode_bad(buf_a, 32 + 63, -EBADMSG);

	/* TWOTREE's relabelling (wire 6): mul in byte 3, rot in hi's word;
	 * its groups (wire 7): grp in the half-word after status, fan in byte
	 * 3.  On every kind; none on TREE, no rot without a mul, no hi, grp
	 * and fan both or neither, not with a relabelling. */
	{
		static const struct {
			uint8_t mul, fan;
			uint16_t grp;
			uint32_t rot;
			struct byte_at want[3], bad[3];
			unsigned nbad;
		} tags[] = {
			{ 5, 0, 0, 0x01020304, { { 3, 5 }, { 20, 4 }, { 23, 1 } },
			  { { 3, 0 }, { 1, 1 } }, 2 },
			{ 0, 7, 0x0120, 0, { { 3, 7 }, { 6, 0x20 }, { 7, 0x01 } },
			  { { 3, 0 }, { 20, 1 }, { 1, 1 } }, 3 },
		};

		for (unsigned i = 0; i < sizeof(tags) / sizeof(tags[0]); i++) {
			m = bnode_report(0, 1);
			b->shape = 2;
			b->mul = tags[i].mul;
			b->rot = tags[i].rot;
			b->grp = tags[i].grp;
			b->fan = tags[i].fan;
			tag_bytes(&m, tags[i].want, 3, tags[i].bad, tags[i].nbad);
		}
	}
	b->mul = 5;
	assert_int_equal(tr_msg_encode(&m, buf_a, TR_WIRE_MAX_LEN), -EINVAL);
	b->mul = 0;
	b->fan = 0;
	assert_int_equal(tr_msg_encode(&m, buf_a, TR_WIRE_MAX_LEN), -EINVAL);
	b->grp = 0;
	b->fan = 7;
	assert_int_equal(tr_msg_encode(&m, buf_a, TR_WIRE_MAX_LEN), -EINVAL);
	b->fan = 0;
	b->rot = 9;
	assert_int_equal(tr_msg_encode(&m, buf_a, TR_WIRE_MAX_LEN), -EINVAL);
	b->mul = 5;
	b->hi = 1;
	assert_int_equal(tr_msg_encode(&m, buf_a, TR_WIRE_MAX_LEN), -EINVAL);
	m = bnode_report(0, 1);
	m.u.bnode.mul = 1;
	assert_int_equal(tr_msg_encode(&m, buf_a, TR_WIRE_MAX_LEN), -EINVAL);
}

static void test_ctrl_len(void **state)
{
	struct tr_msg m = win_info(TRIAD_MAX_PLANES), b = bsm(1, 2);

	(void)state;
	/* Every message but AM fits a control buffer. */
	assert_true(wire_len(&m) <= TR_WIRE_CTRL_LEN);
	assert_true(wire_len(&b) <= TR_WIRE_CTRL_LEN);
	assert_int_equal(AM_MAX, 65501);
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

	/* BSM: zero, all ones, any priority. */
	m = bsm(0, 0);
	round_trip(&m);
	m = bsm(UINT64_MAX, UINT64_MAX);
	for (uint8_t p = 0; p < TR_WIRE_PRIOS; p++) {
		m.prio = p;
		round_trip(&m);
	}
	m = bsm(1, 1ull << 63);
	m.seq = UINT32_MAX;
	round_trip(&m);
}

static void test_round_trip_link_fields(void **state)
{
	(void)state;
	for (int t = 1; t < TR_MSG_TYPE_MAX; t++) {
		struct tr_msg m;

		if (t == TR_MSG_BSM)
			continue;
		for (int slot = 0; slot < TR_WIRE_MAX_SLOTS; slot++) {
			for (uint8_t p = 0; p < TR_WIRE_PRIOS; p++) {
				for (int b = 0; b < 2; b++) {
					memset(&m, 0, sizeof(m));
					m.type = (enum tr_msg_type)t;
					if (t == TR_MSG_WIN_INFO)
						m = win_info((uint16_t)(slot % (TRIAD_MAX_PLANES + 1)));
					if (t == TR_MSG_AM)
						m = am((uint16_t)slot, pool, (uint32_t)slot);
					if (t == TR_MSG_BNODE)
						m = bnode_report(0, (uint32_t)slot);
					m.seq = (uint32_t)slot * 0x01010101u;
					m.slot = (uint8_t)slot;
					m.prio = p;
					m.has_bsm = (uint8_t)b;
					m.bsm_n = b ? UINT64_MAX >> slot : 0;
					m.bsm_c = b ? 1ull << slot : 0;
					round_trip(&m);
				}
			}
		}
	}
}

static void test_round_trip_am(void **state)
{
	static const uint32_t lens[] = { 0, 1, 2, 3, 4, 255, 256, 4096, 65000,
					 AM_MAX - 2, AM_MAX - 1, AM_MAX };
	struct tr_msg m, out;
	int n;

	(void)state;
	/* Empty, without and with a data pointer. */
	m = am(0, NULL, 0);
	round_trip(&m);
	m = am(UINT16_MAX, pool, 0);
	round_trip(&m);
	n = encode(&m, buf_a);
	assert_int_equal(n, BODY + TR_WIRE_AM_HDR_LEN);
	decode_ok(buf_a, (size_t)n, &out);
	assert_int_equal(out.u.am.len, 0);
	assert_int_equal(out.u.am.id, UINT16_MAX);
	assert_ptr_equal(out.u.am.data, buf_a + n); /* one past the end: nothing to read */

	/* One byte, each value. */
	for (int v = 0; v < 256; v++) {
		uint8_t byte = (uint8_t)v;

		m = am((uint16_t)v, &byte, 1);
		round_trip(&m);
	}
	for (size_t i = 0; i < sizeof(lens) / sizeof(lens[0]); i++) {
		m = am((uint16_t)i, pool + i, lens[i]);
		m.prio = (uint8_t)(i % TR_WIRE_PRIOS);
		m.has_bsm = (uint8_t)(i % 2);
		m.bsm_n = m.has_bsm ? rnd() : 0;
		round_trip(&m);
	}
	/* Near the limit: the payload is read in place, not copied. */
	m = am(0x1234, pool, AM_MAX);
	n = encode(&m, buf_a);
	assert_int_equal(n, TR_WIRE_MAX_LEN);
	decode_ok(buf_a, (size_t)n, &out);
	assert_int_equal(out.u.am.id, 0x1234);
	assert_int_equal(out.u.am.len, AM_MAX);
	assert_ptr_equal(out.u.am.data, buf_a + BODY + TR_WIRE_AM_HDR_LEN);
	assert_memory_equal(out.u.am.data, pool, AM_MAX);
	/* Changing the buffer changes what the decoded message sees. */
	buf_a[n - 1] ^= 0xff;
	assert_int_equal(((const uint8_t *)out.u.am.data)[AM_MAX - 1], buf_a[n - 1]);
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
	int n = encode(&m, buf_a);

	(void)state;
	decode_ok(buf_a, (size_t)n, &out);
	for (int i = 1; i < TRIAD_MAX_PLANES; i++)
		assert_int_equal(out.u.win_info.rkey[i], 0);
	/* And the BSM fields when the flag is clear. */
	assert_int_equal(out.has_bsm, 0);
	assert_true(out.bsm_n == 0 && out.bsm_c == 0);
}

/* ---- decoder rejects ------------------------------------------------------------------ */

static void test_decode_short_and_long_buffers(void **state)
{
	struct tr_msg m = win_info(TRIAD_MAX_PLANES), out;
	int n;

	(void)state;
	memset(buf_a, 0, sizeof(buf_a));
	n = encode(&m, buf_a);
	/* Every truncation, including below the header. */
	for (int len = 0; len < n; len++)
		decode_bad(buf_a, (size_t)len, -EBADMSG);
	/* Longer than the length field says (trailing bytes, field not updated). */
	for (int len = n + 1; len <= n + 8; len++)
		decode_bad(buf_a, (size_t)len, -EBADMSG);

	/* The same for a BSM (header only) and a small AM. */
	m = bsm(5, 6);
	n = encode(&m, buf_a);
	for (int len = 0; len < n; len++)
		decode_bad(buf_a, (size_t)len, -EBADMSG);
	for (int len = n + 1; len <= n + 8; len++)
		decode_bad(buf_a, (size_t)len, -EBADMSG);
	m = am(3, "hello", 5);
	n = encode(&m, buf_a);
	for (int len = 0; len < n; len++)
		decode_bad(buf_a, (size_t)len, -EBADMSG);
	for (int len = n + 1; len <= n + 8; len++)
		decode_bad(buf_a, (size_t)len, -EBADMSG);

	/* The largest message decodes; one byte more does not, whatever the
	 * length field says. */
	m = am(3, pool, AM_MAX);
	n = encode(&m, buf_a);
	assert_int_equal(n, TR_WIRE_MAX_LEN);
	decode_ok(buf_a, (size_t)n, &out);
	decode_bad(buf_a, TR_WIRE_MAX_LEN + 1, -EBADMSG);
	decode_bad(buf_a, sizeof(buf_a), -EBADMSG);
	decode_bad(buf_a, (size_t)n - 1, -EBADMSG);
	put16(buf_a + OFF_LEN, 0);
	decode_bad(buf_a, TR_WIRE_MAX_LEN + 1, -EBADMSG);
	decode_bad(buf_a, (size_t)1 << 16, -EBADMSG); /* the length field wraps to 0 */
}

static void test_decode_bad_magic_version(void **state)
{
	struct tr_msg msgs[2] = { { .type = TR_MSG_BARRIER }, bsm(0, 0) };

	(void)state;
	for (size_t k = 0; k < 2; k++) {
		int n = encode(&msgs[k], buf_a);

		memcpy(buf_b, buf_a, (size_t)n);
		put16(buf_b, 0x7254); /* byte-swapped magic */
		decode_bad(buf_b, (size_t)n, -EBADMSG);
		memcpy(buf_b, buf_a, (size_t)n);
		buf_b[0] ^= 1;
		decode_bad(buf_b, (size_t)n, -EBADMSG);
		memcpy(buf_b, buf_a, (size_t)n);
		buf_b[1] = 0;
		decode_bad(buf_b, (size_t)n, -EBADMSG);
		for (int v = 0; v < 256; v++) {
			if (v == TR_WIRE_VERSION)
				continue;
			memcpy(buf_b, buf_a, (size_t)n);
			buf_b[2] = (uint8_t)v;
			decode_bad(buf_b, (size_t)n, -EBADMSG);
		}
	}
	/* A version 1 message (16-byte header) is not understood. */
	{
		static const uint8_t v1[] = {
			0x72, 0x54, 0x01, 0x03, 20, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 5, 0, 0, 0,
		};

		decode_bad(v1, sizeof(v1), -EBADMSG);
	}
}

static void test_decode_nonzero_reserved(void **state)
{
	struct tr_msg msgs[4];

	(void)state;
	msgs[0] = win_info(3);
	msgs[1] = bsm(1, 2);
	msgs[2] = am(9, "xyz", 3);
	memset(&msgs[3], 0, sizeof(msgs[3]));
	msgs[3].type = TR_MSG_BARRIER;
	msgs[3].has_bsm = 1;
	msgs[3].prio = 2;
	for (int k = 0; k < 4; k++) {
		int n = encode(&msgs[k], buf_a);

		/* The u32 reserved at offset 12. */
		for (int i = OFF_RSVD; i < OFF_RSVD + 4; i++) {
			for (int bit = 0; bit < 8; bit++) {
				memcpy(buf_b, buf_a, (size_t)n);
				buf_b[i] ^= (uint8_t)(1u << bit);
				decode_bad(buf_b, (size_t)n, -EBADMSG);
			}
		}
		/* Unknown flag bits, alone or with valid ones. */
		for (int bit = 3; bit < 8; bit++) {
			memcpy(buf_b, buf_a, (size_t)n);
			buf_b[OFF_FLAGS] |= (uint8_t)(1u << bit);
			decode_bad(buf_b, (size_t)n, -EBADMSG);
		}
		memcpy(buf_b, buf_a, (size_t)n);
		buf_b[OFF_FLAGS] = 0xff;
		decode_bad(buf_b, (size_t)n, -EBADMSG);
	}
}

/* The AM's id is 16 bits on the wire, little-endian at body offset 0,
 * the payload right after it: ids the API refuses (above TRIAD_AM_MAX_ID)
 * still decode, and the receiver drops them as having no handler. */
static void test_am_id(void **state)
{
	static const uint16_t ids[] = { 0, 1, TRIAD_AM_MAX_ID, 0x0102, 0x8000, 0xffff };
	struct tr_msg m = am(0, "payload", 7), out;

	(void)state;
	for (size_t i = 0; i < sizeof(ids) / sizeof(ids[0]); i++) {
		int n;

		m.u.am.id = ids[i];
		n = encode(&m, buf_a);
		assert_int_equal(n, BODY + TR_WIRE_AM_HDR_LEN + 7);
		assert_int_equal(buf_a[BODY], ids[i] & 0xff);
		assert_int_equal(buf_a[BODY + 1], ids[i] >> 8);
		assert_memory_equal(buf_a + BODY + 2, "payload", 7);
		assert_int_equal(tr_msg_decode(buf_a, (size_t)n, &out), 0);
		assert_int_equal(out.u.am.id, ids[i]);
		assert_int_equal(out.u.am.len, 7);
	}
}

static void test_decode_bad_prio(void **state)
{
	struct tr_msg m = win_info(2);
	int n;

	(void)state;
	n = encode(&m, buf_a);
	buf_a[OFF_FLAGS] = 3;
	decode_bad(buf_a, (size_t)n, -EPROTO);
	buf_a[OFF_FLAGS] = 3 | FLAG_BSM;
	decode_bad(buf_a, (size_t)n, -EPROTO);
	m = bsm(1, 1);
	n = encode(&m, buf_a);
	buf_a[OFF_FLAGS] = 3 | FLAG_BSM;
	decode_bad(buf_a, (size_t)n, -EPROTO);
	/* Every other priority is accepted. */
	for (uint8_t p = 0; p < TR_WIRE_PRIOS; p++) {
		struct tr_msg out;

		buf_a[OFF_FLAGS] = (uint8_t)(p | FLAG_BSM);
		decode_ok(buf_a, (size_t)n, &out);
		assert_int_equal(out.prio, p);
	}
}

static void test_decode_bsm_link(void **state)
{
	struct tr_msg m = bsm(0x1111, 0x2222), out;
	int n = encode(&m, buf_a);

	(void)state;
	decode_ok(buf_a, (size_t)n, &out);
	assert_msg_equal(&m, &out);
	/* Without the flag: with the status bits, and with them cleared too. */
	memcpy(buf_b, buf_a, (size_t)n);
	buf_b[OFF_FLAGS] &= (uint8_t)~FLAG_BSM;
	decode_bad(buf_b, (size_t)n, -EPROTO);
	memset(buf_b + OFF_BSM_N, 0, 16);
	decode_bad(buf_b, (size_t)n, -EPROTO);
	buf_b[OFF_FLAGS] = 2;
	decode_bad(buf_b, (size_t)n, -EPROTO);
	/* With any slot. */
	for (int s = 0; s < TR_WIRE_NO_SLOT; s++) {
		memcpy(buf_b, buf_a, (size_t)n);
		buf_b[OFF_SLOT] = (uint8_t)s;
		decode_bad(buf_b, (size_t)n, -EPROTO);
	}
}

static void test_decode_bad_slot(void **state)
{
	(void)state;
	for (int t = 1; t < TR_MSG_TYPE_MAX; t++) {
		struct tr_msg m, out;
		int n;

		if (t == TR_MSG_BSM)
			continue;
		m = of_type(t);
		for (int b = 0; b < 2; b++) {
			m.has_bsm = (uint8_t)b;
			n = encode(&m, buf_a);
			for (int s = 0; s < 256; s++) {
				buf_a[OFF_SLOT] = (uint8_t)s;
				if (s < TR_WIRE_MAX_SLOTS) {
					decode_ok(buf_a, (size_t)n, &out);
					assert_int_equal(out.slot, s);
				} else {
					decode_bad(buf_a, (size_t)n, -EPROTO);
				}
			}
		}
	}
}

static void test_decode_bsm_fields_without_flag(void **state)
{
	(void)state;
	for (int t = 1; t < TR_MSG_TYPE_MAX; t++) {
		struct tr_msg m, out;
		int n;

		if (t == TR_MSG_BSM)
			continue;
		m = of_type(t);
		m.prio = 1;
		n = encode(&m, buf_a);
		for (int i = OFF_BSM_N; i < BODY; i++) {
			for (int bit = 0; bit < 8; bit += 7) {
				memcpy(buf_b, buf_a, (size_t)n);
				buf_b[i] = (uint8_t)(1u << bit);
				decode_bad(buf_b, (size_t)n, -EPROTO);
				/* The same bytes with the flag are a valid status. */
				buf_b[OFF_FLAGS] |= FLAG_BSM;
				decode_ok(buf_b, (size_t)n, &out);
				assert_int_equal(out.has_bsm, 1);
				assert_true(out.bsm_n == get64(buf_b + OFF_BSM_N));
				assert_true(out.bsm_c == get64(buf_b + OFF_BSM_C));
			}
		}
		/* The flag with a zero status is fine too. */
		buf_a[OFF_FLAGS] |= FLAG_BSM;
		decode_ok(buf_a, (size_t)n, &out);
		assert_int_equal(out.has_bsm, 1);
		assert_true(out.bsm_n == 0 && out.bsm_c == 0);
	}
}

static void test_decode_length_mismatch(void **state)
{
	static const uint32_t am_lens[] = { 0, 100, AM_MAX };
	struct tr_msg m = { .type = TR_MSG_WIN_QUERY };
	int n = encode(&m, buf_a);

	(void)state;
	for (unsigned v = 0; v <= 0xffff; v++) {
		if (v == (unsigned)n)
			continue;
		put16(buf_a + OFF_LEN, (uint16_t)v);
		decode_bad(buf_a, (size_t)n, -EBADMSG);
	}
	put16(buf_a + OFF_LEN, (uint16_t)n);
	assert_int_equal(tr_msg_decode(buf_a, (size_t)n, &m), 0);
	/* An AM takes its payload length from the buffer: the field must agree. */
	for (size_t i = 0; i < sizeof(am_lens) / sizeof(am_lens[0]); i++) {
		m = am(1, pool, am_lens[i]);
		n = encode(&m, buf_a);
		for (int d = -3; d <= 3; d++) {
			if (d == 0)
				continue;
			put16(buf_a + OFF_LEN, (uint16_t)(n + d));
			decode_bad(buf_a, (size_t)n, -EBADMSG);
		}
	}
}

static void test_decode_body_length_wrong_for_type(void **state)
{
	struct tr_msg m = { .type = TR_MSG_BARRIER }, out;
	int n;

	(void)state;
	/* A BARRIER header with a WIN_QUERY-sized body, length field consistent. */
	memset(buf_a, 0, sizeof(buf_a));
	n = encode(&m, buf_a);
	put16(buf_a + OFF_LEN, (uint16_t)(n + 4));
	decode_bad(buf_a, (size_t)n + 4, -EBADMSG); /* trailing bytes */
	/* A WIN_QUERY header with a BARRIER-sized body. */
	buf_a[OFF_TYPE] = TR_MSG_WIN_QUERY;
	put16(buf_a + OFF_LEN, (uint16_t)n);
	decode_bad(buf_a, (size_t)n, -EBADMSG); /* short body */
	/* Header only: a body is missing for every type but BSM and BYE. */
	for (int t = 1; t < TR_MSG_TYPE_MAX; t++) {
		if (t == TR_MSG_BSM || t == TR_MSG_BYE)
			continue;
		buf_a[OFF_TYPE] = (uint8_t)t;
		put16(buf_a + OFF_LEN, TR_WIRE_HDR_LEN);
		decode_bad(buf_a, TR_WIRE_HDR_LEN, -EBADMSG);
	}
	/* An AM shorter than its id and reserved field. */
	m = am(0xabcd, NULL, 0);
	n = encode(&m, buf_a);
	for (int len = TR_WIRE_HDR_LEN; len < n; len++) {
		put16(buf_a + OFF_LEN, (uint16_t)len);
		decode_bad(buf_a, (size_t)len, -EBADMSG);
	}
	/* A BSM has no body: any byte after the header is too many. */
	m = bsm(1, 2);
	n = encode(&m, buf_a);
	for (int extra = 1; extra <= 8; extra++) {
		put16(buf_a + OFF_LEN, (uint16_t)(n + extra));
		decode_bad(buf_a, (size_t)n + (size_t)extra, -EBADMSG);
	}
	put16(buf_a + OFF_LEN, (uint16_t)n);
	decode_ok(buf_a, (size_t)n, &out);
	/* WIN_INFO whose plane count says 3 rkeys but 2 or 4 follow. */
	m = win_info(3);
	n = encode(&m, buf_a);
	put16(buf_a + OFF_LEN, (uint16_t)(n - 4));
	decode_bad(buf_a, (size_t)n - 4, -EBADMSG);
	put16(buf_a + OFF_LEN, (uint16_t)(n + 4));
	decode_bad(buf_a, (size_t)n + 4, -EBADMSG);
}

static void test_decode_unknown_type(void **state)
{
	struct tr_msg m = { .type = TR_MSG_BARRIER };
	int n = encode(&m, buf_a);

	(void)state;
	buf_a[OFF_TYPE] = 0;
	decode_bad(buf_a, (size_t)n, -EPROTO);
	for (int t = TR_MSG_TYPE_MAX; t < 256; t++) {
		buf_a[OFF_TYPE] = (uint8_t)t;
		decode_bad(buf_a, (size_t)n, -EPROTO);
	}
	/* A header alone with an unknown type, with BSM-like link fields too. */
	put16(buf_a + OFF_LEN, TR_WIRE_HDR_LEN);
	decode_bad(buf_a, TR_WIRE_HDR_LEN, -EPROTO);
	buf_a[OFF_SLOT] = TR_WIRE_NO_SLOT;
	buf_a[OFF_FLAGS] = FLAG_BSM;
	decode_bad(buf_a, TR_WIRE_HDR_LEN, -EPROTO);
	buf_a[OFF_TYPE] = 0;
	decode_bad(buf_a, TR_WIRE_HDR_LEN, -EPROTO);
}

static void test_decode_too_many_planes(void **state)
{
	struct tr_msg m = win_info(TRIAD_MAX_PLANES);
	int n;

	(void)state;
	memset(buf_a, 0, sizeof(buf_a));
	n = encode(&m, buf_a);
	/* nplanes = 9 with nine rkeys actually present and the length consistent. */
	put16(buf_a + OFF_LEN, (uint16_t)(n + 4));
	put16(buf_a + BODY + 10, TRIAD_MAX_PLANES + 1);
	put32(buf_a + n, 0x1234);
	decode_bad(buf_a, (size_t)n + 4, -EPROTO);
	/* The largest plane count, with as many rkeys as fit. */
	put16(buf_a + BODY + 10, 0xffff);
	put16(buf_a + OFF_LEN, TR_WIRE_MAX_LEN);
	decode_bad(buf_a, TR_WIRE_MAX_LEN, -EPROTO);
}

static void test_decode_bad_status(void **state)
{
	struct tr_msg m = win_info(2), out;
	int n = encode(&m, buf_a);

	(void)state;
	put16(buf_a + BODY + 8, TRIAD_S_MAX);
	decode_bad(buf_a, (size_t)n, -EPROTO);
	put16(buf_a + BODY + 8, 0xffff);
	decode_bad(buf_a, (size_t)n, -EPROTO);
	put16(buf_a + BODY + 8, TRIAD_S_MAX - 1);
	decode_ok(buf_a, (size_t)n, &out);
	assert_int_equal(out.u.win_info.status, TRIAD_S_MAX - 1);
}

/* PLANE_DRAIN: the plane must exist, "on" is 0 or 1; encode refuses what
 * decode refuses. */
static void test_decode_bad_plane_drain(void **state)
{
	struct tr_msg m = { .type = TR_MSG_PLANE_DRAIN, .seq = 3 }, out;
	int n;

	(void)state;
	m.u.plane_drain.plane = TRIAD_MAX_PLANES - 1;
	m.u.plane_drain.on = 1;
	n = encode(&m, buf_a);
	assert_int_equal(n, TR_WIRE_HDR_LEN + 8);
	decode_ok(buf_a, (size_t)n, &out);
	assert_int_equal(out.u.plane_drain.plane, TRIAD_MAX_PLANES - 1);
	assert_int_equal(out.u.plane_drain.on, 1);
	put32(buf_a + BODY, TRIAD_MAX_PLANES);
	decode_bad(buf_a, (size_t)n, -EPROTO);
	put32(buf_a + BODY, 0);
	put32(buf_a + BODY + 4, 2);
	decode_bad(buf_a, (size_t)n, -EPROTO);
	m.u.plane_drain.on = 2;
	assert_int_equal(tr_msg_encode(&m, buf_b, TR_WIRE_MAX_LEN), -EINVAL);
	m.u.plane_drain.on = 0;
	m.u.plane_drain.plane = TRIAD_MAX_PLANES;
	assert_int_equal(tr_msg_encode(&m, buf_b, TR_WIRE_MAX_LEN), -EINVAL);
}

/* PLANE_DOWN: a plane below TRIAD_MAX_PLANES, ack 0 or 1, and its
 * question's QP number and break count back unchanged. */
static void test_decode_bad_plane_down(void **state)
{
	struct tr_msg m = { .type = TR_MSG_PLANE_DOWN, .seq = 5 }, out;
	int n;

	(void)state;
	m.u.plane_down.plane = TRIAD_MAX_PLANES - 1;
	m.u.plane_down.qpn = 0x123456;
	m.u.plane_down.gen = 0xfffffffeu;
	m.u.plane_down.ack = 1;
	n = encode(&m, buf_a);
	assert_int_equal(n, TR_WIRE_HDR_LEN + 16);
	decode_ok(buf_a, (size_t)n, &out);
	assert_int_equal(out.u.plane_down.qpn, 0x123456);
	assert_int_equal(out.u.plane_down.gen, 0xfffffffeu);
	assert_int_equal(out.u.plane_down.ack, 1);
	put32(buf_a + BODY, TRIAD_MAX_PLANES);
	decode_bad(buf_a, (size_t)n, -EPROTO);
	put32(buf_a + BODY, 0);
	put32(buf_a + BODY + 12, 2);
	decode_bad(buf_a, (size_t)n, -EPROTO);
	m.u.plane_down.ack = 2;
	assert_int_equal(tr_msg_encode(&m, buf_b, TR_WIRE_MAX_LEN), -EINVAL);
	m.u.plane_down.ack = 0;
	m.u.plane_down.plane = TRIAD_MAX_PLANES;
	assert_int_equal(tr_msg_encode(&m, buf_b, TR_WIRE_MAX_LEN), -EINVAL);
}

/* SEQ_SKIP: at most TR_WIRE_SKIP_MAX numbers, and exactly as many as it
 * says. */
static void test_decode_bad_seq_skip(void **state)
{
	struct tr_msg m = { .type = TR_MSG_SEQ_SKIP, .seq = 0 }, out;
	int n;

	(void)state;
	m.u.seq_skip.count = TR_WIRE_SKIP_MAX;
	for (unsigned i = 0; i < TR_WIRE_SKIP_MAX; i++)
		m.u.seq_skip.seq[i] = 0xfffffff0u + i;
	n = encode(&m, buf_a);
	assert_int_equal(n, TR_WIRE_HDR_LEN + 4 + 4 * TR_WIRE_SKIP_MAX);
	assert_true((size_t)n <= TR_WIRE_CTRL_LEN);
	decode_ok(buf_a, (size_t)n, &out);
	assert_int_equal(out.u.seq_skip.seq[TR_WIRE_SKIP_MAX - 1], 0xfffffff0u + TR_WIRE_SKIP_MAX - 1);
	put32(buf_a + BODY, TR_WIRE_SKIP_MAX + 1);
	decode_bad(buf_a, (size_t)n, -EPROTO);
	put32(buf_a + BODY, TR_WIRE_SKIP_MAX - 1); /* one number more than it says */
	decode_bad(buf_a, (size_t)n, -EBADMSG);
	m.u.seq_skip.count = TR_WIRE_SKIP_MAX + 1;
	assert_int_equal(tr_msg_encode(&m, buf_b, TR_WIRE_MAX_LEN), -EINVAL);
}

static void test_decode_bad_access(void **state)
{
	struct tr_msg m = win_info(2), out;
	int n = encode(&m, buf_a);

	(void)state;
	for (int bit = 2; bit < 32; bit++) {
		put32(buf_a + BODY + 12, (uint32_t)1 << bit | TRIAD_WIN_READ);
		decode_bad(buf_a, (size_t)n, -EPROTO);
	}
	for (uint32_t a = 0; a < 4; a++) {
		put32(buf_a + BODY + 12, a);
		decode_ok(buf_a, (size_t)n, &out);
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
	struct tr_msg m = win_info(1), out;
	int n = encode(&m, buf_a);

	(void)state;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		put64(buf_a + BODY + 16, bad[i][0]);
		put64(buf_a + BODY + 24, bad[i][1]);
		decode_bad(buf_a, (size_t)n, -EPROTO);
	}
	for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
		put64(buf_a + BODY + 16, good[i][0]);
		put64(buf_a + BODY + 24, good[i][1]);
		decode_ok(buf_a, (size_t)n, &out);
		assert_true(out.u.win_info.base == good[i][0]);
		assert_true(out.u.win_info.len == good[i][1]);
	}
}

/* Flipping any bit of a valid message either is rejected or yields a
 * message that encodes back to exactly the flipped bytes. */
static void test_decode_bit_flips(void **state)
{
	(void)state;
	for (int i = 0; i < 20000; i++) {
		struct tr_msg m = random_msg(), out;
		int n = encode(&m, buf_a);
		/* Half the flips in the header and the fixed part of the body. */
		size_t span = rnd() % 2 && n > 64 ? 64 : (size_t)n;
		size_t bit = rnd() % (span * 8), byte = bit / 8;

		buf_a[byte] ^= (uint8_t)(1u << (bit % 8));
		if (tr_msg_decode(buf_a, (size_t)n, &out) == 0) {
			/* Magic, version, length and reserved fields are always
			 * checked; the type byte may turn into another type, the
			 * link fields into other valid ones (an AM's order number
			 * into any other).  Status bits only change under the
			 * flag. */
			assert_true(byte >= 3 && byte != 4 && byte != 5);
			assert_false(byte >= OFF_RSVD && byte < OFF_RSVD + 4);
			if (byte >= OFF_BSM_N && byte < BODY)
				assert_true(m.has_bsm && out.has_bsm);
			if (out.type == TR_MSG_AM) { /* re-encode from a copy */
				memcpy(buf_c, out.u.am.data, out.u.am.len);
				out.u.am.data = buf_c;
			}
			assert_int_equal(tr_msg_encode(&out, buf_b, TR_WIRE_MAX_LEN), n);
			assert_memory_equal(buf_a, buf_b, (size_t)n);
		}
	}
}

/* ---- encoder rejects --------------------------------------------------------------- */

static void test_encode_bad_type(void **state)
{
	struct tr_msg m = { .type = TR_MSG_BARRIER };

	(void)state;
	m.type = (enum tr_msg_type)0;
	assert_int_equal(tr_msg_encode(&m, buf_a, TR_WIRE_MAX_LEN), -EINVAL);
	m.type = TR_MSG_TYPE_MAX;
	assert_int_equal(tr_msg_encode(&m, buf_a, TR_WIRE_MAX_LEN), -EINVAL);
	m.type = (enum tr_msg_type)200;
	assert_int_equal(tr_msg_encode(&m, buf_a, TR_WIRE_MAX_LEN), -EINVAL);
	m.type = (enum tr_msg_type)-1;
	assert_int_equal(tr_msg_encode(&m, buf_a, TR_WIRE_MAX_LEN), -EINVAL);
}

static void test_encode_inconsistent_win_info(void **state)
{
	struct tr_msg m;

	(void)state;
	m = win_info(TRIAD_MAX_PLANES);
	m.u.win_info.nplanes = TRIAD_MAX_PLANES + 1;
	assert_int_equal(tr_msg_encode(&m, buf_a, TR_WIRE_MAX_LEN), -EINVAL);
	m.u.win_info.nplanes = 0xffff;
	assert_int_equal(tr_msg_encode(&m, buf_a, TR_WIRE_MAX_LEN), -EINVAL);

	m = win_info(1);
	m.u.win_info.status = TRIAD_S_MAX;
	assert_int_equal(tr_msg_encode(&m, buf_a, TR_WIRE_MAX_LEN), -EINVAL);

	/* Whatever the decoder rejects, the encoder must not produce. */
	m = win_info(1);
	m.u.win_info.access = 4;
	assert_int_equal(tr_msg_encode(&m, buf_a, TR_WIRE_MAX_LEN), -EINVAL);
	m = win_info(1);
	m.u.win_info.access = 0x80000000u | TRIAD_WIN_WRITE;
	assert_int_equal(tr_msg_encode(&m, buf_a, TR_WIRE_MAX_LEN), -EINVAL);
	m = win_info(1);
	m.u.win_info.base = UINT64_MAX;
	m.u.win_info.len = 1;
	assert_int_equal(tr_msg_encode(&m, buf_a, TR_WIRE_MAX_LEN), -EINVAL);
	m.u.win_info.base = 2;
	m.u.win_info.len = UINT64_MAX - 1;
	assert_int_equal(tr_msg_encode(&m, buf_a, TR_WIRE_MAX_LEN), -EINVAL);
}

/* Encoding m must fail with -EINVAL and write nothing, whatever the size. */
static void encode_invalid(const struct tr_msg *m)
{
	static const size_t sizes[] = { 0, TR_WIRE_HDR_LEN, TR_WIRE_MAX_LEN, SCRATCH };

	memset(buf_b, 0xcc, SCRATCH);
	for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		memset(buf_a, 0xcc, SCRATCH);
		assert_int_equal(tr_msg_encode(m, buf_a, sizes[i]), -EINVAL);
		if (memcmp(buf_a, buf_b, SCRATCH))
			fail_msg("buffer written for size %zu", sizes[i]);
	}
}

static void test_encode_bad_link(void **state)
{
	(void)state;
	for (int t = 1; t < TR_MSG_TYPE_MAX; t++) {
		struct tr_msg good, m;

		good = of_type(t);
		assert_true(tr_msg_encode(&good, buf_a, TR_WIRE_MAX_LEN) > 0);

		/* Priority 3 and beyond. */
		for (int p = TR_WIRE_PRIOS; p < 256; p += p < 8 ? 1 : 31) {
			m = good;
			m.prio = (uint8_t)p;
			encode_invalid(&m);
		}
		if (t == TR_MSG_BSM) {
			/* A BSM takes no slot and must carry the status. */
			for (int s = 0; s < TR_WIRE_NO_SLOT; s += s < 70 ? 1 : 37) {
				m = good;
				m.slot = (uint8_t)s;
				encode_invalid(&m);
			}
			m = good;
			m.has_bsm = 0;
			encode_invalid(&m);
			m.bsm_n = m.bsm_c = 0;
			encode_invalid(&m);
			continue;
		}
		/* Slots beyond the window, the no-slot value included. */
		for (int s = TR_WIRE_MAX_SLOTS; s < 256; s++) {
			m = good;
			m.slot = (uint8_t)s;
			encode_invalid(&m);
		}
		/* Status bits without the flag. */
		m = good;
		m.bsm_n = 1;
		encode_invalid(&m);
		m = good;
		m.bsm_c = 1ull << 63;
		encode_invalid(&m);
		m.bsm_n = UINT64_MAX;
		encode_invalid(&m);
		/* With the flag they are fine. */
		m.has_bsm = 1;
		assert_true(tr_msg_encode(&m, buf_a, TR_WIRE_MAX_LEN) > 0);
	}
}

static void test_encode_bad_am(void **state)
{
	static const uint32_t too_long[] = { AM_MAX + 1, AM_MAX + 2, AM_MAX + 36, TR_WIRE_MAX_LEN,
					     TR_WIRE_MAX_LEN + 1, 1u << 20, UINT32_MAX };
	struct tr_msg m;

	(void)state;
	/* Longer than the message limit allows, whatever the buffer. */
	for (size_t i = 0; i < sizeof(too_long) / sizeof(too_long[0]); i++) {
		m = am(1, pool, too_long[i]);
		encode_invalid(&m);
	}
	/* No data for a payload. */
	m = am(1, NULL, 1);
	encode_invalid(&m);
	m = am(1, NULL, AM_MAX);
	encode_invalid(&m);
	m = am(1, NULL, UINT32_MAX);
	encode_invalid(&m);
	/* No data and no payload is fine, and so is the limit itself. */
	m = am(1, NULL, 0);
	assert_int_equal(tr_msg_encode(&m, buf_a, SCRATCH), TR_WIRE_HDR_LEN + TR_WIRE_AM_HDR_LEN);
	m = am(1, pool, AM_MAX);
	assert_int_equal(tr_msg_encode(&m, buf_a, SCRATCH), TR_WIRE_MAX_LEN);
}

/* tr_msg_encode(m) with every size in sizes below its length fails with
 * -ENOSPC and writes nothing; exactly its length succeeds.  Exactly-sized
 * heap buffers: ASan flags any write past size. */
static void encode_sizes(const struct tr_msg *m, const size_t *sizes, size_t nsizes)
{
	size_t len = wire_len(m);

	for (size_t k = 0; k < nsizes; k++) {
		size_t size = sizes[k];
		uint8_t *buf;

		if (size >= len)
			continue;
		buf = malloc(size ? size : 1);
		assert_non_null(buf);
		memset(buf, 0xcc, size ? size : 1);
		assert_int_equal(tr_msg_encode(m, buf, size), -ENOSPC);
		for (size_t j = 0; j < size; j++)
			assert_int_equal(buf[j], 0xcc);
		free(buf);
	}
	uint8_t *exact = malloc(len);

	assert_non_null(exact);
	assert_int_equal(tr_msg_encode(m, exact, len), (int)len);
	free(exact);
}

static void test_encode_small_buffer(void **state)
{
	static size_t all[256];
	struct tr_msg msgs[9];

	(void)state;
	memset(msgs, 0, sizeof(msgs));
	msgs[0].type = TR_MSG_WIN_QUERY;
	msgs[1] = win_info(TRIAD_MAX_PLANES);
	msgs[2].type = TR_MSG_BARRIER;
	msgs[3] = win_info(0);
	msgs[4] = bsm(UINT64_MAX, 3);
	msgs[5] = am(1, NULL, 0);
	msgs[6] = am(2, "z", 1);
	msgs[7] = am(3, pool, 150);
	msgs[7].has_bsm = 1;
	msgs[7].bsm_n = 9;
	msgs[8] = am(4, pool, AM_MAX);
	for (size_t i = 0; i < 256; i++)
		all[i] = i;
	for (int i = 0; i < 8; i++)
		encode_sizes(&msgs[i], all, 256);
	/* The largest AM: sizes around the header and the end. */
	{
		static const size_t sizes[] = { 0,
						1,
						TR_WIRE_HDR_LEN - 1,
						TR_WIRE_HDR_LEN,
						TR_WIRE_HDR_LEN + TR_WIRE_AM_HDR_LEN,
						TR_WIRE_CTRL_LEN,
						4096,
						TR_WIRE_MAX_LEN - 2,
						TR_WIRE_MAX_LEN - 1 };

		encode_sizes(&msgs[8], sizes, sizeof(sizes) / sizeof(sizes[0]));
	}
}

/* Encode succeeds exactly for the messages that decode accepts. */
static void test_encode_iff_decodable(void **state)
{
	(void)state;
	for (int i = 0; i < 40000; i++) {
		struct tr_msg m, out;
		int n, valid;

		if (rnd() % 2) {
			m = win_info((uint16_t)(rnd() % (TRIAD_MAX_PLANES + 1)));
			m.u.win_info.status = (uint16_t)(rnd() % (TRIAD_S_MAX + 2));
			m.u.win_info.access = (uint32_t)(rnd() % 6);
			m.u.win_info.base = rnd() % 3 ? rnd() : UINT64_MAX - rnd() % 4;
			m.u.win_info.len = rnd() % 3 ? rnd() >> (rnd() % 64) : rnd() % 4;
		} else {
			m = random_msg();
			if (rnd() % 8 == 0)
				m.type = (enum tr_msg_type)(rnd() % 2 ? 0 : TR_MSG_TYPE_MAX + rnd() % 4);
		}
		if (m.type == TR_MSG_AM) {
			switch (rnd() % 4) {
			case 0: m.u.am.len = (uint32_t)(AM_MAX + 1 + rnd() % 40); break;
			case 1: m.u.am.len = (uint32_t)(rnd() % 2 ? UINT32_MAX : AM_MAX); break;
			default: break;
			}
			m.u.am.data = rnd() % 4 ? pool : NULL;
		}
		/* Link fields: valid, or off by one of their rules. */
		switch (rnd() % 8) {
		case 0: m.prio = (uint8_t)(TR_WIRE_PRIOS + rnd() % 3); break;
		case 1: m.slot = (uint8_t)(rnd() % 256); break;
		case 2: m.slot = rnd() % 2 ? TR_WIRE_NO_SLOT : (uint8_t)(rnd() % TR_WIRE_MAX_SLOTS); break;
		case 3: m.has_bsm = (uint8_t)(rnd() % 2); break;
		case 4: m.bsm_n = rnd() % 2 ? 0 : rnd(); m.bsm_c = rnd() % 2 ? 0 : rnd(); break;
		default: break;
		}

		valid = m.type > 0 && m.type < TR_MSG_TYPE_MAX && m.prio < TR_WIRE_PRIOS;
		if (m.type == TR_MSG_BSM)
			valid = valid && m.slot == TR_WIRE_NO_SLOT && m.has_bsm;
		else
			valid = valid && m.slot < TR_WIRE_MAX_SLOTS &&
				(m.has_bsm || (m.bsm_n == 0 && m.bsm_c == 0));
		if (m.type == TR_MSG_WIN_INFO)
			valid = valid && m.u.win_info.status < TRIAD_S_MAX &&
				m.u.win_info.access < 4 &&
				m.u.win_info.len <= UINT64_MAX - m.u.win_info.base;
		if (m.type == TR_MSG_AM)
			valid = valid && m.u.am.len <= AM_MAX && (m.u.am.data || m.u.am.len == 0);

		n = tr_msg_encode(&m, buf_a, SCRATCH);
		if (valid) {
			assert_int_equal(n, (int)wire_len(&m));
			decode_ok(buf_a, (size_t)n, &out);
			assert_msg_equal(&m, &out);
		} else {
			assert_int_equal(n, -EINVAL);
		}
	}
}

/* ---- tr_wire_set_link ------------------------------------------------------------ */

/* set_link on a buffer of exactly the header, filled with 0xa5: only bytes
 * 6-7 and 16-31 change, to the expected values. */
static void set_link_bytes(uint8_t slot, uint8_t prio, int has_bsm, uint64_t n, uint64_t c)
{
	uint8_t *hdr = malloc(TR_WIRE_HDR_LEN);
	uint8_t flags = (uint8_t)(prio | (has_bsm ? FLAG_BSM : 0));

	assert_non_null(hdr);
	memset(hdr, 0xa5, TR_WIRE_HDR_LEN);
	tr_wire_set_link(hdr, slot, prio, has_bsm, n, c);
	for (int i = 0; i < TR_WIRE_HDR_LEN; i++) {
		if (i == OFF_SLOT)
			assert_int_equal(hdr[i], slot);
		else if (i == OFF_FLAGS)
			assert_int_equal(hdr[i], flags);
		else if (i < OFF_BSM_N)
			assert_int_equal(hdr[i], 0xa5);
	}
	assert_true(get64(hdr + OFF_BSM_N) == (has_bsm ? n : 0));
	assert_true(get64(hdr + OFF_BSM_C) == (has_bsm ? c : 0));
	free(hdr);
}

static void test_set_link_bytes(void **state)
{
	(void)state;
	set_link_bytes(0, 0, 0, 0, 0);
	set_link_bytes(63, 2, 1, 0x0102030405060708ull, 0x1112131415161718ull);
	set_link_bytes(TR_WIRE_NO_SLOT, 1, 1, UINT64_MAX, 0);
	/* Without the flag the status is written as zeros, whatever n and c. */
	set_link_bytes(5, 1, 0, UINT64_MAX, UINT64_MAX);
	set_link_bytes(5, 0, 0, 1, 0);
	/* Any nonzero has_bsm is true. */
	set_link_bytes(9, 2, 2, 7, 8);
	set_link_bytes(9, 2, -1, 7, 8);
	set_link_bytes(9, 2, 0x100, 7, 8);
	for (int i = 0; i < 1000; i++)
		set_link_bytes((uint8_t)(rnd() % 256), (uint8_t)(rnd() % TR_WIRE_PRIOS),
			       (int)(rnd() % 2), rnd(), rnd());
}

/* set_link on an encoded message gives what encoding with those link
 * fields gives, and it decodes with them. */
static void test_set_link_decodes(void **state)
{
	(void)state;
	for (int i = 0; i < 20000; i++) {
		struct tr_msg m = random_msg(), linked, out;
		int n, n2;

		/* Encode with other (random, valid) link fields, then relink. */
		n = encode(&m, buf_a);
		linked = m;
		rnd_link(&linked);
		if (rnd() % 4 == 0) { /* stray status values with the flag clear */
			linked.bsm_n = rnd();
			linked.bsm_c = rnd();
		}
		memcpy(buf_c, buf_a, (size_t)n);
		tr_wire_set_link(buf_a, linked.slot, linked.prio, linked.has_bsm, linked.bsm_n,
				 linked.bsm_c);
		for (int j = 0; j < n; j++)
			if ((j < OFF_SLOT || j > OFF_FLAGS) && (j < OFF_BSM_N || j >= BODY))
				assert_int_equal(buf_a[j], buf_c[j]);
		if (!linked.has_bsm)
			linked.bsm_n = linked.bsm_c = 0;
		decode_ok(buf_a, (size_t)n, &out);
		assert_msg_equal(&linked, &out);
		n2 = encode(&linked, buf_b);
		assert_int_equal(n2, n);
		assert_memory_equal(buf_a, buf_b, (size_t)n);
	}
}

static void test_set_link_clears_bsm(void **state)
{
	struct tr_msg m = { .type = TR_MSG_WIN_QUERY, .slot = 4, .prio = 2, .has_bsm = 1 }, out;
	int n;

	(void)state;
	m.bsm_n = UINT64_MAX;
	m.bsm_c = 0x5555;
	n = encode(&m, buf_a);
	tr_wire_set_link(buf_a, 10, 0, 0, 0xdead, 0xbeef);
	decode_ok(buf_a, (size_t)n, &out);
	assert_int_equal(out.slot, 10);
	assert_int_equal(out.prio, 0);
	assert_int_equal(out.has_bsm, 0);
	assert_true(out.bsm_n == 0 && out.bsm_c == 0);
	for (int i = OFF_BSM_N; i < BODY; i++)
		assert_int_equal(buf_a[i], 0);
	/* A BSM relinked with a fresh status. */
	m = bsm(1, 2);
	n = encode(&m, buf_a);
	tr_wire_set_link(buf_a, TR_WIRE_NO_SLOT, 1, 1, 3, 4);
	decode_ok(buf_a, (size_t)n, &out);
	assert_int_equal(out.type, TR_MSG_BSM);
	assert_int_equal(out.prio, 1);
	assert_true(out.bsm_n == 3 && out.bsm_c == 4);
	/* The largest AM: its payload is untouched. */
	m = am(77, pool, AM_MAX);
	n = encode(&m, buf_a);
	tr_wire_set_link(buf_a, 63, 2, 1, 5, 6);
	decode_ok(buf_a, (size_t)n, &out);
	assert_int_equal(out.slot, 63);
	assert_int_equal(out.u.am.len, AM_MAX);
	assert_memory_equal(out.u.am.data, pool, AM_MAX);
}

static void test_type_str(void **state)
{
	(void)state;
	assert_string_equal(tr_msg_type_str(TR_MSG_WIN_QUERY), "WIN_QUERY");
	assert_string_equal(tr_msg_type_str(TR_MSG_WIN_INFO), "WIN_INFO");
	assert_string_equal(tr_msg_type_str(TR_MSG_BARRIER), "BARRIER");
	assert_string_equal(tr_msg_type_str(TR_MSG_BARRIER_REL), "BARRIER_REL");
	assert_string_equal(tr_msg_type_str(TR_MSG_BSM), "BSM");
	assert_string_equal(tr_msg_type_str(TR_MSG_AM), "AM");
	assert_string_equal(tr_msg_type_str(0), "?");
	assert_string_equal(tr_msg_type_str(TR_MSG_TYPE_MAX), "?");
	assert_string_equal(tr_msg_type_str(UINT32_MAX), "?");
}

/* ---- connection private data ---------------------------------------------- */

/* ---- bare active messages ----------------------------------------------------*/
/* The lowest unseen number of every priority, next[] for the bare decoder. */
static void nexts(uint32_t next[TR_WIRE_PRIOS], uint32_t v)
{
	for (int i = 0; i < TR_WIRE_PRIOS; i++)
		next[i] = v + 1000u * (uint32_t)i; /* each priority its own space */
}

/* An active message encoded and made bare, then decoded from its payload:
 * every field the receiver needs comes back, with the sequence number
 * completed from next. */
static void bare_trip(uint16_t id, uint8_t slot, uint8_t prio, uint32_t seq, uint32_t len,
		      uint32_t ref)
{
	struct tr_msg m = am(id, pool, len), out;
	uint32_t imm, next[TR_WIRE_PRIOS];
	int n;

	m.seq = seq;
	m.slot = slot;
	m.prio = prio;
	m.has_bsm = 1;
	m.bsm_n = 5;
	n = encode(&m, buf_a);
	assert_int_equal(tr_wire_bare_imm(buf_a, (size_t)n, &imm), 1);
	assert_int_equal(imm, slot | (uint32_t)prio << 6 | (uint32_t)id << 8 |
				      (seq & 0xffffu) << 16);
	nexts(next, 0);
	next[prio] = ref;
	memset(&out, 0xa5, sizeof(out));
	assert_int_equal(tr_msg_decode_bare(imm, buf_a + TR_WIRE_BARE_SKIP, len, next, &out), 0);
	assert_int_equal(out.type, TR_MSG_AM);
	assert_int_equal(out.seq, seq);
	assert_int_equal(out.slot, slot);
	assert_int_equal(out.prio, prio);
	assert_int_equal(out.has_bsm, 0); /* a bare message carries no status */
	assert_true(out.bsm_n == 0 && out.bsm_c == 0);
	assert_int_equal(out.u.am.id, id);
	assert_int_equal(out.u.am.len, len);
	assert_ptr_equal(out.u.am.data, buf_a + TR_WIRE_BARE_SKIP); /* in place */
}

static void test_bare_round_trip(void **state)
{
	(void)state;
	bare_trip(7, 13, 2, 0x12345, 1024, 0x12340);
	bare_trip(0, 0, 0, 0, 1, 0);
	bare_trip(TRIAD_AM_MAX_ID, TR_WIRE_MAX_SLOTS - 1, 1, 0xfffffffeu, 4096, 0xfffffff0u);
	bare_trip(3, 63, 0, 17, AM_MAX, 17);
}

/* The receiver's next may be behind the message (later messages on other
 * planes) or ahead of it (a duplicate sent again after a failure), across
 * the 16-bit and the 32-bit wrap: every distance within 32767 comes back. */
static void test_bare_seq_completion(void **state)
{
	static const uint32_t refs[] = { 0, 5, 0xfff0, 0x10000, 0x1fff8, 0x7fffffffu,
					 0xfffffff0u, 0xffffffffu };
	static const int32_t dists[] = { 0, 1, -1, 63, -63, 64, 600, -600, 32767, -32767 };

	(void)state;
	for (size_t i = 0; i < sizeof(refs) / sizeof(refs[0]); i++)
		for (size_t j = 0; j < sizeof(dists) / sizeof(dists[0]); j++)
			bare_trip(1, 2, (uint8_t)(j % 3), refs[i] + (uint32_t)dists[j], 8,
				  refs[i]);
	for (int k = 0; k < 2000; k++) {
		uint32_t ref = (uint32_t)rnd();
		int32_t d = (int32_t)(rnd() % 65535) - 32767;

		bare_trip((uint16_t)(rnd() % 256), (uint8_t)(rnd() % 64), (uint8_t)(rnd() % 3),
			  ref + (uint32_t)d, 1 + (uint32_t)(rnd() % 2000), ref);
	}
}

/* Only an active message with a payload and an id of at most 255 goes
 * bare; everything else goes whole. */
static void test_bare_only_am(void **state)
{
	struct tr_msg m;
	uint32_t imm = 0x5a5a5a5a;
	int n;

	(void)state;
	m = am(1, NULL, 0); /* no payload: nothing to save, and a SEND of 0 bytes */
	n = encode(&m, buf_a);
	assert_int_equal(tr_wire_bare_imm(buf_a, (size_t)n, &imm), 0);
	m = am(0xffff, pool, 8);
	n = encode(&m, buf_a);
	assert_int_equal(tr_wire_bare_imm(buf_a, (size_t)n, &imm), 0);
	m = am(256, pool, 8);
	n = encode(&m, buf_a);
	assert_int_equal(tr_wire_bare_imm(buf_a, (size_t)n, &imm), 0);
	for (int t = 1; t < TR_MSG_TYPE_MAX; t++) {
		if (t == TR_MSG_AM)
			continue;
		m = of_type(t);
		n = encode(&m, buf_a);
		assert_int_equal(tr_wire_bare_imm(buf_a, (size_t)n, &imm), 0);
	}
	assert_int_equal(imm, 0x5a5a5a5a); /* untouched */
}

static void test_bare_decode_bad(void **state)
{
	uint32_t next[TR_WIRE_PRIOS];
	struct tr_msg out;

	(void)state;
	nexts(next, 100);
	/* no payload, or more than any message can carry */
	assert_int_equal(tr_msg_decode_bare(1u << 16, pool, 0, next, &out), -EBADMSG);
	assert_int_equal(tr_msg_decode_bare(1u << 16, pool, AM_MAX + 1, next, &out), -EBADMSG);
	assert_int_equal(tr_msg_decode_bare(1u << 16, pool, AM_MAX, next, &out), 0);
	/* priority 3 does not exist */
	assert_int_equal(tr_msg_decode_bare(3u << 6, pool, 8, next, &out), -EPROTO);
}

static void test_priv_roundtrip(void **state)
{
	struct tr_conn_priv d = { .plane = 1, .rank = 2, .size = 8, .slots = 16,
				  .slot_size = 4096, .key = 0x0123456789abcdefull,
				  .incarnation = 0xfedcba9876543210ull, .peer_incarnation = 0,
				  .flags = TR_CONN_F_BARE_AM }, e;
	uint8_t buf[TR_WIRE_PRIV_LEN];

	(void)state;
	tr_conn_priv_encode(buf, &d);
	assert_int_equal(tr_conn_priv_version(buf, sizeof(buf)), TR_WIRE_PRIV_VERSION);
	assert_int_equal(tr_conn_priv_decode(buf, sizeof(buf), &e), 0);
	assert_int_equal(e.plane, 1);
	assert_int_equal(e.rank, 2);
	assert_int_equal(e.size, 8);
	assert_int_equal(e.slots, 16);
	assert_int_equal(e.slot_size, 4096);
	assert_true(e.key == 0x0123456789abcdefull);
	assert_true(e.incarnation == 0xfedcba9876543210ull);
	assert_true(e.peer_incarnation == 0); /* not known yet */
	assert_int_equal(e.flags, TR_CONN_F_BARE_AM);
	d.flags = 0;
	tr_conn_priv_encode(buf, &d);
	assert_int_equal(tr_conn_priv_decode(buf, sizeof(buf), &e), 0);
	assert_int_equal(e.flags, 0);
	/* the two incarnations travel apart, every bit in place */
	d.peer_incarnation = 0x8000000000000001ull;
	tr_conn_priv_encode(buf, &d);
	assert_int_equal(tr_conn_priv_decode(buf, sizeof(buf), &e), 0);
	assert_true(e.incarnation == 0xfedcba9876543210ull);
	assert_true(e.peer_incarnation == 0x8000000000000001ull);
	/* rdma_cm pads the private data: what follows is ignored */
	{
		uint8_t big[TR_WIRE_PRIV_LEN + 8] = { 0 };

		memcpy(big, buf, sizeof(buf));
		assert_int_equal(tr_conn_priv_decode(big, sizeof(big), &e), 0);
		assert_true(e.key == d.key);
	}
}

/* Version 1 (24 bytes, magic "tria", no key) is named, not taken for garbage. */
static void test_priv_old_version(void **state)
{
	static const uint8_t v1[TR_WIRE_PRIV_LEN_V1] = {
		't', 'r', 'i', 'a', 0, 0, 0, 1, 0, 0, 0, 2, 0, 0, 0, 8,
		0, 0, 0, 16, 0, 0, 0x10, 0,
	};
	struct tr_conn_priv e = { .rank = 77 };

	(void)state;
	assert_int_equal(tr_conn_priv_version(v1, sizeof(v1)), 1);
	assert_int_equal(tr_conn_priv_decode(v1, sizeof(v1), &e), -EPROTONOSUPPORT);
	assert_int_equal(e.rank, 77); /* untouched */
}

static void test_priv_bad(void **state)
{
	struct tr_conn_priv d = { .plane = 0, .rank = 0, .size = 2, .slots = 16,
				  .slot_size = 4096, .key = 5, .incarnation = 9 }, e;
	uint8_t buf[TR_WIRE_PRIV_LEN], bad[TR_WIRE_PRIV_LEN];

	(void)state;
	tr_conn_priv_encode(buf, &d);
	/* short */
	for (size_t n = 0; n < sizeof(buf); n++)
		assert_int_not_equal(tr_conn_priv_decode(buf, n, &e), 0);
	assert_int_equal(tr_conn_priv_decode(buf, 8, &e), -EBADMSG);
	/* not ours */
	memcpy(bad, buf, sizeof(buf));
	bad[0] = 'X';
	assert_int_equal(tr_conn_priv_version(bad, sizeof(bad)), 0);
	assert_int_equal(tr_conn_priv_decode(bad, sizeof(bad), &e), -EBADMSG);
	/* a later version */
	memcpy(bad, buf, sizeof(buf));
	bad[7] = TR_WIRE_PRIV_VERSION + 1;
	assert_int_equal(tr_conn_priv_version(bad, sizeof(bad)), TR_WIRE_PRIV_VERSION + 1);
	assert_int_equal(tr_conn_priv_decode(bad, sizeof(bad), &e), -EPROTONOSUPPORT);
	/* version 0 does not exist */
	bad[7] = 0;
	assert_int_equal(tr_conn_priv_decode(bad, sizeof(bad), &e), -EBADMSG);
	/* slots and slot size out of range */
	d.slots = 0;
	tr_conn_priv_encode(bad, &d);
	assert_int_equal(tr_conn_priv_decode(bad, sizeof(bad), &e), -EPROTO);
	d.slots = 65;
	tr_conn_priv_encode(bad, &d);
	assert_int_equal(tr_conn_priv_decode(bad, sizeof(bad), &e), -EPROTO);
	d.slots = 16;
	d.slot_size = 511;
	tr_conn_priv_encode(bad, &d);
	assert_int_equal(tr_conn_priv_decode(bad, sizeof(bad), &e), -EPROTO);
	/* every process has an incarnation: 0 is not one */
	d.slot_size = 4096;
	d.incarnation = 0;
	tr_conn_priv_encode(bad, &d);
	assert_int_equal(tr_conn_priv_decode(bad, sizeof(bad), &e), -EPROTO);
	/* version 2 (36 bytes, no incarnations) is named */
	memcpy(bad, buf, sizeof(buf));
	bad[7] = 2;
	assert_int_equal(tr_conn_priv_decode(bad, 36, &e), -EPROTONOSUPPORT);
	/* version 3 (this layout, wire version 2: no data in a COPY_DATA) is named */
	memcpy(bad, buf, sizeof(buf));
	bad[7] = 3;
	assert_int_equal(tr_conn_priv_version(bad, sizeof(bad)), 3);
	assert_int_equal(tr_conn_priv_decode(bad, sizeof(bad), &e), -EPROTONOSUPPORT);
	/* version 4 (52 bytes, no flags: no bare active messages) is named */
	bad[7] = 4;
	assert_int_equal(tr_conn_priv_decode(bad, 52, &e), -EPROTONOSUPPORT);
	/* version 5 (this layout, wire version 4: broadcasts of the world only) is named */
	memcpy(bad, buf, sizeof(buf));
	bad[7] = 5;
	assert_int_equal(tr_conn_priv_version(bad, sizeof(bad)), 5);
	assert_int_equal(tr_conn_priv_decode(bad, sizeof(bad), &e), -EPROTONOSUPPORT);
	/* version 6 (this layout, wire version 5: no TWOTREE relabelling) is named */
	bad[7] = 6;
	assert_int_equal(tr_conn_priv_version(bad, sizeof(bad)), 6);
	assert_int_equal(tr_conn_priv_decode(bad, sizeof(bad), &e), -EPROTONOSUPPORT);
	/* version 7 (this layout, wire version 6: no TWOTREE groups) is named */
	bad[7] = 7;
	assert_int_equal(tr_conn_priv_version(bad, sizeof(bad)), 7);
	assert_int_equal(tr_conn_priv_decode(bad, sizeof(bad), &e), -EPROTONOSUPPORT);
	/* version 8 (this layout, wire version 7: the root fed two groups) is named */
	bad[7] = 8;
	assert_int_equal(tr_conn_priv_version(bad, sizeof(bad)), 8);
	assert_int_equal(tr_conn_priv_decode(bad, sizeof(bad), &e), -EPROTONOSUPPORT);
	/* version 9 (this layout, wire version 8: TREE's data in one ORDER) is named */
	bad[7] = 9;
	assert_int_equal(tr_conn_priv_version(bad, sizeof(bad)), 9);
	assert_int_equal(tr_conn_priv_decode(bad, sizeof(bad), &e), -EPROTONOSUPPORT);
	/* a flag this version does not know */
	for (int bit = 1; bit < 32; bit++) {
		d.flags = 1u << bit;
		tr_conn_priv_encode(bad, &d);
		assert_int_equal(tr_conn_priv_decode(bad, sizeof(bad), &e), -EPROTO);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_layout_win_query),
		cmocka_unit_test(test_layout_bcast_done),
		cmocka_unit_test(test_layout_link_fields),
		cmocka_unit_test(test_layout_win_info),
		cmocka_unit_test(test_layout_barrier),
		cmocka_unit_test(test_layout_bsm),
		cmocka_unit_test(test_layout_am),
		cmocka_unit_test(test_ctrl_len),
		cmocka_unit_test(test_copy_carried),
		cmocka_unit_test(test_bnode),
		cmocka_unit_test(test_round_trip_each_type),
		cmocka_unit_test(test_round_trip_link_fields),
		cmocka_unit_test(test_round_trip_am),
		cmocka_unit_test(test_round_trip_random),
		cmocka_unit_test(test_decode_clears_unused_rkeys),
		cmocka_unit_test(test_decode_short_and_long_buffers),
		cmocka_unit_test(test_decode_bad_magic_version),
		cmocka_unit_test(test_decode_nonzero_reserved),
		cmocka_unit_test(test_am_id),
		cmocka_unit_test(test_decode_bad_prio),
		cmocka_unit_test(test_decode_bsm_link),
		cmocka_unit_test(test_decode_bad_slot),
		cmocka_unit_test(test_decode_bsm_fields_without_flag),
		cmocka_unit_test(test_decode_length_mismatch),
		cmocka_unit_test(test_decode_body_length_wrong_for_type),
		cmocka_unit_test(test_decode_unknown_type),
		cmocka_unit_test(test_decode_too_many_planes),
		cmocka_unit_test(test_decode_bad_status),
		cmocka_unit_test(test_decode_bad_plane_drain),
		cmocka_unit_test(test_decode_bad_plane_down),
		cmocka_unit_test(test_decode_bad_seq_skip),
		cmocka_unit_test(test_decode_bad_access),
		cmocka_unit_test(test_decode_base_len_overflow),
		cmocka_unit_test(test_decode_bit_flips),
		cmocka_unit_test(test_encode_bad_type),
		cmocka_unit_test(test_encode_inconsistent_win_info),
		cmocka_unit_test(test_encode_bad_link),
		cmocka_unit_test(test_encode_bad_am),
		cmocka_unit_test(test_encode_small_buffer),
		cmocka_unit_test(test_encode_iff_decodable),
		cmocka_unit_test(test_set_link_bytes),
		cmocka_unit_test(test_set_link_decodes),
		cmocka_unit_test(test_set_link_clears_bsm),
		cmocka_unit_test(test_type_str),
		cmocka_unit_test(test_bare_round_trip),
		cmocka_unit_test(test_bare_seq_completion),
		cmocka_unit_test(test_bare_only_am),
		cmocka_unit_test(test_bare_decode_bad),
		cmocka_unit_test(test_priv_roundtrip),
		cmocka_unit_test(test_priv_old_version),
		cmocka_unit_test(test_priv_bad),
	};

	return cmocka_run_group_tests_name("wire", tests, pool_setup, NULL);
}
