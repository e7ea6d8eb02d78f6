/* Alltoall and alltoallv: argument checks, what the algorithms share, the
 * algorithm table and the selection rows (one table for both forms).
 *
 * Algorithms (one file each; docs/collectives.md):
 *   pairwise  p - 1 rounds, in round s a block to r + s and one from r - s:
 *             one pair of messages in flight per rank. Large blocks.
 *   bruck     ceil(log2 p) rounds of about half the blocks each (alltoall):
 *             small blocks, many ranks.
 *   linear    every send and receive posted at once (in batches of 32
 *             peers): one round. Small and medium blocks.
 *   shm       through the shared segment: the slots up to 4032 bytes a rank,
 *             the large area beyond (alltoall; one host).
 *   cma       single copy: every rank reads its block of each other rank's
 *             send buffer (alltoall; one host, host memory, not in place).
 * alltoall's count is in the header; alltoallv's counts are checked as the
 * data arrives, then agreed (zap_a2a_status). */
#include "coll/alltoall/alltoall.h"
#include "coll/comm_impl.h"
#include "coll/engine/mem.h"
#include "coll/engine/fast.h"
#include "coll/engine/select.h"
#include "coll/shm/shm.h"
#include "base/log.h"
#include <stdint.h>
#include <string.h>

#define KiB(n) ((size_t)(n) << 10)
#define SHM_RANKS 2, ZAP_COLL_SHM_MAX_RANKS
#define PHASE_STATUS 3

static const zap_coll_alg_t algs[ZAP_A2A_NALGS] = {
    [ZAP_A2A_PAIRWISE] = {.name = "pairwise", .description = "p-1 rounds: a block to r+s, one from r-s",
                          .init = zap_alltoall_pairwise_init, .by_name = true},
    [ZAP_A2A_BRUCK] = {.name = "bruck", .description = "log2(p) rounds of half the blocks (alltoall)",
                       .init = zap_alltoall_bruck_init, .by_name = true, .declines = true},
    [ZAP_A2A_LINEAR] = {.name = "linear", .description = "every send and receive posted at once",
                        .init = zap_alltoall_linear_init, .by_name = true},
    [ZAP_A2A_SHM] = {.name = "shm", .description = "the shared segment: slots, then the large area (alltoall)",
                     .init = zap_alltoall_shm_init, .require = ZAP_COLL_PRED_SAME_HOST | ZAP_COLL_PRED_FITS_SHM,
                     .by_name = true},
    [ZAP_A2A_CMA] = {.name = "cma", .description = "single copy: each rank reads its blocks from the others",
                     .init = zap_alltoall_cma_init,
                     .require = ZAP_COLL_PRED_SAME_HOST | ZAP_COLL_PRED_SINGLE_COPY | ZAP_COLL_PRED_HOST_MEMORY,
                     .vote_lane = ZAP_COLL_LANE_VOTE_HOST, .vote = zap_alltoall_cma_vote, .by_name = true},
};

/* Bytes here are one block's (alltoall; 0 for alltoallv, whose counts differ
 * across ranks and must not steer the choice). */
static const zap_coll_row_t rows[] = {
    {ZAP_A2A_CMA, SHM_RANKS, KiB(16), SIZE_MAX, 0, 0,
     "large blocks on one host: each byte copied once, no staging (oversubscribed too: the area's two copies "
     "cost more than a descheduled peer's turn)"},
    {ZAP_A2A_SHM, SHM_RANKS, 0, SIZE_MAX, 0, 0, "one host: a copy in and a copy out, no messages"},
    {ZAP_A2A_BRUCK, 8, INT32_MAX, 0, 257, 0, 0, "tiny blocks, many ranks: log2(p) rounds"},
    {ZAP_A2A_LINEAR, 1, INT32_MAX, 0, KiB(64), 0, 0, "one round of p-1 messages each way"},
    {ZAP_A2A_PAIRWISE, 1, INT32_MAX, KiB(64), SIZE_MAX, 0, 0, "large blocks: one exchange at a time"},
};

static zap_coll_form_t a2a_form(const zap_comm_t *comm)
{
    int f = comm->set.alg[ZAP_COLL_ALLTOALL];
    return comm->shm != NULL && (f < 0 || f == ZAP_A2A_SHM || f == ZAP_A2A_CMA) ? ZAP_COLL_FORM_SHM
                                                                                : ZAP_COLL_FORM_RD;
}

const zap_coll_desc_t zap_alltoall_desc = {
    .name = "alltoall",
    .kind = ZAP_COLL_ALLTOALL,
    .algs = algs,
    .nalgs = ZAP_A2A_NALGS,
    .rows = rows,
    .nrows = (int)(sizeof(rows) / sizeof(rows[0])),
    .form = a2a_form,
    .needs_setup = true,
    .setting = ZAP_CFG_ALLTOALL_ALG,
    .fast_alg = ZAP_A2A_SHM,
    .fast_setup = zap_alltoall_shm_fast_setup,
    .fast_finish = zap_alltoall_shm_fast_finish,
};

/* --- shared by the algorithms ----------------------------------------------- */

zap_status_t zap_a2a_image(zap_coll_op_t *op, zap_buf_t *buf, zap_a2a_send_t *snd)
{
    const zap_coll_args_t *a = &op->args;
    if (!zap_a2a_in_place(a)) {
        snd->base = a->src;
        snd->displ = NULL;
        return ZAP_OK;
    }
    int p = op->comm->size;
    size_t es = zap_dtype_size(a->dt), total = 0, table = ((size_t)p * sizeof(ptrdiff_t) + 63) & ~(size_t)63;
    for (int j = 0; j < p; j++)
        total += zap_a2a_rcount(a, j);
    zap_status_t st = zap_coll_scratch(op, buf, table + total * es);
    if (st != ZAP_OK)
        return st;
    ptrdiff_t *displ = buf->ptr;
    char *image = (char *)buf->ptr + table;
    size_t at = 0;
    for (int j = 0; j < p; j++) {
        displ[j] = (ptrdiff_t)at;
        zap_coll_copy(op, image + at * es, (const char *)a->dst + zap_a2a_rdispl(a, j) * (ptrdiff_t)es,
                      zap_a2a_rcount(a, j) * es);
        at += zap_a2a_rcount(a, j);
    }
    snd->base = image;
    snd->displ = displ;
    return ZAP_OK;
}

zap_status_t zap_a2a_check_recv(const zap_coll_op_t *op, int j, zap_status_t st, size_t len, bool *bad)
{
    const zap_coll_args_t *a = &op->args;
    if (st != ZAP_OK && st != ZAP_ERR_TRUNCATED)
        return st;
    if (st == ZAP_ERR_TRUNCATED || len != zap_a2a_rcount(a, j) * zap_dtype_size(a->dt)) {
        zap_error("coll: rank %d: alltoallv: rank %d sent %s than recvcounts[%d] = %zu elements", op->comm->rank, j,
                  st == ZAP_ERR_TRUNCATED ? "more" : "fewer", j, zap_a2a_rcount(a, j));
        *bad = true;
    }
    return ZAP_OK;
}

zap_status_t zap_a2a_status(zap_coll_op_t *op, bool bad, bool *started)
{
    if (!*started) {
        if (bad)
            zap_coll_agree_mark_bad_own(&op->hdr_own, op->comm->rank);
        zap_status_t st = zap_coll_agree_init(op, ZAP_COLL_FORM_RD, PHASE_STATUS, NULL, 0, ZAP_DT_UINT8, ZAP_OP_SUM);
        if (st != ZAP_OK)
            return st;
        *started = true;
    }
    zap_status_t st = zap_coll_agree_progress(op);
    return st == ZAP_ERR_MISMATCH && bad ? ZAP_ERR_INVALID_PARAM : st;
}

/* --- entry points --------------------------------------------------------------- */

/* This rank's own argument error, logged; ZAP_OK when there is none. */
static zap_status_t check(const zap_comm_t *comm, bool is_v, const void *sendbuf, const size_t *scounts,
                          const ptrdiff_t *sdispls, size_t count, const void *recvbuf, const size_t *rcounts,
                          const ptrdiff_t *rdispls, zap_dtype_t dt)
{
    const char *name = is_v ? "alltoallv" : "alltoall";
    int p = comm->size;
    if (zap_dtype_size(dt) == 0) {
        zap_error("coll: rank %d: %s: invalid datatype %d", comm->rank, name, (int)dt);
        return ZAP_ERR_INVALID_PARAM;
    }
    bool in_place = sendbuf == ZAP_IN_PLACE;
    if (is_v && (rcounts == NULL || rdispls == NULL || (!in_place && (scounts == NULL || sdispls == NULL)))) {
        zap_error("coll: rank %d: alltoallv: counts and displacements are required", comm->rank);
        return ZAP_ERR_INVALID_PARAM;
    }
    size_t limit = SIZE_MAX / 4 / zap_dtype_size(dt) / (size_t)p, sent = 0, recvd = 0;
    for (int j = 0; j < p; j++) {
        size_t s = is_v ? (in_place ? rcounts[j] : scounts[j]) : count, r = is_v ? rcounts[j] : count;
        if (s > limit || r > limit) {
            zap_error("coll: rank %d: %s: count too large", comm->rank, name);
            return ZAP_ERR_INVALID_PARAM;
        }
        sent += s;
        recvd += r;
    }
    if ((sent > 0 && sendbuf == NULL) || (recvd > 0 && recvbuf == NULL)) {
        zap_error("coll: rank %d: %s: NULL buffer", comm->rank, name);
        return ZAP_ERR_INVALID_PARAM;
    }
    return ZAP_OK;
}

static zap_status_t post(zap_comm_t *comm, bool is_v, const void *sendbuf, const size_t *scounts,
                         const ptrdiff_t *sdispls, size_t count, void *recvbuf, const size_t *rcounts,
                         const ptrdiff_t *rdispls, zap_dtype_t dt, bool blocking, zap_request_t **req_p)
{
    if (comm == NULL || (req_p == NULL && !blocking))
        return ZAP_ERR_INVALID_PARAM;
    zap_status_t local = check(comm, is_v, sendbuf, scounts, sdispls, count, recvbuf, rcounts, rdispls, dt);
    bool in_place = sendbuf == ZAP_IN_PLACE;
    zap_coll_args_t a = {.src = in_place ? NULL : sendbuf, .dst = recvbuf, .count = count, .fixed = is_v ? 0 : count,
                         .counts = is_v && !in_place ? scounts : NULL, .displs = is_v && !in_place ? sdispls : NULL,
                         .rcounts = is_v ? rcounts : NULL, .rdispls = is_v ? rdispls : NULL, .dt = dt,
                         .op = ZAP_OP_SUM, .root = -1, .hdr_count = is_v ? 0 : count,
                         .hdr_extra = (is_v ? 1 : 0) | (in_place ? ZAP_A2A_EXTRA_IN_PLACE : 0), .mem = ZAP_MEM_HOST};
    if (local == ZAP_OK) {
        a.bytes = is_v ? 0 : count * zap_dtype_size(dt);
        a.mem = zap_coll_mem_kind(comm, recvbuf, is_v ? 1 : count * zap_dtype_size(dt) * (size_t)comm->size);
    }
    a.empty = !is_v && count == 0; /* alltoallv's counts are pairwise: not known everywhere */
    if (blocking) /* the fast form where it applies (engine/fast.h) */
        return zap_coll_call(comm, &zap_alltoall_desc, &a, local);
    return zap_coll_ipost(comm, &zap_alltoall_desc, &a, local, req_p);
}

zap_status_t zap_ialltoall(zap_comm_t *comm, const void *sendbuf, size_t count, void *recvbuf, zap_dtype_t dt,
                           zap_request_t **req_p)
{
    return post(comm, false, sendbuf, NULL, NULL, count, recvbuf, NULL, NULL, dt, false, req_p);
}

zap_status_t zap_ialltoallv(zap_comm_t *comm, const void *sendbuf, const size_t *sendcounts, const ptrdiff_t *sdispls,
                            void *recvbuf, const size_t *recvcounts, const ptrdiff_t *rdispls, zap_dtype_t dt,
                            zap_request_t **req_p)
{
    return post(comm, true, sendbuf, sendcounts, sdispls, 0, recvbuf, recvcounts, rdispls, dt, false, req_p);
}

zap_status_t zap_alltoall(zap_comm_t *comm, const void *sendbuf, size_t count, void *recvbuf, zap_dtype_t dt)
{
    return post(comm, false, sendbuf, NULL, NULL, count, recvbuf, NULL, NULL, dt, true, NULL);
}

zap_status_t zap_alltoallv(zap_comm_t *comm, const void *sendbuf, const size_t *sendcounts, const ptrdiff_t *sdispls,
                           void *recvbuf, const size_t *recvcounts, const ptrdiff_t *rdispls, zap_dtype_t dt)
{
    return post(comm, true, sendbuf, sendcounts, sdispls, 0, recvbuf, recvcounts, rdispls, dt, true, NULL);
}
