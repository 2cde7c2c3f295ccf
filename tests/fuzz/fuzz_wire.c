/* libFuzzer target: tr_msg_decode() on arbitrary bytes.  A message that
 * decodes must encode back to exactly the same bytes (the format has one
 * encoding per message), and decode again to the same message. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "proto/wire.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct tr_msg m, m2;
	uint8_t buf[TR_WIRE_MAX_LEN];
	int n;

	if (tr_msg_decode(data, size, &m))
		return 0;
	n = tr_msg_encode(&m, buf, sizeof(buf));
	if (n < 0 || (size_t)n != size || memcmp(buf, data, size))
		abort();
	/* The encoder never writes past the length it returns. */
	if (tr_msg_encode(&m, buf, (size_t)n) != n || tr_msg_encode(&m, buf, (size_t)n - 1) >= 0)
		abort();
	if (tr_msg_decode(buf, (size_t)n, &m2) || m2.type != m.type || m2.seq != m.seq)
		abort();
	(void)tr_msg_type_str(m.type);
	return 0;
}
