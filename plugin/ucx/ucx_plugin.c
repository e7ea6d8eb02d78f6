/* Registration of the "zap" UCT component with the UCX found at run time.
 *
 * Order of events, once per process (pthread_once; the ELF constructor runs it
 * when the library is loaded, zap_ucx_plugin_register runs it on demand):
 *   1. version gate: ucp_get_version() must say 1.13.x or 1.16.x (libuct and
 *      libucs have no version call of their own; libucp is linked, so it is
 *      loaded even under Open MPI, which dlopens UCX later);
 *   2. layout self-check: the running libuct's exported uct_tcp_component and
 *      uct_tcp_tl are read through our declaration of that release's layout
 *      (ucx_abi.h). Identities are tested before any pointer read from them is
 *      followed, and every such pointer must land in a loaded object, so a
 *      wrong layout is refused rather than crashed on;
 *   3. the helpers we need from libuct/libucs are looked up with dlsym;
 *   4. the component and its transport are filled for that ABI and handed to
 *      uct_component_register / uct_tl_register.
 * Any failure declines: one warning, nothing registered, UCX unchanged. The
 * library is linked with -z nodelete because UCX can never forget a component
 * (uct_component_unregister leaves it in uct_components_list).
 *
 * ZAP_UCX_PLUGIN_FORCE_MISMATCH=layout (or 1) runs step 2 with the layout of the
 * other supported release, which must fail; =version pretends step 1 found an
 * unsupported release. Both exist so tests can prove the decline path. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <link.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <ucp/api/ucp.h>
#include "base/log.h"
#include "ucx_plugin_int.h"

/* ---- settings (UCX_ZAP_*) ---------------------------------------------------- */

const char *zap_ucx_backend_names[] = {"auto", "managed", "pinned", "host", NULL};

ucs_config_field_t zap_ucx_md_config_table[] = {
    {"CHUNK_SIZE", "auto",
     "Size of the chunks the zap pool carves buffers from: a power of two from 2m to 1g.\n"
     "auto takes ZAP_POOL_CHUNK_BYTES.",
     offsetof(zap_ucx_md_config_t, chunk_size), UCS_CONFIG_TYPE_MEMUNITS},
    {"BUDGET", "auto",
     "Most bytes the zap pool may hold (chunks plus large buffers). auto takes\n"
     "ZAP_UMA_POOL_BYTES; inf means no limit.",
     offsetof(zap_ucx_md_config_t, budget), UCS_CONFIG_TYPE_MEMUNITS},
    {"BACKEND", "auto",
     "Memory behind the zap pool: managed (CUDA managed), pinned, host, or auto\n"
     "(managed where a CUDA device exists, else host). UCX is told it is host memory.",
     offsetof(zap_ucx_md_config_t, backend), UCS_CONFIG_TYPE_ENUM(zap_ucx_backend_names)},
    {NULL, NULL, NULL, 0, {NULL, NULL, NULL, NULL, NULL, NULL}}};

/* The transport's settings are UCX's common interface settings (UCX_ZAP_ALLOC,
 * ...); the sub-table pointer (uct_iface_config_table) is set at registration. */
static ucs_config_field_t zap_ucx_tl_config_table[] = {
    {"", "", NULL, 0, UCS_CONFIG_TYPE_TABLE(NULL)},
    {NULL, NULL, NULL, 0, {NULL, NULL, NULL, NULL, NULL, NULL}}};
/* uct_iface_config_t is 32 bytes in 1.13 and 1.16; UCX allocates what we say. */
#define ZAP_UCX_TL_CONFIG_SIZE 64

/* ---- state ------------------------------------------------------------------- */

zap_ucx_counters_t zap_ucx_counters;
zap_ucx_abi_t zap_ucx_active_abi = ZAP_UCX_ABI_NONE;
zap_ucx_syms_t zap_ucx_syms;

static zap_a13_component_t zap_a13_component;
static zap_a13_tl_t zap_a13_tl;
static zap_a16_component_t zap_a16_component;
static zap_a16_tl_t zap_a16_tl;

static pthread_once_t zap_ucx_once = PTHREAD_ONCE_INIT;
static zap_ucx_plugin_state_t zap_ucx_state = ZAP_UCX_PLUGIN_NOT_TRIED;
static unsigned zap_ucx_version[3];
static char zap_ucx_reason[256] = "not tried";

void *zap_ucx_component(void)
{
    return (zap_ucx_active_abi == ZAP_UCX_ABI_116) ? (void *)&zap_a16_component
                                                    : (void *)&zap_a13_component;
}

/* ---- layout self-check --------------------------------------------------------- */

typedef struct zap_ucx_layout {
    zap_ucx_abi_t abi;
    const char *release;
    size_t component_size, tl_size;
    size_t rkey_compare;                     /* 0: no such member */
    size_t md_prefix, md_list, cm_prefix;    /* inside the component */
    size_t tl_list, list, flags, md_vfs_init;
    size_t tl_prefix, tl_link;               /* inside uct_tl_t */
} zap_ucx_layout_t;

static const zap_ucx_layout_t zap_ucx_layout_113 = {
    ZAP_UCX_ABI_113, "1.13", sizeof(zap_a13_component_t), sizeof(zap_a13_tl_t), 0,
    offsetof(zap_a13_component_t, md_config.prefix), offsetof(zap_a13_component_t, md_config.list),
    offsetof(zap_a13_component_t, cm_config.prefix), offsetof(zap_a13_component_t, tl_list),
    offsetof(zap_a13_component_t, list), offsetof(zap_a13_component_t, flags),
    offsetof(zap_a13_component_t, md_vfs_init), offsetof(zap_a13_tl_t, config.prefix),
    offsetof(zap_a13_tl_t, list)};

static const zap_ucx_layout_t zap_ucx_layout_116 = {
    ZAP_UCX_ABI_116, "1.16", sizeof(zap_a16_component_t), sizeof(zap_a16_tl_t),
    offsetof(zap_a16_component_t, rkey_compare),
    offsetof(zap_a16_component_t, md_config.prefix), offsetof(zap_a16_component_t, md_config.list),
    offsetof(zap_a16_component_t, cm_config.prefix), offsetof(zap_a16_component_t, tl_list),
    offsetof(zap_a16_component_t, list), offsetof(zap_a16_component_t, flags),
    offsetof(zap_a16_component_t, md_vfs_init), offsetof(zap_a16_tl_t, config.prefix),
    offsetof(zap_a16_tl_t, list)};

static void *zap_ucx_sym(const char *name)
{
    return dlsym(RTLD_DEFAULT, name);
}

static const void *zap_ucx_ptr_at(const void *obj, size_t off)
{
    const void *p;
    memcpy(&p, (const char *)obj + off, sizeof(p));
    return p;
}

/* 1 when p points into an object the dynamic linker has loaded (code or data
 * of an executable or library), so reading a few bytes there cannot fault. */
static int zap_ucx_in_object(const void *p)
{
    Dl_info info;
    return p != NULL && dladdr(p, &info) != 0;
}

static size_t zap_ucx_symbol_size(const void *addr)
{
    Dl_info info;
    const ElfW(Sym) *sym = NULL;
    if (dladdr1(addr, &info, (void **)&sym, RTLD_DL_SYMENT) == 0 || sym == NULL) {
        return 0;
    }
    return (size_t)sym->st_size;
}

static int zap_ucx_string_is(const void *p, const char *want)
{
    return zap_ucx_in_object(p) && strncmp((const char *)p, want, strlen(want) + 1) == 0;
}

/* A list link whose neighbours point back at it. */
static int zap_ucx_link_ok(const void *link)
{
    const ucs_list_link_t *l = link;
    return zap_ucx_in_object(l->next) && zap_ucx_in_object(l->prev) && l->next->prev == l &&
           l->prev->next == l;
}

/* Reads uct_tcp_component and uct_tcp_tl through layout L. On failure writes
 * the first difference to why and returns 0. */
static int zap_ucx_layout_check(const zap_ucx_layout_t *L, char *why, size_t why_len)
{
    const char *tcp = zap_ucx_sym("uct_tcp_component");
    const char *tcp_tl = zap_ucx_sym("uct_tcp_tl");
    const void *single = zap_ucx_sym("uct_md_query_single_md_resource");
    const void *empty = zap_ucx_sym("ucs_empty_function");
    const void *rkey_cmp = zap_ucx_sym("uct_base_rkey_compare");
    const void *tl_first;
    uint64_t flags;
    size_t size;

    if (tcp == NULL || tcp_tl == NULL || single == NULL || empty == NULL) {
        snprintf(why, why_len, "libuct does not export uct_tcp_component, uct_tcp_tl, "
                               "uct_md_query_single_md_resource or ucs_empty_function");
        return 0;
    }
    /* Sizes first: every later read inside the two objects stays in bounds. */
    size = zap_ucx_symbol_size(tcp);
    if (size != L->component_size) {
        snprintf(why, why_len, "uct_tcp_component is %zu bytes, the %s layout has %zu", size,
                 L->release, L->component_size);
        return 0;
    }
    size = zap_ucx_symbol_size(tcp_tl);
    if (size != L->tl_size) {
        snprintf(why, why_len, "uct_tcp_tl is %zu bytes, the %s layout has %zu", size, L->release,
                 L->tl_size);
        return 0;
    }
    /* Identities: compare pointers without following them. */
    if (strncmp(tcp, "tcp", ZAP_UCX_COMPONENT_NAME_MAX) != 0) {
        snprintf(why, why_len, "uct_tcp_component name is not \"tcp\" in the %s layout", L->release);
        return 0;
    }
    if (zap_ucx_ptr_at(tcp, offsetof(zap_a13_component_t, query_md_resources)) != single) {
        snprintf(why, why_len, "uct_tcp_component.query_md_resources is not libuct's helper");
        return 0;
    }
    if (L->rkey_compare != 0 &&
        (rkey_cmp == NULL || zap_ucx_ptr_at(tcp, L->rkey_compare) != rkey_cmp)) {
        snprintf(why, why_len, "uct_tcp_component.rkey_compare is not uct_base_rkey_compare "
                               "(the %s layout has it)", L->release);
        return 0;
    }
    if (L->rkey_compare == 0 && rkey_cmp != NULL) {
        snprintf(why, why_len, "libuct exports uct_base_rkey_compare, which the %s layout lacks",
                 L->release);
        return 0;
    }
    if (zap_ucx_ptr_at(tcp, L->md_vfs_init) != empty) {
        snprintf(why, why_len, "uct_tcp_component.md_vfs_init is not at +%zu (%s layout)",
                 L->md_vfs_init, L->release);
        return 0;
    }
    memcpy(&flags, tcp + L->flags, sizeof(flags));
    if (flags != 1) {
        snprintf(why, why_len, "uct_tcp_component.flags at +%zu is %llu, expected 1 (CM)", L->flags,
                 (unsigned long long)flags);
        return 0;
    }
    /* Pointers, each checked to land in a loaded object before it is read. */
    if (!zap_ucx_string_is(zap_ucx_ptr_at(tcp, L->md_prefix), "TCP_") ||
        !zap_ucx_string_is(zap_ucx_ptr_at(tcp, L->cm_prefix), "TCP_CM_")) {
        snprintf(why, why_len, "uct_tcp_component config prefixes are not TCP_/TCP_CM_ (%s layout)",
                 L->release);
        return 0;
    }
    if (!zap_ucx_link_ok(tcp + L->md_list) || !zap_ucx_link_ok(tcp + L->list) ||
        !zap_ucx_link_ok(tcp + L->tl_list)) {
        snprintf(why, why_len, "uct_tcp_component list links are inconsistent (%s layout)",
                 L->release);
        return 0;
    }
    tl_first = (const char *)zap_ucx_ptr_at(tcp, L->tl_list) - L->tl_link;
    if (tl_first != (const void *)tcp_tl || strncmp(tcp_tl, "tcp", ZAP_UCX_TL_NAME_MAX) != 0 ||
        !zap_ucx_string_is(zap_ucx_ptr_at(tcp_tl, L->tl_prefix), "TCP_")) {
        snprintf(why, why_len, "uct_tcp_component.tl_list does not lead to uct_tcp_tl (%s layout)",
                 L->release);
        return 0;
    }
    return 1;
}

/* Walks uct_components_list (layout already verified) for a component named
 * "zap": a second copy of the plugin must not register twice. */
static int zap_ucx_name_taken(const zap_ucx_layout_t *L)
{
    const ucs_list_link_t *head = zap_ucx_sym("uct_components_list");
    const ucs_list_link_t *l;
    if (head == NULL) {
        return 0;
    }
    for (l = head->next; l != head; l = l->next) {
        const char *comp = (const char *)l - L->list;
        if (strncmp(comp, ZAP_UCX_PLUGIN_COMPONENT, ZAP_UCX_COMPONENT_NAME_MAX) == 0) {
            return 1;
        }
    }
    return 0;
}

/* ---- component objects --------------------------------------------------------- */

static ucs_status_t zap_ucx_cm_open(void *component, void *worker, const void *config, void **cm_p)
{
    (void)component, (void)worker, (void)config, (void)cm_p;
    return UCS_ERR_UNSUPPORTED;
}

/* rkey_packed_size is 0, so UCP unpacks nothing real; a stub rkey is enough. */
static ucs_status_t zap_ucx_rkey_unpack(void *component, const void *buf, uct_rkey_t *rkey_p,
                                        void **handle_p)
{
    (void)component, (void)buf;
    *rkey_p = (uct_rkey_t)0;
    *handle_p = NULL;
    return UCS_OK;
}

static ucs_status_t zap_ucx_rkey_ptr(void *component, uct_rkey_t rkey, void *handle, uint64_t raddr,
                                     void **laddr_p)
{
    (void)component, (void)rkey, (void)handle, (void)raddr, (void)laddr_p;
    return UCS_ERR_UNSUPPORTED;
}

static ucs_status_t zap_ucx_rkey_release(void *component, uct_rkey_t rkey, void *handle)
{
    (void)component, (void)rkey, (void)handle;
    return UCS_OK;
}

/* Same contract as libuct's uct_base_rkey_compare (1.16). */
static ucs_status_t zap_ucx_rkey_compare(void *component, uct_rkey_t rkey1, uct_rkey_t rkey2,
                                         const void *params, int *result)
{
    uint64_t field_mask;
    (void)component;
    memcpy(&field_mask, params, sizeof(field_mask));
    if (field_mask != 0 || result == NULL) {
        return UCS_ERR_INVALID_PARAM;
    }
    *result = (rkey1 > rkey2) ? 1 : (rkey1 < rkey2) ? -1 : 0;
    return UCS_OK;
}

static void zap_ucx_md_vfs_init(void *md)
{
    (void)md;
}

static void zap_ucx_list_init(ucs_list_link_t *l)
{
    l->next = l;
    l->prev = l;
}

static void zap_ucx_fill_113(void)
{
    zap_a13_component_t *c = &zap_a13_component;
    zap_a13_tl_t *tl = &zap_a13_tl;
    memset(c, 0, sizeof(*c));
    strncpy(c->name, ZAP_UCX_PLUGIN_COMPONENT, sizeof(c->name) - 1);
    c->query_md_resources = zap_ucx_query_md_resources;
    c->md_open = zap_ucx_md_open;
    c->cm_open = zap_ucx_cm_open;
    c->rkey_unpack = zap_ucx_rkey_unpack;
    c->rkey_ptr = zap_ucx_rkey_ptr;
    c->rkey_release = zap_ucx_rkey_release;
    c->md_config = (zap_a13_config_entry_t){"zap memory domain", "ZAP_", zap_ucx_md_config_table,
                                            sizeof(zap_ucx_md_config_t), {NULL, NULL}};
    c->cm_config = (zap_a13_config_entry_t){"", "", NULL, 0, {NULL, NULL}};
    zap_ucx_list_init(&c->tl_list);
    zap_ucx_list_init(&c->list);
    c->flags = 0;
    c->md_vfs_init = zap_ucx_md_vfs_init;

    memset(tl, 0, sizeof(*tl));
    strncpy(tl->name, ZAP_UCX_PLUGIN_TL, sizeof(tl->name) - 1);
    tl->query_devices = zap_ucx_tl_query_devices;
    tl->iface_open = zap_ucx_tl_iface_open;
    tl->config = (zap_a13_config_entry_t){"zap transport", "ZAP_", zap_ucx_tl_config_table,
                                          ZAP_UCX_TL_CONFIG_SIZE, {NULL, NULL}};
    zap_ucx_list_init(&tl->list);
}

static void zap_ucx_fill_116(void)
{
    zap_a16_component_t *c = &zap_a16_component;
    zap_a16_tl_t *tl = &zap_a16_tl;
    memset(c, 0, sizeof(*c));
    strncpy(c->name, ZAP_UCX_PLUGIN_COMPONENT, sizeof(c->name) - 1);
    c->query_md_resources = zap_ucx_query_md_resources;
    c->md_open = zap_ucx_md_open;
    c->cm_open = zap_ucx_cm_open;
    c->rkey_unpack = zap_ucx_rkey_unpack;
    c->rkey_ptr = zap_ucx_rkey_ptr;
    c->rkey_release = zap_ucx_rkey_release;
    c->rkey_compare = zap_ucx_rkey_compare;
    c->md_config = (zap_a16_config_entry_t){"zap memory domain", "ZAP_", zap_ucx_md_config_table,
                                            sizeof(zap_ucx_md_config_t), {NULL, NULL}, 0};
    c->cm_config = (zap_a16_config_entry_t){"", "", NULL, 0, {NULL, NULL}, 0};
    zap_ucx_list_init(&c->tl_list);
    zap_ucx_list_init(&c->list);
    c->flags = 0;
    c->md_vfs_init = zap_ucx_md_vfs_init;

    memset(tl, 0, sizeof(*tl));
    strncpy(tl->name, ZAP_UCX_PLUGIN_TL, sizeof(tl->name) - 1);
    tl->query_devices = zap_ucx_tl_query_devices;
    tl->iface_open = zap_ucx_tl_iface_open;
    tl->config = (zap_a16_config_entry_t){"zap transport", "ZAP_", zap_ucx_tl_config_table,
                                          ZAP_UCX_TL_CONFIG_SIZE, {NULL, NULL}, 0};
    zap_ucx_list_init(&tl->list);
}

/* ---- the once-only registration ------------------------------------------------ */

static void zap_ucx_decline(const char *fmt, const char *detail)
{
    snprintf(zap_ucx_reason, sizeof(zap_ucx_reason), fmt, detail);
    zap_ucx_state = ZAP_UCX_PLUGIN_DECLINED;
    zap_warn("ucx plugin: declined, UCX %u.%u.%u runs without the zap memory domain: %s",
             zap_ucx_version[0], zap_ucx_version[1], zap_ucx_version[2], zap_ucx_reason);
}

static void zap_ucx_do_register(void)
{
    const char *force = getenv("ZAP_UCX_PLUGIN_FORCE_MISMATCH");
    int force_layout = 0, force_version = 0;
    const zap_ucx_layout_t *L;
    void (*component_register)(void *component);
    void (*tl_register)(void *component, void *tl);
    char why[200];

    if (force != NULL && force[0] != '\0' && strcmp(force, "0") != 0) {
        if (strcmp(force, "version") == 0) {
            force_version = 1;
        } else {
            force_layout = 1;
        }
    }

    ucp_get_version(&zap_ucx_version[0], &zap_ucx_version[1], &zap_ucx_version[2]);
    if (force_version) {
        zap_ucx_decline("%s", "version treated as unsupported (ZAP_UCX_PLUGIN_FORCE_MISMATCH=version)");
        return;
    }
    if (zap_ucx_version[0] == 1 && zap_ucx_version[1] == 13) {
        L = force_layout ? &zap_ucx_layout_116 : &zap_ucx_layout_113;
    } else if (zap_ucx_version[0] == 1 && zap_ucx_version[1] == 16) {
        L = force_layout ? &zap_ucx_layout_113 : &zap_ucx_layout_116;
    } else {
        zap_ucx_decline("%s", "only UCX 1.13.x and 1.16.x are supported");
        return;
    }
    if (!zap_ucx_layout_check(L, why, sizeof(why))) {
        zap_ucx_decline(force_layout ? "layout self-check failed: %s "
                                       "(forced by ZAP_UCX_PLUGIN_FORCE_MISMATCH)"
                                     : "layout self-check failed: %s",
                        why);
        return;
    }
    component_register = (void (*)(void *))zap_ucx_sym("uct_component_register");
    tl_register = (void (*)(void *, void *))zap_ucx_sym("uct_tl_register");
    zap_ucx_syms.ucs_malloc = (void *(*)(size_t, const char *))zap_ucx_sym("ucs_malloc");
    zap_ucx_syms.estimate_perf =
        (ucs_status_t(*)(uct_iface_h, void *))zap_ucx_sym("uct_base_iface_estimate_perf");
    zap_ucx_syms.iface_config_table = zap_ucx_sym("uct_iface_config_table");
    if (component_register == NULL || tl_register == NULL || zap_ucx_syms.ucs_malloc == NULL ||
        zap_ucx_syms.estimate_perf == NULL || zap_ucx_syms.iface_config_table == NULL) {
        zap_ucx_decline("%s", "a helper is not exported (uct_component_register, uct_tl_register, "
                              "ucs_malloc, uct_base_iface_estimate_perf or uct_iface_config_table)");
        return;
    }
    if (zap_ucx_name_taken(L)) {
        zap_ucx_decline("%s", "a component named \"zap\" is already registered (another copy of "
                              "the plugin?)");
        return;
    }
    zap_ucx_tl_config_table[0].parser.arg = zap_ucx_syms.iface_config_table;

    zap_ucx_active_abi = L->abi;
    if (L->abi == ZAP_UCX_ABI_116) {
        zap_ucx_fill_116();
        component_register(&zap_a16_component);
        tl_register(&zap_a16_component, &zap_a16_tl);
    } else {
        zap_ucx_fill_113();
        component_register(&zap_a13_component);
        tl_register(&zap_a13_component, &zap_a13_tl);
    }
    zap_ucx_state = ZAP_UCX_PLUGIN_REGISTERED;
    snprintf(zap_ucx_reason, sizeof(zap_ucx_reason), "registered");
    zap_info("ucx plugin: component \"%s\" with transport \"%s\" registered with UCX %u.%u.%u "
             "(%s layout)",
             ZAP_UCX_PLUGIN_COMPONENT, ZAP_UCX_PLUGIN_TL, zap_ucx_version[0], zap_ucx_version[1],
             zap_ucx_version[2], L->release);
}

zap_status_t zap_ucx_plugin_register(void)
{
    pthread_once(&zap_ucx_once, zap_ucx_do_register);
    return (zap_ucx_state == ZAP_UCX_PLUGIN_REGISTERED) ? ZAP_OK : ZAP_ERR_VERSION;
}

zap_status_t zap_ucx_plugin_info(zap_ucx_plugin_info_t *info_p)
{
    if (info_p == NULL) {
        return ZAP_ERR_INVALID_PARAM;
    }
    memset(info_p, 0, sizeof(*info_p));
    info_p->state = zap_ucx_state;
    info_p->ucx_major = zap_ucx_version[0];
    info_p->ucx_minor = zap_ucx_version[1];
    info_p->ucx_release = zap_ucx_version[2];
    info_p->abi = (int)zap_ucx_active_abi;
    info_p->reason = zap_ucx_reason;
    info_p->md_opens = atomic_load(&zap_ucx_counters.md_opens);
    info_p->allocs = atomic_load(&zap_ucx_counters.allocs);
    info_p->alloc_bytes = atomic_load(&zap_ucx_counters.alloc_bytes);
    info_p->frees = atomic_load(&zap_ucx_counters.frees);
    info_p->regs = atomic_load(&zap_ucx_counters.regs);
    info_p->query_hits = atomic_load(&zap_ucx_counters.query_hits);
    info_p->query_misses = atomic_load(&zap_ucx_counters.query_misses);
    info_p->iface_opens = atomic_load(&zap_ucx_counters.iface_opens);
    info_p->pool_backend = atomic_load(&zap_ucx_pool_backend);
    return ZAP_OK;
}

int zap_ucx_plugin_owns(const void *ptr, size_t len)
{
    return zap_ucx_md_owns(ptr, len);
}

/* Loading the library registers the component: LD_PRELOAD needs no code in
 * the application. ZAP_UCX_PLUGIN_AUTO=0 leaves it to an explicit
 * zap_ucx_plugin_register() call (a program that links the library). */
__attribute__((constructor)) static void zap_ucx_plugin_load(void)
{
    const char *automatic = getenv("ZAP_UCX_PLUGIN_AUTO");
    if (automatic != NULL && strcmp(automatic, "0") == 0) {
        return;
    }
    (void)zap_ucx_plugin_register();
}
