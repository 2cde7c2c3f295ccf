/* Launch by a PMIx launcher (Open MPI's mpirun, prterun, srun --mpi=pmix):
 * rank, size and every rank's plane addresses come from the launcher
 * instead of a world file.
 *
 * Each rank puts its address blob (proto/addr) under a triad key, commits,
 * takes part in a fence that collects everybody's data, then reads its
 * peers' blobs.  The job key is the namespace's: two jobs never connect.
 * PMIx_Init and PMIx_Finalize are reference-counted by the client library,
 * so MPI in the same process may use the same client before or after us. */
#include "core/ctx.h"
#include "core/pmix.h"

#include <arpa/inet.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "base/log.h"
#include "proto/addr.h"

int tr_pmix_launched(void)
{
	return getenv("PMIX_RANK") && getenv("PMIX_NAMESPACE");
}

#ifdef TRIAD_HAVE_PMIX
#include <pmix.h>

#define TR_PMIX_KEY "triad.addr.v1"

struct tr_pmix {
	pmix_proc_t me;
};

static int job_size(const pmix_proc_t *me, int *size_p)
{
	pmix_proc_t wild;
	pmix_value_t *v = NULL;
	pmix_status_t rc;

	PMIX_LOAD_PROCID(&wild, me->nspace, PMIX_RANK_WILDCARD);
	rc = PMIx_Get(&wild, PMIX_JOB_SIZE, NULL, 0, &v);
	if (rc != PMIX_SUCCESS || !v) {
		tr_error("PMIx: no job size: %s", PMIx_Error_string(rc));
		return -EPROTO;
	}
	if (v->type != PMIX_UINT32 || v->data.uint32 < 1 ||
	    v->data.uint32 > TR_WORLD_MAX_RANKS) {
		tr_error("PMIx: job size is not 1..%d", TR_WORLD_MAX_RANKS);
		PMIX_VALUE_RELEASE(v);
		return -EPROTO;
	}
	*size_p = (int)v->data.uint32;
	PMIX_VALUE_RELEASE(v);
	return 0;
}

static int local_rank_of(const pmix_proc_t *me)
{
	pmix_value_t *v = NULL;
	int lr = 0;

	if (PMIx_Get(me, PMIX_LOCAL_RANK, NULL, 0, &v) == PMIX_SUCCESS && v) {
		if (v->type == PMIX_UINT16)
			lr = v->data.uint16;
		PMIX_VALUE_RELEASE(v);
	}
	return lr;
}

int tr_pmix_init(struct triad_ctx *ctx, int *local_rank)
{
	struct tr_pmix *px = calloc(1, sizeof(*px));
	pmix_status_t rc;
	int ret;

	if (!px)
		return -ENOMEM;
	rc = PMIx_Init(&px->me, NULL, 0);
	if (rc != PMIX_SUCCESS) {
		tr_debug("PMIx_Init: %s: falling back to the world file", PMIx_Error_string(rc));
		free(px);
		return -ENOTSUP;
	}
	ctx->pmix = px;
	ret = job_size(&px->me, &ctx->size);
	if (ret)
		return ret;
	if (px->me.rank >= (pmix_rank_t)ctx->size) {
		tr_error("PMIx: rank %u of a job of %d", px->me.rank, ctx->size);
		return -EPROTO;
	}
	ctx->rank = (int)px->me.rank;
	*local_rank = local_rank_of(&px->me);
	ctx->job_key = tr_job_key(px->me.nspace);
	tr_debug("PMIx: rank %d of %d in namespace %s", ctx->rank, ctx->size, px->me.nspace);
	return 0;
}

static int publish(const struct tr_addr_blob *mine)
{
	uint8_t buf[TR_ADDR_BLOB_MAX];
	pmix_value_t v;
	pmix_status_t rc;
	int n = tr_addr_blob_encode(buf, mine);

	if (n < 0)
		return n;
	PMIX_VALUE_CONSTRUCT(&v);
	v.type = PMIX_BYTE_OBJECT;
	v.data.bo.bytes = (char *)buf;
	v.data.bo.size = (size_t)n;
	rc = PMIx_Put(PMIX_GLOBAL, TR_PMIX_KEY, &v); /* copies the bytes */
	if (rc == PMIX_SUCCESS)
		rc = PMIx_Commit();
	if (rc != PMIX_SUCCESS) {
		tr_error("PMIx: cannot publish this rank's addresses: %s", PMIx_Error_string(rc));
		return -EPROTO;
	}
	return 0;
}

/* Every rank's data reaches every rank: after this, PMIx_Get is local. */
static int fence(const pmix_proc_t *me)
{
	pmix_proc_t wild;
	pmix_info_t info;
	bool collect = true;
	pmix_status_t rc;

	PMIX_LOAD_PROCID(&wild, me->nspace, PMIX_RANK_WILDCARD);
	PMIX_INFO_CONSTRUCT(&info);
	PMIX_INFO_LOAD(&info, PMIX_COLLECT_DATA, &collect, PMIX_BOOL);
	rc = PMIx_Fence(&wild, 1, &info, 1);
	PMIX_INFO_DESTRUCT(&info);
	if (rc != PMIX_SUCCESS) {
		tr_error("PMIx_Fence: %s", PMIx_Error_string(rc));
		return -EPROTO;
	}
	return 0;
}

static int peer_blob(const pmix_proc_t *me, int rank, struct tr_addr_blob *b)
{
	pmix_proc_t peer;
	pmix_value_t *v = NULL;
	pmix_status_t rc;
	int ret;

	PMIX_LOAD_PROCID(&peer, me->nspace, (pmix_rank_t)rank);
	rc = PMIx_Get(&peer, TR_PMIX_KEY, NULL, 0, &v);
	if (rc != PMIX_SUCCESS || !v) {
		tr_error("PMIx: rank %d published no triad addresses (%s): is it a triad "
			 "process of the same version?", rank, PMIx_Error_string(rc));
		return -EPROTO;
	}
	if (v->type != PMIX_BYTE_OBJECT)
		ret = -EBADMSG;
	else
		ret = tr_addr_blob_decode((const uint8_t *)v->data.bo.bytes, v->data.bo.size, b);
	PMIX_VALUE_RELEASE(v);
	if (ret)
		tr_error("PMIx: rank %d's addresses: %s", rank,
			 ret == -EPROTONOSUPPORT ? "another version of triad" : "malformed");
	return ret ? -EPROTO : 0;
}

/* A peer's blob must fit ours: the same number of planes. */
static int check_fits(int rank, const struct tr_addr_blob *b, const struct tr_addr_blob *mine)
{
	if (b->nplanes != mine->nplanes) {
		tr_error("PMIx: rank %d has %d planes, this rank %d (TRIAD_DEVICES must name as "
			 "many devices on every rank)", rank, b->nplanes, mine->nplanes);
		return -EINVAL;
	}
	return 0;
}

int tr_pmix_exchange(struct triad_ctx *ctx, const struct tr_addr_blob *mine)
{
	struct tr_world *w = &ctx->world;
	int ret = publish(mine);

	if (!ret)
		ret = fence(&ctx->pmix->me);
	if (ret)
		return ret;
	w->addr = calloc((size_t)ctx->size, sizeof(*w->addr));
	w->ports = calloc((size_t)ctx->size, sizeof(*w->ports));
	if (!w->addr || !w->ports)
		return -ENOMEM;
	w->size = ctx->size;
	w->nplanes = mine->nplanes;
	w->port = mine->port;
	w->key = ctx->job_key;
	for (int r = 0; r < ctx->size; r++) {
		struct tr_addr_blob b;

		if (r == ctx->rank)
			b = *mine;
		else if ((ret = peer_blob(&ctx->pmix->me, r, &b)) || (ret = check_fits(r, &b, mine)))
			return ret;
		memcpy(w->addr[r], b.addr, sizeof(b.addr[0]) * (size_t)b.nplanes);
		w->ports[r] = b.port;
	}
	return 0;
}

void tr_pmix_fini(struct triad_ctx *ctx)
{
	pmix_status_t rc;

	if (!ctx->pmix)
		return;
	rc = PMIx_Finalize(NULL, 0);
	if (rc != PMIX_SUCCESS)
		tr_debug("PMIx_Finalize: %s", PMIx_Error_string(rc));
	free(ctx->pmix);
	ctx->pmix = NULL;
}

#else /* built without libpmix */

int tr_pmix_init(struct triad_ctx *ctx, int *local_rank)
{
	(void)ctx;
	*local_rank = 0;
	tr_debug("started by a PMIx launcher, but built without PMIx: using the world file");
	return -ENOTSUP;
}

int tr_pmix_exchange(struct triad_ctx *ctx, const struct tr_addr_blob *mine)
{
	(void)ctx;
	(void)mine;
	return -ENOTSUP;
}

void tr_pmix_fini(struct triad_ctx *ctx)
{
	(void)ctx;
}
#endif
