/* libFuzzer target: tr_world_parse() on arbitrary text.  A world that
 * parses must satisfy what world.h promises; an error must be a message
 * that names the file. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/world.h"
#include "fuzz_text.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const char name[] = "fuzz.world";
	struct tr_world w;
	char err[256];
	char *text = fuzz_text(data, size);
	int ret;

	if (!text)
		return 0;
	err[0] = '\0';
	ret = tr_world_parse(text, name, &w, err, sizeof(err));
	free(text);
	if (ret) {
		fuzz_error_names(ret, err, name);
		return 0;
	}
	if (w.size < 1 || w.size > TR_WORLD_MAX_RANKS || w.nplanes < 1 ||
	    w.nplanes > TRIAD_MAX_PLANES || w.port == 0 || !w.addr)
		abort();
	for (int k = 0; k < w.nplanes; k++)
		for (int r = 0; r < w.size; r++)
			for (int q = r + 1; q < w.size; q++)
				if (w.addr[r][k].s_addr == w.addr[q][k].s_addr)
					abort();
	tr_world_free(&w);
	if (w.addr || w.size)
		abort();
	return 0;
}
