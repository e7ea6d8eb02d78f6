/* Allreduce: argument checks, the algorithm table and the selection rows.
 *
 * Algorithms (one file each; docs/collectives.md has rounds, bytes and the
 * reduction order of each):
 *   rd            recursive doubling, header carried in the data. Small vectors.
 *   rabenseifner  recursive-halving reduce-scatter + recursive-doubling
 *                 allgather. Medium and large vectors.
 *   ring          ring reduce-scatter + ring allgather, pipelined. Large vectors
 *                 (commutative ops: it combines starting at each block's rank).
 *   direct        one round, every rank's vector to every other, reduced in
 *                 rank order (the flat agreement's payload). Only when forced.
 *   shm           one shared-memory slot per rank up to 4032 bytes, the
 *                 segment's large area beyond (round it, chunk by chunk,
 *                 for vectors larger than it). Ranks on one host.
 *   cma           single copy: each rank reduces its block reading the
 *                 others' buffers directly. Large host vectors, one host.
 *   hier          through the hosts' hierarchy: small vectors in the
 *                 hierarchical agreement, larger ones node allreduce,
 *                 leaders' allreduce of slices, node allgather, pipelined.
 *                 Ranks on several hosts.
 *   gpu           the GPU-resident path (coll/gpu): kernels that read and
 *                 write the peers' GPU memory. Managed or device buffers, one
 *                 host, every size.
 *
 * The rows below are the automatic choice (docs/collectives.md,
 * "Selection", says why each bound is where it is); ZAP_ALLREDUCE_ALG or
 * params.allreduce_alg force an algorithm. On a communicator with a shared
 * segment every allreduce agrees in it under the automatic choice (and when
 * shm or cma is forced), whatever its size; a forced direct agrees flat; the
 * rest by recursive doubling (allreduce_form). */
#include "coll/allreduce/allreduce.h"
#include "coll/comm_impl.h"
#include "coll/engine/mem.h"
#include "coll/engine/select.h"
#include "coll/gpu/gpu.h"
#include "coll/reduce/reduce.h"
#include "coll/engine/fast.h"
#include "coll/shm/shm.h"
#include "base/log.h"
#include <stdint.h>

#define ANY_RANKS 1, INT32_MAX
#define ALL_BYTES 0, SIZE_MAX
#define SHM_RANKS 2, ZAP_COLL_SHM_MAX_RANKS
#define KiB(n) ((size_t)(n) << 10)

static const zap_coll_alg_t algs[ZAP_AR_NALGS] = {
    [ZAP_AR_RD] = {.name = "rd", .description = "recursive doubling, whole vector each round",
                   .init = zap_allreduce_rd_init, .agrees_in_data = SIZE_MAX, .by_name = true},
    [ZAP_AR_RABENSEIFNER] = {.name = "rabenseifner",
                             .description = "recursive halving reduce-scatter + recursive doubling allgather",
                             .init = zap_allreduce_rabenseifner_init, .by_name = true},
    [ZAP_AR_RING] = {.name = "ring", .description = "ring reduce-scatter + ring allgather, pipelined",
                     .init = zap_allreduce_ring_init, .require = ZAP_COLL_PRED_COMMUTATIVE, .by_name = true},
    [ZAP_AR_DIRECT] = {.name = "direct",
                       .description = "one round: every rank sends its vector to every other, reduced in rank order",
                       .init = zap_allreduce_direct_init, .require = ZAP_COLL_PRED_FLAT,
                       .agrees_in_data = SIZE_MAX, .by_name = true},
    [ZAP_AR_SHM] = {.name = "shm",
                    .description = "shared-memory slots, then the segment's large area; reduced in rank order",
                    .init = zap_allreduce_shm_init, .require = ZAP_COLL_PRED_SAME_HOST,
                    .agrees_in_data = ZAP_COLL_SHM_MAX_BYTES, .by_name = true},
    [ZAP_AR_CMA] = {.name = "cma",
                    .description = "single copy: each rank reduces its block reading the others' buffers",
                    .init = zap_allreduce_cma_init,
                    .require = ZAP_COLL_PRED_SAME_HOST | ZAP_COLL_PRED_SINGLE_COPY | ZAP_COLL_PRED_HOST_MEMORY,
                    .vote_lane = ZAP_COLL_LANE_VOTE_HOST, .vote = zap_allreduce_cma_vote, .by_name = true},
    [ZAP_AR_HIER] = {.name = "hier",
                     .description = "through the hosts' hierarchy: up to each host's leader, across the hosts, down",
                     .init = zap_allreduce_hier_init, .require = ZAP_COLL_PRED_HOSTS | ZAP_COLL_PRED_COMMUTATIVE,
                     .agrees_in_data = ZAP_AR_HIER_SMALL_BYTES, .by_name = true},
    [ZAP_AR_GPU] = {.name = "gpu",
                    .description = "kernels reading and writing the peers' GPU memory (one-shot; reduce-scatter + "
                                   "allgather from 1 MiB)",
                    .init = zap_gpu_allreduce_init, .require = ZAP_COLL_PRED_GPU_PATH | ZAP_COLL_PRED_GPU_MEMORY,
                    .vote_lane = ZAP_COLL_LANE_VOTE_GPU, .vote = zap_gpu_vote, .local = true, .gpu_buffers = true},
};

/* Every row that holds is a candidate, in this order. */
static const zap_coll_row_t rows[] = {
    {ZAP_AR_HIER, 3, INT32_MAX, ALL_BYTES, 0, 0,
     "ranks on several hosts: each host's ranks meet in shared memory, one stream per slice crosses the network"},
    {ZAP_AR_GPU, 2, 8, ALL_BYTES, 0, ZAP_COLL_PRED_HOSTS,
     "GPU-resident buffers on one host: GPU to GPU over peer mappings, every size"},
    {ZAP_AR_CMA, SHM_RANKS, KiB(256), SIZE_MAX, 0, ZAP_COLL_PRED_OVERSUBSCRIBED | ZAP_COLL_PRED_SLOW_READS,
     "large host vectors on one host: one copy per byte, no staging area"},
    {ZAP_AR_SHM, SHM_RANKS, ALL_BYTES, ZAP_COLL_PRED_OVERSUBSCRIBED, 0,
     "oversubscribed: the area at every size, round it beyond its size (a reader would wait for descheduled peers)"},
    {ZAP_AR_SHM, SHM_RANKS, ALL_BYTES, ZAP_COLL_PRED_SLOW_READS, 0,
     "single-copy reads dear on this host: the area at every size, round it beyond its size"},
    {ZAP_AR_SHM, SHM_RANKS, ALL_BYTES, ZAP_COLL_PRED_FITS_SHM, 0, "one host: no messages at all up to the area's size"},
    {ZAP_AR_RD, 1, 1, ALL_BYTES, 0, 0, "one rank: a copy"},
    {ZAP_AR_RD, 2, 2, 0, KiB(8), 0, 0, "fewest rounds; the header rides the data"},
    {ZAP_AR_RABENSEIFNER, 2, 2, KiB(8), SIZE_MAX, 0, 0, "one halving and one doubling step"},
    {ZAP_AR_RD, 3, INT32_MAX, 0, KiB(8), 0, 0, "fewest rounds; past 8 KiB the message leaves UCX's eager path"},
    {ZAP_AR_RABENSEIFNER, 3, INT32_MAX, KiB(8), KiB(512), 0, 0, "2 log2(p) rounds, 2 (p-1)/p n bytes"},
    {ZAP_AR_RING, 3, INT32_MAX, KiB(512), SIZE_MAX, 0, 0, "bandwidth-optimal, pipelined in segments"},
    {ZAP_AR_RABENSEIFNER, 3, INT32_MAX, KiB(512), SIZE_MAX, 0, 0,
     "a non-commutative op: the ring combines out of rank order, Rabenseifner in it"},
};

/* In the shared segment under the automatic choice and when shm or cma is
 * forced; flat when direct is forced on a rank count it can serve. Only what
 * every rank of comm decides alike may decide it: ranks that disagree on
 * anything else must still exchange the same messages. */
static zap_coll_form_t allreduce_form(const zap_comm_t *comm)
{
    int f = comm->set.alg[ZAP_COLL_ALLREDUCE];
    if (comm->shm != NULL && (f < 0 || f == ZAP_AR_SHM || f == ZAP_AR_CMA))
        return ZAP_COLL_FORM_SHM;
    if (f == ZAP_AR_DIRECT && comm->size <= ZAP_COLL_FLAT_MAX_RANKS)
        return ZAP_COLL_FORM_FLAT;
    return ZAP_COLL_FORM_RD;
}

const zap_coll_desc_t zap_allreduce_desc = {
    .name = "allreduce",
    .kind = ZAP_COLL_ALLREDUCE,
    .algs = algs,
    .nalgs = ZAP_AR_NALGS,
    .rows = rows,
    .nrows = (int)(sizeof(rows) / sizeof(rows[0])),
    .form = allreduce_form,
    .needs_setup = true,
    .setting = ZAP_CFG_ALLREDUCE_ALG,
    .fast_alg = ZAP_AR_SHM,
    .fast_setup = zap_allreduce_direct_fast_setup,
    .fast_finish = zap_allreduce_direct_fast_finish,
};

/* This rank's own argument error, logged; ZAP_OK when there is none. */
static zap_status_t check(const zap_comm_t *comm, const void *sendbuf, const void *recvbuf, size_t count,
                          zap_dtype_t dt, zap_op_t zop)
{
    size_t esize = zap_dtype_size(dt);
    zap_status_t st = zap_reduce_check(comm->rank, "allreduce", dt, zop, ZAP_MEM_HOST);
    if (st != ZAP_OK)
        return st;
    if (count > 0 && (recvbuf == NULL || sendbuf == NULL)) {
        zap_error("coll: rank %d: allreduce: NULL buffer with count %zu", comm->rank, count);
        return ZAP_ERR_INVALID_PARAM;
    }
    if (count > SIZE_MAX / 4 / esize) {
        zap_error("coll: rank %d: allreduce: count %zu too large", comm->rank, count);
        return ZAP_ERR_INVALID_PARAM;
    }
    return ZAP_OK;
}

/* The call's arguments, and this rank's own error in them (logged). */
static zap_status_t args_of(zap_comm_t *comm, const void *sendbuf, void *recvbuf, size_t count, zap_dtype_t dt,
                            zap_op_t zop, zap_coll_args_t *ap)
{
    zap_status_t local = check(comm, sendbuf, recvbuf, count, dt, zop);
    zap_coll_args_t a = {.src = sendbuf == ZAP_IN_PLACE ? recvbuf : sendbuf, .dst = recvbuf, .count = count,
                         .dt = dt, .op = zop, .root = -1, .hdr_count = count, .mem = ZAP_MEM_HOST};
    if (local == ZAP_OK) {
        a.call_flags = zap_coll_call_flags(dt, zop);
        a.bytes = count * zap_dtype_size(dt);
        a.dst_mem = zap_coll_mem_kind(comm, recvbuf, a.bytes);
        a.src_mem = a.src == recvbuf ? a.dst_mem : zap_coll_mem_kind(comm, a.src, a.bytes);
        a.mem = zap_coll_mem_kind_of(a.src_mem, a.dst_mem);
        if (a.mem == ZAP_MEM_DEVICE) /* an op without a GPU kernel cannot run there */
            local = zap_reduce_check(comm->rank, "allreduce", dt, zop, a.mem);
    }
    a.empty = count == 0;
    *ap = a;
    return local;
}

zap_status_t zap_iallreduce(zap_comm_t *comm, const void *sendbuf, void *recvbuf, size_t count, zap_dtype_t dt,
                            zap_op_t zop, zap_request_t **req_p)
{
    if (comm == NULL || req_p == NULL)
        return ZAP_ERR_INVALID_PARAM;
    zap_coll_args_t a;
    zap_status_t local = args_of(comm, sendbuf, recvbuf, count, dt, zop, &a);
    return zap_coll_ipost(comm, &zap_allreduce_desc, &a, local, req_p);
}

zap_status_t zap_allreduce(zap_comm_t *comm, const void *sendbuf, void *recvbuf, size_t count, zap_dtype_t dt,
                           zap_op_t zop)
{
    if (comm == NULL)
        return ZAP_ERR_INVALID_PARAM;
    zap_coll_args_t a;
    zap_status_t local = args_of(comm, sendbuf, recvbuf, count, dt, zop, &a);
    return zap_coll_call(comm, &zap_allreduce_desc, &a, local);
}
