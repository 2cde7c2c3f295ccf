/* libFuzzer target: tr_msg_decode(), tr_msg_decode_bare() and
 * tr_conn_priv_decode() on arbitrary bytes.  A message that decodes must
 * encode back to exactly the same bytes (the format has one encoding per
 * message), decode again to the same message, and keep its bytes when its
 * own link fields are written into it again.  A bare message (the input's
 * first 4 bytes its immediate, the next 4 the receiver's next number, the
 * rest its payload) that decodes must have every field in range, its
 * number within 32768 of next, and go bare again with the same immediate
 * once encoded whole. */
#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "proto/wire.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Messages go up to TR_WIRE_MAX_LEN: static, not on the stack. */
static uint8_t buf[TR_WIRE_MAX_LEN], payload[TR_WIRE_MAX_LEN];

static int same_msg(const struct tr_msg *a, const struct tr_msg *b)
{
	if (a->type != b->type || a->seq != b->seq || a->slot != b->slot || a->prio != b->prio ||
	    a->has_bsm != b->has_bsm || a->bsm_n != b->bsm_n || a->bsm_c != b->bsm_c)
		return 0;
	switch (a->type) {
	case TR_MSG_WIN_QUERY:
		return a->u.win_query.qid == b->u.win_query.qid &&
		       a->u.win_query.win == b->u.win_query.win;
	case TR_MSG_WIN_INFO:
		return !memcmp(&a->u.win_info, &b->u.win_info, sizeof(a->u.win_info));
	case TR_MSG_BARRIER:
	case TR_MSG_BARRIER_REL:
	case TR_MSG_BARRIER_FAIL:
		return a->u.barrier.epoch == b->u.barrier.epoch;
	case TR_MSG_BSM:
	case TR_MSG_BYE:
		return 1;
	case TR_MSG_PLANE_DOWN:
		return a->u.plane_down.plane == b->u.plane_down.plane &&
		       a->u.plane_down.qpn == b->u.plane_down.qpn &&
		       a->u.plane_down.gen == b->u.plane_down.gen &&
		       a->u.plane_down.ack == b->u.plane_down.ack;
	case TR_MSG_WIN_GONE:
		return a->u.win_gone.win == b->u.win_gone.win;
	case TR_MSG_PLANE_DRAIN:
		return a->u.plane_drain.plane == b->u.plane_drain.plane &&
		       a->u.plane_drain.on == b->u.plane_drain.on;
	case TR_MSG_SEQ_SKIP:
		return a->u.seq_skip.count == b->u.seq_skip.count &&
		       !memcmp(a->u.seq_skip.seq, b->u.seq_skip.seq,
			       a->u.seq_skip.count * sizeof(a->u.seq_skip.seq[0]));
	case TR_MSG_BCAST_DONE:
		return a->u.bcast_done.seq == b->u.bcast_done.seq &&
		       a->u.bcast_done.status == b->u.bcast_done.status;
	case TR_MSG_COPY:
		return a->u.copy.kind == b->u.copy.kind &&
		       !memcmp(&a->u.copy.hdr, &b->u.copy.hdr, sizeof(a->u.copy.hdr)) &&
		       a->u.copy.carried == b->u.copy.carried &&
		       (!a->u.copy.carried ||
			!memcmp(a->u.copy.data, b->u.copy.data, a->u.copy.carried));
	case TR_MSG_BNODE: {
		const struct tr_wire_bnode *x = &a->u.bnode, *y = &b->u.bnode;

		return x->kind == y->kind && x->shape == y->shape && x->carried == y->carried &&
		       x->status == y->status && x->root == y->root && x->seq == y->seq &&
		       x->win == y->win && x->hi == y->hi && x->failed == y->failed &&
		       x->off == y->off && x->len == y->len && x->chunk == y->chunk &&
		       x->k == y->k && x->nbytes == y->nbytes &&
		       (!x->nbytes || !memcmp(x->data, y->data, x->nbytes));
	}
	case TR_MSG_AM:
		return a->u.am.id == b->u.am.id && a->u.am.len == b->u.am.len &&
		       (!a->u.am.len || !memcmp(a->u.am.data, b->u.am.data, a->u.am.len));
	default:
		return 0;
	}
}

/* The connection private data: what decodes encodes back to the same
 * first TR_WIRE_PRIV_LEN bytes (the rest is ignored), within its ranges. */
static void check_priv(const uint8_t *data, size_t size)
{
	struct tr_conn_priv d;
	uint8_t out[TR_WIRE_PRIV_LEN];

	if (tr_conn_priv_decode(data, size, &d))
		return;
	if (d.slots < 1 || d.slots > 64 || d.slot_size < 512 || d.slot_size > TR_WIRE_MAX_LEN ||
	    !d.incarnation)
		abort();
	tr_conn_priv_encode(out, &d);
	if (memcmp(out, data, sizeof(out)))
		abort();
}

static uint32_t le32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static void check_bare(const uint8_t *data, size_t size)
{
	uint32_t imm, next[TR_WIRE_PRIOS], again;
	struct tr_msg m;
	int n;

	if (size < 8)
		return;
	imm = le32(data);
	for (int i = 0; i < TR_WIRE_PRIOS; i++)
		next[i] = le32(data + 4) + (uint32_t)i;
	if (tr_msg_decode_bare(imm, data + 8, size - 8, next, &m))
		return;
	if (m.type != TR_MSG_AM || m.slot >= TR_WIRE_MAX_SLOTS || m.prio >= TR_WIRE_PRIOS ||
	    m.has_bsm || m.u.am.id > TRIAD_AM_MAX_ID || m.u.am.len != size - 8 ||
	    (const uint8_t *)m.u.am.data != data + 8 || (m.seq & 0xffff) != imm >> 16 ||
	    (uint32_t)(m.seq - next[m.prio] + 32768u) > 65535u)
		abort();
	memcpy(payload, m.u.am.data, m.u.am.len);
	m.u.am.data = payload;
	n = tr_msg_encode(&m, buf, sizeof(buf));
	if (n != (int)(size - 8 + TR_WIRE_BARE_SKIP) || !tr_wire_bare_imm(buf, (size_t)n, &again) ||
	    again != imm)
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct tr_msg m, m2;
	int n;

	check_priv(data, size);
	check_bare(data, size);
	if (tr_msg_decode(data, size, &m))
		return 0;
	if (m.type == TR_MSG_AM) {
		/* The payload is decoded in place: it must lie inside the input,
		 * and it is re-encoded from a copy. */
		if ((const uint8_t *)m.u.am.data != data + TR_WIRE_HDR_LEN + TR_WIRE_AM_HDR_LEN ||
		    m.u.am.len != size - TR_WIRE_HDR_LEN - TR_WIRE_AM_HDR_LEN)
			abort();
		memcpy(payload, m.u.am.data, m.u.am.len);
		m.u.am.data = payload;
	}
	if (m.type == TR_MSG_COPY && m.u.copy.carried) { /* the same for a copy's data */
		if ((const uint8_t *)m.u.copy.data != data + TR_WIRE_HDR_LEN + TR_WIRE_COPY_LEN ||
		    m.u.copy.carried != size - TR_WIRE_HDR_LEN - TR_WIRE_COPY_LEN ||
		    m.u.copy.kind != TR_COPY_DATA || m.u.copy.carried != m.u.copy.hdr.len)
			abort();
		memcpy(payload, m.u.copy.data, m.u.copy.carried);
		m.u.copy.data = payload;
	}
	n = tr_msg_encode(&m, buf, sizeof(buf));
	if (n < 0 || (size_t)n != size || memcmp(buf, data, size))
		abort();
	/* The encoder never writes past the length it returns. */
	if (tr_msg_encode(&m, buf, (size_t)n) != n ||
	    tr_msg_encode(&m, buf, (size_t)n - 1) != -ENOSPC)
		abort();
	if (tr_msg_decode(buf, (size_t)n, &m2) || !same_msg(&m, &m2))
		abort();
	/* Writing the message's own link fields changes nothing. */
	tr_wire_set_link(buf, m.slot, m.prio, m.has_bsm, m.bsm_n, m.bsm_c);
	if (memcmp(buf, data, size))
		abort();
	(void)tr_msg_type_str(m.type);
	return 0;
}
