/* mpi_check: Open MPI over pml ucx with the zap plugin preloaded on every rank.
 *
 *   mpirun -np 2 -x LD_PRELOAD=libzap_ucx.so --mca pml ucx ... mpi_check EXPECT
 *
 * Rank 0 sends 8 B..8 MiB to rank 1, which echoes it back; then MPI_Allreduce
 * (sum of doubles) over the same sizes, checked against the closed form. EXPECT
 * "pool": every rank has the plugin registered and UCX opened its memory domain
 * and transport; "poolbufs": the same, and the message and reduction buffers
 * themselves are pool memory, taken with ucp_mem_map(ALLOCATE) from a UCP
 * context of this program (run with UCX_ALLOC_PRIO=md:zap,...; the pool is
 * shared by every context of the process); "declined": the plugin declined on
 * every rank and MPI works anyway. Ranks agree on the verdict (MPI_Allreduce of failure counts) before
 * rank 0 prints PASS/FAIL lines; exit 0 only when all passed. */
#include <dlfcn.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <ucp/api/ucp.h>
#include "zap/ucx_plugin.h"

#define MAX_BYTES ((size_t)8 << 20)

static int rank, nranks;
static int failures;

static void report(int local_ok, const char *what)
{
    int bad = !local_ok, any_bad = 0;
    MPI_Allreduce(&bad, &any_bad, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (any_bad) {
        ++failures;
    }
    if (rank == 0) {
        printf("%s %s%s\n", any_bad ? "FAIL" : "PASS", what,
               any_bad ? " (on at least one rank)" : "");
        fflush(stdout);
    }
}

static unsigned char pattern(size_t i, size_t len)
{
    return (unsigned char)((i * 2654435761u + len) >> 13);
}

/* Own UCP context for pool buffers (poolbufs mode). */
static ucp_context_h ucp_ctx;

static void *pool_buffer(size_t len, ucp_mem_h *memh_p)
{
    ucp_mem_map_params_t mp;
    ucp_mem_attr_t attr;
    memset(&mp, 0, sizeof(mp));
    mp.field_mask = UCP_MEM_MAP_PARAM_FIELD_LENGTH | UCP_MEM_MAP_PARAM_FIELD_FLAGS;
    mp.length = len;
    mp.flags = UCP_MEM_MAP_ALLOCATE;
    if (ucp_mem_map(ucp_ctx, &mp, memh_p) != UCS_OK) {
        return NULL;
    }
    attr.field_mask = UCP_MEM_ATTR_FIELD_ADDRESS;
    if (ucp_mem_query(*memh_p, &attr) != UCS_OK) {
        ucp_mem_unmap(ucp_ctx, *memh_p);
        return NULL;
    }
    return attr.address;
}

int main(int argc, char **argv)
{
    int expect_pool = !(argc >= 2 && strcmp(argv[1], "declined") == 0);
    int pool_bufs = argc >= 2 && strcmp(argv[1], "poolbufs") == 0;
    ucp_mem_h memh[3] = {NULL, NULL, NULL};
    zap_status_t (*info_fn)(zap_ucx_plugin_info_t *);
    zap_ucx_plugin_info_t info;
    unsigned char *buf;
    double *in, *out;
    size_t len;
    char what[96];

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &nranks);
    setvbuf(stdout, NULL, _IOLBF, 0);

    if (pool_bufs) {
        int (*owns)(const void *, size_t) =
            (int (*)(const void *, size_t))dlsym(RTLD_DEFAULT, "zap_ucx_plugin_owns");
        ucp_params_t params;
        ucp_config_t *config;
        memset(&params, 0, sizeof(params));
        params.field_mask = UCP_PARAM_FIELD_FEATURES;
        params.features = UCP_FEATURE_TAG;
        if (ucp_config_read(NULL, NULL, &config) != UCS_OK ||
            ucp_init(&params, config, &ucp_ctx) != UCS_OK) {
            fprintf(stderr, "rank %d: ucp_init failed\n", rank);
            MPI_Abort(MPI_COMM_WORLD, 1);
        }
        ucp_config_release(config);
        buf = pool_buffer(MAX_BYTES, &memh[0]);
        in = pool_buffer(MAX_BYTES, &memh[1]);
        out = pool_buffer(MAX_BYTES, &memh[2]);
        report(buf != NULL && in != NULL && out != NULL && owns != NULL &&
                   owns(buf, MAX_BYTES) && owns(in, MAX_BYTES) && owns(out, MAX_BYTES),
               "message and reduction buffers are pool memory on every rank");
    } else {
        buf = malloc(MAX_BYTES);
        in = malloc(MAX_BYTES);
        out = malloc(MAX_BYTES);
    }
    if (buf == NULL || in == NULL || out == NULL) {
        fprintf(stderr, "rank %d: out of memory\n", rank);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }

    for (len = 8; len <= MAX_BYTES; len *= 2) {
        size_t i;
        int ok = 1;
        if (rank == 0) {
            for (i = 0; i < len; ++i) {
                buf[i] = pattern(i, len);
            }
            MPI_Send(buf, (int)len, MPI_BYTE, 1, 7, MPI_COMM_WORLD);
            memset(buf, 0, len);
            MPI_Recv(buf, (int)len, MPI_BYTE, 1, 8, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            for (i = 0; i < len && ok; ++i) {
                ok = buf[i] == pattern(i, len);
            }
        } else if (rank == 1) {
            MPI_Recv(buf, (int)len, MPI_BYTE, 0, 7, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            for (i = 0; i < len && ok; ++i) {
                ok = buf[i] == pattern(i, len);
            }
            MPI_Send(buf, (int)len, MPI_BYTE, 0, 8, MPI_COMM_WORLD);
        }
        snprintf(what, sizeof(what), "send/recv round trip %zu B", len);
        report(ok, what);
    }

    for (len = 8; len <= MAX_BYTES; len *= 2) {
        size_t n = len / sizeof(double), i;
        int ok = 1;
        for (i = 0; i < n; ++i) {
            in[i] = (double)(rank + 1) * (double)(i % 1000);
        }
        MPI_Allreduce(in, out, (int)n, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
        /* sum over ranks of (r+1) * (i % 1000): exact in double for these sizes */
        for (i = 0; i < n && ok; ++i) {
            ok = out[i] == (double)nranks * (nranks + 1) / 2.0 * (double)(i % 1000);
        }
        snprintf(what, sizeof(what), "allreduce sum %zu B", len);
        report(ok, what);
    }

    info_fn = (zap_status_t(*)(zap_ucx_plugin_info_t *))dlsym(RTLD_DEFAULT, "zap_ucx_plugin_info");
    memset(&info, 0, sizeof(info));
    if (info_fn != NULL) {
        info_fn(&info);
    }
    if (expect_pool) {
        report(info_fn != NULL && info.state == ZAP_UCX_PLUGIN_REGISTERED,
               "plugin registered on every rank");
        report(info.md_opens >= 1 && info.iface_opens >= 1,
               "UCX opened the zap memory domain and transport on every rank");
    } else {
        report(info_fn != NULL && info.state == ZAP_UCX_PLUGIN_DECLINED,
               "plugin declined on every rank");
        report(info.md_opens == 0, "UCX never opened the zap memory domain");
    }
    if (pool_bufs && getenv("ZAP_TEST_EXPECT_BACKEND") != NULL) {
        const char *want = getenv("ZAP_TEST_EXPECT_BACKEND");
        report(info.pool_backend != NULL && strcmp(info.pool_backend, want) == 0,
               "pool backing as expected on every rank");
    }
    printf("rank %d plugin: state %d abi %d reason \"%s\" md_opens %llu iface_opens %llu "
           "allocs %llu regs %llu pool_backend %s\n",
           rank, (int)info.state, info.abi, info.reason ? info.reason : "-",
           (unsigned long long)info.md_opens, (unsigned long long)info.iface_opens,
           (unsigned long long)info.allocs, (unsigned long long)info.regs,
           info.pool_backend ? info.pool_backend : "-");

    if (pool_bufs) {
        int i;
        for (i = 0; i < 3; ++i) {
            ucp_mem_unmap(ucp_ctx, memh[i]);
        }
        ucp_cleanup(ucp_ctx);
    } else {
        free(buf);
        free(in);
        free(out);
    }
    MPI_Finalize();
    return failures != 0;
}
