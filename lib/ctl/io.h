/* Frames of the triadd protocol (msg.h) over a Unix stream socket, with
 * file descriptors passed as SCM_RIGHTS.  Shared by triadd, triadctl and
 * the library's client (lib/core/ctl.c).  No libev, no threads: the caller
 * owns the socket and its watcher. */
#ifndef TRIAD_CTL_IO_H
#define TRIAD_CTL_IO_H

#include <stddef.h>
#include <stdint.h>

#include "ctl/msg.h"

#define TR_CTL_RX_FDS 4 /* descriptors a connection may have queued */

/* What has arrived on a connection and is not handled yet. */
struct tr_ctl_rx {
	uint8_t buf[TR_CTL_MAX_FRAME];
	size_t len;
	int fds[TR_CTL_RX_FDS]; /* in arrival order */
	int nfds;
	int frame; /* length of the frame tr_ctl_rx_next returned, 0 if none */
};

void tr_ctl_rx_init(struct tr_ctl_rx *rx);
/* Closes the descriptors still queued. */
void tr_ctl_rx_reset(struct tr_ctl_rx *rx);

/* Reads what the (non-blocking) socket has.  >0 bytes read, 0 at EOF,
 * -EAGAIN when nothing is there, -EPROTO when the peer sent more
 * descriptors than TR_CTL_RX_FDS or a truncated control message (the
 * connection is to be closed), another -errno on error. */
int tr_ctl_rx_read(int sock, struct tr_ctl_rx *rx);

/* The next whole frame, decoded into *m (valid until the next call):
 * 1, 0 when no whole frame is there, or the decoder's negative errno (the
 * connection is to be closed: its byte stream cannot be trusted). */
int tr_ctl_rx_next(struct tr_ctl_rx *rx, struct tr_ctl_msg *m);

/* For a blocking caller (triadctl, tests): the next frame within
 * timeout_ms (< 0: forever), reading as needed.  1, 0 at EOF, -ETIMEDOUT,
 * or tr_ctl_rx_read's or the decoder's error. */
int tr_ctl_rx_wait(int sock, struct tr_ctl_rx *rx, struct tr_ctl_msg *m, int timeout_ms);

/* The oldest descriptor that arrived, now the caller's; -1 when none. */
int tr_ctl_rx_take_fd(struct tr_ctl_rx *rx);

/* Encodes m and sends it whole, with fd (>= 0) attached.  A socket that
 * takes no more for timeout_ms gets -EAGAIN (a peer that does not read:
 * the caller drops it).  0, or -errno. */
int tr_ctl_send(int sock, const struct tr_ctl_msg *m, int fd, int timeout_ms);

#endif
