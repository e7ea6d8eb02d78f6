/* Our own declarations of the UCX internals a UCT component is built from, for
 * exactly two UCX releases: 1.13.x (Debian 12) and 1.16.x (Ubuntu 24.04).
 *
 * UCX installs only its public headers (uct/api/{uct,tl,uct_def,version}.h and
 * ucs/). The structs a component needs (the component itself, the memory
 * domain ops table, the transport descriptor, the v2 parameter structs) live in
 * headers UCX never installs and change between minor releases, so they are
 * declared here under zap_a13_ / zap_a16_ names with every size and offset
 * pinned by _Static_assert. The numbers come from the v1.13.1 and v1.16.0
 * sources (see /work/shared/notes/ucx-plugin.md, sections 1 and 8) and are
 * confirmed at run time by the layout self-check in ucx_plugin.c against the
 * uct_tcp_component object the running libuct exports.
 *
 * From the installed (1.13) public headers we take only what both releases
 * share byte for byte: uct_iface_ops_t / uct_iface_t, uct_iface_attr_t,
 * uct_iface_params_t, uct_ep_t, ucs_config_field_t with its parsers, the
 * status codes, ucs_list_link_t and the flag and device-type enums. Memory
 * types differ past ROCM_MANAGED (1.16 inserts RDMA = 5), so only HOST (0) and
 * CUDA_MANAGED (2) are used. Nothing here is part of zap's public API. */
#ifndef ZAP_PLUGIN_UCX_ABI_H
#define ZAP_PLUGIN_UCX_ABI_H
#include <stddef.h>
#include <stdint.h>
#include <ucs/config/parser.h>
#include <ucs/datastruct/list.h>
#include <ucs/type/status.h>
#include <uct/api/uct.h>

/* ---- shared by both releases --------------------------------------------- */

#define ZAP_UCX_COMPONENT_NAME_MAX 16 /* UCT_COMPONENT_NAME_MAX */
#define ZAP_UCX_TL_NAME_MAX 10        /* UCT_TL_NAME_MAX: at most 9 characters */
#define ZAP_UCX_DEVICE_NAME_MAX 32    /* UCT_DEVICE_NAME_MAX */

/* UCS_MEMUNITS_INF / _AUTO (ucs/sys/string.h, which needs GNU asm). */
#define ZAP_UCX_MEMUNITS_INF ((size_t)-1)
#define ZAP_UCX_MEMUNITS_AUTO ((size_t)-2)

#define ZAP_UCX_MEMTYPE_HOST 0
#define ZAP_UCX_MEMTYPE_CUDA_MANAGED 2

/* UCT_MD_MEM_ATTR_FIELD_* (public, same bits in both; 1.16 adds b4, b5). */
#define ZAP_UCX_MEM_ATTR_MEM_TYPE (1ull << 0)
#define ZAP_UCX_MEM_ATTR_SYS_DEV (1ull << 1)
#define ZAP_UCX_MEM_ATTR_BASE_ADDRESS (1ull << 2)
#define ZAP_UCX_MEM_ATTR_ALLOC_LENGTH (1ull << 3)
#define ZAP_UCX_MEM_ATTR_DMABUF_FD (1ull << 4)
#define ZAP_UCX_MEM_ATTR_DMABUF_OFFSET (1ull << 5)
#define ZAP_UCX_SYS_DEVICE_UNKNOWN UINT8_MAX
#define ZAP_UCX_DMABUF_FD_INVALID (-1)

/* uct_md_mem_dereg_params_t (src/uct/api/v2/uct_v2.h), identical in both. */
#define ZAP_UCX_DEREG_FIELD_MEMH (1ull << 0)
typedef struct zap_ucx_dereg_params {
    uint64_t field_mask;
    unsigned flags;
    void *memh;
    void *comp;
} zap_ucx_dereg_params_t;
_Static_assert(sizeof(zap_ucx_dereg_params_t) == 32, "dereg params");
_Static_assert(offsetof(zap_ucx_dereg_params_t, memh) == 16, "dereg params memh");

/* uct_md_mkey_pack_params_t, identical in both. */
typedef struct zap_ucx_mkey_pack_params {
    uint64_t field_mask;
    unsigned flags;
} zap_ucx_mkey_pack_params_t;
_Static_assert(sizeof(zap_ucx_mkey_pack_params_t) == 16, "mkey pack params");

/* uct_tl_device_resource_t (src/uct/base/uct_iface.h), identical in both. */
typedef struct zap_ucx_tl_device {
    char name[ZAP_UCX_DEVICE_NAME_MAX];
    uct_device_type_t type;
    uint8_t sys_device;
} zap_ucx_tl_device_t;
_Static_assert(sizeof(zap_ucx_tl_device_t) == 40, "tl device resource");
_Static_assert(offsetof(zap_ucx_tl_device_t, type) == 32, "tl device type");
_Static_assert(offsetof(zap_ucx_tl_device_t, sys_device) == 36, "tl device sys_device");

/* struct uct_md: every MD object starts with these two pointers. */
typedef struct zap_ucx_md_base {
    const void *ops;
    void *component;
} zap_ucx_md_base_t;

/* The parts of the public API both releases share and that our structs embed. */
_Static_assert(sizeof(uct_iface_ops_t) == 400, "uct_iface_ops_t: 50 pointers in 1.13 and 1.16");
_Static_assert(sizeof(uct_iface_attr_t) == 536, "uct_iface_attr_t");
_Static_assert(sizeof(uct_iface_params_t) == 304, "uct_iface_params_t");
_Static_assert(sizeof(ucs_config_field_t) == 80, "ucs_config_field_t");
_Static_assert(sizeof(ucs_list_link_t) == 16, "ucs_list_link_t");
_Static_assert(sizeof(uct_md_resource_desc_t) == 16, "uct_md_resource_desc_t");

/* Function types shared by both releases. UCX's own opaque handles are void
 * pointers here: the plugin never looks inside them. */
typedef ucs_status_t (*zap_ucx_query_md_resources_fn)(void *component, uct_md_resource_desc_t **res_p,
                                                      unsigned *num_p);
typedef ucs_status_t (*zap_ucx_md_open_fn)(void *component, const char *md_name, const void *config,
                                           void **md_p);
typedef ucs_status_t (*zap_ucx_cm_open_fn)(void *component, void *worker, const void *config,
                                           void **cm_p);
typedef ucs_status_t (*zap_ucx_rkey_unpack_fn)(void *component, const void *buf, uct_rkey_t *rkey_p,
                                               void **handle_p);
typedef ucs_status_t (*zap_ucx_rkey_ptr_fn)(void *component, uct_rkey_t rkey, void *handle,
                                            uint64_t raddr, void **laddr_p);
typedef ucs_status_t (*zap_ucx_rkey_release_fn)(void *component, uct_rkey_t rkey, void *handle);
typedef ucs_status_t (*zap_ucx_rkey_compare_fn)(void *component, uct_rkey_t rkey1, uct_rkey_t rkey2,
                                                const void *params, int *result);
typedef void (*zap_ucx_md_vfs_init_fn)(void *md);

typedef ucs_status_t (*zap_ucx_tl_query_devices_fn)(void *md, zap_ucx_tl_device_t **devices_p,
                                                    unsigned *num_p);
typedef ucs_status_t (*zap_ucx_tl_iface_open_fn)(void *md, void *worker,
                                                 const uct_iface_params_t *params,
                                                 const void *config, uct_iface_h *iface_p);

typedef void (*zap_ucx_md_close_fn)(void *md);
typedef ucs_status_t (*zap_ucx_mem_alloc_fn)(void *md, size_t *len_p, void **addr_p,
                                             ucs_memory_type_t mem_type, unsigned flags,
                                             const char *name, void **memh_p);
typedef ucs_status_t (*zap_ucx_mem_free_fn)(void *md, void *memh);
typedef ucs_status_t (*zap_ucx_mem_advise_fn)(void *md, void *memh, void *addr, size_t len,
                                              unsigned advice);
typedef ucs_status_t (*zap_ucx_mem_dereg_fn)(void *md, const zap_ucx_dereg_params_t *params);
typedef ucs_status_t (*zap_ucx_detect_memory_type_fn)(void *md, const void *addr, size_t len,
                                                      ucs_memory_type_t *mem_type_p);

/* ---- UCX 1.13.x ------------------------------------------------------------ */

/* ucs_config_global_list_entry_t in 1.13 (48 B; 1.15 appended a flags byte). */
typedef struct zap_a13_config_entry {
    const char *name;
    const char *prefix;
    ucs_config_field_t *table;
    size_t size;
    ucs_list_link_t list;
} zap_a13_config_entry_t;
_Static_assert(sizeof(zap_a13_config_entry_t) == 48, "1.13 config entry");
_Static_assert(sizeof(zap_a13_config_entry_t) == sizeof(ucs_config_global_list_entry_t),
               "the installed headers must be 1.13's");

typedef struct zap_a13_component {
    char name[ZAP_UCX_COMPONENT_NAME_MAX];
    zap_ucx_query_md_resources_fn query_md_resources;
    zap_ucx_md_open_fn md_open;
    zap_ucx_cm_open_fn cm_open;
    zap_ucx_rkey_unpack_fn rkey_unpack;
    zap_ucx_rkey_ptr_fn rkey_ptr;
    zap_ucx_rkey_release_fn rkey_release;
    zap_a13_config_entry_t md_config;
    zap_a13_config_entry_t cm_config;
    ucs_list_link_t tl_list;
    ucs_list_link_t list;
    uint64_t flags;
    zap_ucx_md_vfs_init_fn md_vfs_init;
} zap_a13_component_t;
_Static_assert(offsetof(zap_a13_component_t, query_md_resources) == 16, "1.13 component");
_Static_assert(offsetof(zap_a13_component_t, rkey_release) == 56, "1.13 component");
_Static_assert(offsetof(zap_a13_component_t, md_config) == 64, "1.13 component");
_Static_assert(offsetof(zap_a13_component_t, cm_config) == 112, "1.13 component");
_Static_assert(offsetof(zap_a13_component_t, tl_list) == 160, "1.13 component");
_Static_assert(offsetof(zap_a13_component_t, list) == 176, "1.13 component");
_Static_assert(offsetof(zap_a13_component_t, flags) == 192, "1.13 component");
_Static_assert(offsetof(zap_a13_component_t, md_vfs_init) == 200, "1.13 component");
_Static_assert(sizeof(zap_a13_component_t) == 208, "1.13 component");

typedef struct zap_a13_tl {
    char name[ZAP_UCX_TL_NAME_MAX];
    zap_ucx_tl_query_devices_fn query_devices;
    zap_ucx_tl_iface_open_fn iface_open;
    zap_a13_config_entry_t config;
    ucs_list_link_t list;
} zap_a13_tl_t;
_Static_assert(offsetof(zap_a13_tl_t, query_devices) == 16, "1.13 tl");
_Static_assert(offsetof(zap_a13_tl_t, config) == 32, "1.13 tl");
_Static_assert(offsetof(zap_a13_tl_t, list) == 80, "1.13 tl");
_Static_assert(sizeof(zap_a13_tl_t) == 96, "1.13 tl");

/* uct_md_attr_t (v1, public in 1.13). */
typedef struct zap_a13_md_attr {
    struct {
        uint64_t max_alloc;
        size_t max_reg;
        uint64_t flags;
        uint64_t reg_mem_types;
        uint64_t detect_mem_types;
        uint64_t alloc_mem_types;
        uint64_t access_mem_types;
    } cap;
    struct {
        double c, m;
    } reg_cost;
    char component_name[ZAP_UCX_COMPONENT_NAME_MAX];
    size_t rkey_packed_size;
    unsigned char local_cpus[128];
} zap_a13_md_attr_t;
_Static_assert(offsetof(zap_a13_md_attr_t, reg_cost) == 56, "1.13 md attr");
_Static_assert(offsetof(zap_a13_md_attr_t, component_name) == 72, "1.13 md attr");
_Static_assert(offsetof(zap_a13_md_attr_t, rkey_packed_size) == 88, "1.13 md attr");
_Static_assert(offsetof(zap_a13_md_attr_t, local_cpus) == 96, "1.13 md attr");
_Static_assert(sizeof(zap_a13_md_attr_t) == 224, "1.13 md attr");
_Static_assert(sizeof(zap_a13_md_attr_t) == sizeof(uct_md_attr_t), "the installed headers must be 1.13's");

/* uct_md_mem_attr_t in 1.13 (32 B). */
typedef struct zap_a13_mem_attr {
    uint64_t field_mask;
    ucs_memory_type_t mem_type;
    uint8_t sys_dev;
    void *base_address;
    size_t alloc_length;
} zap_a13_mem_attr_t;
_Static_assert(offsetof(zap_a13_mem_attr_t, base_address) == 16, "1.13 mem attr");
_Static_assert(sizeof(zap_a13_mem_attr_t) == 32, "1.13 mem attr");

typedef struct zap_a13_md_ops {
    zap_ucx_md_close_fn close;
    ucs_status_t (*query)(void *md, zap_a13_md_attr_t *attr);
    zap_ucx_mem_alloc_fn mem_alloc;
    zap_ucx_mem_free_fn mem_free;
    zap_ucx_mem_advise_fn mem_advise;
    ucs_status_t (*mem_reg)(void *md, void *addr, size_t len, unsigned flags, void **memh_p);
    zap_ucx_mem_dereg_fn mem_dereg;
    ucs_status_t (*mem_query)(void *md, const void *addr, size_t len, zap_a13_mem_attr_t *attr);
    ucs_status_t (*mkey_pack)(void *md, void *memh, const zap_ucx_mkey_pack_params_t *params,
                              void *rkey_buf);
    int (*is_sockaddr_accessible)(void *md, const void *sockaddr, int mode);
    zap_ucx_detect_memory_type_fn detect_memory_type;
} zap_a13_md_ops_t;
_Static_assert(sizeof(zap_a13_md_ops_t) == 88, "1.13 md ops");
_Static_assert(offsetof(zap_a13_md_ops_t, is_sockaddr_accessible) == 72, "1.13 md ops");

/* uct_iface_internal_ops_t in 1.13: 4 pointers. */
typedef struct zap_a13_iface_internal_ops {
    ucs_status_t (*iface_estimate_perf)(uct_iface_h iface, void *perf_attr);
    void (*iface_vfs_refresh)(uct_iface_h iface);
    ucs_status_t (*ep_query)(uct_ep_h ep, void *ep_attr);
    ucs_status_t (*ep_invalidate)(uct_ep_h ep, unsigned flags);
} zap_a13_iface_internal_ops_t;
_Static_assert(sizeof(zap_a13_iface_internal_ops_t) == 32, "1.13 iface internal ops");

/* ---- UCX 1.16.x ------------------------------------------------------------ */

typedef struct zap_a16_config_entry {
    const char *name;
    const char *prefix;
    ucs_config_field_t *table;
    size_t size;
    ucs_list_link_t list;
    uint8_t flags; /* libucs sets bit 0 once the table is parsed; starts 0 */
} zap_a16_config_entry_t;
_Static_assert(offsetof(zap_a16_config_entry_t, flags) == 48, "1.16 config entry");
_Static_assert(sizeof(zap_a16_config_entry_t) == 56, "1.16 config entry");

typedef struct zap_a16_component {
    char name[ZAP_UCX_COMPONENT_NAME_MAX];
    zap_ucx_query_md_resources_fn query_md_resources;
    zap_ucx_md_open_fn md_open;
    zap_ucx_cm_open_fn cm_open;
    zap_ucx_rkey_unpack_fn rkey_unpack;
    zap_ucx_rkey_ptr_fn rkey_ptr;
    zap_ucx_rkey_release_fn rkey_release;
    zap_ucx_rkey_compare_fn rkey_compare;
    zap_a16_config_entry_t md_config;
    zap_a16_config_entry_t cm_config;
    ucs_list_link_t tl_list;
    ucs_list_link_t list;
    uint64_t flags;
    zap_ucx_md_vfs_init_fn md_vfs_init;
} zap_a16_component_t;
_Static_assert(offsetof(zap_a16_component_t, rkey_compare) == 64, "1.16 component");
_Static_assert(offsetof(zap_a16_component_t, md_config) == 72, "1.16 component");
_Static_assert(offsetof(zap_a16_component_t, cm_config) == 128, "1.16 component");
_Static_assert(offsetof(zap_a16_component_t, tl_list) == 184, "1.16 component");
_Static_assert(offsetof(zap_a16_component_t, list) == 200, "1.16 component");
_Static_assert(offsetof(zap_a16_component_t, flags) == 216, "1.16 component");
_Static_assert(offsetof(zap_a16_component_t, md_vfs_init) == 224, "1.16 component");
_Static_assert(sizeof(zap_a16_component_t) == 232, "1.16 component");

typedef struct zap_a16_tl {
    char name[ZAP_UCX_TL_NAME_MAX];
    zap_ucx_tl_query_devices_fn query_devices;
    zap_ucx_tl_iface_open_fn iface_open;
    zap_a16_config_entry_t config;
    ucs_list_link_t list;
} zap_a16_tl_t;
_Static_assert(offsetof(zap_a16_tl_t, config) == 32, "1.16 tl");
_Static_assert(offsetof(zap_a16_tl_t, list) == 88, "1.16 tl");
_Static_assert(sizeof(zap_a16_tl_t) == 104, "1.16 tl");

/* uct_md_attr_v2_t (src/uct/api/v2/uct_v2.h, 1.16). */
typedef struct zap_a16_md_attr {
    uint64_t field_mask;
    uint64_t max_alloc;
    size_t max_reg;
    uint64_t flags;
    uint64_t reg_mem_types;
    uint64_t reg_nonblock_mem_types;
    uint64_t cache_mem_types;
    uint64_t detect_mem_types;
    uint64_t alloc_mem_types;
    uint64_t access_mem_types;
    uint64_t dmabuf_mem_types;
    struct {
        double c, m;
    } reg_cost;
    char component_name[ZAP_UCX_COMPONENT_NAME_MAX];
    size_t rkey_packed_size;
    unsigned char local_cpus[128];
    size_t exported_mkey_packed_size;
    char global_id[256];
    size_t reg_alignment;
} zap_a16_md_attr_t;
_Static_assert(offsetof(zap_a16_md_attr_t, reg_cost) == 88, "1.16 md attr");
_Static_assert(offsetof(zap_a16_md_attr_t, component_name) == 104, "1.16 md attr");
_Static_assert(offsetof(zap_a16_md_attr_t, local_cpus) == 128, "1.16 md attr");
_Static_assert(offsetof(zap_a16_md_attr_t, exported_mkey_packed_size) == 256, "1.16 md attr");
_Static_assert(offsetof(zap_a16_md_attr_t, global_id) == 264, "1.16 md attr");
_Static_assert(offsetof(zap_a16_md_attr_t, reg_alignment) == 520, "1.16 md attr");
_Static_assert(sizeof(zap_a16_md_attr_t) == 528, "1.16 md attr");

typedef struct zap_a16_mem_attr {
    uint64_t field_mask;
    ucs_memory_type_t mem_type;
    uint8_t sys_dev;
    void *base_address;
    size_t alloc_length;
    int dmabuf_fd;
    size_t dmabuf_offset;
} zap_a16_mem_attr_t;
_Static_assert(offsetof(zap_a16_mem_attr_t, dmabuf_fd) == 32, "1.16 mem attr");
_Static_assert(sizeof(zap_a16_mem_attr_t) == 48, "1.16 mem attr");

/* uct_md_mem_reg_params_t (1.14+). */
typedef struct zap_a16_reg_params {
    uint64_t field_mask;
    uint64_t flags;
    int dmabuf_fd;
    size_t dmabuf_offset;
} zap_a16_reg_params_t;
_Static_assert(sizeof(zap_a16_reg_params_t) == 32, "1.16 reg params");

typedef struct zap_a16_md_ops {
    zap_ucx_md_close_fn close;
    ucs_status_t (*query)(void *md, zap_a16_md_attr_t *attr);
    zap_ucx_mem_alloc_fn mem_alloc;
    zap_ucx_mem_free_fn mem_free;
    zap_ucx_mem_advise_fn mem_advise;
    ucs_status_t (*mem_reg)(void *md, void *addr, size_t len, const zap_a16_reg_params_t *params,
                            void **memh_p);
    zap_ucx_mem_dereg_fn mem_dereg;
    ucs_status_t (*mem_query)(void *md, const void *addr, size_t len, zap_a16_mem_attr_t *attr);
    ucs_status_t (*mkey_pack)(void *md, void *memh, void *addr, size_t len,
                              const zap_ucx_mkey_pack_params_t *params, void *rkey_buf);
    ucs_status_t (*mem_attach)(void *md, const void *mkey_buf, const void *params, void **memh_p);
    zap_ucx_detect_memory_type_fn detect_memory_type;
} zap_a16_md_ops_t;
_Static_assert(sizeof(zap_a16_md_ops_t) == 88, "1.16 md ops");
_Static_assert(offsetof(zap_a16_md_ops_t, mem_attach) == 72, "1.16 md ops");

/* uct_iface_is_reachable_params_t (1.15+). */
#define ZAP_A16_REACH_FIELD_DEVICE_ADDR (1ull << 0)
#define ZAP_A16_REACH_FIELD_IFACE_ADDR (1ull << 1)
#define ZAP_A16_REACH_FIELD_INFO_STRING (1ull << 2)
#define ZAP_A16_REACH_FIELD_INFO_STRING_LENGTH (1ull << 3)
typedef struct zap_a16_reach_params {
    uint64_t field_mask;
    const void *device_addr;
    const void *iface_addr;
    char *info_string;
    size_t info_string_length;
    int scope;
} zap_a16_reach_params_t;
_Static_assert(offsetof(zap_a16_reach_params_t, scope) == 40, "1.16 reachable params");
_Static_assert(sizeof(zap_a16_reach_params_t) == 48, "1.16 reachable params");

/* uct_iface_internal_ops_t in 1.16: 7 pointers. */
typedef struct zap_a16_iface_internal_ops {
    ucs_status_t (*iface_estimate_perf)(uct_iface_h iface, void *perf_attr);
    void (*iface_vfs_refresh)(uct_iface_h iface);
    ucs_status_t (*ep_query)(uct_ep_h ep, void *ep_attr);
    ucs_status_t (*ep_invalidate)(uct_ep_h ep, unsigned flags);
    ucs_status_t (*ep_connect_to_ep_v2)(uct_ep_h ep, const void *dev_addr, const void *ep_addr,
                                        const void *params);
    int (*iface_is_reachable_v2)(const uct_iface_h iface, const zap_a16_reach_params_t *params);
    int (*ep_is_connected)(const uct_ep_h ep, const void *params);
} zap_a16_iface_internal_ops_t;
_Static_assert(sizeof(zap_a16_iface_internal_ops_t) == 56, "1.16 iface internal ops");

#endif
