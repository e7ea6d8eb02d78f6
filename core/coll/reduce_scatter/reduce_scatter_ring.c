/* Ring reduce-scatter (the first half of the ring allreduce, Patarasuk &
 * Yuan 2009, shifted so that rank r ends with its own part): in step s
 * (0 <= s < p-1) rank r sends the partial of part (r - s - 1) mod p to its
 * right neighbour and receives that of part (r - s - 2) mod p from its left,
 * combining it with its own input of that part. After p-1 steps the last
 * part received is r's own, complete.
 *
 * Reduction order: part b accumulates along the ring from rank b + 1,
 * ((x[b+1] op x[b+2]) op ...) op x[b], the incoming partial on the left: not
 * rank order, so commutative ops only (ZAP_COLL_PRED_COMMUTATIVE). Each
 * part is computed on one rank. Cost: p-1 rounds, (p-1)/p n bytes sent per
 * rank, the least any algorithm sends; scratch two of the largest part. */
#include "coll/reduce_scatter/reduce_scatter.h"
#include "coll/comm_impl.h"
#include "coll/engine/mem.h"
#include "coll/engine/step.h"
#include "coll/patterns/patterns.h"
#include <string.h>

#define PHASE 1

typedef enum ring_state { RING_POST, RING_WAIT, RING_DONE } ring_state_t;

typedef struct rs_ring {
    ring_state_t state;
    const char *src;
    char *dst;
    char *tmp[2];
    size_t es;
    zap_dtype_t dt;
    zap_op_t zop;
    int step, rb;
    bool in_place;
} rs_ring_t;
_Static_assert(sizeof(rs_ring_t) <= ZAP_COLL_ALG_STATE_BYTES, "state too large");

static zap_status_t ring_progress(zap_coll_op_t *op)
{
    rs_ring_t *s = (rs_ring_t *)op->alg_state;
    const zap_coll_args_t *a = &op->args;
    int r = op->comm->rank, p = op->comm->size;
    zap_status_t st;
    for (;;) {
        switch (s->state) {
        case RING_POST: {
            int sb = zap_pat_mod((long)r - s->step - 1, p);
            s->rb = zap_pat_mod((long)r - s->step - 2, p);
            const char *out = s->step == 0 ? s->src + zap_rs_offset(a, sb) * s->es : s->tmp[(s->step - 1) & 1];
            int tag = s->step & ZAP_COLL_STEP_MAX;
            if ((st = zap_coll_recv(op, zap_pat_mod(r - 1, p), PHASE, tag, s->tmp[s->step & 1],
                                    zap_rs_count(a, s->rb) * s->es, NULL, NULL)) != ZAP_OK ||
                (st = zap_coll_send(op, zap_pat_mod(r + 1, p), PHASE, tag, out, zap_rs_count(a, sb) * s->es)) !=
                    ZAP_OK)
                return st;
            s->state = RING_WAIT;
            break;
        }
        case RING_WAIT: {
            if ((st = zap_coll_step_test(op)) != ZAP_OK)
                return st;
            char *in = s->tmp[s->step & 1];
            bool last = s->step == p - 2;
            /* The last part is this rank's own: into recvbuf, except in place,
             * where recvbuf's start may overlap the input part still read. */
            char *to = last && !s->in_place ? s->dst : in;
            size_t n = zap_rs_count(a, s->rb);
            if ((st = zap_coll_reduce(op, s->dt, s->zop, to, in, s->src + zap_rs_offset(a, s->rb) * s->es, n)) !=
                ZAP_OK)
                return st;
            if (last) {
                if (to != s->dst)
                    zap_coll_copy(op, s->dst, to, n * s->es);
                s->state = RING_DONE;
                break;
            }
            s->step++;
            s->state = RING_POST;
            break;
        }
        case RING_DONE:
            return ZAP_OK;
        }
    }
}

zap_status_t zap_reduce_scatter_ring_init(zap_coll_op_t *op)
{
    const zap_coll_args_t *a = &op->args;
    rs_ring_t *s = (rs_ring_t *)op->alg_state;
    int p = op->comm->size;
    memset(s, 0, sizeof(*s));
    if (a->count == 0) {
        op->progress = NULL;
        return ZAP_OK;
    }
    s->src = a->src;
    s->dst = a->dst;
    s->es = zap_dtype_size(a->dt);
    s->dt = a->dt;
    s->zop = a->op;
    s->in_place = a->src == a->dst;
    if (p == 1) {
        zap_coll_copy(op, s->dst, s->src, zap_rs_count(a, 0) * s->es);
        op->progress = NULL;
        return ZAP_OK;
    }
    size_t most = 0;
    for (int q = 0; q < p; q++)
        most = zap_rs_count(a, q) > most ? zap_rs_count(a, q) : most;
    zap_status_t st = zap_coll_scratch(op, &op->scratch, 2 * most * s->es);
    if (st != ZAP_OK)
        return st;
    s->tmp[0] = op->scratch.ptr;
    s->tmp[1] = s->tmp[0] + most * s->es;
    s->state = RING_POST;
    op->progress = ring_progress;
    return ZAP_OK;
}
