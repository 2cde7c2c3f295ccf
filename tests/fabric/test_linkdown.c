/* A plane's link goes down: operations on it fail with an error status in
 * bounded time instead of hanging, and the other plane keeps working.
 * (Moving traffic to another plane is the failover issue's job.)
 *
 * 2 ranks x >= 2 planes.  The fault is injected with the harness's
 * fabric-ctl (path in $TRIAD_FABRIC_CTL): rank 0's port on the pair's home plane
 * (plane 1; named `last` below, which it is with 2 planes).
 *   1. puts on every plane work;
 *   2. rank 0's link on plane L goes down;
 *   3. rank 0: a put pinned to plane L fails (plane down or peer unreachable);
 *      rank 1: a put pinned to plane L (towards the dead port) fails too,
 *      within TRIAD_ACK_TIMEOUT x TRIAD_RETRY_COUNT, not a hang;
 *   4. on plane 0 both directions still work; the link comes back up;
 *   5. the pair reconnects plane L by itself, its flow control restarts
 *      (every slot of the peer free again after its first BSM), and a put
 *      pinned to plane L works.
 * And the failover of what is not pinned: unpinned puts of rank 0, whose
 * home plane is L, in flight when the link goes down, all complete OK
 * (done again, whole, on plane L + 1) with their bytes in place; an unpinned
 * put during the fault takes the switch's failover plane L + 1 (plane 0 with
 * 2 planes); after the reconnect the pair is back on
 * its home plane L (the per-plane put counters show it).  Between those
 * puts go small request-less ones (1 to 64 bytes, light puts: no request,
 * their bytes in the work request), each into its own slot: those the
 * fault flushes are done again too, and after one flush every slot holds
 * its bytes, and nothing but them.  Then the same for small puts alone at a
 * cut of the home plane (frames vanish, the port stays up), where every one
 * posted waits in flight until the RC retries break the lane.
 * Every plane down at once (rank 0's links on both): every request
 * completes, OK or with an error, nothing hangs; the pair reconnects when
 * the links return (the side that could not hear of it finds its
 * connections stale at the peer's reconnect), and more than a receive
 * window of messages afterwards all arrive: the numbers of the messages
 * lost in the outage were skipped (SEQ_SKIP), not waited for. */
#include <stdatomic.h>
#include <unistd.h>

#include "ft.h"

/* Runs fabric-ctl VERB NODE PLANE; with bg, in the background (returns at once). */
static int ctl_run(const char *verb, int node, int plane, int bg)
{
	return ft_ctl("%s %d %d%s", verb, node, plane, bg ? " >/dev/null 2>&1 &" : "");
}

static int ctl(const char *verb, int node, int plane)
{
	return ctl_run(verb, node, plane, 0);
}

static enum triad_status put_on(triad_ctx_t *ctx, int peer, int plane, int timeout_ms)
{
	static char buf[4096];
	triad_req_t *req;

	if (triad_put(ctx, buf, sizeof(buf), peer, 1, 0, TRIAD_F_PLANE(plane), &req))
		return TRIAD_S_MAX;
	return ft_wait(req, timeout_ms);
}

static uint64_t puts_on(triad_ctx_t *ctx, int peer, int plane)
{
	struct triad_conn_stats cs = { .field_mask = TRIAD_CONN_STATS_LINK };

	return triad_conn_stats(ctx, peer, plane, &cs) == 0 ? cs.puts : 0;
}

/* An unpinned put; checks that it took plane want. */
static void put_takes(triad_ctx_t *ctx, int peer, int want, const char *when)
{
	static char buf[4096];
	uint64_t before = puts_on(ctx, peer, want);
	enum triad_status st = TRIAD_S_MAX;
	triad_req_t *req;

	if (triad_put(ctx, buf, sizeof(buf), peer, 1, 0, 0, &req) == 0)
		st = ft_wait(req, 60000);
	FT_CHECK(st == TRIAD_S_OK, "unpinned put %s: %s", when, triad_status_str(st));
	FT_CHECK(puts_on(ctx, peer, want) == before + 1, "unpinned put %s did not take plane %d",
		 when, want);
}

#define NFLY 512 /* 32 MiB: about a second of streaming, the fault lands in it */
#define FLY (1 << 16) /* bytes of each */
#define SMALL 64      /* the slot of a small put; put i carries 1 + i % SMALL bytes */

static int is_failure(enum triad_status st)
{
	return st == TRIAD_S_PLANE_DOWN || st == TRIAD_S_UNREACHABLE || st == TRIAD_S_TRANSPORT;
}

static uint64_t connects(triad_ctx_t *ctx, int peer, int nplanes, int *up)
{
	struct triad_conn_stats cs = { .field_mask = TRIAD_CONN_STATS_ALL };
	uint64_t n = 0;

	*up = 0;
	for (int p = 0; p < nplanes; p++) {
		if (triad_conn_stats(ctx, peer, p, &cs) == 0) {
			n += cs.connects;
			*up += cs.up;
		}
	}
	return n;
}

#define AM_ID 3
#define NBURST 48  /* active messages in flight when every plane goes down */
#define NAFTER 200 /* after the outage: more than the 64-message receive window */

static _Atomic long after_seen; /* the handler may run on the progress thread */
static triad_am_msg_t *kept[NBURST];
static int nkept;

/* Rank 1 keeps the burst's messages (its slots fill, the rest of the burst
 * waits at rank 0, and the outage loses it) and counts the ones after. */
static int am_count(void *arg, int src, const void *data, size_t len, triad_am_msg_t *msg)
{
	(void)arg;
	(void)src;
	if (len == 1 && *(const char *)data == 'a')
		atomic_fetch_add(&after_seen, 1);
	if (len == 1 && *(const char *)data == 'b' && nkept < NBURST) {
		kept[nkept++] = msg;
		return TRIAD_AM_KEEP;
	}
	return TRIAD_AM_DONE;
}

/* Where rank 0 tells rank 1 that every link is down. */
static const char *outage_flag(void)
{
	static char path[600];

	if (!path[0])
		snprintf(path, sizeof(path), "%s.outage", getenv("TRIAD_WORLD"));
	return path;
}

static void release_kept(void)
{
	while (nkept)
		triad_am_release(kept[--nkept]);
}

/* Waits until every plane to peer is up (1) or every one is down (0). */
static int wait_all(triad_ctx_t *ctx, int peer, int nplanes, int want, int seconds)
{
	int up = 0;

	for (int i = 0; i < seconds * 10; i++) {
		connects(ctx, peer, nplanes, &up);
		if (want ? up == nplanes : up == 0)
			return 1;
		usleep(100000);
	}
	return 0;
}

static void all_planes_down(triad_ctx_t *ctx, int rank, int peer, int nplanes)
{
	static const char burst = 'b', after = 'a';
	triad_req_t *req[NAFTER];
	int ok = 0, failed = 0;

	ft_barrier(ctx);
	if (rank == 0) {
		for (int i = 0; i < NBURST; i++)
			FT_CHECK(triad_am_send(ctx, peer, AM_ID, &burst, 1, TRIAD_PRIO_LOW, &req[i]) == 0,
				 "am");
		for (int p = 0; p < nplanes; p++)
			FT_CHECK(ctl("down", 0, p) == 0, "fabric-ctl down 0 %d", p);
		for (int i = 0; i < NBURST; i++) {
			enum triad_status st = ft_wait(req[i], 30000);

			ok += st == TRIAD_S_OK;
			failed += st != TRIAD_S_OK && st != TRIAD_S_PENDING;
			FT_CHECK(st != TRIAD_S_PENDING, "message %d still pending 30 s after every "
				 "plane went down", i);
		}
		printf("rank 0: every plane down: of %d messages in flight, %d arrived, %d failed\n",
		       NBURST, ok, failed);
		FT_CHECK(wait_all(ctx, peer, nplanes, 0, 30), "a plane still up with every link down");
		{
			FILE *f = fopen(outage_flag(), "w");

			FT_CHECK(f && fclose(f) == 0, "cannot write %s", outage_flag());
		}
		for (int p = 0; p < nplanes; p++)
			FT_CHECK(ctl("up", 0, p) == 0, "fabric-ctl up 0 %d", p);
	}
	if (rank == 1) {
		/* It hears of the last plane's loss only from rank 0's reconnect,
		 * which finds that connection stale; it drains once the kept
		 * messages are given back: once every link is down (rank 0 says
		 * so in a file next to the world file). */
		int i;

		for (i = 0; i < 600 && access(outage_flag(), F_OK); i++)
			usleep(100000);
		FT_CHECK(i < 600, "rank 0 never said every link was down");
		printf("rank 1: every link down; giving back the %d messages it kept\n", nkept);
		release_kept();
	}
	/* Both sides: every plane back. */
	FT_CHECK(wait_all(ctx, peer, nplanes, 1, 120), "the planes did not all come back in 120 s");
	release_kept();
	ft_barrier(ctx);
	if (rank == 0) {
		for (int i = 0; i < NAFTER; i++)
			FT_CHECK(triad_am_send(ctx, peer, AM_ID, &after, 1, TRIAD_PRIO_LOW, &req[i]) == 0,
				 "am");
		for (int i = 0; i < NAFTER; i++) {
			enum triad_status st = ft_wait(req[i], 60000);

			FT_CHECK(st == TRIAD_S_OK, "message %d after the outage: %s", i,
				 triad_status_str(st));
		}
	}
	ft_barrier(ctx);
	if (rank == 0)
		unlink(outage_flag());
	if (rank == 1) {
		/* Each of rank 0's requests completed once its message was in
		 * this rank's memory, and the barrier (of higher priority, on
		 * either plane) may overtake the handling of the last ones:
		 * they are waited for, not counted at once. */
		long at_barrier = atomic_load(&after_seen);
		double t0 = ft_now_s();

		while (atomic_load(&after_seen) < NAFTER && ft_now_s() < t0 + 30)
			triad_progress(ctx);
		FT_CHECK(atomic_load(&after_seen) == NAFTER,
			 "%ld of %d messages after the outage arrived", atomic_load(&after_seen),
			 NAFTER);
		printf("rank 1: after every plane came back: %ld of %d messages arrived (%ld "
		       "handled at the barrier, the rest %.3f s later)\n",
		       atomic_load(&after_seen), NAFTER, at_barrier, ft_now_s() - t0);
	}
}

/* A clean exit: rank 1 closes first.  Rank 0 (the side that connects)
 * hears its BYE and does not try to rebuild the connections the exit
 * breaks, and a put to rank 1 fails at once instead of waiting. */
static int clean_exit(triad_ctx_t *ctx, int peer, int nplanes)
{
	uint64_t before, after;
	enum triad_status st;
	int up = 1, waited;

	ft_barrier(ctx);
	if (ft_rank == 1) {
		triad_fini(ctx);
		return ft_failures ? 1 : 0;
	}
	for (waited = 0; waited < 100 && up; waited++) {
		connects(ctx, peer, nplanes, &up);
		usleep(100000);
	}
	FT_CHECK(!up, "rank 1 closed, %d connection(s) to it still up after 10 s", up);
	before = connects(ctx, peer, nplanes, &up);
	sleep(3); /* a rebuild would have made several attempts by now */
	after = connects(ctx, peer, nplanes, &up);
	FT_CHECK(after == before, "%llu connection attempts to rank 1 after its clean exit",
		 (unsigned long long)(after - before));
	/* Refused by the API, or failed at once: either way no wait. */
	{
		static char buf[64];
		triad_req_t *req;
		int ret = triad_put(ctx, buf, sizeof(buf), peer, 1, 0, 0, &req);

		st = ret ? TRIAD_S_UNREACHABLE : ft_wait(req, 5000);
		FT_CHECK(is_failure(st), "put to the closed rank 1: %s (expected an error at once)",
			 triad_status_str(st));
		printf("rank 0: rank 1 closed; no reconnect attempt in 3 s; a put to it: %s\n",
		       ret ? strerror(-ret) : triad_status_str(st));
	}
	triad_fini(ctx);
	if (ft_failures)
		fprintf(stderr, "rank 0: test_linkdown: %d check(s) FAILED\n", ft_failures);
	else
		printf("test_linkdown: ok\n");
	return ft_failures ? 1 : 0;
}

static void wait_reconnect(triad_ctx_t *ctx, int rank, int peer, int plane)
{
	struct triad_conn_stats cs = { .field_mask = TRIAD_CONN_STATS_ALL };
	int waited = 0;

	for (; waited < 600; waited++) {
		if (triad_conn_stats(ctx, peer, plane, &cs) == 0 && cs.up && cs.tx_slots_busy == 0)
			break;
		usleep(100000);
	}
	FT_CHECK(cs.up && cs.tx_slots_busy == 0, "plane %d after the link came back: up %d, "
		 "%u of the peer's slots still busy", plane, cs.up, cs.tx_slots_busy);
	printf("rank %d: plane %d reconnected after %.1f s, every slot free again\n", rank, plane,
	       waited / 10.0);
}

/* Light puts in flight when their plane breaks: rank 0's port on its home
 * plane is cut (frames vanish, the port stays up), so every put posted
 * there waits for an acknowledgement until the RC retries give up and the
 * lane breaks; each is then done again on the other plane.  One flush
 * reports them all OK, and rank 1 finds every slot holding its bytes. */
static void small_puts_at_cut(triad_ctx_t *ctx, int rank, int peer, int plane, char *slots)
{
	static char src[NFLY * SMALL];
	triad_req_t *fl = NULL;
	enum triad_status st;
	int wrong, first;

	if (rank == 1)
		memset(slots, 0, NFLY * SMALL);
	ft_barrier(ctx);
	if (rank == 0) {
		ft_fill(src, sizeof(src), 4444, 0);
		FT_CHECK(ctl("cut", 0, plane) == 0, "fabric-ctl cut 0 %d", plane);
		for (int i = 0; i < NFLY; i++)
			FT_CHECK(triad_put(ctx, src + i * SMALL, 1 + i % SMALL, peer, 1,
					   FLY + (uint64_t)i * SMALL, 0, NULL) == 0,
				 "small put %d at the cut", i);
		FT_CHECK(triad_flush(ctx, peer, &fl) == 0, "flush");
		st = ft_wait(fl, 60000);
		FT_CHECK(st == TRIAD_S_OK, "flush of %d small puts in flight at the cut: %s", NFLY,
			 triad_status_str(st));
		FT_CHECK(ctl("heal", 0, plane) == 0, "fabric-ctl heal 0 %d", plane);
		printf("rank 0: %d small puts at the cut of plane %d: flushed, %s\n", NFLY, plane,
		       triad_status_str(st));
	}
	ft_barrier(ctx); /* on the other plane */
	if (rank == 1) {
		wrong = ft_small_slots_wrong(slots, NFLY, SMALL, 4444, &first);
		FT_CHECK(!wrong, "%d of %d small puts in flight at the cut wrong, the first %d",
			 wrong, NFLY, first);
	}
	wait_reconnect(ctx, rank, peer, plane);
	ft_barrier(ctx);
}

int main(void)
{
	/* [0, FLY): the big puts; [FLY, +NFLY * SMALL): the small ones' slots. */
	static char win_buf[FLY + NFLY * SMALL];
	triad_ctx_t *ctx = ft_init();
	int rank = triad_rank(ctx), peer = !rank, nplanes = triad_nplanes(ctx);
	int last = 1 % nplanes;		     /* the home plane of the pair (0, 1) */
	int alt = (last + 1) % nplanes; /* the plane switch's failover plane of it */
	triad_win_t *win;
	enum triad_status st;

	if (triad_size(ctx) != 2 || nplanes < 2) {
		fprintf(stderr, "test_linkdown needs 2 ranks and 2 planes\n");
		return 1;
	}
	FT_CHECK(triad_win_create(ctx, 1, win_buf, sizeof(win_buf), NULL, &win) == 0, "window");
	FT_CHECK(triad_am_register(ctx, AM_ID, am_count, NULL) == 0, "handler");
	ft_barrier(ctx);
	for (int p = 0; p < nplanes; p++) {
		st = put_on(ctx, peer, p, 60000);
		FT_CHECK(st == TRIAD_S_OK, "put on plane %d before the fault: %s", p, triad_status_str(st));
	}
	ft_barrier(ctx);
	if (rank == 0) {
		/* In flight on the home plane (`last`, for the pair 0-1) when it
		 * goes down. */
		static char fly[FLY], small[NFLY * SMALL];
		triad_req_t *req[NFLY];
		int ok = 0;

		struct triad_plane_info pi = { .field_mask = TRIAD_PLANE_INFO_ALL };

		ft_fill(fly, sizeof(fly), 4242, 0);
		ft_fill(small, sizeof(small), 4343, 0);
		/* The link goes down while the puts stream. */
		FT_CHECK(ctl_run("down", 0, last, 1) == 0, "fabric-ctl down 0 %d", last);
		for (int i = 0; i < NFLY; i++) {
			FT_CHECK(triad_put(ctx, fly, sizeof(fly), peer, 1, 0, 0, &req[i]) == 0, "put");
			FT_CHECK(triad_put(ctx, small + i * SMALL, 1 + i % SMALL, peer, 1,
					   FLY + (uint64_t)i * SMALL, 0, NULL) == 0, "small put %d", i);
		}
		for (int i = 0; i < NFLY; i++) {
			st = ft_wait(req[i], 60000);
			ok += st == TRIAD_S_OK;
			FT_CHECK(st == TRIAD_S_OK, "unpinned put %d in flight at the fault: %s", i,
				 triad_status_str(st));
		}
		FT_CHECK(triad_flush(ctx, peer, &req[0]) == 0, "flush");
		st = ft_wait(req[0], 60000);
		FT_CHECK(st == TRIAD_S_OK, "flush of the small puts in flight at the fault: %s",
			 triad_status_str(st));
		for (int i = 0; i < 100 && triad_plane_info(ctx, last, &pi) == 0 && pi.port_up; i++)
			usleep(100000);
		FT_CHECK(!pi.port_up, "plane %d: the port is still up 10 s after fabric-ctl down",
			 last);
		printf("rank 0: %d of %d unpinned puts streaming at the fault completed OK\n", ok,
		       NFLY);
	}
	ft_barrier(ctx); /* travels on plane 0 */
	if (rank == 1) {
		int64_t bad = ft_verify(win_buf, FLY, 4242, 0);
		int first, wrong = ft_small_slots_wrong(win_buf + FLY, NFLY, SMALL, 4343, &first);

		FT_CHECK(bad < 0, "the puts in flight at the fault: wrong bytes from offset %lld",
			 (long long)bad);
		FT_CHECK(!wrong, "%d of %d small puts in flight at the fault wrong, the first %d",
			 wrong, NFLY, first);
	}
	ft_barrier(ctx); /* before anything writes the window again */

	/* Bounded: the RC retries give up after a few seconds; 60 s would be a hang. */
	st = put_on(ctx, peer, last, 60000);
	FT_CHECK(is_failure(st), "put on the downed plane %d: %s (expected an error)", last,
		 triad_status_str(st));
	printf("rank %d: put on plane %d with rank 0's link down: %s\n", rank, last,
	       triad_status_str(st));
	st = put_on(ctx, peer, 0, 60000);
	FT_CHECK(st == TRIAD_S_OK, "put on plane 0 during the fault: %s", triad_status_str(st));
	put_takes(ctx, peer, alt, "during the fault");
	ft_barrier(ctx);
	if (rank == 0)
		FT_CHECK(ctl("up", 0, last) == 0, "fabric-ctl up 0 %d", last);

	/* The plane comes back: the pair reconnects by itself, flow control
	 * restarts from state III and the receiver's first BSM frees every slot. */
	wait_reconnect(ctx, rank, peer, last);
	ft_barrier(ctx);
	st = put_on(ctx, peer, last, 60000);
	FT_CHECK(st == TRIAD_S_OK, "put on plane %d after the reconnect: %s", last,
		 triad_status_str(st));
	put_takes(ctx, peer, last, "after the reconnect (the home plane)");
	small_puts_at_cut(ctx, rank, peer, last, win_buf + FLY);
	all_planes_down(ctx, rank, peer, nplanes);
	return clean_exit(ctx, peer, nplanes);
}
