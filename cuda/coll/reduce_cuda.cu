/* Reductions on GPU-resident data for the collectives: dst[i] = a[i] op b[i]
 * with a, b and dst in managed, device or mapped pinned memory, so managed
 * pages are reduced where they live instead of being dragged to the host.
 *
 * Launch shape: a grid-stride loop, 256 threads per block, at most 4096
 * blocks; one element per thread per iteration. zap_cuda_reduce runs them on
 * the legacy default stream and waits (the host algorithms' steps are
 * synchronous with respect to their data); zap_cuda_reduce_async queues them
 * on a given stream. Semantics (combine.cuh) match the CPU loops in
 * core/coll/reduce/reduce_cpu.c bit for bit. Every CUDA call is checked. */
#include <atomic>
#include <cuda_runtime.h>
#include <stdint.h>
#include "combine.cuh"
extern "C" {
#include "cuda_coll.h"
#include "reduce_cuda_mpi.h"
#include "base/log.h"
}

template <typename T> __global__ void reduce_int_kernel(zap_op_t op, T *d, const T *a, const T *b, size_t n)
{
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
        d[i] = zap_combine_int<T>(op, a[i], b[i]);
}

template <typename T> __global__ void reduce_float_kernel(zap_op_t op, T *d, const T *a, const T *b, size_t n)
{
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
        d[i] = zap_combine_float<T>(op, a[i], b[i]);
}

/* float16 / bfloat16 through float; __float2half_rn / __float2bfloat16_rn
 * round to nearest even like the CPU conversion. */
__global__ void reduce_half_kernel(zap_op_t op, __half *d, const __half *a, const __half *b, size_t n)
{
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
        d[i] = __float2half_rn(zap_combine_float<float>(op, __half2float(a[i]), __half2float(b[i])));
}

__global__ void reduce_bf16_kernel(zap_op_t op, __nv_bfloat16 *d, const __nv_bfloat16 *a, const __nv_bfloat16 *b,
                                   size_t n)
{
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
        d[i] = __float2bfloat16_rn(zap_combine_float<float>(op, __bfloat162float(a[i]), __bfloat162float(b[i])));
}

static zap_status_t check(cudaError_t err, const char *what)
{
    if (err == cudaSuccess)
        return ZAP_OK;
    zap_error("cuda: %s failed: %s (%s)", what, cudaGetErrorString(err), cudaGetErrorName(err));
    return ZAP_ERR_CUDA;
}

static std::atomic<uint64_t> ptr_queries;

extern "C" uint64_t zap_cuda_ptr_queries(void) { return ptr_queries.load(std::memory_order_relaxed); }

extern "C" zap_mem_kind_t zap_cuda_ptr_kind(const void *ptr)
{
    if (!zap_gpu_device_present()) /* asked once: no device, every pointer is host memory */
        return ZAP_MEM_HOST;
    ptr_queries.fetch_add(1, std::memory_order_relaxed);
    cudaPointerAttributes attr;
    cudaError_t err = cudaPointerGetAttributes(&attr, ptr);
    if (err != cudaSuccess) {
        (void)cudaGetLastError(); /* not a CUDA pointer, or no driver: host */
        return ZAP_MEM_HOST;
    }
    switch (attr.type) {
    case cudaMemoryTypeDevice: return ZAP_MEM_DEVICE;
    case cudaMemoryTypeManaged: return ZAP_MEM_MANAGED;
    case cudaMemoryTypeHost: return ZAP_MEM_PINNED;
    default: return ZAP_MEM_HOST;
    }
}

static std::atomic<uint64_t> sync_calls;

extern "C" uint64_t zap_cuda_coll_sync_calls(void) { return sync_calls.load(std::memory_order_relaxed); }

extern "C" zap_status_t zap_cuda_copy(void *dst, const void *src, size_t bytes)
{
    sync_calls.fetch_add(1, std::memory_order_relaxed);
    return check(cudaMemcpy(dst, src, bytes, cudaMemcpyDefault), "cudaMemcpy (collective copy)");
}

/* Launches the kernel for dt on stream without waiting. */
static zap_status_t launch(cudaStream_t stream, zap_dtype_t dt, zap_op_t op, void *dst, const void *a, const void *b,
                           size_t n)
{
    if (n == 0)
        return ZAP_OK;
    unsigned threads = 256;
    size_t want = (n + threads - 1) / threads;
    unsigned blocks = want > 4096 ? 4096u : (unsigned)want;
    if (op >= ZAP_OP_LAND || dt > ZAP_DT_FLOAT64) { /* MPI's further ops and types: reduce_cuda_mpi.cu */
        zap_status_t st = zap_cuda_launch_mpi(stream, dt, op, dst, a, b, n, blocks, threads);
        return st != ZAP_OK ? st : check(cudaGetLastError(), "reduction kernel launch");
    }
    switch (dt) {
    case ZAP_DT_INT8: reduce_int_kernel<int8_t><<<blocks, threads, 0, stream>>>(op, (int8_t *)dst, (const int8_t *)a, (const int8_t *)b, n); break;
    case ZAP_DT_INT16: reduce_int_kernel<int16_t><<<blocks, threads, 0, stream>>>(op, (int16_t *)dst, (const int16_t *)a, (const int16_t *)b, n); break;
    case ZAP_DT_INT32: reduce_int_kernel<int32_t><<<blocks, threads, 0, stream>>>(op, (int32_t *)dst, (const int32_t *)a, (const int32_t *)b, n); break;
    case ZAP_DT_INT64: reduce_int_kernel<int64_t><<<blocks, threads, 0, stream>>>(op, (int64_t *)dst, (const int64_t *)a, (const int64_t *)b, n); break;
    case ZAP_DT_UINT8: reduce_int_kernel<uint8_t><<<blocks, threads, 0, stream>>>(op, (uint8_t *)dst, (const uint8_t *)a, (const uint8_t *)b, n); break;
    case ZAP_DT_UINT16: reduce_int_kernel<uint16_t><<<blocks, threads, 0, stream>>>(op, (uint16_t *)dst, (const uint16_t *)a, (const uint16_t *)b, n); break;
    case ZAP_DT_UINT32: reduce_int_kernel<uint32_t><<<blocks, threads, 0, stream>>>(op, (uint32_t *)dst, (const uint32_t *)a, (const uint32_t *)b, n); break;
    case ZAP_DT_UINT64: reduce_int_kernel<uint64_t><<<blocks, threads, 0, stream>>>(op, (uint64_t *)dst, (const uint64_t *)a, (const uint64_t *)b, n); break;
    case ZAP_DT_FLOAT16: reduce_half_kernel<<<blocks, threads, 0, stream>>>(op, (__half *)dst, (const __half *)a, (const __half *)b, n); break;
    case ZAP_DT_BFLOAT16: reduce_bf16_kernel<<<blocks, threads, 0, stream>>>(op, (__nv_bfloat16 *)dst, (const __nv_bfloat16 *)a, (const __nv_bfloat16 *)b, n); break;
    case ZAP_DT_FLOAT32: reduce_float_kernel<float><<<blocks, threads, 0, stream>>>(op, (float *)dst, (const float *)a, (const float *)b, n); break;
    case ZAP_DT_FLOAT64: reduce_float_kernel<double><<<blocks, threads, 0, stream>>>(op, (double *)dst, (const double *)a, (const double *)b, n); break;
    default: return ZAP_ERR_INVALID_PARAM;
    }
    return check(cudaGetLastError(), "reduction kernel launch");
}

extern "C" zap_status_t zap_cuda_reduce(zap_dtype_t dt, zap_op_t op, void *dst, const void *a, const void *b,
                                        size_t n)
{
    if (n == 0)
        return ZAP_OK;
    sync_calls.fetch_add(1, std::memory_order_relaxed);
    zap_status_t st = launch(0, dt, op, dst, a, b, n);
    if (st != ZAP_OK)
        return st;
    return check(cudaDeviceSynchronize(), "reduction kernel");
}

/* Queued on a caller's stream (zap-gpu-bounds times the kernel this way). */
extern "C" zap_status_t zap_cuda_reduce_async(void *stream, zap_dtype_t dt, zap_op_t op, void *dst, const void *a,
                                              const void *b, size_t n)
{
    return launch((cudaStream_t)stream, dt, op, dst, a, b, n);
}
