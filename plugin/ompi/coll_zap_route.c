/* The routing table: one row per collective of Open MPI's coll interface that
 * zap has or will have, with the module functions that take it (NULL until
 * zap has the collective: the previous module then keeps it, untouched), where
 * those functions go, and the default size window.
 *
 * Adding a collective once zap has it: write coll_zap_<coll>.c (the MPI call
 * mapped onto zap's, falling back through m->prev/iprev as the others do),
 * declare it in coll_zap.h and put its two functions in its row here. Its MCA
 * parameters exist already (coll_zap_component.c registers every row).
 *
 * The decision (coll_zap_route_sized) reads only the row's MCA values, the
 * byte count of the call's type signature and the module's state, all equal
 * on every rank of the call; the callers add the op and the basic type. */
#include "coll_zap.h"
#include "coll/engine/mem.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define KIB ((size_t)1024)

/* offsetof triples for a row: the module's field, then the communicator
 * table's function and module fields of the same collective. Token pasting
 * keeps the sixteen rows from repeating each name six times. */
#define SLOT(f) offsetof(mca_coll_base_module_t, coll_##f)
#define PREV(f) offsetof(mca_coll_base_comm_coll_t, coll_##f), offsetof(mca_coll_base_comm_coll_t, coll_##f##_module)

/* The default windows: from zap-perf mpi with every window open, on the
 * dev machine (2 and 4 ranks) and the H200 host (2, 8 and 16 ranks): each
 * window starts where the small sizes at which Open MPI was faster on
 * either machine end (docs/mpi.md, "Defaults", lists larger sizes where it
 * still is). A window is one range per rank count, so a dip inside it stays;
 * reduce's maximum on 2 and 3 ranks declines the large calls where Open
 * MPI's reduce won. reduce's 16-rank start, reduce_scatter's 2- and
 * 3-rank start and gather's maxima follow OSU's osu_* benchmarks through
 * the component (docs/performance.md); scan and exscan take the windows
 * zap-perf coll's figures give. */
const coll_zap_route_t coll_zap_routes[COLL_ZAP_NCOLLS] = {
    [COLL_ZAP_ALLREDUCE] = {"allreduce", "bytes of the vector (count x type size)",
                            (coll_zap_fn_t)coll_zap_allreduce, (coll_zap_fn_t)coll_zap_iallreduce,
                            SLOT(allreduce), SLOT(iallreduce), PREV(allreduce), PREV(iallreduce), "2:512,4:0", "0",
                            true},
    [COLL_ZAP_BCAST] = {"bcast", "bytes of the message (count x type size)", (coll_zap_fn_t)coll_zap_bcast,
                        (coll_zap_fn_t)coll_zap_ibcast, SLOT(bcast), SLOT(ibcast), PREV(bcast), PREV(ibcast),
                        "2:512,4:16,8:0", "0", true},
    [COLL_ZAP_ALLGATHER] = {"allgather", "bytes of one rank's block (recvcount x recvtype size)",
                            (coll_zap_fn_t)coll_zap_allgather, (coll_zap_fn_t)coll_zap_iallgather,
                            SLOT(allgather), SLOT(iallgather), PREV(allgather), PREV(iallgather), "2:512,4:0", "0",
                            true},
    [COLL_ZAP_ALLGATHERV] = {"allgatherv", "bytes gathered divided by the number of ranks",
                             (coll_zap_fn_t)coll_zap_allgatherv, (coll_zap_fn_t)coll_zap_iallgatherv,
                             SLOT(allgatherv), SLOT(iallgatherv), PREV(allgatherv), PREV(iallgatherv), "1m", "0", true},
    [COLL_ZAP_SCATTER] = {"scatter", "bytes of one rank's block (recvcount x recvtype size)",
                          (coll_zap_fn_t)coll_zap_scatter, (coll_zap_fn_t)coll_zap_iscatter, SLOT(scatter),
                          SLOT(iscatter), PREV(scatter), PREV(iscatter), "2:4k,4:0", "0", true},
    /* No size window: only the root knows the counts. */
    [COLL_ZAP_SCATTERV] = {"scatterv", NULL, (coll_zap_fn_t)coll_zap_scatterv, (coll_zap_fn_t)coll_zap_iscatterv,
                           SLOT(scatterv), SLOT(iscatterv), PREV(scatterv), PREV(iscatterv), "0", "0", false},
    [COLL_ZAP_BARRIER] = {"barrier", NULL, (coll_zap_fn_t)coll_zap_barrier, (coll_zap_fn_t)coll_zap_ibarrier,
                          SLOT(barrier), SLOT(ibarrier), PREV(barrier), PREV(ibarrier), "0", "0", false},
    [COLL_ZAP_REDUCE] = {"reduce", "bytes of the vector (count x type size)", (coll_zap_fn_t)coll_zap_reduce,
                         (coll_zap_fn_t)coll_zap_ireduce, SLOT(reduce), SLOT(ireduce), PREV(reduce), PREV(ireduce),
                         "2:512,4:16,8:512,16:64k", "2:32k,4:0", true},
    [COLL_ZAP_REDUCE_SCATTER] = {"reduce_scatter", "bytes of the whole vector divided by the number of ranks",
                                 (coll_zap_fn_t)coll_zap_reduce_scatter, (coll_zap_fn_t)coll_zap_ireduce_scatter,
                                 SLOT(reduce_scatter), SLOT(ireduce_scatter), PREV(reduce_scatter),
                                 PREV(ireduce_scatter), "2:512,4:0", "0", true},
    [COLL_ZAP_REDUCE_SCATTER_BLOCK] = {"reduce_scatter_block", "bytes of one rank's block",
                                       (coll_zap_fn_t)coll_zap_reduce_scatter_block,
                                       (coll_zap_fn_t)coll_zap_ireduce_scatter_block, SLOT(reduce_scatter_block),
                                       SLOT(ireduce_scatter_block), PREV(reduce_scatter_block),
                                       PREV(ireduce_scatter_block), "0", "0", true},
    [COLL_ZAP_GATHER] = {"gather", "bytes of one rank's block", (coll_zap_fn_t)coll_zap_gather,
                         (coll_zap_fn_t)coll_zap_igather, SLOT(gather), SLOT(igather), PREV(gather), PREV(igather),
                         "4k", "2:512k,8:256k,16:128k", true},
    /* No size window: only the root knows the counts. */
    [COLL_ZAP_GATHERV] = {"gatherv", NULL, (coll_zap_fn_t)coll_zap_gatherv, (coll_zap_fn_t)coll_zap_igatherv,
                          SLOT(gatherv), SLOT(igatherv), PREV(gatherv), PREV(igatherv), "0", "0", true},
    [COLL_ZAP_ALLTOALL] = {"alltoall", "bytes of one block (sendcount x sendtype size)",
                           (coll_zap_fn_t)coll_zap_alltoall, (coll_zap_fn_t)coll_zap_ialltoall, SLOT(alltoall),
                           SLOT(ialltoall), PREV(alltoall), PREV(ialltoall), "2:4k,4:0", "0", true},
    /* No size window: the counts differ across ranks. */
    [COLL_ZAP_ALLTOALLV] = {"alltoallv", NULL, (coll_zap_fn_t)coll_zap_alltoallv, (coll_zap_fn_t)coll_zap_ialltoallv,
                            SLOT(alltoallv), SLOT(ialltoallv), PREV(alltoallv), PREV(ialltoallv), "0", "0", true},
    [COLL_ZAP_SCAN] = {"scan", "bytes of the vector (count x type size)", (coll_zap_fn_t)coll_zap_scan,
                       (coll_zap_fn_t)coll_zap_iscan, SLOT(scan), SLOT(iscan), PREV(scan), PREV(iscan), "2:512,16:256k",
                       "0", true},
    [COLL_ZAP_EXSCAN] = {"exscan", "bytes of the vector (count x type size)", (coll_zap_fn_t)coll_zap_exscan,
                         (coll_zap_fn_t)coll_zap_iexscan, SLOT(exscan), SLOT(iexscan), PREV(exscan), PREV(iexscan),
                         "2:512,8:128k,16:1m", "0", true},
};

static const char *const why_names[COLL_ZAP_NWHY] = {"zap", "off", "size", "type_op", "stopped", "cid"};

coll_zap_why_t coll_zap_route_cid(coll_zap_coll_t coll, int nb, int count, ompi_datatype_t *dtype,
                                  struct ompi_op_t *op, int root)
{
    if (!nb || count != 1 || dtype != MPI_INT || (op == NULL ? root != 0 : op != MPI_MAX && op != MPI_MIN))
        return COLL_ZAP_TAKEN;
    coll_zap_count(coll, nb, COLL_ZAP_CID);
    COLL_ZAP_VERBOSE(3, "i%s of one MPI_INT to the previous module (cid: Open MPI's communicator-id shape)",
                     coll_zap_routes[coll].name);
    return COLL_ZAP_CID;
}

void coll_zap_count(coll_zap_coll_t coll, int nb, coll_zap_why_t why)
{
    /* Counters are per process and only read at finalize; a lost increment
     * under MPI_THREAD_MULTIPLE would only blur the statistics. */
    mca_coll_zap_component.route[coll].count[nb != 0][why]++;
}

coll_zap_why_t coll_zap_route_sized(const coll_zap_module_t *m, coll_zap_coll_t coll, int nb, size_t bytes)
{
    return coll_zap_route_kind(m, coll, nb, bytes, NULL, NULL);
}

bool coll_zap_gpu_memory(const void *buf)
{
    if (buf == NULL || buf == MPI_IN_PLACE)
        return false;
    zap_mem_kind_t k = zap_coll_ptr_kind(buf, 1);
    return k == ZAP_MEM_DEVICE || k == ZAP_MEM_MANAGED;
}

bool coll_zap_device_memory(const void *buf)
{
    return buf != NULL && buf != MPI_IN_PLACE && zap_coll_ptr_kind(buf, 1) == ZAP_MEM_DEVICE;
}

coll_zap_why_t coll_zap_route_kind(const coll_zap_module_t *m, coll_zap_coll_t coll, int nb, size_t bytes,
                                   const void *a, const void *b)
{
    const coll_zap_route_state_t *s = &mca_coll_zap_component.route[coll];
    coll_zap_why_t why = COLL_ZAP_TAKEN;
    if (m->zcomm == NULL || m->failed)
        why = COLL_ZAP_STOPPED;
    else if (!s->enable || (nb && !mca_coll_zap_component.nonblocking))
        why = COLL_ZAP_OFF;
    else if (coll_zap_routes[coll].bytes_means != NULL &&
             (bytes == 0 || bytes < m->min_bytes[coll] || (m->max_bytes[coll] != 0 && bytes > m->max_bytes[coll])) &&
             !coll_zap_gpu_memory(a) && !coll_zap_gpu_memory(b))
        why = COLL_ZAP_SIZE;
    if (why != COLL_ZAP_TAKEN) {
        coll_zap_count(coll, nb, why);
        COLL_ZAP_VERBOSE(3, "%s%s of %zu bytes on cid %u to the previous module (%s)", nb ? "i" : "",
                         coll_zap_routes[coll].name, bytes, m->comm->c_contextid, why_names[why]);
    }
    return why;
}

int coll_zap_window_parse(const char *text, coll_zap_window_t *w)
{
    coll_zap_window_t out = {.n = 0};
    const char *p = text != NULL ? text : "";
    while (*p != '\0') {
        char *end;
        unsigned long long a = strtoull(p, &end, 10), ranks = 1, bytes;
        if (end == p)
            return -1;
        if (*end == ':') {
            ranks = a;
            p = end + 1;
            bytes = strtoull(p, &end, 10);
            if (end == p)
                return -1;
        } else {
            bytes = a;
        }
        switch (*end) {
        case 'g': case 'G': bytes <<= 10; /* fall through */
        case 'm': case 'M': bytes <<= 10; /* fall through */
        case 'k': case 'K': bytes <<= 10; end++; break;
        default: break;
        }
        if (out.n == COLL_ZAP_WINDOW_MAX || ranks < 1 || ranks > INT32_MAX || (*end != ',' && *end != '\0'))
            return -1;
        out.ranks[out.n] = (int)ranks;
        out.bytes[out.n] = (size_t)bytes;
        out.n++;
        p = *end == ',' ? end + 1 : end;
    }
    *w = out;
    return 0;
}

size_t coll_zap_window_at(const coll_zap_window_t *w, int ranks)
{
    int best = -1;
    for (int i = 0; i < w->n; i++)
        if (w->ranks[i] <= ranks && (best < 0 || w->ranks[i] > w->ranks[best]))
            best = i;
    return best < 0 ? 0 : w->bytes[best];
}

bool coll_zap_route_parse_windows(void)
{
    for (int c = 0; c < COLL_ZAP_NCOLLS; c++) {
        coll_zap_route_state_t *s = &mca_coll_zap_component.route[c];
        const char *bad = NULL;
        if (coll_zap_window_parse(s->min_text, &s->min) != 0)
            bad = s->min_text;
        else if (coll_zap_window_parse(s->max_text, &s->max) != 0)
            bad = s->max_text;
        if (bad != NULL) {
            coll_zap_warn("declined: coll_zap_%s_min_bytes/_max_bytes: cannot read \"%s\" (a size such as 64k, or "
                          "RANKS:SIZE pairs such as 2:1m,8:0)",
                          coll_zap_routes[c].name, bad);
            return false;
        }
    }
    return true;
}

void coll_zap_route_windows(coll_zap_module_t *m)
{
    for (int c = 0; c < COLL_ZAP_NCOLLS; c++) {
        m->min_bytes[c] = coll_zap_window_at(&mca_coll_zap_component.route[c].min, m->size);
        m->max_bytes[c] = coll_zap_window_at(&mca_coll_zap_component.route[c].max, m->size);
    }
}

void coll_zap_route_install(coll_zap_module_t *m)
{
    for (int c = 0; c < COLL_ZAP_NCOLLS; c++) {
        const coll_zap_route_t *r = &coll_zap_routes[c];
        if (r->blocking != NULL)
            memcpy((char *)&m->super + r->mod_off, &r->blocking, sizeof(r->blocking));
        if (r->nonblocking != NULL)
            memcpy((char *)&m->super + r->imod_off, &r->nonblocking, sizeof(r->nonblocking));
    }
}

static bool save_one(coll_zap_prev_t *p, const mca_coll_base_comm_coll_t *table, size_t fn_off, size_t mod_off)
{
    memcpy(&p->fn, (const char *)table + fn_off, sizeof(p->fn));
    memcpy(&p->module, (const char *)table + mod_off, sizeof(p->module));
    if (p->fn == NULL || p->module == NULL) {
        p->fn = NULL;
        p->module = NULL;
        return false;
    }
    OBJ_RETAIN(p->module);
    return true;
}

bool coll_zap_route_save_previous(coll_zap_module_t *m, ompi_communicator_t *comm)
{
    bool ok = true;
    for (int c = 0; c < COLL_ZAP_NCOLLS; c++) {
        const coll_zap_route_t *r = &coll_zap_routes[c];
        if (r->blocking != NULL && !save_one(&m->prev[c], comm->c_coll, r->prev_off, r->prev_module_off))
            ok = false;
        if (r->nonblocking != NULL && !save_one(&m->iprev[c], comm->c_coll, r->iprev_off, r->iprev_module_off))
            ok = false;
    }
    return ok;
}

void coll_zap_route_release_previous(coll_zap_module_t *m)
{
    for (int c = 0; c < COLL_ZAP_NCOLLS; c++) {
        if (m->prev[c].module != NULL)
            OBJ_RELEASE(m->prev[c].module);
        if (m->iprev[c].module != NULL)
            OBJ_RELEASE(m->iprev[c].module);
        m->prev[c].module = m->iprev[c].module = NULL;
        m->prev[c].fn = m->iprev[c].fn = NULL;
    }
}

void coll_zap_stats_print(void)
{
    int rank = ompi_comm_rank(&ompi_mpi_comm_world.comm);
    fprintf(stderr, "coll:zap: stats rank %d: blocking calls %s\n", rank,
            mca_coll_zap_component.thread_multiple ? "posted and waited in the component (MPI_THREAD_MULTIPLE)"
                                                   : "on zap's blocking form");
    for (int c = 0; c < COLL_ZAP_NCOLLS; c++) {
        for (int nb = 0; nb < 2; nb++) {
            const uint64_t *n = mca_coll_zap_component.route[c].count[nb];
            uint64_t total = 0;
            for (int w = 0; w < COLL_ZAP_NWHY; w++)
                total += n[w];
            if (total == 0)
                continue;
            char line[256];
            int len = snprintf(line, sizeof(line), "coll:zap: stats rank %d: %s%s", rank, nb ? "i" : "",
                               coll_zap_routes[c].name);
            for (int w = 0; w < COLL_ZAP_NWHY && len > 0 && (size_t)len < sizeof(line); w++)
                len += snprintf(line + len, sizeof(line) - (size_t)len, " %s %llu", why_names[w],
                                (unsigned long long)n[w]);
            fprintf(stderr, "%s\n", line);
        }
    }
}
