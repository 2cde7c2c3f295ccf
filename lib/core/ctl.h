/* The node daemon's client (ctl.c). */
#ifndef TRIAD_CORE_CTL_H
#define TRIAD_CORE_CTL_H

#include "core/ctx.h"

/* The node daemon's client (ctl.c): connects (or keeps trying) and
 * applies the daemon's plane policy.  Setup before the progress thread
 * starts, teardown after it stopped; TRIAD_DAEMON=off: nothing. */
struct tr_ctl_client;
int tr_ctl_setup(struct triad_ctx *ctx);
void tr_ctl_teardown(struct triad_ctx *ctx);

#endif
