/* zap-perf coll: allreduce, broadcast, allgather and scatter over zap's UCX
 * transport against Open MPI's MPI_Allreduce / MPI_Bcast / MPI_Allgather /
 * MPI_Scatter, in the same run and the same processes, on the same buffers
 * (and, where NCCL was found at configure time, NCCL on cudaMalloc buffers as
 * a further column, allreduce and broadcast).
 *
 * For each operation and size (powers of two of bytes, --min to --max):
 *   - nccl-tests-style streaming time: --iters operations back to back after
 *     --warmup untimed ones; time = the slowest rank's average per operation;
 *     algbw = bytes / time; busbw = algbw * 2(n-1)/n (allreduce), algbw
 *     (broadcast) or algbw * (n-1)/n (allgather, scatter), the formulas of
 *     nccl-tests' PERFORMANCE.md. For allgather and scatter, bytes is the
 *     whole result (every rank's block): count = bytes / 4 / n elements per
 *     rank, sizes with less than one element per rank skipped.
 *   - OSU-style isolated latency: --iters operations, each between barriers
 *     (untimed); avg (mean over ranks of each rank's mean), min, max.
 *   - wrong: the isolated pass checks every iteration's result on every rank
 *     (untimed; broadcast receivers are poisoned before each one) and the
 *     streaming pass checks the last result; wrong counts bad elements summed
 *     over ranks and iterations. Inputs are small integers in float32, so every
 *     summation order is exact.
 * Ratios are zap over MPI: busbw ratio (higher is better for zap) and latency
 * ratio (lower is better).
 *
 * --mem host: malloc'd buffers. managed: buffers from a CUDA managed pool
 * given to the transport (zap's intended use); device: cudaMalloc buffers
 * (needs a CUDA-aware UCX). For managed and device a further column gives the
 * host-staging copy bandwidth (cudaMemcpy device to pinned host, same bytes),
 * the yardstick for GPU-resident collectives; MPI runs on host and managed
 * buffers only unless --mpi-device. The alg column reads "gpu" when zap's
 * calls took the GPU-resident path (core/coll/gpu; counted, not assumed),
 * "gpu+host" when some of them fell back to the host algorithms. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "perf_common.h"
#include "zap/coll.h"
#include "zap/ucp.h"
#include "coll/gpu/gpu.h"
#include "coll/coll_test.h"
#ifdef ZAP_PERF_HAVE_CUDA
#include <cuda_runtime.h>
#endif
#ifdef ZAP_PERF_HAVE_NCCL
#include "perf_coll_nccl.h"
#endif

typedef enum { OP_ALLREDUCE, OP_BCAST, OP_ALLGATHER, OP_SCATTER } coll_op_t;

/* Each operation: its --op name, zap's name for zap_coll_test_force (the
 * forced algorithm of allgather and scatter, which have no setting), and
 * the bus bandwidth factor's numerator over n ranks (nccl-tests). */
static const struct {
    const char *name, *coll;
} op_info[] = {
    [OP_ALLREDUCE] = {"allreduce", "allreduce"},
    [OP_BCAST] = {"bcast", "bcast"},
    [OP_ALLGATHER] = {"allgather", "allgatherv"},
    [OP_SCATTER] = {"scatter", "scatterv"},
};

typedef struct coll_opts {
    size_t min, max;
    long iters, warmup; /* 0: by size */
    long reps;          /* streaming passes per size (median and minimum reported) */
    char ops[64];
    char mem[16];
    const char *alg;
    const char *csv;
    int root;
    int no_mpi, mpi_device, no_nccl;
} coll_opts_t;

typedef struct bufs {
    float *send, *recv; /* the operation's buffers (any kind) */
    float *host;        /* host staging for fills and checks */
    float *expect;      /* host */
    zap_buf_t sb, rb;   /* managed pool buffers */
    int kind;           /* 0 host, 1 managed, 2 device */
} bufs_t;

static int g_rank, g_size;

static void usage(void)
{
    fprintf(stderr,
            "usage: mpirun -np N zap-perf coll [--op allreduce,bcast,allgather,scatter] [--min SIZE] [--max SIZE]\n"
            "                                 [--iters N] [--warmup N] [--mem host|managed|device]\n"
            "                                 [--alg NAME] [--root R] [--csv FILE] [--no-mpi]\n"
            "                                 [--mpi-device] [--no-nccl] [--reps N]\n"
            "  sizes in bytes (K, M, G: powers of 1024), defaults --min 8 --max 64M; float32 sum\n"
            "  --iters default by size (1000 below 64K ... 10 from 16M); --alg forces the algorithm\n"
            "  of the ops run (auto: the selection table); allgather, scatter: SIZE is the whole result\n"
            "  --reps N: N streaming passes per size; time is their median, smin their minimum\n");
}

static int parse(int argc, char **argv, coll_opts_t *o)
{
    memset(o, 0, sizeof(*o));
    o->min = 8;
    o->max = 64u << 20;
    strcpy(o->ops, "allreduce,bcast");
    strcpy(o->mem, "host");
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0)
            return -1;
        if (strcmp(a, "--no-mpi") == 0) { o->no_mpi = 1; continue; }
        if (strcmp(a, "--mpi-device") == 0) { o->mpi_device = 1; continue; }
        if (strcmp(a, "--no-nccl") == 0) { o->no_nccl = 1; continue; }
        if (v == NULL) {
            fprintf(stderr, "zap-perf coll: %s needs a value\n", a);
            return -1;
        }
        i++;
        if (strcmp(a, "--min") == 0 && perf_parse_size(v, &o->min) == 0) continue;
        if (strcmp(a, "--max") == 0 && perf_parse_size(v, &o->max) == 0) continue;
        if (strcmp(a, "--iters") == 0 && (o->iters = atol(v)) > 0) continue;
        if (strcmp(a, "--warmup") == 0 && (o->warmup = atol(v)) >= 0) continue;
        if (strcmp(a, "--reps") == 0 && (o->reps = atol(v)) > 0) continue;
        if (strcmp(a, "--root") == 0) { o->root = atoi(v); continue; }
        if (strcmp(a, "--op") == 0 && strlen(v) < sizeof(o->ops)) { strcpy(o->ops, v); continue; }
        if (strcmp(a, "--mem") == 0 && strlen(v) < sizeof(o->mem)) { strcpy(o->mem, v); continue; }
        if (strcmp(a, "--alg") == 0) { o->alg = v; continue; }
        if (strcmp(a, "--csv") == 0) { o->csv = v; continue; }
        fprintf(stderr, "zap-perf coll: bad option or value: %s %s\n", a, v);
        return -1;
    }
    if (o->min < 4 || o->min > o->max) {
        fprintf(stderr, "zap-perf coll: need 4 <= --min <= --max (float32 elements)\n");
        return -1;
    }
    return 0;
}

static void die(const char *what, int st)
{
    fprintf(stderr, "zap-perf coll: rank %d: %s: %s\n", g_rank, what, zap_status_string((zap_status_t)st));
    MPI_Abort(MPI_COMM_WORLD, 1);
}

/* --- buffers of each kind --------------------------------------------------- */

static void to_buf(const bufs_t *b, void *dst, const void *src, size_t bytes)
{
#ifdef ZAP_PERF_HAVE_CUDA
    if (b->kind != 0) {
        if (cudaMemcpy(dst, src, bytes, cudaMemcpyDefault) != cudaSuccess)
            die("cudaMemcpy", ZAP_ERR_CUDA);
        return;
    }
#endif
    (void)b;
    memcpy(dst, src, bytes);
}

static void from_buf(const bufs_t *b, void *dst, const void *src, size_t bytes) { to_buf(b, dst, src, bytes); }

static int get_bufs(zap_transport_t *t, int kind, size_t max, bufs_t *b)
{
    memset(b, 0, sizeof(*b));
    b->kind = kind;
    b->host = malloc(max);
    b->expect = malloc(max);
    if (b->host == NULL || b->expect == NULL)
        return -1;
    if (kind == 0) {
        b->send = aligned_alloc(4096, (max + 4095) / 4096 * 4096);
        b->recv = aligned_alloc(4096, (max + 4095) / 4096 * 4096);
        return b->send && b->recv ? 0 : -1;
    }
    if (kind == 1) {
        if (zap_transport_alloc(t, max, &b->sb) != ZAP_OK || zap_transport_alloc(t, max, &b->rb) != ZAP_OK)
            return -1;
        b->send = b->sb.ptr;
        b->recv = b->rb.ptr;
        return 0;
    }
#ifdef ZAP_PERF_HAVE_CUDA
    if (cudaMalloc((void **)&b->send, max) != cudaSuccess || cudaMalloc((void **)&b->recv, max) != cudaSuccess)
        return -1;
    return 0;
#else
    return -1;
#endif
}

static void put_bufs(bufs_t *b)
{
    if (b->kind == 0) {
        free(b->send);
        free(b->recv);
    } else if (b->kind == 1) {
        zap_buf_free(&b->sb);
        zap_buf_free(&b->rb);
    }
#ifdef ZAP_PERF_HAVE_CUDA
    else {
        cudaFree(b->send);
        cudaFree(b->recv);
    }
#endif
    free(b->host);
    free(b->expect);
}

/* --- one measured implementation --------------------------------------------- */

typedef enum { IMPL_ZAP, IMPL_MPI } impl_t;

typedef struct ctx {
    impl_t impl;
    coll_op_t op;
    zap_comm_t *comm;
    bufs_t *b;
    size_t count;
    int root;
} ctx_t;

static void run_once(const ctx_t *c)
{
    int st = 0, n = (int)c->count;
    if (c->impl == IMPL_ZAP) {
        switch (c->op) {
        case OP_ALLREDUCE: st = zap_allreduce(c->comm, c->b->send, c->b->recv, c->count, ZAP_DT_FLOAT32, ZAP_OP_SUM); break;
        case OP_BCAST: st = zap_bcast(c->comm, c->b->recv, c->count, ZAP_DT_FLOAT32, c->root); break;
        case OP_ALLGATHER: st = zap_allgather(c->comm, c->b->send, c->count, c->b->recv, ZAP_DT_FLOAT32); break;
        case OP_SCATTER: st = zap_scatter(c->comm, c->b->send, c->b->recv, c->count, ZAP_DT_FLOAT32, c->root); break;
        }
        if (st != ZAP_OK)
            die(op_info[c->op].name, st);
    } else {
        switch (c->op) {
        case OP_ALLREDUCE: MPI_Allreduce(c->b->send, c->b->recv, n, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD); break;
        case OP_BCAST: MPI_Bcast(c->b->recv, n, MPI_FLOAT, c->root, MPI_COMM_WORLD); break;
        case OP_ALLGATHER: MPI_Allgather(c->b->send, n, MPI_FLOAT, c->b->recv, n, MPI_FLOAT, MPI_COMM_WORLD); break;
        case OP_SCATTER: MPI_Scatter(c->b->send, n, MPI_FLOAT, c->b->recv, n, MPI_FLOAT, c->root, MPI_COMM_WORLD); break;
        }
    }
}

/* The elements the result holds on this rank. */
static size_t result_count(const ctx_t *c) { return c->op == OP_ALLGATHER ? c->count * (size_t)g_size : c->count; }

/* Inputs: send[i] = (i % 13) + rank for allreduce (sum exact in float32 for any
 * order); the root's recv[i] = (i % 251) for broadcast; block q of the result
 * holds (i % 251) + q for allgather (rank q's send) and scatter (the root's
 * send, block by block). */
static void prepare(const ctx_t *c)
{
    size_t n = c->count, bytes = n * sizeof(float);
    bufs_t *b = c->b;
    switch (c->op) {
    case OP_ALLREDUCE:
        for (size_t i = 0; i < n; i++) {
            b->host[i] = (float)(i % 13) + (float)g_rank;
            b->expect[i] = (float)(i % 13) * (float)g_size + (float)(g_size * (g_size - 1) / 2);
        }
        to_buf(b, b->send, b->host, bytes);
        break;
    case OP_BCAST:
        for (size_t i = 0; i < n; i++)
            b->expect[i] = (float)(i % 251);
        break;
    case OP_ALLGATHER:
        for (size_t i = 0; i < n; i++)
            b->host[i] = (float)(i % 251) + (float)g_rank;
        to_buf(b, b->send, b->host, bytes);
        for (size_t q = 0; q < (size_t)g_size; q++)
            for (size_t i = 0; i < n; i++)
                b->expect[q * n + i] = (float)(i % 251) + (float)q;
        break;
    case OP_SCATTER:
        if (g_rank == c->root) {
            for (size_t q = 0; q < (size_t)g_size; q++)
                for (size_t i = 0; i < n; i++)
                    b->host[q * n + i] = (float)(i % 251) + (float)q;
            to_buf(b, b->send, b->host, bytes * (size_t)g_size);
        }
        for (size_t i = 0; i < n; i++)
            b->expect[i] = (float)(i % 251) + (float)g_rank;
        break;
    }
}

/* Before an isolated call: a broadcast's root writes the data; every other
 * result is poisoned, so a call that leaves it alone counts as wrong. */
static void reset_bcast(const ctx_t *c)
{
    size_t n = result_count(c);
    if (c->op == OP_ALLREDUCE)
        return;
    for (size_t i = 0; i < n; i++)
        c->b->host[i] = c->op == OP_BCAST && g_rank == c->root ? c->b->expect[i] : -1.0f;
    to_buf(c->b, c->b->recv, c->b->host, n * sizeof(float));
}

static long check(const ctx_t *c)
{
    size_t n = result_count(c);
    from_buf(c->b, c->b->host, c->b->recv, n * sizeof(float));
    long bad = 0;
    for (size_t i = 0; i < n; i++)
        bad += c->b->host[i] != c->b->expect[i];
    return bad;
}

typedef struct result {
    double time_us, algbw, busbw;
    double lat_avg, lat_min, lat_max;
    double lat_med; /* the slowest rank's median: robust on a noisy, shared machine */
    double stream_min; /* fastest streaming pass (of --reps), us */
    long wrong;
} result_t;

static void measure(const ctx_t *c, long iters, long warmup, long reps, result_t *r)
{
    prepare(c);
    reset_bcast(c);
    for (long i = 0; i < warmup; i++)
        run_once(c);
    /* Streaming: reps passes, each the slowest rank's average; the median
     * pass is the figure, the fastest one the least disturbed. */
    double passes[64];
    if (reps > 64)
        reps = 64;
    for (long k = 0; k < reps; k++) {
        MPI_Barrier(MPI_COMM_WORLD);
        double t0 = perf_now();
        for (long i = 0; i < iters; i++)
            run_once(c);
        double local = (perf_now() - t0) / (double)iters;
        MPI_Allreduce(&local, &passes[k], 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    }
    double fastest = passes[0];
    for (long k = 1; k < reps; k++)
        fastest = passes[k] < fastest ? passes[k] : fastest;
    double worst = perf_median(passes, (int)reps);
    r->stream_min = fastest * 1e6;
    long wrong = check(c);
    /* Isolated, each iteration validated. */
    double sum = 0, mn = 1e30, mx = 0;
    double *samples = malloc(sizeof(double) * (size_t)iters);
    if (samples == NULL)
        die("sample array", ZAP_ERR_NO_MEMORY);
    for (long i = 0; i < iters; i++) {
        reset_bcast(c);
        MPI_Barrier(MPI_COMM_WORLD);
        double s = perf_now();
        run_once(c);
        double d = perf_now() - s;
        samples[i] = d;
        sum += d;
        mn = d < mn ? d : mn;
        mx = d > mx ? d : mx;
        wrong += check(c);
    }
    double med = perf_median(samples, (int)iters), g_med = 0;
    free(samples);
    MPI_Allreduce(&med, &g_med, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    double avg = sum / (double)iters, g_avg = 0, g_min = 0, g_max = 0;
    long g_wrong = 0;
    MPI_Allreduce(&avg, &g_avg, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    MPI_Allreduce(&mn, &g_min, 1, MPI_DOUBLE, MPI_MIN, MPI_COMM_WORLD);
    MPI_Allreduce(&mx, &g_max, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    MPI_Allreduce(&wrong, &g_wrong, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
    double bytes = (double)(c->count * sizeof(float)) * (c->op == OP_ALLGATHER || c->op == OP_SCATTER ? g_size : 1);
    r->time_us = worst * 1e6;
    r->algbw = bytes / worst / 1e9;
    double factor = c->op == OP_ALLREDUCE ? 2.0 * (g_size - 1) / g_size : c->op == OP_BCAST ? 1.0 : (double)(g_size - 1) / g_size;
    r->busbw = r->algbw * factor;
    r->lat_avg = g_avg / g_size * 1e6;
    r->lat_min = g_min * 1e6;
    r->lat_max = g_max * 1e6;
    r->lat_med = g_med * 1e6;
    r->wrong = g_wrong;
}

#ifdef ZAP_PERF_HAVE_CUDA
/* Host-staging yardstick: device (or managed, resident on the device) to
 * pinned host copy of the same bytes, GB/s. */
static double staging_gbps(const bufs_t *b, size_t bytes)
{
    void *pinned = NULL;
    if (cudaMallocHost(&pinned, bytes) != cudaSuccess)
        return 0;
    int dev = 0;
    (void)cudaGetDevice(&dev);
    struct cudaMemLocation loc = {.type = cudaMemLocationTypeDevice, .id = dev}; /* CUDA 13 form */
    if (b->kind == 1)
        (void)cudaMemPrefetchAsync(b->send, bytes, loc, 0, 0);
    (void)cudaDeviceSynchronize();
    (void)cudaMemcpy(pinned, b->send, bytes, cudaMemcpyDefault);
    int reps = 5;
    double t0 = perf_now();
    for (int i = 0; i < reps; i++) {
        if (b->kind == 1) {
            (void)cudaMemPrefetchAsync(b->send, bytes, loc, 0, 0);
            (void)cudaDeviceSynchronize();
        }
        (void)cudaMemcpy(pinned, b->send, bytes, cudaMemcpyDefault);
    }
    double t = (perf_now() - t0) / reps;
    cudaFreeHost(pinned);
    return (double)bytes / t / 1e9;
}
#endif

static long default_iters(size_t bytes)
{
    if (bytes <= (64u << 10))
        return 1000;
    if (bytes <= (1u << 20))
        return 100;
    if (bytes < (16u << 20))
        return 20;
    return 10;
}

int perf_coll_main(int argc, char **argv)
{
    coll_opts_t o;
    MPI_Comm_rank(MPI_COMM_WORLD, &g_rank);
    MPI_Comm_size(MPI_COMM_WORLD, &g_size);
    if (parse(argc, argv, &o) != 0) {
        if (g_rank == 0)
            usage();
        return 2;
    }
    int kind = strcmp(o.mem, "host") == 0 ? 0 : strcmp(o.mem, "managed") == 0 ? 1 : strcmp(o.mem, "device") == 0 ? 2 : -1;
    if (kind < 0) {
        if (g_rank == 0)
            fprintf(stderr, "zap-perf coll: --mem must be host, managed or device\n");
        return 2;
    }
#ifdef ZAP_PERF_HAVE_CUDA
    if (kind != 0) {
        /* One GPU per rank of a node, by local rank. */
        MPI_Comm node;
        int lrank = 0, ndev = 0;
        MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node);
        MPI_Comm_rank(node, &lrank);
        MPI_Comm_free(&node);
        if (cudaGetDeviceCount(&ndev) != cudaSuccess || ndev == 0) {
            if (g_rank == 0)
                fprintf(stderr, "zap-perf coll: --mem %s needs a CUDA device\n", o.mem);
            return 2;
        }
        (void)cudaSetDevice(lrank % ndev);
    }
#else
    if (kind != 0) {
        if (g_rank == 0)
            fprintf(stderr, "zap-perf coll: --mem %s needs a CUDA build\n", o.mem);
        return 2;
    }
#endif
    if (o.root < 0 || o.root >= g_size)
        o.root = 0;
    zap_pool_t *pool = NULL;
    if (kind == 1) {
        zap_pool_params_t pp = {.backend = ZAP_POOL_BACKEND_MANAGED, .device = -1, .name = "perf-coll-managed"};
        zap_status_t st = zap_pool_create(&pp, &pool);
        if (st != ZAP_OK)
            die("managed pool", st);
    }
    zap_transport_t *t = NULL;
    zap_status_t st = zap_ucp_transport_create(MPI_COMM_WORLD, pool, &t);
    if (st != ZAP_OK)
        die("zap_ucp_transport_create", st);
    zap_comm_t *comm = NULL;
    if ((st = zap_comm_create(t, &comm)) != ZAP_OK)
        die("zap_comm_create", st);
    bufs_t b;
    if (get_bufs(t, kind, o.max, &b) != 0)
        die("buffer allocation", ZAP_ERR_NO_MEMORY);
    int use_mpi = !o.no_mpi && (kind != 2 || o.mpi_device);
#ifdef ZAP_PERF_HAVE_NCCL
    int use_nccl = !o.no_nccl && kind != 0 && perf_nccl_init(MPI_COMM_WORLD) == 0;
#endif
    perf_out_t out;
    if (perf_out_open(&out, o.csv,
                      "op,mem,ranks,bytes,count,iters,alg,zap_time_us,zap_algbw,zap_busbw,zap_wrong,mpi_time_us,"
                      "mpi_algbw,mpi_busbw,mpi_wrong,busbw_ratio,zap_lat_avg,zap_lat_min,zap_lat_max,mpi_lat_avg,"
                      "mpi_lat_min,mpi_lat_max,lat_ratio,stage_GBps,nccl_time_us,nccl_busbw,zap_lat_med,mpi_lat_med,med_ratio,"
                      "reps,zap_stream_min,mpi_stream_min",
                      g_rank) != 0)
        return 1;
    if (g_rank == 0) {
        printf("# zap-perf coll: %d ranks, mem %s, float32 sum, UCX_TLS %s; times in us, bandwidth GB/s\n", g_size,
               o.mem, getenv("UCX_TLS") ? getenv("UCX_TLS") : "(default)");
        printf("# busbw x = zap busbw / MPI busbw (higher: zap faster); lat x = zap avg / MPI avg (lower: zap faster);\n"
               "# med = slowest rank's median isolated latency, zap/MPI\n");
        printf("%-9s %10s %9s %-12s | %9s %8s %8s %5s | %9s %8s %8s %5s | %7s | %8s %8s %8s | %8s %8s %8s | %6s\n",
               "op", "bytes", "count", "alg", "zap_us", "algbw", "busbw", "wrong", "mpi_us", "algbw", "busbw", "wrong",
               "busbw x", "zlat", "zmin", "zmax", "mlat", "mmin", "mmax", "lat x");
    }
    char ops[64];
    strcpy(ops, o.ops);
    long total_wrong = 0;
    for (char *tok = strtok(ops, ","); tok != NULL; tok = strtok(NULL, ",")) {
        int op = -1;
        for (int k = 0; k < (int)(sizeof(op_info) / sizeof(op_info[0])); k++)
            if (strcmp(tok, op_info[k].name) == 0)
                op = k;
        if (op < 0) {
            if (g_rank == 0)
                fprintf(stderr, "zap-perf coll: unknown --op '%s' (allreduce, bcast, allgather, scatter)\n", tok);
            continue;
        }
        /* A forced algorithm is a setting of the communicator: one made for
         * this operation. */
        zap_comm_t *forced = NULL;
        if (o.alg != NULL) {
            zap_comm_params_t params = {0};
            if (op == OP_ALLREDUCE)
                params.allreduce_alg = o.alg;
            else if (op == OP_BCAST)
                params.bcast_alg = o.alg;
            if ((st = zap_comm_create_ex(t, &params, &forced)) != ZAP_OK)
                die("zap_comm_create_ex", st);
            if (op != OP_ALLREDUCE && op != OP_BCAST && (st = zap_coll_test_force(forced, op_info[op].coll, o.alg)) != ZAP_OK)
                die("--alg", st);
        }
        zap_comm_t *opcomm = forced != NULL ? forced : comm;
        for (size_t bytes = o.min; bytes <= o.max; bytes *= 2) {
            size_t count = bytes / sizeof(float) / (op == OP_ALLGATHER || op == OP_SCATTER ? (size_t)g_size : 1);
            if (count == 0)
                continue;
            size_t shown = count * sizeof(float) * (op == OP_ALLGATHER || op == OP_SCATTER ? (size_t)g_size : 1);
            long iters = o.iters ? o.iters : default_iters(bytes);
            long warmup = o.warmup ? o.warmup : (iters / 10 > 2 ? iters / 10 : 2);
            long reps = o.reps ? o.reps : 1;
            ctx_t c = {IMPL_ZAP, (coll_op_t)op, opcomm, &b, count, o.root};
            result_t z = {0}, m = {0};
            uint64_t gpu0, fb0, gpu1, fb1; /* GPU-resident path (core/coll/gpu): did zap's calls take it? */
            zap_stage_counts(&gpu0, &fb0);
            measure(&c, iters, warmup, reps, &z);
            zap_stage_counts(&gpu1, &fb1);
            if (use_mpi) {
                c.impl = IMPL_MPI;
                measure(&c, iters, warmup, reps, &m);
            }
            zap_comm_attr_t attr = {.field_mask = ZAP_COMM_ATTR_ALGORITHMS, .bytes = bytes};
            (void)zap_comm_query(opcomm, &attr);
            const char *alg = op == OP_ALLREDUCE ? attr.allreduce_algorithm
                              : op == OP_BCAST  ? attr.bcast_algorithm
                                                : (o.alg != NULL ? o.alg : "auto");
            if (gpu1 > gpu0)
                alg = fb1 > fb0 ? "gpu+host" : "gpu"; /* peer copies over CUDA IPC; "+host": some fell back */
            double stage = 0, nccl_us = 0, nccl_busbw = 0;
#ifdef ZAP_PERF_HAVE_CUDA
            if (kind != 0)
                stage = staging_gbps(&b, bytes);
#endif
#ifdef ZAP_PERF_HAVE_NCCL
            if (use_nccl && (op == OP_ALLREDUCE || op == OP_BCAST) &&
                perf_nccl_run(op == OP_ALLREDUCE, bytes, iters, warmup, o.root, &nccl_us) == 0)
                nccl_busbw = (double)bytes / (nccl_us * 1e-6) / 1e9 * (op == OP_ALLREDUCE ? 2.0 * (g_size - 1) / g_size : 1.0);
#endif
            total_wrong += z.wrong + m.wrong;
            double bx = use_mpi && m.busbw > 0 ? z.busbw / m.busbw : 0, lx = use_mpi && m.lat_avg > 0 ? z.lat_avg / m.lat_avg : 0;
            if (g_rank == 0) {
                printf("%-9s %10zu %9zu %-12.12s | %9.2f %8.3f %8.3f %5ld | %9.2f %8.3f %8.3f %5ld | %7.2f | %8.2f %8.2f "
                       "%8.2f | %8.2f %8.2f %8.2f | %6.2f",
                       tok, shown, count, alg, z.time_us, z.algbw, z.busbw, z.wrong, m.time_us, m.algbw, m.busbw,
                       m.wrong, bx, z.lat_avg, z.lat_min, z.lat_max, m.lat_avg, m.lat_min, m.lat_max, lx);
                printf(" | med %.2f/%.2f", z.lat_med, m.lat_med);
                if (reps > 1)
                    printf(" | smin %.2f/%.2f", z.stream_min, m.stream_min);
                if (kind != 0)
                    printf(" | stage %.2f GB/s", stage);
                if (nccl_us > 0)
                    printf(" | nccl %.2f us %.3f GB/s", nccl_us, nccl_busbw);
                printf("\n");
                fflush(stdout);
                if (out.csv)
                    fprintf(out.csv,
                            "%s,%s,%d,%zu,%zu,%ld,%s,%.3f,%.4f,%.4f,%ld,%.3f,%.4f,%.4f,%ld,%.4f,%.3f,%.3f,%.3f,%.3f,%.3f,"
                            "%.3f,%.4f,%.4f,%.3f,%.4f,%.3f,%.3f,%.4f,%ld,%.3f,%.3f\n",
                            tok, o.mem, g_size, shown, count, iters, alg, z.time_us, z.algbw, z.busbw, z.wrong,
                            m.time_us, m.algbw, m.busbw, m.wrong, bx, z.lat_avg, z.lat_min, z.lat_max, m.lat_avg,
                            m.lat_min, m.lat_max, lx, stage, nccl_us, nccl_busbw, z.lat_med, m.lat_med,
                            use_mpi && m.lat_med > 0 ? z.lat_med / m.lat_med : 0, reps, z.stream_min, m.stream_min);
            }
        }
        zap_comm_destroy(forced);
    }
    perf_out_close(&out);
#ifdef ZAP_PERF_HAVE_NCCL
    if (use_nccl)
        perf_nccl_fini();
#endif
    put_bufs(&b);
    zap_comm_destroy(comm);
    zap_transport_close(t);
    if (pool != NULL)
        zap_pool_destroy(pool);
    if (total_wrong > 0 && g_rank == 0)
        fprintf(stderr, "zap-perf coll: %ld wrong elements\n", total_wrong);
    return total_wrong > 0 ? 1 : 0;
}
