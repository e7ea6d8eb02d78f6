/* Reduce_scatter and reduce_scatter_block: argument checks, the algorithm
 * table and the selection rows (one table for both forms).
 *
 * Algorithms (one file each; docs/collectives.md has rounds, bytes and
 * reduction orders):
 *   rhalving  recursive halving over units laid out in bit-reversed order:
 *             log2(p) rounds, rank order for every op.
 *   ring      p - 1 rounds of one part each, the fewest bytes per link;
 *             commutative ops.
 *   shm       the segment's slots up to 4032 bytes, its large area beyond:
 *             every rank reduces its own part from the p inputs (one host).
 *   cma       single copy: every rank reads its part of the others' inputs
 *             (one host, host memory, not in place).
 *   hier      through the hosts' hierarchy: small vectors in the
 *             hierarchical agreement; larger ones node reduce to each
 *             host's leader, the leaders' ring over the hosts' packed parts,
 *             node scatterv (ranks on several hosts, commutative ops).
 * counts must be the same on every rank: the header carries the total and
 * a hash of them, and whether the call is in place (MPI: all ranks or
 * none). */
#include "coll/reduce_scatter/reduce_scatter.h"
#include "coll/allreduce/allreduce.h"
#include "coll/comm_impl.h"
#include "coll/engine/fast.h"
#include "coll/engine/mem.h"
#include "coll/engine/select.h"
#include "coll/reduce/reduce.h"
#include "coll/shm/shm.h"
#include "base/log.h"
#include <stdint.h>

#define KiB(n) ((size_t)(n) << 10)
#define SHM_RANKS 2, ZAP_COLL_SHM_MAX_RANKS

static const zap_coll_alg_t algs[ZAP_RS_NALGS] = {
    [ZAP_RS_RHALVING] = {.name = "rhalving",
                         .description = "recursive halving over parts in bit-reversed order; rank order",
                         .init = zap_reduce_scatter_rhalving_init, .by_name = true},
    [ZAP_RS_RING] = {.name = "ring", .description = "ring, one part per round",
                     .init = zap_reduce_scatter_ring_init, .require = ZAP_COLL_PRED_COMMUTATIVE, .by_name = true},
    [ZAP_RS_SHM] = {.name = "shm",
                    .description = "every rank reduces its part from the p inputs in the shared segment",
                    .init = zap_reduce_scatter_shm_init, .require = ZAP_COLL_PRED_SAME_HOST | ZAP_COLL_PRED_FITS_SHM,
                    .by_name = true},
    [ZAP_RS_CMA] = {.name = "cma", .description = "single copy: every rank reads its part of the others' inputs",
                    .init = zap_reduce_scatter_cma_init,
                    .require = ZAP_COLL_PRED_SAME_HOST | ZAP_COLL_PRED_SINGLE_COPY | ZAP_COLL_PRED_HOST_MEMORY,
                    .vote_lane = ZAP_COLL_LANE_VOTE_HOST, .vote = zap_reduce_scatter_cma_vote, .by_name = true},
    [ZAP_RS_HIER] = {.name = "hier",
                     .description = "through the hosts' hierarchy: node reduce, the leaders' ring over the hosts' "
                                    "parts, node scatterv",
                     .init = zap_reduce_scatter_hier_init, .require = ZAP_COLL_PRED_HOSTS | ZAP_COLL_PRED_COMMUTATIVE,
                     .agrees_in_data = ZAP_AR_HIER_SMALL_BYTES, .by_name = true},
};

static const zap_coll_row_t rows[] = {
    {ZAP_RS_HIER, 3, INT32_MAX, 0, SIZE_MAX, 0, 0,
     "ranks on several hosts: each host sends the others' parts of its sum once"},
    {ZAP_RS_CMA, SHM_RANKS, KiB(256), SIZE_MAX, 0, ZAP_COLL_PRED_OVERSUBSCRIBED | ZAP_COLL_PRED_SLOW_READS,
     "large host vectors on one host: each needed byte read once, no staging"},
    {ZAP_RS_CMA, SHM_RANKS, KiB(256), SIZE_MAX, ZAP_COLL_PRED_SLOW_READS,
     ZAP_COLL_PRED_OVERSUBSCRIBED | ZAP_COLL_PRED_FITS_SHM,
     "single-copy reads dear on this host: only what the shared area cannot carry"},
    {ZAP_RS_SHM, SHM_RANKS, 0, SIZE_MAX, 0, 0, "one host: one copy in, no messages"},
    {ZAP_RS_RHALVING, 1, INT32_MAX, 0, SIZE_MAX, 0, 0, "log2(p) rounds, (1 - 1/p) n bytes; every op"},
};

static zap_coll_form_t rs_form(const zap_comm_t *comm)
{
    int f = comm->set.alg[ZAP_COLL_REDUCE_SCATTER];
    return comm->shm != NULL && (f < 0 || f == ZAP_RS_SHM || f == ZAP_RS_CMA) ? ZAP_COLL_FORM_SHM : ZAP_COLL_FORM_RD;
}

const zap_coll_desc_t zap_reduce_scatter_desc = {
    .name = "reduce_scatter",
    .kind = ZAP_COLL_REDUCE_SCATTER,
    .algs = algs,
    .nalgs = ZAP_RS_NALGS,
    .rows = rows,
    .nrows = (int)(sizeof(rows) / sizeof(rows[0])),
    .form = rs_form,
    .needs_setup = true,
    .setting = ZAP_CFG_REDUCE_SCATTER_ALG,
    .fast_alg = ZAP_RS_SHM,
    .fast_setup = zap_reduce_scatter_shm_fast_setup,
    .fast_finish = zap_reduce_scatter_shm_fast_finish,
};

/* FNV-1a over the counts, so ranks can compare arrays through the header. */
static uint64_t counts_hash(const size_t *counts, size_t fixed, int p)
{
    uint64_t h = 1469598103934665603ull;
    for (int r = 0; r < p; r++) {
        uint64_t c = counts ? counts[r] : fixed;
        for (int b = 0; b < 8; b++) {
            h ^= (c >> (8 * b)) & 0xff;
            h *= 1099511628211ull;
        }
    }
    return h;
}

/* This rank's own argument error, logged; ZAP_OK when there is none.
 * *total_p is the whole vector's length. */
static zap_status_t check(const zap_comm_t *comm, const void *sendbuf, const void *recvbuf, const size_t *counts,
                          size_t fixed, bool is_v, zap_dtype_t dt, zap_op_t zop, size_t *total_p)
{
    const char *name = is_v ? "reduce_scatter" : "reduce_scatter_block";
    zap_status_t st = zap_reduce_check(comm->rank, name, dt, zop, ZAP_MEM_HOST);
    if (st != ZAP_OK)
        return st;
    if (is_v && counts == NULL) {
        zap_error("coll: rank %d: %s: counts is required", comm->rank, name);
        return ZAP_ERR_INVALID_PARAM;
    }
    size_t total = 0, limit = SIZE_MAX / 4 / zap_dtype_size(dt);
    for (int r = 0; r < comm->size; r++) {
        size_t c = is_v ? counts[r] : fixed;
        if (c > limit - total) {
            zap_error("coll: rank %d: %s: counts too large", comm->rank, name);
            return ZAP_ERR_INVALID_PARAM;
        }
        total += c;
    }
    size_t mine = is_v ? counts[comm->rank] : fixed;
    if ((total > 0 && sendbuf == NULL) || (mine > 0 && recvbuf == NULL) ||
        (sendbuf == ZAP_IN_PLACE && total > 0 && recvbuf == NULL)) {
        zap_error("coll: rank %d: %s: NULL buffer", comm->rank, name);
        return ZAP_ERR_INVALID_PARAM;
    }
    *total_p = total;
    return ZAP_OK;
}

/* Checks and posts the call (blocking: runs it to completion, by the fast
 * form where it applies, engine/fast.h). */
static zap_status_t post(zap_comm_t *comm, const void *sendbuf, void *recvbuf, const size_t *counts, size_t fixed,
                         bool is_v, zap_dtype_t dt, zap_op_t zop, bool blocking, zap_request_t **req_p)
{
    if (comm == NULL || (req_p == NULL && !blocking))
        return ZAP_ERR_INVALID_PARAM;
    size_t total = 0;
    zap_status_t local = check(comm, sendbuf, recvbuf, counts, fixed, is_v, dt, zop, &total);
    bool in_place = sendbuf == ZAP_IN_PLACE;
    zap_coll_args_t a = {.src = in_place ? recvbuf : sendbuf, .dst = recvbuf, .count = total, .fixed = fixed,
                         .counts = is_v ? counts : NULL, .dt = dt, .op = zop, .root = -1, .hdr_count = total,
                         .mem = ZAP_MEM_HOST};
    if (local == ZAP_OK) {
        a.call_flags = zap_coll_call_flags(dt, zop);
        a.bytes = total * zap_dtype_size(dt);
        a.hdr_extra = (counts_hash(a.counts, fixed, comm->size) ^ (is_v ? 1 : 0)) & ~ZAP_RS_EXTRA_IN_PLACE;
        if (in_place)
            a.hdr_extra |= ZAP_RS_EXTRA_IN_PLACE;
        size_t mine = is_v ? counts[comm->rank] : fixed;
        a.mem = zap_coll_mem_kind(comm, mine > 0 ? recvbuf : a.src, a.bytes);
        if (a.mem == ZAP_MEM_DEVICE)
            local = zap_reduce_check(comm->rank, is_v ? "reduce_scatter" : "reduce_scatter_block", dt, zop, a.mem);
    }
    a.empty = total == 0;
    if (blocking)
        return zap_coll_call(comm, &zap_reduce_scatter_desc, &a, local);
    return zap_coll_ipost(comm, &zap_reduce_scatter_desc, &a, local, req_p);
}

zap_status_t zap_ireduce_scatter(zap_comm_t *comm, const void *sendbuf, void *recvbuf, const size_t *counts,
                                 zap_dtype_t dt, zap_op_t zop, zap_request_t **req_p)
{
    return post(comm, sendbuf, recvbuf, counts, 0, true, dt, zop, false, req_p);
}

zap_status_t zap_ireduce_scatter_block(zap_comm_t *comm, const void *sendbuf, void *recvbuf, size_t count,
                                       zap_dtype_t dt, zap_op_t zop, zap_request_t **req_p)
{
    return post(comm, sendbuf, recvbuf, NULL, count, false, dt, zop, false, req_p);
}

zap_status_t zap_reduce_scatter(zap_comm_t *comm, const void *sendbuf, void *recvbuf, const size_t *counts,
                                zap_dtype_t dt, zap_op_t zop)
{
    return post(comm, sendbuf, recvbuf, counts, 0, true, dt, zop, true, NULL);
}

zap_status_t zap_reduce_scatter_block(zap_comm_t *comm, const void *sendbuf, void *recvbuf, size_t count,
                                      zap_dtype_t dt, zap_op_t zop)
{
    return post(comm, sendbuf, recvbuf, NULL, count, false, dt, zop, true, NULL);
}
