// zap's log lines kept in memory for the MPI programs with their own main
// (kill and peer-exit tests), which print what a survivor logged.
#pragma once
#include <mutex>
#include <string>
extern "C" {
#include "base/log.h"
}

namespace logsink {
inline std::mutex mu;
inline std::string text;
inline zap_log_level_t upto = ZAP_LOG_ERROR;

inline void sink(void *, zap_log_level_t level, const char *line)
{
    std::lock_guard<std::mutex> g(mu);
    if (level <= upto)
        text += line;
}

// Keeps the lines at level and more severe from now on.
inline void capture(zap_log_level_t level)
{
    upto = level;
    zap_log_set_sink(sink, nullptr);
}

inline std::string captured()
{
    std::lock_guard<std::mutex> g(mu);
    return text;
}
} // namespace logsink
