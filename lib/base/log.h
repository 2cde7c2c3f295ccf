/* Logging: one line per event, prefixed with the rank, the level and the
 * function that detected it.  Errors are logged once, where detected. */
#ifndef TRIAD_BASE_LOG_H
#define TRIAD_BASE_LOG_H

enum tr_log_level {
	TR_LOG_ERROR,
	TR_LOG_WARN,
	TR_LOG_INFO,
	TR_LOG_DEBUG,
	TR_LOG_TRACE,
};

extern int tr_log_level; /* messages above it are dropped */
extern int tr_log_rank;	 /* printed in the prefix; -1 before init */
/* Nonzero: each line starts with CLOCK_MONOTONIC seconds, the clock the
 * kernel's log is close to, so that a line lines up with dmesg. */
extern int tr_log_time;

void tr_log(int level, const char *func, int line, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

#define tr_log_at(lvl, ...)                                                    \
	do {                                                                   \
		if ((lvl) <= tr_log_level)                                     \
			tr_log((lvl), __func__, __LINE__, __VA_ARGS__);        \
	} while (0)

#define tr_error(...) tr_log_at(TR_LOG_ERROR, __VA_ARGS__)
#define tr_warn(...) tr_log_at(TR_LOG_WARN, __VA_ARGS__)
#define tr_info(...) tr_log_at(TR_LOG_INFO, __VA_ARGS__)
#define tr_debug(...) tr_log_at(TR_LOG_DEBUG, __VA_ARGS__)
/* Hot-path tracing costs nothing unless built with -DTRIAD_TRACE. */
#ifdef TRIAD_TRACE
#define tr_trace(...) tr_log_at(TR_LOG_TRACE, __VA_ARGS__)
#else
#define tr_trace(...) ((void)0)
#endif

#endif
