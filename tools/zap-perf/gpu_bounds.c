/* zap-gpu-bounds: the copy bandwidths that bound the collectives on
 * GPU-resident buffers, measured in one process that sees the GPUs:
 *   stage   device -> pinned host (cudaMemcpy), the host-staging yardstick of
 *           zap-perf coll's `stage` column;
 *   h2d     pinned host -> device;
 *   d2d     device -> device on one GPU;
 *   peer    GPU 0 -> GPU 1 (cudaMemcpyPeerAsync, NVLink or PCIe), and both
 *           directions at once (bidir, sum of the two);
 *   reduce  the cuda/coll float32 sum kernel, bytes of one input per second.
 * Medians of 9 timed repetitions (events), after one warm-up.
 * Usage: zap-gpu-bounds [max bytes, default 256M] */
#include <cuda_runtime.h>
#include <stdio.h>
#include <stdlib.h>
#include "cuda_coll.h"

#define REPS 9

static void need(cudaError_t e, const char *what)
{
    if (e != cudaSuccess) {
        fprintf(stderr, "zap-gpu-bounds: %s: %s\n", what, cudaGetErrorString(e));
        exit(1);
    }
}

static int cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

typedef void (*work_fn)(void *ctx);

/* GB/s of bytes moved per call of fn, timed with events on stream s (device 0). */
static double time_gbps(work_fn fn, void *ctx, size_t bytes)
{
    double t[REPS];
    fn(ctx);
    need(cudaDeviceSynchronize(), "warm-up");
    for (int i = 0; i < REPS; i++) {
        cudaEvent_t a, b;
        need(cudaEventCreate(&a), "event");
        need(cudaEventCreate(&b), "event");
        need(cudaEventRecord(a, 0), "record");
        fn(ctx);
        need(cudaEventRecord(b, 0), "record");
        need(cudaEventSynchronize(b), "sync");
        float ms = 0;
        need(cudaEventElapsedTime(&ms, a, b), "elapsed");
        t[i] = ms * 1e-3;
        cudaEventDestroy(a);
        cudaEventDestroy(b);
    }
    qsort(t, REPS, sizeof(double), cmp);
    return (double)bytes / t[REPS / 2] / 1e9;
}

typedef struct ctx {
    void *d0, *d0b, *d0c, *d1, *d1b, *pinned;
    size_t bytes;
    cudaStream_t s1; /* on device 1, for the reverse direction */
    cudaEvent_t e0, e1;
} ctx_t;

static void w_stage(void *p) { ctx_t *c = p; need(cudaMemcpyAsync(c->pinned, c->d0, c->bytes, cudaMemcpyDeviceToHost, 0), "d2h"); }
static void w_h2d(void *p) { ctx_t *c = p; need(cudaMemcpyAsync(c->d0, c->pinned, c->bytes, cudaMemcpyHostToDevice, 0), "h2d"); }
static void w_d2d(void *p) { ctx_t *c = p; need(cudaMemcpyAsync(c->d0b, c->d0, c->bytes, cudaMemcpyDeviceToDevice, 0), "d2d"); }
static void w_peer(void *p) { ctx_t *c = p; need(cudaMemcpyPeerAsync(c->d1, 1, c->d0, 0, c->bytes, 0), "peer"); }
static void w_pull(void *p) { ctx_t *c = p; need(cudaMemcpyPeerAsync(c->d0b, 0, c->d1, 1, c->bytes, 0), "pull"); }
static void w_bidir(void *p)
{
    ctx_t *c = p;
    /* 0 -> 1 on the timed stream, 1 -> 0 on device 1's stream, joined back. */
    need(cudaEventRecord(c->e0, 0), "record");
    need(cudaStreamWaitEvent(c->s1, c->e0, 0), "wait");
    need(cudaMemcpyPeerAsync(c->d1, 1, c->d0, 0, c->bytes, 0), "peer");
    need(cudaMemcpyPeerAsync(c->d0c, 0, c->d1b, 1, c->bytes, c->s1), "peer back");
    need(cudaEventRecord(c->e1, c->s1), "record");
    need(cudaStreamWaitEvent(0, c->e1, 0), "join");
}
static void w_reduce(void *p)
{
    ctx_t *c = p;
    if (zap_cuda_reduce_async(0, ZAP_DT_FLOAT32, ZAP_OP_SUM, c->d0b, c->d0, c->d0c, c->bytes / 4) != ZAP_OK)
        exit(1);
}

int main(int argc, char **argv)
{
    size_t max = argc > 1 ? strtoull(argv[1], NULL, 0) : (256u << 20);
    int n = 0;
    need(cudaGetDeviceCount(&n), "device count");
    int can01 = 0;
    if (n >= 2)
        need(cudaDeviceCanAccessPeer(&can01, 0, 1), "can access peer");
    printf("devices %d, peer access 0<->1: %s\n", n, can01 ? "yes" : "no");
    ctx_t c = {0};
    need(cudaSetDevice(0), "set device");
    need(cudaMalloc(&c.d0, max), "malloc");
    need(cudaMalloc(&c.d0b, max), "malloc");
    need(cudaMalloc(&c.d0c, max), "malloc");
    need(cudaMemset(c.d0, 1, max), "memset");
    need(cudaMemset(c.d0c, 1, max), "memset");
    need(cudaMallocHost(&c.pinned, max), "pinned");
    need(cudaEventCreateWithFlags(&c.e0, cudaEventDisableTiming), "event");
    if (n >= 2) {
        need(cudaSetDevice(1), "set device");
        need(cudaMalloc(&c.d1, max), "malloc");
        need(cudaMalloc(&c.d1b, max), "malloc");
        need(cudaMemset(c.d1b, 1, max), "memset");
        need(cudaStreamCreate(&c.s1), "stream");
        need(cudaEventCreateWithFlags(&c.e1, cudaEventDisableTiming), "event");
        if (can01)
            need(cudaDeviceEnablePeerAccess(0, 0), "peer access 1->0");
        need(cudaSetDevice(0), "set device");
        if (can01)
            need(cudaDeviceEnablePeerAccess(1, 0), "peer access 0->1");
    }
    printf("%12s %9s %9s %9s %9s %9s %9s %9s\n", "bytes", "stage", "h2d", "d2d", "peer", "pull", "bidir", "reduce");
    for (size_t b = 1u << 16; b <= max; b *= 4) {
        c.bytes = b;
        printf("%12zu %9.1f %9.1f %9.1f", b, time_gbps(w_stage, &c, b), time_gbps(w_h2d, &c, b), time_gbps(w_d2d, &c, b));
        if (n >= 2)
            printf(" %9.1f %9.1f %9.1f", time_gbps(w_peer, &c, b), time_gbps(w_pull, &c, b),
                   time_gbps(w_bidir, &c, 2 * b));
        else
            printf(" %9s %9s %9s", "-", "-", "-");
        printf(" %9.1f\n", time_gbps(w_reduce, &c, b));
    }
    return 0;
}
