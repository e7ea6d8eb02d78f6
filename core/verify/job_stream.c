/* The scatter of a verification job as a stream of segments (docs/verify.md,
 * "Distribute"): the root sends each rank its records in segments that
 * double in size, and the rank verifies segment k while k + 1 is on its way,
 * so the transfer and the receive buffers' allocation hide behind
 * verification instead of preceding it.
 *
 * Flow control is receiver-driven. A rank asks for segment k with a token
 * (its status, k, its segment count and the length it expects) once the
 * buffer for k exists and a receive is posted into it; the root answers every
 * token with exactly one message: the segment, or an empty message when the
 * root has verified that segment itself (a shared stream: the root's
 * neighbour, see zap_vsend_take) or the token does not match what the root
 * computed (a damaged plan, which also fails the root); a token saying the
 * rank failed gets no answer. So the root never sends what nobody receives, a rank that
 * cannot allocate (or got a damaged segment) stops the stream for itself
 * only, and no side waits for a message that will not come: the failure then
 * reaches every rank through the job's allgatherv of statuses after
 * verification.
 *
 * Threads. A rank runs an allocator (buffers from the transport's pool, ahead
 * of the stream, since a cold pinned allocation is slow) and a receiver; the
 * root runs one sender for all ranks. The job's own thread verifies. Between
 * them only pool allocation (thread-safe) and, during the stream, the
 * transport calls of one thread per side happen, so the communicator is never
 * driven by two threads at once. Threads that may touch CUDA (managed pages
 * are staged by the transport) adopt the job thread's device first. */
#include "verify/job_stream.h"
#include "verify/job_ring.h"
#include "verify/verify_impl.h"
#include "base/log.h"
#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <time.h>
#ifdef ZAP_VERIFY_HAVE_CUDA
#include <cuda_runtime_api.h>
#endif

/* Below 2^43 (the collectives' bit) and far from small user tags. */
#define TAG_TOKEN 0x5A5600000001ull
#define TAG_SEGMENT 0x5A5600000002ull
#define TOKEN_BYTES 24

static uint32_t get32(const uint8_t *p)
{
    return (uint32_t)p[0] | ((uint32_t)p[1] << 8) | ((uint32_t)p[2] << 16) | ((uint32_t)p[3] << 24);
}

static void put32(uint8_t *p, uint32_t v)
{
    for (int i = 0; i < 4; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}

int zap_vstream_device(zap_transport_t *t, int gpu_planned)
{
#ifdef ZAP_VERIFY_HAVE_CUDA
    /* Only a CUDA pool (allocation, staging of managed pages) or device
     * copies for a GPU verifier make the stream's threads call CUDA; CUDA is
     * not initialised for a host pool and the CPU verifier. */
    if (!gpu_planned && zap_pool_kind(zap_transport_pool(t)) == ZAP_MEM_HOST)
        return -1;
    int dev = -1;
    if (cudaGetDevice(&dev) != cudaSuccess) {
        (void)cudaGetLastError();
        return -1;
    }
    return dev;
#else
    (void)t, (void)gpu_planned;
    return -1;
#endif
}

static void adopt_device(int dev)
{
#ifdef ZAP_VERIFY_HAVE_CUDA
    if (dev >= 0 && cudaSetDevice(dev) != cudaSuccess) {
        (void)cudaGetLastError();
        zap_warn("verify: job: a stream thread could not select CUDA device %d", dev);
    }
#else
    (void)dev;
#endif
}

/* Device copies of received segments, so the GPU reads them in place and
 * the copy of segment k + 1 overlaps the kernel of segment k. Failures are
 * not errors: the GPU call then copies the host bytes itself. */
static void *device_alloc(size_t len)
{
#ifdef ZAP_VERIFY_HAVE_CUDA
    void *d = NULL;
    if (cudaMalloc(&d, len ? len : 1) != cudaSuccess) {
        (void)cudaGetLastError();
        return NULL;
    }
    return d;
#else
    (void)len;
    return NULL;
#endif
}

static int device_copy(void *dst, const void *src, size_t len)
{
#ifdef ZAP_VERIFY_HAVE_CUDA
    if (cudaMemcpy(dst, src, len, cudaMemcpyHostToDevice) != cudaSuccess) {
        (void)cudaGetLastError();
        return 0;
    }
    return 1;
#else
    (void)dst, (void)src, (void)len;
    return 0;
#endif
}

static void device_free(void *d)
{
#ifdef ZAP_VERIFY_HAVE_CUDA
    if (d && cudaFree(d) != cudaSuccess)
        (void)cudaGetLastError();
#else
    (void)d;
#endif
}

/* Plain memory for a received segment, its pages faulted in here: this
 * thread runs ahead of the receiver, whose copy into fresh pages would
 * otherwise fault them one at a time (~0.16 s for 256 MiB measured on the
 * H200 host, most of the stream). Huge pages where the kernel grants them
 * make that cheaper still. */
static uint8_t *host_alloc(size_t len)
{
    const size_t huge = (size_t)2 << 20;
    void *h = NULL;
    if (posix_memalign(&h, huge, len ? len : 1) != 0)
        return NULL;
#ifdef MADV_HUGEPAGE
    if (len >= huge)
        (void)madvise(h, len / huge * huge, MADV_HUGEPAGE); /* a hint; refused is fine */
#endif
    for (size_t off = 0; off < len; off += 4096)
        ((volatile uint8_t *)h)[off] = 0;
    return h;
}

void zap_vseg_rebase(uint8_t *records, uint32_t stride, uint64_t count, uint64_t lo, uint64_t hi)
{
    for (uint64_t i = 0; i < count; i++) {
        uint8_t *rec = records + i * stride;
        uint64_t off = get32(rec + ZAP_REC_MSG_OFF), len = get32(rec + ZAP_REC_MSG_LEN);
        if (off < lo || off + len > hi) {
            put32(rec + ZAP_REC_MSG_OFF, UINT32_MAX); /* outside any slice: stays malformed */
            put32(rec + ZAP_REC_MSG_LEN, UINT32_MAX);
        } else {
            put32(rec + ZAP_REC_MSG_OFF, (uint32_t)(off - lo));
        }
    }
}

uint64_t zap_vstream_test_chunk_bytes = 0;

uint64_t zap_vseg_chunk(const zap_vseg_t *g, uint32_t stride)
{
    uint64_t c = ZAP_VRING_SLOT_BYTES;
    if (zap_vstream_test_chunk_bytes > 0 && zap_vstream_test_chunk_bytes < c)
        c = zap_vstream_test_chunk_bytes;
    if (!g->blob && stride > 0)
        c = c >= stride ? c - c % stride : stride; /* whole records, so each chunk can be rebased alone */
    return c;
}

size_t zap_vseg_plan(uint64_t count, uint32_t stride, uint64_t blob_len, uint64_t first_bytes, zap_vseg_t *out)
{
    size_t n = 0;
    if (blob_len > 0) {
        if (out)
            out[n] = (zap_vseg_t){.src_off = 0, .len = blob_len, .item_off = 0, .items = 0, .blob = 1};
        n++;
    }
    uint64_t per = first_bytes / (stride ? stride : 1);
    per = per < 32 ? 32 : per & ~(uint64_t)31;
    for (uint64_t off = 0; off < count;) {
        uint64_t items = count - off < per ? count - off : per;
        if (count - off - items < items / 2)
            items = count - off; /* a short tail rides with this segment, not in a call of its own */
        if (out)
            out[n] = (zap_vseg_t){.src_off = off * stride, .len = items * stride, .item_off = off, .items = items,
                                  .blob = 0};
        n++;
        off += items;
        if (per < UINT64_MAX / 2)
            per *= 2;
    }
    return n;
}

size_t zap_vseg_plan_far(uint64_t count, uint32_t stride, uint64_t blob_len, uint64_t first_bytes, int from_top,
                         zap_vseg_t *out)
{
    size_t n = 0;
    if (blob_len > 0) {
        if (out)
            out[n] = (zap_vseg_t){.src_off = 0, .len = blob_len, .item_off = 0, .items = 0, .blob = 1};
        n++;
    }
    uint64_t per0 = first_bytes / (stride ? stride : 1);
    per0 = per0 < 32 ? 32 : per0 & ~(uint64_t)31;
    uint64_t per = per0, lo = 0, hi = count; /* [lo, hi): not yet planned */
    while (lo < hi) {
        uint64_t rem = hi - lo, half = (rem / 2) & ~(uint64_t)31;
        uint64_t items = per < half ? per : half > per0 ? half : per0;
        if (items >= rem || rem - items < per0 / 2)
            items = rem; /* a short rest rides with this segment */
        uint64_t off;
        if (from_top) {
            off = hi - items;
            if (off > lo)
                off &= ~(uint64_t)31; /* lo is word-aligned, so the boundary stays so */
            items = hi - off;
            hi = off;
        } else {
            off = lo;
            lo += items;
        }
        if (out)
            out[n] = (zap_vseg_t){.src_off = off * stride, .len = items * stride, .item_off = off, .items = items,
                                  .blob = 0};
        n++;
        if (per < UINT64_MAX / 2)
            per *= 2;
    }
    return n;
}

static void token_put(uint8_t *b, int32_t status, uint32_t k, uint32_t nseg, uint64_t len)
{
    for (int i = 0; i < 4; i++) {
        b[i] = (uint8_t)((uint32_t)status >> (8 * i));
        b[4 + i] = (uint8_t)(k >> (8 * i));
        b[8 + i] = (uint8_t)(nseg >> (8 * i));
        b[12 + i] = 0;
    }
    for (int i = 0; i < 8; i++)
        b[16 + i] = (uint8_t)(len >> (8 * i));
}


/* ---- root: the sender ----------------------------------------------------- */

typedef struct send_rank {
    zap_vsend_rank_t in;
    size_t k;              /* the token expected next */
    size_t end;            /* segments [end, nseg) are the root's (zap_vsend_take) */
    uint8_t token[TOKEN_BYTES];
    zap_request_t *treq;   /* the posted token receive; NULL once done */
} send_rank_t;

struct zap_vsend {
    zap_transport_t *t;
    int dev;
    send_rank_t *ranks;
    int nranks;
    zap_request_t **sends; /* every reply posted, freed at the end */
    size_t nsends, cap;
    zap_status_t status;
    int mismatches;
    double t_done;
    pthread_mutex_t mu;    /* k and end of shared ranks: the sender and the root's thread */
    pthread_t tid;
    int threaded;
    int abort; /* __atomic: zap_vsend_abort */
};

static zap_status_t post_token_recv(zap_vsend_t *s, send_rank_t *r)
{
    zap_status_t st = zap_transport_irecv(s->t, r->in.rank, TAG_TOKEN, r->token, TOKEN_BYTES, &r->treq);
    if (st != ZAP_OK)
        r->treq = NULL;
    return st;
}

static zap_status_t post_send(zap_vsend_t *s, send_rank_t *r, const uint8_t *src, size_t len)
{
    if (s->nsends == s->cap) {
        size_t c = s->cap ? 2 * s->cap : 16;
        zap_request_t **n = realloc(s->sends, c * sizeof(*n));
        if (!n)
            return ZAP_ERR_NO_MEMORY;
        s->sends = n;
        s->cap = c;
    }
    zap_status_t st = zap_transport_isend(s->t, r->in.rank, TAG_SEGMENT, src, len, &s->sends[s->nsends]);
    if (st == ZAP_OK)
        s->nsends++;
    return st;
}

/* Rank r's token has come: answer it with its segment k (in chunks), or
 * with an empty message that ends the stream to r when the token does not
 * match the root's plan or the root has taken k. A token saying that r
 * failed gets no answer (r has stopped). */
static zap_status_t answer(zap_vsend_t *s, send_rank_t *r)
{
    size_t got = 0;
    zap_status_t st = zap_request_received(r->treq, &got);
    zap_request_free(r->treq);
    r->treq = NULL;
    int whole = st == ZAP_OK && got == TOKEN_BYTES;
    int32_t status = whole ? (int32_t)get32(r->token) : ZAP_ERR_CORRUPT;
    if (whole && status != ZAP_OK) {
        pthread_mutex_lock(&s->mu);
        r->k = r->in.nseg; /* r has stopped: the root may take the rest */
        pthread_mutex_unlock(&s->mu);
        return ZAP_OK; /* r reports its failure itself, after verification */
    }
    const zap_vseg_t *g = r->k < r->in.nseg ? &r->in.segs[r->k] : NULL;
    uint32_t k = get32(r->token + 4), nseg = get32(r->token + 8);
    uint64_t len = (uint64_t)get32(r->token + 16) | ((uint64_t)get32(r->token + 20) << 32);
    int ok = whole && g && k == r->k && nseg == r->in.nseg && len == g->len;
    size_t want = r->k;
    int taken = 0;
    pthread_mutex_lock(&s->mu);
    if (ok && r->k >= r->end)
        taken = 1; /* the root has verified it: "taken" ends r's stream */
    else if (ok)
        r->k++;    /* claimed by r */
    else
        r->k = r->in.nseg;
    pthread_mutex_unlock(&s->mu);
    if (!ok) {
        s->mismatches++;
        zap_error("verify: job: rank %d asks for segment %u of %u (%llu bytes), but the root's plan for it is "
                  "segment %zu of %zu (%llu bytes); ending its stream",
                  r->in.rank, k, nseg, (unsigned long long)len, want, r->in.nseg,
                  (unsigned long long)(g ? g->len : 0));
    }
    int send = ok && !taken;
    if (!send) {
        st = post_send(s, r, NULL, 0);
        if (st != ZAP_OK)
            return st;
    } else {
        /* The segment in its chunks (zap_vseg_chunk), which r receives in order. */
        const uint8_t *src = (g->blob ? r->in.blob : r->in.records) + g->src_off;
        uint64_t chunk = zap_vseg_chunk(g, r->in.stride);
        for (uint64_t off = 0; off < g->len; off += chunk) {
            st = post_send(s, r, src + off, (size_t)(g->len - off < chunk ? g->len - off : chunk));
            if (st != ZAP_OK)
                return st;
        }
    }
    if (send && r->k < r->in.nseg)
        return post_token_recv(s, r);
    return ZAP_OK; /* r is done: all sent, taken, or its stream ended */
}

static void *sender_main(void *arg)
{
    zap_vsend_t *s = arg;
    adopt_device(s->dev);
    zap_status_t st = ZAP_OK;
    int active = 0;
    for (int i = 0; i < s->nranks && st == ZAP_OK; i++)
        if (s->ranks[i].in.nseg > 0) {
            st = post_token_recv(s, &s->ranks[i]);
            active += st == ZAP_OK;
        }
    double deadline = zap_clock_now() + zap_timeout_seconds();
    while (st == ZAP_OK && active > 0) {
        if (__atomic_load_n(&s->abort, __ATOMIC_RELAXED)) {
            st = ZAP_ERR_CANCELED;
            break;
        }
        int moved = 0;
        for (int i = 0; i < s->nranks && st == ZAP_OK; i++) {
            send_rank_t *r = &s->ranks[i];
            if (!r->treq)
                continue;
            int done = 0;
            st = zap_request_test(r->treq, &done);
            if (st == ZAP_OK && done) {
                moved = 1;
                st = answer(s, r);
                active -= r->treq == NULL;
            }
        }
        /* Replies are freed as they finish, so a long stream holds few. */
        for (size_t i = 0; i < s->nsends && st == ZAP_OK; i++) {
            int done = 0;
            if (!s->sends[i])
                continue;
            st = zap_request_test(s->sends[i], &done);
            if (st == ZAP_OK && done) {
                zap_request_free(s->sends[i]);
                s->sends[i] = NULL;
                moved = 1;
            }
        }
        if (moved) {
            deadline = zap_clock_now() + zap_timeout_seconds();
        } else if (zap_clock_now() > deadline) {
            for (int i = 0; i < s->nranks; i++)
                if (s->ranks[i].treq)
                    zap_error("verify: job: no request for segment %zu from rank %d within %.0f s", s->ranks[i].k,
                              s->ranks[i].in.rank, zap_timeout_seconds());
            st = ZAP_ERR_TIMED_OUT;
        } else {
            sched_yield();
        }
    }
    for (size_t i = 0; i < s->nsends; i++) {
        if (!s->sends[i])
            continue;
        if (st == ZAP_OK)
            st = zap_request_wait(s->sends[i]);
        zap_request_free(s->sends[i]);
        s->sends[i] = NULL;
    }
    for (int i = 0; i < s->nranks; i++) {
        zap_request_free(s->ranks[i].treq); /* cancels what an error left pending */
        s->ranks[i].treq = NULL;
    }
    s->status = st;
    s->t_done = zap_clock_now();
    return NULL;
}

zap_status_t zap_vsend_start(zap_transport_t *t, const zap_vsend_rank_t *ranks, int nranks, int dev,
                             zap_vsend_t **s_p)
{
    zap_vsend_t *s = calloc(1, sizeof(*s));
    if (!s || !(s->ranks = calloc(nranks > 0 ? (size_t)nranks : 1, sizeof(*s->ranks)))) {
        free(s);
        return ZAP_ERR_NO_MEMORY;
    }
    s->t = t;
    s->dev = dev;
    s->nranks = nranks;
    pthread_mutex_init(&s->mu, NULL);
    for (int i = 0; i < nranks; i++) {
        s->ranks[i].in = ranks[i];
        s->ranks[i].end = ranks[i].nseg;
    }
    s->threaded = pthread_create(&s->tid, NULL, sender_main, s) == 0;
    if (!s->threaded) {
        /* The ranks wait for answers: give them all now, then verify. */
        zap_warn("verify: job: cannot start the sender thread; sending before verifying");
        sender_main(s);
    }
    *s_p = s;
    return ZAP_OK;
}

void zap_vsend_abort(zap_vsend_t *s)
{
    if (s)
        __atomic_store_n(&s->abort, 1, __ATOMIC_RELAXED);
}

long zap_vsend_take(zap_vsend_t *s, int i)
{
    if (i < 0 || i >= s->nranks || !s->ranks[i].in.shared)
        return -1;
    send_rank_t *r = &s->ranks[i];
    long k = -1;
    pthread_mutex_lock(&s->mu);
    if (r->end > r->k && !r->in.segs[r->end - 1].blob)
        k = (long)--r->end;
    pthread_mutex_unlock(&s->mu);
    return k;
}

zap_status_t zap_vsend_finish(zap_vsend_t *s, double *t_done_p, int *mismatch_p)
{
    if (s->threaded)
        pthread_join(s->tid, NULL);
    zap_status_t st = s->status;
    if (t_done_p)
        *t_done_p = s->t_done;
    if (mismatch_p)
        *mismatch_p = s->mismatches;
    pthread_mutex_destroy(&s->mu);
    free(s->sends);
    free(s->ranks);
    free(s);
    return st;
}

/* ---- a rank: allocator and receiver ---------------------------------------- */

struct zap_vrecv {
    zap_transport_t *t;
    int root, dev;
    const zap_vseg_t *segs;
    size_t nseg;
    zap_vrecv_opts_t o;
    zap_buf_t *bufs;          /* pool buffers (no device copy) */
    uint8_t **hbufs;          /* malloc'd buffers (device copy) */
    void **dbufs;             /* device copies; NULL where none could be made */
    zap_vring_t *ring;        /* pinned staging for record segments (device copy); NULL: none */
    size_t nchunk;            /* chunks that went through the ring: the next slot */
    pthread_mutex_t mu;
    pthread_cond_t cv;
    size_t allocated;         /* buffers that exist */
    zap_status_t alloc_status;
    size_t arrived;           /* segments in place */
    int taken;                /* a shared stream ended by the root at segment `arrived` */
    /* Pacing of a shared stream: record items asked for and verified, the
     * segment being verified, and the measured verify and transfer rates. */
    uint64_t req_items, done_items, cur_items;
    size_t req_segs, started_segs; /* record segments asked for, handed to the verifier */
    double t_cur, v_rate, x_bytes, x_secs; /* v_rate: the fastest segment's items/s */
    int unpaced;              /* the job's thread verifies no more: ask without waiting */
    int stop;                 /* the receiver ended: the allocator stops too */
    int done;
    zap_status_t status;      /* the receiver's outcome */
    double t_done;
    pthread_t alloc_tid, recv_tid;
    int alloc_started, recv_started;
};

static void *allocator_main(void *arg)
{
    zap_vrecv_t *r = arg;
    adopt_device(r->dev);
    for (size_t k = 0; k < r->nseg; k++) {
        pthread_mutex_lock(&r->mu);
        int stop = r->stop;
        pthread_mutex_unlock(&r->mu);
        if (stop)
            break;
        zap_buf_t b = {0};
        uint8_t *h = NULL;
        void *d = NULL;
        zap_status_t st = ZAP_OK;
        if (r->o.device_copy && r->ring && !r->segs[k].blob) {
            /* Received through the ring: device memory only, or plain memory
             * where that cannot be had (the GPU call then copies it). */
            d = device_alloc((size_t)r->segs[k].len);
            h = d ? NULL : host_alloc((size_t)r->segs[k].len);
            st = d || h ? ZAP_OK : ZAP_ERR_NO_MEMORY;
        } else if (r->o.device_copy) {
            /* Plain memory: pinning (a cold pinned pool buffer) takes ~0.6 s/GiB
             * and stalls the job thread's GPU calls meanwhile; pages that the
             * receive faults in cost less and block nothing. */
            h = host_alloc((size_t)r->segs[k].len);
            st = h ? ZAP_OK : ZAP_ERR_NO_MEMORY;
            d = st == ZAP_OK ? device_alloc((size_t)r->segs[k].len) : NULL;
        } else {
            st = zap_transport_alloc(r->t, (size_t)r->segs[k].len, &b);
        }
        pthread_mutex_lock(&r->mu);
        if (st == ZAP_OK) {
            r->bufs[k] = b;
            r->hbufs[k] = h;
            r->dbufs[k] = d;
            r->allocated = k + 1;
        } else {
            r->alloc_status = st;
        }
        pthread_cond_broadcast(&r->cv);
        pthread_mutex_unlock(&r->mu);
        if (st != ZAP_OK) {
            zap_error("verify: job: no receive buffer for segment %zu (%llu bytes): %s", k,
                      (unsigned long long)r->segs[k].len, zap_status_string(st));
            break;
        }
    }
    return NULL;
}

static zap_status_t send_token(zap_vrecv_t *r, zap_status_t status, size_t k)
{
    uint8_t tok[TOKEN_BYTES];
    token_put(tok, (int32_t)status, (uint32_t)k, (uint32_t)r->nseg, r->segs[k].len);
    return zap_transport_send(r->t, r->root, TAG_TOKEN, tok, TOKEN_BYTES);
}

/* A shared stream asks for record segment k only once the verification
 * queued before it would end within about twice k's expected transfer time:
 * early enough that the rank's verifier does not wait, late enough that the
 * root can still take what the rank would reach last. The verify rate is the
 * fastest segment's (a first call that also loads the GPU kernel would
 * otherwise make every later request late, starving the verifier); the
 * transfer rate is the average (slow first transfers make requests earlier,
 * the safe side). Until both rates are
 * measured (the first segments), at most two segments wait unverified.
 * It never waits more than a quarter of ZAP_TIMEOUT, so the root's sender,
 * which times out on a silent rank, hears from it (a slow CPU verifier then
 * claims early and balances less). Called with r->mu held. */
static void pace(zap_vrecv_t *r, size_t k)
{
    double limit = zap_clock_now() + zap_timeout_seconds() / 4;
    for (;;) {
        double now = zap_clock_now();
        if (r->unpaced || now >= limit)
            return;
        int measured = r->v_rate > 0 && r->x_secs > 0 && r->x_bytes > 0;
        double wait = limit - now;
        if (!measured) {
            if (r->req_segs < r->started_segs + 2)
                return;
        } else {
            double rate = r->v_rate;
            double backlog = (double)(r->req_items - r->done_items) / rate;
            if (r->cur_items) {
                double run = now - r->t_cur, all = (double)r->cur_items / rate;
                backlog -= run < all ? run : all;
            }
            double need = 2.0 * (double)r->segs[k].len * r->x_secs / r->x_bytes + 0.001;
            if (backlog <= need)
                return;
            if (backlog - need < wait)
                wait = backlog - need;
        }
        if (wait > 0.05)
            wait = 0.05;
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        long ns = ts.tv_nsec + (long)(wait * 1e9);
        ts.tv_sec += ns / 1000000000L;
        ts.tv_nsec = ns % 1000000000L;
        pthread_cond_timedwait(&r->cv, &r->mu, &ts);
    }
}

/* Receives the chunks after a failed one, into scratch memory, so that the
 * root's sends of segment k complete (a rendezvous send waits for its
 * receive), then tells the root to stop. */
static void drain(zap_vrecv_t *r, size_t k, uint64_t from, uint64_t chunk)
{
    const zap_vseg_t *g = &r->segs[k];
    uint8_t *scratch = from < g->len ? malloc((size_t)chunk) : NULL;
    for (uint64_t off = from; scratch && off < g->len; off += chunk) {
        zap_request_t *req = NULL;
        size_t len = (size_t)(g->len - off < chunk ? g->len - off : chunk);
        if (zap_transport_irecv(r->t, r->root, TAG_SEGMENT, scratch, len, &req) != ZAP_OK)
            break;
        zap_status_t st = zap_request_wait(req);
        zap_request_free(req);
        if (st != ZAP_OK && st != ZAP_ERR_TRUNCATED)
            break;
    }
    free(scratch);
    if (k + 1 < r->nseg)
        (void)send_token(r, ZAP_ERR_CORRUPT, k + 1);
}

/* Segment k, chunk by chunk (zap_vseg_chunk): into its host buffer, or,
 * without one, through the ring into its device buffer. *taken_p: the root
 * answered with an empty message on a shared stream (ZAP_OK). */
static zap_status_t recv_segment(zap_vrecv_t *r, size_t k, int *taken_p)
{
    const zap_vseg_t *g = &r->segs[k];
    const uint64_t chunk = zap_vseg_chunk(g, r->o.stride);
    uint8_t *host = r->o.device_copy ? r->hbufs[k] : r->bufs[k].ptr;
    for (uint64_t off = 0; off < g->len; off += chunk) {
        size_t len = (size_t)(g->len - off < chunk ? g->len - off : chunk);
        uint8_t *dst = host ? host + off : zap_vring_slot(r->ring, r->nchunk);
        if (!dst) { /* the ring's CUDA error is logged */
            if (off == 0)
                (void)send_token(r, ZAP_ERR_CUDA, k); /* nothing of k was asked for: the root stops */
            else
                drain(r, k, off, chunk);
            return ZAP_ERR_CUDA;
        }
        zap_request_t *req = NULL;
        zap_status_t st = zap_transport_irecv(r->t, r->root, TAG_SEGMENT, dst, len, &req);
        if (st == ZAP_OK && off == 0)
            st = send_token(r, ZAP_OK, k);
        if (st == ZAP_OK)
            st = zap_request_wait(req);
        size_t got = 0;
        if (st == ZAP_OK)
            st = zap_request_received(req, &got);
        zap_request_free(req);
        if (st != ZAP_OK)
            return st;
        if (got == 0 && off == 0) {
            /* An empty reply is the root ending the stream: "taken" on a
             * shared stream, else the plans differ. */
            if (r->o.shared) {
                *taken_p = 1;
                return ZAP_OK;
            }
            zap_error("verify: job: the root ended the stream at segment %zu (its plan differs)", k);
            return ZAP_ERR_CORRUPT;
        }
        if (got != len) {
            /* A damaged segment; the root still sends its other chunks and
             * waits for the next token. */
            zap_error("verify: job: segment %zu from the root has %zu bytes at byte %llu, expected %zu", k, got,
                      (unsigned long long)off, len);
            drain(r, k, off + chunk, chunk);
            return ZAP_ERR_CORRUPT;
        }
        if (r->o.rebase && !g->blob)
            zap_vseg_rebase(dst, r->o.stride, len / r->o.stride, r->o.slice_lo, r->o.slice_hi);
        if (!host) {
            st = zap_vring_copy(r->ring, r->nchunk, (uint8_t *)r->dbufs[k] + off, len);
            r->nchunk++;
            if (st != ZAP_OK) {
                drain(r, k, off + chunk, chunk);
                return st;
            }
        }
    }
    if (!host) /* in place once its last copy (the ring's stream is in order) is done */
        return zap_vring_wait(r->ring, r->nchunk - 1);
    if (r->dbufs[k] && !device_copy(r->dbufs[k], host, (size_t)g->len)) {
        device_free(r->dbufs[k]); /* the GPU call then copies the host bytes itself */
        r->dbufs[k] = NULL;
    }
    return ZAP_OK;
}

static void *receiver_main(void *arg)
{
    zap_vrecv_t *r = arg;
    adopt_device(r->dev);
    zap_status_t st = ZAP_OK;
    for (size_t k = 0; k < r->nseg; k++) {
        pthread_mutex_lock(&r->mu);
        while (r->allocated <= k && r->alloc_status == ZAP_OK)
            pthread_cond_wait(&r->cv, &r->mu);
        zap_status_t a = r->allocated > k ? ZAP_OK : r->alloc_status;
        if (a == ZAP_OK && r->o.shared && !r->segs[k].blob) {
            pace(r, k);
            r->req_items += r->segs[k].items;
            r->req_segs++;
        }
        pthread_mutex_unlock(&r->mu);
        double t_ask = zap_clock_now();
        if (a != ZAP_OK) {
            (void)send_token(r, a, k); /* ends the stream on the root */
            st = a;
            break;
        }
        int taken = 0;
        st = recv_segment(r, k, &taken);
        if (st == ZAP_OK && taken) {
            pthread_mutex_lock(&r->mu);
            r->taken = 1; /* the root verifies k and the rest */
            pthread_mutex_unlock(&r->mu);
            break;
        }
        if (st != ZAP_OK)
            break;
        pthread_mutex_lock(&r->mu);
        r->arrived = k + 1;
        if (!r->segs[k].blob) {
            r->x_bytes += (double)r->segs[k].len;
            r->x_secs += zap_clock_now() - t_ask;
        }
        pthread_cond_broadcast(&r->cv);
        pthread_mutex_unlock(&r->mu);
    }
    pthread_mutex_lock(&r->mu);
    r->status = st;
    r->done = 1;
    r->stop = 1;
    r->t_done = zap_clock_now();
    pthread_cond_broadcast(&r->cv);
    pthread_mutex_unlock(&r->mu);
    return NULL;
}

void zap_vrecv_refuse(zap_transport_t *t, int root, const zap_vseg_t *segs, size_t nseg, zap_status_t why)
{
    if (nseg == 0)
        return;
    uint8_t tok[TOKEN_BYTES];
    token_put(tok, (int32_t)why, 0, (uint32_t)nseg, segs[0].len);
    (void)zap_transport_send(t, root, TAG_TOKEN, tok, TOKEN_BYTES);
}

zap_status_t zap_vrecv_start(zap_transport_t *t, int root, const zap_vseg_t *segs, size_t nseg, int dev,
                             const zap_vrecv_opts_t *o, zap_vrecv_t **r_p)
{
    zap_vrecv_t *r = calloc(1, sizeof(*r));
    if (!r || !(r->bufs = calloc(nseg ? nseg : 1, sizeof(zap_buf_t))) ||
        !(r->hbufs = calloc(nseg ? nseg : 1, sizeof(uint8_t *))) || !(r->dbufs = calloc(nseg ? nseg : 1, sizeof(void *)))) {
        if (r) {
            free(r->bufs);
            free(r->hbufs);
        }
        free(r);
        return ZAP_ERR_NO_MEMORY;
    }
    r->t = t;
    r->root = root;
    r->dev = dev;
    r->o = *o;
#ifndef ZAP_VERIFY_HAVE_CUDA
    r->o.device_copy = 0;
#endif
    /* Normally made by the job's preparation, before the transfers. */
    r->ring = r->o.device_copy ? zap_vring_acquire(dev) : NULL;
    r->segs = segs;
    r->nseg = nseg;
    pthread_mutex_init(&r->mu, NULL);
    pthread_cond_init(&r->cv, NULL);
    r->alloc_started = pthread_create(&r->alloc_tid, NULL, allocator_main, r) == 0;
    if (!r->alloc_started) {
        r->alloc_status = ZAP_ERR_NO_MEMORY; /* the receiver then ends the stream cleanly */
        zap_error("verify: job: cannot start the allocator thread");
    }
    r->recv_started = pthread_create(&r->recv_tid, NULL, receiver_main, r) == 0;
    if (!r->recv_started) {
        /* Without a receiver the root would wait for tokens: answer them here. */
        zap_error("verify: job: cannot start the receiver thread; receiving on the job's thread");
        receiver_main(r);
    }
    *r_p = r;
    return ZAP_OK;
}

zap_status_t zap_vrecv_get(zap_vrecv_t *r, size_t k, uint8_t **host_p, const uint8_t **dev_p)
{
    pthread_mutex_lock(&r->mu);
    double now = zap_clock_now();
    if (r->cur_items) { /* the job's thread has verified the previous segment */
        r->done_items += r->cur_items;
        if (now > r->t_cur && (double)r->cur_items / (now - r->t_cur) > r->v_rate)
            r->v_rate = (double)r->cur_items / (now - r->t_cur);
        r->cur_items = 0;
        pthread_cond_broadcast(&r->cv);
    }
    while (r->arrived <= k && !r->done)
        pthread_cond_wait(&r->cv, &r->mu);
    zap_status_t st = r->arrived > k ? ZAP_OK : r->taken ? ZAP_OK : r->status != ZAP_OK ? r->status : ZAP_ERR_CORRUPT;
    int have = r->arrived > k;
    if (have && !r->segs[k].blob) {
        r->cur_items = r->segs[k].items;
        r->t_cur = zap_clock_now();
        r->started_segs++;
        pthread_cond_broadcast(&r->cv);
    }
    pthread_mutex_unlock(&r->mu);
    *host_p = NULL;
    *dev_p = NULL;
    if (have) {
        *host_p = r->o.device_copy ? r->hbufs[k] : r->bufs[k].ptr; /* NULL: through the ring */
        *dev_p = r->dbufs[k];
    }
    return st;
}

zap_status_t zap_vrecv_finish(zap_vrecv_t *r, double *t_done_p)
{
    pthread_mutex_lock(&r->mu);
    r->unpaced = 1; /* nothing is verified any more: a paced request must not wait for it */
    pthread_cond_broadcast(&r->cv);
    pthread_mutex_unlock(&r->mu);
    if (r->recv_started)
        pthread_join(r->recv_tid, NULL);
    if (r->alloc_started)
        pthread_join(r->alloc_tid, NULL);
    r->recv_started = r->alloc_started = 0;
    if (t_done_p)
        *t_done_p = r->t_done;
    return r->status;
}

void zap_vrecv_free(zap_vrecv_t *r)
{
    if (!r)
        return;
    (void)zap_vrecv_finish(r, NULL);
    for (size_t k = 0; k < r->nseg; k++) {
        zap_buf_free(&r->bufs[k]);
        free(r->hbufs[k]);
        device_free(r->dbufs[k]);
    }
    zap_vring_release(r->ring);
    pthread_mutex_destroy(&r->mu);
    pthread_cond_destroy(&r->cv);
    free(r->bufs);
    free(r->hbufs);
    free(r->dbufs);
    free(r);
}

/* ---- a plain helper thread on the job's device ------------------------------ */

typedef struct helper {
    void *(*fn)(void *);
    void *arg;
    int dev;
} helper_t;

static void *helper_main(void *arg)
{
    helper_t h = *(helper_t *)arg;
    free(arg);
    adopt_device(h.dev);
    return h.fn(h.arg);
}

int zap_vstream_thread(pthread_t *tid, void *(*fn)(void *), void *arg, int dev)
{
    helper_t *h = malloc(sizeof(*h));
    if (!h)
        return -1;
    *h = (helper_t){fn, arg, dev};
    if (pthread_create(tid, NULL, helper_main, h) != 0) {
        free(h);
        return -1;
    }
    return 0;
}
