/* Third-party copy (docs/spec/third-party-copy.md, after JP6740683B2): the
 * operation tables of one rank and their transitions, sans I/O.
 *
 * Initiator I orders source S to RDMA-write [src_win, src_off, len) of S
 * into [dst_win, dst_off, len) of destination D; the outcome travels back
 * to I with a status code and the leg that failed.  One engine (struct
 * tr_copy) per rank plays all three roles: it keeps the copies this rank
 * initiated (initiator table) and the orders it serves as a source (source
 * table); as a destination it is stateless: each COPY_DATA is validated
 * and answered on its own.
 *
 * Modes (the order carries one; every later message echoes it):
 *   RELAY (default, embodiment 1)
 *     I -COPY_START-> S; S checks its source window and asks its caller for
 *     D's window descriptor (action LOOKUP, answered by tr_copy_desc());
 *     S posts the data as WRITE chunks, then COPY_DATA to D on the same QP;
 *     D checks its window and answers COPY_RESP -> S; once every chunk has
 *     completed and the response is in, S relays COPY_DONE -> I with D's
 *     status and leg unchanged.
 *   DIRECT (embodiment 2)
 *     as RELAY, but D answers COPY_RESP straight to I, and S stays silent
 *     after the data unless the op fails at S first (window, descriptor,
 *     chunk error, D gone before the data was out, timeout): then S sends
 *     COPY_DONE with its error.  S forgets the op once every chunk completed.
 *   TRANSPORT_ACK (no patent)
 *     S takes the RC completions of all its chunks as the reception
 *     response and sends COPY_DONE -> I; no COPY_DATA, D's software is not
 *     involved at all (hence no notification at D either).
 *   Carried data (RELAY and DIRECT, S != D, 0 < len <= cfg.eager and
 *     cfg.carry_max's answer for D): S asks
 *     for no descriptor and posts no WRITE; COPY_DATA carries the bytes
 *     (action CARRY) and D places them itself (action PLACE) once its
 *     window has passed the same checks, before it answers.  The message
 *     stands for the op's only chunk: its send completion is reported as
 *     chunk 0, and everything after is as above.  A small copy then costs
 *     S one send instead of a WRITE and a send (and, the first time, a
 *     descriptor round trip); D writes at most cfg.eager bytes itself.
 *
 * Events in (one function each), actions out (struct tr_copy_act):
 *   at I:  tr_copy_request()         the application asked for a copy
 *          tr_copy_start_delivered() COPY_START's send completed (optional)
 *          tr_copy_recv(RESP|DONE)
 *   at S:  tr_copy_recv(START|RESP), tr_copy_desc(), tr_copy_chunk_done(),
 *          tr_copy_chunk_refused()
 *   at D:  tr_copy_recv(DATA), with the bytes it carried
 *   any:   tr_copy_peer_gone(), tr_copy_tick(), tr_copy_cancel_all()
 *
 * Actions.  Every event function takes an array acts of cap >=
 * TR_COPY_ACTS entries, fills it and returns how many it filled (or a
 * negative errno when the caller broke the interface: nothing happened
 * then).  The caller executes them in array order after the call returns;
 * it may feed the engine new events while doing so (e.g. answer a LOOKUP
 * from its cache at once, or report a post that failed as a chunk error),
 * each with its own array.  No action is kept inside the engine.  One call
 * never produces more than TR_COPY_ACTS actions, except tr_copy_peer_gone(),
 * tr_copy_tick() and tr_copy_cancel_all(), which may touch every op: they
 * stop when the array is nearly full, are idempotent, and must be called
 * again until they return 0.
 *
 *   SEND      send message msg with header hdr to rank to.  COPY_DATA must
 *             go on the QP (plane) that carried this op's WRITE chunks,
 *             after the last of them; other messages take any plane.
 *   WRITE     post an RDMA WRITE of len bytes from (this rank's) window
 *             hdr.src_win at src_off to rank to's window hdr.dst_win at
 *             dst_off, as chunk number chunk of op (hdr.initiator,
 *             hdr.op_id).  All chunks of one op go on one QP, in order.
 *             Report its completion with tr_copy_chunk_done() exactly once
 *             (signal every chunk, or report the unsignalled ones when a
 *             later one completes).  At most cfg.inflight chunks are
 *             posted beyond the lowest one not reported yet.
 *   LOCAL     S == D: copy len bytes from window hdr.src_win at src_off to
 *             window hdr.dst_win at dst_off, both of this rank, now, with
 *             memmove semantics (the ranges may overlap); it cannot fail.
 *   LOOKUP    S needs D's descriptor of window hdr.dst_win of rank to (the
 *             fabric's cache, or a WIN_QUERY): answer with tr_copy_desc()
 *             for (hdr.initiator, hdr.op_id), later or at once.
 *   CARRY     send COPY_DATA to rank to carrying len bytes of (this rank's)
 *             window hdr.src_win at src_off, any plane; it stands for chunk
 *             0 of op (hdr.initiator, hdr.op_id): report its send completion
 *             with tr_copy_chunk_done() (OK once the message is in D's
 *             receive queue), or tr_copy_chunk_refused() if the window can
 *             no longer serve the range, exactly once.
 *   PLACE     D: copy the len bytes at data (what the COPY_DATA carried, as
 *             given to tr_copy_recv()) into window hdr.dst_win at dst_off,
 *             now, before the actions after it (its NOTIFY, its answer);
 *             the window was checked.
 *   NOTIFY    D's window hdr.dst_win asked to be told: [dst_off, dst_off +
 *             len) was written by copy hdr.op_id of hdr.initiator.
 *   COMPLETE  request req finished with hdr.status, failed leg hdr.leg.
 *             Exactly once per accepted request.
 *
 * Windows.  The engine asks its caller about this rank's own windows
 * through cfg.win (a synchronous lookup in the caller's window table; it
 * must not call into the engine).  Source windows need TRIAD_WIN_READ,
 * destination windows TRIAD_WIN_WRITE, and the range must lie inside.
 *
 * Trust.  Every received header is checked on its own (ranks < nranks,
 * op id != 0, known mode, status and leg, OK iff leg NONE; this rank in
 * the right role; the sender is the rank the role says) and then against
 * the table: the op must be live, and every field of the tuple (op id,
 * I, S, D, windows, offsets, length, mode) must equal the order's.  The
 * outcome must fit the sender: COPY_RESP carries OK, or a window error on
 * leg AT_DST; COPY_DONE never names one of I's legs (I_S, S_I), and in
 * DIRECT only an error of S's own (not D_RESP); a COPY_RESP at S must
 * follow COPY_DATA.  A message that fails is dropped and counted
 * (unknown, duplicate or inconsistent, see struct tr_copy_stats); it never
 * changes the table.  Source ops are keyed by (initiator, op id); the
 * per-peer sequence layer removes exact duplicates on the wire, the
 * engine catches those that reach it while the op is live.  A restarted
 * rank must be reported gone before its new incarnation's orders arrive.
 *
 * Failures name a leg (enum tr_copy_leg) and a status (enum triad_status):
 *   AT_SRC   S's source window: NO_WINDOW, OUT_OF_BOUNDS, ACCESS; or S has
 *            no room for the order: NO_MEMORY
 *   AT_DST   D's window: NO_WINDOW, OUT_OF_BOUNDS, ACCESS, found at S (the
 *            descriptor, or the local window when S == D) or at D
 *   I_S      at I: S gone or the deadline passed while COPY_START was not
 *            known to be delivered (see tr_copy_start_delivered())
 *   S_D      at S: the descriptor lookup failed (with a status other than
 *            a window error), a chunk failed (with its completion status),
 *            or D went away or time ran out while S was looking up or
 *            writing
 *   D_RESP   D's answer did not come: at S (RELAY) D gone or timeout after
 *            every chunk completed; at I (DIRECT) D gone, or the deadline
 *            passed after delivery
 *   S_I      at I (RELAY, TRANSPORT_ACK): S gone or the deadline passed
 *            after delivery; (DIRECT) S gone after delivery
 * With I == S, I's deadline names the leg its source op is stuck on (S_D
 * or D_RESP) and drops that op.  Peer gone gives TRIAD_S_UNREACHABLE, a
 * deadline TRIAD_S_TIMEOUT.  The first failure an op meets is the one
 * reported: S waits for the chunks in flight after a chunk error before
 * it reports (state DRAIN), and a later D gone or timeout keeps the first
 * error, or D's answer if it came (in RELAY, that answer proves the data
 * landed, since COPY_DATA followed it: S relays it even if some chunk
 * completions never come).  Otherwise S reports success only once every
 * chunk completed.  D keeps nothing, so a peer gone changes nothing there.
 * The only COMPLETE with an error and leg NONE is CANCELLED
 * (tr_copy_cancel_all()).
 *
 * Degenerate roles need no messages to self: a message for this rank is
 * handled inside the same call.  I == S: COPY_START and COPY_DONE are
 * internal.  I == D: COPY_DATA arrives from S as usual; in DIRECT its
 * answer is internal.  S == D: no WRITE, no COPY_DATA: a LOCAL action,
 * then NOTIFY if asked (not in TRANSPORT_ACK), then the answer (COPY_RESP
 * to I in DIRECT, else COPY_DONE); D's window is checked in S's own table.
 * I == S == D: all of it inside tr_copy_request().
 *
 * Time.  Deadlines and tr_copy_tick()'s now are in one caller-chosen unit
 * (e.g. ns of a monotonic clock); the engine never reads a clock.  A
 * request fails with TIMEOUT at the first tick with now >= its deadline.
 * A source op gets cfg.src_timeout from the first tick after it was
 * created (so between src_timeout and src_timeout + one tick period); it
 * keeps the table from filling with orders whose D never answers.
 *
 * Everything here is pure: no clock, no I/O, no allocation (the tables
 * live in storage the caller gives to tr_copy_init()), no locks; the
 * caller serialises the calls on one engine.  The structures are public
 * so they can be embedded; read them through the accessors, write them
 * only through the functions. */
#ifndef TRIAD_PROTO_COPY_H
#define TRIAD_PROTO_COPY_H

#include <stdbool.h>
#include <stdint.h>

#include "triad.h"

/* The largest chunk window: chunks of one op posted from the lowest one
 * not yet reported on (so never more than this in flight). */
#define TR_COPY_MAX_INFLIGHT 32
/* The least room an action array must have. */
#define TR_COPY_ACTS (TR_COPY_MAX_INFLIGHT + 8)
/* A request deadline that never expires. */
#define TR_COPY_NO_DEADLINE UINT64_MAX

enum tr_copy_mode {
	TR_COPY_RELAY,	       /* D -> S -> I (embodiment 1, default) */
	TR_COPY_DIRECT,	       /* D -> I (embodiment 2) */
	TR_COPY_TRANSPORT_ACK, /* S's write completions are the response */
	TR_COPY_NMODES
};

enum tr_copy_msg {
	TR_COPY_START, /* I -> S: the order */
	TR_COPY_DATA,  /* S -> D: header after the data, same QP */
	TR_COPY_RESP,  /* D -> S (RELAY) or D -> I (DIRECT): D's status */
	TR_COPY_DONE,  /* S -> I: the outcome */
	TR_COPY_NMSGS
};

enum tr_copy_leg {
	TR_COPY_LEG_NONE,   /* no failure */
	TR_COPY_LEG_AT_SRC, /* at S: the source window, or no room at S */
	TR_COPY_LEG_AT_DST, /* the destination window (found at S or D) */
	TR_COPY_LEG_I_S,    /* the order I -> S */
	TR_COPY_LEG_S_D,    /* the data S -> D (lookup, chunks) */
	TR_COPY_LEG_D_RESP, /* D's answer: D -> S (RELAY), D -> I (DIRECT) */
	TR_COPY_LEG_S_I,    /* S's report S -> I */
	TR_COPY_NLEGS
};

/* What the wire carries in every copy message (lib/proto/wire will encode
 * it).  START and DATA carry status OK, leg NONE; RESP and DONE the
 * outcome.  The receiving engine checks it against its table (see Trust
 * above), so the decoder only needs to range-check the fields. */
struct tr_copy_hdr {
	uint64_t op_id;	      /* assigned by I's engine, never 0 */
	uint32_t initiator;   /* ranks */
	uint32_t source;
	uint32_t destination;
	uint32_t src_win;     /* window ids */
	uint32_t dst_win;
	uint64_t src_off;
	uint64_t dst_off;
	uint64_t len;	      /* bytes; 0 is allowed (a probe of the path) */
	uint8_t mode;	      /* enum tr_copy_mode */
	uint8_t leg;	      /* enum tr_copy_leg */
	uint16_t status;      /* enum triad_status */
};

/* One of this rank's windows, as cfg.win reports it, or D's window as the
 * fabric's descriptor says (tr_copy_desc()). */
struct tr_copy_win {
	uint64_t size;	 /* bytes */
	uint32_t access; /* TRIAD_WIN_READ | TRIAD_WIN_WRITE */
	bool notify;	 /* D only: emit NOTIFY after a copy lands in it */
};

enum tr_copy_act_type {
	TR_COPY_ACT_SEND,
	TR_COPY_ACT_WRITE,
	TR_COPY_ACT_LOCAL,
	TR_COPY_ACT_LOOKUP,
	TR_COPY_ACT_NOTIFY,
	TR_COPY_ACT_COMPLETE,
	TR_COPY_ACT_CARRY,
	TR_COPY_ACT_PLACE,
	TR_COPY_NACTS
};

/* An action; which fields mean something depends on type (see above).
 * hdr is always the op's tuple; status and leg matter for SEND and
 * COMPLETE. */
struct tr_copy_act {
	enum tr_copy_act_type type;
	enum tr_copy_msg msg; /* SEND */
	uint32_t to;	      /* SEND, WRITE, LOOKUP: the peer */
	struct tr_copy_hdr hdr;
	void *req;	      /* COMPLETE */
	const void *data;     /* PLACE */
	uint64_t chunk;	      /* WRITE, CARRY */
	uint64_t src_off;     /* WRITE, LOCAL, CARRY: absolute offsets in the windows */
	uint64_t dst_off;     /* WRITE, LOCAL, CARRY, PLACE, NOTIFY */
	uint64_t len;	      /* WRITE, LOCAL, CARRY, PLACE, NOTIFY */
};

/* Initiator table entry. */
enum tr_copy_istate {
	TR_COPY_I_FREE,
	TR_COPY_I_ORDERED,   /* COPY_START sent, not known to be delivered */
	TR_COPY_I_DELIVERED, /* COPY_START reached S: waiting for the outcome */
	TR_COPY_I_NSTATES
};

struct tr_copy_iop {
	struct tr_copy_hdr hdr; /* the order */
	void *req;
	uint64_t deadline;
	uint32_t next_free;
	uint8_t state; /* enum tr_copy_istate */
};

/* Source table entry. */
enum tr_copy_sstate {
	TR_COPY_S_FREE,
	TR_COPY_S_DESC,	 /* waiting for D's descriptor (LOOKUP) */
	TR_COPY_S_WRITE, /* chunks to post or in flight (RELAY: RESP may be in) */
	TR_COPY_S_RESP,	 /* RELAY: every chunk completed, waiting for COPY_RESP */
	TR_COPY_S_DRAIN, /* failed: waiting for the chunks in flight, then report */
	TR_COPY_S_NSTATES
};

struct tr_copy_sop {
	struct tr_copy_hdr hdr; /* the order; status, leg: outcome so far */
	uint64_t deadline;	/* TR_COPY_NO_DEADLINE until stamped */
	uint64_t nchunks;	/* chunks in all */
	uint64_t next;		/* next chunk to post */
	uint64_t base;		/* lowest chunk not reported yet */
	uint64_t done;		/* bit i: chunk base + i reported (base's is 0) */
	uint32_t chain;		/* hash chain, or free list */
	uint32_t bucket;	/* head of hash bucket number (this entry's index) */
	uint16_t inflight;	/* chunks posted and not reported */
	uint16_t resp_status;	/* RELAY: D's answer, once resp_in */
	uint8_t resp_leg;
	uint8_t state; /* enum tr_copy_sstate */
	bool stamped;  /* deadline set by a tick */
	bool data_sent;
	bool resp_in;
};

struct tr_copy_stats {
	uint64_t requests;     /* requests accepted at I */
	uint64_t completed;    /* COMPLETE actions */
	uint64_t orders;       /* COPY_STARTs accepted at S */
	uint64_t refused;      /* COPY_STARTs refused with NO_MEMORY: table full */
	uint64_t chunks;       /* WRITE actions */
	uint64_t carried;      /* CARRY actions: COPY_DATAs with the data in them */
	uint64_t local_copies; /* LOCAL actions */
	uint64_t answered;     /* COPY_DATA answered at D */
	uint64_t orphaned;     /* source ops dropped because I went away */
	/* dropped events: */
	uint64_t unknown;      /* no live op has that id: late after a failure, or bogus */
	uint64_t duplicate;    /* the live op already had this event */
	uint64_t inconsistent; /* wrong peer, role, tuple, mode, state or field */
	uint64_t overflow;     /* actions lost for lack of room: 0 unless a bug */
};

struct tr_copy_cfg {
	uint32_t rank;	       /* this rank, < nranks */
	uint32_t nranks;
	uint64_t chunk;	       /* bytes per WRITE, >= 1 */
	uint64_t eager;	       /* COPY_DATA carries copies of 1..eager bytes; 0: never */
	/* The most a COPY_DATA to rank may carry (what the rank's receive
	 * slots hold), called with win_arg; the smaller of it and eager
	 * applies.  NULL: eager for every rank. */
	uint64_t (*carry_max)(void *arg, uint32_t rank);
	unsigned inflight;     /* chunk window per op, 1..TR_COPY_MAX_INFLIGHT */
	uint64_t src_timeout;  /* source op lifetime (tick units), 0: none */
	struct tr_copy_iop *iops; /* initiator table storage, niops >= 1 */
	uint32_t niops;
	struct tr_copy_sop *sops; /* source table storage, nsops >= 1 */
	uint32_t nsops;
	/* This rank's window id: fill *out and return 0, or return -ENOENT. */
	int (*win)(void *arg, uint32_t id, struct tr_copy_win *out);
	void *win_arg;
};

struct tr_copy {
	struct tr_copy_cfg cfg;
	struct tr_copy_stats stats;
	uint64_t now;	     /* the latest tick's time */
	uint64_t seq;	     /* op id generator */
	uint32_t ifree;	     /* free lists */
	uint32_t sfree;
	uint32_t ilive;	     /* live entries */
	uint32_t slive;
};

const char *tr_copy_mode_str(unsigned mode);
const char *tr_copy_msg_str(unsigned msg);
const char *tr_copy_leg_str(unsigned leg);
const char *tr_copy_act_str(unsigned type);
const char *tr_copy_istate_str(unsigned state);
const char *tr_copy_sstate_str(unsigned state);

/* Sets up an engine over the storage in cfg (which it keeps using; the
 * entries need no initialisation).  Returns 0, or -EINVAL (c untouched)
 * for a bad cfg. */
int tr_copy_init(struct tr_copy *c, const struct tr_copy_cfg *cfg);

/* At I: the application asks for a copy.  order gives source, destination,
 * src_win, src_off, dst_win, dst_off, len, mode (the other fields are
 * ignored); deadline is absolute, in tick units, or TR_COPY_NO_DEADLINE.
 * On success *op_id_p is the op's id (unique in this engine's life, never
 * 0) and the return value the number of actions (SEND START, or the first
 * steps of the copy when I == S, which may complete it at once).  -EINVAL for a bad order (rank
 * >= nranks, unknown mode) or array, -EAGAIN when the initiator table is
 * full: no request was accepted then. */
int tr_copy_request(struct tr_copy *c, const struct tr_copy_hdr *order, void *req,
		    uint64_t deadline, uint64_t *op_id_p, struct tr_copy_act *acts, unsigned cap);

/* At I: the send of COPY_START of op_id completed (it is in S's receive
 * queue).  Optional: it only sharpens the leg a later failure names (I_S
 * before, S_I after; without it, S gone or a deadline at I always names
 * I_S).  Returns 0, or -ENOENT if op_id is not waiting for it (it
 * completed already: harmless). */
int tr_copy_start_delivered(struct tr_copy *c, uint64_t op_id);

/* A copy message arrived from rank from (the wire's sender, authenticated
 * by the connection, never taken from the header), carrying carried bytes
 * of data at data (0, or hdr->len for a COPY_DATA that carries them: any
 * other count is inconsistent).  The engine reads no byte of it: PLACE
 * hands data on.  Returns the number of actions; a dropped message returns
 * 0 and is counted.  -EINVAL only for a bad msg or array. */
int tr_copy_recv(struct tr_copy *c, enum tr_copy_msg msg, uint32_t from,
		 const struct tr_copy_hdr *hdr, const void *data, uint64_t carried,
		 struct tr_copy_act *acts, unsigned cap);

/* At S: the answer to LOOKUP for op (initiator, op_id): status OK and D's
 * window in desc, or the reason there is none (a window error: leg
 * AT_DST; anything else, e.g. UNREACHABLE: leg S_D).  Returns the number
 * of actions; an answer for no op waiting is dropped and counted; -EINVAL
 * for a status that is not a final one, or desc NULL with OK. */
int tr_copy_desc(struct tr_copy *c, uint32_t initiator, uint64_t op_id,
		 enum triad_status status, const struct tr_copy_win *desc,
		 struct tr_copy_act *acts, unsigned cap);

/* At S: WRITE chunk of op (initiator, op_id) completed with status (OK, or
 * the error: e.g. REMOTE_ACCESS, TRANSPORT, PLANE_DOWN).  Returns the
 * number of actions; an unexpected report is dropped and counted. */
int tr_copy_chunk_done(struct tr_copy *c, uint32_t initiator, uint64_t op_id, uint64_t chunk,
		       enum triad_status status, struct tr_copy_act *acts, unsigned cap);

/* At S: WRITE chunk of op (initiator, op_id) was not posted because this
 * rank's source window can no longer serve it (destroyed, or created again
 * under its id smaller or without READ since COPY_START was checked):
 * status NO_WINDOW, OUT_OF_BOUNDS or ACCESS (else -EINVAL).  Reported like
 * tr_copy_chunk_done() with that status, but on leg AT_SRC. */
int tr_copy_chunk_refused(struct tr_copy *c, uint32_t initiator, uint64_t op_id, uint64_t chunk,
			  enum triad_status status, struct tr_copy_act *acts, unsigned cap);

/* Rank is gone (every plane down, process dead): every op that depends on
 * it fails with UNREACHABLE and the leg it broke; source ops ordered by it
 * are dropped silently.  The fabric delivers no more completions for that
 * peer's chunks afterwards (those it does are dropped as unknown).  Call
 * again until it returns 0.  -EINVAL for rank == self or >= nranks. */
int tr_copy_peer_gone(struct tr_copy *c, uint32_t rank, struct tr_copy_act *acts,
		      unsigned cap);

/* Time is now: requests whose deadline <= now, and source ops past theirs,
 * fail with TIMEOUT.  Call again until it returns 0.  now should not go
 * back; an earlier now is taken as the latest one. */
int tr_copy_tick(struct tr_copy *c, uint64_t now, struct tr_copy_act *acts, unsigned cap);

/* The context is closing: every request completes with CANCELLED (leg
 * NONE), every source op is dropped silently.  Call again until it
 * returns 0. */
int tr_copy_cancel_all(struct tr_copy *c, struct tr_copy_act *acts, unsigned cap);

static inline const struct tr_copy_stats *tr_copy_stats(const struct tr_copy *c)
{
	return &c->stats;
}

/* Live requests (initiator table) and orders being served (source table). */
static inline uint32_t tr_copy_requests_live(const struct tr_copy *c)
{
	return c->ilive;
}

static inline uint32_t tr_copy_orders_live(const struct tr_copy *c)
{
	return c->slive;
}

#endif
