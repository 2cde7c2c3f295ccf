/* The third-party copy measurements: copy_lat and copy_bw, one size per
 * call.  Three ranks take part: rank 0 (PERF_COPY_INITIATOR) orders rank 1
 * (PERF_COPY_SOURCE) to write its send area into the receive area of rank 2
 * (PERF_COPY_DEST).  Ranks 1 and 2 make no triad call while the copies run:
 * they wait in the barrier that ends the measurement, and their progress
 * engines serve the copies.  Ranks beyond 2 only join the barriers.
 *
 * Same steps as the one-sided tests (perf_tests.c): prepare -> barrier ->
 * measure (rank 0) -> barrier -> verify (rank 2) -> report (rank 0).
 * Rank 0 polls triad_test() on its request, as put_lat and put_bw poll on
 * theirs, so the figure is the library's, not a wake-up's.
 *
 * With --serve poll, ranks 1 and 2 call triad_progress() in a loop instead
 * of sleeping, until rank 0's STOP active message: the copy then costs no
 * wake-up anywhere, and the difference from the default is what waking the
 * progress threads costs on this machine. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "perf.h"

/* Messages a copy costs at most (START, DATA, RESP, DONE), for the bound
 * on how long ranks 1 and 2 wait in the barrier. */
#define COPY_TRANSFERS 4

/* The active message that ends a --serve poll phase (perf_am's are 1-4). */
#define AM_STOP 9

const char *perf_copy_mode_str(unsigned mode)
{
	switch (mode) {
	case TRIAD_COPY_RELAY: return "relay";
	case TRIAD_COPY_DIRECT: return "direct";
	case TRIAD_COPY_TRANSPORT_ACK: return "transport-ack";
	}
	return "?";
}

/* The world must have the three roles. */
static int check_world(struct perf_run *r, const char *test)
{
	if (triad_size(r->ctx) > PERF_COPY_DEST)
		return 0;
	fprintf(stderr, "triad-perf: rank %d: %s needs %d ranks (initiator %d, source %d, "
		"destination %d); the world has %d\n", r->rank, test, PERF_COPY_DEST + 1,
		PERF_COPY_INITIATOR, PERF_COPY_SOURCE, PERF_COPY_DEST, triad_size(r->ctx));
	return -EINVAL;
}

/* Orders one copy of size bytes: rank 1's send area -> rank 2's receive
 * area. */
static int post_copy(struct perf_run *r, size_t size, triad_req_t **req_p)
{
	int ret = triad_copy(r->ctx, PERF_COPY_SOURCE, PERF_WIN_ID, r->area, PERF_COPY_DEST,
			     PERF_WIN_ID, 0, size, r->o->copy_mode, req_p);

	if (ret == -EAGAIN)
		fprintf(stderr, "triad-perf: rank %d: triad_copy: too many copies outstanding "
			"(raise TRIAD_COPY_OPS or lower --window)\n", r->rank);
	else if (ret)
		perf_err(r, "triad_copy", ret);
	return ret;
}

/* Checks a completed copy's status (and names the leg that failed), frees
 * it. */
static int finish_copy(struct perf_run *r, triad_req_t *req)
{
	enum triad_status st = triad_req_status(req);
	enum triad_copy_leg leg = triad_req_copy_leg(req);
	int ret = triad_req_free(req);

	if (ret) {
		perf_err(r, "triad_req_free", ret);
		return ret;
	}
	if (st != TRIAD_S_OK) {
		fprintf(stderr, "triad-perf: rank %d: copy (%s) failed: %s, leg %s\n", r->rank,
			perf_copy_mode_str(r->o->copy_mode), triad_status_str(st),
			triad_copy_leg_str(leg));
		return -EIO;
	}
	return 0;
}

/* Polls req until it completes (bounded by --timeout), then finishes it.
 * On timeout the request is leaked on purpose: the library may still write
 * into it. */
static int poll_copy(struct perf_run *r, triad_req_t *req, long iter)
{
	uint64_t deadline = 0;
	unsigned spins = 0;
	int ret;

	while ((ret = triad_test(req)) == 0) {
		if (++spins % 64)
			continue;
		if (!deadline) {
			deadline = perf_now_ns() + (uint64_t)r->timeout_ms * 1000000;
		} else if (perf_now_ns() > deadline) {
			fprintf(stderr, "triad-perf: rank %d: copy %ld did not complete in %d ms\n",
				r->rank, iter, r->timeout_ms);
			return -ETIMEDOUT;
		}
	}
	if (ret < 0) {
		perf_err(r, "triad_test", ret);
		return ret;
	}
	return finish_copy(r, req);
}

/* The fields of every copy row: mode, how the ranks serve, who is who. */
#define COPY_ROLE_FIELDS 5
static void role_fields(const struct perf_run *r, struct perf_field *f)
{
	const struct perf_field roles[COPY_ROLE_FIELDS] = {
		PF_STR("mode", NULL, 0, perf_copy_mode_str(r->o->copy_mode)),
		PF_STR("serve", NULL, 0, r->o->serve_poll ? "poll" : "wait"),
		PF_INT("initiator", NULL, 0, PERF_COPY_INITIATOR),
		PF_INT("source", NULL, 0, PERF_COPY_SOURCE),
		PF_INT("destination", NULL, 0, PERF_COPY_DEST),
	};

	memcpy(f, roles, sizeof(roles));
}

/* The title of a copy table: who copies to whom, in which mode. */
static void title_of(const struct perf_run *r, const char *test, const char *tail, char *buf,
		     size_t len)
{
	char path[128];

	perf_describe_path(r, path, sizeof(path));
	snprintf(buf, len, " triad %s, %s mode: rank %d orders rank %d -> rank %d (%s), %s, "
		 "%d ranks%s\n", test, perf_copy_mode_str(r->o->copy_mode), PERF_COPY_INITIATOR,
		 PERF_COPY_SOURCE, PERF_COPY_DEST, r->o->serve_poll ? "which poll" : "which wait",
		 path, triad_size(r->ctx), tail);
}

static int on_stop(void *arg, int src_rank, const void *data, size_t len, triad_am_msg_t *msg)
{
	struct perf_run *r = arg;

	(void)src_rank;
	(void)data;
	(void)len;
	(void)msg;
	r->stop = 1;
	return TRIAD_AM_DONE;
}

/* --serve poll, before the phase's first barrier: every rank registers the
 * STOP handler once (registering is local: rank 0's STOP cannot arrive
 * before the barrier that follows). */
static int serve_setup(struct perf_run *r)
{
	int ret;

	r->stop = 0;
	if (!r->o->serve_poll || r->stop_registered)
		return 0;
	ret = triad_am_register(r->ctx, AM_STOP, on_stop, r);
	if (ret)
		perf_err(r, "triad_am_register", ret);
	else
		r->stop_registered = 1;
	return ret;
}

/* --serve poll: ranks 1 and 2 poll until rank 0's STOP (bounded by
 * timeout_ms); rank 0 sends STOP to both once it has measured. */
static int serve_poll(struct perf_run *r, int timeout_ms)
{
	uint64_t deadline = perf_now_ns() + (uint64_t)timeout_ms * 1000000;
	int ret;

	if (r->rank == PERF_COPY_INITIATOR) {
		for (int peer = PERF_COPY_SOURCE; peer <= PERF_COPY_DEST; peer++) {
			char stop = 1;

			ret = triad_am_send(r->ctx, peer, AM_STOP, &stop, 1, TRIAD_PRIO_HIGH,
					    NULL);
			if (ret) {
				perf_err(r, "triad_am_send (stop)", ret);
				return ret;
			}
		}
		return 0;
	}
	if (r->rank != PERF_COPY_SOURCE && r->rank != PERF_COPY_DEST)
		return 0;
	while (!r->stop) {
		ret = triad_progress(r->ctx);
		if (ret < 0) {
			perf_err(r, "triad_progress", ret);
			return ret;
		}
		if (perf_now_ns() > deadline) {
			fprintf(stderr, "triad-perf: rank %d: no stop from rank %d in %d ms\n",
				r->rank, PERF_COPY_INITIATOR, timeout_ms);
			return -ETIMEDOUT;
		}
	}
	return 0;
}

/* The end of a size: barrier (ranks 1 and 2 wait here while rank 0
 * measures, or poll first with --serve poll), then rank 2 checks what
 * landed. */
static int end_phase(struct perf_run *r, size_t size, long ops, const char *where,
		     const char *test)
{
	int tmo = perf_phase_timeout_ms(r, size, ops, COPY_TRANSFERS);
	int ret = r->o->serve_poll ? serve_poll(r, tmo) : 0;

	if (!ret)
		ret = perf_barrier(r, tmo, where);

	if (!ret && r->rank == PERF_COPY_DEST)
		perf_verify(r, size, size, test);
	return ret;
}

/* ---- copy_lat: one copy at a time -----------------------------------------------------*/
int perf_copy_lat(struct perf_run *r, size_t size, long iters, long warmup)
{
	struct perf_field extra[COPY_ROLE_FIELDS];
	char title[512];
	uint64_t *t = NULL;
	struct perf_lat lat;
	triad_req_t *req;
	int ret = check_world(r, "copy_lat");

	if (ret)
		return ret;
	if (r->rank == PERF_COPY_INITIATOR && !(t = calloc((size_t)iters, sizeof(*t)))) {
		perf_err(r, "copy_lat", -ENOMEM);
		return -ENOMEM;
	}
	perf_prepare(r, size);
	ret = serve_setup(r);
	if (!ret)
		ret = perf_barrier(r, r->timeout_ms, "before copy_lat");
	for (long i = 0; !ret && r->rank == PERF_COPY_INITIATOR && i < warmup + iters; i++) {
		uint64_t t0 = perf_now_ns();

		ret = post_copy(r, size, &req);
		if (!ret)
			ret = poll_copy(r, req, i);
		if (!ret && i >= warmup)
			t[i - warmup] = perf_now_ns() - t0;
	}
	if (!ret)
		ret = end_phase(r, size, warmup + iters, "after copy_lat", "copy_lat");
	if (!ret && r->rank == PERF_COPY_INITIATOR) {
		perf_lat_summarize(t, (size_t)iters, 1.0, &lat);
		role_fields(r, extra);
		title_of(r, "copy_lat", "; times are the full copy completion time", title,
			 sizeof(title));
		perf_report_lat(r, "copy_lat", "full copy completion time", title, size, iters,
				warmup, &lat, extra, COPY_ROLE_FIELDS);
	}
	free(t);
	return ret;
}

/* ---- copy_bw: a window of outstanding copies ---------------------------------------------*/
static int stream_post_copy(struct perf_run *r, size_t size, long i, triad_req_t **req_p,
			    void *arg)
{
	(void)i;
	(void)arg;
	return post_copy(r, size, req_p);
}

static int stream_finish_copy(struct perf_run *r, triad_req_t *req, void *arg)
{
	(void)arg;
	return finish_copy(r, req);
}

static const struct perf_stream_ops copy_stream = {
	.what = "copy", .post = stream_post_copy, .finish = stream_finish_copy,
};

static const struct perf_plot copy_bw_plot = {
	.title = "third-party copy bandwidth", .xlabel = "copy size", .ylabel = "MiB/s",
	.x = "bytes", .y = { "bw_avg_mib_s", "bw_peak_mib_s" }, .ytitle = { "average", "peak" },
};

static void report_bw(struct perf_run *r, size_t size, long iters, long warmup,
		      const struct perf_bw *b)
{
	struct perf_field f[PERF_COMMON_FIELDS + 4 + COPY_ROLE_FIELDS];
	size_t n = perf_common_fields(r, "copy_bw", size, iters, warmup, f);
	char title[512], tail[64];
	const struct perf_field figs[] = {
		PF_INT("window", NULL, 0, r->o->window),
		PF_DBL("bw_peak_mib_s", "BW peak[MiB/s]", 18, 3, b->peak_mib_s),
		PF_DBL("bw_avg_mib_s", "BW average[MiB/s]", 20, 3, b->avg_mib_s),
		PF_DBL("msg_rate_mpps", "MsgRate[Mpps]", 15, 6, b->mpps),
	};

	perf_fields_add(f, &n, PF_N(f), figs, PF_N(figs));
	role_fields(r, f + n);
	n += COPY_ROLE_FIELDS;
	snprintf(tail, sizeof(tail), ", %d copies outstanding", r->o->window);
	title_of(r, "copy_bw", tail, title, sizeof(title));
	perf_out_row(r, title, f, n, &copy_bw_plot);
}

int perf_copy_bw(struct perf_run *r, size_t size, long iters, long warmup)
{
	struct perf_bufs b = { 0 };
	struct perf_bw bw;
	int ret = check_world(r, "copy_bw");

	if (!ret && r->rank == PERF_COPY_INITIATOR)
		ret = perf_bufs_alloc(r, &b, iters, "copy_bw");
	if (ret)
		return ret;
	perf_prepare(r, size);
	ret = serve_setup(r);
	if (!ret)
		ret = perf_barrier(r, r->timeout_ms, "before copy_bw");
	if (!ret && r->rank == PERF_COPY_INITIATOR) {
		ret = perf_stream(r, size, warmup, b.ring, NULL, NULL, &copy_stream);
		if (!ret)
			ret = perf_stream(r, size, iters, b.ring, b.tpost, b.tcomp, &copy_stream);
	}
	if (!ret)
		ret = end_phase(r, size, warmup + iters, "after copy_bw", "copy_bw");
	if (!ret && r->rank == PERF_COPY_INITIATOR) {
		perf_bw_summarize(b.tpost, b.tcomp, (size_t)iters, size, &bw);
		report_bw(r, size, iters, warmup, &bw);
	}
	perf_bufs_free(&b);
	return ret;
}
