/* stderr logging with a level test before any formatting. One write(2)-sized
 * fprintf per line so lines from several ranks or threads do not interleave. */
#include "base/log.h"
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <pthread.h>
#include <strings.h>
#include <stdlib.h>

static _Atomic int log_level = -1;
static _Atomic int log_rank = -1;
static zap_log_sink_fn log_sink;
static void *log_sink_ctx;
static pthread_mutex_t sink_lock = PTHREAD_MUTEX_INITIALIZER;

static const char *const level_names[] = {"error", "warn", "info", "debug", "trace"};

zap_log_level_t zap_log_level(void)
{
    int lvl = atomic_load_explicit(&log_level, memory_order_relaxed);
    if (lvl >= 0)
        return (zap_log_level_t)lvl;
    lvl = ZAP_LOG_WARN;
    const char *env = getenv("ZAP_LOG_LEVEL");
    if (env != NULL) {
        for (int i = 0; i <= ZAP_LOG_TRACE; i++) {
            if (strcasecmp(env, level_names[i]) == 0)
                lvl = i;
        }
    }
    atomic_store(&log_level, lvl);
    return (zap_log_level_t)lvl;
}

void zap_log_set_level(zap_log_level_t level) { atomic_store(&log_level, (int)level); }

void zap_log_set_rank(int rank) { atomic_store(&log_rank, rank); }

void zap_log_set_sink(zap_log_sink_fn fn, void *ctx)
{
    pthread_mutex_lock(&sink_lock);
    log_sink = fn;
    log_sink_ctx = ctx;
    pthread_mutex_unlock(&sink_lock);
}

void zap_log_emit(zap_log_level_t level, const char *fmt, ...)
{
    char msg[1024];
    char line[1100];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    int rank = atomic_load(&log_rank);
    const char *lname = (level >= 0 && level <= ZAP_LOG_TRACE) ? level_names[level] : "?";
    if (rank >= 0)
        snprintf(line, sizeof(line), "zap[rank %d] %s: %s\n", rank, lname, msg);
    else
        snprintf(line, sizeof(line), "zap %s: %s\n", lname, msg);
    fputs(line, stderr);
    pthread_mutex_lock(&sink_lock);
    if (log_sink != NULL)
        log_sink(log_sink_ctx, level, line);
    pthread_mutex_unlock(&sink_lock);
}
