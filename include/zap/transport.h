/* The transport contract: point-to-point messages between ranks, and pool
 * buffers to put them in. Collectives are written against this contract only;
 * two transports implement it: in-process (threads as ranks, zap/inproc.h) and
 * UCX (processes on many nodes, zap/ucp.h).
 *
 * Matching: a receive matches the oldest unmatched send from the same peer
 * with the same tag. Messages between one pair of ranks with one tag arrive in
 * the order they were sent; tags keep concurrent operations apart.
 *
 * Ownership: zap_transport_isend borrows the caller's bytes until its request
 * completes (then the caller may reuse them); zap_transport_irecv borrows the
 * receive buffer likewise. zap_transport_recv_buf returns a pool buffer the
 * caller frees with zap_buf_free. A request is the caller's from post until
 * zap_request_free. Nothing the seed leaked (sent slabs) can leak here: the
 * transport never keeps a copy of a completed message. */
#ifndef ZAP_TRANSPORT_H
#define ZAP_TRANSPORT_H
#include <stddef.h>
#include <stdint.h>
#include "zap/common.h"
#include "zap/status.h"
#include "zap/clock.h"
#include "zap/pool.h"

typedef struct zap_transport zap_transport_t;
typedef struct zap_request zap_request_t;

enum {
    ZAP_CAP_GPU_RESIDENT = 1u << 0, /* alloc_buffer returns memory the GPU can address */
    ZAP_CAP_ZERO_COPY = 1u << 1,    /* large messages move without an intermediate copy */
    ZAP_CAP_MULTI_NODE = 1u << 2,   /* ranks may be on different hosts */
    /* This transport's completed sends may still hold bytes in this process
     * (UCX over TCP: the part of an eager message the socket did not take),
     * which leave only on later progress calls: a rank that waits outside
     * zap for peers still receiving drives zap_transport_progress meanwhile
     * (docs/transport.md, "Progress"). Per transport, from its settings. */
    ZAP_CAP_SENDS_NEED_PROGRESS = 1u << 3
};

/* Options of a transport's create call (zap_ucp_transport_create_ex,
 * zap_inproc_world_create_ex). All-zero means defaults; new fields are
 * appended. */
/* timeout_s: blocking waits have no deadline (ZAP_TIMEOUT=none). */
#define ZAP_TRANSPORT_TIMEOUT_NONE (-1.0)

typedef struct zap_transport_params {
    /* Seconds any blocking wait, probe, close step or pending-send free may
     * take: 0.001 to 1e7, ZAP_TRANSPORT_TIMEOUT_NONE for no deadline, or 0
     * for ZAP_TIMEOUT (read once, at create; unset: no deadline). Without a
     * deadline a wait on a live peer lasts as long as the peer takes; a dead
     * peer still ends it with ZAP_ERR_PEER_FAILED (docs/faults.md). */
    double timeout_s;
} zap_transport_params_t;

typedef struct zap_transport_caps {
    const char *name;        /* "inproc", "ucp" */
    uint32_t flags;          /* ZAP_CAP_* */
    double min_latency_us;   /* a rough one-way latency floor, for algorithm choice */
} zap_transport_caps_t;

ZAP_BEGIN_DECLS

/* This rank and the number of ranks. Return -1 for a NULL transport. */
ZAP_API int zap_transport_rank(const zap_transport_t *t);
ZAP_API int zap_transport_size(const zap_transport_t *t);

/* The timeout the transport took at create (zap_transport_params_t), in
 * seconds: how long its blocking calls wait; INFINITY when it has none. 0 for
 * a NULL transport. */
ZAP_API double zap_transport_timeout(const zap_transport_t *t);

/* Name and capabilities. ZAP_ERR_INVALID_PARAM for NULL arguments. */
ZAP_API zap_status_t zap_transport_caps(const zap_transport_t *t, zap_transport_caps_t *caps_p);

/* Where a peer is, seen from this rank: the classes of zap_transport_traffic.
 * Two ranks are on one host when their host identities (zap_transport_host)
 * are equal. */
typedef enum zap_peer_class {
    ZAP_PEER_SELF = 0,       /* this rank */
    ZAP_PEER_SAME_HOST = 1,  /* another rank on this host */
    ZAP_PEER_OTHER_HOST = 2, /* a rank on another host */
    ZAP_PEER_CLASSES = 3
} zap_peer_class_t;

/* What this rank's transport was asked to send since it was created, by the
 * class of the receiving peer (indexed by zap_peer_class_t): every send
 * posted (zap_transport_isend, zap_transport_send), the collectives' and the
 * verification job's included, counted when posted (a send that then failed
 * is counted too). Shared-memory collectives move data without the transport
 * and are not in it. Take two snapshots and subtract for one operation. */
typedef struct zap_transport_traffic {
    uint64_t bytes[ZAP_PEER_CLASSES];
    uint64_t messages[ZAP_PEER_CLASSES];
} zap_transport_traffic_t;

/* The host identity of rank (any rank of t): a 64-bit hash of the host name
 * and the kernel's boot id (/proc/sys/kernel/random/boot_id), agreed at
 * create (the UCX transport exchanges them with the worker addresses). Ranks
 * with equal identities share a host: network-namespace hosts with host
 * names of their own differ, and machines (or containers on them) that share
 * a host name but not a kernel differ too. The in-process transport puts
 * every rank on this process's host unless zap_inproc_world_set_hosts says
 * otherwise. Writes *host_p; ZAP_ERR_INVALID_PARAM for NULL arguments,
 * ZAP_ERR_NOT_FOUND for a rank outside [0, size), ZAP_ERR_CLOSED after
 * zap_transport_close. Never blocks; thread-safe. */
ZAP_API zap_status_t zap_transport_host(const zap_transport_t *t, int rank, uint64_t *host_p);

/* Copies this rank's send counters (zap_transport_traffic_t) into
 * *traffic_p. ZAP_ERR_INVALID_PARAM for NULL arguments. Never blocks beyond
 * the transport's internal lock; thread-safe; still answers after
 * zap_transport_close (the counts at close). */
ZAP_API zap_status_t zap_transport_traffic(zap_transport_t *t, zap_transport_traffic_t *traffic_p);

/* Posts a send of len bytes (len may be 0) to peer with tag. Borrows buf until
 * the request completes. Never blocks. Returns ZAP_OK and a request the caller
 * must free with zap_request_free (after completion, or to cancel);
 * ZAP_ERR_NOT_FOUND for a rank outside [0, size); ZAP_ERR_INVALID_PARAM for
 * buf NULL with len > 0; ZAP_ERR_CLOSED after zap_transport_close;
 * ZAP_ERR_PEER_FAILED when peer is known dead. Thread-safe. */
ZAP_API zap_status_t zap_transport_isend(zap_transport_t *t, int peer, uint64_t tag, const void *buf,
                                         size_t len, zap_request_t **req_p);

/* Posts a receive of at most cap bytes from peer with tag into buf (borrowed
 * until completion). A longer message completes the request with
 * ZAP_ERR_TRUNCATED and delivers nothing. Errors as zap_transport_isend. */
ZAP_API zap_status_t zap_transport_irecv(zap_transport_t *t, int peer, uint64_t tag, void *buf, size_t cap,
                                         zap_request_t **req_p);

/* Blocking forms: return when the buffer may be reused (send) or holds the
 * message (recv; *len_p optional gets its length). They wait at most the
 * transport's timeout (zap_transport_timeout) and then return
 * ZAP_ERR_TIMED_OUT, logging the peer; without one they wait for a live peer
 * as long as it takes. A dead peer ends them with ZAP_ERR_PEER_FAILED (UCX:
 * within about a second, docs/faults.md). */
ZAP_API zap_status_t zap_transport_send(zap_transport_t *t, int peer, uint64_t tag, const void *buf, size_t len);
ZAP_API zap_status_t zap_transport_recv(zap_transport_t *t, int peer, uint64_t tag, void *buf, size_t cap,
                                        size_t *len_p);

/* Receives the next message from peer with tag into a fresh pool buffer sized
 * to it: the seed's Recv, connected. Returns the buffer in *buf_p; the caller
 * frees it with zap_buf_free. A zero-length message gives an empty buffer
 * (ptr NULL, size 0) that needs no free. Blocks up to the transport's
 * timeout. */
ZAP_API zap_status_t zap_transport_recv_buf(zap_transport_t *t, int peer, uint64_t tag, zap_buf_t *buf_p);

/* Takes a buffer from the transport's pool (the memory it sends from without
 * copying or registering again). Free with zap_buf_free. */
ZAP_API zap_status_t zap_transport_alloc(zap_transport_t *t, size_t size, zap_buf_t *buf_p);

/* The transport's pool (not to be destroyed by the caller) and its reserved
 * bytes. */
ZAP_API zap_pool_t *zap_transport_pool(zap_transport_t *t);
ZAP_API uint64_t zap_transport_pool_bytes(zap_transport_t *t);

/* Drives communication forward; returns promptly. Some transports progress in
 * the background and need no calls, others (UCX) only progress here or inside
 * test/wait. */
ZAP_API zap_status_t zap_transport_progress(zap_transport_t *t);

/* Closes the transport: requests still pending complete with ZAP_ERR_CANCELED
 * (they must still be freed), later posts return ZAP_ERR_CLOSED, then the
 * transport is freed. The pool is destroyed when the transport created it and
 * no buffers are out (else it is reported and left). NULL is accepted. */
ZAP_API void zap_transport_close(zap_transport_t *t);

/* Request completion. zap_request_test sets *done_p (1 complete, 0 not yet)
 * and returns ZAP_OK, or the request's error once complete with one.
 * zap_request_wait blocks until completion or the timeout of the request's
 * owner (the transport's, zap_transport_timeout; a collective request's
 * communicator's, zap/coll.h), then ZAP_ERR_TIMED_OUT, naming the peer in the
 * log; the request stays valid and pending. Without a timeout it waits until
 * completion; a dead peer completes the request with ZAP_ERR_PEER_FAILED.
 * zap_request_wait_until takes an absolute deadline in seconds on
 * zap_clock_now()'s clock; a deadline <= 0 means the owner's timeout from
 * now. */
ZAP_API zap_status_t zap_request_test(zap_request_t *req, int *done_p);
ZAP_API zap_status_t zap_request_wait(zap_request_t *req);
ZAP_API zap_status_t zap_request_wait_until(zap_request_t *req, double deadline);

/* The completed receive's length in bytes, and its peer. ZAP_ERR_INVALID_PARAM
 * for a send request, ZAP_INPROGRESS before completion. */
ZAP_API zap_status_t zap_request_received(const zap_request_t *req, size_t *len_p);
ZAP_API int zap_request_peer(const zap_request_t *req);

/* Frees a request. A pending one is cancelled first (its buffer is no longer
 * borrowed when this returns). NULL is accepted. */
ZAP_API void zap_request_free(zap_request_t *req);

ZAP_END_DECLS
#endif
