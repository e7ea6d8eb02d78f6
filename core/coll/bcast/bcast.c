/* Broadcast: argument checks, the algorithm table and the selection rows.
 *
 * Algorithms (one file each), all over virtual ranks relative to the root:
 *   binomial           the root's buffer travels down a binomial tree whole:
 *                      ceil(log2 p) rounds of n bytes. Small messages.
 *   scatter_allgather  binomial scatter of p blocks, then a ring allgather
 *                      (van de Geijn): about 2 n bytes per rank, log2(p) + p - 1
 *                      rounds. Medium and large messages.
 *   chain              a pipeline 0 -> 1 -> ... -> p-1 in segments:
 *                      (p - 2 + k) segment rounds, n bytes per link. Very
 *                      large messages.
 *   rd                 the agreement's recursive doubling carrying the data:
 *                      log2(p) rounds in all. Small messages.
 *   shm                through the communicator's shared segment (ranks on
 *                      one host): the root's slot up to 4032 bytes, the large
 *                      area beyond (bcast_shm.c).
 *   hier               through the hosts' hierarchy (ranks on several
 *                      hosts): small messages in the hierarchical agreement,
 *                      larger ones across the hosts once and then inside
 *                      each host, pipelined in chunks (bcast_hier.c).
 *   gpu                the GPU-resident path (coll/gpu).
 * The rows below are the automatic choice (docs/collectives.md,
 * "Selection"); ZAP_BCAST_ALG or params.bcast_alg force an algorithm. A
 * broadcast moves bytes, so every algorithm gives identical bytes trivially. */
#include "coll/bcast/bcast.h"
#include "coll/comm_impl.h"
#include "coll/engine/mem.h"
#include "coll/engine/fast.h"
#include "coll/engine/select.h"
#include "coll/gpu/gpu.h"
#include "coll/shm/shm.h"
#include "base/log.h"
#include <stdint.h>

#define ALL_BYTES 0, SIZE_MAX

static const zap_coll_alg_t algs[ZAP_BC_NALGS] = {
    [ZAP_BC_BINOMIAL] = {.name = "binomial", .description = "binomial tree, whole message per edge",
                         .init = zap_bcast_binomial_init, .by_name = true},
    [ZAP_BC_SCATTER_ALLGATHER] = {.name = "scatter_allgather", .description = "binomial scatter + ring allgather",
                                  .init = zap_bcast_scatter_allgather_init, .by_name = true},
    [ZAP_BC_CHAIN] = {.name = "chain", .description = "pipelined chain in segments",
                      .init = zap_bcast_chain_init, .by_name = true},
    [ZAP_BC_RD] = {.name = "rd", .description = "recursive doubling carrying the data in the argument exchange",
                   .init = zap_bcast_rd_init, .agrees_in_data = SIZE_MAX, .by_name = true},
    [ZAP_BC_SHM] = {.name = "shm",
                    .description = "the root's data through the shared-memory segment, one copy in and one out",
                    .init = zap_bcast_shm_init, .require = ZAP_COLL_PRED_SAME_HOST,
                    .agrees_in_data = ZAP_COLL_SHM_MAX_BYTES, .by_name = true},
    [ZAP_BC_HIER] = {.name = "hier",
                     .description = "through the hosts' hierarchy: across the hosts once, then inside each host",
                     .init = zap_bcast_hier_init, .require = ZAP_COLL_PRED_HOSTS,
                     .agrees_in_data = ZAP_BC_HIER_SMALL_BYTES, .by_name = true},
    [ZAP_BC_GPU] = {.name = "gpu",
                    .description = "kernels reading the root's GPU memory (through its bank up to 1 MiB)",
                    .init = zap_gpu_bcast_init, .require = ZAP_COLL_PRED_GPU_PATH | ZAP_COLL_PRED_GPU_MEMORY,
                    .vote_lane = ZAP_COLL_LANE_VOTE_GPU, .vote = zap_gpu_vote, .local = true, .gpu_buffers = true},
};

static const zap_coll_row_t rows[] = {
    {ZAP_BC_HIER, 3, INT32_MAX, ALL_BYTES, 0, 0,
     "ranks on several hosts: every host receives the data once, its ranks from it in shared memory"},
    {ZAP_BC_GPU, 2, 8, ALL_BYTES, 0, ZAP_COLL_PRED_HOSTS,
     "GPU-resident buffers on one host: GPU to GPU over peer mappings, every size"},
    {ZAP_BC_SHM, 2, ZAP_COLL_SHM_MAX_RANKS, ALL_BYTES, 0, 0, "one host: one copy in, one out, no messages"},
    {ZAP_BC_RD, 1, INT32_MAX, 0, (size_t)8 << 10, 0, 0, "the agreement's rounds carry the data"},
    {ZAP_BC_BINOMIAL, 1, 2, ALL_BYTES, 0, 0, "two ranks: one message"},
    {ZAP_BC_BINOMIAL, 3, INT32_MAX, 0, (size_t)1 << 20, 0, 0, "ceil(log2 p) whole-message hops"},
    {ZAP_BC_CHAIN, 3, INT32_MAX, (size_t)1 << 20, SIZE_MAX, 0, 0, "n bytes per link, pipelined"},
};

/* In the shared segment under the automatic choice and when shm is forced. */
static zap_coll_form_t bcast_form(const zap_comm_t *comm)
{
    int f = comm->set.alg[ZAP_COLL_BCAST];
    return comm->shm != NULL && (f < 0 || f == ZAP_BC_SHM) ? ZAP_COLL_FORM_SHM : ZAP_COLL_FORM_RD;
}

const zap_coll_desc_t zap_bcast_desc = {
    .name = "bcast",
    .kind = ZAP_COLL_BCAST,
    .algs = algs,
    .nalgs = ZAP_BC_NALGS,
    .rows = rows,
    .nrows = (int)(sizeof(rows) / sizeof(rows[0])),
    .form = bcast_form,
    .needs_setup = true,
    .tree_in_hier = true,
    .setting = ZAP_CFG_BCAST_ALG,
    .fast_alg = ZAP_BC_SHM,
    .fast_setup = zap_bcast_rd_fast_setup,
    .fast_finish = zap_bcast_rd_fast_finish,
};

/* The call's arguments, and this rank's own error in them (logged; ZAP_OK
 * when there is none). */
static zap_status_t args_of(zap_comm_t *comm, void *buf, size_t count, zap_dtype_t dt, int root, zap_coll_args_t *ap)
{
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
    zap_coll_args_t a = {.dst = buf, .count = count, .dt = dt, .op = ZAP_OP_SUM, .root = root, .hdr_count = count,
                         .mem = ZAP_MEM_HOST};
    if (local == ZAP_OK) {
        a.bytes = count * esize;
        a.mem = a.src_mem = a.dst_mem = zap_coll_mem_kind(comm, buf, a.bytes);
    }
    a.empty = count == 0;
    *ap = a;
    return local;
}

zap_status_t zap_ibcast(zap_comm_t *comm, void *buf, size_t count, zap_dtype_t dt, int root, zap_request_t **req_p)
{
    if (comm == NULL || req_p == NULL)
        return ZAP_ERR_INVALID_PARAM;
    zap_coll_args_t a;
    zap_status_t local = args_of(comm, buf, count, dt, root, &a);
    return zap_coll_ipost(comm, &zap_bcast_desc, &a, local, req_p);
}

zap_status_t zap_bcast(zap_comm_t *comm, void *buf, size_t count, zap_dtype_t dt, int root)
{
    if (comm == NULL)
        return ZAP_ERR_INVALID_PARAM;
    zap_coll_args_t a;
    zap_status_t local = args_of(comm, buf, count, dt, root, &a);
    return zap_coll_call(comm, &zap_bcast_desc, &a, local);
}
