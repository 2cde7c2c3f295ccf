/* coll/triad's module: which communicators it serves, their triad groups,
 * and the functions it saves from the module selected before it. */
#include "coll_triad.h"

#include <stdlib.h>
#include <string.h>

#include "ompi/communicator/communicator.h"
#include "ompi/group/group.h"
#include "opal/util/output.h"

static void module_construct(triad_coll_module_t *m)
{
	m->world_rank = NULL;
	m->group = NULL;
	m->comm = NULL;
	m->agree = 0;
	m->seq = 0;
	m->took = 0;
	m->head = m->tail = NULL;
	m->next_busy = NULL;
	m->prev_bcast = NULL;
	m->prev_bcast_module = NULL;
	m->prev_ibcast = NULL;
	m->prev_ibcast_module = NULL;
}

/* triad stops with the last module, not when the component closes: a
 * program that keeps MPI_T open past MPI_Finalize keeps the component
 * open, and triad's threads must not outlive MPI. */
static void module_destruct(triad_coll_module_t *m)
{
	if (m->prev_bcast_module)
		OBJ_RELEASE(m->prev_bcast_module);
	if (m->prev_ibcast_module)
		OBJ_RELEASE(m->prev_ibcast_module);
	/* triad_fini freed it if triad stopped first (the component closed). */
	if (m->group && mca_coll_triad_component.ctx)
		triad_group_destroy(m->group);
	free(m->world_rank);
	if (--mca_coll_triad_component.modules == 0)
		triad_coll_stop();
}

OBJ_CLASS_INSTANCE(triad_coll_module_t, mca_coll_base_module_t, module_construct,
		   module_destruct);

/* The first communicator that spans the world (MPI_COMM_WORLD, in MPI_Init)
 * started triad on every rank; every rank now learns whether it started
 * everywhere, with the allreduce selected before this module.  From then
 * on every rank makes the same choice for every broadcast. */
static void agree(struct ompi_communicator_t *comm)
{
	struct triad_coll_component *c = &mca_coll_triad_component;
	int ok = c->state == TRIAD_COLL_STARTED &&
		 triad_rank(c->ctx) == ompi_comm_rank(&ompi_mpi_comm_world.comm) &&
		 triad_size(c->ctx) == ompi_comm_size(&ompi_mpi_comm_world.comm);
	int all = 0, ret = OMPI_ERROR;

	if (comm->c_coll->coll_allreduce)
		ret = comm->c_coll->coll_allreduce(&ok, &all, 1, MPI_INT, MPI_MIN, comm,
						   comm->c_coll->coll_allreduce_module);
	if (ret == OMPI_SUCCESS && all) {
		c->state = TRIAD_COLL_UP;
		return;
	}
	if (ok)
		opal_output(0, "coll/triad: triad did not start on every rank: MPI_Bcast stays "
			    "with Open MPI");
	c->state = TRIAD_COLL_FAILED;
	triad_coll_stop();
}

/* The triad group of comm, whose world ranks are wr (comm rank i is group
 * rank i), named by comm's context id, which every member shares; NULL
 * (said why) when it cannot be made: comm's broadcasts then stay with
 * Open MPI.  Every communicator has one, those that span the world too:
 * triad matches broadcasts per group, and two communicators' broadcasts
 * may be started in different orders on different ranks. */
static triad_group_t *comm_group(struct ompi_communicator_t *comm, const int *wr)
{
	struct triad_coll_component *c = &mca_coll_triad_component;
	uint32_t id = TRIAD_COLL_ID(ompi_comm_get_cid(comm));
	triad_group_t *g = NULL;
	int ret;

	if (c->state != TRIAD_COLL_UP)
		return NULL;
	ret = triad_group_create(c->ctx, id, wr, ompi_comm_size(comm), &g);
	if (ret) {
		opal_output(0, "coll/triad: triad_group_create of %s (%d ranks, id %#x): %s: its "
			    "broadcasts stay with Open MPI", comm->c_name, ompi_comm_size(comm), id,
			    strerror(-ret));
		return NULL;
	}
	return g;
}

/* Saves the functions of the modules selected before this one (enable
 * runs in increasing priority, before this module's functions are copied
 * in); a function with none before it is not taken. */
static int module_enable(mca_coll_base_module_t *module, struct ompi_communicator_t *comm)
{
	triad_coll_module_t *m = (triad_coll_module_t *)module;

	if (m->agree) {
		agree(comm);
		/* Not up everywhere: no module here either (docs/mpi.md). */
		if (mca_coll_triad_component.state != TRIAD_COLL_UP)
			return OMPI_ERROR;
	}
	if (!comm->c_coll->coll_bcast || !comm->c_coll->coll_bcast_module) {
		opal_output_verbose(1, mca_coll_triad_component.output,
				    "coll/triad: no MPI_Bcast selected below coll/triad on %s: not "
				    "used there", comm->c_name);
		return OMPI_ERROR;
	}
	m->prev_bcast = comm->c_coll->coll_bcast;
	m->prev_bcast_module = comm->c_coll->coll_bcast_module;
	OBJ_RETAIN(m->prev_bcast_module);
	if (comm->c_coll->coll_ibcast && comm->c_coll->coll_ibcast_module) {
		m->prev_ibcast = comm->c_coll->coll_ibcast;
		m->prev_ibcast_module = comm->c_coll->coll_ibcast_module;
		OBJ_RETAIN(m->prev_ibcast_module);
	} else {
		m->super.coll_ibcast = NULL;
	}
	/* The first world communicator's: now that triad is up everywhere. */
	if (m->agree && !m->group)
		m->group = comm_group(comm, m->world_rank);
	return OMPI_SUCCESS;
}

/* The world rank of every rank of comm; NULL when one is not in the
 * world (processes of another job). */
static int *world_ranks(struct ompi_communicator_t *comm)
{
	int n = ompi_comm_size(comm);
	int *in = malloc(sizeof(int) * (size_t)n), *out = malloc(sizeof(int) * (size_t)n);

	if (!in || !out || n < 1)
		goto no;
	for (int i = 0; i < n; i++)
		in[i] = i;
	if (ompi_group_translate_ranks(comm->c_local_group, n, in,
				       ompi_mpi_comm_world.comm.c_local_group, out) != OMPI_SUCCESS)
		goto no;
	for (int i = 0; i < n; i++)
		if (out[i] == MPI_UNDEFINED)
			goto no;
	free(in);
	return out;
no:
	free(in);
	free(out);
	return NULL;
}

mca_coll_base_module_t *triad_coll_comm_query(struct ompi_communicator_t *comm, int *priority)
{
	struct triad_coll_component *c = &mca_coll_triad_component;
	int world_size = ompi_comm_size(&ompi_mpi_comm_world.comm);
	int n = ompi_comm_size(comm);
	triad_group_t *g = NULL;
	triad_coll_module_t *m;
	int *wr;

	if (c->priority <= 0 || OMPI_COMM_IS_INTER(comm) || c->state == TRIAD_COLL_FAILED)
		return NULL;
	if (n < world_size && n < 2) {
		opal_output_verbose(2, c->output, "coll/triad: %s has one rank: not served",
				    comm->c_name);
		return NULL;
	}
	wr = world_ranks(comm);
	if (!wr || n > world_size) {
		opal_output_verbose(2, c->output, "coll/triad: %s holds ranks of another job: not "
				    "served", comm->c_name);
		free(wr);
		return NULL;
	}
	/* triad not started yet: the group comes at enable (below). */
	if (c->state != TRIAD_COLL_UNTRIED && !(g = comm_group(comm, wr))) {
		free(wr);
		return NULL;
	}
	m = OBJ_NEW(triad_coll_module_t);
	if (!m) {
		if (g)
			triad_group_destroy(g);
		free(wr);
		return NULL;
	}
	m->world_rank = wr;
	m->group = g;
	m->comm = comm;
	m->size = n;
	m->rank = ompi_comm_rank(comm);
	m->cid = ompi_comm_get_cid(comm);
	c->modules++;
	if (c->state == TRIAD_COLL_UNTRIED) {
		/* Every rank is here, at the same communicator: start triad, and
		 * agree at enable whatever the outcome. */
		(void)triad_coll_start();
		m->agree = 1;
	}
	m->super.coll_module_enable = module_enable;
	m->super.coll_bcast = triad_coll_bcast;
	m->super.coll_ibcast = triad_coll_ibcast;
	*priority = c->priority;
	return &m->super;
}
