/* Allreduce: argument checks, the algorithm table and the automatic choice.
 *
 * Algorithms (one file each):
 *   rd            recursive doubling, header carried in the data: log2(p)
 *                 rounds of the whole vector. Fewest rounds; small vectors.
 *   rabenseifner  recursive-halving reduce-scatter then recursive-doubling
 *                 allgather (non-powers of two fold first): 2 log2(p) rounds,
 *                 2 (p-1)/p n bytes moved. Medium and large vectors.
 *   ring          ring reduce-scatter then ring allgather: 2 (p-1) rounds,
 *                 2 (p-1)/p n bytes moved, one neighbour at a time, in pipeline
 *                 segments. Large vectors.
 *   direct        every rank sends its vector to every other in one round
 *                 and reduces all p in rank order: 1 round, (p-1) n bytes
 *                 moved. Small vectors on few ranks.
 *   shm           every rank writes its vector to a shared-memory slot and
 *                 reduces all p in rank order: no message at all. Vectors up
 *                 to ZAP_COLL_SHM_PAYLOAD bytes on communicators whose ranks
 *                 share one host (ZAP_COLL_SHM); up to the segment's large
 *                 area in chunks (allreduce_shm_large.c).
 *   cma           single copy: every rank reduces its block reading the
 *                 others' buffers directly (process_vm_readv), then reads
 *                 their finished blocks: n bytes read per rank, 2 waits.
 *                 Large host vectors, ranks on one host (ZAP_COLL_CMA).
 *
 * The automatic choice reads the selection rows below: the first row whose
 * rank range and byte range hold the call wins. The thresholds were measured
 * with zap-perf coll under mpirun on the development machine (see
 * docs/collectives.md, "Selection"); ZAP_ALLREDUCE_ALG overrides them. The
 * chosen algorithm is part of the argument header, so ranks that choose
 * differently (different counts, different environments) report
 * ZAP_ERR_MISMATCH instead of running different algorithms. The direct
 * algorithm rides a flat argument exchange: the exchange pattern follows the
 * rank count and the setting alone (allreduce_direct.c explains why). On a
 * communicator with a shared segment every allreduce under auto agrees in it
 * (allreduce_shm.c), whatever its size; the cma and shm rules come before
 * the rows. */
#include "coll/coll_impl.h"
#include "coll/reduce/reduce.h"
#include "coll/selection.h"
#include "coll/shm/shm.h"
#include "coll/gpu/gpu.h"
#include "base/config_table.h"
#include "base/log.h"
#include <stdint.h>
#include <string.h>

const zap_coll_alg_t zap_allreduce_algs[ZAP_AR_NALGS] = {
    [ZAP_AR_RD] = {"rd", "recursive doubling, whole vector each round", "small vectors"},
    [ZAP_AR_RABENSEIFNER] = {"rabenseifner", "recursive halving reduce-scatter + recursive doubling allgather",
                             "medium vectors"},
    [ZAP_AR_RING] = {"ring", "ring reduce-scatter + ring allgather, pipelined", "large vectors"},
    [ZAP_AR_DIRECT] = {"direct", "one round: every rank sends its vector to every other, reduced in rank order",
                       "small vectors, few ranks"},
    [ZAP_AR_SHM] = {"shm", "one shared-memory slot per rank, reduced in rank order; no messages",
                    "small vectors, ranks on one host"},
    [ZAP_AR_CMA] = {"cma", "single copy: each rank reduces its block reading the others' buffers, then reads theirs",
                    "large host vectors, ranks on one host"},
};

/* First matching row wins. Bytes are count * datatype size. */
const zap_coll_selection_row_t zap_allreduce_rows[] = {
    {"allreduce", "rd", 1, 1, 0, SIZE_MAX},
    {"allreduce", "rd", 2, 2, 0, 8192},
    {"allreduce", "rabenseifner", 2, 2, 8192, SIZE_MAX},
    /* No "direct" row: on the H200 host (8 ranks, 2026-11-30) its one round of
     * p-1 messages took 4.4-4.6 us at 8 B against 3.0-3.8 us for rd, and on
     * 4 oversubscribed dev ranks it lost too; ZAP_ALLREDUCE_ALG=direct keeps it. */
    {"allreduce", "rd", 3, INT32_MAX, 0, 8192},
    {"allreduce", "rabenseifner", 3, INT32_MAX, 8192, 524288},
    {"allreduce", "ring", 3, INT32_MAX, 524288, SIZE_MAX},
};
const size_t zap_allreduce_nrows = sizeof(zap_allreduce_rows) / sizeof(zap_allreduce_rows[0]);

/* Whether the single-copy allreduce is the automatic choice for bytes on a
 * communicator that can use it (ranks on one host, reads permitted). From
 * 256 KiB: on the H200 host, forced against the large shared-memory form,
 * it is as fast at 256 KiB and faster above on 2, 4 and 8 ranks (1 MiB:
 * 172-217 us against 287-292 on 2 ranks, 274-286 against 353-359 on 4;
 * 8 ranks: 434-515 us against the ring's 587-750), and below 128 KiB
 * slower. Oversubscribed (4 ranks on the 2-core dev machine) a rank pulling
 * from a peer that is not running waits for it: 256 KiB took 255 us against
 * 124, so there it takes only what the area cannot carry (16 MiB: 1.6x Open
 * MPI against the ring's 1.0). See docs/collectives.md, "Selection". */
static bool cma_auto(const zap_comm_t *comm, size_t bytes)
{
    if (!comm->shm->cma)
        return false;
    return comm->oversubscribed ? bytes > zap_comm_shared_memory_bytes(comm) : bytes >= ((size_t)256 << 10);
}

static int auto_alg(const zap_comm_t *comm, size_t bytes, bool shm, bool cma)
{
    int p = comm->size;
    if (shm && cma && cma_auto(comm, bytes))
        return ZAP_AR_CMA;
    if (shm && bytes <= zap_comm_shared_memory_bytes(comm))
        return ZAP_AR_SHM;
    const char *name = zap_coll_select_row(zap_allreduce_rows, zap_allreduce_nrows, bytes, p);
    for (int a = 0; a < ZAP_AR_NALGS; a++)
        if (name != NULL && strcmp(name, zap_allreduce_algs[a].name) == 0)
            return a;
    return ZAP_AR_RD;
}

/* Whether a call under setting idx (0: auto) agrees flat. Only what every
 * rank of comm decides alike may decide it (the rank count, the setting, the
 * oversubscription agreed at creation): ranks that disagree on anything else
 * must still exchange the same messages. Oversubscribed, auto keeps
 * recursive doubling: with more ranks than cores a rank waiting on all p - 1
 * peers at once waits for every one of them to be scheduled, and 4 ranks on
 * 2 cores measured slower flat (docs/collectives.md, "Selection"). */
static bool flat_exchange(const zap_comm_t *comm, int idx)
{
    int p = comm->size;
    if (p > ZAP_COLL_FLAT_MAX_RANKS)
        return false;
    if (idx == 0)
        return !comm->oversubscribed &&
               zap_coll_flat_ranks(zap_allreduce_rows, zap_allreduce_nrows, zap_allreduce_algs[ZAP_AR_DIRECT].name, p);
    return idx - 1 == ZAP_AR_DIRECT;
}

static zap_status_t post(zap_comm_t *comm, const void *sendbuf, void *recvbuf, size_t count, zap_dtype_t dt,
                         zap_op_t zop, int forced_alg, zap_request_t **req_p)
{
    if (comm == NULL || req_p == NULL)
        return ZAP_ERR_INVALID_PARAM;
    zap_status_t local = ZAP_OK;
    size_t esize = zap_dtype_size(dt);
    if (esize == 0 || (unsigned)zop >= ZAP_OP_COUNT) {
        zap_error("coll: rank %d: allreduce: invalid datatype %d or op %d", comm->rank, (int)dt, (int)zop);
        local = ZAP_ERR_INVALID_PARAM;
    } else if (!zap_reduce_supported(dt, zop)) {
        zap_error("coll: rank %d: allreduce: op %d is not defined on datatype %d (bitwise ops need integers)",
                  comm->rank, (int)zop, (int)dt);
        local = ZAP_ERR_UNSUPPORTED;
    } else if (count > 0 && (recvbuf == NULL || sendbuf == NULL)) {
        zap_error("coll: rank %d: allreduce: NULL buffer with count %zu", comm->rank, count);
        local = ZAP_ERR_INVALID_PARAM;
    } else if (count > SIZE_MAX / 4 / esize) {
        zap_error("coll: rank %d: allreduce: count %zu too large", comm->rank, count);
        local = ZAP_ERR_INVALID_PARAM;
    }
    int idx = forced_alg >= 0 ? forced_alg + 1 : zap_coll_pattern_setting(ZAP_CFG_ALLREDUCE_ALG, &local);
    /* Shared memory when the communicator has it, under auto or forced;
     * forced without it, recursive doubling. */
    bool shm = comm->shm != NULL && (idx == 0 || idx - 1 == ZAP_AR_SHM || idx - 1 == ZAP_AR_CMA);
    bool flat = !shm && flat_exchange(comm, idx);
    int alg = idx == 0 ? (local == ZAP_OK ? auto_alg(comm, count * esize, shm, true) : ZAP_AR_RD) : idx - 1;
    if (alg == ZAP_AR_DIRECT && !flat)
        alg = ZAP_AR_RD; /* oversubscribed auto, or forced beyond ZAP_COLL_FLAT_MAX_RANKS: recursive doubling */
    if (alg == ZAP_AR_CMA && !(shm && comm->shm->cma))
        alg = shm ? ZAP_AR_SHM : ZAP_AR_RD; /* forced where reads are not permitted */
    if (alg == ZAP_AR_SHM && (!shm || count * esize > zap_comm_shared_memory_bytes(comm)))
        alg = shm ? auto_alg(comm, count * esize, false, false) : ZAP_AR_RD;
    zap_coll_op_t *op = NULL;
    zap_status_t st = zap_coll_op_get(comm, ZAP_COLL_ALLREDUCE, local == ZAP_OK ? alg : 0xff, &op);
    if (st != ZAP_OK)
        return st;
    op->flat_agree = flat;
    op->shm_agree = shm;
    if (local != ZAP_OK) {
        /* Take part in the argument exchange with the header marked bad, so
         * the other ranks learn of it instead of waiting. */
        zap_coll_hdr_init(op, count, dt, zop, -1, 0, true);
        zap_coll_op_fail_local(op, local);
    } else {
        const void *src = sendbuf == ZAP_IN_PLACE ? recvbuf : sendbuf;
        op->mem = zap_coll_mem_kind(comm, recvbuf, count * esize);
        /* GPU-resident path (gpu/gpu.h); not under direct, whose
         * header rides its data like rd's. */
        /* The GPU path's vote also covers the large shared-memory form (GPU
         * data of 64 KiB and more moves GPU to GPU instead); it falls back to
         * rabenseifner or ring, on every rank together. */
        bool staged = alg != ZAP_AR_DIRECT && !(alg == ZAP_AR_SHM && count * esize <= ZAP_COLL_SHM_PAYLOAD) &&
                      zap_stage_wanted(op, count * esize);
        zap_coll_hdr_init(op, count, dt, zop, -1, 0, false);
        if (alg == ZAP_AR_CMA)
            zap_allreduce_cma_vote(op, op->mem == ZAP_MEM_HOST &&
                                           zap_coll_mem_kind(comm, src, count * esize) == ZAP_MEM_HOST);
        switch (staged ? -1 : alg) {
        case -1: st = zap_stage_allreduce_init(op, src, recvbuf, count, dt, zop, alg); break;
        case ZAP_AR_RABENSEIFNER: st = zap_allreduce_rabenseifner_init(op, src, recvbuf, count, dt, zop); break;
        case ZAP_AR_RING: st = zap_allreduce_ring_init(op, src, recvbuf, count, dt, zop); break;
        case ZAP_AR_DIRECT: st = zap_allreduce_direct_init(op, src, recvbuf, count, dt, zop); break;
        case ZAP_AR_SHM: st = zap_allreduce_shm_init(op, src, recvbuf, count, dt, zop); break;
        case ZAP_AR_CMA: st = zap_allreduce_cma_init(op, src, recvbuf, count, dt, zop); break;
        default: st = zap_allreduce_rd_init(op, src, recvbuf, count, dt, zop); break;
        }
    }
    if (st != ZAP_OK)
        zap_coll_op_fail_local(op, st);
    return zap_coll_op_start(op, req_p);
}

zap_status_t zap_allreduce_transport_run(zap_coll_op_t *op, const void *sendbuf, void *recvbuf, size_t count,
                                         zap_dtype_t dt, zap_op_t zop)
{
    zap_status_t st;
    switch (auto_alg(op->comm, count * zap_dtype_size(dt), false, false)) {
    case ZAP_AR_RABENSEIFNER: st = zap_allreduce_rabenseifner_init(op, sendbuf, recvbuf, count, dt, zop); break;
    case ZAP_AR_RING: st = zap_allreduce_ring_init(op, sendbuf, recvbuf, count, dt, zop); break;
    default:
        /* rd's exchange carries the vector (and the header again): it runs
         * as the agreement stage from the next progress call. */
        st = zap_allreduce_rd_init(op, sendbuf, recvbuf, count, dt, zop);
        return st == ZAP_OK ? ZAP_INPROGRESS : st;
    }
    if (st != ZAP_OK)
        return st;
    op->agreeing = false;
    return op->progress(op);
}

const char *zap_comm_allreduce_algorithm(const zap_comm_t *comm, size_t bytes)
{
    if (comm == NULL)
        return NULL;
    return zap_allreduce_algs[auto_alg(comm, bytes, comm->shm != NULL, true)].name;
}

zap_status_t zap_iallreduce(zap_comm_t *comm, const void *sendbuf, void *recvbuf, size_t count, zap_dtype_t dt,
                            zap_op_t zop, zap_request_t **req_p)
{
    return post(comm, sendbuf, recvbuf, count, dt, zop, -1, req_p);
}

zap_status_t zap_coll_allreduce_rd(zap_comm_t *comm, const void *sendbuf, void *recvbuf, size_t count,
                                   zap_dtype_t dt, zap_op_t zop)
{
    zap_request_t *req = NULL;
    zap_status_t st = post(comm, sendbuf, recvbuf, count, dt, zop, ZAP_AR_RD, &req);
    if (st != ZAP_OK)
        return st;
    return zap_coll_wait_free(req);
}

zap_status_t zap_allreduce(zap_comm_t *comm, const void *sendbuf, void *recvbuf, size_t count, zap_dtype_t dt,
                           zap_op_t zop)
{
    zap_request_t *req = NULL;
    zap_status_t st = zap_iallreduce(comm, sendbuf, recvbuf, count, dt, zop, &req);
    if (st != ZAP_OK)
        return st;
    return zap_coll_wait_free(req);
}
