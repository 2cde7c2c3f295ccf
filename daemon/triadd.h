/* triadd: the node's control daemon (docs/daemon.md).  One libev loop,
 * one thread; these files share the daemon's state:
 *   triadd.c   options, logging, signals, configuration (load, reload)
 *   server.c   the socket, clients, triadctl's commands, plane states
 *   monitor.c  health: netlink link state, verbs port events, port counters
 *   out.c      text and JSON output into a reply */
#ifndef TRIADD_H
#define TRIADD_H

#include <ev.h>
#include <stdarg.h>
#include <stdint.h>
#include <sys/types.h>

#include "base/list.h"
#include "ctl/conf.h"
#include "ctl/health.h"
#include "ctl/io.h"
#include "ctl/table.h"

#define TD_MAX_COUNTERS 64
#define TD_MAX_CLIENTS 1024

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
};

enum td_conn_kind { TD_CONN_NEW, TD_CONN_CLIENT, TD_CONN_CTL };

struct td_conn {
	struct tr_list link;
	struct td *d;
	int fd;
	ev_io w;
	struct tr_ctl_rx *rx;
	enum td_conn_kind kind;
	pid_t pid;
	uid_t uid;
	gid_t gid;
	uint32_t id;
	int32_t rank;
	uint32_t nplanes;
	char name[TR_CTL_NAME_MAX];
	struct tr_ctl_counters *counters; /* mapped read-only; NULL until COUNTERS */
	uint64_t since_ns;
	int monitor;		/* monitor: events go to it */
	int dead;		/* closed; freed by the reaper */
	unsigned flags;		/* of its last command (JSON) */
	int wait_plane;		/* -1, or a plane whose settling it waits for */
	uint64_t wait_until_ns; /* 0: no deadline */
};

struct td_stats {
	uint64_t connections, refused, protocol_errors, clients_lost, commands, notifies;
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
/* The monitor's verdict on plane p changed. */
void td_plane_health_changed(struct td *d, int p);
/* One line for every monitor (text and JSON made from the same fields). */
void td_event(struct td *d, const char *json, const char *text);
/* The configuration was reloaded: take its new policy values. */
void td_server_reconfigure(struct td *d);

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
/* s as a JSON string, quotes included. */
void td_out_json_str(struct td_out *o, const char *s);
void td_out_free(struct td_out *o);

#endif
