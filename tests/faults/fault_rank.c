/* zap-fault-rank: collectives and content checks under mpirun over the UCX
 * transport, with an optional rank killed (SIGKILL) at a seeded random point.
 * The scripts in this folder (netns.sh, kill_trials.sh, soak.sh) drive it.
 *
 *   zap-fault-rank [--op allreduce|bcast|scan|mixed|p2p|soak] [--iters N] [--count C]
 *                  [--kill-rank K --seed S] [--kill-file PATH] [--ready-file PATH]
 *
 * Every iteration runs one collective on fresh, rank- and iteration-dependent
 * data and checks the result against a closed form on every element: the
 * allreduce of x_r[i] = (r+1)*(i+1) + iter (int64, SUM) is
 * (i+1)*p(p+1)/2 + p*iter; the broadcast from root iter % p of
 * y[i] = i*31 + iter*7 + root is that value everywhere; the scan of x_r is
 * (i+1)*(r+1)(r+2)/2 + (r+1)*iter on rank r. p2p: each iteration
 * every rank sends P2P_BURST messages of seeded sizes (0 to 4 KiB) to rank+1
 * and receives as many from rank-1, each byte a function of (sender,
 * message number, offset), checked on receipt; soak does p2p, allreduce and
 * bcast every iteration. The ok line counts messages and collectives.
 *
 * With --kill-rank K, rank K picks (from the seed) an iteration in [0, N) and
 * a delay of 0 to 3 ms; at that iteration a helper thread sleeps the delay and
 * raises SIGKILL while the main thread is inside the collective. Before dying
 * it appends its CLOCK_REALTIME kill time to --kill-file. With --ready-file,
 * each rank appends its rank to that file once its communicator exists.
 *
 * Output (stdout, one line per rank and event, parsed by the scripts):
 *   RESULT rank R ok iters N seconds T host H messages M collectives C
 *   RESULT rank R error iter I op OP status NAME at UNIXTIME named-failed-rank yes|no
 *   RESULT rank R wrong iter I op OP index X got G want W
 * A rank that sees an error or a wrong value leaves at once with _exit (its
 * peers may be gone, so MPI_Finalize could wait forever). Exit status: 0 ok,
 * 1 wrong result, 4 error, 2 usage, 3 setup failure. */
#include "zap/coll.h"
#include "zap/ucp.h"
#include "base/log.h"
#include <errno.h>
#include <math.h>
#include <mpi.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static int g_rank = -1;
static int g_kill_rank = -1;
/* Set by the log sink when a logged error names the killed rank as the
 * failed peer ("rank K" after "peer", "from", "to" ...): any mention counts. */
static volatile int g_named;
static char g_needle[32];
/* Set when the transport logged a dead peer or a close whose barrier some
 * rank never reached: MPI_Finalize would then wait for the dead rank. */
static volatile int g_peer_gone;

static void sink(void *ctx, zap_log_level_t level, const char *line)
{
    (void)ctx;
    if (level <= ZAP_LOG_ERROR && g_needle[0] && strstr(line, g_needle) != NULL)
        g_named = 1;
    if (level <= ZAP_LOG_WARN && (strstr(line, "failed") != NULL || strstr(line, "reached close") != NULL ||
                                  strstr(line, "went away") != NULL))
        g_peer_gone = 1;
}

static double realtime(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

static uint64_t splitmix(uint64_t *s)
{
    uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

typedef struct killer {
    unsigned delay_us;
    const char *file;
} killer_t;

static void *killer_main(void *arg)
{
    killer_t *k = arg;
    usleep(k->delay_us);
    if (k->file) {
        FILE *f = fopen(k->file, "a");
        if (f) {
            fprintf(f, "%.6f\n", realtime());
            fclose(f);
        }
    }
    raise(SIGKILL);
    return NULL;
}

static void leave(int code)
{
    fflush(stdout);
    fflush(stderr);
    _exit(code);
}

/* Bounds MPI_Finalize: with a rank that died after the last collective, Open
 * MPI's finalize (a fence over every process) never returns. Without a
 * deadline (ZAP_TIMEOUT unset) the bound is FINALIZE_BOUND_S: a healthy
 * finalize takes well under a second. */
#define FINALIZE_BOUND_S 10.0
static void *finalize_watchdog(void *arg)
{
    double secs = *(double *)arg;
    struct timespec left = {.tv_sec = (time_t)secs, .tv_nsec = (long)((secs - (double)(time_t)secs) * 1e9)};
    while (nanosleep(&left, &left) != 0 && errno == EINTR) {
    }
    fprintf(stderr, "zap-fault-rank: rank %d: MPI_Finalize did not return within %.1f s; leaving without it\n",
            g_rank, secs);
    leave(0);
    return NULL;
}

static void report_error(int iter, const char *op, zap_status_t st)
{
    /* "named" matters only when a rank was killed; otherwise print n/a. */
    printf("RESULT rank %d error iter %d op %s status %s at %.6f named-failed-rank %s\n", g_rank, iter, op,
           zap_status_string(st), realtime(), g_kill_rank < 0 ? "n/a" : g_named ? "yes" : "no");
    leave(4);
}

#define P2P_BURST 16
#define P2P_MAX 4096

static size_t p2p_size(int src, uint64_t msg)
{
    uint64_t s = ((uint64_t)src << 40) ^ msg;
    return (size_t)(splitmix(&s) % (P2P_MAX + 1));
}
static uint8_t p2p_byte(int src, uint64_t msg, size_t i) { return (uint8_t)(src * 131 + msg * 7 + i * 13 + (i >> 8)); }

/* One burst to rank+1 and from rank-1; returns ZAP_OK or the first error
 * (a wrong byte is reported and ends the process). */
static zap_status_t p2p_burst(zap_transport_t *t, int p, int it, uint8_t *sbuf, uint8_t *rbuf, uint64_t *msgs)
{
    int to = (g_rank + 1) % p, from = (g_rank + p - 1) % p;
    zap_request_t *sreq[P2P_BURST], *rreq[P2P_BURST];
    zap_status_t st = ZAP_OK;
    int ns = 0, nr = 0;
    for (int k = 0; k < P2P_BURST && st == ZAP_OK; k++) {
        uint64_t m = (uint64_t)it * P2P_BURST + (uint64_t)k;
        st = zap_transport_irecv(t, from, 7, rbuf + (size_t)k * P2P_MAX, P2P_MAX, &rreq[nr]);
        if (st == ZAP_OK)
            nr++;
        size_t n = p2p_size(g_rank, m);
        for (size_t i = 0; i < n; i++)
            sbuf[(size_t)k * P2P_MAX + i] = p2p_byte(g_rank, m, i);
        if (st == ZAP_OK && (st = zap_transport_isend(t, to, 7, sbuf + (size_t)k * P2P_MAX, n, &sreq[ns])) == ZAP_OK)
            ns++;
    }
    for (int k = 0; k < nr; k++) {
        zap_status_t w = zap_request_wait(rreq[k]);
        if (w == ZAP_OK) {
            uint64_t m = (uint64_t)it * P2P_BURST + (uint64_t)k;
            size_t len = 0, want = p2p_size(from, m);
            zap_request_received(rreq[k], &len);
            const uint8_t *b = rbuf + (size_t)k * P2P_MAX;
            for (size_t i = 0; i < want && len == want; i++)
                if (b[i] != p2p_byte(from, m, i))
                    len = (size_t)-1;
            if (len != want) {
                printf("RESULT rank %d wrong iter %d op p2p index %d got %zu want %zu\n", g_rank, it, k, len, want);
                leave(1);
            }
            (*msgs)++;
        } else if (st == ZAP_OK) {
            st = w;
        }
        zap_request_free(rreq[k]);
    }
    for (int k = 0; k < ns; k++) {
        zap_status_t w = zap_request_wait(sreq[k]);
        if (st == ZAP_OK)
            st = w;
        zap_request_free(sreq[k]);
    }
    return st;
}

int main(int argc, char **argv)
{
    const char *op = "mixed";
    int iters = 100;
    size_t count = 1024;
    uint64_t seed = 1;
    const char *kill_file = NULL, *ready_file = NULL;
    for (int a = 1; a < argc; a++) {
        if (!strcmp(argv[a], "--op") && a + 1 < argc)
            op = argv[++a];
        else if (!strcmp(argv[a], "--iters") && a + 1 < argc)
            iters = atoi(argv[++a]);
        else if (!strcmp(argv[a], "--count") && a + 1 < argc)
            count = strtoull(argv[++a], NULL, 10);
        else if (!strcmp(argv[a], "--kill-rank") && a + 1 < argc)
            g_kill_rank = atoi(argv[++a]);
        else if (!strcmp(argv[a], "--seed") && a + 1 < argc)
            seed = strtoull(argv[++a], NULL, 10);
        else if (!strcmp(argv[a], "--kill-file") && a + 1 < argc)
            kill_file = argv[++a];
        else if (!strcmp(argv[a], "--ready-file") && a + 1 < argc)
            ready_file = argv[++a];
        else {
            fprintf(stderr, "usage: zap-fault-rank [--op allreduce|bcast|scan|mixed|p2p|soak] [--iters N] [--count C] "
                            "[--kill-rank K --seed S] [--kill-file PATH] [--ready-file PATH]\n");
            return 2;
        }
    }
    int do_p2p = !strcmp(op, "p2p") || !strcmp(op, "soak");
    int do_ar = !strcmp(op, "allreduce") || !strcmp(op, "mixed") || !strcmp(op, "soak");
    int do_bc = !strcmp(op, "bcast") || !strcmp(op, "mixed") || !strcmp(op, "soak");
    int do_scan = !strcmp(op, "scan");
    if (iters < 1 || count < 1 || (!do_ar && !do_bc && !do_p2p && !do_scan)) {
        fprintf(stderr, "zap-fault-rank: bad --op, --iters or --count\n");
        return 2;
    }
    MPI_Init(&argc, &argv);
    int p = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &g_rank);
    MPI_Comm_size(MPI_COMM_WORLD, &p);
    if (g_kill_rank >= 0)
        snprintf(g_needle, sizeof(g_needle), "rank %d", g_kill_rank);
    zap_log_set_sink(sink, NULL);

    zap_transport_t *t = NULL;
    zap_comm_t *comm = NULL;
    zap_status_t st = zap_ucp_transport_create(MPI_COMM_WORLD, NULL, &t);
    if (st == ZAP_OK)
        st = zap_comm_create(t, &comm);
    if (st != ZAP_OK) {
        printf("RESULT rank %d setup-failed status %s\n", g_rank, zap_status_string(st));
        leave(3);
    }

    if (ready_file) {
        /* One line per rank once its transport and communicator are up, for
         * scripts that inject faults only after the start-up. */
        FILE *f = fopen(ready_file, "a");
        if (f) {
            fprintf(f, "%d\n", g_rank);
            fclose(f);
        }
    }

    /* The victim's kill point, from the seed (the same on every rank, so the
     * log can say where it was). */
    uint64_t s = seed;
    int kill_iter = (int)(splitmix(&s) % (uint64_t)iters);
    unsigned delay_us = (unsigned)(splitmix(&s) % 3000);
    killer_t killer = {delay_us, kill_file};
    if (g_rank == 0 && g_kill_rank >= 0)
        printf("PLAN kill rank %d at iter %d after %u us (seed %llu)\n", g_kill_rank, kill_iter, delay_us,
               (unsigned long long)seed);

    int64_t *x = malloc(count * sizeof(int64_t)), *y = malloc(count * sizeof(int64_t));
    uint8_t *p2p_s = malloc((size_t)P2P_BURST * P2P_MAX), *p2p_r = malloc((size_t)P2P_BURST * P2P_MAX);
    uint64_t msgs = 0, colls = 0;
    if (!x || !y || !p2p_s || !p2p_r)
        leave(3);
    double t0 = realtime();
    for (int it = 0; it < iters; it++) {
        if (g_rank == g_kill_rank && it == kill_iter) {
            pthread_t th;
            pthread_create(&th, NULL, killer_main, &killer);
        }
        if (do_p2p) {
            st = p2p_burst(t, p, it, p2p_s, p2p_r, &msgs);
            if (st != ZAP_OK)
                report_error(it, "p2p", st);
            if (!do_ar && !do_bc)
                continue;
        }
        if (do_scan) {
            colls++;
            for (size_t i = 0; i < count; i++)
                x[i] = (int64_t)(g_rank + 1) * (int64_t)(i + 1) + it;
            st = zap_scan(comm, x, y, count, ZAP_DT_INT64, ZAP_OP_SUM);
            if (st != ZAP_OK)
                report_error(it, "scan", st);
            for (size_t i = 0; i < count; i++) {
                int64_t want = (int64_t)(i + 1) * (g_rank + 1) * (g_rank + 2) / 2 + (int64_t)(g_rank + 1) * it;
                if (y[i] != want) {
                    printf("RESULT rank %d wrong iter %d op scan index %zu got %lld want %lld\n", g_rank, it, i,
                           (long long)y[i], (long long)want);
                    leave(1);
                }
            }
            continue;
        }
        int soak = do_p2p && do_ar && do_bc;
        for (int pass = 0; pass < (soak ? 2 : 1); pass++) {
        int which_ar = soak ? pass == 0 : do_ar && (!do_bc || it % 2 == 0);
        colls++;
        if (which_ar) {
            for (size_t i = 0; i < count; i++)
                x[i] = (int64_t)(g_rank + 1) * (int64_t)(i + 1) + it;
            st = zap_allreduce(comm, x, y, count, ZAP_DT_INT64, ZAP_OP_SUM);
            if (st != ZAP_OK)
                report_error(it, "allreduce", st);
            for (size_t i = 0; i < count; i++) {
                int64_t want = (int64_t)(i + 1) * p * (p + 1) / 2 + (int64_t)p * it;
                if (y[i] != want) {
                    printf("RESULT rank %d wrong iter %d op allreduce index %zu got %lld want %lld\n", g_rank, it,
                           i, (long long)y[i], (long long)want);
                    leave(1);
                }
            }
        } else {
            int root = it % p;
            for (size_t i = 0; i < count; i++)
                y[i] = g_rank == root ? (int64_t)i * 31 + it * 7 + root : -1;
            st = zap_bcast(comm, y, count, ZAP_DT_INT64, root);
            if (st != ZAP_OK)
                report_error(it, "bcast", st);
            for (size_t i = 0; i < count; i++) {
                int64_t want = (int64_t)i * 31 + it * 7 + root;
                if (y[i] != want) {
                    printf("RESULT rank %d wrong iter %d op bcast index %zu got %lld want %lld\n", g_rank, it, i,
                           (long long)y[i], (long long)want);
                    leave(1);
                }
            }
        }
        }
    }
    if (g_rank == g_kill_rank) {
        /* The kill point fell after the last collective's work: die now. */
        pause();
    }
    char host[64] = "?";
    gethostname(host, sizeof(host) - 1);
    printf("RESULT rank %d ok iters %d seconds %.3f host %s messages %llu collectives %llu\n", g_rank, iters,
           realtime() - t0, host, (unsigned long long)msgs, (unsigned long long)colls);
    fflush(stdout);
    free(x);
    free(y);
    free(p2p_s);
    free(p2p_r);
    zap_comm_destroy(comm);
    zap_transport_close(t);
    /* The results are in; what is left is teardown, which must end even when
     * a rank died late (after its last collective): then Open MPI's finalize
     * would wait for it forever. */
    if (g_peer_gone) {
        fprintf(stderr, "zap-fault-rank: rank %d: a peer went away; leaving without MPI_Finalize\n", g_rank);
        leave(0);
    }
    static double fin_secs;
    double deadline = zap_timeout_seconds();
    fin_secs = (isfinite(deadline) ? deadline : FINALIZE_BOUND_S) + 1.0;
    pthread_t wd;
    if (pthread_create(&wd, NULL, finalize_watchdog, &fin_secs) == 0)
        pthread_detach(wd);
    MPI_Finalize();
    return 0;
}
