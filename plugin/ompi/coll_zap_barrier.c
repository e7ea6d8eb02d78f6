/* MPI_Barrier and MPI_Ibarrier on zap_ibarrier. No size window: only the
 * row's switch (coll_zap_barrier) decides. */
#include "coll_zap.h"

static int run(ompi_communicator_t *comm, ompi_request_t **request, coll_zap_module_t *m)
{
    int nb = request != NULL;
    coll_zap_why_t why = coll_zap_route_sized(m, COLL_ZAP_BARRIER, nb, 0);
    if (why == COLL_ZAP_STOPPED && m->failed)
        return MPI_ERR_OTHER;
    if (why != COLL_ZAP_TAKEN) {
        if (!nb)
            return ((mca_coll_base_module_barrier_fn_t)m->prev[COLL_ZAP_BARRIER].fn)(
                comm, m->prev[COLL_ZAP_BARRIER].module);
        return ((mca_coll_base_module_ibarrier_fn_t)m->iprev[COLL_ZAP_BARRIER].fn)(
            comm, request, m->iprev[COLL_ZAP_BARRIER].module);
    }
    coll_zap_req_t *r = coll_zap_req_get(m, COLL_ZAP_BARRIER);
    if (r == NULL)
        return MPI_ERR_NO_MEM;
    coll_zap_count(COLL_ZAP_BARRIER, nb, COLL_ZAP_TAKEN);
    coll_zap_lock();
    zap_status_t st = COLL_ZAP_POST(request, r, barrier, m->zcomm);
    coll_zap_unlock();
    return coll_zap_req_posted(r, st, request);
}

int coll_zap_barrier(ompi_communicator_t *comm, mca_coll_base_module_t *module)
{
    return run(comm, NULL, (coll_zap_module_t *)module);
}

int coll_zap_ibarrier(ompi_communicator_t *comm, ompi_request_t **request, mca_coll_base_module_t *module)
{
    return run(comm, request, (coll_zap_module_t *)module);
}
