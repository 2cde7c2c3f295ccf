/* MPI_Bcast and MPI_Ibcast through triad_group_bcast, in the user's buffer
 * where it is contiguous, else staged.
 *
 * A broadcast is a request (struct triad_coll_req) queued on its module in
 * call order; MPI_Bcast starts one and waits for it.  Its segments of at
 * most coll_triad_stage_size bytes go one at a time, the head of every
 * module's queue advanced by triad_coll_progress (Open MPI's progress
 * engine, so MPI_Wait, MPI_Test and every blocking call drive them).  Each
 * segment has a number, counted per communicator, the same at every rank
 * (every rank starts a communicator's broadcasts in the same order).
 *
 * The root's copies land in the other ranks' windows whether or not those
 * ranks reached the segment, and every rank that holds the data is a
 * source of copies until every rank holds it; so a segment:
 *   - the root writes its window once the previous segment is over
 *     everywhere: the root of a segment knows it is (its triad request
 *     completes once every rank holds the data) and tells every other
 *     rank (FIN);
 *   - a non-root calls triad_group_bcast and tells the root its window is
 *     ready (READY) once it unpacked the previous segment: it need not
 *     wait for that one's FIN, since only the root writes its window, and
 *     only once it knows the previous segment is over everywhere;
 *   - the root packs its part into its window, waits for every READY,
 *     calls triad_group_bcast, and once it completed sends every FIN;
 *     the last READY starts it where it arrives (triad's progress
 *     engine, in triad's thread while the application computes), so an
 *     MPI_Ibcast moves its data whether or not the root calls MPI in the
 *     meantime (its next segment, and its FINs, wait for the root's MPI
 *     progress);
 *   - a non-root unpacks once its triad request completed.
 * So the root of consecutive segments packs the next while the others
 * unpack the last, and one message (READY) separates them, as before
 * them a barrier did.  A FIN matters to a rank about to be a root, and to
 * the first segment of a later communicator with the same context id
 * (whose root may not have been in the earlier one's group): each rank
 * counts the FINs it waits for.
 * The handshake is per communicator (its own window, group and numbers),
 * so broadcasts of different communicators never wait for each other and
 * may be started in different orders on different ranks.
 *
 * The window of a segment (id TRIAD_COLL_ID(cid) at every rank) is made
 * for it by each rank, before its READY (the root: before it waits for
 * them), and destroyed once the segment is over there: over the rank's
 * own buffer where its datatype is contiguous, else over the context id's
 * staging buffer (made at its first staged segment and kept).  Ranks
 * decide apart (a root's vector may be the others' bytes).  A rank drops
 * what it knew of the last segment's windows first (triad_win_forget):
 * its copies of this segment go only after the root took every READY,
 * so after every rank made its new window, and they ask for it anew.  The
 * registrations of user buffers are kept between broadcasts (cached
 * windows) where Open MPI tells which memory goes back to the system
 * (triad_coll_mem_released), and dropped before a window is made again.
 *
 * Every wait of a segment lasts at most coll_triad_timeout_ms.  A failed
 * segment (triad's status, a timeout) completes the request with
 * MPI_ERR_OTHER and breaks the window: the ranks may disagree on where it
 * stopped, so every later broadcast of that context id here fails at once
 * instead of waiting for messages that will not come. */
#include "coll_triad.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ompi/communicator/communicator.h"
#include "ompi/datatype/ompi_datatype.h"
#include "ompi/request/request.h"
#include "opal/datatype/opal_convertor.h"
#include "opal/runtime/opal_progress.h"
#include "opal/util/output.h"

/* A context id's segment state. */
struct triad_coll_slot {
	struct triad_coll_slot *next;
	uint32_t cid;
	void *buf;	  /* staging: NULL until a segment of this context id needs it */
	triad_win_t *win; /* the segment's window here, NULL between segments */
	int broken; /* a segment failed on it */
	/* Under the component's lock: the AM handler writes them. */
	unsigned unfin;	    /* segments taken here as a non-root whose FIN has not come */
	uint32_t ready_seq; /* the segment whose READYs came (root) */
	int nready;
	/* The root's segment packed and waiting for its READYs, which the
	 * last one starts (ready_start). */
	struct triad_coll_req *waiting;
};

enum hs_kind {
	HS_READY = 1, /* to the root: this rank's window is ready for the segment */
	HS_FIN = 2,   /* from the root: every rank holds the segment */
};

struct hs_msg {
	uint32_t kind, cid, seq;
};

enum seg_state {
	SEG_SLOT,	/* waiting for the window: the previous segment is over everywhere */
	SEG_READY_SEND, /* non-root: READY to the root */
	SEG_READY_WAIT, /* root: waiting for every READY */
	SEG_BCAST,	/* triad's broadcast under way */
	SEG_FIN_SEND,	/* root: FIN to every other rank */
};

static const char *const seg_state_name[] = {
	[SEG_SLOT] = "waiting for its window",
	[SEG_READY_SEND] = "telling the root it is ready",
	[SEG_READY_WAIT] = "waiting for every rank to be ready",
	[SEG_BCAST] = "broadcasting",
	[SEG_FIN_SEND] = "telling every rank it is over",
};

/* The user's buffer, as bytes in order: contiguous in place, else through
 * a convertor (pack at the root, unpack elsewhere) and the staging buffer. */
struct user_data {
	char *contig; /* NULL: through conv */
	opal_convertor_t conv;
};

/* Open MPI 4.1's ompi_coll_base_nbc_request_t, the class every
 * non-blocking collective's request derives from: MPI_Ibcast's binding
 * keeps a derived datatype alive until completion in its fields
 * (ompi_coll_base_retain_datatypes).  Its header,
 * ompi/mca/coll/base/coll_base_util.h, includes ompi/op/op.h, which
 * includes a Fortran header that Debian 12's libopenmpi-dev lacks. */
struct nbc_request {
	ompi_request_t super;
	union {
		ompi_request_complete_fn_t req_complete_cb;
		ompi_request_free_fn_t req_free;
	} cb;
	void *req_complete_cb_data;
	void *data[2]; /* a union of two pointers */
};
typedef struct nbc_request ompi_coll_base_nbc_request_t;
OMPI_DECLSPEC extern opal_class_t ompi_coll_base_nbc_request_t_class;

struct triad_coll_req {
	ompi_coll_base_nbc_request_t super;
	struct triad_coll_req *next; /* in its module's queue */
	triad_coll_module_t *m;	     /* its communicator's */
	struct triad_coll_slot *slot;
	struct user_data d;
	int root, is_root;
	size_t total, off, len; /* bytes; the segment's offset and length */
	uint32_t seq;		/* the segment's number */
	enum seg_state st;
	triad_req_t *treq;
	/* Under the component's lock: the last READY started the segment's
	 * broadcast (treq, or the error hret). */
	int hstarted, hret;
	int fin_to; /* root: the next rank FIN goes to */
	uint64_t since, deadline; /* of its state */
};
typedef struct triad_coll_req triad_coll_req_t;

/* OBJ_NEW does not clear what the parent classes' constructors leave. */
static void req_construct(triad_coll_req_t *r)
{
	memset((char *)r + sizeof(r->super), 0, sizeof(*r) - sizeof(r->super));
}

OBJ_CLASS_INSTANCE(triad_coll_req_t, ompi_coll_base_nbc_request_t, req_construct, NULL);

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void data_open(struct user_data *d, void *buf, int count, struct ompi_datatype_t *dtype,
		      int root)
{
	ptrdiff_t lb, extent;

	if (ompi_datatype_is_contiguous_memory_layout(dtype, count)) {
		ompi_datatype_get_true_extent(dtype, &lb, &extent);
		d->contig = (char *)buf + lb;
		return;
	}
	d->contig = NULL;
	OBJ_CONSTRUCT(&d->conv, opal_convertor_t);
	if (root)
		opal_convertor_copy_and_prepare_for_send(ompi_mpi_local_convertor, &dtype->super,
							 count, buf, 0, &d->conv);
	else
		opal_convertor_copy_and_prepare_for_recv(ompi_mpi_local_convertor, &dtype->super,
							 count, buf, 0, &d->conv);
}

static void data_close(struct user_data *d)
{
	if (!d->contig)
		OBJ_DESTRUCT(&d->conv);
}

/* The next len bytes of a staged message into the staging buffer (root)
 * or out of it. */
static void data_move(struct user_data *d, int root, char *stage, size_t len)
{
	struct iovec iov = { .iov_base = stage, .iov_len = len };
	uint32_t n = 1;
	size_t moved = len;

	mca_coll_triad_component.staged += len;
	/* The convertor keeps its position: segments come in order. */
	if (root)
		opal_convertor_pack(&d->conv, &iov, &n, &moved);
	else
		opal_convertor_unpack(&d->conv, &iov, &n, &moved);
}

/* ---- memory given back ------------------------------------------------------ */

/* Ranges given back to the system that overlap the span of the user
 * buffers kept registered, noted by Open MPI's memory hook and given to
 * triad (triad_mem_release) before the next window is made: the hook runs
 * inside free or munmap, in any thread, maybe one that holds triad's
 * lock, so it only notes.  A rank's thread frees no buffer while it is in
 * a broadcast (no MPI_THREAD_MULTIPLE), so a range is given to triad
 * before a buffer at its addresses can be used again. */
#define REL_MAX 32
static struct {
	pthread_mutex_t lock;
	uintptr_t lo, hi;		  /* the span of the buffers kept registered */
	uintptr_t at[REL_MAX], len[REL_MAX]; /* noted, not given to triad yet */
	int n, all;			  /* all: more than REL_MAX: the whole span */
} rel = { .lock = PTHREAD_MUTEX_INITIALIZER };

void triad_coll_mem_released(void *buf, size_t length, void *cbdata, bool from_alloc)
{
	uintptr_t a = (uintptr_t)buf;

	(void)cbdata;
	(void)from_alloc;
	pthread_mutex_lock(&rel.lock);
	if (a < rel.hi && a + length > rel.lo) {
		if (rel.n < REL_MAX) {
			rel.at[rel.n] = a;
			rel.len[rel.n++] = length;
		} else {
			rel.all = 1;
		}
	}
	pthread_mutex_unlock(&rel.lock);
}

/* What the hook noted goes to triad; [base, base + len) joins the span. */
static void mem_release_noted(struct triad_coll_component *c, const char *base, size_t len)
{
	uintptr_t at[REL_MAX], l[REL_MAX], lo, hi;
	int n, all;

	pthread_mutex_lock(&rel.lock);
	n = rel.n;
	all = rel.all;
	lo = rel.lo;
	hi = rel.hi;
	memcpy(at, rel.at, sizeof(at));
	memcpy(l, rel.len, sizeof(l));
	rel.n = rel.all = 0;
	if (all)
		rel.lo = rel.hi = 0;
	if (!rel.hi || (uintptr_t)base < rel.lo)
		rel.lo = (uintptr_t)base;
	if ((uintptr_t)base + len > rel.hi)
		rel.hi = (uintptr_t)base + len;
	pthread_mutex_unlock(&rel.lock);
	if (all)
		(void)triad_mem_release(c->ctx, (void *)lo, hi - lo);
	for (int i = 0; i < n && !all; i++)
		(void)triad_mem_release(c->ctx, (void *)at[i], l[i]);
}

/* ---- windows and their handshake ---------------------------------------------- */

/* The slot of cid, made when missing if make; NULL: none (no memory).
 * Lock held. */
static struct triad_coll_slot *slot_get(struct triad_coll_component *c, uint32_t cid, int make)
{
	struct triad_coll_slot *s;

	for (s = c->slots; s; s = s->next)
		if (s->cid == cid)
			return s;
	s = make ? calloc(1, sizeof(*s)) : NULL;
	if (s) {
		s->cid = cid;
		s->next = c->slots;
		c->slots = s;
	}
	return s;
}

static int group_bcast(struct triad_coll_component *c, triad_coll_req_t *r)
{
	return triad_group_bcast(r->m->group, r->root, TRIAD_COLL_ID(r->m->cid), 0, r->len,
				 (enum triad_bcast_algo)c->algo, &r->treq);
}

/* Every READY of s's waiting segment came: its broadcast starts now, in
 * the thread the last one arrived in (triad's, which holds triad's lock,
 * taken before this one's everywhere).  advance() finds it started.  Lock
 * held. */
static void ready_start(struct triad_coll_component *c, struct triad_coll_slot *s)
{
	triad_coll_req_t *r = s->waiting;

	if (!r || s->ready_seq != r->seq || s->nready < r->m->size - 1)
		return;
	s->waiting = NULL;
	s->nready = 0;
	r->hret = group_bcast(c, r);
	r->hstarted = 1;
}

int triad_coll_am(void *arg, int src_rank, const void *data, size_t len, triad_am_msg_t *msg)
{
	struct triad_coll_component *c = &mca_coll_triad_component;
	struct triad_coll_slot *s;
	struct hs_msg h;

	(void)arg;
	(void)msg;
	if (len != sizeof(h)) {
		opal_output(0, "coll/triad: rank %d sent a %zu-byte handshake message: dropped",
			    src_rank, len);
		return TRIAD_AM_DONE;
	}
	memcpy(&h, data, sizeof(h));
	pthread_mutex_lock(&c->lock);
	/* A READY may come before this rank's first broadcast of cid; a FIN
	 * only after this rank took the window. */
	s = slot_get(c, h.cid, h.kind == HS_READY);
	if (!s) {
		opal_output(0, "coll/triad: rank %d sent handshake %u for context id %u, which "
			    "has no window here (or no memory for it): dropped", src_rank, h.kind,
			    h.cid);
	} else if (h.kind == HS_FIN) {
		/* A FIN ends a segment this rank took the window for (the root
		 * waited for its READY); those of different roots may come in
		 * any order. */
		if (s->unfin)
			s->unfin--;
		else
			opal_output(0, "coll/triad: rank %d ended segment %u of context id %u, "
				    "which is not under way here: ignored", src_rank, h.seq, h.cid);
	} else if (h.kind == HS_READY && (!s->nready || s->ready_seq == h.seq)) {
		/* Only one segment's READYs can be on their way to a root: a
		 * rank sends the next one's once this one completed there,
		 * after the root took these. */
		s->ready_seq = h.seq;
		s->nready++;
		ready_start(c, s);
	} else {
		opal_output(0, "coll/triad: rank %d sent handshake %u for segment %u of context "
			    "id %u (READYs of %u under way): dropped", src_rank, h.kind, h.seq,
			    h.cid, s->ready_seq);
	}
	pthread_mutex_unlock(&c->lock);
	return TRIAD_AM_DONE;
}

/* 0, or -EAGAIN (queues full: again later), or another negative errno. */
static int hs_send(struct triad_coll_component *c, int world_rank, enum hs_kind kind,
		   uint32_t cid, uint32_t seq)
{
	struct hs_msg h = { .kind = kind, .cid = cid, .seq = seq };

	return triad_am_send(c->ctx, world_rank, TRIAD_COLL_AM_ID, &h, sizeof(h),
			     TRIAD_PRIO_MEDIUM, NULL);
}

/* r's segment's window here, over the user's buffer (contiguous) or the
 * staging buffer, after this rank forgot the last segment's: 0, or
 * -ENOMEM (or triad_win_create's error). */
static int seg_window(struct triad_coll_component *c, triad_coll_req_t *r)
{
	struct triad_coll_slot *s = r->slot;
	uint32_t id = TRIAD_COLL_ID(r->m->cid);
	struct triad_win_attr attr = { .field_mask = TRIAD_WIN_ATTR_CACHED };
	char *base;

	(void)triad_win_forget(c->ctx, id);
	if (r->d.contig) {
		base = r->d.contig + r->off;
		attr.cached = c->hooks;
		if (c->hooks)
			mem_release_noted(c, base, r->len);
	} else {
		if (!s->buf && posix_memalign(&s->buf, 4096, c->stage_size))
			return -ENOMEM;
		base = s->buf;
		attr.cached = 1; /* the component's own, freed only at the end */
	}
	return triad_win_create(c->ctx, id, base, r->len, &attr, &s->win);
}

/* The segment is over here (or failed): its window goes.  A failed one
 * over the user's buffer leaves no key to it either, whatever triad's
 * broadcast still has in flight. */
static void seg_unwindow(struct triad_coll_component *c, triad_coll_req_t *r)
{
	if (!r->slot->win)
		return;
	triad_win_destroy(r->slot->win);
	r->slot->win = NULL;
	if (r->d.contig && r->super.super.req_status.MPI_ERROR != MPI_SUCCESS)
		(void)triad_mem_release(c->ctx, r->d.contig + r->off, r->len);
}

void triad_coll_slots_free(void)
{
	struct triad_coll_component *c = &mca_coll_triad_component;
	struct triad_coll_slot *s;

	while ((s = c->slots)) {
		c->slots = s->next;
		free(s->buf);
		free(s);
	}
}

/* ---- a broadcast's segments ------------------------------------------------- */

static void seg_fail(struct triad_coll_component *c, triad_coll_req_t *r, const char *why)
{
	pthread_mutex_lock(&c->lock);
	if (r->slot->waiting == r)
		r->slot->waiting = NULL; /* no READY starts it now */
	pthread_mutex_unlock(&c->lock);
	opal_output(0, "coll/triad: a broadcast of %zu bytes from rank %d (world %d) on context "
		    "id %u, segment %u (%zu bytes at %zu), %s: %s", r->total, r->root,
		    r->m->world_rank[r->root], r->m->cid, r->seq, r->len, r->off,
		    seg_state_name[r->st], why);
	if (r->treq && triad_req_free(r->treq) == -EBUSY)
		opal_output_verbose(1, c->output, "coll/triad: its triad request stays with "
				    "triad until the end");
	r->treq = NULL;
	r->slot->broken = 1;
	r->super.super.req_status.MPI_ERROR = MPI_ERR_OTHER;
	seg_unwindow(c, r);
}

static void seg_state(struct triad_coll_component *c, triad_coll_req_t *r, enum seg_state st)
{
	r->st = st;
	r->since = now_ns();
	r->deadline = r->since + (uint64_t)c->timeout_ms * 1000000ull;
}

/* The next segment, or the end: 1 when the broadcast is over. */
static int seg_next(struct triad_coll_component *c, triad_coll_req_t *r)
{
	r->off += r->len;
	if (r->off >= r->total)
		return 1;
	r->len = r->total - r->off < c->stage_size ? r->total - r->off : c->stage_size;
	r->seq = 0; /* numbered when it is the communicator's next (seg_take) */
	seg_state(c, r, SEG_SLOT);
	return 0;
}

/* Takes the window for r's segment: 1 done, 0 not free yet, -1 failed.
 * A root waits for the FIN of every segment it took as a non-root: then
 * the communicator's previous segment, and every earlier one of this
 * context id, is over everywhere.  A non-root waits only at the
 * communicator's first segment here, for those of the communicator that
 * had its context id before (whose ranks may be this one's only). */
static int seg_take(struct triad_coll_component *c, triad_coll_req_t *r)
{
	struct triad_coll_slot *s = r->slot;
	int ret, free_now;

	/* Only the head of the module's queue gets here, so every rank numbers
	 * the communicator's segments in the same order. */
	if (!r->seq) {
		if (++r->m->seq == 0) /* 0 is a free window's */
			r->m->seq = 1;
		r->seq = r->m->seq;
	}
	if (s->broken) {
		seg_fail(c, r, "an earlier broadcast failed on this communicator");
		return -1;
	}
	pthread_mutex_lock(&c->lock);
	free_now = !s->unfin || (!r->is_root && r->m->took);
	if (free_now && !r->is_root)
		s->unfin++;
	pthread_mutex_unlock(&c->lock);
	if (!free_now)
		return 0;
	r->m->took = 1;
	ret = seg_window(c, r);
	if (ret) {
		seg_fail(c, r, strerror(-ret));
		return -1;
	}
	return 1;
}

static int seg_bcast(struct triad_coll_component *c, triad_coll_req_t *r)
{
	int ret = group_bcast(c, r);

	if (ret) {
		seg_fail(c, r, strerror(-ret));
		return -1;
	}
	return 0;
}

/* Advances r as far as it goes now: 1 when it is over (done or failed). */
static int advance(struct triad_coll_component *c, triad_coll_req_t *r)
{
	triad_coll_module_t *m = r->m;
	enum triad_status st;
	int ret, n, started;

	for (;;) {
		switch (r->st) {
		case SEG_SLOT:
			ret = seg_take(c, r);
			if (ret < 0)
				return 1;
			if (!ret)
				break;
			if (r->is_root) {
				if (!r->d.contig)
					data_move(&r->d, 1, r->slot->buf, r->len);
				seg_state(c, r, SEG_READY_WAIT);
			} else if (seg_bcast(c, r)) {
				return 1;
			} else {
				seg_state(c, r, SEG_READY_SEND);
			}
			continue;
		case SEG_READY_SEND:
			ret = hs_send(c, m->world_rank[r->root], HS_READY, m->cid, r->seq);
			if (ret == -EAGAIN)
				break;
			if (ret) {
				seg_fail(c, r, strerror(-ret));
				return 1;
			}
			seg_state(c, r, SEG_BCAST);
			continue;
		case SEG_READY_WAIT:
			/* Started here once every READY came, unless the last
			 * one started it where it arrived (ready_start). */
			pthread_mutex_lock(&c->lock);
			started = r->hstarted;
			ret = r->hret;
			r->hstarted = 0;
			n = r->slot->ready_seq == r->seq ? r->slot->nready : 0;
			if (started || n == m->size - 1) {
				r->slot->waiting = NULL;
				if (!started)
					r->slot->nready = 0;
			} else {
				r->slot->waiting = r;
			}
			pthread_mutex_unlock(&c->lock);
			if (started && ret) {
				seg_fail(c, r, strerror(-ret));
				return 1;
			}
			if (!started && n < m->size - 1)
				break;
			if (!started && seg_bcast(c, r))
				return 1;
			seg_state(c, r, SEG_BCAST);
			continue;
		case SEG_BCAST:
			if (!triad_test(r->treq))
				break;
			st = triad_req_status(r->treq);
			if (st != TRIAD_S_OK) {
				/* A group rank: the communicator's. */
				int failed = triad_req_failed_rank(r->treq);
				char why[96];

				snprintf(why, sizeof(why), "%s (rank %d)", triad_status_str(st),
					 failed >= 0 ? m->world_rank[failed] : -1);
				seg_fail(c, r, why);
				return 1;
			}
			triad_req_free(r->treq);
			r->treq = NULL;
			if (!r->is_root && !r->d.contig)
				data_move(&r->d, 0, r->slot->buf, r->len);
			seg_unwindow(c, r);
			if (r->is_root) {
				r->fin_to = 0;
				seg_state(c, r, SEG_FIN_SEND);
				continue;
			}
			if (seg_next(c, r))
				return 1;
			continue;
		case SEG_FIN_SEND:
			for (ret = 0; r->fin_to < m->size && ret != -EAGAIN; r->fin_to++) {
				if (r->fin_to == r->root)
					continue;
				ret = hs_send(c, m->world_rank[r->fin_to], HS_FIN, m->cid, r->seq);
				if (ret == -EAGAIN)
					r->fin_to--; /* the same rank again */
				/* One that cannot go: that rank's next segment
				 * as a root (or a later communicator's first)
				 * fails on its timeout; this one is over
				 * everywhere. */
				else if (ret)
					opal_output(0, "coll/triad: FIN of segment %u to rank %d: "
						    "%s", r->seq, m->world_rank[r->fin_to],
						    strerror(-ret));
			}
			if (ret == -EAGAIN)
				break;
			if (seg_next(c, r))
				return 1;
			continue;
		}
		if (now_ns() > r->deadline) {
			seg_fail(c, r, "timed out (coll_triad_timeout_ms)");
			return 1;
		}
		return 0;
	}
}

int triad_coll_progress(void)
{
	struct triad_coll_component *c = &mca_coll_triad_component;
	triad_coll_module_t **pm = &c->busy, *m;
	int done = 0;

	if (!c->busy)
		return 0;
	/* The handshake's messages are handled here, at once: a thread that
	 * keeps calling triad is left to poll by triad's own progress thread. */
	triad_progress(c->ctx);
	while ((m = *pm)) {
		triad_coll_req_t *r;
		int over = 0;

		while ((r = m->head) && advance(c, r)) {
			m->head = r->next;
			data_close(&r->d);
			if (r->super.super.req_status.MPI_ERROR == MPI_SUCCESS) {
				c->served++;
				c->bytes += r->total;
			}
			r->m = NULL;
			ompi_request_complete(&r->super.super, true);
			over++;
		}
		if (m->head) {
			pm = &m->next_busy;
		} else {
			*pm = m->next_busy;
			m->next_busy = NULL;
			m->tail = NULL;
		}
		done += over;
		/* Each request held its communicator: the last reference frees
		 * the communicator, its module and its context id. */
		for (struct ompi_communicator_t *comm = m->comm; over--;)
			OBJ_RELEASE(comm);
	}
	return done;
}

/* ---- requests ------------------------------------------------------------------- */

/* As Open MPI's other non-blocking collectives (coll/libnbc): an active one
 * cannot be freed, none cancelled. */
static int req_free(ompi_request_t **req_p)
{
	triad_coll_req_t *r = (triad_coll_req_t *)*req_p;

	if (!REQUEST_COMPLETE(&r->super.super))
		return MPI_ERR_REQUEST;
	OMPI_REQUEST_FINI(&r->super.super);
	OBJ_RELEASE(r);
	*req_p = MPI_REQUEST_NULL;
	return OMPI_SUCCESS;
}

static int req_cancel(ompi_request_t *req, int complete)
{
	(void)req;
	(void)complete;
	return MPI_ERR_REQUEST;
}

/* Bytes of the broadcast, or 0 when handed back. */
static size_t served_bytes(triad_coll_module_t *m, int count, struct ompi_datatype_t *dtype)
{
	struct triad_coll_component *c = &mca_coll_triad_component;
	size_t size, total;

	ompi_datatype_type_size(dtype, &size);
	total = size * (size_t)(count > 0 ? count : 0);
	if (c->state != TRIAD_COLL_UP || !m->group || total == 0 || total < c->min_size)
		return 0;
	return total;
}

/* Queues a broadcast of total bytes and starts it; NULL: no memory. */
static triad_coll_req_t *start(triad_coll_module_t *m, void *buf, int count,
			       struct ompi_datatype_t *dtype, int root, size_t total,
			       struct ompi_communicator_t *comm)
{
	struct triad_coll_component *c = &mca_coll_triad_component;
	triad_coll_req_t *r = OBJ_NEW(triad_coll_req_t);
	ompi_request_t *req;

	if (!r)
		return NULL;
	pthread_mutex_lock(&c->lock);
	r->slot = slot_get(c, m->cid, 1);
	pthread_mutex_unlock(&c->lock);
	if (!r->slot) {
		OBJ_RELEASE(r);
		return NULL;
	}
	req = &r->super.super;
	OMPI_REQUEST_INIT(req, false);
	req->req_state = OMPI_REQUEST_ACTIVE;
	req->req_type = OMPI_REQUEST_COLL;
	req->req_free = req_free;
	req->req_cancel = req_cancel;
	req->req_status.MPI_ERROR = MPI_SUCCESS;
	req->req_status._cancelled = 0;
	req->req_mpi_object.comm = comm;
	/* Its context id is not reused, and so neither its triad group id nor
	 * its window, before it is over here. */
	OBJ_RETAIN(comm);
	r->m = m;
	r->root = root;
	r->is_root = m->rank == root;
	r->total = total;
	data_open(&r->d, buf, count, dtype, r->is_root);
	(void)seg_next(c, r); /* the first segment (off + len is 0, total > 0) */
	opal_output_verbose(2, c->output, "coll/triad: %zu bytes from %d (world %d) on %s", total,
			    root, m->world_rank[root], comm->c_name);
	if (m->tail) {
		m->tail->next = r;
	} else {
		m->head = r;
		m->next_busy = c->busy;
		c->busy = m;
	}
	m->tail = r;
	/* The root packs its first segment now, while the caller computes. */
	(void)triad_coll_progress();
	return r;
}

int triad_coll_ibcast(void *buf, int count, struct ompi_datatype_t *dtype, int root,
		      struct ompi_communicator_t *comm, ompi_request_t **request,
		      mca_coll_base_module_t *module)
{
	triad_coll_module_t *m = (triad_coll_module_t *)module;
	size_t total = served_bytes(m, count, dtype);
	triad_coll_req_t *r;

	if (!total) {
		mca_coll_triad_component.handed_back++;
		return m->prev_ibcast(buf, count, dtype, root, comm, request,
				      m->prev_ibcast_module);
	}
	r = start(m, buf, count, dtype, root, total, comm);
	if (!r)
		return OMPI_ERR_OUT_OF_RESOURCE;
	*request = &r->super.super;
	return OMPI_SUCCESS;
}

/* MPI_Bcast's wait.  ompi_request_wait_completion would spin in
 * opal_progress, polling triad at every turn: triad's progress thread
 * then leaves the completions to this thread, and ranks that spin on
 * shared CPUs (four on the test VM's two) serve and forward a broadcast's
 * copies only when the scheduler runs them.  While a segment's data is
 * under way (most of a large broadcast), when it is all this component
 * has under way, the thread sleeps in triad_wait instead, as a blocking
 * triad_bcast does (and this component's MPI_Bcast did before
 * MPI_Ibcast): triad's progress thread serves the copies and wakes it.
 * Open MPI's own progress still runs every WAIT_SLICE_MS.  A step of the
 * handshake that waits for another rank (its window, the READYs: a rank
 * still busy with what came before) spins WAIT_SPIN_NS, as triad's waits
 * do, then looks every WAIT_NAP_NS: a root that spun there took the CPU
 * from the ranks it waited for. */
#define WAIT_SLICE_MS 10
#define WAIT_SPIN_NS 200000ull
#define WAIT_NAP_NS 100000

static void bcast_wait(struct triad_coll_component *c, ompi_request_t *req)
{
	static const struct timespec nap = { .tv_nsec = WAIT_NAP_NS };

	while (!REQUEST_COMPLETE(req)) {
		triad_coll_module_t *m = c->busy;
		triad_coll_req_t *h = m && !m->next_busy ? m->head : NULL;

		if (h && h->st == SEG_BCAST && h->treq)
			(void)triad_wait(h->treq, WAIT_SLICE_MS);
		else if (h && (h->st == SEG_SLOT || h->st == SEG_READY_WAIT) &&
			 now_ns() - h->since > WAIT_SPIN_NS)
			nanosleep(&nap, NULL);
		opal_progress();
	}
}

int triad_coll_bcast(void *buf, int count, struct ompi_datatype_t *dtype, int root,
		     struct ompi_communicator_t *comm, mca_coll_base_module_t *module)
{
	triad_coll_module_t *m = (triad_coll_module_t *)module;
	size_t total = served_bytes(m, count, dtype);
	ompi_request_t *req;
	int ret;

	if (!total) {
		mca_coll_triad_component.handed_back++;
		return m->prev_bcast(buf, count, dtype, root, comm, m->prev_bcast_module);
	}
	/* After the communicator's non-blocking ones, as MPI orders them. */
	req = (ompi_request_t *)start(m, buf, count, dtype, root, total, comm);
	if (!req)
		return OMPI_ERR_OUT_OF_RESOURCE;
	bcast_wait(&mca_coll_triad_component, req);
	ret = req->req_status.MPI_ERROR;
	req_free(&req);
	return ret;
}
