// Scatter(v) and allgather(v) over the in-process transport, rank counts
// 1..17, uneven and zero counts, every root.
#include "coll_harness.h"
#include "log_capture.h"
#include <numeric>

using namespace colltest;

namespace {
class ScatterGather : public ::testing::TestWithParam<int> {};

TEST_P(ScatterGather, ScattervDeliversEachRankItsSlice)
{
    int n = GetParam();
    World w(n);
    for (int root : {0, n - 1}) {
        std::vector<size_t> counts(n);
        std::vector<ptrdiff_t> displs(n);
        size_t total = 0;
        for (int r = 0; r < n; r++) {
            counts[r] = (r % 3 == 1) ? 0 : (size_t)(r * 37 + 5); // some ranks get nothing
            displs[r] = (ptrdiff_t)total + 2;                    // gaps between slices
            total = (size_t)displs[r] + counts[r];
        }
        std::vector<int32_t> send(total);
        for (size_t i = 0; i < total; i++)
            send[i] = (int32_t)mix(i + 99);
        std::vector<std::vector<int32_t>> recv(n, std::vector<int32_t>(1000, -1));
        std::vector<zap_status_t> st(n);
        w.run([&](int r) {
            bool is_root = r == root;
            st[r] = zap_scatterv(w.c[r], is_root ? send.data() : nullptr, is_root ? counts.data() : nullptr,
                                 is_root ? displs.data() : nullptr, recv[r].data(), 999, ZAP_DT_INT32, root);
        });
        for (int r = 0; r < n; r++) {
            ASSERT_EQ(st[r], ZAP_OK) << "rank " << r;
            for (size_t i = 0; i < counts[r]; i++)
                ASSERT_EQ(recv[r][i], send[displs[r] + i]) << "rank " << r << " element " << i;
            ASSERT_EQ(recv[r][counts[r]], -1) << "rank " << r << " got more than its slice";
        }
    }
}

TEST_P(ScatterGather, ScatterFixedCount)
{
    int n = GetParam();
    World w(n);
    const size_t count = 1001;
    std::vector<uint16_t> send(count * n);
    for (size_t i = 0; i < send.size(); i++)
        send[i] = (uint16_t)mix(i);
    std::vector<std::vector<uint16_t>> recv(n, std::vector<uint16_t>(count));
    w.run([&](int r) {
        EXPECT_EQ(zap_scatter(w.c[r], r == 0 ? send.data() : nullptr, recv[r].data(), count, ZAP_DT_UINT16, 0),
                  ZAP_OK);
    });
    for (int r = 0; r < n; r++)
        ASSERT_EQ(std::memcmp(recv[r].data(), send.data() + r * count, count * 2), 0) << "rank " << r;
}

TEST_P(ScatterGather, AllgathervPlacesEveryBlockOnEveryRank)
{
    int n = GetParam();
    World w(n);
    std::vector<size_t> counts(n);
    std::vector<ptrdiff_t> displs(n);
    size_t total = 0;
    for (int r = 0; r < n; r++) {
        counts[r] = (r % 4 == 2) ? 0 : (size_t)(r * 13 + 1);
        displs[r] = (ptrdiff_t)total;
        total += counts[r];
    }
    for (bool in_place : {false, true}) {
        std::vector<std::vector<uint64_t>> send(n), recv(n, std::vector<uint64_t>(total + 1, 7));
        for (int r = 0; r < n; r++) {
            send[r].resize(counts[r] + 1);
            for (size_t i = 0; i < counts[r]; i++)
                send[r][i] = mix((uint64_t)r << 32 | i);
            if (in_place)
                std::copy(send[r].begin(), send[r].begin() + counts[r], recv[r].begin() + displs[r]);
        }
        std::vector<zap_status_t> st(n);
        w.run([&](int r) {
            st[r] = zap_allgatherv(w.c[r], in_place ? ZAP_IN_PLACE : send[r].data(), counts[r], recv[r].data(),
                                   counts.data(), displs.data(), ZAP_DT_UINT64);
        });
        for (int r = 0; r < n; r++) {
            ASSERT_EQ(st[r], ZAP_OK);
            for (int b = 0; b < n; b++)
                for (size_t i = 0; i < counts[b]; i++)
                    ASSERT_EQ(recv[r][displs[b] + i], send[b][i]) << "rank " << r << " block " << b;
            ASSERT_EQ(recv[r][total], 7u);
        }
    }
}

TEST_P(ScatterGather, AllgatherFixedCount)
{
    int n = GetParam();
    World w(n);
    const size_t count = 3;
    std::vector<std::vector<int8_t>> recv(n, std::vector<int8_t>(count * n));
    w.run([&](int r) {
        int8_t mine[3] = {(int8_t)r, (int8_t)(r + 1), (int8_t)-r};
        EXPECT_EQ(zap_allgather(w.c[r], mine, count, recv[r].data(), ZAP_DT_INT8), ZAP_OK);
    });
    for (int r = 0; r < n; r++)
        for (int b = 0; b < n; b++) {
            ASSERT_EQ(recv[r][b * 3], (int8_t)b);
            ASSERT_EQ(recv[r][b * 3 + 2], (int8_t)-b);
        }
}

INSTANTIATE_TEST_SUITE_P(Ranks, ScatterGather, ::testing::Range(1, 18));

TEST(Scatterv, TooSmallReceiveIsReportedOnEveryRank)
{
    LogCapture log;
    const int n = 4;
    World w(n);
    std::vector<size_t> counts = {4, 4, 9, 4};
    std::vector<ptrdiff_t> displs = {0, 4, 8, 17};
    std::vector<int32_t> send(21, 1);
    std::vector<std::vector<int32_t>> recv(n, std::vector<int32_t>(9));
    std::vector<zap_status_t> st(n);
    w.run([&](int r) {
        st[r] = zap_scatterv(w.c[r], send.data(), counts.data(), displs.data(), recv[r].data(), 4, ZAP_DT_INT32, 0);
    });
    EXPECT_EQ(st[2], ZAP_ERR_INVALID_PARAM);
    for (int r : {0, 1, 3})
        EXPECT_EQ(st[r], ZAP_ERR_MISMATCH) << "rank " << r;
}

TEST(Allgatherv, DifferentCountsArraysAreMismatch)
{
    LogCapture log;
    const int n = 3;
    World w(n);
    std::vector<zap_status_t> st(n);
    std::vector<std::vector<uint8_t>> recv(n, std::vector<uint8_t>(64));
    w.run([&](int r) {
        size_t counts[3] = {2, 2, 2};
        ptrdiff_t displs[3] = {0, 2, 4};
        if (r == 1)
            counts[0] = 3, displs[1] = 3, displs[2] = 5; // rank 1 believes rank 0 sends 3
        uint8_t mine[3] = {1, 2, 3};
        st[r] = zap_allgatherv(w.c[r], mine, counts[r], recv[r].data(), counts, displs, ZAP_DT_UINT8);
    });
    for (int r = 0; r < n; r++)
        EXPECT_EQ(st[r], ZAP_ERR_MISMATCH) << "rank " << r;
}
} // namespace
