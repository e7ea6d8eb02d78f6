/* Shared-memory allgather(v), for communicators whose ranks are processes on
 * one host (coll/shm/shm.h), in one of two forms:
 *
 * Slots: where every rank's block is at most a slot's payload
 * (ZAP_COLL_SHM_PAYLOAD bytes; counts are the same on every rank, so every
 * rank decides alike), each rank publishes its block in its slot of the
 * argument exchange itself (zap_coll_agree_init_gather) and, once every slot
 * holds the exchange and the headers agree, copies the p blocks into place.
 * The agreement is the whole call: one slot written, p - 1 read, no message.
 *
 * Single copy: larger blocks, where the segment permits reads of peers'
 * memory (zap_coll_shm_t.cma) and every rank's buffers are host memory (a
 * vote in the header-only agreement that goes first), as large exchange k of
 * the communicator (shm.h, zap_coll_shm_turn):
 *
 *   1. publish this rank's block's address (sendbuf, or its place in recvbuf
 *      in place) in its flag line, in_seq = (k, 0);
 *   2. once every in_seq holds it: read every other rank's block straight
 *      into place (process_vm_readv), starting from the next rank so that the
 *      p ranks do not all read the same one at once; copy its own;
 *   3. fin_seq = k, then wait until every rank's fin_seq holds k: the others
 *      may still be reading this rank's block until then, and the caller may
 *      change it once the call returns.
 *
 * Large area: blocks above a slot and up to ZAP_AG_AREA_MAX_BLOCK bytes (below
 * ZAP_AG_AREA_MAX_BLOCK_2 on 2 ranks),
 * where single copy's one system call per block costs more than a copy, as
 * large exchange k through the segment's large area (every rank's buffers
 * host memory, the same vote): each rank copies its block into its input
 * area and publishes in_seq = (k, 0); once every in_seq holds it, copies
 * every other rank's block out into place, publishes fin_seq = k and returns
 * (zap_coll_shm_end): the next large exchange's turn waits until every
 * fin_seq holds k before its input area is written again, so back-to-back
 * calls pay two waits each, not three. Two copies per byte, no system call.
 *
 * Single copy reads (p - 1)/p of the result once per rank, the least any algorithm
 * moves, with two waits, against the ring's p - 1 message rounds. As in the
 * single-copy allreduce (allreduce_cma.c) only reads cross processes: a rank
 * that gave up on a call can be read wrongly but never written into, and the
 * others then wait for its fin and fail. Where any rank votes no (GPU
 * memory), every rank takes the next candidate, the ring. */
#include "coll/allgather/allgather.h"
#include "coll/comm_impl.h"
#include "coll/engine/mem.h"
#include "coll/engine/select.h"
#include "coll/shm/shm.h"
#include "base/copy.h"
#include <stddef.h>
#include <string.h>

/* Blocks up to this size go through the large area, larger ones are read
 * once from their owners (single copy): one system call per block costs
 * more than a copy of a block this small. On 2 ranks, where each rank makes
 * a single read, the read wins from ZAP_AG_AREA_MAX_BLOCK_2 on
 * (docs/performance.md has the runs). Where single-copy reads are dear on
 * the host (zap_coll_shm_t.cma_slow), blocks up to ZAP_AG_AREA_MAX_BLOCK_DEAR:
 * there the area's two copies beat one dear read of a mid-size block, and a
 * block of megabytes still costs less read once than copied twice. */
#define ZAP_AG_AREA_MAX_BLOCK ((size_t)64 << 10)
#define ZAP_AG_AREA_MAX_BLOCK_2 ((size_t)8 << 10)
#define ZAP_AG_AREA_MAX_BLOCK_DEAR ((size_t)256 << 10)

enum { CMA_TURN, CMA_READ, CMA_FIN };

typedef struct ag_cma {
    int step;
    bool vote_read;
    bool area;   /* through the large area, else single copy */
    size_t most; /* the largest block (the area's reservation per rank) */
    zap_coll_shm_wait_t wait;
} ag_cma_t;
_Static_assert(sizeof(ag_cma_t) <= ZAP_COLL_ALG_STATE_BYTES, "state too large");

/* Rank q's block: its bytes and its byte offset in recvbuf. The v-forms'
 * displacements are read through a cast so this holds for signed ones too. */
static size_t blk_bytes(const zap_coll_args_t *a, int q, size_t es)
{
    return (a->counts != NULL ? a->counts[q] : a->count) * es;
}
static ptrdiff_t blk_at(const zap_coll_args_t *a, int q, size_t es)
{
    ptrdiff_t d = a->counts != NULL ? (ptrdiff_t)a->displs[q] : (ptrdiff_t)((size_t)q * a->count);
    return d * (ptrdiff_t)es;
}

/* This rank's block where the others read it from. */
static const void *own_block(const zap_coll_op_t *op, size_t es)
{
    const zap_coll_args_t *a = &op->args;
    return a->src != NULL ? a->src : (const char *)a->dst + blk_at(a, op->comm->rank, es);
}

bool zap_allgather_shm_vote(const zap_coll_op_t *op)
{
    const zap_coll_args_t *a = &op->args;
    size_t es = zap_dtype_size(a->dt);
    if (a->counts == NULL && a->count * es <= ZAP_COLL_SHM_PAYLOAD)
        return true; /* the slots carry it: the vote is not read, and the lookup would cost more than the call */
    return op->mem == ZAP_MEM_HOST &&
           zap_coll_mem_kind(op->comm, own_block(op, es), blk_bytes(a, op->comm->rank, es)) == ZAP_MEM_HOST;
}

/* The slots: every block into place, in the progress call that saw the
 * agreement complete (the slots are overwritten only after this rank's next
 * exchange publishes). */
static zap_status_t slots_finish(zap_coll_op_t *op)
{
    const zap_coll_args_t *a = &op->args;
    int p = op->comm->size, r = op->comm->rank;
    size_t es = zap_dtype_size(a->dt);
    for (int q = 0; q < p; q++) {
        size_t n = blk_bytes(a, q, es);
        char *to = (char *)a->dst + blk_at(a, q, es);
        if (q != r)
            zap_coll_copy(op, to, zap_coll_agree_slot(op, q), n);
        else if (a->src != NULL)
            zap_coll_copy(op, to, a->src, n);
    }
    return ZAP_OK;
}

/* Both large forms: the same turn, flags and waits; what moves between the
 * two waits is a copy through this rank's input area (area) or a read of
 * the owner's buffer (single copy). */
static zap_status_t large_progress(zap_coll_op_t *op)
{
    ag_cma_t *g = (ag_cma_t *)op->alg_state;
    zap_coll_shm_t *s = op->comm->shm;
    const zap_coll_args_t *a = &op->args;
    int p = s->size, r = s->rank;
    size_t es = zap_dtype_size(a->dt);
    zap_status_t st;
    if (g->step == CMA_TURN) {
        if (!g->vote_read && !zap_coll_agree_voted(op, ZAP_COLL_LANE_VOTE_HOST))
            return zap_coll_fall_back(op); /* some rank's buffers are not host memory */
        g->vote_read = true;
        st = g->area ? zap_coll_shm_large_turn(op, g->most) : zap_coll_shm_turn(op);
        if (st == ZAP_ERR_NO_MEMORY && g->area) /* no room for the area: every rank takes the next candidate */
            return zap_coll_fall_back(op);
        if (st != ZAP_OK)
            return st;
        if (g->area)
            zap_coll_copy(op, s->big_in + (size_t)r * s->big_bytes, own_block(op, es), blk_bytes(a, r, es));
        else
            s->ctl[r].src_addr = (uint64_t)(uintptr_t)own_block(op, es);
        atomic_store_explicit(&s->ctl[r].in_seq, zap_coll_shm_tag(op->shm_big_seq, 0), memory_order_release);
        g->step = CMA_READ;
        g->wait = (zap_coll_shm_wait_t){0, 0, 0};
    }
    uint64_t k = op->shm_big_seq;
    if (g->step == CMA_READ) {
        st = zap_coll_shm_gather(op, &s->ctl[0].in_seq, sizeof(s->ctl[0]), zap_coll_shm_tag(k, 0), true, &g->wait);
        if (st != ZAP_OK)
            return st;
        for (int i = 1; i < p; i++) { /* from the next rank on, so that p ranks do not all read rank 0 first */
            int q = (r + i) % p;
            size_t n = blk_bytes(a, q, es);
            char *to = (char *)a->dst + blk_at(a, q, es);
            if (g->area)
                zap_coll_copy(op, to, s->big_in + (size_t)q * s->big_bytes, n);
            else if (n > 0 && (st = zap_coll_shm_read(op, q, to, s->ctl[q].src_addr, n)) != ZAP_OK)
                return st;
        }
        if (a->src != NULL)
            zap_coll_copy(op, (char *)a->dst + blk_at(a, r, es), a->src, blk_bytes(a, r, es));
        if (g->area) { /* the others read only the areas: the next exchange's turn waits for them */
            zap_coll_shm_end(op);
            return ZAP_OK;
        }
        atomic_store_explicit(&s->ctl[r].fin_seq, zap_coll_shm_fin(k), memory_order_release);
        g->step = CMA_FIN;
        g->wait = (zap_coll_shm_wait_t){0, 0, 0};
    }
    /* The others may still read this rank's block (its area, or its buffer) until every fin holds k. */
    st = zap_coll_shm_gather(op, &s->ctl[0].fin_seq, sizeof(s->ctl[0]), zap_coll_shm_fin(k), true, &g->wait);
    if (st != ZAP_OK)
        return st;
    s->big_done = k;
    return ZAP_OK;
}

zap_status_t zap_allgather_shm_init(zap_coll_op_t *op)
{
    zap_coll_shm_t *s = op->comm->shm;
    const zap_coll_args_t *a = &op->args;
    if (s == NULL || op->form != ZAP_COLL_FORM_SHM)
        return ZAP_ERR_UNSUPPORTED;
    size_t es = zap_dtype_size(a->dt), most = 0;
    for (int q = 0; q < s->size; q++) {
        size_t n = blk_bytes(a, q, es);
        most = n > most ? n : most;
    }
    if (most <= ZAP_COLL_SHM_PAYLOAD && !op->agreed) {
        zap_status_t st = zap_coll_agree_init_gather(op, own_block(op, es), blk_bytes(a, s->rank, es));
        if (st != ZAP_OK)
            return st;
        op->agreeing = true;
        op->progress = slots_finish;
        return ZAP_OK;
    }
    ag_cma_t *g = (ag_cma_t *)op->alg_state;
    size_t area_max = s->cma_slow    ? ZAP_AG_AREA_MAX_BLOCK_DEAR
                      : s->size > 2 ? ZAP_AG_AREA_MAX_BLOCK
                                    : ZAP_AG_AREA_MAX_BLOCK_2 - 1;
    bool area = most > ZAP_COLL_SHM_PAYLOAD && most <= area_max && most <= s->big_bytes;
    if (!area && (!s->cma || most <= ZAP_COLL_SHM_PAYLOAD))
        return ZAP_ERR_UNSUPPORTED;
    *g = (ag_cma_t){CMA_TURN, false, area, most, {0, 0, 0}};
    op->progress = large_progress;
    return ZAP_OK;
}

/* Every rank's block in its slot, every slot read (fixed counts). */
bool zap_allgather_shm_fast_setup(const zap_comm_t *comm, const zap_coll_args_t *a, zap_coll_shm_fast_t *f)
{
    size_t es = zap_dtype_size(a->dt);
    if (a->counts != NULL || a->count * es > ZAP_COLL_SHM_PAYLOAD)
        return false;
    f->src = a->src != NULL ? a->src : (const char *)a->dst + blk_at(a, comm->rank, es);
    f->bytes = a->count * es;
    f->need = ~UINT64_C(0);
    f->words[ZAP_HDR_LANES] |= UINT64_C(1) << (8 * ZAP_COLL_LANE_VOTE_HOST); /* the vote above: yes, unread */
    return true;
}

/* As slots_finish. */
void zap_allgather_shm_fast_finish(const zap_comm_t *comm, const zap_coll_args_t *a, const zap_coll_shm_fast_t *f)
{
    size_t n = a->count * zap_dtype_size(a->dt);
    for (int q = 0; q < comm->size; q++) {
        char *to = (char *)a->dst + (size_t)q * n;
        if (q != comm->rank)
            memcpy(to, zap_coll_agree_shm_fast_slot(comm, f, q), n);
        else if (a->src != NULL)
            zap_copy(to, a->src, n);
    }
}
