/* coll/triad's component: its MCA parameters and MPI_T counters, and
 * triad's start and end (once per process). */
#include "coll_triad.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

#include "opal/mca/base/mca_base_pvar.h"
#include "opal/memoryhooks/memory.h"
#include "opal/runtime/opal_progress.h"
#include "opal/util/output.h"

static int triad_coll_register(void);
static int triad_coll_open(void);
static int triad_coll_close(void);
static int triad_coll_init_query(bool enable_progress_threads, bool enable_mpi_threads);

struct triad_coll_component mca_coll_triad_component = {
	.super = {
		.collm_version = {
			MCA_COLL_BASE_VERSION_2_0_0,
			.mca_component_name = "triad",
			MCA_BASE_MAKE_VERSION(component, 0, 1, 0),
			.mca_open_component = triad_coll_open,
			.mca_close_component = triad_coll_close,
			.mca_register_component_params = triad_coll_register,
		},
		.collm_data = { .param_field = MCA_BASE_METADATA_PARAM_NONE },
		.collm_init_query = triad_coll_init_query,
		.collm_comm_query = triad_coll_comm_query,
	},
	.priority = 0,
	.min_size = 256 * 1024,
	.stage_size = 16ul << 20,
	.reg_cache = 1ul << 30,
	.algo = TRIAD_BCAST_AUTO,
	.timeout_ms = 120000,
	.output = -1,
	.lock = PTHREAD_MUTEX_INITIALIZER,
};

static void var(const char *name, const char *desc, mca_base_var_type_t type, void *storage)
{
	(void)mca_base_component_var_register(&mca_coll_triad_component.super.collm_version, name,
					      desc, type, NULL, 0, 0, OPAL_INFO_LVL_5,
					      MCA_BASE_VAR_SCOPE_READONLY, storage);
}

static void counter(const char *name, const char *desc, unsigned long *storage)
{
	(void)mca_base_component_pvar_register(
		&mca_coll_triad_component.super.collm_version, name, desc, OPAL_INFO_LVL_4,
		MCA_BASE_PVAR_CLASS_COUNTER, MCA_BASE_VAR_TYPE_UNSIGNED_LONG, NULL,
		MPI_T_BIND_NO_OBJECT, MCA_BASE_PVAR_FLAG_READONLY | MCA_BASE_PVAR_FLAG_CONTINUOUS,
		NULL, NULL, NULL, storage);
}

static int triad_coll_register(void)
{
	struct triad_coll_component *c = &mca_coll_triad_component;

	var("priority", "Priority of coll/triad (0: off; above coll/tuned's 30 to serve MPI_Bcast)",
	    MCA_BASE_VAR_TYPE_INT, &c->priority);
	var("verbose", "Verbosity of coll/triad (1: triad's start and every rank's counters at the "
	    "end; 2: every broadcast)", MCA_BASE_VAR_TYPE_INT, &c->verbose);
	var("min_size", "Broadcasts of fewer bytes go to the component selected before coll/triad",
	    MCA_BASE_VAR_TYPE_UNSIGNED_LONG, &c->min_size);
	var("stage_size", "Bytes of a broadcast's segment at most: larger broadcasts go in "
	    "segments, each in place in a contiguous buffer, else through a staging buffer of "
	    "this size (one per communicator that broadcasts a derived datatype through triad)",
	    MCA_BASE_VAR_TYPE_UNSIGNED_LONG, &c->stage_size);
	var("reg_cache", "Bytes of user buffers kept registered between broadcasts (triad's "
	    "TRIAD_REG_CACHE, unless the environment sets it); 0: registered per segment",
	    MCA_BASE_VAR_TYPE_UNSIGNED_LONG, &c->reg_cache);
	var("algorithm", "triad's broadcast algorithm: 0 auto, 1 greedy, 2 binomial, 3 pipelined",
	    MCA_BASE_VAR_TYPE_INT, &c->algo);
	var("timeout_ms", "A segment of a broadcast that waits longer for a rank fails the "
	    "broadcast (MPI_ERR_OTHER)", MCA_BASE_VAR_TYPE_INT, &c->timeout_ms);
	counter("bcast_served", "Broadcasts (MPI_Bcast and MPI_Ibcast) coll/triad moved with "
		"triad", &c->served);
	counter("bcast_handed_back", "Broadcasts (MPI_Bcast and MPI_Ibcast) on coll/triad's "
		"communicators handed back to the component selected before it",
		&c->handed_back);
	counter("bcast_bytes", "Bytes coll/triad's broadcasts moved with triad", &c->bytes);
	counter("bcast_staged_bytes", "Bytes of those packed into or unpacked from a staging "
		"buffer (derived datatypes); contiguous ones go in place", &c->staged);
	return OMPI_SUCCESS;
}

static int triad_coll_open(void)
{
	struct triad_coll_component *c = &mca_coll_triad_component;

	c->output = opal_output_open(NULL);
	opal_output_set_verbosity(c->output, c->verbose);
	c->state = TRIAD_COLL_UNTRIED;
	return OMPI_SUCCESS;
}

static int triad_coll_close(void)
{
	struct triad_coll_component *c = &mca_coll_triad_component;

	triad_coll_stop();
	if (c->output >= 0)
		opal_output_close(c->output);
	c->output = -1;
	return OMPI_SUCCESS;
}

/* One staging buffer per process: its window is what triad_bcast moves. */
static int triad_coll_init_query(bool enable_progress_threads, bool enable_mpi_threads)
{
	(void)enable_progress_threads;
	/* A communicator's broadcasts are queued and advanced by whichever
	 * thread calls in, without locks. */
	if (enable_mpi_threads) {
		opal_output_verbose(1, mca_coll_triad_component.output,
				    "coll/triad: off under MPI_THREAD_MULTIPLE");
		return OMPI_ERR_NOT_SUPPORTED;
	}
	return OMPI_SUCCESS;
}

int triad_coll_start(void)
{
	struct triad_coll_component *c = &mca_coll_triad_component;
	int ret;

	c->state = TRIAD_COLL_FAILED;
	if (!c->stage_size || c->algo < TRIAD_BCAST_AUTO || c->algo > TRIAD_BCAST_PIPELINED) {
		opal_output(0, "coll/triad: coll_triad_stage_size must be > 0 and "
			    "coll_triad_algorithm 0..3: not used");
		return OMPI_ERR_BAD_PARAM;
	}
	/* User buffers stay registered between broadcasts only when Open MPI
	 * tells which memory goes back to the system (its patcher): a kept
	 * registration of freed memory would take the data to the old pages. */
	c->hooks = (opal_mem_hooks_support_level() &
		    (OPAL_MEMORY_FREE_SUPPORT | OPAL_MEMORY_MUNMAP_SUPPORT)) ==
			   (OPAL_MEMORY_FREE_SUPPORT | OPAL_MEMORY_MUNMAP_SUPPORT) &&
		   opal_mem_hooks_register_release(triad_coll_mem_released, NULL) == OPAL_SUCCESS;
	if (c->hooks && c->reg_cache) {
		char v[32];

		snprintf(v, sizeof(v), "%lu", c->reg_cache);
		setenv("TRIAD_REG_CACHE", v, 0);
	}
	ret = triad_init(NULL, &c->ctx);
	if (ret) {
		opal_output(0, "coll/triad: triad_init: %s: MPI_Bcast stays with Open MPI",
			    strerror(-ret));
		c->ctx = NULL;
		return OMPI_ERROR;
	}
	ret = triad_am_register(c->ctx, TRIAD_COLL_AM_ID, triad_coll_am, NULL);
	if (ret) {
		opal_output(0, "coll/triad: triad_am_register(%u): %s", TRIAD_COLL_AM_ID,
			    strerror(-ret));
		triad_coll_stop();
		return OMPI_ERROR;
	}
	ret = opal_progress_register(triad_coll_progress);
	if (ret != OPAL_SUCCESS) {
		opal_output(0, "coll/triad: opal_progress_register: %d", ret);
		triad_coll_stop();
		return OMPI_ERROR;
	}
	c->progress = 1;
	c->state = TRIAD_COLL_STARTED;
	opal_output_verbose(1, c->output, "coll/triad: rank %d of %d: triad up, %d plane(s), "
			    "segments of %lu bytes, user buffers %s", triad_rank(c->ctx),
			    triad_size(c->ctx), triad_nplanes(c->ctx), c->stage_size,
			    c->hooks ? "kept registered (TRIAD_REG_CACHE)"
				     : "registered per segment (no memory hooks)");
	return OMPI_SUCCESS;
}

void triad_coll_stop(void)
{
	struct triad_coll_component *c = &mca_coll_triad_component;

	if (c->ctx)
		opal_output_verbose(1, c->output,
				    "coll/triad: rank %d: %lu broadcasts served (%lu bytes), %lu "
				    "handed back", triad_rank(c->ctx), c->served, c->bytes,
				    c->handed_back);
	if (c->state != TRIAD_COLL_UNTRIED)
		c->state = TRIAD_COLL_FAILED;
	if (c->progress)
		opal_progress_unregister(triad_coll_progress);
	c->progress = 0;
	if (c->hooks)
		opal_mem_hooks_unregister_release(triad_coll_mem_released);
	c->hooks = 0;
	/* The windows go with the context, then their memory (no handler
	 * runs any more). */
	if (c->ctx)
		triad_fini(c->ctx);
	c->ctx = NULL;
	triad_coll_slots_free();
}
