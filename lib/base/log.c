#include "base/log.h"

#include <stdarg.h>
#include <stdio.h>
#include <time.h>

int tr_log_level = TR_LOG_WARN;
int tr_log_rank = -1;
int tr_log_time;

static const char *const level_names[] = {
	[TR_LOG_ERROR] = "ERROR", [TR_LOG_WARN] = "WARN",   [TR_LOG_INFO] = "INFO",
	[TR_LOG_DEBUG] = "DEBUG", [TR_LOG_TRACE] = "TRACE",
};

void tr_log(int level, const char *func, int line, const char *fmt, ...)
{
	char msg[2048], when[32] = "";
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (tr_log_time) {
		struct timespec ts;

		clock_gettime(CLOCK_MONOTONIC, &ts);
		snprintf(when, sizeof(when), "%ld.%06ld ", (long)ts.tv_sec, ts.tv_nsec / 1000);
	}
	/* One fprintf per line so that ranks sharing a terminal do not interleave. */
	fprintf(stderr, "%striad[%d] %s %s:%d: %s\n", when, tr_log_rank, level_names[level],
		func, line, msg);
}
