/* The agreement in shared memory (agree.h), for communicators whose ranks are
 * processes on one host (the segment and its layout: coll/shm/shm.h). One
 * round with no messages: each rank writes its argument words and, up to
 * ZAP_COLL_SHM_PAYLOAD bytes, its payload into its own slot, then reads the
 * slots its part of the call needs and merges their headers with its own.
 *
 * Two-way (the default): every rank reads every slot, merges the p headers
 * and reduces the p payloads in rank order ((c0 op c1) op c2) ... op c(p-1),
 * as the flat form does: every rank computes the same expression on the same
 * operands and holds identical bytes. Every allreduce and broadcast agrees
 * here under the automatic choice; larger vectors agree with the header
 * alone and then run their own algorithm, which needs every rank to know
 * that the arguments agreed.
 *
 * One-way (zap_coll_agree_shm_need): in a call the exchange carries whole, a
 * rank reads only the slots whose data it needs: a broadcast's or scatter's
 * root none (it returns once its slot is written), the other ranks the
 * root's; a gather's or reduce's root every slot, the others none; a scan's
 * rank r the slots below r. This is what takes the agreement's round trip
 * out of small rooted calls: like Open MPI's, their roots send and go on.
 * Bank reuse (shm.h) bounds how far ahead a writer runs.
 *
 * What a one-way call checks: each rank compares its header with those it
 * reads, so a non-root finds a root whose arguments differ in that call.
 * Differences between ranks that read nothing of each other (two ranks that
 * both take themselves for the root, say) are found later, through the
 * chain: every slot carries a hash of its writer's agreed arguments of all
 * earlier exchanges, and a reader whose own chain differs fails with a
 * mismatch naming the writer. The next two-way call (an allreduce, a
 * barrier, any call above a slot) reads every slot, so it finds any such
 * difference at the latest. A failure one rank may see alone revokes the
 * communicator (engine/op.c), so every rank fails that call or its next
 * one: a mismatch in a rooted or prefix call ends the communicator, where a
 * two-way mismatch, seen by every rank alike, leaves it usable. A program
 * whose last calls differ in a way no reader saw ends without the error.
 *
 * A peer that dies while others wait for its slot or its done line is seen
 * by its pid and named at once; one that is alive but never arrives ends the
 * wait at the communicator's deadline if one is set (the engine names it).
 * Cost at 8 bytes: one cache line written, the needed ones read. */
#include "coll/agree/agree.h"
#include "coll/coll_test.h"
#include "coll/comm_impl.h"
#include "coll/engine/mem.h"
#include "coll/reduce/reduce.h"
#include "coll/shm/shm.h"
#include "base/log.h"
#include <assert.h>
#include <string.h>

static void words_to_hdr(const uint64_t *w, zap_coll_hdr_t *h)
{
    for (int f = 0; f < ZAP_HDR_NWORDS; f++)
        h->min[f] = h->max[f] = w[f];
}

static bool hdr_agreed(const zap_coll_hdr_t *h)
{
    for (int f = 0; f < ZAP_HDR_NWORDS; f++)
        if (h->min[f] != h->max[f])
            return false;
    return ((h->max[ZAP_HDR_LANES] >> (8 * ZAP_COLL_LANE_BAD)) & 0xff) == 0;
}

int zap_coll_test_shm_banks(int p) { return (int)zap_coll_shm_banks(p); }
int zap_coll_test_comm_shm_banks(const zap_comm_t *comm)
{
    return comm != NULL && comm->shm != NULL ? (int)comm->shm->banks : 0;
}

/* The lanes every rank must share (kind, algorithm, datatype, op): the
 * chain leaves out the votes and the bad mark, which differ by rank. */
#define AGREED_LANES ((UINT64_C(1) << (8 * ZAP_COLL_LANE_BAD)) - 1)

/* A multiply-xor step per word: the chain only has to differ where the
 * arguments did, not resist anyone choosing them. */
static inline uint64_t mix(uint64_t h, uint64_t v)
{
    h = (h ^ v) * UINT64_C(0x9e3779b97f4a7c15);
    return h ^ (h >> 29);
}

/* Over the minimum words: a rank's own header has min = max, and a merged
 * one that differs from them fails its exchange (every rank that read it
 * sees the mismatch), so the chain only follows exchanges that agreed. */
static uint64_t chain_next(uint64_t c, const zap_coll_hdr_t *h)
{
    for (int f = 0; f < ZAP_HDR_LANES; f++)
        c = mix(c, h->min[f]);
    return mix(c, h->min[ZAP_HDR_LANES] & AGREED_LANES);
}

static bool same_agreed(const uint64_t *a, const uint64_t *b)
{
    for (int f = 0; f < ZAP_HDR_LANES; f++)
        if (a[f] != b[f])
            return false;
    return ((a[ZAP_HDR_LANES] ^ b[ZAP_HDR_LANES]) & AGREED_LANES) == 0;
}

/* Kinds whose small calls run one-way on some rank (the forms that call
 * zap_coll_agree_shm_need): a failure seen in such an exchange may be this
 * rank's alone. */
static bool one_way_kind(uint64_t lanes)
{
    switch ((zap_coll_kind_t)((lanes >> (8 * ZAP_COLL_LANE_KIND)) & 0xff)) {
    case ZAP_COLL_BCAST:
    case ZAP_COLL_SCATTERV:
    case ZAP_COLL_GATHER:
    case ZAP_COLL_REDUCE:
    case ZAP_COLL_SCAN:
    case ZAP_COLL_EXSCAN: return true;
    default: return false;
    }
}

zap_status_t zap_coll_agree_shm_setup(zap_coll_op_t *op, bool reserved)
{
    zap_coll_shm_t *s = op->comm->shm;
    zap_coll_agree_t *ag = &op->agree;
    if (reserved) {
        /* keeps its number, and whether the fast form wrote its slot */
    } else if (s->prepub != 0) { /* a fast call handed over: its slot is written (below) */
        ag->shm_seq = s->prepub;
        s->prepub = 0;
        ag->shm_prepub = true;
    } else {
        ag->shm_seq = ++s->next;
        ag->shm_prepub = false;
    }
    ag->shm_wait = (zap_coll_shm_wait_t){0, 0, 0};
    ag->shm_need = zap_coll_shm_all_ranks(s) & ~(UINT64_C(1) << s->rank);
    return ZAP_OK;
}

void zap_coll_agree_shm_need(zap_coll_op_t *op, uint64_t need)
{
    zap_coll_shm_t *s = op->comm->shm;
    if (!op->agree.shm || op->agree.state != ZAP_AGREE_START)
        return;
    op->agree.shm_need = need & zap_coll_shm_all_ranks(s) & ~(UINT64_C(1) << s->rank);
}

/* Whether every rank has read through seq - BANKS, the previous exchange of
 * seq's bank (shm.h), so that this rank may write seq. One load per rank
 * while the readers keep up. */
static bool bank_free_now(zap_coll_shm_t *s, uint64_t seq)
{
    if (seq <= s->banks || s->safe >= seq - s->banks)
        return true;
    uint64_t low = UINT64_MAX;
    for (int q = 0; q < s->size; q++) {
        uint64_t v = atomic_load_explicit(zap_coll_shm_done_line(s, q), memory_order_acquire);
        low = v < low ? v : low;
    }
    if (low < seq - s->banks)
        return false;
    s->safe = low;
    return true;
}

/* Before writing exchange seq into its bank: the bank is free, or a wait. */
static zap_status_t bank_free(zap_coll_op_t *op, zap_coll_shm_t *s, uint64_t seq)
{
    if (bank_free_now(s, seq))
        return ZAP_OK;
    uint64_t want = seq - s->banks;
    zap_status_t st = zap_coll_shm_gather(op, zap_coll_shm_done_line(s, 0), 8 * sizeof(uint64_t), want, true,
                                          &op->agree.shm_wait);
    if (st == ZAP_OK)
        s->safe = want;
    return st;
}

/* This rank's contribution, once its previous exchange is read through and
 * the bank is free. */
static void publish(zap_coll_op_t *op, zap_coll_shm_t *s)
{
    zap_coll_agree_t *ag = &op->agree;
    zap_coll_shm_slot_t *own = zap_coll_shm_slot(s, ag->shm_seq, s->rank);
    for (int f = 0; f < ZAP_HDR_NWORDS; f++)
        own->words[f] = op->hdr_own.min[f];
    own->chain = s->chain;
    if (ag->count > 0 && (ag->root < 0 || ag->root == s->rank)) { /* a broadcast's data: the root's */
        size_t first = ag->count * zap_dtype_size(ag->dt) - ag->shm_bytes2;
        zap_coll_copy(op, own->payload, ag->shm_src, first);
        if (ag->shm_bytes2 > 0)
            zap_coll_copy(op, own->payload + first, ag->shm_src2, ag->shm_bytes2);
    }
    atomic_store_explicit(&own->seq, ag->shm_seq, memory_order_release);
}

/* Every slot this rank reads holds this exchange: merge their headers with
 * its own, check their chains, then (arguments agreed) take the root's data
 * or, reading every slot, reduce the payloads in rank order into the result
 * area. The chain moves on by what every rank can compute alike: the merged
 * header where this rank read every slot, else its own (equal to the merged
 * one wherever the arguments agree). */
static void combine_slots(zap_coll_op_t *op, zap_coll_shm_t *s)
{
    zap_coll_agree_t *ag = &op->agree;
    const zap_coll_shm_slot_t *mine = zap_coll_shm_slot(s, ag->shm_seq, s->rank);
    zap_coll_hdr_t own, h;
    words_to_hdr(mine->words, &own);
    *ag->acc = own;
    bool lone = one_way_kind(mine->words[ZAP_HDR_LANES]);
    for (uint64_t m = ag->shm_need; m != 0; m &= m - 1) {
        int q = __builtin_ctzll(m);
        const zap_coll_shm_slot_t *in = zap_coll_shm_slot(s, ag->shm_seq, q);
        words_to_hdr(in->words, &h);
        zap_coll_agree_merge(ag->acc, &h);
        lone = lone || one_way_kind(in->words[ZAP_HDR_LANES]);
        if (ag->shm_chain_bad < 0 && in->chain != mine->chain) {
            ag->shm_chain_bad = q;
            if (op->culprit < 0)
                op->culprit = zap_coll_transport_rank(op->comm, q);
        }
        if (op->culprit < 0 && !same_agreed(in->words, mine->words))
            op->culprit = zap_coll_transport_rank(op->comm, q);
    }
    bool all = ag->shm_need == (zap_coll_shm_all_ranks(s) & ~(UINT64_C(1) << s->rank));
    ag->shm_lone = lone || ag->shm_chain_bad >= 0;
    s->chain = chain_next(s->chain, all ? ag->acc : &own);
    if (ag->count == 0 || ag->root == ZAP_COLL_AGREE_GATHER || ag->shm_chain_bad >= 0 || !hdr_agreed(ag->acc))
        return;
    size_t bytes = ag->count * zap_dtype_size(ag->dt);
    unsigned char *dst = (unsigned char *)ag->acc + sizeof(zap_coll_hdr_t);
    if (ag->root >= 0) { /* a broadcast: the root has the data already */
        if (ag->root != s->rank && ((ag->shm_need >> ag->root) & 1))
            memcpy(dst, zap_coll_shm_slot(s, ag->shm_seq, ag->root)->payload, bytes);
        return;
    }
    if (all)
        zap_coll_agree_shm_reduce(op->comm, ag->shm_seq, s->size - 1, ag->dt, ag->op, dst, ag->count);
}

/* The verdict, with the chain's: a reader whose chain differs from a
 * writer's fails even where this call's arguments agree. */
static zap_status_t shm_verdict(zap_coll_op_t *op)
{
    zap_coll_agree_t *ag = &op->agree;
    if (ag->shm_chain_bad < 0 && hdr_agreed(ag->acc)) {
        ag->shm_lone = false;
        return ZAP_OK;
    }
    zap_status_t st = ag->shm_chain_bad >= 0 ? ZAP_ERR_MISMATCH : zap_coll_agree_verdict(op);
    if (st == ZAP_OK)
        ag->shm_lone = false;
    return st;
}

const void *zap_coll_agree_slot(const zap_coll_op_t *op, int q)
{
    return zap_coll_shm_slot(op->comm->shm, op->agree.shm_seq, q)->payload;
}

zap_status_t zap_coll_agree_shm_progress(zap_coll_op_t *op)
{
    zap_coll_shm_t *s = op->comm->shm;
    zap_coll_agree_t *ag = &op->agree;
    zap_status_t st;
    if (ag->state == ZAP_AGREE_DONE)
        return shm_verdict(op);
    if (ag->state == ZAP_AGREE_START) {
        if (s->abandoned) {
            zap_error("coll: rank %d: an earlier shared-memory exchange on communicator %u ended without completing "
                      "(an error, or its request freed early); later ones cannot run",
                      op->comm->rank, zap_coll_comm_id(op->comm));
            return ZAP_ERR_CANCELED;
        }
        if (s->done + 1 != ag->shm_seq)
            return ZAP_INPROGRESS; /* an earlier exchange of this rank is still being read */
        /* Whatever this rank read of earlier exchanges it read in the
         * progress call that completed them: those slots are free now. */
        atomic_store_explicit(zap_coll_shm_done_line(s, s->rank), s->done, memory_order_release);
        ag->state = ZAP_AGREE_STEP_POST;
    }
    if (ag->state == ZAP_AGREE_STEP_POST) {
        if (!ag->shm_prepub) {
            if ((st = bank_free(op, s, ag->shm_seq)) != ZAP_OK)
                return st;
            publish(op, s);
        }
        /* else the fast form wrote the slot: the same words, built from the
         * same arguments and candidates */
        assert(memcmp(zap_coll_shm_slot(s, ag->shm_seq, s->rank)->words, op->hdr_own.min,
                      sizeof(op->hdr_own.min)) == 0);
        ag->shm_wait = (zap_coll_shm_wait_t){zap_coll_shm_all_ranks(s) & ~ag->shm_need, 0, 0};
        ag->state = ZAP_AGREE_STEP_WAIT;
    }
    if (ag->shm_need != 0) { /* a one-way writer with nothing to read skips the wait */
        st = zap_coll_shm_gather(op, &zap_coll_shm_slot(s, ag->shm_seq, 0)->seq, ZAP_COLL_SHM_SLOT_BYTES,
                                 ag->shm_seq, false, &ag->shm_wait);
        if (st != ZAP_OK)
            return st;
    }
    combine_slots(op, s);
    s->done = ag->shm_seq;
    ag->state = ZAP_AGREE_DONE;
    /* Outside gather mode what this rank needed of the slots is in its own
     * result area now: a writer may reuse them. In gather mode the caller
     * still reads them; the line moves when the operation ends
     * (zap_coll_shm_settle) or this rank writes its next slot. */
    if (ag->root != ZAP_COLL_AGREE_GATHER)
        atomic_store_explicit(zap_coll_shm_done_line(s, s->rank), s->done, memory_order_release);
    if (ag->shm_chain_bad >= 0)
        zap_error("coll: rank %d: collective arguments differed across ranks in an earlier call that no rank could "
                  "check then (its chain differs from rank %d's; communicator %u, sequence %llu): every rank fails "
                  "this call or its next",
                  op->comm->rank, ag->shm_chain_bad, zap_coll_comm_id(op->comm), (unsigned long long)op->seq);
    return shm_verdict(op);
}

/* --- the fast form ------------------------------------------------------------ */

zap_status_t zap_coll_agree_shm_fast_open(zap_comm_t *comm, zap_coll_shm_fast_t *f, unsigned polls)
{
    zap_coll_shm_t *s = comm->shm;
    uint64_t seq = s->next + 1;
    /* Nothing is written unless the slot can be: no exchange of this rank is
     * unfinished (its done line needs no update) and the bank is free. */
    if (s->abandoned || s->done != s->next || s->prepub != 0 || !bank_free_now(s, seq))
        return ZAP_ERR_UNSUPPORTED;
    f->seq = seq;
    f->need &= zap_coll_shm_all_ranks(s) & ~(UINT64_C(1) << s->rank);
    zap_coll_shm_slot_t *own = zap_coll_shm_slot(s, seq, s->rank);
    for (int w = 0; w < ZAP_HDR_NWORDS; w++)
        own->words[w] = f->words[w];
    own->chain = s->chain;
    if (f->bytes > 0)
        memcpy(own->payload, f->src, f->bytes);
    if (f->bytes2 > 0)
        memcpy(own->payload + f->bytes, f->src2, f->bytes2);
    atomic_store_explicit(&own->seq, seq, memory_order_release);
    s->next = seq;
    uint64_t seen = 0;
    for (unsigned n = 0; seen != f->need; n++) {
        if (n > polls) {
            s->prepub = seq; /* the operation that takes this call over waits (zap_coll_agree_shm_setup) */
            return ZAP_INPROGRESS;
        }
        for (uint64_t m = f->need & ~seen; m != 0; m &= m - 1) {
            int q = __builtin_ctzll(m);
            if (atomic_load_explicit(&zap_coll_shm_slot(s, seq, q)->seq, memory_order_acquire) == seq)
                seen |= UINT64_C(1) << q;
        }
        if (f->via >= 0 && seen != f->need && ((seen >> f->via) & 1) &&
            atomic_load_explicit((_Atomic uint64_t *)(void *)(zap_coll_shm_slot(s, seq, f->via)->payload + f->via_off),
                                 memory_order_acquire) == seq) {
            /* Rank via checked every slot below it against its own words
             * and chain; checking its slot against ours (below) covers them
             * all, and what this call reads of theirs it reads through via. */
            f->need = UINT64_C(1) << f->via;
            break;
        }
    }
    /* Anything but the same words and chain (a mismatch, a bad mark) is for
     * the operation to find, name and report as every form does. */
    for (uint64_t m = f->need; m != 0; m &= m - 1) {
        const zap_coll_shm_slot_t *in = zap_coll_shm_slot(s, seq, __builtin_ctzll(m));
        if (in->chain != own->chain || memcmp(in->words, own->words, sizeof(own->words)) != 0) {
            s->prepub = seq;
            return ZAP_INPROGRESS;
        }
    }
    return ZAP_OK;
}

const void *zap_coll_agree_shm_fast_slot(const zap_comm_t *comm, const zap_coll_shm_fast_t *f, int q)
{
    return zap_coll_shm_slot(comm->shm, f->seq, q)->payload;
}

void zap_coll_agree_shm_reduce(const zap_comm_t *comm, uint64_t seq, int last, zap_dtype_t dt, zap_op_t op, void *dst,
                               size_t count)
{
    const void *srcs[ZAP_COLL_SHM_MAX_RANKS];
    for (int q = 0; q <= last; q++)
        srcs[q] = zap_coll_shm_slot(comm->shm, seq, q)->payload;
    zap_reduce_cpu_many(dt, op, dst, srcs, last + 1, count);
}

void zap_coll_agree_shm_fast_close(zap_comm_t *comm, const zap_coll_shm_fast_t *f)
{
    zap_coll_shm_t *s = comm->shm;
    zap_coll_hdr_t own;
    words_to_hdr(f->words, &own);
    /* Every slot read holds these words, so the merged header the two-way
     * exchange would chain is this one. */
    s->chain = chain_next(s->chain, &own);
    s->done = f->seq;
    atomic_store_explicit(zap_coll_shm_done_line(s, s->rank), s->done, memory_order_release);
}
