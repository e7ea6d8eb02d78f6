/* Loading the root's batch for zap-verify run (zv_run.h), and the waits of
 * the other ranks meanwhile.
 *
 * A batch file is read to its end whatever it is: a regular file into one
 * pool buffer of its size, a pipe, FIFO or terminal (no size known before
 * the end) into a pool buffer that doubles as it fills. Nothing is ever read
 * past what arrived; a directory, a read error or a pool too small for the
 * batch is said by name. */
#include "zv_run.h"
#include "zap/pool.h"
#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* The first buffer of a batch read from a pipe; it doubles as it fills. */
#define ZV_STREAM_FIRST ((size_t)64 << 10)

#define LOADED_TAG 0x7a76
#define HELLO_TAG 0x7a77
#define WATCH_TAG 0x7a78 /* never sent: a receive that ends only when its peer fails */

/* A pool buffer of bytes for what (the batch file, the generated batch), or
 * the reason there is none, on stderr. */
static zap_status_t pool_buffer(zap_transport_t *t, const char *what, uint64_t bytes, zap_buf_t *buf_p)
{
    zap_status_t s = bytes > SIZE_MAX ? ZAP_ERR_NO_MEMORY : zap_transport_alloc(t, bytes ? (size_t)bytes : 1, buf_p);
    if (s == ZAP_OK)
        return s;
    zap_pool_stats_t st;
    if (s == ZAP_ERR_NO_MEMORY && zap_pool_stats(zap_transport_pool(t), &st) == ZAP_OK && st.budget_bytes &&
        st.budget_bytes < bytes + st.in_use_bytes)
        fprintf(stderr,
                "zap-verify: cannot load %s: the pool budget is too small for %llu bytes (budget %llu bytes, %llu in "
                "use; ZAP_UMA_POOL_BYTES sets it)\n",
                what, (unsigned long long)bytes, (unsigned long long)st.budget_bytes,
                (unsigned long long)st.in_use_bytes);
    else
        fprintf(stderr, "zap-verify: cannot load %s: no pool buffer for %llu bytes: %s\n", what,
                (unsigned long long)bytes, zap_status_string(s));
    return s;
}

/* Reads up to len bytes into dst until the end of fd; the bytes read, or -1
 * (errno set) on an error. */
static ssize_t read_upto(int fd, uint8_t *dst, size_t len)
{
    size_t got = 0;
    while (got < len) {
        ssize_t n = read(fd, dst + got, len - got);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            return -1;
        if (n == 0)
            break;
        got += (size_t)n;
    }
    return (ssize_t)got;
}

/* A regular file of size bytes. */
static zap_status_t read_regular(zap_transport_t *t, int fd, const char *path, uint64_t size, zap_buf_t *buf_p)
{
    zap_status_t s = pool_buffer(t, path, size, buf_p);
    if (s != ZAP_OK)
        return s;
    ssize_t got = read_upto(fd, buf_p->ptr, (size_t)size);
    if (got < 0 || (uint64_t)got != size) {
        fprintf(stderr, "zap-verify: cannot load %s: read %lld of its %llu bytes: %s\n", path, (long long)got,
                (unsigned long long)size, got < 0 ? strerror(errno) : "the file ended early");
        zap_buf_free(buf_p);
        return ZAP_ERR_NOT_FOUND;
    }
    buf_p->size = (size_t)size;
    return ZAP_OK;
}

/* A pipe, FIFO or other stream: read to its end into a buffer that doubles
 * when full (the old one is copied and freed, so up to three times the bytes
 * read so far are held while it grows, and less than twice the batch at the
 * end; a regular file, whose size is known, takes one buffer of it). */
static zap_status_t read_stream(zap_transport_t *t, int fd, const char *path, zap_buf_t *buf_p)
{
    zap_buf_t buf = {0};
    size_t cap = ZV_STREAM_FIRST, used = 0;
    zap_status_t s = pool_buffer(t, path, cap, &buf);
    while (s == ZAP_OK) {
        if (used == cap) {
            zap_buf_t bigger = {0};
            if (cap > SIZE_MAX / 2 || (s = pool_buffer(t, path, (uint64_t)cap * 2, &bigger)) != ZAP_OK)
                break;
            memcpy(bigger.ptr, buf.ptr, used);
            zap_buf_free(&buf);
            buf = bigger;
            cap *= 2;
        }
        ssize_t n = read_upto(fd, (uint8_t *)buf.ptr + used, cap - used);
        if (n < 0) {
            fprintf(stderr, "zap-verify: cannot load %s: read error after %zu bytes: %s\n", path, used,
                    strerror(errno));
            s = ZAP_ERR_NOT_FOUND;
        } else if (n == 0) {
            break; /* the end */
        } else {
            used += (size_t)n;
        }
    }
    if (s != ZAP_OK) {
        zap_buf_free(&buf);
        return s;
    }
    buf.size = used;
    *buf_p = buf;
    return ZAP_OK;
}

/* The batch file of --batch, whatever kind of file it is. */
static zap_status_t load_file(const char *path, zap_transport_t *t, zap_buf_t *buf_p)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        fprintf(stderr, "zap-verify: cannot open %s: %s\n", path, strerror(errno));
        return ZAP_ERR_NOT_FOUND;
    }
    struct stat sb;
    zap_status_t s;
    if (fstat(fd, &sb) != 0) {
        fprintf(stderr, "zap-verify: cannot load %s: %s\n", path, strerror(errno));
        s = ZAP_ERR_NOT_FOUND;
    } else if (S_ISDIR(sb.st_mode)) {
        fprintf(stderr, "zap-verify: cannot load %s: it is a directory, not a batch file\n", path);
        s = ZAP_ERR_INVALID_PARAM;
    } else if (S_ISREG(sb.st_mode)) {
        s = read_regular(t, fd, path, (uint64_t)sb.st_size, buf_p);
    } else {
        s = read_stream(t, fd, path, buf_p);
    }
    close(fd);
    return s;
}

/* The batch of --gen N, generated into pool memory. */
static zap_status_t load_generated(zv_run_ctx_t *c, zap_transport_t *t, zap_buf_t *buf_p)
{
    zv_opts_t *o = c->o;
    zap_batch_layout_t l;
    zap_status_t s = zap_gen_layout(&o->gen, &l);
    if (s != ZAP_OK)
        return s;
    if ((s = pool_buffer(t, "the generated batch", l.total_bytes, buf_p)) != ZAP_OK)
        return s;
    c->gen_expected = calloc((size_t)((o->gen.items + 31) / 32) + 1, 4);
    if (!c->gen_expected)
        return ZAP_ERR_NO_MEMORY;
    if (c->tty)
        fprintf(stderr, "zap-verify: generating %llu items...", (unsigned long long)o->gen.items);
    s = zap_gen_batch(&o->gen, buf_p->ptr, l.total_bytes, c->gen_expected, NULL);
    if (c->tty)
        fprintf(stderr, "\r%60s\r", "");
    buf_p->size = (size_t)l.total_bytes;
    return s;
}

zap_status_t zv_load(zv_run_ctx_t *c, zap_transport_t *t, zap_buf_t *buf_p)
{
    double t0 = zv_now();
    zap_status_t s = c->o->batch ? load_file(c->o->batch, t, buf_p) : load_generated(c, t, buf_p);
    c->load_seconds = zv_now() - t0;
    return s;
}

/* ---- the other ranks' wait ---------------------------------------------------
 * Non-root ranks wait for a 0-byte message the root sends each of them once
 * the batch is loaded or generated. Over the transport, not an MPI barrier:
 * a root that dies while loading then shows up as a failed peer on the
 * receive (a barrier with a dead member waits forever), and a non-root rank
 * that dies meanwhile holds nobody up (the job's collectives report it). The
 * receive is tested every 2 ms with a sleep between (MPI_Barrier busy-polls
 * in Open MPI), so the waiting ranks leave the cores to the root's generator. */

static void lost_peer_exit(int rank, const char *what, zap_status_t s)
{
    fprintf(stderr, "zap-verify: rank %d: %s: %s (the log line above names the rank)\n", rank, what,
            zap_status_string(s));
    fflush(NULL);
    _exit(ZV_EXIT_ERROR); /* as after a lost peer (zv_run.c) */
}

void zv_loaded_inproc(zv_run_ctx_t *c)
{
    pthread_barrier_wait(&c->barrier);
}

void zv_loaded_mpi(zv_run_ctx_t *c)
{
    zap_transport_t *t = c->t;
    const int root = c->o->vp.root, rank = zap_transport_rank(t), size = zap_transport_size(t);
    if (rank == root) {
        for (int r = 0; r < size; r++) {
            zap_request_t *req = NULL;
            /* A send that fails (a dead rank) is the job's to report. */
            if (r != root && zap_transport_isend(t, r, LOADED_TAG, NULL, 0, &req) == ZAP_OK)
                zap_request_free(req);
        }
        return;
    }
    struct timespec ts = {0, 2 * 1000 * 1000};
    zap_request_t *req = NULL, *hello = NULL;
    int done = 0;
    /* The hello connects this rank to the root at once (zv_load_watched). */
    zap_status_t s = zap_transport_isend(t, root, HELLO_TAG, NULL, 0, &hello);
    if (s == ZAP_OK)
        s = zap_transport_irecv(t, root, LOADED_TAG, NULL, 0, &req);
    while (s == ZAP_OK && (s = zap_request_test(req, &done)) == ZAP_OK && !done)
        nanosleep(&ts, NULL);
    if (s == ZAP_OK)
        s = zap_request_wait(hello); /* done long ago: the root has received it */
    zap_request_free(req);
    zap_request_free(hello);
    if (s != ZAP_OK) {
        char what[96];
        snprintf(what, sizeof(what), "waiting for the root (rank %d) to load the batch", root);
        lost_peer_exit(rank, what, s);
    }
}

/* ---- the root's watch while it loads ---------------------------------------
 * While the root loads or generates the batch (seconds, no zap call of its
 * own), it must still notice a rank that dies: UCX sees a dead peer only
 * over an endpoint it has and only while it is progressed. So the root
 * connects to every rank before loading (each sends it a 0-byte hello), keeps
 * a receive that is never matched posted from each (the transport fails it
 * when that peer fails), and its main thread tests them every 2 ms while a
 * thread loads. A failure is logged by the transport naming the rank, and
 * the notices it sends before this rank leaves tell the waiting ranks (whose
 * only endpoint is to the root) which rank failed first. A star, not all
 * pairs: a rank keeps one connection per peer it talks to, and the job's
 * scatter connects the root to everyone anyway. */

typedef struct loader {
    zv_run_ctx_t *c;
    zap_transport_t *t;
    zap_buf_t *buf;
    zap_status_t s;
    atomic_int done;
} loader_t;

static void *loader_main(void *arg)
{
    loader_t *l = arg;
    l->s = zv_load(l->c, l->t, l->buf);
    atomic_store(&l->done, 1);
    return NULL;
}

/* Every pending request of reqs[0..n) tested once (each test progresses the
 * transport); the first error, or ZAP_OK. *pending_p counts those not done. */
static zap_status_t test_all(zap_request_t **reqs, int n, int *pending_p)
{
    int pending = 0;
    for (int i = 0; i < n; i++) {
        int done = 0;
        if (reqs[i] == NULL)
            continue;
        zap_status_t s = zap_request_test(reqs[i], &done);
        if (s != ZAP_OK)
            return s;
        pending += !done;
    }
    if (pending_p)
        *pending_p = pending;
    return ZAP_OK;
}

/* Loads on a thread while testing the watch and hello receives. */
static zap_status_t load_while_watching(loader_t *l, zap_request_t **hello, zap_request_t **watch, int size,
                                        int rank)
{
    pthread_t tid;
    int threaded = pthread_create(&tid, NULL, loader_main, l) == 0;
    if (!threaded)
        loader_main(l);
    struct timespec ts = {0, 2 * 1000 * 1000};
    zap_status_t s;
    while (!atomic_load(&l->done)) {
        if ((s = test_all(watch, size, NULL)) != ZAP_OK || (s = test_all(hello, size, NULL)) != ZAP_OK)
            lost_peer_exit(rank, "a rank failed while the root loaded the batch", s);
        nanosleep(&ts, NULL);
    }
    if (threaded)
        pthread_join(tid, NULL);
    return l->s;
}

zap_status_t zv_load_watched(zv_run_ctx_t *c, zap_transport_t *t, zap_buf_t *buf_p)
{
    const int rank = zap_transport_rank(t), size = zap_transport_size(t);
    zap_request_t **hello = calloc((size_t)size, sizeof(*hello)), **watch = calloc((size_t)size, sizeof(*watch));
    if (!hello || !watch) {
        free(hello);
        free(watch);
        return ZAP_ERR_NO_MEMORY; /* the job then fails on every rank (zv_rank_main) */
    }
    zap_status_t s = ZAP_OK;
    for (int r = 0; r < size && s == ZAP_OK; r++)
        if (r != rank && (s = zap_transport_irecv(t, r, HELLO_TAG, NULL, 0, &hello[r])) == ZAP_OK)
            s = zap_transport_irecv(t, r, WATCH_TAG, NULL, 0, &watch[r]);
    if (s != ZAP_OK)
        lost_peer_exit(rank, "connecting to the ranks before loading the batch", s);
    loader_t l = {.c = c, .t = t, .buf = buf_p, .s = ZAP_OK};
    atomic_init(&l.done, 0);
    zap_status_t load = load_while_watching(&l, hello, watch, size, rank);
    for (int r = 0; r < size; r++)
        zap_request_free(watch[r]); /* cancels it */
    /* Every rank sent its hello right after the transport was created. */
    struct timespec ts = {0, 2 * 1000 * 1000};
    int pending = 1;
    double deadline = zap_clock_now() + zap_timeout_seconds();
    while ((s = test_all(hello, size, &pending)) == ZAP_OK && pending && zap_clock_now() < deadline)
        nanosleep(&ts, NULL);
    if (s == ZAP_OK && pending)
        s = ZAP_ERR_TIMED_OUT;
    if (s != ZAP_OK)
        lost_peer_exit(rank, "waiting for every rank's hello", s);
    for (int r = 0; r < size; r++)
        zap_request_free(hello[r]);
    free(hello);
    free(watch);
    return load;
}
