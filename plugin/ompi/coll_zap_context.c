/* The process's zap transport: one UCX transport for every communicator.
 *
 * Made when Open MPI enables the component on MPI_COMM_WORLD, the first
 * communicator selected during MPI_Init. Open MPI's own collectives on the
 * world do not exist at that point as a finished table, but the components
 * enabled below this one have put theirs in it: the bootstrap runs over the
 * world's previous (i)allgather, through the transport's out-of-band entry
 * (core/transport/ucp_oob.h). zap's MPI bootstrap is never called, so nothing
 * re-enters MPI's public interface here.
 *
 * The same exchange compares the routing parameters (a hash of every
 * coll_zap_* value that steers calls): ranks with different values would
 * route one call differently and wait on each other forever, so then no rank
 * uses zap.
 *
 * Progress: coll_zap_progress is registered with opal_progress for as long as
 * the transport lives.
 *
 * Teardown: an attribute on MPI_COMM_SELF whose delete callback MPI_Finalize
 * runs first, while every communicator and Open MPI's collectives still work:
 * it prints the statistics, destroys every zap communicator (local), and
 * closes the transport (whose close barrier again uses the world's previous
 * allgather). Calls after that, such as the ones inside MPI_Finalize, go to the
 * previous modules on every rank alike. */
#include "coll_zap.h"
#include "ompi/attribute/attribute.h"
#include "opal/runtime/opal_progress.h"
#include "transport/ucp_oob.h"
#include <stdlib.h>
#include <string.h>

static zap_transport_t *transport;
static coll_zap_module_t *world;     /* the OOB's communicator; valid until teardown */
static coll_zap_module_t live;       /* sentinel: modules with a zap communicator */
static int self_keyval = -1;
static bool progress_registered;

zap_transport_t *coll_zap_transport(void) { return transport; }

void coll_zap_live_add(coll_zap_module_t *m)
{
    if (live.next_live == NULL)
        live.next_live = live.prev_live = &live;
    m->next_live = &live;
    m->prev_live = live.prev_live;
    live.prev_live->next_live = m;
    live.prev_live = m;
}

void coll_zap_live_remove(coll_zap_module_t *m)
{
    if (m->next_live == NULL)
        return;
    m->prev_live->next_live = m->next_live;
    m->next_live->prev_live = m->prev_live;
    m->next_live = m->prev_live = NULL;
}

/* --- the out-of-band allgather over the world's previous functions ------- */

typedef struct oob_req {
    ompi_request_t *req; /* MPI_REQUEST_NULL once complete */
    int rc;
} oob_req_t;

static zap_status_t oob_allgather(void *ctx, const void *send, void *recv, size_t len, void **req_p)
{
    coll_zap_module_t *m = ctx;
    oob_req_t *r = calloc(1, sizeof(*r));
    if (r == NULL)
        return ZAP_ERR_NO_MEMORY;
    r->req = MPI_REQUEST_NULL;
    int n = (int)len;
    if (m->iprev[COLL_ZAP_ALLGATHER].fn != NULL) {
        mca_coll_base_module_iallgather_fn_t f = (mca_coll_base_module_iallgather_fn_t)m->iprev[COLL_ZAP_ALLGATHER].fn;
        r->rc = f(send, n, MPI_BYTE, recv, n, MPI_BYTE, m->comm, &r->req, m->iprev[COLL_ZAP_ALLGATHER].module);
    } else {
        mca_coll_base_module_allgather_fn_t f = (mca_coll_base_module_allgather_fn_t)m->prev[COLL_ZAP_ALLGATHER].fn;
        r->rc = f(send, n, MPI_BYTE, recv, n, MPI_BYTE, m->comm, m->prev[COLL_ZAP_ALLGATHER].module);
    }
    *req_p = r;
    return ZAP_OK;
}

static zap_status_t oob_test(void *ctx, void *req)
{
    (void)ctx;
    oob_req_t *r = req;
    if (r->rc == OMPI_SUCCESS && r->req != MPI_REQUEST_NULL) {
        int flag = 0;
        r->rc = ompi_request_test(&r->req, &flag, MPI_STATUS_IGNORE);
        if (r->rc == OMPI_SUCCESS && !flag)
            return ZAP_INPROGRESS;
    }
    return r->rc == OMPI_SUCCESS ? ZAP_OK : ZAP_ERR_TRANSPORT;
}

static void oob_free(void *ctx, void *req)
{
    (void)ctx;
    /* A request still pending (a close that gave up waiting) cannot be
     * cancelled in MPI; it is left to Open MPI. */
    free(req);
}

/* --- parameters equal everywhere ------------------------------------------ */

static uint64_t fnv(uint64_t h, const void *p, size_t n)
{
    for (size_t i = 0; i < n; i++)
        h = (h ^ ((const unsigned char *)p)[i]) * UINT64_C(1099511628211);
    return h;
}

static uint64_t params_hash(void)
{
    const coll_zap_component_t *c = &mca_coll_zap_component;
    uint64_t h = UINT64_C(14695981039346656037);
    h = fnv(h, &c->nonblocking, sizeof(c->nonblocking));
    h = fnv(h, &c->min_comm_size, sizeof(c->min_comm_size));
    for (int i = 0; i < COLL_ZAP_NCOLLS; i++) {
        h = fnv(h, &c->route[i].enable, sizeof(c->route[i].enable));
        h = fnv(h, &c->route[i].min, sizeof(c->route[i].min));
        h = fnv(h, &c->route[i].max, sizeof(c->route[i].max));
    }
    return h;
}

/* --- teardown --------------------------------------------------------------- */

static void context_fini(void)
{
    if (mca_coll_zap_component.stats)
        coll_zap_stats_print();
    if (progress_registered) {
        opal_progress_unregister(coll_zap_progress);
        progress_registered = false;
    }
    coll_zap_progress_idle(NULL);
    coll_zap_lock();
    /* Requests still pending were never waited on; their communicators go
     * now, and with them the zap operations. */
    for (coll_zap_module_t *m = live.next_live; m != NULL && m != &live;) {
        coll_zap_module_t *next = m->next_live;
        zap_comm_destroy(m->zcomm);
        m->zcomm = NULL;
        coll_zap_live_remove(m);
        m = next;
    }
    zap_transport_t *t = transport;
    transport = NULL;
    coll_zap_unlock();
    if (t != NULL) {
        COLL_ZAP_VERBOSE(1, "closing the zap transport");
        zap_transport_close(t);
    }
    world = NULL;
}

static int self_attr_delete(MPI_Comm comm, int keyval, void *attr_val, void *extra)
{
    (void)comm;
    (void)keyval;
    (void)attr_val;
    (void)extra;
    context_fini();
    return MPI_SUCCESS;
}

/* MPI_COMM_SELF is never duplicated into something that needs the hook. */
static int self_attr_copy(MPI_Comm oldcomm, int keyval, void *extra, void *in, void *out, int *flag,
                          MPI_Comm newcomm)
{
    (void)oldcomm;
    (void)keyval;
    (void)extra;
    (void)in;
    (void)out;
    (void)newcomm;
    *flag = 0;
    return MPI_SUCCESS;
}

static int arm_teardown(void)
{
    ompi_attribute_fn_ptr_union_t copy_fn, del_fn;
    copy_fn.attr_communicator_copy_fn = self_attr_copy;
    del_fn.attr_communicator_delete_fn = self_attr_delete;
    int rc = ompi_attr_create_keyval(COMM_ATTR, copy_fn, del_fn, &self_keyval, NULL, 0, NULL);
    if (rc != OMPI_SUCCESS)
        return rc;
    return ompi_attr_set_c(COMM_ATTR, &ompi_mpi_comm_self.comm, &ompi_mpi_comm_self.comm.c_keyhash, self_keyval,
                           NULL, false);
}

/* --- init ------------------------------------------------------------------- */

int coll_zap_context_init(coll_zap_module_t *wm)
{
    zap_ucp_oob_t oob = {.rank = wm->rank,
                         .size = wm->size,
                         .allgather = oob_allgather,
                         .test = oob_test,
                         .free = oob_free,
                         .ctx = wm};
    world = wm;
    int rc = coll_zap_request_init();
    /* Every rank takes part in both exchanges whatever its own state, so
     * that a rank failing alone cannot leave the others waiting. */
    uint64_t mine[2] = {params_hash(), rc == OMPI_SUCCESS ? 0 : 1};
    uint64_t *all = calloc((size_t)wm->size, sizeof(mine));
    if (all == NULL)
        return OMPI_ERR_OUT_OF_RESOURCE; /* the others fail in the exchange below, as this rank is missing */
    zap_status_t st = zap_ucp_oob_allgather(&oob, mine, all, sizeof(mine));
    bool agree = st == ZAP_OK;
    for (int r = 0; agree && r < wm->size; r++)
        agree = all[2 * r] == mine[0] && all[2 * r + 1] == 0;
    free(all);
    if (!agree) {
        if (wm->rank == 0)
            coll_zap_warn("declined: the ranks differ in their coll_zap_* parameters (or one could not set up); "
                          "every rank runs Open MPI's collectives");
        world = NULL;
        return OMPI_ERROR;
    }
    st = zap_ucp_transport_create_oob(&oob, NULL, &transport);
    if (st != ZAP_OK) {
        if (wm->rank == 0)
            coll_zap_warn("declined: the zap transport could not be created (%s); every rank runs Open MPI's "
                          "collectives",
                          zap_status_string(st));
        transport = NULL;
        world = NULL;
        return OMPI_ERROR;
    }
    /* A failure from here on is local: the transport exists on every rank
     * and the communicator creation that follows agrees again. */
    rc = arm_teardown();
    if (rc != OMPI_SUCCESS)
        coll_zap_warn("no teardown hook on MPI_COMM_SELF (%d): the transport will not be closed at MPI_Finalize", rc);
    zap_transport_caps_t caps;
    if (zap_transport_caps(transport, &caps) == ZAP_OK && (caps.flags & ZAP_CAP_SENDS_NEED_PROGRESS))
        coll_zap_progress_idle(transport);
    opal_progress_register(coll_zap_progress);
    progress_registered = true;
    COLL_ZAP_VERBOSE(1, "zap transport up over %d ranks", wm->size);
    return OMPI_SUCCESS;
}
