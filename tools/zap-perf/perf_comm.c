/* zap-perf comm: what creating a communicator costs, the shared-memory
 * segment's setup (coll/shm) against none, in the same processes:
 *
 *   mpirun -np N zap-perf comm [--reps R]
 *
 * Each rank times zap_comm_create (and zap_comm_split into halves) on one UCX
 * transport, R times each with ZAP_COLL_SHM=auto, with auto and
 * ZAP_COLL_SHM_LARGE_BYTES=0 (slots only), with auto and ZAP_COLL_CMA=off
 * (no single-copy probe) and with ZAP_COLL_SHM=off, alternating; rank 0 prints the median, minimum and maximum over ranks'
 * slowest, in milliseconds, and whether the communicator got a segment. */
#include "perf_common.h"
#include "zap/coll.h"
#include "zap/ucp.h"
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct variant {
    const char *name, *shm, *large, *cma; /* NULL: unset */
} variant_t;

static const variant_t variants[] = {
    {"shm auto (default large area)", "auto", NULL, NULL},
    {"shm auto, ZAP_COLL_SHM_LARGE_BYTES=0", "auto", "0", NULL},
    {"shm auto, ZAP_COLL_CMA=off", "auto", NULL, "off"},
    {"shm off", "off", NULL, NULL},
};
#define NV (sizeof(variants) / sizeof(variants[0]))

static void set_or_unset(const char *name, const char *value)
{
    if (value)
        setenv(name, value, 1);
    else
        unsetenv(name);
}

static void set_env(const variant_t *v)
{
    set_or_unset("ZAP_COLL_SHM", v->shm);
    set_or_unset("ZAP_COLL_SHM_LARGE_BYTES", v->large);
    set_or_unset("ZAP_COLL_CMA", v->cma);
}

int perf_comm_main(int argc, char **argv)
{
    long reps = 20;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--reps") == 0 && i + 1 < argc && (reps = atol(argv[++i])) > 0)
            continue;
        fprintf(stderr, "usage: mpirun -np N zap-perf comm [--reps R]\n");
        return 2;
    }
    int rank = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    zap_transport_t *t = NULL;
    if (zap_ucp_transport_create(MPI_COMM_WORLD, NULL, &t) != ZAP_OK) {
        fprintf(stderr, "zap-perf comm: rank %d: transport create failed\n", rank);
        return 3;
    }
    double *tc = calloc((size_t)(reps * NV * 2), sizeof(double));
    if (tc == NULL) {
        fprintf(stderr, "zap-perf comm: rank %d: no memory for %ld repetitions\n", rank, reps);
        zap_transport_close(t);
        return 3;
    }
    int shared[NV] = {0};
    size_t bytes[NV] = {0};
    int rc = 0;
    for (long r = 0; r < reps && rc == 0; r++) {
        for (size_t v = 0; v < NV && rc == 0; v++) {
            set_env(&variants[v]);
            zap_comm_t *c = NULL, *half = NULL;
            MPI_Barrier(MPI_COMM_WORLD);
            double t0 = MPI_Wtime();
            zap_status_t st = zap_comm_create(t, &c);
            double t1 = MPI_Wtime();
            if (st == ZAP_OK)
                st = zap_comm_split(c, rank % 2, 0, &half);
            double t2 = MPI_Wtime();
            if (st != ZAP_OK) {
                fprintf(stderr, "zap-perf comm: rank %d: %s\n", rank, zap_status_string(st));
                rc = 4;
            }
            shared[v] = zap_comm_shared_memory(c);
            bytes[v] = zap_comm_shared_memory_bytes(c);
            double mine[2] = {(t1 - t0) * 1e3, (t2 - t1) * 1e3}, slowest[2];
            MPI_Allreduce(mine, slowest, 2, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
            tc[(v * 2) * reps + r] = slowest[0];
            tc[(v * 2 + 1) * reps + r] = slowest[1];
            zap_comm_destroy(half);
            zap_comm_destroy(c);
        }
    }
    set_env(&(variant_t){NULL, NULL, NULL, NULL});
    if (rc == 0 && rank == 0) {
        int p = 0;
        MPI_Comm_size(MPI_COMM_WORLD, &p);
        printf("# zap_comm_create and zap_comm_split on %d ranks, %ld times each, ms (slowest rank)\n", p, reps);
        printf("%-40s %-7s %-12s | %9s %9s %9s | %9s %9s %9s\n", "variant", "segment", "shm bytes", "create", "min",
               "max", "split", "min", "max");
        for (size_t v = 0; v < NV; v++) {
            double *a = tc + (v * 2) * reps, *b = tc + (v * 2 + 1) * reps;
            double ma = perf_median(a, (int)reps), mb = perf_median(b, (int)reps); /* sorts them too */
            printf("%-40s %-7s %-12zu | %9.3f %9.3f %9.3f | %9.3f %9.3f %9.3f\n", variants[v].name,
                   shared[v] ? "yes" : "no", bytes[v], ma, a[0], a[reps - 1], mb, b[0], b[reps - 1]);
        }
    }
    free(tc);
    zap_transport_close(t);
    return rc;
}
