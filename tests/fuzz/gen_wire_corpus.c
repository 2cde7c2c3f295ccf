/* Writes the seed corpus of fuzz_wire: one valid encoded message per file.
 * Usage: gen_wire_corpus DIR */
#include <stdio.h>
#include <string.h>

#include "proto/wire.h"

static int emit(const char *dir, const char *name, const struct tr_msg *m)
{
	unsigned char buf[TR_WIRE_MAX_LEN];
	char path[4096];
	int n = tr_msg_encode(m, buf, sizeof(buf));
	FILE *f;

	if (n < 0) {
		fprintf(stderr, "%s: encode failed (%d)\n", name, n);
		return 1;
	}
	snprintf(path, sizeof(path), "%s/%s", dir, name);
	f = fopen(path, "wb");
	if (!f || fwrite(buf, 1, (size_t)n, f) != (size_t)n || fclose(f)) {
		perror(path);
		return 1;
	}
	return 0;
}

int main(int argc, char **argv)
{
	struct tr_msg m;
	int bad = 0;

	if (argc != 2) {
		fprintf(stderr, "usage: %s DIR\n", argv[0]);
		return 2;
	}
	memset(&m, 0, sizeof(m));
	m.type = TR_MSG_WIN_QUERY;
	m.seq = 1;
	m.u.win_query.qid = 7;
	m.u.win_query.win = 3;
	bad |= emit(argv[1], "win_query", &m);

	memset(&m, 0, sizeof(m));
	m.type = TR_MSG_WIN_INFO;
	m.seq = 2;
	m.u.win_info.qid = 7;
	m.u.win_info.win = 3;
	m.u.win_info.status = TRIAD_S_OK;
	m.u.win_info.nplanes = 2;
	m.u.win_info.access = TRIAD_WIN_READ | TRIAD_WIN_WRITE;
	m.u.win_info.base = 0x7f1234560000ull;
	m.u.win_info.len = 64u << 20;
	m.u.win_info.rkey[0] = 0x1a2b;
	m.u.win_info.rkey[1] = 0x3c4d;
	bad |= emit(argv[1], "win_info_2planes", &m);

	m.u.win_info.nplanes = TRIAD_MAX_PLANES;
	for (int i = 0; i < TRIAD_MAX_PLANES; i++)
		m.u.win_info.rkey[i] = 0x100u + (unsigned)i;
	m.u.win_info.access = TRIAD_WIN_READ;
	bad |= emit(argv[1], "win_info_8planes", &m);

	m.u.win_info.status = TRIAD_S_NO_WINDOW;
	m.u.win_info.nplanes = 0;
	m.u.win_info.access = 0;
	m.u.win_info.base = 0;
	m.u.win_info.len = 0;
	bad |= emit(argv[1], "win_info_no_window", &m);

	memset(&m, 0, sizeof(m));
	m.type = TR_MSG_BARRIER;
	m.seq = 0xfffffffeu;
	m.u.barrier.epoch = 5;
	bad |= emit(argv[1], "barrier", &m);

	m.type = TR_MSG_BARRIER_REL;
	m.seq = 0xffffffffu;
	bad |= emit(argv[1], "barrier_rel", &m);
	return bad;
}
