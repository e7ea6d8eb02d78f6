// The GPU-resident path's protocol (core/coll/gpu: rounds, decisions,
// fallbacks, segment arithmetic, reduction order) on any machine: the device
// side is replaced by a host-memory stand-in (stage_fake.c), so these cases
// run where there is no GPU. test_coll_gpu runs the real device side.
#include <gtest/gtest.h>
#include <cstdlib>
#include <cstring>
#include <vector>
#include "coll/coll_harness.h"
#include "coll/stage_fake.h"
extern "C" {
#include "coll/reduce/reduce.h"
#include "coll/gpu/gpu.h"
#include "cuda_coll.h"
}

using namespace colltest;

namespace {

// The communicator settings these cases steer the path with.
Params ipc() { return Params().gpu(ZAP_COMM_GPU_PATH_IPC); }

std::vector<uint8_t> ordered_reference(zap_dtype_t dt, zap_op_t op, const std::vector<std::vector<uint8_t>> &in,
                                       size_t count)
{
    std::vector<uint8_t> acc(in[0]);
    for (size_t r = 1; r < in.size(); r++)
        zap_reduce_cpu(dt, op, acc.data(), acc.data(), in[r].data(), count);
    return acc;
}

void fill_any(zap_dtype_t dt, int r, uint64_t seed, void *p, size_t count)
{
    for (size_t i = 0; i < count; i++) {
        uint64_t h = mix(seed * 1000003 + (uint64_t)r * 7919 + i);
        double v = ((double)(h >> 11) / (double)(1ull << 53) - 0.5) * 3.0;
        switch (dt) {
        case ZAP_DT_FLOAT16: ((uint16_t *)p)[i] = zap_float_to_half((float)v); break;
        case ZAP_DT_BFLOAT16: ((uint16_t *)p)[i] = zap_float_to_bf16((float)v); break;
        case ZAP_DT_FLOAT32: ((float *)p)[i] = (float)v; break;
        case ZAP_DT_FLOAT64: ((double *)p)[i] = v; break;
        default: std::memcpy((uint8_t *)p + i * dsize(dt), &h, dsize(dt)); break;
        }
    }
}

struct Counts {
    uint64_t done, fb;
    Counts() { zap_stage_counts(&done, &fb); }
};

void allreduce_case(const Params &prm, int n, zap_dtype_t dt, zap_op_t op, size_t count, bool in_place)
{
    World w(n, prm);
    size_t bytes = count * dsize(dt);
    std::vector<std::vector<uint8_t>> in(n, std::vector<uint8_t>(bytes));
    for (int r = 0; r < n; r++)
        fill_any(dt, r, 17 + count, in[r].data(), count);
    std::vector<uint8_t> want = ordered_reference(dt, op, in, count);
    std::vector<std::vector<uint8_t>> out(n, std::vector<uint8_t>(bytes + 1));
    w.run([&](int r) {
        std::vector<uint8_t> src(in[r]);
        if (in_place)
            std::memcpy(out[r].data(), src.data(), bytes);
        EXPECT_EQ(ZAP_OK, zap_allreduce(w.c[r], in_place ? ZAP_IN_PLACE : src.data(), out[r].data(), count, dt, op));
    });
    for (int r = 0; r < n; r++)
        EXPECT_EQ(0, std::memcmp(want.data(), out[r].data(), bytes))
            << "rank " << r << "/" << n << " dt " << dt << " op " << op << " count " << count;
    EXPECT_EQ(0, zap_fake_stage_held());
}

TEST(StageProtocol, AllreduceTypesOpsRanksAndSizes)
{
    Params prm = ipc().allreduce("ring");
    Counts before;
    uint64_t expect = 0;
    for (zap_dtype_t dt = ZAP_DT_INT8; dt < ZAP_DT_COUNT; dt = (zap_dtype_t)(dt + 1))
        for (int o = 0; o < ZAP_OP_COUNT; o++)
            if (zap_reduce_supported(dt, (zap_op_t)o)) {
                allreduce_case(prm, 3, dt, (zap_op_t)o, 1001, false);
                expect += 3;
            }
    for (int n = 2; n <= 8; n++)
        for (size_t count : {(size_t)1, (size_t)2, (size_t)7, (size_t)8, (size_t)9, (size_t)4099}) {
            allreduce_case(prm, n, ZAP_DT_FLOAT32, ZAP_OP_SUM, count, count % 2 == 1);
            expect += (uint64_t)n;
        }
    Counts after;
    EXPECT_EQ(expect, after.done - before.done);
    EXPECT_EQ(before.fb, after.fb);
}

// With ZAP_ALLREDUCE_ALG=direct the argument exchange is flat
// (allreduce_direct.c): the small vectors it carries stay on the host and
// match the rank-ordered reference.
TEST(StageProtocol, ForcedDirectKeepsSmallVectorsOnTheHost)
{
    Params prm = ipc().allreduce("direct");
    Counts c1;
    for (int n = 3; n <= 8; n++)
        allreduce_case(prm, n, ZAP_DT_FLOAT32, ZAP_OP_SUM, 7, n % 2 == 1);
    Counts c2;
    EXPECT_EQ(c1.done, c2.done);
}

// The direct algorithm reduces in rank order, ((x0 op x1) op x2) ..., on
// every rank: bit for bit the ordered reference, floats included.
TEST(StageProtocol, DirectIsTheRankOrderedReductionBitForBit)
{
    Params prm = Params().gpu(ZAP_COMM_GPU_PATH_OFF).allreduce("direct");
    for (int n : {1, 2, 5, 9, 17}) {
        allreduce_case(prm, n, ZAP_DT_FLOAT32, ZAP_OP_SUM, 257, false);
        allreduce_case(prm, n, ZAP_DT_FLOAT16, ZAP_OP_SUM, 33, true);
        allreduce_case(prm, n, ZAP_DT_BFLOAT16, ZAP_OP_PROD, 5, false);
        allreduce_case(prm, n, ZAP_DT_FLOAT64, ZAP_OP_SUM, 1000, false);
    }
}

TEST(StageProtocol, AutoUsesThePathFromTheThreshold)
{
    Params prm = Params().gpu(ZAP_COMM_GPU_PATH_AUTO).gpu_min(64 << 10);
    Counts c0;
    allreduce_case(prm, 2, ZAP_DT_FLOAT32, ZAP_OP_SUM, 16383, false); // < 64 KiB: host path
    Counts c1;
    EXPECT_EQ(c0.done, c1.done);
    allreduce_case(prm, 2, ZAP_DT_FLOAT32, ZAP_OP_SUM, 16384, false);
    Counts c2;
    EXPECT_EQ(c1.done + 2, c2.done);
}

TEST(StageProtocol, BcastEveryRoot)
{
    Params prm = ipc().bcast("binomial"); // the path declines under rd, chosen for small messages
    Counts before;
    uint64_t expect = 0;
    for (int n : {2, 3, 4, 7})
        for (size_t bytes : {(size_t)1, (size_t)1000, (size_t)100003})
            for (int root = 0; root < n; root++) {
                World w(n, prm);
                std::vector<uint8_t> data(bytes);
                fill_any(ZAP_DT_UINT8, root, bytes, data.data(), bytes);
                w.run([&](int r) {
                    std::vector<uint8_t> b(bytes, 0xa5);
                    if (r == root)
                        b = data;
                    EXPECT_EQ(ZAP_OK, zap_bcast(w.c[r], b.data(), bytes, ZAP_DT_UINT8, root));
                    EXPECT_EQ(data, b) << "rank " << r << " root " << root;
                });
                expect += (uint64_t)n;
            }
    Counts after;
    EXPECT_EQ(expect, after.done - before.done);
    EXPECT_EQ(0, zap_fake_stage_held());
}

// A rank that cannot get a slot, or cannot open a peer's, makes every rank
// run the host algorithm; results stay right and no slot stays held.
TEST(StageProtocol, FailuresFallBackTogether)
{
    for (int which = 0; which < 2; which++) {
        for (bool bcast : {false, true}) {
            Counts before;
            zap_fake_stage_fail(which == 0 ? 1 : 0, which == 1 ? 1 : 0);
            if (bcast) {
                World w(3, ipc());
                std::vector<uint8_t> data(70001);
                fill_any(ZAP_DT_UINT8, 0, 9, data.data(), data.size());
                w.run([&](int r) {
                    std::vector<uint8_t> b(data.size(), 0);
                    if (r == 1)
                        b = data;
                    EXPECT_EQ(ZAP_OK, zap_bcast(w.c[r], b.data(), b.size(), ZAP_DT_UINT8, 1));
                    EXPECT_EQ(data, b) << "rank " << r;
                });
            } else {
                allreduce_case(ipc(), 3, ZAP_DT_INT32, ZAP_OP_SUM, 70001, false);
            }
            zap_fake_stage_fail(0, 0);
            Counts after;
            EXPECT_EQ(before.done, after.done) << "which " << which << " bcast " << bcast;
            EXPECT_EQ(before.fb + 3, after.fb) << "which " << which << " bcast " << bcast;
            EXPECT_EQ(0, zap_fake_stage_held());
        }
    }
}

// A rank whose buffer the device side cannot move votes no in the argument
// header: every rank runs the host algorithm without any further message
// (no slot is even taken), and results stay right.
TEST(StageProtocol, ANoVoteFallsBackBeforeAnyExchange)
{
    for (int n : {3, 4, 5})
        for (bool bcast : {false, true}) {
            World w(n, ipc());
            Counts before;
            int acquires = zap_fake_stage_acquires();
            zap_fake_stage_refuse_move(1); // one rank's buffer, whichever asks first
            if (bcast) {
                std::vector<uint8_t> data(65537);
                fill_any(ZAP_DT_UINT8, 2, 4, data.data(), data.size());
                w.run([&](int r) {
                    std::vector<uint8_t> b(data.size(), 0);
                    if (r == 2)
                        b = data;
                    EXPECT_EQ(ZAP_OK, zap_bcast(w.c[r], b.data(), b.size(), ZAP_DT_UINT8, 2));
                    EXPECT_EQ(data, b) << "rank " << r;
                });
            } else {
                allreduce_case(ipc(), n, ZAP_DT_INT64, ZAP_OP_SUM, 12345, false); // exact: the host order differs
            }
            Counts after;
            EXPECT_EQ(before.done, after.done) << n << " ranks, bcast " << bcast;
            EXPECT_EQ(before.fb + (uint64_t)n, after.fb) << n << " ranks, bcast " << bcast;
            EXPECT_EQ(acquires, zap_fake_stage_acquires()) << "a slot was taken after a no vote";
        }
}

TEST(StageProtocol, OutstandingOperationsAndMismatch)
{
    const size_t count = 5001;
    const int k = 12; // 24 holds on 16 slots: some run on the path, some fall back
    World w(2, ipc());
    w.run([&](int r) {
        std::vector<std::vector<int64_t>> bufs(k, std::vector<int64_t>(count));
        std::vector<zap_request_t *> reqs(k);
        for (int i = 0; i < k; i++)
            for (size_t j = 0; j < count; j++)
                bufs[i][j] = i * 1000 + r + (int64_t)j;
        for (int i = 0; i < k; i++)
            ASSERT_EQ(ZAP_OK, zap_iallreduce(w.c[r], ZAP_IN_PLACE, bufs[i].data(), count, ZAP_DT_INT64, ZAP_OP_SUM,
                                             &reqs[i]));
        for (int i = k - 1; i >= 0; i--) {
            EXPECT_EQ(ZAP_OK, zap_request_wait(reqs[i]));
            zap_request_free(reqs[i]);
        }
        long bad = 0;
        for (int i = 0; i < k; i++)
            for (size_t j = 0; j < count; j++)
                bad += bufs[i][j] != 2 * (i * 1000 + (int64_t)j) + 1;
        EXPECT_EQ(0, bad) << "rank " << r;
        std::vector<int64_t> m(count + 1);
        EXPECT_EQ(ZAP_ERR_MISMATCH,
                  zap_allreduce(w.c[r], ZAP_IN_PLACE, m.data(), count + (size_t)r, ZAP_DT_INT64, ZAP_OP_SUM));
        EXPECT_EQ(ZAP_ERR_MISMATCH, zap_bcast(w.c[r], m.data(), count, ZAP_DT_INT64, r));
    });
    EXPECT_EQ(0, zap_fake_stage_held());
}

} // namespace

namespace {

// Host memory the stand-in reports as managed memory while it lives.
struct FakeManaged {
    std::vector<uint8_t> v;
    explicit FakeManaged(size_t bytes, uint8_t fill = 0) : v(bytes + 1, fill) { zap_fake_managed(v.data(), v.size()); }
    ~FakeManaged() { zap_fake_managed(v.data(), 0); }
    FakeManaged(const FakeManaged &) = delete;
    FakeManaged &operator=(const FakeManaged &) = delete;
    uint8_t *data() { return v.data(); }
};

// On the host path (below the GPU path's threshold, or with the path off)
// the collectives copy and reduce managed memory with the CPU: no call that
// waits for the GPU (engine/mem.c). Each such call waits for a GPU time slice
// where processes share a device, which made every managed collective cost
// hundreds of microseconds. Every size and algorithm the host path has.
TEST(ManagedMemory, HostPathCollectivesMakeNoCallThatWaitsForTheGpu)
{
    for (zap_comm_gpu_path_t path : {ZAP_COMM_GPU_PATH_OFF, ZAP_COMM_GPU_PATH_AUTO})
        for (int n : {2, 3, 4})
            for (size_t count : {(size_t)2, (size_t)1000, (size_t)70001}) {
                if (path == ZAP_COMM_GPU_PATH_AUTO && count * 4 >= (64u << 10))
                    continue; // the GPU path's own stand-in copies
                World w(n, Params().gpu(path));
                uint64_t before = zap_cuda_coll_sync_calls();
                w.run([&](int r) {
                    FakeManaged in(count * 4), out(count * 4), all(count * 4 * n);
                    int32_t *x = (int32_t *)in.data(), *y = (int32_t *)out.data(), *g = (int32_t *)all.data();
                    for (size_t i = 0; i < count; i++)
                        x[i] = (int32_t)(i + 1) * (r + 1);
                    ASSERT_EQ(ZAP_OK, zap_allreduce(w.c[r], x, y, count, ZAP_DT_INT32, ZAP_OP_SUM));
                    EXPECT_EQ(y[count - 1], (int32_t)count * n * (n + 1) / 2) << "rank " << r;
                    ASSERT_EQ(ZAP_OK, zap_bcast(w.c[r], x, count, ZAP_DT_INT32, n - 1));
                    EXPECT_EQ(x[count - 1], (int32_t)count * n) << "rank " << r;
                    for (size_t i = 0; i < count; i++)
                        x[i] = r;
                    ASSERT_EQ(ZAP_OK, zap_allgather(w.c[r], x, count, g, ZAP_DT_INT32));
                    EXPECT_EQ(g[count * n - 1], n - 1) << "rank " << r;
                    ASSERT_EQ(ZAP_OK, zap_scatter(w.c[r], g, y, count, ZAP_DT_INT32, 0));
                    EXPECT_EQ(y[0], r) << "rank " << r;
                });
                EXPECT_EQ(before, zap_cuda_coll_sync_calls())
                    << n << " ranks, " << count << " elements, path " << path;
            }
}

} // namespace
