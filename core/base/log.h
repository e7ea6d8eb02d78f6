/* Logging to stderr. Levels error < warn < info < debug < trace; the level in
 * force comes from ZAP_LOG_LEVEL (default warn). The macros test the level
 * before formatting anything. Lines carry the rank once a transport has set it:
 *   zap[rank 3] warn: pool: budget exhausted (in_use 4294967296) */
#ifndef ZAP_BASE_LOG_H
#define ZAP_BASE_LOG_H
#include <stdarg.h>

typedef enum zap_log_level {
    ZAP_LOG_ERROR = 0,
    ZAP_LOG_WARN = 1,
    ZAP_LOG_INFO = 2,
    ZAP_LOG_DEBUG = 3,
    ZAP_LOG_TRACE = 4
} zap_log_level_t;

/* The level in force (read once from ZAP_LOG_LEVEL; a bad value is reported by
 * zap_config_check and leaves warn). */
zap_log_level_t zap_log_level(void);
void zap_log_set_level(zap_log_level_t level);
/* Rank shown in log lines; -1 (the default) shows none. Process-wide. */
void zap_log_set_rank(int rank);
void zap_log_emit(zap_log_level_t level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Test hook: every emitted line also goes to fn (NULL to stop). Lets tests
 * assert on the expected message and fail on unexpected warnings. */
typedef void (*zap_log_sink_fn)(void *ctx, zap_log_level_t level, const char *line);
void zap_log_set_sink(zap_log_sink_fn fn, void *ctx);

#define ZAP_LOG(lvl, ...)                                                                      \
    do {                                                                                       \
        if ((lvl) <= zap_log_level())                                                          \
            zap_log_emit((lvl), __VA_ARGS__);                                                  \
    } while (0)
#define zap_error(...) ZAP_LOG(ZAP_LOG_ERROR, __VA_ARGS__)
#define zap_warn(...) ZAP_LOG(ZAP_LOG_WARN, __VA_ARGS__)
#define zap_info(...) ZAP_LOG(ZAP_LOG_INFO, __VA_ARGS__)
#define zap_debug(...) ZAP_LOG(ZAP_LOG_DEBUG, __VA_ARGS__)
#define zap_trace(...) ZAP_LOG(ZAP_LOG_TRACE, __VA_ARGS__)
#endif
