/* coll/triad under an unmodified MPI program: MPI_Bcast over communicators
 * that span the world (MPI_COMM_WORLD, a dup, a split that reorders every
 * rank) and over proper subsets of it (splits: the two halves; odd and
 * even ranks, each in reverse order; the last rank alone and the others
 * together), roots first, middle and last of each, 0 B .. 64 MiB, MPI_BYTE
 * and a vector type (gaps must keep their bytes).  Every rank checks every
 * byte of its buffer, and the failures are summed.
 *
 *     mpirun --mca mca_component_path OMPI_PKGLIBDIR:BUILD/mpi \
 *            --mca coll_triad_priority 90 -np N test_mpi_coll --expect triad
 *
 * The program proves who served the broadcasts with coll/triad's MPI_T
 * counters (coll_triad_bcast_served, coll_triad_bcast_handed_back): with
 * --expect triad every broadcast over a communicator of two ranks or more
 * (a world one, or a subset through a triad group) of at least --min-size
 * bytes (coll_triad_min_size, default 262144) must have been served by
 * triad and every smaller one handed back, and a communicator of one rank
 * gets no module (nothing counted); with --expect none
 * (the component absent, or its priority 0) none served.  The bytes are
 * checked the same way in both runs, so their results are identical.
 * --max-size B leaves out the cases of more than B bytes (Open MPI's own
 * broadcast of 16 MiB over UCX on rxe takes minutes).
 *
 * --fault NODE:PLANE runs instead a loop of FAULT_LOOPS broadcasts of
 * FAULT_BYTES over MPI_COMM_WORLD, the root going round the ranks, during
 * which the link of NODE's PLANE goes down (fabric-ctl, in the background
 * as broadcast FAULT_DOWN starts) and up again (as FAULT_UP starts): every
 * broadcast must complete with every byte right on every rank, and triad
 * must have served every one (no hand-back halfway).  Open MPI's own
 * traffic must then keep off PLANE (examples/triad-vmrank's
 * TRIAD_VM_UCX_PLANES), since UCX does not fail over. */
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int rank, failures;

#define CHECK(cond, ...)                                                   \
	do {                                                               \
		if (!(cond)) {                                             \
			failures++;                                        \
			fprintf(stderr, "rank %d: FAIL %s:%d: ", rank, __FILE__, \
				__LINE__);                                 \
			fprintf(stderr, __VA_ARGS__);                      \
			fputc('\n', stderr);                               \
		}                                                          \
	} while (0)

/* A byte that depends on the seed and the position (and the rank for
 * bytes that must keep this rank's value). */
static uint8_t pattern(uint32_t seed, uint64_t i)
{
	uint64_t x = (i + 1) * 0x9e3779b97f4a7c15ull ^ ((uint64_t)seed << 32 | seed);

	x ^= x >> 29;
	return (uint8_t)(x ^ (x >> 17) ^ (i >> 8));
}

/* The vector type: blocks of 3 ints every 5. */
#define VEC_BLOCK 3
#define VEC_STRIDE 5

/* Byte i of the buffer carries data (else it is a gap of the vector type). */
static int is_data(int vector, uint64_t i)
{
	return !vector || (i / sizeof(int)) % VEC_STRIDE < VEC_BLOCK;
}

/* A handle on one of coll/triad's MPI_T counters: Open MPI's handle of a
 * counter reads what it counted since the handle was allocated. */
struct counter {
	MPI_T_pvar_session s;
	MPI_T_pvar_handle h;
	int ok; /* 0: the component is not loaded (it counts nothing) */
};

static void counter_open(struct counter *c, const char *name)
{
	int idx, n;

	c->ok = MPI_T_pvar_get_index(name, MPI_T_PVAR_CLASS_COUNTER, &idx) == MPI_SUCCESS &&
		MPI_T_pvar_session_create(&c->s) == MPI_SUCCESS;
	if (c->ok && MPI_T_pvar_handle_alloc(c->s, idx, NULL, &c->h, &n) != MPI_SUCCESS) {
		MPI_T_pvar_session_free(&c->s);
		c->ok = 0;
	}
}

/* What it counted since counter_open; closes it. */
static unsigned long counter_close(struct counter *c)
{
	unsigned long v = 0;

	if (!c->ok)
		return 0;
	MPI_T_pvar_read(c->s, c->h, &v);
	MPI_T_pvar_handle_free(c->s, &c->h);
	MPI_T_pvar_session_free(&c->s);
	return v;
}

#define FAULT_LOOPS 24
#define FAULT_DOWN 4
#define FAULT_UP 16
#define FAULT_BYTES ((size_t)(4 << 20) + 3)

/* The --fault loop (above); returns the broadcasts it made. */
static unsigned long fault_loop(int size, int node, int plane)
{
	uint8_t *buf = malloc(FAULT_BYTES);
	char cmd[256];

	if (!buf)
		MPI_Abort(MPI_COMM_WORLD, 1);
	for (int i = 0; i < FAULT_LOOPS; i++) {
		int root = i % size;
		int64_t bad = -1;

		if (rank == 0 && (i == FAULT_DOWN || i == FAULT_UP)) {
			snprintf(cmd, sizeof(cmd), "\"${TRIAD_FABRIC_CTL:-fabric-ctl}\" %s %d %d &",
				 i == FAULT_DOWN ? "down" : "up", node, plane);
			CHECK(system(cmd) == 0, "%s", cmd);
			printf("test_mpi_coll: broadcast %d: node %d's plane %d goes %s\n", i, node,
			       plane, i == FAULT_DOWN ? "down" : "up");
			fflush(stdout);
		}
		for (size_t k = 0; k < FAULT_BYTES; k++)
			buf[k] = rank == root ? pattern((uint32_t)i, k)
					      : pattern((uint32_t)(i + 1000 * (rank + 1)), k);
		MPI_Bcast(buf, (int)FAULT_BYTES, MPI_BYTE, root, MPI_COMM_WORLD);
		for (size_t k = 0; k < FAULT_BYTES && bad < 0; k++)
			if (buf[k] != pattern((uint32_t)i, k))
				bad = (int64_t)k;
		CHECK(bad < 0, "broadcast %d of %zu B from %d: byte %lld wrong", i, FAULT_BYTES,
		      root, (long long)bad);
	}
	free(buf);
	if (rank == 0) {
		/* The link is up for whatever runs next, whenever the
		 * background "up" ran. */
		snprintf(cmd, sizeof(cmd), "\"${TRIAD_FABRIC_CTL:-fabric-ctl}\" up %d %d", node,
			 plane);
		CHECK(system(cmd) == 0, "%s", cmd);
	}
	return FAULT_LOOPS;
}

struct comm_case {
	const char *name;
	MPI_Comm comm;
	int world; /* its group is the world's */
};

#define NCOMMS 6

/* The communicators of the matrix (above); returns how many. */
static int comms_make(struct comm_case *comms, int size)
{
	int n = 0;

	comms[n++] = (struct comm_case){ "world", MPI_COMM_WORLD, 1 };
	comms[n] = (struct comm_case){ "dup", MPI_COMM_NULL, 1 };
	MPI_Comm_dup(MPI_COMM_WORLD, &comms[n++].comm);
	comms[n] = (struct comm_case){ "reversed", MPI_COMM_NULL, 1 };
	MPI_Comm_split(MPI_COMM_WORLD, 0, size - 1 - rank, &comms[n++].comm);
	if (size > 1) {
		comms[n] = (struct comm_case){ "half", MPI_COMM_NULL, 0 };
		MPI_Comm_split(MPI_COMM_WORLD, rank < size / 2, rank, &comms[n++].comm);
		comms[n] = (struct comm_case){ "odd-even-reversed", MPI_COMM_NULL, 0 };
		MPI_Comm_split(MPI_COMM_WORLD, rank % 2, size - rank, &comms[n++].comm);
		/* The last rank alone, the others together. */
		comms[n] = (struct comm_case){ "last-apart", MPI_COMM_NULL, 0 };
		MPI_Comm_split(MPI_COMM_WORLD, rank == size - 1, rank, &comms[n++].comm);
	}
	return n;
}

/* The matrix of cases (above) over the communicators of comms_make;
 * counts the broadcasts coll/triad must serve and hand back. */
static void matrix(int size, unsigned long min_size, unsigned long max_size,
		   unsigned long *want_served, unsigned long *want_back)
{
	static const size_t sizes[] = { 0, 1, 4095, 65536, 262143, 262144, 1 << 20,
					(4 << 20) + 3, 16 << 20, 64 << 20 };
	static const int vec_blocks[] = { 1, 4096, 131072, 1 << 20 };
	struct comm_case comms[NCOMMS];
	int ncomms = comms_make(comms, size), seed = 1;
	size_t max = 0;
	uint8_t *buf;

	for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++)
		max = sizes[i] > max && sizes[i] <= max_size ? sizes[i] : max;
	buf = malloc(max > (size_t)(1 << 20) * VEC_STRIDE * sizeof(int)
			     ? max : (size_t)(1 << 20) * VEC_STRIDE * sizeof(int));
	if (!buf)
		MPI_Abort(MPI_COMM_WORLD, 1);

	for (int c = 0; c < ncomms; c++) {
		MPI_Comm comm = comms[c].comm;
		int crank, csize;

		MPI_Comm_rank(comm, &crank);
		MPI_Comm_size(comm, &csize);
		for (int vector = 0; vector < 2; vector++) {
			int ncase = vector ? (int)(sizeof(vec_blocks) / sizeof(vec_blocks[0]))
					   : (int)(sizeof(sizes) / sizeof(sizes[0]));

			for (int k = 0; k < ncase; k++) {
				for (int r = 0; r < 3; r++) {
					/* first, middle, last: each once */
					int root = r == 0 ? 0 : r == 1 ? csize / 2 : csize - 1, count;
					size_t bytes, span;
					MPI_Datatype type = MPI_BYTE;
					int64_t bad = -1;

					if ((r == 1 && root == 0) || (r == 2 && root <= csize / 2))
						continue;
					if (vector) {
						MPI_Type_vector(vec_blocks[k], VEC_BLOCK, VEC_STRIDE,
								MPI_INT, &type);
						MPI_Type_commit(&type);
						count = 1;
						bytes = (size_t)vec_blocks[k] * VEC_BLOCK * sizeof(int);
						span = ((size_t)(vec_blocks[k] - 1) * VEC_STRIDE +
							VEC_BLOCK) * sizeof(int);
					} else {
						count = (int)sizes[k];
						bytes = span = sizes[k];
					}
					if (bytes > max_size) {
						if (vector)
							MPI_Type_free(&type);
						continue;
					}
					seed++;
					/* The root's data everywhere on the root; every
					 * other rank starts from its own bytes. */
					for (size_t i = 0; i < span; i++)
						buf[i] = crank == root || !is_data(vector, i)
								 ? pattern((uint32_t)seed, i)
								 : pattern((uint32_t)(seed + 1000 * (rank + 1)), i);
					MPI_Bcast(buf, count, type, root, comm);
					for (size_t i = 0; i < span && bad < 0; i++)
						if (buf[i] != pattern((uint32_t)seed, i))
							bad = (int64_t)i;
					CHECK(bad < 0, "%s, %s %zu B from %d: byte %lld of %zu wrong",
					      comms[c].name, vector ? "vector" : "bytes", bytes, root,
					      (long long)bad, span);
					/* MPI_Bcast of 0 elements returns before
					 * any component sees it; a communicator of
					 * one rank has no coll/triad module. */
					if ((comms[c].world || csize > 1) && bytes && bytes >= min_size)
						(*want_served)++;
					else if ((comms[c].world || csize > 1) && bytes)
						(*want_back)++;
					if (vector)
						MPI_Type_free(&type);
				}
			}
		}
	}
	for (int c = 1; c < ncomms; c++)
		MPI_Comm_free(&comms[c].comm);
	free(buf);
}

int main(int argc, char **argv)
{
	unsigned long min_size = 262144, max_size = ~0ul, want_served = 0, want_back = 0;
	unsigned long got[2], lo[2], hi[2];
	struct counter served, back;
	int size, provided, expect_triad = -1, total = 0, fault_node = -1, fault_plane = -1;

	for (int a = 1; a < argc; a++) {
		if (!strcmp(argv[a], "--expect") && a + 1 < argc) {
			a++;
			expect_triad = !strcmp(argv[a], "triad") ? 1 : !strcmp(argv[a], "none") ? 0 : -1;
		} else if (!strcmp(argv[a], "--min-size") && a + 1 < argc) {
			min_size = strtoul(argv[++a], NULL, 0);
		} else if (!strcmp(argv[a], "--max-size") && a + 1 < argc) {
			max_size = strtoul(argv[++a], NULL, 0);
		} else if (!strcmp(argv[a], "--fault") && a + 1 < argc &&
			   sscanf(argv[a + 1], "%d:%d", &fault_node, &fault_plane) == 2 &&
			   fault_node >= 0 && fault_plane >= 0) {
			a++;
		} else {
			expect_triad = -1;
			break;
		}
	}
	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &size);
	if (expect_triad < 0) {
		if (!rank)
			fprintf(stderr, "usage: test_mpi_coll --expect triad|none [--min-size B] "
					"[--max-size B] [--fault NODE:PLANE]\n");
		MPI_Abort(MPI_COMM_WORLD, 2);
	}
	MPI_T_init_thread(MPI_THREAD_SINGLE, &provided);
	counter_open(&served, "coll_triad_bcast_served");
	counter_open(&back, "coll_triad_bcast_handed_back");

	if (fault_node >= 0)
		want_served = fault_loop(size, fault_node, fault_plane);
	else
		matrix(size, min_size, max_size, &want_served, &want_back);
	got[0] = counter_close(&served);
	got[1] = counter_close(&back);
	if (!expect_triad)
		want_served = want_back = 0;
	CHECK(got[0] == want_served && got[1] == want_back,
	      "coll/triad served %lu broadcasts and handed back %lu, expected %lu and %lu", got[0],
	      got[1], want_served, want_back);
	MPI_Allreduce(got, lo, 2, MPI_UNSIGNED_LONG, MPI_MIN, MPI_COMM_WORLD);
	MPI_Allreduce(got, hi, 2, MPI_UNSIGNED_LONG, MPI_MAX, MPI_COMM_WORLD);
	MPI_Allreduce(&failures, &total, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
	if (!rank)
		printf("test_mpi_coll: %d ranks, %s: coll/triad served %lu..%lu broadcasts, "
		       "handed back %lu..%lu (expected %lu, %lu): %d failure(s)\n", size,
		       fault_node >= 0 ? "a plane down and up" : "every case", lo[0], hi[0], lo[1],
		       hi[1], want_served, want_back, total);
	MPI_T_finalize();
	MPI_Finalize();
	return total ? 1 : 0;
}
