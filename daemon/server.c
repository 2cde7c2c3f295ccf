/* triadd's socket: clients (triad processes) and triadctl, the policy
 * table, and the plane states (triadd.h, docs/daemon.md).
 *
 * The policy table is a memfd the daemon maps read-write and then seals
 * with F_SEAL_FUTURE_WRITE: from then on no new writable mapping of it
 * and no write() is possible, whoever holds a descriptor, while the
 * daemon's own mapping keeps working.  Clients get a descriptor opened
 * O_RDONLY (through /proc/self/fd), so even mmap(PROT_READ) is all they
 * can ask for; the seal is what makes re-opening that descriptor
 * read-write through /proc of no use (a memfd's inode would allow it).
 * Growing and shrinking are sealed too, so a client's mapping never
 * faults. */
#include <errno.h>
#include <stddef.h>
#include <fcntl.h>
#include <grp.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <syslog.h>
#include <time.h>
#include <unistd.h>

#include "base/time.h"
#include "ctl/metrics.h"
#include "triadd.h"

#ifndef F_SEAL_FUTURE_WRITE
#define F_SEAL_FUTURE_WRITE 0x0010 /* Linux 5.1 */
#endif

#define SETTLE_S 0.005	      /* how often pending planes are checked */
#define ACCEPT_RETRY_S 0.2 /* accept paused at the descriptor limit: try again */

static void conn_close(struct td_conn *c, const char *why);

/* Sends m (fd >= 0 attached) to c without ever waiting: what its socket
 * does not take now is queued and flushed when it is writable.  A peer
 * whose queue would exceed TD_TX_MAX does not read: it is dropped. */
static void conn_send(struct td_conn *c, const struct tr_ctl_msg *m, int fd)
{
	int ret;

	if (c->dead)
		return;
	ret = tr_ctl_tx_send(c->fd, &c->tx, m, fd);
	if (ret == -EAGAIN) {
		if (!ev_is_active(&c->wr_w))
			ev_io_start(c->d->loop, &c->wr_w);
		return;
	}
	if (ret == -ENOBUFS) {
		c->d->stats.not_reading++;
		td_log(LOG_WARNING, "connection of pid %d (uid %u) does not read: %zu bytes queued: "
		       "closed", (int)c->pid, (unsigned)c->uid, tr_ctl_tx_queued(&c->tx));
		conn_close(c, "does not read its socket");
	} else if (ret) {
		/* The peer is gone (EPIPE, ECONNRESET): its EOF may not have
		 * been read yet. */
		conn_close(c, c->kind == TD_CONN_CLIENT ? "gone" : NULL);
	}
}

static void conn_write_cb(struct ev_loop *loop, ev_io *w, int revents)
{
	struct td_conn *c = w->data;
	int ret;

	(void)revents;
	if (c->dead)
		return;
	ret = tr_ctl_tx_flush(c->fd, &c->tx);
	if (ret == -EAGAIN)
		return;
	ev_io_stop(loop, w);
	if (ret)
		conn_close(c, c->kind == TD_CONN_CLIENT ? "gone" : NULL);
}

/* ---- the policy table ---------------------------------------------------------*/
static int table_open(struct td *d)
{
	size_t len = sizeof(struct tr_ctl_table);
	char path[64];
	void *map;

	d->tfd = memfd_create("triadd-policy", MFD_CLOEXEC | MFD_ALLOW_SEALING);
	if (d->tfd < 0 || ftruncate(d->tfd, (off_t)len))
		return -errno;
	map = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, d->tfd, 0);
	if (map == MAP_FAILED)
		return -errno;
	d->table = map;
	tr_ctl_table_init(d->table, &d->pol);
	if (fcntl(d->tfd, F_ADD_SEALS,
		  F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_FUTURE_WRITE | F_SEAL_SEAL)) {
		td_log(LOG_ERR, "cannot seal the policy table: %s", strerror(errno));
		return -errno;
	}
	snprintf(path, sizeof(path), "/proc/self/fd/%d", d->tfd);
	d->ro_fd = open(path, O_RDONLY | O_CLOEXEC);
	return d->ro_fd < 0 ? -errno : 0;
}

static void table_close(struct td *d)
{
	if (d->table)
		munmap(d->table, sizeof(*d->table));
	if (d->tfd >= 0)
		close(d->tfd);
	if (d->ro_fd >= 0)
		close(d->ro_fd);
	d->table = NULL;
	d->tfd = d->ro_fd = -1;
}

/* ---- events for monitors --------------------------------------------------------*/
static void stamp(char *buf, size_t len)
{
	struct timespec ts;
	struct tm tm;
	char sec[32];

	clock_gettime(CLOCK_REALTIME, &ts);
	gmtime_r(&ts.tv_sec, &tm);
	strftime(sec, sizeof(sec), "%Y-%m-%dT%H:%M:%S", &tm);
	snprintf(buf, len, "%s.%03dZ", sec, (int)(ts.tv_nsec / 1000000));
}

void td_event(struct td *d, const char *json, const char *text)
{
	struct tr_list *l, *n;
	char when[40], line[1024];

	stamp(when, sizeof(when));
	td_log(LOG_INFO, "%s", text);
	for (l = d->conns.next; l != &d->conns; l = n) {
		struct td_conn *c = tr_container_of(l, struct td_conn, link);
		struct tr_ctl_msg m = { .type = TR_CTL_EVENT };
		int len;

		n = l->next;
		if (!c->monitor || c->dead)
			continue;
		if (c->flags & TR_CTL_F_JSON)
			len = snprintf(line, sizeof(line), "{\"time\":\"%s\",%s}", when, json);
		else
			len = snprintf(line, sizeof(line), "%s %s", when, text);
		m.u.event.text = line;
		m.u.event.text_len = (uint32_t)(len < (int)sizeof(line) ? len : (int)sizeof(line) - 1);
		conn_send(c, &m, -1);
	}
}

static void plane_event(struct td *d, int p, uint32_t from)
{
	const struct tr_ctl_plane_pol *e = &d->pol.plane[p];
	char json[256], text[256];

	snprintf(json, sizeof(json),
		 "\"event\":\"plane\",\"plane\":\"%s\",\"from\":\"%s\",\"to\":\"%s\","
		 "\"reason\":\"%s\",\"faulty\":%s",
		 e->name, tr_ctl_pstate_str(from), tr_ctl_pstate_str(e->state),
		 tr_ctl_reason_str(e->reason), e->faulty ? "true" : "false");
	snprintf(text, sizeof(text), "plane %s %s -> %s (%s%s)", e->name, tr_ctl_pstate_str(from),
		 tr_ctl_pstate_str(e->state), tr_ctl_reason_str(e->reason),
		 e->faulty ? ", faulty" : "");
	td_event(d, json, text);
}

static void client_event(struct td *d, const struct td_conn *c, const char *what)
{
	char json[256], text[512], name[4 * TR_CTL_NAME_MAX];

	snprintf(json, sizeof(json),
		 "\"event\":\"client\",\"what\":\"%s\",\"id\":%u,\"pid\":%d,\"uid\":%u,\"rank\":%d",
		 what, c->id, (int)c->pid, (unsigned)c->uid, c->rank);
	/* The name is the client's to choose: escaped for terminals and logs. */
	td_text_escape(name, sizeof(name), c->name[0] ? c->name : "?");
	snprintf(text, sizeof(text), "client %u %s (pid %d, uid %u, rank %d, %s)", c->id, what,
		 (int)c->pid, (unsigned)c->uid, c->rank, name);
	td_event(d, json, text);
}

/* ---- publishing and settling ----------------------------------------------------------*/
static int any_pending(const struct td *d)
{
	for (unsigned p = 0; p < d->pol.nplanes; p++)
		if (d->pol.plane[p].state == TR_CTL_SWITCH_PENDING ||
		    d->pol.plane[p].state == TR_CTL_RESTORE_PENDING)
			return 1;
	return 0;
}

void td_publish(struct td *d)
{
	struct tr_ctl_msg m = { .type = TR_CTL_NOTIFY };
	struct tr_list *l, *n;

	tr_ctl_table_write(d->table, &d->pol);
	m.u.notify.gen = tr_ctl_table_gen(d->table);
	for (l = d->conns.next; l != &d->conns; l = n) {
		struct td_conn *c = tr_container_of(l, struct td_conn, link);

		n = l->next;
		if (c->kind != TD_CONN_CLIENT || c->dead)
			continue;
		d->stats.notifies++;
		conn_send(c, &m, -1);
	}
	if (any_pending(d) && !ev_is_active(&d->settle_w))
		ev_timer_again(d->loop, &d->settle_w);
}

void td_plane_set(struct td *d, int p, uint32_t state, uint32_t reason, int faulty)
{
	struct tr_ctl_plane_pol *e = &d->pol.plane[p];
	uint32_t from = e->state;

	e->state = state;
	e->reason = reason;
	e->faulty = (uint32_t)faulty;
	td_publish(d);
	d->plane[p].pend_gen = tr_ctl_table_gen(d->table);
	plane_event(d, p, from);
}

static void reply(struct td_conn *c, int status, unsigned code, const char *text)
{
	struct tr_ctl_msg m = { .type = TR_CTL_REPLY };

	m.u.reply.status = status;
	m.u.reply.code = code;
	m.u.reply.text = text;
	m.u.reply.text_len = (uint32_t)strlen(text);
	conn_send(c, &m, -1);
}

/* An answer of one line, as text or {"version":1,"ok":..,...}. */
static void reply_msg(struct td_conn *c, int status, unsigned code, int plane, const char *msg)
{
	struct td_out o = { 0 };

	if (c->flags & TR_CTL_F_JSON) {
		td_out_printf(&o, "{\"version\":1,\"ok\":%s,\"code\":%u", code ? "false" : "true",
			      code);
		if (plane >= 0) {
			td_out_printf(&o, ",\"plane\":");
			td_out_json_str(&o, c->d->pol.plane[plane].name);
			td_out_printf(&o, ",\"state\":\"%s\"",
				      tr_ctl_pstate_str(c->d->pol.plane[plane].state));
		}
		td_out_printf(&o, ",\"message\":");
		td_out_json_str(&o, msg);
		td_out_printf(&o, "}");
	} else {
		td_out_printf(&o, "%s", msg);
	}
	reply(c, status, code, o.failed ? "out of memory" : o.buf);
	td_out_free(&o);
}

static void wait_done(struct td *d, int p, int status, unsigned code, const char *what)
{
	struct tr_list *l, *n;
	char msg[128];

	snprintf(msg, sizeof(msg), "plane %s %s", d->pol.plane[p].name, what);
	for (l = d->conns.next; l != &d->conns; l = n) {
		struct td_conn *c = tr_container_of(l, struct td_conn, link);

		n = l->next;
		if (c->wait_plane == p && !c->dead) {
			c->wait_plane = -1;
			reply_msg(c, status, code, p, msg);
		}
	}
}

/* Once per drain: every client has left the plane (what it still has in
 * flight there finishes there; "switched" follows once that is done). */
static void left_events(struct td *d, unsigned left)
{
	for (unsigned p = 0; p < d->pol.nplanes; p++) {
		struct td_plane *pl = &d->plane[p];
		char json[160], text[160];

		if (!(left >> p & 1) || pl->left_gen == pl->pend_gen)
			continue;
		pl->left_gen = pl->pend_gen;
		snprintf(json, sizeof(json), "\"event\":\"left\",\"plane\":\"%s\"",
			 d->pol.plane[p].name);
		snprintf(text, sizeof(text), "plane %s left by every client", d->pol.plane[p].name);
		td_event(d, json, text);
	}
}

static void settle(struct td *d)
{
	struct tr_ctl_creg cl[TD_MAX_CONNS];
	uint64_t pend[TRIAD_MAX_PLANES];
	uint32_t before[TRIAD_MAX_PLANES];
	unsigned n = 0, changed;
	struct tr_list *l;

	for (l = d->conns.next; l != &d->conns && n < TD_MAX_CONNS; l = l->next) {
		struct td_conn *c = tr_container_of(l, struct td_conn, link);

		if (c->kind != TD_CONN_CLIENT || c->dead)
			continue;
		if (!c->counters)
			return; /* its COUNTERS follows its HELLO (within TD_HANDSHAKE_S) */
		cl[n].c = c->counters;
		cl[n++].nplanes = c->counters_np;
	}
	for (unsigned p = 0; p < d->pol.nplanes; p++) {
		pend[p] = d->plane[p].pend_gen;
		before[p] = d->pol.plane[p].state;
	}
	left_events(d, tr_ctl_left(&d->pol, pend, cl, n));
	changed = tr_ctl_settle(&d->pol, pend, cl, n);
	if (!changed)
		return;
	td_publish(d);
	for (unsigned p = 0; p < d->pol.nplanes; p++) {
		if (!(changed >> p & 1))
			continue;
		plane_event(d, (int)p, before[p]);
		wait_done(d, (int)p, 0, TR_CTL_OK,
			  d->pol.plane[p].state == TR_CTL_SWITCHED ? "drained" : "restored");
	}
}

static void settle_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
	struct td *d = w->data;
	uint64_t now = tr_now_ns();
	struct tr_list *l, *n;
	int waiting = 0;

	(void)loop;
	(void)revents;
	settle(d);
	for (l = d->conns.next; l != &d->conns; l = n) {
		struct td_conn *c = tr_container_of(l, struct td_conn, link);

		n = l->next;
		if (c->dead)
			continue;
		if (c->wait_plane >= 0 && c->wait_until_ns && now >= c->wait_until_ns) {
			int p = c->wait_plane;

			c->wait_plane = -1;
			reply_msg(c, -ETIMEDOUT, TR_CTL_REFUSED, p,
				  "timed out: some client has not settled on the plane yet "
				  "(triadctl clients shows which)");
		} else if (c->wait_plane >= 0) {
			waiting = 1;
		}
	}
	if (!any_pending(d) && !waiting)
		ev_timer_stop(d->loop, &d->settle_w);
}

void td_plane_health_changed(struct td *d, int p)
{
	const struct tr_ctl_plane_pol *e = &d->pol.plane[p];
	struct td_plane *pl = &d->plane[p];
	char json[200], text[200];

	snprintf(json, sizeof(json), "\"event\":\"health\",\"plane\":\"%s\",\"healthy\":%s,"
		 "\"link\":\"%s\"", e->name, pl->health.healthy ? "true" : "false",
		 td_link_str(pl->link));
	snprintf(text, sizeof(text), "plane %s %s (link %s)", e->name,
		 pl->health.healthy ? "healthy" : "faulty", td_link_str(pl->link));
	td_event(d, json, text);
	if (!pl->health.healthy) {
		pl->faults++;
		/* A fault is a fact: the plane is left even when it is the last.
		 * A degraded plane that fails is the link monitor's from now on:
		 * it comes back when its link does. */
		if (!e->faulty)
			td_plane_set(d, p,
				  tr_ctl_pstate_off(e->state) ? e->state : TR_CTL_SWITCH_PENDING,
				  tr_ctl_pstate_off(e->state) && e->reason != TR_CTL_R_DEGRADED
					  ? e->reason
					  : TR_CTL_R_FAULT,
				  1);
	} else if (e->reason == TR_CTL_R_FAULT) {
		td_plane_set(d, p, TR_CTL_RESTORE_PENDING, TR_CTL_R_FAULT, 0);
	} else if (e->faulty && e->reason == TR_CTL_R_ADMIN) {
		/* Drained by hand and broken meanwhile: mended, still drained. */
		td_plane_set(d, p, e->state, e->reason, 0);
	}
}

/* ---- reports ------------------------------------------------------------------------*/
/* What client c has sent (rx: received) on plane p since it handed its
 * counters over; 0 if its counter went back (it owns the region). */
static uint64_t conn_moved(const struct td_conn *c, unsigned p, int rx)
{
	const struct tr_ctl_cplane *e = &c->counters->plane[p];
	uint64_t now = atomic_load_explicit(rx ? &e->rx_bytes : &e->tx_bytes,
					    memory_order_relaxed),
		 base = rx ? c->rx_base[p] : c->tx_base[p];

	return now >= base ? now - base : 0;
}

struct td_plane_sum td_plane_sum(const struct td *d, unsigned p)
{
	struct td_plane_sum s = { 0 };

	for (const struct tr_list *l = d->conns.next; l != &d->conns; l = l->next) {
		const struct td_conn *c = tr_container_of(l, struct td_conn, link);
		const struct tr_ctl_cplane *e;

		if (c->kind != TD_CONN_CLIENT || c->dead || !c->counters || p >= c->counters_np)
			continue;
		e = &c->counters->plane[p];
		s.switched += atomic_load_explicit(&e->switched, memory_order_relaxed) != 0;
		s.inflight += atomic_load_explicit(&e->inflight, memory_order_relaxed);
		s.tx += atomic_load_explicit(&e->tx_bytes, memory_order_relaxed);
		s.rx += atomic_load_explicit(&e->rx_bytes, memory_order_relaxed);
	}
	return s;
}

static unsigned nclients(const struct td *d)
{
	unsigned n = 0;

	for (const struct tr_list *l = d->conns.next; l != &d->conns; l = l->next)
		n += tr_container_of(l, struct td_conn, link)->kind == TD_CONN_CLIENT &&
		     !tr_container_of(l, struct td_conn, link)->dead;
	return n;
}

static const char *port_str(const struct td_plane *pl)
{
	return !pl->dev ? "missing" : pl->port_active ? "active" : "down";
}

static void report_status(struct td *d, struct td_out *o, int json)
{
	if (json)
		td_out_printf(o, "{\"version\":1,\"generation\":%llu,\"clients\":%u,\"planes\":[",
			      (unsigned long long)tr_ctl_table_gen(d->table), nclients(d));
	else
		td_out_printf(o, "generation %llu, %u client(s)\n%-3s %-12s %-16s %-8s %-8s "
			      "%-12s %-8s %-6s %-7s %-9s %s\n",
			      (unsigned long long)tr_ctl_table_gen(d->table), nclients(d), "#",
			      "plane", "state", "reason", "health", "link", "port", "score",
			      "weight", "switched", "inflight");
	for (unsigned p = 0; p < d->pol.nplanes; p++) {
		const struct tr_ctl_plane_pol *e = &d->pol.plane[p];
		const struct tr_ctl_conf_plane *cp = &d->conf.plane[p];
		const struct td_plane *pl = &d->plane[p];
		struct td_plane_sum s = td_plane_sum(d, p);

		if (!json) {
			char link[40];

			snprintf(link, sizeof(link), "%s:%s", pl->netdev[0] ? pl->netdev : "-",
				 td_link_str(pl->link));
			td_out_printf(o, "%-3u %-12s %-16s %-8s %-8s %-12s %-8s %-6u %-7u %-9u %u\n",
				      p, e->name, tr_ctl_pstate_str(e->state),
				      tr_ctl_reason_str(e->reason),
				      pl->health.healthy ? "healthy" : "faulty", link, port_str(pl),
				      pl->dgr.score, e->weight, s.switched, s.inflight);
			continue;
		}
		td_out_printf(o, "%s{\"index\":%u,\"name\":", p ? "," : "", p);
		td_out_json_str(o, e->name);
		td_out_printf(o, ",\"state\":\"%s\",\"reason\":\"%s\",\"faulty\":%s,"
			      "\"healthy\":%s,\"link\":\"%s\",\"netdev\":",
			      tr_ctl_pstate_str(e->state), tr_ctl_reason_str(e->reason),
			      e->faulty ? "true" : "false", pl->health.healthy ? "true" : "false",
			      td_link_str(pl->link));
		td_out_json_str(o, pl->netdev);
		td_out_printf(o, ",\"device\":");
		td_out_json_str(o, cp->device);
		td_out_printf(o, ",\"port\":%u,\"port_state\":\"%s\",\"clients_switched\":%u,"
			      "\"inflight\":%u,\"tx_bytes\":%llu,\"rx_bytes\":%llu,\"score\":%u,"
			      "\"weight\":%u,\"degraded\":%s,\"degrades\":%llu,\"hold_ms\":%u}",
			      cp->port, port_str(pl), s.switched, s.inflight,
			      (unsigned long long)s.tx, (unsigned long long)s.rx, pl->dgr.score,
			      e->weight, pl->dgr.degraded ? "true" : "false",
			      (unsigned long long)pl->dgr.degrades, pl->dgr.hold_ms);
	}
	if (json)
		td_out_printf(o, "]}");
}

static void report_clients(struct td *d, struct td_out *o, int json)
{
	uint64_t now = tr_now_ns();
	int first = 1;

	td_out_printf(o, json ? "{\"version\":1,\"clients\":[" : "%-5s %-8s %-6s %-5s %-16s %s\n",
		      "id", "pid", "uid", "rank", "name", "planes (switched/inflight)");
	for (struct tr_list *l = d->conns.next; l != &d->conns; l = l->next) {
		const struct td_conn *c = tr_container_of(l, struct td_conn, link);
		/* The copy: the region's own nplanes is the client's to rewrite. */
		unsigned np = c->counters ? c->counters_np : 0;

		if (c->kind != TD_CONN_CLIENT || c->dead)
			continue;
		if (json) {
			td_out_printf(o, "%s{\"id\":%u,\"pid\":%d,\"uid\":%u,\"rank\":%d,\"name\":",
				      first ? "" : ",", c->id, (int)c->pid, (unsigned)c->uid,
				      c->rank);
			td_out_json_str(o, c->name);
			td_out_printf(o, ",\"nplanes\":%u,\"age_s\":%.3f,\"applied_generation\":%llu,"
				      "\"planes\":[",
				      c->nplanes, (double)(now - c->since_ns) * 1e-9,
				      (unsigned long long)(c->counters ? atomic_load(
						&c->counters->applied_gen) : 0));
		} else {
			td_out_printf(o, "%-5u %-8d %-6u %-5d ", c->id, (int)c->pid,
				      (unsigned)c->uid, c->rank);
			td_out_text_str(o, c->name, 16);
		}
		for (unsigned p = 0; p < np; p++) {
			const struct tr_ctl_cplane *e = &c->counters->plane[p];
			unsigned sw = atomic_load(&e->switched), inf = atomic_load(&e->inflight);

			if (json)
				td_out_printf(o, "%s{\"switched\":%s,\"inflight\":%u,"
					      "\"tx_bytes\":%llu,\"rx_bytes\":%llu}",
					      p ? "," : "", sw ? "true" : "false", inf,
					      (unsigned long long)atomic_load(&e->tx_bytes),
					      (unsigned long long)atomic_load(&e->rx_bytes));
			else
				td_out_printf(o, " %u/%u", sw, inf);
		}
		td_out_printf(o, json ? "]}" : "\n");
		first = 0;
	}
	if (json)
		td_out_printf(o, "]}");
}

static void report_stats(struct td *d, struct td_out *o, int json)
{
	const struct td_stats *s = &d->stats;

	td_out_printf(o, json ? "{\"version\":1,\"connections\":%llu,\"refused\":%llu,"
				"\"protocol_errors\":%llu,\"clients_lost\":%llu,\"commands\":%llu,"
				"\"notifies\":%llu,\"clients\":%u,\"handshake_timeouts\":%llu,"
				"\"not_reading\":%llu,\"accept_failures\":%llu,\"open\":%d,"
				"\"planes\":["
			      : "connections %llu\nrefused %llu\nprotocol_errors %llu\n"
				"clients_lost %llu\ncommands %llu\nnotifies %llu\nclients %u\n"
				"handshake_timeouts %llu\nnot_reading %llu\naccept_failures %llu\n"
				"open %d\n",
		      (unsigned long long)s->connections, (unsigned long long)s->refused,
		      (unsigned long long)s->protocol_errors, (unsigned long long)s->clients_lost,
		      (unsigned long long)s->commands, (unsigned long long)s->notifies,
		      nclients(d), (unsigned long long)s->handshake_timeouts,
		      (unsigned long long)s->not_reading, (unsigned long long)s->accept_failures,
		      d->nconns);
	for (unsigned p = 0; p < d->pol.nplanes; p++) {
		const struct td_plane *pl = &d->plane[p];

		if (json) {
			td_out_printf(o, "%s{\"name\":", p ? "," : "");
			td_out_json_str(o, d->pol.plane[p].name);
			td_out_printf(o, ",\"faults\":%llu,\"counters\":{",
				      (unsigned long long)pl->faults);
		} else {
			td_out_printf(o, "plane %s faults %llu\n", d->pol.plane[p].name,
				      (unsigned long long)pl->faults);
		}
		for (int i = 0; i < pl->nctr; i++) {
			if (json) {
				td_out_printf(o, "%s", i ? "," : "");
				td_out_json_str(o, pl->ctr[i].name);
				td_out_printf(o, ":%llu", (unsigned long long)pl->ctr[i].value);
			} else {
				td_out_printf(o, "  %s %llu\n", pl->ctr[i].name,
					      (unsigned long long)pl->ctr[i].value);
			}
		}
		if (json)
			td_out_printf(o, "}}");
	}
	if (json)
		td_out_printf(o, "]}");
}

/* ---- metrics: Prometheus text exposition format 0.0.4 (ctl/metrics.h) ----*/
static void metric_head(struct td_out *o, const char *name, const char *type, const char *help)
{
	td_out_printf(o, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

/* name{plane="P"} V for every plane. */
static void per_plane(struct td *d, struct td_out *o, const char *name, const char *type,
		      const char *help, uint64_t (*get)(struct td *, unsigned))
{
	metric_head(o, name, type, help);
	for (unsigned p = 0; p < d->pol.nplanes; p++)
		td_out_printf(o, "%s{plane=\"%s\"} %llu\n", name, d->pol.plane[p].name,
			      (unsigned long long)get(d, p));
}

static uint64_t m_healthy(struct td *d, unsigned p) { return d->plane[p].health.healthy != 0; }
static uint64_t m_faulty(struct td *d, unsigned p) { return d->pol.plane[p].faulty != 0; }
static uint64_t m_faults(struct td *d, unsigned p) { return d->plane[p].faults; }
static uint64_t m_degraded(struct td *d, unsigned p) { return d->plane[p].dgr.degraded != 0; }
static uint64_t m_degrades(struct td *d, unsigned p) { return d->plane[p].dgr.degrades; }
static uint64_t m_score(struct td *d, unsigned p) { return d->plane[p].dgr.score; }
static uint64_t m_weight(struct td *d, unsigned p) { return d->pol.plane[p].weight; }
static uint64_t m_inflight(struct td *d, unsigned p) { return td_plane_sum(d, p).inflight; }
static uint64_t m_switched(struct td *d, unsigned p) { return td_plane_sum(d, p).switched; }
/* Bytes the processes moved on plane p while this daemon watched them,
 * those gone included: never less than at the last call. */
static uint64_t moved(struct td *d, unsigned p, int rx)
{
	uint64_t n = rx ? d->plane[p].rx_gone : d->plane[p].tx_gone;

	for (const struct tr_list *l = d->conns.next; l != &d->conns; l = l->next) {
		const struct td_conn *c = tr_container_of(l, struct td_conn, link);

		if (c->kind == TD_CONN_CLIENT && !c->dead && c->counters && p < c->counters_np)
			n += conn_moved(c, p, rx);
	}
	return n;
}
static uint64_t m_tx(struct td *d, unsigned p) { return moved(d, p, 0); }
static uint64_t m_rx(struct td *d, unsigned p) { return moved(d, p, 1); }

/* A port counter's name as a label value: the kernel's names are
 * [a-z0-9_]; anything else is left out rather than escaped. */
static int counter_name_ok(const char *s)
{
	for (; *s; s++)
		if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') ||
		      (*s >= '0' && *s <= '9') || *s == '_'))
			return 0;
	return 1;
}

static void report_metrics(struct td *d, struct td_out *o)
{
	const struct td_stats *st = &d->stats;
	static const struct {
		const char *name, *help;
		size_t off;
	} daemon_counters[] = {
#define S(f, h) { "triad_daemon_" #f "_total", h, offsetof(struct td_stats, f) }
		S(connections, "Connections accepted."),
		S(refused, "Connections refused (credentials or the connection limit)."),
		S(protocol_errors, "Connections closed for a protocol error."),
		S(clients_lost, "Triad processes whose connection broke."),
		S(commands, "Commands served."),
		S(notifies, "Policy changes notified to processes."),
		S(handshake_timeouts, "Connections closed at the handshake or idle deadline."),
		S(not_reading, "Peers dropped because they did not read."),
		S(accept_failures, "accept() failures at the descriptor limit."),
#undef S
	};

	metric_head(o, TR_CTL_M_CLIENTS, "gauge", "Triad processes connected to triadd.");
	td_out_printf(o, "%s %u\n", TR_CTL_M_CLIENTS, nclients(d));
	metric_head(o, TR_CTL_M_GENERATION, "gauge", "Generation of the policy table.");
	td_out_printf(o, "%s %llu\n", TR_CTL_M_GENERATION,
		      (unsigned long long)tr_ctl_table_gen(d->table));
	metric_head(o, "triad_daemon_connections_open", "gauge", "Connections open now.");
	td_out_printf(o, "triad_daemon_connections_open %d\n", d->nconns);
	for (size_t i = 0; i < sizeof(daemon_counters) / sizeof(daemon_counters[0]); i++) {
		uint64_t v;

		memcpy(&v, (const char *)st + daemon_counters[i].off, sizeof(v));
		metric_head(o, daemon_counters[i].name, "counter", daemon_counters[i].help);
		td_out_printf(o, "%s %llu\n", daemon_counters[i].name, (unsigned long long)v);
	}
	metric_head(o, TR_CTL_M_STATE, "gauge", "1 for the plane's state, 0 for the others.");
	for (unsigned p = 0; p < d->pol.nplanes; p++)
		for (uint32_t s = 0; s < TR_CTL_PSTATE_MAX; s++)
			td_out_printf(o, "%s{plane=\"%s\",state=\"%s\"} %d\n", TR_CTL_M_STATE,
				      d->pol.plane[p].name, tr_ctl_pstate_str(s),
				      d->pol.plane[p].state == s);
	metric_head(o, TR_CTL_M_REASON, "gauge",
		    "1 for why the plane is in its state (none: normal), 0 for the others.");
	for (unsigned p = 0; p < d->pol.nplanes; p++)
		for (uint32_t r = 0; r < TR_CTL_REASON_MAX; r++)
			td_out_printf(o, "%s{plane=\"%s\",reason=\"%s\"} %d\n", TR_CTL_M_REASON,
				      d->pol.plane[p].name, tr_ctl_reason_str(r),
				      d->pol.plane[p].reason == r);
	per_plane(d, o, TR_CTL_M_HEALTHY, "gauge",
		  "1 while the link monitor finds the plane's link and port up.", m_healthy);
	per_plane(d, o, TR_CTL_M_FAULTY, "gauge",
		  "1 while the plane is marked faulty (a link fault or triadctl plane fail).",
		  m_faulty);
	per_plane(d, o, "triad_plane_faults_total", "counter",
		  "Times the link monitor found the plane faulty.", m_faults);
	per_plane(d, o, TR_CTL_M_DEGRADED, "gauge",
		  "1 while the plane is drained as degraded (it loses or delays packets).",
		  m_degraded);
	per_plane(d, o, "triad_plane_degradations_total", "counter",
		  "Times the plane was degraded.", m_degrades);
	per_plane(d, o, TR_CTL_M_SCORE, "gauge",
		  "Health score of the last period with evidence, 0 (clean) to 100; 50 is bad.",
		  m_score);
	per_plane(d, o, TR_CTL_M_WEIGHT, "gauge",
		  "Weight published to the processes (the score cut to a multiple of 10).",
		  m_weight);
	per_plane(d, o, TR_CTL_M_INFLIGHT, "gauge",
		  "Messages and operations in flight on the plane, over the processes.",
		  m_inflight);
	per_plane(d, o, TR_CTL_M_SWITCHED, "gauge", "Processes that have left the plane.",
		  m_switched);
	per_plane(d, o, TR_CTL_M_TX, "counter",
		  "Bytes the node's processes sent on the plane (processes gone included).",
		  m_tx);
	per_plane(d, o, TR_CTL_M_RX, "counter",
		  "Bytes the node's processes received on the plane (processes gone included).",
		  m_rx);
	metric_head(o, "triad_port_counter", "untyped",
		    "The plane's port counters as the device has them (hw_counters, counters).");
	for (unsigned p = 0; p < d->pol.nplanes; p++)
		for (int i = 0; i < d->plane[p].nctr; i++)
			if (counter_name_ok(d->plane[p].ctr[i].name))
				td_out_printf(o, "triad_port_counter{plane=\"%s\",counter=\"%s\"} %llu\n",
					      d->pol.plane[p].name, d->plane[p].ctr[i].name,
					      (unsigned long long)d->plane[p].ctr[i].value);
}

/* [health], as text lines or a JSON object's members. */
static void report_health(const struct tr_ctl_dgr_cfg *h, struct td_out *o, int json)
{
	td_out_printf(o,
		      json ? "\"health\":{\"degrade\":%s,\"errors_permille\":%u,"
			     "\"latency_ratio\":%u,\"min_packets\":%u,\"degrade_ms\":%u,"
			     "\"restore_ms\":%u,\"restore_max_ms\":%u},"
			   : "health degrade %s errors_permille %u latency_ratio %u min_packets %u "
			     "degrade_ms %u restore_ms %u restore_max_ms %u\n",
		      h->enabled ? (json ? "true" : "yes") : (json ? "false" : "no"),
		      h->errors_permille, h->latency_ratio, h->min_packets, h->degrade_ms,
		      h->restore_ms, h->restore_max_ms);
}

static void report_config(struct td *d, struct td_out *o, int json)
{
	const struct tr_ctl_conf *c = &d->conf;

	if (!json) {
		/* Paths are bytes: escaped like a client's name. */
		td_out_printf(o, "file ");
		td_out_text_str(o, d->conf_path, 0);
		td_out_printf(o, "\nsocket ");
		td_out_text_str(o, c->socket, 0);
		td_out_printf(o, "\ngroup %s\nsocket_mode 0%o\n"
			      "debounce_down_ms %u\ndebounce_up_ms %u\ncounters_ms %u\n",
			      c->group[0] ? c->group : "-", c->socket_mode,
			      c->debounce_down_ms, c->debounce_up_ms, c->counters_ms);
		for (int p = 0; p < c->nplanes; p++)
			td_out_printf(o, "plane %s device %s port %u netdev %s\n",
				      c->plane[p].name, c->plane[p].device, c->plane[p].port,
				      d->plane[p].netdev[0] ? d->plane[p].netdev : "-");
		report_health(&c->health, o, 0);
		td_knobs_report(d, o, 0);
		return;
	}
	td_out_printf(o, "{\"version\":1,\"file\":");
	td_out_json_str(o, d->conf_path);
	td_out_printf(o, ",\"daemon\":{\"socket\":");
	td_out_json_str(o, c->socket);
	td_out_printf(o, ",\"group\":");
	td_out_json_str(o, c->group);
	td_out_printf(o, ",\"socket_mode\":\"0%o\",\"debounce_down_ms\":%u,\"debounce_up_ms\":%u,"
		      "\"counters_ms\":%u},",
		      c->socket_mode, c->debounce_down_ms, c->debounce_up_ms, c->counters_ms);
	report_health(&c->health, o, 1);
	td_out_printf(o, "\"planes\":[");
	for (int p = 0; p < c->nplanes; p++) {
		td_out_printf(o, "%s{\"name\":", p ? "," : "");
		td_out_json_str(o, c->plane[p].name);
		td_out_printf(o, ",\"device\":");
		td_out_json_str(o, c->plane[p].device);
		td_out_printf(o, ",\"port\":%u,\"netdev\":", c->plane[p].port);
		td_out_json_str(o, d->plane[p].netdev);
		td_out_printf(o, "}");
	}
	td_out_printf(o, "]");
	td_knobs_report(d, o, 1);
	td_out_printf(o, "}");
}

/* config set NAME=VALUE, config unset NAME: the knobs published change
 * if the registry takes the new set; then every process applies it. */
static void knob_cmd(struct td_conn *c, unsigned op, const char *arg, size_t len)
{
	struct td *d = c->d;
	struct tr_ctl_policy p = d->pol;
	char buf[256], esc[4 * sizeof(buf)], why[300], msg[sizeof(esc) + sizeof(why) + 64];
	char json[1024], text[1024];
	char *val = NULL;
	size_t bad;
	int k;

	memcpy(buf, arg, len); /* at most 255 bytes, no NUL (the decoder) */
	buf[len] = '\0';
	td_text_escape(esc, sizeof(esc), buf);
	if (op == TR_CTL_OP_SET) {
		val = strchr(buf, '=');
		if (!val) {
			snprintf(msg, sizeof(msg), "'%s': want NAME=VALUE", esc);
			reply_msg(c, -EINVAL, TR_CTL_BAD_CMD, -1, msg);
			return;
		}
		*val++ = '\0';
	}
	k = tr_ctl_policy_knob(&p, buf);
	if (op == TR_CTL_OP_UNSET) {
		if (k < 0) {
			snprintf(msg, sizeof(msg), "%s: not published (triadctl config lists what is)",
				 esc);
			reply_msg(c, -ENOENT, TR_CTL_BAD_CMD, -1, msg);
			return;
		}
		memmove(&p.knob[k], &p.knob[k + 1], (p.nknobs - (unsigned)k - 1) * sizeof(p.knob[0]));
		p.nknobs--;
	} else {
		if (k < 0 && p.nknobs == TR_CTL_KNOBS) {
			reply_msg(c, -ENOSPC, TR_CTL_REFUSED, -1, "every knob's place is taken");
			return;
		}
		if (k < 0)
			k = (int)p.nknobs++;
		memset(&p.knob[k], 0, sizeof(p.knob[k]));
		/* The registry's message names the knob and the value; the
		 * table's syntax after it (a valid number may be too long). */
		/* Cut to fit; what is cut is refused below. */
		memcpy(p.knob[k].name, buf, strnlen(buf, TR_CTL_KNOB_NAME - 1));
		memcpy(p.knob[k].value, val, strnlen(val, TR_CTL_KNOB_VALUE - 1));
		why[0] = '\0';
		if (strlen(buf) >= TR_CTL_KNOB_NAME)
			snprintf(why, sizeof(why), "%s=%s: no such knob", buf, val);
		else if (td_knobs_check(p.knob, p.nknobs, &bad, why, sizeof(why)) == 0 &&
			 (strlen(val) >= TR_CTL_KNOB_VALUE || !tr_ctl_knob_ok(buf, val)))
			snprintf(why, sizeof(why), "%s=%s: longer than %d characters, or a blank, "
				 "quote or backslash inside", buf, val, TR_CTL_KNOB_VALUE - 1);
		if (why[0]) {
			char e2[4 * sizeof(why)];

			td_text_escape(e2, sizeof(e2), why);
			snprintf(msg, sizeof(msg), "refused: %s", e2);
			reply_msg(c, -EINVAL, TR_CTL_BAD_CMD, -1, msg);
			return;
		}
	}
	d->pol = p;
	td_publish(d);
	td_log(LOG_NOTICE, "config %s %s%s%s (uid %u, pid %d)", tr_ctl_op_str(op), esc,
	       val ? "=" : "", val ? val : "", (unsigned)c->uid, (int)c->pid);
	snprintf(json, sizeof(json), "\"event\":\"policy\",\"knob\":\"%s\",\"value\":%s%s%s",
		 buf, val ? "\"" : "null", val ? val : "", val ? "\"" : "");
	snprintf(text, sizeof(text), "policy %s%s%s", buf, val ? "=" : " unset", val ? val : "");
	td_event(d, json, text);
	snprintf(msg, sizeof(msg), "%s%s%s published (generation %llu): %s", buf,
		 val ? "=" : " no longer", val ? val : "",
		 (unsigned long long)tr_ctl_table_gen(d->table),
		 val ? "every process whose environment does not set it takes it"
		     : "processes go back to their default unless their environment sets it");
	reply_msg(c, 0, TR_CTL_OK, -1, msg);
}

/* ---- commands ------------------------------------------------------------------------*/
static int find_plane(const struct td *d, const char *arg, size_t len)
{
	char name[TR_CTL_PLANE_NAME];
	char *end;
	long n;

	if (!len || len >= sizeof(name))
		return -1;
	memcpy(name, arg, len);
	name[len] = '\0';
	n = strtol(name, &end, 10);
	if (!*end && n >= 0 && n < (long)d->pol.nplanes)
		return (int)n; /* a plane's number */
	return tr_ctl_conf_plane_find(&d->conf, name);
}

/* drain, fail, restore of plane p. */
static void plane_cmd(struct td_conn *c, unsigned op, int p, unsigned flags, uint32_t timeout_ms)
{
	struct td *d = c->d;
	struct tr_ctl_plane_pol *e = &d->pol.plane[p];
	int force = flags & TR_CTL_F_FORCE, off = tr_ctl_pstate_off(e->state);
	char msg[256];

	if (op == TR_CTL_OP_RESTORE) {
		if (!off && !e->faulty) {
			reply_msg(c, 0, TR_CTL_OK, p, "plane in use already");
			return;
		}
		if (!d->plane[p].health.healthy && !force) {
			snprintf(msg, sizeof(msg), "plane %s is faulty (link %s): not restored; "
				 "--force to restore it anyway", e->name,
				 td_link_str(d->plane[p].link));
			reply_msg(c, -EBUSY, TR_CTL_REFUSED, p, msg);
			return;
		}
		if (off || e->faulty)
			td_plane_set(d, p, TR_CTL_RESTORE_PENDING, e->reason, 0);
	} else {
		if (!off && !force && !tr_ctl_other_live(&d->pol, (unsigned)p)) {
			snprintf(msg, sizeof(msg), "plane %s is the last live plane: not %s; "
				 "--force to do it anyway", e->name,
				 op == TR_CTL_OP_FAIL ? "failed" : "drained");
			reply_msg(c, -EBUSY, TR_CTL_REFUSED, p, msg);
			return;
		}
		/* A degraded plane drained or failed by hand stays so: the
		 * operator's reason replaces the daemon's. */
		if (!off || (op == TR_CTL_OP_FAIL && !e->faulty) || e->reason == TR_CTL_R_DEGRADED)
			td_plane_set(d, p, off ? e->state : TR_CTL_SWITCH_PENDING,
				  op == TR_CTL_OP_FAIL ? TR_CTL_R_FAIL : TR_CTL_R_ADMIN,
				  op == TR_CTL_OP_FAIL || e->faulty);
	}
	settle(d); /* with no client it settles at once */
	if ((flags & TR_CTL_F_WAIT) &&
	    (e->state == TR_CTL_SWITCH_PENDING || e->state == TR_CTL_RESTORE_PENDING)) {
		c->wait_plane = p;
		c->wait_until_ns = timeout_ms ? tr_now_ns() + (uint64_t)timeout_ms * 1000000 : 0;
		if (!ev_is_active(&d->settle_w))
			ev_timer_again(d->loop, &d->settle_w);
		return;
	}
	snprintf(msg, sizeof(msg), "plane %s %s", e->name,
		 e->state == TR_CTL_SWITCHED	      ? "drained"
		 : e->state == TR_CTL_NORMAL	      ? "restored"
		 : e->state == TR_CTL_SWITCH_PENDING ? "draining"
						      : "restoring");
	reply_msg(c, 0, TR_CTL_OK, p, msg);
}

static void on_cmd(struct td_conn *c, const struct tr_ctl_msg *m)
{
	struct td *d = c->d;
	unsigned op = m->u.cmd.op;
	int json = m->u.cmd.flags & TR_CTL_F_JSON, p;
	struct td_out o = { 0 };

	d->stats.commands++;
	if (c->kind == TD_CONN_NEW)
		c->kind = TD_CONN_CTL;
	c->flags = m->u.cmd.flags;
	/* triadctl says one thing and reads the answer: an idle command
	 * connection is closed TD_HANDSHAKE_S after its last command (a
	 * monitor or a --wait is not idle). */
	if (c->kind == TD_CONN_CTL)
		ev_timer_again(d->loop, &c->hs_w);
	switch (op) {
	case TR_CTL_OP_STATUS: report_status(d, &o, json); break;
	case TR_CTL_OP_CLIENTS: report_clients(d, &o, json); break;
	case TR_CTL_OP_STATS: report_stats(d, &o, json); break;
	case TR_CTL_OP_CONFIG: report_config(d, &o, json); break;
	case TR_CTL_OP_METRICS: report_metrics(d, &o); break;
	case TR_CTL_OP_SET:
	case TR_CTL_OP_UNSET:
		knob_cmd(c, op, m->u.cmd.arg, m->u.cmd.arg_len);
		return;
	case TR_CTL_OP_MONITOR:
		c->monitor = 1;
		ev_timer_stop(d->loop, &c->hs_w);
		td_out_printf(&o, json ? "{\"version\":1,\"ok\":true,\"message\":\"monitoring\"}"
				       : "monitoring");
		break;
	default:
		p = find_plane(d, m->u.cmd.arg, m->u.cmd.arg_len);
		if (p < 0) {
			char arg[TR_CTL_PLANE_NAME * 4], esc[sizeof(arg) * 4], msg[sizeof(esc) + 64];
			size_t len = m->u.cmd.arg_len < sizeof(arg) ? m->u.cmd.arg_len : sizeof(arg) - 1;

			memcpy(arg, m->u.cmd.arg, len);
			arg[len] = '\0';
			td_text_escape(esc, sizeof(esc), arg);
			snprintf(msg, sizeof(msg), "no plane '%s' (triadctl status lists them)", esc);
			reply_msg(c, -ENOENT, TR_CTL_BAD_CMD, -1, msg);
		} else if (c->wait_plane >= 0) {
			reply_msg(c, -EBUSY, TR_CTL_BAD_CMD, -1, "a command is still waiting");
		} else {
			td_log(LOG_NOTICE, "%s plane %s (uid %u, pid %d)", tr_ctl_op_str(op),
			       d->pol.plane[p].name, (unsigned)c->uid, (int)c->pid);
			plane_cmd(c, op, p, m->u.cmd.flags, m->u.cmd.timeout_ms);
		}
		return;
	}
	if (o.failed || o.len > TR_CTL_MAX_STR)
		reply_msg(c, -EMSGSIZE, TR_CTL_REFUSED, -1, "the answer is too large for a frame");
	else
		reply(c, 0, TR_CTL_OK, o.buf ? o.buf : "");
	td_out_free(&o);
}

/* ---- clients ------------------------------------------------------------------------*/
static int on_hello(struct td_conn *c, const struct tr_ctl_msg *m)
{
	struct tr_ctl_msg w = { .type = TR_CTL_WELCOME };

	if (c->kind != TD_CONN_NEW)
		return -EPROTO;
	c->kind = TD_CONN_CLIENT;
	c->id = ++c->d->next_id;
	c->rank = m->u.hello.rank;
	c->nplanes = m->u.hello.nplanes;
	memcpy(c->name, m->u.hello.name, sizeof(c->name));
	if ((uint32_t)c->pid != m->u.hello.pid)
		td_log(LOG_WARNING, "client %u says pid %u, the kernel says %d", c->id,
		       m->u.hello.pid, (int)c->pid);
	w.u.welcome.client = c->id;
	w.u.welcome.table_size = sizeof(struct tr_ctl_table);
	w.u.welcome.gen = tr_ctl_table_gen(c->d->table);
	client_event(c->d, c, "connected");
	/* The table's descriptor stays open as long as the daemon: it may
	 * wait in c's queue. */
	conn_send(c, &w, c->d->ro_fd);
	return 0;
}

/* The client's counters region: a memfd sealed against shrinking (else a
 * shrink would fault our mapping), mapped read-only. */
static int on_counters(struct td_conn *c, const struct tr_ctl_msg *m)
{
	int fd = tr_ctl_rx_take_fd(c->rx), seals;
	unsigned np;
	struct stat st;
	void *map;

	if (c->kind != TD_CONN_CLIENT || c->counters || fd < 0) {
		if (fd >= 0)
			close(fd);
		return -EPROTO;
	}
	seals = fcntl(fd, F_GET_SEALS);
	if (seals < 0 || !(seals & F_SEAL_SHRINK) || fstat(fd, &st) ||
	    (size_t)st.st_size < sizeof(struct tr_ctl_counters) ||
	    m->u.counters.size != sizeof(struct tr_ctl_counters)) {
		close(fd);
		return -EPROTO;
	}
	map = mmap(NULL, sizeof(struct tr_ctl_counters), PROT_READ, MAP_SHARED, fd, 0);
	close(fd);
	if (map == MAP_FAILED)
		return -errno;
	if (tr_ctl_counters_check(map, sizeof(struct tr_ctl_counters), &np)) {
		munmap(map, sizeof(struct tr_ctl_counters));
		return -EPROTO;
	}
	c->counters = map;
	c->counters_np = np;
	for (unsigned p = 0; p < np; p++) { /* np <= TRIAD_MAX_PLANES: checked */
		const struct tr_ctl_cplane *e = &c->counters->plane[p];

		c->tx_base[p] = atomic_load_explicit(&e->tx_bytes, memory_order_relaxed);
		c->rx_base[p] = atomic_load_explicit(&e->rx_bytes, memory_order_relaxed);
	}
	ev_timer_stop(c->d->loop, &c->hs_w); /* the handshake is done */
	return 0;
}

/* What the client has of the knobs now: kept for triadctl config. */
static int on_applied(struct td_conn *c, const struct tr_ctl_msg *m)
{
	if (c->kind != TD_CONN_CLIENT)
		return -EPROTO;
	c->nknobs_seen = 1;
	c->nknobs = m->u.applied.n;
	c->knobs_gen = m->u.applied.gen;
	memcpy(c->knob, m->u.applied.knob, sizeof(c->knob));
	memcpy(c->knob_src, m->u.applied.src, sizeof(c->knob_src));
	return 0;
}

/* Closes c at once; its memory goes in the reaper (an ev_check after
 * this loop iteration), since the caller may be walking the list. */
static void conn_close(struct td_conn *c, const char *why)
{
	struct td *d = c->d;

	if (c->dead)
		return;
	c->dead = 1;
	ev_io_stop(d->loop, &c->w);
	ev_io_stop(d->loop, &c->wr_w);
	ev_timer_stop(d->loop, &c->hs_w);
	close(c->fd);
	c->fd = -1;
	tr_ctl_rx_reset(c->rx);
	tr_ctl_tx_reset(&c->tx);
	if (c->kind == TD_CONN_CLIENT) {
		if (why)
			d->stats.clients_lost++;
		client_event(d, c, why ? why : "disconnected");
	}
	if (c->counters) {
		/* What it moved stays in the metrics' totals. */
		for (unsigned p = 0; c->kind == TD_CONN_CLIENT && p < c->counters_np &&
				     p < d->pol.nplanes;
		     p++) {
			d->plane[p].tx_gone += conn_moved(c, p, 0);
			d->plane[p].rx_gone += conn_moved(c, p, 1);
		}
		munmap(c->counters, sizeof(*c->counters));
	}
	c->counters = NULL;
	ev_check_start(d->loop, &d->reap_w);
	/* A client gone may be the one a drain waited for. */
	if (any_pending(d) && !ev_is_active(&d->settle_w))
		ev_timer_again(d->loop, &d->settle_w);
}

static void reap(struct td *d)
{
	struct tr_list *l, *n;

	for (l = d->conns.next; l != &d->conns; l = n) {
		struct td_conn *c = tr_container_of(l, struct td_conn, link);

		n = l->next;
		if (!c->dead)
			continue;
		tr_list_del(&c->link);
		d->nconns--;
		free(c->rx);
		free(c);
	}
	ev_check_stop(d->loop, &d->reap_w);
	/* Descriptors were freed: accepting may work again. */
	if (d->lfd >= 0 && ev_is_active(&d->accept_retry_w)) {
		ev_timer_stop(d->loop, &d->accept_retry_w);
		ev_io_start(d->loop, &d->accept_w);
	}
}

static void reap_cb(struct ev_loop *loop, ev_check *w, int revents)
{
	(void)loop;
	(void)revents;
	reap(w->data);
}

static void conn_cb(struct ev_loop *loop, ev_io *w, int revents)
{
	struct td_conn *c = w->data;
	struct td *d = c->d;
	struct tr_ctl_msg m;
	int ret;

	(void)loop;
	(void)revents;
	if (c->dead)
		return;
	ret = tr_ctl_rx_read(c->fd, c->rx);
	if (ret == -EAGAIN)
		return;
	/* A descriptor rides only with COUNTERS, once: no connection may
	 * make the daemon hold more than that one (its descriptor limit is
	 * counted on it, TD_NOFILE_WANT). */
	if (ret > 0 &&
	    c->rx->nfds > (c->kind == TD_CONN_NEW || (c->kind == TD_CONN_CLIENT && !c->counters)))
		ret = -EPROTO;
	if (ret == 0 || ret == -ECONNRESET) {
		/* EOF: a client gone (dead or closed), or triadctl done. */
		conn_close(c, c->kind == TD_CONN_CLIENT ? "gone" : NULL);
		return;
	}
	while (ret > 0 && (ret = tr_ctl_rx_next(c->rx, &m)) > 0) {
		switch (m.type) {
		case TR_CTL_HELLO: ret = on_hello(c, &m); break;
		case TR_CTL_COUNTERS: ret = on_counters(c, &m); break;
		case TR_CTL_CMD: on_cmd(c, &m); break;
		case TR_CTL_APPLIED: ret = on_applied(c, &m); break;
		default: ret = -EPROTO; break;
		}
		ret = c->dead ? 0 : ret ? ret : 1;
	}
	if (ret < 0 && !c->dead) {
		d->stats.protocol_errors++;
		td_log(LOG_WARNING, "connection of pid %d (uid %u): %s: closed", (int)c->pid,
		       (unsigned)c->uid, strerror(-ret));
		conn_close(c, "protocol error");
	}
}

/* TD_HANDSHAKE_S after connecting (or after its last command) c has not
 * become a client with counters, a monitor or a waiting command. */
static void handshake_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
	struct td_conn *c = w->data;

	(void)loop;
	(void)revents;
	if (c->dead || c->wait_plane >= 0)
		return; /* a --wait: its own deadline answers it; the timer repeats */
	c->d->stats.handshake_timeouts++;
	td_log(LOG_WARNING, "connection of pid %d (uid %u): %s within %.0f s: closed", (int)c->pid,
	       (unsigned)c->uid,
	       c->kind == TD_CONN_CLIENT ? "HELLO without COUNTERS"
	       : c->kind == TD_CONN_CTL  ? "no command"
					 : "no HELLO and no command",
	       TD_HANDSHAKE_S);
	conn_close(c, c->kind == TD_CONN_CLIENT ? "no COUNTERS in time" : NULL);
}

static int in_group(uid_t uid, gid_t gid)
{
	struct passwd pw, *res = NULL;
	gid_t groups[256];
	int n = 256;
	char buf[4096];

	if (getpwuid_r(uid, &pw, buf, sizeof(buf), &res) || !res)
		return 0;
	if (getgrouplist(pw.pw_name, pw.pw_gid, groups, &n) < 0)
		return 0;
	for (int i = 0; i < n; i++)
		if (groups[i] == gid)
			return 1;
	return 0;
}

static int is_admin(const struct ucred *cr)
{
	return cr->uid == 0 || cr->uid == geteuid();
}

static int allowed(const struct td *d, const struct ucred *cr)
{
	return is_admin(cr) || cr->gid == d->gid || in_group(cr->uid, d->gid);
}

static void refuse(struct td *d, int fd, const struct ucred *cr, const char *why)
{
	struct tr_ctl_msg m = { .type = TR_CTL_REPLY };
	char text[200], json[200];

	d->stats.refused++;
	snprintf(text, sizeof(text), "connection refused: uid %u (pid %d): %s", (unsigned)cr->uid,
		 (int)cr->pid, why);
	snprintf(json, sizeof(json), "\"event\":\"refused\",\"uid\":%u,\"pid\":%d",
		 (unsigned)cr->uid, (int)cr->pid);
	td_event(d, json, text);
	m.u.reply.status = -EACCES;
	m.u.reply.code = TR_CTL_REFUSED;
	m.u.reply.text = text;
	m.u.reply.text_len = (uint32_t)strlen(text);
	tr_ctl_send(fd, &m, -1, 0);
	close(fd);
}

static void accept_cb(struct ev_loop *loop, ev_io *w, int revents)
{
	struct td *d = w->data;
	struct ucred cr;
	socklen_t len = sizeof(cr);
	struct td_conn *c;
	int fd;

	(void)loop;
	(void)revents;
	fd = accept4(d->lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
	if (fd < 0) {
		/* At the descriptor limit (or out of memory) the connection
		 * stays in the backlog and the socket stays readable: retrying
		 * at once would spin.  Pause until a connection is freed, or
		 * ACCEPT_RETRY_S. */
		if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM) {
			if (!d->stats.accept_failures++)
				td_log(LOG_WARNING, "accept: %s (%d connections open): paused, "
				       "counted in stats.accept_failures", strerror(errno),
				       d->nconns);
			ev_io_stop(d->loop, &d->accept_w);
			ev_timer_set(&d->accept_retry_w, ACCEPT_RETRY_S, 0);
			ev_timer_start(d->loop, &d->accept_retry_w);
		}
		return;
	}
	d->stats.connections++;
	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cr, &len)) {
		close(fd);
		return;
	}
	if (!allowed(d, &cr)) {
		refuse(d, fd, &cr, "not root, not triadd's user, not in its group");
		return;
	}
	if (d->nconns >= TD_MAX_CONNS ||
	    (d->nconns >= TD_MAX_CONNS - TD_ROOT_CONNS && !is_admin(&cr))) {
		char why[120];

		snprintf(why, sizeof(why), "too many connections (%d open; the last %d of %d are "
			 "kept for root)", d->nconns, TD_ROOT_CONNS, TD_MAX_CONNS);
		refuse(d, fd, &cr, why);
		return;
	}
	c = calloc(1, sizeof(*c));
	if (c)
		c->rx = malloc(sizeof(*c->rx));
	if (!c || !c->rx) {
		free(c);
		close(fd);
		return;
	}
	tr_ctl_rx_init(c->rx);
	tr_ctl_tx_init(&c->tx, TD_TX_MAX);
	c->d = d;
	c->fd = fd;
	c->pid = cr.pid;
	c->uid = cr.uid;
	c->gid = cr.gid;
	c->rank = -1;
	c->wait_plane = -1;
	c->since_ns = tr_now_ns();
	ev_io_init(&c->w, conn_cb, fd, EV_READ);
	c->w.data = c;
	ev_io_start(d->loop, &c->w);
	ev_io_init(&c->wr_w, conn_write_cb, fd, EV_WRITE);
	c->wr_w.data = c;
	ev_timer_init(&c->hs_w, handshake_cb, TD_HANDSHAKE_S, TD_HANDSHAKE_S);
	c->hs_w.data = c;
	ev_timer_start(d->loop, &c->hs_w);
	tr_list_add_tail(&d->conns, &c->link);
	d->nconns++;
}

/* ---- set-up --------------------------------------------------------------------------*/
static int socket_open(struct td *d)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	const char *path = d->conf.socket;
	char dir[sizeof(sa.sun_path)], *slash;
	struct stat st;
	int ret;

	memcpy(sa.sun_path, path, strlen(path) + 1);
	memcpy(dir, path, strlen(path) + 1);
	slash = strrchr(dir, '/');
	if (slash && slash != dir) {
		*slash = '\0';
		if (mkdir(dir, 0755) && errno != EEXIST)
			td_log(LOG_WARNING, "%s: %s", dir, strerror(errno));
	}
	/* Only a socket is ever removed: `socket =` naming some other file
	 * is a mistake in the configuration, not ours to delete. */
	if (lstat(path, &st) == 0 && !S_ISSOCK(st.st_mode)) {
		td_log(LOG_ERR, "%s: exists and is not a socket: not removed (name another "
		       "'socket' in %s, or remove it)", path, d->conf_path);
		return -EEXIST;
	}
	d->lfd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (d->lfd < 0)
		return -errno;
	/* A socket file left by a daemon that was killed (nobody listens:
	 * ECONNREFUSED) is taken over; one a live daemon answers on is not,
	 * nor one whose backlog is full (EAGAIN: a daemon stopped or busy). */
	ret = connect(d->lfd, (struct sockaddr *)&sa, sizeof(sa)) ? errno : 0;
	close(d->lfd);
	d->lfd = -1;
	if (ret == 0) {
		td_log(LOG_ERR, "%s: another triadd answers there", path);
		return -EADDRINUSE;
	}
	if (ret != ENOENT && ret != ECONNREFUSED) {
		td_log(LOG_ERR, "%s: a socket that takes no connection now (%s): another triadd may "
		       "be stopped or busy there; not taken over", path, strerror(ret));
		return -EADDRINUSE;
	}
	d->lfd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (d->lfd < 0)
		return -errno;
	if (ret == ECONNREFUSED)
		unlink(path);
	if (bind(d->lfd, (struct sockaddr *)&sa, sizeof(sa))) {
		ret = -errno;
		td_log(LOG_ERR, "%s: %s", path, strerror(errno));
		close(d->lfd);
		d->lfd = -1;
		return ret;
	}
	if (lstat(path, &st) || chmod(path, d->conf.socket_mode) ||
	    (d->conf.group[0] && chown(path, (uid_t)-1, d->gid)) || listen(d->lfd, 64)) {
		ret = -errno;
		td_log(LOG_ERR, "%s: %s", path, strerror(errno));
		close(d->lfd);
		d->lfd = -1;
		unlink(path);
		return ret;
	}
	d->sock_dev = st.st_dev;
	d->sock_ino = st.st_ino;
	ev_io_init(&d->accept_w, accept_cb, d->lfd, EV_READ);
	d->accept_w.data = d;
	ev_io_start(d->loop, &d->accept_w);
	return 0;
}

static void accept_retry_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
	struct td *d = w->data;

	(void)revents;
	if (d->lfd >= 0)
		ev_io_start(loop, &d->accept_w);
}

int td_server_open(struct td *d)
{
	int ret;

	tr_list_init(&d->conns);
	d->lfd = d->tfd = d->ro_fd = -1;
	tr_ctl_conf_policy(&d->conf, &d->pol);
	ret = table_open(d);
	if (ret) {
		td_log(LOG_ERR, "policy table: %s", strerror(-ret));
		return ret;
	}
	ev_check_init(&d->reap_w, reap_cb);
	d->reap_w.data = d;
	ev_init(&d->settle_w, settle_cb);
	d->settle_w.repeat = SETTLE_S;
	d->settle_w.data = d;
	ev_init(&d->accept_retry_w, accept_retry_cb);
	d->accept_retry_w.data = d;
	return socket_open(d);
}

void td_server_close(struct td *d)
{
	for (struct tr_list *l = d->conns.next; l != &d->conns; l = l->next)
		conn_close(tr_container_of(l, struct td_conn, link), NULL);
	reap(d);
	ev_timer_stop(d->loop, &d->settle_w);
	ev_timer_stop(d->loop, &d->accept_retry_w);
	if (d->lfd >= 0) {
		struct stat st;

		ev_io_stop(d->loop, &d->accept_w);
		close(d->lfd);
		/* Ours only: not a file someone put there since. */
		if (!lstat(d->conf.socket, &st) && st.st_dev == d->sock_dev &&
		    st.st_ino == d->sock_ino)
			unlink(d->conf.socket);
	}
	d->lfd = -1;
	table_close(d);
}

void td_server_reconfigure(struct td *d)
{
	struct tr_ctl_policy fresh;

	/* Plane states stay; the file's knobs replace those published (what
	 * triadctl config set published is gone: the file is the record). */
	tr_ctl_conf_policy(&d->conf, &fresh);
	d->pol.nknobs = fresh.nknobs;
	memcpy(d->pol.knob, fresh.knob, sizeof(d->pol.knob));
	td_publish(d);
}
