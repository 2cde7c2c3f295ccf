/* Unit tests for the order-keeping plane switch (lib/proto/plane_switch.[ch]):
 * one test per transition and per rule of docs/spec/plane-switching.md, and
 * the worked example of JP5310735B2 (Figs. 6A to 6E).  The message stream
 * under faults is model-checked in test_stream.c. */
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

#include "proto/plane_switch.h"

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
	assert_int_equal(TR_PSW_MAX_PLANES, TRIAD_MAX_PLANES);
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
	};

	return cmocka_run_group_tests_name("plane", tests, NULL, NULL);
}
