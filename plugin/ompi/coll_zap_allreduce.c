/* MPI_Allreduce and MPI_Iallreduce on zap_iallreduce.
 *
 * Taken when the row allows the vector's bytes and the op and type have zap
 * counterparts (coll_zap_reduction_type; a C user op is bound to the call);
 * the element count zap sees is the signature's number of basic elements, so
 * a derived type of ints reduces as ints. A layout with gaps is packed into a
 * scratch vector that zap reduces in place and that is unpacked into recvbuf
 * afterwards; otherwise (and for MPI's pair types, whose C structs zap reads
 * as they are) zap works on the user's buffers (MPI_IN_PLACE as
 * ZAP_IN_PLACE).
 *
 * GPU-resident buffers (CUDA device or managed memory) go to zap at every
 * size (coll_zap_route_kind): its GPU path moves them GPU to GPU. A layout
 * with gaps in device memory cannot be packed here (the CPU cannot touch it):
 * such a call is refused with MPI_ERR_TYPE. */
#include "coll_zap.h"
#include <stdlib.h>
#include <string.h>

static int unpack_result(coll_zap_req_t *r) { return coll_zap_unpack(r->ubuf, r->ucount, r->udtype, r->tmp); }

static int fallback(const void *sbuf, void *rbuf, int count, ompi_datatype_t *dtype, struct ompi_op_t *op,
                    ompi_communicator_t *comm, ompi_request_t **request, coll_zap_module_t *m)
{
    if (request == NULL) {
        mca_coll_base_module_allreduce_fn_t f = (mca_coll_base_module_allreduce_fn_t)m->prev[COLL_ZAP_ALLREDUCE].fn;
        return f(sbuf, rbuf, count, dtype, op, comm, m->prev[COLL_ZAP_ALLREDUCE].module);
    }
    mca_coll_base_module_iallreduce_fn_t f = (mca_coll_base_module_iallreduce_fn_t)m->iprev[COLL_ZAP_ALLREDUCE].fn;
    return f(sbuf, rbuf, count, dtype, op, comm, request, m->iprev[COLL_ZAP_ALLREDUCE].module);
}

static int run(const void *sbuf, void *rbuf, int count, ompi_datatype_t *dtype, struct ompi_op_t *op,
               ompi_communicator_t *comm, ompi_request_t **request, coll_zap_module_t *m)
{
    int nb = request != NULL;
    coll_zap_why_t why = coll_zap_route_cid(COLL_ZAP_ALLREDUCE, nb, count, dtype, op, 0);
    if (why == COLL_ZAP_TAKEN)
        why = coll_zap_route_kind(m, COLL_ZAP_ALLREDUCE, nb, coll_zap_bytes(dtype, count), rbuf, sbuf);
    zap_dtype_t dt = ZAP_DT_UINT8;
    zap_op_t zop = ZAP_OP_SUM;
    size_t n = 0;
    if (why == COLL_ZAP_TAKEN && !coll_zap_reduction_type(dtype, count, op, &dt, &zop, &n)) {
        why = COLL_ZAP_TYPE_OP;
        coll_zap_count(COLL_ZAP_ALLREDUCE, nb, why);
    }
    if (why == COLL_ZAP_STOPPED && m->failed)
        return MPI_ERR_OTHER; /* after a lost peer or a timeout: no path is safe */
    if (why != COLL_ZAP_TAKEN)
        return fallback(sbuf, rbuf, count, dtype, op, comm, request, m);
    coll_zap_req_t *r = coll_zap_req_get(m, COLL_ZAP_ALLREDUCE);
    if (r == NULL)
        return MPI_ERR_NO_MEM;
    if (zop == COLL_ZAP_USER_OP)
        r->local_rc = coll_zap_bind_user_op(r, op, dtype, &zop);

    const void *zsend;
    void *zrecv;
    if (!coll_zap_reduce_dense(dtype, count) && (coll_zap_device_memory(rbuf) || coll_zap_device_memory(sbuf))) {
        coll_zap_warn("MPI_Allreduce: a datatype with gaps on device memory cannot be packed by the CPU");
        r->local_rc = MPI_ERR_TYPE; /* zap refuses the NULL buffer, the other ranks see a mismatch */
        zsend = ZAP_IN_PLACE;
        zrecv = NULL;
    } else if (coll_zap_reduce_dense(dtype, count)) {
        zrecv = coll_zap_start(rbuf, dtype);
        zsend = sbuf == MPI_IN_PLACE ? ZAP_IN_PLACE : coll_zap_start(sbuf, dtype);
    } else {
        r->tmp = malloc(coll_zap_bytes(dtype, count));
        if (r->tmp == NULL || coll_zap_pack(r->tmp, sbuf == MPI_IN_PLACE ? rbuf : sbuf, count, dtype) != OMPI_SUCCESS)
            r->local_rc = r->tmp == NULL ? MPI_ERR_NO_MEM : MPI_ERR_INTERN;
        zsend = ZAP_IN_PLACE;
        zrecv = r->local_rc == MPI_SUCCESS ? r->tmp : NULL; /* NULL: zap refuses, the others see a mismatch */
        r->finish = unpack_result;
        r->ubuf = rbuf;
        r->ucount = count;
        r->udtype = dtype;
        OBJ_RETAIN(dtype); /* MPI lets the program free it before completion */
    }
    coll_zap_count(COLL_ZAP_ALLREDUCE, nb, COLL_ZAP_TAKEN);
    coll_zap_lock();
    zap_status_t st = COLL_ZAP_POST(request, r, allreduce, m->zcomm, zsend, zrecv, n, dt, zop);
    coll_zap_unlock();
    return coll_zap_req_posted(r, st, request);
}

int coll_zap_allreduce(const void *sbuf, void *rbuf, int count, ompi_datatype_t *dtype, struct ompi_op_t *op,
                       ompi_communicator_t *comm, mca_coll_base_module_t *module)
{
    return run(sbuf, rbuf, count, dtype, op, comm, NULL, (coll_zap_module_t *)module);
}

int coll_zap_iallreduce(const void *sbuf, void *rbuf, int count, ompi_datatype_t *dtype, struct ompi_op_t *op,
                        ompi_communicator_t *comm, ompi_request_t **request, mca_coll_base_module_t *module)
{
    return run(sbuf, rbuf, count, dtype, op, comm, request, (coll_zap_module_t *)module);
}
