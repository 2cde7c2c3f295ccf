/* Unit tests for what a verbs completion status means above the fabric
 * (lib/fabric/wc.h): which errors are the window's answer, final, and
 * which the connection's, done again on another plane. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "fabric/wc.h"

static struct tr_fab_wc classify(enum ibv_wc_status s)
{
	struct tr_fab_wc w = { .flushed = -1, .conn_fault = -1 };

	tr_fab_wc_classify(s, &w);
	return w;
}

static void test_success(void **state)
{
	struct tr_fab_wc w = classify(IBV_WC_SUCCESS);

	(void)state;
	assert_int_equal(w.status, TRIAD_S_OK);
	assert_int_equal(w.flushed, 0);
	assert_int_equal(w.conn_fault, 0);
}

/* Every status of s[0..n) is classified as status, not flushed, with
 * conn_fault as given. */
static void check_all(const enum ibv_wc_status *s, size_t n, enum triad_status status,
		      int conn_fault)
{
	for (size_t i = 0; i < n; i++) {
		struct tr_fab_wc w = classify(s[i]);

		assert_int_equal(w.status, status);
		assert_int_equal(w.flushed, 0);
		assert_int_equal(w.conn_fault, conn_fault);
	}
}

/* The QP was in the error state: the request never ran there. */
static void test_flush_is_the_connections(void **state)
{
	struct tr_fab_wc w = classify(IBV_WC_WR_FLUSH_ERR);

	(void)state;
	assert_int_equal(w.status, TRIAD_S_UNREACHABLE);
	assert_int_equal(w.flushed, 1);
	assert_int_equal(w.conn_fault, 1);
}

/* Nobody answered: another plane may reach the peer. */
static void test_retries_exceeded_are_the_connections(void **state)
{
	static const enum ibv_wc_status s[] = { IBV_WC_RETRY_EXC_ERR, IBV_WC_RNR_RETRY_EXC_ERR };

	(void)state;
	check_all(s, sizeof(s) / sizeof(s[0]), TRIAD_S_UNREACHABLE, 1);
}

/* The responder could not parse the packet stream (CI: rxe NAKed a copy
 * chunk's WRITE so, and the copy failed as a "remote access error" with
 * two planes live).  Not the window: a transport error, done again. */
static void test_invalid_request_is_the_connections(void **state)
{
	struct tr_fab_wc w = classify(IBV_WC_REM_INV_REQ_ERR);

	(void)state;
	assert_int_equal(w.status, TRIAD_S_TRANSPORT);
	assert_int_equal(w.flushed, 0);
	assert_int_equal(w.conn_fault, 1);
}

/* A response the requester cannot match to the head of its queue (CI:
 * rxe failed a copy chunk's WRITE with FATAL_ERR, which it reports for a
 * READ response met in a WRITE's place, in fabric/copy-plane-failed-4x3).
 * The packet stream's fault: a transport error, done again. */
static void test_unmatched_response_is_the_connections(void **state)
{
	static const enum ibv_wc_status s[] = { IBV_WC_FATAL_ERR, IBV_WC_BAD_RESP_ERR };

	(void)state;
	check_all(s, sizeof(s) / sizeof(s[0]), TRIAD_S_TRANSPORT, 1);
}

/* The NIC refused the keys: the window's answer (destroyed, its notice on
 * the way), final: the same keys fail on every plane. */
static void test_remote_access_is_final(void **state)
{
	struct tr_fab_wc w = classify(IBV_WC_REM_ACCESS_ERR);

	(void)state;
	assert_int_equal(w.status, TRIAD_S_REMOTE_ACCESS);
	assert_int_equal(w.flushed, 0);
	assert_int_equal(w.conn_fault, 0);
}

/* Errors of this side's own work request would repeat anywhere (a local
 * protection error: a buffer outside its registration): final. */
static void test_local_errors_are_final(void **state)
{
	static const enum ibv_wc_status s[] = {
		IBV_WC_LOC_LEN_ERR, IBV_WC_LOC_QP_OP_ERR, IBV_WC_LOC_PROT_ERR, IBV_WC_MW_BIND_ERR,
		IBV_WC_REM_OP_ERR, IBV_WC_GENERAL_ERR,
	};

	(void)state;
	check_all(s, sizeof(s) / sizeof(s[0]), TRIAD_S_TRANSPORT, 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_success),
		cmocka_unit_test(test_flush_is_the_connections),
		cmocka_unit_test(test_retries_exceeded_are_the_connections),
		cmocka_unit_test(test_invalid_request_is_the_connections),
		cmocka_unit_test(test_unmatched_response_is_the_connections),
		cmocka_unit_test(test_remote_access_is_final),
		cmocka_unit_test(test_local_errors_are_final),
	};

	return cmocka_run_group_tests_name("wc", tests, NULL, NULL);
}
