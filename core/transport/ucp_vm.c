/* Address-space events from UCX's memory hooks into the epoch (ucp_vm.h). */
#define _GNU_SOURCE
#include "transport/ucp_vm.h"
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <sys/mman.h>
#include <ucm/api/ucm.h>
#include "base/log.h"
#include "base/vm_epoch.h"

/* Unmapping alone: a plain host address can turn into device or managed
 * memory only once its range has been given back (a MAP_FIXED mapping over
 * it counts as unmapping it). Not asking for mapping events also keeps UCM
 * from installing an mmap hook beside Open MPI's own. */
#define EVENTS UCM_EVENT_VM_UNMAPPED

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static int starts;        /* zap_ucp_vm_watch_start calls not yet undone */
static bool installed;    /* the handler is registered with UCM */
static bool delivering;   /* ... and its events were seen to arrive */
static atomic_uint seen;

static void on_vm_event(ucm_event_type_t type, ucm_event_t *event, void *arg)
{
    (void)type;
    (void)event;
    (void)arg;
    atomic_fetch_add_explicit(&seen, 1, memory_order_relaxed);
    zap_vm_epoch_bump();
}

/* A registered handler is not proof the hooks fire (Open MPI may declare the
 * events external and deliver them itself, or hooks may be off): map and
 * unmap a page and look. */
static bool events_arrive(void)
{
    unsigned before = atomic_load_explicit(&seen, memory_order_relaxed);
    void *p = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED)
        return false;
    munmap(p, 4096);
    return atomic_load_explicit(&seen, memory_order_relaxed) - before >= 1;
}

void zap_ucp_vm_watch_start(void)
{
    pthread_mutex_lock(&lock);
    if (starts++ == 0) {
        installed = ucm_set_event_handler(EVENTS, 0, on_vm_event, NULL) == UCS_OK;
        delivering = installed && events_arrive();
        if (delivering)
            zap_vm_epoch_watch(true);
        else
            zap_debug("ucp: UCX memory events do not arrive here; memory kinds are asked of CUDA on every call");
    }
    pthread_mutex_unlock(&lock);
}

void zap_ucp_vm_watch_stop(void)
{
    pthread_mutex_lock(&lock);
    if (starts > 0 && --starts == 0) {
        if (delivering)
            zap_vm_epoch_watch(false);
        if (installed)
            ucm_unset_event_handler(EVENTS, on_vm_event, NULL);
        installed = delivering = false;
    }
    pthread_mutex_unlock(&lock);
}
