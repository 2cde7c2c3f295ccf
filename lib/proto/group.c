/* A broadcast group's ranks: checked and translated (proto/group.h). */
#include "proto/group.h"

#include <errno.h>
#include <stdlib.h>

int tr_group_map_init(struct tr_group_map *map, const int *ranks, int n, int world_size,
		      int self)
{
	int *world, *index;

	if (!map || !ranks || world_size < 1 || n < 1 || n > world_size || self < 0 ||
	    self >= world_size)
		return -EINVAL;
	world = malloc(sizeof(*world) * (size_t)n);
	index = malloc(sizeof(*index) * (size_t)world_size);
	if (!world || !index) {
		free(world);
		free(index);
		return -ENOMEM;
	}
	for (int w = 0; w < world_size; w++)
		index[w] = -1;
	for (int i = 0; i < n; i++) {
		if (ranks[i] < 0 || ranks[i] >= world_size || index[ranks[i]] >= 0) {
			free(world);
			free(index);
			return -EINVAL; /* outside the world, or twice */
		}
		index[ranks[i]] = i;
		world[i] = ranks[i];
	}
	if (index[self] < 0) {
		free(world);
		free(index);
		return -EINVAL;
	}
	map->n = n;
	map->me = index[self];
	map->world = world;
	map->index = index;
	map->world_size = world_size;
	return 0;
}

int tr_group_map_world(struct tr_group_map *map, int world_size, int self)
{
	int *ranks, ret;

	if (world_size < 1)
		return -EINVAL;
	ranks = malloc(sizeof(*ranks) * (size_t)world_size);
	if (!ranks)
		return -ENOMEM;
	for (int i = 0; i < world_size; i++)
		ranks[i] = i;
	ret = tr_group_map_init(map, ranks, world_size, world_size, self);
	free(ranks);
	return ret;
}

void tr_group_map_free(struct tr_group_map *map)
{
	free(map->world);
	free(map->index);
	map->world = map->index = NULL;
	map->n = 0;
}
