/* triad_perf: latency and bandwidth of triad's one-sided operations and
 * active messages, in the manner of perftest (ib_write_lat, ib_read_lat,
 * ib_write_bw, ib_send_lat, ib_send_bw), using only the public API.  Every
 * rank runs the same command line; rank 0 measures and reports, rank 1 is
 * its peer, other ranks only join the barriers.
 *
 * The option table below drives both getopt_long and the usage text. */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "perf.h"

#define PROG "triad-perf"
#define SWEEP_MIN 2
#define SWEEP_MAX (8u << 20)
#define SIZE_MAX_ALLOWED (1ul << 30)

enum opt_id {
	OPT_ALL = 'a',
	OPT_DURATION = 'D',
	OPT_HELP = 'h',
	OPT_ITERS = 'n',
	OPT_QUIET = 'q',
	OPT_SIZE = 's',
	OPT_WARMUP = 'w',
	OPT_WINDOW = 256, /* long-only options */
	OPT_PLANE,
	OPT_JSON,
	OPT_CSV,
	OPT_FORMAT,
	OPT_PLOT,
	OPT_CONFIG,
	OPT_TIMEOUT,
	OPT_PRIO,
	OPT_SLOTS,
	OPT_ALGO,
	OPT_ROOT,
	OPT_MODE,
	OPT_SERVE,
	OPT_NO_REQ,
	OPT_PLANES,
	OPT_FAULT,
	OPT_FAULT_NODE,
	OPT_FAULT_AT,
	OPT_UP_AFTER,
	OPT_COMPUTE,
	OPT_PAIRS,
};

struct opt_def {
	const char *name;
	int has_arg; /* no_argument or required_argument */
	int id;	     /* a printable id is also the short option */
	const char *metavar;
	const char *help;
};

static const struct opt_def opt_defs[] = {
	{ "size", required_argument, OPT_SIZE, "SIZE",
	  "message size in bytes, k/M/G suffixes (binary);\n"
	  "default 8 (latency tests), 64k (put_bw, copy_bw),\n"
	  "1k (am_bw), 4k (the puts of failover, drain);\n"
	  "am_*: at most triad_am_max_size() (TRIAD_SLOT_SIZE\n"
	  "less 34 bytes of headers)" },
	{ "all", no_argument, OPT_ALL, NULL,
	  "sweep the sizes 2 B .. 8 MiB (powers of two;\n"
	  "am_*: up to triad_am_max_size())" },
	{ "iters", required_argument, OPT_ITERS, "N",
	  "measured iterations per size (the test VM is\n"
	  "emulated, ~25 us per operation); default 1000,\n"
	  "scaled down for big sizes: latency tests by\n"
	  "8 KiB/SIZE above 8 KiB (at least 10), put_bw and\n"
	  "copy_bw by 64 KiB/SIZE above 64 KiB (at least 20)" },
	{ "warmup", required_argument, OPT_WARMUP, "N",
	  "unmeasured iterations before each size;\n"
	  "default N/10, at least 2 (with --duration: 0,\n"
	  "the probe runs before warm up)" },
	{ "duration", required_argument, OPT_DURATION, "SEC",
	  "run each size for about SEC seconds (decimals\n"
	  "allowed) instead of --iters times: unmeasured\n"
	  "probe runs of 8, 64, 512 .. iterations until one\n"
	  "takes SEC/8, then the count that fills SEC; not\n"
	  "for bcast, overlap, failover, drain, init" },
	{ "window", required_argument, OPT_WINDOW, "W",
	  "put_bw, get_bw, put_bibw, put_mbw, am_bw, am_bibw,\n"
	  "copy_bw: operations outstanding (per sender;\n"
	  "default 64)" },
	{ "pairs", required_argument, OPT_PAIRS, "P",
	  "put_mbw: the pairs streaming at once, rank i to\n"
	  "rank i + P (default: the world's ranks / 2)" },
	{ "plane", required_argument, OPT_PLANE, "P",
	  "pin every operation to plane P\n"
	  "(default: the library chooses; not for am_*,\n"
	  "copy_*)" },
	{ "prio", required_argument, OPT_PRIO, "PRIO",
	  "am_*: priority of the measured messages: high,\n"
	  "medium or low (default low)" },
	{ "slots", required_argument, OPT_SLOTS, "K",
	  "set TRIAD_SLOTS=K (receive slots per connection,\n"
	  "1..64) before triad_init; give every rank the same\n"
	  "K.  With K < 3, TRIAD_FC_NEED_MEDIUM and _LOW that\n"
	  "the environment does not set are lowered to K" },
	{ "algo", required_argument, OPT_ALGO, "ALGO",
	  "bcast, overlap: greedy, binomial, pipelined, tree or auto\n"
	  "(default auto: the library picks)" },
	{ "root", required_argument, OPT_ROOT, "R",
	  "bcast, overlap: the root rank (default 0)" },
	{ "compute", required_argument, OPT_COMPUTE, "US",
	  "overlap: how long every non-root computes between\n"
	  "starting the broadcast and waiting for it, in\n"
	  "microseconds (default 10000)" },
	{ "mode", required_argument, OPT_MODE, "MODE",
	  "copy_*: relay, direct or transport-ack\n"
	  "(default relay; see triad_copy in triad.h)" },
	{ "serve", required_argument, OPT_SERVE, "HOW",
	  "copy_*, am_*: how the ranks wait for messages:\n"
	  "wait (default: their application threads sleep,\n"
	  "the progress threads serve) or poll (the\n"
	  "application threads call triad_progress in a loop,\n"
	  "as perftest and ucx_perftest busy-poll)" },
	{ "no-req", no_argument, OPT_NO_REQ, NULL,
	  "put_lat: puts with no request (req_p NULL), the\n"
	  "ranks calling triad_progress while they wait, one\n"
	  "triad_flush at the end (as ucx_perftest's\n"
	  "ucp_put_lat); default: a request per put, tested\n"
	  "until complete.  put_bw, put_bw_unreg: puts with\n"
	  "no request, a flush after every half --window, at\n"
	  "most two flushes in flight (as ucp_put_bw)" },
	{ "planes", required_argument, OPT_PLANES, "K",
	  "mp_bw: spread over 1, 2 .. K planes (default: all)" },
	{ "fault", required_argument, OPT_FAULT, "HOW",
	  "failover: down (the port loses its carrier, then\n"
	  "up) or cut (frames vanish, the port stays up;\n"
	  "then heal); default down.  Runs\n"
	  "$TRIAD_FABRIC_CTL (default fabric-ctl)" },
	{ "fault-node", required_argument, OPT_FAULT_NODE, "N",
	  "failover: the node (rank) whose port fails\n"
	  "(default 0, the sender's: a local fault)" },
	{ "fault-at", required_argument, OPT_FAULT_AT, "MS",
	  "failover, drain: the fault or drain this long\n"
	  "after the stream starts (default 1000)" },
	{ "up-after", required_argument, OPT_UP_AFTER, "MS",
	  "failover, drain: up/heal or restore this long\n"
	  "after the traffic left the plane (default 1000)" },
	{ "json", no_argument, OPT_JSON, NULL,
	  "JSON Lines instead of the table: one object per\n"
	  "row on its own line (failover, drain: one per run)" },
	{ "csv", no_argument, OPT_CSV, NULL,
	  "CSV instead of the table: a header line of the\n"
	  "JSON keys, then one line per row (failover, drain:\n"
	  "one per event of the timeline)" },
	{ "format", required_argument, OPT_FORMAT, "FMT",
	  "table (default), csv, json, or osu: the output of\n"
	  "the OSU micro-benchmark the test mirrors (its\n"
	  "header, then size and mean latency or MB/s per\n"
	  "row): put_lat, get_lat, put_bw, put_bw_unreg,\n"
	  "am_lat, am_bw, bcast" },
	{ "plot", required_argument, OPT_PLOT, "FILE",
	  "also draw the rows with gnuplot into FILE, a .png\n"
	  "(data in FILE.dat): a sweep's figures over the size,\n"
	  "failover's and drain's timeline of events" },
	{ "quiet", no_argument, OPT_QUIET, NULL,
	  "no progress lines on stderr (a sweep prints one per\n"
	  "size)" },
	{ "config", no_argument, OPT_CONFIG, NULL,
	  "print the TRIAD_* configuration first\n"
	  "(and exit when no COMMAND is given)" },
	{ "timeout", required_argument, OPT_TIMEOUT, "SEC",
	  "fail when one operation, message or barrier\n"
	  "takes longer (default 60); a rank that waits for\n"
	  "a whole measurement gets SEC plus an estimate" },
	{ "help", no_argument, OPT_HELP, NULL, "this help" },
};

#define NOPTS (sizeof(opt_defs) / sizeof(opt_defs[0]))

/* Prints text and a newline; continuation lines are indented by col
 * spaces, under the first. */
static void print_indented(FILE *out, const char *text, int col)
{
	for (; *text; text++) {
		fputc(*text, out);
		if (*text == '\n')
			fprintf(out, "%*s", col, "");
	}
	fputc('\n', out);
}

static void usage(FILE *out)
{
	size_t i;

	fprintf(out,
		"usage: %s COMMAND [options]\n"
		"\n"
		"Measures triad's one-sided operations and active messages between rank %d\n"
		"(client, reports) and rank %d (server), like perftest.  Launch one process\n"
		"per rank with the same command line; each reads TRIAD_RANK and TRIAD_WORLD\n"
		"(see --config).  Other ranks only take part in the barriers.\n"
		"\n"
		"commands:\n",
		PROG, PERF_CLIENT, PERF_SERVER);
	for (i = 0; i < perf_ncmds; i++) {
		fprintf(out, "  %-10s ", perf_cmds[i].name);
		print_indented(out, perf_cmds[i].summary, 13);
	}
	fprintf(out, "\noptions:\n");
	for (i = 0; i < NOPTS; i++) {
		const struct opt_def *d = &opt_defs[i];
		char left[64];
		const char *h = d->help;
		int n;

		if (d->id < OPT_WINDOW)
			n = snprintf(left, sizeof(left), "-%c, --%s", d->id, d->name);
		else
			n = snprintf(left, sizeof(left), "    --%s", d->name);
		if (d->metavar)
			snprintf(left + n, sizeof(left) - (size_t)n, " %s", d->metavar);
		fprintf(out, "  %-18s ", left);
		print_indented(out, h, 21);
	}
	fprintf(out,
		"\nexit status: 0 ok, 1 a failure (library error, timeout, data mismatch),\n"
		"2 a usage error.\n"
		"\nexample (two ranks on one host, pinned to different CPUs):\n"
		"  TRIAD_RANK=1 taskset -c 1 %s put_lat -s 8 --plane 0 &\n"
		"  TRIAD_RANK=0 taskset -c 0 %s put_lat -s 8 --plane 0\n"
		"  TRIAD_RANK=1 taskset -c 1 %s am_bw -s 1k --slots 16 &\n"
		"  TRIAD_RANK=0 taskset -c 0 %s am_bw -s 1k --slots 16\n",
		PROG, PROG, PROG, PROG);
}

static __attribute__((format(printf, 1, 2))) int usage_error(const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "%s: ", PROG);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, "\ntry '%s --help'\n", PROG);
	return PERF_EXIT_USAGE;
}

static const struct opt_def *opt_by_id(int id)
{
	for (size_t i = 0; i < NOPTS; i++)
		if (opt_defs[i].id == id)
			return &opt_defs[i];
	return NULL;
}

/* "8", "64k", "1M", "2GiB": binary units. */
static int parse_size(const char *s, size_t *val_p)
{
	unsigned long long v;
	unsigned shift = 0;
	char *end;

	if (!s || *s < '0' || *s > '9')
		return -EINVAL;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno)
		return -ERANGE;
	switch (*end) {
	case 'k': case 'K': shift = 10; end++; break;
	case 'm': case 'M': shift = 20; end++; break;
	case 'g': case 'G': shift = 30; end++; break;
	default: break;
	}
	if (shift && (*end == 'i' || *end == 'I'))
		end++;
	if (*end == 'b' || *end == 'B')
		end++;
	if (*end)
		return -EINVAL;
	if (v > (SIZE_MAX_ALLOWED >> shift))
		return -ERANGE;
	*val_p = (size_t)(v << shift);
	return 0;
}

static int parse_long(const char *s, long min, long max, long *val_p)
{
	char *end;
	long v;

	errno = 0;
	v = strtol(s, &end, 10);
	if (errno || end == s || *end || v < min || v > max)
		return -EINVAL;
	*val_p = v;
	return 0;
}

/* A keyword option's values. */
struct choice {
	const char *name;
	int value;
};

static int parse_choice(const char *s, const struct choice *c, int *val_p)
{
	for (; c->name; c++) {
		if (!strcmp(s, c->name)) {
			*val_p = c->value;
			return 0;
		}
	}
	return -EINVAL;
}

static const struct choice algo_choices[] = {
	{ "greedy", TRIAD_BCAST_GREEDY }, { "binomial", TRIAD_BCAST_BINOMIAL },
	{ "pipelined", TRIAD_BCAST_PIPELINED }, { "tree", TRIAD_BCAST_TREE },
	{ "auto", TRIAD_BCAST_AUTO },	       { NULL, 0 },
};
static const struct choice mode_choices[] = {
	{ "relay", TRIAD_COPY_RELAY }, { "direct", TRIAD_COPY_DIRECT },
	{ "transport-ack", TRIAD_COPY_TRANSPORT_ACK }, { NULL, 0 },
};
static const struct choice serve_choices[] = { { "wait", 0 }, { "poll", 1 }, { NULL, 0 } };
static const struct choice fault_choices[] = { { "down", 0 }, { "cut", 1 }, { NULL, 0 } };
static const struct choice format_choices[] = {
	{ "table", PERF_FMT_TABLE }, { "csv", PERF_FMT_CSV }, { "json", PERF_FMT_JSON },
	{ "osu", PERF_FMT_OSU }, { NULL, 0 },
};

/* "put_lat, get_lat, ...": the commands that --format osu takes. */
static const char *osu_list(void)
{
	static char list[256];
	size_t n = 0;

	for (size_t i = 0; i < perf_ncmds && n < sizeof(list); i++)
		if (perf_osu_find(perf_cmds[i].name))
			n += (size_t)snprintf(list + n, sizeof(list) - n, "%s%s", n ? ", " : "",
					      perf_cmds[i].name);
	return list;
}

/* "put_lat, get_lat, ...": the command names, for messages. */
static const char *cmd_list(void)
{
	static char list[256];
	size_t n = 0;

	for (size_t i = 0; i < perf_ncmds && n < sizeof(list); i++)
		n += (size_t)snprintf(list + n, sizeof(list) - n, "%s%s", i ? ", " : "",
				      perf_cmds[i].name);
	return list;
}

/* Parses argv into o.  0 to run, -1 when --help was printed, or an exit
 * status (PERF_EXIT_USAGE) after printing the error. */
static int parse_args(int argc, char **argv, struct perf_opts *o)
{
	static struct option longopts[NOPTS + 1];
	char shortopts[2 * NOPTS + 2] = ":"; /* ':' first: report missing values */
	const struct opt_def *d;
	size_t i, k = 1;
	const char *bcast_opt = NULL; /* the last bcast-only option given */
	int mode_given = 0;	      /* --mode (copy_* only) */
	int serve_given = 0;	      /* --serve (copy_* and am_* only) */
	const char *fault_opt = NULL; /* the last failover/drain-only option given */
	const char *failover_opt = NULL; /* the last failover-only option given */
	int planes_given = 0, iters_given = 0, compute_given = 0, pairs_given = 0;
	int n_given = 0; /* --iters itself */
	char format_opt[64] = "";      /* --json, --csv or --format FMT, as given */
	char this_format[64];
	long v;
	int c, pick;

	*o = (struct perf_opts){ .warmup = -1, .window = 64, .plane = -1,
				 .prio = TRIAD_PRIO_LOW, .timeout_s = 60, .fault_at_ms = 1000,
				 .up_after_ms = 1000, .compute_us = 10000 };
	for (i = 0; i < NOPTS; i++) {
		d = &opt_defs[i];
		longopts[i] = (struct option){ d->name, d->has_arg, NULL, d->id };
		if (d->id < OPT_WINDOW) {
			shortopts[k++] = (char)d->id;
			if (d->has_arg == required_argument)
				shortopts[k++] = ':';
		}
	}
	shortopts[k] = '\0';

	opterr = 0;
	while ((c = getopt_long(argc, argv, shortopts, longopts, NULL)) != -1) {
		const char *arg = optarg;

		if (c == '?') {
			d = optopt ? opt_by_id(optopt) : NULL;
			if (d) /* a known option given a value it does not take */
				return usage_error("option '--%s' takes no value", d->name);
			if (optopt > 0 && optopt < OPT_WINDOW)
				return usage_error("unknown option '-%c'", optopt);
			return usage_error("unknown option '%s'", argv[optind - 1]);
		}
		if (c == ':') {
			d = opt_by_id(optopt);
			return usage_error("option '--%s' needs a value (%s)",
					   d ? d->name : "?", d && d->metavar ? d->metavar : "?");
		}
		d = opt_by_id(c);
		switch (c) {
		case OPT_SIZE:
			if (parse_size(arg, &o->size) || o->size == 0)
				return usage_error("--size '%s': not a size from 1 B to 1 GiB "
						   "(examples: 8, 64k, 1M)", arg);
			break;
		case OPT_ALL:
			o->all = 1;
			break;
		case OPT_ITERS:
			if (parse_long(arg, 1, 1000000000, &v))
				return usage_error("--iters '%s': not a number from 1 to 10^9", arg);
			o->iters = v;
			iters_given = 1;
			n_given = 1;
			break;
		case OPT_DURATION: {
			char *end;
			double sec;

			errno = 0;
			sec = strtod(arg, &end);
			if (errno || end == arg || *end || !(sec >= 0.01 && sec <= 86400))
				return usage_error("--duration '%s': not a number of seconds from 0.01 "
						   "to 86400", arg);
			o->duration_s = sec;
			break;
		}
		case OPT_PAIRS:
			if (parse_long(arg, 1, 65536, &v))
				return usage_error("--pairs '%s': not a number from 1 to 65536", arg);
			o->pairs = (int)v;
			pairs_given = 1;
			break;
		case OPT_WARMUP:
			if (parse_long(arg, 0, 1000000000, &v))
				return usage_error("--warmup '%s': not a number from 0 to 10^9", arg);
			o->warmup = v;
			iters_given = 1;
			break;
		case OPT_WINDOW:
			if (parse_long(arg, 1, 65536, &v))
				return usage_error("--window '%s': not a number from 1 to 65536", arg);
			o->window = (int)v;
			break;
		case OPT_PLANE:
			if (parse_long(arg, 0, TRIAD_MAX_PLANES - 1, &v))
				return usage_error("--plane '%s': not a plane number from 0 to %d", arg,
						   TRIAD_MAX_PLANES - 1);
			o->plane = (int)v;
			break;
		case OPT_JSON:
		case OPT_CSV:
		case OPT_FORMAT:
			if (c != OPT_FORMAT)
				pick = c == OPT_JSON ? PERF_FMT_JSON : PERF_FMT_CSV;
			else if (parse_choice(arg, format_choices, &pick))
				return usage_error("--format '%s': not table, csv, json or osu", arg);
			snprintf(this_format, sizeof(this_format), "--%s%s%.20s", d->name,
				 c == OPT_FORMAT ? " " : "", c == OPT_FORMAT ? arg : "");
			if (*format_opt && (int)o->format != pick)
				return usage_error("%s and %s exclude each other (one output format)",
						   format_opt, this_format);
			o->format = (enum perf_format)pick;
			memcpy(format_opt, this_format, sizeof(format_opt));
			break;
		case OPT_PLOT:
			if (strlen(arg) < 5 || strcmp(arg + strlen(arg) - 4, ".png"))
				return usage_error("--plot '%s': not a file name ending in .png", arg);
			o->plot_file = arg;
			break;
		case OPT_QUIET:
			o->quiet = 1;
			break;
		case OPT_CONFIG:
			o->config = 1;
			break;
		case OPT_TIMEOUT:
			if (parse_long(arg, 1, 86400, &v))
				return usage_error("--timeout '%s': not a number of seconds from 1 "
						   "to 86400", arg);
			o->timeout_s = (int)v;
			break;
		case OPT_PRIO:
			if (!strcmp(arg, "high"))
				o->prio = TRIAD_PRIO_HIGH;
			else if (!strcmp(arg, "medium"))
				o->prio = TRIAD_PRIO_MEDIUM;
			else if (!strcmp(arg, "low"))
				o->prio = TRIAD_PRIO_LOW;
			else
				return usage_error("--prio '%s': not high, medium or low", arg);
			break;
		case OPT_SLOTS:
			if (parse_long(arg, 1, 64, &v))
				return usage_error("--slots '%s': not a number from 1 to 64", arg);
			o->slots = (int)v;
			break;
		case OPT_ALGO:
			if (parse_choice(arg, algo_choices, &pick))
				return usage_error("--algo '%s': not greedy, binomial, pipelined, tree "
						   "or auto", arg);
			o->algo = pick;
			bcast_opt = d->name;
			break;
		case OPT_ROOT:
			if (parse_long(arg, 0, INT_MAX, &v))
				return usage_error("--root '%s': not a rank number", arg);
			o->root = (int)v;
			bcast_opt = d->name;
			break;
		case OPT_MODE:
			if (parse_choice(arg, mode_choices, &pick))
				return usage_error("--mode '%s': not relay, direct or transport-ack",
						   arg);
			o->copy_mode = (unsigned)pick;
			mode_given = 1;
			break;
		case OPT_SERVE:
			if (parse_choice(arg, serve_choices, &o->serve_poll))
				return usage_error("--serve '%s': not wait or poll", arg);
			serve_given = 1;
			break;
		case OPT_NO_REQ:
			o->no_req = 1;
			break;
		case OPT_PLANES:
			if (parse_long(arg, 1, TRIAD_MAX_PLANES, &v))
				return usage_error("--planes '%s': not a number from 1 to %d", arg,
						   TRIAD_MAX_PLANES);
			o->planes = (int)v;
			planes_given = 1;
			break;
		case OPT_FAULT:
			if (parse_choice(arg, fault_choices, &o->fault_cut))
				return usage_error("--fault '%s': not down or cut", arg);
			failover_opt = d->name;
			break;
		case OPT_FAULT_NODE:
			if (parse_long(arg, 0, INT_MAX, &v))
				return usage_error("--fault-node '%s': not a rank number", arg);
			o->fault_node = (int)v;
			failover_opt = d->name;
			break;
		case OPT_FAULT_AT:
		case OPT_UP_AFTER:
			if (parse_long(arg, 0, 3600000, &v))
				return usage_error("--%s '%s': not a number of milliseconds from 0 to "
						   "3600000", d->name, arg);
			*(c == OPT_FAULT_AT ? &o->fault_at_ms : &o->up_after_ms) = (int)v;
			fault_opt = d->name;
			break;
		case OPT_COMPUTE:
			if (parse_long(arg, 0, 60000000, &v))
				return usage_error("--compute '%s': not a number of microseconds from "
						   "0 to 60000000", arg);
			o->compute_us = v;
			compute_given = 1;
			break;
		case OPT_HELP:
			usage(stdout);
			return -1;
		default:
			return usage_error("option '%s' is not handled (%s)", argv[optind - 1],
					   d ? d->name : "bug");
		}
	}
	if (optind < argc) {
		for (i = 0; i < perf_ncmds; i++)
			if (!strcmp(argv[optind], perf_cmds[i].name))
				o->cmd = &perf_cmds[i];
		if (!o->cmd)
			return usage_error("unknown command '%s' (%s)", argv[optind], cmd_list());
		if (optind + 1 < argc)
			return usage_error("unexpected argument '%s' after the command",
					   argv[optind + 1]);
	} else if (!o->config) {
		return usage_error("no command given (%s)", cmd_list());
	}
	if (o->all && o->size)
		return usage_error("--all and --size exclude each other");
	if (o->cmd && o->format == PERF_FMT_OSU && !perf_osu_find(o->cmd->name))
		return usage_error("--format osu: %s has no OSU micro-benchmark counterpart (osu "
				   "format for: %s)", o->cmd->name, osu_list());
	if (o->cmd && (o->cmd->flags & PERF_CMD_INIT) &&
	    (o->all || o->size || o->plane >= 0 || o->plot_file))
		return usage_error("init: only -n (the puts after the first) and --timeout apply");
	if (o->cmd && (o->cmd->flags & PERF_CMD_AM) && o->plane >= 0)
		return usage_error("--plane: %s cannot pin a plane (the library picks the plane "
				   "of every message)", o->cmd->name);
	if (o->cmd && !(o->cmd->flags & PERF_CMD_BCAST) && bcast_opt)
		return usage_error("--%s: only for bcast and overlap", bcast_opt);
	if (o->cmd && !(o->cmd->flags & PERF_CMD_OVERLAP) && compute_given)
		return usage_error("--compute: only for overlap");
	if (o->cmd && (o->cmd->flags & PERF_CMD_COPY) && o->plane >= 0)
		return usage_error("--plane: %s cannot pin a plane (triad_copy takes no plane "
				   "flag)", o->cmd->name);
	if (o->cmd && !(o->cmd->flags & PERF_CMD_COPY) && mode_given)
		return usage_error("--mode: only for copy_lat and copy_bw");
	if (o->cmd && !(o->cmd->flags & (PERF_CMD_COPY | PERF_CMD_AM)) && serve_given)
		return usage_error("--serve: only for copy_lat, copy_bw, am_lat and am_bw");
	if (o->cmd && strcmp(o->cmd->name, "put_lat") && strcmp(o->cmd->name, "put_bw") &&
	    strcmp(o->cmd->name, "put_bw_unreg") && o->no_req)
		return usage_error("--no-req: only for put_lat, put_bw and put_bw_unreg");
	if (o->cmd && !(o->cmd->flags & PERF_CMD_MP) && planes_given)
		return usage_error("--planes: only for mp_bw");
	if (o->cmd && (o->cmd->flags & (PERF_CMD_MP | PERF_CMD_FAULT)) && o->plane >= 0)
		return usage_error("--plane: %s picks the planes itself%s", o->cmd->name,
				   o->cmd->flags & PERF_CMD_MP ? " (see --planes)" : "");
	if (o->cmd && !(o->cmd->flags & PERF_CMD_FAULT) && fault_opt)
		return usage_error("--%s: only for failover and drain", fault_opt);
	if (o->cmd && strcmp(o->cmd->name, "failover") && failover_opt)
		return usage_error("--%s: only for failover", failover_opt);
	if (o->cmd && !(o->cmd->flags & PERF_CMD_PAIRS) && pairs_given)
		return usage_error("--pairs: only for put_mbw");
	if (o->duration_s > 0 && n_given)
		return usage_error("--duration and --iters exclude each other (a time or a count "
				   "per size)");
	if (o->cmd && o->duration_s > 0 &&
	    (o->cmd->flags & (PERF_CMD_BCAST | PERF_CMD_FAULT | PERF_CMD_INIT)))
		return usage_error("--duration: not for %s (%s)", o->cmd->name,
				   o->cmd->flags & PERF_CMD_BCAST ? "its rounds are counted: -n" :
				   o->cmd->flags & PERF_CMD_FAULT ? "it streams for its own time: "
								    "--fault-at, --up-after" :
				   "it times one start-up");
	if (o->cmd && (o->cmd->flags & PERF_CMD_FAULT) && (o->all || iters_given))
		return usage_error("--all, --iters, --warmup: %s streams for a time (--fault-at, "
				   "--up-after), not a number of iterations", o->cmd->name);
	return 0;
}

/* ---- running ---------------------------------------------------------------------------*/
/* The largest size to run: the size, or the sweep's end within the
 * command's limit. */
static size_t max_size(const struct perf_run *r)
{
	const struct perf_opts *o = r->o;

	if (o->all)
		return SWEEP_MAX < r->size_limit ? SWEEP_MAX : r->size_limit;
	return o->size ? o->size : o->cmd->def_size;
}

/* The rank that prints the figures: bcast's root, else the client. */
static int reporter(const struct perf_run *r)
{
	return r->o->cmd->flags & PERF_CMD_BCAST ? r->o->root : PERF_CLIENT;
}

/* How many sizes a sweep runs, for its progress lines. */
static int sweep_steps(const struct perf_run *r)
{
	int k = 0;

	for (size_t size = SWEEP_MIN; size <= max_size(r); size *= 2)
		k++;
	return k;
}

/* --duration: the reporter's figure v reaches every rank (through the
 * control page of each one's window); 0, or a negative errno. */
static int share_long(struct perf_run *r, long *v)
{
	const int from = reporter(r);
	triad_req_t *req;
	int ret = 0;

	if (r->rank == from) {
		memcpy(r->ctl, v, sizeof(*v));
		for (int k = 0; k < triad_size(r->ctx) && !ret; k++) {
			if (k == from)
				continue;
			ret = triad_put(r->ctx, r->ctl, sizeof(*v), k, PERF_WIN_ID,
					2 * r->area + sizeof(*v), 0, &req);
			if (ret) {
				perf_err(r, "triad_put (--duration's count)", ret);
				break;
			}
			ret = triad_wait(req, r->timeout_ms);
			if (ret) {
				perf_err(r, "triad_wait (--duration's count)", ret);
				break;
			}
			ret = perf_finish_req(r, req, "put (--duration's count)");
		}
	}
	if (!ret)
		ret = perf_barrier(r, r->timeout_ms, "--duration's count");
	if (!ret && r->rank != from)
		memcpy(v, r->ctl + sizeof(*v), sizeof(*v));
	return ret;
}

/* --duration SEC: probe runs (no row) of 8, 64, 512 .. iterations until
 * one takes SEC/8 on the reporter, then the count that fills SEC.  The
 * probes' time includes their barriers, so the count errs short. */
#define PROBE_FIRST 8
#define PROBE_GROWTH 8
#define PROBE_MAX 100000000L
static int duration_iters(struct perf_run *r, size_t size, long *iters_p)
{
	const double target = r->o->duration_s;
	long n = PROBE_FIRST, next;
	int ret, first = 1;

	for (;;) {
		uint64_t t0 = perf_now_ns();
		double s;

		r->silent = 1;
		ret = r->o->cmd->run(r, size, n, first ? perf_default_warmup(n) : 0);
		r->silent = 0;
		if (ret)
			return ret;
		first = 0;
		s = (double)(perf_now_ns() - t0) / 1e9;
		/* next > 0: probe again with next; < 0: measure -next times. */
		if (s >= target / PROBE_GROWTH || n >= PROBE_MAX) {
			double k = (double)n * target / (s > 0 ? s : 1e-9);

			next = -(long)(k < 1 ? 1 : k > PROBE_MAX ? PROBE_MAX : k);
		} else {
			next = n * PROBE_GROWTH;
		}
		ret = share_long(r, &next);
		if (ret)
			return ret;
		if (next < 0) {
			*iters_p = -next;
			return 0;
		}
		n = next;
	}
}

static int run_sizes(struct perf_run *r)
{
	const struct perf_opts *o = r->o;
	size_t size = o->all ? SWEEP_MIN : max_size(r);
	int ret = 0, step = 0, steps = o->all ? sweep_steps(r) : 1;

	for (; !ret && size <= max_size(r); size *= 2) {
		long iters = o->iters ? o->iters : perf_default_iters(o->cmd->kind, size);
		long warmup = o->warmup >= 0 ? o->warmup : perf_default_warmup(iters);

		/* A sweep's progress, on stderr: the figures stay on stdout. */
		if (o->all && r->rank == reporter(r))
			perf_progress(r, "%s: %zu B (%d of %d)", o->cmd->name, size, ++step, steps);
		if (o->duration_s > 0) {
			ret = duration_iters(r, size, &iters);
			if (ret)
				break;
			warmup = o->warmup >= 0 ? o->warmup : 0;
		}
		ret = o->cmd->run(r, size, iters, warmup);
		if (!o->all)
			break;
	}
	return ret;
}

/* setenv NAME=value unless NAME is set already (force: always).  0, or
 * PERF_EXIT_FAIL after printing why. */
static int set_env(const char *name, long value, int force)
{
	char v[32];

	if (!force && getenv(name))
		return 0;
	snprintf(v, sizeof(v), "%ld", value);
	if (setenv(name, v, 1)) {
		fprintf(stderr, "%s: setenv %s=%s: %s\n", PROG, name, v, strerror(errno));
		return PERF_EXIT_FAIL;
	}
	return 0;
}

/* --slots K: TRIAD_SLOTS for triad_init (and --config).  The library
 * refuses a connection whose priority thresholds exceed the peer's slot
 * count (TRIAD_FC_NEED_MEDIUM 2, _LOW 3 by default), so below 3 slots the
 * thresholds the user did not set are lowered to K, the clamp the flow
 * control applies to its own defaults. */
static int set_slots(const struct perf_opts *o)
{
	int ret;

	if (!o->slots)
		return 0;
	ret = set_env("TRIAD_SLOTS", o->slots, 1);
	if (!ret && o->slots < 2)
		ret = set_env("TRIAD_FC_NEED_MEDIUM", o->slots, 0);
	if (!ret && o->slots < 3)
		ret = set_env("TRIAD_FC_NEED_LOW", o->slots, 0);
	return ret;
}

static int run(const struct perf_opts *o)
{
	struct perf_run r = { .o = o, .rank = -1, .timeout_ms = o->timeout_s * 1000 };
	int ret, status = PERF_EXIT_FAIL, plot_failed = 0;

	if (o->cmd->flags & PERF_CMD_INIT)
		return perf_init_run(o); /* it times triad_init itself */
	ret = triad_init(NULL, &r.ctx);
	if (ret) {
		fprintf(stderr, "%s: triad_init: %s (is TRIAD_RANK and TRIAD_WORLD set? see "
			"--config)\n", PROG, strerror(-ret));
		return PERF_EXIT_FAIL;
	}
	r.rank = triad_rank(r.ctx);
	if (triad_size(r.ctx) < 2) {
		fprintf(stderr, "%s: the world has %d rank; the tests need ranks %d and %d\n", PROG,
			triad_size(r.ctx), PERF_CLIENT, PERF_SERVER);
		goto fini;
	}
	if (o->plane >= triad_nplanes(r.ctx)) {
		fprintf(stderr, "%s: --plane %d: the world has %d plane(s)\n", PROG, o->plane,
			triad_nplanes(r.ctx));
		status = PERF_EXIT_USAGE;
		goto fini;
	}
	if (o->planes > triad_nplanes(r.ctx)) {
		fprintf(stderr, "%s: --planes %d: the world has %d plane(s)\n", PROG, o->planes,
			triad_nplanes(r.ctx));
		status = PERF_EXIT_USAGE;
		goto fini;
	}
	if ((o->cmd->flags & PERF_CMD_FAULT) && triad_nplanes(r.ctx) < 2) {
		fprintf(stderr, "%s: %s needs 2 planes or more; the world has %d\n", PROG,
			o->cmd->name, triad_nplanes(r.ctx));
		status = PERF_EXIT_USAGE;
		goto fini;
	}
	if (o->cmd->flags & PERF_CMD_PAIRS) {
		r.npairs = o->pairs ? o->pairs : triad_size(r.ctx) / 2;
		if (2 * r.npairs > triad_size(r.ctx)) {
			fprintf(stderr, "%s: --pairs %d: needs %d ranks; the world has %d\n", PROG,
				r.npairs, 2 * r.npairs, triad_size(r.ctx));
			status = PERF_EXIT_USAGE;
			goto fini;
		}
	}
	if ((o->cmd->flags & PERF_CMD_FAULT) && o->fault_node >= triad_size(r.ctx)) {
		fprintf(stderr, "%s: --fault-node %d: the world has %d ranks\n", PROG,
			o->fault_node, triad_size(r.ctx));
		status = PERF_EXIT_USAGE;
		goto fini;
	}
	r.flags = o->plane >= 0 ? TRIAD_F_PLANE(o->plane) : 0;
	r.size_limit = SIZE_MAX_ALLOWED;
	if (o->cmd->flags & PERF_CMD_AM) {
		r.size_limit = triad_am_max_size(r.ctx);
		if (max_size(&r) > r.size_limit) {
			fprintf(stderr, "%s: --size %zu: larger than the largest active message, "
				"%zu bytes (TRIAD_SLOT_SIZE less the headers)\n", PROG,
				max_size(&r), r.size_limit);
			status = PERF_EXIT_USAGE;
			goto fini;
		}
		/* Handlers before the first barrier: no message finds its id
		 * unregistered. */
		if (perf_am_setup(&r))
			goto fini;
	}
	/* The same for the fault stream's handlers, and its window. */
	if ((o->cmd->flags & PERF_CMD_FAULT) && perf_fault_setup(&r))
		goto fini;
	/* Page-aligned areas: [receive | send | control page]. */
	r.area = (max_size(&r) + 4095) & ~(size_t)4095;
	r.buf = aligned_alloc(4096, 2 * r.area + 4096);
	if (!r.buf) {
		fprintf(stderr, "%s: rank %d: no memory for 2 x %zu bytes\n", PROG, r.rank, r.area);
		goto fini;
	}
	memset(r.buf, 0, 2 * r.area + 4096);
	r.ctl = r.buf + 2 * r.area;
	ret = triad_win_create(r.ctx, PERF_WIN_ID, r.buf, 2 * r.area + 4096, NULL, &r.win);
	if (ret) {
		fprintf(stderr, "%s: rank %d: triad_win_create(%zu bytes): %s\n", PROG, r.rank,
			2 * r.area + 4096, strerror(-ret));
		goto free_buf;
	}
	/* Every window exists before anyone uses one. */
	ret = triad_barrier(r.ctx, r.timeout_ms);
	if (ret) {
		fprintf(stderr, "%s: rank %d: triad_barrier (windows created): %s\n", PROG, r.rank,
			strerror(-ret));
		goto destroy;
	}
	ret = run_sizes(&r);
	/* The figures are out; a plot that failed still fails the run. */
	if (!ret && r.rank == reporter(&r) && perf_out_finish(&r))
		plot_failed = 1;
	if (!ret) {
		/* Nobody destroys a window the peer may still use. */
		ret = triad_barrier(r.ctx, r.timeout_ms);
		if (ret)
			fprintf(stderr, "%s: rank %d: triad_barrier (end): %s\n", PROG, r.rank,
				strerror(-ret));
	}
	free(r.out); /* rows kept for a plot that a failure cut short */
	if (!ret && !r.verify_errors && !plot_failed)
		status = PERF_EXIT_OK;
	else if (!ret && (o->cmd->flags & PERF_CMD_FAULT))
		fprintf(stderr, "%s: rank %d: %s: a check failed (see the report)\n", PROG,
			r.rank, o->cmd->name);
	else if (!ret)
		fprintf(stderr, "%s: rank %d: %ld size(s) with data mismatches\n", PROG, r.rank,
			r.verify_errors);
destroy:
	ret = triad_win_destroy(r.win);
	if (ret) {
		fprintf(stderr, "%s: rank %d: triad_win_destroy: %s\n", PROG, r.rank,
			strerror(-ret));
		status = PERF_EXIT_FAIL;
	}
free_buf:
	free(r.buf);
fini:
	/* A usage error found here (the world's size or planes) is found by
	 * every rank alike: meet once more, so that none leaves while another
	 * still connects to it in triad_init (it would fail there, status 1). */
	if (status == PERF_EXIT_USAGE)
		(void)triad_barrier(r.ctx, r.timeout_ms);
	if (perf_fault_win_destroy(&r))
		status = PERF_EXIT_FAIL;
	triad_fini(r.ctx);
	perf_am_cleanup(&r); /* after triad_fini: no handler runs any more */
	perf_fault_cleanup(&r);
	return status;
}

int main(int argc, char **argv)
{
	struct perf_opts o;
	int ret = parse_args(argc, argv, &o);

	if (ret < 0)
		return PERF_EXIT_OK; /* --help */
	if (ret)
		return ret;
	ret = set_slots(&o);
	if (ret)
		return ret;
	if (o.config) {
		triad_config_print(stdout);
		fflush(stdout);
	}
	if (!o.cmd)
		return PERF_EXIT_OK;
	return run(&o);
}
