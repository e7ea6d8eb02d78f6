/* What a transport backend implements. A backend embeds zap_transport_t as the
 * first member of its own struct and supplies one ops table; requests likewise
 * embed zap_request_t first. transport.c does argument checks common to every
 * backend (rank range, NULL buffers, closed) before calling the ops, so ops see
 * only valid arguments. Entries marked optional may be NULL. */
#ifndef ZAP_TRANSPORT_IMPL_H
#define ZAP_TRANSPORT_IMPL_H
#include <stdatomic.h>
#include <stdbool.h>
#include "zap/transport.h"

/* A revocation notice (zap_transport_notify): rank from failed the
 * operations of a channel (the collectives use their communicator's
 * context) from sequence seq on, with status, blaming transport rank culprit
 * (-1: none in particular). The transport carries these few bytes
 * best-effort to a list of ranks and logs the ones it receives; it neither
 * knows nor interprets channels (coll/engine/op.c does). */
typedef struct zap_notice {
    uint64_t seq;
    uint32_t channel;
    int32_t status;
    int32_t culprit;
    int32_t from;
} zap_notice_t;

typedef struct zap_transport_ops {
    const char *name;
    uint32_t cap_flags;
    double min_latency_us;
    zap_status_t (*isend)(zap_transport_t *t, int peer, uint64_t tag, const void *buf, size_t len,
                          zap_request_t **req_p);
    zap_status_t (*irecv)(zap_transport_t *t, int peer, uint64_t tag, void *buf, size_t cap,
                          zap_request_t **req_p);
    /* Blocks until the next message from peer/tag has arrived (or deadline) and
     * reports its length without consuming it; the following irecv with the
     * same peer and tag receives it. */
    zap_status_t (*probe)(zap_transport_t *t, int peer, uint64_t tag, double deadline, size_t *len_p);
    zap_status_t (*progress)(zap_transport_t *t);
    /* Returns ZAP_OK (complete), ZAP_INPROGRESS or a completion error. */
    zap_status_t (*test)(zap_request_t *req);
    /* Blocks until completion or the absolute deadline (ZAP_ERR_TIMED_OUT). */
    zap_status_t (*wait)(zap_request_t *req, double deadline);
    /* Cancels if pending, then releases the request. */
    void (*request_free)(zap_request_t *req);
    void (*close)(zap_transport_t *t);
    /* Optional blocking forms; NULL means transport.c builds them from
     * isend/irecv and wait. A backend supplies them when it can block without
     * a request object (UCX: its own request, polled inline, is cheaper than
     * a zap request with a completion callback, which shows at 8 bytes).
     * They keep the contract of zap_transport_send/recv: borrow the buffer
     * until they return, give up after t->timeout_s with ZAP_ERR_TIMED_OUT
     * (logged with zap_transport_log_timeout), and return the statuses isend
     * and irecv would, and a receive's truncation or failure as a wait
     * would. transport.c has checked the arguments. */
    zap_status_t (*send)(zap_transport_t *t, int peer, uint64_t tag, const void *buf, size_t len);
    zap_status_t (*recv)(zap_transport_t *t, int peer, uint64_t tag, void *buf, size_t cap, size_t *len_p);
    /* Optional: sends n to each of peers[0..npeers) (self and ranks known
     * dead are skipped), then waits a short bounded time for the notices to
     * leave (the caller may be about to return an error and exit). A peer
     * hands what it receives to zap_transport_notice_arrived. NULL: the
     * transport carries no notices. */
    zap_status_t (*notify)(zap_transport_t *t, const int *peers, int npeers, const zap_notice_t *n);
    /* Optional (peer_class.c): rank's host identity (rank already checked)
     * and this rank's send counters. NULL: every rank on this process's
     * host, nothing counted. */
    uint64_t (*host)(const zap_transport_t *t, int rank);
    void (*traffic)(zap_transport_t *t, zap_transport_traffic_t *traffic_p);
    /* Optional: the rank this transport knows failed first (its own
     * detection or a peer's failure notice), or -1. NULL: not tracked. */
    int (*first_failed)(zap_transport_t *t);
} zap_transport_ops_t;

struct zap_transport {
    const zap_transport_ops_t *ops;
    uint32_t caps; /* ZAP_CAP_* of this instance, beside ops->cap_flags */
    int rank;
    int size;
    zap_pool_t *pool;
    bool owns_pool;
    atomic_bool closed;
    /* Seconds a blocking wait may take (INFINITY: no deadline), fixed at
     * create: base_init sets none, a backend its own
     * (zap_transport_params_timeout), a wrapper its inner transport's. */
    double timeout_s;
    /* The revocation notices received, in arrival order (transport.c): a
     * list that only grows (notices are rare: one per failed communicator
     * and member), its length readable without the lock. A wrapper points
     * notice_home at the transport that receives for it. */
    struct zap_transport *notice_home; /* NULL: this one */
    atomic_uint nnotices;
    atomic_flag notice_lock;
    zap_notice_t *notices;
    unsigned notice_cap;
    /* zap_comm_create's id exchanges run over this transport and its
     * wrappers so far (kept on the notice home; coll/comm.c numbers each
     * exchange with it, so that a notice tells which one failed). */
    atomic_uint creations;
};

typedef enum zap_request_kind { ZAP_REQ_SEND = 1, ZAP_REQ_RECV = 2 } zap_request_kind_t;

struct zap_request {
    zap_transport_t *transport;
    zap_request_kind_t kind;
    int peer;
    uint64_t tag;
    size_t received_len;   /* receives: bytes delivered, valid once complete */
    /* ZAP_INPROGRESS until complete, then ZAP_OK or the error; written by the
     * backend, read by anyone (atomic). */
    _Atomic int status;
};

/* Shared helpers for backends. */
/* The timeout a create call asked for: params->timeout_s when set (checked:
 * ZAP_ERR_INVALID_PARAM, logged, when out of range), else ZAP_TIMEOUT read
 * now. params may be NULL. */
zap_status_t zap_transport_params_timeout(const zap_transport_params_t *params, double *timeout_p);
void zap_transport_base_init(zap_transport_t *t, const zap_transport_ops_t *ops, int rank, int size,
                             zap_pool_t *pool, bool owns_pool);
void zap_request_base_init(zap_request_t *req, zap_transport_t *t, zap_request_kind_t kind, int peer,
                           uint64_t tag);
/* Notices: a backend's receiving side logs each one here; readers take the
 * count (cheap: one load, for a hot path to compare with what it has seen)
 * and entries by index (0 .. count-1; false when i is past the end).
 * zap_transport_notify sends, where the backend carries notices
 * (ZAP_ERR_UNSUPPORTED otherwise). base_cleanup frees the log (backends call
 * it when they tear down). Thread-safe. */
void zap_transport_notice_arrived(zap_transport_t *t, const zap_notice_t *n);
static inline unsigned zap_transport_notice_count(const zap_transport_t *t)
{
    const zap_transport_t *home = t->notice_home != NULL ? t->notice_home : t;
    return atomic_load_explicit(&((zap_transport_t *)home)->nnotices, memory_order_acquire);
}
bool zap_transport_notice_get(const zap_transport_t *t, unsigned i, zap_notice_t *n);
zap_status_t zap_transport_notify(zap_transport_t *t, const int *peers, int npeers, const zap_notice_t *n);
/* The rank t knows failed first, or -1 (none known, or not tracked): a
 * collective that meets a survivor gone after it names that rank instead
 * (engine/op.c). Thread-safe. */
int zap_transport_first_failed(zap_transport_t *t);
void zap_transport_base_cleanup(zap_transport_t *t);
/* The log line of a blocking wait that gave up, for every path to it. */
void zap_transport_log_timeout(const zap_transport_t *t, zap_request_kind_t kind, int peer, uint64_t tag,
                               double seconds);
static inline void zap_request_complete(zap_request_t *req, zap_status_t status)
{
    atomic_store_explicit(&req->status, (int)status, memory_order_release);
}
static inline zap_status_t zap_request_status(const zap_request_t *req)
{
    return (zap_status_t)atomic_load_explicit(&((zap_request_t *)req)->status, memory_order_acquire);
}
#endif
