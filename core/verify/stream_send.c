/* The root's end of the segment stream (stream.h; docs/verify.md, "The
 * segment stream"): one sender thread answers every rank's tokens.
 *
 * Flow control is receiver-driven. A rank asks for segment k with a token
 * once the buffer for k exists and a receive is posted into it; the root
 * answers every token with exactly one message: the segment (in its
 * chunks), or an empty message when the root has verified that segment
 * itself (a shared stream: the root's neighbour, see
 * zap_verify_stream_send_take) or the token does not match what the root
 * computed (a damaged plan, which also fails the root); a token saying the
 * rank failed gets no answer. So the root never sends what nobody receives,
 * and no side waits for a message that will not come.
 *
 * Only the sender thread drives the transport during the stream; the root's
 * own thread verifies and meets the sender only under mu, in send_take. */
#include "verify/stream.h"
#include "base/log.h"
#include <sched.h>
#include <stdlib.h>

typedef struct send_rank {
    zap_verify_stream_rank_t in;
    size_t k;              /* the token expected next */
    size_t end;            /* segments [end, nseg) are the root's (send_take) */
    uint8_t token[ZAP_VERIFY_STREAM_TOKEN_BYTES];
    zap_request_t *treq;   /* the posted token receive; NULL once done */
} send_rank_t;

struct zap_verify_stream_send {
    zap_transport_t *t;
    int dev;
    uint64_t chunk_cap;
    double timeout_s;
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
    int abort; /* __atomic: zap_verify_stream_send_abort */
};

static zap_status_t post_token_recv(zap_verify_stream_send_t *s, send_rank_t *r)
{
    zap_status_t st = zap_transport_irecv(s->t, r->in.rank, ZAP_VERIFY_STREAM_TAG_TOKEN, r->token,
                                          ZAP_VERIFY_STREAM_TOKEN_BYTES, &r->treq);
    if (st != ZAP_OK)
        r->treq = NULL;
    return st;
}

static zap_status_t post_send(zap_verify_stream_send_t *s, send_rank_t *r, const uint8_t *src, size_t len)
{
    if (s->nsends == s->cap) {
        size_t c = s->cap ? 2 * s->cap : 16;
        zap_request_t **n = realloc(s->sends, c * sizeof(*n));
        if (!n)
            return ZAP_ERR_NO_MEMORY;
        s->sends = n;
        s->cap = c;
    }
    zap_status_t st = zap_transport_isend(s->t, r->in.rank, ZAP_VERIFY_STREAM_TAG_SEGMENT, src, len,
                                          &s->sends[s->nsends]);
    if (st == ZAP_OK)
        s->nsends++;
    return st;
}

/* Segment g of rank r in its chunks (zap_verify_seg_chunk), which r receives
 * in order. */
static zap_status_t send_segment(zap_verify_stream_send_t *s, send_rank_t *r, const zap_verify_seg_t *g)
{
    const uint8_t *src = (g->blob ? r->in.blob : r->in.records) + g->src_off;
    uint64_t chunk = zap_verify_seg_chunk(g, r->in.stride, s->chunk_cap);
    for (uint64_t off = 0; off < g->len; off += chunk) {
        zap_status_t st = post_send(s, r, src + off, (size_t)(g->len - off < chunk ? g->len - off : chunk));
        if (st != ZAP_OK)
            return st;
    }
    return ZAP_OK;
}

/* Rank r's token has come: answer it with its segment k, or with an empty
 * message that ends the stream to r when the token does not match the
 * root's plan or the root has taken k. A token saying that r failed gets no
 * answer (r has stopped). */
static zap_status_t answer(zap_verify_stream_send_t *s, send_rank_t *r)
{
    size_t got = 0;
    zap_status_t st = zap_request_received(r->treq, &got);
    zap_request_free(r->treq);
    r->treq = NULL;
    int whole = st == ZAP_OK && got == ZAP_VERIFY_STREAM_TOKEN_BYTES;
    zap_verify_token_t tok;
    zap_verify_token_decode(r->token, &tok);
    if (!whole)
        tok.status = ZAP_ERR_CORRUPT;
    if (whole && tok.status != ZAP_OK) {
        pthread_mutex_lock(&s->mu);
        r->k = r->in.nseg; /* r has stopped: the root may take the rest */
        pthread_mutex_unlock(&s->mu);
        return ZAP_OK; /* r reports its failure itself, after verification */
    }
    const zap_verify_seg_t *g = r->k < r->in.nseg ? &r->in.segs[r->k] : NULL;
    int ok = whole && g && tok.k == r->k && tok.nseg == r->in.nseg && tok.len == g->len;
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
                  r->in.rank, tok.k, tok.nseg, (unsigned long long)tok.len, want, r->in.nseg,
                  (unsigned long long)(g ? g->len : 0));
    }
    int send = ok && !taken;
    st = send ? send_segment(s, r, g) : post_send(s, r, NULL, 0);
    if (st != ZAP_OK)
        return st;
    if (send && r->k < r->in.nseg)
        return post_token_recv(s, r);
    return ZAP_OK; /* r is done: all sent, taken, or its stream ended */
}

/* One pass over the posted token receives and replies: answers the tokens
 * that came, frees the replies that finished (so a long stream holds few).
 * *moved_p: anything happened. */
static zap_status_t send_pass(zap_verify_stream_send_t *s, int *active_p, int *moved_p)
{
    zap_status_t st = ZAP_OK;
    for (int i = 0; i < s->nranks && st == ZAP_OK; i++) {
        send_rank_t *r = &s->ranks[i];
        if (!r->treq)
            continue;
        int done = 0;
        st = zap_request_test(r->treq, &done);
        if (st == ZAP_OK && done) {
            *moved_p = 1;
            st = answer(s, r);
            *active_p -= r->treq == NULL;
        }
    }
    for (size_t i = 0; i < s->nsends && st == ZAP_OK; i++) {
        int done = 0;
        if (!s->sends[i])
            continue;
        st = zap_request_test(s->sends[i], &done);
        if (st == ZAP_OK && done) {
            zap_request_free(s->sends[i]);
            s->sends[i] = NULL;
            *moved_p = 1;
        }
    }
    return st;
}

/* Waits for the replies still in flight (or, after an error, cancels them)
 * and the token receives an error left posted. */
static zap_status_t send_drain(zap_verify_stream_send_t *s, zap_status_t st)
{
    double deadline = zap_clock_now() + s->timeout_s;
    for (size_t i = 0; i < s->nsends; i++) {
        if (!s->sends[i])
            continue;
        if (st == ZAP_OK)
            st = zap_request_wait_until(s->sends[i], deadline);
        zap_request_free(s->sends[i]);
        s->sends[i] = NULL;
    }
    for (int i = 0; i < s->nranks; i++) {
        zap_request_free(s->ranks[i].treq); /* cancels what an error left pending */
        s->ranks[i].treq = NULL;
    }
    return st;
}

static void *sender_main(void *arg)
{
    zap_verify_stream_send_t *s = arg;
    zap_verify_stream_adopt_device(s->dev);
    zap_status_t st = ZAP_OK;
    int active = 0;
    for (int i = 0; i < s->nranks && st == ZAP_OK; i++)
        if (s->ranks[i].in.nseg > 0) {
            st = post_token_recv(s, &s->ranks[i]);
            active += st == ZAP_OK;
        }
    double deadline = zap_clock_now() + s->timeout_s;
    while (st == ZAP_OK && active > 0) {
        if (__atomic_load_n(&s->abort, __ATOMIC_RELAXED)) {
            st = ZAP_ERR_CANCELED;
            break;
        }
        int moved = 0;
        st = send_pass(s, &active, &moved);
        if (st != ZAP_OK)
            break;
        if (moved) {
            deadline = zap_clock_now() + s->timeout_s;
        } else if (zap_clock_now() > deadline) {
            for (int i = 0; i < s->nranks; i++)
                if (s->ranks[i].treq)
                    zap_error("verify: job: no request for segment %zu from rank %d within %g s", s->ranks[i].k,
                              s->ranks[i].in.rank, s->timeout_s);
            st = ZAP_ERR_TIMED_OUT;
        } else {
            sched_yield();
        }
    }
    s->status = send_drain(s, st);
    s->t_done = zap_clock_now();
    return NULL;
}

zap_status_t zap_verify_stream_send_start(zap_transport_t *t, const zap_verify_stream_rank_t *ranks, int nranks,
                                          int dev, uint64_t chunk_cap, double timeout_s,
                                          zap_verify_stream_send_t **s_p)
{
    zap_verify_stream_send_t *s = calloc(1, sizeof(*s));
    if (!s || !(s->ranks = calloc(nranks > 0 ? (size_t)nranks : 1, sizeof(*s->ranks)))) {
        free(s);
        return ZAP_ERR_NO_MEMORY;
    }
    s->t = t;
    s->dev = dev;
    s->chunk_cap = chunk_cap;
    s->timeout_s = timeout_s;
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

void zap_verify_stream_send_abort(zap_verify_stream_send_t *s)
{
    if (s)
        __atomic_store_n(&s->abort, 1, __ATOMIC_RELAXED);
}

long zap_verify_stream_send_take(zap_verify_stream_send_t *s, int i)
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

zap_status_t zap_verify_stream_send_finish(zap_verify_stream_send_t *s, double *t_done_p, int *mismatch_p)
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
