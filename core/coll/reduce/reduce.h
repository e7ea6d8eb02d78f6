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

/* True when op is defined on dt (zap/coll.h has the table; a live user op
 * on every type). */
bool zap_reduce_supported(zap_dtype_t dt, zap_op_t op);
/* CPU reduction; dt and op must be supported. For a user op, dst = a op b
 * means fn(a, b) into dst (a is the lower ranks' operand). */
void zap_reduce_cpu(zap_dtype_t dt, zap_op_t op, void *dst, const void *a, const void *b, size_t count);
/* dst = ((srcs[0] op srcs[1]) op srcs[2]) ... op srcs[n-1] (n >= 1; dst may
 * be none of srcs), the same bytes as a copy of srcs[0] and n - 1 calls of
 * zap_reduce_cpu, with the datatype's dispatch done once: the shared-memory
 * forms reduce one operand per rank. */
void zap_reduce_cpu_many(zap_dtype_t dt, zap_op_t op, void *dst, const void *const *srcs, int n, size_t count);
/* Whether the CUDA kernels of cuda/coll reduce dt with op (the predefined
 * ops on every type but long double pairs; no user op). */
bool zap_reduce_gpu_capable(zap_dtype_t dt, zap_op_t op);

/* This rank's own error for a reduction of dt with op on buffers of kind
 * mem, logged with coll's name: ZAP_ERR_INVALID_PARAM for an invalid
 * datatype or op (a user op that does not exist), ZAP_ERR_UNSUPPORTED for an
 * op not defined on dt or one without a GPU kernel on device memory; ZAP_OK
 * (reduce_check.c). */
zap_status_t zap_reduce_check(int rank, const char *coll, zap_dtype_t dt, zap_op_t op, zap_mem_kind_t mem);

/* The ops and types MPI adds to zap's first ones (reduce_mpi.c): logical ops
 * on integers, complex sum and product, minloc and maxloc on pairs. */
void zap_reduce_cpu_mpi(zap_dtype_t dt, zap_op_t op, void *dst, const void *a, const void *b, size_t count);

/* --- user ops (reduce_user.c) ------------------------------------------------ */
static inline bool zap_op_is_user(zap_op_t op)
{
    return (unsigned)op >= (unsigned)ZAP_OP_USER_FIRST && (unsigned)op <= (unsigned)ZAP_OP_USER_LAST;
}
/* Whether op is a user op that exists now. */
bool zap_user_op_live(zap_op_t op);
/* Whether op combines operands in any order to the same result: every
 * predefined op, and user ops made commutative. */
bool zap_op_commutative(zap_op_t op);
/* The value the argument header's op lane carries for op: the op itself for
 * a predefined one, one of two values for a user op (commutative or not),
 * so ranks whose user ops are different functions still agree. */
unsigned zap_op_lane(zap_op_t op);
/* dst = a op b by the user function (chunked through a bounce buffer when
 * dst is a, since the function writes its second operand). */
void zap_reduce_user(zap_dtype_t dt, zap_op_t op, void *dst, const void *a, const void *b, size_t count);

/* float16 / bfloat16 conversions used by the CPU loops and by tests. */
float zap_half_to_float(uint16_t h);
uint16_t zap_float_to_half(float f);
float zap_bf16_to_float(uint16_t h);
uint16_t zap_float_to_bf16(float f);

#endif
