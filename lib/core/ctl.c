/* The node daemon's client: this process as one of triadd's clients.
 *
 * At triad_init the context connects to triadd's socket (TRIAD_DAEMON;
 * "off": never), says HELLO and hands over its counters region (a memfd
 * of its own, sealed against shrinking so that the daemon's mapping of it
 * stays whole).  The daemon answers WELCOME with the policy table's
 * descriptor, read-only, and NOTIFY whenever the table changes.  Plane
 * states are applied through the ordinary drain and restore
 * (lib/core/drain.c), at message boundaries like any drain, and a plane
 * the table calls faulty is failed too (triad_plane_fail); the counters
 * region says, per plane, whether this process has left it and what it
 * still has in flight there, which is how the daemon knows a drain is
 * complete.
 *
 * The table also carries knobs of the TRIAD_* registry by name
 * (lib/core/config.h): each is applied through the registry, as the
 * environment is, and a variable the environment set is never changed.
 * A change takes effect when the registry says: the adaptive choice's
 * at once (its engine's configuration is rebuilt here), the order for
 * messages received from then on (am.c reads it per message), the flow
 * control's needs at the next connection (chan.c reads them there).  A
 * knob the daemon stops publishing goes back to its default.  After every
 * change, and once per connection, this process reports what it has of
 * each knob triadd may set and where it came from (APPLIED), for
 * triadctl config.
 *
 * Without a daemon the library works as it always did (every plane
 * healthy) and tries again with a growing backoff, so that a daemon
 * started or restarted later picks the process up.  When the daemon goes
 * away the planes and knobs stay as they were: a running job is not disturbed.
 * The policy a restarted daemon publishes wins.
 *
 * Everything here runs on the progress thread with the context's lock,
 * but ctl_setup, which runs before that thread starts. */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "base/log.h"
#include "core/config.h"
#include "core/ctl.h"
#include "core/peer.h"
#include "ctl/io.h"
#include "ctl/table.h"

#define RETRY_MIN_S 0.1
#define RETRY_MAX_S 5.0
#define COUNT_FAST_S 0.005 /* while the daemon waits for this process */
#define COUNT_SLOW_S 1.0   /* bytes for triadctl stats */
#define SEND_TIMEOUT_MS 100

struct tr_ctl_client {
	struct triad_ctx *ctx;
	char path[sizeof(((struct sockaddr_un *)0)->sun_path)];
	int sock;
	ev_io io_w;
	ev_timer retry_w, count_w;
	double backoff;
	struct tr_ctl_rx *rx;
	int cfd;
	struct tr_ctl_counters *counters;
	const struct tr_ctl_table *table;
	size_t table_len;
	uint64_t gen;
	struct tr_ctl_policy pol;
	int have_pol;
	unsigned drained;    /* planes this client drained because the daemon asked */
	unsigned failed;     /* ... and failed (triad_plane_fail), the table saying faulty */
	int behind;	     /* a drain was refused (-EBUSY) or init is not done: try again soon */
	int warned_absent;
	uint64_t knobs_gen;  /* the generation whose knobs were applied (0: none yet) */
	int knobs_told;	     /* the daemon has this connection's APPLIED for knobs_gen */
};

_Static_assert((int)TR_CTL_SRC_DEFAULT == (int)TR_CONFIG_DEFAULT &&
		       (int)TR_CTL_SRC_DAEMON == (int)TR_CONFIG_DAEMON &&
		       (int)TR_CTL_SRC_ENV == (int)TR_CONFIG_ENV,
	       "a knob's source means the same in the table and the registry");

static int counters_open(struct tr_ctl_client *cl)
{
	size_t len = sizeof(*cl->counters);
	void *map;

	cl->cfd = memfd_create("triad-counters", MFD_CLOEXEC | MFD_ALLOW_SEALING);
	if (cl->cfd < 0)
		return -errno;
	if (ftruncate(cl->cfd, (off_t)len) ||
	    fcntl(cl->cfd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL))
		return -errno;
	map = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, cl->cfd, 0);
	if (map == MAP_FAILED)
		return -errno;
	cl->counters = map;
	tr_ctl_counters_init(cl->counters, (unsigned)cl->ctx->nplanes);
	return 0;
}

static void table_unmap(struct tr_ctl_client *cl)
{
	if (cl->table)
		munmap((void *)cl->table, cl->table_len);
	cl->table = NULL;
}

static void retry_later(struct tr_ctl_client *cl)
{
	ev_timer_stop(cl->ctx->loop, &cl->retry_w);
	ev_timer_set(&cl->retry_w, cl->backoff, 0.);
	ev_timer_start(cl->ctx->loop, &cl->retry_w);
	cl->backoff = cl->backoff * 2 > RETRY_MAX_S ? RETRY_MAX_S : cl->backoff * 2;
}

/* The daemon went away (or spoke nonsense): keep the planes as they are
 * and look for it again. */
static void disconnect(struct tr_ctl_client *cl, const char *why)
{
	tr_info("triadd %s: %s; planes stay as they are, reconnecting", cl->path, why);
	ev_io_stop(cl->ctx->loop, &cl->io_w);
	ev_timer_stop(cl->ctx->loop, &cl->count_w);
	close(cl->sock);
	cl->sock = -1;
	cl->knobs_told = 0;
	cl->knobs_gen = 0; /* the next daemon's knobs are applied whatever its generation */
	tr_ctl_rx_reset(cl->rx);
	table_unmap(cl);
	retry_later(cl);
}

/* ---- the counters region -----------------------------------------------------*/
static void counters_update(struct tr_ctl_client *cl)
{
	struct triad_ctx *ctx = cl->ctx;

	for (int p = 0; p < ctx->nplanes; p++) {
		struct triad_plane_info in = { .field_mask = TRIAD_PLANE_INFO_ALL };
		struct tr_ctl_cplane *e = &cl->counters->plane[p];
		uint64_t tx = 0, rx = 0;

		if (triad_plane_info(ctx, p, &in))
			continue;
		for (int r = 0; r < ctx->size; r++) {
			tx += ctx->peers[r].lane[p].stats.tx_bytes;
			rx += ctx->peers[r].lane[p].stats.rx_bytes;
		}
		atomic_store_explicit(&e->inflight,
				      in.msgs_inflight + in.msgs_queued + in.rma_inflight,
				      memory_order_relaxed);
		atomic_store_explicit(&e->switched, (ctx->drained >> p) & 1u, memory_order_relaxed);
		atomic_store_explicit(&e->tx_bytes, tx, memory_order_relaxed);
		atomic_store_explicit(&e->rx_bytes, rx, memory_order_relaxed);
	}
	/* Last: the daemon reads the fields above only after seeing it.  A
	 * plane whose drain had to wait simply reads not switched; before the
	 * connections are up nothing is applied yet. */
	atomic_store_explicit(&cl->counters->applied_gen, ctx->initialized ? cl->gen : 0,
			      memory_order_release);
}

static int policy_pending(const struct tr_ctl_policy *p)
{
	for (unsigned q = 0; q < p->nplanes; q++)
		if (p->plane[q].state == TR_CTL_SWITCH_PENDING ||
		    p->plane[q].state == TR_CTL_RESTORE_PENDING)
			return 1;
	return 0;
}

static void count_again(struct tr_ctl_client *cl)
{
	double want = cl->behind || (cl->have_pol && policy_pending(&cl->pol)) ? COUNT_FAST_S
									       : COUNT_SLOW_S;

	if (!ev_is_active(&cl->count_w) || cl->count_w.repeat != want) {
		cl->count_w.repeat = want;
		ev_timer_again(cl->ctx->loop, &cl->count_w);
	}
}

/* ---- the policy ----------------------------------------------------------------*/
/* One plane to where the table wants it: off (drained here) or on. */
static void apply_plane(struct tr_ctl_client *cl, int p, const struct tr_ctl_plane_pol *e)
{
	struct triad_ctx *ctx = cl->ctx;
	unsigned bit = 1u << p;
	int ret;

	if (tr_ctl_pstate_off(e->state) && !(cl->drained & bit)) {
		if (ctx->drained & bit)
			return; /* the application drained it itself: it is left already */
		ret = triad_plane_drain(ctx, p);
		if (ret) {
			tr_info("plane %d (%s): the daemon's drain waits: %s", p, e->name,
				strerror(-ret));
			cl->behind = 1;
			return;
		}
		cl->drained |= bit;
		tr_info("plane %d (%s): left as triadd asks (%s)", p, e->name,
			tr_ctl_reason_str(e->reason));
	}
	if (tr_ctl_pstate_off(e->state) && e->faulty && (cl->drained & bit) &&
	    !(cl->failed & bit)) {
		/* Broken: what is posted there is not waited for but done again
		 * on a live plane; the drain keeps the plane left once its
		 * connections are rebuilt, until the daemon restores it. */
		triad_plane_fail(ctx, p);
		cl->failed |= bit;
	} else if (!tr_ctl_pstate_off(e->state) && (cl->drained & bit)) {
		triad_plane_restore(ctx, p);
		cl->drained &= ~bit;
		cl->failed &= ~bit;
		tr_info("plane %d (%s): back in use as triadd asks", p, e->name);
	}
}

/* ---- the knobs -------------------------------------------------------------------*/
/* What changed in the configuration, carried out where the data path
 * does not read ctx->cfg itself. */
static void knobs_effect(struct triad_ctx *ctx, const struct tr_config *was)
{
	const struct tr_config *now = &ctx->cfg;

	if (now->adaptive != was->adaptive || now->adaptive_t != was->adaptive_t ||
	    now->adaptive_alpha != was->adaptive_alpha) {
		struct tr_choice_cfg want = ctx->choice;

		want.threshold = (uint32_t)now->adaptive_t;
		want.alpha_pct = (uint32_t)now->adaptive_alpha;
		want.rules = tr_ctx_choice_rules(now->adaptive);
		/* The registry's ranges are the engine's (as at triad_init). */
		if (tr_choice_cfg_init(&ctx->choice, &want))
			tr_error("adaptive choice T %d alpha %d%%: refused by the engine",
				 now->adaptive_t, now->adaptive_alpha);
	}
}

/* The generation's knobs through the registry. */
static void knobs_apply(struct tr_ctl_client *cl)
{
	struct triad_ctx *ctx = cl->ctx;
	struct tr_config_kv kv[TR_CTL_KNOBS];
	struct tr_config was = ctx->cfg;
	char err[300];

	for (unsigned k = 0; k < cl->pol.nknobs; k++)
		kv[k] = (struct tr_config_kv){ cl->pol.knob[k].name, cl->pol.knob[k].value };
	/* A triadd of another version may publish what this library does not
	 * know or take: said once per generation, the rest applied. */
	if (tr_config_apply_daemon(&ctx->cfg, kv, cl->pol.nknobs, err, sizeof(err)))
		tr_warn("triadd %s: %s", cl->path, err);
	knobs_effect(ctx, &was);
	for (int i = 0; i < TR_CONFIG_MAX_VARS; i++) {
		struct tr_config_var a, b;

		if (tr_config_var(&was, (size_t)i, &a) || tr_config_var(&ctx->cfg, (size_t)i, &b))
			break;
		if (strcmp(a.value, b.value) || a.src != b.src)
			tr_info("%s = %s (%s; was %s), takes effect %s", b.name, b.value,
				tr_config_src_str(b.src), a.value, tr_config_when_str(b.when));
	}
	cl->knobs_gen = cl->gen;
	cl->knobs_told = 0;
}

/* APPLIED: every knob triadd may set, as this process has it. */
static void knobs_tell(struct tr_ctl_client *cl)
{
	struct tr_ctl_msg m = { .type = TR_CTL_APPLIED };
	struct tr_config_var v;
	int ret;

	m.u.applied.gen = cl->knobs_gen;
	for (size_t i = 0; tr_config_var(&cl->ctx->cfg, i, &v) == 0; i++) {
		struct tr_ctl_knob *e = &m.u.applied.knob[m.u.applied.n];

		if (v.when == TR_CONFIG_AT_START || m.u.applied.n == TR_CTL_KNOBS ||
		    strlen(v.name) >= sizeof(e->name) || strlen(v.value) >= sizeof(e->value))
			continue;
		memcpy(e->name, v.name, strlen(v.name) + 1);
		memcpy(e->value, v.value, strlen(v.value) + 1);
		m.u.applied.src[m.u.applied.n++] = (uint8_t)v.src;
	}
	ret = tr_ctl_send(cl->sock, &m, -1, SEND_TIMEOUT_MS);
	if (ret)
		disconnect(cl, strerror(-ret));
	else
		cl->knobs_told = 1;
}

static void apply(struct tr_ctl_client *cl)
{
	struct triad_ctx *ctx = cl->ctx;
	struct tr_ctl_policy pol;
	uint64_t gen;
	int ret;

	if (cl->table) {
		ret = tr_ctl_table_read(cl->table, cl->table_len, &pol, &gen);
		if (!ret) {
			cl->pol = pol;
			cl->gen = gen;
			cl->have_pol = 1;
		} else if (ret != -EAGAIN) {
			disconnect(cl, "its policy table is not valid");
			return;
		}
	}
	if (cl->have_pol && cl->gen != cl->knobs_gen)
		knobs_apply(cl);
	if (cl->have_pol && cl->sock >= 0 && !cl->knobs_told) {
		knobs_tell(cl);
		if (cl->sock < 0)
			return;
	}
	for (int p = 0; cl->have_pol && p < ctx->nplanes; p++)
		ctx->plane_weight[p] = (unsigned)p < cl->pol.nplanes ? cl->pol.plane[p].weight : 0;
	cl->behind = !ctx->initialized; /* drains wait for the connections */
	for (int p = 0; cl->have_pol && ctx->initialized && p < ctx->nplanes &&
			(unsigned)p < cl->pol.nplanes;
	     p++)
		apply_plane(cl, p, &cl->pol.plane[p]);
	counters_update(cl);
	if (cl->sock >= 0)
		count_again(cl);
}

/* ---- the socket --------------------------------------------------------------*/
static int on_welcome(struct tr_ctl_client *cl, const struct tr_ctl_msg *m)
{
	int fd = tr_ctl_rx_take_fd(cl->rx);
	struct stat st;
	void *map;

	if (fd < 0 || m->u.welcome.status) {
		if (fd >= 0)
			close(fd);
		return m->u.welcome.status ? m->u.welcome.status : -EPROTO;
	}
	if (fstat(fd, &st) || (size_t)st.st_size < sizeof(struct tr_ctl_table) ||
	    m->u.welcome.table_size < sizeof(struct tr_ctl_table)) {
		close(fd);
		return -EPROTO;
	}
	map = mmap(NULL, sizeof(struct tr_ctl_table), PROT_READ, MAP_SHARED, fd, 0);
	close(fd);
	if (map == MAP_FAILED)
		return -errno;
	table_unmap(cl);
	cl->table = map;
	cl->table_len = sizeof(struct tr_ctl_table);
	cl->backoff = RETRY_MIN_S;
	tr_info("triadd %s: client %u, policy generation %llu", cl->path, m->u.welcome.client,
		(unsigned long long)m->u.welcome.gen);
	apply(cl);
	return 0;
}

static void io_cb(struct ev_loop *loop, ev_io *w, int revents)
{
	struct tr_ctl_client *cl = w->data;
	struct tr_ctl_msg m;
	int ret;

	(void)loop;
	(void)revents;
	tr_ctx_lock_progress(cl->ctx);
	ret = tr_ctl_rx_read(cl->sock, cl->rx);
	if (ret == 0 || (ret < 0 && ret != -EAGAIN)) {
		disconnect(cl, ret ? strerror(-ret) : "closed the connection");
		goto out;
	}
	while ((ret = tr_ctl_rx_next(cl->rx, &m)) > 0) {
		if (m.type == TR_CTL_WELCOME)
			ret = on_welcome(cl, &m);
		else if (m.type == TR_CTL_NOTIFY && cl->table)
			apply(cl);
		else
			ret = -EPROTO;
		if (ret < 0 || cl->sock < 0)
			break;
	}
	if (ret < 0 && cl->sock >= 0)
		disconnect(cl, strerror(-ret));
out:
	pthread_mutex_unlock(&cl->ctx->lock);
}

static int say_hello(struct tr_ctl_client *cl)
{
	struct tr_ctl_msg m = { .type = TR_CTL_HELLO };
	int ret;

	m.u.hello.pid = (uint32_t)getpid();
	m.u.hello.rank = cl->ctx->rank;
	m.u.hello.nplanes = (uint32_t)cl->ctx->nplanes;
	snprintf(m.u.hello.name, sizeof(m.u.hello.name), "%s", program_invocation_short_name);
	ret = tr_ctl_send(cl->sock, &m, -1, SEND_TIMEOUT_MS);
	if (ret)
		return ret;
	m = (struct tr_ctl_msg){ .type = TR_CTL_COUNTERS };
	m.u.counters.size = sizeof(*cl->counters);
	return tr_ctl_send(cl->sock, &m, cl->cfd, SEND_TIMEOUT_MS);
}

static int try_connect(struct tr_ctl_client *cl)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int ret;

	memcpy(sa.sun_path, cl->path, sizeof(sa.sun_path));
	cl->sock = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (cl->sock < 0)
		return -errno;
	if (connect(cl->sock, (struct sockaddr *)&sa, sizeof(sa)) == 0)
		ret = say_hello(cl);
	else
		ret = -errno;
	if (ret) {
		if (!cl->warned_absent++)
			tr_debug("no triadd at %s (%s): every plane in use; looking again later",
				 cl->path, strerror(-ret));
		close(cl->sock);
		cl->sock = -1;
		return ret;
	}
	ev_io_set(&cl->io_w, cl->sock, EV_READ);
	ev_io_start(cl->ctx->loop, &cl->io_w);
	return 0;
}

static void retry_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
	struct tr_ctl_client *cl = w->data;

	(void)loop;
	(void)revents;
	tr_ctx_lock_progress(cl->ctx);
	if (cl->sock < 0 && try_connect(cl))
		retry_later(cl);
	pthread_mutex_unlock(&cl->ctx->lock);
}

static void count_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
	struct tr_ctl_client *cl = w->data;

	(void)loop;
	(void)revents;
	tr_ctx_lock_progress(cl->ctx);
	apply(cl); /* re-reads the table too: a NOTIFY lost to a full socket is no loss */
	pthread_mutex_unlock(&cl->ctx->lock);
}

/* ---- set-up -----------------------------------------------------------------*/
static void client_free(struct tr_ctl_client *cl)
{
	if (cl->sock >= 0)
		close(cl->sock);
	table_unmap(cl);
	if (cl->counters)
		munmap(cl->counters, sizeof(*cl->counters));
	if (cl->cfd >= 0)
		close(cl->cfd);
	if (cl->rx)
		tr_ctl_rx_reset(cl->rx);
	free(cl->rx);
	free(cl);
}

int tr_ctl_setup(struct triad_ctx *ctx)
{
	struct tr_ctl_client *cl;
	int ret;

	if (!strcmp(ctx->cfg.daemon, "off"))
		return 0;
	if (strlen(ctx->cfg.daemon) >= sizeof(cl->path)) {
		tr_warn("TRIAD_DAEMON=%s: longer than a socket path may be; no triadd client",
			ctx->cfg.daemon);
		return 0;
	}
	cl = calloc(1, sizeof(*cl));
	if (!cl)
		return -ENOMEM;
	cl->ctx = ctx;
	cl->sock = cl->cfd = -1;
	cl->backoff = RETRY_MIN_S;
	memcpy(cl->path, ctx->cfg.daemon, strlen(ctx->cfg.daemon) + 1);
	cl->rx = malloc(sizeof(*cl->rx));
	ret = cl->rx ? counters_open(cl) : -ENOMEM;
	if (ret) {
		/* The daemon is optional: without it the job runs as always. */
		tr_warn("triadd client disabled: %s", strerror(-ret));
		client_free(cl);
		return 0;
	}
	tr_ctl_rx_init(cl->rx);
	ev_io_init(&cl->io_w, io_cb, -1, EV_READ);
	ev_timer_init(&cl->retry_w, retry_cb, 0., 0.);
	ev_init(&cl->count_w, count_cb);
	cl->io_w.data = cl->retry_w.data = cl->count_w.data = cl;
	ctx->ctl = cl;
	if (try_connect(cl))
		retry_later(cl);
	return 0;
}

void tr_ctl_teardown(struct triad_ctx *ctx)
{
	struct tr_ctl_client *cl = ctx->ctl;

	if (!cl)
		return;
	ev_io_stop(ctx->loop, &cl->io_w);
	ev_timer_stop(ctx->loop, &cl->retry_w);
	ev_timer_stop(ctx->loop, &cl->count_w);
	client_free(cl);
	ctx->ctl = NULL;
}
