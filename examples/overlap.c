/* overlap: how much of a broadcast hides behind the non-roots' compute,
 * with triad_bcast and with Open MPI's MPI_Ibcast, in one job.
 *
 *     mpirun -np N [triad-vmrank] triad-overlap [-s SIZE,...] [-c US,...] [-n REPS]
 *                                               [-l triad|mpi|both]
 *
 * Started by mpirun, both libraries take their world from its PMIx server.
 * For each size and compute time C, and each library, rank 0 (the root)
 * measures, as the median over REPS of the slowest rank:
 *   bcast alone  every rank starts the broadcast and waits for it;
 *   compute      every non-root computes C us (a spin on the clock) alone;
 *   total        every non-root starts the broadcast, computes C us making
 *                no library call, then waits; the root starts and waits;
 *   hidden       (bcast alone + compute - total) / min(bcast alone, compute):
 *                1 when the shorter of the two vanished behind the other,
 *                0 when they simply added up.
 * With triad the root drives the broadcast and every non-root's library
 * serves the copies from its own thread, so the compute of a non-root does
 * not hold the data back; an MPI_Ibcast moves, in most implementations,
 * only while a rank calls into MPI.  Every rep's data is checked at every
 * rank (outside the timed part).  MPI_Barrier and MPI_Reduce frame the
 * timed part for both libraries alike. */
#include <errno.h>
#include <getopt.h>
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "overlap.h"
#include "triad.h"

#define MAX_LIST 16
#define WIN_ID 1

enum lib { LIB_TRIAD, LIB_MPI };
static const char *const lib_names[] = { "triad_bcast", "MPI_Ibcast" };

struct opts {
	size_t sizes[MAX_LIST];
	int nsizes;
	long compute_us[MAX_LIST];
	int ncompute;
	int reps;
	int libs; /* bit per enum lib */
};

struct job {
	int rank, size;
	triad_ctx_t *ctx;
	unsigned char *buf; /* triad's window; MPI's buffer too */
	size_t cap;
	long bad;	    /* data checks that failed here */
};

static unsigned char byte_at(unsigned seed, size_t i)
{
	return (unsigned char)(i * 131 + (i >> 12) * 7 + seed * 29);
}

static void fill(struct job *j, size_t len, unsigned seed)
{
	for (size_t i = 0; i < len; i++)
		j->buf[i] = j->rank == 0 ? byte_at(seed, i) : 0;
}

static void check(struct job *j, size_t len, unsigned seed, enum lib lib)
{
	for (size_t i = 0; i < len; i++)
		if (j->buf[i] != byte_at(seed, i)) {
			if (!j->bad)
				fprintf(stderr, "rank %d: %s of %zu B: byte %zu is wrong\n", j->rank,
					lib_names[lib], len, i);
			j->bad++;
			return;
		}
}

/* One broadcast, started; with_compute: a non-root computes before it waits. */
static int one_bcast(struct job *j, enum lib lib, size_t len, long compute_us)
{
	int busy = compute_us > 0 && j->rank != 0;

	if (lib == LIB_TRIAD) {
		triad_req_t *req;
		int ret = triad_bcast(j->ctx, 0, WIN_ID, 0, len, TRIAD_BCAST_AUTO, &req);

		if (ret)
			return ret;
		if (busy)
			overlap_compute(compute_us);
		triad_wait(req, -1);
		ret = triad_req_status(req) == TRIAD_S_OK ? 0 : -EIO;
		triad_req_free(req);
		return ret;
	} else {
		MPI_Request req;

		MPI_Ibcast(j->buf, (int)len, MPI_BYTE, 0, MPI_COMM_WORLD, &req);
		if (busy)
			overlap_compute(compute_us);
		return MPI_Wait(&req, MPI_STATUS_IGNORE) == MPI_SUCCESS ? 0 : -EIO;
	}
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

enum phase { BCAST_ALONE, COMPUTE_ALONE, OVERLAP };

/* The median over reps of the slowest rank's time for one phase (rank 0's
 * answer; the others return 0). */
static double measure(struct job *j, const struct opts *o, enum lib lib, size_t len, long c,
		      enum phase ph)
{
	double t[256], mine, slowest;
	int reps = o->reps < 256 ? o->reps : 256;
	static unsigned seed;

	for (int r = 0; r < reps; r++) {
		int ret = 0;

		seed++;
		if (ph != COMPUTE_ALONE)
			fill(j, len, seed);
		MPI_Barrier(MPI_COMM_WORLD);
		mine = overlap_now_us();
		if (ph == COMPUTE_ALONE) {
			if (j->rank != 0)
				overlap_compute(c);
		} else {
			ret = one_bcast(j, lib, len, ph == OVERLAP ? c : 0);
		}
		mine = overlap_now_us() - mine;
		if (ret) {
			fprintf(stderr, "rank %d: %s of %zu B: %s\n", j->rank, lib_names[lib], len,
				strerror(-ret));
			j->bad++;
		} else if (ph != COMPUTE_ALONE) {
			check(j, len, seed, lib);
		}
		MPI_Reduce(&mine, &slowest, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
		t[r] = slowest;
	}
	qsort(t, (size_t)reps, sizeof(t[0]), cmp_double);
	return j->rank == 0 ? t[reps / 2] : 0;
}

static void size_str(char *out, size_t n, size_t b)
{
	if (b >= (1u << 20) && b % (1u << 20) == 0)
		snprintf(out, n, "%zu MiB", b >> 20);
	else if (b >= 1024 && b % 1024 == 0)
		snprintf(out, n, "%zu KiB", b >> 10);
	else
		snprintf(out, n, "%zu B", b);
}

static void run(struct job *j, const struct opts *o)
{
	if (j->rank == 0) {
		printf("overlap: %d ranks, root 0, median of %d reps of the slowest rank; every "
		       "non-root starts the broadcast,\n"
		       "computes C us making no library call, then waits\n\n",
		       j->size, o->reps);
		printf("%-8s %8s  %-12s %12s %10s %10s %7s\n", "size", "C (us)", "library",
		       "bcast alone", "compute", "total", "hidden");
	}
	for (int s = 0; s < o->nsizes; s++)
		for (int k = 0; k < o->ncompute; k++) {
			size_t len = o->sizes[s];
			long c = o->compute_us[k];
			double comp = measure(j, o, LIB_TRIAD, len, c, COMPUTE_ALONE);

			for (int lib = 0; lib < 2; lib++) {
				double alone, total, hidden;
				char sz[32];

				if (!(o->libs >> lib & 1))
					continue;
				alone = measure(j, o, (enum lib)lib, len, 0, BCAST_ALONE);
				total = measure(j, o, (enum lib)lib, len, c, OVERLAP);
				if (j->rank != 0)
					continue;
				hidden = overlap_hidden(alone, comp, total);
				size_str(sz, sizeof(sz), len);
				printf("%-8s %8ld  %-12s %9.0f us %7.0f us %7.0f us %6.0f%%\n", sz, c,
				       lib_names[lib], alone, comp, total, 100 * hidden);
				fflush(stdout);
			}
		}
}

/* "a,b,c" of sizes (k, M suffixes) or of integers. */
static int parse_list(const char *s, int sizes, size_t *zs, long *ls, int *n)
{
	char *end;

	for (*n = 0; *s && *n < MAX_LIST; (*n)++) {
		unsigned long long v = strtoull(s, &end, 10);

		if (end == s)
			return -1;
		if (sizes && (*end == 'k' || *end == 'K'))
			v <<= 10, end++;
		else if (sizes && (*end == 'm' || *end == 'M'))
			v <<= 20, end++;
		if (*end && *end != ',')
			return -1;
		if (sizes)
			zs[*n] = (size_t)v;
		else
			ls[*n] = (long)v;
		s = *end ? end + 1 : end;
	}
	return *s ? -1 : 0;
}

static int parse(int argc, char **argv, struct opts *o)
{
	static const struct option lopts[] = {
		{ "sizes", required_argument, NULL, 's' }, { "compute", required_argument, NULL, 'c' },
		{ "reps", required_argument, NULL, 'n' },  { "lib", required_argument, NULL, 'l' },
		{ NULL, 0, NULL, 0 },
	};
	int c;

	*o = (struct opts){ .sizes = { 64 << 10, 1 << 20, 8 << 20 }, .nsizes = 3,
			    .compute_us = { 1000, 10000 }, .ncompute = 2, .reps = 5, .libs = 3 };
	while ((c = getopt_long(argc, argv, "s:c:n:l:", lopts, NULL)) != -1) {
		switch (c) {
		case 's':
			if (parse_list(optarg, 1, o->sizes, NULL, &o->nsizes) || !o->nsizes)
				return -1;
			break;
		case 'c':
			if (parse_list(optarg, 0, NULL, o->compute_us, &o->ncompute) || !o->ncompute)
				return -1;
			break;
		case 'n':
			o->reps = atoi(optarg);
			if (o->reps < 1 || o->reps > 255)
				return -1;
			break;
		case 'l':
			o->libs = !strcmp(optarg, "triad") ? 1 : !strcmp(optarg, "mpi") ? 2 :
				  !strcmp(optarg, "both") ? 3 : 0;
			if (!o->libs)
				return -1;
			break;
		default: return -1;
		}
	}
	return optind == argc ? 0 : -1;
}

int main(int argc, char **argv)
{
	struct job j = { 0 };
	struct opts o;
	triad_win_t *win = NULL;
	long bad = 0;
	int ret;

	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &j.rank);
	MPI_Comm_size(MPI_COMM_WORLD, &j.size);
	if (parse(argc, argv, &o)) {
		if (j.rank == 0)
			fprintf(stderr, "usage: triad-overlap [-s SIZE,...] [-c US,...] [-n REPS 1..255] "
				"[-l triad|mpi|both]\n");
		MPI_Finalize();
		return 2;
	}
	for (int s = 0; s < o.nsizes; s++)
		if (o.sizes[s] > j.cap)
			j.cap = o.sizes[s];
	j.buf = malloc(j.cap ? j.cap : 1);
	ret = triad_init(NULL, &j.ctx);
	if (ret || !j.buf || (ret = triad_win_create(j.ctx, WIN_ID, j.buf, j.cap ? j.cap : 1, NULL,
						       &win))) {
		fprintf(stderr, "rank %d: triad: %s\n", j.rank, strerror(ret ? -ret : ENOMEM));
		MPI_Abort(MPI_COMM_WORLD, 1);
	}
	if (triad_rank(j.ctx) != j.rank) {
		fprintf(stderr, "rank %d: triad says rank %d\n", j.rank, triad_rank(j.ctx));
		MPI_Abort(MPI_COMM_WORLD, 1);
	}
	run(&j, &o);
	MPI_Reduce(&j.bad, &bad, 1, MPI_LONG, MPI_SUM, 0, MPI_COMM_WORLD);
	if (j.rank == 0)
		printf("\noverlap: every broadcast %s at every rank\n",
		       bad ? "did NOT verify" : "verified");
	triad_barrier(j.ctx, 60000);
	triad_win_destroy(win);
	triad_fini(j.ctx);
	MPI_Finalize();
	free(j.buf);
	return bad ? 1 : 0;
}
