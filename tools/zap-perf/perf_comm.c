/* zap-perf comm: what making a communicator costs, in the same processes:
 *
 *   mpirun -np N zap-perf comm [--reps R] [--groups G]
 *
 * Part 1, collective creation: each rank times zap_comm_create_ex (and
 * zap_comm_split into halves) on one UCX transport, R times each with the
 * shared-memory segment's settings varied (default; no large area; no
 * single-copy probe; no segment), alternating; rank 0 prints the median,
 * minimum and maximum over ranks' slowest, in milliseconds, and whether the
 * communicator got a segment.
 *
 * Part 2, group communicators: G cycles of zap_comm_create_group over all
 * ranks (a fresh caller id each) and zap_comm_destroy, back to back, without
 * a collective (creation is local), then G cycles with one 8-byte allreduce
 * each (the lazy setup included). Rank 0 prints microseconds per cycle (the
 * slowest rank's) and each rank's resident-memory growth over the cycles
 * (the largest), which should stay flat. */
#include "perf_common.h"
#include "zap/coll.h"
#include "zap/ucp.h"
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

typedef struct variant {
    const char *name;
    zap_comm_params_t params;
} variant_t;

static const variant_t variants[] = {
    {"shm auto (default large area)", {.shm = ZAP_COMM_SWITCH_ON}},
    {"shm auto, shm_large_bytes 0", {.shm = ZAP_COMM_SWITCH_ON, .shm_large_bytes = ZAP_COMM_BYTES_ZERO}},
    {"shm auto, cma off", {.shm = ZAP_COMM_SWITCH_ON, .cma = ZAP_COMM_SWITCH_OFF}},
    {"shm off", {.shm = ZAP_COMM_SWITCH_OFF}},
};
#define NV (sizeof(variants) / sizeof(variants[0]))

/* Resident memory of this process, in KiB (0 where /proc is missing). */
static long rss_kib(void)
{
    long pages = 0, resident = 0;
    FILE *f = fopen("/proc/self/statm", "r");
    if (f == NULL)
        return 0;
    if (fscanf(f, "%ld %ld", &pages, &resident) != 2)
        resident = 0;
    fclose(f);
    return resident * (sysconf(_SC_PAGESIZE) / 1024);
}

static int time_creation(zap_transport_t *t, int rank, long reps)
{
    double *tc = calloc((size_t)(reps * NV * 2), sizeof(double));
    if (tc == NULL) {
        fprintf(stderr, "zap-perf comm: rank %d: no memory for %ld repetitions\n", rank, reps);
        return 3;
    }
    int shared[NV] = {0};
    size_t bytes[NV] = {0};
    int rc = 0;
    for (long r = 0; r < reps && rc == 0; r++) {
        for (size_t v = 0; v < NV && rc == 0; v++) {
            zap_comm_t *c = NULL, *half = NULL;
            MPI_Barrier(MPI_COMM_WORLD);
            double t0 = MPI_Wtime();
            zap_status_t st = zap_comm_create_ex(t, &variants[v].params, &c);
            double t1 = MPI_Wtime();
            if (st == ZAP_OK)
                st = zap_comm_split(c, rank % 2, 0, &half);
            double t2 = MPI_Wtime();
            if (st != ZAP_OK) {
                fprintf(stderr, "zap-perf comm: rank %d: %s\n", rank, zap_status_string(st));
                rc = 4;
            }
            zap_comm_attr_t attr = {.field_mask = ZAP_COMM_ATTR_SHARED_MEMORY};
            (void)zap_comm_query(c, &attr);
            shared[v] = attr.shared_memory;
            bytes[v] = attr.shared_memory_bytes;
            double mine[2] = {(t1 - t0) * 1e3, (t2 - t1) * 1e3}, slowest[2];
            MPI_Allreduce(mine, slowest, 2, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
            tc[(v * 2) * reps + r] = slowest[0];
            tc[(v * 2 + 1) * reps + r] = slowest[1];
            zap_comm_destroy(half);
            zap_comm_destroy(c);
        }
    }
    if (rc == 0 && rank == 0) {
        int p = 0;
        MPI_Comm_size(MPI_COMM_WORLD, &p);
        printf("# zap_comm_create_ex and zap_comm_split on %d ranks, %ld times each, ms (slowest rank)\n", p, reps);
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
    return rc;
}

/* G group communicators made and destroyed in turn, each with one 8-byte
 * allreduce when with_call. Returns 0, or 4 after an error. */
static int group_cycles(zap_transport_t *t, int rank, int p, long groups, int with_call, double *us_p, long *grow_p)
{
    int *all = malloc(sizeof(int) * (size_t)p);
    if (all == NULL)
        return 3;
    for (int r = 0; r < p; r++)
        all[r] = r;
    int rc = 0;
    MPI_Barrier(MPI_COMM_WORLD);
    long rss0 = rss_kib();
    double t0 = MPI_Wtime();
    for (long i = 0; i < groups && rc == 0; i++) {
        zap_comm_t *c = NULL;
        zap_status_t st = zap_comm_create_group(t, all, p, (uint32_t)(i % (ZAP_COMM_CONTEXT_ID_MAX + 1)), NULL, &c);
        if (st == ZAP_OK && with_call) {
            uint64_t x = 1, y = 0;
            st = zap_allreduce(c, &x, &y, 1, ZAP_DT_UINT64, ZAP_OP_SUM);
            if (st == ZAP_OK && y != (uint64_t)p)
                st = ZAP_ERR_CORRUPT;
        }
        if (st != ZAP_OK) {
            fprintf(stderr, "zap-perf comm: rank %d: group %ld: %s\n", rank, i, zap_status_string(st));
            rc = 4;
        }
        zap_comm_destroy(c);
    }
    double mine = (MPI_Wtime() - t0) * 1e6 / (double)groups;
    long grow = rss_kib() - rss0;
    MPI_Allreduce(&mine, us_p, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    MPI_Allreduce(&grow, grow_p, 1, MPI_LONG, MPI_MAX, MPI_COMM_WORLD);
    free(all);
    return rc;
}

int perf_comm_main(int argc, char **argv)
{
    long reps = 20, groups = 2000;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--reps") == 0 && i + 1 < argc && (reps = atol(argv[++i])) > 0)
            continue;
        if (strcmp(argv[i], "--groups") == 0 && i + 1 < argc && (groups = atol(argv[++i])) > 0)
            continue;
        fprintf(stderr, "usage: mpirun -np N zap-perf comm [--reps R] [--groups G]\n");
        return 2;
    }
    int rank = 0, p = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &p);
    zap_transport_t *t = NULL;
    if (zap_ucp_transport_create(MPI_COMM_WORLD, NULL, &t) != ZAP_OK) {
        fprintf(stderr, "zap-perf comm: rank %d: transport create failed\n", rank);
        return 3;
    }
    int rc = time_creation(t, rank, reps);
    double us[2] = {0, 0};
    long grow[2] = {0, 0};
    for (int with_call = 0; with_call < 2 && rc == 0; with_call++)
        rc = group_cycles(t, rank, p, groups, with_call, &us[with_call], &grow[with_call]);
    if (rc == 0 && rank == 0) {
        printf("# zap_comm_create_group + zap_comm_destroy on %d ranks, %ld cycles (slowest rank)\n", p, groups);
        printf("%-40s | %12s | %14s\n", "variant", "us per cycle", "RSS growth KiB");
        printf("%-40s | %12.2f | %14ld\n", "create + destroy", us[0], grow[0]);
        printf("%-40s | %12.2f | %14ld\n", "create + 8-byte allreduce + destroy", us[1], grow[1]);
    }
    zap_transport_close(t);
    return rc;
}
