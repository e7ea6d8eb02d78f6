/* The agreement by recursive doubling (agree.h), header and optional payload.
 *
 * Each message is the sender's accumulated header (min and max of every
 * argument field) followed by its accumulated data. In step k ranks exchange
 * with newrank ^ 2^k and combine; after log2(pof2) steps every active rank
 * holds the reduction over all ranks. Rank counts that are not powers of two
 * fold first: of the first 2*rem ranks, each even one hands its data to the
 * odd one above it and receives the final result from it at the end (2 extra
 * messages on those ranks only).
 *
 * Reduction order: every combination is lower(rank) op higher(rank) as whole
 * subcube partials: step k combines the partial of the subcube holding the
 * lower ranks with the upper one. Both partners compute the same expression
 * with the same operands (the ops are commutative bit for bit, including
 * float16/bfloat16 through float), so every rank ends with identical bytes.
 *
 * A message of the wrong length (a peer with another count) or a truncated
 * one marks the header bad instead of failing: the exchange still completes
 * on every rank with the same number of messages, and every rank then reports
 * ZAP_ERR_MISMATCH. Cost: log2(p) rounds (+2 when p is not a power of two) of
 * count elements each. */
#include "coll/agree/agree.h"
#include "coll/comm_impl.h"
#include "coll/engine/step.h"
#include "coll/patterns/patterns.h"

#define STEP_FOLD 0
#define STEP_UNFOLD ZAP_COLL_STEP_MAX

/* The first step: the fold of the extra ranks, or straight to the rounds. */
static zap_status_t start(zap_coll_op_t *op, zap_coll_agree_t *ag, int rank, int p, int rem)
{
    zap_status_t st;
    if (p == 1) {
        ag->state = ZAP_AGREE_DONE;
        return ZAP_OK;
    }
    ag->newrank = zap_pat_rd_newrank(rank, p);
    ag->mask = 1;
    if (ag->root >= 0) /* the active rank that holds the data first */
        ag->root_nr = ag->root < 2 * rem ? ag->root / 2 : ag->root - rem;
    if (rank >= 2 * rem) {
        ag->state = ZAP_AGREE_STEP_POST;
        return ZAP_OK;
    }
    if (ag->newrank < 0) {
        st = zap_coll_send(op, rank + 1, ag->phase, STEP_FOLD, ag->acc,
                           ag->root < 0 || ag->root == rank ? ag->msg_bytes : sizeof(zap_coll_hdr_t));
    } else {
        ag->expect = ag->root < 0 || ag->root == rank - 1 ? ag->msg_bytes : sizeof(zap_coll_hdr_t);
        st = zap_coll_recv(op, rank - 1, ag->phase, STEP_FOLD, ag->in, ag->msg_bytes, &ag->in_len, &ag->in_st);
    }
    ag->state = ZAP_AGREE_FOLD_IN;
    return st;
}

/* One round: exchange with the partner across the current mask. */
static zap_status_t post_round(zap_coll_op_t *op, zap_coll_agree_t *ag, int p)
{
    int pnr = ag->newrank ^ ag->mask, partner = zap_pat_rd_realrank(pnr, p);
    int step = 1;
    for (int m = ag->mask; m > 1; m >>= 1)
        step++;
    /* Broadcast: a side sends the data only once its subcube holds it (the
     * root's newrank is in it); otherwise the header alone. */
    size_t send_len = ag->msg_bytes;
    ag->expect = ag->msg_bytes;
    if (ag->root >= 0) {
        if ((ag->newrank ^ ag->root_nr) >= ag->mask)
            send_len = sizeof(zap_coll_hdr_t);
        if ((pnr ^ ag->root_nr) >= ag->mask)
            ag->expect = sizeof(zap_coll_hdr_t);
    }
    zap_status_t st = zap_coll_recv(op, partner, ag->phase, step, ag->in, ag->msg_bytes, &ag->in_len, &ag->in_st);
    if (st == ZAP_OK)
        st = zap_coll_send(op, partner, ag->phase, step, ag->acc, send_len);
    ag->state = ZAP_AGREE_STEP_WAIT;
    return st;
}

zap_status_t zap_coll_agree_rd_progress(zap_coll_op_t *op)
{
    zap_coll_agree_t *ag = &op->agree;
    int p = op->comm->size, rank = op->comm->rank;
    int pof2 = zap_pat_pof2(p), rem = p - pof2;
    zap_status_t st;
    for (;;) {
        switch (ag->state) {
        case ZAP_AGREE_START:
            if ((st = start(op, ag, rank, p, rem)) != ZAP_OK)
                return st;
            break;
        case ZAP_AGREE_FOLD_IN:
            if ((st = zap_coll_step_test(op)) != ZAP_OK)
                return st;
            if (ag->newrank < 0) {
                /* Folded out: wait for the result. */
                ag->expect = ag->msg_bytes;
                st = zap_coll_recv(op, rank + 1, ag->phase, STEP_UNFOLD, ag->acc, ag->msg_bytes, &ag->in_len,
                                   &ag->in_st);
                if (st != ZAP_OK)
                    return st;
                ag->state = ZAP_AGREE_FOLD_OUT_WAIT;
                break;
            }
            if ((st = zap_coll_agree_combine(op, true)) != ZAP_OK)
                return st;
            ag->state = ZAP_AGREE_STEP_POST;
            break;
        case ZAP_AGREE_STEP_POST:
            if (ag->mask >= pof2) {
                ag->state = ZAP_AGREE_FOLD_OUT;
                break;
            }
            if ((st = post_round(op, ag, p)) != ZAP_OK)
                return st;
            break;
        case ZAP_AGREE_STEP_WAIT: {
            if ((st = zap_coll_step_test(op)) != ZAP_OK)
                return st;
            int partner = zap_pat_rd_realrank(ag->newrank ^ ag->mask, p);
            if ((st = zap_coll_agree_combine(op, partner < rank)) != ZAP_OK)
                return st;
            ag->mask <<= 1;
            ag->state = ZAP_AGREE_STEP_POST;
            break;
        }
        case ZAP_AGREE_FOLD_OUT:
            if (rank < 2 * rem) {
                st = zap_coll_send(op, rank - 1, ag->phase, STEP_UNFOLD, ag->acc, ag->msg_bytes);
                if (st != ZAP_OK)
                    return st;
                ag->state = ZAP_AGREE_FOLD_OUT_WAIT;
            } else {
                ag->state = ZAP_AGREE_DONE;
            }
            break;
        case ZAP_AGREE_FOLD_OUT_WAIT:
            if ((st = zap_coll_step_test(op)) != ZAP_OK)
                return st;
            if (ag->newrank < 0 && (ag->in_st != ZAP_OK || ag->in_len != ag->msg_bytes)) {
                if (ag->in_st != ZAP_OK && ag->in_st != ZAP_ERR_TRUNCATED)
                    return ag->in_st;
                zap_coll_agree_keep_named(ag->acc, ag->in, ag->in_st == ZAP_OK ? ag->in_len : 0);
                zap_coll_agree_mark_bad(ag->acc);
            }
            ag->state = ZAP_AGREE_DONE;
            break;
        case ZAP_AGREE_DONE:
            return zap_coll_agree_verdict(op);
        }
    }
}
