/* Launch by a PMIx launcher (pmix.c): rank, size, job key and the world's
 * addresses from the launcher instead of a world file. */
#ifndef TRIAD_CORE_PMIX_H
#define TRIAD_CORE_PMIX_H

struct triad_ctx;
struct tr_addr_blob;

/* 1 when PMIX_RANK and PMIX_NAMESPACE are in the environment: only then is
 * PMIx_Init worth its cost. */
int tr_pmix_launched(void);
/* PMIx_Init, then rank, size and job key into ctx, and the rank's index
 * among those of its node (PMIX_LOCAL_RANK, 0 when the launcher does not
 * say) into *local_rank.  -ENOTSUP when PMIx
 * cannot start (no server, or built without PMIx: the caller falls back
 * to the world file); another negative errno (logged) when it started but
 * told something unusable. */
int tr_pmix_init(struct triad_ctx *ctx, int *local_rank);
/* Publishes mine (this rank's planes), fences with data collection and
 * fills ctx->world with every rank's addresses.  Collective: every rank
 * of the job calls it.  0, or a negative errno (logged). */
int tr_pmix_exchange(struct triad_ctx *ctx, const struct tr_addr_blob *mine);
/* PMIx_Finalize, when tr_pmix_init succeeded (refcounted by the client). */
void tr_pmix_fini(struct triad_ctx *ctx);

#endif
