/* A broadcast group's ranks (triad_group_create): the pure part, checked
 * and translated without a fabric.
 *
 * A group is an ordered list of distinct world ranks; group rank i is
 * ranks[i].  Every member builds the same list, so the engines (proto/bcast,
 * proto/bnode), which number their ranks 0 .. n-1, run on group ranks and
 * the glue translates each rank they name to the world rank it sends to,
 * and each world rank a message comes from back to its group rank. */
#ifndef TRIAD_PROTO_GROUP_H
#define TRIAD_PROTO_GROUP_H

#include <stdint.h>

struct tr_group_map {
	int n;	    /* members */
	int me;	    /* this rank's group rank */
	int *world; /* group rank -> world rank, n of them */
	int *index; /* world rank -> group rank, -1 outside; world_size of them */
	int world_size;
};

/*
 * Checks ranks[0 .. n-1] against a world of world_size ranks in which this
 * rank is `self` and, when they form a group that holds self, fills map
 * (its arrays allocated here; tr_group_map_free frees them).
 * -EINVAL: ranks NULL, n < 1 or n > world_size, a rank outside the world,
 * a rank twice, self not among them; -ENOMEM.  On error map is untouched.
 */
int tr_group_map_init(struct tr_group_map *map, const int *ranks, int n, int world_size,
		      int self);
/* The world's own group: every rank, in order. */
int tr_group_map_world(struct tr_group_map *map, int world_size, int self);
void tr_group_map_free(struct tr_group_map *map);

/* The group rank of world rank w, -1 when w is not a member (or not a rank). */
static inline int tr_group_index(const struct tr_group_map *map, int w)
{
	return w >= 0 && w < map->world_size ? map->index[w] : -1;
}

#endif
