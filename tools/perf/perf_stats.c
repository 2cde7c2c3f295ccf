/* Statistics of one size's samples, as perftest reports them. */
#include <math.h>
#include <stdlib.h>

#include "perf.h"

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/* Nearest-rank percentile of sorted v[0..n): the smallest sample that at
 * least p of all samples do not exceed. */
static uint64_t percentile(const uint64_t *v, size_t n, double p)
{
	size_t k = (size_t)ceil(p * (double)n);

	return v[k ? k - 1 : 0];
}

void perf_lat_summarize(uint64_t *ns, size_t n, double scale, struct perf_lat *out)
{
	double us = scale / 1000.0, sum = 0, sq = 0, avg;
	size_t i;

	*out = (struct perf_lat){ 0 };
	if (!n)
		return;
	qsort(ns, n, sizeof(*ns), cmp_u64);
	for (i = 0; i < n; i++)
		sum += (double)ns[i];
	avg = sum / (double)n;
	for (i = 0; i < n; i++)
		sq += ((double)ns[i] - avg) * ((double)ns[i] - avg);
	out->min = (double)ns[0] * us;
	out->max = (double)ns[n - 1] * us;
	out->typical = (double)ns[n / 2] * us; /* perftest's t_typical */
	out->avg = avg * us;
	out->stdev = sqrt(sq / (double)n) * us;
	out->p99 = (double)percentile(ns, n, 0.99) * us;
	out->p999 = (double)percentile(ns, n, 0.999) * us;
}

/* perftest's peak: the best rate over any run of consecutive operations,
 * min over i <= j of (tcomp[j] - tpost[i]) / (j - i + 1).  Quadratic, so
 * beyond a few thousand operations the start and end points are sampled. */
static void consider(const uint64_t *tpost, const uint64_t *tcomp, size_t i, size_t j,
		     double *best)
{
	double t = (double)(tcomp[j] - tpost[i]) / (double)(j - i + 1);

	if (t > 0 && t < *best)
		*best = t;
}

void perf_bw_summarize(const uint64_t *tpost, const uint64_t *tcomp, size_t n, size_t size,
		       struct perf_bw *out)
{
	const double mib = 1024.0 * 1024.0;
	size_t step = n / 2000 + 1, i, j;
	double best = INFINITY, total;

	*out = (struct perf_bw){ 0 };
	if (!n)
		return;
	for (i = 0; i < n; i += step) {
		for (j = i; j < n; j += step)
			consider(tpost, tcomp, i, j, &best);
		consider(tpost, tcomp, i, n - 1, &best);
	}
	total = (double)(tcomp[n - 1] - tpost[0]);
	if (total <= 0)
		return;
	out->avg_mib_s = (double)size * (double)n / (total / 1e9) / mib;
	out->mpps = (double)n / (total / 1e9) / 1e6;
	out->peak_mib_s = isfinite(best) ? (double)size / (best / 1e9) / mib : out->avg_mib_s;
}
