/* MPI_Scan, MPI_Exscan and their non-blocking forms on zap_iscan and
 * zap_iexscan.
 *
 * Taken as the allreduce is (coll_zap_allreduce.c): the row's window on the
 * vector's bytes, an op and type with zap counterparts (a C user op bound to
 * the call). zap combines in rank order for every op, as MPI requires of
 * scans. A layout with gaps is packed into scratch, scanned in place there
 * and unpacked into recvbuf afterwards, except on rank 0 of an exscan, whose
 * recvbuf MPI leaves undefined and zap leaves as it was. */
#include "coll_zap.h"
#include <stdlib.h>

static int unpack_result(coll_zap_req_t *r) { return coll_zap_unpack(r->ubuf, r->ucount, r->udtype, r->tmp); }

static int fallback(coll_zap_coll_t coll, const void *sbuf, void *rbuf, int count, ompi_datatype_t *dtype,
                    struct ompi_op_t *op, ompi_communicator_t *comm, ompi_request_t **request, coll_zap_module_t *m)
{
    coll_zap_prev_t *p = request == NULL ? &m->prev[coll] : &m->iprev[coll];
    if (coll == COLL_ZAP_SCAN && request == NULL)
        return ((mca_coll_base_module_scan_fn_t)p->fn)(sbuf, rbuf, count, dtype, op, comm, p->module);
    if (coll == COLL_ZAP_SCAN)
        return ((mca_coll_base_module_iscan_fn_t)p->fn)(sbuf, rbuf, count, dtype, op, comm, request, p->module);
    if (request == NULL)
        return ((mca_coll_base_module_exscan_fn_t)p->fn)(sbuf, rbuf, count, dtype, op, comm, p->module);
    return ((mca_coll_base_module_iexscan_fn_t)p->fn)(sbuf, rbuf, count, dtype, op, comm, request, p->module);
}

static int run(coll_zap_coll_t coll, const void *sbuf, void *rbuf, int count, ompi_datatype_t *dtype,
               struct ompi_op_t *op, ompi_communicator_t *comm, ompi_request_t **request, coll_zap_module_t *m)
{
    int nb = request != NULL;
    coll_zap_why_t why = coll_zap_route_sized(m, coll, nb, coll_zap_bytes(dtype, count));
    zap_dtype_t dt = ZAP_DT_UINT8;
    zap_op_t zop = ZAP_OP_SUM;
    size_t n = 0;
    if (why == COLL_ZAP_TAKEN && !coll_zap_reduction_type(dtype, count, op, &dt, &zop, &n)) {
        why = COLL_ZAP_TYPE_OP;
        coll_zap_count(coll, nb, why);
    }
    if (why == COLL_ZAP_STOPPED && m->failed)
        return MPI_ERR_OTHER;
    if (why != COLL_ZAP_TAKEN)
        return fallback(coll, sbuf, rbuf, count, dtype, op, comm, request, m);
    coll_zap_req_t *r = coll_zap_req_get(m, coll);
    if (r == NULL)
        return MPI_ERR_NO_MEM;
    if (zop == COLL_ZAP_USER_OP)
        r->local_rc = coll_zap_bind_user_op(r, op, dtype, &zop);
    const void *zsend;
    void *zrecv;
    if (coll_zap_reduce_dense(dtype, count)) {
        zrecv = coll_zap_start(rbuf, dtype);
        zsend = sbuf == MPI_IN_PLACE ? ZAP_IN_PLACE : coll_zap_start(sbuf, dtype);
    } else {
        r->tmp = malloc(coll_zap_bytes(dtype, count) + 1);
        if (r->tmp == NULL || coll_zap_pack(r->tmp, sbuf == MPI_IN_PLACE ? rbuf : sbuf, count, dtype) != OMPI_SUCCESS)
            r->local_rc = r->tmp == NULL ? MPI_ERR_NO_MEM : MPI_ERR_INTERN;
        zsend = ZAP_IN_PLACE;
        zrecv = r->local_rc == MPI_SUCCESS ? r->tmp : NULL; /* NULL: zap refuses, the others see a mismatch */
        if (coll == COLL_ZAP_SCAN || m->rank > 0) {
            r->finish = unpack_result;
            r->ubuf = rbuf;
            r->ucount = count;
            r->udtype = dtype;
            OBJ_RETAIN(dtype); /* MPI lets the program free it before completion */
        }
    }
    if (r->local_rc != MPI_SUCCESS)
        zrecv = NULL;
    coll_zap_count(coll, nb, COLL_ZAP_TAKEN);
    coll_zap_lock();
    zap_status_t st = coll == COLL_ZAP_SCAN ? COLL_ZAP_POST(request, r, scan, m->zcomm, zsend, zrecv, n, dt, zop)
                                            : COLL_ZAP_POST(request, r, exscan, m->zcomm, zsend, zrecv, n, dt, zop);
    coll_zap_unlock();
    return coll_zap_req_posted(r, st, request);
}

int coll_zap_scan(const void *sbuf, void *rbuf, int count, ompi_datatype_t *dtype, struct ompi_op_t *op,
                  ompi_communicator_t *comm, mca_coll_base_module_t *module)
{
    return run(COLL_ZAP_SCAN, sbuf, rbuf, count, dtype, op, comm, NULL, (coll_zap_module_t *)module);
}

int coll_zap_iscan(const void *sbuf, void *rbuf, int count, ompi_datatype_t *dtype, struct ompi_op_t *op,
                   ompi_communicator_t *comm, ompi_request_t **request, mca_coll_base_module_t *module)
{
    return run(COLL_ZAP_SCAN, sbuf, rbuf, count, dtype, op, comm, request, (coll_zap_module_t *)module);
}

int coll_zap_exscan(const void *sbuf, void *rbuf, int count, ompi_datatype_t *dtype, struct ompi_op_t *op,
                    ompi_communicator_t *comm, mca_coll_base_module_t *module)
{
    return run(COLL_ZAP_EXSCAN, sbuf, rbuf, count, dtype, op, comm, NULL, (coll_zap_module_t *)module);
}

int coll_zap_iexscan(const void *sbuf, void *rbuf, int count, ompi_datatype_t *dtype, struct ompi_op_t *op,
                     ompi_communicator_t *comm, ompi_request_t **request, mca_coll_base_module_t *module)
{
    return run(COLL_ZAP_EXSCAN, sbuf, rbuf, count, dtype, op, comm, request, (coll_zap_module_t *)module);
}
