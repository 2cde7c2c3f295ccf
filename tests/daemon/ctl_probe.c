/* ctl-probe: a triadd client for tests/daemon/run, good or bad on purpose.
 *
 *   ctl-probe SOCKET garbage        bytes that are no frame: the daemon must close
 *   ctl-probe SOCKET partial        half a HELLO, then exit
 *   ctl-probe SOCKET unsealed       HELLO + a counters memfd that may shrink: closed
 *   ctl-probe SOCKET refused        expects the daemon to refuse this uid
 *   ctl-probe SOCKET client [--stuck PLANE] [--seconds S]
 *       a well-behaved client: checks that the table it is handed cannot
 *       be written (mmap PROT_WRITE, a read-write re-open through /proc,
 *       write()), then follows the policy: a plane the table says to
 *       leave is reported left and idle (but PLANE with --stuck, which
 *       keeps one message in flight), and prints "gen G STATE..." at every
 *       change (with --stamp, and the CLOCK_REALTIME of the change in ns).
 *       --knobs: also applies the table's knobs at every change through the
 *       library's registry over this environment, as lib/core/ctl.c does,
 *       prints "knobs NAME=VALUE/SOURCE ..." (those triadd may set) and
 *       reports them to the daemon (APPLIED).
 *       --tx N: adds N bytes to plane 0's tx_bytes and N / 2 to plane 1's
 *       rx_bytes every 100 ms (traffic for triadctl top and metrics).
 *       --name NAME: HELLO says NAME (any bytes); --nplanes N: at SIGUSR1
 *       (once the daemon has checked the region), rewrite the counters
 *       region's nplanes to N and print "rewritten", as a hostile client may.
 *   ctl-probe SOCKET readloop N
 *       a client that reads the table N times and prints the time per read
 *       (bench/daemon-notify runs it under strace -c: no syscall per read).
 *   ctl-probe SOCKET idle S         connects, says nothing: closed within S s
 *   ctl-probe SOCKET hello-only S   HELLO and no COUNTERS: closed within S s
 *   ctl-probe SOCKET pipeline N     N status commands at once, never reading;
 *       after 2 s reads: the daemon must have dropped it (EOF before the
 *       N-th answer)
 *   ctl-probe SOCKET monitor-noread S
 *       asks for events and never reads them: the daemon must close it
 *       within S s once they pile up (polls for the hang-up, reads nothing)
 *   ctl-probe SOCKET churn N        connects and closes N times (as a user
 *       the daemon refuses: N "refused" events for its monitors)
 *   ctl-probe SOCKET hold N         N clients (HELLO and COUNTERS) on N
 *       connections; prints "held H refused R" (and the first refusal),
 *       then stays until killed
 *   ctl-probe SOCKET flood N        N connections, not blocking on a full
 *       backlog; prints "connected K", then stays until killed
 *   ctl-probe SOCKET peerpid        prints the pid of the daemon that listens
 * Exit 0 when what was expected happened; 1 with a message otherwise. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "core/config.h"
#include "ctl/io.h"
#include "ctl/table.h"

static int die(const char *what)
{
	fprintf(stderr, "ctl-probe: %s\n", what);
	return 1;
}

static int dial(const char *path)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int fd = socket(AF_UNIX, SOCK_STREAM, 0);

	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", path);
	if (fd < 0 || connect(fd, (struct sockaddr *)&sa, sizeof(sa)))
		return -1;
	return fd;
}

static const char *hello_name = "ctl-probe";

static int hello(int fd)
{
	struct tr_ctl_msg m = { .type = TR_CTL_HELLO };

	m.u.hello.pid = (uint32_t)getpid();
	m.u.hello.rank = 0;
	m.u.hello.nplanes = 2;
	snprintf(m.u.hello.name, sizeof(m.u.hello.name), "%s", hello_name);
	return tr_ctl_send(fd, &m, -1, 1000);
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* 0 when the daemon closes the connection within secs. */
static int expect_closed_within(int fd, double secs)
{
	double end = now_s() + secs;
	char buf[256];

	for (;;) {
		struct pollfd pfd = { .fd = fd, .events = POLLIN };
		double left = end - now_s();
		ssize_t n;

		if (left <= 0 || poll(&pfd, 1, (int)(left * 1000) + 1) <= 0)
			return die("the daemon did not close the connection in time");
		n = read(fd, buf, sizeof(buf));
		if (n <= 0)
			return 0;
	}
}

static int expect_closed(int fd)
{
	return expect_closed_within(fd, 5);
}

static struct tr_ctl_counters *counters_fd(int *fd_p, int sealed)
{
	int fd = memfd_create("probe", MFD_ALLOW_SEALING);
	struct tr_ctl_counters *c;

	if (fd < 0 || ftruncate(fd, sizeof(*c)))
		return NULL;
	if (sealed && fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW))
		return NULL;
	c = mmap(NULL, sizeof(*c), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (c == MAP_FAILED)
		return NULL;
	tr_ctl_counters_init(c, 2);
	*fd_p = fd;
	return c;
}

static int send_counters(int sock, int fd)
{
	struct tr_ctl_msg m = { .type = TR_CTL_COUNTERS };

	m.u.counters.size = sizeof(struct tr_ctl_counters);
	return tr_ctl_send(sock, &m, fd, 1000);
}

/* Every way of writing the table must fail. */
static int check_readonly(int fd)
{
	char path[64];
	void *w;
	int rw;

	w = mmap(NULL, sizeof(struct tr_ctl_table), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (w != MAP_FAILED)
		return die("the table's descriptor maps writable");
	if (write(fd, "x", 1) >= 0)
		return die("the table's descriptor takes write()");
	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	rw = open(path, O_RDWR);
	if (rw >= 0) {
		w = mmap(NULL, sizeof(struct tr_ctl_table), PROT_READ | PROT_WRITE, MAP_SHARED,
			 rw, 0);
		if (w != MAP_FAILED)
			return die("the table re-opened read-write maps writable");
		if (pwrite(rw, "x", 1, 0) >= 0)
			return die("the table re-opened read-write takes write()");
		close(rw);
	}
	printf("table read-only\n");
	return 0;
}

static int stamp_changes;
static volatile sig_atomic_t usr1;

static void on_usr1(int sig)
{
	(void)sig;
	usr1 = 1;
}

/* --knobs: the process's configuration, the environment's and then the
 * daemon's. */
static struct tr_config *knobs;

static int knobs_follow(int sock, const struct tr_ctl_policy *p, uint64_t gen)
{
	struct tr_ctl_msg m = { .type = TR_CTL_APPLIED };
	struct tr_config_kv kv[TR_CTL_KNOBS];
	struct tr_config_var v;
	char err[300];

	for (unsigned k = 0; k < p->nknobs; k++)
		kv[k] = (struct tr_config_kv){ p->knob[k].name, p->knob[k].value };
	if (tr_config_apply_daemon(knobs, kv, p->nknobs, err, sizeof(err)))
		printf("knob refused: %s\n", err);
	m.u.applied.gen = gen;
	printf("knobs");
	for (size_t i = 0; tr_config_var(knobs, i, &v) == 0; i++) {
		if (v.when == TR_CONFIG_AT_START)
			continue;
		printf(" %s=%s/%s", v.name, v.value, tr_config_src_str(v.src));
		/* The registry's knobs fit (test_registry); the encoder checks. */
		memcpy(m.u.applied.knob[m.u.applied.n].name, v.name,
		       strnlen(v.name, TR_CTL_KNOB_NAME - 1));
		memcpy(m.u.applied.knob[m.u.applied.n].value, v.value,
		       strnlen(v.value, TR_CTL_KNOB_VALUE - 1));
		m.u.applied.src[m.u.applied.n++] = (uint8_t)v.src;
	}
	printf("\n");
	return tr_ctl_send(sock, &m, -1, 1000);
}

static void follow(struct tr_ctl_counters *c, const struct tr_ctl_table *t, int stuck,
		   uint64_t *last, int sock)
{
	struct timespec now;

	struct tr_ctl_policy p;
	uint64_t gen;

	if (tr_ctl_table_read(t, sizeof(*t), &p, &gen) || gen == *last)
		return;
	*last = gen;
	clock_gettime(CLOCK_REALTIME, &now);
	printf("gen %llu", (unsigned long long)gen);
	if (stamp_changes)
		printf(" t=%lld", (long long)now.tv_sec * 1000000000ll + now.tv_nsec);
	for (unsigned q = 0; q < p.nplanes && q < 2; q++) {
		int off = tr_ctl_pstate_off(p.plane[q].state);

		atomic_store(&c->plane[q].switched, (uint32_t)off);
		atomic_store(&c->plane[q].inflight, (int)q == stuck ? 1u : 0u);
		printf(" %s=%s", p.plane[q].name, tr_ctl_pstate_str(p.plane[q].state));
	}
	printf("\n");
	if (knobs && knobs_follow(sock, &p, gen))
		printf("APPLIED not sent\n");
	fflush(stdout);
	atomic_store_explicit(&c->applied_gen, gen, memory_order_release);
}

/* Connects like a client, then reads the policy n times. */
static int readloop(int sock, long n)
{
	struct tr_ctl_rx *rx = calloc(1, sizeof(*rx));
	struct tr_ctl_counters *c;
	const struct tr_ctl_table *t;
	struct tr_ctl_policy p;
	struct tr_ctl_msg m;
	struct timespec a, b;
	uint64_t gen, sum = 0;
	int cfd, tfd;

	c = counters_fd(&cfd, 1);
	if (!rx || !c || hello(sock) || send_counters(sock, cfd) ||
	    tr_ctl_rx_wait(sock, rx, &m, 5000) != 1 || m.type != TR_CTL_WELCOME ||
	    (tfd = tr_ctl_rx_take_fd(rx)) < 0)
		return die("no WELCOME");
	t = mmap(NULL, sizeof(*t), PROT_READ, MAP_SHARED, tfd, 0);
	if (t == MAP_FAILED)
		return die("cannot map the table");
	clock_gettime(CLOCK_MONOTONIC, &a);
	for (long i = 0; i < n; i++) {
		if (tr_ctl_table_read(t, sizeof(*t), &p, &gen))
			return die("read failed");
		sum += gen + p.nplanes;
	}
	clock_gettime(CLOCK_MONOTONIC, &b);
	printf("%ld reads, %.1f ns each (checksum %llu)\n", n,
	       ((double)(b.tv_sec - a.tv_sec) * 1e9 + (double)(b.tv_nsec - a.tv_nsec)) / (double)n,
	       (unsigned long long)sum);
	return 0;
}

static int client(int sock, int argc, char **argv)
{
	struct tr_ctl_rx *rx = calloc(1, sizeof(*rx));
	struct tr_ctl_counters *c;
	const struct tr_ctl_table *t;
	struct tr_ctl_msg m;
	int cfd, tfd, stuck = -1;
	long nplanes = -1, tx = 0;
	double secs = 3600;
	uint64_t last = 0;
	time_t end;

	for (int i = 0; i < argc; i++) {
		stamp_changes |= !strcmp(argv[i], "--stamp");
		if (!strcmp(argv[i], "--knobs")) {
			char err[300];

			knobs = malloc(sizeof(*knobs));
			if (!knobs || tr_config_load(knobs, tr_config_getenv, NULL, err, sizeof(err)))
				return die("this environment's TRIAD_* are bad");
		}
	}
	for (int i = 0; i + 1 < argc; i += 2) {
		if (!strcmp(argv[i], "--stuck"))
			stuck = atoi(argv[i + 1]);
		else if (!strcmp(argv[i], "--seconds"))
			secs = atof(argv[i + 1]);
		else if (!strcmp(argv[i], "--name"))
			hello_name = argv[i + 1];
		else if (!strcmp(argv[i], "--nplanes"))
			nplanes = atol(argv[i + 1]);
		else if (!strcmp(argv[i], "--tx"))
			tx = atol(argv[i + 1]);
	}
	c = counters_fd(&cfd, 1);
	if (!rx || !c || hello(sock) || send_counters(sock, cfd))
		return die("cannot say hello");
	tr_ctl_rx_init(rx);
	if (tr_ctl_rx_wait(sock, rx, &m, 5000) != 1 || m.type != TR_CTL_WELCOME)
		return die("no WELCOME");
	tfd = tr_ctl_rx_take_fd(rx);
	if (tfd < 0)
		return die("WELCOME without the table");
	if (check_readonly(tfd))
		return 1;
	t = mmap(NULL, sizeof(*t), PROT_READ, MAP_SHARED, tfd, 0);
	if (t == MAP_FAILED)
		return die("cannot map the table read-only");
	follow(c, t, stuck, &last, sock);
	if (nplanes >= 0)
		signal(SIGUSR1, on_usr1);
	end = time(NULL) + (time_t)secs;
	while (time(NULL) < end) {
		int ret = tr_ctl_rx_wait(sock, rx, &m, 100);

		if (usr1 && nplanes >= 0) {
			c->nplanes = (uint32_t)nplanes;
			printf("rewritten\n");
			fflush(stdout);
			nplanes = -1;
		}
		if (tx > 0) {
			atomic_fetch_add(&c->plane[0].tx_bytes, (uint64_t)tx);
			atomic_fetch_add(&c->plane[1].rx_bytes, (uint64_t)tx / 2);
		}
		if (ret == -ETIMEDOUT)
			continue;
		if (ret != 1 || m.type != TR_CTL_NOTIFY)
			return die("the daemon went away");
		follow(c, t, stuck, &last, sock);
	}
	return 0;
}

/* N status commands in one write, nothing read for 2 s: the daemon
 * must not wait for this peer, and must drop it. */
static int pipeline(int sock, long n)
{
	struct tr_ctl_msg m = { .type = TR_CTL_CMD }, r;
	struct tr_ctl_rx *rx = calloc(1, sizeof(*rx));
	uint8_t *buf = malloc((size_t)n * 64);
	size_t len = 0;
	long replies = 0;
	int ret;

	if (!rx || !buf)
		return die("out of memory");
	m.u.cmd.op = TR_CTL_OP_STATUS;
	for (long i = 0; i < n; i++)
		len += (size_t)tr_ctl_encode(&m, buf + len, 64);
	for (size_t off = 0; off < len;) {
		ssize_t w = write(sock, buf + off, len - off);

		if (w <= 0)
			return die("write");
		off += (size_t)w;
	}
	sleep(2);
	tr_ctl_rx_init(rx);
	while ((ret = tr_ctl_rx_wait(sock, rx, &r, 5000)) == 1)
		replies++;
	printf("%ld of %ld answers, then %s\n", replies, n,
	       ret == 0 ? "closed" : strerror(-ret));
	return ret == 0 && replies < n ? 0 : die("not dropped");
}

/* MONITOR, then nothing read: 0 once the daemon hangs up within secs. */
static int monitor_noread(int sock, double secs)
{
	struct tr_ctl_msg m = { .type = TR_CTL_CMD };
	struct pollfd pfd = { .fd = sock, .events = 0 }; /* POLLHUP only */
	double t0 = now_s();

	m.u.cmd.op = TR_CTL_OP_MONITOR;
	if (tr_ctl_send(sock, &m, -1, 1000))
		return die("cannot send");
	if (poll(&pfd, 1, (int)(secs * 1000)) != 1 || !(pfd.revents & POLLHUP))
		return die("the daemon did not drop a monitor that does not read");
	printf("dropped after %.1f s\n", now_s() - t0);
	return 0;
}

/* n connections, each closed at once. */
static int churn(const char *path, long n)
{
	for (long i = 0; i < n; i++) {
		int fd = dial(path);

		if (fd < 0)
			return die("cannot connect");
		close(fd);
	}
	return 0;
}

/* The file descriptor limit as high as the hard one. */
static void nofile_max(void)
{
	struct rlimit rl;

	if (!getrlimit(RLIMIT_NOFILE, &rl)) {
		rl.rlim_cur = rl.rlim_max;
		setrlimit(RLIMIT_NOFILE, &rl);
	}
}

/* n clients on n connections, held until killed. */
static int hold(const char *path, long n)
{
	struct tr_ctl_rx *rx = calloc(1, sizeof(*rx));
	struct tr_ctl_msg m;
	char first[256] = "";
	long held = 0, refused = 0;
	int cfd;

	nofile_max();
	if (!rx || !counters_fd(&cfd, 1))
		return die("cannot set up");
	for (long i = 0; i < n; i++) {
		int sock = dial(path), fd;

		if (sock < 0)
			return die("cannot connect");
		hello(sock); /* a refused connection may be closed already */
		send_counters(sock, cfd);
		tr_ctl_rx_init(rx);
		if (tr_ctl_rx_wait(sock, rx, &m, 5000) != 1)
			return die("no answer");
		if (m.type == TR_CTL_WELCOME) {
			held++;
		} else if (m.type == TR_CTL_REPLY && m.u.reply.status == -EACCES) {
			if (!refused++)
				snprintf(first, sizeof(first), "%.*s", (int)m.u.reply.text_len,
					 m.u.reply.text);
			close(sock);
		} else {
			return die("unexpected answer");
		}
		while ((fd = tr_ctl_rx_take_fd(rx)) >= 0)
			close(fd);
	}
	printf("held %ld refused %ld%s%s\n", held, refused, first[0] ? ": " : "", first);
	fflush(stdout);
	for (;;)
		pause();
}

/* n connections that never block on a full backlog, held until killed. */
static int flood(const char *path, long n)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	long ok = 0;

	nofile_max();
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", path);
	for (long i = 0; i < n; i++) {
		int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0);

		if (fd < 0)
			return die("socket");
		if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0)
			ok++;
		else
			close(fd);
	}
	printf("connected %ld\n", ok);
	fflush(stdout);
	for (;;)
		pause();
}

int main(int argc, char **argv)
{
	struct tr_ctl_msg m;
	struct tr_ctl_rx *rx;
	uint8_t frame[64];
	int sock, n, fd;

	if (argc < 3)
		return die("usage: ctl-probe SOCKET garbage|partial|unsealed|refused|client|"
			   "idle|hello-only|monitor-noread|churn|pipeline|hold|flood|peerpid");
	if (!strcmp(argv[2], "hold") && argc > 3)
		return hold(argv[1], atol(argv[3]));
	if (!strcmp(argv[2], "flood") && argc > 3)
		return flood(argv[1], atol(argv[3]));
	if (!strcmp(argv[2], "churn") && argc > 3)
		return churn(argv[1], atol(argv[3]));
	sock = dial(argv[1]);
	if (sock < 0)
		return die("cannot connect");
	if (!strcmp(argv[2], "garbage")) {
		if (write(sock, "\xff\xff\xff\x7f garbage, not a frame", 26) != 26)
			return die("write");
		return expect_closed(sock);
	}
	if (!strcmp(argv[2], "partial")) {
		m = (struct tr_ctl_msg){ .type = TR_CTL_HELLO };
		m.u.hello.nplanes = 1;
		n = tr_ctl_encode(&m, frame, sizeof(frame));
		return write(sock, frame, (size_t)n / 2) == n / 2 ? 0 : die("write");
	}
	if (!strcmp(argv[2], "unsealed")) {
		if (!counters_fd(&fd, 0) || hello(sock) || send_counters(sock, fd))
			return die("cannot send");
		return expect_closed(sock);
	}
	if (!strcmp(argv[2], "refused")) {
		rx = calloc(1, sizeof(*rx));
		hello(sock); /* may fail: the daemon may have closed already */
		if (!rx || tr_ctl_rx_wait(sock, rx, &m, 5000) != 1 || m.type != TR_CTL_REPLY ||
		    m.u.reply.status != -EACCES)
			return die("not refused");
		printf("%.*s\n", (int)m.u.reply.text_len, m.u.reply.text);
		return 0;
	}
	if (!strcmp(argv[2], "idle") && argc > 3)
		return expect_closed_within(sock, atof(argv[3]));
	if (!strcmp(argv[2], "hello-only") && argc > 3)
		return hello(sock) ? die("cannot say hello")
				   : expect_closed_within(sock, atof(argv[3]));
	if (!strcmp(argv[2], "monitor-noread") && argc > 3)
		return monitor_noread(sock, atof(argv[3]));
	if (!strcmp(argv[2], "pipeline") && argc > 3)
		return pipeline(sock, atol(argv[3]));
	if (!strcmp(argv[2], "peerpid")) {
		struct ucred cr;
		socklen_t len = sizeof(cr);

		if (getsockopt(sock, SOL_SOCKET, SO_PEERCRED, &cr, &len))
			return die("SO_PEERCRED");
		printf("%d\n", (int)cr.pid);
		return 0;
	}
	if (!strcmp(argv[2], "readloop") && argc > 3)
		return readloop(sock, atol(argv[3]));
	if (!strcmp(argv[2], "client"))
		return client(sock, argc - 3, argv + 3);
	return die("unknown mode");
}
