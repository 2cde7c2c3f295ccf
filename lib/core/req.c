/* Requests: the one constructor and its per-thread cache, completion, the
 * public request API (test, wait, status, free) and the status names.
 * Below the features: a feature that owns a kind of request registers what
 * its completion adds (tr_req_kind_done: the copy engine's chunks and
 * lookups, the flush epochs of puts and gets, and the bytes each counts
 * on its lane). */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>

#include "core/progress.h"
#include "core/req.h"

static const char *const status_names[TRIAD_S_MAX] = {
	[TRIAD_S_OK] = "ok",
	[TRIAD_S_PENDING] = "pending",
	[TRIAD_S_NO_WINDOW] = "no such window",
	[TRIAD_S_OUT_OF_BOUNDS] = "out of the window's bounds",
	[TRIAD_S_ACCESS] = "access not allowed by the window",
	[TRIAD_S_REMOTE_ACCESS] = "remote access error",
	[TRIAD_S_PLANE_DOWN] = "plane down",
	[TRIAD_S_UNREACHABLE] = "peer unreachable",
	[TRIAD_S_TRANSPORT] = "transport error",
	[TRIAD_S_TIMEOUT] = "timed out",
	[TRIAD_S_NO_MEMORY] = "out of memory",
	[TRIAD_S_CANCELLED] = "cancelled",
};

const char *triad_status_str(enum triad_status s)
{
	return (unsigned)s < TRIAD_S_MAX ? status_names[s] : "unknown status";
}

/* ---- requests: a small cache per thread -------------------------------------------*/
/* A put allocates a request and its owner frees it, usually in the same
 * thread: calloc and free were a fifth of the instructions of a small put
 * (callgrind, bench/icount).  Freed requests are kept per
 * thread, up to REQ_CACHE, and handed out again by the same thread; no
 * context is involved, so a request may still be freed after triad_fini.
 * A thread's cache is freed when it exits. */
#define REQ_CACHE 64

struct req_cache {
	struct triad_req *head; /* linked through ->ctx while cached */
	unsigned n;
	int keyed; /* its thread frees it at exit (req_cache_key is set) */
};

/* initial-exec: the cache is reached without a __tls_get_addr call (about
 * 40 instructions a put with its free); a library loaded at start-up, as
 * libtriad is, has its TLS in the static block. */
static __thread struct req_cache req_cache __attribute__((tls_model("initial-exec")));
static pthread_key_t req_cache_key;
static pthread_once_t req_cache_once = PTHREAD_ONCE_INIT;
static int req_cache_key_ok;

static void req_cache_drop(void *arg)
{
	struct req_cache *c = arg;

	while (c->head) {
		struct triad_req *req = c->head;

		c->head = (struct triad_req *)(void *)req->ctx;
		free(req);
	}
	c->n = 0;
	c->keyed = 0;
}

static void req_cache_init(void)
{
	req_cache_key_ok = !pthread_key_create(&req_cache_key, req_cache_drop);
}

void tr_req_free(struct triad_req *req)
{
	struct req_cache *c = &req_cache;

	if (c->n >= REQ_CACHE) {
		free(req);
		return;
	}
	if (!c->keyed) { /* the thread's first: free its cache when it exits */
		pthread_once(&req_cache_once, req_cache_init);
		if (!req_cache_key_ok || pthread_setspecific(req_cache_key, c)) {
			free(req);
			return;
		}
		c->keyed = 1;
	}
	req->ctx = (struct triad_ctx *)(void *)c->head;
	c->head = req;
	c->n++;
}

struct triad_req *tr_req_new(struct triad_ctx *ctx, enum tr_req_kind kind, int peer)
{
	struct req_cache *c = &req_cache;
	struct triad_req *req = c->head;

	if (req) {
		c->head = (struct triad_req *)(void *)req->ctx;
		c->n--;
	} else if (!(req = malloc(sizeof(*req)))) {
		return NULL;
	}
	tr_req_init(req, ctx, kind, peer);
	return req;
}

void tr_req_kind_done(struct triad_ctx *ctx, enum tr_req_kind kind, tr_req_fn fn)
{
	ctx->req_done[kind] = fn;
}

void tr_req_finish(struct triad_req *req, enum triad_status st)
{
	req->status = st;
	if (req->on_done) /* internal: the owner takes it from here */
		req->on_done(req);
	else if (req->flags & TR_F_NO_REQ) /* nobody holds it: a flush reports its error */
		tr_req_free(req);
	else
		atomic_store_explicit(&req->done, 1, memory_order_release);
}

void tr_req_complete(struct triad_req *req, enum triad_status st)
{
	struct triad_ctx *ctx = req->ctx;
	tr_req_fn done;

	done = ctx->req_done[req->kind];
	if (done) { /* its kind's owner takes it from here */
		done(req, st);
		return;
	}
	tr_req_finish(req, st);
	tr_ctx_signal(ctx);
}

/* ---- the public request API -------------------------------------------------------*/
static int req_done(void *arg)
{
	struct triad_req *req = arg;

	return atomic_load_explicit(&req->done, memory_order_acquire);
}

int triad_test(triad_req_t *req)
{
	if (!req)
		return -EINVAL;
	if (req_done(req))
		return 1;
	tr_ctx_lock(req->ctx);
	tr_progress_app(req->ctx);
	pthread_mutex_unlock(&req->ctx->lock);
	return req_done(req);
}

int triad_wait(triad_req_t *req, int timeout_ms)
{
	if (!req)
		return -EINVAL;
	if (req_done(req))
		return 0;
	return tr_wait_until(req->ctx, req_done, req, timeout_ms);
}

enum triad_status triad_req_status(const triad_req_t *req)
{
	if (!req)
		return TRIAD_S_PENDING;
	return atomic_load_explicit(&((triad_req_t *)req)->done, memory_order_acquire)
		       ? req->status : TRIAD_S_PENDING;
}

int triad_req_free(triad_req_t *req)
{
	if (!req)
		return 0;
	if (!req_done(req))
		return -EBUSY;
	tr_req_free(req);
	return 0;
}
