/* CPU-only build: no device, so the GPU-resident collective path is never
 * chosen and the host algorithms run (core/coll/gpu). */
#include "cuda_coll.h"

bool zap_gpu_device_present(void) { return false; }

bool zap_gpu_can_move(zap_mem_kind_t kind)
{
    (void)kind;
    return false;
}

uint64_t zap_gpu_host_id(void) { return 0; }

zap_status_t zap_gpu_chan_create(int me, int size, zap_gpu_chan_t **ch_p, zap_gpu_ref_t *ref)
{
    (void)me;
    (void)size;
    (void)ch_p;
    (void)ref;
    return ZAP_ERR_UNSUPPORTED;
}

zap_status_t zap_gpu_chan_connect(zap_gpu_chan_t *ch, const zap_gpu_ref_t *refs)
{
    (void)ch;
    (void)refs;
    return ZAP_ERR_UNSUPPORTED;
}

void zap_gpu_chan_destroy(zap_gpu_chan_t *ch) { (void)ch; }

zap_status_t zap_gpu_expose(zap_gpu_chan_t *ch, const void *ptr, size_t bytes, zap_gpu_ref_t *ref)
{
    (void)ch;
    (void)ptr;
    (void)bytes;
    (void)ref;
    return ZAP_ERR_UNSUPPORTED;
}

zap_status_t zap_gpu_stage_acquire(zap_gpu_chan_t *ch, size_t bytes, void **ptr_p, zap_gpu_ref_t *ref)
{
    (void)ch;
    (void)bytes;
    (void)ptr_p;
    (void)ref;
    return ZAP_ERR_UNSUPPORTED;
}

void zap_gpu_stage_release(zap_gpu_chan_t *ch) { (void)ch; }

zap_status_t zap_gpu_open(zap_gpu_chan_t *ch, const zap_gpu_ref_t *ref, void **ptr_p)
{
    (void)ch;
    (void)ref;
    (void)ptr_p;
    return ZAP_ERR_UNSUPPORTED;
}

zap_status_t zap_gpu_launch(zap_gpu_chan_t *ch, const zap_gpu_launch_t *l, uint64_t *ticket_p)
{
    (void)ch;
    (void)l;
    (void)ticket_p;
    return ZAP_ERR_UNSUPPORTED;
}

zap_status_t zap_gpu_test(zap_gpu_chan_t *ch, uint64_t ticket)
{
    (void)ch;
    (void)ticket;
    return ZAP_ERR_UNSUPPORTED;
}
