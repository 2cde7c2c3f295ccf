/* Planes: one local device/port with an address, its PD, CQ and listener;
 * completion polling and device (async) events. */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <string.h>
#include <time.h>

#include "core/ctx.h"
#include "core/log.h"
#include "fabric/fabric.h"
#include "fabric/internal.h"

static int set_nonblock(int fd)
{
	int fl = fcntl(fd, F_GETFL);

	return fl < 0 || fcntl(fd, F_SETFL, fl | O_NONBLOCK) < 0 ? -errno : 0;
}

int tr_plane_open(struct triad_ctx *ctx, struct tr_plane *pl, int index,
		  struct in_addr addr, uint16_t port)
{
	struct ibv_device_attr dattr;
	struct ibv_port_attr pattr;
	char abuf[INET_ADDRSTRLEN];
	int cqe, ret, i;

	memset(pl, 0, sizeof(*pl));
	pl->ctx = ctx;
	pl->index = index;
	pl->addr.sin_family = AF_INET;
	pl->addr.sin_addr = addr;
	pl->addr.sin_port = htons(port);
	inet_ntop(AF_INET, &addr, abuf, sizeof(abuf));

	if (rdma_create_id(ctx->cm_chan, &pl->listen_id, pl, RDMA_PS_TCP)) {
		ret = -errno;
		tr_error("plane %d: rdma_create_id: %m", index);
		return ret;
	}
	if (rdma_bind_addr(pl->listen_id, (struct sockaddr *)&pl->addr)) {
		ret = -errno;
		tr_error("plane %d: cannot bind %s:%u: %m (is it this host's address?)",
			 index, abuf, port);
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
	if (ibv_query_device(pl->verbs, &dattr) || ibv_query_port(pl->verbs, pl->port_num, &pattr)) {
		ret = -EIO;
		tr_error("plane %d: cannot query %s: %m", index, pl->devname);
		goto err;
	}
	pl->port_up = pattr.state == IBV_PORT_ACTIVE;
	pl->max_rd_atom = dattr.max_qp_rd_atom < 16 ? dattr.max_qp_rd_atom : 16;
	pl->max_init_rd_atom = dattr.max_qp_init_rd_atom < 16 ? dattr.max_qp_init_rd_atom : 16;

	pl->pd = ibv_alloc_pd(pl->verbs);
	pl->chan = ibv_create_comp_channel(pl->verbs);
	if (!pl->pd || !pl->chan) {
		ret = -ENOMEM;
		tr_error("plane %d: cannot allocate PD or channel on %s: %m", index, pl->devname);
		goto err;
	}
	cqe = (ctx->cfg.sq_depth + ctx->cfg.slots + 3) * (ctx->size > 1 ? ctx->size - 1 : 1) + 64;
	if (cqe > dattr.max_cqe)
		cqe = dattr.max_cqe;
	pl->cq = ibv_create_cq(pl->verbs, cqe, pl, pl->chan, 0);
	pl->scq = ibv_create_cq(pl->verbs, cqe, pl, pl->chan, 0);
	if (!pl->cq || !pl->scq) {
		ret = -ENOMEM;
		tr_error("plane %d: ibv_create_cq(%d) on %s: %m", index, cqe, pl->devname);
		goto err;
	}
	pl->armed = pl->sarmed = 1;
	if (set_nonblock(pl->chan->fd) || ibv_req_notify_cq(pl->cq, 0) ||
	    ibv_req_notify_cq(pl->scq, 0)) {
		ret = -EIO;
		tr_error("plane %d: cannot arm the CQ: %m", index);
		goto err;
	}
	/* One async watcher per device, however many planes share it. */
	pl->owns_async = 1;
	for (i = 0; i < index; i++)
		if (ctx->plane[i].verbs == pl->verbs)
			pl->owns_async = 0;
	if (pl->owns_async && set_nonblock(pl->verbs->async_fd)) {
		ret = -EIO;
		tr_error("plane %d: async fd: %m", index);
		goto err;
	}
	ev_io_init(&pl->cq_w, tr_cq_cb, pl->chan->fd, EV_READ);
	pl->cq_w.data = pl;
	ev_io_start(ctx->loop, &pl->cq_w);
	if (pl->owns_async) {
		ev_io_init(&pl->async_w, tr_async_cb, pl->verbs->async_fd, EV_READ);
		pl->async_w.data = pl;
		ev_io_start(ctx->loop, &pl->async_w);
	}
	tr_info("plane %d: %s port %u at %s:%u, port %s", index, pl->devname, pl->port_num,
		abuf, port, pl->port_up ? "up" : "DOWN");
	return 0;
err:
	tr_plane_close(pl);
	return ret;
}

void tr_plane_close(struct tr_plane *pl)
{
	struct triad_ctx *ctx = pl->ctx;

	if (ctx && ctx->loop) {
		ev_io_stop(ctx->loop, &pl->cq_w);
		ev_io_stop(ctx->loop, &pl->async_w);
	}
	if (pl->cq)
		ibv_destroy_cq(pl->cq);
	if (pl->scq)
		ibv_destroy_cq(pl->scq);
	if (pl->chan)
		ibv_destroy_comp_channel(pl->chan);
	if (pl->pd)
		ibv_dealloc_pd(pl->pd);
	if (pl->listen_id)
		rdma_destroy_id(pl->listen_id);
	pl->cq = pl->scq = NULL;
	pl->chan = NULL;
	pl->pd = NULL;
	pl->listen_id = NULL;
	pl->verbs = NULL;
}

struct ibv_mr *tr_mr_reg(struct tr_plane *pl, void *addr, size_t len, int access)
{
	struct ibv_mr *mr = ibv_reg_mr(pl->pd, addr, len, access);

	if (!mr)
		tr_error("plane %d: ibv_reg_mr(%zu bytes) on %s: %m", pl->index, len, pl->devname);
	return mr;
}

void tr_mr_dereg(struct ibv_mr *mr)
{
	if (mr && ibv_dereg_mr(mr))
		tr_warn("ibv_dereg_mr: %m");
}

static enum triad_status wc_status(enum ibv_wc_status s)
{
	switch (s) {
	case IBV_WC_SUCCESS: return TRIAD_S_OK;
	case IBV_WC_REM_ACCESS_ERR:
	case IBV_WC_REM_INV_REQ_ERR: return TRIAD_S_REMOTE_ACCESS;
	case IBV_WC_RETRY_EXC_ERR:
	case IBV_WC_RNR_RETRY_EXC_ERR: return TRIAD_S_UNREACHABLE;
	case IBV_WC_WR_FLUSH_ERR: return TRIAD_S_UNREACHABLE; /* refined by the conn */
	default: return TRIAD_S_TRANSPORT;
	}
}

static void handle_wc(struct triad_ctx *ctx, const struct ibv_wc *wc)
{
	void *ptr = (void *)(uintptr_t)(wc->wr_id & ~(uint64_t)TR_WR_TAG_MASK);
	unsigned tag = (unsigned)(wc->wr_id & TR_WR_TAG_MASK);
	enum triad_status st = wc_status(wc->status);

	(void)ctx;
	switch (tag) {
	case TR_WR_RECV:
		tr_conn_on_recv(ptr, wc, st);
		break;
	case TR_WR_SEND:
		tr_conn_on_send(ptr, wc, st);
		break;
	case TR_WR_RMA:
		tr_conn_on_rma(ptr, wc, st);
		break;
	default:
		tr_error("completion with a bad wr_id 0x%llx", (unsigned long long)wc->wr_id);
	}
}

static int poll_cq(struct tr_plane *pl, struct ibv_cq *cq)
{
	struct ibv_wc wc[32];
	int n, i, total = 0;

	do {
		n = ibv_poll_cq(cq, 32, wc);
		if (n < 0) {
			tr_error("plane %d: ibv_poll_cq failed", pl->index);
			return total;
		}
		for (i = 0; i < n; i++)
			handle_wc(pl->ctx, &wc[i]);
		total += n;
	} while (n == 32);
	return total;
}

int tr_plane_poll(struct tr_plane *pl)
{
	if (!pl->cq)
		return 0;
	/* Our own completions first: a WRITE's completion, then the answer
	 * that it made possible, as they happened. */
	return poll_cq(pl, pl->scq) + poll_cq(pl, pl->cq);
}

/* CPU time this thread has used. */
static uint64_t thread_cpu_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

void tr_cq_cb(struct ev_loop *loop, ev_io *w, int revents)
{
	struct tr_plane *pl = w->data;
	struct triad_ctx *ctx = pl->ctx;
	struct ibv_cq *cq;
	void *cq_ctx;
	unsigned nev = 0, nsev = 0;

	(void)loop;
	(void)revents;
	pthread_mutex_lock(&ctx->lock);
	while (ibv_get_cq_event(pl->chan, &cq, &cq_ctx) == 0) {
		if (cq == pl->scq)
			nsev++;
		else
			nev++;
	}
	TR_EV(ctx, "cq_wake", pl->index, nev + 100 * nsev);
	if (nev) {
		ibv_ack_cq_events(pl->cq, nev);
		pl->armed = 0;
	}
	if (nsev) {
		ibv_ack_cq_events(pl->scq, nsev);
		pl->sarmed = 0;
	}
	if (nev || nsev) {
		/* While an application thread polls, it reaps the completions
		 * itself: leave events off rather than wake this thread for each
		 * one (tr_ctx_rearm_later re-arms once it stops). */
		if (!tr_ctx_app_polling(ctx))
			tr_plane_arm(pl, 0);
		else
			tr_ctx_rearm_later(ctx);
	}
	tr_progress(ctx);
	TR_EV(ctx, "cq_served", pl->index, 0);
	/* Serving a remote request usually brings a completion of our own or
	 * the next message within tens of microseconds (a copy's WRITE, the
	 * destination's answer): poll a little longer before sleeping, since a
	 * wake-up costs far more than that (TRIAD_BG_SPIN_US).  The budget is
	 * this thread's CPU time since it last found work, not wall time: on a
	 * CPU shared with computing threads the yields hand them the CPU, and
	 * what a fruitless spin takes from them stays TRIAD_BG_SPIN_US per
	 * wake-up.  (Counted in wall time, a broadcast root that kept finding
	 * a message now and then spun through most of the broadcast.) */
	if (ctx->cfg.bg_spin_us && !tr_ctx_app_polling(ctx)) {
		uint64_t budget = (uint64_t)ctx->cfg.bg_spin_us * 1000, from = thread_cpu_ns();

		while (thread_cpu_ns() - from < budget && !tr_ctx_app_polling(ctx)) {
			pthread_mutex_unlock(&ctx->lock);
			sched_yield();
			pthread_mutex_lock(&ctx->lock);
			if (tr_progress(ctx) > 0)
				from = thread_cpu_ns();
		}
		TR_EV(ctx, "bg_spin_end", pl->index, 0);
	}
	pthread_mutex_unlock(&ctx->lock);
}

/* Does anyone wait for a send completion on this plane? */
static int send_wanted(const struct tr_plane *pl)
{
	const struct triad_ctx *ctx = pl->ctx;

	for (int r = 0; ctx->peers && r < ctx->size; r++) {
		const struct tr_conn *c = &ctx->peers[r].conn[pl->index];

		if (r == ctx->rank || c->sq_posted == 0)
			continue;
		if (c->rma_posted || c->req_msgs || c->nqueued || !c->tx_free ||
		    c->bsm_linger || c->state == TR_CONN_DRAINING)
			return 1;
	}
	return 0;
}

void tr_plane_want_send(struct tr_plane *pl)
{
	/* An application thread that polls reaps it, and the re-arm timer
	 * turns events back on once it stops. */
	if (!pl->scq || pl->sarmed || tr_ctx_rearm_pending(pl->ctx))
		return;
	if (ibv_req_notify_cq(pl->scq, 0))
		tr_error("plane %d: ibv_req_notify_cq: %m", pl->index);
	else
		pl->sarmed = 1;
}

void tr_plane_arm(struct tr_plane *pl, int all)
{
	/* Armed before the caller polls, so nothing that lands after the poll
	 * is missed. */
	if (pl->cq && !pl->armed) {
		if (ibv_req_notify_cq(pl->cq, 0))
			tr_error("plane %d: ibv_req_notify_cq: %m", pl->index);
		else
			pl->armed = 1;
	}
	if (pl->scq && !pl->sarmed && (all || send_wanted(pl))) {
		if (ibv_req_notify_cq(pl->scq, 0))
			tr_error("plane %d: ibv_req_notify_cq: %m", pl->index);
		else
			pl->sarmed = 1;
	}
}

void tr_async_cb(struct ev_loop *loop, ev_io *w, int revents)
{
	struct tr_plane *pl = w->data;
	struct triad_ctx *ctx = pl->ctx;
	struct ibv_async_event ev;
	int i;

	(void)loop;
	(void)revents;
	pthread_mutex_lock(&ctx->lock);
	while (ibv_get_async_event(pl->verbs, &ev) == 0) {
		enum ibv_event_type type = ev.event_type;
		int port = (type == IBV_EVENT_PORT_ACTIVE || type == IBV_EVENT_PORT_ERR)
				   ? ev.element.port_num : -1;

		ibv_ack_async_event(&ev);
		for (i = 0; i < ctx->nplanes; i++) {
			struct tr_plane *p = &ctx->plane[i];

			if (p->verbs != pl->verbs || port != p->port_num)
				continue;
			p->port_up = type == IBV_EVENT_PORT_ACTIVE;
			tr_warn("plane %d: %s port %u %s", i, p->devname, p->port_num,
				p->port_up ? "up" : "DOWN");
		}
		if (port < 0)
			tr_info("%s: async event %s", pl->devname, ibv_event_type_str(type));
	}
	tr_ctx_signal(ctx);
	pthread_mutex_unlock(&ctx->lock);
}
