// Bad input to the collectives over inproc ranks (docs/bad-input.md, rows C*):
// a rank with wrong arguments gets ZAP_ERR_INVALID_PARAM or
// ZAP_ERR_UNSUPPORTED, ranks whose arguments disagree all get
// ZAP_ERR_MISMATCH, nobody waits forever, and the communicator still gives a
// correct allreduce afterwards with no pool buffer left out.
#include <gtest/gtest.h>
#include <climits>
#include <cstdint>
#include <functional>
#include <vector>
#include "log_capture.h"
#include "rank_threads.h"
extern "C" {
#include "zap/coll.h"
#include "zap/inproc.h"
}

namespace {
struct Ranks : RankWorld {
    explicit Ranks(int nranks = 4) : RankWorld(nranks) {}
    // The state after a refused collective: a correct allreduce, nothing out.
    void expect_intact()
    {
        run([&](int r) {
            int64_t x[3] = {r, 2 * r, 1}, y[3] = {0, 0, 0};
            ASSERT_EQ(zap_allreduce(c[r], x, y, 3, ZAP_DT_INT64, ZAP_OP_SUM), ZAP_OK);
            int64_t s = (int64_t)n * (n - 1) / 2;
            EXPECT_EQ(y[0], s);
            EXPECT_EQ(y[1], 2 * s);
            EXPECT_EQ(y[2], n);
        });
        zap_pool_stats_t s{};
        ASSERT_EQ(zap_pool_stats(zap_transport_pool(t[0]), &s), ZAP_OK);
        EXPECT_EQ(s.buffers_out, 0u);
    }
};

void expect_all(const std::vector<zap_status_t> &st, zap_status_t want)
{
    for (size_t r = 0; r < st.size(); r++)
        EXPECT_EQ(st[r], want) << "rank " << r << ": " << zap_status_string(st[r]);
}
} // namespace

TEST(BadColl, CommCreateWithNullArgumentsIsInvalidParam)
{
    Ranks k(2);
    zap_comm_t *c = nullptr;
    EXPECT_EQ(zap_comm_create(nullptr, &c), ZAP_ERR_INVALID_PARAM);
    EXPECT_EQ(zap_comm_create(k.t[0], nullptr), ZAP_ERR_INVALID_PARAM);
    EXPECT_EQ(c, nullptr);
    EXPECT_EQ(zap_comm_rank(nullptr), -1);
    EXPECT_EQ(zap_comm_size(nullptr), -1);
    k.expect_intact();
}

TEST(BadColl, CollectivesOnNullCommAreInvalidParam)
{
    int64_t x = 1, y = 0;
    zap_request_t *req = nullptr;
    EXPECT_EQ(zap_allreduce(nullptr, &x, &y, 1, ZAP_DT_INT64, ZAP_OP_SUM), ZAP_ERR_INVALID_PARAM);
    EXPECT_EQ(zap_bcast(nullptr, &x, 1, ZAP_DT_INT64, 0), ZAP_ERR_INVALID_PARAM);
    EXPECT_EQ(zap_barrier(nullptr), ZAP_ERR_INVALID_PARAM);
    EXPECT_EQ(zap_iallreduce(nullptr, &x, &y, 1, ZAP_DT_INT64, ZAP_OP_SUM, &req), ZAP_ERR_INVALID_PARAM);
    EXPECT_EQ(req, nullptr);
}

TEST(BadColl, NullRequestPointerIsInvalidParam)
{
    Ranks k(2);
    int64_t x = 1, y = 0;
    EXPECT_EQ(zap_iallreduce(k.c[0], &x, &y, 1, ZAP_DT_INT64, ZAP_OP_SUM, nullptr), ZAP_ERR_INVALID_PARAM);
    EXPECT_EQ(zap_ibcast(k.c[0], &x, 1, ZAP_DT_INT64, 0, nullptr), ZAP_ERR_INVALID_PARAM);
    k.expect_intact();
}

TEST(BadColl, AllreduceOfInvalidDatatypeIsInvalidParamEverywhere)
{
    LogCapture log;
    Ranks k;
    int64_t x[4] = {0}, y[4];
    expect_all(k.each([&](int r) { return zap_allreduce(k.c[r], x, y, 4, ZAP_DT_COUNT, ZAP_OP_SUM); }),
               ZAP_ERR_INVALID_PARAM);
    EXPECT_TRUE(log.contains("invalid datatype"));
    k.expect_intact();
}

TEST(BadColl, AllreduceOfInvalidOpIsInvalidParamEverywhere)
{
    LogCapture log;
    Ranks k;
    int64_t x[4] = {0}, y[4];
    expect_all(k.each([&](int r) { return zap_allreduce(k.c[r], x, y, 4, ZAP_DT_INT64, (zap_op_t)99); }),
               ZAP_ERR_INVALID_PARAM);
    k.expect_intact();
}

TEST(BadColl, BitwiseOpOnFloatsIsUnsupportedEverywhere)
{
    LogCapture log;
    Ranks k;
    float x[4] = {0}, y[4];
    expect_all(k.each([&](int r) { return zap_allreduce(k.c[r], x, y, 4, ZAP_DT_FLOAT32, ZAP_OP_BAND); }),
               ZAP_ERR_UNSUPPORTED);
    EXPECT_EQ(zap_op_supported(ZAP_DT_FLOAT32, ZAP_OP_BXOR), 0);
    k.expect_intact();
}

TEST(BadColl, HugeCountIsInvalidParamEverywhere)
{
    LogCapture log;
    Ranks k;
    int64_t x = 0, y = 0;
    expect_all(k.each([&](int r) { return zap_allreduce(k.c[r], &x, &y, SIZE_MAX / 2, ZAP_DT_INT64, ZAP_OP_SUM); }),
               ZAP_ERR_INVALID_PARAM);
    expect_all(k.each([&](int r) { return zap_bcast(k.c[r], &x, SIZE_MAX / 4, ZAP_DT_INT64, 0); }),
               ZAP_ERR_INVALID_PARAM);
    k.expect_intact();
}

TEST(BadColl, NullBufferOnOneRankIsInvalidThereAndMismatchElsewhere)
{
    LogCapture log;
    Ranks k;
    auto st = k.each([&](int r) {
        int64_t x[8] = {0}, y[8];
        return zap_allreduce(k.c[r], x, r == 2 ? nullptr : y, 8, ZAP_DT_INT64, ZAP_OP_SUM);
    });
    for (int r = 0; r < k.n; r++)
        EXPECT_EQ(st[r], r == 2 ? ZAP_ERR_INVALID_PARAM : ZAP_ERR_MISMATCH) << "rank " << r;
    EXPECT_TRUE(log.contains("NULL buffer with count 8"));
    k.expect_intact();
}

TEST(BadColl, AllreduceCountsThatDifferAreMismatchEverywhere)
{
    LogCapture log;
    Ranks k;
    expect_all(k.each([&](int r) {
        int64_t x[9] = {0}, y[9];
        return zap_allreduce(k.c[r], x, y, r == 1 ? 9 : 8, ZAP_DT_INT64, ZAP_OP_SUM);
    }),
               ZAP_ERR_MISMATCH);
    k.expect_intact();
}

TEST(BadColl, AllreduceDatatypesThatDifferAreMismatchEverywhere)
{
    LogCapture log;
    Ranks k;
    expect_all(k.each([&](int r) {
        int64_t x[8] = {0}, y[8];
        return zap_allreduce(k.c[r], x, y, 8, r == 3 ? ZAP_DT_UINT64 : ZAP_DT_INT64, ZAP_OP_SUM);
    }),
               ZAP_ERR_MISMATCH);
    k.expect_intact();
}

TEST(BadColl, AllreduceOpsThatDifferAreMismatchEverywhere)
{
    LogCapture log;
    Ranks k;
    expect_all(k.each([&](int r) {
        int64_t x[8] = {0}, y[8];
        return zap_allreduce(k.c[r], x, y, 8, ZAP_DT_INT64, r == 0 ? ZAP_OP_MAX : ZAP_OP_SUM);
    }),
               ZAP_ERR_MISMATCH);
    k.expect_intact();
}

TEST(BadColl, BcastRootOutsideCommIsInvalidParamEverywhere)
{
    LogCapture log;
    Ranks k;
    int64_t x[4] = {0};
    expect_all(k.each([&](int r) { return zap_bcast(k.c[r], x, 4, ZAP_DT_INT64, -1); }), ZAP_ERR_INVALID_PARAM);
    expect_all(k.each([&](int r) { return zap_bcast(k.c[r], x, 4, ZAP_DT_INT64, k.n); }), ZAP_ERR_INVALID_PARAM);
    EXPECT_TRUE(log.contains("root 4 is not in [0, 4)"));
    k.expect_intact();
}

TEST(BadColl, BcastRootsThatDifferAreMismatchEverywhere)
{
    LogCapture log;
    Ranks k;
    expect_all(k.each([&](int r) {
        int64_t x[4] = {r, r, r, r};
        return zap_bcast(k.c[r], x, 4, ZAP_DT_INT64, r == 0 ? 0 : 1);
    }),
               ZAP_ERR_MISMATCH);
    k.expect_intact();
}

TEST(BadColl, BcastCountsThatDifferAreMismatchEverywhere)
{
    LogCapture log;
    Ranks k;
    expect_all(k.each([&](int r) {
        int64_t x[5] = {0};
        return zap_bcast(k.c[r], x, r == 2 ? 5 : 4, ZAP_DT_INT64, 0);
    }),
               ZAP_ERR_MISMATCH);
    k.expect_intact();
}

TEST(BadColl, SplitWithNegativeColorIsInvalidParam)
{
    Ranks k(2);
    zap_comm_t *nc = nullptr;
    EXPECT_EQ(zap_comm_split(k.c[0], -5, 0, &nc), ZAP_ERR_INVALID_PARAM);
    EXPECT_EQ(zap_comm_split(k.c[0], 0, 0, nullptr), ZAP_ERR_INVALID_PARAM);
    EXPECT_EQ(nc, nullptr);
    k.expect_intact();
}

// An unknown algorithm name (read when a communicator is made) refuses the
// creation on every rank, naming the variable; the communicators made before
// are intact.
TEST(BadColl, UnknownAllreduceAlgorithmIsInvalidParamEverywhere)
{
    LogCapture log;
    Ranks k;
    {
        ScopedEnv env("ZAP_ALLREDUCE_ALG", "fastest");
        std::vector<zap_comm_t *> c(k.n, nullptr);
        expect_all(k.each([&](int r) { return zap_comm_create(k.t[r], &c[r]); }), ZAP_ERR_INVALID_PARAM);
        for (auto *x : c)
            EXPECT_EQ(x, nullptr);
    }
    EXPECT_TRUE(log.contains("ZAP_ALLREDUCE_ALG")) << log.all();
    k.expect_intact();
}

TEST(BadColl, UnknownBcastAlgorithmIsInvalidParamEverywhere)
{
    LogCapture log;
    Ranks k;
    {
        ScopedEnv env("ZAP_BCAST_ALG", "tree");
        std::vector<zap_comm_t *> c(k.n, nullptr);
        expect_all(k.each([&](int r) { return zap_comm_create(k.t[r], &c[r]); }), ZAP_ERR_INVALID_PARAM);
    }
    EXPECT_TRUE(log.contains("ZAP_BCAST_ALG")) << log.all();
    k.expect_intact();
}

// The same names given as params, and other out-of-range params: refused on
// the rank that passes them, before anything is sent, naming the field.
TEST(BadColl, BadCommParamsAreInvalidParam)
{
    Ranks k(2);
    auto refuses = [&](zap_comm_params_t p, const char *field) {
        LogCapture log;
        zap_comm_t *c = nullptr;
        EXPECT_EQ(zap_comm_create_ex(k.t[0], &p, &c), ZAP_ERR_INVALID_PARAM) << field;
        EXPECT_EQ(c, nullptr);
        EXPECT_TRUE(log.contains(field)) << log.all();
    };
    zap_comm_params_t p{};
    p.allreduce_alg = "fastest";
    refuses(p, "allreduce_alg");
    p = {};
    p.bcast_alg = "tree";
    refuses(p, "bcast_alg");
    p = {};
    p.timeout_s = -5;
    refuses(p, "timeout_s");
    p = {};
    p.pipeline_bytes = 17;
    refuses(p, "pipeline_bytes");
    p = {};
    p.shm_large_bytes = (uint64_t)1 << 40;
    refuses(p, "shm_large_bytes");
    p = {};
    p.shm = (zap_comm_switch_t)7;
    refuses(p, "shm");
    p = {};
    p.gpu_path = (zap_comm_gpu_path_t)9;
    refuses(p, "gpu_path");
    k.expect_intact();
}

TEST(BadColl, AllreduceWithAClosedPeerIsPeerFailed)
{
    LogCapture log;
    Ranks k(2);
    zap_transport_close(k.t[1]);
    int64_t x = 1, y = 0;
    EXPECT_EQ(zap_allreduce(k.c[0], &x, &y, 1, ZAP_DT_INT64, ZAP_OP_SUM), ZAP_ERR_PEER_FAILED);
    EXPECT_EQ(zap_allreduce(k.c[1], &x, &y, 1, ZAP_DT_INT64, ZAP_OP_SUM), ZAP_ERR_CLOSED);
}

static int shared_memory(const zap_comm_t *c)
{
    zap_comm_attr_t a{};
    a.field_mask = ZAP_COMM_ATTR_SHARED_MEMORY;
    return zap_comm_query(c, &a) == ZAP_OK && a.shared_memory;
}

static int single_copy(const zap_comm_t *c)
{
    zap_comm_attr_t a{};
    a.field_mask = ZAP_COMM_ATTR_SINGLE_COPY;
    return zap_comm_query(c, &a) == ZAP_OK && a.single_copy;
}

// A malformed ZAP_COLL_SHM or ZAP_COLL_CMA (both read at creation) fails the
// create call on the rank that reads it, before any exchange, naming the
// variable; the transport is untouched.
static void expect_create_refuses(const char *var, const char *value, int (*reports)(const zap_comm_t *))
{
    Ranks k(2);
    LogCapture log;
    zap_comm_t *c = nullptr;
    {
        ScopedEnv env(var, value);
        EXPECT_EQ(zap_comm_create(k.t[0], &c), ZAP_ERR_INVALID_PARAM);
    }
    EXPECT_EQ(c, nullptr);
    EXPECT_TRUE(log.contains(var)) << log.all();
    EXPECT_FALSE(reports(k.c[0])) << "inproc ranks are threads: no segment";
    k.expect_intact();
}

TEST(BadColl, CommCreateWithUnknownSharedMemorySettingIsInvalidParam)
{
    expect_create_refuses("ZAP_COLL_SHM", "on", shared_memory);
}

TEST(BadColl, CommCreateWithUnknownSingleCopySettingIsInvalidParam)
{
    expect_create_refuses("ZAP_COLL_CMA", "yes", single_copy);
}

// --- reduce, reduce_scatter, gather, alltoall, scan, user ops (C23 - C33) ---

TEST(BadColl, NewCollectivesOnNullCommOrRequestAreInvalidParam)
{
    Ranks k(2);
    int64_t x[4] = {0}, y[8];
    size_t counts[2] = {1, 1};
    ptrdiff_t displs[2] = {0, 1};
    zap_request_t *req = nullptr;
    EXPECT_EQ(zap_reduce(nullptr, x, y, 1, ZAP_DT_INT64, ZAP_OP_SUM, 0), ZAP_ERR_INVALID_PARAM);
    EXPECT_EQ(zap_reduce_scatter(nullptr, x, y, counts, ZAP_DT_INT64, ZAP_OP_SUM), ZAP_ERR_INVALID_PARAM);
    EXPECT_EQ(zap_reduce_scatter_block(nullptr, x, y, 1, ZAP_DT_INT64, ZAP_OP_SUM), ZAP_ERR_INVALID_PARAM);
    EXPECT_EQ(zap_gather(nullptr, x, 1, y, ZAP_DT_INT64, 0), ZAP_ERR_INVALID_PARAM);
    EXPECT_EQ(zap_gatherv(nullptr, x, 1, y, counts, displs, ZAP_DT_INT64, 0), ZAP_ERR_INVALID_PARAM);
    EXPECT_EQ(zap_alltoall(nullptr, x, 1, y, ZAP_DT_INT64), ZAP_ERR_INVALID_PARAM);
    EXPECT_EQ(zap_alltoallv(nullptr, x, counts, displs, y, counts, displs, ZAP_DT_INT64), ZAP_ERR_INVALID_PARAM);
    EXPECT_EQ(zap_scan(nullptr, x, y, 1, ZAP_DT_INT64, ZAP_OP_SUM), ZAP_ERR_INVALID_PARAM);
    EXPECT_EQ(zap_exscan(nullptr, x, y, 1, ZAP_DT_INT64, ZAP_OP_SUM), ZAP_ERR_INVALID_PARAM);
    EXPECT_EQ(zap_ireduce(k.c[0], x, y, 1, ZAP_DT_INT64, ZAP_OP_SUM, 0, nullptr), ZAP_ERR_INVALID_PARAM);
    EXPECT_EQ(zap_ialltoall(k.c[0], x, 1, y, ZAP_DT_INT64, nullptr), ZAP_ERR_INVALID_PARAM);
    EXPECT_EQ(zap_iscan(k.c[0], x, y, 1, ZAP_DT_INT64, ZAP_OP_SUM, nullptr), ZAP_ERR_INVALID_PARAM);
    EXPECT_EQ(req, nullptr);
    k.expect_intact();
}

TEST(BadColl, ReduceAndGatherRootOutsideCommIsInvalidParamEverywhere)
{
    LogCapture log;
    Ranks k;
    int64_t x[4] = {0}, y[16];
    for (int root : {-1, 4}) {
        expect_all(k.each([&](int r) { return zap_reduce(k.c[r], x, y, 4, ZAP_DT_INT64, ZAP_OP_SUM, root); }),
                   ZAP_ERR_INVALID_PARAM);
        expect_all(k.each([&](int r) { return zap_gather(k.c[r], x, 4, y, ZAP_DT_INT64, root); }),
                   ZAP_ERR_INVALID_PARAM);
    }
    EXPECT_TRUE(log.contains("root 4 is not in [0, 4)"));
    k.expect_intact();
}

TEST(BadColl, InPlaceOffTheRootIsInvalidThereAndMismatchElsewhere)
{
    LogCapture log;
    Ranks k;
    int64_t x[4] = {0}, y[16];
    auto st = k.each([&](int r) { return zap_reduce(k.c[r], r == 3 ? ZAP_IN_PLACE : x, y, 4, ZAP_DT_INT64, ZAP_OP_SUM, 0); });
    for (int r = 0; r < k.n; r++)
        EXPECT_EQ(st[r], r == 3 ? ZAP_ERR_INVALID_PARAM : ZAP_ERR_MISMATCH) << "rank " << r;
    st = k.each([&](int r) { return zap_gather(k.c[r], r == 1 ? ZAP_IN_PLACE : x, 4, y, ZAP_DT_INT64, 0); });
    for (int r = 0; r < k.n; r++)
        EXPECT_EQ(st[r], r == 1 ? ZAP_ERR_INVALID_PARAM : ZAP_ERR_MISMATCH) << "rank " << r;
    EXPECT_TRUE(log.contains("ZAP_IN_PLACE is for the root"));
    k.expect_intact();
}

TEST(BadColl, ReduceNullRecvbufOnTheRootIsInvalidThereAndMismatchElsewhere)
{
    LogCapture log;
    Ranks k;
    int64_t x[4] = {0}, y[4];
    auto st = k.each([&](int r) { return zap_reduce(k.c[r], x, r == 2 ? nullptr : y, 4, ZAP_DT_INT64, ZAP_OP_SUM, 2); });
    for (int r = 0; r < k.n; r++)
        EXPECT_EQ(st[r], r == 2 ? ZAP_ERR_INVALID_PARAM : ZAP_ERR_MISMATCH) << "rank " << r;
    k.expect_intact();
}

TEST(BadColl, MissingCountArraysAreInvalidParam)
{
    LogCapture log;
    Ranks k;
    int64_t x[16] = {0}, y[16];
    size_t counts[4] = {1, 1, 1, 1};
    ptrdiff_t displs[4] = {0, 1, 2, 3};
    expect_all(k.each([&](int r) { return zap_reduce_scatter(k.c[r], x, y, nullptr, ZAP_DT_INT64, ZAP_OP_SUM); }),
               ZAP_ERR_INVALID_PARAM);
    expect_all(k.each([&](int r) { return zap_alltoallv(k.c[r], x, counts, displs, y, nullptr, displs, ZAP_DT_INT64); }),
               ZAP_ERR_INVALID_PARAM);
    // gatherv: only the root needs them
    auto st = k.each([&](int r) { return zap_gatherv(k.c[r], x, 1, y, nullptr, nullptr, ZAP_DT_INT64, 0); });
    for (int r = 0; r < k.n; r++)
        EXPECT_EQ(st[r], r == 0 ? ZAP_ERR_INVALID_PARAM : ZAP_ERR_MISMATCH) << "rank " << r;
    EXPECT_TRUE(log.contains("counts"));
    k.expect_intact();
}

TEST(BadColl, OpNotDefinedOnTheTypeIsUnsupportedEverywhere)
{
    LogCapture log;
    Ranks k;
    int64_t x[4] = {0}, y[16];
    expect_all(k.each([&](int r) { return zap_reduce(k.c[r], x, y, 4, ZAP_DT_INT64, ZAP_OP_MINLOC, 0); }),
               ZAP_ERR_UNSUPPORTED);
    expect_all(k.each([&](int r) { return zap_scan(k.c[r], x, y, 2, ZAP_DT_DOUBLE_INT, ZAP_OP_SUM); }),
               ZAP_ERR_UNSUPPORTED);
    expect_all(k.each([&](int r) { return zap_reduce_scatter_block(k.c[r], x, y, 1, ZAP_DT_FLOAT64, ZAP_OP_LAND); }),
               ZAP_ERR_UNSUPPORTED);
    EXPECT_TRUE(log.contains("is not defined on datatype"));
    k.expect_intact();
}

TEST(BadColl, HugeCountsOfTheNewCollectivesAreInvalidParamEverywhere)
{
    LogCapture log;
    Ranks k;
    int64_t x = 0, y = 0;
    expect_all(k.each([&](int r) { return zap_reduce(k.c[r], &x, &y, SIZE_MAX / 2, ZAP_DT_INT64, ZAP_OP_SUM, 0); }),
               ZAP_ERR_INVALID_PARAM);
    expect_all(k.each([&](int r) { return zap_reduce_scatter_block(k.c[r], &x, &y, SIZE_MAX / 8, ZAP_DT_INT64, ZAP_OP_SUM); }),
               ZAP_ERR_INVALID_PARAM);
    expect_all(k.each([&](int r) { return zap_alltoall(k.c[r], &x, SIZE_MAX / 16, &y, ZAP_DT_INT64); }),
               ZAP_ERR_INVALID_PARAM);
    expect_all(k.each([&](int r) { return zap_gather(k.c[r], &x, SIZE_MAX / 2, &y, ZAP_DT_INT64, 0); }),
               ZAP_ERR_INVALID_PARAM);
    expect_all(k.each([&](int r) { return zap_exscan(k.c[r], &x, &y, SIZE_MAX / 2, ZAP_DT_INT64, ZAP_OP_SUM); }),
               ZAP_ERR_INVALID_PARAM);
    k.expect_intact();
}

void noop_op(const void *, void *, size_t, void *) {}

TEST(BadColl, UserOpCreateRefusesNullAndADestroyedOpIsInvalidParam)
{
    LogCapture log;
    zap_op_t op = ZAP_OP_SUM;
    EXPECT_EQ(zap_op_create(nullptr, 1, nullptr, &op), ZAP_ERR_INVALID_PARAM);
    EXPECT_EQ(zap_op_create(noop_op, 1, nullptr, nullptr), ZAP_ERR_INVALID_PARAM);
    EXPECT_EQ(op, ZAP_OP_SUM); // untouched
    zap_op_t live = ZAP_OP_SUM, gone = ZAP_OP_SUM;
    ASSERT_EQ(zap_op_create(noop_op, 1, nullptr, &live), ZAP_OK);
    ASSERT_EQ(zap_op_create(noop_op, 1, nullptr, &gone), ZAP_OK);
    zap_op_destroy(gone);
    Ranks k;
    int64_t x[4] = {0}, y[4];
    expect_all(k.each([&](int r) { return zap_allreduce(k.c[r], x, y, 4, ZAP_DT_INT64, gone); }), ZAP_ERR_INVALID_PARAM);
    EXPECT_TRUE(log.contains("does not exist"));
    zap_op_destroy(live);
    k.expect_intact();
}

TEST(BadColl, UnknownNewCollectiveAlgorithmsAreInvalidParam)
{
    LogCapture log;
    RankWorld w(1, false);
    const char *zap_comm_params_t::*fields[] = {&zap_comm_params_t::reduce_alg,   &zap_comm_params_t::reduce_scatter_alg,
                                                &zap_comm_params_t::gather_alg,   &zap_comm_params_t::alltoall_alg,
                                                &zap_comm_params_t::scan_alg,     &zap_comm_params_t::exscan_alg};
    for (auto f : fields) {
        zap_comm_params_t p{};
        p.*f = "fastest";
        zap_comm_t *c = nullptr;
        EXPECT_EQ(zap_comm_create_ex(w.t[0], &p, &c), ZAP_ERR_INVALID_PARAM);
        EXPECT_EQ(c, nullptr);
    }
    EXPECT_TRUE(log.contains("unknown reduce algorithm 'fastest'"));
    EXPECT_TRUE(log.contains("unknown exscan algorithm 'fastest'"));
}
