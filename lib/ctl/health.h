/* A plane's health, debounced: raw observations in (link up or down, port
 * active or not, each with its time), a verdict out.  The plane becomes
 * faulty once it has been seen down without a break for down_ms, and
 * healthy again once it has been seen up for up_ms, so a flapping link
 * neither switches the clients at every flap nor brings them back too
 * soon.  A plane starts healthy.
 *
 * Pure: the time is passed in; the caller arms a timer for
 * tr_ctl_health_deadline().  triadd runs one per plane; a library without
 * a daemon would run the same (all planes start healthy). */
#ifndef TRIAD_CTL_HEALTH_H
#define TRIAD_CTL_HEALTH_H

#include <stdint.h>

struct tr_ctl_health {
	uint64_t down_ns, up_ns; /* the debounces */
	int healthy;		 /* the verdict */
	int raw;		 /* the last observation: 1 up, 0 down */
	uint64_t since_ns;	 /* when raw last changed */
	uint64_t changes;	 /* verdict changes so far */
};

void tr_ctl_health_init(struct tr_ctl_health *h, uint32_t down_ms, uint32_t up_ms,
			uint64_t now_ns);
/* An observation (repeats are fine).  1 when the verdict changed. */
int tr_ctl_health_observe(struct tr_ctl_health *h, int up, uint64_t now_ns);
/* Time passed.  1 when the verdict changed. */
int tr_ctl_health_tick(struct tr_ctl_health *h, uint64_t now_ns);
/* When the verdict changes if nothing else is observed; 0: never. */
uint64_t tr_ctl_health_deadline(const struct tr_ctl_health *h);

#endif
