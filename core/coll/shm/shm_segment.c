/* The shared-memory segment of a communicator whose ranks share a host
 * (shm.h). Made by rank 0 under a random name, mapped by the others, unlinked
 * as soon as every rank has mapped it (or failed to), so nothing is left in
 * /dev/shm by a job that dies later. The exchanges between those steps are
 * the communicator's setup's (comm_setup.c). */
#define _GNU_SOURCE
#include "coll/shm/shm.h"
#include "base/log.h"
#include <errno.h>
#include <stdalign.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

#define SHM_MAGIC UINT64_C(0x7a61702d73686d33) /* "zap-shm3": the layout with banks, their count in the head */

typedef struct seg_head {
    uint64_t magic;
    uint64_t token;
    int32_t size;
    uint32_t banks;     /* the maker's zap_coll_shm_banks_for */
    uint64_t big_bytes; /* the large area's per-rank size */
    _Atomic uint64_t big_state; /* the large area's reserved bytes per slot | ZAP_COLL_SHM_LARGE_FULL (rank 0 writes) */
    pid_t pids[ZAP_COLL_SHM_MAX_RANKS];
    uint64_t bases[ZAP_COLL_SHM_MAX_RANKS]; /* where each rank mapped the segment: the single-copy probe reads there */
    /* Revocation: the lowest sequence revoked (0: none), on a line of its
     * own (read at every completion), then each rank's entry: sequence,
     * (status << 32 | culprit). */
    alignas(64) _Atomic uint64_t revoked;
    alignas(64) _Atomic uint64_t revoke_entry[2 * ZAP_COLL_SHM_MAX_RANKS];
} seg_head_t;
_Static_assert(sizeof(seg_head_t) <= ZAP_COLL_SHM_SLOT_BYTES, "the head fits its page");
_Static_assert(offsetof(zap_coll_shm_slot_t, payload) + ZAP_COLL_SHM_PAYLOAD <= ZAP_COLL_SHM_SLOT_BYTES,
               "a slot holds its payload");
_Static_assert(ZAP_COLL_SHM_PAYLOAD + sizeof(zap_coll_hdr_t) <= ZAP_COLL_AGREE_INLINE_BYTES,
               "the result fits the exchange's inline area");
typedef zap_coll_shm_ref_t seg_ref_t;

/* The large area may take at most this much of /dev/shm per communicator. */
#define BIG_TOTAL_MAX ((size_t)64 << 20)

#define DONE_STRIDE 64 /* bytes: a done line per rank */
static size_t done_bytes(int p)
{
    size_t b = DONE_STRIDE * (size_t)p;
    return (b + ZAP_COLL_SHM_SLOT_BYTES - 1) / ZAP_COLL_SHM_SLOT_BYTES * ZAP_COLL_SHM_SLOT_BYTES;
}
static size_t banks_end(int p, unsigned banks) { return (size_t)ZAP_COLL_SHM_SLOT_BYTES * (1 + banks * (size_t)p); }
static size_t small_bytes(int p, unsigned banks) { return banks_end(p, banks) + done_bytes(p); }
static size_t ctl_bytes(int p)
{
    size_t b = sizeof(zap_coll_shm_ctl_t) * (size_t)p;
    return (b + ZAP_COLL_SHM_SLOT_BYTES - 1) / ZAP_COLL_SHM_SLOT_BYTES * ZAP_COLL_SHM_SLOT_BYTES;
}
static size_t seg_bytes(int p, unsigned banks, size_t big)
{
    return small_bytes(p, banks) + (big > 0 ? ctl_bytes(p) + big * ((size_t)p + 1) : 0);
}

/* Above 4 ranks the large allreduce loses to the ring (and to the
 * single-copy allreduce) beyond 512 KiB, while up to 4 ranks it wins to 8 MiB
 * and more (docs/collectives.md, "Selection"); the broadcast takes the same
 * cap. */
#define BIG_MANY_RANKS_MAX ((size_t)512 << 10)

/* The large area's per-rank size for p ranks under the setting: at most
 * BIG_TOTAL_MAX for the p inputs and the result, at most BIG_MANY_RANKS_MAX
 * above 4 ranks, in whole 4 KiB pages, and none below 64 KiB (the small
 * slots and the transport cover that). */
static size_t big_bytes_for(int p, uint64_t setting)
{
    size_t cap = BIG_TOTAL_MAX / ((size_t)p + 1);
    if (p > 4 && cap > BIG_MANY_RANKS_MAX)
        cap = BIG_MANY_RANKS_MAX;
    size_t b = setting < cap ? (size_t)setting : cap;
    b = b / ZAP_COLL_SHM_SLOT_BYTES * ZAP_COLL_SHM_SLOT_BYTES;
    return b < ((size_t)64 << 10) ? 0 : b;
}

static void *map_fd(int fd, size_t bytes)
{
    void *m = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    return m == MAP_FAILED ? NULL : m;
}

/* Rank 0: a fresh segment, its slots and flags reserved (posix_fallocate,
 * zeroed: every sequence number 0), the large area sized but not reserved:
 * reserving zeroes every page, tens of milliseconds for the whole area,
 * which a communicator that never moves a large vector should not pay
 * (docs/collectives.md, "Shared memory"). Large calls reserve it as far as
 * they need (zap_coll_shm_reserve_large). *fd_p keeps the file for that. */
static void *create(int p, unsigned banks, size_t big, seg_ref_t *ref, int *fd_p)
{
    uint64_t token = 0;
    if (getrandom(&token, sizeof(token), 0) != (ssize_t)sizeof(token))
        return NULL;
    snprintf(ref->name, sizeof(ref->name), "/zap-coll-%d-%016llx", (int)getpid(), (unsigned long long)token);
    int fd = shm_open(ref->name, O_RDWR | O_CREAT | O_EXCL, 0600);
    if (fd < 0) {
        zap_info("coll: shared memory for collectives not available (shm_open %s: %s)", ref->name, strerror(errno));
        ref->name[0] = '\0';
        return NULL;
    }
    void *m = NULL;
    size_t eager = small_bytes(p, banks) + (big > 0 ? ctl_bytes(p) : 0);
    int err = ftruncate(fd, (off_t)seg_bytes(p, banks, big)) == 0 ? posix_fallocate(fd, 0, (off_t)eager) : errno;
    if (err == 0)
        m = map_fd(fd, seg_bytes(p, banks, big));
    else
        zap_info("coll: shared memory for collectives not available (%zu bytes: %s)", eager, strerror(err));
    if (m == NULL) {
        close(fd);
        shm_unlink(ref->name);
        ref->name[0] = '\0';
        return NULL;
    }
    *fd_p = fd;
    seg_head_t *h = m;
    h->token = token;
    h->size = p;
    h->banks = banks;
    h->big_bytes = big;
    h->magic = SHM_MAGIC;
    ref->token = token;
    return m;
}

/* Another rank: rank 0's segment if this rank sees it (same host) and it is
 * the one rank 0 made (magic, token and size). */
static void *open_ref(int p, const seg_ref_t *ref)
{
    if (ref->name[0] != '/' || memchr(ref->name, '\0', sizeof(ref->name)) == NULL)
        return NULL;
    int fd = shm_open(ref->name, O_RDWR, 0);
    if (fd < 0)
        return NULL; /* another host: the usual case, not an error */
    struct stat sb;
    void *m = NULL;
    if (fstat(fd, &sb) == 0 && (size_t)sb.st_size >= small_bytes(p, zap_coll_shm_banks(p)))
        m = map_fd(fd, (size_t)sb.st_size);
    close(fd);
    const seg_head_t *h = m;
    if (m != NULL && (h->magic != SHM_MAGIC || h->token != ref->token || h->size != p ||
                      (h->banks != zap_coll_shm_banks_for(p, false) && h->banks != zap_coll_shm_banks_for(p, true)) ||
                      h->big_bytes > BIG_TOTAL_MAX || seg_bytes(p, h->banks, h->big_bytes) != (size_t)sb.st_size)) {
        munmap(m, (size_t)sb.st_size);
        m = NULL;
    }
    return m;
}

static bool alive(pid_t pid)
{
    return pid > 0 && (kill(pid, 0) == 0 || errno == EPERM);
}

/* Whether this process (rank r) may read rank q's memory: the segment's
 * magic, read from where q mapped it. Fails where ptrace rules forbid (Yama's
 * ptrace_scope 1 and up without CAP_SYS_PTRACE, a seccomp filter, another
 * user). */
static bool can_read_peer(const seg_head_t *h, int r, int q)
{
    uint64_t v = 0;
    struct iovec local = {&v, sizeof(v)}, remote = {(void *)(uintptr_t)h->bases[q], sizeof(v)};
    ssize_t n = process_vm_readv(h->pids[q], &local, 1, &remote, 1, 0);
    if (n == (ssize_t)sizeof(v) && v == SHM_MAGIC)
        return true;
    zap_info("coll: rank %d: single-copy reads of rank %d's memory are not available (process_vm_readv: %s); large "
             "allreduces take the shared-memory area or the transport",
             r, q, n < 0 ? strerror(errno) : "wrong bytes");
    return false;
}

void zap_coll_shm_make(int p, unsigned banks, uint64_t large_bytes, zap_coll_shm_ref_t *ref, zap_coll_shm_map_t *m)
{
    memset(ref, 0, sizeof(*ref));
    m->fd = -1;
    m->base = create(p, banks, big_bytes_for(p, large_bytes), ref, &m->fd);
}

void zap_coll_shm_map(int p, const zap_coll_shm_ref_t *ref, zap_coll_shm_map_t *m)
{
    m->fd = -1;
    m->base = open_ref(p, ref);
}

void zap_coll_shm_enter(const zap_coll_shm_map_t *m, int rank)
{
    if (m->base == NULL)
        return;
    ((seg_head_t *)m->base)->pids[rank] = getpid();
    ((seg_head_t *)m->base)->bases[rank] = (uint64_t)(uintptr_t)m->base;
}

void zap_coll_shm_unlink(const zap_coll_shm_ref_t *ref)
{
    if (ref->name[0] != '\0')
        shm_unlink(ref->name);
}

void zap_coll_shm_check(const zap_coll_shm_map_t *m, int rank, int p, bool want_cma, int32_t ok[2])
{
    /* A rank that cannot see a peer's pid (another pid namespace) could not
     * tell a dead peer from a live one. Single-copy reads use the flags,
     * which exist only with a large area. */
    const seg_head_t *h = m->base;
    ok[0] = h != NULL;
    for (int q = 0; ok[0] && q < p; q++)
        ok[0] = alive(h->pids[q]);
    ok[1] = ok[0] && want_cma && h->big_bytes > 0;
    for (int q = 0; ok[1] && q < p; q++)
        ok[1] = q == rank || can_read_peer(h, rank, q);
}

/* Makes the segment's eager part (slots, done lines, the large area's flags)
 * ready for this process, now. Exchange k uses bank k % banks, so otherwise
 * each of a communicator's first banks-many calls would meet pages it has not
 * touched yet, and a first touch costs microseconds, more than a whole small
 * call: a program timing its first calls saw them run several times slower
 * (docs/collectives.md, "Shared memory"). The page tables are filled in one
 * go (MADV_POPULATE_WRITE, Linux 5.14), then every page is read once and the
 * pages this rank writes (its slot in each bank, its done line, its flags)
 * are written once, by an atomic add of zero to their sequence words: in a
 * virtual machine like the CI one, a process's first access to a page costs
 * a trap even with the page mapped (and where madvise is refused, the read's
 * fault maps shared memory writable). Other ranks may be using the segment
 * already; the adds change no value. Pages this rank only reads are not
 * written. */
static void prefault(zap_coll_shm_t *s, size_t bytes)
{
    unsigned char *base = s->base;
#ifdef MADV_POPULATE_WRITE
    (void)madvise(base, bytes, MADV_POPULATE_WRITE);
#endif
    for (size_t at = 0; at < bytes; at += ZAP_COLL_SHM_SLOT_BYTES)
        (void)*(volatile const unsigned char *)(base + at);
    for (uint64_t k = 0; k < s->banks; k++)
        (void)atomic_fetch_add_explicit(&zap_coll_shm_slot(s, k, s->rank)->seq, 0, memory_order_relaxed);
    (void)atomic_fetch_add_explicit(zap_coll_shm_done_line(s, s->rank), 0, memory_order_relaxed);
    if (s->ctl != NULL) { /* a line each: whatever page boundary crosses the rank's flags */
        zap_coll_shm_ctl_t *c = &s->ctl[s->rank];
        (void)atomic_fetch_add_explicit(&c->in_seq, 0, memory_order_relaxed);
        (void)atomic_fetch_add_explicit(&c->red_seq, 0, memory_order_relaxed);
        (void)atomic_fetch_add_explicit(&c->fin_seq, 0, memory_order_relaxed);
    }
}

zap_status_t zap_coll_shm_adopt(zap_coll_shm_map_t *m, int rank, int p, bool cma, zap_coll_shm_t **shm_p)
{
    const seg_head_t *h = m->base;
    zap_coll_shm_t *s = calloc(1, sizeof(*s));
    if (s == NULL) {
        /* The others go ahead with the segment; this rank cannot. */
        zap_error("coll: rank %d: no memory for the shared segment's state", rank);
        return ZAP_ERR_NO_MEMORY;
    }
    s->base = m->base;
    s->big_fd = m->fd;
    s->big_state = &((seg_head_t *)m->base)->big_state;
    s->big_bytes = (size_t)h->big_bytes;
    s->bytes = seg_bytes(p, h->banks, s->big_bytes);
    s->rank = rank;
    s->size = p;
    s->banks = h->banks;
    s->pids = h->pids;
    s->done_line = (_Atomic uint64_t *)((unsigned char *)m->base + banks_end(p, h->banks));
    s->revoked = &((seg_head_t *)m->base)->revoked;
    s->revoke_entry = ((seg_head_t *)m->base)->revoke_entry;
    s->cma = cma;
    if (s->big_bytes > 0) {
        unsigned char *at = (unsigned char *)m->base + small_bytes(p, h->banks);
        s->ctl = (zap_coll_shm_ctl_t *)at;
        s->big_in = at + ctl_bytes(p);
        s->big_out = s->big_in + s->big_bytes * (size_t)p;
    }
    prefault(s, small_bytes(p, h->banks) + (s->big_bytes > 0 ? ctl_bytes(p) : 0));
    m->base = NULL;
    m->fd = -1;
    *shm_p = s;
    zap_debug("coll: rank %d: a communicator of %d ranks exchanges in shared memory (up to %zu bytes)", rank, p,
              s->big_bytes > 0 ? s->big_bytes : (size_t)ZAP_COLL_SHM_PAYLOAD);
    return ZAP_OK;
}

void zap_coll_shm_unmap(zap_coll_shm_map_t *m)
{
    if (m->base != NULL) {
        const seg_head_t *h = m->base;
        munmap(m->base, seg_bytes(h->size, h->banks, h->big_bytes));
    }
    if (m->fd >= 0)
        close(m->fd);
    m->base = NULL;
    m->fd = -1;
}

size_t zap_coll_shm_bytes(const zap_coll_shm_t *s)
{
    if (s == NULL)
        return 0;
    return s->big_bytes > ZAP_COLL_SHM_MAX_BYTES ? s->big_bytes : ZAP_COLL_SHM_MAX_BYTES;
}

uint64_t zap_coll_shm_reserve_large(zap_coll_shm_t *s, size_t bytes)
{
    uint64_t have = s->big_known & ~ZAP_COLL_SHM_LARGE_FULL;
    /* Doubling keeps a run of growing calls to a few reservations, and a
     * first large call (the verification job's verdict bitmap) pays for what
     * it needs, not the whole area (docs/collectives.md, "Shared memory"). */
    size_t want = (bytes + ZAP_COLL_SHM_SLOT_BYTES - 1) / ZAP_COLL_SHM_SLOT_BYTES * ZAP_COLL_SHM_SLOT_BYTES;
    if (want < 2 * have)
        want = (size_t)(2 * have);
    if (want > s->big_bytes)
        want = s->big_bytes;
    off_t base = (off_t)(s->big_in - (unsigned char *)s->base);
    int err = 0;
    for (int q = 0; q <= s->size && err == 0; q++) /* the p inputs, then the result */
        err = posix_fallocate(s->big_fd, base + (off_t)((size_t)q * s->big_bytes + have), (off_t)(want - have));
    uint64_t state = err == 0 ? (uint64_t)want : have | ZAP_COLL_SHM_LARGE_FULL;
    if (err != 0)
        zap_info("coll: rank 0: no room in /dev/shm for %zu more bytes of the large shared-memory area (%s); "
                 "allreduces and broadcasts above %llu bytes on this communicator go over the transport",
                 (size_t)(want - have) * (size_t)(s->size + 1), strerror(err), (unsigned long long)have);
    atomic_store_explicit(s->big_state, state, memory_order_release);
    return state;
}

void zap_coll_shm_detach(zap_coll_shm_t *shm)
{
    if (shm == NULL)
        return;
    free(shm->cma_scratch);
    free(shm->cma_pulled);
    munmap(shm->base, shm->bytes);
    if (shm->big_fd >= 0)
        close(shm->big_fd);
    free(shm);
}

void zap_coll_shm_revoke(zap_coll_shm_t *s, uint64_t seq, zap_status_t status, int culprit)
{
    _Atomic uint64_t *e = &s->revoke_entry[2 * s->rank];
    uint64_t have = atomic_load_explicit(&e[0], memory_order_relaxed);
    if (have != 0 && have <= seq)
        return;
    atomic_store_explicit(&e[1], (uint64_t)(uint32_t)status << 32 | (uint32_t)culprit, memory_order_relaxed);
    atomic_store_explicit(&e[0], seq, memory_order_release);
    uint64_t cur = atomic_load_explicit(s->revoked, memory_order_relaxed);
    while ((cur == 0 || seq < cur) &&
           !atomic_compare_exchange_weak_explicit(s->revoked, &cur, seq, memory_order_seq_cst, memory_order_relaxed))
        ;
}

uint64_t zap_coll_shm_revocation(const zap_coll_shm_t *s, zap_status_t *status_p, int *culprit_p, int *by_p)
{
    uint64_t best = 0;
    for (int q = 0; q < s->size; q++) {
        uint64_t seq = atomic_load_explicit(&s->revoke_entry[2 * q], memory_order_acquire);
        if (seq == 0 || (best != 0 && seq >= best))
            continue;
        uint64_t cause = atomic_load_explicit(&s->revoke_entry[2 * q + 1], memory_order_relaxed);
        best = seq;
        *status_p = (zap_status_t)(int32_t)(uint32_t)(cause >> 32);
        *culprit_p = (int)(int32_t)(uint32_t)cause;
        *by_p = q;
    }
    return best;
}

bool zap_coll_shm_peer_dead(const zap_coll_shm_t *shm, int q)
{
    pid_t pid = shm->pids[q];
    if (!alive(pid))
        return true;
    /* A killed process stays a zombie until its parent reaps it, and kill()
     * still finds it. */
    char path[40], buf[96];
    snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
    int fd = open(path, O_RDONLY);
    if (fd < 0)
        return false;
    ssize_t n = read(fd, buf, sizeof(buf) - 1);
    close(fd);
    if (n <= 0)
        return false;
    buf[n] = '\0';
    const char *rp = strrchr(buf, ')'); /* the command name may hold spaces and parentheses */
    return rp != NULL && rp[1] == ' ' && (rp[2] == 'Z' || rp[2] == 'X');
}
