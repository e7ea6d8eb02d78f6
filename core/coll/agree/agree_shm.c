/* The agreement in shared memory (agree.h), for communicators whose ranks are
 * processes on one host (the segment and its layout: coll/shm/shm.h). One
 * round with no messages: each rank writes its argument words and, up to
 * ZAP_COLL_SHM_PAYLOAD bytes, its payload into its own slot, waits until every
 * other rank's slot holds the same exchange, merges the p headers and reduces
 * the p payloads in rank order ((c0 op c1) op c2) ... op c(p-1), as the flat
 * form does: every rank computes the same expression on the same operands and
 * holds identical bytes. In broadcast mode the root's slot carries the data.
 *
 * Every allreduce and broadcast on such a communicator agrees here under the
 * automatic choice (allreduce.c, bcast.c); larger vectors agree with the
 * header alone and then run their own algorithm. A peer that dies while
 * others wait for its slot is seen by its pid and named at once; one that is
 * alive but never arrives ends the wait at the communicator's timeout (the
 * engine names it). Cost at 8 bytes: one cache line written, p - 1 read. */
#include "coll/agree/agree.h"
#include "coll/comm_impl.h"
#include "coll/engine/mem.h"
#include "coll/reduce/reduce.h"
#include "coll/shm/shm.h"
#include "base/log.h"
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

zap_status_t zap_coll_agree_shm_setup(zap_coll_op_t *op, bool reserved)
{
    zap_coll_shm_t *s = op->comm->shm;
    zap_coll_agree_t *ag = &op->agree;
    if (!reserved)
        ag->shm_seq = ++s->next;
    ag->shm_wait = (zap_coll_shm_wait_t){0, 0, 0};
    return ZAP_OK;
}

/* This rank's contribution, once its previous exchange is read through. */
static void publish(zap_coll_op_t *op, zap_coll_shm_t *s)
{
    zap_coll_agree_t *ag = &op->agree;
    zap_coll_shm_slot_t *own = zap_coll_shm_slot(s, ag->shm_seq, s->rank);
    for (int f = 0; f < ZAP_HDR_NWORDS; f++)
        own->words[f] = op->hdr_own.min[f];
    if (ag->count > 0 && (ag->root < 0 || ag->root == s->rank)) /* a broadcast's data: the root's */
        zap_coll_copy(op, own->payload, ag->shm_src, ag->count * zap_dtype_size(ag->dt));
    atomic_store_explicit(&own->seq, ag->shm_seq, memory_order_release);
}

/* Every slot holds this exchange: merge the headers, then (arguments agreed)
 * reduce the payloads in rank order into the result area. */
static void combine_slots(zap_coll_op_t *op, zap_coll_shm_t *s)
{
    zap_coll_agree_t *ag = &op->agree;
    zap_coll_hdr_t h;
    for (int q = 0; q < s->size; q++) {
        const zap_coll_shm_slot_t *in = zap_coll_shm_slot(s, ag->shm_seq, q);
        words_to_hdr(in->words, &h);
        if (q == 0)
            *ag->acc = h;
        else
            zap_coll_agree_merge(ag->acc, &h);
    }
    if (ag->count > 0 && ag->root != ZAP_COLL_AGREE_GATHER && hdr_agreed(ag->acc)) {
        size_t bytes = ag->count * zap_dtype_size(ag->dt);
        unsigned char *dst = (unsigned char *)ag->acc + sizeof(zap_coll_hdr_t);
        memcpy(dst, zap_coll_shm_slot(s, ag->shm_seq, ag->root >= 0 ? ag->root : 0)->payload, bytes);
        for (int q = 1; ag->root < 0 && q < s->size; q++)
            zap_reduce_cpu(ag->dt, ag->op, dst, dst, zap_coll_shm_slot(s, ag->shm_seq, q)->payload, ag->count);
    }
}

const void *zap_coll_agree_slot(const zap_coll_op_t *op, int q)
{
    return zap_coll_shm_slot(op->comm->shm, op->agree.shm_seq, q)->payload;
}

zap_status_t zap_coll_agree_shm_progress(zap_coll_op_t *op)
{
    zap_coll_shm_t *s = op->comm->shm;
    zap_coll_agree_t *ag = &op->agree;
    if (ag->state == ZAP_AGREE_DONE)
        return zap_coll_agree_verdict(op);
    if (ag->state == ZAP_AGREE_START) {
        if (s->abandoned) {
            zap_error("coll: rank %d: an earlier shared-memory exchange on communicator %u ended without completing "
                      "(an error, or its request freed early); later ones cannot run",
                      op->comm->rank, zap_coll_comm_id(op->comm));
            return ZAP_ERR_CANCELED;
        }
        if (s->done + 1 != ag->shm_seq)
            return ZAP_INPROGRESS; /* an earlier exchange of this rank is still being read */
        publish(op, s);
        ag->state = ZAP_AGREE_STEP_WAIT;
    }
    zap_status_t st = zap_coll_shm_gather(op, &zap_coll_shm_slot(s, ag->shm_seq, 0)->seq, ZAP_COLL_SHM_SLOT_BYTES,
                                          ag->shm_seq, false, &ag->shm_wait);
    if (st != ZAP_OK)
        return st;
    combine_slots(op, s);
    s->done = ag->shm_seq;
    ag->state = ZAP_AGREE_DONE;
    return zap_coll_agree_verdict(op);
}
