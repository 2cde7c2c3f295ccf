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

/* Encodes m and sends it whole, with fd (>= 0) attached, waiting up to
 * timeout_ms while the socket takes no more: for a blocking caller
 * (triadctl, the library's short messages, tests).  -EAGAIN when the
 * socket took no more for timeout_ms.  0, or -errno. */
int tr_ctl_send(int sock, const struct tr_ctl_msg *m, int fd, int timeout_ms);

/* ---- sending without ever waiting (the daemon) ----
 * What the socket does not take at once is queued here, up to a bound;
 * the caller flushes it when the socket is writable again (an EV_WRITE
 * watcher) and drops a peer whose queue would exceed the bound: a peer
 * that does not read costs the daemon memory up to the bound, never time. */
#define TR_CTL_TX_FDS 2 /* frames with a descriptor that may wait in a queue */

struct tr_ctl_tx {
	uint8_t *buf; /* NULL while empty: an idle connection holds no memory */
	size_t off, len, cap;
	size_t max; /* the bound on queued bytes; 0: TR_CTL_MAX_FRAME */
	struct {
		size_t at; /* offset of the frame's first byte in buf */
		int fd;	   /* the caller's, not ours: it stays open until sent or reset */
	} fds[TR_CTL_TX_FDS];
	int nfds;
};

/* An empty queue bounded at max bytes (0: TR_CTL_MAX_FRAME). */
void tr_ctl_tx_init(struct tr_ctl_tx *tx, size_t max);
/* Forgets what is queued and frees the buffer. */
void tr_ctl_tx_reset(struct tr_ctl_tx *tx);
/* Encodes m (with fd >= 0 attached to its first byte) and sends what the
 * socket takes now; the rest is queued behind what was queued already.
 * 0 when all of it went out, -EAGAIN when some is queued (flush on
 * writable), -ENOBUFS when the queue would exceed its bound (nothing of m
 * is queued: drop the peer), the encoder's error, or the socket's -errno
 * (EPIPE, ECONNRESET: the peer is gone). */
int tr_ctl_tx_send(int sock, struct tr_ctl_tx *tx, const struct tr_ctl_msg *m, int fd);
/* Sends what is queued and the socket takes now: 0 when the queue is
 * empty, -EAGAIN when some remains, or the socket's -errno. */
int tr_ctl_tx_flush(int sock, struct tr_ctl_tx *tx);
/* Bytes queued. */
size_t tr_ctl_tx_queued(const struct tr_ctl_tx *tx);

#endif
