/* What a verbs completion status tells the layers above (plane.c's
 * completions).  Only the status enum of <infiniband/verbs.h>: the unit
 * tests check it on the host (tests/unit/test_wc.c). */
#ifndef TRIAD_FABRIC_WC_H
#define TRIAD_FABRIC_WC_H

#include <infiniband/verbs.h>

#include "fabric/fabric.h"

/* Fills status, flushed and conn_fault of w from a verbs status.
 *
 * conn_fault says that the connection failed the work request, not the
 * request itself, so that it may be done again on another connection:
 * a flush (the QP was in the error state), retries exceeded (nobody
 * answered), and a remote invalid request.  The last is the responder's
 * NAK for a packet stream it could not parse (an unexpected opcode in the
 * middle of a message, a length that does not match, an operation the QP
 * does not allow): triad checks every access against the owner's window
 * description before posting it, so it says nothing about the window, and
 * it moves both ends of the connection to the error state.  Only
 * REM_ACCESS_ERR is the window's answer (stale keys, docs/design.md):
 * REMOTE_ACCESS, final.
 *
 * Two more say that the requester met a response it cannot match to the
 * work request at the head of its queue, which is the packet stream's
 * fault, not the request's: FATAL_ERR (rxe: a READ response arrived while
 * the head is a WRITE; CI saw it fail a copy chunk's WRITE, and with it the
 * copy, in a storm whose plane was being failed, with two planes live) and
 * BAD_RESP_ERR (an unexpected opcode from the responder).  The lane
 * breaks on either (lib/core/lane.c) and the request is done again
 * elsewhere, as for the others. */
static inline void tr_fab_wc_classify(enum ibv_wc_status s, struct tr_fab_wc *w)
{
	w->flushed = s == IBV_WC_WR_FLUSH_ERR;
	w->conn_fault = 0;
	switch (s) {
	case IBV_WC_SUCCESS:
		w->status = TRIAD_S_OK;
		break;
	case IBV_WC_REM_ACCESS_ERR:
		w->status = TRIAD_S_REMOTE_ACCESS;
		break;
	case IBV_WC_REM_INV_REQ_ERR:
	case IBV_WC_FATAL_ERR:
	case IBV_WC_BAD_RESP_ERR:
		w->status = TRIAD_S_TRANSPORT;
		w->conn_fault = 1;
		break;
	case IBV_WC_RETRY_EXC_ERR:
	case IBV_WC_RNR_RETRY_EXC_ERR:
	case IBV_WC_WR_FLUSH_ERR:
		w->status = TRIAD_S_UNREACHABLE;
		w->conn_fault = 1;
		break;
	default:
		w->status = TRIAD_S_TRANSPORT;
		break;
	}
}

#endif
