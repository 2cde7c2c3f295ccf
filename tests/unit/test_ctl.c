/* Unit tests for lib/ctl: the triadd protocol's codec (round trips and
 * rejects), frames and descriptors over a socketpair, the policy table's
 * seqlock (including a reader racing a writer thread), drain settling and
 * the debounced health. */
#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "ctl/health.h"
#include "ctl/io.h"
#include "ctl/msg.h"
#include "ctl/table.h"

static int roundtrip(const struct tr_ctl_msg *in, struct tr_ctl_msg *out, uint8_t *buf)
{
	int n = tr_ctl_encode(in, buf, TR_CTL_MAX_FRAME);

	assert_true(n >= TR_CTL_HDR);
	assert_int_equal(tr_ctl_frame_len(buf, (size_t)n), n);
	assert_int_equal(tr_ctl_decode(buf, (size_t)n, out), 0);
	assert_int_equal(out->type, in->type);
	return n;
}

static void test_codec_roundtrip(void **state)
{
	static uint8_t buf[TR_CTL_MAX_FRAME];
	struct tr_ctl_msg m = { .type = TR_CTL_HELLO }, o;
	static char big[TR_CTL_MAX_STR];

	(void)state;
	m.u.hello.pid = 4242;
	m.u.hello.rank = -1;
	m.u.hello.nplanes = 8;
	strcpy(m.u.hello.name, "triad-perf");
	roundtrip(&m, &o, buf);
	assert_int_equal(o.u.hello.pid, 4242);
	assert_int_equal(o.u.hello.rank, -1);
	assert_int_equal(o.u.hello.nplanes, 8);
	assert_string_equal(o.u.hello.name, "triad-perf");

	m = (struct tr_ctl_msg){ .type = TR_CTL_WELCOME };
	m.u.welcome.status = 0;
	m.u.welcome.client = 7;
	m.u.welcome.table_size = 1024;
	m.u.welcome.gen = 0x123456789abcull;
	roundtrip(&m, &o, buf);
	assert_int_equal(o.u.welcome.client, 7);
	assert_true(o.u.welcome.gen == 0x123456789abcull);

	m = (struct tr_ctl_msg){ .type = TR_CTL_CMD };
	m.u.cmd.op = TR_CTL_OP_DRAIN;
	m.u.cmd.flags = TR_CTL_F_WAIT | TR_CTL_F_FORCE;
	m.u.cmd.timeout_ms = 5000;
	m.u.cmd.arg = "p1";
	m.u.cmd.arg_len = 2;
	assert_int_equal(roundtrip(&m, &o, buf), TR_CTL_HDR + 8 + 2 + 2);
	assert_int_equal(o.u.cmd.op, TR_CTL_OP_DRAIN);
	assert_int_equal(o.u.cmd.flags, TR_CTL_F_WAIT | TR_CTL_F_FORCE);
	assert_int_equal(o.u.cmd.timeout_ms, 5000);
	assert_int_equal(o.u.cmd.arg_len, 2);
	assert_memory_equal(o.u.cmd.arg, "p1", 2);

	/* The longest text there is fits a frame, one byte more does not. */
	memset(big, 'x', sizeof(big));
	m = (struct tr_ctl_msg){ .type = TR_CTL_REPLY };
	m.u.reply.status = -EBUSY;
	m.u.reply.code = TR_CTL_REFUSED;
	m.u.reply.text = big;
	m.u.reply.text_len = sizeof(big);
	roundtrip(&m, &o, buf);
	assert_int_equal(o.u.reply.status, -EBUSY);
	assert_int_equal(o.u.reply.text_len, sizeof(big));
	m.u.reply.text_len = sizeof(big) + 1;
	assert_int_equal(tr_ctl_encode(&m, buf, TR_CTL_MAX_FRAME), -EINVAL);

	m = (struct tr_ctl_msg){ .type = TR_CTL_EVENT };
	m.u.event.text = "plane p1 switched";
	m.u.event.text_len = 17;
	roundtrip(&m, &o, buf);
	assert_memory_equal(o.u.event.text, "plane p1 switched", 17);
}

static void test_encode_rejects(void **state)
{
	uint8_t buf[64];
	struct tr_ctl_msg m = { .type = TR_CTL_CMD };

	(void)state;
	m.u.cmd.op = TR_CTL_OP_MAX;
	assert_int_equal(tr_ctl_encode(&m, buf, sizeof(buf)), -EINVAL);
	m.u.cmd.op = TR_CTL_OP_STATUS;
	m.u.cmd.flags = 0x80;
	assert_int_equal(tr_ctl_encode(&m, buf, sizeof(buf)), -EINVAL);
	m.u.cmd.flags = 0;
	m.u.cmd.arg = "a\0b";
	m.u.cmd.arg_len = 3;
	assert_int_equal(tr_ctl_encode(&m, buf, sizeof(buf)), -EINVAL);
	m.u.cmd.arg = "p0";
	m.u.cmd.arg_len = 2;
	assert_int_equal(tr_ctl_encode(&m, buf, 10), -EMSGSIZE);
	m.type = (enum tr_ctl_type)99;
	assert_int_equal(tr_ctl_encode(&m, buf, sizeof(buf)), -EINVAL);
	m = (struct tr_ctl_msg){ .type = TR_CTL_HELLO };
	m.u.hello.nplanes = 0;
	assert_int_equal(tr_ctl_encode(&m, buf, sizeof(buf)), -EINVAL);
}

/* A valid CMD frame, then each corruption of it. */
static void test_decode_rejects(void **state)
{
	struct tr_ctl_msg m = { .type = TR_CTL_CMD }, o;
	uint8_t buf[64], bad[64];
	int n;

	(void)state;
	m.u.cmd.op = TR_CTL_OP_STATUS;
	m.u.cmd.arg = "ab";
	m.u.cmd.arg_len = 2;
	n = tr_ctl_encode(&m, buf, sizeof(buf));
	assert_int_equal(n, 20);
	assert_int_equal(tr_ctl_frame_len(buf, 7), 0);
	assert_int_equal(tr_ctl_decode(buf, (size_t)n - 1, &o), -EPROTO); /* short */

#define CORRUPT(off, val, want)                                                \
	do {                                                                   \
		memcpy(bad, buf, (size_t)n);                                   \
		bad[off] = (uint8_t)(val);                                     \
		assert_int_equal(tr_ctl_decode(bad, (size_t)n, &o), want);     \
	} while (0)
	CORRUPT(0, 7, -EPROTO);		  /* length below the header */
	CORRUPT(4, 2, -EPROTO);		  /* version */
	CORRUPT(6, 0, -EBADMSG);	  /* type 0 */
	CORRUPT(6, TR_CTL_TYPE_MAX, -EBADMSG);
	CORRUPT(8, 0, -EBADMSG);	  /* op 0 */
	CORRUPT(8, TR_CTL_OP_MAX, -EBADMSG);
	CORRUPT(10, 0x10, -EBADMSG);	  /* unknown flag */
	CORRUPT(16, 3, -EBADMSG);	  /* string longer than the frame */
	CORRUPT(16, 1, -EPROTO);	  /* string shorter: trailing bytes */
	CORRUPT(18, 0, -EBADMSG);	  /* NUL inside the string */
	memcpy(bad, buf, (size_t)n);
	bad[2] = 1; /* 65556 bytes: above the largest frame */
	assert_int_equal(tr_ctl_frame_len(bad, (size_t)n), -EPROTO);

	/* A REPLY with a positive status or an unknown code. */
	m = (struct tr_ctl_msg){ .type = TR_CTL_REPLY };
	n = tr_ctl_encode(&m, buf, sizeof(buf));
	assert_true(n > 0);
	CORRUPT(8, 1, -EBADMSG);
	CORRUPT(12, TR_CTL_CODE_MAX, -EBADMSG);
	/* A HELLO with 9 planes, a name of 64 bytes. */
	m = (struct tr_ctl_msg){ .type = TR_CTL_HELLO };
	m.u.hello.nplanes = 1;
	n = tr_ctl_encode(&m, buf, sizeof(buf));
	CORRUPT(16, 9, -EBADMSG);
	CORRUPT(20, 64, -EBADMSG);
#undef CORRUPT
	assert_int_equal(tr_ctl_op_parse("drain"), TR_CTL_OP_DRAIN);
	assert_int_equal(tr_ctl_op_parse("drains"), -EINVAL);
	assert_string_equal(tr_ctl_op_str(TR_CTL_OP_FAIL), "fail");
	assert_null(tr_ctl_op_str(TR_CTL_OP_MAX));
}

/* Frames split across reads, several in one read, a descriptor with one. */
static void test_io_socketpair(void **state)
{
	struct tr_ctl_rx *rx = malloc(sizeof(*rx));
	struct tr_ctl_msg m = { .type = TR_CTL_NOTIFY }, o;
	uint8_t frame[64];
	struct stat st;
	int sv[2], n, fd;

	(void)state;
	assert_non_null(rx);
	tr_ctl_rx_init(rx);
	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
	assert_int_equal(tr_ctl_rx_read(sv[1], rx), -EAGAIN);
	m.u.notify.gen = 6;
	n = tr_ctl_encode(&m, frame, sizeof(frame));
	assert_int_equal(write(sv[0], frame, 5), 5);
	assert_int_equal(tr_ctl_rx_read(sv[1], rx), 5);
	assert_int_equal(tr_ctl_rx_next(rx, &o), 0);
	assert_int_equal(write(sv[0], frame + 5, (size_t)n - 5), n - 5);
	m.u.notify.gen = 8;
	assert_int_equal(tr_ctl_send(sv[0], &m, 0 /* stdin rides along */, 100), 0);
	assert_true(tr_ctl_rx_read(sv[1], rx) > 0);
	assert_int_equal(tr_ctl_rx_next(rx, &o), 1);
	assert_true(o.u.notify.gen == 6);
	assert_int_equal(tr_ctl_rx_next(rx, &o), 1);
	assert_true(o.u.notify.gen == 8);
	assert_int_equal(tr_ctl_rx_next(rx, &o), 0);
	fd = tr_ctl_rx_take_fd(rx);
	assert_true(fd > 2);
	assert_int_equal(fstat(fd, &st), 0);
	close(fd);
	assert_int_equal(tr_ctl_rx_take_fd(rx), -1);
	/* Garbage: the stream cannot be trusted any more. */
	assert_int_equal(write(sv[0], "GET / HTTP/1.0\r\n", 16), 16);
	assert_true(tr_ctl_rx_read(sv[1], rx) > 0);
	assert_int_equal(tr_ctl_rx_next(rx, &o), -EPROTO);
	close(sv[0]);
	tr_ctl_rx_init(rx);
	assert_int_equal(tr_ctl_rx_read(sv[1], rx), 0); /* EOF */
	close(sv[1]);
	tr_ctl_rx_reset(rx);
	free(rx);
}

/* The daemon's queue: what the socket does not take waits, in order, a
 * descriptor with its own frame; past the bound a message is refused
 * whole (the daemon drops that peer), and nothing ever waits. */
static void test_io_tx_queue(void **state)
{
	struct tr_ctl_rx *rx = malloc(sizeof(*rx));
	struct tr_ctl_msg m = { .type = TR_CTL_NOTIFY }, o;
	struct tr_ctl_tx tx;
	int sv[2], ret, sndbuf = 4096, fds = 0, fd_gen = -1;
	uint64_t sent = 0, got = 0;
	size_t before;

	(void)state;
	assert_non_null(rx);
	tr_ctl_rx_init(rx);
	tr_ctl_tx_init(&tx, 512);
	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
	assert_int_equal(setsockopt(sv[0], SOL_SOCKET, SO_SNDBUF, &sndbuf, sizeof(sndbuf)), 0);
	/* Until the socket is full, everything goes out at once. */
	do {
		m.u.notify.gen = ++sent;
		ret = tr_ctl_tx_send(sv[0], &tx, &m, -1);
	} while (ret == 0 && sent < 100000);
	assert_int_equal(ret, -EAGAIN);
	assert_true(tr_ctl_tx_queued(&tx) > 0);
	/* A descriptor waits with its frame. */
	m.u.notify.gen = ++sent;
	fd_gen = (int)sent;
	assert_int_equal(tr_ctl_tx_send(sv[0], &tx, &m, 0 /* stdin */), -EAGAIN);
	/* Up to the bound; past it nothing of the message is queued. */
	do {
		before = tr_ctl_tx_queued(&tx);
		m.u.notify.gen = ++sent;
		ret = tr_ctl_tx_send(sv[0], &tx, &m, -1);
	} while (ret == -EAGAIN);
	assert_int_equal(ret, -ENOBUFS);
	sent--; /* that one was refused */
	assert_int_equal(tr_ctl_tx_queued(&tx), before);
	assert_true(before <= 512);
	assert_int_equal(tr_ctl_tx_flush(sv[0], &tx), -EAGAIN);
	/* The reader drains; the queue follows, every frame once, in order. */
	while (got < sent) {
		ret = tr_ctl_rx_read(sv[1], rx);
		assert_true(ret > 0 || ret == -EAGAIN);
		while (tr_ctl_rx_next(rx, &o) == 1) {
			assert_int_equal(o.type, TR_CTL_NOTIFY);
			assert_true(o.u.notify.gen == ++got);
			if ((int)got == fd_gen) {
				int fd = tr_ctl_rx_take_fd(rx);

				assert_true(fd > 2);
				close(fd);
				fds++;
			}
		}
		ret = tr_ctl_tx_flush(sv[0], &tx);
		assert_true(ret == 0 || ret == -EAGAIN);
	}
	assert_int_equal(fds, 1);
	assert_int_equal(tr_ctl_rx_take_fd(rx), -1);
	assert_int_equal(tr_ctl_tx_flush(sv[0], &tx), 0);
	assert_int_equal(tr_ctl_tx_queued(&tx), 0);
	assert_null(tx.buf); /* an idle connection holds no buffer */
	/* A peer gone: the socket's error, not a wait. */
	close(sv[1]);
	m.u.notify.gen = 1;
	assert_int_equal(tr_ctl_tx_send(sv[0], &tx, &m, -1), -EPIPE);
	close(sv[0]);
	tr_ctl_tx_reset(&tx);
	tr_ctl_rx_reset(rx);
	free(rx);
}

static void test_table_read_write(void **state)
{
	struct tr_ctl_table *t = calloc(1, sizeof(*t));
	struct tr_ctl_policy p, q;
	uint64_t gen = 0;

	(void)state;
	assert_non_null(t);
	tr_ctl_policy_default(&p, 2);
	assert_string_equal(p.plane[1].name, "p1");
	tr_ctl_table_init(t, &p);
	assert_int_equal(tr_ctl_table_read(t, sizeof(*t), &q, &gen), 0);
	assert_true(gen == 2);
	assert_memory_equal(&p, &q, sizeof(p));
	p.plane[1].state = TR_CTL_SWITCH_PENDING;
	p.plane[1].reason = TR_CTL_R_ADMIN;
	tr_ctl_table_write(t, &p);
	assert_true(tr_ctl_table_gen(t) == 4);
	assert_int_equal(tr_ctl_table_read(t, sizeof(*t), &q, &gen), 0);
	assert_true(gen == 4);
	assert_int_equal(q.plane[1].state, TR_CTL_SWITCH_PENDING);
	/* A mapping too short, or not a table. */
	assert_int_equal(tr_ctl_table_read(t, sizeof(*t) - 1, &q, &gen), -EPROTO);
	t->version = TR_CTL_TABLE_VERSION - 1;
	assert_int_equal(tr_ctl_table_read(t, sizeof(*t), &q, &gen), -EPROTO);
	t->version = TR_CTL_TABLE_VERSION;
	/* A writer that died mid-write: odd for good. */
	atomic_store(&t->gen, 5);
	assert_int_equal(tr_ctl_table_read(t, sizeof(*t), &q, &gen), -EAGAIN);
	/* Content out of range is refused, not handed on. */
	p.plane[0].state = TR_CTL_PSTATE_MAX;
	atomic_store(&t->gen, 4);
	tr_ctl_table_write(t, &p);
	assert_int_equal(tr_ctl_table_read(t, sizeof(*t), &q, &gen), -EBADMSG);
	/* A plane's weight: 0 .. TR_CTL_WEIGHT_MAX; degraded is a reason. */
	p.plane[0].state = TR_CTL_SWITCH_PENDING;
	p.plane[0].reason = TR_CTL_R_DEGRADED;
	p.plane[0].weight = TR_CTL_WEIGHT_MAX;
	tr_ctl_table_write(t, &p);
	assert_int_equal(tr_ctl_table_read(t, sizeof(*t), &q, &gen), 0);
	assert_int_equal(q.plane[0].weight, TR_CTL_WEIGHT_MAX);
	p.plane[0].weight = TR_CTL_WEIGHT_MAX + 1;
	tr_ctl_table_write(t, &p);
	assert_int_equal(tr_ctl_table_read(t, sizeof(*t), &q, &gen), -EBADMSG);
	p.plane[0].weight = 0;
	p.plane[0].reason = TR_CTL_REASON_MAX;
	tr_ctl_table_write(t, &p);
	assert_int_equal(tr_ctl_table_read(t, sizeof(*t), &q, &gen), -EBADMSG);
	free(t);
}

/* A writer thread keeps writing policies whose fields all carry its
 * counter; every snapshot a reader takes must be one of them, whole. */
struct race {
	struct tr_ctl_table *t;
	atomic_int stop;
};

static void policy_of(struct tr_ctl_policy *p, uint32_t k)
{
	tr_ctl_policy_default(p, 8);
	p->nknobs = 2;
	snprintf(p->knob[0].name, sizeof(p->knob[0].name), "TRIAD_ADAPTIVE_T");
	snprintf(p->knob[0].value, sizeof(p->knob[0].value), "%u", k);
	snprintf(p->knob[1].name, sizeof(p->knob[1].name), "TRIAD_ADAPTIVE_ALPHA");
	snprintf(p->knob[1].value, sizeof(p->knob[1].value), "%u", k + 1);
	for (int i = 0; i < 8; i++)
		p->plane[i].state = k % TR_CTL_PSTATE_MAX;
}

static void *writer(void *arg)
{
	struct race *r = arg;
	struct tr_ctl_policy p;

	for (uint32_t k = 1; !atomic_load(&r->stop); k++) {
		policy_of(&p, k);
		tr_ctl_table_write(r->t, &p);
	}
	return NULL;
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static void test_table_race(void **state)
{
	struct race r = { .t = calloc(1, sizeof(struct tr_ctl_table)) };
	struct tr_ctl_policy p, want;
	pthread_t th;
	uint64_t last_gen = 0;
	int good = 0, changes = 0;

	(void)state;
	policy_of(&p, 0);
	tr_ctl_table_init(r.t, &p);
	assert_int_equal(pthread_create(&th, NULL, writer, &r), 0);
	/* Read until the writer has moved on many times under the reader's
	 * feet, or for 3 s at most: where the threads are serialised
	 * (valgrind), the writer runs only in its own time slices. */
	for (double t0 = now_s(); (changes < 50 || good < 10000) && now_s() - t0 < 3.0;) {
		uint64_t gen;

		if (tr_ctl_table_read(r.t, sizeof(*r.t), &p, &gen))
			continue;
		policy_of(&want, (uint32_t)strtoul(p.knob[0].value, NULL, 10));
		assert_memory_equal(&p, &want, sizeof(p));
		assert_true((gen & 1) == 0);
		changes += gen != last_gen;
		last_gen = gen;
		good++;
	}
	atomic_store(&r.stop, 1);
	pthread_join(th, NULL);
	assert_true(good > 0);
	assert_true(changes >= 2); /* the reader saw the writer move on */
	free(r.t);
}

static void test_settle(void **state)
{
	struct tr_ctl_counters *a = calloc(1, sizeof(*a)), *b = calloc(1, sizeof(*b));
	struct tr_ctl_creg cl[2] = { { a, 0 }, { b, 0 } };
	uint64_t pend[TRIAD_MAX_PLANES] = { 0 };
	struct tr_ctl_policy p;

	(void)state;
	tr_ctl_counters_init(a, 2);
	tr_ctl_counters_init(b, 1); /* a client with one plane only */
	assert_int_equal(tr_ctl_counters_check(a, sizeof(*a), &cl[0].nplanes), 0);
	assert_int_equal(cl[0].nplanes, 2);
	assert_int_equal(tr_ctl_counters_check(b, sizeof(*b), &cl[1].nplanes), 0);
	assert_int_equal(cl[1].nplanes, 1);
	assert_int_equal(tr_ctl_counters_check(a, sizeof(*a) - 8, &cl[0].nplanes), -EPROTO);
	a->nplanes = TRIAD_MAX_PLANES + 1;
	assert_int_equal(tr_ctl_counters_check(a, sizeof(*a), &cl[0].nplanes), -EPROTO);
	assert_int_equal(cl[0].nplanes, 2); /* only set on success */
	/* What b says after the check is not looked at: its copy is. */
	b->nplanes = 0xffffffffu;
	tr_ctl_policy_default(&p, 2);
	assert_int_equal(tr_ctl_other_live(&p, 1), 1);
	p.plane[1].state = TR_CTL_SWITCH_PENDING;
	p.plane[1].reason = TR_CTL_R_ADMIN;
	assert_int_equal(tr_ctl_other_live(&p, 0), 0); /* p0 is the last live plane */
	pend[1] = 10;
	/* Not applied yet: pending. */
	assert_int_equal(tr_ctl_settle(&p, pend, cl, 2), 0);
	assert_int_equal(tr_ctl_left(&p, pend, cl, 2), 0);
	atomic_store(&a->applied_gen, 10);
	atomic_store(&a->plane[1].switched, 1);
	atomic_store(&a->plane[1].inflight, 3);
	assert_int_equal(tr_ctl_settle(&p, pend, cl, 2), 0); /* still in flight */
	assert_int_equal(tr_ctl_left(&p, pend, cl, 2), 1u << 1); /* but left */
	atomic_store(&a->plane[1].inflight, 0);
	/* b has no plane 1: it does not hold the drain back. */
	assert_int_equal(tr_ctl_settle(&p, pend, cl, 2), 1u << 1);
	assert_int_equal(p.plane[1].state, TR_CTL_SWITCHED);
	assert_int_equal(tr_ctl_settle(&p, pend, cl, 2), 0);
	/* Restore: pending until a is back on it. */
	p.plane[1].state = TR_CTL_RESTORE_PENDING;
	pend[1] = 12;
	atomic_store(&a->applied_gen, 12);
	assert_int_equal(tr_ctl_settle(&p, pend, cl, 2), 0);
	atomic_store(&a->plane[1].switched, 0);
	assert_int_equal(tr_ctl_settle(&p, pend, cl, 2), 1u << 1);
	assert_int_equal(p.plane[1].state, TR_CTL_NORMAL);
	assert_int_equal(p.plane[1].reason, TR_CTL_R_NONE);
	/* No clients at all: settles at once. */
	p.plane[0].state = TR_CTL_SWITCH_PENDING;
	assert_int_equal(tr_ctl_settle(&p, pend, NULL, 0), 1u << 0);
	assert_string_equal(tr_ctl_pstate_str(TR_CTL_RESTORE_PENDING), "restore_pending");
	assert_string_equal(tr_ctl_reason_str(TR_CTL_R_FAULT), "fault");
	assert_string_equal(tr_ctl_reason_str(TR_CTL_R_DEGRADED), "degraded");
	free(a);
	free(b);
}

#define MS 1000000ull

static void test_health(void **state)
{
	struct tr_ctl_health h;

	(void)state;
	tr_ctl_health_init(&h, 200, 1000, 0);
	assert_int_equal(h.healthy, 1);
	assert_true(tr_ctl_health_deadline(&h) == 0);
	assert_int_equal(tr_ctl_health_observe(&h, 0, 10 * MS), 0);
	assert_true(tr_ctl_health_deadline(&h) == 210 * MS);
	assert_int_equal(tr_ctl_health_tick(&h, 209 * MS), 0);
	assert_int_equal(tr_ctl_health_observe(&h, 0, 100 * MS), 0); /* a repeat */
	assert_int_equal(tr_ctl_health_tick(&h, 210 * MS), 1);
	assert_int_equal(h.healthy, 0);
	/* A flap shorter than the up-debounce changes nothing. */
	assert_int_equal(tr_ctl_health_observe(&h, 1, 300 * MS), 0);
	assert_int_equal(tr_ctl_health_observe(&h, 0, 900 * MS), 0);
	assert_int_equal(tr_ctl_health_tick(&h, 5000 * MS), 0);
	assert_int_equal(h.healthy, 0);
	assert_int_equal(tr_ctl_health_observe(&h, 1, 6000 * MS), 0);
	assert_int_equal(tr_ctl_health_tick(&h, 6999 * MS), 0);
	assert_int_equal(tr_ctl_health_tick(&h, 7000 * MS), 1);
	assert_int_equal(h.healthy, 1);
	assert_true(h.changes == 2);
	/* No debounce: at once. */
	tr_ctl_health_init(&h, 0, 0, 0);
	assert_int_equal(tr_ctl_health_observe(&h, 0, 5), 1);
	assert_int_equal(tr_ctl_health_observe(&h, 1, 6), 1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_codec_roundtrip), cmocka_unit_test(test_encode_rejects),
		cmocka_unit_test(test_decode_rejects),	cmocka_unit_test(test_io_socketpair),
		cmocka_unit_test(test_io_tx_queue),
		cmocka_unit_test(test_table_read_write), cmocka_unit_test(test_table_race),
		cmocka_unit_test(test_settle),		cmocka_unit_test(test_health),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
