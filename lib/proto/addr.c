/* The address blob (addr.h): a rank's plane addresses as published through
 * the launcher. */
#include "proto/addr.h"

#include <errno.h>
#include <string.h>

static int blob_ok(const struct tr_addr_blob *b)
{
	if (b->nplanes < 1 || b->nplanes > TRIAD_MAX_PLANES || b->port == 0)
		return 0;
	for (int p = 0; p < b->nplanes; p++)
		if (b->addr[p].s_addr == INADDR_ANY)
			return 0;
	return 1;
}

int tr_addr_blob_encode(uint8_t buf[TR_ADDR_BLOB_MAX], const struct tr_addr_blob *b)
{
	if (!blob_ok(b))
		return -EINVAL;
	buf[0] = 'T';
	buf[1] = 'a';
	buf[2] = TR_ADDR_BLOB_VERSION;
	buf[3] = (uint8_t)b->nplanes;
	buf[4] = (uint8_t)(b->port >> 8);
	buf[5] = (uint8_t)b->port;
	for (int p = 0; p < b->nplanes; p++)
		memcpy(buf + TR_ADDR_BLOB_LEN(p), &b->addr[p].s_addr, 4);
	return (int)TR_ADDR_BLOB_LEN(b->nplanes);
}

int tr_addr_blob_decode(const uint8_t *buf, size_t len, struct tr_addr_blob *b)
{
	struct tr_addr_blob v = { 0 };

	if (len < TR_ADDR_BLOB_HDR || buf[0] != 'T' || buf[1] != 'a')
		return -EBADMSG;
	if (buf[2] != TR_ADDR_BLOB_VERSION)
		return -EPROTONOSUPPORT;
	v.nplanes = buf[3];
	if (v.nplanes < 1 || v.nplanes > TRIAD_MAX_PLANES)
		return -EINVAL;
	if (len != TR_ADDR_BLOB_LEN(v.nplanes))
		return -EBADMSG;
	v.port = (uint16_t)(buf[4] << 8 | buf[5]);
	for (int p = 0; p < v.nplanes; p++)
		memcpy(&v.addr[p].s_addr, buf + TR_ADDR_BLOB_LEN(p), 4);
	if (!blob_ok(&v))
		return -EINVAL;
	*b = v;
	return 0;
}
