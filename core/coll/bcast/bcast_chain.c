/* Pipelined chain broadcast over virtual ranks vr = rank - root mod p: the
 * message flows 0 -> 1 -> ... -> p-1 in segments of ZAP_COLL_PIPELINE_BYTES.
 *
 * Each rank keeps up to CHAIN_WINDOW segment receives posted ahead and
 * forwards every segment to vr+1 the moment it has arrived, so the links
 * stream independently instead of advancing in lock step: (p - 2 + k)
 * segment times for k segments, n bytes per link, which approaches n/B for
 * large n (the broadcast lower bound). Segment i travels with step tag
 * i mod 256; fewer than CHAIN_WINDOW are in flight per link, so tags in
 * flight are distinct.
 *
 * Requests live in fixed slots of the operation: receive of segment i in slot
 * i mod CHAIN_WINDOW, its forward in slot CHAIN_WINDOW + i mod CHAIN_WINDOW,
 * so an operation freed midway releases them like any other. */
#include "coll/bcast/bcast.h"
#include "coll/comm_impl.h"
#include "coll/engine/mem.h"
#include "coll/engine/step.h"
#include "coll/patterns/patterns.h"
#include <string.h>

#define PHASE 1
#define CHAIN_WINDOW 4
#define CHAIN_SEG_DIV 16
#define CHAIN_SEG_MIN (32 * 1024)
#define CHAIN_SEG_MAX (256 * 1024)
_Static_assert(2 * CHAIN_WINDOW <= ZAP_COLL_MAX_REQS, "window too large for the request slots");

typedef enum chain_state { CHAIN_START, CHAIN_STREAM, CHAIN_DONE } chain_state_t;

typedef struct chain {
    chain_state_t state;
    char *buf;
    size_t bytes, seg_bytes, nseg;
    size_t recv_posted, recv_done; /* segments whose receive was posted / has completed */
    size_t sent_posted, sent_done; /* segments whose forward was posted / has completed */
    int root, vr, prev, next;
} chain_t;
_Static_assert(sizeof(chain_t) <= ZAP_COLL_ALG_STATE_BYTES, "state too large");

static size_t seg_len(const chain_t *s, size_t i)
{
    size_t off = i * s->seg_bytes;
    return s->bytes - off < s->seg_bytes ? s->bytes - off : s->seg_bytes;
}

/* Completion of one slot: ZAP_INPROGRESS, or its status (request freed). */
static zap_status_t slot_test(zap_coll_op_t *op, int slot)
{
    zap_request_t *r = op->reqs[slot];
    if (r == NULL)
        return ZAP_OK;
    int done = 0;
    zap_status_t st = zap_request_test(r, &done);
    if (!done && st == ZAP_OK)
        return ZAP_INPROGRESS;
    zap_request_free(r);
    op->reqs[slot] = NULL;
    return st;
}

static zap_status_t slot_post(zap_coll_op_t *op, int slot, bool send, int peer, size_t seg, void *buf, size_t len)
{
    uint64_t tag = zap_coll_tag(op, PHASE, (int)(seg & ZAP_COLL_STEP_MAX));
    zap_comm_t *c = op->comm;
    int tpeer = zap_coll_transport_rank(c, peer);
    return send ? zap_transport_isend(c->t, tpeer, tag, buf, len, &op->reqs[slot])
                : zap_transport_irecv(c->t, tpeer, tag, buf, len, &op->reqs[slot]);
}

static zap_status_t chain_stream(zap_coll_op_t *op, chain_t *s, int p)
{
    bool has_prev = s->vr != 0, has_next = s->vr != p - 1;
    zap_status_t st;
    for (;;) {
        bool moved = false;
        /* Receives: keep the window full, retire them in order. */
        while (has_prev && s->recv_posted < s->nseg && s->recv_posted - s->recv_done < CHAIN_WINDOW) {
            size_t i = s->recv_posted;
            if ((st = slot_post(op, (int)(i % CHAIN_WINDOW), false, s->prev, i, s->buf + i * s->seg_bytes,
                                seg_len(s, i))) != ZAP_OK)
                return st;
            s->recv_posted++;
            moved = true;
        }
        if (has_prev && s->recv_done < s->recv_posted) {
            st = slot_test(op, (int)(s->recv_done % CHAIN_WINDOW));
            if (st != ZAP_INPROGRESS) {
                if (st != ZAP_OK)
                    return st;
                s->recv_done++;
                moved = true;
            }
        }
        size_t have = has_prev ? s->recv_done : s->nseg; /* segments present here */
        /* Forwards: each arrived segment, while its slot is free. */
        if (has_next && s->sent_done < s->sent_posted) {
            st = slot_test(op, CHAIN_WINDOW + (int)(s->sent_done % CHAIN_WINDOW));
            if (st != ZAP_INPROGRESS) {
                if (st != ZAP_OK)
                    return st;
                s->sent_done++;
                moved = true;
            }
        }
        while (has_next && s->sent_posted < have && s->sent_posted - s->sent_done < CHAIN_WINDOW) {
            size_t i = s->sent_posted;
            if ((st = slot_post(op, CHAIN_WINDOW + (int)(i % CHAIN_WINDOW), true, s->next, i,
                                s->buf + i * s->seg_bytes, seg_len(s, i))) != ZAP_OK)
                return st;
            s->sent_posted++;
            moved = true;
        }
        bool recv_finished = !has_prev || s->recv_done == s->nseg;
        bool send_finished = !has_next || s->sent_done == s->nseg;
        if (recv_finished && send_finished)
            return ZAP_OK;
        if (!moved)
            return ZAP_INPROGRESS;
    }
}

static zap_status_t chain_progress(zap_coll_op_t *op)
{
    chain_t *s = (chain_t *)op->alg_state;
    int p = op->comm->size;
    switch (s->state) {
    case CHAIN_START:
        s->vr = zap_pat_vrank(op->comm->rank, s->root, p);
        s->prev = zap_pat_realrank(s->vr - 1, s->root, p);
        s->next = zap_pat_realrank(s->vr + 1, s->root, p);
        if (p == 1 || s->nseg == 0) {
            s->state = CHAIN_DONE;
            return ZAP_OK;
        }
        /* Fixed request slots; empty ones are NULL (freeing NULL is a no-op). */
        for (int i = 0; i < 2 * CHAIN_WINDOW; i++)
            op->reqs[i] = NULL;
        op->nreqs = 2 * CHAIN_WINDOW;
        s->state = CHAIN_STREAM;
        /* fall through */
    case CHAIN_STREAM: {
        zap_status_t st = chain_stream(op, s, p);
        if (st == ZAP_OK) {
            op->nreqs = 0;
            s->state = CHAIN_DONE;
        }
        return st;
    }
    case CHAIN_DONE:
    default:
        return ZAP_OK;
    }
}

zap_status_t zap_bcast_chain_init(zap_coll_op_t *op)
{
    chain_t *s = (chain_t *)op->alg_state;
    size_t bytes = op->args.bytes;
    memset(s, 0, sizeof(*s));
    s->state = CHAIN_START;
    s->buf = op->args.dst;
    s->bytes = bytes;
    s->root = op->args.root;
    /* Segments of about 1/16 of the message (32 KiB to 256 KiB): the pipeline
     * fills in p - 2 segment times, so short segments keep a 1 MiB broadcast
     * from waiting on its first hops (docs/collectives.md, "Selection"). */
    s->seg_bytes = zap_coll_segment_bytes(op->comm, bytes, CHAIN_SEG_DIV, CHAIN_SEG_MIN, CHAIN_SEG_MAX);
    s->nseg = (bytes + s->seg_bytes - 1) / s->seg_bytes;
    op->progress = chain_progress;
    return ZAP_OK;
}
