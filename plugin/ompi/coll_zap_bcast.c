/* MPI_Bcast and MPI_Ibcast on zap_ibcast, as bytes of the type signature.
 *
 * Ranks may pass different datatypes with the same signature (the root a
 * vector type, the others plain ints): the route depends on the byte count
 * only, and a rank whose layout has gaps packs (root) or unpacks (others)
 * through a scratch buffer. GPU-resident buffers go to zap at every size, as
 * for the allreduce (coll_zap_allreduce.c); device memory with gaps is
 * refused (MPI_ERR_TYPE). */
#include "coll_zap.h"
#include <stdlib.h>

static int unpack_result(coll_zap_req_t *r) { return coll_zap_unpack(r->ubuf, r->ucount, r->udtype, r->tmp); }

static int fallback(void *buf, int count, ompi_datatype_t *dtype, int root, ompi_communicator_t *comm,
                    ompi_request_t **request, coll_zap_module_t *m)
{
    if (request == NULL) {
        mca_coll_base_module_bcast_fn_t f = (mca_coll_base_module_bcast_fn_t)m->prev[COLL_ZAP_BCAST].fn;
        return f(buf, count, dtype, root, comm, m->prev[COLL_ZAP_BCAST].module);
    }
    mca_coll_base_module_ibcast_fn_t f = (mca_coll_base_module_ibcast_fn_t)m->iprev[COLL_ZAP_BCAST].fn;
    return f(buf, count, dtype, root, comm, request, m->iprev[COLL_ZAP_BCAST].module);
}

static int run(void *buf, int count, ompi_datatype_t *dtype, int root, ompi_communicator_t *comm,
               ompi_request_t **request, coll_zap_module_t *m)
{
    int nb = request != NULL;
    size_t bytes = coll_zap_bytes(dtype, count);
    coll_zap_why_t why = coll_zap_route_cid(COLL_ZAP_BCAST, nb, count, dtype, NULL, root);
    if (why == COLL_ZAP_TAKEN)
        why = coll_zap_route_kind(m, COLL_ZAP_BCAST, nb, bytes, buf, NULL);
    if (why == COLL_ZAP_STOPPED && m->failed)
        return MPI_ERR_OTHER;
    if (why != COLL_ZAP_TAKEN)
        return fallback(buf, count, dtype, root, comm, request, m);
    coll_zap_req_t *r = coll_zap_req_get(m, COLL_ZAP_BCAST);
    if (r == NULL)
        return MPI_ERR_NO_MEM;
    void *zbuf;
    if (!coll_zap_dense(dtype, count) && coll_zap_device_memory(buf)) {
        coll_zap_warn("MPI_Bcast: a datatype with gaps on device memory cannot be packed by the CPU");
        r->local_rc = MPI_ERR_TYPE;
        zbuf = NULL;
    } else if (coll_zap_dense(dtype, count)) {
        zbuf = coll_zap_start(buf, dtype);
    } else {
        r->tmp = malloc(bytes);
        if (r->tmp == NULL || (m->rank == root && coll_zap_pack(r->tmp, buf, count, dtype) != OMPI_SUCCESS))
            r->local_rc = r->tmp == NULL ? MPI_ERR_NO_MEM : MPI_ERR_INTERN;
        zbuf = r->local_rc == MPI_SUCCESS ? r->tmp : NULL;
        if (m->rank != root) {
            r->finish = unpack_result;
            r->ubuf = buf;
            r->ucount = count;
            r->udtype = dtype;
            OBJ_RETAIN(dtype); /* MPI lets the program free it before completion */
        }
    }
    coll_zap_count(COLL_ZAP_BCAST, nb, COLL_ZAP_TAKEN);
    coll_zap_lock();
    zap_status_t st = COLL_ZAP_POST(request, r, bcast, m->zcomm, zbuf, bytes, ZAP_DT_UINT8, root);
    coll_zap_unlock();
    return coll_zap_req_posted(r, st, request);
}

int coll_zap_bcast(void *buf, int count, ompi_datatype_t *dtype, int root, ompi_communicator_t *comm,
                   mca_coll_base_module_t *module)
{
    return run(buf, count, dtype, root, comm, NULL, (coll_zap_module_t *)module);
}

int coll_zap_ibcast(void *buf, int count, ompi_datatype_t *dtype, int root, ompi_communicator_t *comm,
                    ompi_request_t **request, mca_coll_base_module_t *module)
{
    return run(buf, count, dtype, root, comm, request, (coll_zap_module_t *)module);
}
