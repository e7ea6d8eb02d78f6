// The address-space epoch the UCX transport keeps through UCX's memory hooks
// (core/base/vm_epoch.h, core/transport/ucp_vm.c), and the collectives'
// record of host buffers that rests on it (core/coll/engine/mem.c): repeated
// calls on the same host buffers ask CUDA once; an unmapped buffer is asked
// about again.
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <cstdlib>
#include <vector>
#include "mpi_harness.h"
extern "C" {
#include "zap/coll.h"
#include "zap/ucp.h"
#include "base/vm_epoch.h"
#include "cuda_coll.h"
}

namespace {
class UcpVmEpoch : public testing::Test {
  protected:
    zap_transport_t *t = nullptr;
    zap_comm_t *comm = nullptr;
    void SetUp() override
    {
        ASSERT_EQ(zap_vm_epoch(), 0u) << "no transport yet: nothing watches the address space";
        ASSERT_EQ(zap_ucp_transport_create(MPI_COMM_WORLD, nullptr, &t), ZAP_OK);
        ASSERT_EQ(zap_comm_create(t, &comm), ZAP_OK);
    }
    void TearDown() override
    {
        if (comm != nullptr)
            zap_comm_destroy(comm);
        zap_transport_close(t);
        EXPECT_EQ(zap_vm_epoch(), 0u) << "the last transport closed stops watching";
    }
    void Allreduce(const int *in, int *out, size_t n)
    {
        ASSERT_EQ(zap_allreduce(comm, in, out, n, ZAP_DT_INT32, ZAP_OP_SUM), ZAP_OK);
        for (size_t i = 0; i < n; i++)
            ASSERT_EQ(out[i], in[i] * MpiSize()) << i;
    }
};
} // namespace

TEST_F(UcpVmEpoch, UnmappingMovesTheEpoch)
{
    uint64_t e0 = zap_vm_epoch();
    ASSERT_NE(e0, 0u) << "UCX's memory hooks deliver events under mpirun here";
    void *p = mmap(nullptr, 1 << 20, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    ASSERT_NE(p, MAP_FAILED);
    static_cast<char *>(p)[0] = 1;
    munmap(p, 1 << 20);
    EXPECT_GT(zap_vm_epoch(), e0);
    // glibc serves a large block with its own mapping and gives it back on free.
    uint64_t e1 = zap_vm_epoch();
    void *big = malloc(64 << 20);
    ASSERT_NE(big, nullptr);
    static_cast<char *>(big)[0] = 1;
    free(big);
    EXPECT_GT(zap_vm_epoch(), e1);
}

TEST_F(UcpVmEpoch, RepeatedCallsOnTheSameHostBuffersAskCudaOnce)
{
    bool present = zap_gpu_device_present();
    int all = 0, mine = present ? 1 : 0;
    MPI_Allreduce(&mine, &all, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    if (!all)
        GTEST_SKIP() << "no CUDA device on some rank: host pointers are never asked about there";
    const size_t n = 256;
    std::vector<int> in(n), out(n);
    for (size_t i = 0; i < n; i++)
        in[i] = (int)i;
    Allreduce(in.data(), out.data(), n);
    uint64_t q0 = zap_cuda_ptr_queries();
    for (int i = 0; i < 100; i++)
        Allreduce(in.data(), out.data(), n);
    EXPECT_EQ(zap_cuda_ptr_queries(), q0) << "both buffers were recorded by the first call";
    // A buffer of its own mapping, unmapped and mapped again: asked again.
    const size_t bytes = (size_t)2 << 20;
    int *m = static_cast<int *>(mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
    ASSERT_NE(m, MAP_FAILED);
    for (size_t i = 0; i < n; i++)
        m[i] = (int)i;
    Allreduce(m, out.data(), n);
    uint64_t q1 = zap_cuda_ptr_queries();
    Allreduce(m, out.data(), n);
    EXPECT_EQ(zap_cuda_ptr_queries(), q1);
    munmap(m, bytes);
    m = static_cast<int *>(mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
    ASSERT_NE(m, MAP_FAILED);
    for (size_t i = 0; i < n; i++)
        m[i] = (int)i;
    Allreduce(m, out.data(), n);
    EXPECT_GT(zap_cuda_ptr_queries(), q1) << "the epoch moved: the record is stale";
    munmap(m, bytes);
}
