/* Unit tests for lib/ctl/metrics: triadd's Prometheus text read back
 * (what triadctl top shows), every malformed line it needs refused with
 * its line number, and top's table with its rates. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "ctl/metrics.h"

/* As triadd writes it (two planes, p1 degraded), with a family top does
 * not read, a timestamp and blank lines. */
static const char good[] =
	"# HELP triad_clients Triad processes connected to triadd.\n"
	"# TYPE triad_clients gauge\n"
	"triad_clients 4\n"
	"triad_policy_generation 12\n"
	"\n"
	"triad_daemon_connections_total 99\n"
	"triad_plane_state{plane=\"p0\",state=\"normal\"} 1\n"
	"triad_plane_state{plane=\"p0\",state=\"switched\"} 0\n"
	"triad_plane_state{plane=\"p1\",state=\"normal\"} 0\n"
	"triad_plane_state{plane=\"p1\",state=\"switched\"} 1\n"
	"triad_plane_reason{plane=\"p0\",reason=\"none\"} 1\n"
	"triad_plane_reason{plane=\"p1\",reason=\"none\"} 0\n"
	"triad_plane_reason{plane=\"p1\",reason=\"degraded\"} 1\n"
	"triad_plane_healthy{plane=\"p0\"} 1\n"
	"triad_plane_healthy{plane=\"p1\"} 1\n"
	"triad_plane_faulty{plane=\"p1\"} 0\n"
	"triad_plane_degraded{plane=\"p1\"} 1\n"
	"triad_plane_score{plane=\"p1\"} 100\n"
	"triad_plane_weight{plane=\"p1\"} 100\n"
	"triad_plane_inflight{plane=\"p0\"} 23\n"
	"triad_plane_clients_switched{plane=\"p1\"} 4\n"
	"triad_plane_tx_bytes_total{plane=\"p0\"} 18446744073709551615\n"
	"triad_plane_tx_bytes_total{plane=\"p1\"} 5000000 1700000000000\n"
	"triad_plane_rx_bytes_total{ plane = \"p0\" , } 2000000\n"
	"triad_port_counter{plane=\"p0\",counter=\"sent_pkts\"} 7\n";

static void test_parse(void **state)
{
	struct tr_ctl_msnap s;
	char err[200] = "";

	(void)state;
	if (tr_ctl_metrics_parse(good, strlen(good), &s, err, sizeof(err)))
		fail_msg("refused: %s", err);
	assert_int_equal(s.clients, 4);
	assert_int_equal(s.generation, 12);
	assert_int_equal(s.nplanes, 2);
	assert_string_equal(s.plane[0].name, "p0");
	assert_string_equal(s.plane[1].name, "p1");
	assert_int_equal(s.plane[0].state, TR_CTL_NORMAL);
	assert_int_equal(s.plane[0].reason, TR_CTL_R_NONE);
	assert_int_equal(s.plane[1].state, TR_CTL_SWITCHED);
	assert_int_equal(s.plane[1].reason, TR_CTL_R_DEGRADED);
	assert_int_equal(s.plane[1].degraded, 1);
	assert_int_equal(s.plane[1].score, 100);
	assert_int_equal(s.plane[1].weight, 100);
	assert_int_equal(s.plane[1].switched, 4);
	assert_int_equal(s.plane[0].inflight, 23);
	assert_true(s.plane[0].tx == UINT64_MAX);
	assert_int_equal(s.plane[1].tx, 5000000);
	assert_int_equal(s.plane[0].rx, 2000000);
	/* A state or reason this version does not know: shown as "?". */
	static const char newer[] = "triad_plane_state{plane=\"a\",state=\"paused\"} 1\n"
				    "triad_plane_reason{plane=\"a\",reason=\"maintenance\"} 1\n";
	assert_int_equal(tr_ctl_metrics_parse(newer, strlen(newer), &s, err, sizeof(err)), 0);
	assert_int_equal(s.plane[0].state, -1);
	assert_int_equal(s.plane[0].reason, -1);
	/* Escapes in a label value: \" is a quote (the name is then refused,
	 * as a plane name, not as syntax). */
	static const char esc[] = "triad_plane_state{state=\"normal\",plane=\"a\\\"b\"} 1\n";
	assert_int_equal(tr_ctl_metrics_parse(esc, strlen(esc), &s, err, sizeof(err)), -EINVAL);
	assert_string_equal(err, "line 1: triad_plane_state: a plane name that is not 1-15 "
				 "characters of A-Z a-z 0-9 _ . -");
	/* No final newline; the text need not be NUL-terminated. */
	static const char cut[] = "triad_plane_weight{plane=\"z\"} 30XXXX";
	assert_int_equal(tr_ctl_metrics_parse(cut, strlen(cut) - 4, &s, err, sizeof(err)), 0);
	assert_int_equal(s.plane[0].weight, 30);
	assert_int_equal(s.plane[0].state, -1);
}

static void test_refused(void **state)
{
	static const struct {
		const char *text, *err;
	} t[] = {
		{ "", "no triad_plane_state series: not triadd's metrics" },
		{ "# only\nnode_load1 0.5\n", "no triad_plane_state series: not triadd's metrics" },
		{ "triad_plane_score{plane=\"p0\"} 1.5\n",
		  "line 1: triad_plane_score: the value is not a non-negative integer" },
		{ "triad_plane_score{plane=\"p0\"} -1\n",
		  "line 1: triad_plane_score: the value is not a non-negative integer" },
		{ "triad_plane_score{plane=\"p0\"} 18446744073709551616\n",
		  "line 1: triad_plane_score: the value is not a non-negative integer" },
		{ "triad_plane_score{plane=\"p0\"}\n",
		  "line 1: triad_plane_score: the value is not a non-negative integer" },
		{ "triad_plane_score{plane=\"p0\"} 1 2 3\n",
		  "line 1: triad_plane_score: the value is not a non-negative integer" },
		{ "\n\ntriad_plane_state{plane=\"p0\",state=\"normal} 1\n",
		  "line 3: triad_plane_state: a label value that is not a quoted string" },
		{ "triad_plane_state{plane=p0} 1\n",
		  "line 1: triad_plane_state: a label value that is not a quoted string" },
		{ "triad_plane_state{plane=\"p0\" 1\n",
		  "line 1: triad_plane_state: labels not closed by '}'" },
		{ "triad_plane_state{plane} 1\n", "line 1: triad_plane_state: a label without '='" },
		{ "triad_plane_state{=\"x\"} 1\n", "line 1: triad_plane_state: a bad label" },
		{ "triad_plane_state{plane=\"a\\q\"} 1\n",
		  "line 1: triad_plane_state: a label value that is not a quoted string" },
		{ "triad_plane_weight 10\n", "line 1: triad_plane_weight without a plane label" },
		{ "triad_plane_state{plane=\"p0\"} 1\n",
		  "line 1: triad_plane_state without a state label" },
		{ "triad_plane_reason{plane=\"p0\"} 1\n",
		  "line 1: triad_plane_reason without a reason label" },
		{ "triad_plane_weight{plane=\"\"} 1\n",
		  "line 1: triad_plane_weight: a plane name that is not 1-15 characters of A-Z a-z 0-9 "
		  "_ . -" },
		{ "triad_plane_weight{plane=\"\x1b[2J\"} 1\n",
		  "line 1: triad_plane_weight: a plane name that is not 1-15 characters of A-Z a-z 0-9 "
		  "_ . -" },
		{ "triad_plane_weight{plane=\"0123456789abcdef0123456789abcdef\"} 1\n",
		  "line 1: triad_plane_weight: a label value of 32 bytes or more" },
		{ "triad_plane_weight{plane=\"a\"} 1\n{x} 1\n",
		  "line 2: not a metric name at '{x} 1'" },
		{ "triad_plane_weight{plane=\"a\"} 1\n"
		  "triad_plane_weight{plane=\"b\"} 1\n"
		  "triad_plane_weight{plane=\"c\"} 1\n"
		  "triad_plane_weight{plane=\"d\"} 1\n"
		  "triad_plane_weight{plane=\"e\"} 1\n"
		  "triad_plane_weight{plane=\"f\"} 1\n"
		  "triad_plane_weight{plane=\"g\"} 1\n"
		  "triad_plane_weight{plane=\"h\"} 1\n"
		  "triad_plane_weight{plane=\"i\"} 1\n",
		  "line 9: more than 8 planes" },
	};

	(void)state;
	for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
		struct tr_ctl_msnap s;
		char err[200] = "";
		int ret = tr_ctl_metrics_parse(t[i].text, strlen(t[i].text), &s, err, sizeof(err));

		if (ret != -EINVAL || strcmp(err, t[i].err))
			fail_msg("case %zu: %d '%s', want '%s'", i, ret, err, t[i].err);
	}
	/* A NUL byte inside the text. */
	{
		static const char nul[] = "triad_plane_weight{plane=\"a\"} 1\n\0x\n";
		struct tr_ctl_msnap s;
		char err[200] = "";

		assert_int_equal(tr_ctl_metrics_parse(nul, sizeof(nul) - 1, &s, err, sizeof(err)),
				 -EINVAL);
		assert_string_equal(err, "line 2: a NUL byte");
	}
}

static void test_rates(void **state)
{
	static const struct {
		double r;
		const char *want;
	} t[] = {
		{ -1, "-" },	      { 0, "0 B/s" },		{ 999, "999 B/s" },
		{ 999.6, "1.00 kB/s" }, { 1234, "1.23 kB/s" },	{ 12345, "12.3 kB/s" },
		{ 123456, "123 kB/s" }, { 9.81e6, "9.81 MB/s" }, { 2.5e9, "2.50 GB/s" },
		{ 3e15, "3000 TB/s" },
	};

	(void)state;
	for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
		char buf[32];

		tr_ctl_rate_str(t[i].r, buf, sizeof(buf));
		if (strcmp(buf, t[i].want))
			fail_msg("%g: '%s', want '%s'", t[i].r, buf, t[i].want);
	}
}

static void test_frame(void **state)
{
	struct tr_ctl_msnap a, b;
	char err[200], buf[2048], small[64];
	size_t n;

	(void)state;
	assert_int_equal(tr_ctl_metrics_parse(good, strlen(good), &b, err, sizeof(err)), 0);
	a = b;
	a.plane[0].tx = UINT64_MAX - 2000000; /* 2 MB in 2 s on p0 */
	a.plane[0].rx = 0;
	a.plane[1].tx = 6000000; /* went back: triadd restarted */
	n = tr_ctl_top_frame(&a, &b, 2.0, buf, sizeof(buf));
	assert_int_equal(n, strlen(buf));
	assert_string_equal(
		buf,
		"generation 12, 4 client(s); rates over 2.0 s\n"
		"#  plane           state           reason   health  score weight          tx          "
		"rx inflight switched\n"
		"0  p0              normal          none     healthy     0      0   1.00 MB/s   1.00 "
		"MB/s       23        0\n"
		"1  p1              switched        degraded healthy   100    100           -       0 "
		"B/s        0        4\n");
	/* The first table: no rates yet; a plane the one before lacked: "-". */
	tr_ctl_top_frame(NULL, &b, 0, buf, sizeof(buf));
	assert_non_null(strstr(buf, "; rates from the next refresh\n"));
	a.nplanes = 1;
	tr_ctl_top_frame(&a, &b, 1.0, buf, sizeof(buf));
	assert_non_null(strstr(buf, "\n1  p1              switched        degraded healthy   100    "
				    "100           -           -"));
	/* Cut to the buffer, the length needed returned, as snprintf. */
	assert_int_equal(tr_ctl_top_frame(&a, &b, 1.0, small, sizeof(small)), strlen(buf));
	assert_int_equal(strlen(small), sizeof(small) - 1);
	assert_int_equal(memcmp(small, buf, sizeof(small) - 1), 0);
	/* A faulty plane, one the monitor finds down, a state not known. */
	b.plane[0].faulty = 1;
	b.plane[1].healthy = 0;
	b.plane[1].state = -1;
	tr_ctl_top_frame(NULL, &b, 0, buf, sizeof(buf));
	assert_non_null(strstr(buf, "\n0  p0              normal          none     faulty "));
	assert_non_null(strstr(buf, "\n1  p1              ?               degraded down    "));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_parse),
		cmocka_unit_test(test_refused),
		cmocka_unit_test(test_rates),
		cmocka_unit_test(test_frame),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
