/* triadctl: asks the node's triadd (docs/daemon.md). */
#include <errno.h>
#include <getopt.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/un.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

#include "core/config.h"
#include "ctl/conf.h"
#include "ctl/io.h"
#include "ctl/metrics.h"
#include "triadd.h"

enum {
	EXIT_OK = 0,
	EXIT_REFUSED = 1,
	EXIT_USAGE = 2,
	EXIT_UNREACHABLE = 3,
	EXIT_TIMEOUT = 4,
};

#define REPLY_TIMEOUT_MS 10000
#define CONNECT_TIMEOUT_MS 5000 /* a daemon stopped with its backlog full */

static void usage(FILE *out)
{
	fprintf(out,
		"usage: triadctl [-s SOCKET] [-j] COMMAND\n"
		"commands:\n"
		"  status                   planes: state, health, link, port, clients switched, in flight\n"
		"  clients                  the triad processes connected, per plane switched/in flight\n"
		"  stats                    the daemon's counters and the planes' port counters\n"
		"  config                   the daemon's configuration, the knobs it publishes,\n"
		"                           per process each knob's value and where it came from\n"
		"                           (default, daemon, environment), and the TRIAD_* table\n"
		"                           as this environment sets it\n"
		"  config set KNOB VALUE    publish a TRIAD_* knob to every process of the node\n"
		"                           (until triadd reloads or restarts: triadd.conf keeps it)\n"
		"  config unset KNOB        stop publishing it: processes go back to their default\n"
		"  monitor                  one line per event as it happens (until interrupted)\n"
		"  top [--interval S] [--once]\n"
		"                           a live view of the planes: state, reason, health,\n"
		"                           score, weight, bytes per second, in flight, processes\n"
		"                           switched; refreshed every S seconds (default 1); q or\n"
		"                           Ctrl-C quits; --once: one table, rates over S seconds,\n"
		"                           for a dumb terminal or a script\n"
		"  metrics [--out FILE]     the metrics in Prometheus text format; --out: written\n"
		"                           to FILE atomically (a temporary file, renamed), for\n"
		"                           node_exporter's textfile collector\n"
		"  plane drain PLANE [--wait] [--timeout S] [--force]\n"
		"                           every process leaves the plane; --wait: return once\n"
		"                           none has anything in flight on it; --force: even the\n"
		"                           last live plane\n"
		"  plane restore PLANE [--wait] [--timeout S] [--force]\n"
		"                           back into use (--force: even while it is faulty)\n"
		"  plane fail PLANE [--wait] [--timeout S] [--force]\n"
		"                           mark it faulty: processes leave it at once\n"
		"PLANE is a plane's name or number.  --timeout: seconds (default 60 with --wait).\n"
		"options:\n"
		"  -s, --socket PATH        triadd's socket (default $TRIAD_DAEMON, else %s)\n"
		"  -j, --json               JSON output (schema: docs/daemon.md)\n"
		"exit status:\n"
		"  0 done   1 refused or failed (the message says why)   2 usage or unknown plane\n"
		"  3 triadd not reachable (or gone during monitor)   4 timed out\n",
		TR_CTL_DEFAULT_SOCKET);
}

static int connect_to(const char *path)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	/* A Unix socket's connect waits while the listener's backlog is
	 * full (a daemon stopped or stuck), for as long as SO_SNDTIMEO. */
	struct timeval tv = { .tv_sec = CONNECT_TIMEOUT_MS / 1000,
			      .tv_usec = CONNECT_TIMEOUT_MS % 1000 * 1000 };
	int fd;

	if (strlen(path) >= sizeof(sa.sun_path)) {
		fprintf(stderr, "triadctl: socket path too long: %s\n", path);
		return -1;
	}
	strcpy(sa.sun_path, path);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd >= 0 && setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv))) {
		close(fd);
		fd = -1;
	}
	if (fd < 0 || connect(fd, (struct sockaddr *)&sa, sizeof(sa))) {
		if (errno == EAGAIN || errno == EINPROGRESS)
			fprintf(stderr, "triadctl: cannot reach triadd at %s: no connection taken "
				"within %d s (a daemon stopped or overloaded?)\n", path,
				CONNECT_TIMEOUT_MS / 1000);
		else
			fprintf(stderr, "triadctl: cannot reach triadd at %s: %s\n", path,
				strerror(errno));
		if (fd >= 0)
			close(fd);
		return -1;
	}
	return fd;
}

/* The TRIAD_* table of this environment, after the daemon's configuration. */
static void print_env(const char *daemon_json, size_t len, int json)
{
	struct tr_config cfg;
	struct tr_config_var v;
	struct td_out o = { 0 };
	char err[300];

	if (tr_config_load(&cfg, tr_config_getenv, NULL, err, sizeof(err))) {
		fprintf(stderr, "triadctl: this environment's TRIAD_* are bad: %s\n", err);
		tr_config_load(&cfg, NULL, NULL, err, sizeof(err));
	}
	if (!json) {
		printf("%.*s\nTRIAD_* as this environment sets them (triadctl's own):\n", (int)len,
		       daemon_json);
		tr_config_print_table(stdout, &cfg);
		return;
	}
	/* The daemon's object, with "env" added before its closing brace. */
	while (len && daemon_json[len - 1] != '}')
		len--;
	td_out_printf(&o, "%.*s,\"env\":[", len ? (int)len - 1 : 0, daemon_json);
	for (size_t i = 0; tr_config_var(&cfg, i, &v) == 0; i++) {
		td_out_printf(&o, "%s{\"name\":", i ? "," : "");
		td_out_json_str(&o, v.name);
		td_out_printf(&o, ",\"value\":");
		td_out_json_str(&o, v.value);
		td_out_printf(&o, ",\"default\":");
		td_out_json_str(&o, v.def);
		td_out_printf(&o, ",\"takes_effect\":\"%s\"}", tr_config_when_str(v.when));
	}
	td_out_printf(&o, "]}");
	if (o.buf)
		puts(o.buf);
	td_out_free(&o);
}

/* A reply's text, ending in exactly one newline. */
static void print_text(FILE *out, const char *prefix, const char *text, uint32_t len)
{
	while (len && text[len - 1] == '\n')
		len--;
	fprintf(out, "%s%.*s\n", prefix, (int)len, text);
}

/* With -j, a reply that is not JSON (the daemon refuses a connection
 * before it has read whether the command asked for JSON) as the error
 * object of the schema. */
static void print_json_of_text(const struct tr_ctl_msg *m)
{
	struct td_out o = { 0 };
	char *text = strndup(m->u.reply.text, m->u.reply.text_len);

	if (!text) {
		fprintf(stderr, "triadctl: out of memory\n");
		return;
	}
	td_out_printf(&o, "{\"version\":1,\"ok\":%s,\"code\":%u,\"message\":",
		      m->u.reply.code == TR_CTL_OK ? "true" : "false", m->u.reply.code);
	td_out_json_str(&o, text);
	td_out_printf(&o, "}");
	if (o.buf)
		puts(o.buf);
	td_out_free(&o);
	free(text);
}

static int exit_of(const struct tr_ctl_msg *m)
{
	if (m->u.reply.code == TR_CTL_OK)
		return EXIT_OK;
	if (m->u.reply.status == -ETIMEDOUT)
		return EXIT_TIMEOUT;
	return m->u.reply.code == TR_CTL_BAD_CMD ? EXIT_USAGE : EXIT_REFUSED;
}

/* Connects, sends cmd and waits up to wait_ms for its reply, in *m (read
 * with rx).  The connection, or minus the exit status when there is no
 * reply (said on stderr). */
static int ask(const char *path, struct tr_ctl_msg *cmd, int wait_ms, struct tr_ctl_rx *rx,
	       struct tr_ctl_msg *m)
{
	int fd = connect_to(path), ret;

	if (fd < 0)
		return -EXIT_UNREACHABLE;
	ret = tr_ctl_send(fd, cmd, -1, REPLY_TIMEOUT_MS);
	/* A daemon that refused us answered and closed before our command
	 * went out: its answer is still there to read. */
	if (!ret || ret == -EPIPE || ret == -ECONNRESET)
		ret = tr_ctl_rx_wait(fd, rx, m, wait_ms);
	if (ret == 1 && m->type != TR_CTL_REPLY)
		ret = -EPROTO;
	if (ret == 1)
		return fd;
	fprintf(stderr, "triadctl: triadd at %s: %s\n", path,
		ret == 0 ? "closed the connection" : strerror(-ret));
	close(fd);
	return -(ret == -ETIMEDOUT ? EXIT_TIMEOUT : EXIT_UNREACHABLE);
}

static int run(const char *path, struct tr_ctl_msg *cmd, int wait_ms)
{
	struct tr_ctl_rx *rx = malloc(sizeof(*rx));
	struct tr_ctl_msg m;
	int fd, ret, rc;

	if (!rx)
		return EXIT_REFUSED;
	tr_ctl_rx_init(rx);
	fd = ask(path, cmd, wait_ms, rx, &m);
	if (fd < 0) {
		rc = -fd;
		goto out;
	}
	rc = exit_of(&m);
	if ((cmd->u.cmd.flags & TR_CTL_F_JSON) &&
	    (!m.u.reply.text_len || m.u.reply.text[0] != '{'))
		print_json_of_text(&m);
	else if (rc == EXIT_OK && cmd->u.cmd.op == TR_CTL_OP_CONFIG)
		print_env(m.u.reply.text, m.u.reply.text_len, cmd->u.cmd.flags & TR_CTL_F_JSON);
	else
		print_text(rc == EXIT_OK || (cmd->u.cmd.flags & TR_CTL_F_JSON) ? stdout : stderr,
			   rc == EXIT_OK || (cmd->u.cmd.flags & TR_CTL_F_JSON) ? "" : "triadctl: ",
			   m.u.reply.text, m.u.reply.text_len);
	while (rc == EXIT_OK && cmd->u.cmd.op == TR_CTL_OP_MONITOR) {
		fflush(stdout);
		ret = tr_ctl_rx_wait(fd, rx, &m, -1);
		if (ret != 1 || m.type != TR_CTL_EVENT) {
			fprintf(stderr, "triadctl: triadd went away\n");
			rc = EXIT_UNREACHABLE;
			break;
		}
		printf("%.*s\n", (int)m.u.event.text_len, m.u.event.text);
	}
	close(fd);
out:
	tr_ctl_rx_reset(rx);
	free(rx);
	return rc;
}

/* One command, its answer's text handed over (*text malloc'd and
 * NUL-terminated, *len bytes) when the daemon said OK.  The exit status;
 * what went wrong is on stderr. */
static int fetch(const char *path, struct tr_ctl_msg *cmd, char **text, size_t *len)
{
	struct tr_ctl_rx *rx = malloc(sizeof(*rx));
	struct tr_ctl_msg m;
	int fd, rc;

	*text = NULL;
	if (!rx)
		return EXIT_REFUSED;
	tr_ctl_rx_init(rx);
	fd = ask(path, cmd, REPLY_TIMEOUT_MS, rx, &m);
	if (fd < 0) {
		rc = -fd;
	} else if ((rc = exit_of(&m)) != EXIT_OK) {
		print_text(stderr, "triadctl: ", m.u.reply.text, m.u.reply.text_len);
	} else if (!(*text = strndup(m.u.reply.text, m.u.reply.text_len))) {
		fprintf(stderr, "triadctl: out of memory\n");
		rc = EXIT_REFUSED;
	} else {
		*len = m.u.reply.text_len;
	}
	if (fd >= 0)
		close(fd);
	tr_ctl_rx_reset(rx);
	free(rx);
	return rc;
}

/* text to path through a temporary file beside it, renamed over it: a
 * reader (node_exporter's textfile collector) sees the old file or the
 * new one, never a part.  The temporary name does not end in ".prom". */
static int write_atomic(const char *path, const char *text, size_t len)
{
	size_t n = strlen(path) + sizeof(".XXXXXX");
	char *tmp = malloc(n);
	const char *what = NULL;
	int fd, err = 0;

	if (!tmp) {
		fprintf(stderr, "triadctl: out of memory\n");
		return EXIT_REFUSED;
	}
	snprintf(tmp, n, "%s.XXXXXX", path);
	fd = mkstemp(tmp);
	if (fd < 0) {
		fprintf(stderr, "triadctl: metrics --out %s: cannot create a file beside it: %s\n",
			path, strerror(errno));
		free(tmp);
		return EXIT_REFUSED;
	}
	for (size_t at = 0; at < len && !what;) {
		ssize_t w = write(fd, text + at, len - at);

		if (w >= 0)
			at += (size_t)w;
		else if (errno != EINTR)
			err = errno, what = "write";
	}
	/* mkstemp made it 0600: node_exporter may run as another user. */
	if (!what && fchmod(fd, 0644))
		err = errno, what = "chmod";
	if (!what && fsync(fd))
		err = errno, what = "fsync";
	if (close(fd) && !what)
		err = errno, what = "close";
	if (!what && rename(tmp, path))
		err = errno, what = "rename";
	if (what) {
		unlink(tmp);
		fprintf(stderr, "triadctl: metrics --out %s: %s: %s\n", path, what, strerror(err));
	}
	free(tmp);
	return what ? EXIT_REFUSED : EXIT_OK;
}

/* metrics [--out FILE] */
static int metrics_cmd(const char *path, int argc, char **argv, unsigned flags)
{
	struct tr_ctl_msg cmd = { .type = TR_CTL_CMD };
	const char *out = NULL;
	char *text;
	size_t len;
	int rc;

	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--out") && i + 1 < argc && argv[i + 1][0]) {
			out = argv[++i];
		} else {
			fprintf(stderr, "triadctl: metrics: unexpected '%s' (want [--out FILE])\n",
				argv[i]);
			return EXIT_USAGE;
		}
	}
	if (flags & TR_CTL_F_JSON) {
		fprintf(stderr, "triadctl: metrics: the output is Prometheus text; -j does not apply\n");
		return EXIT_USAGE;
	}
	cmd.u.cmd.op = TR_CTL_OP_METRICS;
	rc = fetch(path, &cmd, &text, &len);
	if (rc)
		return rc;
	if (out)
		rc = write_atomic(out, text, len);
	else if (fwrite(text, 1, len, stdout) != len || fflush(stdout))
		rc = EXIT_REFUSED;
	free(text);
	return rc;
}

/* ---- top ---------------------------------------------------------------------*/
static volatile sig_atomic_t top_stop;

static void on_top_signal(int sig)
{
	top_stop = sig;
}

static double mono_s(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

/* The daemon's metrics now, parsed. */
static int top_sample(const char *path, struct tr_ctl_msnap *s, double *at)
{
	struct tr_ctl_msg cmd = { .type = TR_CTL_CMD };
	char *text, err[200];
	size_t len;
	int rc;

	cmd.u.cmd.op = TR_CTL_OP_METRICS;
	rc = fetch(path, &cmd, &text, &len);
	*at = mono_s();
	if (rc)
		return rc;
	if (tr_ctl_metrics_parse(text, len, s, err, sizeof(err))) {
		fprintf(stderr, "triadctl: top: triadd's metrics: %s\n", err);
		rc = EXIT_REFUSED;
	}
	free(text);
	return rc;
}

/* Waits up to secs for q (keys: stdin is a terminal), a signal or the
 * time: 1 to quit. */
static int top_wait(double secs, int keys)
{
	double end = mono_s() + secs;
	struct pollfd pfd = { .fd = 0, .events = POLLIN };

	for (;;) {
		double left = end - mono_s();
		char c[16];
		ssize_t n;

		if (top_stop)
			return 1;
		if (left <= 0)
			return 0;
		if (poll(&pfd, keys ? 1 : 0, (int)(left * 1000) + 1) <= 0 || !(pfd.revents & POLLIN))
			continue;
		n = read(0, c, sizeof(c));
		if (n <= 0) {
			keys = 0; /* end of input: only the time and signals now */
			continue;
		}
		if (memchr(c, 'q', (size_t)n) || memchr(c, 'Q', (size_t)n))
			return 1;
	}
}

/* One refresh: redrawn in place on a screen, else after the last one. */
static void top_show(const char *path, double secs, int screen, const char *frame)
{
	printf("%striadd %s, every %.1f s; q or Ctrl-C quits\n%s%s", screen ? "\033[H\033[J" : "",
	       path, secs, frame, screen ? "" : "\n");
	fflush(stdout);
}

/* top [--interval S] [--once] */
static int top_cmd(const char *path, int argc, char **argv, unsigned flags)
{
	struct tr_ctl_msnap *prev = malloc(sizeof(*prev)), *now = malloc(sizeof(*now)), *t;
	const char *term = getenv("TERM");
	struct sigaction sa = { .sa_handler = on_top_signal };
	struct termios tio, raw;
	double secs = 1, at_prev, at_now;
	int once = 0, screen, keys, rc = EXIT_OK;
	char frame[4096];

	for (int i = 1; i < argc; i++) {
		char *end;

		if (!strcmp(argv[i], "--once")) {
			once = 1;
		} else if (!strcmp(argv[i], "--interval") && i + 1 < argc) {
			secs = strtod(argv[++i], &end);
			if (*end || !(secs >= 0.1) || secs > 3600) {
				fprintf(stderr, "triadctl: top --interval %s: not seconds in [0.1, 3600]\n",
					argv[i]);
				rc = EXIT_USAGE;
			}
		} else {
			fprintf(stderr, "triadctl: top: unexpected '%s' (want [--interval S] [--once])\n",
				argv[i]);
			rc = EXIT_USAGE;
		}
		if (rc)
			break;
	}
	if (!rc && (flags & TR_CTL_F_JSON)) {
		fprintf(stderr, "triadctl: top: a view for people; -j does not apply (metrics, "
			"status -j)\n");
		rc = EXIT_USAGE;
	}
	if (!prev || !now)
		rc = EXIT_REFUSED;
	if (rc)
		goto out;
	/* Redrawn in place on a terminal that can; else one table after
	 * another, plain. */
	screen = !once && isatty(1) && term && *term && strcmp(term, "dumb");
	/* The handlers first: a Ctrl-C must find the terminal's modes put
	 * back. */
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	keys = !once && isatty(0) && !tcgetattr(0, &tio);
	if (keys) {
		raw = tio;
		raw.c_lflag &= ~(tcflag_t)(ICANON | ECHO);
		raw.c_cc[VMIN] = 1;
		raw.c_cc[VTIME] = 0;
		tcsetattr(0, TCSANOW, &raw);
	}
	rc = top_sample(path, prev, &at_prev);
	if (!rc && !once) {
		tr_ctl_top_frame(NULL, prev, 0, frame, sizeof(frame));
		top_show(path, secs, screen, frame);
	}
	while (!rc && !top_wait(secs, keys)) {
		rc = top_sample(path, now, &at_now);
		if (rc)
			break;
		tr_ctl_top_frame(prev, now, at_now - at_prev, frame, sizeof(frame));
		if (once) {
			fputs(frame, stdout);
			break;
		}
		top_show(path, secs, screen, frame);
		t = prev, prev = now, now = t;
		at_prev = at_now;
	}
	if (keys)
		tcsetattr(0, TCSANOW, &tio);
out:
	free(prev);
	free(now);
	return rc;
}

/* config set KNOB VALUE, config unset KNOB: "KNOB=VALUE" or "KNOB". */
static int config_args(int argc, char **argv, struct tr_ctl_msg *cmd, char *arg, size_t len)
{
	int set = argc == 4 && !strcmp(argv[1], "set"), unset = argc == 3 && !strcmp(argv[1], "unset");

	if (!set && !unset) {
		fprintf(stderr, "triadctl: config: want config, config set KNOB VALUE or "
			"config unset KNOB\n");
		return -1;
	}
	if ((size_t)snprintf(arg, len, "%s%s%s", argv[2], set ? "=" : "", set ? argv[3] : "") >=
	    len) {
		fprintf(stderr, "triadctl: config %s: too long\n", argv[1]);
		return -1;
	}
	cmd->u.cmd.op = set ? TR_CTL_OP_SET : TR_CTL_OP_UNSET;
	cmd->u.cmd.arg = arg;
	cmd->u.cmd.arg_len = (uint16_t)strlen(arg);
	return 0;
}

/* plane OP NAME [--wait] [--timeout S] [--force] */
static int plane_args(int argc, char **argv, struct tr_ctl_msg *cmd, int *wait_ms)
{
	double secs = 60;
	int op;

	if (argc < 3) {
		fprintf(stderr, "triadctl: plane: want drain|restore|fail PLANE\n");
		return -1;
	}
	op = tr_ctl_op_parse(argv[1]);
	if (op != TR_CTL_OP_DRAIN && op != TR_CTL_OP_RESTORE && op != TR_CTL_OP_FAIL) {
		fprintf(stderr, "triadctl: plane %s: not drain, restore or fail\n", argv[1]);
		return -1;
	}
	cmd->u.cmd.op = (uint16_t)op;
	cmd->u.cmd.arg = argv[2];
	cmd->u.cmd.arg_len = (uint16_t)strnlen(argv[2], 256);
	if (cmd->u.cmd.arg_len > 64) {
		fprintf(stderr, "triadctl: plane name too long\n");
		return -1;
	}
	for (int i = 3; i < argc; i++) {
		char *end;

		if (!strcmp(argv[i], "--wait")) {
			cmd->u.cmd.flags |= TR_CTL_F_WAIT;
		} else if (!strcmp(argv[i], "--force")) {
			cmd->u.cmd.flags |= TR_CTL_F_FORCE;
		} else if (!strcmp(argv[i], "--timeout") && i + 1 < argc) {
			secs = strtod(argv[++i], &end);
			if (*end || !(secs > 0) || secs > 86400) {
				fprintf(stderr, "triadctl: --timeout %s: not seconds in (0, 86400]\n",
					argv[i]);
				return -1;
			}
		} else {
			fprintf(stderr, "triadctl: plane %s: unexpected '%s'\n", argv[1], argv[i]);
			return -1;
		}
	}
	if (cmd->u.cmd.flags & TR_CTL_F_WAIT) {
		/* Rounded up, and at least 1 ms: 0 would tell the daemon "no
		 * deadline". */
		double x = secs * 1000;
		uint32_t ms = (uint32_t)x;

		cmd->u.cmd.timeout_ms = ms + ((double)ms < x || !ms);
		/* The daemon answers at its deadline; this one covers a daemon
		 * that never does. */
		*wait_ms = (int)cmd->u.cmd.timeout_ms + 2000;
	}
	return 0;
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "socket", required_argument, NULL, 's' },
		{ "json", no_argument, NULL, 'j' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct tr_ctl_msg cmd = { .type = TR_CTL_CMD };
	const char *path = getenv("TRIAD_DAEMON");
	char arg[256];
	int opt, op, wait_ms = REPLY_TIMEOUT_MS;

	if (!path || !*path || !strcmp(path, "off"))
		path = TR_CTL_DEFAULT_SOCKET;
	/* "+": options stop at the command, whose own come after it. */
	while ((opt = getopt_long(argc, argv, "+s:jh", opts, NULL)) != -1) {
		switch (opt) {
		case 's': path = optarg; break;
		case 'j': cmd.u.cmd.flags |= TR_CTL_F_JSON; break;
		case 'h': usage(stdout); return EXIT_OK;
		default: usage(stderr); return EXIT_USAGE;
		}
	}
	if (optind >= argc) {
		usage(stderr);
		return EXIT_USAGE;
	}
	argc -= optind;
	argv += optind;
	if (!strcmp(argv[0], "metrics"))
		return metrics_cmd(path, argc, argv, cmd.u.cmd.flags);
	if (!strcmp(argv[0], "top"))
		return top_cmd(path, argc, argv, cmd.u.cmd.flags);
	if (!strcmp(argv[0], "plane")) {
		if (plane_args(argc, argv, &cmd, &wait_ms))
			return EXIT_USAGE;
	} else if (!strcmp(argv[0], "config") && argc > 1) {
		if (config_args(argc, argv, &cmd, arg, sizeof(arg)))
			return EXIT_USAGE;
	} else {
		op = tr_ctl_op_parse(argv[0]);
		if (op < 0 || op >= TR_CTL_OP_DRAIN || argc > 1) {
			fprintf(stderr, "triadctl: %s%s: %s (triadctl --help)\n", argv[0],
				argc > 1 ? " ..." : "",
				op < 0 || op >= TR_CTL_OP_DRAIN ? "unknown command"
								: "takes no arguments");
			return EXIT_USAGE;
		}
		cmd.u.cmd.op = (uint16_t)op;
	}
	return run(path, &cmd, wait_ms);
}
