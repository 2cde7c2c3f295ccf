/* bcast: broadcast a buffer from rank 0 to every rank, across the fabric.
 *
 *     bcast [-s SIZE] [-a greedy|binomial|pipelined|tree|auto] [-r ROOT] [-n REPEAT]
 *
 * One process per rank, TRIAD_WORLD and TRIAD_RANK set (tests/vm/vmn does it
 * for every VM: examples/run-demo).  The root fills its window with a
 * pattern; every rank calls triad_bcast and then only waits (its library
 * serves the copies the root orders); every rank checks every byte and
 * prints when its data was complete; the root prints the total. */
#include <errno.h>
#include <getopt.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "triad.h"

static double now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec * 1e-6;
}

static uint8_t byte_at(int rep, size_t i)
{
	return (uint8_t)(i * 131 + (i >> 12) * 7 + (size_t)rep * 29);
}

static int parse_algo(const char *s, enum triad_bcast_algo *a)
{
	static const char *const names[] = { "auto", "greedy", "binomial", "pipelined", "tree" };

	for (unsigned i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (!strcmp(s, names[i])) {
			*a = (enum triad_bcast_algo)i;
			return 0;
		}
	return -1;
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "size", required_argument, NULL, 's' }, { "algo", required_argument, NULL, 'a' },
		{ "root", required_argument, NULL, 'r' }, { "repeat", required_argument, NULL, 'n' },
		{ "help", no_argument, NULL, 'h' },	  { NULL, 0, NULL, 0 },
	};
	enum triad_bcast_algo algo = TRIAD_BCAST_AUTO;
	const char *algo_name = "auto";
	size_t size = 1 << 20;
	int root = 0, repeat = 1, c, ret, rank, n, bad = 0;
	triad_ctx_t *ctx;
	triad_win_t *win;
	char *buf, *end;

	while ((c = getopt_long(argc, argv, "s:a:r:n:h", opts, NULL)) != -1) {
		switch (c) {
		case 's':
			size = strtoull(optarg, &end, 0);
			if (*end == 'k' || *end == 'K')
				size <<= 10, end++;
			else if (*end == 'm' || *end == 'M')
				size <<= 20, end++;
			if (*end) {
				fprintf(stderr, "bcast: --size %s: not a size (e.g. 4096, 64k, 16M)\n",
					optarg);
				return 2;
			}
			break;
		case 'a':
			if (parse_algo(optarg, &algo)) {
				fprintf(stderr, "bcast: --algo %s: one of greedy, binomial, pipelined, tree, "
					"auto\n", optarg);
				return 2;
			}
			algo_name = optarg;
			break;
		case 'r': root = atoi(optarg); break;
		case 'n': repeat = atoi(optarg); break;
		case 'h':
			printf("usage: triad-bcast [-s SIZE] [-a greedy|binomial|pipelined|tree|auto] [-r ROOT] "
			       "[-n REPEAT]\n");
			return 0;
		default: return 2;
		}
	}
	ret = triad_init(NULL, &ctx);
	if (ret) {
		fprintf(stderr, "bcast: triad_init: %s\n", strerror(-ret));
		return 1;
	}
	rank = triad_rank(ctx);
	n = triad_size(ctx);
	if (root < 0 || root >= n || repeat < 1) {
		fprintf(stderr, "bcast: root %d or repeat %d out of range (%d ranks)\n", root, repeat, n);
		triad_fini(ctx);
		return 2;
	}
	buf = calloc(1, size ? size : 1);
	if (!buf || (ret = triad_win_create(ctx, 1, buf, size ? size : 1, NULL, &win))) {
		fprintf(stderr, "bcast: window of %zu bytes: %s\n", size, strerror(ret ? -ret : ENOMEM));
		return 1;
	}
	for (int rep = 0; rep < repeat && !bad; rep++) {
		triad_req_t *req;
		enum triad_status st;
		double t0, t;

		for (size_t i = 0; i < size; i++)
			buf[i] = rank == root ? (char)byte_at(rep, i) : 0;
		triad_barrier(ctx, -1);
		t0 = now_ms();
		ret = triad_bcast(ctx, root, 1, 0, size, algo, &req);
		if (ret) {
			fprintf(stderr, "rank %d: triad_bcast: %s\n", rank, strerror(-ret));
			bad = 1;
			break;
		}
		/* Nothing to do here but wait: the library serves the root's orders. */
		triad_wait(req, -1);
		t = now_ms() - t0;
		st = triad_req_status(req);
		if (st != TRIAD_S_OK) {
			fprintf(stderr, "rank %d: broadcast failed: %s (rank %d)\n", rank,
				triad_status_str(st), triad_req_failed_rank(req));
			bad = 1;
		}
		triad_req_free(req);
		for (size_t i = 0; i < size && !bad; i++)
			if ((uint8_t)buf[i] != byte_at(rep, i)) {
				fprintf(stderr, "rank %d: byte %zu is wrong\n", rank, i);
				bad = 1;
			}
		printf("rank %d: %zu B %s in %.2f ms: %s\n", rank, size,
		       rank == root ? "sent to every rank" : "received", t,
		       bad ? "FAILED" : "verified");
		fflush(stdout);
		triad_barrier(ctx, 120000);
		if (rank == root && !bad)
			printf("bcast: %zu B from rank %d to %d ranks with %s: %.2f ms in all "
			       "(%.1f MiB/s)\n", size, root, n, algo_name, t,
			       t > 0 ? (double)size / (1 << 20) / (t / 1e3) : 0.0);
	}
	triad_barrier(ctx, 60000);
	triad_fini(ctx);
	free(buf);
	return bad;
}
