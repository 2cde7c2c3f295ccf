/* Unit tests for the one registry of knobs (lib/core/config.[ch]) as
 * triadd publishes it (lib/ctl: the policy table's knobs by name, the
 * APPLIED report): which knobs triadd may set and when they take effect,
 * the precedence environment > daemon > default, the one parser for both
 * sources, and what a process does with knobs it cannot take. */
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
#include "ctl/msg.h"
#include "ctl/table.h"

/* name, value, ..., NULL */
static const char *lookup(const char *name, void *arg)
{
	const char *const *kv = arg;

	for (int i = 0; kv && kv[i]; i += 2)
		if (!strcmp(kv[i], name))
			return kv[i + 1];
	return NULL;
}

static struct tr_config env(const char *const *kv)
{
	struct tr_config c;
	char err[300];

	if (tr_config_load(&c, lookup, (void *)kv, err, sizeof(err)))
		fail_msg("load: %s", err);
	return c;
}

static struct tr_config_var var(const struct tr_config *c, const char *name)
{
	struct tr_config_var v;
	int i = tr_config_index(name);

	assert_true(i >= 0);
	assert_int_equal(tr_config_var(c, (size_t)i, &v), 0);
	assert_string_equal(v.name, name);
	return v;
}

static void assert_knob(const struct tr_config *c, const char *name, const char *value,
			enum tr_config_src src)
{
	struct tr_config_var v = var(c, name);

	if (strcmp(v.value, value) || v.src != src)
		fail_msg("%s = %s from the %s; want %s from the %s", name, v.value,
			 tr_config_src_str(v.src), value, tr_config_src_str(src));
}

/* Exactly these knobs are triadd's, each taking effect when the data
 * path reads it (lib/core/ctl.c); every other is read at start. */
static void test_which_knobs(void **state)
{
	static const struct {
		const char *name;
		enum tr_config_when when;
	} want[] = {
		{ "TRIAD_ORDER", TR_CONFIG_NEW_MSGS },
		{ "TRIAD_ADAPTIVE", TR_CONFIG_AT_ONCE },
		{ "TRIAD_ADAPTIVE_T", TR_CONFIG_AT_ONCE },
		{ "TRIAD_ADAPTIVE_ALPHA", TR_CONFIG_AT_ONCE },
		{ "TRIAD_FC_NEED_MEDIUM", TR_CONFIG_NEXT_CONN },
		{ "TRIAD_FC_NEED_LOW", TR_CONFIG_NEXT_CONN },
	};
	struct tr_config c = env(NULL);
	struct tr_config_var v;
	size_t n = 0, total = 0;

	(void)state;
	for (size_t i = 0; tr_config_var(&c, i, &v) == 0; i++, total++) {
		size_t k;

		assert_int_equal(v.src, TR_CONFIG_DEFAULT);
		for (k = 0; k < sizeof(want) / sizeof(want[0]); k++)
			if (!strcmp(want[k].name, v.name))
				break;
		if (k == sizeof(want) / sizeof(want[0])) {
			if (v.when != TR_CONFIG_AT_START)
				fail_msg("%s: triadd may set it", v.name);
			continue;
		}
		assert_int_equal(v.when, want[k].when);
		/* It must fit the table and the APPLIED report. */
		assert_true(tr_ctl_knob_ok(v.name, v.value));
		n++;
	}
	assert_int_equal(n, sizeof(want) / sizeof(want[0]));
	assert_true(n <= TR_CTL_KNOBS);
	assert_true(total <= TR_CONFIG_MAX_VARS);
	assert_int_equal(tr_config_index("TRIAD_NOPE"), -ENOENT);
	assert_string_equal(tr_config_when_str(TR_CONFIG_NEXT_CONN), "at the next connection");
	assert_string_equal(tr_config_src_str(TR_CONFIG_ENV), "environment");
	assert_string_equal(tr_ctl_src_str(TR_CTL_SRC_DAEMON), "daemon");
}

/* The environment beats triadd, triadd beats the default; what triadd
 * stops publishing goes back to the default, the environment's stays. */
static void test_precedence(void **state)
{
	static const char *const e[] = { "TRIAD_ADAPTIVE_T", "12", NULL };
	struct tr_config c = env(e);
	struct tr_config_kv kv[] = {
		{ "TRIAD_ADAPTIVE_T", "4" },
		{ "TRIAD_ADAPTIVE_ALPHA", "80" },
		{ "TRIAD_ORDER", "any" },
	};
	char err[300] = "";

	(void)state;
	assert_knob(&c, "TRIAD_ADAPTIVE_T", "12", TR_CONFIG_ENV);
	assert_int_equal(tr_config_apply_daemon(&c, kv, 3, err, sizeof(err)), 0);
	assert_string_equal(err, "");
	assert_knob(&c, "TRIAD_ADAPTIVE_T", "12", TR_CONFIG_ENV);
	assert_int_equal(c.adaptive_t, 12);
	assert_knob(&c, "TRIAD_ADAPTIVE_ALPHA", "80", TR_CONFIG_DAEMON);
	assert_int_equal(c.adaptive_alpha, 80);
	assert_knob(&c, "TRIAD_ORDER", "any", TR_CONFIG_DAEMON);
	assert_int_equal(c.order, TR_ORDER_ANY);
	/* A new value, and one no longer published. */
	kv[1].value = "30";
	assert_int_equal(tr_config_apply_daemon(&c, kv, 2, err, sizeof(err)), 0);
	assert_knob(&c, "TRIAD_ADAPTIVE_ALPHA", "30", TR_CONFIG_DAEMON);
	assert_knob(&c, "TRIAD_ORDER", "strict", TR_CONFIG_DEFAULT);
	assert_int_equal(c.order, TR_ORDER_STRICT);
	/* Nothing published: the defaults, and the environment's. */
	assert_int_equal(tr_config_apply_daemon(&c, NULL, 0, err, sizeof(err)), 0);
	assert_knob(&c, "TRIAD_ADAPTIVE_ALPHA", "50", TR_CONFIG_DEFAULT);
	assert_knob(&c, "TRIAD_ADAPTIVE_T", "12", TR_CONFIG_ENV);
	/* A knob read at start is never touched. */
	assert_knob(&c, "TRIAD_SLOTS", "16", TR_CONFIG_DEFAULT);
}

/* One parser: a bad value gets the same message from either source, and
 * a process skips what it cannot take, applying the rest. */
static void test_bad_values(void **state)
{
	static const char *const e[] = { "TRIAD_ADAPTIVE_ALPHA", "0", NULL };
	struct tr_config c = env(NULL), before;
	struct tr_config_kv kv[] = {
		{ "TRIAD_ADAPTIVE_ALPHA", "0" },
		{ "TRIAD_ADAPTIVE_T", "5" },
		{ "TRIAD_SLOTS", "4" },
		{ "TRIAD_NOPE", "1" },
		{ "TRIAD_ORDER", "sometimes" },
	};
	char env_err[300], err[300];
	size_t bad = 99;

	(void)state;
	assert_int_equal(tr_config_load(&before, lookup, (void *)e, env_err, sizeof(env_err)),
			 -EINVAL);
	assert_string_equal(env_err, "TRIAD_ADAPTIVE_ALPHA=0: out of range [1, 100]");
	assert_int_equal(tr_config_check_daemon(kv, 1, &bad, err, sizeof(err)), -EINVAL);
	assert_string_equal(err, env_err);
	assert_int_equal(bad, 0);
	assert_int_equal(tr_config_check_daemon(kv + 1, 2, &bad, err, sizeof(err)), -EINVAL);
	assert_string_equal(err, "TRIAD_SLOTS=4: read at start only, triadd may not set it");
	assert_int_equal(bad, 1);
	assert_int_equal(tr_config_check_daemon(kv + 3, 1, &bad, err, sizeof(err)), -EINVAL);
	assert_string_equal(err, "TRIAD_NOPE=1: no such knob (triadctl config lists them)");
	assert_int_equal(tr_config_check_daemon(kv + 4, 1, &bad, err, sizeof(err)), -EINVAL);
	assert_string_equal(err, "TRIAD_ORDER=sometimes: not one of any, strict");
	/* A process applies what it can: T, and reports the first problem. */
	before = c;
	assert_int_equal(tr_config_apply_daemon(&c, kv, 5, err, sizeof(err)), -EINVAL);
	assert_string_equal(err, env_err);
	assert_knob(&c, "TRIAD_ADAPTIVE_T", "5", TR_CONFIG_DAEMON);
	assert_knob(&c, "TRIAD_ADAPTIVE_ALPHA", "50", TR_CONFIG_DEFAULT);
	assert_knob(&c, "TRIAD_ORDER", "strict", TR_CONFIG_DEFAULT);
	assert_int_equal(c.slots, before.slots);
	/* A set naming a knob twice is refused whole. */
	kv[0].name = "TRIAD_ADAPTIVE_T";
	assert_int_equal(tr_config_check_daemon(kv, 2, &bad, err, sizeof(err)), -EINVAL);
	assert_string_equal(err, "TRIAD_ADAPTIVE_T=5: set twice");
	assert_int_equal(bad, 1);
}

/* The flow-control needs are checked together, whoever set them. */
static void test_needs_together(void **state)
{
	static const char *const e[] = { "TRIAD_FC_NEED_LOW", "2", NULL };
	struct tr_config_kv up[] = { { "TRIAD_FC_NEED_LOW", "8" }, { "TRIAD_FC_NEED_MEDIUM", "5" } };
	struct tr_config_kv med[] = { { "TRIAD_FC_NEED_MEDIUM", "5" } };
	struct tr_config c;
	char err[300];
	size_t bad = 99;

	(void)state;
	/* Alone, medium 5 exceeds the default low 3: the file's line is its. */
	assert_int_equal(tr_config_check_daemon(med, 1, &bad, err, sizeof(err)), -EINVAL);
	assert_int_equal(bad, 0);
	assert_string_equal(err, "TRIAD_FC_NEED_MEDIUM=5 exceeds TRIAD_FC_NEED_LOW=3: a "
				 "medium-priority message may not need more free slots than a "
				 "low one");
	/* Both raised: fine in either order. */
	assert_int_equal(tr_config_check_daemon(up, 2, &bad, err, sizeof(err)), 0);
	c = env(NULL);
	assert_int_equal(tr_config_apply_daemon(&c, up, 2, err, sizeof(err)), 0);
	assert_int_equal(c.need_low, 8);
	assert_int_equal(c.need_medium, 5);
	/* Where the environment keeps low at 2, triadd's medium 5 cannot be
	 * taken: the process keeps a valid pair and says why. */
	c = env(e);
	assert_int_equal(tr_config_apply_daemon(&c, up, 2, err, sizeof(err)), -EINVAL);
	assert_string_equal(err, "TRIAD_FC_NEED_MEDIUM=5 exceeds TRIAD_FC_NEED_LOW=2: a "
				 "medium-priority message may not need more free slots than a "
				 "low one; triadd's value not taken");
	assert_knob(&c, "TRIAD_FC_NEED_LOW", "2", TR_CONFIG_ENV);
	assert_knob(&c, "TRIAD_FC_NEED_MEDIUM", "2", TR_CONFIG_DEFAULT);
}

/* From the daemon's table to the process's configuration: the knobs go
 * through the seqlock by name and come out applied. */
static void test_through_the_table(void **state)
{
	struct tr_ctl_table *t = calloc(1, sizeof(*t));
	struct tr_ctl_policy p, q;
	struct tr_config_kv kv[TR_CTL_KNOBS];
	struct tr_config c = env(NULL);
	char err[300];
	uint64_t gen;

	(void)state;
	assert_non_null(t);
	tr_ctl_policy_default(&p, 2);
	p.nknobs = 2;
	strcpy(p.knob[0].name, "TRIAD_ADAPTIVE");
	strcpy(p.knob[0].value, "off");
	strcpy(p.knob[1].name, "TRIAD_FC_NEED_LOW");
	strcpy(p.knob[1].value, "7");
	tr_ctl_table_init(t, &p);
	assert_int_equal(tr_ctl_table_read(t, sizeof(*t), &q, &gen), 0);
	for (unsigned k = 0; k < q.nknobs; k++)
		kv[k] = (struct tr_config_kv){ q.knob[k].name, q.knob[k].value };
	assert_int_equal(tr_config_apply_daemon(&c, kv, q.nknobs, err, sizeof(err)), 0);
	assert_int_equal(c.adaptive, 0);
	assert_int_equal(c.need_low, 7);
	/* Knobs a reader refuses: a blank, a name twice, too many. */
	strcpy(p.knob[1].value, "7 8");
	tr_ctl_table_write(t, &p);
	assert_int_equal(tr_ctl_table_read(t, sizeof(*t), &q, &gen), -EBADMSG);
	strcpy(p.knob[1].value, "7");
	strcpy(p.knob[1].name, "TRIAD_ADAPTIVE");
	tr_ctl_table_write(t, &p);
	assert_int_equal(tr_ctl_table_read(t, sizeof(*t), &q, &gen), -EBADMSG);
	strcpy(p.knob[1].name, "TRIAD_FC_NEED_LOW");
	p.nknobs = TR_CTL_KNOBS + 1;
	tr_ctl_table_write(t, &p);
	assert_int_equal(tr_ctl_table_read(t, sizeof(*t), &q, &gen), -EBADMSG);
	p.nknobs = 2;
	memset(p.knob[0].name, 'A', sizeof(p.knob[0].name)); /* no NUL */
	tr_ctl_table_write(t, &p);
	assert_int_equal(tr_ctl_table_read(t, sizeof(*t), &q, &gen), -EBADMSG);
	free(t);
}

/* APPLIED: what a process reports of its knobs, strictly decoded. */
static void test_applied_codec(void **state)
{
	static uint8_t buf[TR_CTL_MAX_FRAME];
	struct tr_ctl_msg m = { .type = TR_CTL_APPLIED }, o;
	int n;

	(void)state;
	m.u.applied.gen = 42;
	m.u.applied.n = 2;
	strcpy(m.u.applied.knob[0].name, "TRIAD_ORDER");
	strcpy(m.u.applied.knob[0].value, "any");
	m.u.applied.src[0] = TR_CTL_SRC_ENV;
	strcpy(m.u.applied.knob[1].name, "TRIAD_ADAPTIVE_T");
	strcpy(m.u.applied.knob[1].value, "4");
	m.u.applied.src[1] = TR_CTL_SRC_DAEMON;
	n = tr_ctl_encode(&m, buf, sizeof(buf));
	assert_int_equal(n, TR_CTL_HDR + 8 + 2 + (2 + 11 + 2 + 3 + 1) + (2 + 16 + 2 + 1 + 1));
	assert_int_equal(tr_ctl_decode(buf, (size_t)n, &o), 0);
	assert_true(o.u.applied.gen == 42);
	assert_int_equal(o.u.applied.n, 2);
	assert_string_equal(o.u.applied.knob[1].name, "TRIAD_ADAPTIVE_T");
	assert_string_equal(o.u.applied.knob[1].value, "4");
	assert_int_equal(o.u.applied.src[0], TR_CTL_SRC_ENV);
	/* A source out of range, on the wire (last byte) and to encode. */
	buf[n - 1] = TR_CTL_SRC_MAX;
	assert_int_equal(tr_ctl_decode(buf, (size_t)n, &o), -EBADMSG);
	m.u.applied.src[1] = TR_CTL_SRC_MAX;
	assert_int_equal(tr_ctl_encode(&m, buf, sizeof(buf)), -EINVAL);
	m.u.applied.src[1] = TR_CTL_SRC_DAEMON;
	/* A name that is not a knob's, a value with a quote, too many. */
	strcpy(m.u.applied.knob[1].name, "order");
	assert_int_equal(tr_ctl_encode(&m, buf, sizeof(buf)), -EINVAL);
	strcpy(m.u.applied.knob[1].name, "TRIAD_ORDER");
	strcpy(m.u.applied.knob[1].value, "\"any\"");
	assert_int_equal(tr_ctl_encode(&m, buf, sizeof(buf)), -EINVAL);
	strcpy(m.u.applied.knob[1].value, "any");
	m.u.applied.n = TR_CTL_KNOBS + 1;
	assert_int_equal(tr_ctl_encode(&m, buf, sizeof(buf)), -EINVAL);
	/* The count on the wire above the limit. */
	m.u.applied.n = 0;
	n = tr_ctl_encode(&m, buf, sizeof(buf));
	assert_int_equal(n, TR_CTL_HDR + 10);
	buf[TR_CTL_HDR + 8] = TR_CTL_KNOBS + 1;
	assert_int_equal(tr_ctl_decode(buf, (size_t)n, &o), -EBADMSG);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_which_knobs),	cmocka_unit_test(test_precedence),
		cmocka_unit_test(test_bad_values),	cmocka_unit_test(test_needs_together),
		cmocka_unit_test(test_through_the_table), cmocka_unit_test(test_applied_codec),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
