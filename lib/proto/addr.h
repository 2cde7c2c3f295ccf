/* The address blob: what one rank publishes through a launcher (PMIx) so
 * that every other rank can reach it, in place of its line of a world file.
 *
 *   u8 'T' u8 'a'   u8 version (1)   u8 nplanes (1..TRIAD_MAX_PLANES)
 *   u16 port (big-endian, 1..65535)
 *   nplanes x 4 bytes: the IPv4 address of each plane, network order
 *
 * Exactly TR_ADDR_BLOB_LEN(nplanes) bytes; the decoder trusts nothing: a
 * blob of another length, version or plane count, port 0 or an address
 * 0.0.0.0 is rejected whole. */
#ifndef TRIAD_PROTO_ADDR_H
#define TRIAD_PROTO_ADDR_H

#include <netinet/in.h>
#include <stddef.h>
#include <stdint.h>

#include "triad.h"

#define TR_ADDR_BLOB_VERSION 1
#define TR_ADDR_BLOB_HDR 6
#define TR_ADDR_BLOB_LEN(nplanes) (TR_ADDR_BLOB_HDR + 4 * (size_t)(nplanes))
#define TR_ADDR_BLOB_MAX TR_ADDR_BLOB_LEN(TRIAD_MAX_PLANES)

struct tr_addr_blob {
	int nplanes;
	uint16_t port;
	struct in_addr addr[TRIAD_MAX_PLANES];
};

/* Writes b into buf (room for TR_ADDR_BLOB_MAX); returns its length, or
 * -EINVAL when b itself breaks the rules above. */
int tr_addr_blob_encode(uint8_t buf[TR_ADDR_BLOB_MAX], const struct tr_addr_blob *b);
/* 0; -EBADMSG (not a blob: short, bad magic, length not what nplanes says);
 * -EPROTONOSUPPORT (another version); -EINVAL (a field out of range).  b
 * is written only on success. */
int tr_addr_blob_decode(const uint8_t *buf, size_t len, struct tr_addr_blob *b);

#endif
