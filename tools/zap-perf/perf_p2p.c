/* zap-perf p2p: ping-pong latency and bandwidth between ranks 0 and 1 over
 * zap's UCX transport, against raw UCP tag ping-pong measured in the same run
 * on a context and worker set up the same way (ucp_worker.c).
 *
 * For each size (powers of two, --min to --max) and buffer kind (--mem), the
 * two sides alternate timed batches (zap, raw, raw, zap, ...) --reps times;
 * each batch is --iters round trips (default by size). One-way time is half a
 * round trip; the table shows the median over batches of each, their ratio,
 * and the bandwidth they imply (size / one-way time, MB/s = 1e6 B/s).
 *
 * Buffer kinds: host (malloc'd; UCX registers them through its cache, for
 * zap and raw alike), pool (the transport's pool, whose chunks zap
 * registered once; backing from ZAP_POOL_BACKEND; raw UCP maps the same two
 * buffers once with its own context, so from 8 KiB both pass a memh),
 * managed (a CUDA managed pool, mapped likewise; before every round trip,
 * untimed, both sides move their buffers to the GPU, as if a kernel had just
 * produced them, so the timed part shows either page faults (--staging none)
 * or zap's prefetch to the host (--staging prefetch); raw UCP never stages).
 *
 * What is timed on the zap side is the blocking zap_transport_send and
 * zap_transport_recv, as an application calls them. */
#include <math.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "perf_common.h"
#include "zap/ucp.h"
#include "transport/ucp_worker.h"
#ifdef ZAP_PERF_HAVE_CUDA
#include <cuda_runtime.h>
#endif

#define RAW_TAG 0x5A50ull
#define ZAP_TAG 0x77ull

typedef struct p2p_opts {
    size_t min, max;
    int reps;
    long iters; /* 0: by size */
    char mem[64];
    const char *staging; /* NULL: leave ZAP_UCP_STAGING as it is */
    const char *csv;
    int no_raw;
} p2p_opts_t;

typedef struct raw_side {
    zap_ucp_worker_t w;
    ucp_ep_h ep;
    ucp_mem_h memh[2]; /* the pool kinds' send and receive buffers (raw_map) */
    void *base[2];
    size_t len[2];
} raw_side_t;

typedef struct bufs {
    void *s, *r;
    zap_buf_t sb, rb; /* pool kinds */
    int managed;
} bufs_t;

static int g_rank, g_peer;

static void usage(void)
{
    fprintf(stderr,
            "usage: mpirun -np 2 zap-perf p2p [--min SIZE] [--max SIZE] [--reps N] [--iters N]\n"
            "                                [--mem host,pool,managed] [--staging none|prefetch]\n"
            "                                [--csv FILE] [--no-raw]\n"
            "  sizes accept K, M, G (powers of 1024); defaults: --min 8 --max 64M; --reps (batches\n"
            "  per side and size) 31 up to 64K, 9 above; --iters (round trips per batch) by size\n"
            "  --mem host,pool (default); managed needs a CUDA device\n");
}

static int parse(int argc, char **argv, p2p_opts_t *o)
{
    memset(o, 0, sizeof(*o));
    o->min = 8;
    o->max = 64u << 20;
    o->reps = 0;
    strcpy(o->mem, "host,pool");
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0)
            return -1;
        if (strcmp(a, "--no-raw") == 0) {
            o->no_raw = 1;
            continue;
        }
        if (v == NULL) {
            fprintf(stderr, "zap-perf p2p: %s needs a value\n", a);
            return -1;
        }
        i++;
        if (strcmp(a, "--min") == 0 && perf_parse_size(v, &o->min) == 0)
            continue;
        if (strcmp(a, "--max") == 0 && perf_parse_size(v, &o->max) == 0)
            continue;
        if (strcmp(a, "--reps") == 0 && (o->reps = atoi(v)) > 0)
            continue;
        if (strcmp(a, "--iters") == 0 && (o->iters = atol(v)) > 0)
            continue;
        if (strcmp(a, "--mem") == 0 && strlen(v) < sizeof(o->mem)) {
            strcpy(o->mem, v);
            continue;
        }
        if (strcmp(a, "--staging") == 0 && (strcmp(v, "none") == 0 || strcmp(v, "prefetch") == 0)) {
            o->staging = v;
            continue;
        }
        if (strcmp(a, "--csv") == 0) {
            o->csv = v;
            continue;
        }
        fprintf(stderr, "zap-perf p2p: bad option or value: %s %s\n", a, v);
        return -1;
    }
    if (o->min == 0 || o->min > o->max) {
        fprintf(stderr, "zap-perf p2p: need 0 < --min <= --max\n");
        return -1;
    }
    return 0;
}

/* Many short batches rather than a few long ones: on a shared machine a
 * descheduled rank spoils the batch it falls in, and the median over many
 * batches sets those aside. */
static long iters_for(const p2p_opts_t *o, size_t size)
{
    if (o->iters > 0)
        return o->iters;
    if (size <= 65536)
        return 100;
    long n = (long)((32u << 20) / size);
    return n < 2 ? 2 : n > 100 ? 100 : n;
}

static int reps_for(const p2p_opts_t *o, size_t size)
{
    if (o->reps > 0)
        return o->reps;
    return size <= 65536 ? 31 : 9;
}

/* ---- raw UCP ------------------------------------------------------------ */

/* What a bare UCP program does, and what zap's blocking send and receive do
 * inside (ucp.c): post without a callback and, unless UCX finished at once,
 * poll the request between progress calls, then free it. Buffers that zap
 * passes a memh for (pool memory, 8 KiB and up) get one of raw UCP's own
 * (raw_map), so neither side pays UCX's registration cache there. */
static void raw_wait(ucp_worker_h w, ucs_status_ptr_t p)
{
    if (!UCS_PTR_IS_PTR(p)) {
        if (UCS_PTR_STATUS(p) != UCS_OK) {
            fprintf(stderr, "zap-perf: raw UCP operation failed: %s\n", ucs_status_string(UCS_PTR_STATUS(p)));
            MPI_Abort(MPI_COMM_WORLD, 1);
        }
        return;
    }
    while (ucp_request_check_status(p) == UCS_INPROGRESS)
        ucp_worker_progress(w);
    ucp_request_free(p);
}

static void raw_params(const raw_side_t *r, const void *buf, size_t len, ucp_request_param_t *p)
{
    p->op_attr_mask = 0;
    for (int i = 0; i < 2; i++)
        if (r->memh[i] != NULL && len >= 8192 && (const char *)buf >= (const char *)r->base[i] &&
            (const char *)buf + len <= (const char *)r->base[i] + r->len[i]) {
            p->op_attr_mask = UCP_OP_ATTR_FIELD_MEMH | UCP_OP_ATTR_FIELD_MEMORY_TYPE;
            p->memh = r->memh[i];
            p->memory_type = UCS_MEMORY_TYPE_HOST;
        }
}

static void raw_send(raw_side_t *r, const void *buf, size_t len)
{
    ucp_request_param_t p;
    raw_params(r, buf, len, &p);
    raw_wait(r->w.worker, ucp_tag_send_nbx(r->ep, buf, len, RAW_TAG, &p));
}

static void raw_recv(raw_side_t *r, void *buf, size_t len)
{
    ucp_request_param_t p;
    raw_params(r, buf, len, &p);
    raw_wait(r->w.worker, ucp_tag_recv_nbx(r->w.worker, buf, len, RAW_TAG, UINT64_MAX, &p));
}

/* Registers the two buffers of a pool kind with raw UCP's context, as zap's
 * pool registered their chunks with zap's (host memory to UCX, like zap's). */
static void raw_map(raw_side_t *r, void *const bufs[2], size_t len)
{
    for (int i = 0; i < 2; i++) {
        ucp_mem_map_params_t mp;
        memset(&mp, 0, sizeof(mp));
        mp.field_mask = UCP_MEM_MAP_PARAM_FIELD_ADDRESS | UCP_MEM_MAP_PARAM_FIELD_LENGTH |
                        UCP_MEM_MAP_PARAM_FIELD_MEMORY_TYPE;
        mp.address = bufs[i];
        mp.length = len;
        mp.memory_type = UCS_MEMORY_TYPE_HOST;
        ucs_status_t s = ucp_mem_map(r->w.context, &mp, &r->memh[i]);
        if (s != UCS_OK) {
            fprintf(stderr, "zap-perf: raw UCP ucp_mem_map failed: %s\n", ucs_status_string(s));
            MPI_Abort(MPI_COMM_WORLD, 1);
        }
        r->base[i] = bufs[i];
        r->len[i] = len;
    }
}

static void raw_unmap(raw_side_t *r)
{
    for (int i = 0; i < 2; i++)
        if (r->memh[i] != NULL)
            (void)ucp_mem_unmap(r->w.context, r->memh[i]);
    memset(r->memh, 0, sizeof(r->memh));
}

static void ep_err(void *arg, ucp_ep_h ep, ucs_status_t s)
{
    (void)arg;
    (void)ep;
    fprintf(stderr, "zap-perf: raw UCP endpoint failed: %s\n", ucs_status_string(s));
}

static int raw_setup(raw_side_t *r)
{
    /* The timeout sets UCX's keepalive interval (ucp_worker.h), as zap's. */
    double timeout = INFINITY;
    if (zap_timeout_from_env(&timeout) != ZAP_OK ||
        zap_ucp_worker_init(&r->w, MPI_COMM_WORLD, timeout) != ZAP_OK)
        return -1;
    /* The same endpoint mode zap uses: peer error handling where UCX has it. */
    zap_status_t st = zap_ucp_ep_create(&r->w, g_peer, zap_ucp_want_peer_errors(&r->w, g_peer), ep_err, NULL,
                                        &r->ep);
    if (st == ZAP_ERR_UNSUPPORTED)
        st = zap_ucp_ep_create(&r->w, g_peer, 0, NULL, NULL, &r->ep);
    return st == ZAP_OK ? 0 : -1;
}

static void raw_teardown(raw_side_t *r)
{
    ucp_request_param_t fp = {.op_attr_mask = 0};
    (void)zap_ucp_wait_ptr(r->w.worker, ucp_worker_flush_nbx(r->w.worker, &fp), perf_now() + 10);
    MPI_Barrier(MPI_COMM_WORLD);
    ucp_request_param_t cp = {.op_attr_mask = 0};
    (void)zap_ucp_wait_ptr(r->w.worker, ucp_ep_close_nbx(r->ep, &cp), perf_now() + 10);
    zap_ucp_worker_cleanup(&r->w);
}

/* ---- batches ------------------------------------------------------------ */

static void make_resident_on_gpu(bufs_t *b)
{
    if (!b->managed)
        return;
    (void)zap_buf_prefetch(&b->sb, 1);
    (void)zap_buf_prefetch(&b->rb, 1);
#ifdef ZAP_PERF_HAVE_CUDA
    (void)cudaDeviceSynchronize();
#endif
    MPI_Barrier(MPI_COMM_WORLD);
}

static void die(const char *what, zap_status_t st)
{
    fprintf(stderr, "zap-perf: rank %d: %s: %s\n", g_rank, what, zap_status_string(st));
    MPI_Abort(MPI_COMM_WORLD, 1);
}

/* Returns the seconds rank 0 spent in the timed part (others: 0). */
static double batch(zap_transport_t *t, raw_side_t *raw, bufs_t *b, size_t size, long iters)
{
    MPI_Barrier(MPI_COMM_WORLD);
    double spent = 0, t0 = perf_now();
    for (long i = 0; i < iters; i++) {
        if (b->managed) {
            make_resident_on_gpu(b);
            t0 = perf_now();
        }
        zap_status_t st = ZAP_OK;
        if (g_rank == 0) {
            if (raw != NULL) {
                raw_send(raw, b->s, size);
                raw_recv(raw, b->r, size);
            } else if ((st = zap_transport_send(t, g_peer, ZAP_TAG, b->s, size)) != ZAP_OK ||
                       (st = zap_transport_recv(t, g_peer, ZAP_TAG, b->r, size, NULL)) != ZAP_OK) {
                die("zap ping", st);
            }
        } else {
            if (raw != NULL) {
                raw_recv(raw, b->r, size);
                raw_send(raw, b->s, size);
            } else if ((st = zap_transport_recv(t, g_peer, ZAP_TAG, b->r, size, NULL)) != ZAP_OK ||
                       (st = zap_transport_send(t, g_peer, ZAP_TAG, b->s, size)) != ZAP_OK) {
                die("zap pong", st);
            }
        }
        if (b->managed)
            spent += perf_now() - t0;
    }
    if (!b->managed)
        spent = perf_now() - t0;
    return g_rank == 0 ? spent : 0;
}

static int get_bufs(zap_transport_t *t, const char *mem, size_t max, bufs_t *b)
{
    memset(b, 0, sizeof(*b));
    if (strcmp(mem, "host") == 0) {
        b->s = aligned_alloc(4096, (max + 4095) / 4096 * 4096);
        b->r = aligned_alloc(4096, (max + 4095) / 4096 * 4096);
        if (b->s == NULL || b->r == NULL)
            return -1;
    } else {
        if (zap_transport_alloc(t, max, &b->sb) != ZAP_OK || zap_transport_alloc(t, max, &b->rb) != ZAP_OK)
            return -1;
        b->s = b->sb.ptr;
        b->r = b->rb.ptr;
        b->managed = strcmp(mem, "managed") == 0;
    }
    memset(b->s, g_rank + 1, max);
    memset(b->r, 0, max);
    return 0;
}

static void put_bufs(bufs_t *b)
{
    if (b->sb.ptr != NULL || b->rb.ptr != NULL) {
        zap_buf_free(&b->sb);
        zap_buf_free(&b->rb);
    } else {
        free(b->s);
        free(b->r);
    }
}

static zap_transport_t *transport_for(const char *mem, zap_pool_t **pool_p)
{
    *pool_p = NULL;
    if (strcmp(mem, "managed") == 0) {
        zap_pool_params_t pp = {.backend = ZAP_POOL_BACKEND_MANAGED, .device = -1, .name = "perf-managed"};
        zap_status_t st = zap_pool_create(&pp, pool_p);
        int ok = st == ZAP_OK, all = 0;
        MPI_Allreduce(&ok, &all, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
        if (!all) {
            if (g_rank == 0)
                fprintf(stderr, "zap-perf: managed memory is not available on every rank (%s); skipped\n",
                        zap_status_string(st));
            zap_pool_destroy(*pool_p);
            *pool_p = NULL;
            return NULL;
        }
    }
    zap_transport_t *t = NULL;
    zap_status_t st = zap_ucp_transport_create(MPI_COMM_WORLD, *pool_p, &t);
    if (st != ZAP_OK)
        die("zap_ucp_transport_create", st);
    return t;
}

static void run_mem(const p2p_opts_t *o, const char *mem, raw_side_t *raw, perf_out_t *out)
{
    zap_pool_t *own = NULL;
    zap_transport_t *t = transport_for(mem, &own);
    if (t == NULL)
        return;
    char label[48];
    snprintf(label, sizeof label, "%s", mem);
    if (strcmp(mem, "pool") == 0)
        snprintf(label, sizeof label, "pool(%s)", zap_pool_backend_name(zap_transport_pool(t)));
    bufs_t b;
    if (get_bufs(t, mem, o->max, &b) != 0)
        die("buffer allocation", ZAP_ERR_NO_MEMORY);
    if (raw != NULL && strcmp(mem, "host") != 0)
        raw_map(raw, (void *[2]){b.s, b.r}, o->max);
    int max_reps = o->reps > 0 ? o->reps : 31;
    double *zs = calloc((size_t)max_reps, sizeof(double)), *rs = calloc((size_t)max_reps, sizeof(double));
    for (size_t size = o->min; size <= o->max; size *= 2) {
        long iters = iters_for(o, size);
        int reps = reps_for(o, size);
        long warm = iters / 10 + 1;
        (void)batch(t, NULL, &b, size, warm);
        if (!o->no_raw)
            (void)batch(NULL, raw, &b, size, warm);
        for (int k = 0; k < reps; k++) {
            if (k % 2 == 0) {
                zs[k] = batch(t, NULL, &b, size, iters);
                rs[k] = o->no_raw ? 0 : batch(NULL, raw, &b, size, iters);
            } else {
                rs[k] = o->no_raw ? 0 : batch(NULL, raw, &b, size, iters);
                zs[k] = batch(t, NULL, &b, size, iters);
            }
            zs[k] = zs[k] / (2.0 * (double)iters) * 1e6; /* one-way microseconds */
            rs[k] = rs[k] / (2.0 * (double)iters) * 1e6;
        }
        if (g_rank == 0) {
            double z = perf_median(zs, reps), r = perf_median(rs, reps);
            double zbw = (double)size / z, rbw = r > 0 ? (double)size / r : 0; /* B/us = MB/s */
            printf("%-14s %10zu %6ld %10.2f %10.2f %9.3f %10.1f %10.1f %9.3f\n", label, size, iters, z, r,
                   r > 0 ? z / r : 0, zbw, rbw, rbw > 0 ? zbw / rbw : 0);
            fflush(stdout);
            if (out->csv)
                fprintf(out->csv, "%s,%zu,%ld,%.4f,%.4f,%.4f,%.2f,%.2f,%.4f\n", label, size, iters, z, r,
                        r > 0 ? z / r : 0, zbw, rbw, rbw > 0 ? zbw / rbw : 0);
        }
        if (size > o->max / 2)
            break;
    }
    free(zs);
    free(rs);
    if (raw != NULL)
        raw_unmap(raw);
    put_bufs(&b);
    zap_transport_close(t);
    if (own != NULL)
        zap_pool_destroy(own);
}

int perf_p2p_main(int argc, char **argv)
{
    p2p_opts_t o;
    int nranks = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &g_rank);
    MPI_Comm_size(MPI_COMM_WORLD, &nranks);
    if (parse(argc, argv, &o) != 0) {
        if (g_rank == 0)
            usage();
        return 2;
    }
    if (nranks != 2) {
        if (g_rank == 0)
            fprintf(stderr, "zap-perf p2p: run with exactly 2 ranks (got %d)\n", nranks);
        return 2;
    }
    g_peer = 1 - g_rank;
    if (o.staging != NULL)
        setenv("ZAP_UCP_STAGING", o.staging, 1);
    raw_side_t raw;
    memset(&raw, 0, sizeof(raw));
    if (!o.no_raw && raw_setup(&raw) != 0) {
        fprintf(stderr, "zap-perf: rank %d: raw UCP setup failed\n", g_rank);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    perf_out_t out;
    if (perf_out_open(&out, o.csv, "mem,size,iters,zap_us,raw_us,lat_ratio,zap_MBps,raw_MBps,bw_ratio", g_rank) != 0)
        MPI_Abort(MPI_COMM_WORLD, 1);
    if (g_rank == 0) {
        const char *tls = getenv("UCX_TLS"), *stg = getenv("ZAP_UCP_STAGING");
        printf("# zap-perf p2p: 2 ranks, UCX_TLS %s, ZAP_UCP_STAGING %s; medians over batches; one-way time "
               "(half a round trip); ratios zap / raw\n",
               tls ? tls : "(default)", stg ? stg : "(default)");
        printf("%-14s %10s %6s %10s %10s %9s %10s %10s %9s\n", "mem", "bytes", "iters", "zap_us", "raw_us",
               "lat_ratio", "zap_MB/s", "raw_MB/s", "bw_ratio");
    }
    char list[64];
    strcpy(list, o.mem);
    for (char *save = NULL, *m = strtok_r(list, ",", &save); m != NULL; m = strtok_r(NULL, ",", &save)) {
        if (strcmp(m, "host") != 0 && strcmp(m, "pool") != 0 && strcmp(m, "managed") != 0) {
            if (g_rank == 0)
                fprintf(stderr, "zap-perf p2p: unknown --mem kind '%s' (host, pool, managed)\n", m);
            continue;
        }
        run_mem(&o, m, o.no_raw ? NULL : &raw, &out);
    }
    perf_out_close(&out);
    if (!o.no_raw)
        raw_teardown(&raw);
    return 0;
}
