/* zap-perf mpi: MPI collectives timed through MPI itself, Open MPI's choice
 * against what the zap coll component makes of them (plugin/ompi,
 * docs/mpi.md), side by side in the same processes on the same buffers.
 *
 * Two duplicates of MPI_COMM_WORLD: "zap", an ordinary one, which the
 * component serves when it is loaded and enabled (coll_zap_priority above
 * the other components; it still hands below whatever its routing table and
 * thresholds do not take), and "ompi", made with the info key
 * ompi_comm_coll_preference = "^zap", for which Open MPI never considers the
 * component. Without the component both are Open MPI and the ratios sit
 * around 1. The program uses no zap code: it is the unmodified MPI program the
 * component is for.
 *
 * For each operation and size (powers of two of bytes, --min to --max):
 *   - streaming: --iters operations back to back, the slowest rank's
 *     average; --reps passes alternating zap and ompi, the median pass
 *     reported;
 *   - latency: --iters operations each between barriers, the slowest rank's
 *     median;
 *   - wrong: the last streaming result and every latency result checked on
 *     both communicators (float sums of small integers: exact in any order);
 *   - speedup = ompi time / zap time (above 1: the component is faster).
 * Sizes: allreduce, reduce, scan, exscan and bcast move SIZE bytes (float32
 * for the reductions, bytes for bcast); allgather, alltoall and scatter move SIZE
 * bytes per rank block (OSU's convention), skipped where a rank's buffer would
 * pass --max-total; barrier has one row. After each operation's sizes, a
 * "suggest" line gives the smallest size from which the component's latency
 * was never above Open MPI's in this run, in the form coll_zap_<op>_min_bytes
 * takes (meaningful when the run used the component with its windows open:
 * --mca coll_zap_<op>_min_bytes 0). */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "perf_common.h"

typedef enum {
    M_ALLREDUCE, M_BCAST, M_REDUCE, M_ALLGATHER, M_ALLTOALL, M_SCATTER, M_SCAN, M_EXSCAN, M_BARRIER, M_NOPS
} mop_t;
static const char *const op_names[M_NOPS] = {"allreduce", "bcast",   "reduce", "allgather", "alltoall",
                                             "scatter",   "scan",    "exscan", "barrier"};

/* Float sums of small integers into recvbuf (out of place). */
static int reduction(mop_t op) { return op == M_ALLREDUCE || op == M_REDUCE || op == M_SCAN || op == M_EXSCAN; }

typedef struct {
    size_t min, max, max_total;
    long iters, reps;
    size_t align; /* 0: malloc's buffers; else aligned_alloc to this power of two */
    int run[M_NOPS];
    const char *csv;
} mopts_t;

static int g_rank, g_size;

/* A buffer the program owns, as an application would have it: malloc's, or
 * aligned (to tell costs that come with where a buffer starts). */
static void *buf_alloc(size_t bytes, size_t align)
{
    if (align == 0)
        return malloc(bytes);
    return aligned_alloc(align, (bytes + align - 1) / align * align);
}

static void usage(void)
{
    fprintf(stderr,
            "usage: mpirun -np N [--mca coll_zap_priority 40 ...] zap-perf mpi\n"
            "           [--op allreduce,bcast,reduce,allgather,alltoall,scatter,scan,exscan,barrier]\n"
            "           [--min SIZE] [--max SIZE] [--max-total SIZE] [--iters N] [--reps N] [--csv FILE]\n"
            "           [--align BYTES]\n"
            "  sizes in bytes (K, M, G: powers of 1024); defaults --min 8 --max 64M --max-total 256M --reps 5;\n"
            "  --iters default by size (1000 below 64K ... 10 from 16M); allgather/alltoall: SIZE per rank block\n"
            "  --align: buffers start on a multiple of BYTES (a power of two, e.g. 4096); default: malloc's\n");
}

static int parse(int argc, char **argv, mopts_t *o)
{
    memset(o, 0, sizeof(*o));
    o->min = 8;
    o->max = 64u << 20;
    o->max_total = 256u << 20;
    o->reps = 5;
    char ops[128] = "allreduce,bcast,reduce,allgather,alltoall";
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0 || v == NULL)
            return -1;
        i++;
        if (strcmp(a, "--min") == 0 && perf_parse_size(v, &o->min) == 0) continue;
        if (strcmp(a, "--max") == 0 && perf_parse_size(v, &o->max) == 0) continue;
        if (strcmp(a, "--max-total") == 0 && perf_parse_size(v, &o->max_total) == 0) continue;
        if (strcmp(a, "--iters") == 0 && (o->iters = atol(v)) > 0) continue;
        if (strcmp(a, "--reps") == 0 && (o->reps = atol(v)) > 0 && o->reps <= 64) continue;
        if (strcmp(a, "--op") == 0 && strlen(v) < sizeof(ops)) { strcpy(ops, v); continue; }
        if (strcmp(a, "--csv") == 0) { o->csv = v; continue; }
        if (strcmp(a, "--align") == 0 && perf_parse_size(v, &o->align) == 0 && o->align > 0 &&
            (o->align & (o->align - 1)) == 0)
            continue;
        fprintf(stderr, "zap-perf mpi: bad option or value: %s %s\n", a, v);
        return -1;
    }
    for (char *tok = strtok(ops, ","); tok != NULL; tok = strtok(NULL, ",")) {
        int found = 0;
        for (int k = 0; k < M_NOPS; k++)
            if (strcmp(tok, op_names[k]) == 0)
                o->run[k] = found = 1;
        if (!found) {
            fprintf(stderr, "zap-perf mpi: unknown op %s\n", tok);
            return -1;
        }
    }
    if (o->min < 4 || o->min > o->max) {
        fprintf(stderr, "zap-perf mpi: need 4 <= --min <= --max\n");
        return -1;
    }
    return 0;
}

static long default_iters(size_t bytes)
{
    if (bytes <= (64u << 10))
        return 1000;
    if (bytes <= (1u << 20))
        return 100;
    if (bytes < (16u << 20))
        return 20;
    return 10;
}

typedef struct {
    mop_t op;
    size_t bytes; /* the message, or one block */
    char *send, *recv;
    size_t send_bytes, recv_bytes;
} call_t;

static void run_once(const call_t *c, MPI_Comm comm)
{
    int n = (int)c->bytes;
    switch (c->op) {
    case M_ALLREDUCE: MPI_Allreduce(c->send, c->recv, n / 4, MPI_FLOAT, MPI_SUM, comm); break;
    case M_REDUCE: MPI_Reduce(c->send, c->recv, n / 4, MPI_FLOAT, MPI_SUM, 0, comm); break;
    case M_BCAST: MPI_Bcast(c->recv, n, MPI_BYTE, 0, comm); break;
    case M_ALLGATHER: MPI_Allgather(c->send, n, MPI_BYTE, c->recv, n, MPI_BYTE, comm); break;
    case M_ALLTOALL: MPI_Alltoall(c->send, n, MPI_BYTE, c->recv, n, MPI_BYTE, comm); break;
    case M_SCATTER: MPI_Scatter(c->send, n, MPI_BYTE, c->recv, n, MPI_BYTE, 0, comm); break;
    case M_SCAN: MPI_Scan(c->send, c->recv, n / 4, MPI_FLOAT, MPI_SUM, comm); break;
    case M_EXSCAN: MPI_Exscan(c->send, c->recv, n / 4, MPI_FLOAT, MPI_SUM, comm); break;
    case M_BARRIER: MPI_Barrier(comm); break;
    default: break;
    }
}

/* Inputs: rank r's float i is (i + r) % 16; bytes are (i * 7 + r) & 0xff, and
 * the bcast root's are (i * 5) & 0xff. */
static void prepare(const call_t *c)
{
    if (reduction(c->op)) {
        float *f = (float *)c->send;
        for (size_t i = 0; i < c->bytes / 4; i++)
            f[i] = (float)((i + (size_t)g_rank) % 16);
    } else {
        for (size_t i = 0; i < c->send_bytes; i++)
            c->send[i] = (char)((i * 7 + (size_t)g_rank) & 0xff);
    }
    if (c->op == M_BCAST)
        for (size_t i = 0; i < c->bytes; i++)
            c->recv[i] = g_rank == 0 ? (char)((i * 5) & 0xff) : 0;
}

static long check(const call_t *c)
{
    long bad = 0;
    switch (c->op) {
    case M_ALLREDUCE:
    case M_REDUCE:
    case M_SCAN:
    case M_EXSCAN:
        if ((c->op == M_REDUCE && g_rank != 0) || (c->op == M_EXSCAN && g_rank == 0))
            break; /* no result defined here */
        for (size_t i = 0; i < c->bytes / 4; i++) {
            float want = 0;
            int upto = c->op == M_SCAN ? g_rank + 1 : c->op == M_EXSCAN ? g_rank : g_size;
            for (int r = 0; r < upto; r++)
                want += (float)((i + (size_t)r) % 16);
            bad += ((float *)c->recv)[i] != want;
        }
        break;
    case M_BCAST:
        for (size_t i = 0; i < c->bytes; i++)
            bad += c->recv[i] != (char)((i * 5) & 0xff);
        break;
    case M_ALLGATHER:
        for (int r = 0; r < g_size; r++)
            for (size_t i = 0; i < c->bytes; i++)
                bad += c->recv[(size_t)r * c->bytes + i] != (char)((i * 7 + (size_t)r) & 0xff);
        break;
    case M_SCATTER:
        /* Block g_rank of rank 0's send. */
        for (size_t i = 0; i < c->bytes; i++) {
            size_t j = (size_t)g_rank * c->bytes + i;
            bad += c->recv[i] != (char)((j * 7) & 0xff);
        }
        break;
    case M_ALLTOALL:
        /* Block r of my receive buffer is block g_rank of rank r's send. */
        for (int r = 0; r < g_size; r++)
            for (size_t i = 0; i < c->bytes; i++) {
                size_t j = (size_t)g_rank * c->bytes + i;
                bad += c->recv[(size_t)r * c->bytes + i] != (char)((j * 7 + (size_t)r) & 0xff);
            }
        break;
    default: break;
    }
    return bad;
}

static double stream_pass(const call_t *c, MPI_Comm comm, long iters)
{
    MPI_Barrier(comm);
    double t0 = perf_now();
    for (long i = 0; i < iters; i++)
        run_once(c, comm);
    double local = (perf_now() - t0) / (double)iters, slowest = 0;
    MPI_Allreduce(&local, &slowest, 1, MPI_DOUBLE, MPI_MAX, comm);
    return slowest;
}

static double latency(const call_t *c, MPI_Comm comm, long iters, long *wrong)
{
    double *s = malloc(sizeof(double) * (size_t)iters), med = 0, slowest = 0;
    if (s == NULL)
        MPI_Abort(MPI_COMM_WORLD, 1);
    for (long i = 0; i < iters; i++) {
        prepare(c);
        MPI_Barrier(comm);
        double t0 = perf_now();
        run_once(c, comm);
        s[i] = perf_now() - t0;
        *wrong += check(c);
    }
    med = perf_median(s, (int)iters);
    free(s);
    MPI_Allreduce(&med, &slowest, 1, MPI_DOUBLE, MPI_MAX, comm);
    return slowest;
}

/* The value of coll_zap_priority as MPI_T sees it; -1 when the component is
 * not loaded. */
static int zap_priority(void)
{
    int provided = 0, n = 0, prio = -1;
    if (MPI_T_init_thread(MPI_THREAD_SINGLE, &provided) != MPI_SUCCESS)
        return -1;
    MPI_T_cvar_get_num(&n);
    for (int i = 0; i < n && prio < 0; i++) {
        char name[256], desc[8];
        int name_len = sizeof(name), desc_len = sizeof(desc), verbosity, bind, scope;
        MPI_Datatype dt;
        MPI_T_enum en;
        if (MPI_T_cvar_get_info(i, name, &name_len, &verbosity, &dt, &en, desc, &desc_len, &bind, &scope) !=
                MPI_SUCCESS ||
            strcmp(name, "coll_zap_priority") != 0 || dt != MPI_INT)
            continue;
        MPI_T_cvar_handle h;
        int count = 0;
        if (MPI_T_cvar_handle_alloc(i, NULL, &h, &count) == MPI_SUCCESS) {
            MPI_T_cvar_read(h, &prio);
            MPI_T_cvar_handle_free(&h);
        }
    }
    MPI_T_finalize();
    return prio;
}

int perf_mpi_main(int argc, char **argv)
{
    MPI_Comm_rank(MPI_COMM_WORLD, &g_rank);
    MPI_Comm_size(MPI_COMM_WORLD, &g_size);
    mopts_t o;
    if (parse(argc, argv, &o) != 0) {
        if (g_rank == 0)
            usage();
        return 2;
    }
    MPI_Comm zap, ompi;
    MPI_Info info;
    MPI_Info_create(&info);
    MPI_Info_set(info, "ompi_comm_coll_preference", "^zap");
    MPI_Comm_dup(MPI_COMM_WORLD, &zap);
    MPI_Comm_dup_with_info(MPI_COMM_WORLD, info, &ompi);
    MPI_Info_free(&info);
    int prio = zap_priority();
    perf_out_t out;
    if (perf_out_open(&out, o.csv,
                      "op,bytes,ranks,iters,zap_stream_us,ompi_stream_us,stream_speedup,zap_lat_us,ompi_lat_us,"
                      "lat_speedup,wrong",
                      g_rank) != 0)
        MPI_Abort(MPI_COMM_WORLD, 1);
    if (g_rank == 0) {
        if (prio < 0)
            printf("# zap-perf mpi: %d ranks; the zap component is not loaded: both columns are Open MPI's\n", g_size);
        else
            printf("# zap-perf mpi: %d ranks; coll_zap_priority %d%s; \"zap\": a duplicate of MPI_COMM_WORLD, "
                   "\"ompi\": one excluding the component (ompi_comm_coll_preference ^zap)\n",
                   g_size, prio, prio <= 0 ? " (not enabled: both columns are Open MPI's)" : "");
        printf("# speedup = ompi / zap (above 1: the component is faster); times in us, slowest rank\n");
        printf("%-10s %10s %6s %11s %11s %8s %10s %10s %8s %6s\n", "op", "bytes", "iters", "zap_stream", "ompi_stream",
               "speedup", "zap_lat", "ompi_lat", "speedup", "wrong");
    }
    for (int op = 0; op < M_NOPS; op++) {
        if (!o.run[op])
            continue;
        size_t suggest = 0; /* smallest size from which zap was never slower */
        int slower_seen = 0;
        for (size_t bytes = o.min; bytes <= o.max; bytes *= 2) {
            if (op == M_BARRIER && bytes > o.min)
                break;
            call_t c = {.op = (mop_t)op, .bytes = op == M_BARRIER ? 0 : bytes};
            int blocks = op == M_ALLGATHER || op == M_ALLTOALL || op == M_SCATTER;
            c.send_bytes = op == M_ALLTOALL || op == M_SCATTER ? bytes * (size_t)g_size : bytes;
            c.recv_bytes = op == M_ALLGATHER || op == M_ALLTOALL ? bytes * (size_t)g_size : bytes;
            if (blocks && (c.recv_bytes > o.max_total || c.send_bytes > o.max_total))
                break;
            c.send = buf_alloc(c.send_bytes + 1, o.align);
            c.recv = buf_alloc(c.recv_bytes + 1, o.align);
            if (c.send == NULL || c.recv == NULL)
                MPI_Abort(MPI_COMM_WORLD, 1);
            long iters = o.iters > 0 ? o.iters : default_iters(blocks ? c.recv_bytes : bytes);
            long wrong = 0;
            prepare(&c);
            run_once(&c, zap); /* warm-up: connections, segments */
            run_once(&c, ompi);
            double zp[64], op_[64];
            for (long k = 0; k < o.reps; k++) {
                prepare(&c);
                zp[k] = stream_pass(&c, zap, iters);
                wrong += reduction(c.op) ? 0 : check(&c);
                prepare(&c);
                op_[k] = stream_pass(&c, ompi, iters);
                wrong += reduction(c.op) ? 0 : check(&c);
            }
            /* Reductions accumulate nothing (out of place): one check each. */
            prepare(&c);
            run_once(&c, zap);
            wrong += check(&c);
            run_once(&c, ompi);
            wrong += check(&c);
            double zs = perf_median(zp, (int)o.reps) * 1e6, os = perf_median(op_, (int)o.reps) * 1e6;
            long lat_iters = iters < 200 ? iters : 200;
            double zl = latency(&c, zap, lat_iters, &wrong) * 1e6;
            double ol = latency(&c, ompi, lat_iters, &wrong) * 1e6;
            long all_wrong = 0;
            MPI_Allreduce(&wrong, &all_wrong, 1, MPI_LONG, MPI_SUM, ompi);
            if (ol < zl) {
                slower_seen = 1;
                suggest = 0;
            } else if (slower_seen && suggest == 0) {
                suggest = bytes;
            }
            if (g_rank == 0) {
                printf("%-10s %10zu %6ld %11.2f %11.2f %8.2f %10.2f %10.2f %8.2f %6ld\n", op_names[op], c.bytes, iters,
                       zs, os, os / zs, zl, ol, ol / zl, all_wrong);
                fflush(stdout);
                if (out.csv != NULL)
                    fprintf(out.csv, "%s,%zu,%d,%ld,%.3f,%.3f,%.4f,%.3f,%.3f,%.4f,%ld\n", op_names[op], bytes, g_size,
                            iters, zs, os, os / zs, zl, ol, ol / zl, all_wrong);
            }
            free(c.send);
            free(c.recv);
        }
        if (g_rank == 0 && op != M_BARRIER) {
            if (!slower_seen)
                printf("# suggest: coll_zap_%s_min_bytes %d:0 (never slower in this run)\n", op_names[op], g_size);
            else if (suggest == 0)
                printf("# suggest: coll_zap_%s_min_bytes %d:%zu (slower up to the largest size run)\n", op_names[op],
                       g_size, o.max * 2);
            else
                printf("# suggest: coll_zap_%s_min_bytes %d:%zu\n", op_names[op], g_size, suggest);
        }
    }
    perf_out_close(&out);
    MPI_Comm_free(&zap);
    MPI_Comm_free(&ompi);
    return 0;
}
