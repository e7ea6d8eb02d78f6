/* CPU-only build: the CUDA backings do not exist, and say why. */
#include "pool/backing.h"

static const char *const no_cuda = "zap was built without CUDA";

zap_status_t zap_cuda_backing(zap_pool_backend_t which, const zap_backing_ops_t **ops_p, const char **why_p)
{
    (void)which;
    (void)ops_p;
    if (why_p != NULL)
        *why_p = no_cuda;
    return ZAP_ERR_UNSUPPORTED;
}

int zap_cuda_device_count(const char **why_p)
{
    if (why_p != NULL)
        *why_p = no_cuda;
    return 0;
}

zap_status_t zap_cuda_device_info(int dev, char *name, size_t name_len, uint64_t *free_p, uint64_t *total_p)
{
    (void)dev;
    (void)name;
    (void)name_len;
    (void)free_p;
    (void)total_p;
    return ZAP_ERR_UNSUPPORTED;
}

zap_status_t zap_cuda_prefetch_host_sync(const void *ptr, size_t len)
{
    (void)ptr;
    (void)len;
    return ZAP_ERR_UNSUPPORTED;
}
