/* MPI and triad in one process, both bootstrapped by the same launcher
 * (mpirun's PMIx server): no world file, no TRIAD_RANK.
 *
 *     mpirun -np N examples/triad-vmrank test_mpi [--triad-first]
 *
 * triad's rank and size must be MPI_COMM_WORLD's; for every size and root
 * a triad broadcast's data is checked at every rank, and its checksum
 * agrees across ranks by MPI_Allreduce (min = max = the expected one); the
 * same data sent by MPI_Bcast is byte for byte triad's.  --triad-first
 * starts triad before MPI_Init and closes it after MPI_Finalize: the
 * shared PMIx client must survive either order (its init is counted). */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ft.h"

static const size_t sizes[] = { 1, 4096, 1 << 20, 8 << 20 };

static uint64_t checksum(const uint8_t *p, size_t len)
{
	uint64_t h = 0xcbf29ce484222325ull;

	for (size_t i = 0; i < len; i++)
		h = (h ^ p[i]) * 0x100000001b3ull;
	return h;
}

/* One broadcast of len bytes from root by triad, checked three ways. */
static void one_bcast(triad_ctx_t *ctx, uint8_t *win_buf, uint8_t *mpi_buf, size_t len,
		      int root, uint32_t seed)
{
	int rank = triad_rank(ctx);
	uint64_t want, mine, lo, hi;
	triad_req_t *req;
	enum triad_status st;
	int64_t bad;
	int ret;

	if (rank == root)
		ft_fill(win_buf, len, seed, 0);
	else
		memset(win_buf, 0, len);
	ft_barrier(ctx);
	ret = triad_bcast(ctx, root, 1, 0, len, TRIAD_BCAST_AUTO, &req);
	FT_CHECK(ret == 0, "triad_bcast %zu B from %d: %d", len, root, ret);
	if (ret)
		return;
	st = ft_wait(req, 120000);
	FT_CHECK(st == TRIAD_S_OK, "broadcast %zu B from %d: %s", len, root, triad_status_str(st));
	bad = ft_verify(win_buf, len, seed, 0);
	FT_CHECK(bad < 0, "%zu B from %d: byte %lld wrong", len, root, (long long)bad);

	/* Every rank holds the same bytes: MPI says so too. */
	mine = checksum(win_buf, len);
	ft_fill(mpi_buf, len, seed, 0);
	want = checksum(mpi_buf, len);
	MPI_Allreduce(&mine, &lo, 1, MPI_UINT64_T, MPI_MIN, MPI_COMM_WORLD);
	MPI_Allreduce(&mine, &hi, 1, MPI_UINT64_T, MPI_MAX, MPI_COMM_WORLD);
	FT_CHECK(lo == want && hi == want, "%zu B from %d: checksums %016llx..%016llx, want %016llx",
		 len, root, (unsigned long long)lo, (unsigned long long)hi,
		 (unsigned long long)want);

	/* The same data by MPI, beside triad on the same devices. */
	if (rank != root)
		memset(mpi_buf, 0, len);
	MPI_Bcast(mpi_buf, (int)len, MPI_BYTE, root, MPI_COMM_WORLD);
	FT_CHECK(!memcmp(mpi_buf, win_buf, len), "%zu B from %d: MPI_Bcast's data differs", len,
		 root);
}

int main(int argc, char **argv)
{
	int triad_first = argc > 1 && !strcmp(argv[1], "--triad-first");
	int mpi_rank, mpi_size, failures = 0, total = 0;
	size_t max = sizes[sizeof(sizes) / sizeof(sizes[0]) - 1];
	uint8_t *buf = malloc(max), *mbuf = malloc(max);
	triad_ctx_t *ctx = NULL;
	triad_win_t *win;
	int ret;

	if (!buf || !mbuf)
		return 1;
	if (triad_first)
		ctx = ft_init();
	MPI_Init(&argc, &argv);
	if (!triad_first)
		ctx = ft_init();
	MPI_Comm_rank(MPI_COMM_WORLD, &mpi_rank);
	MPI_Comm_size(MPI_COMM_WORLD, &mpi_size);
	FT_CHECK(triad_rank(ctx) == mpi_rank && triad_size(ctx) == mpi_size,
		 "triad says rank %d of %d, MPI rank %d of %d", triad_rank(ctx), triad_size(ctx),
		 mpi_rank, mpi_size);
	ret = triad_win_create(ctx, 1, buf, max, NULL, &win);
	FT_CHECK(ret == 0, "triad_win_create: %d", ret);
	for (size_t i = 0; !ret && i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		one_bcast(ctx, buf, mbuf, sizes[i], 0, (uint32_t)(100 + i));
		one_bcast(ctx, buf, mbuf, sizes[i], mpi_size - 1, (uint32_t)(200 + i));
	}
	failures = ft_failures;
	MPI_Allreduce(&failures, &total, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
	if (mpi_rank == 0)
		printf("test_mpi: %d ranks, triad %s MPI: %d failure(s) in all\n", mpi_size,
		       triad_first ? "before" : "after", total);
	if (!ret)
		triad_win_destroy(win);
	if (triad_first) {
		MPI_Finalize();
		ret = ft_finish(ctx, "test_mpi");
	} else {
		ret = ft_finish(ctx, "test_mpi");
		MPI_Finalize();
	}
	free(buf);
	free(mbuf);
	return ret || total ? 1 : 0;
}
