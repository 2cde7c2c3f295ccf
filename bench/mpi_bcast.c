/* mpi_bcast: the MPI_Bcast baseline of bench/run-bcast, timed as triad-perf
 * bcast times triad_bcast: each iteration is MPI_Barrier, then MPI_Bcast of
 * SIZE bytes from rank 0, then a 1-byte MPI_Reduce to rank 0 (MPI_Bcast may
 * return at the root before every rank holds the data; the root's
 * triad_bcast request completes only when every rank does, so the reduce
 * stands for "everyone has it").  A sample is rank 0's time from the
 * broadcast's start to the reduce's end.  Built with mpicc by
 * bench/run-bcast at run time (never committed as a binary).
 *
 * usage: mpi_bcast ITERS WARMUP SIZE...
 * prints on rank 0, per size:
 *   bytes=SIZE ranks=N iters=I t_median_us=X t_avg_us=Y */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

int main(int argc, char **argv)
{
	long size, iters = 0, warmup = 0, maxsize = 0;
	int rank, n, bad = 0, anybad = 0;
	unsigned char *buf;
	double *t, sum = 0;
	char one = 1, all;

	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &n);
	if (argc < 4 || (iters = atol(argv[1])) <= 0 || (warmup = atol(argv[2])) < 0) {
		if (!rank)
			fprintf(stderr, "usage: mpi_bcast ITERS WARMUP SIZE...\n");
		MPI_Abort(MPI_COMM_WORLD, 2);
	}
	for (int a = 3; a < argc; a++) {
		size = atol(argv[a]);
		if (size <= 0 || size > (1l << 30))
			MPI_Abort(MPI_COMM_WORLD, 2);
		if (size > maxsize)
			maxsize = size;
	}
	buf = malloc((size_t)maxsize);
	t = calloc((size_t)iters, sizeof(*t));
	if (!buf || !t)
		MPI_Abort(MPI_COMM_WORLD, 1);
	for (int a = 3; a < argc; a++) {
		size = atol(argv[a]);
		bad = anybad = 0;
		sum = 0;
		for (long i = 0; i < warmup + iters; i++) {
			double t0;

			if (!rank)
				for (long k = 0; k < size; k++)
					buf[k] = (unsigned char)(k * 7 + i);
			else
				memset(buf, 0, (size_t)size);
			MPI_Barrier(MPI_COMM_WORLD);
			t0 = MPI_Wtime();
			MPI_Bcast(buf, (int)size, MPI_BYTE, 0, MPI_COMM_WORLD);
			MPI_Reduce(&one, &all, 1, MPI_CHAR, MPI_MIN, 0, MPI_COMM_WORLD);
			if (i >= warmup)
				t[i - warmup] = (MPI_Wtime() - t0) * 1e6;
			if (rank)
				for (long k = 0; k < size; k += 4093)
					if (buf[k] != (unsigned char)(k * 7 + i))
						bad = 1;
		}
		MPI_Reduce(&bad, &anybad, 1, MPI_INT, MPI_MAX, 0, MPI_COMM_WORLD);
		if (!rank) {
			for (long i = 0; i < iters; i++)
				sum += t[i];
			qsort(t, (size_t)iters, sizeof(*t), cmp);
			printf("bytes=%ld ranks=%d iters=%ld t_median_us=%.3f t_avg_us=%.3f%s\n",
			       size, n, iters, t[iters / 2], sum / (double)iters,
			       anybad ? " DATA_MISMATCH" : "");
			fflush(stdout);
		}
		if (anybad)
			bad = 1;
	}
	free(buf);
	free(t);
	MPI_Finalize();
	return bad ? 1 : 0;
}
