/* A pool backing: where chunks come from. core/ supplies the host backing;
 * cuda/ supplies managed and pinned (or, in a CPU-only build, reports them
 * unsupported), so core/ builds and tests without a GPU. */
#ifndef ZAP_POOL_BACKING_H
#define ZAP_POOL_BACKING_H
#include <stddef.h>
#include <stdint.h>
#include "zap/pool.h"

typedef struct zap_backing_ops {
    const char *name;
    zap_mem_kind_t kind;
    /* Prepares the backing for device (-1: current). */
    zap_status_t (*init)(int device, void **ctx_p);
    /* len is a multiple of the page size. *dev_p gets the device address (NULL
     * where the GPU cannot address it). Must refuse, with ZAP_ERR_NO_MEMORY,
     * rather than oversubscribe a device. */
    zap_status_t (*alloc)(void *ctx, size_t len, void **ptr_p, void **dev_p);
    void (*release)(void *ctx, void *ptr, size_t len);
    /* Residency hint; NULL when meaningless for the backing. */
    zap_status_t (*prefetch)(void *ctx, void *ptr, size_t len, int to_device);
    void (*fini)(void *ctx);
} zap_backing_ops_t;

extern const zap_backing_ops_t zap_backing_host;

/* Implemented in cuda/: the managed or pinned backing, or ZAP_ERR_UNSUPPORTED
 * (with *why_p set) in a CPU-only build or without a device. */
zap_status_t zap_cuda_backing(zap_pool_backend_t which, const zap_backing_ops_t **ops_p, const char **why_p);
/* Number of CUDA devices visible (0 in a CPU-only build or when the driver is
 * missing); *why_p (optional) explains a 0. */
int zap_cuda_device_count(const char **why_p);
/* Device name and free/total memory of device dev; ZAP_ERR_UNSUPPORTED without
 * CUDA. */
zap_status_t zap_cuda_device_info(int dev, char *name, size_t name_len, uint64_t *free_p, uint64_t *total_p);
/* Moves the managed range [ptr, ptr+len) to host memory and waits until it is
 * there, so that a CPU-side consumer (UCX without CUDA support) does not fault
 * pages over one at a time. ZAP_ERR_UNSUPPORTED without CUDA; ZAP_ERR_CUDA. */
zap_status_t zap_cuda_prefetch_host_sync(const void *ptr, size_t len);
#endif
