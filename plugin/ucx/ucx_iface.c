/* The "zap" transport: the smallest transport that makes UCP keep the "zap"
 * memory domain.
 *
 * UCP closes every memory domain that has no transport resource, so the
 * component carries one transport with one device ("pool", type ACC). Its
 * interface moves no data: it advertises only CONNECT_TO_IFACE (UCP asserts
 * that every interface has some connection mode), no put/get/AM/atomic
 * capability, so UCP never selects it as a lane. Its address is a random
 * 64-bit id per interface and it reaches only itself, so it never claims a
 * peer either. What UCP calls on it: query, get_address/get_device_address,
 * is_reachable (1.16: the internal v2 version), progress enable/disable,
 * flush and close; everything else returns UCS_ERR_UNSUPPORTED.
 *
 * Object layout UCX relies on: an interface starts with uct_iface_t (the
 * 400-byte ops table, same in 1.13 and 1.16) followed by the pointer to the
 * internal ops table (libuct reaches estimate_perf and, in 1.16,
 * is_reachable_v2 through it); an endpoint starts with its uct_iface_h. */
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>
#include "ucx_plugin_int.h"

typedef struct zap_ucx_iface {
    uct_iface_t super;          /* ops table, by value */
    const void *internal_ops;   /* must follow super: uct_base_iface_t layout */
    uint64_t id;                /* interface address */
} zap_ucx_iface_t;
_Static_assert(offsetof(zap_ucx_iface_t, internal_ops) == 400, "internal ops pointer at +400");

typedef struct zap_ucx_ep {
    uct_ep_t super;
} zap_ucx_ep_t;

static _Atomic uint64_t zap_ucx_iface_counter;

static ucs_status_t zap_ucx_unsupported(void)
{
    return UCS_ERR_UNSUPPORTED;
}

static uint64_t zap_ucx_new_id(void)
{
    uint64_t r = 0;
    struct timespec ts;
    if (getrandom(&r, sizeof(r), GRND_NONBLOCK) != (ssize_t)sizeof(r)) {
        clock_gettime(CLOCK_MONOTONIC, &ts);
        r = ((uint64_t)ts.tv_sec * 1000000007ull) ^ (uint64_t)ts.tv_nsec;
    }
    return r ^ ((uint64_t)getpid() << 32) ^ atomic_fetch_add(&zap_ucx_iface_counter, 1);
}

/* ---- device ------------------------------------------------------------------ */

ucs_status_t zap_ucx_tl_query_devices(void *md, zap_ucx_tl_device_t **devices_p, unsigned *num_p)
{
    zap_ucx_tl_device_t *dev = zap_ucx_syms.ucs_malloc(sizeof(*dev), "zap tl device");
    (void)md;
    if (dev == NULL) {
        return UCS_ERR_NO_MEMORY;
    }
    memset(dev, 0, sizeof(*dev));
    strncpy(dev->name, ZAP_UCX_PLUGIN_DEVICE, sizeof(dev->name) - 1);
    dev->type = UCT_DEVICE_TYPE_ACC;
    dev->sys_device = ZAP_UCX_SYS_DEVICE_UNKNOWN;
    *devices_p = dev;
    *num_p = 1;
    return UCS_OK;
}

/* ---- interface ops -------------------------------------------------------------- */

static ucs_status_t zap_ucx_iface_query(uct_iface_h tl_iface, uct_iface_attr_t *attr)
{
    (void)tl_iface;
    memset(attr, 0, sizeof(*attr));
    attr->cap.flags = UCT_IFACE_FLAG_CONNECT_TO_IFACE;
    attr->device_addr_len = 0;
    attr->iface_addr_len = sizeof(uint64_t);
    attr->ep_addr_len = 0;
    attr->max_conn_priv = 0;
    attr->latency.c = 1e-9;
    attr->latency.m = 0;
    attr->bandwidth.dedicated = 0;
    attr->bandwidth.shared = 1e9;
    attr->overhead = 0; /* proto v2 asserts recv overhead 0 for copy transports */
    attr->priority = 0;
    attr->max_num_eps = SIZE_MAX;
    attr->dev_num_paths = 1;
    return UCS_OK;
}

static ucs_status_t zap_ucx_iface_get_address(uct_iface_h tl_iface, uct_iface_addr_t *addr)
{
    const zap_ucx_iface_t *iface = (const zap_ucx_iface_t *)tl_iface;
    memcpy(addr, &iface->id, sizeof(iface->id));
    return UCS_OK;
}

static ucs_status_t zap_ucx_iface_get_device_address(uct_iface_h tl_iface, uct_device_addr_t *addr)
{
    (void)tl_iface, (void)addr; /* device_addr_len is 0 */
    return UCS_OK;
}

static int zap_ucx_same_iface(uct_iface_h tl_iface, const void *iface_addr)
{
    const zap_ucx_iface_t *iface = (const zap_ucx_iface_t *)tl_iface;
    uint64_t id;
    if (iface_addr == NULL) {
        return 0;
    }
    memcpy(&id, iface_addr, sizeof(id));
    return id == iface->id;
}

static int zap_ucx_iface_is_reachable(const uct_iface_h tl_iface, const uct_device_addr_t *dev_addr,
                                      const uct_iface_addr_t *iface_addr)
{
    (void)dev_addr;
    return zap_ucx_same_iface(tl_iface, iface_addr);
}

static unsigned zap_ucx_iface_progress(uct_iface_h tl_iface)
{
    (void)tl_iface;
    return 0;
}

static void zap_ucx_iface_close(uct_iface_h tl_iface)
{
    free(tl_iface);
}

static ucs_status_t zap_ucx_ep_create(const uct_ep_params_t *params, uct_ep_h *ep_p)
{
    zap_ucx_ep_t *ep;
    if (!(params->field_mask & UCT_EP_PARAM_FIELD_IFACE)) {
        return UCS_ERR_INVALID_PARAM;
    }
    ep = calloc(1, sizeof(*ep));
    if (ep == NULL) {
        return UCS_ERR_NO_MEMORY;
    }
    ep->super.iface = params->iface;
    *ep_p = &ep->super;
    return UCS_OK;
}

static void zap_ucx_ep_destroy(uct_ep_h ep)
{
    free(ep);
}

static ucs_status_t zap_ucx_ep_flush(uct_ep_h ep, unsigned flags, uct_completion_t *comp)
{
    (void)ep, (void)flags, (void)comp;
    return UCS_OK;
}

static ucs_status_t zap_ucx_ep_fence(uct_ep_h ep, unsigned flags)
{
    (void)ep, (void)flags;
    return UCS_OK;
}

static ucs_status_t zap_ucx_ep_check(uct_ep_h ep, unsigned flags, uct_completion_t *comp)
{
    (void)ep, (void)flags, (void)comp;
    return UCS_OK;
}

static ucs_status_t zap_ucx_pending_add(uct_ep_h ep, uct_pending_req_t *req, unsigned flags)
{
    (void)ep, (void)req, (void)flags;
    return UCS_ERR_BUSY;
}

static void zap_ucx_pending_purge(uct_ep_h ep, uct_pending_purge_callback_t cb, void *arg)
{
    (void)ep, (void)cb, (void)arg; /* nothing is ever queued */
}

static ucs_status_t zap_ucx_iface_flush(uct_iface_h iface, unsigned flags, uct_completion_t *comp)
{
    (void)iface, (void)flags, (void)comp;
    return UCS_OK;
}

static ucs_status_t zap_ucx_iface_fence(uct_iface_h iface, unsigned flags)
{
    (void)iface, (void)flags;
    return UCS_OK;
}

static void zap_ucx_iface_progress_onoff(uct_iface_h iface, unsigned flags)
{
    (void)iface, (void)flags; /* progress does nothing, so nothing to switch */
}

static ucs_status_t zap_ucx_iface_event_arm(uct_iface_h iface, unsigned events)
{
    (void)iface, (void)events;
    return UCS_OK;
}

/* Fills the ops table: every slot first gets a function returning
 * UCS_ERR_UNSUPPORTED (no capability bit leads UCP to any of them), then the
 * ones UCP does call are set by name. The table is 50 function pointers with
 * no other members in both releases (asserted in ucx_abi.h by its size). */
static void zap_ucx_iface_ops_init(uct_iface_ops_t *ops)
{
    void (**slot)(void) = (void (**)(void))ops;
    size_t i;
    for (i = 0; i < sizeof(*ops) / sizeof(*slot); ++i) {
        slot[i] = (void (*)(void))zap_ucx_unsupported;
    }
    ops->ep_flush = zap_ucx_ep_flush;
    ops->ep_fence = zap_ucx_ep_fence;
    ops->ep_check = zap_ucx_ep_check;
    ops->ep_pending_add = zap_ucx_pending_add;
    ops->ep_pending_purge = zap_ucx_pending_purge;
    ops->ep_create = zap_ucx_ep_create;
    ops->ep_destroy = zap_ucx_ep_destroy;
    ops->iface_flush = zap_ucx_iface_flush;
    ops->iface_fence = zap_ucx_iface_fence;
    ops->iface_progress_enable = zap_ucx_iface_progress_onoff;
    ops->iface_progress_disable = zap_ucx_iface_progress_onoff;
    ops->iface_progress = zap_ucx_iface_progress;
    ops->iface_event_arm = zap_ucx_iface_event_arm;
    ops->iface_close = zap_ucx_iface_close;
    ops->iface_query = zap_ucx_iface_query;
    ops->iface_get_device_address = zap_ucx_iface_get_device_address;
    ops->iface_get_address = zap_ucx_iface_get_address;
    ops->iface_is_reachable = zap_ucx_iface_is_reachable;
}

/* ---- internal ops -------------------------------------------------------------- */

static void zap_ucx_iface_vfs_refresh(uct_iface_h iface)
{
    (void)iface;
}

static ucs_status_t zap_ucx_ep_query(uct_ep_h ep, void *attr)
{
    (void)ep, (void)attr;
    return UCS_ERR_UNSUPPORTED;
}

static ucs_status_t zap_ucx_ep_invalidate(uct_ep_h ep, unsigned flags)
{
    (void)ep, (void)flags;
    return UCS_ERR_UNSUPPORTED;
}

/* estimate_perf goes to libuct's uct_base_iface_estimate_perf (exported by
 * both releases), which only calls our iface_query. */
static ucs_status_t zap_ucx_estimate_perf(uct_iface_h iface, void *perf_attr)
{
    return zap_ucx_syms.estimate_perf(iface, perf_attr);
}

static const zap_a13_iface_internal_ops_t zap_a13_internal_ops = {
    .iface_estimate_perf = zap_ucx_estimate_perf,
    .iface_vfs_refresh = zap_ucx_iface_vfs_refresh,
    .ep_query = zap_ucx_ep_query,
    .ep_invalidate = zap_ucx_ep_invalidate,
};

static ucs_status_t zap_a16_ep_connect_to_ep_v2(uct_ep_h ep, const void *dev_addr,
                                                const void *ep_addr, const void *params)
{
    (void)ep, (void)dev_addr, (void)ep_addr, (void)params;
    return UCS_ERR_UNSUPPORTED;
}

static int zap_a16_iface_is_reachable_v2(const uct_iface_h iface, const zap_a16_reach_params_t *params)
{
    const void *iface_addr = NULL;
    int reachable;
    if (params->field_mask & ZAP_A16_REACH_FIELD_IFACE_ADDR) {
        iface_addr = params->iface_addr;
    }
    reachable = zap_ucx_same_iface(iface, iface_addr);
    if (!reachable && (params->field_mask & ZAP_A16_REACH_FIELD_INFO_STRING) &&
        (params->field_mask & ZAP_A16_REACH_FIELD_INFO_STRING_LENGTH) &&
        params->info_string != NULL && params->info_string_length > 0) {
        strncpy(params->info_string, "zap reaches only its own interface",
                params->info_string_length - 1);
        params->info_string[params->info_string_length - 1] = '\0';
    }
    return reachable;
}

static int zap_a16_ep_is_connected(const uct_ep_h ep, const void *params)
{
    (void)ep, (void)params;
    return 0;
}

static const zap_a16_iface_internal_ops_t zap_a16_internal_ops = {
    .iface_estimate_perf = zap_ucx_estimate_perf,
    .iface_vfs_refresh = zap_ucx_iface_vfs_refresh,
    .ep_query = zap_ucx_ep_query,
    .ep_invalidate = zap_ucx_ep_invalidate,
    .ep_connect_to_ep_v2 = zap_a16_ep_connect_to_ep_v2,
    .iface_is_reachable_v2 = zap_a16_iface_is_reachable_v2,
    .ep_is_connected = zap_a16_ep_is_connected,
};

ucs_status_t zap_ucx_tl_iface_open(void *md, void *worker, const uct_iface_params_t *params,
                                   const void *config, uct_iface_h *iface_p)
{
    zap_ucx_iface_t *iface;
    (void)md, (void)worker, (void)params, (void)config;
    iface = calloc(1, sizeof(*iface));
    if (iface == NULL) {
        return UCS_ERR_NO_MEMORY;
    }
    zap_ucx_iface_ops_init(&iface->super.ops);
    iface->internal_ops = (zap_ucx_active_abi == ZAP_UCX_ABI_116) ? (const void *)&zap_a16_internal_ops
                                                                  : (const void *)&zap_a13_internal_ops;
    iface->id = zap_ucx_new_id();
    atomic_fetch_add(&zap_ucx_counters.iface_opens, 1);
    *iface_p = &iface->super;
    return UCS_OK;
}
