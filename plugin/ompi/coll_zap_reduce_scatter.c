/* MPI_Reduce_scatter, MPI_Reduce_scatter_block and their non-blocking forms
 * on zap_ireduce_scatter / zap_ireduce_scatter_block.
 *
 * Taken as the allreduce is (coll_zap_allreduce.c): the row's window, an op
 * and type with zap counterparts (a C user op bound to the call). zap counts
 * elements: each MPI item is e of them (a derived type of e ints), so the
 * parts are counts[r] * e. With dense layouts zap reads the input and writes
 * this rank's part in the user's buffers (MPI_IN_PLACE: the input in
 * recvbuf, the part at its start); otherwise the input is packed into
 * scratch and the part unpacked from it afterwards. */
#include "coll_zap.h"
#include <stdlib.h>

static int unpack_result(coll_zap_req_t *r) { return coll_zap_unpack(r->ubuf, r->ucount, r->udtype, r->tmp); }

static int fallback(coll_zap_coll_t coll, const void *sbuf, void *rbuf, int rcount, const int *rcounts,
                    ompi_datatype_t *dtype, struct ompi_op_t *op, ompi_communicator_t *comm, ompi_request_t **request,
                    coll_zap_module_t *m)
{
    coll_zap_prev_t *p = request == NULL ? &m->prev[coll] : &m->iprev[coll];
    if (coll == COLL_ZAP_REDUCE_SCATTER_BLOCK && request == NULL)
        return ((mca_coll_base_module_reduce_scatter_block_fn_t)p->fn)(sbuf, rbuf, rcount, dtype, op, comm,
                                                                        p->module);
    if (coll == COLL_ZAP_REDUCE_SCATTER_BLOCK)
        return ((mca_coll_base_module_ireduce_scatter_block_fn_t)p->fn)(sbuf, rbuf, rcount, dtype, op, comm, request,
                                                                         p->module);
    if (request == NULL)
        return ((mca_coll_base_module_reduce_scatter_fn_t)p->fn)(sbuf, rbuf, rcounts, dtype, op, comm, p->module);
    return ((mca_coll_base_module_ireduce_scatter_fn_t)p->fn)(sbuf, rbuf, rcounts, dtype, op, comm, request,
                                                               p->module);
}

/* rcounts NULL: the block form (rcount items each). */
static int run(const void *sbuf, void *rbuf, int rcount, const int *rcounts, ompi_datatype_t *dtype,
               struct ompi_op_t *op, ompi_communicator_t *comm, ompi_request_t **request, coll_zap_module_t *m)
{
    coll_zap_coll_t coll = rcounts == NULL ? COLL_ZAP_REDUCE_SCATTER_BLOCK : COLL_ZAP_REDUCE_SCATTER;
    int nb = request != NULL, p = m->size, me = m->rank;
    size_t total = 0;
    for (int i = 0; i < p; i++)
        total += (size_t)(rcounts != NULL ? rcounts[i] : rcount);
    int mine = rcounts != NULL ? rcounts[me] : rcount;
    size_t route = rcounts == NULL ? coll_zap_bytes(dtype, rcount) : total * dtype->super.size / (size_t)p;
    coll_zap_why_t why = coll_zap_route_sized(m, coll, nb, route);
    zap_dtype_t dt = ZAP_DT_UINT8;
    zap_op_t zop = ZAP_OP_SUM;
    size_t e = 0; /* zap elements per MPI item */
    if (why == COLL_ZAP_TAKEN && (total > INT32_MAX || !coll_zap_reduction_type(dtype, 1, op, &dt, &zop, &e))) {
        why = COLL_ZAP_TYPE_OP;
        coll_zap_count(coll, nb, why);
    }
    if (why == COLL_ZAP_STOPPED && m->failed)
        return MPI_ERR_OTHER;
    if (why != COLL_ZAP_TAKEN)
        return fallback(coll, sbuf, rbuf, rcount, rcounts, dtype, op, comm, request, m);
    coll_zap_req_t *r = coll_zap_req_get(m, coll);
    if (r == NULL)
        return MPI_ERR_NO_MEM;
    if (zop == COLL_ZAP_USER_OP)
        r->local_rc = coll_zap_bind_user_op(r, op, dtype, &zop);
    if (rcounts != NULL) {
        r->counts = malloc((size_t)p * sizeof(size_t));
        if (r->counts == NULL)
            r->local_rc = MPI_ERR_NO_MEM;
        for (int i = 0; r->counts != NULL && i < p; i++)
            r->counts[i] = (size_t)rcounts[i] * e;
    }
    bool in_place = sbuf == MPI_IN_PLACE;
    const void *zsend = NULL;
    void *zrecv = NULL;
    if (coll_zap_reduce_dense(dtype, (int)total)) {
        zsend = in_place ? ZAP_IN_PLACE : coll_zap_start(sbuf, dtype);
        zrecv = coll_zap_start(rbuf, dtype);
    } else if (r->local_rc == MPI_SUCCESS) {
        /* The packed input, reduced in place: this rank's part lands at its
         * start, unpacked from there. */
        r->tmp = malloc(coll_zap_bytes(dtype, (int)total) + 1);
        if (r->tmp == NULL || coll_zap_pack(r->tmp, in_place ? rbuf : sbuf, (int)total, dtype) != OMPI_SUCCESS)
            r->local_rc = r->tmp == NULL ? MPI_ERR_NO_MEM : MPI_ERR_INTERN;
        zsend = ZAP_IN_PLACE;
        zrecv = r->tmp;
        r->finish = unpack_result;
        r->ubuf = rbuf;
        r->ucount = mine;
        r->udtype = dtype;
        OBJ_RETAIN(dtype); /* MPI lets the program free it before completion */
    }
    if (r->local_rc != MPI_SUCCESS)
        zsend = NULL; /* zap refuses it: the others see a mismatch, not a hang */
    coll_zap_count(coll, nb, COLL_ZAP_TAKEN);
    coll_zap_lock();
    zap_status_t st;
    if (rcounts == NULL)
        st = COLL_ZAP_POST(request, r, reduce_scatter_block, m->zcomm, zsend, zrecv, (size_t)rcount * e, dt, zop);
    else if (r->counts != NULL)
        st = COLL_ZAP_POST(request, r, reduce_scatter, m->zcomm, zsend, zrecv, r->counts, dt, zop);
    else
        st = COLL_ZAP_POST(request, r, reduce_scatter, m->zcomm, zsend, zrecv, NULL, dt, zop);
    coll_zap_unlock();
    return coll_zap_req_posted(r, st, request);
}

int coll_zap_reduce_scatter(const void *sbuf, void *rbuf, const int *rcounts, ompi_datatype_t *dtype,
                            struct ompi_op_t *op, ompi_communicator_t *comm, mca_coll_base_module_t *module)
{
    return run(sbuf, rbuf, 0, rcounts, dtype, op, comm, NULL, (coll_zap_module_t *)module);
}

int coll_zap_ireduce_scatter(const void *sbuf, void *rbuf, const int *rcounts, ompi_datatype_t *dtype,
                             struct ompi_op_t *op, ompi_communicator_t *comm, ompi_request_t **request,
                             mca_coll_base_module_t *module)
{
    return run(sbuf, rbuf, 0, rcounts, dtype, op, comm, request, (coll_zap_module_t *)module);
}

int coll_zap_reduce_scatter_block(const void *sbuf, void *rbuf, int rcount, ompi_datatype_t *dtype,
                                  struct ompi_op_t *op, ompi_communicator_t *comm, mca_coll_base_module_t *module)
{
    return run(sbuf, rbuf, rcount, NULL, dtype, op, comm, NULL, (coll_zap_module_t *)module);
}

int coll_zap_ireduce_scatter_block(const void *sbuf, void *rbuf, int rcount, ompi_datatype_t *dtype,
                                   struct ompi_op_t *op, ompi_communicator_t *comm, ompi_request_t **request,
                                   mca_coll_base_module_t *module)
{
    return run(sbuf, rbuf, rcount, NULL, dtype, op, comm, request, (coll_zap_module_t *)module);
}
