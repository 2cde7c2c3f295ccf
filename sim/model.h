/* triad-sim's network model: the broadcast scheduler (lib/proto/bcast) and
 * the third-party copy engine (lib/proto/copy) of every rank, driven by a
 * discrete-event clock over a LogGP-like network (docs/sim.md).
 *
 * Nothing here decides who sends what: the root's tr_bcast engine orders
 * every transfer and every rank's tr_copy engine says which messages and
 * RDMA writes it takes.  The model only says how long each costs:
 *
 *   o    CPU time per event at the rank that handles it: a message
 *        received, a completion polled, a message or write posted.  Each
 *        rank has one CPU (its progress engine): events queue for it.
 *   g    the gap: a NIC injects at most one message or write per g.
 *   B    bandwidth of each NIC, per direction: a write of n bytes keeps
 *        the sender's NIC busy n / B, and the receiver's NIC as well (a
 *        rank written by two sources at once takes them one after the
 *        other, in the order they arrive: struct sim_rx).  Control
 *        messages are msg_bytes long.
 *   L    one-way latency of the link between two ranks: equal, two or
 *        more racks (L inside a rack, spread x L across), or random per
 *        link in [L, spread x L] (fixed for the run, the same both ways).
 *   wake a rank whose CPU was idle for longer than its spin time is
 *        asleep: the event that wakes it costs wake more (0: never asleep).
 *
 * A WRITE's data lands when its last byte is in the receiver's memory;
 * the RC acknowledgement takes L back to the source, whose CPU then polls
 * the completion (o).  A message is handled at the receiver o after it
 * arrived (or once its CPU is free).  Flow control is not modelled: at the
 * defaults a broadcast keeps at most fanout x window orders outstanding
 * per source, fewer than a lane's receive slots.  Window descriptors are
 * taken to be cached (the benchmark's warm-up broadcast fills the cache).
 *
 * Everything is deterministic: events at the same instant are handled in
 * the order they were scheduled. */
#ifndef TRIAD_SIM_MODEL_H
#define TRIAD_SIM_MODEL_H

#include <stddef.h>
#include <stdint.h>

#include "proto/bcast.h"
#include "proto/bnode.h"
#include "proto/copy.h"

enum sim_lat_model {
	SIM_LAT_EQUAL,	/* every link L */
	SIM_LAT_RACKS,	/* L inside a rack of rack_size ranks, spread x L across */
	SIM_LAT_RANDOM, /* per link, uniform in [L, spread x L] */
	SIM_LAT_NMODELS
};

struct sim_net {
	double lat_us;		 /* L */
	enum sim_lat_model lat_model;
	double lat_spread;	 /* k >= 1 */
	uint32_t rack_size;	 /* SIM_LAT_RACKS: ranks per rack, >= 1 */
	uint64_t seed;		 /* SIM_LAT_RANDOM */
	double o_us;		 /* o */
	double gap_us;		 /* g */
	double bw;		 /* B in bytes per us (= MB/s); <= 0: no bandwidth cost */
	double wake_us;		 /* extra cost of waking a sleeping rank, 0: none */
	double spin_us;		 /* a non-root progress engine sleeps after this idle time */
	double root_spin_us;	 /* the root's waiting application thread likewise */
	uint32_t msg_bytes;	 /* a control message on the wire */
	uint64_t copy_chunk;	 /* TRIAD_CHUNK_SIZE: the copy engine's WRITE size */
	unsigned copy_inflight;	 /* WRITEs in flight per copy (lib/core/copy.c: 16) */
	enum tr_copy_mode mode;	 /* the broadcast uses TRANSPORT_ACK */
};

/* The defaults of the library (chunk, inflight, mode) on a 100 Gb/s
 * fabric: L 1.5 us, o 0.5 us, g 0.1 us, B 12500 MB/s, never asleep. */
void sim_net_default(struct sim_net *net);

/* What the trace callback sees, in time order per kind. */
enum sim_trace_type {
	SIM_TR_ORDER,	  /* the root asks src -> dst (a COPY, or its own PUT) */
	SIM_TR_REPORT,	  /* the root learns transfer src -> dst completed */
	SIM_TR_LANDED,	  /* bytes [off, off + len) from src are in dst's memory */
	SIM_TR_RANK_DONE, /* rank dst handled its RANK_DONE */
	SIM_TR_DONE,	  /* the root's broadcast completed */
	SIM_TR_NTYPES
};

struct sim_trace {
	enum sim_trace_type type;
	double t;	/* us from the root's call */
	uint32_t src, dst;
	uint64_t chunk; /* ORDER, REPORT: the broadcast's chunk */
	uint64_t off, len;
};

typedef void (*sim_trace_fn)(void *arg, const struct sim_trace *ev);

struct sim_bcast_cfg {
	uint32_t nranks;
	uint32_t root;
	uint64_t len;
	enum tr_bcast_algo algo;
	uint64_t chunk;	 /* PIPELINE chunk, 0: what lib/core/bcast.c takes (copy chunk, <= 1 MiB) */
	uint32_t fanout; /* PIPELINE, 0: auto */
	uint32_t window; /* PIPELINE, 0: default */
	/* The delegated broadcast (proto/bnode): every rank runs its engine. */
	bool deleg;
	enum tr_bnode_shape shape; /* AUTO: the root's choice from the model's L, o, g, B */
	uint64_t inline_max;	   /* 0: TR_BNODE_INLINE_DEFAULT */
	uint32_t max_kids;	   /* 0: the engine's default */
};

struct sim_result {
	double t_done;	    /* the root's request completed (what triad-perf times) */
	double t_all;	    /* the last rank handled its RANK_DONE */
	enum tr_bcast_algo algo; /* as resolved */
	uint64_t copies, puts;	 /* the scheduler's transfers */
	uint64_t msgs, writes;	 /* messages and WRITEs on the wire */
	uint64_t events;	 /* handled by the clock */
	uint32_t root_peers;	 /* ranks the root exchanged anything with */
	uint32_t max_peers;	 /* the most any other rank did */
	double avg_peers;	 /* mean over the non-roots */
	uint32_t status;	 /* the broadcast's DONE status (OK) */
	uint64_t root_events;	 /* events the root's CPU handled or posted (o each) */
	uint64_t max_events;	 /* ... the busiest non-root's */
	enum tr_bnode_shape shape; /* deleg: as resolved */
	uint64_t chunk;		 /* deleg TWOTREE: the chunk */
};

/* Runs one broadcast.  0, -EINVAL for a bad net or cfg, -ENOMEM, or -EIO
 * when an engine refused (a bug; the message is in err). */
int sim_bcast(const struct sim_net *net, const struct sim_bcast_cfg *cfg, sim_trace_fn trace,
	      void *arg, struct sim_result *res, char *err, size_t errlen);

/* Runs one third-party copy of len bytes from source to destination
 * ordered by initiator (distinct ranks < nranks), through the same engines
 * and clock; *t_us is when the initiator's request completed. */
int sim_copy(const struct sim_net *net, uint32_t nranks, uint32_t initiator, uint32_t source,
	     uint32_t destination, uint64_t len, double *t_us, char *err, size_t errlen);

/* A NIC's receive side: the spans of time it is taken by WRITEs already
 * posted to it, in order.  A WRITE takes the first free span of its
 * length from the moment its first byte arrives, before or after those
 * posted earlier (a WRITE over a long link, posted first, does not hold
 * the NIC for one over a short link that arrives first). */
struct sim_rx {
	struct sim_rx_span {
		double s, e;
	} *v;
	size_t n, cap;
};

/* Takes len us of rx from first on (spans that end by now are dropped:
 * nothing posted from now on arrives before it); returns when the last
 * byte is in, or -1 without memory. */
double sim_rx_take(struct sim_rx *rx, double now, double first, double len);

/* The one-way latency of link a - b under net (a != b). */
double sim_link_lat(const struct sim_net *net, uint32_t a, uint32_t b);

/* The classic MPI broadcasts as analytic models on the same network
 * (sim/ref.c, docs/sim.md): not implementations, no engine runs. */
enum sim_ref {
	SIM_REF_BINOMIAL,     /* binomial tree, largest subtree first */
	SIM_REF_SCATTER_RING, /* binomial scatter + ring allgather */
	SIM_REF_SCATTER_RD,   /* binomial scatter + recursive-doubling allgather */
	SIM_REF_PIPE_BINARY,  /* pipelined binary tree, best segment size */
	SIM_REF_CHAIN,	      /* pipelined chain, best segment size */
	SIM_REF_N
};

const char *sim_ref_str(enum sim_ref ref);

/* The time in us until the last rank holds all len bytes under the model
 * ref; *seg_p (may be NULL) gets the segment size the pipelined ones took. */
double sim_ref_time(const struct sim_net *net, enum sim_ref ref, uint32_t nranks, uint32_t root,
		    uint64_t len, uint64_t *seg_p);

/* The lower bound the tables compare with: max(len / B, ceil(log2 N) x L),
 * L the smallest link latency. */
double sim_lower_bound(const struct sim_net *net, uint32_t nranks, uint64_t len);

#endif
