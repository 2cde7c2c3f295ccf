/* Degraded planes: scores and the rule (degrade.h). */
#include "ctl/degrade.h"

#include <string.h>

#define MS 1000000ull

/* rxe's names, then mlx5's (the counters its hw_counters has that mean
 * the same), then the IB PMA counters' packets. */
static const char *const pkt_names[] = { "sent_pkts", "rcvd_pkts", "port_xmit_packets",
					 "port_rcv_packets" };
static const char *const err_names[] = {
	/* rxe */
	"completer_retry_err", "duplicate_request", "out_of_seq_request", "rcvd_seq_err",
	"rcvd_rnr_err", "send_rnr_err", "retry_exceeded_err", "retry_rnr_exceeded_err",
	/* mlx5 */
	"local_ack_timeout_err", "out_of_sequence", "packet_seq_err", "implied_nak_seq_err",
	"rnr_nak_retry_err", "rp_cnp_handled", "np_cnp_sent",
};

enum tr_ctl_dgr_kind tr_ctl_dgr_counter_kind(const char *name)
{
	for (size_t i = 0; i < sizeof(pkt_names) / sizeof(pkt_names[0]); i++)
		if (!strcmp(name, pkt_names[i]))
			return TR_CTL_DGR_PKTS;
	for (size_t i = 0; i < sizeof(err_names) / sizeof(err_names[0]); i++)
		if (!strcmp(name, err_names[i]))
			return TR_CTL_DGR_ERRS;
	return TR_CTL_DGR_OTHER;
}

void tr_ctl_dgr_cfg_default(struct tr_ctl_dgr_cfg *c)
{
	*c = (struct tr_ctl_dgr_cfg){
		.enabled = 1,
		.errors_permille = 10,
		.latency_ratio = 8,
		.min_packets = 100,
		.degrade_ms = 3000,
		.restore_ms = 10000,
		.restore_max_ms = 160000,
	};
}

void tr_ctl_dgr_init(struct tr_ctl_dgr *s, const struct tr_ctl_dgr_cfg *c)
{
	*s = (struct tr_ctl_dgr){ .hold_ms = c->restore_ms };
}

static uint32_t scaled(double v, uint32_t threshold)
{
	double s = v * TR_CTL_DGR_BAD / threshold;

	return s >= TR_CTL_DGR_MAX ? TR_CTL_DGR_MAX : (uint32_t)s;
}

void tr_ctl_dgr_score(const struct tr_ctl_dgr_cfg *c, const struct tr_ctl_dgr_sample *smp,
		      unsigned n, uint32_t *score)
{
	for (unsigned p = 0; p < n; p++) {
		const struct tr_ctl_dgr_sample *e = &smp[p];
		uint32_t err = 0, lat = 0;
		int evidence = 0;
		double best = -1;

		if (e->pkts && e->pkts >= c->min_packets && c->errors_permille && ++evidence)
			err = scaled((double)e->errs * 1000. / (double)e->pkts, c->errors_permille);
		/* Latency ~ inflight / throughput; the best other plane's, with
		 * at least one message counted so that an idle queue is fast,
		 * not infinitely so. */
		for (unsigned q = 0; q < n && c->latency_ratio &&
				     e->inflight >= TR_CTL_DGR_MIN_INFLIGHT;
		     q++) {
			double l;

			if (q == p || !smp[q].tx)
				continue;
			l = (double)(smp[q].inflight ? smp[q].inflight : 1) / (double)smp[q].tx;
			if (best < 0 || l < best)
				best = l;
		}
		if (best > 0 && ++evidence)
			lat = scaled((double)e->inflight / (double)(e->tx ? e->tx : 1) / best,
				     c->latency_ratio);
		score[p] = !evidence ? TR_CTL_DGR_UNKNOWN : err > lat ? err : lat;
	}
}

uint32_t tr_ctl_dgr_weight(uint32_t score)
{
	return (score > TR_CTL_DGR_MAX ? TR_CTL_DGR_MAX : score) / 10 * 10;
}

enum tr_ctl_dgr_step tr_ctl_dgr_step(const struct tr_ctl_dgr_cfg *c, struct tr_ctl_dgr *s,
				     uint32_t score, int may_degrade, uint64_t now_ns)
{
	int probation;

	if (score != TR_CTL_DGR_UNKNOWN)
		s->score = score;
	if (!s->degraded) {
		if (score < TR_CTL_DGR_CLEAN)
			s->bad = 0;
		if (score == TR_CTL_DGR_UNKNOWN || score < TR_CTL_DGR_BAD)
			return TR_CTL_DGR_STAY;
		if (!s->bad) {
			s->since = now_ns;
			s->nbad = 0;
		}
		s->bad = 1;
		s->nbad++;
		/* On probation (restored less than twice its hold ago) the plane
		 * proved bad already: its second bad period degrades it again,
		 * so a fault that stays costs two periods per probation.  Not
		 * the first: the clients move their traffic back at once, and
		 * that period alone may read bad on a plane that is well. */
		probation = s->restored && now_ns - s->restored_at < 2 * (uint64_t)s->hold_ms * MS;
		if (!c->enabled || !may_degrade ||
		    (probation ? s->nbad < 2 : now_ns - s->since < c->degrade_ms * MS))
			return TR_CTL_DGR_STAY;
		/* Back within its probation: the hold doubles. */
		if (probation)
			s->hold_ms = s->hold_ms * 2 > c->restore_max_ms ? c->restore_max_ms
									: s->hold_ms * 2;
		else
			s->hold_ms = c->restore_ms;
		s->degraded = 1;
		s->degrades++;
		s->bad = 0;
		s->clean = 0;
		return TR_CTL_DGR_DEGRADE;
	}
	if (score != TR_CTL_DGR_UNKNOWN && score >= TR_CTL_DGR_CLEAN) {
		s->clean = 0;
		return TR_CTL_DGR_STAY;
	}
	if (!s->clean)
		s->since = now_ns;
	s->clean = 1;
	if (now_ns - s->since < (uint64_t)s->hold_ms * MS)
		return TR_CTL_DGR_STAY;
	s->degraded = 0;
	s->clean = 0;
	s->restored = 1;
	s->restored_at = now_ns;
	return TR_CTL_DGR_RESTORE;
}

void tr_ctl_dgr_forget(struct tr_ctl_dgr *s, uint64_t now_ns)
{
	if (!s->degraded)
		return;
	s->degraded = 0;
	s->clean = 0;
	s->bad = 0;
	s->restored = 1;
	s->restored_at = now_ns;
}
