/* The order-keeping plane switch: see plane_switch.h. */
#include <errno.h>

#include "proto/plane_switch.h"

static const char *const state_names[TR_PSW_NSTATES] = {
	[TR_PSW_NORMAL] = "normal",
	[TR_PSW_SWITCH_PENDING] = "switch_pending",
	[TR_PSW_SWITCHED] = "switched",
	[TR_PSW_RESTORE_PENDING] = "restore_pending",
};

static const char *const action_names[TR_PSW_NACTIONS] = {
	[TR_PSW_NONE] = "none",
	[TR_PSW_POST] = "post",
	[TR_PSW_WAIT] = "wait",
	[TR_PSW_RESEND] = "resend",
	[TR_PSW_UNREACHABLE] = "unreachable",
};

const char *tr_psw_state_str(unsigned state)
{
	return state < TR_PSW_NSTATES ? state_names[state] : "?";
}

const char *tr_psw_action_str(unsigned action)
{
	return action < TR_PSW_NACTIONS ? action_names[action] : "?";
}

static bool usable(const struct tr_psw *sw, unsigned k)
{
	return k < sw->nplanes && (sw->usable >> k & 1u);
}

/* The first usable plane after p, in (p + 1) mod P order. */
static uint8_t pick_alt(const struct tr_psw *sw, unsigned p)
{
	for (unsigned i = 1; i < sw->nplanes; i++) {
		unsigned k = (p + i) % sw->nplanes;

		if (usable(sw, k))
			return (uint8_t)k;
	}
	return TR_PSW_NO_PLANE;
}

int tr_psw_init(struct tr_psw *sw, unsigned nplanes, unsigned flags)
{
	if (nplanes < 1 || nplanes > TR_PSW_MAX_PLANES || (flags & ~TR_PSW_STRICT))
		return -EINVAL;
	*sw = (struct tr_psw){ 0 };
	sw->nplanes = nplanes;
	sw->usable = (1u << nplanes) - 1;
	sw->strict = flags & TR_PSW_STRICT;
	sw->msg_nominal = sw->msg_plane = TR_PSW_NO_PLANE;
	for (unsigned p = 0; p < TR_PSW_MAX_PLANES; p++) {
		sw->ent[p].state = TR_PSW_NORMAL;
		sw->ent[p].alt = p < nplanes && nplanes > 1 ? (uint8_t)((p + 1) % nplanes)
							    : TR_PSW_NO_PLANE;
		sw->ent[p].last = TR_PSW_NO_PLANE;
	}
	return 0;
}

/* Brings entry p in line with the usable planes after a plane event; the
 * transition table of the header.  Invariants after it, with "mine" for
 * "p's message is in progress, on plane m":
 *   NORMAL           p usable; mine => m == p
 *   SWITCH_PENDING   p not usable; alt usable or NO_PLANE
 *   SWITCHED         p not usable; alt usable or NO_PLANE; mine => m == alt
 *   RESTORE_PENDING  p usable; mine => m == alt (alt may be going out:
 *                    the message finishes there, or a fault restarts it) */
static void fixup(struct tr_psw *sw, unsigned p)
{
	struct tr_psw_entry *e = &sw->ent[p];
	bool mine = sw->inprog && sw->msg_nominal == p;
	unsigned m = sw->msg_plane;
	bool p_ok = usable(sw, p), alt_ok = usable(sw, e->alt);

	switch (e->state) {
	case TR_PSW_NORMAL:
		if (!p_ok) {
			e->state = TR_PSW_SWITCH_PENDING;
			e->alt = pick_alt(sw, p);
		}
		break;
	case TR_PSW_SWITCH_PENDING:
		if (p_ok && (!mine || m == p)) {
			e->state = TR_PSW_NORMAL; /* the switch is called off */
		} else if (p_ok) {
			e->state = TR_PSW_RESTORE_PENDING; /* finish on m, then p */
			e->alt = (uint8_t)m;
		} else if (!alt_ok) {
			e->alt = pick_alt(sw, p);
		}
		break;
	case TR_PSW_RESTORE_PENDING:
		if (p_ok)
			break;
		e->state = TR_PSW_SWITCHED; /* p went out again: stay on alt */
		/* fall through */
	case TR_PSW_SWITCHED:
		if (p_ok) {
			e->state = TR_PSW_RESTORE_PENDING;
		} else if (!alt_ok) {
			if (mine) /* finish on the old alt, the next one takes the new */
				e->state = TR_PSW_SWITCH_PENDING;
			e->alt = pick_alt(sw, p);
		}
		break;
	}
}

static void fixup_all(struct tr_psw *sw)
{
	for (unsigned p = 0; p < sw->nplanes; p++)
		fixup(sw, p);
}

/* The plane of p's next first request, and the state it moves p to. */
static unsigned first_plane(const struct tr_psw *sw, unsigned p, uint8_t *state_p)
{
	const struct tr_psw_entry *e = &sw->ent[p];

	switch (e->state) {
	case TR_PSW_SWITCH_PENDING:
		*state_p = e->alt == TR_PSW_NO_PLANE ? TR_PSW_SWITCH_PENDING : TR_PSW_SWITCHED;
		return e->alt;
	case TR_PSW_SWITCHED:
		*state_p = TR_PSW_SWITCHED;
		return e->alt;
	case TR_PSW_RESTORE_PENDING:
		*state_p = TR_PSW_NORMAL;
		return p;
	default:
		*state_p = TR_PSW_NORMAL;
		return p;
	}
}

int tr_psw_drain(struct tr_psw *sw, unsigned k)
{
	if (k >= sw->nplanes)
		return -EINVAL;
	if (!usable(sw, k))
		return TR_PSW_NONE;
	if (sw->usable == 1u << k)
		return -EBUSY;
	sw->usable &= ~(1u << k);
	fixup_all(sw);
	return TR_PSW_NONE;
}

int tr_psw_fault(struct tr_psw *sw, unsigned k, unsigned *plane_p)
{
	if (k >= sw->nplanes)
		return -EINVAL;
	if (!(sw->failed >> k & 1u)) {
		sw->failed |= 1u << k;
		sw->usable &= ~(1u << k);
		fixup_all(sw);
		if (sw->inprog && sw->msg_plane == k) {
			/* Aborted: it starts again, a message boundary. */
			unsigned p = sw->msg_nominal;
			uint8_t next;
			unsigned t = first_plane(sw, p, &next);

			if (t == TR_PSW_NO_PLANE) {
				sw->inprog = false;
				sw->msg_nominal = sw->msg_plane = TR_PSW_NO_PLANE;
				return TR_PSW_UNREACHABLE;
			}
			sw->ent[p].state = next;
			sw->ent[p].last = (uint8_t)t;
			sw->msg_plane = (uint8_t)t;
			*plane_p = t;
			return TR_PSW_RESEND;
		}
	}
	return sw->usable ? TR_PSW_NONE : TR_PSW_UNREACHABLE;
}

int tr_psw_restore(struct tr_psw *sw, unsigned k)
{
	if (k >= sw->nplanes)
		return -EINVAL;
	sw->usable |= 1u << k;
	sw->failed &= ~(1u << k);
	sw->reported &= ~(1u << k);
	fixup_all(sw);
	return TR_PSW_NONE;
}

static unsigned inflight_on(const unsigned inflight[TR_PSW_MAX_PLANES], unsigned k)
{
	return inflight && k < TR_PSW_MAX_PLANES ? inflight[k] : 0;
}

int tr_psw_msg_start(struct tr_psw *sw, unsigned p, const unsigned inflight[TR_PSW_MAX_PLANES],
		     unsigned *plane_p)
{
	struct tr_psw_entry *e;
	uint8_t next;
	unsigned t;

	if (p >= sw->nplanes)
		return -EINVAL;
	if (sw->inprog)
		return -EBUSY;
	e = &sw->ent[p];
	t = first_plane(sw, p, &next);
	if (t == TR_PSW_NO_PLANE)
		return TR_PSW_UNREACHABLE;
	if (sw->strict && e->last != TR_PSW_NO_PLANE && e->last != t &&
	    inflight_on(inflight, e->last)) {
		*plane_p = e->last;
		return TR_PSW_WAIT;
	}
	e->state = next;
	e->last = (uint8_t)t;
	sw->inprog = true;
	sw->msg_nominal = (uint8_t)p;
	sw->msg_plane = (uint8_t)t;
	*plane_p = t;
	return TR_PSW_POST;
}

int tr_psw_msg_end(struct tr_psw *sw)
{
	if (!sw->inprog)
		return -EINVAL;
	sw->inprog = false;
	sw->msg_nominal = sw->msg_plane = TR_PSW_NO_PLANE;
	return TR_PSW_NONE;
}

int tr_psw_unordered(const struct tr_psw *sw, unsigned p, unsigned *plane_p)
{
	unsigned t;

	if (p >= sw->nplanes)
		return -EINVAL;
	switch (sw->ent[p].state) {
	case TR_PSW_SWITCH_PENDING:
	case TR_PSW_SWITCHED:
		t = sw->ent[p].alt;
		break;
	default:
		t = p;
		break;
	}
	if (t == TR_PSW_NO_PLANE)
		return TR_PSW_UNREACHABLE;
	*plane_p = t;
	return TR_PSW_POST;
}

int tr_psw_post(struct tr_psw *sw, unsigned p, unsigned flags,
		const unsigned inflight[TR_PSW_MAX_PLANES], unsigned *plane_p)
{
	int r;

	if (p >= sw->nplanes || (flags & ~(TR_PSW_ORDERED | TR_PSW_LAST)))
		return -EINVAL;
	if (!(flags & TR_PSW_ORDERED))
		return tr_psw_unordered(sw, p, plane_p);
	if (!sw->inprog) {
		r = tr_psw_msg_start(sw, p, inflight, plane_p);
		if (r != TR_PSW_POST)
			return r;
	} else if (sw->msg_nominal != p) {
		return -EBUSY;
	} else {
		*plane_p = sw->msg_plane;
	}
	if (flags & TR_PSW_LAST)
		tr_psw_msg_end(sw);
	return TR_PSW_POST;
}

int tr_psw_resend(struct tr_psw *sw, unsigned p, unsigned *plane_p)
{
	uint8_t next;
	unsigned t;

	if (p >= sw->nplanes)
		return -EINVAL;
	if (sw->inprog && sw->msg_nominal == p && usable(sw, sw->msg_plane))
		t = sw->msg_plane;
	else
		t = first_plane(sw, p, &next);
	if (t == TR_PSW_NO_PLANE)
		return TR_PSW_UNREACHABLE;
	sw->ent[p].last = (uint8_t)t;
	*plane_p = t;
	return TR_PSW_POST;
}

bool tr_psw_is_drained(const struct tr_psw *sw, unsigned k,
		       const unsigned inflight[TR_PSW_MAX_PLANES])
{
	return k < sw->nplanes && !usable(sw, k) && !(sw->inprog && sw->msg_plane == k) &&
	       inflight_on(inflight, k) == 0;
}

unsigned tr_psw_drained(struct tr_psw *sw, const unsigned inflight[TR_PSW_MAX_PLANES])
{
	unsigned news = 0;

	for (unsigned k = 0; k < sw->nplanes; k++)
		if (!(sw->reported >> k & 1u) && tr_psw_is_drained(sw, k, inflight))
			news |= 1u << k;
	sw->reported |= news;
	return news;
}
