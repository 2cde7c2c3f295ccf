/* Unit tests for the world file parser (lib/core/world.[ch]). */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <arpa/inet.h>
#include <cmocka.h>

#include "core/world.h"

#define NAME "w.txt"

static void assert_addr(struct in_addr a, const char *s)
{
	char buf[INET_ADDRSTRLEN];

	assert_non_null(inet_ntop(AF_INET, &a, buf, sizeof(buf)));
	assert_string_equal(buf, s);
}

/* Parses text, which must be good; the caller frees w. */
static void parse_ok(const char *text, struct tr_world *w)
{
	char err[256] = "";
	int ret = tr_world_parse(text, NAME, w, err, sizeof(err));

	if (ret)
		fail_msg("unexpected error %d: %s", ret, err);
	assert_string_equal(err, "");
	assert_non_null(w->addr);
}

/* Parses text, which must fail with -EINVAL and exactly msg; w is untouched. */
static void parse_bad(const char *text, const char *msg)
{
	struct tr_world w = { .size = -7, .nplanes = -7, .port = 1, .addr = NULL };
	char err[256] = "";

	assert_int_equal(tr_world_parse(text, NAME, &w, err, sizeof(err)), -EINVAL);
	assert_string_equal(err, msg);
	assert_int_equal(w.size, -7);
	assert_int_equal(w.nplanes, -7);
	assert_int_equal(w.port, 1);
	assert_null(w.addr);
}

/* ---- good files ---------------------------------------------------------- */

static void test_good_two_planes(void **state)
{
	static const char text[] =
		"# triad world: three ranks, two planes\n"
		"\n"
		"   # an indented comment\n"
		"\t\n"
		"port 7000   # the listening port\n"
		"2 10.0.0.3 10.1.0.3\n"
		"0\t10.0.0.1\t10.1.0.1\n"
		"\n"
		"1 10.0.0.2   10.1.0.2# comment touching the address\n";
	struct tr_world w;

	(void)state;
	parse_ok(text, &w);
	assert_int_equal(w.size, 3);
	assert_int_equal(w.nplanes, 2);
	assert_int_equal(w.port, 7000);
	assert_addr(w.addr[0][0], "10.0.0.1");
	assert_addr(w.addr[0][1], "10.1.0.1");
	assert_addr(w.addr[1][0], "10.0.0.2");
	assert_addr(w.addr[1][1], "10.1.0.2");
	assert_addr(w.addr[2][0], "10.0.0.3");
	assert_addr(w.addr[2][1], "10.1.0.3");
	tr_world_free(&w);
	assert_null(w.addr);
	assert_int_equal(w.size, 0);
}

static void test_good_one_plane_default_port(void **state)
{
	struct tr_world w;

	(void)state;
	/* No port directive, no newline at the end, ranks in reverse order. */
	parse_ok("1 192.168.1.2\n0 192.168.1.1", &w);
	assert_int_equal(w.size, 2);
	assert_int_equal(w.nplanes, 1);
	assert_int_equal(w.port, TR_WORLD_DEFAULT_PORT);
	assert_int_equal(w.port, 7471);
	assert_addr(w.addr[0][0], "192.168.1.1");
	assert_addr(w.addr[1][0], "192.168.1.2");
	tr_world_free(&w);
}

static void test_good_single_rank(void **state)
{
	struct tr_world w;

	(void)state;
	parse_ok("0 127.0.0.1\n", &w);
	assert_int_equal(w.size, 1);
	assert_int_equal(w.nplanes, 1);
	assert_addr(w.addr[0][0], "127.0.0.1");
	tr_world_free(&w);
}

static void test_good_eight_planes(void **state)
{
	static const char text[] =
		"port 65535\n"
		"1 10.0.0.2 10.1.0.2 10.2.0.2 10.3.0.2 10.4.0.2 10.5.0.2 10.6.0.2 10.7.0.2\n"
		"0 10.0.0.1 10.1.0.1 10.2.0.1 10.3.0.1 10.4.0.1 10.5.0.1 10.6.0.1 10.7.0.1\n";
	struct tr_world w;
	char want[32];

	(void)state;
	parse_ok(text, &w);
	assert_int_equal(w.size, 2);
	assert_int_equal(w.nplanes, TRIAD_MAX_PLANES);
	assert_int_equal(w.port, 65535);
	for (int r = 0; r < 2; r++) {
		for (int k = 0; k < 8; k++) {
			snprintf(want, sizeof(want), "10.%d.0.%d", k, r + 1);
			assert_addr(w.addr[r][k], want);
		}
	}
	tr_world_free(&w);
}

static void test_good_port_one_and_crlf(void **state)
{
	struct tr_world w;

	(void)state;
	/* '\r' is white space: a file written on Windows parses. */
	parse_ok("port 1\r\n0 10.0.0.1\r\n1 10.0.0.2\r\n", &w);
	assert_int_equal(w.port, 1);
	assert_int_equal(w.size, 2);
	assert_addr(w.addr[1][0], "10.0.0.2");
	tr_world_free(&w);
}

static void test_good_same_address_on_different_planes(void **state)
{
	struct tr_world w;

	(void)state;
	/* Only the addresses of one plane must be distinct. */
	parse_ok("0 10.0.0.1 10.0.0.2\n1 10.0.0.2 10.0.0.1\n", &w);
	assert_int_equal(w.size, 2);
	assert_addr(w.addr[0][1], "10.0.0.2");
	assert_addr(w.addr[1][0], "10.0.0.2");
	tr_world_free(&w);
}

static void test_good_longest_line(void **state)
{
	char text[2048];
	struct tr_world w;
	size_t n;

	(void)state;
	/* A 1023-character line is the longest allowed. */
	n = (size_t)snprintf(text, sizeof(text), "0 10.0.0.1 #");
	memset(text + n, 'x', 1023 - n);
	strcpy(text + 1023, "\n1 10.0.0.2\n");
	assert_int_equal(strcspn(text, "\n"), 1023);
	parse_ok(text, &w);
	assert_int_equal(w.size, 2);
	tr_world_free(&w);
}

static char *big_world(int nranks)
{
	size_t cap = (size_t)nranks * 40 + 1, used = 0;
	char *text = malloc(cap);

	assert_non_null(text);
	/* Listed from the highest rank down. */
	for (int r = nranks - 1; r >= 0; r--)
		used += (size_t)snprintf(text + used, cap - used, "%d 10.0.%d.%d 10.1.%d.%d\n", r,
					 r / 256, r % 256, r / 256, r % 256);
	return text;
}

static void test_good_max_ranks(void **state)
{
	char *text = big_world(TR_WORLD_MAX_RANKS);
	struct tr_world w;

	(void)state;
	parse_ok(text, &w);
	assert_int_equal(w.size, TR_WORLD_MAX_RANKS);
	assert_int_equal(w.nplanes, 2);
	assert_addr(w.addr[0][0], "10.0.0.0");
	assert_addr(w.addr[4095][1], "10.1.15.255");
	tr_world_free(&w);
	free(text);
}

static void test_text_not_modified(void **state)
{
	char text[] = "port 9 # c\n0 10.0.0.1 # c\n";
	char copy[sizeof(text)];
	struct tr_world w;

	(void)state;
	memcpy(copy, text, sizeof(text));
	parse_ok(text, &w);
	assert_memory_equal(text, copy, sizeof(text));
	tr_world_free(&w);
}

/* ---- bad files ------------------------------------------------------------ */

static void test_bad_empty(void **state)
{
	(void)state;
	parse_bad("", NAME ": no ranks");
	parse_bad("\n\n", NAME ": no ranks");
	parse_bad("# only a comment\n   \n", NAME ": no ranks");
	parse_bad("port 7000\n", NAME ": no ranks");
}

static void test_bad_rank_missing(void **state)
{
	(void)state;
	parse_bad("0 10.0.0.1\n2 10.0.0.3\n", NAME ": rank 1 is missing (ranks must be 0..2)");
	parse_bad("1 10.0.0.1\n", NAME ": rank 0 is missing (ranks must be 0..1)");
	parse_bad("4095 10.0.0.1\n", NAME ": rank 0 is missing (ranks must be 0..4095)");
}

static void test_bad_duplicate_rank(void **state)
{
	(void)state;
	parse_bad("0 10.0.0.1\n1 10.0.0.2\n# c\n0 10.0.0.3\n", NAME ":4: rank 0 listed twice");
	parse_bad("0 10.0.0.1 10.1.0.1\n0 10.0.0.1 10.1.0.1\n", NAME ":2: rank 0 listed twice");
}

/* ---- the job key -------------------------------------------------------- */

static void test_key_line(void **state)
{
	struct tr_world w;

	(void)state;
	parse_ok("0 10.0.0.1\n", &w);
	assert_int_equal(w.key, 0); /* no key line: no key */
	tr_world_free(&w);
	parse_ok("key jobA # the first job\n0 10.0.0.1\n1 10.0.0.2\n", &w);
	assert_int_equal(w.key, tr_job_key("jobA"));
	assert_int_equal(w.size, 2);
	tr_world_free(&w);
	/* after the ranks too */
	parse_ok("0 10.0.0.1\nkey jobB\n", &w);
	assert_int_equal(w.key, tr_job_key("jobB"));
	tr_world_free(&w);
}

static void test_job_key(void **state)
{
	(void)state;
	assert_int_not_equal(tr_job_key("jobA"), tr_job_key("jobB"));
	assert_int_not_equal(tr_job_key("prterun-vm-1234@1"), tr_job_key("prterun-vm-1235@1"));
	assert_int_equal(tr_job_key("jobA"), tr_job_key("jobA"));
	assert_int_not_equal(tr_job_key(""), 0);
}

static void test_bad_key(void **state)
{
	(void)state;
	parse_bad("key\n0 10.0.0.1\n", NAME ":1: 'key' needs one word");
	parse_bad("key a b\n0 10.0.0.1\n", NAME ":1: 'key' needs one word");
	parse_bad("key a\n0 10.0.0.1\nkey a\n", NAME ":3: 'key' given twice");
	parse_bad("key 0123456789012345678901234567890123456789012345678901234567890123\n"
		  "0 10.0.0.1\n", NAME ":1: 'key' longer than 63 characters");
	parse_bad("Key a\n0 10.0.0.1\n",
		  NAME ":1: expected a rank (0..4095), 'port' or 'key', found 'Key'");
}

static void test_bad_rank_not_a_number(void **state)
{
	(void)state;
	parse_bad("x 10.0.0.1\n", NAME ":1: expected a rank (0..4095), 'port' or 'key', found 'x'");
	parse_bad("0 10.0.0.1\n\n1a 10.0.0.2\n",
		  NAME ":3: expected a rank (0..4095), 'port' or 'key', found '1a'");
	parse_bad("-1 10.0.0.1\n", NAME ":1: expected a rank (0..4095), 'port' or 'key', found '-1'");
	parse_bad("+1 10.0.0.1\n", NAME ":1: expected a rank (0..4095), 'port' or 'key', found '+1'");
	parse_bad("4096 10.0.0.1\n", NAME ":1: expected a rank (0..4095), 'port' or 'key', found '4096'");
	parse_bad("99999999999999999999999 10.0.0.1\n",
		  NAME ":1: expected a rank (0..4095), 'port' or 'key', found '99999999999999999999999'");
	parse_bad("Port 7000\n", NAME ":1: expected a rank (0..4095), 'port' or 'key', found 'Port'");
}

static void test_bad_no_address(void **state)
{
	(void)state;
	parse_bad("0\n", NAME ":1: rank 0: no plane address");
	parse_bad("0 10.0.0.1\n1 # the address is commented out 10.0.0.2\n",
		  NAME ":2: rank 1: no plane address");
}

static void test_bad_plane_count_mismatch(void **state)
{
	(void)state;
	parse_bad("0 10.0.0.1 10.1.0.1\n1 10.0.0.2\n",
		  NAME ":2: rank 1: 1 plane addresses, earlier ranks have 2");
	parse_bad("0 10.0.0.1\n1 10.0.0.2\n2 10.0.0.3 10.1.0.3 10.2.0.3\n",
		  NAME ":3: rank 2: 3 plane addresses, earlier ranks have 1");
}

static void test_bad_ipv4(void **state)
{
	(void)state;
	parse_bad("0 10.0.0.256\n", NAME ":1: rank 0 plane 0: '10.0.0.256' is not an IPv4 address");
	parse_bad("0 10.0.0.1 10.1.0\n", NAME ":1: rank 0 plane 1: '10.1.0' is not an IPv4 address");
	parse_bad("0 10.0.0.1\n1 ::1\n", NAME ":2: rank 1 plane 0: '::1' is not an IPv4 address");
	parse_bad("0 node0\n", NAME ":1: rank 0 plane 0: 'node0' is not an IPv4 address");
	parse_bad("0 10.0.0.1.5\n", NAME ":1: rank 0 plane 0: '10.0.0.1.5' is not an IPv4 address");
}

static void test_bad_too_many_planes(void **state)
{
	(void)state;
	parse_bad("0 10.0.0.1 10.1.0.1 10.2.0.1 10.3.0.1 10.4.0.1 10.5.0.1 10.6.0.1 10.7.0.1 "
		  "10.8.0.1\n",
		  NAME ":1: rank 0: more than 8 plane addresses");
	parse_bad("0 1.1.1.1\n"
		  "1 a b c d e f g h i j k l m n o p q r s t u v w x y z\n",
		  NAME ":2: rank 1: more than 8 plane addresses");
}

static void test_bad_port_after_ranks(void **state)
{
	(void)state;
	parse_bad("0 10.0.0.1\nport 7000\n1 10.0.0.2\n", NAME ":2: 'port' must come before the ranks");
}

static void test_bad_port_value(void **state)
{
	(void)state;
	parse_bad("port 0\n0 10.0.0.1\n", NAME ":1: 'port' needs one number in 1..65535");
	parse_bad("port 65536\n0 10.0.0.1\n", NAME ":1: 'port' needs one number in 1..65535");
	parse_bad("port -1\n0 10.0.0.1\n", NAME ":1: 'port' needs one number in 1..65535");
	parse_bad("port 70x\n0 10.0.0.1\n", NAME ":1: 'port' needs one number in 1..65535");
	parse_bad("# c\nport\n0 10.0.0.1\n", NAME ":2: 'port' needs one number in 1..65535");
	parse_bad("port 1 2\n0 10.0.0.1\n", NAME ":1: 'port' needs one number in 1..65535");
	parse_bad("port 99999999999999999999\n", NAME ":1: 'port' needs one number in 1..65535");
}

static void test_bad_duplicate_address(void **state)
{
	(void)state;
	parse_bad("0 10.0.0.1 10.1.0.1\n1 10.0.0.2 10.1.0.2\n2 10.0.0.3 10.1.0.1\n",
		  NAME ":3: rank 2 plane 1: address 10.1.0.1 already used by rank 0");
	parse_bad("3 10.0.0.4\n1 10.0.0.2\n2 10.0.0.4\n0 10.0.0.1\n",
		  NAME ":3: rank 2 plane 0: address 10.0.0.4 already used by rank 3");
}

static void test_bad_duplicate_address_big(void **state)
{
	char *text = big_world(TR_WORLD_MAX_RANKS);
	char *last;

	(void)state;
	/* The last line is rank 0 (10.0.0.0); make its plane 1 equal to rank 4095's. */
	last = strstr(text, "\n0 10.0.0.0 10.1.0.0\n");
	assert_non_null(last);
	strcpy(last, "\n0 10.0.0.0 10.1.15.255\n");
	parse_bad(text, NAME ":4096: rank 0 plane 1: address 10.1.15.255 already used by rank 4095");
	free(text);
}

static void test_bad_long_line(void **state)
{
	char text[4096];

	(void)state;
	/* 1024 characters before the newline. */
	strcpy(text, "0 10.0.0.1\n");
	memset(text + 11, ' ', 1024);
	strcpy(text + 11 + 1024, "\n1 10.0.0.2\n");
	parse_bad(text, NAME ":2: line longer than 1023 characters");
	/* The same without a newline at the end of the file. */
	memset(text, '#', 3000);
	text[3000] = '\0';
	parse_bad(text, NAME ":1: line longer than 1023 characters");
}

static void test_small_error_buffer(void **state)
{
	struct tr_world w;
	char *err = malloc(10); /* exactly 10 bytes: ASan catches any overrun */

	(void)state;
	assert_non_null(err);
	assert_int_equal(tr_world_parse("x\n", NAME, &w, err, 10), -EINVAL);
	assert_string_equal(err, NAME ":1: ");
	assert_int_equal(tr_world_parse("", NAME, &w, err, 1), -EINVAL);
	assert_string_equal(err, "");
	free(err);
}

/* ---- tr_world_load --------------------------------------------------------- */

struct tmpfile {
	char path[256];
};

static void write_tmp(struct tmpfile *t, const void *data, size_t len)
{
	const char *dir = getenv("TMPDIR");
	int fd;

	snprintf(t->path, sizeof(t->path), "%s/triad-world-XXXXXX", dir && *dir ? dir : "/tmp");
	fd = mkstemp(t->path);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, data, len), (ssize_t)len);
	assert_int_equal(close(fd), 0);
}

static void test_load_good(void **state)
{
	static const char text[] = "port 7100\n1 10.0.0.2 10.1.0.2\n0 10.0.0.1 10.1.0.1\n";
	struct tmpfile t;
	struct tr_world w;
	char err[256] = "";

	(void)state;
	write_tmp(&t, text, sizeof(text) - 1);
	assert_int_equal(tr_world_load(t.path, &w, err, sizeof(err)), 0);
	assert_int_equal(w.size, 2);
	assert_int_equal(w.nplanes, 2);
	assert_int_equal(w.port, 7100);
	assert_addr(w.addr[1][1], "10.1.0.2");
	tr_world_free(&w);
	unlink(t.path);
}

static void test_load_error_names_path_and_line(void **state)
{
	static const char text[] = "0 10.0.0.1\n0 10.0.0.2\n";
	struct tmpfile t;
	struct tr_world w = { .addr = NULL };
	char err[512], want[512];

	(void)state;
	write_tmp(&t, text, sizeof(text) - 1);
	assert_int_equal(tr_world_load(t.path, &w, err, sizeof(err)), -EINVAL);
	snprintf(want, sizeof(want), "%s:2: rank 0 listed twice", t.path);
	assert_string_equal(err, want);
	assert_null(w.addr);
	unlink(t.path);
}

static void test_load_empty(void **state)
{
	struct tmpfile t;
	struct tr_world w = { .addr = NULL };
	char err[512], want[512];

	(void)state;
	write_tmp(&t, "", 0);
	assert_int_equal(tr_world_load(t.path, &w, err, sizeof(err)), -EINVAL);
	snprintf(want, sizeof(want), "%s: no ranks", t.path);
	assert_string_equal(err, want);
	assert_null(w.addr);
	unlink(t.path);
}

static void test_load_nul_byte(void **state)
{
	static const char text[] = "0 10.0.0.1\n\0001 10.0.0.2\n";
	struct tmpfile t;
	struct tr_world w = { .addr = NULL };
	char err[512], want[512];

	(void)state;
	write_tmp(&t, text, sizeof(text) - 1);
	assert_int_equal(tr_world_load(t.path, &w, err, sizeof(err)), -EINVAL);
	snprintf(want, sizeof(want), "%s: world file contains a NUL byte", t.path);
	assert_string_equal(err, want);
	assert_null(w.addr);
	unlink(t.path);
}

static void test_load_nonexistent(void **state)
{
	static const char path[] = "/nonexistent-triad-dir/world";
	struct tr_world w = { .addr = NULL };
	char err[512];

	(void)state;
	assert_int_equal(tr_world_load(path, &w, err, sizeof(err)), -ENOENT);
	assert_string_equal(err, "/nonexistent-triad-dir/world: cannot open world file: "
				 "No such file or directory");
	assert_null(w.addr);
}

static void test_load_directory(void **state)
{
	const char *dir = getenv("TMPDIR");
	struct tr_world w = { .addr = NULL };
	char err[512], want[512];

	(void)state;
	if (!dir || !*dir)
		dir = "/tmp";
	assert_int_equal(tr_world_load(dir, &w, err, sizeof(err)), -EISDIR);
	snprintf(want, sizeof(want), "%s: cannot read world file: Is a directory", dir);
	assert_string_equal(err, want);
	assert_null(w.addr);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_good_two_planes),
		cmocka_unit_test(test_good_one_plane_default_port),
		cmocka_unit_test(test_good_single_rank),
		cmocka_unit_test(test_good_eight_planes),
		cmocka_unit_test(test_good_port_one_and_crlf),
		cmocka_unit_test(test_good_same_address_on_different_planes),
		cmocka_unit_test(test_good_longest_line),
		cmocka_unit_test(test_good_max_ranks),
		cmocka_unit_test(test_text_not_modified),
		cmocka_unit_test(test_bad_empty),
		cmocka_unit_test(test_bad_rank_missing),
		cmocka_unit_test(test_bad_duplicate_rank),
		cmocka_unit_test(test_bad_rank_not_a_number),
		cmocka_unit_test(test_bad_no_address),
		cmocka_unit_test(test_bad_plane_count_mismatch),
		cmocka_unit_test(test_bad_ipv4),
		cmocka_unit_test(test_bad_too_many_planes),
		cmocka_unit_test(test_bad_port_after_ranks),
		cmocka_unit_test(test_bad_port_value),
		cmocka_unit_test(test_bad_duplicate_address),
		cmocka_unit_test(test_bad_duplicate_address_big),
		cmocka_unit_test(test_bad_long_line),
		cmocka_unit_test(test_small_error_buffer),
		cmocka_unit_test(test_key_line),
		cmocka_unit_test(test_job_key),
		cmocka_unit_test(test_bad_key),
		cmocka_unit_test(test_load_good),
		cmocka_unit_test(test_load_error_names_path_and_line),
		cmocka_unit_test(test_load_empty),
		cmocka_unit_test(test_load_nul_byte),
		cmocka_unit_test(test_load_nonexistent),
		cmocka_unit_test(test_load_directory),
	};

	return cmocka_run_group_tests_name("world", tests, NULL, NULL);
}
