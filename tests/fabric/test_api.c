/* API contract checks on a real fabric, 4 ranks, every rank a process.
 *
 *   test_api [--case NAME[,NAME...]]... [--list]
 *
 * Each case asserts what the API MUST do (include/triad.h); they were
 * written from gaps found by reading the library, so on a library that
 * still has the gap the case fails.  Every case runs, on every rank, in a
 * child process of its own with fresh contexts: a case may kill a rank, or
 * crash, without taking the others down.  The ranks meet between cases,
 * and inside them, through files (below), never through triad_barrier,
 * which some cases test.  Rank 0 prints one "PASS api/NAME" or
 * "FAIL api/NAME" line per case, then a summary, and exits 1 when a case
 * failed on any rank (the other ranks exit 0).
 *
 *   fini-pending       triad_fini with puts (queued and in flight) and active
 *                      messages (queued behind a receiver that keeps every
 *                      message) pending: afterwards every request has a final
 *                      status and triad_req_free returns 0; fini takes < 3 s.
 *   barrier-fini       every rank: fresh context, barrier, fini at once (10
 *                      times): every barrier returns 0, also when the other
 *                      ranks are descheduled (stopped, 8 of the 10 times) while
 *                      rank 0's release and then its disconnect arrive (the
 *                      failure is a race: it shows in some of those only).
 *   barrier-rank-dies  rank 3 is killed instead of entering a barrier: every
 *                      survivor's barrier (timeout 8 s) fails within 3 s.
 *   barrier-retry      rank 1's barrier times out (rank 3 is late); its retry
 *                      completes the same barrier once rank 3 arrives, and the
 *                      next barrier works on every rank.
 *   win-recreate       rank 1 destroys window 10 and creates a new, larger
 *                      window 10 elsewhere: rank 0, which used the old one, gets
 *                      and puts the new one's bytes within its new bounds.
 *   win-stale-access   a put and a get to a window rank 1 destroyed fail alone
 *                      (NO_WINDOW or REMOTE_ACCESS); the valid requests issued
 *                      around them on the same plane succeed; the plane's
 *                      connection then still works at once.
 *   copy-leg-si        rank 0 orders rank 1 to copy to rank 2 (relay and
 *                      direct); rank 1 is killed once it has written data: the
 *                      requests fail with leg S->I or S->D, not I->S.
 *   api-null           triad_rank/size/nplanes(NULL) return -EINVAL,
 *                      triad_am_max_size(NULL) 0 (each in a child: a crash is
 *                      a failure).
 *   put-len0-nowin     a 0-byte put or get to a window that does not exist
 *                      fails with NO_WINDOW; a put or get of 2^50 bytes to a
 *                      4 KiB window fails with OUT_OF_BOUNDS (not NO_MEMORY).
 *   init-mask          triad_init with an unknown attr field_mask bit returns
 *                      -EINVAL.
 *
 * The ranks must share a file system: the meeting files live in
 * $TMPDIR/triad-api-<world file's name>/ (triad_run's world file is
 * unique per run).
 */
#include <dirent.h>
#include <fcntl.h>
#include <getopt.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "ft.h"

#define NRANKS 4
#define CASE_TIMEOUT_S 90

static int rank, size;
static char sync_dir[512];
static char pfx[64]; /* the case's (and iteration's) namespace for meeting files */

/* ---- meeting through files -------------------------------------------------- */
static void sync_path(char *out, size_t n, const char *tag, int r)
{
	snprintf(out, n, "%s/%s.%s.%d", sync_dir, pfx, tag, r);
}

/* Rank r says tag, with a one-character value. */
static void sync_post(const char *tag, char val)
{
	char path[700], tmp[720];
	int fd;

	sync_path(path, sizeof(path), tag, rank);
	snprintf(tmp, sizeof(tmp), "%s.tmp", path);
	fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	if (fd < 0 || write(fd, &val, 1) != 1) {
		fprintf(stderr, "rank %d: cannot write %s: %m\n", rank, tmp);
		exit(3);
	}
	close(fd);
	rename(tmp, path);
}

/* Waits until rank r said tag; its value, or 0 after timeout_ms. */
static char sync_wait(const char *tag, int r, int timeout_ms)
{
	char path[700], val = 0;
	double end = ft_now_s() + timeout_ms / 1000.0;

	sync_path(path, sizeof(path), tag, r);
	for (;;) {
		int fd = open(path, O_RDONLY);

		if (fd >= 0) {
			if (read(fd, &val, 1) != 1)
				val = '?';
			close(fd);
			return val;
		}
		if (ft_now_s() > end)
			return 0;
		usleep(10000);
	}
}

/* Every rank but `except` (-1: none) says tag and waits for the others. */
static int sync_all(const char *tag, int except)
{
	int ok = 1;

	if (rank != except)
		sync_post(tag, '1');
	for (int r = 0; r < size; r++)
		if (r != except && !sync_wait(tag, r, 60000)) {
			fprintf(stderr, "rank %d: rank %d never reached \"%s.%s\"\n", rank, r, pfx,
				tag);
			ok = 0;
		}
	return ok;
}

/* ---- helpers ------------------------------------------------------------------ */
static triad_ctx_t *init_ctx(void)
{
	triad_ctx_t *ctx;
	int ret = triad_init(NULL, &ctx);

	FT_CHECK(ret == 0, "triad_init: %s", strerror(-ret));
	return ret ? NULL : ctx;
}

/* Waits (bounded) and frees; PENDING when it did not complete. */
static enum triad_status wait_st(triad_req_t *req, int timeout_ms)
{
	enum triad_status st;

	if (triad_wait(req, timeout_ms))
		return TRIAD_S_PENDING; /* leaked: it may still complete */
	st = triad_req_status(req);
	triad_req_free(req);
	return st;
}

static enum triad_status put_st(triad_ctx_t *ctx, const void *buf, size_t len, int r,
				uint32_t win, uint64_t off, unsigned flags)
{
	triad_req_t *req;
	int ret = triad_put(ctx, buf, len, r, win, off, flags, &req);

	FT_CHECK(ret == 0, "triad_put: %s", strerror(-ret));
	return ret ? TRIAD_S_MAX : wait_st(req, 15000);
}

static enum triad_status get_st(triad_ctx_t *ctx, void *buf, size_t len, int r, uint32_t win,
				uint64_t off, unsigned flags)
{
	triad_req_t *req;
	int ret = triad_get(ctx, buf, len, r, win, off, flags, &req);

	FT_CHECK(ret == 0, "triad_get: %s", strerror(-ret));
	return ret ? TRIAD_S_MAX : wait_st(req, 15000);
}

static const char *st_str(enum triad_status st)
{
	return st == TRIAD_S_MAX ? "not submitted" : triad_status_str(st);
}

/* ---- fini-pending ----------------------------------------------------------------- */
#define FP_WIN 1
#define FP_SRC_WIN 2
#define FP_LEN (4u << 20)
#define FP_NPUT 64
#define FP_NAM 48
#define FP_AM_ID 9

static int keep_handler(void *arg, int src, const void *data, size_t len, triad_am_msg_t *msg)
{
	(void)arg, (void)src, (void)data, (void)len, (void)msg;
	return TRIAD_AM_KEEP; /* never released: the sender's slots stay full */
}

/* How long triad_fini may take with requests pending: it lets what was sent
 * be acknowledged for as long as the transport takes to give up on a plane
 * ((TRIAD_RETRY_COUNT + 2) tries of 4.096 us x 2^TRIAD_ACK_TIMEOUT) plus one
 * second once nothing moves (init.c, flush_messages), then cancels; 1.5 s
 * more for the cancel and the teardown.  At the defaults (14, 6) that is
 * 3.0 s; the lazy tests' TRIAD_ACK_TIMEOUT=16 makes it 4.6 s. */
static double fini_bound_s(void)
{
	const char *a = getenv("TRIAD_ACK_TIMEOUT"), *r = getenv("TRIAD_RETRY_COUNT");
	int ack = a ? atoi(a) : 14, retries = r ? atoi(r) : 6;

	return (retries + 2) * 4.096e-6 * (double)(1ull << ack) + 1.0 + 1.5;
}

static void case_fini_pending(triad_ctx_t **ctxp)
{
	triad_ctx_t *ctx = *ctxp;
	char *buf = calloc(1, FP_LEN);
	triad_win_t *w = NULL;

	if (rank == 1)
		FT_CHECK(triad_win_create(ctx, FP_WIN, buf, FP_LEN, NULL, &w) == 0, "window");
	if (rank == 2)
		FT_CHECK(triad_am_register(ctx, FP_AM_ID, keep_handler, NULL) == 0, "handler");
	sync_all("ready", -1);
	if (rank == 0) {
		triad_req_t *reqs[FP_NPUT + FP_NAM];
		int n = 0, pending_before = 0, pending = 0, busy = 0, ok = 0, cancelled = 0,
		    other = 0;
		char msg[1024] = { 0 };
		double t0, dt;

		FT_CHECK(triad_win_create(ctx, FP_SRC_WIN, buf, FP_LEN, NULL, &w) == 0, "src");
		for (int i = 0; i < FP_NPUT; i++)
			if (triad_put(ctx, buf, FP_LEN, 1, FP_WIN, 0, 0, &reqs[n]) == 0)
				n++;
		for (int i = 0; i < FP_NAM; i++)
			if (triad_am_send(ctx, 2, FP_AM_ID, msg, sizeof(msg), TRIAD_PRIO_LOW,
					  &reqs[n]) == 0)
				n++;
		FT_CHECK(n == FP_NPUT + FP_NAM, "only %d requests submitted", n);
		usleep(200000); /* let the first chunks and messages go out */
		for (int i = 0; i < n; i++)
			pending_before += triad_req_status(reqs[i]) == TRIAD_S_PENDING;
		t0 = ft_now_s();
		triad_fini(ctx);
		dt = ft_now_s() - t0;
		*ctxp = NULL;
		for (int i = 0; i < n; i++) {
			enum triad_status st = triad_req_status(reqs[i]);

			if (st == TRIAD_S_PENDING)
				pending++;
			else if (st == TRIAD_S_OK)
				ok++;
			else if (st == TRIAD_S_CANCELLED)
				cancelled++;
			else
				other++;
			if (triad_req_free(reqs[i]))
				busy++;
		}
		printf("fini-pending: %d puts of 4 MiB to rank 1 + %d AMs to a keeping rank 2, %d "
		       "pending at triad_fini, which took %.2f s; after it: %d ok, %d cancelled, "
		       "%d other errors, %d still PENDING, %d triad_req_free -EBUSY\n",
		       FP_NPUT, FP_NAM, pending_before, dt, ok, cancelled, other, pending, busy);
		FT_CHECK(pending_before > 0, "nothing was pending at triad_fini: the case shows nothing");
		FT_CHECK(pending == 0, "%d requests still PENDING after triad_fini", pending);
		FT_CHECK(busy == 0, "triad_req_free returned -EBUSY for %d requests after triad_fini",
			 busy);
		FT_CHECK(dt < fini_bound_s(), "triad_fini took %.2f s with requests pending "
			 "(bound %.2f s)", dt, fini_bound_s());
		sync_post("fini-done", '1');
	} else {
		/* Stay up until rank 0 has closed: a peer leaving first would fail
		 * rank 0's requests and hide the gap. */
		FT_CHECK(sync_wait("fini-done", 0, 60000), "rank 0 never finished");
	}
	/* buf stays allocated: rank 0's windows are gone, rank 1's with *ctxp */
}

/* ---- barrier-fini --------------------------------------------------------------- */
#define BF_ITER 10
#define BF_STOPPED(it) ((it) >= 2) /* the first two: nobody stopped */

/* A helper process stops this rank from 100 ms to 1100 ms from now: a rank
 * descheduled (a loaded node) while rank 0's release and then its
 * disconnect arrive, so that both are waiting when it runs again. */
static pid_t stop_me_later(void)
{
	pid_t self = getpid(), pid;

	fflush(NULL);
	pid = fork();
	if (pid == 0) {
		usleep(100000);
		kill(self, SIGSTOP);
		usleep(1000000);
		kill(self, SIGCONT);
		_exit(0);
	}
	return pid;
}

static void case_barrier_fini(triad_ctx_t **ctxp)
{
	int failed = 0;

	(void)ctxp;
	for (int it = 0; it < BF_ITER; it++) {
		char tag[32];
		triad_ctx_t *ctx;
		pid_t helper = -1;
		int ret;

		snprintf(tag, sizeof(tag), "it%d", it);
		if (!sync_all(tag, -1))
			return;
		ctx = init_ctx();
		snprintf(tag, sizeof(tag), "up%d", it);
		if (!sync_all(tag, -1) || !ctx)
			return;
		if (rank == 0)
			usleep(BF_STOPPED(it) ? 300000 : 20000); /* the others arrived (and sleep) */
		else if (BF_STOPPED(it))
			helper = stop_me_later();
		ret = triad_barrier(ctx, 20000);
		triad_fini(ctx);
		if (helper > 0)
			waitpid(helper, NULL, 0);
		FT_CHECK(ret == 0, "iteration %d: the barrier right before rank 0's triad_fini: %s",
			 it, strerror(-ret));
		failed += ret != 0;
	}
	printf("barrier-fini: rank %d: %d of %d barriers followed by triad_fini failed\n", rank,
	       failed, BF_ITER);
}

/* ---- barrier-rank-dies ----------------------------------------------------------- */
#define VICTIM 3

static void case_barrier_rank_dies(triad_ctx_t **ctxp)
{
	triad_ctx_t *ctx = *ctxp;
	double t0, dt;
	int ret;

	/* Every rank talks to rank 0 first.  (With TRIAD_CONNECT=lazy a rank
	 * that dies before anyone talked to it is found only by the next
	 * one who tries to: the barrier would fail at its timeout.) */
	ret = triad_barrier(ctx, 20000);
	FT_CHECK(ret == 0, "the barrier before the kill: %s", strerror(-ret));
	sync_all("up", -1);
	if (rank == VICTIM) {
		fflush(NULL);
		raise(SIGKILL);
	}
	t0 = ft_now_s();
	ret = triad_barrier(ctx, 8000);
	dt = ft_now_s() - t0;
	printf("barrier-rank-dies: rank %d: barrier returned %s after %.2f s (rank %d killed at "
	       "its start)\n", rank, ret ? strerror(-ret) : "0", dt, VICTIM);
	FT_CHECK(ret != 0, "the barrier succeeded with rank %d dead", VICTIM);
	FT_CHECK(dt < 3.0, "the barrier took %.2f s to fail with rank %d dead (timeout 8 s)", dt,
		 VICTIM);
	/* Nobody leaves before every survivor is done: a rank closing would
	 * make the others' barriers fail for that reason instead. */
	sync_all("done", VICTIM);
}

/* ---- barrier-retry ---------------------------------------------------------------- */
#define LATE 3
#define IMPATIENT 1

static void case_barrier_retry(triad_ctx_t **ctxp)
{
	triad_ctx_t *ctx = *ctxp;
	int ret;

	sync_all("up", -1);
	if (rank == IMPATIENT) {
		double t0;

		ret = triad_barrier(ctx, 500);
		FT_CHECK(ret == -ETIMEDOUT, "the barrier with rank %d late: %s, expected a timeout",
			 LATE, ret ? strerror(-ret) : "0");
		t0 = ft_now_s();
		ret = triad_barrier(ctx, 4000); /* the retry: rank 3 arrives ~1.5 s from now */
		printf("barrier-retry: rank %d: the retry of its timed-out barrier returned %s after "
		       "%.2f s\n", rank, ret ? strerror(-ret) : "0", ft_now_s() - t0);
		FT_CHECK(ret == 0, "the retry of a timed-out barrier: %s", strerror(-ret));
		sync_post("retried", '1');
	} else {
		if (rank == LATE)
			usleep(2000000);
		ret = triad_barrier(ctx, 10000);
		FT_CHECK(ret == 0, "the barrier rank %d times out in: %s", IMPATIENT,
			 strerror(-ret));
		FT_CHECK(sync_wait("retried", IMPATIENT, 30000), "rank %d never retried", IMPATIENT);
	}
	ret = triad_barrier(ctx, 3000);
	printf("barrier-retry: rank %d: the next barrier returned %s\n", rank,
	       ret ? strerror(-ret) : "0");
	FT_CHECK(ret == 0, "the barrier after the retried one: %s", strerror(-ret));
	sync_all("done", -1);
}

/* ---- win-recreate ------------------------------------------------------------------- */
#define WR_WIN 10
#define WR_OLD (64u << 10)
#define WR_NEW (256u << 10)
#define WR_FAR 200000 /* beyond the old window, inside the new one */

static void case_win_recreate(triad_ctx_t **ctxp)
{
	triad_ctx_t *ctx = *ctxp;
	char *a = calloc(1, WR_OLD), *b = calloc(1, WR_NEW), buf[4096];
	triad_win_t *w = NULL;
	enum triad_status st;

	if (rank == 1) {
		ft_fill(a, WR_OLD, 1, 0);
		FT_CHECK(triad_win_create(ctx, WR_WIN, a, WR_OLD, NULL, &w) == 0, "old window");
	}
	sync_all("old", -1);
	if (rank == 0) {
		st = get_st(ctx, buf, sizeof(buf), 1, WR_WIN, 0, 0);
		FT_CHECK(st == TRIAD_S_OK && ft_verify(buf, sizeof(buf), 1, 0) < 0,
			 "get from the old window: %s", st_str(st));
		ft_fill(buf, sizeof(buf), 50, 0);
		st = put_st(ctx, buf, sizeof(buf), 1, WR_WIN, 4096, 0);
		FT_CHECK(st == TRIAD_S_OK, "put to the old window: %s", st_str(st));
	}
	sync_all("used", -1);
	if (rank == 1) {
		FT_CHECK(triad_win_destroy(w) == 0, "destroy");
		ft_fill(b, WR_NEW, 2, 0);
		FT_CHECK(triad_win_create(ctx, WR_WIN, b, WR_NEW, NULL, &w) == 0, "new window");
	}
	sync_all("new", -1);
	if (rank == 0) {
		enum triad_status g, p, g2, oob;

		g = get_st(ctx, buf, sizeof(buf), 1, WR_WIN, 0, 0);
		FT_CHECK(g == TRIAD_S_OK, "get from the re-created window: %s", st_str(g));
		if (g == TRIAD_S_OK)
			FT_CHECK(ft_verify(buf, sizeof(buf), 2, 0) < 0,
				 "get from the re-created window read the old bytes");
		ft_fill(buf, sizeof(buf), 51, 0);
		p = put_st(ctx, buf, sizeof(buf), 1, WR_WIN, WR_FAR, 0);
		FT_CHECK(p == TRIAD_S_OK, "put beyond the old bounds, inside the new: %s",
			 st_str(p));
		memset(buf, 0, sizeof(buf));
		g2 = get_st(ctx, buf, sizeof(buf), 1, WR_WIN, WR_FAR, 0);
		FT_CHECK(g2 == TRIAD_S_OK && ft_verify(buf, sizeof(buf), 51, 0) < 0,
			 "get back from beyond the old bounds: %s", st_str(g2));
		oob = get_st(ctx, buf, sizeof(buf), 1, WR_WIN, WR_NEW - 4095, 0);
		FT_CHECK(oob == TRIAD_S_OUT_OF_BOUNDS, "get across the new window's end: %s",
			 st_str(oob));
		printf("win-recreate: after window %u was re-created (64 KiB -> 256 KiB): get %s, "
		       "put beyond the old end %s, get it back %s, across the new end %s\n",
		       WR_WIN, st_str(g), st_str(p), st_str(g2), st_str(oob));
	}
	sync_all("checked", -1);
	if (rank == 1)
		FT_CHECK(ft_verify(b + WR_FAR, 4096, 51, 0) < 0,
			 "rank 0's put did not land in the new window");
	sync_all("done", -1);
}

/* ---- win-stale-access --------------------------------------------------------------- */
#define WS_VALID 11
#define WS_STALE 12
#define WS_LOCAL 13
#define WS_VLEN (2u << 20) /* 4 ops, then room for the accesses after them */
#define WS_SLEN (64u << 10)
#define WS_OP (256u << 10)

static void case_win_stale_access(triad_ctx_t **ctxp)
{
	triad_ctx_t *ctx = *ctxp;
	char *v = calloc(1, WS_VLEN), *s = calloc(1, WS_SLEN), *l = calloc(1, WS_VLEN);
	triad_win_t *wv = NULL, *ws = NULL, *wl = NULL;
	unsigned pin = TRIAD_F_PLANE(triad_nplanes(ctx) - 1);

	if (rank == 1) {
		ft_fill(v, WS_VLEN, 3, 0);
		FT_CHECK(triad_win_create(ctx, WS_VALID, v, WS_VLEN, NULL, &wv) == 0, "valid");
		FT_CHECK(triad_win_create(ctx, WS_STALE, s, WS_SLEN, NULL, &ws) == 0, "stale");
	}
	if (rank == 0)
		FT_CHECK(triad_win_create(ctx, WS_LOCAL, l, WS_VLEN, NULL, &wl) == 0, "local");
	sync_all("created", -1);
	if (rank == 0) {
		enum triad_status st = get_st(ctx, l, 4096, 1, WS_STALE, 0, pin);

		FT_CHECK(st == TRIAD_S_OK, "get from the window before its destruction: %s",
			 st_str(st));
		st = put_st(ctx, l, 4096, 1, WS_VALID, 0, pin);
		FT_CHECK(st == TRIAD_S_OK, "put before the destruction: %s", st_str(st));
	}
	sync_all("used", -1);
	if (rank == 1)
		FT_CHECK(triad_win_destroy(ws) == 0, "destroy");
	sync_all("destroyed", -1);
	if (rank == 0) {
		static const char *const what[] = { "valid put", "stale put", "valid get",
						    "stale get", "valid put" };
		triad_req_t *r[5];
		enum triad_status st[5], lp, lg;
		int sub = 1;
		double t0;

		ft_fill(l, WS_VLEN, 60, 0);
		sub &= triad_put(ctx, l, WS_OP, 1, WS_VALID, 0, pin, &r[0]) == 0;
		sub &= triad_put(ctx, l, 4096, 1, WS_STALE, 0, pin, &r[1]) == 0;
		sub &= triad_get(ctx, l + WS_OP, WS_OP, 1, WS_VALID, WS_OP, pin, &r[2]) == 0;
		sub &= triad_get(ctx, l + 2 * WS_OP, 4096, 1, WS_STALE, 0, pin, &r[3]) == 0;
		sub &= triad_put(ctx, l + 3 * WS_OP, WS_OP, 1, WS_VALID, 3 * WS_OP, pin, &r[4]) == 0;
		FT_CHECK(sub, "submission");
		if (!sub)
			return;
		for (int i = 0; i < 5; i++)
			st[i] = wait_st(r[i], 15000);
		for (int i = 0; i < 5; i++) {
			if (i == 1 || i == 3)
				FT_CHECK(st[i] == TRIAD_S_NO_WINDOW || st[i] == TRIAD_S_REMOTE_ACCESS,
					 "%s (request %d) to the destroyed window: %s", what[i], i,
					 st_str(st[i]));
			else
				FT_CHECK(st[i] == TRIAD_S_OK,
					 "%s (request %d) next to the stale ones: %s", what[i], i,
					 st_str(st[i]));
		}
		if (st[2] == TRIAD_S_OK)
			FT_CHECK(ft_verify(l + WS_OP, WS_OP, 3, WS_OP) < 0, "valid get: wrong bytes");
		t0 = ft_now_s();
		lp = put_st(ctx, l, 4096, 1, WS_VALID, 3 * WS_OP + WS_OP, pin);
		lg = get_st(ctx, l + 4 * WS_OP, 4096, 1, WS_VALID, 3 * WS_OP + WS_OP, pin);
		FT_CHECK(lp == TRIAD_S_OK && lg == TRIAD_S_OK && ft_now_s() - t0 < 2.0,
			 "a put and a get after the stale accesses, same plane: %s, %s in %.2f s",
			 st_str(lp), st_str(lg), ft_now_s() - t0);
		printf("win-stale-access: plane %u: valid put %s, stale put %s, valid get %s, stale "
		       "get %s, valid put %s; then put %s, get %s (%.2f s)\n", pin & 0xffu,
		       st_str(st[0]), st_str(st[1]), st_str(st[2]), st_str(st[3]), st_str(st[4]),
		       st_str(lp), st_str(lg), ft_now_s() - t0);
		sync_post("ok0", st[0] == TRIAD_S_OK && st[4] == TRIAD_S_OK ? '1' : '0');
	}
	sync_all("checked", -1);
	if (rank == 1 && sync_wait("ok0", 0, 1000) == '1')
		FT_CHECK(ft_verify(v, WS_OP, 60, 0) < 0 && ft_verify(v + 3 * WS_OP, WS_OP, 60,
								    3 * WS_OP) < 0,
			 "the valid puts' bytes are not in the window");
	sync_all("done", -1);
}

/* ---- win-destroy-inflight ------------------------------------------------------------ */
/* The owner destroys a window while a stream of puts into it is in flight:
 * the chunks already posted hit the NIC with dead keys (it refuses them
 * and breaks that plane's connection), the ones still queued learn of it
 * first.  Unpinned puts into another window on the same connection must
 * all succeed with their bytes in place (done again on a live plane), and
 * every plane must work again afterwards. */
#define WD_VALID 14
#define WD_DOOMED 15
#define WD_N 24
#define WD_OP (1u << 20)

/* Some byte of [p, p + n) is not zero. */
static int landed(const volatile char *p, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (p[i])
			return 1;
	return 0;
}

static void case_win_destroy_inflight(triad_ctx_t **ctxp)
{
	triad_ctx_t *ctx = *ctxp;
	char *v = calloc(WD_N, WD_OP), *d = calloc(WD_N, WD_OP), *l = calloc(WD_N, WD_OP);
	triad_win_t *wv = NULL, *wd = NULL, *wl = NULL;

	FT_CHECK(v && d && l, "memory");
	if (!v || !d || !l)
		return;
	if (rank == 1) {
		FT_CHECK(triad_win_create(ctx, WD_VALID, v, (size_t)WD_N * WD_OP, NULL, &wv) == 0,
			 "valid");
		FT_CHECK(triad_win_create(ctx, WD_DOOMED, d, (size_t)WD_N * WD_OP, NULL, &wd) == 0,
			 "doomed");
	}
	if (rank == 0)
		FT_CHECK(triad_win_create(ctx, WD_VALID, l, (size_t)WD_N * WD_OP, NULL, &wl) == 0,
			 "local");
	sync_all("created", -1);
	if (rank == 0) {
		triad_req_t *rv[WD_N], *rd[WD_N];
		int ok = 0, gone = 0, refused = 0, bad = 0;
		uint64_t errors = 0;

		ft_fill(l, (size_t)WD_N * WD_OP, 70, 0);
		/* Learn both descriptors first, so nothing waits for a lookup. */
		FT_CHECK(put_st(ctx, l, 8, 1, WD_VALID, 0, 0) == TRIAD_S_OK, "first put");
		FT_CHECK(put_st(ctx, l, 8, 1, WD_DOOMED, 0, 0) == TRIAD_S_OK, "first put");
		sync_post("go", '1');
		for (int i = 0; i < WD_N; i++) {
			FT_CHECK(triad_put(ctx, l + (size_t)i * WD_OP, WD_OP, 1, WD_DOOMED,
					   (uint64_t)i * WD_OP, 0, &rd[i]) == 0, "put");
			FT_CHECK(triad_put(ctx, l + (size_t)i * WD_OP, WD_OP, 1, WD_VALID,
					   (uint64_t)i * WD_OP, 0, &rv[i]) == 0, "put");
		}
		for (int i = 0; i < WD_N; i++) {
			enum triad_status a = wait_st(rv[i], 30000), b = wait_st(rd[i], 30000);

			ok += a == TRIAD_S_OK;
			FT_CHECK(a == TRIAD_S_OK, "put %d into the valid window: %s", i, st_str(a));
			gone += b == TRIAD_S_NO_WINDOW;
			refused += b == TRIAD_S_REMOTE_ACCESS;
			bad += b != TRIAD_S_OK && b != TRIAD_S_NO_WINDOW && b != TRIAD_S_REMOTE_ACCESS;
		}
		FT_CHECK(bad == 0, "%d puts into the destroyed window ended with another status", bad);
		for (int p = 0; p < triad_nplanes(ctx); p++) {
			struct triad_conn_stats cs = { .field_mask = TRIAD_CONN_STATS_LINK };

			if (triad_conn_stats(ctx, 1, p, &cs) == 0)
				errors += cs.errors;
		}
		/* Every plane works again, the broken one once it is rebuilt. */
		for (int p = 0; p < triad_nplanes(ctx); p++) {
			enum triad_status st = TRIAD_S_MAX;
			double end = ft_now_s() + 20;

			while (ft_now_s() < end &&
			       (st = put_st(ctx, l, 4096, 1, WD_VALID, 0, TRIAD_F_PLANE(p))) != TRIAD_S_OK)
				usleep(200000);
			FT_CHECK(st == TRIAD_S_OK, "plane %d after the destruction: %s", p, st_str(st));
		}
		printf("win-destroy-inflight: %d/%d valid puts ok; destroyed window: %d no such "
		       "window, %d refused by the NIC, %d ok before it; %llu completion errors\n",
		       ok, WD_N, gone, refused, WD_N - gone - refused - bad,
		       (unsigned long long)errors);
		sync_post("ok0", ok == WD_N ? '1' : '0');
	}
	if (rank == 1) {
		FT_CHECK(sync_wait("go", 0, 60000), "rank 0 never started");
		/* Destroy while the stream is on the wire: once the first bytes land. */
		for (double end = ft_now_s() + 20; ft_now_s() < end && !landed(d + WD_OP / 2, 64);)
			usleep(100);
		FT_CHECK(triad_win_destroy(wd) == 0, "destroy");
	}
	sync_all("checked", -1);
	if (rank == 1 && sync_wait("ok0", 0, 1000) == '1')
		FT_CHECK(ft_verify(v, (size_t)WD_N * WD_OP, 70, 0) < 0,
			 "the valid puts' bytes are not in the window");
	sync_all("done", -1);
	if (wv)
		triad_win_destroy(wv);
	if (wl)
		triad_win_destroy(wl);
	free(v);
	free(d);
	free(l);
}

/* ---- query-plane-fails ---------------------------------------------------------------- */
/* A put's window query is in flight when a plane fails: the query goes
 * again on another plane with the rest of that lane's messages, and the
 * put, whatever plane it was given, is done on a live one once the answer
 * is there.  It must not fail with the broken connection's status (it did:
 * the lookup failed every query of the broken plane, and a put whose lane
 * broke while it waited for the answer failed too).  Each plane is failed
 * in turn right after the first put to a window not looked up yet, so the
 * query's plane is among them; the broken plane is rebuilt before the
 * next. */
#define QF_WIN 30
#define QF_LEN 4096

static void case_query_plane_fails(triad_ctx_t **ctxp)
{
	triad_ctx_t *ctx = *ctxp;
	int np = triad_nplanes(ctx);
	char *w = calloc((size_t)np, QF_LEN), *l = calloc(1, QF_LEN);
	triad_win_t *win[TRIAD_MAX_PLANES] = { 0 }, *lw = NULL;

	FT_CHECK(w && l, "memory");
	if (!w || !l)
		return;
	if (rank == 1)
		for (int p = 0; p < np; p++)
			FT_CHECK(triad_win_create(ctx, QF_WIN + p, w + (size_t)p * QF_LEN, QF_LEN,
						  NULL, &win[p]) == 0,
				 "window %d", QF_WIN + p);
	if (rank == 0)
		FT_CHECK(triad_win_create(ctx, QF_WIN, l, QF_LEN, NULL, &lw) == 0, "local");
	sync_all("created", -1);
	if (rank == 0) {
		int ok = 1;

		for (int p = 0; p < np; p++) {
			triad_req_t *req;
			enum triad_status st = TRIAD_S_MAX;
			double t0;

			ft_fill(l, QF_LEN, 80 + p, 0);
			if (triad_put(ctx, l, QF_LEN, 1, QF_WIN + p, 0, 0, &req)) {
				FT_CHECK(0, "put to window %d", QF_WIN + p);
				ok = 0;
				break;
			}
			FT_CHECK(triad_plane_fail(ctx, p) == 0, "fail plane %d", p);
			st = wait_st(req, 30000);
			FT_CHECK(st == TRIAD_S_OK, "a put whose window query was in flight when plane "
				 "%d failed: %s", p, st_str(st));
			ok &= st == TRIAD_S_OK;
			/* The broken plane is rebuilt (by rank 0, the lower) before the next. */
			t0 = ft_now_s();
			do {
				st = put_st(ctx, l, 8, 1, QF_WIN + p, 0, TRIAD_F_PLANE(p));
			} while (st != TRIAD_S_OK && ft_now_s() - t0 < 20.0 && !usleep(100000));
			FT_CHECK(st == TRIAD_S_OK, "plane %d after its rebuild: %s", p, st_str(st));
			printf("query-plane-fails: plane %d failed with a window query in flight: the "
			       "put %s; plane %d back after %.2f s\n", p, ok ? "ok" : "FAILED", p,
			       ft_now_s() - t0);
		}
		sync_post("put", ok ? '1' : '0');
	}
	sync_all("checked", -1);
	if (rank == 1 && sync_wait("put", 0, 1000) == '1')
		for (int p = 0; p < np; p++)
			FT_CHECK(ft_verify(w + (size_t)p * QF_LEN, QF_LEN, 80 + p, 0) < 0,
				 "window %d: the put's bytes are not there", QF_WIN + p);
	sync_all("done", -1);
	for (int p = 0; p < np; p++)
		if (win[p])
			triad_win_destroy(win[p]);
	if (lw)
		triad_win_destroy(lw);
	free(w);
	free(l);
}

/* ---- copy-leg-si ------------------------------------------------------------------- */
#define CP_SRC_WIN 20
#define CP_DST_WIN 21
#define CP_LEN (12u << 20) /* per copy */

/* What rank 1 has of peer over every plane: the messages it received from
 * it, and the bytes it wrote to it as a copy's source. */
static void cp_stats(triad_ctx_t *ctx, int peer, uint64_t *rx_msgs, uint64_t *copy_bytes)
{
	*rx_msgs = *copy_bytes = 0;
	for (int p = 0; p < triad_nplanes(ctx); p++) {
		struct triad_conn_stats cs = { .field_mask = TRIAD_CONN_STATS_ALL };

		if (triad_conn_stats(ctx, peer, p, &cs) == 0) {
			*rx_msgs += cs.rx_msgs;
			*copy_bytes += cs.copy_bytes;
		}
	}
}

static void case_copy_leg_si(triad_ctx_t **ctxp)
{
	triad_ctx_t *ctx = *ctxp;
	char *buf = (rank == 1 || rank == 2) ? calloc(1, 2 * CP_LEN) : NULL;
	triad_win_t *w = NULL;
	uint64_t orders0 = 0, unused;

	if (rank == 1) {
		ft_fill(buf, 2 * CP_LEN, 7, 0);
		FT_CHECK(triad_win_create(ctx, CP_SRC_WIN, buf, 2 * CP_LEN, NULL, &w) == 0, "src");
	}
	if (rank == 2)
		FT_CHECK(triad_win_create(ctx, CP_DST_WIN, buf, 2 * CP_LEN, NULL, &w) == 0, "dst");
	if (rank == 1) /* rank 0 sends nothing before "ready" */
		cp_stats(ctx, 0, &orders0, &unused);
	sync_all("ready", -1);
	if (rank == 0) {
		static const unsigned modes[] = { TRIAD_COPY_RELAY, TRIAD_COPY_DIRECT };
		static const char *const names[] = { "relay", "direct" };
		triad_req_t *req[2];

		for (int m = 0; m < 2; m++)
			FT_CHECK(triad_copy(ctx, 1, CP_SRC_WIN, (uint64_t)m * CP_LEN, 2, CP_DST_WIN,
					    (uint64_t)m * CP_LEN, CP_LEN, modes[m], &req[m]) == 0,
				 "copy");
		for (int m = 0; m < 2; m++) {
			enum triad_status st;
			enum triad_copy_leg leg;

			if (triad_wait(req[m], 20000)) {
				FT_CHECK(0, "%s copy: no completion 20 s after ordering it", names[m]);
				continue;
			}
			st = triad_req_status(req[m]);
			leg = triad_req_copy_leg(req[m]);
			triad_req_free(req[m]);
			printf("copy-leg-si: %s copy 1 -> 2 with the source killed mid-copy: %s, leg "
			       "%s\n", names[m], triad_status_str(st), triad_copy_leg_str(leg));
			FT_CHECK(st != TRIAD_S_OK && (leg == TRIAD_LEG_S_I || leg == TRIAD_LEG_S_D),
				 "%s copy whose source died after accepting it: %s at leg %s, expected "
				 "a failure at S->I or S->D", names[m], triad_status_str(st),
				 triad_copy_leg_str(leg));
		}
		sync_post("copied", '1');
	} else if (rank == 1) {
		/* Die once both copies are accepted (both orders arrived, so
		 * rank 0's sends of them are acknowledged: CI once saw the
		 * direct copy's order unacknowledged when the source died after
		 * the relay copy's first chunk) and data went out (a chunk's
		 * completion counted it). */
		for (int i = 0; i < 20000; i++) {
			uint64_t bytes, msgs;

			cp_stats(ctx, 2, &unused, &bytes);
			cp_stats(ctx, 0, &msgs, &unused);
			if (bytes && msgs - orders0 >= 2) {
				printf("copy-leg-si: rank 1 (source) killed after writing %llu bytes\n",
				       (unsigned long long)bytes);
				fflush(NULL);
				raise(SIGKILL);
			}
			usleep(1000);
		}
		FT_CHECK(0, "the source never wrote a byte in 20 s");
	} else {
		FT_CHECK(sync_wait("copied", 0, 60000), "rank 0 never finished");
	}
}

/* ---- api-null ------------------------------------------------------------------------ */
enum { AN_RANK, AN_SIZE, AN_NPLANES, AN_AMMAX, AN_N };

static void case_api_null(triad_ctx_t **ctxp)
{
	static const char *const names[AN_N] = { "triad_rank(NULL)", "triad_size(NULL)",
						  "triad_nplanes(NULL)", "triad_am_max_size(NULL)" };
	static const char *const want[AN_N] = { "-EINVAL", "-EINVAL", "-EINVAL", "0" };

	(void)ctxp;
	if (rank != 0)
		return;
	for (int i = 0; i < AN_N; i++) {
		int status;
		pid_t pid;
		char got[64];

		fflush(NULL);
		pid = fork();
		if (pid == 0) {
			long v = 0;

			switch (i) {
			case AN_RANK: v = triad_rank(NULL); break;
			case AN_SIZE: v = triad_size(NULL); break;
			case AN_NPLANES: v = triad_nplanes(NULL); break;
			default: v = (long)triad_am_max_size(NULL); break;
			}
			_exit(i == AN_AMMAX ? (v == 0 ? 0 : 1) : (v == -EINVAL ? 0 : 1));
		}
		if (pid < 0 || waitpid(pid, &status, 0) != pid) {
			FT_CHECK(0, "fork/waitpid");
			continue;
		}
		if (WIFSIGNALED(status))
			snprintf(got, sizeof(got), "crashed (signal %d)", WTERMSIG(status));
		else
			snprintf(got, sizeof(got), "%s", WEXITSTATUS(status) ? "wrong value" : want[i]);
		printf("api-null: %s: %s\n", names[i], got);
		FT_CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0, "%s: %s, expected %s",
			 names[i], got, want[i]);
	}
}

/* ---- put-len0-nowin ------------------------------------------------------------------ */
#define PL_WIN 30
#define PL_NOWIN 999

static void case_put_len0_nowin(triad_ctx_t **ctxp)
{
	triad_ctx_t *ctx = *ctxp;
	static char small[4096], local[64];
	triad_win_t *w = NULL;

	if (rank == 1)
		FT_CHECK(triad_win_create(ctx, PL_WIN, small, sizeof(small), NULL, &w) == 0, "win");
	sync_all("ready", -1);
	if (rank == 0) {
		enum triad_status p0 = put_st(ctx, local, 0, 1, PL_NOWIN, 0, 0);
		enum triad_status g0 = get_st(ctx, local, 0, 1, PL_NOWIN, 0, 0);
		enum triad_status p0ok = put_st(ctx, local, 0, 1, PL_WIN, 0, 0);
		enum triad_status gh = get_st(ctx, local, 1ull << 50, 1, PL_WIN, 0, 0);
		enum triad_status ph = put_st(ctx, local, 1ull << 50, 1, PL_WIN, 0, 0);

		printf("put-len0-nowin: 0-byte put to a missing window: %s; 0-byte get: %s; 0-byte "
		       "put to a real window: %s; 2^50-byte get into a 4 KiB window: %s; put: %s\n",
		       st_str(p0), st_str(g0), st_str(p0ok), st_str(gh), st_str(ph));
		FT_CHECK(p0 == TRIAD_S_NO_WINDOW, "0-byte put to a missing window: %s", st_str(p0));
		FT_CHECK(g0 == TRIAD_S_NO_WINDOW, "0-byte get from a missing window: %s", st_str(g0));
		FT_CHECK(p0ok == TRIAD_S_OK, "0-byte put to a real window: %s", st_str(p0ok));
		FT_CHECK(gh == TRIAD_S_OUT_OF_BOUNDS, "2^50-byte get from a 4 KiB window: %s",
			 st_str(gh));
		FT_CHECK(ph == TRIAD_S_OUT_OF_BOUNDS, "2^50-byte put to a 4 KiB window: %s",
			 st_str(ph));
	}
	sync_all("done", -1);
}

/* ---- init-mask ------------------------------------------------------------------------ */
static void case_init_mask(triad_ctx_t **ctxp)
{
	struct triad_ctx_attr attr = { .field_mask = TRIAD_CTX_ATTR_RANK | (1ull << 2),
				       .rank = rank };
	triad_ctx_t *ctx = NULL;
	int ret;

	(void)ctxp;
	setenv("TRIAD_CONNECT_TIMEOUT_MS", "10000", 1);
	ret = triad_init(&attr, &ctx);
	if (rank == 0)
		printf("init-mask: triad_init with field_mask 0x%llx (bit 2 unknown): %s\n",
		       (unsigned long long)attr.field_mask, ret ? strerror(-ret) : "0 (accepted)");
	FT_CHECK(ret == -EINVAL, "triad_init with an unknown field_mask bit: %s, expected -EINVAL",
		 ret ? strerror(-ret) : "0");
	if (ret == 0) {
		sync_all("inited", -1); /* nobody closes while another still connects */
		triad_fini(ctx);
	}
}

/* ---- driver ----------------------------------------------------------------------------- */
enum { NO_CTX = 1 };

static const struct tcase {
	const char *name;
	void (*fn)(triad_ctx_t **ctxp);
	int victim; /* the rank the case kills, -1 none */
	int flags;
} cases[] = {
	{ "fini-pending", case_fini_pending, -1, 0 },
	{ "barrier-fini", case_barrier_fini, -1, NO_CTX },
	{ "barrier-rank-dies", case_barrier_rank_dies, VICTIM, 0 },
	{ "barrier-retry", case_barrier_retry, -1, 0 },
	{ "win-recreate", case_win_recreate, -1, 0 },
	{ "win-stale-access", case_win_stale_access, -1, 0 },
	{ "win-destroy-inflight", case_win_destroy_inflight, -1, 0 },
	{ "query-plane-fails", case_query_plane_fails, -1, 0 },
	{ "copy-leg-si", case_copy_leg_si, 1, 0 },
	{ "api-null", case_api_null, -1, NO_CTX },
	{ "put-len0-nowin", case_put_len0_nowin, -1, 0 },
	{ "init-mask", case_init_mask, -1, NO_CTX },
};
#define NCASES ((int)(sizeof(cases) / sizeof(cases[0])))

/* Runs the case in a child; '0' passed, '1' failed, 'H' hung, 'C' crashed. */
static char run_case(const struct tcase *t)
{
	int status;
	double end = ft_now_s() + CASE_TIMEOUT_S;
	pid_t pid;

	fflush(NULL);
	pid = fork();
	if (pid < 0)
		return 'C';
	if (pid == 0) {
		triad_ctx_t *ctx = NULL;

		ft_failures = 0;
		ft_rank = rank;
		setenv("TRIAD_CONNECT_TIMEOUT_MS", "20000", 0);
		if (!(t->flags & NO_CTX) && !(ctx = init_ctx()))
			exit(1);
		t->fn(&ctx);
		if (ctx)
			triad_fini(ctx);
		fflush(NULL);
		exit(ft_failures ? 1 : 0);
	}
	for (;;) {
		pid_t r = waitpid(pid, &status, WNOHANG);

		if (r == pid)
			break;
		if (r < 0)
			return 'C';
		if (ft_now_s() > end) {
			fprintf(stderr, "rank %d: %s: still running after %d s: killed\n", rank,
				t->name, CASE_TIMEOUT_S);
			kill(pid, SIGKILL);
			waitpid(pid, &status, 0);
			return 'H';
		}
		usleep(20000);
	}
	if (WIFEXITED(status))
		return WEXITSTATUS(status) ? '1' : '0';
	if (WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL && rank == t->victim)
		return '0'; /* died as the case wanted */
	fprintf(stderr, "rank %d: %s: killed by signal %d\n", rank, t->name,
		WIFSIGNALED(status) ? WTERMSIG(status) : 0);
	return 'C';
}

static int world_size(const char *path)
{
	FILE *f = fopen(path, "r");
	char line[512];
	int n = 0;

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f)) {
		char *p = line;

		while (*p == ' ' || *p == '\t')
			p++;
		if (*p >= '0' && *p <= '9')
			n++;
	}
	fclose(f);
	return n;
}

static void remove_dir(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	char path[1024];

	while (d && (e = readdir(d))) {
		if (e->d_name[0] == '.' && (!e->d_name[1] || !strcmp(e->d_name, "..")))
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
		unlink(path);
	}
	if (d)
		closedir(d);
	rmdir(dir);
}

static int selected(char **sel, int nsel, const char *name)
{
	if (!nsel)
		return 1;
	for (int i = 0; i < nsel; i++)
		if (!strcmp(sel[i], name))
			return 1;
	return 0;
}

int main(int argc, char **argv)
{
	static const struct option opts[] = { { "case", required_argument, NULL, 'c' },
					      { "list", no_argument, NULL, 'l' },
					      { NULL, 0, NULL, 0 } };
	const char *world = getenv("TRIAD_WORLD"), *rs = getenv("TRIAD_RANK"), *base;
	char *sel[64];
	int nsel = 0, c, passed = 0, failed = 0;

	setvbuf(stdout, NULL, _IOLBF, 0);
	while ((c = getopt_long(argc, argv, "c:l", opts, NULL)) != -1) {
		if (c == 'c') {
			for (char *tok = strtok(optarg, ","); tok && nsel < 64; tok = strtok(NULL, ","))
				sel[nsel++] = tok;
		} else if (c == 'l') {
			for (int i = 0; i < NCASES; i++)
				printf("%s\n", cases[i].name);
			return 0;
		} else {
			fprintf(stderr, "usage: test_api [--case NAME[,NAME...]]... [--list]\n");
			return 2;
		}
	}
	for (int i = 0; i < nsel; i++) {
		int known = 0;

		for (int k = 0; k < NCASES; k++)
			known |= !strcmp(sel[i], cases[k].name);
		if (!known) {
			fprintf(stderr, "test_api: no case %s (--list names them)\n", sel[i]);
			return 2;
		}
	}
	if (!world || !rs) {
		fprintf(stderr, "test_api: needs TRIAD_WORLD and TRIAD_RANK (run it with triad_run)\n");
		return 2;
	}
	rank = atoi(rs);
	size = world_size(world);
	ft_rank = rank;
	if (size != NRANKS) {
		fprintf(stderr, "test_api needs %d ranks (the world has %d)\n", NRANKS, size);
		return 1;
	}
	base = strrchr(world, '/') ? strrchr(world, '/') + 1 : world;
	snprintf(sync_dir, sizeof(sync_dir), "%s/triad-api-%s",
		 getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp", base);
	if (mkdir(sync_dir, 0755) && errno != EEXIST) {
		fprintf(stderr, "test_api: mkdir %s: %m\n", sync_dir);
		return 1;
	}
	for (int i = 0; i < NCASES; i++) {
		const struct tcase *t = &cases[i];
		double t0;
		char res;

		if (!selected(sel, nsel, t->name))
			continue;
		snprintf(pfx, sizeof(pfx), "%02d", i);
		if (!sync_all("start", -1)) /* every rank's previous contexts are gone */
			return 1;
		t0 = ft_now_s();
		res = run_case(t);
		sync_post("result", res);
		if (rank == 0) {
			char why[256] = "";
			int bad = 0;

			for (int r = 0; r < size; r++) {
				char v = sync_wait("result", r, (CASE_TIMEOUT_S + 30) * 1000);

				if (v == '0')
					continue;
				bad = 1;
				snprintf(why + strlen(why), sizeof(why) - strlen(why), " rank %d %s;", r,
					 v == '1' ? "failed" : v == 'H' ? "hung" : v == 'C' ? "crashed"
										: "lost");
			}
			if (bad)
				printf("FAIL api/%s (%.1f s):%s\n", t->name, ft_now_s() - t0, why);
			else
				printf("PASS api/%s (%.1f s)\n", t->name, ft_now_s() - t0);
			passed += !bad;
			failed += bad;
		}
	}
	/* Rank 0 read every rank's results and speaks for them all: the others
	 * exit 0 once rank 0 knows they are done (triad_run would otherwise stop
	 * rank 0 as soon as one of them exits non-zero).  Rank 0 then removes the
	 * meeting files. */
	snprintf(pfx, sizeof(pfx), "end");
	sync_all("end", -1);
	sync_post("gone", '1');
	if (rank == 0) {
		for (int r = 0; r < size; r++)
			sync_wait("gone", r, 10000);
		printf("test_api: %d passed, %d failed\n", passed, failed);
		remove_dir(sync_dir);
		return failed ? 1 : 0;
	}
	return 0;
}
