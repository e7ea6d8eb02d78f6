/* Allgather(v): argument checks, the algorithm table and the selection rows.
 *
 * Algorithms:
 *   ring  (here) each rank places its block, then p-1 steps in which step s
 *         sends block (r - s) mod p to the right neighbour and receives block
 *         (r - s - 1) mod p from the left one straight into place. (p-1)/p of
 *         the result moves through every rank's link, the minimum; p-1 rounds.
 *   shm   (allgather_shm.c) ranks on one host: blocks up to a slot ride the
 *         argument exchange's shared-memory slots; larger ones are read
 *         straight from the other ranks' buffers (single copy).
 *
 * counts must be the same on every rank: the argument header carries the
 * total and a hash of counts, and each rank checks counts[rank] == sendcount
 * before anything moves, so disagreement is reported on every rank. On a
 * communicator with a shared segment every allgather agrees in it under the
 * automatic choice (allgather_form). */
#include "coll/allgather/allgather.h"
#include "coll/comm_impl.h"
#include "coll/engine/mem.h"
#include "coll/engine/fast.h"
#include "coll/engine/select.h"
#include "coll/engine/step.h"
#include "coll/patterns/patterns.h"
#include "coll/hier/hier.h"
#include "coll/shm/shm.h"
#include "base/log.h"
#include <string.h>

#define PHASE 1

typedef enum ag_state { AG_START, AG_POST, AG_WAIT, AG_DONE } ag_state_t;

typedef struct ag {
    ag_state_t state;
    const char *sendbuf; /* NULL for in place */
    char *recvbuf;
    const size_t *counts;    /* NULL: fixed count */
    const ptrdiff_t *displs; /* elements, signed */
    size_t fixed, esize;
    int step;
} ag_t;
_Static_assert(sizeof(ag_t) <= ZAP_COLL_ALG_STATE_BYTES, "state too large");

static size_t cnt(const ag_t *s, int r) { return s->counts ? s->counts[r] : s->fixed; }
static ptrdiff_t dsp(const ag_t *s, int r) { return s->counts ? s->displs[r] : (ptrdiff_t)((size_t)r * s->fixed); }

static zap_status_t ag_progress(zap_coll_op_t *op)
{
    ag_t *s = (ag_t *)op->alg_state;
    int r = op->comm->rank, p = op->comm->size;
    zap_status_t st;
    for (;;) {
        switch (s->state) {
        case AG_START:
            if (s->sendbuf != NULL)
                zap_coll_copy(op, s->recvbuf + dsp(s, r) * (ptrdiff_t)s->esize, s->sendbuf, cnt(s, r) * s->esize);
            s->step = 0;
            s->state = AG_POST;
            break;
        case AG_POST: {
            if (s->step >= p - 1) {
                s->state = AG_DONE;
                break;
            }
            int sb = zap_pat_mod((long)r - s->step, p), rb = zap_pat_mod((long)r - s->step - 1, p);
            if ((st = zap_coll_recv(op, zap_pat_mod(r - 1, p), PHASE, s->step & ZAP_COLL_STEP_MAX,
                                    s->recvbuf + dsp(s, rb) * (ptrdiff_t)s->esize, cnt(s, rb) * s->esize, NULL,
                                    NULL)) !=
                    ZAP_OK ||
                (st = zap_coll_send(op, zap_pat_mod(r + 1, p), PHASE, s->step & ZAP_COLL_STEP_MAX,
                                    s->recvbuf + dsp(s, sb) * (ptrdiff_t)s->esize, cnt(s, sb) * s->esize)) !=
                    ZAP_OK)
                return st;
            s->state = AG_WAIT;
            break;
        }
        case AG_WAIT:
            if ((st = zap_coll_step_test(op)) != ZAP_OK)
                return st;
            s->step++;
            s->state = AG_POST;
            break;
        case AG_DONE:
            return ZAP_OK;
        }
    }
}

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

static zap_status_t ring_init(zap_coll_op_t *op)
{
    const zap_coll_args_t *a = &op->args;
    ag_t *s = (ag_t *)op->alg_state;
    memset(s, 0, sizeof(*s));
    s->state = AG_START;
    s->sendbuf = a->src;
    s->recvbuf = a->dst;
    s->counts = a->counts;
    s->displs = a->displs;
    s->fixed = a->count;
    s->esize = zap_dtype_size(a->dt);
    op->progress = ag_progress;
    return ZAP_OK;
}

static const zap_coll_alg_t algs[ZAP_AG_NALGS] = {
    [ZAP_AG_RING] = {.name = "ring", .description = "ring, blocks straight into place", .init = ring_init,
                     .by_name = true},
    [ZAP_AG_SHM] = {.name = "shm",
                    .description = "blocks in the shared segment's slots, or read straight from the other ranks' "
                                   "buffers (single copy)",
                    .init = zap_allgather_shm_init, .require = ZAP_COLL_PRED_SAME_HOST,
                    .vote_lane = ZAP_COLL_LANE_VOTE_HOST, .vote = zap_allgather_shm_vote,
                    .agrees_in_data = ZAP_COLL_SHM_MAX_BYTES, .by_name = true},
    [ZAP_AG_HIER] = {.name = "hier",
                     .description = "the node's allgather, the hosts' packs among the leaders, the node's broadcast",
                     .init = zap_allgatherv_hier_init, .require = ZAP_COLL_PRED_HOSTS},
};
static const zap_coll_row_t rows[] = {
    {ZAP_AG_HIER, 3, INT32_MAX, 0, SIZE_MAX, 0, 0, "ranks on several hosts: each host receives the others' blocks once"},
    {ZAP_AG_SHM, 2, ZAP_COLL_SHM_MAX_RANKS, 0, SIZE_MAX, 0, 0,
     "one host: blocks up to a slot in the agreement, up to 64 KiB (8 KiB on 2 ranks) through the large area, larger "
     "ones read once from their owners"},
    {ZAP_AG_RING, 1, INT32_MAX, 0, SIZE_MAX, 0, 0, "(p-1)/p of the result through every link, the minimum"},
};

/* In the shared segment under the automatic choice and when shm is forced. */
static zap_coll_form_t allgather_form(const zap_comm_t *comm)
{
    int f = comm->set.alg[ZAP_COLL_ALLGATHERV];
    return comm->shm != NULL && (f < 0 || f == ZAP_AG_SHM) ? ZAP_COLL_FORM_SHM : ZAP_COLL_FORM_RD;
}

const zap_coll_desc_t zap_allgatherv_desc = {
    .name = "allgatherv",
    .kind = ZAP_COLL_ALLGATHERV,
    .algs = algs,
    .nalgs = ZAP_AG_NALGS,
    .rows = rows,
    .nrows = (int)(sizeof(rows) / sizeof(rows[0])),
    .form = allgather_form,
    .needs_setup = true,
    .setting = ZAP_CFG_COUNT,
    .fast_alg = ZAP_AG_SHM,
    .fast_votes = true,
    .fast_setup = zap_allgather_shm_fast_setup,
    .fast_finish = zap_allgather_shm_fast_finish,
};

/* This rank's own argument error, logged; ZAP_OK when there is none. *total_p
 * is the result's element count. */
static zap_status_t check(const zap_comm_t *comm, const void *sendbuf, size_t sendcount, const void *recvbuf,
                          const size_t *counts, const ptrdiff_t *displs, bool is_v, zap_dtype_t dt, size_t *total_p)
{
    int p = comm->size;
    size_t total = 0;
    if (zap_dtype_size(dt) == 0) {
        zap_error("coll: rank %d: allgather: invalid datatype %d", comm->rank, (int)dt);
        return ZAP_ERR_INVALID_PARAM;
    }
    if (is_v && (counts == NULL || displs == NULL)) {
        zap_error("coll: rank %d: allgatherv: counts and displs are required", comm->rank);
        return ZAP_ERR_INVALID_PARAM;
    }
    if (is_v && counts[comm->rank] != sendcount) {
        zap_error("coll: rank %d: allgatherv: sendcount %zu differs from counts[%d] %zu", comm->rank, sendcount,
                  comm->rank, counts[comm->rank]);
        return ZAP_ERR_INVALID_PARAM;
    }
    for (int r = 0; r < p; r++)
        total += is_v ? counts[r] : sendcount;
    if ((total > 0 && recvbuf == NULL) || (sendcount > 0 && sendbuf == NULL)) {
        zap_error("coll: rank %d: allgather: NULL buffer", comm->rank);
        return ZAP_ERR_INVALID_PARAM;
    }
    *total_p = total;
    return ZAP_OK;
}

static zap_status_t post(zap_comm_t *comm, const void *sendbuf, size_t sendcount, void *recvbuf,
                         const size_t *counts, const ptrdiff_t *displs, bool is_v, zap_dtype_t dt, bool blocking,
                         zap_request_t **req_p)
{
    if (comm == NULL || (req_p == NULL && !blocking))
        return ZAP_ERR_INVALID_PARAM;
    size_t total = 0;
    zap_status_t local = check(comm, sendbuf, sendcount, recvbuf, counts, displs, is_v, dt, &total);
    zap_coll_args_t a = {.src = sendbuf == ZAP_IN_PLACE ? NULL : sendbuf, .dst = recvbuf, .count = sendcount,
                         .counts = is_v ? counts : NULL, .displs = is_v ? displs : NULL, .dt = dt, .op = ZAP_OP_SUM,
                         .root = -1, .hdr_count = total, .mem = ZAP_MEM_HOST};
    if (local == ZAP_OK) {
        a.hdr_extra = counts_hash(is_v ? counts : NULL, sendcount, comm->size) ^ (is_v ? 1 : 0);
        a.bytes = total * zap_dtype_size(dt);
        a.mem = zap_coll_mem_kind(comm, recvbuf, total * zap_dtype_size(dt));
    }
    a.empty = total == 0;
    if (blocking) /* the fast form where it applies (engine/fast.h) */
        return zap_coll_call(comm, &zap_allgatherv_desc, &a, local);
    return zap_coll_ipost(comm, &zap_allgatherv_desc, &a, local, req_p);
}

zap_status_t zap_iallgatherv(zap_comm_t *comm, const void *sendbuf, size_t sendcount, void *recvbuf,
                             const size_t *counts, const ptrdiff_t *displs, zap_dtype_t dt, zap_request_t **req_p)
{
    return post(comm, sendbuf, sendcount, recvbuf, counts, displs, true, dt, false, req_p);
}

zap_status_t zap_iallgather(zap_comm_t *comm, const void *sendbuf, size_t count, void *recvbuf, zap_dtype_t dt,
                            zap_request_t **req_p)
{
    return post(comm, sendbuf, count, recvbuf, NULL, NULL, false, dt, false, req_p);
}

zap_status_t zap_allgatherv(zap_comm_t *comm, const void *sendbuf, size_t sendcount, void *recvbuf,
                            const size_t *counts, const ptrdiff_t *displs, zap_dtype_t dt)
{
    return post(comm, sendbuf, sendcount, recvbuf, counts, displs, true, dt, true, NULL);
}

zap_status_t zap_allgather(zap_comm_t *comm, const void *sendbuf, size_t count, void *recvbuf, zap_dtype_t dt)
{
    return post(comm, sendbuf, count, recvbuf, NULL, NULL, false, dt, true, NULL);
}
