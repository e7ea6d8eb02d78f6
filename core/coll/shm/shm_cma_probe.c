/* Whether single-copy reads pay on this host (shm.h): the automatic choice
 * prefers them over the shared area only where process_vm_readv moves
 * bytes at no more than PROBE_RATIO times a plain copy's time. Where the
 * kernel's page walk is dear (some virtual machines), a read costs several
 * copies of the same bytes, and the area's copies win at every size it
 * carries. Measured once per process, on its own memory: the system call
 * and the page walk are what a read of a peer costs, and its own pid is
 * always readable. 64 KiB, a block of the single-copy forms on many ranks,
 * separates the hosts best: the system call's share is largest there. */
#define _GNU_SOURCE
#include "coll/shm/shm.h"
#include "base/log.h"
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#define PROBE_BYTES ((size_t)64 << 10)
#define PROBE_RUNS 8 /* the best of these: a descheduled run says nothing */
#define PROBE_RATIO 4

static pthread_once_t once = PTHREAD_ONCE_INIT;
static bool fast = true;

static uint64_t now_ns(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

static void probe(void)
{
    unsigned char *a = aligned_alloc(4096, PROBE_BYTES), *b = aligned_alloc(4096, PROBE_BYTES);
    if (a == NULL || b == NULL) { /* no verdict: reads stay preferred, as they were before the probe */
        free(a);
        free(b);
        return;
    }
    memset(a, 1, PROBE_BYTES);
    memset(b, 2, PROBE_BYTES);
    uint64_t copy = UINT64_MAX, rd = UINT64_MAX;
    pid_t self = getpid();
    bool failed = false;
    for (int i = 0; i <= PROBE_RUNS && !failed; i++) { /* run 0 warms both paths */
        uint64_t t0 = now_ns();
        memcpy(b, a, PROBE_BYTES);
        __asm__ volatile("" : : "r"(b) : "memory"); /* the copy is not elided */
        uint64_t t1 = now_ns();
        struct iovec local = {b, PROBE_BYTES}, remote = {a, PROBE_BYTES};
        failed = process_vm_readv(self, &local, 1, &remote, 1, 0) != (ssize_t)PROBE_BYTES;
        uint64_t t2 = now_ns();
        if (i > 0) {
            copy = t1 - t0 < copy ? t1 - t0 : copy;
            rd = t2 - t1 < rd ? t2 - t1 : rd;
        }
    }
    free(a);
    free(b);
    if (failed)
        return; /* not permitted: the setup's own check turns single copy off */
    fast = rd <= PROBE_RATIO * (copy > 0 ? copy : 1);
    zap_debug("coll: single-copy reads of 64 KiB take %.2f us, a copy %.2f us: %s", (double)rd / 1e3,
              (double)copy / 1e3, fast ? "preferred over the shared area" : "only beyond the shared area");
}

bool zap_coll_shm_cma_fast(void)
{
    pthread_once(&once, probe);
    return fast;
}
