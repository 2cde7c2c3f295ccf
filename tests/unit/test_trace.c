/* Unit tests for the event trace (lib/base/trace.[ch]): what TRIAD_TRACE
 * writes, the ring's wrap-around, and a bad directory. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "base/log.h"
#include "base/trace.h"

static char dir[64];

static int make_dir(void **state)
{
	(void)state;
	strcpy(dir, "/tmp/triad-trace-test.XXXXXX");
	return mkdtemp(dir) ? 0 : -1;
}

static int remove_dir(void **state)
{
	char path[128];

	(void)state;
	snprintf(path, sizeof(path), "%s/triad-trace.3", dir);
	unlink(path);
	return rmdir(dir);
}

/* Reads the rank-3 file: line count, and the first and last lines. */
static long read_trace(char *first, char *last, size_t len)
{
	char path[128], line[256];
	long n = 0;
	FILE *f;

	snprintf(path, sizeof(path), "%s/triad-trace.3", dir);
	f = fopen(path, "r");
	assert_non_null(f);
	while (fgets(line, sizeof(line), f)) {
		if (!n)
			snprintf(first, len, "%s", line);
		snprintf(last, len, "%s", line);
		n++;
	}
	fclose(f);
	return n;
}

static void test_off(void **state)
{
	struct tr_trace *t = (struct tr_trace *)1;

	(void)state;
	assert_int_equal(tr_trace_open(&t, "", 0), 0);
	assert_null(t);
	tr_trace_close(NULL);
}

static void test_bad_dir(void **state)
{
	struct tr_trace *t = (struct tr_trace *)1;
	int level = tr_log_level;

	(void)state;
	tr_log_level = -1; /* the error is expected: keep the output clean */
	assert_int_equal(tr_trace_open(&t, "/nonexistent/triad", 0), -EINVAL);
	tr_log_level = level;
	assert_null(t);
}

static void test_events(void **state)
{
	struct tr_trace *t;
	char first[256], last[256], what[32];
	unsigned long long ns1, ns2;
	long a, b;
	int rank, tid;

	(void)state;
	assert_int_equal(tr_trace_open(&t, dir, 3), 0);
	assert_non_null(t);
	tr_trace_rec(t, "rx_msg", 2, 8);
	tr_trace_rec(t, "tx_write", -1, 1048576);
	tr_trace_close(t);
	assert_int_equal(read_trace(first, last, sizeof(first)), 2);
	assert_int_equal(sscanf(first, "%llu r%d t%d %31s %ld %ld", &ns1, &rank, &tid, what, &a, &b),
			 6);
	assert_int_equal(rank, 3);
	assert_int_equal(tid, (int)gettid());
	assert_string_equal(what, "rx_msg");
	assert_int_equal(a, 2);
	assert_int_equal(b, 8);
	assert_int_equal(sscanf(last, "%llu r%d t%d %31s %ld %ld", &ns2, &rank, &tid, what, &a, &b),
			 6);
	assert_string_equal(what, "tx_write");
	assert_int_equal(a, -1);
	assert_int_equal(b, 1048576);
	assert_true(ns2 >= ns1);
}

/* More events than the ring holds: the file has the last TR_TRACE_CAP, in
 * order. */
static void test_wrap(void **state)
{
	struct tr_trace *t;
	char first[256], last[256], what[32];
	unsigned long long ns;
	long a, b;
	int rank, tid;

	(void)state;
	assert_int_equal(tr_trace_open(&t, dir, 3), 0);
	for (long i = 0; i < (long)TR_TRACE_CAP + 5; i++)
		tr_trace_rec(t, "ev", i, 0);
	tr_trace_close(t);
	assert_int_equal(read_trace(first, last, sizeof(first)), TR_TRACE_CAP);
	assert_int_equal(sscanf(first, "%llu r%d t%d %31s %ld %ld", &ns, &rank, &tid, what, &a, &b),
			 6);
	assert_int_equal(a, 5);
	assert_int_equal(sscanf(last, "%llu r%d t%d %31s %ld %ld", &ns, &rank, &tid, what, &a, &b),
			 6);
	assert_int_equal(a, (long)TR_TRACE_CAP + 4);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_off),
		cmocka_unit_test(test_bad_dir),
		cmocka_unit_test(test_events),
		cmocka_unit_test(test_wrap),
	};

	return cmocka_run_group_tests(tests, make_dir, remove_dir);
}
