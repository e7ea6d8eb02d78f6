// Gather(v) and alltoall(v) over the in-process transport: every algorithm
// (forced) on 1-17 ranks, every root, uneven and zero counts, negative
// displacements, in place; bytes outside the blocks untouched; counts that
// disagree reported on every rank after the data moved.
#include "coll_harness.h"
#include "log_capture.h"
#include <string>
#include <tuple>

using namespace colltest;

namespace {

using AlgRanks = std::tuple<std::string, std::string, int>; // collective, algorithm, ranks

class Moves : public ::testing::TestWithParam<AlgRanks> {
  protected:
    std::string coll = std::get<0>(GetParam()), alg = std::get<1>(GetParam());
    int n = std::get<2>(GetParam());
};

// Element i of the block rank r sends to rank j (alltoall) or the root.
int32_t val(int r, int j, size_t i) { return (int32_t)mix((uint64_t)r << 40 | (uint64_t)j << 20 | i); }

TEST_P(Moves, GatherEveryRootAndCount)
{
    if (coll != "gather")
        GTEST_SKIP() << "the gather cases";
    World w(n, Params().alg("gather", alg.c_str()));
    for (size_t count : {(size_t)0, (size_t)1, (size_t)13, (size_t)3001}) {
        for (int root = 0; root < n; root++) {
            if (count > 1000 && root != 0 && root != n - 1)
                continue;
            for (bool in_place : {false, true}) {
                std::vector<std::vector<int32_t>> send(n, std::vector<int32_t>(count + 1));
                std::vector<int32_t> recv(count * n + 1, -1);
                for (int r = 0; r < n; r++)
                    for (size_t i = 0; i < count; i++)
                        send[r][i] = val(r, 0, i);
                if (in_place)
                    std::copy(send[root].begin(), send[root].begin() + count, recv.begin() + root * count);
                std::vector<zap_status_t> st(n);
                w.run([&](int r) {
                    const void *s = in_place && r == root ? ZAP_IN_PLACE : send[r].data();
                    st[r] = zap_gather(w.c[r], s, count, r == root ? recv.data() : nullptr, ZAP_DT_INT32, root);
                });
                for (int r = 0; r < n; r++) {
                    ASSERT_EQ(st[r], ZAP_OK) << "count " << count << " root " << root << " rank " << r;
                    for (size_t i = 0; i < count; i++)
                        ASSERT_EQ(recv[r * count + i], val(r, 0, i))
                            << "count " << count << " root " << root << " block " << r << (in_place ? " in place" : "");
                }
                ASSERT_EQ(recv[count * n], -1) << "past the end";
            }
        }
    }
}

// Uneven counts (some 0), blocks in reverse rank order with gaps, and the
// buffer pointer in the middle of the area, so displacements are negative.
TEST_P(Moves, GathervUnevenCountsNegativeDisplacements)
{
    if (coll != "gather")
        GTEST_SKIP() << "the gather cases";
    World w(n, Params().alg("gather", alg.c_str()));
    for (int root : {0, n / 2, n - 1}) {
        for (bool in_place : {false, true}) {
            std::vector<size_t> counts(n);
            std::vector<ptrdiff_t> displs(n);
            size_t area = 0;
            for (int r = 0; r < n; r++) {
                counts[r] = r % 3 == 1 ? 0 : (size_t)(r * 17 + 3);
                area += counts[r] + 2;
            }
            std::vector<int32_t> base(area, -1);
            int32_t *recv = base.data() + area / 2;
            size_t at = 0;
            for (int r = n - 1; r >= 0; r--) {
                displs[r] = (ptrdiff_t)at - (ptrdiff_t)(area / 2);
                at += counts[r] + 2;
            }
            std::vector<std::vector<int32_t>> send(n);
            for (int r = 0; r < n; r++) {
                send[r].resize(counts[r] + 1);
                for (size_t i = 0; i < counts[r]; i++)
                    send[r][i] = val(r, 1, i);
            }
            if (in_place)
                std::copy(send[root].begin(), send[root].begin() + counts[root], recv + displs[root]);
            std::vector<zap_status_t> st(n);
            w.run([&](int r) {
                bool me = r == root;
                st[r] = zap_gatherv(w.c[r], in_place && me ? ZAP_IN_PLACE : send[r].data(), counts[r],
                                    me ? recv : nullptr, me ? counts.data() : nullptr, me ? displs.data() : nullptr,
                                    ZAP_DT_INT32, root);
            });
            std::vector<int32_t> want(area, -1);
            for (int r = 0; r < n; r++)
                for (size_t i = 0; i < counts[r]; i++)
                    want[(size_t)(displs[r] + (ptrdiff_t)(area / 2)) + i] = val(r, 1, i);
            for (int r = 0; r < n; r++)
                ASSERT_EQ(st[r], ZAP_OK) << "root " << root << " rank " << r;
            ASSERT_EQ(base, want) << "root " << root << (in_place ? " in place" : "");
        }
    }
}

TEST_P(Moves, AlltoallEveryCount)
{
    if (coll != "alltoall")
        GTEST_SKIP() << "the alltoall cases";
    World w(n, Params().alg("alltoall", alg.c_str()));
    for (size_t count : {(size_t)0, (size_t)1, (size_t)5, (size_t)3000}) {
        if (count == 3000 && n > 8 && n != 13 && n != 17)
            continue;
        for (bool in_place : {false, true}) {
            std::vector<std::vector<int32_t>> send(n, std::vector<int32_t>(count * n + 1));
            std::vector<std::vector<int32_t>> recv(n, std::vector<int32_t>(count * n + 1, -1));
            for (int r = 0; r < n; r++)
                for (int j = 0; j < n; j++)
                    for (size_t i = 0; i < count; i++)
                        send[r][j * count + i] = val(r, j, i);
            if (in_place)
                for (int r = 0; r < n; r++)
                    std::copy(send[r].begin(), send[r].begin() + count * n, recv[r].begin());
            std::vector<zap_status_t> st(n);
            w.run([&](int r) {
                st[r] = zap_alltoall(w.c[r], in_place ? ZAP_IN_PLACE : send[r].data(), count, recv[r].data(),
                                     ZAP_DT_INT32);
            });
            for (int r = 0; r < n; r++) {
                ASSERT_EQ(st[r], ZAP_OK) << "count " << count << " rank " << r;
                for (int j = 0; j < n; j++)
                    for (size_t i = 0; i < count; i++)
                        ASSERT_EQ(recv[r][j * count + i], val(j, r, i))
                            << "count " << count << (in_place ? " in place" : "") << " rank " << r << " from " << j;
                ASSERT_EQ(recv[r][count * n], -1) << "past the end";
            }
        }
    }
}

// Rank r sends (r + 2j) % 5 elements to rank j; the send and receive layouts
// reversed, gapped and around the middle of their areas.
TEST_P(Moves, AlltoallvUnevenCountsNegativeDisplacements)
{
    if (coll != "alltoall")
        GTEST_SKIP() << "the alltoall cases";
    World w(n, Params().alg("alltoall", alg.c_str()));
    auto cnt = [](int from, int to) { return (size_t)((from + 2 * to) % 5) * 7; };
    {
        std::vector<std::vector<size_t>> sc(n, std::vector<size_t>(n)), rc = sc;
        std::vector<std::vector<ptrdiff_t>> sd(n, std::vector<ptrdiff_t>(n)), rd = sd;
        std::vector<std::vector<int32_t>> sarea(n), rarea(n);
        std::vector<size_t> rmid(n);
        for (int r = 0; r < n; r++) {
            size_t stot = 0, rtot = 0;
            for (int j = 0; j < n; j++) {
                sc[r][j] = cnt(r, j);
                rc[r][j] = cnt(j, r);
                stot += sc[r][j] + 1;
                rtot += rc[r][j] + 1;
            }
            sarea[r].assign(stot, 0);
            rarea[r].assign(rtot, -1);
            rmid[r] = rtot / 2;
            size_t sat = 0, rat = 0;
            for (int j = n - 1; j >= 0; j--) {
                sd[r][j] = (ptrdiff_t)sat - (ptrdiff_t)(stot / 2);
                rd[r][j] = (ptrdiff_t)rat - (ptrdiff_t)rmid[r];
                for (size_t i = 0; i < sc[r][j]; i++)
                    sarea[r][sat + i] = val(r, j, i);
                sat += sc[r][j] + 1;
                rat += rc[r][j] + 1;
            }
        }
        std::vector<std::vector<int32_t>> want = rarea;
        for (int r = 0; r < n; r++)
            for (int j = 0; j < n; j++)
                for (size_t i = 0; i < rc[r][j]; i++)
                    want[r][(size_t)(rd[r][j] + (ptrdiff_t)rmid[r]) + i] = val(j, r, i);
        std::vector<zap_status_t> st(n);
        w.run([&](int r) {
            const int32_t *sbase = sarea[r].data() + sarea[r].size() / 2;
            st[r] = zap_alltoallv(w.c[r], sbase, sc[r].data(), sd[r].data(), rarea[r].data() + rmid[r], rc[r].data(),
                                  rd[r].data(), ZAP_DT_INT32);
        });
        for (int r = 0; r < n; r++) {
            ASSERT_EQ(st[r], ZAP_OK) << "rank " << r;
            ASSERT_EQ(rarea[r], want[r]) << "rank " << r;
        }
    }
    // In place with symmetric counts (r and j exchange cnt(r, j) + cnt(j, r)).
    std::vector<std::vector<size_t>> c(n, std::vector<size_t>(n));
    std::vector<std::vector<ptrdiff_t>> d(n, std::vector<ptrdiff_t>(n));
    std::vector<std::vector<int32_t>> buf(n), want(n);
    for (int r = 0; r < n; r++) {
        size_t tot = 0;
        for (int j = n - 1; j >= 0; j--) {
            c[r][j] = cnt(r, j) + cnt(j, r);
            d[r][j] = (ptrdiff_t)tot;
            tot += c[r][j] + 1;
        }
        buf[r].assign(tot, -1);
        want[r].assign(tot, -1);
        for (int j = 0; j < n; j++)
            for (size_t i = 0; i < c[r][j]; i++) {
                buf[r][(size_t)d[r][j] + i] = val(r, j, i);
                want[r][(size_t)d[r][j] + i] = val(j, r, i);
            }
    }
    std::vector<zap_status_t> st(n);
    w.run([&](int r) {
        st[r] = zap_alltoallv(w.c[r], ZAP_IN_PLACE, nullptr, nullptr, buf[r].data(), c[r].data(), d[r].data(),
                              ZAP_DT_INT32);
    });
    for (int r = 0; r < n; r++) {
        ASSERT_EQ(st[r], ZAP_OK) << "in place, rank " << r;
        ASSERT_EQ(buf[r], want[r]) << "in place, rank " << r;
    }
}

std::vector<AlgRanks> params()
{
    std::vector<AlgRanks> v;
    for (int n = 1; n <= 17; n++) {
        for (const char *a : {"linear", "binomial"})
            v.push_back({"gather", a, n});
        for (const char *a : {"pairwise", "bruck", "linear"})
            v.push_back({"alltoall", a, n});
    }
    return v;
}

INSTANTIATE_TEST_SUITE_P(AlgRanks, Moves, ::testing::ValuesIn(params()),
                         [](const ::testing::TestParamInfo<AlgRanks> &i) {
                             return std::get<0>(i.param) + "_" + std::get<1>(i.param) + "_" +
                                    std::to_string(std::get<2>(i.param)) + "ranks";
                         });

TEST(Moves, GathervCountTheRootDoesNotExpectIsReportedOnEveryRank)
{
    LogCapture log;
    const int n = 4;
    World w(n);
    for (size_t wrong : {(size_t)2, (size_t)9}) { // fewer and more than the root's counts[2] = 5
        std::vector<zap_status_t> st(n);
        std::vector<int32_t> recv(64), mine(16, 3);
        w.run([&](int r) {
            size_t counts[n] = {5, 5, 5, 5};
            ptrdiff_t displs[n] = {0, 5, 10, 15};
            st[r] = zap_gatherv(w.c[r], mine.data(), r == 2 ? wrong : 5, recv.data(), counts, displs, ZAP_DT_INT32, 1);
        });
        EXPECT_EQ(st[1], ZAP_ERR_INVALID_PARAM) << wrong;
        for (int r : {0, 2, 3})
            EXPECT_EQ(st[r], ZAP_ERR_MISMATCH) << wrong << " rank " << r;
    }
    EXPECT_TRUE(log.contains("rank 2 sent")) << log.all();
}

TEST(Moves, AlltoallvCountsThatDisagreeAreReportedOnEveryRank)
{
    LogCapture log;
    const int n = 3;
    World w(n);
    std::vector<zap_status_t> st(n);
    std::vector<std::vector<int32_t>> s(n, std::vector<int32_t>(32, 1)), rv(n, std::vector<int32_t>(32));
    w.run([&](int r) {
        size_t sc[n] = {2, 2, 2}, rc[n] = {2, 2, 2};
        ptrdiff_t d[n] = {0, 8, 16};
        if (r == 2)
            rc[0] = 3; // expects 3 from rank 0, which sends 2
        st[r] = zap_alltoallv(w.c[r], s[r].data(), sc, d, rv[r].data(), rc, d, ZAP_DT_INT32);
    });
    EXPECT_EQ(st[2], ZAP_ERR_INVALID_PARAM);
    EXPECT_EQ(st[0], ZAP_ERR_MISMATCH);
    EXPECT_EQ(st[1], ZAP_ERR_MISMATCH);
    EXPECT_TRUE(log.contains("recvcounts")) << log.all();
}

TEST(Moves, ArgumentsThatDifferBeforeAnythingMovesAreMismatches)
{
    LogCapture log;
    const int n = 4;
    World w(n);
    std::vector<int32_t> buf(256, 1), out(256);
    auto all = [&](const char *what, std::function<zap_status_t(int)> call) {
        std::vector<zap_status_t> st = w.each(call);
        for (int r = 0; r < n; r++)
            EXPECT_EQ(st[r], ZAP_ERR_MISMATCH) << what << " rank " << r;
    };
    all("gather count", [&](int r) { return zap_gather(w.c[r], buf.data(), r == 3 ? 4 : 3, out.data(), ZAP_DT_INT32, 0); });
    all("gather root", [&](int r) { return zap_gather(w.c[r], buf.data(), 3, out.data(), ZAP_DT_INT32, r == 0); });
    all("gather against gatherv", [&](int r) {
        size_t counts[n] = {3, 3, 3, 3};
        ptrdiff_t displs[n] = {0, 3, 6, 9};
        return r == 1 ? zap_gatherv(w.c[r], buf.data(), 3, out.data(), counts, displs, ZAP_DT_INT32, 0)
                      : zap_gather(w.c[r], buf.data(), 3, out.data(), ZAP_DT_INT32, 0);
    });
    all("alltoall count", [&](int r) { return zap_alltoall(w.c[r], buf.data(), r == 0 ? 2 : 3, out.data(), ZAP_DT_INT32); });
    all("alltoall in place on one rank",
        [&](int r) { return zap_alltoall(w.c[r], r == 2 ? ZAP_IN_PLACE : buf.data(), 3, out.data(), ZAP_DT_INT32); });
    all("alltoall datatype", [&](int r) { return zap_alltoall(w.c[r], buf.data(), 3, out.data(), r == 1 ? ZAP_DT_UINT32 : ZAP_DT_INT32); });
    w.run([&](int r) { // still usable
        int32_t x[4] = {r, r, r, r}, y[4];
        EXPECT_EQ(zap_alltoall(w.c[r], x, 1, y, ZAP_DT_INT32), ZAP_OK);
        EXPECT_EQ(y[3], 3);
    });
}

TEST(Moves, NonblockingGathersAndAlltoallsOutstandingTogether)
{
    for (int n : {1, 2, 5}) {
        World w(n);
        w.run([&](int r) {
            std::vector<int32_t> mine(100, r), g(100 * n, -1), a(100 * n), s(100 * n, r), gv(n, -1);
            size_t counts[5] = {1, 1, 1, 1, 1};
            ptrdiff_t displs[5] = {4, 3, 2, 1, 0};
            zap_request_t *req[3] = {};
            ASSERT_EQ(zap_igather(w.c[r], mine.data(), 100, g.data(), ZAP_DT_INT32, n - 1, &req[0]), ZAP_OK);
            ASSERT_EQ(zap_ialltoall(w.c[r], s.data(), 100, a.data(), ZAP_DT_INT32, &req[1]), ZAP_OK);
            for (int q = 0; q < n; q++)
                displs[q] = n - 1 - q;
            ASSERT_EQ(zap_igatherv(w.c[r], mine.data(), 1, gv.data(), counts, displs, ZAP_DT_INT32, 0, &req[2]), ZAP_OK);
            for (int i = 2; i >= 0; i--) {
                EXPECT_EQ(zap_request_wait(req[i]), ZAP_OK);
                zap_request_free(req[i]);
            }
            if (r == n - 1) {
                for (int q = 0; q < n; q++)
                    EXPECT_EQ(g[q * 100 + 99], q);
            }
            for (int q = 0; q < n; q++)
                EXPECT_EQ(a[q * 100], q);
            if (r == 0) {
                for (int q = 0; q < n; q++)
                    EXPECT_EQ(gv[n - 1 - q], q);
            }
        });
    }
}
} // namespace
