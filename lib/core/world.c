#include "core/world.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <stdarg.h>
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define MAX_LINE 1024

struct parser {
	const char *name;
	int line;
	char *err;
	size_t errlen;
};

__attribute__((format(printf, 2, 3))) static int fail(struct parser *p, const char *fmt, ...)
{
	char msg[256];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (p->line)
		snprintf(p->err, p->errlen, "%s:%d: %s", p->name, p->line, msg);
	else
		snprintf(p->err, p->errlen, "%s: %s", p->name, msg);
	return -EINVAL;
}

/* Splits line into at most max whitespace-separated words (in place). */
static int split(char *line, char **words, int max)
{
	int n = 0;
	char *s = line;

	for (;;) {
		while (isspace((unsigned char)*s))
			s++;
		if (!*s)
			return n;
		if (n == max)
			return max + 1;
		words[n++] = s;
		while (*s && !isspace((unsigned char)*s))
			s++;
		if (*s)
			*s++ = '\0';
	}
}

static int parse_uint(const char *s, long max, long *v_p)
{
	char *end;
	long v;

	if (!isdigit((unsigned char)*s))
		return -EINVAL;
	errno = 0;
	v = strtol(s, &end, 10);
	if (errno || *end || v > max)
		return -EINVAL;
	*v_p = v;
	return 0;
}

uint64_t tr_job_key(const char *name)
{
	uint64_t h = 0xcbf29ce484222325ull; /* FNV-1a: cheap, and stable across builds */

	for (const unsigned char *c = (const unsigned char *)name; *c; c++)
		h = (h ^ *c) * 0x100000001b3ull;
	return h ? h : 1;
}

#define MAX_KEY 63

static int parse_key(struct parser *p, char **words, int n, struct tr_world *w, bool *key_seen)
{
	if (n != 2)
		return fail(p, "'key' needs one word");
	if (strlen(words[1]) > MAX_KEY)
		return fail(p, "'key' longer than %d characters", MAX_KEY);
	if (*key_seen)
		return fail(p, "'key' given twice");
	*key_seen = true;
	w->key = tr_job_key(words[1]);
	return 0;
}

static int parse_line(struct parser *p, char *line, struct tr_world *w, bool *seen,
		      int *nranks_seen, bool *key_seen)
{
	char *words[TRIAD_MAX_PLANES + 2];
	char *hash = strchr(line, '#');
	int n, i, r;
	long v;

	if (hash)
		*hash = '\0';
	n = split(line, words, TRIAD_MAX_PLANES + 1);
	if (n == 0)
		return 0;
	if (!strcmp(words[0], "port")) {
		if (n != 2 || parse_uint(words[1], 65535, &v) || v == 0)
			return fail(p, "'port' needs one number in 1..65535");
		if (*nranks_seen)
			return fail(p, "'port' must come before the ranks");
		w->port = (uint16_t)v;
		return 0;
	}
	if (!strcmp(words[0], "key"))
		return parse_key(p, words, n, w, key_seen);
	if (parse_uint(words[0], TR_WORLD_MAX_RANKS - 1, &v))
		return fail(p, "expected a rank (0..%d), 'port' or 'key', found '%s'",
			    TR_WORLD_MAX_RANKS - 1, words[0]);
	if (n > TRIAD_MAX_PLANES + 1)
		return fail(p, "rank %ld: more than %d plane addresses", v, TRIAD_MAX_PLANES);
	if (n < 2)
		return fail(p, "rank %ld: no plane address", v);
	if (w->nplanes && n - 1 != w->nplanes)
		return fail(p, "rank %ld: %d plane addresses, earlier ranks have %d", v,
			    n - 1, w->nplanes);
	if (seen[v])
		return fail(p, "rank %ld listed twice", v);
	w->nplanes = n - 1;
	for (i = 1; i < n; i++) {
		if (inet_pton(AF_INET, words[i], &w->addr[v][i - 1]) != 1)
			return fail(p, "rank %ld plane %d: '%s' is not an IPv4 address", v,
				    i - 1, words[i]);
	}
	/* The addresses of one plane are distinct: checked here so that the
	 * error names the line that repeats one. */
	for (i = 0; i < w->nplanes; i++)
		for (r = 0; r < w->size; r++)
			if (seen[r] && w->addr[r][i].s_addr == w->addr[v][i].s_addr)
				return fail(p, "rank %ld plane %d: address %s already used by rank %d",
					    v, i, words[i + 1], r);
	seen[v] = true;
	(*nranks_seen)++;
	if (v + 1 > w->size)
		w->size = (int)v + 1;
	return 0;
}

static int check_complete(struct parser *p, struct tr_world *w, const bool *seen)
{
	int r;

	if (w->size == 0)
		return fail(p, "no ranks");
	for (r = 0; r < w->size; r++)
		if (!seen[r])
			return fail(p, "rank %d is missing (ranks must be 0..%d)", r,
				    w->size - 1);
	return 0;
}

int tr_world_parse(const char *text, const char *name, struct tr_world *w,
		   char *err, size_t errlen)
{
	struct parser p = { .name = name, .line = 0, .err = err, .errlen = errlen };
	struct tr_world tmp = { .port = TR_WORLD_DEFAULT_PORT };
	bool *seen = calloc(TR_WORLD_MAX_RANKS, sizeof(*seen));
	const char *s = text;
	int nranks_seen = 0, ret = 0;
	bool key_seen = false;

	tmp.addr = calloc(TR_WORLD_MAX_RANKS, sizeof(*tmp.addr));
	if (!seen || !tmp.addr) {
		ret = -ENOMEM;
		snprintf(err, errlen, "%s: out of memory", name);
		goto out;
	}
	while (*s) {
		char line[MAX_LINE];
		size_t len = strcspn(s, "\n");

		p.line++;
		if (len >= sizeof(line)) {
			ret = fail(&p, "line longer than %d characters", MAX_LINE - 1);
			goto out;
		}
		memcpy(line, s, len);
		line[len] = '\0';
		s += len + (s[len] == '\n');
		ret = parse_line(&p, line, &tmp, seen, &nranks_seen, &key_seen);
		if (ret)
			goto out;
	}
	p.line = 0;
	ret = check_complete(&p, &tmp, seen);
	if (ret)
		goto out;
	/* Shrink the table to the ranks that exist. */
	w->addr = realloc(tmp.addr, (size_t)tmp.size * sizeof(*tmp.addr));
	if (!w->addr)
		w->addr = tmp.addr;
	tmp.addr = NULL;
	w->size = tmp.size;
	w->nplanes = tmp.nplanes;
	w->port = tmp.port;
	w->key = tmp.key;
	w->ports = NULL; /* a world file has one port */
out:
	free(tmp.addr);
	free(seen);
	return ret;
}

int tr_world_load(const char *path, struct tr_world *w, char *err, size_t errlen)
{
	struct stat st;
	FILE *f;
	char *text;
	long size;
	int ret;

	f = fopen(path, "r");
	if (!f) {
		ret = -errno;
		snprintf(err, errlen, "%s: cannot open world file: %s", path, strerror(errno));
		return ret;
	}
	/* A directory opens, and its "size" is whatever the file system says. */
	if (fstat(fileno(f), &st) == 0 && S_ISDIR(st.st_mode)) {
		snprintf(err, errlen, "%s: cannot read world file: %s", path, strerror(EISDIR));
		fclose(f);
		return -EISDIR;
	}
	if (fseek(f, 0, SEEK_END) || (size = ftell(f)) < 0 || fseek(f, 0, SEEK_SET)) {
		ret = -errno;
		snprintf(err, errlen, "%s: cannot read world file: %s", path, strerror(errno));
		fclose(f);
		return ret;
	}
	if (size > (1 << 24)) {
		snprintf(err, errlen, "%s: world file larger than 16 MiB", path);
		fclose(f);
		return -EFBIG;
	}
	text = malloc((size_t)size + 1);
	if (!text) {
		fclose(f);
		snprintf(err, errlen, "%s: out of memory", path);
		return -ENOMEM;
	}
	errno = 0;
	size = (long)fread(text, 1, (size_t)size, f);
	text[size] = '\0';
	if (ferror(f)) {
		ret = errno ? -errno : -EIO;
		snprintf(err, errlen, "%s: cannot read world file: %s", path, strerror(-ret));
		free(text);
		fclose(f);
		return ret;
	}
	fclose(f);
	if (strlen(text) != (size_t)size) {
		free(text);
		snprintf(err, errlen, "%s: world file contains a NUL byte", path);
		return -EINVAL;
	}
	ret = tr_world_parse(text, path, w, err, errlen);
	free(text);
	return ret;
}

void tr_world_free(struct tr_world *w)
{
	free(w->addr);
	free(w->ports);
	w->addr = NULL;
	w->ports = NULL;
	w->size = 0;
}
