/* Scatter + allgather broadcast (van de Geijn; MPICH's scatter_ring_allgather)
 * over virtual ranks vr = rank - root mod p. The message is split into p
 * nearly equal blocks, block i belonging to vr i.
 *
 * Scatter: vr receives the blocks of its binomial subtree [vr, end) from its
 * parent in one message, then sends each child c its subtree's blocks
 * [c, end(c)) (all sends at once). Allgather: p-1 ring steps over vr; step s
 * sends block (vr - s) to vr+1 and receives block (vr - s - 1) from vr-1,
 * straight into place. About 2 (p-1)/p n bytes per rank in log2(p) + p - 1
 * rounds: bandwidth close to the chain's without its long pipeline fill. */
#include "coll/bcast/bcast.h"
#include "coll/comm_impl.h"
#include "coll/engine/step.h"
#include "coll/patterns/patterns.h"
#include <string.h>

#define PHASE_SCATTER 1
#define PHASE_RING 2

typedef enum sag_state { SAG_START, SAG_RECV_WAIT, SAG_SEND, SAG_SEND_WAIT, SAG_RING_POST, SAG_RING_WAIT, SAG_DONE } sag_state_t;

typedef struct sag {
    sag_state_t state;
    char *buf;
    size_t bytes;
    int root, vr, step;
} sag_t;
_Static_assert(sizeof(sag_t) <= ZAP_COLL_ALG_STATE_BYTES, "state too large");

static size_t boff(const sag_t *s, int p, int b) { return zap_pat_block_disp(s->bytes, (size_t)p, (size_t)b); }

static zap_status_t sag_progress(zap_coll_op_t *op)
{
    sag_t *s = (sag_t *)op->alg_state;
    int p = op->comm->size;
    zap_status_t st;
    for (;;) {
        switch (s->state) {
        case SAG_START:
            s->vr = zap_pat_vrank(op->comm->rank, s->root, p);
            if (s->vr == 0) {
                s->state = SAG_SEND;
                break;
            }
            {
                size_t lo = boff(s, p, s->vr), hi = boff(s, p, zap_pat_subtree_end(s->vr, p));
                st = zap_coll_recv(op, zap_pat_realrank(zap_pat_binomial_parent(s->vr), s->root, p), PHASE_SCATTER, 0,
                                   s->buf + lo, hi - lo, NULL, NULL);
            }
            if (st != ZAP_OK)
                return st;
            s->state = SAG_RECV_WAIT;
            break;
        case SAG_RECV_WAIT:
            if ((st = zap_coll_step_test(op)) != ZAP_OK)
                return st;
            s->state = SAG_SEND;
            break;
        case SAG_SEND:
            for (int m = zap_pat_binomial_top(s->vr, p); m > 0; m >>= 1) {
                int c = s->vr + m;
                if (c >= p)
                    continue;
                size_t lo = boff(s, p, c), hi = boff(s, p, zap_pat_subtree_end(c, p));
                st = zap_coll_send(op, zap_pat_realrank(c, s->root, p), PHASE_SCATTER, 0, s->buf + lo, hi - lo);
                if (st != ZAP_OK)
                    return st;
            }
            s->state = SAG_SEND_WAIT;
            break;
        case SAG_SEND_WAIT:
            if ((st = zap_coll_step_test(op)) != ZAP_OK)
                return st;
            s->step = 0;
            s->state = SAG_RING_POST;
            break;
        case SAG_RING_POST: {
            if (s->step >= p - 1) {
                s->state = SAG_DONE;
                break;
            }
            int sb = zap_pat_mod((long)s->vr - s->step, p), rb = zap_pat_mod((long)s->vr - s->step - 1, p);
            int right = zap_pat_realrank(zap_pat_mod(s->vr + 1, p), s->root, p);
            int left = zap_pat_realrank(zap_pat_mod(s->vr - 1, p), s->root, p);
            if ((st = zap_coll_recv(op, left, PHASE_RING, s->step, s->buf + boff(s, p, rb),
                                    boff(s, p, rb + 1) - boff(s, p, rb), NULL, NULL)) != ZAP_OK ||
                (st = zap_coll_send(op, right, PHASE_RING, s->step, s->buf + boff(s, p, sb),
                                    boff(s, p, sb + 1) - boff(s, p, sb))) != ZAP_OK)
                return st;
            s->state = SAG_RING_WAIT;
            break;
        }
        case SAG_RING_WAIT:
            if ((st = zap_coll_step_test(op)) != ZAP_OK)
                return st;
            s->step++;
            s->state = SAG_RING_POST;
            break;
        case SAG_DONE:
            return ZAP_OK;
        }
    }
}

zap_status_t zap_bcast_scatter_allgather_init(zap_coll_op_t *op)
{
    sag_t *s = (sag_t *)op->alg_state;
    memset(s, 0, sizeof(*s));
    s->state = SAG_START;
    s->buf = op->args.dst;
    s->bytes = op->args.bytes;
    s->root = op->args.root;
    op->progress = sag_progress;
    return ZAP_OK;
}
