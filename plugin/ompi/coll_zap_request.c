/* Native Open MPI requests for zap's non-blocking collectives, the progress
 * hook that completes them, and the wait of the blocking forms.
 *
 * A non-blocking call returns a coll_zap_req_t (an ompi_request_t) at once;
 * the zap request it wraps is tested from the hook registered with
 * opal_progress, so MPI_Wait/Test/Waitall on it, on point-to-point requests
 * or on other components' requests all advance zap, and zap completes the
 * Open MPI request (status, error class) when its own completes. A blocking
 * call runs zap's blocking form, whose wait calls opal_progress through the
 * zap communicator's wait hook (under MPI_THREAD_MULTIPLE it posts, tests
 * its zap request itself and calls opal_progress between tests), so Open
 * MPI's point-to-point and other components move while a rank waits in zap:
 * neither side can starve the other.
 *
 * Errors: the request's MPI_ERROR carries the class; its type is
 * OMPI_REQUEST_PML with the communicator as its object, because Open MPI 4.1
 * hands errors of OMPI_REQUEST_COLL requests to MPI_COMM_WORLD's error
 * handler (ompi_errhandler_request_invoke) and MPI wants the communicator's.
 *
 * Deadline: none unless ZAP_TIMEOUT is set in the environment (read once per
 * process): MPI waits for a live peer as long as it takes (a rank may be late
 * by minutes, legally), and a dead one is found by zap's liveness checks
 * (the process check between ranks of one host, UCX's peer errors across
 * hosts), which fail the zap request. With ZAP_TIMEOUT set, a call still
 * pending that long after its post fails with MPI_ERR_OTHER; its zap
 * operation stays with its communicator (destroyed with it) and every later
 * call on that communicator fails at once: after a timeout or a lost peer the
 * zap communicator's state is undefined. */
#include "coll_zap.h"
#include "opal/class/opal_free_list.h"
#include "opal/runtime/opal_progress.h"
#include <sched.h>
#include <stdlib.h>

static opal_free_list_t reqs;
static bool reqs_ready;
static coll_zap_req_t pending; /* sentinel of the list the hook tests */
static int npending;
static double timeout_s; /* ZAP_TIMEOUT when set, else 0: none */

OBJ_CLASS_INSTANCE(coll_zap_req_t, ompi_request_t, NULL, NULL);

int coll_zap_request_init(void)
{
    if (reqs_ready)
        return OMPI_SUCCESS;
    OBJ_CONSTRUCT(&reqs, opal_free_list_t);
    int rc = opal_free_list_init(&reqs, sizeof(coll_zap_req_t), opal_cache_line_size, OBJ_CLASS(coll_zap_req_t), 0, 0,
                                 8, -1, 8, NULL, 0, NULL, NULL, NULL);
    if (rc != OPAL_SUCCESS) {
        OBJ_DESTRUCT(&reqs);
        return OMPI_ERR_OUT_OF_RESOURCE;
    }
    pending.next_pending = pending.prev_pending = &pending;
    npending = 0;
    const char *set = getenv("ZAP_TIMEOUT");
    timeout_s = set != NULL && *set != '\0' ? zap_timeout_seconds() : 0;
    reqs_ready = true;
    return OMPI_SUCCESS;
}

void coll_zap_request_fini(void)
{
    if (!reqs_ready)
        return;
    /* Requests still pending belong to communicators being destroyed;
     * their memory goes with the list. */
    OBJ_DESTRUCT(&reqs);
    reqs_ready = false;
}

static int req_free(ompi_request_t **request);

static int req_cancel(ompi_request_t *request, int complete)
{
    (void)request;
    (void)complete;
    return MPI_SUCCESS; /* MPI: cancelling a collective is erroneous; nothing is cancelled */
}

coll_zap_req_t *coll_zap_req_get(coll_zap_module_t *m, coll_zap_coll_t coll)
{
    opal_free_list_item_t *item = opal_free_list_get(&reqs);
    if (item == NULL)
        return NULL;
    coll_zap_req_t *r = (coll_zap_req_t *)item;
    OMPI_REQUEST_INIT(&r->super, false);
    r->super.req_type = OMPI_REQUEST_PML;
    r->super.req_mpi_object.comm = m->comm;
    r->super.req_status.MPI_SOURCE = MPI_ANY_SOURCE;
    r->super.req_status.MPI_TAG = MPI_ANY_TAG;
    r->super.req_status.MPI_ERROR = MPI_SUCCESS;
    r->super.req_status._cancelled = 0;
    r->super.req_status._ucount = 0;
    r->super.req_state = OMPI_REQUEST_ACTIVE;
    r->super.req_free = req_free;
    r->super.req_cancel = req_cancel;
    /* What Open MPI's retain of a user op or datatype reads back at
     * completion: nothing retained yet (a recycled request may hold the
     * last call's, already released). */
    r->nbc.cb.req_complete_cb = NULL;
    r->nbc.req_complete_cb_data = NULL;
    r->nbc.data.objs.objs[0] = r->nbc.data.objs.objs[1] = NULL;
    r->zreq = NULL;
    r->module = m;
    r->coll = coll;
    r->finish = NULL;
    r->tmp = NULL;
    r->counts = NULL;
    r->displs = NULL;
    r->ubuf = NULL;
    r->ucount = 0;
    r->udtype = NULL;
    r->ucounts = r->udispls = NULL;
    r->uextent = 0;
    r->nblocks = 0;
    r->deadline = 0;
    r->local_rc = MPI_SUCCESS;
    r->user_freed = false;
    r->has_uop = false;
    r->uop_fn = NULL;
    r->uop_dtype = NULL;
    r->prev_pending = r->next_pending = NULL;
    return r;
}

static void release_scratch(coll_zap_req_t *r)
{
    if (r->has_uop)
        zap_op_destroy(r->uop);
    r->has_uop = false;
    if (r->udtype != NULL)
        OBJ_RELEASE(r->udtype);
    r->udtype = NULL;
    free(r->tmp);
    free(r->counts);
    free(r->displs);
    r->tmp = NULL;
    r->counts = NULL;
    r->displs = NULL;
}

void coll_zap_req_put(coll_zap_req_t *r)
{
    release_scratch(r);
    r->super.req_state = OMPI_REQUEST_INVALID;
    opal_free_list_return(&reqs, &r->super.super);
}

static int req_free(ompi_request_t **request)
{
    coll_zap_req_t *r = (coll_zap_req_t *)*request;
    *request = MPI_REQUEST_NULL;
    if (!REQUEST_COMPLETE(&r->super)) {
        /* Erroneous in MPI; keep the request until zap is done with it. */
        r->user_freed = true;
        return MPI_SUCCESS;
    }
    OMPI_REQUEST_FINI(&r->super);
    opal_free_list_return(&reqs, &r->super.super);
    return MPI_SUCCESS;
}

/* Marks the zap communicator as unusable after errors that leave it so. */
static void note_failure(coll_zap_module_t *m, zap_status_t st)
{
    if (st == ZAP_ERR_TIMED_OUT || st == ZAP_ERR_PEER_FAILED || st == ZAP_ERR_TRANSPORT || st == ZAP_ERR_CLOSED ||
        st == ZAP_ERR_CANCELED || st == ZAP_ERR_REVOKED)
        m->failed = true;
}

/* zap is done with r's call (st): the zap request goes, finish unpacks, the
 * MPI result is returned. */
static int conclude(coll_zap_req_t *r, zap_status_t st)
{
    zap_request_free(r->zreq);
    r->zreq = NULL;
    int rc = coll_zap_error_class(st);
    if (r->local_rc != MPI_SUCCESS) {
        rc = r->local_rc;
    } else if (st != ZAP_OK) {
        /* zap logged the cause where it found it. */
        note_failure(r->module, st);
        COLL_ZAP_VERBOSE(1, "%s on communicator %u (rank %d of %d) failed: %s", coll_zap_routes[r->coll].name,
                         r->module->comm->c_contextid, r->module->rank, r->module->size, zap_status_string(st));
    } else if (r->finish != NULL && r->finish(r) != OMPI_SUCCESS) {
        rc = MPI_ERR_INTERN;
    }
    release_scratch(r);
    return rc;
}

/* A timed-out call: its zap operation is left to the communicator's
 * destruction (freeing it here could block again while it drains). */
static int give_up(coll_zap_req_t *r)
{
    coll_zap_warn("%s on communicator %u (rank %d of %d) timed out after %.1f s (ZAP_TIMEOUT); the zap "
                  "communicator is unusable from now on",
                  coll_zap_routes[r->coll].name, r->module->comm->c_contextid, r->module->rank, r->module->size,
                  timeout_s);
    r->module->failed = true;
    r->zreq = NULL;
    release_scratch(r);
    return MPI_ERR_OTHER;
}

int coll_zap_req_post_failed(coll_zap_req_t *r, zap_status_t st)
{
    note_failure(r->module, st);
    COLL_ZAP_VERBOSE(1, "%s on communicator %u (rank %d of %d) could not start: %s", coll_zap_routes[r->coll].name,
                  r->module->comm->c_contextid, r->module->rank, r->module->size, zap_status_string(st));
    int rc = coll_zap_error_class(st);
    coll_zap_req_put(r);
    return rc;
}

/* Polls a blocking call spends on zap alone before every further poll also
 * runs opal_progress: a small collective completes within them without
 * paying for Open MPI's progress engine. */
#define ZAP_ONLY_POLLS 64

int coll_zap_req_wait(coll_zap_req_t *r)
{
    double deadline = 0;
    for (unsigned n = 0;; n++) {
        int done = 0;
        coll_zap_lock();
        zap_status_t st = zap_request_test(r->zreq, &done);
        int rc = done ? conclude(r, st) : MPI_SUCCESS;
        coll_zap_unlock();
        if (done) {
            coll_zap_req_put(r);
            return rc;
        }
        if (n < ZAP_ONLY_POLLS)
            continue;
        opal_progress();
        if (timeout_s > 0 && (n & 63) == 0) {
            double now = zap_clock_now();
            if (deadline == 0) {
                deadline = now + timeout_s;
            } else if (now > deadline) {
                coll_zap_lock();
                rc = give_up(r);
                coll_zap_unlock();
                coll_zap_req_put(r);
                return rc;
            }
        }
    }
}

void coll_zap_req_start(coll_zap_req_t *r, ompi_request_t **request)
{
    OBJ_RETAIN(r->module->comm); /* the communicator outlives its pending requests */
    r->deadline = timeout_s > 0 ? zap_clock_now() + timeout_s : 0;
    r->next_pending = &pending;
    r->prev_pending = pending.prev_pending;
    pending.prev_pending->next_pending = r;
    pending.prev_pending = r;
    npending++;
    *request = &r->super;
}

static void unlink_pending(coll_zap_req_t *r)
{
    r->prev_pending->next_pending = r->next_pending;
    r->next_pending->prev_pending = r->prev_pending;
    r->next_pending = r->prev_pending = NULL;
    npending--;
}

/* Completion outside the lock: completing may run callbacks, and releasing
 * the communicator may destroy it (and its module, which takes the lock). */
static void complete(coll_zap_req_t *r, int rc)
{
    ompi_communicator_t *comm = r->module->comm;
    r->super.req_status.MPI_ERROR = rc;
    if (r->user_freed) {
        /* No wait will complete it: Open MPI's callback (its release of a
         * retained op or datatype) runs here. */
        if (r->super.req_complete_cb != NULL)
            r->super.req_complete_cb(&r->super);
        OMPI_REQUEST_FINI(&r->super);
        opal_free_list_return(&reqs, &r->super.super);
    } else {
        ompi_request_complete(&r->super, true);
    }
    OBJ_RELEASE(comm);
}

static zap_transport_t *idle_transport;

void coll_zap_progress_idle(zap_transport_t *t) { idle_transport = t; }

int coll_zap_progress(void)
{
    if (npending == 0) {
        if (idle_transport != NULL)
            (void)zap_transport_progress(idle_transport);
        return 0;
    }
    if (mca_coll_zap_component.thread_multiple && pthread_mutex_trylock(&mca_coll_zap_component.lock) != 0)
        return 0;
    coll_zap_req_t *done_head = NULL;
    int events = 0;
    double now = 0;
    static unsigned calls;
    bool check_clock = timeout_s > 0 && (++calls & 1023) == 0;
    if (check_clock)
        now = zap_clock_now();
    for (coll_zap_req_t *r = pending.next_pending, *next; r != &pending; r = next) {
        next = r->next_pending;
        int done = 0;
        zap_status_t st = zap_request_test(r->zreq, &done);
        int rc;
        if (done)
            rc = conclude(r, st);
        else if (check_clock && r->deadline > 0 && now > r->deadline)
            rc = give_up(r);
        else
            continue;
        unlink_pending(r);
        r->super.req_status.MPI_ERROR = rc;
        r->next_pending = done_head;
        done_head = r;
        events++;
    }
    if (mca_coll_zap_component.thread_multiple)
        pthread_mutex_unlock(&mca_coll_zap_component.lock);
    while (done_head != NULL) {
        coll_zap_req_t *r = done_head;
        done_head = r->next_pending;
        r->next_pending = NULL;
        complete(r, r->super.req_status.MPI_ERROR);
    }
    return events;
}

void coll_zap_wait_hook(void *ctx)
{
    (void)ctx;
    opal_progress();
}

int coll_zap_req_posted(coll_zap_req_t *r, zap_status_t st, ompi_request_t **request)
{
    if (coll_zap_direct(request)) {
        int rc = conclude(r, st); /* r->zreq is NULL: zap's blocking call has no request */
        coll_zap_req_put(r);
        return rc;
    }
    if (st != ZAP_OK)
        return coll_zap_req_post_failed(r, st);
    if (request == NULL)
        return coll_zap_req_wait(r);
    coll_zap_req_start(r, request);
    return MPI_SUCCESS;
}
