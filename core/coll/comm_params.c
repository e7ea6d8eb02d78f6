/* A communicator's settings, captured once when it is made
 * (comm_impl.h): explicit params first, then the environment read now (or a
 * parent's captured settings), then the defaults of the settings table
 * (core/base/config.c, docs/config.md). A bad value fails the creation with
 * ZAP_ERR_INVALID_PARAM and a line naming the variable or the field; nothing
 * after creation reads the environment. */
#include "coll/comm_impl.h"
#include "coll/coll_test.h"
#include "coll/engine/select.h"
#include "base/config_table.h"
#include "base/log.h"
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static zap_status_t from_env(zap_coll_settings_t *s)
{
    zap_status_t st = ZAP_OK;
    int shm = 0, cma = 0, path = 0, hier = 0;
    uint64_t checksum = 0, pipeline = 0;
    for (int k = 0; k < ZAP_COLL_KIND_MAX; k++)
        s->alg[k] = -1;
    for (int d = 0; d < zap_coll_ndescs && st == ZAP_OK; d++) {
        const zap_coll_desc_t *desc = zap_coll_descs[d];
        int idx = 0; /* the setting's choices are "auto" then the table's names, in order */
        if (desc->setting != ZAP_CFG_COUNT && (st = zap_cfg_get_choice(desc->setting, &idx)) == ZAP_OK)
            s->alg[desc->kind] = (int8_t)(idx - 1);
    }
    if (st == ZAP_OK)
        st = zap_cfg_get_seconds(ZAP_CFG_TIMEOUT, &s->timeout);
    if (st == ZAP_OK)
        st = zap_cfg_get_choice(ZAP_CFG_COLL_SHM, &shm);
    if (st == ZAP_OK)
        st = zap_cfg_get_u64(ZAP_CFG_COLL_SHM_LARGE_BYTES, &s->shm_large_bytes);
    if (st == ZAP_OK)
        st = zap_cfg_get_choice(ZAP_CFG_COLL_CMA, &cma);
    if (st == ZAP_OK)
        st = zap_cfg_get_u64(ZAP_CFG_CHECKSUM, &checksum);
    if (st == ZAP_OK)
        st = zap_cfg_get_choice(ZAP_CFG_COLL_GPU_PATH, &path);
    if (st == ZAP_OK)
        st = zap_cfg_get_choice(ZAP_CFG_COLL_HIER, &hier);
    if (st == ZAP_OK)
        st = zap_cfg_get_u64(ZAP_CFG_COLL_GPU_MIN_BYTES, &s->gpu_min_bytes);
    /* Unset, the pipelined algorithms choose their segment per message size;
     * set, it is the segment (and the large forms' chunk). */
    if (st == ZAP_OK && getenv(zap_cfg_name(ZAP_CFG_COLL_PIPELINE_BYTES)) != NULL)
        st = zap_cfg_get_u64(ZAP_CFG_COLL_PIPELINE_BYTES, &pipeline);
    s->shm = shm == 0;
    s->cma = cma != 2; /* auto|on|off */
    s->cma_always = cma == 1;
    s->checksum = checksum != 0;
    s->hier = hier == 0;
    s->gpu_path = path;
    s->pipeline_bytes = (size_t)pipeline;
    s->oversubscribed = -1;
    return st;
}

static zap_status_t bad(const char *field, const char *what)
{
    zap_error("coll: zap_comm_params_t.%s: %s", field, what);
    return ZAP_ERR_INVALID_PARAM;
}

static zap_status_t apply_alg(const zap_coll_desc_t *desc, const char *name, const char *field, int8_t *alg)
{
    if (name == NULL)
        return ZAP_OK;
    if (strcmp(name, "auto") == 0) {
        *alg = -1;
        return ZAP_OK;
    }
    int a = zap_coll_alg_find(desc, name);
    if (a >= 0) {
        *alg = (int8_t)a;
        return ZAP_OK;
    }
    char names[256];
    size_t at = (size_t)snprintf(names, sizeof(names), "auto");
    for (int i = 0; i < desc->nalgs && at < sizeof(names); i++)
        if (desc->algs[i].by_name)
            at += (size_t)snprintf(names + at, sizeof(names) - at, "|%s", desc->algs[i].name);
    zap_error("coll: zap_comm_params_t.%s: unknown %s algorithm '%s' (accepted: %s)", field, desc->name, name, names);
    return ZAP_ERR_INVALID_PARAM;
}

static zap_status_t apply_switch(zap_comm_switch_t v, const char *field, bool *out)
{
    if (v == ZAP_COMM_SWITCH_DEFAULT)
        return ZAP_OK;
    if (v != ZAP_COMM_SWITCH_ON && v != ZAP_COMM_SWITCH_OFF)
        return bad(field, "not a zap_comm_switch_t value");
    *out = v == ZAP_COMM_SWITCH_ON;
    return ZAP_OK;
}

/* A byte count, checked against its setting's range (one source of truth:
 * the table). */
static zap_status_t apply_bytes(uint64_t v, zap_cfg_id_t id, const char *field, uint64_t *out)
{
    if (v == 0)
        return ZAP_OK;
    char text[32];
    snprintf(text, sizeof(text), "%llu", (unsigned long long)(v == ZAP_COMM_BYTES_ZERO ? 0 : v));
    uint64_t parsed = 0;
    if (zap_cfg_parse_u64(id, text, &parsed) != ZAP_OK)
        return bad(field, "out of range (the line above gives the accepted values)");
    *out = parsed;
    return ZAP_OK;
}

static zap_status_t apply(const zap_comm_params_t *p, zap_coll_settings_t *s)
{
    zap_status_t st = apply_alg(&zap_allreduce_desc, p->allreduce_alg, "allreduce_alg", &s->alg[ZAP_COLL_ALLREDUCE]);
    if (st == ZAP_OK)
        st = apply_alg(&zap_bcast_desc, p->bcast_alg, "bcast_alg", &s->alg[ZAP_COLL_BCAST]);
    const struct {
        const zap_coll_desc_t *desc;
        const char *name, *field;
    } more[] = {{&zap_reduce_desc, p->reduce_alg, "reduce_alg"},
                {&zap_reduce_scatter_desc, p->reduce_scatter_alg, "reduce_scatter_alg"},
                {&zap_gather_desc, p->gather_alg, "gather_alg"},
                {&zap_alltoall_desc, p->alltoall_alg, "alltoall_alg"},
                {&zap_scan_desc, p->scan_alg, "scan_alg"},
                {&zap_exscan_desc, p->exscan_alg, "exscan_alg"}};
    for (size_t i = 0; st == ZAP_OK && i < sizeof(more) / sizeof(more[0]); i++)
        st = apply_alg(more[i].desc, more[i].name, more[i].field, &s->alg[more[i].desc->kind]);
    if (st == ZAP_OK && p->timeout_s != 0) {
        if (p->timeout_s == ZAP_COMM_TIMEOUT_NONE)
            s->timeout = INFINITY;
        else if (isfinite(p->timeout_s) && p->timeout_s > 0 && p->timeout_s <= 1e7)
            s->timeout = p->timeout_s;
        else
            st = bad("timeout_s", "not > 0 seconds (at most 1e7) or ZAP_COMM_TIMEOUT_NONE");
    }
    if (st == ZAP_OK)
        st = apply_switch(p->shm, "shm", &s->shm);
    if (st == ZAP_OK)
        st = apply_switch(p->cma, "cma", &s->cma);
    if (st == ZAP_OK && p->cma != ZAP_COMM_SWITCH_DEFAULT)
        s->cma_always = p->cma == ZAP_COMM_SWITCH_ON;
    if (st == ZAP_OK)
        st = apply_switch(p->checksum, "checksum", &s->checksum);
    if (st == ZAP_OK)
        st = apply_switch(p->hier, "hier", &s->hier);
    if (st == ZAP_OK)
        st = apply_bytes(p->shm_large_bytes, ZAP_CFG_COLL_SHM_LARGE_BYTES, "shm_large_bytes", &s->shm_large_bytes);
    if (st == ZAP_OK)
        st = apply_bytes(p->gpu_min_bytes, ZAP_CFG_COLL_GPU_MIN_BYTES, "gpu_min_bytes", &s->gpu_min_bytes);
    uint64_t pipeline = s->pipeline_bytes;
    if (st == ZAP_OK && (st = apply_bytes(p->pipeline_bytes, ZAP_CFG_COLL_PIPELINE_BYTES, "pipeline_bytes",
                                          &pipeline)) == ZAP_OK)
        s->pipeline_bytes = (size_t)pipeline;
    if (st == ZAP_OK && p->gpu_path != ZAP_COMM_GPU_PATH_DEFAULT) {
        if (p->gpu_path == ZAP_COMM_GPU_PATH_AUTO || p->gpu_path == ZAP_COMM_GPU_PATH_IPC ||
            p->gpu_path == ZAP_COMM_GPU_PATH_OFF)
            s->gpu_path = p->gpu_path == ZAP_COMM_GPU_PATH_AUTO  ? ZAP_COLL_GPU_AUTO
                          : p->gpu_path == ZAP_COMM_GPU_PATH_IPC ? ZAP_COLL_GPU_IPC
                                                                 : ZAP_COLL_GPU_OFF;
        else
            st = bad("gpu_path", "not a zap_comm_gpu_path_t value");
    }
    if (st == ZAP_OK && p->oversubscribed != ZAP_COMM_SWITCH_DEFAULT) {
        bool over = false;
        if ((st = apply_switch(p->oversubscribed, "oversubscribed", &over)) == ZAP_OK)
            s->oversubscribed = over ? 1 : 0;
    }
    return st;
}

zap_status_t zap_coll_settings_resolve(const zap_comm_params_t *params, const zap_coll_settings_t *inherit,
                                       zap_coll_settings_t *set)
{
    zap_coll_settings_t s;
    zap_status_t st = ZAP_OK;
    if (inherit != NULL)
        s = *inherit;
    else
        st = from_env(&s);
    if (st == ZAP_OK && params != NULL)
        st = apply(params, &s);
    if (st == ZAP_OK)
        *set = s;
    return st;
}

zap_status_t zap_coll_test_force(zap_comm_t *comm, const char *collective, const char *name)
{
    for (int d = 0; comm != NULL && collective != NULL && name != NULL && d < zap_coll_ndescs; d++) {
        const zap_coll_desc_t *desc = zap_coll_descs[d];
        if (strcmp(desc->name, collective) == 0) {
            comm->memo[desc->kind].n = 0; /* the candidates change with the setting */
            return apply_alg(desc, name, "(test hook)", &comm->set.alg[desc->kind]);
        }
    }
    return ZAP_ERR_INVALID_PARAM;
}

/* --- the node's load -------------------------------------------------------- */

static bool node_oversubscribed;
static pthread_once_t node_once = PTHREAD_ONCE_INIT;

/* The local rank count comes from the launcher's environment (Open MPI,
 * MPICH/Hydra, Slurm); when none says, the node counts as not
 * oversubscribed. It describes the process, not a setting, so it is read
 * once. */
static void read_node(void)
{
    static const char *const vars[] = {"OMPI_COMM_WORLD_LOCAL_SIZE", "MPI_LOCALNRANKS", "SLURM_NTASKS_PER_NODE"};
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    for (size_t i = 0; i < sizeof(vars) / sizeof(vars[0]); i++) {
        const char *v = getenv(vars[i]);
        long n = v ? strtol(v, NULL, 10) : 0;
        if (n > 0) {
            node_oversubscribed = cores > 0 && n > cores;
            return;
        }
    }
}

bool zap_coll_node_oversubscribed(void)
{
    pthread_once(&node_once, read_node);
    return node_oversubscribed;
}

bool zap_coll_local_oversubscribed(const zap_coll_settings_t *set)
{
    return set->oversubscribed >= 0 ? set->oversubscribed != 0 : zap_coll_node_oversubscribed();
}
