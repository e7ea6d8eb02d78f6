/* Communicators from MPI: the UCX transport (zap/ucp.h) and a communicator
 * over it in one call, for programs launched by mpirun. Separate from
 * zap/coll.h so that the collectives header needs no MPI. */
#ifndef ZAP_COLL_MPI_H
#define ZAP_COLL_MPI_H
#include <mpi.h>
#include "zap/coll.h"

ZAP_BEGIN_DECLS
/* Creates a UCX transport over the ranks of mpi_comm (zap_ucp_transport_create)
 * and a communicator over all of its ranks (zap_comm_create); rank i of the
 * communicator is rank i of mpi_comm. The communicator owns the transport:
 * zap_comm_destroy on it closes the transport too, which makes that destroy
 * collective over mpi_comm (every rank calls it, before MPI_Finalize).
 * mpi_comm is borrowed for the call; pool as in zap_ucp_transport_create
 * (borrowed, may be NULL). Collective and blocking (MPI exchange, then the
 * communicator's own, at most ZAP_TIMEOUT). Returns ZAP_OK and *comm_p, or the
 * first error of either step (nothing is left behind on failure). */
ZAP_API zap_status_t zap_comm_create_mpi(MPI_Comm mpi_comm, zap_pool_t *pool, zap_comm_t **comm_p);
ZAP_END_DECLS
#endif
