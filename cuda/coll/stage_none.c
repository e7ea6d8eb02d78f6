/* CPU-only build: no staging slots, so the GPU-resident collective path
 * always declines and the host algorithms run (core/coll/gpu). */
#include "cuda_coll.h"

bool zap_stage_device_present(void) { return false; }

uint64_t zap_stage_host_id(void) { return 0; }

bool zap_stage_can_move(zap_mem_kind_t kind)
{
    (void)kind;
    return false;
}

zap_status_t zap_stage_acquire(size_t bytes, zap_stage_slot_t **slot_p, zap_stage_ref_t *ref)
{
    (void)bytes;
    (void)slot_p;
    (void)ref;
    return ZAP_ERR_UNSUPPORTED;
}

void zap_stage_release(zap_stage_slot_t *slot) { (void)slot; }

void *zap_stage_base(zap_stage_slot_t *slot)
{
    (void)slot;
    return NULL;
}

void *zap_stage_mailbox(zap_stage_slot_t *slot, size_t *mailbox_bytes)
{
    (void)slot;
    *mailbox_bytes = 0;
    return NULL;
}

zap_status_t zap_stage_peer(const zap_stage_ref_t *ref, void **base_p)
{
    (void)ref;
    (void)base_p;
    return ZAP_ERR_UNSUPPORTED;
}

zap_status_t zap_stage_copy(zap_stage_slot_t *slot, void *dst, const void *src, size_t bytes)
{
    (void)slot;
    (void)dst;
    (void)src;
    (void)bytes;
    return ZAP_ERR_UNSUPPORTED;
}

zap_status_t zap_stage_reduce(zap_stage_slot_t *slot, zap_dtype_t dt, zap_op_t op, void *dst, const void *a,
                              const void *b, size_t count)
{
    (void)slot;
    return zap_cuda_reduce_async(NULL, dt, op, dst, a, b, count);
}

void zap_stage_prefetch(zap_stage_slot_t *slot, const void *ptr, size_t bytes)
{
    (void)slot;
    (void)ptr;
    (void)bytes;
}

zap_status_t zap_stage_fence(zap_stage_slot_t *slot)
{
    (void)slot;
    return ZAP_ERR_UNSUPPORTED;
}

zap_status_t zap_stage_test(zap_stage_slot_t *slot)
{
    (void)slot;
    return ZAP_ERR_UNSUPPORTED;
}

zap_status_t zap_cuda_reduce_async(void *stream, zap_dtype_t dt, zap_op_t op, void *dst, const void *a,
                                   const void *b, size_t count)
{
    (void)stream;
    (void)dt;
    (void)op;
    (void)dst;
    (void)a;
    (void)b;
    (void)count;
    return ZAP_ERR_UNSUPPORTED;
}
