/* Element-wise reductions: dst[i] = a[i] op b[i] for i < count, with dst
 * allowed to equal a or b (not to overlap them partially). The CPU loops are
 * written per datatype and op so the compiler vectorises them; float16 and
 * bfloat16 go through float (convert, combine, round to nearest even), which
 * fixes their result bit for bit. Integer sum and product wrap (two's
 * complement), as MPI implementations do. Float min/max return a when neither
 * a < b nor b < a (so NaN handling is fixed, not IEEE minNum).
 *
 * GPU-resident data (managed or device memory) is reduced by the CUDA kernels
 * of cuda/coll (cuda_coll.h), with the same semantics. */
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

#endif
