/* Unit tests for the TRIAD_* configuration table (lib/core/config.[ch]).
 * Variables come from a table-driven lookup function, never the real
 * environment. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "core/config.h"
#include "base/log.h"

#define NVARS 35
#define TRIAD_MAX_PLANES_TEST 9

static const char *const all_vars[NVARS] = {
	"TRIAD_RANK",	     "TRIAD_WORLD",	       "TRIAD_LOG",	   "TRIAD_CHUNK_SIZE",
	"TRIAD_CONNECT_TIMEOUT_MS", "TRIAD_SPIN_US",   "TRIAD_SQ_DEPTH",   "TRIAD_SLOTS",
	"TRIAD_ACK_TIMEOUT", "TRIAD_RETRY_COUNT",      "TRIAD_QUERY_TIMEOUT_MS",
	"TRIAD_SLOT_SIZE",   "TRIAD_FC_TIMER_MS",      "TRIAD_FC_NEED_MEDIUM", "TRIAD_FC_NEED_LOW",
	"TRIAD_BSM_LINGER_US", "TRIAD_COPY_TIMEOUT_MS", "TRIAD_COPY_OPS",
	"TRIAD_BG_SPIN_US", "TRIAD_BCAST_PIPELINE", "TRIAD_TRACE", "TRIAD_ORDER",
	"TRIAD_STRIPE_MIN", "TRIAD_ADAPTIVE", "TRIAD_ADAPTIVE_T", "TRIAD_ADAPTIVE_ALPHA",
	"TRIAD_DAEMON",	     "TRIAD_DEVICES", "TRIAD_REG_CACHE", "TRIAD_CONNECT",
	"TRIAD_COPY_EAGER", "TRIAD_REJOIN_MS", "TRIAD_BARE_AM", "TRIAD_LOG_TIME",
	"TRIAD_BCAST_SHAPE",
};

struct fake_env {
	const char *const *kv; /* name, value, name, value, ..., NULL */
	int asked[NVARS];      /* how often each of all_vars was looked up */
	int asked_other;       /* lookups of names not in all_vars */
};

static const char *fake_lookup(const char *name, void *arg)
{
	struct fake_env *env = arg;
	int i, known = 0;

	for (i = 0; i < NVARS; i++) {
		if (!strcmp(name, all_vars[i])) {
			env->asked[i]++;
			known = 1;
		}
	}
	if (!known)
		env->asked_other++;
	for (i = 0; env->kv && env->kv[i]; i += 2)
		if (!strcmp(env->kv[i], name))
			return env->kv[i + 1];
	return NULL;
}

static void assert_defaults(const struct tr_config *c)
{
	assert_int_equal(c->rank, -1);
	assert_string_equal(c->world, "");
	assert_int_equal(c->log_level, TR_LOG_WARN);
	assert_true(c->chunk_size == 1u << 20);
	assert_int_equal(c->connect_timeout_ms, 60000);
	assert_int_equal(c->spin_us, 200);
	assert_int_equal(c->sq_depth, 128);
	assert_int_equal(c->slots, 16);
	assert_int_equal(c->ack_timeout, 14);
	assert_int_equal(c->retry_count, 6);
	assert_int_equal(c->query_timeout_ms, 30000);
	assert_int_equal(c->order, TR_ORDER_STRICT);
	assert_int_equal(c->bare_am, 1);
	assert_int_equal(c->log_time, 0);
	assert_true(c->stripe_min == 256 * 1024);
	assert_true(c->reg_cache == 0);
	assert_true(c->copy_eager == 2048);
	assert_int_equal(c->adaptive, 1); /* occ */
	assert_int_equal(c->connect, TR_CONNECT_EAGER);
	assert_int_equal(c->bcast_shape, 0); /* auto */
	assert_int_equal(c->adaptive_t, 8);
	assert_int_equal(c->adaptive_alpha, 50);
	assert_string_equal(c->devices, "");
}

/* Loads with the single variable name=value, which must be accepted. */
static struct tr_config load1(const char *name, const char *value)
{
	const char *kv[] = { name, value, NULL };
	struct fake_env env = { .kv = kv };
	struct tr_config c;
	char err[512] = "";
	int ret = tr_config_load(&c, fake_lookup, &env, err, sizeof(err));

	if (ret)
		fail_msg("%s=%s rejected (%d): %s", name, value, ret, err);
	return c;
}

/* Loads with the single variable name=value, which must be rejected with msg. */
static void load_bad(const char *name, const char *value, const char *msg)
{
	const char *kv[] = { name, value, NULL };
	struct fake_env env = { .kv = kv };
	struct tr_config c;
	char err[512] = "";

	assert_int_equal(tr_config_load(&c, fake_lookup, &env, err, sizeof(err)), -EINVAL);
	assert_string_equal(err, msg);
}

/* ---- defaults and lookup ------------------------------------------------------ */

static void test_defaults_no_lookup(void **state)
{
	struct tr_config c;
	char err[64] = "";

	(void)state;
	memset(&c, 0x5a, sizeof(c));
	assert_int_equal(tr_config_load(&c, NULL, NULL, err, sizeof(err)), 0);
	assert_defaults(&c);
	assert_string_equal(err, "");
}

static void test_defaults_empty_env(void **state)
{
	struct fake_env env = { .kv = NULL };
	struct tr_config c;
	char err[64] = "";

	(void)state;
	memset(&c, 0x5a, sizeof(c));
	assert_int_equal(tr_config_load(&c, fake_lookup, &env, err, sizeof(err)), 0);
	assert_defaults(&c);
	/* Every variable of the table is looked up once, and nothing else. */
	for (int i = 0; i < NVARS; i++)
		assert_int_equal(env.asked[i], 1);
	assert_int_equal(env.asked_other, 0);
}

static void test_set_every_variable(void **state)
{
	static const char *const kv[] = {
		"TRIAD_RANK", "12",
		"TRIAD_WORLD", "/etc/triad/world",
		"TRIAD_LOG", "debug",
		"TRIAD_CHUNK_SIZE", "64k",
		"TRIAD_CONNECT_TIMEOUT_MS", "1500",
		"TRIAD_SPIN_US", "0",
		"TRIAD_SQ_DEPTH", "256",
		"TRIAD_SLOTS", "32",
		"TRIAD_ACK_TIMEOUT", "14",
		"TRIAD_RETRY_COUNT", "7",
		"TRIAD_QUERY_TIMEOUT_MS", "250",
		"TRIAD_UNKNOWN", "ignored",
		NULL,
	};
	struct fake_env env = { .kv = kv };
	struct tr_config c;
	char err[64] = "";

	(void)state;
	assert_int_equal(tr_config_load(&c, fake_lookup, &env, err, sizeof(err)), 0);
	assert_int_equal(c.rank, 12);
	assert_string_equal(c.world, "/etc/triad/world");
	assert_int_equal(c.log_level, TR_LOG_DEBUG);
	assert_true(c.chunk_size == 65536);
	assert_int_equal(c.connect_timeout_ms, 1500);
	assert_int_equal(c.spin_us, 0);
	assert_int_equal(c.sq_depth, 256);
	assert_int_equal(c.slots, 32);
	assert_int_equal(c.ack_timeout, 14);
	assert_int_equal(c.retry_count, 7);
	assert_int_equal(c.query_timeout_ms, 250);
}

static void test_lookup_arg_passed(void **state)
{
	static const char *const kv1[] = { "TRIAD_RANK", "1", NULL };
	static const char *const kv2[] = { "TRIAD_RANK", "2", NULL };
	struct fake_env e1 = { .kv = kv1 }, e2 = { .kv = kv2 };
	struct tr_config c;
	char err[64];

	(void)state;
	assert_int_equal(tr_config_load(&c, fake_lookup, &e2, err, sizeof(err)), 0);
	assert_int_equal(c.rank, 2);
	assert_int_equal(tr_config_load(&c, fake_lookup, &e1, err, sizeof(err)), 0);
	assert_int_equal(c.rank, 1);
}

static void test_reload_resets_to_defaults(void **state)
{
	struct tr_config c = load1("TRIAD_SQ_DEPTH", "4");
	char err[64];

	(void)state;
	assert_int_equal(c.sq_depth, 4);
	assert_int_equal(tr_config_load(&c, NULL, NULL, err, sizeof(err)), 0);
	assert_defaults(&c);
}

/* ---- every integer variable: bounds ------------------------------------------- */

struct int_var {
	const char *name;
	size_t offset;
	long long min, max;
};

#define IV(n, f, lo, hi) { n, offsetof(struct tr_config, f), lo, hi }
static const struct int_var int_vars[] = {
	IV("TRIAD_RANK", rank, -1, 2147483647),
	IV("TRIAD_CONNECT_TIMEOUT_MS", connect_timeout_ms, 100, 2147483647),
	IV("TRIAD_REJOIN_MS", rejoin_ms, 0, 2147483647),
	IV("TRIAD_SPIN_US", spin_us, 0, 10000000),
	IV("TRIAD_SQ_DEPTH", sq_depth, 4, 16384),
	IV("TRIAD_SLOTS", slots, 1, 64),
	IV("TRIAD_ACK_TIMEOUT", ack_timeout, 8, 31),
	IV("TRIAD_RETRY_COUNT", retry_count, 1, 7),
	IV("TRIAD_QUERY_TIMEOUT_MS", query_timeout_ms, 10, 2147483647),
};
#undef IV

static void test_int_bounds(void **state)
{
	char val[64], msg[256];

	(void)state;
	for (size_t i = 0; i < sizeof(int_vars) / sizeof(int_vars[0]); i++) {
		const struct int_var *v = &int_vars[i];
		struct tr_config c;

		snprintf(val, sizeof(val), "%lld", v->min);
		c = load1(v->name, val);
		assert_int_equal(*(int *)((char *)&c + v->offset), v->min);
		snprintf(val, sizeof(val), "%lld", v->max);
		c = load1(v->name, val);
		assert_int_equal(*(int *)((char *)&c + v->offset), v->max);

		snprintf(val, sizeof(val), "%lld", v->min - 1);
		snprintf(msg, sizeof(msg), "%s=%s: out of range [%lld, %lld]", v->name, val,
			 v->min, v->max);
		load_bad(v->name, val, msg);
		snprintf(val, sizeof(val), "%lld", v->max + 1);
		snprintf(msg, sizeof(msg), "%s=%s: out of range [%lld, %lld]", v->name, val,
			 v->min, v->max);
		load_bad(v->name, val, msg);
	}
}

static void test_int_not_integer(void **state)
{
	static const char *const bad[] = { "", "abc", "12abc", "1.5", "0x10", "1k", "12 " };
	char msg[256];

	(void)state;
	for (size_t i = 0; i < sizeof(int_vars) / sizeof(int_vars[0]); i++) {
		for (size_t j = 0; j < sizeof(bad) / sizeof(bad[0]); j++) {
			snprintf(msg, sizeof(msg), "%s=%s: not an integer", int_vars[i].name, bad[j]);
			load_bad(int_vars[i].name, bad[j], msg);
		}
	}
}

static void test_int_huge(void **state)
{
	(void)state;
	/* Larger than any int: rejected, never truncated into range. */
	load_bad("TRIAD_SPIN_US", "4294967496", "TRIAD_SPIN_US=4294967496: out of range [0, 10000000]");
	load_bad("TRIAD_RANK", "99999999999999999999", "TRIAD_RANK=99999999999999999999: not an integer");
}

/* ---- size, string and log level ------------------------------------------------ */

static void test_chunk_size(void **state)
{
	(void)state;
	assert_true(load1("TRIAD_CHUNK_SIZE", "4096").chunk_size == 4096);
	assert_true(load1("TRIAD_CHUNK_SIZE", "4k").chunk_size == 4096);
	assert_true(load1("TRIAD_CHUNK_SIZE", "2M").chunk_size == 2u << 20);
	assert_true(load1("TRIAD_CHUNK_SIZE", "1MiB").chunk_size == 1u << 20);
	assert_true(load1("TRIAD_CHUNK_SIZE", "1g").chunk_size == 1u << 30);
	assert_true(load1("TRIAD_CHUNK_SIZE", "1073741824").chunk_size == 1u << 30);
	load_bad("TRIAD_CHUNK_SIZE", "4095",
		 "TRIAD_CHUNK_SIZE=4095: out of range [4096, 1073741824]");
	load_bad("TRIAD_CHUNK_SIZE", "1073741825",
		 "TRIAD_CHUNK_SIZE=1073741825: out of range [4096, 1073741824]");
	load_bad("TRIAD_CHUNK_SIZE", "2G", "TRIAD_CHUNK_SIZE=2G: out of range [4096, 1073741824]");
	load_bad("TRIAD_CHUNK_SIZE", "1T",
		 "TRIAD_CHUNK_SIZE=1T: not a size (examples: 4096, 64k, 1M)");
	load_bad("TRIAD_CHUNK_SIZE", "1MB2",
		 "TRIAD_CHUNK_SIZE=1MB2: not a size (examples: 4096, 64k, 1M)");
	load_bad("TRIAD_CHUNK_SIZE", "-4096",
		 "TRIAD_CHUNK_SIZE=-4096: not a size (examples: 4096, 64k, 1M)");
	load_bad("TRIAD_CHUNK_SIZE", "", "TRIAD_CHUNK_SIZE=: not a size (examples: 4096, 64k, 1M)");
	load_bad("TRIAD_CHUNK_SIZE", "99999999999999999999k",
		 "TRIAD_CHUNK_SIZE=99999999999999999999k: not a size (examples: 4096, 64k, 1M)");
}

static void test_world_string(void **state)
{
	char val[300];

	(void)state;
	assert_string_equal(load1("TRIAD_WORLD", "").world, "");
	memset(val, 'a', 255);
	val[255] = '\0';
	assert_string_equal(load1("TRIAD_WORLD", val).world, val);
	val[255] = 'a';
	val[256] = '\0';
	load_bad("TRIAD_WORLD", val, "TRIAD_WORLD: value longer than 255 characters");
}

static void test_log_level(void **state)
{
	(void)state;
	assert_int_equal(load1("TRIAD_LOG", "error").log_level, TR_LOG_ERROR);
	assert_int_equal(load1("TRIAD_LOG", "warn").log_level, TR_LOG_WARN);
	assert_int_equal(load1("TRIAD_LOG", "info").log_level, TR_LOG_INFO);
	assert_int_equal(load1("TRIAD_LOG", "debug").log_level, TR_LOG_DEBUG);
	assert_int_equal(load1("TRIAD_LOG", "trace").log_level, TR_LOG_TRACE);
	assert_int_equal(load1("TRIAD_LOG", "DEBUG").log_level, TR_LOG_DEBUG);
	assert_int_equal(load1("TRIAD_LOG", "Info").log_level, TR_LOG_INFO);
	load_bad("TRIAD_LOG", "verbose",
		 "TRIAD_LOG=verbose: not one of error, warn, info, debug, trace");
	load_bad("TRIAD_LOG", "2", "TRIAD_LOG=2: not one of error, warn, info, debug, trace");
	load_bad("TRIAD_LOG", "", "TRIAD_LOG=: not one of error, warn, info, debug, trace");
	load_bad("TRIAD_LOG", "warning",
		 "TRIAD_LOG=warning: not one of error, warn, info, debug, trace");
}

static void test_order(void **state)
{
	(void)state;
	assert_int_equal(load1("TRIAD_ORDER", "strict").order, TR_ORDER_STRICT);
	assert_int_equal(load1("TRIAD_ORDER", "STRICT").order, TR_ORDER_STRICT);
	assert_int_equal(load1("TRIAD_ORDER", "any").order, TR_ORDER_ANY);
	load_bad("TRIAD_ORDER", "fifo", "TRIAD_ORDER=fifo: not one of any, strict");
	load_bad("TRIAD_ORDER", "", "TRIAD_ORDER=: not one of any, strict");
	load_bad("TRIAD_ORDER", "1", "TRIAD_ORDER=1: not one of any, strict");
}

static void test_bare_am(void **state)
{
	(void)state;
	assert_int_equal(load1("TRIAD_BARE_AM", "on").bare_am, 1);
	assert_int_equal(load1("TRIAD_BARE_AM", "OFF").bare_am, 0);
	load_bad("TRIAD_BARE_AM", "1", "TRIAD_BARE_AM=1: not one of off, on");
	load_bad("TRIAD_BARE_AM", "", "TRIAD_BARE_AM=: not one of off, on");
	assert_int_equal(load1("TRIAD_LOG_TIME", "on").log_time, 1);
	assert_int_equal(load1("TRIAD_LOG_TIME", "off").log_time, 0);
	load_bad("TRIAD_LOG_TIME", "yes", "TRIAD_LOG_TIME=yes: not one of off, on");
}

static void test_connect(void **state)
{
	(void)state;
	assert_int_equal(load1("TRIAD_CONNECT", "eager").connect, TR_CONNECT_EAGER);
	assert_int_equal(load1("TRIAD_CONNECT", "lazy").connect, TR_CONNECT_LAZY);
	assert_int_equal(load1("TRIAD_CONNECT", "LAZY").connect, TR_CONNECT_LAZY);
	load_bad("TRIAD_CONNECT", "ondemand", "TRIAD_CONNECT=ondemand: not one of eager, lazy");
	load_bad("TRIAD_CONNECT", "", "TRIAD_CONNECT=: not one of eager, lazy");
}

static void test_bcast_shape(void **state)
{
	(void)state;
	assert_int_equal(load1("TRIAD_BCAST_SHAPE", "auto").bcast_shape, 0);
	assert_int_equal(load1("TRIAD_BCAST_SHAPE", "tree").bcast_shape, 1);
	assert_int_equal(load1("TRIAD_BCAST_SHAPE", "TwoTree").bcast_shape, 2);
	load_bad("TRIAD_BCAST_SHAPE", "binomial",
		 "TRIAD_BCAST_SHAPE=binomial: not one of auto, tree, twotree");
	load_bad("TRIAD_BCAST_SHAPE", "", "TRIAD_BCAST_SHAPE=: not one of auto, tree, twotree");
}

static void test_adaptive(void **state)
{
	(void)state;
	assert_int_equal(load1("TRIAD_ADAPTIVE", "off").adaptive, 0);
	assert_int_equal(load1("TRIAD_ADAPTIVE", "occ").adaptive, 1);
	assert_int_equal(load1("TRIAD_ADAPTIVE", "cont").adaptive, 2);
	load_bad("TRIAD_ADAPTIVE", "on", "TRIAD_ADAPTIVE=on: not one of off, occ, cont");
	assert_int_equal(load1("TRIAD_ADAPTIVE_ALPHA", "100").adaptive_alpha, 100);
	load_bad("TRIAD_ADAPTIVE_ALPHA", "0", "TRIAD_ADAPTIVE_ALPHA=0: out of range [1, 100]");
	load_bad("TRIAD_ADAPTIVE_T", "-1", "TRIAD_ADAPTIVE_T=-1: out of range [0, 1048576]");
}

static void test_stripe_min(void **state)
{
	(void)state;
	assert_true(load1("TRIAD_STRIPE_MIN", "4k").stripe_min == 4096);
	assert_true(load1("TRIAD_STRIPE_MIN", "1G").stripe_min == 1ull << 30);
	load_bad("TRIAD_STRIPE_MIN", "4095",
		 "TRIAD_STRIPE_MIN=4095: out of range [4096, 1125899906842624]");
	load_bad("TRIAD_STRIPE_MIN", "big",
		 "TRIAD_STRIPE_MIN=big: not a size (examples: 4096, 64k, 1M)");
}

static void test_reg_cache(void **state)
{
	(void)state;
	assert_true(load1("TRIAD_REG_CACHE", "0").reg_cache == 0);
	assert_true(load1("TRIAD_REG_CACHE", "256M").reg_cache == 256ull << 20);
	load_bad("TRIAD_REG_CACHE", "-1", "TRIAD_REG_CACHE=-1: not a size (examples: 4096, 64k, 1M)");
}

static void test_copy_eager(void **state)
{
	(void)state;
	assert_true(load1("TRIAD_COPY_EAGER", "0").copy_eager == 0);
	assert_true(load1("TRIAD_COPY_EAGER", "8k").copy_eager == 8192);
	load_bad("TRIAD_COPY_EAGER", "64k", "TRIAD_COPY_EAGER=64k: out of range [0, 65535]");
}

static void test_one_bad_variable_among_good(void **state)
{
	static const char *const kv[] = {
		"TRIAD_RANK", "3", "TRIAD_SQ_DEPTH", "1", "TRIAD_SPIN_US", "5", NULL,
	};
	struct fake_env env = { .kv = kv };
	struct tr_config c;
	char err[256];

	(void)state;
	assert_int_equal(tr_config_load(&c, fake_lookup, &env, err, sizeof(err)), -EINVAL);
	assert_string_equal(err, "TRIAD_SQ_DEPTH=1: out of range [4, 16384]");
}

/* Flow control's thresholds must fit each other and the slots. */
static void test_fc_needs(void **state)
{
	const char *kv[] = { "TRIAD_FC_NEED_MEDIUM", "5", "TRIAD_FC_NEED_LOW", "3", NULL };
	struct fake_env env = { .kv = kv };
	struct tr_config c;
	char err[512] = "";

	(void)state;
	assert_int_equal(tr_config_load(&c, fake_lookup, &env, err, sizeof(err)), -EINVAL);
	assert_string_equal(err, "TRIAD_FC_NEED_MEDIUM=5 exceeds TRIAD_FC_NEED_LOW=3: a "
				 "medium-priority message may not need more free slots than a low one");
	load_bad("TRIAD_FC_NEED_MEDIUM", "4",
		 "TRIAD_FC_NEED_MEDIUM=4 exceeds TRIAD_FC_NEED_LOW=3: a medium-priority message "
		 "may not need more free slots than a low one");
	c = load1("TRIAD_FC_NEED_MEDIUM", "3"); /* equal is fine */
	assert_int_equal(c.need_medium, 3);
	c = load1("TRIAD_SLOTS", "2"); /* fewer slots than a need: clamped per connection */
	assert_int_equal(c.slots, 2);
}

static void test_two_bad_variables(void **state)
{
	static const char *const kv[] = {
		"TRIAD_SQ_DEPTH", "1", "TRIAD_LOG", "loud", NULL,
	};
	struct fake_env env = { .kv = kv };
	struct tr_config c;
	char err[256];

	(void)state;
	/* Either may be reported, but the message is a whole one about one of them. */
	assert_int_equal(tr_config_load(&c, fake_lookup, &env, err, sizeof(err)), -EINVAL);
	if (strcmp(err, "TRIAD_SQ_DEPTH=1: out of range [4, 16384]") &&
	    strcmp(err, "TRIAD_LOG=loud: not one of error, warn, info, debug, trace"))
		fail_msg("unexpected message: %s", err);
}

/* The line of the printed table that describes name. */
static char *table_line(char *text, const char *name, char *line, size_t size)
{
	size_t n = strlen(name);

	for (char *s = text; s && *s; s = strchr(s, '\n') ? strchr(s, '\n') + 1 : NULL) {
		if (!strncmp(s, name, n) && s[n] == ' ') {
			snprintf(line, size, "%.*s", (int)strcspn(s, "\n"), s);
			return line;
		}
	}
	fail_msg("%s is not in the table", name);
	return NULL;
}

static void test_print_table(void **state)
{
	struct tr_config c = load1("TRIAD_SQ_DEPTH", "512");
	char *text = NULL, line[512];
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);

	(void)state;
	assert_non_null(f);
	tr_config_print_table(f, &c);
	assert_int_equal(fclose(f), 0);
	for (int i = 0; i < NVARS; i++)
		table_line(text, all_vars[i], line, sizeof(line));
	table_line(text, "TRIAD_SQ_DEPTH", line, sizeof(line));
	assert_non_null(strstr(line, "= 512 "));
	assert_non_null(strstr(line, "(default 128)"));
	table_line(text, "TRIAD_CHUNK_SIZE", line, sizeof(line));
	assert_non_null(strstr(line, "= 1048576 "));
	assert_non_null(strstr(line, "(default 1M)"));
	table_line(text, "TRIAD_LOG", line, sizeof(line));
	assert_non_null(strstr(line, "= warn "));
	table_line(text, "TRIAD_RANK", line, sizeof(line));
	assert_non_null(strstr(line, "= -1 "));
	free(text);
}

/* ---- tr_parse_size ----------------------------------------------------------------- */

static void size_ok(const char *s, uint64_t want)
{
	uint64_t v = 0xdeadbeef;
	int ret = tr_parse_size(s, &v);

	if (ret || v != want)
		fail_msg("tr_parse_size(\"%s\") = %d, %llu; want 0, %llu", s, ret,
			 (unsigned long long)v, (unsigned long long)want);
}

static void size_bad(const char *s, int want_ret)
{
	uint64_t v = 0xdeadbeef;
	int ret = tr_parse_size(s, &v);

	if (ret != want_ret)
		fail_msg("tr_parse_size(\"%s\") = %d (value %llu); want %d", s ? s : "(null)", ret,
			 (unsigned long long)v, want_ret);
	assert_true(v == 0xdeadbeef); /* not written on failure */
}

static void test_parse_size_good(void **state)
{
	(void)state;
	size_ok("0", 0);
	size_ok("1", 1);
	size_ok("123", 123);
	size_ok("4096", 4096);
	size_ok("64k", 64 << 10);
	size_ok("64K", 64 << 10);
	size_ok("64kB", 64 << 10);
	size_ok("64KiB", 64 << 10);
	size_ok("1M", 1 << 20);
	size_ok("1m", 1 << 20);
	size_ok("1MiB", 1 << 20);
	size_ok("1MB", 1 << 20);
	size_ok("2g", 2ull << 30);
	size_ok("2GiB", 2ull << 30);
	size_ok("0k", 0);
	size_ok("007", 7);
	size_ok("18446744073709551615", UINT64_MAX);
	size_ok("18014398509481983k", UINT64_MAX >> 10 << 10);
	size_ok("17592186044415M", UINT64_MAX >> 20 << 20);
	size_ok("17592186044416k", 1ull << 54);
	size_ok("17179869183G", UINT64_MAX >> 30 << 30);
}

static void test_parse_size_bad(void **state)
{
	(void)state;
	size_bad(NULL, -EINVAL);
	size_bad("", -EINVAL);
	size_bad("-1", -EINVAL);
	size_bad("+1", -EINVAL);
	size_bad(" -1", -EINVAL);
	size_bad(" 1", -EINVAL);
	size_bad("\t-1k", -EINVAL);
	size_bad("12x", -EINVAL);
	size_bad("k", -EINVAL);
	size_bad("M", -EINVAL);
	size_bad("1T", -EINVAL);
	size_bad("1 M", -EINVAL);
	size_bad("1M ", -EINVAL);
	size_bad("1Mx", -EINVAL);
	size_bad("1MiBx", -EINVAL);
	size_bad("1MBB", -EINVAL);
	size_bad("1iB", -EINVAL);
	size_bad("0x10", -EINVAL);
	size_bad("1.5M", -EINVAL);
	size_bad("1kk", -EINVAL);
	/* Overflow. */
	size_bad("18446744073709551616", -ERANGE);
	size_bad("99999999999999999999999999", -ERANGE);
	size_bad("18014398509481984k", -ERANGE);
	size_bad("18014398509481984KiB", -ERANGE);
	size_bad("17592186044416M", -ERANGE);
	size_bad("17179869184G", -ERANGE);
	size_bad("18446744073709551615k", -ERANGE);
}

/* ---- TRIAD_DEVICES ------------------------------------------------------------- */

static void test_devices_good(void **state)
{
	struct tr_devspec d[TRIAD_MAX_PLANES_TEST];
	char err[256] = "";
	struct tr_config c = load1("TRIAD_DEVICES", "rxe_n0p0:1,rxe_n0p1");

	(void)state;
	assert_string_equal(c.devices, "rxe_n0p0:1,rxe_n0p1");
	assert_int_equal(tr_devices_parse("", d, 8, err, sizeof(err)), 0);
	assert_int_equal(tr_devices_parse(c.devices, d, 8, err, sizeof(err)), 2);
	assert_string_equal(d[0].name, "rxe_n0p0");
	assert_int_equal(d[0].port, 1);
	assert_string_equal(d[1].name, "rxe_n0p1");
	assert_int_equal(d[1].port, 0);
	assert_int_equal(tr_devices_parse("mlx5_0:1,mlx5_0:2", d, 8, err, sizeof(err)), 2);
	assert_int_equal(d[1].port, 2);
	assert_int_equal(tr_devices_parse("a.b-c_9:255", d, 8, err, sizeof(err)), 1);
	assert_int_equal(d[0].port, 255);
	assert_string_equal(err, "");
}

static void devices_bad(const char *s, const char *msg)
{
	struct tr_devspec d[TRIAD_MAX_PLANES_TEST];
	char err[256] = "";

	assert_int_equal(tr_devices_parse(s, d, 8, err, sizeof(err)), -EINVAL);
	assert_string_equal(err, msg);
}

static void test_devices_bad(void **state)
{
	(void)state;
	devices_bad(",", "TRIAD_DEVICES: an empty device name");
	devices_bad("rxe0,", "TRIAD_DEVICES: an empty device name");
	devices_bad("rxe0,,rxe1", "TRIAD_DEVICES: an empty device name");
	devices_bad(":1", "TRIAD_DEVICES: an empty device name");
	devices_bad("rxe0:", "TRIAD_DEVICES: rxe0: no port after ':'");
	devices_bad("rxe0:0", "TRIAD_DEVICES: rxe0: port 0 (ports count from 1)");
	devices_bad("rxe0:256", "TRIAD_DEVICES: rxe0: port '256' is not 1..255");
	devices_bad("rxe0:1x", "TRIAD_DEVICES: rxe0: port '1x' is not 1..255");
	devices_bad("rxe0:-1", "TRIAD_DEVICES: rxe0: port '-1' is not 1..255");
	devices_bad("rxe 0", "TRIAD_DEVICES: 'rxe 0' is not a device name");
	devices_bad("rxe0,rxe1,rxe0", "TRIAD_DEVICES: rxe0 named twice");
	devices_bad("rxe0:1,rxe0:1", "TRIAD_DEVICES: rxe0 named twice");
	devices_bad("rxe0,rxe0:1", "TRIAD_DEVICES: rxe0 named twice");
	devices_bad("a,b,c,d,e,f,g,h,i", "TRIAD_DEVICES: more than 8 devices");
	devices_bad("0123456789012345678901234567890123456789012345678901234567890123",
		    "TRIAD_DEVICES: device name '0123456789012345...' longer than 63 characters");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_defaults_no_lookup),
		cmocka_unit_test(test_defaults_empty_env),
		cmocka_unit_test(test_set_every_variable),
		cmocka_unit_test(test_lookup_arg_passed),
		cmocka_unit_test(test_reload_resets_to_defaults),
		cmocka_unit_test(test_int_bounds),
		cmocka_unit_test(test_int_not_integer),
		cmocka_unit_test(test_int_huge),
		cmocka_unit_test(test_chunk_size),
		cmocka_unit_test(test_world_string),
		cmocka_unit_test(test_log_level),
		cmocka_unit_test(test_order),
		cmocka_unit_test(test_bare_am),
		cmocka_unit_test(test_stripe_min),
		cmocka_unit_test(test_reg_cache),
		cmocka_unit_test(test_copy_eager),
		cmocka_unit_test(test_bcast_shape),
		cmocka_unit_test(test_adaptive),
		cmocka_unit_test(test_connect),
		cmocka_unit_test(test_one_bad_variable_among_good),
		cmocka_unit_test(test_two_bad_variables),
		cmocka_unit_test(test_fc_needs),
		cmocka_unit_test(test_print_table),
		cmocka_unit_test(test_parse_size_good),
		cmocka_unit_test(test_parse_size_bad),
		cmocka_unit_test(test_devices_good),
		cmocka_unit_test(test_devices_bad),
	};

	return cmocka_run_group_tests_name("config", tests, NULL, NULL);
}
