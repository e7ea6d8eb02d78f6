/* zap-ed25519-bench: GPU Ed25519 batch verification against libsodium 1.0.18
 * on every CPU core of the same machine, measured in the same run.
 *
 * What it does:
 *   1. Generates 2^max_log2 real signatures (libsodium crypto_sign_detached,
 *      32-byte random messages) with 65,536 distinct key pairs, on all cores.
 *   2. For each invalid rate (0%, 1%, 50%) copies them into pinned host memory
 *      and a cudaMalloc'ed device buffer, flipping one random bit of R, S, A or
 *      the message of the chosen items.
 *   3. For each batch size 2^min_log2 .. 2^max_log2:
 *        kernel-only: records already in device memory, verdicts to device
 *                     memory; the kernel's CUDA-event time (median of reps,
 *                     5 by default, at every size);
 *        end-to-end:  records in pinned host memory -> device, kernel, verdicts
 *                     and bitmap back to host; wall time of the call (median);
 *        CPU:         libsodium crypto_sign_verify_detached on all cores
 *                     (pthreads, one contiguous slice each), wall time; above
 *                     2^cpu_max_log2 the rate at 2^cpu_max_log2 is reused
 *                     (marked '*' in the table, cpu_extrapolated=1 in the CSV).
 *      Every GPU verdict is compared with the intended one (valid unless
 *      mutated) and, where the CPU ran, with libsodium's.
 *   4. The crossover: the smallest batch (powers of two from 16) where the GPU
 *      end-to-end time beats libsodium on all cores.
 * With --msg-len L the records are variable-message records and every message
 * is L bytes (the blob follows the records: pinned for end to end, device
 * memory for kernel only); mutations then touch R, S and A only.
 * Prints a table to stdout and writes a CSV (--csv). */
#include <cuda_runtime_api.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ed25519_gpu.h"
#include "ed25519_testgen.h"

typedef struct bench_opts {
    int min_log2, max_log2, cpu_max_log2, reps, threads, msg_len, rates_mask;
    uint32_t keys;
    uint64_t seed;
    const char *csv;
} bench_opts_t;

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof(double), cmp_double);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

static int check(cudaError_t e, const char *what)
{
    if (e != cudaSuccess) {
        fprintf(stderr, "zap-ed25519-bench: %s: %s\n", what, cudaGetErrorString(e));
        return 0;
    }
    return 1;
}

static uint64_t mix64(uint64_t z)
{
    z += 0x9e3779b97f4a7c15ULL;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

/* Flip one bit of R, S, A or the message in ppm per million items. */
static void mutate(uint8_t *rec, uint8_t *intended, uint64_t n, uint32_t ppm, uint64_t seed,
                   int variable_msgs)
{
    for (uint64_t i = 0; i < n; i++) {
        uint64_t r = mix64(seed ^ (i * 0x2545f4914f6cdd1dULL));
        intended[i] = 1;
        if (r % 1000000 >= ppm)
            continue;
        uint64_t r2 = mix64(r);
        /* 0 A, 1 R, 2 S, 3 msg (fixed records; variable ones keep their message) */
        int field = (int)(r2 % (variable_msgs ? 3 : 4));
        int bit = (int)((r2 >> 8) % 256);
        uint8_t *p = rec + i * 128 + 32 * field;
        p[bit / 8] ^= (uint8_t)(1u << (bit % 8));
        intended[i] = 0;
    }
}

static void usage(void)
{
    fprintf(stderr, "usage: zap-ed25519-bench [--min-log2 10] [--max-log2 22] [--cpu-max-log2 18]\n"
                    "         [--reps 5] [--keys 65536] [--threads all] [--seed N] [--csv file]\n"
                    "         [--msg-len L]  (L > 0: variable-message records, every message L bytes)\n"
                    "         [--rates 0,1,50]  (percent invalid; the crossover needs 0)\n");
}

int main(int argc, char **argv)
{
    bench_opts_t o = {10, 22, 18, 5, 0, 0, 7, 65536, 0x5eed, NULL};
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (v == NULL) {
            usage();
            return 2;
        }
        if (!strcmp(a, "--min-log2"))
            o.min_log2 = atoi(v);
        else if (!strcmp(a, "--max-log2"))
            o.max_log2 = atoi(v);
        else if (!strcmp(a, "--cpu-max-log2"))
            o.cpu_max_log2 = atoi(v);
        else if (!strcmp(a, "--reps"))
            o.reps = atoi(v);
        else if (!strcmp(a, "--keys"))
            o.keys = (uint32_t)strtoul(v, NULL, 0);
        else if (!strcmp(a, "--msg-len"))
            o.msg_len = atoi(v);
        else if (!strcmp(a, "--threads"))
            o.threads = atoi(v);
        else if (!strcmp(a, "--seed"))
            o.seed = strtoull(v, NULL, 0);
        else if (!strcmp(a, "--csv"))
            o.csv = v;
        else if (!strcmp(a, "--rates")) {
            /* comma-separated subset of 0,1,50 (percent invalid) */
            o.rates_mask = 0;
            for (const char *c = v; *c;) {
                int r = atoi(c);
                o.rates_mask |= r == 0 ? 1 : r == 1 ? 2 : r == 50 ? 4 : 8;
                while (*c && *c != ',')
                    c++;
                if (*c == ',')
                    c++;
            }
        }
        else {
            usage();
            return 2;
        }
        i++;
    }
    if (o.min_log2 < 4 || o.max_log2 > 26 || o.min_log2 > o.max_log2 || o.reps < 1 ||
        o.msg_len < 0 || o.rates_mask == 0 || (o.rates_mask & 8)) {
        usage();
        return 2;
    }
    int threads = o.threads > 0 ? o.threads : zap_ed25519_online_cpus();
    if (!zap_ed25519_gpu_available()) {
        fprintf(stderr, "zap-ed25519-bench: no CUDA device\n");
        return 1;
    }
    struct cudaDeviceProp prop;
    int dev = 0;
    if (!check(cudaGetDevice(&dev), "cudaGetDevice") ||
        !check(cudaGetDeviceProperties(&prop, dev), "cudaGetDeviceProperties"))
        return 1;
    uint64_t nmax = 1ull << o.max_log2;
    printf("# zap-ed25519-bench: device %s (%d SMs), %d CPU threads for libsodium, seed 0x%llx\n",
           prop.name, prop.multiProcessorCount, threads, (unsigned long long)o.seed);

    /* 1. real signatures */
    zap_ed25519_gen_params_t gp;
    memset(&gp, 0, sizeof(gp));
    gp.seed = o.seed;
    gp.n = nmax;
    gp.n_keys = o.keys;
    gp.threads = threads;
    gp.skip_oracle = 1; /* all valid by construction; checked against libsodium below */
    int var = o.msg_len > 0;
    gp.variable_msgs = var;
    gp.min_msg_len = gp.max_msg_len = (uint32_t)o.msg_len;
    zap_ed25519_batch_t base;
    double t0 = now_s();
    if (zap_ed25519_gen(&gp, &base) != 0) {
        fprintf(stderr, "zap-ed25519-bench: generating %llu signatures failed\n",
                (unsigned long long)nmax);
        return 1;
    }
    printf("# generated %llu signatures (%u key pairs, %d-byte messages, %s records) in %.1f s\n",
           (unsigned long long)nmax, o.keys, var ? o.msg_len : 32, var ? "variable" : "fixed",
           now_s() - t0);
    /* Variable records: the blob goes to pinned host memory (end to end) and
     * device memory (kernel only), like the records. */
    uint8_t *hblob = NULL, *dblob = NULL;
    uint64_t blob_len = var ? base.blob_len : 0;
    if (var) {
        if (!check(cudaMallocHost((void **)&hblob, blob_len ? blob_len : 1), "cudaMallocHost blob") ||
            !check(cudaMalloc((void **)&dblob, blob_len ? blob_len : 1), "cudaMalloc blob"))
            return 1;
        memcpy(hblob, base.blob, blob_len);
        if (!check(cudaMemcpy(dblob, hblob, blob_len, cudaMemcpyHostToDevice), "cudaMemcpy blob"))
            return 1;
    }

    size_t bytes = (size_t)nmax * 128;
    uint8_t *hrec = NULL, *drec = NULL, *dver = NULL, *hver = NULL;
    uint32_t *hbit = NULL;
    if (!check(cudaMallocHost((void **)&hrec, bytes), "cudaMallocHost records") ||
        !check(cudaMalloc((void **)&drec, bytes), "cudaMalloc records") ||
        !check(cudaMalloc((void **)&dver, nmax), "cudaMalloc verdicts") ||
        !check(cudaMallocHost((void **)&hver, nmax), "cudaMallocHost verdicts") ||
        !check(cudaMallocHost((void **)&hbit, (nmax + 31) / 32 * 4), "cudaMallocHost bitmap"))
        return 1;
    uint8_t *intended = malloc(nmax), *cpuv = malloc(nmax);
    if (intended == NULL || cpuv == NULL)
        return 1;

    FILE *csv = NULL;
    if (o.csv != NULL) {
        csv = fopen(o.csv, "w");
        if (csv == NULL) {
            perror(o.csv);
            return 1;
        }
        fprintf(csv, "msg_len,invalid_pct,n,gpu_kernel_ms,gpu_kernel_items_s,gpu_e2e_ms,gpu_e2e_items_s,"
                     "h2d_ms,d2h_ms,cpu_ms,cpu_items_s,cpu_extrapolated,kernel_vs_cpu,e2e_vs_cpu,"
                     "mismatch_intended,mismatch_libsodium\n");
    }

    const uint32_t rates_ppm[3] = {0, 10000, 500000};
    int failures = 0;
    uint64_t crossover = 0;
    for (int ri = 0; ri < 3; ri++) {
        if (!(o.rates_mask & (1 << ri)))
            continue;
        memcpy(hrec, base.records, bytes);
        mutate(hrec, intended, nmax, rates_ppm[ri], o.seed + (uint64_t)ri, var);
        if (!check(cudaMemcpy(drec, hrec, bytes, cudaMemcpyHostToDevice), "cudaMemcpy records"))
            return 1;
        zap_ed25519_batch_t view = base;
        view.records = hrec;
        /* warm-up: module load, device buffers at full size */
        zap_ed25519_gpu_stats_t st;
        if (zap_ed25519_gpu_verify(hrec, 128, nmax, var, hblob, blob_len, hver, hbit, &st) != ZAP_OK ||
            zap_ed25519_gpu_verify(drec, 128, nmax, var, dblob, blob_len, dver, NULL, &st) != ZAP_OK) {
            fprintf(stderr, "zap-ed25519-bench: warm-up failed\n");
            return 1;
        }
        printf("\n## invalid %.0f%%\n", rates_ppm[ri] / 1e4);
        printf("%9s %12s %12s %12s %12s %12s %8s %8s %9s %9s\n", "n", "kernel ms", "kernel/s",
               "e2e ms", "e2e/s", "cpu/s", "kern/cpu", "e2e/cpu", "bad(int)", "bad(sod)");
        double cpu_rate_ref = 0;
        int first_log2 = ri == 0 ? 4 : o.min_log2; /* small sizes: crossover, 0% only */
        for (int lg = first_log2; lg <= o.max_log2; lg++) {
            uint64_t n = 1ull << lg;
            /* the first n items' messages are the first n * L bytes of the blob */
            uint64_t bl = var ? n * (uint64_t)o.msg_len : 0;
            int reps = o.reps;
            double kt[64], et[64], h2d[64], d2h[64];
            if (reps > 64)
                reps = 64;
            for (int r = 0; r < reps; r++) {
                if (zap_ed25519_gpu_verify(drec, 128, n, var, dblob, bl, dver, NULL, &st) != ZAP_OK)
                    return 1;
                kt[r] = st.kernel_ms;
                memset(hver, 0xee, n);
                double w0 = now_s();
                if (zap_ed25519_gpu_verify(hrec, 128, n, var, hblob, bl, hver, hbit, &st) != ZAP_OK)
                    return 1;
                et[r] = (now_s() - w0) * 1e3;
                h2d[r] = st.h2d_ms;
                d2h[r] = st.d2h_ms;
                if (r == 0 && kt[0] + et[0] > 3000.0)
                    reps = 1; /* slow enough that one sample is stable; bounds the run */
            }
            double kms = median(kt, reps), ems = median(et, reps);
            double h2dms = median(h2d, reps), d2hms = median(d2h, reps);
            uint64_t bad_int = 0, bad_sod = 0;
            for (uint64_t i = 0; i < n; i++)
                bad_int += hver[i] != intended[i];
            /* bitmap consistent with verdicts */
            for (uint64_t i = 0; i < n; i++)
                if (((hbit[i / 32] >> (i % 32)) & 1u) != (hver[i] == 1))
                    bad_int++;
            double cpu_s = 0;
            int extrapolated = 0;
            if (lg <= o.cpu_max_log2) {
                int creps = n <= (1u << 14) ? 3 : 1;
                double ct[3];
                for (int r = 0; r < creps; r++)
                    ct[r] = zap_ed25519_oracle(&view, 0, n, cpuv, threads);
                cpu_s = median(ct, creps);
                for (uint64_t i = 0; i < n; i++)
                    bad_sod += hver[i] != cpuv[i];
                cpu_rate_ref = (double)n / cpu_s;
            } else {
                cpu_s = (double)n / cpu_rate_ref;
                extrapolated = 1;
            }
            double krate = (double)n / (kms / 1e3), erate = (double)n / (ems / 1e3);
            double crate = (double)n / cpu_s;
            if (ri == 0 && crossover == 0 && ems < cpu_s * 1e3)
                crossover = n;
            failures += bad_int != 0 || bad_sod != 0;
            printf("%9llu %12.3f %12.0f %12.3f %12.0f %11.0f%s %8.1f %8.1f %9llu %9llu\n",
                   (unsigned long long)n, kms, krate, ems, erate, crate, extrapolated ? "*" : " ",
                   krate / crate, erate / crate, (unsigned long long)bad_int,
                   (unsigned long long)bad_sod);
            if (csv != NULL)
                fprintf(csv, "%d,%.0f,%llu,%.4f,%.0f,%.4f,%.0f,%.4f,%.4f,%.4f,%.0f,%d,%.2f,%.2f,%llu,%llu\n",
                        var ? o.msg_len : 32, rates_ppm[ri] / 1e4, (unsigned long long)n, kms, krate, ems, erate, h2dms,
                        d2hms, cpu_s * 1e3, crate, extrapolated, krate / crate, erate / crate,
                        (unsigned long long)bad_int, (unsigned long long)bad_sod);
            fflush(stdout);
            if (csv != NULL)
                fflush(csv);
        }
    }
    printf("\n# crossover (0%% invalid): GPU end-to-end beats libsodium on %d threads from n = %llu "
           "(powers of two from 16)\n",
           threads, (unsigned long long)crossover);

    /* Register-budget variants of the kernel at the largest size, 0% invalid. */
    memcpy(hrec, base.records, bytes);
    if (!check(cudaMemcpy(drec, hrec, bytes, cudaMemcpyHostToDevice), "cudaMemcpy records"))
        return 1;
    const char *variants[3] = {"2", "3", "4"};
    for (int v = 0; v < 3; v++) {
        setenv("ZAP_ED25519_GPU_VARIANT", variants[v], 1);
        double kt[8];
        int reps = 3;
        zap_ed25519_gpu_stats_t st;
        for (int r = 0; r < reps; r++) {
            if (zap_ed25519_gpu_verify(drec, 128, nmax, var, dblob, blob_len, dver, NULL, &st) != ZAP_OK)
                return 1;
            kt[r] = st.kernel_ms;
        }
        double kms = median(kt, reps);
        printf("# kernel variant minBlocks=%s: n %llu, %.3f ms, %.0f items/s\n", variants[v],
               (unsigned long long)nmax, kms, (double)nmax / (kms / 1e3));
    }
    unsetenv("ZAP_ED25519_GPU_VARIANT");

    /* Managed records, prefetched by the verifier, at the largest size. */
    uint8_t *mrec = NULL;
    if (check(cudaMallocManaged((void **)&mrec, bytes, cudaMemAttachGlobal), "cudaMallocManaged")) {
        memcpy(mrec, base.records, bytes);
        zap_ed25519_gpu_stats_t st;
        double w0 = now_s();
        if (zap_ed25519_gpu_verify(mrec, 128, nmax, var, hblob, blob_len, hver, NULL, &st) == ZAP_OK)
            printf("# managed records (host-touched, prefetched in the call): n %llu, wall %.3f ms "
                   "(%.0f items/s), prefetch %.3f ms, kernel %.3f ms\n",
                   (unsigned long long)nmax, (now_s() - w0) * 1e3,
                   (double)nmax / (now_s() - w0), st.h2d_ms, st.kernel_ms);
        check(cudaFree(mrec), "cudaFree managed");
    }

    if (csv != NULL)
        fclose(csv);
    check(cudaFreeHost(hrec), "cudaFreeHost");
    check(cudaFree(drec), "cudaFree");
    check(cudaFree(dver), "cudaFree");
    check(cudaFreeHost(hver), "cudaFreeHost");
    check(cudaFreeHost(hbit), "cudaFreeHost");
    if (var) {
        check(cudaFreeHost(hblob), "cudaFreeHost blob");
        check(cudaFree(dblob), "cudaFree blob");
    }
    free(intended);
    free(cpuv);
    zap_ed25519_batch_free(&base);
    printf("# verdict mismatches: %s\n", failures ? "SOME (see bad columns)" : "none");
    return failures ? 1 : 0;
}
