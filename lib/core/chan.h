/* The message channel of a lane (chan.c).  Messages (control, active
 * messages, BSMs) use the peer's receive slots under buffer-status flow
 * control (proto/fc): a message waits in its priority's queue until the
 * peer's last BSM leaves a slot for it; every message carries this side's
 * BSM for the reverse direction in its header, and a standalone BSM goes
 * out when proto/fc's decision says so.  Each side tells the other its
 * slot count and size when connecting; buffers are sized from them at
 * ESTABLISHED.  What arrives goes to the peer layer (its owner's on_msg),
 * which judges its sequence number and hands it to its handler.
 *
 * Every function here is called with the context lock held. */
#ifndef TRIAD_CORE_CHAN_H
#define TRIAD_CORE_CHAN_H

#include "core/lane.h"

/* Queue an encoded message (its sequence number already in it) on
 * priority prio, in order of number (a message given back by a broken
 * lane goes ahead of the later ones queued here, so that the receiver's
 * window never has to span a queue); it goes as soon as the peer has a
 * slot for it.  req (may
 * be NULL) completes when it arrived.  movable: its lane was a free
 * choice (no pin, nothing it must follow on this connection), so while it
 * waits another lane of the peer may take it (tr_lane_move).
 * -ENOTCONN, -EMSGSIZE. */
int tr_lane_send(struct tr_lane *l, const void *data, int len, unsigned prio,
		 struct triad_req *req, int movable);
/* Where to encode a message for tr_lane_send, so that one that can go out
 * at once is posted from there (no copy), or NULL: the lane's next free
 * send buffer, peer_slot_size bytes, valid until the next call into the
 * lane. */
void *tr_lane_msg_buf(struct tr_lane *l);
/* Frees the context's cache of queue nodes (at context close). */
void tr_lane_qcache_free(struct triad_ctx *ctx);
/* Re-decision while queued (the adaptive choice): l could post a message
 * of prio now (up, send room, a slot, nothing of prio waiting); the oldest
 * message of prio waiting on l may move; post that one on `to` now (0),
 * or -EAGAIN when one of the two does not hold. */
int tr_lane_room(const struct tr_lane *l, unsigned prio);
int tr_lane_movable(const struct tr_lane *l, unsigned prio);
int tr_lane_move(struct tr_lane *from, struct tr_lane *to, unsigned prio);
/* Posts what the lane's queues may post now. */
void tr_lane_pump(struct tr_lane *l);
/* For a diagnosis: where on l number seq of prio is ("queued", "in
 * flight", "its SEQ_SKIP queued", ...; tr_msg_carries), or NULL. */
const char *tr_lane_seq_where(const struct tr_lane *l, unsigned prio, uint32_t seq);
/* A handler is done with a kept receive buffer: free its slot. */
void tr_lane_release(struct tr_buf *b);
/* One flow-control timer period passed. */
void tr_lane_fc_tick(struct tr_lane *l);
/* The linger time of a deferred BSM is over: send it. */
void tr_lane_bsm_flush(struct tr_lane *l);

/* The fabric's events (its ops table, in init.c): a receive, and any
 * completion of the send queue (a message's here, a WRITE's or READ's
 * handed to onesided.c). */
void tr_lane_on_recv(void *arg, const struct tr_fab_wc *wc);
void tr_lane_on_send(void *arg, const struct tr_fab_wc *wc);

/* Registers the channel's and the one-sided operations' parts of every
 * lane (struct tr_lane_parts), before the lanes are made. */
void tr_chan_setup(struct triad_ctx *ctx);

#endif
