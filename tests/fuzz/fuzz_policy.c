/* libFuzzer target: what a process does with the policy table triadd
 * publishes (lib/ctl/table.c's reader, then lib/core/config.c's registry
 * applying the knobs by name, as lib/core/ctl.c does).  The input is the
 * policy's words; a table that reads back must apply without leaving the
 * configuration invalid: every knob triadd may not set untouched, every
 * knob it set holding the published value, the flow-control needs in
 * order. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/config.h"
#include "ctl/table.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct tr_ctl_table t;
	struct tr_ctl_policy p, q;
	struct tr_config_kv kv[TR_CTL_KNOBS];
	struct tr_config cfg, was;
	struct tr_config_var a, b;
	char err[300];
	uint64_t gen;

	memset(&p, 0, sizeof(p));
	memcpy(&p, data, size < sizeof(p) ? size : sizeof(p));
	tr_ctl_table_init(&t, &p);
	if (tr_ctl_table_read(&t, sizeof(t), &q, &gen))
		return 0;
	if (memcmp(&p, &q, sizeof(p)) || q.nknobs > TR_CTL_KNOBS)
		abort();
	for (unsigned k = 0; k < q.nknobs; k++)
		kv[k] = (struct tr_config_kv){ q.knob[k].name, q.knob[k].value };
	if (tr_config_load(&cfg, NULL, NULL, err, sizeof(err)))
		abort();
	was = cfg;
	err[0] = '\0';
	if (tr_config_apply_daemon(&cfg, kv, q.nknobs, err, sizeof(err)) && !err[0])
		abort(); /* a refusal says why */
	if (cfg.need_medium > cfg.need_low)
		abort();
	for (size_t i = 0; tr_config_var(&cfg, i, &b) == 0; i++) {
		int k;

		if (tr_config_var(&was, i, &a))
			abort();
		if (b.when == TR_CONFIG_AT_START && (strcmp(a.value, b.value) || b.src != a.src))
			abort();
		if (b.src != TR_CONFIG_DAEMON)
			continue;
		for (k = 0; k < (int)q.nknobs && strcmp(q.knob[k].name, b.name); k++)
			;
		if (k == (int)q.nknobs)
			abort(); /* set by triadd, yet not published */
	}
	return 0;
}
