// The GPU-resident collective path (core/coll/gpu) between processes: each
// rank on its own GPU (local rank modulo the device count, so several ranks
// share a GPU where there are fewer GPUs than ranks), channels and users'
// buffers opened through CUDA IPC, the kernels reading and writing the peers'
// memory. Results are checked bit for bit against a CPU reduction of every
// rank's input in rank order (the path's documented order), and the path's
// counters must show that the calls really took it. Also: buffers freed and
// allocated again at the same address (the IPC caches must not hand out the
// old mapping), and device buffers under the host algorithms. Skips, on every
// rank, without a device.
#include <gtest/gtest.h>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>
#include <cuda_runtime.h>
#include "mpi_harness.h"
extern "C" {
#include "zap/coll.h"
#include "zap/coll_mpi.h"
#include "coll/reduce/reduce.h"
#include "coll/gpu/gpu.h"
#include "cuda_coll.h"
}

namespace {

uint64_t mix(uint64_t x)
{
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdull;
    x ^= x >> 33;
    x *= 0xc4ceb9fe1a85ec53ull;
    x ^= x >> 33;
    return x;
}

size_t dsize(zap_dtype_t dt)
{
    static const size_t s[] = {1, 2, 4, 8, 1, 2, 4, 8, 2, 2, 4, 8};
    return s[dt];
}

// Inexact float inputs, so another reduction order would show in the bits.
void fill(zap_dtype_t dt, int r, uint64_t seed, uint8_t *p, size_t count)
{
    for (size_t i = 0; i < count; i++) {
        uint64_t h = mix(seed * 1000003 + (uint64_t)r * 7919 + i);
        double v = ((double)(h >> 11) / (double)(1ull << 53) - 0.5) * 3.0;
        switch (dt) {
        case ZAP_DT_FLOAT16: ((uint16_t *)p)[i] = zap_float_to_half((float)v); break;
        case ZAP_DT_BFLOAT16: ((uint16_t *)p)[i] = zap_float_to_bf16((float)v); break;
        case ZAP_DT_FLOAT32: ((float *)p)[i] = (float)v; break;
        case ZAP_DT_FLOAT64: ((double *)p)[i] = v; break;
        default: std::memcpy(p + i * dsize(dt), &h, dsize(dt)); break;
        }
    }
}

struct Counts {
    uint64_t done, fb;
    Counts() { zap_coll_gpu_counts(&done, &fb); }
};

class GpuCollMpi : public ::testing::Test {
  protected:
    static void SetUpTestSuite()
    {
        int n = 0;
        if (cudaGetDeviceCount(&n) != cudaSuccess)
            n = 0;
        int mine = n, fewest = 0;
        MPI_Allreduce(&mine, &fewest, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
        if (fewest == 0)
            return;
        MPI_Comm node;
        int lrank = 0;
        MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node);
        MPI_Comm_rank(node, &lrank);
        MPI_Comm_free(&node);
        ASSERT_EQ(cudaSuccess, cudaSetDevice(lrank % n));
        setenv("ZAP_COLL_GPU_PATH", "ipc", 1);
        ASSERT_EQ(ZAP_OK, zap_comm_create_mpi(MPI_COMM_WORLD, nullptr, &comm_));
        setenv("ZAP_COLL_GPU_PATH", "off", 1);
        ASSERT_EQ(ZAP_OK, zap_comm_create_mpi(MPI_COMM_WORLD, nullptr, &off_));
        unsetenv("ZAP_COLL_GPU_PATH");
    }
    static void TearDownTestSuite()
    {
        zap_comm_destroy(off_);
        zap_comm_destroy(comm_);
        comm_ = off_ = nullptr;
    }
    void SetUp() override
    {
        if (comm_ == nullptr) {
            if (MpiRank() == 0)
                std::printf("skipped: no CUDA device on some rank\n");
            GTEST_SKIP() << "no CUDA device on some rank";
        }
    }
    // Every rank's input, gathered (host copies), reduced in rank order.
    static std::vector<uint8_t> reference(zap_dtype_t dt, zap_op_t op, const std::vector<uint8_t> &mine, size_t count)
    {
        int p = MpiSize();
        size_t bytes = count * dsize(dt);
        std::vector<uint8_t> all(bytes * (size_t)p);
        MPI_Allgather(mine.data(), (int)bytes, MPI_BYTE, all.data(), (int)bytes, MPI_BYTE, MPI_COMM_WORLD);
        std::vector<uint8_t> acc(all.begin(), all.begin() + (long)bytes);
        for (int r = 1; r < p; r++)
            zap_reduce_cpu(dt, op, acc.data(), acc.data(), all.data() + bytes * (size_t)r, count);
        return acc;
    }
    // One allreduce of count elements on buffers of the kinds asked (device
    // or managed), in place or not; bit for bit against the reference.
    static void one(zap_comm_t *c, zap_dtype_t dt, zap_op_t op, size_t count, bool dev_src, bool dev_dst,
                    bool in_place, uint64_t seed)
    {
        size_t bytes = count * dsize(dt);
        std::vector<uint8_t> in(bytes), got(bytes);
        fill(dt, MpiRank(), seed, in.data(), count);
        std::vector<uint8_t> want = reference(dt, op, in, count);
        void *s = nullptr, *d = nullptr;
        ASSERT_EQ(cudaSuccess, dev_src ? cudaMalloc(&s, bytes) : cudaMallocManaged(&s, bytes));
        if (!in_place)
            ASSERT_EQ(cudaSuccess, dev_dst ? cudaMalloc(&d, bytes) : cudaMallocManaged(&d, bytes));
        else
            d = s;
        ASSERT_EQ(cudaSuccess, cudaMemcpy(s, in.data(), bytes, cudaMemcpyDefault));
        ASSERT_EQ(ZAP_OK, zap_allreduce(c, in_place ? ZAP_IN_PLACE : s, d, count, dt, op))
            << "dt " << dt << " op " << op << " count " << count;
        ASSERT_EQ(cudaSuccess, cudaMemcpy(got.data(), d, bytes, cudaMemcpyDefault));
        EXPECT_EQ(0, std::memcmp(want.data(), got.data(), bytes))
            << "dt " << dt << " op " << op << " count " << count << " in place " << in_place;
        if (!in_place)
            cudaFree(d);
        cudaFree(s);
    }
    static zap_comm_t *comm_, *off_;
};
zap_comm_t *GpuCollMpi::comm_ = nullptr;
zap_comm_t *GpuCollMpi::off_ = nullptr;

TEST_F(GpuCollMpi, AllreduceEveryTypeAndOpBitForBit)
{
    Counts c0;
    uint64_t calls = 0;
    for (int t = 0; t <= ZAP_DT_FLOAT64; t++) // the numeric types (this suite's dsize)
        for (int o = 0; o < ZAP_OP_COUNT; o++) {
            zap_dtype_t dt = (zap_dtype_t)t;
            zap_op_t op = (zap_op_t)o;
            if (!zap_reduce_supported(dt, op) || !zap_gpu_path_combines(dt, op))
                continue; // the others run on the host path (test_colls_mpi.cc)
            size_t large = (ZAP_GPU_BANK_BYTES + 4099) / dsize(dt) + 3;
            for (size_t count : {(size_t)1, (size_t)3, (size_t)100003, large}) {
                one(comm_, dt, op, count, true, o % 2 == 1, count == 3, 31 + (uint64_t)o * 7 + count);
                calls++;
            }
        }
    Counts c1;
    EXPECT_EQ(calls, c1.done - c0.done); // every call on the path
    EXPECT_EQ(c0.fb, c1.fb);
}

// 8 bytes to 64 MiB, odd counts next to each power of two, device buffers.
TEST_F(GpuCollMpi, AllreduceSizesEightBytesTo64MiB)
{
    Counts c0;
    uint64_t calls = 0;
    for (size_t bytes = 8; bytes <= ((size_t)64 << 20); bytes *= 4) {
        for (size_t count : {bytes / 4, bytes / 4 + 1}) {
            one(comm_, ZAP_DT_FLOAT32, ZAP_OP_SUM, count, true, true, false, bytes);
            calls++;
        }
    }
    one(comm_, ZAP_DT_BFLOAT16, ZAP_OP_SUM, ((size_t)64 << 20) / 2 - 5, true, true, true, 9);
    calls++;
    Counts c1;
    EXPECT_EQ(calls, c1.done - c0.done);
}

// Managed buffers cannot be exported: large ones go through the staging buffer.
TEST_F(GpuCollMpi, AllreduceManagedAndMixedBuffers)
{
    Counts c0;
    size_t large = (size_t)(5u << 20) + 3;
    one(comm_, ZAP_DT_FLOAT32, ZAP_OP_SUM, large, false, false, false, 1);
    one(comm_, ZAP_DT_FLOAT32, ZAP_OP_SUM, large, false, false, true, 2);
    one(comm_, ZAP_DT_FLOAT32, ZAP_OP_SUM, large, true, false, false, 3);
    one(comm_, ZAP_DT_FLOAT32, ZAP_OP_SUM, large, false, true, false, 4);
    one(comm_, ZAP_DT_FLOAT64, ZAP_OP_MAX, 1001, false, false, true, 5);
    Counts c1;
    EXPECT_EQ(5u, c1.done - c0.done);
}

// The same buffers again and again (the caches' hits), then freed and
// allocated again, most likely at the same address, with other contents: a
// stale mapping would read the old allocation.
TEST_F(GpuCollMpi, BufferReuseAndReallocationAtTheSameAddress)
{
    const size_t count = (size_t)(3u << 20) / 4 + 7; // past one bank: the users' buffers are opened
    size_t bytes = count * 4;
    int same_address = 0;
    void *prev = nullptr;
    for (int round = 0; round < 4; round++) {
        void *b = nullptr;
        ASSERT_EQ(cudaSuccess, cudaMalloc(&b, bytes));
        same_address += b == prev;
        for (int rep = 0; rep < 3; rep++) {
            std::vector<uint8_t> in(bytes), got(bytes);
            fill(ZAP_DT_INT32, MpiRank(), (uint64_t)(round * 10 + rep), in.data(), count);
            std::vector<uint8_t> want = reference(ZAP_DT_INT32, ZAP_OP_SUM, in, count);
            ASSERT_EQ(cudaSuccess, cudaMemcpy(b, in.data(), bytes, cudaMemcpyDefault));
            ASSERT_EQ(ZAP_OK, zap_allreduce(comm_, ZAP_IN_PLACE, b, count, ZAP_DT_INT32, ZAP_OP_SUM));
            ASSERT_EQ(cudaSuccess, cudaMemcpy(got.data(), b, bytes, cudaMemcpyDefault));
            EXPECT_EQ(want, got) << "round " << round << " repetition " << rep;
        }
        ASSERT_EQ(cudaSuccess, cudaFree(b));
        prev = b;
    }
    if (MpiRank() == 0)
        std::printf("reallocations at the same address: %d of 3\n", same_address);
}

TEST_F(GpuCollMpi, BcastEveryRootAndSize)
{
    Counts c0;
    uint64_t calls = 0;
    for (size_t bytes : {(size_t)1, (size_t)8, (size_t)4097, (size_t)ZAP_GPU_BANK_BYTES, (size_t)(3u << 20) + 5,
                         (size_t)(64u << 20)})
        for (int root = 0; root < MpiSize(); root++) {
            std::vector<uint8_t> data(bytes), got(bytes);
            fill(ZAP_DT_UINT8, root, bytes, data.data(), bytes);
            void *b = nullptr;
            ASSERT_EQ(cudaSuccess, root % 2 ? cudaMallocManaged(&b, bytes) : cudaMalloc(&b, bytes));
            ASSERT_EQ(cudaSuccess, cudaMemset(b, 0xa5, bytes));
            if (MpiRank() == root) {
                ASSERT_EQ(cudaSuccess, cudaMemcpy(b, data.data(), bytes, cudaMemcpyDefault));
            }
            ASSERT_EQ(ZAP_OK, zap_bcast(comm_, b, bytes, ZAP_DT_UINT8, root));
            ASSERT_EQ(cudaSuccess, cudaMemcpy(got.data(), b, bytes, cudaMemcpyDefault));
            EXPECT_EQ(data, got) << "root " << root << " bytes " << bytes;
            cudaFree(b);
            calls++;
        }
    Counts c1;
    EXPECT_EQ(calls, c1.done - c0.done);
    EXPECT_EQ(c0.fb, c1.fb);
}

TEST_F(GpuCollMpi, NonBlockingOverlapSmallAndLarge)
{
    const int k = 6;
    std::vector<float *> bufs(k);
    std::vector<size_t> counts(k);
    std::vector<zap_request_t *> reqs(k);
    for (int i = 0; i < k; i++) {
        counts[i] = i % 2 ? (size_t)(1u << 19) + 5 : (size_t)(1000 + i);
        std::vector<float> h(counts[i]);
        for (size_t j = 0; j < counts[i]; j++)
            h[j] = (float)(i + MpiRank() + (int)(j % 5));
        ASSERT_EQ(cudaSuccess, cudaMalloc(&bufs[i], counts[i] * 4));
        ASSERT_EQ(cudaSuccess, cudaMemcpy(bufs[i], h.data(), counts[i] * 4, cudaMemcpyDefault));
    }
    for (int i = 0; i < k; i++)
        ASSERT_EQ(ZAP_OK,
                  zap_iallreduce(comm_, ZAP_IN_PLACE, bufs[i], counts[i], ZAP_DT_FLOAT32, ZAP_OP_SUM, &reqs[i]));
    for (int i = k - 1; i >= 0; i--) {
        EXPECT_EQ(ZAP_OK, zap_request_wait(reqs[i]));
        zap_request_free(reqs[i]);
    }
    int p = MpiSize();
    long bad = 0;
    for (int i = 0; i < k; i++) {
        std::vector<float> h(counts[i]);
        ASSERT_EQ(cudaSuccess, cudaMemcpy(h.data(), bufs[i], counts[i] * 4, cudaMemcpyDefault));
        for (size_t j = 0; j < counts[i]; j++)
            bad += h[j] != (float)(p * (i + (int)(j % 5)) + p * (p - 1) / 2);
        cudaFree(bufs[i]);
    }
    EXPECT_EQ(0, bad);
}

// Where the path is off, device buffers run the host algorithms on host
// copies (the transport, UCX without CUDA support, never sees them).
TEST_F(GpuCollMpi, DeviceBuffersUnderTheHostAlgorithms)
{
    Counts c0;
    for (size_t count : {(size_t)2, (size_t)3000, (size_t)300001})
        one(off_, ZAP_DT_INT64, ZAP_OP_SUM, count, true, true, count == 3000, count);
    size_t bytes = 200003;
    std::vector<uint8_t> data(bytes), got(bytes);
    fill(ZAP_DT_UINT8, 0, 3, data.data(), bytes);
    void *b = nullptr;
    ASSERT_EQ(cudaSuccess, cudaMalloc(&b, bytes));
    ASSERT_EQ(cudaSuccess, cudaMemset(b, 0, bytes));
    if (MpiRank() == 0) {
        ASSERT_EQ(cudaSuccess, cudaMemcpy(b, data.data(), bytes, cudaMemcpyDefault));
    }
    ASSERT_EQ(ZAP_OK, zap_bcast(off_, b, bytes, ZAP_DT_UINT8, 0));
    ASSERT_EQ(cudaSuccess, cudaMemcpy(got.data(), b, bytes, cudaMemcpyDefault));
    EXPECT_EQ(data, got);
    cudaFree(b);
    Counts c1;
    EXPECT_EQ(c0.done, c1.done);
    EXPECT_EQ(c0.fb, c1.fb);
}

// A rank passing host memory to a large call: every rank takes the host
// algorithms (the vote), results right.
TEST_F(GpuCollMpi, HostBufferOnOneRankFallsBackOnAll)
{
    Counts c0;
    const size_t count = 300001;
    std::vector<uint8_t> in(count * 8), got(count * 8);
    fill(ZAP_DT_INT64, MpiRank(), 77, in.data(), count);
    std::vector<uint8_t> want = reference(ZAP_DT_INT64, ZAP_OP_SUM, in, count);
    std::vector<uint8_t> host(in);
    void *b = host.data();
    if (MpiRank() != 0) {
        ASSERT_EQ(cudaSuccess, cudaMalloc(&b, count * 8));
        ASSERT_EQ(cudaSuccess, cudaMemcpy(b, in.data(), count * 8, cudaMemcpyDefault));
    }
    ASSERT_EQ(ZAP_OK, zap_allreduce(comm_, ZAP_IN_PLACE, b, count, ZAP_DT_INT64, ZAP_OP_SUM));
    ASSERT_EQ(cudaSuccess, cudaMemcpy(got.data(), b, count * 8, cudaMemcpyDefault));
    EXPECT_EQ(want, got);
    if (MpiRank() != 0)
        cudaFree(b);
    Counts c1;
    EXPECT_EQ(c0.done, c1.done);
    EXPECT_EQ(c0.fb + (MpiRank() != 0 ? 1u : 0u), c1.fb);
}

// Small collectives on managed buffers, every rank a process sharing a host
// (and, on a one-GPU machine, the GPU), under the automatic choice: they
// move through the shared segment with the CPU touching the managed pages,
// and make no call that waits for the GPU (engine/mem.c). Each such call
// waited for a GPU time slice when processes shared the device.
TEST_F(GpuCollMpi, SmallManagedCollectivesMakeNoCallThatWaitsForTheGpu)
{
    zap_comm_params_t prm{};
    prm.allreduce_alg = "auto";
    prm.bcast_alg = "auto";
    prm.gpu_path = ZAP_COMM_GPU_PATH_AUTO;
    zap_comm_t *c = nullptr;
    ASSERT_EQ(ZAP_OK, zap_comm_create_ex(zap_comm_transport(comm_), &prm, &c));
    int p = MpiSize(), r = MpiRank();
    int32_t *x = nullptr, *y = nullptr, *g = nullptr;
    ASSERT_EQ(cudaSuccess, cudaMallocManaged((void **)&x, 64));
    ASSERT_EQ(cudaSuccess, cudaMallocManaged((void **)&y, 64));
    ASSERT_EQ(cudaSuccess, cudaMallocManaged((void **)&g, 64 * (size_t)p));
    uint64_t before = zap_cuda_coll_sync_calls();
    for (int i = 0; i < 100; i++) {
        x[0] = r + i;
        x[1] = 1;
        ASSERT_EQ(ZAP_OK, zap_allreduce(c, x, y, 2, ZAP_DT_INT32, ZAP_OP_SUM));
        ASSERT_EQ(y[0], p * (p - 1) / 2 + p * i);
        ASSERT_EQ(ZAP_OK, zap_bcast(c, x, 2, ZAP_DT_INT32, i % p));
        ASSERT_EQ(x[0], i % p + i);
        ASSERT_EQ(ZAP_OK, zap_allgather(c, y, 1, g, ZAP_DT_INT32));
        ASSERT_EQ(g[p - 1], y[0]);
        ASSERT_EQ(ZAP_OK, zap_scatter(c, g, x, 1, ZAP_DT_INT32, 0));
        ASSERT_EQ(x[0], y[0]);
    }
    EXPECT_EQ(before, zap_cuda_coll_sync_calls());
    cudaFree(x);
    cudaFree(y);
    cudaFree(g);
    zap_comm_destroy(c);
}

} // namespace
