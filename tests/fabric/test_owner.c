/* Every message that names a window is checked at the window's owner
 * (3 ranks; docs/design.md, "Who checks a window").
 *
 * The public API checks an operation at its initiator before anything goes
 * out, so this test goes around it: it is linked with the library's own
 * objects (not libtriad.so) and rank 0 hands hand-made messages to the
 * peer layer (tr_peer_send), as a buggy or hostile peer library would
 * send them.  What comes back is seen through the context's table of
 * message handlers (tr_peer_handle): every rank puts a watcher in place of
 * the copy and window handlers, which lets the library handle what arrived
 * as always and then records it.
 *
 * Ranks 1 and 2 own windows filled with a pattern: RW (read and write),
 * RO, WO, and GONE (destroyed after rank 0 used it).  Rank 0 sends:
 *   WIN_QUERY   an unknown and a destroyed window: WIN_INFO NO_WINDOW; a
 *               read-only one: OK with its exact extent and rights.
 *   COPY_START  to rank 1 as the source: a bad source window (unknown,
 *               destroyed, past the end, offset + length overflowing, no
 *               READ) comes back as COPY_DONE with that status on leg
 *               AT_SRC; a bad destination (checked at the source against
 *               the destination's own description, or in its own table when
 *               it is the destination too) on leg AT_DST.  One good order
 *               shows the same path moves data when it should.
 *   COPY_DATA   to rank 1 as the destination: COPY_RESP with the status;
 *               also carrying data (a small copy's): refused the same way,
 *               and not a byte of it placed.
 *   COPY_RESP, COPY_DONE  for no order: dropped and counted at rank 1.
 *   WIN_INFO    unsolicited, describing a huge window of rank 0: rank 1
 *               keeps no descriptor, and its put to that window fails.
 *   WIN_GONE    naming window id 1 to rank 2: only rank 2's descriptor of
 *               rank 0's window 1 goes, not the one of rank 1's.
 * Then a source window changes under an order it accepted: rank 2 (the
 * destination) holds its lock so that rank 1's lookup of its window waits,
 * rank 1 destroys its source window and creates it again four times
 * smaller, and the order's chunk is refused at rank 1 (OUT_OF_BOUNDS,
 * AT_SRC) instead of going to the NIC, and no COPY_DATA follows it.
 * At the end every owner checks that no byte of its windows changed, but
 * the good order's.
 */
#include <pthread.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "core/copy.h"
#include "core/peer.h"
#include "core/win.h"
#include "ft.h"
#include "proto/wire.h"

#define W_RW 1
#define W_RO 2
#define W_WO 3
#define W_GONE 4
#define W_SHRINK 5 /* rank 1: the source that shrinks */
#define W_DST 6	   /* rank 2: its destination */
#define W_GOOD 7   /* rank 2: the good order's destination */
#define W_NONE 99  /* never created */
#define W_FORGED 8 /* rank 0 never creates it: rank 0 forges its WIN_INFO */
#define WLEN 4096u
#define GOOD_LEN 256u
#define NWIN 8
#define WAIT_MS 20000

static triad_ctx_t *ctx;
static int rank;

/* ---- what arrived: recorded by the watched handlers --------------------------------*/
struct seen {
	int peer;
	enum tr_msg_type type;
	struct tr_msg m;
};

#define SEEN_MAX 256
static struct seen seen[SEEN_MAX];
static int nseen; /* under ctx->lock, as every handler runs */

static void record(int peer, const struct tr_msg *m)
{
	if (nseen < SEEN_MAX)
		seen[nseen++] = (struct seen){ .peer = peer, .type = m->type, .m = *m };
}

/* The library's handlers of the watched types, as registered. */
static tr_msg_fn lib_on_msg[TR_MSG_TYPE_MAX];

/* Recorded after the library handled it: whoever sees the record sees
 * the handling done. */
static int watch(struct tr_lane *l, const struct tr_msg *m, struct tr_buf *b)
{
	int kept = lib_on_msg[m->type](l, m, b);

	record(l->peer, m);
	return kept;
}

static void watch_handlers(void)
{
	static const enum tr_msg_type types[] = { TR_MSG_COPY, TR_MSG_WIN_INFO, TR_MSG_WIN_GONE };

	pthread_mutex_lock(&ctx->lock);
	for (size_t i = 0; i < sizeof(types) / sizeof(types[0]); i++) {
		lib_on_msg[types[i]] = ctx->on_msg[types[i]];
		tr_peer_handle(ctx, types[i], watch);
	}
	pthread_mutex_unlock(&ctx->lock);
}

typedef int (*seen_match)(const struct seen *s, uint64_t key);

static int copy_op_is(const struct seen *s, uint64_t op)
{
	return s->type == TR_MSG_COPY && s->m.u.copy.hdr.op_id == op;
}

static int info_qid_is(const struct seen *s, uint64_t qid)
{
	return s->type == TR_MSG_WIN_INFO && s->m.u.win_info.qid == qid;
}

static int info_win_is(const struct seen *s, uint64_t win)
{
	return s->type == TR_MSG_WIN_INFO && s->m.u.win_info.win == win;
}

static int gone_win_is(const struct seen *s, uint64_t win)
{
	return s->type == TR_MSG_WIN_GONE && s->m.u.win_gone.win == win;
}

/* The first record that matches, waited for up to WAIT_MS: 1 and *out
 * filled, or 0. */
static int wait_seen(seen_match match, uint64_t key, struct seen *out)
{
	struct timespec t0, t;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (;;) {
		int found = 0;

		pthread_mutex_lock(&ctx->lock);
		for (int i = 0; i < nseen && !found; i++)
			if (match(&seen[i], key)) {
				*out = seen[i];
				found = 1;
			}
		pthread_mutex_unlock(&ctx->lock);
		if (found)
			return 1;
		clock_gettime(CLOCK_MONOTONIC, &t);
		if ((t.tv_sec - t0.tv_sec) * 1000 + (t.tv_nsec - t0.tv_nsec) / 1000000 > WAIT_MS)
			return 0;
		usleep(1000);
	}
}

/* ---- sending what the API would never send ------------------------------------------*/
static void send_raw(int peer, struct tr_msg *m, unsigned prio)
{
	int ret;

	pthread_mutex_lock(&ctx->lock);
	ret = tr_peer_send(ctx, peer, m, prio, NULL);
	pthread_mutex_unlock(&ctx->lock);
	FT_CHECK(ret == 0, "sending a hand-made %s to rank %d: %s", tr_msg_type_str(m->type),
		 peer, strerror(-ret));
}

static void send_copy(int peer, enum tr_copy_msg kind, const struct tr_copy_hdr *h, int carry)
{
	static uint8_t junk[64];
	static const unsigned prio[TR_COPY_NMSGS] = {
		[TR_COPY_START] = TR_FC_LOW, [TR_COPY_DATA] = TR_FC_MEDIUM,
		[TR_COPY_RESP] = TR_FC_HIGH, [TR_COPY_DONE] = TR_FC_HIGH,
	};
	struct tr_msg m = { .type = TR_MSG_COPY };

	m.u.copy.kind = (uint8_t)kind;
	m.u.copy.hdr = *h;
	if (carry && h->len <= sizeof(junk)) {
		memset(junk, 0xee, sizeof(junk));
		m.u.copy.carried = (uint32_t)h->len;
		m.u.copy.data = junk;
	}
	send_raw(peer, &m, prio[kind]);
}

/* ---- windows ---------------------------------------------------------------------------*/
static uint8_t *mem[NWIN + 1];
static triad_win_t *wins[NWIN + 1];

static uint32_t seed_of(int r, uint32_t id)
{
	return (uint32_t)(r * 100 + (int)id);
}

static void win_make(uint32_t id, uint32_t access, size_t len)
{
	struct triad_win_attr a = { .field_mask = TRIAD_WIN_ATTR_ACCESS, .access = access };
	int ret;

	mem[id] = malloc(len);
	if (!mem[id]) {
		FT_CHECK(mem[id], "no memory");
		return;
	}
	ft_fill(mem[id], len, seed_of(rank, id), 0);
	ret = triad_win_create(ctx, id, mem[id], len, &a, &wins[id]);
	FT_CHECK(ret == 0, "window %u: %s", id, strerror(-ret));
}

/* Every byte of window id as it was made, but [keep_off, +keep_len). */
static void win_unchanged(uint32_t id, size_t len, uint64_t keep_off, uint64_t keep_len)
{
	for (uint64_t i = 0; i < len; i++) {
		if (i >= keep_off && i < keep_off + keep_len)
			continue;
		if (mem[id][i] != ft_pattern(seed_of(rank, id), i)) {
			FT_CHECK(0, "window %u of rank %d: byte %llu changed", id, rank,
				 (unsigned long long)i);
			return;
		}
	}
}

static enum triad_status get_status(int peer, uint32_t win)
{
	uint8_t b[16];
	triad_req_t *req;
	int ret = triad_get(ctx, b, sizeof(b), peer, win, 0, 0, &req);

	if (ret) {
		FT_CHECK(ret == 0, "get from rank %d window %u: %s", peer, win, strerror(-ret));
		return TRIAD_S_TRANSPORT;
	}
	return ft_wait(req, WAIT_MS);
}

/* The state of this rank's descriptor of peer's window id (-1: none). */
static int rwin_state(int peer, uint32_t id)
{
	int st;

	pthread_mutex_lock(&ctx->lock);
	st = tr_rwin_state(ctx, peer, id);
	pthread_mutex_unlock(&ctx->lock);
	return st;
}

static struct tr_copy_stats copy_stats(void)
{
	struct tr_copy_stats s;

	pthread_mutex_lock(&ctx->lock);
	s = *tr_copy_stats(tr_copy_engine(ctx));
	pthread_mutex_unlock(&ctx->lock);
	return s;
}

/* ---- rank 0's cases ----------------------------------------------------------------------*/
struct copy_case {
	const char *what;
	enum tr_copy_msg kind;	/* START to rank 1 as S, or DATA to rank 1 as D */
	int dst_rank;		/* START: the destination */
	uint32_t src_win, dst_win;
	uint64_t src_off, dst_off, len;
	enum triad_status want;
	enum tr_copy_leg want_leg;
	int carry; /* DATA: the message carries its len bytes */
};

#define BIG_OFF (UINT64_MAX - 15) /* + 32 wraps around */

static const struct copy_case copy_cases[] = {
	/* the source window, at the source */
	{ "source unknown", TR_COPY_START, 2, W_NONE, W_RW, 0, 0, 64, TRIAD_S_NO_WINDOW,
	  TR_COPY_LEG_AT_SRC, 0 },
	{ "source destroyed", TR_COPY_START, 2, W_GONE, W_RW, 0, 0, 64, TRIAD_S_NO_WINDOW,
	  TR_COPY_LEG_AT_SRC, 0 },
	{ "source past its end", TR_COPY_START, 2, W_RW, W_RW, WLEN - 100, 0, 200,
	  TRIAD_S_OUT_OF_BOUNDS, TR_COPY_LEG_AT_SRC, 0 },
	{ "source offset + length overflows", TR_COPY_START, 2, W_RW, W_RW, BIG_OFF, 0, 32,
	  TRIAD_S_OUT_OF_BOUNDS, TR_COPY_LEG_AT_SRC, 0 },
	{ "source length overflows", TR_COPY_START, 2, W_RW, W_RW, 16, 0, UINT64_MAX,
	  TRIAD_S_OUT_OF_BOUNDS, TR_COPY_LEG_AT_SRC, 0 },
	{ "source without READ", TR_COPY_START, 2, W_WO, W_RW, 0, 0, 64, TRIAD_S_ACCESS,
	  TR_COPY_LEG_AT_SRC, 0 },
	/* the destination window of another rank, checked at the source
	 * against the destination's own description */
	{ "destination unknown", TR_COPY_START, 2, W_RW, W_NONE, 0, 0, 64, TRIAD_S_NO_WINDOW,
	  TR_COPY_LEG_AT_DST, 0 },
	{ "destination destroyed", TR_COPY_START, 2, W_RW, W_GONE, 0, 0, 64, TRIAD_S_NO_WINDOW,
	  TR_COPY_LEG_AT_DST, 0 },
	{ "destination past its end", TR_COPY_START, 2, W_RW, W_RW, 0, WLEN - 100, 200,
	  TRIAD_S_OUT_OF_BOUNDS, TR_COPY_LEG_AT_DST, 0 },
	{ "destination offset + length overflows", TR_COPY_START, 2, W_RW, W_RW, 0, BIG_OFF, 32,
	  TRIAD_S_OUT_OF_BOUNDS, TR_COPY_LEG_AT_DST, 0 },
	{ "destination without WRITE", TR_COPY_START, 2, W_RW, W_RO, 0, 0, 64, TRIAD_S_ACCESS,
	  TR_COPY_LEG_AT_DST, 0 },
	/* the source is the destination: both in its own table */
	{ "local destination unknown", TR_COPY_START, 1, W_RW, W_NONE, 0, 0, 64,
	  TRIAD_S_NO_WINDOW, TR_COPY_LEG_AT_DST, 0 },
	{ "local destination destroyed", TR_COPY_START, 1, W_RW, W_GONE, 0, 0, 64,
	  TRIAD_S_NO_WINDOW, TR_COPY_LEG_AT_DST, 0 },
	{ "local destination past its end", TR_COPY_START, 1, W_RW, W_RW, 0, WLEN, 1,
	  TRIAD_S_OUT_OF_BOUNDS, TR_COPY_LEG_AT_DST, 0 },
	{ "local destination overflows", TR_COPY_START, 1, W_RW, W_RW, 0, BIG_OFF, 32,
	  TRIAD_S_OUT_OF_BOUNDS, TR_COPY_LEG_AT_DST, 0 },
	{ "local destination without WRITE", TR_COPY_START, 1, W_RW, W_RO, 0, 0, 64,
	  TRIAD_S_ACCESS, TR_COPY_LEG_AT_DST, 0 },
	/* the good order: it must still work */
	{ "good order", TR_COPY_START, 2, W_RW, W_GOOD, 0, 0, GOOD_LEN, TRIAD_S_OK,
	  TR_COPY_LEG_NONE, 0 },
	/* COPY_DATA at the destination (rank 0 plays the source) */
	{ "data: window unknown", TR_COPY_DATA, 1, 0, W_NONE, 0, 0, 64, TRIAD_S_NO_WINDOW,
	  TR_COPY_LEG_AT_DST, 0 },
	{ "data: window destroyed", TR_COPY_DATA, 1, 0, W_GONE, 0, 0, 64, TRIAD_S_NO_WINDOW,
	  TR_COPY_LEG_AT_DST, 0 },
	{ "data: past the end", TR_COPY_DATA, 1, 0, W_RW, 0, WLEN - 1, 2, TRIAD_S_OUT_OF_BOUNDS,
	  TR_COPY_LEG_AT_DST, 0 },
	{ "data: offset + length overflows", TR_COPY_DATA, 1, 0, W_RW, 0, BIG_OFF, 32,
	  TRIAD_S_OUT_OF_BOUNDS, TR_COPY_LEG_AT_DST, 0 },
	{ "data: without WRITE", TR_COPY_DATA, 1, 0, W_RO, 0, 0, 64, TRIAD_S_ACCESS,
	  TR_COPY_LEG_AT_DST, 0 },
	/* the same carrying data: not a byte of it lands */
	{ "data carried: window unknown", TR_COPY_DATA, 1, 0, W_NONE, 0, 0, 64,
	  TRIAD_S_NO_WINDOW, TR_COPY_LEG_AT_DST, 1 },
	{ "data carried: window destroyed", TR_COPY_DATA, 1, 0, W_GONE, 0, 0, 64,
	  TRIAD_S_NO_WINDOW, TR_COPY_LEG_AT_DST, 1 },
	{ "data carried: past the end", TR_COPY_DATA, 1, 0, W_RW, 0, WLEN - 1, 2,
	  TRIAD_S_OUT_OF_BOUNDS, TR_COPY_LEG_AT_DST, 1 },
	{ "data carried: offset + length overflows", TR_COPY_DATA, 1, 0, W_RW, 0, BIG_OFF, 32,
	  TRIAD_S_OUT_OF_BOUNDS, TR_COPY_LEG_AT_DST, 1 },
	{ "data carried: without WRITE", TR_COPY_DATA, 1, 0, W_RO, 0, 0, 64, TRIAD_S_ACCESS,
	  TR_COPY_LEG_AT_DST, 1 },
	/* in range: D answers OK and writes nothing itself (the data would
	 * have come by RDMA, bounded by its registration) */
	{ "data: in range", TR_COPY_DATA, 1, 0, W_RW, 0, 0, 64, TRIAD_S_OK, TR_COPY_LEG_NONE, 0 },
};
#define NCOPY (sizeof(copy_cases) / sizeof(copy_cases[0]))
#define OP_BASE 0x7e5700000000ull

static struct tr_copy_hdr case_hdr(size_t i)
{
	const struct copy_case *c = &copy_cases[i];
	int start = c->kind == TR_COPY_START;

	return (struct tr_copy_hdr){
		.op_id = OP_BASE + i,
		.initiator = 0,
		.source = start ? 1 : 0,
		.destination = start ? (uint32_t)c->dst_rank : 1,
		.src_win = c->src_win,
		.dst_win = c->dst_win,
		.src_off = c->src_off,
		.dst_off = c->dst_off,
		.len = c->len,
		.mode = (uint8_t)(i % 2 ? TR_COPY_DIRECT : TR_COPY_RELAY),
	};
}

static void check_copy_answer(size_t i)
{
	const struct copy_case *c = &copy_cases[i];
	struct tr_copy_hdr h = case_hdr(i);
	/* The answer: from S a COPY_DONE (DIRECT and OK: D's COPY_RESP);
	 * to a COPY_DATA, D's COPY_RESP.  A small copy carries its data
	 * (TRIAD_COPY_EAGER): then D, not S's lookup, finds a fault of its
	 * window, and in DIRECT mode answers I itself. */
	const char *eager_s = getenv("TRIAD_COPY_EAGER");
	uint64_t eager = eager_s ? strtoull(eager_s, NULL, 0) : 2048;
	int carried = c->kind == TR_COPY_START && c->dst_rank != 1 && c->len && c->len <= eager;
	int direct_ok = h.mode == TR_COPY_DIRECT &&
			(c->want == TRIAD_S_OK || (carried && c->want_leg == TR_COPY_LEG_AT_DST));
	enum tr_copy_msg kind = c->kind == TR_COPY_DATA || direct_ok ? TR_COPY_RESP : TR_COPY_DONE;
	int from = c->kind == TR_COPY_DATA || direct_ok ? (int)h.destination : 1;
	struct seen s;

	if (!wait_seen(copy_op_is, h.op_id, &s)) {
		FT_CHECK(0, "%s: no answer in %d ms", c->what, WAIT_MS);
		return;
	}
	FT_CHECK(s.m.u.copy.kind == kind && s.peer == from,
		 "%s: answered by %s from rank %d, want %s from rank %d", c->what,
		 tr_copy_msg_str(s.m.u.copy.kind), s.peer, tr_copy_msg_str(kind), from);
	FT_CHECK(s.m.u.copy.hdr.status == c->want && s.m.u.copy.hdr.leg == c->want_leg,
		 "%s: %s on leg %s, want %s on leg %s", c->what,
		 triad_status_str(s.m.u.copy.hdr.status), tr_copy_leg_str(s.m.u.copy.hdr.leg),
		 triad_status_str(c->want), tr_copy_leg_str(c->want_leg));
}

struct query_case {
	uint32_t win;
	enum triad_status want;
};

static const struct query_case query_cases[] = {
	{ W_NONE, TRIAD_S_NO_WINDOW },
	{ W_GONE, TRIAD_S_NO_WINDOW },
	{ W_RO, TRIAD_S_OK },
};
#define NQUERY (sizeof(query_cases) / sizeof(query_cases[0]))
#define QID_BASE 0x7e570000u

static void rank0_forge(void)
{
	struct tr_msg m;

	for (size_t i = 0; i < NQUERY; i++) {
		m = (struct tr_msg){ .type = TR_MSG_WIN_QUERY };
		m.u.win_query.qid = QID_BASE + (uint32_t)i;
		m.u.win_query.win = query_cases[i].win;
		send_raw(1, &m, TR_FC_MEDIUM);
	}
	for (size_t i = 0; i < NCOPY; i++) {
		struct tr_copy_hdr h = case_hdr(i);

		send_copy(1, copy_cases[i].kind, &h, copy_cases[i].carry);
	}
	/* answers for no order: rank 1 as the source (RESP), as the initiator (DONE) */
	struct tr_copy_hdr h = {
		.op_id = OP_BASE + 1000, .initiator = 2, .source = 1, .destination = 0,
		.src_win = W_RW, .dst_win = W_RW, .len = 64, .mode = TR_COPY_RELAY,
	};
	send_copy(1, TR_COPY_RESP, &h, 0);
	h = (struct tr_copy_hdr){
		.op_id = OP_BASE + 1001, .initiator = 1, .source = 0, .destination = 2,
		.src_win = W_RW, .dst_win = W_RW, .len = 64, .mode = TR_COPY_RELAY,
		.status = TRIAD_S_OK, .leg = TR_COPY_LEG_NONE,
	};
	send_copy(1, TR_COPY_DONE, &h, 0);
	/* a description nobody asked for: all of memory, read and write */
	m = (struct tr_msg){ .type = TR_MSG_WIN_INFO };
	m.u.win_info.qid = 1;
	m.u.win_info.win = W_FORGED;
	m.u.win_info.status = TRIAD_S_OK;
	m.u.win_info.nplanes = (uint16_t)triad_nplanes(ctx);
	m.u.win_info.access = TRIAD_WIN_READ | TRIAD_WIN_WRITE;
	m.u.win_info.base = 4096;
	m.u.win_info.len = 1ull << 46;
	for (int p = 0; p < triad_nplanes(ctx); p++)
		m.u.win_info.rkey[p] = 0x1234u + (uint32_t)p;
	send_raw(1, &m, TR_FC_HIGH);
	/* "window 1 is gone", from rank 0: it can speak only of its own */
	m = (struct tr_msg){ .type = TR_MSG_WIN_GONE };
	m.u.win_gone.win = W_RW;
	send_raw(2, &m, TR_FC_HIGH);
}

static void rank0_check(void)
{
	for (size_t i = 0; i < NQUERY; i++) {
		struct seen s;

		if (!wait_seen(info_qid_is, QID_BASE + i, &s)) {
			FT_CHECK(0, "WIN_QUERY for window %u: no WIN_INFO", query_cases[i].win);
			continue;
		}
		FT_CHECK(s.peer == 1 && s.m.u.win_info.status == query_cases[i].want,
			 "WIN_QUERY for window %u: %s from rank %d, want %s", query_cases[i].win,
			 triad_status_str(s.m.u.win_info.status), s.peer,
			 triad_status_str(query_cases[i].want));
		if (query_cases[i].want == TRIAD_S_OK)
			FT_CHECK(s.m.u.win_info.len == WLEN &&
					 s.m.u.win_info.access == TRIAD_WIN_READ &&
					 s.m.u.win_info.nplanes == triad_nplanes(ctx),
				 "window %u described as %llu B, access %u, %u planes",
				 query_cases[i].win, (unsigned long long)s.m.u.win_info.len,
				 s.m.u.win_info.access, s.m.u.win_info.nplanes);
	}
	for (size_t i = 0; i < NCOPY; i++)
		check_copy_answer(i);
}

/* ---- rank 1 and 2 ------------------------------------------------------------------------*/
static void rank1_check(const struct tr_copy_stats *before)
{
	struct tr_copy_stats now;
	struct seen s;
	int deadline = WAIT_MS / 10;

	/* the forged RESP and DONE: dropped as unknown, nothing acted on */
	do {
		now = copy_stats();
		if (now.unknown >= before->unknown + 2)
			break;
		usleep(10000);
	} while (--deadline > 0);
	FT_CHECK(now.unknown >= before->unknown + 2, "forged COPY_RESP/DONE: %llu counted unknown",
		 (unsigned long long)(now.unknown - before->unknown));
	FT_CHECK(now.completed == before->completed, "a forged answer completed a request");

	/* the forged WIN_INFO: no descriptor, and the window does not exist */
	FT_CHECK(wait_seen(info_win_is, W_FORGED, &s) && s.peer == 0,
		 "the forged WIN_INFO did not arrive");
	FT_CHECK(rwin_state(0, W_FORGED) == -1,
		 "an unsolicited WIN_INFO made a descriptor (state %d)", rwin_state(0, W_FORGED));
	enum triad_status st = get_status(0, W_FORGED);
	FT_CHECK(st == TRIAD_S_NO_WINDOW, "get from the forged window: %s, want no such window",
		 triad_status_str(st));
}

static void rank2_check(void)
{
	struct seen s;

	FT_CHECK(wait_seen(gone_win_is, W_RW, &s) && s.peer == 0, "the WIN_GONE did not arrive");
	FT_CHECK(rwin_state(0, W_RW) == TR_RWIN_GONE,
		 "rank 0's own window 1: descriptor state %d after its WIN_GONE",
		 rwin_state(0, W_RW));
	FT_CHECK(rwin_state(1, W_RW) == TR_RWIN_READY,
		 "rank 1's window 1: descriptor state %d after rank 0's WIN_GONE",
		 rwin_state(1, W_RW));
}

/* ---- a source window that changes under an accepted order ------------------------------*/
static char flag_dir[200];

static void flag_set(const char *name)
{
	char path[260];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", flag_dir, name);
	f = fopen(path, "w");
	FT_CHECK(f, "cannot create %s", path);
	if (f)
		fclose(f);
}

static int flag_wait(const char *name)
{
	char path[260];

	snprintf(path, sizeof(path), "%s/%s", flag_dir, name);
	for (int i = 0; i < WAIT_MS; i++) {
		if (access(path, F_OK) == 0)
			return 1;
		usleep(1000);
	}
	FT_CHECK(0, "%s did not appear", path);
	return 0;
}

#define SHRINK_OP (OP_BASE + 2000)

static int start_is_shrink(const struct seen *s, uint64_t op)
{
	return s->type == TR_MSG_COPY && s->m.u.copy.kind == TR_COPY_START &&
	       s->m.u.copy.hdr.op_id == op;
}

static void shrink_phase(void)
{
	struct tr_copy_hdr h = {
		.op_id = SHRINK_OP, .initiator = 0, .source = 1, .destination = 2,
		.src_win = W_SHRINK, .dst_win = W_DST, .len = WLEN, .mode = TR_COPY_RELAY,
	};
	struct seen s;

	if (rank == 2) {
		/* The source's lookup of W_DST waits for this rank's engine. */
		pthread_mutex_lock(&ctx->lock);
		flag_set("held");
		flag_wait("shrunk");
		pthread_mutex_unlock(&ctx->lock);
	} else if (rank == 0) {
		if (flag_wait("held"))
			send_copy(1, TR_COPY_START, &h, 0);
		if (!wait_seen(copy_op_is, SHRINK_OP, &s)) {
			FT_CHECK(0, "the shrunk source's order: no answer");
			return;
		}
		FT_CHECK(s.m.u.copy.kind == TR_COPY_DONE &&
				 s.m.u.copy.hdr.status == TRIAD_S_OUT_OF_BOUNDS &&
				 s.m.u.copy.hdr.leg == TR_COPY_LEG_AT_SRC,
			 "the shrunk source's order: %s %s on leg %s, want DONE out of bounds "
			 "on leg at the source", tr_copy_msg_str(s.m.u.copy.kind),
			 triad_status_str(s.m.u.copy.hdr.status),
			 tr_copy_leg_str(s.m.u.copy.hdr.leg));
	} else if (rank == 1) {
		/* Accepted: the order waits for the destination's description. */
		FT_CHECK(wait_seen(start_is_shrink, SHRINK_OP, &s), "the order did not arrive");
		FT_CHECK(triad_win_destroy(wins[W_SHRINK]) == 0, "destroying the source");
		free(mem[W_SHRINK]);
		mem[W_SHRINK] = NULL;
		wins[W_SHRINK] = NULL;
		win_make(W_SHRINK, TRIAD_WIN_READ | TRIAD_WIN_WRITE, WLEN / 4);
		flag_set("shrunk");
	}
}

int main(void)
{
	struct tr_copy_stats before = { 0 };
	const char *out = getenv("TRIAD_VM_OUT");

	ctx = ft_init();
	rank = triad_rank(ctx);
	if (triad_size(ctx) != 3) {
		fprintf(stderr, "test_owner: needs 3 ranks, has %d\n", triad_size(ctx));
		triad_fini(ctx);
		return 1;
	}
	watch_handlers();
	snprintf(flag_dir, sizeof(flag_dir), "%s/test_owner.%d", out && *out ? out : "/tmp",
		 (int)getppid());
	if (rank == 0 && mkdir(flag_dir, 0700) && errno != EEXIST)
		FT_CHECK(0, "mkdir %s: %s", flag_dir, strerror(errno));

	win_make(W_RW, TRIAD_WIN_READ | TRIAD_WIN_WRITE, WLEN);
	if (rank != 0) {
		win_make(W_RO, TRIAD_WIN_READ, WLEN);
		win_make(W_WO, TRIAD_WIN_WRITE, WLEN);
		win_make(W_GONE, TRIAD_WIN_READ | TRIAD_WIN_WRITE, WLEN);
	}
	if (rank == 1)
		win_make(W_SHRINK, TRIAD_WIN_READ | TRIAD_WIN_WRITE, WLEN);
	if (rank == 2) {
		win_make(W_DST, TRIAD_WIN_READ | TRIAD_WIN_WRITE, WLEN);
		win_make(W_GOOD, TRIAD_WIN_READ | TRIAD_WIN_WRITE, WLEN);
	}
	ft_barrier(ctx);

	/* Descriptors in hand before the owners destroy GONE: rank 0's
	 * messages name a window that existed. */
	if (rank == 0)
		for (int r = 1; r <= 2; r++)
			FT_CHECK(get_status(r, W_GONE) == TRIAD_S_OK, "get from rank %d's GONE", r);
	if (rank == 2) {
		FT_CHECK(get_status(0, W_RW) == TRIAD_S_OK, "get from rank 0");
		FT_CHECK(get_status(1, W_RW) == TRIAD_S_OK, "get from rank 1");
	}
	ft_barrier(ctx);
	if (rank != 0) {
		FT_CHECK(triad_win_destroy(wins[W_GONE]) == 0, "destroying GONE");
		free(mem[W_GONE]);
		mem[W_GONE] = NULL;
		wins[W_GONE] = NULL;
	}
	if (rank == 1)
		before = copy_stats();
	ft_barrier(ctx);

	if (rank == 0) {
		rank0_forge();
		rank0_check();
	} else if (rank == 1) {
		rank1_check(&before);
	} else {
		rank2_check();
	}
	ft_barrier(ctx);

	uint64_t answered = copy_stats().answered;

	shrink_phase();
	ft_barrier(ctx);
	/* The refused chunk's COPY_DATA stayed at rank 1: in DIRECT mode the
	 * destination's OK would race the source's error to the initiator. */
	if (rank == 2)
		FT_CHECK(copy_stats().answered == answered,
			 "the destination heard of data that never came (%llu COPY_DATA)",
			 (unsigned long long)(copy_stats().answered - answered));

	/* Nothing a refused message named changed; the good order's bytes
	 * are rank 1's window RW [0, GOOD_LEN). */
	if (rank != 0) {
		win_unchanged(W_RW, WLEN, 0, 0);
		win_unchanged(W_RO, WLEN, 0, 0);
		win_unchanged(W_WO, WLEN, 0, 0);
		pthread_mutex_lock(&ctx->lock);
		uint32_t live = tr_copy_orders_live(tr_copy_engine(ctx));
		pthread_mutex_unlock(&ctx->lock);
		FT_CHECK(live == 0, "rank %d still serves %u orders", rank, live);
	}
	if (rank == 2) {
		win_unchanged(W_DST, WLEN, 0, 0);
		win_unchanged(W_GOOD, WLEN, 0, GOOD_LEN);
		for (uint64_t i = 0; i < GOOD_LEN; i++)
			if (mem[W_GOOD][i] != ft_pattern(seed_of(1, W_RW), i)) {
				FT_CHECK(0, "the good order's byte %llu is wrong",
					 (unsigned long long)i);
				break;
			}
	}
	if (rank == 1) {
		win_unchanged(W_SHRINK, WLEN / 4, 0, 0);
		/* the connections survived: a put and a get still work */
		FT_CHECK(get_status(2, W_RW) == TRIAD_S_OK, "get from rank 2 after it all");
	}
	if (rank == 0) {
		char path[260];

		ft_barrier(ctx); /* the others are done with the flags */
		snprintf(path, sizeof(path), "%s/held", flag_dir);
		unlink(path);
		snprintf(path, sizeof(path), "%s/shrunk", flag_dir);
		unlink(path);
		rmdir(flag_dir);
	} else {
		ft_barrier(ctx);
	}
	for (int id = 1; id <= NWIN; id++)
		if (wins[id])
			triad_win_destroy(wins[id]);
	ft_barrier(ctx);
	int rc = ft_finish(ctx, "test_owner");

	for (int id = 1; id <= NWIN; id++)
		free(mem[id]);
	return rc;
}
