/* Unit tests for triadd's configuration parser (lib/ctl/conf.[ch]): every
 * error class with its exact FILE:LINE message, and what a good file
 * yields. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "ctl/conf.h"

#define NAME "t.conf"

static void parse_ok(const char *text, struct tr_ctl_conf *c)
{
	char err[512] = "";
	int ret = tr_ctl_conf_parse(text, NAME, c, err, sizeof(err));

	if (ret)
		fail_msg("unexpected error %d: %s", ret, err);
}

/* Must fail with -EINVAL and exactly msg, leaving c untouched. */
static void parse_bad(const char *text, const char *msg)
{
	struct tr_ctl_conf c, before;
	char err[512] = "";

	memset(&c, 0xa5, sizeof(c));
	before = c;
	assert_int_equal(tr_ctl_conf_parse(text, NAME, &c, err, sizeof(err)), -EINVAL);
	assert_string_equal(err, msg);
	assert_memory_equal(&c, &before, sizeof(c));
}

#define PLANE0 "[plane a]\ndevice = rxe0\nnetdev = eth0\n"

static void test_good_file(void **state)
{
	struct tr_ctl_conf c;
	struct tr_ctl_policy p;

	(void)state;
	parse_ok("# triadd\n"
		 "[daemon]\n"
		 "  socket = /tmp/x.sock  \n"
		 "group = triad\n"
		 "socket_mode = 0600\n"
		 "debounce_down_ms = 50\n"
		 "debounce_up_ms = 0\n"
		 "; another comment\n"
		 "\n"
		 "[plane p0]\n"
		 "device = rxe_n0p0\n"
		 "port = 2\n"
		 "netdev = n0p0\n"
		 "[ plane  p1 ]\n"
		 "device = rxe_n0p1\n"
		 "subnet = 10.101.0.0/24\n"
		 "[policy]\n"
		 "TRIAD_ORDER = any\n"
		 "TRIAD_ADAPTIVE_T = 4 \n",
		 &c);
	assert_string_equal(c.socket, "/tmp/x.sock");
	assert_string_equal(c.group, "triad");
	assert_int_equal(c.group_line, 4);
	assert_int_equal(c.socket_mode, 0600);
	assert_int_equal(c.debounce_down_ms, 50);
	assert_int_equal(c.debounce_up_ms, 0);
	assert_int_equal(c.nplanes, 2);
	assert_string_equal(c.plane[0].name, "p0");
	assert_string_equal(c.plane[0].device, "rxe_n0p0");
	assert_int_equal(c.plane[0].port, 2);
	assert_string_equal(c.plane[0].netdev, "n0p0");
	assert_int_equal(c.plane[0].line, 10);
	assert_int_equal(c.nknobs, 2);
	assert_string_equal(c.knob[1].name, "TRIAD_ADAPTIVE_T");
	assert_string_equal(c.knob[1].value, "4");
	assert_int_equal(c.knob_line[1], 19);
	assert_int_equal(c.plane[1].port, 1); /* the default */
	assert_int_equal(c.plane[1].has_subnet, 1);
	assert_int_equal(c.plane[1].subnet, 0x0a650000u);
	assert_int_equal(c.plane[1].prefix, 24);
	tr_ctl_conf_policy(&c, &p);
	assert_int_equal(tr_ctl_policy_check(&p), 0);
	assert_int_equal(p.nplanes, 2);
	assert_string_equal(p.plane[1].name, "p1");
	assert_int_equal(p.nknobs, 2);
	assert_string_equal(p.knob[0].name, "TRIAD_ORDER");
	assert_string_equal(p.knob[0].value, "any");
	assert_int_equal(tr_ctl_policy_knob(&p, "TRIAD_ADAPTIVE_T"), 1);
	assert_int_equal(tr_ctl_policy_knob(&p, "TRIAD_SLOTS"), -1);
	assert_int_equal(tr_ctl_conf_plane_find(&c, "p1"), 1);
	assert_int_equal(tr_ctl_conf_plane_find(&c, "p2"), -1);
}

static void test_defaults(void **state)
{
	struct tr_ctl_conf c;

	(void)state;
	parse_ok(PLANE0, &c);
	assert_string_equal(c.socket, TR_CTL_DEFAULT_SOCKET);
	assert_string_equal(c.group, "");
	assert_int_equal(c.socket_mode, 0660);
	assert_int_equal(c.debounce_down_ms, 200);
	assert_int_equal(c.debounce_up_ms, 2000);
	/* No newline at the end, CRLF-free: still fine. */
	parse_ok("[plane a]\ndevice = d\nnetdev = e", &c);
	assert_string_equal(c.plane[0].netdev, "e");
}

static void test_syntax_errors(void **state)
{
	(void)state;
	parse_bad("[daemon]\nsocket /x\n" PLANE0, NAME ":2: expected 'key = value' or a [section]");
	parse_bad("socket = /x\n" PLANE0, NAME ":1: 'socket' outside a section");
	parse_bad("[daemon\n", NAME ":1: bad section header (want [daemon], [plane NAME], [policy] or [health])");
	parse_bad("[daemon] x\n", NAME ":1: bad section header (want [daemon], [plane NAME], [policy] or [health])");
	parse_bad("[daemons]\n", NAME ":1: unknown section [daemons]");
	parse_bad("[planes a]\n", NAME ":1: unknown section [planes a]");
	parse_bad("[daemon]\n = 3\n", NAME ":2: no key before '='");
	parse_bad("[daemon]\n[daemon]\n", NAME ":2: duplicate section [daemon] (first at line 1)");
}

static void test_key_errors(void **state)
{
	(void)state;
	parse_bad("[daemon]\nsockett = /x\n", NAME ":2: unknown key 'sockett' in [daemon]");
	parse_bad(PLANE0 "socket = /x\n", NAME ":4: unknown key 'socket' in [plane]");
	parse_bad("[daemon]\ndebounce_up_ms = 1\ndebounce_up_ms = 2\n",
		  NAME ":3: duplicate key 'debounce_up_ms' (first at line 2)");
	parse_bad(PLANE0 "device = rxe1\n", NAME ":4: duplicate key 'device' (first at line 2)");
	parse_bad("[daemon]\ngroup =\n", NAME ":2: 'group': empty value");
	parse_bad("[daemon]\nsocket = run/x\n", NAME ":2: 'socket': bad value 'run/x'");
	parse_bad("[daemon]\ngroup = a b\n", NAME ":2: 'group': bad group name 'a b'");
	parse_bad("[plane a]\ndevice = rxe 0\n", NAME ":2: 'device': bad value 'rxe 0'");
	parse_bad("[plane a]\nnetdev = abcdefghijklmnopq\n",
		  NAME ":2: 'netdev': longer than 15 characters");
}

static void test_value_errors(void **state)
{
	(void)state;
	parse_bad("[daemon]\ndebounce_down_ms = 12x\n",
		  NAME ":2: 'debounce_down_ms': not a number: '12x'");
	parse_bad("[daemon]\ndebounce_down_ms = -1\n",
		  NAME ":2: 'debounce_down_ms': not a number: '-1'");
	parse_bad("[daemon]\ndebounce_down_ms = 99999999999\n",
		  NAME ":2: 'debounce_down_ms': not a number: '99999999999'");
	parse_bad("[daemon]\ndebounce_down_ms = 600001\n",
		  NAME ":2: 'debounce_down_ms': 600001 out of range [0, 600000]");
	parse_bad("[plane a]\nport = 0\n", NAME ":2: 'port': 0 out of range [1, 255]");
	parse_bad("[daemon]\nsocket_mode = 0668\n",
		  NAME ":2: 'socket_mode': not an octal number: '0668'");
	parse_bad("[daemon]\nsocket_mode = 01777\n",
		  NAME ":2: 'socket_mode': 01777 out of range [00, 0777]");
	parse_bad("[plane a]\nsubnet = 10.0.0.1/24\n",
		  NAME ":2: 'subnet': not an IPv4 network a.b.c.d/len: '10.0.0.1/24'");
	parse_bad("[plane a]\nsubnet = 10.0.0.0/33\n",
		  NAME ":2: 'subnet': not an IPv4 network a.b.c.d/len: '10.0.0.0/33'");
	parse_bad("[plane a]\nsubnet = 10.0.0/8\n",
		  NAME ":2: 'subnet': not an IPv4 network a.b.c.d/len: '10.0.0/8'");
	parse_bad("[plane a]\nsubnet = 256.0.0.0/8\n",
		  NAME ":2: 'subnet': not an IPv4 network a.b.c.d/len: '256.0.0.0/8'");
}

static void test_plane_errors(void **state)
{
	(void)state;
	parse_bad("", NAME ":1: no [plane NAME] section");
	parse_bad("[daemon]\n# only\n", NAME ":2: no [plane NAME] section");
	parse_bad("[plane a]\nnetdev = e\n[plane b]\n", NAME ":1: plane 'a': no device");
	parse_bad(PLANE0 "[plane b]\ndevice = r\n", NAME ":4: plane 'b': neither netdev nor subnet");
	parse_bad(PLANE0 "[plane a]\n", NAME ":4: duplicate plane 'a' (first at line 1)");
	parse_bad("[plane a/b]\n", NAME ":1: bad plane name 'a/b' (1-15 of A-Z a-z 0-9 _ . -)");
	parse_bad("[plane abcdefghijklmnop]\n",
		  NAME ":1: bad plane name 'abcdefghijklmnop' (1-15 of A-Z a-z 0-9 _ . -)");
	parse_bad(PLANE0 "[plane b]\ndevice = rxe0\nnetdev = eth1\n",
		  NAME ":4: plane 'b': device rxe0 port 1 is plane 'a''s (line 1)");
}

/* [policy]: the syntax of knobs here; their meaning is the registry's
 * (test_registry). */
static void test_policy(void **state)
{
	char text[4096] = PLANE0 "[policy]\n";

	(void)state;
	parse_bad(PLANE0 "[policy]\nTRIAD_ORDER = any\nTRIAD_ORDER = strict\n",
		  NAME ":6: duplicate key 'TRIAD_ORDER' (first at line 5)");
	parse_bad(PLANE0 "[policy]\nTRIAD_ORDER =\n", NAME ":5: 'TRIAD_ORDER': empty value");
	parse_bad(PLANE0 "[policy]\norder = any\n",
		  NAME ":5: 'order': not a knob's name (TRIAD_ then A-Z 0-9 _, at most 31 "
		       "characters)");
	parse_bad(PLANE0 "[policy]\nTRIAD_ORDER = a b\n",
		  NAME ":5: TRIAD_ORDER=a b: not a knob's value (1-31 printable characters, "
		       "no blank, quote or backslash)");
	parse_bad(PLANE0 "[policy]\nTRIAD_ORDER = \"any\"\n",
		  NAME ":5: TRIAD_ORDER=\"any\": not a knob's value (1-31 printable characters, "
		       "no blank, quote or backslash)");
	parse_bad(PLANE0 "[policy]\n[policy]\n",
		  NAME ":5: duplicate section [policy] (first at line 4)");
	for (int i = 0; i <= TR_CTL_KNOBS; i++)
		snprintf(text + strlen(text), sizeof(text) - strlen(text), "TRIAD_K%d = 1\n", i);
	parse_bad(text, NAME ":21: too many knobs in [policy] (at most 16)");
	/* The keys of earlier versions say where their knob went. */
	parse_bad("[daemon]\nstrict_order = yes\n",
		  NAME ":2: 'strict_order' is gone: TRIAD_ORDER = strict|any in [policy]");
	parse_bad("[daemon]\ncontention_threshold = 8\n",
		  NAME ":2: 'contention_threshold' is gone: the contention input is triadd's "
		       "weights ([health]); TRIAD_ADAPTIVE = cont in [policy]");
	parse_bad("[plane a]\nslots = 8\n",
		  NAME ":2: 'slots' is gone: no knob: TRIAD_SLOTS is read at start only (the "
		       "environment's)");
	parse_bad("[plane a]\nneed_low = 8\n",
		  NAME ":2: 'need_low' is gone: TRIAD_FC_NEED_LOW in [policy], for every plane");
}

/* [health]: the degraded planes' thresholds and times. */
static void test_health(void **state)
{
	struct tr_ctl_conf c;

	(void)state;
	parse_ok(PLANE0, &c);
	assert_int_equal(c.health.enabled, 1);
	assert_int_equal(c.health.errors_permille, 10);
	assert_int_equal(c.health.latency_ratio, 8);
	assert_int_equal(c.health.min_packets, 100);
	assert_int_equal(c.health.degrade_ms, 3000);
	assert_int_equal(c.health.restore_ms, 10000);
	assert_int_equal(c.health.restore_max_ms, 160000);
	parse_ok(PLANE0 "[health]\ndegrade = no\nerrors_permille = 25\nlatency_ratio = 0\n"
		 "min_packets = 0\ndegrade_ms = 0\nrestore_ms = 100\nrestore_max_ms = 100\n",
		 &c);
	assert_int_equal(c.health.enabled, 0);
	assert_int_equal(c.health.errors_permille, 25);
	assert_int_equal(c.health.latency_ratio, 0);
	assert_int_equal(c.health.min_packets, 0);
	assert_int_equal(c.health.degrade_ms, 0);
	assert_int_equal(c.health.restore_ms, 100);
	assert_int_equal(c.health.restore_max_ms, 100);
	parse_bad("[health]\ndegrade = maybe\n", NAME ":2: 'degrade': not yes or no: 'maybe'");
	parse_bad("[health]\nerrors_permille = 0\n",
		  NAME ":2: 'errors_permille': 0 out of range [1, 1000]");
	parse_bad("[health]\nlatency_ratio = 1001\n",
		  NAME ":2: 'latency_ratio': 1001 out of range [0, 1000]");
	parse_bad("[health]\nrestore_ms = 99\n", NAME ":2: 'restore_ms': 99 out of range [100, 3600000]");
	parse_bad("[health]\ndegrade_ms = 3s\n", NAME ":2: 'degrade_ms': not a number: '3s'");
	parse_bad("[health]\nmin_packets =\n", NAME ":2: 'min_packets': empty value");
	parse_bad("[health]\nrestore_ms = 100\nrestore_ms = 200\n",
		  NAME ":3: duplicate key 'restore_ms' (first at line 2)");
	parse_bad("[health]\ndevice = rxe0\n", NAME ":2: unknown key 'device' in [health]");
	parse_bad("[health]\n[health]\n", NAME ":2: duplicate section [health] (first at line 1)");
	parse_bad("[health]\nrestore_ms = 5000\nrestore_max_ms = 4999\n" PLANE0,
		  NAME ":1: [health]: restore_max_ms 4999 is below restore_ms 5000");
}

static void test_too_many_planes(void **state)
{
	char text[4096] = "";

	(void)state;
	for (int i = 0; i <= TRIAD_MAX_PLANES; i++) {
		char sect[80];

		snprintf(sect, sizeof(sect), "[plane p%d]\ndevice = d%d\nnetdev = e%d\n", i, i, i);
		strcat(text, sect);
	}
	parse_bad(text, NAME ":25: too many planes (at most 8)");
}

static void test_long_line(void **state)
{
	char text[1200];

	(void)state;
	strcpy(text, "[daemon]\n#");
	memset(text + 10, 'x', 1100);
	text[1110] = '\0';
	parse_bad(text, NAME ":2: line longer than 1024 characters");
}

static void test_load(void **state)
{
	char path[] = "/tmp/test_ctlconf.XXXXXX", err[512], want[600];
	struct tr_ctl_conf c;
	int fd = mkstemp(path);

	(void)state;
	assert_true(fd >= 0);
	assert_int_equal(write(fd, "[daemon]\nbogus = 1\n", 19), 19);
	close(fd);
	assert_int_equal(tr_ctl_conf_load(path, &c, err, sizeof(err)), -EINVAL);
	snprintf(want, sizeof(want), "%s:2: unknown key 'bogus' in [daemon]", path);
	assert_string_equal(err, want);
	unlink(path);
	assert_int_equal(tr_ctl_conf_load(path, &c, err, sizeof(err)), -ENOENT);
	snprintf(want, sizeof(want), "%s: No such file or directory", path);
	assert_string_equal(err, want);
	/* Not a regular file: refused by name, and a FIFO without a writer
	 * does not make the load wait for one. */
	assert_int_equal(mkfifo(path, 0600), 0);
	assert_int_equal(tr_ctl_conf_load(path, &c, err, sizeof(err)), -EINVAL);
	snprintf(want, sizeof(want), "%s: not a regular file (a FIFO)", path);
	assert_string_equal(err, want);
	unlink(path);
	assert_int_equal(mkdir(path, 0700), 0);
	assert_int_equal(tr_ctl_conf_load(path, &c, err, sizeof(err)), -EINVAL);
	snprintf(want, sizeof(want), "%s: not a regular file (a directory)", path);
	assert_string_equal(err, want);
	rmdir(path);
	assert_int_equal(tr_ctl_conf_load("/dev/null", &c, err, sizeof(err)), -EINVAL);
	assert_string_equal(err, "/dev/null: not a regular file (a character device)");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_good_file),      cmocka_unit_test(test_defaults),
		cmocka_unit_test(test_syntax_errors),  cmocka_unit_test(test_key_errors),
		cmocka_unit_test(test_value_errors),   cmocka_unit_test(test_plane_errors),
		cmocka_unit_test(test_policy),
		cmocka_unit_test(test_health),
		cmocka_unit_test(test_too_many_planes), cmocka_unit_test(test_long_line),
		cmocka_unit_test(test_load),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
