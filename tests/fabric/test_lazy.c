/* Connect on first use (TRIAD_CONNECT=lazy) on a real fabric.
 *
 *   test_lazy --case collide|neighbour|unreachable|first-breaks
 *
 * The ranks meet through files beside the world file (triad-run's, one per
 * run), not through a triad barrier: a barrier would connect every rank to
 * rank 0 and spoil what is counted.
 *
 *   collide      after the meeting every rank, at the same moment, sends
 *                COUNT active messages and one put to every other rank: both
 *                ranks of every pair speak first, on every plane at once.
 *                Every message arrives exactly once, every put lands, every
 *                lane comes up (a rebuild after a transport fault is said),
 *                and the process holds exactly (N - 1) x planes QPs (lanes
 *                up, and the kernel's list, `rdma resource show qp`): one per
 *                (peer, plane), never two, never none.
 *   neighbour    rank r talks to r ^ 1 only (a put and a message each way):
 *                its lanes to that rank came up, every other lane never
 *                did (triad_conn_stats' established is 0), the process holds
 *                exactly `planes` QPs (as above), and no plane reads DOWN.
 *   unreachable  the last rank never starts triad (its planes do not
 *                listen).  With TRIAD_CONNECT_TIMEOUT_MS short, rank 0's put,
 *                message and flush to it fail as unreachable in about that
 *                time, not hang; then every survivor's barrier fails (-EIO)
 *                at once instead of waiting for the missing rank.
 *   first-breaks 2 ranks x 2 planes: the first plane up breaks while the
 *                other is still being connected (the burst of first
 *                connections of collide can do that).  Plane 0 is cut
 *                (fabric-ctl: frames go nowhere) before the ranks talk, so
 *                only plane 1 comes up; messages and a put go there; then
 *                plane 1 is cut as well with more in flight, and once it
 *                has broken plane 0 is healed (plane 1 only once all has
 *                landed).  What was in flight on plane 1 waits for plane
 *                0 and arrives: every message exactly once, both puts
 *                land, nothing fails.
 */
#include <getopt.h>
#include <sched.h>
#include <stdatomic.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "ft.h"

#define AM_ID 9
#define COUNT 200
#define WIN 1
#define MAXR 64

static int rank, size, nplanes;

/* ---- meeting through files ----------------------------------------------------------*/
static void meet_path(char *buf, size_t len, const char *tag, int r)
{
	snprintf(buf, len, "%s.%s.%d", getenv("TRIAD_WORLD"), tag, r);
}

/* Every rank in want (a bitmask of ranks, or all when 0) arrives at tag; returns
 * once all have, spinning (the collision wants everyone to leave at once). */
static void meet(const char *tag, uint64_t want)
{
	char path[512];
	time_t end = time(NULL) + 120;
	FILE *f;

	meet_path(path, sizeof(path), tag, rank);
	f = fopen(path, "w");
	FT_CHECK(f != NULL, "cannot create %s", path);
	if (f)
		fclose(f);
	if (!want)
		want = size >= 64 ? ~0ull : (1ull << size) - 1;
	for (int r = 0; r < size; r++) {
		struct stat st;

		if (!(want >> r & 1))
			continue;
		meet_path(path, sizeof(path), tag, r);
		while (stat(path, &st) && time(NULL) < end)
			sched_yield();
		FT_CHECK(time(NULL) < end, "rank %d never arrived at %s", r, tag);
	}
}

/* ---- counting ---------------------------------------------------------------------*/
/* 1 when the line (words "name value ...") has name followed by value. */
static int has_pair(const char *line, const char *name, const char *value)
{
	char buf[512], *save = NULL, *w, *prev = NULL;

	snprintf(buf, sizeof(buf), "%s", line);
	for (w = strtok_r(buf, " \t\n", &save); w; prev = w, w = strtok_r(NULL, " \t\n", &save))
		if (prev && !strcmp(prev, name) && !strcmp(w, value))
			return 1;
	return 0;
}

/* 1 when the line's "link DEV/PORT" names one of this rank's devices: in
 * the one-VM fabric rank r runs on node r, whose devices are rxe_nRpP. */
static int on_my_devices(const char *line)
{
	char want[32];
	const char *l = strstr(line, "link ");

	snprintf(want, sizeof(want), "rxe_n%dp", rank);
	return l && !strncmp(l + 5, want, strlen(want));
}

/* RC QPs of this process, as the kernel lists them (`rdma resource show
 * qp`: "link DEV/PORT lqpn N type RC state S ... pid P comm C"); -1 when
 * the tool cannot run.  The pid it shows is not ours when the harness
 * runs us in a pid namespace of our own: in the one-VM fabric
 * (TRIAD_VM_MODE) the QPs of test_lazy on this rank's devices are counted
 * instead.  shown: the first lines, for the report. */
static int my_qps(char *shown, size_t len)
{
	char line[512], pid[16];
	int n = 0, lines = 0, vm = getenv("TRIAD_VM_MODE") != NULL;
	FILE *p = popen("rdma resource show qp 2>&1", "r");

	shown[0] = '\0';
	if (!p)
		return -1;
	snprintf(pid, sizeof(pid), "%d", (int)getpid());
	while (fgets(line, sizeof(line), p)) {
		if (lines++ < 3)
			snprintf(shown + strlen(shown), len - strlen(shown), "%s", line);
		if (!has_pair(line, "type", "RC"))
			continue;
		n += vm ? on_my_devices(line) && has_pair(line, "comm", "test_lazy")
			: has_pair(line, "pid", pid);
	}
	return pclose(p) == 0 ? n : -1;
}

/* QPs the library holds: one per lane up (triad_conn_stats). */
static int lanes_up(triad_ctx_t *ctx)
{
	int n = 0;

	for (int r = 0; r < size; r++)
		for (int p = 0; r != rank && p < nplanes; p++) {
			struct triad_conn_stats cs = { .field_mask = TRIAD_CONN_STATS_LINK };

			n += triad_conn_stats(ctx, r, p, &cs) == 0 && cs.up;
		}
	return n;
}

/* The QPs of this process: the library's count, and the kernel's when the
 * rdma tool lists this process's QPs (in the test VM it may list none). */
static void check_qps(triad_ctx_t *ctx, int want, const char *what)
{
	char shown[1600];
	int lib = lanes_up(ctx), kernel = my_qps(shown, sizeof(shown));

	FT_CHECK(lib == want, "%d lanes up (QPs), want %d (%s)", lib, want, what);
	if (kernel >= 0 || getenv("TRIAD_VM_MODE"))
		FT_CHECK(kernel == want, "the kernel lists %d RC QPs of ours, want %d (%s); "
			 "rdma resource show qp begins:\n%s", kernel, want, what, shown);
	if (rank == 0)
		printf("rank 0: %d lanes up, %d RC QPs in the kernel's list (%s)\n", lib, kernel,
		       what);
}

/* Lanes come up on their own time (a plane no operation used yet is still
 * being connected when the traffic on another is done): waits until every
 * lane to the ranks in from came up once, up to a minute. */
static void wait_all_up(triad_ctx_t *ctx, const int *from, int n)
{
	time_t end = time(NULL) + 60;
	int missing;

	do {
		missing = 0;
		for (int i = 0; i < n; i++)
			for (int p = 0; p < nplanes; p++) {
				struct triad_conn_stats cs = { .field_mask = TRIAD_CONN_STATS_CONN |
									 TRIAD_CONN_STATS_LINK };

				if (triad_conn_stats(ctx, from[i], p, &cs) || !cs.up)
					missing++;
			}
		if (missing)
			usleep(20000);
	} while (missing && time(NULL) < end);
}

static uint64_t established(triad_ctx_t *ctx, int peer, int plane)
{
	struct triad_conn_stats cs = { .field_mask = TRIAD_CONN_STATS_CONN };
	int ret = triad_conn_stats(ctx, peer, plane, &cs);

	FT_CHECK(ret == 0, "triad_conn_stats(%d, %d): %s", peer, plane, strerror(-ret));
	return cs.established;
}

/* ---- messages: each (sender, number) once --------------------------------------*/
struct am {
	uint32_t sender, n;
};
static _Atomic uint8_t seen[MAXR][COUNT];
static _Atomic long arrived, twice, bogus;

static int on_am(void *arg, int src, const void *data, size_t len, triad_am_msg_t *msg)
{
	struct am m;

	(void)arg;
	(void)msg;
	if (len != sizeof(m)) {
		bogus++;
		return TRIAD_AM_DONE;
	}
	memcpy(&m, data, sizeof(m));
	if ((int)m.sender != src || src >= MAXR || m.n >= COUNT) {
		bogus++;
		return TRIAD_AM_DONE;
	}
	if (atomic_fetch_add(&seen[src][m.n], 1))
		twice++;
	arrived++;
	return TRIAD_AM_DONE;
}

static void wait_arrived(triad_ctx_t *ctx, long want)
{
	time_t end = time(NULL) + 120;

	while (arrived < want && time(NULL) < end) {
		triad_progress(ctx);
		sched_yield();
	}
	FT_CHECK(arrived == want, "%ld messages arrived, %ld expected", (long)arrived, want);
}

/* Messages lo .. hi - 1 (every priority) and one put of 8 bytes into slot
 * `rank` of peer's window; the put's request. */
static triad_req_t *speak_range(triad_ctx_t *ctx, int peer, uint64_t *word, uint32_t lo,
				uint32_t hi)
{
	triad_req_t *req = NULL;
	int ret;

	for (uint32_t n = lo; n < hi; n++) {
		struct am m = { .sender = (uint32_t)rank, .n = n };

		ret = triad_am_send(ctx, peer, AM_ID, &m, sizeof(m), (enum triad_prio)(n % 3), NULL);
		FT_CHECK(ret == 0, "am_send to %d: %s", peer, strerror(-ret));
	}
	*word = 0x1a2b000000000000ull | (uint64_t)rank << 16 | (uint64_t)peer;
	ret = triad_put(ctx, word, sizeof(*word), peer, WIN, (uint64_t)rank * 8, 0, &req);
	FT_CHECK(ret == 0, "put to %d: %s", peer, strerror(-ret));
	return ret ? NULL : req;
}

/* COUNT messages and the put. */
static triad_req_t *speak_to(triad_ctx_t *ctx, int peer, uint64_t *word)
{
	return speak_range(ctx, peer, word, 0, COUNT);
}

static void check_words(const uint64_t *win, const int *from, int n)
{
	for (int i = 0; i < n; i++) {
		int r = from[i];
		uint64_t want = 0x1a2b000000000000ull | (uint64_t)r << 16 | (uint64_t)rank;

		FT_CHECK(win[r] == want, "slot %d: %016llx, want %016llx", r,
			 (unsigned long long)win[r], (unsigned long long)want);
	}
}

static void check_seen(const int *from, int n)
{
	for (int i = 0; i < n; i++)
		for (int k = 0; k < COUNT; k++)
			FT_CHECK(seen[from[i]][k] == 1, "message %d from %d arrived %u times", k,
				 from[i], (unsigned)seen[from[i]][k]);
	FT_CHECK(twice == 0 && bogus == 0, "%ld duplicates, %ld malformed", (long)twice,
		 (long)bogus);
}

/* ---- cases --------------------------------------------------------------------*/
static void case_collide(triad_ctx_t *ctx, uint64_t *win)
{
	triad_req_t *req[MAXR] = { 0 };
	uint64_t word[MAXR];
	int from[MAXR] = { 0 }, n = 0;

	meet("go", 0);
	/* Everyone at once, each starting with a different peer. */
	for (int i = 1; i < size; i++) {
		int peer = (rank + i) % size;

		req[peer] = speak_to(ctx, peer, &word[peer]);
		from[n++] = peer;
	}
	for (int i = 0; i < n; i++) {
		enum triad_status st = req[from[i]] ? ft_wait(req[from[i]], 120000) : TRIAD_S_OK;

		FT_CHECK(st == TRIAD_S_OK, "put to %d: %s", from[i], triad_status_str(st));
	}
	wait_arrived(ctx, (long)n * COUNT);
	meet("landed", 0); /* every put of every rank is complete */
	check_words(win, from, n);
	check_seen(from, n);
	wait_all_up(ctx, from, n);
	for (int i = 0; i < n; i++)
		for (int p = 0; p < nplanes; p++) {
			uint64_t e = established(ctx, from[i], p);

			/* Up once; twice when the transport broke a fresh connection and
			 * the pair rebuilt it (a half-open one after a burst of
			 * set-ups: the count of QPs below still says one each). */
			FT_CHECK(e >= 1, "rank %d plane %d never came up", from[i], p);
			if (e > 1)
				printf("collide: rank %d: rank %d plane %d came up %llu times (rebuilt)\n",
				       rank, from[i], p, (unsigned long long)e);
		}
	check_qps(ctx, n * nplanes, "(N - 1) x planes: one QP per lane, never two, never none");
	if (rank == 0)
		printf("collide: %d ranks x %d planes: %d messages each way per pair, each once; "
		       "every lane up\n", size, nplanes, COUNT);
}

static void case_neighbour(triad_ctx_t *ctx, uint64_t *win)
{
	int partner = rank ^ 1;
	uint64_t word;
	triad_req_t *req;

	FT_CHECK(size % 2 == 0, "an even number of ranks, not %d", size);
	meet("go", 0);
	req = speak_to(ctx, partner, &word);
	FT_CHECK(!req || ft_wait(req, 120000) == TRIAD_S_OK, "put to %d", partner);
	wait_arrived(ctx, COUNT);
	meet("landed", 1ull << partner);
	check_words(win, &partner, 1);
	check_seen(&partner, 1);
	wait_all_up(ctx, &partner, 1);
	for (int r = 0; r < size; r++)
		for (int p = 0; r != rank && p < nplanes; p++) {
			uint64_t e = established(ctx, r, p);

			if (r == partner)
				FT_CHECK(e == 1, "lane to %d plane %d: established %llu, want 1", r, p,
					 (unsigned long long)e);
			else
				FT_CHECK(e == 0, "lane to %d plane %d was connected (%llu), never used",
					 r, p, (unsigned long long)e);
		}
	for (int p = 0; p < nplanes; p++) {
		struct triad_plane_info in = { .field_mask = TRIAD_PLANE_INFO_ALL };

		FT_CHECK(triad_plane_info(ctx, p, &in) == 0, "plane_info %d", p);
		FT_CHECK(in.state == TRIAD_PLANE_NORMAL && in.peers_up == 1,
			 "plane %d: %s, %u peers up (want normal, 1)", p,
			 triad_plane_state_str(in.state), in.peers_up);
	}
	check_qps(ctx, nplanes, "one peer x planes");
	if (rank == 0)
		printf("neighbour: %d ranks: %d QPs per process (%d when connected eagerly)\n",
		       size, nplanes, (size - 1) * nplanes);
	meet("checked", 0); /* before the closing barrier connects rank 0 */
}

static int fctl(const char *verb, int node, int plane)
{
	int ret = ft_ctl("%s %d %d", verb, node, plane);

	FT_CHECK(ret == 0, "fabric-ctl %s %d %d failed", verb, node, plane);
	return ret;
}

static void case_first_breaks(triad_ctx_t *ctx, uint64_t *win)
{
	int peer = rank ^ 1;
	uint64_t word[2];
	triad_req_t *req;

	if (size != 2 || nplanes != 2) {
		FT_CHECK(0, "first-breaks wants 2 ranks x 2 planes, not %d x %d", size, nplanes);
		return;
	}
	if (rank == 0)
		fctl("cut", 1, 0);
	meet("cut0", 0);
	req = speak_range(ctx, peer, &word[0], 0, COUNT / 2);
	FT_CHECK(!req || ft_wait(req, 60000) == TRIAD_S_OK, "put to %d on plane 1", peer);
	wait_arrived(ctx, COUNT / 2);
	FT_CHECK(established(ctx, peer, 1) == 1 && established(ctx, peer, 0) == 0,
		 "before the second cut: plane 0 up %llu times, plane 1 %llu (want 0, 1)",
		 (unsigned long long)established(ctx, peer, 0),
		 (unsigned long long)established(ctx, peer, 1));
	win[peer] = 0; /* the peer's second put writes it again */
	meet("half", 0);
	if (rank == 0)
		fctl("cut", 1, 1);
	meet("cut1", 0);
	/* In flight on plane 1 when its ACKs stop: they come back when the
	 * transport gives up (TRIAD_ACK_TIMEOUT x TRIAD_RETRY_COUNT). */
	req = speak_range(ctx, peer, &word[1], COUNT / 2, COUNT);
	if (rank == 0) {
		sleep(3);
		fctl("heal", 1, 0);
	}
	/* Plane 1 stays cut until everything landed: it all went on plane 0
	 * (plane 1's rebuild, healed at once, could come up first). */
	FT_CHECK(!req || ft_wait(req, 60000) == TRIAD_S_OK, "put to %d across the break", peer);
	wait_arrived(ctx, COUNT);
	meet("landed", 0);
	if (rank == 0)
		fctl("heal", 1, 1);
	check_words(win, &peer, 1);
	check_seen(&peer, 1);
	FT_CHECK(established(ctx, peer, 0) >= 1, "plane 0 never came up");
	if (rank == 0 && !ft_failures)
		printf("first-breaks: plane 1 broke with %d messages each way in flight while plane 0 "
		       "was being connected: every message arrived once, both puts landed\n",
		       COUNT / 2);
}

static int case_unreachable(triad_ctx_t *ctx)
{
	int gone = size - 1, ret;
	const char *t = getenv("TRIAD_CONNECT_TIMEOUT_MS");
	double limit = (t ? atoi(t) : 60000) / 1000.0 + 5 + 3; /* + slack + a timer period */

	if (rank == 0) {
		triad_req_t *put = NULL, *am = NULL, *fl = NULL;
		uint64_t word = 1, back = 0;
		struct am m = { 0 };
		double t0 = ft_now_s(), took;
		enum triad_status st;

		FT_CHECK(triad_put(ctx, &word, 8, gone, WIN, 0, 0, &put) == 0, "put");
		FT_CHECK(triad_am_send(ctx, gone, AM_ID, &m, sizeof(m), TRIAD_PRIO_HIGH, &am) == 0,
			 "am_send");
		FT_CHECK(triad_get(ctx, &back, 8, gone, WIN, 0, 0, NULL) == 0, "request-less get");
		FT_CHECK(triad_flush(ctx, gone, &fl) == 0, "flush");
		st = put ? ft_wait(put, 120000) : TRIAD_S_PENDING;
		FT_CHECK(st == TRIAD_S_UNREACHABLE, "put: %s", triad_status_str(st));
		st = am ? ft_wait(am, 120000) : TRIAD_S_PENDING;
		FT_CHECK(st == TRIAD_S_UNREACHABLE, "message: %s", triad_status_str(st));
		st = fl ? ft_wait(fl, 120000) : TRIAD_S_PENDING;
		FT_CHECK(st == TRIAD_S_UNREACHABLE, "flush: %s", triad_status_str(st));
		took = ft_now_s() - t0;
		FT_CHECK(took < limit, "failed after %.1f s, the timeout allows %.1f", took, limit);
		FT_CHECK(established(ctx, gone, 0) == 0, "a lane to the missing rank came up");
		printf("unreachable: put, message and flush to rank %d failed after %.1f s\n", gone,
		       took);
	}
	ret = triad_barrier(ctx, 60000);
	FT_CHECK(ret == -EIO, "barrier without rank %d: %s (want -EIO)", gone, strerror(-ret));
	triad_fini(ctx);
	return ft_failures ? 1 : 0;
}

/* Ranks in a world file: its lines that start with a rank number. */
static int world_ranks(const char *path)
{
	char line[512];
	FILE *f = fopen(path, "r");
	int n = 0;

	while (f && fgets(line, sizeof(line), f))
		n += line[0] >= '0' && line[0] <= '9';
	if (f)
		fclose(f);
	return n;
}

int main(int argc, char **argv)
{
	static const struct option opts[] = { { "case", required_argument, NULL, 'c' },
					      { NULL, 0, NULL, 0 } };
	const char *which = "collide", *mode = getenv("TRIAD_CONNECT");
	uint64_t *win_buf;
	triad_win_t *win;
	triad_ctx_t *ctx;
	int o, ret;

	while ((o = getopt_long(argc, argv, "c:", opts, NULL)) != -1) {
		if (o != 'c') {
			fprintf(stderr, "usage: test_lazy --case "
					"collide|neighbour|unreachable|first-breaks\n");
			return 2;
		}
		which = optarg;
	}
	if (!mode || strcmp(mode, "lazy")) {
		fprintf(stderr, "test_lazy: run with TRIAD_CONNECT=lazy\n");
		return 2;
	}
	if (!strcmp(which, "unreachable") && getenv("TRIAD_RANK") && getenv("TRIAD_WORLD")) {
		int n = world_ranks(getenv("TRIAD_WORLD"));

		if (n > 1 && atoi(getenv("TRIAD_RANK")) == n - 1)
			return 0; /* the last rank of the world never starts triad */
	}
	ctx = ft_init();
	rank = triad_rank(ctx);
	size = triad_size(ctx);
	nplanes = triad_nplanes(ctx);
	if (size > MAXR) {
		fprintf(stderr, "test_lazy: at most %d ranks\n", MAXR);
		return 2;
	}
	win_buf = calloc(MAXR, sizeof(*win_buf));
	ret = win_buf ? triad_win_create(ctx, WIN, win_buf, MAXR * sizeof(*win_buf), NULL, &win)
		      : -ENOMEM;
	FT_CHECK(ret == 0, "win_create: %s", strerror(-ret));
	FT_CHECK(triad_am_register(ctx, AM_ID, on_am, NULL) == 0, "am_register");
	if (!strcmp(which, "unreachable"))
		return case_unreachable(ctx); /* its own ending: no full barrier */
	if (!strcmp(which, "collide"))
		case_collide(ctx, win_buf);
	else if (!strcmp(which, "neighbour"))
		case_neighbour(ctx, win_buf);
	else if (!strcmp(which, "first-breaks"))
		case_first_breaks(ctx, win_buf);
	else
		FT_CHECK(0, "unknown case %s", which);
	ret = ft_finish(ctx, which);
	free(win_buf);
	return ret;
}
