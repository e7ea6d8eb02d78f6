/* Linear alltoall(v): every receive and send posted at once, peers in the
 * order r + k / r - k (k = 1 .. p-1, so the first messages of a round do
 * not all go to rank 0), in batches of ZAP_COLL_MAX_REQS / 2 peers. One
 * round of latency; every link and receiver carries p - 1 messages at once,
 * which pays for small and medium blocks. In place the blocks go out from an
 * image of recvbuf taken first. */
#include "coll/alltoall/alltoall.h"
#include "coll/comm_impl.h"
#include "coll/engine/mem.h"
#include "coll/engine/step.h"
#include "coll/patterns/patterns.h"
#include <string.h>

#define PHASE 1
#define BATCH (ZAP_COLL_MAX_REQS / 2)

typedef enum lin_state { LIN_START, LIN_POST, LIN_WAIT, LIN_STATUS } lin_state_t;

typedef struct a2a_lin {
    lin_state_t state;
    zap_a2a_send_t snd;
    size_t es;
    int next, first;
    size_t *len;       /* the batch's received lengths and statuses (scratch2; alltoallv) */
    zap_status_t *rst;
    bool bad, status_started;
} a2a_lin_t;
_Static_assert(sizeof(a2a_lin_t) <= ZAP_COLL_ALG_STATE_BYTES, "state too large");

static zap_status_t lin_progress(zap_coll_op_t *op)
{
    a2a_lin_t *s = (a2a_lin_t *)op->alg_state;
    const zap_coll_args_t *a = &op->args;
    int r = op->comm->rank, p = op->comm->size;
    zap_status_t st;
    for (;;) {
        switch (s->state) {
        case LIN_START:
            zap_coll_copy(op, (char *)a->dst + zap_a2a_rdispl(a, r) * (ptrdiff_t)s->es, zap_a2a_block(op, &s->snd, r),
                          zap_a2a_rcount(a, r) * s->es);
            s->next = 1;
            s->state = LIN_POST;
            break;
        case LIN_POST:
            if (s->next >= p) {
                s->state = LIN_STATUS;
                break;
            }
            s->first = s->next;
            for (int i = 0; s->next < p && i < BATCH; i++, s->next++) {
                int from = zap_pat_mod((long)r - s->next, p);
                st = zap_coll_recv(op, from, PHASE, 0, (char *)a->dst + zap_a2a_rdispl(a, from) * (ptrdiff_t)s->es,
                                   zap_a2a_rcount(a, from) * s->es, s->len ? &s->len[i] : NULL,
                                   s->rst ? &s->rst[i] : NULL);
                if (st != ZAP_OK)
                    return st;
            }
            for (int k = s->first; k < s->next; k++) {
                int to = zap_pat_mod((long)r + k, p);
                if ((st = zap_coll_send(op, to, PHASE, 0, zap_a2a_block(op, &s->snd, to),
                                        zap_a2a_scount(a, to) * s->es)) != ZAP_OK)
                    return st;
            }
            s->state = LIN_WAIT;
            break;
        case LIN_WAIT:
            if ((st = zap_coll_step_test(op)) != ZAP_OK)
                return st;
            for (int k = s->first; s->len != NULL && k < s->next; k++)
                if ((st = zap_a2a_check_recv(op, zap_pat_mod((long)r - k, p), s->rst[k - s->first],
                                             s->len[k - s->first], &s->bad)) != ZAP_OK)
                    return st;
            s->state = LIN_POST;
            break;
        case LIN_STATUS:
            return zap_a2a_is_v(a) ? zap_a2a_status(op, s->bad, &s->status_started) : ZAP_OK;
        }
    }
}

zap_status_t zap_alltoall_linear_init(zap_coll_op_t *op)
{
    const zap_coll_args_t *a = &op->args;
    a2a_lin_t *s = (a2a_lin_t *)op->alg_state;
    memset(s, 0, sizeof(*s));
    if (!zap_a2a_is_v(a) && a->fixed == 0) {
        op->progress = NULL;
        return ZAP_OK;
    }
    s->es = zap_dtype_size(a->dt);
    zap_status_t st = zap_a2a_image(op, &op->scratch, &s->snd);
    if (st == ZAP_OK && zap_a2a_is_v(a) && op->comm->size > 1) {
        st = zap_coll_scratch(op, &op->scratch2, BATCH * (sizeof(size_t) + sizeof(zap_status_t)));
        s->len = op->scratch2.ptr;
        s->rst = (zap_status_t *)(s->len + BATCH);
    }
    if (st != ZAP_OK)
        return st;
    s->state = LIN_START;
    op->progress = lin_progress;
    return ZAP_OK;
}
