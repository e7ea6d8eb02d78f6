/* Blocking calls and the fast form of small ones (fast.h). What the fast
 * form leaves out is the operation: taking and clearing it, choosing its
 * candidates, the progress and wait loops and the free, together several
 * times the cost of the exchange itself for a broadcast of a few bytes. */
#include "coll/engine/fast.h"
#include "coll/coll_test.h"
#include "coll/shm/shm.h"
#include "base/log.h"

/* How long a fast call polls for a slot it needs before it hands over to an
 * operation: about what the operation's own setup costs, so a peer a little
 * behind is met here. None when oversubscribed: the peer may need this core. */
#define FAST_POLLS 256

/* Whether a call of desc with args a may take the fast form: comm's ranks
 * share a segment, nothing is in flight or revoked, the buffers are host
 * memory, and the last call of the same size and flags chose desc's fast
 * algorithm first, agreeing in shared memory, with no vote or only those
 * the fast form casts (the memo's fast flag, engine/select.c, choose()):
 * the operation would choose the same. */
static bool eligible(zap_comm_t *comm, const zap_coll_desc_t *desc, const zap_coll_args_t *a)
{
    if (desc->fast_setup == NULL || comm->shm == NULL || comm->setup != ZAP_COLL_SETUP_DONE ||
        a->mem != ZAP_MEM_HOST || a->bytes > ZAP_COLL_SHM_PAYLOAD || a->bytes > comm->shm_bytes ||
        !zap_coll_op_quiet(comm))
        return false;
    const zap_coll_cands_memo_t *m = &comm->memo[desc->kind];
    return m->n > 0 && m->fast && m->bytes == a->bytes && m->call_flags == a->call_flags;
}

unsigned long long zap_coll_test_fast_calls(const zap_comm_t *comm)
{
    return comm != NULL ? (unsigned long long)comm->fast_calls : 0;
}

/* The fast form of the call, polling up to polls times for the slots it
 * reads: ZAP_OK (done), ZAP_INPROGRESS (handed over: post it now) or
 * ZAP_ERR_UNSUPPORTED (not taken, nothing written). */
static zap_status_t try_fast(zap_comm_t *comm, const zap_coll_desc_t *desc, const zap_coll_args_t *a,
                             zap_status_t local, unsigned polls)
{
    if (local != ZAP_OK || a->empty || !eligible(comm, desc, a))
        return ZAP_ERR_UNSUPPORTED;
    zap_coll_shm_fast_t f;
    f.src2 = NULL;
    f.bytes2 = 0;
    f.via = -1;
    f.via_off = 0;
    zap_coll_hdr_words(f.words, desc->kind, desc->fast_alg, a->hdr_count, a->dt, a->op, a->root, a->hdr_extra);
    if (!desc->fast_setup(comm, a, &f))
        return ZAP_ERR_UNSUPPORTED;
    zap_status_t st = zap_coll_agree_shm_fast_open(comm, &f, comm->oversubscribed ? 0 : polls);
    if (st != ZAP_OK)
        return st;
    comm->seq++; /* the number the operation would have taken */
    desc->fast_finish(comm, a, &f);
    zap_coll_agree_shm_fast_close(comm, &f);
    comm->fast_calls++;
    return ZAP_OK;
}

/* Posts the call as an operation; a call handed over whose operation
 * cannot be taken leaves its slot written with nothing to complete it. */
static zap_status_t post(zap_comm_t *comm, const zap_coll_desc_t *desc, const zap_coll_args_t *a,
                         zap_status_t local, bool handed, zap_request_t **req_p)
{
    zap_status_t st = zap_coll_post(comm, desc, a, local, req_p);
    if (handed && (st != ZAP_OK || comm->shm->prepub != 0)) {
        /* No operation, or one whose exchange did not take the slot over (its
         * candidate declined the call): later exchanges would read a slot of
         * this call, so they fail instead (ZAP_ERR_CANCELED, logged). */
        if (st == ZAP_OK)
            zap_error("coll: rank %d: %s: the operation did not take over the call's shared-memory slot (communicator "
                      "%u); the segment's later exchanges cannot run",
                      comm->rank, desc->name, zap_coll_comm_id(comm));
        comm->shm->prepub = 0;
        comm->shm->abandoned = true;
    }
    return st;
}

zap_status_t zap_coll_call(zap_comm_t *comm, const zap_coll_desc_t *desc, const zap_coll_args_t *a,
                           zap_status_t local)
{
    zap_status_t st = try_fast(comm, desc, a, local, FAST_POLLS);
    if (st == ZAP_OK)
        return ZAP_OK;
    zap_request_t *req = NULL;
    if ((st = post(comm, desc, a, local, st == ZAP_INPROGRESS, &req)) != ZAP_OK)
        return st;
    return zap_coll_wait_free(req);
}

zap_status_t zap_coll_ipost(zap_comm_t *comm, const zap_coll_desc_t *desc, const zap_coll_args_t *a,
                            zap_status_t local, zap_request_t **req_p)
{
    zap_status_t st = try_fast(comm, desc, a, local, 0);
    if (st == ZAP_OK) {
        *req_p = &comm->done_req;
        return ZAP_OK;
    }
    return post(comm, desc, a, local, st == ZAP_INPROGRESS, req_p);
}

/* --- the shared completed request ---------------------------------------------- */

static zap_status_t done_test(zap_request_t *req) { return zap_request_status(req); }
static zap_status_t done_wait(zap_request_t *req, double deadline)
{
    (void)deadline;
    return zap_request_status(req);
}
static void done_free(zap_request_t *req) { (void)req; }
static zap_status_t done_progress(zap_transport_t *t)
{
    (void)t;
    return ZAP_OK;
}
static void done_close(zap_transport_t *t) { (void)t; }

const zap_transport_ops_t zap_coll_done_ops = {
    .name = "coll-done",
    .test = done_test,
    .wait = done_wait,
    .request_free = done_free,
    .progress = done_progress,
    .close = done_close,
};
