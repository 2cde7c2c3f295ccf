/* A growing text buffer for replies and events (triadd.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "triadd.h"

static int reserve(struct td_out *o, size_t more)
{
	size_t cap = o->cap ? o->cap : 1024;
	char *b;

	if (o->failed)
		return -1;
	while (cap < o->len + more + 1)
		cap *= 2;
	if (cap == o->cap)
		return 0;
	b = realloc(o->buf, cap);
	if (!b) {
		o->failed = 1;
		return -1;
	}
	o->buf = b;
	o->cap = cap;
	return 0;
}

void td_out_printf(struct td_out *o, const char *fmt, ...)
{
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(NULL, 0, fmt, ap);
	va_end(ap);
	if (n < 0 || reserve(o, (size_t)n))
		return;
	va_start(ap, fmt);
	vsnprintf(o->buf + o->len, (size_t)n + 1, fmt, ap);
	va_end(ap);
	o->len += (size_t)n;
}

void td_out_json_str(struct td_out *o, const char *s)
{
	td_out_printf(o, "\"");
	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;

		if (c == '"' || c == '\\')
			td_out_printf(o, "\\%c", c);
		else if (c < 0x20 || c == 0x7f)
			td_out_printf(o, "\\u%04x", c);
		else
			td_out_printf(o, "%c", c);
	}
	td_out_printf(o, "\"");
}

void td_out_free(struct td_out *o)
{
	free(o->buf);
	memset(o, 0, sizeof(*o));
}
