/* Active messages (am.c). */
#ifndef TRIAD_CORE_AM_H
#define TRIAD_CORE_AM_H

#include "core/ctx.h"

/* Active messages (am.c).  Setup: the handlers' table, the AM message and
 * the peer hook (early messages go once the numbers before them came). */
int tr_am_setup(struct triad_ctx *ctx);
void tr_am_teardown(struct triad_ctx *ctx);

#endif
