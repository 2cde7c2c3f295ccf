/* The plane switch: see plane_switch.h. */
#include <errno.h>

#include "proto/plane_switch.h"

/* The first usable plane after p, in (p + 1) mod P order. */
static uint8_t pick_alt(const struct tr_psw *sw, unsigned p)
{
	for (unsigned i = 1; i < sw->nplanes; i++) {
		unsigned k = (p + i) % sw->nplanes;

		if (tr_psw_usable(sw, k))
			return (uint8_t)k;
	}
	return TR_PSW_NO_PLANE;
}

int tr_psw_init(struct tr_psw *sw, unsigned nplanes)
{
	if (nplanes < 1 || nplanes > TR_PSW_MAX_PLANES)
		return -EINVAL;
	*sw = (struct tr_psw){ 0 };
	sw->nplanes = nplanes;
	sw->usable = (1u << nplanes) - 1;
	for (unsigned p = 0; p < TR_PSW_MAX_PLANES; p++)
		sw->alt[p] = p < nplanes && nplanes > 1 ? (uint8_t)((p + 1) % nplanes)
							: TR_PSW_NO_PLANE;
	return 0;
}

/* Plane k goes out: its own alternate is chosen now, and every entry out
 * of use that went to k moves on. */
static void take_out(struct tr_psw *sw, unsigned k)
{
	sw->usable &= ~(1u << k);
	sw->alt[k] = pick_alt(sw, k);
	for (unsigned p = 0; p < sw->nplanes; p++)
		if (p != k && !tr_psw_usable(sw, p) && sw->alt[p] == k)
			sw->alt[p] = pick_alt(sw, p);
}

int tr_psw_drain(struct tr_psw *sw, unsigned k)
{
	if (k >= sw->nplanes)
		return -EINVAL;
	if (!tr_psw_usable(sw, k))
		return TR_PSW_NONE;
	if (sw->usable == 1u << k)
		return -EBUSY;
	take_out(sw, k);
	return TR_PSW_NONE;
}

int tr_psw_fault(struct tr_psw *sw, unsigned k, unsigned *plane_p)
{
	(void)plane_p;
	if (k >= sw->nplanes)
		return -EINVAL;
	if (tr_psw_usable(sw, k))
		take_out(sw, k);
	return sw->usable ? TR_PSW_NONE : TR_PSW_UNREACHABLE;
}

int tr_psw_restore(struct tr_psw *sw, unsigned k)
{
	if (k >= sw->nplanes)
		return -EINVAL;
	if (tr_psw_usable(sw, k))
		return TR_PSW_NONE;
	sw->usable |= 1u << k;
	for (unsigned p = 0; p < sw->nplanes; p++)
		if (!tr_psw_usable(sw, p) && sw->alt[p] == TR_PSW_NO_PLANE)
			sw->alt[p] = (uint8_t)k;
	return TR_PSW_NONE;
}

int tr_psw_unordered(const struct tr_psw *sw, unsigned p, unsigned *plane_p)
{
	unsigned t;

	if (p >= sw->nplanes)
		return -EINVAL;
	t = tr_psw_usable(sw, p) ? p : sw->alt[p];
	if (t == TR_PSW_NO_PLANE)
		return TR_PSW_UNREACHABLE;
	*plane_p = t;
	return TR_PSW_POST;
}
