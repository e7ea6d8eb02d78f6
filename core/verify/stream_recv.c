/* A rank's end of the segment stream (stream.h; docs/verify.md, "The segment
 * stream" and "Where received segments live"): an allocator thread makes
 * each segment's buffer ahead of the stream (a cold allocation is slow), a
 * receiver thread asks the root for each segment once its buffer exists and
 * receives it, and the job's thread verifies segment k while k + 1 arrives.
 *
 * A rank that cannot allocate (or gets a damaged segment) drains what the
 * root already sent, tells the root with a failure token and stops: the
 * stream stops for this rank only, and its failure reaches every rank
 * through the job's allgatherv of statuses after verification.
 *
 * Between the threads only pool allocation (thread-safe) and, during the
 * stream, the receiver's transport calls happen, so the communicator is
 * never driven by two threads at once. Shared fields are under mu. */
#include "verify/stream.h"
#include "verify/verify_impl.h"
#include "base/log.h"
#include "verify_device.h"
#include <stdlib.h>
#include <sys/mman.h>
#include <time.h>

struct zap_verify_stream_recv {
    zap_transport_t *t;
    int root, dev;
    const zap_verify_seg_t *segs;
    size_t nseg;
    zap_verify_stream_opts_t o;
    zap_buf_t *bufs;          /* pool buffers (no device copy) */
    uint8_t **hbufs;          /* malloc'd buffers (device copy) */
    void **dbufs;             /* device copies; NULL where none could be made */
    zap_verify_ring_t *ring;  /* pinned staging for record segments (device copy); NULL: none */
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

/* Plain memory for a received segment, its pages faulted in here: this
 * thread runs ahead of the receiver, whose copy into fresh pages would
 * otherwise fault them one at a time (most of the stream, measured on the
 * H200 host). Huge pages where the kernel grants them make that cheaper
 * still. */
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

/* The buffers of segment k: a pool buffer (*b), or plain (*h) and device
 * (*d) memory for a rank that copies to its GPU. */
static zap_status_t alloc_segment(zap_verify_stream_recv_t *r, size_t k, zap_buf_t *b, uint8_t **h, void **d)
{
    size_t len = (size_t)r->segs[k].len;
    if (r->o.device_copy && r->ring && !r->segs[k].blob) {
        /* Received through the ring: device memory only, or plain memory
         * where that cannot be had (the GPU call then copies it). */
        *d = zap_verify_device_alloc(len);
        *h = *d ? NULL : host_alloc(len);
        return *d || *h ? ZAP_OK : ZAP_ERR_NO_MEMORY;
    }
    if (r->o.device_copy) {
        /* Plain memory: pinning (a cold pinned pool buffer) is slow and
         * stalls the job thread's GPU calls meanwhile; pages that the receive
         * faults in cost less and block nothing. A device copy that cannot be
         * had is not an error: the GPU call then copies the host bytes. */
        *h = host_alloc(len);
        if (!*h)
            return ZAP_ERR_NO_MEMORY;
        *d = zap_verify_device_alloc(len);
        return ZAP_OK;
    }
    return zap_transport_alloc(r->t, len, b);
}

static void *allocator_main(void *arg)
{
    zap_verify_stream_recv_t *r = arg;
    zap_verify_stream_adopt_device(r->dev);
    for (size_t k = 0; k < r->nseg; k++) {
        pthread_mutex_lock(&r->mu);
        int stop = r->stop;
        pthread_mutex_unlock(&r->mu);
        if (stop)
            break;
        zap_buf_t b = {0};
        uint8_t *h = NULL;
        void *d = NULL;
        zap_status_t st = alloc_segment(r, k, &b, &h, &d);
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

static zap_status_t send_token(zap_verify_stream_recv_t *r, zap_status_t status, size_t k)
{
    uint8_t b[ZAP_VERIFY_STREAM_TOKEN_BYTES];
    zap_verify_token_t tok = {(int32_t)status, (uint32_t)k, (uint32_t)r->nseg, r->segs[k].len};
    zap_verify_token_encode(b, &tok);
    return zap_transport_send(r->t, r->root, ZAP_VERIFY_STREAM_TAG_TOKEN, b, ZAP_VERIFY_STREAM_TOKEN_BYTES);
}

/* How long (at most) a shared stream should still wait before asking for
 * record segment k: until the verification queued before it would end
 * within about twice k's expected transfer time. 0: ask now. Called with
 * r->mu held. */
static double pace_wait(const zap_verify_stream_recv_t *r, size_t k, double now, double wait)
{
    int measured = r->v_rate > 0 && r->x_secs > 0 && r->x_bytes > 0;
    if (!measured)
        return r->req_segs < r->started_segs + 2 ? 0 : wait;
    double rate = r->v_rate;
    double backlog = (double)(r->req_items - r->done_items) / rate;
    if (r->cur_items) {
        double run = now - r->t_cur, all = (double)r->cur_items / rate;
        backlog -= run < all ? run : all;
    }
    double need = 2.0 * (double)r->segs[k].len * r->x_secs / r->x_bytes + 0.001;
    if (backlog <= need)
        return 0;
    return backlog - need < wait ? backlog - need : wait;
}

/* A shared stream asks for record segment k only once the verification
 * queued before it would end within about twice k's expected transfer time:
 * early enough that the rank's verifier does not wait, late enough that the
 * root can still take what the rank would reach last. The verify rate is the
 * fastest segment's (a first call that also loads the GPU kernel would
 * otherwise make every later request late, starving the verifier); the
 * transfer rate is the average (slow first transfers make requests earlier,
 * the safe side). Until both rates are measured (the first segments), at
 * most two segments wait unverified. It never waits more than a quarter of
 * the job's timeout, so the root's sender, which times out on a silent rank, hears
 * from it (a slow CPU verifier then claims early and balances less). Called
 * with r->mu held. */
static void pace(zap_verify_stream_recv_t *r, size_t k)
{
    double limit = zap_clock_now() + r->o.timeout_s / 4;
    for (;;) {
        double now = zap_clock_now();
        if (r->unpaced || now >= limit)
            return;
        double wait = pace_wait(r, k, now, limit - now);
        if (wait <= 0)
            return;
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
static void drain(zap_verify_stream_recv_t *r, size_t k, uint64_t from, uint64_t chunk)
{
    const zap_verify_seg_t *g = &r->segs[k];
    uint8_t *scratch = from < g->len ? malloc((size_t)chunk) : NULL;
    for (uint64_t off = from; scratch && off < g->len; off += chunk) {
        zap_request_t *req = NULL;
        size_t len = (size_t)(g->len - off < chunk ? g->len - off : chunk);
        if (zap_transport_irecv(r->t, r->root, ZAP_VERIFY_STREAM_TAG_SEGMENT, scratch, len, &req) != ZAP_OK)
            break;
        zap_status_t st = zap_request_wait_until(req, zap_clock_now() + r->o.timeout_s);
        zap_request_free(req);
        if (st != ZAP_OK && st != ZAP_ERR_TRUNCATED)
            break;
    }
    free(scratch);
    if (k + 1 < r->nseg)
        (void)send_token(r, ZAP_ERR_CORRUPT, k + 1);
}

/* Receives len bytes of segment k at offset off into dst, asking for the
 * segment first when off is 0; *got_p: the bytes that came. Waits at most
 * the job's timeout: a root whose sender gave up on this rank sends nothing
 * more. */
static zap_status_t recv_chunk(zap_verify_stream_recv_t *r, size_t k, uint64_t off, uint8_t *dst, size_t len,
                               size_t *got_p)
{
    zap_request_t *req = NULL;
    zap_status_t st = zap_transport_irecv(r->t, r->root, ZAP_VERIFY_STREAM_TAG_SEGMENT, dst, len, &req);
    if (st == ZAP_OK && off == 0)
        st = send_token(r, ZAP_OK, k);
    if (st == ZAP_OK)
        st = zap_request_wait_until(req, zap_clock_now() + r->o.timeout_s);
    *got_p = 0;
    if (st == ZAP_OK)
        st = zap_request_received(req, got_p);
    zap_request_free(req);
    return st;
}

/* Segment k, chunk by chunk (zap_verify_seg_chunk): into its host buffer, or,
 * without one, through the ring into its device buffer. *taken_p: the root
 * answered with an empty message on a shared stream (ZAP_OK). */
static zap_status_t recv_segment(zap_verify_stream_recv_t *r, size_t k, int *taken_p)
{
    const zap_verify_seg_t *g = &r->segs[k];
    const uint64_t chunk = zap_verify_seg_chunk(g, r->o.stride, r->o.chunk_cap);
    uint8_t *host = r->o.device_copy ? r->hbufs[k] : r->bufs[k].ptr;
    for (uint64_t off = 0; off < g->len; off += chunk) {
        size_t len = (size_t)(g->len - off < chunk ? g->len - off : chunk), got = 0;
        uint8_t *dst = host ? host + off : zap_verify_ring_slot(r->ring, r->nchunk);
        if (!dst) { /* the ring's CUDA error is logged */
            if (off == 0)
                (void)send_token(r, ZAP_ERR_CUDA, k); /* nothing of k was asked for: the root stops */
            else
                drain(r, k, off, chunk);
            return ZAP_ERR_CUDA;
        }
        zap_status_t st = recv_chunk(r, k, off, dst, len, &got);
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
            zap_verify_seg_rebase(dst, r->o.stride, len / r->o.stride, r->o.slice_lo, r->o.slice_hi);
        if (!host) {
            st = zap_verify_ring_copy(r->ring, r->nchunk, (uint8_t *)r->dbufs[k] + off, len);
            r->nchunk++;
            if (st != ZAP_OK) {
                drain(r, k, off + chunk, chunk);
                return st;
            }
        }
    }
    if (!host) /* in place once its last copy (the ring's stream is in order) is done */
        return zap_verify_ring_wait(r->ring, r->nchunk - 1);
    if (r->dbufs[k] && !zap_verify_device_copy(r->dbufs[k], host, (size_t)g->len)) {
        zap_verify_device_free(r->dbufs[k]); /* the GPU call then copies the host bytes itself */
        r->dbufs[k] = NULL;
    }
    return ZAP_OK;
}

/* Waits for segment k's buffer; a shared stream also paces its request.
 * The allocator's failure, or ZAP_OK. */
static zap_status_t await_buffer(zap_verify_stream_recv_t *r, size_t k)
{
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
    return a;
}

static void *receiver_main(void *arg)
{
    zap_verify_stream_recv_t *r = arg;
    zap_verify_stream_adopt_device(r->dev);
    zap_status_t st = ZAP_OK;
    if (r->o.first_ask_delay > 0)
        zap_verify_hook_sleep(r->o.first_ask_delay);
    for (size_t k = 0; k < r->nseg; k++) {
        zap_status_t a = await_buffer(r, k);
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

void zap_verify_stream_recv_refuse(zap_transport_t *t, int root, const zap_verify_seg_t *segs, size_t nseg,
                                   zap_status_t why)
{
    if (nseg == 0)
        return;
    uint8_t b[ZAP_VERIFY_STREAM_TOKEN_BYTES];
    zap_verify_token_t tok = {(int32_t)why, 0, (uint32_t)nseg, segs[0].len};
    zap_verify_token_encode(b, &tok);
    (void)zap_transport_send(t, root, ZAP_VERIFY_STREAM_TAG_TOKEN, b, ZAP_VERIFY_STREAM_TOKEN_BYTES);
}

zap_status_t zap_verify_stream_recv_start(zap_transport_t *t, int root, const zap_verify_seg_t *segs, size_t nseg,
                                          int dev, const zap_verify_stream_opts_t *o,
                                          zap_verify_stream_recv_t **r_p)
{
    zap_verify_stream_recv_t *r = calloc(1, sizeof(*r));
    size_t n = nseg ? nseg : 1;
    if (!r || !(r->bufs = calloc(n, sizeof(zap_buf_t))) || !(r->hbufs = calloc(n, sizeof(uint8_t *))) ||
        !(r->dbufs = calloc(n, sizeof(void *)))) {
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
    /* Normally made by the job's preparation, before the transfers. */
    r->ring = r->o.device_copy ? zap_verify_ring_acquire(dev) : NULL;
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

zap_status_t zap_verify_stream_recv_get(zap_verify_stream_recv_t *r, size_t k, uint8_t **host_p,
                                        const uint8_t **dev_p)
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

zap_status_t zap_verify_stream_recv_finish(zap_verify_stream_recv_t *r, double *t_done_p)
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

void zap_verify_stream_recv_free(zap_verify_stream_recv_t *r)
{
    if (!r)
        return;
    (void)zap_verify_stream_recv_finish(r, NULL);
    for (size_t k = 0; k < r->nseg; k++) {
        zap_buf_free(&r->bufs[k]);
        free(r->hbufs[k]);
        zap_verify_device_free(r->dbufs[k]);
    }
    zap_verify_ring_release(r->ring);
    pthread_mutex_destroy(&r->mu);
    pthread_cond_destroy(&r->cv);
    free(r->bufs);
    free(r->hbufs);
    free(r->dbufs);
    free(r);
}
