/* Bruck's alltoall (Bruck, Ho, Kipnis, Upfal & Weathersby 1997), for small
 * blocks: ceil(log2 p) rounds instead of p - 1, each moving about half the
 * blocks, so each block travels up to log2(p) times.
 *
 *   1. rotate: tmp[i] = the block for rank r + i (mod p);
 *   2. for k = 1, 2, 4, ... < p: send the blocks tmp[i] whose index has bit
 *      k set (packed) to rank r + k, receive as many from r - k into the
 *      same places;
 *   3. then tmp[i] holds the block of rank r - i: recvbuf[r - i] = tmp[i].
 * alltoall only (every block the same length); in place reads recvbuf into
 * tmp before writing it. Scratch: p blocks and two packs of half of them. */
#include "coll/alltoall/alltoall.h"
#include "coll/comm_impl.h"
#include "coll/engine/mem.h"
#include "coll/engine/step.h"
#include "coll/patterns/patterns.h"
#include <string.h>

#define PHASE 1

typedef enum bk_state { BK_START, BK_POST, BK_WAIT, BK_DONE } bk_state_t;

typedef struct bk {
    bk_state_t state;
    char *tmp, *spack, *rpack;
    size_t blk;
    int k, step;
} bk_t;
_Static_assert(sizeof(bk_t) <= ZAP_COLL_ALG_STATE_BYTES, "state too large");

static zap_status_t bk_progress(zap_coll_op_t *op)
{
    bk_t *s = (bk_t *)op->alg_state;
    const zap_coll_args_t *a = &op->args;
    int r = op->comm->rank, p = op->comm->size;
    const char *src = zap_a2a_in_place(a) ? a->dst : a->src;
    zap_status_t st;
    for (;;) {
        switch (s->state) {
        case BK_START:
            for (int i = 0; i < p; i++)
                zap_coll_copy(op, s->tmp + (size_t)i * s->blk, src + (size_t)zap_pat_mod((long)r + i, p) * s->blk,
                              s->blk);
            s->k = 1;
            s->state = BK_POST;
            break;
        case BK_POST: {
            if (s->k >= p) {
                for (int i = 0; i < p; i++)
                    zap_coll_copy(op, (char *)a->dst + (size_t)zap_pat_mod((long)r - i, p) * s->blk,
                                  s->tmp + (size_t)i * s->blk, s->blk);
                s->state = BK_DONE;
                break;
            }
            size_t n = 0;
            for (int i = 0; i < p; i++)
                if (i & s->k)
                    zap_coll_copy(op, s->spack + n++ * s->blk, s->tmp + (size_t)i * s->blk, s->blk);
            if ((st = zap_coll_recv(op, zap_pat_mod((long)r - s->k, p), PHASE, s->step, s->rpack, n * s->blk, NULL,
                                    NULL)) != ZAP_OK ||
                (st = zap_coll_send(op, zap_pat_mod((long)r + s->k, p), PHASE, s->step, s->spack, n * s->blk)) !=
                    ZAP_OK)
                return st;
            s->state = BK_WAIT;
            break;
        }
        case BK_WAIT: {
            if ((st = zap_coll_step_test(op)) != ZAP_OK)
                return st;
            size_t n = 0;
            for (int i = 0; i < p; i++)
                if (i & s->k)
                    zap_coll_copy(op, s->tmp + (size_t)i * s->blk, s->rpack + n++ * s->blk, s->blk);
            s->k <<= 1;
            s->step++;
            s->state = BK_POST;
            break;
        }
        case BK_DONE:
            return ZAP_OK;
        }
    }
}

zap_status_t zap_alltoall_bruck_init(zap_coll_op_t *op)
{
    const zap_coll_args_t *a = &op->args;
    bk_t *s = (bk_t *)op->alg_state;
    int p = op->comm->size;
    if (zap_a2a_is_v(a))
        return ZAP_ERR_UNSUPPORTED;
    memset(s, 0, sizeof(*s));
    s->blk = a->fixed * zap_dtype_size(a->dt);
    if (s->blk == 0) {
        op->progress = NULL;
        return ZAP_OK;
    }
    size_t half = ((size_t)p + 1) / 2;
    zap_status_t st = zap_coll_scratch(op, &op->scratch, ((size_t)p + 2 * half) * s->blk);
    if (st != ZAP_OK)
        return st;
    s->tmp = op->scratch.ptr;
    s->spack = s->tmp + (size_t)p * s->blk;
    s->rpack = s->spack + half * s->blk;
    s->state = BK_START;
    op->progress = bk_progress;
    return ZAP_OK;
}
