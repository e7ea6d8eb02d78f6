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
/* The automatic algorithm choice (ZAP_ALLREDUCE_ALG / ZAP_BCAST_ALG = auto). */
static void print_selection(void)
{
    const zap_coll_selection_row_t *ar = NULL, *bc = NULL;
    size_t nar = 0, nbc = 0;
    zap_coll_selection_table(&ar, &nar, &bc, &nbc);
    printf("#\n# collective algorithm selection (auto): first matching row wins\n");
    printf("# %-10s %-18s %-11s %-20s\n", "collective", "algorithm", "ranks", "bytes");
    printf("# %-10s %-18s %-11s [256K, inf), oversubscribed beyond the shm area: before shm, on host memory "
           "where the ranks may read each other's (ZAP_COLL_CMA)\n",
           "allreduce", "cma", "2-64");
    printf("# %-10s %-18s %-11s [0, %d] in a slot, larger up to ZAP_COLL_SHM_LARGE_BYTES: before the rows, on "
           "communicators whose ranks share one host (ZAP_COLL_SHM)\n",
           "allreduce", "shm", "2-64", ZAP_COLL_SHM_MAX_BYTES);
    for (int pass = 0; pass < 2; pass++) {
        const zap_coll_selection_row_t *rows = pass ? bc : ar;
        size_t n = pass ? nbc : nar;
        for (size_t i = 0; i < n; i++) {
            char ranks[32], lo[24], hi[24];
            if (rows[i].max_ranks == INT32_MAX || rows[i].max_ranks <= 0)
                snprintf(ranks, sizeof(ranks), "%d+", rows[i].min_ranks);
            else
                snprintf(ranks, sizeof(ranks), "%d-%d", rows[i].min_ranks, rows[i].max_ranks);
            snprintf(lo, sizeof(lo), "%zu", rows[i].min_bytes);
            if (rows[i].max_bytes == SIZE_MAX)
                snprintf(hi, sizeof(hi), "inf");
            else
                snprintf(hi, sizeof(hi), "%zu", rows[i].max_bytes);
            printf("# %-10s %-18s %-11s [%s, %s)\n", rows[i].collective, rows[i].algorithm, ranks, lo, hi);
        }
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
