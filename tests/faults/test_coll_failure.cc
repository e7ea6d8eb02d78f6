// The collectives' failure model over the in-process transport
// (docs/faults.md, "Collective failure"): no deadline unless one is asked
// for, a late rank is waited for, and a rank that fails or leaves an
// operation makes every other rank fail it too (revocation) instead of
// waiting for it for ever. Each test ends within seconds; before revocation
// several of them could only end at the ctest timeout.
#include <gtest/gtest.h>
#include <atomic>
#include <chrono>
#include <cmath>
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

zap_comm_params_t with_timeout(double s)
{
    zap_comm_params_t p{};
    p.timeout_s = s;
    return p;
}

double since(double t0) { return zap_clock_now() - t0; }

} // namespace

// Without ZAP_TIMEOUT a communicator has no deadline.
TEST(CollFailure, NoDeadlineUnlessAskedFor)
{
    ScopedEnv e("ZAP_TIMEOUT", nullptr);
    RankWorld w(2);
    zap_comm_attr_t a{};
    a.field_mask = ZAP_COMM_ATTR_TIMEOUT;
    ASSERT_EQ(zap_comm_query(w.c[0], &a), ZAP_OK);
    EXPECT_EQ(a.timeout_s, ZAP_COMM_TIMEOUT_NONE);
}

// A rank far later than a short liveness check interval (and than any
// deadline a communicator used to have by default, scaled down) is waited
// for: every rank succeeds with the right sum.
TEST(CollFailure, LateRankIsWaitedFor)
{
    ScopedEnv e("ZAP_TIMEOUT", nullptr);
    const int n = 4;
    RankWorld w(n);
    std::vector<int64_t> sum(n, -1);
    auto st = w.each([&](int r) {
        if (r == n - 1)
            std::this_thread::sleep_for(std::chrono::milliseconds(1500));
        int64_t x = r + 1;
        return zap_allreduce(w.c[r], &x, &sum[r], 1, ZAP_DT_INT64, ZAP_OP_SUM);
    });
    for (int r = 0; r < n; r++) {
        EXPECT_EQ(st[r], ZAP_OK) << "rank " << r;
        EXPECT_EQ(sum[r], n * (n + 1) / 2) << "rank " << r;
    }
}

// zap_request_wait on a collective request waits the communicator's timeout
// (it used to take the transport layer's default, 30 s), and the operation
// then fails on the other rank too, which posts it late.
TEST(CollFailure, RequestWaitTakesTheCommunicatorsTimeout)
{
    LogCapture log;
    zap_comm_params_t p = with_timeout(0.2);
    RankWorld w(2, true, &p);
    std::atomic<bool> waited{false};
    std::vector<zap_status_t> st(2, ZAP_INPROGRESS);
    double took = 0;
    w.run([&](int r) {
        int64_t x = 1, y = 0;
        if (r == 1) {
            while (!waited.load())
                std::this_thread::sleep_for(std::chrono::milliseconds(5));
            st[r] = zap_allreduce(w.c[r], &x, &y, 1, ZAP_DT_INT64, ZAP_OP_SUM);
            return;
        }
        zap_request_t *req = nullptr;
        ASSERT_EQ(zap_iallreduce(w.c[r], &x, &y, 1, ZAP_DT_INT64, ZAP_OP_SUM, &req), ZAP_OK);
        double t0 = zap_clock_now();
        st[r] = zap_request_wait(req);
        took = since(t0);
        zap_request_free(req);
        waited = true;
    });
    EXPECT_EQ(st[0], ZAP_ERR_TIMED_OUT);
    EXPECT_LT(took, 5.0) << "waited the transport's default, not the communicator's 0.2 s";
    EXPECT_EQ(st[1], ZAP_ERR_REVOKED) << "the late rank returned success on an operation rank 0 failed";
    EXPECT_TRUE(log.contains("timed out")) << log.all();
    EXPECT_FALSE(log.contains("peer rank -1")) << log.all();
}

// An opt-in deadline fails the operation on every rank: the late rank does
// not return success on what the early ones reported as timed out.
TEST(CollFailure, DeadlineFailsTheOperationOnEveryRank)
{
    LogCapture log;
    const int n = 3;
    zap_comm_params_t p = with_timeout(0.3);
    RankWorld w(n, true, &p);
    std::vector<int64_t> sum(n, -1);
    auto st = w.each([&](int r) {
        if (r == n - 1)
            std::this_thread::sleep_for(std::chrono::milliseconds(800));
        int64_t x = r + 1;
        return zap_allreduce(w.c[r], &x, &sum[r], 1, ZAP_DT_INT64, ZAP_OP_SUM);
    });
    // The early ranks time out at about the same moment: one may read the
    // other's notice first and report the revocation instead.
    int timed_out = 0;
    for (int r = 0; r < n - 1; r++) {
        EXPECT_TRUE(st[r] == ZAP_ERR_TIMED_OUT || st[r] == ZAP_ERR_REVOKED) << "rank " << r << ": " << st[r];
        timed_out += st[r] == ZAP_ERR_TIMED_OUT;
    }
    EXPECT_GE(timed_out, 1);
    EXPECT_EQ(st[n - 1], ZAP_ERR_REVOKED);
    // The communicator stays revoked: later calls fail at once on every rank.
    auto later = w.each([&](int r) {
        int64_t x = 1, y = 0;
        return zap_allreduce(w.c[r], &x, &y, 1, ZAP_DT_INT64, ZAP_OP_SUM);
    });
    for (int r = 0; r < n; r++)
        EXPECT_NE(later[r], ZAP_OK) << "rank " << r;
    EXPECT_TRUE(log.contains("is revoked from sequence 1 on: transport rank")) << log.all();
}

// A rank that frees (cancels) a pending collective: the others fail it, with
// no deadline anywhere, instead of waiting for its messages for ever.
TEST(CollFailure, CancelledOperationFailsOnTheOtherRanks)
{
    ScopedEnv e("ZAP_TIMEOUT", nullptr);
    LogCapture log;
    const int n = 3;
    RankWorld w(n);
    std::vector<zap_status_t> st(n, ZAP_INPROGRESS);
    // The others post only once rank 0 has freed its request: had they
    // posted first, rank 0's post could complete the whole call (a loaded
    // machine ran it so), and there would be nothing to cancel.
    std::atomic<bool> freed{false};
    double t0 = zap_clock_now();
    w.run([&](int r) {
        std::vector<int64_t> x(1000, r), y(1000, 0);
        if (r == 0) {
            zap_request_t *req = nullptr;
            EXPECT_EQ(zap_iallreduce(w.c[r], x.data(), y.data(), x.size(), ZAP_DT_INT64, ZAP_OP_SUM, &req), ZAP_OK);
            zap_request_free(req);
            freed = true;
            return;
        }
        while (!freed)
            std::this_thread::yield();
        st[r] = zap_allreduce(w.c[r], x.data(), y.data(), x.size(), ZAP_DT_INT64, ZAP_OP_SUM);
    });
    for (int r = 1; r < n; r++)
        EXPECT_EQ(st[r], ZAP_ERR_REVOKED) << "rank " << r;
    EXPECT_LT(since(t0), 5.0);
    EXPECT_TRUE(log.contains("cancelled there before it completed")) << log.all();
}

// A payload corrupted on its way from one rank (checksum mode): the ranks
// that receive from it fail with ZAP_ERR_CORRUPT and every other rank fails
// the same operation, with no deadline, instead of waiting for ever on the
// ranks that left it. None returns success.
TEST(CollFailure, CorruptPayloadFailsTheOperationOnEveryRank)
{
    ScopedEnv e("ZAP_TIMEOUT", nullptr);
    LogCapture log;
    const int n = 4;
    const size_t count = 4096;
    RankWorld w(n, false);
    std::vector<zap_transport_t *> bad(n);
    std::vector<zap_comm_t *> bc(n, nullptr);
    {
        ScopedEnv env("ZAP_TEST_CORRUPT_RANK", "1");
        for (int r = 0; r < n; r++)
            ASSERT_EQ(zap_transport_checksum_wrap(w.t[r], &bad[r]), ZAP_OK);
    }
    std::vector<zap_status_t> st(n, ZAP_INPROGRESS);
    double t0 = zap_clock_now();
    w.run([&](int r) {
        if (zap_comm_create(bad[r], &bc[r]) != ZAP_OK)
            return;
        std::vector<int64_t> x(count, r + 1), y(count, -1);
        st[r] = zap_allreduce(bc[r], x.data(), y.data(), count, ZAP_DT_INT64, ZAP_OP_SUM);
    });
    for (int r = 0; r < n; r++)
        EXPECT_NE(st[r], ZAP_OK) << "rank " << r << " returned success on an operation another rank failed";
    EXPECT_LT(since(t0), 5.0);
    EXPECT_TRUE(log.contains("is corrupt")) << log.all();
    for (int r = 0; r < n; r++) {
        zap_comm_destroy(bc[r]);
        zap_transport_close(bad[r]);
    }
}

// A mismatch is seen by every rank in the agreement: nothing is revoked and
// the communicator goes on.
TEST(CollFailure, MismatchRevokesNothing)
{
    LogCapture log;
    const int n = 3;
    RankWorld w(n);
    auto st = w.each([&](int r) {
        int64_t x[2] = {1, 1}, y[2];
        return zap_allreduce(w.c[r], x, y, r == 1 ? 2 : 1, ZAP_DT_INT64, ZAP_OP_SUM);
    });
    for (int r = 0; r < n; r++)
        EXPECT_EQ(st[r], ZAP_ERR_MISMATCH) << "rank " << r;
    std::vector<int64_t> sum(n, 0);
    auto ok = w.each([&](int r) {
        int64_t x = r;
        return zap_allreduce(w.c[r], &x, &sum[r], 1, ZAP_DT_INT64, ZAP_OP_SUM);
    });
    for (int r = 0; r < n; r++) {
        EXPECT_EQ(ok[r], ZAP_OK) << "rank " << r;
        EXPECT_EQ(sum[r], 3);
    }
    EXPECT_FALSE(log.contains("revoked")) << log.all();
}

// A communicator destroyed with an operation pending on one rank (the other
// has not reached it yet): the other fails that operation when it gets
// there.
TEST(CollFailure, DestroyWithAPendingOperationFailsItOnTheOthers)
{
    ScopedEnv e("ZAP_TIMEOUT", nullptr);
    LogCapture log;
    const int n = 2;
    RankWorld w(n);
    std::vector<zap_status_t> st(n, ZAP_INPROGRESS);
    w.run([&](int r) {
        std::vector<int32_t> b(100000, r);
        if (r == 0) {
            zap_request_t *req = nullptr;
            ASSERT_EQ(zap_ibcast(w.c[r], b.data(), b.size(), ZAP_DT_INT32, 1, &req), ZAP_OK);
            zap_comm_destroy(w.c[r]); /* cancels and frees req, with a warning */
            w.c[r] = nullptr;
            return;
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(300));
        st[r] = zap_bcast(w.c[r], b.data(), b.size(), ZAP_DT_INT32, 1);
    });
    EXPECT_EQ(st[1], ZAP_ERR_REVOKED);
}

// A mismatch only one rank can see (alltoallv: rank 2 expects 2 elements
// from rank 0, which sends 1; only the receiver can tell): every rank fails
// that operation, and every other rank's log names rank 2, which logged the
// cause itself. Before, the others said only "a rank reported bad
// collective arguments".
TEST(CollFailure, MismatchSeenByOneRankFailsEveryRankNamingIt)
{
    LogCapture log;
    const int n = 3;
    RankWorld w(n);
    auto st = w.each([&](int r) {
        int64_t x[3] = {r, r, r}, y[4] = {-1, -1, -1, -1};
        size_t sc[3] = {1, 1, 1}, rc[3] = {1, 1, 1};
        ptrdiff_t sd[3] = {0, 1, 2}, rd[3] = {0, 2, 3};
        if (r == 2)
            rc[0] = 2;
        return zap_alltoallv(w.c[r], x, sc, sd, y, rc, rd, ZAP_DT_INT64);
    });
    EXPECT_EQ(st[2], ZAP_ERR_INVALID_PARAM);
    for (int r = 0; r < 2; r++)
        EXPECT_EQ(st[r], ZAP_ERR_MISMATCH) << "rank " << r << " returned " << zap_status_string(st[r]);
    EXPECT_TRUE(log.contains("rank 2: alltoallv: rank 0 sent fewer than recvcounts[0]")) << log.all();
    for (int r = 0; r < 2; r++)
        EXPECT_TRUE(log.contains("rank " + std::to_string(r) +
                                 ": collective failed on every rank: rank 2 (transport rank 2) reported bad arguments"))
            << log.all();
}

// Bad arguments on one rank (a NULL receive buffer with a count): it
// returns its own error, every other rank fails the same call naming it.
TEST(CollFailure, BadArgumentsOnOneRankFailEveryRankNamingIt)
{
    LogCapture log;
    const int n = 4;
    RankWorld w(n);
    auto st = w.each([&](int r) {
        int64_t x = 1, y = 0;
        return zap_allreduce(w.c[r], &x, r == 3 ? nullptr : &y, 1, ZAP_DT_INT64, ZAP_OP_SUM);
    });
    EXPECT_EQ(st[3], ZAP_ERR_INVALID_PARAM);
    for (int r = 0; r < 3; r++) {
        EXPECT_EQ(st[r], ZAP_ERR_MISMATCH) << "rank " << r;
        EXPECT_TRUE(log.contains("rank " + std::to_string(r) +
                                 ": collective failed on every rank: rank 3 (transport rank 3) reported bad arguments"))
            << log.all();
    }
}

namespace {
uint64_t messages_sent(zap_transport_t *t)
{
    zap_transport_traffic_t tr{};
    EXPECT_EQ(zap_transport_traffic(t, &tr), ZAP_OK);
    uint64_t m = 0;
    for (int k = 0; k < ZAP_PEER_CLASSES; k++)
        m += tr.messages[k];
    return m;
}
} // namespace

// A zero-count call completes locally (MPI allows it): every collective
// whose count all ranks must pass alike, at 0, sends no message at all, on
// every rank, blocking and non-blocking; a real call afterwards still works
// (the sequence numbers stayed aligned).
TEST(CollFailure, ZeroCountCallsSendNoMessage)
{
    const int n = 3;
    RankWorld w(n);
    std::vector<uint64_t> before(n), after(n);
    std::vector<int64_t> sum(n, 0);
    auto st = w.each([&](int r) {
        before[r] = messages_sent(w.t[r]);
        zap_comm_t *c = w.c[r];
        size_t zeros[3] = {0, 0, 0};
        zap_status_t s = ZAP_OK;
        auto keep = [&](zap_status_t x) {
            if (s == ZAP_OK && x != ZAP_OK)
                s = x;
        };
        keep(zap_allreduce(c, nullptr, nullptr, 0, ZAP_DT_INT64, ZAP_OP_SUM));
        keep(zap_bcast(c, nullptr, 0, ZAP_DT_INT64, 1));
        keep(zap_reduce(c, nullptr, nullptr, 0, ZAP_DT_INT64, ZAP_OP_SUM, 2));
        keep(zap_scan(c, nullptr, nullptr, 0, ZAP_DT_INT64, ZAP_OP_SUM));
        keep(zap_exscan(c, nullptr, nullptr, 0, ZAP_DT_INT64, ZAP_OP_SUM));
        keep(zap_allgather(c, nullptr, 0, nullptr, ZAP_DT_INT64));
        keep(zap_gather(c, nullptr, 0, nullptr, ZAP_DT_INT64, 0));
        keep(zap_scatter(c, nullptr, nullptr, 0, ZAP_DT_INT64, 0));
        keep(zap_alltoall(c, nullptr, 0, nullptr, ZAP_DT_INT64));
        keep(zap_reduce_scatter_block(c, nullptr, nullptr, 0, ZAP_DT_INT64, ZAP_OP_SUM));
        keep(zap_reduce_scatter(c, nullptr, nullptr, zeros, ZAP_DT_INT64, ZAP_OP_SUM));
        zap_request_t *req = nullptr;
        keep(zap_iallreduce(c, nullptr, nullptr, 0, ZAP_DT_INT64, ZAP_OP_SUM, &req));
        int done = 0;
        keep(zap_request_test(req, &done)); // complete at once, no progress needed
        keep(done ? ZAP_OK : ZAP_INPROGRESS);
        zap_request_free(req);
        after[r] = messages_sent(w.t[r]);
        int64_t x = r + 1;
        keep(zap_allreduce(c, &x, &sum[r], 1, ZAP_DT_INT64, ZAP_OP_SUM));
        return s;
    });
    for (int r = 0; r < n; r++) {
        EXPECT_EQ(st[r], ZAP_OK) << "rank " << r;
        EXPECT_EQ(after[r] - before[r], 0u) << "rank " << r << " sent messages for zero-count calls";
        EXPECT_EQ(sum[r], 6) << "rank " << r;
    }
}
