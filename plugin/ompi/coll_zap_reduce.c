/* MPI_Reduce and MPI_Ireduce on zap_ireduce.
 *
 * Taken as the allreduce is (coll_zap_allreduce.c): the row's window on the
 * vector's bytes, an op and type with zap counterparts (a C user op bound to
 * the call). The root's recvbuf alone is written; MPI_IN_PLACE on the root is
 * ZAP_IN_PLACE. A layout with gaps is packed into scratch, reduced there on
 * the root and unpacked into recvbuf afterwards. */
#include "coll_zap.h"
#include <stdlib.h>

static int unpack_result(coll_zap_req_t *r) { return coll_zap_unpack(r->ubuf, r->ucount, r->udtype, r->tmp); }

static int fallback(const void *sbuf, void *rbuf, int count, ompi_datatype_t *dtype, struct ompi_op_t *op, int root,
                    ompi_communicator_t *comm, ompi_request_t **request, coll_zap_module_t *m)
{
    if (request == NULL)
        return ((mca_coll_base_module_reduce_fn_t)m->prev[COLL_ZAP_REDUCE].fn)(sbuf, rbuf, count, dtype, op, root,
                                                                                comm, m->prev[COLL_ZAP_REDUCE].module);
    return ((mca_coll_base_module_ireduce_fn_t)m->iprev[COLL_ZAP_REDUCE].fn)(
        sbuf, rbuf, count, dtype, op, root, comm, request, m->iprev[COLL_ZAP_REDUCE].module);
}

static int run(const void *sbuf, void *rbuf, int count, ompi_datatype_t *dtype, struct ompi_op_t *op, int root,
               ompi_communicator_t *comm, ompi_request_t **request, coll_zap_module_t *m)
{
    int nb = request != NULL;
    coll_zap_why_t why = coll_zap_route_cid(COLL_ZAP_REDUCE, nb, count, dtype, op, root);
    if (why == COLL_ZAP_TAKEN)
        why = coll_zap_route_sized(m, COLL_ZAP_REDUCE, nb, coll_zap_bytes(dtype, count));
    zap_dtype_t dt = ZAP_DT_UINT8;
    zap_op_t zop = ZAP_OP_SUM;
    size_t n = 0;
    if (why == COLL_ZAP_TAKEN && !coll_zap_reduction_type(dtype, count, op, &dt, &zop, &n)) {
        why = COLL_ZAP_TYPE_OP;
        coll_zap_count(COLL_ZAP_REDUCE, nb, why);
    }
    if (why == COLL_ZAP_STOPPED && m->failed)
        return MPI_ERR_OTHER;
    if (why != COLL_ZAP_TAKEN)
        return fallback(sbuf, rbuf, count, dtype, op, root, comm, request, m);
    coll_zap_req_t *r = coll_zap_req_get(m, COLL_ZAP_REDUCE);
    if (r == NULL)
        return MPI_ERR_NO_MEM;
    if (zop == COLL_ZAP_USER_OP)
        r->local_rc = coll_zap_bind_user_op(r, op, dtype, &zop);
    bool is_root = m->rank == root, in_place = is_root && sbuf == MPI_IN_PLACE;
    const void *zsend = NULL;
    void *zrecv = NULL;
    if (coll_zap_reduce_dense(dtype, count)) {
        zsend = in_place ? ZAP_IN_PLACE : coll_zap_start(sbuf, dtype);
        zrecv = is_root ? coll_zap_start(rbuf, dtype) : NULL;
    } else {
        r->tmp = malloc(coll_zap_bytes(dtype, count) + 1);
        if (r->tmp == NULL || coll_zap_pack(r->tmp, in_place ? rbuf : sbuf, count, dtype) != OMPI_SUCCESS)
            r->local_rc = r->tmp == NULL ? MPI_ERR_NO_MEM : MPI_ERR_INTERN;
        zsend = r->local_rc == MPI_SUCCESS ? r->tmp : NULL; /* NULL: zap refuses, the others see a mismatch */
        if (is_root) {
            zsend = zsend != NULL ? ZAP_IN_PLACE : NULL;
            zrecv = r->tmp;
            r->finish = unpack_result;
            r->ubuf = rbuf;
            r->ucount = count;
            r->udtype = dtype;
            OBJ_RETAIN(dtype); /* MPI lets the program free it before completion */
        }
    }
    if (r->local_rc != MPI_SUCCESS)
        zsend = NULL;
    coll_zap_count(COLL_ZAP_REDUCE, nb, COLL_ZAP_TAKEN);
    coll_zap_lock();
    zap_status_t st = COLL_ZAP_POST(request, r, reduce, m->zcomm, zsend, zrecv, n, dt, zop, root);
    coll_zap_unlock();
    return coll_zap_req_posted(r, st, request);
}

int coll_zap_reduce(const void *sbuf, void *rbuf, int count, ompi_datatype_t *dtype, struct ompi_op_t *op, int root,
                    ompi_communicator_t *comm, mca_coll_base_module_t *module)
{
    return run(sbuf, rbuf, count, dtype, op, root, comm, NULL, (coll_zap_module_t *)module);
}

int coll_zap_ireduce(const void *sbuf, void *rbuf, int count, ompi_datatype_t *dtype, struct ompi_op_t *op, int root,
                     ompi_communicator_t *comm, ompi_request_t **request, mca_coll_base_module_t *module)
{
    return run(sbuf, rbuf, count, dtype, op, root, comm, request, (coll_zap_module_t *)module);
}
