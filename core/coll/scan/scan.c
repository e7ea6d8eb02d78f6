/* Scan and exscan: argument checks, the algorithm tables and the selection
 * rows (one table each, the same algorithms).
 *
 * Algorithms (one file each; docs/collectives.md):
 *   rd      recursive doubling: ceil(log2 p) rounds of whole vectors.
 *   linear  a chain r-1 -> r -> r+1, pipelined in segments: each rank
 *           sends and receives the vector once. Large vectors.
 *   shm     the vectors ride the agreement's shared-memory slots, or above
 *           4032 bytes the segment's large area; each rank reduces the ones
 *           below it (one host).
 *   blocks  the segment's large area, each rank folding one block of the
 *           vector across all ranks (one host): the last rank's cost does
 *           not grow with p.
 *   chain   the segment's large area, a chain r-1 -> r pipelined in chunks
 *           of about n/p: one reduction per rank, waits on its neighbours
 *           per chunk; the area wraps, so any size.
 * Every one combines in rank order, so every op runs on each. */
#include "coll/scan/scan.h"
#include "coll/comm_impl.h"
#include "coll/engine/mem.h"
#include "coll/engine/fast.h"
#include "coll/engine/select.h"
#include "coll/reduce/reduce.h"
#include "coll/shm/shm.h"
#include "base/log.h"
#include <stdint.h>

#define KiB(n) ((size_t)(n) << 10)

static const zap_coll_alg_t algs[ZAP_SC_NALGS] = {
    [ZAP_SC_RD] = {.name = "rd", .description = "recursive doubling of partials over aligned runs of ranks",
                   .init = zap_scan_rd_init, .by_name = true},
    [ZAP_SC_LINEAR] = {.name = "linear", .description = "a chain through the ranks, pipelined in segments",
                       .init = zap_scan_linear_init, .by_name = true},
    [ZAP_SC_SHM] = {.name = "shm", .description = "the vectors in the shared segment's slots or large area, each rank reduces",
                    .init = zap_scan_shm_init, .require = ZAP_COLL_PRED_SAME_HOST | ZAP_COLL_PRED_FITS_SHM,
                    .agrees_in_data = ZAP_COLL_SHM_MAX_BYTES, .by_name = true},
    [ZAP_SC_BLOCKS] = {.name = "blocks",
                       .description = "the segment's large area, each rank folds one block of the vector over all ranks",
                       .init = zap_scan_shm_blocks_init, .require = ZAP_COLL_PRED_SAME_HOST | ZAP_COLL_PRED_FITS_SHM,
                       .by_name = true},
    [ZAP_SC_CHAIN] = {.name = "chain",
                      .description = "the segment's large area, a chain through the ranks pipelined in chunks",
                      .init = zap_scan_shm_chain_init, .require = ZAP_COLL_PRED_SAME_HOST, /* the area wraps */
                      .by_name = true},
};

static const zap_coll_row_t rows[] = {
    {ZAP_SC_SHM, 2, ZAP_COLL_SHM_MAX_RANKS, 0, ZAP_COLL_SHM_MAX_BYTES + 1, 0, 0,
     "one host, up to a slot: the agreement carries the vectors"},
    {ZAP_SC_SHM, 2, 4, ZAP_COLL_SHM_MAX_BYTES + 1, KiB(256) + 1, ZAP_COLL_PRED_OVERSUBSCRIBED, 0,
     "one host, up to 4 ranks sharing cores, above a slot to 256 KiB: each reduces the ones below it"},
    {ZAP_SC_BLOCKS, 2, 4, KiB(256) + 1, SIZE_MAX, ZAP_COLL_PRED_OVERSUBSCRIBED, 0,
     "one host, up to 4 ranks sharing cores, above 256 KiB: each rank folds one block (no waits in a chain)"},
    {ZAP_SC_CHAIN, 2, 4, ZAP_COLL_SHM_MAX_BYTES + 1, SIZE_MAX, 0, 0,
     "one host, up to 4 ranks, above a slot: a chain through the large area, pipelined in chunks"},
    {ZAP_SC_BLOCKS, 5, ZAP_COLL_SHM_MAX_RANKS, ZAP_COLL_SHM_MAX_BYTES + 1, KiB(32) + 1, 0, 0,
     "one host, 5 ranks or more, above a slot to 32 KiB: each rank folds one block over all ranks"},
    {ZAP_SC_CHAIN, 5, ZAP_COLL_SHM_MAX_RANKS, KiB(32) + 1, SIZE_MAX, 0, 0,
     "one host, 5 ranks or more, above 32 KiB: a chain through the large area, pipelined in chunks"},
    {ZAP_SC_RD, 1, INT32_MAX, 0, KiB(64), 0, 0, "log2(p) rounds of the whole vector"},
    {ZAP_SC_LINEAR, 1, INT32_MAX, KiB(64), SIZE_MAX, 0, 0, "every rank sends the vector once, pipelined"},
};

/* The shared segment's agreement under the automatic choice and the forms
 * that use the segment; else recursive doubling. */
static zap_coll_form_t form_of(const zap_comm_t *comm, int f)
{
    bool shm_alg = f < 0 || f == ZAP_SC_SHM || f == ZAP_SC_BLOCKS || f == ZAP_SC_CHAIN;
    return comm->shm != NULL && shm_alg ? ZAP_COLL_FORM_SHM : ZAP_COLL_FORM_RD;
}

static zap_coll_form_t scan_form(const zap_comm_t *comm) { return form_of(comm, comm->set.alg[ZAP_COLL_SCAN]); }

static zap_coll_form_t exscan_form(const zap_comm_t *comm) { return form_of(comm, comm->set.alg[ZAP_COLL_EXSCAN]); }

const zap_coll_desc_t zap_scan_desc = {
    .name = "scan",
    .kind = ZAP_COLL_SCAN,
    .algs = algs,
    .nalgs = ZAP_SC_NALGS,
    .rows = rows,
    .nrows = (int)(sizeof(rows) / sizeof(rows[0])),
    .form = scan_form,
    .needs_setup = true,
    .setting = ZAP_CFG_SCAN_ALG,
    .fast_alg = ZAP_SC_SHM,
    .fast_setup = zap_scan_shm_fast_setup,
    .fast_finish = zap_scan_shm_fast_finish,
};

const zap_coll_desc_t zap_exscan_desc = {
    .name = "exscan",
    .kind = ZAP_COLL_EXSCAN,
    .algs = algs,
    .nalgs = ZAP_SC_NALGS,
    .rows = rows,
    .nrows = (int)(sizeof(rows) / sizeof(rows[0])),
    .form = exscan_form,
    .needs_setup = true,
    .setting = ZAP_CFG_EXSCAN_ALG,
    .fast_alg = ZAP_SC_SHM,
    .fast_setup = zap_scan_shm_fast_setup,
    .fast_finish = zap_exscan_shm_fast_finish,
};

/* Posts the call (req_p), or runs it to completion (blocking: req_p NULL,
 * the fast form where it applies, engine/fast.h). */
static zap_status_t post(zap_comm_t *comm, const zap_coll_desc_t *desc, const void *sendbuf, void *recvbuf,
                         size_t count, zap_dtype_t dt, zap_op_t zop, bool blocking, zap_request_t **req_p)
{
    if (comm == NULL || (req_p == NULL && !blocking))
        return ZAP_ERR_INVALID_PARAM;
    const char *name = desc->name;
    zap_status_t local = zap_reduce_check(comm->rank, name, dt, zop, ZAP_MEM_HOST);
    if (local == ZAP_OK && count > SIZE_MAX / 4 / zap_dtype_size(dt)) {
        zap_error("coll: rank %d: %s: count %zu too large", comm->rank, name, count);
        local = ZAP_ERR_INVALID_PARAM;
    }
    if (local == ZAP_OK && count > 0 && (sendbuf == NULL || recvbuf == NULL)) {
        zap_error("coll: rank %d: %s: NULL buffer with count %zu", comm->rank, name, count);
        local = ZAP_ERR_INVALID_PARAM;
    }
    zap_coll_args_t a = {.src = sendbuf == ZAP_IN_PLACE ? recvbuf : sendbuf, .dst = recvbuf, .count = count,
                         .dt = dt, .op = zop, .root = -1, .hdr_count = count, .mem = ZAP_MEM_HOST};
    if (local == ZAP_OK) {
        a.call_flags = zap_coll_call_flags(dt, zop);
        a.bytes = count * zap_dtype_size(dt);
        a.mem = zap_coll_mem_kind(comm, recvbuf, a.bytes);
        if (a.mem == ZAP_MEM_DEVICE)
            local = zap_reduce_check(comm->rank, name, dt, zop, a.mem);
    }
    a.empty = count == 0;
    if (blocking)
        return zap_coll_call(comm, desc, &a, local);
    return zap_coll_ipost(comm, desc, &a, local, req_p);
}

zap_status_t zap_iscan(zap_comm_t *comm, const void *sendbuf, void *recvbuf, size_t count, zap_dtype_t dt,
                       zap_op_t zop, zap_request_t **req_p)
{
    return post(comm, &zap_scan_desc, sendbuf, recvbuf, count, dt, zop, false, req_p);
}

zap_status_t zap_iexscan(zap_comm_t *comm, const void *sendbuf, void *recvbuf, size_t count, zap_dtype_t dt,
                         zap_op_t zop, zap_request_t **req_p)
{
    return post(comm, &zap_exscan_desc, sendbuf, recvbuf, count, dt, zop, false, req_p);
}

zap_status_t zap_scan(zap_comm_t *comm, const void *sendbuf, void *recvbuf, size_t count, zap_dtype_t dt,
                      zap_op_t zop)
{
    return post(comm, &zap_scan_desc, sendbuf, recvbuf, count, dt, zop, true, NULL);
}

zap_status_t zap_exscan(zap_comm_t *comm, const void *sendbuf, void *recvbuf, size_t count, zap_dtype_t dt,
                        zap_op_t zop)
{
    return post(comm, &zap_exscan_desc, sendbuf, recvbuf, count, dt, zop, true, NULL);
}
