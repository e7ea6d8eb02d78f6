/* Scatter(v): argument checks, the algorithm table and the selection rows.
 *
 * Algorithms:
 *   linear  (here) the root sends each rank its part directly, every send
 *           posted at once (in batches of ZAP_COLL_MAX_REQS), so the root's
 *           link carries (p-1)/p of the data once, which is the least any
 *           algorithm can do for distinct shards (a tree would forward shards
 *           through intermediate ranks).
 *   shm     (scatter_shm.c) ranks on one host: the blocks ride the root's
 *           slot of the argument exchange where they fit; up to
 *           ZAP_SCATTER_SHM_COPY_MAX bytes in all they go through the
 *           segment's large area (scatter_shm_copy.c: one copy in, one out);
 *           else every rank reads its own straight from the root's sendbuf
 *           (single copy).
 *
 * Counts are known only at the root, so in the linear form a receive
 * capacity that is too small shows up only on the receiver (a truncated
 * message). A second header exchange after the data (tag phase 3) carries
 * that "bad" flag to every rank: the receiver returns ZAP_ERR_INVALID_PARAM,
 * all others ZAP_ERR_MISMATCH. On a communicator with a shared segment every
 * scatter agrees in it under the automatic choice (scatter_form). */
#include "coll/scatter/scatter.h"
#include "coll/comm_impl.h"
#include "coll/engine/mem.h"
#include "coll/engine/fast.h"
#include "coll/engine/select.h"
#include "coll/engine/step.h"
#include "coll/hier/hier.h"
#include "coll/shm/shm.h"
#include "base/log.h"
#include <string.h>

#define PHASE_DATA 1
#define PHASE_STATUS 3

typedef enum scv_state { SCV_START, SCV_SEND_POST, SCV_SEND_WAIT, SCV_RECV_WAIT, SCV_STATUS, SCV_DONE } scv_state_t;

typedef struct scv {
    scv_state_t state;
    const char *sendbuf;
    const size_t *counts;
    const ptrdiff_t *displs;
    size_t fixed_count; /* scatter: counts == NULL */
    char *recvbuf;
    size_t recvcount, esize;
    int root, next;
    zap_status_t rst;
    bool truncated;
} scv_t;
_Static_assert(sizeof(scv_t) <= ZAP_COLL_ALG_STATE_BYTES, "state too large");

static size_t cnt(const scv_t *s, int r) { return s->counts ? s->counts[r] : s->fixed_count; }
static ptrdiff_t dsp(const scv_t *s, int r)
{
    return s->counts ? s->displs[r] : (ptrdiff_t)((size_t)r * s->fixed_count);
}

static zap_status_t scv_progress(zap_coll_op_t *op)
{
    scv_t *s = (scv_t *)op->alg_state;
    int rank = op->comm->rank, p = op->comm->size;
    zap_status_t st;
    for (;;) {
        switch (s->state) {
        case SCV_START:
            if (rank == s->root) {
                if (cnt(s, rank) > s->recvcount) {
                    zap_error("coll: rank %d: scatterv: root's own count %zu exceeds its recvcount %zu", rank,
                              cnt(s, rank), s->recvcount);
                    s->truncated = true;
                } else {
                    zap_coll_copy(op, s->recvbuf, s->sendbuf + dsp(s, rank) * (ptrdiff_t)s->esize,
                                  cnt(s, rank) * s->esize);
                }
                s->next = 0;
                s->state = SCV_SEND_POST;
            } else {
                st = zap_coll_recv(op, s->root, PHASE_DATA, 0, s->recvbuf, s->recvcount * s->esize, NULL, &s->rst);
                if (st != ZAP_OK)
                    return st;
                s->state = SCV_RECV_WAIT;
            }
            break;
        case SCV_SEND_POST:
            while (s->next < p && op->nreqs < ZAP_COLL_MAX_REQS) {
                int r = s->next++;
                if (r == rank)
                    continue;
                st = zap_coll_send(op, r, PHASE_DATA, 0, s->sendbuf + dsp(s, r) * (ptrdiff_t)s->esize,
                                   cnt(s, r) * s->esize);
                if (st != ZAP_OK)
                    return st;
            }
            s->state = SCV_SEND_WAIT;
            break;
        case SCV_SEND_WAIT:
            if ((st = zap_coll_step_test(op)) != ZAP_OK)
                return st;
            s->state = s->next < p ? SCV_SEND_POST : SCV_STATUS;
            break;
        case SCV_RECV_WAIT:
            if ((st = zap_coll_step_test(op)) != ZAP_OK)
                return st;
            if (s->rst == ZAP_ERR_TRUNCATED) {
                zap_error("coll: rank %d: scatterv: the root sent more than recvcount %zu elements", rank,
                          s->recvcount);
                s->truncated = true;
            } else if (s->rst != ZAP_OK) {
                return s->rst;
            }
            s->state = SCV_STATUS;
            break;
        case SCV_STATUS:
            if (s->truncated)
                zap_coll_agree_mark_bad_own(&op->hdr_own, op->comm->rank);
            if ((st = zap_coll_agree_init(op, ZAP_COLL_FORM_RD, PHASE_STATUS, NULL, 0, ZAP_DT_UINT8, ZAP_OP_SUM)) !=
                ZAP_OK)
                return st;
            s->state = SCV_DONE;
            break;
        case SCV_DONE:
            st = zap_coll_agree_progress(op);
            if (st == ZAP_ERR_MISMATCH && s->truncated)
                return ZAP_ERR_INVALID_PARAM;
            return st;
        }
    }
}

static zap_status_t linear_init(zap_coll_op_t *op)
{
    const zap_coll_args_t *a = &op->args;
    scv_t *s = (scv_t *)op->alg_state;
    memset(s, 0, sizeof(*s));
    s->state = SCV_START;
    s->sendbuf = a->src;
    s->counts = a->counts;
    s->displs = a->displs;
    s->fixed_count = a->fixed;
    s->recvbuf = a->dst;
    s->recvcount = a->count;
    s->esize = zap_dtype_size(a->dt);
    s->root = a->root;
    op->progress = scv_progress;
    return ZAP_OK;
}

static const zap_coll_alg_t algs[ZAP_SC_NALGS] = {
    [ZAP_SC_LINEAR] = {.name = "linear", .description = "the root sends each rank its part directly, all sends at once",
                       .init = linear_init, .by_name = true},
    [ZAP_SC_SHM] = {.name = "shm",
                    .description = "the blocks in the root's shared-memory slot, through the large area (up to "
                                   "64 KiB in all), or read straight from its sendbuf (single copy)",
                    .init = zap_scatter_shm_init, .require = ZAP_COLL_PRED_SAME_HOST,
                    .vote_lane = ZAP_COLL_LANE_VOTE_HOST, .vote = zap_scatter_shm_vote,
                    .agrees_in_data = ZAP_COLL_SHM_MAX_BYTES, .by_name = true},
    [ZAP_SC_HIER] = {.name = "hier", .description = "one message per host to its leader, then each host's own scatter",
                     .init = zap_scatterv_hier_init, .require = ZAP_COLL_PRED_HOSTS},
};
static const zap_coll_row_t rows[] = {
    {ZAP_SC_HIER, 3, INT32_MAX, 0, SIZE_MAX, 0, 0, "ranks on several hosts: each host receives its share once, in one piece"},
    {ZAP_SC_SHM, 2, ZAP_COLL_SHM_MAX_RANKS, 0, SIZE_MAX, 0, 0,
     "one host: the root's slot or the large area carries the blocks, or each rank reads its own once"},
    {ZAP_SC_LINEAR, 1, INT32_MAX, 0, SIZE_MAX, 0, 0, "the root's link carries (p-1)/p of the data once, the least possible"},
};

/* In the shared segment under the automatic choice and when shm is forced. */
static zap_coll_form_t scatter_form(const zap_comm_t *comm)
{
    int f = comm->set.alg[ZAP_COLL_SCATTERV];
    return comm->shm != NULL && (f < 0 || f == ZAP_SC_SHM) ? ZAP_COLL_FORM_SHM : ZAP_COLL_FORM_RD;
}

const zap_coll_desc_t zap_scatterv_desc = {
    .name = "scatterv",
    .kind = ZAP_COLL_SCATTERV,
    .algs = algs,
    .nalgs = ZAP_SC_NALGS,
    .rows = rows,
    .nrows = (int)(sizeof(rows) / sizeof(rows[0])),
    .form = scatter_form,
    .needs_setup = true,
    .setting = ZAP_CFG_COUNT,
    .fast_alg = ZAP_SC_SHM,
    .fast_votes = true,
    .fast_setup = zap_scatter_shm_fast_setup,
    .fast_finish = zap_scatter_shm_fast_finish,
};

/* This rank's own argument error, logged; ZAP_OK when there is none. */
static zap_status_t check(const zap_comm_t *comm, bool is_v, const void *sendbuf, const size_t *counts,
                          const ptrdiff_t *displs, size_t fixed, const void *recvbuf, size_t recvcount, zap_dtype_t dt,
                          int root)
{
    int p = comm->size;
    if (zap_dtype_size(dt) == 0) {
        zap_error("coll: rank %d: scatter: invalid datatype %d", comm->rank, (int)dt);
        return ZAP_ERR_INVALID_PARAM;
    }
    if (root < 0 || root >= p) {
        zap_error("coll: rank %d: scatter: root %d is not in [0, %d)", comm->rank, root, p);
        return ZAP_ERR_INVALID_PARAM;
    }
    if (recvcount > 0 && recvbuf == NULL) {
        zap_error("coll: rank %d: scatter: NULL recvbuf with recvcount %zu", comm->rank, recvcount);
        return ZAP_ERR_INVALID_PARAM;
    }
    if (comm->rank == root) {
        size_t total = 0;
        bool ok = !is_v || (counts != NULL && displs != NULL);
        for (int r = 0; ok && r < p; r++)
            total += is_v ? counts[r] : fixed;
        if (!ok || (total > 0 && sendbuf == NULL)) {
            zap_error("coll: rank %d: scatter: root needs sendbuf, counts and displs", comm->rank);
            return ZAP_ERR_INVALID_PARAM;
        }
    }
    return ZAP_OK;
}

/* Posts the call (req_p), or runs it to completion (blocking: req_p NULL,
 * the fast form where it applies, engine/fast.h). */
static zap_status_t post(zap_comm_t *comm, bool is_v, const void *sendbuf, const size_t *counts,
                         const ptrdiff_t *displs, size_t fixed, void *recvbuf, size_t recvcount, zap_dtype_t dt, int root,
                         bool blocking, zap_request_t **req_p)
{
    if (comm == NULL || (req_p == NULL && !blocking))
        return ZAP_ERR_INVALID_PARAM;
    zap_status_t local = check(comm, is_v, sendbuf, counts, displs, fixed, recvbuf, recvcount, dt, root);
    zap_coll_args_t a = {.src = sendbuf, .dst = recvbuf, .count = recvcount, .fixed = fixed,
                         .counts = is_v ? counts : NULL, .displs = is_v ? displs : NULL, .dt = dt, .op = ZAP_OP_SUM,
                         .root = root, .hdr_count = is_v ? 0 : fixed, .hdr_extra = is_v ? 1 : 0, .mem = ZAP_MEM_HOST};
    if (local == ZAP_OK) {
        a.bytes = recvcount * zap_dtype_size(dt);
        a.mem = zap_coll_mem_kind(comm, recvbuf, a.bytes);
    }
    a.empty = !is_v && fixed == 0; /* a v-form's counts are the root's alone: not known everywhere */
    if (blocking)
        return zap_coll_call(comm, &zap_scatterv_desc, &a, local);
    return zap_coll_ipost(comm, &zap_scatterv_desc, &a, local, req_p);
}

zap_status_t zap_iscatterv(zap_comm_t *comm, const void *sendbuf, const size_t *counts, const ptrdiff_t *displs,
                           void *recvbuf, size_t recvcount, zap_dtype_t dt, int root, zap_request_t **req_p)
{
    return post(comm, true, sendbuf, counts, displs, 0, recvbuf, recvcount, dt, root, false, req_p);
}

zap_status_t zap_iscatter(zap_comm_t *comm, const void *sendbuf, void *recvbuf, size_t count, zap_dtype_t dt,
                          int root, zap_request_t **req_p)
{
    return post(comm, false, sendbuf, NULL, NULL, count, recvbuf, count, dt, root, false, req_p);
}

zap_status_t zap_scatterv(zap_comm_t *comm, const void *sendbuf, const size_t *counts, const ptrdiff_t *displs,
                          void *recvbuf, size_t recvcount, zap_dtype_t dt, int root)
{
    return post(comm, true, sendbuf, counts, displs, 0, recvbuf, recvcount, dt, root, true, NULL);
}

zap_status_t zap_scatter(zap_comm_t *comm, const void *sendbuf, void *recvbuf, size_t count, zap_dtype_t dt, int root)
{
    return post(comm, false, sendbuf, NULL, NULL, count, recvbuf, count, dt, root, true, NULL);
}
