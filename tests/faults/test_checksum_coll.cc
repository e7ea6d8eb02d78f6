// Checksum mode under the collectives: communicators built on checksum
// wrappers (what zap_comm_create does when ZAP_CHECKSUM=1) give correct
// results, and a corrupted payload makes the collective fail with an error on
// the receiving ranks naming the sending rank, never a wrong result.
#include <gtest/gtest.h>
#include <cstring>
#include <functional>
#include <thread>
#include <vector>
#include "log_capture.h"
#include "rank_threads.h"
extern "C" {
#include "zap/coll.h"
#include "zap/inproc.h"
#include "transport/checksum.h"
}

namespace {
struct CommWorld {
    zap_inproc_world_t *w = nullptr;
    std::vector<zap_transport_t *> t;
    std::vector<zap_comm_t *> c;
    explicit CommWorld(int n) : t(n), c(n)
    {
        EXPECT_EQ(zap_inproc_world_create(n, nullptr, &w), ZAP_OK);
        for (int r = 0; r < n; r++) {
            zap_transport_t *in = nullptr;
            EXPECT_EQ(zap_inproc_transport(w, r, &in), ZAP_OK);
            EXPECT_EQ(zap_transport_checksum_wrap(in, &t[r]), ZAP_OK);
        }
        run([&](int r) { EXPECT_EQ(zap_comm_create(t[r], &c[r]), ZAP_OK); });
    }
    ~CommWorld()
    {
        for (auto *x : c)
            zap_comm_destroy(x);
        for (auto *x : t)
            zap_transport_close(x);
        zap_inproc_world_destroy(w);
    }
    void run(const std::function<void(int)> &fn) { run_ranks((int)t.size(), fn); }
};
} // namespace

TEST(ChecksumColl, AllreduceAndBcastAreCorrectThroughChecksums)
{
    LogCapture log;
    const int n = 4;
    const size_t count = 100000; // large enough for the pipelined algorithms
    CommWorld w(n);
    w.run([&](int r) {
        std::vector<int64_t> x(count), y(count, -1);
        for (size_t i = 0; i < count; i++)
            x[i] = (int64_t)(r + 1) * (int64_t)i;
        ASSERT_EQ(zap_allreduce(w.c[r], x.data(), y.data(), count, ZAP_DT_INT64, ZAP_OP_SUM), ZAP_OK);
        for (size_t i = 0; i < count; i++)
            ASSERT_EQ(y[i], (int64_t)i * n * (n + 1) / 2) << "rank " << r << " index " << i;
        std::vector<int64_t> b(count, r == 2 ? 7 : 0);
        if (r == 2)
            for (size_t i = 0; i < count; i++)
                b[i] = (int64_t)i * 3 + 1;
        ASSERT_EQ(zap_bcast(w.c[r], b.data(), count, ZAP_DT_INT64, 2), ZAP_OK);
        for (size_t i = 0; i < count; i++)
            ASSERT_EQ(b[i], (int64_t)i * 3 + 1);
    });
    EXPECT_FALSE(log.contains("corrupt")) << log.all();
}

TEST(ChecksumColl, CorruptPayloadFailsTheAllreduceNamingTheSender)
{
    LogCapture log;
    ScopedEnv timeout("ZAP_TIMEOUT", "3");
    const int n = 4;
    const size_t count = 4096;
    CommWorld w(n); // the wrappers read ZAP_TEST_CORRUPT_RANK at creation: none yet
    // A fresh set of wrappers with the hook on, over the same ranks.
    std::vector<zap_transport_t *> bad(n);
    std::vector<zap_comm_t *> bc(n, nullptr);
    {
        ScopedEnv env("ZAP_TEST_CORRUPT_RANK", "1");
        for (int r = 0; r < n; r++) {
            zap_transport_t *in = nullptr;
            ASSERT_EQ(zap_inproc_transport(w.w, r, &in), ZAP_OK);
            ASSERT_EQ(zap_transport_checksum_wrap(in, &bad[r]), ZAP_OK);
        }
    }
    std::vector<zap_status_t> st(n, ZAP_INPROGRESS), cst(n, ZAP_INPROGRESS);
    std::vector<int> wrong(n, 0);
    w.run([&](int r) {
        cst[r] = zap_comm_create(bad[r], &bc[r]);
        if (cst[r] != ZAP_OK)
            return;
        std::vector<int64_t> x(count, r + 1), y(count, -1);
        st[r] = zap_allreduce(bc[r], x.data(), y.data(), count, ZAP_DT_INT64, ZAP_OP_SUM);
        if (st[r] == ZAP_OK)
            for (size_t i = 0; i < count; i++)
                wrong[r] += y[i] != (int64_t)n * (n + 1) / 2;
    });
    int failed = 0;
    for (int r = 0; r < n; r++) {
        EXPECT_EQ(wrong[r], 0) << "rank " << r << " returned ZAP_OK with a wrong result";
        zap_status_t s = cst[r] != ZAP_OK ? cst[r] : st[r];
        failed += s != ZAP_OK;
        printf("rank %d: comm_create %s, allreduce %s\n", r, zap_status_string(cst[r]),
               zap_status_string(st[r]));
    }
    EXPECT_GT(failed, 0) << "every payload from rank 1 is corrupted, yet nothing failed";
    EXPECT_TRUE(log.contains("from rank 1 (tag")) << log.all();
    EXPECT_TRUE(log.contains("is corrupt")) << log.all();
    for (int r = 0; r < n; r++) {
        zap_comm_destroy(bc[r]);
        zap_transport_close(bad[r]);
    }
}

TEST(ChecksumColl, ChecksumSettingMakesCommCreateWrapTheTransport)
{
    ScopedEnv env("ZAP_CHECKSUM", "1");
    const int n = 3;
    zap_inproc_world_t *w = nullptr;
    ASSERT_EQ(zap_inproc_world_create(n, nullptr, &w), ZAP_OK);
    std::vector<zap_comm_t *> c(n, nullptr);
    std::vector<zap_status_t> st(n, ZAP_INPROGRESS);
    std::vector<int64_t> sum(n, 0);
    std::vector<int> wrapped(n, 0);
    run_ranks(n, [&](int r) {
        zap_transport_t *t = nullptr;
        zap_inproc_transport(w, r, &t);
        if ((st[r] = zap_comm_create(t, &c[r])) != ZAP_OK)
            return;
        wrapped[r] = zap_transport_is_checksum(zap_comm_transport(c[r]));
        int64_t mine = r + 10;
        st[r] = zap_allreduce(c[r], &mine, &sum[r], 1, ZAP_DT_INT64, ZAP_OP_SUM);
        zap_comm_destroy(c[r]); // closes the wrapper it made, never the inproc rank
    });
    for (int r = 0; r < n; r++) {
        EXPECT_EQ(st[r], ZAP_OK) << "rank " << r;
        EXPECT_EQ(wrapped[r], 1) << "rank " << r << ": ZAP_CHECKSUM=1 left the transport unwrapped";
        EXPECT_EQ(sum[r], 10 + 11 + 12);
    }
    zap_inproc_world_destroy(w);
}
