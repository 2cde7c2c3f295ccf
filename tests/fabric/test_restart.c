/* A rank's next run never connects to a process of the run before.  Run
 * with 2 ranks:
 *
 *     triad-run -n 2 -- test_restart [--crash]
 *
 * Each launch rank runs the same world twice, one process after the other
 * (run 1 and run 2, forked in turn), as a script that calls two triad
 * programs does (tools/perf/check-overlap).  One rank's run 1 is still
 * alive when the other rank's run 2 starts and connects to the same
 * addresses:
 *
 *   default  run 1's rank 0 closes at once; its rank 1 keeps computing for
 *            LINGER_MS before it closes, while run 2's rank 0 connects to
 *            rank 1's address (rank 0 is the one that connects);
 *   --crash  run 1's rank 1 dies without triad_fini (no BYE); its rank 0
 *            lingers, rebuilding the lanes to rank 1 as the lower rank does,
 *            while run 2's rank 1 listens on rank 1's address.
 *
 * Both runs share the world file, so the job key cannot tell them apart.
 * Run 2 must be a world of its own: its triad_init, barriers and a put
 * verified both ways succeed on both ranks, and run 1's lingering rank
 * closes cleanly.  That the two runs met is checked too (triad_conn_stats'
 * other_run), or a pass would show nothing: by default run 2's rank 0 was
 * refused by run 1's rank 1; with --crash run 1's rank 0 was refused by
 * run 2's rank 1. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "ft.h"

#define LINGER_MS 4000
#define LEN 4096

static int crash;

/* Keeps the context alive and progressing for ms, as a rank that computes
 * before it closes (the progress thread serves connection requests). */
static void linger(triad_ctx_t *ctx, int ms)
{
	double end = ft_now_s() + ms / 1e3;

	while (ft_now_s() < end) {
		triad_progress(ctx);
		usleep(1000);
	}
}

/* Connection set-ups refused, on every plane to peer, because the other
 * side was a process of another run. */
static uint64_t other_run(triad_ctx_t *ctx, int peer)
{
	uint64_t n = 0;

	for (int p = 0; p < triad_nplanes(ctx); p++) {
		struct triad_conn_stats cs = { .field_mask = TRIAD_CONN_STATS_RUN };

		if (triad_conn_stats(ctx, peer, p, &cs) == 0)
			n += cs.other_run;
	}
	return n;
}

static int run1(int rank)
{
	triad_ctx_t *ctx = ft_init();
	int lingers = crash ? rank == 0 : rank == 1;

	ft_barrier(ctx);
	if (crash && rank == 1) {
		printf("test_restart: run 1 rank 1 dies without closing\n");
		fflush(stdout);
		_exit(0);
	}
	if (lingers) {
		linger(ctx, LINGER_MS);
		/* --crash: this rank 0 rebuilt its lanes to rank 1's address, where
		 * run 2's rank 1 listens, and was refused: the process it knew
		 * is gone.  (Without --crash, run 2's rank 0 is refused instead:
		 * checked there.) */
		if (crash)
			FT_CHECK(other_run(ctx, 1) > 0, "run 1's rank 0 was never refused by run 2's "
				 "rank 1: the two runs did not overlap, the test shows nothing");
	}
	triad_fini(ctx);
	return ft_failures ? 1 : 0;
}

/* Run 2: a world of its own.  Each rank puts a pattern of its run into the
 * other's window, then reads the other's pattern back from its own. */
static int run2(int rank)
{
	double t0 = ft_now_s();
	triad_ctx_t *ctx = ft_init();
	int peer = 1 - rank;
	uint8_t *win = calloc(1, LEN), *src = malloc(LEN);
	triad_win_t *w = NULL;
	triad_req_t *req;
	int ret;

	FT_CHECK(win && src, "out of memory");
	if (!win || !src)
		exit(1);
	ret = triad_win_create(ctx, 1, win, LEN, NULL, &w);
	FT_CHECK(ret == 0, "triad_win_create: %s", strerror(-ret));
	ft_barrier(ctx);
	/* The rank whose partner of run 1 lingered asked it first, and was
	 * refused. */
	if (!crash && rank == 0)
		FT_CHECK(other_run(ctx, 1) > 0, "run 2's rank 0 was never refused by run 1's rank "
			 "1: the two runs did not overlap, the test shows nothing");
	ft_fill(src, LEN, 2000 + (uint32_t)rank, 0);
	ret = triad_put(ctx, src, LEN, peer, 1, 0, 0, &req);
	FT_CHECK(ret == 0, "triad_put: %s", strerror(-ret));
	if (!ret) {
		enum triad_status st = ft_wait(req, 30000);

		FT_CHECK(st == TRIAD_S_OK, "put to rank %d: %s", peer, triad_status_str(st));
	}
	ft_barrier(ctx);
	FT_CHECK(ft_verify(win, LEN, 2000 + (uint32_t)peer, 0) < 0,
		 "run 2's window does not hold run 2's rank %d's put", peer);
	if (!ft_failures)
		printf("test_restart: run 2 rank %d: up, barriers and put in %.0f ms\n", rank,
		       (ft_now_s() - t0) * 1e3);
	ft_barrier(ctx);
	triad_win_destroy(w);
	triad_fini(ctx);
	free(win);
	free(src);
	return ft_failures ? 1 : 0;
}

/* Runs fn in a process of its own; its exit status. */
static int in_child(int (*fn)(int), int rank)
{
	pid_t pid;
	int st;

	fflush(stdout);
	fflush(stderr);
	pid = fork();
	if (pid < 0) {
		perror("fork");
		return 1;
	}
	if (pid == 0)
		_exit(fn(rank));
	if (waitpid(pid, &st, 0) < 0)
		return 1;
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

int main(int argc, char **argv)
{
	const char *r = getenv("TRIAD_RANK");
	int rank = r ? atoi(r) : -1, rc1, rc2;

	crash = argc > 1 && !strcmp(argv[1], "--crash");
	if (rank < 0 || rank > 1) {
		fprintf(stderr, "test_restart: run me with triad-run -n 2\n");
		return 1;
	}
	ft_rank = rank;
	rc1 = in_child(run1, rank);
	rc2 = in_child(run2, rank);
	FT_CHECK(rc1 == 0, "run 1 exited %d", rc1);
	FT_CHECK(rc2 == 0, "run 2 exited %d", rc2);
	if (!ft_failures && rank == 0)
		printf("test_restart%s: ok\n", crash ? " --crash" : "");
	return ft_failures ? 1 : 0;
}
