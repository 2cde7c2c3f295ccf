/* coll/triad: an Open MPI 4.1 collective component whose MPI_Bcast and
 * MPI_Ibcast are triad_group_bcast (docs/mpi.md).
 *
 * triad starts once per process, from the launcher's PMIx (lib/core/pmix.c),
 * at the first communicator that spans the whole world (MPI_COMM_WORLD in
 * MPI_Init); every rank then agrees whether it started everywhere.  Every
 * intra-communicator of two ranks or more gets a module once triad is up,
 * and the module a triad group of the communicator's ranks (freed with the
 * module): its broadcasts of at least coll_triad_min_size bytes go through
 * triad, the others to the module that served them before this one was
 * enabled.  Intercommunicators and a subset of one rank get no module
 * (Open MPI's own choice serves them).
 *
 * triad_group_bcast moves a window's range, under one window id at every
 * rank: each rank makes the window per segment of at most
 * coll_triad_stage_size bytes, over its own buffer where its datatype is
 * contiguous (in place), else over a staging buffer of the context id's
 * that the root packs into and the others unpack from.  The segments of a
 * communicator's broadcasts, blocking or not, go one after the other in
 * the order they were called (coll_triad_bcast.c). */
#ifndef TRIAD_COLL_TRIAD_H
#define TRIAD_COLL_TRIAD_H

#include "ompi_config.h"

#include "mpi.h"
#include "ompi/mca/coll/coll.h"

#include <pthread.h>

#include <triad.h>

/* The triad group id and the window id of a communicator: its
 * context id, which all its members share, with the top bit set (ids
 * below 2^31 are the application's own). */
#define TRIAD_COLL_ID(cid) (0x80000000u | (uint32_t)(cid))
/* The active message id of the staging handshake (coll_triad_bcast.c). */
#define TRIAD_COLL_AM_ID 0xc7u

enum triad_coll_state {
	TRIAD_COLL_UNTRIED, /* triad not started yet */
	TRIAD_COLL_STARTED, /* triad_init done here; not yet agreed by every rank */
	TRIAD_COLL_UP,	    /* every rank's triad is up: broadcasts may use it */
	TRIAD_COLL_FAILED,  /* it failed somewhere: everything is handed back */
};

struct triad_coll_component {
	mca_coll_base_component_2_0_0_t super;
	/* MCA parameters */
	int priority;		 /* coll_triad_priority: 0 = off */
	int verbose;		 /* coll_triad_verbose */
	unsigned long min_size;	 /* coll_triad_min_size: smaller broadcasts handed back */
	unsigned long stage_size; /* coll_triad_stage_size: a segment's bytes at most */
	unsigned long reg_cache; /* coll_triad_reg_cache: TRIAD_REG_CACHE's default */
	int algo;		 /* coll_triad_algorithm: enum triad_bcast_algo */
	int timeout_ms;		 /* coll_triad_timeout_ms: each wait of a segment */
	/* performance variables (MPI_T) */
	unsigned long served;	  /* coll_triad_bcast_served */
	unsigned long handed_back; /* coll_triad_bcast_handed_back */
	unsigned long bytes;	  /* coll_triad_bcast_bytes */
	unsigned long staged;	  /* coll_triad_bcast_staged_bytes */
	/* triad, once per process */
	int output;
	int modules; /* alive: triad stops with the last (MPI_COMM_WORLD's, at MPI_Finalize) */
	enum triad_coll_state state;
	triad_ctx_t *ctx;
	int progress; /* triad_coll_progress is registered */
	int hooks;    /* Open MPI tells memory given back (triad_coll_mem_released) */
	struct triad_coll_slot *slots; /* windows' state by context id */
	struct triad_coll_module *busy; /* modules with broadcasts under way */
	pthread_mutex_t lock;		 /* the slots' handshake fields (AM handler) */
};

extern struct triad_coll_component mca_coll_triad_component;

struct triad_coll_module {
	mca_coll_base_module_t super;
	int *world_rank; /* communicator rank -> triad (world) rank */
	triad_group_t *group; /* the communicator's ranks; NULL: nothing served */
	struct ompi_communicator_t *comm; /* its communicator (which holds it) */
	int size, rank;			   /* the communicator's */
	uint32_t cid;	/* its context id */
	int agree;	 /* enable must agree on triad's start (first world communicator) */
	uint32_t seq;	 /* segments started on the communicator */
	int took;	 /* it took its window once (coll_triad_bcast.c: seg_take) */
	struct triad_coll_req *head, *tail; /* its broadcasts under way, in call order */
	struct triad_coll_module *next_busy; /* in the component's busy list */
	mca_coll_base_module_bcast_fn_t prev_bcast;
	mca_coll_base_module_t *prev_bcast_module;
	mca_coll_base_module_ibcast_fn_t prev_ibcast;
	mca_coll_base_module_t *prev_ibcast_module;
};
OBJ_CLASS_DECLARATION(triad_coll_module_t);
typedef struct triad_coll_module triad_coll_module_t;

mca_coll_base_module_t *triad_coll_comm_query(struct ompi_communicator_t *comm, int *priority);
int triad_coll_bcast(void *buf, int count, struct ompi_datatype_t *dtype, int root,
		     struct ompi_communicator_t *comm, mca_coll_base_module_t *module);
int triad_coll_ibcast(void *buf, int count, struct ompi_datatype_t *dtype, int root,
		      struct ompi_communicator_t *comm, ompi_request_t **request,
		      mca_coll_base_module_t *module);
/* Advances every broadcast under way (registered with opal_progress);
 * returns how many completed. */
int triad_coll_progress(void);
/* The AM handler of the staging handshake. */
int triad_coll_am(void *arg, int src_rank, const void *data, size_t len, triad_am_msg_t *msg);
/* Frees the slots' staging buffers (after triad_fini). */
void triad_coll_slots_free(void);
/* Open MPI's memory hook: [buf, buf + length) goes back to the system
 * (coll_triad_bcast.c). */
void triad_coll_mem_released(void *buf, size_t length, void *cbdata, bool from_alloc);
/* Starts triad (collective over the world) and its handshake. */
int triad_coll_start(void);
/* Closes what triad_coll_start opened (again: nothing); later
 * communicators get no module. */
void triad_coll_stop(void);

#endif
