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
 *   ctl-probe SOCKET readloop N
 *       a client that reads the table N times and prints the time per read
 *       (bench/daemon-notify runs it under strace -c: no syscall per read).
 * Exit 0 when what was expected happened; 1 with a message otherwise. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

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

static int hello(int fd)
{
	struct tr_ctl_msg m = { .type = TR_CTL_HELLO };

	m.u.hello.pid = (uint32_t)getpid();
	m.u.hello.rank = 0;
	m.u.hello.nplanes = 2;
	strcpy(m.u.hello.name, "ctl-probe");
	return tr_ctl_send(fd, &m, -1, 1000);
}

/* 0 when the daemon closes the connection within 5 s. */
static int expect_closed(int fd)
{
	struct pollfd pfd = { .fd = fd, .events = POLLIN };
	char buf[256];

	for (;;) {
		ssize_t n;

		if (poll(&pfd, 1, 5000) <= 0)
			return die("the daemon did not close the connection");
		n = read(fd, buf, sizeof(buf));
		if (n <= 0)
			return 0;
	}
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

static void follow(struct tr_ctl_counters *c, const struct tr_ctl_table *t, int stuck,
		   uint64_t *last)
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
	double secs = 3600;
	uint64_t last = 0;
	time_t end;

	for (int i = 0; i < argc; i++)
		stamp_changes |= !strcmp(argv[i], "--stamp");
	for (int i = 0; i + 1 < argc; i += 2) {
		if (!strcmp(argv[i], "--stuck"))
			stuck = atoi(argv[i + 1]);
		else if (!strcmp(argv[i], "--seconds"))
			secs = atof(argv[i + 1]);
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
	follow(c, t, stuck, &last);
	end = time(NULL) + (time_t)secs;
	while (time(NULL) < end) {
		int ret = tr_ctl_rx_wait(sock, rx, &m, 100);

		if (ret == -ETIMEDOUT)
			continue;
		if (ret != 1 || m.type != TR_CTL_NOTIFY)
			return die("the daemon went away");
		follow(c, t, stuck, &last);
	}
	return 0;
}

int main(int argc, char **argv)
{
	struct tr_ctl_msg m;
	struct tr_ctl_rx *rx;
	uint8_t frame[64];
	int sock, n, fd;

	if (argc < 3)
		return die("usage: ctl-probe SOCKET garbage|partial|unsealed|refused|client");
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
	if (!strcmp(argv[2], "readloop") && argc > 3)
		return readloop(sock, atol(argv[3]));
	if (!strcmp(argv[2], "client"))
		return client(sock, argc - 3, argv + 3);
	return die("unknown mode");
}
