/* The element-wise combinations of the collectives on the device, shared by
 * the reduction kernels (reduce_cuda.cu) and the GPU path's kernels
 * (gpu_kernels.cu). Semantics match the CPU loops in
 * core/coll/reduce/reduce_cpu.c bit for bit: integer sum and product wrap
 * (computed unsigned), float min/max return a unless b is strictly
 * smaller/larger, float16/bfloat16 combine in float and round to nearest
 * even once per combination. */
#ifndef ZAP_CUDA_COMBINE_CUH
#define ZAP_CUDA_COMBINE_CUH
#include <cuda_fp16.h>
#include <cuda_bf16.h>
#include <stdint.h>
extern "C" {
#include "zap/coll.h"
}

template <typename T> struct zap_wrap { typedef T type; };
template <> struct zap_wrap<int8_t> { typedef uint8_t type; };
template <> struct zap_wrap<int16_t> { typedef uint16_t type; };
template <> struct zap_wrap<int32_t> { typedef uint32_t type; };
template <> struct zap_wrap<int64_t> { typedef uint64_t type; };

template <typename T> __device__ __forceinline__ T zap_combine_int(zap_op_t op, T a, T b)
{
    typedef typename zap_wrap<T>::type U;
    switch (op) {
    case ZAP_OP_SUM: return (T)(U)((U)a + (U)b);
    case ZAP_OP_PROD: return (T)(U)((U)a * (U)b);
    case ZAP_OP_MIN: return a < b ? a : b;
    case ZAP_OP_MAX: return a > b ? a : b;
    case ZAP_OP_BAND: return (T)(a & b);
    case ZAP_OP_BOR: return (T)(a | b);
    default: return (T)(a ^ b);
    }
}

template <typename T> __device__ __forceinline__ T zap_combine_float(zap_op_t op, T a, T b)
{
    switch (op) {
    case ZAP_OP_SUM: return a + b;
    case ZAP_OP_PROD: return a * b;
    case ZAP_OP_MIN: return b < a ? b : a;
    default: return b > a ? b : a;
    }
}

/* One combination of any element type; __float2half_rn / __float2bfloat16_rn
 * round to nearest even like the CPU conversion. */
template <typename T> __device__ __forceinline__ T zap_combine(zap_op_t op, T a, T b) { return zap_combine_int<T>(op, a, b); }
template <> __device__ __forceinline__ float zap_combine<float>(zap_op_t op, float a, float b)
{
    return zap_combine_float<float>(op, a, b);
}
template <> __device__ __forceinline__ double zap_combine<double>(zap_op_t op, double a, double b)
{
    return zap_combine_float<double>(op, a, b);
}
template <> __device__ __forceinline__ __half zap_combine<__half>(zap_op_t op, __half a, __half b)
{
    return __float2half_rn(zap_combine_float<float>(op, __half2float(a), __half2float(b)));
}
template <> __device__ __forceinline__ __nv_bfloat16 zap_combine<__nv_bfloat16>(zap_op_t op, __nv_bfloat16 a,
                                                                                 __nv_bfloat16 b)
{
    return __float2bfloat16_rn(zap_combine_float<float>(op, __bfloat162float(a), __bfloat162float(b)));
}
#endif
