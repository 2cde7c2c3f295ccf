/* A scripted fabric for host tests of lib/core: every function of
 * lib/fabric/fabric.h over in-memory queues, for several ranks (contexts)
 * in one process.  See fakefab.c for the model and how it is driven. */
#ifndef TRIAD_TESTS_FAKEFAB_H
#define TRIAD_TESTS_FAKEFAB_H

#include <stddef.h>
#include <stdint.h>

/* Forgets every fabric (after each one was closed) and seeds the choices
 * of fh_step. */
void fh_reset(uint64_t seed);
/* The seed's draws, for the tests' own choices: [0, n). */
unsigned fh_rand(unsigned n);
/* Carries out one thing the fabric could do now, chosen by the seed: a
 * packet in flight arrives (and its completions are queued), or a
 * connection manager event is handed to its rank.  0 when nothing can
 * happen (everything delivered, or held). */
int fh_step(void);

/* Faults.  Ranks are the fabrics in the order they were opened.
 * fh_hold: the packets rank sends to peer on plane stay in flight (a
 * delay) until released; those already in flight too.
 * fh_break: rank's end of its connection to peer on plane moves to the
 * error state (its posted work comes back flushed) and disconnects, as
 * tr_fab_qp_break does: both ends get DISCONNECTED; 0, or -ENOENT when
 * that connection is not up.
 * fh_port: rank's port of plane goes down (its packets and connection
 * manager messages stop, the rank is told through on_port) or up.
 * fh_refuse: connection requests to rank on plane are refused
 * (TR_CM_FAILED at the requester) while on; with FH_NO_LISTENER the
 * requester hears that nothing listens there (TR_CM_NO_LISTENER), as a
 * one-VM fabric answers for an address whose link is down.
 * fh_hold_cm: connection manager events for rank are not handed over
 * while on. */
void fh_hold(int rank, int peer, int plane, int on);
int fh_break(int rank, int peer, int plane);
void fh_port(int rank, int plane, int up);
#define FH_NO_LISTENER 2
void fh_refuse(int rank, int plane, int on);
void fh_hold_cm(int rank, int on);

/* 1 when a WRITE in flight toward a connection end not in the error state
 * would write into [addr, addr + len): it can still land there. */
int fh_can_land(const void *addr, size_t len);
/* WRITEs that arrived at an end in the error state and were dropped, and
 * those applied, so far. */
uint64_t fh_writes_dropped(void);
uint64_t fh_writes_applied(void);
/* Packets in flight (held or not). */
unsigned fh_in_flight(void);

#endif
