/* Active messages under buffer-status flow control, on a real fabric.
 *
 *   test_am [--count N]      (run with TRIAD_SLOTS=4: few slots, real pressure)
 *
 *   backpressure  ranks 1.. each send N messages of mixed sizes and priorities
 *                 to rank 0, whose handler is slow and keeps every 8th message
 *                 until the main thread releases it later.  Rank 0 checks every
 *                 byte, that each (sender, priority) stream arrives complete and
 *                 in order, and that no message ever landed in an occupied slot.
 *                 Most go bare (headers in the SEND's immediate, TRIAD_BARE_AM=on,
 *                 the default): rank 0 counts them, and counts none with
 *                 TRIAD_BARE_AM=off.
 *                 In order: always in strict order (TRIAD_ORDER=strict, the
 *                 default); with TRIAD_ORDER=any only while every message takes
 *                 one lane (TRIAD_ADAPTIVE=off): moved to a less busy plane, a
 *                 message may overtake, which is what "any" allows.
 *   ackclass      rank 1 sends LOW messages that rank 0 keeps (its low slots
 *                 on every plane fill and further LOW ones must wait), then HIGH
 *                 ones: every HIGH one arrives while the LOW ones are still held.
 *   errors        oversize -> -EMSGSIZE; a message for an id without handler is
 *                 counted at the receiver, its slot freed, and the connection
 *                 keeps working.
 */
#include <getopt.h>
#include <pthread.h>
#include <stdatomic.h>
#include <strings.h>
#include <unistd.h>

#include "ft.h"

enum { AM_DATA = 1, AM_LOW_HOLD = 2, AM_HIGH = 3, AM_PROBE = 4, AM_UNKNOWN = 77 };

struct hdr {
	uint32_t seq;
	uint8_t prio, sender;
	uint16_t pad;
};

static int nranks, rank;
static long count = 20000;

/* The order the library promises for one (sender, priority) stream. */
static int order_kept(void)
{
	const char *order = getenv("TRIAD_ORDER"), *adaptive = getenv("TRIAD_ADAPTIVE");

	return !order || strcasecmp(order, "any") || (adaptive && !strcasecmp(adaptive, "off"));
}

/* ---- receiver state (rank 0); handlers run with the library's lock ------------ */
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static uint32_t next_seq[64][3];
static _Atomic long received, bad_order, bad_data;
static triad_am_msg_t *kept[1024];
static int nkept;
static _Atomic int low_held, high_seen, probe_seen;

static int data_handler(void *arg, int src, const void *data, size_t len, triad_am_msg_t *msg)
{
	struct hdr h;
	int keep;

	(void)arg;
	if (len < sizeof(h)) {
		bad_data++;
		return TRIAD_AM_DONE;
	}
	memcpy(&h, data, sizeof(h));
	if (h.sender != src || h.prio > 2) {
		bad_data++;
		return TRIAD_AM_DONE;
	}
	if (h.seq != next_seq[src][h.prio]++) {
		if (bad_order++ < 5)
			fprintf(stderr, "rank 0: from %d prio %u: seq %u, expected %u\n", src, h.prio,
				h.seq, next_seq[src][h.prio] - 1);
		next_seq[src][h.prio] = h.seq + 1;
	}
	if (ft_verify((const char *)data + sizeof(h), len - sizeof(h), h.seq * 3u + (uint32_t)src,
		      0) >= 0)
		bad_data++;
	/* Slow consumer: a little work per message, and every 8th one kept. */
	for (volatile int i = 0; i < 2000; i++)
		;
	received++;
	pthread_mutex_lock(&mu);
	keep = (h.seq % 8 == 0) && nkept < 1024;
	if (keep)
		kept[nkept++] = msg;
	pthread_mutex_unlock(&mu);
	return keep ? TRIAD_AM_KEEP : TRIAD_AM_DONE;
}

/* Handlers take mu inside the library's lock, so release outside mu. */
static void release_kept(void)
{
	static triad_am_msg_t *batch[1024];
	int n;

	pthread_mutex_lock(&mu);
	n = nkept;
	memcpy(batch, kept, (size_t)n * sizeof(*batch));
	nkept = 0;
	pthread_mutex_unlock(&mu);
	for (int i = 0; i < n; i++)
		FT_CHECK(triad_am_release(batch[i]) == 0, "release");
}

static int low_hold_handler(void *arg, int src, const void *data, size_t len, triad_am_msg_t *msg)
{
	(void)arg, (void)src, (void)data, (void)len;
	pthread_mutex_lock(&mu);
	kept[nkept++] = msg;
	pthread_mutex_unlock(&mu);
	low_held++;
	return TRIAD_AM_KEEP;
}

static int high_handler(void *arg, int src, const void *data, size_t len, triad_am_msg_t *msg)
{
	(void)arg, (void)src, (void)data, (void)len, (void)msg;
	high_seen++;
	return TRIAD_AM_DONE;
}

static int probe_handler(void *arg, int src, const void *data, size_t len, triad_am_msg_t *msg)
{
	(void)arg, (void)src, (void)data, (void)len, (void)msg;
	probe_seen++;
	return TRIAD_AM_DONE;
}

static void wait_for(_Atomic long *v, long want, int seconds, const char *what)
{
	for (int i = 0; i < seconds * 100 && *v < want; i++) {
		release_kept();
		usleep(10000);
	}
	FT_CHECK(*v >= want, "%s: %ld of %ld", what, (long)*v, want);
}

static void wait_int(_Atomic int *v, int want, int seconds, const char *what)
{
	for (int i = 0; i < seconds * 100 && *v < want; i++)
		usleep(10000);
	FT_CHECK(*v >= want, "%s: %d of %d", what, (int)*v, want);
}

static int send_wait(triad_ctx_t *ctx, int to, unsigned id, const void *buf, size_t len,
		     enum triad_prio prio)
{
	triad_req_t *req;
	int ret = triad_am_send(ctx, to, id, buf, len, prio, &req);

	if (ret)
		return ret;
	return ft_wait(req, 120000) == TRIAD_S_OK ? 0 : -EIO;
}

static void phase_backpressure(triad_ctx_t *ctx)
{
	size_t max = triad_am_max_size(ctx);
	char *buf = malloc(max);
	uint32_t seq[3] = { 0 };
	triad_req_t *reqs[32] = { 0 };
	unsigned rs = 777u * (unsigned)rank;

	if (rank != 0) {
		for (long i = 0; i < count; i++) {
			int r = rand_r(&rs);
			unsigned prio = (unsigned)(r % 3);
			size_t len = sizeof(struct hdr) + (size_t)(r % 4 ? r % 64 : r % (int)(max - sizeof(struct hdr)));
			struct hdr h = { seq[prio]++, (uint8_t)prio, (uint8_t)rank, 0 };
			triad_req_t **slot = &reqs[i % 32];

			if (*slot) {
				enum triad_status st = ft_wait(*slot, 120000);

				FT_CHECK(st == TRIAD_S_OK, "am %ld: %s", i - 32, triad_status_str(st));
			}
			memcpy(buf, &h, sizeof(h));
			ft_fill(buf + sizeof(h), len - sizeof(h), h.seq * 3u + (uint32_t)rank, 0);
			int ret = triad_am_send(ctx, 0, AM_DATA, buf, len, (enum triad_prio)prio, slot);

			FT_CHECK(ret == 0, "am_send %ld: %s", i, strerror(-ret));
			if (ret)
				*slot = NULL;
		}
		for (int i = 0; i < 32; i++)
			if (reqs[i])
				FT_CHECK(ft_wait(reqs[i], 120000) == TRIAD_S_OK, "last sends");
	} else {
		wait_for(&received, count * (nranks - 1), 1500, "messages received");
		release_kept();
		if (order_kept())
			FT_CHECK(bad_order == 0, "%ld messages out of order", (long)bad_order);
		else
			printf("backpressure: %ld messages overtaken (TRIAD_ORDER=any, adaptive "
			       "choice on: allowed)\n", (long)bad_order);
		FT_CHECK(bad_data == 0, "%ld messages with wrong bytes", (long)bad_data);
		for (int s = 1; s < nranks; s++) {
			struct triad_conn_stats cs = { .field_mask = TRIAD_CONN_STATS_ALL };
			uint64_t ov = 0, standalone = 0, piggy = 0, msgs = 0, bare = 0;
			const char *bare_env = getenv("TRIAD_BARE_AM");
			int bare_off = bare_env && !strcasecmp(bare_env, "off");

			for (int p = 0; p < triad_nplanes(ctx); p++) {
				FT_CHECK(triad_conn_stats(ctx, s, p, &cs) == 0, "stats");
				ov += cs.rx_overruns + cs.fc_timeouts;
				standalone += cs.bsm_standalone;
				piggy += cs.bsm_piggyback;
				msgs += cs.rx_msgs;
				bare += cs.am_bare_rx;
			}
			FT_CHECK(ov == 0, "rank %d: %llu overruns or timeouts", s, (unsigned long long)ov);
			/* Bare whenever no buffer status was due: a stream of
			 * thousands has many such. */
			FT_CHECK(bare_off ? bare == 0 : bare > 0,
				 "rank %d: %llu messages bare with TRIAD_BARE_AM=%s", s,
				 (unsigned long long)bare, bare_off ? "off" : "on");
			printf("backpressure: from rank %d: %u/%u/%u (high/medium/low) in order; "
			       "received %llu messages, %llu bare; BSMs sent back: %llu standalone, "
			       "%llu in headers\n",
			       s, next_seq[s][0], next_seq[s][1], next_seq[s][2],
			       (unsigned long long)msgs, (unsigned long long)bare,
			       (unsigned long long)standalone, (unsigned long long)piggy);
		}
	}
	free(buf);
	ft_barrier(ctx);
}

/* More LOW messages than the receiver's slots on all planes together (at
 * most 64 a connection): the adaptive choice may spread them over every
 * plane, and some must still be left waiting. */
#define NLOW (64 * TRIAD_MAX_PLANES + 20)

static void phase_ackclass(triad_ctx_t *ctx)
{
	char b[16] = { 0 };
	int nlow = 64 * triad_nplanes(ctx) + 20, nhigh = 20;
	triad_req_t *low[NLOW];

	if (rank == 1) {
		/* LOW ones: the receiver keeps them, so after its low slots are full
		 * the rest must wait here... */
		for (int i = 0; i < nlow; i++)
			FT_CHECK(triad_am_send(ctx, 0, AM_LOW_HOLD, b, sizeof(b), TRIAD_PRIO_LOW, &low[i]) == 0,
				 "low %d", i);
		/* ...while every HIGH one still goes through. */
		for (int i = 0; i < nhigh; i++)
			FT_CHECK(send_wait(ctx, 0, AM_HIGH, b, sizeof(b), TRIAD_PRIO_HIGH) == 0, "high %d", i);
		for (int i = 0; i < nlow; i++)
			FT_CHECK(ft_wait(low[i], 120000) == TRIAD_S_OK, "low %d", i);
	} else if (rank == 0) {
		wait_int(&high_seen, nhigh, 120, "HIGH messages while LOW ones are held");
		FT_CHECK(low_held < nlow, "all %d LOW messages arrived: nothing was held back", nlow);
		printf("ackclass: %d HIGH messages delivered while %d of %d LOW ones held the "
		       "receiver's slots and the rest waited\n", (int)high_seen, (int)low_held, nlow);
		for (int i = 0; i < 200 && low_held < nlow; i++) {
			release_kept();
			usleep(20000);
		}
		release_kept();
		FT_CHECK(low_held == nlow, "LOW messages after release: %d of %d", (int)low_held, nlow);
	}
	ft_barrier(ctx);
}

static void phase_errors(triad_ctx_t *ctx)
{
	size_t max = triad_am_max_size(ctx);
	char *big = calloc(1, max + 1);
	triad_req_t *req;

	FT_CHECK(triad_am_send(ctx, 0, AM_DATA, big, max + 1, TRIAD_PRIO_LOW, &req) == -EMSGSIZE,
		 "oversize message");
	FT_CHECK(triad_am_send(ctx, 0, 300, big, 1, TRIAD_PRIO_LOW, &req) == -EINVAL, "id 300");
	FT_CHECK(triad_am_send(ctx, 0, AM_DATA, big, 1, (enum triad_prio)7, &req) == -EINVAL,
		 "prio 7");
	FT_CHECK(triad_am_send(ctx, nranks, AM_DATA, big, 1, TRIAD_PRIO_LOW, &req) == -EINVAL,
		 "rank out of range");
	FT_CHECK(triad_am_register(ctx, AM_DATA, data_handler, NULL) == -EEXIST, "id taken");
	if (rank == 1) {
		FT_CHECK(send_wait(ctx, 0, AM_UNKNOWN, big, 8, TRIAD_PRIO_MEDIUM) == 0, "unknown id");
		FT_CHECK(send_wait(ctx, 0, AM_PROBE, big, 8, TRIAD_PRIO_MEDIUM) == 0, "probe");
		FT_CHECK(send_wait(ctx, 0, AM_PROBE, big, max, TRIAD_PRIO_LOW) == 0, "largest message");
	} else if (rank == 0) {
		uint64_t unknown = 0;

		wait_int(&probe_seen, 2, 60, "messages after the unknown id");
		for (int p = 0; p < triad_nplanes(ctx); p++) {
			struct triad_conn_stats cs = { .field_mask = TRIAD_CONN_STATS_ALL };

			triad_conn_stats(ctx, 1, p, &cs);
			unknown += cs.am_unknown;
		}
		FT_CHECK(unknown == 1, "unknown-id messages counted: %llu", (unsigned long long)unknown);
		printf("errors: oversize rejected, unknown id counted (%llu) and its slot freed, "
		       "connection healthy\n", (unsigned long long)unknown);
	}
	free(big);
	ft_barrier(ctx);
}

int main(int argc, char **argv)
{
	static const struct option opts[] = { { "count", required_argument, NULL, 'n' },
					      { NULL, 0, NULL, 0 } };
	triad_ctx_t *ctx;
	int c;

	while ((c = getopt_long(argc, argv, "n:", opts, NULL)) != -1) {
		if (c != 'n') {
			fprintf(stderr, "usage: %s [--count N]\n", argv[0]);
			return 2;
		}
		count = atol(optarg);
	}
	ctx = ft_init();
	rank = triad_rank(ctx);
	nranks = triad_size(ctx);
	if (nranks < 2 || nranks > 64) {
		fprintf(stderr, "test_am needs 2..64 ranks\n");
		return 1;
	}
	FT_CHECK(triad_am_register(ctx, AM_DATA, data_handler, NULL) == 0, "register");
	FT_CHECK(triad_am_register(ctx, AM_LOW_HOLD, low_hold_handler, NULL) == 0, "register");
	FT_CHECK(triad_am_register(ctx, AM_HIGH, high_handler, NULL) == 0, "register");
	FT_CHECK(triad_am_register(ctx, AM_PROBE, probe_handler, NULL) == 0, "register");
	ft_barrier(ctx);
	phase_backpressure(ctx);
	phase_ackclass(ctx);
	phase_errors(ctx);
	return ft_finish(ctx, "test_am");
}
