/* Allreduce on the GPU path (gpu.h has the choice and the fallbacks).
 *
 * Up to one bank (ZAP_GPU_BANK_BYTES) the one-shot form: after the argument
 * agreement the host only launches; every rank's kernel copies its input into
 * its bank, signals, and reduces every rank's bank (its own input directly)
 * into its output. No message at all besides the agreement.
 *
 * Larger vectors: reduce-scatter and allgather in one kernel over the users'
 * own buffers. Each rank exposes its input and output (CUDA IPC, cached per
 * allocation) or, where one cannot be exported (managed memory), the
 * channel's staging buffer in its place; round 1 (phase 7, step 1) shows
 * every rank's refs and whether it could; each rank opens its peers' (cached)
 * and launches with ok = whether it could. Rank r reduces segment r from every
 * rank's input and writes it into every rank's output.
 *
 * States: START (the vote) -> CHAN (the communicator's channel) -> [large:
 * PREP (expose, round 1) -> R1 (open)] -> LAUNCH (in the communicator's
 * launch order) -> WAIT (the kernel's status). A no vote, a failed channel, a
 * rank that could not expose (round 1) or open (the kernels' flags) falls
 * back to the next candidate on every rank, user buffers untouched. */
#include "coll/gpu/gpu_impl.h"
#include "coll/engine/select.h"
#include "coll/engine/step.h"
#include "base/log.h"
#include <string.h>

enum { AR_START, AR_CHAN, AR_PREP, AR_R1, AR_LAUNCH, AR_WAIT };
#define R1_STEP 1

typedef struct gpu_ar {
    zap_coll_gpu_x_t x;
    void *stage;
    int state;
    bool large, stage_in, stage_out, ok;
} gpu_ar_t;
_Static_assert(sizeof(gpu_ar_t) <= ZAP_COLL_ALG_STATE_BYTES, "state fits the operation");
_Static_assert(offsetof(gpu_ar_t, x) == 0, "zap_coll_gpu_release finds the call's rounds first");

/* Exposes this rank's input and output; false when it cannot take part. */
static zap_status_t expose(zap_coll_op_t *op, gpu_ar_t *s, zap_gpu_ref_t *rin, zap_gpu_ref_t *rout, bool *can)
{
    const zap_coll_args_t *a = &op->args;
    zap_gpu_chan_t *ch = zap_coll_gpu_of(op)->ch;
    zap_gpu_ref_t sref;
    zap_status_t st = zap_gpu_expose(ch, a->src, a->bytes, rin);
    s->stage_in = st == ZAP_ERR_UNSUPPORTED;
    bool ok = st == ZAP_OK || s->stage_in;
    if (a->dst == a->src) {
        *rout = *rin;
        s->stage_out = s->stage_in;
    } else {
        st = zap_gpu_expose(ch, a->dst, a->bytes, rout);
        s->stage_out = st == ZAP_ERR_UNSUPPORTED;
        ok = ok && (st == ZAP_OK || s->stage_out);
    }
    if (ok && (s->stage_in || s->stage_out)) {
        /* One staging buffer serves as both: rank q reads segment q of it and
         * then writes segment q, element by element in the same thread. */
        if (zap_coll_gpu_of(op)->next != s->x.order)
            return ZAP_INPROGRESS; /* the staging buffer is taken in launch order (it may grow) */
        st = zap_gpu_stage_acquire(ch, a->bytes, &s->stage, &sref);
        if (st == ZAP_ERR_BUSY)
            return ZAP_INPROGRESS;
        s->x.holds_stage = st == ZAP_OK;
        ok = s->x.holds_stage;
        if (ok && s->stage_in)
            *rin = sref;
        if (ok && s->stage_out)
            *rout = sref;
    }
    *can = ok;
    return ZAP_OK;
}

/* Every rank's exposed input and output, opened here; false when one could
 * not be. */
static bool open_peers(zap_coll_op_t *op, gpu_ar_t *s)
{
    const zap_coll_args_t *a = &op->args;
    zap_gpu_chan_t *ch = zap_coll_gpu_of(op)->ch;
    int p = op->comm->size, me = op->comm->rank;
    bool ok = true;
    for (int q = 0; q < p; q++) {
        if (q == me) {
            s->x.in[q] = (void *)a->src;
            s->x.out[q] = a->dst;
            continue;
        }
        const zap_coll_gpu_msg_t *m = &s->x.mail[1 + q];
        ok = ok && zap_gpu_open(ch, &m->ref[0], &s->x.in[q]) == ZAP_OK;
        ok = ok && zap_gpu_open(ch, &m->ref[1], &s->x.out[q]) == ZAP_OK;
    }
    return ok;
}

static void fill_launch(zap_coll_op_t *op, gpu_ar_t *s, zap_gpu_launch_t *l)
{
    const zap_coll_args_t *a = &op->args;
    memset(l, 0, sizeof(*l));
    l->work = s->large ? ZAP_GPU_AR_RSAG : ZAP_GPU_AR_ONESHOT;
    l->dt = a->dt;
    l->op = a->op;
    l->count = a->count;
    l->root = -1;
    l->src = a->src;
    l->dst = a->dst;
    l->ok = true;
    if (s->large) {
        /* Managed pages move to the device ahead of the kernel (a small
         * call's pages are where its last use left them: a hint per call
         * would cost more than it saves). */
        l->prefetch_src = a->src_mem == ZAP_MEM_MANAGED;
        l->prefetch_dst = a->dst_mem == ZAP_MEM_MANAGED;
        l->stage = s->stage;
        l->stage_in = s->stage_in;
        l->stage_out = s->stage_out;
        l->ok = s->ok;
        for (int q = 0; q < op->comm->size; q++) {
            l->in[q] = s->x.in[q];
            l->out[q] = s->x.out[q];
        }
    }
}

static zap_status_t ar_progress(zap_coll_op_t *op)
{
    gpu_ar_t *s = (gpu_ar_t *)op->alg_state;
    zap_status_t st = ZAP_OK;
    bool all = false;
    for (;;) {
        switch (s->state) {
        case AR_START:
            if (!zap_coll_agree_voted(op, ZAP_COLL_LANE_VOTE_GPU))
                return zap_coll_gpu_fall_back(op); /* no message beyond the header */
            s->state = AR_CHAN;
            break;
        case AR_CHAN:
            if ((st = zap_coll_gpu_chan_ready(op, &s->x)) == ZAP_ERR_UNSUPPORTED)
                return zap_coll_gpu_fall_back(op);
            if (st != ZAP_OK)
                return st;
            s->large = op->args.bytes > ZAP_GPU_BANK_BYTES;
            s->state = s->large ? AR_PREP : AR_LAUNCH;
            break;
        case AR_PREP: {
            zap_gpu_ref_t rin, rout;
            bool can = false;
            memset(&rin, 0, sizeof(rin));
            memset(&rout, 0, sizeof(rout));
            if ((st = expose(op, s, &rin, &rout, &can)) != ZAP_OK)
                return st;
            if ((st = zap_coll_gpu_round_post(op, &s->x, R1_STEP, can ? ZAP_GPU_MSG_CAN : 0, &rin, &rout)) != ZAP_OK)
                return st;
            s->state = AR_R1;
            break;
        }
        case AR_R1:
            if ((st = zap_coll_step_test(op)) != ZAP_OK)
                return st;
            if ((st = zap_coll_gpu_round_all(op, &s->x, ZAP_GPU_MSG_CAN, &all)) != ZAP_OK)
                return st;
            if (!all)
                return zap_coll_gpu_fall_back(op);
            s->ok = open_peers(op, s);
            s->state = AR_LAUNCH;
            break;
        case AR_LAUNCH: {
            zap_gpu_launch_t l;
            fill_launch(op, s, &l);
            if ((st = zap_coll_gpu_launch(op, &s->x, &l)) != ZAP_OK)
                return st;
            s->state = AR_WAIT;
            break;
        }
        case AR_WAIT:
            st = zap_coll_gpu_wait(op, &s->x);
            if (st == ZAP_ERR_CANCELED) /* some rank could not open a peer's buffer: nobody touched the data */
                return zap_coll_gpu_fall_back(op);
            if (st == ZAP_OK)
                zap_coll_gpu_count(true);
            return st;
        default:
            return ZAP_ERR_INVALID_PARAM;
        }
    }
}

zap_status_t zap_gpu_allreduce_init(zap_coll_op_t *op)
{
    gpu_ar_t *s = (gpu_ar_t *)op->alg_state;
    memset(s, 0, sizeof(*s));
    zap_coll_gpu_x_init(op, &s->x);
    s->state = AR_START;
    op->progress = ar_progress;
    op->release = zap_coll_gpu_release;
    return ZAP_OK;
}
