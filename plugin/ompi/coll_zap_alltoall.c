/* MPI_Alltoall(v) and MPI_Ialltoall(v) on zap_ialltoall(v), as bytes.
 *
 * Dense layouts (no gaps between elements) go to zap as they are: the
 * v-form's displacements become zap's signed byte displacements. A send type
 * with gaps is packed block by block into scratch (the fixed form: all
 * blocks in one pack, they follow each other), and a receive type with gaps
 * receives into packed scratch unpacked block by block afterwards;
 * MPI_IN_PLACE then first packs recvbuf's blocks into that scratch, which
 * zap exchanges in place. alltoall's window compares one block (sendcount x
 * sendtype size); alltoallv has none. */
#include "coll_zap.h"
#include <stdlib.h>
#include <string.h>

static ptrdiff_t extent_of(ompi_datatype_t *dtype) { return dtype->super.ub - dtype->super.lb; }

/* Unpacks the packed receive scratch into recvbuf (rcounts NULL: the fixed
 * form, every block ucount items, one after the other). */
static int unpack_blocks(coll_zap_req_t *r)
{
    if (r->ucounts == NULL)
        return coll_zap_unpack(r->ubuf, r->ucount * r->nblocks, r->udtype, r->tmp);
    size_t off = 0;
    for (int i = 0; i < r->nblocks; i++) {
        int rc = coll_zap_unpack((char *)r->ubuf + (ptrdiff_t)r->udispls[i] * r->uextent, r->ucounts[i], r->udtype,
                                 (char *)r->tmp + off);
        if (rc != OMPI_SUCCESS)
            return rc;
        off += coll_zap_bytes(r->udtype, r->ucounts[i]);
    }
    return OMPI_SUCCESS;
}

static int fallback(bool is_v, const void *sbuf, int scount, const int *scounts, const int *sdisps,
                    ompi_datatype_t *sdtype, void *rbuf, int rcount, const int *rcounts, const int *rdisps,
                    ompi_datatype_t *rdtype, ompi_communicator_t *comm, ompi_request_t **request, coll_zap_module_t *m)
{
    coll_zap_coll_t coll = is_v ? COLL_ZAP_ALLTOALLV : COLL_ZAP_ALLTOALL;
    coll_zap_prev_t *p = request == NULL ? &m->prev[coll] : &m->iprev[coll];
    if (!is_v && request == NULL)
        return ((mca_coll_base_module_alltoall_fn_t)p->fn)(sbuf, scount, sdtype, rbuf, rcount, rdtype, comm,
                                                            p->module);
    if (!is_v)
        return ((mca_coll_base_module_ialltoall_fn_t)p->fn)(sbuf, scount, sdtype, rbuf, rcount, rdtype, comm, request,
                                                             p->module);
    if (request == NULL)
        return ((mca_coll_base_module_alltoallv_fn_t)p->fn)(sbuf, scounts, sdisps, sdtype, rbuf, rcounts, rdisps,
                                                             rdtype, comm, p->module);
    return ((mca_coll_base_module_ialltoallv_fn_t)p->fn)(sbuf, scounts, sdisps, sdtype, rbuf, rcounts, rdisps, rdtype,
                                                          comm, request, p->module);
}

static int run(bool is_v, const void *sbuf, int scount, const int *scounts, const int *sdisps,
               ompi_datatype_t *sdtype, void *rbuf, int rcount, const int *rcounts, const int *rdisps,
               ompi_datatype_t *rdtype, ompi_communicator_t *comm, ompi_request_t **request, coll_zap_module_t *m)
{
    coll_zap_coll_t coll = is_v ? COLL_ZAP_ALLTOALLV : COLL_ZAP_ALLTOALL;
    int nb = request != NULL, p = m->size;
    bool in_place = sbuf == MPI_IN_PLACE;
    /* In place the send side is the receive side. */
    if (in_place) {
        scount = rcount;
        scounts = rcounts;
        sdisps = rdisps;
        sdtype = rdtype;
    }
    size_t block = coll_zap_bytes(sdtype, scount);
    coll_zap_why_t why = coll_zap_route_sized(m, coll, nb, is_v ? 0 : block);
    if (why == COLL_ZAP_STOPPED && m->failed)
        return MPI_ERR_OTHER;
    if (why != COLL_ZAP_TAKEN)
        return fallback(is_v, in_place ? MPI_IN_PLACE : sbuf, scount, scounts, sdisps, sdtype, rbuf, rcount, rcounts,
                        rdisps, rdtype, comm, request, m);
    coll_zap_req_t *r = coll_zap_req_get(m, coll);
    if (r == NULL)
        return MPI_ERR_NO_MEM;
    size_t ssize = sdtype->super.size, rsize = rdtype->super.size, stot = 0, rtot = 0;
    ptrdiff_t sext = extent_of(sdtype), rext = extent_of(rdtype);
    bool sdense = is_v ? coll_zap_dense(sdtype, 2) : coll_zap_dense(sdtype, scount * p);
    bool rdense = is_v ? coll_zap_dense(rdtype, 2) : coll_zap_dense(rdtype, rcount * p);
    if (in_place)
        sdense = rdense;
    if (is_v) { /* zap's counts and displacements: send side then receive side */
        r->counts = malloc(2 * (size_t)p * sizeof(size_t));
        r->displs = malloc(2 * (size_t)p * sizeof(ptrdiff_t));
        if (r->counts == NULL || r->displs == NULL)
            r->local_rc = MPI_ERR_NO_MEM;
    }
    for (int j = 0; j < p; j++) {
        size_t sb = (size_t)(is_v ? scounts[j] : scount) * ssize, rb = (size_t)(is_v ? rcounts[j] : rcount) * rsize;
        if (is_v && r->local_rc == MPI_SUCCESS) {
            r->counts[j] = sb;
            r->displs[j] = sdense ? (sb > 0 ? (ptrdiff_t)sdisps[j] * sext : 0) : (ptrdiff_t)stot;
            r->counts[p + j] = rb;
            r->displs[p + j] = rdense ? (rb > 0 ? (ptrdiff_t)rdisps[j] * rext : 0) : (ptrdiff_t)rtot;
        }
        stot += sb;
        rtot += rb;
    }
    /* Scratch: the packed receive area, then the packed send area (not in
     * place: in place the receive area is both). */
    size_t rtmp = rdense ? 0 : rtot, stmp = sdense || in_place ? 0 : stot;
    if (r->local_rc == MPI_SUCCESS && rtmp + stmp > 0 && (r->tmp = malloc(rtmp + stmp)) == NULL)
        r->local_rc = MPI_ERR_NO_MEM;
    const void *zsend = NULL;
    void *zrecv = NULL;
    int rc = OMPI_SUCCESS;
    if (r->local_rc == MPI_SUCCESS) {
        zrecv = rdense ? coll_zap_start(rbuf, rdtype) : r->tmp;
        if (!rdense) {
            r->finish = unpack_blocks;
            r->ubuf = rbuf;
            r->ucount = rcount;
            r->ucounts = is_v ? rcounts : NULL;
            r->udispls = is_v ? rdisps : NULL;
            r->udtype = rdtype;
            OBJ_RETAIN(rdtype); /* MPI lets the program free it before completion */
            r->uextent = rext;
            r->nblocks = p;
        }
        char *spack = in_place ? r->tmp : (char *)r->tmp + rtmp; /* in place with gaps: pack recvbuf */
        if (in_place && rdense) {
            zsend = ZAP_IN_PLACE;
        } else if (!in_place && sdense) {
            zsend = coll_zap_start(sbuf, sdtype);
        } else {
            const char *from = in_place ? rbuf : sbuf;
            if (!is_v) {
                rc = coll_zap_pack(spack, from, scount * p, sdtype);
            } else {
                size_t at = 0;
                for (int j = 0; j < p && rc == OMPI_SUCCESS; j++) {
                    rc = coll_zap_pack(spack + at, from + (ptrdiff_t)sdisps[j] * sext, scounts[j], sdtype);
                    at += coll_zap_bytes(sdtype, scounts[j]);
                }
            }
            zsend = in_place ? ZAP_IN_PLACE : spack;
        }
        if (rc != OMPI_SUCCESS)
            r->local_rc = MPI_ERR_INTERN;
    }
    if (r->local_rc != MPI_SUCCESS)
        zrecv = NULL; /* zap refuses it: the others see a mismatch, not a hang */
    coll_zap_count(coll, nb, COLL_ZAP_TAKEN);
    coll_zap_lock();
    zap_status_t st;
    if (!is_v)
        st = COLL_ZAP_POST(request, r, alltoall, m->zcomm, zsend, block, zrecv, ZAP_DT_UINT8);
    else if (r->counts != NULL && r->displs != NULL)
        st = COLL_ZAP_POST(request, r, alltoallv, m->zcomm, zsend, r->counts, r->displs, zrecv, r->counts + p,
                           r->displs + p, ZAP_DT_UINT8);
    else
        st = COLL_ZAP_POST(request, r, alltoallv, m->zcomm, zsend, NULL, NULL, NULL, NULL, NULL, ZAP_DT_UINT8);
    coll_zap_unlock();
    return coll_zap_req_posted(r, st, request);
}

int coll_zap_alltoall(const void *sbuf, int scount, ompi_datatype_t *sdtype, void *rbuf, int rcount,
                      ompi_datatype_t *rdtype, ompi_communicator_t *comm, mca_coll_base_module_t *module)
{
    return run(false, sbuf, scount, NULL, NULL, sdtype, rbuf, rcount, NULL, NULL, rdtype, comm, NULL,
               (coll_zap_module_t *)module);
}

int coll_zap_ialltoall(const void *sbuf, int scount, ompi_datatype_t *sdtype, void *rbuf, int rcount,
                       ompi_datatype_t *rdtype, ompi_communicator_t *comm, ompi_request_t **request,
                       mca_coll_base_module_t *module)
{
    return run(false, sbuf, scount, NULL, NULL, sdtype, rbuf, rcount, NULL, NULL, rdtype, comm, request,
               (coll_zap_module_t *)module);
}

int coll_zap_alltoallv(const void *sbuf, const int *scounts, const int *sdisps, ompi_datatype_t *sdtype, void *rbuf,
                       const int *rcounts, const int *rdisps, ompi_datatype_t *rdtype, ompi_communicator_t *comm,
                       mca_coll_base_module_t *module)
{
    return run(true, sbuf, 0, scounts, sdisps, sdtype, rbuf, 0, rcounts, rdisps, rdtype, comm, NULL,
               (coll_zap_module_t *)module);
}

int coll_zap_ialltoallv(const void *sbuf, const int *scounts, const int *sdisps, ompi_datatype_t *sdtype, void *rbuf,
                        const int *rcounts, const int *rdisps, ompi_datatype_t *rdtype, ompi_communicator_t *comm,
                        ompi_request_t **request, mca_coll_base_module_t *module)
{
    return run(true, sbuf, 0, scounts, sdisps, sdtype, rbuf, 0, rcounts, rdisps, rdtype, comm, request,
               (coll_zap_module_t *)module);
}
