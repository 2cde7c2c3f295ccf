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

int tr_ctl_send(int sock, const struct tr_ctl_msg *m, int fd, int timeout_ms)
{
	union {
		char buf[CMSG_SPACE(sizeof(int))];
		struct cmsghdr align;
	} ctl;
	uint8_t *frame = malloc(TR_CTL_MAX_FRAME);
	int len, ret = 0;
	size_t off = 0;

	if (!frame)
		return -ENOMEM;
	len = tr_ctl_encode(m, frame, TR_CTL_MAX_FRAME);
	if (len < 0) {
		free(frame);
		return len;
	}
	while (off < (size_t)len) {
		struct iovec iov = { .iov_base = frame + off, .iov_len = (size_t)len - off };
		struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1 };
		struct pollfd pfd = { .fd = sock, .events = POLLOUT };
		ssize_t n;

		if (fd >= 0 && off == 0) {
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
		n = sendmsg(sock, &mh, MSG_NOSIGNAL | MSG_DONTWAIT);
		if (n > 0) {
			off += (size_t)n;
			continue;
		}
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && errno != EWOULDBLOCK) {
			ret = -errno;
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
