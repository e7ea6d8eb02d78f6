// Checksum mode (core/transport/checksum.h) over the inproc transport: every
// message arrives intact through the wrapper, a payload corrupted on the way
// (ZAP_TEST_CORRUPT_RANK) is ZAP_ERR_CORRUPT naming the sending rank, and the
// payload and checksum streams stay paired after errors.
#include <gtest/gtest.h>
#include <cstring>
#include <functional>
#include <thread>
#include <vector>
#include "log_capture.h"
#include "rank_threads.h"
extern "C" {
#include "zap/inproc.h"
#include "base/crc32c.h"
#include "transport/checksum.h"
}

namespace {
struct Wrapped {
    zap_inproc_world_t *w = nullptr;
    std::vector<zap_transport_t *> inner, t;
    explicit Wrapped(int n)
    {
        EXPECT_EQ(zap_inproc_world_create(n, nullptr, &w), ZAP_OK);
        inner.resize(n);
        t.resize(n);
        for (int r = 0; r < n; r++) {
            EXPECT_EQ(zap_inproc_transport(w, r, &inner[r]), ZAP_OK);
            EXPECT_EQ(zap_transport_checksum_wrap(inner[r], &t[r]), ZAP_OK);
        }
    }
    ~Wrapped()
    {
        for (auto *x : t)
            zap_transport_close(x);
        zap_inproc_world_destroy(w);
    }
    void run(const std::function<void(int)> &fn) { run_ranks((int)t.size(), fn); }
};

} // namespace

TEST(Crc32c, MatchesTheStandardCheckValue)
{
    // The CRC-32C check value of "123456789" (RFC 3720, iSCSI).
    EXPECT_EQ(zap_base_crc32c(0, "123456789", 9), 0xe3069283u);
    EXPECT_EQ(zap_base_crc32c(0, nullptr, 0), 0u);
    // Continuation: crc(a || b) == crc(crc(a), b), at every split.
    auto data = test_pattern(1000, 3);
    uint32_t whole = zap_base_crc32c(0, data.data(), data.size());
    for (size_t cut : {0, 1, 7, 8, 9, 500, 999, 1000})
        EXPECT_EQ(zap_base_crc32c(zap_base_crc32c(0, data.data(), cut), data.data() + cut, data.size() - cut), whole);
}

TEST(Checksum, MessagesArriveIntactThroughTheWrapper)
{
    LogCapture log;
    Wrapped w(2);
    for (size_t size : {(size_t)0, (size_t)1, (size_t)255, (size_t)8192, (size_t)8193, (size_t)(1u << 20)}) {
        auto data = test_pattern(size, (uint32_t)size + 1);
        std::vector<uint8_t> got(size + 1, 0);
        size_t len = 999;
        w.run([&](int r) {
            if (r == 0)
                EXPECT_EQ(zap_transport_send(w.t[0], 1, 7, data.data(), size), ZAP_OK);
            else
                EXPECT_EQ(zap_transport_recv(w.t[1], 0, 7, got.data(), got.size(), &len), ZAP_OK);
        });
        EXPECT_EQ(len, size);
        EXPECT_TRUE(size == 0 || memcmp(got.data(), data.data(), size) == 0) << size;
    }
    EXPECT_EQ(log.count(), 0u) << log.all();
    zap_pool_stats_t s{};
    ASSERT_EQ(zap_pool_stats(zap_transport_pool(w.t[0]), &s), ZAP_OK);
    EXPECT_EQ(s.buffers_out, 0u);
}

TEST(Checksum, WrapperKeepsRanksPoolAndTraits)
{
    Wrapped w(3);
    EXPECT_EQ(zap_transport_rank(w.t[2]), 2);
    EXPECT_EQ(zap_transport_size(w.t[2]), 3);
    EXPECT_EQ(zap_transport_pool(w.t[2]), zap_transport_pool(w.inner[2]));
    zap_transport_caps_t a{}, b{};
    ASSERT_EQ(zap_transport_caps(w.t[1], &a), ZAP_OK);
    ASSERT_EQ(zap_transport_caps(w.inner[1], &b), ZAP_OK);
    EXPECT_STREQ(a.name, b.name);
    EXPECT_EQ(a.flags, b.flags);
    EXPECT_TRUE(zap_transport_is_checksum(w.t[0]));
    EXPECT_FALSE(zap_transport_is_checksum(w.inner[0]));
}

TEST(Checksum, CorruptedPayloadIsCorruptNamingTheSender)
{
    LogCapture log;
    ScopedEnv env("ZAP_TEST_CORRUPT_RANK", "2");
    Wrapped w(3);
    auto data = test_pattern(5000, 9);
    std::vector<uint8_t> from1(5000), from2(5000);
    zap_status_t st1 = ZAP_ERR_TRANSPORT, st2 = ZAP_ERR_TRANSPORT;
    w.run([&](int r) {
        if (r == 0) {
            st1 = zap_transport_recv(w.t[0], 1, 3, from1.data(), from1.size(), nullptr);
            st2 = zap_transport_recv(w.t[0], 2, 3, from2.data(), from2.size(), nullptr);
        } else {
            EXPECT_EQ(zap_transport_send(w.t[r], 0, 3, data.data(), data.size()), ZAP_OK);
        }
    });
    EXPECT_EQ(st1, ZAP_OK);
    EXPECT_EQ(from1, data);
    EXPECT_EQ(st2, ZAP_ERR_CORRUPT);
    EXPECT_TRUE(log.contains("from rank 2 (tag 0x3) is corrupt")) << log.all();
    EXPECT_FALSE(log.contains("from rank 1")) << log.all();
}

TEST(Checksum, StreamsStayPairedAfterATruncatedPayload)
{
    LogCapture log;
    Wrapped w(2);
    auto big = test_pattern(300, 1), next = test_pattern(40, 2);
    std::vector<uint8_t> small(10), got(40);
    zap_status_t first = ZAP_OK, second = ZAP_ERR_TRANSPORT;
    w.run([&](int r) {
        if (r == 0) {
            EXPECT_EQ(zap_transport_send(w.t[0], 1, 4, big.data(), big.size()), ZAP_OK);
            EXPECT_EQ(zap_transport_send(w.t[0], 1, 4, next.data(), next.size()), ZAP_OK);
        } else {
            first = zap_transport_recv(w.t[1], 0, 4, small.data(), small.size(), nullptr);
            second = zap_transport_recv(w.t[1], 0, 4, got.data(), got.size(), nullptr);
        }
    });
    EXPECT_EQ(first, ZAP_ERR_TRUNCATED);
    EXPECT_EQ(second, ZAP_OK);
    EXPECT_EQ(got, next);
}

TEST(Checksum, ReceiveBufThroughTheWrapperIsChecked)
{
    Wrapped w(2);
    auto data = test_pattern(20000, 5);
    zap_buf_t b{};
    w.run([&](int r) {
        if (r == 0)
            EXPECT_EQ(zap_transport_send(w.t[0], 1, 6, data.data(), data.size()), ZAP_OK);
        else
            EXPECT_EQ(zap_transport_recv_buf(w.t[1], 0, 6, &b), ZAP_OK);
    });
    ASSERT_EQ(b.size, data.size());
    EXPECT_EQ(memcmp(b.ptr, data.data(), data.size()), 0);
    EXPECT_EQ(zap_buf_free(&b), ZAP_OK);
}

TEST(Checksum, ReservedTagBitIsInvalidParam)
{
    LogCapture log;
    Wrapped w(2);
    char c = 1;
    zap_request_t *req = nullptr;
    EXPECT_EQ(zap_transport_isend(w.t[0], 1, ZAP_TRANSPORT_CHECKSUM_TAG_BIT | 5, &c, 1, &req), ZAP_ERR_INVALID_PARAM);
    EXPECT_EQ(zap_transport_irecv(w.t[1], 0, ZAP_TRANSPORT_CHECKSUM_TAG_BIT, &c, 1, &req), ZAP_ERR_INVALID_PARAM);
    EXPECT_EQ(req, nullptr);
    EXPECT_TRUE(log.contains("reserved for checksum messages"));
}

TEST(Checksum, BadArgumentsAndBadCorruptRankAreRefused)
{
    LogCapture log;
    zap_inproc_world_t *world = nullptr;
    ASSERT_EQ(zap_inproc_world_create(2, nullptr, &world), ZAP_OK);
    zap_transport_t *in = nullptr, *t = nullptr;
    ASSERT_EQ(zap_inproc_transport(world, 0, &in), ZAP_OK);
    EXPECT_EQ(zap_transport_checksum_wrap(nullptr, &t), ZAP_ERR_INVALID_PARAM);
    EXPECT_EQ(zap_transport_checksum_wrap(in, nullptr), ZAP_ERR_INVALID_PARAM);
    for (const char *bad : {"x", "-1", "2", "1z"}) {
        ScopedEnv env("ZAP_TEST_CORRUPT_RANK", bad);
        EXPECT_EQ(zap_transport_checksum_wrap(in, &t), ZAP_ERR_INVALID_PARAM) << bad;
        EXPECT_EQ(t, nullptr);
    }
    zap_transport_close(in);
    EXPECT_EQ(zap_transport_checksum_wrap(in, &t), ZAP_ERR_CLOSED);
    zap_inproc_world_destroy(world);
}

TEST(Checksum, ClosingTheWrapperLeavesTheInnerTransportOpen)
{
    Wrapped w(2);
    zap_transport_t *extra = nullptr;
    ASSERT_EQ(zap_transport_checksum_wrap(w.inner[0], &extra), ZAP_OK);
    // A request outlives the close: the wrapper is freed with its last request.
    char c = 9;
    zap_request_t *req = nullptr;
    ASSERT_EQ(zap_transport_isend(extra, 1, 8, &c, 1, &req), ZAP_OK);
    zap_transport_close(extra);
    EXPECT_EQ(zap_request_wait(req), ZAP_OK);
    zap_request_free(req);
    char in = 0;
    EXPECT_EQ(zap_transport_recv(w.t[1], 0, 8, &in, 1, nullptr), ZAP_OK);
    EXPECT_EQ(in, 9);
    EXPECT_EQ(zap_transport_send(w.inner[0], 1, 1, &c, 1), ZAP_OK) << "the inner transport was closed";
    EXPECT_EQ(zap_transport_recv(w.inner[1], 0, 1, &in, 1, nullptr), ZAP_OK);
}
