/* Recursive doubling: the header exchange every collective starts with and,
 * with a payload, the small-message allreduce.
 *
 * Each message is the sender's accumulated header (min and max of every
 * argument field) followed by its accumulated data. In step k ranks exchange
 * with newrank ^ 2^k and combine; after log2(pof2) steps every active rank
 * holds the reduction over all ranks. Rank counts that are not powers of two
 * fold first: of the first 2*rem ranks, each even one hands its data to the odd
 * one above it and receives the final result from it at the end (2 extra
 * messages on those ranks only).
 *
 * Reduction order: every combination is lower(rank) op higher(rank) as whole
 * subcube partials: step k combines the partial of the subcube holding the
 * lower ranks with the upper one. Both partners compute the same expression
 * with the same operands (the ops are commutative bit for bit, including
 * float16/bfloat16 through float), so every rank ends with identical bytes.
 *
 * A message of the wrong length (a peer with another count) or a truncated
 * one marks the header bad instead of failing: the exchange still completes
 * on every rank with the same number of messages, and every rank then reports
 * ZAP_ERR_MISMATCH. Cost: log2(p) rounds (+2 when p is not a power of two) of
 * count elements each; the payload is copied into and out of pool scratch. */
#include "coll/coll_impl.h"
#include "coll/patterns/patterns.h"
#include "base/log.h"
#include <stddef.h>
#include <string.h>

#define RD_STEP_FOLD 0
#define RD_STEP_UNFOLD ZAP_COLL_STEP_MAX

static const char *const word_names[ZAP_HDR_NWORDS] = {"count", "root", "v-counts", "lanes"};
static const char *const lane_names[ZAP_LANE_N] = {"kind", "algorithm", "datatype", "op", "bad"};

static uint64_t lane(uint64_t w, int i) { return (w >> (8 * i)) & 0xff; }

void zap_coll_hdr_init(zap_coll_op_t *op, size_t count, zap_dtype_t dt, zap_op_t zop, int root, uint64_t extra,
                       bool bad)
{
    uint64_t lanes = ((uint64_t)op->kind & 0xff) << (8 * ZAP_LANE_KIND) |
                     ((uint64_t)op->alg & 0xff) << (8 * ZAP_LANE_ALG) |
                     ((uint64_t)dt & 0xff) << (8 * ZAP_LANE_DTYPE) | ((uint64_t)zop & 0xff) << (8 * ZAP_LANE_OP) |
                     (uint64_t)(bad ? 1 : 0) << (8 * ZAP_LANE_BAD);
    zap_coll_hdr_t *h = &op->hdr_own;
    h->min[ZAP_HDR_COUNT] = h->max[ZAP_HDR_COUNT] = count;
    h->min[ZAP_HDR_ROOT] = h->max[ZAP_HDR_ROOT] = (uint64_t)(int64_t)root;
    h->min[ZAP_HDR_EXTRA] = h->max[ZAP_HDR_EXTRA] = extra;
    h->min[ZAP_HDR_LANES] = h->max[ZAP_HDR_LANES] = lanes;
}

static void *hdr_data(zap_coll_hdr_t *h) { return (char *)h + sizeof(zap_coll_hdr_t); }

/* root >= 0: broadcast mode (data is read on that rank only). */
static zap_status_t rd_setup(zap_coll_op_t *op, int phase, const void *data, size_t count, zap_dtype_t dt,
                             zap_op_t zop, int root)
{
    zap_coll_rd_t *rd = &op->rd;
    /* Field by field: the engine runs once per collective and a memset of
     * the struct showed in the small-allreduce profile. */
    zap_coll_rd_release(op); /* a second exchange on one operation (scatterv's status) */
    /* A shared-memory exchange set up but not yet published (a local failure
     * after the setup turns the call into a bad header) keeps its number. */
    bool shm_reserved = rd->shm && rd->state == RD_START;
    rd->state = RD_START;
    rd->newrank = 0;
    rd->mask = 0;
    rd->in_len = 0;
    rd->in_st = ZAP_OK;
    rd->phase = phase;
    rd->count = count;
    rd->dt = dt;
    rd->op = zop;
    rd->root = root;
    rd->msg_bytes = sizeof(zap_coll_hdr_t) + count * zap_dtype_size(dt);
    rd->expect = rd->msg_bytes;
    /* The receive area starts on a 64-byte boundary (the header holds 64-bit
     * fields; the payload follows the 64-byte header). Host payloads that fit
     * use the operation's inline area, GPU-resident ones pool scratch the
     * reduction kernels can address. */
    size_t stride = (rd->msg_bytes + 63) & ~(size_t)63;
    rd->stride = stride;
    rd->flat = op->flat_agree && root < 0;
    rd->shm = op->shm_agree; /* allreduce or broadcast (bcast_shm.c) */
    size_t slots = rd->flat ? (size_t)op->comm->size : rd->shm ? 1 : 2;
    bool host = op->mem != ZAP_MEM_DEVICE && op->mem != ZAP_MEM_MANAGED;
    if ((count == 0 || host) && slots * stride <= ZAP_COLL_RD_INLINE_BYTES) {
        rd->acc = (zap_coll_hdr_t *)rd->inline_area;
    } else {
        zap_status_t st = zap_coll_scratch(op, &rd->buf, slots * stride);
        if (st != ZAP_OK)
            return st;
        rd->acc = rd->buf.ptr;
    }
    rd->in = (zap_coll_hdr_t *)((char *)rd->acc + stride);
    if (rd->shm) {
        rd->shm_src = data;
        return zap_coll_shm_setup(op, shm_reserved);
    }
    if (rd->flat)
        return zap_coll_flat_setup(op, data);
    if (count > 0 && (root < 0 || root == op->comm->rank))
        zap_coll_copy(op, hdr_data(rd->acc), data, count * zap_dtype_size(dt));
    *rd->acc = op->hdr_own;
    return ZAP_OK;
}

zap_status_t zap_coll_rd_init(zap_coll_op_t *op, int phase, const void *data, size_t count, zap_dtype_t dt,
                              zap_op_t zop)
{
    return rd_setup(op, phase, data, count, dt, zop, -1);
}

zap_status_t zap_coll_rd_init_bcast(zap_coll_op_t *op, int phase, const void *data, size_t bytes, int root)
{
    return rd_setup(op, phase, data, bytes, ZAP_DT_UINT8, ZAP_OP_SUM, root);
}

void zap_coll_rd_release(zap_coll_op_t *op)
{
    if (op->rd.buf.handle != 0)
        (void)zap_buf_free(&op->rd.buf);
}

void *zap_coll_rd_result(zap_coll_op_t *op) { return hdr_data(op->rd.acc); }

void zap_coll_hdr_merge(zap_coll_hdr_t *acc, const zap_coll_hdr_t *in)
{
    for (int f = 0; f < ZAP_HDR_LANES; f++) {
        if (in->min[f] < acc->min[f])
            acc->min[f] = in->min[f];
        if (in->max[f] > acc->max[f])
            acc->max[f] = in->max[f];
    }
    uint64_t a_lo = acc->min[ZAP_HDR_LANES], a_hi = acc->max[ZAP_HDR_LANES];
    uint64_t i_lo = in->min[ZAP_HDR_LANES], i_hi = in->max[ZAP_HDR_LANES];
    if (a_lo != i_lo || a_hi != i_hi) { /* rare: ranks disagree somewhere */
        uint64_t lo = 0, hi = 0;
        for (int l = 0; l < ZAP_LANE_N; l++) {
            uint64_t x = lane(a_lo, l) < lane(i_lo, l) ? lane(a_lo, l) : lane(i_lo, l);
            uint64_t y = lane(a_hi, l) > lane(i_hi, l) ? lane(a_hi, l) : lane(i_hi, l);
            lo |= x << (8 * l);
            hi |= y << (8 * l);
        }
        acc->min[ZAP_HDR_LANES] = lo;
        acc->max[ZAP_HDR_LANES] = hi;
    }
}

/* acc = lo op hi, where acc is one of them and the other is the received
 * message; a malformed message only marks the header bad. */
zap_status_t zap_coll_rd_combine(zap_coll_op_t *op, bool in_is_lower)
{
    zap_coll_rd_t *rd = &op->rd;
    if (rd->in_st != ZAP_OK || rd->in_len != rd->expect) {
        if (rd->in_st != ZAP_OK && rd->in_st != ZAP_ERR_TRUNCATED)
            return rd->in_st;
        zap_coll_hdr_set_bad(rd->acc);
        return ZAP_OK;
    }
    zap_coll_hdr_merge(rd->acc, rd->in);
    if (rd->count == 0 || lane(rd->acc->max[ZAP_HDR_LANES], ZAP_LANE_BAD) != 0)
        return ZAP_OK;
    if (rd->root >= 0) { /* broadcast: take the data if the partner's side holds it */
        if (rd->expect == rd->msg_bytes)
            zap_coll_copy(op, hdr_data(rd->acc), hdr_data(rd->in), rd->count);
        return ZAP_OK;
    }
    const void *lo = in_is_lower ? hdr_data(rd->in) : hdr_data(rd->acc);
    const void *hi = in_is_lower ? hdr_data(rd->acc) : hdr_data(rd->in);
    return zap_coll_reduce(op, rd->dt, rd->op, hdr_data(rd->acc), lo, hi, rd->count);
}

zap_status_t zap_coll_rd_verdict(zap_coll_op_t *op)
{
    const zap_coll_hdr_t *h = op->rd.acc;
    for (int f = 0; f < ZAP_HDR_LANES; f++) {
        if (h->min[f] == h->max[f])
            continue;
        zap_error("coll: rank %d: collective arguments differ across ranks: %s from %llu to %llu (communicator %u, "
                  "sequence %llu)",
                  op->comm->rank, word_names[f], (unsigned long long)h->min[f], (unsigned long long)h->max[f],
                  op->comm->id, (unsigned long long)op->seq);
        return ZAP_ERR_MISMATCH;
    }
    for (int l = 0; l < ZAP_LANE_BAD; l++) {
        uint64_t lo = lane(h->min[ZAP_HDR_LANES], l), hi = lane(h->max[ZAP_HDR_LANES], l);
        if (lo == hi)
            continue;
        zap_error("coll: rank %d: collective arguments differ across ranks: %s from %llu to %llu (communicator %u, "
                  "sequence %llu)",
                  op->comm->rank, lane_names[l], (unsigned long long)lo, (unsigned long long)hi, op->comm->id,
                  (unsigned long long)op->seq);
        return ZAP_ERR_MISMATCH;
    }
    if (lane(h->max[ZAP_HDR_LANES], ZAP_LANE_BAD) != 0) {
        zap_error("coll: rank %d: a rank reported bad collective arguments or received a message of the wrong "
                  "size (communicator %u, sequence %llu)",
                  op->comm->rank, op->comm->id, (unsigned long long)op->seq);
        return ZAP_ERR_MISMATCH;
    }
    return ZAP_OK;
}

zap_status_t zap_coll_rd_progress(zap_coll_op_t *op)
{
    zap_coll_rd_t *rd = &op->rd;
    int p = op->comm->size, rank = op->comm->rank;
    int pof2 = zap_pat_pof2(p), rem = p - pof2;
    zap_status_t st;
    if (rd->shm)
        return zap_coll_shm_progress(op);
    if (rd->flat)
        return zap_coll_flat_progress(op);
    for (;;) {
        switch (rd->state) {
        case RD_START:
            if (p == 1) {
                rd->state = RD_DONE;
                break;
            }
            rd->newrank = zap_pat_rd_newrank(rank, p);
            rd->mask = 1;
            if (rd->root >= 0) /* the active rank that holds the data first */
                rd->root_nr = rd->root < 2 * rem ? rd->root / 2 : rd->root - rem;
            if (rank < 2 * rem) {
                if (rd->newrank < 0)
                    st = zap_coll_send(op, rank + 1, rd->phase, RD_STEP_FOLD, rd->acc,
                                       rd->root < 0 || rd->root == rank ? rd->msg_bytes : sizeof(zap_coll_hdr_t));
                else {
                    rd->expect = rd->root < 0 || rd->root == rank - 1 ? rd->msg_bytes : sizeof(zap_coll_hdr_t);
                    st = zap_coll_recv(op, rank - 1, rd->phase, RD_STEP_FOLD, rd->in, rd->msg_bytes, &rd->in_len,
                                       &rd->in_st);
                }
                if (st != ZAP_OK)
                    return st;
                rd->state = RD_FOLD_IN;
            } else {
                rd->state = RD_STEP_POST;
            }
            break;
        case RD_FOLD_IN:
            st = zap_coll_step_test(op);
            if (st != ZAP_OK)
                return st;
            if (rd->newrank < 0) {
                /* Folded out: wait for the result. */
                rd->expect = rd->msg_bytes;
                st = zap_coll_recv(op, rank + 1, rd->phase, RD_STEP_UNFOLD, rd->acc, rd->msg_bytes, &rd->in_len,
                                   &rd->in_st);
                if (st != ZAP_OK)
                    return st;
                rd->state = RD_FOLD_OUT_WAIT;
                break;
            }
            if ((st = zap_coll_rd_combine(op, true)) != ZAP_OK)
                return st;
            rd->state = RD_STEP_POST;
            break;
        case RD_STEP_POST: {
            if (rd->mask >= pof2) {
                rd->state = RD_FOLD_OUT;
                break;
            }
            int pnr = rd->newrank ^ rd->mask, partner = zap_pat_rd_realrank(pnr, p);
            int step = 1;
            for (int m = rd->mask; m > 1; m >>= 1)
                step++;
            /* Broadcast: a side sends the data only once its subcube holds it
             * (the root's newrank is in it); otherwise the header alone. */
            size_t send_len = rd->msg_bytes;
            rd->expect = rd->msg_bytes;
            if (rd->root >= 0) {
                if ((rd->newrank ^ rd->root_nr) >= rd->mask)
                    send_len = sizeof(zap_coll_hdr_t);
                if ((pnr ^ rd->root_nr) >= rd->mask)
                    rd->expect = sizeof(zap_coll_hdr_t);
            }
            if ((st = zap_coll_recv(op, partner, rd->phase, step, rd->in, rd->msg_bytes, &rd->in_len, &rd->in_st)) !=
                    ZAP_OK ||
                (st = zap_coll_send(op, partner, rd->phase, step, rd->acc, send_len)) != ZAP_OK)
                return st;
            rd->state = RD_STEP_WAIT;
            break;
        }
        case RD_STEP_WAIT: {
            st = zap_coll_step_test(op);
            if (st != ZAP_OK)
                return st;
            int partner = zap_pat_rd_realrank(rd->newrank ^ rd->mask, p);
            if ((st = zap_coll_rd_combine(op, partner < rank)) != ZAP_OK)
                return st;
            rd->mask <<= 1;
            rd->state = RD_STEP_POST;
            break;
        }
        case RD_FOLD_OUT:
            if (rank < 2 * rem) {
                st = zap_coll_send(op, rank - 1, rd->phase, RD_STEP_UNFOLD, rd->acc, rd->msg_bytes);
                if (st != ZAP_OK)
                    return st;
                rd->state = RD_FOLD_OUT_WAIT;
            } else {
                rd->state = RD_DONE;
            }
            break;
        case RD_FOLD_OUT_WAIT:
            st = zap_coll_step_test(op);
            if (st != ZAP_OK)
                return st;
            if (rd->newrank < 0 && (rd->in_st != ZAP_OK || rd->in_len != rd->msg_bytes)) {
                if (rd->in_st != ZAP_OK && rd->in_st != ZAP_ERR_TRUNCATED)
                    return rd->in_st;
                zap_coll_hdr_set_bad(rd->acc);
            }
            rd->state = RD_DONE;
            break;
        case RD_DONE:
            return zap_coll_rd_verdict(op);
        }
    }
}

/* --- the allreduce -------------------------------------------------------- */

typedef struct rd_allreduce {
    const void *sendbuf;
    void *recvbuf;
    size_t count;
    zap_dtype_t dt;
    zap_op_t op;
    bool exchanging; /* after a flat agreement: the payload's own exchange is running */
} rd_allreduce_t;
_Static_assert(sizeof(rd_allreduce_t) <= ZAP_COLL_ALG_STATE_BYTES, "state too large");

static zap_status_t rd_allreduce_finish(zap_coll_op_t *op)
{
    rd_allreduce_t *s = (rd_allreduce_t *)op->alg_state;
    zap_coll_copy(op, s->recvbuf, zap_coll_rd_result(op), s->count * zap_dtype_size(s->dt));
    return ZAP_OK;
}

/* After a flat or shared-memory header agreement (allreduce_direct.c,
 * allreduce_shm.c: the pattern every allreduce on this communicator uses
 * under auto) the vector gets its own recursive-doubling exchange in phase 1:
 * one round more than rd alone, chosen where the selection puts rd above the
 * one-round algorithm's size bound. */
static zap_status_t rd_after_flat(zap_coll_op_t *op)
{
    rd_allreduce_t *s = (rd_allreduce_t *)op->alg_state;
    zap_status_t st;
    if (!s->exchanging) {
        op->flat_agree = false;
        op->shm_agree = false;
        if ((st = zap_coll_rd_init(op, 1, s->sendbuf, s->count, s->dt, s->op)) != ZAP_OK)
            return st;
        s->exchanging = true;
    }
    if ((st = zap_coll_rd_progress(op)) != ZAP_OK)
        return st;
    return rd_allreduce_finish(op);
}

zap_status_t zap_allreduce_rd_init(zap_coll_op_t *op, const void *sendbuf, void *recvbuf, size_t count,
                                   zap_dtype_t dt, zap_op_t zop)
{
    rd_allreduce_t *s = (rd_allreduce_t *)op->alg_state;
    s->sendbuf = sendbuf;
    s->recvbuf = recvbuf;
    s->count = count;
    s->dt = dt;
    s->op = zop;
    s->exchanging = false;
    bool flat = (op->flat_agree || op->shm_agree) && op->comm->size > 1;
    zap_status_t st = zap_coll_rd_init(op, 0, sendbuf, flat ? 0 : count, dt, zop);
    if (st != ZAP_OK)
        return st;
    op->agreeing = true;
    op->progress = flat ? rd_after_flat : rd_allreduce_finish;
    return ZAP_OK;
}
