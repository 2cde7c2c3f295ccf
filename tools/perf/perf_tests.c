/* The one-sided measurements: put_lat (ib_write_lat), get_lat (ib_read_lat)
 * and put_bw (ib_write_bw), one size per call; the helpers and reports every
 * test shares (perf.h); the table of commands.  The active-message tests
 * are in perf_am.c.
 *
 * Every rank allocates one window (PERF_WIN_ID): a receive area followed by
 * a send area of the same size.  Each size runs in the same three steps on
 * every rank, so that the barriers match even on ranks that only watch:
 *   prepare (zero the receive area, fill the send area with a pattern)
 *   -> barrier -> measure (client and server) -> barrier
 *   -> verify what arrived (outside the timing) -> report (client).
 * Every wait is bounded: a single operation or message by --timeout, the
 * barrier that waits for the other side's whole measurement by --timeout
 * plus a generous estimate of the measurement's own length. */
#include <errno.h>
#include <limits.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "perf.h"

uint64_t perf_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

void perf_err(const struct perf_run *r, const char *what, int ret)
{
	fprintf(stderr, "triad-perf: rank %d: %s: %s\n", r->rank, what, strerror(-ret));
}

/* ---- defaults --------------------------------------------------------------------*/
long perf_default_iters(enum perf_kind kind, size_t size)
{
	/* Latency: 1000, scaled by 8 KiB / size above 8 KiB, at least 10.
	 * Bandwidth: 1000, scaled by 64 KiB / size above 64 KiB, at least 20. */
	size_t knee = kind == PERF_LAT ? 8192 : 65536;
	long floor = kind == PERF_LAT ? 10 : 20;
	long n = 1000;

	if (size > knee)
		n = (long)((1000.0 * (double)knee) / (double)size);
	return n < floor ? floor : n;
}

long perf_default_warmup(long iters)
{
	long w = iters / 10;

	return w < 2 ? 2 : w;
}

/* ---- helpers -----------------------------------------------------------------------*/
/* Data pattern of byte i of a size-byte message (the same on every rank). */
uint8_t perf_pattern(size_t i, size_t size)
{
	uint32_t x = (uint32_t)i * 2654435761u ^ (uint32_t)size;

	return (uint8_t)(x ^ (x >> 13) ^ (x >> 24));
}

/* The value iteration i writes into the last byte: never 0, and never the
 * same twice in a row. */
uint8_t perf_iter_value(long i)
{
	return (uint8_t)(1 + i % 255);
}

uint8_t *perf_recv_area(struct perf_run *r) { return r->buf; }
uint8_t *perf_send_area(struct perf_run *r) { return r->buf + r->area; }

void perf_prepare(struct perf_run *r, size_t size)
{
	uint8_t *s = perf_send_area(r);

	memset(perf_recv_area(r), 0, size);
	for (size_t i = 0; i < size; i++)
		s[i] = perf_pattern(i, size);
}

/* Checks that bytes [0, n) of the receive area hold the pattern of a
 * size-byte message; counts and reports a mismatch (not fatal). */
void perf_verify(struct perf_run *r, size_t n, size_t size, const char *test)
{
	const uint8_t *p = perf_recv_area(r);

	for (size_t i = 0; i < n; i++) {
		if (p[i] != perf_pattern(i, size)) {
			fprintf(stderr,
				"triad-perf: rank %d: %s %zu B: data mismatch at byte %zu: "
				"0x%02x, expected 0x%02x\n",
				r->rank, test, size, i, p[i], perf_pattern(i, size));
			r->verify_errors++;
			return;
		}
	}
}

/* How long a rank may wait in the barrier while the others measure
 * warmup + iters operations of size bytes (transfers: per operation). */
int perf_phase_timeout_ms(const struct perf_run *r, size_t size, long ops, int transfers)
{
	/* Assume at least 2 ms per transfer and 1 MB/s, which is far slower
	 * than any fabric, even a software-emulated one. */
	double ms = r->timeout_ms +
		    (double)ops * transfers * (2.0 + (double)size / 1000.0);

	return ms > INT_MAX ? INT_MAX : (int)ms;
}

int perf_barrier(struct perf_run *r, int timeout_ms, const char *where)
{
	int ret = triad_barrier(r->ctx, timeout_ms);

	if (ret) {
		char what[96];

		snprintf(what, sizeof(what), "triad_barrier (%s, %d ms)", where, timeout_ms);
		perf_err(r, what, ret);
	}
	return ret;
}

/* Checks a completed request's status and frees it. */
int perf_finish_req(struct perf_run *r, triad_req_t *req, const char *what)
{
	enum triad_status st = triad_req_status(req);
	int ret = triad_req_free(req);

	if (ret) {
		perf_err(r, "triad_req_free", ret);
		return ret;
	}
	if (st != TRIAD_S_OK) {
		fprintf(stderr, "triad-perf: rank %d: %s failed: %s\n", r->rank, what,
			triad_status_str(st));
		return -EIO;
	}
	return 0;
}

int perf_share_with_root(struct perf_run *r, size_t len)
{
	triad_req_t *req;
	int ret;

	if (r->rank == r->o->root)
		return 0;
	ret = triad_put(r->ctx, perf_send_area(r), len, r->o->root, PERF_WIN_ID,
			r->area + (uint64_t)r->rank * len, 0, &req);
	if (ret) {
		perf_err(r, "triad_put (figures to the root)", ret);
		return ret;
	}
	ret = triad_wait(req, r->timeout_ms);
	if (ret) {
		perf_err(r, "triad_wait (figures to the root)", ret);
		return ret;
	}
	return perf_finish_req(r, req, "put (figures to the root)");
}

/* Waits (bounded) for a request, then finishes it.  On timeout the request
 * is leaked on purpose: the library may still write into it. */
static int wait_req(struct perf_run *r, triad_req_t *req, const char *what)
{
	int ret = triad_wait(req, r->timeout_ms);

	if (ret) {
		char msg[96];

		snprintf(msg, sizeof(msg), "triad_wait (%s, %d ms)", what, r->timeout_ms);
		perf_err(r, msg, ret);
		return ret;
	}
	return perf_finish_req(r, req, what);
}

/* Reaps *req_p without blocking when it is complete (then *req_p = NULL).
 * 0, or a negative errno when the request failed. */
static int reap(struct perf_run *r, triad_req_t **req_p, const char *what)
{
	int ret;

	if (!*req_p)
		return 0;
	ret = triad_test(*req_p);
	if (ret < 0) {
		perf_err(r, "triad_test", ret);
		return ret;
	}
	if (ret == 0)
		return 0;
	ret = perf_finish_req(r, *req_p, what);
	*req_p = NULL;
	return ret;
}

/* Spins of a request-less wait between its progress calls: rare enough
 * that the byte seldom arrives during a call, often enough for the chunks
 * of a put too big for the light path, which the library posts only when
 * it progresses. */
#define NOREQ_PROGRESS_SPINS 4096

/* Polls the byte at p until it holds v, reaping *req_p meanwhile: a test
 * per spin until the request completes (a small put's completes in its
 * post), then the byte alone, as ib_write_lat spins once its write
 * completed.  req_p NULL (request-less puts): one triad_progress() first,
 * byte or no byte, which reaps the light puts' completions so that their
 * send-queue slots come back, then the byte alone with a progress call
 * every NOREQ_PROGRESS_SPINS spins, as ucp_put_lat's one-sided wait calls
 * no progress: with a progress call on every spin, the wait saw the byte
 * up to one call (a completion poll of rxe) late, measured on the one-VM
 * fabric. */
static int wait_byte(struct perf_run *r, const uint8_t *p, uint8_t v, triad_req_t **req_p,
		     const char *what, long iter)
{
	const volatile uint8_t *vp = p;
	uint64_t deadline = 0;
	unsigned spins = 0;
	int ret = req_p ? 0 : triad_progress(r->ctx);

	if (ret)
		return ret;
	while (*vp != v) {
		if (req_p && (ret = reap(r, req_p, what)))
			return ret;
		if (++spins % 1024)
			continue;
		if (!req_p && spins % NOREQ_PROGRESS_SPINS == 0 &&
		    (ret = triad_progress(r->ctx)))
			return ret;
		if (!deadline) {
			deadline = perf_now_ns() + (uint64_t)r->timeout_ms * 1000000;
		} else if (perf_now_ns() > deadline) {
			fprintf(stderr,
				"triad-perf: rank %d: iteration %ld: no data from the peer "
				"after %d ms (last byte 0x%02x, expected 0x%02x)\n",
				r->rank, iter, r->timeout_ms, *vp, v);
			return -ETIMEDOUT;
		}
	}
	/* The payload before the last byte is read only after it. */
	atomic_thread_fence(memory_order_acquire);
	return 0;
}

/* ---- reports ---------------------------------------------------------------------------*/
void perf_print_rule(void)
{
	puts("------------------------------------------------------------------------------"
	     "---------------------------------------------");
}

const char *perf_prio_str(enum triad_prio prio)
{
	switch (prio) {
	case TRIAD_PRIO_HIGH: return "high";
	case TRIAD_PRIO_MEDIUM: return "medium";
	case TRIAD_PRIO_LOW: return "low";
	}
	return "?";
}

/* TRIAD_SLOTS as the library will read it (--slots sets it), or NULL. */
static const char *slots_env(void)
{
	const char *s = getenv("TRIAD_SLOTS");

	return s && *s ? s : NULL;
}

void perf_describe_path(const struct perf_run *r, char *buf, size_t len)
{
	const char *slots = slots_env();

	if (r->o->cmd->flags & PERF_CMD_AM)
		snprintf(buf, len, "library's choice of plane, %s priority, TRIAD_SLOTS %s",
			 perf_prio_str(r->o->prio), slots ? slots : "default");
	else if (r->o->plane < 0)
		snprintf(buf, len, "library's choice of plane");
	else
		snprintf(buf, len, "plane %d", r->o->plane);
}

size_t perf_common_fields(const struct perf_run *r, const char *test, size_t size, long iters,
			  long warmup, struct perf_field *f)
{
	static char slots[16];
	const char *env = slots_env();
	size_t n = 0;

	f[n++] = (struct perf_field)PF_STR("test", NULL, 0, test);
	f[n++] = (struct perf_field)PF_INT("bytes", "#bytes", 8, size);
	f[n++] = (struct perf_field)PF_INT("iterations", "#iterations", 11, iters);
	f[n++] = (struct perf_field)PF_INT("warmup", NULL, 0, warmup);
	/* "plane": the pinned plane, or null when the library chooses. */
	if (r->o->plane < 0)
		f[n++] = (struct perf_field)PF_NULL("plane");
	else
		f[n++] = (struct perf_field)PF_INT("plane", NULL, 0, r->o->plane);
	/* Messages: their priority, and TRIAD_SLOTS (null: the default). */
	if (r->o->cmd->flags & PERF_CMD_AM) {
		f[n++] = (struct perf_field)PF_STR("prio", NULL, 0, perf_prio_str(r->o->prio));
		if (env) {
			snprintf(slots, sizeof(slots), "%s", env);
			f[n++] = (struct perf_field)PF_RAW("slots", slots);
		} else {
			f[n++] = (struct perf_field)PF_NULL("slots");
		}
	}
	f[n++] = (struct perf_field)PF_INT("ranks", NULL, 0, triad_size(r->ctx));
	return n;
}

void perf_fields_add(struct perf_field *f, size_t *len, size_t cap, const struct perf_field *add,
		     size_t n)
{
	for (size_t i = 0; i < n && *len < cap; i++)
		f[(*len)++] = add[i];
}

/* A sweep's plot: the typical and the 99th percentile latency. */
static const struct perf_plot lat_plot = {
	.title = "latency", .xlabel = "message size", .ylabel = "time [us]", .x = "bytes",
	.y = { "t_typical_us", "t_p99_us" }, .ytitle = { "typical (median)", "99%" }, .logy = 1,
};

void perf_report_lat(struct perf_run *r, const char *test, const char *meaning,
		     const char *title, size_t size, long iters, long warmup,
		     const struct perf_lat *l, const struct perf_field *extra, size_t nextra)
{
	struct perf_field f[PERF_COMMON_FIELDS + 9 + 32];
	char path[128], own[512];
	size_t n = perf_common_fields(r, test, size, iters, warmup, f);
	const struct perf_field figs[] = {
		PF_STR("measure", NULL, 0, meaning),
		PF_DBL("t_min_us", "t_min[usec]", 12, 2, l->min),
		PF_DBL("t_max_us", "t_max[usec]", 12, 2, l->max),
		PF_DBL("t_typical_us", "t_typical[usec]", 16, 2, l->typical),
		PF_DBL("t_avg_us", "t_avg[usec]", 12, 2, l->avg),
		PF_DBL("t_stdev_us", "t_stdev[usec]", 14, 2, l->stdev),
		PF_DBL("t_p99_us", "99% [usec]", 14, 2, l->p99),
		PF_DBL("t_p999_us", "99.9% [usec]", 16, 2, l->p999),
	};

	perf_fields_add(f, &n, PF_N(f), figs, PF_N(figs));
	perf_fields_add(f, &n, PF_N(f), extra, nextra);
	if (!title) {
		perf_describe_path(r, path, sizeof(path));
		snprintf(own, sizeof(own), " triad %s: rank %d -> rank %d, %s, %d ranks; times are "
			 "the %s\n", test, PERF_CLIENT, PERF_SERVER, path, triad_size(r->ctx),
			 meaning);
		title = own;
	}
	perf_out_row(r, title, f, n, &lat_plot);
}

static const struct perf_plot bw_plot = {
	.title = "bandwidth", .xlabel = "message size", .ylabel = "MiB/s", .x = "bytes",
	.y = { "bw_avg_mib_s", "bw_peak_mib_s" }, .ytitle = { "average", "peak" },
};

void perf_report_bw(struct perf_run *r, const char *test, const char *who, const char *ops,
		    size_t size, long iters, long warmup, const struct perf_bw *b,
		    const struct perf_field *extra, size_t nextra)
{
	struct perf_field f[PERF_COMMON_FIELDS + 4 + 8];
	char path[128], title[512];
	size_t n = perf_common_fields(r, test, size, iters, warmup, f);
	const struct perf_field win = PF_INT("window", NULL, 0, r->o->window);
	const struct perf_field peak = PF_DBL("bw_peak_mib_s", "BW peak[MiB/s]", 18, 3,
					      b->peak_mib_s);
	const struct perf_field figs[] = {
		PF_DBL("bw_avg_mib_s", "BW average[MiB/s]", 20, 3, b->avg_mib_s),
		PF_DBL("msg_rate_mpps", "MsgRate[Mpps]", 15, 6, b->mpps),
	};

	perf_fields_add(f, &n, PF_N(f), &win, 1);
	if (b->peak_mib_s >= 0)
		perf_fields_add(f, &n, PF_N(f), &peak, 1);
	perf_fields_add(f, &n, PF_N(f), figs, PF_N(figs));
	perf_fields_add(f, &n, PF_N(f), extra, nextra);
	perf_describe_path(r, path, sizeof(path));
	snprintf(title, sizeof(title), " triad %s: %s, %s, %d ranks, %d %s outstanding\n", test,
		 who, path, triad_size(r->ctx), r->o->window, ops);
	perf_out_row(r, title, f, n, &bw_plot);
}

/* ---- put_lat: ping-pong of puts, like ib_write_lat ------------------------------------*/
/* --no-req: the puts to peer are complete (a flush), 0 or a negative errno. */
static int flush_puts(struct perf_run *r, int peer, const char *what)
{
	triad_req_t *req = NULL;
	int ret;

	if (!r->o->no_req)
		return 0;
	ret = triad_flush(r->ctx, peer, &req);
	if (ret) {
		perf_err(r, "triad_flush", ret);
		return ret;
	}
	return wait_req(r, req, what);
}

/* Client: put ping i, wait for pong i; one sample = the whole round trip.
 * Each put's request is tested while the pong is awaited; with --no-req the
 * puts have none. */
static int put_lat_client(struct perf_run *r, size_t size, long iters, long warmup,
			  uint64_t *t)
{
	uint8_t *out = perf_send_area(r) + size - 1, *in = perf_recv_area(r) + size - 1;
	triad_req_t *req = NULL, **req_p = r->o->no_req ? NULL : &req;
	int ret;

	for (long i = 0; i < warmup + iters; i++) {
		uint8_t v = perf_iter_value(i);
		uint64_t t0 = perf_now_ns();

		*out = v;
		ret = triad_put(r->ctx, perf_send_area(r), size, PERF_SERVER, PERF_WIN_ID, 0, r->flags,
				req_p);
		if (ret) {
			perf_err(r, "triad_put", ret);
			return ret;
		}
		ret = wait_byte(r, in, v, req_p, "put (ping)", i);
		if (!ret && req)
			ret = wait_req(r, req, "put (ping)");
		if (ret)
			return ret;
		req = NULL;
		if (i >= warmup)
			t[i - warmup] = perf_now_ns() - t0;
	}
	return flush_puts(r, PERF_SERVER, "flush (pings)");
}

/* Server: poll for ping i, put pong i back. */
static int put_lat_server(struct perf_run *r, size_t size, long iters, long warmup)
{
	uint8_t *out = perf_send_area(r) + size - 1, *in = perf_recv_area(r) + size - 1;
	triad_req_t *req = NULL, **req_p = r->o->no_req ? NULL : &req;
	int ret;

	for (long i = 0; i < warmup + iters; i++) {
		uint8_t v = perf_iter_value(i);

		ret = wait_byte(r, in, v, req_p, "put (pong)", i);
		if (!ret && req)
			ret = wait_req(r, req, "put (pong)"); /* its buffer is rewritten below */
		if (ret)
			return ret;
		req = NULL;
		/* --no-req: pong i - 1 has arrived (the client saw it before it
		 * sent ping i), so its bytes have left this buffer. */
		*out = v;
		ret = triad_put(r->ctx, perf_send_area(r), size, PERF_CLIENT, PERF_WIN_ID, 0, r->flags,
				req_p);
		if (ret) {
			perf_err(r, "triad_put", ret);
			return ret;
		}
	}
	if (req)
		return wait_req(r, req, "put (pong)");
	return flush_puts(r, PERF_CLIENT, "flush (pongs)");
}

static int put_lat(struct perf_run *r, size_t size, long iters, long warmup)
{
	uint64_t *t = NULL;
	struct perf_lat lat;
	int ret;

	if (r->rank == PERF_CLIENT && !(t = calloc((size_t)iters, sizeof(*t)))) {
		perf_err(r, "put_lat", -ENOMEM);
		return -ENOMEM;
	}
	perf_prepare(r, size);
	ret = perf_barrier(r, r->timeout_ms, "before put_lat");
	if (!ret && r->rank == PERF_CLIENT)
		ret = put_lat_client(r, size, iters, warmup, t);
	else if (!ret && r->rank == PERF_SERVER)
		ret = put_lat_server(r, size, iters, warmup);
	if (!ret)
		ret = perf_barrier(r, perf_phase_timeout_ms(r, size, warmup + iters, 2), "after put_lat");
	if (!ret && r->rank <= PERF_SERVER) {
		/* The last byte carries the iteration value, the rest the pattern. */
		perf_verify(r, size - 1, size, "put_lat");
		if (perf_recv_area(r)[size - 1] != perf_iter_value(warmup + iters - 1)) {
			fprintf(stderr, "triad-perf: rank %d: put_lat %zu B: last byte 0x%02x, "
				"expected 0x%02x\n", r->rank, size, perf_recv_area(r)[size - 1],
				perf_iter_value(warmup + iters - 1));
			r->verify_errors++;
		}
	}
	if (!ret && r->rank == PERF_CLIENT) {
		perf_lat_summarize(t, (size_t)iters, 0.5, &lat);
		perf_report_lat(r, "put_lat", "half round trip", NULL, size, iters, warmup, &lat, NULL, 0);
	}
	free(t);
	return ret;
}

/* ---- get_lat: one get at a time, like ib_read_lat ---------------------------------------*/
static int get_lat(struct perf_run *r, size_t size, long iters, long warmup)
{
	uint64_t *t = NULL;
	struct perf_lat lat;
	triad_req_t *req;
	int ret;

	if (r->rank == PERF_CLIENT && !(t = calloc((size_t)iters, sizeof(*t)))) {
		perf_err(r, "get_lat", -ENOMEM);
		return -ENOMEM;
	}
	perf_prepare(r, size);
	ret = perf_barrier(r, r->timeout_ms, "before get_lat");
	for (long i = 0; !ret && r->rank == PERF_CLIENT && i < warmup + iters; i++) {
		uint64_t t0 = perf_now_ns();

		ret = triad_get(r->ctx, perf_recv_area(r), size, PERF_SERVER, PERF_WIN_ID, r->area,
				r->flags, &req);
		if (ret) {
			perf_err(r, "triad_get", ret);
			break;
		}
		ret = wait_req(r, req, "get");
		if (!ret && i >= warmup)
			t[i - warmup] = perf_now_ns() - t0;
	}
	if (!ret)
		ret = perf_barrier(r, perf_phase_timeout_ms(r, size, warmup + iters, 1), "after get_lat");
	if (!ret && r->rank == PERF_CLIENT) {
		perf_verify(r, size, size, "get_lat");
		perf_lat_summarize(t, (size_t)iters, 1.0, &lat);
		perf_report_lat(r, "get_lat", "full get latency", NULL, size, iters, warmup, &lat, NULL, 0);
	}
	free(t);
	return ret;
}

/* ---- put_bw: a window of outstanding puts, like ib_write_bw -------------------------------*/
int perf_bufs_alloc(struct perf_run *r, struct perf_bufs *b, long iters, const char *what)
{
	b->tpost = calloc((size_t)iters, sizeof(*b->tpost));
	b->tcomp = calloc((size_t)iters, sizeof(*b->tcomp));
	b->ring = calloc((size_t)r->o->window, sizeof(*b->ring));
	if (b->tpost && b->tcomp && b->ring)
		return 0;
	perf_bufs_free(b);
	perf_err(r, what, -ENOMEM);
	return -ENOMEM;
}

void perf_bufs_free(struct perf_bufs *b)
{
	free(b->tpost);
	free(b->tcomp);
	free(b->ring);
	*b = (struct perf_bufs){ 0 };
}

int perf_stream(struct perf_run *r, size_t size, long n, triad_req_t **ring, uint64_t *tpost,
		uint64_t *tcomp, const struct perf_stream_ops *ops)
{
	const long w = r->o->window;
	uint64_t deadline = perf_now_ns() + (uint64_t)r->timeout_ms * 1000000;
	long posted = 0, done = 0;
	int ret = 0;

	while (done < n) {
		while (posted < n && posted - done < w) {
			if (tpost)
				tpost[posted] = perf_now_ns();
			ret = ops->post(r, size, posted, &ring[posted % w], ops->arg);
			if (ret)
				goto drain;
			posted++;
		}
		ret = triad_test(ring[done % w]);
		if (ret < 0) {
			perf_err(r, "triad_test", ret);
			goto drain;
		}
		if (ret == 1) {
			uint64_t t = perf_now_ns();

			if (tcomp)
				tcomp[done] = t;
			ret = ops->finish ? ops->finish(r, ring[done % w], ops->arg)
					  : perf_finish_req(r, ring[done % w], ops->what);
			done++;
			if (ret)
				goto drain;
			deadline = t + (uint64_t)r->timeout_ms * 1000000;
		} else if (perf_now_ns() > deadline) {
			fprintf(stderr, "triad-perf: rank %d: %s %ld of %ld did not complete in "
				"%d ms\n", r->rank, ops->what, done, n, r->timeout_ms);
			ret = -ETIMEDOUT;
			goto drain;
		}
	}
	return 0;
drain:
	/* Let what is still outstanding finish before the buffers go away. */
	for (; done < posted; done++)
		if (!triad_wait(ring[done % w], r->timeout_ms))
			(void)triad_req_free(ring[done % w]); /* complete: cannot fail */
	return ret;
}

/* Where a stream's puts go: from src (NULL: the send area, inside the
 * window) into the receive area of rank dest. */
struct put_to {
	void *src;
	int dest;
};

static int post_put(struct perf_run *r, size_t size, long i, triad_req_t **req_p, void *arg)
{
	const struct put_to *to = arg;
	int ret = triad_put(r->ctx, to->src ? to->src : perf_send_area(r), size, to->dest,
			    PERF_WIN_ID, 0, r->flags, req_p);

	(void)i;
	if (ret)
		perf_err(r, "triad_put", ret);
	return ret;
}

static const struct perf_stream_ops put_stream = { .what = "put", .post = post_put };

/* --no-req: waits for flush fl, which covers the puts before index end;
 * those from *covered on count as complete now. */
static int flush_reap(struct perf_run *r, triad_req_t *fl, long end, long *covered,
		      uint64_t *tcomp)
{
	int ret = wait_req(r, fl, "flush");
	uint64_t t = perf_now_ns();

	for (long i = *covered; tcomp && i < end; i++)
		tcomp[i] = t;
	*covered = end;
	return ret;
}

/* --no-req: n puts with no request (req_p NULL), a flush after every half
 * window and at most two flushes in flight, so that between half a
 * window and a window of puts are outstanding (ucx_perftest's ucp_put_bw
 * posts its puts with no request too).  A put counts as complete when the
 * flush after it does. */
static int put_stream_noreq(struct perf_run *r, size_t size, long n, uint64_t *tpost,
			    uint64_t *tcomp, void *src)
{
	const long half = r->o->window > 1 ? r->o->window / 2 : 1;
	triad_req_t *fl[2] = { NULL, NULL };
	long end[2] = { 0, 0 }, posted = 0, covered = 0;
	int k = 0, ret = 0, w;

	while (posted < n) {
		long stop = n - posted > half ? posted + half : n;

		for (; posted < stop; posted++) {
			if (tpost)
				tpost[posted] = perf_now_ns();
			ret = triad_put(r->ctx, src ? src : perf_send_area(r), size, PERF_SERVER,
					PERF_WIN_ID, 0, r->flags, NULL);
			if (ret) {
				perf_err(r, "triad_put", ret);
				goto drain;
			}
		}
		if (fl[k]) { /* the older of the two */
			ret = flush_reap(r, fl[k], end[k], &covered, tcomp);
			fl[k] = NULL;
			if (ret)
				goto drain;
		}
		ret = triad_flush(r->ctx, PERF_SERVER, &fl[k]);
		if (ret) {
			perf_err(r, "triad_flush", ret);
			fl[k] = NULL;
			goto drain;
		}
		end[k] = posted;
		k ^= 1;
	}
drain:
	for (int i = 0; i < 2; i++, k ^= 1) /* oldest first */
		if (fl[k] && (w = flush_reap(r, fl[k], end[k], &covered, tcomp)) && !ret)
			ret = w;
	return ret;
}

/* A one-pair bandwidth test: rank 0 streams warmup, then iters measured
 * operations of ops (NULL: --no-req's request-less puts from src), rank 1
 * waits in the barrier; rank verify_rank checks what arrived, rank 0
 * reports (who, what: the title's "rank 0 -> rank 1", "puts"). */
static int bw_pair(struct perf_run *r, const char *test, size_t size, long iters, long warmup,
		   const struct perf_stream_ops *ops, void *src, int verify_rank, const char *who,
		   const char *what)
{
	struct perf_bufs b = { 0 };
	struct perf_bw bw;
	int ret;

	if (r->rank == PERF_CLIENT && (ret = perf_bufs_alloc(r, &b, iters, test)))
		return ret;
	perf_prepare(r, size);
	if (src)
		memcpy(src, perf_send_area(r), size);
	ret = perf_barrier(r, r->timeout_ms, test);
	if (!ret && r->rank == PERF_CLIENT && !ops) {
		ret = put_stream_noreq(r, size, warmup, NULL, NULL, src);
		if (!ret)
			ret = put_stream_noreq(r, size, iters, b.tpost, b.tcomp, src);
	} else if (!ret && r->rank == PERF_CLIENT) {
		ret = perf_stream(r, size, warmup, b.ring, NULL, NULL, ops);
		if (!ret)
			ret = perf_stream(r, size, iters, b.ring, b.tpost, b.tcomp, ops);
	}
	if (!ret)
		ret = perf_barrier(r, perf_phase_timeout_ms(r, size, warmup + iters, 1), test);
	if (!ret && r->rank == verify_rank)
		perf_verify(r, size, size, test);
	if (!ret && r->rank == PERF_CLIENT) {
		perf_bw_summarize(b.tpost, b.tcomp, (size_t)iters, size, &bw);
		perf_report_bw(r, test, who, what, size, iters, warmup, &bw, NULL, 0);
	}
	perf_bufs_free(&b);
	return ret;
}

/* The stream of puts, from src (NULL: the send area, in the window). */
static int put_bw_from(struct perf_run *r, const char *test, size_t size, long iters, long warmup,
		       void *src)
{
	struct perf_stream_ops ops = put_stream;
	struct put_to to = { .src = src, .dest = PERF_SERVER };

	ops.arg = &to;
	return bw_pair(r, test, size, iters, warmup, r->o->no_req ? NULL : &ops, src, PERF_SERVER,
		       "rank 0 -> rank 1", "puts");
}

static int put_bw(struct perf_run *r, size_t size, long iters, long warmup)
{
	return put_bw_from(r, "put_bw", size, iters, warmup, NULL);
}

/* The same from a buffer outside every window: each put registers it, or
 * finds it in the registration cache (TRIAD_REG_CACHE). */
static int put_bw_unreg(struct perf_run *r, size_t size, long iters, long warmup)
{
	void *src = NULL;
	int ret;

	if (posix_memalign(&src, 4096, size ? size : 1)) {
		perf_err(r, "put_bw_unreg", -ENOMEM);
		return -ENOMEM;
	}
	ret = put_bw_from(r, "put_bw_unreg", size, iters, warmup, src);
	triad_mem_release(r->ctx, src, size ? size : 1);
	free(src);
	return ret;
}

/* ---- get_bw: a window of outstanding gets, like ib_read_bw ------------------------------*/
static int post_get(struct perf_run *r, size_t size, long i, triad_req_t **req_p, void *arg)
{
	int ret = triad_get(r->ctx, perf_recv_area(r), size, PERF_SERVER, PERF_WIN_ID, r->area,
			    r->flags, req_p);

	(void)i;
	(void)arg;
	if (ret)
		perf_err(r, "triad_get", ret);
	return ret;
}

static const struct perf_stream_ops get_stream = { .what = "get", .post = post_get };

/* Rank 0 gets rank 1's send area into its receive area, --window gets
 * outstanding (each one the same bytes into the same place). */
static int get_bw(struct perf_run *r, size_t size, long iters, long warmup)
{
	return bw_pair(r, "get_bw", size, iters, warmup, &get_stream, NULL, PERF_CLIENT,
		       "rank 0 <- rank 1", "gets");
}

/* ---- streams timed between two barriers: put_bibw and put_mbw --------------------------*/
/* Every rank that sends (to dest >= 0) streams warmup puts, then all meet
 * in a barrier; the senders stream iters puts, and all meet again.  The
 * reporter's time between the two barriers covers every sender's stream
 * (what osu_bibw and osu_mbw_mr time: a window's acknowledgement, here the
 * barrier, ends it).  *ns_p: that time on the reporter. */
static int barrier_timed_streams(struct perf_run *r, const char *test, size_t size, long iters,
				 long warmup, int dest, uint64_t *ns_p)
{
	struct put_to to = { .src = NULL, .dest = dest };
	struct perf_stream_ops ops = put_stream;
	struct perf_bufs b = { 0 };
	int ret = 0, bar_ms = perf_phase_timeout_ms(r, size, warmup + iters, 2);
	uint64_t t0;

	ops.arg = &to;
	if (dest >= 0 && (ret = perf_bufs_alloc(r, &b, 1, test)))
		return ret;
	perf_prepare(r, size);
	ret = perf_barrier(r, r->timeout_ms, "before the warm-up");
	if (!ret && dest >= 0)
		ret = perf_stream(r, size, warmup, b.ring, NULL, NULL, &ops);
	if (!ret)
		ret = perf_barrier(r, bar_ms, "before the measured streams");
	t0 = perf_now_ns();
	if (!ret && dest >= 0)
		ret = perf_stream(r, size, iters, b.ring, NULL, NULL, &ops);
	if (!ret)
		ret = perf_barrier(r, bar_ms, "after the measured streams");
	*ns_p = perf_now_ns() - t0;
	perf_bufs_free(&b);
	return ret;
}

void perf_aggregate_bw(size_t size, long ops, uint64_t ns, struct perf_bw *bw)
{
	double s = ns ? (double)ns / 1e9 : 1e-9;

	bw->peak_mib_s = -1; /* no single stream's peak: not reported */
	bw->avg_mib_s = (double)size * (double)ops / s / 1048576.0;
	bw->mpps = (double)ops / s / 1e6;
}

/* put_bibw: ranks 0 and 1 each stream --window puts into the other's
 * receive area at once, like ib_write_bw -b; both directions' bytes over
 * the reporter's time (osu_put_bibw). */
static int put_bibw(struct perf_run *r, size_t size, long iters, long warmup)
{
	int dest = r->rank == PERF_CLIENT ? PERF_SERVER : r->rank == PERF_SERVER ? PERF_CLIENT : -1;
	struct perf_bw bw;
	uint64_t ns;
	int ret = barrier_timed_streams(r, "put_bibw", size, iters, warmup, dest, &ns);

	if (!ret && dest >= 0)
		perf_verify(r, size, size, "put_bibw");
	if (!ret && r->rank == PERF_CLIENT) {
		perf_aggregate_bw(size, 2 * iters, ns, &bw);
		perf_report_bw(r, "put_bibw", "rank 0 <-> rank 1, both directions summed", "puts each way",
			       size, iters, warmup, &bw, NULL, 0);
	}
	return ret;
}

/* put_mbw: --pairs P; rank i < P streams --window puts into rank i + P,
 * all pairs at once, like osu_mbw_mr: the pairs' bytes and messages over
 * the reporter's time. */
static int put_mbw(struct perf_run *r, size_t size, long iters, long warmup)
{
	const int p = r->npairs;
	int dest = r->rank < p ? r->rank + p : -1;
	struct perf_bw bw;
	uint64_t ns;
	int ret = barrier_timed_streams(r, "put_mbw", size, iters, warmup, dest, &ns);

	if (!ret && r->rank >= p && r->rank < 2 * p)
		perf_verify(r, size, size, "put_mbw");
	if (!ret && r->rank == PERF_CLIENT) {
		char who[64];
		struct perf_field extra[] = {
			PF_INT("pairs", "#pairs", 7, p),
			PF_DBL("msg_rate_per_s", NULL, 0, 2, 0), /* osu_mbw_mr's Messages/s */
		};

		snprintf(who, sizeof(who), "%d pairs (rank i -> rank i + %d) at once", p, p);
		perf_aggregate_bw(size, (long)p * iters, ns, &bw);
		extra[1].v.d = bw.mpps * 1e6;
		perf_report_bw(r, "put_mbw", who, "puts per pair", size, iters, warmup, &bw, extra,
			       PF_N(extra));
	}
	return ret;
}

const struct perf_cmd perf_cmds[] = {
	{ "put_lat", put_lat, PERF_LAT, 8, 0,
	  "put ping-pong; reports half the round trip (like ib_write_lat)" },
	{ "get_lat", get_lat, PERF_LAT, 8, 0,
	  "one get at a time; reports the full get latency (like ib_read_lat)" },
	{ "put_bw", put_bw, PERF_BW, 65536, 0,
	  "--window puts outstanding to rank 1 (like ib_write_bw)" },
	{ "put_bw_unreg", put_bw_unreg, PERF_BW, 65536, 0,
	  "put_bw from a buffer outside every window (registered\n"
	  "per put, or cached with TRIAD_REG_CACHE)" },
	{ "get_bw", get_bw, PERF_BW, 65536, 0,
	  "--window gets outstanding from rank 1 (like ib_read_bw)" },
	{ "put_bibw", put_bibw, PERF_BW, 65536, 0,
	  "ranks 0 and 1 each keep --window puts outstanding to\n"
	  "the other at once; both directions summed (like\n"
	  "bidirectional ib_write_bw, osu_put_bibw)" },
	{ "put_mbw", put_mbw, PERF_BW, 65536, PERF_CMD_PAIRS,
	  "--pairs P pairs at once, rank i streaming --window puts\n"
	  "to rank i + P: aggregate bandwidth and message rate\n"
	  "(like osu_mbw_mr)" },
	{ "am_lat", perf_am_lat, PERF_LAT, 8, PERF_CMD_AM,
	  "active-message ping-pong, the reply sent from the handler;\n"
	  "reports half the round trip (like ib_send_lat)" },
	{ "am_bw", perf_am_bw, PERF_BW, 1024, PERF_CMD_AM,
	  "--window active messages outstanding to rank 1, whose\n"
	  "handler only counts; bandwidth, message rate and\n"
	  "flow-control counters of both sides (like ib_send_bw)" },
	{ "am_bibw", perf_am_bibw, PERF_BW, 1024, PERF_CMD_AM,
	  "ranks 0 and 1 each keep --window active messages\n"
	  "outstanding to the other at once; both directions\n"
	  "summed (like osu_bibw)" },
	{ "copy_lat", perf_copy_lat, PERF_LAT, 8, PERF_CMD_COPY,
	  "3 ranks: rank 0 orders one triad_copy at a time from rank 1\n"
	  "to rank 2 (--mode); reports the full completion time" },
	{ "copy_bw", perf_copy_bw, PERF_BW, 65536, PERF_CMD_COPY,
	  "3 ranks: --window copies outstanding from rank 1 to rank 2,\n"
	  "ordered by rank 0 (--mode)" },
	{ "mp_bw", perf_mp_bw, PERF_BW, 65536, PERF_CMD_MP,
	  "put_bw over 1..K planes (--planes): spread (put i pinned\n"
	  "to plane i mod k) and striped (TRIAD_F_STRIPE, when the\n"
	  "library has it); the bytes each plane carried" },
	{ "failover", perf_failover, PERF_BW, 4096, PERF_CMD_FAULT,
	  "puts and numbered active messages to rank 1 while\n"
	  "fabric-ctl takes the stream's plane away (--fault) and\n"
	  "back: times to detection, to another plane and back;\n"
	  "lost/duplicated/reordered (must be 0)" },
	{ "drain", perf_drain, PERF_BW, 4096, PERF_CMD_FAULT,
	  "the same stream while rank 0 drains the stream's plane\n"
	  "and restores it: time to DRAINED and back" },
	{ "init", NULL, PERF_LAT, 8, PERF_CMD_INIT,
	  "triad_init's time on every rank, then rank 0's first put\n"
	  "to rank 1 and -n more (median): the cost of connection\n"
	  "set-up, eager or lazy (TRIAD_CONNECT); rank 0's lanes up" },
	{ "bcast", perf_bcast, PERF_BW, 1u << 20, PERF_CMD_BCAST,
	  "triad_bcast among all ranks from --root: time, algbw, busbw\n"
	  "(like nccl-tests) and the non-roots' compute fraction\n"
	  "(work rate during a bcast / idle); default 1 MiB,\n"
	  "-n 20 scaled down by 1 MiB/SIZE (at least 3), -w 2" },
	{ "overlap", perf_overlap, PERF_BW, 1u << 20, PERF_CMD_BCAST | PERF_CMD_OVERLAP,
	  "triad_bcast from --root while every non-root computes\n"
	  "--compute us between its start and its wait, making no\n"
	  "library call: the slowest rank's bcast alone, compute\n"
	  "alone and total, and the fraction hidden; default\n"
	  "1 MiB, -n 10, -w 1" },
};
const size_t perf_ncmds = sizeof(perf_cmds) / sizeof(perf_cmds[0]);
