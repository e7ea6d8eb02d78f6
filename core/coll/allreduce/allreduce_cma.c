/* Single-copy allreduce: ranks on one host read each other's buffers
 * directly (process_vm_readv, "cross-memory attach"), so every byte is copied
 * once between processes and there is no staging area and no message. It
 * runs after the arguments agreed in the shared-memory exchange, as large
 * exchange k of the communicator (coll/shm/shm.h), in four steps:
 *
 *   1. publish this rank's buffer addresses in its flag line, in_seq = k;
 *   2. once every in_seq holds k: reduce block r (the r-th of p even element
 *      ranges) straight into this rank's own output, reading the p inputs'
 *      block r chunk by chunk and combining them in rank order,
 *      (c0 op c1) op ... op c(p-1); after each chunk, red_seq = (k, chunk);
 *   3. pull every other rank's finished block from its output into this
 *      rank's, as far as that rank's red_seq says it is done, taking
 *      whichever rank has something new (a slow rank holds up only its own
 *      block);
 *   4. fin_seq = k, then wait until every rank's fin_seq holds k.
 *
 * Per rank it reads n bytes of other processes' memory and writes n of its
 * own, with one wait at the start and one at the end: against the large
 * shared-memory form's three copies (in, reduce, out) and two waits per
 * chunk, and the ring's 2 (p - 1) rounds. Results are identical on every rank
 * and to direct's and the shared-memory forms' (same operands, same order,
 * each element combined once by one rank, copied as bytes).
 *
 * Through the area: where the vector fits the segment's large area, step 2
 * writes block r into the area's result (allreduce_shm_large.c's; larger
 * vectors, up to p + 1 slots, span the input slots too, which this form
 * never stages in) instead of this rank's output, and step 3 copies the
 * whole result from there with memcpy, as far as each block's red_seq says
 * it is done. The reads of step 3 are then plain loads of a mapping every
 * rank shares: no system call, and no p - 1 ranks pinning the same pages of
 * one peer at once, which is where the pulls' time went on many ranks
 * (AREA_MIN_RANKS). The area holds call k until every rank's fin, as the
 * pulled outputs do, and no rank writes it for k before every rank's in_seq
 * says it has finished k - 1 (its last copy out of the area included).
 *
 * Why it is safe:
 *   - Only reads cross processes. A rank that gave up on a call (an error, a
 *     timeout) may free its buffers while others still read them; they can
 *     read garbage or fail with EFAULT, never write into it. They then wait
 *     for its fin_seq, which never comes, and report it: a call never
 *     succeeds on anything read from a rank that left it.
 *   - Block q of every rank's buffers is touched by rank q alone until q
 *     publishes it reduced: q reads block q of every input, then writes block
 *     q of its own output. The others read q's output block only after that,
 *     and write their own copy of it. In place (input = output) this holds
 *     chunk by chunk: q reads its own input chunk into scratch before its
 *     output chunk is overwritten.
 *   - A rank returns only after every rank's fin_seq holds k, i.e. after the
 *     last read of its buffers; its next call publishes new addresses only
 *     then, and every other rank read this call's before its own fin.
 *   - A dead peer is named by its pid (ESRCH from the read, or the wait's
 *     liveness check), a live one that never comes by the communicator's
 *     timeout (engine/op.c).
 *
 * The agreement carries each rank's vote that its buffers are host memory
 * (GPU memory cannot be read this way): where any rank votes no, every rank
 * takes the next candidate (the large shared-memory form if the vector fits
 * its area, else the transport algorithm of the table).
 *
 * Rooted (the reduce's single-copy form, reduce_coll/reduce_cma.c): the same
 * steps, but a rank other than the root reduces its block into scratch of
 * its own (published as its output, shifted so that the block sits at its
 * offset) and skips step 3; only the root pulls the others' blocks. The
 * others' fin waits for the root's, so their scratch and inputs outlive its
 * reads. */
#include "coll/allreduce/allreduce.h"
#include "coll/engine/mem.h"
#include "coll/engine/select.h"
#include "coll/reduce/reduce.h"
#include "coll/shm/shm.h"
#include "base/log.h"
#include "base/copy.h"
#include <stdlib.h>
#include <string.h>

/* The operands of one chunk (p of them) must stay in cache. */
#define CMA_SCRATCH_MAX ((size_t)1 << 20)
/* Through the area from this many ranks: on 2 one pull per rank meets no
 * other reader, and the area's extra copy of the own block cost more than
 * the system call it saves when measured there. */
#define AREA_MIN_RANKS 4

/* Step 2's reduction needs no wait: it runs in the call that sees every
 * address (STEP_ADDRS). */
enum { STEP_TURN, STEP_ADDRS, STEP_PULL, STEP_FIN, STEP_FIN_WAIT };

typedef struct cma_ar {
    const unsigned char *src;
    unsigned char *dst; /* the whole result: every rank's output, or the root's (NULL elsewhere) */
    unsigned char *own; /* where this rank's block goes: dst + its offset, or its scratch */
    int root;           /* -1: every rank gets the result; else only this rank */
    size_t count, es;
    size_t chunk_elems; /* elements per chunk of a block */
    zap_dtype_t dt;
    zap_op_t zop;
    int step;
    int wait_q;    /* STEP_PULL: the rank whose next chunk this rank waits for, -1: none yet */
    bool in_place;
    bool via_area;  /* blocks reduced into the large area, copied out of it (no pulls) */
    unsigned char *area; /* via_area: element 0 of the result there */
    bool vote_read; /* the agreed vote said every rank's buffers are host memory */
    zap_coll_shm_wait_t wait;
} cma_ar_t;
_Static_assert(sizeof(cma_ar_t) <= ZAP_COLL_ALG_STATE_BYTES, "state too large");

bool zap_allreduce_cma_vote(const zap_coll_op_t *op)
{
    const zap_coll_args_t *a = &op->args;
    return op->mem == ZAP_MEM_HOST && zap_coll_mem_kind(op->comm, a->src, a->bytes) == ZAP_MEM_HOST;
}

/* Whether this rank receives the whole result (and pulls the others' blocks). */
static bool gets_result(const zap_coll_shm_t *s, const cma_ar_t *a) { return a->root < 0 || a->root == s->rank; }

/* Scratch for one chunk of every rank's operand (the chunk shrinks so that
 * p of them fit CMA_SCRATCH_MAX), then, on a rank that keeps no result, its
 * own block; a->own points at where the block goes. */
static zap_status_t scratch_for(zap_coll_shm_t *s, cma_ar_t *a)
{
    size_t chunk = a->chunk_elems * a->es, cap = CMA_SCRATCH_MAX / (size_t)s->size;
    if (chunk > cap)
        a->chunk_elems = cap / a->es > 0 ? cap / a->es : 1;
    /* Chunk numbers ride in 24 bits of the flags (zap_coll_shm_tag). */
    size_t block_max = a->count / (size_t)s->size + 1;
    if (block_max / a->chunk_elems >= 0xfffff0)
        a->chunk_elems = block_max / 0xfffff0 + 1;
    size_t need = a->chunk_elems * a->es * (size_t)s->size, lo, hi;
    zap_coll_shm_block(a->count, s->size, s->rank, &lo, &hi);
    size_t ops = (need + 63) / 64 * 64, block = gets_result(s, a) ? 0 : (hi - lo) * a->es;
    if (s->cma_pulled == NULL && (s->cma_pulled = calloc((size_t)s->size, sizeof(size_t))) == NULL) {
        zap_error("coll: rank %d: single-copy allreduce: no memory", s->rank);
        return ZAP_ERR_NO_MEMORY;
    }
    if (zap_coll_shm_cma_scratch(s, ops + block) == NULL)
        return ZAP_ERR_NO_MEMORY;
    a->own = a->via_area ? a->area + lo * a->es : gets_result(s, a) ? a->dst + lo * a->es : s->cma_scratch + ops;
    return ZAP_OK;
}

/* Step 2: block r of the result, chunk by chunk, into this rank's output. */
static zap_status_t reduce_own_block(zap_coll_op_t *op, cma_ar_t *a, uint64_t k)
{
    zap_coll_shm_t *s = op->comm->shm;
    int p = s->size, r = s->rank;
    size_t lo, hi;
    zap_coll_shm_block(a->count, p, r, &lo, &hi);
    const void *operand[ZAP_COLL_SHM_MAX_RANKS];
    size_t j = 0;
    for (size_t first = lo; first < hi; first += a->chunk_elems, j++) {
        size_t n = hi - first < a->chunk_elems ? hi - first : a->chunk_elems, at = first * a->es, bytes = n * a->es;
        /* Others' operands in turn from the next rank on, so that p ranks do
         * not all read rank 0 first. */
        for (int i = 1; i <= p; i++) {
            int q = (r + i) % p;
            unsigned char *slot = s->cma_scratch + (size_t)q * a->chunk_elems * a->es;
            if (q == r) {
                /* In place, the output chunk is overwritten below (through
                 * the area, only after the reduction has read it). */
                operand[q] = a->src + at;
                if (a->in_place && !a->via_area) {
                    zap_copy(slot, a->src + at, bytes);
                    operand[q] = slot;
                }
                continue;
            }
            zap_status_t st = zap_coll_shm_read(op, q, slot, s->ctl[q].src_addr + at, bytes);
            if (st != ZAP_OK)
                return st;
            operand[q] = slot;
        }
        unsigned char *out = a->own + (first - lo) * a->es;
        zap_reduce_cpu(a->dt, a->zop, out, operand[0], operand[1], n);
        for (int q = 2; q < p; q++)
            zap_reduce_cpu(a->dt, a->zop, out, out, operand[q], n);
        atomic_store_explicit(&s->ctl[r].red_seq, zap_coll_shm_tag(k, j), memory_order_release);
        if (a->via_area) /* in place, the reduction above has read the input chunk this overwrites */
            zap_copy(a->dst + at, out, bytes);
    }
    return ZAP_OK;
}

/* Step 3, from where this rank is: every other rank's block, as far as its
 * owner has published it, from whichever rank has something new; when none
 * has, a wait (with the liveness check) on the first rank still missing. */
static zap_status_t pull(zap_coll_op_t *op, cma_ar_t *a, uint64_t k)
{
    zap_coll_shm_t *s = op->comm->shm;
    int p = s->size;
    size_t *pulled = s->cma_pulled;
    for (;;) {
        int first_missing = -1;
        bool moved = false;
        for (int i = 1; i < p; i++) {
            int q = (s->rank + i) % p;
            size_t lo, hi;
            zap_coll_shm_block(a->count, p, q, &lo, &hi);
            if (lo + pulled[q] >= hi)
                continue;
            uint64_t v = atomic_load_explicit(&s->ctl[q].red_seq, memory_order_acquire);
            size_t done = v >= zap_coll_shm_tag(k, 0) ? (size_t)(v - zap_coll_shm_tag(k, 0) + 1) * a->chunk_elems : 0;
            size_t upto = lo + done < hi ? lo + done : hi;
            if (upto <= lo + pulled[q]) {
                if (first_missing < 0)
                    first_missing = q;
                continue;
            }
            size_t at = (lo + pulled[q]) * a->es, bytes = (upto - lo - pulled[q]) * a->es;
            if (a->via_area) {
                zap_copy(a->dst + at, a->area + at, bytes);
            } else {
                zap_status_t st = zap_coll_shm_read(op, q, a->dst + at, s->ctl[q].dst_addr + at, bytes);
                if (st != ZAP_OK)
                    return st;
            }
            pulled[q] = upto - lo;
            moved = true;
        }
        if (first_missing < 0 && !moved)
            return ZAP_OK; /* every block is here */
        if (moved)
            continue;
        if (a->wait_q != first_missing) {
            a->wait_q = first_missing;
            a->wait = (zap_coll_shm_wait_t){0, 0, 0};
        }
        /* Its next chunk: the one after what this rank holds. */
        a->wait.seen = zap_coll_shm_all_ranks(s) & ~(UINT64_C(1) << first_missing);
        zap_status_t st = zap_coll_shm_gather(op, &s->ctl[0].red_seq, sizeof(s->ctl[0]),
                                              zap_coll_shm_tag(k, pulled[first_missing] / a->chunk_elems), true,
                                              &a->wait);
        if (st != ZAP_OK)
            return st;
    }
}

static zap_status_t cma_progress(zap_coll_op_t *op)
{
    cma_ar_t *a = (cma_ar_t *)op->alg_state;
    zap_coll_shm_t *s = op->comm->shm;
    zap_status_t st;
    if (a->step == STEP_TURN) {
        if (!a->vote_read && !zap_coll_agree_voted(op, ZAP_COLL_LANE_VOTE_HOST))
            return zap_coll_fall_back(op); /* some rank's buffers are not host memory */
        a->vote_read = true;
        /* Beyond one slot the result spans the whole area, every slot reserved. */
        size_t n = a->count * a->es;
        st = a->via_area ? zap_coll_shm_large_turn(op, n < s->big_bytes ? n : s->big_bytes) : zap_coll_shm_turn(op);
        if (st == ZAP_ERR_NO_MEMORY) /* no room for the area: every rank takes the next candidate */
            return zap_coll_fall_back(op);
        if (st != ZAP_OK)
            return st;
        if ((st = scratch_for(s, a)) != ZAP_OK)
            return st;
        memset(s->cma_pulled, 0, sizeof(size_t) * (size_t)s->size);
        a->step = STEP_ADDRS;
        a->wait = (zap_coll_shm_wait_t){0, 0, 0};
        size_t lo, hi;
        zap_coll_shm_block(a->count, s->size, s->rank, &lo, &hi);
        s->ctl[s->rank].src_addr = (uint64_t)(uintptr_t)a->src;
        /* Where the others would find element 0 of this rank's output: its
         * block is read at its offset from there. */
        s->ctl[s->rank].dst_addr = (uint64_t)(uintptr_t)a->own - (uint64_t)(lo * a->es);
        atomic_store_explicit(&s->ctl[s->rank].in_seq, zap_coll_shm_tag(op->shm_big_seq, 0), memory_order_release);
    }
    uint64_t k = op->shm_big_seq;
    if (a->step == STEP_ADDRS) {
        st = zap_coll_shm_gather(op, &s->ctl[0].in_seq, sizeof(s->ctl[0]), zap_coll_shm_tag(k, 0), true, &a->wait);
        if (st != ZAP_OK)
            return st;
        if ((st = reduce_own_block(op, a, k)) != ZAP_OK)
            return st;
        a->step = gets_result(s, a) ? STEP_PULL : STEP_FIN;
        a->wait_q = -1;
        a->wait = (zap_coll_shm_wait_t){0, 0, 0};
    }
    if (a->step == STEP_PULL) {
        if ((st = pull(op, a, k)) != ZAP_OK)
            return st;
        a->step = STEP_FIN;
    }
    if (a->step == STEP_FIN) {
        a->step = STEP_FIN_WAIT;
        a->wait = (zap_coll_shm_wait_t){0, 0, 0};
        atomic_store_explicit(&s->ctl[s->rank].fin_seq, zap_coll_shm_fin(k), memory_order_release);
    }
    st = zap_coll_shm_gather(op, &s->ctl[0].fin_seq, sizeof(s->ctl[0]), zap_coll_shm_fin(k), true, &a->wait);
    if (st != ZAP_OK)
        return st;
    s->big_done = k;
    return ZAP_OK;
}

static void state_init(zap_coll_op_t *op, size_t chunk, int root)
{
    const zap_coll_args_t *args = &op->args;
    cma_ar_t *a = (cma_ar_t *)op->alg_state;
    memset(a, 0, sizeof(*a));
    a->src = args->src;
    a->dst = args->dst;
    a->count = args->count;
    a->es = zap_dtype_size(args->dt);
    a->dt = args->dt;
    a->zop = args->op;
    a->in_place = args->src == args->dst;
    a->chunk_elems = chunk / a->es > 0 ? chunk / a->es : 1;
    a->root = root;
    const zap_coll_shm_t *s = op->comm->shm;
    /* The result in the area's result slot, or, larger, from the first input
     * slot on across all p + 1 (contiguous, and no input is staged here). */
    a->via_area = root < 0 && s->size >= AREA_MIN_RANKS && s->big_bytes > 0 &&
                  args->bytes <= s->big_bytes * ((size_t)s->size + 1);
    a->area = args->bytes <= s->big_bytes ? s->big_out : s->big_in;
    a->step = STEP_TURN;
}

/* Where the segment permits single-copy reads and the call agrees in it
 * (the flags are the segment's); an empty vector has nothing to read. */
zap_status_t zap_allreduce_cma_init(zap_coll_op_t *op) { return zap_allreduce_cma_start(op, -1); }

zap_status_t zap_allreduce_cma_start(zap_coll_op_t *op, int root)
{
    zap_coll_shm_t *s = op->comm->shm;
    if (s == NULL || !s->cma || op->form != ZAP_COLL_FORM_SHM || op->args.count == 0)
        return ZAP_ERR_UNSUPPORTED;
    state_init(op, zap_coll_shm_large_chunk(op, op->agreed), root);
    op->progress = cma_progress;
    return ZAP_OK;
}
