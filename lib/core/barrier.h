/* The barrier (barrier.c). */
#ifndef TRIAD_CORE_BARRIER_H
#define TRIAD_CORE_BARRIER_H

#include "core/ctx.h"

/* The barrier (barrier.c).  Setup: its state and messages. */
int tr_barrier_setup(struct triad_ctx *ctx);
void tr_barrier_teardown(struct triad_ctx *ctx);

#endif
