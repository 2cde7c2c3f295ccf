/* The triadd socket protocol: what a triad process or triadctl and the
 * node's daemon say to each other over the daemon's Unix stream socket.
 *
 * Every message is one frame, little-endian:
 *   u32 len      the whole frame, header included (TR_CTL_HDR .. TR_CTL_MAX_FRAME)
 *   u16 version  TR_CTL_VERSION; a frame of another version is refused
 *   u16 type     enum tr_ctl_type
 *   body         per type, below; strings are u16 length + bytes, no NUL
 * A file descriptor rides along (SCM_RIGHTS, ctl/io.c) with WELCOME (the
 * policy table, read-only) and COUNTERS (the client's counters region).
 *
 *   HELLO     client -> daemon  u32 pid, i32 rank, u32 nplanes, str name
 *   WELCOME   daemon -> client  i32 status, u32 client id, u32 table size, u64 generation
 *   NOTIFY    daemon -> client  u64 generation: the policy table changed
 *   COUNTERS  client -> daemon  u32 region size (the memfd rides along)
 *   CMD       triadctl -> daemon  u16 op, u16 flags, u32 timeout_ms, str arg
 *   REPLY     daemon -> triadctl  i32 status (0 or -errno), u32 code, str text
 *   EVENT     daemon -> triadctl  str text (monitor: one line an event)
 *   APPLIED   client -> daemon  u64 generation, u16 n, then n times: str name,
 *                               str value, u8 source (enum tr_ctl_src): the
 *                               knobs triadd may set, as this process has
 *                               them now, and where each value came from
 *
 * Pure: no I/O; the decoder checks every length, enum and string and
 * answers a negative errno for anything malformed (fuzzed: fuzz_ctl). */
#ifndef TRIAD_CTL_MSG_H
#define TRIAD_CTL_MSG_H

#include <stddef.h>
#include <stdint.h>

#include "ctl/table.h"

#define TR_CTL_VERSION 1
#define TR_CTL_HDR 8
#define TR_CTL_MAX_FRAME 65536	/* a REPLY's text (status -j) fits */
#define TR_CTL_MAX_STR (TR_CTL_MAX_FRAME - TR_CTL_HDR - 16)
#define TR_CTL_NAME_MAX 64	/* HELLO's program name, NUL included */

enum tr_ctl_type {
	TR_CTL_HELLO = 1,
	TR_CTL_WELCOME,
	TR_CTL_NOTIFY,
	TR_CTL_COUNTERS,
	TR_CTL_CMD,
	TR_CTL_REPLY,
	TR_CTL_EVENT,
	TR_CTL_APPLIED,
	TR_CTL_TYPE_MAX
};

enum tr_ctl_op {
	TR_CTL_OP_STATUS = 1,
	TR_CTL_OP_CLIENTS,
	TR_CTL_OP_STATS,
	TR_CTL_OP_CONFIG,
	TR_CTL_OP_MONITOR,
	TR_CTL_OP_DRAIN,
	TR_CTL_OP_RESTORE,
	TR_CTL_OP_FAIL,
	TR_CTL_OP_SET,	 /* arg "NAME=VALUE": publish a knob */
	TR_CTL_OP_UNSET, /* arg "NAME": stop publishing it */
	TR_CTL_OP_METRICS, /* Prometheus text (ctl/metrics.h), whatever the JSON flag */
	TR_CTL_OP_MAX
};

/* CMD flags. */
#define TR_CTL_F_JSON 0x1u  /* answer in JSON (docs/daemon.md) */
#define TR_CTL_F_WAIT 0x2u  /* drain/restore: answer once settled */
#define TR_CTL_F_FORCE 0x4u /* drain/fail: even the last live plane */
#define TR_CTL_F_ALL (TR_CTL_F_JSON | TR_CTL_F_WAIT | TR_CTL_F_FORCE)

/* REPLY codes: what a script acts on (triadctl's exit status follows). */
enum tr_ctl_code {
	TR_CTL_OK = 0,
	TR_CTL_REFUSED = 1, /* not done: the text says why */
	TR_CTL_BAD_CMD = 2, /* unknown plane, bad argument */
	TR_CTL_CODE_MAX
};

struct tr_ctl_msg {
	enum tr_ctl_type type;
	union {
		struct {
			uint32_t pid;
			int32_t rank;
			uint32_t nplanes;
			char name[TR_CTL_NAME_MAX];
		} hello;
		struct {
			int32_t status;
			uint32_t client;
			uint32_t table_size;
			uint64_t gen;
		} welcome;
		struct {
			uint64_t gen;
		} notify;
		struct {
			uint32_t size;
		} counters;
		struct {
			uint16_t op, flags;
			uint32_t timeout_ms;
			const char *arg; /* points into the frame; not NUL-terminated */
			uint16_t arg_len;
		} cmd;
		struct {
			int32_t status;
			uint32_t code;
			const char *text; /* into the frame */
			uint32_t text_len;
		} reply;
		struct {
			const char *text;
			uint32_t text_len;
		} event;
		struct {
			uint64_t gen; /* the policy generation these reflect */
			uint32_t n;   /* 0..TR_CTL_KNOBS; each tr_ctl_knob_ok */
			struct tr_ctl_knob knob[TR_CTL_KNOBS];
			uint8_t src[TR_CTL_KNOBS]; /* enum tr_ctl_src */
		} applied;
	} u;
};

/* Encodes m into buf; returns the frame length, or -EMSGSIZE when it does
 * not fit in buflen (or a string is too long), -EINVAL for a bad type,
 * op, flag, code or a string holding a NUL. */
int tr_ctl_encode(const struct tr_ctl_msg *m, void *buf, size_t buflen);

/* How long the frame starting at buf is: 0 when fewer than TR_CTL_HDR
 * bytes are there, -EPROTO for a length out of range or another version. */
int tr_ctl_frame_len(const void *buf, size_t len);

/* Decodes one whole frame of exactly len bytes (tr_ctl_frame_len).  0, or
 * -EPROTO (bad header, version, length or trailing bytes), -EBADMSG (bad
 * type, enum, flag or string).  String pointers point into buf. */
int tr_ctl_decode(const void *buf, size_t len, struct tr_ctl_msg *m);

const char *tr_ctl_op_str(unsigned op);	  /* "status", ...; NULL if unknown */
int tr_ctl_op_parse(const char *s);	  /* the op, or -EINVAL */

#endif
