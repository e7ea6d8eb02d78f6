/* The waits and turns every shared-memory form shares (shm.h): polling
 * every rank's flag with a liveness check, the order of large exchanges, the
 * large area's growth, and what a form leaves when it ends early. */
#include "coll/shm/shm.h"
#include "coll/engine/mem.h"
#include "base/log.h"

/* How often a waiting rank looks for dead peers. */
#define SHM_LIVENESS_PERIOD 0.002
#define SHM_POLLS_PER_CLOCK 64

/* Names the first rank still missing whose process is gone. */
static zap_status_t check_liveness(zap_coll_op_t *op, const zap_coll_shm_t *s, uint64_t seen)
{
    for (int q = 0; q < s->size; q++) {
        if ((seen >> q) & 1 || !zap_coll_shm_peer_dead(s, q))
            continue;
        op->culprit = zap_coll_transport_rank(op->comm, q);
        zap_error("coll: rank %d: peer rank %d (pid %d) failed: its process is gone (shared-memory exchange on "
                  "communicator %u, sequence %llu)",
                  op->comm->rank, zap_coll_transport_rank(op->comm, q), (int)s->pids[q], zap_coll_comm_id(op->comm),
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

void zap_coll_shm_settle(zap_coll_op_t *op)
{
    zap_coll_shm_t *s = op->comm->shm;
    if (s == NULL)
        return;
    if (op->agree.shm && op->agree.shm_seq > s->done)
        s->abandoned = true;
    else if (op->agree.shm && op->agree.root == ZAP_COLL_AGREE_GATHER && op->agree.shm_seq == s->done)
        atomic_store_explicit(zap_coll_shm_done_line(s, s->rank), s->done, memory_order_release); /* read through */
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
                  op->comm->rank, zap_coll_comm_id(op->comm));
        return ZAP_ERR_CANCELED;
    }
    if (s->big_done + 1 != op->shm_big_seq)
        return ZAP_INPROGRESS;
    if (s->fin_owed != 0) {
        zap_status_t st = zap_coll_shm_gather(op, &s->ctl[0].fin_seq, sizeof(s->ctl[0]), zap_coll_shm_fin(s->fin_owed),
                                              true, &s->owed_wait);
        if (st != ZAP_OK)
            return st;
        s->fin_owed = 0;
    }
    return ZAP_OK;
}

void zap_coll_shm_end(zap_coll_op_t *op)
{
    zap_coll_shm_t *s = op->comm->shm;
    uint64_t k = op->shm_big_seq;
    s->big_done = k;
    s->fin_owed = k;
    s->owed_wait = (zap_coll_shm_wait_t){0, 0, 0};
    atomic_store_explicit(&s->ctl[s->rank].fin_seq, zap_coll_shm_fin(k), memory_order_release);
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
        /* The call takes another candidate instead: its number is done. */
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
    size_t chunk = zap_coll_segment_bytes(op->comm, SIZE_MAX, 1, ZAP_COLL_SHM_CHUNK_BYTES, ZAP_COLL_SHM_CHUNK_BYTES);
    if (chunk != ZAP_COLL_SHM_CHUNK_BYTES)
        op->hdr_own.min[ZAP_HDR_EXTRA] = op->hdr_own.max[ZAP_HDR_EXTRA] = chunk;
    return chunk;
}

size_t zap_coll_shm_sync_chunk(zap_coll_op_t *op, bool agreed)
{
    size_t chunk = zap_coll_shm_large_chunk(op, agreed);
    if (op->comm->oversubscribed && op->comm->set.pipeline_bytes == 0)
        return ZAP_COLL_SHM_OVERSUB_CHUNK_BYTES;
    return chunk;
}

zap_status_t zap_coll_shm_exchange(zap_coll_op_t *op, zap_coll_shm_exchange_t *x, size_t reserve, uint64_t seen,
                                   void (*copy_in)(zap_coll_op_t *op), void (*body)(zap_coll_op_t *op))
{
    zap_coll_shm_t *s = op->comm->shm;
    zap_status_t st;
    if (x->step == 0) {
        if ((st = zap_coll_shm_large_turn(op, reserve)) != ZAP_OK)
            return st;
        copy_in(op);
        atomic_store_explicit(&s->ctl[s->rank].in_seq, zap_coll_shm_tag(op->shm_big_seq, 0), memory_order_release);
        x->wait = (zap_coll_shm_wait_t){seen, 0, 0};
        x->step = 1;
    }
    uint64_t k = op->shm_big_seq;
    if (x->step == 1) {
        if ((st = zap_coll_shm_gather(op, &s->ctl[0].in_seq, sizeof(s->ctl[0]), zap_coll_shm_tag(k, 0), true,
                                      &x->wait)) != ZAP_OK)
            return st;
        body(op);
        if (seen == 0) { /* every rank's input was here: every live rank completes this call alike */
            zap_coll_shm_end(op);
            return ZAP_OK;
        }
        atomic_store_explicit(&s->ctl[s->rank].fin_seq, zap_coll_shm_fin(k), memory_order_release);
        x->wait = (zap_coll_shm_wait_t){0, 0, 0};
        x->step = 2;
    }
    /* Some ranks were not waited for: one that died before its input could
     * fail the call elsewhere, so no rank returns before every fin_seq. */
    if ((st = zap_coll_shm_gather(op, &s->ctl[0].fin_seq, sizeof(s->ctl[0]), zap_coll_shm_fin(k), true,
                                  &x->wait)) != ZAP_OK)
        return st;
    s->big_done = k;
    return ZAP_OK;
}

void zap_coll_shm_copy_but(const zap_coll_op_t *op, unsigned char *to, size_t to_first, const unsigned char *from,
                           size_t from_first, size_t es, size_t n, size_t lo, size_t hi, bool skip)
{
    if (!skip) {
        zap_coll_copy(op, to + to_first * es, from + from_first * es, n * es);
        return;
    }
    zap_coll_copy(op, to + to_first * es, from + from_first * es, lo * es);
    zap_coll_copy(op, to + (to_first + hi) * es, from + (from_first + hi) * es, (n - hi) * es);
}
