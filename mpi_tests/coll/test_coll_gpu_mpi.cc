// The GPU-resident collective path (core/coll/gpu) between processes:
// each rank on its own GPU (local rank modulo the device count), staging
// slots opened through CUDA IPC, peer copies, the cuda/coll kernels.
// Results are checked bit for bit against a CPU reduction of every rank's
// input in rank order (the path's fixed order), and the path's counters must
// show that the calls really took it. Skips, on every rank, without a device.
#include <gtest/gtest.h>
#include <cstdint>
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
        setenv("ZAP_ALLREDUCE_ALG", "ring", 1); // the path declines under rd, which auto picks for small vectors
        setenv("ZAP_BCAST_ALG", "binomial", 1);
        ASSERT_EQ(ZAP_OK, zap_comm_create_mpi(MPI_COMM_WORLD, nullptr, &comm_));
    }
    static void TearDownTestSuite()
    {
        zap_comm_destroy(comm_);
        comm_ = nullptr;
        unsetenv("ZAP_COLL_GPU_PATH");
        unsetenv("ZAP_ALLREDUCE_ALG");
        unsetenv("ZAP_BCAST_ALG");
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
    static zap_comm_t *comm_;
};
zap_comm_t *GpuCollMpi::comm_ = nullptr;

TEST_F(GpuCollMpi, AllreduceEveryTypeAndOpBitForBit)
{
    uint64_t d0, f0, d1, f1;
    zap_stage_counts(&d0, &f0);
    uint64_t calls = 0;
    for (int t = 0; t < ZAP_DT_COUNT; t++)
        for (int o = 0; o < ZAP_OP_COUNT; o++) {
            zap_dtype_t dt = (zap_dtype_t)t;
            zap_op_t op = (zap_op_t)o;
            if (!zap_reduce_supported(dt, op))
                continue;
            for (size_t count : {(size_t)100003, (size_t)3}) {
                size_t bytes = count * dsize(dt);
                std::vector<uint8_t> in(bytes), got(bytes);
                fill(dt, MpiRank(), 31 + (uint64_t)o * 7 + count, in.data(), count);
                std::vector<uint8_t> want = reference(dt, op, in, count);
                void *s = nullptr, *d = nullptr;
                ASSERT_EQ(cudaSuccess, cudaMallocManaged(&s, bytes));
                ASSERT_EQ(cudaSuccess, (o % 2) ? cudaMalloc(&d, bytes) : cudaMallocManaged(&d, bytes));
                ASSERT_EQ(cudaSuccess, cudaMemcpy(s, in.data(), bytes, cudaMemcpyDefault));
                ASSERT_EQ(ZAP_OK, zap_allreduce(comm_, s, d, count, dt, op)) << "dt " << t << " op " << o;
                ASSERT_EQ(cudaSuccess, cudaMemcpy(got.data(), d, bytes, cudaMemcpyDefault));
                EXPECT_EQ(0, std::memcmp(want.data(), got.data(), bytes)) << "dt " << t << " op " << o << " count " << count;
                cudaFree(s);
                cudaFree(d);
                calls++;
            }
        }
    zap_stage_counts(&d1, &f1);
    EXPECT_EQ(calls, d1 - d0); // every call on the path, count 3 too
    EXPECT_EQ(f0, f1);
}

TEST_F(GpuCollMpi, AllreduceInPlaceAndLarge)
{
    const size_t count = (size_t)(9u << 20) + 7; // 36 MiB of float32
    std::vector<uint8_t> in(count * 4), got(count * 4);
    fill(ZAP_DT_FLOAT32, MpiRank(), 5, in.data(), count);
    std::vector<uint8_t> want = reference(ZAP_DT_FLOAT32, ZAP_OP_SUM, in, count);
    void *b = nullptr;
    ASSERT_EQ(cudaSuccess, cudaMallocManaged(&b, count * 4));
    for (int rep = 0; rep < 3; rep++) {
        ASSERT_EQ(cudaSuccess, cudaMemcpy(b, in.data(), count * 4, cudaMemcpyDefault));
        ASSERT_EQ(ZAP_OK, zap_allreduce(comm_, ZAP_IN_PLACE, b, count, ZAP_DT_FLOAT32, ZAP_OP_SUM));
        ASSERT_EQ(cudaSuccess, cudaMemcpy(got.data(), b, count * 4, cudaMemcpyDefault));
        EXPECT_EQ(0, std::memcmp(want.data(), got.data(), count * 4)) << "repetition " << rep;
    }
    cudaFree(b);
}

TEST_F(GpuCollMpi, BcastEveryRootAndSize)
{
    uint64_t d0, f0, d1, f1;
    zap_stage_counts(&d0, &f0);
    uint64_t calls = 0;
    for (size_t bytes : {(size_t)1, (size_t)4097, (size_t)(3u << 20) + 5, (size_t)(64u << 20)})
        for (int root = 0; root < MpiSize(); root++) {
            std::vector<uint8_t> data(bytes), got(bytes);
            fill(ZAP_DT_UINT8, root, bytes, data.data(), bytes);
            void *b = nullptr;
            ASSERT_EQ(cudaSuccess, root % 2 ? cudaMalloc(&b, bytes) : cudaMallocManaged(&b, bytes));
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
    zap_stage_counts(&d1, &f1);
    EXPECT_EQ(calls, d1 - d0);
    EXPECT_EQ(f0, f1);
}

TEST_F(GpuCollMpi, NonBlockingOverlap)
{
    const int k = 4;
    const size_t count = 1u << 18;
    std::vector<float *> bufs(k);
    std::vector<zap_request_t *> reqs(k);
    for (int i = 0; i < k; i++) {
        ASSERT_EQ(cudaSuccess, cudaMallocManaged(&bufs[i], count * 4));
        for (size_t j = 0; j < count; j++)
            bufs[i][j] = (float)(i + MpiRank() + (int)(j % 5));
    }
    for (int i = 0; i < k; i++)
        ASSERT_EQ(ZAP_OK, zap_iallreduce(comm_, ZAP_IN_PLACE, bufs[i], count, ZAP_DT_FLOAT32, ZAP_OP_SUM, &reqs[i]));
    for (int i = k - 1; i >= 0; i--) {
        EXPECT_EQ(ZAP_OK, zap_request_wait(reqs[i]));
        zap_request_free(reqs[i]);
    }
    int p = MpiSize();
    long bad = 0;
    for (int i = 0; i < k; i++) {
        for (size_t j = 0; j < count; j++)
            bad += bufs[i][j] != (float)(p * (i + (int)(j % 5)) + p * (p - 1) / 2);
        cudaFree(bufs[i]);
    }
    EXPECT_EQ(0, bad);
}

TEST_F(GpuCollMpi, HostBufferOnOneRankFallsBackOnAll)
{
    uint64_t d0, f0, d1, f1;
    zap_stage_counts(&d0, &f0);
    const size_t count = 300001;
    std::vector<uint8_t> in(count * 8), got(count * 8);
    fill(ZAP_DT_INT64, MpiRank(), 77, in.data(), count);
    std::vector<uint8_t> want = reference(ZAP_DT_INT64, ZAP_OP_SUM, in, count);
    std::vector<uint8_t> host(in);
    void *b = host.data();
    if (MpiRank() != 0) {
        ASSERT_EQ(cudaSuccess, cudaMallocManaged(&b, count * 8));
        std::memcpy(b, in.data(), count * 8);
    }
    ASSERT_EQ(ZAP_OK, zap_allreduce(comm_, ZAP_IN_PLACE, b, count, ZAP_DT_INT64, ZAP_OP_SUM));
    std::memcpy(got.data(), b, count * 8);
    EXPECT_EQ(want, got);
    if (MpiRank() != 0)
        cudaFree(b);
    zap_stage_counts(&d1, &f1);
    EXPECT_EQ(d0, d1);
    EXPECT_EQ(f0 + 1, f1);
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
