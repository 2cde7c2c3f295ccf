/* perf_out: the one place where a row of figures becomes output.
 *
 * A test describes a row as an array of fields (key, table header, width,
 * value) and hands it to perf_out_row(); the format the user asked for
 * decides the rest:
 *   table  the perftest-style table: a rule, the title, a rule, the column
 *          headers once, then one line per row (fields with a header only);
 *   csv    a header line of the keys once, then one line per row (every
 *          field; a raw JSON value is quoted);
 *   json   one JSON object per row, on one line (JSON Lines: a reader takes
 *          line by line; every object has "test");
 *   osu    the output of the OSU micro-benchmark that the test mirrors
 *          (perf_osu_find): its header lines once, then one row per size
 *          of the size and one figure (the mean latency, or the bandwidth
 *          in MB/s), as osu_latency prints them.
 * Rows can also be kept for --plot: perf_out_finish() writes them as a
 * gnuplot data file beside FILE.png and runs gnuplot on them. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "perf.h"

#define PLOT_MAX_ROWS 256
#define PLOT_MAX_Y 3

/* What --plot collects: x and up to PLOT_MAX_Y y values per row, or (a
 * timeline) x and a label. */
struct perf_out {
	struct perf_plot spec;
	int nrows;
	double x[PLOT_MAX_ROWS], y[PLOT_MAX_ROWS][PLOT_MAX_Y];
	char label[PLOT_MAX_ROWS][64];
};

/* The tests with an OSU counterpart.  Latency: the mean, as OSU reports
 * it (total time over iterations); the half round trip for the
 * ping-pongs, as osu_latency.  Bandwidth: bytes over the whole stream's
 * time, as osu_bw, in OSU's MB/s (10^6 B/s) where the row has MiB/s. */
#define MIB_TO_MB (1048576.0 / 1e6)
#define OSU1(test, bench, title, column, key, scale) \
	{ (test), (bench), (title), (column), (key), (scale), NULL, NULL, 0 }
static const struct perf_osu osu_tests[] = {
	OSU1("put_lat", "osu_put_latency", "OSU MPI_Put Latency Test", "Latency (us)", "t_avg_us", 1),
	/* OSU's own spelling: "latency". */
	OSU1("get_lat", "osu_get_latency", "OSU MPI_Get latency Test", "Latency (us)", "t_avg_us", 1),
	OSU1("put_bw", "osu_put_bw", "OSU MPI_Put Bandwidth Test", "Bandwidth (MB/s)", "bw_avg_mib_s",
	     MIB_TO_MB),
	OSU1("put_bw_unreg", "osu_put_bw", "OSU MPI_Put Bandwidth Test", "Bandwidth (MB/s)",
	     "bw_avg_mib_s", MIB_TO_MB),
	OSU1("get_bw", "osu_get_bw", "OSU MPI_Get Bandwidth Test", "Bandwidth (MB/s)", "bw_avg_mib_s",
	     MIB_TO_MB),
	/* Both directions summed, as osu_put_bibw and osu_bibw report. */
	OSU1("put_bibw", "osu_put_bibw", "OSU MPI_Put Bi-directional Bandwidth Test",
	     "Bandwidth (MB/s)", "bw_avg_mib_s", MIB_TO_MB),
	/* The pairs' sum, and their messages per second. */
	{ "put_mbw", "osu_mbw_mr", "OSU MPI Multiple Bandwidth / Message Rate Test", "MB/s",
	  "bw_avg_mib_s", MIB_TO_MB, "Messages/s", "msg_rate_per_s", 1 },
	OSU1("am_lat", "osu_latency", "OSU MPI Latency Test", "Latency (us)", "t_avg_us", 1),
	OSU1("am_bw", "osu_bw", "OSU MPI Bandwidth Test", "Bandwidth (MB/s)", "bw_avg_mib_s",
	     MIB_TO_MB),
	OSU1("am_bibw", "osu_bibw", "OSU MPI Bi-Directional Bandwidth Test", "Bandwidth (MB/s)",
	     "bw_avg_mib_s", MIB_TO_MB),
	OSU1("bcast", "osu_bcast", "OSU MPI Broadcast Latency Test", "Avg Latency(us)", "t_avg_us", 1),
};

const struct perf_osu *perf_osu_find(const char *test)
{
	for (size_t i = 0; i < sizeof(osu_tests) / sizeof(osu_tests[0]); i++)
		if (!strcmp(osu_tests[i].test, test))
			return &osu_tests[i];
	return NULL;
}

static void json_string(FILE *out, const char *s)
{
	fputc('"', out);
	for (; *s; s++) {
		if (*s == '"' || *s == '\\')
			fprintf(out, "\\%c", *s);
		else if ((unsigned char)*s < 0x20)
			fprintf(out, "\\u%04x", *s);
		else
			fputc(*s, out);
	}
	fputc('"', out);
}

/* CSV: a field with a comma, a quote or a newline goes in quotes. */
static void csv_string(FILE *out, const char *s)
{
	if (!strpbrk(s, ",\"\n")) {
		fputs(s, out);
		return;
	}
	fputc('"', out);
	for (; *s; s++) {
		if (*s == '"')
			fputc('"', out);
		fputc(*s, out);
	}
	fputc('"', out);
}

static void put_value(FILE *out, const struct perf_field *f, enum perf_format fmt)
{
	switch (f->type) {
	case PERF_F_INT:
		fprintf(out, "%lld", f->v.i);
		break;
	case PERF_F_DBL:
		fprintf(out, "%.*f", f->prec, f->v.d);
		break;
	case PERF_F_STR:
		if (fmt == PERF_FMT_JSON)
			json_string(out, f->v.s);
		else
			csv_string(out, f->v.s);
		break;
	case PERF_F_BOOL:
		fputs(f->v.i ? "true" : "false", out);
		break;
	case PERF_F_NULL:
		fputs(fmt == PERF_FMT_JSON ? "null" : "", out);
		break;
	case PERF_F_RAW:
		if (fmt == PERF_FMT_JSON)
			fputs(f->v.s, out);
		else
			csv_string(out, f->v.s);
		break;
	}
}

/* A table cell: right-aligned in its width (strings left-aligned). */
static void put_cell(FILE *out, const struct perf_field *f)
{
	switch (f->type) {
	case PERF_F_INT:
		fprintf(out, " %*lld", f->width, f->v.i);
		break;
	case PERF_F_DBL:
		fprintf(out, " %*.*f", f->width, f->prec, f->v.d);
		break;
	case PERF_F_STR:
		fprintf(out, " %-*s", f->width, f->v.s);
		break;
	case PERF_F_BOOL:
		fprintf(out, " %*s", f->width, f->v.i ? "yes" : "no");
		break;
	case PERF_F_NULL:
		fprintf(out, " %*s", f->width, "-");
		break;
	case PERF_F_RAW:
		break; /* JSON only: raw fields have no header */
	}
}

static void header(struct perf_run *r, const char *title, const struct perf_field *f, size_t n)
{
	const struct perf_osu *osu;
	size_t i;

	switch (r->o->format) {
	case PERF_FMT_TABLE:
		perf_print_rule();
		fputs(title, stdout);
		perf_print_rule();
		for (i = 0; i < n; i++)
			if (f[i].head)
				printf(f[i].type == PERF_F_STR ? " %-*s" : " %*s", f[i].width,
				       f[i].head);
		printf("\n");
		break;
	case PERF_FMT_CSV:
		for (i = 0; i < n; i++)
			printf("%s%s", i ? "," : "", f[i].key);
		printf("\n");
		break;
	case PERF_FMT_JSON:
		break;
	case PERF_FMT_OSU:
		osu = perf_osu_find(r->o->cmd->name);
		if (!osu) /* refused on the command line */
			break;
		printf("# %s v%s\n", osu->title, PERF_OSU_VERSION);
		printf("# triad-perf %s, in %s's format\n", osu->test, osu->bench);
		if (osu->column2) {
			printf("# [ pairs: %d ] [ window size: %d ]\n", r->npairs, r->o->window);
			printf("%-10s%20s%20s\n", "# Size", osu->column, osu->column2);
		} else {
			printf("%-10s%20s\n", "# Size", osu->column);
		}
		break;
	}
}

static const struct perf_field *find(const struct perf_field *f, size_t n, const char *key)
{
	for (size_t i = 0; i < n; i++)
		if (!strcmp(f[i].key, key))
			return &f[i];
	return NULL;
}

static double num(const struct perf_field *f)
{
	if (!f)
		return 0;
	return f->type == PERF_F_DBL ? f->v.d : f->type == PERF_F_INT ? (double)f->v.i : 0;
}

void perf_out_keep(struct perf_run *r, const struct perf_plot *plot, const struct perf_field *f,
		   size_t n)
{
	struct perf_out *po = r->out;
	const struct perf_field *lf;
	int k;

	if (!plot || !r->o->plot_file || r->silent)
		return;
	if (!po) {
		po = r->out = calloc(1, sizeof(*po));
		if (!po) {
			perf_err(r, "--plot", -ENOMEM);
			return;
		}
		po->spec = *plot;
	}
	if (po->nrows == PLOT_MAX_ROWS)
		return;
	k = po->nrows++;
	po->x[k] = num(find(f, n, plot->x));
	for (int j = 0; j < PLOT_MAX_Y && plot->y[j]; j++)
		po->y[k][j] = num(find(f, n, plot->y[j]));
	lf = plot->label ? find(f, n, plot->label) : NULL;
	if (lf && lf->type == PERF_F_STR)
		snprintf(po->label[k], sizeof(po->label[k]), "%s", lf->v.s);
}

void perf_out_row(struct perf_run *r, const char *title, const struct perf_field *f, size_t n,
		  const struct perf_plot *plot)
{
	const struct perf_osu *osu;
	size_t i;
	int first = 1;

	if (r->silent)
		return;
	if (!r->header_done) {
		header(r, title, f, n);
		r->header_done = 1;
	}
	switch (r->o->format) {
	case PERF_FMT_TABLE:
		for (i = 0; i < n; i++)
			if (f[i].head)
				put_cell(stdout, &f[i]);
		printf("\n");
		break;
	case PERF_FMT_CSV:
		for (i = 0; i < n; i++) {
			if (i)
				fputc(',', stdout);
			put_value(stdout, &f[i], PERF_FMT_CSV);
		}
		printf("\n");
		break;
	case PERF_FMT_JSON:
		fputc('{', stdout);
		for (i = 0; i < n; i++) {
			printf("%s\"%s\":", first ? "" : ",", f[i].key);
			put_value(stdout, &f[i], PERF_FMT_JSON);
			first = 0;
		}
		printf("}\n");
		break;
	case PERF_FMT_OSU:
		osu = perf_osu_find(r->o->cmd->name);
		if (!osu)
			break;
		printf("%-10lld%20.2f", (long long)num(find(f, n, "bytes")),
		       num(find(f, n, osu->key)) * osu->scale);
		if (osu->column2)
			printf("%20.2f", num(find(f, n, osu->key2)) * osu->scale2);
		printf("\n");
		break;
	}
	fflush(stdout);
	perf_out_keep(r, plot, f, n);
}

void perf_progress(const struct perf_run *r, const char *fmt, ...)
{
	va_list ap;

	if (r->o->quiet)
		return;
	fprintf(stderr, "triad-perf: ");
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

/* gnuplot's script for the kept rows; data in `data`, picture in `png`. */
static void plot_script(FILE *g, const struct perf_out *po, const char *data, const char *png)
{
	const struct perf_plot *p = &po->spec;

	fprintf(g, "set terminal png size 1000,600\nset output '%s'\nset grid\n", png);
	fprintf(g, "set title '%s'\nset xlabel '%s'\nset ylabel '%s'\n", p->title, p->xlabel,
		p->ylabel);
	if (p->timeline) {
		/* One line per event, in time order, its name as the y tic. */
		fprintf(g, "set yrange [-1:%d] reverse\nset lmargin 36\nset rmargin 8\nset key off\n"
			   "set ytics font ',9'\n"
			   "plot '%s' using 1:0:ytic(2) with points pt 7 ps 1.5, "
			   "'' using 1:0:(sprintf('%%.1f', $1)) with labels left offset 1,0 "
			   "font ',8'\n",
			po->nrows, data);
		return;
	}
	/* A sweep: sizes on a log2 axis in binary units; log y for times,
	 * which span orders of magnitude. */
	fprintf(g, "set logscale x 2\nset xtics 4\nset format x '%%.0b %%BB'\n"
		   "set key top left\n%s\nplot", p->logy ? "set logscale y" : "");
	for (int j = 0; j < PLOT_MAX_Y && p->y[j]; j++)
		fprintf(g, "%s '%s' using 1:%d with linespoints title '%s'", j ? "," : "", data,
			j + 2, p->ytitle[j] ? p->ytitle[j] : p->y[j]);
	fprintf(g, "\n");
}

/* A timeline's rows in time order (the events are kept in the order of
 * their kinds). */
static void sort_by_x(struct perf_out *po)
{
	for (int i = 1; i < po->nrows; i++)
		for (int k = i; k > 0 && po->x[k] < po->x[k - 1]; k--) {
			double x = po->x[k];
			char label[sizeof(po->label[0])];

			po->x[k] = po->x[k - 1];
			po->x[k - 1] = x;
			memcpy(label, po->label[k], sizeof(label));
			memcpy(po->label[k], po->label[k - 1], sizeof(label));
			memcpy(po->label[k - 1], label, sizeof(label));
		}
}

static int write_data(const struct perf_out *po, const char *path)
{
	FILE *d = fopen(path, "w");

	if (!d)
		return -errno;
	for (int k = 0; k < po->nrows; k++) {
		fprintf(d, "%.6g", po->x[k]);
		if (po->spec.timeline)
			fprintf(d, " \"%s\"", po->label[k]);
		for (int j = 0; !po->spec.timeline && j < PLOT_MAX_Y && po->spec.y[j]; j++)
			fprintf(d, " %.6g", po->y[k][j]);
		fputc('\n', d);
	}
	return fclose(d) ? -errno : 0;
}

int perf_out_finish(struct perf_run *r)
{
	struct perf_out *po = r->out;
	const char *png = r->o->plot_file;
	char data[4096];
	FILE *g;
	int ret, status;

	if (!png)
		return 0;
	r->out = NULL;
	if (!po || !po->nrows) {
		free(po);
		fprintf(stderr, "triad-perf: --plot %s: %s has nothing to plot\n", png,
			r->o->cmd->name);
		return -EINVAL;
	}
	snprintf(data, sizeof(data), "%s.dat", png);
	if (po->spec.timeline)
		sort_by_x(po);
	ret = write_data(po, data);
	if (ret) {
		fprintf(stderr, "triad-perf: --plot: %s: %s\n", data, strerror(-ret));
		free(po);
		return ret;
	}
	g = popen("gnuplot", "w");
	if (!g) {
		fprintf(stderr, "triad-perf: --plot: cannot run gnuplot: %s\n", strerror(errno));
		free(po);
		return -errno;
	}
	plot_script(g, po, data, png);
	free(po);
	status = pclose(g);
	if (status == -1 || !WIFEXITED(status) || WEXITSTATUS(status)) {
		fprintf(stderr, "triad-perf: --plot %s: gnuplot failed (status %d; is gnuplot-nox "
			"installed?)\n", png, status == -1 ? -1 : WEXITSTATUS(status));
		return -EIO;
	}
	perf_progress(r, "plot: %s (data %s)", png, data);
	return 0;
}
