/* The host's RDMA devices and the IPv4 address of each port, for a rank
 * that learns its planes from TRIAD_DEVICES instead of a world file.  The
 * address is read from the port's GID table, where RoCE (and rxe) keep an
 * IPv4-mapped GID (::ffff:a.b.c.d) for every address of the netdev. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "base/log.h"
#include "fabric/internal.h"

static int gid_ipv4(const union ibv_gid *g, struct in_addr *addr)
{
	static const uint8_t prefix[12] = { 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff };

	if (memcmp(g->raw, prefix, sizeof(prefix)))
		return 0;
	memcpy(&addr->s_addr, g->raw + 12, 4);
	return addr->s_addr != INADDR_ANY;
}

/* The first IPv4 address of a port's GID table; 0 when it has none. */
static int port_ipv4(struct ibv_context *verbs, int port, int gid_len, struct in_addr *addr)
{
	union ibv_gid gid;

	for (int i = 0; i < gid_len; i++)
		if (!ibv_query_gid(verbs, (uint8_t)port, i, &gid) && gid_ipv4(&gid, addr))
			return 1;
	return 0;
}

static int device_ports(struct ibv_device *dev, struct tr_fab_dev *out, int n, int max)
{
	struct ibv_context *verbs = ibv_open_device(dev);
	struct ibv_device_attr dattr;

	if (!verbs) {
		tr_debug("%s: cannot open: %m", ibv_get_device_name(dev));
		return n;
	}
	if (ibv_query_device(verbs, &dattr)) {
		ibv_close_device(verbs);
		return n;
	}
	for (int port = 1; port <= dattr.phys_port_cnt && n < max; port++) {
		struct ibv_port_attr pattr;
		struct tr_fab_dev *d = &out[n];

		if (ibv_query_port(verbs, (uint8_t)port, &pattr) ||
		    !port_ipv4(verbs, port, pattr.gid_tbl_len, &d->addr))
			continue;
		snprintf(d->name, sizeof(d->name), "%s", ibv_get_device_name(dev));
		d->port = port;
		d->active = pattr.state == IBV_PORT_ACTIVE;
		n++;
	}
	ibv_close_device(verbs);
	return n;
}

int tr_fab_devices(struct tr_fab_dev *out, int max)
{
	int ndev, n = 0;
	struct ibv_device **list = ibv_get_device_list(&ndev);

	if (!list) {
		int ret = errno ? -errno : -ENODEV;

		tr_error("ibv_get_device_list: %s", strerror(-ret));
		return ret;
	}
	for (int i = 0; i < ndev && n < max; i++)
		n = device_ports(list[i], out, n, max);
	ibv_free_device_list(list);
	return n;
}
