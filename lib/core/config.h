/* The TRIAD_* configuration: the one registry of the library's knobs.  One
 * table of name, default, meaning, whether the node daemon (triadd) may set
 * the knob and when a change takes effect.  The environment is read once
 * per context; triadd's values come by name (lib/ctl/table.h) and go
 * through the same parser and checks (tr_config_apply_daemon).
 *
 * Precedence, for every knob: the environment, when the user set the
 * variable, beats triadd, which beats the default.  An operator's triadd
 * thus sets the node's defaults and a job that asks for something else in
 * its own environment keeps it (as UCX_* beat ucx.conf and OMPI_MCA_*
 * beat mca-params.conf); triadctl config shows, per process, which won.
 *
 * Pure: the lookup function is passed in, so the parser is unit-tested
 * without touching the environment. */
#ifndef TRIAD_CORE_CONFIG_H
#define TRIAD_CORE_CONFIG_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#define TR_CONFIG_STR 256 /* the size of every string field */
#define TR_CONFIG_MAX_VARS 48 /* room in tr_config.src; the table has fewer */

struct tr_config {
	int rank;		  /* TRIAD_RANK (-1: not given) */
	char world[TR_CONFIG_STR];	  /* TRIAD_WORLD */
	int log_level;		  /* TRIAD_LOG */
	int log_time;		  /* TRIAD_LOG_TIME: 1 on */
	uint64_t chunk_size;	  /* TRIAD_CHUNK_SIZE */
	int connect_timeout_ms;	  /* TRIAD_CONNECT_TIMEOUT_MS */
	int rejoin_ms;		  /* TRIAD_REJOIN_MS */
	int spin_us;		  /* TRIAD_SPIN_US */
	int sq_depth;		  /* TRIAD_SQ_DEPTH */
	int ack_timeout;	  /* TRIAD_ACK_TIMEOUT */
	int retry_count;	  /* TRIAD_RETRY_COUNT */
	int query_timeout_ms;	  /* TRIAD_QUERY_TIMEOUT_MS */
	int slots;		  /* TRIAD_SLOTS */
	uint64_t slot_size;	  /* TRIAD_SLOT_SIZE */
	int fc_timer_ms;	  /* TRIAD_FC_TIMER_MS */
	int need_medium;	  /* TRIAD_FC_NEED_MEDIUM */
	int need_low;		  /* TRIAD_FC_NEED_LOW */
	int bsm_linger_us;	  /* TRIAD_BSM_LINGER_US */
	int copy_timeout_ms;	  /* TRIAD_COPY_TIMEOUT_MS */
	int copy_ops;		  /* TRIAD_COPY_OPS */
	uint64_t copy_eager;	  /* TRIAD_COPY_EAGER */
	int bg_spin_us;		  /* TRIAD_BG_SPIN_US */
	char trace[TR_CONFIG_STR];	  /* TRIAD_TRACE */
	char daemon[TR_CONFIG_STR];	  /* TRIAD_DAEMON */
	uint64_t bcast_pipeline;  /* TRIAD_BCAST_PIPELINE */
	int bcast_shape;	  /* TRIAD_BCAST_SHAPE: 0 auto, 1 tree, 2 twotree */
	uint64_t stripe_min;	  /* TRIAD_STRIPE_MIN */
	uint64_t reg_cache;	  /* TRIAD_REG_CACHE, bytes (0: off) */
	int order;		  /* TRIAD_ORDER: TR_ORDER_ANY or TR_ORDER_STRICT */
	int bare_am;		  /* TRIAD_BARE_AM: 0 off, 1 on */
	int adaptive;		  /* TRIAD_ADAPTIVE: 0 off, 1 occupancy, 2 contention */
	int connect;		  /* TRIAD_CONNECT: TR_CONNECT_EAGER or TR_CONNECT_LAZY */
	int adaptive_t;		  /* TRIAD_ADAPTIVE_T */
	int adaptive_alpha;	  /* TRIAD_ADAPTIVE_ALPHA, percent */
	char devices[TR_CONFIG_STR]; /* TRIAD_DEVICES */
	/* Where each variable's value came from (enum tr_config_src), by its
	 * index in the table (tr_config_var). */
	unsigned char src[TR_CONFIG_MAX_VARS];
};

/* Where a value came from: the precedence above, lowest first. */
enum tr_config_src { TR_CONFIG_DEFAULT, TR_CONFIG_DAEMON, TR_CONFIG_ENV };

/* When a change by triadd takes effect in a running process. */
enum tr_config_when {
	TR_CONFIG_AT_START,	/* read at triad_init only: triadd may not set it */
	TR_CONFIG_AT_ONCE,	/* the next decision that reads it */
	TR_CONFIG_NEW_MSGS,	/* messages received from then on */
	TR_CONFIG_NEXT_CONN,	/* connections set up from then on */
};

enum { TR_ORDER_ANY, TR_ORDER_STRICT };
enum { TR_CONNECT_EAGER, TR_CONNECT_LAZY };

/* Returns the value of a variable, or NULL when it is unset. */
typedef const char *(*tr_config_lookup_fn)(const char *name, void *arg);

/* Fills cfg with defaults, then applies every variable lookup() knows.
 * On a bad value returns -EINVAL and writes a message naming the variable
 * into err. */
int tr_config_load(struct tr_config *cfg, tr_config_lookup_fn lookup, void *arg,
		   char *err, size_t errlen);

/* Environment lookup for tr_config_load(). */
const char *tr_config_getenv(const char *name, void *arg);

void tr_config_print_table(FILE *out, const struct tr_config *cfg);

/* Variable i of the table (0, 1, ...) with its value in cfg: for other
 * printers (triadctl config -j).  0, or -ENOENT past the last one. */
struct tr_config_var {
	const char *name, *def, *doc;
	char value[TR_CONFIG_STR + 32];
	enum tr_config_when when;
	enum tr_config_src src;
};
int tr_config_var(const struct tr_config *cfg, size_t i, struct tr_config_var *out);

/* The table's index of the variable called name, or -ENOENT. */
int tr_config_index(const char *name);

const char *tr_config_src_str(enum tr_config_src src);	  /* "default", "environment", "daemon" */
const char *tr_config_when_str(enum tr_config_when when); /* "at start", "at once", ... */

/* One knob as triadd publishes it. */
struct tr_config_kv {
	const char *name, *value;
};

/* Checks knobs as triadd would publish them (its configuration file,
 * triadctl config set), over the defaults: every name a knob triadd may
 * set, every value valid, and the set valid as a whole.  0, or -EINVAL
 * with a message naming the knob and the value in err and the index of
 * the knob at fault in *bad_p (for a conflict between two, the later). */
int tr_config_check_daemon(const struct tr_config_kv *kv, size_t n, size_t *bad_p, char *err,
			   size_t errlen);

/* Applies triadd's knobs to cfg: every knob triadd may set and the
 * environment did not set takes triadd's value if kv has one, else its
 * default (triadd stopped publishing it); what the environment set stays.
 * A knob that is unknown, not triadd's to set or has a bad value is
 * skipped, and knobs whose values conflict (TRIAD_FC_NEED_MEDIUM above
 * TRIAD_FC_NEED_LOW) keep their values from the environment or the
 * defaults; the rest is applied.  0, or -EINVAL with the first problem
 * named in err.  Never leaves cfg invalid. */
int tr_config_apply_daemon(struct tr_config *cfg, const struct tr_config_kv *kv, size_t n,
			   char *err, size_t errlen);

/* Parses "123", "64k", "1M", "2g" (binary units).  -EINVAL when malformed,
 * -ERANGE when it overflows. */
int tr_parse_size(const char *s, uint64_t *val_p);

/* TRIAD_DEVICES: "dev[:port][,dev[:port]...]".  A device name is letters,
 * digits, '_', '-', '.'; port 1..255, 0 in out when not given (the first
 * active one).  Returns the number of entries (0 for ""), or -EINVAL with
 * a message naming the bad entry: empty, malformed, more than max, or a
 * device named twice. */
struct tr_devspec {
	char name[64];
	int port;
};
int tr_devices_parse(const char *s, struct tr_devspec *out, int max, char *err, size_t errlen);

#endif
