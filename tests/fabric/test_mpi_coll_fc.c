/* test_mpi_coll_f's C helper: how many broadcasts coll/triad served
 * between its two calls (its MPI_T counter; Open MPI's handle of a counter
 * reads what it counted since the handle was allocated).  The first call
 * returns 0; so does every call when the component is not loaded. */
#include <mpi.h>

long test_mpi_coll_served(void);
void test_mpi_coll_done(void);

static int tried, mpit, open;
static MPI_T_pvar_session s;
static MPI_T_pvar_handle h;

long test_mpi_coll_served(void)
{
	unsigned long v = 0;
	int idx, n, provided;

	if (!tried) {
		tried = 1;
		mpit = MPI_T_init_thread(MPI_THREAD_SINGLE, &provided) == MPI_SUCCESS;
		if (mpit &&
		    MPI_T_pvar_get_index("coll_triad_bcast_served", MPI_T_PVAR_CLASS_COUNTER,
					 &idx) == MPI_SUCCESS &&
		    MPI_T_pvar_session_create(&s) == MPI_SUCCESS &&
		    MPI_T_pvar_handle_alloc(s, idx, NULL, &h, &n) == MPI_SUCCESS)
			open = 1;
		return 0;
	}
	if (open)
		MPI_T_pvar_read(s, h, &v);
	return (long)v;
}

/* Before MPI_FINALIZE: MPI_T's handles and MPI_T itself. */
void test_mpi_coll_done(void)
{
	if (open) {
		MPI_T_pvar_handle_free(s, &h);
		MPI_T_pvar_session_free(&s);
	}
	if (mpit)
		MPI_T_finalize();
	open = mpit = 0;
}
