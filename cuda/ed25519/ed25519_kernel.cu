/* GPU batch verification of Ed25519 signatures (libsodium 1.0.18 rule).
 *
 * Two fused kernels; all arithmetic comes from ed25519_arith.h, the same
 * source the host reference (and CI) runs.
 *
 * Large batches (zap_ed25519_verify_kernel): one thread per item. Read the
 * record, check S < L and the R/A blocklists, decode A, SHA-512(R || A || M)
 * mod L, [k](-A) + [S]B with signed fixed windows (every lane of a warp adds
 * at the same bits, so the warp never diverges in the scalar
 * multiplication), encode, compare with R, write the verdict byte, and let
 * lane 0 of each warp write the warp's bitmap word (__ballot_sync). Blocks
 * of ZAP_ED25519_BLOCK (128) threads, grid ceil(n/128); the block size is a
 * multiple of 32, so a warp covers items [32w, 32w + 32) and its ballot is
 * exactly bitmap word w, and every thread reaches the ballot. Each block
 * copies the 7,800-byte base-point table (0..64 B) into shared memory once.
 * Per thread, the -A table (9 cached points, 1,440 bytes), the digit strings
 * and the SHA-512 block buffer live in local memory (L1-cached).
 *
 * Small batches (zap_ed25519_verify_x4_kernel, at most ZAP_ED25519_X4_MAX
 * items): four lanes per item, for latency (see below).
 *
 * Memory: host records are copied into a device buffer that is kept between
 * calls and grown as needed (in overlapping chunks for large batches);
 * device records are used in place; managed records are prefetched to the
 * device. A process-wide mutex serialises callers, since those buffers and
 * the streams are shared. */
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

/* The one-lane kernel comes in three register budgets;
 * ZAP_ED25519_GPU_VARIANT=2, 3 or 4 picks one at run time (default 3; the
 * benchmark measures all three). MINB is the minimum number of resident
 * 128-thread blocks per SM asked of the compiler: 2 lets a thread use 255
 * registers (it takes 174, no spills), 3 caps it at 168 (12 bytes spill),
 * 4 at 128. */
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
/* Small batches: four lanes per item                                        */
/* ------------------------------------------------------------------------ */

/* A batch too small to fill the GPU waits for the latency of one item. The
 * four-lane kernel gives each item four lanes of a warp running the
 * four-lane form of ed25519_arith.h: each point operation is two rounds of
 * one product per lane, with the four lanes' values exchanged by shuffles
 * between rounds. Lanes 0-1 decode A while lanes 2-3 decode R, so that R'
 * is compared with R without the inversion of an encoding
 * (zap_ge_p2_encodes_to); the rest of the checks, the hash and the scalar
 * recoding are done by all four lanes alike. No lane leaves early (a failed
 * check only clears the verdict): every lane of the warp reaches every
 * shuffle, so the shuffles take the full-warp mask, which compiles to a bare
 * SHFL (a partial mask adds a WARPSYNC sequence to each one). A block of 128
 * threads verifies 32 items: exactly one bitmap word. */
#define ZAP_ED25519_X4_ITEMS 32 /* items per block of ZAP_ED25519_BLOCK threads */
#define ZAP_X4_FULL 0xffffffffu

/* all[k] = lane (base + k)'s value of *mine, for the four lanes of a group. */
static __device__ __forceinline__ void zap_x4_gather(zap_fe_t all[4], const zap_fe_t *mine,
                                                     int base)
{
#pragma unroll
    for (int k = 0; k < 4; k++)
#pragma unroll
        for (int i = 0; i < 10; i++)
            all[k].v[i] = __shfl_sync(ZAP_X4_FULL, mine->v[i], base + k);
}

/* For the rounds that read only lanes 0 and 1's values besides their own
 * (ed25519_arith.h): all[0], all[1] gathered, all[2] = all[3] = *mine, which
 * is what lane 2 reads as all[2] and lane 3 as all[3]. Half the shuffles.
 * G01 = 0 gathers all four instead (the variants measure both). */
template <int G01>
static __device__ __forceinline__ void zap_x4_gather_for01(zap_fe_t all[4], const zap_fe_t *mine,
                                                           int base)
{
    if (!G01) {
        zap_x4_gather(all, mine, base);
        return;
    }
#pragma unroll
    for (int k = 0; k < 2; k++)
#pragma unroll
        for (int i = 0; i < 10; i++)
            all[k].v[i] = __shfl_sync(ZAP_X4_FULL, mine->v[i], base + k);
    all[2] = *mine;
    all[3] = *mine;
}

/* *h = lane src's value of *f. */
static __device__ __forceinline__ void zap_x4_from(zap_fe_t *h, const zap_fe_t *f, int src)
{
#pragma unroll
    for (int i = 0; i < 10; i++)
        h->v[i] = __shfl_sync(ZAP_X4_FULL, f->v[i], src);
}

/* One addition (two rounds) of the point whose lane components are comp. */
template <int INL, int G01>
static __device__ __forceinline__ void zap_x4_dev_add(zap_fe_t *st, const zap_fe_t *comp, int neg,
                                                      int q, int base)
{
    zap_fe_t all[4], nx;
    zap_x4_gather_for01<G01>(all, st, base);
    zap_x4_add1(&nx, all, q, comp, neg, INL);
    zap_x4_gather(all, &nx, base);
    zap_x4_add2(st, all, q, neg, INL);
}

/* *st (this lane's coordinate of P on entry) becomes this lane's coordinate
 * of [a]P + [b]B: the schedule of zap_ge_double_scalarmult (and of the host
 * reference zap_x4_host_double_scalarmult). btab4[j][q] is lane q's
 * component of j B. */
template <int INL, int G01>
static __device__ __noinline__ void zap_x4_dev_dsm(zap_fe_t *st, int q, int base,
                                                   const uint32_t a[8], const uint32_t b[8],
                                                   const zap_fe_t (*btab4)[4])
{
    zap_fe_t ptab[ZAP_ED25519_ATAB_N], all[4], nx, one;
    int8_t ad[ZAP_ED25519_ATAB_DIGITS], bd[ZAP_ED25519_BTAB_DIGITS];
    zap_sc_signed_digits(ad, ZAP_ED25519_ATAB_DIGITS, a, ZAP_ED25519_ATAB_W);
    zap_sc_signed_digits(bd, ZAP_ED25519_BTAB_DIGITS, b, ZAP_ED25519_BTAB_W);
    zap_fe_t zero;
    zap_fe_0(&zero);
    zap_fe_1(&one);
    zap_fe_sel4(&ptab[0], &one, &one, &one, &zero, q); /* identity: (1, 1, 1, 0) */
    zap_x4_gather_for01<G01>(all, st, base);
    zap_x4_cached(&ptab[1], all, q, INL);
    for (int j = 2; j < ZAP_ED25519_ATAB_N; j++) {
        zap_x4_dev_add<INL, G01>(st, &ptab[1], 0, q, base);
        zap_x4_gather_for01<G01>(all, st, base);
        zap_x4_cached(&ptab[j], all, q, INL);
    }
    zap_fe_sel4(st, &zero, &one, &one, &zero, q); /* the identity (0, 1, 1, 0) */
    int ia = ZAP_ED25519_ATAB_DIGITS - 1, ib = ZAP_ED25519_BTAB_DIGITS - 1;
    int ca = 0, cb = 0;
    for (int bit = 252; bit >= 0; bit--) {
        if (bit < 252) {
            zap_x4_gather_for01<G01>(all, st, base);
            zap_x4_dbl1(&nx, all, q, INL);
            zap_x4_gather(all, &nx, base);
            zap_x4_dbl2(st, all, q, INL);
        }
        if (ca-- == 0) {
            ca = ZAP_ED25519_ATAB_W - 1;
            int d = ad[ia--], neg = d < 0;
            zap_x4_dev_add<INL, G01>(st, &ptab[neg ? -d : d], neg, q, base);
        }
        if (cb-- == 0) {
            cb = ZAP_ED25519_BTAB_W - 1;
            int d = bd[ib--], neg = d < 0;
            zap_x4_dev_add<INL, G01>(st, &btab4[neg ? -d : d][q], neg, q, base);
        }
    }
}

/* zap_x4_host_verify_item spread over the four lanes of a group; every lane
 * of the warp runs all of it and returns the verdict. */
template <int INL, int G01>
static __device__ int zap_x4_verify_item(const uint8_t pk[32], const uint8_t r[32],
                                         const uint8_t s[32], const uint8_t *msg, uint64_t len,
                                         const zap_fe_t (*btab4)[4], int q, int base)
{
    int ok = zap_sc_is_canonical(s) & !zap_ge_has_small_order(r) & zap_ge_is_canonical(pk) &
             !zap_ge_has_small_order(pk);
    /* lanes 0-1 decode A, lanes 2-3 decode R */
    zap_ge_p3_t dec;
    int dec_ok = zap_ge_frombytes(&dec, q < 2 ? pk : r);
    if (!dec_ok) /* unfinished point: compute on with a valid one */
        zap_ge_p3_0(&dec);
    int a_ok = __shfl_sync(ZAP_X4_FULL, dec_ok, base);
    int r_ok = __shfl_sync(ZAP_X4_FULL, dec_ok, base + 2);
    zap_ge_p3_t rd;
    zap_x4_from(&rd.X, &dec.X, base + 2);
    zap_x4_from(&rd.Y, &dec.Y, base + 2);
    zap_fe_1(&rd.Z);
    zap_fe_t at, st, nx, nt, one;
    zap_x4_from(&at, &dec.T, base);
    zap_fe_neg(&nx, &dec.X); /* -A: (-X, Y, 1, -T), lane q takes coordinate q */
    zap_fe_neg(&nt, &at);
    zap_fe_1(&one);
    zap_fe_sel4(&st, &nx, &dec.Y, &one, &nt, q);

    uint8_t hbuf[64];
    uint32_t k[8], sw[8];
    zap_ed25519_hram(hbuf, r, pk, msg, len);
    zap_sc_reduce512(k, hbuf);
    for (int i = 0; i < 8; i++)
        sw[i] = (uint32_t)s[4 * i] | ((uint32_t)s[4 * i + 1] << 8) |
                ((uint32_t)s[4 * i + 2] << 16) | ((uint32_t)s[4 * i + 3] << 24);
    zap_x4_dev_dsm<INL, G01>(&st, q, base, k, sw, btab4);
    zap_fe_t all[4];
    zap_x4_gather(all, &st, base);
    zap_ge_p2_t rp = {all[0], all[1], all[2]};
    return ok & a_ok & zap_ge_p2_encodes_to(&rp, r, &rd, r_ok);
}

/* MINB: minimum resident blocks per SM asked of the compiler (2: up to 255
 * registers, no spills; 3: 168). INL, G01: zap_fe_mul_x, zap_x4_gather_for01. */
template <int MINB, int INL, int G01>
__global__ void __launch_bounds__(ZAP_ED25519_BLOCK, MINB)
    zap_ed25519_verify_x4_kernel(const uint8_t *__restrict__ records, uint64_t stride, uint64_t n,
                                 int variable_msgs, const uint8_t *__restrict__ blob,
                                 uint64_t blob_len, const zap_ge_niels_t *__restrict__ btab,
                                 uint8_t *__restrict__ verdicts, uint32_t *__restrict__ bitmap)
{
    /* lane components of j B: (y - x, y + x, 1, 2dxy); each thread copies
     * whole components, ten independent loads at a time */
    __shared__ zap_fe_t sbtab4[ZAP_ED25519_BTAB_N][4];
    __shared__ uint32_t sbits[ZAP_ED25519_BLOCK / 32];
    for (int w = threadIdx.x; w < ZAP_ED25519_BTAB_N * 4; w += blockDim.x) {
        int e = w >> 2, c = w & 3;
        const zap_fe_t *src = c == 0 ? &btab[e].ymx : c == 1 ? &btab[e].ypx : &btab[e].xy2d;
        zap_fe_t v = *src;
        if (c == 2)
            zap_fe_1(&v);
        sbtab4[e][c] = v;
    }
    __syncthreads();

    int lane = threadIdx.x & 31, q = lane & 3, base = lane & ~3;
    uint64_t i = (uint64_t)blockIdx.x * ZAP_ED25519_X4_ITEMS + threadIdx.x / 4;
    /* Items past n and malformed records are verified too (on zeros or an
     * empty message) so that their lanes stay with the warp; their verdict
     * is set from the record alone. */
    uint4 words[6];
    for (int k = 0; k < 6; k++)
        words[k] = make_uint4(0, 0, 0, 0);
    const uint8_t *local = (const uint8_t *)words;
    const uint8_t *msg = local;
    uint64_t len = 0;
    int in_range = i < n, well_formed = 0;
    if (in_range) {
        const uint8_t *rec = records + i * stride;
        if ((((uintptr_t)rec) & 15) == 0) {
            const uint4 *r4 = (const uint4 *)rec;
            for (int k = 0; k < 6; k++)
                words[k] = r4[k];
        } else {
            uint8_t *wb = (uint8_t *)words;
            for (int k = 0; k < 96; k++)
                wb[k] = rec[k];
        }
        well_formed = zap_ed25519_record_msg(rec, variable_msgs, blob, blob_len, &msg, &len);
        if (!well_formed) {
            msg = local;
            len = 0;
        }
    }
    int valid = zap_x4_verify_item<INL, G01>(local, local + 32, local + 64, msg, len, sbtab4, q,
                                             base);
    uint8_t v = !well_formed ? ZAP_ED25519_VERDICT_MALFORMED : (uint8_t)valid;
    if (!in_range)
        v = ZAP_ED25519_VERDICT_INVALID;
    if (in_range && q == 0)
        verdicts[i] = v;
    /* bits 0, 4, .., 28 of the ballot are the warp's 8 items */
    unsigned ballot = __ballot_sync(ZAP_X4_FULL, v == ZAP_ED25519_VERDICT_VALID);
    unsigned bits = 0;
    for (int k = 0; k < 8; k++)
        bits |= ((ballot >> (4 * k)) & 1u) << k;
    if (lane == 0)
        sbits[threadIdx.x / 32] = bits;
    __syncthreads();
    if (bitmap != NULL && threadIdx.x == 0)
        bitmap[blockIdx.x] = sbits[0] | (sbits[1] << 8) | (sbits[2] << 16) | (sbits[3] << 24);
}

/* The four-lane kernel's code-generation variants, by ZAP_ED25519_GPU_X4:
 * 0: 255-register budget, products called, full gathers; 1: half gathers;
 * 2: half gathers and inlined products; 3: as 2 with a 168-register budget;
 * 4: inlined products, full gathers. The default, 2, had the lowest latency
 * on an H200 (docs/ed25519.md, Small batches). */
#define ZAP_ED25519_X4_DEFAULT 2

static int zap_ed25519_x4_variant(void)
{
    const char *s = getenv("ZAP_ED25519_GPU_X4");
    if (s != NULL && s[0] >= '0' && s[0] <= '4' && s[1] == '\0')
        return s[0] - '0';
    return ZAP_ED25519_X4_DEFAULT;
}

typedef void (*zap_ed25519_kernel_fn)(const uint8_t *, uint64_t, uint64_t, int, const uint8_t *,
                                      uint64_t, const zap_ge_niels_t *, uint8_t *, uint32_t *);

static zap_ed25519_kernel_fn zap_ed25519_x4_kernel(void)
{
    switch (zap_ed25519_x4_variant()) {
    case 1: return zap_ed25519_verify_x4_kernel<2, 0, 1>;
    case 2: return zap_ed25519_verify_x4_kernel<2, 1, 1>;
    case 3: return zap_ed25519_verify_x4_kernel<3, 1, 1>;
    case 4: return zap_ed25519_verify_x4_kernel<2, 1, 0>;
    default: return zap_ed25519_verify_x4_kernel<2, 0, 0>;
    }
}

/* ------------------------------------------------------------------------ */
/* Host side                                                                 */
/* ------------------------------------------------------------------------ */

/* Large batches from host memory are verified in this many chunks, so that
 * copying chunk c + 1 in overlaps verifying chunk c (and only the first
 * chunk's copy is exposed); below ZAP_ED25519_CHUNK_MIN items the copy is
 * short and one launch has the least overhead. */
#define ZAP_ED25519_CHUNKS 8
#define ZAP_ED25519_CHUNK_MIN (1u << 18)

typedef struct zap_ed25519_dev_state {
    int ready;
    cudaStream_t stream;     /* copies in; the whole call when not chunked */
    cudaStream_t cstream[2]; /* chunk kernels alternate, so one's tail overlaps the next */
    cudaEvent_t ev[4];
    cudaEvent_t chunk_ev[ZAP_ED25519_CHUNKS + 2];
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
    for (int k = 0; k < 2; k++) {
        e = cudaStreamCreateWithFlags(&d->cstream[k], cudaStreamNonBlocking);
        if (!zap_ed25519_cuda_ok(e, "cudaStreamCreateWithFlags"))
            return zap_ed25519_cuda_status(e);
    }
    for (int k = 0; k < 4; k++) {
        e = cudaEventCreate(&d->ev[k]);
        if (!zap_ed25519_cuda_ok(e, "cudaEventCreate"))
            return zap_ed25519_cuda_status(e);
    }
    for (int k = 0; k < ZAP_ED25519_CHUNKS + 2; k++) {
        e = cudaEventCreateWithFlags(&d->chunk_ev[k], cudaEventDisableTiming);
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

/* Lanes per item: 4 for batches of at most ZAP_ED25519_X4_MAX items (their
 * time is one item's latency), else 1; ZAP_ED25519_GPU_LANES=1 or 4 forces
 * one form (tests and benchmark). */
#define ZAP_ED25519_X4_MAX 8192u

static int zap_ed25519_lanes(uint64_t n)
{
    const char *s = getenv("ZAP_ED25519_GPU_LANES");
    if (s != NULL && (s[0] == '1' || s[0] == '4') && s[1] == '\0')
        return s[0] - '0';
    return n <= ZAP_ED25519_X4_MAX ? 4 : 1;
}

/* Launch the verification kernel over n records on stream st. */
static zap_status_t zap_ed25519_launch(cudaStream_t st, const uint8_t *drec, uint64_t stride,
                                       uint64_t n, int variable_msgs, const uint8_t *dblob,
                                       uint64_t blob_len, const zap_ge_niels_t *btab,
                                       uint8_t *dver, uint32_t *dbit)
{
    if (zap_ed25519_lanes(n) == 4) {
        unsigned grid4 = (unsigned)((n + ZAP_ED25519_X4_ITEMS - 1) / ZAP_ED25519_X4_ITEMS);
        zap_ed25519_x4_kernel()<<<grid4, ZAP_ED25519_BLOCK, 0, st>>>(
            drec, stride, n, variable_msgs, dblob, blob_len, btab, dver, dbit);
        return zap_ed25519_cuda_ok(cudaGetLastError(), "four-lane kernel launch") ? ZAP_OK
                                                                                 : ZAP_ERR_CUDA;
    }
    /* grid: one thread per item; n < 2^31 * 128 is far beyond any batch */
    unsigned grid = (unsigned)((n + ZAP_ED25519_BLOCK - 1) / ZAP_ED25519_BLOCK);
    switch (zap_ed25519_variant()) {
    case 2:
        zap_ed25519_verify_kernel<2><<<grid, ZAP_ED25519_BLOCK, 0, st>>>(
            drec, stride, n, variable_msgs, dblob, blob_len, btab, dver, dbit);
        break;
    case 4:
        zap_ed25519_verify_kernel<4><<<grid, ZAP_ED25519_BLOCK, 0, st>>>(
            drec, stride, n, variable_msgs, dblob, blob_len, btab, dver, dbit);
        break;
    default:
        zap_ed25519_verify_kernel<3><<<grid, ZAP_ED25519_BLOCK, 0, st>>>(
            drec, stride, n, variable_msgs, dblob, blob_len, btab, dver, dbit);
        break;
    }
    return zap_ed25519_cuda_ok(cudaGetLastError(), "verification kernel launch") ? ZAP_OK
                                                                                 : ZAP_ERR_CUDA;
}

/* Host records of a large batch: copy chunk c in on d->stream while chunk
 * c - 1 is verified on its compute stream, each chunk's verdicts and bitmap
 * words going back as soon as its kernel is done. Chunks are multiples of
 * 128 items, so every chunk starts on a bitmap word. The blob, if any, is
 * already in place (messages may be anywhere in it). Ends with d->stream
 * waiting for both compute streams. */
static zap_status_t zap_ed25519_chunked(zap_ed25519_dev_state_t *d, const uint8_t *records,
                                        size_t stride, uint64_t n, int variable_msgs,
                                        const uint8_t *dblob, uint64_t blob_len,
                                        uint8_t *verdicts, int v_direct, uint8_t *dver,
                                        uint32_t *bitmap, int m_direct, uint32_t *dbit)
{
    size_t min = variable_msgs ? ZAP_ED25519_VAR_RECORD_MIN : ZAP_ED25519_FIXED_RECORD_MIN;
    uint64_t chunk = (n + ZAP_ED25519_CHUNKS - 1) / ZAP_ED25519_CHUNKS;
    chunk = (chunk + ZAP_ED25519_BLOCK - 1) / ZAP_ED25519_BLOCK * ZAP_ED25519_BLOCK;
    int c = 0;
    zap_status_t st;
    for (uint64_t first = 0; first < n; first += chunk, c++) {
        uint64_t cnt = n - first < chunk ? n - first : chunk;
        size_t off = (size_t)first * stride, bytes = (size_t)(cnt - 1) * stride + min;
        cudaStream_t cs = d->cstream[c & 1];
        if (!zap_ed25519_cuda_ok(cudaMemcpyAsync(d->records + off, records + off, bytes,
                                                 cudaMemcpyDefault, d->stream),
                                 "cudaMemcpyAsync records chunk") ||
            !zap_ed25519_cuda_ok(cudaEventRecord(d->chunk_ev[c], d->stream), "cudaEventRecord") ||
            !zap_ed25519_cuda_ok(cudaStreamWaitEvent(cs, d->chunk_ev[c], 0), "cudaStreamWaitEvent"))
            return ZAP_ERR_CUDA;
        if (c == 0 && !zap_ed25519_cuda_ok(cudaEventRecord(d->ev[1], cs), "cudaEventRecord"))
            return ZAP_ERR_CUDA;
        st = zap_ed25519_launch(cs, d->records + off, stride, cnt, variable_msgs, dblob, blob_len,
                                d->btab, dver + first, dbit != NULL ? dbit + first / 32 : NULL);
        if (st != ZAP_OK)
            return st;
        if (!v_direct && !zap_ed25519_cuda_ok(cudaMemcpyAsync(verdicts + first, dver + first,
                                                              (size_t)cnt, cudaMemcpyDefault, cs),
                                              "cudaMemcpyAsync verdicts chunk"))
            return ZAP_ERR_CUDA;
        if (bitmap != NULL && !m_direct &&
            !zap_ed25519_cuda_ok(cudaMemcpyAsync(bitmap + first / 32, dbit + first / 32,
                                                 (size_t)((cnt + 31) / 32) * 4, cudaMemcpyDefault,
                                                 cs),
                                 "cudaMemcpyAsync bitmap chunk"))
            return ZAP_ERR_CUDA;
    }
    for (int k = 0; k < 2; k++) {
        cudaEvent_t done = d->chunk_ev[ZAP_ED25519_CHUNKS + k];
        if (!zap_ed25519_cuda_ok(cudaEventRecord(done, d->cstream[k]), "cudaEventRecord") ||
            !zap_ed25519_cuda_ok(cudaStreamWaitEvent(d->stream, done, 0), "cudaStreamWaitEvent"))
            return ZAP_ERR_CUDA;
    }
    return ZAP_OK;
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

    /* Host records of a large batch go in chunks, copies overlapping
     * verification; everything else in one launch. */
    int chunked = (rkind == ZAP_ED25519_MEM_PAGEABLE || rkind == ZAP_ED25519_MEM_PINNED) &&
                  n >= ZAP_ED25519_CHUNK_MIN;
    if (!zap_ed25519_cuda_ok(cudaEventRecord(d->ev[0], d->stream), "cudaEventRecord"))
        return ZAP_ERR_CUDA;
    const uint8_t *drec = NULL, *dblob = NULL;
    if (chunked)
        st = zap_ed25519_grow((void **)&d->records, &d->records_cap, rec_bytes,
                              "cudaMalloc records");
    else
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
     * through a device buffer and one copy back (per chunk when chunked). */
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
    if (chunked) {
        st = zap_ed25519_chunked(d, (const uint8_t *)records, stride, n, variable_msgs, dblob,
                                 blob_len, verdicts, v_direct, dver, bitmap, m_direct, dbit);
        if (st != ZAP_OK)
            return st;
        if (!zap_ed25519_cuda_ok(cudaEventRecord(d->ev[2], d->stream), "cudaEventRecord"))
            return ZAP_ERR_CUDA;
    } else {
        if (!zap_ed25519_cuda_ok(cudaEventRecord(d->ev[1], d->stream), "cudaEventRecord"))
            return ZAP_ERR_CUDA;
        st = zap_ed25519_launch(d->stream, drec, stride, n, variable_msgs, dblob, blob_len,
                                d->btab, dver, dbit);
        if (st != ZAP_OK)
            return st;
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
    }
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
    /* The first launch would otherwise load the kernels (lazy module loading). */
    cudaFuncAttributes fa;
    if (st == ZAP_OK) {
        cudaError_t e;
        switch (zap_ed25519_variant()) {
        case 2: e = cudaFuncGetAttributes(&fa, zap_ed25519_verify_kernel<2>); break;
        case 4: e = cudaFuncGetAttributes(&fa, zap_ed25519_verify_kernel<4>); break;
        default: e = cudaFuncGetAttributes(&fa, zap_ed25519_verify_kernel<3>); break;
        }
        if (e == cudaSuccess)
            e = cudaFuncGetAttributes(&fa, zap_ed25519_x4_kernel());
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
