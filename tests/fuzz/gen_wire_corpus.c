/* Writes the seed corpus of fuzz_wire: one valid encoded message per file,
 * every type, with and without a piggybacked buffer status, a bare active
 * message, and one connection private data block.
 * Usage: gen_wire_corpus DIR */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "proto/wire.h"

static unsigned char buf[TR_WIRE_MAX_LEN]; /* static: messages go up to 64 KiB */

static int write_seed(const char *dir, const char *name, const void *data, size_t len)
{
	char path[4096];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	f = fopen(path, "wb");
	if (!f || fwrite(data, 1, len, f) != len || fclose(f)) {
		perror(path);
		return 1;
	}
	return 0;
}

static int emit(const char *dir, const char *name, const struct tr_msg *m)
{
	int n = tr_msg_encode(m, buf, sizeof(buf));

	if (n < 0) {
		fprintf(stderr, "%s: encode failed (%d)\n", name, n);
		return 1;
	}
	return write_seed(dir, name, buf, (size_t)n);
}

/* The connection private data (rdma_cm), which the same target decodes. */
static int emit_priv(const char *dir, const char *name)
{
	struct tr_conn_priv d = { .plane = 1, .rank = 2, .size = 8, .slots = 16, .slot_size = 4096,
				  .key = 0x5eed5eed12345678ull, .incarnation = 0x1ca7ca7ull,
				  .peer_incarnation = 0xca7ca7ull, .flags = TR_CONN_F_BARE_AM };
	uint8_t p[TR_WIRE_PRIV_LEN];

	tr_conn_priv_encode(p, &d);
	return write_seed(dir, name, p, sizeof(p));
}

/* A bare active message as fuzz_wire reads one: its immediate and the
 * receiver's next sequence number (little-endian u32 each), then the
 * payload. */
static int emit_bare(const char *dir, const char *name, uint32_t imm, uint32_t next,
		     size_t len)
{
	for (int i = 0; i < 4; i++) {
		buf[i] = (unsigned char)(imm >> 8 * i);
		buf[4 + i] = (unsigned char)(next >> 8 * i);
	}
	for (size_t i = 0; i < len; i++)
		buf[8 + i] = (unsigned char)i;
	return write_seed(dir, name, buf, 8 + len);
}

int main(int argc, char **argv)
{
	static unsigned char payload[1024];
	struct tr_msg m;
	int bad = 0;

	if (argc != 2) {
		fprintf(stderr, "usage: %s DIR\n", argv[0]);
		return 2;
	}
	memset(&m, 0, sizeof(m));
	m.type = TR_MSG_WIN_QUERY;
	m.seq = 1;
	m.u.win_query.qid = 7;
	m.u.win_query.win = 3;
	bad |= emit(argv[1], "win_query", &m);

	/* The same with a buffer status riding along, high priority, slot 5. */
	m.slot = 5;
	m.has_bsm = 1;
	m.bsm_n = 0x00000000000000f0ull;
	m.bsm_c = 0x0000000000000030ull;
	bad |= emit(argv[1], "win_query_bsm", &m);

	memset(&m, 0, sizeof(m));
	m.type = TR_MSG_WIN_INFO;
	m.seq = 2;
	m.slot = 1;
	m.prio = 1;
	m.u.win_info.qid = 7;
	m.u.win_info.win = 3;
	m.u.win_info.status = TRIAD_S_OK;
	m.u.win_info.nplanes = 2;
	m.u.win_info.access = TRIAD_WIN_READ | TRIAD_WIN_WRITE;
	m.u.win_info.base = 0x7f1234560000ull;
	m.u.win_info.len = 64u << 20;
	m.u.win_info.rkey[0] = 0x1a2b;
	m.u.win_info.rkey[1] = 0x3c4d;
	bad |= emit(argv[1], "win_info_2planes", &m);

	m.u.win_info.nplanes = TRIAD_MAX_PLANES;
	for (int i = 0; i < TRIAD_MAX_PLANES; i++)
		m.u.win_info.rkey[i] = 0x100u + (unsigned)i;
	m.u.win_info.access = TRIAD_WIN_READ;
	m.has_bsm = 1;
	m.bsm_n = 0xffffffffffffffffull;
	m.bsm_c = 0x8000000000000001ull;
	bad |= emit(argv[1], "win_info_8planes", &m);

	m.u.win_info.status = TRIAD_S_NO_WINDOW;
	m.u.win_info.nplanes = 0;
	m.u.win_info.access = 0;
	m.u.win_info.base = 0;
	m.u.win_info.len = 0;
	m.has_bsm = 0;
	m.bsm_n = m.bsm_c = 0;
	bad |= emit(argv[1], "win_info_no_window", &m);

	memset(&m, 0, sizeof(m));
	m.type = TR_MSG_BARRIER;
	m.seq = 0xfffffffeu;
	m.slot = TR_WIRE_MAX_SLOTS - 1;
	m.prio = 2;
	m.u.barrier.epoch = 5;
	bad |= emit(argv[1], "barrier", &m);

	m.type = TR_MSG_BARRIER_REL;
	m.seq = 0xffffffffu;
	m.slot = 0;
	bad |= emit(argv[1], "barrier_rel", &m);

	m.type = TR_MSG_BARRIER_FAIL;
	bad |= emit(argv[1], "barrier_fail", &m);

	memset(&m, 0, sizeof(m));
	m.type = TR_MSG_WIN_GONE;
	m.seq = 9;
	m.u.win_gone.win = 77;
	bad |= emit(argv[1], "win_gone", &m);

	memset(&m, 0, sizeof(m));
	m.type = TR_MSG_PLANE_DRAIN;
	m.seq = 10;
	m.u.plane_drain.plane = 1;
	m.u.plane_drain.on = 1;
	bad |= emit(argv[1], "plane_drain", &m);

	memset(&m, 0, sizeof(m));
	m.type = TR_MSG_SEQ_SKIP;
	m.u.seq_skip.count = 3;
	m.u.seq_skip.seq[0] = 5;
	m.u.seq_skip.seq[1] = 6;
	m.u.seq_skip.seq[2] = 0xffffffffu;
	bad |= emit(argv[1], "seq_skip", &m);

	/* Standalone buffer status messages: no slot, no body. */
	memset(&m, 0, sizeof(m));
	m.type = TR_MSG_BSM;
	m.seq = 3;
	m.slot = TR_WIRE_NO_SLOT;
	m.has_bsm = 1;
	m.bsm_n = 0x0000ffff0000ffffull;
	m.bsm_c = 0x00000000000000ffull;
	bad |= emit(argv[1], "bsm", &m);

	m.seq = 4;
	m.prio = 2;
	m.bsm_n = m.bsm_c = 0;
	bad |= emit(argv[1], "bsm_empty", &m);

	/* Active messages: empty, small, and a payload beyond the control size. */
	memset(&m, 0, sizeof(m));
	m.type = TR_MSG_AM;
	m.seq = 10;
	m.slot = 2;
	m.u.am.id = 0;
	bad |= emit(argv[1], "am_empty", &m);

	m.seq = 11;
	m.slot = 3;
	m.prio = 1;
	m.u.am.id = 0x1234;
	m.u.am.data = "hello, triad";
	m.u.am.len = 12;
	bad |= emit(argv[1], "am_small", &m);

	for (unsigned i = 0; i < sizeof(payload); i++)
		payload[i] = (unsigned char)(i * 37u + 11u);
	m.seq = 12;
	m.slot = 40;
	m.prio = 2;
	m.has_bsm = 1;
	m.bsm_n = 0x5a5a;
	m.bsm_c = 0x0101;
	m.u.am.id = 0xffff;
	m.u.am.data = payload;
	m.u.am.len = sizeof(payload);
	bad |= emit(argv[1], "am_1k", &m);

	memset(&m, 0, sizeof(m));
	m.type = TR_MSG_PLANE_DOWN;
	m.seq = 13;
	m.slot = 1;
	m.u.plane_down.plane = 1;
	m.u.plane_down.qpn = 0x11;
	m.u.plane_down.gen = 2;
	bad |= emit(argv[1], "plane_down", &m);
	m.u.plane_down.ack = 1;
	bad |= emit(argv[1], "plane_down_ack", &m);

	memset(&m, 0, sizeof(m));
	m.type = TR_MSG_BYE;
	m.seq = 15;
	m.slot = 2;
	bad |= emit(argv[1], "bye", &m);

	memset(&m, 0, sizeof(m));
	m.type = TR_MSG_COPY;
	m.seq = 14;
	m.slot = 5;
	m.prio = 2;
	m.u.copy.kind = TR_COPY_START;
	m.u.copy.hdr = (struct tr_copy_hdr){ .op_id = 77, .initiator = 0, .source = 1,
					     .destination = 2, .src_win = 1, .dst_win = 1,
					     .src_off = 4096, .dst_off = 8192, .len = 1 << 20 };
	bad |= emit(argv[1], "copy_start", &m);
	m.prio = 0;
	m.u.copy.kind = TR_COPY_DONE;
	m.u.copy.hdr.status = TRIAD_S_OUT_OF_BOUNDS;
	m.u.copy.hdr.leg = TR_COPY_LEG_AT_DST;
	bad |= emit(argv[1], "copy_done_error", &m);
	m.u.copy.kind = TR_COPY_DATA;
	m.u.copy.hdr.status = TRIAD_S_OK;
	m.u.copy.hdr.leg = TR_COPY_LEG_NONE;
	m.u.copy.hdr.len = 12;
	m.u.copy.carried = 12;
	m.u.copy.data = "copied bytes";
	bad |= emit(argv[1], "copy_data_carried", &m);
	/* The delegated broadcast: a TREE ORDER carrying 5 bytes, a relabelled
	 * TWOTREE ORDER of chunk 3 (written) and its ABORT, a grouped ORDER. */
	memset(&m, 0, sizeof(m));
	m.type = TR_MSG_BNODE;
	m.prio = 1;
	m.u.bnode = (struct tr_wire_bnode){ .kind = TR_WIRE_BNODE_ORDER, .shape = 1, .carried = 1,
					    .root = 2, .seq = 9, .win = 1, .hi = 6,
					    .failed = UINT32_MAX, .len = 5, .chunk = 5, .nbytes = 5,
					    .data = "bytes" };
	bad |= emit(argv[1], "bnode_order_tree", &m);
	m.u.bnode = (struct tr_wire_bnode){ .kind = TR_WIRE_BNODE_ORDER, .shape = 2, .mul = 3,
					    .rot = 40, .root = 2, .seq = 9, .win = 1,
					    .failed = UINT32_MAX, .len = 1 << 20, .chunk = 32768,
					    .k = 3 };
	bad |= emit(argv[1], "bnode_order_twotree", &m);
	m.u.bnode = (struct tr_wire_bnode){ .kind = TR_WIRE_BNODE_ABORT, .shape = 2, .mul = 3,
					    .rot = 40, .root = 2, .seq = 9, .win = 1,
					    .status = TRIAD_S_UNREACHABLE, .failed = 4 };
	bad |= emit(argv[1], "bnode_abort_twotree", &m);
	m.u.bnode = (struct tr_wire_bnode){ .kind = TR_WIRE_BNODE_ORDER, .shape = 2, .grp = 32,
					    .fan = 2, .root = 2, .seq = 9, .win = 1,
					    .failed = UINT32_MAX, .len = 65536, .chunk = 7936,
					    .k = 1 };
	bad |= emit(argv[1], "bnode_order_groups", &m);
	bad |= emit_priv(argv[1], "conn_priv");
	/* slot 13, priority 2, id 7, number ...0x0005 against next 0x1fff0 */
	bad |= emit_bare(argv[1], "am_bare_1k", 13u | 2u << 6 | 7u << 8 | 5u << 16, 0x1fff0, 1024);
	return bad;
}
