/* triadd: the node's control daemon for triad's planes (docs/daemon.md).
 *
 *   triadd [-c FILE] [-f] [--check-config]
 *
 * Loads the configuration (every error "FILE:LINE: message"; FILE made
 * absolute first, so that a detached daemon reloads it), opens the
 * policy table and the socket, watches the planes' health and serves the
 * triad processes of the node and triadctl, in one libev loop.  SIGTERM
 * and SIGINT end it cleanly (socket unlinked, table freed); SIGHUP reloads
 * the file, and a file with an error leaves the running configuration as
 * it was. */
#include <errno.h>
#include <getopt.h>
#include <grp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <syslog.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include "triadd.h"

#define DEFAULT_CONF "/etc/triad/triadd.conf"

static int use_syslog;

void td_log(int prio, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	if (use_syslog) {
		vsyslog(prio, fmt, ap);
	} else {
		fprintf(stderr, "triadd: ");
		vfprintf(stderr, fmt, ap);
		fputc('\n', stderr);
	}
	va_end(ap);
}

static void usage(FILE *out)
{
	fprintf(out,
		"usage: triadd [-c FILE] [-f] [--check-config]\n"
		"  -c, --config FILE   configuration (default %s)\n"
		"  -f, --foreground    stay in the foreground and log to stderr\n"
		"                      (else: detach and log to syslog)\n"
		"      --check-config  check the configuration, print what is wrong, exit\n"
		"  -h, --help          this text\n"
		"exit status: 0 ok, 1 configuration or start-up error, 2 usage\n"
		"see docs/daemon.md for the configuration and the protocol\n",
		DEFAULT_CONF);
}

/* Loads path into *c, has the library's registry check [policy] and
 * resolves the group; "FILE:LINE: message" in err. */
static int load(const char *path, struct tr_ctl_conf *c, gid_t *gid, char *err, size_t len)
{
	int ret = tr_ctl_conf_load(path, c, err, len);
	struct group *gr;
	char why[300];
	size_t bad;

	if (ret)
		return ret;
	if (td_knobs_check(c->knob, (size_t)c->nknobs, &bad, why, sizeof(why))) {
		snprintf(err, len, "%s:%d: %s", path, c->knob_line[bad], why);
		return -EINVAL;
	}
	*gid = getegid();
	if (!c->group[0])
		return 0;
	gr = getgrnam(c->group);
	if (!gr) {
		snprintf(err, len, "%s:%d: 'group': no group '%s' on this system", path,
			 c->group_line, c->group);
		return -EINVAL;
	}
	*gid = gr->gr_gid;
	return 0;
}

static void reload(struct td *d)
{
	struct tr_ctl_conf c;
	char err[512];
	gid_t gid;
	int same = 1;

	if (load(d->conf_path, &c, &gid, err, sizeof(err))) {
		td_log(LOG_ERR, "reload: %s; the running configuration stays", err);
		return;
	}
	/* Clients number planes by position: the plane list, and the socket
	 * they connected to, change only with a restart. */
	same = c.nplanes == d->conf.nplanes && !strcmp(c.socket, d->conf.socket);
	for (int p = 0; same && p < c.nplanes; p++)
		same = !strcmp(c.plane[p].name, d->conf.plane[p].name);
	if (!same) {
		td_log(LOG_ERR, "reload: %s changes the planes or the socket: restart triadd for "
		       "that; the running configuration stays", d->conf_path);
		return;
	}
	d->conf = c;
	d->gid = gid;
	/* Who may connect is the file's to say at once. */
	if (chmod(c.socket, c.socket_mode) || (c.group[0] && chown(c.socket, (uid_t)-1, gid)))
		td_log(LOG_WARNING, "reload: %s: %s", c.socket, strerror(errno));
	td_server_reconfigure(d);
	td_monitor_refresh(d);
	td_event(d, "\"event\":\"reload\",\"ok\":true", "configuration reloaded");
}

static void signal_cb(struct ev_loop *loop, ev_signal *w, int revents)
{
	struct td *d = w->data;

	(void)revents;
	if (w->signum == SIGHUP) {
		reload(d);
		return;
	}
	td_log(LOG_NOTICE, "signal %d: exiting", w->signum);
	ev_break(loop, EVBREAK_ALL);
}

/* path made absolute against the working directory, as given otherwise
 * (symbolic links are not resolved: a link moved to another file is
 * followed at the next reload).  A detached daemon works in /, where a
 * relative path would name another file, or none. */
static char *absolute(const char *path)
{
	char *cwd, *abs;
	size_t len;

	if (path[0] == '/')
		return strdup(path);
	cwd = getcwd(NULL, 0);
	if (!cwd)
		return NULL;
	len = strlen(cwd) + strlen(path) + 2;
	abs = malloc(len);
	if (abs)
		snprintf(abs, len, "%s/%s", cwd, path);
	free(cwd);
	return abs;
}

/* The soft descriptor limit up to TD_NOFILE_WANT, as far as the hard one
 * allows; a warning when that is not enough for TD_MAX_CONNS. */
static void nofile_raise(void)
{
	struct rlimit rl;

	if (getrlimit(RLIMIT_NOFILE, &rl))
		return;
	if (rl.rlim_cur < TD_NOFILE_WANT) {
		rl.rlim_cur = rl.rlim_max < TD_NOFILE_WANT ? rl.rlim_max : TD_NOFILE_WANT;
		if (setrlimit(RLIMIT_NOFILE, &rl))
			getrlimit(RLIMIT_NOFILE, &rl);
	}
	if (rl.rlim_cur < TD_NOFILE_WANT)
		td_log(LOG_WARNING, "open files limited to %llu (RLIMIT_NOFILE): %d connections "
		       "need %d; at the limit new connections wait (raise LimitNOFILE)",
		       (unsigned long long)rl.rlim_cur, TD_MAX_CONNS, TD_NOFILE_WANT);
}

static void signals_start(struct td *d)
{
	ev_signal *ws[] = { &d->sigterm_w, &d->sigint_w, &d->sighup_w };
	int sigs[] = { SIGTERM, SIGINT, SIGHUP };

	signal(SIGPIPE, SIG_IGN);
	for (int i = 0; i < 3; i++) {
		ev_signal_init(ws[i], signal_cb, sigs[i]);
		ws[i]->data = d;
		ev_signal_start(d->loop, ws[i]);
	}
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "config", required_argument, NULL, 'c' },
		{ "foreground", no_argument, NULL, 'f' },
		{ "check-config", no_argument, NULL, 'C' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct td *d = calloc(1, sizeof(*d));
	const char *conf = DEFAULT_CONF;
	int check = 0, opt, ret;
	char err[512], *path;

	if (!d)
		return 1;
	while ((opt = getopt_long(argc, argv, "c:fh", opts, NULL)) != -1) {
		switch (opt) {
		case 'c': conf = optarg; break;
		case 'f': d->foreground = 1; break;
		case 'C': check = 1; break;
		case 'h': usage(stdout); free(d); return 0;
		default: usage(stderr); free(d); return 2;
		}
	}
	if (optind < argc) {
		fprintf(stderr, "triadd: unexpected argument '%s'\n", argv[optind]);
		usage(stderr);
		free(d);
		return 2;
	}
	path = absolute(conf);
	if (!path) {
		fprintf(stderr, "triadd: %s: cannot make the path absolute: %s\n", conf,
			strerror(errno));
		free(d);
		return 1;
	}
	d->conf_path = path;
	if (load(d->conf_path, &d->conf, &d->gid, err, sizeof(err))) {
		fprintf(stderr, "%s\n", err);
		free(path);
		free(d);
		return 1;
	}
	if (check) {
		printf("%s: ok (%d plane(s))\n", d->conf_path, d->conf.nplanes);
		free(path);
		free(d);
		return 0;
	}
	if (!d->foreground) {
		if (daemon(0, 0)) {
			perror("triadd: daemon");
			free(path);
			free(d);
			return 1;
		}
		use_syslog = 1;
		openlog("triadd", LOG_PID, LOG_DAEMON);
	}
	nofile_raise();
	d->loop = ev_default_loop(EVFLAG_AUTO);
	signals_start(d);
	ret = td_server_open(d);
	if (!ret)
		ret = td_monitor_open(d);
	if (!ret) {
		td_log(LOG_NOTICE, "serving %d plane(s) on %s", d->conf.nplanes, d->conf.socket);
		ev_run(d->loop, 0);
	}
	td_monitor_close(d);
	td_server_close(d);
	ev_loop_destroy(d->loop);
	free(path);
	free(d);
	return ret ? 1 : 0;
}
