/* The adaptive choice's detours counter counts every message it sends
 * over another plane than the plane switch gives, also those it sends
 * there when they are queued (include/triad.h, triad_conn_stats: "messages
 * this connection took over from a busier one to the peer, when they were
 * queued ... or while they waited there").
 *
 * Run with TRIAD_ADAPTIVE=occ and TRIAD_ADAPTIVE_T=0 (set here): a message
 * is then sent over another plane whenever its own plane to the peer has
 * anything in flight and the other less than half as much, so most
 * detours are taken at queueing and few messages wait to be moved.  Every
 * rank sends ROUNDS bursts of BURST medium-priority active messages to
 * every other rank (nothing else: no puts, no faults, every plane
 * normal), waiting for each burst, and reads its connections' counters
 * before and after.  Over that stretch, per peer:
 *   - a message on a plane other than the peer's home plane ((rank + peer)
 *     mod planes) got there by a detour, when queued or while it waited,
 *     which the plane that took it counted: the messages posted there
 *     (tx_msgs less the buffer statuses sent on their own) are at most its
 *     detours;
 *   - a detour a plane counted was posted there or moved on from there by
 *     another detour, which another plane counted: a plane's detours are at
 *     most its messages posted plus the other planes' detours;
 *   - and some messages did go over another plane (or the test says
 *     nothing).
 * A counter that misses the detours taken at queueing fails the first.
 * Every message must arrive, once; every request must complete OK. */
#include <stdatomic.h>
#include <unistd.h>

#include "ft.h"

#define AM_ID 11
#define ROUNDS 300
#define BURST 4
#define MAXR 16
#define MAXP 8

static atomic_uint got[MAXR];

static int am_handler(void *arg, int src, const void *data, size_t len, triad_am_msg_t *msg)
{
	(void)arg;
	(void)data;
	(void)len;
	(void)msg;
	if (src >= 0 && src < MAXR)
		atomic_fetch_add(&got[src], 1);
	return TRIAD_AM_DONE;
}

struct counts {
	uint64_t posted, detours;
};

/* What this rank's connection to r on every plane counted so far. */
static void read_counts(triad_ctx_t *ctx, int r, struct counts *c)
{
	for (int p = 0; p < triad_nplanes(ctx); p++) {
		struct triad_conn_stats s = {
			.field_mask = TRIAD_CONN_STATS_LINK | TRIAD_CONN_STATS_FC |
				      TRIAD_CONN_STATS_CHOICE
		};

		FT_CHECK(triad_conn_stats(ctx, r, p, &s) == 0, "conn_stats(%d, %d)", r, p);
		c[p].posted = s.tx_msgs - s.bsm_standalone;
		c[p].detours = s.detours;
	}
}

int main(void)
{
	static struct counts before[MAXR][MAXP], after[MAXR][MAXP];
	triad_ctx_t *ctx;
	int rank, size, nplanes;
	uint64_t elsewhere = 0, counted = 0;
	double t0;

	setenv("TRIAD_ADAPTIVE", "occ", 1);
	setenv("TRIAD_ADAPTIVE_T", "0", 1);
	setenv("TRIAD_DAEMON", "off", 1); /* nothing may drain a plane meanwhile */
	ctx = ft_init();
	rank = triad_rank(ctx);
	size = triad_size(ctx);
	nplanes = triad_nplanes(ctx);
	if (size < 2 || size > MAXR || nplanes < 2 || nplanes > MAXP) {
		fprintf(stderr, "test_detour: wants 2 to %d ranks and 2 to %d planes (%d, %d)\n",
			MAXR, MAXP, size, nplanes);
		return 2;
	}
	FT_CHECK(triad_am_register(ctx, AM_ID, am_handler, NULL) == 0, "handler");
	ft_barrier(ctx);
	for (int r = 0; r < size; r++)
		if (r != rank)
			read_counts(ctx, r, before[r]);
	t0 = ft_now_s();
	for (int i = 0; i < ROUNDS && !ft_failures; i++)
		for (int r = 0; r < size; r++) {
			triad_req_t *req[BURST];

			if (r == rank)
				continue;
			for (int k = 0; k < BURST; k++)
				FT_CHECK(triad_am_send(ctx, r, AM_ID, &i, sizeof(i), TRIAD_PRIO_MEDIUM,
						       &req[k]) == 0, "am to %d", r);
			for (int k = 0; k < BURST; k++) {
				enum triad_status st = ft_wait(req[k], 60000);

				FT_CHECK(st == TRIAD_S_OK, "am to %d, round %d: %s", r, i,
					 triad_status_str(st));
			}
		}
	for (int r = 0; r < size; r++)
		if (r != rank)
			read_counts(ctx, r, after[r]);
	for (int r = 0; r < size; r++) {
		int home = (rank + r) % nplanes;
		uint64_t all = 0;

		if (r == rank)
			continue;
		for (int p = 0; p < nplanes; p++)
			all += after[r][p].detours - before[r][p].detours;
		for (int p = 0; p < nplanes; p++) {
			uint64_t posted = after[r][p].posted - before[r][p].posted;
			uint64_t det = after[r][p].detours - before[r][p].detours;

			printf("test_detour: rank %d to %d plane %d%s: %llu messages posted, "
			       "%llu detours\n", rank, r, p, p == home ? " (home)" : "",
			       (unsigned long long)posted, (unsigned long long)det);
			FT_CHECK(p == home || posted <= det,
				 "to %d on plane %d (not its home): %llu messages posted, only %llu "
				 "counted as detours", r, p, (unsigned long long)posted,
				 (unsigned long long)det);
			FT_CHECK(det <= posted + (all - det),
				 "to %d on plane %d: %llu detours counted, but %llu messages posted "
				 "there and %llu detours counted elsewhere", r, p,
				 (unsigned long long)det, (unsigned long long)posted,
				 (unsigned long long)(all - det));
			if (p != home)
				elsewhere += posted;
		}
		counted += all;
	}
	printf("test_detour: rank %d: %d x %d messages to each of %d peers in %.2f s; %llu "
	       "posted off their home plane, %llu detours counted\n", rank, ROUNDS, BURST,
	       size - 1, ft_now_s() - t0, (unsigned long long)elsewhere,
	       (unsigned long long)counted);
	FT_CHECK(elsewhere > 0, "no message left its home plane: TRIAD_ADAPTIVE_T=0 took no detour");
	/* Every message arrives once: ours reached their targets (the
	 * requests); theirs are handled here within a bound. */
	for (double end = ft_now_s() + 30;;) {
		int missing = 0;

		for (int r = 0; r < size; r++)
			missing += r != rank && atomic_load(&got[r]) < (unsigned)(ROUNDS * BURST);
		if (!missing || ft_now_s() > end)
			break;
		usleep(1000);
	}
	for (int r = 0; r < size; r++)
		FT_CHECK(r == rank || atomic_load(&got[r]) == (unsigned)(ROUNDS * BURST),
			 "from rank %d: %u messages, %d sent", r, atomic_load(&got[r]),
			 ROUNDS * BURST);
	fflush(stdout);
	return ft_finish(ctx, "test_detour");
}
