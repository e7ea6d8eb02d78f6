/* MPI_Scatter(v) and MPI_Iscatter(v) on zap_iscatter and zap_iscatterv, as
 * bytes.
 *
 * MPI_Scatter takes zap's fixed form on every rank (zap's agreement compares
 * the form across ranks, so it may depend on the call only): every block,
 * the root's too, is the same number of bytes at its place in a dense or
 * packed send buffer, and the root of an MPI_IN_PLACE scatter, which keeps
 * its own block, receives its copy into scratch. The fixed form is what
 * zap's one-way shared-memory scatter and its fast form carry (the v-form's
 * counts are the root's alone, so every rank must read its table).
 * MPI_Scatterv takes the v-form, the in-place root's block a zero count.
 *
 * The fixed form's window compares one rank's block (the root's sendcount,
 * every other rank's recvcount: equal by MPI's signature rule). The v-form has
 * no window: only the root knows the counts. On the root, a send type with
 * gaps is packed block by block into a scratch buffer; otherwise the
 * displacements become zap's signed byte displacements (negative ones too). A receive type with gaps receives into scratch and is
 * unpacked afterwards. */
#include "coll_zap.h"
#include <stdlib.h>
#include <string.h>

static ptrdiff_t extent_of(ompi_datatype_t *dtype) { return dtype->super.ub - dtype->super.lb; }

static int unpack_result(coll_zap_req_t *r) { return coll_zap_unpack(r->ubuf, r->ucount, r->udtype, r->tmp); }

static int fallback(const void *sbuf, int scount, const int *scounts, const int *disps, ompi_datatype_t *sdtype,
                    void *rbuf, int rcount, ompi_datatype_t *rdtype, int root, ompi_communicator_t *comm,
                    ompi_request_t **request, coll_zap_module_t *m, coll_zap_coll_t coll)
{
    coll_zap_prev_t *p = request == NULL ? &m->prev[coll] : &m->iprev[coll];
    if (coll == COLL_ZAP_SCATTER && request == NULL)
        return ((mca_coll_base_module_scatter_fn_t)p->fn)(sbuf, scount, sdtype, rbuf, rcount, rdtype, root, comm,
                                                           p->module);
    if (coll == COLL_ZAP_SCATTER)
        return ((mca_coll_base_module_iscatter_fn_t)p->fn)(sbuf, scount, sdtype, rbuf, rcount, rdtype, root, comm,
                                                            request, p->module);
    if (request == NULL)
        return ((mca_coll_base_module_scatterv_fn_t)p->fn)(sbuf, scounts, disps, sdtype, rbuf, rcount, rdtype, root,
                                                            comm, p->module);
    return ((mca_coll_base_module_iscatterv_fn_t)p->fn)(sbuf, scounts, disps, sdtype, rbuf, rcount, rdtype, root,
                                                         comm, request, p->module);
}

/* The root's send side: zap counts, displacements and buffer in r. */
static int root_side(coll_zap_req_t *r, const void *sbuf, int scount, const int *scounts, const int *disps,
                     ompi_datatype_t *sdtype, bool in_place, size_t rtmp, const void **zsend_p)
{
    int p = r->module->size, me = r->module->rank;
    if (scounts == NULL && r->coll == COLL_ZAP_SCATTERV)
        return MPI_ERR_ARG;
    size_t ssize = sdtype->super.size;
    ptrdiff_t sext = extent_of(sdtype);
    r->counts = malloc((size_t)p * sizeof(size_t));
    r->displs = malloc((size_t)p * sizeof(ptrdiff_t));
    if (r->counts == NULL || r->displs == NULL)
        return MPI_ERR_NO_MEM;
    bool sdense = scounts == NULL ? coll_zap_dense(sdtype, scount * p) : coll_zap_dense(sdtype, 2);
    size_t packed = 0;
    for (int i = 0; i < p; i++) {
        int n = scounts != NULL ? scounts[i] : scount;
        ptrdiff_t d = scounts != NULL ? disps[i] : (ptrdiff_t)i * scount;
        r->counts[i] = in_place && i == me ? 0 : (size_t)n * ssize;
        r->displs[i] = sdense ? (n > 0 ? d * sext : 0) : (ptrdiff_t)packed;
        packed += r->counts[i];
    }
    if (sdense) {
        *zsend_p = coll_zap_start(sbuf, sdtype);
        return MPI_SUCCESS;
    }
    /* Packed after the receive scratch (rtmp bytes) in one allocation. */
    char *area = realloc(r->tmp, rtmp + packed + 1);
    if (area == NULL)
        return MPI_ERR_NO_MEM;
    r->tmp = area;
    for (int i = 0; i < p; i++) {
        int n = scounts != NULL ? scounts[i] : scount;
        ptrdiff_t d = scounts != NULL ? disps[i] : (ptrdiff_t)i * scount;
        if (r->counts[i] > 0 && coll_zap_pack(area + rtmp + r->displs[i], (const char *)sbuf + d * sext, n, sdtype) !=
                                    OMPI_SUCCESS)
            return MPI_ERR_INTERN;
    }
    *zsend_p = area + rtmp;
    return MPI_SUCCESS;
}

/* coll says the form: scounts and disps mean something on the root only. */
static int run(coll_zap_coll_t coll, const void *sbuf, int scount, const int *scounts, const int *disps,
               ompi_datatype_t *sdtype, void *rbuf, int rcount, ompi_datatype_t *rdtype, int root,
               ompi_communicator_t *comm, ompi_request_t **request, coll_zap_module_t *m)
{
    int nb = request != NULL;
    bool is_root = m->rank == root;
    bool in_place = is_root && rbuf == MPI_IN_PLACE;
    size_t block =
        is_root && coll == COLL_ZAP_SCATTER ? coll_zap_bytes(sdtype, scount) : coll_zap_bytes(rdtype, rcount);
    coll_zap_why_t why = coll_zap_route_sized(m, coll, nb, block);
    if (why == COLL_ZAP_STOPPED && m->failed)
        return MPI_ERR_OTHER;
    if (why != COLL_ZAP_TAKEN)
        return fallback(sbuf, scount, scounts, disps, sdtype, rbuf, rcount, rdtype, root, comm, request, m, coll);
    coll_zap_req_t *r = coll_zap_req_get(m, coll);
    if (r == NULL)
        return MPI_ERR_NO_MEM;

    /* Receive side. */
    bool fixed = coll == COLL_ZAP_SCATTER;
    size_t rbytes = in_place ? (fixed ? block : 0) : coll_zap_bytes(rdtype, rcount);
    void *zrecv = NULL;
    size_t rtmp = 0;
    if (in_place && fixed) { /* the root's own copy, discarded: its block stays in sbuf */
        rtmp = rbytes;
        r->tmp = malloc(rtmp + 1);
        if (r->tmp == NULL)
            r->local_rc = MPI_ERR_NO_MEM;
        zrecv = r->tmp;
    } else if (!in_place && coll_zap_dense(rdtype, rcount)) {
        zrecv = coll_zap_start(rbuf, rdtype);
    } else if (!in_place) {
        rtmp = rbytes;
        r->tmp = malloc(rtmp + 1);
        if (r->tmp == NULL)
            r->local_rc = MPI_ERR_NO_MEM;
        zrecv = r->tmp;
        r->finish = unpack_result;
        r->ubuf = rbuf;
        r->ucount = rcount;
        r->udtype = rdtype;
        OBJ_RETAIN(rdtype); /* MPI lets the program free it before completion */
    }
    const void *zsend = NULL;
    if (is_root && r->local_rc == MPI_SUCCESS) {
        r->local_rc = root_side(r, sbuf, fixed ? scount : 0, scounts, disps, sdtype, in_place && !fixed, rtmp, &zsend);
        if (rtmp > 0)
            zrecv = r->tmp; /* root_side may have moved the scratch */
    }
    if (r->local_rc != MPI_SUCCESS) {
        /* Take part with an argument zap refuses (NULL receive buffer and a
         * capacity), so the other ranks see a mismatch, not a hang. */
        zrecv = NULL;
        rbytes = 1;
    }
    coll_zap_count(coll, nb, COLL_ZAP_TAKEN);
    coll_zap_lock();
    zap_status_t st =
        fixed ? COLL_ZAP_POST(request, r, scatter, m->zcomm, zsend, zrecv, rbytes, ZAP_DT_UINT8, root)
              : COLL_ZAP_POST(request, r, scatterv, m->zcomm, zsend, r->counts, r->displs, zrecv, rbytes, ZAP_DT_UINT8,
                              root);
    coll_zap_unlock();
    return coll_zap_req_posted(r, st, request);
}

int coll_zap_scatter(const void *sbuf, int scount, ompi_datatype_t *sdtype, void *rbuf, int rcount,
                     ompi_datatype_t *rdtype, int root, ompi_communicator_t *comm, mca_coll_base_module_t *module)
{
    return run(COLL_ZAP_SCATTER, sbuf, scount, NULL, NULL, sdtype, rbuf, rcount, rdtype, root, comm, NULL,
               (coll_zap_module_t *)module);
}

int coll_zap_iscatter(const void *sbuf, int scount, ompi_datatype_t *sdtype, void *rbuf, int rcount,
                      ompi_datatype_t *rdtype, int root, ompi_communicator_t *comm, ompi_request_t **request,
                      mca_coll_base_module_t *module)
{
    return run(COLL_ZAP_SCATTER, sbuf, scount, NULL, NULL, sdtype, rbuf, rcount, rdtype, root, comm, request,
               (coll_zap_module_t *)module);
}

int coll_zap_scatterv(const void *sbuf, const int *scounts, const int *disps, ompi_datatype_t *sdtype, void *rbuf,
                      int rcount, ompi_datatype_t *rdtype, int root, ompi_communicator_t *comm,
                      mca_coll_base_module_t *module)
{
    return run(COLL_ZAP_SCATTERV, sbuf, 0, scounts, disps, sdtype, rbuf, rcount, rdtype, root, comm, NULL,
               (coll_zap_module_t *)module);
}

int coll_zap_iscatterv(const void *sbuf, const int *scounts, const int *disps, ompi_datatype_t *sdtype,
                       void *rbuf, int rcount, ompi_datatype_t *rdtype, int root, ompi_communicator_t *comm,
                       ompi_request_t **request, mca_coll_base_module_t *module)
{
    return run(COLL_ZAP_SCATTERV, sbuf, 0, scounts, disps, sdtype, rbuf, rcount, rdtype, root, comm, request,
               (coll_zap_module_t *)module);
}
