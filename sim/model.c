/* The discrete-event model behind triad-sim (see model.h).  One clock, a
 * binary heap of events; per rank a CPU, a NIC (send and receive sides)
 * and the rank's own tr_copy engine; at the root the tr_bcast engine.
 * Engine actions become events; events become engine calls. */
#include "model.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define WIN_ID 1 /* the one window every rank exposes: the broadcast buffer */

enum ev_type {
	EV_MSG,	      /* a copy message arrived at rank */
	EV_WRITE_DONE, /* the RC acknowledgement of a WRITE reached its source */
	EV_RANK_DONE, /* the root's RANK_DONE arrived */
	EV_BORDER,    /* deleg: an ORDER arrived */
	EV_BREPORT,   /* deleg: a REPORT arrived */
	EV_BABORT,    /* deleg: an ABORT arrived */
};

struct ev {
	double t;
	uint64_t seq; /* ties: first scheduled, first handled */
	uint32_t rank;
	uint32_t from;
	uint8_t type;
	uint8_t msg;
	uint64_t chunk;
	struct tr_copy_hdr hdr;
	struct tr_bnode_order ord; /* EV_BORDER */
	uint16_t status;	   /* EV_BREPORT, EV_BABORT */
	uint32_t failed;
};

struct heap {
	struct ev *a;
	size_t n, cap;
	uint64_t seq;
};

struct rank {
	double cpu_free; /* its CPU is busy until then */
	double tx_free;	 /* its NIC's send side: WRITEs */
	double msg_free; /* ... control messages (the gap only) */
	uint32_t wr_to;	 /* the last WRITE's destination, and when it lands: */
	double wr_land;	 /* a message behind it on that QP cannot overtake it */
	struct sim_rx rx; /* its NIC's receive side */
	uint32_t peers;
	uint64_t ev; /* events handled and posts: o each */
	struct tr_copy eng;
};

/* One transfer the scheduler asked for: the copy request's cookie.  All
 * live ones are linked, so that a run that fails half-way frees them. */
struct xfer {
	uint32_t src, dst;
	uint64_t chunk;
	bool order_pending; /* deleg: its ORDER waits for the last WRITE */
	struct tr_bnode_act order;
	struct xfer *prev, *next;
};

/* A set of unordered rank pairs (open addressing), for the peer counts. */
struct pairs {
	uint64_t *key; /* lo << 32 | hi, + 1 so that 0 is empty */
	size_t cap, n;
};

struct sim {
	struct sim_net net;
	uint32_t nranks, root;
	uint64_t len;
	struct rank *rk;
	struct heap heap;
	struct pairs pairs;
	struct xfer *xfers; /* live transfers */
	sim_trace_fn trace;
	void *trace_arg;
	/* root */
	bool bcast;
	struct tr_bcast bc;
	struct tr_bcast_rank *bc_ranks;
	struct tr_bcast_act *bacts; /* the engine's output */
	unsigned bcap;
	struct tr_bnode_act *bnacts; /* deleg: the engines' output */
	struct tr_bcast_act *bq; /* actions waiting to be executed */
	size_t bq_head, bq_n, bq_cap;
	bool draining;
	/* deleg: every rank's engine */
	bool deleg;
	struct tr_bnode *bn;
	struct xfer *last_write; /* the WRITE an ORDER right after it follows */
	double copy_done; /* sim_copy: the request completed */
	struct sim_result *res;
	char *err;
	size_t errlen;
	int fail;
	double now; /* the clock: the event being handled */
};

static void fail(struct sim *s, int ret, const char *fmt, ...)
{
	va_list ap;

	if (s->fail)
		return;
	s->fail = ret;
	va_start(ap, fmt);
	vsnprintf(s->err, s->errlen, fmt, ap);
	va_end(ap);
}

/* ---- the event heap ------------------------------------------------------- */

static bool ev_before(const struct ev *a, const struct ev *b)
{
	return a->t < b->t || (a->t == b->t && a->seq < b->seq);
}

static struct ev *heap_push(struct sim *s, double t, enum ev_type type, uint32_t rank)
{
	struct heap *h = &s->heap;
	struct ev e = { .t = t, .seq = h->seq++, .type = (uint8_t)type, .rank = rank };
	size_t i;

	if (h->n == h->cap) {
		size_t cap = h->cap ? 2 * h->cap : 1024;
		struct ev *a = realloc(h->a, cap * sizeof(*a));

		if (!a) {
			fail(s, -ENOMEM, "no memory for %zu events", cap);
			return NULL;
		}
		h->a = a;
		h->cap = cap;
	}
	/* Sift up with a hole; the caller fills the payload of a[i]. */
	for (i = h->n++; i > 0 && ev_before(&e, &h->a[(i - 1) / 2]); i = (i - 1) / 2)
		h->a[i] = h->a[(i - 1) / 2];
	h->a[i] = e;
	return &h->a[i];
}

static void heap_pop(struct heap *h, struct ev *out)
{
	struct ev last;
	size_t i = 0;

	*out = h->a[0];
	last = h->a[--h->n];
	for (;;) {
		size_t c = 2 * i + 1;

		if (c >= h->n)
			break;
		if (c + 1 < h->n && ev_before(&h->a[c + 1], &h->a[c]))
			c++;
		if (!ev_before(&h->a[c], &last))
			break;
		h->a[i] = h->a[c];
		i = c;
	}
	if (h->n)
		h->a[i] = last;
}

/* ---- peers ---------------------------------------------------------------- */

static void pairs_add(struct sim *s, uint32_t a, uint32_t b)
{
	struct pairs *p = &s->pairs;
	uint64_t lo = a < b ? a : b, hi = a < b ? b : a;
	uint64_t key = (lo << 32 | hi) + 1;
	size_t i;

	if (2 * (p->n + 1) > p->cap) {
		size_t cap = p->cap ? 2 * p->cap : 1024;
		uint64_t *k = calloc(cap, sizeof(*k));

		if (!k) {
			fail(s, -ENOMEM, "no memory for %zu peer pairs", cap);
			return;
		}
		for (size_t j = 0; j < p->cap; j++) {
			if (!p->key[j])
				continue;
			for (i = (size_t)(p->key[j] * 0x9e3779b97f4a7c15ull) & (cap - 1); k[i];
			     i = (i + 1) & (cap - 1))
				;
			k[i] = p->key[j];
		}
		free(p->key);
		p->key = k;
		p->cap = cap;
	}
	for (i = (size_t)(key * 0x9e3779b97f4a7c15ull) & (p->cap - 1); p->key[i];
	     i = (i + 1) & (p->cap - 1))
		if (p->key[i] == key)
			return;
	p->key[i] = key;
	p->n++;
	s->rk[a].peers++;
	s->rk[b].peers++;
}

/* ---- links, CPUs, NICs ---------------------------------------------------- */

static uint64_t mix(uint64_t z)
{
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

double sim_link_lat(const struct sim_net *net, uint32_t a, uint32_t b)
{
	uint64_t lo = a < b ? a : b, hi = a < b ? b : a;

	switch (net->lat_model) {
	case SIM_LAT_RACKS:
		return lo / net->rack_size == hi / net->rack_size ? net->lat_us
								  : net->lat_spread * net->lat_us;
	case SIM_LAT_RANDOM: {
		/* A fixed draw per link: no N x N matrix to keep. */
		double u = (double)(mix(net->seed ^ mix(lo << 32 | hi)) >> 11) / 9007199254740992.0;

		return net->lat_us * (1.0 + u * (net->lat_spread - 1.0));
	}
	default:
		return net->lat_us;
	}
}

double sim_rx_take(struct sim_rx *rx, double now, double first, double len)
{
	size_t i, keep = 0;
	double at = first;

	for (i = 0; i < rx->n; i++)
		if (rx->v[i].e > now)
			rx->v[keep++] = rx->v[i];
	rx->n = keep;
	if (len <= 0)
		return first;
	for (i = 0; i < rx->n; i++) {
		if (at + len <= rx->v[i].s)
			break;
		if (rx->v[i].e > at)
			at = rx->v[i].e;
	}
	/* [at, at + len) goes before span i: joined to a neighbour it touches. */
	if (i > 0 && rx->v[i - 1].e == at) {
		rx->v[i - 1].e = at + len;
		if (i < rx->n && rx->v[i].s == at + len) {
			rx->v[i - 1].e = rx->v[i].e;
			memmove(&rx->v[i], &rx->v[i + 1], (rx->n - i - 1) * sizeof(*rx->v));
			rx->n--;
		}
		return at + len;
	}
	if (i < rx->n && rx->v[i].s == at + len) {
		rx->v[i].s = at;
		return at + len;
	}
	if (rx->n == rx->cap) {
		size_t cap = rx->cap ? 2 * rx->cap : 8;
		struct sim_rx_span *v = realloc(rx->v, cap * sizeof(*v));

		if (!v)
			return -1;
		rx->v = v;
		rx->cap = cap;
	}
	memmove(&rx->v[i + 1], &rx->v[i], (rx->n - i) * sizeof(*rx->v));
	rx->v[i] = (struct sim_rx_span){ at, at + len };
	rx->n++;
	return at + len;
}

static double xmit_time(const struct sim_net *net, uint64_t bytes)
{
	double t = net->bw > 0 ? (double)bytes / net->bw : 0;

	return t > net->gap_us ? t : net->gap_us;
}

/* Rank r's CPU takes an event that arrived at t: returns when it is
 * handled (o later, or once the CPU is free; a wake-up more if it slept). */
static double cpu_take(struct sim *s, uint32_t r, double t)
{
	struct rank *k = &s->rk[r];
	double spin = r == s->root ? s->net.root_spin_us : s->net.spin_us;
	double start = t > k->cpu_free ? t : k->cpu_free;

	if (s->net.wake_us > 0 && t - k->cpu_free > spin)
		start += s->net.wake_us;
	k->ev++;
	k->cpu_free = start + s->net.o_us;
	return k->cpu_free;
}

/* Rank from's CPU posts bytes to rank to: o of CPU, then the sender's NIC,
 * the link, the receiver's NIC.  Returns when the last byte is in.  A NIC
 * serves its QPs packet by packet, so a control message does not wait for
 * a bulk WRITE to end: it only keeps the gap to the message before it.
 * WRITEs take the NIC's bandwidth one after the other, at both ends. */
static double post(struct sim *s, uint32_t from, uint32_t to, uint64_t bytes, bool bulk)
{
	struct rank *f = &s->rk[from], *d = &s->rk[to];
	double t = f->cpu_free += s->net.o_us;

	f->ev++;
	double tx = xmit_time(&s->net, bytes);
	double *line = bulk ? &f->tx_free : &f->msg_free;
	double start = t > *line ? t : *line;
	double arrive = start + tx + sim_link_lat(&s->net, from, to);
	double in, land;

	*line = start + tx;
	pairs_add(s, from, to);
	if (!bulk)
		return f->wr_to == to && f->wr_land > arrive ? f->wr_land : arrive;
	in = s->net.bw > 0 ? (double)bytes / s->net.bw : 0;
	land = sim_rx_take(&d->rx, s->now, arrive - in, in);
	if (land < 0) {
		fail(s, -ENOMEM, "no memory for rank %u's receive side", to);
		land = arrive;
	}
	f->wr_to = to;
	f->wr_land = land;
	return land;
}

static void emit(struct sim *s, enum sim_trace_type type, double t, uint32_t src, uint32_t dst,
		 uint64_t chunk, uint64_t off, uint64_t len)
{
	struct sim_trace ev = { .type = type, .t = t, .src = src, .dst = dst, .chunk = chunk,
				.off = off, .len = len };

	if (s->trace)
		s->trace(s->trace_arg, &ev);
}

/* ---- the copy engines' actions --------------------------------------------- */

static void bcast_report(struct sim *s, struct xfer *x, enum triad_status st);
static void bn_write_done(struct sim *s, uint32_t r, struct xfer *x, enum triad_status st);

static void copy_exec(struct sim *s, uint32_t r, const struct tr_copy_act *a, int n)
{
	struct tr_copy *c = &s->rk[r].eng;

	if (n < 0) {
		fail(s, -EIO, "rank %u: copy engine refused an event (%d)", r, n);
		return;
	}
	for (int i = 0; i < n; i++, a++) {
		switch (a->type) {
		case TR_COPY_ACT_SEND: {
			double t = post(s, r, a->to, s->net.msg_bytes, false);
			struct ev *e = heap_push(s, t, EV_MSG, a->to);

			if (!e)
				return;
			e->from = r;
			e->msg = (uint8_t)a->msg;
			e->hdr = a->hdr;
			s->res->msgs++;
			break;
		}
		case TR_COPY_ACT_WRITE: {
			double t = post(s, r, a->to, a->len, true);
			struct ev *e;

			emit(s, SIM_TR_LANDED, t, r, a->to, a->chunk, a->dst_off, a->len);
			e = heap_push(s, t + sim_link_lat(&s->net, a->to, r), EV_WRITE_DONE, r);
			if (!e)
				return;
			e->chunk = a->chunk;
			e->hdr = a->hdr;
			s->res->writes++;
			break;
		}
		case TR_COPY_ACT_LOOKUP: {
			/* The descriptor cache answers at once (lib/core/win.c). */
			struct tr_copy_act acts[TR_COPY_ACTS];
			struct tr_copy_win w = { .size = s->len, .access = TRIAD_WIN_READ |
									   TRIAD_WIN_WRITE };

			copy_exec(s, r, acts,
				  tr_copy_desc(c, a->hdr.initiator, a->hdr.op_id, TRIAD_S_OK, &w,
					       acts, TR_COPY_ACTS));
			break;
		}
		case TR_COPY_ACT_COMPLETE:
			if (a->hdr.status != TRIAD_S_OK)
				fail(s, -EIO, "copy %u -> %u failed: status %u (leg %s)",
				     a->hdr.source, a->hdr.destination, a->hdr.status,
				     tr_copy_leg_str(a->hdr.leg));
			if (s->deleg)
				bn_write_done(s, r, a->req, (enum triad_status)a->hdr.status);
			else if (s->bcast)
				bcast_report(s, a->req, (enum triad_status)a->hdr.status);
			else
				s->copy_done = s->rk[r].cpu_free;
			break;
		default: /* LOCAL (S == D) and NOTIFY take no modelled time */
			break;
		}
		if (s->fail)
			return;
	}
}

static int win_cb(void *arg, uint32_t id, struct tr_copy_win *out)
{
	const struct sim *s = arg;

	if (id != WIN_ID)
		return -ENOENT;
	*out = (struct tr_copy_win){ .size = s->len, .access = TRIAD_WIN_READ | TRIAD_WIN_WRITE };
	return 0;
}

/* ---- the scheduler's actions ----------------------------------------------- */

static void bq_add(struct sim *s, const struct tr_bcast_act *a, int n)
{
	if (n < 0) {
		fail(s, -EIO, "broadcast engine refused an event (%d)", n);
		return;
	}
	if (n == 0)
		return;
	if (s->bq_n + (size_t)n > s->bq_cap) {
		size_t cap = 2 * (s->bq_n + (size_t)n);
		struct tr_bcast_act *q = malloc(cap * sizeof(*q));

		if (!q) {
			fail(s, -ENOMEM, "no memory for %zu broadcast actions", cap);
			return;
		}
		if (s->bq_n)
			memcpy(q, s->bq + s->bq_head, s->bq_n * sizeof(*q));
		free(s->bq);
		s->bq = q;
		s->bq_cap = cap;
		s->bq_head = 0;
	} else if (s->bq_head + s->bq_n + (size_t)n > s->bq_cap) {
		memmove(s->bq, s->bq + s->bq_head, s->bq_n * sizeof(*s->bq));
		s->bq_head = 0;
	}
	memcpy(s->bq + s->bq_head + s->bq_n, a, (size_t)n * sizeof(*a));
	s->bq_n += (size_t)n;
}

static void bcast_act(struct sim *s, const struct tr_bcast_act *a)
{
	uint32_t root = s->root;

	switch (a->type) {
	case TR_BCAST_ACT_COPY:
	case TR_BCAST_ACT_PUT: {
		/* lib/core/bcast.c: both become a copy with the root as initiator. */
		struct tr_copy_hdr order = { .source = a->src, .destination = a->dst,
					     .src_win = WIN_ID, .dst_win = WIN_ID,
					     .src_off = a->off, .dst_off = a->off, .len = a->len,
					     .mode = (uint8_t)s->net.mode };
		struct tr_copy_act acts[TR_COPY_ACTS];
		struct xfer *x = malloc(sizeof(*x));
		uint64_t op;

		if (!x) {
			fail(s, -ENOMEM, "no memory for a transfer");
			return;
		}
		*x = (struct xfer){ .src = a->src, .dst = a->dst, .chunk = a->chunk,
				    .next = s->xfers };
		if (s->xfers)
			s->xfers->prev = x;
		s->xfers = x;
		emit(s, SIM_TR_ORDER, s->rk[root].cpu_free, a->src, a->dst, a->chunk, a->off, a->len);
		copy_exec(s, root, acts,
			  tr_copy_request(&s->rk[root].eng, &order, x, TR_COPY_NO_DEADLINE, &op, acts,
					  TR_COPY_ACTS));
		break;
	}
	case TR_BCAST_ACT_RANK_DONE: {
		struct ev *e = heap_push(s, post(s, root, a->dst, s->net.msg_bytes, false), EV_RANK_DONE,
					 a->dst);

		if (e)
			e->from = root;
		s->res->msgs++;
		break;
	}
	case TR_BCAST_ACT_DONE:
		s->res->t_done = s->rk[root].cpu_free;
		s->res->status = a->status;
		emit(s, SIM_TR_DONE, s->res->t_done, root, root, 0, 0, 0);
		break;
	default:
		break;
	}
}

/* Executes the queued actions in order; actions they cause join the queue
 * (the engine's array is reused by every call: never executed from it). */
static void bq_drain(struct sim *s)
{
	if (s->draining)
		return;
	s->draining = true;
	while (s->bq_n && !s->fail) {
		struct tr_bcast_act a = s->bq[s->bq_head++];

		s->bq_n--;
		bcast_act(s, &a);
	}
	s->draining = false;
}

static void bcast_out(struct sim *s, int n)
{
	while (n >= 0 && !s->fail) {
		bq_add(s, s->bacts, n);
		if ((unsigned)n < s->bcap)
			break;
		n = tr_bcast_poll(&s->bc, s->bacts, s->bcap);
	}
	bq_drain(s);
}

static void xfer_free(struct sim *s, struct xfer *x)
{
	if (x->prev)
		x->prev->next = x->next;
	else
		s->xfers = x->next;
	if (x->next)
		x->next->prev = x->prev;
	free(x);
}

static void bcast_report(struct sim *s, struct xfer *x, enum triad_status st)
{
	emit(s, SIM_TR_REPORT, s->rk[s->root].cpu_free, x->src, x->dst, x->chunk, 0, 0);
	bcast_out(s, tr_bcast_xfer_done(&s->bc, x->src, x->dst, x->chunk, st, s->bacts, s->bcap));
	if (st == TRIAD_S_OK && s->res->status == TRIAD_S_OK) {
		if (x->src == s->root)
			s->res->puts++;
		else
			s->res->copies++;
	}
	xfer_free(s, x);
}

/* ---- the delegated broadcast: every rank's engine ---------------------------- */

static void xfer_free(struct sim *s, struct xfer *x);
static void bn_out(struct sim *s, uint32_t r, int n);

static struct xfer *xfer_new(struct sim *s, uint32_t src, uint32_t dst, uint64_t chunk)
{
	struct xfer *x = malloc(sizeof(*x));

	if (!x) {
		fail(s, -ENOMEM, "no memory for a transfer");
		return NULL;
	}
	*x = (struct xfer){ .src = src, .dst = dst, .chunk = chunk, .next = s->xfers };
	if (s->xfers)
		s->xfers->prev = x;
	s->xfers = x;
	return x;
}

static void bn_post_order(struct sim *s, uint32_t r, const struct tr_bnode_act *a)
{
	uint64_t bytes = s->net.msg_bytes + (a->ord.carried ? a->len : 0);
	double t = post(s, r, a->to, bytes, false);
	struct ev *e;

	emit(s, SIM_TR_ORDER, s->rk[r].cpu_free, r, a->to, a->k, a->off, a->len);
	if (a->ord.carried)
		emit(s, SIM_TR_LANDED, t, r, a->to, a->k, a->off, a->len);
	e = heap_push(s, t, EV_BORDER, a->to);
	if (!e)
		return;
	e->from = r;
	e->ord = a->ord;
	s->res->msgs++;
}

static void bn_exec(struct sim *s, uint32_t r, const struct tr_bnode_act *a, int n)
{
	for (int i = 0; i < n && !s->fail; i++, a++) {
		switch (a->type) {
		case TR_BNODE_ACT_WRITE: {
			/* A copy with this rank as initiator and source (transport-ack). */
			struct tr_copy_hdr order = { .source = r, .destination = a->to,
						     .src_win = WIN_ID, .dst_win = WIN_ID,
						     .src_off = a->off, .dst_off = a->off,
						     .len = a->len, .mode = TR_COPY_TRANSPORT_ACK };
			struct tr_copy_act acts[TR_COPY_ACTS];
			struct xfer *x = xfer_new(s, r, a->to, a->k);
			uint64_t op;

			if (!x)
				return;
			/* The copy engine posts at most copy_inflight WRITEs at once:
			 * past that the ORDER waits for the copy's end, so that it
			 * never overtakes the data. */
			x->order_pending = a->len > s->net.copy_chunk * s->net.copy_inflight;
			s->last_write = x;
			copy_exec(s, r, acts,
				  tr_copy_request(&s->rk[r].eng, &order, x, TR_COPY_NO_DEADLINE, &op,
						  acts, TR_COPY_ACTS));
			break;
		}
		case TR_BNODE_ACT_ORDER: {
			struct xfer *x = s->last_write;

			s->last_write = NULL;
			if (x && x->order_pending && x->dst == a->to && x->chunk == a->k) {
				x->order = *a;
				break;
			}
			bn_post_order(s, r, a);
			break;
		}
		case TR_BNODE_ACT_REPORT:
		case TR_BNODE_ACT_ABORT: {
			double t = post(s, r, a->to, s->net.msg_bytes, false);
			struct ev *e = heap_push(s, t, a->type == TR_BNODE_ACT_REPORT ? EV_BREPORT
										  : EV_BABORT,
						 a->to);

			if (!e)
				return;
			e->from = r;
			e->status = a->status;
			e->failed = a->failed;
			e->ord = a->ord;
			s->res->msgs++;
			break;
		}
		case TR_BNODE_ACT_RELEASE: {
			double t = s->rk[r].cpu_free;

			if (a->status != TRIAD_S_OK)
				fail(s, -EIO, "rank %u released with status %u", r, a->status);
			if (t > s->res->t_all)
				s->res->t_all = t;
			emit(s, SIM_TR_RANK_DONE, t, r, r, 0, 0, 0);
			break;
		}
		case TR_BNODE_ACT_DONE:
			s->res->t_done = s->rk[r].cpu_free;
			s->res->status = a->status;
			emit(s, SIM_TR_DONE, s->res->t_done, r, r, 0, 0, 0);
			break;
		default:
			break;
		}
	}
}

/* Executes what rank r's engine returned in s->bnacts, and what it has
 * waiting (ABORTs); the array is reused by nested calls: copied first. */
static void bn_out(struct sim *s, uint32_t r, int n)
{
	struct tr_bnode *b = &s->bn[r];

	for (;;) {
		if (n < 0) {
			fail(s, -EIO, "rank %u: broadcast engine refused an event (%d)", r, n);
			return;
		}
		struct tr_bnode_act acts[n > 0 ? n : 1];

		memcpy(acts, s->bnacts, (size_t)n * sizeof(*acts));
		bn_exec(s, r, acts, n);
		if (s->fail || !tr_bnode_pending(b))
			return;
		n = tr_bnode_poll(b, s->bnacts, s->bcap);
	}
}

static void bn_write_done(struct sim *s, uint32_t r, struct xfer *x, enum triad_status st)
{
	uint32_t to = x->dst;
	uint64_t k = x->chunk;

	emit(s, SIM_TR_REPORT, s->rk[r].cpu_free, r, to, k, 0, 0);
	if (x->order_pending)
		bn_post_order(s, r, &x->order);
	if (s->last_write == x)
		s->last_write = NULL;
	xfer_free(s, x);
	if (st == TRIAD_S_OK)
		s->res->copies++;
	bn_out(s, r, tr_bnode_write_done(&s->bn[r], to, k, st, s->bnacts, s->bcap));
}

static void bn_event(struct sim *s, const struct ev *e)
{
	struct tr_bnode *b = &s->bn[e->rank];
	int n;

	if (e->type == EV_BORDER)
		n = tr_bnode_on_order(b, e->from, &e->ord, s->bnacts, s->bcap);
	else if (e->type == EV_BREPORT)
		n = tr_bnode_on_report(b, e->from, (enum triad_status)e->status, e->failed,
				       &e->ord, s->bnacts, s->bcap);
	else
		n = tr_bnode_on_abort(b, e->from, (enum triad_status)e->status, e->failed,
				      &e->ord, s->bnacts, s->bcap);
	bn_out(s, e->rank, n);
}

/* ---- the clock -------------------------------------------------------------- */

static void bn_event(struct sim *s, const struct ev *e);

static void handle(struct sim *s, const struct ev *e)
{
	struct tr_copy_act acts[TR_COPY_ACTS];
	struct tr_copy *c = &s->rk[e->rank].eng;
	double t = cpu_take(s, e->rank, e->t);

	s->res->events++;
	switch (e->type) {
	case EV_MSG:
		copy_exec(s, e->rank, acts,
			  tr_copy_recv(c, (enum tr_copy_msg)e->msg, e->from, &e->hdr, NULL, 0, acts,
				       TR_COPY_ACTS));
		break;
	case EV_WRITE_DONE:
		copy_exec(s, e->rank, acts,
			  tr_copy_chunk_done(c, e->hdr.initiator, e->hdr.op_id, e->chunk,
					     TRIAD_S_OK, acts, TR_COPY_ACTS));
		break;
	case EV_BORDER:
	case EV_BREPORT:
	case EV_BABORT:
		bn_event(s, e);
		break;
	case EV_RANK_DONE:
		if (t > s->res->t_all)
			s->res->t_all = t;
		emit(s, SIM_TR_RANK_DONE, t, e->from, e->rank, 0, 0, 0);
		break;
	default:
		break;
	}
}

static void run(struct sim *s)
{
	struct ev e;

	while (s->heap.n && !s->fail) {
		heap_pop(&s->heap, &e);
		s->now = e.t;
		handle(s, &e);
	}
}

/* ---- set-up ------------------------------------------------------------------ */

static double lat_cb(void *arg, uint32_t a, uint32_t b)
{
	return sim_link_lat(arg, a, b);
}

static int net_check(const struct sim_net *n, char *err, size_t errlen)
{
	const char *bad = NULL;

	if (!(n->lat_us >= 0) || !(n->o_us >= 0) || !(n->gap_us >= 0) || !(n->wake_us >= 0) ||
	    !(n->spin_us >= 0) || !(n->root_spin_us >= 0) || isnan(n->bw) || isinf(n->lat_us))
		bad = "latency, overhead, gap, wake and spin must be >= 0 and finite";
	else if ((unsigned)n->lat_model >= SIM_LAT_NMODELS)
		bad = "unknown latency model";
	else if (!(n->lat_spread >= 1) || isinf(n->lat_spread))
		bad = "the latency spread must be >= 1";
	else if (n->lat_model == SIM_LAT_RACKS && n->rack_size == 0)
		bad = "the rack size must be >= 1";
	else if (n->copy_chunk == 0 || n->copy_inflight == 0 ||
		 n->copy_inflight > TR_COPY_MAX_INFLIGHT)
		bad = "copy chunk must be >= 1 and copy inflight 1..32";
	else if ((unsigned)n->mode >= TR_COPY_NMODES)
		bad = "unknown copy mode";
	if (bad)
		snprintf(err, errlen, "%s", bad);
	return bad ? -EINVAL : 0;
}

void sim_net_default(struct sim_net *net)
{
	*net = (struct sim_net){
		.lat_us = 1.5,
		.lat_model = SIM_LAT_EQUAL,
		.lat_spread = 1,
		.rack_size = 64,
		.seed = 1,
		.o_us = 0.5,
		.gap_us = 0.1,
		.bw = 12500,
		.spin_us = 100,	     /* TRIAD_BG_SPIN_US */
		.root_spin_us = 200, /* TRIAD_SPIN_US */
		.msg_bytes = 128,
		.copy_chunk = 1u << 20, /* TRIAD_CHUNK_SIZE */
		.copy_inflight = 16,
		.mode = TR_COPY_TRANSPORT_ACK,
	};
}

/* Table sizes: the root initiates every transfer in flight; a source
 * serves at most fanout x window of them at once. */
static int ranks_init(struct sim *s, uint32_t iops_root, uint32_t iops_other, uint32_t sops)
{
	s->rk = calloc(s->nranks, sizeof(*s->rk));
	if (!s->rk)
		return -ENOMEM;
	for (uint32_t r = 0; r < s->nranks; r++) {
		/* Every rank but the calling root has been idle for long: asleep
		 * (when wake-ups cost anything). */
		if (r != s->root)
			s->rk[r].cpu_free = -1e300;
		struct tr_copy_cfg cfg = {
			.rank = r,
			.nranks = s->nranks,
			.chunk = s->net.copy_chunk,
			.inflight = s->net.copy_inflight,
			.niops = r == s->root ? iops_root : iops_other,
			.nsops = sops,
			.win = win_cb,
			.win_arg = s,
		};

		cfg.iops = calloc(cfg.niops, sizeof(*cfg.iops));
		cfg.sops = calloc(cfg.nsops, sizeof(*cfg.sops));
		if (!cfg.iops || !cfg.sops || tr_copy_init(&s->rk[r].eng, &cfg)) {
			free(cfg.iops);
			free(cfg.sops);
			return -ENOMEM;
		}
	}
	return 0;
}

static void sim_free(struct sim *s)
{
	for (uint32_t r = 0; s->rk && r < s->nranks; r++) {
		free(s->rk[r].rx.v);
		free(s->rk[r].eng.cfg.iops);
		free(s->rk[r].eng.cfg.sops);
	}
	while (s->xfers)
		xfer_free(s, s->xfers);
	free(s->rk);
	free(s->heap.a);
	free(s->pairs.key);
	free(s->bc_ranks);
	free(s->bacts);
	free(s->bq);
	free(s->bn);
	free(s->bnacts);
}

static void peer_stats(struct sim *s)
{
	uint64_t sum = 0;

	s->res->root_peers = s->rk[s->root].peers;
	s->res->root_events = s->rk[s->root].ev;
	for (uint32_t r = 0; r < s->nranks; r++)
		if (r != s->root && s->rk[r].ev > s->res->max_events)
			s->res->max_events = s->rk[r].ev;
	for (uint32_t r = 0; r < s->nranks; r++) {
		if (r == s->root)
			continue;
		sum += s->rk[r].peers;
		if (s->rk[r].peers > s->res->max_peers)
			s->res->max_peers = s->rk[r].peers;
	}
	s->res->avg_peers = s->nranks > 1 ? (double)sum / (s->nranks - 1) : 0;
}

/* The delegated broadcast: every rank's tr_bnode and tr_copy engines. */
static int sim_deleg(struct sim *s, const struct sim_bcast_cfg *cfg)
{
	struct sim_result *res = s->res;
	struct tr_bnode_cfg bcfg = {
		.nranks = cfg->nranks,
		.root = cfg->root,
		.len = cfg->len,
		.shape = cfg->shape,
		.chunk = cfg->chunk,
		.window = cfg->window,
		.max_kids = cfg->max_kids,
		.inline_max = cfg->inline_max ? cfg->inline_max : TR_BNODE_INLINE_DEFAULT,
		.cost = { .lat_us = s->net.lat_us, .o_us = s->net.o_us, .gap_us = s->net.gap_us,
			  .bw = s->net.bw, .msg_bytes = s->net.msg_bytes },
		.lat = s->net.lat_model == SIM_LAT_EQUAL ? NULL : lat_cb,
		.lat_arg = &s->net,
	};
	uint32_t ops = TR_BNODE_MAX_KIDS + 4 * TR_BNODE_MAX_WINDOW + 8;
	int ret = 0;

	s->deleg = true;
	s->bn = calloc(cfg->nranks, sizeof(*s->bn));
	if (!s->bn || ranks_init(s, ops, ops, ops)) {
		ret = -ENOMEM;
		goto out;
	}
	for (uint32_t r = 0; r < cfg->nranks; r++) {
		bcfg.rank = r;
		if (tr_bnode_init(&s->bn[r], &bcfg)) {
			snprintf(s->err, s->errlen, "the broadcast engine refused the configuration");
			ret = -EINVAL;
			goto out;
		}
	}
	s->bcap = tr_bnode_acts_max(&s->bn[cfg->root]);
	s->bnacts = calloc(s->bcap, sizeof(*s->bnacts));
	if (!s->bnacts) {
		ret = -ENOMEM;
		goto out;
	}
	res->shape = (enum tr_bnode_shape)s->bn[cfg->root].shape;
	res->chunk = s->bn[cfg->root].cfg.chunk;
	bn_out(s, cfg->root, tr_bnode_start(&s->bn[cfg->root], s->bnacts, s->bcap));
	run(s);
	if (!s->fail && !tr_bnode_finished(&s->bn[cfg->root]))
		fail(s, -EIO, "the clock ran out of events before the broadcast was over");
	for (uint32_t r = 0; !s->fail && cfg->len && r < cfg->nranks; r++)
		if (!s->bn[r].released)
			fail(s, -EIO, "rank %u never released", r);
	if (!s->fail && res->status != TRIAD_S_OK)
		fail(s, -EIO, "the broadcast failed: status %u", res->status);
	if (!s->fail)
		peer_stats(s);
	if (s->fail)
		ret = s->fail;
out:
	if (ret == -ENOMEM && !s->fail)
		snprintf(s->err, s->errlen, "no memory for %u ranks", cfg->nranks);
	sim_free(s);
	return ret;
}

int sim_bcast(const struct sim_net *net, const struct sim_bcast_cfg *cfg, sim_trace_fn trace,
	      void *arg, struct sim_result *res, char *err, size_t errlen)
{
	struct sim s = { .net = *net, .nranks = cfg->nranks, .root = cfg->root, .len = cfg->len,
			 .trace = trace, .trace_arg = arg, .bcast = true, .res = res, .err = err,
			 .errlen = errlen };
	struct tr_bcast_cfg bcfg = {
		.nranks = cfg->nranks,
		.root = cfg->root,
		.len = cfg->len,
		.algo = cfg->algo,
		/* lib/core/bcast.c: the copy chunk, at most 1 MiB */
		.chunk = cfg->chunk ? cfg->chunk
				    : (net->copy_chunk < (1u << 20) ? net->copy_chunk : (1u << 20)),
		.fanout = cfg->fanout,
		.window = cfg->window,
	};
	uint32_t iops, sops;
	int ret;

	*res = (struct sim_result){ 0 };
	if ((ret = net_check(net, err, errlen)))
		return ret;
	if (cfg->nranks < 1 || cfg->root >= cfg->nranks) {
		snprintf(err, errlen, "need 1 <= ranks and root < ranks (%u, %u)", cfg->nranks,
			 cfg->root);
		return -EINVAL;
	}
	if (cfg->deleg)
		return sim_deleg(&s, cfg);
	s.bc_ranks = calloc(cfg->nranks, sizeof(*s.bc_ranks));
	bcfg.ranks = s.bc_ranks;
	if (!s.bc_ranks) {
		ret = -ENOMEM;
		goto out;
	}
	if (tr_bcast_init(&s.bc, &bcfg)) {
		snprintf(err, errlen, "the broadcast engine refused the configuration");
		ret = -EINVAL;
		goto out;
	}
	res->algo = tr_bcast_algo(&s.bc);
	s.bcap = tr_bcast_acts_max(&s.bc);
	s.bacts = calloc(s.bcap, sizeof(*s.bacts));
	iops = (uint32_t)((uint64_t)cfg->nranks * s.bc.cfg.window + 4);
	sops = s.bc.cfg.algo == TR_BCAST_PIPELINE ? s.bc.cfg.fanout * s.bc.cfg.window + 4 : 4;
	if (!s.bacts || ranks_init(&s, iops, 1, sops)) {
		ret = -ENOMEM;
		goto out;
	}
	bcast_out(&s, tr_bcast_start(&s.bc, s.bacts, s.bcap));
	run(&s);
	if (!s.fail && !tr_bcast_finished(&s.bc))
		fail(&s, -EIO, "the clock ran out of events before the broadcast was over");
	if (!s.fail && res->status != TRIAD_S_OK)
		fail(&s, -EIO, "the broadcast failed: status %u", res->status);
	if (!s.fail)
		peer_stats(&s);
	if (s.fail)
		ret = s.fail;
	else if (res->t_all < res->t_done)
		res->t_all = res->t_done;
out:
	if (ret == -ENOMEM && !s.fail)
		snprintf(err, errlen, "no memory for %u ranks", cfg->nranks);
	sim_free(&s);
	return ret;
}

int sim_copy(const struct sim_net *net, uint32_t nranks, uint32_t initiator, uint32_t source,
	     uint32_t destination, uint64_t len, double *t_us, char *err, size_t errlen)
{
	struct sim_result res = { 0 };
	struct sim s = { .net = *net, .nranks = nranks, .root = initiator, .len = len,
			 .res = &res, .err = err, .errlen = errlen };
	struct tr_copy_hdr order = { .source = source, .destination = destination,
				     .src_win = WIN_ID, .dst_win = WIN_ID, .len = len,
				     .mode = (uint8_t)net->mode };
	struct tr_copy_act acts[TR_COPY_ACTS];
	uint64_t op;
	int ret;

	if ((ret = net_check(net, err, errlen)))
		return ret;
	if (initiator >= nranks || source >= nranks || destination >= nranks) {
		snprintf(err, errlen, "ranks must be < %u", nranks);
		return -EINVAL;
	}
	s.copy_done = -1;
	if (ranks_init(&s, 4, 1, 4)) {
		snprintf(err, errlen, "no memory for %u ranks", nranks);
		sim_free(&s);
		return -ENOMEM;
	}
	copy_exec(&s, initiator, acts,
		  tr_copy_request(&s.rk[initiator].eng, &order, NULL, TR_COPY_NO_DEADLINE, &op, acts,
				  TR_COPY_ACTS));
	run(&s);
	if (!s.fail && s.copy_done < 0)
		fail(&s, -EIO, "the copy never completed");
	*t_us = s.copy_done;
	ret = s.fail;
	sim_free(&s);
	return ret;
}

double sim_lower_bound(const struct sim_net *net, uint32_t nranks, uint64_t len)
{
	double lmin = net->lat_us;
	unsigned depth = 0;
	double bw_t = net->bw > 0 ? (double)len / net->bw : 0;

	while ((1ull << depth) < nranks)
		depth++;
	return bw_t > depth * lmin ? bw_t : depth * lmin;
}
