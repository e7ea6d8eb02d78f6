/* zap-perf first: what each of a process's first calls of one MPI collective
 * costs, call by call, through whatever coll component MPI picks (run it with
 * and without the zap component, plugin/ompi). A program that times only a
 * few calls after a short warm-up (OSU's -x 20) sees a cost the first calls
 * pay; this mode shows which calls pay it and whether they page-fault.
 *
 *   mpirun -np N zap-perf first [--op gather|allreduce|allgather|bcast]
 *                               [--size BYTES] [--calls N] [--prelude]
 *
 * --size is the per-rank block (gather, allgather, bcast) or the vector
 * (allreduce, floats). --prelude first runs 40 calls of every power of two
 * from 8 B below --size, as OSU's size sweep does, so that a component that
 * declines those sizes leaves them to Open MPI. Each timed call is followed
 * by a barrier. Rank 0 prints its first 100 call times in us (a '*' where
 * the call took a page fault in rank 0, getrusage), then the mean of calls
 * 1-63 (call 0 sets things up) against the mean of the last 64. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include "perf_common.h"

static long faults(void)
{
    struct rusage r;
    getrusage(RUSAGE_SELF, &r);
    return r.ru_minflt + r.ru_majflt;
}

static int call(const char *op, const char *s, char *r, size_t n)
{
    if (strcmp(op, "gather") == 0)
        return MPI_Gather(s, (int)n, MPI_CHAR, r, (int)n, MPI_CHAR, 0, MPI_COMM_WORLD);
    if (strcmp(op, "allreduce") == 0)
        return MPI_Allreduce(s, r, n / 4 ? (int)(n / 4) : 1, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
    if (strcmp(op, "allgather") == 0)
        return MPI_Allgather(s, (int)n, MPI_CHAR, r, (int)n, MPI_CHAR, MPI_COMM_WORLD);
    return MPI_Bcast((void *)s, (int)n, MPI_CHAR, 0, MPI_COMM_WORLD);
}

int perf_first_main(int argc, char **argv)
{
    int rank, p;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &p);
    const char *op = "gather";
    size_t n = 4096;
    int calls = 300, prelude = 0;
    for (int i = 1; i < argc; i++) {
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (strcmp(argv[i], "--prelude") == 0) {
            prelude = 1;
        } else if (strcmp(argv[i], "--op") == 0 && v != NULL &&
                   (strcmp(v, "gather") == 0 || strcmp(v, "allreduce") == 0 || strcmp(v, "allgather") == 0 ||
                    strcmp(v, "bcast") == 0)) {
            op = argv[++i];
        } else if (strcmp(argv[i], "--size") == 0 && v != NULL && perf_parse_size(v, &n) == 0 && n > 0 &&
                   n <= (1u << 30)) {
            i++;
        } else if (strcmp(argv[i], "--calls") == 0 && v != NULL && (calls = atoi(v)) >= 128) {
            i++;
        } else {
            if (rank == 0)
                fprintf(stderr, "usage: mpirun -np N zap-perf first [--op gather|allreduce|allgather|bcast] "
                                "[--size BYTES] [--calls N >= 128] [--prelude]\n");
            return 2;
        }
    }
    char *s = malloc(n * (size_t)p), *r = malloc(n * (size_t)p);
    double *t = calloc((size_t)calls, sizeof(double));
    long *f = calloc((size_t)calls, sizeof(long));
    if (s == NULL || r == NULL || t == NULL || f == NULL) {
        fprintf(stderr, "zap-perf first: out of memory\n");
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    memset(s, 1, n * (size_t)p);
    memset(r, 0, n * (size_t)p);
    if (prelude)
        for (size_t m = 8; m < n; m *= 2)
            for (int k = 0; k < 40; k++) {
                call(op, s, r, m);
                MPI_Barrier(MPI_COMM_WORLD);
            }
    for (int i = 0; i < calls; i++) {
        long f0 = faults();
        double t0 = MPI_Wtime();
        call(op, s, r, n);
        t[i] = MPI_Wtime() - t0;
        f[i] = faults() - f0;
        MPI_Barrier(MPI_COMM_WORLD);
    }
    if (rank == 0) {
        printf("# %s, %zu bytes, %d ranks: first 100 calls, us (* = page fault in rank 0)\n", op, n, p);
        for (int i = 0; i < calls && i < 100; i++)
            printf("%.1f%s ", t[i] * 1e6, f[i] ? "*" : "");
        double first = 0, last = 0;
        for (int i = 1; i < 64; i++)
            first += t[i];
        for (int i = calls - 64; i < calls; i++)
            last += t[i];
        printf("\ncalls 1-63: mean %.2f us; last 64: mean %.2f us\n", first / 63 * 1e6, last / 64 * 1e6);
    }
    free(s);
    free(r);
    free(t);
    free(f);
    return 0;
}
