// GPU parts of the collectives on a real device: the cuda/coll kernels
// against the CPU loops bit for bit, and the GPU-resident path
// (core/coll/gpu) over the in-process transport, whose ranks are threads of
// one process sharing its GPUs (their kernels meet at flags in each other's
// channel regions, so they must run at once: the grids are small enough to
// be resident together), against a CPU reduction in the same rank order; and
// device buffers under the host algorithms (staged through host memory).
// Every case skips, saying why, where there is no CUDA device.
#include <gtest/gtest.h>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>
#include "coll/coll_harness.h"
extern "C" {
#include "coll/reduce/reduce.h"
#include "coll/gpu/gpu.h"
#include "cuda_coll.h"
}
#ifdef ZAP_TEST_HAVE_CUDA
#include <cuda_runtime.h>
#endif

using namespace colltest;

namespace {

#ifdef ZAP_TEST_HAVE_CUDA
#define REQUIRE_GPU()                                                                                  \
    do {                                                                                               \
        if (!zap_gpu_device_present()) {                                                             \
            std::printf("skipped: no CUDA device\n");                                                  \
            GTEST_SKIP() << "no CUDA device";                                                          \
        }                                                                                              \
    } while (0)
#else
#define REQUIRE_GPU()                                                                                  \
    do {                                                                                               \
        std::printf("skipped: zap built without CUDA\n");                                              \
        GTEST_SKIP() << "zap built without CUDA";                                                      \
    } while (0)
#endif

#ifdef ZAP_TEST_HAVE_CUDA
// Inputs with inexact float values, so a different reduction order would show
// in the bits; finite everywhere (NaN payloads are not part of the contract).
void fill_any(zap_dtype_t dt, int r, uint64_t seed, void *p, size_t count)
{
    for (size_t i = 0; i < count; i++) {
        uint64_t h = mix(seed * 1000003 + (uint64_t)r * 7919 + i);
        double v = ((double)(h >> 11) / (double)(1ull << 53) - 0.5) * 3.0; // (-1.5, 1.5)
        switch (dt) {
        case ZAP_DT_FLOAT16: ((uint16_t *)p)[i] = zap_float_to_half((float)v); break;
        case ZAP_DT_BFLOAT16: ((uint16_t *)p)[i] = zap_float_to_bf16((float)v); break;
        case ZAP_DT_FLOAT32: ((float *)p)[i] = (float)v; break;
        case ZAP_DT_FLOAT64: ((double *)p)[i] = v; break;
        default: std::memcpy((uint8_t *)p + i * dsize(dt), &h, dsize(dt)); break;
        }
    }
}

const zap_dtype_t kAllTypes[] = {ZAP_DT_INT8,   ZAP_DT_INT16,   ZAP_DT_INT32,   ZAP_DT_INT64,
                                 ZAP_DT_UINT8,  ZAP_DT_UINT16,  ZAP_DT_UINT32,  ZAP_DT_UINT64,
                                 ZAP_DT_FLOAT16, ZAP_DT_BFLOAT16, ZAP_DT_FLOAT32, ZAP_DT_FLOAT64};

void *managed(size_t bytes)
{
    void *p = nullptr;
    EXPECT_EQ(cudaSuccess, cudaMallocManaged(&p, bytes ? bytes : 1));
    return p;
}

// The GPU path's setting of a test's communicators.
Params path(zap_comm_gpu_path_t v) { return Params().gpu(v); }

// A count whose bytes go past one bank: the reduce-scatter + allgather form.
size_t large_count(zap_dtype_t dt) { return (ZAP_GPU_BANK_BYTES + 4099) / dsize(dt) + 3; }

// CPU reference: ((in_0 op in_1) op in_2) ..., the path's fixed order.
std::vector<uint8_t> ordered_reference(zap_dtype_t dt, zap_op_t op, const std::vector<std::vector<uint8_t>> &in,
                                       size_t count)
{
    std::vector<uint8_t> acc(in[0]);
    for (size_t r = 1; r < in.size(); r++)
        zap_reduce_cpu(dt, op, acc.data(), acc.data(), in[r].data(), count);
    return acc;
}
#endif

TEST(CudaReduce, KernelsMatchCpuBitForBit)
{
    REQUIRE_GPU();
#ifdef ZAP_TEST_HAVE_CUDA
    const size_t counts[] = {1, 7, 4099, (1u << 20) + 3}; // odd counts; the last spans many grid strides
    for (zap_dtype_t dt : kAllTypes) {
        for (int o = 0; o < ZAP_OP_COUNT; o++) {
            zap_op_t op = (zap_op_t)o;
            if (!zap_reduce_supported(dt, op))
                continue;
            for (size_t n : counts) {
                size_t bytes = n * dsize(dt);
                std::vector<uint8_t> a(bytes), b(bytes), want(bytes), got(bytes);
                fill_any(dt, 0, 11 + o, a.data(), n);
                fill_any(dt, 1, 11 + o, b.data(), n);
                zap_reduce_cpu(dt, op, want.data(), a.data(), b.data(), n);
                void *da = managed(bytes), *db = managed(bytes);
                std::memcpy(da, a.data(), bytes);
                std::memcpy(db, b.data(), bytes);
                // Synchronous form, result written over a (as the host algorithms do).
                ASSERT_EQ(ZAP_OK, zap_cuda_reduce(dt, op, da, da, db, n)) << "dt " << dt << " op " << o;
                std::memcpy(got.data(), da, bytes);
                EXPECT_EQ(0, std::memcmp(want.data(), got.data(), bytes)) << "dt " << dt << " op " << o << " n " << n;
                // Asynchronous form on a stream, into device memory.
                void *dd = nullptr;
                ASSERT_EQ(cudaSuccess, cudaMalloc(&dd, bytes));
                std::memcpy(da, a.data(), bytes);
                cudaStream_t s;
                ASSERT_EQ(cudaSuccess, cudaStreamCreate(&s));
                ASSERT_EQ(ZAP_OK, zap_cuda_reduce_async(s, dt, op, dd, da, db, n));
                ASSERT_EQ(cudaSuccess, cudaStreamSynchronize(s));
                ASSERT_EQ(cudaSuccess, cudaMemcpy(got.data(), dd, bytes, cudaMemcpyDeviceToHost));
                EXPECT_EQ(0, std::memcmp(want.data(), got.data(), bytes)) << "async dt " << dt << " op " << o;
                cudaStreamDestroy(s);
                cudaFree(dd);
                cudaFree(da);
                cudaFree(db);
            }
        }
    }
#endif
}

TEST(CudaReduce, PointerKinds)
{
    REQUIRE_GPU();
#ifdef ZAP_TEST_HAVE_CUDA
    void *m = managed(64), *d = nullptr, *h = nullptr;
    ASSERT_EQ(cudaSuccess, cudaMalloc(&d, 64));
    ASSERT_EQ(cudaSuccess, cudaMallocHost(&h, 64));
    int local = 0;
    EXPECT_EQ(ZAP_MEM_MANAGED, zap_cuda_ptr_kind(m));
    EXPECT_EQ(ZAP_MEM_DEVICE, zap_cuda_ptr_kind(d));
    EXPECT_EQ(ZAP_MEM_PINNED, zap_cuda_ptr_kind(h));
    EXPECT_EQ(ZAP_MEM_HOST, zap_cuda_ptr_kind(&local));
    cudaFree(m);
    cudaFree(d);
    cudaFreeHost(h);
#endif
}

#ifdef ZAP_TEST_HAVE_CUDA
// One allreduce over nranks thread ranks with buffers from alloc (managed or
// device); checks every rank against the ordered CPU reference, bit for bit.
void run_allreduce(const Params &prm, int nranks, zap_dtype_t dt, zap_op_t op, size_t count, bool device_bufs,
                   bool in_place)
{
    World w(nranks, prm);
    size_t bytes = count * dsize(dt);
    std::vector<std::vector<uint8_t>> in(nranks, std::vector<uint8_t>(bytes));
    for (int r = 0; r < nranks; r++)
        fill_any(dt, r, 5 + count, in[r].data(), count);
    std::vector<uint8_t> want = ordered_reference(dt, op, in, count);
    std::vector<std::vector<uint8_t>> out(nranks, std::vector<uint8_t>(bytes));
    w.run([&](int r) {
        void *s = nullptr, *d = nullptr;
        if (device_bufs) {
            ASSERT_EQ(cudaSuccess, cudaMalloc(&s, bytes));
            ASSERT_EQ(cudaSuccess, cudaMalloc(&d, bytes));
        } else {
            s = managed(bytes);
            d = managed(bytes);
        }
        ASSERT_EQ(cudaSuccess, cudaMemcpy(in_place ? d : s, in[r].data(), bytes, cudaMemcpyDefault));
        EXPECT_EQ(ZAP_OK, zap_allreduce(w.c[r], in_place ? ZAP_IN_PLACE : s, d, count, dt, op));
        ASSERT_EQ(cudaSuccess, cudaMemcpy(out[r].data(), d, bytes, cudaMemcpyDefault));
        cudaFree(s);
        cudaFree(d);
    });
    for (int r = 0; r < nranks; r++)
        EXPECT_EQ(0, std::memcmp(want.data(), out[r].data(), bytes))
            << "rank " << r << " of " << nranks << " dt " << dt << " op " << op << " count " << count;
}
#endif

TEST(GpuStage, AllreduceEveryTypeAndOpMatchesOrderedCpu)
{
    REQUIRE_GPU();
#ifdef ZAP_TEST_HAVE_CUDA
    Params prm = path(ZAP_COMM_GPU_PATH_IPC);
    uint64_t done0, fb0, done1, fb1;
    zap_coll_gpu_counts(&done0, &fb0);
    int ops_run = 0;
    for (zap_dtype_t dt : kAllTypes)
        for (int o = 0; o < ZAP_OP_COUNT; o++)
            if (zap_reduce_supported(dt, (zap_op_t)o) && zap_gpu_path_combines(dt, (zap_op_t)o)) {
                run_allreduce(prm, 2, dt, (zap_op_t)o, 40009, o % 2 == 0, false);           // one-shot
                run_allreduce(prm, 2, dt, (zap_op_t)o, large_count(dt), o % 2 == 1, o % 3 == 0); // reduce-scatter
                ops_run += 2;
            }
    zap_coll_gpu_counts(&done1, &fb1);
    // Each collective counts once per rank.
    EXPECT_EQ((uint64_t)ops_run * 2, done1 - done0);
    EXPECT_EQ(fb0, fb1);
#endif
}

TEST(GpuStage, AllreduceRankCountsSizesAndBuffers)
{
    REQUIRE_GPU();
#ifdef ZAP_TEST_HAVE_CUDA
    Params prm = path(ZAP_COMM_GPU_PATH_IPC);
    uint64_t done0, fb0, done1, fb1;
    zap_coll_gpu_counts(&done0, &fb0);
    uint64_t expect = 0;
    for (int n : {2, 3, 4, 5, 8}) {
        for (size_t count : {(size_t)1, (size_t)2, (size_t)3, (size_t)1000, (size_t)65537, (size_t)262144,
                             (size_t)(1u << 20) + 1, (size_t)(4u << 20) + 3}) {
            run_allreduce(prm, n, ZAP_DT_FLOAT32, ZAP_OP_SUM, count, false, false);
            expect += (uint64_t)n;
        }
        run_allreduce(prm, n, ZAP_DT_FLOAT64, ZAP_OP_SUM, 77777, true, false); // cudaMalloc buffers
        run_allreduce(prm, n, ZAP_DT_BFLOAT16, ZAP_OP_MAX, 77777, false, true); // in place
        expect += 2 * (uint64_t)n;
    }
    zap_coll_gpu_counts(&done1, &fb1);
    EXPECT_EQ(expect, done1 - done0);
    EXPECT_EQ(fb0, fb1);
#endif
}

TEST(GpuStage, BcastFromEveryRoot)
{
    REQUIRE_GPU();
#ifdef ZAP_TEST_HAVE_CUDA
    Params prm = path(ZAP_COMM_GPU_PATH_IPC);
    uint64_t done0, fb0, done1, fb1;
    zap_coll_gpu_counts(&done0, &fb0);
    uint64_t expect = 0;
    for (int n : {2, 3, 5}) {
        for (size_t bytes : {(size_t)1, (size_t)8, (size_t)4097, (size_t)(1u << 20), (size_t)(3u << 20) + 5}) {
            for (int root = 0; root < n; root++) {
                World w(n, prm);
                std::vector<uint8_t> data(bytes);
                fill_any(ZAP_DT_UINT8, root, bytes, data.data(), bytes);
                bool dev = (bytes + (size_t)root) % 2 == 1;
                w.run([&](int r) {
                    void *b = nullptr;
                    if (dev) {
                        ASSERT_EQ(cudaSuccess, cudaMalloc(&b, bytes));
                    } else {
                        b = managed(bytes);
                    }
                    ASSERT_EQ(cudaSuccess, cudaMemset(b, 0xa5, bytes));
                    if (r == root) {
                        ASSERT_EQ(cudaSuccess, cudaMemcpy(b, data.data(), bytes, cudaMemcpyDefault));
                    }
                    EXPECT_EQ(ZAP_OK, zap_bcast(w.c[r], b, bytes, ZAP_DT_UINT8, root));
                    std::vector<uint8_t> got(bytes);
                    ASSERT_EQ(cudaSuccess, cudaMemcpy(got.data(), b, bytes, cudaMemcpyDefault));
                    EXPECT_EQ(0, std::memcmp(got.data(), data.data(), bytes)) << "rank " << r << " root " << root;
                    cudaFree(b);
                });
                expect += (uint64_t)n;
            }
        }
    }
    zap_coll_gpu_counts(&done1, &fb1);
    EXPECT_EQ(expect, done1 - done0);
    EXPECT_EQ(fb0, fb1);
#endif
}

TEST(GpuStage, HostBufferOnOneRankFallsBackOnAll)
{
    REQUIRE_GPU();
#ifdef ZAP_TEST_HAVE_CUDA
    const size_t count = 100003;
    World w(3, path(ZAP_COMM_GPU_PATH_IPC));
    uint64_t done0, fb0, done1, fb1;
    zap_coll_gpu_counts(&done0, &fb0);
    std::vector<std::vector<uint8_t>> in(3, std::vector<uint8_t>(count * 4));
    for (int r = 0; r < 3; r++)
        fill_input(ZAP_DT_INT32, ZAP_OP_SUM, r, 3, in[r].data(), count);
    std::vector<uint8_t> want = ordered_reference(ZAP_DT_INT32, ZAP_OP_SUM, in, count);
    w.run([&](int r) {
        // Rank 1 passes plain host memory: the ranks agree to use the host path
        // (a large call: its agreement is the header alone on every rank).
        std::vector<uint8_t> host(count * 4);
        void *b = r == 1 ? (void *)host.data() : managed(count * 4);
        std::memcpy(b, in[r].data(), count * 4);
        EXPECT_EQ(ZAP_OK, zap_allreduce(w.c[r], ZAP_IN_PLACE, b, count, ZAP_DT_INT32, ZAP_OP_SUM));
        EXPECT_EQ(0, std::memcmp(b, want.data(), count * 4)) << "rank " << r;
        if (r != 1)
            cudaFree(b);
    });
    zap_coll_gpu_counts(&done1, &fb1);
    EXPECT_EQ(done0, done1);
    EXPECT_EQ(fb0 + 2, fb1); // the two GPU ranks fall back; rank 1 never listed the path
#endif
}

// The direct allreduce on managed and device buffers (its header rides its
// data, so the path declines it; reductions by kernels on pool scratch, in
// rank order: bit for bit the ordered reference), and auto on 3-8 ranks,
// where the path's vote rides the flat argument exchange.
TEST(GpuStage, DirectOnGpuBuffersAndTheVoteInTheFlatExchange)
{
    REQUIRE_GPU();
#ifdef ZAP_TEST_HAVE_CUDA
    Params direct = path(ZAP_COMM_GPU_PATH_IPC).allreduce("direct"), autoalg = path(ZAP_COMM_GPU_PATH_IPC);
    uint64_t done0, fb0, done1, fb1, done2, fb2;
    zap_coll_gpu_counts(&done0, &fb0);
    for (int n : {3, 5, 8}) {
        run_allreduce(direct, n, ZAP_DT_FLOAT32, ZAP_OP_SUM, 257, false, false);
        run_allreduce(direct, n, ZAP_DT_FLOAT16, ZAP_OP_SUM, 33, true, true);
    }
    zap_coll_gpu_counts(&done1, &fb1);
    EXPECT_EQ(done0, done1);
    uint64_t expect = 0;
    for (int n : {3, 4, 8}) {
        run_allreduce(autoalg, n, ZAP_DT_FLOAT32, ZAP_OP_SUM, 65537, false, false); // rabenseifner's size: the path
        expect += (uint64_t)n;
    }
    zap_coll_gpu_counts(&done2, &fb2);
    EXPECT_EQ(expect, done2 - done1);
    EXPECT_EQ(fb1, fb2);
#endif
}

TEST(GpuStage, OffSettingKeepsTheHostPath)
{
    REQUIRE_GPU();
#ifdef ZAP_TEST_HAVE_CUDA
    Params off = path(ZAP_COMM_GPU_PATH_OFF);
    uint64_t done0, fb0, done1, fb1;
    zap_coll_gpu_counts(&done0, &fb0);
    run_allreduce(off, 2, ZAP_DT_INT64, ZAP_OP_BXOR, 300001, false, false);
    zap_coll_gpu_counts(&done1, &fb1);
    EXPECT_EQ(done0, done1);
    EXPECT_EQ(fb0, fb1);
#endif
}

TEST(GpuStage, SeveralOutstandingAndMismatch)
{
    REQUIRE_GPU();
#ifdef ZAP_TEST_HAVE_CUDA
    Params prm = path(ZAP_COMM_GPU_PATH_IPC);
    const size_t count = 50001;
    const int k = 10; // 20 slot holds, more than a process has: some may fall back, all must be right
    World w(2, prm);
    w.run([&](int r) {
        std::vector<float *> bufs(k);
        std::vector<zap_request_t *> reqs(k);
        for (int i = 0; i < k; i++) {
            bufs[i] = (float *)managed(count * 4);
            for (size_t j = 0; j < count; j++)
                bufs[i][j] = (float)(i + r + (int)(j % 7));
        }
        for (int i = 0; i < k; i++)
            ASSERT_EQ(ZAP_OK, zap_iallreduce(w.c[r], ZAP_IN_PLACE, bufs[i], count, ZAP_DT_FLOAT32, ZAP_OP_SUM, &reqs[i]));
        for (int i = k - 1; i >= 0; i--) {
            EXPECT_EQ(ZAP_OK, zap_request_wait(reqs[i]));
            zap_request_free(reqs[i]);
        }
        long bad = 0;
        for (int i = 0; i < k; i++) {
            for (size_t j = 0; j < count; j++)
                bad += bufs[i][j] != (float)(2 * i + 1 + 2 * (int)(j % 7));
            cudaFree(bufs[i]);
        }
        EXPECT_EQ(0, bad) << "rank " << r;
        // Counts that differ across ranks are still reported on every rank.
        float *m = (float *)managed(count * 8);
        EXPECT_EQ(ZAP_ERR_MISMATCH, zap_allreduce(w.c[r], ZAP_IN_PLACE, m, count + (size_t)r, ZAP_DT_FLOAT32,
                                                  ZAP_OP_SUM));
        EXPECT_EQ(ZAP_ERR_MISMATCH, zap_bcast(w.c[r], m, count, ZAP_DT_FLOAT32, r));
        cudaFree(m);
    });
#endif
}

// Device buffers where the path is off: every host algorithm runs on a host
// copy of them (the CPU and a transport without CUDA cannot touch them) and
// the result goes back; allreduce sizes across rd, rabenseifner and ring,
// broadcasts across the tree and the chain.
TEST(GpuStage, DeviceBuffersUnderTheHostAlgorithms)
{
    REQUIRE_GPU();
#ifdef ZAP_TEST_HAVE_CUDA
    Params off = path(ZAP_COMM_GPU_PATH_OFF);
    uint64_t done0, fb0, done1, fb1;
    zap_coll_gpu_counts(&done0, &fb0);
    for (int n : {2, 3, 5})
        for (size_t count : {(size_t)1, (size_t)1000, (size_t)40000, (size_t)300001}) {
            run_allreduce(off, n, ZAP_DT_INT32, ZAP_OP_SUM, count, true, false);
            run_allreduce(off, n, ZAP_DT_INT64, ZAP_OP_BXOR, count, true, true);
            World w(n, off);
            size_t bytes = count * 4;
            std::vector<uint8_t> data(bytes);
            fill_any(ZAP_DT_UINT8, 1, bytes, data.data(), bytes);
            w.run([&](int r) {
                void *b = nullptr;
                ASSERT_EQ(cudaSuccess, cudaMalloc(&b, bytes));
                ASSERT_EQ(cudaSuccess, cudaMemset(b, 0x5a, bytes));
                if (r == n - 1) {
                    ASSERT_EQ(cudaSuccess, cudaMemcpy(b, data.data(), bytes, cudaMemcpyDefault));
                }
                EXPECT_EQ(ZAP_OK, zap_bcast(w.c[r], b, count, ZAP_DT_FLOAT32, n - 1));
                std::vector<uint8_t> got(bytes);
                ASSERT_EQ(cudaSuccess, cudaMemcpy(got.data(), b, bytes, cudaMemcpyDefault));
                EXPECT_EQ(data, got) << "rank " << r << " of " << n << " count " << count;
                cudaFree(b);
            });
        }
    zap_coll_gpu_counts(&done1, &fb1);
    EXPECT_EQ(done0, done1);
    EXPECT_EQ(fb0, fb1);
#endif
}

// A device input with a host output (and the reverse): the path's vote wants
// both on the GPU, so the host algorithms run, on host copies.
TEST(GpuStage, MixedInputAndOutputKinds)
{
    REQUIRE_GPU();
#ifdef ZAP_TEST_HAVE_CUDA
    const size_t count = 70001;
    World w(3, path(ZAP_COMM_GPU_PATH_IPC));
    std::vector<std::vector<uint8_t>> in(3, std::vector<uint8_t>(count * 4));
    for (int r = 0; r < 3; r++)
        fill_input(ZAP_DT_INT32, ZAP_OP_SUM, r, 3, in[r].data(), count);
    std::vector<uint8_t> want = ordered_reference(ZAP_DT_INT32, ZAP_OP_SUM, in, count);
    w.run([&](int r) {
        void *d = nullptr;
        ASSERT_EQ(cudaSuccess, cudaMalloc(&d, count * 4));
        std::vector<uint8_t> host(count * 4);
        ASSERT_EQ(cudaSuccess, cudaMemcpy(d, in[r].data(), count * 4, cudaMemcpyDefault));
        EXPECT_EQ(ZAP_OK, zap_allreduce(w.c[r], d, host.data(), count, ZAP_DT_INT32, ZAP_OP_SUM));
        EXPECT_EQ(want, host) << "device in, host out, rank " << r;
        std::vector<uint8_t> src(in[r]);
        EXPECT_EQ(ZAP_OK, zap_allreduce(w.c[r], src.data(), d, count, ZAP_DT_INT32, ZAP_OP_SUM));
        std::vector<uint8_t> got(count * 4);
        ASSERT_EQ(cudaSuccess, cudaMemcpy(got.data(), d, count * 4, cudaMemcpyDefault));
        EXPECT_EQ(want, got) << "host in, device out, rank " << r;
        cudaFree(d);
    });
#endif
}

// The host path (below the GPU path's threshold, or with it off) copies and
// reduces managed memory with the CPU: no call that waits for the GPU
// (engine/mem.c), at every size and on every host algorithm; results right.
TEST(CudaManaged, HostPathCollectivesMakeNoCallThatWaitsForTheGpu)
{
    REQUIRE_GPU();
#ifdef ZAP_TEST_HAVE_CUDA
    for (zap_comm_gpu_path_t gp : {ZAP_COMM_GPU_PATH_OFF, ZAP_COMM_GPU_PATH_AUTO})
        for (int n : {2, 4})
            for (size_t count : {(size_t)2, (size_t)1000, (size_t)70001}) {
                if (gp == ZAP_COMM_GPU_PATH_AUTO && count * 4 >= (64u << 10))
                    continue; // the GPU path's own copies
                World w(n, path(gp));
                uint64_t before = zap_cuda_coll_sync_calls();
                w.run([&](int r) {
                    int32_t *x = (int32_t *)managed(count * 4), *y = (int32_t *)managed(count * 4);
                    int32_t *g = (int32_t *)managed(count * 4 * n);
                    for (size_t i = 0; i < count; i++)
                        x[i] = (int32_t)(i + 1) * (r + 1);
                    EXPECT_EQ(ZAP_OK, zap_allreduce(w.c[r], x, y, count, ZAP_DT_INT32, ZAP_OP_SUM));
                    EXPECT_EQ(y[count - 1], (int32_t)count * n * (n + 1) / 2) << "rank " << r;
                    EXPECT_EQ(ZAP_OK, zap_bcast(w.c[r], x, count, ZAP_DT_INT32, n - 1));
                    EXPECT_EQ(x[count - 1], (int32_t)count * n) << "rank " << r;
                    for (size_t i = 0; i < count; i++)
                        x[i] = r;
                    EXPECT_EQ(ZAP_OK, zap_allgather(w.c[r], x, count, g, ZAP_DT_INT32));
                    EXPECT_EQ(g[count * n - 1], n - 1) << "rank " << r;
                    EXPECT_EQ(ZAP_OK, zap_scatter(w.c[r], g, y, count, ZAP_DT_INT32, 0));
                    EXPECT_EQ(y[0], r) << "rank " << r;
                    cudaFree(x);
                    cudaFree(y);
                    cudaFree(g);
                });
                EXPECT_EQ(before, zap_cuda_coll_sync_calls()) << n << " ranks, " << count << " elements, path " << gp;
            }
#endif
}

} // namespace
