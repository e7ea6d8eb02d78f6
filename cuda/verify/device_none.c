/* Without CUDA there is no device: no device buffers and no staging ring, so
 * the job's streams receive into host memory (verify_device.h). */
#include "verify_device.h"

int zap_verify_device_current(void)
{
    return -1;
}

zap_status_t zap_verify_device_select(int dev)
{
    (void)dev;
    return ZAP_ERR_UNSUPPORTED;
}

void *zap_verify_device_alloc(size_t len)
{
    (void)len;
    return NULL;
}

int zap_verify_device_copy(void *dst, const void *src, size_t len)
{
    (void)dst, (void)src, (void)len;
    return 0;
}

void zap_verify_device_free(void *d)
{
    (void)d;
}

zap_verify_ring_t *zap_verify_ring_acquire(int dev)
{
    (void)dev;
    return NULL;
}

void zap_verify_ring_release(zap_verify_ring_t *r)
{
    (void)r;
}

unsigned char *zap_verify_ring_slot(zap_verify_ring_t *r, size_t j)
{
    (void)r, (void)j;
    return NULL;
}

zap_status_t zap_verify_ring_copy(zap_verify_ring_t *r, size_t j, void *dst, size_t len)
{
    (void)r, (void)j, (void)dst, (void)len;
    return ZAP_ERR_UNSUPPORTED;
}

zap_status_t zap_verify_ring_wait(zap_verify_ring_t *r, size_t j)
{
    (void)r, (void)j;
    return ZAP_ERR_UNSUPPORTED;
}

unsigned long zap_verify_ring_copies(void)
{
    return 0;
}
