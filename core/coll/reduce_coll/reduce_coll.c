/* Reduce (rooted): argument checks, the algorithm table and the selection
 * rows.
 *
 * Algorithms (one file each; docs/collectives.md has rounds, bytes and the
 * reduction order of each):
 *   binomial      a binomial tree of whole vectors towards the root (rooted
 *                 at rank 0 for a non-commutative op, then one hop more).
 *                 Small vectors.
 *   rabenseifner  recursive-halving reduce-scatter + binomial gather to the
 *                 root; rank order for every op. Medium and large vectors.
 *   shm           the shared segment's slots up to 4032 bytes, its large
 *                 area beyond (ranks on one host).
 *   cma           single copy: rank r reduces block r reading the others'
 *                 inputs, the root reads the finished blocks (ranks on one
 *                 host, host memory). Large vectors.
 *   hier          through the hosts' hierarchy: small vectors in the
 *                 hierarchical agreement, larger ones node reduce to each
 *                 host's leader, the leaders' reduce to the root's host,
 *                 then to the root (reduce_hier.c). Ranks on several hosts,
 *                 commutative ops.
 * On a communicator with a shared segment every reduce agrees in it (the
 * header in the slots) under the automatic choice and when shm is forced;
 * otherwise by recursive doubling. */
#include "coll/reduce_coll/reduce_coll.h"
#include "coll/allreduce/allreduce.h"
#include "coll/comm_impl.h"
#include "coll/engine/mem.h"
#include "coll/engine/fast.h"
#include "coll/engine/select.h"
#include "coll/reduce/reduce.h"
#include "coll/shm/shm.h"
#include "base/log.h"
#include <stdint.h>

#define KiB(n) ((size_t)(n) << 10)

static const zap_coll_alg_t algs[ZAP_RD_NALGS] = {
    [ZAP_RD_BINOMIAL] = {.name = "binomial", .description = "binomial tree of whole vectors to the root",
                         .init = zap_reduce_binomial_init, .by_name = true},
    [ZAP_RD_RABENSEIFNER] = {.name = "rabenseifner",
                             .description = "recursive-halving reduce-scatter + binomial gather to the root",
                             .init = zap_reduce_rabenseifner_init, .by_name = true},
    [ZAP_RD_SHM] = {.name = "shm", .description = "shared-memory slots, then the segment's large area; rank order",
                    .init = zap_reduce_shm_init, .require = ZAP_COLL_PRED_SAME_HOST | ZAP_COLL_PRED_FITS_SHM,
                    .agrees_in_data = ZAP_COLL_SHM_MAX_BYTES, .by_name = true},
    [ZAP_RD_HIER] = {.name = "hier",
                     .description = "through the hosts' hierarchy: to each host's leader, across the leaders to the "
                                    "root's host, to the root",
                     .init = zap_reduce_hier_init, .require = ZAP_COLL_PRED_HOSTS | ZAP_COLL_PRED_COMMUTATIVE,
                     .agrees_in_data = ZAP_AR_HIER_SMALL_BYTES, .by_name = true},
    [ZAP_RD_CMA] = {.name = "cma",
                    .description = "single copy: each rank reduces its block reading the others' buffers, the root "
                                   "reads the blocks",
                    .init = zap_reduce_cma_init,
                    .require = ZAP_COLL_PRED_SAME_HOST | ZAP_COLL_PRED_SINGLE_COPY | ZAP_COLL_PRED_HOST_MEMORY,
                    .vote_lane = ZAP_COLL_LANE_VOTE_HOST, .vote = zap_allreduce_cma_vote, .by_name = true},
};

static const zap_coll_row_t rows[] = {
    {ZAP_RD_HIER, 3, INT32_MAX, 0, SIZE_MAX, 0, 0,
     "ranks on several hosts: each host's ranks meet in shared memory, the hosts' sums cross once"},
    {ZAP_RD_CMA, 2, ZAP_COLL_SHM_MAX_RANKS, KiB(256), SIZE_MAX, 0,
     ZAP_COLL_PRED_OVERSUBSCRIBED | ZAP_COLL_PRED_SLOW_READS,
     "large host vectors on one host: one copy per byte, no staging area"},
    {ZAP_RD_CMA, 2, ZAP_COLL_SHM_MAX_RANKS, KiB(256), SIZE_MAX, ZAP_COLL_PRED_SLOW_READS,
     ZAP_COLL_PRED_OVERSUBSCRIBED | ZAP_COLL_PRED_FITS_SHM,
     "single-copy reads dear on this host: only what the shared area cannot carry"},
    {ZAP_RD_CMA, 2, ZAP_COLL_SHM_MAX_RANKS, (size_t)12 << 20, SIZE_MAX, ZAP_COLL_PRED_OVERSUBSCRIBED, 0,
     "oversubscribed, from 12 MiB: the area's form slows to half of single copy there"},
    {ZAP_RD_SHM, 2, ZAP_COLL_SHM_MAX_RANKS, 0, SIZE_MAX, 0, 0, "one host: no messages at all up to the area's size"},
    {ZAP_RD_BINOMIAL, 1, INT32_MAX, 0, KiB(8), 0, 0, "fewest rounds: ceil(log2 p) whole-vector hops"},
    {ZAP_RD_RABENSEIFNER, 1, INT32_MAX, KiB(8), SIZE_MAX, 0, 0,
     "halved vectors and the reductions spread over the ranks"},
};

static zap_coll_form_t reduce_form(const zap_comm_t *comm)
{
    int f = comm->set.alg[ZAP_COLL_REDUCE];
    return comm->shm != NULL && (f < 0 || f == ZAP_RD_SHM || f == ZAP_RD_CMA) ? ZAP_COLL_FORM_SHM : ZAP_COLL_FORM_RD;
}

const zap_coll_desc_t zap_reduce_desc = {
    .name = "reduce",
    .kind = ZAP_COLL_REDUCE,
    .algs = algs,
    .nalgs = ZAP_RD_NALGS,
    .rows = rows,
    .nrows = (int)(sizeof(rows) / sizeof(rows[0])),
    .form = reduce_form,
    .needs_setup = true,
    .setting = ZAP_CFG_REDUCE_ALG,
    .fast_alg = ZAP_RD_SHM,
    .fast_setup = zap_reduce_shm_fast_setup,
    .fast_finish = zap_reduce_shm_fast_finish,
};

/* This rank's own argument error, logged; ZAP_OK when there is none. */
static zap_status_t check(const zap_comm_t *comm, const void *sendbuf, const void *recvbuf, size_t count,
                          zap_dtype_t dt, zap_op_t zop, int root)
{
    zap_status_t st = zap_reduce_check(comm->rank, "reduce", dt, zop, ZAP_MEM_HOST);
    if (st != ZAP_OK)
        return st;
    if (root < 0 || root >= comm->size) {
        zap_error("coll: rank %d: reduce: root %d is not in [0, %d)", comm->rank, root, comm->size);
        return ZAP_ERR_INVALID_PARAM;
    }
    if (sendbuf == ZAP_IN_PLACE && comm->rank != root) {
        zap_error("coll: rank %d: reduce: ZAP_IN_PLACE is for the root (%d) only", comm->rank, root);
        return ZAP_ERR_INVALID_PARAM;
    }
    if (count > 0 && (sendbuf == NULL || (comm->rank == root && recvbuf == NULL))) {
        zap_error("coll: rank %d: reduce: NULL buffer with count %zu", comm->rank, count);
        return ZAP_ERR_INVALID_PARAM;
    }
    if (count > SIZE_MAX / 4 / zap_dtype_size(dt)) {
        zap_error("coll: rank %d: reduce: count %zu too large", comm->rank, count);
        return ZAP_ERR_INVALID_PARAM;
    }
    return ZAP_OK;
}

/* Posts the call (req_p), or runs it to completion (blocking: req_p NULL,
 * the fast form where it applies, engine/fast.h). */
static zap_status_t post(zap_comm_t *comm, const void *sendbuf, void *recvbuf, size_t count, zap_dtype_t dt,
                         zap_op_t zop, int root, bool blocking, zap_request_t **req_p)
{
    if (comm == NULL || (req_p == NULL && !blocking))
        return ZAP_ERR_INVALID_PARAM;
    zap_status_t local = check(comm, sendbuf, recvbuf, count, dt, zop, root);
    bool is_root = comm->rank == root;
    zap_coll_args_t a = {.src = sendbuf == ZAP_IN_PLACE ? recvbuf : sendbuf, .dst = is_root ? recvbuf : NULL,
                         .count = count, .dt = dt, .op = zop, .root = root, .hdr_count = count, .mem = ZAP_MEM_HOST};
    if (local == ZAP_OK) {
        a.call_flags = zap_coll_call_flags(dt, zop);
        a.bytes = count * zap_dtype_size(dt);
        a.mem = zap_coll_mem_kind(comm, is_root ? recvbuf : sendbuf, a.bytes);
        if (a.mem == ZAP_MEM_DEVICE)
            local = zap_reduce_check(comm->rank, "reduce", dt, zop, a.mem);
    }
    a.empty = count == 0;
    if (blocking)
        return zap_coll_call(comm, &zap_reduce_desc, &a, local);
    return zap_coll_ipost(comm, &zap_reduce_desc, &a, local, req_p);
}

zap_status_t zap_ireduce(zap_comm_t *comm, const void *sendbuf, void *recvbuf, size_t count, zap_dtype_t dt,
                         zap_op_t zop, int root, zap_request_t **req_p)
{
    return post(comm, sendbuf, recvbuf, count, dt, zop, root, false, req_p);
}

zap_status_t zap_reduce(zap_comm_t *comm, const void *sendbuf, void *recvbuf, size_t count, zap_dtype_t dt,
                        zap_op_t zop, int root)
{
    return post(comm, sendbuf, recvbuf, count, dt, zop, root, true, NULL);
}
