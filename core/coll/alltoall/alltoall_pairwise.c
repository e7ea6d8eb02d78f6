/* Pairwise-exchange alltoall(v): in round s (1 <= s < p) rank r sends its
 * block for r + s and receives the block of r - s (mod p), its own block
 * copied locally; one exchange in flight per rank, so no link and no
 * receiver is flooded. p - 1 rounds, (p-1)/p of the data out and in per
 * rank, the least. Chosen for large blocks, where the rounds' latency is
 * small beside the bytes. In place the blocks go out from an image of
 * recvbuf taken first (zap_a2a_image). */
#include "coll/alltoall/alltoall.h"
#include "coll/comm_impl.h"
#include "coll/engine/mem.h"
#include "coll/engine/step.h"
#include "coll/patterns/patterns.h"
#include <string.h>

#define PHASE 1

typedef enum pw_state { PW_START, PW_POST, PW_WAIT, PW_STATUS } pw_state_t;

typedef struct pw {
    pw_state_t state;
    zap_a2a_send_t snd;
    size_t es;
    int step;
    size_t len;
    zap_status_t rst;
    bool bad, status_started;
} pw_t;
_Static_assert(sizeof(pw_t) <= ZAP_COLL_ALG_STATE_BYTES, "state too large");

static zap_status_t pw_progress(zap_coll_op_t *op)
{
    pw_t *s = (pw_t *)op->alg_state;
    const zap_coll_args_t *a = &op->args;
    int r = op->comm->rank, p = op->comm->size;
    zap_status_t st;
    for (;;) {
        switch (s->state) {
        case PW_START:
            zap_coll_copy(op, (char *)a->dst + zap_a2a_rdispl(a, r) * (ptrdiff_t)s->es, zap_a2a_block(op, &s->snd, r),
                          zap_a2a_rcount(a, r) * s->es);
            s->step = 1;
            s->state = PW_POST;
            break;
        case PW_POST: {
            if (s->step >= p) {
                s->state = PW_STATUS;
                break;
            }
            int to = zap_pat_mod((long)r + s->step, p), from = zap_pat_mod((long)r - s->step, p);
            int tag = s->step & ZAP_COLL_STEP_MAX;
            if ((st = zap_coll_recv(op, from, PHASE, tag, (char *)a->dst + zap_a2a_rdispl(a, from) * (ptrdiff_t)s->es,
                                    zap_a2a_rcount(a, from) * s->es, &s->len, &s->rst)) != ZAP_OK ||
                (st = zap_coll_send(op, to, PHASE, tag, zap_a2a_block(op, &s->snd, to),
                                    zap_a2a_scount(a, to) * s->es)) != ZAP_OK)
                return st;
            s->state = PW_WAIT;
            break;
        }
        case PW_WAIT:
            if ((st = zap_coll_step_test(op)) != ZAP_OK)
                return st;
            if ((st = zap_a2a_check_recv(op, zap_pat_mod((long)r - s->step, p), s->rst, s->len, &s->bad)) != ZAP_OK)
                return st;
            s->step++;
            s->state = PW_POST;
            break;
        case PW_STATUS:
            return zap_a2a_is_v(a) ? zap_a2a_status(op, s->bad, &s->status_started) : ZAP_OK;
        }
    }
}

zap_status_t zap_alltoall_pairwise_init(zap_coll_op_t *op)
{
    const zap_coll_args_t *a = &op->args;
    pw_t *s = (pw_t *)op->alg_state;
    memset(s, 0, sizeof(*s));
    if (!zap_a2a_is_v(a) && a->fixed == 0) {
        op->progress = NULL;
        return ZAP_OK;
    }
    s->es = zap_dtype_size(a->dt);
    zap_status_t st = zap_a2a_image(op, &op->scratch, &s->snd);
    if (st != ZAP_OK)
        return st;
    s->state = PW_START;
    op->progress = pw_progress;
    return ZAP_OK;
}
