/* MPI_Allgather(v) and MPI_Iallgather(v) on zap_iallgather(v), as bytes.
 *
 * Where the receive type is dense (no gaps between elements), zap writes
 * straight into recvbuf: the v-form's displacements become zap's signed byte
 * displacements, negative ones included. Where
 * it has gaps, zap gathers into a packed scratch buffer and each block is
 * unpacked into place afterwards; MPI_IN_PLACE then first packs this rank's
 * block out of recvbuf. A send type with gaps is packed on its own. */
#include "coll_zap.h"
#include <stdlib.h>
#include <string.h>

static ptrdiff_t extent_of(ompi_datatype_t *dtype) { return dtype->super.ub - dtype->super.lb; }

/* Unpacks block i of the packed scratch into recvbuf for every rank. */
static int unpack_blocks(coll_zap_req_t *r)
{
    size_t off = 0;
    for (int i = 0; i < r->nblocks; i++) {
        int n = r->ucounts != NULL ? r->ucounts[i] : r->ucount;
        ptrdiff_t disp = r->udispls != NULL ? r->udispls[i] : (ptrdiff_t)i * r->ucount;
        int rc = coll_zap_unpack((char *)r->ubuf + disp * r->uextent, n, r->udtype, (char *)r->tmp + off);
        if (rc != OMPI_SUCCESS)
            return rc;
        off += coll_zap_bytes(r->udtype, n);
    }
    return OMPI_SUCCESS;
}

static int fallback(const void *sbuf, int scount, ompi_datatype_t *sdtype, void *rbuf, int rcount,
                    const int *rcounts, const int *disps, ompi_datatype_t *rdtype, ompi_communicator_t *comm,
                    ompi_request_t **request, coll_zap_module_t *m, coll_zap_coll_t coll)
{
    coll_zap_prev_t *p = request == NULL ? &m->prev[coll] : &m->iprev[coll];
    if (coll == COLL_ZAP_ALLGATHER && request == NULL)
        return ((mca_coll_base_module_allgather_fn_t)p->fn)(sbuf, scount, sdtype, rbuf, rcount, rdtype, comm,
                                                             p->module);
    if (coll == COLL_ZAP_ALLGATHER)
        return ((mca_coll_base_module_iallgather_fn_t)p->fn)(sbuf, scount, sdtype, rbuf, rcount, rdtype, comm,
                                                              request, p->module);
    if (request == NULL)
        return ((mca_coll_base_module_allgatherv_fn_t)p->fn)(sbuf, scount, sdtype, rbuf, rcounts, disps, rdtype,
                                                              comm, p->module);
    return ((mca_coll_base_module_iallgatherv_fn_t)p->fn)(sbuf, scount, sdtype, rbuf, rcounts, disps, rdtype, comm,
                                                           request, p->module);
}

/* Both forms: rcounts NULL is the fixed-count form (rcount each). */
static int run(const void *sbuf, int scount, ompi_datatype_t *sdtype, void *rbuf, int rcount, const int *rcounts,
               const int *disps, ompi_datatype_t *rdtype, ompi_communicator_t *comm, ompi_request_t **request,
               coll_zap_module_t *m)
{
    coll_zap_coll_t coll = rcounts == NULL ? COLL_ZAP_ALLGATHER : COLL_ZAP_ALLGATHERV;
    int nb = request != NULL, p = m->size, me = m->rank;
    size_t rsize = rdtype->super.size, total = 0;
    for (int i = 0; i < p; i++)
        total += (size_t)(rcounts != NULL ? rcounts[i] : rcount) * rsize;
    size_t route_bytes = rcounts == NULL ? coll_zap_bytes(rdtype, rcount) : total / (size_t)p;
    coll_zap_why_t why = coll_zap_route_sized(m, coll, nb, route_bytes);
    if (why == COLL_ZAP_STOPPED && m->failed)
        return MPI_ERR_OTHER;
    if (why != COLL_ZAP_TAKEN)
        return fallback(sbuf, scount, sdtype, rbuf, rcount, rcounts, disps, rdtype, comm, request, m, coll);
    coll_zap_req_t *r = coll_zap_req_get(m, coll);
    if (r == NULL)
        return MPI_ERR_NO_MEM;

    ptrdiff_t rext = extent_of(rdtype);
    bool rdense = rcounts == NULL ? coll_zap_dense(rdtype, rcount * p) : coll_zap_dense(rdtype, 2);
    bool in_place = sbuf == MPI_IN_PLACE;
    size_t sbytes =
        in_place ? (size_t)(rcounts != NULL ? rcounts[me] : rcount) * rsize : coll_zap_bytes(sdtype, scount);
    bool sdense = in_place || coll_zap_dense(sdtype, scount);

    /* zap's counts and displacements (bytes) for the v-form. */
    if (rcounts != NULL) {
        r->counts = malloc((size_t)p * sizeof(size_t));
        r->displs = malloc((size_t)p * sizeof(ptrdiff_t));
        if (r->counts == NULL || r->displs == NULL)
            r->local_rc = MPI_ERR_NO_MEM;
    }
    size_t packed = 0;
    for (int i = 0; r->local_rc == MPI_SUCCESS && rcounts != NULL && i < p; i++) {
        r->counts[i] = (size_t)rcounts[i] * rsize;
        r->displs[i] = rdense ? (rcounts[i] > 0 ? (ptrdiff_t)disps[i] * rext : 0) : (ptrdiff_t)packed;
        packed += r->counts[i];
    }

    /* Scratch: the packed receive area (types with gaps), then the packed
     * send block (send types with gaps, not in place). */
    size_t rtmp = rdense ? 0 : total, stmp = sdense ? 0 : sbytes;
    if (r->local_rc == MPI_SUCCESS && rtmp + stmp > 0) {
        r->tmp = malloc(rtmp + stmp);
        if (r->tmp == NULL)
            r->local_rc = MPI_ERR_NO_MEM;
    }
    const void *zsend = NULL;
    void *zrecv = NULL;
    if (r->local_rc == MPI_SUCCESS) {
        ptrdiff_t my_off = rcounts != NULL ? r->displs[me] : (ptrdiff_t)((size_t)me * sbytes); /* packed area */
        if (rdense) {
            zrecv = coll_zap_start(rbuf, rdtype);
        } else {
            zrecv = r->tmp;
            r->finish = unpack_blocks;
            r->ubuf = rbuf;
            r->ucount = rcount;
            r->ucounts = rcounts;
            r->udispls = disps;
            r->udtype = rdtype;
            OBJ_RETAIN(rdtype); /* MPI lets the program free it before completion */
            r->uextent = rext;
            r->nblocks = p;
        }
        int rc = OMPI_SUCCESS;
        if (in_place) {
            zsend = ZAP_IN_PLACE;
            if (!rdense) {
                ptrdiff_t disp = rcounts != NULL ? disps[me] : (ptrdiff_t)me * rcount;
                rc = coll_zap_pack((char *)r->tmp + my_off, (char *)rbuf + disp * rext,
                                   rcounts != NULL ? rcounts[me] : rcount, rdtype);
            }
        } else if (sdense) {
            zsend = coll_zap_start(sbuf, sdtype);
        } else {
            zsend = (char *)r->tmp + rtmp;
            rc = coll_zap_pack((char *)r->tmp + rtmp, sbuf, scount, sdtype);
        }
        if (rc != OMPI_SUCCESS)
            r->local_rc = MPI_ERR_INTERN;
    }
    if (r->local_rc != MPI_SUCCESS) {
        /* Still take part, with an argument zap refuses (NULL send
         * buffer), so the other ranks see a mismatch, not a hang. */
        zsend = NULL;
        if (sbytes == 0)
            sbytes = 1;
    }
    coll_zap_count(coll, nb, COLL_ZAP_TAKEN);
    coll_zap_lock();
    zap_status_t st;
    if (rcounts == NULL)
        st = COLL_ZAP_POST(request, r, allgather, m->zcomm, zsend, sbytes, zrecv, ZAP_DT_UINT8);
    else if (r->counts != NULL && r->displs != NULL)
        st = COLL_ZAP_POST(request, r, allgatherv, m->zcomm, zsend, sbytes, zrecv, r->counts, r->displs, ZAP_DT_UINT8);
    else
        st = COLL_ZAP_POST(request, r, allgatherv, m->zcomm, NULL, 1, NULL, NULL, NULL, ZAP_DT_UINT8);
    coll_zap_unlock();
    return coll_zap_req_posted(r, st, request);
}

int coll_zap_allgather(const void *sbuf, int scount, ompi_datatype_t *sdtype, void *rbuf, int rcount,
                       ompi_datatype_t *rdtype, ompi_communicator_t *comm, mca_coll_base_module_t *module)
{
    return run(sbuf, scount, sdtype, rbuf, rcount, NULL, NULL, rdtype, comm, NULL, (coll_zap_module_t *)module);
}

int coll_zap_iallgather(const void *sbuf, int scount, ompi_datatype_t *sdtype, void *rbuf, int rcount,
                        ompi_datatype_t *rdtype, ompi_communicator_t *comm, ompi_request_t **request,
                        mca_coll_base_module_t *module)
{
    return run(sbuf, scount, sdtype, rbuf, rcount, NULL, NULL, rdtype, comm, request, (coll_zap_module_t *)module);
}

int coll_zap_allgatherv(const void *sbuf, int scount, ompi_datatype_t *sdtype, void *rbuf, const int *rcounts,
                        const int *disps, ompi_datatype_t *rdtype, ompi_communicator_t *comm,
                        mca_coll_base_module_t *module)
{
    return run(sbuf, scount, sdtype, rbuf, 0, rcounts, disps, rdtype, comm, NULL, (coll_zap_module_t *)module);
}

int coll_zap_iallgatherv(const void *sbuf, int scount, ompi_datatype_t *sdtype, void *rbuf, const int *rcounts,
                         const int *disps, ompi_datatype_t *rdtype, ompi_communicator_t *comm,
                         ompi_request_t **request, mca_coll_base_module_t *module)
{
    return run(sbuf, scount, sdtype, rbuf, 0, rcounts, disps, rdtype, comm, request,
               (coll_zap_module_t *)module);
}
