/* readping: the machine's own price of code between two posts.
 *
 * An 8-byte RDMA READ at a time, as ib_read_lat does (rdma_cm, one RC QP,
 * post, poll the completion, again), with CALLS distinct small functions
 * called between two gets.  On real hardware a few hundred calls cost
 * a microsecond or less.  In the test VM (QEMU's software emulation) every
 * piece of guest code is translated, and a process that runs more distinct
 * code between its system calls finds the kernel's own code slower in them:
 * bench/run-doorbell runs this with 0 and 256 calls beside perftest, UCX
 * and triad, and bench/doorbell.so shows how the post's time moves.
 *
 * usage: readping --server ADDR [--port P]
 *        readping --client SRC DST [--port P] [--iters N] [--calls C]
 *   The server accepts one client on ADDR:P (default port 18600), offers a
 *   4 KiB buffer for READs and exits when the client disconnects.  The
 *   client binds SRC, runs 200 warm-up gets and N measured ones (default
 *   3000; 100 to 10000000), C calls between two gets (0 to 256; default
 *   0), and prints {"t_typical_us":MEDIAN,"calls":C} (MEDIAN: one get,
 *   post to completion, from CLOCK_MONOTONIC).
 * Exit status: 0, 1 when the fabric fails, 2 on a usage error. */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <infiniband/verbs.h>
#include <rdma/rdma_cma.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define BUF_LEN 4096
#define WARMUP 200
#define MAX_CALLS 256

/* MAX_CALLS functions that differ (by __COUNTER__), so that none is folded
 * into another, and none is inlined. */
#define FN(n)                                                                     \
	static __attribute__((noinline)) uint64_t fn_##n(uint64_t x)              \
	{                                                                         \
		return (x & 1) ? x * 3 + __COUNTER__ : x ^ (uint64_t)__COUNTER__; \
	}
#define TAB(n) fn_##n,
#define L0(m, p) m(p##0) m(p##1) m(p##2) m(p##3)
#define L1(m, p) L0(m, p##0) L0(m, p##1) L0(m, p##2) L0(m, p##3)
#define L2(m, p) L1(m, p##0) L1(m, p##1) L1(m, p##2) L1(m, p##3)
#define L3(m, p) L2(m, p##0) L2(m, p##1) L2(m, p##2) L2(m, p##3)
L3(FN, f)
static uint64_t (*const fns[MAX_CALLS])(uint64_t) = { L3(TAB, f) };

struct offer {
	uint64_t addr;
	uint32_t rkey;
};

static int usage(void)
{
	fprintf(stderr, "usage: readping --server ADDR [--port P]\n"
			"       readping --client SRC DST [--port P] [--iters N] [--calls C]\n");
	return 2;
}

static int fail(const char *what)
{
	fprintf(stderr, "readping: %s: %s\n", what, strerror(errno));
	return 1;
}

static int number(const char *s, long lo, long hi, long *v)
{
	char *end;

	errno = 0;
	*v = strtol(s, &end, 10);
	return !errno && end != s && !*end && *v >= lo && *v <= hi;
}

static int address(const char *s, long port, struct sockaddr_in *sa)
{
	memset(sa, 0, sizeof(*sa));
	sa->sin_family = AF_INET;
	sa->sin_port = htons((uint16_t)port);
	return inet_pton(AF_INET, s, &sa->sin_addr) == 1;
}

/* The next event on ch, which must be of type want (acked here, except
 * that its private data is copied to out when out is given). */
static int expect(struct rdma_event_channel *ch, enum rdma_cm_event_type want,
		  struct rdma_cm_id **id, struct offer *out)
{
	struct rdma_cm_event *ev;

	if (rdma_get_cm_event(ch, &ev))
		return fail("rdma_get_cm_event");
	if (ev->event != want) {
		fprintf(stderr, "readping: got %s, waiting for %s (status %d)\n",
			rdma_event_str(ev->event), rdma_event_str(want), ev->status);
		rdma_ack_cm_event(ev);
		return 1;
	}
	if (id)
		*id = ev->id;
	if (out) {
		if (ev->param.conn.private_data_len < sizeof(*out)) {
			fprintf(stderr, "readping: the server offered no buffer\n");
			rdma_ack_cm_event(ev);
			return 1;
		}
		memcpy(out, ev->param.conn.private_data, sizeof(*out));
	}
	rdma_ack_cm_event(ev);
	return 0;
}

/* One CQ, one RC QP on id's device: as small as ib_read_lat's. */
static struct ibv_mr *setup(struct rdma_cm_id *id, void *buf)
{
	struct ibv_pd *pd = ibv_alloc_pd(id->verbs);
	struct ibv_cq *cq = pd ? ibv_create_cq(id->verbs, 16, NULL, NULL, 0) : NULL;
	struct ibv_qp_init_attr attr = {
		.send_cq = cq,
		.recv_cq = cq,
		.qp_type = IBV_QPT_RC,
		.cap = { .max_send_wr = 4, .max_recv_wr = 1, .max_send_sge = 1, .max_recv_sge = 1 },
	};

	if (!cq || rdma_create_qp(id, pd, &attr))
		return NULL;
	return ibv_reg_mr(pd, buf, BUF_LEN,
			  IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_WRITE);
}

static int serve(struct rdma_event_channel *ch, struct rdma_cm_id *listen_id,
		 const struct sockaddr_in *sa, void *buf)
{
	struct rdma_conn_param cp = { .responder_resources = 1, .initiator_depth = 1 };
	struct rdma_cm_id *id;
	struct ibv_mr *mr;
	struct offer o;

	if (rdma_bind_addr(listen_id, (struct sockaddr *)sa) || rdma_listen(listen_id, 1))
		return fail("rdma_bind_addr/rdma_listen");
	if (expect(ch, RDMA_CM_EVENT_CONNECT_REQUEST, &id, NULL))
		return 1;
	mr = setup(id, buf);
	if (!mr)
		return fail("the QP or the buffer");
	o = (struct offer){ (uintptr_t)buf, mr->rkey };
	cp.private_data = &o;
	cp.private_data_len = sizeof(o);
	if (rdma_accept(id, &cp))
		return fail("rdma_accept");
	if (expect(ch, RDMA_CM_EVENT_ESTABLISHED, NULL, NULL) ||
	    expect(ch, RDMA_CM_EVENT_DISCONNECTED, NULL, NULL))
		return 1;
	return 0;
}

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

static int ping(struct rdma_event_channel *ch, struct rdma_cm_id *id, struct sockaddr_in *src,
		const struct sockaddr_in *dst, void *buf, long iters, long calls)
{
	struct rdma_conn_param cp = { .responder_resources = 1, .initiator_depth = 1,
				      .retry_count = 7 };
	uint64_t *t = calloc((size_t)iters, sizeof(*t));
	volatile uint64_t sink = 0; /* keeps the calls */
	struct ibv_mr *mr;
	struct offer o;

	if (!t)
		return fail("calloc");
	src->sin_port = 0;
	/* expect() says what went wrong itself; fail() adds errno to a call's. */
	if (rdma_resolve_addr(id, (struct sockaddr *)src, (struct sockaddr *)dst, 2000))
		return fail("rdma_resolve_addr");
	if (expect(ch, RDMA_CM_EVENT_ADDR_RESOLVED, NULL, NULL))
		return 1;
	if (rdma_resolve_route(id, 2000))
		return fail("rdma_resolve_route");
	if (expect(ch, RDMA_CM_EVENT_ROUTE_RESOLVED, NULL, NULL))
		return 1;
	mr = setup(id, buf);
	if (!mr)
		return fail("the QP or the buffer");
	if (rdma_connect(id, &cp))
		return fail("rdma_connect");
	if (expect(ch, RDMA_CM_EVENT_ESTABLISHED, NULL, &o))
		return 1;
	for (long i = -WARMUP; i < iters; i++) {
		struct ibv_sge sge = { (uintptr_t)buf, 8, mr->lkey };
		struct ibv_send_wr wr = { .sg_list = &sge, .num_sge = 1,
					  .opcode = IBV_WR_RDMA_READ,
					  .send_flags = IBV_SEND_SIGNALED,
					  .wr.rdma = { o.addr, o.rkey } },
				   *bad;
		struct ibv_wc wc;
		uint64_t t0 = now_ns();
		int n, ret = ibv_post_send(id->qp, &wr, &bad);

		if (ret) {
			errno = ret;
			return fail("ibv_post_send");
		}
		while ((n = ibv_poll_cq(id->qp->send_cq, 1, &wc)) == 0)
			;
		if (n < 0 || wc.status != IBV_WC_SUCCESS) {
			fprintf(stderr, "readping: the READ failed: %s\n",
				n < 0 ? "ibv_poll_cq" : ibv_wc_status_str(wc.status));
			return 1;
		}
		if (i >= 0)
			t[i] = now_ns() - t0;
		for (long k = 0; k < calls; k++)
			sink = fns[k](sink);
	}
	qsort(t, (size_t)iters, sizeof(*t), cmp_u64);
	printf("{\"t_typical_us\":%.2f,\"calls\":%ld}\n", (double)t[iters / 2] / 1e3, calls);
	free(t);
	rdma_disconnect(id);
	return 0;
}

int main(int argc, char **argv)
{
	long port = 18600, iters = 3000, calls = 0;
	const char *a = NULL, *b = NULL;
	struct sockaddr_in sa, da;
	struct rdma_event_channel *ch;
	struct rdma_cm_id *id;
	int server = -1, i;
	void *buf;

	for (i = 1; i < argc; i++) {
		const char *o = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;

		if (!strcmp(o, "--server") && v) {
			server = 1, a = v, i++;
		} else if (!strcmp(o, "--client") && v && i + 2 < argc) {
			server = 0, a = v, b = argv[i + 2], i += 2;
		} else if (!strcmp(o, "--port") && v && number(v, 1, 65535, &port)) {
			i++;
		} else if (!strcmp(o, "--iters") && v && number(v, 100, 10000000, &iters)) {
			i++;
		} else if (!strcmp(o, "--calls") && v && number(v, 0, MAX_CALLS, &calls)) {
			i++;
		} else {
			fprintf(stderr, "readping: bad or incomplete argument '%s'\n", o);
			return usage();
		}
	}
	if (server < 0 || !address(a, port, &sa) || (b && !address(b, port, &da)))
		return usage();
	buf = aligned_alloc(BUF_LEN, BUF_LEN);
	ch = rdma_create_event_channel();
	if (!buf || !ch || rdma_create_id(ch, &id, NULL, RDMA_PS_TCP))
		return fail("set-up");
	memset(buf, 0x5a, BUF_LEN);
	return server ? serve(ch, id, &sa, buf) : ping(ch, id, &sa, &da, buf, iters, calls);
}
