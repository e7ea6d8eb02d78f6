/* The UCX transport: the contract of zap/transport.h over UCP tagged messages.
 *
 * One UCP context and worker per transport, one lock around every call into
 * the worker (serialised thread mode), one endpoint per peer created at the
 * first send to or receive from it. A receive needs the endpoint too: it is
 * what lets UCX notice that the peer died (peer error handling), which fails
 * the receives posted from that peer instead of leaving them to the timeout.
 *
 * Tags: ucp_tag.h. Each zap request wraps the UCX request while it is pending;
 * UCX calls back (inside ucp_worker_progress, so under the lock) with the
 * status, and the callback frees the UCX request and completes the zap one.
 * A request freed by its owner while UCX still holds it (a send nobody
 * receives) is orphaned: its completion callback returns it to the free list.
 *
 * Memory: each pool chunk is registered once (pool hooks, ucp_mem_map) and the
 * memh is passed with every send and receive in pool memory at or above
 * MEMH_MIN_BYTES, so UCX's zero-copy and rendezvous paths never register pool
 * memory again; below that size UCX copies eagerly and never looks at a memh,
 * and the lookup is skipped (one pool mutex less on the latency path). Managed
 * chunks are registered as host memory, which is what UCX without CUDA sees;
 * with ZAP_UCP_STAGING auto or prefetch their pages are moved to the host
 * before UCX touches them.
 *
 * Lifetime: close tears down UCX and everything big; the small struct stays
 * (on a process-wide list freed at exit), so that requests the caller still
 * holds can be freed and later calls answer ZAP_ERR_CLOSED instead of touching
 * freed memory. */
#include "zap/ucp.h"
#include "transport/transport_impl.h"
#include "transport/ucp_tag.h"
#include "transport/ucp_connect.h"
#include "transport/ucp_notice.h"
#include "transport/ucp_worker.h"
#include "transport/ucp_oob.h"
#include "transport/ucp_warm.h"
#include "transport/peer_class.h"
#include "pool/backing.h"
#include "base/config_table.h"
#include "base/log.h"
#include <math.h>
#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>

/* Below this many bytes the pool lookup is skipped for host and pinned
 * pools: UCX sends such messages by eager copy (measured thresholds: 8256 B on
 * shared memory, 8 KiB on TCP) and ignores the memh. */
#define MEMH_MIN_BYTES 8192
#define REQ_BLOCK 64
/* Without a timeout: how long freeing a pending send waits for its peer,
 * and how long close waits for its barrier once a peer has gone (it may
 * have passed the barrier and closed, or died before it) and for each
 * endpoint's close. */
#define FREE_WAIT_S 1.0
#define CLOSE_GRACE_S 2.0

typedef struct ucp_transport ucp_transport_t;

/* The worker lock. Held for short stretches (one post, one progress call) by
 * most paths, and by a blocking send or receive for as long as it polls: a
 * test-and-set lock costs a third of an uncontended mutex, and taking none at
 * all per poll is what keeps a blocking ping-pong level with bare UCP. So a
 * thread that finds the lock taken says so (waiting), and a holder that polls
 * checks that count and gives way. A waiter spins on a plain load, then
 * yields now and then, so a holder that was descheduled (2 cores, many
 * processes) gets the CPU back. */
typedef struct {
    atomic_bool held;
    atomic_uint waiting;
} spin_t;

static inline void spin_pause(void)
{
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    __asm__ __volatile__("yield");
#endif
}

static inline void spin_lock(spin_t *l)
{
    if (!atomic_exchange_explicit(&l->held, true, memory_order_acquire))
        return;
    atomic_fetch_add_explicit(&l->waiting, 1, memory_order_relaxed);
    unsigned n = 0;
    do {
        while (atomic_load_explicit(&l->held, memory_order_relaxed))
            if ((++n & 63) == 0)
                sched_yield();
            else
                spin_pause();
    } while (atomic_exchange_explicit(&l->held, true, memory_order_acquire));
    atomic_fetch_sub_explicit(&l->waiting, 1, memory_order_relaxed);
}

static inline void spin_unlock(spin_t *l) { atomic_store_explicit(&l->held, false, memory_order_release); }

static inline int spin_contended(spin_t *l) { return atomic_load_explicit(&l->waiting, memory_order_relaxed) != 0; }

/* Lets a waiting thread take the lock, then takes it back. Unlocking alone
 * would not do: the holder would win it again before the waiter's core even
 * saw it free. The wait for the handover is bounded, in case the waiter was
 * descheduled. */
static void spin_give_way(spin_t *l)
{
    spin_unlock(l);
    for (unsigned i = 0; i < 4096 && !atomic_load_explicit(&l->held, memory_order_relaxed); i++)
        spin_pause();
    spin_lock(l);
}

typedef struct ucp_peer {
    ucp_transport_t *t;
    int rank;
    ucp_ep_h ep;
    int peer_errors;     /* ep created with UCX peer error handling */
    int failed;          /* set by UCX's error callback or a failure notice */
    int failure_handled; /* endpoint closed, its receives failed */
    ucs_status_t fail_status; /* UCX's reason, logged by handle_failures */
    int reported_by;     /* failed only by a notice from this rank; else -1 */
    uint8_t cls;         /* zap_peer_class_t, fixed at create: the counter its sends add to */
} ucp_peer_t;

typedef struct ucp_req {
    zap_request_t base;
    void *ucx;                   /* UCX's request while pending, else NULL */
    zap_status_t cancel_status;  /* reported when UCX says "canceled" because we asked */
    int orphaned;                /* freed by its owner while still pending */
    int listed;                  /* on the pending list */
    size_t cap;                  /* receive capacity, for the truncation message */
    struct ucp_req *prev, *next; /* pending list; next doubles as free link */
} ucp_req_t;

struct ucp_transport {
    zap_transport_t base;
    zap_ucp_worker_t w;
    spin_t lock;
    ucp_peer_t *peers;
    int failures_pending;
    int first_failed;  /* the rank that failed first, as far as known; -1 */
    int notified;      /* this rank has sent its failure notices */
    unsigned polls;    /* progress calls, to look for notices now and then */
    double notice_probed; /* zap_clock_now of the last look */
    zap_ucp_notice_t notice;
    unsigned connect_done; /* peers done connecting at creation (ucp_connect.h) */
    int hook_slot; /* -1: hooks not installed */
    int staging;   /* prefetch managed memory to the host first */
    /* Messages shorter than this skip the pool lookup (mem_params): 1 for a
     * managed pool, whose pages may need staging at any size, else
     * MEMH_MIN_BYTES. One compare covers both that and len 0. */
    size_t lookup_min;
    ucp_req_t pending; /* sentinel of requests UCX holds */
    ucp_req_t *free_reqs;
    void **blocks;
    size_t nblocks, cap_blocks;
    int closing;      /* close has begun: peers closing too look like failures */
    int torn_down;    /* UCX resources released by close */
    struct ucp_transport *next_closed;
    zap_transport_traffic_t sent; /* per peer class (peer_class.h); under the lock */
};

static const zap_transport_ops_t ucp_ops;

/* Set once UCX has said it cannot detect peer failure on the transports in
 * use (shared memory with UCX_MM_ERROR_HANDLING=n and nothing else allowed,
 * say). UCX_TLS is per process, so is this. */
static atomic_int no_peer_errors;

static ucp_transport_t *ucp_of(zap_transport_t *t) { return (ucp_transport_t *)t; }

/* ---- requests (lock held) --------------------------------------------- */

/* The last completed request this thread freed, of whichever transport:
 * a blocking send or receive frees its request and the next post takes it
 * back, so a ping-pong touches neither the free list nor, when freeing, the
 * lock. It stays in its transport's blocks, which live until exit. */
static _Thread_local ucp_req_t *tls_req;

static ucp_req_t *req_get(ucp_transport_t *u)
{
    if (tls_req != NULL && tls_req->base.transport == &u->base) {
        ucp_req_t *r = tls_req;
        tls_req = NULL;
        r->ucx = NULL;
        r->cancel_status = ZAP_OK;
        r->orphaned = 0;
        r->listed = 0;
        r->cap = 0;
        r->prev = r->next = NULL;
        return r;
    }
    if (u->free_reqs == NULL) {
        if (u->nblocks == u->cap_blocks) {
            size_t cap = u->cap_blocks ? u->cap_blocks * 2 : 16;
            void **b = realloc(u->blocks, cap * sizeof(void *));
            if (b == NULL)
                return NULL;
            u->blocks = b;
            u->cap_blocks = cap;
        }
        ucp_req_t *blk = calloc(REQ_BLOCK, sizeof(ucp_req_t));
        if (blk == NULL)
            return NULL;
        u->blocks[u->nblocks++] = blk;
        for (int i = 0; i < REQ_BLOCK; i++) {
            blk[i].next = u->free_reqs;
            u->free_reqs = &blk[i];
        }
    }
    ucp_req_t *r = u->free_reqs;
    u->free_reqs = r->next;
    /* Field by field: a memset compiles to rep stos, whose start-up cost
     * showed at the top of a small-message profile. base is set by
     * zap_request_base_init. */
    r->ucx = NULL;
    r->cancel_status = ZAP_OK;
    r->orphaned = 0;
    r->listed = 0;
    r->cap = 0;
    r->prev = r->next = NULL;
    return r;
}

static void req_put(ucp_transport_t *u, ucp_req_t *r)
{
    r->next = u->free_reqs;
    u->free_reqs = r;
}

static void list_add(ucp_transport_t *u, ucp_req_t *r)
{
    r->prev = u->pending.prev;
    r->next = &u->pending;
    u->pending.prev->next = r;
    u->pending.prev = r;
    r->listed = 1;
}

static void list_del(ucp_req_t *r)
{
    if (!r->listed)
        return;
    r->prev->next = r->next;
    r->next->prev = r->prev;
    r->prev = r->next = NULL;
    r->listed = 0;
}

/* ---- completion (inside ucp_worker_progress, lock held) ----------------- */

/* Marks peer failed for a UCX status that says it is gone, unless known or
 * closing; handle_failures does the rest. Returns whether it was new. */
static int mark_failed(ucp_transport_t *u, int peer, ucs_status_t s)
{
    ucp_peer_t *p = &u->peers[peer];
    if (p->failed || u->closing || zap_ucp_status(s) != ZAP_ERR_PEER_FAILED)
        return 0;
    p->failed = 1;
    p->fail_status = s;
    p->reported_by = -1;
    u->failures_pending = 1;
    return 1;
}

static void finish(ucp_req_t *r, ucs_status_t s, size_t len)
{
    ucp_transport_t *u = ucp_of(r->base.transport);
    zap_status_t st;
    if (s == UCS_OK) {
        st = ZAP_OK;
        r->base.received_len = len;
    } else if (s == UCS_ERR_CANCELED && r->cancel_status != ZAP_OK) {
        st = r->cancel_status;
    } else {
        st = zap_ucp_status(s);
        if (st == ZAP_ERR_TRUNCATED)
            zap_error("ucp: rank %d: message of %zu bytes from rank %d (tag 0x%llx) exceeds the %zu-byte "
                      "receive buffer",
                      u->base.rank, len, r->base.peer, (unsigned long long)r->base.tag, r->cap);
        else if (st == ZAP_ERR_CANCELED && u->peers[r->base.peer].failed)
            st = ZAP_ERR_PEER_FAILED;
        else if (st == ZAP_ERR_PEER_FAILED)
            /* UCX failed the request with its endpoint and calls the error
             * handler only later: progress_locked handles (logs, tells the
             * others) the failure as soon as this progress call returns,
             * before the caller can see this request's error. */
            (void)mark_failed(u, r->base.peer, s);
        else if (st != ZAP_ERR_CANCELED)
            zap_error("ucp: rank %d: %s rank %d (tag 0x%llx) failed: %s", u->base.rank,
                      r->base.kind == ZAP_REQ_SEND ? "send to" : "receive from", r->base.peer,
                      (unsigned long long)r->base.tag, ucs_status_string(s));
    }
    list_del(r);
    r->ucx = NULL;
    if (r->orphaned)
        req_put(u, r);
    else
        zap_request_complete(&r->base, st);
}

static void send_cb(void *request, ucs_status_t s, void *user_data)
{
    ucp_request_free(request);
    finish(user_data, s, 0);
}

static void recv_cb(void *request, ucs_status_t s, const ucp_tag_recv_info_t *info, void *user_data)
{
    ucp_request_free(request);
    finish(user_data, s, info != NULL ? info->length : 0);
}

static void peer_error_cb(void *arg, ucp_ep_h ep, ucs_status_t s)
{
    ucp_peer_t *p = arg;
    (void)ep;
    if (p->failed)
        return;
    p->failed = 1;
    p->fail_status = s;
    p->reported_by = -1;
    p->t->failures_pending = 1;
    if (p->t->closing) /* the peer closed its side after the close barrier */
        zap_debug("ucp: rank %d: peer rank %d went away during close: %s", p->t->base.rank, p->rank,
                  ucs_status_string(s));
    /* Otherwise handle_failures logs it, once it has read the notices that
     * may name the rank that failed first. */
}

/* Reads the failure notices peers left before leaving (ucp_notice.h); the
 * ranks they name are failed here too. */
static void take_notices(ucp_transport_t *u)
{
    int failed, from, kind;
    zap_notice_t rv;
    while ((kind = zap_ucp_notice_take(u->w.worker, &u->notice, u->base.size, &failed, &from, &rv)) != 0) {
        if (kind == 2) { /* a revocation: for whoever reads the log */
            zap_transport_notice_arrived(&u->base, &rv);
            continue;
        }
        if (failed == u->base.rank)
            continue; /* a rank that found this one slow; this one knows better */
        if (u->first_failed < 0)
            u->first_failed = failed;
        ucp_peer_t *p = &u->peers[failed];
        if (!p->failed) {
            p->failed = 1;
            p->reported_by = from;
        }
    }
}

static void log_failure(ucp_transport_t *u, int i)
{
    ucp_peer_t *p = &u->peers[i];
    if (p->reported_by >= 0)
        zap_error("ucp: rank %d: peer rank %d failed (failure notice from rank %d)", u->base.rank, i,
                  p->reported_by);
    else if (u->first_failed == i)
        zap_error("ucp: rank %d: peer rank %d failed: %s", u->base.rank, i, ucs_status_string(p->fail_status));
    else
        zap_error("ucp: rank %d: peer rank %d went away (%s) after peer rank %d failed first", u->base.rank, i,
                  ucs_status_string(p->fail_status), u->first_failed);
}

static zap_status_t peer_ep_for(ucp_transport_t *u, int peer, bool warm, ucp_ep_h *ep_p);
static void handle_failures(ucp_transport_t *u);

/* A post or blocking call that UCX refuses because the peer is gone, before
 * UCX has called the endpoint's error handler (it does at the next progress):
 * a failure like one UCX reports later. Handled now, so the log reads the
 * notices already here and names the rank that failed first, and the other
 * ranks are told, before the caller sees the error and perhaps leaves.
 * Returns whether the peer is now failed. Lock held. */
static int fail_peer_now(ucp_transport_t *u, int peer, ucs_status_t s)
{
    (void)mark_failed(u, peer, s);
    /* Also when the peer was already marked: UCX may have run the endpoint's
     * error callback inside the very call that failed (outside progress), and
     * that failure is still unlogged and untold. */
    handle_failures(u);
    return u->peers[peer].failed;
}

/* Before a request's PEER_FAILED reaches its caller: a failure marked by a
 * completion that ran outside progress_locked (inside another UCX call) is
 * logged and told now, not after the caller has perhaps left. */
static void settle_failures(ucp_transport_t *u)
{
    spin_lock(&u->lock);
    if (!u->torn_down)
        handle_failures(u);
    spin_unlock(&u->lock);
}

/* Once per transport, on the first failure: tells every live peer which rank
 * failed first, before this rank's error reaches its caller. */
static void send_notices(ucp_transport_t *u)
{
    u->notified = 1;
    int n = u->base.size;
    ucp_ep_h *eps = calloc((size_t)n, sizeof(*eps));
    if (eps == NULL)
        return;
    for (int i = 0; i < n; i++)
        if (i != u->base.rank && !u->peers[i].failed && peer_ep_for(u, i, false, &eps[i]) != ZAP_OK)
            eps[i] = NULL;
    double wait = u->base.timeout_s < 0.2 ? u->base.timeout_s : 0.2;
    zap_ucp_notice_send(u->w.worker, &u->notice, u->base.rank, u->first_failed, eps, n, zap_clock_now() + wait);
    free(eps);
}

/* After progress: closes the endpoints of failed peers and fails the
 * receives posted from them (UCX fails only what is queued on an endpoint;
 * tag receives belong to the worker). */
static void handle_failures(ucp_transport_t *u)
{
    if (!u->failures_pending)
        return;
    u->failures_pending = 0;
    if (!u->closing)
        take_notices(u);
    for (int i = 0; i < u->base.size; i++) {
        ucp_peer_t *p = &u->peers[i];
        if (!p->failed || p->failure_handled)
            continue;
        p->failure_handled = 1;
        if (!u->closing) {
            if (u->first_failed < 0)
                u->first_failed = i;
            log_failure(u, i);
        }
        if (p->ep != NULL) {
            ucp_request_param_t cp = {.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS, .flags = UCP_EP_CLOSE_FLAG_FORCE};
            ucs_status_ptr_t cr = ucp_ep_close_nbx(p->ep, &cp);
            if (UCS_PTR_IS_PTR(cr))
                ucp_request_free(cr); /* completes in the background */
            p->ep = NULL;
        }
    }
    for (ucp_req_t *r = u->pending.next, *n; r != &u->pending; r = n) {
        n = r->next;
        if (r->base.kind == ZAP_REQ_RECV && u->peers[r->base.peer].failed && r->ucx != NULL) {
            r->cancel_status = ZAP_ERR_PEER_FAILED;
            ucp_request_cancel(u->w.worker, r->ucx);
        }
    }
    if (!u->closing && !u->notified && u->first_failed >= 0)
        send_notices(u);
}

/* Now and then (the clock read every 256 progress calls, a look at most
 * every NOTICE_PERIOD_S) look for notices: a rank waiting on a peer whose
 * death UCX has not reported (a connection still being retried) learns it
 * from the rank that noticed, and a rank whose collective another rank
 * failed learns of the revocation. The probe walks UCX's whole unexpected
 * queue (its source bits are masked), long with thousands of messages in
 * flight: hence the time limit. A waiting rank polls far more often than
 * every 256 calls a period; one that yields the CPU each poll (an
 * oversubscribed node) still reads the clock often enough. n progress calls
 * were just made. */
#define NOTICE_PERIOD_S 0.02
static inline void count_polls(ucp_transport_t *u, unsigned n)
{
    unsigned before = u->polls;
    u->polls = before + n;
    if (((before ^ u->polls) & ~255u) != 0 && !u->closing) {
        double now = zap_clock_now();
        if (now - u->notice_probed > NOTICE_PERIOD_S) {
            u->notice_probed = now;
            if (zap_ucp_notice_waiting(u->w.worker))
                u->failures_pending = 1;
        }
    }
    handle_failures(u);
}

static inline void progress_locked(ucp_transport_t *u)
{
    ucp_worker_progress(u->w.worker);
    count_polls(u, 1);
}

/* ---- posting ------------------------------------------------------------ */

/* The endpoint to peer, created at first use. warm: a same-host peer's
 * first endpoint also warms its receive ring (ucp_warm.h) — for traffic, not
 * for a notice about a failure, whose peer may be the next to go. */
static zap_status_t peer_ep_for(ucp_transport_t *u, int peer, bool warm, ucp_ep_h *ep_p)
{
    ucp_peer_t *p = &u->peers[peer];
    if (p->failed) {
        zap_error("ucp: rank %d: cannot post to or from rank %d: it failed earlier", u->base.rank, peer);
        return ZAP_ERR_PEER_FAILED;
    }
    if (p->ep == NULL) {
        /* Peer error handling for every other rank (ucp_worker.h says when
         * shared memory offers it). Where UCX still has no transport that
         * can give it, it says so once and dead peers show up as timeouts;
         * the self endpoint never needs it. UCX refuses a dead peer the
         * same way: only an endpoint that then works without error
         * handling shows that the transports lack it. */
        int want = !atomic_load(&no_peer_errors) && zap_ucp_want_peer_errors(&u->w, peer);
        zap_status_t st = zap_ucp_ep_create(&u->w, peer, want, peer_error_cb, p, &p->ep);
        if (st == ZAP_ERR_UNSUPPORTED) {
            want = 0;
            st = zap_ucp_ep_create(&u->w, peer, 0, NULL, NULL, &p->ep);
            if (st == ZAP_OK && !atomic_exchange(&no_peer_errors, 1))
                zap_info("ucp: rank %d: UCX cannot detect peer failure on these transports (UCX_TLS); a dead peer "
                         "will show as ZAP_ERR_TIMED_OUT",
                         u->base.rank);
        }
        if (st == ZAP_ERR_PEER_FAILED) {
            p->ep = NULL;
            (void)fail_peer_now(u, peer, UCS_ERR_UNREACHABLE); /* its worker is gone: connection refused */
        }
        if (st != ZAP_OK)
            return st;
        p->peer_errors = want;
        if (warm && p->cls == ZAP_PEER_SAME_HOST)
            zap_ucp_warm_peer(p->ep);
    }
    *ep_p = p->ep;
    return ZAP_OK;
}

static zap_status_t peer_ep(ucp_transport_t *u, int peer, ucp_ep_h *ep_p) { return peer_ep_for(u, peer, true, ep_p); }

/* Fills in the memh and memory type for pool memory found in reg (and
 * stages managed pages to the host). */
static zap_status_t mem_params_pool(ucp_transport_t *u, const void *buf, size_t len, const zap_pool_region_t *reg,
                                    ucp_request_param_t *p)
{
    if (reg->kind == ZAP_MEM_MANAGED && u->staging) {
        zap_status_t st = zap_cuda_prefetch_host_sync(buf, len);
        if (st != ZAP_OK)
            return st;
    }
    /* Host to UCX whatever the pool kind, as registered: a UCX built with
     * CUDA would otherwise detect managed pages as CUDA memory and take its
     * staging pipeline instead of the memh. */
    p->op_attr_mask |= UCP_OP_ATTR_FIELD_MEMORY_TYPE;
    p->memory_type = UCS_MEMORY_TYPE_HOST;
    if (reg->cookie != NULL && len >= MEMH_MIN_BYTES) {
        p->op_attr_mask |= UCP_OP_ATTR_FIELD_MEMH;
        p->memh = reg->cookie;
    }
    return ZAP_OK;
}

/* Inline, what a small message pays: with a host or pinned pool, one
 * compare; with a managed pool, also the pool's lookup, which answers for
 * memory outside the pool's span without a lock. Ordinary memory is left for
 * UCX to detect. */
static inline zap_status_t mem_params(ucp_transport_t *u, const void *buf, size_t len, ucp_request_param_t *p)
{
    if (len < u->lookup_min)
        return ZAP_OK;
    zap_pool_region_t reg;
    if (zap_pool_lookup(u->base.pool, buf, len, u->hook_slot, &reg) != ZAP_OK)
        return ZAP_OK;
    return mem_params_pool(u, buf, len, &reg, p);
}

static zap_status_t ucp_isend(zap_transport_t *t, int peer, uint64_t tag, const void *buf, size_t len,
                              zap_request_t **req_p)
{
    ucp_transport_t *u = ucp_of(t);
    ucp_request_param_t p;
    p.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA;
    p.cb.send = send_cb;
    zap_status_t st = mem_params(u, buf, len, &p);
    if (st != ZAP_OK)
        return st;
    ucp_ep_h ep = NULL;
    spin_lock(&u->lock);
    st = u->torn_down ? ZAP_ERR_CLOSED : peer_ep(u, peer, &ep);
    ucp_req_t *r = st == ZAP_OK ? req_get(u) : NULL;
    if (st == ZAP_OK && r == NULL)
        st = ZAP_ERR_NO_MEMORY;
    if (st != ZAP_OK) {
        spin_unlock(&u->lock);
        return st;
    }
    zap_request_base_init(&r->base, t, ZAP_REQ_SEND, peer, tag);
    p.user_data = r;
    ucs_status_ptr_t sp = ucp_tag_send_nbx(ep, buf, len, zap_ucp_tag(t->rank, tag), &p);
    zap_peer_count(&u->sent, u->peers[peer].cls, len);
    if (UCS_PTR_IS_PTR(sp)) {
        if (zap_request_status(&r->base) == ZAP_INPROGRESS) {
            r->ucx = sp;
            list_add(u, r);
        } else {
            handle_failures(u); /* the callback already ran, and may have marked the peer failed */
        }
    } else if (UCS_PTR_STATUS(sp) == UCS_OK) {
        zap_request_complete(&r->base, ZAP_OK);
    } else {
        ucs_status_t s = UCS_PTR_STATUS(sp);
        st = zap_ucp_status(s);
        if (!fail_peer_now(u, peer, s))
            zap_error("ucp: rank %d: send of %zu bytes to rank %d (tag 0x%llx) failed: %s", t->rank, len, peer,
                      (unsigned long long)tag, ucs_status_string(s));
        req_put(u, r);
        spin_unlock(&u->lock);
        return st;
    }
    spin_unlock(&u->lock);
    *req_p = &r->base;
    return ZAP_OK;
}

static zap_status_t ucp_irecv(zap_transport_t *t, int peer, uint64_t tag, void *buf, size_t cap,
                              zap_request_t **req_p)
{
    ucp_transport_t *u = ucp_of(t);
    ucp_request_param_t p;
    /* No immediate completion: UCX 1.13 leaves recv_info unfilled when a
     * receive completes inside ucp_tag_recv_nbx (length 0 was seen), so every
     * receive ends in the callback, which gets the length. */
    p.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA | UCP_OP_ATTR_FLAG_NO_IMM_CMPL;
    p.cb.recv = recv_cb;
    zap_status_t st = mem_params(u, buf, cap, &p);
    if (st != ZAP_OK)
        return st;
    ucp_ep_h ep = NULL;
    spin_lock(&u->lock);
    st = u->torn_down ? ZAP_ERR_CLOSED : peer_ep(u, peer, &ep);
    ucp_req_t *r = st == ZAP_OK ? req_get(u) : NULL;
    if (st == ZAP_OK && r == NULL)
        st = ZAP_ERR_NO_MEMORY;
    if (st != ZAP_OK) {
        spin_unlock(&u->lock);
        return st;
    }
    zap_request_base_init(&r->base, t, ZAP_REQ_RECV, peer, tag);
    r->cap = cap;
    p.user_data = r;
    ucs_status_ptr_t sp =
        ucp_tag_recv_nbx(u->w.worker, buf, cap, zap_ucp_tag(peer, tag), ZAP_UCP_MATCH_ALL, &p);
    if (UCS_PTR_IS_ERR(sp)) {
        zap_error("ucp: rank %d: receive from rank %d (tag 0x%llx) failed: %s", t->rank, peer,
                  (unsigned long long)tag, ucs_status_string(UCS_PTR_STATUS(sp)));
        st = zap_ucp_status(UCS_PTR_STATUS(sp));
        req_put(u, r);
        spin_unlock(&u->lock);
        return st;
    }
    /* The callback may already have run (a message was waiting); then the
     * request is complete and UCX's is released. */
    if (zap_request_status(&r->base) == ZAP_INPROGRESS) {
        r->ucx = sp;
        list_add(u, r);
    }
    spin_unlock(&u->lock);
    *req_p = &r->base;
    return ZAP_OK;
}

/* ---- blocking send and receive ------------------------------------------
 *
 * zap_transport_send/recv without a zap request: post with no callback and,
 * unless UCX finishes at once (a small send), poll UCX's own request between
 * progress calls, as a bare UCP program does; the lock is held throughout
 * and given way to any thread that asks. Polls come in batches of POLL_BATCH
 * with nothing in the loop but UCX's two calls; the checks a zap request's
 * wait makes (peer failure, close, deadline, a thread waiting for the lock)
 * run between batches, and the clock is not read before the first batch
 * ends. Most small messages end within the first batch, which runs inline in
 * the blocking call; a longer wait goes on out of line (poll_wait). */

#define POLL_BATCH 64

/* peer_ep for a peer already connected and alive, inline; ZAP_ERR_CLOSED
 * when a concurrent close got the lock first (the peer table is gone: its
 * pointer shares the lock's cache line, so testing it costs nothing). */
static inline zap_status_t known_ep(ucp_transport_t *u, int peer, ucp_ep_h *ep_p)
{
    const ucp_peer_t *peers = u->peers;
    if (peers != NULL && peers[peer].ep != NULL && !peers[peer].failed) {
        *ep_p = peers[peer].ep;
        return ZAP_OK;
    }
    return u->torn_down ? ZAP_ERR_CLOSED : peer_ep(u, peer, ep_p);
}

/* One batch: polls UCX's request req until it is done or POLL_BATCH progress
 * calls have been made, then accounts for them once (count_polls: failures
 * UCX reported, the notice probe). Nothing else runs between a message's
 * arrival and the return, so the request and the worker stay in registers.
 * A thread waiting for the lock waits up to one batch. Lock held. */
static inline ucs_status_t poll_batch(ucp_transport_t *u, ucp_worker_h worker, void *req)
{
    ucs_status_t s;
    unsigned n = 0;
    while ((s = ucp_request_check_status(req)) == UCS_INPROGRESS && n < POLL_BATCH) {
        ucp_worker_progress(worker);
        n++;
    }
    count_polls(u, n);
    return s;
}

/* Releases UCX's finished request req. A receive (info_p not NULL) that ended
 * in an error, or whose length the caller wants (want_len), gets its info in
 * *info_p first; otherwise that library call is left out of the latency
 * path. */
static inline void poll_done(void *req, ucs_status_t s, ucp_tag_recv_info_t *info_p, int want_len)
{
    if (info_p != NULL && (s != UCS_OK || want_len))
        (void)ucp_tag_recv_request_test(req, info_p);
    ucp_request_free(req);
}

/* The rest of a wait that the first batch did not end: more batches, with
 * the checks between them, until req is done; then poll_done. Lock held on
 * entry and on return. Returns the UCS status and sets *why_p to ZAP_OK, or
 * to what to report instead of a cancellation: the reason the wait ended
 * early (peer failed, timed out, or the transport was closed:
 * ZAP_ERR_CANCELED, and UCX's request went with the worker). A request given
 * up on is left for UCX to finish. */
static ucs_status_t poll_wait(ucp_transport_t *u, void *req, zap_request_kind_t kind, int peer, uint64_t tag,
                              size_t cap, ucp_tag_recv_info_t *info_p, int want_len, zap_status_t *why_p)
{
    double deadline = 0;       /* read from the clock now, at the first batch end */
    zap_status_t why = ZAP_OK; /* set once the wait is being ended */
    ucs_status_t s;
    do {
        int give_way = 1;
        if (why == ZAP_OK) {
            /* Close asks for the lock: the check runs before giving way. */
            if (u->peers[peer].failed)
                why = ZAP_ERR_PEER_FAILED;
            else if (atomic_load(&u->base.closed))
                why = ZAP_ERR_CANCELED;
            else if (deadline == 0)
                deadline = zap_clock_now() + u->base.timeout_s;
            else if (zap_clock_now() > deadline)
                why = ZAP_ERR_TIMED_OUT;
            if (why != ZAP_OK) {
                /* A receive not yet matched cancels at once; one whose data
                 * is arriving finishes first, for up to ZAP_TIMEOUT more.
                 * UCX cannot cancel a send: one to a failed peer ends with
                 * its endpoint (handle_failures), one timed out is left. */
                deadline = zap_clock_now() + u->base.timeout_s;
                if (kind == ZAP_REQ_SEND && why == ZAP_ERR_TIMED_OUT)
                    goto give_up;
                if (kind == ZAP_REQ_RECV) {
                    /* Finish it before anyone else gets the lock: a close
                     * waiting for it would destroy the request with the
                     * worker. */
                    ucp_request_cancel(u->w.worker, req);
                    give_way = 0;
                }
            }
        } else if (zap_clock_now() > deadline) {
            goto give_up;
        }
        if (give_way && spin_contended(&u->lock)) {
            spin_give_way(&u->lock);
            if (u->torn_down) { /* closed meanwhile: req went with the worker */
                *why_p = ZAP_ERR_CANCELED;
                return UCS_ERR_CANCELED;
            }
        }
        s = poll_batch(u, u->w.worker, req);
    } while (s == UCS_INPROGRESS);
    poll_done(req, s, info_p, want_len);
    *why_p = why;
    return s;

give_up:
    zap_warn("ucp: rank %d: gave up on a %s rank %d (tag 0x%llx) that UCX could not cancel; its %zu-byte buffer "
             "stays in use until UCX is done with it",
             u->base.rank, kind == ZAP_REQ_SEND ? "send to" : "receive from", peer, (unsigned long long)tag, cap);
    ucp_request_free(req);
    *why_p = why;
    return UCS_ERR_CANCELED;
}

/* The zap status of a finished inline operation that did not end in UCS_OK
 * (logs as finish() does). */
static zap_status_t inline_status(ucp_transport_t *u, ucs_status_t s, zap_status_t why, zap_request_kind_t kind,
                                  int peer, uint64_t tag, size_t len, size_t cap)
{
    if (why != ZAP_OK && (s == UCS_ERR_CANCELED || why == ZAP_ERR_PEER_FAILED))
        return why;
    zap_status_t st = zap_ucp_status(s);
    if (st == ZAP_ERR_TRUNCATED)
        zap_error("ucp: rank %d: message of %zu bytes from rank %d (tag 0x%llx) exceeds the %zu-byte receive buffer",
                  u->base.rank, len, peer, (unsigned long long)tag, cap);
    else if (fail_peer_now(u, peer, s))
        st = ZAP_ERR_PEER_FAILED;
    else if (st != ZAP_ERR_PEER_FAILED && st != ZAP_ERR_CANCELED)
        zap_error("ucp: rank %d: %s rank %d (tag 0x%llx) failed: %s", u->base.rank,
                  kind == ZAP_REQ_SEND ? "send to" : "receive from", peer, (unsigned long long)tag,
                  ucs_status_string(s));
    return st;
}

/* What both blocking forms do first: the buffer's memory parameters, then
 * the worker lock and the peer's endpoint. On ZAP_OK the lock is held. */
static inline zap_status_t blocking_enter(ucp_transport_t *u, int peer, const void *buf, size_t len,
                                          ucp_request_param_t *p, ucp_ep_h *ep_p)
{
    zap_status_t st = mem_params(u, buf, len, p);
    if (st != ZAP_OK)
        return st;
    spin_lock(&u->lock);
    st = known_ep(u, peer, ep_p);
    if (st != ZAP_OK)
        spin_unlock(&u->lock);
    return st;
}

static zap_status_t ucp_send_blocking(zap_transport_t *t, int peer, uint64_t tag, const void *buf, size_t len)
{
    ucp_transport_t *u = ucp_of(t);
    ucp_request_param_t p;
    p.op_attr_mask = 0;
    ucp_ep_h ep = NULL;
    zap_status_t st = blocking_enter(u, peer, buf, len, &p, &ep);
    if (st != ZAP_OK)
        return st;
    ucs_status_ptr_t sp = ucp_tag_send_nbx(ep, buf, len, zap_ucp_tag(t->rank, tag), &p);
    zap_peer_count(&u->sent, u->peers[peer].cls, len);
    if (sp == NULL) { /* sent (copied out) at once: the usual small message */
        spin_unlock(&u->lock);
        return ZAP_OK;
    }
    ucs_status_t s;
    zap_status_t why = ZAP_OK;
    if (UCS_PTR_IS_ERR(sp)) {
        s = UCS_PTR_STATUS(sp);
    } else if ((s = poll_batch(u, u->w.worker, sp)) != UCS_INPROGRESS) {
        poll_done(sp, s, NULL, 0);
    } else {
        s = poll_wait(u, sp, ZAP_REQ_SEND, peer, tag, len, NULL, 0, &why);
    }
    st = s == UCS_OK ? ZAP_OK : inline_status(u, s, why, ZAP_REQ_SEND, peer, tag, len, len);
    spin_unlock(&u->lock);
    if (st == ZAP_ERR_TIMED_OUT)
        zap_transport_log_timeout(t, ZAP_REQ_SEND, peer, tag, t->timeout_s);
    return st;
}

static zap_status_t ucp_recv_blocking(zap_transport_t *t, int peer, uint64_t tag, void *buf, size_t cap,
                                      size_t *len_p)
{
    ucp_transport_t *u = ucp_of(t);
    ucp_request_param_t p;
    /* No immediate completion (UCX 1.13 would not report the length, see
     * ucp_irecv): a message already here gives a completed request. */
    p.op_attr_mask = UCP_OP_ATTR_FLAG_NO_IMM_CMPL;
    ucp_ep_h ep = NULL;
    zap_status_t st = blocking_enter(u, peer, buf, cap, &p, &ep);
    if (st != ZAP_OK)
        return st;
    ucs_status_ptr_t sp =
        ucp_tag_recv_nbx(u->w.worker, buf, cap, zap_ucp_tag(peer, tag), ZAP_UCP_MATCH_ALL, &p);
    if (UCS_PTR_IS_ERR(sp)) {
        zap_error("ucp: rank %d: receive from rank %d (tag 0x%llx) failed: %s", t->rank, peer,
                  (unsigned long long)tag, ucs_status_string(UCS_PTR_STATUS(sp)));
        spin_unlock(&u->lock);
        return zap_ucp_status(UCS_PTR_STATUS(sp));
    }
    zap_status_t why = ZAP_OK;
    ucp_tag_recv_info_t info = {.length = 0};
    ucs_status_t s = poll_batch(u, u->w.worker, sp);
    if (s != UCS_INPROGRESS)
        poll_done(sp, s, &info, len_p != NULL);
    else
        s = poll_wait(u, sp, ZAP_REQ_RECV, peer, tag, cap, &info, len_p != NULL, &why);
    st = s == UCS_OK ? ZAP_OK : inline_status(u, s, why, ZAP_REQ_RECV, peer, tag, info.length, cap);
    spin_unlock(&u->lock);
    if (st == ZAP_OK && len_p != NULL)
        *len_p = info.length;
    else if (st == ZAP_ERR_TIMED_OUT)
        zap_transport_log_timeout(t, ZAP_REQ_RECV, peer, tag, t->timeout_s);
    return st;
}

static zap_status_t ucp_probe(zap_transport_t *t, int peer, uint64_t tag, double deadline, size_t *len_p)
{
    ucp_transport_t *u = ucp_of(t);
    ucp_ep_h ep = NULL;
    ucp_tag_recv_info_t info;
    zap_status_t st = ZAP_OK;
    unsigned n = 0;
    spin_lock(&u->lock);
    st = u->torn_down ? ZAP_ERR_CLOSED : peer_ep(u, peer, &ep);
    while (st == ZAP_OK) {
        if (ucp_tag_probe_nb(u->w.worker, zap_ucp_tag(peer, tag), ZAP_UCP_MATCH_ALL, 0, &info) != NULL) {
            *len_p = info.length;
            break;
        }
        progress_locked(u);
        if (u->peers[peer].failed) {
            st = ZAP_ERR_PEER_FAILED;
        } else if ((++n & 63) == 0 && zap_clock_now() > deadline) {
            zap_error("ucp: rank %d timed out after %.1f s waiting for a message from rank %d (tag 0x%llx)",
                      t->rank, t->timeout_s, peer, (unsigned long long)tag);
            st = ZAP_ERR_TIMED_OUT;
        } else if ((n & 63) == 0) {
            /* Let other threads at the worker now and then. */
            spin_unlock(&u->lock);
            sched_yield();
            spin_lock(&u->lock);
        }
    }
    spin_unlock(&u->lock);
    return st;
}

/* Revocation notices go like failure notices (ucp_notice.h), to every
 * listed peer not known dead, flushed for at most 0.2 s. */
static zap_status_t ucp_notify(zap_transport_t *t, const int *peers, int npeers, const zap_notice_t *n)
{
    ucp_transport_t *u = ucp_of(t);
    ucp_ep_h *eps = calloc((size_t)(npeers > 0 ? npeers : 1), sizeof(*eps));
    if (eps == NULL)
        return ZAP_ERR_NO_MEMORY;
    spin_lock(&u->lock);
    if (u->torn_down) {
        spin_unlock(&u->lock);
        free(eps);
        return ZAP_ERR_CLOSED;
    }
    for (int i = 0; i < npeers; i++) {
        int p = peers[i];
        if (p >= 0 && p < t->size && p != t->rank && !u->peers[p].failed && peer_ep_for(u, p, false, &eps[i]) != ZAP_OK)
            eps[i] = NULL;
    }
    double wait = u->base.timeout_s < 0.2 ? u->base.timeout_s : 0.2;
    zap_ucp_notice_send_revoke(u->w.worker, &u->notice, t->rank, n, eps, npeers, zap_clock_now() + wait);
    handle_failures(u); /* a peer found dead on the way */
    spin_unlock(&u->lock);
    free(eps);
    return ZAP_OK;
}

static zap_status_t ucp_progress(zap_transport_t *t)
{
    ucp_transport_t *u = ucp_of(t);
    spin_lock(&u->lock);
    if (!u->torn_down)
        progress_locked(u);
    spin_unlock(&u->lock);
    return ZAP_OK;
}

static zap_status_t ucp_test(zap_request_t *req)
{
    ucp_transport_t *u = ucp_of(req->transport);
    zap_status_t st = zap_request_status(req);
    if (st == ZAP_INPROGRESS) {
        spin_lock(&u->lock);
        if (!u->torn_down)
            progress_locked(u);
        spin_unlock(&u->lock);
        st = zap_request_status(req);
    }
    if (st == ZAP_ERR_PEER_FAILED)
        settle_failures(u);
    return st;
}

static zap_status_t ucp_wait(zap_request_t *req, double deadline)
{
    ucp_transport_t *u = ucp_of(req->transport);
    unsigned n = 0;
    zap_status_t st;
    while ((st = zap_request_status(req)) == ZAP_INPROGRESS) {
        spin_lock(&u->lock);
        if (!u->torn_down)
            progress_locked(u);
        spin_unlock(&u->lock);
        if ((++n & 31) == 0 && zap_clock_now() > deadline) {
            st = zap_request_status(req);
            if (st == ZAP_INPROGRESS)
                return ZAP_ERR_TIMED_OUT;
            break;
        }
    }
    if (st == ZAP_ERR_PEER_FAILED)
        settle_failures(u);
    return st;
}

static void ucp_request_free_op(zap_request_t *req)
{
    ucp_transport_t *u = ucp_of(req->transport);
    ucp_req_t *r = (ucp_req_t *)req;
    if (zap_request_status(req) != ZAP_INPROGRESS && r->ucx == NULL) {
        /* Complete (its status is stored after ucx is cleared): keep it for
         * this thread's next post; the one kept before goes back. */
        ucp_req_t *old = tls_req;
        tls_req = r;
        if (old == NULL)
            return;
        u = ucp_of(old->base.transport);
        spin_lock(&u->lock);
        req_put(u, old);
        spin_unlock(&u->lock);
        return;
    }
    spin_lock(&u->lock);
    if (u->torn_down)
        r->ucx = NULL;
    if (r->ucx != NULL && req->kind == ZAP_REQ_RECV) {
        /* Unmatched receives cancel at once; one whose data is arriving
         * finishes first (below). */
        r->cancel_status = ZAP_ERR_CANCELED;
        ucp_request_cancel(u->w.worker, r->ucx);
    }
    if (r->ucx != NULL) {
        /* UCX cannot cancel a send: progress until the peer takes it, for at
         * most the timeout (FREE_WAIT_S without one: a free is no wait the
         * caller asked for), then leave it to finish in the background. */
        double deadline = zap_clock_now() + (isfinite(u->base.timeout_s) ? u->base.timeout_s : FREE_WAIT_S);
        unsigned n = 0;
        while (r->ucx != NULL && !((++n & 63) == 0 && zap_clock_now() > deadline))
            progress_locked(u);
        if (r->ucx != NULL) {
            zap_warn("ucp: rank %d: freed a pending %s rank %d (tag 0x%llx) that UCX could not cancel; its "
                     "buffer stays in use until the peer takes it",
                     u->base.rank, req->kind == ZAP_REQ_SEND ? "send to" : "receive from", req->peer,
                     (unsigned long long)req->tag);
            r->orphaned = 1;
            spin_unlock(&u->lock);
            return;
        }
    }
    req_put(u, r);
    spin_unlock(&u->lock);
}

/* ---- pool registration ------------------------------------------------- */

static zap_status_t hook_add(void *ctx, void *base, size_t len, zap_mem_kind_t kind, void **cookie_p)
{
    ucp_transport_t *u = ctx;
    (void)kind; /* every pool kind is host memory to UCX (see the file comment) */
    ucp_mem_map_params_t mp;
    memset(&mp, 0, sizeof(mp));
    mp.field_mask = UCP_MEM_MAP_PARAM_FIELD_ADDRESS | UCP_MEM_MAP_PARAM_FIELD_LENGTH |
                    UCP_MEM_MAP_PARAM_FIELD_MEMORY_TYPE;
    mp.address = base;
    mp.length = len;
    mp.memory_type = UCS_MEMORY_TYPE_HOST;
    ucp_mem_h memh = NULL;
    ucs_status_t s = ucp_mem_map(u->w.context, &mp, &memh);
    if (s != UCS_OK) {
        zap_error("ucp: rank %d: ucp_mem_map of a %zu-byte pool chunk at %p failed: %s", u->base.rank, len, base,
                  ucs_status_string(s));
        return ZAP_ERR_TRANSPORT;
    }
    *cookie_p = memh;
    return ZAP_OK;
}

static void hook_remove(void *ctx, void *base, size_t len, void *cookie)
{
    ucp_transport_t *u = ctx;
    ucs_status_t s = ucp_mem_unmap(u->w.context, cookie);
    if (s != UCS_OK)
        zap_error("ucp: rank %d: ucp_mem_unmap of the %zu-byte pool chunk at %p failed: %s", u->base.rank, len,
                  base, ucs_status_string(s));
}

/* ---- close -------------------------------------------------------------- */

static pthread_mutex_t closed_lock = PTHREAD_MUTEX_INITIALIZER;
static ucp_transport_t *closed_list;

static void free_closed(void)
{
    pthread_mutex_lock(&closed_lock);
    for (ucp_transport_t *u = closed_list, *n; u != NULL; u = n) {
        n = u->next_closed;
        for (size_t i = 0; i < u->nblocks; i++)
            free(u->blocks[i]);
        free(u->blocks);
        free(u);
    }
    closed_list = NULL;
    pthread_mutex_unlock(&closed_lock);
}

static void keep_closed(ucp_transport_t *u)
{
    static int registered;
    pthread_mutex_lock(&closed_lock);
    if (!registered)
        registered = atexit(free_closed) == 0;
    u->next_closed = closed_list;
    closed_list = u;
    pthread_mutex_unlock(&closed_lock);
}

static int any_peer_failed(ucp_transport_t *u)
{
    for (int i = 0; i < u->base.size; i++)
        if (u->peers[i].failed)
            return 1;
    return 0;
}

/* Whether the barrier of close should be given up: the deadline passed,
 * or (without one) a peer went away CLOSE_GRACE_S ago and the barrier is
 * still not done: a peer that passed the barrier and closed looks the same
 * as one that died before it, but the first lets the barrier complete at
 * once. *gone_at is when a peer was first seen gone (0: not yet). */
static int close_gave_up(ucp_transport_t *u, double deadline, double *gone_at)
{
    double now = zap_clock_now();
    if (*gone_at == 0 && any_peer_failed(u))
        *gone_at = now;
    if (now <= deadline && !(*gone_at > 0 && now > *gone_at + CLOSE_GRACE_S))
        return 0;
    if (now > deadline)
        zap_warn("ucp: rank %d: not every rank reached close within %.1f s; closing anyway", u->base.rank,
                 u->base.timeout_s);
    else
        zap_warn("ucp: rank %d: a peer went away and the barrier of close is still not done %.1f s later; "
                 "closing anyway",
                 u->base.rank, CLOSE_GRACE_S);
    return 1;
}

/* The barrier of quiesce over the out-of-band allgather (ucp_oob.h), the
 * worker progressed meanwhile as with MPI's. */
static void quiesce_oob(ucp_transport_t *u, double deadline)
{
    if (any_peer_failed(u))
        return;
    char mine = 1;
    char *all = calloc((size_t)u->base.size, 1);
    void *req = NULL;
    if (all == NULL || u->w.oob.allgather(u->w.oob.ctx, &mine, all, 1, &req) != ZAP_OK) {
        zap_warn("ucp: rank %d: the barrier at close could not start; closing without it", u->base.rank);
        free(all);
        return;
    }
    zap_status_t st;
    double gone_at = 0;
    while ((st = u->w.oob.test(u->w.oob.ctx, req)) == ZAP_INPROGRESS) {
        progress_locked(u);
        if (close_gave_up(u, deadline, &gone_at))
            break;
    }
    /* A request still pending is the callback's to finish: free tells it. */
    u->w.oob.free(u->w.oob.ctx, req);
    free(all);
}

/* Flushes what this rank sent and waits (progressing, so that peers' flushes
 * complete too) until every rank has: after that no message is in flight and
 * endpoints can go. Skipped when a peer is known dead: the barrier could not
 * complete. Bounded by ZAP_TIMEOUT. */
static void quiesce(ucp_transport_t *u, double deadline)
{
    ucp_request_param_t fp = {.op_attr_mask = 0};
    ucs_status_t s = zap_ucp_wait_ptr(u->w.worker, ucp_worker_flush_nbx(u->w.worker, &fp), deadline);
    if (s != UCS_OK && !any_peer_failed(u))
        zap_warn("ucp: rank %d: flushing the worker at close failed: %s", u->base.rank, ucs_status_string(s));
    handle_failures(u);
    if (u->w.oob.allgather != NULL) {
        quiesce_oob(u, deadline);
        return;
    }
    int finalized = 0;
    PMPI_Finalized(&finalized);
    if (finalized || any_peer_failed(u))
        return;
    MPI_Request barrier;
    if (PMPI_Ibarrier(u->w.comm, &barrier) != MPI_SUCCESS)
        return;
    int done = 0;
    double gone_at = 0;
    while (!done) {
        progress_locked(u);
        PMPI_Test(&barrier, &done, MPI_STATUS_IGNORE);
        if (!done && close_gave_up(u, deadline, &gone_at)) {
            /* The barrier request is left behind (MPI forbids freeing a
             * pending collective), and so is the communicator it uses. */
            u->w.comm = MPI_COMM_NULL;
            return;
        }
    }
}

static void ucp_close(zap_transport_t *t)
{
    ucp_transport_t *u = ucp_of(t);
    if (atomic_exchange(&t->closed, true))
        return;
    spin_lock(&u->lock);
    double deadline = zap_clock_now() + u->base.timeout_s;
    /* Pending receives are cancelled first, so that peers leaving after the
     * barrier cannot turn them into failures; pending sends end with their
     * endpoints, which UCX completes as cancelled. */
    u->closing = 1;
    for (ucp_req_t *r = u->pending.next, *n; r != &u->pending; r = n) {
        n = r->next;
        if (r->base.kind == ZAP_REQ_RECV) {
            r->cancel_status = ZAP_ERR_CANCELED;
            ucp_request_cancel(u->w.worker, r->ucx);
        }
    }
    quiesce(u, deadline);
    for (int i = 0; i < t->size; i++) {
        ucp_peer_t *p = &u->peers[i];
        if (p->ep == NULL)
            continue;
        /* Forced close needs peer error handling; without it, flush mode
         * (everything is flushed already, so it does not wait on the peer). */
        int forced = p->peer_errors;
        ucp_request_param_t cp = {.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS, .flags = forced ? UCP_EP_CLOSE_FLAG_FORCE : 0};
        double ep_deadline = zap_clock_now() + CLOSE_GRACE_S;
        (void)zap_ucp_wait_ptr(u->w.worker, ucp_ep_close_nbx(p->ep, &cp), deadline < ep_deadline ? deadline : ep_deadline);
        p->ep = NULL;
    }
    /* Orphans and anything UCX still holds are finished now: what is left
     * pending after this is completed by hand. */
    for (int i = 0; i < 16; i++)
        ucp_worker_progress(u->w.worker);
    for (ucp_req_t *r = u->pending.next, *n; r != &u->pending; r = n) {
        n = r->next;
        list_del(r);
        r->ucx = NULL; /* UCX's request goes with the worker */
        if (r->orphaned)
            req_put(u, r);
        else
            zap_request_complete(&r->base, ZAP_ERR_CANCELED);
    }
    if (u->hook_slot >= 0)
        (void)zap_pool_hooks_remove(t->pool, u->hook_slot);
    u->hook_slot = -1;
    zap_ucp_worker_cleanup(&u->w);
    u->torn_down = 1;
    if (t->owns_pool && zap_pool_destroy(t->pool) != ZAP_OK)
        zap_error("ucp: rank %d: the transport's pool still has buffers out at close; left in place", t->rank);
    /* Requests still out keep their blocks; the rest can go. */
    free(u->peers);
    u->peers = NULL;
    zap_transport_base_cleanup(t);
    spin_unlock(&u->lock);
    keep_closed(u);
}

/* Host identities come from the address exchange (ucp_worker.c), which
 * stays until close; zap_transport_host refuses a closed transport. */
static uint64_t ucp_host(const zap_transport_t *t, int rank) { return ucp_of((zap_transport_t *)t)->w.host[rank]; }

static void ucp_traffic(zap_transport_t *t, zap_transport_traffic_t *traffic_p)
{
    ucp_transport_t *u = ucp_of(t);
    spin_lock(&u->lock);
    *traffic_p = u->sent;
    spin_unlock(&u->lock);
}

/* Failures marked but not yet handled (a completion inside another UCX
 * call) are handled first, so the answer includes them. */
static int ucp_first_failed(zap_transport_t *t)
{
    ucp_transport_t *u = ucp_of(t);
    spin_lock(&u->lock);
    if (!u->torn_down)
        handle_failures(u);
    int f = u->first_failed;
    spin_unlock(&u->lock);
    return f;
}

static const zap_transport_ops_t ucp_ops = {
    .name = "ucp",
    .cap_flags = ZAP_CAP_ZERO_COPY | ZAP_CAP_MULTI_NODE,
    .min_latency_us = 2.0,
    .isend = ucp_isend,
    .irecv = ucp_irecv,
    .probe = ucp_probe,
    .progress = ucp_progress,
    .test = ucp_test,
    .wait = ucp_wait,
    .request_free = ucp_request_free_op,
    .close = ucp_close,
    .send = ucp_send_blocking,
    .recv = ucp_recv_blocking,
    .notify = ucp_notify,
    .host = ucp_host,
    .traffic = ucp_traffic,
    .first_failed = ucp_first_failed,
};

/* ---- create ------------------------------------------------------------- */

/* Both bootstraps: over comm, or over oob when it is not NULL. */
/* ---- connecting at creation --------------------------------------------- */

/* ZAP_UCP_PRECONNECT=auto connects at creation in worlds of up to this many
 * other ranks: each connection holds a socket (a descriptor) for the life of
 * the transport, which a rank that talks to a few neighbours of a large job
 * does not need. The world's size, not the count of TCP peers, so that every
 * rank decides the same (ucp_connect.h). */
#define PRECONNECT_AUTO_MAX 256
/* The connections are made for safety, not for any caller: a peer that has
 * not answered by then (ZAP_TIMEOUT, when shorter) is connected in the
 * background, as at a first message. */
#define PRECONNECT_WAIT_S 10.0

/* Connects to the peers UCX reaches over TCP (ucp_connect.h says why), per
 * ZAP_UCP_PRECONNECT (mode 0 auto, 1 on, 2 off). A peer found dead on the
 * way is failed as in traffic; one that does not answer in time is left to
 * finish in the background. Lock not needed: the transport is not shared
 * yet. */
static void preconnect(ucp_transport_t *u, int mode)
{
    if (mode == 2)
        return;
    int n = u->base.size, count = 0;
    for (int i = 0; i < n; i++)
        count += zap_ucp_peer_over_tcp(&u->w, i);
    if (count == 0)
        return;
    if (mode == 0 && n - 1 > PRECONNECT_AUTO_MAX) {
        zap_info("ucp: rank %d: %d ranks, more than ZAP_UCP_PRECONNECT=auto connects at creation (%d others); "
                 "each peer over TCP is connected at its first message",
                 u->base.rank, n, PRECONNECT_AUTO_MAX);
        return;
    }
    ucp_ep_h *eps = calloc((size_t)n, sizeof(*eps));
    ucs_status_t *status = calloc((size_t)n, sizeof(*status));
    if (eps != NULL && status != NULL) {
        for (int i = 0; i < n; i++)
            if (zap_ucp_peer_over_tcp(&u->w, i) && peer_ep_for(u, i, false, &eps[i]) != ZAP_OK)
                eps[i] = NULL; /* refused: failed and told (peer_ep_for) */
        double wait = u->base.timeout_s < PRECONNECT_WAIT_S ? u->base.timeout_s : PRECONNECT_WAIT_S;
        double t0 = zap_clock_now();
        if (zap_ucp_connect_wait(u->w.worker, eps, n, t0 + wait, &u->connect_done, status))
            zap_debug("ucp: rank %d: connected to %d peers over TCP in %.3f s", u->base.rank, count,
                      zap_clock_now() - t0);
        else
            zap_info("ucp: rank %d: not every peer over TCP answered within %.1f s; the rest connect in the "
                     "background",
                     u->base.rank, wait);
        for (int i = 0; i < n; i++)
            if (eps[i] != NULL && status[i] != UCS_OK && status[i] != UCS_ERR_TIMED_OUT &&
                status[i] != UCS_ERR_NO_MEMORY)
                (void)fail_peer_now(u, i, status[i]);
        handle_failures(u); /* one UCX reported through the error handler */
    }
    free(eps);
    free(status);
}

static zap_status_t create(MPI_Comm comm, const zap_ucp_oob_t *oob, zap_pool_t *pool,
                           const zap_transport_params_t *params, zap_transport_t **t_p)
{
    if (t_p == NULL)
        return ZAP_ERR_INVALID_PARAM;
    int staging = 0, connect = 0;
    double timeout = 0;
    zap_status_t st = zap_cfg_get_choice(ZAP_CFG_UCP_STAGING, &staging);
    if (st == ZAP_OK)
        st = zap_cfg_get_choice(ZAP_CFG_UCP_PRECONNECT, &connect);
    if (st == ZAP_OK)
        st = zap_transport_params_timeout(params, &timeout);
    /* Settings are per process but every rank reads the same environment
     * under mpirun; a rank that fails here fails the agreement below. */
    ucp_transport_t *u = calloc(1, sizeof(*u));
    if (st == ZAP_OK && u == NULL)
        st = ZAP_ERR_NO_MEMORY;
    int size = 0;
    if (oob != NULL) {
        size = oob->size;
    } else {
        int inited = 0;
        PMPI_Initialized(&inited);
        if (!inited) {
            zap_error("ucp: MPI must be initialised to bootstrap the UCX transport");
            free(u);
            return ZAP_ERR_INVALID_PARAM;
        }
        PMPI_Comm_size(comm, &size);
    }
    if (size > (1 << ZAP_UCP_RANK_BITS)) {
        zap_error("ucp: %d ranks: the UCX transport's tags carry at most %d", size, 1 << ZAP_UCP_RANK_BITS);
        st = ZAP_ERR_INVALID_PARAM;
    }
    int mine = (int)st, all = 0;
    if (oob != NULL)
        all = (int)zap_ucp_oob_agree(oob, st);
    else if (PMPI_Allreduce(&mine, &all, 1, MPI_INT, MPI_MIN, comm) != MPI_SUCCESS)
        all = ZAP_ERR_TRANSPORT;
    if (all != ZAP_OK) {
        free(u);
        return (zap_status_t)all;
    }
    st = oob != NULL ? zap_ucp_worker_init_oob(&u->w, oob, timeout) : zap_ucp_worker_init(&u->w, comm, timeout);
    if (st != ZAP_OK) {
        free(u);
        return st;
    }
    zap_log_set_rank(u->w.rank);
    st = zap_ucp_warm_listen(u->w.worker, u->w.rank);
    if (st == ZAP_OK)
        st = zap_ucp_connect_listen(u->w.worker, &u->connect_done, u->w.rank);
    u->staging = staging != 2; /* auto|prefetch|none */
    u->hook_slot = -1;
    u->first_failed = -1;
    u->pending.next = u->pending.prev = &u->pending;
    atomic_init(&u->lock.held, false);
    atomic_init(&u->lock.waiting, 0);
    u->peers = calloc((size_t)u->w.size, sizeof(ucp_peer_t));
    bool owns_pool = false;
    if (u->peers == NULL)
        st = ZAP_ERR_NO_MEMORY;
    if (st == ZAP_OK && pool == NULL) {
        zap_pool_params_t pp = {.backend = ZAP_POOL_BACKEND_ENV, .device = -1, .name = "ucp"};
        st = zap_pool_create(&pp, &pool);
        owns_pool = st == ZAP_OK;
    }
    if (st == ZAP_OK) {
        zap_pool_hooks_t hooks = {.on_add = hook_add, .on_remove = hook_remove, .ctx = u};
        st = zap_pool_hooks_add(pool, &hooks, &u->hook_slot);
        if (st != ZAP_OK)
            u->hook_slot = -1;
    }
    all = (int)zap_ucp_worker_agree(&u->w, st);
    if (all != ZAP_OK) {
        if (u->hook_slot >= 0)
            (void)zap_pool_hooks_remove(pool, u->hook_slot);
        if (owns_pool)
            (void)zap_pool_destroy(pool);
        zap_ucp_worker_cleanup(&u->w);
        free(u->peers);
        free(u);
        return (zap_status_t)all;
    }
    for (int i = 0; i < u->w.size; i++) {
        u->peers[i].t = u;
        u->peers[i].rank = i;
        u->peers[i].cls = zap_peer_class_of(u->w.host, u->w.rank, i);
    }
    u->lookup_min = zap_pool_kind(pool) == ZAP_MEM_MANAGED ? 1 : MEMH_MIN_BYTES;
    zap_transport_base_init(&u->base, &ucp_ops, u->w.rank, u->w.size, pool, owns_pool);
    u->base.timeout_s = timeout;
    if (u->w.tcp_lingers)
        u->base.caps |= ZAP_CAP_SENDS_NEED_PROGRESS;
    preconnect(u, connect);
    *t_p = &u->base;
    return ZAP_OK;
}

zap_status_t zap_ucp_transport_create(MPI_Comm comm, zap_pool_t *pool, zap_transport_t **t_p)
{
    return create(comm, NULL, pool, NULL, t_p);
}

zap_status_t zap_ucp_transport_create_ex(MPI_Comm comm, zap_pool_t *pool, const zap_transport_params_t *params,
                                         zap_transport_t **t_p)
{
    return create(comm, NULL, pool, params, t_p);
}

zap_status_t zap_ucp_transport_create_oob(const zap_ucp_oob_t *oob, zap_pool_t *pool, zap_transport_t **t_p)
{
    if (oob == NULL || oob->allgather == NULL || oob->test == NULL || oob->free == NULL || oob->size < 1 ||
        oob->rank < 0 || oob->rank >= oob->size)
        return ZAP_ERR_INVALID_PARAM;
    return create(MPI_COMM_NULL, oob, pool, NULL, t_p);
}
