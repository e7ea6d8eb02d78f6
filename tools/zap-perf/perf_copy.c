/* zap-perf copy: the collectives' byte copy (base/copy.h) against memcpy, on
 * one process, at the distances within a page that decide between them: 0
 * (the destination page-aligned like the source), 16 (a page-aligned shared
 * area copied into a malloc'd buffer) and 1. Prints GB/s, the median of
 * --reps passes of a size-dependent number of copies, and copy/memcpy (above
 * 1: zap's copy faster). Where this CPU's rep movsb is not slow at those
 * distances (zap_copy_avoid_short_rep is 0), zap_copy is memcpy and the
 * ratio stays near 1; the vector loop's own speed is printed beside it.
 *
 *   zap-perf copy [--min SIZE] [--max SIZE] [--reps N]   (defaults 4K, 16M, 5) */
#include "base/copy.h"
#include "perf_common.h"
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef void (*copy_fn)(void *, const void *, size_t);

static void by_memcpy(void *d, const void *s, size_t n) { memcpy(d, s, n); }

static double gbps(copy_fn f, unsigned char *d, const unsigned char *s, size_t n, int reps)
{
    long iters = n <= (64u << 10) ? 4000 : n <= (1u << 20) ? 400 : 20;
    double v[64];
    for (int k = 0; k < reps; k++) {
        double t0 = perf_now();
        for (long i = 0; i < iters; i++) {
            f(d, s, n);
            __asm__ volatile("" : : "r"(d) : "memory");
        }
        v[k] = (double)n * (double)iters / (perf_now() - t0) / 1e9;
    }
    return perf_median(v, reps);
}

int perf_copy_main(int argc, char **argv)
{
    size_t min = 4u << 10, max = 16u << 20;
    int reps = 5, rank = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    for (int i = 1; i < argc; i++) {
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (strcmp(argv[i], "--min") == 0 && v && perf_parse_size(v, &min) == 0 && min > 0) {
            i++;
        } else if (strcmp(argv[i], "--max") == 0 && v && perf_parse_size(v, &max) == 0 && max >= min) {
            i++;
        } else if (strcmp(argv[i], "--reps") == 0 && v && (reps = atoi(v)) > 0 && reps <= 64) {
            i++;
        } else {
            if (rank == 0)
                fprintf(stderr, "usage: zap-perf copy [--min SIZE] [--max SIZE] [--reps N (1-64)]\n");
            return 2;
        }
    }
    if (rank != 0)
        return 0;
    unsigned char *s = aligned_alloc(4096, max + 4096), *d = aligned_alloc(4096, max + 4096);
    if (s == NULL || d == NULL) {
        fprintf(stderr, "zap-perf copy: no memory for 2 x %zu bytes\n", max);
        return 1;
    }
    memset(s, 1, max + 4096);
    memset(d, 2, max + 4096);
    printf("# zap-perf copy: zap_copy against memcpy, GB/s (median of %d); the vector loop %s here\n", reps,
           zap_copy_avoid_short_rep ? "replaces memcpy at distances 1-63" : "is not taken (memcpy throughout)");
    printf("%10s %5s %9s %9s %9s %8s\n", "bytes", "dist", "memcpy", "zap_copy", "loop", "x");
    for (size_t n = min; n <= max; n *= 4)
        for (size_t dist = 0; dist <= 16; dist += dist == 0 ? 1 : 15) {
            double m = gbps(by_memcpy, d + dist, s, n, reps), z = gbps(zap_copy, d + dist, s, n, reps),
                   l = gbps(zap_copy_vector, d + dist, s, n, reps);
            printf("%10zu %5zu %9.1f %9.1f %9.1f %8.2f\n", n, dist, m, z, l, z / m);
        }
    free(s);
    free(d);
    return 0;
}
