/* Broadcast on the GPU-resident path (see gpu.h for the choice and the
 * fallback). The root copies its buffer into its staging slot; round 1: every
 * rank says it can take part (the root shows its slot's handle); every other
 * rank copies the root's slot into its own buffer (a peer copy); round 2:
 * every rank says its copy succeeded, after which the root may reuse its
 * slot. Should any copy fail, all ranks run the host algorithm, which
 * rewrites every non-root buffer from the root's untouched one. */
#include "coll/gpu/gpu_round.h"
#include "coll/engine/select.h"
#include "coll/engine/step.h"
#include "base/log.h"
#include <string.h>

enum { BC_COPY_IN, BC_COPY_IN_WAIT, BC_R1_WAIT, BC_PULL_WAIT, BC_R2_WAIT };

typedef struct stage_bc {
    zap_stage_x_t x;
    void *buf;
    size_t bytes;
    int root;
    int state;
    bool can, managed;
    zap_status_t cuda_st;
} stage_bc_t;
_Static_assert(sizeof(stage_bc_t) <= ZAP_COLL_ALG_STATE_BYTES, "state fits the operation");

/* Everyone agreed the path is out: the next candidate runs the call. */
static zap_status_t fall_back(zap_coll_op_t *op)
{
    stage_bc_t *s = (stage_bc_t *)op->alg_state;
    zap_stage_x_release(&s->x);
    zap_stage_count(false);
    return zap_coll_fall_back(op);
}

static zap_status_t bc_progress(zap_coll_op_t *op)
{
    stage_bc_t *s = (stage_bc_t *)op->alg_state;
    bool is_root = op->comm->rank == s->root;
    zap_status_t st = ZAP_OK;
    bool all = false;
    for (;;) {
        switch (s->state) {
        case BC_COPY_IN:
            if (!zap_coll_agree_voted(op, ZAP_COLL_LANE_VOTE_GPU))
                return fall_back(op); /* no message beyond the header */
            s->can = true; /* this rank voted yes: its buffer is GPU-resident */
            zap_stage_x_init(op, &s->x, is_root ? s->bytes : 0, s->can);
            if (s->x.can) {
                if (s->managed)
                    zap_stage_prefetch(s->x.slot, s->buf, s->bytes);
                st = is_root ? zap_stage_copy(s->x.slot, zap_stage_base(s->x.slot), s->buf, s->bytes) : ZAP_OK;
                if (st == ZAP_OK)
                    st = zap_stage_fence(s->x.slot);
                if (st != ZAP_OK)
                    s->x.can = false;
            }
            s->state = BC_COPY_IN_WAIT;
            break;
        case BC_COPY_IN_WAIT:
            if ((st = zap_stage_x_post_ready(op, &s->x)) == ZAP_INPROGRESS)
                return st;
            if (st != ZAP_OK)
                goto fail;
            s->state = BC_R1_WAIT;
            break;
        case BC_R1_WAIT:
            if ((st = zap_coll_step_test(op)) != ZAP_OK)
                goto fail_or_wait;
            if ((st = zap_stage_x_all(op, &s->x, ZAP_STAGE_CAN, &all)) != ZAP_OK)
                goto fail;
            if (!all)
                return fall_back(op);
            st = ZAP_OK;
            if (!is_root) {
                void *src = NULL;
                st = zap_stage_peer(&s->x.in[s->root].ref, &src);
                if (st == ZAP_OK)
                    st = zap_stage_copy(s->x.slot, s->buf, src, s->bytes);
                if (st == ZAP_OK)
                    st = zap_stage_fence(s->x.slot);
            }
            s->cuda_st = st;
            s->state = BC_PULL_WAIT;
            break;
        case BC_PULL_WAIT:
            if (!is_root && s->cuda_st == ZAP_OK && (st = zap_stage_test(s->x.slot)) == ZAP_INPROGRESS)
                return st;
            if (!is_root && s->cuda_st == ZAP_OK)
                s->cuda_st = st;
            if ((st = zap_stage_x_post(op, &s->x, 2, s->cuda_st == ZAP_OK ? ZAP_STAGE_OK : 0)) != ZAP_OK)
                goto fail;
            s->state = BC_R2_WAIT;
            break;
        case BC_R2_WAIT:
            if ((st = zap_coll_step_test(op)) != ZAP_OK)
                goto fail_or_wait;
            if ((st = zap_stage_x_all(op, &s->x, ZAP_STAGE_OK, &all)) != ZAP_OK)
                goto fail;
            if (!all)
                return fall_back(op);
            zap_stage_x_release(&s->x);
            zap_stage_count(true);
            return ZAP_OK;
        default:
            return ZAP_ERR_INVALID_PARAM;
        }
    }
fail_or_wait:
    if (st == ZAP_INPROGRESS)
        return st;
fail:
    if (s->x.slot != NULL) {
        while (zap_stage_test(s->x.slot) == ZAP_INPROGRESS)
            ;
        zap_stage_x_release(&s->x);
    }
    return st;
}

zap_status_t zap_gpu_bcast_init(zap_coll_op_t *op)
{
    stage_bc_t *s = (stage_bc_t *)op->alg_state;
    memset(s, 0, sizeof(*s));
    s->buf = op->args.dst;
    s->bytes = op->args.bytes;
    s->root = op->args.root;
    s->state = BC_COPY_IN;
    s->managed = op->mem == ZAP_MEM_MANAGED;
    op->progress = bc_progress;
    return ZAP_OK;
}
