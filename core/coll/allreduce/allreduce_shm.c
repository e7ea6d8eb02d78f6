/* Shared-memory allreduce: for communicators whose ranks are processes on one
 * host (the segment and its layout: coll/shm/shm.h). One round with no
 * messages: each rank writes its argument words and, for vectors up to
 * ZAP_COLL_SHM_PAYLOAD bytes, its vector into its own slot, waits until every
 * other rank's slot holds the same exchange, merges the p headers and reduces
 * the p vectors in rank order ((c0 op c1) op c2) ... op c(p-1), as the direct
 * algorithm does: every rank computes the same expression on the same
 * operands and holds identical bytes (the allreduce itself is
 * allreduce_direct.c's, on this exchange instead of the flat one).
 *
 * This is also the argument agreement of every allreduce on such a
 * communicator under ZAP_ALLREDUCE_ALG=auto (allreduce_rd.c's engine with
 * op->shm_agree set): larger vectors agree here with the header alone and
 * then run their own algorithm over the transport. Whether a call agrees in
 * shared memory depends only on the communicator (agreed when it was made)
 * and the setting, never on the arguments, so ranks that pass different
 * counts still meet in one exchange and all report ZAP_ERR_MISMATCH.
 *
 * A peer that dies while others wait for its slot is seen by its pid (a
 * system call every few milliseconds of waiting) and named at once; one that
 * is alive but never arrives ends the wait after ZAP_TIMEOUT (comm.c names
 * it). Cost at 8 bytes: one cache line written, p - 1 read. Vectors above
 * a slot, up to the segment's large area, take allreduce_shm_large.c after
 * this exchange has agreed their arguments; a broadcast rides it the same
 * way (bcast_shm.c). The helpers both large forms share are here too. */
#include "coll/coll_impl.h"
#include "coll/reduce/reduce.h"
#include "coll/shm/shm.h"
#include "base/log.h"
#include <string.h>

/* How often a waiting rank looks for dead peers. */
#define SHM_LIVENESS_PERIOD 0.002
#define SHM_POLLS_PER_CLOCK 64

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
    return ((h->max[ZAP_HDR_LANES] >> (8 * ZAP_LANE_BAD)) & 0xff) == 0;
}

zap_status_t zap_coll_shm_setup(zap_coll_op_t *op, bool reserved)
{
    zap_coll_shm_t *s = op->comm->shm;
    zap_coll_rd_t *rd = &op->rd;
    if (!reserved)
        rd->shm_seq = ++s->next;
    rd->shm_wait = (zap_coll_shm_wait_t){0, 0, 0};
    return ZAP_OK;
}

/* This rank's contribution, once its previous exchange is read through. */
static void publish(zap_coll_op_t *op, zap_coll_shm_t *s)
{
    zap_coll_rd_t *rd = &op->rd;
    zap_coll_shm_slot_t *own = zap_coll_shm_slot(s, rd->shm_seq, s->rank);
    for (int f = 0; f < ZAP_HDR_NWORDS; f++)
        own->words[f] = op->hdr_own.min[f];
    if (rd->count > 0 && (rd->root < 0 || rd->root == s->rank)) /* a broadcast's data: the root's */
        zap_coll_copy(op, own->payload, rd->shm_src, rd->count * zap_dtype_size(rd->dt));
    atomic_store_explicit(&own->seq, rd->shm_seq, memory_order_release);
}

/* Names the first rank still missing whose process is gone. */
static zap_status_t check_liveness(const zap_coll_op_t *op, const zap_coll_shm_t *s, uint64_t seen)
{
    for (int q = 0; q < s->size; q++) {
        if ((seen >> q) & 1 || !zap_coll_shm_peer_dead(s, q))
            continue;
        zap_error("coll: rank %d: peer rank %d (pid %d) failed: its process is gone (shared-memory allreduce on "
                  "communicator %u, sequence %llu)",
                  op->comm->rank, zap_coll_transport_rank(op->comm, q), (int)s->pids[q], op->comm->id,
                  (unsigned long long)op->seq);
        return ZAP_ERR_PEER_FAILED;
    }
    return ZAP_OK;
}

zap_status_t zap_coll_shm_gather(zap_coll_op_t *op, const _Atomic uint64_t *first, size_t stride, uint64_t seq,
                                 bool at_least, zap_coll_shm_wait_t *w)
{
    const zap_coll_shm_t *s = op->comm->shm;
    int p = s->size;
    uint64_t all = zap_coll_shm_all_ranks(s);
    for (int q = 0; q < p && w->seen != all; q++) {
        if ((w->seen >> q) & 1)
            continue;
        const _Atomic uint64_t *flag = (const _Atomic uint64_t *)((const char *)first + (size_t)q * stride);
        uint64_t v = atomic_load_explicit(flag, memory_order_acquire);
        if (v == seq || (at_least && v > seq))
            w->seen |= UINT64_C(1) << q;
    }
    op->shm_waiting = NULL;
    if (w->seen == all)
        return ZAP_OK;
    if (++w->polls % SHM_POLLS_PER_CLOCK == 0) {
        double now = zap_clock_now();
        if (w->check_at == 0) {
            w->check_at = now + SHM_LIVENESS_PERIOD;
        } else if (now >= w->check_at) {
            w->check_at = now + SHM_LIVENESS_PERIOD;
            zap_status_t st = check_liveness(op, s, w->seen);
            if (st != ZAP_OK)
                return st;
        }
    }
    op->shm_waiting = w;
    return ZAP_INPROGRESS;
}

static zap_status_t gather_slots(zap_coll_op_t *op, zap_coll_shm_t *s)
{
    zap_coll_rd_t *rd = &op->rd;
    return zap_coll_shm_gather(op, &zap_coll_shm_slot(s, rd->shm_seq, 0)->seq, ZAP_COLL_SHM_SLOT_BYTES, rd->shm_seq,
                               false, &rd->shm_wait);
}

zap_status_t zap_coll_shm_progress(zap_coll_op_t *op)
{
    zap_coll_shm_t *s = op->comm->shm;
    zap_coll_rd_t *rd = &op->rd;
    int p = s->size;
    if (rd->state == RD_DONE)
        return zap_coll_rd_verdict(op);
    if (rd->state == RD_START) {
        if (s->abandoned) {
            zap_error("coll: rank %d: an earlier shared-memory allreduce on communicator %u ended without completing "
                      "(an error, or its request freed early); later ones cannot run",
                      op->comm->rank, op->comm->id);
            return ZAP_ERR_CANCELED;
        }
        if (s->done + 1 != rd->shm_seq)
            return ZAP_INPROGRESS; /* an earlier exchange of this rank is still being read */
        publish(op, s);
        rd->state = RD_STEP_WAIT;
    }
    zap_status_t st = gather_slots(op, s);
    if (st != ZAP_OK)
        return st;
    /* Every slot holds this exchange: merge the headers, then (arguments
     * agreed) reduce the vectors in rank order into the result area. */
    zap_coll_hdr_t h;
    for (int q = 0; q < p; q++) {
        const zap_coll_shm_slot_t *in = zap_coll_shm_slot(s, rd->shm_seq, q);
        words_to_hdr(in->words, &h);
        if (q == 0)
            *rd->acc = h;
        else
            zap_coll_hdr_merge(rd->acc, &h);
    }
    if (rd->count > 0 && hdr_agreed(rd->acc)) {
        size_t bytes = rd->count * zap_dtype_size(rd->dt);
        unsigned char *dst = (unsigned char *)rd->acc + sizeof(zap_coll_hdr_t);
        memcpy(dst, zap_coll_shm_slot(s, rd->shm_seq, rd->root >= 0 ? rd->root : 0)->payload, bytes);
        for (int q = 1; rd->root < 0 && q < p; q++)
            zap_reduce_cpu(rd->dt, rd->op, dst, dst, zap_coll_shm_slot(s, rd->shm_seq, q)->payload, rd->count);
    }
    s->done = rd->shm_seq;
    rd->state = RD_DONE;
    /* Agreement happens once per call: an algorithm that sets up the engine
     * again afterwards (the GPU path falling back to rabenseifner or ring)
     * must not take a second exchange number it would never publish. */
    op->shm_agree = false;
    return zap_coll_rd_verdict(op);
}

void zap_coll_shm_settle(zap_coll_op_t *op)
{
    zap_coll_shm_t *s = op->comm->shm;
    if (s == NULL)
        return;
    if (op->rd.shm && op->rd.shm_seq > s->done)
        s->abandoned = true;
    /* The same for its large exchange, whichever form took it. */
    if (op->shm_big_seq != 0 && op->shm_big_seq > s->big_done)
        s->big_abandoned = true;
}

int zap_coll_shm_first_missing(const zap_coll_op_t *op)
{
    if (op->comm->shm == NULL || op->shm_waiting == NULL)
        return -1;
    for (int q = 0; q < op->comm->shm->size; q++)
        if (!((op->shm_waiting->seen >> q) & 1))
            return q;
    return -1;
}

zap_status_t zap_coll_shm_turn(zap_coll_op_t *op)
{
    zap_coll_shm_t *s = op->comm->shm;
    if (op->shm_big_seq == 0)
        op->shm_big_seq = ++s->big_next;
    if (s->big_abandoned) {
        zap_error("coll: rank %d: an earlier large shared-memory collective on communicator %u ended without "
                  "completing (an error, or its request freed early); later ones cannot run",
                  op->comm->rank, op->comm->id);
        return ZAP_ERR_CANCELED;
    }
    return s->big_done + 1 == op->shm_big_seq ? ZAP_OK : ZAP_INPROGRESS;
}

zap_status_t zap_coll_shm_large_turn(zap_coll_op_t *op, size_t bytes)
{
    zap_coll_shm_t *s = op->comm->shm;
    zap_status_t turn = zap_coll_shm_turn(op);
    if (turn != ZAP_OK)
        return turn;
    /* A call larger than the area reserved so far grows it: rank 0 does, in
     * call order, the others wait until the state covers the call or says
     * there was no room (the FULL bit makes it larger than any size). The
     * state only grows, and stops at the first failure, so a rank that reads
     * it late still decides as rank 0 did for this call. */
    uint64_t known = s->big_known;
    if ((known & ~ZAP_COLL_SHM_LARGE_FULL) < bytes && !(known & ZAP_COLL_SHM_LARGE_FULL)) {
        if (s->rank == 0) {
            s->big_known = zap_coll_shm_reserve_large(s, bytes);
        } else {
            if (!s->big_waiting) {
                s->big_wait = (zap_coll_shm_wait_t){zap_coll_shm_all_ranks(s) & ~UINT64_C(1), 0, 0}; /* rank 0 only */
                s->big_waiting = true;
            }
            zap_status_t st = zap_coll_shm_gather(op, s->big_state, 0, bytes, true, &s->big_wait);
            if (st != ZAP_OK)
                return st;
            s->big_waiting = false;
            s->big_known = atomic_load_explicit(s->big_state, memory_order_acquire);
        }
    }
    if ((s->big_known & ~ZAP_COLL_SHM_LARGE_FULL) < bytes) {
        /* The call takes the transport instead: its number is done. */
        s->big_done = op->shm_big_seq;
        atomic_store_explicit(&s->ctl[s->rank].fin_seq, zap_coll_shm_fin(op->shm_big_seq), memory_order_release);
        return ZAP_ERR_NO_MEMORY;
    }
    return ZAP_OK;
}

size_t zap_coll_shm_large_chunk(zap_coll_op_t *op, bool agreed)
{
    if (agreed)
        return ZAP_COLL_SHM_CHUNK_BYTES;
    size_t chunk = zap_coll_segment_bytes(SIZE_MAX, 1, ZAP_COLL_SHM_CHUNK_BYTES, ZAP_COLL_SHM_CHUNK_BYTES);
    if (chunk != ZAP_COLL_SHM_CHUNK_BYTES)
        op->hdr_own.min[ZAP_HDR_EXTRA] = op->hdr_own.max[ZAP_HDR_EXTRA] = chunk;
    return chunk;
}


/* --- the allreduce -------------------------------------------------------- */

/* Small vectors: the direct allreduce (every rank's vector, reduced in rank
 * order) on this exchange instead of the flat one; larger: the large form. */
zap_status_t zap_allreduce_shm_init(zap_coll_op_t *op, const void *sendbuf, void *recvbuf, size_t count,
                                    zap_dtype_t dt, zap_op_t zop)
{
    if (count * zap_dtype_size(dt) > ZAP_COLL_SHM_PAYLOAD)
        return zap_allreduce_shm_large_init(op, sendbuf, recvbuf, count, dt, zop, false);
    return zap_allreduce_direct_init(op, sendbuf, recvbuf, count, dt, zop);
}
