/* zap-verify run (zv_run.c): what the ranks of one run share, loading the
 * batch (zv_load.c) and one rank's run (zv_rank.c). */
#ifndef ZAP_ZV_RUN_H
#define ZAP_ZV_RUN_H
#include <pthread.h>
#include "zv.h"
#include "zap/transport.h"

/* What every rank of a run shares (inproc: the same struct; MPI: one each). */
typedef struct zv_run_ctx {
    zv_opts_t *o;
    int tty;
    /* root-only */
    uint32_t *gen_expected;
    double load_seconds;
    int exit_code[4096];
    const char *transport_name;
    /* Set by a rank whose job ended because a peer died or stopped answering:
     * no collective can complete any more, so the MPI path aborts at once. */
    int peer_lost;
    /* Every rank waits here until the root has loaded or generated the batch,
     * which may take longer than ZAP_TIMEOUT; neither wait has a deadline of
     * its own, the root's load is bounded by its own work. */
    void (*loaded)(struct zv_run_ctx *c);
    zap_transport_t *t;        /* MPI path: the root's message ends that wait */
    pthread_barrier_t barrier; /* inproc */
} zv_run_ctx_t;

/* zv_load.c. The root's batch into pool memory of t: the file read to its
 * end (a pipe or FIFO too), or the generated batch (its expected verdicts
 * into c->gen_expected). A failure is said on stderr, naming the file and
 * the cause. */
zap_status_t zv_load(zv_run_ctx_t *c, zap_transport_t *t, zap_buf_t *buf_p);
/* zv_load on a thread while this (MPI) root watches the other ranks, which
 * it connects to first; a rank that dies meanwhile ends this process. */
zap_status_t zv_load_watched(zv_run_ctx_t *c, zap_transport_t *t, zap_buf_t *buf_p);
/* The waits of c->loaded: inproc (a barrier) and MPI (the root's message). */
void zv_loaded_inproc(zv_run_ctx_t *c);
void zv_loaded_mpi(zv_run_ctx_t *c);

/* zv_rank.c. One rank's whole run: load (root), job, report (root). Returns
 * an exit code. */
int zv_rank_main(zv_run_ctx_t *c, zap_transport_t *t);
/* The last line of a run, once the exit codes of all ranks are known. */
void zv_print_result(const zv_opts_t *o, int code);
#endif
