/* Allreduce on the GPU-resident path (see gpu.h for the choice and the
 * fallback). p ranks, each with a staging slot laid out as
 *   D: the rank's input (count elements), A: its result segment, B: an
 *   incoming segment (A and B ceil(count / p) elements each).
 * Steps:
 *   1. copy the input into D (and prefetch managed buffers to the GPU);
 *   round 1: every rank says it can take part and shows its slot's handle;
 *   2. rank r reduces segment r: A = D_0[r] op D_1[r] op ... op D_{p-1}[r],
 *      peers' parts copied into B first, in rank order (deterministic);
 *   round 2: every rank says its reduction succeeded (user buffers untouched
 *      so far, so a failure anywhere still falls back cleanly);
 *   3. copy every rank's A into its segment of the output;
 *   round 3: every rank is done reading its peers' slots, which may then be
 *      reused.
 * Data moves by the copy engines (cudaMemcpyAsync, peer copies over NVLink or
 * PCIe) and the cuda/coll kernels, all on the slot's stream; the progress
 * function only polls an event, so several collectives can be outstanding. */
#include "coll/gpu/gpu_round.h"
#include "coll/engine/select.h"
#include "coll/engine/step.h"
#include "coll/reduce/reduce.h"
#include "base/log.h"
#include <string.h>

enum { AR_COPY_IN, AR_COPY_IN_WAIT, AR_R1_WAIT, AR_REDUCE_WAIT, AR_R2_WAIT, AR_COPY_OUT_WAIT, AR_R3_WAIT };

typedef struct stage_ar {
    zap_stage_x_t x;
    const void *src;
    void *dst;
    size_t count, esize;
    zap_dtype_t dt;
    zap_op_t zop;
    int state;
    bool can;
    bool src_managed, dst_managed;
    zap_status_t cuda_st; /* first CUDA failure of this rank, reported in round 3 */
} stage_ar_t;
_Static_assert(sizeof(stage_ar_t) <= ZAP_COLL_ALG_STATE_BYTES, "state fits the operation");

static size_t align256(size_t n) { return (n + 255) / 256 * 256; }

/* Segment q: elements [lo, hi) of count, split as evenly as p allows. */
static size_t seg_lo(size_t count, int p, int q) { return count / (size_t)p * (size_t)q + (count % (size_t)p < (size_t)q ? count % (size_t)p : (size_t)q); }

static size_t off_a(const stage_ar_t *s) { return align256(s->count * s->esize); }
static size_t off_b(const stage_ar_t *s, int p)
{
    return off_a(s) + align256((s->count + (size_t)p - 1) / (size_t)p * s->esize);
}

/* Everyone agreed the path is out: the next candidate runs the call, on the
 * user buffers, as if it had been chosen from the start (the arguments are
 * already agreed). */
static zap_status_t fall_back(zap_coll_op_t *op)
{
    stage_ar_t *s = (stage_ar_t *)op->alg_state;
    zap_stage_x_release(&s->x);
    zap_stage_count(false);
    return zap_coll_fall_back(op);
}

/* Step 2: this rank's segment into A. */
static zap_status_t reduce_own(zap_coll_op_t *op, stage_ar_t *s)
{
    int p = op->comm->size, r = op->comm->rank;
    unsigned char *base = zap_stage_base(s->x.slot);
    void *peer[ZAP_STAGE_MAX_RANKS];
    for (int q = 0; q < p; q++) {
        if (q == r) {
            peer[q] = base;
            continue;
        }
        zap_status_t st = zap_stage_peer(&s->x.in[q].ref, &peer[q]);
        if (st != ZAP_OK)
            return st;
    }
    size_t lo = seg_lo(s->count, p, r), n = seg_lo(s->count, p, r + 1) - lo;
    size_t at = lo * s->esize, nb = n * s->esize;
    unsigned char *a = base + off_a(s), *b = base + off_b(s, p);
    const void *acc = NULL;
    zap_status_t st = ZAP_OK;
    for (int q = 0; q < p && st == ZAP_OK; q++) {
        const unsigned char *operand = (const unsigned char *)peer[q] + at;
        if (q != r) {
            unsigned char *into = q == 0 ? a : b;
            st = zap_stage_copy(s->x.slot, into, operand, nb);
            operand = into;
        }
        if (q == 0) {
            acc = operand;
            continue;
        }
        if (st == ZAP_OK)
            st = zap_stage_reduce(s->x.slot, s->dt, s->zop, a, acc, operand, n);
        acc = a;
    }
    return st;
}

/* Step 3: every segment's result into the output. */
static zap_status_t copy_out(zap_coll_op_t *op, stage_ar_t *s)
{
    int p = op->comm->size, r = op->comm->rank;
    zap_status_t st = ZAP_OK;
    for (int k = 0; k < p && st == ZAP_OK; k++) {
        int q = (r + k) % p; /* own segment first, then peers in turn: spreads the load over the links */
        void *base = NULL;
        if (q == r)
            base = zap_stage_base(s->x.slot);
        else
            st = zap_stage_peer(&s->x.in[q].ref, &base);
        if (st != ZAP_OK)
            break;
        size_t lo = seg_lo(s->count, p, q), n = seg_lo(s->count, p, q + 1) - lo;
        st = zap_stage_copy(s->x.slot, (unsigned char *)s->dst + lo * s->esize,
                            (unsigned char *)base + off_a(s), n * s->esize);
    }
    return st;
}

static zap_status_t ar_progress(zap_coll_op_t *op)
{
    stage_ar_t *s = (stage_ar_t *)op->alg_state;
    zap_status_t st = ZAP_OK;
    bool all = false;
    for (;;) {
        switch (s->state) {
        case AR_COPY_IN:
            if (!zap_coll_agree_voted(op, ZAP_COLL_LANE_VOTE_GPU))
                return fall_back(op); /* no message beyond the header */
            s->can = true; /* this rank voted yes: its buffer is GPU-resident */
            zap_stage_x_init(op, &s->x, off_b(s, op->comm->size) + align256((s->count + (size_t)op->comm->size - 1) /
                                                                              (size_t)op->comm->size * s->esize),
                             s->can);
            if (s->x.can) {
                if (s->src_managed)
                    zap_stage_prefetch(s->x.slot, s->src, s->count * s->esize);
                if (s->dst_managed && s->dst != s->src)
                    zap_stage_prefetch(s->x.slot, s->dst, s->count * s->esize);
                st = zap_stage_copy(s->x.slot, zap_stage_base(s->x.slot), s->src, s->count * s->esize);
                if (st == ZAP_OK)
                    st = zap_stage_fence(s->x.slot);
                if (st != ZAP_OK)
                    s->x.can = false; /* declines in round 1 */
            }
            s->state = AR_COPY_IN_WAIT;
            break;
        case AR_COPY_IN_WAIT:
            if ((st = zap_stage_x_post_ready(op, &s->x)) == ZAP_INPROGRESS)
                return st;
            if (st != ZAP_OK)
                goto fail;
            s->state = AR_R1_WAIT;
            break;
        case AR_R1_WAIT:
            if ((st = zap_coll_step_test(op)) != ZAP_OK)
                goto fail_or_wait;
            if ((st = zap_stage_x_all(op, &s->x, ZAP_STAGE_CAN, &all)) != ZAP_OK)
                goto fail;
            if (!all)
                return fall_back(op);
            st = reduce_own(op, s);
            if (st == ZAP_OK)
                st = zap_stage_fence(s->x.slot);
            s->cuda_st = st;
            s->state = AR_REDUCE_WAIT;
            break;
        case AR_REDUCE_WAIT:
            if (s->cuda_st == ZAP_OK && (st = zap_stage_test(s->x.slot)) == ZAP_INPROGRESS)
                return st;
            if (s->cuda_st == ZAP_OK)
                s->cuda_st = st;
            if ((st = zap_stage_x_post(op, &s->x, 2, s->cuda_st == ZAP_OK ? ZAP_STAGE_OK : 0)) != ZAP_OK)
                goto fail;
            s->state = AR_R2_WAIT;
            break;
        case AR_R2_WAIT:
            if ((st = zap_coll_step_test(op)) != ZAP_OK)
                goto fail_or_wait;
            if ((st = zap_stage_x_all(op, &s->x, ZAP_STAGE_OK, &all)) != ZAP_OK)
                goto fail;
            if (!all)
                return fall_back(op); /* the output is untouched: the host path starts clean */
            st = copy_out(op, s);
            if (st == ZAP_OK)
                st = zap_stage_fence(s->x.slot);
            s->cuda_st = st;
            s->state = AR_COPY_OUT_WAIT;
            break;
        case AR_COPY_OUT_WAIT:
            if (s->cuda_st == ZAP_OK && (st = zap_stage_test(s->x.slot)) == ZAP_INPROGRESS)
                return st;
            if (s->cuda_st == ZAP_OK)
                s->cuda_st = st;
            if ((st = zap_stage_x_post(op, &s->x, 3, s->cuda_st == ZAP_OK ? ZAP_STAGE_OK : 0)) != ZAP_OK)
                goto fail;
            s->state = AR_R3_WAIT;
            break;
        case AR_R3_WAIT:
            if ((st = zap_coll_step_test(op)) != ZAP_OK)
                goto fail_or_wait;
            if ((st = zap_stage_x_all(op, &s->x, ZAP_STAGE_OK, &all)) != ZAP_OK)
                goto fail;
            zap_stage_x_release(&s->x);
            if (!all) {
                /* Some rank's output copy failed: every rank reports it. */
                zap_error("coll: rank %d: allreduce: GPU path: copying the result failed on %s", op->comm->rank,
                          s->cuda_st != ZAP_OK ? "this rank" : "another rank");
                return ZAP_ERR_CUDA;
            }
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
    /* A transport error: the stream may still read peers' slots or write the
     * output; wait for it before giving the slot back. */
    if (s->x.slot != NULL) {
        while (zap_stage_test(s->x.slot) == ZAP_INPROGRESS)
            ;
        zap_stage_x_release(&s->x);
    }
    return st;
}

zap_status_t zap_gpu_allreduce_init(zap_coll_op_t *op)
{
    const zap_coll_args_t *a = &op->args;
    stage_ar_t *s = (stage_ar_t *)op->alg_state;
    memset(s, 0, sizeof(*s));
    s->src = a->src;
    s->dst = a->dst;
    s->count = a->count;
    s->esize = zap_dtype_size(a->dt);
    s->dt = a->dt;
    s->zop = a->op;
    s->state = AR_COPY_IN;
    s->src_managed = zap_cuda_ptr_kind(a->src) == ZAP_MEM_MANAGED;
    s->dst_managed = op->mem == ZAP_MEM_MANAGED;
    op->progress = ar_progress;
    return ZAP_OK;
}
