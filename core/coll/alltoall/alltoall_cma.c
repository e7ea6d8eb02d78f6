/* Single-copy alltoall (alltoall only, not in place; ranks on one host):
 * every rank reads its block of each other rank's send buffer straight into
 * its recvbuf (process_vm_readv; coll/shm/shm.h), so each byte is copied
 * once, with no staging and no message. Large exchange k:
 *   1. publish the send buffer's address, in_seq = k;
 *   2. once every in_seq holds k: read block r of each rank's buffer (from
 *      the next rank on), copy the own block;
 *   3. fin_seq = k, and return once every fin_seq holds k.
 * Only reads cross processes (allreduce_cma.c says why that is safe). In
 * place, a rank's send buffer is the recvbuf it overwrites while others read
 * it: such calls (every rank alike: the header says) take the next
 * candidate, as do calls where some rank's buffers are not host memory (the
 * agreement's vote). */
#include "coll/alltoall/alltoall.h"
#include "coll/engine/mem.h"
#include "coll/engine/select.h"
#include "coll/shm/shm.h"
#include "base/copy.h"
#include <string.h>

enum { STEP_TURN, STEP_ADDRS, STEP_FIN };

typedef struct a2a_cma {
    int step;
    size_t blk;
    zap_coll_shm_wait_t wait;
} a2a_cma_t;
_Static_assert(sizeof(a2a_cma_t) <= ZAP_COLL_ALG_STATE_BYTES, "state too large");

bool zap_alltoall_cma_vote(const zap_coll_op_t *op)
{
    const zap_coll_args_t *a = &op->args;
    size_t all = a->fixed * zap_dtype_size(a->dt) * (size_t)op->comm->size;
    return op->mem == ZAP_MEM_HOST && !zap_a2a_in_place(a) && zap_coll_mem_kind(op->comm, a->src, all) == ZAP_MEM_HOST;
}

static zap_status_t cma_progress(zap_coll_op_t *op)
{
    a2a_cma_t *s = (a2a_cma_t *)op->alg_state;
    const zap_coll_args_t *a = &op->args;
    zap_coll_shm_t *sh = op->comm->shm;
    int r = sh->rank, p = sh->size;
    zap_status_t st;
    if (s->step == STEP_TURN) {
        if (!zap_coll_agree_voted(op, ZAP_COLL_LANE_VOTE_HOST))
            return zap_coll_fall_back(op);
        if ((st = zap_coll_shm_turn(op)) != ZAP_OK)
            return st;
        sh->ctl[r].src_addr = (uint64_t)(uintptr_t)a->src;
        atomic_store_explicit(&sh->ctl[r].in_seq, zap_coll_shm_tag(op->shm_big_seq, 0), memory_order_release);
        s->step = STEP_ADDRS;
        s->wait = (zap_coll_shm_wait_t){0, 0, 0};
    }
    uint64_t k = op->shm_big_seq;
    if (s->step == STEP_ADDRS) {
        st = zap_coll_shm_gather(op, &sh->ctl[0].in_seq, sizeof(sh->ctl[0]), zap_coll_shm_tag(k, 0), true, &s->wait);
        if (st != ZAP_OK)
            return st;
        zap_copy((char *)a->dst + (size_t)r * s->blk, (const char *)a->src + (size_t)r * s->blk, s->blk);
        for (int i = 1; i < p; i++) {
            int q = (r + i) % p;
            st = zap_coll_shm_read(op, q, (char *)a->dst + (size_t)q * s->blk,
                                   sh->ctl[q].src_addr + (uint64_t)r * s->blk, s->blk);
            if (st != ZAP_OK)
                return st;
        }
        atomic_store_explicit(&sh->ctl[r].fin_seq, zap_coll_shm_fin(k), memory_order_release);
        s->step = STEP_FIN;
        s->wait = (zap_coll_shm_wait_t){0, 0, 0};
    }
    st = zap_coll_shm_gather(op, &sh->ctl[0].fin_seq, sizeof(sh->ctl[0]), zap_coll_shm_fin(k), true, &s->wait);
    if (st != ZAP_OK)
        return st;
    sh->big_done = k;
    return ZAP_OK;
}

zap_status_t zap_alltoall_cma_init(zap_coll_op_t *op)
{
    zap_coll_shm_t *sh = op->comm->shm;
    const zap_coll_args_t *a = &op->args;
    if (sh == NULL || !sh->cma || op->form != ZAP_COLL_FORM_SHM || zap_a2a_is_v(a) || zap_a2a_in_place(a) ||
        a->fixed == 0)
        return ZAP_ERR_UNSUPPORTED;
    a2a_cma_t *s = (a2a_cma_t *)op->alg_state;
    memset(s, 0, sizeof(*s));
    s->blk = a->fixed * zap_dtype_size(a->dt);
    s->step = STEP_TURN;
    op->progress = cma_progress;
    return ZAP_OK;
}
