// Helpers of the bad-input suites (docs/bad-input.md): snapshots of the state
// a rejected call must leave as it was.
#pragma once
#include <gtest/gtest.h>
#include <cstring>
#include "log_capture.h"
extern "C" {
#include "zap/pool.h"
#include "zap/inproc.h"
}

// The pool counters a rejected call must not move. failed_allocs is left out:
// counting a refused allocation is the one change a refusal is allowed.
struct PoolSnapshot {
    zap_pool_stats_t s{};
    explicit PoolSnapshot(zap_pool_t *pool) { EXPECT_EQ(zap_pool_stats(pool, &s), ZAP_OK); }
    void expect_same_as(zap_pool_t *pool) const
    {
        zap_pool_stats_t now{};
        ASSERT_EQ(zap_pool_stats(pool, &now), ZAP_OK);
        EXPECT_EQ(now.in_use_bytes, s.in_use_bytes);
        EXPECT_EQ(now.buffers_out, s.buffers_out);
        EXPECT_EQ(now.reserved_bytes, s.reserved_bytes);
        EXPECT_EQ(now.chunks, s.chunks);
        for (int c = 0; c <= ZAP_POOL_NUM_CLASSES; c++)
            EXPECT_EQ(now.class_in_use[c], s.class_in_use[c]) << "class " << c;
    }
};

// A host pool with a small budget, destroyed (and checked empty) at the end.
struct HostPool {
    zap_pool_t *p = nullptr;
    explicit HostPool(uint64_t budget = 64ull << 20)
    {
        zap_pool_params_t pp{};
        pp.budget_bytes = budget;
        pp.chunk_bytes = 2u << 20;
        pp.backend = ZAP_POOL_BACKEND_HOST;
        pp.device = -1;
        pp.name = "badinput";
        EXPECT_EQ(zap_pool_create(&pp, &p), ZAP_OK);
    }
    ~HostPool() { EXPECT_EQ(zap_pool_destroy(p), ZAP_OK); }
    // The pool still hands out and takes back a buffer.
    void expect_usable() const
    {
        zap_buf_t b{};
        ASSERT_EQ(zap_pool_alloc(p, 1000, &b), ZAP_OK);
        memset(b.ptr, 0x5a, 1000);
        EXPECT_EQ(zap_buf_free(&b), ZAP_OK);
    }
};

// Two inproc ranks in one thread: messages below the eager limit complete at
// once, so a ping from 0 to 1 needs no second thread.
struct PairWorld {
    zap_inproc_world_t *w = nullptr;
    zap_transport_t *t0 = nullptr, *t1 = nullptr;
    explicit PairWorld(int n = 2, zap_pool_t *pool = nullptr)
    {
        EXPECT_EQ(zap_inproc_world_create(n, pool, &w), ZAP_OK);
        EXPECT_EQ(zap_inproc_transport(w, 0, &t0), ZAP_OK);
        EXPECT_EQ(zap_inproc_transport(w, 1, &t1), ZAP_OK);
    }
    ~PairWorld() { zap_inproc_world_destroy(w); }
    // A 64-byte message from rank 0 to rank 1 arrives intact on tag.
    void expect_ping(uint64_t tag = 99) const
    {
        char out[64], in[64] = {0};
        for (int i = 0; i < 64; i++)
            out[i] = (char)(i * 7 + 1);
        ASSERT_EQ(zap_transport_send(t0, 1, tag, out, sizeof(out)), ZAP_OK);
        size_t len = 0;
        ASSERT_EQ(zap_transport_recv(t1, 0, tag, in, sizeof(in), &len), ZAP_OK);
        EXPECT_EQ(len, sizeof(out));
        EXPECT_EQ(memcmp(in, out, sizeof(out)), 0);
    }
};
