/*
 * triad: a userspace RDMA transport for HPC applications.
 *
 * Conventions
 *  - Every handle is opaque.
 *  - Every function that can fail returns 0 (or a count) on success and a
 *    negative errno on failure; outputs are the last arguments, end in _p and
 *    are set only on success.
 *  - Every attr struct starts with a field_mask: a field is read only when
 *    its bit is set, so the structs can grow without breaking callers.
 *  - A request (put, get, ...) completes with an enum triad_status, which is
 *    also what travels on the wire; triad_status_str() names it.
 *
 * Threads: every call is thread-safe.  A context owns one progress engine;
 * an application thread that waits drives it itself, and a background thread
 * serves what nobody waits on (remote requests), sleeping when idle.
 */
#ifndef TRIAD_H
#define TRIAD_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct triad_ctx triad_ctx_t;
typedef struct triad_win triad_win_t;
typedef struct triad_req triad_req_t;
typedef struct triad_group triad_group_t;

/* Largest number of planes (devices/ports) a context can drive. */
#define TRIAD_MAX_PLANES 8

/* ---- request status (also the wire status code) ------------------------ */
enum triad_status {
	TRIAD_S_OK = 0,
	TRIAD_S_PENDING,	  /* not complete yet */
	TRIAD_S_NO_WINDOW,	  /* the target rank exposes no window with that id */
	TRIAD_S_OUT_OF_BOUNDS,	  /* offset + length beyond the window */
	TRIAD_S_ACCESS,		  /* the window does not allow this access */
	TRIAD_S_REMOTE_ACCESS,	  /* the NIC refused the access (stale window) */
	TRIAD_S_PLANE_DOWN,	  /* the plane's local port is down */
	TRIAD_S_UNREACHABLE,	  /* no connection to the peer on that plane (unpinned:
				   * on none, and none back within TRIAD_REJOIN_MS) */
	TRIAD_S_TRANSPORT,	  /* other transport error (see the log) */
	TRIAD_S_TIMEOUT,	  /* the peer did not answer in time */
	TRIAD_S_NO_MEMORY,	  /* out of memory or registration failed */
	TRIAD_S_CANCELLED,	  /* the context was closed first */
	TRIAD_S_MAX
};
const char *triad_status_str(enum triad_status status);

/* ---- context --------------------------------------------------------------*/
enum triad_ctx_attr_field {
	TRIAD_CTX_ATTR_RANK = 1u << 0,	     /* else $TRIAD_RANK */
	TRIAD_CTX_ATTR_WORLD_FILE = 1u << 1, /* else $TRIAD_WORLD */
};

struct triad_ctx_attr {
	uint64_t field_mask;
	int rank;
	const char *world_file;
};

/*
 * Open every plane of this rank, start the progress engine and connect to
 * every peer on every plane (the lower rank connects, the higher accepts).
 * Returns when all connections are up, or with -ETIMEDOUT after
 * TRIAD_CONNECT_TIMEOUT_MS; a plane whose connections failed is marked down
 * and the others still work (then the call returns 0 and logs which).
 * attr may be NULL: everything then comes from the TRIAD_* environment.
 */
int triad_init(const struct triad_ctx_attr *attr, triad_ctx_t **ctx_p);
void triad_fini(triad_ctx_t *ctx);

/* This rank, the number of ranks, the number of planes; -EINVAL for NULL. */
int triad_rank(const triad_ctx_t *ctx);
int triad_size(const triad_ctx_t *ctx);
int triad_nplanes(const triad_ctx_t *ctx);

/* Blocks until every rank of the world has entered it (timeout_ms < 0:
 * forever).  Returns -ETIMEDOUT, or -EIO when a rank is unreachable. */
int triad_barrier(triad_ctx_t *ctx, int timeout_ms);

/* ---- windows --------------------------------------------------------------*/
enum triad_win_access {
	TRIAD_WIN_READ = 1u << 0,  /* peers may get from it */
	TRIAD_WIN_WRITE = 1u << 1, /* peers may put into it */
};

enum triad_win_attr_field {
	TRIAD_WIN_ATTR_ACCESS = 1u << 0, /* default READ | WRITE */
	TRIAD_WIN_ATTR_NOTIFY = 1u << 1, /* default 0 */
	TRIAD_WIN_ATTR_CACHED = 1u << 2, /* default 0 */
};

struct triad_win_attr {
	uint64_t field_mask;
	uint32_t access;
	int notify; /* copies into this window raise triad_copy_event (relay/direct) */
	/* With TRIAD_REG_CACHE on, the window's registrations come from a
	 * cache of window registrations and stay there after destroy, for the
	 * next window over the same pages (a window per call over a user's
	 * buffer, as an MPI broadcast in place makes).  Their keys then stay
	 * good after the window is gone: a peer's old descriptor would write
	 * into whatever the pages hold, so every peer that may hold one calls
	 * triad_win_forget before its next access, and the memory is given to
	 * triad_mem_release before it is freed.  READ | WRITE access only. */
	int cached;
};

/*
 * Register [base, base + len) on every plane and expose it to every peer as
 * window `id` (unique per rank; -EEXIST otherwise).  The window also serves
 * as registered local memory for this rank's own put/get buffers.
 * Destroying a window that peers still use is a user error: their later
 * accesses complete with TRIAD_S_REMOTE_ACCESS.
 */
int triad_win_create(triad_ctx_t *ctx, uint32_t id, void *base, size_t len,
		     const struct triad_win_attr *attr, triad_win_t **win_p);
int triad_win_destroy(triad_win_t *win);
/*
 * Drops what this rank knows of every peer's window `id` (the owners'
 * descriptions, asked for at the first access): its next access to such a
 * window asks the owner again.  Local, no message.  For windows made again
 * under one id, e.g. per call: called once every access to the old ones
 * completed and before this rank says it is ready for the new ones, it
 * guarantees that no access goes to an owner's earlier window, whatever
 * its WIN_GONE notice's delay.  Returns how many descriptors it dropped,
 * -EINVAL without ctx.
 */
int triad_win_forget(triad_ctx_t *ctx, uint32_t id);

/* ---- one-sided operations ---------------------------------------------------*/
/* Flags: pin an operation to one plane (tests and per-plane benchmarks). */
#define TRIAD_F_PLANE(p) (0x100u | ((unsigned)(p) & 0xffu))
/* Stripe a put or get of at least TRIAD_STRIPE_MIN bytes over every live
 * plane to the peer, one part per plane; it completes once every part is
 * in place.  Not with TRIAD_F_PLANE (-EINVAL). */
#define TRIAD_F_STRIPE 0x200u

/*
 * Write len bytes from buf into window `win` of `rank` at offset off
 * (put), or read them into buf (get).  Any len from 1 byte; large
 * operations are cut into chunks.  buf need not be registered: a buffer
 * inside one of this rank's windows is used in place, any other is
 * registered for the operation's lifetime.  The request completes when the
 * data is in the target's memory (put) or in buf (get).
 * req_p may be NULL: the operation then has no request, and only a
 * triad_flush to `rank` tells that it completed (and whether it failed);
 * buf must stay untouched (put) or unread (get) until then.
 */
int triad_put(triad_ctx_t *ctx, const void *buf, size_t len, int rank,
	      uint32_t win, uint64_t off, unsigned flags, triad_req_t **req_p);
int triad_get(triad_ctx_t *ctx, void *buf, size_t len, int rank,
	      uint32_t win, uint64_t off, unsigned flags, triad_req_t **req_p);
/*
 * A request that completes once every put and get to `rank` issued before
 * this call (by any thread, with a request or without) is complete, like
 * shmem_quiet or ucp_ep_flush; at once when none is outstanding.  Its
 * status is the first error of a request-less operation (req_p NULL) to
 * `rank` that completed since the previous flush to `rank` completed
 * (operations with a request report their errors there), else
 * TRIAD_S_OK; such an error is reported by one flush only.
 * -EINVAL: no ctx or req_p, or rank not in the world.
 */
int triad_flush(triad_ctx_t *ctx, int rank, triad_req_t **req_p);
/*
 * With TRIAD_REG_CACHE on, the registrations of put/get buffers outside
 * every window are kept (per plane, least recently used dropped first)
 * instead of being made and dropped by every operation.  The library
 * cannot see memory being freed, and a kept registration would keep the old
 * pages while the addresses get new ones: call triad_mem_release on a
 * buffer (or any range holding it) before freeing or unmapping it, once no
 * operation on it is outstanding (and no window over it exists).  It drops
 * the registrations of cached windows too (TRIAD_WIN_ATTR_CACHED).
 * Returns how many cached registrations it dropped (0 when the cache is
 * off), -EINVAL without ctx, addr or len.
 */
int triad_mem_release(triad_ctx_t *ctx, const void *addr, size_t len);

/* ---- requests --------------------------------------------------------------*/
/* 1 when complete, 0 when not; drives progress once. */
int triad_test(triad_req_t *req);
/* Drives progress once (active-message handlers run in it): for a thread
 * that waits for something other than a request, e.g. an incoming message. */
int triad_progress(triad_ctx_t *ctx);
/* 0 when complete, -ETIMEDOUT after timeout_ms (< 0: forever). */
int triad_wait(triad_req_t *req, int timeout_ms);
enum triad_status triad_req_status(const triad_req_t *req);
/* Free a completed request; -EBUSY while it is still pending. */
int triad_req_free(triad_req_t *req);

/* ---- third-party copy ------------------------------------------------------*/
/*
 * The calling rank (the initiator) orders src_rank to RDMA-write len bytes
 * of its window src_win at src_off into dst_rank's window dst_win at
 * dst_off.  The payload never passes through the initiator, and neither
 * the source's nor the destination's application thread takes part: their
 * progress engines serve the copy.  The request completes with the
 * destination's status; triad_req_copy_leg() says which leg failed.
 * Any rank may be the initiator, the source and the destination at once.
 *
 * Modes (flags):
 *  RELAY (default)  data, then COPY_DATA on the same QP; D answers S once
 *                   the data is in its memory and S relays it to I: four
 *                   messages, D's software checks the window.
 *  DIRECT           D answers I itself: one hop less.
 *  TRANSPORT_ACK    S's own RC write completions are the answer: no
 *                   software at D, no notification; D's window is checked
 *                   only through the descriptor S cached.
 * Each request fails after TRIAD_COPY_TIMEOUT_MS at the latest.
 */
enum triad_copy_flags {
	TRIAD_COPY_RELAY = 0,
	TRIAD_COPY_DIRECT = 1,
	TRIAD_COPY_TRANSPORT_ACK = 2,
};

enum triad_copy_leg {
	TRIAD_LEG_NONE,	  /* no failure */
	TRIAD_LEG_AT_SRC, /* the source window (or no room at the source) */
	TRIAD_LEG_AT_DST, /* the destination window */
	TRIAD_LEG_I_S,	  /* the order, initiator -> source */
	TRIAD_LEG_S_D,	  /* the data, source -> destination */
	TRIAD_LEG_D_RESP, /* the destination's answer */
	TRIAD_LEG_S_I,	  /* the source's report to the initiator */
};
const char *triad_copy_leg_str(enum triad_copy_leg leg);

int triad_copy(triad_ctx_t *ctx, int src_rank, uint32_t src_win, uint64_t src_off,
	       int dst_rank, uint32_t dst_win, uint64_t dst_off, uint64_t len, unsigned flags,
	       triad_req_t **req_p);
/* The leg that failed, for a completed copy request. */
enum triad_copy_leg triad_req_copy_leg(const triad_req_t *req);

/* A copy landed in one of this rank's windows created with notify. */
struct triad_copy_event {
	uint64_t copy_id;
	int initiator, source;
	uint32_t win;
	uint64_t offset, length;
};
/* 1 and *ev_p filled when an event is pending, 0 when none (drives progress). */
int triad_copy_event_poll(triad_ctx_t *ctx, struct triad_copy_event *ev_p);

/* ---- broadcast ------------------------------------------------------------*/
/*
 * Every rank of the world calls it, in the same order for a given root,
 * with the same window id, offset and length: afterwards window win of
 * every rank holds the root's [off, off + len) at off.  Non-root
 * application threads make no triad call between starting the broadcast
 * and waiting for it: their progress engines do the work.  Root-driven
 * algorithms (greedy, binomial, pipelined): the root orders every rank
 * that holds the data to copy it on (third-party copy, transport-ack
 * mode).  TRIAD_BCAST_TREE (delegated): an order tells a rank its data is
 * there and which part of the schedule it drives next, so each holder
 * orders its own subtree and reports up once; the root drives only its
 * own children.  A non-root's request completes when its window holds the
 * data (or with the error the broadcast met); the root's when every rank
 * holds it, or with the first failure, triad_req_failed_rank() naming the
 * rank.
 */
enum triad_bcast_algo {
	TRIAD_BCAST_AUTO = 0,	   /* greedy; pipelined from TRIAD_BCAST_PIPELINE bytes */
	TRIAD_BCAST_GREEDY = 1,	   /* the root keeps every holder busy, no rounds */
	TRIAD_BCAST_BINOMIAL = 2,  /* round-synchronous doubling tree (baseline) */
	TRIAD_BCAST_PIPELINED = 3, /* chunks down a chain or tree */
	TRIAD_BCAST_TREE = 4,	   /* delegated: one tree, or two trees chunk by chunk */
};

int triad_bcast(triad_ctx_t *ctx, int root, uint32_t win, uint64_t off, uint64_t len,
		enum triad_bcast_algo algo, triad_req_t **req_p);
/* The first rank a failed broadcast did not reach (root only), or -1: a
 * world rank for triad_bcast, a group rank for triad_group_bcast. */
int triad_req_failed_rank(const triad_req_t *req);

/*
 * A broadcast group: ranks[0 .. n-1], distinct world ranks among which this
 * rank is, are group ranks 0 .. n-1 (an MPI communicator's ranks, as UCC
 * creates a team).  Every member creates it, with the same id and the same
 * ranks in the same order; the call is local (it waits for nobody), and a
 * broadcast message of the group that arrives before it waits for it.  The
 * id names the group's broadcasts on the wire: unique among this rank's
 * live groups (-EEXIST otherwise), not 0 (the world's).  -EINVAL: no ctx,
 * ranks or group_p, n < 1, a rank outside the world or given twice, this
 * rank not among them; -ENOMEM.
 */
int triad_group_create(triad_ctx_t *ctx, uint32_t id, const int *ranks, int n,
		       triad_group_t **group_p);
/* Frees the group here; its id may be used again.  Broadcasts of it still
 * under way here complete as if it lived.  Groups still alive at
 * triad_fini are freed with the context.  -EINVAL for NULL. */
int triad_group_destroy(triad_group_t *group);
/* This rank's group rank; the number of members.  -EINVAL for NULL. */
int triad_group_rank(const triad_group_t *group);
int triad_group_size(const triad_group_t *group);
/*
 * triad_bcast over the group: every member calls it, in the same order for
 * a given root, with the same window id, offset, length and algorithm;
 * root is a group rank; ranks outside the group take no part (their
 * windows are not touched and their application threads make no call).
 * Broadcasts of different groups are told apart by the group id, so
 * members may call those of different groups in different orders.
 * -EINVAL: no group or req_p, root not a group rank, an unknown algorithm.
 */
int triad_group_bcast(triad_group_t *group, int root, uint32_t win, uint64_t off,
		      uint64_t len, enum triad_bcast_algo algo, triad_req_t **req_p);

/* ---- active messages ---------------------------------------------------------*/
/*
 * A message of up to triad_am_max_size() bytes, delivered to the handler
 * registered under its id at the target, in the target's progress engine.
 * Messages travel in the receiver's flow-controlled slots: from one sender
 * to one receiver on one priority they are handled in order, also across
 * a plane fault or drain (TRIAD_ORDER=strict, the default: a message that
 * overtook an earlier one on another plane waits, copied; with
 * TRIAD_ORDER=any it is handled at once), a receiver is never overrun,
 * and a slow handler holds the sender back.  Each is handled exactly
 * once, whatever plane carried it.  Priorities
 * keep the last free slots for more urgent traffic: low needs 3 free
 * slots, medium 2, high 1 (TRIAD_FC_NEED_*), so high-priority messages
 * (acknowledgements) still move when low ones saturate a receiver.
 */
enum triad_prio {
	TRIAD_PRIO_HIGH = 0,
	TRIAD_PRIO_MEDIUM = 1,
	TRIAD_PRIO_LOW = 2,
};

#define TRIAD_AM_MAX_ID 255

typedef struct triad_am_msg triad_am_msg_t;

enum triad_am_verdict {
	TRIAD_AM_DONE = 0, /* the slot is free again when the handler returns */
	TRIAD_AM_KEEP = 1, /* data stays valid until triad_am_release(msg) */
};

/*
 * Runs with the context's progress engine; it may call triad_am_send and
 * triad_am_release, but must not wait (triad_wait, triad_barrier).
 * Returns a triad_am_verdict.
 */
typedef int (*triad_am_handler_t)(void *arg, int src_rank, const void *data, size_t len,
				  triad_am_msg_t *msg);

/* -EEXIST when id is taken, -EINVAL when id > TRIAD_AM_MAX_ID or no handler. */
int triad_am_register(triad_ctx_t *ctx, unsigned id, triad_am_handler_t handler, void *arg);

/*
 * Copies buf and queues it for rank; returns at once (buf may be reused).
 * The request, if req_p is not NULL, completes when the message reached the
 * target (or with an error status).  -EMSGSIZE when len > triad_am_max_size;
 * -EAGAIN when 256 messages of this priority to rank are queued or in flight
 * (the bound of every queue on the way): progress, and send it again.
 */
int triad_am_send(triad_ctx_t *ctx, int rank, unsigned id, const void *buf, size_t len,
		  enum triad_prio prio, triad_req_t **req_p);
/* Frees the slot of a message its handler kept. */
int triad_am_release(triad_am_msg_t *msg);
size_t triad_am_max_size(const triad_ctx_t *ctx); /* 0 for NULL */

/* ---- planes -----------------------------------------------------------------*/
/*
 * Planned drain, for maintenance of a plane (a NIC, a port, a cable): new
 * messages and operations to every peer leave the plane, nothing fails,
 * and the peers are asked to stop sending to this rank on it too.  What is
 * already on the plane finishes there (a copy this rank serves keeps its
 * plane to the end); triad_plane_info() reports DRAINED once nothing of
 * this rank's is in flight on it.  Draining a drained plane does nothing.
 * -EBUSY (nothing changes) when a peer would be left with no other live
 * plane; -EINVAL for a plane that does not exist.  triad_plane_restore()
 * brings the traffic of the plane's home peers back to it.  Operations
 * pinned with TRIAD_F_PLANE keep their plane.
 */
int triad_plane_drain(triad_ctx_t *ctx, int plane);
int triad_plane_restore(triad_ctx_t *ctx, int plane);
/*
 * A fault on purpose (the daemon's "plane fail", and fault-injection
 * tests): every connection of this rank on the plane is forced into the
 * error state now, as a QP error would.  What was posted comes back
 * flushed and is done again on a live plane (a message is delivered once,
 * by its sequence number); the connections are rebuilt, and the plane is
 * used again once they are up, unless it is also drained.  Failing the
 * last plane to a peer is allowed: its operations then fail.  -EINVAL for
 * a plane that does not exist.
 */
int triad_plane_fail(triad_ctx_t *ctx, int plane);
/*
 * Another fault on purpose (fault-injection tests): this rank's connections
 * on the plane stop allowing RDMA WRITEs into it, as a responder that
 * cannot parse the packets would.  Each peer's next WRITE there is refused
 * (the NIC's invalid-request NAK, which breaks the connection at both
 * ends) and, unless pinned, done again on a live plane; the connections
 * are rebuilt as after triad_plane_fail (a connection the NIC has already
 * moved to the error state refuses everything: it counts as done).  -EINVAL
 * for a plane that does not exist, a negative errno if the NIC refuses the
 * change.
 */
int triad_plane_refuse_writes(triad_ctx_t *ctx, int plane);

enum triad_plane_state {
	TRIAD_PLANE_NORMAL,   /* in use */
	TRIAD_PLANE_DRAINING, /* drained on request; something of ours still in flight on it */
	TRIAD_PLANE_DRAINED,  /* drained on request; nothing in flight */
	TRIAD_PLANE_DOWN,     /* not drained, but its port is down or no peer is connected on it */
};
const char *triad_plane_state_str(enum triad_plane_state s);

/* field_mask (in): the groups to fill, TRIAD_PLANE_INFO_ALL for every one;
 * unknown bits: -EINVAL.  Only the groups asked for are written, so a
 * program built with an older (shorter) struct is never written past it. */
#define TRIAD_PLANE_INFO_STATE 0x1u   /* state .. rma_inflight */
#define TRIAD_PLANE_INFO_REJECTS 0x2u /* conn_rejected_key */
#define TRIAD_PLANE_INFO_ALL 0x3u
struct triad_plane_info {
	uint64_t field_mask;
	enum triad_plane_state state;
	int port_up;
	unsigned peers_up;	/* peers connected on the plane */
	unsigned msgs_inflight; /* messages posted and not acknowledged */
	unsigned msgs_queued;	/* messages waiting for a slot of the peer */
	unsigned rma_inflight;	/* WRITE/READ work requests posted, plus operations
				 * queued for send-queue room */
	/* connection requests refused on this plane because they came from
	 * another job (another job key: PMIx namespace, world file 'key') */
	uint64_t conn_rejected_key;
};
int triad_plane_info(triad_ctx_t *ctx, int plane, struct triad_plane_info *info_p);

/* ---- counters ---------------------------------------------------------------*/
/* field_mask, set by the caller: the groups of fields to fill.  The
 * library writes only those, so a program built against an older triad.h
 * (a shorter struct) is never written past its end; a new field comes
 * with a new group.  Unknown bits: -EINVAL. */
enum {
	TRIAD_CONN_STATS_LINK = 1u << 0, /* up .. errors */
	TRIAD_CONN_STATS_FC = 1u << 1,	 /* bsm_standalone .. rx_dropped */
	TRIAD_CONN_STATS_AM = 1u << 2,	 /* am_unknown */
	TRIAD_CONN_STATS_COPY = 1u << 3, /* copy_bytes */
	TRIAD_CONN_STATS_CHOICE = 1u << 4, /* detours */
	TRIAD_CONN_STATS_CONN = 1u << 5,   /* established */
	TRIAD_CONN_STATS_RUN = 1u << 6,	   /* other_run */
	TRIAD_CONN_STATS_BARE = 1u << 7,   /* am_bare_tx, am_bare_rx */
};
#define TRIAD_CONN_STATS_ALL 0xffu

struct triad_conn_stats {
	uint64_t field_mask; /* TRIAD_CONN_STATS_* (in) */
	int up;		     /* connection established */
	uint64_t connects;	     /* connection attempts from this side (the lower rank's) */
	uint64_t tx_msgs, rx_msgs;   /* messages (control, AM, BSM) */
	uint64_t tx_bytes, rx_bytes; /* payload bytes: put sent, get received, messages */
	uint64_t puts, gets;	     /* operations posted from this side */
	uint64_t errors;	     /* completions with an error */
	/* flow control */
	uint64_t bsm_standalone;     /* BSMs sent on their own */
	uint64_t bsm_piggyback;	     /* messages whose header told new buffer status */
	unsigned tx_slots_busy;	     /* the peer's slots this side may not use now */
	unsigned rx_slots_busy;	     /* this side's slots holding a message now */
	unsigned tx_queued;	     /* messages waiting for a slot */
	uint64_t fc_timeouts;	     /* slots freed by timeout (lost messages) */
	uint64_t rx_overruns;	     /* messages into an occupied slot (never, unless a bug) */
	uint64_t rx_dropped;	     /* malformed messages dropped */
	uint64_t am_unknown;	     /* active messages for an unregistered id */
	uint64_t copy_bytes;	     /* bytes this side RDMA-wrote as a copy's source (data a
				      * small copy carries counts as message bytes) */
	/* adaptive choice (TRIAD_ADAPTIVE) */
	/* messages this connection took over from a busier one to the peer,
	 * when they were queued (their plane's backlog above TRIAD_ADAPTIVE_T)
	 * or while they waited there */
	uint64_t detours;
	/* set-up */
	uint64_t established; /* times it came up, by either side; 0: never connected
			       * (TRIAD_CONNECT=lazy: a peer never talked to) */
	/* connection set-ups refused, by either side, because the other was a
	 * process of another run of the same world (one of that rank still
	 * alive from the run before, or a new one after ours died) */
	uint64_t other_run;
	/* active messages sent and received bare: headers in the SEND's
	 * immediate, only the payload on the wire (TRIAD_BARE_AM) */
	uint64_t am_bare_tx, am_bare_rx;
};
/* The counters of this rank's connection to rank on plane, for the groups
 * stats_p->field_mask names (completions already queued are counted
 * first). */
int triad_conn_stats(triad_ctx_t *ctx, int rank, int plane,
		     struct triad_conn_stats *stats_p);

/* ---- configuration -------------------------------------------------------- */
/* Print every TRIAD_* variable with its value, default and meaning. */
void triad_config_print(FILE *out);

#ifdef __cplusplus
}
#endif
#endif /* TRIAD_H */
