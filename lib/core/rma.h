/* Puts, gets and flushes (rma.c). */
#ifndef TRIAD_CORE_RMA_H
#define TRIAD_CORE_RMA_H

#include "core/req.h"

/* The window is known: validate and queue on the lane. */
void tr_rma_start(struct triad_req *req);
/* An internal put to another rank (req: kind PUT, peer, win, off, len,
 * buf, on_done), under the context lock: triad_put's path from the plane
 * choice on (a wait for a connection, the window's descriptor, chunks,
 * done again on a live plane when its lane breaks). */
void tr_rma_put_internal(struct triad_ctx *ctx, struct triad_req *req);
/* Once the planes are open: its state (the per-plane registration caches,
 * TRIAD_REG_CACHE, and each peer's flush epochs), the completion of puts
 * and gets (their registration released, their flush epoch told), and the
 * peer hook of those that wait for a connection.  0, -ENOMEM, -ENOSPC. */
int tr_rma_setup(struct triad_ctx *ctx);
/* At close: peer's flush epochs (what is left of them at triad_fini);
 * then (teardown) the caches and the state. */
void tr_rma_peer_free(struct triad_ctx *ctx, int peer);
void tr_rma_teardown(struct triad_ctx *ctx);
/* Connect on first use: req waits on its peer's await_rma (the peer hook
 * await lets it go or fail). */
void tr_rma_await(struct triad_ctx *ctx, struct triad_req *req);

#endif
