/* Operations (op.h): taking and returning them, the active list and its
 * progress, local failure, and the request calls of collective requests
 * (test, wait, free) with their deadline and the drain of a freed
 * shared-memory operation. */
#include "coll/engine/op.h"
#include "coll/comm_impl.h"
#include "coll/engine/mem.h"
#include "coll/engine/select.h"
#include "coll/engine/step.h"
#include "coll/shm/shm.h"
#include "base/log.h"
#include <math.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>

static void free_op(zap_coll_op_t *op, bool may_drain);

zap_status_t zap_coll_op_get(zap_comm_t *comm, zap_coll_kind_t kind, zap_coll_op_t **op_p)
{
    zap_coll_op_t *op = comm->free_ops;
    if (op != NULL) {
        comm->free_ops = op->next;
    } else {
        op = aligned_alloc(alignof(zap_coll_op_t), (sizeof(zap_coll_op_t) + alignof(zap_coll_op_t) - 1) /
                                                       alignof(zap_coll_op_t) * alignof(zap_coll_op_t));
        if (op == NULL)
            return ZAP_ERR_NO_MEMORY;
    }
    /* Clear the common fields; the request slots, the arguments, the
     * exchange's inline area and the algorithm state are initialised by
     * whoever uses them. */
    memset(op, 0, offsetof(zap_coll_op_t, reqs));
    memset(&op->agree.buf, 0, sizeof(op->agree.buf));
    op->agree.shm = false;
    op->agree.acc = NULL;
    op->next = NULL;
    op->active = false;
    zap_request_base_init(&op->req, &comm->req_base, ZAP_REQ_SEND, -1, 0);
    op->comm = comm;
    op->seq = ++comm->seq;
    op->kind = kind;
    op->status = ZAP_INPROGRESS;
    op->mem = ZAP_MEM_HOST;
    op->req.tag = zap_coll_tag(op, 0, 0);
    *op_p = op;
    return ZAP_OK;
}

static void op_release_resources(zap_coll_op_t *op)
{
    zap_coll_step_release(op);
    /* Most small collectives hold no pool buffer at all. */
    if (op->scratch.handle != 0)
        zap_coll_scratch_free(op->comm, &op->scratch);
    if (op->scratch2.handle != 0)
        zap_coll_scratch_free(op->comm, &op->scratch2);
    if (op->host_stage.handle != 0)
        zap_coll_scratch_free(op->comm, &op->host_stage);
    op->stage_user = NULL;
    zap_coll_agree_release(op);
    if (op->release != NULL) {
        op->release(op);
        op->release = NULL;
    }
}

static void op_put(zap_coll_op_t *op)
{
    zap_comm_t *comm = op->comm;
    zap_coll_shm_settle(op); /* only if its shared-memory exchange did not finish */
    op->agree.shm = false;
    op_release_resources(op);
    op->next = comm->free_ops;
    comm->free_ops = op;
}

void zap_coll_op_fail_local(zap_coll_op_t *op, zap_status_t st)
{
    zap_coll_step_release(op);
    zap_coll_scratch_free(op->comm, &op->scratch);
    zap_coll_scratch_free(op->comm, &op->scratch2);
    zap_coll_agree_release(op);
    op->local_error = st;
    zap_coll_agree_mark_bad(&op->hdr_own);
    (void)zap_coll_agree_init(op, op->form, 0, NULL, 0, ZAP_DT_UINT8, ZAP_OP_SUM);
    op->agreeing = true;
    op->progress = NULL;
}

/* One progress call on one operation; completes it on anything but
 * ZAP_INPROGRESS. */
static void op_advance(zap_coll_op_t *op)
{
    if (op->status != ZAP_INPROGRESS)
        return;
    if (op->deferred) {
        zap_comm_t *comm = op->comm;
        if (comm->setup == ZAP_COLL_SETUP_RUNNING || comm->setup == ZAP_COLL_SETUP_NEEDED)
            return; /* its communicator's setup, ahead of it in the list, is still running */
        op->deferred = false;
        if (comm->setup == ZAP_COLL_SETUP_FAILED && op->local_error == ZAP_OK)
            op->local_error = comm->setup_status; /* it takes part with its header marked bad */
        zap_coll_op_begin(op);
    }
    zap_status_t st = ZAP_INPROGRESS;
    if (op->agreeing) {
        st = zap_coll_agree_progress(op);
        if (st == ZAP_ERR_MISMATCH && op->local_error != ZAP_OK)
            st = op->local_error; /* the rank at fault reports its own error */
        if (st == ZAP_OK) {
            op->agreeing = false;
            op->agreed = true;
            if (op->local_error != ZAP_OK)
                st = op->local_error;
            else
                st = op->progress ? ZAP_INPROGRESS : ZAP_OK;
        }
    }
    if (!op->agreeing && st == ZAP_INPROGRESS && op->progress != NULL)
        st = op->progress(op);
    if (st == ZAP_OK && op->stage_user != NULL)
        st = zap_coll_host_unstage(op); /* device buffers ran on a host copy: the result goes back */
    if (st != ZAP_INPROGRESS) {
        /* Done: give back the transport requests and scratch now, so a
         * completed request holds nothing but itself. */
        zap_coll_shm_settle(op);
        op_release_resources(op);
        op->status = st;
        zap_request_complete(&op->req, st);
    }
}

static void active_remove(zap_coll_op_t *op)
{
    zap_comm_t *comm = op->comm;
    zap_coll_op_t **pp = &comm->active_head;
    while (*pp != NULL && *pp != op)
        pp = &(*pp)->next;
    if (*pp == op)
        *pp = op->next;
    op->active = false;
    op->next = NULL;
}

/* Advances every active operation of the communicator, in post order. An
 * internal operation (a setup) that completes frees itself here. */
static void comm_progress(zap_comm_t *comm)
{
    zap_coll_op_t *next;
    for (zap_coll_op_t *op = comm->active_head; op != NULL; op = next) {
        next = op->next;
        op_advance(op);
        if (op->internal && op->status != ZAP_INPROGRESS)
            free_op(op, false);
    }
}

zap_status_t zap_comm_progress(zap_comm_t *comm)
{
    if (comm == NULL)
        return ZAP_ERR_INVALID_PARAM;
    if (comm->active_head != NULL) {
        (void)zap_transport_progress(comm->t);
        comm_progress(comm);
    }
    return ZAP_OK;
}

void zap_coll_op_start(zap_coll_op_t *op, zap_request_t **req_p)
{
    zap_comm_t *comm = op->comm;
    op->next = NULL;
    zap_coll_op_t **pp = &comm->active_head;
    while (*pp != NULL)
        pp = &(*pp)->next;
    *pp = op;
    op->active = true;
    if (req_p != NULL)
        *req_p = &op->req;
    comm_progress(comm);
}

static zap_status_t coll_req_test(zap_request_t *req)
{
    zap_coll_op_t *op = (zap_coll_op_t *)req;
    if (op->status == ZAP_INPROGRESS) {
        (void)zap_transport_progress(op->comm->t);
        comm_progress(op->comm);
    }
    return op->status;
}

/* The first pending transport request of op, to sleep on. */
static zap_request_t *first_pending(zap_coll_op_t *op)
{
    for (int i = 0; i < op->nreqs; i++)
        if (op->reqs[i] != NULL && zap_request_status(op->reqs[i]) == ZAP_INPROGRESS)
            return op->reqs[i];
    return NULL;
}

/* The timeout's log line names the peer the operation was waiting for. */
static zap_status_t timed_out(zap_coll_op_t *op)
{
    zap_comm_t *comm = op->comm;
    zap_request_t *r = first_pending(op);
    int missing = zap_coll_shm_first_missing(op);
    if (missing >= 0)
        zap_error("coll: rank %d: collective (seq %llu, kind %d) timed out on communicator %u waiting for "
                  "transport rank %d to reach it in shared memory",
                  comm->rank, (unsigned long long)op->seq, (int)op->kind, zap_coll_comm_id(comm),
                  zap_coll_transport_rank(comm, missing));
    else if (r != NULL)
        zap_error("coll: rank %d: collective (seq %llu, kind %d) timed out on communicator %u waiting for %s "
                  "transport rank %d",
                  comm->rank, (unsigned long long)op->seq, (int)op->kind, zap_coll_comm_id(comm),
                  r->kind == ZAP_REQ_SEND ? "a send to" : "a receive from", r->peer);
    else
        zap_error("coll: rank %d: collective (seq %llu, kind %d) timed out on communicator %u", comm->rank,
                  (unsigned long long)op->seq, (int)op->kind, zap_coll_comm_id(comm));
    return ZAP_ERR_TIMED_OUT;
}

/* The deadline of a wait starting now: the communicator's timeout; "none" is
 * a deadline decades away, which every clock comparison and the transports'
 * timed waits handle as a number. */
static double deadline_from_now(const zap_comm_t *comm)
{
    double t = comm->set.timeout;
    return zap_clock_now() + (isinf(t) ? 1e9 : t);
}

/* Polls before the deadline is read: most small collectives finish within
 * them, and reading the clock costs as much as a small message on some
 * machines. */
#define ZAP_COLL_POLLS_BEFORE_DEADLINE 256

/* deadline <= 0: the communicator's timeout from the first poll past the
 * cheap ones. */
static zap_status_t coll_req_wait(zap_request_t *req, double deadline)
{
    zap_coll_op_t *op = (zap_coll_op_t *)req;
    zap_comm_t *comm = op->comm;
    unsigned spins = 0;
    for (;;) {
        comm_progress(comm);
        if (op->status != ZAP_INPROGRESS)
            return op->status;
        if ((spins >= ZAP_COLL_POLLS_BEFORE_DEADLINE || spins > comm->spins_before_yield) && (spins & 15) == 0) {
            if (deadline <= 0)
                deadline = deadline_from_now(comm);
            else if (zap_clock_now() > deadline)
                return timed_out(op);
        }
        /* A transport that sleeps in wait (inproc: a condition variable) is
         * waited on when one operation is active. Otherwise poll: with several
         * operations one may need progress while the other sleeps, and a
         * polling transport (UCX) would spin inside its wait without letting
         * other processes of an oversubscribed node run; after a short spin
         * (spins_before_yield) this loop yields the CPU on every round, as
         * Open MPI does when oversubscribed. */
        zap_request_t *pending = comm->sleeping_wait && comm->active_head == op && op->next == NULL
                                     ? first_pending(op)
                                     : NULL;
        if (pending != NULL) {
            if (deadline <= 0)
                deadline = deadline_from_now(comm);
            zap_status_t st = zap_request_wait_until(pending, deadline);
            if (st == ZAP_ERR_TIMED_OUT)
                return st;
        } else {
            (void)zap_transport_progress(comm->t);
            if (++spins > comm->spins_before_yield)
                sched_yield();
        }
    }
}

/* Whether op's algorithm runs in shared memory (agreement or data). */
static bool in_shared_memory(const zap_coll_op_t *op)
{
    return op->agree.shm || op->shm_big_seq != 0 || op->form == ZAP_COLL_FORM_SHM;
}

/* A pending allreduce or broadcast freed by its caller on a communicator
 * with shared memory: finish it (its buffers are read and written now,
 * during the free, as a wait would; a chunked large call may have written
 * part of its result already), at most the communicator's timeout, so that
 * the other ranks complete normally and the segment's exchange order holds.
 * Only the shared-memory steps run: an algorithm over the transport is left
 * at its agreement (and cancelled, as on any communicator). Other pending
 * operations of the communicator progress meanwhile, as in any call. */
static void drain(zap_coll_op_t *op)
{
    double deadline = 0;
    for (unsigned n = 1; op->status == ZAP_INPROGRESS; n++) {
        bool shm_alg = !op->agreeing && op->desc != NULL && (op->desc->algs[op->alg].require & ZAP_COLL_PRED_SAME_HOST);
        if (!shm_alg && !(op->agreeing && op->agree.shm))
            return;
        comm_progress(op->comm); /* earlier operations first: their exchanges come before */
        if ((n & 1023) == 0) {
            (void)zap_transport_progress(op->comm->t);
            if (deadline == 0)
                deadline = deadline_from_now(op->comm);
            else if (zap_clock_now() > deadline)
                return;
        }
    }
}

static void free_op(zap_coll_op_t *op, bool may_drain)
{
    if (may_drain && op->active && op->status == ZAP_INPROGRESS && !op->timed_out && op->comm->shm != NULL &&
        (op->kind == ZAP_COLL_ALLREDUCE || op->kind == ZAP_COLL_BCAST) && in_shared_memory(op))
        drain(op);
    if (op->active)
        active_remove(op);
    op_put(op);
}

static void coll_req_free(zap_request_t *req) { free_op((zap_coll_op_t *)req, true); }

static zap_status_t coll_req_progress(zap_transport_t *t)
{
    (void)t;
    return ZAP_OK;
}

static void coll_req_close(zap_transport_t *t) { (void)t; }

const zap_transport_ops_t zap_coll_req_ops = {
    .name = "coll",
    .test = coll_req_test,
    .wait = coll_req_wait,
    .request_free = coll_req_free,
    .progress = coll_req_progress,
    .close = coll_req_close,
};

zap_status_t zap_coll_wait_free(zap_request_t *req)
{
    zap_status_t st = ((zap_coll_op_t *)req)->status;
    if (st == ZAP_INPROGRESS)
        st = coll_req_wait(req, 0);
    if (st == ZAP_ERR_TIMED_OUT)
        ((zap_coll_op_t *)req)->timed_out = true; /* the wait is over: no second timeout in free */
    coll_req_free(req);
    return st;
}

zap_status_t zap_coll_op_run(zap_coll_op_t *op)
{
    zap_request_t *req = NULL;
    zap_coll_op_start(op, &req);
    return zap_coll_wait_free(req);
}

int zap_coll_op_cancel_all(zap_comm_t *comm)
{
    int n = 0;
    while (comm->active_head != NULL) {
        zap_coll_op_t *op = comm->active_head;
        if (!op->internal)
            n++;
        free_op(op, false);
    }
    return n;
}

void zap_coll_op_free_list(zap_comm_t *comm)
{
    zap_coll_op_t *op = comm->free_ops;
    while (op) {
        zap_coll_op_t *n = op->next;
        free(op);
        op = n;
    }
    comm->free_ops = NULL;
}
