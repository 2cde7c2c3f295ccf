/* Put and get on a real fabric, every rank a process.
 *
 *   test_putget [--max-size BYTES] [--random N] [--phases LIST] [--fault fail|refuse]
 *               [--fault-planes last|all] [--delay MS]
 *
 * Phases (default all):
 *   sizes   rank 0 <-> rank 1: put and get of 1 B .. max-size (powers of two
 *           and odd sizes that cross chunk boundaries), small ones alternating
 *           between planes, from unregistered memory and from a window;
 *           every byte verified at the target (put) or the initiator (get).
 *   random  every rank issues N random puts/gets to random peers on random
 *           planes, up to 16 outstanding; every put lands in a slot of the
 *           target's window reserved to this initiator and is mirrored in a
 *           local shadow; gets read the owner's fixed pattern; at the end each
 *           rank reads back every region it wrote and compares with its shadow.
 *   stripe  rank 0 <-> rank 1: puts and gets with TRIAD_F_STRIPE of sizes from
 *           TRIAD_STRIPE_MIN (default 256 KiB) up, verified; every plane
 *           carried a share of each (the per-plane byte counters), one below
 *           the threshold took one plane; then a striped put while one of
 *           its planes is failed under it (triad_plane_fail) still completes
 *           OK with every byte in place.
 *   errors  unknown window, out of bounds, read-only window, bad arguments;
 *           then the same connections still work and counted no errors.
 *   faults  as random, no op pinned, while every rank in turn faults the
 *           last plane under the traffic, 4 times (--fault fail: triad_plane_fail;
 *           --fault refuse: triad_plane_refuse_writes, the responder's silent
 *           break).  Every op must complete OK (done again on a live plane),
 *           and a get's buffer is zeroed before it is issued, so that one
 *           that reports OK without having written its data shows.
 *           --fault-planes all: every plane at once, so that the rank is
 *           left with no connection to anyone (one plane or more): every op
 *           must still complete OK, held until the pair has reconnected
 *           (TRIAD_REJOIN_MS) and done again then.
 *   late    (asked for; 2 ranks, 2 planes or more) nothing of a put lands after
 *           it completed: rank 0's home plane to rank 1 is delayed by
 *           --delay MS (netem), rank 0 puts LATE_N blocks to rank 1 and fails
 *           that plane under them (triad_plane_fail), so each is done again on
 *           another plane while its first attempt's WRITE may still sit in
 *           the delay.  Every put must complete OK; then rank 1 rewrites every
 *           block, waits three delays, and no block may hold the put's bytes
 *           again (the first attempt executed by rank 1's end of the broken
 *           connection after the completion: the redo fence must prevent it).
 *           --fault-planes all: rank 0 fails every plane, so that no plane is
 *           left to tell rank 1 at once; the puts are done again once the
 *           pair has reconnected on the plane without the delay.
 */
#include <getopt.h>
#include <unistd.h>

#include "ft.h"

#define WIN_MAIN 1
#define WIN_RO 2
#define SLOT 65536
#define NSLOT 16
#define REGION (SLOT * NSLOT)  /* per initiator, in every target's window */
#define PAT_LEN (1 << 20)      /* owner-filled pattern area, for gets */
#define NFAULTS 4              /* faults: plane faults by each rank */

static uint64_t max_size = 64ull << 20;
static int late_delay_ms = 200;
static int nrandom = 250;
static const char *fault = "fail"; /* faults: what is done to a plane */
static int fault_all;		   /* faults: to every plane at once */
static int size, rank, nplanes;
static char *win_buf;
static uint64_t win_len;

/* Window layout: [0, max_size + 8 KiB) sizes | PAT_LEN pattern | size x REGION */
static uint64_t sizes_len(void) { return max_size + 8192; }
static uint64_t pat_off(void) { return sizes_len(); }
static uint64_t region_off(int initiator) { return pat_off() + PAT_LEN + (uint64_t)initiator * REGION; }

static void phase_sizes(triad_ctx_t *ctx)
{
	uint64_t list[64];
	int n = 0;
	char *src = malloc(max_size), *dst = malloc(max_size);

	FT_CHECK(src && dst, "no memory for %llu bytes", (unsigned long long)max_size);
	if (!src || !dst)
		exit(1);
	for (uint64_t s = 1; s <= max_size; s *= 2)
		list[n++] = s;
	const uint64_t odd[] = { 3, 1000, 4097, 65537, (1 << 20) + 13, 3 * (1 << 20) + 5,
				 max_size - 1 };
	for (unsigned i = 0; i < sizeof(odd) / sizeof(odd[0]); i++)
		if (odd[i] <= max_size)
			list[n++] = odd[i];

	for (int i = 0; i < n && size >= 2; i++) {
		uint64_t s = list[i], off = ((uint64_t)i * 4099) % 8192;
		/* Small operations alternate planes; large ones take the home plane.
		 * Every other one starts from registered memory (this rank's window). */
		unsigned flags = s <= (1 << 20) ? TRIAD_F_PLANE(i % nplanes) : 0;
		int from_win = (i & 1) && s <= 8192;
		char *buf = from_win ? win_buf + pat_off() - 8192 : src;
		triad_req_t *req;
		enum triad_status st;
		int ret;

		if (rank == 0) {
			ft_fill(buf, s, (uint32_t)i, 0);
			ret = triad_put(ctx, buf, s, 1, WIN_MAIN, off, flags, &req);
			FT_CHECK(ret == 0, "put %llu: %s", (unsigned long long)s, strerror(-ret));
			if (!ret) {
				st = ft_wait(req, 120000);
				FT_CHECK(st == TRIAD_S_OK, "put %llu B: %s", (unsigned long long)s,
					 triad_status_str(st));
			}
		}
		ft_barrier(ctx);
		if (rank == 1) {
			int64_t bad = ft_verify(win_buf + off, s, (uint32_t)i, 0);

			FT_CHECK(bad < 0, "put of %llu B: byte %lld wrong", (unsigned long long)s,
				 (long long)bad);
			ft_fill(win_buf + off, s, (uint32_t)i + 1000, 0);
		}
		ft_barrier(ctx);
		if (rank == 0) {
			memset(buf, 0, s);
			ret = triad_get(ctx, buf, s, 1, WIN_MAIN, off, flags, &req);
			FT_CHECK(ret == 0, "get %llu: %s", (unsigned long long)s, strerror(-ret));
			if (!ret) {
				st = ft_wait(req, 120000);
				FT_CHECK(st == TRIAD_S_OK, "get %llu B: %s", (unsigned long long)s,
					 triad_status_str(st));
				int64_t bad = ft_verify(buf, s, (uint32_t)i + 1000, 0);

				FT_CHECK(bad < 0, "get of %llu B: byte %lld wrong",
					 (unsigned long long)s, (long long)bad);
			}
		}
	}
	if (rank == 0)
		printf("sizes: %d sizes from 1 B to %llu B, put and get, verified\n", n,
		       (unsigned long long)max_size);
	free(src);
	free(dst);
}

static uint64_t tx_bytes(triad_ctx_t *ctx, int peer, int plane)
{
	struct triad_conn_stats cs = { .field_mask = TRIAD_CONN_STATS_LINK };

	return triad_conn_stats(ctx, peer, plane, &cs) == 0 ? cs.tx_bytes : 0;
}

/* One striped put (get: get) of s bytes at offset 0 of rank 1's window,
 * checked; returns the bytes each plane carried. */
static void striped(triad_ctx_t *ctx, char *buf, uint64_t s, int get, uint32_t seed,
		    int fail_plane, uint64_t *per_plane)
{
	triad_req_t *req;
	enum triad_status st;
	uint64_t before[TRIAD_MAX_PLANES];
	int ret;

	for (int p = 0; p < nplanes; p++)
		before[p] = tx_bytes(ctx, 1, p);
	ret = get ? triad_get(ctx, buf, s, 1, WIN_MAIN, 0, TRIAD_F_STRIPE, &req)
		  : triad_put(ctx, buf, s, 1, WIN_MAIN, 0, TRIAD_F_STRIPE, &req);
	FT_CHECK(ret == 0, "striped %s of %llu B: %s", get ? "get" : "put", (unsigned long long)s,
		 strerror(-ret));
	if (ret)
		return;
	if (fail_plane >= 0)
		FT_CHECK(triad_plane_fail(ctx, fail_plane) == 0, "triad_plane_fail");
	st = ft_wait(req, 120000);
	FT_CHECK(st == TRIAD_S_OK, "striped %s of %llu B: %s", get ? "get" : "put",
		 (unsigned long long)s, triad_status_str(st));
	if (get) {
		int64_t bad = ft_verify(buf, s, seed, 0);

		FT_CHECK(bad < 0, "striped get of %llu B: byte %lld wrong", (unsigned long long)s,
			 (long long)bad);
	}
	for (int p = 0; p < nplanes; p++)
		per_plane[p] = tx_bytes(ctx, 1, p) - before[p];
}

static void phase_stripe(triad_ctx_t *ctx)
{
	const uint64_t sizes[] = { 256 << 10, (1 << 20) + 13, (8 << 20) + 5, 16 << 20 };
	const uint64_t max = 16 << 20;
	char *buf = calloc(1, max);
	uint64_t per[TRIAD_MAX_PLANES];
	triad_req_t *req;

	FT_CHECK(buf != NULL, "no memory");
	if (!buf || size < 2 || max > max_size)
		goto out;
	if (rank == 0)
		FT_CHECK(triad_put(ctx, buf, 1, 1, WIN_MAIN, 0, TRIAD_F_STRIPE | TRIAD_F_PLANE(0),
				   &req) == -EINVAL, "a striped put pinned to a plane is refused");
	for (unsigned i = 0; i <= sizeof(sizes) / sizeof(sizes[0]); i++) {
		/* The last round: 16 MiB again, with a plane failed under it. */
		int last = i == sizeof(sizes) / sizeof(sizes[0]);
		uint64_t s = last ? max : sizes[i], sum = 0;

		if (rank == 0) {
			ft_fill(buf, s, 500 + i, 0);
			striped(ctx, buf, s, 0, 0, last ? nplanes - 1 : -1, per);
			for (int p = 0; p < nplanes; p++) {
				sum += per[p];
				if (!last)
					FT_CHECK(per[p] > 0, "striped put of %llu B: plane %d carried none",
						 (unsigned long long)s, p);
			}
			FT_CHECK(sum >= s, "striped put of %llu B: the planes carried %llu B",
				 (unsigned long long)s, (unsigned long long)sum);
		}
		ft_barrier(ctx);
		if (rank == 1) {
			int64_t bad = ft_verify(win_buf, s, 500 + i, 0);

			FT_CHECK(bad < 0, "striped put of %llu B (round %u): byte %lld wrong",
				 (unsigned long long)s, i, (long long)bad);
			ft_fill(win_buf, s, 600 + i, 0);
		}
		ft_barrier(ctx);
		if (rank == 0 && !last) {
			memset(buf, 0, s);
			striped(ctx, buf, s, 1, 600 + i, -1, per);
		}
		ft_barrier(ctx);
	}
	if (rank == 0) {
		/* Below the threshold: one plane. */
		int used = 0;

		ft_fill(buf, 4096, 700, 0);
		striped(ctx, buf, 4096, 0, 0, -1, per);
		for (int p = 0; p < nplanes; p++)
			used += per[p] > 0;
		FT_CHECK(used == 1, "a 4 KiB striped put used %d planes", used);
		printf("stripe: puts and gets of 256 KiB .. 16 MiB over %d planes, and one with a "
		       "plane failed under it, verified\n", nplanes);
	}
	/* The failed plane's connections come back by themselves (the next
	 * phases pin operations to every plane). */
	for (int r = 0; rank == 0 && r < size; r++) {
		struct triad_conn_stats cs = { .field_mask = TRIAD_CONN_STATS_LINK };

		for (int t = 0; r != rank && t < 3000; t++) {
			if (triad_conn_stats(ctx, r, nplanes - 1, &cs) == 0 && cs.up)
				break;
			usleep(20000);
		}
		FT_CHECK(r == rank || cs.up, "plane %d to rank %d not rebuilt after its failure",
			 nplanes - 1, r);
	}
out:
	ft_barrier(ctx);
	free(buf);
}

struct slot_op {
	triad_req_t *req;
	int get, peer;
	char *buf;
	uint64_t off, len; /* off: within the owner's pattern area, for gets */
};

static void reap(struct slot_op *op)
{
	enum triad_status st;

	if (!op->req)
		return;
	st = ft_wait(op->req, 120000);
	FT_CHECK(st == TRIAD_S_OK, "%s of %llu B to rank %d: %s", op->get ? "get" : "put",
		 (unsigned long long)op->len, op->peer, triad_status_str(st));
	if (op->get && st == TRIAD_S_OK) {
		int64_t bad = ft_verify(op->buf, op->len, 7000 + (uint32_t)op->peer, op->off);

		FT_CHECK(bad < 0, "get of %llu B from rank %d: byte %lld wrong",
			 (unsigned long long)op->len, op->peer, (long long)bad);
	}
	op->req = NULL;
}

/* random (faults 0) and faults (1). */
static void phase_ops(triad_ctx_t *ctx, int faults)
{
	char *shadow = calloc((size_t)size, REGION); /* what this rank wrote to each peer */
	char *bufs = malloc((size_t)NSLOT * SLOT), *back = malloc(REGION);
	struct slot_op ops[NSLOT] = { 0 };
	unsigned seed = 12345u + (unsigned)rank;
	int nput = 0, nget = 0;

	if (!shadow || !bufs || !back)
		exit(1);
	/* Each target's regions start as zero; the owner's pattern area is fixed. */
	memset(win_buf + region_off(0), 0, (size_t)size * REGION);
	ft_fill(win_buf + pat_off(), PAT_LEN, 7000 + (uint32_t)rank, 0);
	ft_barrier(ctx);
	/* faults: rank r's k-th fault comes at op (k * size + r + 1) * step. */
	int step = nrandom / (NFAULTS * size + 1), nfault = 0;
	int can_fault = faults && size >= 2 && (nplanes > 1 || fault_all);

	for (int i = 0; i < nrandom && size >= 2; i++) {
		int s = i % NSLOT, peer, ret;
		struct slot_op *op = &ops[s];
		uint64_t len, soff;
		unsigned flags;

		reap(op); /* the slot is free again */
		if (can_fault && step && nfault < NFAULTS && i == ((nfault * size + rank + 1) * step)) {
			/* The last plane, so that plane 0 stays live for the ops done
			 * again; or every plane, and they wait for a connection back. */
			for (int p = fault_all ? 0 : nplanes - 1; p < nplanes; p++)
				ft_fault_plane(ctx, p, !strcmp(fault, "refuse"));
			nfault++;
		}
		do
			peer = rand_r(&seed) % size;
		while (peer == rank);
		flags = rand_r(&seed) % 3 ? TRIAD_F_PLANE(rand_r(&seed) % nplanes) : 0;
		if (faults) /* a pinned op fails with its plane */
			flags = 0;
		len = 1 + (uint64_t)rand_r(&seed) % (rand_r(&seed) % 4 ? 512 : SLOT);
		soff = (uint64_t)rand_r(&seed) % (SLOT - len + 1);
		op->buf = bufs + (size_t)s * SLOT;
		op->peer = peer;
		op->len = len;
		op->get = rand_r(&seed) % 2;
		if (op->get) {
			op->off = (uint64_t)rand_r(&seed) % (PAT_LEN - len + 1);
			memset(op->buf, 0, len); /* a get that wrote nothing shows */
			ret = triad_get(ctx, op->buf, len, peer, WIN_MAIN, pat_off() + op->off,
					flags, &op->req);
			nget++;
		} else {
			uint64_t roff = (uint64_t)s * SLOT + soff;

			ft_fill(op->buf, len, (uint32_t)i, 0);
			memcpy(shadow + (size_t)peer * REGION + roff, op->buf, len);
			ret = triad_put(ctx, op->buf, len, peer, WIN_MAIN, region_off(rank) + roff,
					flags, &op->req);
			nput++;
		}
		FT_CHECK(ret == 0, "random op %d: %s", i, strerror(-ret));
		if (ret)
			op->req = NULL;
	}
	for (int s = 0; s < NSLOT; s++)
		reap(&ops[s]);
	ft_barrier(ctx);
	/* Read back every region this rank wrote and compare with the shadow. */
	for (int peer = 0; peer < size; peer++) {
		triad_req_t *req;
		enum triad_status st;

		if (peer == rank)
			continue;
		FT_CHECK(triad_get(ctx, back, REGION, peer, WIN_MAIN, region_off(rank), 0, &req) == 0,
			 "read back from rank %d", peer);
		st = ft_wait(req, 120000);
		FT_CHECK(st == TRIAD_S_OK, "read back from rank %d: %s", peer, triad_status_str(st));
		FT_CHECK(memcmp(back, shadow + (size_t)peer * REGION, REGION) == 0,
			 "rank %d's region for rank %d differs from what was put", peer, rank);
	}
	FT_CHECK(!can_fault || nfault == NFAULTS, "rank %d made %d of its %d plane faults "
		 "(--random %d is too few)", rank, nfault, NFAULTS, nrandom);
	if (faults) /* what it did, not what it meant to do */
		printf("faults: rank %d: %d puts, %d gets to %d peers verified, %d fault(s) of %s "
		       "by this rank\n", rank, nput, nget, size - 1, nfault,
		       fault_all ? "every plane at once" : "the last plane");
	else
		printf("random: rank %d: %d puts, %d gets to %d peers verified\n", rank, nput,
		       nget, size - 1);
	ft_barrier(ctx);
	free(shadow);
	free(bufs);
	free(back);
}

static enum triad_status op_status(triad_ctx_t *ctx, int get, int peer, uint32_t win,
				   uint64_t off, uint64_t len, unsigned flags)
{
	static char buf[64];
	triad_req_t *req;
	int ret = get ? triad_get(ctx, buf, len, peer, win, off, flags, &req)
		      : triad_put(ctx, buf, len, peer, win, off, flags, &req);

	if (ret)
		return TRIAD_S_MAX; /* not even submitted */
	return ft_wait(req, 60000);
}

#define LATE_N 96
#define LATE_BLOCK 4096
#define LATE_OWNER 0x5a /* what rank 1 writes over every block once complete */

static void phase_late(triad_ctx_t *ctx)
{
	const int plane = 1 % nplanes; /* rank 0's home plane to rank 1 */
	int wrong = 0;

	if (size < 2 || nplanes < 2) {
		if (rank == 0)
			printf("late: needs 2 ranks and 2 planes: not run\n");
		FT_CHECK(0, "the late phase needs 2 ranks and 2 planes (%d, %d)", size, nplanes);
		return;
	}
	ft_barrier(ctx);
	if (rank == 0) {
		static triad_req_t *req[LATE_N];
		char *src = malloc(LATE_N * LATE_BLOCK);
		double t0, t1;
		int ret, ok = 0;

		FT_CHECK(src, "no memory");
		if (!src)
			return;
		ft_fill(src, LATE_N * LATE_BLOCK, 0x1a7e, 0);
		/* The window's description first, and both lanes up: the puts
		 * below go out at once. */
		ret = triad_put(ctx, src, 8, 1, WIN_MAIN, 0, 0, &req[0]);
		FT_CHECK(ret == 0 && ft_wait(req[0], 30000) == TRIAD_S_OK, "first put");
		FT_CHECK(ft_ctl("netem 0 %d delay %dms", plane, late_delay_ms) == 0, "netem");
		for (int i = 0; i < LATE_N; i++) {
			ret = triad_put(ctx, src + (size_t)i * LATE_BLOCK, LATE_BLOCK, 1, WIN_MAIN,
					(uint64_t)i * LATE_BLOCK, 0, &req[i]);
			FT_CHECK(ret == 0, "put %d: %s", i, strerror(-ret));
		}
		usleep(20000); /* their WRITEs reach the delay */
		t0 = ft_now_s();
		for (int q = 0; q < nplanes; q++)
			if (q == plane || fault_all)
				ft_fault_plane(ctx, q, 0);
		for (int i = 0; i < LATE_N; i++) {
			enum triad_status st = ft_wait(req[i], 30000);

			ok += st == TRIAD_S_OK;
			FT_CHECK(st == TRIAD_S_OK, "put %d: %s", i, triad_status_str(st));
		}
		t1 = ft_now_s();
		printf("late: %d of %d puts complete OK %.1f ms after plane %d failed (delay %d ms)\n",
		       ok, LATE_N, (t1 - t0) * 1e3, plane, late_delay_ms);
		free(src);
	}
	ft_barrier(ctx); /* rank 1 learns that every put completed */
	if (rank == 1) {
		memset(win_buf, LATE_OWNER, LATE_N * LATE_BLOCK);
		usleep((useconds_t)(3 * late_delay_ms + 200) * 1000);
		for (int i = 0; i < LATE_N; i++) {
			const unsigned char *b = (const unsigned char *)win_buf + (size_t)i * LATE_BLOCK;

			for (int k = 0; k < LATE_BLOCK; k++)
				if (b[k] != LATE_OWNER) {
					wrong++;
					break;
				}
		}
		printf("late: %d of %d blocks written again after their put completed\n", wrong,
		       LATE_N);
		FT_CHECK(wrong == 0, "%d of %d blocks were written after their put completed",
			 wrong, LATE_N);
	}
	ft_barrier(ctx);
	if (rank == 0)
		FT_CHECK(ft_ctl("clear 0 %d", plane) == 0, "netem clear");
	ft_barrier(ctx);
}

static void phase_errors(triad_ctx_t *ctx)
{
	char ro[4096];
	triad_win_t *w_ro = NULL, *dup;
	triad_req_t *req;
	char one = 1;
	int p;

	ft_fill(ro, sizeof(ro), 99, 0);
	FT_CHECK(triad_win_create(ctx, WIN_RO, ro, sizeof(ro),
				  &(struct triad_win_attr){ .field_mask = TRIAD_WIN_ATTR_ACCESS,
							    .access = TRIAD_WIN_READ },
				  &w_ro) == 0, "read-only window");
	FT_CHECK(triad_win_create(ctx, WIN_MAIN, ro, sizeof(ro), NULL, &dup) == -EEXIST,
		 "a second window 1 must give -EEXIST");
	FT_CHECK(triad_win_create(ctx, 77, ro, 0, NULL, &dup) == -EINVAL, "len 0 window");
	FT_CHECK(triad_win_create(ctx, 77, NULL, 10, NULL, &dup) == -EINVAL, "NULL window");
	ft_barrier(ctx);
	if (rank == 0 && size >= 2) {
		enum triad_status st;

		st = op_status(ctx, 0, 1, 999, 0, 8, 0);
		FT_CHECK(st == TRIAD_S_NO_WINDOW, "put to window 999: %s", triad_status_str(st));
		st = op_status(ctx, 1, 1, 999, 0, 8, 0);
		FT_CHECK(st == TRIAD_S_NO_WINDOW, "get from window 999: %s", triad_status_str(st));
		st = op_status(ctx, 0, 1, WIN_MAIN, win_len - 10, 20, 0);
		FT_CHECK(st == TRIAD_S_OUT_OF_BOUNDS, "put across the end: %s", triad_status_str(st));
		st = op_status(ctx, 1, 1, WIN_MAIN, win_len, 1, TRIAD_F_PLANE(nplanes - 1));
		FT_CHECK(st == TRIAD_S_OUT_OF_BOUNDS, "get past the end: %s", triad_status_str(st));
		st = op_status(ctx, 0, 1, WIN_MAIN, UINT64_MAX - 4, 8, 0);
		FT_CHECK(st == TRIAD_S_OUT_OF_BOUNDS, "offset that wraps: %s", triad_status_str(st));
		st = op_status(ctx, 0, 1, WIN_RO, 0, 8, 0);
		FT_CHECK(st == TRIAD_S_ACCESS, "put to a read-only window: %s", triad_status_str(st));
		st = op_status(ctx, 1, 1, WIN_RO, 0, 8, 0);
		FT_CHECK(st == TRIAD_S_OK, "get from a read-only window: %s", triad_status_str(st));
		st = op_status(ctx, 0, 0, 999, 0, 8, 0);
		FT_CHECK(st == TRIAD_S_NO_WINDOW, "put to own window 999: %s", triad_status_str(st));
		st = op_status(ctx, 0, 0, WIN_MAIN, 0, 8, 0);
		FT_CHECK(st == TRIAD_S_OK, "put to own window: %s", triad_status_str(st));

		FT_CHECK(triad_put(ctx, &one, 1, size, WIN_MAIN, 0, 0, &req) == -EINVAL, "rank = size");
		FT_CHECK(triad_put(ctx, &one, 1, -1, WIN_MAIN, 0, 0, &req) == -EINVAL, "rank -1");
		/* req_p NULL is allowed (a request-less put, see test_flush): the
		 * argument checks still apply to it. */
		FT_CHECK(triad_put(ctx, &one, 1, size, WIN_MAIN, 0, 0, NULL) == -EINVAL,
			 "rank = size, no req_p");
		FT_CHECK(triad_put(ctx, NULL, 1, 1, WIN_MAIN, 0, 0, &req) == -EINVAL, "NULL buf");
		FT_CHECK(triad_get(ctx, &one, 1, 1, WIN_MAIN, 0, 0x4000, &req) == -EINVAL, "bad flags");
		FT_CHECK(triad_get(ctx, &one, 1, 1, WIN_MAIN, 0, TRIAD_F_PLANE(nplanes), &req) == -EINVAL,
			 "plane out of range");

		/* The target stays healthy: every plane still carries put and get,
		 * and no connection saw a transport error. */
		for (p = 0; p < nplanes; p++) {
			struct triad_conn_stats cs = { .field_mask = TRIAD_CONN_STATS_ALL };

			st = op_status(ctx, 0, 1, WIN_MAIN, 0, 8, TRIAD_F_PLANE(p));
			FT_CHECK(st == TRIAD_S_OK, "put after errors, plane %d: %s", p, triad_status_str(st));
			st = op_status(ctx, 1, 1, WIN_MAIN, 0, 8, TRIAD_F_PLANE(p));
			FT_CHECK(st == TRIAD_S_OK, "get after errors, plane %d: %s", p, triad_status_str(st));
			FT_CHECK(triad_conn_stats(ctx, 1, p, &cs) == 0 && cs.up && cs.errors == 0,
				 "plane %d: up %d errors %llu", p, cs.up, (unsigned long long)cs.errors);
		}
		printf("errors: unknown window, bounds, access and bad arguments rejected; "
		       "connections healthy\n");
	}
	ft_barrier(ctx);
	triad_win_destroy(w_ro);
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "max-size", required_argument, NULL, 's' },
		{ "random", required_argument, NULL, 'r' },
		{ "phases", required_argument, NULL, 'p' },
		{ "fault", required_argument, NULL, 'f' },
		{ "fault-planes", required_argument, NULL, 'F' },
		{ "delay", required_argument, NULL, 'd' },
		{ NULL, 0, NULL, 0 },
	};
	const char *phases = "sizes,stripe,random,errors"; /* faults: asked for */
	triad_ctx_t *ctx;
	triad_win_t *win;
	int c, ret;

	while ((c = getopt_long(argc, argv, "s:r:p:f:F:d:", opts, NULL)) != -1) {
		switch (c) {
		case 's': max_size = strtoull(optarg, NULL, 0); break;
		case 'r': nrandom = atoi(optarg); break;
		case 'p': phases = optarg; break;
		case 'f': fault = optarg; break;
		case 'd':
			late_delay_ms = atoi(optarg);
			if (late_delay_ms < 1 || late_delay_ms > 10000) {
				fprintf(stderr, "--delay: '%s' is not 1 .. 10000 ms\n", optarg);
				return 2;
			}
			break;
		case 'F':
			if (strcmp(optarg, "last") && strcmp(optarg, "all")) {
				fprintf(stderr, "--fault-planes: '%s' is neither last nor all\n",
					optarg);
				return 2;
			}
			fault_all = !strcmp(optarg, "all");
			break;
		default:
			fprintf(stderr, "usage: %s [--max-size B] [--random N] [--phases LIST] "
				"[--fault fail|refuse] [--fault-planes last|all] [--delay MS]\n",
				argv[0]);
			return 2;
		}
	}
	if (strcmp(fault, "fail") && strcmp(fault, "refuse")) {
		fprintf(stderr, "--fault: '%s' is neither fail nor refuse\n", fault);
		return 2;
	}
	if (max_size < 16384) {
		fprintf(stderr, "--max-size must be at least 16384\n");
		return 2;
	}
	ctx = ft_init();
	rank = triad_rank(ctx);
	size = triad_size(ctx);
	nplanes = triad_nplanes(ctx);
	win_len = region_off(size);
	win_buf = calloc(1, win_len);
	if (!win_buf)
		return 1;
	ret = triad_win_create(ctx, WIN_MAIN, win_buf, win_len, NULL, &win);
	FT_CHECK(ret == 0, "triad_win_create: %s", strerror(-ret));
	ft_barrier(ctx);
	if (strstr(phases, "sizes"))
		phase_sizes(ctx);
	ft_barrier(ctx);
	if (strstr(phases, "stripe"))
		phase_stripe(ctx);
	if (strstr(phases, "random"))
		phase_ops(ctx, 0);
	if (strstr(phases, "faults"))
		phase_ops(ctx, 1);
	if (strstr(phases, "late"))
		phase_late(ctx);
	if (strstr(phases, "errors"))
		phase_errors(ctx);
	ret = ft_finish(ctx, "test_putget");
	free(win_buf);
	return ret;
}
