/* The verification job's device calls (verify_device.h) on the CUDA
 * runtime. Failures are not errors here: a thread that cannot select its
 * device warns (in the caller) and goes on, and a segment without a device
 * buffer is verified from its host bytes. */
#include "verify_device.h"
#include <cuda_runtime_api.h>

int zap_verify_device_current(void)
{
    int dev = -1;
    if (cudaGetDevice(&dev) != cudaSuccess) {
        (void)cudaGetLastError();
        return -1;
    }
    return dev;
}

zap_status_t zap_verify_device_select(int dev)
{
    if (cudaSetDevice(dev) != cudaSuccess) {
        (void)cudaGetLastError();
        return ZAP_ERR_CUDA;
    }
    return ZAP_OK;
}

void *zap_verify_device_alloc(size_t len)
{
    void *d = NULL;
    if (cudaMalloc(&d, len ? len : 1) != cudaSuccess) {
        (void)cudaGetLastError();
        return NULL;
    }
    return d;
}

int zap_verify_device_copy(void *dst, const void *src, size_t len)
{
    if (cudaMemcpy(dst, src, len, cudaMemcpyHostToDevice) != cudaSuccess) {
        (void)cudaGetLastError();
        return 0;
    }
    return 1;
}

void zap_verify_device_free(void *d)
{
    if (d && cudaFree(d) != cudaSuccess)
        (void)cudaGetLastError();
}
