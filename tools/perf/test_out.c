/* test_out: triad-perf's output layer (perf_out.c) on the host: the same
 * rows as the table, CSV and JSON Lines, the quoting of each, the OSU
 * micro-benchmarks' format, the plot's data file and gnuplot's picture,
 * and -q.  perf_out.c needs only
 * perf_err and perf_print_rule from the rest of the tool: this file
 * defines them. */
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

#include "perf.h"

void perf_err(const struct perf_run *r, const char *what, int ret)
{
	fprintf(stderr, "triad-perf: rank %d: %s: %s\n", r->rank, what, strerror(-ret));
}

void perf_print_rule(void)
{
	printf("----\n");
}

/* ---- capturing stdout or stderr ------------------------------------------------------*/
struct capture {
	FILE *stream;
	int fd, saved;
	FILE *tmp;
};

static void capture_start(struct capture *c, FILE *stream)
{
	c->stream = stream;
	c->fd = fileno(stream);
	c->tmp = tmpfile();
	assert_non_null(c->tmp);
	fflush(stream);
	c->saved = dup(c->fd);
	assert_true(c->saved >= 0);
	assert_true(dup2(fileno(c->tmp), c->fd) >= 0);
}

/* What was written since capture_start, NUL-terminated (free it). */
static char *capture_end(struct capture *c)
{
	long n;
	char *buf;

	fflush(c->stream);
	assert_true(dup2(c->saved, c->fd) >= 0);
	close(c->saved);
	n = ftell(c->tmp);
	assert_true(n >= 0);
	buf = calloc(1, (size_t)n + 1);
	assert_non_null(buf);
	rewind(c->tmp);
	assert_int_equal(fread(buf, 1, (size_t)n, c->tmp), (size_t)n);
	fclose(c->tmp);
	return buf;
}

/* ---- one run with two rows -----------------------------------------------------------*/
static const struct perf_cmd cmd = { .name = "put_lat" };

static const struct perf_plot sweep = {
	.title = "latency", .xlabel = "size", .ylabel = "us", .x = "bytes",
	.y = { "t_us", "p99_us" }, .ytitle = { "typical", "99%" }, .logy = 1,
};

static void rows(struct perf_run *r)
{
	const struct perf_field a[] = {
		PF_STR("test", NULL, 0, "put_lat"),
		PF_INT("bytes", "#bytes", 8, 64),
		PF_DBL("t_us", "t[usec]", 9, 2, 1.5),
		PF_DBL("p99_us", "99%", 7, 1, 3.25),
		PF_NULL("plane"),
		PF_STR("note", "note", 6, "a,\"b\""),
		PF_RAW("list", "[1,2]"),
		PF_BOOL("ok", 1),
	};
	const struct perf_field b[] = {
		PF_STR("test", NULL, 0, "put_lat"),
		PF_INT("bytes", "#bytes", 8, 4096),
		PF_DBL("t_us", "t[usec]", 9, 2, 10.125),
		PF_DBL("p99_us", "99%", 7, 1, 20),
		PF_INT("plane", NULL, 0, 1),
		PF_STR("note", "note", 6, "x\\y"),
		PF_RAW("list", "[]"),
		PF_BOOL("ok", 0),
	};

	perf_out_row(r, " the title\n", a, PF_N(a), &sweep);
	perf_out_row(r, " the title\n", b, PF_N(b), &sweep);
}

static char *output_of(struct perf_opts *o)
{
	struct perf_run r = { .o = o, .rank = 0 };
	struct capture c;

	o->cmd = &cmd;
	capture_start(&c, stdout);
	rows(&r);
	assert_null(r.out); /* no --plot: nothing is kept */
	return capture_end(&c);
}

static void test_table(void **state)
{
	struct perf_opts o = { .format = PERF_FMT_TABLE };
	char *out = output_of(&o);

	(void)state;
	/* Rule, title, rule and header once; only columns with a head;
	 * numbers right-aligned, strings left-aligned in their width. */
	assert_string_equal(out, "----\n"
				 " the title\n"
				 "----\n"
				 "   #bytes   t[usec]     99% note  \n"
				 "       64      1.50     3.2 a,\"b\" \n"
				 "     4096     10.12    20.0 x\\y   \n");
	free(out);
}

static void test_csv(void **state)
{
	struct perf_opts o = { .format = PERF_FMT_CSV };
	char *out = output_of(&o);

	(void)state;
	/* Every field under its key; a comma or quote quotes, quotes double,
	 * null is empty, raw JSON with a comma is quoted. */
	assert_string_equal(out, "test,bytes,t_us,p99_us,plane,note,list,ok\n"
				 "put_lat,64,1.50,3.2,,\"a,\"\"b\"\"\",\"[1,2]\",true\n"
				 "put_lat,4096,10.12,20.0,1,x\\y,[],false\n");
	free(out);
}

static void test_json(void **state)
{
	struct perf_opts o = { .format = PERF_FMT_JSON };
	char *out = output_of(&o);

	(void)state;
	/* JSON Lines: one object per row; quotes and backslashes escaped,
	 * raw values as they are. */
	assert_string_equal(out,
			    "{\"test\":\"put_lat\",\"bytes\":64,\"t_us\":1.50,\"p99_us\":3.2,"
			    "\"plane\":null,\"note\":\"a,\\\"b\\\"\",\"list\":[1,2],\"ok\":true}\n"
			    "{\"test\":\"put_lat\",\"bytes\":4096,\"t_us\":10.12,\"p99_us\":20.0,"
			    "\"plane\":1,\"note\":\"x\\\\y\",\"list\":[],\"ok\":false}\n");
	free(out);
}

/* --duration's probe runs (r->silent): no header, no row, nothing kept for
 * --plot; the first row after them gets the header. */
static void test_silent(void **state)
{
	struct perf_opts o = { .format = PERF_FMT_CSV, .cmd = &cmd, .plot_file = "x.png" };
	struct perf_run r = { .o = &o, .rank = 0, .silent = 1 };
	struct capture c;
	char *out;

	(void)state;
	capture_start(&c, stdout);
	rows(&r);
	out = capture_end(&c);
	assert_string_equal(out, "");
	assert_null(r.out);
	assert_int_equal(r.header_done, 0);
	free(out);
}

/* ---- --format osu --------------------------------------------------------------------*/
/* Two rows of test (with the keys the real tests give their figures)
 * printed in the OSU format; the output (free it). */
static char *osu_output_of(const char *test)
{
	struct perf_cmd c = { .name = test };
	struct perf_opts o = { .format = PERF_FMT_OSU, .cmd = &c, .window = 64 };
	struct perf_run r = { .o = &o, .rank = 0, .npairs = 4 };
	struct capture cap;

	capture_start(&cap, stdout);
	for (int i = 0; i < 2; i++) {
		const struct perf_field f[] = {
			PF_STR("test", NULL, 0, test),
			PF_INT("bytes", "#bytes", 8, i ? 1048576 : 2),
			PF_DBL("t_typical_us", "t_typical[usec]", 16, 2, 99.0),
			PF_DBL("t_avg_us", "t_avg[usec]", 12, 2, i ? 1234.567 : 1.125),
			PF_DBL("bw_peak_mib_s", "BW peak[MiB/s]", 18, 3, 99.0),
			PF_DBL("bw_avg_mib_s", "BW average[MiB/s]", 20, 3, i ? 1000.0 : 0.5),
			PF_DBL("msg_rate_per_s", NULL, 0, 2, i ? 1000.0 : 250000.0),
		};

		perf_out_row(&r, " the title\n", f, PF_N(f), NULL);
	}
	return capture_end(&cap);
}

/* Each test as its OSU benchmark prints: the header line and columns, then
 * "%-10d%20.2f" rows of the mean (t_avg_us; the median t_typical_us
 * nowhere) or of the bandwidth, MiB/s made OSU's MB/s (10^6 B/s: 0.5 ->
 * 0.52, 1000 -> 1048.58). */
#define LAT_ROWS "2                         1.12\n1048576                1234.57\n"
#define BW_ROWS "2                         0.52\n1048576                1048.58\n"
#define LAT_COLS "# Size            Latency (us)\n"
#define BW_COLS "# Size        Bandwidth (MB/s)\n"
#define OSU_HEAD(title, test, bench) \
	"# " title " v" PERF_OSU_VERSION "\n# triad-perf " test ", in " bench "'s format\n"

static void test_osu(void **state)
{
	static const struct {
		const char *test, *out;
	} want[] = {
		{ "am_lat", OSU_HEAD("OSU MPI Latency Test", "am_lat", "osu_latency") LAT_COLS LAT_ROWS },
		{ "am_bw", OSU_HEAD("OSU MPI Bandwidth Test", "am_bw", "osu_bw") BW_COLS BW_ROWS },
		{ "am_bibw", OSU_HEAD("OSU MPI Bi-Directional Bandwidth Test", "am_bibw", "osu_bibw")
				     BW_COLS BW_ROWS },
		{ "put_lat", OSU_HEAD("OSU MPI_Put Latency Test", "put_lat", "osu_put_latency")
				     LAT_COLS LAT_ROWS },
		/* OSU's own spelling: "latency". */
		{ "get_lat", OSU_HEAD("OSU MPI_Get latency Test", "get_lat", "osu_get_latency")
				     LAT_COLS LAT_ROWS },
		{ "put_bw", OSU_HEAD("OSU MPI_Put Bandwidth Test", "put_bw", "osu_put_bw")
				    BW_COLS BW_ROWS },
		{ "put_bw_unreg", OSU_HEAD("OSU MPI_Put Bandwidth Test", "put_bw_unreg", "osu_put_bw")
					  BW_COLS BW_ROWS },
		{ "get_bw", OSU_HEAD("OSU MPI_Get Bandwidth Test", "get_bw", "osu_get_bw")
				    BW_COLS BW_ROWS },
		/* Both directions summed: the row's bw_avg_mib_s already is. */
		{ "put_bibw", OSU_HEAD("OSU MPI_Put Bi-directional Bandwidth Test", "put_bibw",
				       "osu_put_bibw") BW_COLS BW_ROWS },
		/* osu_mbw_mr: its pairs line, then MB/s and messages/s. */
		{ "put_mbw", OSU_HEAD("OSU MPI Multiple Bandwidth / Message Rate Test", "put_mbw",
				      "osu_mbw_mr")
		  "# [ pairs: 4 ] [ window size: 64 ]\n"
		  "# Size" "                    MB/s" "          Messages/s\n"
		  "2                         0.52           250000.00\n"
		  "1048576                1048.58             1000.00\n" },
		{ "bcast", OSU_HEAD("OSU MPI Broadcast Latency Test", "bcast", "osu_bcast")
				   "# Size         Avg Latency(us)\n" LAT_ROWS },
	};

	(void)state;
	for (size_t i = 0; i < PF_N(want); i++) {
		char *out = osu_output_of(want[i].test);

		assert_string_equal(out, want[i].out);
		free(out);
	}
}

/* What the command line refuses --format osu for: no counterpart. */
static void test_osu_find(void **state)
{
	const char *with[] = { "put_lat", "get_lat", "put_bw", "put_bw_unreg", "get_bw",
			       "put_bibw", "put_mbw", "am_lat", "am_bw", "am_bibw", "bcast" };
	const char *without[] = { "copy_lat", "copy_bw", "mp_bw", "failover", "drain", "init",
				  "overlap" };

	(void)state;
	for (size_t i = 0; i < PF_N(with); i++) {
		assert_non_null(perf_osu_find(with[i]));
		assert_string_equal(perf_osu_find(with[i])->test, with[i]);
	}
	for (size_t i = 0; i < PF_N(without); i++)
		assert_null(perf_osu_find(without[i]));
}

/* ---- --plot --------------------------------------------------------------------------*/
static char *slurp(const char *path)
{
	FILE *f = fopen(path, "rb");
	char *buf = calloc(1, 65536);
	size_t n;

	assert_non_null(f);
	assert_non_null(buf);
	n = fread(buf, 1, 65535, f);
	buf[n] = '\0';
	fclose(f);
	return buf;
}

static int have_gnuplot(void)
{
	return system("command -v gnuplot >/dev/null 2>&1") == 0;
}

/* A scratch directory for the picture and its data. */
static void scratch(char *dir, size_t len, char *png, size_t plen)
{
	snprintf(dir, len, "%s/triad-perf-test.XXXXXX", getenv("TMPDIR") ? getenv("TMPDIR")
									  : "/tmp");
	assert_non_null(mkdtemp(dir));
	snprintf(png, plen, "%s/plot.png", dir);
}

static void cleanup(const char *dir, const char *png)
{
	char path[4300];

	snprintf(path, sizeof(path), "%s.dat", png);
	unlink(path);
	unlink(png);
	rmdir(dir);
}

static void test_plot_sweep(void **state)
{
	char dir[4096], png[4200], dat[4300], *data, *pic;
	struct perf_opts o = { .format = PERF_FMT_CSV, .quiet = 1, .cmd = &cmd };
	struct perf_run r = { .o = &o, .rank = 0 };
	struct capture c;
	int ret;

	(void)state;
	scratch(dir, sizeof(dir), png, sizeof(png));
	o.plot_file = png;
	capture_start(&c, stdout);
	rows(&r);
	free(capture_end(&c));
	assert_non_null(r.out);
	capture_start(&c, stderr);
	ret = perf_out_finish(&r);
	free(capture_end(&c));
	assert_null(r.out);
	/* The data: x and the plot's y keys, row by row. */
	snprintf(dat, sizeof(dat), "%s.dat", png);
	data = slurp(dat);
	assert_string_equal(data, "64 1.5 3.25\n4096 10.125 20\n");
	free(data);
	if (have_gnuplot()) {
		assert_int_equal(ret, 0);
		pic = slurp(png);
		assert_memory_equal(pic, "\x89PNG\r\n\x1a\n", 8);
		free(pic);
	} else {
		assert_int_equal(ret, -EIO); /* and said that gnuplot failed */
	}
	cleanup(dir, png);
}

static void test_plot_timeline_sorted(void **state)
{
	static const struct perf_plot tl = {
		.title = "timeline", .xlabel = "ms", .ylabel = "", .x = "t_ms", .label = "event",
		.timeline = 1,
	};
	char dir[4096], png[4200], dat[4300], *data;
	struct perf_opts o = { .format = PERF_FMT_TABLE, .quiet = 1, .cmd = &cmd };
	struct perf_run r = { .o = &o, .rank = 0 };
	const char *names[] = { "start", "late", "early" };
	const double t[] = { 0, 30.5, 12 };
	struct capture c;
	int ret;

	(void)state;
	scratch(dir, sizeof(dir), png, sizeof(png));
	o.plot_file = png;
	for (int i = 0; i < 3; i++) {
		const struct perf_field f[] = {
			PF_STR("event", "event", 8, names[i]),
			PF_DBL("t_ms", "t", 6, 1, t[i]),
		};

		perf_out_keep(&r, &tl, f, PF_N(f)); /* kept, not printed */
	}
	assert_int_equal(r.header_done, 0);
	capture_start(&c, stderr);
	ret = perf_out_finish(&r);
	free(capture_end(&c));
	snprintf(dat, sizeof(dat), "%s.dat", png);
	data = slurp(dat);
	/* The events in time order, whatever order they were kept in. */
	assert_string_equal(data, "0 \"start\"\n12 \"early\"\n30.5 \"late\"\n");
	free(data);
	assert_int_equal(ret, have_gnuplot() ? 0 : -EIO);
	cleanup(dir, png);
}

static void test_plot_nothing(void **state)
{
	struct perf_opts o = { .format = PERF_FMT_TABLE, .plot_file = "/nonexistent/x.png",
			       .cmd = &cmd };
	struct perf_run r = { .o = &o, .rank = 0 };
	struct capture c;
	char *err;

	(void)state;
	capture_start(&c, stderr);
	assert_int_equal(perf_out_finish(&r), -EINVAL);
	err = capture_end(&c);
	assert_non_null(strstr(err, "--plot /nonexistent/x.png: put_lat has nothing to plot"));
	free(err);
}

static void test_progress_quiet(void **state)
{
	struct perf_opts o = { .cmd = &cmd };
	struct perf_run r = { .o = &o, .rank = 0 };
	struct capture c;
	char *err;

	(void)state;
	capture_start(&c, stderr);
	perf_progress(&r, "%s: %d B (%d of %d)", "put_lat", 2, 1, 23);
	o.quiet = 1;
	perf_progress(&r, "not this");
	err = capture_end(&c);
	assert_string_equal(err, "triad-perf: put_lat: 2 B (1 of 23)\n");
	free(err);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_table),
		cmocka_unit_test(test_csv),
		cmocka_unit_test(test_json),
		cmocka_unit_test(test_silent),
		cmocka_unit_test(test_osu),
		cmocka_unit_test(test_osu_find),
		cmocka_unit_test(test_plot_sweep),
		cmocka_unit_test(test_plot_timeline_sorted),
		cmocka_unit_test(test_plot_nothing),
		cmocka_unit_test(test_progress_quiet),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
