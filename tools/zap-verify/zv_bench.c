/* zap-verify bench: in one process, for each batch size, libsodium on one
 * thread (over a prefix of at most 2^14 items, to bound the time), the CPU
 * verifier on all cores, and the job over the inproc transport for each rank
 * count, with its phase split. Per-rank memory needs separate processes:
 * `run` under mpirun prints it (docs/performance.md). */
#include "zv.h"
#include "zap/inproc.h"
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

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

/* One batch of the sweep, made and parsed. */
typedef struct bench_batch {
    zap_gen_params_t g;
    uint8_t *buf;
    uint64_t len;
    uint32_t *exp, *bm;
    zap_batch_view_t v;
} bench_batch_t;

static int batch_make(const zv_opts_t *o, int lg, bench_batch_t *b)
{
    memset(b, 0, sizeof(*b));
    b->g = o->gen;
    b->g.items = 1ull << lg;
    b->g.threads = 0;
    zap_batch_layout_t l;
    if (zap_gen_layout(&b->g, &l) != ZAP_OK)
        return -1;
    b->len = l.total_bytes;
    b->buf = malloc(l.total_bytes);
    b->exp = malloc((b->g.items / 32 + 1) * 4);
    b->bm = malloc((b->g.items / 32 + 1) * 4);
    if (!b->buf || !b->exp || !b->bm || zap_gen_batch(&b->g, b->buf, l.total_bytes, b->exp, NULL) != ZAP_OK)
        return -1;
    return zap_batch_parse(b->buf, l.total_bytes, 0, &b->v, NULL, NULL, 0) == ZAP_OK ? 0 : -1;
}

static void batch_free(bench_batch_t *b)
{
    free(b->buf);
    free(b->exp);
    free(b->bm);
}

/* The job on R inproc ranks over batch b; prints its row. The exit code. */
static int bench_job(const zv_opts_t *o, const bench_batch_t *b, int R, const char *cpu_cols)
{
    zap_inproc_world_t *world;
    if (zap_inproc_world_create(R, NULL, &world) != ZAP_OK)
        return ZV_EXIT_ERROR;
    bench_rank_t *br = calloc((size_t)R, sizeof(*br));
    pthread_t *tid = calloc((size_t)R, sizeof(*tid));
    if (!br || !tid) {
        free(br);
        free(tid);
        zap_inproc_world_destroy(world);
        return ZV_EXIT_ERROR;
    }
    double p0 = cpu_s(CLOCK_PROCESS_CPUTIME_ID);
    for (int r = 0; r < R; r++) {
        br[r] = (bench_rank_t){.world = world, .rank = r, .batch = b->buf, .len = b->len, .vp = o->vp};
        br[r].vp.verifier = o->vp.verifier ? o->vp.verifier : ZAP_VERIFIER_CPU;
        br[r].vp.threads = o->vp.threads ? o->vp.threads : zv_default_threads(R);
        pthread_create(&tid[r], NULL, bench_rank_main, &br[r]);
    }
    for (int r = 0; r < R; r++)
        pthread_join(tid[r], NULL);
    double pcpu = cpu_s(CLOCK_PROCESS_CPUTIME_ID) - p0;
    const zap_verify_result_t *res = &br[0].res;
    const uint64_t n = b->g.items;
    double job = res->distribute_seconds + res->verify_seconds + res->combine_seconds + res->agree_seconds;
    int code = 0;
    if (br[0].status != ZAP_OK || memcmp(res->bitmap, b->exp, (size_t)(n / 32) * 4) != 0) {
        fprintf(stderr, "zap-verify bench: job on %d ranks: %s\n", R, zap_status_string(br[0].status));
        code = ZV_EXIT_MISMATCH;
    }
    printf("%s | %d | %.4f | %.3f | %.4f | %.4f | %.0f | %.0f |\n", cpu_cols, R, res->distribute_seconds,
           res->verify_seconds, res->combine_seconds, res->agree_seconds, job > 0 ? n / job : 0.0,
           pcpu > 0 ? n / pcpu : 0.0);
    fflush(stdout);
    for (int r = 0; r < R; r++)
        zap_verify_result_cleanup(&br[r].res);
    free(br);
    free(tid);
    zap_inproc_world_destroy(world);
    return code;
}

/* The CPU columns of batch size 2^lg: libsodium on this thread, the CPU
 * verifier on every core. */
static int bench_cpu(bench_batch_t *b, int lg, long cores, char *cols, size_t cap)
{
    zap_verify_params_t p;
    memset(&p, 0, sizeof(p));
    p.verifier = ZAP_VERIFIER_CPU;
    p.threads = 1;
    zap_batch_view_t pre = b->v;
    pre.n_items = b->v.n_items < (1u << 14) ? b->v.n_items : (1u << 14);
    zap_verify_stats_t s1, sa;
    /* threads = 1 runs on this thread, so its CPU clock is the verifier's
     * CPU time, which other processes on a shared machine do not inflate. */
    double c0 = cpu_s(CLOCK_THREAD_CPUTIME_ID);
    zap_verify_batch(&pre, &p, b->bm, NULL, &s1);
    double c1 = cpu_s(CLOCK_THREAD_CPUTIME_ID) - c0;
    p.threads = (unsigned)cores;
    zap_verify_batch(&b->v, &p, b->bm, NULL, &sa);
    snprintf(cols, cap, "| 2^%d | %.0f (%.0f/CPU-s) | %.0f", lg, s1.seconds > 0 ? pre.n_items / s1.seconds : 0.0,
             c1 > 0 ? pre.n_items / c1 : 0.0, sa.seconds > 0 ? b->g.items / sa.seconds : 0.0);
    if (memcmp(b->bm, b->exp, (size_t)(b->g.items / 32) * 4) != 0) {
        fprintf(stderr, "zap-verify bench: CPU verdicts differ from the generator at n %llu\n",
                (unsigned long long)b->g.items);
        return ZV_EXIT_MISMATCH;
    }
    return 0;
}

int zv_bench_main(zv_opts_t *o)
{
    static const int segment[] = {ZV_O_SEGMENT};
    if (o->vp.mode == ZAP_VERIFY_BCAST &&
        zv_refuse(o, segment, 1, "applies to --mode scatter (a broadcast sends the batch whole)"))
        return ZV_EXIT_USAGE;
    for (int k = 0; k < o->nranks; k++)
        if (o->vp.root >= o->ranks[k]) {
            fprintf(stderr, "zap-verify bench: --root %d but --ranks includes %d\n", o->vp.root, o->ranks[k]);
            return ZV_EXIT_USAGE;
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
        bench_batch_t b;
        if (batch_make(o, lg, &b) != 0) {
            batch_free(&b);
            return ZV_EXIT_ERROR;
        }
        char cols[128];
        int c = bench_cpu(&b, lg, cores, cols, sizeof(cols));
        code = c ? c : code;
        for (int k = 0; k < o->nranks && code != ZV_EXIT_ERROR; k++)
            if ((c = bench_job(o, &b, o->ranks[k], cols)) != 0)
                code = c;
        batch_free(&b);
        if (code == ZV_EXIT_ERROR)
            return code;
    }
    return code;
}
