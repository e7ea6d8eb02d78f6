// The shared-memory allreduce beyond 8 ranks (allreduce_shm.c): vectors up to
// 1 KiB ride the slots (and small blocking calls their fast form), larger
// ones go through the large area even where a slot would hold them, and both
// give the bytes of the rank-ordered fold ((x0 + x1) + x2) ..., the same on
// every rank. Runs on 9 ranks of one host.
#include <gtest/gtest.h>
#include <cstdint>
#include <cstring>
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

}  // namespace
