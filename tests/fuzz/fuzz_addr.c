/* libFuzzer target: tr_addr_blob_decode() on arbitrary bytes, as a peer's
 * launcher (PMIx) may hand them over.  A blob that decodes is within the
 * rules of proto/addr.h and encodes back to exactly the same bytes. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "proto/addr.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct tr_addr_blob b;
	uint8_t out[TR_ADDR_BLOB_MAX];
	int n;

	if (tr_addr_blob_decode(data, size, &b))
		return 0;
	if (b.nplanes < 1 || b.nplanes > TRIAD_MAX_PLANES || b.port == 0)
		abort();
	n = tr_addr_blob_encode(out, &b);
	if (n < 0 || (size_t)n != size || memcmp(out, data, size))
		abort();
	return 0;
}
