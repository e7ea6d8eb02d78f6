/* The checks every reducing collective makes of its datatype, op and memory
 * kind (reduce.h), with one wording of their errors. */
#include "coll/reduce/reduce.h"
#include "base/log.h"
#include <stdatomic.h>

/* Built-in (datatype, op) pairs found valid on host buffers: every small
 * reducing call checks its pair, and the answer never changes (a user op's
 * may: it can be freed, so those are checked each time). */
static _Atomic uint8_t host_ok[ZAP_DT_COUNT][ZAP_OP_COUNT];

zap_status_t zap_reduce_check(int rank, const char *coll, zap_dtype_t dt, zap_op_t op, zap_mem_kind_t mem)
{
    bool builtin = (unsigned)dt < ZAP_DT_COUNT && (unsigned)op < ZAP_OP_COUNT;
    if (builtin && mem != ZAP_MEM_DEVICE && atomic_load_explicit(&host_ok[dt][op], memory_order_relaxed))
        return ZAP_OK;
    bool op_ok = zap_op_is_user(op) ? zap_user_op_live(op) : (unsigned)op < ZAP_OP_COUNT;
    if (zap_dtype_size(dt) == 0 || !op_ok) {
        zap_error("coll: rank %d: %s: invalid datatype %d or op %d%s", rank, coll, (int)dt, (int)op,
                  zap_op_is_user(op) ? " (a user op that does not exist, or no longer)" : "");
        return ZAP_ERR_INVALID_PARAM;
    }
    if (!zap_reduce_supported(dt, op)) {
        zap_error("coll: rank %d: %s: op %s is not defined on datatype %s (zap/coll.h has the table)", rank, coll,
                  zap_op_name(op), zap_dtype_name(dt));
        return ZAP_ERR_UNSUPPORTED;
    }
    if (mem == ZAP_MEM_DEVICE && !zap_reduce_gpu_capable(dt, op)) {
        zap_error("coll: rank %d: %s: op %s on datatype %s has no GPU kernel, and the buffers are device memory", rank,
                  coll, zap_op_name(op), zap_dtype_name(dt));
        return ZAP_ERR_UNSUPPORTED;
    }
    if (builtin)
        atomic_store_explicit(&host_ok[dt][op], 1, memory_order_relaxed);
    return ZAP_OK;
}
