/* zap-pool-bench: alloc+free pairs per second for each size class, on one
 * and two threads, against malloc/free (and, with a GPU, direct
 * cudaMallocManaged/cudaFree), printed as ratios; then the pool's bookkeeping
 * as a share of the bytes it manages. Medians of several repetitions. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "zap/pool.h"
#include "pool/backing.h"

#ifdef ZAP_BENCH_CUDA
double bench_cuda_managed_pairs(size_t size, long iters);
#endif

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

typedef struct {
    zap_pool_t *pool; /* NULL: malloc/free */
    size_t size;
    long iters;   /* at most this many pairs ... */
    double min_s; /* ... or this many seconds, whichever ends first */
    double rate;
} job_t;

static double g_min_s = 0.25;

/* Keeps a small working set so the allocator does real free-list work rather
 * than handing the same block back and forth. Stops after iters pairs or
 * min_s seconds, whichever comes first (malloc's mmap path at large sizes is
 * 100x slower than the pool, so a fixed count would take minutes there). */
static void *run_job(void *arg)
{
    job_t *j = arg;
    enum { WS = 8 };
    zap_buf_t bufs[WS];
    void *ptrs[WS];
    memset(bufs, 0, sizeof(bufs));
    long done = 0;
    double t0 = now_s(), elapsed = 0;
    while (done < j->iters && (elapsed = now_s() - t0) < j->min_s) {
        for (int k = 0; k < WS; k++) {
            if (j->pool) {
                if (zap_pool_alloc(j->pool, j->size, &bufs[k]) != ZAP_OK)
                    abort();
                ((volatile char *)bufs[k].ptr)[0] = 1;
            } else {
                ptrs[k] = malloc(j->size);
                if (ptrs[k] == NULL)
                    abort();
                ((volatile char *)ptrs[k])[0] = 1;
            }
        }
        for (int k = 0; k < WS; k++) {
            if (j->pool)
                zap_buf_free(&bufs[k]);
            else
                free(ptrs[k]);
        }
        done += WS;
    }
    j->rate = done / (now_s() - t0);
    return NULL;
}

static double measure(zap_pool_t *pool, size_t size, long iters, int threads)
{
    job_t jobs[8];
    pthread_t tids[8];
    for (int t = 0; t < threads; t++) {
        jobs[t] = (job_t){pool, size, iters, g_min_s, 0};
        pthread_create(&tids[t], NULL, run_job, &jobs[t]);
    }
    double total = 0;
    for (int t = 0; t < threads; t++) {
        pthread_join(tids[t], NULL);
        total += jobs[t].rate;
    }
    return total;
}

static int cmp_d(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double median_of(zap_pool_t *pool, size_t size, long iters, int threads, int reps)
{
    double r[16];
    for (int i = 0; i < reps; i++)
        r[i] = measure(pool, size, iters, threads);
    qsort(r, (size_t)reps, sizeof(double), cmp_d);
    return r[reps / 2];
}

int main(int argc, char **argv)
{
    int quick = argc > 1 && strcmp(argv[1], "--quick") == 0;
    long iters = quick ? 20000 : 2000000;
    g_min_s = quick ? 0.02 : 0.25;
    int reps = quick ? 1 : 5;
    zap_pool_params_t p = {.backend = ZAP_POOL_BACKEND_HOST, .budget_bytes = ZAP_POOL_UNLIMITED, .device = -1};
    zap_pool_t *pool = NULL;
    if (zap_pool_create(&p, &pool) != ZAP_OK)
        return 1;
    printf("# zap-pool-bench: alloc+free pairs/s (median of %d; each run 2e6 pairs or 0.25 s), host backing, working set 8\n", reps);
    printf("%-8s %8s %14s %14s %8s\n", "class", "threads", "pool pairs/s", "malloc pairs/s", "ratio");
    for (int threads = 1; threads <= 2; threads++) {
        for (int c = 0; c < ZAP_POOL_NUM_CLASSES; c++) {
            size_t size = zap_pool_class_size(c);
            double zp = median_of(pool, size, iters, threads, reps);
            double mp = median_of(NULL, size, iters, threads, reps);
            printf("%-8zu %8d %14.0f %14.0f %8.2f\n", size, threads, zp, mp, zp / mp);
        }
    }
#ifdef ZAP_BENCH_CUDA
    printf("#\n# against direct cudaMallocManaged/cudaFree (managed pool backing), 1 thread\n");
    zap_pool_params_t mp = {.backend = ZAP_POOL_BACKEND_MANAGED, .budget_bytes = 1ull << 30, .device = -1};
    zap_pool_t *mpool = NULL;
    if (zap_cuda_device_count(NULL) > 0 && zap_pool_create(&mp, &mpool) == ZAP_OK) {
        printf("%-8s %14s %14s %8s\n", "class", "pool pairs/s", "cuda pairs/s", "ratio");
        for (int c = 0; c < ZAP_POOL_NUM_CLASSES; c++) {
            size_t size = zap_pool_class_size(c);
            double zp = median_of(mpool, size, iters / 10, 1, reps);
            double cp = bench_cuda_managed_pairs(size, quick ? 100 : 2000);
            printf("%-8zu %14.0f %14.0f %8.1f\n", size, zp, cp, zp / cp);
        }
        zap_pool_destroy(mpool);
    } else {
        printf("# no CUDA device: managed comparison skipped\n");
    }
#endif
    /* Bookkeeping: fill one chunk of every class and compare. */
    zap_buf_t held[ZAP_POOL_NUM_CLASSES];
    for (int c = 0; c < ZAP_POOL_NUM_CLASSES; c++)
        zap_pool_alloc(pool, zap_pool_class_size(c), &held[c]);
    zap_pool_stats_t s;
    zap_pool_stats(pool, &s);
    printf("#\n# bookkeeping: %llu bytes for %llu reserved (%.3f%%)\n", (unsigned long long)s.bookkeeping_bytes,
           (unsigned long long)s.reserved_bytes, 100.0 * s.bookkeeping_bytes / s.reserved_bytes);
    for (int c = 0; c < ZAP_POOL_NUM_CLASSES; c++)
        zap_buf_free(&held[c]);
    return zap_pool_destroy(pool) == ZAP_OK ? 0 : 1;
}
