/* Broadcast on the GPU path (gpu.h has the choice and the fallbacks).
 *
 * Up to one bank (ZAP_GPU_BANK_BYTES): the root's kernel copies its buffer
 * into its bank and signals; every other rank's kernel copies it out of the
 * root's bank. No message besides the agreement.
 *
 * Larger: the root exposes its buffer (CUDA IPC, cached per allocation), or
 * the channel's staging buffer in its place when it cannot be exported
 * (managed memory; its kernel copies the buffer in first); round 1 (phase 7,
 * step 1) shows it; the other ranks open it (cached) and launch with ok =
 * whether they could; every rank's kernel reads the root's buffer into its
 * own, and the root's kernel waits until all have.
 *
 * States as the allreduce's (gpu_allreduce.c). */
#include "coll/gpu/gpu_impl.h"
#include "coll/engine/select.h"
#include "coll/engine/step.h"
#include "base/log.h"
#include <string.h>

enum { BC_START, BC_CHAN, BC_PREP, BC_R1, BC_LAUNCH, BC_WAIT };
#define R1_STEP 1

typedef struct gpu_bc {
    zap_coll_gpu_x_t x;
    void *stage;
    int state;
    bool large, stage_in, ok;
} gpu_bc_t;
_Static_assert(sizeof(gpu_bc_t) <= ZAP_COLL_ALG_STATE_BYTES, "state fits the operation");
_Static_assert(offsetof(gpu_bc_t, x) == 0, "zap_coll_gpu_release finds the call's rounds first");

/* The root exposes its buffer (or the staging buffer); the others have
 * nothing to show. */
static zap_status_t expose(zap_coll_op_t *op, gpu_bc_t *s, zap_gpu_ref_t *ref, bool *can)
{
    const zap_coll_args_t *a = &op->args;
    *can = true;
    if (op->comm->rank != a->root)
        return ZAP_OK;
    zap_gpu_chan_t *ch = zap_coll_gpu_of(op)->ch;
    zap_status_t st = zap_gpu_expose(ch, a->dst, a->bytes, ref);
    if (st == ZAP_OK)
        return ZAP_OK;
    if (st != ZAP_ERR_UNSUPPORTED) {
        *can = false;
        return ZAP_OK;
    }
    if (zap_coll_gpu_of(op)->next != s->x.order)
        return ZAP_INPROGRESS; /* the staging buffer is taken in launch order (it may grow) */
    st = zap_gpu_stage_acquire(ch, a->bytes, &s->stage, ref);
    if (st == ZAP_ERR_BUSY)
        return ZAP_INPROGRESS;
    s->x.holds_stage = st == ZAP_OK;
    s->stage_in = s->x.holds_stage;
    *can = s->x.holds_stage;
    return ZAP_OK;
}

static zap_status_t bc_progress(zap_coll_op_t *op)
{
    gpu_bc_t *s = (gpu_bc_t *)op->alg_state;
    const zap_coll_args_t *a = &op->args;
    int me = op->comm->rank;
    zap_status_t st = ZAP_OK;
    bool all = false;
    for (;;) {
        switch (s->state) {
        case BC_START:
            if (!zap_coll_agree_voted(op, ZAP_COLL_LANE_VOTE_GPU))
                return zap_coll_gpu_fall_back(op);
            s->state = BC_CHAN;
            break;
        case BC_CHAN:
            if ((st = zap_coll_gpu_chan_ready(op, &s->x)) == ZAP_ERR_UNSUPPORTED)
                return zap_coll_gpu_fall_back(op);
            if (st != ZAP_OK)
                return st;
            s->large = a->bytes > ZAP_GPU_BANK_BYTES;
            s->ok = true;
            s->state = s->large ? BC_PREP : BC_LAUNCH;
            break;
        case BC_PREP: {
            zap_gpu_ref_t ref;
            bool can = false;
            memset(&ref, 0, sizeof(ref));
            if ((st = expose(op, s, &ref, &can)) != ZAP_OK)
                return st;
            if ((st = zap_coll_gpu_round_post(op, &s->x, R1_STEP, can ? ZAP_GPU_MSG_CAN : 0, &ref, NULL)) != ZAP_OK)
                return st;
            s->state = BC_R1;
            break;
        }
        case BC_R1:
            if ((st = zap_coll_step_test(op)) != ZAP_OK)
                return st;
            if ((st = zap_coll_gpu_round_all(op, &s->x, ZAP_GPU_MSG_CAN, &all)) != ZAP_OK)
                return st;
            if (!all)
                return zap_coll_gpu_fall_back(op);
            if (me != a->root)
                s->ok = zap_gpu_open(zap_coll_gpu_of(op)->ch, &s->x.mail[1 + a->root].ref[0],
                                     &s->x.in[a->root]) == ZAP_OK;
            else
                s->x.in[me] = s->stage_in ? s->stage : a->dst;
            s->state = BC_LAUNCH;
            break;
        case BC_LAUNCH: {
            zap_gpu_launch_t l;
            memset(&l, 0, sizeof(l));
            l.work = s->large ? ZAP_GPU_BC_READ : ZAP_GPU_BC_ONESHOT;
            l.dt = ZAP_DT_UINT8;
            l.op = ZAP_OP_SUM;
            l.count = a->bytes;
            l.root = a->root;
            l.src = a->dst;
            l.dst = a->dst;
            l.stage = s->stage;
            l.stage_in = s->stage_in;
            l.prefetch_src = s->large && op->mem == ZAP_MEM_MANAGED;
            l.ok = s->ok;
            if (s->large)
                l.in[a->root] = s->x.in[a->root];
            if ((st = zap_coll_gpu_launch(op, &s->x, &l)) != ZAP_OK)
                return st;
            s->state = BC_WAIT;
            break;
        }
        case BC_WAIT:
            st = zap_coll_gpu_wait(op, &s->x);
            if (st == ZAP_ERR_CANCELED)
                return zap_coll_gpu_fall_back(op);
            if (st == ZAP_OK)
                zap_coll_gpu_count(true);
            return st;
        default:
            return ZAP_ERR_INVALID_PARAM;
        }
    }
}

zap_status_t zap_gpu_bcast_init(zap_coll_op_t *op)
{
    gpu_bc_t *s = (gpu_bc_t *)op->alg_state;
    memset(s, 0, sizeof(*s));
    zap_coll_gpu_x_init(op, &s->x);
    s->state = BC_START;
    op->progress = bc_progress;
    op->release = zap_coll_gpu_release;
    return ZAP_OK;
}
