/* GPU batch verification of Ed25519 signatures (libsodium 1.0.18 rule).
 *
 * One fused kernel, one thread per item: read the record, check S < L and the
 * R/A blocklists, decode A, SHA-512(R || A || M) mod L, [k](-A) + [S]B, encode,
 * compare with R, write the verdict byte, and let lane 0 of each warp write
 * the warp's bitmap word (__ballot_sync). All arithmetic comes from
 * ed25519_arith.h, the same source the host reference (and CI) runs.
 *
 * Launch shape: blocks of ZAP_ED25519_BLOCK (128) threads, grid ceil(n/128).
 * Assumptions: the block size is a multiple of 32, so a warp covers items
 * [32w, 32w + 32) and its ballot is exactly bitmap word w; every thread of a
 * warp reaches the ballot (no early return before it). Each block copies the
 * 7,680-byte base-point table into shared memory once. Per thread, the -A
 * table (8 cached points, 1,280 bytes), the two NAF digit strings (512 bytes)
 * and the SHA-512 block buffer live in local memory (L1-cached).
 *
 * Memory: host records are copied into a device buffer that is kept between
 * calls and grown as needed; device records are used in place; managed
 * records are prefetched to the device. A process-wide mutex serialises
 * callers, since those buffers and the stream are shared. */
#include <cuda_runtime.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

extern "C" {
#include "base/log.h"
}

#include "ed25519_arith.h"
#include "ed25519_gpu.h"
#include "ed25519_host.h"
#include "ed25519_records.h"

#define ZAP_ED25519_BLOCK 128
#define ZAP_ED25519_MAX_DEVICES 64

/* The kernel comes in three register budgets; ZAP_ED25519_GPU_VARIANT=2, 3
 * or 4 picks one at run time (default 3; the benchmark measures all three).
 * MINB is the minimum number of resident 128-thread blocks per SM asked of
 * the compiler: 2 lets a thread use 255 registers (it takes 176, no spills),
 * 3 caps it at 168 (a few bytes spill), 4 at 128. */
template <int MINB>
__global__ void __launch_bounds__(ZAP_ED25519_BLOCK, MINB)
    zap_ed25519_verify_kernel(const uint8_t *__restrict__ records, uint64_t stride, uint64_t n,
                              int variable_msgs, const uint8_t *__restrict__ blob,
                              uint64_t blob_len, const zap_ge_niels_t *__restrict__ btab,
                              uint8_t *__restrict__ verdicts, uint32_t *__restrict__ bitmap)
{
    __shared__ zap_ge_niels_t sbtab[ZAP_ED25519_BTAB_N];
    {
        const int words = (int)(sizeof(sbtab) / sizeof(int32_t));
        const int32_t *src = (const int32_t *)btab;
        int32_t *dst = (int32_t *)sbtab;
        for (int w = threadIdx.x; w < words; w += blockDim.x)
            dst[w] = src[w];
    }
    __syncthreads();

    uint64_t i = (uint64_t)blockIdx.x * blockDim.x + threadIdx.x;
    uint8_t v = ZAP_ED25519_VERDICT_INVALID;
    if (i < n) {
        const uint8_t *rec = records + i * stride;
        /* pk, R, S into registers/local memory: 16-byte loads when aligned */
        uint4 words[6];
        if ((((uintptr_t)rec) & 15) == 0) {
            const uint4 *r4 = (const uint4 *)rec;
            for (int k = 0; k < 6; k++)
                words[k] = r4[k];
        } else {
            uint8_t *wb = (uint8_t *)words;
            for (int k = 0; k < 96; k++)
                wb[k] = rec[k];
        }
        const uint8_t *local = (const uint8_t *)words;
        const uint8_t *msg;
        uint64_t len;
        if (!zap_ed25519_record_msg(rec, variable_msgs, blob, blob_len, &msg, &len))
            v = ZAP_ED25519_VERDICT_MALFORMED;
        else
            v = (uint8_t)zap_ed25519_verify_item(local, local + 32, local + 64, msg, len, sbtab);
        verdicts[i] = v;
    }
    unsigned ballot = __ballot_sync(0xffffffffu, v == ZAP_ED25519_VERDICT_VALID);
    if (bitmap != NULL && (threadIdx.x & 31) == 0 && i < n)
        bitmap[i >> 5] = ballot;
}

/* ------------------------------------------------------------------------ */
/* Host side                                                                 */
/* ------------------------------------------------------------------------ */

typedef struct zap_ed25519_dev_state {
    int ready;
    cudaStream_t stream;
    cudaEvent_t ev[4];
    zap_ge_niels_t *btab;
    uint8_t *records;
    size_t records_cap;
    uint8_t *blob;
    size_t blob_cap;
    uint8_t *verdicts;
    size_t verdicts_cap;
    uint32_t *bitmap;
    size_t bitmap_cap;
} zap_ed25519_dev_state_t;

static pthread_mutex_t zap_ed25519_gpu_lock = PTHREAD_MUTEX_INITIALIZER;
static zap_ed25519_dev_state_t zap_ed25519_devs[ZAP_ED25519_MAX_DEVICES];

/* Log a failed CUDA call once, with CUDA's own text. Returns 1 on success. */
static int zap_ed25519_cuda_ok(cudaError_t e, const char *what)
{
    if (e == cudaSuccess)
        return 1;
    zap_error("ed25519 gpu: %s failed: %s (%s)", what, cudaGetErrorString(e), cudaGetErrorName(e));
    return 0;
}

static zap_status_t zap_ed25519_cuda_status(cudaError_t e)
{
    return e == cudaErrorMemoryAllocation ? ZAP_ERR_NO_MEMORY : ZAP_ERR_CUDA;
}

extern "C" int zap_ed25519_gpu_device_count(void)
{
    int count = 0;
    if (cudaGetDeviceCount(&count) != cudaSuccess) {
        (void)cudaGetLastError(); /* clear the sticky-free error state */
        return 0;
    }
    return count;
}

extern "C" zap_status_t zap_ed25519_gpu_use_device(int dev)
{
    int count = zap_ed25519_gpu_device_count();
    if (dev < 0 || dev >= count) {
        zap_error("ed25519 gpu: device %d does not exist (%d visible)", dev, count);
        return ZAP_ERR_NOT_FOUND;
    }
    return zap_ed25519_cuda_ok(cudaSetDevice(dev), "cudaSetDevice") ? ZAP_OK : ZAP_ERR_CUDA;
}

extern "C" int zap_ed25519_gpu_available(void)
{
    return zap_ed25519_gpu_device_count() > 0;
}

static double zap_ed25519_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

/* Grow a cached device buffer to at least want bytes (rounded up to a power
 * of two so a sweep of batch sizes reallocates rarely). */
static zap_status_t zap_ed25519_grow(void **buf, size_t *cap, size_t want, const char *what)
{
    if (*cap >= want)
        return ZAP_OK;
    size_t c = 4096;
    while (c < want)
        c <<= 1;
    if (*buf != NULL) {
        cudaError_t e = cudaFree(*buf);
        *buf = NULL;
        *cap = 0;
        if (!zap_ed25519_cuda_ok(e, "cudaFree"))
            return ZAP_ERR_CUDA;
    }
    cudaError_t e = cudaMalloc(buf, c);
    if (!zap_ed25519_cuda_ok(e, what)) {
        *buf = NULL;
        return zap_ed25519_cuda_status(e);
    }
    *cap = c;
    return ZAP_OK;
}

static zap_status_t zap_ed25519_dev_init(zap_ed25519_dev_state_t *d)
{
    if (d->ready)
        return ZAP_OK;
    cudaError_t e = cudaStreamCreateWithFlags(&d->stream, cudaStreamNonBlocking);
    if (!zap_ed25519_cuda_ok(e, "cudaStreamCreateWithFlags"))
        return zap_ed25519_cuda_status(e);
    for (int k = 0; k < 4; k++) {
        e = cudaEventCreate(&d->ev[k]);
        if (!zap_ed25519_cuda_ok(e, "cudaEventCreate"))
            return zap_ed25519_cuda_status(e);
    }
    e = cudaMalloc((void **)&d->btab, sizeof(zap_ge_niels_t) * ZAP_ED25519_BTAB_N);
    if (!zap_ed25519_cuda_ok(e, "cudaMalloc base-point table"))
        return zap_ed25519_cuda_status(e);
    e = cudaMemcpy(d->btab, zap_ed25519_btab(), sizeof(zap_ge_niels_t) * ZAP_ED25519_BTAB_N,
                   cudaMemcpyHostToDevice);
    if (!zap_ed25519_cuda_ok(e, "cudaMemcpy base-point table"))
        return ZAP_ERR_CUDA;
    d->ready = 1;
    return ZAP_OK;
}

static zap_status_t zap_ed25519_mem_kind(const void *p, int dev, zap_ed25519_mem_kind_t *kind_p)
{
    cudaPointerAttributes a;
    cudaError_t e = cudaPointerGetAttributes(&a, p);
    if (e != cudaSuccess) {
        /* Older drivers report plain host memory as an invalid value. */
        if (e == cudaErrorInvalidValue) {
            (void)cudaGetLastError();
            *kind_p = ZAP_ED25519_MEM_PAGEABLE;
            return ZAP_OK;
        }
        zap_ed25519_cuda_ok(e, "cudaPointerGetAttributes");
        return ZAP_ERR_CUDA;
    }
    switch (a.type) {
    case cudaMemoryTypeDevice:
        /* another device's memory is copied (peer access is not assumed) */
        *kind_p = a.device == dev ? ZAP_ED25519_MEM_DEVICE : ZAP_ED25519_MEM_PINNED;
        break;
    case cudaMemoryTypeManaged:
        *kind_p = ZAP_ED25519_MEM_MANAGED;
        break;
    case cudaMemoryTypeHost:
        *kind_p = ZAP_ED25519_MEM_PINNED;
        break;
    default:
        *kind_p = ZAP_ED25519_MEM_PAGEABLE;
        break;
    }
    return ZAP_OK;
}

/* Make bytes [p, p + len) readable by the device: returns the pointer the
 * kernel should use. Device memory is used as it is, managed memory is
 * prefetched (where the device supports concurrent managed access), anything
 * else is copied into the cached buffer *buf. */
static zap_status_t zap_ed25519_stage_in(zap_ed25519_dev_state_t *d, int dev, const void *p,
                                         size_t len, zap_ed25519_mem_kind_t kind, void **buf,
                                         size_t *cap, const char *what, const uint8_t **dptr_p)
{
    if (kind == ZAP_ED25519_MEM_DEVICE) {
        *dptr_p = (const uint8_t *)p;
        return ZAP_OK;
    }
    if (kind == ZAP_ED25519_MEM_MANAGED) {
        int concurrent = 0;
        cudaError_t e = cudaDeviceGetAttribute(&concurrent, cudaDevAttrConcurrentManagedAccess, dev);
        if (!zap_ed25519_cuda_ok(e, "cudaDeviceGetAttribute"))
            return ZAP_ERR_CUDA;
        if (concurrent) {
            cudaMemLocation loc;
            memset(&loc, 0, sizeof(loc));
            loc.type = cudaMemLocationTypeDevice;
            loc.id = dev;
            e = cudaMemPrefetchAsync(p, len, loc, 0, d->stream);
            if (!zap_ed25519_cuda_ok(e, "cudaMemPrefetchAsync"))
                return ZAP_ERR_CUDA;
        }
        *dptr_p = (const uint8_t *)p;
        return ZAP_OK;
    }
    zap_status_t st = zap_ed25519_grow(buf, cap, len, what);
    if (st != ZAP_OK)
        return st;
    cudaError_t e = cudaMemcpyAsync(*buf, p, len, cudaMemcpyDefault, d->stream);
    if (!zap_ed25519_cuda_ok(e, "cudaMemcpyAsync to device"))
        return ZAP_ERR_CUDA;
    *dptr_p = (const uint8_t *)*buf;
    return ZAP_OK;
}

static int zap_ed25519_variant(void)
{
    const char *s = getenv("ZAP_ED25519_GPU_VARIANT");
    if (s != NULL && (s[0] == '2' || s[0] == '3' || s[0] == '4') && s[1] == '\0')
        return s[0] - '0';
    return 3;
}

static zap_status_t zap_ed25519_gpu_verify_locked(const void *records, size_t stride, uint64_t n,
                                                  int variable_msgs, const void *blob,
                                                  uint64_t blob_len, uint8_t *verdicts,
                                                  uint32_t *bitmap,
                                                  zap_ed25519_gpu_stats_t *stats)
{
    int dev = 0;
    cudaError_t e = cudaGetDevice(&dev);
    if (!zap_ed25519_cuda_ok(e, "cudaGetDevice"))
        return ZAP_ERR_NOT_FOUND;
    if (dev < 0 || dev >= ZAP_ED25519_MAX_DEVICES) {
        zap_error("ed25519 gpu: device %d is beyond the %d zap supports", dev,
                  ZAP_ED25519_MAX_DEVICES);
        return ZAP_ERR_UNSUPPORTED;
    }
    zap_ed25519_dev_state_t *d = &zap_ed25519_devs[dev];
    zap_status_t st = zap_ed25519_dev_init(d);
    if (st != ZAP_OK)
        return st;

    size_t rec_bytes = (size_t)(n - 1) * stride +
                       (variable_msgs ? ZAP_ED25519_VAR_RECORD_MIN : ZAP_ED25519_FIXED_RECORD_MIN);
    size_t words = (size_t)((n + 31) / 32);
    zap_ed25519_mem_kind_t rkind, bkind = ZAP_ED25519_MEM_DEVICE, vkind, mkind = ZAP_ED25519_MEM_DEVICE;
    if ((st = zap_ed25519_mem_kind(records, dev, &rkind)) != ZAP_OK)
        return st;
    if (variable_msgs && blob_len > 0 && (st = zap_ed25519_mem_kind(blob, dev, &bkind)) != ZAP_OK)
        return st;
    if ((st = zap_ed25519_mem_kind(verdicts, dev, &vkind)) != ZAP_OK)
        return st;
    if (bitmap != NULL && (st = zap_ed25519_mem_kind(bitmap, dev, &mkind)) != ZAP_OK)
        return st;

    if (!zap_ed25519_cuda_ok(cudaEventRecord(d->ev[0], d->stream), "cudaEventRecord"))
        return ZAP_ERR_CUDA;
    const uint8_t *drec = NULL, *dblob = NULL;
    st = zap_ed25519_stage_in(d, dev, records, rec_bytes, rkind, (void **)&d->records,
                              &d->records_cap, "cudaMalloc records", &drec);
    if (st != ZAP_OK)
        return st;
    if (variable_msgs && blob_len > 0) {
        st = zap_ed25519_stage_in(d, dev, blob, (size_t)blob_len, bkind, (void **)&d->blob,
                                  &d->blob_cap, "cudaMalloc blob", &dblob);
        if (st != ZAP_OK)
            return st;
    }
    /* Outputs: device or managed memory is written in place; host memory
     * through a device buffer and one copy back. */
    int v_direct = vkind == ZAP_ED25519_MEM_DEVICE || vkind == ZAP_ED25519_MEM_MANAGED;
    int m_direct = mkind == ZAP_ED25519_MEM_DEVICE || mkind == ZAP_ED25519_MEM_MANAGED;
    uint8_t *dver = verdicts;
    uint32_t *dbit = bitmap;
    if (!v_direct) {
        if ((st = zap_ed25519_grow((void **)&d->verdicts, &d->verdicts_cap, (size_t)n,
                                   "cudaMalloc verdicts")) != ZAP_OK)
            return st;
        dver = d->verdicts;
    }
    if (bitmap != NULL && !m_direct) {
        if ((st = zap_ed25519_grow((void **)&d->bitmap, &d->bitmap_cap, words * 4,
                                   "cudaMalloc bitmap")) != ZAP_OK)
            return st;
        dbit = d->bitmap;
    }
    if (!zap_ed25519_cuda_ok(cudaEventRecord(d->ev[1], d->stream), "cudaEventRecord"))
        return ZAP_ERR_CUDA;

    /* grid: one thread per item; n < 2^31 * 128 is far beyond any batch */
    unsigned grid = (unsigned)((n + ZAP_ED25519_BLOCK - 1) / ZAP_ED25519_BLOCK);
    switch (zap_ed25519_variant()) {
    case 2:
        zap_ed25519_verify_kernel<2><<<grid, ZAP_ED25519_BLOCK, 0, d->stream>>>(
            drec, stride, n, variable_msgs, dblob, blob_len, d->btab, dver, dbit);
        break;
    case 4:
        zap_ed25519_verify_kernel<4><<<grid, ZAP_ED25519_BLOCK, 0, d->stream>>>(
            drec, stride, n, variable_msgs, dblob, blob_len, d->btab, dver, dbit);
        break;
    default:
        zap_ed25519_verify_kernel<3><<<grid, ZAP_ED25519_BLOCK, 0, d->stream>>>(
            drec, stride, n, variable_msgs, dblob, blob_len, d->btab, dver, dbit);
        break;
    }
    if (!zap_ed25519_cuda_ok(cudaGetLastError(), "verification kernel launch"))
        return ZAP_ERR_CUDA;
    if (!zap_ed25519_cuda_ok(cudaEventRecord(d->ev[2], d->stream), "cudaEventRecord"))
        return ZAP_ERR_CUDA;
    if (!v_direct &&
        !zap_ed25519_cuda_ok(cudaMemcpyAsync(verdicts, dver, (size_t)n, cudaMemcpyDefault,
                                             d->stream),
                             "cudaMemcpyAsync verdicts"))
        return ZAP_ERR_CUDA;
    if (bitmap != NULL && !m_direct &&
        !zap_ed25519_cuda_ok(cudaMemcpyAsync(bitmap, dbit, words * 4, cudaMemcpyDefault,
                                             d->stream),
                             "cudaMemcpyAsync bitmap"))
        return ZAP_ERR_CUDA;
    if (!zap_ed25519_cuda_ok(cudaEventRecord(d->ev[3], d->stream), "cudaEventRecord"))
        return ZAP_ERR_CUDA;
    if (!zap_ed25519_cuda_ok(cudaStreamSynchronize(d->stream), "cudaStreamSynchronize"))
        return ZAP_ERR_CUDA;
    if (stats != NULL) {
        float a = 0, b = 0, c = 0;
        if (!zap_ed25519_cuda_ok(cudaEventElapsedTime(&a, d->ev[0], d->ev[1]), "cudaEventElapsedTime") ||
            !zap_ed25519_cuda_ok(cudaEventElapsedTime(&b, d->ev[1], d->ev[2]), "cudaEventElapsedTime") ||
            !zap_ed25519_cuda_ok(cudaEventElapsedTime(&c, d->ev[2], d->ev[3]), "cudaEventElapsedTime"))
            return ZAP_ERR_CUDA;
        stats->h2d_ms = a;
        stats->kernel_ms = b;
        stats->d2h_ms = c;
        stats->device = dev;
        stats->records_kind = rkind;
    }
    return ZAP_OK;
}

extern "C" zap_status_t zap_ed25519_gpu_verify(const void *records, size_t stride, uint64_t n,
                                               int variable_msgs, const void *blob,
                                               uint64_t blob_len, uint8_t *verdicts,
                                               uint32_t *bitmap, zap_ed25519_gpu_stats_t *stats)
{
    double t0 = zap_ed25519_now_ms();
    size_t min = variable_msgs ? ZAP_ED25519_VAR_RECORD_MIN : ZAP_ED25519_FIXED_RECORD_MIN;
    if (n > 0 && (records == NULL || verdicts == NULL || stride < min ||
                  (variable_msgs && blob == NULL && blob_len > 0))) {
        zap_error("ed25519 gpu: bad arguments (records %p, verdicts %p, stride %zu, minimum %zu, "
                  "blob %p, blob_len %llu)",
                  records, (void *)verdicts, stride, min, blob, (unsigned long long)blob_len);
        return ZAP_ERR_INVALID_PARAM;
    }
    if (zap_ed25519_gpu_device_count() <= 0) {
        zap_error("ed25519 gpu: no CUDA device is usable");
        return ZAP_ERR_NOT_FOUND;
    }
    if (n == 0) {
        if (stats != NULL)
            memset(stats, 0, sizeof(*stats));
        return ZAP_OK;
    }
    if (pthread_mutex_lock(&zap_ed25519_gpu_lock) != 0) {
        zap_error("ed25519 gpu: cannot take the device-buffer lock");
        return ZAP_ERR_BUSY;
    }
    zap_status_t st = zap_ed25519_gpu_verify_locked(records, stride, n, variable_msgs, blob,
                                                    blob_len, verdicts, bitmap, stats);
    pthread_mutex_unlock(&zap_ed25519_gpu_lock);
    if (st == ZAP_OK && stats != NULL)
        stats->total_ms = zap_ed25519_now_ms() - t0;
    return st;
}

extern "C" zap_status_t zap_ed25519_gpu_prepare(uint64_t n)
{
    if (zap_ed25519_gpu_device_count() <= 0)
        return ZAP_ERR_NOT_FOUND;
    int dev = 0;
    if (!zap_ed25519_cuda_ok(cudaGetDevice(&dev), "cudaGetDevice"))
        return ZAP_ERR_NOT_FOUND;
    if (dev < 0 || dev >= ZAP_ED25519_MAX_DEVICES)
        return ZAP_ERR_UNSUPPORTED;
    if (pthread_mutex_lock(&zap_ed25519_gpu_lock) != 0)
        return ZAP_ERR_BUSY;
    zap_ed25519_dev_state_t *d = &zap_ed25519_devs[dev];
    zap_status_t st = zap_ed25519_dev_init(d);
    /* The first launch would otherwise load the kernel (lazy module loading). */
    cudaFuncAttributes fa;
    if (st == ZAP_OK) {
        cudaError_t e;
        switch (zap_ed25519_variant()) {
        case 2: e = cudaFuncGetAttributes(&fa, zap_ed25519_verify_kernel<2>); break;
        case 4: e = cudaFuncGetAttributes(&fa, zap_ed25519_verify_kernel<4>); break;
        default: e = cudaFuncGetAttributes(&fa, zap_ed25519_verify_kernel<3>); break;
        }
        if (!zap_ed25519_cuda_ok(e, "cudaFuncGetAttributes"))
            st = ZAP_ERR_CUDA;
    }
    if (st == ZAP_OK && n > 0)
        st = zap_ed25519_grow((void **)&d->verdicts, &d->verdicts_cap, (size_t)n, "cudaMalloc verdicts");
    if (st == ZAP_OK && n > 0)
        st = zap_ed25519_grow((void **)&d->bitmap, &d->bitmap_cap, (size_t)((n + 31) / 32) * 4,
                              "cudaMalloc bitmap");
    pthread_mutex_unlock(&zap_ed25519_gpu_lock);
    return st;
}
