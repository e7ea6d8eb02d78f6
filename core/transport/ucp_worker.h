/* The UCP context, worker and address book one rank needs, built the same way
 * for the transport (ucp.c) and for zap-perf's raw-UCP mode, so the benchmark
 * compares like with like. MPI is used here and nowhere else in the transport:
 * to duplicate the caller's communicator, agree on success and exchange worker
 * addresses (an allgather of lengths, an allgatherv of bytes). Every MPI call
 * of zap goes through the profiling interface (PMPI_*), so a layer that
 * interposes MPI functions (a PMPI tool, an interception library routing MPI
 * collectives to zap) never re-enters itself from inside zap
 * (mpi_tests/test_pmpi_only.c). */
#ifndef ZAP_TRANSPORT_UCP_WORKER_H
#define ZAP_TRANSPORT_UCP_WORKER_H
#include <mpi.h>
#include <stdint.h>
#include <ucp/api/ucp.h>
#include "zap/status.h"
#include "transport/ucp_oob.h"

typedef struct zap_ucp_worker {
    ucp_context_h context;
    ucp_worker_h worker;
    MPI_Comm comm;     /* duplicate of the caller's communicator */
    int rank, size;
    char *addrs;       /* every rank's worker address, concatenated */
    int *addr_len;     /* per rank */
    int *addr_off;     /* per rank, into addrs */
    uint64_t *host;    /* per rank: a hash of MPI_Get_processor_name */
    zap_ucp_oob_t oob; /* bootstrap without MPI (allgather set); comm is then MPI_COMM_NULL */
    int same_host_errors; /* shared memory can report a dead peer (below) */
    /* UCX_TLS allows TCP and some peer is reached over it (another host, or
     * this one without shared memory): a completed eager send may still hold
     * bytes here (ZAP_CAP_SENDS_NEED_PROGRESS). */
    int tcp_lingers;
    /* Which peers UCX reaches over TCP: another host's where TCP is allowed
     * and no RDMA device is in use; this host's too where shared memory is
     * not allowed (zap_ucp_peer_over_tcp). */
    int tcp_other_hosts, tcp_this_host;
} zap_ucp_worker_t;

/* Collective over comm: creates context (tag feature) and worker (serialised
 * thread mode), exchanges addresses. The ranks agree: if any rank fails, all
 * return an error (the failing rank logs why). On failure *w is left zeroed.
 *
 * Peer failure on one host: UCX's shared-memory transports (posix, sysv)
 * detect a dead peer (its pid's start time, checked every keepalive round)
 * only when asked to expose that (UCX_MM_ERROR_HANDLING, default n); without
 * it an endpoint asking for peer error handling finds no shared-memory
 * transport, and UCX prints an ERROR line and refuses (only shared memory
 * allowed) or carries same-host traffic over TCP (every transport allowed).
 * So where UCX_TLS allows posix or sysv, unless the user set
 * UCX_MM_ERROR_HANDLING (or UCX_POSIX_/UCX_SYSV_...), the context asks for
 * it, and unless UCX_KEEPALIVE_INTERVAL is set, for a keepalive round every
 * ZAP_UCP_LIVENESS_S (a quarter of timeout_s when that is shorter, at least
 * 0.1 s), so a dead peer on this host is seen within about that, and well
 * inside a short timeout. timeout_s is INFINITY without one. */
zap_status_t zap_ucp_worker_init(zap_ucp_worker_t *w, MPI_Comm comm, double timeout_s);

/* The keepalive interval of shared memory's peer failure detection: a dead
 * peer on this host is reported within about this, whatever the timeout
 * (the keepalive looks at the peer's process, not at its progress, so a
 * live peer that makes no call for minutes is not mistaken for dead). */
#define ZAP_UCP_LIVENESS_S 0.25

/* The same over an out-of-band allgather (ucp_oob.h), copied into w. */
zap_status_t zap_ucp_worker_init_oob(zap_ucp_worker_t *w, const zap_ucp_oob_t *oob, double timeout_s);

/* The most negative of the ranks' statuses, on every rank, over whichever
 * bootstrap w was made with. */
zap_status_t zap_ucp_worker_agree(zap_ucp_worker_t *w, zap_status_t local);

/* ucp_oob.c: the address exchange over w->oob, filling addr_len, addr_off
 * (allocated by the caller) and addrs; and the host exchange, filling host
 * (which ranks share a host: host name and boot id, as the MPI bootstrap has
 * it, peer_class.c), before the UCP context exists. */
zap_status_t zap_ucp_oob_exchange(zap_ucp_worker_t *w, const void *addr, size_t len);
zap_status_t zap_ucp_oob_hosts(zap_ucp_worker_t *w);

/* Connects to peer's worker. With peer_errors, asks for UCX peer error
 * handling: cb(arg, ep, status) then runs inside ucp_worker_progress when UCX
 * detects the peer failed. Where no allowed transport can (ucp_ep_create
 * answers "unreachable", after printing an error line) ZAP_ERR_UNSUPPORTED
 * comes back, unlogged; the caller may retry without. */
zap_status_t zap_ucp_ep_create(zap_ucp_worker_t *w, int peer, int peer_errors, ucp_err_handler_cb_t cb, void *arg,
                               ucp_ep_h *ep_p);

/* Whether to ask UCX for peer error handling on the endpoint to peer: never
 * for this rank itself; for a peer on another host, yes; for a peer on this
 * host, unless the user turned shared memory's off (same_host_errors). */
int zap_ucp_want_peer_errors(const zap_ucp_worker_t *w, int peer);

/* Registers cb(arg, ...) for active messages with id on worker. Not
 * thread-safe. ZAP_ERR_TRANSPORT (logged, naming rank) if UCX refuses. */
zap_status_t zap_ucp_am_listen(ucp_worker_h worker, unsigned id, ucp_am_recv_callback_t cb, void *arg, int rank);

/* Whether UCX carries messages to peer over TCP (never for this rank). */
int zap_ucp_peer_over_tcp(const zap_ucp_worker_t *w, int peer);

/* Progresses the worker until req (a status pointer from a UCP call) is done
 * or deadline (zap_clock_now seconds) passes; frees the request. Returns the
 * UCS status, UCS_ERR_TIMED_OUT at the deadline (the request is then freed
 * and left to complete in the background). */
ucs_status_t zap_ucp_wait_ptr(ucp_worker_h worker, ucs_status_ptr_t req, double deadline);

/* Destroys the worker and context and frees the address book and the
 * communicator duplicate (unless MPI is finalized). Accepts a zeroed w. */
void zap_ucp_worker_cleanup(zap_ucp_worker_t *w);

/* A UCS status as a zap status. */
zap_status_t zap_ucp_status(ucs_status_t s);
#endif
