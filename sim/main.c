/* triad-sim: the broadcast schedulers of lib/proto run on a simulated
 * network of N ranks (sim/model.h), and the per-process memory and QPs of
 * the default configuration as functions of N and P (docs/sim.md,
 * docs/scaling.md).
 *
 *   triad-sim -a all -n 8..4096 -s 1K..64M [--lat-model racks --lat-spread 10] [--csv|--json]
 *   triad-sim --memory -n 8..4096 --planes 1,2,4
 *   triad-sim --check [--lat-model M --lat-spread K] [-n ...] [-s ...]
 *
 * Exit 0, 1 when a simulation failed (--check: or a target is not met), 2
 * for a bad option. */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "core/config.h"
#include "model.h"

#define MAX_LIST 64

struct list {
	uint64_t v[MAX_LIST];
	unsigned n;
};

enum fmt { FMT_TABLE, FMT_CSV, FMT_JSON };

struct opts {
	struct sim_net net;
	struct list algos, ranks, sizes, planes;
	uint32_t root;
	uint64_t pipe_chunk;
	uint32_t fanout, window, max_kids;
	uint64_t inline_max;
	enum fmt fmt;
	bool memory, check;
	bool model_given, ranks_given, sizes_given, spread_given;
	uint64_t check_max;
};

static const char *prog = "triad-sim";

static void usage(FILE *f)
{
	fprintf(f,
		"usage: %s [options]\n"
		"  -a, --algo A        triad (the delegated broadcast, its shape chosen), tree,\n"
		"                      twotree; the root-driven greedy, binomial, pipelined, auto;\n"
		"                      refs (the MPI reference models: ref:binomial, ref:scat+ring,\n"
		"                      ref:scat+rd, ref:pipe-bin, ref:chain); a list; or all\n"
		"                      (default triad,greedy,binomial,pipelined,refs)\n"
		"  -n, --ranks N       ranks: N, N1,N2,... or A..B (doubling; default 8..4096)\n"
		"  -s, --size S        bytes: 64k, 1M, a list or A..B (doubling; default 1K..64M)\n"
		"      --root R        the broadcast's root (default 0)\n"
		"      --lat US        one-way link latency L (default 1.5)\n"
		"      --lat-model M   equal, racks or random (default equal)\n"
		"      --lat-spread K  racks: L across racks is K x L; random: per link in [L, K x L]\n"
		"      --rack-size R   ranks per rack (default 64)\n"
		"      --seed X        random: the links' draw (default 1)\n"
		"      --overhead US   CPU time o per message, completion and post (default 0.5)\n"
		"      --gap US        NIC gap g between two messages (default 0.1)\n"
		"      --bw MB/S       NIC bandwidth per direction, 10^6 B/s; 0: free (default 12500)\n"
		"      --wake US       extra cost of an event at a sleeping rank (default 0)\n"
		"      --spin US       non-root ranks sleep after this idle time (default 100)\n"
		"      --root-spin US  the root likewise (default 200)\n"
		"      --copy-chunk S  TRIAD_CHUNK_SIZE, bytes per RDMA WRITE (default 1M)\n"
		"      --mode M        copy mode: transport-ack (the broadcast's), relay, direct\n"
		"      --pipe-chunk S  pipelined: chunk (default: the copy chunk, at most 1M)\n"
		"      --fanout F      pipelined: children per rank, 0 auto (default), 1 chain\n"
		"      --window W      pipelined, twotree: chunks in flight per link (default 4)\n"
		"      --inline S      tree: data carried in the order up to S bytes (default 1K)\n"
		"      --max-kids K    tree: children per rank at most (default ceil(log2 N) + 8)\n"
		"      --profile P     vm: the one-VM Soft-RoCE fabric as calibrated in docs/sim.md\n"
		"      --memory        print memory and QPs per process instead (-n, --planes,\n"
		"                      TRIAD_* variables; peers from a broadcast of -a at -s)\n"
		"      --planes P      --memory: planes, a list (default 1,2,4)\n"
		"      --check         print the points where triad misses issue 37's targets, exit 1\n"
		"                      if any: all[us] above the best reference model, above 1.3 x\n"
		"                      the bound from 16M, the root's events above 64 (8 B, N <= 4096)\n"
		"                      or twice N = 64's; under every --lat-model unless one is given\n"
		"                      (racks and random: --lat-spread 10 unless given; default\n"
		"                      -n 8..4096,16384 -s 8..64M)\n"
		"      --check-max B   --check: skip points of N x S above B bytes, 0: none (default 16G)\n"
		"      --csv, --json   machine-readable output\n"
		"  -h, --help\n",
		prog);
}

static int bad(const char *fmt, const char *what, const char *val)
{
	fprintf(stderr, "%s: ", prog);
	fprintf(stderr, fmt, what, val);
	fprintf(stderr, " (try --help)\n");
	exit(2);
}

/* ---- parsing ---------------------------------------------------------------- */

static uint64_t parse_size(const char *opt, const char *s)
{
	uint64_t v;

	if (tr_parse_size(s, &v))
		bad("%s: '%s' is not a size (examples: 4096, 64k, 1M)", opt, s);
	return v;
}

static uint64_t parse_uint(const char *opt, const char *s, uint64_t min, uint64_t max)
{
	char *end;
	unsigned long long v;

	errno = 0;
	v = strtoull(s, &end, 10);
	if (!*s || *s == '-' || *end || errno || v < min || v > max) {
		char range[64];

		snprintf(range, sizeof(range), "%s (an integer in %" PRIu64 "..%" PRIu64 ")", s, min,
			 max);
		bad("%s: '%s'", opt, range);
	}
	return v;
}

static double parse_num(const char *opt, const char *s)
{
	char *end;
	double v;

	errno = 0;
	v = strtod(s, &end);
	if (!*s || *end || errno || !(v >= 0) || isinf(v))
		bad("%s: '%s' is not a number >= 0", opt, s);
	return v;
}

/* "A", "A,B,C" or "A..B" (doubling from A up to B). */
static void parse_list(const char *opt, const char *s, bool sizes, uint64_t min, uint64_t max,
		       struct list *l)
{
	char buf[256], *tok, *save = NULL;

	if (strlen(s) >= sizeof(buf))
		bad("%s: '%s' is too long", opt, s);
	strcpy(buf, s);
	l->n = 0;
	for (tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		char *dots = strstr(tok, "..");
		uint64_t a, b;

		if (dots)
			*dots = '\0';
		a = sizes ? parse_size(opt, tok) : parse_uint(opt, tok, min, max);
		b = dots ? (sizes ? parse_size(opt, dots + 2) : parse_uint(opt, dots + 2, min, max))
			 : a;
		if (a < min || b > max || b < a || (dots && a == 0)) {
			char what[300];

			snprintf(what, sizeof(what), "%s (each in %" PRIu64 "..%" PRIu64
				 ", a range A..B with 0 < A <= B)", s, min, max);
			bad("%s: bad list '%s'", opt, what);
		}
		for (uint64_t v = a; v <= b; v = v * 2) {
			if (l->n == MAX_LIST)
				bad("%s: '%s' has too many values", opt, s);
			l->v[l->n++] = v;
			if (!dots)
				break;
		}
	}
	if (!l->n)
		bad("%s: '%s' is empty", opt, s);
}

static const char *const algo_opt[] = { "auto", "greedy", "binomial", "pipelined" };

/* -a's values: the root-driven engine's algorithms as they are, the
 * delegated engine's shapes from A_DELEG, the reference models from A_REF. */
#define A_DELEG 100
#define A_REF 200

static const char *algo_name(uint64_t a)
{
	if (a >= A_REF)
		return sim_ref_str((enum sim_ref)(a - A_REF));
	if (a >= A_DELEG)
		return a == A_DELEG ? "triad" : tr_bnode_shape_str((unsigned)(a - A_DELEG));
	return a == TR_BCAST_PIPELINE ? "pipelined" : tr_bcast_algo_str((unsigned)a);
}

static void add_algo(struct list *l, uint64_t a)
{
	for (unsigned i = 0; i < l->n; i++)
		if (l->v[i] == a)
			return;
	if (l->n < MAX_LIST)
		l->v[l->n++] = a;
}

static void add_refs(struct list *l)
{
	for (unsigned r = 0; r < SIM_REF_N; r++)
		add_algo(l, A_REF + r);
}

/* "all", "refs", or one algorithm or a comma-separated list of them. */
static void parse_algos(const char *s, struct list *l)
{
	char buf[128], *tok, *save = NULL;

	l->n = 0;
	if (!strcasecmp(s, "all")) {
		add_algo(l, A_DELEG);
		add_algo(l, A_DELEG + TR_BNODE_TREE);
		add_algo(l, A_DELEG + TR_BNODE_TWOTREE);
		add_algo(l, TR_BCAST_GREEDY);
		add_algo(l, TR_BCAST_BINOMIAL);
		add_algo(l, TR_BCAST_PIPELINE);
		add_refs(l);
		return;
	}
	if (strlen(s) >= sizeof(buf))
		bad("%s: '%s' is too long", "--algo", s);
	strcpy(buf, s);
	for (tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		unsigned a;

		if (!strcasecmp(tok, "refs")) {
			add_refs(l);
			continue;
		}
		if (!strcasecmp(tok, "triad")) {
			add_algo(l, A_DELEG);
			continue;
		}
		if (!strcasecmp(tok, "tree") || !strcasecmp(tok, "twotree")) {
			add_algo(l, A_DELEG + (tok[1] == 'r' || tok[1] == 'R' ? TR_BNODE_TREE
									: TR_BNODE_TWOTREE));
			continue;
		}
		for (a = 0; a < SIM_REF_N; a++)
			if (!strcasecmp(tok, sim_ref_str((enum sim_ref)a)))
				break;
		if (a < SIM_REF_N) {
			add_algo(l, A_REF + a);
			continue;
		}
		for (a = 0; a < TR_BCAST_NALGOS; a++)
			if (!strcasecmp(tok, algo_opt[a]) || !strcasecmp(tok, tr_bcast_algo_str(a)))
				break;
		if (a == TR_BCAST_NALGOS)
			bad("%s: '%s' is not triad, tree, twotree, greedy, binomial, pipelined, auto, "
			    "a ref:* model, refs or all", "--algo", tok);
		add_algo(l, a);
	}
	if (!l->n)
		bad("%s: '%s' names no algorithm", "--algo", s);
}

static int pick(const char *opt, const char *s, const char *const *names, unsigned n)
{
	for (unsigned i = 0; i < n; i++)
		if (!strcasecmp(s, names[i]))
			return (int)i;
	bad("%s: '%s' is not one of the choices (see --help)", opt, s);
	return -1;
}

/* The one-VM Soft-RoCE fabric, fitted to one VM run's point-to-point
 * figures (docs/sim.md, "Calibration", 2026-12-01). */
static void profile_vm(struct sim_net *n)
{
	n->lat_us = 14.7;	    /* with 2 o: ib_write_lat's 24.7 us one way */
	n->o_us = 5;		    /* put_lat - ib_write_lat: 29.9 - 24.7 us */
	n->gap_us = 0;
	n->bw = 41.71 * 1.048576;   /* ib_write_bw 64 KiB: 41.71 MiB/s */
	n->wake_us = 260.0 - 42.0; /* ib_send_lat -e against ib_send_lat (bench/copy) */
}

enum {
	O_ROOT = 256, O_LAT, O_LAT_MODEL, O_LAT_SPREAD, O_RACK, O_SEED, O_OVERHEAD, O_GAP, O_BW,
	O_WAKE, O_SPIN, O_ROOT_SPIN, O_COPY_CHUNK, O_MODE, O_PIPE_CHUNK, O_FANOUT, O_WINDOW,
	O_PROFILE, O_MEMORY, O_PLANES, O_CSV, O_JSON, O_INLINE, O_MAX_KIDS, O_CHECK, O_CHECK_MAX,
};

static const struct option longopts[] = {
	{ "algo", required_argument, NULL, 'a' },
	{ "ranks", required_argument, NULL, 'n' },
	{ "size", required_argument, NULL, 's' },
	{ "root", required_argument, NULL, O_ROOT },
	{ "lat", required_argument, NULL, O_LAT },
	{ "lat-model", required_argument, NULL, O_LAT_MODEL },
	{ "lat-spread", required_argument, NULL, O_LAT_SPREAD },
	{ "rack-size", required_argument, NULL, O_RACK },
	{ "seed", required_argument, NULL, O_SEED },
	{ "overhead", required_argument, NULL, O_OVERHEAD },
	{ "gap", required_argument, NULL, O_GAP },
	{ "bw", required_argument, NULL, O_BW },
	{ "wake", required_argument, NULL, O_WAKE },
	{ "spin", required_argument, NULL, O_SPIN },
	{ "root-spin", required_argument, NULL, O_ROOT_SPIN },
	{ "copy-chunk", required_argument, NULL, O_COPY_CHUNK },
	{ "mode", required_argument, NULL, O_MODE },
	{ "pipe-chunk", required_argument, NULL, O_PIPE_CHUNK },
	{ "fanout", required_argument, NULL, O_FANOUT },
	{ "window", required_argument, NULL, O_WINDOW },
	{ "inline", required_argument, NULL, O_INLINE },
	{ "max-kids", required_argument, NULL, O_MAX_KIDS },
	{ "profile", required_argument, NULL, O_PROFILE },
	{ "memory", no_argument, NULL, O_MEMORY },
	{ "planes", required_argument, NULL, O_PLANES },
	{ "check", no_argument, NULL, O_CHECK },
	{ "check-max", required_argument, NULL, O_CHECK_MAX },
	{ "csv", no_argument, NULL, O_CSV },
	{ "json", no_argument, NULL, O_JSON },
	{ "help", no_argument, NULL, 'h' },
	{ NULL, 0, NULL, 0 },
};

static void parse(int argc, char **argv, struct opts *o)
{
	static const char *const models[] = { "equal", "racks", "random" };
	static const char *const modes[] = { "relay", "direct", "transport-ack" };
	static const char *const profiles[] = { "vm" };
	int c;

	sim_net_default(&o->net);
	parse_algos("triad,greedy,binomial,pipelined,refs", &o->algos);
	parse_list("--ranks", "8..4096", false, 1, 1u << 20, &o->ranks);
	parse_list("--size", "1K..64M", true, 0, 1ull << 40, &o->sizes);
	parse_list("--planes", "1,2,4", false, 1, 8, &o->planes);
	o->check_max = 16ull << 30;
	/* --profile first, so that the other options can change its values. */
	for (int i = 1; i < argc - 1; i++)
		if (!strcmp(argv[i], "--profile") &&
		    pick("--profile", argv[i + 1], profiles, 1) == 0)
			profile_vm(&o->net);
	while ((c = getopt_long(argc, argv, "a:n:s:h", longopts, NULL)) != -1) {
		switch (c) {
		case 'a': parse_algos(optarg, &o->algos); break;
		case 'n':
			parse_list("--ranks", optarg, false, 1, 1u << 20, &o->ranks);
			o->ranks_given = true;
			break;
		case 's':
			parse_list("--size", optarg, true, 0, 1ull << 40, &o->sizes);
			o->sizes_given = true;
			break;
		case O_ROOT: o->root = (uint32_t)parse_uint("--root", optarg, 0, 1u << 20); break;
		case O_LAT: o->net.lat_us = parse_num("--lat", optarg); break;
		case O_LAT_MODEL:
			o->net.lat_model = (enum sim_lat_model)pick("--lat-model", optarg, models, 3);
			o->model_given = true;
			break;
		case O_LAT_SPREAD:
			o->net.lat_spread = parse_num("--lat-spread", optarg);
			if (o->net.lat_spread < 1)
				bad("%s: '%s' must be >= 1", "--lat-spread", optarg);
			o->spread_given = true;
			break;
		case O_RACK: o->net.rack_size = (uint32_t)parse_uint("--rack-size", optarg, 1, 1u << 20); break;
		case O_SEED: o->net.seed = parse_uint("--seed", optarg, 0, UINT64_MAX); break;
		case O_OVERHEAD: o->net.o_us = parse_num("--overhead", optarg); break;
		case O_GAP: o->net.gap_us = parse_num("--gap", optarg); break;
		case O_BW: o->net.bw = parse_num("--bw", optarg); break;
		case O_WAKE: o->net.wake_us = parse_num("--wake", optarg); break;
		case O_SPIN: o->net.spin_us = parse_num("--spin", optarg); break;
		case O_ROOT_SPIN: o->net.root_spin_us = parse_num("--root-spin", optarg); break;
		case O_COPY_CHUNK:
			o->net.copy_chunk = parse_size("--copy-chunk", optarg);
			if (o->net.copy_chunk < 4096 || o->net.copy_chunk > (1ull << 30))
				bad("%s: '%s' must lie in 4k..1G (TRIAD_CHUNK_SIZE's range)",
				    "--copy-chunk", optarg);
			break;
		case O_MODE: o->net.mode = (enum tr_copy_mode)pick("--mode", optarg, modes, 3); break;
		case O_PIPE_CHUNK:
			o->pipe_chunk = parse_size("--pipe-chunk", optarg);
			if (!o->pipe_chunk)
				bad("%s: '%s' must be >= 1", "--pipe-chunk", optarg);
			break;
		case O_FANOUT: o->fanout = (uint32_t)parse_uint("--fanout", optarg, 0, 1u << 20); break;
		case O_WINDOW:
			o->window = (uint32_t)parse_uint("--window", optarg, 1, TR_BCAST_MAX_WINDOW);
			break;
		case O_INLINE: o->inline_max = parse_size("--inline", optarg); break;
		case O_MAX_KIDS:
			o->max_kids = (uint32_t)parse_uint("--max-kids", optarg, 1, TR_BNODE_MAX_KIDS);
			break;
		case O_PROFILE: break; /* applied above */
		case O_MEMORY: o->memory = true; break;
		case O_CHECK: o->check = true; break;
		case O_CHECK_MAX: o->check_max = parse_size("--check-max", optarg); break;
		case O_PLANES: parse_list("--planes", optarg, false, 1, 8, &o->planes); break;
		case O_CSV: o->fmt = FMT_CSV; break;
		case O_JSON: o->fmt = FMT_JSON; break;
		case 'h': usage(stdout); exit(0);
		default: usage(stderr); exit(2);
		}
	}
	if (optind < argc)
		bad("%s: unexpected argument '%s'", "", argv[optind]);
	if (o->check && o->memory)
		bad("%s: '%s' is not for --memory", "--check", "--check");
	if (o->check && !o->ranks_given)
		parse_list("--ranks", "8..4096,16384", false, 1, 1u << 20, &o->ranks);
	if (o->check && !o->sizes_given)
		parse_list("--size", "8..64M", true, 0, 1ull << 40, &o->sizes);
	if (o->net.lat_model != SIM_LAT_EQUAL && !o->spread_given && !o->check)
		bad("%s: '%s' needs --lat-spread K", "--lat-model", models[o->net.lat_model]);
	for (unsigned i = 0; i < o->ranks.n; i++)
		if (o->root >= o->ranks.v[i]) {
			char n[32];

			snprintf(n, sizeof(n), "%" PRIu64, o->ranks.v[i]);
			bad("--root must be below every rank count (%s: %s)", "-n", n);
		}
}

/* ---- broadcasts ------------------------------------------------------------------ */

static void size_str(uint64_t v, char *buf, size_t len)
{
	static const char *const unit[] = { "", "K", "M", "G", "T" };
	unsigned u = 0;

	while (v >= 1024 && v % 1024 == 0 && u < 4) {
		v /= 1024;
		u++;
	}
	snprintf(buf, len, "%" PRIu64 "%s", v, unit[u]);
}

/* One row: a simulated broadcast, or a reference model (res->t_done =
 * res->t_all = its time, no events). */
static int run_one(const struct opts *o, uint32_t n, uint64_t len, uint64_t algo,
		   struct sim_result *res)
{
	struct sim_bcast_cfg cfg = { .nranks = n, .root = o->root, .len = len,
				     .chunk = o->pipe_chunk, .fanout = o->fanout,
				     .window = o->window, .inline_max = o->inline_max,
				     .max_kids = o->max_kids };
	char err[256];
	int ret;

	if (algo >= A_REF) {
		double t = sim_ref_time(&o->net, (enum sim_ref)(algo - A_REF), n, o->root, len,
					&res->chunk);

		*res = (struct sim_result){ .t_done = t, .t_all = t, .chunk = res->chunk };
		if (t < 0)
			fprintf(stderr, "%s: %s, N %u: no memory\n", prog, algo_name(algo), n);
		return t < 0 ? -ENOMEM : 0;
	}
	if (algo >= A_DELEG) {
		cfg.deleg = true;
		cfg.shape = (enum tr_bnode_shape)(algo - A_DELEG);
		if (cfg.shape == TR_BNODE_TREE)
			cfg.chunk = 0;
	} else {
		cfg.algo = (enum tr_bcast_algo)algo;
	}
	ret = sim_bcast(&o->net, &cfg, NULL, NULL, res, err, sizeof(err));
	if (ret)
		fprintf(stderr, "%s: %s, N %u, %" PRIu64 " B: %s\n", prog, algo_name(algo), n, len,
			err);
	return ret;
}

/* The least time of the reference models for n ranks and len bytes (-1:
 * none applies); *which (may be NULL) gets its model. */
static double best_ref(const struct sim_net *net, uint32_t n, uint32_t root, uint64_t len,
		       enum sim_ref *which)
{
	double best = -1;

	if (which)
		*which = SIM_REF_BINOMIAL;
	for (unsigned m = 0; m < SIM_REF_N; m++) {
		double t = sim_ref_time(net, (enum sim_ref)m, n, root, len, NULL);

		if (t >= 0 && (best < 0 || t < best)) {
			best = t;
			if (which)
				*which = (enum sim_ref)m;
		}
	}
	return best;
}

static int run_bcasts(const struct opts *o)
{
	bool first = true;
	int status = 0;

	if (o->fmt == FMT_TABLE)
		printf("%-6s %6s %-13s %11s %11s %7s %11s %8s %7s %7s %6s %6s %7s\n", "size", "N",
		       "algo", "time[us]", "lower[us]", "ratio", "all[us]", "vs-best", "root-ev",
		       "max-ev", "root", "peers", "mean");
	else if (o->fmt == FMT_CSV)
		printf("size,n,algo,time_us,lower_us,ratio,all_us,copies,puts,msgs,writes,"
		       "root_peers,max_peers,avg_peers,events,root_events,max_events,best_ref_us,"
		       "vs_best,shape,chunk\n");
	else
		printf("[");
	for (unsigned si = 0; si < o->sizes.n; si++) {
		for (unsigned ni = 0; ni < o->ranks.n; ni++) {
			uint64_t len = o->sizes.v[si];
			uint32_t n = (uint32_t)o->ranks.v[ni];
			double lb = sim_lower_bound(&o->net, n, len);
			/* The best of the reference models, whether printed or not. */
			double best = best_ref(&o->net, n, o->root, len, NULL);
			for (unsigned ai = 0; ai < o->algos.n; ai++) {
				uint64_t a = o->algos.v[ai];
				bool ref = a >= A_REF, deleg = !ref && a >= A_DELEG;
				struct sim_result r;
				double ratio, vs;
				char sz[32], algo[40], rev[24] = "-", mev[24] = "-";

				if (run_one(o, n, len, a, &r)) {
					status = 1;
					continue;
				}
				ratio = lb > 0 ? r.t_all / lb : 0;
				vs = best > 0 ? r.t_all / best : 0;
				size_str(len, sz, sizeof(sz));
				if (a == A_DELEG)
					snprintf(algo, sizeof(algo), "triad:%s",
						 tr_bnode_shape_str(r.shape));
				else if (deleg || ref)
					snprintf(algo, sizeof(algo), "%s", algo_name(a));
				else
					snprintf(algo, sizeof(algo), "%s", algo_name(r.algo));
				if (!ref) {
					snprintf(rev, sizeof(rev), "%" PRIu64, r.root_events);
					snprintf(mev, sizeof(mev), "%" PRIu64, r.max_events);
				}
				if (o->fmt == FMT_TABLE)
					printf("%-6s %6u %-13s %11.1f %11.1f %7.2f %11.1f %8.2f %7s %7s "
					       "%6u %6u %7.2f\n",
					       sz, n, algo, r.t_done, lb, ratio, r.t_all, vs, rev, mev,
					       r.root_peers, r.max_peers, r.avg_peers);
				else if (o->fmt == FMT_CSV)
					printf("%" PRIu64 ",%u,%s,%.3f,%.3f,%.4f,%.3f,%" PRIu64 ",%" PRIu64
					       ",%" PRIu64 ",%" PRIu64 ",%u,%u,%.3f,%" PRIu64 ",%" PRIu64
					       ",%" PRIu64 ",%.3f,%.4f,%s,%" PRIu64 "\n",
					       len, n, algo, r.t_done, lb, ratio, r.t_all, r.copies, r.puts,
					       r.msgs, r.writes, r.root_peers, r.max_peers, r.avg_peers,
					       r.events, r.root_events, r.max_events, best, vs,
					       deleg ? tr_bnode_shape_str(r.shape) : "", r.chunk);
				else
					printf("%s\n {\"size\": %" PRIu64 ", \"n\": %u, \"algo\": \"%s\", "
					       "\"time_us\": %.3f, \"lower_us\": %.3f, \"ratio\": %.4f, "
					       "\"all_us\": %.3f, \"copies\": %" PRIu64 ", \"puts\": %" PRIu64
					       ", \"msgs\": %" PRIu64 ", \"writes\": %" PRIu64
					       ", \"root_peers\": %u, \"max_peers\": %u, \"avg_peers\": %.3f"
					       ", \"root_events\": %" PRIu64 ", \"max_events\": %" PRIu64
					       ", \"best_ref_us\": %.3f, \"vs_best\": %.4f}",
					       first ? "" : ",", len, n, algo, r.t_done, lb, ratio, r.t_all,
					       r.copies, r.puts, r.msgs, r.writes, r.root_peers, r.max_peers,
					       r.avg_peers, r.root_events, r.max_events, best, vs);
				first = false;
			}
		}
	}
	if (o->fmt == FMT_JSON)
		printf("\n]\n");
	return status;
}

/* ---- issue 37's targets (--check) -------------------------------------------- */

#define CHECK_BIG (16ull << 20) /* from here all[us] within CHECK_BOUND x the bound */
#define CHECK_BOUND 1.3
#define CHECK_BASE_N 64u	  /* the root's events at most twice this N's */
#define CHECK_ROOT_EV 64u	  /* ... and at 8 B, N <= CHECK_ROOT_N, at most this many */
#define CHECK_ROOT_N 4096u

struct worst {
	double v;
	uint64_t len;
	uint32_t n;
};

static void worst_add(struct worst *w, double v, uint64_t len, uint32_t n)
{
	if (v > w->v)
		*w = (struct worst){ .v = v, .len = len, .n = n };
}

static void worst_print(const char *what, const struct worst *w)
{
	char sz[32];

	size_str(w->len, sz, sizeof(sz));
	if (w->v > 0)
		printf("; %s %.3f (%s, N %u)", what, w->v, sz, w->n);
}

/* The grid under one network: every point where triad's delegated
 * broadcast (AUTO) misses a target, and a summary line.  Returns how many
 * missed, or -1 if a simulation failed. */
static int check_net(const struct opts *o, const struct sim_net *net, const char *label)
{
	struct opts oo = *o;
	struct worst wbest = { 0 }, wbound = { 0 }, wroot = { 0 };
	unsigned run = 0, skipped = 0, missed = 0;
	bool failed = false;

	oo.net = *net;
	printf("# %s\n%-5s %6s %-8s %9s %9s %-13s %7s %9s %8s %7s %6s  %s\n", label, "size", "N",
	       "shape", "all[us]", "best[us]", "best", "vs-best", "bound[us]", "vs-bound",
	       "root-ev", "at-64", "missed");
	for (unsigned si = 0; si < o->sizes.n; si++) {
		uint64_t len = o->sizes.v[si];
		struct sim_result base;
		bool have_base = o->root < CHECK_BASE_N &&
				 !run_one(&oo, CHECK_BASE_N, len, A_DELEG, &base);

		if (o->root < CHECK_BASE_N && !have_base)
			failed = true;
		for (unsigned ni = 0; ni < o->ranks.n; ni++) {
			uint32_t n = (uint32_t)o->ranks.v[ni];
			double lb = sim_lower_bound(net, n, len), best, vs, vb;
			enum sim_ref bref;
			struct sim_result r;
			char sz[32], at64[24], why[64] = "";

			if (o->check_max && (double)n * (double)len > (double)o->check_max) {
				skipped++;
				continue;
			}
			if (n == CHECK_BASE_N && have_base) {
				r = base;
			} else if (run_one(&oo, n, len, A_DELEG, &r)) {
				failed = true;
				continue;
			}
			run++;
			best = best_ref(net, n, o->root, len, &bref);
			vs = best > 0 ? r.t_all / best : 0;
			vb = lb > 0 ? r.t_all / lb : 0;
			worst_add(&wbest, vs, len, n);
			if (len >= CHECK_BIG)
				worst_add(&wbound, vb, len, n);
			if (best > 0 && r.t_all > best)
				strcat(why, " best");
			if (len >= CHECK_BIG && vb > CHECK_BOUND)
				strcat(why, " bound");
			if (len == 8 && n <= CHECK_ROOT_N && r.root_events > CHECK_ROOT_EV)
				strcat(why, " root-64");
			if (have_base) {
				worst_add(&wroot, (double)r.root_events / (double)base.root_events, len, n);
				if (r.root_events > 2 * base.root_events)
					strcat(why, " root-2x");
			}
			if (!why[0])
				continue;
			missed++;
			size_str(len, sz, sizeof(sz));
			snprintf(at64, sizeof(at64), have_base ? "%" PRIu64 : "-",
				 have_base ? base.root_events : 0);
			printf("%-5s %6u %-8s %9.1f %9.1f %-13s %7.3f %9.1f %8.3f %7" PRIu64 " %6s  %s\n",
			       sz, n, tr_bnode_shape_str(r.shape), r.t_all, best, sim_ref_str(bref), vs,
			       lb, vb, r.root_events, at64, why + 1);
		}
	}
	printf("# %s: %u points, %u skipped (N x S above --check-max), %u missed", label, run,
	       skipped, missed);
	worst_print("worst vs-best", &wbest);
	worst_print("worst vs-bound from 16M", &wbound);
	worst_print("worst root-ev / N 64's", &wroot);
	printf("\n");
	return failed ? -1 : (int)missed;
}

/* --check: the grid under the network given, or under each latency model
 * (racks and random with a spread of 10 unless one was given). */
static int run_check(const struct opts *o)
{
	int status = 0;

	setvbuf(stdout, NULL, _IOLBF, 0); /* each point as it is found */
	for (unsigned m = 0; m < SIM_LAT_NMODELS; m++) {
		struct sim_net net = o->net;
		char label[160];
		int ret;

		if (o->model_given && m != (unsigned)o->net.lat_model)
			continue;
		net.lat_model = (enum sim_lat_model)m;
		if (!o->spread_given)
			net.lat_spread = m == SIM_LAT_EQUAL ? 1 : 10;
		if (m == SIM_LAT_EQUAL)
			snprintf(label, sizeof(label), "equal: every link L %g us", net.lat_us);
		else if (m == SIM_LAT_RACKS)
			snprintf(label, sizeof(label), "racks: L %g us inside racks of %u, %g x L across",
				 net.lat_us, net.rack_size, net.lat_spread);
		else
			snprintf(label, sizeof(label), "random: each link in [L, %g x L], L %g us, seed %"
				 PRIu64, net.lat_spread, net.lat_us, net.seed);
		ret = check_net(o, &net, label);
		if (ret < 0)
			return 1;
		if (ret > 0)
			status = 1;
	}
	return status;
}

/* ---- memory and QPs ------------------------------------------------------------ */

/* Bytes per completion-queue entry and per work-queue entry: the
 * provider's, not ours (mlx5: 64 B CQEs; a send WQE with one SGE and 64 B
 * inline about 128 B, a receive WQE 16-32 B). */
#define CQE_BYTES 64
#define SWQE_BYTES 128
#define RWQE_BYTES 32

struct mem {
	uint64_t qps, cqe, reg, wq, host;
};

/* What a process holds with lanes to `peers` peers on p planes, in a
 * world of n ranks (lib/core/lane.c setup_msgs, ctx.c open_fabric). */
static struct mem mem_of(const struct tr_config *c, uint64_t n, uint64_t peers, uint64_t p)
{
	uint64_t nrx = (uint64_t)c->slots + 3; /* TR_LANE_EXTRA_BUFS */
	uint64_t ntx = (uint64_t)c->slots + 3 < (uint64_t)c->sq_depth / 2 ? (uint64_t)c->slots + 3
									 : (uint64_t)c->sq_depth / 2;
	uint64_t lanes = peers * p;
	/* Two CQs per plane, each for every lane's send queue and receive buffers. */
	uint64_t cqe = ((uint64_t)c->sq_depth + nrx) * (peers ? peers : 1) + 64;
	struct mem m = {
		.qps = lanes,
		.cqe = 2 * p * cqe,
		.reg = lanes * (nrx + ntx) * c->slot_size,
		.wq = lanes * ((uint64_t)c->sq_depth * SWQE_BYTES + nrx * RWQE_BYTES),
		/* a struct tr_peer per rank (lanes inline), the copy tables, a
		 * broadcast root's per-rank state */
		.host = n * (TRIAD_SIM_PEER_SIZE + 4) +
			(uint64_t)c->copy_ops * (sizeof(struct tr_copy_iop) + sizeof(struct tr_copy_sop)) +
			n * (sizeof(struct tr_bcast_rank) + sizeof(struct tr_bcast_act)),
	};
	return m;
}

static void mib(uint64_t bytes, char *buf, size_t len)
{
	snprintf(buf, len, "%.1f", (double)bytes / (1024.0 * 1024.0));
}

static int run_memory(const struct opts *o)
{
	struct tr_config cfg;
	char err[300];
	int status = 0;

	if (tr_config_load(&cfg, tr_config_getenv, NULL, err, sizeof(err))) {
		fprintf(stderr, "%s: %s\n", prog, err);
		return 2;
	}
	if (o->fmt == FMT_TABLE) {
		printf("# TRIAD_SLOTS=%d TRIAD_SLOT_SIZE=%" PRIu64 " TRIAD_SQ_DEPTH=%d "
		       "TRIAD_COPY_OPS=%d; MiB per process; on demand: peers of a %s broadcast of %"
		       PRIu64 " B\n", cfg.slots, cfg.slot_size, cfg.sq_depth, cfg.copy_ops,
		       algo_name(o->algos.v[0]), o->sizes.v[0]);
		printf("%6s %2s %7s %9s %9s %9s %9s %9s | %5s %7s %9s %9s\n", "N", "P", "QPs",
		       "reg[MiB]", "cq[MiB]", "wq[MiB]", "host[MiB]", "total", "peers", "QPs",
		       "reg[MiB]", "total");
	} else if (o->fmt == FMT_CSV) {
		printf("n,planes,qps,reg_bytes,cq_bytes,wq_bytes,host_bytes,total_bytes,"
		       "demand_peers,demand_qps,demand_reg_bytes,demand_total_bytes\n");
	} else {
		printf("[");
	}
	for (unsigned ni = 0; ni < o->ranks.n; ni++) {
		uint64_t n = o->ranks.v[ni];
		struct sim_result r;
		uint64_t peers;

		/* On demand, the busiest non-root's peers (the root's are all N - 1). */
		if (run_one(o, (uint32_t)n, o->sizes.v[0], o->algos.v[0], &r)) {
			status = 1;
			continue;
		}
		peers = r.max_peers;
		for (unsigned pi = 0; pi < o->planes.n; pi++) {
			uint64_t p = o->planes.v[pi];
			struct mem f = mem_of(&cfg, n, n - 1, p), d = mem_of(&cfg, n, peers, p);
			uint64_t ft = f.reg + f.cqe * CQE_BYTES + f.wq + f.host;
			uint64_t dt = d.reg + d.cqe * CQE_BYTES + d.wq + d.host;
			char a[32], b[32], c[32], e[32], g[32], h[32], k[32];

			mib(f.reg, a, sizeof(a));
			mib(f.cqe * CQE_BYTES, b, sizeof(b));
			mib(f.wq, c, sizeof(c));
			mib(f.host, e, sizeof(e));
			mib(ft, g, sizeof(g));
			mib(d.reg, h, sizeof(h));
			mib(dt, k, sizeof(k));
			if (o->fmt == FMT_TABLE)
				printf("%6" PRIu64 " %2" PRIu64 " %7" PRIu64 " %9s %9s %9s %9s %9s | %5"
				       PRIu64 " %7" PRIu64 " %9s %9s\n", n, p, f.qps, a, b, c, e, g,
				       peers, d.qps, h, k);
			else if (o->fmt == FMT_CSV)
				printf("%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",%"
				       PRIu64 ",%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",%" PRIu64
				       ",%" PRIu64 "\n", n, p, f.qps, f.reg, f.cqe * CQE_BYTES, f.wq,
				       f.host, ft, peers, d.qps, d.reg, dt);
			else
				printf("%s\n {\"n\": %" PRIu64 ", \"planes\": %" PRIu64 ", \"qps\": %"
				       PRIu64 ", \"reg_bytes\": %" PRIu64 ", \"cq_bytes\": %" PRIu64
				       ", \"wq_bytes\": %" PRIu64 ", \"host_bytes\": %" PRIu64
				       ", \"total_bytes\": %" PRIu64 ", \"demand_peers\": %" PRIu64
				       ", \"demand_qps\": %" PRIu64 ", \"demand_reg_bytes\": %" PRIu64
				       ", \"demand_total_bytes\": %" PRIu64 "}",
				       ni == 0 && pi == 0 ? "" : ",", n, p, f.qps, f.reg, f.cqe * CQE_BYTES, f.wq,
				       f.host, ft, peers, d.qps, d.reg, dt);
		}
	}
	if (o->fmt == FMT_JSON)
		printf("\n]\n");
	return status;
}

int main(int argc, char **argv)
{
	struct opts o = { 0 };

	parse(argc, argv, &o);
	if (o.check)
		return run_check(&o);
	return o.memory ? run_memory(&o) : run_bcasts(&o);
}
