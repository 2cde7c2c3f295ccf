/* Copies (copy.c). */
#ifndef TRIAD_CORE_COPY_H
#define TRIAD_CORE_COPY_H

#include "core/req.h"
#include "proto/copy.h"

/* Copies (copy.c).  Setup: the engine, the COPY message, a lost peer's
 * copies failed, the engine's deadlines (tick) and the answers it awaits,
 * the completion of its CHUNK and LOOKUP requests. */
int tr_copy_setup(struct triad_ctx *ctx);
void tr_copy_teardown(struct triad_ctx *ctx);
/* The copy engine, for a test's look at its counts. */
const struct tr_copy *tr_copy_engine(const struct triad_ctx *ctx);

/* Submit a copy with a prepared request (lock held); 0, -EAGAIN, -EINVAL. */
int tr_copy_submit(struct triad_ctx *ctx, const struct tr_copy_hdr *order, struct triad_req *req);

#endif
