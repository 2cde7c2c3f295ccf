/* Debounced plane health (health.h). */
#include "ctl/health.h"

void tr_ctl_health_init(struct tr_ctl_health *h, uint32_t down_ms, uint32_t up_ms,
			uint64_t now_ns)
{
	h->down_ns = (uint64_t)down_ms * 1000000u;
	h->up_ns = (uint64_t)up_ms * 1000000u;
	h->healthy = 1;
	h->raw = 1;
	h->since_ns = now_ns;
	h->changes = 0;
}

uint64_t tr_ctl_health_deadline(const struct tr_ctl_health *h)
{
	if (h->raw == h->healthy)
		return 0;
	return h->since_ns + (h->raw ? h->up_ns : h->down_ns);
}

int tr_ctl_health_tick(struct tr_ctl_health *h, uint64_t now_ns)
{
	uint64_t due = tr_ctl_health_deadline(h);

	if (!due || now_ns < due)
		return 0;
	h->healthy = h->raw;
	h->changes++;
	return 1;
}

int tr_ctl_health_observe(struct tr_ctl_health *h, int up, uint64_t now_ns)
{
	up = !!up;
	if (up != h->raw) {
		h->raw = up;
		h->since_ns = now_ns;
	}
	return tr_ctl_health_tick(h, now_ns);
}
