/* A minimal intrusive doubly linked list. */
#ifndef TRIAD_BASE_LIST_H
#define TRIAD_BASE_LIST_H

#include <stddef.h>

struct tr_list {
	struct tr_list *prev, *next;
};

static inline void tr_list_init(struct tr_list *h)
{
	h->prev = h->next = h;
}

static inline int tr_list_empty(const struct tr_list *h)
{
	return h->next == h;
}

static inline void tr_list_add_tail(struct tr_list *h, struct tr_list *n)
{
	n->prev = h->prev;
	n->next = h;
	h->prev->next = n;
	h->prev = n;
}

static inline void tr_list_del(struct tr_list *n)
{
	n->prev->next = n->next;
	n->next->prev = n->prev;
	n->prev = n->next = n;
}

#define tr_container_of(ptr, type, member) ((type *)((char *)(ptr) - offsetof(type, member)))
#define tr_list_first(h, type, member) tr_container_of((h)->next, type, member)

#endif
