/* Two jobs on one fabric cannot reach each other.  Run with 3 ranks:
 *
 *     triad-run -n 3 -- test_jobkey
 *
 * Ranks 0 and 1 of the launch are job A ('key jobA'); launch rank 2 is
 * job B ('key jobB'), whose world file names A's rank 1 as its own rank 1:
 * B's rank 0 connects to A's rank 1 on every plane, as a rank 0 would.
 * Without the key check, A's rank 1 would take B for its own rank 0
 * reconnecting and drop A's live connection; with it:
 *   - B's triad_init fails with -EACCES (A's refusal carries A's key), at
 *     once rather than at its connect timeout, and B never gets a
 *     context, so no window of A is within its reach;
 *   - A's rank 1 counts the refusals (triad_plane_info, conn_rejected_key);
 *   - A's traffic, puts from rank 0 into rank 1's window the whole time,
 *     all complete and verify, and A's own connections were never refused. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "ft.h"

#define WIN_LEN (64 * 1024)
#define PUT_LEN 4096
#define MAX_WAIT_MS 30000
#define MIN_PUTS 200

struct line {
	char text[200];
};

/* The launch's world file: its port and each rank's address list (the
 * rest of the rank's line). */
static int read_launch_world(const char *path, unsigned *port, struct line *ranks, int n)
{
	FILE *f = fopen(path, "r");
	char buf[256];
	int got = 0;

	if (!f)
		return -1;
	while (fgets(buf, sizeof(buf), f)) {
		int r, off;

		if (sscanf(buf, "port %u", port) == 1)
			continue;
		if (sscanf(buf, "%d %n", &r, &off) == 1 && r >= 0 && r < n) {
			snprintf(ranks[r].text, sizeof(ranks[r].text), "%s", buf + off);
			got++;
		}
	}
	fclose(f);
	return got == n ? 0 : -1;
}

static int write_world(const char *path, const char *key, unsigned port, const struct line *r0,
		       const struct line *r1)
{
	FILE *f = fopen(path, "w");

	if (!f)
		return -1;
	fprintf(f, "key %s\nport %u\n0 %s1 %s", key, port, r0->text, r1->text);
	return fclose(f);
}

static uint64_t rejected(triad_ctx_t *ctx)
{
	uint64_t n = 0;

	for (int p = 0; p < triad_nplanes(ctx); p++) {
		struct triad_plane_info pi = { .field_mask = TRIAD_PLANE_INFO_ALL };

		if (triad_plane_info(ctx, p, &pi) == 0)
			n += pi.conn_rejected_key;
	}
	return n;
}

/* Job B: its init must fail, every attempt refused by A. */
static int job_b(const char *world)
{
	struct triad_ctx_attr attr = {
		.field_mask = TRIAD_CTX_ATTR_WORLD_FILE | TRIAD_CTX_ATTR_RANK,
		.rank = 0,
		.world_file = world,
	};
	triad_ctx_t *ctx = NULL;
	struct timespec t0, t1;
	double secs;
	int ret;

	/* Long: a refusal that did not stop the attempts would show. */
	setenv("TRIAD_CONNECT_TIMEOUT_MS", "20000", 1);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	ret = triad_init(&attr, &ctx);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	secs = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) * 1e-9;
	FT_CHECK(secs < 10, "job B's triad_init took %.1f s: the refusal did not stop it", secs);
	FT_CHECK(ret == -EACCES && !ctx, "job B's triad_init: %d (%s), want -EACCES", ret,
		 strerror(-ret));
	if (!ret)
		triad_fini(ctx);
	printf("test_jobkey: job B could not join job A: %s (after %.2f s)\n", strerror(-ret),
	       secs);
	return ft_failures ? 1 : 0;
}

#define NSLOTS (WIN_LEN / PUT_LEN - 1) /* the last slot holds rank 1's flag */

/* Every slot of rank 1's window holds the pattern of the last put into it. */
static void verify_window(triad_ctx_t *ctx, const uint32_t *last)
{
	char *back = malloc(NSLOTS * PUT_LEN);
	triad_req_t *req;
	int ret = back ? triad_get(ctx, back, NSLOTS * PUT_LEN, 1, 1, 0, 0, &req) : -ENOMEM;

	FT_CHECK(ret == 0 && ft_wait(req, 10000) == TRIAD_S_OK, "get of the window: %d", ret);
	for (int i = 0; !ret && i < NSLOTS; i++)
		if (last[i])
			FT_CHECK(ft_verify(back + (size_t)i * PUT_LEN, PUT_LEN, last[i], 0) < 0,
				 "slot %d does not hold put %u", i, last[i]);
	free(back);
}

/* Rank 0 of A: puts into rank 1's window until rank 1 has seen B refused. */
static void a_sender(triad_ctx_t *ctx, char *buf)
{
	uint32_t last[NSLOTS] = { 0 };
	int puts = 0;
	char flag = 0;

	/* at least MIN_PUTS, so that A's traffic also runs past B's attempts */
	for (uint32_t seed = 1; flag == 0 || puts < MIN_PUTS; seed++) {
		triad_req_t *req;
		uint64_t off = (uint64_t)(seed % NSLOTS) * PUT_LEN;
		enum triad_status st;
		int ret;

		ft_fill(buf, PUT_LEN, seed, 0);
		ret = triad_put(ctx, buf, PUT_LEN, 1, 1, off, 0, &req);
		FT_CHECK(ret == 0, "put %u: %d", seed, ret);
		if (ret)
			break;
		st = ft_wait(req, 10000);
		FT_CHECK(st == TRIAD_S_OK, "put %u: %s", seed, triad_status_str(st));
		if (st != TRIAD_S_OK)
			break;
		puts++;
		last[seed % NSLOTS] = seed;
		/* rank 1 sets the last byte of its window when it is done */
		if (flag)
			continue;
		ret = triad_get(ctx, &flag, 1, 1, 1, WIN_LEN - 1, 0, &req);
		FT_CHECK(ret == 0 && ft_wait(req, 10000) == TRIAD_S_OK, "get of the flag");
		if (ret)
			break;
	}
	verify_window(ctx, last);
	printf("test_jobkey: job A rank 0: %d puts while job B knocked, %s\n", puts,
	       ft_failures ? "FAILED" : "all in place");
}

/* Rank 1 of A: waits until B's attempts were counted, then tells rank 0
 * to stop (the flag byte rank 0 reads). */
static void a_receiver(triad_ctx_t *ctx, char *win)
{
	int waited = 0;
	uint64_t n;

	while ((n = rejected(ctx)) == 0 && waited < MAX_WAIT_MS) {
		usleep(100 * 1000);
		waited += 100;
	}
	FT_CHECK(n > 0, "no connection of job B was refused in %d ms", MAX_WAIT_MS);
	printf("test_jobkey: job A rank 1: %llu connection request(s) of job B refused\n",
	       (unsigned long long)n);
	win[WIN_LEN - 1] = 1;
}

int main(void)
{
	const char *launch = getenv("TRIAD_WORLD"), *r = getenv("TRIAD_RANK");
	int rank = r ? atoi(r) : -1;
	struct line ranks[3];
	unsigned port = 7471;
	char path_a[64], path_b[64];
	struct triad_ctx_attr attr = { .field_mask = TRIAD_CTX_ATTR_WORLD_FILE | TRIAD_CTX_ATTR_RANK };
	triad_ctx_t *ctx;
	triad_win_t *win;
	char *wbuf, *sbuf;
	int ret;

	ft_rank = rank;
	if (!launch || rank < 0 || rank > 2 || read_launch_world(launch, &port, ranks, 3)) {
		fprintf(stderr, "test_jobkey: run me as 3 ranks of triad-run\n");
		return 2;
	}
	snprintf(path_a, sizeof(path_a), "/tmp/test_jobkey.%d.A", rank);
	snprintf(path_b, sizeof(path_b), "/tmp/test_jobkey.%d.B", rank);
	if (write_world(path_a, "jobA", port, &ranks[0], &ranks[1]) ||
	    write_world(path_b, "jobB", port, &ranks[2], &ranks[1])) {
		fprintf(stderr, "test_jobkey: cannot write the world files in /tmp\n");
		return 2;
	}
	if (rank == 2)
		return job_b(path_b);

	attr.rank = rank;
	attr.world_file = path_a;
	ret = triad_init(&attr, &ctx);
	if (ret) {
		fprintf(stderr, "rank %d: job A's triad_init: %s\n", rank, strerror(-ret));
		return 1;
	}
	wbuf = calloc(1, WIN_LEN);
	sbuf = malloc(PUT_LEN);
	ret = triad_win_create(ctx, 1, wbuf, WIN_LEN, NULL, &win);
	FT_CHECK(ret == 0, "triad_win_create: %d", ret);
	ft_barrier(ctx);
	if (rank == 0)
		a_sender(ctx, sbuf);
	else
		a_receiver(ctx, wbuf);
	ft_barrier(ctx);
	/* A's own connections stay up and none of them was refused on rank 0. */
	if (rank == 0)
		FT_CHECK(rejected(ctx) == 0, "rank 0 refused %llu requests",
			 (unsigned long long)rejected(ctx));
	for (int p = 0; p < triad_nplanes(ctx); p++) {
		struct triad_conn_stats cs = { .field_mask = TRIAD_CONN_STATS_LINK };

		FT_CHECK(triad_conn_stats(ctx, 1 - rank, p, &cs) == 0 && cs.up,
			 "job A's connection on plane %d is down", p);
	}
	triad_win_destroy(win);
	ret = ft_finish(ctx, "test_jobkey");
	free(wbuf);
	free(sbuf);
	unlink(path_a);
	unlink(path_b);
	return ret;
}
