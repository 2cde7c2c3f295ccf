/* Degraded planes: a plane that still works, but badly (it loses or
 * delays packets), found from what triadd can read, and left before it
 * fails (docs/daemon.md, "Degraded planes").
 *
 * Every period (triadd's counters_ms) each plane gets a score, 0 .. 100,
 * from two kinds of evidence:
 *   errors   the port's error counters (retransmissions, sequence errors,
 *            duplicate requests, RNR and ack timeouts, congestion
 *            notifications: tr_ctl_dgr_counter_kind) per packet the port
 *            sent and received in the period; no evidence below
 *            min_packets packets
 *   latency  what the node's processes report in their counters regions:
 *            occupancy (messages in flight on the plane) over throughput
 *            (bytes sent on it in the period), a latency by Little's law
 *            up to the mean message size, compared with the best other
 *            plane that carried traffic; no evidence when the plane has
 *            fewer than TR_CTL_DGR_MIN_INFLIGHT messages in flight (a
 *            light load says nothing of latency)
 * Each kind scores 50 at its threshold (errors_permille, latency_ratio)
 * and is proportional below, capped at 100; the plane's score is the
 * larger, or TR_CTL_DGR_UNKNOWN when neither kind had evidence (a plane
 * whose queue pair waits out a retransmission timeout moves few packets
 * in that period: no evidence is not clean).  The score, cut to a multiple of 10, is the plane's weight,
 * which the library's adaptive choice takes as its contention input.
 *
 * The rule (hysteresis and no flapping):
 *   bad    score >= 50; clean: score < 25 (half of every threshold)
 *   a plane in use is degraded in a bad period degrade_ms or more after
 *          it was first bad with no clean period since (periods between
 *          25 and 50, and periods without evidence, neither start nor
 *          break the run), unless it is the last plane in use
 *          (may_degrade 0): then it is degraded in the first bad period
 *          after another plane is in use again
 *   a degraded plane is restored once it has been clean (or without
 *          evidence) without a break for its hold.  It carries no traffic
 *          while degraded, so it reads clean: the restore is a probation,
 *          for twice its hold
 *   a plane bad on its probation is degraded again in its second bad
 *          period of a run (it proved bad before: no degrade_ms wait;
 *          not the first, which holds the clients' move back), with
 *          twice the hold, at most restore_max_ms; the hold is
 *          restore_ms otherwise.
 *   So a plane whose fault stays comes back for two periods at a time,
 *   less and less often (restore_ms, 2x, 4x ... up to restore_max_ms
 *   apart), and one whose fault has gone stays back.
 *
 * Pure: the caller passes the time and the counters' deltas. */
#ifndef TRIAD_CTL_DEGRADE_H
#define TRIAD_CTL_DEGRADE_H

#include <stdint.h>

#define TR_CTL_DGR_BAD 50
#define TR_CTL_DGR_CLEAN 25
#define TR_CTL_DGR_MAX 100
#define TR_CTL_DGR_MIN_INFLIGHT 4
#define TR_CTL_DGR_UNKNOWN UINT32_MAX /* a score: no evidence in the period */

struct tr_ctl_dgr_cfg {
	uint32_t enabled;	  /* 0: scores and weights only, never a state change */
	uint32_t errors_permille; /* error events per 1000 packets that make a plane bad */
	uint32_t latency_ratio;	  /* latency, times the best other plane's, that is bad; 0: unused */
	uint32_t min_packets;	  /* packets in a period below which errors are no evidence */
	uint32_t degrade_ms, restore_ms, restore_max_ms;
};

/* One plane's evidence over one period. */
struct tr_ctl_dgr_sample {
	uint64_t pkts;	   /* packets the port sent and received */
	uint64_t errs;	   /* error events of the port */
	uint64_t tx;	   /* bytes the node's processes sent on the plane */
	uint64_t inflight; /* messages they have in flight on it now */
};

/* Per plane. */
struct tr_ctl_dgr {
	int degraded;
	uint32_t score;	      /* the last period's with evidence */
	int bad, clean;	      /* bad (not degraded) or clean (degraded) without a break ... */
	uint64_t since;	      /* ... since then */
	uint32_t nbad;	      /* bad periods in the run */
	int restored;	      /* it was restored once, at restored_at */
	uint64_t restored_at;
	uint32_t hold_ms;     /* the hold of the current or last degradation */
	uint64_t degrades;    /* times degraded */
};

enum tr_ctl_dgr_step { TR_CTL_DGR_STAY, TR_CTL_DGR_DEGRADE, TR_CTL_DGR_RESTORE };

/* A counter's part in the evidence, by its name under hw_counters or
 * counters: packets, error events, or neither. */
enum tr_ctl_dgr_kind { TR_CTL_DGR_OTHER, TR_CTL_DGR_PKTS, TR_CTL_DGR_ERRS };
enum tr_ctl_dgr_kind tr_ctl_dgr_counter_kind(const char *name);

void tr_ctl_dgr_cfg_default(struct tr_ctl_dgr_cfg *c);
void tr_ctl_dgr_init(struct tr_ctl_dgr *s, const struct tr_ctl_dgr_cfg *c);

/* Scores of n planes (n <= 32) from one period's samples into score[]. */
void tr_ctl_dgr_score(const struct tr_ctl_dgr_cfg *c, const struct tr_ctl_dgr_sample *smp,
		      unsigned n, uint32_t *score);

/* The weight published for a score: cut to a multiple of 10 (not for
 * TR_CTL_DGR_UNKNOWN: the weight stays). */
uint32_t tr_ctl_dgr_weight(uint32_t score);

/* One period of one plane: its score now, whether it may be degraded
 * (another plane is in use).  What to do with it. */
enum tr_ctl_dgr_step tr_ctl_dgr_step(const struct tr_ctl_dgr_cfg *c, struct tr_ctl_dgr *s,
				     uint32_t score, int may_degrade, uint64_t now_ns);

/* Someone else (triadctl, the link monitor) moved the plane: it is no
 * longer degraded by this rule; a later degradation counts from now as
 * from a restore. */
void tr_ctl_dgr_forget(struct tr_ctl_dgr *s, uint64_t now_ns);

#endif
