/* The GPU path's kernels: every rank's GPU reads (and, for the large
 * allreduce, writes) its peers' memory directly, over NVLink or PCIe, through
 * CUDA IPC mappings; ranks meet at flags in each other's channel regions, so
 * the host only launches (gpu_p2p_impl.h has the region and the arguments).
 *
 * Works (cuda_coll.h, zap_gpu_work_t):
 *   AR_ONESHOT  block b copies chunk b of its input into its bank, signals,
 *               waits for every peer's chunk b, and reduces chunk b of every
 *               rank's input into its own output. One flag per peer and
 *               block, no second barrier: a rank writes bank t & 1 again at
 *               ticket t + 2 only after every peer signalled ticket t + 1,
 *               which each did after its kernel t had finished reading.
 *   AR_RSAG     rank r reduces segment r: block b reads chunk b of segment r
 *               from every rank's input and writes the result to chunk b of
 *               segment r of every rank's output (reduce-scatter and
 *               allgather in one pass, each byte over the link once each
 *               way). Flags before (inputs ready, outputs free, everyone's
 *               preparation succeeded) and after (every write into this
 *               rank's output landed, nobody reads its input any more).
 *   BC_ONESHOT  the root copies chunk b into its bank, signals; the others
 *               copy it out of the root's bank.
 *   BC_READ     every rank reads chunk b of the root's exposed buffer into
 *               its own; flags before and after, as RSAG.
 * A rank whose buffer could not be exported stages it: its kernel copies the
 * input into the channel's staging buffer before signalling (stage_in) and,
 * after the last flag, the output out of it (stage_out).
 *
 * Determinism: every element of an allreduce is computed by one thread as
 * ((x_0 op x_1) op x_2) ... op x_{p-1}, the ranks' inputs in rank order, and
 * that value is what every rank receives (RSAG), or every rank computes the
 * same expression on the same operands (ONESHOT); combine.cuh's operations
 * match the CPU loops bit for bit.
 *
 * Launch shape: 512 threads per block, gpu_split.h's grid (the same on every
 * rank). Data moves in 16-byte vectors, four per thread in flight, where
 * every pointer of the block's range is 16-byte aligned, else element by
 * element. Thread 0 of each block does the flag work (release stores to the
 * peers' regions after a system-scope fence of the whole block, acquire
 * loads of its own region), bounded by the communicator's timeout read from
 * %globaltimer; the block's other threads wait at the barrier.
 *
 * The last block to finish writes the launch's status word (pinned host
 * memory the host polls): ok, canceled (some rank launched with ok false;
 * every rank then skipped the data), or timed out naming the peer. */
#include <cuda_runtime.h>
#include <stdint.h>
#include "combine.cuh"
extern "C" {
#include "gpu_p2p_impl.h"
#include "base/log.h"
}

#define THREADS 512
#define UNROLL 4

__device__ __forceinline__ void st_release(unsigned long long *p, unsigned long long v)
{
    asm volatile("st.release.sys.global.u64 [%0], %1;" ::"l"(p), "l"(v) : "memory");
}

__device__ __forceinline__ unsigned long long ld_acquire(const unsigned long long *p)
{
    unsigned long long v;
    asm volatile("ld.acquire.sys.global.u64 %0, [%1];" : "=l"(v) : "l"(p) : "memory");
    return v;
}

__device__ __forceinline__ unsigned long long now_ns(void)
{
    unsigned long long t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    return t;
}

/* A block's meeting with the same block of every peer in phase: signal ok,
 * wait for every peer's flag of this ticket. 0: all ok; ZAP_GPU_DONE_CANCELED:
 * some rank (this one included) not ok; ZAP_GPU_DONE_TIMED_OUT (*peer set). */
__device__ int meet(const zap_gpu_kargs_t &a, int phase, int ok, int *peer)
{
    __shared__ int verdict, who;
    __threadfence_system(); /* this block's writes (outputs, bank, stage) before the signal */
    __syncthreads();
    if (threadIdx.x == 0) {
        int b = blockIdx.x, res = ok ? 0 : ZAP_GPU_DONE_CANCELED, w = 0;
        unsigned long long v = (a.ticket << 1) | (ok ? 1ull : 0ull);
        for (int q = 0; q < a.p; q++)
            if (q != a.me)
                st_release(a.flags[q] + zap_gpu_flag_index(phase, a.me, b), v);
        unsigned long long t0 = now_ns();
        for (int q = 0; q < a.p && res != ZAP_GPU_DONE_TIMED_OUT; q++) {
            if (q == a.me)
                continue;
            const unsigned long long *f = a.flags[a.me] + zap_gpu_flag_index(phase, q, b);
            unsigned long long x;
            unsigned spins = 0;
            while (((x = ld_acquire(f)) >> 1) < a.ticket) {
                if ((++spins & 255) == 0 && now_ns() - t0 > a.timeout_ns) {
                    res = ZAP_GPU_DONE_TIMED_OUT;
                    w = q;
                    break;
                }
            }
            /* A later ticket can only show in the one-shot forms, whose ok is always 1. */
            if (res == 0 && (x >> 1) == a.ticket && !(x & 1))
                res = ZAP_GPU_DONE_CANCELED;
        }
        verdict = res;
        who = w;
    }
    __syncthreads();
    *peer = who;
    return verdict;
}

/* The block's end: a failure is recorded in the rank's verdict word; the
 * last block to finish turns the verdict into the launch's status. */
__device__ void finish(const zap_gpu_kargs_t &a, int code, int peer)
{
    __syncthreads();
    if (threadIdx.x != 0)
        return;
    if (code != 0)
        atomicMax(a.verdict, (a.ticket << 8) | ((unsigned long long)peer << 4) | (unsigned long long)code);
    __threadfence();
    unsigned old = atomicAdd(a.done, 1u);
    if (old + 1u == a.done_target) {
        __threadfence();
        unsigned long long v = atomicAdd(a.verdict, 0ull);
        unsigned long long word = (v >> 8) == a.ticket ? v : (a.ticket << 8) | ZAP_GPU_DONE_OK;
        *(volatile unsigned long long *)a.status = word;
        __threadfence_system();
    }
}

__device__ __forceinline__ bool aligned16(const void *p) { return ((uintptr_t)p & 15) == 0; }

/* dst[lo, hi) = src[lo, hi), bytes. */
__device__ void copy_bytes(unsigned char *dst, const unsigned char *src, size_t lo, size_t hi)
{
    if (hi <= lo || dst == src)
        return;
    size_t n = hi - lo, i = 0;
    if (aligned16(dst + lo) && aligned16(src + lo)) {
        size_t packs = n / 16;
        const uint4 *s = (const uint4 *)(src + lo);
        uint4 *d = (uint4 *)(dst + lo);
        size_t k = threadIdx.x;
        for (; k + (UNROLL - 1) * THREADS < packs; k += UNROLL * THREADS) {
            uint4 v[UNROLL];
#pragma unroll
            for (int u = 0; u < UNROLL; u++)
                v[u] = s[k + u * THREADS];
#pragma unroll
            for (int u = 0; u < UNROLL; u++)
                d[k + u * THREADS] = v[u];
        }
        for (; k < packs; k += THREADS)
            d[k] = s[k];
        i = packs * 16;
    }
    for (size_t k = i + threadIdx.x; k < n; k += THREADS)
        dst[lo + k] = src[lo + k];
}

template <typename T> __device__ __forceinline__ void combine_pack(zap_op_t op, uint4 &acc, const uint4 &x)
{
    const int n = 16 / sizeof(T);
    T a[n], b[n];
    memcpy(a, &acc, 16);
    memcpy(b, &x, 16);
#pragma unroll
    for (int k = 0; k < n; k++)
        a[k] = zap_combine<T>(op, a[k], b[k]);
    memcpy(&acc, a, 16);
}

/* For elements [lo, hi): acc = ((in[0] op in[1]) op ...) op in[p-1], written
 * to out[0..nout-1]. Byte addresses: in[q] + i * sizeof(T). */
template <typename T>
__device__ void reduce_range(zap_op_t op, int p, const unsigned char *const *in, int nout, unsigned char *const *out,
                             size_t lo, size_t hi)
{
    if (hi <= lo)
        return;
    size_t i = lo;
    bool vec = true;
    for (int q = 0; q < p; q++)
        vec = vec && aligned16(in[q] + lo * sizeof(T));
    for (int o = 0; o < nout; o++)
        vec = vec && aligned16(out[o] + lo * sizeof(T));
    if (vec) {
        const size_t per = 16 / sizeof(T), packs = (hi - lo) / per;
        size_t k = threadIdx.x;
        for (; k + (UNROLL - 1) * THREADS < packs; k += UNROLL * THREADS) {
            uint4 acc[UNROLL], x[UNROLL];
#pragma unroll
            for (int u = 0; u < UNROLL; u++)
                acc[u] = ((const uint4 *)(in[0] + lo * sizeof(T)))[k + u * THREADS];
            for (int q = 1; q < p; q++) {
                const uint4 *s = (const uint4 *)(in[q] + lo * sizeof(T));
#pragma unroll
                for (int u = 0; u < UNROLL; u++)
                    x[u] = s[k + u * THREADS];
#pragma unroll
                for (int u = 0; u < UNROLL; u++)
                    combine_pack<T>(op, acc[u], x[u]);
            }
            for (int o = 0; o < nout; o++) {
                uint4 *d = (uint4 *)(out[o] + lo * sizeof(T));
#pragma unroll
                for (int u = 0; u < UNROLL; u++)
                    d[k + u * THREADS] = acc[u];
            }
        }
        for (; k < packs; k += THREADS) {
            uint4 acc = ((const uint4 *)(in[0] + lo * sizeof(T)))[k];
            for (int q = 1; q < p; q++)
                combine_pack<T>(op, acc, ((const uint4 *)(in[q] + lo * sizeof(T)))[k]);
            for (int o = 0; o < nout; o++)
                ((uint4 *)(out[o] + lo * sizeof(T)))[k] = acc;
        }
        i = lo + packs * per;
    }
    for (size_t e = i + threadIdx.x; e < hi; e += THREADS) {
        T acc = ((const T *)in[0])[e];
        for (int q = 1; q < p; q++)
            acc = zap_combine<T>(op, acc, ((const T *)in[q])[e]);
        for (int o = 0; o < nout; o++)
            ((T *)out[o])[e] = acc;
    }
}

template <typename T> __global__ void __launch_bounds__(THREADS) ar_oneshot_kernel(zap_gpu_kargs_t a)
{
    const size_t es = sizeof(T);
    size_t lo, hi;
    zap_gpu_part(0, a.count, zap_gpu_unit(es), a.nblocks, (int)blockIdx.x, &lo, &hi);
    copy_bytes(a.bank[a.me], a.src, lo * es, hi * es);
    int peer = 0, v = meet(a, 0, 1, &peer);
    if (v == 0) /* in[]: the banks, this rank's own input in its place (the launch filled it) */
        reduce_range<T>((zap_op_t)a.op, a.p, a.in, 1, a.out + a.me, lo, hi);
    finish(a, v, peer);
}

template <typename T> __global__ void __launch_bounds__(THREADS) ar_rsag_kernel(zap_gpu_kargs_t a)
{
    const size_t es = sizeof(T), unit = zap_gpu_unit(es);
    const int b = (int)blockIdx.x;
    size_t slo, shi, lo, hi;
    if (a.stage_in) /* the peers read this rank's segments q != me from stage */
        for (int q = 0; q < a.p; q++) {
            if (q == a.me)
                continue;
            zap_gpu_part(0, a.count, unit, a.p, q, &slo, &shi);
            zap_gpu_part(slo, shi, unit, a.nblocks, b, &lo, &hi);
            copy_bytes(a.stage, a.src, lo * es, hi * es);
        }
    int peer = 0, v = meet(a, 0, a.ok, &peer);
    zap_gpu_part(0, a.count, unit, a.p, a.me, &slo, &shi);
    zap_gpu_part(slo, shi, unit, a.nblocks, b, &lo, &hi);
    if (v == 0)
        reduce_range<T>((zap_op_t)a.op, a.p, a.in, a.p, a.out, lo, hi);
    if (v != ZAP_GPU_DONE_TIMED_OUT) {
        int peer2 = 0, v2 = meet(a, 1, 1, &peer2);
        if (v2 != 0) {
            v = v2;
            peer = peer2;
        }
    }
    if (v == 0 && a.stage_out) /* the peers wrote this rank's segments q != me into stage */
        for (int q = 0; q < a.p; q++) {
            if (q == a.me)
                continue;
            zap_gpu_part(0, a.count, unit, a.p, q, &slo, &shi);
            zap_gpu_part(slo, shi, unit, a.nblocks, b, &lo, &hi);
            copy_bytes(a.dst, a.stage, lo * es, hi * es);
        }
    finish(a, v, peer);
}

__global__ void __launch_bounds__(THREADS) bc_oneshot_kernel(zap_gpu_kargs_t a)
{
    size_t lo, hi;
    zap_gpu_part(0, a.count, 16, a.nblocks, (int)blockIdx.x, &lo, &hi);
    if (a.me == a.root)
        copy_bytes(a.bank[a.me], a.src, lo, hi);
    int peer = 0, v = meet(a, 0, 1, &peer);
    if (v == 0 && a.me != a.root)
        copy_bytes(a.dst, a.bank[a.root], lo, hi);
    finish(a, v, peer);
}

__global__ void __launch_bounds__(THREADS) bc_read_kernel(zap_gpu_kargs_t a)
{
    size_t lo, hi;
    zap_gpu_part(0, a.count, 16, a.nblocks, (int)blockIdx.x, &lo, &hi);
    if (a.me == a.root && a.stage_in)
        copy_bytes(a.stage, a.src, lo, hi);
    int peer = 0, v = meet(a, 0, a.ok, &peer);
    if (v == 0 && a.me != a.root)
        copy_bytes(a.dst, a.in[a.root], lo, hi);
    if (v != ZAP_GPU_DONE_TIMED_OUT) {
        int peer2 = 0, v2 = meet(a, 1, 1, &peer2);
        if (v2 != 0) {
            v = v2;
            peer = peer2;
        }
    }
    finish(a, v, peer);
}

template <typename T> static void launch_ar(cudaStream_t s, const zap_gpu_kargs_t *a)
{
    if (a->work == ZAP_GPU_AR_ONESHOT)
        ar_oneshot_kernel<T><<<a->nblocks, THREADS, 0, s>>>(*a);
    else
        ar_rsag_kernel<T><<<a->nblocks, THREADS, 0, s>>>(*a);
}

extern "C" zap_status_t zap_gpu_kernel_launch(void *stream, const zap_gpu_kargs_t *a)
{
    cudaStream_t s = (cudaStream_t)stream;
    if (a->work == ZAP_GPU_BC_ONESHOT)
        bc_oneshot_kernel<<<a->nblocks, THREADS, 0, s>>>(*a);
    else if (a->work == ZAP_GPU_BC_READ)
        bc_read_kernel<<<a->nblocks, THREADS, 0, s>>>(*a);
    else {
        switch ((zap_dtype_t)a->dt) {
        case ZAP_DT_INT8: launch_ar<int8_t>(s, a); break;
        case ZAP_DT_INT16: launch_ar<int16_t>(s, a); break;
        case ZAP_DT_INT32: launch_ar<int32_t>(s, a); break;
        case ZAP_DT_INT64: launch_ar<int64_t>(s, a); break;
        case ZAP_DT_UINT8: launch_ar<uint8_t>(s, a); break;
        case ZAP_DT_UINT16: launch_ar<uint16_t>(s, a); break;
        case ZAP_DT_UINT32: launch_ar<uint32_t>(s, a); break;
        case ZAP_DT_UINT64: launch_ar<uint64_t>(s, a); break;
        case ZAP_DT_FLOAT16: launch_ar<__half>(s, a); break;
        case ZAP_DT_BFLOAT16: launch_ar<__nv_bfloat16>(s, a); break;
        case ZAP_DT_FLOAT32: launch_ar<float>(s, a); break;
        case ZAP_DT_FLOAT64: launch_ar<double>(s, a); break;
        default: return ZAP_ERR_INVALID_PARAM;
        }
    }
    cudaError_t err = cudaGetLastError();
    if (err != cudaSuccess) {
        zap_error("cuda: GPU path kernel launch failed: %s (%s)", cudaGetErrorString(err), cudaGetErrorName(err));
        return ZAP_ERR_CUDA;
    }
    return ZAP_OK;
}
