/* triadd's health monitor: where a plane's raw up/down comes from, and
 * the debounce (lib/ctl/health) that turns it into a verdict.
 *
 *   link     the plane's netdev (configured, or the interface holding an
 *            address in its subnet): up when IFF_UP and IFF_RUNNING; a
 *            netdev that is not there counts as down.  libnl's cache
 *            manager (route/link) tells when a link changed; the state is
 *            then asked of the kernel (rtnl_link_get_kernel), since libnl
 *            3.7 merges a changed link into its cached object without its
 *            new flags (seen here: only the first down/up was noticed)
 *   port     verbs async events of the plane's device (PORT_ACTIVE,
 *            PORT_ERR), after one ibv_query_port; a device that is not
 *            there is reported missing and does not count (a node may run
 *            triadd before its drivers are up, and the test host has none)
 *   counters /sys/class/infiniband/DEV/ports/N/{hw_counters,counters},
 *            read every counters_ms for triadctl stats and the degraded
 *            planes' evidence (assess.c)
 * A plane's raw state is up when its link is up and its port is active
 * (or unknown). */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <syslog.h>
#include <unistd.h>

#include <infiniband/verbs.h>
#include <netlink/cache.h>
#include <netlink/netlink.h>
#include <netlink/route/link.h>

#include "base/time.h"
#include "triadd.h"

const char *td_link_str(int link)
{
	switch (link) {
	case 1: return "up";
	case 0: return "down";
	case -1: return "missing";
	default: return "none";
	}
}

/* The interface holding an IPv4 address inside the plane's subnet. */
static void netdev_from_subnet(const struct tr_ctl_conf_plane *cp, char *out, size_t len)
{
	struct ifaddrs *ifa, *i;
	uint32_t mask = cp->prefix ? 0xffffffffu << (32 - cp->prefix) : 0;

	out[0] = '\0';
	if (getifaddrs(&ifa))
		return;
	for (i = ifa; i; i = i->ifa_next) {
		const struct sockaddr_in *sin = (const struct sockaddr_in *)i->ifa_addr;

		if (sin && sin->sin_family == AF_INET &&
		    (ntohl(sin->sin_addr.s_addr) & mask) == cp->subnet) {
			snprintf(out, len, "%s", i->ifa_name);
			break;
		}
	}
	freeifaddrs(ifa);
}

static int link_state(struct td *d, const char *name)
{
	struct rtnl_link *l;
	unsigned flags;

	if (!name[0])
		return -2;
	if (!d->nl_query)
		return 1; /* no netlink: nothing says it is down */
	if (rtnl_link_get_kernel(d->nl_query, 0, name, &l) < 0 || !l)
		return -1;
	flags = rtnl_link_get_flags(l);
	rtnl_link_put(l);
	return (flags & IFF_UP) && (flags & IFF_RUNNING);
}

/* Arms the debounce timer for the earliest deadline of any plane. */
static void health_rearm(struct td *d)
{
	uint64_t next = 0, now = tr_now_ns();

	for (unsigned p = 0; p < d->pol.nplanes; p++) {
		uint64_t t = tr_ctl_health_deadline(&d->plane[p].health);

		if (t && (!next || t < next))
			next = t;
	}
	ev_timer_stop(d->loop, &d->health_w);
	if (next) {
		ev_timer_set(&d->health_w, next > now ? (double)(next - now) * 1e-9 : 0., 0.);
		ev_timer_start(d->loop, &d->health_w);
	}
}

static void observe(struct td *d, int p)
{
	struct td_plane *pl = &d->plane[p];
	int up = pl->link != 0 && pl->link != -1 && pl->port_active != 0;

	if (tr_ctl_health_observe(&pl->health, up, tr_now_ns()))
		td_plane_health_changed(d, p);
}

static void links_eval(struct td *d)
{
	for (int p = 0; p < d->conf.nplanes; p++) {
		const struct tr_ctl_conf_plane *cp = &d->conf.plane[p];
		struct td_plane *pl = &d->plane[p];
		int link;

		if (cp->netdev[0])
			snprintf(pl->netdev, sizeof(pl->netdev), "%s", cp->netdev);
		else
			netdev_from_subnet(cp, pl->netdev, sizeof(pl->netdev));
		link = cp->netdev[0] || pl->netdev[0] ? link_state(d, pl->netdev) : -1;
		if (link != pl->link)
			td_log(LOG_INFO, "plane %s: link %s %s", cp->name,
			       pl->netdev[0] ? pl->netdev : "(none in the subnet)", td_link_str(link));
		pl->link = link;
		observe(d, p);
	}
	health_rearm(d);
}

static void health_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
	struct td *d = w->data;

	(void)loop;
	(void)revents;
	for (unsigned p = 0; p < d->pol.nplanes; p++)
		if (tr_ctl_health_tick(&d->plane[p].health, tr_now_ns()))
			td_plane_health_changed(d, (int)p);
	health_rearm(d);
}

/* ---- netlink ----------------------------------------------------------------*/
static void nl_change(struct nl_cache *cache, struct nl_object *obj, int action, void *arg)
{
	(void)cache;
	(void)obj;
	(void)action;
	(void)arg;
}

static void nl_cb(struct ev_loop *loop, ev_io *w, int revents)
{
	struct td *d = w->data;

	(void)loop;
	(void)revents;
	nl_cache_mngr_data_ready(d->nl_mngr);
	links_eval(d);
}

static void netlink_close(struct td *d)
{
	if (d->nl_mngr) {
		ev_io_stop(d->loop, &d->nl_w);
		nl_cache_mngr_free(d->nl_mngr);
	}
	if (d->nl_query)
		nl_socket_free(d->nl_query);
	d->nl_mngr = NULL;
	d->nl_links = NULL;
	d->nl_query = NULL;
}

static int netlink_open(struct td *d)
{
	int err = nl_cache_mngr_alloc(NULL, NETLINK_ROUTE, NL_AUTO_PROVIDE, &d->nl_mngr);

	if (!err)
		err = nl_cache_mngr_add(d->nl_mngr, "route/link", nl_change, d, &d->nl_links);
	d->nl_query = err ? NULL : nl_socket_alloc();
	if (!err && !d->nl_query)
		err = -NLE_NOMEM;
	if (!err)
		err = nl_connect(d->nl_query, NETLINK_ROUTE);
	if (err) {
		td_log(LOG_ERR, "netlink: %s: link states unknown", nl_geterror(err));
		netlink_close(d);
		return -EIO;
	}
	ev_io_init(&d->nl_w, nl_cb, nl_cache_mngr_get_fd(d->nl_mngr), EV_READ);
	d->nl_w.data = d;
	ev_io_start(d->loop, &d->nl_w);
	return 0;
}

/* ---- verbs ------------------------------------------------------------------*/
/* Port events of the plane's device: the watcher's data is the plane. */
static void async_cb(struct ev_loop *loop, ev_io *w, int revents)
{
	struct td_plane *pl = w->data;
	struct td *d = pl->d;
	struct ibv_async_event ev;
	int p = (int)(pl - d->plane);

	(void)loop;
	(void)revents;
	while (ibv_get_async_event(pl->dev, &ev) == 0) {
		int mine = ev.element.port_num == (int)d->conf.plane[p].port;

		if (mine && ev.event_type == IBV_EVENT_PORT_ACTIVE)
			pl->port_active = 1;
		else if (mine && ev.event_type == IBV_EVENT_PORT_ERR)
			pl->port_active = 0;
		ibv_ack_async_event(&ev);
	}
	observe(d, p);
	health_rearm(d);
}

static void device_open(struct td *d, int p, struct ibv_device **list, int n)
{
	const struct tr_ctl_conf_plane *cp = &d->conf.plane[p];
	struct td_plane *pl = &d->plane[p];
	struct ibv_port_attr pa;

	pl->port_active = -1;
	for (int i = 0; i < n && !pl->dev; i++)
		if (!strcmp(ibv_get_device_name(list[i]), cp->device))
			pl->dev = ibv_open_device(list[i]);
	if (!pl->dev) {
		td_log(LOG_WARNING, "plane %s: device %s missing: its port is not watched",
		       cp->name, cp->device);
		return;
	}
	if (ibv_query_port(pl->dev, (uint8_t)cp->port, &pa) == 0)
		pl->port_active = pa.state == IBV_PORT_ACTIVE;
	fcntl(pl->dev->async_fd, F_SETFL, fcntl(pl->dev->async_fd, F_GETFL) | O_NONBLOCK);
	ev_io_init(&pl->async_w, async_cb, pl->dev->async_fd, EV_READ);
	pl->async_w.data = pl;
	ev_io_start(d->loop, &pl->async_w);
}

static void devices_open(struct td *d)
{
	int n = 0;
	struct ibv_device **list = ibv_get_device_list(&n);

	for (int p = 0; p < d->conf.nplanes; p++)
		device_open(d, p, list, list ? n : 0);
	if (list)
		ibv_free_device_list(list);
}

static void devices_close(struct td *d)
{
	for (int p = 0; p < TRIAD_MAX_PLANES; p++) {
		struct td_plane *pl = &d->plane[p];

		if (!pl->dev)
			continue;
		ev_io_stop(d->loop, &pl->async_w);
		ibv_close_device(pl->dev);
		pl->dev = NULL;
	}
}

/* ---- port counters -------------------------------------------------------------*/
static void read_counters_dir(struct td_plane *pl, const char *dir)
{
	DIR *dh = opendir(dir);
	struct dirent *de;

	if (!dh)
		return;
	while ((de = readdir(dh)) && pl->nctr < TD_MAX_COUNTERS) {
		char path[512], buf[32];
		unsigned long long v;
		FILE *f;

		if (de->d_name[0] == '.' || strlen(de->d_name) >= sizeof(pl->ctr[0].name))
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
		f = fopen(path, "r");
		if (!f)
			continue;
		if (fgets(buf, sizeof(buf), f) && sscanf(buf, "%llu", &v) == 1) {
			enum tr_ctl_dgr_kind k = tr_ctl_dgr_counter_kind(de->d_name);

			snprintf(pl->ctr[pl->nctr].name, sizeof(pl->ctr[0].name), "%s", de->d_name);
			pl->ctr[pl->nctr++].value = v;
			pl->pkts += k == TR_CTL_DGR_PKTS ? v : 0;
			pl->errs += k == TR_CTL_DGR_ERRS ? v : 0;
		}
		fclose(f);
	}
	closedir(dh);
}

static void counters_read(struct td *d)
{
	for (int p = 0; p < d->conf.nplanes; p++) {
		const struct tr_ctl_conf_plane *cp = &d->conf.plane[p];
		char dir[256];

		d->plane[p].nctr = 0;
		d->plane[p].pkts = d->plane[p].errs = 0;
		d->plane[p].have_totals = d->plane[p].dev != NULL;
		if (!d->plane[p].dev)
			continue;
		snprintf(dir, sizeof(dir), "/sys/class/infiniband/%s/ports/%u/hw_counters",
			 cp->device, cp->port);
		read_counters_dir(&d->plane[p], dir);
		snprintf(dir, sizeof(dir), "/sys/class/infiniband/%s/ports/%u/counters",
			 cp->device, cp->port);
		read_counters_dir(&d->plane[p], dir);
	}
}

static void counters_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
	(void)loop;
	(void)revents;
	counters_read(w->data);
	td_assess(w->data);
}

/* ---- set-up ------------------------------------------------------------------*/
int td_monitor_open(struct td *d)
{
	uint64_t now = tr_now_ns();

	for (int p = 0; p < TRIAD_MAX_PLANES; p++) {
		d->plane[p].d = d;
		tr_ctl_health_init(&d->plane[p].health, d->conf.debounce_down_ms,
				   d->conf.debounce_up_ms, now);
		d->plane[p].link = -2;
		tr_ctl_dgr_init(&d->plane[p].dgr, &d->conf.health);
	}
	ev_init(&d->health_w, health_cb);
	d->health_w.data = d;
	ev_init(&d->counters_w, counters_cb);
	d->counters_w.data = d;
	netlink_open(d); /* without it the daemon still serves drains */
	td_monitor_refresh(d);
	return 0;
}

void td_monitor_refresh(struct td *d)
{
	devices_close(d);
	devices_open(d);
	for (int p = 0; p < d->conf.nplanes; p++) {
		d->plane[p].health.down_ns = (uint64_t)d->conf.debounce_down_ms * 1000000u;
		d->plane[p].health.up_ns = (uint64_t)d->conf.debounce_up_ms * 1000000u;
	}
	links_eval(d);
	counters_read(d);
	d->counters_w.repeat = d->conf.counters_ms * 1e-3;
	ev_timer_again(d->loop, &d->counters_w);
}

void td_monitor_close(struct td *d)
{
	devices_close(d);
	ev_timer_stop(d->loop, &d->health_w);
	ev_timer_stop(d->loop, &d->counters_w);
	netlink_close(d);
}
