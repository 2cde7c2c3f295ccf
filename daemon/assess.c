/* Degraded planes (docs/daemon.md, "Degraded planes"): every counters_ms,
 * after the port counters were read, each plane's evidence over the
 * period (the port's packets and error events, and what the clients
 * report: bytes sent and messages in flight there) gives it a score and a
 * weight (ctl/degrade.h); the weights are published in the table, the
 * library's adaptive choice takes them as its contention input; the rule
 * degrades (drains, reason "degraded", not faulty) and restores planes.
 *
 * The rule acts only on planes it may own: it degrades a plane in use
 * (NORMAL, no reason, not faulty) when another plane is in use too, and
 * restores only a plane it degraded itself; a plane that triadctl or the
 * link monitor moved meanwhile is theirs (tr_ctl_dgr_forget). */
#include <stdio.h>
#include <string.h>

#include "base/time.h"
#include "triadd.h"

static uint64_t delta(uint64_t now, uint64_t was)
{
	/* A counter reset, or a client gone from the sum: no evidence. */
	return now >= was ? now - was : 0;
}

/* The error counters that moved over the period, "name +n, ...", so that
 * an operator sees which events degraded the plane (at most len bytes). */
static void errs_moved(const struct td_plane *pl, char *out, size_t len)
{
	size_t at = 0;

	out[0] = 0;
	for (int i = 0; i < pl->nctr && at < len; i++) {
		const struct td_counter *c = &pl->ctr[i];

		if (tr_ctl_dgr_counter_kind(c->name) != TR_CTL_DGR_ERRS)
			continue;
		for (int j = 0; j < pl->nctr_was; j++)
			if (!strcmp(pl->ctr_was[j].name, c->name) &&
			    c->value > pl->ctr_was[j].value) {
				int n = snprintf(out + at, len - at, "%s%s +%llu", at ? ", " : "",
						 c->name,
						 (unsigned long long)(c->value - pl->ctr_was[j].value));

				at += n > 0 ? (size_t)n : 0;
				break;
			}
	}
	if (at >= len) /* cut: say so */
		snprintf(out + len - 4, 4, "...");
}

static void degraded_event(struct td *d, int p, const struct tr_ctl_dgr_sample *e, int restored)
{
	const struct td_plane *pl = &d->plane[p];
	const char *name = d->pol.plane[p].name;
	char json[256], text[512], moved[200];

	snprintf(json, sizeof(json),
		 "\"event\":\"degraded\",\"plane\":\"%s\",\"degraded\":%s,\"score\":%u,"
		 "\"hold_ms\":%u",
		 name, restored ? "false" : "true", pl->dgr.score, pl->dgr.hold_ms);
	if (restored) {
		snprintf(text, sizeof(text), "plane %s clean for %u ms: restored", name,
			 pl->dgr.hold_ms);
	} else {
		errs_moved(pl, moved, sizeof(moved));
		snprintf(text, sizeof(text),
			 "plane %s degraded: score %u (%llu error events in %llu packets%s%s, "
			 "%llu in flight for %llu bytes sent); restored after %u ms clean",
			 name, pl->dgr.score, (unsigned long long)e->errs,
			 (unsigned long long)e->pkts, moved[0] ? ": " : "", moved,
			 (unsigned long long)e->inflight, (unsigned long long)e->tx,
			 pl->dgr.hold_ms);
	}
	td_event(d, json, text); /* logged there */
}

void td_assess(struct td *d)
{
	struct tr_ctl_dgr_sample smp[TRIAD_MAX_PLANES] = { 0 };
	uint32_t score[TRIAD_MAX_PLANES];
	const struct tr_ctl_dgr_cfg *cfg = &d->conf.health;
	unsigned n = d->pol.nplanes;
	uint64_t now = tr_now_ns();
	int weights = 0;

	for (unsigned p = 0; p < n; p++) {
		struct td_plane *pl = &d->plane[p];
		struct td_plane_sum s = td_plane_sum(d, p);

		if (pl->have_was && pl->have_totals) {
			smp[p].pkts = delta(pl->pkts, pl->pkts_was);
			smp[p].errs = delta(pl->errs, pl->errs_was);
		}
		if (pl->have_was)
			smp[p].tx = delta(s.tx, pl->tx_was);
		smp[p].inflight = s.inflight;
		pl->pkts_was = pl->pkts;
		pl->errs_was = pl->errs;
		pl->tx_was = s.tx;
		pl->have_was = 1;
	}
	tr_ctl_dgr_score(cfg, smp, n, score);
	for (unsigned p = 0; p < n; p++) {
		struct tr_ctl_plane_pol *e = &d->pol.plane[p];
		struct td_plane *pl = &d->plane[p];
		uint32_t w = score[p] == TR_CTL_DGR_UNKNOWN ? e->weight : tr_ctl_dgr_weight(score[p]);
		int mine = tr_ctl_pstate_off(e->state) && e->reason == TR_CTL_R_DEGRADED;
		int may = e->state == TR_CTL_NORMAL && e->reason == TR_CTL_R_NONE && !e->faulty &&
			  tr_ctl_other_live(&d->pol, p);

		if (pl->dgr.degraded && !mine)
			tr_ctl_dgr_forget(&pl->dgr, now);
		/* The weight goes with every change; a state change publishes
		 * it too. */
		weights |= e->weight != w;
		e->weight = w;
		switch (tr_ctl_dgr_step(cfg, &pl->dgr, score[p], may, now)) {
		case TR_CTL_DGR_DEGRADE:
			degraded_event(d, (int)p, &smp[p], 0);
			td_plane_set(d, (int)p, TR_CTL_SWITCH_PENDING, TR_CTL_R_DEGRADED, 0);
			weights = 0;
			break;
		case TR_CTL_DGR_RESTORE:
			degraded_event(d, (int)p, &smp[p], 1);
			td_plane_set(d, (int)p, TR_CTL_RESTORE_PENDING, TR_CTL_R_DEGRADED, 0);
			weights = 0;
			break;
		case TR_CTL_DGR_STAY:
			break;
		}
	}
	for (unsigned p = 0; p < n; p++) {
		memcpy(d->plane[p].ctr_was, d->plane[p].ctr, sizeof(d->plane[p].ctr));
		d->plane[p].nctr_was = d->plane[p].nctr;
	}
	if (weights)
		td_publish(d);
}
