/* zap-verify run: the distributed job. Under mpirun it creates the UCX
 * transport over MPI_COMM_WORLD (zap_ucp_transport_create); without mpirun
 * it is a singleton MPI rank; with --inproc-ranks K it runs K ranks as
 * threads of this process over the inproc transport, without MPI, which is
 * why that option is refused under an MPI launcher with more than one rank
 * (each process would run a world of its own). Rank 0 prints the summary
 * (stdout) and, on a terminal, a progress line (stderr). */
#define _GNU_SOURCE /* sched_getaffinity */
#include "zv_run.h"
#include "zap/inproc.h"
#include "base/log.h"
#ifdef ZAP_VERIFY_WITH_UCP
#include "zap/ucp.h"
#endif
#include <mpi.h>
#ifdef ZAP_VERIFY_WITH_GPU
#include "ed25519_gpu.h"
#endif
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* The rank count and this process's rank that an MPI launcher gave it, from
 * the environment the launcher sets (Open MPI, MPICH and Intel MPI's Hydra,
 * MVAPICH); 0 ranks when none did. */
static long launcher_ranks(long *rank_p)
{
    static const char *const size_vars[] = {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "MV2_COMM_WORLD_SIZE"};
    static const char *const rank_vars[] = {"OMPI_COMM_WORLD_RANK", "PMI_RANK", "MV2_COMM_WORLD_RANK"};
    for (int i = 0; i < 3; i++) {
        const char *v = getenv(size_vars[i]), *r = getenv(rank_vars[i]);
        char *end;
        long n = v && *v ? strtol(v, &end, 10) : 0;
        if (n > 0 && *end == '\0') {
            *rank_p = r ? strtol(r, NULL, 10) : 0;
            return n;
        }
    }
    *rank_p = 0;
    return 0;
}

/* The options that do not apply to what was asked; exit status 2 then. */
static int run_check(const zv_opts_t *o)
{
    static const int gen_opts[] = {ZV_O_KEYS, ZV_O_INVALID, ZV_O_SEED, ZV_O_MSGLEN, ZV_O_BATCHID};
    static const int format[] = {ZV_O_FORMAT}, segment[] = {ZV_O_SEGMENT}, inproc[] = {ZV_O_INPROC};
    if (!!o->batch == !!(o->given[ZV_O_GEN] || o->given[ZV_O_ITEMS])) {
        fprintf(stderr, "zap-verify run: give exactly one of --batch FILE or --gen N\n");
        return -1;
    }
    if (o->batch && zv_refuse(o, gen_opts, 5, "applies to --gen N, not to --batch FILE (the file holds its batch)"))
        return -1;
    if (!o->verdicts_out && zv_refuse(o, format, 1, "applies to --verdicts-out FILE, which was not given"))
        return -1;
    if (o->vp.mode == ZAP_VERIFY_BCAST &&
        zv_refuse(o, segment, 1, "applies to --mode scatter (a broadcast sends the batch whole)"))
        return -1;
    long rank, ranks = launcher_ranks(&rank);
    if (o->inproc_ranks && ranks > 1) {
        if (rank == 0)
            zv_refuse(o, inproc, 1, "runs ranks as threads of one process, but this process is one of several "
                                    "that an MPI launcher started (mpirun -np > 1): use one or the other");
        return -1;
    }
    if (o->inproc_ranks && o->vp.root >= o->inproc_ranks) {
        fprintf(stderr, "zap-verify run: --root %d but only %d ranks\n", o->vp.root, o->inproc_ranks);
        return -1;
    }
    return 0;
}

typedef struct inproc_arg {
    zv_run_ctx_t *c;
    zap_inproc_world_t *world;
    int rank;
} inproc_arg_t;

static void *inproc_rank(void *arg)
{
    inproc_arg_t *a = arg;
    zap_transport_t *t;
    if (zap_inproc_transport(a->world, a->rank, &t) != ZAP_OK)
        a->c->exit_code[a->rank] = ZV_EXIT_ERROR;
    else if ((a->c->exit_code[a->rank] = zv_rank_main(a->c, t)) == ZV_EXIT_ERROR)
        /* A rank that gave up (e.g. its communicator could not be made)
         * leaves: its peers' waits on it fail ("peer closed") instead of
         * waiting for it forever, as there is no deadline by default. */
        zap_transport_close(t);
    return NULL;
}

/* K ranks as threads over the inproc transport. */
static int run_inproc(zv_run_ctx_t *c)
{
    zv_opts_t *o = c->o;
    const int K = o->inproc_ranks;
    if (!o->vp.threads)
        o->vp.threads = zv_default_threads(K);
    c->transport_name = "inproc";
    c->loaded = zv_loaded_inproc;
    zap_inproc_world_t *world;
    zap_status_t s = zap_inproc_world_create(K, NULL, &world);
    if (s != ZAP_OK) {
        fprintf(stderr, "zap-verify: inproc world: %s\n", zap_status_string(s));
        return ZV_EXIT_ERROR;
    }
    pthread_barrier_init(&c->barrier, NULL, (unsigned)K);
    pthread_t *tid = calloc((size_t)K, sizeof(pthread_t));
    inproc_arg_t *args = calloc((size_t)K, sizeof(inproc_arg_t));
    if (!tid || !args) {
        fprintf(stderr, "zap-verify: no memory for %d rank threads\n", K);
        exit(ZV_EXIT_ERROR);
    }
    for (int r = 0; r < K; r++) {
        args[r] = (inproc_arg_t){c, world, r};
        if (pthread_create(&tid[r], NULL, inproc_rank, &args[r]) != 0) {
            fprintf(stderr, "zap-verify: cannot start rank thread %d\n", r);
            exit(ZV_EXIT_ERROR); /* ranks already started wait at the load barrier */
        }
    }
    int code = 0;
    for (int r = 0; r < K; r++) {
        pthread_join(tid[r], NULL);
        if (c->exit_code[r] > code)
            code = c->exit_code[r];
    }
    free(tid);
    free(args);
    zap_inproc_world_destroy(world);
    pthread_barrier_destroy(&c->barrier);
    zv_print_result(o, code);
    return code;
}

/* Completes an MPI request within ZAP_TIMEOUT; otherwise a peer has died or
 * hangs, and MPI offers no way out of a collective with a dead member, so
 * the job is ended with MPI_Abort (naming the wait) rather than hanging. */
static void wait_or_abort(MPI_Request *req, const char *what, int rank)
{
    double deadline = zap_clock_now() + zap_timeout_seconds();
    struct timespec ts = {0, 1000 * 1000};
    int done = 0;
    for (MPI_Test(req, &done, MPI_STATUS_IGNORE); !done; MPI_Test(req, &done, MPI_STATUS_IGNORE)) {
        if (zap_clock_now() > deadline) {
            fprintf(stderr,
                    "zap-verify: rank %d: %s did not complete within ZAP_TIMEOUT (%.1f s): a rank has failed; "
                    "ending the job\n",
                    rank, what, zap_timeout_seconds());
            MPI_Abort(MPI_COMM_WORLD, ZV_EXIT_ERROR);
        }
        nanosleep(&ts, NULL);
    }
}

/* The ranks sharing this host, from MPI itself (any launcher): they split
 * the cores between them and each takes its own GPU. */
static void mpi_host_setup(zv_opts_t *o, int rank)
{
    MPI_Comm node;
    int local = 0, local_size = 1;
    MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, rank, MPI_INFO_NULL, &node);
    MPI_Comm_rank(node, &local);
    MPI_Comm_size(node, &local_size);
    MPI_Comm_free(&node);
    if (!o->vp.threads)
        o->vp.threads = zv_default_threads(local_size);
    /* Open MPI binds each of 1 or 2 ranks to one core by default: the job's
     * threads (verifier, CRC, segment stream) then share that core. */
    cpu_set_t aff;
    if (sched_getaffinity(0, sizeof(aff), &aff) == 0 && CPU_COUNT(&aff) == 1 && sysconf(_SC_NPROCESSORS_ONLN) > 1 &&
        rank == 0)
        fprintf(stderr, "zap-verify: rank 0 is bound to one core; its verifier, CRC and transfer threads will share "
                        "it (mpirun --bind-to none or --bind-to socket gives them the host's cores)\n");
    if (!o->gen.threads)
        o->gen.threads = o->vp.threads * (unsigned)local_size;
#ifdef ZAP_VERIFY_WITH_GPU
    int ndev = zap_ed25519_gpu_device_count();
    if (ndev > 0)
        (void)zap_ed25519_gpu_use_device(local % ndev);
#endif
}

/* This process's rank over UCX (or, without it, the one rank over inproc). */
static int run_mpi_rank(zv_run_ctx_t *c, int rank, int size)
{
    zap_transport_t *t = NULL;
    int code;
#ifdef ZAP_VERIFY_WITH_UCP
    (void)size;
    c->transport_name = "ucp";
    zap_status_t s = zap_ucp_transport_create(MPI_COMM_WORLD, NULL, &t);
    if (s != ZAP_OK) {
        fprintf(stderr, "zap-verify: rank %d: UCX transport: %s\n", rank, zap_status_string(s));
        return -ZV_EXIT_ERROR;
    }
    c->t = t;
    code = zv_rank_main(c, t);
    if (c->peer_lost) {
        /* A barrier with a dead rank would only wait: leave without MPI.
         * Not MPI_Abort: that kills the other survivors before they report
         * their own error; mpirun ends the job anyway unless it runs with
         * --enable-recovery, which is what the kill trials check. */
        fflush(NULL);
        _exit(code);
    }
    /* Close only once every rank is done with the transport, so no rank sees
     * a peer's endpoint vanish mid-flight; a dead rank ends the job here. */
    MPI_Request done_req;
    MPI_Ibarrier(MPI_COMM_WORLD, &done_req);
    wait_or_abort(&done_req, "the end-of-job barrier", rank);
    zap_transport_close(t);
#else
    zap_inproc_world_t *world = NULL;
    c->transport_name = "inproc (no UCX transport in this build)";
    if (size != 1) {
        if (rank == 0)
            fprintf(stderr, "zap-verify: this build has no UCX transport; run one rank or use --inproc-ranks\n");
        return -ZV_EXIT_ERROR;
    }
    if (zap_inproc_world_create(1, NULL, &world) != ZAP_OK || zap_inproc_transport(world, 0, &t) != ZAP_OK)
        code = ZV_EXIT_ERROR;
    else
        code = zv_rank_main(c, t);
    zap_inproc_world_destroy(world);
#endif
    return code;
}

/* The ranks of an MPI job (or a singleton), over UCX. */
static int run_mpi(zv_run_ctx_t *c, int *argc, char ***argv)
{
    zv_opts_t *o = c->o;
    c->loaded = zv_loaded_mpi;
    int provided;
    if (MPI_Init_thread(argc, argv, MPI_THREAD_SERIALIZED, &provided) != MPI_SUCCESS) {
        fprintf(stderr, "zap-verify: MPI_Init failed\n");
        return ZV_EXIT_ERROR;
    }
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (o->vp.root >= size) {
        if (rank == 0)
            fprintf(stderr, "zap-verify run: --root %d but only %d ranks\n", o->vp.root, size);
        MPI_Finalize();
        return ZV_EXIT_USAGE;
    }
    mpi_host_setup(o, rank);
    zap_log_set_rank(rank);
    int code = run_mpi_rank(c, rank, size);
    if (code < 0) { /* no transport: nothing was run */
        MPI_Finalize();
        return -code;
    }
    /* Before the exit-status agreement, which a dead rank stops: a rank that
     * completed its job says so even then (the kill trials read it). */
    if (o->rank_status) {
        printf("zap-verify: rank %d: job ended, exit status %d\n", rank, code);
        fflush(stdout);
    }
    /* Every rank leaves with the worst exit code, so mpirun's status and each
     * rank's agree. */
    int worst = code;
    MPI_Request worst_req;
    MPI_Iallreduce(&code, &worst, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD, &worst_req);
    wait_or_abort(&worst_req, "the exit-status agreement", rank);
    if (rank == 0)
        zv_print_result(o, worst);
    MPI_Finalize();
    return worst;
}

int zv_run_main(zv_opts_t *o, int *argc, char ***argv)
{
    if (run_check(o))
        return ZV_EXIT_USAGE;
    zv_run_ctx_t *c = calloc(1, sizeof(*c));
    if (!c) {
        fprintf(stderr, "zap-verify: no memory\n");
        return ZV_EXIT_ERROR;
    }
    c->o = o;
    c->tty = isatty(STDERR_FILENO) && isatty(STDOUT_FILENO);
    int code = o->inproc_ranks ? run_inproc(c) : run_mpi(c, argc, argv);
    free(c);
    return code;
}
