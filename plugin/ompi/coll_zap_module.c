/* One module per communicator: whether the component offers itself
 * (comm_query), the zap communicator made when Open MPI enables it (enable),
 * and the local teardown when the communicator goes (destructor).
 *
 * comm_query declines, identically on every rank of the communicator:
 * intercommunicators, fewer than 2 ranks (MPI_COMM_SELF) or fewer than
 * coll_zap_min_comm_size, an Open MPI the gate refused, no transport (the
 * world's enable failed), ranks of another job, and context ids beyond
 * zap's (servable). Everything else gets a module whose functions are
 * the routing table's (coll_zap_route_install); enable saves the previous
 * functions and makes the zap communicator (locally: zap_comm_create_group)
 * at the point in MPI's order where Open MPI builds the communicator. */
#include "coll_zap.h"
#include "ompi/proc/proc.h"
#include <stdlib.h>

static bool context_tried; /* the world's enable ran (once per process) */

static void module_construct(coll_zap_module_t *m)
{
    m->comm = NULL;
    m->zcomm = NULL;
    m->failed = false;
    m->rank = m->size = 0;
    for (int c = 0; c < COLL_ZAP_NCOLLS; c++) {
        m->prev[c].fn = m->iprev[c].fn = NULL;
        m->prev[c].module = m->iprev[c].module = NULL;
    }
    m->next_live = m->prev_live = NULL;
}

static void module_destruct(coll_zap_module_t *m)
{
    coll_zap_lock();
    if (m->zcomm != NULL) {
        zap_comm_destroy(m->zcomm); /* local */
        m->zcomm = NULL;
    }
    coll_zap_live_remove(m);
    coll_zap_unlock();
    coll_zap_route_release_previous(m);
}

OBJ_CLASS_INSTANCE(coll_zap_module_t, mca_coll_base_module_t, module_construct, module_destruct);

/* --- which communicators zap can serve ---------------------------------- */

/* Transport rank (world rank) of every rank of comm; false when a rank
 * is not of this job (MPI_Comm_spawn, MPI_Comm_connect). */
static bool transport_ranks(ompi_communicator_t *comm, int *ranks)
{
    ompi_proc_t *me = ompi_proc_local();
    for (int i = 0; i < ompi_comm_size(comm); i++) {
        ompi_proc_t *p = ompi_comm_peer_lookup(comm, i);
        if (p == NULL || p->super.proc_name.jobid != me->super.proc_name.jobid)
            return false;
        ranks[i] = (int)p->super.proc_name.vpid;
    }
    return true;
}

/* Whether zap can serve comm: every rank of it is of this job (a transport
 * rank), and its context id fits zap's caller ids. Both are the same on every
 * rank of comm, so every rank decides alike. */
static bool servable(ompi_communicator_t *comm, const char **why)
{
    zap_transport_t *t = coll_zap_transport();
    if (comm == &ompi_mpi_comm_world.comm)
        return true;
    if (t == NULL) {
        *why = "no zap transport";
        return false;
    }
    if (comm->c_contextid > ZAP_COMM_CONTEXT_ID_MAX) {
        *why = "its context id is above what zap's tags carry (ZAP_COMM_CONTEXT_ID_MAX)";
        return false;
    }
    int size = ompi_comm_size(comm);
    int *ranks = malloc((size_t)size * sizeof(int));
    bool ok = ranks != NULL && transport_ranks(comm, ranks);
    free(ranks);
    if (!ok)
        *why = ranks == NULL ? "no memory" : "a rank of another job (spawned or connected)";
    return ok;
}

/* --- making the zap communicator ------------------------------------------ */

/* The one function that makes a zap communicator for an MPI communicator:
 * a group communicator over the process's one transport, its ranks the
 * communicator's world ranks in its order, its context id MPI's own (unique
 * among the communicators a rank is in, and the same on every rank). It is
 * local: nothing is exchanged until the first collective, so enable never
 * waits on other ranks, and the destructor is local too. */
int coll_zap_comm_create(coll_zap_module_t *m)
{
    zap_transport_t *t = coll_zap_transport();
    if (t == NULL)
        return OMPI_ERROR;
    int size = ompi_comm_size(m->comm);
    int *ranks = malloc((size_t)size * sizeof(int));
    if (ranks == NULL || !transport_ranks(m->comm, ranks)) {
        free(ranks);
        return OMPI_ERROR;
    }
    zap_status_t st = zap_comm_create_group(t, ranks, size, m->comm->c_contextid, NULL, &m->zcomm);
    free(ranks);
    if (st != ZAP_OK) {
        /* Local, but its causes (arguments, memory, settings) are the same on
         * every rank but memory; a rank short of memory then declines alone
         * and the others' first collective on the communicator fails, named. */
        coll_zap_warn("communicator %u: zap_comm_create_group failed (%s); its collectives stay with Open MPI",
                      m->comm->c_contextid, zap_status_string(st));
        m->zcomm = NULL;
        return OMPI_ERROR;
    }
    (void)zap_comm_set_wait_hook(m->zcomm, coll_zap_wait_hook, NULL);
    return OMPI_SUCCESS;
}

/* --- query and enable -------------------------------------------------------- */

static int module_enable(mca_coll_base_module_t *module, ompi_communicator_t *comm)
{
    coll_zap_module_t *m = (coll_zap_module_t *)module;
    m->comm = comm;
    m->rank = ompi_comm_rank(comm);
    m->size = ompi_comm_size(comm);
    coll_zap_route_windows(m);
    /* The previous functions are the same on every rank (the same
     * components with the same parameters), so this fails everywhere or
     * nowhere. */
    if (!coll_zap_route_save_previous(m, comm)) {
        COLL_ZAP_VERBOSE(1, "communicator %u: a collective has no previous function; declined", comm->c_contextid);
        return OMPI_ERROR;
    }
    if (comm == &ompi_mpi_comm_world.comm && !context_tried) {
        context_tried = true;
        if (coll_zap_context_init(m) != OMPI_SUCCESS)
            return OMPI_ERROR;
    }
    if (coll_zap_comm_create(m) != OMPI_SUCCESS)
        return OMPI_ERROR;
    coll_zap_lock();
    coll_zap_live_add(m);
    coll_zap_unlock();
    COLL_ZAP_VERBOSE(2, "communicator %u (%s, %d ranks): zap communicator ready", comm->c_contextid, comm->c_name,
                     m->size);
    return OMPI_SUCCESS;
}

mca_coll_base_module_t *coll_zap_comm_query(ompi_communicator_t *comm, int *priority)
{
    coll_zap_component_t *c = &mca_coll_zap_component;
    *priority = -1;
    if (c->priority <= 0)
        return NULL;
    const char *why = NULL;
    int size = ompi_comm_size(comm);
    if (OMPI_COMM_IS_INTER(comm))
        why = "an intercommunicator";
    else if (size < 2 || size < c->min_comm_size)
        why = "too few ranks (coll_zap_min_comm_size)";
    else if (!coll_zap_gate_ok())
        why = "this Open MPI is not one the component was built for";
    else
        (void)servable(comm, &why);
    if (why != NULL) {
        COLL_ZAP_VERBOSE(2, "communicator %u (%s): declined: %s", comm->c_contextid, comm->c_name, why);
        return NULL;
    }
    coll_zap_module_t *m = OBJ_NEW(coll_zap_module_t);
    if (m == NULL)
        return NULL;
    m->super.coll_module_enable = module_enable;
    coll_zap_route_install(m);
    *priority = c->priority;
    return &m->super;
}
