/* Frames over a Unix stream socket, with SCM_RIGHTS (io.h). */
#include "ctl/io.h"

#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

void tr_ctl_rx_init(struct tr_ctl_rx *rx)
{
	rx->len = 0;
	rx->nfds = 0;
	rx->frame = 0;
}

void tr_ctl_rx_reset(struct tr_ctl_rx *rx)
{
	for (int i = 0; i < rx->nfds; i++)
		close(rx->fds[i]);
	tr_ctl_rx_init(rx);
}

/* Keeps the descriptors of one control message; 1 if any had no room. */
static int keep_fds(struct tr_ctl_rx *rx, struct cmsghdr *cm)
{
	size_t n = (cm->cmsg_len - CMSG_LEN(0)) / sizeof(int);
	int over = 0;

	for (size_t i = 0; i < n; i++) {
		int fd;

		memcpy(&fd, CMSG_DATA(cm) + i * sizeof(int), sizeof(int));
		if (rx->nfds < TR_CTL_RX_FDS) {
			rx->fds[rx->nfds++] = fd;
		} else {
			close(fd);
			over = 1;
		}
	}
	return over;
}

int tr_ctl_rx_read(int sock, struct tr_ctl_rx *rx)
{
	union {
		char buf[CMSG_SPACE(TR_CTL_RX_FDS * sizeof(int))];
		struct cmsghdr align;
	} ctl;
	struct iovec iov = { .iov_base = rx->buf + rx->len, .iov_len = sizeof(rx->buf) - rx->len };
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = ctl.buf,
			     .msg_controllen = sizeof(ctl.buf) };
	int over = 0;
	ssize_t n;

	if (!iov.iov_len)
		return -EPROTO; /* a whole frame always fits: the peer is not framing */
	n = recvmsg(sock, &mh, MSG_CMSG_CLOEXEC | MSG_DONTWAIT);
	if (n < 0)
		return errno == EWOULDBLOCK ? -EAGAIN : -errno;
	for (struct cmsghdr *cm = CMSG_FIRSTHDR(&mh); cm; cm = CMSG_NXTHDR(&mh, cm))
		if (cm->cmsg_level == SOL_SOCKET && cm->cmsg_type == SCM_RIGHTS)
			over |= keep_fds(rx, cm);
	if (over || (mh.msg_flags & MSG_CTRUNC))
		return -EPROTO;
	rx->len += (size_t)n;
	return (int)n;
}

int tr_ctl_rx_next(struct tr_ctl_rx *rx, struct tr_ctl_msg *m)
{
	int n, ret;

	if (rx->frame) {
		rx->len -= (size_t)rx->frame;
		memmove(rx->buf, rx->buf + rx->frame, rx->len);
		rx->frame = 0;
	}
	n = tr_ctl_frame_len(rx->buf, rx->len);
	if (n <= 0)
		return n;
	if ((size_t)n > rx->len)
		return 0;
	ret = tr_ctl_decode(rx->buf, (size_t)n, m);
	if (ret)
		return ret;
	rx->frame = n;
	return 1;
}

int tr_ctl_rx_wait(int sock, struct tr_ctl_rx *rx, struct tr_ctl_msg *m, int timeout_ms)
{
	for (;;) {
		struct pollfd pfd = { .fd = sock, .events = POLLIN };
		int ret = tr_ctl_rx_next(rx, m);

		if (ret)
			return ret;
		ret = poll(&pfd, 1, timeout_ms);
		if (ret == 0)
			return -ETIMEDOUT;
		if (ret < 0 && errno != EINTR)
			return -errno;
		ret = tr_ctl_rx_read(sock, rx);
		if (ret == 0 || ret == -ECONNRESET)
			return 0;
		if (ret < 0 && ret != -EAGAIN)
			return ret;
	}
}

int tr_ctl_rx_take_fd(struct tr_ctl_rx *rx)
{
	int fd;

	if (!rx->nfds)
		return -1;
	fd = rx->fds[0];
	memmove(rx->fds, rx->fds + 1, (size_t)(rx->nfds - 1) * sizeof(int));
	rx->nfds--;
	return fd;
}

/* One sendmsg of n bytes at p, with fd (>= 0) attached, never waiting:
 * the bytes the socket took, or -errno (-EAGAIN: none). */
static ssize_t send_some(int sock, const uint8_t *p, size_t n, int fd)
{
	union {
		char buf[CMSG_SPACE(sizeof(int))];
		struct cmsghdr align;
	} ctl;
	struct iovec iov = { .iov_base = (void *)p, .iov_len = n };
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1 };
	ssize_t ret;

	if (fd >= 0) {
		struct cmsghdr *cm;

		memset(&ctl, 0, sizeof(ctl));
		mh.msg_control = ctl.buf;
		mh.msg_controllen = sizeof(ctl.buf);
		cm = CMSG_FIRSTHDR(&mh);
		cm->cmsg_level = SOL_SOCKET;
		cm->cmsg_type = SCM_RIGHTS;
		cm->cmsg_len = CMSG_LEN(sizeof(int));
		memcpy(CMSG_DATA(cm), &fd, sizeof(int));
	}
	do
		ret = sendmsg(sock, &mh, MSG_NOSIGNAL | MSG_DONTWAIT);
	while (ret < 0 && errno == EINTR);
	if (ret < 0)
		return errno == EWOULDBLOCK ? -EAGAIN : -errno;
	return ret;
}

/* m encoded into a buffer of the caller's to free; NULL with the
 * encoder's error (or -ENOMEM) in *len_p. */
static uint8_t *encode(const struct tr_ctl_msg *m, int *len_p)
{
	uint8_t *frame = malloc(TR_CTL_MAX_FRAME);

	if (!frame) {
		*len_p = -ENOMEM;
		return NULL;
	}
	*len_p = tr_ctl_encode(m, frame, TR_CTL_MAX_FRAME);
	if (*len_p < 0) {
		free(frame);
		return NULL;
	}
	return frame;
}

int tr_ctl_send(int sock, const struct tr_ctl_msg *m, int fd, int timeout_ms)
{
	int len, ret = 0;
	uint8_t *frame = encode(m, &len);
	size_t off = 0;

	if (!frame)
		return len;
	while (off < (size_t)len) {
		struct pollfd pfd = { .fd = sock, .events = POLLOUT };
		ssize_t n = send_some(sock, frame + off, (size_t)len - off, off ? -1 : fd);

		if (n > 0) {
			off += (size_t)n;
			continue;
		}
		if (n != -EAGAIN) {
			ret = (int)n;
			break;
		}
		n = poll(&pfd, 1, timeout_ms);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			ret = n == 0 ? -EAGAIN : -errno;
			break;
		}
	}
	free(frame);
	return ret;
}

/* ---- the daemon's queue ---- */
void tr_ctl_tx_init(struct tr_ctl_tx *tx, size_t max)
{
	memset(tx, 0, sizeof(*tx));
	tx->max = max ? max : TR_CTL_MAX_FRAME;
}

void tr_ctl_tx_reset(struct tr_ctl_tx *tx)
{
	free(tx->buf);
	tr_ctl_tx_init(tx, tx->max);
}

size_t tr_ctl_tx_queued(const struct tr_ctl_tx *tx)
{
	return tx->len - tx->off;
}

/* Appends n bytes (fd >= 0: attached to the first); -ENOBUFS beyond the
 * bound, -ENOMEM. */
static int queue(struct tr_ctl_tx *tx, const uint8_t *p, size_t n, int fd)
{
	size_t have = tr_ctl_tx_queued(tx);

	if (have + n > tx->max || (fd >= 0 && tx->nfds == TR_CTL_TX_FDS))
		return -ENOBUFS;
	if (tx->off) { /* what was sent goes: the queue starts at 0 */
		memmove(tx->buf, tx->buf + tx->off, have);
		for (int i = 0; i < tx->nfds; i++)
			tx->fds[i].at -= tx->off;
		tx->off = 0;
		tx->len = have;
	}
	if (tx->len + n > tx->cap) {
		uint8_t *b = realloc(tx->buf, tx->len + n);

		if (!b)
			return -ENOMEM;
		tx->buf = b;
		tx->cap = tx->len + n;
	}
	if (fd >= 0) {
		tx->fds[tx->nfds].at = tx->len;
		tx->fds[tx->nfds++].fd = fd;
	}
	memcpy(tx->buf + tx->len, p, n);
	tx->len += n;
	return -EAGAIN;
}

int tr_ctl_tx_flush(int sock, struct tr_ctl_tx *tx)
{
	while (tx->off < tx->len) {
		/* A descriptor goes with its frame's first byte, so one
		 * sendmsg never runs into the next frame that carries one. */
		int attach = tx->nfds && tx->fds[0].at == tx->off;
		size_t end = tx->len;
		ssize_t n;

		if (tx->nfds > attach)
			end = tx->fds[attach].at;
		n = send_some(sock, tx->buf + tx->off, end - tx->off, attach ? tx->fds[0].fd : -1);
		if (n <= 0)
			return n ? (int)n : -EAGAIN;
		if (attach) {
			tx->nfds--;
			memmove(tx->fds, tx->fds + 1, (size_t)tx->nfds * sizeof(tx->fds[0]));
		}
		tx->off += (size_t)n;
	}
	tr_ctl_tx_reset(tx);
	return 0;
}

int tr_ctl_tx_send(int sock, struct tr_ctl_tx *tx, const struct tr_ctl_msg *m, int fd)
{
	int len, ret;
	uint8_t *frame = encode(m, &len);
	ssize_t sent = 0;

	if (!frame)
		return len;
	if (!tr_ctl_tx_queued(tx)) {
		sent = send_some(sock, frame, (size_t)len, fd);
		if (sent == -EAGAIN)
			sent = 0;
	}
	if (sent < 0)
		ret = (int)sent;
	else if (sent == len)
		ret = 0;
	else
		ret = queue(tx, frame + sent, (size_t)(len - sent), sent ? -1 : fd);
	free(frame);
	return ret;
}
