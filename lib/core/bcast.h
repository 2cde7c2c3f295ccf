/* Broadcasts (bcast.c). */
#ifndef TRIAD_CORE_BCAST_H
#define TRIAD_CORE_BCAST_H

#include "core/ctx.h"

/* Broadcasts (bcast.c).  Setup: the world's group, BCAST_DONE, BNODE (a
 * delegated broadcast's ORDER, REPORT or ABORT), a lost peer's broadcasts. */
int tr_bcast_setup(struct triad_ctx *ctx);
void tr_bcast_teardown(struct triad_ctx *ctx);

#endif
