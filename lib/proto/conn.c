/* The connection request rule (see conn.h). */
#include "proto/conn.h"

static enum tr_conn_verdict from_lower(const struct tr_conn_view *v)
{
	switch (v->phase) {
	case TR_CONN_IDLE:
		return TR_CONN_ACCEPT;
	case TR_CONN_ATTEMPT: /* both were first: the lower rank's wins */
		return TR_CONN_ACCEPT_ABANDON;
	case TR_CONN_ACCEPTING:
		/* It asks again: the connection we accepted is dead on its side
		 * (our answer or its confirmation lost, or it broke there since).
		 * Refusing would hold the lane half-made until the CM gave up on
		 * it, which rxe was once seen not to do for 5 minutes. */
		return TR_CONN_ACCEPT_ABANDON;
	case TR_CONN_UP:
		/* It connects only what it lost: ours broke while no plane could
		 * tell us (every plane down at once, say). */
		return TR_CONN_REJECT_STALE;
	default:
		return TR_CONN_REJECT;
	}
}

static enum tr_conn_verdict from_higher(const struct tr_conn_view *v)
{
	/* Lazily the higher rank asks only for a lane it never had up: if
	 * ours is up, its side failed under us (an accept lost in a burst of
	 * set-ups, half-open).  Rejecting it forever would leave the pair
	 * without the lane until our next send timed out: drop ours, and
	 * rebuild it as the lower rank does. */
	if (v->lazy && v->phase == TR_CONN_UP)
		return TR_CONN_REJECT_STALE;
	/* Eager, or a lane that was up: the lower rank (we) connects. */
	if (!v->lazy || v->ever_up)
		return TR_CONN_REJECT;
	/* Our own request is in flight and wins: the peer accepts it. */
	return v->phase == TR_CONN_IDLE ? TR_CONN_ACCEPT : TR_CONN_REJECT;
}

enum tr_conn_verdict tr_conn_on_request(const struct tr_conn_view *v)
{
	if (v->closing || v->from == v->me)
		return TR_CONN_REJECT;
	return v->from < v->me ? from_lower(v) : from_higher(v);
}

const char *tr_conn_verdict_str(enum tr_conn_verdict v)
{
	static const char *const names[] = {
		[TR_CONN_REJECT] = "reject",
		[TR_CONN_ACCEPT] = "accept",
		[TR_CONN_ACCEPT_ABANDON] = "accept, abandoning our own attempt",
		[TR_CONN_REJECT_STALE] = "reject, dropping our stale connection",
	};

	return (unsigned)v < sizeof(names) / sizeof(names[0]) ? names[v] : "?";
}
