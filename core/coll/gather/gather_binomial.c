/* Binomial-tree gather (gather only: it needs every rank's count, which
 * gatherv gives only to the root). Over virtual ranks vr = rank - root
 * (mod p), vr gathers the blocks of its subtree [vr, vr + lowbit(vr)) in
 * virtual-rank order, its own first, receiving each child's subtree at once
 * into place, and sends the whole run to its parent: ceil(log2 p) rounds,
 * the root receiving log2(p) messages instead of p - 1, at the cost of
 * forwarding blocks through the inner ranks (about n/2 log2(p) bytes per
 * inner rank). Chosen for small blocks, where the rounds cost more than the
 * bytes. The root receives straight into recvbuf when it is rank 0, else
 * into scratch that it rotates into rank order at the end. */
#include "coll/gather/gather.h"
#include "coll/comm_impl.h"
#include "coll/engine/mem.h"
#include "coll/engine/step.h"
#include "coll/patterns/patterns.h"
#include <string.h>

#define PHASE 1

typedef enum bg_state { BG_START, BG_RECV_WAIT, BG_SEND_WAIT, BG_DONE } bg_state_t;

typedef struct bg {
    bg_state_t state;
    char *buf;  /* the subtree's blocks in virtual-rank order */
    size_t blk; /* bytes per block */
    int vr, end;
} bg_t;
_Static_assert(sizeof(bg_t) <= ZAP_COLL_ALG_STATE_BYTES, "state too large");

static zap_status_t bg_progress(zap_coll_op_t *op)
{
    bg_t *s = (bg_t *)op->alg_state;
    const zap_coll_args_t *a = &op->args;
    int p = op->comm->size, root = a->root;
    zap_status_t st;
    for (;;) {
        switch (s->state) {
        case BG_START:
            if (s->vr != 0 && s->end == s->vr + 1) { /* a leaf: its block straight up */
                int parent = zap_pat_realrank(zap_pat_binomial_parent(s->vr), root, p);
                if ((st = zap_coll_send(op, parent, PHASE, 0, a->src, s->blk)) != ZAP_OK)
                    return st;
                s->state = BG_SEND_WAIT;
                break;
            }
            if (a->src != NULL && (s->vr != 0 || s->buf == a->dst)) /* the root's own block: at the end */
                zap_coll_copy(op, s->buf, a->src, s->blk);
            for (int m = zap_pat_binomial_top(s->vr, p); m > 0; m >>= 1) {
                int c = s->vr + m;
                if (c >= p)
                    continue;
                size_t n = (size_t)(zap_pat_subtree_end(c, p) - c) * s->blk;
                st = zap_coll_recv(op, zap_pat_realrank(c, root, p), PHASE, 0, s->buf + (size_t)m * s->blk, n, NULL,
                                   NULL);
                if (st != ZAP_OK)
                    return st;
            }
            s->state = BG_RECV_WAIT;
            break;
        case BG_RECV_WAIT:
            if ((st = zap_coll_step_test(op)) != ZAP_OK)
                return st;
            if (s->vr == 0) {
                if (s->buf != a->dst) { /* virtual order to rank order */
                    size_t up = (size_t)(p - root);
                    char *dst = a->dst;
                    zap_coll_copy(op, dst + ((size_t)root + 1) * s->blk, s->buf + s->blk, (up - 1) * s->blk);
                    zap_coll_copy(op, dst, s->buf + up * s->blk, (size_t)root * s->blk);
                    if (a->src != NULL) /* not in place: the root's own block */
                        zap_coll_copy(op, dst + (size_t)root * s->blk, a->src, s->blk);
                }
                s->state = BG_DONE;
                break;
            }
            st = zap_coll_send(op, zap_pat_realrank(zap_pat_binomial_parent(s->vr), root, p), PHASE, 0, s->buf,
                               (size_t)(s->end - s->vr) * s->blk);
            if (st != ZAP_OK)
                return st;
            s->state = BG_SEND_WAIT;
            break;
        case BG_SEND_WAIT:
            if ((st = zap_coll_step_test(op)) != ZAP_OK)
                return st;
            s->state = BG_DONE;
            break;
        case BG_DONE:
            return ZAP_OK;
        }
    }
}

zap_status_t zap_gather_binomial_init(zap_coll_op_t *op)
{
    const zap_coll_args_t *a = &op->args;
    bg_t *s = (bg_t *)op->alg_state;
    int p = op->comm->size, rank = op->comm->rank;
    if (zap_ga_is_v(a))
        return ZAP_ERR_UNSUPPORTED;
    memset(s, 0, sizeof(*s));
    s->blk = a->fixed * zap_dtype_size(a->dt);
    if (s->blk == 0) {
        op->progress = NULL;
        return ZAP_OK;
    }
    s->vr = zap_pat_vrank(rank, a->root, p);
    s->end = zap_pat_subtree_end(s->vr, p);
    s->state = BG_START;
    op->progress = bg_progress;
    if (s->vr == 0 && a->root == 0) {
        s->buf = a->dst; /* virtual order is rank order: straight into place */
        return ZAP_OK;
    }
    if (s->vr != 0 && s->end == s->vr + 1)
        return ZAP_OK; /* a leaf needs no buffer */
    zap_status_t st = zap_coll_scratch(op, &op->scratch, (size_t)(s->end - s->vr) * s->blk);
    if (st != ZAP_OK)
        return st;
    s->buf = op->scratch.ptr;
    return ZAP_OK;
}
