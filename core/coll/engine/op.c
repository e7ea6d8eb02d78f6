/* Operations (op.h): taking and returning them, the active list and its
 * progress, local failure, revocation, and the request calls of collective
 * requests (test, wait, free) with their deadline and the drain of a freed
 * shared-memory operation.
 *
 * Revocation (docs/faults.md, "Collective failure"): a rank whose operation
 * fails for a reason the other ranks do not all see (a dead or missing peer,
 * a deadline, a transport or local error after the agreement, a cancel)
 * revokes the communicator from that operation's sequence on: it writes the
 * segment's revocation word (ranks on one host) and sends a notice to every
 * other member (zap_transport_notify). A rank fails every operation from
 * that sequence on that it has not completed: an operation looks for a
 * revocation when it is started, whenever it is advanced after its first
 * progress call, and once more just before it completes successfully, so a
 * rank that learned of the failure before finishing never returns success.
 * Failures every rank sees in the agreement (mismatch, invalid arguments)
 * revoke nothing: the communicator goes on; in a one-way shared-memory
 * exchange (agree/agree_shm.c) a rank may see them alone, and they revoke. */
#include "coll/engine/op.h"
#include "coll/coll_test.h"
#include "coll/comm_impl.h"
#include "coll/engine/mem.h"
#include "coll/engine/select.h"
#include "coll/engine/step.h"
#include "coll/shm/shm.h"
#include "base/log.h"
#include <math.h>
#include <sched.h>
#include <stdio.h>
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
    op->culprit = -1;
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

/* A one-way call this rank cannot take part in: its own error, at once. */
static zap_status_t fail_at_once(zap_coll_op_t *op) { return op->local_error; }

void zap_coll_op_fail_local(zap_coll_op_t *op, zap_status_t st)
{
    zap_coll_step_release(op);
    zap_coll_scratch_free(op->comm, &op->scratch);
    zap_coll_scratch_free(op->comm, &op->scratch2);
    zap_coll_agree_release(op);
    op->local_error = st;
    zap_coll_agree_mark_bad_own(&op->hdr_own, op->comm->rank);
    op->progress = NULL;
    if (zap_coll_agrees_by_tree(op)) {
        /* One way: the bad header goes down the tree to the ranks below this
         * one. With no valid root there is no tree: this rank fails alone and
         * revokes, which ends the others' wait for it. */
        int root = op->args.root;
        if (root >= 0 && root < op->comm->size) {
            (void)zap_coll_agree_init_bcast_tree(op, 0, NULL, 0, root);
            op->agreeing = true;
        } else {
            op->agree.shm_lone = true;
            op->agreeing = false;
            op->progress = fail_at_once;
        }
        return;
    }
    (void)zap_coll_agree_init(op, op->form, 0, NULL, 0, ZAP_DT_UINT8, ZAP_OP_SUM);
    op->agreeing = true;
}

/* --- revocation ------------------------------------------------------------ */

/* Whether transport rank t is in ranks[0..size) (NULL: 0 .. size-1). */
static bool listed(const int *ranks, int size, int t)
{
    if (ranks == NULL)
        return t >= 0 && t < size;
    for (int i = 0; i < size; i++)
        if (ranks[i] == t)
            return true;
    return false;
}

/* Whether transport rank t is a member of c. */
static bool member(const zap_comm_t *c, int t) { return listed(c->ranks, c->size, t); }

/* Whether notice nt revokes the exchange that made c (comm_impl.h, origin):
 * a member of that exchange failed it, so c is not there on every rank. */
static bool revokes_origin(const zap_comm_t *c, const zap_notice_t *nt)
{
    return c->origin_seq != 0 && nt->channel == c->origin_ctx && nt->seq >= c->origin_from &&
           nt->seq <= c->origin_seq &&
           (c->origin_ranks == NULL ? nt->from >= 0 : listed(c->origin_ranks, c->origin_size, nt->from));
}

/* What a failure blames, for the log. */
static void describe(char *buf, size_t cap, zap_status_t st, int culprit)
{
    if (st == ZAP_ERR_PEER_FAILED && culprit >= 0)
        snprintf(buf, cap, "peer rank %d failed", culprit);
    else if (st == ZAP_ERR_TIMED_OUT && culprit >= 0)
        snprintf(buf, cap, "timed out waiting for transport rank %d", culprit);
    else if (st == ZAP_ERR_MISMATCH && culprit >= 0)
        snprintf(buf, cap, "its arguments differed from transport rank %d's", culprit);
    else if (st == ZAP_ERR_CANCELED)
        snprintf(buf, cap, "cancelled there before it completed");
    else
        snprintf(buf, cap, "%s", zap_status_string(st));
}

/* Records a revocation of c from seq on (the lowest one wins). by is the
 * transport rank that failed the operation. Nothing is logged here: only an
 * operation that fails for it is (revoked_status), so a rank that completed
 * everything the revocation covers says nothing. */
static void learn(zap_comm_t *c, uint64_t seq, zap_status_t st, int culprit, int by)
{
    if (seq == 0 || (c->revoked_from != 0 && c->revoked_from <= seq))
        return;
    c->revoked_from = seq;
    c->revoke_status = st;
    c->revoke_culprit = culprit;
    c->revoke_by = by;
    c->revoke_logged = false;
    c->revoke_origin = false;
}

/* Reads the notices the transport received since the last look. */
static void read_notices(zap_comm_t *c)
{
    unsigned n = zap_transport_notice_count(c->t);
    zap_notice_t nt;
    for (; c->notices_seen < n && zap_transport_notice_get(c->t, c->notices_seen, &nt); c->notices_seen++)
        if (nt.channel == c->ctx && nt.seq >= c->notice_floor && member(c, nt.from)) {
            learn(c, nt.seq, (zap_status_t)nt.status, nt.culprit, nt.from);
        } else if (revokes_origin(c, &nt)) {
            /* Its creation failed elsewhere: without this, this rank's
             * first collective on it would wait for ranks that never call
             * it (with no deadline, for ever). */
            bool fresh = c->revoked_from != 1;
            learn(c, 1, (zap_status_t)nt.status, nt.culprit, nt.from);
            c->revoke_origin = c->revoke_origin || fresh;
        }
}

static void read_segment(zap_comm_t *c)
{
    zap_status_t st = ZAP_ERR_REVOKED;
    int culprit = -1, by = 0;
    c->shm_revoke_seen = atomic_load_explicit(c->shm->revoked, memory_order_acquire);
    uint64_t seq = zap_coll_shm_revocation(c->shm, &st, &culprit, &by);
    learn(c, seq, st, culprit, zap_coll_transport_rank(c, by));
}

/* Whether op falls under a revocation of its communicator, reading what
 * arrived since the last look: one load each for the transport's notices
 * and the segment's word when nothing did. */
static inline bool revoked(zap_coll_op_t *op)
{
    zap_comm_t *c = op->comm;
    if (zap_transport_notice_count(c->t) != c->notices_seen)
        read_notices(c);
    if (c->shm != NULL && atomic_load_explicit(c->shm->revoked, memory_order_acquire) != c->shm_revoke_seen)
        read_segment(c);
    return c->revoked_from != 0 && op->seq >= c->revoked_from;
}

bool zap_coll_op_quiet(zap_comm_t *c)
{
    return c->active_head == NULL && c->revoked_from == 0 && zap_transport_notice_count(c->t) == c->notices_seen &&
           (c->shm == NULL || atomic_load_explicit(c->shm->revoked, memory_order_acquire) == c->shm_revoke_seen);
}

/* What an operation under another rank's revocation returns: a dead peer
 * stays ZAP_ERR_PEER_FAILED (the log line of learn names it), anything else
 * is ZAP_ERR_REVOKED. */
static zap_status_t revoked_status(const zap_coll_op_t *op)
{
    zap_comm_t *c = op->comm;
    if (c->revoke_by != zap_transport_rank(c->t)) {
        /* The first operation a revocation fails says why, naming the rank
         * that failed and what it blamed; later ones (the communicator stays
         * revoked) only at debug level. */
        char why[96];
        describe(why, sizeof(why), c->revoke_status, c->revoke_culprit);
        if (!c->revoke_logged && c->revoke_origin)
            zap_error("coll: rank %d: collective (seq %llu, kind %d) failed: communicator %u does not exist on every "
                      "rank: transport rank %d failed the exchange that created it (%s)",
                      c->rank, (unsigned long long)op->seq, (int)op->kind, zap_coll_comm_id(c), c->revoke_by, why);
        else if (!c->revoke_logged)
            zap_error("coll: rank %d: collective (seq %llu, kind %d) failed: communicator %u is revoked from sequence "
                      "%llu on: transport rank %d failed that operation (%s)",
                      c->rank, (unsigned long long)op->seq, (int)op->kind, zap_coll_comm_id(c),
                      (unsigned long long)c->revoked_from, c->revoke_by, why);
        else
            zap_debug("coll: rank %d: collective (seq %llu) failed: communicator %u is revoked", c->rank,
                      (unsigned long long)op->seq, zap_coll_comm_id(c));
        c->revoke_logged = true;
    }
    return c->revoke_status == ZAP_ERR_PEER_FAILED ? ZAP_ERR_PEER_FAILED : ZAP_ERR_REVOKED;
}

/* Failures the agreement reports on every rank alike: nothing to revoke. */
static bool uniform(zap_status_t st)
{
    return st == ZAP_ERR_MISMATCH || st == ZAP_ERR_INVALID_PARAM || st == ZAP_ERR_UNSUPPORTED ||
           st == ZAP_ERR_REVOKED;
}

/* The rank to blame for a peer failure this rank met at transport rank
 * gone: the member the transport knows failed first, where that is another
 * one. A survivor that failed the same operation for that first rank may
 * leave at once (the verification job does), and a rank still waiting can
 * find that survivor's process gone before anything else: naming it would
 * blame a rank that only left, and the revocation would carry that name to
 * every member. */
static int first_culprit(zap_comm_t *c, int gone)
{
    int f = zap_transport_first_failed(c->t);
    if (f < 0 || f == gone)
        return gone;
    for (int i = 0; i < c->size; i++)
        if (zap_coll_transport_rank(c, i) == f) {
            if (gone >= 0)
                zap_error("coll: rank %d: peer rank %d left after peer rank %d failed first", c->rank, gone, f);
            return f;
        }
    return gone;
}

/* op failed on this rank with st: revoke its communicator from op on for
 * every member, unless st is one every rank sees or this failure follows a
 * revocation already known. */
static void revoke_from(zap_coll_op_t *op, uint64_t seq, zap_status_t st)
{
    zap_comm_t *c = op->comm;
    if ((uniform(st) && !(op->agree.shm_lone && st != ZAP_ERR_REVOKED)) || (c->revoked_from != 0 && c->revoked_from <= seq))
        return;
    int me = zap_transport_rank(c->t);
    int gone = op->culprit;
    if (st == ZAP_ERR_PEER_FAILED)
        op->culprit = first_culprit(c, gone);
    learn(c, seq, st, op->culprit, me);
    /* The rank that met a dead peer says so once: a request that failed
     * (not its post) may be all it saw, which some transports do not log
     * (in-process), and every other rank may have completed the operation
     * already, so that no revocation line names the peer either. */
    if (st == ZAP_ERR_PEER_FAILED && op->culprit >= 0)
        zap_error("coll: rank %d: collective (seq %llu, kind %d) failed on communicator %u: peer rank %d failed",
                  c->rank, (unsigned long long)op->seq, (int)op->kind, zap_coll_comm_id(c), op->culprit);
    if (c->shm != NULL) {
        zap_coll_shm_revoke(c->shm, seq, st, op->culprit);
        c->shm_revoke_seen = atomic_load_explicit(c->shm->revoked, memory_order_acquire);
    }
    if (c->size < 2 || c->revoke_told)
        return;
    c->revoke_told = true;
    int *peers = malloc(sizeof(int) * (size_t)c->size);
    zap_notice_t nt = {.seq = seq, .channel = c->ctx, .status = st, .culprit = op->culprit, .from = me};
    zap_status_t ns = peers != NULL ? ZAP_OK : ZAP_ERR_NO_MEMORY;
    if (peers != NULL) {
        /* Not the dead peer: a notice would only make the transport connect
         * to a process that is gone (the shared segment's pid check can know
         * it before UCX does), and UCX 1.13's TCP has failed an assertion in
         * that refused connection. */
        int npeers = 0;
        for (int i = 0; i < c->size; i++) {
            int tr = zap_coll_transport_rank(c, i);
            if (!(st == ZAP_ERR_PEER_FAILED && (tr == op->culprit || tr == gone)))
                peers[npeers++] = tr;
        }
        ns = zap_transport_notify(c->t, peers, npeers, &nt);
    }
    free(peers);
    if (ns != ZAP_OK && ns != ZAP_ERR_CLOSED)
        zap_warn("coll: rank %d: could not tell the other ranks of communicator %u that sequence %llu failed (%s); "
                 "those still in it wait for it",
                 c->rank, zap_coll_comm_id(c), (unsigned long long)seq, zap_status_string(ns));
}

static void revoke(zap_coll_op_t *op, zap_status_t st) { revoke_from(op, op->seq, st); }

/* Completes op with st: its transport requests and scratch go now, so a
 * completed request holds nothing but itself. */
static void op_complete(zap_coll_op_t *op, zap_status_t st)
{
    zap_coll_shm_settle(op);
    op_release_resources(op);
    op->status = st;
    if (!op->background)
        zap_request_complete(&op->req, st);
}

/* One progress call on one operation; completes it on anything but
 * ZAP_INPROGRESS. */
static void op_advance(zap_coll_op_t *op)
{
    if (op->status != ZAP_INPROGRESS)
        return;
    if (op->polled && revoked(op)) {
        op_complete(op, revoked_status(op));
        return;
    }
    op->polled = true;
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
    if (st == ZAP_OK && revoked(op)) /* another rank failed it before this one finished */
        st = revoked_status(op);
    if (st != ZAP_INPROGRESS) {
        if (st != ZAP_OK)
            revoke(op, st);
        op_complete(op, st);
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

zap_status_t zap_comm_set_wait_hook(zap_comm_t *comm, zap_wait_hook_fn hook, void *ctx)
{
    if (comm == NULL)
        return ZAP_ERR_INVALID_PARAM;
    comm->wait_hook = hook;
    comm->wait_hook_ctx = ctx;
    return ZAP_OK;
}

/* The transport is progressed even with no operation active: a completed
 * collective's last eager message over TCP may still sit in this process
 * (docs/transport.md, "Progress"), and a caller that waits elsewhere for its
 * peers drives it out with these calls. */
zap_status_t zap_comm_progress(zap_comm_t *comm)
{
    if (comm == NULL)
        return ZAP_ERR_INVALID_PARAM;
    (void)zap_transport_progress(comm->t);
    if (comm->active_head != NULL)
        comm_progress(comm);
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
    if (revoked(op)) /* posted on a revoked communicator: fails at once, sends nothing */
        op_complete(op, revoked_status(op));
    comm_progress(comm);
}

void zap_coll_op_complete_local(zap_coll_op_t *op, zap_status_t local, zap_request_t **req_p)
{
    if (req_p != NULL)
        *req_p = &op->req;
    /* A revoked communicator fails every call, this one too (one load when
     * nothing arrived); an argument error stays this rank's alone: nothing
     * was to move, and the other ranks completed their part without it. */
    op_complete(op, revoked(op) ? revoked_status(op) : local);
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

/* The deadline passed: the log line names the peer the operation was
 * waiting for, and the operation fails here and, by its revocation, on
 * every other rank (docs/faults.md). */
static zap_status_t timed_out(zap_coll_op_t *op)
{
    zap_comm_t *comm = op->comm;
    /* A notice or the segment's word that came since the last progress call
     * already says who failed this operation (a rank waiting in shared
     * memory for a neighbour that itself waits for a dead peer would
     * otherwise blame the neighbour): its error, naming that culprit. */
    if (revoked(op)) {
        op_complete(op, revoked_status(op));
        return op->status;
    }
    zap_request_t *r = first_pending(op);
    int missing = zap_coll_shm_first_missing(op);
    if (missing >= 0) {
        op->culprit = zap_coll_transport_rank(comm, missing);
        zap_error("coll: rank %d: collective (seq %llu, kind %d) timed out on communicator %u waiting for "
                  "transport rank %d to reach it in shared memory",
                  comm->rank, (unsigned long long)op->seq, (int)op->kind, zap_coll_comm_id(comm), op->culprit);
    } else if (r != NULL) {
        op->culprit = r->peer;
        zap_error("coll: rank %d: collective (seq %llu, kind %d) timed out on communicator %u waiting for %s "
                  "transport rank %d",
                  comm->rank, (unsigned long long)op->seq, (int)op->kind, zap_coll_comm_id(comm),
                  r->kind == ZAP_REQ_SEND ? "a send to" : "a receive from", r->peer);
    } else {
        zap_error("coll: rank %d: collective (seq %llu, kind %d) timed out on communicator %u", comm->rank,
                  (unsigned long long)op->seq, (int)op->kind, zap_coll_comm_id(comm));
    }
    /* A small call that rides a shared-memory agreement whole has nothing
     * left to give once its slot is published (past ZAP_AGREE_START): the
     * others complete it correctly without this rank, which only gave up
     * waiting for them (an allreduce or broadcast whose progress only copies
     * the agreed result out counts: whole_in_agreement). Failing it there
     * too would turn correct results into errors, so the revocation starts
     * at the next operation (docs/faults.md, "Collective failure": the one
     * exception). Anywhere else the others may wait for this rank's
     * messages: it fails for all. */
    bool whole_in_slots = op->agreeing && op->agree.shm && op->agree.state != ZAP_AGREE_START &&
                          (op->progress == NULL || op->whole_in_agreement);
    revoke_from(op, whole_in_slots ? op->seq + 1 : op->seq, ZAP_ERR_TIMED_OUT);
    op_complete(op, ZAP_ERR_TIMED_OUT);
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
/* A wait that sleeps (the in-process transport) wakes at least this often
 * to look for a revocation (a notice also wakes it, but its transport's
 * wait would sleep on until its own request completes). */
#define ZAP_COLL_SLEEP_SLICE_S 0.02

/* Polls of a wait before it also runs the communicator's wait hook: a small
 * call completes within them without paying for the caller's progress
 * engine. */
#define ZAP_COLL_POLLS_BEFORE_HOOK 64

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
         * waited on when one operation is active and no wait hook needs to
         * run. Otherwise poll: with several operations one may need progress
         * while the other sleeps, and a polling transport (UCX) would spin
         * inside its wait without letting other processes of an
         * oversubscribed node run; after a short spin (spins_before_yield)
         * this loop yields the CPU on every round, as Open MPI does when
         * oversubscribed. */
        zap_request_t *pending = comm->wait_hook == NULL && comm->sleeping_wait && comm->active_head == op &&
                                         op->next == NULL
                                     ? first_pending(op)
                                     : NULL;
        if (pending != NULL) {
            if (deadline <= 0)
                deadline = deadline_from_now(comm);
            double slice = zap_clock_now() + ZAP_COLL_SLEEP_SLICE_S;
            /* The transport's own wait, quietly: the end of a slice is no
             * timeout, and the deadline's is logged above, naming the rank. */
            if (pending->transport->ops->wait(pending, slice < deadline ? slice : deadline) == ZAP_ERR_TIMED_OUT &&
                zap_clock_now() > deadline) {
                comm_progress(comm);
                return op->status != ZAP_INPROGRESS ? op->status : timed_out(op);
            }
        } else {
            (void)zap_transport_progress(comm->t);
            if (comm->wait_hook != NULL && spins >= ZAP_COLL_POLLS_BEFORE_HOOK)
                comm->wait_hook(comm->wait_hook_ctx);
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
    /* Cancelled on this rank: the others, which may wait for its messages,
     * fail it too instead of waiting for ever, told why (a parent that gave
     * it up for a lost peer names that peer: abandoned_for). */
    if (op->active && op->status == ZAP_INPROGRESS)
        revoke(op, op->abandoned_for != ZAP_OK ? op->abandoned_for : ZAP_ERR_CANCELED);
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

int zap_coll_test_agreeing(const zap_request_t *req)
{
    if (req->transport->ops != &zap_coll_req_ops)
        return 0; /* completed in the fast form (engine/fast.h) */
    const zap_coll_op_t *op = (const zap_coll_op_t *)req; /* the request is the operation's first member */
    return op->deferred || op->agreeing;
}
