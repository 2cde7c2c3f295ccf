/* For the fuzz targets of text parsers: the input as a C string, and the
 * check that an error message names the file. */
#ifndef TRIAD_FUZZ_TEXT_H
#define TRIAD_FUZZ_TEXT_H

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* data[0, size) with a NUL after it; NULL when out of memory. */
static inline char *fuzz_text(const uint8_t *data, size_t size)
{
	char *text = malloc(size + 1);

	if (text) {
		memcpy(text, data, size);
		text[size] = '\0';
	}
	return text;
}

/* Aborts unless ret is negative and err starts "name:". */
static inline void fuzz_error_names(int ret, const char *err, const char *name)
{
	size_t n = strlen(name);

	if (ret >= 0 || strncmp(err, name, n) || err[n] != ':')
		abort();
}

#endif
