/* Linear gather(v): every rank sends its block to the root, which posts all
 * the receives at once (in batches of ZAP_COLL_MAX_REQS) straight into
 * place; the root's link carries (p-1)/p of the result once, the least
 * possible, and one round.
 *
 * gatherv's counts are the root's alone, so a rank sending another count
 * shows only at the root (a truncated or short message). A second header
 * exchange after the data (tag phase 3, as scatterv's) carries that to every
 * rank: the root returns ZAP_ERR_INVALID_PARAM, the others ZAP_ERR_MISMATCH.
 * gather's count is agreed before anything moves and needs none. */
#include "coll/gather/gather.h"
#include "coll/comm_impl.h"
#include "coll/engine/mem.h"
#include "coll/engine/step.h"
#include "base/log.h"
#include <string.h>

#define PHASE_DATA 1
#define PHASE_STATUS 3

typedef enum lin_state { LIN_START, LIN_POST, LIN_WAIT, LIN_SEND_WAIT, LIN_STATUS, LIN_DONE } lin_state_t;

typedef struct lin {
    lin_state_t state;
    int next, first; /* the root's next rank to post, and the batch's first */
    size_t es;
    bool bad;
    size_t *len;          /* v-form root: each batch's received lengths (scratch) */
    zap_status_t *rst;    /* and statuses */
} lin_t;
_Static_assert(sizeof(lin_t) <= ZAP_COLL_ALG_STATE_BYTES, "state too large");

/* The batch's receives came in: each must have carried exactly its count
 * (a transport error is the call's). */
static zap_status_t check_batch(zap_coll_op_t *op, lin_t *s, int upto)
{
    const zap_coll_args_t *a = &op->args;
    for (int r = s->first, i = 0; r < upto; r++) {
        if (r == op->comm->rank)
            continue;
        zap_status_t st = s->rst[i];
        if (st != ZAP_OK && st != ZAP_ERR_TRUNCATED)
            return st;
        if (st == ZAP_ERR_TRUNCATED || s->len[i] != zap_ga_count(a, r) * s->es) {
            zap_error("coll: rank %d: gatherv: rank %d sent %s than counts[%d] = %zu elements", op->comm->rank, r,
                      st == ZAP_ERR_TRUNCATED ? "more" : "fewer", r, zap_ga_count(a, r));
            s->bad = true;
        }
        i++;
    }
    return ZAP_OK;
}

static zap_status_t lin_progress(zap_coll_op_t *op)
{
    lin_t *s = (lin_t *)op->alg_state;
    const zap_coll_args_t *a = &op->args;
    int rank = op->comm->rank, p = op->comm->size;
    zap_status_t st;
    for (;;) {
        switch (s->state) {
        case LIN_START:
            if (rank != a->root) {
                if ((st = zap_coll_send(op, a->root, PHASE_DATA, 0, a->src, a->count * s->es)) != ZAP_OK)
                    return st;
                s->state = LIN_SEND_WAIT;
                break;
            }
            if (a->src != NULL) /* not in place: the root's own block */
                zap_coll_copy(op, (char *)a->dst + zap_ga_displ(a, rank) * (ptrdiff_t)s->es, a->src,
                              zap_ga_count(a, rank) * s->es);
            s->next = 0;
            s->state = LIN_POST;
            break;
        case LIN_POST: {
            s->first = s->next;
            int i = 0;
            while (s->next < p && op->nreqs < ZAP_COLL_MAX_REQS) {
                int r = s->next++;
                if (r == rank)
                    continue;
                char *at = (char *)a->dst + zap_ga_displ(a, r) * (ptrdiff_t)s->es;
                st = zap_coll_recv(op, r, PHASE_DATA, 0, at, zap_ga_count(a, r) * s->es, s->len ? &s->len[i] : NULL,
                                   s->rst ? &s->rst[i] : NULL);
                if (st != ZAP_OK)
                    return st;
                i++;
            }
            s->state = LIN_WAIT;
            break;
        }
        case LIN_WAIT:
            if ((st = zap_coll_step_test(op)) != ZAP_OK)
                return st;
            if (s->len != NULL && (st = check_batch(op, s, s->next)) != ZAP_OK)
                return st;
            s->state = s->next < p ? LIN_POST : zap_ga_is_v(a) ? LIN_STATUS : LIN_DONE;
            break;
        case LIN_SEND_WAIT:
            if ((st = zap_coll_step_test(op)) != ZAP_OK)
                return st;
            s->state = zap_ga_is_v(a) ? LIN_STATUS : LIN_DONE;
            break;
        case LIN_STATUS:
            /* Every rank learns whether the root saw a wrong count. */
            if (s->bad)
                zap_coll_agree_mark_bad_own(&op->hdr_own, op->comm->rank);
            if ((st = zap_coll_agree_init(op, ZAP_COLL_FORM_RD, PHASE_STATUS, NULL, 0, ZAP_DT_UINT8, ZAP_OP_SUM)) !=
                ZAP_OK)
                return st;
            s->state = LIN_DONE;
            break;
        case LIN_DONE:
            if (!zap_ga_is_v(a))
                return ZAP_OK;
            st = zap_coll_agree_progress(op);
            return st == ZAP_ERR_MISMATCH && s->bad ? ZAP_ERR_INVALID_PARAM : st;
        }
    }
}

zap_status_t zap_gather_linear_init(zap_coll_op_t *op)
{
    const zap_coll_args_t *a = &op->args;
    lin_t *s = (lin_t *)op->alg_state;
    memset(s, 0, sizeof(*s));
    s->es = zap_dtype_size(a->dt);
    if (!zap_ga_is_v(a) && a->fixed == 0) {
        op->progress = NULL;
        return ZAP_OK;
    }
    if (a->counts != NULL && op->comm->rank == a->root && op->comm->size > 1) {
        size_t n = ZAP_COLL_MAX_REQS;
        zap_status_t st = zap_coll_scratch(op, &op->scratch, n * (sizeof(size_t) + sizeof(zap_status_t)));
        if (st != ZAP_OK)
            return st;
        s->len = op->scratch.ptr;
        s->rst = (zap_status_t *)(s->len + n);
    }
    s->state = LIN_START;
    op->progress = lin_progress;
    return ZAP_OK;
}
