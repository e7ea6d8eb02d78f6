/* One module per communicator: whether the component offers itself
 * (comm_query), the zap communicator made when Open MPI enables it (enable),
 * and the local teardown when the communicator goes (destructor).
 *
 * comm_query declines, identically on every rank of the communicator:
 * intercommunicators, fewer than 2 ranks (MPI_COMM_SELF) or fewer than
 * coll_zap_min_comm_size, an Open MPI the gate refused, no transport (the
 * world's enable failed), and communicators zap cannot make yet
 * (coll_zap_comm_create). Everything else gets a module whose functions are
 * the routing table's (coll_zap_route_install); enable saves the previous
 * functions and makes the zap communicator, collectively, at the point in
 * MPI's order where Open MPI builds the communicator. */
#include "coll_zap.h"
#include "ompi/proc/proc.h"
#include "opal/runtime/opal_progress.h"
#include <stdatomic.h>
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

/* Until zap can make a communicator from a group of transport ranks (issue
 * 17), only a communicator over every transport rank in transport order is
 * served (MPI_COMM_WORLD, its duplicates, a split or create_group that keeps
 * every rank in order); the others are declined here, on every one of their
 * ranks alike, since the group is the same everywhere. */
static bool servable(ompi_communicator_t *comm)
{
    zap_transport_t *t = coll_zap_transport();
    int size = ompi_comm_size(comm);
    if (comm == &ompi_mpi_comm_world.comm)
        return true;
    if (t == NULL || size != zap_transport_size(t))
        return false;
    int *ranks = malloc((size_t)size * sizeof(int));
    bool ok = ranks != NULL && transport_ranks(comm, ranks);
    for (int i = 0; ok && i < size; i++)
        ok = ranks[i] == i;
    free(ranks);
    return ok;
}

/* --- making the zap communicator ------------------------------------------ */

/* zap's communicator creation blocks in zap's own wait, which does not drive
 * Open MPI. A rank that sat there could keep a message another rank needs to
 * finish this very communicator's creation in Open MPI (a TCP connection
 * being set up, say) from leaving: so the creation runs on a helper thread
 * while this thread keeps calling opal_progress. */
typedef struct create_job {
    zap_transport_t *t;
    zap_comm_t *zcomm;
    zap_status_t st;
    atomic_int done;
} create_job_t;

static void *create_main(void *arg)
{
    create_job_t *job = arg;
    job->st = zap_comm_create(job->t, &job->zcomm);
    atomic_store(&job->done, 1);
    return NULL;
}

/* The one function that makes a zap communicator for an MPI communicator.
 * Today: zap_comm_create over the whole transport, which servable() allows
 * only for communicators of every transport rank in order (zap agrees on the
 * communicator's id itself). When zap can make one from a group of transport
 * ranks with a caller-given id, this becomes that call with transport_ranks()
 * and the MPI context id, and servable() goes. */
int coll_zap_comm_create(coll_zap_module_t *m)
{
    zap_transport_t *t = coll_zap_transport();
    if (t == NULL)
        return OMPI_ERROR;
    create_job_t job = {.t = t, .zcomm = NULL, .st = ZAP_ERR_TRANSPORT};
    atomic_init(&job.done, 0);
    pthread_t th;
    if (pthread_create(&th, NULL, create_main, &job) != 0) {
        create_main(&job); /* no thread: create here (the risk above remains) */
    } else {
        while (!atomic_load(&job.done))
            opal_progress();
        pthread_join(th, NULL);
    }
    if (job.st != ZAP_OK) {
        /* zap_comm_create agrees: every rank failed alike. */
        coll_zap_warn("communicator %u: zap_comm_create failed (%s); its collectives stay with Open MPI",
                      m->comm->c_contextid, zap_status_string(job.st));
        return OMPI_ERROR;
    }
    m->zcomm = job.zcomm;
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
    else if (comm != &ompi_mpi_comm_world.comm && coll_zap_transport() == NULL)
        why = "no zap transport";
    else if (!servable(comm))
        why = "zap cannot make a communicator of this group yet (not every world rank in order)";
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
