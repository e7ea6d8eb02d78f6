/* Verifying the items of one batch view on this process: the CPU verifier
 * (libsodium 1.0.18's crypto_sign_verify_detached on a team of pthreads) and
 * the choice between it and the GPU kernel (cuda/ed25519).
 *
 * CPU work is handed out in chunks of ZAP_CPU_CHUNK items, a multiple of 32,
 * through one atomic counter, so each bitmap word is written by exactly one
 * thread and no locking is needed; a chunk of 1024 items is ~60 ms of work,
 * small enough to balance and large enough that the counter is not contended.
 *
 * Both verifiers apply libsodium 1.0.18's rule (the GPU kernel is tested
 * bit-exact against it), so the verdict of an item never depends on which one
 * ran it. */
#include "verify/verify_impl.h"
#include "base/config_table.h"
#include "base/log.h"
#ifdef ZAP_VERIFY_HAVE_GPU_LAYER
#include "ed25519_gpu.h"
#else
/* Built without cuda/ed25519 (a development build that skips it): no GPU. */
static int zap_ed25519_gpu_available(void) { return 0; }
static zap_status_t zap_ed25519_gpu_prepare(uint64_t n)
{
    (void)n;
    return ZAP_ERR_UNSUPPORTED;
}
static zap_status_t zap_ed25519_gpu_verify(const void *records, size_t stride, uint64_t n, int variable_msgs,
                                           const void *blob, uint64_t blob_len, uint8_t *verdicts,
                                           uint32_t *bitmap, void *stats)
{
    (void)records, (void)stride, (void)n, (void)variable_msgs, (void)blob, (void)blob_len, (void)verdicts;
    (void)bitmap, (void)stats;
    return ZAP_ERR_UNSUPPORTED;
}
#endif
#include <sodium.h>
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#define ZAP_CPU_CHUNK 1024u
#define ZAP_MAX_THREADS 1024u

static pthread_once_t sodium_once = PTHREAD_ONCE_INIT;
static int sodium_ok;
static void sodium_setup(void) { sodium_ok = sodium_init() >= 0; }

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

const char *zap_verifier_name(zap_verifier_t v)
{
    switch (v) {
    case ZAP_VERIFIER_DEFAULT: return "default";
    case ZAP_VERIFIER_AUTO: return "auto";
    case ZAP_VERIFIER_CPU: return "cpu";
    case ZAP_VERIFIER_GPU: return "gpu";
    default: return "unknown";
    }
}

int zap_verify_ed25519_one(const uint8_t pk[32], const uint8_t sig[64], const uint8_t *msg, uint64_t msg_len)
{
    pthread_once(&sodium_once, sodium_setup);
    return crypto_sign_verify_detached(sig, msg, (unsigned long long)msg_len, pk) == 0;
}

zap_status_t zap_verify_shard(uint64_t n, int nranks, int rank, uint64_t *first_p, uint64_t *count_p)
{
    if (nranks <= 0 || rank < 0 || rank >= nranks || !first_p || !count_p) {
        zap_error("verify: shard: rank %d of %d is out of range", rank, nranks);
        return ZAP_ERR_INVALID_PARAM;
    }
    /* floor(n * r / R) without overflow: n = q R + s, so n r / R = q r + s r / R. */
    uint64_t R = (uint64_t)nranks, q = n / R, s = n % R;
    uint64_t lo = q * (uint64_t)rank + s * (uint64_t)rank / R;
    uint64_t hi = q * (uint64_t)(rank + 1) + s * (uint64_t)(rank + 1) / R;
    lo &= ~(uint64_t)31;
    hi = rank == nranks - 1 ? n : hi & ~(uint64_t)31;
    *first_p = lo;
    *count_p = hi - lo;
    return ZAP_OK;
}

uint64_t zap_verify_peak_rss_kb(void)
{
    FILE *f = fopen("/proc/self/status", "r");
    if (!f)
        return 0;
    char line[256];
    unsigned long long kb = 0;
    while (fgets(line, sizeof(line), f))
        if (sscanf(line, "VmHWM: %llu kB", &kb) == 1)
            break;
    fclose(f);
    return kb;
}

/* The calling thread's cancel flag (the job's peer watch, watch.c). */
static _Thread_local const int *tl_cancel;

void zap_verify_set_cancel(const int *flag)
{
    tl_cancel = flag;
}

int zap_verify_canceled(void)
{
    return tl_cancel && __atomic_load_n(tl_cancel, __ATOMIC_ACQUIRE);
}

/* ---- CPU ---- */

typedef struct cpu_job {
    const zap_batch_view_t *view;
    uint32_t *bitmap;
    uint8_t *verdicts;
    uint64_t *progress;
    const int *cancel; /* zap_verify_set_cancel; NULL: none */
    atomic_uint_fast64_t next;
    atomic_uint_fast64_t invalid, malformed;
} cpu_job_t;

/* Verdict of item i: 1 valid, 0 invalid, 2 malformed. */
static int cpu_item(const zap_batch_view_t *v, uint64_t i)
{
    const uint8_t *rec = v->records + i * v->stride;
    const uint8_t *msg;
    uint64_t mlen;
    if (v->flags & ZAP_BATCH_FLAG_FIXED_MSG) {
        msg = rec + ZAP_REC_MSG;
        mlen = 32;
    } else {
        uint64_t off = zap_get_le32(rec + ZAP_REC_MSG_OFF), len = zap_get_le32(rec + ZAP_REC_MSG_LEN);
        if (off > v->blob_len || len > v->blob_len - off)
            return 2;
        msg = v->blob ? v->blob + off : rec; /* len is 0 when there is no blob */
        mlen = len;
    }
    return crypto_sign_verify_detached(rec + ZAP_REC_SIG, msg, (unsigned long long)mlen, rec + ZAP_REC_PK) == 0;
}

static void *cpu_worker(void *arg)
{
    cpu_job_t *j = arg;
    const uint64_t n = j->view->n_items;
    uint64_t invalid = 0, malformed = 0;
    for (;;) {
        if (j->cancel && __atomic_load_n(j->cancel, __ATOMIC_RELAXED))
            break; /* a chunk is ~ms: the check costs nothing */
        uint64_t lo = atomic_fetch_add(&j->next, ZAP_CPU_CHUNK);
        if (lo >= n)
            break;
        uint64_t hi = lo + ZAP_CPU_CHUNK < n ? lo + ZAP_CPU_CHUNK : n;
        for (uint64_t w = lo; w < hi; w += 32) {
            uint32_t word = 0;
            uint64_t end = w + 32 < hi ? w + 32 : hi;
            for (uint64_t i = w; i < end; i++) {
                int verdict = cpu_item(j->view, i);
                if (j->verdicts)
                    j->verdicts[i] = (uint8_t)verdict;
                if (verdict == 1)
                    word |= 1u << (i - w);
                else
                    invalid++;
                malformed += verdict == 2;
            }
            j->bitmap[w / 32] = word;
        }
        if (j->progress)
            __atomic_fetch_add(j->progress, hi - lo, __ATOMIC_RELAXED);
    }
    atomic_fetch_add(&j->invalid, invalid);
    atomic_fetch_add(&j->malformed, malformed);
    return NULL;
}

static unsigned cpu_threads(unsigned asked, uint64_t n)
{
    unsigned t = asked;
    if (t == 0) {
        long c = sysconf(_SC_NPROCESSORS_ONLN);
        t = c > 0 ? (unsigned)c : 1;
    }
    if (t > ZAP_MAX_THREADS)
        t = ZAP_MAX_THREADS;
    uint64_t chunks = (n + ZAP_CPU_CHUNK - 1) / ZAP_CPU_CHUNK;
    if (chunks < t)
        t = chunks ? (unsigned)chunks : 1;
    return t;
}

static zap_status_t verify_cpu(const zap_batch_view_t *view, unsigned threads, uint64_t *progress,
                               uint32_t *bitmap, uint8_t *verdicts, zap_verify_stats_t *st)
{
    cpu_job_t j;
    j.view = view;
    j.progress = progress;
    j.bitmap = bitmap;
    j.verdicts = verdicts;
    j.cancel = tl_cancel;
    atomic_init(&j.next, 0);
    atomic_init(&j.invalid, 0);
    atomic_init(&j.malformed, 0);
    unsigned t = cpu_threads(threads, view->n_items);
    pthread_t tids[ZAP_MAX_THREADS];
    unsigned started = 0;
    for (; started + 1 < t; started++) {
        int rc = pthread_create(&tids[started], NULL, cpu_worker, &j);
        if (rc != 0) {
            zap_warn("verify: cpu: could not start thread %u of %u (%s); continuing with %u", started + 2, t,
                     strerror(rc), started + 1);
            break;
        }
    }
    cpu_worker(&j); /* the calling thread works too */
    for (unsigned i = 0; i < started; i++)
        pthread_join(tids[i], NULL);
    st->invalid = atomic_load(&j.invalid);
    st->malformed = atomic_load(&j.malformed);
    st->threads = started + 1;
    return zap_verify_canceled() ? ZAP_ERR_CANCELED : ZAP_OK;
}

/* ---- GPU ---- */

static zap_status_t verify_gpu(const zap_batch_view_t *view, uint32_t *bitmap, uint8_t *verdicts,
                               zap_verify_stats_t *st)
{
    uint8_t *v = verdicts;
    if (!v && !(v = malloc(view->n_items ? view->n_items : 1))) {
        zap_error("verify: gpu: no memory for %llu verdict bytes", (unsigned long long)view->n_items);
        return ZAP_ERR_NO_MEMORY;
    }
    zap_status_t s = zap_ed25519_gpu_verify(view->records, view->stride, view->n_items,
                                            !(view->flags & ZAP_BATCH_FLAG_FIXED_MSG), view->blob, view->blob_len,
                                            v, bitmap, NULL);
    if (s == ZAP_OK) {
        uint64_t invalid = 0, malformed = 0;
        for (uint64_t i = 0; i < view->n_items; i++) {
            invalid += v[i] != 1;
            malformed += v[i] == 2;
        }
        st->invalid = invalid;
        st->malformed = malformed;
        st->threads = 0;
    }
    if (v != verdicts)
        free(v);
    return s;
}

static zap_status_t resolve_verifier(const zap_verify_params_t *params, zap_verifier_t *v_p, unsigned *threads_p)
{
    zap_verifier_t v = params ? params->verifier : ZAP_VERIFIER_DEFAULT;
    if (v == ZAP_VERIFIER_DEFAULT) {
        int idx;
        zap_status_t s = zap_cfg_get_choice(ZAP_CFG_VERIFIER, &idx);
        if (s != ZAP_OK)
            return s;
        v = idx == 0 ? ZAP_VERIFIER_AUTO : idx == 1 ? ZAP_VERIFIER_CPU : ZAP_VERIFIER_GPU;
    }
    if (v < ZAP_VERIFIER_AUTO || v > ZAP_VERIFIER_GPU) {
        zap_error("verify: verifier %d is not auto, cpu or gpu", (int)v);
        return ZAP_ERR_INVALID_PARAM;
    }
    unsigned t = params ? params->threads : 0;
    if (t == 0) {
        uint64_t u;
        zap_status_t s = zap_cfg_get_u64(ZAP_CFG_VERIFY_THREADS, &u);
        if (s != ZAP_OK)
            return s;
        t = (unsigned)u;
    }
    *v_p = v;
    *threads_p = t;
    return ZAP_OK;
}

int zap_verify_gpu_planned(const zap_verify_params_t *params, uint64_t shard_items)
{
    zap_verifier_t v;
    unsigned threads;
    if (shard_items == 0 || resolve_verifier(params, &v, &threads) != ZAP_OK || v == ZAP_VERIFIER_CPU)
        return 0;
    if (v == ZAP_VERIFIER_AUTO) {
        uint64_t min_items;
        if (zap_cfg_get_u64(ZAP_CFG_GPU_MIN_ITEMS, &min_items) != ZAP_OK || shard_items < min_items)
            return 0;
    }
    return zap_ed25519_gpu_available();
}

void zap_verify_gpu_prepare(uint64_t items)
{
    (void)zap_ed25519_gpu_prepare(items);
}

zap_status_t zap_verify_batch(const zap_batch_view_t *view, const zap_verify_params_t *params, uint32_t *bitmap,
                              uint8_t *verdicts, zap_verify_stats_t *stats_p)
{
    return zap_verify_piece(view, params, view ? view->n_items : 0, bitmap, verdicts, stats_p);
}

zap_status_t zap_verify_piece(const zap_batch_view_t *view, const zap_verify_params_t *params, uint64_t shard_items,
                              uint32_t *bitmap, uint8_t *verdicts, zap_verify_stats_t *stats_p)
{
    if (!view || (view->n_items && (!bitmap || !view->records))) {
        zap_error("verify: NULL %s", !view ? "view" : "bitmap or records");
        return ZAP_ERR_INVALID_PARAM;
    }
    if (view->scheme != ZAP_SCHEME_ED25519_LIBSODIUM_1_0_18) {
        zap_error("verify: scheme %u is not supported (only 1, ed25519-libsodium-1.0.18)", view->scheme);
        return ZAP_ERR_UNSUPPORTED;
    }
    zap_verifier_t v;
    unsigned threads;
    zap_status_t s = resolve_verifier(params, &v, &threads);
    if (s != ZAP_OK)
        return s;
    pthread_once(&sodium_once, sodium_setup);
    if (!sodium_ok) {
        zap_error("verify: sodium_init failed");
        return ZAP_ERR_UNSUPPORTED;
    }
    if (zap_verify_canceled())
        return ZAP_ERR_CANCELED; /* GPU calls are bounded (~0.3 s): checked between them */
    int gpu = 0;
    if (v == ZAP_VERIFIER_GPU) {
        if (!zap_ed25519_gpu_available()) {
            zap_error("verify: verifier gpu asked for, but no CUDA device is usable (or zap was built without CUDA)");
            return ZAP_ERR_UNSUPPORTED;
        }
        gpu = 1;
    } else if (v == ZAP_VERIFIER_AUTO && view->n_items > 0) {
        uint64_t min_items;
        s = zap_cfg_get_u64(ZAP_CFG_GPU_MIN_ITEMS, &min_items);
        if (s != ZAP_OK)
            return s;
        gpu = shard_items >= min_items && zap_ed25519_gpu_available();
    }
    zap_verify_stats_t st;
    memset(&st, 0, sizeof(st));
    st.checked = view->n_items;
    double t0 = now_s();
    if (view->n_items == 0) {
        st.used = ZAP_VERIFIER_CPU;
    } else if (gpu) {
        st.used = ZAP_VERIFIER_GPU;
        s = verify_gpu(view, bitmap, verdicts, &st);
        if (s == ZAP_OK && params && params->progress_items)
            __atomic_fetch_add(params->progress_items, view->n_items, __ATOMIC_RELAXED);
        if (s != ZAP_OK && v == ZAP_VERIFIER_AUTO) {
            zap_warn("verify: gpu verifier failed (%s); verifying %llu items on the cpu instead",
                     zap_status_string(s), (unsigned long long)view->n_items);
            gpu = 0;
        } else if (s != ZAP_OK) {
            return s;
        }
    }
    if (view->n_items && !gpu) {
        st.used = ZAP_VERIFIER_CPU;
        s = verify_cpu(view, threads, params ? params->progress_items : NULL, bitmap, verdicts, &st);
        if (s != ZAP_OK)
            return s;
    }
    st.seconds = now_s() - t0;
    if (stats_p)
        *stats_p = st;
    return ZAP_OK;
}
