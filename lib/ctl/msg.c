/* The triadd socket protocol: encoder and strict decoder (msg.h). */
#include "ctl/msg.h"

#include <errno.h>
#include <string.h>

#include "triad.h"

/* A cursor over a frame: every read and write is bounds-checked once,
 * here, and a short buffer sets bad instead of running past it. */
struct cur {
	uint8_t *p;
	const uint8_t *rp;
	size_t len, off;
	int bad;
};

static void put(struct cur *c, uint64_t v, unsigned n)
{
	if (c->bad || c->len - c->off < n) {
		c->bad = 1;
		return;
	}
	for (unsigned i = 0; i < n; i++)
		c->p[c->off++] = (uint8_t)(v >> (8 * i));
}

static uint64_t get(struct cur *c, unsigned n)
{
	uint64_t v = 0;

	if (c->bad || c->len - c->off < n) {
		c->bad = 1;
		return 0;
	}
	for (unsigned i = 0; i < n; i++)
		v |= (uint64_t)c->rp[c->off++] << (8 * i);
	return v;
}

/* Strings of a frame: u16 length (names, arguments), or u32 (text). */
static int put_str(struct cur *c, const char *s, size_t n, unsigned lenbytes)
{
	if (n > TR_CTL_MAX_STR || (lenbytes == 2 && n > UINT16_MAX) ||
	    (n && (!s || memchr(s, '\0', n))))
		return -EINVAL;
	put(c, n, lenbytes);
	if (c->bad || c->len - c->off < n) {
		c->bad = 1;
		return 0;
	}
	if (n)
		memcpy(c->p + c->off, s, n);
	c->off += n;
	return 0;
}

static const char *get_str(struct cur *c, unsigned lenbytes, uint32_t *n_p)
{
	uint32_t n = (uint32_t)get(c, lenbytes);
	const char *s;

	if (c->bad || n > TR_CTL_MAX_STR || c->len - c->off < n) {
		c->bad = 1;
		return NULL;
	}
	s = (const char *)c->rp + c->off;
	if (memchr(s, '\0', n)) {
		c->bad = 1;
		return NULL;
	}
	c->off += n;
	*n_p = n;
	return s;
}

static int valid_fields(const struct tr_ctl_msg *m)
{
	switch (m->type) {
	case TR_CTL_HELLO:
		return m->u.hello.nplanes >= 1 && m->u.hello.nplanes <= TRIAD_MAX_PLANES &&
		       memchr(m->u.hello.name, '\0', TR_CTL_NAME_MAX) != NULL;
	case TR_CTL_CMD:
		return m->u.cmd.op >= TR_CTL_OP_STATUS && m->u.cmd.op < TR_CTL_OP_MAX &&
		       !(m->u.cmd.flags & ~TR_CTL_F_ALL);
	case TR_CTL_REPLY:
		return m->u.reply.status <= 0 && m->u.reply.status > -4096 &&
		       m->u.reply.code < TR_CTL_CODE_MAX;
	case TR_CTL_WELCOME:
		return m->u.welcome.status <= 0 && m->u.welcome.status > -4096;
	case TR_CTL_APPLIED:
		if (m->u.applied.n > TR_CTL_KNOBS)
			return 0;
		for (uint32_t k = 0; k < m->u.applied.n; k++)
			if (!memchr(m->u.applied.knob[k].name, '\0', TR_CTL_KNOB_NAME) ||
			    !memchr(m->u.applied.knob[k].value, '\0', TR_CTL_KNOB_VALUE) ||
			    !tr_ctl_knob_ok(m->u.applied.knob[k].name, m->u.applied.knob[k].value) ||
			    m->u.applied.src[k] >= TR_CTL_SRC_MAX)
				return 0;
		return 1;
	case TR_CTL_NOTIFY:
	case TR_CTL_COUNTERS:
	case TR_CTL_EVENT:
		return 1;
	default:
		return 0;
	}
}

int tr_ctl_encode(const struct tr_ctl_msg *m, void *buf, size_t buflen)
{
	struct cur c = { .p = buf, .len = buflen < TR_CTL_MAX_FRAME ? buflen : TR_CTL_MAX_FRAME };
	int ret = 0;

	if (!m || !buf || !valid_fields(m))
		return -EINVAL;
	put(&c, 0, 4); /* the length, filled in below */
	put(&c, TR_CTL_VERSION, 2);
	put(&c, (uint64_t)m->type, 2);
	switch (m->type) {
	case TR_CTL_HELLO:
		put(&c, m->u.hello.pid, 4);
		put(&c, (uint32_t)m->u.hello.rank, 4);
		put(&c, m->u.hello.nplanes, 4);
		ret = put_str(&c, m->u.hello.name, strlen(m->u.hello.name), 2);
		break;
	case TR_CTL_WELCOME:
		put(&c, (uint32_t)m->u.welcome.status, 4);
		put(&c, m->u.welcome.client, 4);
		put(&c, m->u.welcome.table_size, 4);
		put(&c, m->u.welcome.gen, 8);
		break;
	case TR_CTL_NOTIFY:
		put(&c, m->u.notify.gen, 8);
		break;
	case TR_CTL_COUNTERS:
		put(&c, m->u.counters.size, 4);
		break;
	case TR_CTL_CMD:
		put(&c, m->u.cmd.op, 2);
		put(&c, m->u.cmd.flags, 2);
		put(&c, m->u.cmd.timeout_ms, 4);
		if (m->u.cmd.arg_len > 255)
			return -EINVAL;
		ret = put_str(&c, m->u.cmd.arg, m->u.cmd.arg_len, 2);
		break;
	case TR_CTL_REPLY:
		put(&c, (uint32_t)m->u.reply.status, 4);
		put(&c, m->u.reply.code, 4);
		ret = put_str(&c, m->u.reply.text, m->u.reply.text_len, 4);
		break;
	case TR_CTL_EVENT:
		ret = put_str(&c, m->u.event.text, m->u.event.text_len, 4);
		break;
	case TR_CTL_APPLIED:
		put(&c, m->u.applied.gen, 8);
		put(&c, m->u.applied.n, 2);
		for (uint32_t k = 0; k < m->u.applied.n && !ret; k++) {
			const struct tr_ctl_knob *e = &m->u.applied.knob[k];

			ret = put_str(&c, e->name, strlen(e->name), 2);
			if (!ret)
				ret = put_str(&c, e->value, strlen(e->value), 2);
			put(&c, m->u.applied.src[k], 1);
		}
		break;
	default:
		return -EINVAL;
	}
	if (ret)
		return ret;
	if (c.bad)
		return -EMSGSIZE;
	c.len = c.off;
	c.off = 0;
	put(&c, c.len, 4);
	return (int)c.len;
}

int tr_ctl_frame_len(const void *buf, size_t len)
{
	struct cur c = { .rp = buf, .len = len };
	uint32_t n;

	if (len < TR_CTL_HDR)
		return 0;
	n = (uint32_t)get(&c, 4);
	if (n < TR_CTL_HDR || n > TR_CTL_MAX_FRAME || get(&c, 2) != TR_CTL_VERSION)
		return -EPROTO;
	return (int)n;
}

int tr_ctl_decode(const void *buf, size_t len, struct tr_ctl_msg *m)
{
	struct cur c = { .rp = buf, .len = len };
	struct tr_ctl_msg o;
	const char *s;
	uint32_t n = 0;

	if (!buf || !m || tr_ctl_frame_len(buf, len) != (int)len)
		return -EPROTO;
	memset(&o, 0, sizeof(o));
	get(&c, 6);
	o.type = (enum tr_ctl_type)get(&c, 2);
	switch (o.type) {
	case TR_CTL_HELLO:
		o.u.hello.pid = (uint32_t)get(&c, 4);
		o.u.hello.rank = (int32_t)(uint32_t)get(&c, 4);
		o.u.hello.nplanes = (uint32_t)get(&c, 4);
		s = get_str(&c, 2, &n);
		if (!s || n >= TR_CTL_NAME_MAX)
			return -EBADMSG;
		memcpy(o.u.hello.name, s, n);
		break;
	case TR_CTL_WELCOME:
		o.u.welcome.status = (int32_t)(uint32_t)get(&c, 4);
		o.u.welcome.client = (uint32_t)get(&c, 4);
		o.u.welcome.table_size = (uint32_t)get(&c, 4);
		o.u.welcome.gen = get(&c, 8);
		break;
	case TR_CTL_NOTIFY:
		o.u.notify.gen = get(&c, 8);
		break;
	case TR_CTL_COUNTERS:
		o.u.counters.size = (uint32_t)get(&c, 4);
		break;
	case TR_CTL_CMD:
		o.u.cmd.op = (uint16_t)get(&c, 2);
		o.u.cmd.flags = (uint16_t)get(&c, 2);
		o.u.cmd.timeout_ms = (uint32_t)get(&c, 4);
		o.u.cmd.arg = get_str(&c, 2, &n);
		if (n > 255)
			return -EBADMSG;
		o.u.cmd.arg_len = (uint16_t)n;
		break;
	case TR_CTL_REPLY:
		o.u.reply.status = (int32_t)(uint32_t)get(&c, 4);
		o.u.reply.code = (uint32_t)get(&c, 4);
		o.u.reply.text = get_str(&c, 4, &o.u.reply.text_len);
		break;
	case TR_CTL_EVENT:
		o.u.event.text = get_str(&c, 4, &o.u.event.text_len);
		break;
	case TR_CTL_APPLIED:
		o.u.applied.gen = get(&c, 8);
		o.u.applied.n = (uint32_t)get(&c, 2);
		if (o.u.applied.n > TR_CTL_KNOBS)
			return -EBADMSG;
		for (uint32_t k = 0; k < o.u.applied.n; k++) {
			struct tr_ctl_knob *e = &o.u.applied.knob[k];

			s = get_str(&c, 2, &n);
			if (!s || n >= TR_CTL_KNOB_NAME)
				return -EBADMSG;
			memcpy(e->name, s, n);
			s = get_str(&c, 2, &n);
			if (!s || n >= TR_CTL_KNOB_VALUE)
				return -EBADMSG;
			memcpy(e->value, s, n);
			o.u.applied.src[k] = (uint8_t)get(&c, 1);
		}
		break;
	default:
		return -EBADMSG;
	}
	if (c.bad)
		return -EBADMSG;
	if (c.off != len)
		return -EPROTO; /* trailing bytes: a frame of another layout */
	if (!valid_fields(&o))
		return -EBADMSG;
	*m = o;
	return 0;
}

static const char *const op_names[TR_CTL_OP_MAX] = {
	[TR_CTL_OP_STATUS] = "status",	 [TR_CTL_OP_CLIENTS] = "clients",
	[TR_CTL_OP_STATS] = "stats",	 [TR_CTL_OP_CONFIG] = "config",
	[TR_CTL_OP_MONITOR] = "monitor", [TR_CTL_OP_DRAIN] = "drain",
	[TR_CTL_OP_RESTORE] = "restore", [TR_CTL_OP_FAIL] = "fail",
	[TR_CTL_OP_SET] = "set",	 [TR_CTL_OP_UNSET] = "unset",
	[TR_CTL_OP_METRICS] = "metrics",
};

const char *tr_ctl_op_str(unsigned op)
{
	return op < TR_CTL_OP_MAX ? op_names[op] : NULL;
}

int tr_ctl_op_parse(const char *s)
{
	for (int op = TR_CTL_OP_STATUS; s && op < TR_CTL_OP_MAX; op++)
		if (!strcmp(s, op_names[op]))
			return op;
	return -EINVAL;
}
