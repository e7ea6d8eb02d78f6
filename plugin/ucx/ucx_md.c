/* The "zap" memory domain: UCX's view of one process-wide zap pool.
 *
 * UCX opens a memory domain per ucp context (and ucx_info opens one per
 * query), but memory allocated through one context may outlive it, so every
 * open MD shares a single pool: the first open creates it from that MD's
 * UCX_ZAP_* settings, the last close destroys it when no buffer is out (else
 * it is kept for the next open, never freed under a live buffer).
 *
 * What the MD does for UCX:
 *   mem_alloc   zap_pool_alloc; the memh records the buffer (UCX_ALLOC_PRIO=md:zap
 *               or md:* reaches it for host memory).
 *   mem_reg     accepts any range and returns a constant memh: pool memory
 *               needs no registration for the CPU-driven copies UCX does, and
 *               no rkey is packed (rkey_packed_size 0).
 *   mem_query   recognises pool memory (base and length of the enclosing
 *   /detect     chunk) and refuses anything else with UCS_ERR_INVALID_ADDR.
 *
 * Memory type. UCX builds without CUDA (Debian's 1.13.1, Ubuntu's 1.16.0) have
 * no transport that can copy CUDA_MANAGED memory, and UCP crashes packing
 * memory reported as such. The MD therefore reports every pool buffer,
 * managed ones included, as HOST: UCP then moves it with its CPU transports
 * (shared memory, cma, tcp), which reach managed pages on demand. For the
 * same reason the MD is not a detection MD (detect_mem_types is empty); UCP
 * never needs to ask it, and answers for other callers come from mem_query. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include "base/log.h"
#include "ucx_plugin_int.h"

#define ZAP_UCX_MEMH_MAGIC 0x7a61706d656d6821ull /* "zapmemh!" */

typedef struct zap_ucx_md {
    zap_ucx_md_base_t super; /* struct uct_md: ops, component */
} zap_ucx_md_t;

/* Handle of a buffer UCX allocated through the MD. */
typedef struct zap_ucx_alloc_memh {
    uint64_t magic;
    zap_buf_t buf;
} zap_ucx_alloc_memh_t;

/* Handle returned by mem_reg: one constant, never dereferenced by UCX. */
static char zap_ucx_reg_memh;

static pthread_mutex_t zap_ucx_pool_lock = PTHREAD_MUTEX_INITIALIZER;
static zap_pool_t *_Atomic zap_ucx_pool;
static unsigned zap_ucx_pool_users; /* open MDs; guarded by zap_ucx_pool_lock */
const char *_Atomic zap_ucx_pool_backend;

static const zap_pool_backend_t zap_ucx_backend_values[] = {
    ZAP_POOL_BACKEND_AUTO, ZAP_POOL_BACKEND_MANAGED, ZAP_POOL_BACKEND_PINNED, ZAP_POOL_BACKEND_HOST};

static zap_status_t zap_ucx_pool_get(const zap_ucx_md_config_t *config)
{
    zap_status_t status = ZAP_OK;
    pthread_mutex_lock(&zap_ucx_pool_lock);
    if (atomic_load(&zap_ucx_pool) == NULL) {
        zap_pool_params_t params;
        zap_pool_t *pool;
        memset(&params, 0, sizeof(params));
        params.chunk_bytes = (config->chunk_size == ZAP_UCX_MEMUNITS_AUTO) ? 0 : config->chunk_size;
        if (config->budget == ZAP_UCX_MEMUNITS_INF) {
            params.budget_bytes = ZAP_POOL_UNLIMITED;
        } else if (config->budget != ZAP_UCX_MEMUNITS_AUTO) {
            params.budget_bytes = config->budget;
        }
        params.backend = zap_ucx_backend_values[config->backend];
        params.device = -1;
        params.name = "ucx-zap";
        status = zap_pool_create(&params, &pool);
        if (status == ZAP_OK) {
            atomic_store(&zap_ucx_pool, pool);
            atomic_store(&zap_ucx_pool_backend, zap_pool_backend_name(pool));
            zap_info("ucx plugin: pool created (backing %s)", zap_pool_backend_name(pool));
        }
    }
    if (status == ZAP_OK) {
        ++zap_ucx_pool_users;
    }
    pthread_mutex_unlock(&zap_ucx_pool_lock);
    return status;
}

static void zap_ucx_pool_put(void)
{
    pthread_mutex_lock(&zap_ucx_pool_lock);
    if (--zap_ucx_pool_users == 0) {
        zap_pool_t *pool = atomic_load(&zap_ucx_pool);
        zap_pool_stats_t stats;
        /* Keep the pool while UCX still holds buffers from it: they are freed
         * through a later MD, or live until exit. */
        if (zap_pool_stats(pool, &stats) == ZAP_OK && stats.buffers_out == 0 &&
            zap_pool_destroy(pool) == ZAP_OK) {
            atomic_store(&zap_ucx_pool, NULL);
        }
    }
    pthread_mutex_unlock(&zap_ucx_pool_lock);
}

int zap_ucx_md_owns(const void *ptr, size_t len)
{
    zap_pool_t *pool = atomic_load(&zap_ucx_pool);
    zap_pool_region_t region;
    if (pool == NULL || ptr == NULL) {
        return 0;
    }
    return zap_pool_lookup(pool, ptr, len == 0 ? 1 : len, -1, &region) == ZAP_OK;
}

/* ---- ops shared by both ABIs ------------------------------------------------ */

static void zap_ucx_md_close(void *md)
{
    free(md);
    zap_ucx_pool_put();
}

static ucs_status_t zap_ucx_mem_alloc(void *md, size_t *len_p, void **addr_p,
                                      ucs_memory_type_t mem_type, unsigned flags, const char *name,
                                      void **memh_p)
{
    zap_pool_t *pool = atomic_load(&zap_ucx_pool);
    zap_ucx_alloc_memh_t *memh;
    zap_status_t status;
    (void)md;
    (void)flags;
    if (mem_type != ZAP_UCX_MEMTYPE_HOST || *len_p == 0) {
        return UCS_ERR_UNSUPPORTED; /* query never offers other types */
    }
    memh = malloc(sizeof(*memh));
    if (memh == NULL) {
        return UCS_ERR_NO_MEMORY;
    }
    status = zap_pool_alloc(pool, *len_p, &memh->buf);
    if (status != ZAP_OK) {
        zap_debug("ucx plugin: pool refused %zu bytes for %s: %s", *len_p, name ? name : "?",
                  zap_status_string(status));
        free(memh);
        return UCS_ERR_NO_MEMORY;
    }
    memh->magic = ZAP_UCX_MEMH_MAGIC;
    *addr_p = memh->buf.ptr;
    *memh_p = memh;
    atomic_fetch_add(&zap_ucx_counters.allocs, 1);
    atomic_fetch_add(&zap_ucx_counters.alloc_bytes, *len_p);
    return UCS_OK;
}

static ucs_status_t zap_ucx_mem_free(void *md, void *memh_ptr)
{
    zap_ucx_alloc_memh_t *memh = memh_ptr;
    (void)md;
    if (memh == NULL || memh_ptr == &zap_ucx_reg_memh || memh->magic != ZAP_UCX_MEMH_MAGIC) {
        return UCS_ERR_INVALID_PARAM;
    }
    if (zap_buf_free(&memh->buf) != ZAP_OK) {
        return UCS_ERR_INVALID_PARAM;
    }
    memh->magic = 0;
    free(memh);
    atomic_fetch_add(&zap_ucx_counters.frees, 1);
    return UCS_OK;
}

static ucs_status_t zap_ucx_mem_advise(void *md, void *memh, void *addr, size_t len,
                                       unsigned advice)
{
    (void)md, (void)memh, (void)addr, (void)len, (void)advice;
    return UCS_OK; /* UCT_MD_FLAG_ADVISE is not advertised */
}

static ucs_status_t zap_ucx_mem_reg_common(void **memh_p)
{
    *memh_p = &zap_ucx_reg_memh;
    atomic_fetch_add(&zap_ucx_counters.regs, 1);
    return UCS_OK;
}

/* Deregistration of a mem_reg handle does nothing; an allocation's handle
 * stays valid until mem_free. */
static ucs_status_t zap_ucx_mem_dereg(void *md, const zap_ucx_dereg_params_t *params)
{
    (void)md;
    if (!(params->field_mask & ZAP_UCX_DEREG_FIELD_MEMH)) {
        return UCS_ERR_INVALID_PARAM;
    }
    return UCS_OK;
}

/* Finds the pool region of [addr, addr+len); UCS_ERR_INVALID_ADDR otherwise. */
static ucs_status_t zap_ucx_find(const void *addr, size_t len, zap_pool_region_t *region)
{
    zap_pool_t *pool = atomic_load(&zap_ucx_pool);
    if (pool != NULL && addr != NULL &&
        zap_pool_lookup(pool, addr, len == 0 ? 1 : len, -1, region) == ZAP_OK) {
        atomic_fetch_add(&zap_ucx_counters.query_hits, 1);
        return UCS_OK;
    }
    atomic_fetch_add(&zap_ucx_counters.query_misses, 1);
    return UCS_ERR_INVALID_ADDR;
}

static ucs_status_t zap_ucx_detect_memory_type(void *md, const void *addr, size_t len,
                                               ucs_memory_type_t *mem_type_p)
{
    zap_pool_region_t region;
    ucs_status_t status = zap_ucx_find(addr, len, &region);
    (void)md;
    if (status == UCS_OK) {
        *mem_type_p = (ucs_memory_type_t)ZAP_UCX_MEMTYPE_HOST;
    }
    return status;
}

static ucs_status_t zap_ucx_rkey_buf_none(void *rkey_buf)
{
    (void)rkey_buf; /* rkey_packed_size is 0: nothing to write */
    return UCS_OK;
}

static uint64_t zap_ucx_max_alloc(void)
{
    zap_pool_t *pool = atomic_load(&zap_ucx_pool);
    zap_pool_stats_t stats;
    if (pool != NULL && zap_pool_stats(pool, &stats) == ZAP_OK && stats.budget_bytes != 0) {
        return stats.budget_bytes;
    }
    return UINT64_MAX;
}

/* ---- UCX 1.13 adapters -------------------------------------------------------- */

static ucs_status_t zap_a13_md_query(void *md, zap_a13_md_attr_t *attr)
{
    (void)md;
    memset(attr, 0, sizeof(*attr));
    attr->cap.max_alloc = zap_ucx_max_alloc();
    attr->cap.max_reg = SIZE_MAX;
    attr->cap.flags = UCT_MD_FLAG_ALLOC | UCT_MD_FLAG_REG;
    attr->cap.reg_mem_types = 1ull << ZAP_UCX_MEMTYPE_HOST;
    attr->cap.alloc_mem_types = 1ull << ZAP_UCX_MEMTYPE_HOST;
    attr->cap.access_mem_types = 1ull << ZAP_UCX_MEMTYPE_HOST;
    attr->cap.detect_mem_types = 0;
    attr->rkey_packed_size = 0;
    memset(attr->local_cpus, 0xff, sizeof(attr->local_cpus));
    return UCS_OK;
}

static ucs_status_t zap_a13_mem_reg(void *md, void *addr, size_t len, unsigned flags, void **memh_p)
{
    (void)md, (void)addr, (void)len, (void)flags;
    return zap_ucx_mem_reg_common(memh_p);
}

static ucs_status_t zap_a13_mem_query(void *md, const void *addr, size_t len,
                                      zap_a13_mem_attr_t *attr)
{
    zap_pool_region_t region;
    ucs_status_t status = zap_ucx_find(addr, len, &region);
    (void)md;
    if (status != UCS_OK) {
        return status;
    }
    if (attr->field_mask & ZAP_UCX_MEM_ATTR_MEM_TYPE) {
        attr->mem_type = (ucs_memory_type_t)ZAP_UCX_MEMTYPE_HOST;
    }
    if (attr->field_mask & ZAP_UCX_MEM_ATTR_SYS_DEV) {
        attr->sys_dev = ZAP_UCX_SYS_DEVICE_UNKNOWN;
    }
    if (attr->field_mask & ZAP_UCX_MEM_ATTR_BASE_ADDRESS) {
        attr->base_address = region.base;
    }
    if (attr->field_mask & ZAP_UCX_MEM_ATTR_ALLOC_LENGTH) {
        attr->alloc_length = region.len;
    }
    return UCS_OK;
}

static ucs_status_t zap_a13_mkey_pack(void *md, void *memh, const zap_ucx_mkey_pack_params_t *params,
                                      void *rkey_buf)
{
    (void)md, (void)memh, (void)params;
    return zap_ucx_rkey_buf_none(rkey_buf);
}

static int zap_a13_is_sockaddr_accessible(void *md, const void *sockaddr, int mode)
{
    (void)md, (void)sockaddr, (void)mode;
    return 0;
}

static const zap_a13_md_ops_t zap_a13_md_ops = {
    .close = zap_ucx_md_close,
    .query = zap_a13_md_query,
    .mem_alloc = zap_ucx_mem_alloc,
    .mem_free = zap_ucx_mem_free,
    .mem_advise = zap_ucx_mem_advise,
    .mem_reg = zap_a13_mem_reg,
    .mem_dereg = zap_ucx_mem_dereg,
    .mem_query = zap_a13_mem_query,
    .mkey_pack = zap_a13_mkey_pack,
    .is_sockaddr_accessible = zap_a13_is_sockaddr_accessible,
    .detect_memory_type = zap_ucx_detect_memory_type,
};

/* ---- UCX 1.16 adapters -------------------------------------------------------- */

static ucs_status_t zap_a16_md_query(void *md, zap_a16_md_attr_t *attr)
{
    (void)md;
    /* libuct hands a zeroed struct asking for every field; answer them all. */
    memset(attr, 0, sizeof(*attr));
    attr->field_mask = UINT64_MAX;
    attr->max_alloc = zap_ucx_max_alloc();
    attr->max_reg = SIZE_MAX;
    attr->flags = UCT_MD_FLAG_ALLOC | UCT_MD_FLAG_REG;
    attr->reg_mem_types = 1ull << ZAP_UCX_MEMTYPE_HOST;
    /* Registrations are free; letting UCP cache them keeps proto v2 from
     * asking for a per-operation memh. */
    attr->cache_mem_types = 1ull << ZAP_UCX_MEMTYPE_HOST;
    attr->alloc_mem_types = 1ull << ZAP_UCX_MEMTYPE_HOST;
    attr->access_mem_types = 1ull << ZAP_UCX_MEMTYPE_HOST;
    attr->rkey_packed_size = 0;
    memset(attr->local_cpus, 0xff, sizeof(attr->local_cpus));
    attr->reg_alignment = 1;
    return UCS_OK;
}

static ucs_status_t zap_a16_mem_reg(void *md, void *addr, size_t len,
                                    const zap_a16_reg_params_t *params, void **memh_p)
{
    (void)md, (void)addr, (void)len, (void)params;
    return zap_ucx_mem_reg_common(memh_p);
}

static ucs_status_t zap_a16_mem_query(void *md, const void *addr, size_t len,
                                      zap_a16_mem_attr_t *attr)
{
    zap_pool_region_t region;
    ucs_status_t status = zap_ucx_find(addr, len, &region);
    (void)md;
    if (status != UCS_OK) {
        return status;
    }
    if (attr->field_mask & ZAP_UCX_MEM_ATTR_MEM_TYPE) {
        attr->mem_type = (ucs_memory_type_t)ZAP_UCX_MEMTYPE_HOST;
    }
    if (attr->field_mask & ZAP_UCX_MEM_ATTR_SYS_DEV) {
        attr->sys_dev = ZAP_UCX_SYS_DEVICE_UNKNOWN;
    }
    if (attr->field_mask & ZAP_UCX_MEM_ATTR_BASE_ADDRESS) {
        attr->base_address = region.base;
    }
    if (attr->field_mask & ZAP_UCX_MEM_ATTR_ALLOC_LENGTH) {
        attr->alloc_length = region.len;
    }
    if (attr->field_mask & ZAP_UCX_MEM_ATTR_DMABUF_FD) {
        attr->dmabuf_fd = ZAP_UCX_DMABUF_FD_INVALID;
    }
    if (attr->field_mask & ZAP_UCX_MEM_ATTR_DMABUF_OFFSET) {
        attr->dmabuf_offset = 0;
    }
    return UCS_OK;
}

static ucs_status_t zap_a16_mkey_pack(void *md, void *memh, void *addr, size_t len,
                                      const zap_ucx_mkey_pack_params_t *params, void *rkey_buf)
{
    (void)md, (void)memh, (void)addr, (void)len, (void)params;
    return zap_ucx_rkey_buf_none(rkey_buf);
}

static ucs_status_t zap_a16_mem_attach(void *md, const void *mkey_buf, const void *params,
                                       void **memh_p)
{
    (void)md, (void)mkey_buf, (void)params, (void)memh_p;
    return UCS_ERR_UNSUPPORTED;
}

static const zap_a16_md_ops_t zap_a16_md_ops = {
    .close = zap_ucx_md_close,
    .query = zap_a16_md_query,
    .mem_alloc = zap_ucx_mem_alloc,
    .mem_free = zap_ucx_mem_free,
    .mem_advise = zap_ucx_mem_advise,
    .mem_reg = zap_a16_mem_reg,
    .mem_dereg = zap_ucx_mem_dereg,
    .mem_query = zap_a16_mem_query,
    .mkey_pack = zap_a16_mkey_pack,
    .mem_attach = zap_a16_mem_attach,
    .detect_memory_type = zap_ucx_detect_memory_type,
};

/* ---- component entry points --------------------------------------------------- */

ucs_status_t zap_ucx_query_md_resources(void *component, uct_md_resource_desc_t **res_p,
                                        unsigned *num_p)
{
    /* UCX frees the array with ucs_free, so it must come from ucs_malloc. */
    uct_md_resource_desc_t *res = zap_ucx_syms.ucs_malloc(sizeof(*res), "zap md resource");
    (void)component;
    if (res == NULL) {
        return UCS_ERR_NO_MEMORY;
    }
    memset(res, 0, sizeof(*res));
    strncpy(res->md_name, ZAP_UCX_PLUGIN_COMPONENT, sizeof(res->md_name) - 1);
    *res_p = res;
    *num_p = 1;
    return UCS_OK;
}

ucs_status_t zap_ucx_md_open(void *component, const char *md_name, const void *config, void **md_p)
{
    const zap_ucx_md_config_t *cfg = config;
    zap_ucx_md_t *md;
    zap_status_t status;
    if (strcmp(md_name, ZAP_UCX_PLUGIN_COMPONENT) != 0) {
        return UCS_ERR_NO_DEVICE;
    }
    md = calloc(1, sizeof(*md));
    if (md == NULL) {
        return UCS_ERR_NO_MEMORY;
    }
    status = zap_ucx_pool_get(cfg);
    if (status != ZAP_OK) {
        /* The pool logged the cause; say only what it means for UCX. */
        zap_info("ucx plugin: memory domain %s not opened: %s", md_name,
                  zap_status_string(status));
        free(md);
        return (status == ZAP_ERR_NO_MEMORY) ? UCS_ERR_NO_MEMORY : UCS_ERR_NO_DEVICE;
    }
    md->super.ops = (zap_ucx_active_abi == ZAP_UCX_ABI_116) ? (const void *)&zap_a16_md_ops
                                                            : (const void *)&zap_a13_md_ops;
    md->super.component = component;
    atomic_fetch_add(&zap_ucx_counters.md_opens, 1);
    *md_p = md;
    return UCS_OK;
}
