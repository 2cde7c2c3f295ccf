/* Messages on the wire: fixed little-endian layout, encoded and decoded
 * field by field, never cast from the receive buffer.  The decoder trusts
 * nothing: every length, type, count, slot, flag and status is checked, and
 * a message that fails any check is rejected as a whole.
 *
 * Header (32 bytes):
 *   u16 magic 0x5472 ("Tr")   u8 version (4)   u8 type
 *   u16 length (header + body, exactly)
 *   u8  slot: the receive slot the sender chose (flow control), 0xff for a
 *       message that takes no slot (a standalone BSM)
 *   u8  flags: bits 0-1 priority (0 high .. 2 low), bit 2 a BSM rides along
 *   u32 seq (per sender and peer)          u32 reserved (0)
 *   u64 bsm_n, u64 bsm_c: the sender's buffer status of the reverse direction
 *       (NMTSR, CFR bitmaps); zero unless bit 2 is set
 * The slot, priority and BSM are the link fields: the fabric fills them in
 * when it posts the message (tr_wire_set_link), not when it is encoded.
 */
#ifndef TRIAD_PROTO_WIRE_H
#define TRIAD_PROTO_WIRE_H

#include <stddef.h>
#include <stdint.h>

#include "proto/copy.h"
#include "triad.h"

#define TR_WIRE_MAGIC 0x5472
#define TR_WIRE_VERSION 9 /* 3: a COPY_DATA may carry the copy's data; 4: no AM ord;
			    * 5: broadcasts name their group; 6: BNODE carries
			    * TWOTREE's relabelling; 7: and its groups; 8: the
			    * root feeds only its own group, so another group's
			    * members are fed by other ranks; 9: a TREE ORDER
			    * may carry one of several pieces */
#define TR_WIRE_HDR_LEN 32
#define TR_WIRE_CTRL_LEN 256	/* every message but AM and a COPY_DATA with data fits */
#define TR_WIRE_COPY_LEN 64	/* a copy message's body before the data it carries */
#define TR_WIRE_BNODE_LEN 64	/* a BNODE message's body before the data an ORDER carries */
#define TR_WIRE_MAX_LEN 65535	/* the length field's limit */
#define TR_WIRE_AM_HDR_LEN 2	/* AM body: u16 id, payload */
#define TR_WIRE_NO_SLOT 0xff
#define TR_WIRE_MAX_SLOTS 64
#define TR_WIRE_SKIP_MAX 32	/* sequence numbers per SEQ_SKIP */
#define TR_WIRE_PRIOS 3

enum tr_msg_type {
	TR_MSG_WIN_QUERY = 1, /* who owns window id? -> WIN_INFO */
	TR_MSG_WIN_INFO,      /* the owner's answer: extent, access, rkeys */
	TR_MSG_BARRIER,	      /* rank -> rank 0: I entered barrier epoch */
	TR_MSG_BARRIER_REL,   /* rank 0 -> all: epoch complete */
	TR_MSG_BSM,	      /* a buffer status message alone: no body, no slot */
	TR_MSG_AM,	      /* an active message for a user handler */
	TR_MSG_PLANE_DOWN,    /* my connection to you on this plane broke (ack = 0); or
			       * the answer (ack = 1): my end of it can no longer execute */
	TR_MSG_COPY,	      /* third-party copy: START, DATA, RESP or DONE */
	TR_MSG_BCAST_DONE,    /* root -> rank: broadcast seq is over for you */
	TR_MSG_BYE,	      /* I am closing (triad_fini): do not reconnect; no body */
	TR_MSG_BARRIER_FAIL,  /* rank 0 -> all: epoch cannot complete (a rank is gone) */
	TR_MSG_WIN_GONE,      /* owner -> all: window win was destroyed: drop its descriptor */
	TR_MSG_PLANE_DRAIN,   /* do not send to me on plane (on = 1), or again (on = 0) */
	TR_MSG_SEQ_SKIP,      /* these sequence numbers will never come: count them received */
	TR_MSG_BNODE,	      /* delegated broadcast: ORDER, REPORT or ABORT (proto/bnode.h) */
	TR_MSG_TYPE_MAX
};

struct tr_msg {
	enum tr_msg_type type;
	uint32_t seq;
	/* link fields */
	uint8_t slot, prio, has_bsm;
	uint64_t bsm_n, bsm_c;
	union {
		struct {
			uint32_t qid, win;
		} win_query;
		struct {
			uint32_t qid, win;
			uint16_t status; /* enum triad_status */
			uint16_t nplanes;
			uint32_t access;
			uint64_t base, len;
			uint32_t rkey[TRIAD_MAX_PLANES];
		} win_info;
		struct {
			uint32_t epoch;
		} barrier;
		/* The redo fence (docs/spec/plane-switching.md): the side that
		 * saw a connection break asks its peer to put its end of it,
		 * QP number qpn (0: whatever it has on the plane), in the
		 * error state, and the peer answers with ack = 1 and the same
		 * gen, the asker's count of that lane's breaks. */
		struct tr_plane_down_body {
			uint32_t plane; /* < TRIAD_MAX_PLANES */
			uint32_t qpn;
			uint32_t gen;
			uint32_t ack; /* 0 or 1 */
		} plane_down;
		struct {
			uint32_t win;
		} win_gone;
		struct {
			uint32_t plane; /* < TRIAD_MAX_PLANES */
			uint32_t on;	/* 0 or 1 */
		} plane_drain;
		struct {
			uint32_t count; /* 0 .. TR_WIRE_SKIP_MAX */
			uint32_t seq[TR_WIRE_SKIP_MAX];
		} seq_skip;
		struct {
			uint32_t seq;	 /* the root's broadcast number in the group */
			uint16_t status; /* enum triad_status */
			uint32_t group;	 /* the broadcast's group id, 0: the world */
		} bcast_done;
		struct {
			uint8_t kind; /* enum tr_copy_msg */
			struct tr_copy_hdr hdr;
			/* A COPY_DATA may carry the copy's data: then carried
			 * == hdr.len bytes follow the header; 0 otherwise. */
			uint32_t carried;
			const void *data; /* decode: points into the decoded buffer */
		} copy;
		/* The delegated broadcast's messages (proto/bnode.h), one
		 * broadcast named by (group, root, seq).  An ORDER's fields are
		 * struct tr_bnode_order's, with the broadcast's window and
		 * offset (the same on every rank); a carried one brings the
		 * bytes of chunk k (TREE: all len bytes), exactly.  Every
		 * TWOTREE message carries the trees' relabelling, mul in byte
		 * 3 and rot in the word of TREE's hi (0 and 0: none), or
		 * their groups: grp in the half-word after status, fan in
		 * byte 3 (then mul and rot are 0). */
		struct tr_wire_bnode {
			uint8_t kind;	 /* enum tr_wire_bnode_kind */
			uint8_t shape;	 /* 1 TREE, 2 TWOTREE (enum tr_bnode_shape) */
			uint8_t carried; /* ORDER: 0 or 1 */
			uint16_t status; /* REPORT, ABORT: enum triad_status */
			uint32_t root, seq, win;
			uint8_t mul;	 /* TWOTREE: the relabelling (struct tr_bnode_order), every kind */
			uint8_t fan;	 /* TWOTREE: the groups (struct tr_bnode_order), every kind */
			uint16_t grp;
			uint32_t hi;	 /* ORDER, TREE */
			uint32_t rot;	 /* TWOTREE, every kind (the word of TREE's hi) */
			uint32_t failed; /* REPORT, ABORT: first failed rank, or UINT32_MAX */
			uint32_t group;	 /* the broadcast's group id, 0: the world */
			uint64_t off;	 /* the broadcast's window offset */
			uint64_t len, chunk, k;
			uint32_t nbytes;  /* carried bytes following the body */
			const void *data; /* decode: points into the decoded buffer */
		} bnode;
		struct {
			uint16_t id;
			uint32_t len;
			const void *data; /* decode: points into the decoded buffer */
		} am;
	} u;
};

enum tr_wire_bnode_kind {
	TR_WIRE_BNODE_ORDER,
	TR_WIRE_BNODE_REPORT,
	TR_WIRE_BNODE_ABORT,
	TR_WIRE_BNODE_NKINDS
};

const char *tr_msg_type_str(unsigned type);


/* The type byte of an encoded message (header offset 3), unchecked: for
 * messages this side encoded. */
static inline unsigned tr_wire_type(const void *buf)
{
	return ((const uint8_t *)buf)[3];
}

/* The priority of an encoded message (the low two bits of its flags,
 * header offset 7), unchecked: for messages this side encoded. */
static inline unsigned tr_wire_prio(const void *buf)
{
	return ((const uint8_t *)buf)[7] & 3u;
}

/* The sequence number of an encoded message (header offset 8), unchecked:
 * for messages this side encoded. */
static inline uint32_t tr_wire_seq(const void *buf)
{
	const uint8_t *p = (const uint8_t *)buf + 8;

	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

/* Sets the sequence number of an encoded message (header offset 8): one
 * encoded before its stream gave it a number (peer.c's full queue). */
static inline void tr_wire_set_seq(void *buf, uint32_t seq)
{
	uint8_t *p = (uint8_t *)buf + 8;

	p[0] = (uint8_t)seq;
	p[1] = (uint8_t)(seq >> 8);
	p[2] = (uint8_t)(seq >> 16);
	p[3] = (uint8_t)(seq >> 24);
}

/* The bytes a decoded message carries beyond its body, which point into
 * the buffer it was decoded from (a COPY_DATA's data, an ORDER's chunk, an
 * active message's payload): where that pointer is in m, and their length
 * in *len; NULL (and *len 0) for a type that carries none. */
const void **tr_msg_carried(struct tr_msg *m, size_t *len);

/* The encoded length of m (header + body), without checking m. */
size_t tr_msg_len(const struct tr_msg *m);

/* Encodes m into buf; returns the length, or -EINVAL if m is inconsistent
 * or -ENOSPC if buf is too small. */
int tr_msg_encode(const struct tr_msg *m, void *buf, size_t size);

/* Decodes exactly len bytes; returns 0, or -EBADMSG (bad magic, version,
 * length or reserved bits), -EPROTO (unknown type, bad field value). */
int tr_msg_decode(const void *buf, size_t len, struct tr_msg *m);

/* Writes the link fields into an encoded message (buf holds at least the
 * header).  slot TR_WIRE_NO_SLOT only for TR_MSG_BSM. */
void tr_wire_set_link(void *buf, uint8_t slot, uint8_t prio, int has_bsm, uint64_t n,
		      uint64_t c);

/* A bare active message: an AM whose headers ride in the SEND's 32-bit
 * immediate, so that only its payload crosses the wire.  rxe's path MTU on
 * a 1500-byte Ethernet is 1024 (RoCE's 4096 on jumbo frames), and
 * payloads come in powers of two: a 1 KiB payload with its 34 bytes of
 * headers took two packets, bare it takes one.  The immediate, host
 * order:
 *   bits 0-5   slot          bits 6-7   priority
 *   bits 8-15  AM id (TRIAD_AM_MAX_ID is 255)
 *   bits 16-31 the low 16 bits of the sequence number
 * A bare message carries no buffer status: the lane sends one only when
 * no status is due, and only to a peer that asked for them at connection
 * time (TR_CONN_F_BARE_AM).  Strict order needs nothing more than the
 * sequence number (lib/core/am.c).  The receiver completes the
 * sequence number from the lowest one of that priority it has not seen:
 * the sender's window (TR_SEQ_WINDOW) and the slots in flight keep every
 * number, a duplicate's too, within a few hundred of it, far inside the
 * 32768 either way that 16 bits tell apart. */
#define TR_WIRE_BARE_SKIP (TR_WIRE_HDR_LEN + TR_WIRE_AM_HDR_LEN) /* what bare drops */

/* The immediate for the encoded message buf (len bytes, link fields
 * written, this side's own encoding): 1 and *imm when it is an active
 * message with a payload and an id of at most 255 (any the API accepts);
 * 0 otherwise (it goes whole). */
int tr_wire_bare_imm(const void *buf, size_t len, uint32_t *imm);

/* Decodes a bare message: its immediate and the len bytes of payload that
 * arrived; next[prio] is the lowest sequence number of each priority the
 * receiver has not seen.  0; -EBADMSG (no payload, or more than a message
 * can carry), -EPROTO (priority 3).  m->u.am.data points into payload. */
int tr_msg_decode_bare(uint32_t imm, const void *payload, size_t len,
		       const uint32_t next[TR_WIRE_PRIOS], struct tr_msg *m);

/* What each side of a connection tells the other in the rdma_cm private
 * data, every field a big-endian u32:
 *   magic "trix", version (5), plane, rank, world size, receive slots,
 *   slot size, job key (high half, low half), the sender's incarnation
 *   (high, low), the incarnation the sender knows of the receiver's rank
 *   (high, low; 0: none yet), flags               (TR_WIRE_PRIV_LEN bytes)
 * Flags: bit 0 (TR_CONN_F_BARE_AM) send me bare active messages; the
 * other bits must be 0.
 * Version 1 (magic "tria", no version field, no key, 24 bytes) is told
 * apart so that a mix of old and new ranks is refused by name, not as
 * garbage.  Version 4 has version 3's layout: it names wire version 3 of
 * the messages (a COPY_DATA may carry data), so a rank of the release
 * before is refused at connection time, not by its first such message.
 * Version 5 adds the flags, and with them bare active messages, and names
 * wire version 4 (an active message without its order number).  Version 6
 * has version 5's layout and names wire version 5 (a broadcast's messages
 * name its group: triad_group_create); version 7, the same layout, wire
 * version 6 (BNODE carries TWOTREE's relabelling); version 8, the same
 * layout, wire version 7 (and its groups); version 9, the same layout,
 * wire version 8 (the groups' root feeds only its own group).  The job
 * key (0: none) must be the receiver's own: a request from another job is
 * refused.  An incarnation is a process's random
 * 64-bit name, never 0: two runs of one world file share its key but not
 * their incarnations, so a process never takes a rank's process of another
 * run for its peer (proto/conn.h, tr_conn_same_run). */
#define TR_WIRE_PRIV_MAGIC 0x74726978u	  /* "trix" */
#define TR_WIRE_PRIV_MAGIC_V1 0x74726961u /* "tria" */
#define TR_WIRE_PRIV_VERSION 10
#define TR_WIRE_PRIV_LEN 56 /* rdma_cm carries at most 56 in a request */
#define TR_WIRE_PRIV_LEN_V1 24
#define TR_CONN_F_BARE_AM 0x1u

struct tr_conn_priv {
	uint32_t plane, rank, size, slots, slot_size;
	uint64_t key;
	uint64_t incarnation;	   /* the sender's */
	uint64_t peer_incarnation; /* the receiver's, as the sender knows it; 0: not yet */
	uint32_t flags;		   /* TR_CONN_F_* */
};

void tr_conn_priv_encode(uint8_t buf[TR_WIRE_PRIV_LEN], const struct tr_conn_priv *d);
/* 0; -EBADMSG (short, or not ours); -EPROTONOSUPPORT (a triad peer of
 * another version: tr_conn_priv_version says which); -EPROTO (slots or
 * slot size out of range: 1..64 slots, 512..TR_WIRE_MAX_LEN bytes; no
 * incarnation; or a flag this version does not know).  d is written only on success. */
int tr_conn_priv_decode(const uint8_t *buf, size_t len, struct tr_conn_priv *d);
/* The version of triad private data (1, 2, ...), 0 when it is not ours. */
unsigned tr_conn_priv_version(const uint8_t *buf, size_t len);

#endif
