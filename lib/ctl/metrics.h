/* triadd's metrics, in the Prometheus text exposition format (0.0.4),
 * as `triadctl metrics` writes them for node_exporter's textfile
 * collector, and read back by `triadctl top` (docs/daemon.md,
 * "Metrics").
 *
 * The daemon writes them (daemon/server.c) with the names below; this
 * file's parser reads the series top shows into a snapshot, and
 * tr_ctl_top_frame() makes top's table from two snapshots (the rates are
 * the byte counters' differences over the time between them).  The
 * parser takes any exposition text: lines it does not need are skipped
 * (comments, other metrics), and a line it needs that is not well formed
 * is an error naming its line.  Every label value is read up to its
 * closing quote with \\, \" and \n unescaped.
 *
 * Pure: no I/O, no clock, no allocation. */
#ifndef TRIAD_CTL_METRICS_H
#define TRIAD_CTL_METRICS_H

#include <stddef.h>
#include <stdint.h>

#include "ctl/table.h"
#include "triad.h"

/* The series top reads (the daemon writes more: docs/daemon.md). */
#define TR_CTL_M_CLIENTS "triad_clients"
#define TR_CTL_M_GENERATION "triad_policy_generation"
#define TR_CTL_M_STATE "triad_plane_state"	    /* {plane, state}: 1 for the current */
#define TR_CTL_M_REASON "triad_plane_reason"	    /* {plane, reason}: 1 for the current */
#define TR_CTL_M_HEALTHY "triad_plane_healthy"	    /* {plane} */
#define TR_CTL_M_FAULTY "triad_plane_faulty"	    /* {plane} */
#define TR_CTL_M_DEGRADED "triad_plane_degraded"    /* {plane} */
#define TR_CTL_M_SCORE "triad_plane_score"	    /* {plane} */
#define TR_CTL_M_WEIGHT "triad_plane_weight"	    /* {plane} */
#define TR_CTL_M_INFLIGHT "triad_plane_inflight"    /* {plane} */
#define TR_CTL_M_SWITCHED "triad_plane_clients_switched" /* {plane} */
#define TR_CTL_M_TX "triad_plane_tx_bytes_total"    /* {plane} */
#define TR_CTL_M_RX "triad_plane_rx_bytes_total"    /* {plane} */

struct tr_ctl_mplane {
	char name[TR_CTL_PLANE_NAME];
	int state;  /* enum tr_ctl_pstate; -1 until a series says 1 */
	int reason; /* enum tr_ctl_reason; -1 likewise */
	uint64_t healthy, faulty, degraded, score, weight, inflight, switched;
	uint64_t tx, rx; /* bytes, totals */
};

struct tr_ctl_msnap {
	uint64_t clients, generation;
	unsigned nplanes; /* in the order their first series came */
	struct tr_ctl_mplane plane[TRIAD_MAX_PLANES];
};

/* Parses text (len bytes, no NUL needed) into *s.  Returns 0, or -EINVAL
 * with "line N: what" (or what the whole text lacks) in err. */
int tr_ctl_metrics_parse(const char *text, size_t len, struct tr_ctl_msnap *s, char *err,
			 size_t errlen);

/* top's table of now, with the byte rates since prev over dt_s seconds
 * (prev NULL, dt_s <= 0, a plane prev lacks or a counter that went back,
 * as after a daemon restart: "-").  NUL-terminated, cut at len - 1;
 * returns the length it needed, as snprintf. */
size_t tr_ctl_top_frame(const struct tr_ctl_msnap *prev, const struct tr_ctl_msnap *now,
			double dt_s, char *buf, size_t len);

/* A rate in bytes per second as top shows it: "12.3 MB/s" (SI units,
 * 3 significant digits at most), "-" for a negative rate. */
void tr_ctl_rate_str(double bytes_per_s, char *buf, size_t len);

#endif
