/* triadd: the node's control daemon (docs/daemon.md).  One libev loop,
 * one thread; these files share the daemon's state:
 *   triadd.c   options, logging, signals, configuration (load, reload)
 *   server.c   the socket, clients, triadctl's commands, plane states
 *   monitor.c  health: netlink link state, verbs port events, port counters
 *   assess.c   degraded planes: scores, weights, the rule (ctl/degrade.h)
 *   out.c      text and JSON output into a reply */
#ifndef TRIADD_H
#define TRIADD_H

#include <ev.h>
#include <stdarg.h>
#include <stdint.h>
#include <sys/types.h>

#include "base/list.h"
#include "ctl/conf.h"
#include "ctl/degrade.h"
#include "ctl/health.h"
#include "ctl/io.h"
#include "ctl/table.h"

#define TD_MAX_COUNTERS 64
/* Connections at once; the last TD_ROOT_CONNS of them only for root (and
 * triadd's own user), so that a flood of other connections never locks
 * the administrator out. */
#define TD_MAX_CONNS 1024
#define TD_ROOT_CONNS 32
/* A connection that has not finished its HELLO and COUNTERS (or, for
 * triadctl, sent its command) this long after connecting, or after its
 * last command, is closed: it would hold every drain, or a slot. */
#define TD_HANDSHAKE_S 5.0
/* What a peer that does not read may have queued before it is dropped:
 * the largest frame, once (the kernel's socket buffer comes first). */
#define TD_TX_MAX TR_CTL_MAX_FRAME
/* Descriptors the daemon needs: a socket and at most one descriptor in
 * transit per connection (COUNTERS' memfd), and its own (loop, netlink,
 * devices, the table, sysfs reads).  triadd raises its soft limit to
 * this and warns when it cannot; the systemd unit's LimitNOFILE is above
 * it. */
#define TD_OWN_FDS 64
#define TD_NOFILE_WANT (2 * TD_MAX_CONNS + TD_OWN_FDS)

struct ibv_context;
struct nl_cache_mngr;
struct nl_cache;
struct nl_sock;

struct td_counter {
	char name[48];
	uint64_t value;
};

/* What the daemon knows of one plane besides its table entry. */
struct td_plane {
	struct td *d;
	struct tr_ctl_health health;
	char netdev[TR_CTL_NETDEV_MAX]; /* configured, or found from the subnet; "" none */
	int link;			/* 1 up, 0 down, -1 netdev missing, -2 none configured */
	struct ibv_context *dev;	/* NULL: device missing */
	int port_active;		/* -1: unknown (no device) */
	ev_io async_w;
	uint64_t pend_gen; /* the generation the pending state was published in */
	uint64_t left_gen; /* the pend_gen whose "left" event was told */
	uint64_t faults;   /* times the monitor found it faulty */
	struct td_counter ctr[TD_MAX_COUNTERS];
	int nctr;
	struct td_counter ctr_was[TD_MAX_COUNTERS]; /* ctr at the last period's start */
	int nctr_was;
	/* Degraded planes (assess.c): the port's packets and error events
	 * as last read (totals of ctr[]), what the last period started from,
	 * and the rule's state. */
	uint64_t pkts, errs;
	int have_totals; /* pkts and errs were read (the device is there) */
	uint64_t pkts_was, errs_was, tx_was;
	int have_was;
	struct tr_ctl_dgr dgr;
	/* Bytes the processes gone had moved on the plane while connected,
	 * so that the metrics' totals never go back (server.c, m_tx). */
	uint64_t tx_gone, rx_gone;
};

enum td_conn_kind { TD_CONN_NEW, TD_CONN_CLIENT, TD_CONN_CTL };

struct td_conn {
	struct tr_list link;
	struct td *d;
	int fd;
	ev_io w;
	ev_io wr_w;	 /* while tx holds something: flush when writable */
	ev_timer hs_w;	 /* the handshake (or idle) deadline, TD_HANDSHAKE_S */
	struct tr_ctl_rx *rx;
	struct tr_ctl_tx tx; /* what the socket did not take at once, <= TD_TX_MAX */
	enum td_conn_kind kind;
	pid_t pid;
	uid_t uid;
	gid_t gid;
	uint32_t id;
	int32_t rank;
	uint32_t nplanes;
	char name[TR_CTL_NAME_MAX];
	struct tr_ctl_counters *counters; /* mapped read-only; NULL until COUNTERS */
	unsigned counters_np;		  /* its nplanes, read once at COUNTERS (table.h) */
	/* Its bytes per plane when it was mapped: the metrics' totals count
	 * what it moved while this daemon watched (a process that connects
	 * again is not counted twice). */
	uint64_t tx_base[TRIAD_MAX_PLANES], rx_base[TRIAD_MAX_PLANES];
	uint64_t since_ns;
	int monitor;		/* monitor: events go to it */
	int dead;		/* closed; freed by the reaper */
	unsigned flags;		/* of its last command (JSON) */
	int wait_plane;		/* -1, or a plane whose settling it waits for */
	uint64_t wait_until_ns; /* 0: no deadline */
	/* A client's last APPLIED: its knobs and where each came from. */
	int nknobs_seen; /* it has sent one */
	unsigned nknobs;
	uint64_t knobs_gen;
	struct tr_ctl_knob knob[TR_CTL_KNOBS];
	uint8_t knob_src[TR_CTL_KNOBS];
};

struct td_stats {
	uint64_t connections, refused, protocol_errors, clients_lost, commands, notifies;
	uint64_t handshake_timeouts; /* closed at TD_HANDSHAKE_S */
	uint64_t not_reading;	     /* dropped: more than TD_TX_MAX queued */
	uint64_t accept_failures;    /* accept() failed (at the descriptor limit) */
};

struct td {
	struct ev_loop *loop;
	const char *conf_path;
	struct tr_ctl_conf conf;
	gid_t gid; /* the socket's group */
	int foreground;
	/* the socket */
	int lfd;
	ev_io accept_w;
	ev_timer accept_retry_w; /* accept paused: at the descriptor limit */
	dev_t sock_dev;		 /* the socket file we made (removed only if still ours) */
	ino_t sock_ino;
	/* the policy table: tfd read-write for us, ro_fd read-only for clients */
	int tfd, ro_fd;
	struct tr_ctl_table *table;
	struct tr_ctl_policy pol;
	struct td_plane plane[TRIAD_MAX_PLANES];
	struct tr_list conns;
	int nconns;
	uint32_t next_id;
	struct td_stats stats;
	ev_signal sigterm_w, sigint_w, sighup_w;
	ev_timer settle_w, health_w, counters_w;
	ev_check reap_w;
	/* netlink */
	struct nl_cache_mngr *nl_mngr;
	struct nl_cache *nl_links;
	struct nl_sock *nl_query; /* asks the kernel a link's state */
	ev_io nl_w;
};

/* ---- logging (triadd.c): stderr in the foreground, else syslog ---- */
void td_log(int prio, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* ---- server.c ---- */
int td_server_open(struct td *d);
void td_server_close(struct td *d);
/* The table changed: publish it, tell every client and monitor. */
void td_publish(struct td *d);
/* Plane p goes to state (with reason), published at once; an event. */
void td_plane_set(struct td *d, int p, uint32_t state, uint32_t reason, int faulty);
/* What the clients report of plane p, summed. */
struct td_plane_sum {
	unsigned switched, inflight;
	uint64_t tx, rx;
};
struct td_plane_sum td_plane_sum(const struct td *d, unsigned p);
/* The monitor's verdict on plane p changed. */
void td_plane_health_changed(struct td *d, int p);
/* One line for every monitor (text and JSON made from the same fields). */
void td_event(struct td *d, const char *json, const char *text);
/* The configuration was reloaded: take its new policy values. */
void td_server_reconfigure(struct td *d);

/* ---- policy.c: knobs by name (the library's registry) ---- */
/* 0 when the registry takes k[0..n) as triadd's knobs; else -EINVAL,
 * "KNOB=VALUE: why" in err and the knob at fault in *bad_p. */
int td_knobs_check(const struct tr_ctl_knob *k, size_t n, size_t *bad_p, char *err,
		   size_t errlen);
struct td_out;
/* triadctl config: the knobs published, and per client what it applied. */
void td_knobs_report(const struct td *d, struct td_out *o, int json);

/* ---- assess.c: degraded planes ---- */
/* One period's evidence (after the counters were read): scores, weights,
 * degradations and restores, published. */
void td_assess(struct td *d);

/* ---- monitor.c ---- */
int td_monitor_open(struct td *d);
void td_monitor_close(struct td *d);
/* Re-reads every source now (start, reload). */
void td_monitor_refresh(struct td *d);
const char *td_link_str(int link);

/* ---- out.c: a growing text buffer ---- */
struct td_out {
	char *buf;
	size_t len, cap;
	int failed; /* out of memory */
};
void td_out_printf(struct td_out *o, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* s as a JSON string, quotes included: valid UTF-8 whatever s holds
 * (a byte that is not part of a well-formed sequence becomes U+FFFD). */
void td_out_json_str(struct td_out *o, const char *s);
/* s for a terminal or a log line: control characters (C0, DEL, C1), a
 * backslash and bytes that are not UTF-8 as \xNN (a backslash as \\),
 * the rest as it is; cut to fit len with its NUL.  The characters
 * written (for columns). */
size_t td_text_escape(char *dst, size_t len, const char *s);
/* s escaped so, left-aligned in width characters. */
void td_out_text_str(struct td_out *o, const char *s, int width);
void td_out_free(struct td_out *o);

#endif
