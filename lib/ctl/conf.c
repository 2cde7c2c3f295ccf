/* triadd's configuration file parser (conf.h). */
#include "ctl/conf.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define LINE_MAX_LEN 1024
#define FILE_MAX_LEN (1 << 20)

enum key_type { K_STR, K_UINT, K_MODE, K_SUBNET, K_BOOL };
enum key_sect { S_DAEMON, S_PLANE, S_POLICY, S_HEALTH };

struct key {
	const char *name;
	enum key_sect sect;
	enum key_type type;
	size_t off, size; /* K_STR: the buffer's size */
	uint32_t min, max;
};

#define D(f) offsetof(struct tr_ctl_conf, f), sizeof(((struct tr_ctl_conf *)0)->f)
#define P(f) offsetof(struct tr_ctl_conf_plane, f), sizeof(((struct tr_ctl_conf_plane *)0)->f)

static const struct key keys[] = {
	{ "socket", S_DAEMON, K_STR, D(socket), 0, 0 },
	{ "group", S_DAEMON, K_STR, D(group), 0, 0 },
	{ "socket_mode", S_DAEMON, K_MODE, D(socket_mode), 0, 0777 },
	{ "debounce_down_ms", S_DAEMON, K_UINT, D(debounce_down_ms), 0, 600000 },
	{ "debounce_up_ms", S_DAEMON, K_UINT, D(debounce_up_ms), 0, 600000 },
	{ "counters_ms", S_DAEMON, K_UINT, D(counters_ms), 10, 3600000 },
	{ "device", S_PLANE, K_STR, P(device), 0, 0 },
	{ "port", S_PLANE, K_UINT, P(port), 1, 255 },
	{ "netdev", S_PLANE, K_STR, P(netdev), 0, 0 },
	{ "subnet", S_PLANE, K_SUBNET, P(subnet), 0, 0 },
	{ "degrade", S_HEALTH, K_BOOL, D(health.enabled), 0, 1 },
	{ "errors_permille", S_HEALTH, K_UINT, D(health.errors_permille), 1, 1000 },
	{ "latency_ratio", S_HEALTH, K_UINT, D(health.latency_ratio), 0, 1000 },
	{ "min_packets", S_HEALTH, K_UINT, D(health.min_packets), 0, 100000000 },
	{ "degrade_ms", S_HEALTH, K_UINT, D(health.degrade_ms), 0, 3600000 },
	{ "restore_ms", S_HEALTH, K_UINT, D(health.restore_ms), 100, 3600000 },
	{ "restore_max_ms", S_HEALTH, K_UINT, D(health.restore_max_ms), 100, 86400000 },
};

/* Keys of earlier versions, which published values no process read: a
 * configuration that still has one says where its knob went. */
static const struct {
	const char *name, *now;
} gone[] = {
	{ "strict_order", "TRIAD_ORDER = strict|any in [policy]" },
	{ "choice_threshold", "TRIAD_ADAPTIVE_T in [policy]" },
	{ "choice_alpha_pct", "TRIAD_ADAPTIVE_ALPHA in [policy]" },
	{ "contention_threshold",
	  "the contention input is triadd's weights ([health]); TRIAD_ADAPTIVE = cont in [policy]" },
	{ "slots", "no knob: TRIAD_SLOTS is read at start only (the environment's)" },
	{ "need_medium", "TRIAD_FC_NEED_MEDIUM in [policy], for every plane" },
	{ "need_low", "TRIAD_FC_NEED_LOW in [policy], for every plane" },
};

#define NKEYS (sizeof(keys) / sizeof(keys[0]))

#undef D
#undef P

struct parser {
	const char *file;
	int line;
	char *err;
	size_t errlen;
	struct tr_ctl_conf c;
	int sect;		   /* -1: none yet, S_DAEMON, S_PLANE */
	int daemon_line;	   /* of [daemon], 0 if none */
	int policy_line;	   /* of [policy], 0 if none */
	int health_line;	   /* of [health], 0 if none */
	int seen_line[TRIAD_MAX_PLANES + 1][NKEYS]; /* [plane + 1][key]: where set */
};

static int fail(struct parser *ps, int line, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static int fail(struct parser *ps, int line, const char *fmt, ...)
{
	char msg[256];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	snprintf(ps->err, ps->errlen, "%s:%d: %s", ps->file, line, msg);
	return -EINVAL;
}

void tr_ctl_conf_defaults(struct tr_ctl_conf *c)
{
	memset(c, 0, sizeof(*c));
	strcpy(c->socket, TR_CTL_DEFAULT_SOCKET);
	c->socket_mode = 0660;
	c->debounce_down_ms = 200;
	c->debounce_up_ms = 2000;
	c->counters_ms = 1000;
	tr_ctl_dgr_cfg_default(&c->health);
}

static char *trim(char *s)
{
	char *e;

	while (isspace((unsigned char)*s))
		s++;
	e = s + strlen(s);
	while (e > s && isspace((unsigned char)e[-1]))
		*--e = '\0';
	return s;
}

static int name_ok(const char *s, size_t max)
{
	size_t n = strlen(s);

	if (n == 0 || n >= max)
		return 0;
	for (; *s; s++)
		if (!isalnum((unsigned char)*s) && !strchr("_.-", *s))
			return 0;
	return 1;
}

static int parse_uint(const char *v, uint32_t *out, int base)
{
	char *end;
	unsigned long n;

	if (!isdigit((unsigned char)*v))
		return -EINVAL;
	errno = 0;
	n = strtoul(v, &end, base);
	if (errno || *end || n > UINT32_MAX)
		return -EINVAL;
	*out = (uint32_t)n;
	return 0;
}

/* "a.b.c.d/len": the network (host bits must be zero) and the prefix. */
static int parse_subnet(const char *v, uint32_t *net, uint32_t *prefix)
{
	uint32_t o[4], len, addr = 0;
	char buf[32], *slash, *p = buf;

	if (strlen(v) >= sizeof(buf))
		return -EINVAL;
	strcpy(buf, v);
	slash = strchr(buf, '/');
	if (!slash || parse_uint(slash + 1, &len, 10) || len > 32)
		return -EINVAL;
	*slash = '\0';
	for (int i = 0; i < 4; i++) {
		char *dot = strchr(p, '.');

		if ((i < 3) != (dot != NULL))
			return -EINVAL;
		if (dot)
			*dot = '\0';
		if (parse_uint(p, &o[i], 10) || o[i] > 255 || strlen(p) > 3)
			return -EINVAL;
		addr = addr << 8 | o[i];
		p = dot ? dot + 1 : p;
	}
	if (len < 32 && (addr & (0xffffffffu >> len)))
		return -EINVAL;
	*net = addr;
	*prefix = len;
	return 0;
}

static int set_key(struct parser *ps, const struct key *k, char *base, const char *v)
{
	uint32_t n, *field = (uint32_t *)(base + k->off);

	switch (k->type) {
	case K_STR:
		if (strlen(v) >= k->size)
			return fail(ps, ps->line, "'%s': longer than %zu characters", k->name,
				    k->size - 1);
		if ((k->off == offsetof(struct tr_ctl_conf, socket) && k->sect == S_DAEMON &&
		     v[0] != '/') ||
		    (k->sect == S_PLANE && !name_ok(v, k->size)))
			return fail(ps, ps->line, "'%s': bad value '%s'", k->name, v);
		if (k->sect == S_DAEMON && !strcmp(k->name, "group") && !name_ok(v, k->size))
			return fail(ps, ps->line, "'group': bad group name '%s'", v);
		strcpy(base + k->off, v);
		return 0;
	case K_UINT:
	case K_MODE:
		if (parse_uint(v, &n, k->type == K_MODE ? 8 : 10))
			return fail(ps, ps->line, "'%s': not a%s number: '%s'", k->name,
				    k->type == K_MODE ? "n octal" : "", v);
		if (n < k->min || n > k->max)
			return fail(ps, ps->line,
				    k->type == K_MODE ? "'%s': %s out of range [0%o, 0%o]"
						      : "'%s': %s out of range [%u, %u]",
				    k->name, v, k->min, k->max);
		*field = n;
		return 0;
	case K_BOOL:
		if (strcmp(v, "yes") && strcmp(v, "no"))
			return fail(ps, ps->line, "'%s': not yes or no: '%s'", k->name, v);
		*field = !strcmp(v, "yes");
		return 0;
	case K_SUBNET: {
		struct tr_ctl_conf_plane *pl = (struct tr_ctl_conf_plane *)base;

		if (parse_subnet(v, &pl->subnet, &pl->prefix))
			return fail(ps, ps->line,
				    "'subnet': not an IPv4 network a.b.c.d/len: '%s'", v);
		pl->has_subnet = 1;
		return 0;
	}
	}
	return -EINVAL;
}

/* Checks the plane section that just ended. */
static int plane_done(struct parser *ps)
{
	struct tr_ctl_conf_plane *pl;

	if (ps->sect != S_PLANE)
		return 0;
	pl = &ps->c.plane[ps->c.nplanes - 1];
	if (!pl->device[0])
		return fail(ps, pl->line, "plane '%s': no device", pl->name);
	if (!pl->netdev[0] && !pl->has_subnet)
		return fail(ps, pl->line, "plane '%s': neither netdev nor subnet", pl->name);
	for (int i = 0; i < ps->c.nplanes - 1; i++) {
		const struct tr_ctl_conf_plane *o = &ps->c.plane[i];

		if (!strcmp(o->device, pl->device) && o->port == pl->port)
			return fail(ps, pl->line,
				    "plane '%s': device %s port %u is plane '%s''s (line %d)",
				    pl->name, pl->device, pl->port, o->name, o->line);
	}
	return 0;
}

/* A section that may come once: [daemon], [policy]. */
static int single(struct parser *ps, const char *name, int *line, int sect)
{
	if (*line)
		return fail(ps, ps->line, "duplicate section [%s] (first at line %d)", name, *line);
	*line = ps->line;
	ps->sect = sect;
	return 0;
}

static int section(struct parser *ps, char *s)
{
	char *end = strchr(s, ']'), *name;
	int ret = plane_done(ps);

	if (ret)
		return ret;
	if (!end || trim(end + 1)[0])
		return fail(ps, ps->line,
			    "bad section header (want [daemon], [plane NAME], [policy] or [health])");
	*end = '\0';
	s = trim(s + 1);
	if (!strcmp(s, "daemon"))
		return single(ps, s, &ps->daemon_line, S_DAEMON);
	if (!strcmp(s, "policy"))
		return single(ps, s, &ps->policy_line, S_POLICY);
	if (!strcmp(s, "health"))
		return single(ps, s, &ps->health_line, S_HEALTH);
	if (strncmp(s, "plane", 5) || !isspace((unsigned char)s[5]))
		return fail(ps, ps->line, "unknown section [%s]", s);
	name = trim(s + 5);
	if (!name_ok(name, TR_CTL_PLANE_NAME))
		return fail(ps, ps->line, "bad plane name '%s' (1-%d of A-Z a-z 0-9 _ . -)",
			    name, TR_CTL_PLANE_NAME - 1);
	for (int i = 0; i < ps->c.nplanes; i++)
		if (!strcmp(ps->c.plane[i].name, name))
			return fail(ps, ps->line, "duplicate plane '%s' (first at line %d)", name,
				    ps->c.plane[i].line);
	if (ps->c.nplanes == TRIAD_MAX_PLANES)
		return fail(ps, ps->line, "too many planes (at most %d)", TRIAD_MAX_PLANES);
	ps->sect = S_PLANE;
	strcpy(ps->c.plane[ps->c.nplanes].name, name);
	ps->c.plane[ps->c.nplanes].port = 1;
	ps->c.plane[ps->c.nplanes].line = ps->line;
	ps->c.nplanes++;
	return 0;
}

/* KNOB = value in [policy]: the syntax; the registry judges the rest. */
static int knob(struct parser *ps, const char *k, const char *v)
{
	struct tr_ctl_conf *c = &ps->c;

	for (int i = 0; i < c->nknobs; i++)
		if (!strcmp(c->knob[i].name, k))
			return fail(ps, ps->line, "duplicate key '%s' (first at line %d)", k,
				    c->knob_line[i]);
	if (!*v)
		return fail(ps, ps->line, "'%s': empty value", k);
	if (!tr_ctl_knob_ok(k, "x"))
		return fail(ps, ps->line, "'%s': not a knob's name (TRIAD_ then A-Z 0-9 _, "
			    "at most %d characters)", k, TR_CTL_KNOB_NAME - 1);
	if (!tr_ctl_knob_ok(k, v))
		return fail(ps, ps->line, "%s=%s: not a knob's value (1-%d printable characters, "
			    "no blank, quote or backslash)", k, v, TR_CTL_KNOB_VALUE - 1);
	if (c->nknobs == TR_CTL_KNOBS)
		return fail(ps, ps->line, "too many knobs in [policy] (at most %d)", TR_CTL_KNOBS);
	strcpy(c->knob[c->nknobs].name, k);
	strcpy(c->knob[c->nknobs].value, v);
	c->knob_line[c->nknobs++] = ps->line;
	return 0;
}

static int assignment(struct parser *ps, char *s)
{
	char *eq = strchr(s, '='), *k, *v;
	const char *sname = ps->sect == S_DAEMON   ? "[daemon]"
			    : ps->sect == S_HEALTH ? "[health]"
						   : "[plane]";
	int *seen;

	if (!eq)
		return fail(ps, ps->line, "expected 'key = value' or a [section]");
	*eq = '\0';
	k = trim(s);
	v = trim(eq + 1);
	if (!*k)
		return fail(ps, ps->line, "no key before '='");
	if (ps->sect < 0)
		return fail(ps, ps->line, "'%s' outside a section", k);
	if (ps->sect == S_POLICY)
		return knob(ps, k, v);
	for (size_t i = 0; i < NKEYS; i++) {
		if ((int)keys[i].sect != ps->sect || strcmp(keys[i].name, k))
			continue;
		seen = &ps->seen_line[ps->sect == S_PLANE ? ps->c.nplanes : 0][i];
		if (*seen)
			return fail(ps, ps->line, "duplicate key '%s' (first at line %d)", k,
				    *seen);
		if (!*v)
			return fail(ps, ps->line, "'%s': empty value", k);
		*seen = ps->line;
		if (!strcmp(k, "group"))
			ps->c.group_line = ps->line;
		return set_key(ps, &keys[i],
			       ps->sect == S_PLANE ? (char *)&ps->c.plane[ps->c.nplanes - 1]
						   : (char *)&ps->c,
			       v);
	}
	for (size_t i = 0; i < sizeof(gone) / sizeof(gone[0]); i++)
		if (!strcmp(gone[i].name, k))
			return fail(ps, ps->line, "'%s' is gone: %s", k, gone[i].now);
	return fail(ps, ps->line, "unknown key '%s' in %s", k, sname);
}

int tr_ctl_conf_parse(const char *text, const char *file, struct tr_ctl_conf *c, char *err,
		      size_t errlen)
{
	struct parser *ps = calloc(1, sizeof(*ps));
	char line[LINE_MAX_LEN + 2];
	int ret = 0;

	if (!ps) {
		snprintf(err, errlen, "%s: out of memory", file);
		return -ENOMEM;
	}
	ps->file = file;
	ps->err = err;
	ps->errlen = errlen;
	ps->sect = -1;
	tr_ctl_conf_defaults(&ps->c);
	while (!ret && *text) {
		size_t n = strcspn(text, "\n");
		char *s;

		ps->line++;
		if (n > LINE_MAX_LEN) {
			ret = fail(ps, ps->line, "line longer than %d characters", LINE_MAX_LEN);
			break;
		}
		memcpy(line, text, n);
		line[n] = '\0';
		text += n + (text[n] == '\n');
		s = trim(line);
		if (!*s || *s == '#' || *s == ';')
			continue;
		ret = *s == '[' ? section(ps, s) : assignment(ps, s);
	}
	if (!ret)
		ret = plane_done(ps);
	if (!ret && !ps->c.nplanes)
		ret = fail(ps, ps->line ? ps->line : 1, "no [plane NAME] section");
	if (!ret && ps->c.health.restore_max_ms < ps->c.health.restore_ms)
		ret = fail(ps, ps->health_line, "[health]: restore_max_ms %u is below restore_ms %u",
			   ps->c.health.restore_max_ms, ps->c.health.restore_ms);
	if (!ret)
		*c = ps->c;
	free(ps);
	return ret;
}

static const char *file_kind(mode_t mode)
{
	return S_ISDIR(mode)	? "a directory"
	       : S_ISFIFO(mode) ? "a FIFO"
	       : S_ISSOCK(mode) ? "a socket"
	       : S_ISCHR(mode)	? "a character device"
	       : S_ISBLK(mode)	? "a block device"
				: "not a plain file";
}

int tr_ctl_conf_load(const char *path, struct tr_ctl_conf *c, char *err, size_t errlen)
{
	/* O_NONBLOCK: opening a FIFO waits for a writer, which may never
	 * come (a daemon reloading on SIGHUP would hang in it).  Whatever is
	 * not a regular file is refused before anything is read. */
	int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY), ret;
	struct stat st;
	char *text;
	size_t n;
	FILE *f;

	if (fd < 0 || fstat(fd, &st)) {
		ret = -errno;
		snprintf(err, errlen, "%s: %s", path, strerror(errno));
		if (fd >= 0)
			close(fd);
		return ret;
	}
	if (!S_ISREG(st.st_mode)) {
		snprintf(err, errlen, "%s: not a regular file (%s)", path, file_kind(st.st_mode));
		close(fd);
		return -EINVAL;
	}
	f = fdopen(fd, "r");
	if (!f) {
		ret = -errno;
		snprintf(err, errlen, "%s: %s", path, strerror(errno));
		close(fd);
		return ret;
	}
	text = malloc(FILE_MAX_LEN + 1);
	if (!text) {
		fclose(f);
		snprintf(err, errlen, "%s: out of memory", path);
		return -ENOMEM;
	}
	n = fread(text, 1, FILE_MAX_LEN + 1, f);
	ret = ferror(f) ? -EIO : 0;
	fclose(f);
	if (!ret && n > FILE_MAX_LEN) {
		snprintf(err, errlen, "%s: larger than %d bytes", path, FILE_MAX_LEN);
		ret = -EFBIG;
	} else if (!ret && memchr(text, '\0', n)) {
		snprintf(err, errlen, "%s: not a text file (NUL byte)", path);
		ret = -EINVAL;
	} else if (ret) {
		snprintf(err, errlen, "%s: read error", path);
	}
	if (!ret) {
		text[n] = '\0';
		ret = tr_ctl_conf_parse(text, path, c, err, errlen);
	}
	free(text);
	return ret;
}

void tr_ctl_conf_policy(const struct tr_ctl_conf *c, struct tr_ctl_policy *p)
{
	tr_ctl_policy_default(p, (unsigned)c->nplanes);
	for (int i = 0; i < c->nplanes; i++)
		memcpy(p->plane[i].name, c->plane[i].name, sizeof(p->plane[i].name));
	p->nknobs = (uint32_t)c->nknobs;
	memcpy(p->knob, c->knob, sizeof(p->knob));
}

int tr_ctl_conf_plane_find(const struct tr_ctl_conf *c, const char *name)
{
	for (int i = 0; name && i < c->nplanes; i++)
		if (!strcmp(c->plane[i].name, name))
			return i;
	return -1;
}
