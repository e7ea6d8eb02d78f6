/* The pinned staging ring of a rank's device copies (verify_device.h,
 * docs/verify.md "Where received segments live"). Each chunk of a segment is
 * received into a slot of page-locked memory and copied from there to the
 * segment's device buffer on a stream of the ring's own, so the copy is a
 * DMA that overlaps the next receive and the running kernel, instead of a
 * synchronous copy from pageable memory staged by the driver. Pinning is
 * slow (docs/performance.md) and stalls the GPU calls of the process
 * meanwhile, so the ring is small and fixed (independent of the shard), made
 * before the job's transfers (zap_verify_ring_acquire from the job's
 * preparation) and kept for the next job on the same device.
 *
 * Slot i is free once the event recorded after the copy out of it has
 * completed; queued[i] says whether such a copy is outstanding. */
#include "verify_device.h"
#include "base/log.h"
#include <cuda_runtime_api.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>

#define MAX_DEVICES 64
/* Rings kept per device between jobs: one per rank of a process that runs
 * several ranks on one device (inproc), up to this many. */
#define KEEP 4

struct zap_verify_ring {
    int dev;
    int broken;                 /* a CUDA call failed: not kept for another job */
    unsigned char *host;        /* ZAP_VERIFY_RING_SLOTS * ZAP_VERIFY_RING_SLOT_BYTES, pinned */
    cudaStream_t stream;
    cudaEvent_t ev[ZAP_VERIFY_RING_SLOTS];
    int queued[ZAP_VERIFY_RING_SLOTS]; /* a copy out of the slot was queued */
};

static atomic_ulong copies;
static pthread_mutex_t cache_mu = PTHREAD_MUTEX_INITIALIZER;
static zap_verify_ring_t *cache[MAX_DEVICES][KEEP];

unsigned long zap_verify_ring_copies(void)
{
    return atomic_load(&copies);
}

static int cuda_ok(zap_verify_ring_t *r, cudaError_t e, const char *what)
{
    if (e == cudaSuccess)
        return 1;
    zap_error("verify: staging ring on device %d: %s: %s", r->dev, what, cudaGetErrorString(e));
    (void)cudaGetLastError();
    r->broken = 1;
    return 0;
}

static void ring_free(zap_verify_ring_t *r)
{
    for (int i = 0; i < ZAP_VERIFY_RING_SLOTS; i++)
        if (r->ev[i])
            (void)cudaEventDestroy(r->ev[i]);
    if (r->stream)
        (void)cudaStreamDestroy(r->stream);
    if (r->host)
        (void)cudaFreeHost(r->host);
    (void)cudaGetLastError();
    free(r);
}

zap_verify_ring_t *zap_verify_ring_acquire(int dev)
{
    if (dev < 0 || dev >= MAX_DEVICES)
        return NULL;
    zap_verify_ring_t *r = NULL;
    pthread_mutex_lock(&cache_mu);
    for (int i = 0; i < KEEP && !r; i++) {
        r = cache[dev][i];
        cache[dev][i] = NULL;
    }
    pthread_mutex_unlock(&cache_mu);
    if (r)
        return r;
    if (!(r = calloc(1, sizeof(*r))))
        return NULL;
    r->dev = dev;
    void *h = NULL;
    int ok = cuda_ok(r,
                     cudaHostAlloc(&h, (size_t)ZAP_VERIFY_RING_SLOTS * ZAP_VERIFY_RING_SLOT_BYTES,
                                   cudaHostAllocPortable),
                     "cudaHostAlloc");
    r->host = ok ? h : NULL;
    ok = ok && cuda_ok(r, cudaStreamCreateWithFlags(&r->stream, cudaStreamNonBlocking), "cudaStreamCreate");
    for (int i = 0; i < ZAP_VERIFY_RING_SLOTS && ok; i++)
        ok = cuda_ok(r, cudaEventCreateWithFlags(&r->ev[i], cudaEventDisableTiming), "cudaEventCreate");
    if (!ok) {
        ring_free(r);
        return NULL;
    }
    return r;
}

void zap_verify_ring_release(zap_verify_ring_t *r)
{
    if (!r)
        return;
    (void)cuda_ok(r, cudaStreamSynchronize(r->stream), "cudaStreamSynchronize");
    for (int i = 0; i < ZAP_VERIFY_RING_SLOTS; i++)
        r->queued[i] = 0;
    int keep = 0;
    pthread_mutex_lock(&cache_mu);
    for (int i = 0; i < KEEP && !keep && !r->broken; i++)
        if (!cache[r->dev][i]) {
            cache[r->dev][i] = r;
            keep = 1;
        }
    pthread_mutex_unlock(&cache_mu);
    if (!keep)
        ring_free(r);
}

zap_status_t zap_verify_ring_wait(zap_verify_ring_t *r, size_t j)
{
    size_t i = j % ZAP_VERIFY_RING_SLOTS;
    if (r->queued[i] && !cuda_ok(r, cudaEventSynchronize(r->ev[i]), "cudaEventSynchronize"))
        return ZAP_ERR_CUDA;
    r->queued[i] = 0;
    return ZAP_OK;
}

unsigned char *zap_verify_ring_slot(zap_verify_ring_t *r, size_t j)
{
    if (zap_verify_ring_wait(r, j) != ZAP_OK)
        return NULL;
    return r->host + (j % ZAP_VERIFY_RING_SLOTS) * ZAP_VERIFY_RING_SLOT_BYTES;
}

zap_status_t zap_verify_ring_copy(zap_verify_ring_t *r, size_t j, void *dst, size_t len)
{
    size_t i = j % ZAP_VERIFY_RING_SLOTS;
    if (len > ZAP_VERIFY_RING_SLOT_BYTES ||
        !cuda_ok(r,
                 cudaMemcpyAsync(dst, r->host + i * ZAP_VERIFY_RING_SLOT_BYTES, len, cudaMemcpyHostToDevice,
                                 r->stream),
                 "cudaMemcpyAsync") ||
        !cuda_ok(r, cudaEventRecord(r->ev[i], r->stream), "cudaEventRecord"))
        return ZAP_ERR_CUDA;
    r->queued[i] = 1;
    atomic_fetch_add(&copies, 1);
    return ZAP_OK;
}
