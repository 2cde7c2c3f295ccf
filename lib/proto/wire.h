/* Control messages on the wire: fixed little-endian layout, encoded and
 * decoded field by field, never cast from the receive buffer.  The decoder
 * trusts nothing: every length, type, count and status is checked, and a
 * message that fails any check is rejected as a whole.
 *
 * Header (16 bytes):
 *   u16 magic 0x5472 ("Tr")   u8 version   u8 type
 *   u16 length (header + body, exactly)    u16 reserved (0)
 *   u32 seq (per sender and peer)          u32 reserved (0)
 */
#ifndef TRIAD_PROTO_WIRE_H
#define TRIAD_PROTO_WIRE_H

#include <stddef.h>
#include <stdint.h>

#include "triad.h"

#define TR_WIRE_MAGIC 0x5472
#define TR_WIRE_VERSION 1
#define TR_WIRE_HDR_LEN 16
#define TR_WIRE_MAX_LEN 256 /* every control message fits */

enum tr_msg_type {
	TR_MSG_WIN_QUERY = 1, /* who owns window id? -> WIN_INFO */
	TR_MSG_WIN_INFO,      /* the owner's answer: extent, access, rkeys */
	TR_MSG_BARRIER,	      /* rank -> rank 0: I entered barrier epoch */
	TR_MSG_BARRIER_REL,   /* rank 0 -> all: epoch complete */
	TR_MSG_TYPE_MAX
};

struct tr_msg {
	enum tr_msg_type type;
	uint32_t seq;
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
	} u;
};

const char *tr_msg_type_str(unsigned type);

/* Encodes m into buf; returns the length, or -EINVAL if m is inconsistent
 * or -ENOSPC if buf is too small. */
int tr_msg_encode(const struct tr_msg *m, void *buf, size_t size);

/* Decodes exactly len bytes; returns 0, or -EBADMSG (bad magic, version,
 * length or reserved bits), -EPROTO (unknown type, bad field value). */
int tr_msg_decode(const void *buf, size_t len, struct tr_msg *m);

#endif
