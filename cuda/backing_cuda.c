/* CUDA backings: managed (cudaMallocManaged) and pinned mapped host memory
 * (cudaHostAlloc with cudaHostAllocMapped). The managed backing refuses a
 * chunk that would leave less than a safety margin of the device's memory
 * free: oversubscribing managed memory can hang the GPU, not only the process. */
#include "pool/backing.h"
#include "base/log.h"
#include <cuda_runtime.h>
#include <stdlib.h>

typedef struct {
    int device;
} cuda_ctx_t;

static zap_status_t cuda_check(cudaError_t err, const char *what)
{
    if (err == cudaSuccess)
        return ZAP_OK;
    zap_error("cuda: %s failed: %s (%s)", what, cudaGetErrorString(err), cudaGetErrorName(err));
    return err == cudaErrorMemoryAllocation ? ZAP_ERR_NO_MEMORY : ZAP_ERR_CUDA;
}

int zap_cuda_device_count(const char **why_p)
{
    int n = 0;
    cudaError_t err = cudaGetDeviceCount(&n);
    if (err != cudaSuccess) {
        if (why_p != NULL)
            *why_p = cudaGetErrorString(err);
        (void)cudaGetLastError();
        return 0;
    }
    if (n == 0 && why_p != NULL)
        *why_p = "no CUDA device";
    return n;
}

zap_status_t zap_cuda_device_info(int dev, char *name, size_t name_len, uint64_t *free_p, uint64_t *total_p)
{
    struct cudaDeviceProp prop;
    zap_status_t st = cuda_check(cudaGetDeviceProperties(&prop, dev), "cudaGetDeviceProperties");
    if (st != ZAP_OK)
        return st;
    if (name != NULL && name_len > 0) {
        size_t i = 0;
        for (; i + 1 < name_len && prop.name[i] != '\0'; i++)
            name[i] = prop.name[i];
        name[i] = '\0';
    }
    int prev = 0;
    (void)cudaGetDevice(&prev);
    st = cuda_check(cudaSetDevice(dev), "cudaSetDevice");
    size_t fr = 0, tot = 0;
    if (st == ZAP_OK)
        st = cuda_check(cudaMemGetInfo(&fr, &tot), "cudaMemGetInfo");
    (void)cudaSetDevice(prev);
    if (st == ZAP_OK) {
        if (free_p)
            *free_p = fr;
        if (total_p)
            *total_p = tot;
    }
    return st;
}

static zap_status_t cuda_init(int device, void **ctx_p)
{
    cuda_ctx_t *c = malloc(sizeof(*c));
    if (c == NULL)
        return ZAP_ERR_NO_MEMORY;
    if (device < 0 && cudaGetDevice(&device) != cudaSuccess)
        device = 0;
    c->device = device;
    *ctx_p = c;
    return ZAP_OK;
}

static void cuda_fini(void *ctx) { free(ctx); }

static zap_status_t managed_alloc(void *ctx, size_t len, void **ptr_p, void **dev_p)
{
    cuda_ctx_t *c = ctx;
    zap_status_t st = cuda_check(cudaSetDevice(c->device), "cudaSetDevice");
    if (st != ZAP_OK)
        return st;
    size_t fr = 0, tot = 0;
    st = cuda_check(cudaMemGetInfo(&fr, &tot), "cudaMemGetInfo");
    if (st != ZAP_OK)
        return st;
    size_t margin = tot / 20 > ((size_t)256 << 20) ? tot / 20 : ((size_t)256 << 20);
    if (fr < margin || len > fr - margin) {
        zap_error("pool: managed backing: refusing %zu bytes: device %d has %zu bytes free and keeps %zu "
                  "in reserve (oversubscribing managed memory can hang the GPU)",
                  len, c->device, fr, margin);
        return ZAP_ERR_NO_MEMORY;
    }
    void *p = NULL;
    st = cuda_check(cudaMallocManaged(&p, len, cudaMemAttachGlobal), "cudaMallocManaged");
    if (st != ZAP_OK)
        return st;
    *ptr_p = p;
    *dev_p = p;
    return ZAP_OK;
}

static void managed_release(void *ctx, void *ptr, size_t len)
{
    (void)ctx;
    (void)len;
    (void)cuda_check(cudaFree(ptr), "cudaFree");
}

static zap_status_t managed_prefetch(void *ctx, void *ptr, size_t len, int to_device)
{
    cuda_ctx_t *c = ctx;
    struct cudaMemLocation loc;
    loc.type = to_device ? cudaMemLocationTypeDevice : cudaMemLocationTypeHost;
    loc.id = to_device ? c->device : 0;
    return cuda_check(cudaMemPrefetchAsync(ptr, len, loc, 0, 0), "cudaMemPrefetchAsync");
}

static zap_status_t pinned_alloc(void *ctx, size_t len, void **ptr_p, void **dev_p)
{
    cuda_ctx_t *c = ctx;
    zap_status_t st = cuda_check(cudaSetDevice(c->device), "cudaSetDevice");
    if (st != ZAP_OK)
        return st;
    void *p = NULL;
    st = cuda_check(cudaHostAlloc(&p, len, cudaHostAllocMapped | cudaHostAllocPortable), "cudaHostAlloc");
    if (st != ZAP_OK)
        return st;
    void *d = NULL;
    st = cuda_check(cudaHostGetDevicePointer(&d, p, 0), "cudaHostGetDevicePointer");
    if (st != ZAP_OK) {
        (void)cudaFreeHost(p);
        return st;
    }
    *ptr_p = p;
    *dev_p = d;
    return ZAP_OK;
}

static void pinned_release(void *ctx, void *ptr, size_t len)
{
    (void)ctx;
    (void)len;
    (void)cuda_check(cudaFreeHost(ptr), "cudaFreeHost");
}

static const zap_backing_ops_t managed_ops = {
    .name = "managed", .kind = ZAP_MEM_MANAGED, .init = cuda_init, .alloc = managed_alloc,
    .release = managed_release, .prefetch = managed_prefetch, .fini = cuda_fini,
};

static const zap_backing_ops_t pinned_ops = {
    .name = "pinned", .kind = ZAP_MEM_PINNED, .init = cuda_init, .alloc = pinned_alloc,
    .release = pinned_release, .prefetch = NULL, .fini = cuda_fini,
};

zap_status_t zap_cuda_backing(zap_pool_backend_t which, const zap_backing_ops_t **ops_p, const char **why_p)
{
    if (zap_cuda_device_count(why_p) <= 0)
        return ZAP_ERR_UNSUPPORTED;
    if (which == ZAP_POOL_BACKEND_MANAGED)
        *ops_p = &managed_ops;
    else if (which == ZAP_POOL_BACKEND_PINNED)
        *ops_p = &pinned_ops;
    else
        return ZAP_ERR_INVALID_PARAM;
    return ZAP_OK;
}

/* The transport stages from whatever thread sends, while the same process may
 * be running kernels (zap-verify verifies on the GPU while its sender thread
 * streams records). On the legacy default stream the prefetch and its sync
 * would wait for all that work; a non-blocking stream per thread waits only
 * for the prefetch. Streams live until the CUDA context goes. */
static _Thread_local cudaStream_t prefetch_stream;
static _Thread_local int prefetch_stream_device = -1;

zap_status_t zap_cuda_prefetch_host_sync(const void *ptr, size_t len)
{
    int dev = 0;
    zap_status_t ds = cuda_check(cudaGetDevice(&dev), "cudaGetDevice (prefetch)");
    if (ds != ZAP_OK)
        return ds;
    if (prefetch_stream == NULL || prefetch_stream_device != dev) {
        /* A stream belongs to the device current when it was made; a thread
         * that switched devices gets one of the new device (the old stays). */
        prefetch_stream = NULL;
        prefetch_stream_device = dev;
        zap_status_t cs = cuda_check(cudaStreamCreateWithFlags(&prefetch_stream, cudaStreamNonBlocking),
                                     "cudaStreamCreateWithFlags (prefetch)");
        if (cs != ZAP_OK)
            return cs;
    }
    struct cudaMemLocation loc;
    loc.type = cudaMemLocationTypeHost;
    loc.id = 0;
    zap_status_t st =
        cuda_check(cudaMemPrefetchAsync(ptr, len, loc, 0, prefetch_stream), "cudaMemPrefetchAsync (to host)");
    if (st == ZAP_OK)
        st = cuda_check(cudaStreamSynchronize(prefetch_stream), "cudaStreamSynchronize after prefetch to host");
    return st;
}
