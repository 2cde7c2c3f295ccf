/* Buffer-status flow control (docs/spec/buffer-status-flow-control.md, after
 * JP3739799B2) for one direction of one connection.
 *
 * The receiver owns K receive slots (1 <= K <= 64).  The sender picks a
 * slot it believes free, puts the slot's tag in the message and marks the
 * slot sent; the receiver reports its slots now and then in a Buffer
 * Status Message (BSM).  Every piece of state is one bit per slot in a
 * uint64_t, and every operation works on all slots at once.
 *
 * Sender (struct tr_fc_tx), per slot b:
 *   SANRR[b]  sent and not received: a message went to b, its arrival is
 *             not confirmed yet
 *   RCFR[b]   received currently full: the last BSM said b is not empty
 *   BBR[b]    buffer busy = SANRR | RCFR: do not send to b
 *   FLAG[b]   timer flag: b was in state II at the last tick and has not
 *             changed state since
 * which gives three states (SANRR and RCFR are never both set):
 *   I   (0,0)  free
 *   II  (1,0)  sent, arrival not confirmed
 *   III (0,1)  reported full, or unknown after (re)initialisation
 *
 * Receiver (struct tr_fc_rx), per slot b:
 *   NMTSR[b]  next message to send: data arrived in b since the last BSM,
 *             or b was full when the last BSM was built
 *   CFR[b]    currently full: b holds data now
 * BSM = (N = NMTSR, C = CFR), the patent's two-field form (its one-field
 * form, N alone, is not sent by triad and not built here).  After building
 * one, the receiver sets NMTSR := CFR, so C is always a subset of N.
 *
 * Sender on a BSM:  SANRR &= ~N;  RCFR = C;  BBR = SANRR | RCFR.
 * Transitions (two-field, BSM written (N,C)):
 *   I+send->II  II+(0,0)->II  II+(1,0)->I  II+(1,1)->III  II+timeout->I
 *   III+(0,0)->I  III+(1,0)->I  III+(1,1)->III
 *   I+(0,0)->I  I+(1,0)->I  I+(1,1)->III (follow from the formulas)
 *   (0,1) never comes from a correct receiver: see tr_fc_tx_bsm2().
 *
 * Timer: the patent's single free-running counter with one flag bit per
 * slot.  The caller calls tr_fc_tx_tick() once per wrap of its counter,
 * every P; a slot that entered state II times out at the second tick
 * after, i.e. between P and 2P later, unless its state changed.  P must
 * be longer than the largest gap between BSMs that reach the sender plus a
 * round trip, or a slot may be freed while the receiver still holds it.
 *
 * Everything here is pure: no clock, no I/O, no allocation, no locks; the
 * caller serialises access to each structure.  The structures are public
 * so they can be embedded (the tests read their registers); write them
 * only through the functions. */
#ifndef TRIAD_PROTO_FC_H
#define TRIAD_PROTO_FC_H

#include <stdbool.h>
#include <stdint.h>

#include "base/bits.h"

#define TR_FC_MAX_SLOTS 64

/* Message priorities: a message of priority p is sent only when at least
 * need[p] slots are free, so that the last slots are kept for the higher
 * priorities. */
enum tr_fc_prio {
	TR_FC_HIGH,
	TR_FC_MEDIUM,
	TR_FC_LOW,
	TR_FC_NPRIO
};

/* Default need[]: high 1, medium 2, low 3 free slots. */
#define TR_FC_NEED_HIGH 1
#define TR_FC_NEED_MEDIUM 2
#define TR_FC_NEED_LOW 3

/* A sender slot's state, as the patent numbers them. */
enum tr_fc_state {
	TR_FC_STATE_I,	 /* free: may be used */
	TR_FC_STATE_II,	 /* sent, arrival not confirmed */
	TR_FC_STATE_III, /* reported full, or unknown */
	TR_FC_NSTATES
};

/* ---- sender ------------------------------------------------------------ */

struct tr_fc_tx {
	uint64_t mask;	/* bit b set for every slot b < nslots */
	uint64_t sanrr; /* sent and not received */
	uint64_t rcfr;	/* received currently full (from the last BSM) */
	uint64_t bbr;	/* busy: sanrr | rcfr */
	uint64_t flag;	/* timer flags (always within state II) */
	uint64_t overdue; /* reliable: timed out, kept busy, not counted again */
	uint64_t errors;   /* slots that timed out, ever */
	uint64_t bad_bsms; /* BSMs refused as inconsistent, ever */
	unsigned nslots;
	unsigned need[TR_FC_NPRIO];
};

/* Sets up a sender for nslots slots, every slot in state III: nothing can
 * be sent before the first BSM.  Also after a reconnect: a new connection
 * starts afresh, counters too.  need may be NULL for the defaults (1, 2,
 * 3), each clamped to nslots.  Returns 0, or -EINVAL (tx untouched) unless
 * 1 <= nslots <= TR_FC_MAX_SLOTS, 1 <= need[p] <= nslots and need[HIGH]
 * <= need[MEDIUM] <= need[LOW]. */
int tr_fc_tx_init(struct tr_fc_tx *tx, unsigned nslots, const unsigned need[TR_FC_NPRIO]);

/* The lowest free slot (BBR = 0) if at least need[prio] slots are free;
 * -EAGAIN if not (the message waits), -EINVAL for an unknown prio.
 * Changes nothing: call tr_fc_tx_sent() once the message is posted. */
int tr_fc_tx_pick(const struct tr_fc_tx *tx, unsigned prio);

/* A message tagged slot was sent: SANRR[slot] = 1 (I -> II).  Returns 0,
 * -EINVAL if slot >= nslots, -EBUSY if the slot is not free (state
 * unchanged in both error cases). */
int tr_fc_tx_sent(struct tr_fc_tx *tx, unsigned slot);

/* A two-field BSM (N, C) arrived.  Bits at or above nslots are ignored.
 * A correct receiver never sends N[b] = 0 with C[b] = 1 (C is a subset of
 * N); such a BSM is refused whole: nothing changes (as if it had been
 * lost, which the protocol survives), bad_bsms goes up and -EPROTO is
 * returned.  Otherwise returns 0. */
int tr_fc_tx_bsm2(struct tr_fc_tx *tx, uint64_t n, uint64_t c);

/* One wrap of the timer counter: every slot still flagged (in state II
 * since the previous tick, no state change since) timed out and is
 * counted in errors; then every slot now in state II is flagged.
 * Returns the number of slots that timed out.
 *
 * On a lossy link (the patent's, reliable false) a slot that timed out
 * returns to state I: its message or the BSM that confirmed it was lost.
 * On a reliable connection (RC) nothing is lost while it lives, and a
 * break resets flow control: a slot in state II has its message in the
 * receiver, whose status is only late, and freeing the slot could overrun
 * a receiver whose handler keeps the message.  So it stays busy (reliable
 * true): counted once, not flagged again until its state changes. */
unsigned tr_fc_tx_tick(struct tr_fc_tx *tx, bool reliable);

static inline uint64_t tr_fc_tx_errors(const struct tr_fc_tx *tx)
{
	return tx->errors;
}

/* ---- receiver ---------------------------------------------------------- */

struct tr_fc_rx {
	uint64_t mask;	   /* bit b set for every slot b < nslots */
	uint64_t nmtsr;	   /* next message to send */
	uint64_t cfr;	   /* currently full */
	uint64_t touched;  /* slots that had an arrival or a drain since the last BSM */
	uint64_t overruns; /* arrivals into a full slot, ever */
	unsigned nslots;
	bool resync;	   /* the first BSM is owed (the sender is in state III everywhere) */
};

/* Sets up a receiver, also after a reconnect: NMTSR = CFR = 0, and a
 * first BSM due and urgent at once (the sender can send nothing until it
 * has one).  Returns 0, or -EINVAL (rx untouched) unless 1 <= nslots <=
 * TR_FC_MAX_SLOTS. */
int tr_fc_rx_init(struct tr_fc_rx *rx, unsigned nslots);

/* A message tagged slot arrived: NMTSR[slot] = CFR[slot] = 1.  Returns 0;
 * -EBUSY if the slot was already full (the sender broke the protocol: the
 * overrun is counted, the registers stay as they are); -EINVAL if
 * slot >= nslots (nothing changes). */
int tr_fc_rx_arrive(struct tr_fc_rx *rx, unsigned slot);

/* Slot was drained (consumed or forwarded): CFR[slot] = 0, NMTSR
 * untouched.  Returns 0, or -EINVAL if slot >= nslots or is not full. */
int tr_fc_rx_drain(struct tr_fc_rx *rx, unsigned slot);

/* Builds the BSM to send now (n_p = NMTSR, c_p = CFR) and then sets
 * NMTSR := CFR.  The caller must send BSMs
 * in the order built, on the path of the data. */
void tr_fc_rx_bsm(struct tr_fc_rx *rx, uint64_t *n_p, uint64_t *c_p);

/* Sending policy.  The fabric layer sends a BSM whenever the reverse
 * direction is idle (always, even if tr_fc_rx_bsm_due() is false: a
 * repeated BSM repairs one lost on a failing connection), piggybacks one
 * on reverse traffic when due, and sends one at once (after the message
 * in progress) when urgent.
 *
 * Due: a slot had an arrival or a drain since the last BSM, or the first
 * BSM is pending; the next BSM would tell the sender something new. */
bool tr_fc_rx_bsm_due(const struct tr_fc_rx *rx);

/* Urgent (tr_fc_rx_bsm_decide()'s rule 4): the first BSM is pending, or
 * the next BSM would carry the sender's free count across a priority
 * threshold: with
 *   seen = nslots - popcount(NMTSR)  the most slots the sender can think
 *          free now (every slot reported full by the last BSM or filled
 *          since is busy there until the next BSM), and
 *   next = nslots - popcount(CFR)    the free slots the next BSM reports,
 * there is a priority p with seen < need[p] <= next.  next > seen only
 * when a slot drained since it was last reported (N = 1, C = 0).
 * Messages still in flight lower both counts at the sender by the same
 * unknown amount, which this cannot see; urgency only orders BSMs, it
 * never matters for safety. */

/* The standalone BSM send decision: what to do about a BSM that no
 * reverse-direction message can carry.  A pure function of the receiver's
 * registers, the peer's thresholds (need, NULL for the defaults, clamped
 * to nslots as in tr_fc_tx_init()) and what the caller knows about its send side;
 * it changes nothing.  The rules, first match wins:
 *
 *  1. Nothing due (tr_fc_rx_bsm_due() false): NONE.  The idle-repeat BSM
 *     that repairs a lost one is the caller's business, not this one's.
 *  2. No send room (no free send buffer or no send-queue entry):
 *     WAIT_ROOM.  The caller asks for a send completion and decides again
 *     when one frees room.
 *  3. In flight: at most TR_FC_BSM_MAX_INFLIGHT - 1 (one) standalone BSM
 *     may be posted and not completed, TR_FC_BSM_MAX_INFLIGHT (two) when
 *     the BSM is urgent; beyond that, BUSY.  The completion of one in
 *     flight decides again; force does not lift this limit.
 *  4. Urgent (above: the first BSM is pending, or the BSM carries the
 *     sender's free count across a priority threshold): SEND at once.
 *  5. Two thirds: at least two thirds of the slots unreported, i.e.
 *     3 * popcount(NMTSR) >= 2 * nslots (NMTSR: the slots the sender
 *     still counts as busy until the next BSM): SEND at once, before the
 *     sender runs short.  With 6 slots, 3 unreported linger and 4 send.
 *  6. Otherwise LINGER: wait up to the linger time (the caller starts its
 *     timer if it is not running) so that one BSM covers several slots;
 *     a streaming sender then costs a BSM per several messages, not one
 *     each.  When that timer expires the caller decides again with force
 *     set, which turns this LINGER into SEND (rules 1 to 3 still apply).
 *
 * On SEND the caller stops its linger timer, builds the BSM with
 * tr_fc_rx_bsm() and posts it, counting it in inflight until its send
 * completes. */
enum tr_fc_bsm_action {
	TR_FC_BSM_NONE,	     /* nothing new to report */
	TR_FC_BSM_WAIT_ROOM, /* due, but no room to post: wait for a send completion */
	TR_FC_BSM_BUSY,	     /* due, but enough BSMs in flight: their completion decides again */
	TR_FC_BSM_LINGER,    /* due, not pressing: wait for more news or the linger timer */
	TR_FC_BSM_SEND,	     /* post a standalone BSM now */
	TR_FC_BSM_NACTIONS
};

#define TR_FC_BSM_MAX_INFLIGHT 2

/* What the caller knows about its send side when it decides. */
struct tr_fc_bsm_in {
	unsigned inflight; /* standalone BSMs posted and not completed */
	bool room;	   /* a send buffer and a send-queue entry are free */
	bool force;	   /* the linger timer expired: no more waiting */
};

enum tr_fc_bsm_action tr_fc_rx_bsm_decide(const struct tr_fc_rx *rx,
					  const unsigned need[TR_FC_NPRIO],
					  const struct tr_fc_bsm_in *in);

static inline uint64_t tr_fc_rx_overruns(const struct tr_fc_rx *rx)
{
	return rx->overruns;
}

#endif
