// Eight threads hammer one pool; every buffer carries its owner's stamp, so a
// buffer handed to two threads at once is caught when the stamp changes.
#include <gtest/gtest.h>
#include <atomic>
#include <cstring>
#include <thread>
#include <vector>
extern "C" {
#include "zap/pool.h"
}

TEST(PoolThreads, EightThreadsMillionOpsNeverShareABuffer)
{
    zap_pool_params_t p = {};
    p.backend = ZAP_POOL_BACKEND_HOST;
    p.budget_bytes = ZAP_POOL_UNLIMITED;
    p.chunk_bytes = 2u << 20;
    zap_pool_t *pool = nullptr;
    ASSERT_EQ(zap_pool_create(&p, &pool), ZAP_OK);
    const int threads = 8;
    const int ops_per_thread = 1000000 / threads;
    std::atomic<long> errors{0}, stamp_errors{0}, free_errors{0}, alloc_errors{0};
    std::vector<std::thread> ts;
    for (int t = 0; t < threads; t++) {
        ts.emplace_back([&, t] {
            uint32_t seed = 12345u + (uint32_t)t;
            zap_buf_t held[16] = {};
            for (int i = 0; i < ops_per_thread; i++) {
                seed = seed * 1664525u + 1013904223u;
                int slot = (int)((seed >> 8) % 16);
                zap_buf_t &b = held[slot];
                if (b.handle != 0) {
                    uint64_t stamp;
                    memcpy(&stamp, b.ptr, sizeof(stamp));
                    uint64_t tail;
                    memcpy(&tail, static_cast<char *>(b.ptr) + b.size - sizeof(tail), sizeof(tail));
                    if (stamp != b.handle || tail != b.handle)
                        stamp_errors++;
                    if (zap_buf_free(&b) != ZAP_OK)
                        free_errors++;
                } else {
                    // >= 16 so the head and tail stamps do not overlap
                    size_t size = 16 + (seed >> 12) % (1 << ((seed >> 4) % 17 + 3));
                    if (zap_pool_alloc(pool, size, &b) != ZAP_OK) {
                        alloc_errors++;
                        continue;
                    }
                    memcpy(b.ptr, &b.handle, sizeof(b.handle));
                    memcpy(static_cast<char *>(b.ptr) + b.size - sizeof(b.handle), &b.handle, sizeof(b.handle));
                }
            }
            for (auto &b : held)
                if (b.handle != 0 && zap_buf_free(&b) != ZAP_OK)
                    errors++;
        });
    }
    for (auto &t : ts)
        t.join();
    EXPECT_EQ(errors.load(), 0);
    EXPECT_EQ(stamp_errors.load(), 0) << "a buffer was handed out twice";
    EXPECT_EQ(free_errors.load(), 0);
    EXPECT_EQ(alloc_errors.load(), 0);
    zap_pool_stats_t s;
    ASSERT_EQ(zap_pool_stats(pool, &s), ZAP_OK);
    EXPECT_EQ(s.buffers_out, 0u);
    EXPECT_EQ(s.in_use_bytes, 0u);
    EXPECT_EQ(zap_pool_destroy(pool), ZAP_OK);
}
