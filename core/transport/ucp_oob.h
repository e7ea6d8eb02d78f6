/* Bootstrapping the UCX transport without an MPI communicator. The caller
 * supplies an out-of-band allgather (the shape of UCC's ucc_oob_coll_t: start,
 * test, free), and the transport uses it wherever the MPI bootstrap would use
 * the communicator: agreeing on each setup step's outcome, exchanging worker
 * addresses and host names, and the barrier at close. A host that cannot make
 * MPI calls while it sets zap up needs this: an Open MPI coll component is
 * created inside Open MPI's communicator selection, where MPI's collectives on
 * that communicator do not exist yet (plugin/ompi). Internal: the component
 * links the layers statically. */
#ifndef ZAP_TRANSPORT_UCP_OOB_H
#define ZAP_TRANSPORT_UCP_OOB_H
#include <stddef.h>
#include "zap/status.h"
#include "zap/transport.h"

typedef struct zap_ucp_oob {
    int rank, size; /* this rank and the number of ranks of the exchange */
    /* Starts an allgather: the len bytes at send of rank r land at
     * recv + r * len on every rank. Returns ZAP_OK and *req_p, or an error
     * (the transport then fails its setup on every rank: the callback must
     * make sure the others do not wait forever, e.g. by completing their
     * exchange with an error). send and recv are borrowed until the request
     * is freed. */
    zap_status_t (*allgather)(void *ctx, const void *send, void *recv, size_t len, void **req_p);
    /* ZAP_OK once complete, ZAP_INPROGRESS, or an error. Never blocks. */
    zap_status_t (*test)(void *ctx, void *req);
    /* Releases a request (complete or not). */
    void (*free)(void *ctx, void *req);
    void *ctx;
} zap_ucp_oob_t;

/* zap_ucp_transport_create (zap/ucp.h) over oob instead of an MPI
 * communicator: rank oob->rank of oob->size. Collective over the oob's ranks;
 * every exchange goes through oob, which is copied and must stay usable until
 * zap_transport_close (the close's barrier uses it too). The oob's callbacks
 * must not call into this transport (its lock is held across them during
 * close). Returns what zap_ucp_transport_create returns; ZAP_ERR_INVALID_PARAM
 * also for a NULL or incomplete oob or a rank outside 0..size-1. */
zap_status_t zap_ucp_transport_create_oob(const zap_ucp_oob_t *oob, zap_pool_t *pool, zap_transport_t **t_p);

/* Blocking allgather of len bytes over oob (polls its test). */
zap_status_t zap_ucp_oob_allgather(const zap_ucp_oob_t *oob, const void *send, void *recv, size_t len);

/* The most negative of the ranks' statuses (every rank gets it), as the MPI
 * bootstrap's MPI_Allreduce MIN; ZAP_ERR_TRANSPORT when the exchange fails. */
zap_status_t zap_ucp_oob_agree(const zap_ucp_oob_t *oob, zap_status_t local);
#endif
