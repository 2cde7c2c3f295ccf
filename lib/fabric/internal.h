/* Shared between the fabric's own files only. */
#ifndef TRIAD_FABRIC_INTERNAL_H
#define TRIAD_FABRIC_INTERNAL_H

#include "fabric/fabric.h"

/* wr_id = pointer | tag; every pointer is at least 8-byte aligned. */
enum { TR_WR_RMA = 0, TR_WR_SEND = 1, TR_WR_RECV = 2, TR_WR_TAG_MASK = 7 };

void tr_conn_on_recv(struct tr_buf *b, const struct ibv_wc *wc, enum triad_status st);
void tr_conn_on_send(struct tr_buf *b, const struct ibv_wc *wc, enum triad_status st);
void tr_conn_on_rma(struct triad_req *req, const struct ibv_wc *wc, enum triad_status st);

#endif
