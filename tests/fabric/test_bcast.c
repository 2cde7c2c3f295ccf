/* Broadcast on a real fabric, every rank a process (any rank count >= 1).
 *
 *   test_bcast [--max-size BYTES] [--tree-only] [--kill | --fail-plane P]
 *
 * For every algorithm (greedy, binomial, pipelined, tree, auto), every size
 * of {0, 1 B, 8 B, 4 KiB, 64 KiB, 1 MiB, 16 MiB} up to --max-size, and root
 * 0, the middle rank and the last: every non-root's window is cleared, the root's filled with a
 * pattern of its own, the broadcast runs, and every rank checks every byte
 * (and that nothing past len was written).  Then two broadcasts from
 * different roots on different windows run at the same time.  Non-root
 * ranks only start the broadcast and wait for it.
 *
 * Groups (triad_group_bcast), with 2 ranks or more: the even ranks in
 * reverse order and the odd ranks, at the same time (disjoint groups under
 * one id each), then every rank but the last, whose window must keep its
 * bytes: every algorithm, sizes 1 B .. 1 MiB, group roots first, middle and
 * last.  Then a group every rank but its root creates 200 ms late, so that
 * its broadcast's messages come before the group (greedy and tree); then
 * every argument error of triad_group_create and triad_group_bcast.
 *
 * --tree-only: the delegated broadcast (TRIAD_BCAST_TREE) alone, in every
 * step above and below; with TRIAD_BCAST_SHAPE set (tree, twotree) the
 * roots take that shape at every size, where AUTO would take the other.
 *
 * --fail-plane P: a 16 MiB broadcast of every algorithm from rank 0 (tree
 * also with 64 KiB, one WRITE per child), and 50 ms into each, ranks 1 and
 * the last (holders that forward, in the delegated one) force their
 * connections on plane P into the error state (triad_plane_fail): the
 * copies and WRITEs on it are done again on another plane, every request
 * completes OK and every byte verifies at every rank.
 */
#include <getopt.h>
#include <unistd.h>

#include "ft.h"

#define WIN_A 1
#define WIN_B 2

static uint64_t max_size = 16u << 20;
static int kill_mode, fail_plane = -1, tree_only;

static void one(triad_ctx_t *ctx, char *buf, uint64_t buflen, int root, uint64_t len,
		enum triad_bcast_algo algo, uint32_t seed)
{
	int rank = triad_rank(ctx);
	triad_req_t *req;
	enum triad_status st;
	int ret;

	if (rank == root)
		ft_fill(buf, len, seed, 0);
	else
		memset(buf, 0, buflen);
	ft_barrier(ctx);
	ret = triad_bcast(ctx, root, WIN_A, 0, len, algo, &req);
	FT_CHECK(ret == 0, "triad_bcast: %s", strerror(-ret));
	if (ret)
		return;
	st = ft_wait(req, 300000);
	FT_CHECK(st == TRIAD_S_OK, "broadcast of %llu B from %d, algorithm %d: %s",
		 (unsigned long long)len, root, (int)algo, triad_status_str(st));
	if (st == TRIAD_S_OK) {
		int64_t bad = ft_verify(buf, len, seed, 0);

		FT_CHECK(bad < 0, "broadcast of %llu B from %d, algorithm %d: byte %lld wrong",
			 (unsigned long long)len, root, (int)algo, (long long)bad);
		if (rank != root && len < buflen)
			FT_CHECK(buf[len] == 0, "byte after the broadcast range was written");
	}
}

/* --kill: the last rank dies right after it called a 16 MiB greedy broadcast
 * from rank 0.  The root's request must complete with an error naming a
 * rank, every other survivor's request must complete (OK if its data made
 * it, else the root's error), and nobody may hang. */
static int killed_broadcast(triad_ctx_t *ctx)
{
	int rank = triad_rank(ctx), size = triad_size(ctx), victim = size - 1;
	uint64_t len = 16u << 20;
	char *buf = calloc(1, len);
	triad_win_t *w;
	triad_req_t *req;
	enum triad_status st;

	if (!buf || size < 3) {
		fprintf(stderr, "--kill needs 3 ranks or more\n");
		return 1;
	}
	FT_CHECK(triad_win_create(ctx, WIN_A, buf, len, NULL, &w) == 0, "window");
	if (rank == 0)
		ft_fill(buf, len, 5, 0);
	ft_barrier(ctx);
	FT_CHECK(triad_bcast(ctx, 0, WIN_A, 0, len, TRIAD_BCAST_GREEDY, &req) == 0, "bcast");
	if (rank == victim) {
		printf("rank %d: dying in the middle of the broadcast\n", rank);
		fflush(stdout);
		_exit(0);
	}
	if (triad_wait(req, 120000)) {
		FT_CHECK(0, "the broadcast did not complete in 120 s with rank %d dead", victim);
		return 1;
	}
	st = triad_req_status(req);
	if (rank == 0) {
		FT_CHECK(st != TRIAD_S_OK && triad_req_failed_rank(req) >= 0,
			 "root: %s, failed rank %d", triad_status_str(st), triad_req_failed_rank(req));
		printf("bcast --kill: root: %s, naming rank %d\n", triad_status_str(st),
		       triad_req_failed_rank(req));
	} else if (st == TRIAD_S_OK) {
		FT_CHECK(ft_verify(buf, len, 5, 0) < 0, "rank %d: told OK, data wrong", rank);
	}
	printf("bcast --kill: rank %d completed: %s\n", rank, triad_status_str(st));
	triad_req_free(req);
	/* No barrier with a dead rank; leave after the others had time to finish. */
	sleep(2);
	triad_fini(ctx);
	return ft_failures ? 1 : 0;
}

static int failed_plane_broadcasts(triad_ctx_t *ctx)
{
	static const enum triad_bcast_algo algos[] = { TRIAD_BCAST_GREEDY, TRIAD_BCAST_BINOMIAL,
						       TRIAD_BCAST_PIPELINED, TRIAD_BCAST_TREE,
						       TRIAD_BCAST_AUTO,  TRIAD_BCAST_TREE };
	int rank = triad_rank(ctx), size = triad_size(ctx);
	uint64_t len = 16u << 20;
	char *buf = calloc(1, len);
	triad_win_t *w;

	if (!buf || size < 3 || fail_plane >= triad_nplanes(ctx)) {
		fprintf(stderr, "--fail-plane needs 3 ranks or more and an existing plane\n");
		return 1;
	}
	FT_CHECK(triad_win_create(ctx, WIN_A, buf, len, NULL, &w) == 0, "window");
	for (unsigned ai = 0; ai < sizeof(algos) / sizeof(algos[0]); ai++) {
		triad_req_t *req;
		enum triad_status st;
		uint32_t seed = 900 + ai;
		/* The last: the delegated one small enough for one tree. */
		uint64_t n = ai == sizeof(algos) / sizeof(algos[0]) - 1 ? 64u << 10 : len;

		if (tree_only && algos[ai] != TRIAD_BCAST_TREE)
			continue;

		if (rank == 0)
			ft_fill(buf, n, seed, 0);
		else
			memset(buf, 0, len);
		ft_barrier(ctx);
		FT_CHECK(triad_bcast(ctx, 0, WIN_A, 0, n, algos[ai], &req) == 0, "bcast");
		if (rank == 1 || rank == size - 1) {
			usleep(50000);
			FT_CHECK(triad_plane_fail(ctx, fail_plane) == 0, "triad_plane_fail");
		}
		st = ft_wait(req, 300000);
		FT_CHECK(st == TRIAD_S_OK, "broadcast %u with plane %d failed under it: %s", ai,
			 fail_plane, triad_status_str(st));
		if (st == TRIAD_S_OK)
			FT_CHECK(ft_verify(buf, n, seed, 0) < 0,
				 "broadcast %u with plane %d failed under it: data wrong", ai,
				 fail_plane);
	}
	if (rank == 0)
		printf("bcast --fail-plane %d: 16 MiB from rank 0, every algorithm (tree also "
		       "64 KiB), plane %d failed by ranks 1 and %d in the middle: %d ranks "
		       "verified\n", fail_plane, fail_plane,
		       size - 1, size);
	ft_barrier(ctx); /* a rank that has its data may still be serving copies */
	FT_CHECK(triad_win_destroy(w) == 0, "window destroy");
	free(buf);
	return ft_finish(ctx, "test_bcast --fail-plane");
}

/* One broadcast of group g from group root groot: members check every
 * byte and the byte after; a rank outside (g NULL) checks its window kept
 * its bytes. */
static void group_one(triad_ctx_t *ctx, triad_group_t *g, char *buf, uint64_t buflen, int groot,
		      uint64_t len, enum triad_bcast_algo algo, uint32_t seed)
{
	triad_req_t *req;
	enum triad_status st;
	int ret;

	if (!g || triad_group_rank(g) == groot)
		ft_fill(buf, buflen, seed, 0);
	else
		memset(buf, 0, buflen);
	ft_barrier(ctx);
	if (g) {
		ret = triad_group_bcast(g, groot, WIN_A, 0, len, algo, &req);
		FT_CHECK(ret == 0, "triad_group_bcast: %s", strerror(-ret));
		st = ret ? TRIAD_S_TRANSPORT : ft_wait(req, 300000);
		FT_CHECK(st == TRIAD_S_OK, "group broadcast of %llu B from group rank %d, "
			 "algorithm %d: %s", (unsigned long long)len, groot, (int)algo,
			 triad_status_str(st));
		if (st == TRIAD_S_OK) {
			int64_t bad = ft_verify(buf, len, seed, 0);

			FT_CHECK(bad < 0, "group broadcast of %llu B from group rank %d, algorithm "
				 "%d: byte %lld wrong", (unsigned long long)len, groot, (int)algo,
				 (long long)bad);
			if (triad_group_rank(g) != groot && len < buflen)
				FT_CHECK(buf[len] == 0, "byte after the group broadcast was written");
		}
	}
	ft_barrier(ctx); /* every member done: an outsider's window is final */
	if (!g)
		FT_CHECK(ft_verify(buf, buflen, seed, 0) < 0,
			 "a rank outside the group: its window was written");
}

/* The group phases (above); returns the broadcasts made here. */
static int groups(triad_ctx_t *ctx, char *buf, uint64_t buflen,
		  const enum triad_bcast_algo *algos, unsigned nalgos)
{
	const uint64_t sizes[] = { 1, 64u << 10, 1 << 20 };
	int rank = triad_rank(ctx), size = triad_size(ctx), count = 0;
	int *ranks = calloc((size_t)size, sizeof(int)), n = 0;
	triad_group_t *g = NULL, *g2;
	triad_req_t *req;
	int ret;

	if (!ranks)
		return 0;
	for (int phase = 0; phase < 2; phase++) {
		n = 0;
		if (phase == 0 && rank % 2 == 0) /* even ranks, last first */
			for (int r = (size - 1) / 2 * 2; r >= 0; r -= 2)
				ranks[n++] = r;
		else if (phase == 0) /* odd ranks */
			for (int r = 1; r < size; r += 2)
				ranks[n++] = r;
		else
			for (int r = 0; r < size - 1; r++)
				ranks[n++] = r;
		g = NULL;
		if (phase == 0 || rank < size - 1) {
			ret = triad_group_create(ctx, (uint32_t)(10 + phase), ranks, n, &g);
			FT_CHECK(ret == 0, "triad_group_create of %d ranks: %s", n, strerror(-ret));
			FT_CHECK(!g || (triad_group_size(g) == n && ranks[triad_group_rank(g)] == rank),
				 "group rank %d of %d", g ? triad_group_rank(g) : -1, n);
		}
		for (unsigned ai = 0; ai < nalgos; ai++)
			for (unsigned si = 0; si < sizeof(sizes) / sizeof(sizes[0]) &&
					      sizes[si] <= buflen; si++)
				/* Group roots first, middle and last (the largest group's:
				 * every rank runs the same number of rounds). */
				for (int ri = 0; ri < 3; ri++) {
					int big = phase == 0 ? (size + 1) / 2 : size - 1;
					int gn = g ? triad_group_size(g) : big;
					int groot = ri == 0 ? 0 : ri == 1 ? big / 2 : big - 1;

					group_one(ctx, g, buf, buflen, groot < gn ? groot : gn - 1,
						  sizes[si], algos[ai],
						  (uint32_t)(50000 + 1000 * phase + 100 * ai + 10 * si +
							     (unsigned)ri));
					count++;
				}
		if (g)
			FT_CHECK(triad_group_destroy(g) == 0, "triad_group_destroy");
		if (rank == 0)
			printf("bcast: %s verified\n", phase == 0 ? "groups of the even ranks "
			       "(reversed) and of the odd ranks" : "a group of every rank but the last");
	}

	/* Created late everywhere but at its root: the messages come first. */
	for (int late = 0; late < 2; late++) {
		enum triad_bcast_algo algo = late ? TRIAD_BCAST_TREE : TRIAD_BCAST_GREEDY;

		for (int r = 0; r < size; r++)
			ranks[r] = size - 1 - r; /* group rank 0 is the last rank */
		if (rank == size - 1)
			ft_fill(buf, buflen, 90 + (uint32_t)late, 0);
		else
			memset(buf, 0, buflen);
		ft_barrier(ctx);
		if (rank != size - 1)
			usleep(200000);
		ret = triad_group_create(ctx, 20, ranks, size, &g);
		FT_CHECK(ret == 0, "late triad_group_create: %s", strerror(-ret));
		if (ret)
			continue;
		ret = triad_group_bcast(g, 0, WIN_A, 0, buflen, algo, &req);
		FT_CHECK(ret == 0 && ft_wait(req, 300000) == TRIAD_S_OK,
			 "the broadcast of a group created late (algorithm %d)", (int)algo);
		FT_CHECK(ft_verify(buf, buflen, 90 + (uint32_t)late, 0) < 0,
			 "data of a group created late (algorithm %d)", (int)algo);
		ft_barrier(ctx);
		triad_group_destroy(g);
		count++;
	}

	/* Argument errors. */
	for (int r = 0; r < size; r++)
		ranks[r] = r;
	FT_CHECK(triad_group_create(ctx, 0, ranks, size, &g) == -EINVAL, "id 0 accepted");
	FT_CHECK(triad_group_create(NULL, 30, ranks, size, &g) == -EINVAL, "NULL ctx accepted");
	FT_CHECK(triad_group_create(ctx, 30, NULL, size, &g) == -EINVAL, "NULL ranks accepted");
	FT_CHECK(triad_group_create(ctx, 30, ranks, size, NULL) == -EINVAL, "NULL group_p");
	FT_CHECK(triad_group_create(ctx, 30, ranks, 0, &g) == -EINVAL, "no rank accepted");
	ranks[size - 1] = size;
	FT_CHECK(triad_group_create(ctx, 30, ranks, size, &g) == -EINVAL, "rank out of range");
	ranks[size - 1] = size == 1 ? 0 : size - 2;
	if (size > 1)
		FT_CHECK(triad_group_create(ctx, 30, ranks, size, &g) == -EINVAL, "a rank twice");
	ranks[0] = rank == 0 ? 1 : 0;
	if (size > 1)
		FT_CHECK(triad_group_create(ctx, 30, ranks, 1, &g) == -EINVAL, "self not a member");
	ranks[0] = rank;
	FT_CHECK(triad_group_create(ctx, 30, ranks, 1, &g) == 0, "a group of one");
	FT_CHECK(triad_group_create(ctx, 30, ranks, 1, &g2) == -EEXIST, "an id twice");
	FT_CHECK(triad_group_bcast(g, 1, WIN_A, 0, 1, TRIAD_BCAST_GREEDY, &req) == -EINVAL,
		 "group root out of range");
	FT_CHECK(triad_group_bcast(g, -1, WIN_A, 0, 1, TRIAD_BCAST_GREEDY, &req) == -EINVAL,
		 "negative group root");
	FT_CHECK(triad_group_bcast(g, 0, WIN_A, 0, 1, (enum triad_bcast_algo)5, &req) == -EINVAL,
		 "bad algorithm");
	FT_CHECK(triad_group_bcast(g, 0, WIN_A, 0, 1, TRIAD_BCAST_GREEDY, NULL) == -EINVAL,
		 "NULL req_p");
	FT_CHECK(triad_group_bcast(NULL, 0, WIN_A, 0, 1, TRIAD_BCAST_GREEDY, &req) == -EINVAL,
		 "NULL group");
	FT_CHECK(triad_group_rank(NULL) == -EINVAL && triad_group_size(NULL) == -EINVAL,
		 "NULL group's rank or size");
	FT_CHECK(triad_group_destroy(NULL) == -EINVAL, "destroying NULL");
	/* A group of one: its broadcast completes at once, moving nothing. */
	FT_CHECK(triad_group_bcast(g, 0, WIN_A, 0, 1, TRIAD_BCAST_GREEDY, &req) == 0 &&
		 ft_wait(req, 10000) == TRIAD_S_OK, "the broadcast of a group of one");
	FT_CHECK(triad_group_destroy(g) == 0, "destroy");
	FT_CHECK(triad_group_create(ctx, 30, ranks, 1, &g) == 0, "an id used again after destroy");
	triad_group_destroy(g);
	if (rank == 0)
		printf("bcast: groups created late verified; argument errors refused\n");
	free(ranks);
	return count;
}

int main(int argc, char **argv)
{
	static const struct option opts[] = { { "max-size", required_argument, NULL, 's' },
					      { "kill", no_argument, NULL, 'k' },
					      { "fail-plane", required_argument, NULL, 'f' },
					      { "tree-only", no_argument, NULL, 't' },
					      { NULL, 0, NULL, 0 } };
	static const enum triad_bcast_algo every[] = { TRIAD_BCAST_GREEDY, TRIAD_BCAST_BINOMIAL,
						       TRIAD_BCAST_PIPELINED, TRIAD_BCAST_TREE,
						       TRIAD_BCAST_AUTO };
	static const enum triad_bcast_algo tree[] = { TRIAD_BCAST_TREE };
	static const char *const names[] = { "auto", "greedy", "binomial", "pipelined", "tree" };
	const uint64_t sizes[] = { 0, 1, 8, 4096, 64u << 10, 1 << 20, 16u << 20 };
	triad_ctx_t *ctx;
	triad_win_t *wa, *wb;
	char *a, *b;
	int c, rank, size, count = 0;
	uint64_t alen;
	const enum triad_bcast_algo *algos;
	unsigned nalgos;

	while ((c = getopt_long(argc, argv, "s:kf:t", opts, NULL)) != -1) {
		if (c == 't')
			tree_only = 1;
		else if (c == 'k')
			kill_mode = 1;
		else if (c == 'f')
			fail_plane = atoi(optarg);
		else if (c == 's')
			max_size = strtoull(optarg, NULL, 0);
		else
			return 2;
	}
	algos = tree_only ? tree : every;
	nalgos = tree_only ? 1 : sizeof(every) / sizeof(every[0]);
	ctx = ft_init();
	rank = triad_rank(ctx);
	size = triad_size(ctx);
	if (kill_mode)
		return killed_broadcast(ctx);
	if (fail_plane >= 0)
		return failed_plane_broadcasts(ctx);
	alen = max_size + 4096;
	a = calloc(1, alen);
	b = calloc(1, 1 << 20);
	if (!a || !b)
		return 1;
	FT_CHECK(triad_win_create(ctx, WIN_A, a, alen, NULL, &wa) == 0, "window A");
	FT_CHECK(triad_win_create(ctx, WIN_B, b, 1 << 20, NULL, &wb) == 0, "window B");
	ft_barrier(ctx);
	for (unsigned ai = 0; ai < nalgos; ai++) {
		for (unsigned si = 0; si < sizeof(sizes) / sizeof(sizes[0]); si++) {
			if (sizes[si] > max_size)
				continue;
			/* Root 0, the middle rank (if another) and the last. */
			for (int ri = 0; ri < 3; ri++) {
				int root = ri == 0 ? 0 : ri == 1 ? size / 2 : size - 1;

				if (ri && (root == 0 || (ri == 2 && root == size / 2)))
					continue;
				one(ctx, a, alen, root, sizes[si], algos[ai],
				    (uint32_t)(1000 * ai + 10 * si + (unsigned)root));
				count++;
			}
		}
		if (rank == 0)
			printf("bcast: %d ranks, %s: sizes 0 .. %llu B from roots 0, %d and %d "
			       "verified\n", size, names[algos[ai]], (unsigned long long)max_size,
			       size / 2, size - 1);
	}
	/* Two at once, from different roots, on different windows. */
	{
		int r1 = size - 1;
		triad_req_t *q1, *q2;

		if (rank == 0)
			ft_fill(a, 1 << 20, 77, 0);
		else
			memset(a, 0, 1 << 20);
		if (rank == r1)
			ft_fill(b, 1 << 20, 78, 0);
		else
			memset(b, 0, 1 << 20);
		ft_barrier(ctx);
		FT_CHECK(triad_bcast(ctx, 0, WIN_A, 0, 1 << 20, TRIAD_BCAST_GREEDY, &q1) == 0, "q1");
		FT_CHECK(triad_bcast(ctx, r1, WIN_B, 0, 1 << 20, TRIAD_BCAST_TREE, &q2) == 0,
			 "q2");
		FT_CHECK(ft_wait(q1, 300000) == TRIAD_S_OK, "concurrent broadcast from 0");
		FT_CHECK(ft_wait(q2, 300000) == TRIAD_S_OK, "concurrent broadcast from %d", r1);
		FT_CHECK(ft_verify(a, 1 << 20, 77, 0) < 0, "window A after the concurrent pair");
		FT_CHECK(ft_verify(b, 1 << 20, 78, 0) < 0, "window B after the concurrent pair");
		if (rank == 0)
			printf("bcast: two concurrent broadcasts (roots 0 and %d, windows A and B) "
			       "verified; %d broadcasts in all\n", r1, count + 2);
	}
	{
		triad_req_t *q;

		FT_CHECK(triad_bcast(ctx, size, WIN_A, 0, 1, TRIAD_BCAST_GREEDY, &q) == -EINVAL,
			 "root out of range");
		FT_CHECK(triad_bcast(ctx, 0, WIN_A, 0, 1, (enum triad_bcast_algo)5, &q) == -EINVAL,
			 "bad algorithm");
	}
	count = groups(ctx, a, 1 << 20 < alen ? 1 << 20 : alen, algos, nalgos);
	if (rank == 0)
		printf("bcast: %d group broadcasts here\n", count);
	return ft_finish(ctx, "test_bcast");
}
