/* Element-wise reductions: dst[i] = a[i] op b[i] for i < count, with dst
 * allowed to equal a or b (not to overlap them partially). The CPU loops are
 * written per datatype and op so the compiler vectorises them; float16 and
 * bfloat16 go through float (convert, combine, round to nearest even), which
 * fixes their result bit for bit. Integer sum and product wrap (two's
 * complement), as MPI implementations do. Float min/max return a when neither
 * a < b nor b < a (so NaN handling is fixed, not IEEE minNum).
 *
 * GPU-resident data (managed or device memory) is reduced by the CUDA kernels
 * in cuda/reduce (declared here, implemented there; without CUDA they report
 * ZAP_ERR_UNSUPPORTED and every pointer is host memory). */
#ifndef ZAP_COLL_REDUCE_H
#define ZAP_COLL_REDUCE_H
#include <stdbool.h>
#include <stddef.h>
#include "zap/coll.h"
#include "zap/pool.h"

/* True when op is defined on dt (bitwise ops on integers only). */
bool zap_reduce_supported(zap_dtype_t dt, zap_op_t op);
/* CPU reduction; dt and op must be supported. */
void zap_reduce_cpu(zap_dtype_t dt, zap_op_t op, void *dst, const void *a, const void *b, size_t count);

/* float16 / bfloat16 conversions used by the CPU loops and by tests. */
float zap_half_to_float(uint16_t h);
uint16_t zap_float_to_half(float f);
float zap_bf16_to_float(uint16_t h);
uint16_t zap_float_to_bf16(float f);

/* --- cuda/reduce ---------------------------------------------------------- */
/* Where ptr lives: ZAP_MEM_DEVICE, ZAP_MEM_MANAGED, ZAP_MEM_PINNED or
 * ZAP_MEM_HOST (also for any pointer CUDA does not know, and always without
 * CUDA). Asks the CUDA driver (cudaPointerGetAttributes); never guesses. */
zap_mem_kind_t zap_cuda_ptr_kind(const void *ptr);
/* dst = src, bytes, for any combination of host, managed and device memory;
 * synchronous. ZAP_ERR_UNSUPPORTED without CUDA, ZAP_ERR_CUDA on failure. */
zap_status_t zap_cuda_copy(void *dst, const void *src, size_t bytes);
/* The GPU form of zap_reduce_cpu (kernel launch and wait). a, b and dst must
 * be addressable by the device (managed, device or mapped pinned memory). */
zap_status_t zap_cuda_reduce(zap_dtype_t dt, zap_op_t op, void *dst, const void *a, const void *b, size_t count);
#endif
