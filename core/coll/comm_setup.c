/* A communicator's setup: what its ranks agree on once, before the
 * collectives that need it (allreduce and broadcast choose by it): whether
 * any rank's node is oversubscribed, and, where every rank is a process on
 * one host, the shared segment (coll/shm/shm.h). zap_comm_create and
 * zap_comm_split run it at creation; a group communicator runs it ahead of
 * its first allreduce or broadcast, so creating one sends nothing.
 *
 * It is an operation of its own (kind ZAP_COLL_SETUP) with up to three
 * exchanges in recursive doubling, each a payload riding the agreement's
 * engine (agree/):
 *   1. the segment's name, broadcast from rank 0, which made it;
 *   2. MIN over "mapped it": rank 0 then unlinks the name, so nothing is left
 *      in /dev/shm by a job that dies later;
 *   3. MIN over (sees every rank's process, may read every rank's memory,
 *      finds those reads fast (zap_coll_shm_cma_fast), not oversubscribed,
 *      minus this rank's proposal for zap's next id):
 *      a group communicator takes the largest proposal and the one after
 *      it as the ids of its hierarchy's communicators (coll/hier/hier.h).
 * The segment is kept only where every rank mapped it and sees every other
 * rank's process. Every rank of a communicator over the UCX transport runs
 * exchanges 1 and 2 whatever it wishes (a rank that does not want the
 * segment just answers no), so ranks whose wishes differ still meet; where
 * no segment can exist (the in-process transport, one rank) only exchange 3
 * runs, and none at all when the oversubscription is known already. */
#include "coll/comm_impl.h"
#include "coll/engine/op.h"
#include "coll/shm/shm.h"
#include "transport/checksum.h"
#include "base/log.h"
#include <string.h>

#define PHASE_REF 1
#define PHASE_MAPPED 2
#define PHASE_FLAGS 3

enum { SETUP_REF, SETUP_MAPPED, SETUP_FLAGS };
enum { FLAG_ALIVE, FLAG_CMA, FLAG_CMA_FAST, FLAG_NOT_OVER, FLAG_IDS, NFLAGS };

typedef struct setup {
    int step;
    bool want;     /* this rank wants the segment */
    bool unlinked; /* rank 0: the name is gone */
    zap_coll_shm_ref_t ref;
    zap_coll_shm_map_t map;
    int32_t mapped;
    int32_t flags[NFLAGS];
} setup_t;
_Static_assert(sizeof(setup_t) <= ZAP_COLL_ALG_STATE_BYTES, "state too large");

static void unlink_once(const zap_comm_t *c, setup_t *s)
{
    if (c->rank == 0 && !s->unlinked) {
        zap_coll_shm_unlink(&s->ref);
        s->unlinked = true;
    }
}

bool zap_coll_setup_segment_possible(const zap_comm_t *c)
{
    zap_transport_caps_t caps;
    const zap_transport_t *base = c->unwrapped != NULL ? c->unwrapped : c->t;
    return c->size >= 2 && zap_transport_caps((zap_transport_t *)base, &caps) == ZAP_OK &&
           strcmp(caps.name, "ucp") == 0;
}

static zap_status_t flags_exchange(zap_coll_op_t *op, setup_t *s, int32_t mapped_all)
{
    zap_comm_t *c = op->comm;
    int32_t ok[2] = {0, 0};
    if (mapped_all)
        zap_coll_shm_check(&s->map, c->rank, c->size, c->set.cma, ok);
    s->flags[FLAG_ALIVE] = ok[0];
    s->flags[FLAG_CMA] = ok[1];
    s->flags[FLAG_CMA_FAST] = !ok[1] || c->set.cma_always || zap_coll_shm_cma_fast();
    s->flags[FLAG_NOT_OVER] = !zap_coll_local_oversubscribed(&c->set);
    s->flags[FLAG_IDS] = -(int32_t)zap_coll_id_proposal(); /* MIN of the negated: the largest proposal */
    s->step = SETUP_FLAGS;
    return zap_coll_agree_init(op, ZAP_COLL_FORM_RD, PHASE_FLAGS, s->flags, NFLAGS, ZAP_DT_INT32, ZAP_OP_MIN);
}

/* The last exchange is in: keep the segment or let it go. */
static zap_status_t finish(zap_coll_op_t *op, setup_t *s)
{
    zap_comm_t *c = op->comm;
    const int32_t *all = zap_coll_agree_result(op);
    if (!c->oversubscribed_known) {
        c->oversubscribed = all[FLAG_NOT_OVER] == 0;
        c->oversubscribed_known = true;
    }
    if (c->child_ctx == 0) { /* a group communicator: ids for its hierarchy (coll/hier/hier.h) */
        uint64_t agreed = (uint64_t)-(int64_t)all[FLAG_IDS];
        zap_coll_id_reserve(agreed, 2);
        c->child_ctx = zap_coll_id_wrap(agreed);
    }
    zap_status_t st = ZAP_OK;
    if (s->map.base != NULL && all[FLAG_ALIVE]) {
        st = zap_coll_shm_adopt(&s->map, c->rank, c->size, all[FLAG_CMA] != 0, &c->shm);
        if (st == ZAP_OK)
            c->shm->cma_slow = c->shm->cma && all[FLAG_CMA_FAST] == 0;
        c->shm_bytes = zap_coll_shm_bytes(c->shm);
    }
    zap_coll_shm_unmap(&s->map); /* not adopted: no segment (adopted: nothing left to unmap) */
    memset(c->memo, 0, sizeof(c->memo)); /* the calls' predicates read what was just agreed */
    return st;
}

static zap_status_t setup_progress(zap_coll_op_t *op)
{
    setup_t *s = (setup_t *)op->alg_state;
    zap_comm_t *c = op->comm;
    zap_status_t st = zap_coll_agree_progress(op);
    while (st == ZAP_OK) {
        switch (s->step) {
        case SETUP_REF:
            if (c->rank != 0) {
                memcpy(&s->ref, zap_coll_agree_result(op), sizeof(s->ref));
                if (s->want)
                    zap_coll_shm_map(c->size, &s->ref, &s->map);
            }
            zap_coll_shm_enter(&s->map, c->rank);
            s->mapped = s->map.base != NULL;
            s->step = SETUP_MAPPED;
            st = zap_coll_agree_init(op, ZAP_COLL_FORM_RD, PHASE_MAPPED, &s->mapped, 1, ZAP_DT_INT32, ZAP_OP_MIN);
            break;
        case SETUP_MAPPED: {
            int32_t all = *(const int32_t *)zap_coll_agree_result(op);
            unlink_once(c, s);
            st = flags_exchange(op, s, all);
            break;
        }
        default:
            st = finish(op, s);
            c->setup = st == ZAP_OK ? ZAP_COLL_SETUP_DONE : ZAP_COLL_SETUP_FAILED;
            c->setup_status = st;
            return st;
        }
        if (st == ZAP_OK)
            st = zap_coll_agree_progress(op);
    }
    if (st != ZAP_INPROGRESS) {
        c->setup = ZAP_COLL_SETUP_FAILED;
        c->setup_status = st;
    }
    return st;
}

/* A setup that ended half way (an error, or its communicator destroyed) lets
 * its name and mapping go. */
static void setup_release(zap_coll_op_t *op)
{
    setup_t *s = (setup_t *)op->alg_state;
    unlink_once(op->comm, s);
    zap_coll_shm_unmap(&s->map);
}

zap_status_t zap_coll_setup_post(zap_comm_t *comm, zap_request_t **req_p)
{
    zap_coll_op_t *op = NULL;
    zap_status_t st = zap_coll_op_get(comm, ZAP_COLL_SETUP, &op);
    if (st != ZAP_OK)
        return st;
    setup_t *s = (setup_t *)op->alg_state;
    memset(s, 0, sizeof(*s));
    s->map.fd = -1;
    zap_coll_agree_header(op, 0, ZAP_DT_INT32, ZAP_OP_MIN, -1, 0, false);
    op->progress = setup_progress;
    op->release = setup_release;
    op->internal = req_p == NULL;
    comm->setup = ZAP_COLL_SETUP_RUNNING;
    if (zap_coll_setup_segment_possible(comm)) {
        /* Checksum mode exists to check payloads end to end; the segment
         * would carry them past it. */
        s->want = comm->set.shm && comm->size <= ZAP_COLL_SHM_MAX_RANKS && comm->checksum_t == NULL &&
                  !zap_transport_is_checksum(comm->t);
        if (comm->rank == 0 && s->want) {
            /* The bank count is rank 0's to choose (written into the
             * segment): on one host its view of oversubscription is the
             * node's. */
            bool over = comm->oversubscribed_known ? comm->oversubscribed : zap_coll_local_oversubscribed(&comm->set);
            zap_coll_shm_make(comm->size, zap_coll_shm_banks_for(comm->size, over), comm->set.shm_large_bytes, &s->ref,
                              &s->map);
        }
        s->step = SETUP_REF;
        st = zap_coll_agree_init_bcast(op, ZAP_COLL_FORM_RD, PHASE_REF, &s->ref, sizeof(s->ref), 0);
    } else {
        st = flags_exchange(op, s, 0);
    }
    if (st != ZAP_OK) {
        comm->setup = ZAP_COLL_SETUP_FAILED;
        comm->setup_status = st;
        zap_coll_op_fail_local(op, st);
    }
    zap_coll_op_start(op, req_p);
    return ZAP_OK;
}
