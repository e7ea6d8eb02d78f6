// The distributed job with threads as ranks (inproc transport): every rank
// count gives the verdict set one rank gives, and failures reach every rank.
#include <thread>
#include "verify_test_util.h"
#include "log_capture.h"
extern "C" {
#include "zap/inproc.h"
#include "verify/verify_impl.h"
}

struct RankOut {
    zap_status_t status = ZAP_ERR_CANCELED;
    zap_verify_result_t res = {};
    std::vector<uint32_t> bitmap;
};

// Runs the job on nranks threads; the root holds `batch`.
static std::vector<RankOut> run_job(int nranks, const std::vector<uint8_t> &batch, zap_verify_params_t p)
{
    zap_inproc_world_t *world = nullptr;
    EXPECT_EQ(zap_inproc_world_create(nranks, nullptr, &world), ZAP_OK);
    std::vector<RankOut> out(nranks);
    std::vector<std::thread> th;
    for (int r = 0; r < nranks; r++)
        th.emplace_back([&, r] {
            zap_transport_t *t;
            zap_comm_t *comm;
            if (zap_inproc_transport(world, r, &t) != ZAP_OK || zap_comm_create(t, &comm) != ZAP_OK)
                return;
            out[r].status = zap_verify_job(comm, r == p.root ? batch.data() : nullptr,
                                           r == p.root ? batch.size() : 0, &p, &out[r].res);
            if (out[r].res.bitmap)
                out[r].bitmap.assign(out[r].res.bitmap, out[r].res.bitmap + out[r].res.bitmap_words);
            zap_comm_destroy(comm);
        });
    for (auto &t : th)
        t.join();
    zap_inproc_world_destroy(world);
    return out;
}

static void cleanup(std::vector<RankOut> &v)
{
    for (auto &o : v)
        zap_verify_result_cleanup(&o.res);
}

struct JobCase {
    int variable;
    zap_verify_mode_t mode;
    zap_verify_combine_t combine;
};

class JobRanks : public ::testing::TestWithParam<JobCase> {};

TEST_P(JobRanks, OneToFourRanksGiveTheVerdictSetOfOneRank)
{
    const JobCase c = GetParam();
    GenBatch b = make_batch(1000, 0.3, 31 + c.variable, c.variable);
    zap_verify_params_t p = {};
    p.verifier = ZAP_VERIFIER_CPU;
    p.threads = 1;
    p.mode = c.mode;
    p.combine = c.combine;
    auto one = run_job(1, b.bytes, p);
    ASSERT_EQ(one[0].status, ZAP_OK);
    EXPECT_EQ(one[0].bitmap, b.expected);
    for (int R = 2; R <= 4; R++) {
        for (int root : {0, R - 1}) {
            p.root = root;
            auto many = run_job(R, b.bytes, p);
            for (int r = 0; r < R; r++) {
                ASSERT_EQ(many[r].status, ZAP_OK) << "R " << R << " rank " << r;
                EXPECT_EQ(many[r].bitmap, one[0].bitmap) << "R " << R << " rank " << r;
                EXPECT_EQ(memcmp(many[r].res.digest, one[0].res.digest, 32), 0);
                EXPECT_EQ(many[r].res.valid + many[r].res.invalid, 1000u);
                EXPECT_EQ(many[r].res.nranks, R);
                uint64_t items = 0;
                for (int q = 0; q < R; q++)
                    items += many[r].res.ranks[q].items;
                EXPECT_EQ(items, 1000u);
            }
            cleanup(many);
        }
    }
    cleanup(one);
}

INSTANTIATE_TEST_SUITE_P(Modes, JobRanks,
                         ::testing::Values(JobCase{0, ZAP_VERIFY_SCATTER, ZAP_COMBINE_OR_ALLREDUCE},
                                           JobCase{1, ZAP_VERIFY_SCATTER, ZAP_COMBINE_OR_ALLREDUCE},
                                           JobCase{0, ZAP_VERIFY_BCAST, ZAP_COMBINE_OR_ALLREDUCE},
                                           JobCase{1, ZAP_VERIFY_BCAST, ZAP_COMBINE_ALLGATHERV},
                                           JobCase{0, ZAP_VERIFY_SCATTER, ZAP_COMBINE_ALLGATHERV},
                                           JobCase{1, ZAP_VERIFY_SCATTER, ZAP_COMBINE_ALLGATHERV}),
                         [](const ::testing::TestParamInfo<JobCase> &i) {
                             return std::string(i.param.variable ? "Variable" : "Fixed") +
                                    (i.param.mode == ZAP_VERIFY_SCATTER ? "Scatter" : "Bcast") +
                                    (i.param.combine == ZAP_COMBINE_OR_ALLREDUCE ? "Or" : "Allgather");
                         });

TEST(Job, MoreRanksThanItems)
{
    GenBatch b = make_batch(5, 0.4, 41, 1);
    zap_verify_params_t p = {};
    p.verifier = ZAP_VERIFIER_CPU;
    auto out = run_job(4, b.bytes, p);
    for (int r = 0; r < 4; r++) {
        ASSERT_EQ(out[r].status, ZAP_OK);
        EXPECT_EQ(out[r].bitmap, b.expected);
    }
    EXPECT_EQ(out[0].res.ranks[0].items, 0u);
    EXPECT_EQ(out[0].res.ranks[3].items, 5u);
    cleanup(out);
}

TEST(Job, RankWithAnEmptyShardStillAgrees)
{
    // 40 items over 3 ranks: boundaries 13 -> 0 and 26 -> 0, so ranks 0 and 1
    // have nothing and rank 2 verifies all 40.
    GenBatch b = make_batch(40, 0.5, 42, 0);
    zap_verify_params_t p = {};
    p.verifier = ZAP_VERIFIER_CPU;
    p.root = 1;
    auto out = run_job(3, b.bytes, p);
    for (int r = 0; r < 3; r++) {
        ASSERT_EQ(out[r].status, ZAP_OK);
        EXPECT_EQ(out[r].bitmap, b.expected);
    }
    EXPECT_EQ(out[0].res.ranks[0].items, 0u);
    EXPECT_EQ(out[0].res.ranks[1].items, 0u);
    EXPECT_EQ(out[0].res.ranks[2].items, 40u);
    cleanup(out);
}

TEST(Job, EmptyBatch)
{
    GenBatch b = make_batch(0, 0, 43, 0);
    zap_verify_params_t p = {};
    for (int R = 1; R <= 4; R++) {
        auto out = run_job(R, b.bytes, p);
        for (int r = 0; r < R; r++) {
            ASSERT_EQ(out[r].status, ZAP_OK);
            EXPECT_EQ(out[r].res.n_items, 0u);
            EXPECT_EQ(out[r].res.valid, 0u);
        }
        cleanup(out);
    }
}

TEST(Job, RefusedBatchFailsOnEveryRankWithTheRootsReason)
{
    GenBatch b = make_batch(100, 0, 44, 0);
    b.bytes[64 + 3] ^= 1; // CRC
    zap_verify_params_t p = {};
    LogCapture log;
    auto out = run_job(3, b.bytes, p);
    for (int r = 0; r < 3; r++)
        EXPECT_EQ(out[r].status, ZAP_ERR_CORRUPT) << "rank " << r;
    EXPECT_TRUE(log.contains("crc32c mismatch")) << log.all();
    EXPECT_TRUE(log.contains("the root (rank 0) refused the batch")) << log.all();
    cleanup(out);
}

TEST(Job, VerifierFailureOnOneRankFailsEveryRank)
{
    // gpu is refused without a device; where a device exists, every rank
    // succeeds instead and the test has nothing to show.
    GenBatch b = make_batch(200, 0, 45, 0);
    zap_verify_params_t p = {};
    p.verifier = ZAP_VERIFIER_GPU;
    LogCapture log;
    auto out = run_job(2, b.bytes, p);
    if (out[0].status == ZAP_OK)
        GTEST_SKIP() << "a CUDA device is present: the gpu verifier did not fail";
    for (int r = 0; r < 2; r++)
        EXPECT_EQ(out[r].status, ZAP_ERR_UNSUPPORTED) << "rank " << r;
    cleanup(out);
}

TEST(Job, BadRootIsInvalidParam)
{
    GenBatch b = make_batch(10, 0, 46, 0);
    zap_verify_params_t p = {};
    p.root = 5;
    LogCapture log;
    auto out = run_job(2, b.bytes, p);
    for (int r = 0; r < 2; r++)
        EXPECT_EQ(out[r].status, ZAP_ERR_INVALID_PARAM);
    cleanup(out);
}

TEST(Job, OneRankDisagreeingFailsEveryRankLoudly)
{
    GenBatch b = make_batch(100, 0.2, 47, 0);
    zap_verify_params_t p = {};
    p.verifier = ZAP_VERIFIER_CPU;
    LogCapture log;
    zap_verify_test_flip_rank = 2;
    auto out = run_job(4, b.bytes, p);
    zap_verify_test_flip_rank = -1;
    for (int r = 0; r < 4; r++) {
        EXPECT_EQ(out[r].status, ZAP_ERR_MISMATCH) << "rank " << r;
        ASSERT_NE(out[r].res.ranks, nullptr) << "the result is filled for the report";
        EXPECT_NE(memcmp(out[r].res.ranks[2].digest, out[r].res.ranks[0].digest, 32), 0);
    }
    EXPECT_TRUE(log.contains("VERDICT MISMATCH: rank 2 digest")) << log.all();
    cleanup(out);
}
