/* NCCL column of zap-perf coll (see perf_coll_nccl.h). Built with CUDA; NCCL
 * itself is loaded at run time (nccl_dl.h), so the column appears wherever
 * libnccl.so.2 is installed. Every CUDA and NCCL call is checked; a failure
 * disables the column with a message rather than ending the run. */
#include "perf_coll_nccl.h"
#include "perf_common.h"
#include <cuda_runtime.h>
#include "nccl_dl.h"
#include <stdio.h>
#include <stdlib.h>

static ncclComm_t g_nccl;
static cudaStream_t g_stream;
static void *g_buf, *g_out;
static size_t g_cap;
static int g_ok;

#define NCCL_CHECK(call)                                                                                     \
    do {                                                                                                     \
        ncclResult_t r_ = (call);                                                                            \
        if (r_ != ncclSuccess) {                                                                             \
            fprintf(stderr, "zap-perf coll: %s failed: %s\n", #call, ncclGetErrorString(r_));                \
            return -1;                                                                                       \
        }                                                                                                    \
    } while (0)
#define CUDA_CHECK(call)                                                                                     \
    do {                                                                                                     \
        cudaError_t e_ = (call);                                                                             \
        if (e_ != cudaSuccess) {                                                                             \
            fprintf(stderr, "zap-perf coll: %s failed: %s\n", #call, cudaGetErrorString(e_));                \
            return -1;                                                                                       \
        }                                                                                                    \
    } while (0)

int perf_nccl_init(MPI_Comm comm)
{
    setenv("NCCL_NVLS_ENABLE", "0", 1);
    int rank, size;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &size);
    /* Every step is agreed, so a rank whose NCCL fails never leaves the
     * others waiting in NCCL or MPI. */
    int ok = nccl_dl_load() == 0, all = 0;
    MPI_Allreduce(&ok, &all, 1, MPI_INT, MPI_MIN, comm);
    if (!all)
        return -1;
    ncclUniqueId id = {{0}};
    ok = rank != 0 || ncclGetUniqueId(&id) == ncclSuccess;
    MPI_Bcast(&ok, 1, MPI_INT, 0, comm);
    if (!ok)
        return -1;
    MPI_Bcast(&id, sizeof(id), MPI_BYTE, 0, comm);
    ncclResult_t r = ncclCommInitRank(&g_nccl, size, id, rank);
    if (r != ncclSuccess)
        fprintf(stderr, "zap-perf coll: rank %d: ncclCommInitRank failed: %s; NCCL column off\n", rank,
                ncclGetErrorString(r));
    ok = r == ncclSuccess && cudaStreamCreate(&g_stream) == cudaSuccess;
    MPI_Allreduce(&ok, &all, 1, MPI_INT, MPI_MIN, comm);
    if (!all)
        return -1;
    g_ok = 1;
    return 0;
}

static int ensure(size_t bytes)
{
    if (bytes <= g_cap)
        return 0;
    if (g_buf)
        cudaFree(g_buf);
    if (g_out)
        cudaFree(g_out);
    g_buf = g_out = NULL;
    CUDA_CHECK(cudaMalloc(&g_buf, bytes));
    CUDA_CHECK(cudaMalloc(&g_out, bytes));
    CUDA_CHECK(cudaMemset(g_buf, 0, bytes));
    g_cap = bytes;
    return 0;
}

static int once(int allreduce, size_t count, int root)
{
    if (allreduce)
        NCCL_CHECK(ncclAllReduce(g_buf, g_out, count, ncclFloat32, ncclSum, g_nccl, g_stream));
    else
        NCCL_CHECK(ncclBroadcast(g_buf, g_buf, count, ncclFloat32, root, g_nccl, g_stream));
    return 0;
}

int perf_nccl_run(int allreduce, size_t bytes, long iters, long warmup, int root, double *time_us_p,
                  double *lat_us_p)
{
    if (!g_ok || ensure(bytes) != 0)
        return -1;
    size_t count = bytes / 4;
    for (long i = 0; i < warmup; i++)
        if (once(allreduce, count, root) != 0)
            return -1;
    CUDA_CHECK(cudaStreamSynchronize(g_stream));
    MPI_Barrier(MPI_COMM_WORLD);
    double t0 = perf_now();
    for (long i = 0; i < iters; i++)
        if (once(allreduce, count, root) != 0)
            return -1;
    CUDA_CHECK(cudaStreamSynchronize(g_stream));
    double local = (perf_now() - t0) / (double)iters, worst = 0;
    MPI_Allreduce(&local, &worst, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    *time_us_p = worst * 1e6;
    double sum = 0;
    for (long i = 0; i < iters; i++) {
        MPI_Barrier(MPI_COMM_WORLD);
        double s = perf_now();
        if (once(allreduce, count, root) != 0)
            return -1;
        CUDA_CHECK(cudaStreamSynchronize(g_stream));
        sum += perf_now() - s;
    }
    int size = 1;
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    double avg = sum / (double)iters, all = 0;
    MPI_Allreduce(&avg, &all, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    *lat_us_p = all / size * 1e6;
    return 0;
}

void perf_nccl_fini(void)
{
    if (g_buf)
        cudaFree(g_buf);
    if (g_out)
        cudaFree(g_out);
    if (g_ok) {
        ncclCommDestroy(g_nccl);
        cudaStreamDestroy(g_stream);
    }
    g_ok = 0;
}
