#include <stdarg.h>
#include <time.h>

#include "ft.h"

int ft_failures;
int ft_rank = -1;

enum triad_status ft_wait(triad_req_t *req, int timeout_ms)
{
	enum triad_status st;
	int ret = triad_wait(req, timeout_ms);

	if (ret) {
		FT_CHECK(ret == 0, "triad_wait: %s (request left pending)", strerror(-ret));
		return TRIAD_S_PENDING; /* leaked on purpose: it may still complete */
	}
	st = triad_req_status(req);
	FT_CHECK(triad_req_free(req) == 0, "triad_req_free of a complete request");
	return st;
}

double ft_now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

triad_ctx_t *ft_init(void)
{
	triad_ctx_t *ctx;
	int ret = triad_init(NULL, &ctx);

	if (ret) {
		fprintf(stderr, "triad_init: %s\n", strerror(-ret));
		exit(1);
	}
	ft_rank = triad_rank(ctx);
	return ctx;
}

void ft_barrier(triad_ctx_t *ctx)
{
	int ret = triad_barrier(ctx, 120000);

	FT_CHECK(ret == 0, "triad_barrier: %s", strerror(-ret));
}

int ft_finish(triad_ctx_t *ctx, const char *name)
{
	int rank = ft_rank;

	ft_barrier(ctx);
	triad_fini(ctx);
	if (ft_failures)
		fprintf(stderr, "rank %d: %s: %d check(s) FAILED\n", rank, name, ft_failures);
	else if (rank == 0)
		printf("%s: ok\n", name);
	return ft_failures ? 1 : 0;
}

void ft_fault_plane(triad_ctx_t *ctx, int plane, int refuse)
{
	int ret = refuse ? triad_plane_refuse_writes(ctx, plane) : triad_plane_fail(ctx, plane);

	FT_CHECK(ret == 0, "%s(%d): %s", refuse ? "triad_plane_refuse_writes" : "triad_plane_fail",
		 plane, strerror(-ret));
}

int ft_ctl(const char *fmt, ...)
{
	const char *tool = getenv("TRIAD_FABRIC_CTL");
	char args[400], cmd[1024];
	va_list ap;

	if (!tool)
		tool = "fabric-ctl"; /* the VM harness puts it on PATH */
	va_start(ap, fmt);
	vsnprintf(args, sizeof(args), fmt, ap);
	va_end(ap);
	snprintf(cmd, sizeof(cmd), "%s %s", tool, args);
	return system(cmd);
}
