/* libFuzzer target: the triadd protocol's decoder (lib/ctl/msg.c) on
 * arbitrary bytes, as a stream of frames.  A frame that decodes must
 * encode back to exactly its bytes (the decoder accepts nothing the
 * encoder would not write); one that does not must be refused with
 * -EPROTO or -EBADMSG, never anything else. */
#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "ctl/msg.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static uint8_t again[TR_CTL_MAX_FRAME];
	size_t off = 0;

	while (off < size) {
		struct tr_ctl_msg m;
		int n = tr_ctl_frame_len(data + off, size - off), ret, k;

		if (n == 0)
			break;
		if (n < 0) {
			if (n != -EPROTO)
				abort();
			break;
		}
		if ((size_t)n > size - off)
			break; /* incomplete: a stream reader waits for more */
		ret = tr_ctl_decode(data + off, (size_t)n, &m);
		if (ret) {
			if (ret != -EPROTO && ret != -EBADMSG)
				abort();
		} else {
			k = tr_ctl_encode(&m, again, sizeof(again));
			if (k != n || memcmp(again, data + off, (size_t)n))
				abort();
		}
		off += (size_t)n;
	}
	return 0;
}
