/* CPU-only build: no GPU reductions, and every pointer is host memory as far
 * as the collectives can tell (without CUDA there is no other kind). */
#include "cuda_coll.h"

zap_mem_kind_t zap_cuda_ptr_kind(const void *ptr)
{
    (void)ptr;
    return ZAP_MEM_HOST;
}

uint64_t zap_cuda_coll_sync_calls(void) { return 0; }
uint64_t zap_cuda_ptr_queries(void) { return 0; }

zap_status_t zap_cuda_copy(void *dst, const void *src, size_t bytes)
{
    (void)dst;
    (void)src;
    (void)bytes;
    return ZAP_ERR_UNSUPPORTED;
}

zap_status_t zap_cuda_reduce(zap_dtype_t dt, zap_op_t op, void *dst, const void *a, const void *b, size_t count)
{
    (void)dt;
    (void)op;
    (void)dst;
    (void)a;
    (void)b;
    (void)count;
    return ZAP_ERR_UNSUPPORTED;
}
