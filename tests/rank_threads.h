// The one in-process rank fixture of the single-process suites: n ranks as
// threads over the in-process transport, with a communicator each when a
// suite asks for one, and reproducible payloads.
#pragma once
#include <gtest/gtest.h>
#include <cstdint>
#include <functional>
#include <thread>
#include <vector>
extern "C" {
#include "zap/coll.h"
#include "zap/inproc.h"
}

// Runs fn(rank) for rank = 0..n-1, each on its own thread, and joins them.
inline void run_ranks(int n, const std::function<void(int)> &fn)
{
    std::vector<std::thread> ts;
    for (int r = 0; r < n; r++)
        ts.emplace_back(fn, r);
    for (auto &x : ts)
        x.join();
}

// n pseudo-random bytes from seed (a fixed LCG, so failures reproduce).
inline std::vector<uint8_t> test_pattern(size_t n, uint32_t seed)
{
    std::vector<uint8_t> v(n);
    for (size_t i = 0; i < n; i++) {
        seed = seed * 1103515245u + 12345u;
        v[i] = (uint8_t)(seed >> 16);
    }
    return v;
}

// n ranks of one in-process world: t[r] is rank r's transport and, when made
// with communicators, c[r] its communicator over all ranks (zap_comm_create_ex
// with params; NULL params: defaults). Destroys both at the end.
struct RankWorld {
    zap_inproc_world_t *w = nullptr;
    std::vector<zap_transport_t *> t;
    std::vector<zap_comm_t *> c;
    int n;
    explicit RankWorld(int nranks, bool comms = true, const zap_comm_params_t *params = nullptr)
        : t(nranks), c(nranks, nullptr), n(nranks)
    {
        EXPECT_EQ(zap_inproc_world_create(n, nullptr, &w), ZAP_OK);
        for (int r = 0; r < n; r++)
            EXPECT_EQ(zap_inproc_transport(w, r, &t[r]), ZAP_OK);
        if (comms)
            run([&](int r) { EXPECT_EQ(zap_comm_create_ex(t[r], params, &c[r]), ZAP_OK); });
    }
    RankWorld(const RankWorld &) = delete;
    RankWorld &operator=(const RankWorld &) = delete;
    ~RankWorld()
    {
        for (auto *x : c)
            zap_comm_destroy(x);
        zap_inproc_world_destroy(w);
    }
    // Runs fn(rank) on one thread per rank and joins them.
    void run(const std::function<void(int)> &fn) const { run_ranks(n, fn); }
    // Runs fn on every rank and returns each rank's status.
    std::vector<zap_status_t> each(const std::function<zap_status_t(int)> &fn) const
    {
        std::vector<zap_status_t> st(n, ZAP_INPROGRESS);
        run([&](int r) { st[r] = fn(r); });
        return st;
    }
};
