/* Shared memory between triadd and the triad processes of its node.
 *
 * The policy table: one memfd the daemon writes and every client maps
 * read-only.  A seqlock generation counter guards it: the writer makes
 * gen odd, writes, makes it even again; a reader copies the payload and
 * keeps the copy only when gen was even and unchanged around it, so a
 * client reads a consistent policy with loads alone, no syscall.  The
 * payload is stored as 32-bit atomic words (relaxed loads and stores
 * between the fences), so the concurrent copy is not a data race in the
 * C11 model.
 *
 * The counters region: one memfd per client, written by the client alone
 * and mapped read-only by the daemon: per plane whether the client has
 * left it, what it still has in flight there, and its bytes.
 *
 * Plane states (the daemon's, in the table):
 *   NORMAL           in use
 *   SWITCH_PENDING   the daemon asked every client to leave the plane
 *                    (drain, fail or a fault); not every client has yet
 *   SWITCHED         every client has left it and has nothing in flight on it
 *   RESTORE_PENDING  the daemon asked the clients back; not every one is
 * A client reads SWITCH_PENDING and SWITCHED as "be off the plane", the
 * other two as "be on it"; `faulty` says the plane is broken (the client
 * breaks its connections there instead of waiting for them to drain).
 *
 * Pure: no syscalls; the caller creates and maps the memfds. */
#ifndef TRIAD_CTL_TABLE_H
#define TRIAD_CTL_TABLE_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "triad.h"

#define TR_CTL_TABLE_MAGIC 0x54444154u	  /* "TADT" */
#define TR_CTL_COUNTERS_MAGIC 0x54444343u /* "CCDT" */
#define TR_CTL_TABLE_VERSION 3 /* 2: knobs by name; 3: planes' weights, reason degraded */
#define TR_CTL_PLANE_NAME 16 /* NUL included */

enum tr_ctl_pstate {
	TR_CTL_NORMAL,
	TR_CTL_SWITCH_PENDING,
	TR_CTL_SWITCHED,
	TR_CTL_RESTORE_PENDING,
	TR_CTL_PSTATE_MAX
};

enum tr_ctl_reason {
	TR_CTL_R_NONE,	/* NORMAL */
	TR_CTL_R_ADMIN, /* triadctl plane drain */
	TR_CTL_R_FAIL,	/* triadctl plane fail */
	TR_CTL_R_FAULT, /* the health monitor found it faulty */
	TR_CTL_R_DEGRADED, /* it loses or delays too much (ctl/degrade.h): drained, not failed */
	TR_CTL_REASON_MAX
};

#define TR_CTL_WEIGHT_MAX 100

struct tr_ctl_plane_pol {
	char name[TR_CTL_PLANE_NAME];
	uint32_t state;	 /* enum tr_ctl_pstate */
	uint32_t reason; /* enum tr_ctl_reason */
	uint32_t faulty; /* 0 or 1 */
	/* 0 .. TR_CTL_WEIGHT_MAX: how badly the plane does (ctl/degrade.h),
	 * the adaptive choice's contention input in every process. */
	uint32_t weight;
	uint32_t pad[4];
};

/* A knob of the library's TRIAD_* registry (lib/core/config.c) by name,
 * its value as the environment would spell it.  The table carries only
 * the syntax (ctl/ is below core): every process checks and applies the
 * knob through the registry, as it does its environment. */
#define TR_CTL_KNOBS 16	     /* knobs published at most */
#define TR_CTL_KNOB_NAME 32  /* NUL included: [A-Z0-9_], starting TRIAD_ */
#define TR_CTL_KNOB_VALUE 32 /* NUL included: printable ASCII, no blank, " or \\ */
struct tr_ctl_knob {
	char name[TR_CTL_KNOB_NAME];
	char value[TR_CTL_KNOB_VALUE];
};

/* Where a process's value of a knob came from (lib/core/config.h's
 * enum tr_config_src): the default, triadd, or its environment. */
enum tr_ctl_src { TR_CTL_SRC_DEFAULT, TR_CTL_SRC_DAEMON, TR_CTL_SRC_ENV, TR_CTL_SRC_MAX };

struct tr_ctl_policy {
	uint32_t nplanes; /* 1..TRIAD_MAX_PLANES; plane i is the world file's plane i */
	uint32_t nknobs;  /* 0..TR_CTL_KNOBS */
	uint32_t pad[2];
	struct tr_ctl_plane_pol plane[TRIAD_MAX_PLANES];
	struct tr_ctl_knob knob[TR_CTL_KNOBS]; /* the first nknobs, distinct names */
};

#define TR_CTL_POLICY_WORDS (sizeof(struct tr_ctl_policy) / 4)

struct tr_ctl_table {
	uint32_t magic, version, size, nwords;
	_Atomic uint64_t gen; /* odd while the daemon writes */
	uint64_t pad;
	_Atomic uint32_t words[TR_CTL_POLICY_WORDS];
};

struct tr_ctl_cplane {
	_Atomic uint32_t switched; /* 1: this client has left the plane */
	_Atomic uint32_t inflight; /* messages and operations of its own still on the plane */
	_Atomic uint64_t tx_bytes, rx_bytes;
};

struct tr_ctl_counters {
	uint32_t magic, version, size, nplanes;
	/* The table generation whose policy the fields below reflect: written
	 * last (release), so that a reader that sees it sees them. */
	_Atomic uint64_t applied_gen;
	uint64_t pad;
	struct tr_ctl_cplane plane[TRIAD_MAX_PLANES];
};

/* Defaults: nplanes planes named p0.., NORMAL; no knob. */
void tr_ctl_policy_default(struct tr_ctl_policy *p, unsigned nplanes);
/* 0 when every field is in range (names NUL-terminated and not empty,
 * knobs well-formed and distinct), -EBADMSG otherwise. */
int tr_ctl_policy_check(const struct tr_ctl_policy *p);

/* Writer (the daemon): header and policy, generation 2; then every change. */
void tr_ctl_table_init(struct tr_ctl_table *t, const struct tr_ctl_policy *p);
void tr_ctl_table_write(struct tr_ctl_table *t, const struct tr_ctl_policy *p);

/* Reader: t mapped with maplen bytes.  A consistent snapshot into *p and
 * its generation; -EPROTO for a mapping that is not a table of this
 * version, -EAGAIN when the writer was busy for every retry (a daemon
 * that died mid-write: keep the last snapshot), -EBADMSG for a snapshot
 * out of range. */
int tr_ctl_table_read(const struct tr_ctl_table *t, size_t maplen, struct tr_ctl_policy *p,
		      uint64_t *gen_p);
/* The generation alone (acquire): has anything changed? */
uint64_t tr_ctl_table_gen(const struct tr_ctl_table *t);

/* Client side of the counters region. */
void tr_ctl_counters_init(struct tr_ctl_counters *c, unsigned nplanes);
/* Daemon side: 0 and the region's plane count in *nplanes_p when the
 * mapping is a counters region of this version, -EPROTO otherwise.  The
 * header is read once: the client may rewrite it at any time after, so
 * the daemon keeps *nplanes_p and never reads the header again. */
int tr_ctl_counters_check(const struct tr_ctl_counters *c, size_t maplen, unsigned *nplanes_p);

/* A client's counters region as the daemon sees it: the mapping, and the
 * plane count its header had when the daemon checked it (1..
 * TRIAD_MAX_PLANES).  Only the per-plane words below nplanes and
 * applied_gen are read from the mapping after that. */
struct tr_ctl_creg {
	const struct tr_ctl_counters *c;
	unsigned nplanes;
};

/* Drain completion: a plane pending since generation pend_gen[p] settles
 * (SWITCH_PENDING -> SWITCHED, RESTORE_PENDING -> NORMAL) once every
 * client has applied that generation and reports the plane left and idle
 * (or back).  A client with fewer planes does not hold back the others.
 * Returns the mask of planes that changed state. */
unsigned tr_ctl_settle(struct tr_ctl_policy *p, const uint64_t *pend_gen,
		       const struct tr_ctl_creg *clients, unsigned nclients);

/* The SWITCH_PENDING planes every client has left (applied and switched),
 * whatever they still have in flight there: a mask. */
unsigned tr_ctl_left(const struct tr_ctl_policy *p, const uint64_t *pend_gen,
		     const struct tr_ctl_creg *clients, unsigned nclients);

/* 1 when some plane other than `plane` is in use (NORMAL or
 * RESTORE_PENDING, not faulty): leaving plane keeps one live. */
int tr_ctl_other_live(const struct tr_ctl_policy *p, unsigned plane);
/* 1 when the state tells clients to stay off the plane. */
int tr_ctl_pstate_off(uint32_t state);

/* 1 when name (TRIAD_ then [A-Z0-9_], shorter than TR_CTL_KNOB_NAME) and
 * value (1 to TR_CTL_KNOB_VALUE - 1 printable ASCII characters, no blank,
 * quote or backslash: printed as they are, in JSON too) are a knob's
 * syntax. */
int tr_ctl_knob_ok(const char *name, const char *value);
/* The knob called name in p, or -1. */
int tr_ctl_policy_knob(const struct tr_ctl_policy *p, const char *name);

const char *tr_ctl_src_str(uint32_t s); /* "default", "daemon", "environment" */
const char *tr_ctl_pstate_str(uint32_t s); /* "normal", "switch_pending", ... */
const char *tr_ctl_reason_str(uint32_t r); /* "none", "admin", "fail", "fault", "degraded" */

#endif
