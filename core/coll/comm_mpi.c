/* zap_comm_create_mpi: the UCX transport plus a communicator that owns it.
 * Its own small layer (zap_coll_mpi) so that zap_coll itself needs neither MPI
 * nor UCX. */
#include "zap/coll_mpi.h"
#include "zap/ucp.h"
#include "coll/comm_impl.h"

zap_status_t zap_comm_create_mpi(MPI_Comm mpi_comm, zap_pool_t *pool, zap_comm_t **comm_p)
{
    if (comm_p == NULL)
        return ZAP_ERR_INVALID_PARAM;
    zap_transport_t *t = NULL;
    zap_status_t st = zap_ucp_transport_create(mpi_comm, pool, &t);
    if (st != ZAP_OK)
        return st;
    zap_comm_t *c = NULL;
    st = zap_comm_create(t, &c);
    if (st != ZAP_OK) {
        zap_transport_close(t);
        return st;
    }
    c->owns_transport = true;
    *comm_p = c;
    return ZAP_OK;
}
