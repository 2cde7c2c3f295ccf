/* triadd's configuration file (/etc/triad/triadd.conf), an INI-like text:
 *
 *   # a comment (a line whose first non-blank is # or ;)
 *   [daemon]
 *   socket = /run/triad/triadd.sock
 *   group = triad
 *   debounce_down_ms = 200
 *   [plane p0]
 *   device = rxe0
 *   port = 1
 *   netdev = eth0
 *   [policy]
 *   TRIAD_ADAPTIVE_T = 8
 *   [health]
 *   degrade_ms = 3000
 *
 * Keys and their ranges: the table in conf.c, docs/daemon.md.  [policy]
 * holds knobs of the library's TRIAD_* registry by name, which triadd
 * publishes to every process of the node: the parser here checks their
 * syntax alone (tr_ctl_knob_ok); whether the name is a knob triadd may
 * set and the value valid is the registry's to say (lib/core/config.c,
 * tr_config_check_daemon), which triadd asks after the parse.  Planes are
 * numbered in the order of their sections: plane i is the world file's
 * plane i.  Every error is one message "FILE:LINE: what", and the first
 * one stops the parse.
 *
 * Pure: the text is passed in (tr_ctl_conf_load reads a file into it). */
#ifndef TRIAD_CTL_CONF_H
#define TRIAD_CTL_CONF_H

#include <stddef.h>
#include <stdint.h>

#include "ctl/degrade.h"
#include "ctl/table.h"
#include "triad.h"

#define TR_CTL_DEFAULT_SOCKET "/run/triad/triadd.sock"
#define TR_CTL_SOCKET_MAX 108 /* sun_path, NUL included */
#define TR_CTL_DEVICE_MAX 64
#define TR_CTL_NETDEV_MAX 16 /* IFNAMSIZ */
#define TR_CTL_GROUP_MAX 64

struct tr_ctl_conf_plane {
	char name[TR_CTL_PLANE_NAME];
	char device[TR_CTL_DEVICE_MAX];
	uint32_t port;
	char netdev[TR_CTL_NETDEV_MAX]; /* "" : none given */
	uint32_t subnet, prefix;	/* IPv4, host order; prefix 0..32 */
	uint32_t has_subnet;
	int line; /* of the section header */
};

struct tr_ctl_conf {
	char socket[TR_CTL_SOCKET_MAX];
	char group[TR_CTL_GROUP_MAX]; /* "" : the daemon's own group */
	int group_line;		      /* where it was set (the daemon resolves it) */
	uint32_t socket_mode;	      /* e.g. 0660 */
	uint32_t debounce_down_ms, debounce_up_ms;
	uint32_t counters_ms; /* how often the port counters are read */
	struct tr_ctl_dgr_cfg health; /* [health]: degraded planes (ctl/degrade.h) */
	int nplanes;
	int nknobs; /* [policy], in the order of the file */
	struct tr_ctl_knob knob[TR_CTL_KNOBS];
	int knob_line[TR_CTL_KNOBS];
	struct tr_ctl_conf_plane plane[TRIAD_MAX_PLANES];
};

void tr_ctl_conf_defaults(struct tr_ctl_conf *c);

/* Parses text (NUL-terminated) named file in messages.  0, or -EINVAL with
 * "FILE:LINE: message" in err; *c is written only on success. */
int tr_ctl_conf_parse(const char *text, const char *file, struct tr_ctl_conf *c, char *err,
		      size_t errlen);

/* Reads and parses path; -errno with "FILE: message" when unreadable,
 * -EINVAL with "FILE: not a regular file (a FIFO)" and the like for
 * anything but a regular file (never waits on a FIFO). */
int tr_ctl_conf_load(const char *path, struct tr_ctl_conf *c, char *err, size_t errlen);

/* The policy the configuration starts with: every plane NORMAL, the
 * knobs of [policy]. */
void tr_ctl_conf_policy(const struct tr_ctl_conf *c, struct tr_ctl_policy *p);

/* The plane called name, or -1. */
int tr_ctl_conf_plane_find(const struct tr_ctl_conf *c, const char *name);

#endif
