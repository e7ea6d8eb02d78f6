/* One rank of zap-verify run (zv_run.h): the root loads the batch, every
 * rank runs the job, rank 0 prints the summary and the root compares the
 * verdicts with the expected ones. */
#include "zv_run.h"
#include "base/le.h"
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* The progress line of rank 0 on a terminal (stderr). */
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
                zv_now() - p->t0);
    }
    fprintf(stderr, "\r%80s\r", "");
    return NULL;
}

void zv_print_result(const zv_opts_t *o, int code)
{
    if (!o->quiet)
        printf("result: %s\n", code == 0 ? "OK" : code == ZV_EXIT_MISMATCH ? "MISMATCH" : "ERROR");
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

static void print_ranks(const zap_verify_result_t *r)
{
    printf("  rank       first      items  verifier  verify s     items/s  in place s  peak RSS MiB\n");
    for (int q = 0; q < r->nranks; q++) {
        const zap_verify_rank_info_t *ri = &r->ranks[q];
        printf("  %4d  %10llu %10llu  %-8s  %8.3f  %10.0f  %10.3f  %12.1f\n", q, (unsigned long long)ri->first,
               (unsigned long long)ri->items, ri->items ? zap_verifier_name(ri->used) : "-", ri->verify_seconds,
               ri->verify_seconds > 0 ? ri->items / ri->verify_seconds : 0.0, ri->in_place_seconds,
               ri->peak_rss_kb / 1024.0);
    }
}

static void print_summary(const zv_run_ctx_t *c, const zap_verify_result_t *r, zap_status_t s)
{
    const zv_opts_t *o = c->o;
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
    printf("  %-15s %9.3f   %.0f items/s (distribute to agree)\n", "job", job, job > 0 ? r->n_items / job : 0.0);
    print_ranks(r);
    char hex[65];
    for (int k = 0; k < 32; k++)
        snprintf(hex + 2 * k, 3, "%02x", r->digest[k]);
    printf("  digest (blake2b-256 of the verdict set): %s\n", hex);
    printf("  %s\n", s == ZAP_OK ? "all ranks agree" : "RANKS DISAGREE");
}

/* The exit code of the job's status on this rank (its message on stderr). */
static int job_code(zv_run_ctx_t *c, int rank, zap_status_t s, const zap_verify_result_t *r)
{
    if (s == ZAP_ERR_PEER_FAILED || s == ZAP_ERR_TIMED_OUT) {
        fprintf(stderr, "zap-verify: rank %d: the job failed: %s (the log line above names the rank)\n", rank,
                zap_status_string(s));
        c->peer_lost = 1;
        return ZV_EXIT_ERROR;
    }
    if (s != ZAP_OK && s != ZAP_ERR_MISMATCH) {
        if (rank == 0)
            fprintf(stderr, "zap-verify: the job failed: %s\n", zap_status_string(s));
        return ZV_EXIT_ERROR;
    }
    if (s == ZAP_ERR_MISMATCH && r->ranks)
        return ZV_EXIT_MISMATCH; /* the verdict sets differ */
    if (s == ZAP_ERR_MISMATCH) {
        if (rank == 0)
            fprintf(stderr, "zap-verify: the job failed: collective arguments differ across ranks\n");
        return ZV_EXIT_ERROR;
    }
    return 0;
}

/* The root's comparisons with the generator's and --expect's verdicts. */
static int compare_expected(const zv_run_ctx_t *c, const zap_verify_result_t *r, int code)
{
    if (c->gen_expected && compare_bits("generator", c->gen_expected, r->bitmap, r->n_items))
        code = ZV_EXIT_MISMATCH;
    if (c->o->expect) {
        uint32_t *want = NULL;
        if (zv_read_verdicts(c->o->expect, r->n_items, &want))
            code = code ? code : ZV_EXIT_ERROR;
        else if (compare_bits(c->o->expect, want, r->bitmap, r->n_items))
            code = ZV_EXIT_MISMATCH;
        free(want);
    }
    return code;
}

/* Runs the job, with rank 0's progress line on a terminal. */
static zap_status_t run_job(zv_run_ctx_t *c, zap_comm_t *comm, int rank, int size, const zap_buf_t *batch,
                            zap_status_t load, zap_verify_result_t *r)
{
    const zv_opts_t *o = c->o;
    zap_verify_params_t vp = o->vp;
    progress_t prog;
    memset(&prog, 0, sizeof(prog));
    int show = rank == 0 && c->tty && !o->quiet;
    if (show) {
        uint64_t n = rank == o->vp.root && load == ZAP_OK && batch->size >= 24
                         ? zap_get_le64((const uint8_t *)batch->ptr + 16)
                         : 0;
        uint64_t f;
        zap_verify_shard(n, size, 0, &f, &prog.total);
        prog.t0 = zv_now();
        vp.progress_items = &prog.done;
        show = pthread_create(&prog.tid, NULL, progress_main, &prog) == 0;
    }
    /* A root that failed to load still takes part: it hands the job an empty
     * buffer, which the parse step refuses on every rank. */
    zap_status_t s = zap_verify_job(comm, load == ZAP_OK ? batch->ptr : NULL, load == ZAP_OK ? batch->size : 0,
                                    &vp, r);
    if (show) {
        prog.stop = 1;
        pthread_join(prog.tid, NULL);
    }
    return s;
}

int zv_rank_main(zv_run_ctx_t *c, zap_transport_t *t)
{
    zv_opts_t *o = c->o;
    const int rank = zap_transport_rank(t);
    zap_comm_t *comm = NULL;
    zap_buf_t batch = {0};
    zap_status_t load = ZAP_OK;
    if (rank == o->vp.root)
        load = c->t ? zv_load_watched(c, t, &batch) : zv_load(c, t, &batch);
    c->loaded(c);
    zap_status_t s = zap_comm_create(t, &comm);
    if (s != ZAP_OK) {
        fprintf(stderr, "zap-verify: rank %d: communicator: %s\n", rank, zap_status_string(s));
        c->peer_lost = s == ZAP_ERR_PEER_FAILED || s == ZAP_ERR_TIMED_OUT;
        zap_buf_free(&batch);
        return ZV_EXIT_ERROR;
    }
    zap_verify_result_t r;
    memset(&r, 0, sizeof(r));
    s = run_job(c, comm, rank, zap_transport_size(t), &batch, load, &r);
    int code = job_code(c, rank, s, &r);
    if (rank == 0 && r.ranks) {
        if (!o->quiet)
            print_summary(c, &r, s);
        if (o->verdicts_out && zv_write_verdicts(o->verdicts_out, o->indices, r.bitmap, r.n_items, r.batch_id))
            code = code ? code : ZV_EXIT_ERROR;
    }
    if (rank == o->vp.root && r.bitmap)
        code = compare_expected(c, &r, code);
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
