// The verification job between processes (UCX transport under mpirun): for
// 1 to 4 ranks every rank ends with the verdict set that libsodium gives on
// one thread of this process (computed independently by each rank from the
// same seeded batch), and failures reach every rank.
#include <gtest/gtest.h>
#include <cstring>
#include <vector>
#include "mpi_harness.h"
extern "C" {
#include "zap/ucp.h"
#include "zap/verify.h"
#include "verify/batch_gen.h"
#include "verify/job.h"
#include "verify/verify_impl.h"
}

namespace {

struct Batch {
    std::vector<uint8_t> bytes;
    std::vector<uint32_t> reference; // libsodium, one thread, whole batch
};

// Every rank builds the same batch from the seed; only the root's copy is
// handed to the job.
Batch make(uint64_t n, uint64_t seed, int variable)
{
    zap_gen_params_t p = {};
    p.items = n;
    p.keys = 5;
    p.invalid_fraction = 0.3;
    p.seed = seed;
    p.variable = variable;
    p.max_msg_len = 200;
    p.threads = 1;
    p.batch_id = seed;
    zap_batch_layout_t l;
    EXPECT_EQ(zap_gen_layout(&p, &l), ZAP_OK);
    Batch b;
    b.bytes.assign(l.total_bytes, 0);
    EXPECT_EQ(zap_gen_batch(&p, b.bytes.data(), b.bytes.size(), nullptr, nullptr), ZAP_OK);
    b.reference.assign((n + 31) / 32, 0);
    zap_batch_view_t v;
    EXPECT_EQ(zap_batch_parse(b.bytes.data(), b.bytes.size(), 0, &v, nullptr, nullptr, 0), ZAP_OK);
    for (uint64_t i = 0; i < n; i++) {
        const uint8_t *rec = v.records + i * v.stride;
        const uint8_t *msg = variable ? v.blob + zap_get_le32(rec + 96) : rec + 96;
        uint64_t len = variable ? zap_get_le32(rec + 100) : 32;
        if (zap_verify_ed25519_one(rec, rec + 32, msg, len))
            b.reference[i / 32] |= 1u << (i % 32);
    }
    if (MpiRank() == 0)
        printf("[ seed %llu ] %llu items, %s messages\n", (unsigned long long)seed, (unsigned long long)n,
               variable ? "variable" : "fixed");
    return b;
}

// One transport and communicator for the whole suite: created once after
// MPI_Init, closed once at the end (every rank past a barrier first).
class UcpEnv : public ::testing::Environment {
  public:
    void SetUp() override
    {
        ASSERT_EQ(zap_ucp_transport_create(MPI_COMM_WORLD, nullptr, &t), ZAP_OK);
        ASSERT_EQ(zap_comm_create(t, &comm), ZAP_OK);
    }
    void TearDown() override
    {
        zap_comm_destroy(comm);
        MPI_Barrier(MPI_COMM_WORLD);
        zap_transport_close(t);
    }
    static zap_transport_t *t;
    static zap_comm_t *comm;
};
zap_transport_t *UcpEnv::t = nullptr;
zap_comm_t *UcpEnv::comm = nullptr;
::testing::Environment *const ucp_env = ::testing::AddGlobalTestEnvironment(new UcpEnv);

class VerifyJob : public ::testing::Test {
  protected:
    void SetUp() override
    {
        comm_ = UcpEnv::comm;
        ASSERT_NE(comm_, nullptr);
    }
    zap_status_t run(const Batch &b, zap_verify_params_t p, zap_verify_result_t *r,
                     const zap_verify_hooks_t *hooks = nullptr)
    {
        bool root = MpiRank() == p.root;
        return zap_verify_job_hooked(comm_, root ? b.bytes.data() : nullptr, root ? b.bytes.size() : 0, &p, hooks,
                                     r);
    }
    void expect_reference(const Batch &b, zap_verify_params_t p)
    {
        zap_verify_result_t r = {};
        ASSERT_EQ(run(b, p, &r), ZAP_OK);
        std::vector<uint32_t> got(r.bitmap, r.bitmap + r.bitmap_words);
        EXPECT_EQ(got, b.reference);
        EXPECT_EQ(r.nranks, MpiSize());
        uint64_t valid = 0;
        for (uint32_t w : b.reference)
            valid += (uint64_t)__builtin_popcount(w);
        EXPECT_EQ(r.valid, valid);
        zap_verify_result_cleanup(&r);
    }
    zap_comm_t *comm_ = nullptr;
};

TEST_F(VerifyJob, ScatterFixedMatchesLibsodium)
{
    Batch b = make(700, 1, 0);
    zap_verify_params_t p = {};
    p.verifier = ZAP_VERIFIER_CPU;
    expect_reference(b, p);
}

TEST_F(VerifyJob, ScatterVariableFromTheLastRankMatchesLibsodium)
{
    Batch b = make(700, 2, 1);
    zap_verify_params_t p = {};
    p.verifier = ZAP_VERIFIER_CPU;
    p.root = MpiSize() - 1;
    expect_reference(b, p);
}

TEST_F(VerifyJob, RootTakesTheLastSegmentsOfASlowNeighbour)
{
    // The root's neighbour sleeps 80 ms before each segment: the root takes
    // the segments next to its shard, the ranges still tile the batch, and
    // every rank ends with libsodium's verdicts (root first and last).
    Batch b = make(1200, 9, 1);
    const int R = MpiSize();
    for (int root : {0, R - 1}) {
        zap_verify_params_t p = {};
        p.verifier = ZAP_VERIFIER_CPU;
        p.threads = 1;
        p.segment_bytes = 1024;
        p.root = root;
        p.combine = ZAP_COMBINE_ALLGATHERV;
        zap_verify_hooks_t hooks = {};
        hooks.slow_rank = R > 1 ? (root + 1 < R ? root + 1 : root - 1) : -1;
        hooks.slow_seconds = 0.08;
        zap_verify_result_t r = {};
        zap_status_t st = run(b, p, &r, &hooks);
        ASSERT_EQ(st, ZAP_OK);
        std::vector<uint32_t> got(r.bitmap, r.bitmap + r.bitmap_words);
        EXPECT_EQ(got, b.reference);
        uint64_t end = 0;
        for (int q = 0; q < R; q++) {
            EXPECT_EQ(r.ranks[q].first, end) << "rank " << q;
            end += r.ranks[q].items;
        }
        EXPECT_EQ(end, 1200u);
        uint64_t f, c;
        zap_verify_shard(1200, R, root, &f, &c);
        if (R > 1) {
            EXPECT_GT(r.ranks[root].items, c) << "root " << root;
        }
        zap_verify_result_cleanup(&r);
    }
}

TEST_F(VerifyJob, BcastWithAllgathervMatchesLibsodium)
{
    Batch b = make(500, 3, 1);
    zap_verify_params_t p = {};
    p.verifier = ZAP_VERIFIER_CPU;
    p.mode = ZAP_VERIFY_BCAST;
    p.combine = ZAP_COMBINE_ALLGATHERV;
    expect_reference(b, p);
}

TEST_F(VerifyJob, AutoVerifierMatchesLibsodium)
{
    Batch b = make(300, 4, 0);
    zap_verify_params_t p = {};
    p.verifier = ZAP_VERIFIER_AUTO;
    expect_reference(b, p);
}

TEST_F(VerifyJob, MoreRanksThanItems)
{
    Batch b = make(3, 5, 1);
    zap_verify_params_t p = {};
    expect_reference(b, p);
}

TEST_F(VerifyJob, RanksWithEmptyShards)
{
    Batch b = make(40, 6, 0); // all 40 items land on the last rank
    zap_verify_params_t p = {};
    expect_reference(b, p);
}

TEST_F(VerifyJob, EmptyBatch)
{
    Batch b = make(0, 7, 0);
    zap_verify_params_t p = {};
    zap_verify_result_t r = {};
    ASSERT_EQ(run(b, p, &r), ZAP_OK);
    EXPECT_EQ(r.n_items, 0u);
    zap_verify_result_cleanup(&r);
}

TEST_F(VerifyJob, RefusedBatchFailsEveryRank)
{
    Batch b = make(100, 8, 0);
    b.bytes[64 + 10] ^= 1;
    MpiExpectLog("crc32c mismatch");
    MpiExpectLog("refused the batch");
    zap_verify_params_t p = {};
    zap_verify_result_t r = {};
    EXPECT_EQ(run(b, p, &r), ZAP_ERR_CORRUPT);
}

} // namespace
