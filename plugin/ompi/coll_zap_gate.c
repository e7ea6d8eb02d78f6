/* Whether the running Open MPI is one this build may touch.
 *
 * The component reads Open MPI's internal structures (communicator, datatype,
 * request, the coll tables) through the headers it was compiled against;
 * Open MPI checks only the coll framework's interface version when it loads a
 * component, not the layout of those structures. So, once per process:
 *
 * 1. the version: PMPI_Get_library_version's "Open MPI vX.Y.Z" must have the
 *    major.minor compiled against (4.1 here); releases within it may differ
 *    (4.1.4 and 4.1.6 share these headers);
 * 2. the layout: fields this component reads must hold what public facts say
 *    they hold: MPI_COMM_WORLD's name, context id (0), rank and size (against
 *    the launcher's OMPI_COMM_WORLD_RANK/SIZE when set), MPI_COMM_SELF's
 *    context id (1); MPI_INT's and MPI_DOUBLE's names, sizes and basic-type
 *    bits (what the reductions' type mapping reads); MPI_REQUEST_NULL's type,
 *    state and completion flag (what the requests set).
 *
 * A failure prints one line and the component declines every communicator;
 * Open MPI then runs as without it. ZAP_TEST_OMPI_FORCE_MISMATCH=version or
 * =layout makes the check fail on purpose (tests). */
#include "coll_zap.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* OPAL_DATATYPE_INT4 and OPAL_DATATYPE_FLOAT8 (coll_zap_types.c). */
#define BDT_INT4 (UINT32_C(1) << 6)
#define BDT_FLOAT8 (UINT32_C(1) << 16)

static const char *check_version(char *found, size_t cap)
{
    char lib[MPI_MAX_LIBRARY_VERSION_STRING] = {0};
    int len = 0, major = -1, minor = -1, release = -1;
    if (PMPI_Get_library_version(lib, &len) != MPI_SUCCESS)
        return "MPI_Get_library_version failed";
    const char *v = strstr(lib, "Open MPI v");
    if (v == NULL || sscanf(v, "Open MPI v%d.%d.%d", &major, &minor, &release) < 2)
        return "the MPI library does not say it is Open MPI";
    snprintf(found, cap, "%d.%d.%d", major, minor, release);
    const char *force = getenv("ZAP_TEST_OMPI_FORCE_MISMATCH");
    if (force != NULL && strcmp(force, "version") == 0)
        return "version treated as untested (ZAP_TEST_OMPI_FORCE_MISMATCH=version)";
    if (major != OMPI_MAJOR_VERSION || minor != OMPI_MINOR_VERSION)
        return "its major.minor differs from the one the component was built for";
    return NULL;
}

static bool launcher_int(const char *name, int *v)
{
    const char *s = getenv(name);
    if (s == NULL || *s == '\0')
        return false;
    *v = atoi(s);
    return true;
}

static const char *check_layout(void)
{
    const char *force = getenv("ZAP_TEST_OMPI_FORCE_MISMATCH");
    if (force != NULL && strcmp(force, "layout") == 0)
        return "layout treated as different (ZAP_TEST_OMPI_FORCE_MISMATCH=layout)";
    ompi_communicator_t *world = &ompi_mpi_comm_world.comm, *self = &ompi_mpi_comm_self.comm;
    if (strcmp(world->c_name, "MPI_COMM_WORLD") != 0 || world->c_contextid != 0 || self->c_contextid != 1)
        return "MPI_COMM_WORLD/MPI_COMM_SELF do not read as expected (name, context id)";
    int rank = 0, size = 0;
    if (world->c_local_group == NULL ||
        (launcher_int("OMPI_COMM_WORLD_RANK", &rank) && ompi_comm_rank(world) != rank) ||
        (launcher_int("OMPI_COMM_WORLD_SIZE", &size) && ompi_comm_size(world) != size))
        return "MPI_COMM_WORLD's rank or size does not read as the launcher's";
    ompi_datatype_t *i = (ompi_datatype_t *)MPI_INT, *d = (ompi_datatype_t *)MPI_DOUBLE;
    if (strcmp(i->name, "MPI_INT") != 0 || i->super.size != sizeof(int) || i->super.bdt_used != BDT_INT4 ||
        strcmp(d->name, "MPI_DOUBLE") != 0 || d->super.size != sizeof(double) || d->super.bdt_used != BDT_FLOAT8 ||
        !(i->super.flags & OPAL_DATATYPE_FLAG_PREDEFINED))
        return "MPI_INT/MPI_DOUBLE do not read as expected (name, size, basic type)";
    ompi_request_t *null = (ompi_request_t *)MPI_REQUEST_NULL;
    if (null->req_type != OMPI_REQUEST_NULL || null->req_state != OMPI_REQUEST_INACTIVE ||
        null->req_complete != REQUEST_COMPLETED)
        return "MPI_REQUEST_NULL does not read as expected (type, state)";
    return NULL;
}

bool coll_zap_gate_ok(void)
{
    coll_zap_component_t *c = &mca_coll_zap_component;
    if (c->gate_checked)
        return c->gate_ok;
    c->gate_checked = true;
    char found[64] = "unknown";
    const char *why = check_version(found, sizeof(found));
    if (why == NULL)
        why = check_layout();
    c->gate_ok = why == NULL;
    if (why != NULL) {
        if (ompi_comm_rank(&ompi_mpi_comm_world.comm) == 0)
            coll_zap_warn("declined: Open MPI %s runs without zap's collectives: %s (built for %s)", found, why,
                          c->built_for);
    } else {
        COLL_ZAP_VERBOSE(1, "Open MPI %s accepted (built for %s)", found, c->built_for);
    }
    return c->gate_ok;
}
