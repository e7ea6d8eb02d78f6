/* zap-perf coll: zap's collectives over its UCX transport against Open MPI's
 * own (MPI_Allreduce, MPI_Bcast, MPI_Reduce, MPI_Reduce_scatter(_block),
 * MPI_Gather(v), MPI_Alltoall(v), MPI_Scan, MPI_Exscan), in the same run and
 * the same processes, on the same buffers (and, where NCCL was found at
 * configure time, NCCL on cudaMalloc buffers as a further column for
 * allreduce and broadcast).
 *
 * Sizes are the whole vector's bytes: the reduced vector (allreduce, reduce,
 * scan, exscan, and reduce_scatter's input, of which each rank gets 1/p), the
 * broadcast message, the root's gathered result (each rank sends 1/p) and
 * each rank's alltoall send buffer (blocks of 1/p). The v-forms run with equal
 * counts and the blocks in reverse rank order (so displacements matter).
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
 *     summation order is exact. Exscan's rank 0 (undefined in MPI) and
 *     reduce's and gather's non-roots hold nothing to check.
 * Ratios are zap over MPI: busbw ratio (higher is better for zap) and latency
 * ratio (lower is better).
 *
 * --mem host: malloc'd buffers. managed: buffers from a CUDA managed pool
 * given to the transport (zap's intended use); device: cudaMalloc buffers
 * (zap's GPU path, or its host algorithms on host copies). For managed and
 * device a further column gives the host-staging copy bandwidth (cudaMemcpy
 * device to pinned host, same bytes); MPI runs on host and managed buffers
 * only unless --mpi-device. The alg column reads "gpu" when zap's calls took
 * the GPU-resident path (core/coll/gpu; counted, not assumed), "gpu+host"
 * when some of them fell back to the host algorithms.
 *
 * NCCL (where libnccl.so.2 loads; NVLink multicast forced off): the same
 * operation on cudaMalloc buffers, its streaming time and busbw, its
 * isolated latency (launch + stream synchronise between barriers), and the
 * ratios zap busbw / NCCL busbw and zap latency / NCCL latency ("x nccl").
 *
 * Inter-host bytes (zap only; zap_transport_traffic): what zap's transport
 * sent to ranks on other hosts during the streaming passes, per call: xB/rank
 * is the mean over ranks, xB/host the largest sum over the ranks of one host
 * (hosts by zap_transport_host); the CSV adds the sum over all ranks. The
 * lower bounds to hold them against (scripts/cluster-bench.sh prints them):
 * allreduce, each host sends 2(H-1)/H of the vector over H hosts; broadcast,
 * (H-1) vectors cross host boundaries in all. Zero on one host. */
#include <mpi.h>
#include <math.h>
#include <stdbool.h>
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

typedef enum {
    OP_ALLREDUCE,
    OP_BCAST,
    OP_REDUCE,
    OP_REDUCE_SCATTER,
    OP_REDUCE_SCATTER_BLOCK,
    OP_GATHER,
    OP_GATHERV,
    OP_ALLTOALL,
    OP_ALLTOALLV,
    OP_SCAN,
    OP_EXSCAN,
    OP_ALLGATHER,
    OP_SCATTER,
    OP_N
} coll_op_t;

static const char *const op_names[OP_N] = {"allreduce", "bcast",   "reduce",    "reduce_scatter", "reduce_scatter_block",
                                           "gather",    "gatherv", "alltoall",  "alltoallv",      "scan",
                                           "exscan", "allgather", "scatter"};

/* nccl-tests' bus-bandwidth factors (PERFORMANCE.md): what each rank's link
 * must carry relative to the size. */
static double bus_factor(coll_op_t op, int n)
{
    switch (op) {
    case OP_ALLREDUCE: return 2.0 * (n - 1) / n;
    case OP_REDUCE_SCATTER:
    case OP_REDUCE_SCATTER_BLOCK:
    case OP_GATHER:
    case OP_GATHERV:
    case OP_ALLTOALL:
    case OP_ALLTOALLV:
    case OP_ALLGATHER:
    case OP_SCATTER: return (double)(n - 1) / n;
    default: return 1.0;
    }
}

typedef struct coll_opts {
    size_t min, max;
    long iters, warmup; /* 0: by size */
    long max_iters;     /* caps the iterations chosen by size (0: no cap) */
    long reps;          /* streaming passes per size (median and minimum reported) */
    char ops[256];
    char mem[16];
    const char *alg;
    const char *csv;
    int root;
    int no_mpi, mpi_device, no_nccl, no_zap;
    size_t sizes[64]; /* --sizes: this list instead of the powers of two */
    int nsizes;
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
            "usage: mpirun -np N zap-perf coll [--op allreduce,bcast,...] [--min SIZE] [--max SIZE]\n"
            "                                 [--iters N] [--warmup N] [--mem host|managed|device]\n"
            "                                 [--alg NAME] [--root R] [--csv FILE] [--no-mpi]\n"
            "                                 [--mpi-device] [--no-nccl] [--reps N] [--sizes LIST] [--no-zap]\n"
            "                                 [--max-iters N]\n"
            "  sizes in bytes (K, M, G: powers of 1024), defaults --min 8 --max 64M; float32 sum\n"
            "  ops: allreduce bcast reduce reduce_scatter reduce_scatter_block gather gatherv allgather scatter\n"
            "  alltoall alltoallv scan exscan (sizes: the whole vector, the gathered or scattered whole, or\n"
            "  each rank's alltoall send buffer)\n"
            "  --iters default by size (1000 below 64K ... 10 from 16M); --alg forces the op's algorithm\n"
            "  (its ZAP_<COLL>_ALG; auto: the selection table)\n"
            "  --reps N: N streaming passes per size; time is their median, smin their minimum\n"
            "  --sizes 8,4K,1M: these sizes instead of the powers of two from --min to --max\n"
            "  --max-iters N: at most N iterations where they are chosen by size\n"
            "  --no-zap: MPI only (e.g. another Open MPI coll component in a run of its own)\n");
}

/* A comma-separated list of sizes (perf_parse_size), each at least 4. */
static int parse_sizes(const char *v, coll_opts_t *o)
{
    char buf[512];
    if (strlen(v) >= sizeof(buf))
        return -1;
    strcpy(buf, v);
    o->nsizes = 0;
    for (char *save = NULL, *tok = strtok_r(buf, ",", &save); tok != NULL; tok = strtok_r(NULL, ",", &save)) {
        size_t sz = 0;
        if (o->nsizes == (int)(sizeof(o->sizes) / sizeof(o->sizes[0])) || perf_parse_size(tok, &sz) != 0 || sz < 4)
            return -1;
        o->sizes[o->nsizes++] = sz;
    }
    return o->nsizes > 0 ? 0 : -1;
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
        if (strcmp(a, "--no-zap") == 0) { o->no_zap = 1; continue; }
        if (v == NULL) {
            fprintf(stderr, "zap-perf coll: %s needs a value\n", a);
            return -1;
        }
        i++;
        if (strcmp(a, "--min") == 0 && perf_parse_size(v, &o->min) == 0) continue;
        if (strcmp(a, "--max") == 0 && perf_parse_size(v, &o->max) == 0) continue;
        if (strcmp(a, "--iters") == 0 && (o->iters = atol(v)) > 0) continue;
        if (strcmp(a, "--warmup") == 0 && (o->warmup = atol(v)) >= 0) continue;
        if (strcmp(a, "--max-iters") == 0 && (o->max_iters = atol(v)) > 0) continue;
        if (strcmp(a, "--reps") == 0 && (o->reps = atol(v)) > 0) continue;
        if (strcmp(a, "--root") == 0) { o->root = atoi(v); continue; }
        if (strcmp(a, "--op") == 0 && strlen(v) < sizeof(o->ops)) { strcpy(o->ops, v); continue; }
        if (strcmp(a, "--mem") == 0 && strlen(v) < sizeof(o->mem)) { strcpy(o->mem, v); continue; }
        if (strcmp(a, "--alg") == 0) { o->alg = v; continue; }
        if (strcmp(a, "--csv") == 0) { o->csv = v; continue; }
        if (strcmp(a, "--sizes") == 0 && parse_sizes(v, o) == 0) continue;
        fprintf(stderr, "zap-perf coll: bad option or value: %s %s\n", a, v);
        return -1;
    }
    if (o->no_zap && o->no_mpi) {
        fprintf(stderr, "zap-perf coll: --no-zap and --no-mpi leave nothing to measure\n");
        return -1;
    }
    if (o->nsizes > 0) {
        o->min = o->sizes[0];
        for (int k = 0; k < o->nsizes; k++) {
            o->min = o->sizes[k] < o->min ? o->sizes[k] : o->min;
            o->max = k == 0 || o->sizes[k] > o->max ? o->sizes[k] : o->max;
        }
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
    size_t count; /* elements of the whole vector (see the top) */
    size_t part;  /* count / ranks: one rank's part (reduce_scatter, gather, alltoall) */
    int root;
    size_t *zcounts; /* the v-forms: part each */
    ptrdiff_t *zdispls; /* blocks in reverse rank order */
    int *icounts, *idispls;
} ctx_t;

static void zap_die(const ctx_t *c, int st)
{
    char what[64];
    snprintf(what, sizeof(what), "zap_%s", op_names[c->op]);
    die(what, st);
}

static void run_once(const ctx_t *c)
{
    bufs_t *b = c->b;
    int n = (int)c->count, k = (int)c->part;
    if (c->impl == IMPL_ZAP) {
        zap_status_t st = ZAP_OK;
        switch (c->op) {
        case OP_ALLREDUCE: st = zap_allreduce(c->comm, b->send, b->recv, c->count, ZAP_DT_FLOAT32, ZAP_OP_SUM); break;
        case OP_BCAST: st = zap_bcast(c->comm, b->recv, c->count, ZAP_DT_FLOAT32, c->root); break;
        case OP_REDUCE: st = zap_reduce(c->comm, b->send, b->recv, c->count, ZAP_DT_FLOAT32, ZAP_OP_SUM, c->root); break;
        case OP_REDUCE_SCATTER:
            st = zap_reduce_scatter(c->comm, b->send, b->recv, c->zcounts, ZAP_DT_FLOAT32, ZAP_OP_SUM);
            break;
        case OP_REDUCE_SCATTER_BLOCK:
            st = zap_reduce_scatter_block(c->comm, b->send, b->recv, c->part, ZAP_DT_FLOAT32, ZAP_OP_SUM);
            break;
        case OP_GATHER: st = zap_gather(c->comm, b->send, c->part, b->recv, ZAP_DT_FLOAT32, c->root); break;
        case OP_GATHERV:
            st = zap_gatherv(c->comm, b->send, c->part, b->recv, c->zcounts, c->zdispls, ZAP_DT_FLOAT32, c->root);
            break;
        case OP_ALLTOALL: st = zap_alltoall(c->comm, b->send, c->part, b->recv, ZAP_DT_FLOAT32); break;
        case OP_ALLTOALLV:
            st = zap_alltoallv(c->comm, b->send, c->zcounts, c->zdispls, b->recv, c->zcounts, c->zdispls,
                               ZAP_DT_FLOAT32);
            break;
        case OP_SCAN: st = zap_scan(c->comm, b->send, b->recv, c->count, ZAP_DT_FLOAT32, ZAP_OP_SUM); break;
        case OP_ALLGATHER: st = zap_allgather(c->comm, b->send, c->part, b->recv, ZAP_DT_FLOAT32); break;
        case OP_SCATTER: st = zap_scatter(c->comm, b->send, b->recv, c->part, ZAP_DT_FLOAT32, c->root); break;
        default: st = zap_exscan(c->comm, b->send, b->recv, c->count, ZAP_DT_FLOAT32, ZAP_OP_SUM); break;
        }
        if (st != ZAP_OK)
            zap_die(c, st);
        return;
    }
    MPI_Comm w = MPI_COMM_WORLD;
    switch (c->op) {
    case OP_ALLREDUCE: MPI_Allreduce(b->send, b->recv, n, MPI_FLOAT, MPI_SUM, w); break;
    case OP_BCAST: MPI_Bcast(b->recv, n, MPI_FLOAT, c->root, w); break;
    case OP_REDUCE: MPI_Reduce(b->send, b->recv, n, MPI_FLOAT, MPI_SUM, c->root, w); break;
    case OP_REDUCE_SCATTER: MPI_Reduce_scatter(b->send, b->recv, c->icounts, MPI_FLOAT, MPI_SUM, w); break;
    case OP_REDUCE_SCATTER_BLOCK: MPI_Reduce_scatter_block(b->send, b->recv, k, MPI_FLOAT, MPI_SUM, w); break;
    case OP_GATHER: MPI_Gather(b->send, k, MPI_FLOAT, b->recv, k, MPI_FLOAT, c->root, w); break;
    case OP_GATHERV:
        MPI_Gatherv(b->send, k, MPI_FLOAT, b->recv, c->icounts, c->idispls, MPI_FLOAT, c->root, w);
        break;
    case OP_ALLTOALL: MPI_Alltoall(b->send, k, MPI_FLOAT, b->recv, k, MPI_FLOAT, w); break;
    case OP_ALLTOALLV:
        MPI_Alltoallv(b->send, c->icounts, c->idispls, MPI_FLOAT, b->recv, c->icounts, c->idispls, MPI_FLOAT, w);
        break;
    case OP_SCAN: MPI_Scan(b->send, b->recv, n, MPI_FLOAT, MPI_SUM, w); break;
    case OP_ALLGATHER: MPI_Allgather(b->send, k, MPI_FLOAT, b->recv, k, MPI_FLOAT, w); break;
    case OP_SCATTER: MPI_Scatter(b->send, k, MPI_FLOAT, b->recv, k, MPI_FLOAT, c->root, w); break;
    default: MPI_Exscan(b->send, b->recv, n, MPI_FLOAT, MPI_SUM, w); break;
    }
}

/* The sum over ranks lo .. hi of send[i] = (i % 13) + rank. */
static float sum_of(size_t i, int lo, int hi)
{
    int m = hi - lo + 1;
    return (float)(i % 13) * (float)m + (float)((lo + hi) * m / 2);
}

/* Where block q of a v-form lies (reverse rank order). */
static size_t vblock(const ctx_t *c, int q) { return (size_t)(g_size - 1 - q) * c->part; }

/* Inputs and what this rank's recv must hold afterwards (expect[i] NaN:
 * nothing to check there). Reductions: send[i] = (i % 13) + rank, exact in
 * float32 in any order; broadcast: the root's recv[i] = i % 251; gather:
 * rank r's element j = r * 1000 + j % 251; alltoall: rank r's block for q,
 * element j = r * 1000 + q * 10 + j % 7 (all exact in float32 for the ranks
 * run here). */
static void prepare(const ctx_t *c)
{
    size_t n = c->count, k = c->part;
    bufs_t *b = c->b;
    int r = g_rank, p = g_size;
    float none = NAN;
    for (size_t i = 0; i < n; i++)
        b->expect[i] = none;
    switch (c->op) {
    case OP_BCAST:
        for (size_t i = 0; i < n; i++)
            b->expect[i] = (float)(i % 251);
        return;
    case OP_GATHER:
    case OP_GATHERV:
        for (size_t j = 0; j < k; j++)
            b->host[j] = (float)(r * 1000 + (int)(j % 251));
        for (int q = 0; r == c->root && q < p; q++)
            for (size_t j = 0; j < k; j++)
                b->expect[(c->op == OP_GATHER ? (size_t)q * k : vblock(c, q)) + j] = (float)(q * 1000 + (int)(j % 251));
        break;
    case OP_ALLGATHER:
        for (size_t j = 0; j < k; j++)
            b->host[j] = (float)(r * 1000 + (int)(j % 251));
        for (int q = 0; q < p; q++)
            for (size_t j = 0; j < k; j++)
                b->expect[(size_t)q * k + j] = (float)(q * 1000 + (int)(j % 251));
        break;
    case OP_SCATTER:
        for (int q = 0; r == c->root && q < p; q++)
            for (size_t j = 0; j < k; j++)
                b->host[(size_t)q * k + j] = (float)(q * 1000 + (int)(j % 251));
        for (size_t j = 0; j < k; j++)
            b->expect[j] = (float)(r * 1000 + (int)(j % 251));
        break;
    case OP_ALLTOALL:
    case OP_ALLTOALLV:
        for (int q = 0; q < p; q++)
            for (size_t j = 0; j < k; j++) {
                size_t at = (c->op == OP_ALLTOALL ? (size_t)q * k : vblock(c, q)) + j;
                b->host[at] = (float)(r * 1000 + q * 10 + (int)(j % 7));
                b->expect[at] = (float)(q * 1000 + r * 10 + (int)(j % 7));
            }
        break;
    default:
        for (size_t i = 0; i < n; i++)
            b->host[i] = (float)(i % 13) + (float)r;
        if (c->op == OP_ALLREDUCE || (c->op == OP_REDUCE && r == c->root))
            for (size_t i = 0; i < n; i++)
                b->expect[i] = sum_of(i, 0, p - 1);
        else if (c->op == OP_SCAN || (c->op == OP_EXSCAN && r > 0))
            for (size_t i = 0; i < n; i++)
                b->expect[i] = sum_of(i, 0, c->op == OP_SCAN ? r : r - 1);
        else if (c->op == OP_REDUCE_SCATTER || c->op == OP_REDUCE_SCATTER_BLOCK)
            for (size_t j = 0; j < k; j++)
                b->expect[j] = sum_of((size_t)r * k + j, 0, p - 1);
        break;
    }
    to_buf(b, b->send, b->host, n * sizeof(float));
}

/* Before an isolated iteration: the broadcast root writes the data, every
 * other receive buffer is poisoned, so an iteration that wrote nothing shows. */
static void reset_recv(const ctx_t *c)
{
    size_t n = c->count;
    for (size_t i = 0; i < n; i++)
        c->b->host[i] = c->op == OP_BCAST && g_rank == c->root ? c->b->expect[i] : -1.0f;
    to_buf(c->b, c->b->recv, c->b->host, n * sizeof(float));
}

static long check(const ctx_t *c)
{
    size_t n = c->count;
    from_buf(c->b, c->b->host, c->b->recv, n * sizeof(float));
    long bad = 0;
    for (size_t i = 0; i < n; i++)
        bad += c->b->expect[i] == c->b->expect[i] && c->b->host[i] != c->b->expect[i];
    return bad;
}

typedef struct result {
    double time_us, algbw, busbw;
    double lat_avg, lat_min, lat_max;
    double lat_med; /* the slowest rank's median: robust on a noisy, shared machine */
    double stream_min; /* fastest streaming pass (of --reps), us */
    long wrong;
    double xhost_rank, xhost_host_max, xhost_total; /* inter-host bytes per call (zap) */
} result_t;

/* Bytes this rank's transport has sent to other hosts so far. */
static uint64_t xhost_bytes(const ctx_t *c)
{
    zap_transport_traffic_t tr;
    if (c->impl != IMPL_ZAP || zap_transport_traffic(zap_comm_transport(c->comm), &tr) != ZAP_OK)
        return 0;
    return tr.bytes[ZAP_PEER_OTHER_HOST];
}

/* This rank's inter-host bytes per call, summed per host over every rank. */
static void xhost_gather(const ctx_t *c, double mine, result_t *r)
{
    uint64_t host = 0;
    (void)zap_transport_host(zap_comm_transport(c->comm), g_rank, &host);
    double *v = malloc(sizeof(double) * (size_t)g_size);
    uint64_t *h = malloc(sizeof(uint64_t) * (size_t)g_size);
    if (v == NULL || h == NULL)
        die("inter-host byte table", ZAP_ERR_NO_MEMORY);
    MPI_Allgather(&mine, 1, MPI_DOUBLE, v, 1, MPI_DOUBLE, MPI_COMM_WORLD);
    MPI_Allgather(&host, 1, MPI_UINT64_T, h, 1, MPI_UINT64_T, MPI_COMM_WORLD);
    double total = 0, best = 0;
    for (int i = 0; i < g_size; i++) {
        total += v[i];
        double sum = 0;
        for (int j = 0; j < g_size; j++)
            sum += h[j] == h[i] ? v[j] : 0;
        best = sum > best ? sum : best;
    }
    r->xhost_rank = total / g_size;
    r->xhost_host_max = best;
    r->xhost_total = total;
    free(v);
    free(h);
}

/* zap moves messages only inside its own calls, and over TCP a call that
 * returned may still hold the end of its last message
 * (ZAP_CAP_SENDS_NEED_PROGRESS, docs/transport.md "Progress"): an Open MPI
 * barrier or reduction, which makes no progress in zap, would then wait for a
 * peer that waits for that end. Whether c's runs must drive zap while they
 * wait in MPI: */
static bool drives_zap(const ctx_t *c)
{
    zap_transport_caps_t caps;
    return c->impl == IMPL_ZAP && zap_transport_caps(zap_comm_transport(c->comm), &caps) == ZAP_OK &&
           (caps.flags & ZAP_CAP_SENDS_NEED_PROGRESS);
}

/* The barrier between timed calls: a plain MPI_Barrier, or (drive, from
 * drives_zap) one waited for while driving zap. */
static void barrier(const ctx_t *c, bool drive)
{
    if (!drive) {
        MPI_Barrier(MPI_COMM_WORLD);
        return;
    }
    MPI_Request req;
    MPI_Ibarrier(MPI_COMM_WORLD, &req);
    for (int done = 0; !done;) {
        MPI_Test(&req, &done, MPI_STATUS_IGNORE);
        if (!done)
            (void)zap_comm_progress(c->comm);
    }
}

static void measure(const ctx_t *c, long iters, long warmup, long reps, result_t *r)
{
    bool drive = drives_zap(c);
    prepare(c);
    reset_recv(c);
    for (long i = 0; i < warmup; i++)
        run_once(c);
    /* Streaming: reps passes, each the slowest rank's average; the median
     * pass is the figure, the fastest one the least disturbed. */
    double passes[64];
    if (reps > 64)
        reps = 64;
    uint64_t x0 = xhost_bytes(c);
    for (long k = 0; k < reps; k++) {
        barrier(c, drive);
        double t0 = perf_now();
        for (long i = 0; i < iters; i++)
            run_once(c);
        double local = (perf_now() - t0) / (double)iters;
        if (drive) /* the timings' reduction waits in MPI too */
            barrier(c, drive);
        MPI_Allreduce(&local, &passes[k], 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    }
    double fastest = passes[0];
    for (long k = 1; k < reps; k++)
        fastest = passes[k] < fastest ? passes[k] : fastest;
    double worst = perf_median(passes, (int)reps);
    r->stream_min = fastest * 1e6;
    if (c->impl == IMPL_ZAP)
        xhost_gather(c, (double)(xhost_bytes(c) - x0) / (double)(reps * iters), r);
    long wrong = check(c);
    /* Isolated, each iteration validated. */
    double sum = 0, mn = 1e30, mx = 0;
    double *samples = malloc(sizeof(double) * (size_t)iters);
    if (samples == NULL)
        die("sample array", ZAP_ERR_NO_MEMORY);
    for (long i = 0; i < iters; i++) {
        reset_recv(c);
        barrier(c, drive);
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
    if (drive)
        barrier(c, drive);
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
    r->busbw = r->algbw * bus_factor(c->op, g_size);
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
                      "reps,zap_stream_min,mpi_stream_min,nccl_lat_us,busbw_x_nccl,lat_x_nccl,zap_xhost_rank,"
                      "zap_xhost_host_max,zap_xhost_total",
                      g_rank) != 0)
        return 1;
    if (g_rank == 0) {
        printf("# zap-perf coll: %d ranks, mem %s, float32 (reductions: sum), UCX_TLS %s; times in us, GB/s\n", g_size,
               o.mem, getenv("UCX_TLS") ? getenv("UCX_TLS") : "(default)");
        printf("# busbw x = zap busbw / MPI busbw (higher: zap faster); lat x = zap avg / MPI avg (lower: zap faster);\n"
               "# med = slowest rank's median isolated latency, zap/MPI; xB = zap's bytes to other hosts per call,\n"
               "# mean per rank / largest per host\n");
        printf("%-20s %10s %9s %-12s | %9s %8s %8s %5s | %9s %8s %8s %5s | %7s | %8s %8s %8s | %8s %8s %8s | %6s\n",
               "op", "bytes", "count", "alg", "zap_us", "algbw", "busbw", "wrong", "mpi_us", "algbw", "busbw", "wrong",
               "busbw x", "zlat", "zmin", "zmax", "mlat", "mmin", "mmax", "lat x");
    }
    char ops[sizeof(o.ops)];
    strcpy(ops, o.ops);
    size_t *vcounts = malloc((size_t)g_size * sizeof(size_t));
    ptrdiff_t *vdispls = malloc((size_t)g_size * sizeof(ptrdiff_t));
    int *ivcounts = malloc((size_t)g_size * sizeof(int)), *ivdispls = malloc((size_t)g_size * sizeof(int));
    if (vcounts == NULL || vdispls == NULL || ivcounts == NULL || ivdispls == NULL)
        die("counts arrays", ZAP_ERR_NO_MEMORY);
    long total_wrong = 0;
    for (char *tok = strtok(ops, ","); tok != NULL; tok = strtok(NULL, ",")) {
        coll_op_t op = OP_N;
        for (int k = 0; k < OP_N; k++)
            if (strcmp(tok, op_names[k]) == 0)
                op = (coll_op_t)k;
        if (op == OP_N) {
            if (g_rank == 0)
                fprintf(stderr, "zap-perf coll: unknown --op '%s' (see --help)\n", tok);
            continue;
        }
        /* A forced algorithm is a setting of the communicator: one made for
         * this operation. */
        zap_comm_t *forced = NULL;
        if (o.alg != NULL) {
            zap_comm_params_t params = {0};
            switch (op) {
            case OP_ALLREDUCE: params.allreduce_alg = o.alg; break;
            case OP_BCAST: params.bcast_alg = o.alg; break;
            case OP_REDUCE: params.reduce_alg = o.alg; break;
            case OP_REDUCE_SCATTER:
            case OP_REDUCE_SCATTER_BLOCK: params.reduce_scatter_alg = o.alg; break;
            case OP_GATHER:
            case OP_GATHERV: params.gather_alg = o.alg; break;
            case OP_ALLTOALL:
            case OP_ALLTOALLV: params.alltoall_alg = o.alg; break;
            case OP_SCAN: params.scan_alg = o.alg; break;
            case OP_EXSCAN: params.exscan_alg = o.alg; break;
            default: break; /* allgather, scatter: forced below */
            }
            if ((st = zap_comm_create_ex(t, &params, &forced)) != ZAP_OK)
                die("zap_comm_create_ex", st);
            if ((op == OP_ALLGATHER || op == OP_SCATTER) &&
                (st = zap_coll_test_force(forced, op == OP_ALLGATHER ? "allgatherv" : "scatterv", o.alg)) != ZAP_OK)
                die("--alg", st);
        }
        zap_comm_t *opcomm = forced != NULL ? forced : comm;
        for (int k = 0; o.nsizes > 0 ? k < o.nsizes : (o.min << k) <= o.max; k++) {
            size_t bytes = o.nsizes > 0 ? o.sizes[k] : o.min << k;
            size_t count = bytes / sizeof(float), part = count / (size_t)g_size;
            bool per_rank = op != OP_ALLREDUCE && op != OP_BCAST && op != OP_REDUCE && op != OP_SCAN &&
                            op != OP_EXSCAN;
            if (per_rank && part == 0)
                continue; /* less than an element per rank */
            if (per_rank)
                count = part * (size_t)g_size;
            long iters = o.iters ? o.iters : default_iters(bytes);
            if (!o.iters && o.max_iters > 0 && iters > o.max_iters)
                iters = o.max_iters;
            long warmup = o.warmup ? o.warmup : (iters / 10 > 2 ? iters / 10 : 2);
            long reps = o.reps ? o.reps : 1;
            ctx_t c = {IMPL_ZAP, op, opcomm, &b, count, part, o.root, vcounts, vdispls, ivcounts, ivdispls};
            for (int q = 0; q < g_size; q++) {
                vcounts[q] = part;
                vdispls[q] = (ptrdiff_t)vblock(&c, q);
                ivcounts[q] = (int)part;
                ivdispls[q] = (int)vdispls[q];
            }
            result_t z = {0}, m = {0};
            uint64_t gpu0, fb0, gpu1, fb1; /* GPU-resident path (core/coll/gpu): did zap's calls take it? */
            zap_coll_gpu_counts(&gpu0, &fb0);
            if (!o.no_zap)
                measure(&c, iters, warmup, reps, &z);
            zap_coll_gpu_counts(&gpu1, &fb1);
            if (use_mpi) {
                c.impl = IMPL_MPI;
                measure(&c, iters, warmup, reps, &m);
            }
            zap_comm_attr_t attr = {.field_mask = ZAP_COMM_ATTR_ALGORITHMS, .bytes = bytes};
            (void)zap_comm_query(opcomm, &attr);
            const char *alg = op == OP_ALLREDUCE ? attr.allreduce_algorithm
                              : op == OP_BCAST   ? attr.bcast_algorithm
                              : o.alg != NULL    ? o.alg
                                                 : "auto";
            if (gpu1 > gpu0)
                alg = fb1 > fb0 ? "gpu+host" : "gpu"; /* peer copies over CUDA IPC; "+host": some fell back */
            double stage = 0, nccl_us = 0, nccl_busbw = 0, nccl_lat = 0;
#ifdef ZAP_PERF_HAVE_CUDA
            if (kind != 0)
                stage = staging_gbps(&b, bytes);
#endif
#ifdef ZAP_PERF_HAVE_NCCL
            if (use_nccl && (op == OP_ALLREDUCE || op == OP_BCAST) &&
                perf_nccl_run(op == OP_ALLREDUCE, bytes, iters, warmup, o.root, &nccl_us, &nccl_lat) == 0)
                nccl_busbw = (double)bytes / (nccl_us * 1e-6) / 1e9 * bus_factor(op, g_size);
#endif
            total_wrong += z.wrong + m.wrong;
            double bx = use_mpi && m.busbw > 0 ? z.busbw / m.busbw : 0, lx = use_mpi && m.lat_avg > 0 ? z.lat_avg / m.lat_avg : 0;
            /* Against NCCL: busbw zap / NCCL (higher: zap faster), isolated latency zap / NCCL (lower: zap faster). */
            double nbx = nccl_busbw > 0 ? z.busbw / nccl_busbw : 0, nlx = nccl_lat > 0 ? z.lat_avg / nccl_lat : 0;
            if (g_rank == 0) {
                printf("%-20s %10zu %9zu %-12.12s | %9.2f %8.3f %8.3f %5ld | %9.2f %8.3f %8.3f %5ld | %7.2f | %8.2f %8.2f "
                       "%8.2f | %8.2f %8.2f %8.2f | %6.2f",
                       tok, bytes, count, alg, z.time_us, z.algbw, z.busbw, z.wrong, m.time_us, m.algbw, m.busbw,
                       m.wrong, bx, z.lat_avg, z.lat_min, z.lat_max, m.lat_avg, m.lat_min, m.lat_max, lx);
                printf(" | med %.2f/%.2f", z.lat_med, m.lat_med);
                printf(" | xB %.0f/%.0f", z.xhost_rank, z.xhost_host_max);
                if (reps > 1)
                    printf(" | smin %.2f/%.2f", z.stream_min, m.stream_min);
                if (kind != 0)
                    printf(" | stage %.2f GB/s", stage);
                if (nccl_us > 0)
                    printf(" | nccl %.2f us %.3f GB/s lat %.2f | x nccl busbw %.2f lat %.2f", nccl_us, nccl_busbw,
                           nccl_lat, nbx, nlx);
                printf("\n");
                fflush(stdout);
                if (out.csv)
                    fprintf(out.csv,
                            "%s,%s,%d,%zu,%zu,%ld,%s,%.3f,%.4f,%.4f,%ld,%.3f,%.4f,%.4f,%ld,%.4f,%.3f,%.3f,%.3f,%.3f,%.3f,"
                            "%.3f,%.4f,%.4f,%.3f,%.4f,%.3f,%.3f,%.4f,%ld,%.3f,%.3f,%.3f,%.4f,%.4f,%.1f,%.1f,%.1f\n",
                            tok, o.mem, g_size, bytes, count, iters, alg, z.time_us, z.algbw, z.busbw, z.wrong,
                            m.time_us, m.algbw, m.busbw, m.wrong, bx, z.lat_avg, z.lat_min, z.lat_max, m.lat_avg,
                            m.lat_min, m.lat_max, lx, stage, nccl_us, nccl_busbw, z.lat_med, m.lat_med,
                            use_mpi && m.lat_med > 0 ? z.lat_med / m.lat_med : 0, reps, z.stream_min, m.stream_min,
                            nccl_lat, nbx, nlx, z.xhost_rank, z.xhost_host_max, z.xhost_total);
                if (out.csv)
                    fflush(out.csv); /* a run stopped by a time limit keeps the sizes it finished */
            }
        }
        zap_comm_destroy(forced);
    }
    free(vcounts);
    free(vdispls);
    free(ivcounts);
    free(ivdispls);
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
