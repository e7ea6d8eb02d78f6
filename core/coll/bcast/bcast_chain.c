/* Pipelined chain broadcast over virtual ranks vr = rank - root mod p: the
 * message flows 0 -> 1 -> ... -> p-1 in segments of ZAP_COLL_PIPELINE_BYTES.
 * In round i a middle rank receives segment i from vr-1 while forwarding
 * segment i-1 to vr+1, so every link is busy once the pipe is full:
 * (p - 2 + k) rounds for k segments, n bytes per link, which approaches n/B
 * for large n (the broadcast lower bound). Segments of one link share a tag
 * modulo 4096; at most two are in flight per link, and messages of one tag
 * between two ranks arrive in order. */
#include "coll/coll_impl.h"
#include "coll/patterns/patterns.h"
#include <string.h>

#define PHASE 1

typedef enum chain_state { CHAIN_START, CHAIN_POST, CHAIN_WAIT, CHAIN_DONE } chain_state_t;

typedef struct chain {
    chain_state_t state;
    char *buf;
    size_t bytes, seg_bytes, nseg, round;
    int root, vr;
} chain_t;
_Static_assert(sizeof(chain_t) <= ZAP_COLL_ALG_STATE_BYTES, "state too large");

static size_t seg_len(const chain_t *s, size_t i)
{
    size_t off = i * s->seg_bytes;
    return s->bytes - off < s->seg_bytes ? s->bytes - off : s->seg_bytes;
}

static zap_status_t chain_progress(zap_coll_op_t *op)
{
    chain_t *s = (chain_t *)op->alg_state;
    int p = op->comm->size;
    zap_status_t st;
    for (;;) {
        switch (s->state) {
        case CHAIN_START:
            s->vr = zap_pat_vrank(op->comm->rank, s->root, p);
            s->round = 0;
            s->state = p == 1 || s->nseg == 0 ? CHAIN_DONE : CHAIN_POST;
            break;
        case CHAIN_POST: {
            /* The root sends segment i in round i; others receive segment i
             * and forward segment i-1. */
            size_t i = s->round;
            bool last = s->vr == p - 1;
            size_t rounds = s->vr == 0 ? s->nseg : (last ? s->nseg : s->nseg + 1);
            if (i >= rounds) {
                s->state = CHAIN_DONE;
                break;
            }
            int prev = zap_pat_realrank(s->vr - 1, s->root, p), next = zap_pat_realrank(s->vr + 1, s->root, p);
            if (s->vr != 0 && i < s->nseg) {
                st = zap_coll_recv(op, prev, PHASE, (int)(i & ZAP_COLL_STEP_MAX), s->buf + i * s->seg_bytes,
                                   seg_len(s, i), NULL, NULL);
                if (st != ZAP_OK)
                    return st;
            }
            size_t fwd = s->vr == 0 ? i : i - 1;
            if (!last && (s->vr == 0 || i >= 1)) {
                st = zap_coll_send(op, next, PHASE, (int)(fwd & ZAP_COLL_STEP_MAX), s->buf + fwd * s->seg_bytes,
                                   seg_len(s, fwd));
                if (st != ZAP_OK)
                    return st;
            }
            s->state = CHAIN_WAIT;
            break;
        }
        case CHAIN_WAIT:
            if ((st = zap_coll_step_test(op)) != ZAP_OK)
                return st;
            s->round++;
            s->state = CHAIN_POST;
            break;
        case CHAIN_DONE:
            return ZAP_OK;
        }
    }
}

zap_status_t zap_bcast_chain_init(zap_coll_op_t *op, void *buf, size_t bytes, int root)
{
    chain_t *s = (chain_t *)op->alg_state;
    memset(s, 0, sizeof(*s));
    s->state = CHAIN_START;
    s->buf = buf;
    s->bytes = bytes;
    s->root = root;
    s->seg_bytes = zap_coll_pipeline_bytes();
    s->nseg = (bytes + s->seg_bytes - 1) / s->seg_bytes;
    op->progress = chain_progress;
    return ZAP_OK;
}
