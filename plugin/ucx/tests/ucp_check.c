/* ucp_check: drives an unmodified UCX through its public API and checks what
 * the zap plugin changed. Built against the installed UCX headers only; the
 * plugin is either preloaded (LD_PRELOAD) or, in the ucp_check_linked build,
 * linked and registered by an explicit zap_ucx_plugin_register() call. Its
 * counters are read through dlsym so one binary serves both cases and also
 * runs with no plugin at all.
 *
 *   ucp_check info                 print the plugin state and ucp_context_print_info
 *   ucp_check alloc  EXPECT        ucp_mem_map(ALLOCATE) 8 B..8 MiB; UCT mem_query /
 *                                  detect on pool and foreign pointers
 *   ucp_check tag    EXPECT        two workers exchange tag messages 8 B..8 MiB
 *                                  between buffers from ucp_mem_map(ALLOCATE)
 * EXPECT is one of
 *   pool      the plugin is registered and the buffers come from its pool
 *             (run with UCX_ALLOC_PRIO=md:zap)
 *   declined  the plugin declined; everything must still work without it
 *   notpool   registered, but the buffers are not pool memory (default
 *             UCX_ALLOC_PRIO, or UCX_TLS without "zap" so UCP drops the MD)
 * Prints one "PASS <what>" or "FAIL <what>: <why>" line per check on stdout
 * and exits 0 only when every check passed. Every wait has a 60 s deadline. */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <ucp/api/ucp.h>
#include <uct/api/uct.h>
#include "zap/ucx_plugin.h"

#define CHECK_MAX_SIZE ((size_t)8 << 20)
#define CHECK_DEADLINE_S 60.0

typedef enum { EXPECT_POOL, EXPECT_DECLINED, EXPECT_NOTPOOL } expect_t;

static int failures;

static void report(int ok, const char *what, const char *why)
{
    if (ok) {
        printf("PASS %s\n", what);
    } else {
        printf("FAIL %s: %s\n", what, why);
        ++failures;
    }
    fflush(stdout);
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* The plugin's entry points if it is in the process (preloaded or linked). */
typedef zap_status_t (*info_fn)(zap_ucx_plugin_info_t *);
typedef int (*owns_fn)(const void *, size_t);

static int plugin_info(zap_ucx_plugin_info_t *info)
{
    info_fn fn = (info_fn)dlsym(RTLD_DEFAULT, "zap_ucx_plugin_info");
    memset(info, 0, sizeof(*info));
    return fn != NULL && fn(info) == ZAP_OK;
}

static int plugin_owns(const void *p, size_t len)
{
    owns_fn fn = (owns_fn)dlsym(RTLD_DEFAULT, "zap_ucx_plugin_owns");
    return fn != NULL && fn(p, len);
}

static void print_info(const char *when)
{
    zap_ucx_plugin_info_t info;
    if (!plugin_info(&info)) {
        printf("plugin %s: not loaded\n", when);
        return;
    }
    printf("plugin %s: state %d abi %d ucx %u.%u.%u reason \"%s\" md_opens %llu allocs %llu "
           "alloc_bytes %llu frees %llu regs %llu query_hits %llu query_misses %llu "
           "iface_opens %llu pool_backend %s\n",
           when, (int)info.state, info.abi, info.ucx_major, info.ucx_minor, info.ucx_release,
           info.reason, (unsigned long long)info.md_opens, (unsigned long long)info.allocs,
           (unsigned long long)info.alloc_bytes, (unsigned long long)info.frees,
           (unsigned long long)info.regs, (unsigned long long)info.query_hits,
           (unsigned long long)info.query_misses, (unsigned long long)info.iface_opens,
           info.pool_backend ? info.pool_backend : "-");
}

/* ZAP_TEST_EXPECT_BACKEND=managed (GPU machine): the pool behind the MD must
 * have that backing. Checked after the first allocation. */
static void check_backend(void)
{
    const char *want = getenv("ZAP_TEST_EXPECT_BACKEND");
    zap_ucx_plugin_info_t info;
    char why[120];
    if (want == NULL || want[0] == '\0') {
        return;
    }
    plugin_info(&info);
    snprintf(why, sizeof(why), "pool backing is %s", info.pool_backend ? info.pool_backend : "none");
    report(info.pool_backend != NULL && strcmp(info.pool_backend, want) == 0, "pool backing as expected",
           why);
}

static void check_state(expect_t expect)
{
    zap_ucx_plugin_info_t info;
    int loaded = plugin_info(&info);
    if (expect == EXPECT_DECLINED) {
        report(!loaded || info.state == ZAP_UCX_PLUGIN_DECLINED, "plugin declined",
               "the plugin registered although a decline was expected");
    } else {
        const char *abi = getenv("ZAP_TEST_EXPECT_ABI"); /* 113 or 116 */
        char why[64];
        report(loaded && info.state == ZAP_UCX_PLUGIN_REGISTERED, "plugin registered",
               loaded ? info.reason : "plugin not loaded");
        if (abi != NULL && abi[0] != '\0') {
            snprintf(why, sizeof(why), "registered with the %d layout", info.abi);
            report(info.abi == atoi(abi), "plugin uses the expected UCX layout", why);
        }
    }
}

static ucp_context_h context_create(void)
{
    ucp_params_t params;
    ucp_config_t *config;
    ucp_context_h ctx;
    ucs_status_t status;
    if (ucp_config_read(NULL, NULL, &config) != UCS_OK) {
        return NULL;
    }
    memset(&params, 0, sizeof(params));
    params.field_mask = UCP_PARAM_FIELD_FEATURES;
    params.features = UCP_FEATURE_TAG;
    status = ucp_init(&params, config, &ctx);
    ucp_config_release(config);
    if (status != UCS_OK) {
        printf("FAIL ucp_init: %s\n", ucs_status_string(status));
        ++failures;
        return NULL;
    }
    return ctx;
}

static ucs_status_t map_alloc(ucp_context_h ctx, size_t len, ucp_mem_h *memh_p, void **addr_p)
{
    ucp_mem_map_params_t mp;
    ucp_mem_attr_t attr;
    ucs_status_t status;
    memset(&mp, 0, sizeof(mp));
    mp.field_mask = UCP_MEM_MAP_PARAM_FIELD_LENGTH | UCP_MEM_MAP_PARAM_FIELD_FLAGS |
                    UCP_MEM_MAP_PARAM_FIELD_MEMORY_TYPE;
    mp.length = len;
    mp.flags = UCP_MEM_MAP_ALLOCATE;
    mp.memory_type = UCS_MEMORY_TYPE_HOST;
    status = ucp_mem_map(ctx, &mp, memh_p);
    if (status != UCS_OK) {
        return status;
    }
    attr.field_mask = UCP_MEM_ATTR_FIELD_ADDRESS;
    status = ucp_mem_query(*memh_p, &attr);
    if (status != UCS_OK) {
        ucp_mem_unmap(ctx, *memh_p);
        return status;
    }
    *addr_p = attr.address;
    return UCS_OK;
}

/* Opens the "zap" MD through the public UCT API, as any UCT user would, and
 * asks it about a pool pointer and a foreign one. */
static void check_uct_query(void *pool_ptr, size_t len)
{
    uct_component_h *comps = NULL, zap = NULL;
    unsigned n = 0, i;
    uct_md_config_t *cfg;
    uct_md_h md;
    union {
        uct_md_mem_attr_t a;
        char pad[128]; /* 1.16's struct is 48 bytes, the installed (1.13) one 32 */
    } m;
    ucs_memory_type_t type;
    void *foreign = malloc(4096);
    char why[160];

    if (uct_query_components(&comps, &n) != UCS_OK) {
        report(0, "uct component list", "uct_query_components failed");
        free(foreign);
        return;
    }
    for (i = 0; i < n; ++i) {
        uct_component_attr_t attr;
        memset(&attr, 0, sizeof(attr));
        attr.field_mask = UCT_COMPONENT_ATTR_FIELD_NAME;
        if (uct_component_query(comps[i], &attr) == UCS_OK && strcmp(attr.name, "zap") == 0) {
            zap = comps[i];
        }
    }
    report(zap != NULL, "uct lists component zap", "not in uct_query_components");
    if (zap == NULL || uct_md_config_read(zap, NULL, NULL, &cfg) != UCS_OK) {
        uct_release_component_list(comps);
        free(foreign);
        return;
    }
    if (uct_md_open(zap, "zap", cfg, &md) != UCS_OK) {
        report(0, "uct_md_open zap", "failed");
        uct_config_release(cfg);
        uct_release_component_list(comps);
        free(foreign);
        return;
    }
    uct_config_release(cfg);

    memset(&m, 0, sizeof(m));
    m.a.field_mask = UCT_MD_MEM_ATTR_FIELD_MEM_TYPE | UCT_MD_MEM_ATTR_FIELD_BASE_ADDRESS |
                     UCT_MD_MEM_ATTR_FIELD_ALLOC_LENGTH;
    if (uct_md_mem_query(md, pool_ptr, len, &m.a) != UCS_OK) {
        report(0, "mem_query recognises pool memory", "refused a pool pointer");
    } else {
        int inside = (char *)m.a.base_address <= (char *)pool_ptr &&
                     (char *)m.a.base_address + m.a.alloc_length >= (char *)pool_ptr + len;
        snprintf(why, sizeof(why), "type %d base %p length %zu for %p+%zu", (int)m.a.mem_type,
                 m.a.base_address, m.a.alloc_length, pool_ptr, len);
        report(m.a.mem_type == UCS_MEMORY_TYPE_HOST && inside, "mem_query recognises pool memory",
               why);
    }
    memset(&m, 0, sizeof(m));
    m.a.field_mask = UCT_MD_MEM_ATTR_FIELD_MEM_TYPE;
    report(uct_md_mem_query(md, foreign, 4096, &m.a) != UCS_OK, "mem_query refuses malloc memory",
           "accepted a foreign pointer");
    report(uct_md_detect_memory_type(md, pool_ptr, len, &type) == UCS_OK &&
               type == UCS_MEMORY_TYPE_HOST,
           "detect_memory_type: pool memory is host", "not detected as host");
    report(uct_md_detect_memory_type(md, foreign, 4096, &type) != UCS_OK,
           "detect_memory_type refuses malloc memory", "accepted a foreign pointer");
    uct_md_close(md);
    uct_release_component_list(comps);
    free(foreign);
}

/* ucp_mem_map of memory the program owns registers it on every memory domain
 * that registers host memory, the plugin's included. */
static void check_register(ucp_context_h ctx)
{
    zap_ucx_plugin_info_t before, after;
    ucp_mem_map_params_t mp;
    ucp_mem_h memh;
    size_t len = 1 << 20;
    void *p = malloc(len);
    char why[120];
    ucs_status_t status;
    if (p == NULL) {
        report(0, "ucp_mem_map(register) reaches the plugin", "malloc failed");
        return;
    }
    plugin_info(&before);
    memset(&mp, 0, sizeof(mp));
    mp.field_mask = UCP_MEM_MAP_PARAM_FIELD_ADDRESS | UCP_MEM_MAP_PARAM_FIELD_LENGTH;
    mp.address = p;
    mp.length = len;
    status = ucp_mem_map(ctx, &mp, &memh);
    if (status != UCS_OK) {
        report(0, "ucp_mem_map(register) reaches the plugin", ucs_status_string(status));
        free(p);
        return;
    }
    plugin_info(&after);
    snprintf(why, sizeof(why), "plugin mem_reg calls %llu -> %llu",
             (unsigned long long)before.regs, (unsigned long long)after.regs);
    report(after.regs > before.regs, "ucp_mem_map(register) reaches the plugin", why);
    report(!plugin_owns(p, len), "malloc memory is not pool memory", "owns() accepted it");
    ucp_mem_unmap(ctx, memh);
    free(p);
}

static int run_alloc(expect_t expect)
{
    ucp_context_h ctx = context_create();
    zap_ucx_plugin_info_t before, after;
    size_t len;
    char what[96], why[160];
    void *keep_ptr = NULL;
    ucp_mem_h keep_memh = NULL;
    if (ctx == NULL) {
        return 1;
    }
    check_state(expect);
    plugin_info(&before);
    for (len = 8; len <= CHECK_MAX_SIZE; len *= 4) {
        ucp_mem_h memh;
        void *addr;
        ucs_status_t status = map_alloc(ctx, len, &memh, &addr);
        snprintf(what, sizeof(what), "ucp_mem_map(ALLOCATE) %zu B", len);
        if (status != UCS_OK) {
            report(0, what, ucs_status_string(status));
            continue;
        }
        memset(addr, 0x5a, len); /* the memory must be usable */
        if (expect == EXPECT_POOL) {
            report(plugin_owns(addr, len), what, "the buffer is not pool memory");
        } else {
            snprintf(why, sizeof(why), "buffer %p is pool memory though the plugin is off", addr);
            report(!plugin_owns(addr, len), what, why);
        }
        if (keep_ptr == NULL && expect == EXPECT_POOL) {
            keep_ptr = addr;
            keep_memh = memh;
        } else {
            ucp_mem_unmap(ctx, memh);
        }
    }
    plugin_info(&after);
    if (expect == EXPECT_POOL) {
        snprintf(why, sizeof(why), "plugin mem_alloc calls %llu -> %llu",
                 (unsigned long long)before.allocs, (unsigned long long)after.allocs);
        report(after.allocs >= before.allocs + 11, "allocations served by the plugin's mem_alloc", why);
        check_backend();
        if (keep_ptr != NULL) {
            check_uct_query(keep_ptr, 8);
        }
        check_register(ctx);
    }
    if (keep_memh != NULL) {
        ucp_mem_unmap(ctx, keep_memh);
    }
    ucp_cleanup(ctx);
    print_info("after alloc");
    return failures != 0;
}

/* ---- two workers, tag messages ------------------------------------------------ */

typedef struct req_state {
    int done;
    ucs_status_t status;
    size_t length;
} req_state_t;

static void send_cb(void *request, ucs_status_t status, void *user_data)
{
    req_state_t *st = user_data;
    (void)request;
    st->status = status;
    st->done = 1;
}

static void recv_cb(void *request, ucs_status_t status, const ucp_tag_recv_info_t *info,
                    void *user_data)
{
    req_state_t *st = user_data;
    (void)request;
    st->status = status;
    st->length = info->length;
    st->done = 1;
}

static int wait_req(ucp_worker_h w0, ucp_worker_h w1, void *req, req_state_t *st)
{
    double deadline = now_s() + CHECK_DEADLINE_S;
    if (req == NULL) {
        st->done = 1;
        st->status = UCS_OK;
        return 1;
    }
    if (UCS_PTR_IS_ERR(req)) {
        st->done = 1;
        st->status = UCS_PTR_STATUS(req);
        return 1;
    }
    while (!st->done && now_s() < deadline) {
        ucp_worker_progress(w0);
        ucp_worker_progress(w1);
    }
    if (st->done) {
        ucp_request_free(req);
    }
    return st->done;
}

static ucp_worker_h worker_create(ucp_context_h ctx)
{
    ucp_worker_params_t wp;
    ucp_worker_h w;
    memset(&wp, 0, sizeof(wp));
    wp.field_mask = UCP_WORKER_PARAM_FIELD_THREAD_MODE;
    wp.thread_mode = UCS_THREAD_MODE_SINGLE;
    return ucp_worker_create(ctx, &wp, &w) == UCS_OK ? w : NULL;
}

static void fill(unsigned char *p, size_t len, unsigned seed)
{
    size_t i;
    for (i = 0; i < len; ++i) {
        p[i] = (unsigned char)((i * 131u + seed * 7u) >> 3);
    }
}

static int matches(const unsigned char *p, size_t len, unsigned seed)
{
    size_t i;
    for (i = 0; i < len; ++i) {
        if (p[i] != (unsigned char)((i * 131u + seed * 7u) >> 3)) {
            return 0;
        }
    }
    return 1;
}

static int run_tag(expect_t expect)
{
    ucp_context_h ctx = context_create();
    ucp_worker_h w0 = NULL, w1 = NULL;
    ucp_address_t *addr1 = NULL;
    size_t addr1_len;
    ucp_ep_h ep = NULL;
    ucp_mem_h smemh = NULL, rmemh = NULL;
    void *sbuf = NULL, *rbuf = NULL;
    size_t len;
    unsigned seed = 1;
    char what[96], why[200];
    ucs_status_t status;

    if (ctx == NULL) {
        return 1;
    }
    check_state(expect);
    w0 = worker_create(ctx);
    w1 = worker_create(ctx);
    if (w0 == NULL || w1 == NULL || ucp_worker_get_address(w1, &addr1, &addr1_len) != UCS_OK) {
        report(0, "workers", "ucp_worker_create/get_address failed");
        goto out;
    }
    {
        ucp_ep_params_t ep_params;
        memset(&ep_params, 0, sizeof(ep_params));
        ep_params.field_mask = UCP_EP_PARAM_FIELD_REMOTE_ADDRESS;
        ep_params.address = addr1;
        status = ucp_ep_create(w0, &ep_params, &ep);
        if (status != UCS_OK) {
            report(0, "ep create", ucs_status_string(status));
            goto out;
        }
    }
    if (map_alloc(ctx, CHECK_MAX_SIZE, &smemh, &sbuf) != UCS_OK ||
        map_alloc(ctx, CHECK_MAX_SIZE, &rmemh, &rbuf) != UCS_OK) {
        report(0, "buffers", "ucp_mem_map(ALLOCATE) of 8 MiB failed");
        goto out;
    }
    if (expect == EXPECT_POOL) {
        report(plugin_owns(sbuf, CHECK_MAX_SIZE) && plugin_owns(rbuf, CHECK_MAX_SIZE),
               "send and receive buffers are pool memory", "ucp_mem_map did not use the pool");
        check_backend();
    } else {
        report(!plugin_owns(sbuf, CHECK_MAX_SIZE) && !plugin_owns(rbuf, CHECK_MAX_SIZE),
               "buffers come from UCX's own allocators", "pool memory although the plugin is off");
    }
    for (len = 8; len <= CHECK_MAX_SIZE; len *= 2, ++seed) {
        ucp_request_param_t sp, rp;
        req_state_t sst = {0, UCS_OK, 0}, rst = {0, UCS_OK, 0};
        void *rreq, *sreq;
        int ok;
        fill(sbuf, len, seed);
        memset(rbuf, 0, len);
        memset(&rp, 0, sizeof(rp));
        rp.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA;
        rp.cb.recv = recv_cb;
        rp.user_data = &rst;
        rreq = ucp_tag_recv_nbx(w1, rbuf, len, (ucp_tag_t)len, (ucp_tag_t)-1, &rp);
        memset(&sp, 0, sizeof(sp));
        sp.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA;
        sp.cb.send = send_cb;
        sp.user_data = &sst;
        sreq = ucp_tag_send_nbx(ep, sbuf, len, (ucp_tag_t)len, &sp);
        ok = wait_req(w0, w1, sreq, &sst) && wait_req(w0, w1, rreq, &rst);
        snprintf(what, sizeof(what), "tag message %zu B", len);
        if (!ok) {
            report(0, what, "not complete within the deadline");
            break;
        }
        if (rreq != NULL && !UCS_PTR_IS_ERR(rreq) && rst.length != len) {
            snprintf(why, sizeof(why), "received %zu bytes", rst.length);
            report(0, what, why);
            continue;
        }
        if (sst.status != UCS_OK || rst.status != UCS_OK) {
            snprintf(why, sizeof(why), "send %s, recv %s", ucs_status_string(sst.status),
                     ucs_status_string(rst.status));
            report(0, what, why);
            continue;
        }
        report(matches(rbuf, len, seed), what, "received bytes differ");
    }
out:
    if (ep != NULL) {
        ucp_request_param_t cp;
        void *creq;
        req_state_t cst = {0, UCS_OK, 0};
        memset(&cp, 0, sizeof(cp));
        cp.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA;
        cp.cb.send = send_cb;
        cp.user_data = &cst;
        creq = ucp_ep_close_nbx(ep, &cp);
        if (!wait_req(w0, w1, creq, &cst)) {
            report(0, "ep close", "not complete within the deadline");
        }
    }
    if (smemh != NULL) {
        ucp_mem_unmap(ctx, smemh);
    }
    if (rmemh != NULL) {
        ucp_mem_unmap(ctx, rmemh);
    }
    if (addr1 != NULL) {
        ucp_worker_release_address(w1, addr1);
    }
    if (w1 != NULL) {
        ucp_worker_destroy(w1);
    }
    if (w0 != NULL) {
        ucp_worker_destroy(w0);
    }
    ucp_cleanup(ctx);
    print_info("after tag");
    return failures != 0;
}

static int run_info(void)
{
    ucp_context_h ctx = context_create();
    unsigned major, minor, release;
    if (ctx == NULL) {
        return 1;
    }
    ucp_get_version(&major, &minor, &release);
    printf("ucp version %u.%u.%u\n", major, minor, release);
    print_info("after ucp_init");
    ucp_context_print_info(ctx, stdout);
    ucp_cleanup(ctx);
    return 0;
}

int main(int argc, char **argv)
{
    expect_t expect = EXPECT_POOL;
    setvbuf(stdout, NULL, _IOLBF, 0);
#ifdef ZAP_CHECK_LINKED
    {
        /* The explicit path: with ZAP_UCX_PLUGIN_AUTO=0 the library's
         * constructor did nothing, so this call is what registers. */
        zap_ucx_plugin_info_t info;
        zap_status_t status;
        zap_ucx_plugin_info(&info);
        printf("before zap_ucx_plugin_register: state %d\n", (int)info.state);
        status = zap_ucx_plugin_register();
        printf("zap_ucx_plugin_register: %d\n", (int)status);
        report(status == ZAP_OK, "explicit zap_ucx_plugin_register", "declined");
    }
#endif
    if (argc < 2) {
        fprintf(stderr, "usage: %s info | alloc EXPECT | tag EXPECT  (EXPECT: pool declined notpool)\n",
                argv[0]);
        return 2;
    }
    if (argc >= 3) {
        if (strcmp(argv[2], "pool") == 0) {
            expect = EXPECT_POOL;
        } else if (strcmp(argv[2], "declined") == 0) {
            expect = EXPECT_DECLINED;
        } else if (strcmp(argv[2], "notpool") == 0) {
            expect = EXPECT_NOTPOOL;
        } else {
            fprintf(stderr, "unknown expectation %s\n", argv[2]);
            return 2;
        }
    }
    if (strcmp(argv[1], "info") == 0) {
        return run_info();
    }
    if (strcmp(argv[1], "alloc") == 0) {
        return run_alloc(expect);
    }
    if (strcmp(argv[1], "tag") == 0) {
        return run_tag(expect);
    }
    fprintf(stderr, "unknown command %s\n", argv[1]);
    return 2;
}
