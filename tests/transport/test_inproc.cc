// The transport contract over the in-process transport: ranks are threads.
#include <gtest/gtest.h>
#include <cmath>
#include <atomic>
#include <cstring>
#include <functional>
#include <thread>
#include <vector>
#include "log_capture.h"
#include "rank_threads.h"
extern "C" {
#include "zap/inproc.h"
}

namespace {
struct World {
    zap_inproc_world_t *w = nullptr;
    std::vector<zap_transport_t *> t;
    explicit World(int n)
    {
        EXPECT_EQ(zap_inproc_world_create(n, nullptr, &w), ZAP_OK);
        t.resize(n);
        for (int r = 0; r < n; r++)
            EXPECT_EQ(zap_inproc_transport(w, r, &t[r]), ZAP_OK);
    }
    ~World() { zap_inproc_world_destroy(w); }
    // Runs fn(rank) on one thread per rank.
    void run(const std::function<void(int)> &fn) { run_ranks((int)t.size(), fn); }
};

} // namespace

TEST(Inproc, MessageSentIsMessageReceived)
{
    // The seed's Send wrote to a queue its Recv never read. Here each size,
    // eager and rendezvous, arrives intact, and the pool holds nothing after.
    World w(2);
    for (size_t size : {(size_t)0, (size_t)1, (size_t)255, (size_t)8192, (size_t)8193, (size_t)(1u << 20),
                        (size_t)(5u << 20)}) {
        auto data = test_pattern(size, (uint32_t)size);
        std::vector<uint8_t> got(size + 1, 0);
        size_t len = 999;
        w.run([&](int r) {
            if (r == 0)
                EXPECT_EQ(zap_transport_send(w.t[0], 1, 7, data.data(), size), ZAP_OK);
            else
                EXPECT_EQ(zap_transport_recv(w.t[1], 0, 7, got.data(), got.size(), &len), ZAP_OK);
        });
        EXPECT_EQ(len, size);
        if (size > 0) { // memcmp with a NULL pointer is undefined even for 0 bytes
            EXPECT_EQ(0, memcmp(got.data(), data.data(), size)) << "size " << size;
        }
    }
    zap_pool_stats_t s;
    ASSERT_EQ(zap_pool_stats(zap_transport_pool(w.t[0]), &s), ZAP_OK);
    EXPECT_EQ(s.buffers_out, 0u) << "a sent message left a slab behind";
}

TEST(Inproc, SmallSendCompletesBeforeTheReceiveIsPosted)
{
    World w(2);
    uint64_t v = 42;
    zap_request_t *req = nullptr;
    ASSERT_EQ(zap_transport_isend(w.t[0], 1, 1, &v, sizeof(v), &req), ZAP_OK);
    int done = 0;
    ASSERT_EQ(zap_request_test(req, &done), ZAP_OK);
    EXPECT_EQ(done, 1);
    zap_request_free(req);
    v = 0; // the copy was taken; the receive must still see 42
    uint64_t got = 0;
    ASSERT_EQ(zap_transport_recv(w.t[1], 0, 1, &got, sizeof(got), nullptr), ZAP_OK);
    EXPECT_EQ(got, 42u);
}

TEST(Inproc, OrderIsKeptPerPeerAndTag)
{
    World w(3);
    const int n = 2000;
    w.run([&](int r) {
        if (r == 0 || r == 1) {
            for (int i = 0; i < n; i++) {
                int v[2] = {r, i};
                ASSERT_EQ(zap_transport_send(w.t[r], 2, (uint64_t)(i % 3), v, sizeof(v)), ZAP_OK);
            }
        } else {
            int next[2][3] = {{0, 1, 2}, {0, 1, 2}};
            // Receive tags in a different order than sent: per tag, order holds.
            for (int tag : {2, 0, 1}) {
                for (int src : {1, 0}) {
                    for (int i = tag; i < n; i += 3) {
                        int v[2];
                        ASSERT_EQ(zap_transport_recv(w.t[2], src, (uint64_t)tag, v, sizeof(v), nullptr), ZAP_OK);
                        EXPECT_EQ(v[0], src);
                        EXPECT_EQ(v[1], next[src][tag]);
                        next[src][tag] += 3;
                    }
                }
            }
        }
    });
}

TEST(Inproc, TenThousandRequestsOutstanding)
{
    World w(2);
    const int n = 10000;
    std::vector<uint32_t> out(n), in(n, 0);
    std::vector<zap_request_t *> sends(n), recvs(n);
    for (int i = 0; i < n; i++)
        ASSERT_EQ(zap_transport_irecv(w.t[1], 0, (uint64_t)i, &in[i], sizeof(uint32_t), &recvs[i]), ZAP_OK);
    for (int i = 0; i < n; i++) {
        out[i] = (uint32_t)i * 2654435761u;
        ASSERT_EQ(zap_transport_isend(w.t[0], 1, (uint64_t)i, &out[i], sizeof(uint32_t), &sends[i]), ZAP_OK);
    }
    for (int i = n - 1; i >= 0; i--) {
        ASSERT_EQ(zap_request_wait(recvs[i]), ZAP_OK);
        ASSERT_EQ(zap_request_wait(sends[i]), ZAP_OK);
        EXPECT_EQ(in[i], out[i]);
        zap_request_free(recvs[i]);
        zap_request_free(sends[i]);
    }
}

TEST(Inproc, ZeroLengthMessagesMatchAndComplete)
{
    World w(2);
    zap_request_t *s = nullptr, *r = nullptr;
    ASSERT_EQ(zap_transport_irecv(w.t[1], 0, 5, nullptr, 0, &r), ZAP_OK);
    ASSERT_EQ(zap_transport_isend(w.t[0], 1, 5, nullptr, 0, &s), ZAP_OK);
    ASSERT_EQ(zap_request_wait(r), ZAP_OK);
    size_t len = 1;
    ASSERT_EQ(zap_request_received(r, &len), ZAP_OK);
    EXPECT_EQ(len, 0u);
    zap_request_free(r);
    zap_request_free(s);
}

TEST(Inproc, RecvBufHandsOutAPoolBufferTheCallerFrees)
{
    World w(2);
    auto data = test_pattern(70000, 3);
    zap_request_t *s_req = nullptr; // rendezvous: completes once received
    ASSERT_EQ(zap_transport_isend(w.t[0], 1, 9, data.data(), data.size(), &s_req), ZAP_OK);
    zap_buf_t b;
    ASSERT_EQ(zap_transport_recv_buf(w.t[1], 0, 9, &b), ZAP_OK);
    ASSERT_EQ(zap_request_wait(s_req), ZAP_OK);
    zap_request_free(s_req);
    ASSERT_EQ(b.size, data.size());
    EXPECT_EQ(0, memcmp(b.ptr, data.data(), data.size()));
    zap_pool_stats_t s;
    zap_pool_stats(zap_transport_pool(w.t[1]), &s);
    EXPECT_EQ(s.buffers_out, 1u);
    ASSERT_EQ(zap_buf_free(&b), ZAP_OK);
    zap_pool_stats(zap_transport_pool(w.t[1]), &s);
    EXPECT_EQ(s.buffers_out, 0u);
}

TEST(Inproc, TooLongMessageIsTruncatedErrorAndDeliversNothing)
{
    World w(2);
    uint8_t big[100] = {1}, small[10] = {0};
    LogCapture log;
    ASSERT_EQ(zap_transport_send(w.t[0], 1, 1, big, sizeof(big)), ZAP_OK);
    EXPECT_EQ(zap_transport_recv(w.t[1], 0, 1, small, sizeof(small), nullptr), ZAP_ERR_TRUNCATED);
    EXPECT_EQ(small[0], 0);
    EXPECT_TRUE(log.contains("exceeds the 10-byte receive buffer")) << log.all();
}

TEST(Inproc, BadArgumentsGetSpecificErrors)
{
    World w(2);
    zap_request_t *req = nullptr;
    uint8_t b[4];
    LogCapture log;
    EXPECT_EQ(zap_transport_isend(w.t[0], 2, 0, b, 4, &req), ZAP_ERR_NOT_FOUND);
    EXPECT_EQ(zap_transport_isend(w.t[0], -1, 0, b, 4, &req), ZAP_ERR_NOT_FOUND);
    EXPECT_EQ(zap_transport_isend(w.t[0], 1, 0, nullptr, 4, &req), ZAP_ERR_INVALID_PARAM);
    EXPECT_EQ(zap_transport_isend(w.t[0], 1, 0, b, 4, nullptr), ZAP_ERR_INVALID_PARAM);
    EXPECT_EQ(zap_transport_irecv(nullptr, 1, 0, b, 4, &req), ZAP_ERR_INVALID_PARAM);
    EXPECT_EQ(req, nullptr);
    EXPECT_EQ(zap_inproc_world_create(0, nullptr, nullptr), ZAP_ERR_INVALID_PARAM);
    zap_transport_t *t = nullptr;
    EXPECT_EQ(zap_inproc_transport(w.w, 5, &t), ZAP_ERR_NOT_FOUND);
}

TEST(Inproc, WaitTimesOutNamingThePeer)
{
    ScopedEnv e("ZAP_TIMEOUT", "0.2");
    World w(2);
    uint8_t b[4];
    LogCapture log;
    double t0 = zap_clock_now();
    EXPECT_EQ(zap_transport_recv(w.t[1], 0, 3, b, sizeof(b), nullptr), ZAP_ERR_TIMED_OUT);
    double took = zap_clock_now() - t0;
    EXPECT_GE(took, 0.15);
    EXPECT_LT(took, 5.0);
    EXPECT_TRUE(log.contains("peer rank 0")) << log.all();
}

// ZAP_TIMEOUT is taken when the world is created: a later value, or a later
// malformed one, does not reach the waits of transports that exist.
TEST(Inproc, TransportsKeepTheTimeoutOfTheirCreation)
{
    ScopedEnv e("ZAP_TIMEOUT", "0.2");
    World w(2);
    EXPECT_EQ(zap_transport_timeout(w.t[0]), 0.2);
    for (const char *later : {"20", "soon"}) {
        ScopedEnv l("ZAP_TIMEOUT", later);
        uint8_t b[4];
        LogCapture log;
        double t0 = zap_clock_now();
        EXPECT_EQ(zap_transport_recv(w.t[1], 0, 3, b, sizeof(b), nullptr), ZAP_ERR_TIMED_OUT) << later;
        double took = zap_clock_now() - t0;
        EXPECT_GE(took, 0.15) << later;
        EXPECT_LT(took, 5.0) << "ZAP_TIMEOUT=" << later << " set after create was used";
        EXPECT_TRUE(log.contains("after 0.2 s")) << log.all();
    }
}

TEST(Inproc, ParamsTimeoutOverridesTheEnvironmentAndIsChecked)
{
    ScopedEnv e("ZAP_TIMEOUT", "soon"); // not read: params set the timeout
    zap_transport_params_t params{};
    params.timeout_s = 0.25;
    zap_inproc_world_t *w = nullptr;
    ASSERT_EQ(zap_inproc_world_create_ex(2, nullptr, &params, &w), ZAP_OK);
    zap_transport_t *t = nullptr;
    ASSERT_EQ(zap_inproc_transport(w, 1, &t), ZAP_OK);
    EXPECT_EQ(zap_transport_timeout(t), 0.25);
    zap_inproc_world_destroy(w);
    params.timeout_s = ZAP_TRANSPORT_TIMEOUT_NONE;
    ASSERT_EQ(zap_inproc_world_create_ex(2, nullptr, &params, &w), ZAP_OK);
    ASSERT_EQ(zap_inproc_transport(w, 0, &t), ZAP_OK);
    EXPECT_TRUE(std::isinf(zap_transport_timeout(t))) << "none: no deadline";
    zap_inproc_world_destroy(w);
    for (double bad : {-2.0, 0.0005, 2e7, 1.0 / 0.0}) {
        LogCapture log;
        params.timeout_s = bad;
        w = nullptr;
        EXPECT_EQ(zap_inproc_world_create_ex(2, nullptr, &params, &w), ZAP_ERR_INVALID_PARAM) << bad;
        EXPECT_EQ(w, nullptr);
        EXPECT_TRUE(log.contains("timeout_s")) << log.all();
    }
    EXPECT_EQ(zap_transport_timeout(nullptr), 0.0);
}

TEST(Inproc, ClosedPeerFailsPendingAndNewOperations)
{
    World w(2);
    uint8_t b[4] = {0};
    zap_request_t *pending = nullptr;
    ASSERT_EQ(zap_transport_irecv(w.t[1], 0, 3, b, sizeof(b), &pending), ZAP_OK);
    LogCapture log;
    zap_transport_close(w.t[0]);
    EXPECT_EQ(zap_request_wait(pending), ZAP_ERR_PEER_FAILED);
    zap_request_free(pending);
    zap_request_t *req = nullptr;
    EXPECT_EQ(zap_transport_isend(w.t[1], 0, 3, b, sizeof(b), &req), ZAP_ERR_PEER_FAILED);
    EXPECT_EQ(zap_transport_isend(w.t[0], 1, 3, b, sizeof(b), &req), ZAP_ERR_CLOSED);
    EXPECT_TRUE(log.contains("rank 0")) << log.all();
}

TEST(Inproc, FreeingAPendingRequestCancelsIt)
{
    World w(2);
    std::vector<uint8_t> big(1 << 20, 1);
    zap_request_t *s = nullptr;
    ASSERT_EQ(zap_transport_isend(w.t[0], 1, 4, big.data(), big.size(), &s), ZAP_OK);
    int done = 1;
    ASSERT_EQ(zap_request_test(s, &done), ZAP_OK);
    EXPECT_EQ(done, 0); // rendezvous: waits for the receive
    zap_request_free(s); // the bytes are no longer borrowed
    uint8_t small[4];
    zap_request_t *r = nullptr;
    ASSERT_EQ(zap_transport_irecv(w.t[1], 0, 4, small, sizeof(small), &r), ZAP_OK);
    ASSERT_EQ(zap_request_test(r, &done), ZAP_OK);
    EXPECT_EQ(done, 0) << "a cancelled send must not be delivered";
    zap_request_free(r);
}

TEST(Inproc, AllPairsExchangeAcrossSeventeenRanks)
{
    const int n = 17;
    World w(n);
    std::atomic<int> bad{0};
    w.run([&](int r) {
        std::vector<zap_request_t *> reqs;
        std::vector<uint64_t> in(n), out(n);
        for (int p = 0; p < n; p++) {
            zap_request_t *q;
            out[p] = (uint64_t)r * 1000 + p;
            if (zap_transport_irecv(w.t[r], p, 11, &in[p], sizeof(uint64_t), &q) != ZAP_OK)
                bad++;
            reqs.push_back(q);
        }
        for (int p = 0; p < n; p++) {
            zap_request_t *q;
            if (zap_transport_isend(w.t[r], p, 11, &out[p], sizeof(uint64_t), &q) != ZAP_OK)
                bad++;
            reqs.push_back(q);
        }
        for (auto *q : reqs) {
            if (zap_request_wait(q) != ZAP_OK)
                bad++;
            zap_request_free(q);
        }
        for (int p = 0; p < n; p++)
            if (in[p] != (uint64_t)p * 1000 + r)
                bad++;
    });
    EXPECT_EQ(bad.load(), 0);
}
