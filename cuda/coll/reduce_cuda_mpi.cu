/* Reductions on GPU-resident data for the ops and types MPI adds (the CPU
 * loops are core/coll/reduce/reduce_mpi.c; the semantics match them bit for
 * bit): logical ops on the integer types, complex sum and product, minloc and
 * maxloc on the pair types other than long double's (which device code cannot
 * represent: zap_cuda_reduce returns ZAP_ERR_UNSUPPORTED, as for user ops).
 *
 * Launch shape as in reduce_cuda.cu: a grid-stride loop, 256 threads per
 * block, at most 4096 blocks, one element per thread per iteration. The
 * complex product uses the _rn intrinsics, which the compiler never fuses
 * into a multiply-add, so its rounding is the CPU loop's: two products and
 * one sum or difference per part. */
#include <cuda_runtime.h>
#include <stdint.h>
extern "C" {
#include "cuda_coll.h"
#include "reduce_cuda_mpi.h"
}

template <typename T> __global__ void logical_kernel(zap_op_t op, T *d, const T *a, const T *b, size_t n)
{
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) {
        bool x = a[i] != 0, y = b[i] != 0;
        d[i] = (T)(op == ZAP_OP_LAND ? (x && y) : op == ZAP_OP_LOR ? (x || y) : (x != y));
    }
}

__global__ void complex_f_kernel(zap_op_t op, float2 *d, const float2 *a, const float2 *b, size_t n)
{
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) {
        float2 x = a[i], y = b[i], r;
        if (op == ZAP_OP_SUM) {
            r.x = __fadd_rn(x.x, y.x);
            r.y = __fadd_rn(x.y, y.y);
        } else {
            r.x = __fsub_rn(__fmul_rn(x.x, y.x), __fmul_rn(x.y, y.y));
            r.y = __fadd_rn(__fmul_rn(x.x, y.y), __fmul_rn(x.y, y.x));
        }
        d[i] = r;
    }
}

__global__ void complex_d_kernel(zap_op_t op, double2 *d, const double2 *a, const double2 *b, size_t n)
{
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) {
        double2 x = a[i], y = b[i], r;
        if (op == ZAP_OP_SUM) {
            r.x = __dadd_rn(x.x, y.x);
            r.y = __dadd_rn(x.y, y.y);
        } else {
            r.x = __dsub_rn(__dmul_rn(x.x, y.x), __dmul_rn(x.y, y.y));
            r.y = __dadd_rn(__dmul_rn(x.x, y.y), __dmul_rn(x.y, y.x));
        }
        d[i] = r;
    }
}

template <typename P> __global__ void loc_kernel(bool max, P *d, const P *a, const P *b, size_t n)
{
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) {
        auto av = a[i].v, bv = b[i].v;
        int ak = a[i].k, bk = b[i].k;
        bool first = max ? av > bv : av < bv, tie = av == bv;
        d[i] = first || tie ? a[i] : b[i]; /* the winner whole, as the CPU loops copy it */
        d[i].k = first ? ak : tie ? (ak < bk ? ak : bk) : bk;
    }
}

extern "C" zap_status_t zap_cuda_launch_mpi(void *stream_p, zap_dtype_t dt, zap_op_t op, void *dst, const void *a,
                                            const void *b, size_t n, unsigned blocks, unsigned threads)
{
    cudaStream_t stream = (cudaStream_t)stream_p;
    if (op == ZAP_OP_LAND || op == ZAP_OP_LOR || op == ZAP_OP_LXOR) {
        switch (dt) {
        case ZAP_DT_INT8: case ZAP_DT_UINT8: logical_kernel<uint8_t><<<blocks, threads, 0, stream>>>(op, (uint8_t *)dst, (const uint8_t *)a, (const uint8_t *)b, n); return ZAP_OK;
        case ZAP_DT_INT16: case ZAP_DT_UINT16: logical_kernel<uint16_t><<<blocks, threads, 0, stream>>>(op, (uint16_t *)dst, (const uint16_t *)a, (const uint16_t *)b, n); return ZAP_OK;
        case ZAP_DT_INT32: case ZAP_DT_UINT32: logical_kernel<uint32_t><<<blocks, threads, 0, stream>>>(op, (uint32_t *)dst, (const uint32_t *)a, (const uint32_t *)b, n); return ZAP_OK;
        case ZAP_DT_INT64: case ZAP_DT_UINT64: logical_kernel<uint64_t><<<blocks, threads, 0, stream>>>(op, (uint64_t *)dst, (const uint64_t *)a, (const uint64_t *)b, n); return ZAP_OK;
        default: return ZAP_ERR_UNSUPPORTED;
        }
    }
    bool max = op == ZAP_OP_MAXLOC;
    switch (dt) {
    case ZAP_DT_COMPLEX64: complex_f_kernel<<<blocks, threads, 0, stream>>>(op, (float2 *)dst, (const float2 *)a, (const float2 *)b, n); return ZAP_OK;
    case ZAP_DT_COMPLEX128: complex_d_kernel<<<blocks, threads, 0, stream>>>(op, (double2 *)dst, (const double2 *)a, (const double2 *)b, n); return ZAP_OK;
    case ZAP_DT_FLOAT_INT: loc_kernel<zap_float_int_t><<<blocks, threads, 0, stream>>>(max, (zap_float_int_t *)dst, (const zap_float_int_t *)a, (const zap_float_int_t *)b, n); return ZAP_OK;
    case ZAP_DT_DOUBLE_INT: loc_kernel<zap_double_int_t><<<blocks, threads, 0, stream>>>(max, (zap_double_int_t *)dst, (const zap_double_int_t *)a, (const zap_double_int_t *)b, n); return ZAP_OK;
    case ZAP_DT_LONG_INT: loc_kernel<zap_long_int_t><<<blocks, threads, 0, stream>>>(max, (zap_long_int_t *)dst, (const zap_long_int_t *)a, (const zap_long_int_t *)b, n); return ZAP_OK;
    case ZAP_DT_2INT: loc_kernel<zap_2int_t><<<blocks, threads, 0, stream>>>(max, (zap_2int_t *)dst, (const zap_2int_t *)a, (const zap_2int_t *)b, n); return ZAP_OK;
    case ZAP_DT_SHORT_INT: loc_kernel<zap_short_int_t><<<blocks, threads, 0, stream>>>(max, (zap_short_int_t *)dst, (const zap_short_int_t *)a, (const zap_short_int_t *)b, n); return ZAP_OK;
    default: return ZAP_ERR_UNSUPPORTED; /* long double pairs, user ops */
    }
}
