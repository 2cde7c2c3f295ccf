/* failover and drain: a stream from rank 0 to rank 1 while the plane it
 * uses goes away and comes back, with the timeline of what the library did.
 *
 * The stream: --window operations outstanding, reaped in order, alternating
 * an unpinned put of --size bytes (put j into slot j mod the window's slots
 * of rank 1's fault window, a pattern of j) and an active message carrying
 * sequence number m.  Rank 1's handler counts every number once (lost,
 * duplicated, and reordered: a number below one seen before), and at the end
 * checks that every put slot holds the last put written to it.
 *
 *  failover  after --fault-at ms rank 0 runs `$TRIAD_FABRIC_CTL VERB NODE
 *            PLANE` (fabric-ctl; VERB down or cut per --fault, NODE
 *            --fault-node, PLANE the one the stream's puts took until then);
 *            --up-after ms after the traffic moved to another plane, `up` or
 *            `heal`;
 *  drain     after --fault-at ms triad_plane_drain(PLANE), and --up-after ms
 *            after it reported DRAINED, triad_plane_restore(PLANE).
 *
 * Rank 0 samples, every millisecond of the stream, triad_conn_stats towards
 * rank 1 (puts, tx_msgs, up) and triad_plane_info of every plane, and, for a
 * fault on a port whose interface this rank can see, the interface's
 * carrier: the moment a `down` takes effect.  From the samples it times
 * detection (the plane reported down or its connection broken; DRAINED),
 * the first put and message on another plane, and after up/restore the
 * first put on the plane again.  Exit status 1 when a message was lost,
 * duplicated or reordered, a put slot is wrong, a request failed, or a step
 * did not happen within --timeout. */
#include <errno.h>
#include <arpa/inet.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netinet/in.h>
#include <spawn.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "perf.h"

extern char **environ;

#define FAULT_WIN_ID 2u
enum { AM_FLT_DATA = 10, AM_FLT_END = 11, AM_FLT_RESULT = 12 };
#define SAMPLE_NS 1000000ull	     /* how often rank 0 samples the counters */
#define TAIL_MS 500		     /* the stream goes on this long after traffic is back */
#define RX_BYTES_MAX (64ul << 20)    /* put slots: at most this much */
#define MAX_SEQ (1ull << 28)	     /* messages the receiver can track */
#define MSG_MAGIC 0x7472696164666c74ull

struct flt_msg {
	uint64_t seq, check; /* check: seq ^ MSG_MAGIC */
};

struct flt_end {
	uint64_t msgs, puts;
};

struct flt_result {
	uint64_t received, lost, dups, reordered, bad; /* messages */
	uint64_t slots_checked, slots_bad;	       /* puts */
};

struct perf_fault {
	size_t size;	   /* put size */
	long slots;	   /* put slots at rank 1 */
	uint8_t *buf;	   /* [slots * size receive | window * size send] */
	triad_win_t *win;
	/* rank 1, written by the handlers (serialized by the library) */
	uint8_t *seen;	   /* bitmap of sequence numbers */
	uint64_t seen_len; /* bits */
	uint64_t next;	   /* one past the highest number seen */
	atomic_ulong received, dups, reordered, bad;
	struct flt_end end;
	atomic_int end_seen; /* end is valid */
	/* rank 0 */
	struct flt_result result;
	atomic_int result_seen;
};

/* ---- data --------------------------------------------------------------------------*/
static uint64_t fill_word(uint64_t j, size_t i)
{
	return (j + 1) * 0x9e3779b97f4a7c15ull + i;
}

static void put_fill(uint8_t *p, size_t size, uint64_t j)
{
	size_t i;

	for (i = 0; i + 8 <= size; i += 8) {
		uint64_t w = fill_word(j, i);

		memcpy(p + i, &w, 8);
	}
	for (; i < size; i++)
		p[i] = (uint8_t)(fill_word(j, i) >> 8 * (i % 8));
}

/* Whether p holds put j's pattern. */
static int put_matches(const uint8_t *p, size_t size, uint64_t j)
{
	size_t i;

	for (i = 0; i + 8 <= size; i += 8) {
		uint64_t w;

		memcpy(&w, p + i, 8);
		if (w != fill_word(j, i))
			return 0;
	}
	for (; i < size; i++)
		if (p[i] != (uint8_t)(fill_word(j, i) >> 8 * (i % 8)))
			return 0;
	return 1;
}

/* ---- handlers ---------------------------------------------------------------------*/
static int seen_grow(struct perf_fault *f, uint64_t seq)
{
	uint64_t bits = f->seen_len ? f->seen_len : 1u << 16;
	uint8_t *p;

	while (bits <= seq)
		bits *= 2;
	p = realloc(f->seen, bits / 8);
	if (!p)
		return -1;
	memset(p + f->seen_len / 8, 0, (bits - f->seen_len) / 8);
	f->seen = p;
	f->seen_len = bits;
	return 0;
}

static int on_data(void *arg, int src, const void *data, size_t len, triad_am_msg_t *msg)
{
	struct perf_fault *f = arg;
	struct flt_msg m;

	(void)msg;
	if (src != PERF_CLIENT || len != sizeof(m)) {
		atomic_fetch_add(&f->bad, 1);
		return TRIAD_AM_DONE;
	}
	memcpy(&m, data, sizeof(m));
	if (m.check != (m.seq ^ MSG_MAGIC) || m.seq >= MAX_SEQ ||
	    (m.seq >= f->seen_len && seen_grow(f, m.seq))) {
		atomic_fetch_add(&f->bad, 1);
		return TRIAD_AM_DONE;
	}
	if (f->seen[m.seq / 8] & (1u << m.seq % 8)) {
		atomic_fetch_add(&f->dups, 1);
		return TRIAD_AM_DONE;
	}
	f->seen[m.seq / 8] |= (uint8_t)(1u << m.seq % 8);
	if (m.seq + 1 < f->next)
		atomic_fetch_add(&f->reordered, 1); /* a later one came first */
	else
		f->next = m.seq + 1;
	atomic_fetch_add_explicit(&f->received, 1, memory_order_release);
	return TRIAD_AM_DONE;
}

static int on_end(void *arg, int src, const void *data, size_t len, triad_am_msg_t *msg)
{
	struct perf_fault *f = arg;

	(void)msg;
	if (src == PERF_CLIENT && len == sizeof(f->end)) {
		memcpy(&f->end, data, len);
		atomic_store_explicit(&f->end_seen, 1, memory_order_release);
	} else {
		atomic_fetch_add(&f->bad, 1);
	}
	return TRIAD_AM_DONE;
}

static int on_result(void *arg, int src, const void *data, size_t len, triad_am_msg_t *msg)
{
	struct perf_fault *f = arg;

	(void)msg;
	if (src == PERF_SERVER && len == sizeof(f->result)) {
		memcpy(&f->result, data, len);
		atomic_store_explicit(&f->result_seen, 1, memory_order_release);
	}
	return TRIAD_AM_DONE;
}

int perf_fault_setup(struct perf_run *r)
{
	static const struct {
		unsigned id;
		triad_am_handler_t fn;
	} h[] = { { AM_FLT_DATA, on_data }, { AM_FLT_END, on_end }, { AM_FLT_RESULT, on_result } };
	size_t size = r->o->size ? r->o->size : r->o->cmd->def_size;
	struct perf_fault *f = calloc(1, sizeof(*f));
	size_t len;
	int ret;

	if (!f) {
		perf_err(r, "perf_fault_setup", -ENOMEM);
		return -ENOMEM;
	}
	r->fault = f;
	f->size = size;
	f->slots = (long)(RX_BYTES_MAX / size);
	if (f->slots > 1024)
		f->slots = 1024;
	if (f->slots < 1)
		f->slots = 1;
	len = ((size_t)f->slots + (size_t)r->o->window) * size;
	f->buf = aligned_alloc(4096, (len + 4095) & ~(size_t)4095);
	if (!f->buf) {
		fprintf(stderr, "triad-perf: rank %d: no memory for %zu bytes\n", r->rank, len);
		return -ENOMEM;
	}
	memset(f->buf, 0, len);
	ret = triad_win_create(r->ctx, FAULT_WIN_ID, f->buf, len, NULL, &f->win);
	if (ret) {
		perf_err(r, "triad_win_create (fault window)", ret);
		return ret;
	}
	for (size_t i = 0; i < sizeof(h) / sizeof(h[0]); i++) {
		ret = triad_am_register(r->ctx, h[i].id, h[i].fn, f);
		if (ret) {
			perf_err(r, "triad_am_register", ret);
			return ret;
		}
	}
	return 0;
}

/* Before triad_fini: the window; ret: the status so far. */
int perf_fault_win_destroy(struct perf_run *r)
{
	int ret;

	if (!r->fault || !r->fault->win)
		return 0;
	ret = triad_win_destroy(r->fault->win);
	r->fault->win = NULL;
	if (ret)
		perf_err(r, "triad_win_destroy (fault window)", ret);
	return ret;
}

/* After triad_fini: no handler runs any more. */
void perf_fault_cleanup(struct perf_run *r)
{
	if (!r->fault)
		return;
	free(r->fault->seen);
	free(r->fault->buf);
	free(r->fault);
	r->fault = NULL;
}

/* ---- rank 0: the timeline ------------------------------------------------------------*/
enum flt_ev {
	EV_START,	  /* the stream started */
	EV_FAULT,	  /* fabric-ctl down/cut started; triad_plane_drain called */
	EV_FAULT_DONE,	  /* fabric-ctl returned; triad_plane_drain returned */
	EV_CARRIER_DOWN,  /* the port's interface lost its carrier */
	EV_RX_STOP,	  /* the last sample that saw it receive a packet, before detection */
	EV_DETECT,	  /* the plane reported down / its connection broken; DRAINED */
	EV_ALT_PUT,	  /* first put on another plane */
	EV_ALT_MSG,	  /* first message on another plane */
	EV_LAST_HOME_PUT, /* the last put that still took the plane */
	EV_UP,		  /* fabric-ctl up/heal started; triad_plane_restore called */
	EV_UP_DONE,	  /* fabric-ctl returned; triad_plane_restore returned */
	EV_CARRIER_UP,	  /* the carrier is back */
	EV_HOME_UP,	  /* the plane connected / NORMAL again */
	EV_HOME_PUT,	  /* first put on the plane again */
	EV_HOME_MSG,	  /* first message on the plane again */
	EV_END,		  /* the stream stopped */
	EV_N
};

enum flt_phase { PH_WARM, PH_FAULT, PH_UP, PH_TAIL, PH_STOP };

/* Rank 0's view of one plane towards rank 1. */
struct plane_snap {
	uint64_t puts, msgs;
	int up, port_up;
	enum triad_plane_state state;
};

/* Phase boundaries of the per-plane counter table. */
enum { SNAP_START, SNAP_FAULT, SNAP_UP, SNAP_END, NSNAP };

struct flt {
	struct perf_run *r;
	struct perf_fault *f;
	int drain;		/* the drain command, else failover */
	int np, home, node;	/* the plane taken away, and whose port (failover) */
	int alt;		/* the plane the traffic moved to (-1: none seen) */
	const char *ctl;	/* fabric-ctl */
	char ifname[IF_NAMESIZE]; /* the port's interface, "" when not visible here */
	unsigned inflight_at_drain;
	/* the stream */
	triad_req_t **ring;
	long posted, done, nmsgs, nputs, failed_reqs;
	enum triad_status first_fail;
	long first_fail_op;	/* its operation number (even: a put, odd: a message) */
	uint64_t first_fail_t;	/* when it completed */
	uint64_t head_since;	/* when the ring head became the oldest */
	uint64_t *tpost;	/* post time of each ring entry */
	uint64_t last_comp, stall_ns, stall_at, stall_post;
	long stall_op;		/* the operation that ended the longest stall */
	uint64_t rx_pkts;	/* the interface's rx_packets at the last sample */
	/* the timeline */
	enum flt_phase phase;
	uint64_t t[EV_N], next_sample, tail_end;
	struct plane_snap cur[TRIAD_MAX_PLANES], snap[NSNAP][TRIAD_MAX_PLANES];
	uint64_t home_puts_seen; /* the plane's put count at the last sample */
	pid_t child;		 /* a running fabric-ctl, else 0 */
	int child_ev;		 /* its event when it returns */
	int failed;		 /* a step did not happen in time, or a tool failed */
};

static const char *fault_verb(const struct flt *s, int up)
{
	if (s->r->o->fault_cut)
		return up ? "heal" : "cut";
	return up ? "up" : "down";
}

static int snap_planes(struct flt *s, struct plane_snap *out)
{
	for (int p = 0; p < s->np; p++) {
		struct triad_conn_stats cs = { .field_mask = TRIAD_CONN_STATS_LINK };
		struct triad_plane_info pi = { .field_mask = TRIAD_PLANE_INFO_ALL };
		int ret = triad_conn_stats(s->r->ctx, PERF_SERVER, p, &cs);

		if (!ret)
			ret = triad_plane_info(s->r->ctx, p, &pi);
		if (ret) {
			perf_err(s->r, "triad_conn_stats / triad_plane_info", ret);
			return ret;
		}
		out[p] = (struct plane_snap){ .puts = cs.puts, .msgs = cs.tx_msgs, .up = cs.up,
					      .port_up = pi.port_up, .state = pi.state };
	}
	return 0;
}

/* The interface that holds rank NODE's address on plane (from the world
 * file), when this process can see it (in one VM every node's). */
static void find_ifname(struct flt *s)
{
	const char *world = getenv("TRIAD_WORLD");
	char line[512], want[64] = "";
	struct ifaddrs *ifa, *i;
	FILE *fp;

	s->ifname[0] = '\0';
	if (!world || !(fp = fopen(world, "r")))
		return;
	while (fgets(line, sizeof(line), fp)) {
		char *tok, *save;
		int col = 0, rank = -1;

		for (tok = strtok_r(line, " \t\n", &save); tok; tok = strtok_r(NULL, " \t\n", &save)) {
			if (col == 0 && (tok[0] < '0' || tok[0] > '9'))
				break; /* a comment or the port line */
			if (col == 0)
				rank = atoi(tok);
			else if (rank == s->node && col - 1 == s->home)
				snprintf(want, sizeof(want), "%s", tok);
			col++;
		}
	}
	fclose(fp);
	if (!want[0] || getifaddrs(&ifa))
		return;
	for (i = ifa; i; i = i->ifa_next) {
		char a[INET_ADDRSTRLEN];

		if (!i->ifa_addr || i->ifa_addr->sa_family != AF_INET)
			continue;
		inet_ntop(AF_INET, &((struct sockaddr_in *)(void *)i->ifa_addr)->sin_addr, a,
			  sizeof(a));
		if (!strcmp(a, want)) {
			snprintf(s->ifname, sizeof(s->ifname), "%s", i->ifa_name);
			break;
		}
	}
	freeifaddrs(ifa);
}

/* The interface's rx_packets, or 0 when it cannot be read. */
static uint64_t rx_packets(const struct flt *s)
{
	char path[64 + IF_NAMESIZE];
	unsigned long long n = 0;
	FILE *fp;

	if (!s->ifname[0])
		return 0;
	snprintf(path, sizeof(path), "/sys/class/net/%s/statistics/rx_packets", s->ifname);
	fp = fopen(path, "r");
	if (!fp)
		return 0;
	if (fscanf(fp, "%llu", &n) != 1)
		n = 0;
	fclose(fp);
	return n;
}

/* 1 with carrier, 0 without (or when the interface is down), -1 unknown. */
static int carrier(const struct flt *s)
{
	char path[64 + IF_NAMESIZE], c = 0;
	FILE *fp;

	if (!s->ifname[0])
		return -1;
	snprintf(path, sizeof(path), "/sys/class/net/%s/carrier", s->ifname);
	fp = fopen(path, "r");
	if (!fp)
		return -1;
	if (fread(&c, 1, 1, fp) != 1)
		c = '0'; /* EINVAL: the interface is down */
	fclose(fp);
	return c == '1';
}

static int spawn_ctl(struct flt *s, int up, uint64_t now)
{
	char node[16], plane[16];
	char *argv[] = { (char *)s->ctl, (char *)fault_verb(s, up), node, plane, NULL };
	int ret;

	snprintf(node, sizeof(node), "%d", s->node);
	snprintf(plane, sizeof(plane), "%d", s->home);
	ret = posix_spawnp(&s->child, s->ctl, NULL, NULL, argv, environ);
	if (ret) {
		fprintf(stderr, "triad-perf: rank %d: cannot run %s: %s (set TRIAD_FABRIC_CTL)\n",
			s->r->rank, s->ctl, strerror(ret));
		s->child = 0;
		s->failed = 1;
		return -ret;
	}
	s->t[up ? EV_UP : EV_FAULT] = now;
	s->child_ev = up ? EV_UP_DONE : EV_FAULT_DONE;
	return 0;
}

static void reap_child(struct flt *s, uint64_t now)
{
	int status;

	if (!s->child || waitpid(s->child, &status, WNOHANG) != s->child)
		return;
	s->child = 0;
	s->t[s->child_ev] = now;
	if (!WIFEXITED(status) || WEXITSTATUS(status)) {
		fprintf(stderr, "triad-perf: rank %d: %s %s %d %d failed (status 0x%x)\n",
			s->r->rank, s->ctl, fault_verb(s, s->child_ev == EV_UP_DONE), s->node,
			s->home, status);
		s->failed = 1;
	}
}

static void mark(struct flt *s, enum flt_ev ev, uint64_t now)
{
	if (!s->t[ev])
		s->t[ev] = now;
}

/* The plane that first carried puts (ev ALT_PUT) or messages beyond base. */
static void watch_alt(struct flt *s, const struct plane_snap *base, uint64_t now)
{
	for (int p = 0; p < s->np; p++) {
		if (p == s->home)
			continue;
		if (s->cur[p].puts > base[p].puts && !s->t[EV_ALT_PUT]) {
			s->t[EV_ALT_PUT] = now;
			s->alt = p;
		}
		if (s->cur[p].msgs > base[p].msgs && !s->t[EV_ALT_MSG]) {
			s->t[EV_ALT_MSG] = now;
			if (s->alt < 0)
				s->alt = p;
		}
	}
}

/* triad_plane_drain (or with restore, _restore) of the plane, timed: the
 * events EV_FAULT and EV_FAULT_DONE (EV_UP and EV_UP_DONE). */
static void plane_call(struct flt *s, int restore)
{
	enum flt_ev ev = restore ? EV_UP : EV_FAULT;
	int ret;

	s->t[ev] = perf_now_ns();
	ret = restore ? triad_plane_restore(s->r->ctx, s->home)
		      : triad_plane_drain(s->r->ctx, s->home);
	s->t[ev + 1] = perf_now_ns();
	if (ret) {
		perf_err(s->r, restore ? "triad_plane_restore" : "triad_plane_drain", ret);
		s->failed = 1;
	}
}

/* Starts the fault (or drain) on the plane the warm-up's puts took. */
static void start_fault(struct flt *s, uint64_t now)
{
	struct triad_plane_info pi = { .field_mask = TRIAD_PLANE_INFO_ALL };
	uint64_t best = 0;

	memcpy(s->snap[SNAP_FAULT], s->cur, sizeof(s->cur));
	for (int p = 0; p < s->np; p++) {
		uint64_t d = s->cur[p].puts - s->snap[SNAP_START][p].puts;

		if (d > best) {
			best = d;
			s->home = p;
		}
	}
	if (!best) {
		fprintf(stderr, "triad-perf: rank 0: no put completed in the first %d ms\n",
			s->r->o->fault_at_ms);
		s->failed = 1;
		s->phase = PH_STOP;
		return;
	}
	s->home_puts_seen = s->cur[s->home].puts;
	s->phase = PH_FAULT;
	if (!s->drain) {
		find_ifname(s);
		s->rx_pkts = rx_packets(s);
		spawn_ctl(s, 0, now);
		return;
	}
	if (!triad_plane_info(s->r->ctx, s->home, &pi))
		s->inflight_at_drain = pi.msgs_inflight + pi.msgs_queued + pi.rma_inflight;
	plane_call(s, 0);
}

static void start_up(struct flt *s, uint64_t now)
{
	memcpy(s->snap[SNAP_UP], s->cur, sizeof(s->cur));
	s->phase = PH_UP;
	if (!s->drain) {
		if (spawn_ctl(s, 1, now))
			s->phase = PH_STOP;
		return;
	}
	plane_call(s, 1);
}

static void stop(struct flt *s, uint64_t now)
{
	memcpy(s->snap[SNAP_END], s->cur, sizeof(s->cur));
	s->t[EV_END] = now;
	s->phase = PH_STOP;
}

static int plane_lost(const struct flt *s, const struct plane_snap *p)
{
	if (s->drain)
		return p->state == TRIAD_PLANE_DRAINED;
	return p->state == TRIAD_PLANE_DOWN || !p->port_up || !p->up;
}

static int plane_back(const struct flt *s, const struct plane_snap *p)
{
	return p->state == TRIAD_PLANE_NORMAL && (s->drain || (p->port_up && p->up));
}

/* One sample: the events it shows, and the next step when it is due. */
static void tick(struct flt *s, uint64_t now)
{
	const struct perf_opts *o = s->r->o;
	uint64_t tmo = (uint64_t)o->timeout_s * 1000000000ull;
	struct plane_snap *h = &s->cur[s->home];
	int c;

	if (now < s->next_sample)
		return;
	s->next_sample = now + SAMPLE_NS;
	reap_child(s, now);
	if (snap_planes(s, s->cur)) {
		s->failed = 1;
		stop(s, now);
		return;
	}
	switch (s->phase) {
	case PH_WARM:
		if (now >= s->t[EV_START] + (uint64_t)o->fault_at_ms * 1000000)
			start_fault(s, now);
		break;
	case PH_FAULT:
		if ((c = carrier(s)) == 0)
			mark(s, EV_CARRIER_DOWN, now);
		if (!s->t[EV_DETECT] && s->ifname[0]) {
			uint64_t n = rx_packets(s);

			if (n != s->rx_pkts)
				s->t[EV_RX_STOP] = now;
			s->rx_pkts = n;
		}
		if (plane_lost(s, h))
			mark(s, EV_DETECT, now);
		watch_alt(s, s->snap[SNAP_FAULT], now);
		if (h->puts != s->home_puts_seen) {
			s->home_puts_seen = h->puts;
			s->t[EV_LAST_HOME_PUT] = now;
		}
		if (s->t[EV_DETECT] && s->t[EV_ALT_PUT] && !s->child) {
			uint64_t t = s->t[EV_DETECT] > s->t[EV_ALT_PUT] ? s->t[EV_DETECT]
									: s->t[EV_ALT_PUT];

			if (now >= t + (uint64_t)o->up_after_ms * 1000000)
				start_up(s, now);
		} else if (now > s->t[EV_FAULT] + tmo) {
			fprintf(stderr, "triad-perf: rank 0: %d s after the %s of plane %d: %s%s\n",
				o->timeout_s, s->drain ? "drain" : fault_verb(s, 0), s->home,
				s->t[EV_DETECT] ? "" : "not seen down; ",
				s->t[EV_ALT_PUT] ? "" : "no put took another plane");
			s->failed = 1;
			if (!s->child)
				start_up(s, now); /* leave the fabric whole */
		}
		break;
	case PH_UP:
		if ((c = carrier(s)) == 1)
			mark(s, EV_CARRIER_UP, now);
		if (plane_back(s, h))
			mark(s, EV_HOME_UP, now);
		if (h->puts > s->snap[SNAP_UP][s->home].puts)
			mark(s, EV_HOME_PUT, now);
		if (h->msgs > s->snap[SNAP_UP][s->home].msgs)
			mark(s, EV_HOME_MSG, now);
		if (s->t[EV_HOME_PUT] && !s->child) {
			s->tail_end = now + TAIL_MS * 1000000ull;
			s->phase = PH_TAIL;
		} else if (now > s->t[EV_UP] + tmo) {
			fprintf(stderr, "triad-perf: rank 0: %d s after the %s of plane %d, no put "
				"took it again\n", o->timeout_s,
				s->drain ? "restore" : fault_verb(s, 1), s->home);
			s->failed = 1;
			stop(s, now);
		}
		break;
	case PH_TAIL:
		if (now >= s->tail_end)
			stop(s, now);
		break;
	case PH_STOP:
		break;
	}
}

static int post_one(struct flt *s, triad_req_t **req_p)
{
	struct perf_run *r = s->r;
	struct perf_fault *f = s->f;
	int ret;

	if (s->posted % 2 == 0) {
		uint8_t *src = f->buf + ((size_t)f->slots + (size_t)(s->posted % r->o->window)) *
						f->size;
		uint64_t j = (uint64_t)s->nputs;

		put_fill(src, f->size, j);
		ret = triad_put(r->ctx, src, f->size, PERF_SERVER, FAULT_WIN_ID,
				(j % (uint64_t)f->slots) * f->size, 0, req_p);
		if (ret)
			perf_err(r, "triad_put", ret);
		else
			s->nputs++;
	} else {
		struct flt_msg m = { (uint64_t)s->nmsgs, (uint64_t)s->nmsgs ^ MSG_MAGIC };

		ret = triad_am_send(r->ctx, PERF_SERVER, AM_FLT_DATA, &m, sizeof(m), r->o->prio,
				    req_p);
		if (ret)
			perf_err(r, "triad_am_send", ret);
		else
			s->nmsgs++;
	}
	return ret;
}

/* Takes the ring head once it completed; 1 when it did. */
static int reap_head(struct flt *s, uint64_t now)
{
	triad_req_t *req = s->ring[s->done % s->r->o->window];
	enum triad_status st;
	int ret = triad_test(req);

	if (ret <= 0) {
		if (ret < 0)
			perf_err(s->r, "triad_test", ret);
		return ret;
	}
	st = triad_req_status(req);
	if (st != TRIAD_S_OK && !s->failed_reqs++) {
		s->first_fail = st;
		s->first_fail_op = s->done;
		s->first_fail_t = now;
	}
	(void)triad_req_free(req); /* complete: cannot fail */
	if (s->phase > PH_WARM && now - s->last_comp > s->stall_ns) {
		s->stall_ns = now - s->last_comp;
		s->stall_at = s->last_comp;
		s->stall_op = s->done;
		s->stall_post = s->tpost[s->done % s->r->o->window];
	}
	s->done++;
	s->last_comp = now;
	s->head_since = now;
	return 1;
}

static int stream(struct flt *s)
{
	const long w = s->r->o->window;
	uint64_t tmo = (uint64_t)s->r->o->timeout_s * 1000000000ull;
	int ret;

	s->t[EV_START] = s->last_comp = s->head_since = perf_now_ns();
	if (snap_planes(s, s->snap[SNAP_START]))
		return -EIO;
	memcpy(s->cur, s->snap[SNAP_START], sizeof(s->cur));
	while (s->phase != PH_STOP || s->done < s->posted) {
		uint64_t now = perf_now_ns();

		while (s->phase != PH_STOP && s->posted - s->done < w) {
			s->tpost[s->posted % w] = now;
			if (post_one(s, &s->ring[s->posted % w])) {
				s->failed = 1;
				stop(s, now);
				break;
			}
			if (s->posted++ == s->done)
				s->head_since = now;
		}
		tick(s, now);
		if (s->done == s->posted)
			continue;
		ret = reap_head(s, now);
		if (ret < 0)
			return ret;
		if (!ret && now - s->head_since > tmo) {
			fprintf(stderr, "triad-perf: rank 0: operation %ld pending for %d s (%s)\n",
				s->done, s->r->o->timeout_s,
				s->done % 2 ? "an active message" : "a put");
			return -ETIMEDOUT; /* leaks what is outstanding: the library may still use it */
		}
	}
	return 0;
}

/* ---- the ends of the stream --------------------------------------------------------*/
static int wait_flag(struct perf_run *r, atomic_int *flag, int timeout_ms)
{
	uint64_t end = perf_now_ns() + (uint64_t)timeout_ms * 1000000;

	while (!atomic_load_explicit(flag, memory_order_acquire)) {
		if (perf_now_ns() > end)
			return -ETIMEDOUT;
		triad_progress(r->ctx);
		usleep(1000);
	}
	return 0;
}

static int send_wait(struct perf_run *r, int to, unsigned id, const void *buf, size_t len,
		     const char *what)
{
	triad_req_t *req;
	int ret = triad_am_send(r->ctx, to, id, buf, len, TRIAD_PRIO_HIGH, &req);

	if (ret) {
		perf_err(r, what, ret);
		return ret;
	}
	ret = triad_wait(req, r->timeout_ms);
	if (ret) {
		perf_err(r, what, ret);
		return ret;
	}
	return perf_finish_req(r, req, what);
}

/* Rank 1: waits for the end of the stream, checks what arrived, reports. */
static int fault_server(struct perf_run *r, int timeout_ms)
{
	struct perf_fault *f = r->fault;
	struct flt_result res = { 0 };
	uint64_t grace;
	int ret = wait_flag(r, &f->end_seen, timeout_ms);

	if (ret) {
		fprintf(stderr, "triad-perf: rank 1: no end of the stream in %d ms\n", timeout_ms);
		return ret;
	}
	/* The end went after every message completed: allow their handlers
	 * a moment. */
	grace = perf_now_ns() + 2000000000ull;
	while (atomic_load_explicit(&f->received, memory_order_acquire) < f->end.msgs &&
	       perf_now_ns() < grace)
		usleep(1000);
	res.received = atomic_load_explicit(&f->received, memory_order_acquire);
	res.dups = atomic_load(&f->dups);
	res.reordered = atomic_load(&f->reordered);
	res.bad = atomic_load(&f->bad);
	res.lost = f->end.msgs > res.received ? f->end.msgs - res.received : 0;
	for (long k = 0; k < f->slots; k++) {
		const uint8_t *p = f->buf + (size_t)k * f->size;
		uint64_t n = f->end.puts, last;

		if ((uint64_t)k >= n)
			break;
		last = (uint64_t)k + (n - 1 - (uint64_t)k) / (uint64_t)f->slots * (uint64_t)f->slots;
		res.slots_checked++;
		if (!put_matches(p, f->size, last)) {
			if (!res.slots_bad)
				fprintf(stderr, "triad-perf: rank 1: put slot %ld does not hold put "
					"%llu\n", k, (unsigned long long)last);
			res.slots_bad++;
		}
	}
	return send_wait(r, PERF_CLIENT, AM_FLT_RESULT, &res, sizeof(res), "the receiver's result");
}

static double ms_since(uint64_t t, uint64_t ref)
{
	return ((double)t - (double)ref) / 1e6;
}

static const char *const ev_names[2][EV_N] = {
	{ "stream started", "fabric-ctl %s started", "fabric-ctl %s returned",
	  "carrier lost", "last packet received", "plane seen down", "first put on plane %d",
	  "first message on plane %d", "last put on plane %d", "fabric-ctl %s started",
	  "fabric-ctl %s returned", "carrier back", "plane %d connected again",
	  "first put on plane %d again", "first message on plane %d again", "stream stopped" },
	{ "stream started", "triad_plane_drain called", "triad_plane_drain returned", "", "",
	  "plane DRAINED", "first put on plane %d", "first message on plane %d",
	  "last put on plane %d", "triad_plane_restore called", "triad_plane_restore returned",
	  "", "plane %d NORMAL again", "first put on plane %d again",
	  "first message on plane %d again", "stream stopped" },
};

static void ev_label(const struct flt *s, int ev, char *buf, size_t len)
{
	const char *fmt = ev_names[s->drain][ev];
	int plane = ev == EV_ALT_PUT || ev == EV_ALT_MSG ? s->alt : s->home;

	if (strstr(fmt, "%s"))
		snprintf(buf, len, fmt, fault_verb(s, ev >= EV_UP));
	else if (strstr(fmt, "%d"))
		snprintf(buf, len, fmt, plane);
	else
		snprintf(buf, len, "%s", fmt);
	if ((ev == EV_CARRIER_DOWN || ev == EV_CARRIER_UP || ev == EV_RX_STOP) && s->ifname[0])
		snprintf(buf + strlen(buf), len - strlen(buf), " (%s)", s->ifname);
}

/* When the fault took effect: the carrier loss where it was seen; for a cut
 * the last sample in which the port's interface still received a packet
 * (the stream's acknowledgements arrive every millisecond) when that lies
 * within the command; else the return of the command (the fault lies
 * between its start and return). */
static uint64_t fault_ref(const struct flt *s)
{
	if (s->drain) /* the call itself */
		return s->t[EV_FAULT];
	if (s->t[EV_CARRIER_DOWN])
		return s->t[EV_CARRIER_DOWN];
	if (s->t[EV_RX_STOP] >= s->t[EV_FAULT] && s->t[EV_FAULT_DONE] &&
	    s->t[EV_RX_STOP] <= s->t[EV_FAULT_DONE])
		return s->t[EV_RX_STOP];
	return s->t[EV_FAULT_DONE] ? s->t[EV_FAULT_DONE] : s->t[EV_FAULT];
}

static uint64_t up_ref(const struct flt *s)
{
	if (s->t[EV_CARRIER_UP] && !s->r->o->fault_cut)
		return s->t[EV_CARRIER_UP];
	return s->t[EV_UP_DONE] ? s->t[EV_UP_DONE] : s->t[EV_UP];
}

static const char *env_or(const char *name, const char *def)
{
	const char *v = getenv(name);

	return v && *v ? v : def;
}

/* One figure: "name: t - ref ms", or "not seen". */
static void figure(const char *name, uint64_t t, uint64_t ref)
{
	if (t && ref)
		printf(" %-52s %10.1f\n", name, ms_since(t, ref));
	else
		printf(" %-52s %10s\n", name, "not seen");
}

/* A figure in ms, or null when one of its events was not seen. */
static struct perf_field ms_field(const char *key, uint64_t t, uint64_t ref)
{
	if (t && ref)
		return (struct perf_field)PF_DBL(key, NULL, 0, 3, ms_since(t, ref));
	return (struct perf_field)PF_NULL(key);
}

static const char *fault_ref_name(const struct flt *s, uint64_t fr)
{
	if (s->drain)
		return "call";
	return fr == s->t[EV_CARRIER_DOWN] ? "carrier" : fr == s->t[EV_RX_STOP] ? "last_rx"
										: "cmd_return";
}

/* --json: the whole run as one object (one line). */
static void report_json(const struct flt *s, int ok)
{
	const struct flt_result *res = &s->f->result;
	uint64_t fr = fault_ref(s), ur = up_ref(s);
	char events[EV_N * 16 + 4];
	size_t len = 0;

	/* The timeline, from the stream's start (CLOCK_MONOTONIC t0_s,
	 * comparable with the guest kernel's log); -1: not seen. */
	for (int ev = 0; ev < EV_N; ev++)
		len += (size_t)snprintf(events + len, sizeof(events) - len, "%s%.1f",
					ev ? "," : "[",
					s->t[ev] ? ms_since(s->t[ev], s->t[EV_START]) : -1.0);
	snprintf(events + len, sizeof(events) - len, "]");
	const struct perf_field f[] = {
		PF_STR("test", NULL, 0, s->drain ? "drain" : "failover"),
		PF_STR("fault", NULL, 0, s->drain ? "drain" : fault_verb(s, 0)),
		PF_INT("node", NULL, 0, s->drain ? -1 : s->node),
		PF_INT("plane", NULL, 0, s->home),
		PF_INT("alt", NULL, 0, s->alt),
		PF_INT("bytes", NULL, 0, s->f->size),
		PF_INT("window", NULL, 0, s->r->o->window),
		PF_STR("ack_timeout", NULL, 0, env_or("TRIAD_ACK_TIMEOUT", "default")),
		PF_STR("retry_count", NULL, 0, env_or("TRIAD_RETRY_COUNT", "default")),
		ms_field("cmd_ms", s->t[EV_FAULT_DONE], s->t[EV_FAULT]),
		ms_field("detect_ms", s->t[EV_DETECT], fr),
		ms_field("detect_from_cmd_start_ms", s->t[EV_DETECT], s->t[EV_FAULT]),
		ms_field("alt_put_ms", s->t[EV_ALT_PUT], fr),
		ms_field("alt_msg_ms", s->t[EV_ALT_MSG], fr),
		ms_field("alt_put_from_cmd_start_ms", s->t[EV_ALT_PUT], s->t[EV_FAULT]),
		ms_field("home_up_ms", s->t[EV_HOME_UP], ur),
		ms_field("home_put_ms", s->t[EV_HOME_PUT], ur),
		ms_field("home_msg_ms", s->t[EV_HOME_MSG], ur),
		ms_field("first_fail_ms", s->first_fail_t, fr),
		PF_STR("fault_ref", NULL, 0, fault_ref_name(s, fr)),
		PF_DBL("t0_s", NULL, 0, 3, (double)s->t[EV_START] / 1e9),
		PF_RAW("events_ms", events),
		PF_DBL("stall_ms", NULL, 0, 3, (double)s->stall_ns / 1e6),
		PF_INT("msgs", NULL, 0, s->nmsgs),
		PF_INT("puts", NULL, 0, s->nputs),
		PF_INT("received", NULL, 0, res->received),
		PF_INT("lost", NULL, 0, res->lost),
		PF_INT("dups", NULL, 0, res->dups),
		PF_INT("reordered", NULL, 0, res->reordered),
		PF_INT("bad", NULL, 0, res->bad),
		PF_INT("slots_checked", NULL, 0, res->slots_checked),
		PF_INT("slots_bad", NULL, 0, res->slots_bad),
		PF_INT("failed_reqs", NULL, 0, s->failed_reqs),
		PF_INT("inflight_at_drain", NULL, 0, s->inflight_at_drain),
		PF_BOOL("ok", ok),
	};

	perf_out_row(s->r, "", f, PF_N(f), NULL);
}

/* --csv, --plot: the timeline, one row per event seen (ms from the
 * stream's start, and from the fault for those after it); printed, or
 * only kept for the plot. */
static void report_events(const struct flt *s, int print)
{
	static const struct perf_plot timeline[2] = {
		{ .title = "failover timeline", .xlabel = "time from the stream start [ms]",
		  .ylabel = "", .x = "t_ms", .label = "event", .timeline = 1 },
		{ .title = "drain timeline", .xlabel = "time from the stream start [ms]",
		  .ylabel = "", .x = "t_ms", .label = "event", .timeline = 1 },
	};
	uint64_t fr = fault_ref(s);
	char label[80];

	for (int ev = 0; ev < EV_N; ev++) {
		if (!s->t[ev] || !ev_names[s->drain][ev][0])
			continue;
		ev_label(s, ev, label, sizeof(label));
		const struct perf_field f[] = {
			PF_STR("test", NULL, 0, s->drain ? "drain" : "failover"),
			PF_STR("event", "event", 52, label),
			PF_DBL("t_ms", "t[ms]", 10, 1, ms_since(s->t[ev], s->t[EV_START])),
			ev >= EV_FAULT ? ms_field("from_fault_ms", s->t[ev], fr)
				       : (struct perf_field)PF_NULL("from_fault_ms"),
		};

		if (print)
			perf_out_row(s->r, "", f, PF_N(f), &timeline[s->drain]);
		else
			perf_out_keep(s->r, &timeline[s->drain], f, PF_N(f));
	}
}

static void report(const struct flt *s, int ok)
{
	const struct flt_result *res = &s->f->result;
	uint64_t fr = fault_ref(s), ur = up_ref(s);
	char label[80];

	/* CSV prints the timeline; --plot draws it whatever the format. */
	report_events(s, s->r->o->format == PERF_FMT_CSV);
	if (s->r->o->format == PERF_FMT_JSON)
		report_json(s, ok);
	if (s->r->o->format != PERF_FMT_TABLE)
		return;
	perf_print_rule();
	if (s->drain)
		printf(" triad drain: rank %d -> rank %d, %d ranks, %d planes; rank 0 drains plane %d "
		       "(the one the stream used) and restores it\n", PERF_CLIENT, PERF_SERVER,
		       triad_size(s->r->ctx), s->np, s->home);
	else
		printf(" triad failover: rank %d -> rank %d, %d ranks, %d planes; fault: %s %s %d %d "
		       "(plane %d: the one the stream used)\n", PERF_CLIENT, PERF_SERVER,
		       triad_size(s->r->ctx), s->np, s->ctl, fault_verb(s, 0), s->node, s->home,
		       s->home);
	printf(" stream: %d operations outstanding, alternating %zu B puts and %zu B active "
	       "messages (%s priority); TRIAD_ACK_TIMEOUT %s, TRIAD_RETRY_COUNT %s; sampled every "
	       "%llu ms\n", s->r->o->window, s->f->size, sizeof(struct flt_msg),
	       perf_prio_str(s->r->o->prio), env_or("TRIAD_ACK_TIMEOUT", "default"),
	       env_or("TRIAD_RETRY_COUNT", "default"), SAMPLE_NS / 1000000);
	perf_print_rule();
	printf(" %-52s %10s %14s\n", "event", "t[ms]", "from fault[ms]");
	for (int ev = 0; ev < EV_N; ev++) {
		if (!s->t[ev] || !ev_names[s->drain][ev][0])
			continue;
		ev_label(s, ev, label, sizeof(label));
		printf(" %-52s %10.1f", label, ms_since(s->t[ev], s->t[EV_START]));
		if (ev >= EV_FAULT)
			printf(" %14.1f", ms_since(s->t[ev], fr));
		printf("\n");
	}
	perf_print_rule();
	if (s->drain) {
		printf(" %-52s %10s\n", "figure", "[ms]");
		figure("drain call -> DRAINED", s->t[EV_DETECT], s->t[EV_FAULT]);
		figure("drain call -> first put on another plane", s->t[EV_ALT_PUT], s->t[EV_FAULT]);
		figure("restore call -> plane NORMAL", s->t[EV_HOME_UP], s->t[EV_UP]);
		figure("restore call -> first put on the plane again", s->t[EV_HOME_PUT], s->t[EV_UP]);
		printf(" %-52s %10u\n", "operations in flight on the plane at the drain call",
		       s->inflight_at_drain);
	} else {
		printf(" %-52s %10s   (fault: %s)\n", "figure", "[ms]",
		       fault_ref(s) == s->t[EV_CARRIER_DOWN] ? "the carrier loss"
		       : fault_ref(s) == s->t[EV_RX_STOP] ? "the last packet received"
							   : "the command's return");
		figure("fault -> detection", s->t[EV_DETECT], fr);
		figure("fault -> first put on another plane", s->t[EV_ALT_PUT], fr);
		figure("fault -> first message on another plane", s->t[EV_ALT_MSG], fr);
		figure("command start -> first put on another plane", s->t[EV_ALT_PUT],
		       s->t[EV_FAULT]);
		snprintf(label, sizeof(label), "%s -> plane connected again%s", fault_verb(s, 1),
			 s->t[EV_CARRIER_UP] && !s->r->o->fault_cut ? " (from the carrier)" : "");
		figure(label, s->t[EV_HOME_UP], ur);
		snprintf(label, sizeof(label), "%s -> first put on the plane again", fault_verb(s, 1));
		figure(label, s->t[EV_HOME_PUT], ur);
	}
	printf(" %-52s %10.1f   (from %.1f ms after the fault; it ended with %s %ld, posted "
	       "at %.1f ms)\n", "longest time without a completion", (double)s->stall_ns / 1e6,
	       s->stall_ns ? ms_since(s->stall_at, fr) : 0.0,
	       s->stall_op % 2 ? "message" : "put", s->stall_op / 2,
	       s->stall_ns ? ms_since(s->stall_post, fr) : 0.0);
	perf_print_rule();
	printf(" %-22s", "puts / messages sent");
	for (int p = 0; p < s->np; p++)
		printf("  plane %d puts  msgs", p);
	printf("\n");
	for (int k = 0; k + 1 < NSNAP; k++) {
		static const char *const names[2][NSNAP - 1] = {
			{ "before the fault", "fault .. up", "after up" },
			{ "before the drain", "drain .. restore", "after restore" },
		};

		printf(" %-22s", names[s->drain][k]);
		for (int p = 0; p < s->np; p++)
			printf("  %12llu %5llu",
			       (unsigned long long)(s->snap[k + 1][p].puts - s->snap[k][p].puts),
			       (unsigned long long)(s->snap[k + 1][p].msgs - s->snap[k][p].msgs));
		printf("\n");
	}
	perf_print_rule();
	printf(" messages: sent %ld, received %llu, lost %llu, duplicated %llu, reordered %llu, "
	       "malformed %llu\n", s->nmsgs, (unsigned long long)res->received,
	       (unsigned long long)res->lost, (unsigned long long)res->dups,
	       (unsigned long long)res->reordered, (unsigned long long)res->bad);
	printf(" puts: sent %ld, slots checked %llu, wrong %llu; requests failed %ld\n", s->nputs,
	       (unsigned long long)res->slots_checked, (unsigned long long)res->slots_bad,
	       s->failed_reqs);
	if (s->failed_reqs)
		printf(" the first failed request: %s %ld, %s, completed %.1f ms after the fault\n",
		       s->first_fail_op % 2 ? "message" : "put", s->first_fail_op / 2,
		       triad_status_str(s->first_fail), ms_since(s->first_fail_t, fr));
	printf(" result: %s\n", ok ? "ok" : "FAILED");
	fflush(stdout);
}

static int fault_client(struct perf_run *r, int drain)
{
	struct flt s = { .r = r, .f = r->fault, .drain = drain, .np = triad_nplanes(r->ctx),
			 .node = r->o->fault_node, .alt = -1 };
	const struct flt_result *res = &s.f->result;
	struct flt_end end;
	int ret, ok;

	s.ctl = getenv("TRIAD_FABRIC_CTL");
	if (!s.ctl || !*s.ctl)
		s.ctl = "fabric-ctl";
	s.ring = calloc((size_t)r->o->window, sizeof(*s.ring));
	s.tpost = calloc((size_t)r->o->window, sizeof(*s.tpost));
	if (!s.ring || !s.tpost) {
		free(s.ring);
		free(s.tpost);
		perf_err(r, drain ? "drain" : "failover", -ENOMEM);
		return -ENOMEM;
	}
	ret = stream(&s);
	if (s.child) { /* a fabric-ctl still runs (the stream failed) */
		int status;

		waitpid(s.child, &status, 0);
	}
	free(s.ring);
	free(s.tpost);
	if (ret)
		return ret;
	end = (struct flt_end){ (uint64_t)s.nmsgs, (uint64_t)s.nputs };
	ret = send_wait(r, PERF_SERVER, AM_FLT_END, &end, sizeof(end), "the end of the stream");
	if (!ret && wait_flag(r, &s.f->result_seen, r->timeout_ms)) {
		fprintf(stderr, "triad-perf: rank 0: no result from rank 1 in %d ms\n",
			r->timeout_ms);
		ret = -ETIMEDOUT;
	}
	if (ret)
		return ret;
	ok = !s.failed && !s.failed_reqs && !res->lost && !res->dups && !res->reordered &&
	     !res->bad && !res->slots_bad && res->received == (uint64_t)s.nmsgs;
	report(&s, ok);
	if (!ok)
		r->verify_errors++; /* run() exits 1, after the last barrier */
	return 0;
}

static int fault_run(struct perf_run *r, int drain)
{
	const struct perf_opts *o = r->o;
	/* The whole run: the warm-up, two steps of --timeout each, the tail. */
	int whole_ms = o->fault_at_ms + o->up_after_ms + 4 * r->timeout_ms + 10000;
	int ret;

	if (triad_nplanes(r->ctx) < 2) {
		fprintf(stderr, "triad-perf: %s needs 2 planes or more (the world has %d)\n",
			o->cmd->name, triad_nplanes(r->ctx));
		return -EINVAL;
	}
	ret = perf_barrier(r, r->timeout_ms, drain ? "before drain" : "before failover");
	if (!ret && r->rank == PERF_CLIENT)
		ret = fault_client(r, drain);
	else if (!ret && r->rank == PERF_SERVER)
		ret = fault_server(r, whole_ms);
	if (!ret)
		ret = perf_barrier(r, whole_ms, drain ? "after drain" : "after failover");
	return ret;
}

int perf_failover(struct perf_run *r, size_t size, long iters, long warmup)
{
	(void)size;
	(void)iters;
	(void)warmup;
	return fault_run(r, 0);
}

int perf_drain(struct perf_run *r, size_t size, long iters, long warmup)
{
	(void)size;
	(void)iters;
	(void)warmup;
	return fault_run(r, 1);
}
