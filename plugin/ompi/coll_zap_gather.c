/* MPI_Gather(v) and MPI_Igather(v) on zap_igather / zap_igatherv, as bytes.
 *
 * Where the root's receive type is dense, zap writes straight into recvbuf
 * (gatherv's displacements become zap's signed byte displacements); where it
 * has gaps, zap gathers into a packed scratch area and each block is
 * unpacked into place afterwards (MPI_IN_PLACE then first packs the root's
 * own block out of recvbuf). A send type with gaps is packed on its own.
 * gather's window compares one rank's block (the root's recvcount, every
 * other rank's sendcount: equal by MPI's signature rule); gatherv has none,
 * its counts being the root's alone. */
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

static int fallback(coll_zap_coll_t coll, const void *sbuf, int scount, ompi_datatype_t *sdtype, void *rbuf,
                    int rcount, const int *rcounts, const int *disps, ompi_datatype_t *rdtype, int root,
                    ompi_communicator_t *comm, ompi_request_t **request, coll_zap_module_t *m)
{
    coll_zap_prev_t *p = request == NULL ? &m->prev[coll] : &m->iprev[coll];
    if (coll == COLL_ZAP_GATHER && request == NULL)
        return ((mca_coll_base_module_gather_fn_t)p->fn)(sbuf, scount, sdtype, rbuf, rcount, rdtype, root, comm,
                                                          p->module);
    if (coll == COLL_ZAP_GATHER)
        return ((mca_coll_base_module_igather_fn_t)p->fn)(sbuf, scount, sdtype, rbuf, rcount, rdtype, root, comm,
                                                           request, p->module);
    if (request == NULL)
        return ((mca_coll_base_module_gatherv_fn_t)p->fn)(sbuf, scount, sdtype, rbuf, rcounts, disps, rdtype, root,
                                                           comm, p->module);
    return ((mca_coll_base_module_igatherv_fn_t)p->fn)(sbuf, scount, sdtype, rbuf, rcounts, disps, rdtype, root,
                                                        comm, request, p->module);
}

/* is_v: gatherv (rcounts, disps), else gather (rcount). rbuf, rcount,
 * rcounts, disps and rdtype mean something on the root only. */
static int run(bool is_v, const void *sbuf, int scount, ompi_datatype_t *sdtype, void *rbuf, int rcount,
               const int *rcounts, const int *disps, ompi_datatype_t *rdtype, int root, ompi_communicator_t *comm,
               ompi_request_t **request, coll_zap_module_t *m)
{
    coll_zap_coll_t coll = is_v ? COLL_ZAP_GATHERV : COLL_ZAP_GATHER;
    int nb = request != NULL, p = m->size, me = m->rank;
    bool is_root = me == root, in_place = is_root && sbuf == MPI_IN_PLACE;
    size_t block = is_root ? coll_zap_bytes(rdtype, rcount) : coll_zap_bytes(sdtype, scount);
    coll_zap_why_t why = coll_zap_route_sized(m, coll, nb, is_v ? 0 : block);
    if (why == COLL_ZAP_STOPPED && m->failed)
        return MPI_ERR_OTHER;
    if (why != COLL_ZAP_TAKEN)
        return fallback(coll, sbuf, scount, sdtype, rbuf, rcount, rcounts, disps, rdtype, root, comm, request, m);
    coll_zap_req_t *r = coll_zap_req_get(m, coll);
    if (r == NULL)
        return MPI_ERR_NO_MEM;

    /* The root's receive side: zap's counts and displacements (bytes). */
    size_t rsize = is_root ? rdtype->super.size : 0, rtotal = 0, rtmp = 0;
    ptrdiff_t rext = is_root ? extent_of(rdtype) : 0;
    bool rdense = true;
    if (is_root) {
        rdense = is_v ? coll_zap_dense(rdtype, 2) : coll_zap_dense(rdtype, rcount * p);
        if (is_v) {
            r->counts = malloc((size_t)p * sizeof(size_t));
            r->displs = malloc((size_t)p * sizeof(ptrdiff_t));
            if (r->counts == NULL || r->displs == NULL)
                r->local_rc = MPI_ERR_NO_MEM;
        }
        for (int i = 0; i < p; i++) {
            size_t b = (size_t)(is_v ? rcounts[i] : rcount) * rsize;
            if (is_v && r->local_rc == MPI_SUCCESS) {
                r->counts[i] = b;
                r->displs[i] = rdense ? (b > 0 ? (ptrdiff_t)disps[i] * rext : 0) : (ptrdiff_t)rtotal;
            }
            rtotal += b;
        }
        rtmp = rdense ? 0 : rtotal;
    }
    size_t sbytes = in_place ? (size_t)(is_v ? rcounts[me] : rcount) * rsize : coll_zap_bytes(sdtype, scount);
    bool sdense = in_place || coll_zap_dense(sdtype, scount);
    size_t stmp = sdense ? 0 : sbytes;
    if (r->local_rc == MPI_SUCCESS && rtmp + stmp > 0 && (r->tmp = malloc(rtmp + stmp)) == NULL)
        r->local_rc = MPI_ERR_NO_MEM;
    const void *zsend = NULL;
    void *zrecv = NULL;
    if (r->local_rc == MPI_SUCCESS) {
        int rc = OMPI_SUCCESS;
        if (is_root && rdense) {
            zrecv = coll_zap_start(rbuf, rdtype);
        } else if (is_root) {
            zrecv = r->tmp;
            r->finish = unpack_blocks;
            r->ubuf = rbuf;
            r->ucount = rcount;
            r->ucounts = is_v ? rcounts : NULL;
            r->udispls = is_v ? disps : NULL;
            r->udtype = rdtype;
            OBJ_RETAIN(rdtype); /* MPI lets the program free it before completion */
            r->uextent = rext;
            r->nblocks = p;
            if (in_place) { /* the root's own block into its place in the packed area */
                ptrdiff_t my_off = is_v ? r->displs[me] : (ptrdiff_t)((size_t)me * sbytes);
                ptrdiff_t disp = is_v ? disps[me] : (ptrdiff_t)me * rcount;
                rc = coll_zap_pack((char *)r->tmp + my_off, (char *)rbuf + disp * rext, is_v ? rcounts[me] : rcount,
                                   rdtype);
            }
        }
        if (in_place)
            zsend = ZAP_IN_PLACE;
        else if (sdense)
            zsend = coll_zap_start(sbuf, sdtype);
        else if (rc == OMPI_SUCCESS) {
            zsend = (char *)r->tmp + rtmp;
            rc = coll_zap_pack((char *)r->tmp + rtmp, sbuf, scount, sdtype);
        }
        if (rc != OMPI_SUCCESS)
            r->local_rc = MPI_ERR_INTERN;
    }
    if (r->local_rc != MPI_SUCCESS) {
        zsend = NULL; /* zap refuses it: the others see a mismatch, not a hang */
        sbytes = sbytes > 0 ? sbytes : 1;
    }
    coll_zap_count(coll, nb, COLL_ZAP_TAKEN);
    coll_zap_lock();
    zap_status_t st;
    if (!is_v)
        st = COLL_ZAP_POST(request, r, gather, m->zcomm, zsend, is_root ? block : sbytes, zrecv, ZAP_DT_UINT8, root);
    else
        st = COLL_ZAP_POST(request, r, gatherv, m->zcomm, zsend, sbytes, zrecv, r->counts, r->displs, ZAP_DT_UINT8,
                           root);
    coll_zap_unlock();
    return coll_zap_req_posted(r, st, request);
}

int coll_zap_gather(const void *sbuf, int scount, ompi_datatype_t *sdtype, void *rbuf, int rcount,
                    ompi_datatype_t *rdtype, int root, ompi_communicator_t *comm, mca_coll_base_module_t *module)
{
    return run(false, sbuf, scount, sdtype, rbuf, rcount, NULL, NULL, rdtype, root, comm, NULL,
               (coll_zap_module_t *)module);
}

int coll_zap_igather(const void *sbuf, int scount, ompi_datatype_t *sdtype, void *rbuf, int rcount,
                     ompi_datatype_t *rdtype, int root, ompi_communicator_t *comm, ompi_request_t **request,
                     mca_coll_base_module_t *module)
{
    return run(false, sbuf, scount, sdtype, rbuf, rcount, NULL, NULL, rdtype, root, comm, request,
               (coll_zap_module_t *)module);
}

int coll_zap_gatherv(const void *sbuf, int scount, ompi_datatype_t *sdtype, void *rbuf, const int *rcounts,
                     const int *disps, ompi_datatype_t *rdtype, int root, ompi_communicator_t *comm,
                     mca_coll_base_module_t *module)
{
    return run(true, sbuf, scount, sdtype, rbuf, 0, rcounts, disps, rdtype, root, comm, NULL,
               (coll_zap_module_t *)module);
}

int coll_zap_igatherv(const void *sbuf, int scount, ompi_datatype_t *sdtype, void *rbuf, const int *rcounts,
                      const int *disps, ompi_datatype_t *rdtype, int root, ompi_communicator_t *comm,
                      ompi_request_t **request, mca_coll_base_module_t *module)
{
    return run(true, sbuf, scount, sdtype, rbuf, 0, rcounts, disps, rdtype, root, comm, request,
               (coll_zap_module_t *)module);
}
