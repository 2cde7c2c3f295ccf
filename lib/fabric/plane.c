/* Planes: one local device/port with an address, its PD, CQs and listener;
 * completion polling, CQ arming and device (async) events. */
#include <arpa/inet.h>
#include <endian.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>

#include "base/log.h"
#include "fabric/internal.h"
#include "fabric/wc.h"

static int set_nonblock(int fd)
{
	int fl = fcntl(fd, F_GETFL);

	return fl < 0 || fcntl(fd, F_SETFL, fl | O_NONBLOCK) < 0 ? -errno : 0;
}

int tr_fab_open(const struct tr_fab_ops *ops, void *arg, const struct tr_fab_cfg *cfg,
		struct tr_fab **fab_p)
{
	struct tr_fab *fab = calloc(1, sizeof(*fab));
	int ret;

	if (!fab)
		return -ENOMEM;
	fab->ops = ops;
	fab->arg = arg;
	fab->cfg = *cfg;
	fab->cm_chan = rdma_create_event_channel();
	if (!fab->cm_chan) {
		ret = -errno;
		tr_error("cannot create the rdma_cm event channel: %m");
		free(fab);
		return ret;
	}
	ret = set_nonblock(fab->cm_chan->fd);
	if (ret) {
		tr_error("rdma_cm channel: %s", strerror(-ret));
		tr_fab_close(fab);
		return ret;
	}
	*fab_p = fab;
	return 0;
}

int tr_fab_cm_fd(const struct tr_fab *fab)
{
	return fab->cm_chan->fd;
}

int tr_fab_plane_port_up(const struct tr_fab *fab, int index)
{
	return fab->plane[index].port_up;
}

int tr_fab_plane_cq_fd(const struct tr_fab *fab, int index)
{
	return fab->plane[index].chan->fd;
}

int tr_fab_plane_async_fd(const struct tr_fab *fab, int index)
{
	const struct tr_fab_plane *pl = &fab->plane[index];

	return pl->owns_async ? pl->verbs->async_fd : -1;
}

/* A resource that cannot be released is still in use: a leak to report. */
static void check_release(const struct tr_fab_plane *pl, const char *what, int ret)
{
	if (ret)
		tr_warn("plane %d: %s: %s", pl->index, what, strerror(ret < 0 ? errno : ret));
}

static void plane_close(struct tr_fab_plane *pl)
{
	if (pl->cq)
		check_release(pl, "ibv_destroy_cq", ibv_destroy_cq(pl->cq));
	if (pl->scq)
		check_release(pl, "ibv_destroy_cq", ibv_destroy_cq(pl->scq));
	if (pl->chan)
		check_release(pl, "ibv_destroy_comp_channel", ibv_destroy_comp_channel(pl->chan));
	if (pl->pd)
		check_release(pl, "ibv_dealloc_pd", ibv_dealloc_pd(pl->pd));
	if (pl->listen_id)
		check_release(pl, "rdma_destroy_id", rdma_destroy_id(pl->listen_id));
	memset(pl, 0, sizeof(*pl));
}

void tr_fab_close(struct tr_fab *fab)
{
	if (!fab)
		return;
	for (int i = 0; i < TRIAD_MAX_PLANES; i++)
		if (fab->plane[i].fab)
			plane_close(&fab->plane[i]);
	if (fab->cm_chan)
		rdma_destroy_event_channel(fab->cm_chan);
	free(fab);
}

int tr_fab_plane_open(struct tr_fab *fab, int index, struct in_addr addr, uint16_t port)
{
	struct tr_fab_plane *pl = &fab->plane[index];
	struct ibv_device_attr dattr;
	struct ibv_port_attr pattr;
	char abuf[INET_ADDRSTRLEN];
	int cqe, ret, i;

	memset(pl, 0, sizeof(*pl));
	pl->fab = fab;
	pl->index = index;
	pl->addr.sin_family = AF_INET;
	pl->addr.sin_addr = addr;
	pl->addr.sin_port = htons(port);
	inet_ntop(AF_INET, &addr, abuf, sizeof(abuf));

	if (rdma_create_id(fab->cm_chan, &pl->listen_id, pl, RDMA_PS_TCP)) {
		ret = -errno;
		tr_error("plane %d: rdma_create_id: %m", index);
		pl->listen_id = NULL;
		goto err;
	}
	if (rdma_bind_addr(pl->listen_id, (struct sockaddr *)&pl->addr)) {
		ret = -errno;
		tr_error("plane %d: cannot bind %s:%u: %m (is it this host's address?)", index,
			 abuf, port);
		goto err;
	}
	if (!pl->listen_id->verbs) {
		tr_error("plane %d: address %s is not on an RDMA device", index, abuf);
		ret = -ENODEV;
		goto err;
	}
	pl->verbs = pl->listen_id->verbs;
	pl->port_num = pl->listen_id->port_num;
	snprintf(pl->devname, sizeof(pl->devname), "%s", ibv_get_device_name(pl->verbs->device));
	if (rdma_listen(pl->listen_id, 64)) {
		ret = -errno;
		tr_error("plane %d: rdma_listen on %s:%u: %m", index, abuf, port);
		goto err;
	}
	ret = ibv_query_device(pl->verbs, &dattr);
	if (!ret)
		ret = ibv_query_port(pl->verbs, pl->port_num, &pattr);
	if (ret) {
		tr_error("plane %d: cannot query %s: %s", index, pl->devname, strerror(ret));
		ret = -ret;
		goto err;
	}
	pl->port_up = pattr.state == IBV_PORT_ACTIVE;
	pl->max_rd_atom = dattr.max_qp_rd_atom < 16 ? dattr.max_qp_rd_atom : 16;
	pl->max_init_rd_atom = dattr.max_qp_init_rd_atom < 16 ? dattr.max_qp_init_rd_atom : 16;
	pl->read_check = dattr.vendor_id == RXE_VENDOR_ID;

	pl->pd = ibv_alloc_pd(pl->verbs);
	if (!pl->pd) {
		ret = -ENOMEM;
		tr_error("plane %d: ibv_alloc_pd on %s: %m", index, pl->devname);
		goto err;
	}
	pl->chan = ibv_create_comp_channel(pl->verbs);
	if (!pl->chan) {
		ret = -ENOMEM;
		tr_error("plane %d: ibv_create_comp_channel on %s: %m", index, pl->devname);
		goto err;
	}
	cqe = fab->cfg.cqe < dattr.max_cqe ? fab->cfg.cqe : dattr.max_cqe;
	pl->cq = ibv_create_cq(pl->verbs, cqe, pl, pl->chan, 0);
	if (pl->cq)
		pl->scq = ibv_create_cq(pl->verbs, cqe, pl, pl->chan, 0);
	if (!pl->cq || !pl->scq) {
		ret = -ENOMEM;
		tr_error("plane %d: ibv_create_cq(%d) on %s: %m", index, cqe, pl->devname);
		goto err;
	}
	ret = set_nonblock(pl->chan->fd);
	if (ret) {
		tr_error("plane %d: completion channel: %s", index, strerror(-ret));
		goto err;
	}
	/* One async watcher per device, however many planes share it. */
	pl->owns_async = 1;
	for (i = 0; i < index; i++)
		if (fab->plane[i].verbs == pl->verbs)
			pl->owns_async = 0;
	if (pl->owns_async && (ret = set_nonblock(pl->verbs->async_fd))) {
		tr_error("plane %d: async fd: %s", index, strerror(-ret));
		goto err;
	}
	tr_fab_plane_arm(fab, index, TR_FAB_CQ_RECV | TR_FAB_CQ_SEND);
	pl->open = 1;
	tr_info("plane %d: %s port %u at %s:%u, port %s", index, pl->devname, pl->port_num,
		abuf, port, pl->port_up ? "up" : "DOWN");
	return 0;
err:
	plane_close(pl);
	return ret;
}

/* ---- memory -------------------------------------------------------------------*/
struct tr_mr *tr_fab_mr_reg(struct tr_fab *fab, int plane, void *addr, size_t len,
			    unsigned access)
{
	struct tr_fab_plane *pl = &fab->plane[plane];
	struct tr_mr *mr = malloc(sizeof(*mr));
	int acc = 0;

	if (!mr)
		return NULL;
	if (access & TR_MR_LOCAL_WRITE)
		acc |= IBV_ACCESS_LOCAL_WRITE;
	if (access & TR_MR_REMOTE_READ)
		acc |= IBV_ACCESS_REMOTE_READ;
	if (access & TR_MR_REMOTE_WRITE)
		acc |= IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_LOCAL_WRITE;
	mr->mr = ibv_reg_mr(pl->pd, addr, len, acc);
	if (!mr->mr) {
		tr_error("plane %d: ibv_reg_mr(%zu bytes) on %s: %m", plane, len, pl->devname);
		free(mr);
		return NULL;
	}
	return mr;
}

void tr_fab_mr_dereg(struct tr_mr *mr)
{
	int ret;

	if (!mr)
		return;
	ret = ibv_dereg_mr(mr->mr);
	if (ret)
		tr_warn("ibv_dereg_mr: %s", strerror(ret));
	free(mr);
}

uint32_t tr_fab_mr_rkey(const struct tr_mr *mr)
{
	return mr->mr->rkey;
}

/* ---- completions --------------------------------------------------------------*/
#define POLL_BATCH 32 /* completions taken per ibv_poll_cq */

/* Up to POLL_BATCH completions of cq into wc: how many (0 on an error,
 * which is logged). */
static int take(struct tr_fab_plane *pl, struct ibv_cq *cq, struct ibv_wc *wc)
{
	int n = ibv_poll_cq(cq, POLL_BATCH, wc);

	if (n < 0) {
		tr_error("plane %d: ibv_poll_cq failed (%d)", pl->index, n);
		return 0;
	}
	return n;
}

/* Delivers the n completions in wc, then polls on while the CQ gives full
 * batches.  Kept apart from poll_cq, not inlined: an empty poll (most of
 * them) then returns without saving the registers this loop needs. */
static __attribute__((noinline)) int deliver(struct tr_fab_plane *pl, struct ibv_cq *cq,
					     void (*fn)(void *, const struct tr_fab_wc *),
					     struct ibv_wc *wc, int n)
{
	int i, total = 0;

	for (;;) {
		for (i = 0; i < n; i++) {
			struct tr_fab_wc w = {
				.cookie = wc[i].wr_id,
				.len = wc[i].byte_len,
				.why = wc[i].status ? ibv_wc_status_str(wc[i].status) : NULL,
				.qp_num = wc[i].qp_num,
				.has_imm = !!(wc[i].wc_flags & IBV_WC_WITH_IMM),
				.imm = be32toh(wc[i].imm_data),
			};

			tr_fab_wc_classify(wc[i].status, &w);
			fn(pl->fab->arg, &w);
		}
		total += n;
		if (n < POLL_BATCH || (n = take(pl, cq, wc)) == 0)
			return total;
	}
}

static int poll_cq(struct tr_fab_plane *pl, struct ibv_cq *cq,
		   void (*fn)(void *, const struct tr_fab_wc *))
{
	struct ibv_wc wc[POLL_BATCH];
	int n = take(pl, cq, wc);

	return n ? deliver(pl, cq, fn, wc, n) : 0;
}

int tr_fab_plane_poll(struct tr_fab *fab, int index)
{
	struct tr_fab_plane *pl = &fab->plane[index];

	if (!pl->open)
		return 0;
	/* Our own completions first: a WRITE's completion, then the answer
	 * that it made possible, as they happened. */
	return poll_cq(pl, pl->scq, fab->ops->on_send) + poll_cq(pl, pl->cq, fab->ops->on_recv);
}

int tr_fab_plane_poll_send(struct tr_fab *fab, int index)
{
	struct tr_fab_plane *pl = &fab->plane[index];

	return pl->open ? poll_cq(pl, pl->scq, fab->ops->on_send) : 0;
}

unsigned tr_fab_plane_events(struct tr_fab *fab, int index)
{
	struct tr_fab_plane *pl = &fab->plane[index];
	unsigned nev = 0, nsev = 0, which = 0;
	struct ibv_cq *cq;
	void *cq_ctx;

	while (ibv_get_cq_event(pl->chan, &cq, &cq_ctx) == 0) {
		if (cq == pl->scq)
			nsev++;
		else
			nev++;
	}
	if (nev) {
		ibv_ack_cq_events(pl->cq, nev);
		pl->armed = 0;
		which |= TR_FAB_CQ_RECV;
	}
	if (nsev) {
		ibv_ack_cq_events(pl->scq, nsev);
		pl->sarmed = 0;
		which |= TR_FAB_CQ_SEND;
	}
	return which;
}

static void arm(struct tr_fab_plane *pl, struct ibv_cq *cq, int *armed)
{
	int ret;

	if (*armed)
		return;
	ret = ibv_req_notify_cq(cq, 0);
	if (ret)
		tr_error("plane %d: ibv_req_notify_cq: %s", pl->index, strerror(ret));
	else
		*armed = 1;
}

void tr_fab_plane_arm(struct tr_fab *fab, int index, unsigned which)
{
	struct tr_fab_plane *pl = &fab->plane[index];

	if (!pl->cq)
		return;
	if (which & TR_FAB_CQ_RECV)
		arm(pl, pl->cq, &pl->armed);
	if (which & TR_FAB_CQ_SEND)
		arm(pl, pl->scq, &pl->sarmed);
}

void tr_fab_async_dispatch(struct tr_fab *fab, int index)
{
	struct tr_fab_plane *pl = &fab->plane[index];
	struct ibv_async_event ev;

	while (ibv_get_async_event(pl->verbs, &ev) == 0) {
		enum ibv_event_type type = ev.event_type;
		int port = (type == IBV_EVENT_PORT_ACTIVE || type == IBV_EVENT_PORT_ERR)
				   ? (int)ev.element.port_num : -1;

		ibv_ack_async_event(&ev);
		if (port < 0) {
			tr_info("%s: async event %s", pl->devname, ibv_event_type_str(type));
			continue;
		}
		for (int i = 0; i < TRIAD_MAX_PLANES; i++) {
			struct tr_fab_plane *p = &fab->plane[i];

			if (!p->open || p->verbs != pl->verbs || port != p->port_num)
				continue;
			p->port_up = type == IBV_EVENT_PORT_ACTIVE;
			tr_warn("plane %d: %s port %u %s", i, p->devname, p->port_num,
				p->port_up ? "up" : "DOWN");
			fab->ops->on_port(fab->arg, i, p->port_up);
		}
	}
}
