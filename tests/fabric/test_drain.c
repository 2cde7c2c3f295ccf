/* Planned drain of a plane under traffic: nothing fails, nothing is lost or
 * doubled, the plane goes quiet, and traffic comes back after restore.
 *
 * 4 ranks x 2 planes.  Every rank streams puts (verified at the end) and
 * active messages (each counted exactly once) to every other rank, and
 * rank 1 keeps ordering third-party copies from rank 0 to rank 2, whose
 * home plane is 0.  Phases, separated by barriers:
 *   A  rank 0 drains plane 0 in the middle of the stream (and its copies'
 *      chunks): triad_plane_drain returns 0, plane 1 then cannot be drained
 *      as well (-EBUSY), and triad_plane_info reports DRAINED within 10 s;
 *   B  another stream: no put from rank 0, nor to rank 0, takes plane 0
 *      (the per-plane counters of every pair with rank 0 stand still, for
 *      each pair whose plane 1 stayed up: a drained plane still carries a
 *      peer's traffic when it is the last plane left to it);
 *   C  rank 0 restores plane 0, another stream: the pair (0, 2), whose home
 *      plane is 0, uses it again in both directions.
 * Every request completes OK; every byte and every message is checked. */
#include <unistd.h>

#include "ft.h"

#define WIN 1
#define NITER 60	   /* iterations per phase */
#define PUT_LEN (16u << 10) /* one put per (peer, iteration) */
#define COPY_LEN (1u << 20)
#define NCOPY 4		   /* copies in flight at rank 1 */
#define AM_ID 5
#define MAXR 8

static int rank, size;
static char *win;
static size_t region; /* bytes of the window each sender owns */
static uint8_t seen[MAXR][3 * NITER];
static long dups, bad;

struct am { uint32_t src, idx; };

static int am_handler(void *arg, int src, const void *data, size_t len, triad_am_msg_t *msg)
{
	struct am a;

	(void)arg;
	(void)msg;
	if (len != sizeof(a) || src < 0 || src >= MAXR) {
		bad++;
		return TRIAD_AM_DONE;
	}
	memcpy(&a, data, sizeof(a));
	if (a.src != (uint32_t)src || a.idx >= 3 * NITER)
		bad++;
	else if (seen[src][a.idx]++)
		dups++;
	return TRIAD_AM_DONE;
}

/* The put of (src, it) lands at src's region, slot it % 8. */
static uint64_t put_off(int src, int it)
{
	return (uint64_t)src * region + (uint64_t)(it % 8) * PUT_LEN;
}

static uint64_t puts_on(triad_ctx_t *ctx, int peer, int plane)
{
	struct triad_conn_stats cs = { .field_mask = TRIAD_CONN_STATS_LINK };

	return triad_conn_stats(ctx, peer, plane, &cs) == 0 ? cs.puts : 0;
}

/* A mark of plane 1's connection to peer that moves when it breaks: its
 * error completions and its set-ups (0 while it is down).  A drained plane
 * is still the last plane to a peer whose other connection broke (the spec:
 * drain never strands a peer), so phase B's "no put on plane 0" holds only
 * while this mark stood still. */
static uint64_t other_plane_mark(triad_ctx_t *ctx, int peer)
{
	struct triad_conn_stats cs = { .field_mask = TRIAD_CONN_STATS_ALL };

	if (triad_conn_stats(ctx, peer, 1, &cs) != 0 || !cs.up)
		return 0;
	return (cs.established << 32) + cs.errors + 1;
}

/* Copies rank 1 orders: 0 -> 2, into rank 2's copy region. */
static triad_req_t *copies[NCOPY];

static void copy_step(triad_ctx_t *ctx, int it)
{
	int k = it % NCOPY;
	uint64_t off = (uint64_t)size * region;

	if (copies[k]) {
		enum triad_status st = ft_wait(copies[k], 60000);

		FT_CHECK(st == TRIAD_S_OK, "copy 0 -> 2: %s", triad_status_str(st));
	}
	FT_CHECK(triad_copy(ctx, 0, WIN, off, 2, WIN, off + (uint64_t)k * COPY_LEN, COPY_LEN, 0,
			    &copies[k]) == 0, "triad_copy");
}

static void stream(triad_ctx_t *ctx, int phase, int drain_at)
{
	static char src[PUT_LEN];

	for (int it = 0; it < NITER; it++) {
		int idx = phase * NITER + it;
		triad_req_t *req[2 * MAXR];
		int n = 0;

		if (it == drain_at) {
			FT_CHECK(triad_plane_drain(ctx, 0) == 0, "drain plane 0");
			FT_CHECK(triad_plane_drain(ctx, 0) == 0, "drain plane 0 again");
			FT_CHECK(triad_plane_drain(ctx, 1) == -EBUSY,
				 "drain plane 1 as well: the last plane left");
		}
		if (rank == 1)
			copy_step(ctx, idx);
		for (int r = 0; r < size; r++) {
			struct am a = { (uint32_t)rank, (uint32_t)idx };

			if (r == rank)
				continue;
			ft_fill(src, PUT_LEN, (uint32_t)(rank * 1000 + idx), 0);
			FT_CHECK(triad_put(ctx, src, PUT_LEN, r, WIN, put_off(rank, idx), 0,
					   &req[n]) == 0, "put");
			n++;
			FT_CHECK(triad_am_send(ctx, r, AM_ID, &a, sizeof(a), TRIAD_PRIO_MEDIUM,
					       &req[n]) == 0, "am");
			n++;
		}
		for (int i = 0; i < n; i++) {
			enum triad_status st = ft_wait(req[i], 60000);

			FT_CHECK(st == TRIAD_S_OK, "phase %c iteration %d: %s", 'A' + phase, it,
				 triad_status_str(st));
		}
	}
}

/* Every put's last iteration per slot landed whole at every receiver. */
static void verify_puts(int phase)
{
	for (int s = 0; s < size; s++) {
		if (s == rank)
			continue;
		for (int it = NITER - 8; it < NITER; it++) {
			int idx = phase * NITER + it;

			FT_CHECK(ft_verify(win + put_off(s, idx), PUT_LEN, (uint32_t)(s * 1000 + idx),
					   0) < 0, "put from %d, iteration %d: wrong bytes", s, idx);
		}
	}
}

static void wait_drained(triad_ctx_t *ctx)
{
	struct triad_plane_info pi = { .field_mask = TRIAD_PLANE_INFO_ALL };
	int i;

	for (i = 0; i < 1000; i++) {
		FT_CHECK(triad_plane_info(ctx, 0, &pi) == 0, "plane info");
		if (pi.state == TRIAD_PLANE_DRAINED)
			break;
		usleep(10000);
	}
	FT_CHECK(pi.state == TRIAD_PLANE_DRAINED, "plane 0 %s after 10 s: %u messages in flight, "
		 "%u queued, %u RDMA", triad_plane_state_str(pi.state), pi.msgs_inflight,
		 pi.msgs_queued, pi.rma_inflight);
	printf("drain: rank 0: plane 0 drained %.2f s after the stream ended\n", i * 0.01);
	FT_CHECK(triad_plane_info(ctx, 1, &pi) == 0 && pi.state == TRIAD_PLANE_NORMAL,
		 "plane 1 is %s", triad_plane_state_str(pi.state));
}

int main(void)
{
	triad_ctx_t *ctx = ft_init();
	uint64_t snap[MAXR], mark[MAXR], now;
	struct triad_plane_info pi = { .field_mask = ~0ull };
	triad_win_t *w;

	rank = triad_rank(ctx);
	size = triad_size(ctx);
	if (size != 4 || triad_nplanes(ctx) != 2) {
		fprintf(stderr, "test_drain needs 4 ranks x 2 planes\n");
		return 2;
	}
	region = 8 * PUT_LEN;
	win = calloc(1, (size_t)size * region + NCOPY * COPY_LEN);
	FT_CHECK(win != NULL, "memory");
	if (!win)
		return 1;
	if (rank == 0)
		ft_fill(win + (size_t)size * region, COPY_LEN, 77, 0);
	FT_CHECK(triad_win_create(ctx, WIN, win, (size_t)size * region + NCOPY * COPY_LEN, NULL,
				  &w) == 0, "window");
	FT_CHECK(triad_am_register(ctx, AM_ID, am_handler, NULL) == 0, "handler");
	FT_CHECK(triad_plane_drain(ctx, 2) == -EINVAL, "a plane that does not exist");
	FT_CHECK(triad_plane_info(ctx, 0, &pi) == -EINVAL, "unknown info bits");
	/* Only the groups asked for are written (a program built with a
	 * shorter struct is never written past it, nor in a group it left). */
	memset(&pi, 0xa5, sizeof(pi));
	pi.field_mask = TRIAD_PLANE_INFO_REJECTS;
	FT_CHECK(triad_plane_info(ctx, 0, &pi) == 0 && pi.conn_rejected_key == 0 &&
			 pi.peers_up == 0xa5a5a5a5u && pi.port_up == (int)0xa5a5a5a5u,
		 "REJECTS alone wrote the STATE group (peers_up 0x%x)", pi.peers_up);
	memset(&pi, 0xa5, sizeof(pi));
	pi.field_mask = 0;
	FT_CHECK(triad_plane_info(ctx, 0, &pi) == 0 && pi.peers_up == 0xa5a5a5a5u &&
			 pi.conn_rejected_key == 0xa5a5a5a5a5a5a5a5ull,
		 "an empty mask wrote a group");
	ft_barrier(ctx);

	/* A: drain in the middle of the stream. */
	stream(ctx, 0, rank == 0 ? NITER / 3 : -1);
	for (int k = 0; rank == 1 && k < NCOPY; k++) {
		enum triad_status st = ft_wait(copies[k], 60000);

		FT_CHECK(st == TRIAD_S_OK, "copy 0 -> 2: %s", triad_status_str(st));
		copies[k] = NULL;
	}
	ft_barrier(ctx);
	if (rank == 0)
		wait_drained(ctx);
	verify_puts(0);
	ft_barrier(ctx);

	/* B: the plane stays quiet for every pair with rank 0, as long as
	 * plane 1 to that peer stays up. */
	for (int r = 0; r < size; r++) {
		snap[r] = r == rank ? 0 : puts_on(ctx, r, 0);
		mark[r] = r == rank ? 0 : other_plane_mark(ctx, r);
	}
	stream(ctx, 1, -1);
	ft_barrier(ctx);
	for (int r = 0; r < size; r++) {
		if (r == rank || (rank != 0 && r != 0))
			continue;
		now = puts_on(ctx, r, 0);
		if (mark[r] == 0 || other_plane_mark(ctx, r) != mark[r]) {
			printf("drain: rank %d: plane 1 to rank %d broke during phase B; %llu puts "
			       "took the drained plane as the last one (not checked)\n", rank, r,
			       (unsigned long long)(now - snap[r]));
			continue;
		}
		FT_CHECK(now == snap[r], "%llu puts to rank %d on the drained plane",
			 (unsigned long long)(now - snap[r]), r);
	}
	verify_puts(1);
	ft_barrier(ctx);

	/* C: restored, the pair (0, 2) is back on its home plane. */
	if (rank == 0)
		FT_CHECK(triad_plane_restore(ctx, 0) == 0, "restore");
	ft_barrier(ctx);
	for (int r = 0; r < size; r++)
		snap[r] = r == rank ? 0 : puts_on(ctx, r, 0);
	stream(ctx, 2, -1);
	ft_barrier(ctx);
	if (rank == 0 || rank == 2) {
		int peer = 2 - rank;

		now = puts_on(ctx, peer, 0);
		FT_CHECK(now - snap[peer] == NITER, "%llu of %d puts to rank %d on the restored "
			 "home plane", (unsigned long long)(now - snap[peer]), NITER, peer);
	}
	verify_puts(2);
	for (int k = 0; rank == 2 && k < NCOPY; k++)
		FT_CHECK(ft_verify(win + (size_t)size * region + (size_t)k * COPY_LEN, COPY_LEN, 77,
				   0) < 0, "copy 0 -> 2 into slot %d: wrong bytes", k);
	ft_barrier(ctx);

	/* Every message from every peer exactly once. */
	for (int s = 0; s < size; s++) {
		int missing = 0;

		for (int i = 0; s != rank && i < 3 * NITER; i++)
			missing += !seen[s][i];
		FT_CHECK(missing == 0, "%d messages from rank %d never arrived", missing, s);
	}
	FT_CHECK(dups == 0 && bad == 0, "%ld duplicated, %ld malformed messages", dups, bad);
	printf("drain: rank %d: %d x %d puts and messages each way, copies 0 -> 2 ok\n", rank,
	       3 * NITER, size - 1);
	triad_win_destroy(w);
	return ft_finish(ctx, "test_drain");
}
