/* triadd's knobs: the [policy] of its configuration and triadctl config
 * set/unset, checked by the library's registry (lib/core/config.c), which
 * every process applies them through too; and what each process reports
 * it applied (APPLIED), for triadctl config. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "core/config.h"
#include "triadd.h"

int td_knobs_check(const struct tr_ctl_knob *k, size_t n, size_t *bad_p, char *err,
		   size_t errlen)
{
	struct tr_config_kv kv[TR_CTL_KNOBS];

	if (n > TR_CTL_KNOBS) {
		snprintf(err, errlen, "more than %d knobs", TR_CTL_KNOBS);
		*bad_p = TR_CTL_KNOBS;
		return -EINVAL;
	}
	for (size_t i = 0; i < n; i++)
		kv[i] = (struct tr_config_kv){ k[i].name, k[i].value };
	return tr_config_check_daemon(kv, n, bad_p, err, errlen);
}

/* When a change of the knob takes effect, from the registry. */
static const char *when_str(const char *name)
{
	struct tr_config cfg;
	struct tr_config_var v;
	char err[8];
	int i = tr_config_index(name);

	tr_config_load(&cfg, NULL, NULL, err, sizeof(err));
	if (i < 0 || tr_config_var(&cfg, (size_t)i, &v))
		return "?";
	return tr_config_when_str(v.when);
}

void td_knobs_report(const struct td *d, struct td_out *o, int json)
{
	const struct tr_ctl_policy *p = &d->pol;
	int first = 1;

	/* Names and values passed tr_ctl_knob_ok: printable, no blank. */
	if (json)
		td_out_printf(o, ",\"policy\":[");
	for (unsigned k = 0; k < p->nknobs; k++) {
		if (json)
			td_out_printf(o, "%s{\"name\":\"%s\",\"value\":\"%s\",\"takes_effect\":\"%s\"}",
				      k ? "," : "", p->knob[k].name, p->knob[k].value,
				      when_str(p->knob[k].name));
		else
			td_out_printf(o, "policy %s=%s (takes effect %s)\n", p->knob[k].name,
				      p->knob[k].value, when_str(p->knob[k].name));
	}
	if (json)
		td_out_printf(o, "],\"clients\":[");
	for (const struct tr_list *l = d->conns.next; l != &d->conns; l = l->next) {
		const struct td_conn *c = tr_container_of(l, struct td_conn, link);

		if (c->kind != TD_CONN_CLIENT || c->dead)
			continue;
		if (json) {
			td_out_printf(o, "%s{\"id\":%u,\"pid\":%d,\"rank\":%d,\"name\":",
				      first ? "" : ",", c->id, (int)c->pid, c->rank);
			td_out_json_str(o, c->name);
			td_out_printf(o, ",\"applied_generation\":%llu,\"knobs\":[",
				      (unsigned long long)c->knobs_gen);
		} else {
			td_out_printf(o, "client %u pid %d rank %d ", c->id, (int)c->pid, c->rank);
			td_out_text_str(o, c->name, 0);
			td_out_printf(o, c->nknobs_seen ? " (policy generation %llu)\n"
							: " (has not reported its knobs yet)\n",
				      (unsigned long long)c->knobs_gen);
		}
		first = 0;
		for (unsigned k = 0; k < c->nknobs; k++) {
			const char *src = tr_ctl_src_str(c->knob_src[k]);

			if (json)
				td_out_printf(o, "%s{\"name\":\"%s\",\"value\":\"%s\",\"source\":\"%s\"}",
					      k ? "," : "", c->knob[k].name, c->knob[k].value, src);
			else
				td_out_printf(o, "  %-24s %-10s %s\n", c->knob[k].name,
					      c->knob[k].value, src);
		}
		if (json)
			td_out_printf(o, "]}");
	}
	if (json)
		td_out_printf(o, "]");
}
