/* Binomial-tree broadcast over virtual ranks (vr = rank - root mod p): vr
 * receives the whole message from vr minus its lowest set bit, then sends it to
 * vr + m for each power of two m below that bit (all sends posted at once,
 * largest subtree first). ceil(log2 p) rounds of n bytes: the fewest rounds,
 * the most bytes per rank; chosen for small messages. */
#include "coll/bcast/bcast.h"
#include "coll/comm_impl.h"
#include "coll/engine/step.h"
#include "coll/patterns/patterns.h"
#include <string.h>

#define PHASE 1

typedef enum bin_state { BIN_START, BIN_RECV_WAIT, BIN_SEND, BIN_SEND_WAIT, BIN_DONE } bin_state_t;

typedef struct bin {
    bin_state_t state;
    char *buf;
    size_t bytes;
    int root, vr;
} bin_t;
_Static_assert(sizeof(bin_t) <= ZAP_COLL_ALG_STATE_BYTES, "state too large");

static zap_status_t bin_progress(zap_coll_op_t *op)
{
    bin_t *s = (bin_t *)op->alg_state;
    int p = op->comm->size;
    zap_status_t st;
    for (;;) {
        switch (s->state) {
        case BIN_START:
            s->vr = zap_pat_vrank(op->comm->rank, s->root, p);
            if (s->vr == 0) {
                s->state = BIN_SEND;
                break;
            }
            st = zap_coll_recv(op, zap_pat_realrank(zap_pat_binomial_parent(s->vr), s->root, p), PHASE, 0, s->buf,
                               s->bytes, NULL, NULL);
            if (st != ZAP_OK)
                return st;
            s->state = BIN_RECV_WAIT;
            break;
        case BIN_RECV_WAIT:
            if ((st = zap_coll_step_test(op)) != ZAP_OK)
                return st;
            s->state = BIN_SEND;
            break;
        case BIN_SEND:
            for (int m = zap_pat_binomial_top(s->vr, p); m > 0; m >>= 1) {
                if (s->vr + m >= p)
                    continue;
                st = zap_coll_send(op, zap_pat_realrank(s->vr + m, s->root, p), PHASE, 0, s->buf, s->bytes);
                if (st != ZAP_OK)
                    return st;
            }
            s->state = BIN_SEND_WAIT;
            break;
        case BIN_SEND_WAIT:
            if ((st = zap_coll_step_test(op)) != ZAP_OK)
                return st;
            s->state = BIN_DONE;
            break;
        case BIN_DONE:
            return ZAP_OK;
        }
    }
}

zap_status_t zap_bcast_binomial_init(zap_coll_op_t *op)
{
    bin_t *s = (bin_t *)op->alg_state;
    memset(s, 0, sizeof(*s));
    s->state = BIN_START;
    s->buf = op->args.dst;
    s->bytes = op->args.bytes;
    s->root = op->args.root;
    op->progress = bin_progress;
    return ZAP_OK;
}
