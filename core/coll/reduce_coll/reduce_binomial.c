/* Binomial-tree reduce: every rank combines what its subtree sends into its
 * own vector and passes the result to its parent, so the root has the whole
 * reduction after ceil(log2 p) rounds of n bytes. The root's links carry the
 * most (one message per child); chosen for small vectors.
 *
 * The tree is rooted at the call's root over virtual ranks vr = rank - root
 * (mod p) for commutative ops; vr's children are vr + 1, vr + 2, vr + 4, ...
 * below lowbit(vr), each child's subtree the virtual ranks
 * [vr + m, vr + 2m). A node receives its children one at a time, smallest
 * first (the one that finishes first), and combines acc = acc op child: its
 * own vector first, then the subtrees in increasing virtual rank, so the
 * result is ((x_vr op T(vr+1)) op T(vr+2)) op T(vr+4) ... with T(c) the
 * same expression at c; in rank order when the root is 0.
 *
 * A non-commutative op needs exactly rank order: the tree is then rooted at
 * rank 0 and, when the call's root is another rank, rank 0 sends it the
 * result (one more hop). Only the root holds the result, so there is nothing
 * to replicate; the order fixes its bytes. Scratch: a received vector and,
 * on inner ranks other than the root, an accumulator. */
#include "coll/reduce_coll/reduce_coll.h"
#include "coll/comm_impl.h"
#include "coll/engine/mem.h"
#include "coll/engine/step.h"
#include "coll/patterns/patterns.h"
#include "coll/reduce/reduce.h"
#include <string.h>

#define PHASE_TREE 1
#define PHASE_FINAL 2

typedef enum bin_state { BIN_CHILD_POST, BIN_CHILD_WAIT, BIN_UP, BIN_UP_WAIT, BIN_FINAL_WAIT, BIN_DONE } bin_state_t;

typedef struct bin_reduce {
    bin_state_t state;
    const char *src;
    char *dst;
    char *acc; /* the partial once a child was combined: dst on the tree's root when it is the call's root */
    char *tmp; /* a child's partial */
    size_t count, bytes;
    zap_dtype_t dt;
    zap_op_t zop;
    int root, tree_root, vr, m, lim;
    bool reduced; /* acc holds the partial (else src alone is it) */
} bin_reduce_t;
_Static_assert(sizeof(bin_reduce_t) <= ZAP_COLL_ALG_STATE_BYTES, "state too large");

static const char *partial(const bin_reduce_t *s) { return s->reduced ? s->acc : s->src; }

static zap_status_t bin_progress(zap_coll_op_t *op)
{
    bin_reduce_t *s = (bin_reduce_t *)op->alg_state;
    int rank = op->comm->rank, p = op->comm->size;
    zap_status_t st;
    for (;;) {
        switch (s->state) {
        case BIN_CHILD_POST:
            if (s->m >= s->lim || s->vr + s->m >= p) {
                s->state = BIN_UP;
                break;
            }
            st = zap_coll_recv(op, zap_pat_realrank(s->vr + s->m, s->tree_root, p), PHASE_TREE, 0, s->tmp, s->bytes,
                               NULL, NULL);
            if (st != ZAP_OK)
                return st;
            s->state = BIN_CHILD_WAIT;
            break;
        case BIN_CHILD_WAIT:
            if ((st = zap_coll_step_test(op)) != ZAP_OK)
                return st;
            if ((st = zap_coll_reduce(op, s->dt, s->zop, s->acc, partial(s), s->tmp, s->count)) != ZAP_OK)
                return st;
            s->reduced = true;
            s->m <<= 1;
            s->state = BIN_CHILD_POST;
            break;
        case BIN_UP:
            if (s->vr != 0) {
                int parent = zap_pat_realrank(zap_pat_binomial_parent(s->vr), s->tree_root, p);
                if ((st = zap_coll_send(op, parent, PHASE_TREE, 0, partial(s), s->bytes)) != ZAP_OK)
                    return st;
                s->state = BIN_UP_WAIT;
                break;
            }
            if (s->tree_root == s->root) { /* the result is here: in dst unless nothing was combined */
                if (partial(s) != s->dst)
                    zap_coll_copy(op, s->dst, partial(s), s->bytes);
                s->state = BIN_DONE;
                break;
            }
            /* Rank 0 of a non-commutative tree hands the result to the root. */
            if ((st = zap_coll_send(op, s->root, PHASE_FINAL, 0, partial(s), s->bytes)) != ZAP_OK)
                return st;
            s->state = BIN_FINAL_WAIT;
            break;
        case BIN_UP_WAIT:
            if ((st = zap_coll_step_test(op)) != ZAP_OK)
                return st;
            if (rank != s->root || s->tree_root == s->root) {
                s->state = BIN_DONE;
                break;
            }
            st = zap_coll_recv(op, s->tree_root, PHASE_FINAL, 0, s->dst, s->bytes, NULL, NULL);
            if (st != ZAP_OK)
                return st;
            s->state = BIN_FINAL_WAIT;
            break;
        case BIN_FINAL_WAIT:
            if ((st = zap_coll_step_test(op)) != ZAP_OK)
                return st;
            s->state = BIN_DONE;
            break;
        case BIN_DONE:
            return ZAP_OK;
        }
    }
}

zap_status_t zap_reduce_binomial_init(zap_coll_op_t *op)
{
    const zap_coll_args_t *a = &op->args;
    bin_reduce_t *s = (bin_reduce_t *)op->alg_state;
    int rank = op->comm->rank, p = op->comm->size;
    memset(s, 0, sizeof(*s));
    if (a->bytes == 0) {
        op->progress = NULL; /* nothing moves: the agreement is the whole call */
        return ZAP_OK;
    }
    s->src = a->src;
    s->dst = a->dst;
    s->count = a->count;
    s->bytes = a->bytes;
    s->dt = a->dt;
    s->zop = a->op;
    s->root = a->root;
    s->tree_root = zap_op_commutative(a->op) ? a->root : 0;
    s->vr = zap_pat_vrank(rank, s->tree_root, p);
    s->lim = s->vr == 0 ? p : zap_pat_lowbit(s->vr);
    s->m = 1;
    s->state = BIN_CHILD_POST;
    bool children = s->vr + 1 < p && s->lim > 1;
    bool acc_is_dst = rank == s->root && s->tree_root == s->root;
    if (children) {
        zap_status_t st = zap_coll_scratch(op, &op->scratch, s->bytes * (acc_is_dst ? 1 : 2));
        if (st != ZAP_OK)
            return st;
        s->tmp = op->scratch.ptr;
        s->acc = acc_is_dst ? s->dst : s->tmp + s->bytes;
    }
    op->progress = bin_progress;
    return ZAP_OK;
}
