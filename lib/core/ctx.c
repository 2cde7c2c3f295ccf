/* The context's accessors.  triad_init and triad_fini are in init.c.  See
 * ctx.h for the layers and the locking. */
#include "core/ctx.h"

#include <errno.h>
#include <stdio.h>

#include "base/log.h"

int triad_rank(const triad_ctx_t *ctx)
{
	return ctx ? ctx->rank : -EINVAL;
}

int triad_size(const triad_ctx_t *ctx)
{
	return ctx ? ctx->size : -EINVAL;
}

int triad_nplanes(const triad_ctx_t *ctx)
{
	return ctx ? ctx->nplanes : -EINVAL;
}

void triad_config_print(FILE *out)
{
	struct tr_config cfg;
	char err[300];

	if (tr_config_load(&cfg, tr_config_getenv, NULL, err, sizeof(err))) {
		fprintf(out, "configuration error: %s\n", err);
		tr_config_load(&cfg, NULL, NULL, err, sizeof(err));
	}
	tr_config_print_table(out, &cfg);
}
