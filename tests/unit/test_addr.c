/* Unit tests for the address blob a rank publishes through its launcher
 * (lib/proto/addr.[ch]). */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <arpa/inet.h>
#include <cmocka.h>

#include "proto/addr.h"

static struct tr_addr_blob two_planes(void)
{
	struct tr_addr_blob b = { .nplanes = 2, .port = 7471 };

	inet_pton(AF_INET, "10.100.0.3", &b.addr[0]);
	inet_pton(AF_INET, "10.101.0.3", &b.addr[1]);
	return b;
}

static void test_roundtrip(void **state)
{
	static const uint8_t want[] = { 'T', 'a', 1, 2, 0x1d, 0x2f, 10, 100, 0, 3, 10, 101, 0, 3 };
	struct tr_addr_blob b = two_planes(), d;
	uint8_t buf[TR_ADDR_BLOB_MAX];

	(void)state;
	assert_int_equal(tr_addr_blob_encode(buf, &b), sizeof(want));
	assert_memory_equal(buf, want, sizeof(want));
	memset(&d, 0xaa, sizeof(d));
	assert_int_equal(tr_addr_blob_decode(buf, sizeof(want), &d), 0);
	assert_int_equal(d.nplanes, 2);
	assert_int_equal(d.port, 7471);
	assert_int_equal(d.addr[0].s_addr, b.addr[0].s_addr);
	assert_int_equal(d.addr[1].s_addr, b.addr[1].s_addr);
}

static void test_every_plane_count(void **state)
{
	struct tr_addr_blob b = { .port = 1 }, d;
	uint8_t buf[TR_ADDR_BLOB_MAX];

	(void)state;
	for (int p = 0; p < TRIAD_MAX_PLANES; p++)
		b.addr[p].s_addr = htonl(0x0a000001u + (unsigned)p);
	for (b.nplanes = 1; b.nplanes <= TRIAD_MAX_PLANES; b.nplanes++) {
		int n = tr_addr_blob_encode(buf, &b);

		assert_int_equal(n, TR_ADDR_BLOB_LEN(b.nplanes));
		assert_int_equal(tr_addr_blob_decode(buf, (size_t)n, &d), 0);
		assert_int_equal(d.nplanes, b.nplanes);
		assert_memory_equal(d.addr, b.addr, sizeof(b.addr[0]) * (size_t)b.nplanes);
	}
}

static void test_encode_refuses_bad(void **state)
{
	struct tr_addr_blob b = two_planes();
	uint8_t buf[TR_ADDR_BLOB_MAX];

	(void)state;
	b.nplanes = 0;
	assert_int_equal(tr_addr_blob_encode(buf, &b), -EINVAL);
	b.nplanes = TRIAD_MAX_PLANES + 1;
	assert_int_equal(tr_addr_blob_encode(buf, &b), -EINVAL);
	b = two_planes();
	b.port = 0;
	assert_int_equal(tr_addr_blob_encode(buf, &b), -EINVAL);
	b = two_planes();
	b.addr[1].s_addr = INADDR_ANY;
	assert_int_equal(tr_addr_blob_encode(buf, &b), -EINVAL);
}

/* Every bad blob is refused whole, and d is left alone. */
static void decode_bad(const uint8_t *buf, size_t len, int want)
{
	struct tr_addr_blob d = { .nplanes = -3 };

	assert_int_equal(tr_addr_blob_decode(buf, len, &d), want);
	assert_int_equal(d.nplanes, -3);
}

static void test_decode_bad(void **state)
{
	struct tr_addr_blob b = two_planes();
	uint8_t buf[TR_ADDR_BLOB_MAX], bad[TR_ADDR_BLOB_MAX];
	int n = tr_addr_blob_encode(buf, &b);

	(void)state;
	for (int len = 0; len < n; len++)
		decode_bad(buf, (size_t)len, -EBADMSG);
	decode_bad(buf, (size_t)n + 1, -EBADMSG); /* trailing byte */
	memcpy(bad, buf, (size_t)n);
	bad[1] = 'A';
	decode_bad(bad, (size_t)n, -EBADMSG);
	memcpy(bad, buf, (size_t)n);
	bad[2] = 2;
	decode_bad(bad, (size_t)n, -EPROTONOSUPPORT);
	memcpy(bad, buf, (size_t)n);
	bad[3] = 0;
	decode_bad(bad, TR_ADDR_BLOB_HDR, -EINVAL);
	bad[3] = TRIAD_MAX_PLANES + 1;
	decode_bad(bad, (size_t)n, -EINVAL);
	memcpy(bad, buf, (size_t)n);
	bad[4] = bad[5] = 0; /* port 0 */
	decode_bad(bad, (size_t)n, -EINVAL);
	memcpy(bad, buf, (size_t)n);
	memset(bad + 10, 0, 4); /* plane 1 at 0.0.0.0 */
	decode_bad(bad, (size_t)n, -EINVAL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_roundtrip),
		cmocka_unit_test(test_every_plane_count),
		cmocka_unit_test(test_encode_refuses_bad),
		cmocka_unit_test(test_decode_bad),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
