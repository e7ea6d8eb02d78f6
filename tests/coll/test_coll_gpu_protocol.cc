// The GPU path's protocol (core/coll/gpu: votes, the channel's setup, the
// launch order, the rounds, every fallback, the cuts and the reduction
// order) on any machine: the device side is replaced by a host-memory
// stand-in (gpu_fake.c) whose "kernels" keep the real ones' flags, cuts and
// cancel rules, so these cases run where there is no GPU. test_coll_gpu
// runs the real device side.
#include <gtest/gtest.h>
#include <cstdlib>
#include <cstring>
#include <vector>
#include "coll/coll_harness.h"
#include "coll/gpu_fake.h"
extern "C" {
#include "coll/reduce/reduce.h"
#include "coll/gpu/gpu.h"
#include "cuda_coll.h"
}

using namespace colltest;

namespace {

Params ipc() { return Params().gpu(ZAP_COMM_GPU_PATH_IPC); }

std::vector<uint8_t> ordered_reference(zap_dtype_t dt, zap_op_t op, const std::vector<std::vector<uint8_t>> &in,
                                       size_t count)
{
    std::vector<uint8_t> acc(in[0]);
    for (size_t r = 1; r < in.size(); r++)
        zap_reduce_cpu(dt, op, acc.data(), acc.data(), in[r].data(), count);
    return acc;
}

// Inexact float inputs: another reduction order would show in the bits.
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
    Counts() { zap_coll_gpu_counts(&done, &fb); }
};

// A count whose bytes go past one bank: the reduce-scatter + allgather form.
size_t large_count(zap_dtype_t dt) { return (ZAP_GPU_BANK_BYTES + 4099) / dsize(dt) + 3; }

// One allreduce over n thread ranks; every rank's output bit for bit the
// rank-ordered reference, guard bytes untouched. Returns nothing; failures
// name the case.
void allreduce_case(const Params &prm, int n, zap_dtype_t dt, zap_op_t op, size_t count, bool in_place)
{
    World w(n, prm);
    size_t bytes = count * dsize(dt);
    std::vector<std::vector<uint8_t>> in(n, std::vector<uint8_t>(bytes));
    for (int r = 0; r < n; r++)
        fill_any(dt, r, 17 + count, in[r].data(), count);
    std::vector<uint8_t> want = ordered_reference(dt, op, in, count);
    std::vector<std::vector<uint8_t>> out(n, std::vector<uint8_t>(bytes + 16, 0xee));
    w.run([&](int r) {
        std::vector<uint8_t> src(in[r]);
        if (in_place)
            std::memcpy(out[r].data(), src.data(), bytes);
        EXPECT_EQ(ZAP_OK, zap_allreduce(w.c[r], in_place ? ZAP_IN_PLACE : src.data(), out[r].data(), count, dt, op));
        EXPECT_EQ(0, std::memcmp(src.data(), in[r].data(), bytes)) << "the input changed, rank " << r;
    });
    for (int r = 0; r < n; r++) {
        EXPECT_EQ(0, std::memcmp(want.data(), out[r].data(), bytes))
            << "rank " << r << "/" << n << " dt " << dt << " op " << op << " count " << count;
        for (size_t g = 0; g < 16; g++)
            ASSERT_EQ(0xee, out[r][bytes + g]) << "guard byte " << g << " rank " << r;
    }
    EXPECT_EQ(0, zap_fake_gpu_held());
}

void bcast_case(const Params &prm, int n, size_t bytes, int root)
{
    World w(n, prm);
    std::vector<uint8_t> data(bytes);
    fill_any(ZAP_DT_UINT8, root, bytes, data.data(), bytes);
    w.run([&](int r) {
        std::vector<uint8_t> b(bytes, 0xa5);
        if (r == root)
            b = data;
        EXPECT_EQ(ZAP_OK, zap_bcast(w.c[r], b.data(), bytes, ZAP_DT_UINT8, root));
        EXPECT_EQ(data, b) << "rank " << r << " root " << root << " bytes " << bytes;
    });
    EXPECT_EQ(0, zap_fake_gpu_held());
}

TEST(GpuProtocol, AllreduceEveryTypeAndOpBothFormsBitForBit)
{
    Counts before;
    uint64_t expect = 0;
    for (zap_dtype_t dt = ZAP_DT_INT8; dt < ZAP_DT_COUNT; dt = (zap_dtype_t)(dt + 1))
        for (int o = 0; o < ZAP_OP_COUNT; o++)
            if (zap_reduce_supported(dt, (zap_op_t)o) && zap_gpu_path_combines(dt, (zap_op_t)o)) {
                allreduce_case(ipc(), 3, dt, (zap_op_t)o, 1001, false);
                allreduce_case(ipc(), 3, dt, (zap_op_t)o, large_count(dt), o % 2 == 1);
                expect += 6;
            }
    // Ops the kernels lack stay on the host path, even forced: right, not counted.
    allreduce_case(ipc(), 3, ZAP_DT_INT32, ZAP_OP_LAND, 1001, false);
    allreduce_case(ipc(), 3, ZAP_DT_UINT16, ZAP_OP_LXOR, large_count(ZAP_DT_UINT16), true);
    Counts after;
    EXPECT_EQ(expect, after.done - before.done);
    EXPECT_EQ(before.fb, after.fb);
}

TEST(GpuProtocol, AllreduceRankCountsOddCountsInPlace)
{
    Counts before;
    uint64_t expect = 0;
    for (int n = 2; n <= 8; n++)
        for (size_t count : {(size_t)1, (size_t)2, (size_t)7, (size_t)8, (size_t)9, (size_t)4099, (size_t)262145,
                             (size_t)262144 + 4096 * (size_t)n + 5}) {
            allreduce_case(ipc(), n, ZAP_DT_FLOAT32, ZAP_OP_SUM, count, count % 2 == 1);
            expect += (uint64_t)n;
        }
    Counts after;
    EXPECT_EQ(expect, after.done - before.done);
    EXPECT_EQ(before.fb, after.fb);
}

// Buffers that cannot be exported (managed memory on a GPU) go through the
// channel's staging buffer: inputs, outputs or both, in place or not.
TEST(GpuProtocol, AllreduceThroughTheStagingBuffer)
{
    Counts before;
    int stages = zap_fake_gpu_stages();
    uint64_t expect = 0;
    for (int refuse : {1, 2, 6, 100})
        for (bool in_place : {false, true}) {
            zap_fake_gpu_refuse_expose(refuse);
            allreduce_case(ipc(), 3, ZAP_DT_FLOAT64, ZAP_OP_SUM, large_count(ZAP_DT_FLOAT64) + 11, in_place);
            zap_fake_gpu_refuse_expose(0);
            expect += 3;
        }
    Counts after;
    EXPECT_EQ(expect, after.done - before.done);
    EXPECT_EQ(before.fb, after.fb);
    EXPECT_LT(stages, zap_fake_gpu_stages());
}

TEST(GpuProtocol, BcastEveryRootBothForms)
{
    Counts before;
    uint64_t expect = 0;
    for (int n : {2, 3, 4, 7})
        for (size_t bytes : {(size_t)1, (size_t)1000, (size_t)100003, (size_t)ZAP_GPU_BANK_BYTES + 17})
            for (int root = 0; root < n; root++) {
                bcast_case(ipc(), n, bytes, root);
                expect += (uint64_t)n;
            }
    zap_fake_gpu_refuse_expose(1); // the root's buffer staged
    bcast_case(ipc(), 3, (size_t)ZAP_GPU_BANK_BYTES * 2 + 1, 2);
    zap_fake_gpu_refuse_expose(0);
    expect += 3;
    Counts after;
    EXPECT_EQ(expect, after.done - before.done);
    EXPECT_EQ(before.fb, after.fb);
}

// One call on w with a byte vector, rank 1 the root (broadcast) or the max
// (allreduce): every rank ends with data.
void byte_call(World &w, bool bcast, const std::vector<uint8_t> &data)
{
    w.run([&](int r) {
        std::vector<uint8_t> b(data.size(), 0);
        if (r == 1)
            b = data;
        EXPECT_EQ(ZAP_OK, bcast ? zap_bcast(w.c[r], b.data(), b.size(), ZAP_DT_UINT8, 1)
                                : zap_allreduce(w.c[r], ZAP_IN_PLACE, b.data(), b.size(), ZAP_DT_UINT8, ZAP_OP_MAX));
        EXPECT_EQ(data, b) << "rank " << r;
    });
}

// A channel that cannot be made, or a peer's buffer that cannot be opened
// (its kernel then launches with ok false and every kernel skips the data),
// makes every rank run the host algorithm: results right, nothing held.
TEST(GpuProtocol, FailuresFallBackTogether)
{
    for (bool bcast : {false, true}) {
        std::vector<uint8_t> data(ZAP_GPU_BANK_BYTES + 70001);
        fill_any(ZAP_DT_UINT8, 1, 9, data.data(), data.size());
        {
            World w(3, ipc());
            Counts before;
            zap_fake_gpu_fail(1, 0); // one rank cannot make its channel
            byte_call(w, bcast, data);
            zap_fake_gpu_fail(0, 0);
            Counts after;
            EXPECT_EQ(before.fb + 3, after.fb) << "bcast " << bcast;
            EXPECT_EQ(before.done, after.done) << "bcast " << bcast;
        }
        {
            World w(3, ipc());
            byte_call(w, bcast, std::vector<uint8_t>(64, 7)); // sets the channel up
            Counts before;
            int launches = zap_fake_gpu_launches();
            zap_fake_gpu_fail(0, 1); // one rank cannot open a peer's buffer
            byte_call(w, bcast, data);
            zap_fake_gpu_fail(0, 0);
            Counts after;
            EXPECT_EQ(before.fb + 3, after.fb) << "bcast " << bcast;
            EXPECT_EQ(before.done, after.done) << "bcast " << bcast;
            EXPECT_EQ(launches + 3, zap_fake_gpu_launches()) << "every rank launches, the kernels cancel";
            byte_call(w, bcast, data); // and the next call runs on the path
            Counts again;
            EXPECT_EQ(after.done + 3, again.done);
        }
        EXPECT_EQ(0, zap_fake_gpu_held());
    }
}

// After its channel failed, a communicator no longer lists the path: calls
// go straight to the host algorithms, with no vote, no round, no fallback.
TEST(GpuProtocol, AFailedChannelTurnsThePathOff)
{
    World w(2, ipc());
    zap_fake_gpu_fail(1, 0);
    Counts c0;
    for (int i = 0; i < 3; i++)
        w.run([&](int r) {
            std::vector<int64_t> v(5000, r + i);
            EXPECT_EQ(ZAP_OK, zap_allreduce(w.c[r], ZAP_IN_PLACE, v.data(), v.size(), ZAP_DT_INT64, ZAP_OP_SUM));
            EXPECT_EQ(2 * i + 1, v[4999]);
        });
    zap_fake_gpu_fail(0, 0);
    Counts c1;
    EXPECT_EQ(c0.fb + 2, c1.fb); // the first call only
    EXPECT_EQ(c0.done, c1.done);
}

// A rank whose buffer is host memory casts no vote: every rank runs the host
// algorithm without a message beyond the header and no kernel is launched.
TEST(GpuProtocol, ANoVoteFallsBackBeforeAnyExchange)
{
    for (int n : {2, 3, 5})
        for (bool bcast : {false, true}) {
            World w(n, ipc());
            Counts before;
            int launches = zap_fake_gpu_launches();
            std::vector<uint8_t> data(65537);
            fill_any(ZAP_DT_UINT8, 2, 4, data.data(), data.size());
            std::vector<std::vector<int64_t>> in(n, std::vector<int64_t>(12345));
            for (int r = 0; r < n; r++)
                for (size_t j = 0; j < in[r].size(); j++)
                    in[r][j] = (int64_t)(j * 31 + (size_t)r);
            w.run([&](int r) {
                zap_fake_gpu_refuse_here(r == n - 1);
                if (bcast) {
                    std::vector<uint8_t> b(data.size(), 0);
                    if (r == 1)
                        b = data;
                    EXPECT_EQ(ZAP_OK, zap_bcast(w.c[r], b.data(), b.size(), ZAP_DT_UINT8, 1));
                    EXPECT_EQ(data, b) << "rank " << r;
                } else {
                    std::vector<int64_t> v(in[r]);
                    EXPECT_EQ(ZAP_OK, zap_allreduce(w.c[r], ZAP_IN_PLACE, v.data(), v.size(), ZAP_DT_INT64, ZAP_OP_SUM));
                    int64_t want = (int64_t)(7 * 31 * n) + (int64_t)(n * (n - 1) / 2);
                    EXPECT_EQ(want, v[7]) << "rank " << r;
                }
                zap_fake_gpu_refuse_here(false);
            });
            Counts after;
            EXPECT_EQ(before.done, after.done) << n << " ranks, bcast " << bcast;
            EXPECT_EQ(before.fb + (uint64_t)(n - 1), after.fb) << n << " ranks, bcast " << bcast;
            EXPECT_EQ(launches, zap_fake_gpu_launches()) << "a kernel was launched after a no vote";
        }
}

// A small call (the next candidate would carry the agreement in its data)
// with GPU buffers on some ranks and host memory on others agrees
// differently on each side: every rank reports a mismatch, none hangs.
TEST(GpuProtocol, SmallCallWithMixedKindsIsAMismatchEverywhere)
{
    World w(3, ipc());
    w.run([&](int r) {
        zap_fake_gpu_refuse_here(r == 1);
        std::vector<int32_t> v(8, r);
        EXPECT_EQ(ZAP_ERR_MISMATCH, zap_allreduce(w.c[r], ZAP_IN_PLACE, v.data(), v.size(), ZAP_DT_INT32, ZAP_OP_SUM))
            << "rank " << r;
        zap_fake_gpu_refuse_here(false);
        // The communicator stays usable.
        std::vector<int32_t> u(8, r);
        EXPECT_EQ(ZAP_OK, zap_allreduce(w.c[r], ZAP_IN_PLACE, u.data(), u.size(), ZAP_DT_INT32, ZAP_OP_SUM));
        EXPECT_EQ(3, u[5]);
    });
}

// Many calls in flight, small and large, allreduce and broadcast, waited in
// reverse: they launch in post order on every rank, whatever order their
// rounds complete in.
TEST(GpuProtocol, OutstandingCallsLaunchInPostOrder)
{
    const int k = 24;
    World w(3, ipc());
    Counts before;
    w.run([&](int r) {
        std::vector<std::vector<int64_t>> bufs(k);
        std::vector<zap_request_t *> reqs(k);
        for (int i = 0; i < k; i++) {
            size_t count = i % 3 == 0 ? (size_t)(ZAP_GPU_BANK_BYTES / 8 + 1001) : (size_t)(100 + i);
            bufs[i].resize(count);
            for (size_t j = 0; j < count; j++)
                bufs[i][j] = i * 1000 + r + (int64_t)j;
        }
        for (int i = 0; i < k; i++) {
            if (i % 4 == 3)
                ASSERT_EQ(ZAP_OK, zap_ibcast(w.c[r], bufs[i].data(), bufs[i].size(), ZAP_DT_INT64, i % 3, &reqs[i]));
            else
                ASSERT_EQ(ZAP_OK, zap_iallreduce(w.c[r], ZAP_IN_PLACE, bufs[i].data(), bufs[i].size(), ZAP_DT_INT64,
                                                 ZAP_OP_SUM, &reqs[i]));
        }
        for (int i = k - 1; i >= 0; i--) {
            EXPECT_EQ(ZAP_OK, zap_request_wait(reqs[i]));
            zap_request_free(reqs[i]);
        }
        long bad = 0;
        for (int i = 0; i < k; i++)
            for (size_t j = 0; j < bufs[i].size(); j++) {
                int64_t want = i % 4 == 3 ? i * 1000 + (i % 3) + (int64_t)j : 3 * (i * 1000 + (int64_t)j) + 3;
                bad += bufs[i][j] != want;
            }
        EXPECT_EQ(0, bad) << "rank " << r;
        std::vector<int64_t> m(1001);
        EXPECT_EQ(ZAP_ERR_MISMATCH,
                  zap_allreduce(w.c[r], ZAP_IN_PLACE, m.data(), 1000 + (size_t)(r % 2), ZAP_DT_INT64, ZAP_OP_SUM));
        EXPECT_EQ(ZAP_ERR_MISMATCH, zap_bcast(w.c[r], m.data(), 1000, ZAP_DT_INT64, r));
    });
    Counts after;
    EXPECT_EQ(before.done + 3 * k, after.done);
    EXPECT_EQ(0, zap_fake_gpu_held());
}

TEST(GpuProtocol, AutoUsesThePathFromTheThreshold)
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

TEST(GpuProtocol, OffSettingKeepsTheHostPath)
{
    Counts c0;
    allreduce_case(Params().gpu(ZAP_COMM_GPU_PATH_OFF), 3, ZAP_DT_INT32, ZAP_OP_SUM, 300001, false);
    Counts c1;
    EXPECT_EQ(c0.done, c1.done);
    EXPECT_EQ(c0.fb, c1.fb);
}

// The direct algorithm reduces in rank order, ((x0 op x1) op x2) ..., on
// every rank: bit for bit the ordered reference, floats included.
TEST(GpuProtocol, DirectIsTheRankOrderedReductionBitForBit)
{
    Params prm = Params().gpu(ZAP_COMM_GPU_PATH_OFF).allreduce("direct");
    for (int n : {1, 2, 5, 9, 17}) {
        allreduce_case(prm, n, ZAP_DT_FLOAT32, ZAP_OP_SUM, 257, false);
        allreduce_case(prm, n, ZAP_DT_FLOAT16, ZAP_OP_SUM, 33, true);
        allreduce_case(prm, n, ZAP_DT_BFLOAT16, ZAP_OP_PROD, 5, false);
        allreduce_case(prm, n, ZAP_DT_FLOAT64, ZAP_OP_SUM, 1000, false);
    }
}

} // namespace
