/* zap-ed25519-phases: where a GPU verification spends its time.
 *
 * Runs the verifier's arithmetic (ed25519_arith.h, the code the production
 * kernel runs) in a kernel whose threads read the SM clock at the phase marks
 * of zap_ed25519_verify_item (ZAP_ED25519_PHASE_MARK) and add each phase's
 * cycles to a device counter. The sums over all threads give each phase's
 * share of the threads' time on the SM, stalls included: range and blocklist
 * checks, decoding A (the (p-5)/8 power), SHA-512(R || A || M) mod L, the
 * table of multiples of -A, [k](-A) + [S]B, encoding R' (an inversion) with
 * the comparison, and the rest (record loads, verdict store). The clock reads
 * and counter updates cost a little; the production kernel has none.
 *
 * Usage: zap-ed25519-phases [--log2 N (20)] [--seed S] [--invalid-ppm P (0)]
 * Items are real libsodium signatures (65,536 keys, 32-byte messages), of
 * which P per million get one bit of R, S, A or the message flipped. */
#include <cuda_runtime.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define ZAP_PHASES_BLOCK 128
#define ZAP_PHASES_N 8

__device__ unsigned long long zap_phase_cycles[ZAP_PHASES_N];
__shared__ long long zap_phase_last[ZAP_PHASES_BLOCK];

/* Host and device, as the arithmetic that calls it; only the device counts. */
static __host__ __device__ __forceinline__ void zap_phase_mark(int phase)
{
#if defined(__CUDA_ARCH__)
    long long now = clock64();
    atomicAdd(&zap_phase_cycles[phase], (unsigned long long)(now - zap_phase_last[threadIdx.x]));
    zap_phase_last[threadIdx.x] = now;
#else
    (void)phase;
#endif
}

#define ZAP_ED25519_PHASE_MARK(phase) zap_phase_mark(phase)

#include "ed25519_arith.h"
#include "ed25519_host.h"
#include "ed25519_records.h"
#include "ed25519_testgen.h"

static const char *const zap_phase_names[ZAP_PHASES_N] = {
    "unused", "checks (S < L, blocklists)", "decode A ((p-5)/8 power)", "SHA-512 + mod L",
    "table of -A multiples", "[k](-A) + [S]B", "encode R' (inversion) + compare",
    "record load, verdict store"};

__global__ void __launch_bounds__(ZAP_PHASES_BLOCK, 3)
    zap_phases_kernel(const uint8_t *__restrict__ records, uint64_t n,
                      const zap_ge_niels_t *__restrict__ btab, uint8_t *__restrict__ verdicts)
{
    __shared__ zap_ge_niels_t sbtab[ZAP_ED25519_BTAB_N];
    for (int w = threadIdx.x; w < (int)(sizeof(sbtab) / 4); w += blockDim.x)
        ((int32_t *)sbtab)[w] = ((const int32_t *)btab)[w];
    __syncthreads();
    uint64_t i = (uint64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n)
        return;
    zap_phase_last[threadIdx.x] = clock64();
    const uint4 *r4 = (const uint4 *)(records + i * 128);
    uint4 words[8];
    for (int k = 0; k < 8; k++)
        words[k] = r4[k];
    const uint8_t *b = (const uint8_t *)words;
    int v = zap_ed25519_verify_item(b, b + 32, b + 64, b + 96, 32, sbtab);
    verdicts[i] = (uint8_t)v;
    zap_phase_mark(7);
}

static int ok(cudaError_t e, const char *what)
{
    if (e != cudaSuccess) {
        fprintf(stderr, "zap-ed25519-phases: %s: %s\n", what, cudaGetErrorString(e));
        return 0;
    }
    return 1;
}

int main(int argc, char **argv)
{
    int log2n = 20;
    uint64_t seed = 0x5eed;
    uint32_t ppm = 0;
    for (int i = 1; i + 1 < argc; i += 2) {
        if (!strcmp(argv[i], "--log2"))
            log2n = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--seed"))
            seed = strtoull(argv[i + 1], NULL, 0);
        else if (!strcmp(argv[i], "--invalid-ppm"))
            ppm = (uint32_t)strtoul(argv[i + 1], NULL, 0);
        else {
            fprintf(stderr, "usage: zap-ed25519-phases [--log2 N] [--seed S] [--invalid-ppm P]\n");
            return 2;
        }
    }
    if (log2n < 5 || log2n > 24) {
        fprintf(stderr, "zap-ed25519-phases: --log2 must be in 5..24\n");
        return 2;
    }
    uint64_t n = 1ull << log2n;
    zap_ed25519_gen_params_t gp;
    memset(&gp, 0, sizeof(gp));
    gp.seed = seed;
    gp.n = n;
    gp.n_keys = 65536;
    gp.invalid_ppm = ppm;
    gp.skip_oracle = 1;
    zap_ed25519_batch_t b;
    if (zap_ed25519_gen(&gp, &b) != 0) {
        fprintf(stderr, "zap-ed25519-phases: generation failed\n");
        return 1;
    }
    uint8_t *drec = NULL, *dver = NULL;
    zap_ge_niels_t *dbtab = NULL;
    size_t tab_bytes = sizeof(zap_ge_niels_t) * ZAP_ED25519_BTAB_N;
    if (!ok(cudaMalloc((void **)&drec, n * 128), "cudaMalloc") ||
        !ok(cudaMalloc((void **)&dver, n), "cudaMalloc") ||
        !ok(cudaMalloc((void **)&dbtab, tab_bytes), "cudaMalloc") ||
        !ok(cudaMemcpy(drec, b.records, n * 128, cudaMemcpyHostToDevice), "cudaMemcpy") ||
        !ok(cudaMemcpy(dbtab, zap_ed25519_btab(), tab_bytes, cudaMemcpyHostToDevice), "cudaMemcpy"))
        return 1;
    unsigned grid = (unsigned)((n + ZAP_PHASES_BLOCK - 1) / ZAP_PHASES_BLOCK);
    unsigned long long cyc[ZAP_PHASES_N], zero[ZAP_PHASES_N] = {0};
    cudaEvent_t e0, e1;
    if (!ok(cudaEventCreate(&e0), "cudaEventCreate") ||
        !ok(cudaEventCreate(&e1), "cudaEventCreate"))
        return 1;
    float ms = 0;
    for (int rep = 0; rep < 2; rep++) { /* the first run loads the module */
        if (!ok(cudaMemcpyToSymbol(zap_phase_cycles, zero, sizeof(zero)), "cudaMemcpyToSymbol"))
            return 1;
        cudaEventRecord(e0);
        zap_phases_kernel<<<grid, ZAP_PHASES_BLOCK>>>(drec, n, dbtab, dver);
        cudaEventRecord(e1);
        if (!ok(cudaGetLastError(), "launch") || !ok(cudaEventSynchronize(e1), "kernel"))
            return 1;
        cudaEventElapsedTime(&ms, e0, e1);
    }
    if (!ok(cudaMemcpyFromSymbol(cyc, zap_phase_cycles, sizeof(cyc)), "cudaMemcpyFromSymbol"))
        return 1;
    uint8_t *ver = (uint8_t *)malloc(n);
    if (ver == NULL || !ok(cudaMemcpy(ver, dver, n, cudaMemcpyDeviceToHost), "cudaMemcpy"))
        return 1;
    uint64_t bad = 0;
    for (uint64_t i = 0; i < n; i++)
        bad += ver[i] != b.expected[i];
    unsigned long long total = 0;
    for (int p = 1; p < ZAP_PHASES_N; p++)
        total += cyc[p];
    printf("# zap-ed25519-phases: n %llu, invalid %u ppm, kernel %.3f ms (%.0f items/s with clock "
           "marks), verdicts wrong %llu\n",
           (unsigned long long)n, ppm, ms, (double)n / (ms / 1e3), (unsigned long long)bad);
    printf("%-34s %14s %8s\n", "phase", "cycles/item", "share");
    for (int p = 1; p < ZAP_PHASES_N; p++)
        printf("%-34s %14.0f %7.1f%%\n", zap_phase_names[p], (double)cyc[p] / (double)n,
               100.0 * (double)cyc[p] / (double)total);
    printf("%-34s %14.0f\n", "total", (double)total / (double)n);
    free(ver);
    cudaFree(drec);
    cudaFree(dver);
    cudaFree(dbtab);
    zap_ed25519_batch_free(&b);
    return bad != 0;
}
