/* Recursive-doubling scan and exscan (MPICH's): in step k (mask 2^k) rank r
 * exchanges its partial, the reduction over the aligned run of 2^k ranks
 * holding r, with r ^ mask (when that rank exists) and
 *   - where the partner is below: partial = theirs op partial, and the
 *     prefix result = theirs op result (exscan: the first one received
 *     starts it);
 *   - where it is above: partial = partial op theirs.
 * Every combination puts the lower ranks' operand first and each run is
 * contiguous, so results are in rank order for every op: rank r gets
 * ((x0 op x1) op ...) op xr (scan) or up to x(r-1) (exscan) with the
 * parenthesisation of the runs. ceil(log2 p) rounds of n bytes each; chosen
 * for small and medium vectors. Scratch: the partial and a received vector. */
#include "coll/scan/scan.h"
#include "coll/comm_impl.h"
#include "coll/engine/mem.h"
#include "coll/engine/step.h"
#include <string.h>

#define PHASE 1

typedef enum srd_state { SRD_START, SRD_POST, SRD_WAIT, SRD_DONE } srd_state_t;

typedef struct srd {
    srd_state_t state;
    char *partial, *tmp;
    size_t bytes;
    int mask, step;
    bool exclusive, started; /* exscan; its result has a first operand */
} srd_t;
_Static_assert(sizeof(srd_t) <= ZAP_COLL_ALG_STATE_BYTES, "state too large");

static zap_status_t srd_progress(zap_coll_op_t *op)
{
    srd_t *s = (srd_t *)op->alg_state;
    const zap_coll_args_t *a = &op->args;
    int r = op->comm->rank, p = op->comm->size;
    zap_status_t st;
    for (;;) {
        switch (s->state) {
        case SRD_START:
            zap_coll_copy(op, s->partial, a->src, s->bytes);
            if (!s->exclusive)
                zap_coll_copy(op, a->dst, a->src, s->bytes); /* in place: the same buffer */
            s->mask = 1;
            s->state = SRD_POST;
            break;
        case SRD_POST: {
            while (s->mask < p && (r ^ s->mask) >= p) { /* no partner in this step */
                s->mask <<= 1;
                s->step++;
            }
            if (s->mask >= p) {
                s->state = SRD_DONE;
                break;
            }
            int partner = r ^ s->mask;
            if ((st = zap_coll_recv(op, partner, PHASE, s->step, s->tmp, s->bytes, NULL, NULL)) != ZAP_OK ||
                (st = zap_coll_send(op, partner, PHASE, s->step, s->partial, s->bytes)) != ZAP_OK)
                return st;
            s->state = SRD_WAIT;
            break;
        }
        case SRD_WAIT: {
            if ((st = zap_coll_step_test(op)) != ZAP_OK)
                return st;
            int partner = r ^ s->mask;
            size_t n = a->count;
            if (partner < r) {
                if (s->exclusive && !s->started) {
                    zap_coll_copy(op, a->dst, s->tmp, s->bytes);
                    s->started = true;
                } else if ((st = zap_coll_reduce(op, a->dt, a->op, a->dst, s->tmp, a->dst, n)) != ZAP_OK) {
                    return st;
                }
                st = zap_coll_reduce(op, a->dt, a->op, s->partial, s->tmp, s->partial, n);
            } else {
                st = zap_coll_reduce(op, a->dt, a->op, s->partial, s->partial, s->tmp, n);
            }
            if (st != ZAP_OK)
                return st;
            s->mask <<= 1;
            s->step++;
            s->state = SRD_POST;
            break;
        }
        case SRD_DONE:
            return ZAP_OK;
        }
    }
}

zap_status_t zap_scan_rd_init(zap_coll_op_t *op)
{
    const zap_coll_args_t *a = &op->args;
    srd_t *s = (srd_t *)op->alg_state;
    memset(s, 0, sizeof(*s));
    s->bytes = a->bytes;
    s->exclusive = op->kind == ZAP_COLL_EXSCAN;
    if (s->bytes == 0 || (op->comm->size == 1 && s->exclusive)) {
        op->progress = NULL;
        return ZAP_OK;
    }
    zap_status_t st = zap_coll_scratch(op, &op->scratch, 2 * s->bytes);
    if (st != ZAP_OK)
        return st;
    s->partial = op->scratch.ptr;
    s->tmp = s->partial + s->bytes;
    s->state = SRD_START;
    op->progress = srd_progress;
    return ZAP_OK;
}
