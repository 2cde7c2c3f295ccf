/* triad-perf: ib_write_lat / ib_read_lat / ib_write_bw and active-message
 * ping-pong and streaming, on the public triad API only.  Shared between the
 * command line (triad_perf.c), the one-sided tests (perf_tests.c), the
 * active-message tests (perf_am.c) and the statistics (perf_stats.c). */
#ifndef TRIAD_PERF_H
#define TRIAD_PERF_H

#include <stddef.h>
#include <stdint.h>

#include "triad.h"

#define PERF_WIN_ID 1u
#define PERF_CLIENT 0 /* the rank that measures and reports */
#define PERF_SERVER 1 /* its peer */

/* Exit statuses. */
enum { PERF_EXIT_OK = 0, PERF_EXIT_FAIL = 1, PERF_EXIT_USAGE = 2 };

enum perf_kind { PERF_LAT, PERF_BW };

struct perf_run;
struct perf_am;
struct perf_fault;
/* Runs one size; every rank calls it (ranks other than the client and the
 * server only take part in the barriers).  0, or a negative errno after
 * printing why. */
typedef int (*perf_test_fn)(struct perf_run *r, size_t size, long iters, long warmup);

/* perf_cmd.flags */
enum {
	/* Active messages: sizes up to triad_am_max_size(), --prio applies,
	 * --plane does not (the library picks the plane of a message). */
	PERF_CMD_AM = 1u << 0,
	/* bcast: every rank takes part; --algo and --root apply. */
	PERF_CMD_BCAST = 1u << 1,
	/* copy_*: three ranks (PERF_COPY_*); --mode applies, --plane does
	 * not (triad_copy takes no plane). */
	PERF_CMD_COPY = 1u << 2,
	/* mp_bw: --planes applies; the plane of every put is the test's. */
	PERF_CMD_MP = 1u << 3,
	/* failover, drain: a timed stream, not sizes (-a, -n, -w do not
	 * apply); --fault-at, --up-after apply, and for failover --fault and
	 * --fault-node; the library picks the planes (no --plane). */
	PERF_CMD_FAULT = 1u << 4,
	/* overlap: --compute applies (and, with PERF_CMD_BCAST, --algo
	 * and --root). */
	PERF_CMD_OVERLAP = 1u << 5,
	/* init: times triad_init itself and the first put (perf_init.c);
	 * only -n and --timeout apply. */
	PERF_CMD_INIT = 1u << 6,
	/* put_mbw: --pairs applies (ranks 0..P-1 each stream to rank i + P). */
	PERF_CMD_PAIRS = 1u << 7,
};

struct perf_cmd {
	const char *name;
	perf_test_fn run;
	enum perf_kind kind;
	size_t def_size;
	unsigned flags;
	const char *summary;
};

/* --json, --csv, --format osu, or the table (perf_out.c). */
enum perf_format { PERF_FMT_TABLE, PERF_FMT_CSV, PERF_FMT_JSON, PERF_FMT_OSU };

/* --format osu: the OSU micro-benchmark (MPI, v7.x) whose output a test's
 * rows take, so that the parsers and plots made for it read them: its
 * "# OSU ... Test v7.x" line, its column header, then per size one
 * "%-10d%20.2f" row (osu_util.h's FIELD_WIDTH 20, FLOAT_PRECISION 2). */
#define PERF_OSU_VERSION "7.4"
struct perf_osu {
	const char *test;   /* triad-perf's command */
	const char *bench;  /* OSU's program, e.g. "osu_latency" */
	const char *title;  /* its BENCHMARK line, e.g. "OSU MPI Latency Test" */
	const char *column; /* its column: "Latency (us)", "Bandwidth (MB/s)", ... */
	const char *key;    /* the row's field that goes in the column */
	double scale;	    /* multiplies it (MiB/s to OSU's MB/s, 10^6 B/s) */
	/* A second column (osu_mbw_mr's "Messages/s"), or NULL; with it, the
	 * "# [ pairs: P ] [ window size: W ]" line of osu_mbw_mr. */
	const char *column2, *key2;
	double scale2;
};
/* The OSU counterpart of test, or NULL when it has none. */
const struct perf_osu *perf_osu_find(const char *test);

struct perf_opts {
	const struct perf_cmd *cmd; /* NULL: nothing to run (--config alone) */
	size_t size;		    /* 0: the command's default */
	int all;		    /* -a: sweep 2 B .. 8 MiB */
	long iters;		    /* 0: default, scaled by size */
	long warmup;		    /* < 0: default */
	int window;		    /* put_bw, am_bw: operations outstanding */
	int plane;		    /* < 0: the library chooses */
	enum triad_prio prio;	    /* am_*: priority of the measured messages */
	int slots;		    /* > 0: TRIAD_SLOTS to set before triad_init */
	enum perf_format format;
	const char *plot_file;	    /* --plot FILE.png, or NULL */
	int quiet;		    /* -q: no progress lines on stderr */
	int config;
	int timeout_s;		    /* bound on every single wait */
	int algo;		    /* bcast: enum triad_bcast_algo */
	int root;		    /* bcast: the root rank */
	unsigned copy_mode;	    /* copy_*: enum triad_copy_flags */
	int serve_poll;		    /* copy_*: ranks 1 and 2 poll triad_progress */
	int no_req;		    /* put_lat, put_bw: request-less puts and flushes */
	int planes;		    /* mp_bw: up to this many planes (0: all) */
	int fault_cut;		    /* failover: cut/heal, else down/up */
	int fault_node;		    /* failover: whose port */
	int fault_at_ms;	    /* failover, drain: when, from the stream's start */
	int up_after_ms;	    /* failover, drain: how long the plane stays away */
	long compute_us;	    /* overlap: the non-roots' compute per broadcast */
	int pairs;		    /* put_mbw: sender/receiver pairs (0: all ranks / 2) */
	double duration_s;	    /* > 0: each size runs this long, not --iters times */
};

struct perf_run {
	const struct perf_opts *o;
	triad_ctx_t *ctx;
	int rank;
	unsigned flags;	  /* TRIAD_F_PLANE(plane) or 0 */
	int timeout_ms;
	/* One window: [0, area) receives, [area, 2 * area) sends. */
	uint8_t *buf;
	size_t area;
	triad_win_t *win;
	size_t size_limit; /* the command's largest size (am_*: triad_am_max_size) */
	int header_done;  /* the table header was printed */
	int stop_registered; /* copy_* --serve poll: the stop handler is in */
	volatile int stop;   /* copy_* --serve poll: rank 0 said the phase is over */
	long verify_errors;
	struct perf_am *am; /* am_*: state shared with the handlers (perf_am.c) */
	struct perf_fault *fault; /* failover, drain: the same (perf_fault.c) */
	struct perf_out *out;	  /* --plot: the rows kept (perf_out.c) */
	int npairs;	  /* put_mbw: the pairs that stream (--pairs, resolved) */
	int silent;	  /* --duration's probe runs: no row is printed or kept */
	/* The page after [receive | send] in the window: --duration's
	 * iteration count, handed from the reporter to every rank. */
	uint8_t *ctl;
};

/* perf_out.c: one row of figures, as the table, CSV or JSON.  Every field
 * goes to CSV and JSON under its key; those with a head also make a table
 * column of that width. */
enum perf_field_type { PERF_F_INT, PERF_F_DBL, PERF_F_STR, PERF_F_BOOL, PERF_F_NULL, PERF_F_RAW };
struct perf_field {
	const char *key;  /* JSON key, CSV column */
	const char *head; /* table column header; NULL: not in the table */
	int width, prec;  /* table width; decimals of a double */
	enum perf_field_type type;
	union {
		long long i;
		double d;
		const char *s; /* a string, or (RAW) JSON text */
	} v;
};
#define PF_INT(k, h, w, x) { (k), (h), (w), 0, PERF_F_INT, { .i = (long long)(x) } }
#define PF_DBL(k, h, w, p, x) { (k), (h), (w), (p), PERF_F_DBL, { .d = (double)(x) } }
#define PF_STR(k, h, w, x) { (k), (h), (w), 0, PERF_F_STR, { .s = (x) } }
#define PF_BOOL(k, x) { (k), NULL, 0, 0, PERF_F_BOOL, { .i = !!(x) } }
#define PF_NULL(k) { (k), NULL, 0, 0, PERF_F_NULL, { .i = 0 } }
#define PF_RAW(k, json) { (k), NULL, 0, 0, PERF_F_RAW, { .s = (json) } }
#define PF_N(a) (sizeof(a) / sizeof((a)[0]))

/* What --plot draws from the rows: y[] (up to 3 keys) over x on a log2
 * axis (a size sweep; logy: y on a log axis too), or with timeline the
 * rows as named events on a time axis (x, label). */
struct perf_plot {
	const char *title, *xlabel, *ylabel;
	const char *x, *y[3], *ytitle[3];
	const char *label;
	int timeline, logy;
};

/* The title (table only) is printed with the header before the first row. */
void perf_out_row(struct perf_run *r, const char *title, const struct perf_field *f, size_t n,
		  const struct perf_plot *plot);
/* Keeps a row for --plot without printing it (perf_out_row keeps what it
 * prints). */
void perf_out_keep(struct perf_run *r, const struct perf_plot *plot, const struct perf_field *f,
		   size_t n);
/* --plot: runs gnuplot on the rows kept; 0, or a negative errno after
 * saying why. */
int perf_out_finish(struct perf_run *r);
/* "triad-perf: ..." on stderr, unless -q. */
void perf_progress(const struct perf_run *r, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/* perf_init.c: the whole run of the init command (it times triad_init). */
int perf_init_run(const struct perf_opts *o);

/* perf_tests.c */
extern const struct perf_cmd perf_cmds[];
extern const size_t perf_ncmds;
/* Defaults that depend on the size (documented in --help). */
long perf_default_iters(enum perf_kind kind, size_t size);
long perf_default_warmup(long iters);

/* perf_stats.c: summaries of one size's samples. */
struct perf_lat {
	double min, max, typical, avg, stdev, p99, p999; /* usec */
};
/* Sorts ns[] in place; scale multiplies every sample (0.5: half round
 * trip). */
void perf_lat_summarize(uint64_t *ns, size_t n, double scale, struct perf_lat *out);

struct perf_bw {
	double peak_mib_s, avg_mib_s, mpps;
};
/* tpost[i], tcomp[i]: when operation i was posted and seen complete (ns). */
void perf_bw_summarize(const uint64_t *tpost, const uint64_t *tcomp, size_t n, size_t size,
		       struct perf_bw *out);

/* Helpers shared by the tests (perf_tests.c). */
uint64_t perf_now_ns(void);
/* "triad-perf: rank R: WHAT: strerror(-ret)" on stderr. */
void perf_err(const struct perf_run *r, const char *what, int ret);
/* Byte i of the data pattern of a size-byte message (the same on every rank). */
uint8_t perf_pattern(size_t i, size_t size);
/* What iteration i writes into the last byte: never 0, never twice in a row. */
uint8_t perf_iter_value(long i);
uint8_t *perf_recv_area(struct perf_run *r);
uint8_t *perf_send_area(struct perf_run *r);
/* Zeroes the receive area and fills the send area with the pattern. */
void perf_prepare(struct perf_run *r, size_t size);
/* Counts (in r->verify_errors) and reports a receive area whose bytes
 * [0, n) differ from the pattern of a size-byte message. */
void perf_verify(struct perf_run *r, size_t n, size_t size, const char *test);
/* How long a rank may wait while the others run ops operations. */
int perf_phase_timeout_ms(const struct perf_run *r, size_t size, long ops, int transfers);
/* triad_barrier, with the error reported. */
int perf_barrier(struct perf_run *r, int timeout_ms, const char *where);
/* Checks a completed request's status and frees it. */
int perf_finish_req(struct perf_run *r, triad_req_t *req, const char *what);
/* A non-root's figures, len bytes already in its send area, into the root's
 * receive area at slot = rank (the root gathers them there); 0 at the root. */
int perf_share_with_root(struct perf_run *r, size_t len);

/* A stream of n requests with at most --window outstanding, reaped in
 * order (like ib_write_bw): post makes request i, finish (NULL: check the
 * status and free) takes a completed one.  tpost/tcomp (may be NULL) get
 * each one's post and completion time.  On an error, what is outstanding
 * completes before it returns. */
struct perf_stream_ops {
	const char *what;
	int (*post)(struct perf_run *r, size_t size, long i, triad_req_t **req_p, void *arg);
	int (*finish)(struct perf_run *r, triad_req_t *req, void *arg);
	void *arg;
};
int perf_stream(struct perf_run *r, size_t size, long n, triad_req_t **ring, uint64_t *tpost,
		uint64_t *tcomp, const struct perf_stream_ops *ops);
/* What a bandwidth test's measuring rank streams with: the ring of
 * --window requests, and iters post and completion times. */
struct perf_bufs {
	triad_req_t **ring;
	uint64_t *tpost, *tcomp;
};
/* 0, or -ENOMEM reported as what's error (nothing left allocated). */
int perf_bufs_alloc(struct perf_run *r, struct perf_bufs *b, long iters, const char *what);
void perf_bufs_free(struct perf_bufs *b);
/* Aggregate figures of ops operations of size bytes in ns (no peak: -1). */
void perf_aggregate_bw(size_t size, long ops, uint64_t ns, struct perf_bw *bw);
/* A bandwidth row: window, bw_peak_mib_s (omitted when peak < 0),
 * bw_avg_mib_s, msg_rate_mpps, then extra; the title says who streams what
 * ("rank 0 -> rank 1", "puts"). */
void perf_report_bw(struct perf_run *r, const char *test, const char *who, const char *ops,
		    size_t size, long iters, long warmup, const struct perf_bw *b,
		    const struct perf_field *extra, size_t nextra);
void perf_print_rule(void);
/* "high", "medium", "low". */
const char *perf_prio_str(enum triad_prio prio);
/* A latency row; extra (may be NULL) adds the test's own fields, title
 * (NULL: "triad TEST: rank 0 -> rank 1, ...") heads the table. */
void perf_report_lat(struct perf_run *r, const char *test, const char *meaning,
		     const char *title, size_t size, long iters, long warmup,
		     const struct perf_lat *l, const struct perf_field *extra, size_t nextra);
/* The fields every row starts with: test, bytes, iterations, warmup, plane
 * (null: the library's choice), for messages prio and slots, ranks.
 * Returns how many it wrote into f (at most PERF_COMMON_FIELDS). */
#define PERF_COMMON_FIELDS 8
size_t perf_common_fields(const struct perf_run *r, const char *test, size_t size, long iters,
			  long warmup, struct perf_field *f);
/* Copies n fields after *len fields of f (of room cap). */
void perf_fields_add(struct perf_field *f, size_t *len, size_t cap, const struct perf_field *add,
		     size_t n);
/* The table header's description of the path ("plane 0", ...). */
void perf_describe_path(const struct perf_run *r, char *buf, size_t len);

/* perf_am.c */
int perf_am_setup(struct perf_run *r);	 /* registers the handlers */
void perf_am_cleanup(struct perf_run *r);
int perf_am_lat(struct perf_run *r, size_t size, long iters, long warmup);
int perf_am_bw(struct perf_run *r, size_t size, long iters, long warmup);
int perf_am_bibw(struct perf_run *r, size_t size, long iters, long warmup);

/* perf_bcast.c */
int perf_bcast(struct perf_run *r, size_t size, long iters, long warmup);

/* perf_overlap.c: a broadcast with the non-roots computing between its
 * start and their wait. */
int perf_overlap(struct perf_run *r, size_t size, long iters, long warmup);

/* perf_copy.c: rank 0 orders rank 1 to copy into rank 2. */
#define PERF_COPY_INITIATOR 0
#define PERF_COPY_SOURCE 1
#define PERF_COPY_DEST 2
int perf_copy_lat(struct perf_run *r, size_t size, long iters, long warmup);
int perf_copy_bw(struct perf_run *r, size_t size, long iters, long warmup);
/* "relay", "direct", "transport-ack". */
const char *perf_copy_mode_str(unsigned mode);

/* perf_mp.c */
int perf_mp_bw(struct perf_run *r, size_t size, long iters, long warmup);

/* perf_fault.c: failover and drain.  Setup (before the first barrier)
 * registers the handlers and creates the fault window; the window goes
 * before triad_fini, the rest after. */
int perf_fault_setup(struct perf_run *r);
int perf_fault_win_destroy(struct perf_run *r);
void perf_fault_cleanup(struct perf_run *r);
int perf_failover(struct perf_run *r, size_t size, long iters, long warmup);
int perf_drain(struct perf_run *r, size_t size, long iters, long warmup);

#endif
