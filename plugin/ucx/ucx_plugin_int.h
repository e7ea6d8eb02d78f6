/* Internal contract between the three parts of the plugin: registration and
 * self-check (ucx_plugin.c), the memory domain (ucx_md.c) and the transport
 * (ucx_iface.c). Only one ABI is ever active in a process; it is chosen once,
 * before anything is registered, and never changes afterwards. */
#ifndef ZAP_PLUGIN_UCX_PLUGIN_INT_H
#define ZAP_PLUGIN_UCX_PLUGIN_INT_H
#include <stdatomic.h>
#include <stdint.h>
#include "ucx_abi.h"
#include "zap/pool.h"
#include "zap/ucx_plugin.h"

typedef enum zap_ucx_abi {
    ZAP_UCX_ABI_NONE = 0,
    ZAP_UCX_ABI_113 = 113,
    ZAP_UCX_ABI_116 = 116
} zap_ucx_abi_t;

/* UCX settings of the memory domain (UCX_ZAP_*), filled by UCX's parser from
 * zap_ucx_md_config_table. The first member stands in for uct_md_config_t
 * (one dummy byte in both releases). */
typedef struct zap_ucx_md_config {
    char uct_base[8];
    size_t chunk_size;  /* UCX_ZAP_CHUNK_SIZE; ZAP_UCX_MEMUNITS_AUTO: the pool's default */
    size_t budget;      /* UCX_ZAP_BUDGET; AUTO: ZAP_UMA_POOL_BYTES, INF: unlimited */
    unsigned backend;   /* UCX_ZAP_BACKEND: index into zap_ucx_backend_names */
} zap_ucx_md_config_t;

extern const char *zap_ucx_backend_names[];
extern ucs_config_field_t zap_ucx_md_config_table[];

/* Process-wide counters behind zap_ucx_plugin_info. */
typedef struct zap_ucx_counters {
    atomic_uint_fast64_t md_opens, allocs, alloc_bytes, frees, regs, query_hits, query_misses,
        iface_opens;
} zap_ucx_counters_t;
extern zap_ucx_counters_t zap_ucx_counters;

/* The active ABI and our component object for it (a zap_a13_component_t or
 * zap_a16_component_t). Set before registration. */
extern zap_ucx_abi_t zap_ucx_active_abi;
void *zap_ucx_component(void);

/* UCX helpers resolved with dlsym at registration (all present in both
 * releases; registration declines if one is missing). */
typedef struct zap_ucx_syms {
    void *(*ucs_malloc)(size_t size, const char *name);
    ucs_status_t (*estimate_perf)(uct_iface_h iface, void *perf_attr);
    ucs_config_field_t *iface_config_table;
} zap_ucx_syms_t;
extern zap_ucx_syms_t zap_ucx_syms;

/* Memory domain (ucx_md.c). */
ucs_status_t zap_ucx_md_open(void *component, const char *md_name, const void *config, void **md_p);
ucs_status_t zap_ucx_query_md_resources(void *component, uct_md_resource_desc_t **res_p,
                                        unsigned *num_p);
int zap_ucx_md_owns(const void *ptr, size_t len);
/* Backing name of the pool last created (constant string), NULL before. */
extern const char *_Atomic zap_ucx_pool_backend;

/* Transport (ucx_iface.c). */
ucs_status_t zap_ucx_tl_query_devices(void *md, zap_ucx_tl_device_t **devices_p, unsigned *num_p);
ucs_status_t zap_ucx_tl_iface_open(void *md, void *worker, const uct_iface_params_t *params,
                                   const void *config, uct_iface_h *iface_p);
#endif
