/* triadd's metrics read back, and top's table (metrics.h). */
#include "ctl/metrics.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#define LABEL_MAX 32 /* a label value top needs, NUL included */

enum { F_CLIENTS, F_GEN, F_STATE, F_REASON, F_HEALTHY, F_FAULTY, F_DEGRADED, F_SCORE,
       F_WEIGHT, F_INFLIGHT, F_SWITCHED, F_TX, F_RX, F_N };

static const char *const names[F_N] = {
	[F_CLIENTS] = TR_CTL_M_CLIENTS,	  [F_GEN] = TR_CTL_M_GENERATION,
	[F_STATE] = TR_CTL_M_STATE,	  [F_REASON] = TR_CTL_M_REASON,
	[F_HEALTHY] = TR_CTL_M_HEALTHY,	  [F_FAULTY] = TR_CTL_M_FAULTY,
	[F_DEGRADED] = TR_CTL_M_DEGRADED, [F_SCORE] = TR_CTL_M_SCORE,
	[F_WEIGHT] = TR_CTL_M_WEIGHT,	  [F_INFLIGHT] = TR_CTL_M_INFLIGHT,
	[F_SWITCHED] = TR_CTL_M_SWITCHED, [F_TX] = TR_CTL_M_TX,
	[F_RX] = TR_CTL_M_RX,
};

struct line {
	const char *p, *end; /* what is left of it */
	unsigned no;
};

static int bad(char *err, size_t errlen, unsigned no, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

static int bad(char *err, size_t errlen, unsigned no, const char *fmt, ...)
{
	va_list ap;
	int n = no ? snprintf(err, errlen, "line %u: ", no) : 0;

	if (n < 0 || (size_t)n >= errlen)
		return -EINVAL;
	va_start(ap, fmt);
	vsnprintf(err + n, errlen - (size_t)n, fmt, ap);
	va_end(ap);
	return -EINVAL;
}

static int is_alpha(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
}

static int is_digit(char c)
{
	return c >= '0' && c <= '9';
}

static void blanks(struct line *l)
{
	while (l->p < l->end && (*l->p == ' ' || *l->p == '\t'))
		l->p++;
}

/* A name of [a-zA-Z_:][a-zA-Z0-9_:]* (colons only in metric names). */
static size_t name_len(const struct line *l, int colons)
{
	size_t n = 0;

	while (l->p + n < l->end &&
	       (is_alpha(l->p[n]) || (n && is_digit(l->p[n])) || (colons && l->p[n] == ':')))
		n++;
	return n;
}

/* "value": into out (cut to outlen - 1; *cut set if it was), with \\,
 * \" and \n unescaped. */
static int label_value(struct line *l, char *out, size_t outlen, int *cut)
{
	size_t n = 0;

	*cut = 0;
	if (l->p >= l->end || *l->p != '"')
		return -1;
	for (l->p++; l->p < l->end && *l->p != '"'; l->p++) {
		char c = *l->p;

		if (c == '\\') {
			if (++l->p >= l->end)
				return -1;
			c = *l->p == 'n' ? '\n' : *l->p;
			if (*l->p != 'n' && *l->p != '\\' && *l->p != '"')
				return -1;
		}
		if (n + 1 < outlen)
			out[n++] = c;
		else
			*cut = 1;
	}
	if (l->p >= l->end)
		return -1;
	l->p++;
	if (outlen)
		out[n] = '\0';
	return 0;
}

static int plane_name_ok(const char *s)
{
	size_t n = strlen(s);

	if (!n || n >= TR_CTL_PLANE_NAME)
		return 0;
	for (size_t i = 0; i < n; i++)
		if (!is_alpha(s[i]) && !is_digit(s[i]) && s[i] != '.' && s[i] != '-')
			return 0;
	return 1;
}

/* A non-negative integer, then at most a timestamp. */
static int value(struct line *l, uint64_t *v)
{
	uint64_t x = 0;

	blanks(l);
	if (l->p >= l->end || !is_digit(*l->p))
		return -1;
	for (; l->p < l->end && is_digit(*l->p); l->p++) {
		if (x > (UINT64_MAX - (uint64_t)(*l->p - '0')) / 10)
			return -1;
		x = x * 10 + (uint64_t)(*l->p - '0');
	}
	if (l->p < l->end && *l->p != ' ' && *l->p != '\t' && *l->p != '\r')
		return -1;
	blanks(l);
	if (l->p < l->end && *l->p == '-')
		l->p++;
	while (l->p < l->end && is_digit(*l->p))
		l->p++;
	while (l->p < l->end && (*l->p == ' ' || *l->p == '\t' || *l->p == '\r'))
		l->p++;
	if (l->p != l->end)
		return -1;
	*v = x;
	return 0;
}

static int lookup(const char *s, const char *(*str)(uint32_t), int max)
{
	for (int i = 0; i < max; i++)
		if (!strcmp(s, str((uint32_t)i)))
			return i;
	return -1;
}

static int one_line(struct line *l, struct tr_ctl_msnap *s, char *err, size_t errlen)
{
	char plane[LABEL_MAX] = "", which[LABEL_MAX] = "";
	struct tr_ctl_mplane *e;
	int f, have_plane = 0, cut;
	unsigned p;
	size_t n;
	uint64_t v;

	blanks(l);
	if (l->p == l->end || *l->p == '#')
		return 0;
	n = name_len(l, 1);
	if (!n)
		return bad(err, errlen, l->no, "not a metric name at '%.*s'",
			   (int)(l->end - l->p > 20 ? 20 : l->end - l->p), l->p);
	for (f = 0; f < F_N; f++)
		if (strlen(names[f]) == n && !memcmp(l->p, names[f], n))
			break;
	if (f == F_N)
		return 0; /* not one top shows */
	l->p += n;
	if (l->p < l->end && *l->p == '{') {
		for (l->p++;;) {
			char *into = NULL;

			blanks(l);
			if (l->p < l->end && *l->p == '}')
				break;
			n = name_len(l, 0);
			if (!n)
				return bad(err, errlen, l->no, "%s: a bad label", names[f]);
			if (n == 5 && !memcmp(l->p, "plane", 5))
				into = plane, have_plane = 1;
			else if ((n == 5 && !memcmp(l->p, "state", 5)) ||
				 (n == 6 && !memcmp(l->p, "reason", 6)))
				into = which;
			l->p += n;
			blanks(l);
			if (l->p >= l->end || *l->p++ != '=')
				return bad(err, errlen, l->no, "%s: a label without '='", names[f]);
			blanks(l);
			if (label_value(l, into ? into : which, into ? LABEL_MAX : 0, &cut))
				return bad(err, errlen, l->no, "%s: a label value that is not a quoted string",
					   names[f]);
			if (into && cut)
				return bad(err, errlen, l->no, "%s: a label value of %d bytes or more",
					   names[f], LABEL_MAX);
			blanks(l);
			if (l->p < l->end && *l->p == ',')
				l->p++;
			else if (l->p >= l->end || *l->p != '}')
				return bad(err, errlen, l->no, "%s: labels not closed by '}'",
					   names[f]);
		}
		l->p++;
	}
	if (value(l, &v))
		return bad(err, errlen, l->no, "%s: the value is not a non-negative integer",
			   names[f]);
	if (f == F_CLIENTS || f == F_GEN) {
		*(f == F_CLIENTS ? &s->clients : &s->generation) = v;
		return 0;
	}
	if (!have_plane)
		return bad(err, errlen, l->no, "%s without a plane label", names[f]);
	if (!plane_name_ok(plane))
		return bad(err, errlen, l->no,
			   "%s: a plane name that is not 1-15 characters of A-Z a-z 0-9 _ . -",
			   names[f]);
	for (p = 0; p < s->nplanes && strcmp(s->plane[p].name, plane); p++)
		;
	if (p == s->nplanes) {
		if (p == TRIAD_MAX_PLANES)
			return bad(err, errlen, l->no, "more than %d planes", TRIAD_MAX_PLANES);
		s->nplanes++;
		s->plane[p] = (struct tr_ctl_mplane){ .state = -1, .reason = -1 };
		memcpy(s->plane[p].name, plane, strlen(plane) + 1);
	}
	e = &s->plane[p];
	switch (f) {
	case F_STATE:
	case F_REASON:
		if (!which[0])
			return bad(err, errlen, l->no, "%s without a %s label", names[f],
				   f == F_STATE ? "state" : "reason");
		/* A state or reason this triadctl does not know (a newer
		 * daemon's) is shown as "?". */
		if (v && f == F_STATE)
			e->state = lookup(which, tr_ctl_pstate_str, TR_CTL_PSTATE_MAX);
		else if (v)
			e->reason = lookup(which, tr_ctl_reason_str, TR_CTL_REASON_MAX);
		break;
	case F_HEALTHY: e->healthy = v; break;
	case F_FAULTY: e->faulty = v; break;
	case F_DEGRADED: e->degraded = v; break;
	case F_SCORE: e->score = v; break;
	case F_WEIGHT: e->weight = v; break;
	case F_INFLIGHT: e->inflight = v; break;
	case F_SWITCHED: e->switched = v; break;
	case F_TX: e->tx = v; break;
	default: e->rx = v; break;
	}
	return 0;
}

int tr_ctl_metrics_parse(const char *text, size_t len, struct tr_ctl_msnap *s, char *err,
			 size_t errlen)
{
	const char *p = text, *end = text + len;
	unsigned no = 0;

	*s = (struct tr_ctl_msnap){ 0 };
	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		struct line l = { .p = p, .end = nl ? nl : end, .no = ++no };
		int ret;

		if (memchr(p, '\0', (size_t)(l.end - p)))
			return bad(err, errlen, no, "a NUL byte");
		ret = one_line(&l, s, err, errlen);
		if (ret)
			return ret;
		p = nl ? nl + 1 : end;
	}
	if (!s->nplanes)
		return bad(err, errlen, 0, "no %s series: not triadd's metrics", TR_CTL_M_STATE);
	return 0;
}

void tr_ctl_rate_str(double r, char *buf, size_t len)
{
	static const char *const unit[] = { "B/s", "kB/s", "MB/s", "GB/s", "TB/s" };
	unsigned u = 0;

	if (r < 0) {
		snprintf(buf, len, "-");
		return;
	}
	while (r >= 999.5 && u + 1 < sizeof(unit) / sizeof(unit[0])) {
		r /= 1000;
		u++;
	}
	snprintf(buf, len, u == 0 || r >= 99.95 ? "%.0f %s" : r >= 9.995 ? "%.1f %s" : "%.2f %s",
		 r, unit[u]);
}

static double rate(const struct tr_ctl_msnap *prev, const struct tr_ctl_mplane *e, double dt,
		   int rx)
{
	if (!prev || !(dt > 0))
		return -1;
	for (unsigned p = 0; p < prev->nplanes; p++) {
		const struct tr_ctl_mplane *b = &prev->plane[p];
		uint64_t now = rx ? e->rx : e->tx, was = rx ? b->rx : b->tx;

		if (strcmp(b->name, e->name))
			continue;
		return now < was ? -1 : (double)(now - was) / dt;
	}
	return -1;
}

size_t tr_ctl_top_frame(const struct tr_ctl_msnap *prev, const struct tr_ctl_msnap *now,
			double dt_s, char *buf, size_t len)
{
	size_t at = 0;
	int n;

#define PUT(...)                                                                   \
	do {                                                                       \
		n = snprintf(buf + (at < len ? at : 0), at < len ? len - at : 0,   \
			     __VA_ARGS__);                                         \
		at += n > 0 ? (size_t)n : 0;                                       \
	} while (0)

	if (len)
		buf[0] = '\0';
	PUT("generation %llu, %llu client(s); ", (unsigned long long)now->generation,
	    (unsigned long long)now->clients);
	if (prev && dt_s > 0)
		PUT("rates over %.1f s\n", dt_s);
	else
		PUT("rates from the next refresh\n");
	PUT("%-2s %-15s %-15s %-8s %-7s %5s %6s %11s %11s %8s %8s\n", "#", "plane", "state",
	    "reason", "health", "score", "weight", "tx", "rx", "inflight", "switched");
	for (unsigned p = 0; p < now->nplanes; p++) {
		const struct tr_ctl_mplane *e = &now->plane[p];
		char tx[24], rx[24];

		tr_ctl_rate_str(rate(prev, e, dt_s, 0), tx, sizeof(tx));
		tr_ctl_rate_str(rate(prev, e, dt_s, 1), rx, sizeof(rx));
		PUT("%-2u %-15s %-15s %-8s %-7s %5llu %6llu %11s %11s %8llu %8llu\n", p, e->name,
		    e->state >= 0 ? tr_ctl_pstate_str((uint32_t)e->state) : "?",
		    e->reason >= 0 ? tr_ctl_reason_str((uint32_t)e->reason) : "?",
		    e->faulty ? "faulty" : e->healthy ? "healthy" : "down",
		    (unsigned long long)e->score, (unsigned long long)e->weight, tx, rx,
		    (unsigned long long)e->inflight, (unsigned long long)e->switched);
	}
#undef PUT
	return at;
}
