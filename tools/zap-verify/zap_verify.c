/* zap-verify: generate Ed25519 batches, verify them across ranks, benchmark.
 *
 *   zap-verify gen   --items N --keys M --invalid-fraction F --seed S
 *                    --out batch.svb --expect expected.bits [--msg-len 32|var]
 *   zap-verify run   [--batch FILE | --gen N ...] [--mode scatter|bcast]
 *                    [--verifier cpu|gpu|auto] [--expect FILE]
 *                    [--verdicts-out FILE] [--format bitmap|indices]
 *                    [--inproc-ranks K]
 *   zap-verify bench [--max-log2 L] [--ranks 1,2,4] ...
 *
 * `run` under mpirun uses the UCX transport (zap_ucp_transport_create over
 * MPI_COMM_WORLD); without mpirun it runs as a singleton MPI rank; with
 * --inproc-ranks K it runs K ranks as threads of this process over the
 * inproc transport. Rank 0 prints the summary (stdout) and, on a terminal, a
 * progress line (stderr). Exit status: 0 when every rank verified, all
 * digests agree and the expected verdicts (from --expect or from --gen) match;
 * 1 for a verdict mismatch; 2 for a usage error; 3 for any other failure.
 * docs/verify.md describes the output and the verdict files. */
#define _GNU_SOURCE /* sched_getaffinity */
#include "zap/verify.h"
#include "zap/config.h"
#include "zap/inproc.h"
#include "zap/pool.h"
#include "verify/batch_gen.h"
#include "verify/verify_impl.h"
#include "base/log.h"
#ifdef ZAP_VERIFY_WITH_UCP
#include "zap/ucp.h"
#endif
#include <mpi.h>
#ifdef ZAP_VERIFY_WITH_GPU
#include "ed25519_gpu.h"
#endif
#include <errno.h>
#include <sched.h>
#include <stdatomic.h>
#include <getopt.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#define EXIT_MISMATCH 1
#define EXIT_USAGE 2
#define EXIT_ERROR 3

typedef struct opts {
    /* generation */
    zap_gen_params_t gen;
    int gen_given;
    const char *out, *expect_out;
    /* run */
    const char *batch, *expect, *verdicts_out;
    int indices;
    int inproc_ranks;
    int quiet;
    zap_verify_params_t vp;
    /* bench */
    int max_log2;
    char ranks_list[64];
} opts_t;

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

static void usage(FILE *f)
{
    fprintf(f,
            "usage:\n"
            "  zap-verify gen --items N [--keys M] [--invalid-fraction F] [--seed S] [--msg-len 32|var]\n"
            "                 --out batch.svb [--expect expected.bits]\n"
            "  zap-verify run [--batch FILE | --gen N [gen options]] [--mode scatter|bcast]\n"
            "                 [--combine or|allgather] [--verifier cpu|gpu|auto] [--threads T] [--root R]\n"
            "                 [--expect FILE] [--verdicts-out FILE] [--format bitmap|indices]\n"
            "                 [--inproc-ranks K] [--segment-bytes B|all] [--quiet]\n"
            "  zap-verify bench [--max-log2 L] [--ranks 1,2,4] [--keys M] [--invalid-fraction F]\n"
            "gen options: --keys M (default 1024) --invalid-fraction F (default 0.05) --seed S (default 1)\n"
            "             --msg-len 32|var (default 32) --batch-id B --threads T\n"
            "run: under mpirun over UCX, or K threads as ranks with --inproc-ranks K.\n");
}

static int parse_u64(const char *s, uint64_t *v)
{
    char *end;
    errno = 0;
    unsigned long long x = strtoull(s, &end, 0);
    if (errno || end == s || *end || s[0] == '-')
        return -1;
    *v = x;
    return 0;
}

static int parse_opts(int argc, char **argv, opts_t *o)
{
    enum { O_ITEMS = 1000, O_KEYS, O_INVALID, O_SEED, O_OUT, O_EXPECT, O_MSGLEN, O_BATCH, O_GEN, O_MODE,
           O_VERIFIER, O_VOUT, O_FORMAT, O_INPROC, O_COMBINE, O_THREADS, O_ROOT, O_QUIET, O_BATCHID,
           O_MAXLOG2, O_RANKS, O_SEGMENT, O_HELP };
    static const struct option lo[] = {
        {"items", 1, 0, O_ITEMS},       {"keys", 1, 0, O_KEYS},         {"invalid-fraction", 1, 0, O_INVALID},
        {"seed", 1, 0, O_SEED},         {"out", 1, 0, O_OUT},           {"expect", 1, 0, O_EXPECT},
        {"msg-len", 1, 0, O_MSGLEN},    {"batch", 1, 0, O_BATCH},       {"gen", 1, 0, O_GEN},
        {"mode", 1, 0, O_MODE},         {"verifier", 1, 0, O_VERIFIER}, {"verdicts-out", 1, 0, O_VOUT},
        {"format", 1, 0, O_FORMAT},     {"inproc-ranks", 1, 0, O_INPROC}, {"combine", 1, 0, O_COMBINE},
        {"threads", 1, 0, O_THREADS},   {"root", 1, 0, O_ROOT},         {"quiet", 0, 0, O_QUIET},
        {"batch-id", 1, 0, O_BATCHID},  {"max-log2", 1, 0, O_MAXLOG2},  {"ranks", 1, 0, O_RANKS},
        {"segment-bytes", 1, 0, O_SEGMENT}, {"help", 0, 0, O_HELP},  {0, 0, 0, 0}};
    int c;
    uint64_t v;
    optind = 2;
    while ((c = getopt_long(argc, argv, "", lo, NULL)) != -1) {
        const char *a = optarg;
        switch (c) {
        case O_ITEMS:
        case O_GEN:
            if (parse_u64(a, &o->gen.items))
                goto bad;
            o->gen_given = 1;
            break;
        case O_KEYS:
            if (parse_u64(a, &v) || v == 0 || v > UINT32_MAX - 1)
                goto bad;
            o->gen.keys = (uint32_t)v;
            break;
        case O_INVALID: {
            char *end;
            o->gen.invalid_fraction = strtod(a, &end);
            if (*end || end == a || !(o->gen.invalid_fraction >= 0 && o->gen.invalid_fraction <= 1))
                goto bad;
            break;
        }
        case O_SEED:
            if (parse_u64(a, &o->gen.seed))
                goto bad;
            break;
        case O_BATCHID:
            if (parse_u64(a, &o->gen.batch_id))
                goto bad;
            break;
        case O_OUT: o->out = a; break;
        case O_EXPECT:
            o->expect = a;
            o->expect_out = a;
            break;
        case O_MSGLEN:
            if (!strcmp(a, "32"))
                o->gen.variable = 0;
            else if (!strcmp(a, "var"))
                o->gen.variable = 1;
            else
                goto bad;
            break;
        case O_BATCH: o->batch = a; break;
        case O_MODE:
            if (!strcmp(a, "scatter"))
                o->vp.mode = ZAP_VERIFY_SCATTER;
            else if (!strcmp(a, "bcast"))
                o->vp.mode = ZAP_VERIFY_BCAST;
            else
                goto bad;
            break;
        case O_COMBINE:
            if (!strcmp(a, "or"))
                o->vp.combine = ZAP_COMBINE_OR_ALLREDUCE;
            else if (!strcmp(a, "allgather"))
                o->vp.combine = ZAP_COMBINE_ALLGATHERV;
            else
                goto bad;
            break;
        case O_VERIFIER:
            if (!strcmp(a, "cpu"))
                o->vp.verifier = ZAP_VERIFIER_CPU;
            else if (!strcmp(a, "gpu"))
                o->vp.verifier = ZAP_VERIFIER_GPU;
            else if (!strcmp(a, "auto"))
                o->vp.verifier = ZAP_VERIFIER_AUTO;
            else
                goto bad;
            break;
        case O_VOUT: o->verdicts_out = a; break;
        case O_FORMAT:
            if (!strcmp(a, "bitmap"))
                o->indices = 0;
            else if (!strcmp(a, "indices"))
                o->indices = 1;
            else
                goto bad;
            break;
        case O_INPROC:
            if (parse_u64(a, &v) || v < 1 || v > 4096)
                goto bad;
            o->inproc_ranks = (int)v;
            break;
        case O_THREADS:
            if (parse_u64(a, &v) || v > 1024)
                goto bad;
            o->vp.threads = (unsigned)v;
            o->gen.threads = (unsigned)v;
            break;
        case O_ROOT:
            if (parse_u64(a, &v) || v > 1u << 20)
                goto bad;
            o->vp.root = (int)v;
            break;
        case O_QUIET: o->quiet = 1; break;
        case O_MAXLOG2:
            if (parse_u64(a, &v) || v < 5 || v > 26)
                goto bad;
            o->max_log2 = (int)v;
            break;
        case O_RANKS: snprintf(o->ranks_list, sizeof(o->ranks_list), "%s", a); break;
        case O_SEGMENT: {
            /* bytes with an optional K/M/G (powers of 1024), or "all": one segment */
            if (!strcmp(a, "all")) {
                o->vp.segment_bytes = UINT64_MAX;
                break;
            }
            char *end;
            errno = 0;
            unsigned long long x = strtoull(a, &end, 10);
            unsigned shift = *end == 'K' ? 10 : *end == 'M' ? 20 : *end == 'G' ? 30 : 0;
            if (errno || end == a || a[0] == '-' || x == 0 || (shift && end[1]) || (!shift && *end) ||
                x > (UINT64_MAX >> shift))
                goto bad;
            o->vp.segment_bytes = (uint64_t)x << shift;
            break;
        }
        case O_HELP: usage(stdout); exit(0);
        default: usage(stderr); return -1;
        }
        continue;
    bad:
        fprintf(stderr, "zap-verify: bad value '%s' for --%s\n", a, lo[c - O_ITEMS].name);
        return -1;
    }
    if (optind != argc) {
        fprintf(stderr, "zap-verify: unexpected argument '%s'\n", argv[optind]);
        return -1;
    }
    return 0;
}

/* ---- verdict files ---------------------------------------------------------
 * bitmap:  "SVV1" u32 0 | u64 n_items | u64 batch_id | ceil(n/8) bytes, bit i%8
 *          of byte i/8 set when item i is valid (little endian words).
 * indices: text; a '#' header line, then each invalid item's index, one a line. */

static int write_verdicts(const char *path, int indices, const uint32_t *bm, uint64_t n, uint64_t batch_id)
{
    FILE *f = fopen(path, "wb");
    if (!f) {
        fprintf(stderr, "zap-verify: cannot write %s: %s\n", path, strerror(errno));
        return -1;
    }
    if (indices) {
        uint64_t invalid = 0;
        for (uint64_t i = 0; i < n; i++)
            invalid += !((bm[i / 32] >> (i % 32)) & 1);
        fprintf(f, "# zap-verify invalid item indices: n_items %llu batch_id %llu invalid %llu\n",
                (unsigned long long)n, (unsigned long long)batch_id, (unsigned long long)invalid);
        for (uint64_t i = 0; i < n; i++)
            if (!((bm[i / 32] >> (i % 32)) & 1))
                fprintf(f, "%llu\n", (unsigned long long)i);
    } else {
        uint8_t h[24];
        memcpy(h, "SVV1", 4);
        zap_put32(h + 4, 0);
        zap_put64(h + 8, n);
        zap_put64(h + 16, batch_id);
        fwrite(h, 1, 24, f);
        for (uint64_t b = 0; b < (n + 7) / 8; b++)
            fputc((int)((bm[b / 4] >> (8 * (b % 4))) & 0xff), f);
    }
    if (fclose(f) != 0) {
        fprintf(stderr, "zap-verify: error writing %s\n", path);
        return -1;
    }
    return 0;
}

/* Reads a verdict file of either form into a fresh bitmap of n items. */
static int read_verdicts(const char *path, uint64_t n, uint32_t **bm_p)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        fprintf(stderr, "zap-verify: cannot read %s: %s\n", path, strerror(errno));
        return -1;
    }
    uint32_t *bm = calloc((size_t)((n + 31) / 32) + 1, 4);
    uint8_t h[24];
    size_t got = fread(h, 1, 24, f);
    int rc = 0;
    if (got == 24 && !memcmp(h, "SVV1", 4)) {
        uint64_t fn = zap_le64(h + 8);
        if (fn != n) {
            fprintf(stderr, "zap-verify: %s holds %llu verdicts, the batch has %llu items\n", path,
                    (unsigned long long)fn, (unsigned long long)n);
            rc = -1;
        }
        for (uint64_t b = 0; rc == 0 && b < (n + 7) / 8; b++) {
            int c = fgetc(f);
            if (c == EOF) {
                fprintf(stderr, "zap-verify: %s is truncated\n", path);
                rc = -1;
                break;
            }
            bm[b / 4] |= (uint32_t)c << (8 * (b % 4));
        }
    } else {
        /* indices: everything valid except the listed items */
        rewind(f);
        for (uint64_t i = 0; i < n; i++)
            bm[i / 32] |= 1u << (i % 32);
        char line[128];
        while (rc == 0 && fgets(line, sizeof(line), f)) {
            if (line[0] == '#' || line[0] == '\n')
                continue;
            uint64_t idx;
            line[strcspn(line, "\r\n")] = 0;
            if (parse_u64(line, &idx) || idx >= n) {
                fprintf(stderr, "zap-verify: %s: bad index line '%s'\n", path, line);
                rc = -1;
            } else {
                bm[idx / 32] &= ~(1u << (idx % 32));
            }
        }
    }
    fclose(f);
    if (rc)
        free(bm);
    else
        *bm_p = bm;
    return rc;
}

/* ---- gen ---- */

static void gen_defaults(opts_t *o)
{
    o->gen.keys = 1024;
    o->gen.invalid_fraction = 0.05;
    o->gen.seed = 1;
    o->gen.batch_id = 1;
}

static int cmd_gen(opts_t *o)
{
    if (!o->gen_given || !o->out) {
        fprintf(stderr, "zap-verify gen: --items and --out are required\n");
        return EXIT_USAGE;
    }
    zap_batch_layout_t l;
    if (zap_gen_layout(&o->gen, &l) != ZAP_OK)
        return EXIT_USAGE;
    uint8_t *buf = malloc(l.total_bytes ? l.total_bytes : 1);
    uint32_t *exp = malloc(((o->gen.items + 31) / 32 + 1) * 4);
    if (!buf || !exp) {
        fprintf(stderr, "zap-verify gen: no memory for %llu bytes\n", (unsigned long long)l.total_bytes);
        return EXIT_ERROR;
    }
    double t0 = now_s();
    if (zap_gen_batch(&o->gen, buf, l.total_bytes, exp, NULL) != ZAP_OK)
        return EXIT_ERROR;
    double t1 = now_s();
    FILE *f = fopen(o->out, "wb");
    if (!f || fwrite(buf, 1, l.total_bytes, f) != l.total_bytes || fclose(f) != 0) {
        fprintf(stderr, "zap-verify gen: cannot write %s: %s\n", o->out, strerror(errno));
        return EXIT_ERROR;
    }
    if (o->expect_out && write_verdicts(o->expect_out, 0, exp, o->gen.items, o->gen.batch_id))
        return EXIT_ERROR;
    uint64_t valid = 0;
    for (uint64_t w = 0; w < (o->gen.items + 31) / 32; w++)
        valid += (uint64_t)__builtin_popcount(exp[w]);
    printf("zap-verify gen: %llu items (%llu valid, %llu invalid), %u keys, %s messages, seed %llu: %s "
           "(%llu bytes) in %.2f s (%.0f items/s)\n",
           (unsigned long long)o->gen.items, (unsigned long long)valid,
           (unsigned long long)(o->gen.items - valid), o->gen.keys, o->gen.variable ? "variable" : "32-byte",
           (unsigned long long)o->gen.seed, o->out, (unsigned long long)l.total_bytes, t1 - t0,
           (t1 - t0) > 0 ? o->gen.items / (t1 - t0) : 0.0);
    free(buf);
    free(exp);
    return 0;
}

/* ---- run ---- */

/* What every rank of a run shares (inproc: the same struct; MPI: one each). */
typedef struct run_ctx {
    opts_t *o;
    int tty;
    /* root-only */
    uint32_t *gen_expected;
    double load_seconds;
    int exit_code[4096];
    const char *transport_name;
    /* Set by a rank whose job ended because a peer died or stopped answering:
     * no collective can complete any more, so the MPI path aborts at once. */
    int peer_lost;
    /* Every rank waits here until the root has loaded or generated the batch,
     * which may take longer than ZAP_TIMEOUT; neither wait has a deadline of
     * its own, the root's load is bounded by its own work. */
    void (*loaded)(struct run_ctx *c);
    zap_transport_t *t; /* MPI path: the root's message ends that wait */
    pthread_barrier_t barrier; /* inproc */
} run_ctx_t;

static void loaded_inproc(run_ctx_t *c) { pthread_barrier_wait(&c->barrier); }
/* Non-root ranks wait for a 0-byte message the root sends each of them once
 * the batch is loaded or generated. Over the transport, not an MPI barrier:
 * a root that dies while loading then shows up as a failed peer on the
 * receive (a barrier with a dead member waits forever), and a non-root rank
 * that dies meanwhile holds nobody up (the job's collectives report it). The
 * receive is tested every 2 ms with a sleep between (MPI_Barrier busy-polls
 * in Open MPI), so the waiting ranks leave the cores to the root's generator. */
#define LOADED_TAG 0x7a76
#define HELLO_TAG 0x7a77
#define WATCH_TAG 0x7a78 /* never sent: a receive that ends only when its peer fails */

static void lost_peer_exit(int rank, const char *what, zap_status_t s)
{
    fprintf(stderr, "zap-verify: rank %d: %s: %s (the log line above names the rank)\n", rank, what,
            zap_status_string(s));
    fflush(NULL);
    _exit(EXIT_ERROR); /* as after a lost peer (main) */
}

/* While the root loads or generates the batch (seconds, no zap call of its
 * own), it must still notice a rank that dies: UCX sees a dead peer only
 * over an endpoint it has and only while it is progressed. So the root
 * connects to every rank before loading (each sends it a 0-byte hello), keeps
 * a receive that is never matched posted from each (the transport fails it
 * when that peer fails), and its main thread tests them every 2 ms while a
 * thread loads. A failure is logged by the transport naming the rank, and
 * the notices it sends before this rank leaves tell the waiting ranks (whose
 * only endpoint is to the root) which rank failed first. A star, not all
 * pairs: a rank keeps one connection per peer it talks to, and the job's
 * scatter connects the root to everyone anyway. */
typedef struct loader {
    run_ctx_t *c;
    zap_transport_t *t;
    zap_buf_t *buf;
    zap_status_t s;
    atomic_int done;
} loader_t;

static zap_status_t load_batch(run_ctx_t *c, zap_transport_t *t, zap_buf_t *buf_p);

static void *loader_main(void *arg)
{
    loader_t *l = arg;
    l->s = load_batch(l->c, l->t, l->buf);
    atomic_store(&l->done, 1);
    return NULL;
}

/* Every pending request of reqs[0..n) tested once (each test progresses the
 * transport); the first error, or ZAP_OK. *pending_p counts those not done. */
static zap_status_t test_all(zap_request_t **reqs, int n, int *pending_p)
{
    int pending = 0;
    for (int i = 0; i < n; i++) {
        int done = 0;
        if (reqs[i] == NULL)
            continue;
        zap_status_t s = zap_request_test(reqs[i], &done);
        if (s != ZAP_OK)
            return s;
        pending += !done;
    }
    if (pending_p)
        *pending_p = pending;
    return ZAP_OK;
}

static zap_status_t load_watched(run_ctx_t *c, zap_transport_t *t, zap_buf_t *buf_p)
{
    const int rank = zap_transport_rank(t), size = zap_transport_size(t);
    zap_request_t **hello = calloc((size_t)size, sizeof(*hello)), **watch = calloc((size_t)size, sizeof(*watch));
    if (!hello || !watch) {
        free(hello);
        free(watch);
        return ZAP_ERR_NO_MEMORY; /* the job then fails on every rank (rank_main) */
    }
    zap_status_t s = ZAP_OK;
    for (int r = 0; r < size && s == ZAP_OK; r++)
        if (r != rank && (s = zap_transport_irecv(t, r, HELLO_TAG, NULL, 0, &hello[r])) == ZAP_OK)
            s = zap_transport_irecv(t, r, WATCH_TAG, NULL, 0, &watch[r]);
    if (s != ZAP_OK)
        lost_peer_exit(rank, "connecting to the ranks before loading the batch", s);
    loader_t l = {.c = c, .t = t, .buf = buf_p, .s = ZAP_OK};
    atomic_init(&l.done, 0);
    pthread_t tid;
    int threaded = pthread_create(&tid, NULL, loader_main, &l) == 0;
    if (!threaded)
        loader_main(&l);
    struct timespec ts = {0, 2 * 1000 * 1000};
    while (!atomic_load(&l.done)) {
        if ((s = test_all(watch, size, NULL)) != ZAP_OK || (s = test_all(hello, size, NULL)) != ZAP_OK)
            lost_peer_exit(rank, "a rank failed while the root loaded the batch", s);
        nanosleep(&ts, NULL);
    }
    if (threaded)
        pthread_join(tid, NULL);
    for (int r = 0; r < size; r++)
        zap_request_free(watch[r]); /* cancels it */
    /* Every rank sent its hello right after the transport was created. */
    int pending = 1;
    double deadline = zap_clock_now() + zap_timeout_seconds();
    while ((s = test_all(hello, size, &pending)) == ZAP_OK && pending && zap_clock_now() < deadline)
        nanosleep(&ts, NULL);
    if (s == ZAP_OK && pending)
        s = ZAP_ERR_TIMED_OUT;
    if (s != ZAP_OK)
        lost_peer_exit(rank, "waiting for every rank's hello", s);
    for (int r = 0; r < size; r++)
        zap_request_free(hello[r]);
    free(hello);
    free(watch);
    return l.s;
}

static void loaded_mpi(run_ctx_t *c)
{
    zap_transport_t *t = c->t;
    const int root = c->o->vp.root, rank = zap_transport_rank(t), size = zap_transport_size(t);
    if (rank == root) {
        for (int r = 0; r < size; r++) {
            zap_request_t *req = NULL;
            /* A send that fails (a dead rank) is the job's to report. */
            if (r != root && zap_transport_isend(t, r, LOADED_TAG, NULL, 0, &req) == ZAP_OK)
                zap_request_free(req);
        }
        return;
    }
    struct timespec ts = {0, 2 * 1000 * 1000};
    zap_request_t *req = NULL, *hello = NULL;
    int done = 0;
    /* The hello connects this rank to the root at once (load_watched). */
    zap_status_t s = zap_transport_isend(t, root, HELLO_TAG, NULL, 0, &hello);
    if (s == ZAP_OK)
        s = zap_transport_irecv(t, root, LOADED_TAG, NULL, 0, &req);
    while (s == ZAP_OK && (s = zap_request_test(req, &done)) == ZAP_OK && !done)
        nanosleep(&ts, NULL);
    if (s == ZAP_OK)
        s = zap_request_wait(hello); /* done long ago: the root has received it */
    zap_request_free(req);
    zap_request_free(hello);
    if (s != ZAP_OK) {
        char what[96];
        snprintf(what, sizeof(what), "waiting for the root (rank %d) to load the batch", root);
        lost_peer_exit(rank, what, s);
    }
}

/* Completes an MPI request within ZAP_TIMEOUT; otherwise a peer has died or
 * hangs, and MPI offers no way out of a collective with a dead member, so
 * the job is ended with MPI_Abort (naming the wait) rather than hanging. */
static void wait_or_abort(MPI_Request *req, const char *what, int rank)
{
    double deadline = zap_clock_now() + zap_timeout_seconds();
    struct timespec ts = {0, 1000 * 1000};
    int done = 0;
    for (MPI_Test(req, &done, MPI_STATUS_IGNORE); !done; MPI_Test(req, &done, MPI_STATUS_IGNORE)) {
        if (zap_clock_now() > deadline) {
            fprintf(stderr, "zap-verify: rank %d: %s did not complete within ZAP_TIMEOUT (%.1f s): a rank has "
                    "failed; ending the job\n", rank, what, zap_timeout_seconds());
            MPI_Abort(MPI_COMM_WORLD, EXIT_ERROR);
        }
        nanosleep(&ts, NULL);
    }
}

typedef struct progress {
    volatile int stop;
    uint64_t done;
    uint64_t total;
    pthread_t tid;
    double t0;
} progress_t;

static void *progress_main(void *arg)
{
    progress_t *p = arg;
    struct timespec ts = {0, 200 * 1000 * 1000};
    while (!p->stop) {
        nanosleep(&ts, NULL); /* a display refresh, not a wait for anything */
        uint64_t d = __atomic_load_n(&p->done, __ATOMIC_RELAXED);
        fprintf(stderr, "\rzap-verify: verifying: rank 0 shard %llu/%llu items (%3.0f%%), %.1f s   ",
                (unsigned long long)d, (unsigned long long)p->total, p->total ? 100.0 * d / p->total : 100.0,
                now_s() - p->t0);
    }
    fprintf(stderr, "\r%80s\r", "");
    return NULL;
}

static zap_status_t load_batch(run_ctx_t *c, zap_transport_t *t, zap_buf_t *buf_p)
{
    opts_t *o = c->o;
    double t0 = now_s();
    zap_status_t s;
    if (o->batch) {
        FILE *f = fopen(o->batch, "rb");
        if (!f) {
            fprintf(stderr, "zap-verify: cannot open %s: %s\n", o->batch, strerror(errno));
            return ZAP_ERR_NOT_FOUND;
        }
        fseek(f, 0, SEEK_END);
        long size = ftell(f);
        rewind(f);
        s = zap_transport_alloc(t, size > 0 ? (size_t)size : 1, buf_p);
        if (s != ZAP_OK) {
            fclose(f);
            return s;
        }
        if (size > 0 && fread(buf_p->ptr, 1, (size_t)size, f) != (size_t)size) {
            fprintf(stderr, "zap-verify: short read of %s\n", o->batch);
            fclose(f);
            return ZAP_ERR_NOT_FOUND;
        }
        buf_p->size = (size_t)size;
        fclose(f);
    } else {
        zap_batch_layout_t l;
        s = zap_gen_layout(&o->gen, &l);
        if (s != ZAP_OK)
            return s;
        s = zap_transport_alloc(t, l.total_bytes ? l.total_bytes : 1, buf_p);
        if (s != ZAP_OK)
            return s;
        c->gen_expected = calloc((size_t)((o->gen.items + 31) / 32) + 1, 4);
        if (!c->gen_expected)
            return ZAP_ERR_NO_MEMORY;
        if (c->tty)
            fprintf(stderr, "zap-verify: generating %llu items...", (unsigned long long)o->gen.items);
        s = zap_gen_batch(&o->gen, buf_p->ptr, l.total_bytes, c->gen_expected, NULL);
        if (c->tty)
            fprintf(stderr, "\r%60s\r", "");
        buf_p->size = (size_t)l.total_bytes;
    }
    c->load_seconds = now_s() - t0;
    return s;
}

/* The last line of a run, printed once the exit codes of all ranks are known
 * (the root's comparison with the expected verdicts included). */
static void print_result(const opts_t *o, int code)
{
    if (!o->quiet)
        printf("result: %s\n", code == 0 ? "OK" : code == EXIT_MISMATCH ? "MISMATCH" : "ERROR");
    fflush(stdout);
}

static int compare_bits(const char *what, const uint32_t *want, const uint32_t *got, uint64_t n)
{
    uint64_t diff = 0, first = UINT64_MAX;
    for (uint64_t i = 0; i < n; i++)
        if (((want[i / 32] ^ got[i / 32]) >> (i % 32)) & 1) {
            if (first == UINT64_MAX)
                first = i;
            diff++;
        }
    if (diff) {
        printf("  expected verdicts (%s): MISMATCH in %llu items, first at index %llu\n", what,
               (unsigned long long)diff, (unsigned long long)first);
        return -1;
    }
    printf("  expected verdicts (%s): match (%llu items)\n", what, (unsigned long long)n);
    return 0;
}

static void print_summary(run_ctx_t *c, const zap_verify_result_t *r, zap_status_t s)
{
    opts_t *o = c->o;
    double job = r->distribute_seconds + r->verify_seconds + r->combine_seconds + r->agree_seconds;
    printf("zap-verify: %llu items (batch %llu) on %d rank%s over %s, mode %s, combine %s\n",
           (unsigned long long)r->n_items, (unsigned long long)r->batch_id, r->nranks, r->nranks == 1 ? "" : "s",
           c->transport_name, o->vp.mode == ZAP_VERIFY_BCAST ? "bcast" : "scatter",
           o->vp.combine == ZAP_COMBINE_ALLGATHERV ? "allgatherv" : "or-allreduce");
    printf("  valid %llu  invalid %llu  (malformed %llu)\n", (unsigned long long)r->valid,
           (unsigned long long)r->invalid, (unsigned long long)r->malformed);
    printf("  phase (rank 0)   seconds\n");
    printf("  %-15s %9.3f\n", o->batch ? "load" : "generate", c->load_seconds);
    printf("  %-15s %9.3f\n", "distribute", r->distribute_seconds);
    printf("  %-15s %9.3f\n", "verify", r->verify_seconds);
    printf("  %-15s %9.3f\n", "combine", r->combine_seconds);
    printf("  %-15s %9.3f\n", "agree", r->agree_seconds);
    printf("  %-15s %9.3f   %.0f items/s (distribute to agree)\n", "job", job,
           job > 0 ? r->n_items / job : 0.0);
    printf("  rank       first      items  verifier  verify s     items/s  in place s  peak RSS MiB\n");
    for (int q = 0; q < r->nranks; q++) {
        const zap_verify_rank_info_t *ri = &r->ranks[q];
        printf("  %4d  %10llu %10llu  %-8s  %8.3f  %10.0f  %10.3f  %12.1f\n", q, (unsigned long long)ri->first,
               (unsigned long long)ri->items, ri->items ? zap_verifier_name(ri->used) : "-", ri->verify_seconds,
               ri->verify_seconds > 0 ? ri->items / ri->verify_seconds : 0.0, ri->in_place_seconds,
               ri->peak_rss_kb / 1024.0);
    }
    char hex[65];
    for (int k = 0; k < 32; k++)
        snprintf(hex + 2 * k, 3, "%02x", r->digest[k]);
    printf("  digest (blake2b-256 of the verdict set): %s\n", hex);
    printf("  %s\n", s == ZAP_OK ? "all ranks agree" : "RANKS DISAGREE");
}

/* One rank's whole run: load (root), job, report (root). Returns an exit code. */
static int rank_main(run_ctx_t *c, zap_transport_t *t)
{
    opts_t *o = c->o;
    const int rank = zap_transport_rank(t);
    zap_comm_t *comm = NULL;
    zap_buf_t batch = {0};
    zap_status_t load = ZAP_OK;
    if (rank == o->vp.root)
        load = c->t ? load_watched(c, t, &batch) : load_batch(c, t, &batch);
    c->loaded(c);
    zap_status_t s = zap_comm_create(t, &comm);
    if (s != ZAP_OK) {
        fprintf(stderr, "zap-verify: rank %d: communicator: %s\n", rank, zap_status_string(s));
        c->peer_lost = s == ZAP_ERR_PEER_FAILED || s == ZAP_ERR_TIMED_OUT;
        zap_buf_free(&batch);
        return EXIT_ERROR;
    }
    /* A root that failed to load still takes part: it hands the job an empty
     * buffer, which the parse step refuses on every rank. */
    zap_verify_params_t vp = o->vp;
    progress_t prog;
    memset(&prog, 0, sizeof(prog));
    int show = rank == 0 && c->tty && !o->quiet;
    if (show) {
        uint64_t n = rank == o->vp.root && load == ZAP_OK && batch.size >= 24 ? zap_le64((uint8_t *)batch.ptr + 16) : 0;
        uint64_t f;
        zap_verify_shard(n, zap_transport_size(t), 0, &f, &prog.total);
        prog.t0 = now_s();
        vp.progress_items = &prog.done;
        show = pthread_create(&prog.tid, NULL, progress_main, &prog) == 0;
    }
    zap_verify_result_t r;
    memset(&r, 0, sizeof(r));
    s = zap_verify_job(comm, load == ZAP_OK ? batch.ptr : NULL, load == ZAP_OK ? batch.size : 0, &vp, &r);
    if (show) {
        prog.stop = 1;
        pthread_join(prog.tid, NULL);
    }
    int code = 0;
    if (s == ZAP_ERR_PEER_FAILED || s == ZAP_ERR_TIMED_OUT) {
        fprintf(stderr, "zap-verify: rank %d: the job failed: %s (the log line above names the rank)\n", rank,
                zap_status_string(s));
        c->peer_lost = 1;
        code = EXIT_ERROR;
    } else if (s != ZAP_OK && s != ZAP_ERR_MISMATCH) {
        if (rank == 0)
            fprintf(stderr, "zap-verify: the job failed: %s\n", zap_status_string(s));
        code = EXIT_ERROR;
    } else if (s == ZAP_ERR_MISMATCH && r.ranks) {
        code = EXIT_MISMATCH; /* the verdict sets differ */
    } else if (s == ZAP_ERR_MISMATCH) {
        if (rank == 0)
            fprintf(stderr, "zap-verify: the job failed: collective arguments differ across ranks\n");
        code = EXIT_ERROR;
    }
    if (rank == 0 && r.ranks) {
        if (!o->quiet)
            print_summary(c, &r, s);
        if (o->verdicts_out && write_verdicts(o->verdicts_out, o->indices, r.bitmap, r.n_items, r.batch_id))
            code = code ? code : EXIT_ERROR;
    }
    if (rank == o->vp.root && r.bitmap) {
        if (c->gen_expected && compare_bits("generator", c->gen_expected, r.bitmap, r.n_items))
            code = EXIT_MISMATCH;
        if (o->expect) {
            uint32_t *want = NULL;
            if (read_verdicts(o->expect, r.n_items, &want))
                code = code ? code : EXIT_ERROR;
            else if (compare_bits(o->expect, want, r.bitmap, r.n_items))
                code = EXIT_MISMATCH;
            free(want);
        }
    }
    fflush(stdout);
    zap_verify_result_cleanup(&r);
    zap_buf_free(&batch);
    /* The root generated it and alone reads it; under inproc every rank is a
     * thread sharing c, so another rank freeing it would race the root. */
    if (rank == o->vp.root) {
        free(c->gen_expected);
        c->gen_expected = NULL;
    }
    zap_comm_destroy(comm);
    return code;
}

typedef struct inproc_arg {
    run_ctx_t *c;
    zap_inproc_world_t *world;
    int rank;
} inproc_arg_t;

static void *inproc_rank(void *arg)
{
    inproc_arg_t *a = arg;
    zap_transport_t *t;
    if (zap_inproc_transport(a->world, a->rank, &t) != ZAP_OK)
        a->c->exit_code[a->rank] = EXIT_ERROR;
    else
        a->c->exit_code[a->rank] = rank_main(a->c, t);
    return NULL;
}

/* CPU threads per rank when nobody said: the cores shared by the ranks on
 * this host, so 4 ranks on 2 cores do not run 8 verifier threads. */
static unsigned default_threads(int local_ranks)
{
    if (getenv("ZAP_VERIFY_THREADS"))
        return 0;
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    if (cores < 1)
        cores = 1;
    long t = cores / (local_ranks > 0 ? local_ranks : 1);
    return t < 1 ? 1 : (unsigned)t;
}

static int cmd_run(opts_t *o, int *argc, char ***argv)
{
    if (!!o->batch == !!o->gen_given) {
        fprintf(stderr, "zap-verify run: give exactly one of --batch FILE or --gen N\n");
        return EXIT_USAGE;
    }
    run_ctx_t c;
    memset(&c, 0, sizeof(c));
    c.o = o;
    c.tty = isatty(STDERR_FILENO) && isatty(STDOUT_FILENO);
    if (o->inproc_ranks) {
        if (o->vp.root >= o->inproc_ranks) {
            fprintf(stderr, "zap-verify run: --root %d but only %d ranks\n", o->vp.root, o->inproc_ranks);
            return EXIT_USAGE;
        }
        if (!o->vp.threads)
            o->vp.threads = default_threads(o->inproc_ranks);
        c.transport_name = "inproc";
        c.loaded = loaded_inproc;
        pthread_barrier_init(&c.barrier, NULL, (unsigned)o->inproc_ranks);
        zap_inproc_world_t *world;
        zap_status_t s = zap_inproc_world_create(o->inproc_ranks, NULL, &world);
        if (s != ZAP_OK) {
            fprintf(stderr, "zap-verify: inproc world: %s\n", zap_status_string(s));
            return EXIT_ERROR;
        }
        pthread_t *tid = calloc((size_t)o->inproc_ranks, sizeof(pthread_t));
        inproc_arg_t *args = calloc((size_t)o->inproc_ranks, sizeof(inproc_arg_t));
        for (int r = 0; r < o->inproc_ranks; r++) {
            args[r] = (inproc_arg_t){&c, world, r};
            if (pthread_create(&tid[r], NULL, inproc_rank, &args[r]) != 0) {
                fprintf(stderr, "zap-verify: cannot start rank thread %d\n", r);
                exit(EXIT_ERROR); /* ranks already started wait at the load barrier */
            }
        }
        int code = 0;
        for (int r = 0; r < o->inproc_ranks; r++) {
            pthread_join(tid[r], NULL);
            if (c.exit_code[r] > code)
                code = c.exit_code[r];
        }
        free(tid);
        free(args);
        zap_inproc_world_destroy(world);
        pthread_barrier_destroy(&c.barrier);
        print_result(o, code);
        return code;
    }
    c.loaded = loaded_mpi;

    int provided;
    if (MPI_Init_thread(argc, argv, MPI_THREAD_SERIALIZED, &provided) != MPI_SUCCESS) {
        fprintf(stderr, "zap-verify: MPI_Init failed\n");
        return EXIT_ERROR;
    }
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (o->vp.root >= size) {
        if (rank == 0)
            fprintf(stderr, "zap-verify run: --root %d but only %d ranks\n", o->vp.root, size);
        MPI_Finalize();
        return EXIT_USAGE;
    }
    /* The ranks sharing this host, from MPI itself (any launcher): they split
     * the cores between them and each takes its own GPU. */
    MPI_Comm node;
    int local = 0, local_size = 1;
    MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, rank, MPI_INFO_NULL, &node);
    MPI_Comm_rank(node, &local);
    MPI_Comm_size(node, &local_size);
    MPI_Comm_free(&node);
    if (!o->vp.threads)
        o->vp.threads = default_threads(local_size);
    /* Open MPI binds each of 1 or 2 ranks to one core by default: the job's
     * threads (verifier, CRC, segment stream) then share that core. */
    cpu_set_t aff;
    if (sched_getaffinity(0, sizeof(aff), &aff) == 0 && CPU_COUNT(&aff) == 1 && sysconf(_SC_NPROCESSORS_ONLN) > 1 &&
        rank == 0)
        fprintf(stderr, "zap-verify: rank 0 is bound to one core; its verifier, CRC and transfer threads will share "
                        "it (mpirun --bind-to none or --bind-to socket gives them the host's cores)\n");
    if (!o->gen.threads)
        o->gen.threads = o->vp.threads * (unsigned)local_size;
    zap_log_set_rank(rank);
#ifdef ZAP_VERIFY_WITH_GPU
    int ndev = zap_ed25519_gpu_device_count();
    if (ndev > 0)
        (void)zap_ed25519_gpu_use_device(local % ndev);
#else
    (void)local;
#endif
    zap_transport_t *t = NULL;
    int code;
#ifdef ZAP_VERIFY_WITH_UCP
    c.transport_name = "ucp";
    zap_status_t s = zap_ucp_transport_create(MPI_COMM_WORLD, NULL, &t);
    if (s != ZAP_OK) {
        fprintf(stderr, "zap-verify: rank %d: UCX transport: %s\n", rank, zap_status_string(s));
        MPI_Finalize();
        return EXIT_ERROR;
    }
    c.t = t;
    code = rank_main(&c, t);
    if (c.peer_lost) {
        /* A barrier with a dead rank would only wait: leave without MPI.
         * Not MPI_Abort: that kills the other survivors before they report
         * their own error; mpirun ends the job anyway unless it runs with
         * --enable-recovery, which is what the kill trials check. */
        fflush(NULL);
        _exit(code);
    }
    /* Close only once every rank is done with the transport, so no rank sees
     * a peer's endpoint vanish mid-flight; a dead rank ends the job here. */
    MPI_Request done_req;
    MPI_Ibarrier(MPI_COMM_WORLD, &done_req);
    wait_or_abort(&done_req, "the end-of-job barrier", rank);
    zap_transport_close(t);
#else
    /* Built without the UCX transport: one rank only, over inproc. */
    zap_inproc_world_t *world = NULL;
    c.transport_name = "inproc (no UCX transport in this build)";
    if (size != 1) {
        if (rank == 0)
            fprintf(stderr, "zap-verify: this build has no UCX transport; run one rank or use --inproc-ranks\n");
        MPI_Finalize();
        return EXIT_ERROR;
    }
    if (zap_inproc_world_create(1, NULL, &world) != ZAP_OK || zap_inproc_transport(world, 0, &t) != ZAP_OK)
        code = EXIT_ERROR;
    else
        code = rank_main(&c, t);
    zap_inproc_world_destroy(world);
#endif
    /* Every rank leaves with the worst exit code, so mpirun's status and each
     * rank's agree. */
    int worst = code;
    MPI_Request worst_req;
    MPI_Iallreduce(&code, &worst, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD, &worst_req);
    wait_or_abort(&worst_req, "the exit-status agreement", rank);
    if (rank == 0)
        print_result(o, worst);
    MPI_Finalize();
    return worst;
}

/* ---- bench ----
 * In one process: for each batch size, libsodium on one thread (over a
 * prefix of at most 2^14 items, to bound the time), the CPU verifier on all
 * cores, and the job over the inproc transport for each rank count, with
 * its phase split. Per-rank memory needs separate processes: `run` under
 * mpirun prints it (docs/performance.md). */

static double cpu_s(clockid_t id)
{
    struct timespec ts;
    clock_gettime(id, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

typedef struct bench_rank {
    zap_inproc_world_t *world;
    int rank;
    const uint8_t *batch;
    size_t len;
    zap_verify_params_t vp;
    zap_status_t status;
    zap_verify_result_t res;
} bench_rank_t;

static void *bench_rank_main(void *arg)
{
    bench_rank_t *b = arg;
    zap_transport_t *t;
    zap_comm_t *comm;
    b->status = zap_inproc_transport(b->world, b->rank, &t);
    if (b->status == ZAP_OK)
        b->status = zap_comm_create(t, &comm);
    if (b->status != ZAP_OK)
        return NULL;
    b->status = zap_verify_job(comm, b->batch, b->len, &b->vp, &b->res);
    zap_comm_destroy(comm);
    return NULL;
}

static int cmd_bench(opts_t *o)
{
    int ranks[16], nr = 0;
    for (char *tok = strtok(o->ranks_list, ","); tok && nr < 16; tok = strtok(NULL, ",")) {
        ranks[nr] = atoi(tok);
        if (ranks[nr] < 1 || ranks[nr] > 64) {
            fprintf(stderr, "zap-verify bench: bad rank count '%s'\n", tok);
            return EXIT_USAGE;
        }
        nr++;
    }
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    printf("zap-verify bench: %ld cores, %u keys, invalid fraction %.2f, %s messages, CPU verifier\n", cores,
           o->gen.keys, o->gen.invalid_fraction, o->gen.variable ? "variable" : "32-byte");
    printf("| n | libsodium 1 thread items/s | CPU verifier %ld threads items/s | ranks (inproc) | distribute s | "
           "verify s | combine s | agree s | job items/s | job items/CPU-s |\n",
           cores);
    printf("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n");
    int code = 0;
    for (int lg = 10; lg <= o->max_log2; lg += 2) {
        zap_gen_params_t g = o->gen;
        g.items = 1ull << lg;
        g.threads = 0;
        zap_batch_layout_t l;
        if (zap_gen_layout(&g, &l) != ZAP_OK)
            return EXIT_ERROR;
        uint8_t *buf = malloc(l.total_bytes);
        uint32_t *exp = malloc((g.items / 32 + 1) * 4), *bm = malloc((g.items / 32 + 1) * 4);
        if (!buf || !exp || !bm || zap_gen_batch(&g, buf, l.total_bytes, exp, NULL) != ZAP_OK)
            return EXIT_ERROR;
        zap_batch_view_t v;
        if (zap_batch_parse(buf, l.total_bytes, 0, &v, NULL, NULL, 0) != ZAP_OK)
            return EXIT_ERROR;
        zap_verify_params_t p;
        memset(&p, 0, sizeof(p));
        p.verifier = ZAP_VERIFIER_CPU;
        p.threads = 1;
        zap_batch_view_t pre = v;
        pre.n_items = v.n_items < (1u << 14) ? v.n_items : (1u << 14);
        zap_verify_stats_t s1, sa;
        /* threads = 1 runs on this thread, so its CPU clock is the verifier's
         * CPU time, which other processes on a shared machine do not inflate. */
        double c0 = cpu_s(CLOCK_THREAD_CPUTIME_ID);
        zap_verify_batch(&pre, &p, bm, NULL, &s1);
        double c1 = cpu_s(CLOCK_THREAD_CPUTIME_ID) - c0;
        p.threads = (unsigned)cores;
        zap_verify_batch(&v, &p, bm, NULL, &sa);
        if (memcmp(bm, exp, (size_t)(g.items / 32) * 4) != 0) {
            fprintf(stderr, "zap-verify bench: CPU verdicts differ from the generator at n %llu\n",
                    (unsigned long long)g.items);
            code = EXIT_MISMATCH;
        }
        for (int k = 0; k < nr; k++) {
            int R = ranks[k];
            zap_inproc_world_t *world;
            if (zap_inproc_world_create(R, NULL, &world) != ZAP_OK)
                return EXIT_ERROR;
            bench_rank_t *br = calloc((size_t)R, sizeof(*br));
            pthread_t *tid = calloc((size_t)R, sizeof(*tid));
            double p0 = cpu_s(CLOCK_PROCESS_CPUTIME_ID);
            for (int r = 0; r < R; r++) {
                br[r].world = world;
                br[r].rank = r;
                br[r].batch = buf;
                br[r].len = l.total_bytes;
                br[r].vp = o->vp;
                br[r].vp.verifier = o->vp.verifier ? o->vp.verifier : ZAP_VERIFIER_CPU;
                br[r].vp.threads = o->vp.threads ? o->vp.threads : default_threads(R);
                pthread_create(&tid[r], NULL, bench_rank_main, &br[r]);
            }
            for (int r = 0; r < R; r++)
                pthread_join(tid[r], NULL);
            double pcpu = cpu_s(CLOCK_PROCESS_CPUTIME_ID) - p0;
            zap_verify_result_t *res = &br[0].res;
            double job = res->distribute_seconds + res->verify_seconds + res->combine_seconds + res->agree_seconds;
            if (br[0].status != ZAP_OK || memcmp(res->bitmap, exp, (size_t)(g.items / 32) * 4) != 0) {
                fprintf(stderr, "zap-verify bench: job on %d ranks: %s\n", R, zap_status_string(br[0].status));
                code = EXIT_MISMATCH;
            }
            printf("| 2^%d | %.0f (%.0f/CPU-s) | %.0f | %d | %.4f | %.3f | %.4f | %.4f | %.0f | %.0f |\n", lg,
                   s1.seconds > 0 ? pre.n_items / s1.seconds : 0.0, c1 > 0 ? pre.n_items / c1 : 0.0,
                   sa.seconds > 0 ? g.items / sa.seconds : 0.0, R, res->distribute_seconds, res->verify_seconds,
                   res->combine_seconds, res->agree_seconds, job > 0 ? g.items / job : 0.0,
                   pcpu > 0 ? g.items / pcpu : 0.0);
            fflush(stdout);
            for (int r = 0; r < R; r++)
                zap_verify_result_cleanup(&br[r].res);
            free(br);
            free(tid);
            zap_inproc_world_destroy(world);
        }
        free(buf);
        free(exp);
        free(bm);
    }
    return code;
}

static int cmd_bench(opts_t *o);

int main(int argc, char **argv)
{
    if (argc < 2 || !strcmp(argv[1], "--help") || !strcmp(argv[1], "-h")) {
        usage(argc < 2 ? stderr : stdout);
        return argc < 2 ? EXIT_USAGE : 0;
    }
    opts_t o;
    memset(&o, 0, sizeof(o));
    gen_defaults(&o);
    o.max_log2 = 18;
    snprintf(o.ranks_list, sizeof(o.ranks_list), "1,2,4");
    if (parse_opts(argc, argv, &o))
        return EXIT_USAGE;
    if (zap_config_check(NULL) != ZAP_OK)
        return EXIT_USAGE;
    if (!strcmp(argv[1], "gen"))
        return cmd_gen(&o);
    if (!strcmp(argv[1], "run"))
        return cmd_run(&o, &argc, &argv);
    if (!strcmp(argv[1], "bench"))
        return cmd_bench(&o);
    fprintf(stderr, "zap-verify: unknown command '%s'\n", argv[1]);
    usage(stderr);
    return EXIT_USAGE;
}

