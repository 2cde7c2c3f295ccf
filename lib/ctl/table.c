/* The policy table's seqlock and the counters region (table.h). */
#include "ctl/table.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

/* A reader gives up after this many tries while the writer is busy: the
 * daemon writes a few hundred bytes, so only a daemon that died mid-write
 * makes it spin this long. */
#define READ_TRIES 10000

_Static_assert(sizeof(struct tr_ctl_policy) % 4 == 0, "policy is a whole number of words");

void tr_ctl_policy_default(struct tr_ctl_policy *p, unsigned nplanes)
{
	memset(p, 0, sizeof(*p));
	p->nplanes = nplanes < 1 ? 1 : nplanes > TRIAD_MAX_PLANES ? TRIAD_MAX_PLANES : nplanes;
	for (unsigned i = 0; i < p->nplanes; i++)
		snprintf(p->plane[i].name, sizeof(p->plane[i].name), "p%u", i);
}

int tr_ctl_knob_ok(const char *name, const char *value)
{
	size_t n = strnlen(name, TR_CTL_KNOB_NAME), v = strnlen(value, TR_CTL_KNOB_VALUE);

	if (n <= 6 || n >= TR_CTL_KNOB_NAME || strncmp(name, "TRIAD_", 6) || !v ||
	    v >= TR_CTL_KNOB_VALUE)
		return 0;
	for (size_t i = 6; i < n; i++)
		if (!((name[i] >= 'A' && name[i] <= 'Z') || (name[i] >= '0' && name[i] <= '9') ||
		      name[i] == '_'))
			return 0;
	for (size_t i = 0; i < v; i++)
		if (value[i] <= ' ' || value[i] > '~' || value[i] == '"' || value[i] == '\\')
			return 0;
	return 1;
}

int tr_ctl_policy_knob(const struct tr_ctl_policy *p, const char *name)
{
	for (unsigned k = 0; k < p->nknobs && k < TR_CTL_KNOBS; k++)
		if (!strncmp(p->knob[k].name, name, TR_CTL_KNOB_NAME))
			return (int)k;
	return -1;
}

int tr_ctl_policy_check(const struct tr_ctl_policy *p)
{
	if (p->nplanes < 1 || p->nplanes > TRIAD_MAX_PLANES || p->nknobs > TR_CTL_KNOBS)
		return -EBADMSG;
	for (unsigned i = 0; i < p->nplanes; i++) {
		const struct tr_ctl_plane_pol *e = &p->plane[i];

		if (!e->name[0] || !memchr(e->name, '\0', sizeof(e->name)) ||
		    e->state >= TR_CTL_PSTATE_MAX || e->reason >= TR_CTL_REASON_MAX ||
		    e->faulty > 1 || e->weight > TR_CTL_WEIGHT_MAX)
			return -EBADMSG;
	}
	for (unsigned k = 0; k < p->nknobs; k++) {
		/* tr_ctl_knob_ok reads within the arrays (strnlen), and a name
		 * that passes is NUL-terminated inside them. */
		if (!tr_ctl_knob_ok(p->knob[k].name, p->knob[k].value))
			return -EBADMSG;
		for (unsigned j = 0; j < k; j++)
			if (!strcmp(p->knob[j].name, p->knob[k].name))
				return -EBADMSG;
	}
	return 0;
}

static void store_words(struct tr_ctl_table *t, const struct tr_ctl_policy *p)
{
	uint32_t w[TR_CTL_POLICY_WORDS];

	memcpy(w, p, sizeof(w));
	for (size_t i = 0; i < TR_CTL_POLICY_WORDS; i++)
		atomic_store_explicit(&t->words[i], w[i], memory_order_relaxed);
}

void tr_ctl_table_init(struct tr_ctl_table *t, const struct tr_ctl_policy *p)
{
	memset(t, 0, sizeof(*t));
	t->magic = TR_CTL_TABLE_MAGIC;
	t->version = TR_CTL_TABLE_VERSION;
	t->size = sizeof(*t);
	t->nwords = (uint32_t)TR_CTL_POLICY_WORDS;
	store_words(t, p);
	atomic_store_explicit(&t->gen, 2, memory_order_release);
}

void tr_ctl_table_write(struct tr_ctl_table *t, const struct tr_ctl_policy *p)
{
	uint64_t g = atomic_load_explicit(&t->gen, memory_order_relaxed);

	/* Odd first; the release fence keeps the word stores after it, so a
	 * reader that sees a new word also sees the odd (or a later) gen. */
	atomic_store_explicit(&t->gen, g + 1, memory_order_relaxed);
	atomic_thread_fence(memory_order_release);
	store_words(t, p);
	atomic_store_explicit(&t->gen, g + 2, memory_order_release);
}

uint64_t tr_ctl_table_gen(const struct tr_ctl_table *t)
{
	return atomic_load_explicit(&t->gen, memory_order_acquire);
}

int tr_ctl_table_read(const struct tr_ctl_table *t, size_t maplen, struct tr_ctl_policy *p,
		      uint64_t *gen_p)
{
	uint32_t w[TR_CTL_POLICY_WORDS];
	struct tr_ctl_policy snap;

	if (!t || maplen < sizeof(*t) || t->magic != TR_CTL_TABLE_MAGIC ||
	    t->version != TR_CTL_TABLE_VERSION || t->size != sizeof(*t) ||
	    t->nwords != TR_CTL_POLICY_WORDS)
		return -EPROTO;
	for (int tries = 0; tries < READ_TRIES; tries++) {
		uint64_t g1 = atomic_load_explicit(&t->gen, memory_order_acquire), g2;

		if (g1 & 1)
			continue;
		for (size_t i = 0; i < TR_CTL_POLICY_WORDS; i++)
			w[i] = atomic_load_explicit(&t->words[i], memory_order_relaxed);
		/* The acquire fence orders the word loads before the second
		 * look at gen: a writer that began meanwhile is seen. */
		atomic_thread_fence(memory_order_acquire);
		g2 = atomic_load_explicit(&t->gen, memory_order_relaxed);
		if (g1 != g2)
			continue;
		memcpy(&snap, w, sizeof(snap));
		if (tr_ctl_policy_check(&snap))
			return -EBADMSG;
		*p = snap;
		if (gen_p)
			*gen_p = g1;
		return 0;
	}
	return -EAGAIN;
}

void tr_ctl_counters_init(struct tr_ctl_counters *c, unsigned nplanes)
{
	memset(c, 0, sizeof(*c));
	c->magic = TR_CTL_COUNTERS_MAGIC;
	c->version = TR_CTL_TABLE_VERSION;
	c->size = sizeof(*c);
	c->nplanes = nplanes > TRIAD_MAX_PLANES ? TRIAD_MAX_PLANES : nplanes;
}

int tr_ctl_counters_check(const struct tr_ctl_counters *c, size_t maplen, unsigned *nplanes_p)
{
	const volatile struct tr_ctl_counters *v = c;
	uint32_t magic, version, size, nplanes;

	if (!c || maplen < sizeof(*c))
		return -EPROTO;
	/* One load each (volatile: not re-read behind our back), then only
	 * the copies are looked at. */
	magic = v->magic;
	version = v->version;
	size = v->size;
	nplanes = v->nplanes;
	if (magic != TR_CTL_COUNTERS_MAGIC || version != TR_CTL_TABLE_VERSION ||
	    size != sizeof(*c) || nplanes < 1 || nplanes > TRIAD_MAX_PLANES)
		return -EPROTO;
	*nplanes_p = nplanes;
	return 0;
}

/* Has client c reached what plane's pending state asks for?  idle: and
 * has nothing in flight there any more (off only). */
static int client_settled(const struct tr_ctl_creg *r, unsigned plane, uint64_t pend_gen,
			  int off, int idle)
{
	const struct tr_ctl_cplane *e;

	if (plane >= r->nplanes || plane >= TRIAD_MAX_PLANES)
		return 1; /* it does not use the plane */
	if (atomic_load_explicit(&r->c->applied_gen, memory_order_acquire) < pend_gen)
		return 0;
	e = &r->c->plane[plane];
	if (!off)
		return !atomic_load_explicit(&e->switched, memory_order_relaxed);
	return atomic_load_explicit(&e->switched, memory_order_relaxed) &&
	       (!idle || !atomic_load_explicit(&e->inflight, memory_order_relaxed));
}

unsigned tr_ctl_left(const struct tr_ctl_policy *p, const uint64_t *pend_gen,
		     const struct tr_ctl_creg *clients, unsigned nclients)
{
	unsigned left = 0;

	for (unsigned q = 0; q < p->nplanes; q++) {
		int all = p->plane[q].state == TR_CTL_SWITCH_PENDING;

		for (unsigned i = 0; i < nclients && all; i++)
			all = client_settled(&clients[i], q, pend_gen[q], 1, 0);
		left |= (unsigned)all << q;
	}
	return left;
}

unsigned tr_ctl_settle(struct tr_ctl_policy *p, const uint64_t *pend_gen,
		       const struct tr_ctl_creg *clients, unsigned nclients)
{
	unsigned changed = 0;

	for (unsigned q = 0; q < p->nplanes; q++) {
		struct tr_ctl_plane_pol *e = &p->plane[q];
		int off = e->state == TR_CTL_SWITCH_PENDING, all = 1;

		if (!off && e->state != TR_CTL_RESTORE_PENDING)
			continue;
		for (unsigned i = 0; i < nclients && all; i++)
			all = client_settled(&clients[i], q, pend_gen[q], off, 1);
		if (!all)
			continue;
		e->state = off ? TR_CTL_SWITCHED : TR_CTL_NORMAL;
		if (!off)
			e->reason = TR_CTL_R_NONE;
		changed |= 1u << q;
	}
	return changed;
}

int tr_ctl_pstate_off(uint32_t state)
{
	return state == TR_CTL_SWITCH_PENDING || state == TR_CTL_SWITCHED;
}

int tr_ctl_other_live(const struct tr_ctl_policy *p, unsigned plane)
{
	for (unsigned q = 0; q < p->nplanes; q++)
		if (q != plane && !tr_ctl_pstate_off(p->plane[q].state) && !p->plane[q].faulty)
			return 1;
	return 0;
}

static const char *const pstate_names[TR_CTL_PSTATE_MAX] = {
	"normal", "switch_pending", "switched", "restore_pending",
};
static const char *const reason_names[TR_CTL_REASON_MAX] = { "none", "admin", "fail", "fault",
							       "degraded" };

const char *tr_ctl_src_str(uint32_t s)
{
	static const char *const names[TR_CTL_SRC_MAX] = { "default", "daemon", "environment" };

	return s < TR_CTL_SRC_MAX ? names[s] : "unknown";
}

const char *tr_ctl_pstate_str(uint32_t s)
{
	return s < TR_CTL_PSTATE_MAX ? pstate_names[s] : "unknown";
}

const char *tr_ctl_reason_str(uint32_t r)
{
	return r < TR_CTL_REASON_MAX ? reason_names[r] : "unknown";
}
