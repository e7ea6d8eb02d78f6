// The communicator and request contract: mismatch detection without hangs,
// non-blocking operations outstanding together, split, and no pool leaks.
#include "coll_harness.h"
#include "log_capture.h"

using namespace colltest;

namespace {
TEST(Allreduce, MismatchedCountIsReportedOnEveryRankNeverAHang)
{
    // Counts on both sides of every selection threshold, so ranks would pick
    // different algorithms: each still ends with ZAP_ERR_MISMATCH.
    for (int n : {2, 3, 5, 8}) {
        for (size_t big : {(size_t)2, (size_t)100000, (size_t)1000000}) {
            LogCapture log;
            World w(n);
            std::vector<std::vector<int32_t>> in(n, std::vector<int32_t>(big)), out = in;
            std::vector<zap_status_t> st(n);
            w.run([&](int r) {
                size_t count = r == n - 1 ? big : 1;
                st[r] = zap_allreduce(w.c[r], in[r].data(), out[r].data(), count, ZAP_DT_INT32, ZAP_OP_SUM);
            });
            for (int r = 0; r < n; r++)
                EXPECT_EQ(st[r], ZAP_ERR_MISMATCH) << n << " ranks, count " << big << ", rank " << r;
            EXPECT_TRUE(log.contains("differ") || log.contains("wrong size")) << log.all();
        }
    }
}

TEST(Allreduce, MismatchedDatatypeIsReportedOnEveryRank)
{
    LogCapture log;
    World w(4);
    std::vector<zap_status_t> st(4);
    uint32_t in[4] = {1, 2, 3, 4}, out[4];
    w.run([&](int r) {
        st[r] = zap_allreduce(w.c[r], &in[r], &out[r], 1, r == 0 ? ZAP_DT_FLOAT32 : ZAP_DT_UINT32, ZAP_OP_MAX);
    });
    for (int r = 0; r < 4; r++)
        EXPECT_EQ(st[r], ZAP_ERR_MISMATCH);
    EXPECT_TRUE(log.contains("datatype")) << log.all();
}

TEST(Comm, CommunicatorIsUsableAfterAMismatch)
{
    LogCapture log;
    World w(3);
    w.run([&](int r) {
        // Counts 2 and 1: a count of 0 on one rank is not a mismatch zap sees
        // (a zero-count call completes locally, docs/collectives.md "Zero
        // counts"), and the other ranks would wait for it.
        int32_t x[2] = {r, r}, y[2] = {0, 0};
        EXPECT_EQ(zap_allreduce(w.c[r], x, y, r == 0 ? 2 : 1, ZAP_DT_INT32, ZAP_OP_SUM), ZAP_ERR_MISMATCH);
        EXPECT_EQ(zap_allreduce(w.c[r], x, y, 1, ZAP_DT_INT32, ZAP_OP_SUM), ZAP_OK);
        EXPECT_EQ(y[0], 3);
    });
}

TEST(Nonblocking, SeveralOperationsOutstandingCompleteInAnyWaitOrder)
{
    for (int n : {2, 3, 4, 7}) {
        World w(n);
        const size_t big = 300000;
        w.run([&](int r) {
            std::vector<int64_t> a(big, r + 1), ra(big);
            std::vector<uint8_t> b(100000, r == 1 % n ? 0x42 : 0);
            int32_t c = r, rc = 0;
            std::vector<double> d(1000, 0.5), rd(1000);
            zap_request_t *req[4] = {};
            ASSERT_EQ(zap_iallreduce(w.c[r], a.data(), ra.data(), big, ZAP_DT_INT64, ZAP_OP_SUM, &req[0]), ZAP_OK);
            ASSERT_EQ(zap_ibcast(w.c[r], b.data(), b.size(), ZAP_DT_UINT8, 1 % n, &req[1]), ZAP_OK);
            ASSERT_EQ(zap_iallreduce(w.c[r], &c, &rc, 1, ZAP_DT_INT32, ZAP_OP_MAX, &req[2]), ZAP_OK);
            ASSERT_EQ(zap_iallreduce(w.c[r], d.data(), rd.data(), 1000, ZAP_DT_FLOAT64, ZAP_OP_SUM, &req[3]), ZAP_OK);
            // Wait in reverse post order: progress on one must advance the others.
            for (int i = 3; i >= 0; i--) {
                EXPECT_EQ(zap_request_wait(req[i]), ZAP_OK);
                zap_request_free(req[i]);
            }
            int64_t expect = (int64_t)n * (n + 1) / 2;
            EXPECT_EQ(ra[0], expect);
            EXPECT_EQ(ra[big - 1], expect);
            EXPECT_EQ(b[99999], 0x42);
            EXPECT_EQ(rc, n - 1);
            EXPECT_EQ(rd[999], 0.5 * n);
        });
    }
}

TEST(Nonblocking, TestReportsCompletionWithoutBlocking)
{
    World w(3);
    w.run([&](int r) {
        int32_t x = r + 1, y = 0;
        zap_request_t *req = nullptr;
        ASSERT_EQ(zap_iallreduce(w.c[r], &x, &y, 1, ZAP_DT_INT32, ZAP_OP_PROD, &req), ZAP_OK);
        int done = 0;
        double deadline = zap_clock_now() + 10;
        while (!done && zap_clock_now() < deadline)
            ASSERT_EQ(zap_request_test(req, &done), ZAP_OK);
        EXPECT_TRUE(done);
        EXPECT_EQ(y, 6);
        zap_request_free(req);
    });
}

TEST(Comm, SplitFormsIndependentCommunicatorsOrderedByKey)
{
    const int n = 7;
    World w(n);
    w.run([&](int r) {
        zap_comm_t *sub = nullptr;
        int color = r == 6 ? ZAP_COMM_UNDEFINED : r % 2;
        ASSERT_EQ(zap_comm_split(w.c[r], color, -r, &sub), ZAP_OK);
        if (r == 6) {
            EXPECT_EQ(sub, nullptr);
            return;
        }
        ASSERT_NE(sub, nullptr);
        int size = r % 2 ? 3 : 3; // evens 0,2,4 ; odds 1,3,5
        EXPECT_EQ(zap_comm_size(sub), size);
        // key -r: reversed order
        int expect_rank = (r % 2 == 0) ? (4 - r) / 2 : (5 - r) / 2;
        EXPECT_EQ(zap_comm_rank(sub), expect_rank);
        int32_t x = r, y = 0;
        EXPECT_EQ(zap_allreduce(sub, &x, &y, 1, ZAP_DT_INT32, ZAP_OP_SUM), ZAP_OK);
        EXPECT_EQ(y, r % 2 ? 1 + 3 + 5 : 0 + 2 + 4);
        // The parent still works alongside.
        zap_comm_destroy(sub);
    });
    w.run([&](int r) {
        int32_t x = 1, y = 0;
        EXPECT_EQ(zap_allreduce(w.c[r], &x, &y, 1, ZAP_DT_INT32, ZAP_OP_SUM), ZAP_OK);
        EXPECT_EQ(y, n);
    });
}

TEST(Comm, BarrierAndZeroCountCollectivesComplete)
{
    for (int n : {1, 2, 5}) {
        World w(n);
        w.run([&](int r) {
            EXPECT_EQ(zap_barrier(w.c[r]), ZAP_OK);
            EXPECT_EQ(zap_allreduce(w.c[r], nullptr, nullptr, 0, ZAP_DT_INT8, ZAP_OP_SUM), ZAP_OK);
            EXPECT_EQ(zap_bcast(w.c[r], nullptr, 0, ZAP_DT_INT8, 0), ZAP_OK);
        });
    }
}

TEST(Comm, NoPoolBuffersRemainAfterCollectives)
{
    zap_pool_t *pool = nullptr;
    ASSERT_EQ(zap_pool_create(nullptr, &pool), ZAP_OK);
    {
        zap_inproc_world_t *wd = nullptr;
        ASSERT_EQ(zap_inproc_world_create(4, pool, &wd), ZAP_OK);
        std::vector<std::thread> ts;
        for (int r = 0; r < 4; r++)
            ts.emplace_back([&, r] {
                zap_transport_t *t = nullptr;
                ASSERT_EQ(zap_inproc_transport(wd, r, &t), ZAP_OK);
                zap_comm_t *c = nullptr;
                ASSERT_EQ(zap_comm_create(t, &c), ZAP_OK);
                std::vector<float> x(200000, 1.0f), y(200000);
                for (const char *alg : {"rd", "rabenseifner", "ring"}) {
                    (void)alg;
                    EXPECT_EQ(zap_allreduce(c, x.data(), y.data(), x.size(), ZAP_DT_FLOAT32, ZAP_OP_SUM), ZAP_OK);
                }
                EXPECT_EQ(zap_bcast(c, x.data(), x.size(), ZAP_DT_FLOAT32, 0), ZAP_OK);
                zap_comm_destroy(c);
            });
        for (auto &t : ts)
            t.join();
        zap_pool_stats_t s;
        ASSERT_EQ(zap_pool_stats(pool, &s), ZAP_OK);
        EXPECT_EQ(s.buffers_out, 0u);
        zap_inproc_world_destroy(wd);
    }
    EXPECT_EQ(zap_pool_destroy(pool), ZAP_OK);
}
} // namespace
