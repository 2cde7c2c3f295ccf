/* triad_init and triad_fini (init.c), the one file above every feature. */
#ifndef TRIAD_CORE_INIT_H
#define TRIAD_CORE_INIT_H

#include "triad.h"

/* For a host test that runs several ranks in one thread over a scripted
 * fabric (tests/host): triad_init without the progress thread, which
 * starts the connections of TRIAD_CONNECT=eager and does not wait for
 * them.  The caller drives every context (tr_progress_step, triad_progress)
 * until tr_init_connected() says 0 (every lane up or failed: the failed
 * ones are given up and retried from now on, as triad_init does), or a
 * negative errno: -EAGAIN while a lane is being set up, -ETIMEDOUT when a
 * rank is unreachable on every plane.  triad_fini closes it. */
int tr_init_driven(const struct triad_ctx_attr *attr, triad_ctx_t **ctx_p);
int tr_init_connected(triad_ctx_t *ctx);

#endif
