/* The active-message measurements: am_lat (like ib_send_lat) and am_bw (like
 * ib_send_bw), one size per call, in the same steps as perf_tests.c:
 * prepare -> barrier -> measure -> barrier -> verify -> report.
 *
 * Handlers run in the library's progress engine, on whichever thread drives
 * it (normally the context's background thread, see am_lat_client), so what
 * they share with the application thread is either atomic or under am->mu.
 * The fields the application thread sets for a size (size, expect) are
 * written before the barrier that opens the size: the barrier and the
 * handlers both run under the context's lock, which orders them.
 *
 * Every wait is bounded, as in perf_tests.c. */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "perf.h"

/* Active-message ids. */
enum { AM_PING = 1, AM_PONG = 2, AM_STREAM = 3, AM_STATS = 4 };

/* Flow-control counters of one side towards its peer, summed over planes. */
enum {
	CTR_TX_MSGS,	  /* messages sent: data, control and standalone BSMs */
	CTR_RX_MSGS,
	CTR_BSM_ALONE,	  /* standalone BSMs sent */
	CTR_BSM_PIGGY,	  /* BSMs sent in another message's header */
	CTR_FC_TIMEOUTS,  /* slots freed by timeout */
	CTR_RX_OVERRUNS,  /* never, unless a bug */
	CTR_RX_DROPPED,	  /* malformed messages */
	CTR_AM_UNKNOWN,	  /* messages for an unregistered id */
	CTR_ERRORS,	  /* completions with an error */
	CTR_BARE_TX,	  /* active messages sent bare (headers in the immediate) */
	NCTR
};

static const char *const ctr_names[NCTR] = {
	[CTR_TX_MSGS] = "tx_msgs",	   [CTR_RX_MSGS] = "rx_msgs",
	[CTR_BSM_ALONE] = "bsm_standalone", [CTR_BSM_PIGGY] = "bsm_piggyback",
	[CTR_FC_TIMEOUTS] = "fc_timeouts", [CTR_RX_OVERRUNS] = "rx_overruns",
	[CTR_RX_DROPPED] = "rx_dropped",   [CTR_AM_UNKNOWN] = "am_unknown",
	[CTR_ERRORS] = "errors",	   [CTR_BARE_TX] = "am_bare_tx",
};

struct perf_am {
	struct perf_run *r;
	_Atomic size_t size;	/* the size being measured */
	atomic_long expect;	/* wake the waiter at this count (0: nobody waits) */
	atomic_long count;	/* messages handled in this size */
	atomic_long bad;	/* of which with a wrong length or out of order */
	atomic_int send_err;	/* first error of a reply sent from a handler */
	pthread_mutex_t mu;
	pthread_cond_t cv;
	int peer_ready;		/* under mu: peer[] holds the peer's counters */
	uint64_t peer[NCTR];	/* under mu */
};

/* ---- handlers ---------------------------------------------------------------------*/
/* Counts a handled message and wakes a waiter whose count is reached. */
static void count_one(struct perf_am *am)
{
	long n = atomic_fetch_add_explicit(&am->count, 1, memory_order_acq_rel) + 1;

	if (n == atomic_load_explicit(&am->expect, memory_order_relaxed)) {
		pthread_mutex_lock(&am->mu);
		pthread_cond_broadcast(&am->cv);
		pthread_mutex_unlock(&am->mu);
	}
}

/* Message k of a size carries the pattern, and perf_iter_value(k) in its
 * last byte: a wrong length or value means a lost, duplicated or reordered
 * message (one sender, one priority: the library keeps the order). */
static int check_msg(struct perf_am *am, const void *data, size_t len)
{
	long k = atomic_load_explicit(&am->count, memory_order_relaxed);
	size_t size = atomic_load_explicit(&am->size, memory_order_relaxed);
	const uint8_t *p = data;

	if (len != size || !len || p[len - 1] != perf_iter_value(k)) {
		atomic_fetch_add_explicit(&am->bad, 1, memory_order_relaxed);
		return -1;
	}
	return 0;
}

/* Copies the message into the receive area (checked after the size). */
static void keep_data(struct perf_am *am, const void *data, size_t len)
{
	memcpy(perf_recv_area(am->r), data, len < am->r->area ? len : am->r->area);
}

/* am_lat server: consume the ping and answer it from the handler. */
static int on_ping(void *arg, int src, const void *data, size_t len, triad_am_msg_t *msg)
{
	struct perf_am *am = arg;
	struct perf_run *r = am->r;
	size_t size = atomic_load_explicit(&am->size, memory_order_relaxed);
	uint8_t *out = perf_send_area(r);
	int ret, none = 0;

	(void)msg;
	check_msg(am, data, len);
	keep_data(am, data, len);
	out[size - 1] = len ? ((const uint8_t *)data)[len - 1] : 0;
	ret = triad_am_send(r->ctx, src, AM_PONG, out, size, r->o->prio, NULL);
	if (ret)
		atomic_compare_exchange_strong(&am->send_err, &none, ret);
	count_one(am);
	return TRIAD_AM_DONE;
}

/* am_lat client: consume the pong; the application thread sees the count. */
static int on_pong(void *arg, int src, const void *data, size_t len, triad_am_msg_t *msg)
{
	struct perf_am *am = arg;

	(void)src;
	(void)msg;
	check_msg(am, data, len);
	keep_data(am, data, len);
	count_one(am);
	return TRIAD_AM_DONE;
}

/* am_bw server: count only, the slot is free when the handler returns. */
static int on_stream(void *arg, int src, const void *data, size_t len, triad_am_msg_t *msg)
{
	struct perf_am *am = arg;

	(void)src;
	(void)msg;
	check_msg(am, data, len);
	count_one(am);
	return TRIAD_AM_DONE;
}

/* am_bw client: the server's counters (both ranks run the same binary on
 * the same machine type, so host byte order is fine). */
static int on_stats(void *arg, int src, const void *data, size_t len, triad_am_msg_t *msg)
{
	struct perf_am *am = arg;

	(void)src;
	(void)msg;
	pthread_mutex_lock(&am->mu);
	if (len == sizeof(am->peer)) {
		memcpy(am->peer, data, len);
		am->peer_ready = 1;
	} else {
		am->peer_ready = -1;
	}
	pthread_cond_broadcast(&am->cv);
	pthread_mutex_unlock(&am->mu);
	return TRIAD_AM_DONE;
}

int perf_am_setup(struct perf_run *r)
{
	static const struct {
		unsigned id;
		triad_am_handler_t fn;
	} h[] = { { AM_PING, on_ping }, { AM_PONG, on_pong }, { AM_STREAM, on_stream },
		  { AM_STATS, on_stats } };
	struct perf_am *am = calloc(1, sizeof(*am));
	pthread_condattr_t ca;
	int ret;

	if (!am) {
		perf_err(r, "perf_am_setup", -ENOMEM);
		return -ENOMEM;
	}
	am->r = r;
	pthread_mutex_init(&am->mu, NULL);
	/* The deadlines are CLOCK_MONOTONIC (deadline_ts). */
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&am->cv, &ca);
	pthread_condattr_destroy(&ca);
	r->am = am;
	for (size_t i = 0; i < sizeof(h) / sizeof(h[0]); i++) {
		ret = triad_am_register(r->ctx, h[i].id, h[i].fn, am);
		if (ret) {
			perf_err(r, "triad_am_register", ret);
			return ret;
		}
	}
	return 0;
}

/* After triad_fini: no handler runs any more. */
void perf_am_cleanup(struct perf_run *r)
{
	if (!r->am)
		return;
	pthread_cond_destroy(&r->am->cv);
	pthread_mutex_destroy(&r->am->mu);
	free(r->am);
	r->am = NULL;
}

/* ---- helpers -----------------------------------------------------------------------*/
/* Resets the handlers' state for a size; expect: see struct perf_am. */
static void am_begin(struct perf_am *am, size_t size, long expect)
{
	atomic_store(&am->size, size);
	atomic_store(&am->expect, expect);
	atomic_store(&am->count, 0);
	atomic_store(&am->bad, 0);
	atomic_store(&am->send_err, 0);
	pthread_mutex_lock(&am->mu);
	am->peer_ready = 0;
	pthread_mutex_unlock(&am->mu);
}

static void deadline_ts(int timeout_ms, struct timespec *ts)
{
	clock_gettime(CLOCK_MONOTONIC, ts);
	ts->tv_sec += timeout_ms / 1000;
	ts->tv_nsec += (long)(timeout_ms % 1000) * 1000000;
	if (ts->tv_nsec >= 1000000000) {
		ts->tv_sec++;
		ts->tv_nsec -= 1000000000;
	}
}

/* Sleeps until the handlers counted am->expect messages (the handler that
 * reaches it wakes us; this thread stays off the CPU the library's
 * progress thread needs). */
/* --serve poll: drive progress from this thread until the count is
 * reached; the handlers run here, and no thread wakes up. */
static int am_poll_count(struct perf_am *am, long want, int timeout_ms)
{
	const uint64_t deadline = perf_now_ns() + (uint64_t)timeout_ms * 1000000;
	unsigned spins = 0;

	while (atomic_load_explicit(&am->count, memory_order_acquire) < want) {
		int ret = triad_progress(am->r->ctx);

		if (ret < 0) {
			perf_err(am->r, "triad_progress", ret);
			return ret;
		}
		if (++spins % 256 == 0 && perf_now_ns() > deadline)
			break;
	}
	return 0;
}

static int am_wait_count(struct perf_am *am, int timeout_ms, const char *what)
{
	long want = atomic_load(&am->expect);
	struct timespec ts;
	int ret = 0;

	if (am->r->o->serve_poll && (ret = am_poll_count(am, want, timeout_ms)))
		return ret;
	deadline_ts(timeout_ms, &ts);
	pthread_mutex_lock(&am->mu);
	while (atomic_load(&am->count) < want && ret != ETIMEDOUT)
		ret = pthread_cond_timedwait(&am->cv, &am->mu, &ts);
	pthread_mutex_unlock(&am->mu);
	if (atomic_load(&am->count) < want) {
		fprintf(stderr, "triad-perf: rank %d: %s: %ld of %ld messages arrived in %d ms\n",
			am->r->rank, what, atomic_load(&am->count), want, timeout_ms);
		return -ETIMEDOUT;
	}
	return 0;
}

/* The counters towards peer, summed over planes. */
static int am_counters(struct perf_run *r, int peer, uint64_t c[NCTR])
{
	memset(c, 0, NCTR * sizeof(*c));
	for (int p = 0; p < triad_nplanes(r->ctx); p++) {
		struct triad_conn_stats s = { .field_mask = TRIAD_CONN_STATS_ALL };
		int ret = triad_conn_stats(r->ctx, peer, p, &s);

		if (ret) {
			perf_err(r, "triad_conn_stats", ret);
			return ret;
		}
		c[CTR_TX_MSGS] += s.tx_msgs;
		c[CTR_RX_MSGS] += s.rx_msgs;
		c[CTR_BSM_ALONE] += s.bsm_standalone;
		c[CTR_BSM_PIGGY] += s.bsm_piggyback;
		c[CTR_FC_TIMEOUTS] += s.fc_timeouts;
		c[CTR_RX_OVERRUNS] += s.rx_overruns;
		c[CTR_RX_DROPPED] += s.rx_dropped;
		c[CTR_AM_UNKNOWN] += s.am_unknown;
		c[CTR_ERRORS] += s.errors;
		c[CTR_BARE_TX] += s.am_bare_tx;
	}
	return 0;
}

static void ctr_sub(uint64_t d[NCTR], const uint64_t end[NCTR], const uint64_t start[NCTR])
{
	for (int i = 0; i < NCTR; i++)
		d[i] = end[i] - start[i];
}

/* Ends a counted phase that began with c0 = am_counters() towards the
 * peer: d[0..NCTR) gets this side's counters since, d[NCTR..2 NCTR) the
 * server's (the server sends them to the client, which waits for them). */
static int am_exchange(struct perf_run *r, const uint64_t c0[NCTR], uint64_t *d)
{
	int peer = r->rank == PERF_CLIENT ? PERF_SERVER : PERF_CLIENT;
	uint64_t c1[NCTR];
	struct timespec ts;
	triad_req_t *req;
	int ret;

	ret = am_counters(r, peer, c1);
	if (ret)
		return ret;
	ctr_sub(d, c1, c0);
	if (r->rank == PERF_SERVER) {
		ret = triad_am_send(r->ctx, PERF_CLIENT, AM_STATS, d, NCTR * sizeof(*d),
				    TRIAD_PRIO_HIGH, &req);
		if (ret) {
			perf_err(r, "triad_am_send (counters)", ret);
			return ret;
		}
		ret = triad_wait(req, r->timeout_ms);
		if (ret) {
			perf_err(r, "triad_wait (counters)", ret);
			return ret;
		}
		return perf_finish_req(r, req, "active message (counters)");
	}
	deadline_ts(r->timeout_ms, &ts);
	pthread_mutex_lock(&r->am->mu);
	while (!r->am->peer_ready && ret != ETIMEDOUT)
		ret = pthread_cond_timedwait(&r->am->cv, &r->am->mu, &ts);
	if (r->am->peer_ready > 0)
		memcpy(d + NCTR, r->am->peer, sizeof(r->am->peer));
	ret = r->am->peer_ready > 0 ? 0 : r->am->peer_ready < 0 ? -EBADMSG : -ETIMEDOUT;
	pthread_mutex_unlock(&r->am->mu);
	if (ret)
		perf_err(r, "the server's counters", ret);
	return ret;
}

/* {"tx_msgs":N,...}: one side's counters from d (side 0: the client's,
 * 1: the server's; see am_exchange), as a JSON object. */
static void json_counters(char *buf, size_t len, const uint64_t *d, int side)
{
	size_t n = (size_t)snprintf(buf, len, "{");

	for (int i = 0; i < NCTR && n < len; i++)
		n += (size_t)snprintf(buf + n, len - n, "%s\"%s\":%llu", i ? "," : "",
				      ctr_names[i], (unsigned long long)d[side * NCTR + i]);
	if (n < len)
		snprintf(buf + n, len - n, "}");
}

static double pct(uint64_t part, uint64_t whole)
{
	return whole ? 100.0 * (double)part / (double)whole : 0.0;
}

/* Reports, and counts as a verification error, what the handlers found
 * wrong and, from the counters, what a correct library never does. */
static void am_check(struct perf_run *r, const char *test, size_t size, const uint64_t *c)
{
	struct perf_am *am = r->am;
	long bad = atomic_load(&am->bad);
	int err = atomic_load(&am->send_err);

	if (bad) {
		fprintf(stderr, "triad-perf: rank %d: %s %zu B: %ld message(s) with a wrong "
			"length or out of order\n", r->rank, test, size, bad);
		r->verify_errors++;
	}
	if (err) {
		perf_err(r, "triad_am_send (reply from the handler)", err);
		r->verify_errors++;
	}
	if (c && (c[CTR_RX_OVERRUNS] || c[CTR_RX_DROPPED] || c[CTR_AM_UNKNOWN])) {
		fprintf(stderr, "triad-perf: rank %d: %s %zu B: rx_overruns %llu, rx_dropped "
			"%llu, am_unknown %llu\n", r->rank, test, size,
			(unsigned long long)c[CTR_RX_OVERRUNS],
			(unsigned long long)c[CTR_RX_DROPPED],
			(unsigned long long)c[CTR_AM_UNKNOWN]);
		r->verify_errors++;
	}
}

/* ---- am_lat: ping-pong of active messages, like ib_send_lat --------------------------*/
/* Client: send ping i, wait until the pong handler has counted pong i.
 *
 * How to wait.  No request tracks an incoming message (a ping's request
 * completes when the ping reached rank 1, before the pong comes), so the
 * client waits for the pong handler's count:
 *  - --serve poll: call triad_progress() in a loop, as perftest and
 *    ucx_perftest busy-poll; the handlers run on this thread, nothing
 *    wakes up.  36.8 us against ib_send_lat's 30.1 in one VM run;
 *  - --serve wait (the default): send the ping without a request, never
 *    call in, and spin on the count with sched_yield().  The pong handler
 *    runs in the context's progress thread, woken by the completion
 *    channel; 80 us in quiet runs, and several times that while the host is
 *    loaded (each wake-up of an idle vCPU waits for the host's scheduler).
 * Measured before (8 B, 500 round trips, one VM run, 190 us for the way
 * above): triad_test() on the ping's request, then as above, 223 us (a
 * thread that polls makes the progress thread leave completion events off
 * for 2 ms, so the pong often waited for the re-arm timer); spinning on the
 * count without yielding 343 us; sleeping on a condition variable the pong
 * handler signals 382 us.
 * A ping that fails is seen as a missing pong (--timeout); the library logs
 * why. */
static int am_lat_client(struct perf_run *r, size_t size, long iters, long warmup,
			 uint64_t *t)
{
	struct perf_am *am = r->am;
	uint8_t *out = perf_send_area(r) + size - 1;
	const uint64_t tmo = (uint64_t)r->timeout_ms * 1000000;
	int ret;

	for (long i = 0; i < warmup + iters; i++) {
		uint64_t t0 = perf_now_ns(), t1;
		unsigned spins = 0;

		*out = perf_iter_value(i);
		ret = triad_am_send(r->ctx, PERF_SERVER, AM_PING, perf_send_area(r), size,
				    r->o->prio, NULL);
		if (ret) {
			perf_err(r, "triad_am_send (ping)", ret);
			return ret;
		}
		while (atomic_load_explicit(&am->count, memory_order_acquire) <= i) {
			if (r->o->serve_poll)
				triad_progress(r->ctx);
			else
				sched_yield();
			if (++spins % 256 == 0 && perf_now_ns() - t0 > tmo) {
				fprintf(stderr, "triad-perf: rank %d: iteration %ld: no pong after "
					"%d ms\n", r->rank, i, r->timeout_ms);
				return -ETIMEDOUT;
			}
		}
		t1 = perf_now_ns();
		if (i >= warmup)
			t[i - warmup] = t1 - t0;
	}
	return 0;
}

int perf_am_lat(struct perf_run *r, size_t size, long iters, long warmup)
{
	const int phase_ms = perf_phase_timeout_ms(r, size, warmup + iters, 2);
	int peer = r->rank == PERF_CLIENT ? PERF_SERVER : PERF_CLIENT;
	uint64_t *t = NULL, c0[NCTR], d[2 * NCTR] = { 0 };
	char client[512], server[512];
	struct perf_lat lat;
	int ret;

	if (r->rank == PERF_CLIENT && !(t = calloc((size_t)iters, sizeof(*t)))) {
		perf_err(r, "am_lat", -ENOMEM);
		return -ENOMEM;
	}
	perf_prepare(r, size);
	/* The server sleeps until its handler answered every ping. */
	am_begin(r->am, size, r->rank == PERF_SERVER ? warmup + iters : 0);
	/* The counters cover the warm-up too, and the barrier's two messages. */
	ret = r->rank <= PERF_SERVER ? am_counters(r, peer, c0) : 0;
	if (!ret)
		ret = perf_barrier(r, r->timeout_ms, "before am_lat");
	if (!ret && r->rank == PERF_CLIENT)
		ret = am_lat_client(r, size, iters, warmup, t);
	else if (!ret && r->rank == PERF_SERVER)
		ret = am_wait_count(r->am, phase_ms, "am_lat (pings)");
	if (!ret && r->rank <= PERF_SERVER)
		ret = am_exchange(r, c0, d);
	if (!ret)
		ret = perf_barrier(r, phase_ms, "after am_lat");
	if (!ret && r->rank <= PERF_SERVER) {
		/* The last message's last byte is its iteration value. */
		perf_verify(r, size - 1, size, "am_lat");
		am_check(r, "am_lat", size, d);
	}
	if (!ret && r->rank == PERF_CLIENT) {
		/* Standalone BSMs of both sides per message (ping or pong). */
		const struct perf_field extra[] = {
			PF_DBL("bsm_standalone_per_data_pct", NULL, 0, 3,
			       pct(d[CTR_BSM_ALONE] + d[NCTR + CTR_BSM_ALONE],
				   2 * (uint64_t)(warmup + iters))),
			PF_RAW("client", client),
			PF_RAW("server", server),
		};

		json_counters(client, sizeof(client), d, 0);
		json_counters(server, sizeof(server), d, 1);
		perf_lat_summarize(t, (size_t)iters, 0.5, &lat);
		perf_report_lat(r, "am_lat", "half round trip", NULL, size, iters, warmup, &lat,
				extra, PF_N(extra));
	}
	free(t);
	return ret;
}

/* ---- am_bw: a window of outstanding active messages, like ib_send_bw ---------------------*/
/* Message i of a stream starting at *first: its value goes in the last
 * byte (triad_am_send copies it).  A request completes when its message
 * reached rank 1 (the library queues what flow control holds back);
 * testing the oldest drives progress here: BSMs from rank 1 free slots. */
struct am_to {
	long first; /* the stream's first message number */
	int dest;
};

static int post_am(struct perf_run *r, size_t size, long i, triad_req_t **req_p, void *arg)
{
	const struct am_to *to = arg;
	int ret;

	perf_send_area(r)[size - 1] = perf_iter_value(to->first + i);
	ret = triad_am_send(r->ctx, to->dest, AM_STREAM, perf_send_area(r), size, r->o->prio,
			    req_p);
	if (ret)
		perf_err(r, "triad_am_send", ret);
	return ret;
}

static int am_bw_pass(struct perf_run *r, size_t size, long first, long n, triad_req_t **ring,
		      uint64_t *tpost, uint64_t *tcomp)
{
	struct am_to to = { .first = first, .dest = PERF_SERVER };
	const struct perf_stream_ops ops = { .what = "active message", .post = post_am, .arg = &to };

	return perf_stream(r, size, n, ring, tpost, tcomp, &ops);
}

/* Client: stream, then collect the server's counters. */
static int am_bw_client(struct perf_run *r, size_t size, long iters, long warmup,
			const struct perf_bufs *b, uint64_t *d)
{
	uint64_t c0[NCTR];
	int ret;

	ret = am_bw_pass(r, size, 0, warmup, b->ring, NULL, NULL);
	if (!ret)
		ret = perf_barrier(r, r->timeout_ms, "am_bw warm-up done");
	if (!ret)
		ret = am_counters(r, PERF_SERVER, c0);
	if (!ret)
		ret = am_bw_pass(r, size, warmup, iters, b->ring, b->tpost, b->tcomp);
	return ret ? ret : am_exchange(r, c0, d);
}

/* Server: the handler counts; sleep until it counted everything. */
static int am_bw_server(struct perf_run *r, size_t size, long iters, long warmup,
			uint64_t *d)
{
	uint64_t c0[NCTR];
	int ret;

	ret = perf_barrier(r, perf_phase_timeout_ms(r, size, warmup, 1), "am_bw warm-up done");
	/* The client starts streaming when it leaves the barrier: the window
	 * may open a message or two late here. */
	if (!ret)
		ret = am_counters(r, PERF_CLIENT, c0);
	if (!ret)
		ret = am_wait_count(r->am, perf_phase_timeout_ms(r, size, iters, 1), "am_bw");
	return ret ? ret : am_exchange(r, c0, d);
}

/* d[0..NCTR): the client's counters towards the server, d[NCTR..): the
 * server's towards the client, both over the measured messages. */
static const struct perf_plot am_bw_plot = {
	.title = "active-message bandwidth", .xlabel = "message size", .ylabel = "MiB/s",
	.x = "bytes", .y = { "bw_avg_mib_s", "bw_peak_mib_s" }, .ytitle = { "average", "peak" },
};

static void report_am_bw(struct perf_run *r, size_t size, long iters, long warmup,
			 const struct perf_bw *b, const uint64_t *d)
{
	const uint64_t *cl = d, *sv = d + NCTR;
	char path[128], title[1024], client[512], server[512];
	struct perf_field f[PERF_COMMON_FIELDS + 13];
	size_t n = perf_common_fields(r, "am_bw", size, iters, warmup, f);
	const struct perf_field figs[] = {
		PF_INT("window", NULL, 0, r->o->window),
		PF_DBL("bw_peak_mib_s", "BW peak[MiB/s]", 15, 3, b->peak_mib_s),
		PF_DBL("bw_avg_mib_s", "BW average[MiB/s]", 18, 3, b->avg_mib_s),
		PF_DBL("msg_rate_mpps", "MsgRate[Mpps]", 14, 6, b->mpps),
		PF_INT("msgs_0_1", "msgs 0>1", 9, cl[CTR_TX_MSGS]),
		PF_INT("msgs_1_0", "msgs 1>0", 9, sv[CTR_TX_MSGS]),
		PF_INT("bsm_alone", "BSM alone", 10, sv[CTR_BSM_ALONE]),
		PF_INT("bsm_piggyback", "piggyback", 10, cl[CTR_BSM_PIGGY] + sv[CTR_BSM_PIGGY]),
		PF_INT("fc_timeouts", "fc tmo", 7, cl[CTR_FC_TIMEOUTS] + sv[CTR_FC_TIMEOUTS]),
		PF_DBL("bsm_standalone_per_data_pct", "alone/data[%]", 13, 1,
		       pct(sv[CTR_BSM_ALONE], (uint64_t)iters)),
		PF_DBL("bare_per_data_pct", "bare[%]", 8, 1, pct(cl[CTR_BARE_TX], (uint64_t)iters)),
		PF_RAW("client", client),
		PF_RAW("server", server),
	};

	json_counters(client, sizeof(client), d, 0);
	json_counters(server, sizeof(server), d, 1);
	perf_fields_add(f, &n, PF_N(f), figs, PF_N(figs));
	perf_describe_path(r, path, sizeof(path));
	snprintf(title, sizeof(title),
		 " triad am_bw: rank %d -> rank %d, %s, %d ranks, %d messages outstanding\n"
		 " counters of the measured messages, summed over planes: msgs = messages "
		 "sent (data, control, BSMs);\n"
		 " BSM alone = standalone BSMs the receiver sent; piggyback = BSMs in "
		 "message headers (both ways);\n"
		 " fc tmo = slots freed by timeout (both sides); alone/data = BSM alone "
		 "per data message\n",
		 PERF_CLIENT, PERF_SERVER, path, triad_size(r->ctx), r->o->window);
	perf_out_row(r, title, f, n, &am_bw_plot);
}

int perf_am_bw(struct perf_run *r, size_t size, long iters, long warmup)
{
	uint64_t d[2 * NCTR] = { 0 };
	struct perf_bufs b = { 0 };
	struct perf_bw bw;
	int ret;

	if (r->rank == PERF_CLIENT && (ret = perf_bufs_alloc(r, &b, iters, "am_bw")))
		return ret;
	perf_prepare(r, size);
	am_begin(r->am, size, r->rank == PERF_SERVER ? warmup + iters : 0);
	ret = perf_barrier(r, r->timeout_ms, "before am_bw");
	if (!ret && r->rank == PERF_CLIENT)
		ret = am_bw_client(r, size, iters, warmup, &b, d);
	else if (!ret && r->rank == PERF_SERVER)
		ret = am_bw_server(r, size, iters, warmup, d);
	else if (!ret)
		ret = perf_barrier(r, perf_phase_timeout_ms(r, size, warmup, 1),
				   "am_bw warm-up done");
	if (!ret)
		ret = perf_barrier(r, perf_phase_timeout_ms(r, size, iters, 1), "after am_bw");
	if (!ret && r->rank <= PERF_SERVER)
		am_check(r, "am_bw", size, d); /* d: this side's own counters */
	if (!ret && r->rank == PERF_CLIENT) {
		perf_bw_summarize(b.tpost, b.tcomp, (size_t)iters, size, &bw);
		report_am_bw(r, size, iters, warmup, &bw, d);
	}
	perf_bufs_free(&b);
	return ret;
}

/* ---- am_bibw: both ranks stream at once, like osu_bibw ----------------------------------*/
/* Ranks 0 and 1 each stream --window messages to the other while their
 * handlers count the other's; both directions' bytes over rank 0's time
 * from the barrier before the measured streams to the one after both
 * ranks counted every message. */
int perf_am_bibw(struct perf_run *r, size_t size, long iters, long warmup)
{
	const int peer = r->rank == PERF_CLIENT	  ? PERF_SERVER
			 : r->rank == PERF_SERVER ? PERF_CLIENT
						  : -1;
	const int bar_ms = perf_phase_timeout_ms(r, size, warmup + iters, 2);
	struct am_to to = { .first = 0, .dest = peer };
	const struct perf_stream_ops ops = { .what = "active message", .post = post_am, .arg = &to };
	struct perf_bufs b = { 0 };
	struct perf_bw bw;
	uint64_t t0;
	int ret;

	if (peer >= 0 && (ret = perf_bufs_alloc(r, &b, 1, "am_bibw")))
		return ret;
	perf_prepare(r, size);
	am_begin(r->am, size, peer >= 0 ? warmup : 0);
	ret = perf_barrier(r, r->timeout_ms, "before am_bibw");
	if (!ret && peer >= 0)
		ret = perf_stream(r, size, warmup, b.ring, NULL, NULL, &ops);
	if (!ret && peer >= 0)
		ret = am_wait_count(r->am, bar_ms, "am_bibw warm-up");
	/* Every warm-up message is counted: the measured ones count from 0
	 * again, and none is sent before both ranks reset. */
	if (!ret)
		am_begin(r->am, size, peer >= 0 ? iters : 0);
	if (!ret)
		ret = perf_barrier(r, bar_ms, "am_bibw warm-up done");
	t0 = perf_now_ns();
	if (!ret && peer >= 0)
		ret = perf_stream(r, size, iters, b.ring, NULL, NULL, &ops);
	if (!ret && peer >= 0)
		ret = am_wait_count(r->am, bar_ms, "am_bibw");
	if (!ret)
		ret = perf_barrier(r, bar_ms, "after am_bibw");
	if (!ret && peer >= 0)
		am_check(r, "am_bibw", size, NULL);
	if (!ret && r->rank == PERF_CLIENT) {
		perf_aggregate_bw(size, 2 * iters, perf_now_ns() - t0, &bw);
		perf_report_bw(r, "am_bibw", "rank 0 <-> rank 1, both directions summed",
			       "messages each way", size, iters, warmup, &bw, NULL, 0);
	}
	perf_bufs_free(&b);
	return ret;
}
