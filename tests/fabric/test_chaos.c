/* Chaos: a random schedule of faults under a mixed workload, with the
 * invariants checked by the test itself (after Jepsen's nemesis and
 * checker, and FoundationDB's seeded simulation: a seed replays a run's
 * schedule).
 *
 *   test_chaos [--seed N] [--seconds S] [--fault-gap MS] [--inside-gap MS]
 *
 * Faults (rank 0's nemesis thread; one at a time, each healed before the
 * next, chosen by the seed): a link down and up (fabric-ctl down/up), a
 * silent cut and heal, netem loss (5 %), delay (20 ms) or reordering on a
 * plane, and on rank 0's own planes triad_plane_fail, refused WRITEs
 * (triad_plane_refuse_writes), and a drain and restore.  With --inside-gap,
 * every other rank's nemesis does the last three to its own planes too, a
 * fault every MS on average: faults then overlap, on both ends of a
 * connection and on both planes of a pair.
 *
 * Workload (every rank, until the schedule ends):
 *   - the main thread issues puts (unpinned, from 1 B to 8 KiB) into a block
 *     of each target reserved to it, each block once; once a put completes
 *     it tells the owner (an active message), and the owner checks the block
 *     holds exactly the put's bytes, then rewrites it (RETIRED) at once, as
 *     an application that reuses memory on completion does;
 *   - gets of the owner's fixed pattern, and third-party copies in all three
 *     modes from a random source's pattern into a random destination, each
 *     read back and verified;
 *   - a second thread sends strict-order active messages to every peer on
 *     every priority, each numbered per (sender, priority), while the main
 *     thread sends its own (the put notices) on the medium priority.
 * Checked: every request ends within 60 s, and OK (a fault is never the
 * operation's: what a broken plane flushed is done again elsewhere, or
 * waits for the pair to reconnect); a put's bytes are in place when its
 * owner hears of it; no byte lands in a block after its owner retired it
 * (checked again at the end); active messages arrive exactly once and in
 * order per (sender, priority); the resident memory grows by less than
 * 64 MiB; and at the end, with every fault healed, every plane carries a put
 * to every peer again.
 *
 * Rank 0 prints "chaos: seed S: F faults, O operations checked, V
 * violations" (the sum over the ranks); the exit status is non-zero when V
 * is not 0.  tests/fabric/chaos-soak runs it for as long as one likes. */
#include <dirent.h>
#include <getopt.h>
#include <pthread.h>
#include <stdatomic.h>
#include <unistd.h>

#include "ft.h"

#define WIN 1
#define MAXR 8
#define PAT_LEN (256u << 10)	   /* the owner's fixed pattern: gets and copy sources */
#define BLK 8192u		   /* a put's block */
#define NBLK 512u		   /* blocks per initiator */
#define CBLK 16384u		   /* a copy's block at the destination */
#define NCBLK 16u		   /* copy blocks per initiator, reused */
#define AM_PUT_DONE 10
#define AM_ORDER 11
#define AM_COUNTS 12
#define RETIRED 0xeeu
#define OP_TIMEOUT_MS 60000
#define RSS_GROWTH_MAX (64l << 20)

static int rank, size, nplanes;
static char *win;
static uint64_t seed = 1;
static int seconds = 60, fault_gap_ms = 1500, inside_gap_ms; /* 0: rank 0's nemesis only */
static atomic_int stop;
static atomic_long violations, checked, faults;
static atomic_long arrivals; /* ordered messages handled: the progress thread's pulse */

/* Window: pattern | puts: NBLK blocks per initiator | copies: NCBLK per initiator */
static uint64_t put_off(int initiator, unsigned k)
{
	return PAT_LEN + ((uint64_t)initiator * NBLK + k) * BLK;
}

static uint64_t copy_off(int initiator, unsigned k)
{
	return PAT_LEN + (uint64_t)MAXR * NBLK * BLK + ((uint64_t)initiator * NCBLK + k) * CBLK;
}

/* ... then a tail: the healed planes' puts, and the ranks' sums at rank 0. */
#define TAIL_OFF copy_off(MAXR, 0)
#define SUM_OFF (TAIL_OFF + 64)

static uint64_t win_len(void)
{
	return SUM_OFF + 24 * MAXR;
}

#define VIOLATION(...)                                                                 \
	do {                                                                           \
		atomic_fetch_add(&violations, 1);                                      \
		fprintf(stderr, "rank %d: VIOLATION: ", rank);                         \
		fprintf(stderr, __VA_ARGS__);                                          \
		fputc('\n', stderr);                                                   \
	} while (0)

/* xorshift64*: the seed replays the schedule and the workload's choices. */
static uint64_t rnd(uint64_t *s)
{
	*s ^= *s >> 12;
	*s ^= *s << 25;
	*s ^= *s >> 27;
	return *s * 0x2545f4914f6cdd1dull;
}

static uint32_t put_seed(int initiator, int target)
{
	return 0x5000u + (uint32_t)initiator * 16u + (uint32_t)target;
}

/* A request ends within the bound, and OK. */
static int settle(triad_req_t *req, const char *what, int peer)
{
	int ret = triad_wait(req, OP_TIMEOUT_MS);
	enum triad_status st;

	atomic_fetch_add(&checked, 1);
	if (ret) {
		VIOLATION("%s to/from %d did not end within %d ms", what, peer, OP_TIMEOUT_MS);
		return -1; /* left pending: it may still complete */
	}
	st = triad_req_status(req);
	if (st != TRIAD_S_OK) {
		VIOLATION("%s to/from %d ended %s (leg %s)", what, peer, triad_status_str(st),
			  triad_copy_leg_str(triad_req_copy_leg(req)));
		triad_req_free(req);
		return -1;
	}
	triad_req_free(req);
	return 0;
}

/* ---- the owner's side ------------------------------------------------------- */
static uint8_t retired[MAXR][NBLK]; /* blocks retired, by initiator; handler thread only */
static uint32_t retired_len[MAXR][NBLK];
static uint32_t am_next[MAXR][3]; /* the next number expected from (sender, prio) */
static uint64_t am_got[MAXR][3];
static uint64_t am_sent_by[MAXR][3]; /* AM_COUNTS: what each sender says it sent */
static atomic_int counts_in;

struct put_done { uint32_t k, len; };
struct order { uint32_t n; uint8_t prio; };

static int on_put_done(void *arg, int src, const void *data, size_t len, triad_am_msg_t *msg)
{
	struct put_done d;
	const uint8_t *b;

	(void)arg;
	(void)msg;
	if (len != sizeof(d) || src < 0 || src >= size) {
		VIOLATION("malformed put notice from %d", src);
		return TRIAD_AM_DONE;
	}
	memcpy(&d, data, sizeof(d));
	if (d.k >= NBLK || d.len > BLK || retired[src][d.k]) {
		VIOLATION("put notice from %d for block %u (len %u) twice or out of range", src,
			  d.k, d.len);
		return TRIAD_AM_DONE;
	}
	b = (const uint8_t *)win + put_off(src, d.k);
	if (ft_verify(b, d.len, put_seed(src, rank), (uint64_t)d.k * BLK) >= 0)
		VIOLATION("block %u from %d does not hold the put's %u bytes when told it completed",
			  d.k, src, d.len);
	memset(win + put_off(src, d.k), RETIRED, BLK); /* reused at once */
	retired[src][d.k] = 1;
	retired_len[src][d.k] = d.len;
	atomic_fetch_add(&checked, 1);
	return TRIAD_AM_DONE;
}

static int on_order(void *arg, int src, const void *data, size_t len, triad_am_msg_t *msg)
{
	struct order o;

	(void)arg;
	(void)msg;
	atomic_fetch_add(&arrivals, 1);
	if (len != sizeof(o) || src < 0 || src >= size) {
		VIOLATION("malformed ordered message from %d", src);
		return TRIAD_AM_DONE;
	}
	memcpy(&o, data, sizeof(o));
	if (o.prio > 2 || o.n != am_next[src][o.prio])
		VIOLATION("message %u of priority %u from %d, expected %u (lost, doubled or out of "
			  "order)", o.n, o.prio, src, o.prio <= 2 ? am_next[src][o.prio] : 0);
	if (o.prio <= 2) {
		am_next[src][o.prio] = o.n + 1;
		am_got[src][o.prio]++;
	}
	atomic_fetch_add(&checked, 1);
	return TRIAD_AM_DONE;
}

static int on_counts(void *arg, int src, const void *data, size_t len, triad_am_msg_t *msg)
{
	(void)arg;
	(void)msg;
	if (len == sizeof(am_sent_by[0]) && src >= 0 && src < size) {
		memcpy(am_sent_by[src], data, len);
		atomic_fetch_add(&counts_in, 1);
	}
	return TRIAD_AM_DONE;
}

/* Every retired block still holds RETIRED: nothing landed after its put
 * completed and its owner reused it. */
static void check_retired(void)
{
	for (int i = 0; i < size; i++)
		for (unsigned k = 0; k < NBLK; k++) {
			const uint8_t *b = (const uint8_t *)win + put_off(i, k);

			if (!retired[i][k])
				continue;
			for (unsigned j = 0; j < BLK; j++)
				if (b[j] != RETIRED) {
					VIOLATION("block %u from %d written after its put completed "
						  "(byte %u)", k, i, j);
					break;
				}
			atomic_fetch_add(&checked, 1);
		}
}

/* ---- sending active messages, which may say -EAGAIN (bounded queues) ------- */
static int am_send_retry(triad_ctx_t *ctx, int to, unsigned id, const void *buf, size_t len,
			 enum triad_prio prio)
{
	double give_up = ft_now_s() + OP_TIMEOUT_MS / 1000.0;
	int ret;

	while ((ret = triad_am_send(ctx, to, id, buf, len, prio, NULL)) == -EAGAIN &&
	       ft_now_s() < give_up) {
		triad_progress(ctx);
		usleep(200);
	}
	return ret;
}

/* ---- the second thread: ordered active messages ------------------------------ */
static uint32_t am_sent[MAXR][3];

static void *orderer(void *arg)
{
	triad_ctx_t *ctx = arg;
	uint64_t s = seed * 31 + (uint64_t)rank;

	while (!atomic_load(&stop)) {
		int to = (int)(rnd(&s) % (uint64_t)size);
		unsigned prio = (unsigned)(rnd(&s) % 3);
		struct order o;
		int ret;

		if (to == rank)
			continue;
		o = (struct order){ .n = am_sent[to][prio], .prio = (uint8_t)prio };
		ret = am_send_retry(ctx, to, AM_ORDER, &o, sizeof(o), (enum triad_prio)prio);
		if (ret) {
			VIOLATION("ordered message to %d: %s", to, strerror(-ret));
			break;
		}
		am_sent[to][prio]++;
		if (rnd(&s) % 8 == 0)
			usleep(500);
	}
	return NULL;
}

/* ---- the nemesis ----------------------------------------------------------------- */
static void nap_ms(int ms)
{
	for (int t = 0; t < ms && !atomic_load(&stop); t += 10)
		usleep(10000);
}

/* The faults from outside: fabric-ctl's verbs on (node, plane), then back. */
static const struct {
	const char *what, *on, *off;
} outside[] = {
	{ "link down", "down %d %d", "up %d %d" },
	{ "cut", "cut %d %d", "heal %d %d" },
	{ "loss 5%", "netem %d %d loss 5%%", "clear %d %d" },
	{ "delay 20 ms", "netem %d %d delay 20ms", "clear %d %d" },
	{ "reordering", "netem %d %d delay 10ms reorder 25%% 50%%", "clear %d %d" },
};
#define NOUTSIDE ((int)(sizeof(outside) / sizeof(outside[0])))

/* A fault from inside, on one of this rank's own planes (kind 0 .. 3):
 * failed (twice as likely), WRITEs refused (both until its connections are
 * rebuilt), or drained and restored after hold ms.  Its name. */
static const char *inside_fault(triad_ctx_t *ctx, int kind, int plane, int *hold)
{
	if (kind < 3) {
		*hold = 0;
		ft_fault_plane(ctx, plane, kind == 2);
		return kind == 2 ? "WRITEs refused" : "plane failed";
	}
	if (triad_plane_drain(ctx, plane) == 0) { /* -EBUSY: its last live plane */
		nap_ms(*hold);
		triad_plane_restore(ctx, plane);
	}
	return "drain";
}

/* ---- the watchdog ------------------------------------------------------------ */
/* Every peer's orderer keeps sending; a rank that handles none of it for
 * STALL_S is stalled (chaos seed 6015: a rank's library silent for over
 * 10 s, its peers declaring it lost).  Once per stall, every thread's
 * name, kernel wait channel, system call and kernel stack go to stderr,
 * and twice, STALL_S apart, the user stacks (gdb), so that the run names
 * the call or the loop it is stuck in. */
#define STALL_S 4

static void dump_file(const char *path, const char *what, const char *tid)
{
	char line[256];
	FILE *f = fopen(path, "r");

	if (!f)
		return;
	while (fgets(line, sizeof(line), f))
		fprintf(stderr, "rank %d: watchdog: thread %s %s: %s%s", rank, tid, what, line,
			strchr(line, '\n') ? "" : "\n");
	fclose(f);
}

/* Every thread's state, CPU, CPU time so far (user and system) and, from
 * schedstat, its time on a CPU and waiting for one; then the CPUs' own
 * counts.  Taken at both dumps: a thread that loops shows which side of
 * the system call boundary it loops on, one starved of a CPU shows its
 * wait, and the CPUs whether softirq work took them. */
static void dump_cpu(void)
{
	DIR *d = opendir("/proc/self/task");
	double tick = (double)sysconf(_SC_CLK_TCK);
	struct dirent *e;
	char path[300], line[1024];
	FILE *f;

	if (!d)
		return;
	while ((e = readdir(d))) {
		unsigned long long on = 0, wait = 0;
		char *p, *tok, *save;
		const char *state = "?";
		unsigned long ut = 0, st = 0;
		int cpu = -1, i = 0;

		if (e->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "/proc/self/task/%s/stat", e->d_name);
		if (!(f = fopen(path, "r")))
			continue;
		/* After the name's closing parenthesis, field 3 (state) on;
		 * utime, stime and processor are fields 14, 15 and 39 (proc(5)). */
		if (fgets(line, sizeof(line), f) && (p = strrchr(line, ')')))
			for (tok = strtok_r(p + 1, " ", &save); tok; tok = strtok_r(NULL, " ", &save), i++) {
				if (i == 0)
					state = tok;
				else if (i == 14 - 3)
					ut = strtoul(tok, NULL, 10);
				else if (i == 15 - 3)
					st = strtoul(tok, NULL, 10);
				else if (i == 39 - 3)
					cpu = atoi(tok);
			}
		fclose(f);
		snprintf(path, sizeof(path), "/proc/self/task/%s/schedstat", e->d_name);
		if ((f = fopen(path, "r"))) {
			if (fscanf(f, "%llu %llu", &on, &wait) != 2)
				on = wait = 0;
			fclose(f);
		}
		fprintf(stderr, "rank %d: watchdog: thread %s state %s on cpu %d: user %.2f s, "
			"system %.2f s; on a cpu %.3f s, waiting for one %.3f s\n", rank, e->d_name,
			state, cpu, ut / tick, st / tick, on * 1e-9, wait * 1e-9);
	}
	closedir(d);
	if ((f = fopen("/proc/stat", "r"))) {
		while (fgets(line, sizeof(line), f) && !strncmp(line, "cpu", 3))
			fprintf(stderr, "rank %d: watchdog: /proc/stat %s", rank, line);
		fclose(f);
	}
}

static void dump_threads(void)
{
	DIR *d = opendir("/proc/self/task");
	struct dirent *e;
	char path[300];

	if (!d)
		return;
	while ((e = readdir(d))) {
		if (e->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "/proc/self/task/%s/comm", e->d_name);
		dump_file(path, "name", e->d_name);
		snprintf(path, sizeof(path), "/proc/self/task/%s/wchan", e->d_name);
		dump_file(path, "waits in", e->d_name);
		snprintf(path, sizeof(path), "/proc/self/task/%s/syscall", e->d_name);
		dump_file(path, "in system call", e->d_name);
		snprintf(path, sizeof(path), "/proc/self/task/%s/stack", e->d_name);
		dump_file(path, "kernel stack", e->d_name);
	}
	closedir(d);
}

/* Every thread's user stack, from gdb where the machine has it (the VM's
 * guest sees the host's); written to a file first, since gdb stops this
 * thread too while it prints. */
static void user_stacks(void)
{
	char cmd[256], path[64], line[512];
	FILE *f;

	snprintf(path, sizeof(path), "/tmp/test_chaos-gdb.%d", (int)getpid());
	snprintf(cmd, sizeof(cmd),
		 "gdb -q -batch -p %d -ex 'thread apply all bt 30' >%s 2>&1 </dev/null",
		 (int)getpid(), path);
	if (system(cmd) == -1 || !(f = fopen(path, "r")))
		return;
	while (fgets(line, sizeof(line), f))
		if (line[0] == '#' || !strncmp(line, "Thread", 6))
			fprintf(stderr, "rank %d: watchdog: gdb: %s%s", rank, line,
				strchr(line, '\n') ? "" : "\n");
	fclose(f);
	unlink(path);
}

static void *watchdog(void *arg)
{
	long last = -1;
	double since = ft_now_s();
	int told = 0;

	(void)arg;
	while (!atomic_load(&stop)) {
		long now = atomic_load(&arrivals);

		if (now != last) {
			last = now;
			since = ft_now_s();
			told = 0;
		} else if (told < 2 && ft_now_s() - since >= STALL_S * (told + 1)) {
			/* Twice: where a loop is, and whether it is still there. */
			fprintf(stderr, "rank %d: watchdog: no ordered message handled for %d s "
				"(at %.3f); its threads:\n", rank, STALL_S * (told + 1), ft_now_s());
			if (!told)
				dump_threads();
			dump_cpu();
			user_stacks();
			told++;
		}
		usleep(200000);
	}
	return NULL;
}

/* Rank 0's nemesis takes the faults from outside and its own planes';
 * every other rank's, its own planes' only (--inside-gap), so that faults
 * from inside come several at once, on both ends of a connection. */
static void *nemesis(void *arg)
{
	triad_ctx_t *ctx = arg;
	uint64_t s = seed * 7919 + 1 + (uint64_t)rank * 104729;
	int gap = rank ? inside_gap_ms : fault_gap_ms;

	while (!atomic_load(&stop)) {
		int node = (int)(rnd(&s) % (uint64_t)size), plane = (int)(rnd(&s) % (uint64_t)nplanes);
		int kind = (int)(rnd(&s) % (NOUTSIDE + 4)), hold = 100 + (int)(rnd(&s) % 900);
		const char *what;
		double t0;

		if (rank)
			kind = NOUTSIDE + (int)(rnd(&s) % 4);
		nap_ms(gap / 2 + (int)(rnd(&s) % (uint64_t)gap));
		if (atomic_load(&stop))
			break;
		t0 = ft_now_s();
		if (kind < NOUTSIDE) {
			what = outside[kind].what;
			ft_ctl(outside[kind].on, node, plane);
			nap_ms(hold);
			ft_ctl(outside[kind].off, node, plane);
		} else {
			node = rank;
			what = inside_fault(ctx, kind - NOUTSIDE, plane, &hold);
		}
		atomic_fetch_add(&faults, 1);
		printf("chaos: fault %ld of rank %d: %s, node %d plane %d, %d ms "
		       "(from %.3f to %.3f)\n",
		       atomic_load(&faults), rank, what, node, plane, hold, t0, ft_now_s());
		fflush(stdout);
	}
	return NULL;
}

/* ---- the main thread's workload ----------------------------------------------- */
static long rss_bytes(void)
{
	FILE *f = fopen("/proc/self/statm", "r");
	long pages = 0, resident = 0;

	if (f) {
		if (fscanf(f, "%ld %ld", &pages, &resident) != 2)
			resident = 0;
		fclose(f);
	}
	return resident * sysconf(_SC_PAGESIZE);
}

static void do_put(triad_ctx_t *ctx, int to, unsigned k, uint64_t *s)
{
	static char buf[BLK];
	uint32_t len = 1 + (uint32_t)(rnd(s) % BLK);
	struct put_done d = { .k = k, .len = len };
	triad_req_t *req;
	int ret;

	ft_fill(buf, len, put_seed(rank, to), (uint64_t)k * BLK);
	ret = triad_put(ctx, buf, len, to, WIN, put_off(rank, k), 0, &req);
	if (ret) {
		VIOLATION("put to %d: %s", to, strerror(-ret));
		return;
	}
	if (settle(req, "put", to))
		return;
	ret = am_send_retry(ctx, to, AM_PUT_DONE, &d, sizeof(d), TRIAD_PRIO_MEDIUM);
	if (ret)
		VIOLATION("put notice to %d: %s", to, strerror(-ret));
}

static void do_get(triad_ctx_t *ctx, int from, uint64_t *s)
{
	static char buf[BLK];
	uint32_t len = 1 + (uint32_t)(rnd(s) % BLK);
	uint64_t off = rnd(s) % (PAT_LEN - len);
	triad_req_t *req;
	int64_t bad;

	memset(buf, 0, len);
	if (triad_get(ctx, buf, len, from, WIN, off, 0, &req)) {
		VIOLATION("get from %d not issued", from);
		return;
	}
	if (settle(req, "get", from))
		return;
	if ((bad = ft_verify(buf, len, (uint32_t)from, off)) >= 0)
		VIOLATION("get of %u B from %d at %llu: byte %lld wrong", len, from,
			  (unsigned long long)off, (long long)bad);
}

/* A copy's destination read into buf, first filled with UNREAD; 0 when
 * the get completed OK. */
#define UNREAD 0xa5
static int read_back(triad_ctx_t *ctx, char *buf, uint32_t len, int dst, uint64_t doff)
{
	triad_req_t *req;

	memset(buf, UNREAD, len);
	if (triad_get(ctx, buf, len, dst, WIN, doff, 0, &req)) {
		VIOLATION("read-back of a copy not issued");
		return -1;
	}
	return settle(req, "copy read-back", dst);
}

static void do_copy(triad_ctx_t *ctx, unsigned k, uint64_t *s)
{
	static char buf[CBLK];
	int src = (int)(rnd(s) % (uint64_t)size), dst = (int)(rnd(s) % (uint64_t)size);
	uint32_t len = 1 + (uint32_t)(rnd(s) % CBLK);
	uint64_t off = rnd(s) % (PAT_LEN - len), doff = copy_off(rank, k % NCBLK);
	unsigned mode = (unsigned)(rnd(s) % 3);
	triad_req_t *req;
	char what[48];
	int64_t bad;

	if (src == dst)
		dst = (dst + 1) % size;
	if (triad_copy(ctx, src, WIN, off, dst, WIN, doff, len, mode, &req)) {
		VIOLATION("copy %d -> %d not issued", src, dst);
		return;
	}
	snprintf(what, sizeof(what), "copy %d -> %d (mode %u)", src, dst, mode);
	if (settle(req, what, dst))
		return;
	if (read_back(ctx, buf, len, dst, doff))
		return;
	if ((bad = ft_verify(buf, len, (uint32_t)src, off)) >= 0) {
		/* Which was wrong, the copy or the read?  Bytes the get left as
		 * it found them, and a second read, tell. */
		uint32_t wrong = 0, unread = 0;
		int again;

		for (uint32_t i = 0; i < len; i++) {
			wrong += (uint8_t)buf[i] != ft_pattern((uint32_t)src, off + i);
			unread += (uint8_t)buf[i] == UNREAD;
		}
		again = read_back(ctx, buf, len, dst, doff) ? -1
			: ft_verify(buf, len, (uint32_t)src, off) >= 0;
		VIOLATION("copy of %u B %d -> %d (mode %u) complete, byte %lld wrong at its first "
			  "read (%u wrong, %u as the get found its buffer; read again: %s)", len,
			  src, dst, mode, (long long)bad, wrong, unread,
			  again < 0 ? "failed" : again ? "wrong too" : "right");
	}
}

/* With every fault healed: each plane carries a put to every peer. */
static void every_plane(triad_ctx_t *ctx)
{
	static char buf[64];

	for (int p = 0; p < nplanes; p++)
		for (int r = 0; r < size; r++) {
			triad_req_t *req;

			if (r == rank)
				continue;
			char what[32];
			struct triad_conn_stats cs = { .field_mask = TRIAD_CONN_STATS_LINK |
									 TRIAD_CONN_STATS_CONN };

			snprintf(what, sizeof(what), "put on healed plane %d", p);
			if (triad_put(ctx, buf, sizeof(buf), r, WIN, TAIL_OFF, TRIAD_F_PLANE(p),
				      &req) != 0)
				VIOLATION("put to %d on plane %d not issued", r, p);
			else if (settle(req, what, r) && !triad_conn_stats(ctx, r, p, &cs))
				/* Whether the connection is up, and how often this
				 * side (the lower rank connects) tried and got it. */
				printf("rank %d: plane %d to rank %d: %s, %llu attempts, %llu "
				       "established\n", rank, p, r, cs.up ? "up" : "not up",
				       (unsigned long long)cs.connects,
				       (unsigned long long)cs.established);
		}
}

int main(int argc, char **argv)
{
	static const struct option opts[] = { { "seed", required_argument, NULL, 's' },
					      { "seconds", required_argument, NULL, 't' },
					      { "fault-gap", required_argument, NULL, 'g' },
					      { "inside-gap", required_argument, NULL, 'i' },
					      { NULL, 0, NULL, 0 } };
	unsigned next_blk[MAXR] = { 0 };
	pthread_t order_th, nemesis_th, watch_th;
	triad_ctx_t *ctx;
	triad_win_t *w;
	long rss0, rss1, v, c, ops = 0;
	uint64_t s;
	double end;
	int opt;

	while ((opt = getopt_long(argc, argv, "s:t:g:i:", opts, NULL)) != -1) {
		if (opt == 's')
			seed = strtoull(optarg, NULL, 0);
		else if (opt == 't' && atoi(optarg) > 0)
			seconds = atoi(optarg);
		else if (opt == 'g' && atoi(optarg) >= 100)
			fault_gap_ms = atoi(optarg);
		else if (opt == 'i' && atoi(optarg) >= 100)
			inside_gap_ms = atoi(optarg);
		else {
			fprintf(stderr, "usage: test_chaos [--seed N] [--seconds S (> 0)] "
					"[--fault-gap MS (>= 100)] [--inside-gap MS (>= 100)]\n");
			return 2;
		}
	}
	if (!seed)
		seed = 1; /* xorshift's one bad state */
	/* The library's lines carry the time the watchdog's and the faults'
	 * do, and dmesg's is close to: a stall can be laid beside a link event. */
	setenv("TRIAD_LOG_TIME", "on", 0);
	ctx = ft_init();
	rank = triad_rank(ctx);
	size = triad_size(ctx);
	nplanes = triad_nplanes(ctx);
	if (size < 2 || size > MAXR) {
		fprintf(stderr, "test_chaos needs 2 to %d ranks\n", MAXR);
		return 2;
	}
	win = calloc(1, win_len());
	if (!win)
		return 1;
	ft_fill(win, PAT_LEN, (uint32_t)rank, 0);
	FT_CHECK(triad_win_create(ctx, WIN, win, win_len(), NULL, &w) == 0, "window");
	FT_CHECK(triad_am_register(ctx, AM_PUT_DONE, on_put_done, NULL) == 0 &&
			 triad_am_register(ctx, AM_ORDER, on_order, NULL) == 0 &&
			 triad_am_register(ctx, AM_COUNTS, on_counts, NULL) == 0,
		 "handlers");
	if (rank == 0)
		printf("chaos: seed %llu, %d s, %d ranks x %d planes (replay: --seed %llu)\n",
		       (unsigned long long)seed, seconds, size, nplanes, (unsigned long long)seed);
	ft_barrier(ctx);
	rss0 = rss_bytes();
	pthread_create(&order_th, NULL, orderer, ctx);
	pthread_create(&watch_th, NULL, watchdog, NULL);
	if (rank == 0 || inside_gap_ms)
		pthread_create(&nemesis_th, NULL, nemesis, ctx);

	s = seed * 1000003 + (uint64_t)rank;
	end = ft_now_s() + seconds;
	while (ft_now_s() < end && atomic_load(&violations) < 20) {
		int peer = (int)(rnd(&s) % (uint64_t)size);
		unsigned what = (unsigned)(rnd(&s) % 4);

		if (peer == rank)
			continue;
		if (what <= 1 && next_blk[peer] < NBLK)
			do_put(ctx, peer, next_blk[peer]++, &s);
		else if (what == 2)
			do_get(ctx, peer, &s);
		else
			do_copy(ctx, (unsigned)ops, &s);
		ops++;
	}
	atomic_store(&stop, 1);
	pthread_join(order_th, NULL);
	pthread_join(watch_th, NULL);
	if (rank == 0 || inside_gap_ms) {
		pthread_join(nemesis_th, NULL);
		/* Each fault from outside was healed before the next; a plane
		 * that refuses WRITEs does so until its connections are rebuilt:
		 * fail this rank's planes one by one, each rebuilt before the
		 * next. */
		for (int p = 0; p < nplanes; p++) {
			ft_fault_plane(ctx, p, 0);
			sleep(2);
		}
	}
	ft_barrier(ctx);
	sleep(3); /* reconnects after the last fault */
	every_plane(ctx);
	/* Each sender's count of ordered messages to each peer. */
	for (int r = 0; r < size; r++) {
		uint64_t n[3] = { am_sent[r][0], am_sent[r][1], am_sent[r][2] };

		if (r != rank && am_send_retry(ctx, r, AM_COUNTS, n, sizeof(n), TRIAD_PRIO_LOW))
			VIOLATION("counts to %d not sent", r);
	}
	ft_barrier(ctx);
	for (int t = 0; t < 6000 && atomic_load(&counts_in) < size - 1; t++) {
		triad_progress(ctx);
		usleep(10000);
	}
	if (atomic_load(&counts_in) < size - 1)
		VIOLATION("%d of %d peers' counts arrived", atomic_load(&counts_in), size - 1);
	for (int r = 0; r < size; r++)
		for (int q = 0; q < 3; q++)
			if (r != rank && am_got[r][q] != am_sent_by[r][q])
				VIOLATION("%llu ordered messages of priority %d from %d arrived, it "
					  "sent %llu", (unsigned long long)am_got[r][q], q, r,
					  (unsigned long long)am_sent_by[r][q]);
	sleep(2); /* a late WRITE would land by now */
	check_retired();
	rss1 = rss_bytes();
	if (rss1 - rss0 > RSS_GROWTH_MAX)
		VIOLATION("resident memory grew by %ld MiB", (rss1 - rss0) >> 20);
	v = atomic_load(&violations);
	c = atomic_load(&checked);
	printf("chaos: rank %d: %ld operations, %ld checked, %ld violations, rss %+ld KiB\n", rank,
	       ops, c, v, (rss1 - rss0) >> 10);
	{
		/* The sums, at rank 0: each rank's (checked, violations, faults)
		 * put into its row of rank 0's window tail. */
		uint64_t mine[3] = { (uint64_t)c, (uint64_t)v, (uint64_t)atomic_load(&faults) };
		uint64_t *tab = (uint64_t *)(win + SUM_OFF);
		triad_req_t *req;

		if (rank != 0 && triad_put(ctx, mine, sizeof(mine), 0, WIN,
					   SUM_OFF + 24u * (unsigned)rank, 0, &req) == 0)
			settle(req, "summary", 0);
		ft_barrier(ctx);
		if (rank == 0) {
			uint64_t tc = (uint64_t)c, tv = (uint64_t)v, tf = mine[2];

			for (int r = 1; r < size; r++) {
				tc += tab[3 * r];
				tv += tab[3 * r + 1];
				tf += tab[3 * r + 2];
			}
			printf("chaos: seed %llu: %llu faults, %llu operations checked, %llu "
			       "violations\n", (unsigned long long)seed, (unsigned long long)tf,
			       (unsigned long long)tc, (unsigned long long)tv);
		}
	}
	if (atomic_load(&violations))
		ft_failures++;
	return ft_finish(ctx, "test_chaos");
}
