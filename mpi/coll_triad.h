/* coll/triad: an Open MPI 4.1 collective component whose MPI_Bcast is
 * triad_bcast (docs/mpi.md).
 *
 * triad starts once per process, from the launcher's PMIx (lib/core/pmix.c),
 * at the first communicator that spans the whole world (MPI_COMM_WORLD in
 * MPI_Init); every rank then agrees whether it started everywhere.  Every
 * intra-communicator of two ranks or more gets a module once triad is up
 * (a proper subset of the world gets a triad group, triad_group_create,
 * freed with the module): its broadcasts of at least coll_triad_min_size
 * bytes go through triad, the others to the module that served MPI_Bcast
 * before this one was enabled.  Intercommunicators and a subset of one
 * rank get no module (Open MPI's own choice serves them).
 *
 * triad_bcast moves a window's range, under one window id at every rank,
 * so the data is staged: every rank exposes one window (coll_triad_stage_size
 * bytes, registered once); the root packs the user's buffer into it, the
 * others unpack from it.  A broadcast larger than the window goes in
 * segments. */
#ifndef TRIAD_COLL_TRIAD_H
#define TRIAD_COLL_TRIAD_H

#include "ompi_config.h"

#include "mpi.h"
#include "ompi/mca/coll/coll.h"

#include <triad.h>

/* The window id of the staging window: not for the application's own. */
#define TRIAD_COLL_WIN_ID 0x74434f4cu /* "tCOL" */
/* The triad group id of a communicator: its context id, which all its
 * members share, with the top bit set (ids below 2^31 are the
 * application's own). */
#define TRIAD_COLL_GROUP_ID(cid) (0x80000000u | (uint32_t)(cid))

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
	unsigned long stage_size; /* coll_triad_stage_size: the staging window, bytes */
	int algo;		 /* coll_triad_algorithm: enum triad_bcast_algo */
	int timeout_ms;		 /* coll_triad_timeout_ms: a broadcast's and a barrier's */
	/* performance variables (MPI_T) */
	unsigned long served;	  /* coll_triad_bcast_served */
	unsigned long handed_back; /* coll_triad_bcast_handed_back */
	unsigned long bytes;	  /* coll_triad_bcast_bytes */
	/* triad, once per process */
	int output;
	int modules; /* alive: triad stops with the last (MPI_COMM_WORLD's, at MPI_Finalize) */
	enum triad_coll_state state;
	triad_ctx_t *ctx;
	void *stage;
	triad_win_t *win;
};

extern struct triad_coll_component mca_coll_triad_component;

struct triad_coll_module {
	mca_coll_base_module_t super;
	int *world_rank; /* communicator rank -> triad (world) rank */
	triad_group_t *group; /* a proper subset of the world: its group; NULL: the world */
	int agree;	 /* enable must agree on triad's start (first world communicator) */
	mca_coll_base_module_bcast_fn_t prev_bcast;
	mca_coll_base_module_t *prev_bcast_module;
};
OBJ_CLASS_DECLARATION(triad_coll_module_t);
typedef struct triad_coll_module triad_coll_module_t;

mca_coll_base_module_t *triad_coll_comm_query(struct ompi_communicator_t *comm, int *priority);
int triad_coll_bcast(void *buf, int count, struct ompi_datatype_t *dtype, int root,
		     struct ompi_communicator_t *comm, mca_coll_base_module_t *module);
/* Starts triad (collective over the world), creates the staging window. */
int triad_coll_start(void);
/* Closes what triad_coll_start opened (again: nothing); later
 * communicators get no module. */
void triad_coll_stop(void);

#endif
