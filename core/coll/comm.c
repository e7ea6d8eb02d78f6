/* Communicators and the operation engine every collective runs on.
 *
 * A communicator is an ordered set of ranks of one transport, an id that keeps
 * its tags apart from other communicators' and a sequence number per
 * operation. Operations (zap_coll_op_t) are taken from a per-communicator free
 * list (grown with malloc when a new operation is posted while all are busy,
 * never during the steps) and kept on an active list in post order. Progress
 * on any of them advances all of them, in post order: a rank waiting on one
 * operation must not starve another one that a peer is waiting on.
 *
 * Collective requests are zap_request_t's: each communicator carries a small
 * pseudo transport whose ops table answers test, wait and free for its
 * operations, so callers use zap_request_test/wait/free on them as on
 * point-to-point requests. Not thread-safe: one thread drives a communicator. */
#include "coll/coll_impl.h"
#include "coll/shm/shm.h"
#include "transport/checksum.h"
#include "coll/reduce/reduce.h"
#include "cuda_coll.h"
#include "coll/patterns/patterns.h"
#include "base/config_table.h"
#include "base/log.h"
#include <sched.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static zap_status_t coll_req_test(zap_request_t *req);
static zap_status_t coll_req_wait(zap_request_t *req, double deadline);
static void coll_req_free(zap_request_t *req);
static void free_op(zap_coll_op_t *op, bool may_drain);
static zap_status_t coll_req_progress(zap_transport_t *t) { (void)t; return ZAP_OK; }
static void coll_req_close(zap_transport_t *t) { (void)t; }

static const zap_transport_ops_t coll_req_ops = {
    .name = "coll",
    .test = coll_req_test,
    .wait = coll_req_wait,
    .request_free = coll_req_free,
    .progress = coll_req_progress,
    .close = coll_req_close,
};

/* Ids handed to communicators: each rank proposes the next id it has not
 * used and the communicator takes the maximum over its ranks, so two
 * communicators sharing a rank never share an id (up to wrap-around after
 * 1023 creations). Process-wide because in-process ranks share a process. */
static atomic_uint next_comm_id = 1;

/* Polls of a waiting collective before it starts yielding the CPU: few when
 * the node runs more ranks than it has cores (a spinning rank would keep the
 * peer it waits for off the CPU), more otherwise (a yield costs a system call
 * and, on a shared machine, the rest of a time slice). The local rank count
 * comes from the launcher's environment (Open MPI, MPICH/Hydra, Slurm); when
 * none says, the node counts as not oversubscribed. */
#define ZAP_COLL_SPINS_OVERSUBSCRIBED 4
#define ZAP_COLL_SPINS_DEDICATED 256

static unsigned spins_before_yield(void)
{
    static const char *const vars[] = {"OMPI_COMM_WORLD_LOCAL_SIZE", "MPI_LOCALNRANKS", "SLURM_NTASKS_PER_NODE"};
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    for (size_t i = 0; i < sizeof(vars) / sizeof(vars[0]); i++) {
        const char *v = getenv(vars[i]);
        long n = v ? strtol(v, NULL, 10) : 0;
        if (n > 0)
            return cores > 0 && n > cores ? ZAP_COLL_SPINS_OVERSUBSCRIBED : ZAP_COLL_SPINS_DEDICATED;
    }
    return ZAP_COLL_SPINS_DEDICATED;
}


static zap_comm_t *comm_alloc(zap_transport_t *t, int rank, int size, int *ranks)
{
    zap_comm_t *c = calloc(1, sizeof(*c));
    if (c == NULL)
        return NULL;
    c->t = t;
    c->rank = rank;
    c->size = size;
    c->ranks = ranks;
    c->id = ZAP_COLL_BOOT_ID;
    zap_transport_base_init(&c->req_base, &coll_req_ops, rank, size, NULL, false);
    zap_transport_caps_t caps;
    c->sleeping_wait = zap_transport_caps(t, &caps) == ZAP_OK && strcmp(caps.name, "inproc") == 0;
    c->spins_before_yield = spins_before_yield();
    return c;
}

static void comm_free(zap_comm_t *c)
{
    zap_coll_shm_detach(c->shm);
    zap_coll_op_t *op = c->free_ops;
    while (op) {
        zap_coll_op_t *n = op->next;
        free(op);
        op = n;
    }
    free(c->ranks);
    free(c);
}

/* Agrees on a fresh id over comm's ranks (an allreduce of proposals, MAX),
 * and on whether any of them runs oversubscribed (the flat allreduce exchange
 * is then left out, allreduce.c: it needs every rank to decide alike). */
static zap_status_t comm_agree_id(zap_comm_t *comm, zap_comm_t *over, uint32_t *id_p)
{
    uint64_t proposal[2] = {atomic_load(&next_comm_id), over->spins_before_yield == ZAP_COLL_SPINS_OVERSUBSCRIBED};
    uint64_t agreed[2] = {0, 0};
    zap_status_t st = zap_coll_allreduce_rd(over, proposal, agreed, 2, ZAP_DT_UINT64, ZAP_OP_MAX);
    if (st != ZAP_OK)
        return st;
    comm->oversubscribed = agreed[1] != 0;
    uint32_t id = (uint32_t)(agreed[0] % ZAP_COLL_COMM_ID_MAX);
    if (id == ZAP_COLL_BOOT_ID)
        id = 1;
    /* Raise the process-wide counter past the agreed id. */
    unsigned cur = atomic_load(&next_comm_id);
    while (cur <= agreed[0] && !atomic_compare_exchange_weak(&next_comm_id, &cur, (unsigned)agreed[0] + 1))
        ;
    *id_p = id;
    return ZAP_OK;
}

/* The shared-memory segment (coll/shm/shm.h) is tried on communicators over
 * the UCX transport, whose ranks are processes (inproc ranks are threads of
 * one process and need none). Every rank of such a communicator runs the
 * setup exchange, whatever it wishes; this is its wish. */
static bool shm_pattern(const zap_comm_t *c)
{
    zap_transport_caps_t caps;
    const zap_transport_t *base = c->unwrapped != NULL ? c->unwrapped : c->t;
    return zap_transport_caps((zap_transport_t *)base, &caps) == ZAP_OK && strcmp(caps.name, "ucp") == 0;
}

typedef struct shm_wish {
    bool want;
    bool want_cma;
    uint64_t large_bytes;
} shm_wish_t;

static zap_status_t shm_setting(shm_wish_t *w)
{
    int idx = 0, cma = 0;
    zap_status_t st = zap_cfg_get_choice(ZAP_CFG_COLL_SHM, &idx);
    if (st == ZAP_OK)
        st = zap_cfg_get_u64(ZAP_CFG_COLL_SHM_LARGE_BYTES, &w->large_bytes);
    if (st == ZAP_OK)
        st = zap_cfg_get_choice(ZAP_CFG_COLL_CMA, &cma);
    w->want = idx == 0;
    w->want_cma = cma == 0;
    return st;
}

static zap_status_t comm_attach_shm(zap_comm_t *c, const shm_wish_t *w)
{
    if (!shm_pattern(c) || c->size < 2)
        return ZAP_OK;
    /* Checksum mode exists to check payloads end to end; the segment would
     * carry them past it. */
    bool want = w->want && c->checksum_t == NULL && !zap_transport_is_checksum(c->t);
    return zap_coll_shm_attach(c, want, w->want_cma, w->large_bytes, &c->shm);
}

zap_status_t zap_comm_create(zap_transport_t *t, zap_comm_t **comm_p)
{
    if (t == NULL || comm_p == NULL)
        return ZAP_ERR_INVALID_PARAM;
    uint64_t checksum = 0;
    zap_status_t cst = zap_cfg_get_u64(ZAP_CFG_CHECKSUM, &checksum);
    if (cst != ZAP_OK)
        return cst;
    shm_wish_t wish;
    if ((cst = shm_setting(&wish)) != ZAP_OK)
        return cst;
    /* Checksum mode wraps the transport: every message of this communicator
     * (and of its splits) carries a CRC32C checked on receipt. */
    zap_transport_t *wrapped = NULL, *given = t;
    if (checksum && !zap_transport_is_checksum(t)) {
        cst = zap_transport_checksum_wrap(t, &wrapped);
        if (cst != ZAP_OK)
            return cst;
        t = wrapped;
    }
    int rank = zap_transport_rank(t), size = zap_transport_size(t);
    zap_comm_t *c = comm_alloc(t, rank, size, NULL);
    if (c == NULL) {
        zap_transport_close(wrapped);
        return ZAP_ERR_NO_MEMORY;
    }
    c->checksum_t = wrapped;
    c->unwrapped = wrapped != NULL ? given : NULL;
    /* The id exchange runs on the communicator itself with the reserved boot
     * id and sequence 0: every zap_comm_create on a transport exchanges the same
     * messages in the same order, so consecutive creations cannot cross. */
    uint32_t id = 0;
    zap_status_t st = comm_agree_id(c, c, &id);
    if (st != ZAP_OK) {
        comm_free(c);
        zap_transport_close(wrapped);
        return st;
    }
    c->id = id;
    c->seq = 0;
    if ((st = comm_attach_shm(c, &wish)) != ZAP_OK) {
        comm_free(c);
        zap_transport_close(wrapped);
        return st;
    }
    *comm_p = c;
    return ZAP_OK;
}

zap_status_t zap_comm_split(zap_comm_t *comm, int color, int key, zap_comm_t **newcomm_p)
{
    if (comm == NULL || newcomm_p == NULL || (color < 0 && color != ZAP_COMM_UNDEFINED))
        return ZAP_ERR_INVALID_PARAM;
    shm_wish_t wish;
    zap_status_t sst = shm_setting(&wish);
    if (sst != ZAP_OK)
        return sst;
    int p = comm->size;
    int64_t *all = malloc(sizeof(int64_t) * 2 * (size_t)p);
    if (all == NULL)
        return ZAP_ERR_NO_MEMORY;
    int64_t mine[2] = {color, key};
    zap_status_t st = zap_allgather(comm, mine, 2, all, ZAP_DT_INT64);
    uint32_t id = 0;
    if (st == ZAP_OK)
        st = comm_agree_id(comm, comm, &id);
    if (st != ZAP_OK) {
        free(all);
        return st;
    }
    if (color == ZAP_COMM_UNDEFINED) {
        free(all);
        *newcomm_p = NULL;
        return ZAP_OK;
    }
    /* Members: same color, ordered by (key, old rank); insertion sort, p is small. */
    int n = 0;
    int *members = malloc(sizeof(int) * (size_t)p);
    if (members == NULL) {
        free(all);
        return ZAP_ERR_NO_MEMORY;
    }
    for (int r = 0; r < p; r++) {
        if (all[2 * r] != color)
            continue;
        int i = n++;
        while (i > 0 && all[2 * members[i - 1] + 1] > all[2 * r + 1]) {
            members[i] = members[i - 1];
            i--;
        }
        members[i] = r;
    }
    int newrank = -1;
    for (int i = 0; i < n; i++) {
        if (members[i] == comm->rank)
            newrank = i;
        members[i] = zap_coll_transport_rank(comm, members[i]);
    }
    free(all);
    zap_comm_t *c = comm_alloc(comm->t, newrank, n, members);
    if (c == NULL) {
        free(members);
        return ZAP_ERR_NO_MEMORY;
    }
    zap_transport_base_init(&c->req_base, &coll_req_ops, newrank, n, NULL, false);
    c->id = id;
    c->oversubscribed = comm->oversubscribed; /* agreed over the parent's ranks just now */
    c->checksum_t = NULL;
    if ((st = comm_attach_shm(c, &wish)) != ZAP_OK) {
        comm_free(c);
        return st;
    }
    *newcomm_p = c;
    return ZAP_OK;
}

void zap_comm_destroy(zap_comm_t *comm)
{
    if (comm == NULL)
        return;
    int left = 0;
    while (comm->active_head != NULL) {
        /* Requests the caller never freed: cancel them so no transport
         * request outlives the communicator. */
        zap_coll_op_t *op = comm->active_head;
        free_op(op, false);
        left++;
    }
    if (left > 0)
        zap_warn("coll: communicator %u destroyed with %d collective requests not freed (cancelled)", comm->id,
                 left);
    zap_transport_t *wrapper = comm->checksum_t;
    zap_transport_t *inner = wrapper != NULL ? comm->unwrapped : comm->t;
    zap_transport_t *owned = comm->owns_transport ? inner : NULL;
    comm_free(comm);
    zap_transport_close(wrapper);
    zap_transport_close(owned);
}

int zap_comm_rank(const zap_comm_t *comm) { return comm ? comm->rank : -1; }
int zap_comm_size(const zap_comm_t *comm) { return comm ? comm->size : -1; }
int zap_comm_shared_memory(const zap_comm_t *comm) { return comm != NULL && comm->shm != NULL; }
size_t zap_comm_shared_memory_bytes(const zap_comm_t *comm)
{
    if (comm == NULL || comm->shm == NULL)
        return 0;
    size_t big = comm->shm->big_bytes; /* sized by rank count where it is made (shm_segment.c) */
    return big > ZAP_COLL_SHM_MAX_BYTES ? big : ZAP_COLL_SHM_MAX_BYTES;
}
int zap_comm_single_copy(const zap_comm_t *comm) { return comm != NULL && comm->shm != NULL && comm->shm->cma; }
zap_transport_t *zap_comm_transport(const zap_comm_t *comm) { return comm ? comm->t : NULL; }

/* --- operations ----------------------------------------------------------- */

zap_status_t zap_coll_op_get(zap_comm_t *comm, zap_coll_kind_t kind, int alg, zap_coll_op_t **op_p)
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
    /* Clear the common fields; the request slots, the engine's inline area
     * and the algorithm state are initialised by whoever uses them. */
    memset(op, 0, offsetof(zap_coll_op_t, reqs));
    memset(&op->rd.buf, 0, sizeof(op->rd.buf));
    op->rd.shm = false;
    op->next = NULL;
    op->active = false;
    zap_request_base_init(&op->req, &comm->req_base, ZAP_REQ_SEND, -1, 0);
    op->comm = comm;
    op->seq = ++comm->seq;
    op->kind = kind;
    op->alg = alg;
    op->status = ZAP_INPROGRESS;
    op->mem = ZAP_MEM_HOST;
    op->req.tag = zap_coll_tag(op, 0, 0);
    *op_p = op;
    return ZAP_OK;
}

static void op_release_resources(zap_coll_op_t *op)
{
    for (int i = 0; i < op->nreqs; i++)
        zap_request_free(op->reqs[i]);
    op->nreqs = 0;
    /* Most small collectives hold no pool buffer at all. */
    if (op->scratch.handle != 0)
        (void)zap_buf_free(&op->scratch);
    if (op->scratch2.handle != 0)
        (void)zap_buf_free(&op->scratch2);
    zap_coll_rd_release(op);
}

static void op_put(zap_coll_op_t *op)
{
    zap_comm_t *comm = op->comm;
    zap_coll_shm_settle(op); /* only if its shared-memory exchange did not finish */
    op->rd.shm = false;
    op_release_resources(op);
    op->next = comm->free_ops;
    comm->free_ops = op;
}

void zap_coll_op_discard(zap_coll_op_t *op)
{
    if (op != NULL)
        op_put(op);
}

/* One progress call on one operation; completes it on anything but
 * ZAP_INPROGRESS. */
static void op_advance(zap_coll_op_t *op)
{
    if (op->status != ZAP_INPROGRESS)
        return;
    zap_status_t st = ZAP_INPROGRESS;
    if (op->agreeing) {
        st = zap_coll_rd_progress(op);
        if (st == ZAP_ERR_MISMATCH && op->local_error != ZAP_OK)
            st = op->local_error; /* the rank at fault reports its own error */
        if (st == ZAP_OK) {
            op->agreeing = false;
            if (op->local_error != ZAP_OK)
                st = op->local_error;
            else
                st = op->progress ? ZAP_INPROGRESS : ZAP_OK;
        }
    }
    if (!op->agreeing && st == ZAP_INPROGRESS && op->progress != NULL)
        st = op->progress(op);
    if (st != ZAP_INPROGRESS) {
        /* Done: give back the transport requests and scratch now, so a
         * completed request holds nothing but itself. */
        zap_coll_shm_settle(op);
        op_release_resources(op);
        op->status = st;
        zap_request_complete(&op->req, st);
    }
}

/* Advances every active operation of the communicator, in post order. */
static void comm_progress(zap_comm_t *comm)
{
    for (zap_coll_op_t *op = comm->active_head; op != NULL; op = op->next)
        op_advance(op);
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

zap_status_t zap_coll_op_start(zap_coll_op_t *op, zap_request_t **req_p)
{
    zap_comm_t *comm = op->comm;
    op->next = NULL;
    zap_coll_op_t **pp = &comm->active_head;
    while (*pp != NULL)
        pp = &(*pp)->next;
    *pp = op;
    op->active = true;
    comm_progress(comm);
    if (req_p != NULL)
        *req_p = &op->req;
    return ZAP_OK;
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
                  comm->rank, (unsigned long long)op->seq, (int)op->kind, comm->id,
                  zap_coll_transport_rank(comm, missing));
    else if (r != NULL)
        zap_error("coll: rank %d: collective (seq %llu, kind %d) timed out on communicator %u waiting for %s "
                  "transport rank %d",
                  comm->rank, (unsigned long long)op->seq, (int)op->kind, comm->id,
                  r->kind == ZAP_REQ_SEND ? "a send to" : "a receive from", r->peer);
    else
        zap_error("coll: rank %d: collective (seq %llu, kind %d) timed out on communicator %u", comm->rank,
                  (unsigned long long)op->seq, (int)op->kind, comm->id);
    return ZAP_ERR_TIMED_OUT;
}

/* Polls before the deadline is read: most small collectives finish within
 * them, and reading the clock and ZAP_TIMEOUT (an environment lookup) cost
 * as much as a small message. */
#define ZAP_COLL_POLLS_BEFORE_DEADLINE 256

/* deadline <= 0: ZAP_TIMEOUT from the first poll past the cheap ones. */
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
            double now = zap_clock_now();
            if (deadline <= 0)
                deadline = now + zap_timeout_seconds();
            else if (now > deadline)
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
                deadline = zap_clock_now() + zap_timeout_seconds();
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

/* A pending allreduce or broadcast freed by its caller on a communicator with shared
 * memory: finish it (its buffers are read and written now, during the free,
 * as a wait would; a chunked large call may have written part of its result
 * already), at most ZAP_TIMEOUT, so that the other ranks complete
 * normally and the segment's exchange order holds. Only the shared-memory
 * steps run: an algorithm over the transport is left at its agreement (and
 * cancelled, as on any communicator). Other pending operations of the
 * communicator progress meanwhile, as in any call. */
static void drain(zap_coll_op_t *op)
{
    double deadline = 0;
    for (unsigned n = 1; op->status == ZAP_INPROGRESS; n++) {
        if (!zap_coll_is_shm_alg(op) && !(op->agreeing && op->rd.shm))
            return;
        comm_progress(op->comm); /* earlier operations first: their exchanges come before */
        if ((n & 1023) == 0) {
            (void)zap_transport_progress(op->comm->t);
            double now = zap_clock_now();
            if (deadline == 0)
                deadline = now + zap_timeout_seconds();
            else if (now > deadline)
                return;
        }
    }
}

static void free_op(zap_coll_op_t *op, bool may_drain)
{
    if (may_drain && op->active && op->status == ZAP_INPROGRESS && !op->timed_out && op->comm->shm != NULL &&
        (op->kind == ZAP_COLL_ALLREDUCE || op->kind == ZAP_COLL_BCAST))
        drain(op);
    if (op->active)
        active_remove(op);
    op_put(op);
}

static void coll_req_free(zap_request_t *req) { free_op((zap_coll_op_t *)req, true); }

zap_status_t zap_coll_wait_free(zap_request_t *req)
{
    zap_status_t st = ((zap_coll_op_t *)req)->status;
    if (st == ZAP_INPROGRESS)
        st = coll_req_wait(req, 0);
    if (st == ZAP_ERR_TIMED_OUT)
        ((zap_coll_op_t *)req)->timed_out = true; /* the wait is over: no second ZAP_TIMEOUT in free */
    coll_req_free(req);
    return st;
}

zap_status_t zap_coll_op_run(zap_coll_op_t *op)
{
    zap_request_t *req = NULL;
    zap_status_t st = zap_coll_op_start(op, &req);
    if (st != ZAP_OK)
        return st;
    st = op->status;
    if (st == ZAP_INPROGRESS)
        st = coll_req_wait(req, 0);
    if (st == ZAP_ERR_TIMED_OUT)
        op->timed_out = true;
    coll_req_free(req);
    return st;
}

/* --- steps ---------------------------------------------------------------- */

zap_status_t zap_coll_send(zap_coll_op_t *op, int peer, int phase, int step, const void *buf, size_t len)
{
    if (op->nreqs == ZAP_COLL_MAX_REQS)
        return ZAP_ERR_NO_RESOURCE;
    zap_request_t *r = NULL;
    zap_status_t st = zap_transport_isend(op->comm->t, zap_coll_transport_rank(op->comm, peer),
                                          zap_coll_tag(op, phase, step), buf, len, &r);
    if (st != ZAP_OK)
        return st;
    op->rlen[op->nreqs] = NULL;
    op->rst[op->nreqs] = NULL;
    op->reqs[op->nreqs++] = r;
    return ZAP_OK;
}

zap_status_t zap_coll_recv(zap_coll_op_t *op, int peer, int phase, int step, void *buf, size_t cap, size_t *len_p,
                           zap_status_t *st_p)
{
    if (op->nreqs == ZAP_COLL_MAX_REQS)
        return ZAP_ERR_NO_RESOURCE;
    zap_request_t *r = NULL;
    zap_status_t st = zap_transport_irecv(op->comm->t, zap_coll_transport_rank(op->comm, peer),
                                          zap_coll_tag(op, phase, step), buf, cap, &r);
    if (st != ZAP_OK)
        return st;
    op->rlen[op->nreqs] = len_p;
    op->rst[op->nreqs] = st_p;
    op->reqs[op->nreqs++] = r;
    return ZAP_OK;
}

zap_status_t zap_coll_step_test(zap_coll_op_t *op)
{
    for (int i = 0; i < op->nreqs; i++) {
        int done = 0;
        zap_status_t st = zap_request_test(op->reqs[i], &done);
        if (!done && st == ZAP_OK)
            return ZAP_INPROGRESS;
    }
    zap_status_t first = ZAP_OK;
    for (int i = 0; i < op->nreqs; i++) {
        zap_status_t st = zap_request_status(op->reqs[i]);
        if (op->rst[i] != NULL) {
            *op->rst[i] = st;
            st = ZAP_OK;
        }
        if (op->rlen[i] != NULL)
            *op->rlen[i] = op->reqs[i]->received_len;
        if (st != ZAP_OK && first == ZAP_OK)
            first = st;
        zap_request_free(op->reqs[i]);
    }
    op->nreqs = 0;
    return first;
}

/* Scratch for collectives on host data while the transport's pool is managed
 * memory (the default where a GPU exists). The CPU writes such scratch, so its
 * pages are on the host, but the UCX transport cannot know that and prefetches
 * every managed buffer to the host before sending it: a CUDA call and a stream
 * sync per message, ~9 us, which made 512 B-1 MiB collectives on the H200 host
 * 3-50x slower than Open MPI. Host scratch skips that. One pool per process,
 * made on first use and left for process exit (it is reachable, not leaked). */
static _Atomic(zap_pool_t *) host_scratch_pool;

static zap_pool_t *coll_host_scratch_pool(void)
{
    zap_pool_t *p = atomic_load_explicit(&host_scratch_pool, memory_order_acquire);
    if (p != NULL)
        return p;
    zap_pool_params_t params = {.backend = ZAP_POOL_BACKEND_HOST, .name = "coll-host-scratch"};
    if (zap_pool_create(&params, &p) != ZAP_OK)
        return NULL;
    zap_pool_t *expected = NULL;
    if (!atomic_compare_exchange_strong(&host_scratch_pool, &expected, p)) {
        (void)zap_pool_destroy(p);
        p = expected;
    }
    return p;
}

zap_status_t zap_coll_scratch(zap_coll_op_t *op, zap_buf_t *buf, size_t size)
{
    if (size == 0) {
        memset(buf, 0, sizeof(*buf));
        return ZAP_OK;
    }
    if ((op->mem == ZAP_MEM_HOST || op->mem == ZAP_MEM_PINNED) &&
        zap_pool_kind(zap_transport_pool(op->comm->t)) == ZAP_MEM_MANAGED) {
        zap_pool_t *hp = coll_host_scratch_pool();
        if (hp != NULL && zap_pool_alloc(hp, size, buf) == ZAP_OK)
            return ZAP_OK;
    }
    zap_status_t st = zap_transport_alloc(op->comm->t, size, buf);
    if (st != ZAP_OK)
        zap_error("coll: rank %d: no scratch buffer of %zu bytes from the transport pool (%s)", op->comm->rank,
                  size, zap_status_string(st));
    return st;
}

void zap_coll_copy(const zap_coll_op_t *op, void *dst, const void *src, size_t bytes)
{
    if (bytes == 0 || dst == src)
        return;
    if (op->mem == ZAP_MEM_DEVICE || op->mem == ZAP_MEM_MANAGED) {
        if (zap_cuda_copy(dst, src, bytes) == ZAP_OK)
            return;
    }
    memcpy(dst, src, bytes);
}

zap_status_t zap_coll_reduce(const zap_coll_op_t *op, zap_dtype_t dt, zap_op_t zop, void *dst, const void *a,
                             const void *b, size_t count)
{
    if (count == 0)
        return ZAP_OK;
    if (op->mem == ZAP_MEM_DEVICE || op->mem == ZAP_MEM_MANAGED)
        return zap_cuda_reduce(dt, zop, dst, a, b, count);
    zap_reduce_cpu(dt, zop, dst, a, b, count);
    return ZAP_OK;
}

/* ZAP_ALLREDUCE_ALG and ZAP_BCAST_ALG are read on every call, and a getenv
 * walks the whole environment (about a hundred entries under mpirun: a
 * quarter of a small allreduce's own cost). The cache remembers, per thread
 * and setting, where in environ the variable was found (or how long environ
 * was when it was not) and trusts the remembered answer while environ still
 * looks the same there: setenv and putenv replace the entry's pointer or
 * append (making environ longer or moving it), unsetenv shifts the entries
 * after the one removed. Only a program that rewrites an entry's characters
 * in place would go unseen. */
extern char **environ;

typedef struct cfg_cache {
    bool valid;
    char **env;         /* environ when cached */
    size_t slot;        /* index of the entry, or environ's length when absent */
    const char *entry;  /* environ[slot] ("NAME=value"), or NULL when absent */
    const char *last;   /* environ[slot - 1] when absent (NULL when environ was empty) */
    int idx;
} cfg_cache_t;

static bool cache_holds(const cfg_cache_t *c)
{
    char **env = environ;
    if (!c->valid || env != c->env)
        return false;
    if (c->entry != NULL)
        return env[c->slot] == c->entry;
    return env[c->slot] == NULL && (c->slot == 0 ? c->last == NULL : env[c->slot - 1] == c->last);
}

static void cache_fill(cfg_cache_t *c, const char *name, int idx)
{
    char **env = environ;
    size_t n = strlen(name), i = 0;
    c->valid = false;
    if (env == NULL)
        return;
    for (; env[i] != NULL; i++)
        if (strncmp(env[i], name, n) == 0 && env[i][n] == '=')
            break;
    c->env = env;
    c->slot = i;
    c->entry = env[i];
    c->last = env[i] == NULL && i > 0 ? env[i - 1] : NULL;
    c->idx = idx;
    c->valid = true;
}

zap_status_t zap_coll_alg_setting(zap_cfg_id_t id, int *idx_p)
{
    static _Thread_local cfg_cache_t cache[2];
    cfg_cache_t *c = &cache[id == ZAP_CFG_BCAST_ALG ? 1 : 0];
    if (cache_holds(c)) {
        *idx_p = c->idx;
        return ZAP_OK;
    }
    zap_status_t st = zap_cfg_get_choice(id, idx_p);
    if (st == ZAP_OK)
        cache_fill(c, zap_cfg_name(id), *idx_p);
    else
        c->valid = false;
    return st;
}

size_t zap_coll_pipeline_bytes(void)
{
    uint64_t v = 256 * 1024;
    (void)zap_cfg_get_u64(ZAP_CFG_COLL_PIPELINE_BYTES, &v);
    return (size_t)v;
}

size_t zap_coll_segment_bytes(size_t unit_bytes, size_t div, size_t lo, size_t hi)
{
    size_t def = zap_coll_pipeline_bytes(); /* the default when unset */
    if (getenv(zap_cfg_name(ZAP_CFG_COLL_PIPELINE_BYTES)) != NULL)
        return def;
    if (hi > def)
        hi = def;
    if (lo > hi)
        lo = hi;
    size_t want = unit_bytes / (div ? div : 1), seg = lo;
    while (seg * 2 <= want && seg * 2 <= hi)
        seg *= 2;
    return seg < hi ? seg : hi;
}

int zap_coll_pattern_setting(zap_cfg_id_t id, zap_status_t *local_p)
{
    int idx = 0;
    zap_status_t st = zap_coll_alg_setting(id, &idx);
    if (st == ZAP_OK)
        return idx;
    if (*local_p == ZAP_OK)
        *local_p = st;
    return 0;
}

/* --- barrier: the header exchange alone ------------------------------------ */

zap_status_t zap_ibarrier(zap_comm_t *comm, zap_request_t **req_p)
{
    if (comm == NULL || req_p == NULL)
        return ZAP_ERR_INVALID_PARAM;
    zap_coll_op_t *op = NULL;
    zap_status_t st = zap_coll_op_get(comm, ZAP_COLL_BARRIER, 0, &op);
    if (st != ZAP_OK)
        return st;
    zap_coll_hdr_init(op, 0, ZAP_DT_UINT8, ZAP_OP_SUM, -1, 0, false);
    (void)zap_coll_rd_init(op, 0, NULL, 0, ZAP_DT_UINT8, ZAP_OP_SUM);
    op->agreeing = true;
    op->progress = NULL;
    return zap_coll_op_start(op, req_p);
}

zap_status_t zap_barrier(zap_comm_t *comm)
{
    zap_request_t *req = NULL;
    zap_status_t st = zap_ibarrier(comm, &req);
    if (st != ZAP_OK)
        return st;
    return zap_coll_wait_free(req);
}
