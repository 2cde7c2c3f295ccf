/* The world file: which ranks exist and their address on every plane.
 *
 *     # comment                (anywhere after '#')
 *     port 7471                (optional, default 7471; before the ranks)
 *     key  climate-run-42      (optional, once: the job key, any word of up to
 *                               63 characters; see tr_job_key)
 *     0  10.100.0.1 10.101.0.1 (rank, then one IPv4 address per plane)
 *     1  10.100.0.2 10.101.0.2
 *
 * Ranks are 0..N-1, listed once each (any order); every rank names the same
 * number of planes (1..TRIAD_MAX_PLANES); the addresses of one plane are
 * distinct.  Errors name the file and the line. */
#ifndef TRIAD_CORE_WORLD_H
#define TRIAD_CORE_WORLD_H

#include <netinet/in.h>
#include <stddef.h>
#include <stdint.h>

#include "triad.h"

#define TR_WORLD_DEFAULT_PORT 7471
#define TR_WORLD_MAX_RANKS 4096

struct tr_world {
	int size;
	int nplanes;
	uint16_t port;
	uint64_t key; /* tr_job_key() of the 'key' line; 0 without one */
	struct in_addr (*addr)[TRIAD_MAX_PLANES]; /* addr[rank][plane] */
	/* Each rank's own port (launched by PMIx: ranks that share a node's
	 * devices listen on different ports), or NULL: port for every rank. */
	uint16_t *ports;
};

static inline uint16_t tr_world_port(const struct tr_world *w, int rank)
{
	return w->ports ? w->ports[rank] : w->port;
}

/* Parses text (NUL-terminated); name is used in error messages. */
int tr_world_parse(const char *text, const char *name, struct tr_world *w,
		   char *err, size_t errlen);
int tr_world_load(const char *path, struct tr_world *w, char *err, size_t errlen);
void tr_world_free(struct tr_world *w);

/* The job key of a name (a world file's 'key' word, a PMIx namespace): a
 * 64-bit hash, never 0 (0 means "no key").  Connections are accepted only
 * between ranks with the same key, so two jobs that share a fabric cannot
 * reach each other's windows. */
uint64_t tr_job_key(const char *name);

#endif
