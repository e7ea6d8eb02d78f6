// The shared-memory allreduce beyond 8 ranks (allreduce_shm.c): vectors up to
// 1 KiB ride the slots (and small blocking calls their fast form), larger
// ones go through the large area even where a slot would hold them, and both
// give the bytes of the rank-ordered fold ((x0 + x1) + x2) ..., the same on
// every rank. Scan and exscan through the large area, each rank folding one
// block over all ranks (scan_shm_blocks.c) or a pipelined chain
// (scan_shm_chain.c): every rank gets the rank-ordered prefix of a
// non-commutative op, across chunks, in place, and between other large
// calls that rewrite the area. Runs on 9 ranks of one host.
#include <gtest/gtest.h>
#include <cstdint>
#include <algorithm>
#include <cstring>
#include <string>
#include <vector>
#include "mpi_harness.h"
#include "one_host_fixture.h"
extern "C" {
#include "zap/coll.h"
#include "zap/ucp.h"
#include "coll/coll_test.h"
}

ZAP_ONE_HOST_FIXTURE_STORAGE;

namespace {

class ManyRanks : public OneHostComm {
  protected:
    void SetUp() override
    {
        ASSERT_GT(MpiSize(), 8) << "run on more than 8 ranks";
        OneHostComm::SetUp();
    }
    // Rank r's element i: fractions whose float sums round differently in
    // another order.
    static float value(int r, size_t i, int call)
    {
        return 1.0f / static_cast<float>(3 + r) + static_cast<float>((i * 7 + static_cast<size_t>(call)) % 13) * 1e-3f +
               (r % 2 ? 1e7f : -1e7f) / static_cast<float>(1 + (i % 5));
    }
    // count floats, calls times, in place where asked; returns the fast-form
    // calls summed over every rank.
    unsigned long long run(size_t count, int calls, bool in_place)
    {
        int rank = MpiRank(), size = MpiSize();
        unsigned long long before = zap_coll_test_fast_calls(comm_);
        std::vector<float> in(count), out(count), want(count);
        for (int c = 0; c < calls; c++) {
            for (size_t i = 0; i < count; i++) {
                in[i] = value(rank, i, c);
                float acc = value(0, i, c);
                for (int q = 1; q < size; q++)
                    acc += value(q, i, c);
                want[i] = acc;
            }
            if (in_place) {
                out = in;
                EXPECT_EQ(zap_allreduce(comm_, ZAP_IN_PLACE, out.data(), count, ZAP_DT_FLOAT32, ZAP_OP_SUM), ZAP_OK);
            } else {
                EXPECT_EQ(zap_allreduce(comm_, in.data(), out.data(), count, ZAP_DT_FLOAT32, ZAP_OP_SUM), ZAP_OK);
            }
            EXPECT_EQ(std::memcmp(out.data(), want.data(), count * sizeof(float)), 0)
                << count * sizeof(float) << " bytes, call " << c << (in_place ? ", in place" : "");
        }
        unsigned long long fast = zap_coll_test_fast_calls(comm_) - before, total = 0;
        MPI_Allreduce(&fast, &total, 1, MPI_UNSIGNED_LONG_LONG, MPI_SUM, MPI_COMM_WORLD);
        return total;
    }
};

TEST_F(ManyRanks, AllreduceUpTo1KiBRidesTheSlots)
{
    EXPECT_GT(run(256, 32, false), 0u) << "1 KiB: the slots' fast form on some rank";
    run(256, 4, true);
    run(1, 4, false);
}

TEST_F(ManyRanks, AllreduceAbove1KiBGoesThroughTheAreaWithTheSameBytes)
{
    for (size_t count : {size_t(257), size_t(512), size_t(1008)}) {
        EXPECT_EQ(run(count, 32, false), 0u) << count * sizeof(float) << " bytes: no fast form (the slots)";
        EXPECT_EQ(run(count, 4, true), 0u);
    }
}

// An affine map x -> m x + c packed in 64 bits (m low, c high); composing
// them is associative and not commutative, so a fold out of rank order
// gives other bytes.
uint64_t affine(uint32_t m, uint32_t c) { return (uint64_t)c << 32 | m; }
uint64_t compose(uint64_t a, uint64_t b) // a first, then b
{
    uint32_t am = (uint32_t)a, ac = (uint32_t)(a >> 32), bm = (uint32_t)b, bc = (uint32_t)(b >> 32);
    return affine(am * bm, ac * bm + bc);
}
void compose_op(const void *in, void *inout, size_t count, void *)
{
    const uint64_t *a = static_cast<const uint64_t *>(in);
    uint64_t *b = static_cast<uint64_t *>(inout);
    for (size_t i = 0; i < count; i++)
        b[i] = compose(a[i], b[i]);
}
uint64_t element(int r, size_t i, int call)
{
    return affine(3 + 2 * (uint32_t)((r * 7 + i + (size_t)call) % 11), (uint32_t)(r + 1) * 2654435761u ^ (uint32_t)i);
}

// Rank rank's prefix of element i in call call: the fold of ranks 0 to rank
// (exclusive: to rank - 1; rank 0 has none, its result is keep).
uint64_t prefix(int rank, size_t i, int call, bool exclusive, uint64_t keep)
{
    if (exclusive && rank == 0)
        return keep;
    uint64_t acc = element(0, i, call);
    for (int q = 1; q < (exclusive ? rank : rank + 1); q++)
        acc = compose(acc, element(q, i, call));
    return acc;
}

class ScanBlocks : public ManyRanks {
  protected:
    // Whether some rank has failed so far: every rank then stops calling
    // alike (a rank that stopped alone would leave the others waiting).
    bool AnyRankFailed()
    {
        int mine = HasFailure() ? 1 : 0, any = 0;
        MPI_Allreduce(&mine, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
        return any != 0;
    }
    // count elements through scan (exclusive: exscan) with comm, call
    // numbering the data; checks every rank against the fold of ranks 0 to
    // rank (exclusive: to rank - 1; rank 0's recvbuf untouched).
    void check(zap_comm_t *comm, zap_op_t op, size_t count, bool exclusive, bool in_place, int call)
    {
        int rank = MpiRank();
        std::vector<uint64_t> in(count), out(count, 0x5a5a), want(count);
        for (size_t i = 0; i < count; i++) {
            in[i] = element(rank, i, call);
            want[i] = prefix(rank, i, call, exclusive, in_place ? in[i] : 0x5a5a);
        }
        if (in_place)
            out = in;
        const void *send = in_place ? ZAP_IN_PLACE : in.data();
        zap_status_t st = exclusive ? zap_exscan(comm, send, out.data(), count, ZAP_DT_UINT64, op)
                                    : zap_scan(comm, send, out.data(), count, ZAP_DT_UINT64, op);
        ASSERT_EQ(st, ZAP_OK);
        size_t bad = 0;
        while (bad < count && out[bad] == want[bad])
            bad++;
        EXPECT_EQ(bad, count) << (exclusive ? "exscan" : "scan") << " of " << count << " elements, call " << call
                              << (in_place ? ", in place" : "") << ": first wrong element";
    }
};

TEST_F(ScanBlocks, PrefixesOfANonCommutativeOpInRankOrder)
{
    zap_op_t op;
    ASSERT_EQ(zap_op_create(compose_op, 0, nullptr, &op), ZAP_OK);
    // Each large-area form forced and moving 32 KiB chunks (the pipeline
    // setting), then each with its own chunks, then the automatic choice.
    for (const char *alg : {"blocks", "chain", "auto"})
      for (bool small_chunks : {true, false}) {
        if (std::string(alg) == "auto" && small_chunks)
            continue;
        zap_comm_params_t p{};
        p.scan_alg = p.exscan_alg = alg;
        p.pipeline_bytes = small_chunks ? 32 << 10 : 0;
        zap_comm_t *comm = nullptr;
        ASSERT_EQ(zap_comm_create_ex(t_, &p, &comm), ZAP_OK);
        zap_comm_attr_t attr{};
        attr.field_mask = ZAP_COMM_ATTR_SHARED_MEMORY;
        ASSERT_EQ(zap_comm_query(comm, &attr), ZAP_OK);
        // Up to four chunks of 32 KiB, as far as the area holds.
        size_t many = std::min((size_t)(128 << 10) - 40, attr.shared_memory_bytes) / sizeof(uint64_t);
        if (small_chunks) {
            ASSERT_GT(many * sizeof(uint64_t), (size_t)(96 << 10)) << "the area holds a vector of several chunks";
        }
        // The chain wraps around its area: twice the area, and a bit.
        size_t wraps = std::string(alg) == "chain" ? 2 * attr.shared_memory_bytes / sizeof(uint64_t) + 77 : 1;
        int call = 0;
        // 5 elements: fewer than the ranks, most own an empty block.
        for (size_t count : {size_t(5), size_t(513), size_t(4099), many, wraps})
            for (bool in_place : {false, true})
                for (bool exclusive : {false, true})
                    if (!AnyRankFailed())
                        check(comm, op, count, exclusive, in_place, call++);
        zap_comm_destroy(comm);
        ASSERT_FALSE(AnyRankFailed()) << alg << (small_chunks ? ", 32 KiB chunks" : "");
      }
    zap_op_destroy(op);
}

// Rank r + 1 reads rank r's input area after rank r has published its own
// part (exscan of both forms, scan of the chain); large calls right after
// rewrite that area, and a stream of scans runs the chain back to back.
TEST_F(ScanBlocks, LargeCallsAfterwardsReuseTheAreaSafely)
{
    zap_op_t op;
    ASSERT_EQ(zap_op_create(compose_op, 0, nullptr, &op), ZAP_OK);
    std::vector<float> v(64 << 10), w(64 << 10);
    for (const char *alg : {"blocks", "chain"}) {
        ASSERT_EQ(zap_coll_test_force(comm_, "exscan", alg), ZAP_OK);
        ASSERT_EQ(zap_coll_test_force(comm_, "scan", alg), ZAP_OK);
        for (int call = 0; call < 40; call++) {
            check(comm_, op, (size_t)(24 << 10) + (size_t)call, call % 3 != 0, call % 2 == 1, call);
            if (call % 4 == 3) {
                for (size_t i = 0; i < v.size(); i++)
                    v[i] = (float)(MpiRank() + call);
                ASSERT_EQ(zap_allreduce(comm_, v.data(), w.data(), v.size(), ZAP_DT_FLOAT32, ZAP_OP_MAX), ZAP_OK);
                EXPECT_EQ(w[17], (float)(MpiSize() - 1 + call));
            }
            if (AnyRankFailed())
                FAIL() << alg << ", call " << call;
        }
    }
    zap_op_destroy(op);
}

// Non-blocking scans posted together: each takes the area in its turn, and
// a later one rewrites a rank's area only once the ranks reading it for an
// earlier one are done.
TEST_F(ScanBlocks, NonBlockingCallsInFlightTogetherKeepTheirResults)
{
    zap_op_t op;
    ASSERT_EQ(zap_op_create(compose_op, 0, nullptr, &op), ZAP_OK);
    int rank = MpiRank();
    const size_t count = 24 << 10;
    for (const char *alg : {"chain", "blocks"}) {
        ASSERT_EQ(zap_coll_test_force(comm_, "exscan", alg), ZAP_OK);
        ASSERT_EQ(zap_coll_test_force(comm_, "scan", alg), ZAP_OK);
        const int calls = 4;
        std::vector<std::vector<uint64_t>> in(calls, std::vector<uint64_t>(count)),
            out(calls, std::vector<uint64_t>(count, 0x5a5a));
        zap_request_t *req[calls] = {};
        for (int c = 0; c < calls; c++) {
            for (size_t i = 0; i < count; i++)
                in[c][i] = element(rank, i, 100 + c);
            bool exclusive = c % 2 == 0;
            ASSERT_EQ(exclusive ? zap_iexscan(comm_, in[c].data(), out[c].data(), count, ZAP_DT_UINT64, op, &req[c])
                                : zap_iscan(comm_, in[c].data(), out[c].data(), count, ZAP_DT_UINT64, op, &req[c]),
                      ZAP_OK);
        }
        for (int c = 0; c < calls; c++) {
            EXPECT_EQ(zap_request_wait(req[c]), ZAP_OK) << alg << " call " << c;
            zap_request_free(req[c]);
        }
        for (int c = 0; c < calls; c++) {
            bool exclusive = c % 2 == 0;
            size_t bad = count;
            for (size_t i = 0; i < count && bad == count; i++)
                if (out[c][i] != prefix(rank, i, 100 + c, exclusive, 0x5a5a))
                    bad = i;
            EXPECT_EQ(bad, count) << alg << " call " << c << (exclusive ? " (exscan)" : " (scan)")
                                  << ": first wrong element";
        }
        if (AnyRankFailed())
            FAIL() << alg;
    }
    zap_op_destroy(op);
}

}  // namespace
