/* Rabenseifner's reduce: a reduce-scatter by recursive halving, then a
 * binomial gather of the reduced blocks to the root (Rabenseifner 2004;
 * Thakur, Rabenseifner & Gropp 2005; MPICH's reduce_scatter_gather).
 *
 * The halving is the one of the allreduce of the same name
 * (allreduce_rabenseifner.c): the vector in pof2 nearly equal blocks, the
 * rank counts that are not powers of two folded first (the even rank of each
 * of the first rem pairs hands its vector to the odd one), then in step k
 * (mask 2^k, increasing) newrank r keeps the half of its range on its side of
 * r ^ mask and combines the partner's half into it, the lower newranks'
 * partial first. After log2(pof2) steps newrank r holds one fully reduced
 * block (the bit-reversal of r, as it happens).
 *
 * The gather retraces the halving backwards towards the root's newrank nr:
 * with mask from pof2/2 down to 1, a rank whose bit differs from nr's sends
 * everything it holds (the range it held before halving step 2 mask) to
 * r ^ mask and is done; the other receives it beside its own, doubling its
 * range. The root ends with the whole vector; a root folded out in the first
 * step gets it from its odd partner, which stood in for it.
 *
 * Reduction order: x[even] op x[odd] in the fold, then the partial of the
 * lower newranks first in every halving step, which are the lower ranks: the
 * result is in rank order for every op, non-commutative ones included.
 * Each element is computed once. Cost: 2 log2(pof2) rounds (+2 where folded),
 * (p-1)/p n bytes sent per rank in each half, the reductions spread over all
 * ranks; scratch of two vectors on ranks other than the root (one there). */
#include "coll/reduce_coll/reduce_coll.h"
#include "coll/comm_impl.h"
#include "coll/engine/mem.h"
#include "coll/engine/step.h"
#include "coll/patterns/patterns.h"
#include <string.h>

#define PHASE 1
#define STEP_FOLD 0
#define STEP_HALVE 1
#define STEP_GATHER 64
#define STEP_UNFOLD ZAP_COLL_STEP_MAX

typedef enum rab_state {
    RAB_START,
    RAB_FOLD_WAIT,
    RAB_HALVE_POST,
    RAB_HALVE_WAIT,
    RAB_GATHER_POST,
    RAB_GATHER_WAIT,
    RAB_UNFOLD_WAIT,
    RAB_DONE
} rab_state_t;

typedef struct rab_reduce {
    rab_state_t state;
    const char *src;
    char *dst;
    char *buf; /* the work vector (dst on an active root) */
    char *tmp; /* received halves */
    size_t count, esize;
    zap_dtype_t dt;
    zap_op_t zop;
    int root, pof2, rem, newrank, nr_root, mask, partner;
    size_t recv_off, recv_cnt;
    bool sent; /* this rank sent its range in the gather: done */
} rab_reduce_t;
_Static_assert(sizeof(rab_reduce_t) <= ZAP_COLL_ALG_STATE_BYTES, "state too large");

static size_t disp(const rab_reduce_t *s, int i) { return zap_pat_block_disp(s->count, (size_t)s->pof2, (size_t)i); }

/* A halving step: send the half of the held range on the partner's side,
 * receive the partner's part of ours. */
static zap_status_t halve_post(zap_coll_op_t *op, rab_reduce_t *s, int p)
{
    int lo, hi;
    zap_pat_halving_range(s->pof2, s->newrank, s->mask, &lo, &hi);
    int mid = lo + (hi - lo) / 2;
    int keep_lo = s->newrank & s->mask ? mid : lo, keep_hi = s->newrank & s->mask ? hi : mid;
    int send_lo = s->newrank & s->mask ? lo : mid, send_hi = s->newrank & s->mask ? mid : hi;
    s->partner = zap_pat_rd_realrank(s->newrank ^ s->mask, p);
    s->recv_off = disp(s, keep_lo);
    s->recv_cnt = disp(s, keep_hi) - s->recv_off;
    int step = zap_pat_step_of(STEP_HALVE, s->mask);
    zap_status_t st = zap_coll_recv(op, s->partner, PHASE, step, s->tmp + s->recv_off * s->esize,
                                    s->recv_cnt * s->esize, NULL, NULL);
    if (st == ZAP_OK)
        st = zap_coll_send(op, s->partner, PHASE, step, s->buf + disp(s, send_lo) * s->esize,
                           (disp(s, send_hi) - disp(s, send_lo)) * s->esize);
    return st;
}

/* A gather step: the side away from the root sends what it holds. */
static zap_status_t gather_post(zap_coll_op_t *op, rab_reduce_t *s, int p)
{
    int pnr = s->newrank ^ s->mask, lo, hi;
    s->partner = zap_pat_rd_realrank(pnr, p);
    int step = zap_pat_step_of(STEP_GATHER, s->mask);
    if ((s->newrank & s->mask) != (s->nr_root & s->mask)) {
        zap_pat_halving_range(s->pof2, s->newrank, s->mask << 1, &lo, &hi);
        s->sent = true;
        return zap_coll_send(op, s->partner, PHASE, step, s->buf + disp(s, lo) * s->esize,
                             (disp(s, hi) - disp(s, lo)) * s->esize);
    }
    zap_pat_halving_range(s->pof2, pnr, s->mask << 1, &lo, &hi);
    return zap_coll_recv(op, s->partner, PHASE, step, s->buf + disp(s, lo) * s->esize,
                         (disp(s, hi) - disp(s, lo)) * s->esize, NULL, NULL);
}

static zap_status_t rab_progress(zap_coll_op_t *op)
{
    rab_reduce_t *s = (rab_reduce_t *)op->alg_state;
    int rank = op->comm->rank, p = op->comm->size;
    zap_status_t st;
    for (;;) {
        switch (s->state) {
        case RAB_START:
            if (rank < 2 * s->rem) {
                if (s->newrank < 0) /* folded: hand over the vector; the root waits for the result */
                    st = zap_coll_send(op, rank + 1, PHASE, STEP_FOLD, s->src, s->count * s->esize);
                else
                    st = zap_coll_recv(op, rank - 1, PHASE, STEP_FOLD, s->tmp, s->count * s->esize, NULL, NULL);
                if (st != ZAP_OK)
                    return st;
                s->state = RAB_FOLD_WAIT;
                break;
            }
            if (s->buf != s->src)
                zap_coll_copy(op, s->buf, s->src, s->count * s->esize);
            s->mask = 1;
            s->state = RAB_HALVE_POST;
            break;
        case RAB_FOLD_WAIT:
            if ((st = zap_coll_step_test(op)) != ZAP_OK)
                return st;
            if (s->newrank < 0) {
                if (rank != s->root) {
                    s->state = RAB_DONE;
                    break;
                }
                st = zap_coll_recv(op, rank + 1, PHASE, STEP_UNFOLD, s->dst, s->count * s->esize, NULL, NULL);
                if (st != ZAP_OK)
                    return st;
                s->state = RAB_UNFOLD_WAIT;
                break;
            }
            if ((st = zap_coll_reduce(op, s->dt, s->zop, s->buf, s->tmp, s->src, s->count)) != ZAP_OK)
                return st;
            s->mask = 1;
            s->state = RAB_HALVE_POST;
            break;
        case RAB_HALVE_POST:
            if (s->mask >= s->pof2) {
                s->mask = s->pof2 >> 1;
                s->state = RAB_GATHER_POST;
                break;
            }
            if ((st = halve_post(op, s, p)) != ZAP_OK)
                return st;
            s->state = RAB_HALVE_WAIT;
            break;
        case RAB_HALVE_WAIT: {
            if ((st = zap_coll_step_test(op)) != ZAP_OK)
                return st;
            char *mine = s->buf + s->recv_off * s->esize, *theirs = s->tmp + s->recv_off * s->esize;
            bool theirs_lower = s->partner < rank;
            st = zap_coll_reduce(op, s->dt, s->zop, mine, theirs_lower ? theirs : mine, theirs_lower ? mine : theirs,
                                 s->recv_cnt);
            if (st != ZAP_OK)
                return st;
            s->mask <<= 1;
            s->state = RAB_HALVE_POST;
            break;
        }
        case RAB_GATHER_POST:
            if (s->mask == 0) {
                /* The whole vector is here; a folded root gets it from its partner. */
                if (rank == s->root) {
                    s->state = RAB_DONE;
                    break;
                }
                if ((st = zap_coll_send(op, s->root, PHASE, STEP_UNFOLD, s->buf, s->count * s->esize)) != ZAP_OK)
                    return st;
                s->state = RAB_UNFOLD_WAIT;
                break;
            }
            if ((st = gather_post(op, s, p)) != ZAP_OK)
                return st;
            s->state = RAB_GATHER_WAIT;
            break;
        case RAB_GATHER_WAIT:
            if ((st = zap_coll_step_test(op)) != ZAP_OK)
                return st;
            if (s->sent) {
                s->state = RAB_DONE;
                break;
            }
            s->mask >>= 1;
            s->state = RAB_GATHER_POST;
            break;
        case RAB_UNFOLD_WAIT:
            if ((st = zap_coll_step_test(op)) != ZAP_OK)
                return st;
            s->state = RAB_DONE;
            break;
        case RAB_DONE:
            return ZAP_OK;
        }
    }
}

zap_status_t zap_reduce_rabenseifner_init(zap_coll_op_t *op)
{
    const zap_coll_args_t *a = &op->args;
    rab_reduce_t *s = (rab_reduce_t *)op->alg_state;
    int rank = op->comm->rank, p = op->comm->size;
    memset(s, 0, sizeof(*s));
    if (a->bytes == 0) {
        op->progress = NULL;
        return ZAP_OK;
    }
    s->src = a->src;
    s->dst = a->dst;
    s->count = a->count;
    s->esize = zap_dtype_size(a->dt);
    s->dt = a->dt;
    s->zop = a->op;
    s->root = a->root;
    s->pof2 = zap_pat_pof2(p);
    s->rem = p - s->pof2;
    s->newrank = zap_pat_rd_newrank(rank, p);
    s->nr_root = s->root < 2 * s->rem ? s->root / 2 : s->root - s->rem;
    s->state = RAB_START;
    if (p == 1) {
        zap_coll_copy(op, s->dst, s->src, a->bytes);
        op->progress = NULL;
        return ZAP_OK;
    }
    if (s->newrank >= 0) {
        bool buf_is_dst = rank == s->root;
        zap_status_t st = zap_coll_scratch(op, &op->scratch, a->bytes * (buf_is_dst ? 1 : 2));
        if (st != ZAP_OK)
            return st;
        s->tmp = op->scratch.ptr;
        s->buf = buf_is_dst ? s->dst : s->tmp + a->bytes;
    }
    op->progress = rab_progress;
    return ZAP_OK;
}
