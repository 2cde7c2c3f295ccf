/* coll/triad under an unmodified MPI program: MPI_Bcast over communicators
 * that span the world (MPI_COMM_WORLD, a dup, a split that reorders every
 * rank) and over proper subsets of it (splits: the two halves; odd and
 * even ranks, each in reverse order; the last rank alone and the others
 * together), roots first, middle and last of each, 0 B .. 64 MiB, MPI_BYTE
 * and a vector type (gaps must keep their bytes).  Every rank checks every
 * byte of its buffer, and the failures are summed.  Every case is named on
 * stderr as it starts, with the seconds since MPI_Init, by the rank 0 of
 * its communicator: a run that times out shows where it stopped.
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
 * Then MPI_Ibcast (ibcast_cases): on MPI_COMM_WORLD with compute between
 * the start and MPI_Wait (or an MPI_Test loop), roots first and last, a
 * derived type freed while its broadcast is under way; several at once
 * on every communicator of the matrix, each rank starting the
 * communicators' broadcasts in an order of its own (the communicators in
 * turn from its rank on, every other rank backwards), waited for all at
 * once after a blocking MPI_Bcast on MPI_COMM_WORLD that must follow the
 * world's; and MPI_Cancel (refused, as Open MPI refuses it for every
 * non-blocking collective) and MPI_Request_free (refused while active)
 * on one under way.  Sizes 0 B .. 4 MiB + 3 and the counting above.
 * Then buffers in place (fresh_buffers): broadcasts over MPI_COMM_WORLD,
 * each from a buffer of its own, mapped and unmapped around the call (the
 * next one gets the same addresses and new pages: a registration kept of
 * the old pages would take the data there), and one whose root sends a
 * vector type that the others receive as ints; with --expect triad the
 * bytes staged (coll_triad_bcast_staged_bytes) must be the vector's at
 * its root only: contiguous buffers go in place.
 * Last, an MPI_Ibcast of 1 MiB (one segment) from rank 0, which then
 * computes BG_ROOT_S seconds without a call to MPI while the others wait
 * for it: with --expect triad, where triad serves it, every other rank
 * must hold the data in under half that time (the last READY starts the
 * root's broadcast in triad's thread; it is not held for the root's next
 * MPI call).
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
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

static int rank, failures;
static double t0; /* MPI_Wtime at the start */

/* A case about to start, on stderr with the seconds since the start: a
 * run that times out shows where it stopped, and the times what each
 * case took.  Called by one rank of the case (the communicator's 0). */
static void note(const char *fmt, ...)
{
	char line[200];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	fprintf(stderr, "test_mpi_coll: %7.1f s rank %d: %s\n", MPI_Wtime() - t0, rank, line);
}

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

/* The root's bytes (seed) in the first span bytes of buf on the root and
 * in the gaps of the vector type everywhere; every other rank starts from
 * bytes of its own. */
static void fill(uint8_t *buf, size_t span, int vector, int seed, int is_root)
{
	for (size_t i = 0; i < span; i++)
		buf[i] = is_root || !is_data(vector, i)
				 ? pattern((uint32_t)seed, i)
				 : pattern((uint32_t)(seed + 1000 * (rank + 1)), i);
}

/* The first byte of buf that is not the root's, or -1. */
static int64_t wrong(const uint8_t *buf, size_t span, int seed)
{
	for (size_t i = 0; i < span; i++)
		if (buf[i] != pattern((uint32_t)seed, i))
			return (int64_t)i;
	return -1;
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
		if (!rank)
			note("broadcast %d of %zu B from %d", i, FAULT_BYTES, root);
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

/* Counts a broadcast of bytes on comm (of csize ranks) as one coll/triad
 * must serve or hand back.  MPI_Bcast and MPI_Ibcast of 0 elements return
 * before any component sees them; a communicator of one rank has no
 * coll/triad module. */
static void count_case(const struct comm_case *comm, int csize, size_t bytes,
		       unsigned long min_size, unsigned long *want_served, unsigned long *want_back)
{
	if (!(comm->world || csize > 1) || !bytes)
		return;
	if (bytes >= min_size)
		(*want_served)++;
	else
		(*want_back)++;
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
	int ncomms = comms_make(comms, size);
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
					int root = r == 0 ? 0 : r == 1 ? csize / 2 : csize - 1, count, seed;
					size_t bytes, span;
					MPI_Datatype type = MPI_BYTE;
					int64_t bad;

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
					/* Named by the case, not counted: members of a
					 * communicator may have skipped different
					 * numbers of cases on others (an odd world's
					 * halves). */
					seed = 1 + ((c * 2 + vector) * 16 + k) * 3 + r;
					if (!crank)
						note("%s, %s %zu B from %d", comms[c].name,
						     vector ? "vector" : "bytes", bytes, root);
					fill(buf, span, vector, seed, crank == root);
					MPI_Bcast(buf, count, type, root, comm);
					bad = wrong(buf, span, seed);
					CHECK(bad < 0, "%s, %s %zu B from %d: byte %lld of %zu wrong",
					      comms[c].name, vector ? "vector" : "bytes", bytes, root,
					      (long long)bad, span);
					count_case(&comms[c], csize, bytes, min_size, want_served,
						   want_back);
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

#define FRESH_LOOPS 16
#define MIXED_BLOCKS 32768 /* the vector's: 384 KiB of data */

/* Buffers in place (above); counts the broadcasts. */
static void fresh_buffers(int size, unsigned long min_size, unsigned long max_size,
			  int expect_triad, unsigned long *want_served, unsigned long *want_back)
{
	static const size_t sizes[] = { 262144, (1 << 20) + 5, 3 << 20, 266240 };
	const struct comm_case world = { "world", MPI_COMM_WORLD, 1 };
	size_t bytes = (size_t)MIXED_BLOCKS * VEC_BLOCK * sizeof(int), span;
	unsigned long staged_want = 0, staged_got;
	struct counter staged;
	int64_t bad = -1;
	uint8_t *buf;

	counter_open(&staged, "coll_triad_bcast_staged_bytes");
	for (int i = 0; i < FRESH_LOOPS; i++) {
		size_t len = sizes[i % 4];
		int root = i % size, seed = 7000 + i;

		if (len > max_size)
			continue;
		buf = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (buf == MAP_FAILED)
			MPI_Abort(MPI_COMM_WORLD, 1);
		if (!rank)
			note("a buffer of its own at %p, %zu B from %d", (void *)buf, len, root);
		fill(buf, len, 0, seed, rank == root);
		MPI_Bcast(buf, (int)len, MPI_BYTE, root, MPI_COMM_WORLD);
		bad = wrong(buf, len, seed);
		CHECK(bad < 0, "a buffer of its own, %zu B from %d: byte %lld wrong", len, root,
		      (long long)bad);
		count_case(&world, size, len, min_size, want_served, want_back);
		munmap(buf, len);
	}

	/* The root's vector is the others' ints. */
	span = ((size_t)(MIXED_BLOCKS - 1) * VEC_STRIDE + VEC_BLOCK) * sizeof(int);
	buf = malloc(span);
	if (!buf)
		MPI_Abort(MPI_COMM_WORLD, 1);
	if (!rank)
		note("a vector of %zu B from %d, ints elsewhere", bytes, size - 1);
	if (rank == size - 1) {
		MPI_Datatype type;

		fill(buf, span, 1, 7100, 1);
		MPI_Type_vector(MIXED_BLOCKS, VEC_BLOCK, VEC_STRIDE, MPI_INT, &type);
		MPI_Type_commit(&type);
		MPI_Bcast(buf, 1, type, size - 1, MPI_COMM_WORLD);
		MPI_Type_free(&type);
		bad = wrong(buf, span, 7100);
		staged_want = bytes >= min_size && size > 1 ? bytes : 0;
	} else {
		memset(buf, 0, bytes);
		MPI_Bcast(buf, (int)(bytes / sizeof(int)), MPI_INT, size - 1, MPI_COMM_WORLD);
		for (size_t j = 0; j < bytes && bad < 0; j++) {
			size_t q = j / sizeof(int);
			size_t at = (q / VEC_BLOCK * VEC_STRIDE + q % VEC_BLOCK) * sizeof(int) +
				    j % sizeof(int);

			if (buf[j] != pattern(7100, at))
				bad = (int64_t)j;
		}
	}
	CHECK(bad < 0, "a vector from %d, ints elsewhere: byte %lld wrong", size - 1,
	      (long long)bad);
	count_case(&world, size, bytes, min_size, want_served, want_back);
	free(buf);
	staged_got = counter_close(&staged);
	CHECK(expect_triad != 1 || staged_got == staged_want,
	      "coll/triad staged %lu bytes, expected %lu (contiguous buffers go in place)",
	      staged_got, staged_want);
}

/* Work that makes no MPI call (about a millisecond a round): what an
 * application does while its broadcast is under way. */
static volatile double sink;

static void compute(int rounds)
{
	static double v[1 << 16];
	double sum = 0;

	for (int r = 0; r < rounds; r++)
		for (size_t i = 0; i < sizeof(v) / sizeof(v[0]); i++)
			sum += v[i] = v[i] * 0.5 + (double)(i ^ (size_t)r);
	sink += sum;
}

/* One MPI_Ibcast of the ibcast cases and what it must deliver. */
struct ib {
	uint8_t *buf;
	MPI_Request req;
	int root, seed, vector;
	size_t bytes, span;
};

/* Starts a broadcast of bytes (as MPI_BYTE, or as that many bytes of the
 * vector type, freed at once: MPI keeps it while the broadcast needs it)
 * from comm rank root. */
static void ib_start(struct ib *b, MPI_Comm comm, size_t bytes, int vector, int root, int seed)
{
	MPI_Datatype type = MPI_BYTE;
	int crank, count = (int)bytes;

	MPI_Comm_rank(comm, &crank);
	vector = vector && bytes >= VEC_BLOCK * sizeof(int); /* a block at least */
	b->root = root;
	b->seed = seed;
	b->vector = vector;
	b->bytes = b->span = bytes;
	if (vector) {
		int blocks = (int)(bytes / (VEC_BLOCK * sizeof(int)));

		MPI_Type_vector(blocks, VEC_BLOCK, VEC_STRIDE, MPI_INT, &type);
		MPI_Type_commit(&type);
		count = 1;
		b->bytes = (size_t)blocks * VEC_BLOCK * sizeof(int);
		b->span = ((size_t)(blocks - 1) * VEC_STRIDE + VEC_BLOCK) * sizeof(int);
	}
	b->buf = malloc(b->span ? b->span : 1);
	if (!b->buf)
		MPI_Abort(MPI_COMM_WORLD, 1);
	fill(b->buf, b->span, vector, seed, crank == root);
	MPI_Ibcast(b->buf, count, type, root, comm, &b->req);
	if (vector)
		MPI_Type_free(&type);
}

/* Checks every byte of a completed broadcast; frees its buffer. */
static void ib_check(struct ib *b, const char *what)
{
	int64_t bad = wrong(b->buf, b->span, b->seed);

	CHECK(bad < 0, "MPI_Ibcast, %s, %s %zu B from %d: byte %lld of %zu wrong", what,
	      b->vector ? "vector" : "bytes", b->bytes, b->root, (long long)bad, b->span);
	free(b->buf);
}

#define IB_PER_COMM 3

/* The MPI_Ibcast cases (above); counts them as matrix does. */
static void ibcast_cases(int size, unsigned long min_size, unsigned long max_size,
			 unsigned long *want_served, unsigned long *want_back)
{
	static const size_t sizes[] = { 0, 1, 65536, 262144, 1 << 20, (4 << 20) + 3 };
	/* Per communicator: several at once, two of them served by triad
	 * (one in two segments under the fabric run's 4 MiB windows), one
	 * handed back between them. */
	static const size_t many[IB_PER_COMM] = { (4 << 20) + 3, 65536, 3 << 19 };
	const struct comm_case world = { "world", MPI_COMM_WORLD, 1 };
	struct ib outstanding[NCOMMS * IB_PER_COMM], blocking;
	struct comm_case comms[NCOMMS];
	int ncomms, n = 0, seed = 100000;

	/* On MPI_COMM_WORLD, one at a time, compute before the wait. */
	for (size_t k = 0; k < sizeof(sizes) / sizeof(sizes[0]); k++) {
		for (int r = 0; r < 2 && sizes[k] <= max_size; r++) {
			int root = r ? size - 1 : 0, vector = k % 2, flag = 0;
			struct ib b;

			if (r && root == 0)
				continue;
			ib_start(&b, MPI_COMM_WORLD, sizes[k], vector, root, ++seed);
			if (!rank)
				note("MPI_Ibcast, world, %s %zu B from %d, %s",
				     b.vector ? "vector" : "bytes", b.bytes, root,
				     r ? "MPI_Test loop" : "compute then MPI_Wait");
			if (r) {
				MPI_Test(&b.req, &flag, MPI_STATUS_IGNORE);
				for (; !flag; MPI_Test(&b.req, &flag, MPI_STATUS_IGNORE))
					compute(1);
			} else {
				compute(20);
				MPI_Wait(&b.req, MPI_STATUS_IGNORE);
			}
			ib_check(&b, r ? "world, MPI_Test loop" : "world, compute then MPI_Wait");
			count_case(&world, size, b.bytes, min_size, want_served, want_back);
		}
	}

	/* Several at once on every communicator, the communicators started
	 * in a different order on every rank. */
	ncomms = comms_make(comms, size);
	note("MPI_Ibcast, %d at once on %d communicators, started", ncomms * IB_PER_COMM, ncomms);
	for (int i = 0; i < ncomms; i++) {
		int c = rank % 2 ? (rank + ncomms - i) % ncomms : (rank + i) % ncomms;
		int crank, csize;

		MPI_Comm_rank(comms[c].comm, &crank);
		MPI_Comm_size(comms[c].comm, &csize);
		for (int k = 0; k < IB_PER_COMM; k++) {
			if (many[k] > max_size)
				continue;
			/* The seed names the case, the same at every rank. */
			ib_start(&outstanding[n], comms[c].comm, many[k], k == 2, (k * csize) / 3,
				 200000 + c * IB_PER_COMM + k);
			count_case(&comms[c], csize, outstanding[n].bytes, min_size, want_served,
				   want_back);
			n++;
		}
	}
	/* A blocking one behind the world's non-blocking ones. */
	if ((1u << 20) <= max_size) {
		blocking.seed = 300000;
		blocking.root = size - 1;
		blocking.vector = 0;
		blocking.bytes = blocking.span = 1 << 20;
		blocking.buf = malloc(blocking.span);
		if (!blocking.buf)
			MPI_Abort(MPI_COMM_WORLD, 1);
		fill(blocking.buf, blocking.span, 0, blocking.seed, rank == blocking.root);
		MPI_Bcast(blocking.buf, (int)blocking.bytes, MPI_BYTE, blocking.root, MPI_COMM_WORLD);
		ib_check(&blocking, "MPI_Bcast on the world with MPI_Ibcasts under way");
		count_case(&world, size, blocking.bytes, min_size, want_served, want_back);
	}
	compute(5);
	note("MPI_Ibcast, %d at once: MPI_Bcast on the world done, waiting", n);
	for (int i = 0; i < n; i++) {
		MPI_Wait(&outstanding[i].req, MPI_STATUS_IGNORE);
		ib_check(&outstanding[i], "several at once on every communicator");
	}
	for (int c = 1; c < ncomms; c++)
		MPI_Comm_free(&comms[c].comm);

	/* MPI_Cancel and MPI_Request_free on one under way, errors returned. */
	if (size > 1 && (size_t)(4 << 20) <= max_size) {
		MPI_Status st;
		struct ib b;
		int ret, cancelled = 1;

		if (!rank)
			note("MPI_Ibcast, world, bytes %d B from %d, MPI_Cancel and "
			     "MPI_Request_free", 4 << 20, size / 2);
		MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
		ib_start(&b, MPI_COMM_WORLD, 4 << 20, 0, size / 2, 400000);
		ret = MPI_Cancel(&b.req);
		CHECK(ret != MPI_SUCCESS, "MPI_Cancel of an MPI_Ibcast succeeded");
		ret = MPI_Request_free(&b.req);
		/* Refused while active; a complete one may be freed. */
		CHECK((ret == MPI_SUCCESS) == (b.req == MPI_REQUEST_NULL),
		      "MPI_Request_free of an MPI_Ibcast: %d, the request %s", ret,
		      b.req == MPI_REQUEST_NULL ? "freed" : "kept");
		if (b.req != MPI_REQUEST_NULL) {
			CHECK(MPI_Wait(&b.req, &st) == MPI_SUCCESS, "MPI_Wait after MPI_Cancel");
			MPI_Test_cancelled(&st, &cancelled);
			CHECK(!cancelled, "an MPI_Ibcast reports itself cancelled");
		}
		ib_check(&b, "world, after MPI_Cancel and MPI_Request_free");
		count_case(&world, size, b.bytes, min_size, want_served, want_back);
		MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL);
	}
}

#define BG_ROOT_S 4.0

/* The root's MPI_Ibcast moves its data while the root computes (above). */
static void ibcast_background(int size, unsigned long min_size, unsigned long max_size,
			      int expect_triad, unsigned long *want_served,
			      unsigned long *want_back)
{
	const struct comm_case world = { "world", MPI_COMM_WORLD, 1 };
	const size_t bytes = 1 << 20;
	double t, waited = 0, most = 0;
	struct ib b;

	if (size < 2 || bytes > max_size)
		return;
	/* From rank 0 just before: rank 0 owes no earlier segment's end
	 * (FIN) when it starts, so only the READYs hold its broadcast. */
	b.seed = 500000;
	b.root = 0;
	b.vector = 0;
	b.bytes = b.span = bytes;
	b.buf = malloc(bytes);
	if (!b.buf)
		MPI_Abort(MPI_COMM_WORLD, 1);
	fill(b.buf, bytes, 0, b.seed, rank == 0);
	MPI_Bcast(b.buf, (int)bytes, MPI_BYTE, 0, MPI_COMM_WORLD);
	ib_check(&b, "MPI_Bcast on the world before the root computes");
	count_case(&world, size, bytes, min_size, want_served, want_back);
	if (!rank)
		note("MPI_Ibcast, world, bytes %zu B from 0, which computes %.0f s", bytes,
		     BG_ROOT_S);
	MPI_Barrier(MPI_COMM_WORLD);
	t = MPI_Wtime();
	ib_start(&b, MPI_COMM_WORLD, bytes, 0, 0, 500001);
	if (!rank)
		while (MPI_Wtime() - t < BG_ROOT_S)
			compute(1);
	MPI_Wait(&b.req, MPI_STATUS_IGNORE);
	if (rank)
		waited = MPI_Wtime() - t;
	ib_check(&b, "world, the root computing");
	count_case(&world, size, bytes, min_size, want_served, want_back);
	MPI_Reduce(&waited, &most, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
	if (!rank && expect_triad == 1 && bytes >= min_size)
		CHECK(most < BG_ROOT_S / 2, "MPI_Ibcast from a computing root: the others "
		      "waited %.2f s of its %.0f s without MPI (started only at its MPI_Wait?)",
		      most, BG_ROOT_S);
	if (!rank)
		note("MPI_Ibcast from a computing root: the others held the data after %.3f s", most);
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
	t0 = MPI_Wtime();
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
	else {
		matrix(size, min_size, max_size, &want_served, &want_back);
		ibcast_cases(size, min_size, max_size, &want_served, &want_back);
		fresh_buffers(size, min_size, max_size, expect_triad, &want_served, &want_back);
		ibcast_background(size, min_size, max_size, expect_triad, &want_served,
				  &want_back);
	}
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
