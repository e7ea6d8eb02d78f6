/* The component: its MCA parameters, open/close and init query.
 *
 * Parameters (ompi_info --param coll zap --level 9 lists them with their
 * help):
 *   coll_zap_priority        0 (default) or below: not used at all (the
 *                            component leaves at init and creates nothing);
 *                            above the components to displace (tuned: 30),
 *                            e.g. 40: used
 *   coll_zap_verbose         0 quiet; 1 decisions once per process; 2 per
 *                            communicator; 3 every call sent to the previous
 *                            component
 *   coll_zap_stats           print per-process call counts at MPI_Finalize
 *   coll_zap_nonblocking     route the non-blocking forms too
 *   coll_zap_min_comm_size   smallest communicator served
 *   coll_zap_<coll>          route this collective (one per routing-table row)
 *   coll_zap_<coll>_min_bytes, _max_bytes   the row's size window
 * and two read-only ones: coll_zap_built_for (the Open MPI the component was
 * compiled against) and coll_zap_zap_version. Every rank must run with the
 * same values (mpirun --mca / OMPI_MCA_* give that); the transport bootstrap
 * compares them and declines everywhere when they differ. */
#include "coll_zap.h"
#include "opal/mca/base/mca_base_var.h"
#include "zap/version.h"
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

static int zap_register(void);
static int zap_open(void);
static int zap_close(void);
static int zap_init_query(bool enable_progress_threads, bool enable_mpi_threads);
mca_coll_base_module_t *coll_zap_comm_query(ompi_communicator_t *comm, int *priority);

coll_zap_component_t mca_coll_zap_component = {
    .super =
        {
            .collm_version =
                {
                    MCA_COLL_BASE_VERSION_2_0_0,
                    .mca_component_name = "zap",
                    MCA_BASE_MAKE_VERSION(component, OMPI_MAJOR_VERSION, OMPI_MINOR_VERSION,
                                          OMPI_RELEASE_VERSION),
                    .mca_open_component = zap_open,
                    .mca_close_component = zap_close,
                    .mca_register_component_params = zap_register,
                },
            .collm_data = {MCA_BASE_METADATA_PARAM_NONE},
            .collm_init_query = zap_init_query,
            .collm_comm_query = coll_zap_comm_query,
        },
    .priority = 0,
    .verbose = 0,
    .stats = false,
    .nonblocking = true,
    .min_comm_size = 2,
};

static char built_for[32];
static char zap_version_text[64];

void coll_zap_log(const char *fmt, ...)
{
    char line[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof(line), fmt, ap);
    va_end(ap);
    fprintf(stderr, "coll:zap: rank %d: %s\n", ompi_comm_rank(&ompi_mpi_comm_world.comm), line);
}

void coll_zap_warn(const char *fmt, ...)
{
    char line[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof(line), fmt, ap);
    va_end(ap);
    fprintf(stderr, "coll:zap: rank %d: %s\n", ompi_comm_rank(&ompi_mpi_comm_world.comm), line);
}

/* Names and help texts of the rows' parameters; the variable system keeps
 * pointers to neither past registration, but they must outlive it. */
static char row_text[COLL_ZAP_NCOLLS][6][320];

static void register_int(const char *name, const char *help, mca_base_var_type_t type, void *storage)
{
    (void)mca_base_component_var_register(&mca_coll_zap_component.super.collm_version, name, help, type, NULL, 0, 0,
                                          OPAL_INFO_LVL_5, MCA_BASE_VAR_SCOPE_READONLY, storage);
}

static void register_rows(void)
{
    coll_zap_component_t *c = &mca_coll_zap_component;
    for (int i = 0; i < COLL_ZAP_NCOLLS; i++) {
        const coll_zap_route_t *r = &coll_zap_routes[i];
        coll_zap_route_state_t *s = &c->route[i];
        char(*t)[320] = row_text[i];
        s->enable = r->default_on;
        s->min_text = (char *)r->default_min;
        s->max_text = (char *)r->default_max;
        snprintf(t[0], sizeof(t[0]), "%s", r->name);
        if (r->blocking != NULL)
            snprintf(t[1], sizeof(t[1]),
                     "Route MPI_%c%s and its non-blocking form to zap (1) or leave them to the component below (0). "
                     "Calls zap cannot take (see docs/mpi.md) go below either way",
                     r->name[0] - 'a' + 'A', r->name + 1);
        else
            snprintf(t[1], sizeof(t[1]),
                     "zap has no %s yet: MPI_%c%s and its non-blocking form go to the component below whatever this "
                     "says; once zap has it, 1 routes it to zap",
                     r->name, r->name[0] - 'a' + 'A', r->name + 1);
        register_int(t[0], t[1], MCA_BASE_VAR_TYPE_BOOL, &s->enable);
        if (r->bytes_means == NULL)
            continue;
        snprintf(t[2], sizeof(t[2]), "%s_min_bytes", r->name);
        snprintf(t[3], sizeof(t[3]),
                 "Smallest %s call zap takes, in %s; smaller ones go to the component below. A size (k, m, g: KiB, "
                 "MiB, GiB) or RANKS:SIZE pairs, the pair with the largest RANKS not above the communicator's size "
                 "applying (2:1m,8:0: 1 MiB on 2-7 ranks, everything from 8)",
                 r->name, r->bytes_means);
        register_int(t[2], t[3], MCA_BASE_VAR_TYPE_STRING, &s->min_text);
        snprintf(t[4], sizeof(t[4]), "%s_max_bytes", r->name);
        snprintf(t[5], sizeof(t[5]),
                 "Largest %s call zap takes, in %s; 0: no limit; larger ones go to the component below. Same form as "
                 "coll_zap_%s_min_bytes",
                 r->name, r->bytes_means, r->name);
        register_int(t[4], t[5], MCA_BASE_VAR_TYPE_STRING, &s->max_text);
    }
}

static int zap_register(void)
{
    coll_zap_component_t *c = &mca_coll_zap_component;
    const mca_base_component_t *me = &c->super.collm_version;
    snprintf(built_for, sizeof(built_for), "%d.%d.%d", OMPI_MAJOR_VERSION, OMPI_MINOR_VERSION, OMPI_RELEASE_VERSION);
    snprintf(zap_version_text, sizeof(zap_version_text), "%s", zap_version());
    c->built_for = built_for;
    c->zap_version = zap_version_text;
    (void)mca_base_component_var_register(
        me, "priority",
        "Priority of the zap coll component. 0 or below (the default): not used, nothing is created. Above the "
        "components it should displace (tuned: 30), e.g. 40: zap takes the collectives its routing table and "
        "thresholds give it, the component below the rest",
        MCA_BASE_VAR_TYPE_INT, NULL, 0, 0, OPAL_INFO_LVL_5, MCA_BASE_VAR_SCOPE_READONLY, &c->priority);
    (void)mca_base_component_var_register(
        me, "verbose",
        "0: quiet (declines and errors only); 1: process-wide decisions (version, transport); 2: each communicator "
        "served or declined; 3: every call handed to the component below, with why",
        MCA_BASE_VAR_TYPE_INT, NULL, 0, 0, OPAL_INFO_LVL_5, MCA_BASE_VAR_SCOPE_READONLY, &c->verbose);
    (void)mca_base_component_var_register(
        me, "stats",
        "Print, at MPI_Finalize, one line per collective and form with this process's counts: calls zap ran, and "
        "calls handed below because the collective was off, outside the size window, of a type or op zap lacks, "
        "or after zap stopped",
        MCA_BASE_VAR_TYPE_BOOL, NULL, 0, 0, OPAL_INFO_LVL_5, MCA_BASE_VAR_SCOPE_READONLY, &c->stats);
    (void)mca_base_component_var_register(
        me, "nonblocking",
        "Route the non-blocking forms (MPI_Iallreduce, ...) to zap too, under the same switches and windows (1), or "
        "leave every non-blocking collective to the component below (0)",
        MCA_BASE_VAR_TYPE_BOOL, NULL, 0, 0, OPAL_INFO_LVL_5, MCA_BASE_VAR_SCOPE_READONLY, &c->nonblocking);
    (void)mca_base_component_var_register(
        me, "min_comm_size", "Smallest communicator (ranks) zap serves; 2 or more", MCA_BASE_VAR_TYPE_INT, NULL, 0, 0,
        OPAL_INFO_LVL_5, MCA_BASE_VAR_SCOPE_READONLY, &c->min_comm_size);
    (void)mca_base_component_var_register(me, "built_for", "Open MPI version the component was compiled against",
                                          MCA_BASE_VAR_TYPE_STRING, NULL, 0, MCA_BASE_VAR_FLAG_DEFAULT_ONLY,
                                          OPAL_INFO_LVL_3, MCA_BASE_VAR_SCOPE_CONSTANT, &c->built_for);
    (void)mca_base_component_var_register(me, "zap_version", "Version of zap inside the component",
                                          MCA_BASE_VAR_TYPE_STRING, NULL, 0, MCA_BASE_VAR_FLAG_DEFAULT_ONLY,
                                          OPAL_INFO_LVL_3, MCA_BASE_VAR_SCOPE_CONSTANT, &c->zap_version);
    register_rows();
    return OMPI_SUCCESS;
}

static int zap_open(void)
{
    pthread_mutex_init(&mca_coll_zap_component.lock, NULL);
    return OMPI_SUCCESS;
}

static int zap_close(void)
{
    coll_zap_request_fini();
    pthread_mutex_destroy(&mca_coll_zap_component.lock);
    return OMPI_SUCCESS;
}

static int zap_init_query(bool enable_progress_threads, bool enable_mpi_threads)
{
    (void)enable_progress_threads;
    coll_zap_component_t *c = &mca_coll_zap_component;
    c->thread_multiple = enable_mpi_threads;
    /* Not asked for: leave now, so that nothing is created. */
    if (c->priority <= 0)
        return OMPI_ERR_NOT_AVAILABLE;
    if (c->min_comm_size < 2)
        c->min_comm_size = 2;
    if (!coll_zap_route_parse_windows())
        return OMPI_ERR_NOT_AVAILABLE;
    return OMPI_SUCCESS;
}
