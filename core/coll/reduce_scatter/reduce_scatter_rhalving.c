/* Reduce-scatter by recursive halving, in rank order for every op.
 *
 * Ranks fold to a power of two pof2 first, as the recursive-doubling
 * algorithms do: of the first 2 rem ranks (rem = p - pof2) each even one
 * sends its whole input to the odd one above it, which combines
 * x[even] op x[odd] and from then on stands for both (newrank i < rem is the
 * pair 2i, 2i+1; newrank i >= rem is rank i + rem). newrank i's "unit" is
 * the part of its rank, or of its pair's two ranks, which are adjacent in
 * the vector.
 *
 * The halving is Rabenseifner's (allreduce_rabenseifner.c): in step k
 * (mask 2^k, increasing) newrank r and r ^ mask split the range they share,
 * r keeping the lower half when its bit k is clear, and each combines the
 * other's partial of its half into its own, the lower newranks' partial
 * first. With increasing masks, after step k a partial covers a contiguous
 * run of 2^(k+1) newranks, and a lower newrank is a lower rank: the result
 * is in rank order, so non-commutative ops run here. After the last step
 * newrank r holds range position bitrev(r). So the units are laid out in
 * that order before the first step: position q holds the unit of newrank
 * bitrev(q), and every rank ends holding its own unit, with no final
 * exchange. The layout costs nothing extra: the work vector is a copy of the
 * input either way (the input is the caller's and stays untouched).
 *
 * Finally a pair's odd rank sends the even one its part. Cost: log2(pof2)
 * rounds (+2 on folded pairs), (1 - 1/pof2) n bytes sent per rank; each
 * element is computed once. Scratch: two vectors and the unit offsets. */
#include "coll/reduce_scatter/reduce_scatter.h"
#include "coll/comm_impl.h"
#include "coll/engine/mem.h"
#include "coll/engine/step.h"
#include "coll/patterns/patterns.h"
#include <string.h>

#define PHASE 1
#define STEP_FOLD 0
#define STEP_HALVE 1
#define STEP_UNFOLD ZAP_COLL_STEP_MAX

typedef enum rh_state { RH_START, RH_FOLD_WAIT, RH_HALVE_POST, RH_HALVE_WAIT, RH_UNFOLD_WAIT, RH_DONE } rh_state_t;

typedef struct rh {
    rh_state_t state;
    const char *src;
    char *dst;
    char *w;       /* the work vector, units in bit-reversed order */
    char *tmp;     /* received data */
    size_t *pos;   /* pos[q]: where position q starts in w (elements); pos[pof2]: the end */
    size_t es;
    zap_dtype_t dt;
    zap_op_t zop;
    int pof2, bits, rem, newrank, mask, partner;
    size_t recv_off, recv_cnt;
} rh_t;
_Static_assert(sizeof(rh_t) <= ZAP_COLL_ALG_STATE_BYTES, "state too large");

static int bitrev(int x, int bits)
{
    int y = 0;
    for (int b = 0; b < bits; b++)
        y |= ((x >> b) & 1) << (bits - 1 - b);
    return y;
}

/* The element range of newrank nr's unit in the caller's layout. */
static void unit(const zap_coll_args_t *a, const rh_t *s, int nr, size_t *off, size_t *cnt)
{
    int lo = nr < s->rem ? 2 * nr : nr + s->rem, hi = nr < s->rem ? 2 * nr + 2 : nr + s->rem + 1;
    *off = zap_rs_offset(a, lo);
    *cnt = 0;
    for (int q = lo; q < hi; q++)
        *cnt += zap_rs_count(a, q);
}

/* w = the input in position order, combined with the folded partner's
 * (in, the caller's layout) where there is one: in op src, the even rank
 * first. */
static zap_status_t lay_out(zap_coll_op_t *op, rh_t *s, const char *in)
{
    const zap_coll_args_t *a = &op->args;
    for (int q = 0; q < s->pof2; q++) {
        size_t off, cnt;
        unit(a, s, bitrev(q, s->bits), &off, &cnt);
        char *to = s->w + s->pos[q] * s->es;
        if (in == NULL) {
            zap_coll_copy(op, to, s->src + off * s->es, cnt * s->es);
        } else {
            zap_status_t st = zap_coll_reduce(op, s->dt, s->zop, to, in + off * s->es, s->src + off * s->es, cnt);
            if (st != ZAP_OK)
                return st;
        }
    }
    return ZAP_OK;
}

static zap_status_t halve_post(zap_coll_op_t *op, rh_t *s, int p)
{
    int lo, hi;
    zap_pat_halving_range(s->pof2, s->newrank, s->mask, &lo, &hi);
    int mid = lo + (hi - lo) / 2;
    bool upper = (s->newrank & s->mask) != 0;
    int keep_lo = upper ? mid : lo, keep_hi = upper ? hi : mid, send_lo = upper ? lo : mid, send_hi = upper ? mid : hi;
    s->partner = zap_pat_rd_realrank(s->newrank ^ s->mask, p);
    s->recv_off = s->pos[keep_lo];
    s->recv_cnt = s->pos[keep_hi] - s->pos[keep_lo];
    int step = STEP_HALVE;
    for (int m = s->mask; m > 1; m >>= 1)
        step++;
    zap_status_t st = zap_coll_recv(op, s->partner, PHASE, step, s->tmp + s->recv_off * s->es, s->recv_cnt * s->es,
                                    NULL, NULL);
    if (st == ZAP_OK)
        st = zap_coll_send(op, s->partner, PHASE, step, s->w + s->pos[send_lo] * s->es,
                           (s->pos[send_hi] - s->pos[send_lo]) * s->es);
    return st;
}

/* The last step is done: this rank's unit is at position bitrev(newrank). */
static zap_status_t deliver(zap_coll_op_t *op, rh_t *s)
{
    const zap_coll_args_t *a = &op->args;
    int rank = op->comm->rank;
    const char *mine = s->w + s->pos[bitrev(s->newrank, s->bits)] * s->es;
    if (rank < 2 * s->rem) { /* the pair's unit: the even rank's part first */
        size_t even = zap_rs_count(a, rank - 1);
        zap_coll_copy(op, s->dst, mine + even * s->es, zap_rs_count(a, rank) * s->es);
        zap_status_t st = zap_coll_send(op, rank - 1, PHASE, STEP_UNFOLD, mine, even * s->es);
        if (st != ZAP_OK)
            return st;
        s->state = RH_UNFOLD_WAIT;
        return ZAP_OK;
    }
    zap_coll_copy(op, s->dst, mine, zap_rs_count(a, rank) * s->es);
    s->state = RH_DONE;
    return ZAP_OK;
}

static zap_status_t rh_progress(zap_coll_op_t *op)
{
    rh_t *s = (rh_t *)op->alg_state;
    const zap_coll_args_t *a = &op->args;
    int rank = op->comm->rank, p = op->comm->size;
    zap_status_t st;
    for (;;) {
        switch (s->state) {
        case RH_START:
            if (rank < 2 * s->rem) {
                if (s->newrank < 0)
                    st = zap_coll_send(op, rank + 1, PHASE, STEP_FOLD, s->src, a->count * s->es);
                else
                    st = zap_coll_recv(op, rank - 1, PHASE, STEP_FOLD, s->tmp, a->count * s->es, NULL, NULL);
                if (st != ZAP_OK)
                    return st;
                s->state = RH_FOLD_WAIT;
                break;
            }
            if ((st = lay_out(op, s, NULL)) != ZAP_OK)
                return st;
            s->mask = 1;
            s->state = RH_HALVE_POST;
            break;
        case RH_FOLD_WAIT:
            if ((st = zap_coll_step_test(op)) != ZAP_OK)
                return st;
            if (s->newrank < 0) { /* folded out: this rank's part comes back from its partner */
                st = zap_coll_recv(op, rank + 1, PHASE, STEP_UNFOLD, s->dst, zap_rs_count(a, rank) * s->es, NULL,
                                   NULL);
                if (st != ZAP_OK)
                    return st;
                s->state = RH_UNFOLD_WAIT;
                break;
            }
            if ((st = lay_out(op, s, s->tmp)) != ZAP_OK)
                return st;
            s->mask = 1;
            s->state = RH_HALVE_POST;
            break;
        case RH_HALVE_POST:
            if (s->mask >= s->pof2) {
                if ((st = deliver(op, s)) != ZAP_OK)
                    return st;
                break;
            }
            if ((st = halve_post(op, s, p)) != ZAP_OK)
                return st;
            s->state = RH_HALVE_WAIT;
            break;
        case RH_HALVE_WAIT: {
            if ((st = zap_coll_step_test(op)) != ZAP_OK)
                return st;
            char *mine = s->w + s->recv_off * s->es, *theirs = s->tmp + s->recv_off * s->es;
            bool theirs_lower = s->partner < rank;
            st = zap_coll_reduce(op, s->dt, s->zop, mine, theirs_lower ? theirs : mine, theirs_lower ? mine : theirs,
                                 s->recv_cnt);
            if (st != ZAP_OK)
                return st;
            s->mask <<= 1;
            s->state = RH_HALVE_POST;
            break;
        }
        case RH_UNFOLD_WAIT:
            if ((st = zap_coll_step_test(op)) != ZAP_OK)
                return st;
            s->state = RH_DONE;
            break;
        case RH_DONE:
            return ZAP_OK;
        }
    }
}

zap_status_t zap_reduce_scatter_rhalving_init(zap_coll_op_t *op)
{
    const zap_coll_args_t *a = &op->args;
    rh_t *s = (rh_t *)op->alg_state;
    int rank = op->comm->rank, p = op->comm->size;
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
    s->pof2 = zap_pat_pof2(p);
    for (int q = s->pof2; q > 1; q >>= 1)
        s->bits++;
    s->rem = p - s->pof2;
    s->newrank = zap_pat_rd_newrank(rank, p);
    s->state = RH_START;
    if (p == 1) {
        zap_coll_copy(op, s->dst, s->src, a->count * s->es);
        op->progress = NULL;
        return ZAP_OK;
    }
    if (s->newrank >= 0) {
        /* The table rounded to 64 bytes, so the vectors after it keep the
         * pool buffer's alignment (the kernels read complex128 as double2). */
        size_t vec = a->count * s->es, table = (((size_t)s->pof2 + 1) * sizeof(size_t) + 63) & ~(size_t)63;
        zap_status_t st = zap_coll_scratch(op, &op->scratch, table + 2 * vec);
        if (st != ZAP_OK)
            return st;
        /* The offsets first: the pool's buffers are aligned for them. */
        s->pos = op->scratch.ptr;
        s->w = (char *)op->scratch.ptr + table;
        s->tmp = s->w + vec;
        s->pos[0] = 0;
        for (int q = 0; q < s->pof2; q++) {
            size_t off, cnt;
            unit(a, s, bitrev(q, s->bits), &off, &cnt);
            s->pos[q + 1] = s->pos[q] + cnt;
        }
    }
    op->progress = rh_progress;
    return ZAP_OK;
}
