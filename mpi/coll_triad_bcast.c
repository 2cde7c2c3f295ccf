/* MPI_Bcast through triad_bcast (triad_group_bcast on a proper subset of
 * the world), staged in the process's window.
 *
 * Per segment of at most coll_triad_stage_size bytes: a barrier of the
 * communicator (no copy of the previous broadcast still reads or writes a
 * staging window: a rank enters only once its previous broadcast, on any
 * communicator, completed, and the previous root's completes once every
 * rank holds the data; triad's own barrier on a world communicator, the
 * barrier Open MPI selected on a subset, whose other ranks triad's would
 * wait for), the root packs its part into its window, the broadcast, every
 * other rank unpacks it.  Every rank takes the same path for a broadcast: the size in bytes
 * is the same everywhere (matching type signatures), and so are the
 * parameters. */
#include "coll_triad.h"

#include <errno.h>
#include <string.h>

#include "ompi/communicator/communicator.h"
#include "ompi/datatype/ompi_datatype.h"
#include "opal/datatype/opal_convertor.h"
#include "opal/util/output.h"

/* The user's buffer, as bytes in order: contiguous in place, else through
 * a convertor (pack at the root, unpack elsewhere). */
struct user_data {
	char *contig; /* NULL: through conv */
	opal_convertor_t conv;
};

static void data_open(struct user_data *d, void *buf, int count, struct ompi_datatype_t *dtype,
		      int root)
{
	ptrdiff_t lb, extent;

	if (ompi_datatype_is_contiguous_memory_layout(dtype, count)) {
		ompi_datatype_get_true_extent(dtype, &lb, &extent);
		d->contig = (char *)buf + lb;
		return;
	}
	d->contig = NULL;
	OBJ_CONSTRUCT(&d->conv, opal_convertor_t);
	if (root)
		opal_convertor_copy_and_prepare_for_send(ompi_mpi_local_convertor, &dtype->super,
							 count, buf, 0, &d->conv);
	else
		opal_convertor_copy_and_prepare_for_recv(ompi_mpi_local_convertor, &dtype->super,
							 count, buf, 0, &d->conv);
}

static void data_close(struct user_data *d)
{
	if (!d->contig)
		OBJ_DESTRUCT(&d->conv);
}

/* Bytes [off, off + len) of the message into the window (root) or out of it. */
static void data_move(struct user_data *d, int root, char *win, size_t off, size_t len)
{
	struct iovec iov = { .iov_base = win, .iov_len = len };
	uint32_t n = 1;
	size_t moved = len;

	if (d->contig) {
		if (root)
			memcpy(win, d->contig + off, len);
		else
			memcpy(d->contig + off, win, len);
		return;
	}
	/* The convertor keeps its position: segments come in order. */
	if (root)
		opal_convertor_pack(&d->conv, &iov, &n, &moved);
	else
		opal_convertor_unpack(&d->conv, &iov, &n, &moved);
}

/* One segment from comm rank root (world ranks in the log). */
static int segment(struct triad_coll_component *c, triad_coll_module_t *m, int root, size_t len)
{
	triad_req_t *req = NULL;
	enum triad_status st;
	int wroot = m->world_rank[root];
	int ret = m->group ? triad_group_bcast(m->group, root, TRIAD_COLL_WIN_ID, 0, len,
					       (enum triad_bcast_algo)c->algo, &req)
			   : triad_bcast(c->ctx, wroot, TRIAD_COLL_WIN_ID, 0, len,
					 (enum triad_bcast_algo)c->algo, &req);

	if (ret) {
		opal_output(0, "coll/triad: triad_bcast of %zu bytes from rank %d: %s", len, wroot,
			    strerror(-ret));
		return OMPI_ERROR;
	}
	ret = triad_wait(req, c->timeout_ms);
	if (ret) {
		/* Still pending: the request stays with triad until triad_fini. */
		opal_output(0, "coll/triad: a broadcast of %zu bytes from rank %d took over %d ms",
			    len, wroot, c->timeout_ms);
		return OMPI_ERROR;
	}
	st = triad_req_status(req);
	if (st != TRIAD_S_OK) {
		/* A group's broadcast names a group rank: the communicator's. */
		int failed = triad_req_failed_rank(req);

		if (m->group && failed >= 0)
			failed = m->world_rank[failed];
		opal_output(0, "coll/triad: a broadcast of %zu bytes from rank %d: %s (rank %d)", len,
			    wroot, triad_status_str(st), failed);
	}
	triad_req_free(req);
	return st == TRIAD_S_OK ? OMPI_SUCCESS : OMPI_ERROR;
}

int triad_coll_bcast(void *buf, int count, struct ompi_datatype_t *dtype, int root,
		     struct ompi_communicator_t *comm, mca_coll_base_module_t *module)
{
	struct triad_coll_component *c = &mca_coll_triad_component;
	triad_coll_module_t *m = (triad_coll_module_t *)module;
	int is_root = ompi_comm_rank(comm) == root;
	size_t size, total, off;
	struct user_data d;
	int ret = OMPI_SUCCESS;

	ompi_datatype_type_size(dtype, &size);
	total = size * (size_t)(count > 0 ? count : 0);
	if (c->state != TRIAD_COLL_UP || total == 0 || total < c->min_size) {
		c->handed_back++;
		return m->prev_bcast(buf, count, dtype, root, comm, m->prev_bcast_module);
	}
	opal_output_verbose(2, c->output, "coll/triad: %zu bytes from %d (world %d) on %s", total,
			    root, m->world_rank[root], comm->c_name);
	data_open(&d, buf, count, dtype, is_root);
	for (off = 0; off < total && ret == OMPI_SUCCESS; off += c->stage_size) {
		size_t len = total - off < c->stage_size ? total - off : c->stage_size;

		if (m->group) {
			ret = comm->c_coll->coll_barrier(comm, comm->c_coll->coll_barrier_module);
			if (ret != OMPI_SUCCESS) {
				opal_output(0, "coll/triad: the barrier of %s: %d", comm->c_name, ret);
				break;
			}
		} else if ((ret = triad_barrier(c->ctx, c->timeout_ms))) {
			opal_output(0, "coll/triad: triad_barrier: %s", strerror(-ret));
			ret = OMPI_ERROR;
			break;
		}
		if (is_root)
			data_move(&d, 1, c->stage, off, len);
		ret = segment(c, m, root, len);
		if (ret == OMPI_SUCCESS && !is_root)
			data_move(&d, 0, c->stage, off, len);
	}
	data_close(&d);
	if (ret == OMPI_SUCCESS) {
		c->served++;
		c->bytes += total;
	}
	return ret;
}
