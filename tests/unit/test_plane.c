/* Unit tests for the order-keeping plane switch (lib/proto/plane_switch.[ch]):
 * one test per transition and per rule of docs/spec/plane-switching.md, the
 * worked example of JP5310735B2 (Figs. 6A to 6E), and a bounded exhaustive
 * exploration of stream + switch + resend under failures, drains and
 * restores. */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <errno.h>

#include <cmocka.h>

#include "memo.h"

#include "proto/plane_switch.h"
#include "proto/stream.h"

#define NOP TR_PSW_NO_PLANE
#define NORMAL TR_PSW_NORMAL
#define PENDING TR_PSW_SWITCH_PENDING
#define SWITCHED TR_PSW_SWITCHED
#define RESTORE TR_PSW_RESTORE_PENDING
#define ORD TR_PSW_ORDERED
#define LAST TR_PSW_LAST

/* The states of every nominal plane as letters: N(ormal), P(ending switch),
 * S(witched), R(estore pending). */
static void check_states(const struct tr_psw *sw, const char *want)
{
	static const char letter[] = "NPSR";

	assert_int_equal(strlen(want), sw->nplanes);
	for (unsigned p = 0; p < sw->nplanes; p++)
		if (letter[tr_psw_state(sw, p)] != want[p])
			fail_msg("nominal plane %u: state %s, want %c", p,
				 tr_psw_state_str(tr_psw_state(sw, p)), want[p]);
}

static void check_alts(const struct tr_psw *sw, const unsigned *want)
{
	for (unsigned p = 0; p < sw->nplanes; p++)
		assert_int_equal(tr_psw_alt(sw, p), want[p]);
}

static struct tr_psw mk(unsigned planes, unsigned flags)
{
	struct tr_psw sw;

	assert_int_equal(tr_psw_init(&sw, planes, flags), 0);
	return sw;
}

/* One request through tr_psw_post(), which must POST: its plane. */
static unsigned post(struct tr_psw *sw, unsigned p, unsigned flags)
{
	unsigned plane = 12345;

	assert_int_equal(tr_psw_post(sw, p, flags, NULL, &plane), TR_PSW_POST);
	assert_true(plane < sw->nplanes);
	return plane;
}

static unsigned start(struct tr_psw *sw, unsigned p, const unsigned *inflight)
{
	unsigned plane = 12345;

	assert_int_equal(tr_psw_msg_start(sw, p, inflight, &plane), TR_PSW_POST);
	assert_true(tr_psw_inprog(sw));
	assert_int_equal(tr_psw_msg_plane(sw), plane);
	return plane;
}

static unsigned unordered(const struct tr_psw *sw, unsigned p)
{
	unsigned plane = 12345;

	assert_int_equal(tr_psw_unordered(sw, p, &plane), TR_PSW_POST);
	return plane;
}

/* ---- names and set-up ------------------------------------------------------ */

static void test_names(void **state)
{
	(void)state;
	assert_string_equal(tr_psw_state_str(NORMAL), "normal");
	assert_string_equal(tr_psw_state_str(PENDING), "switch_pending");
	assert_string_equal(tr_psw_state_str(SWITCHED), "switched");
	assert_string_equal(tr_psw_state_str(RESTORE), "restore_pending");
	assert_string_equal(tr_psw_state_str(TR_PSW_NSTATES), "?");
	assert_string_equal(tr_psw_state_str(~0u), "?");
	assert_string_equal(tr_psw_action_str(TR_PSW_NONE), "none");
	assert_string_equal(tr_psw_action_str(TR_PSW_POST), "post");
	assert_string_equal(tr_psw_action_str(TR_PSW_WAIT), "wait");
	assert_string_equal(tr_psw_action_str(TR_PSW_RESEND), "resend");
	assert_string_equal(tr_psw_action_str(TR_PSW_UNREACHABLE), "unreachable");
	assert_string_equal(tr_psw_action_str(TR_PSW_NACTIONS), "?");
	/* The states are the patent's register values 0 to 3. */
	assert_int_equal(NORMAL, 0);
	assert_int_equal(PENDING, 1);
	assert_int_equal(SWITCHED, 2);
	assert_int_equal(RESTORE, 3);
	assert_int_equal(TR_PSW_MAX_PLANES, TR_STREAM_MAX_PLANES);
}

static void test_init(void **state)
{
	struct tr_psw sw, before;
	static const unsigned alts4[] = { 1, 2, 3, 0 };

	(void)state;
	memset(&sw, 0xa5, sizeof(sw));
	assert_int_equal(tr_psw_init(&sw, 4, 0), 0);
	check_states(&sw, "NNNN");
	check_alts(&sw, alts4); /* (p + 1) mod P */
	assert_false(tr_psw_inprog(&sw));
	assert_int_equal(tr_psw_msg_plane(&sw), NOP);
	assert_false(sw.strict);
	for (unsigned k = 0; k < 4; k++)
		assert_true(tr_psw_usable(&sw, k));
	assert_false(tr_psw_usable(&sw, 4));
	assert_int_equal(tr_psw_drained(&sw, NULL), 0);

	assert_int_equal(tr_psw_init(&sw, 1, TR_PSW_STRICT), 0);
	assert_true(sw.strict);
	assert_int_equal(tr_psw_alt(&sw, 0), NOP); /* one plane: nowhere to go */
	assert_int_equal(tr_psw_init(&sw, TR_PSW_MAX_PLANES, 0), 0);
	assert_int_equal(tr_psw_alt(&sw, TR_PSW_MAX_PLANES - 1), 0);

	before = sw;
	assert_int_equal(tr_psw_init(&sw, 0, 0), -EINVAL);
	assert_int_equal(tr_psw_init(&sw, TR_PSW_MAX_PLANES + 1, 0), -EINVAL);
	assert_int_equal(tr_psw_init(&sw, 2, 0x2), -EINVAL);
	assert_memory_equal(&sw, &before, sizeof(sw));
}

/* ---- the spec's rules, one test each -------------------------------------- */

/* Rule 1: NORMAL sends on normal[p] and SWITCHED on alt[p], whatever the
 * flags. */
static void test_normal_and_switched_planes(void **state)
{
	struct tr_psw sw = mk(3, 0);

	(void)state;
	for (unsigned p = 0; p < 3; p++) {
		assert_int_equal(post(&sw, p, 0), p);
		assert_int_equal(post(&sw, p, ORD), p);
		assert_int_equal(post(&sw, p, 0), p);
		assert_int_equal(post(&sw, p, ORD), p);
		assert_int_equal(post(&sw, p, ORD | LAST), p);
		assert_int_equal(post(&sw, p, ORD | LAST), p); /* one-request message */
		assert_int_equal(post(&sw, p, LAST), p);	/* unordered: LAST means nothing */
	}
	check_states(&sw, "NNN");
	/* Plane 1 out, and its entry moved to SWITCHED by a first request. */
	assert_int_equal(tr_psw_drain(&sw, 1), TR_PSW_NONE);
	assert_int_equal(post(&sw, 1, ORD | LAST), 2);
	check_states(&sw, "NSN");
	assert_int_equal(post(&sw, 1, 0), 2);
	assert_int_equal(post(&sw, 1, ORD), 2);
	assert_int_equal(post(&sw, 1, 0), 2);
	assert_int_equal(post(&sw, 1, ORD), 2);
	assert_int_equal(post(&sw, 1, ORD | LAST), 2);
	assert_int_equal(post(&sw, 1, ORD | LAST), 2);
	check_states(&sw, "NSN");
	assert_false(tr_psw_inprog(&sw));
}

/* Rules 2 and 3: after NORMAL -> SWITCH_PENDING, the rest of the message in
 * progress goes to the old plane; the next ordered message goes to alt[p]
 * and moves the state to SWITCHED. */
static void test_switch_waits_for_message_boundary(void **state)
{
	struct tr_psw sw = mk(4, 0);

	(void)state;
	assert_int_equal(post(&sw, 2, ORD), 2); /* first of three */
	assert_int_equal(tr_psw_drain(&sw, 2), TR_PSW_NONE);
	check_states(&sw, "NNPN");
	assert_int_equal(tr_psw_alt(&sw, 2), 3);
	assert_int_equal(post(&sw, 2, ORD), 2);	       /* middle: old plane */
	check_states(&sw, "NNPN");
	assert_int_equal(post(&sw, 2, ORD | LAST), 2); /* last: old plane */
	check_states(&sw, "NNPN");		       /* a last request changes no state */
	assert_false(tr_psw_inprog(&sw));
	assert_int_equal(post(&sw, 2, ORD), 3); /* the next message: alt */
	check_states(&sw, "NNSN");
	assert_int_equal(post(&sw, 2, ORD | LAST), 3);
	check_states(&sw, "NNSN");
}

/* Rule 2, the mirror image: a restore in the middle of a message. */
static void test_restore_waits_for_message_boundary(void **state)
{
	struct tr_psw sw = mk(2, 0);

	(void)state;
	assert_int_equal(tr_psw_drain(&sw, 0), TR_PSW_NONE);
	assert_int_equal(post(&sw, 0, ORD), 1);
	check_states(&sw, "SN");
	assert_int_equal(tr_psw_restore(&sw, 0), TR_PSW_NONE);
	check_states(&sw, "RN");
	assert_int_equal(post(&sw, 0, ORD), 1); /* rest of it on alt */
	assert_int_equal(post(&sw, 0, ORD | LAST), 1);
	check_states(&sw, "RN");
	assert_int_equal(post(&sw, 0, ORD), 0); /* the next one: home again */
	check_states(&sw, "NN");
	assert_int_equal(post(&sw, 0, ORD | LAST), 0);
}

/* Rule 4: a last request clears inprog and never changes the state, in
 * every state. */
static void test_last_clears_inprog_only(void **state)
{
	(void)state;
	for (unsigned st = 0; st < TR_PSW_NSTATES; st++) {
		struct tr_psw sw = mk(2, 0), before;
		unsigned plane;

		/* Reach state st with a message in progress on nominal plane 0. */
		switch (st) {
		case NORMAL:
			start(&sw, 0, NULL);
			break;
		case PENDING:
			start(&sw, 0, NULL);
			tr_psw_drain(&sw, 0);
			break;
		case SWITCHED:
			tr_psw_drain(&sw, 0);
			start(&sw, 0, NULL);
			break;
		case RESTORE:
			tr_psw_drain(&sw, 0);
			start(&sw, 0, NULL);
			tr_psw_restore(&sw, 0);
			break;
		}
		assert_int_equal(tr_psw_state(&sw, 0), st);
		assert_true(tr_psw_inprog(&sw));
		before = sw;
		plane = post(&sw, 0, ORD | LAST);
		assert_int_equal(plane, before.msg_plane);
		assert_false(tr_psw_inprog(&sw));
		assert_int_equal(tr_psw_msg_plane(&sw), NOP);
		assert_int_equal(tr_psw_state(&sw, 0), st);
		assert_memory_equal(sw.ent, before.ent, sizeof(sw.ent));
		assert_int_equal(tr_psw_msg_end(&sw), -EINVAL);
	}
}

/* Rule 5: unordered requests never read or change inprog or the state:
 * NORMAL and RESTORE_PENDING send them on p, SWITCH_PENDING and SWITCHED on
 * alt[p], whether a message is in progress or not. */
static void test_unordered_reads_nothing(void **state)
{
	static const unsigned want[TR_PSW_NSTATES] = { 0, 1, 1, 0 };

	(void)state;
	for (unsigned st = 0; st < TR_PSW_NSTATES; st++) {
		for (int busy = 0; busy < 2; busy++) {
			struct tr_psw sw = mk(2, 0), before;

			if (st == SWITCHED || st == RESTORE) {
				tr_psw_drain(&sw, 0);
				post(&sw, 0, ORD | LAST);
			}
			if (st == PENDING)
				tr_psw_drain(&sw, 0);
			if (st == RESTORE)
				tr_psw_restore(&sw, 0);
			if (busy)
				post(&sw, 1, ORD); /* another nominal plane's message */
			assert_int_equal(tr_psw_state(&sw, 0), st);
			before = sw;
			for (int i = 0; i < 3; i++) {
				assert_int_equal(unordered(&sw, 0), want[st]);
				assert_int_equal(post(&sw, 0, 0), want[st]);
				assert_int_equal(post(&sw, 0, LAST), want[st]);
			}
			assert_memory_equal(&sw, &before, sizeof(sw));
		}
	}
}

/* A message of one request is both first and last: it makes the
 * transition and leaves inprog clear (the case the patent's flowchart
 * misses). */
static void test_one_request_message(void **state)
{
	struct tr_psw sw = mk(3, 0);

	(void)state;
	tr_psw_drain(&sw, 0);
	check_states(&sw, "PNN");
	assert_int_equal(post(&sw, 0, ORD | LAST), 1);
	check_states(&sw, "SNN");
	assert_false(tr_psw_inprog(&sw));
	tr_psw_restore(&sw, 0);
	check_states(&sw, "RNN");
	assert_int_equal(post(&sw, 0, ORD | LAST), 0);
	check_states(&sw, "NNN");
	assert_false(tr_psw_inprog(&sw));
	/* The same through msg_start/msg_end. */
	tr_psw_drain(&sw, 2);
	assert_int_equal(start(&sw, 2, NULL), 0);
	assert_int_equal(tr_psw_msg_end(&sw), TR_PSW_NONE);
	check_states(&sw, "NNS");
	assert_false(tr_psw_inprog(&sw));
}

/* ---- plane events ---------------------------------------------------------- */

static void test_drain_transitions(void **state)
{
	struct tr_psw sw = mk(4, 0), before;
	unsigned alts[4];

	(void)state;
	/* NORMAL -> SWITCH_PENDING, alt[p] the next usable plane. */
	assert_int_equal(tr_psw_drain(&sw, 1), TR_PSW_NONE);
	check_states(&sw, "NPNN");
	assert_int_equal(tr_psw_alt(&sw, 1), 2);
	assert_false(tr_psw_usable(&sw, 1));
	/* Again: nothing changes. */
	before = sw;
	assert_int_equal(tr_psw_drain(&sw, 1), TR_PSW_NONE);
	assert_memory_equal(&sw, &before, sizeof(sw));
	/* SWITCH_PENDING whose alt goes out: the next usable plane. */
	assert_int_equal(tr_psw_drain(&sw, 2), TR_PSW_NONE);
	check_states(&sw, "NPPN");
	memcpy(alts, (unsigned[]){ 1, 3, 3, 0 }, sizeof(alts));
	check_alts(&sw, alts);
	/* Taking alt 3, and plane 1 comes back: SWITCHED -> RESTORE_PENDING. */
	assert_int_equal(post(&sw, 1, ORD | LAST), 3);
	check_states(&sw, "NSPN");
	assert_int_equal(tr_psw_restore(&sw, 1), TR_PSW_NONE);
	check_states(&sw, "NRPN");
	/* RESTORE_PENDING -> SWITCHED when p goes out again. */
	assert_int_equal(tr_psw_drain(&sw, 1), TR_PSW_NONE);
	check_states(&sw, "NSPN");
	assert_int_equal(tr_psw_alt(&sw, 1), 3);
	/* SWITCHED whose alt goes out with its message in progress there:
	 * SWITCH_PENDING, the message finishes on the old alt, the next one
	 * takes the new alt. */
	assert_int_equal(post(&sw, 1, ORD), 3);
	assert_int_equal(tr_psw_drain(&sw, 3), TR_PSW_NONE);
	check_states(&sw, "NPPP");
	assert_int_equal(tr_psw_alt(&sw, 1), 0);
	assert_int_equal(tr_psw_alt(&sw, 3), 0);
	assert_int_equal(post(&sw, 1, ORD), 3);
	assert_int_equal(post(&sw, 1, ORD | LAST), 3);
	assert_int_equal(post(&sw, 1, ORD | LAST), 0);
	check_states(&sw, "NSPP");
	/* The last usable plane cannot be drained. */
	before = sw;
	assert_int_equal(tr_psw_drain(&sw, 0), -EBUSY);
	assert_memory_equal(&sw, &before, sizeof(sw));
	assert_int_equal(tr_psw_drain(&sw, 4), -EINVAL);
	assert_memory_equal(&sw, &before, sizeof(sw));
	/* SWITCHED whose alt goes out with no message in progress: new alt at
	 * once (plane 2 back first). */
	tr_psw_restore(&sw, 2);
	check_states(&sw, "NSNP");
	assert_int_equal(tr_psw_alt(&sw, 1), 0);
	assert_int_equal(tr_psw_alt(&sw, 3), 0);
	tr_psw_drain(&sw, 0);
	check_states(&sw, "PSNP");
	/* (A NORMAL entry does not use its alt: 2 keeps its last one.) */
	memcpy(alts, (unsigned[]){ 2, 2, 0, 2 }, sizeof(alts));
	check_alts(&sw, alts);
}

static void test_fault_transitions(void **state)
{
	struct tr_psw sw = mk(3, 0), before;
	unsigned plane = 77;

	(void)state;
	/* A fault with no message in progress: like a drain. */
	assert_int_equal(tr_psw_fault(&sw, 2, &plane), TR_PSW_NONE);
	assert_int_equal(plane, 77);
	check_states(&sw, "NNP");
	assert_int_equal(tr_psw_alt(&sw, 2), 0);
	assert_int_equal(sw.failed, 1u << 2);
	/* Again: nothing changes. */
	before = sw;
	assert_int_equal(tr_psw_fault(&sw, 2, &plane), TR_PSW_NONE);
	assert_memory_equal(&sw, &before, sizeof(sw));
	assert_int_equal(tr_psw_fault(&sw, 3, &plane), -EINVAL);
	assert_memory_equal(&sw, &before, sizeof(sw));

	/* A fault under the message in progress: it starts again on alt at
	 * once (NORMAL -> SWITCH_PENDING -> SWITCHED). */
	assert_int_equal(post(&sw, 0, ORD), 0);
	assert_int_equal(tr_psw_fault(&sw, 0, &plane), TR_PSW_RESEND);
	assert_int_equal(plane, 1);
	check_states(&sw, "SNP");
	assert_true(tr_psw_inprog(&sw));
	assert_int_equal(tr_psw_msg_plane(&sw), 1);
	assert_int_equal(post(&sw, 0, ORD | LAST), 1);

	/* A drained plane that fails under its last message. */
	tr_psw_restore(&sw, 0);
	tr_psw_restore(&sw, 2);
	check_states(&sw, "RNN");
	assert_int_equal(post(&sw, 0, ORD), 0);
	check_states(&sw, "NNN");
	tr_psw_drain(&sw, 0);
	check_states(&sw, "PNN");
	assert_int_equal(post(&sw, 0, ORD), 0); /* finishing on the drained plane */
	assert_int_equal(tr_psw_fault(&sw, 0, &plane), TR_PSW_RESEND);
	assert_int_equal(plane, 1);
	check_states(&sw, "SNN");
	assert_int_equal(post(&sw, 0, ORD | LAST), 1);

	/* The alt of a RESTORE_PENDING entry fails under its message: it
	 * starts again at home, RESTORE_PENDING -> NORMAL. */
	assert_int_equal(post(&sw, 0, ORD), 1);
	tr_psw_restore(&sw, 0);
	check_states(&sw, "RNN");
	assert_int_equal(tr_psw_fault(&sw, 1, &plane), TR_PSW_RESEND);
	assert_int_equal(plane, 0);
	check_states(&sw, "NPN");
	assert_int_equal(tr_psw_msg_plane(&sw), 0);
	assert_int_equal(post(&sw, 0, ORD | LAST), 0);
}

/* A second fault while switched picks the next live plane; any number of
 * planes may fail while one lives; with none, every message fails. */
static void test_second_fault_and_none_left(void **state)
{
	struct tr_psw sw = mk(4, 0);
	unsigned plane = 0, alts[4];

	(void)state;
	assert_int_equal(post(&sw, 1, ORD), 1);
	assert_int_equal(tr_psw_fault(&sw, 1, &plane), TR_PSW_RESEND);
	assert_int_equal(plane, 2);
	check_states(&sw, "NSNN");
	/* The alternate fails under the message: the next live plane. */
	assert_int_equal(tr_psw_fault(&sw, 2, &plane), TR_PSW_RESEND);
	assert_int_equal(plane, 3);
	check_states(&sw, "NSPN");
	memcpy(alts, (unsigned[]){ 1, 3, 3, 0 }, sizeof(alts));
	check_alts(&sw, alts);
	assert_int_equal(post(&sw, 1, ORD | LAST), 3);
	assert_int_equal(post(&sw, 2, ORD | LAST), 3);
	check_states(&sw, "NSSN");
	/* And the next: 0 is all that lives. */
	assert_int_equal(post(&sw, 1, ORD), 3);
	assert_int_equal(tr_psw_fault(&sw, 3, &plane), TR_PSW_RESEND);
	assert_int_equal(plane, 0);
	check_states(&sw, "NSSP");
	memcpy(alts, (unsigned[]){ 1, 0, 0, 0 }, sizeof(alts));
	check_alts(&sw, alts);
	for (unsigned p = 0; p < 4; p++) {
		assert_int_equal(unordered(&sw, p), 0);
		assert_int_equal(tr_psw_resend(&sw, p, &plane), TR_PSW_POST);
		assert_int_equal(plane, 0);
	}
	/* None left: the message in progress fails, and every one after. */
	assert_int_equal(tr_psw_fault(&sw, 0, &plane), TR_PSW_UNREACHABLE);
	assert_false(tr_psw_inprog(&sw));
	/* Nominal 1 was left (SWITCHED -> SWITCH_PENDING) and its message
	 * could not start again anywhere. */
	check_states(&sw, "PPSP");
	for (unsigned p = 0; p < 4; p++) {
		assert_int_equal(tr_psw_alt(&sw, p), NOP);
		assert_int_equal(tr_psw_msg_start(&sw, p, NULL, &plane), TR_PSW_UNREACHABLE);
		assert_int_equal(tr_psw_post(&sw, p, ORD, NULL, &plane), TR_PSW_UNREACHABLE);
		assert_int_equal(tr_psw_unordered(&sw, p, &plane), TR_PSW_UNREACHABLE);
		assert_int_equal(tr_psw_resend(&sw, p, &plane), TR_PSW_UNREACHABLE);
		assert_false(tr_psw_inprog(&sw));
	}
	assert_int_equal(tr_psw_fault(&sw, 0, &plane), TR_PSW_UNREACHABLE);
	/* One comes back: every entry finds it. */
	assert_int_equal(tr_psw_restore(&sw, 2), TR_PSW_NONE);
	check_states(&sw, "PPRP");
	memcpy(alts, (unsigned[]){ 2, 2, NOP, 2 }, sizeof(alts));
	check_alts(&sw, alts);
	for (unsigned p = 0; p < 4; p++)
		assert_int_equal(post(&sw, p, ORD | LAST), 2);
	check_states(&sw, "SSNS");
}

static void test_restore_transitions(void **state)
{
	struct tr_psw sw = mk(3, 0);

	(void)state;
	/* SWITCH_PENDING -> NORMAL: the drain is called off, the message in
	 * progress goes on at home. */
	assert_int_equal(post(&sw, 0, ORD), 0);
	tr_psw_drain(&sw, 0);
	check_states(&sw, "PNN");
	assert_int_equal(tr_psw_restore(&sw, 0), TR_PSW_NONE);
	check_states(&sw, "NNN");
	assert_int_equal(post(&sw, 0, ORD | LAST), 0);
	/* SWITCH_PENDING with the message in progress on an old alt ->
	 * RESTORE_PENDING: it finishes there, the next goes home. */
	tr_psw_drain(&sw, 0);
	assert_int_equal(post(&sw, 0, ORD), 1);
	tr_psw_drain(&sw, 1);
	check_states(&sw, "PPN");
	assert_int_equal(tr_psw_alt(&sw, 0), 2);
	tr_psw_restore(&sw, 0);
	check_states(&sw, "RPN");
	assert_int_equal(tr_psw_alt(&sw, 0), 1);
	assert_int_equal(post(&sw, 0, ORD | LAST), 1);
	assert_int_equal(post(&sw, 0, ORD | LAST), 0);
	check_states(&sw, "NPN");
	/* SWITCHED -> RESTORE_PENDING; restoring a usable plane changes
	 * nothing. */
	assert_int_equal(post(&sw, 1, ORD | LAST), 2);
	check_states(&sw, "NSN");
	tr_psw_restore(&sw, 1);
	check_states(&sw, "NRN");
	tr_psw_restore(&sw, 1);
	check_states(&sw, "NRN");
	assert_int_equal(tr_psw_restore(&sw, 3), -EINVAL);
}

/* "Drained" only when the plane carries nothing of the stream and will
 * carry nothing; once per going out. */
static void test_drained_report(void **state)
{
	struct tr_psw sw = mk(3, 0);
	unsigned inflight[TR_PSW_MAX_PLANES] = { 0 };
	unsigned plane;

	(void)state;
	/* An idle stream: drained at once, SWITCH_PENDING or not. */
	tr_psw_drain(&sw, 2);
	check_states(&sw, "NNP");
	assert_true(tr_psw_is_drained(&sw, 2, inflight));
	assert_int_equal(tr_psw_drained(&sw, inflight), 1u << 2);
	assert_int_equal(tr_psw_drained(&sw, inflight), 0); /* once */
	assert_false(tr_psw_is_drained(&sw, 0, inflight));  /* usable */
	assert_false(tr_psw_is_drained(&sw, 3, inflight));
	tr_psw_restore(&sw, 2);
	assert_false(tr_psw_is_drained(&sw, 2, inflight));

	/* A message in progress on the plane, then its copies in flight. */
	assert_int_equal(post(&sw, 1, ORD), 1);
	inflight[1] = 1;
	tr_psw_drain(&sw, 1);
	assert_int_equal(tr_psw_drained(&sw, inflight), 0);
	assert_int_equal(post(&sw, 1, ORD | LAST), 1);
	inflight[1] = 2;
	assert_int_equal(tr_psw_drained(&sw, inflight), 0); /* two in flight */
	inflight[1] = 0;
	assert_false(tr_psw_inprog(&sw));
	assert_true(tr_psw_is_drained(&sw, 1, inflight));
	/* Another nominal plane's message in progress on 1 (the alt of
	 * nominal 0, now drained too) keeps it busy. */
	sw = mk(3, 0);
	inflight[1] = 0;
	tr_psw_drain(&sw, 0);
	assert_int_equal(post(&sw, 0, ORD), 1);
	tr_psw_drain(&sw, 1);
	assert_int_equal(tr_psw_drained(&sw, inflight), 1u << 0);
	assert_int_equal(post(&sw, 0, ORD | LAST), 1);
	assert_int_equal(tr_psw_drained(&sw, inflight), 1u << 1);
	assert_int_equal(post(&sw, 0, ORD), 2);

	/* A fault: drained as soon as the flushed copies are counted out. */
	inflight[2] = 3;
	assert_int_equal(tr_psw_fault(&sw, 2, &plane), TR_PSW_UNREACHABLE);
	assert_int_equal(tr_psw_drained(&sw, inflight), 0);
	inflight[2] = 0;
	assert_int_equal(tr_psw_drained(&sw, inflight), 1u << 2);
	assert_int_equal(tr_psw_drained(&sw, NULL), 0);
	/* Restored, and out again: reported again. */
	tr_psw_restore(&sw, 2);
	tr_psw_restore(&sw, 0);
	tr_psw_drain(&sw, 2);
	assert_int_equal(tr_psw_drained(&sw, NULL), 1u << 2);
}

/* Strict mode: a plane change waits until the old plane has nothing in
 * flight to the peer; without it, nothing waits. */
static void test_strict_waits_for_old_plane(void **state)
{
	for (int strict = 0; strict < 2; strict++) {
		struct tr_psw sw = mk(2, strict ? TR_PSW_STRICT : 0), before;
		unsigned inflight[TR_PSW_MAX_PLANES] = { 0 };
		unsigned plane = 77;

		(void)state;
		assert_int_equal(start(&sw, 0, inflight), 0);
		inflight[0] = 2;
		tr_psw_msg_end(&sw);
		tr_psw_drain(&sw, 0);
		check_states(&sw, "PN");
		/* Plane 1 has its own traffic: it does not matter. */
		inflight[1] = 5;
		before = sw;
		if (strict) {
			assert_int_equal(tr_psw_msg_start(&sw, 0, inflight, &plane), TR_PSW_WAIT);
			assert_int_equal(plane, 0);
			assert_int_equal(tr_psw_post(&sw, 0, ORD, inflight, &plane), TR_PSW_WAIT);
			assert_memory_equal(&sw, &before, sizeof(sw));
			/* Unordered requests never wait. */
			assert_int_equal(unordered(&sw, 0), 1);
			inflight[0] = 1;
			assert_int_equal(tr_psw_msg_start(&sw, 0, inflight, &plane), TR_PSW_WAIT);
			inflight[0] = 0;
		}
		assert_int_equal(start(&sw, 0, inflight), 1);
		check_states(&sw, "SN");
		tr_psw_msg_end(&sw);
		/* No change of plane: no wait. */
		assert_int_equal(start(&sw, 0, inflight), 1);
		tr_psw_msg_end(&sw);
		/* The way back waits for plane 1. */
		tr_psw_restore(&sw, 0);
		before = sw;
		if (strict) {
			assert_int_equal(tr_psw_msg_start(&sw, 0, inflight, &plane), TR_PSW_WAIT);
			assert_int_equal(plane, 1);
			assert_memory_equal(&sw, &before, sizeof(sw));
			inflight[1] = 0;
		}
		assert_int_equal(start(&sw, 0, inflight), 0);
		check_states(&sw, "NN");
		/* Nominal plane 1's first message never waits: no previous one. */
		inflight[0] = 9;
		tr_psw_msg_end(&sw);
		tr_psw_drain(&sw, 1);
		assert_int_equal(start(&sw, 1, inflight), 0);
	}
}

/* Resend: the plane of each lost message, and last[] following it. */
static void test_resend(void **state)
{
	struct tr_psw sw = mk(3, TR_PSW_STRICT);
	unsigned inflight[TR_PSW_MAX_PLANES] = { 0 };
	unsigned plane;

	(void)state;
	assert_int_equal(start(&sw, 0, inflight), 0);
	tr_psw_msg_end(&sw);
	assert_int_equal(start(&sw, 0, inflight), 0);
	inflight[0] = 2;
	/* Plane 0 fails with both: in flight copies flushed (the stream now
	 * says 0 in flight), the second message starts again on 1. */
	assert_int_equal(tr_psw_fault(&sw, 0, &plane), TR_PSW_RESEND);
	assert_int_equal(plane, 1);
	inflight[0] = 0;
	assert_int_equal(tr_psw_resend(&sw, 0, &plane), TR_PSW_POST);
	assert_int_equal(plane, 1);
	inflight[1] = 2;
	tr_psw_msg_end(&sw);
	/* Not in progress: the plane of the next first request, no change. */
	tr_psw_restore(&sw, 0);
	check_states(&sw, "RNN");
	assert_int_equal(tr_psw_resend(&sw, 0, &plane), TR_PSW_POST);
	assert_int_equal(plane, 0);
	check_states(&sw, "RNN");
	assert_int_equal(sw.ent[0].last, 0);
	assert_int_equal(tr_psw_resend(&sw, 3, &plane), -EINVAL);
}

static void test_misuse(void **state)
{
	struct tr_psw sw = mk(2, 0), before;
	unsigned plane = 77;

	(void)state;
	before = sw;
	assert_int_equal(tr_psw_msg_start(&sw, 2, NULL, &plane), -EINVAL);
	assert_int_equal(tr_psw_unordered(&sw, 2, &plane), -EINVAL);
	assert_int_equal(tr_psw_post(&sw, 2, ORD, NULL, &plane), -EINVAL);
	assert_int_equal(tr_psw_post(&sw, 0, 0x4, NULL, &plane), -EINVAL);
	assert_int_equal(tr_psw_msg_end(&sw), -EINVAL);
	assert_int_equal(tr_psw_drain(&sw, 2), -EINVAL);
	assert_int_equal(plane, 77);
	assert_memory_equal(&sw, &before, sizeof(sw));
	/* One ordered message at a time. */
	start(&sw, 0, NULL);
	before = sw;
	assert_int_equal(tr_psw_msg_start(&sw, 0, NULL, &plane), -EBUSY);
	assert_int_equal(tr_psw_msg_start(&sw, 1, NULL, &plane), -EBUSY);
	assert_int_equal(tr_psw_post(&sw, 1, ORD, NULL, &plane), -EBUSY);
	assert_memory_equal(&sw, &before, sizeof(sw));
}

/* ---- JP5310735B2, Figs. 6A to 6E ------------------------------------------- */

/* The patent's inter-plane crossbar 105: four input ports 301 to 304 (from
 * processors 113 to 116: our four sources, each with its own switch) and
 * four output ports 305 to 308 (network planes 101 to 104: our planes 0 to
 * 3).  Each source has a switch-state register per output port, a
 * switch-destination register ((port + 1) mod 4) and one in-progress
 * register.  Output port 306 (plane 1, network plane 102) is the one that
 * fails and comes back.
 *
 * The patent's "fault" is announced while the plane still carries the
 * messages in progress (packet 605 goes to plane 102 after it): in triad's
 * terms a drain, tr_psw_drain(); triad's hard fault (nothing more can go
 * on the plane) is tr_psw_fault(). */
static void check_crossbar(struct tr_psw src[4], const char *const states[4],
			   const bool inprog[4])
{
	for (unsigned s = 0; s < 4; s++) {
		check_states(&src[s], states[s]);
		assert_int_equal(tr_psw_inprog(&src[s]), inprog[s]);
		for (unsigned p = 0; p < 4; p++)
			assert_int_equal(tr_psw_alt(&src[s], p), (p + 1) % 4);
	}
}

static void test_patent_figs_6a_to_6e(void **state)
{
	struct tr_psw src[4];
	unsigned inflight[4][TR_PSW_MAX_PLANES] = { { 0 } };

	(void)state;
	for (unsigned s = 0; s < 4; s++)
		src[s] = mk(4, 0);

	/* Before 6A: processor 113 (source 0) has begun an ordered message to
	 * port 306 (plane 1): its in-progress register 312 holds 1. */
	assert_int_equal(post(&src[0], 1, ORD), 1);
	inflight[0][1]++;

	/* Fig. 6A: just before network plane 102 fails.  Every switch-state
	 * register (309, 313, 317, 321) holds 0. */
	check_crossbar(src, (const char *const[]){ "NNNN", "NNNN", "NNNN", "NNNN" },
		       (const bool[]){ true, false, false, false });

	/* Fig. 6B: just after the fault.  In every source, the register of
	 * output port 306 (601 to 604) holds 1; the others 0. */
	for (unsigned s = 0; s < 4; s++)
		assert_int_equal(tr_psw_drain(&src[s], 1), TR_PSW_NONE);
	check_crossbar(src, (const char *const[]){ "NPNN", "NPNN", "NPNN", "NPNN" },
		       (const bool[]){ true, false, false, false });
	for (unsigned s = 0; s < 4; s++)
		assert_false(tr_psw_is_drained(&src[s], 1, inflight[s]) != (s != 0));

	/* Fig. 6C: packets arrive at ports 301 and 303.  Packet 605 (ordered,
	 * to 306) from 113: in-progress register 312 holds 1, so despite
	 * register 601 holding 1 it takes the normal destination, number 1
	 * (606): network plane 102.  Register 601 stays 1. */
	assert_int_equal(post(&src[0], 1, ORD), 1);
	inflight[0][1]++;
	check_crossbar(src, (const char *const[]){ "NPNN", "NPNN", "NPNN", "NPNN" },
		       (const bool[]){ true, false, false, false });
	/* Packet 607 (ordered, to 306) from 115 (source 2): register 320 holds
	 * 0, so it is the first packet of a message: register 603 goes 1 -> 2,
	 * register 320 0 -> 1, and it takes the switch destination, number 2
	 * (608): network plane 103. */
	assert_int_equal(post(&src[2], 1, ORD), 2);
	inflight[2][2]++;
	check_crossbar(src, (const char *const[]){ "NPNN", "NPNN", "NSNN", "NPNN" },
		       (const bool[]){ true, false, true, false });

	/* Between 6C and 6D (the patent: plane 102 is cut off once every
	 * register of port 306 reaches 2, then repaired).  Source 0 finishes
	 * its message on plane 1 and sends a one-packet message, which moves
	 * register 601 to 2; source 1 (114) sends a two-packet message; source
	 * 2 finishes its message; source 3 (116) begins one on the alternate,
	 * still in progress at 6E. */
	assert_int_equal(post(&src[0], 1, ORD | LAST), 1);
	inflight[0][1]++;
	assert_int_equal(post(&src[0], 1, ORD | LAST), 2);
	inflight[0][2]++;
	assert_int_equal(post(&src[1], 1, ORD), 2);
	assert_int_equal(post(&src[1], 1, ORD | LAST), 2);
	inflight[1][2] += 2;
	assert_int_equal(post(&src[2], 1, ORD | LAST), 2);
	inflight[2][2]++;
	assert_int_equal(post(&src[3], 1, ORD), 2);
	inflight[3][2]++;
	check_crossbar(src, (const char *const[]){ "NSNN", "NSNN", "NSNN", "NSNN" },
		       (const bool[]){ false, false, false, true });
	/* Plane 1 is drained for source 0 only once its three packets there
	 * have completed; for the others at once. */
	assert_int_equal(tr_psw_drained(&src[0], inflight[0]), 0);
	inflight[0][1] = 0;
	for (unsigned s = 0; s < 4; s++)
		assert_int_equal(tr_psw_drained(&src[s], inflight[s]), 1u << 1);

	/* Fig. 6D: just after plane 102 comes back.  Registers 601 to 604
	 * hold 3; the others 0. */
	for (unsigned s = 0; s < 4; s++)
		assert_int_equal(tr_psw_restore(&src[s], 1), TR_PSW_NONE);
	check_crossbar(src, (const char *const[]){ "NRNN", "NRNN", "NRNN", "NRNN" },
		       (const bool[]){ false, false, false, true });

	/* Fig. 6E: packets arrive at ports 301 and 304.  Packet 609 (ordered,
	 * to 306) from 113: register 312 holds 0, so it begins a message:
	 * register 601 goes 3 -> 0, register 312 0 -> 1, and it takes the
	 * normal destination, number 1 (606): network plane 102 again. */
	assert_int_equal(post(&src[0], 1, ORD), 1);
	check_crossbar(src, (const char *const[]){ "NNNN", "NRNN", "NRNN", "NRNN" },
		       (const bool[]){ true, false, false, true });
	/* Packet 610, the last of an ordered message to 306, from 116: its
	 * register 324 holds 1, so it goes 1 -> 0 and the packet takes the
	 * switch destination, number 2 (611): network plane 103, where the
	 * rest of its message went.  Register 604 stays 3. */
	assert_int_equal(post(&src[3], 1, ORD | LAST), 2);
	check_crossbar(src, (const char *const[]){ "NNNN", "NRNN", "NRNN", "NRNN" },
		       (const bool[]){ true, false, false, false });
	/* And afterwards: 116's next message goes home, register 604 3 -> 0. */
	assert_int_equal(post(&src[3], 1, ORD | LAST), 1);
	check_crossbar(src, (const char *const[]){ "NNNN", "NRNN", "NRNN", "NNNN" },
		       (const bool[]){ true, false, false, false });
}

/* ---- bounded exhaustive exploration: stream + switch + resend --------------- */

/* One sender to one peer, every message of nominal plane 0 (the home
 * plane), msgs messages of pkts packets each; every packet is one stream
 * message with its own sequence number, the last one closing the ordered
 * message.  Each plane is an RC QP: a FIFO of the copies posted on it, the
 * first d delivered and waiting for their send completion (in order).  The
 * moves:
 *   post     the next packet, on the plane the switch gives (a first packet
 *            asks tr_psw_msg_start(), which may say WAIT in strict mode:
 *            then there is no post move; the others take
 *            tr_psw_msg_plane(); the last one calls tr_psw_msg_end())
 *   deliver  the first undelivered copy of a live plane reaches the peer
 *   ack      the oldest delivered copy of a plane completes
 *   fail     a live plane fails while another stays usable (at most
 *            max_fail times): its copies are flushed, delivered or not, the
 *            stream loses them, the switch hears tr_psw_fault(), and the
 *            caller posts every lost packet again at once, in sequence
 *            order, where tr_psw_resend() says
 *   drain    a usable plane is drained while another stays usable (at
 *            most max_drain times)
 *   restore  a failed or drained plane comes back (a failed one empty)
 * After every move tr_psw_drained() is asked; each plane it reports must
 * carry nothing and be given to no post until it is restored.  Checked
 * after every move: the engines agree with the model; the copies in flight
 * of one message are on one plane; every packet reaching the application
 * is new, after every earlier packet of its message (and, in strict mode,
 * after every earlier packet); at the end, everything delivered exactly
 * once and acknowledged.  Equal states are explored once (memo). */

#define XP 3
#define XK 6
#define XKEY 128

struct xcfg {
	unsigned planes, msgs, pkts, max_fail, max_drain;
	bool strict;
	uint32_t first;
};

struct xworld {
	struct tr_stream_tx tx;
	struct tr_stream_rx rx;
	struct tr_psw sw;
	unsigned posted, fails, drains;
	bool alive[XP];
	unsigned out; /* planes reported drained, not restored since */
	uint8_t q[XP][XK];
	unsigned n[XP], d[XP];
	bool lost[XK], acked[XK];
	uint8_t delivered[XK];
};

struct xstats {
	uint64_t waits, resends, drained, dups;
};

static struct xstats xs;

static unsigned xtotal(const struct xcfg *c)
{
	return c->msgs * c->pkts;
}

static void xpush(struct xworld *w, unsigned p, unsigned g)
{
	assert_true(w->n[p] < XK);
	w->q[p][w->n[p]++] = (uint8_t)g;
}

static void xinit(const struct xcfg *c, struct xworld *w)
{
	memset(w, 0, sizeof(*w));
	tr_stream_tx_init(&w->tx, c->first);
	tr_stream_rx_init(&w->rx, c->first);
	assert_int_equal(tr_psw_init(&w->sw, c->planes, c->strict ? TR_PSW_STRICT : 0), 0);
	for (unsigned p = 0; p < c->planes; p++)
		w->alive[p] = true;
}

/* The engines against the model, and the invariants. */
static void xcheck(const struct xcfg *c, const struct xworld *w)
{
	const struct tr_psw *sw = &w->sw;
	unsigned nlost = 0, plane_of_all = NOP;

	for (unsigned p = 0; p < TR_STREAM_MAX_PLANES; p++)
		assert_int_equal(tr_stream_tx_inflight(&w->tx, p), p < c->planes ? w->n[p] : 0);
	for (unsigned p = 0; p < c->planes; p++) {
		if (!w->alive[p])
			assert_false(tr_psw_usable(sw, p));
		if (w->out >> p & 1u)
			assert_int_equal(w->n[p], 0);
	}
	/* The entry of nominal plane 0 and its message in progress. */
	if (tr_psw_inprog(sw)) {
		unsigned m = tr_psw_msg_plane(sw);

		assert_true(m < c->planes && w->alive[m]);
		assert_false(w->out >> m & 1u);
		if (tr_psw_state(sw, 0) == NORMAL)
			assert_int_equal(m, 0);
		if (tr_psw_state(sw, 0) == SWITCHED || tr_psw_state(sw, 0) == RESTORE)
			assert_int_equal(m, tr_psw_alt(sw, 0));
	}
	for (unsigned m = 0; m < c->msgs; m++) {
		unsigned on = NOP;

		for (unsigned j = 0; j < c->pkts; j++) {
			unsigned g = m * c->pkts + j;
			int plane;

			if (g >= w->posted)
				break;
			plane = tr_stream_tx_plane(&w->tx, c->first + g);
			if (w->acked[g]) {
				assert_int_equal(plane, -EINVAL);
				continue;
			}
			nlost += w->lost[g];
			assert_int_equal(plane, w->lost[g] ? (int)NOP : plane);
			if (w->lost[g])
				continue;
			assert_true(plane >= 0 && (unsigned)plane < c->planes && w->alive[plane]);
			/* One message's copies in flight: one plane. */
			if (on == NOP)
				on = (unsigned)plane;
			assert_int_equal(plane, on);
			/* Strict: everything in flight on one plane. */
			if (c->strict) {
				if (plane_of_all == NOP)
					plane_of_all = (unsigned)plane;
				assert_int_equal(plane, plane_of_all);
			}
		}
	}
	/* Lost packets are posted again within the fault move. */
	assert_int_equal(nlost, 0);
	assert_int_equal(tr_stream_tx_waiting(&w->tx), 0);
	assert_true(w->rx.too_far == 0);
}

static void xsettle(const struct xcfg *c, struct xworld *w)
{
	unsigned news = tr_psw_drained(&w->sw, w->tx.inflight);

	for (unsigned k = 0; k < c->planes; k++) {
		if (!(news >> k & 1u))
			continue;
		assert_int_equal(w->n[k], 0);
		assert_false(tr_psw_usable(&w->sw, k));
		assert_false(tr_psw_inprog(&w->sw) && tr_psw_msg_plane(&w->sw) == k);
		assert_false(w->out >> k & 1u);
		w->out |= 1u << k;
		xs.drained++;
	}
	assert_int_equal(news >> c->planes, 0);
	xcheck(c, w);
}

static void xend(const struct xcfg *c, const struct xworld *w)
{
	assert_int_equal(w->posted, xtotal(c));
	for (unsigned g = 0; g < xtotal(c); g++) {
		assert_int_equal(w->delivered[g], 1);
		assert_true(w->acked[g]);
	}
	assert_false(tr_psw_inprog(&w->sw));
	assert_int_equal(tr_stream_tx_unacked(&w->tx), 0);
	assert_int_equal(tr_stream_rx_next(&w->rx), c->first + xtotal(c));
	assert_true(w->rx.delivered == xtotal(c));
	/* Every plane out of use ends reported drained. */
	for (unsigned k = 0; k < c->planes; k++)
		assert_true(tr_psw_usable(&w->sw, k) || (w->out >> k & 1u));
}

static unsigned other_usable(const struct xworld *w, unsigned p)
{
	return w->sw.usable & ~(1u << p);
}

#define XSUCC (1 + 5 * XP)
static unsigned xsucc(const struct xcfg *c, const struct xworld *w, struct xworld *out)
{
	unsigned k = 0;

	if (w->posted < xtotal(c)) { /* post */
		struct xworld *x = &out[k];
		unsigned g = w->posted, plane = NOP;
		uint32_t seq;
		bool go = true;

		*x = *w;
		if (g % c->pkts == 0) {
			int r = tr_psw_msg_start(&x->sw, 0, x->tx.inflight, &plane);

			if (r == TR_PSW_WAIT) {
				assert_true(c->strict);
				assert_true(plane < c->planes && x->tx.inflight[plane] > 0);
				xs.waits++;
				go = false;
			} else {
				assert_int_equal(r, TR_PSW_POST);
			}
		} else {
			plane = tr_psw_msg_plane(&x->sw);
		}
		if (go) {
			assert_true(plane < c->planes && x->alive[plane]);
			assert_false(x->out >> plane & 1u);
			assert_int_equal(tr_stream_tx_assign(&x->tx, plane, &seq), 0);
			assert_int_equal(seq, c->first + g);
			xpush(x, plane, g);
			x->posted++;
			if (g % c->pkts == c->pkts - 1)
				assert_int_equal(tr_psw_msg_end(&x->sw), TR_PSW_NONE);
			k++;
		}
	}
	for (unsigned p = 0; p < c->planes; p++) {
		struct xworld *x;

		if (w->alive[p] && w->d[p] < w->n[p]) { /* deliver */
			unsigned g;
			enum tr_seq_verdict v;

			x = &out[k++];
			*x = *w;
			g = x->q[p][x->d[p]++];
			v = tr_stream_rx_accept(&x->rx, c->first + g);
			if (v != (x->delivered[g] ? TR_SEQ_DUPLICATE : TR_SEQ_NEW))
				fail_msg("packet %u on plane %u, delivered %u times: verdict %d", g, p,
					 x->delivered[g], v);
			if (v == TR_SEQ_NEW) {
				unsigned from = c->strict ? 0 : g - g % c->pkts;

				for (unsigned h = from; h < g; h++)
					if (!x->delivered[h])
						fail_msg("packet %u delivered before packet %u", g, h);
				x->delivered[g]++;
			} else {
				xs.dups++;
			}
		}
		if (w->alive[p] && w->d[p] > 0) { /* ack the oldest */
			unsigned g;

			x = &out[k++];
			*x = *w;
			g = x->q[p][0];
			memmove(x->q[p], x->q[p] + 1, XK - 1);
			x->n[p]--;
			x->d[p]--;
			assert_int_equal(tr_stream_tx_acked(&x->tx, c->first + g), 0);
			x->acked[g] = true;
		}
		if (w->alive[p] && w->fails < c->max_fail && other_usable(w, p)) { /* fail */
			bool busy = tr_psw_inprog(&w->sw) && tr_psw_msg_plane(&w->sw) == p;
			unsigned plane = NOP, rp = NOP;
			uint32_t s;
			int r;

			x = &out[k++];
			*x = *w;
			for (unsigned j = 0; j < x->n[p]; j++)
				x->lost[x->q[p][j]] = true;
			assert_int_equal(tr_stream_tx_plane_lost(&x->tx, p), x->n[p]);
			x->n[p] = x->d[p] = 0;
			x->alive[p] = false;
			x->fails++;
			r = tr_psw_fault(&x->sw, p, &plane);
			if (busy) {
				assert_int_equal(r, TR_PSW_RESEND);
				assert_int_equal(plane, tr_psw_msg_plane(&x->sw));
				assert_true(plane != p);
				xs.resends++;
			} else {
				assert_int_equal(r, TR_PSW_NONE);
			}
			while (!tr_stream_tx_first_on(&x->tx, TR_STREAM_NO_PLANE, &s)) {
				unsigned g = s - c->first;

				assert_int_equal(tr_psw_resend(&x->sw, 0, &plane), TR_PSW_POST);
				assert_true(plane < c->planes && x->alive[plane]);
				assert_true(tr_psw_usable(&x->sw, plane));
				if (rp == NOP)
					rp = plane;
				assert_int_equal(plane, rp); /* all of it on one plane */
				assert_int_equal(tr_stream_tx_moved(&x->tx, s, plane), 0);
				x->lost[g] = false;
				xpush(x, plane, g);
			}
			if (busy && rp != NOP)
				assert_int_equal(rp, tr_psw_msg_plane(&x->sw));
		}
		if (tr_psw_usable(&w->sw, p) && w->drains < c->max_drain && other_usable(w, p)) {
			x = &out[k++]; /* drain */
			*x = *w;
			assert_int_equal(tr_psw_drain(&x->sw, p), TR_PSW_NONE);
			x->drains++;
		}
		if (!tr_psw_usable(&w->sw, p)) { /* restore */
			x = &out[k++];
			*x = *w;
			x->alive[p] = true;
			x->out &= ~(1u << p);
			assert_int_equal(tr_psw_restore(&x->sw, p), TR_PSW_NONE);
		}
	}
	assert_true(k <= XSUCC);
	for (unsigned j = 0; j < k; j++)
		xsettle(c, &out[j]);
	return k;
}

/* Everything later moves read, as bytes relative to first. */
static void xkey(const struct xcfg *c, const struct xworld *w, uint8_t key[XKEY])
{
	const struct tr_psw *sw = &w->sw;
	unsigned k = 0;

	memset(key, 0, XKEY);
	key[k++] = (uint8_t)(w->tx.next - c->first);
	key[k++] = (uint8_t)(w->tx.base - c->first);
	assert_true(w->tx.acked < 256);
	key[k++] = (uint8_t)w->tx.acked;
	for (unsigned g = 0; g < xtotal(c); g++)
		key[k++] = w->tx.plane[(c->first + g) % TR_STREAM_WINDOW];
	key[k++] = (uint8_t)(w->rx.seq.next - c->first);
	assert_true(w->rx.seq.above < 256);
	key[k++] = (uint8_t)w->rx.seq.above;
	for (unsigned p = 0; p < c->planes; p++) {
		key[k++] = sw->ent[p].state;
		key[k++] = sw->ent[p].alt;
		key[k++] = sw->ent[p].last;
	}
	key[k++] = (uint8_t)sw->usable;
	key[k++] = (uint8_t)sw->failed;
	key[k++] = (uint8_t)sw->reported;
	key[k++] = sw->inprog;
	key[k++] = sw->msg_nominal;
	key[k++] = sw->msg_plane;
	key[k++] = (uint8_t)w->posted;
	key[k++] = (uint8_t)w->fails;
	key[k++] = (uint8_t)w->drains;
	key[k++] = (uint8_t)w->out;
	for (unsigned p = 0; p < c->planes; p++) {
		key[k++] = w->alive[p];
		key[k++] = (uint8_t)w->n[p];
		key[k++] = (uint8_t)w->d[p];
		for (unsigned j = 0; j < w->n[p]; j++)
			key[k++] = w->q[p][j];
	}
	for (unsigned g = 0; g < xtotal(c); g++)
		key[k++] = (uint8_t)(w->lost[g] | w->acked[g] << 1 | w->delivered[g] << 2);
	assert_true(k <= XKEY);
}

struct xrun {
	const struct xcfg *c;
	struct memo memo;
	uint64_t moves, ends;
	unsigned max_depth;
};

#define XDEPTH 96

static uint64_t xexplore(struct xrun *e, const struct xworld *w, unsigned depth)
{
	struct xworld next[XSUCC];
	uint8_t key[XKEY];
	const uint64_t *seen;
	uint64_t paths = 0;
	unsigned k;

	xkey(e->c, w, key);
	seen = memo_get(&e->memo, key);
	if (seen)
		return *seen;
	assert_true(depth < XDEPTH); /* no cycle */
	if (depth > e->max_depth)
		e->max_depth = depth;
	k = xsucc(e->c, w, next);
	if (!k) {
		xend(e->c, w);
		e->ends++;
		paths = 1;
	}
	for (unsigned j = 0; j < k; j++) {
		uint64_t sub = xexplore(e, &next[j], depth + 1);

		if (__builtin_add_overflow(paths, sub, &paths))
			paths = UINT64_MAX;
		e->moves++;
	}
	assert_int_equal(memo_put(&e->memo, key, paths), 0);
	return paths;
}

/* Every interleaving one by one (small configurations only). */
static uint64_t xwalk(const struct xcfg *c, const struct xworld *w, unsigned depth)
{
	struct xworld next[XSUCC];
	unsigned k = xsucc(c, w, next);
	uint64_t paths = 0;

	assert_true(depth < XDEPTH);
	if (!k) {
		xend(c, w);
		return 1;
	}
	for (unsigned j = 0; j < k; j++)
		paths += xwalk(c, &next[j], depth + 1);
	return paths;
}

struct xcounts {
	uint64_t states, moves, ends, paths;
	struct xstats s;
};

static struct xcounts xrun(const struct xcfg *c, bool walk)
{
	struct xrun e = { .c = c };
	struct xworld w;
	struct xcounts r;

	xinit(c, &w);
	xsettle(c, &w);
	memset(&xs, 0, sizeof(xs));
	assert_int_equal(memo_init(&e.memo, XKEY, 1 << 14), 0);
	r.paths = xexplore(&e, &w, 0);
	r.states = e.memo.len;
	r.moves = e.moves;
	r.ends = e.ends;
	r.s = xs;
	memo_free(&e.memo);
	printf("plane: %u msgs x %u pkts, %u planes, <= %u failures, <= %u drains, %s, "
	       "first %#x: %llu states, %llu moves, %llu end states, %s%llu interleavings, "
	       "longest %u; %llu waits, %llu resends, %llu drained, %llu duplicates\n",
	       c->msgs, c->pkts, c->planes, c->max_fail, c->max_drain,
	       c->strict ? "strict" : "not strict", c->first, (unsigned long long)r.states,
	       (unsigned long long)r.moves, (unsigned long long)r.ends,
	       r.paths == UINT64_MAX ? ">= " : "", (unsigned long long)r.paths, e.max_depth,
	       (unsigned long long)xs.waits, (unsigned long long)xs.resends,
	       (unsigned long long)xs.drained, (unsigned long long)xs.dups);
	assert_true(r.states > 0 && r.ends > 0);
	/* The runs do reach what they are about. */
	if (c->max_fail) {
		/* One-packet messages are never in progress between moves. */
		assert_true(c->pkts > 1 ? xs.resends > 0 : xs.resends == 0);
		assert_true(xs.dups > 0);
	}
	if (c->max_fail || c->max_drain)
		assert_true(xs.drained > 0);
	if (c->strict && (c->max_fail || c->max_drain) && c->msgs > 1)
		assert_true(xs.waits > 0);
	if (!c->strict)
		assert_true(xs.waits == 0);
	if (walk) {
		uint64_t all = xwalk(c, &w, 0);

		printf("plane: every interleaving walked one by one: %llu\n",
		       (unsigned long long)all);
		assert_true(all == r.paths);
	}
	return r;
}

static void xboth(unsigned planes, unsigned msgs, unsigned pkts, unsigned max_fail,
		  unsigned max_drain, bool walk)
{
	for (int strict = 0; strict < 2; strict++) {
		struct xcfg c = { .planes = planes, .msgs = msgs, .pkts = pkts,
				  .max_fail = max_fail, .max_drain = max_drain,
				  .strict = strict, .first = 0 };
		struct xcounts a, b;

		a = xrun(&c, walk);
		/* The same across 2^32. */
		c.first = UINT32_MAX - 2;
		b = xrun(&c, false);
		assert_memory_equal(&a, &b, sizeof(a));
	}
}

static void test_exhaustive_2_planes(void **state)
{
	(void)state;
	xboth(2, 2, 1, 1, 0, true);
	xboth(2, 3, 1, 2, 1, false);
	xboth(2, 3, 2, 2, 1, false);
}

static void test_exhaustive_3_planes(void **state)
{
	(void)state;
	xboth(3, 2, 1, 1, 1, true);
	xboth(3, 2, 2, 2, 1, false);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_names),
		cmocka_unit_test(test_init),
		cmocka_unit_test(test_normal_and_switched_planes),
		cmocka_unit_test(test_switch_waits_for_message_boundary),
		cmocka_unit_test(test_restore_waits_for_message_boundary),
		cmocka_unit_test(test_last_clears_inprog_only),
		cmocka_unit_test(test_unordered_reads_nothing),
		cmocka_unit_test(test_one_request_message),
		cmocka_unit_test(test_drain_transitions),
		cmocka_unit_test(test_fault_transitions),
		cmocka_unit_test(test_second_fault_and_none_left),
		cmocka_unit_test(test_restore_transitions),
		cmocka_unit_test(test_drained_report),
		cmocka_unit_test(test_strict_waits_for_old_plane),
		cmocka_unit_test(test_resend),
		cmocka_unit_test(test_misuse),
		cmocka_unit_test(test_patent_figs_6a_to_6e),
		cmocka_unit_test(test_exhaustive_2_planes),
		cmocka_unit_test(test_exhaustive_3_planes),
	};

	return cmocka_run_group_tests_name("plane", tests, NULL, NULL);
}
