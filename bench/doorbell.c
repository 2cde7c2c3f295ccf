/* doorbell.so: how long a process's posts spend in the kernel, and how long
 * it spends between them, without a tracer.
 *
 * On rxe a post is a write() of a POST_SEND command to the device's uverbs
 * file (librxe rings its doorbell with zero work requests; the kernel then
 * runs the send queue, and for a small READ or WRITE the whole round trip,
 * inside that call).  Preloaded into a benchmark's client, this library
 * times every such write() with the TSC and, at exit, writes one line:
 *
 *   posts N post_us P25 P50 P75 MEAN between_us P25 P50 P75 MEAN
 *
 * over the middle 80 % of the posts in time order ("between": from the end
 * of one post to the start of the next, i.e. the process's own user space
 * per operation, its polls and bookkeeping, and any wait: for a stream,
 * the sum of the two means is its time per post).  The same measure for
 * perftest, UCX and triad, which all post through librxe.
 *
 * Environment: DOORBELL_OUT (the file the line goes to; unset: nothing is
 * recorded; a process that posted nothing writes nothing), DOORBELL_MHZ
 * (the TSC's rate, bench/lib.sh's bench_tsc).
 * Up to 1 << 20 posts are recorded; writes from any thread count.
 * Built by bench/run-doorbell in the VM: cc -O2 -shared -fPIC ... -ldl. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <pthread.h>
#include <rdma/ib_user_verbs.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <x86intrin.h>

#define MAX_FD 4096
#define MAX_POSTS (1u << 20)

struct post {
	uint64_t start, end;
};

static ssize_t (*real_write)(int, const void *, size_t);
static int (*real_close)(int);
static _Atomic unsigned char kind[MAX_FD]; /* 0 unknown, 1 uverbs, 2 other */
static struct post *posts;
static atomic_uint nposts;
static int enabled;
static pthread_once_t once = PTHREAD_ONCE_INIT;

/* Once, from whichever comes first: a write(), a close() or the loader. */
static void setup_once(void)
{
	real_write = (ssize_t(*)(int, const void *, size_t))dlsym(RTLD_NEXT, "write");
	real_close = (int (*)(int))dlsym(RTLD_NEXT, "close");
	enabled = getenv("DOORBELL_OUT") != NULL;
	if (enabled) {
		posts = calloc(MAX_POSTS, sizeof(*posts));
		enabled = posts != NULL;
	}
}

static void setup(void)
{
	pthread_once(&once, setup_once);
}

__attribute__((constructor)) static void at_load(void)
{
	setup();
}

static int is_uverbs(int fd)
{
	unsigned char k = atomic_load_explicit(&kind[fd], memory_order_relaxed);

	if (!k) {
		char path[64], link[256];
		ssize_t n;

		snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
		n = readlink(path, link, sizeof(link) - 1);
		link[n > 0 ? n : 0] = '\0';
		k = strncmp(link, "/dev/infiniband/uverbs", 22) ? 2 : 1;
		atomic_store_explicit(&kind[fd], k, memory_order_relaxed);
	}
	return k == 1;
}

ssize_t write(int fd, const void *buf, size_t count)
{
	const struct ib_uverbs_cmd_hdr *hdr = buf;
	uint64_t t0, t1;
	unsigned i;
	ssize_t ret;

	setup();
	if (!enabled || fd < 0 || fd >= MAX_FD || count < sizeof(*hdr) ||
	    (hdr->command & IB_USER_VERBS_CMD_COMMAND_MASK) != IB_USER_VERBS_CMD_POST_SEND ||
	    !is_uverbs(fd))
		return real_write(fd, buf, count);
	t0 = __rdtsc();
	ret = real_write(fd, buf, count);
	t1 = __rdtsc();
	i = atomic_fetch_add_explicit(&nposts, 1, memory_order_relaxed);
	if (i < MAX_POSTS)
		posts[i] = (struct post){ t0, t1 };
	return ret;
}

int close(int fd)
{
	setup();
	if (fd >= 0 && fd < MAX_FD)
		atomic_store_explicit(&kind[fd], 0, memory_order_relaxed);
	return real_close(fd);
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

static int cmp_start(const void *a, const void *b)
{
	return cmp_u64(&((const struct post *)a)->start, &((const struct post *)b)->start);
}

/* Quartiles and mean of v[0..n), in us; sorts v. */
static void quartiles(uint64_t *v, unsigned n, double mhz, double q[4])
{
	double sum = 0;

	qsort(v, n, sizeof(*v), cmp_u64);
	for (int k = 0; k < 3; k++)
		q[k] = (double)v[(size_t)n * (unsigned)(k + 1) / 4] / mhz;
	for (unsigned i = 0; i < n; i++)
		sum += (double)v[i];
	q[3] = sum / n / mhz;
}

__attribute__((destructor)) static void report(void)
{
	const char *out = getenv("DOORBELL_OUT"), *m = getenv("DOORBELL_MHZ");
	unsigned n = atomic_load(&nposts), lo, hi, k;
	double mhz = m ? atof(m) : 0, pq[4], bq[4];
	uint64_t *post, *between;
	FILE *f;

	if (!enabled || !out || !n) /* not a poster (timeout, a shell): no line */
		return;
	if (n > MAX_POSTS)
		n = MAX_POSTS;
	f = fopen(out, "w");
	if (!f)
		return;
	if (n < 20 || mhz <= 0) {
		fprintf(f, "posts %u (too few, or no DOORBELL_MHZ)\n", n);
		fclose(f);
		return;
	}
	qsort(posts, n, sizeof(*posts), cmp_start);
	lo = n / 10;
	hi = n - n / 10;
	post = calloc(hi - lo, sizeof(*post));
	between = calloc(hi - lo, sizeof(*between));
	if (post && between) {
		for (k = lo; k < hi; k++) {
			post[k - lo] = posts[k].end - posts[k].start;
			between[k - lo] = posts[k].start > posts[k - 1].end ?
						  posts[k].start - posts[k - 1].end : 0;
		}
		quartiles(post, hi - lo, mhz, pq);
		quartiles(between, hi - lo, mhz, bq);
		fprintf(f, "posts %u post_us %.2f %.2f %.2f %.2f between_us %.2f %.2f %.2f %.2f\n",
			n, pq[0], pq[1], pq[2], pq[3], bq[0], bq[1], bq[2], bq[3]);
	}
	free(post);
	free(between);
	fclose(f);
}
