// Captures zap's log lines during a test, so error-path tests can assert on the
// message and other tests can assert that nothing was logged.
#pragma once
#include <mutex>
#include <string>
#include <vector>
extern "C" {
#include "base/log.h"
}

class LogCapture {
  public:
    LogCapture() { zap_log_set_sink(&LogCapture::sink, this); }
    ~LogCapture() { zap_log_set_sink(nullptr, nullptr); }
    bool contains(const std::string &needle) const
    {
        std::lock_guard<std::mutex> g(mu_);
        for (const auto &l : lines_)
            if (l.find(needle) != std::string::npos)
                return true;
        return false;
    }
    size_t count() const
    {
        std::lock_guard<std::mutex> g(mu_);
        return lines_.size();
    }
    std::string all() const
    {
        std::lock_guard<std::mutex> g(mu_);
        std::string s;
        for (const auto &l : lines_)
            s += l;
        return s;
    }

  private:
    static void sink(void *ctx, zap_log_level_t, const char *line)
    {
        auto *self = static_cast<LogCapture *>(ctx);
        std::lock_guard<std::mutex> g(self->mu_);
        self->lines_.emplace_back(line);
    }
    mutable std::mutex mu_;
    std::vector<std::string> lines_;
};

// Sets an environment variable for one scope.
class ScopedEnv {
  public:
    ScopedEnv(const char *name, const char *value) : name_(name)
    {
        const char *old = getenv(name);
        if (old) {
            had_ = true;
            old_ = old;
        }
        if (value)
            setenv(name, value, 1);
        else
            unsetenv(name);
    }
    ~ScopedEnv()
    {
        if (had_)
            setenv(name_.c_str(), old_.c_str(), 1);
        else
            unsetenv(name_.c_str());
    }

  private:
    std::string name_, old_;
    bool had_ = false;
};
