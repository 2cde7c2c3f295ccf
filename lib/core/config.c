#include "core/config.h"

#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "base/log.h"

enum var_type { VAR_INT, VAR_SIZE, VAR_STRING, VAR_ENUM };

struct var {
	const char *name;
	const char *def;
	enum var_type type;
	size_t offset;
	long long min, max;
	const char *doc;
	const char *const *names; /* VAR_ENUM: the values, NULL-terminated; stored as int */
	/* AT_START: only the environment sets it; else triadd may, and a
	 * change takes effect then (lib/core/ctl.c carries it out). */
	enum tr_config_when when;
};

static const char *const level_names[] = { "error", "warn", "info", "debug", "trace", NULL };
static const char *const order_names[] = { "any", "strict", NULL };
static const char *const adaptive_names[] = { "off", "occ", "cont", NULL };
static const char *const connect_names[] = { "eager", "lazy", NULL };
static const char *const onoff_names[] = { "off", "on", NULL };
static const char *const shape_names[] = { "auto", "tree", "twotree", NULL };

#define F(f) offsetof(struct tr_config, f)

static const struct var vars[] = {
	{ "TRIAD_RANK", "-1", VAR_INT, F(rank), -1, INT_MAX,
	  "this process's rank in the world file (-1: must be given by the API)", NULL, TR_CONFIG_AT_START },
	{ "TRIAD_WORLD", "", VAR_STRING, F(world), 0, 0,
	  "path of the world file: ranks and their per-plane addresses", NULL, TR_CONFIG_AT_START },
	{ "TRIAD_LOG", "warn", VAR_ENUM, F(log_level), 0, 0,
	  "log level: error, warn, info, debug, trace", level_names, TR_CONFIG_AT_START },
	{ "TRIAD_LOG_TIME", "off", VAR_ENUM, F(log_time), 0, 0,
	  "on: each log line starts with the CLOCK_MONOTONIC time in seconds (the\n"
	  "    clock dmesg's timestamps are close to)", onoff_names, TR_CONFIG_AT_START },
	{ "TRIAD_ORDER", "strict", VAR_ENUM, F(order), 0, 0,
	  "strict: active messages of one priority from one rank are handled in the\n"
	  "    order sent, across plane changes and faults; any: as they arrive (only\n"
	  "    those on one plane keep their order)", order_names, TR_CONFIG_NEW_MSGS },
	{ "TRIAD_BARE_AM", "on", VAR_ENUM, F(bare_am), 0, 0,
	  "on: peers may send this rank active messages bare, their headers in the\n"
	  "    SEND's immediate and only the payload on the wire (when no buffer status\n"
	  "    rides along); off: always with their 34 bytes of headers", onoff_names, TR_CONFIG_AT_START },
	{ "TRIAD_ADAPTIVE", "occ", VAR_ENUM, F(adaptive), 0, 0,
	  "adaptive plane choice: occ moves a message that waits on its plane's lane\n"
	  "    to the least loaded live plane to the same peer when that lane's backlog\n"
	  "    exceeds TRIAD_ADAPTIVE_T, the other's is below TRIAD_ADAPTIVE_ALPHA percent\n"
	  "    of it and the other can post it now (decided again on every pass while\n"
	  "    it waits; at most one detour; puts, gets and what follows them on their\n"
	  "    connection never move); cont: a message whose plane triadd weighs above\n"
	  "    the mean of the planes (one that loses or delays packets) moves to the\n"
	  "    least loaded live plane that can post it now; off: every message takes\n"
	  "    the plane switch's plane", adaptive_names,
	  TR_CONFIG_AT_ONCE },
	{ "TRIAD_ADAPTIVE_T", "8", VAR_INT, F(adaptive_t), 0, 1 << 20,
	  "backlog (work requests in flight + messages queued) above which a detour is considered", NULL,
	  TR_CONFIG_AT_ONCE },
	{ "TRIAD_ADAPTIVE_ALPHA", "50", VAR_INT, F(adaptive_alpha), 1, 100,
	  "a detour's backlog must be below this percentage of the home plane's", NULL,
	  TR_CONFIG_AT_ONCE },
	{ "TRIAD_CHUNK_SIZE", "1M", VAR_SIZE, F(chunk_size), 4096, 1ll << 30,
	  "largest RDMA work request; larger operations are cut into chunks", NULL, TR_CONFIG_AT_START },
	{ "TRIAD_CONNECT", "eager", VAR_ENUM, F(connect), 0, 0,
	  "eager: triad_init connects every peer on every plane and waits for them;\n"
	  "    lazy: a peer's connections are set up when it is first talked to (or talks\n"
	  "    to us), and the operations wait for them (docs/scaling.md: the trade-off)",
	  connect_names, TR_CONFIG_AT_START },
	{ "TRIAD_CONNECT_TIMEOUT_MS", "60000", VAR_INT, F(connect_timeout_ms), 100, INT_MAX,
	  "how long triad_init waits for every peer on every plane (lazy: how long\n"
	  "    an operation waits for its peer's first connection)", NULL, TR_CONFIG_AT_START },
	{ "TRIAD_REJOIN_MS", "10000", VAR_INT, F(rejoin_ms), 0, INT_MAX,
	  "how long a peer left with no connection at all by a fault (its process\n"
	  "    did not close) is waited for: its messages, puts, gets and copy chunks\n"
	  "    are held and go again once a connection is back; then it is lost and\n"
	  "    they fail (0: they fail at once)", NULL, TR_CONFIG_AT_START },
	{ "TRIAD_SPIN_US", "200", VAR_INT, F(spin_us), 0, 10000000,
	  "how long a waiting thread polls before it sleeps", NULL, TR_CONFIG_AT_START },
	{ "TRIAD_SQ_DEPTH", "128", VAR_INT, F(sq_depth), 4, 16384,
	  "send work requests in flight per connection", NULL, TR_CONFIG_AT_START },
	{ "TRIAD_ACK_TIMEOUT", "14", VAR_INT, F(ack_timeout), 8, 31,
	  "RC ack timeout exponent: 4.096 us * 2^n per try (14: 67 ms); a silent cut\n"
	  "    is found after about retries + 1 tries (0.45 s at the defaults)", NULL, TR_CONFIG_AT_START },
	{ "TRIAD_RETRY_COUNT", "6", VAR_INT, F(retry_count), 1, 7,
	  "RC transport retries before a connection is declared broken", NULL, TR_CONFIG_AT_START },
	{ "TRIAD_QUERY_TIMEOUT_MS", "30000", VAR_INT, F(query_timeout_ms), 10, INT_MAX,
	  "how long a window lookup waits for the owner's answer", NULL, TR_CONFIG_AT_START },
	{ "TRIAD_SLOTS", "16", VAR_INT, F(slots), 1, 64,
	  "receive slots per connection for messages (flow-controlled)", NULL, TR_CONFIG_AT_START },
	{ "TRIAD_SLOT_SIZE", "8k", VAR_SIZE, F(slot_size), 512, 65535,
	  "bytes per receive slot: the largest message, header included", NULL, TR_CONFIG_AT_START },
	{ "TRIAD_FC_TIMER_MS", "2000", VAR_INT, F(fc_timer_ms), 10, INT_MAX,
	  "flow-control timer period: a slot the peer has not confirmed for 1-2 periods\n"
	  "    is reported (it stays busy: the connection is reliable)", NULL, TR_CONFIG_AT_START },
	{ "TRIAD_FC_NEED_MEDIUM", "2", VAR_INT, F(need_medium), 1, 64,
	  "free slots a medium-priority message needs (high needs 1)", NULL, TR_CONFIG_NEXT_CONN },
	{ "TRIAD_FC_NEED_LOW", "3", VAR_INT, F(need_low), 1, 64,
	  "free slots a low-priority message needs", NULL, TR_CONFIG_NEXT_CONN },
	{ "TRIAD_BSM_LINGER_US", "20000", VAR_INT, F(bsm_linger_us), 0, 1000000,
	  "how long a buffer status may wait to cover more freed slots\n"
	  "    (or ride on a message); at most a quarter of TRIAD_FC_TIMER_MS", NULL, TR_CONFIG_AT_START },
	{ "TRIAD_COPY_TIMEOUT_MS", "30000", VAR_INT, F(copy_timeout_ms), 10, INT_MAX,
	  "a copy that has not completed by then fails with a timeout", NULL, TR_CONFIG_AT_START },
	{ "TRIAD_COPY_OPS", "1024", VAR_INT, F(copy_ops), 1, 1 << 20,
	  "copies this rank may have outstanding as initiator, and serve as source", NULL, TR_CONFIG_AT_START },
	{ "TRIAD_COPY_EAGER", "2048", VAR_SIZE, F(copy_eager), 0, 65535,
	  "copies of up to this many bytes carry their data in the message to the\n"
	  "    destination, which places it itself (no descriptor lookup, no RDMA WRITE;\n"
	  "    relay and direct modes; at most a receive slot's room); 0: always write", NULL, TR_CONFIG_AT_START },
	{ "TRIAD_BG_SPIN_US", "100", VAR_INT, F(bg_spin_us), 0, 1000000,
	  "microseconds the progress thread keeps polling after it last found work\n"
	  "    (without yielding its CPU; an application thread's call ends it)", NULL, TR_CONFIG_AT_START },
	{ "TRIAD_BCAST_PIPELINE", "32M", VAR_SIZE, F(bcast_pipeline), 1, 1ll << 50,
	  "TRIAD_BCAST_AUTO, where it stays root-driven (the tree's estimate does not win),\n"
	  "    pipelines broadcasts from this size (3+ ranks), below it copies greedily", NULL, TR_CONFIG_AT_START },
	{ "TRIAD_BCAST_SHAPE", "auto", VAR_ENUM, F(bcast_shape), 0, 0,
	  "the shape of a delegated broadcast (TRIAD_BCAST_TREE) this rank is the root of:\n"
	  "    auto chooses by its cost estimate and the size, tree is one tree of the\n"
	  "    whole buffer, twotree two trees chunk by chunk (with 3 ranks or more)",
	  shape_names, TR_CONFIG_AT_START },
	{ "TRIAD_STRIPE_MIN", "256k", VAR_SIZE, F(stripe_min), 4096, 1ll << 50,
	  "puts and gets with TRIAD_F_STRIPE of at least this size are split over the planes", NULL, TR_CONFIG_AT_START },
	{ "TRIAD_REG_CACHE", "0", VAR_SIZE, F(reg_cache), 0, 1ll << 50,
	  "registrations kept for put/get buffers outside every window, bytes at most\n"
	  "    (least recently used go first; 0: off, each operation registers its own);\n"
	  "    with it on, call triad_mem_release before freeing or unmapping such a buffer", NULL, TR_CONFIG_AT_START },
	{ "TRIAD_TRACE", "", VAR_STRING, F(trace), 0, 0,
	  "directory for an event trace (triad-trace.RANK, written at triad_fini)", NULL, TR_CONFIG_AT_START },
	{ "TRIAD_DAEMON", "/run/triad/triadd.sock", VAR_STRING, F(daemon), 0, 0,
	  "the node daemon's socket (triadd, docs/daemon.md); off: do not look for it", NULL, TR_CONFIG_AT_START },
	{ "TRIAD_DEVICES", "", VAR_STRING, F(devices), 0, 0,
	  "the local RDMA devices this rank uses, one plane each, in plane order:\n"
	  "    dev[:port][,dev[:port]...] (like UCX_NET_DEVICES); empty: every device of\n"
	  "    the node with an IPv4 address (launched by PMIx), or the world file's", NULL, TR_CONFIG_AT_START },
};

#undef F

#define NVARS (sizeof(vars) / sizeof(vars[0]))
_Static_assert(NVARS <= TR_CONFIG_MAX_VARS, "tr_config.src has a byte for every variable");

const char *tr_config_getenv(const char *name, void *arg)
{
	(void)arg;
	return getenv(name);
}

int tr_parse_size(const char *s, uint64_t *val_p)
{
	char *end;
	unsigned long long v;
	unsigned shift = 0;

	/* strtoull() would skip white space and accept a sign (" -1" is
	 * UINT64_MAX): require a digit first. */
	if (!s || !isdigit((unsigned char)*s))
		return -EINVAL;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno == ERANGE)
		return -ERANGE;
	if (end == s)
		return -EINVAL;
	switch (*end) {
	case '\0': break;
	case 'k': case 'K': shift = 10; end++; break;
	case 'm': case 'M': shift = 20; end++; break;
	case 'g': case 'G': shift = 30; end++; break;
	default: return -EINVAL;
	}
	if (*end == 'i' || *end == 'I')
		end++;
	if (*end == 'b' || *end == 'B')
		end++;
	if (*end)
		return -EINVAL;
	if (shift && v > (UINT64_MAX >> shift))
		return -ERANGE;
	*val_p = (uint64_t)v << shift;
	return 0;
}

static int set_var(struct tr_config *cfg, const struct var *v, const char *s,
		   char *err, size_t errlen)
{
	char *field = (char *)cfg + v->offset;
	long long n;
	char *end;
	uint64_t size;
	size_t i;

	switch (v->type) {
	case VAR_STRING:
		/* Every string field is a char[TR_CONFIG_STR]. */
		if (strlen(s) >= TR_CONFIG_STR) {
			snprintf(err, errlen, "%s: value longer than %d characters",
				 v->name, TR_CONFIG_STR - 1);
			return -EINVAL;
		}
		strcpy(field, s);
		return 0;
	case VAR_INT:
		errno = 0;
		n = strtoll(s, &end, 10);
		if (errno || end == s || *end) {
			snprintf(err, errlen, "%s=%s: not an integer", v->name, s);
			return -EINVAL;
		}
		if (n < v->min || n > v->max) {
			snprintf(err, errlen, "%s=%s: out of range [%lld, %lld]",
				 v->name, s, v->min, v->max);
			return -EINVAL;
		}
		*(int *)field = (int)n;
		return 0;
	case VAR_SIZE:
		if (tr_parse_size(s, &size) < 0) {
			snprintf(err, errlen, "%s=%s: not a size (examples: 4096, 64k, 1M)",
				 v->name, s);
			return -EINVAL;
		}
		if (size < (uint64_t)v->min || size > (uint64_t)v->max) {
			snprintf(err, errlen, "%s=%s: out of range [%lld, %lld]",
				 v->name, s, v->min, v->max);
			return -EINVAL;
		}
		*(uint64_t *)field = size;
		return 0;
	case VAR_ENUM: {
		char list[200] = "";

		for (i = 0; v->names[i]; i++) {
			if (!strcasecmp(s, v->names[i])) {
				*(int *)field = (int)i;
				return 0;
			}
			snprintf(list + strlen(list), sizeof(list) - strlen(list), "%s%s",
				 i ? ", " : "", v->names[i]);
		}
		snprintf(err, errlen, "%s=%s: not one of %s", v->name, s, list);
		return -EINVAL;
	}
	}
	return -EINVAL;
}

/* The checks between variables: 0, or -EINVAL with a message and the
 * indexes of the two variables in conflict. */
static int check_cross(const struct tr_config *cfg, int pair[2], char *err, size_t errlen)
{
	/* Flow control's thresholds (high needs 1 free slot, and a connection
	 * with fewer slots clamps them): a higher priority may not need more
	 * than a lower one, or every lane would fail as it connects. */
	if (cfg->need_medium > cfg->need_low) {
		snprintf(err, errlen,
			 "TRIAD_FC_NEED_MEDIUM=%d exceeds TRIAD_FC_NEED_LOW=%d: a medium-priority "
			 "message may not need more free slots than a low one",
			 cfg->need_medium, cfg->need_low);
		pair[0] = tr_config_index("TRIAD_FC_NEED_MEDIUM");
		pair[1] = tr_config_index("TRIAD_FC_NEED_LOW");
		return -EINVAL;
	}
	return 0;
}

static void set_defaults(struct tr_config *cfg)
{
	char err[16];

	memset(cfg, 0, sizeof(*cfg));
	for (size_t i = 0; i < NVARS; i++)
		set_var(cfg, &vars[i], vars[i].def, err, sizeof(err)); /* test_config checks them */
}

int tr_config_load(struct tr_config *cfg, tr_config_lookup_fn lookup, void *arg,
		   char *err, size_t errlen)
{
	int pair[2], ret;

	set_defaults(cfg);
	for (size_t i = 0; i < NVARS; i++) {
		const char *s = lookup ? lookup(vars[i].name, arg) : NULL;

		if (!s)
			continue;
		ret = set_var(cfg, &vars[i], s, err, errlen);
		if (ret)
			return ret;
		cfg->src[i] = TR_CONFIG_ENV;
	}
	return check_cross(cfg, pair, err, errlen);
}

int tr_config_index(const char *name)
{
	for (size_t i = 0; name && i < NVARS; i++)
		if (!strcmp(vars[i].name, name))
			return (int)i;
	return -ENOENT;
}

static size_t var_size(const struct var *v)
{
	switch (v->type) {
	case VAR_INT:
	case VAR_ENUM: return sizeof(int);
	case VAR_SIZE: return sizeof(uint64_t);
	case VAR_STRING: break;
	}
	return TR_CONFIG_STR;
}

/* One knob of triadd's into cfg, alone: 0, or -EINVAL with a message. */
static int set_daemon(struct tr_config *cfg, const struct tr_config_kv *kv, char *err,
		      size_t errlen)
{
	int i = tr_config_index(kv->name);

	if (i < 0) {
		snprintf(err, errlen, "%s=%s: no such knob (triadctl config lists them)", kv->name,
			 kv->value);
		return -EINVAL;
	}
	if (vars[i].when == TR_CONFIG_AT_START) {
		snprintf(err, errlen, "%s=%s: read at start only, triadd may not set it", kv->name,
			 kv->value);
		return -EINVAL;
	}
	if (cfg->src[i] == TR_CONFIG_ENV)
		return 0; /* the environment's value stays */
	if (set_var(cfg, &vars[i], kv->value, err, errlen))
		return -EINVAL;
	cfg->src[i] = TR_CONFIG_DAEMON;
	return 0;
}

int tr_config_check_daemon(const struct tr_config_kv *kv, size_t n, size_t *bad_p, char *err,
			   size_t errlen)
{
	struct tr_config cfg;
	int pair[2];
	size_t last = 0;

	set_defaults(&cfg);
	for (size_t k = 0; k < n; k++) {
		for (size_t j = 0; j < k; j++)
			if (!strcmp(kv[j].name, kv[k].name)) {
				snprintf(err, errlen, "%s=%s: set twice", kv[k].name, kv[k].value);
				*bad_p = k;
				return -EINVAL;
			}
		if (set_daemon(&cfg, &kv[k], err, errlen)) {
			*bad_p = k;
			return -EINVAL;
		}
	}
	if (!check_cross(&cfg, pair, err, errlen))
		return 0;
	for (size_t k = 0; k < n; k++)
		if (tr_config_index(kv[k].name) == pair[0] || tr_config_index(kv[k].name) == pair[1])
			last = k;
	*bad_p = last;
	return -EINVAL;
}

int tr_config_apply_daemon(struct tr_config *cfg, const struct tr_config_kv *kv, size_t n,
			   char *err, size_t errlen)
{
	struct tr_config want = *cfg;
	char why[300];
	int pair[2], ret = 0;

	/* From the defaults up: what triadd no longer publishes goes back. */
	for (size_t i = 0; i < NVARS; i++)
		if (want.src[i] == TR_CONFIG_DAEMON) {
			set_var(&want, &vars[i], vars[i].def, why, sizeof(why));
			want.src[i] = TR_CONFIG_DEFAULT;
		}
	for (size_t k = 0; k < n; k++)
		if (set_daemon(&want, &kv[k], why, sizeof(why)) && !ret) {
			snprintf(err, errlen, "%s", why);
			ret = -EINVAL;
		}
	if (check_cross(&want, pair, why, sizeof(why))) {
		/* The environment's values and the defaults agree with each
		 * other (tr_config_load checked them): triadd's give way. */
		if (!ret)
			snprintf(err, errlen, "%s; triadd's value not taken", why);
		for (int j = 0; j < 2; j++)
			if (want.src[pair[j]] == TR_CONFIG_DAEMON) {
				set_var(&want, &vars[pair[j]], vars[pair[j]].def, why, sizeof(why));
				want.src[pair[j]] = TR_CONFIG_DEFAULT;
			}
		ret = -EINVAL;
	}
	/* Only what changed is written: other threads read the fields read
	 * at start without the caller's lock. */
	for (size_t i = 0; i < NVARS; i++) {
		size_t len = var_size(&vars[i]);

		if (memcmp((char *)cfg + vars[i].offset, (char *)&want + vars[i].offset, len))
			memcpy((char *)cfg + vars[i].offset, (char *)&want + vars[i].offset, len);
		cfg->src[i] = want.src[i];
	}
	return ret;
}

int tr_config_var(const struct tr_config *cfg, size_t i, struct tr_config_var *out)
{
	const struct var *v;
	const char *field;
	char *val = out->value;
	size_t len = sizeof(out->value);

	if (i >= NVARS)
		return -ENOENT;
	v = &vars[i];
	field = (const char *)cfg + v->offset;
	out->name = v->name;
	out->def = v->def;
	out->doc = v->doc;
	out->when = v->when;
	out->src = (enum tr_config_src)cfg->src[i];
	switch (v->type) {
	case VAR_STRING: snprintf(val, len, "%s", field); break;
	case VAR_INT: snprintf(val, len, "%d", *(const int *)field); break;
	case VAR_SIZE:
		snprintf(val, len, "%llu", (unsigned long long)*(const uint64_t *)field);
		break;
	case VAR_ENUM: snprintf(val, len, "%s", v->names[*(const int *)field]); break;
	}
	return 0;
}

const char *tr_config_src_str(enum tr_config_src src)
{
	switch (src) {
	case TR_CONFIG_DEFAULT: return "default";
	case TR_CONFIG_DAEMON: return "daemon";
	case TR_CONFIG_ENV: return "environment";
	}
	return "?";
}

const char *tr_config_when_str(enum tr_config_when when)
{
	switch (when) {
	case TR_CONFIG_AT_START: return "at start";
	case TR_CONFIG_AT_ONCE: return "at once";
	case TR_CONFIG_NEW_MSGS: return "for new messages";
	case TR_CONFIG_NEXT_CONN: return "at the next connection";
	}
	return "?";
}

void tr_config_print_table(FILE *out, const struct tr_config *cfg)
{
	struct tr_config_var v;

	for (size_t i = 0; tr_config_var(cfg, i, &v) == 0; i++) {
		fprintf(out, "%-26s = %-12s (default %s)", v.name, v.value,
			*v.def ? v.def : "\"\"");
		if (v.src != TR_CONFIG_DEFAULT)
			fprintf(out, " from the %s", tr_config_src_str(v.src));
		fprintf(out, "\n    %s\n", v.doc);
		if (v.when != TR_CONFIG_AT_START)
			fprintf(out, "    triadd may set it (triadd.conf(5)); a change takes effect %s\n",
				tr_config_when_str(v.when));
	}
}

/* ---- TRIAD_DEVICES --------------------------------------------------------------*/
static int dev_name_char(char c)
{
	return isalnum((unsigned char)c) || c == '_' || c == '-' || c == '.';
}

/* One entry "dev" or "dev:port" of [s, end). */
static int parse_one_dev(const char *s, const char *end, struct tr_devspec *d, char *err,
			 size_t errlen)
{
	const char *colon = memchr(s, ':', (size_t)(end - s));
	const char *name_end = colon ? colon : end;
	size_t n = (size_t)(name_end - s);

	if (n == 0) {
		snprintf(err, errlen, "TRIAD_DEVICES: an empty device name");
		return -EINVAL;
	}
	if (n >= sizeof(d->name)) {
		snprintf(err, errlen, "TRIAD_DEVICES: device name '%.*s...' longer than %zu characters",
			 16, s, sizeof(d->name) - 1);
		return -EINVAL;
	}
	for (const char *c = s; c < name_end; c++)
		if (!dev_name_char(*c)) {
			snprintf(err, errlen, "TRIAD_DEVICES: '%.*s' is not a device name",
				 (int)n, s);
			return -EINVAL;
		}
	memcpy(d->name, s, n);
	d->name[n] = '\0';
	d->port = 0;
	if (colon) {
		long v = 0;
		const char *c = colon + 1;

		if (c == end) {
			snprintf(err, errlen, "TRIAD_DEVICES: %s: no port after ':'", d->name);
			return -EINVAL;
		}
		for (; c < end; c++) {
			if (!isdigit((unsigned char)*c) || (v = v * 10 + (*c - '0')) > 255) {
				snprintf(err, errlen, "TRIAD_DEVICES: %s: port '%.*s' is not 1..255",
					 d->name, (int)(end - colon - 1), colon + 1);
				return -EINVAL;
			}
		}
		if (v == 0) {
			snprintf(err, errlen, "TRIAD_DEVICES: %s: port 0 (ports count from 1)",
				 d->name);
			return -EINVAL;
		}
		d->port = (int)v;
	}
	return 0;
}

int tr_devices_parse(const char *s, struct tr_devspec *out, int max, char *err, size_t errlen)
{
	int n = 0;

	if (!*s)
		return 0;
	for (;;) {
		const char *end = s + strcspn(s, ",");
		int ret;

		if (n == max) {
			snprintf(err, errlen, "TRIAD_DEVICES: more than %d devices", max);
			return -EINVAL;
		}
		ret = parse_one_dev(s, end, &out[n], err, errlen);
		if (ret)
			return ret;
		/* A device twice would be two planes on one port: the same
		 * traffic counted twice, and no failover between them. */
		for (int i = 0; i < n; i++)
			if (!strcmp(out[i].name, out[n].name) &&
			    (out[i].port == out[n].port || !out[i].port || !out[n].port)) {
				snprintf(err, errlen, "TRIAD_DEVICES: %s named twice", out[n].name);
				return -EINVAL;
			}
		n++;
		if (!*end)
			return n;
		s = end + 1;
	}
}
