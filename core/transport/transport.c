/* The contract's entry points: argument checks shared by every backend, then
 * the backend's ops. The blocking forms are built here from the non-blocking
 * ones, so every backend gets the same deadline behaviour, unless a backend
 * has its own (ops->send/recv, held to the same contract and logging a
 * timeout with the same line). */
#include "transport/transport_impl.h"
#include "base/log.h"
#include <math.h>
#include <stdlib.h>
#include <string.h>

static void notice_lock(zap_transport_t *t)
{
    while (atomic_flag_test_and_set_explicit(&t->notice_lock, memory_order_acquire))
        ;
}

static void notice_unlock(zap_transport_t *t) { atomic_flag_clear_explicit(&t->notice_lock, memory_order_release); }

void zap_transport_base_init(zap_transport_t *t, const zap_transport_ops_t *ops, int rank, int size,
                             zap_pool_t *pool, bool owns_pool)
{
    t->ops = ops;
    t->caps = 0;
    t->rank = rank;
    t->size = size;
    t->pool = pool;
    t->owns_pool = owns_pool;
    atomic_init(&t->closed, false);
    t->timeout_s = INFINITY;
    t->notice_home = NULL;
    atomic_init(&t->nnotices, 0);
    atomic_flag_clear(&t->notice_lock);
    t->notices = NULL;
    t->notice_cap = 0;
    atomic_init(&t->creations, 0);
}

void zap_transport_base_cleanup(zap_transport_t *t)
{
    notice_lock(t);
    atomic_store(&t->nnotices, 0);
    free(t->notices);
    t->notices = NULL;
    t->notice_cap = 0;
    notice_unlock(t);
}

/* --- notices ---------------------------------------------------------------- */

void zap_transport_notice_arrived(zap_transport_t *t, const zap_notice_t *n)
{
    notice_lock(t);
    unsigned len = atomic_load_explicit(&t->nnotices, memory_order_relaxed);
    if (len == t->notice_cap) {
        unsigned cap = t->notice_cap ? 2 * t->notice_cap : 8;
        zap_notice_t *grown = realloc(t->notices, cap * sizeof(*grown));
        if (grown == NULL) {
            notice_unlock(t);
            zap_error("transport %s: rank %d: no memory to keep a notice from rank %d; it is lost", t->ops->name,
                      t->rank, n->from);
            return;
        }
        t->notices = grown;
        t->notice_cap = cap;
    }
    t->notices[len] = *n;
    atomic_store_explicit(&t->nnotices, len + 1, memory_order_release);
    notice_unlock(t);
}

bool zap_transport_notice_get(const zap_transport_t *t, unsigned i, zap_notice_t *n)
{
    zap_transport_t *home = (zap_transport_t *)(t->notice_home != NULL ? t->notice_home : t);
    notice_lock(home);
    bool ok = i < atomic_load_explicit(&home->nnotices, memory_order_relaxed);
    if (ok)
        *n = home->notices[i];
    notice_unlock(home);
    return ok;
}

zap_status_t zap_transport_notify(zap_transport_t *t, const int *peers, int npeers, const zap_notice_t *n)
{
    if (t == NULL || (peers == NULL && npeers > 0) || n == NULL)
        return ZAP_ERR_INVALID_PARAM;
    if (t->ops->notify == NULL)
        return ZAP_ERR_UNSUPPORTED;
    if (atomic_load(&t->closed))
        return ZAP_ERR_CLOSED;
    return t->ops->notify(t, peers, npeers, n);
}

int zap_transport_first_failed(zap_transport_t *t)
{
    if (t == NULL || t->ops->first_failed == NULL || atomic_load(&t->closed))
        return -1;
    return t->ops->first_failed(t);
}

zap_status_t zap_transport_params_timeout(const zap_transport_params_t *params, double *timeout_p)
{
    if (params == NULL || params->timeout_s == 0)
        return zap_timeout_from_env(timeout_p);
    double t = params->timeout_s;
    if (t == ZAP_TRANSPORT_TIMEOUT_NONE) {
        *timeout_p = INFINITY;
        return ZAP_OK;
    }
    if (!isfinite(t) || t < 0.001 || t > 1e7) {
        zap_error("transport: timeout_s %g is out of range (0.001 to 10000000 seconds, ZAP_TRANSPORT_TIMEOUT_NONE, "
                  "or 0 for ZAP_TIMEOUT)",
                  t);
        return ZAP_ERR_INVALID_PARAM;
    }
    *timeout_p = t;
    return ZAP_OK;
}

double zap_transport_timeout(const zap_transport_t *t) { return t ? t->timeout_s : 0; }

void zap_request_base_init(zap_request_t *req, zap_transport_t *t, zap_request_kind_t kind, int peer, uint64_t tag)
{
    req->transport = t;
    req->kind = kind;
    req->peer = peer;
    req->tag = tag;
    req->received_len = 0;
    atomic_init(&req->status, (int)ZAP_INPROGRESS);
}

int zap_transport_rank(const zap_transport_t *t) { return t ? t->rank : -1; }
int zap_transport_size(const zap_transport_t *t) { return t ? t->size : -1; }

zap_status_t zap_transport_caps(const zap_transport_t *t, zap_transport_caps_t *caps_p)
{
    if (t == NULL || caps_p == NULL)
        return ZAP_ERR_INVALID_PARAM;
    caps_p->name = t->ops->name;
    caps_p->flags = t->ops->cap_flags | t->caps;
    caps_p->min_latency_us = t->ops->min_latency_us;
    return ZAP_OK;
}

/* Checks common to every post and blocking call, cheapest first: this runs
 * on every small message. */
static inline zap_status_t check_peer(zap_transport_t *t, int peer, const void *buf, size_t len)
{
    if (t == NULL || (buf == NULL && len > 0))
        return ZAP_ERR_INVALID_PARAM;
    if (atomic_load_explicit(&t->closed, memory_order_acquire))
        return ZAP_ERR_CLOSED;
    if (peer < 0 || peer >= t->size) {
        zap_error("transport %s: rank %d is not in [0, %d)", t->ops->name, peer, t->size);
        return ZAP_ERR_NOT_FOUND;
    }
    return ZAP_OK;
}

static zap_status_t check_post(zap_transport_t *t, int peer, const void *buf, size_t len, zap_request_t **req_p)
{
    if (req_p == NULL)
        return ZAP_ERR_INVALID_PARAM;
    return check_peer(t, peer, buf, len);
}

void zap_transport_log_timeout(const zap_transport_t *t, zap_request_kind_t kind, int peer, uint64_t tag,
                               double seconds)
{
    zap_error("transport %s: rank %d timed out after %.3g s waiting for %s peer rank %d (tag 0x%llx)",
              t->ops->name, t->rank, seconds, kind == ZAP_REQ_SEND ? "a send to" : "a receive from",
              peer, (unsigned long long)tag);
}

zap_status_t zap_transport_isend(zap_transport_t *t, int peer, uint64_t tag, const void *buf, size_t len,
                                 zap_request_t **req_p)
{
    zap_status_t st = check_post(t, peer, buf, len, req_p);
    return st != ZAP_OK ? st : t->ops->isend(t, peer, tag, buf, len, req_p);
}

zap_status_t zap_transport_irecv(zap_transport_t *t, int peer, uint64_t tag, void *buf, size_t cap,
                                 zap_request_t **req_p)
{
    zap_status_t st = check_post(t, peer, buf, cap, req_p);
    return st != ZAP_OK ? st : t->ops->irecv(t, peer, tag, buf, cap, req_p);
}

zap_status_t zap_transport_send(zap_transport_t *t, int peer, uint64_t tag, const void *buf, size_t len)
{
    zap_status_t st = check_peer(t, peer, buf, len);
    if (st != ZAP_OK)
        return st;
    if (t->ops->send != NULL)
        return t->ops->send(t, peer, tag, buf, len);
    zap_request_t *req = NULL;
    st = t->ops->isend(t, peer, tag, buf, len, &req);
    if (st != ZAP_OK)
        return st;
    st = zap_request_wait(req);
    zap_request_free(req);
    return st;
}

zap_status_t zap_transport_recv(zap_transport_t *t, int peer, uint64_t tag, void *buf, size_t cap, size_t *len_p)
{
    zap_status_t st = check_peer(t, peer, buf, cap);
    if (st != ZAP_OK)
        return st;
    if (t->ops->recv != NULL)
        return t->ops->recv(t, peer, tag, buf, cap, len_p);
    zap_request_t *req = NULL;
    st = t->ops->irecv(t, peer, tag, buf, cap, &req);
    if (st != ZAP_OK)
        return st;
    st = zap_request_wait(req);
    if (st == ZAP_OK && len_p != NULL)
        *len_p = req->received_len;
    zap_request_free(req);
    return st;
}

zap_status_t zap_transport_recv_buf(zap_transport_t *t, int peer, uint64_t tag, zap_buf_t *buf_p)
{
    zap_request_t *unused = NULL;
    if (buf_p == NULL)
        return ZAP_ERR_INVALID_PARAM;
    zap_status_t st = check_post(t, peer, NULL, 0, &unused);
    if (st != ZAP_OK)
        return st;
    size_t len = 0;
    double deadline = zap_clock_now() + t->timeout_s;
    st = t->ops->probe(t, peer, tag, deadline, &len);
    if (st != ZAP_OK)
        return st;
    zap_buf_t buf = {0};
    if (len > 0) {
        st = zap_pool_alloc(t->pool, len, &buf);
        if (st != ZAP_OK)
            return st;
    }
    zap_request_t *req = NULL;
    st = t->ops->irecv(t, peer, tag, buf.ptr, len, &req);
    if (st == ZAP_OK) {
        st = zap_request_wait_until(req, deadline);
        zap_request_free(req);
    }
    if (st != ZAP_OK) {
        (void)zap_buf_free(&buf);
        return st;
    }
    *buf_p = buf;
    return ZAP_OK;
}

zap_status_t zap_transport_alloc(zap_transport_t *t, size_t size, zap_buf_t *buf_p)
{
    if (t == NULL)
        return ZAP_ERR_INVALID_PARAM;
    if (atomic_load(&t->closed))
        return ZAP_ERR_CLOSED;
    return zap_pool_alloc(t->pool, size, buf_p);
}

zap_pool_t *zap_transport_pool(zap_transport_t *t) { return t ? t->pool : NULL; }

uint64_t zap_transport_pool_bytes(zap_transport_t *t)
{
    zap_pool_stats_t s;
    if (t == NULL || zap_pool_stats(t->pool, &s) != ZAP_OK)
        return 0;
    return s.reserved_bytes;
}

zap_status_t zap_transport_progress(zap_transport_t *t)
{
    if (t == NULL)
        return ZAP_ERR_INVALID_PARAM;
    if (atomic_load(&t->closed))
        return ZAP_ERR_CLOSED;
    return t->ops->progress(t);
}

void zap_transport_close(zap_transport_t *t)
{
    if (t == NULL)
        return;
    t->ops->close(t);
}

zap_status_t zap_request_test(zap_request_t *req, int *done_p)
{
    if (req == NULL || done_p == NULL)
        return ZAP_ERR_INVALID_PARAM;
    zap_status_t st = req->transport->ops->test(req);
    *done_p = st != ZAP_INPROGRESS;
    return st == ZAP_INPROGRESS ? ZAP_OK : st;
}

zap_status_t zap_request_wait_until(zap_request_t *req, double deadline)
{
    if (req == NULL)
        return ZAP_ERR_INVALID_PARAM;
    double waited = 0; /* what the log says the wait was allowed */
    if (deadline <= 0) {
        /* Most waits end within a few polls. Reading the clock costs
         * hundreds of nanoseconds on some machines (clock_gettime without
         * vDSO), more than a small UCX message takes, so poll first and pay
         * only when needed. */
        for (int i = 0; i < 64; i++) {
            zap_status_t st = req->transport->ops->test(req);
            if (st != ZAP_INPROGRESS)
                return st;
        }
        deadline = zap_clock_now() + req->transport->timeout_s;
        waited = req->transport->timeout_s;
    } else {
        waited = deadline - zap_clock_now();
    }
    zap_status_t st = req->transport->ops->wait(req, deadline);
    /* A collective request (peer -1) has logged its own line, naming the rank
     * its operation waited for. */
    if (st == ZAP_ERR_TIMED_OUT && req->peer >= 0)
        zap_transport_log_timeout(req->transport, req->kind, req->peer, req->tag, waited > 0 ? waited : 0);
    return st;
}

zap_status_t zap_request_wait(zap_request_t *req) { return zap_request_wait_until(req, 0); }

zap_status_t zap_request_received(const zap_request_t *req, size_t *len_p)
{
    if (req == NULL || len_p == NULL || req->kind != ZAP_REQ_RECV)
        return ZAP_ERR_INVALID_PARAM;
    zap_status_t st = zap_request_status(req);
    if (st != ZAP_OK)
        return st;
    *len_p = req->received_len;
    return ZAP_OK;
}

int zap_request_peer(const zap_request_t *req) { return req ? req->peer : -1; }

void zap_request_free(zap_request_t *req)
{
    if (req == NULL)
        return;
    req->transport->ops->request_free(req);
}
