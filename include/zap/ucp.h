/* The UCX transport: the contract of zap/transport.h between processes, over
 * UCX's UCP tag API (UCX 1.13 and later). MPI is only the bootstrap: the ranks
 * of an MPI communicator exchange worker addresses once, at create.
 *
 * One UCP context and worker per transport; an endpoint to a peer is created
 * the first time a send to or a receive from that peer is posted. Pool chunks
 * are registered with UCX once (ucp_mem_map) and every send and receive from
 * pool memory passes that registration, so large messages move zero-copy by
 * rendezvous without registering again; ordinary user memory works too (UCX
 * registers it through its cache). Nothing moves unless some thread is inside
 * zap_transport_progress or a test or wait call: UCX progresses only there. */
#ifndef ZAP_UCP_H
#define ZAP_UCP_H
#include <mpi.h>
#include "zap/transport.h"

/* UCP tag layout: the sender's rank in the upper ZAP_UCP_RANK_BITS bits, the
 * contract tag in the lower ZAP_UCP_TAG_BITS bits. A contract tag below
 * 2^ZAP_UCP_TAG_BITS maps one to one; the upper bits of a larger tag are
 * folded (xor) into the lower ones, so two large tags may meet: keep tags of
 * concurrent operations below 2^44 (docs/transport.md gives the layout
 * collectives use). Ranks: at most 2^ZAP_UCP_RANK_BITS. */
#define ZAP_UCP_RANK_BITS 20
#define ZAP_UCP_TAG_BITS 44

ZAP_BEGIN_DECLS

/* Creates this rank's UCX transport over the ranks of comm. Collective: every
 * rank of comm calls it, after MPI_Init and before MPI_Finalize; the ranks
 * agree on the outcome, so all succeed or all fail. comm is borrowed for the
 * call (the transport keeps a duplicate, freed at close). pool is borrowed and
 * must outlive the transport; NULL makes the transport create its own from the
 * environment (ZAP_POOL_BACKEND etc.), destroyed at close. The pool's chunks
 * are registered with UCX until close.
 * Blocks for the address exchange (an MPI collective). Not thread-safe against
 * other MPI calls on comm; the transport itself is thread-safe (one lock
 * serialises the UCP worker).
 * Settings (ZAP_TIMEOUT, ZAP_UCP_STAGING) are read here, once.
 * Returns ZAP_OK and *t_p (release with zap_transport_close, also collective);
 * ZAP_ERR_INVALID_PARAM for a NULL t_p, MPI not initialised, more than
 * 2^ZAP_UCP_RANK_BITS ranks or a malformed ZAP_UCP_STAGING / ZAP_TIMEOUT;
 * ZAP_ERR_TRANSPORT when UCX or MPI fails (logged with their text), on any
 * rank; pool creation errors. */
ZAP_API zap_status_t zap_ucp_transport_create(MPI_Comm comm, zap_pool_t *pool, zap_transport_t **t_p);

/* zap_ucp_transport_create with options: params (borrowed for the call; NULL
 * or all-zero for the defaults) may set the timeout instead of ZAP_TIMEOUT.
 * Also ZAP_ERR_INVALID_PARAM for a timeout_s out of range (on any rank). */
ZAP_API zap_status_t zap_ucp_transport_create_ex(MPI_Comm comm, zap_pool_t *pool,
                                                 const zap_transport_params_t *params, zap_transport_t **t_p);

ZAP_END_DECLS
#endif
