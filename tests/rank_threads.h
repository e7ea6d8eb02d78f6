// Helpers shared by the single-process suites that play several ranks:
// one thread per rank, and reproducible payloads.
#pragma once
#include <cstdint>
#include <functional>
#include <thread>
#include <vector>

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
