/* A growing text buffer for replies and events (triadd.h). */
#include <stdint.h>
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

/* The length of the well-formed UTF-8 sequence at s (RFC 3629: no
 * overlong forms, no surrogates, nothing above U+10FFFF), 0 if there is
 * none; *cp_p the code point. */
static size_t utf8_seq(const unsigned char *s, uint32_t *cp_p)
{
	uint32_t cp, min;
	size_t n;

	if (s[0] < 0x80) {
		*cp_p = s[0];
		return 1;
	}
	if ((s[0] & 0xe0) == 0xc0)
		n = 2, cp = s[0] & 0x1f, min = 0x80;
	else if ((s[0] & 0xf0) == 0xe0)
		n = 3, cp = s[0] & 0x0f, min = 0x800;
	else if ((s[0] & 0xf8) == 0xf0)
		n = 4, cp = s[0] & 0x07, min = 0x10000;
	else
		return 0;
	for (size_t i = 1; i < n; i++) {
		if ((s[i] & 0xc0) != 0x80) /* the NUL at the end stops here too */
			return 0;
		cp = cp << 6 | (s[i] & 0x3f);
	}
	if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
		return 0;
	*cp_p = cp;
	return n;
}

void td_out_json_str(struct td_out *o, const char *str)
{
	const unsigned char *s = (const unsigned char *)str;

	td_out_printf(o, "\"");
	while (*s) {
		uint32_t cp;
		size_t n = utf8_seq(s, &cp);

		if (!n) /* not UTF-8 (a name or path is bytes): U+FFFD */
			td_out_printf(o, "\\ufffd");
		else if (cp == '"' || cp == '\\')
			td_out_printf(o, "\\%c", (int)cp);
		else if (cp < 0x20 || cp == 0x7f)
			td_out_printf(o, "\\u%04x", (unsigned)cp);
		else
			td_out_printf(o, "%.*s", (int)n, (const char *)s);
		s += n ? n : 1;
	}
	td_out_printf(o, "\"");
}

size_t td_text_escape(char *dst, size_t len, const char *str)
{
	const unsigned char *s = (const unsigned char *)str;
	size_t o = 0, chars = 0;

	if (!len)
		return 0;
	while (*s) {
		uint32_t cp;
		size_t n = utf8_seq(s, &cp), w;
		char esc[8];

		/* C0 and C1 controls, DEL, a backslash (so that an escape
		 * cannot be forged) and bytes that are not UTF-8: \xNN each. */
		if (!n || cp < 0x20 || (cp >= 0x7f && cp < 0xa0) || cp == '\\') {
			if (n && cp == '\\')
				w = (size_t)snprintf(esc, sizeof(esc), "\\\\");
			else
				w = (size_t)snprintf(esc, sizeof(esc), "\\x%02x", s[0]);
			n = 1;
			if (o + w >= len)
				break;
			memcpy(dst + o, esc, w);
			chars += w;
		} else {
			w = n;
			if (o + w >= len)
				break;
			memcpy(dst + o, s, w);
			chars++;
		}
		o += w;
		s += n;
	}
	dst[o] = '\0';
	return chars;
}

void td_out_text_str(struct td_out *o, const char *s, int width)
{
	size_t len = 4 * strlen(s) + 1, chars;
	char *buf = malloc(len);

	if (!buf) {
		o->failed = 1;
		return;
	}
	chars = td_text_escape(buf, len, s);
	td_out_printf(o, "%s%*s", buf, width > (int)chars ? width - (int)chars : 0, "");
	free(buf);
}

void td_out_free(struct td_out *o)
{
	free(o->buf);
	memset(o, 0, sizeof(*o));
}
