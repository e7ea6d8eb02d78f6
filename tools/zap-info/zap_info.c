/* zap-info: what this zap build is and what it would do here, in the spirit
 * of ucx_info. Prints version and build options, the runtime UCX and MPI
 * libraries, CUDA devices, the pool backing that would be chosen and why, and
 * every ZAP_ setting with its value, default and meaning. A bad setting makes
 * it exit 1 naming the variable. --config-markdown prints the settings table
 * that docs/config.md carries. */
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <mpi.h>
#include <ucp/api/ucp.h>
#include "zap/config.h"
#include "zap/pool.h"
#include "zap/version.h"
#include "zap_build_info.h"
#include "pool/backing.h"
#include "base/config_table.h"
#ifdef ZAP_INFO_HAVE_COLL
#include "zap/coll.h"
#endif

/* Markdown cell text: a '|' would end the cell. */
static void print_cell(const char *s)
{
    for (; *s; s++) {
        if (*s == '|')
            fputs("\\|", stdout);
        else
            putchar(*s);
    }
}

static void print_markdown(void)
{
    printf("| variable | default | accepted | meaning |\n|---|---|---|---|\n");
    for (size_t i = 0; i < zap_config_count(); i++) {
        const zap_config_entry_t *e = zap_config_entry(i);
        printf("| `%s` | `%s` | ", e->name, e->default_value);
        print_cell(e->accepted);
        printf(" | ");
        print_cell(e->help);
        printf(" |\n");
    }
}

#ifdef ZAP_INFO_HAVE_COLL
/* Predicate names of the selection table (ZAP_COLL_PRED_*), in bit order. */
static const char *const pred_names[] = {"same_host", "fits_shm", "single_copy", "oversubscribed",
                                         "flat", "gpu_path", "host_memory", "gpu_memory", "commutative", "hosts",
                                         "slow_reads"};

static void print_preds(char sign, unsigned preds, char *out, size_t cap)
{
    for (size_t b = 0; b < sizeof(pred_names) / sizeof(pred_names[0]); b++) {
        if (!(preds & (1u << b)))
            continue;
        size_t n = strlen(out);
        snprintf(out + n, cap - n, "%s%c%s", n ? " " : "", sign, pred_names[b]);
    }
}

static void print_bytes(size_t v, char *out, size_t cap)
{
    if (v == SIZE_MAX)
        snprintf(out, cap, "inf");
    else if (v >= (1u << 20) && v % (1u << 20) == 0)
        snprintf(out, cap, "%zuM", v >> 20);
    else if (v >= 1024 && v % 1024 == 0)
        snprintf(out, cap, "%zuK", v >> 10);
    else
        snprintf(out, cap, "%zu", v);
}

/* The selection table: every row that holds is a candidate, in order; a
 * forced algorithm (ZAP_<COLL>_ALG) goes first (docs/collectives.md). */
static void print_selection(void)
{
    size_t n = zap_coll_selection_table(NULL, 0);
    zap_coll_selection_row_t rows[128];
    if (n > sizeof(rows) / sizeof(rows[0]))
        n = sizeof(rows) / sizeof(rows[0]);
    zap_coll_selection_table(rows, n);
    printf("#\n# collective algorithm selection: every row that holds is a candidate, in order\n");
    printf("# %-10s %-18s %-9s %-12s %-64s %s\n", "collective", "algorithm", "ranks", "bytes", "predicates", "why");
    for (size_t i = 0; i < n; i++) {
        char ranks[32], lo[24], hi[24], preds[160] = "";
        if (rows[i].max_ranks == INT32_MAX)
            snprintf(ranks, sizeof(ranks), "%d+", rows[i].min_ranks);
        else
            snprintf(ranks, sizeof(ranks), "%d-%d", rows[i].min_ranks, rows[i].max_ranks);
        print_bytes(rows[i].min_bytes, lo, sizeof(lo));
        print_bytes(rows[i].max_bytes, hi, sizeof(hi));
        char bytes[56];
        snprintf(bytes, sizeof(bytes), "[%s,%s)", lo, hi);
        print_preds('+', rows[i].require, preds, sizeof(preds));
        print_preds('-', rows[i].forbid, preds, sizeof(preds));
        printf("# %-10s %-18s %-9s %-12s %-64s %s\n", rows[i].collective, rows[i].algorithm, ranks, bytes,
               preds[0] ? preds : "-", rows[i].rule);
    }
}
#endif

static void print_backing_choice(void)
{
    const char *why = NULL;
    int ndev = zap_cuda_device_count(&why);
    if (ndev == 0)
        printf("# CUDA devices: 0 (%s)\n", why ? why : "none");
    else
        printf("# CUDA devices: %d\n", ndev);
    for (int d = 0; d < ndev; d++) {
        char name[128] = "";
        uint64_t fr = 0, tot = 0;
        if (zap_cuda_device_info(d, name, sizeof(name), &fr, &tot) == ZAP_OK)
            printf("#   device %d: %s, %.1f GiB free of %.1f GiB\n", d, name, fr / 1073741824.0, tot / 1073741824.0);
    }
    int choice = 0;
    if (zap_cfg_get_choice(ZAP_CFG_POOL_BACKEND, &choice) != ZAP_OK)
        return;
    const char *names[] = {"auto", "managed", "pinned", "host"};
    zap_pool_params_t p = {.backend = ZAP_POOL_BACKEND_ENV, .device = -1, .budget_bytes = 16u << 20};
    zap_pool_t *pool = NULL;
    zap_status_t st = zap_pool_create(&p, &pool);
    if (st != ZAP_OK) {
        printf("# pool backing: ZAP_POOL_BACKEND=%s cannot be used here: %s\n", names[choice], zap_status_string(st));
        return;
    }
    const char *reason = choice != 0 ? "set by ZAP_POOL_BACKEND"
                         : ndev > 0  ? "auto: a CUDA device is present"
                                     : "auto: no CUDA device";
    printf("# pool backing: %s (%s)\n", zap_pool_backend_name(pool), reason);
    zap_pool_destroy(pool);
}

int main(int argc, char **argv)
{
    if (argc > 1 && strcmp(argv[1], "--config-markdown") == 0) {
        print_markdown();
        return 0;
    }
    if (argc > 1) {
        fprintf(stderr, "usage: zap-info [--config-markdown]\n");
        return 2;
    }
    unsigned major = 0, minor = 0, release = 0;
    ucp_get_version(&major, &minor, &release);
    char mpi_version[MPI_MAX_LIBRARY_VERSION_STRING] = "";
    int len = 0;
    MPI_Get_library_version(mpi_version, &len);
    char *nl = strchr(mpi_version, ',');
    if (nl != NULL)
        *nl = '\0';

    printf("# zap %s (git %s, %s)\n", zap_version(), ZAP_GIT_REV, ZAP_BUILD_TYPE);
    printf("# built with: CUDA %s, UCX %s, MPI standard %s, NCCL %s, sanitizer %s\n",
           ZAP_HAVE_CUDA_BUILD ? ZAP_BUILD_CUDA_VERSION : "no", ZAP_BUILD_UCX_VERSION, ZAP_BUILD_MPI_VERSION,
           ZAP_HAVE_NCCL_BUILD ? "yes" : "no", ZAP_BUILD_SANITIZE[0] ? ZAP_BUILD_SANITIZE : "none");
    printf("# running with: UCX %u.%u.%u, %s\n", major, minor, release, mpi_version);
    const char *bad = NULL;
    zap_status_t cfg = zap_config_check(&bad);
    if (cfg == ZAP_OK)
        print_backing_choice();

    printf("#\n# settings (ZAP_* environment variables)\n");
    for (size_t i = 0; i < zap_config_count(); i++) {
        const zap_config_entry_t *e = zap_config_entry(i);
        printf("%-26s = %-12s (default %s; %s)\n", e->name, zap_config_value(i), e->default_value, e->accepted);
        printf("    %s\n", e->help);
    }
#ifdef ZAP_INFO_HAVE_COLL
    print_selection();
#endif
    if (cfg != ZAP_OK) {
        fprintf(stderr, "zap-info: setting %s has an invalid value (see the message above)\n", bad);
        return 1;
    }
    return 0;
}
