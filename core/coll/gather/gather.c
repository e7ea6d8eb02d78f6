/* Gather and gatherv: argument checks, the algorithm table and the
 * selection rows (one table for both forms).
 *
 * Algorithms (one file each; docs/collectives.md):
 *   linear    every rank sends to the root, which posts every receive at
 *             once: one round, (p-1)/p of the result through the root's
 *             link. Both forms.
 *   binomial  a binomial tree of growing runs of blocks: ceil(log2 p)
 *             rounds. gather, small blocks.
 *   shm       the blocks ride the agreement's shared-memory slots (one
 *             host, gather, up to 4032 bytes a block).
 *   hier      through the hosts' hierarchy: each host's blocks gathered to
 *             its leader and sent to the root in one message (ranks on
 *             several hosts). Both forms.
 * gather's count is in the header, so it is agreed before anything moves;
 * gatherv's counts are the root's alone and are checked as the data arrives
 * (gather_linear.c). */
#include "coll/gather/gather.h"
#include "coll/comm_impl.h"
#include "coll/engine/mem.h"
#include "coll/engine/fast.h"
#include "coll/engine/select.h"
#include "coll/shm/shm.h"
#include "base/log.h"
#include <stdint.h>

#define KiB(n) ((size_t)(n) << 10)

static const zap_coll_alg_t algs[ZAP_GA_NALGS] = {
    [ZAP_GA_LINEAR] = {.name = "linear", .description = "every rank sends to the root, all receives posted at once",
                       .init = zap_gather_linear_init, .by_name = true},
    [ZAP_GA_BINOMIAL] = {.name = "binomial", .description = "binomial tree of growing runs of blocks (gather)",
                         .init = zap_gather_binomial_init, .by_name = true, .declines = true},
    [ZAP_GA_SHM] = {.name = "shm", .description = "blocks in the shared segment's slots, the root copies them out",
                    .init = zap_gather_shm_init, .require = ZAP_COLL_PRED_SAME_HOST | ZAP_COLL_PRED_FITS_SHM,
                    .agrees_in_data = ZAP_COLL_SHM_MAX_BYTES, .by_name = true},
    [ZAP_GA_HIER] = {.name = "hier",
                     .description = "each host's blocks to its leader, one message per host to the root",
                     .init = zap_gather_hier_init, .require = ZAP_COLL_PRED_HOSTS, .by_name = true},
};

static const zap_coll_row_t rows[] = {
    {ZAP_GA_HIER, 3, INT32_MAX, 0, SIZE_MAX, 0, 0,
     "ranks on several hosts: each host's blocks cross once, in one message"},
    {ZAP_GA_SHM, 2, ZAP_COLL_SHM_MAX_RANKS, 0, ZAP_COLL_SHM_MAX_BYTES + 1, 0, 0,
     "one host, blocks up to a slot: the agreement carries them"},
    {ZAP_GA_SHM, 2, ZAP_COLL_SHM_MAX_RANKS, ZAP_COLL_SHM_MAX_BYTES + 1, SIZE_MAX, ZAP_COLL_PRED_SLOW_READS, 0,
     "one host where single-copy reads are dear, blocks above a slot: through the large area when they fit it"},
    {ZAP_GA_BINOMIAL, 8, INT32_MAX, 0, KiB(2), 0, 0, "small blocks, many ranks: log2(p) rounds beat p-1 receives"},
    {ZAP_GA_LINEAR, 1, INT32_MAX, 0, SIZE_MAX, 0, 0, "one round; the root's link carries the result once"},
};

static zap_coll_form_t gather_form(const zap_comm_t *comm)
{
    int f = comm->set.alg[ZAP_COLL_GATHER];
    return comm->shm != NULL && (f < 0 || f == ZAP_GA_SHM) ? ZAP_COLL_FORM_SHM : ZAP_COLL_FORM_RD;
}

const zap_coll_desc_t zap_gather_desc = {
    .name = "gather",
    .kind = ZAP_COLL_GATHER,
    .algs = algs,
    .nalgs = ZAP_GA_NALGS,
    .rows = rows,
    .nrows = (int)(sizeof(rows) / sizeof(rows[0])),
    .form = gather_form,
    .needs_setup = true,
    .setting = ZAP_CFG_GATHER_ALG,
    .fast_alg = ZAP_GA_SHM,
    .fast_setup = zap_gather_shm_fast_setup,
    .fast_finish = zap_gather_shm_fast_finish,
};

/* This rank's own argument error, logged; ZAP_OK when there is none. */
static zap_status_t check(const zap_comm_t *comm, bool is_v, const void *sendbuf, size_t count, const void *recvbuf,
                          const size_t *counts, const ptrdiff_t *displs, zap_dtype_t dt, int root)
{
    const char *name = is_v ? "gatherv" : "gather";
    int p = comm->size;
    if (zap_dtype_size(dt) == 0) {
        zap_error("coll: rank %d: %s: invalid datatype %d", comm->rank, name, (int)dt);
        return ZAP_ERR_INVALID_PARAM;
    }
    if (root < 0 || root >= p) {
        zap_error("coll: rank %d: %s: root %d is not in [0, %d)", comm->rank, name, root, p);
        return ZAP_ERR_INVALID_PARAM;
    }
    bool is_root = comm->rank == root;
    if (sendbuf == ZAP_IN_PLACE && !is_root) {
        zap_error("coll: rank %d: %s: ZAP_IN_PLACE is for the root (%d) only", comm->rank, name, root);
        return ZAP_ERR_INVALID_PARAM;
    }
    if (count > SIZE_MAX / 4 / zap_dtype_size(dt)) {
        zap_error("coll: rank %d: %s: count %zu too large", comm->rank, name, count);
        return ZAP_ERR_INVALID_PARAM;
    }
    if (count > 0 && sendbuf == NULL) {
        zap_error("coll: rank %d: %s: NULL sendbuf with count %zu", comm->rank, name, count);
        return ZAP_ERR_INVALID_PARAM;
    }
    if (!is_root)
        return ZAP_OK;
    if (is_v && (counts == NULL || displs == NULL)) {
        zap_error("coll: rank %d: gatherv: the root needs counts and displs", comm->rank);
        return ZAP_ERR_INVALID_PARAM;
    }
    size_t total = 0;
    for (int r = 0; r < p; r++)
        total += is_v ? counts[r] : count;
    if (total > 0 && recvbuf == NULL) {
        zap_error("coll: rank %d: %s: the root's recvbuf is NULL", comm->rank, name);
        return ZAP_ERR_INVALID_PARAM;
    }
    if (is_v && sendbuf != ZAP_IN_PLACE && counts[root] != count) {
        zap_error("coll: rank %d: gatherv: the root's sendcount %zu differs from counts[%d] %zu", comm->rank, count,
                  root, counts[root]);
        return ZAP_ERR_INVALID_PARAM;
    }
    return ZAP_OK;
}

static zap_status_t post(zap_comm_t *comm, bool is_v, const void *sendbuf, size_t count, void *recvbuf,
                         const size_t *counts, const ptrdiff_t *displs, zap_dtype_t dt, int root, bool blocking,
                         zap_request_t **req_p)
{
    if (comm == NULL || (req_p == NULL && !blocking))
        return ZAP_ERR_INVALID_PARAM;
    zap_status_t local = check(comm, is_v, sendbuf, count, recvbuf, counts, displs, dt, root);
    bool is_root = comm->rank == root;
    zap_coll_args_t a = {.src = sendbuf == ZAP_IN_PLACE ? NULL : sendbuf, .dst = is_root ? recvbuf : NULL,
                         .count = count, .fixed = is_v ? 0 : count, .counts = is_v && is_root ? counts : NULL,
                         .displs = is_v && is_root ? displs : NULL, .dt = dt, .op = ZAP_OP_SUM, .root = root,
                         .hdr_count = is_v ? 0 : count, .hdr_extra = is_v ? 1 : 0, .mem = ZAP_MEM_HOST};
    if (local == ZAP_OK) {
        a.bytes = count * zap_dtype_size(dt);
        a.mem = zap_coll_mem_kind(comm, is_root ? recvbuf : sendbuf, a.bytes);
    }
    a.empty = !is_v && count == 0; /* a v-form's counts are the root's alone: not known everywhere */
    if (blocking) /* the fast form where it applies (engine/fast.h) */
        return zap_coll_call(comm, &zap_gather_desc, &a, local);
    return zap_coll_ipost(comm, &zap_gather_desc, &a, local, req_p);
}

zap_status_t zap_igather(zap_comm_t *comm, const void *sendbuf, size_t count, void *recvbuf, zap_dtype_t dt, int root,
                         zap_request_t **req_p)
{
    return post(comm, false, sendbuf, count, recvbuf, NULL, NULL, dt, root, false, req_p);
}

zap_status_t zap_igatherv(zap_comm_t *comm, const void *sendbuf, size_t sendcount, void *recvbuf,
                          const size_t *counts, const ptrdiff_t *displs, zap_dtype_t dt, int root,
                          zap_request_t **req_p)
{
    return post(comm, true, sendbuf, sendcount, recvbuf, counts, displs, dt, root, false, req_p);
}

zap_status_t zap_gather(zap_comm_t *comm, const void *sendbuf, size_t count, void *recvbuf, zap_dtype_t dt, int root)
{
    return post(comm, false, sendbuf, count, recvbuf, NULL, NULL, dt, root, true, NULL);
}

zap_status_t zap_gatherv(zap_comm_t *comm, const void *sendbuf, size_t sendcount, void *recvbuf,
                         const size_t *counts, const ptrdiff_t *displs, zap_dtype_t dt, int root)
{
    return post(comm, true, sendbuf, sendcount, recvbuf, counts, displs, dt, root, true, NULL);
}
