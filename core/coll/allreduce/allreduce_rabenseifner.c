/* Rabenseifner's allreduce: a reduce-scatter by recursive halving followed by
 * an allgather by recursive doubling (Thakur, Rabenseifner & Gropp 2005; the
 * layout follows MPICH's allreduce_intra_reduce_scatter_allgather).
 *
 * The vector is split into pof2 nearly equal blocks (patterns.h). In halving
 * step k (mask = 2^k) a rank keeps the half of its current block range on
 * its side of the partner and sends the other half; after log2(pof2) steps it
 * owns one fully reduced block. The doubling steps retrace the pairs,
 * exchanging owned ranges until every rank has everything. Rank counts that
 * are not powers of two fold first, as in allreduce_rd.c: the even rank of
 * each of the first rem pairs hands its vector to the odd one and gets the
 * result back at the end.
 *
 * Reduction order: in the fold, x[even] op x[odd]; in each halving step the
 * partial from the lower-ranked side comes first. Each element of the result
 * is computed on exactly one rank and then copied, so all ranks hold
 * identical bytes. Cost: 2 log2(pof2) rounds (+2 on folded pairs), 2 (p-1)/p
 * n bytes sent per rank, one scratch vector of n bytes. */
#include "coll/allreduce/allreduce.h"
#include "coll/comm_impl.h"
#include "coll/engine/mem.h"
#include "coll/engine/step.h"
#include "coll/patterns/patterns.h"
#include <string.h>

#define PHASE 1
#define STEP_FOLD 0
#define STEP_HALVE 1
#define STEP_DOUBLE 64
#define STEP_UNFOLD ZAP_COLL_STEP_MAX

typedef enum rab_state {
    RAB_START,
    RAB_FOLD_WAIT,
    RAB_HALVE_POST,
    RAB_HALVE_WAIT,
    RAB_DOUBLE_POST,
    RAB_DOUBLE_WAIT,
    RAB_UNFOLD_WAIT,
    RAB_DONE
} rab_state_t;

typedef struct rab {
    rab_state_t state;
    const void *src;
    char *buf;   /* the caller's recvbuf: input copy, then result */
    char *tmp;   /* scratch: received halves */
    size_t count, esize;
    zap_dtype_t dt;
    zap_op_t op;
    int pof2, rem, newrank, mask, partner;
    int send_idx, recv_idx, last_idx;
    size_t recv_off, recv_cnt;
} rab_t;
_Static_assert(sizeof(rab_t) <= ZAP_COLL_ALG_STATE_BYTES, "state too large");

static size_t disp(const rab_t *s, int i) { return zap_pat_block_disp(s->count, (size_t)s->pof2, (size_t)i); }

/* A halving step: keep the half of the current range on this side of the
 * partner, send the other half, receive the partner's half of ours. */
static zap_status_t halve_post(zap_coll_op_t *op, rab_t *s, int p)
{
    int newdst = s->newrank ^ s->mask;
    s->partner = zap_pat_rd_realrank(newdst, p);
    size_t send_off, send_cnt;
    if (s->newrank < newdst) {
        s->send_idx = s->recv_idx + s->pof2 / (s->mask * 2);
        send_off = disp(s, s->send_idx);
        send_cnt = disp(s, s->last_idx) - send_off;
        s->recv_off = disp(s, s->recv_idx);
        s->recv_cnt = disp(s, s->send_idx) - s->recv_off;
    } else {
        s->recv_idx = s->send_idx + s->pof2 / (s->mask * 2);
        send_off = disp(s, s->send_idx);
        send_cnt = disp(s, s->recv_idx) - send_off;
        s->recv_off = disp(s, s->recv_idx);
        s->recv_cnt = disp(s, s->last_idx) - s->recv_off;
    }
    int step = zap_pat_step_of(STEP_HALVE, s->mask);
    zap_status_t st = zap_coll_recv(op, s->partner, PHASE, step, s->tmp + s->recv_off * s->esize,
                                    s->recv_cnt * s->esize, NULL, NULL);
    if (st == ZAP_OK)
        st = zap_coll_send(op, s->partner, PHASE, step, s->buf + send_off * s->esize, send_cnt * s->esize);
    return st;
}

/* A doubling step: exchange the owned ranges with the partner, retracing the
 * halving steps' pairs. */
static zap_status_t double_post(zap_coll_op_t *op, rab_t *s, int p)
{
    int newdst = s->newrank ^ s->mask;
    s->partner = zap_pat_rd_realrank(newdst, p);
    size_t send_off, send_cnt;
    if (s->newrank < newdst) {
        if (s->mask != s->pof2 / 2)
            s->last_idx = s->last_idx + s->pof2 / (s->mask * 2);
        s->recv_idx = s->send_idx + s->pof2 / (s->mask * 2);
        send_off = disp(s, s->send_idx);
        send_cnt = disp(s, s->recv_idx) - send_off;
        s->recv_off = disp(s, s->recv_idx);
        s->recv_cnt = disp(s, s->last_idx) - s->recv_off;
    } else {
        s->recv_idx = s->send_idx - s->pof2 / (s->mask * 2);
        send_off = disp(s, s->send_idx);
        send_cnt = disp(s, s->last_idx) - send_off;
        s->recv_off = disp(s, s->recv_idx);
        s->recv_cnt = disp(s, s->send_idx) - s->recv_off;
    }
    int step = zap_pat_step_of(STEP_DOUBLE, s->mask);
    zap_status_t st = zap_coll_recv(op, s->partner, PHASE, step, s->buf + s->recv_off * s->esize,
                                    s->recv_cnt * s->esize, NULL, NULL);
    if (st == ZAP_OK)
        st = zap_coll_send(op, s->partner, PHASE, step, s->buf + send_off * s->esize, send_cnt * s->esize);
    return st;
}

static zap_status_t rab_progress(zap_coll_op_t *op)
{
    rab_t *s = (rab_t *)op->alg_state;
    int rank = op->comm->rank, p = op->comm->size;
    zap_status_t st;
    for (;;) {
        switch (s->state) {
        case RAB_START:
            zap_coll_copy(op, s->buf, s->src, s->count * s->esize);
            if (p == 1) {
                s->state = RAB_DONE;
                break;
            }
            s->pof2 = zap_pat_pof2(p);
            s->rem = p - s->pof2;
            s->newrank = zap_pat_rd_newrank(rank, p);
            if (rank < 2 * s->rem) {
                if (s->newrank < 0)
                    st = zap_coll_send(op, rank + 1, PHASE, STEP_FOLD, s->buf, s->count * s->esize);
                else
                    st = zap_coll_recv(op, rank - 1, PHASE, STEP_FOLD, s->tmp, s->count * s->esize, NULL, NULL);
                if (st != ZAP_OK)
                    return st;
                s->state = RAB_FOLD_WAIT;
                break;
            }
            s->mask = 1;
            s->send_idx = s->recv_idx = 0;
            s->last_idx = s->pof2;
            s->state = RAB_HALVE_POST;
            break;
        case RAB_FOLD_WAIT:
            if ((st = zap_coll_step_test(op)) != ZAP_OK)
                return st;
            if (s->newrank < 0) {
                st = zap_coll_recv(op, rank + 1, PHASE, STEP_UNFOLD, s->buf, s->count * s->esize, NULL, NULL);
                if (st != ZAP_OK)
                    return st;
                s->state = RAB_UNFOLD_WAIT;
                break;
            }
            st = zap_coll_reduce(op, s->dt, s->op, s->buf, s->tmp, s->buf, s->count);
            if (st != ZAP_OK)
                return st;
            s->mask = 1;
            s->send_idx = s->recv_idx = 0;
            s->last_idx = s->pof2;
            s->state = RAB_HALVE_POST;
            break;
        case RAB_HALVE_POST:
            if (s->mask >= s->pof2) {
                s->mask >>= 1;
                s->state = RAB_DOUBLE_POST;
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
            st = zap_coll_reduce(op, s->dt, s->op, mine, theirs_lower ? theirs : mine, theirs_lower ? mine : theirs,
                                 s->recv_cnt);
            if (st != ZAP_OK)
                return st;
            s->send_idx = s->recv_idx;
            s->mask <<= 1;
            if (s->mask < s->pof2)
                s->last_idx = s->recv_idx + s->pof2 / s->mask;
            s->state = RAB_HALVE_POST;
            break;
        }
        case RAB_DOUBLE_POST:
            if (s->mask <= 0) {
                if (rank < 2 * s->rem) { /* odd rank of a folded pair: hand back */
                    st = zap_coll_send(op, rank - 1, PHASE, STEP_UNFOLD, s->buf, s->count * s->esize);
                    if (st != ZAP_OK)
                        return st;
                    s->state = RAB_UNFOLD_WAIT;
                } else {
                    s->state = RAB_DONE;
                }
                break;
            }
            if ((st = double_post(op, s, p)) != ZAP_OK)
                return st;
            s->state = RAB_DOUBLE_WAIT;
            break;
        case RAB_DOUBLE_WAIT:
            if ((st = zap_coll_step_test(op)) != ZAP_OK)
                return st;
            if (s->newrank > (s->newrank ^ s->mask))
                s->send_idx = s->recv_idx;
            s->mask >>= 1;
            s->state = RAB_DOUBLE_POST;
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

zap_status_t zap_allreduce_rabenseifner_init(zap_coll_op_t *op)
{
    const zap_coll_args_t *a = &op->args;
    rab_t *s = (rab_t *)op->alg_state;
    memset(s, 0, sizeof(*s));
    s->state = RAB_START;
    s->src = a->src;
    s->buf = a->dst;
    s->count = a->count;
    s->esize = zap_dtype_size(a->dt);
    s->dt = a->dt;
    s->op = a->op;
    zap_status_t st = zap_coll_scratch(op, &op->scratch, op->comm->size > 1 ? s->count * s->esize : 0);
    if (st != ZAP_OK)
        return st;
    s->tmp = op->scratch.ptr;
    op->progress = rab_progress;
    return ZAP_OK;
}
