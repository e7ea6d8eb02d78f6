/* Broadcast: argument checks, the algorithm table and the automatic choice.
 *
 * Algorithms (one file each), all over virtual ranks relative to the root:
 *   binomial           the root's buffer travels down a binomial tree whole:
 *                      ceil(log2 p) rounds of n bytes. Small messages.
 *   scatter_allgather  binomial scatter of p blocks, then a ring allgather
 *                      (van de Geijn): about 2 n bytes per rank, log2(p) + p - 1
 *                      rounds. Medium and large messages.
 *   chain              a pipeline 0 -> 1 -> ... -> p-1 in segments of
 *                      ZAP_COLL_PIPELINE_BYTES: (p - 2 + k) segment rounds,
 *                      n bytes per link. Very large messages.
 *   shm                through the communicator's shared-memory segment
 *                      (ranks on one host): the root's slot up to 4032 bytes,
 *                      the large area beyond (bcast_shm.c). Before the rows,
 *                      like the allreduce's.
 * Selection as in allreduce.c; ZAP_BCAST_ALG overrides. A broadcast moves
 * bytes, so every algorithm gives identical bytes trivially. */
#include "coll/coll_impl.h"
#include "coll/selection.h"
#include "coll/shm/shm.h"
#include "coll/gpu/gpu.h"
#include "base/config_table.h"
#include "base/log.h"
#include <stdint.h>
#include <string.h>

const zap_coll_alg_t zap_bcast_algs[ZAP_BC_NALGS] = {
    [ZAP_BC_BINOMIAL] = {"binomial", "binomial tree, whole message per edge", "small messages"},
    [ZAP_BC_SCATTER_ALLGATHER] = {"scatter_allgather", "binomial scatter + ring allgather",
                                  "medium and large messages"},
    [ZAP_BC_CHAIN] = {"chain", "pipelined chain in ZAP_COLL_PIPELINE_BYTES segments", "very large messages"},
    [ZAP_BC_RD] = {"rd", "recursive doubling carrying the data in the argument exchange", "small messages"},
    [ZAP_BC_SHM] = {"shm", "the root's data through the shared-memory segment, one copy in and one out",
                    "ranks on one host"},
};

const zap_coll_selection_row_t zap_bcast_rows[] = {
    {"bcast", "rd", 1, INT32_MAX, 0, 8192},
    {"bcast", "binomial", 1, 2, 0, SIZE_MAX},
    {"bcast", "binomial", 3, INT32_MAX, 0, 1048576},
    {"bcast", "chain", 3, INT32_MAX, 1048576, SIZE_MAX},
};
const size_t zap_bcast_nrows = sizeof(zap_bcast_rows) / sizeof(zap_bcast_rows[0]);

/* shm (the agreement in shared memory) says whether the segment may carry the
 * data, up to zap_comm_shared_memory_bytes; beyond, the rows. */
static int choose(const zap_comm_t *comm, size_t bytes, bool shm, int idx)
{
    size_t area = shm ? zap_comm_shared_memory_bytes(comm) : 0;
    if (idx > 0 && (idx - 1 != ZAP_BC_SHM || bytes <= area))
        return idx - 1;
    if (shm && bytes <= area)
        return ZAP_BC_SHM;
    const char *name = zap_coll_select_row(zap_bcast_rows, zap_bcast_nrows, bytes, comm->size);
    int alg = ZAP_BC_BINOMIAL;
    for (int a = 0; a < ZAP_BC_NALGS; a++)
        if (name != NULL && strcmp(name, zap_bcast_algs[a].name) == 0)
            alg = a;
    return alg;
}

zap_status_t zap_bcast_transport_run(zap_coll_op_t *op, void *buf, size_t bytes, int root)
{
    zap_status_t st;
    switch (choose(op->comm, bytes, false, 0)) {
    case ZAP_BC_SCATTER_ALLGATHER: st = zap_bcast_scatter_allgather_init(op, buf, bytes, root); break;
    case ZAP_BC_CHAIN: st = zap_bcast_chain_init(op, buf, bytes, root); break;
    case ZAP_BC_RD:
        /* rd's exchange carries the data (and the header again): it runs as
         * the agreement stage from the next progress call. */
        st = zap_bcast_rd_init(op, buf, bytes, root);
        return st == ZAP_OK ? ZAP_INPROGRESS : st;
    default: st = zap_bcast_binomial_init(op, buf, bytes, root); break;
    }
    if (st != ZAP_OK)
        return st;
    op->agreeing = false;
    return op->progress(op);
}

zap_status_t zap_ibcast(zap_comm_t *comm, void *buf, size_t count, zap_dtype_t dt, int root, zap_request_t **req_p)
{
    if (comm == NULL || req_p == NULL)
        return ZAP_ERR_INVALID_PARAM;
    zap_status_t local = ZAP_OK;
    size_t esize = zap_dtype_size(dt);
    if (esize == 0) {
        zap_error("coll: rank %d: bcast: invalid datatype %d", comm->rank, (int)dt);
        local = ZAP_ERR_INVALID_PARAM;
    } else if (root < 0 || root >= comm->size) {
        zap_error("coll: rank %d: bcast: root %d is not in [0, %d)", comm->rank, root, comm->size);
        local = ZAP_ERR_INVALID_PARAM;
    } else if (count > 0 && buf == NULL) {
        zap_error("coll: rank %d: bcast: NULL buffer with count %zu", comm->rank, count);
        local = ZAP_ERR_INVALID_PARAM;
    } else if (count > SIZE_MAX / esize) {
        local = ZAP_ERR_INVALID_PARAM;
    }
    int idx = zap_coll_pattern_setting(ZAP_CFG_BCAST_ALG, &local);
    bool shm = comm->shm != NULL && (idx == 0 || idx - 1 == ZAP_BC_SHM);
    int alg = local == ZAP_OK ? choose(comm, count * esize, shm, idx) : ZAP_BC_BINOMIAL;
    zap_coll_op_t *op = NULL;
    zap_status_t st = zap_coll_op_get(comm, ZAP_COLL_BCAST, local == ZAP_OK ? alg : 0xff, &op);
    if (st != ZAP_OK)
        return st;
    op->shm_agree = shm;
    /* rd (and the small shm form, rd's engine in shared memory) carries the
     * argument header in its data and is chosen for small messages only, as
     * the allreduce's rd, which the GPU path leaves alone. */
    bool small_shm = alg == ZAP_BC_SHM && count * esize <= ZAP_COLL_SHM_PAYLOAD;
    bool staged = local == ZAP_OK && alg != ZAP_BC_RD && !small_shm &&
                  zap_stage_wanted(op, count * esize); /* GPU-resident path, gpu/gpu.h */
    zap_coll_hdr_init(op, count, dt, ZAP_OP_SUM, root, 0, local != ZAP_OK);
    if (local != ZAP_OK) {
        zap_coll_op_fail_local(op, local);
    } else {
        size_t bytes = count * esize;
        op->mem = zap_coll_mem_kind(comm, buf, bytes);
        switch (staged ? -1 : alg) {
        case -1: st = zap_stage_bcast_init(op, buf, bytes, root, alg); break;
        case ZAP_BC_SCATTER_ALLGATHER: st = zap_bcast_scatter_allgather_init(op, buf, bytes, root); break;
        case ZAP_BC_CHAIN: st = zap_bcast_chain_init(op, buf, bytes, root); break;
        case ZAP_BC_RD: st = zap_bcast_rd_init(op, buf, bytes, root); break;
        case ZAP_BC_SHM:
            st = small_shm ? zap_bcast_rd_init(op, buf, bytes, root) : zap_bcast_shm_large_init(op, buf, bytes, root, false);
            break;
        default: st = zap_bcast_binomial_init(op, buf, bytes, root); break;
        }
        if (st == ZAP_OK && alg != ZAP_BC_RD && !small_shm) /* rd carries the agreement in its data */
            st = zap_coll_rd_init(op, 0, NULL, 0, dt, ZAP_OP_SUM);
        if (st != ZAP_OK)
            zap_coll_op_fail_local(op, st);
        else
            op->agreeing = true;
    }
    return zap_coll_op_start(op, req_p);
}

zap_status_t zap_bcast(zap_comm_t *comm, void *buf, size_t count, zap_dtype_t dt, int root)
{
    zap_request_t *req = NULL;
    zap_status_t st = zap_ibcast(comm, buf, count, dt, root, &req);
    if (st != ZAP_OK)
        return st;
    return zap_coll_wait_free(req);
}
