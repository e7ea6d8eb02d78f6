/* Staging slots for the GPU-resident collective path (declared in
 * cuda_coll.h): cudaMalloc'd buffers exported with CUDA IPC,
 * the cache of peers' opened buffers, and the stream work of one collective.
 * Every CUDA call is checked; a failure is logged and reported as
 * ZAP_ERR_CUDA, after which the collective falls back to the host
 * algorithms. Thread-safe: ranks of the in-process transport are threads of
 * one process and share the slot table. */
#include <cuda_runtime.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "cuda_coll.h"
#include "base/log.h"

_Static_assert(sizeof(cudaIpcMemHandle_t) == ZAP_STAGE_HANDLE_BYTES, "IPC handle size");

#define MAILBOX_BYTES 4096
/* Peer mappings, one per (peer process, peer slot, our device). One job of up
 * to 8 ranks needs at most 7 x 16 per device; the table holds twice the
 * slots of 8 peers, so the least recently used mapping is closed only when
 * far more peer processes than that have been seen. */
#define ZAP_STAGE_MAX_PEERS 8
#define PEER_MAPS (2 * ZAP_STAGE_SLOTS * ZAP_STAGE_MAX_PEERS)
#define SLOT_ALIGN (2u << 20) /* grow in 2 MiB steps: fewer reallocations (each re-opened by peers) */

struct zap_stage_slot {
    int index;
    bool busy;
    bool created;
    int device;
    void *base;
    size_t cap;
    uint32_t gen;
    cudaIpcMemHandle_t handle;
    cudaStream_t stream;
    cudaEvent_t event;
    _Alignas(64) unsigned char mailbox[MAILBOX_BYTES];
};

typedef struct peer_map {
    bool used;
    int32_t pid, slot, device;
    unsigned char handle[ZAP_STAGE_HANDLE_BYTES];
    void *ptr;
    uint64_t last_use;
} peer_map_t;

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static zap_stage_slot_t slots[ZAP_STAGE_SLOTS];
static peer_map_t maps[PEER_MAPS];
static uint64_t use_clock;

static zap_status_t check(cudaError_t err, const char *what)
{
    if (err == cudaSuccess)
        return ZAP_OK;
    (void)cudaGetLastError(); /* clear a sticky non-fatal error so later calls are not blamed */
    zap_warn("cuda: %s failed: %s (%s); the collective falls back to the host path", what,
             cudaGetErrorString(err), cudaGetErrorName(err));
    return ZAP_ERR_CUDA;
}

/* Whether any CUDA device is visible, asked once (also reduce_cuda.cu's
 * memory-kind query: without a device every pointer is host memory). */
bool zap_stage_device_present(void)
{
    static int present = -1;
    if (present < 0) {
        int n = 0;
        cudaError_t err = cudaGetDeviceCount(&n);
        if (err != cudaSuccess)
            (void)cudaGetLastError();
        present = err == cudaSuccess && n > 0;
    }
    return present != 0;
}

bool zap_stage_can_move(zap_mem_kind_t kind) { return kind == ZAP_MEM_MANAGED || kind == ZAP_MEM_DEVICE; }

static uint64_t fnv(uint64_t h, const char *s, size_t n)
{
    for (size_t i = 0; i < n; i++)
        h = (h ^ (unsigned char)s[i]) * 1099511628211ull;
    return h;
}

static uint64_t host_id_once(void)
{
    char buf[256] = {0};
    uint64_t h = 14695981039346656037ull;
    if (gethostname(buf, sizeof(buf) - 1) == 0)
        h = fnv(h, buf, strlen(buf));
    FILE *f = fopen("/proc/sys/kernel/random/boot_id", "r");
    if (f != NULL) {
        size_t n = fread(buf, 1, sizeof(buf) - 1, f);
        fclose(f);
        h = fnv(h, buf, n);
    }
    return h;
}

uint64_t zap_stage_host_id(void)
{
    static _Atomic uint64_t id;
    uint64_t v = id;
    if (v == 0)
        id = v = host_id_once(); /* racing threads compute and store the same value */
    return v;
}

/* Makes the slot's memory at least bytes long on its device (lock not held:
 * the slot is ours). */
static zap_status_t slot_size(zap_stage_slot_t *s, size_t bytes)
{
    if (!s->created) {
        zap_status_t st = check(cudaStreamCreateWithFlags(&s->stream, cudaStreamDefault), "cudaStreamCreate (staging)");
        if (st != ZAP_OK)
            return st;
        st = check(cudaEventCreateWithFlags(&s->event, cudaEventDisableTiming), "cudaEventCreate (staging)");
        if (st != ZAP_OK) {
            (void)cudaStreamDestroy(s->stream);
            return st;
        }
        s->created = true;
    }
    if (bytes == 0 || (s->base != NULL && s->cap >= bytes))
        return ZAP_OK;
    size_t cap = (bytes + SLOT_ALIGN - 1) / SLOT_ALIGN * SLOT_ALIGN;
    if (s->base != NULL) {
        /* Peers still mapping the old buffer keep it alive until they see
         * the new handle and close theirs. */
        (void)cudaStreamSynchronize(s->stream);
        (void)cudaFree(s->base);
        pthread_mutex_lock(&lock); /* same-process peers read base and gen under the lock */
        s->base = NULL;
        s->cap = 0;
        pthread_mutex_unlock(&lock);
    }
    void *p = NULL;
    cudaError_t err = cudaMalloc(&p, cap);
    if (err != cudaSuccess) {
        (void)cudaGetLastError();
        zap_warn("coll: staging slot of %zu bytes: cudaMalloc failed (%s); the host path is used", cap,
                 cudaGetErrorString(err));
        return err == cudaErrorMemoryAllocation ? ZAP_ERR_NO_MEMORY : ZAP_ERR_CUDA;
    }
    zap_status_t st = check(cudaIpcGetMemHandle(&s->handle, p), "cudaIpcGetMemHandle (staging)");
    if (st != ZAP_OK) {
        (void)cudaFree(p);
        return st;
    }
    pthread_mutex_lock(&lock);
    s->base = p;
    s->cap = cap;
    s->gen++;
    pthread_mutex_unlock(&lock);
    return ZAP_OK;
}

zap_status_t zap_stage_acquire(size_t bytes, zap_stage_slot_t **slot_p, zap_stage_ref_t *ref)
{
    if (!zap_stage_device_present())
        return ZAP_ERR_UNSUPPORTED;
    int dev = 0;
    zap_status_t st = check(cudaGetDevice(&dev), "cudaGetDevice");
    if (st != ZAP_OK)
        return st;
    /* A free slot of this device, preferring one already large enough; a
     * never-used slot takes the device. */
    pthread_mutex_lock(&lock);
    zap_stage_slot_t *pick = NULL;
    for (int i = 0; i < ZAP_STAGE_SLOTS; i++) {
        zap_stage_slot_t *s = &slots[i];
        if (s->busy || (s->created && s->device != dev))
            continue;
        if (pick == NULL || (s->cap >= bytes && pick->cap < bytes) ||
            (s->created && !pick->created && pick->cap < bytes))
            pick = s;
    }
    if (pick != NULL) {
        pick->busy = true;
        pick->index = (int)(pick - slots);
        if (!pick->created)
            pick->device = dev;
    }
    pthread_mutex_unlock(&lock);
    if (pick == NULL)
        return ZAP_ERR_BUSY;
    st = slot_size(pick, bytes);
    if (st != ZAP_OK) {
        zap_stage_release(pick);
        return st;
    }
    memset(ref, 0, sizeof(*ref));
    ref->host = zap_stage_host_id();
    ref->pid = (int32_t)getpid();
    ref->slot = pick->index;
    ref->device = pick->device;
    ref->gen = pick->gen;
    memcpy(ref->handle, &pick->handle, sizeof(pick->handle));
    *slot_p = pick;
    return ZAP_OK;
}

void zap_stage_release(zap_stage_slot_t *slot)
{
    if (slot == NULL)
        return;
    pthread_mutex_lock(&lock);
    slot->busy = false;
    pthread_mutex_unlock(&lock);
}

void *zap_stage_base(zap_stage_slot_t *slot) { return slot->base; }

void *zap_stage_mailbox(zap_stage_slot_t *slot, size_t *mailbox_bytes)
{
    *mailbox_bytes = MAILBOX_BYTES;
    return slot->mailbox;
}

zap_status_t zap_stage_peer(const zap_stage_ref_t *ref, void **base_p)
{
    if (ref->slot < 0 || ref->slot >= ZAP_STAGE_SLOTS)
        return ZAP_ERR_INVALID_PARAM;
    if (ref->pid == (int32_t)getpid()) {
        /* Ranks as threads of this process: the slot is in our own table and
         * its owner holds it for the whole collective. */
        pthread_mutex_lock(&lock);
        void *base = slots[ref->slot].base;
        uint32_t gen = slots[ref->slot].gen;
        pthread_mutex_unlock(&lock);
        if (base == NULL || gen != ref->gen)
            return ZAP_ERR_INVALID_PARAM;
        *base_p = base;
        return ZAP_OK;
    }
    int dev = 0;
    (void)cudaGetDevice(&dev);
    pthread_mutex_lock(&lock);
    peer_map_t *hit = NULL, *victim = NULL;
    for (int i = 0; i < PEER_MAPS; i++) {
        peer_map_t *m = &maps[i];
        if (m->used && m->pid == ref->pid && m->slot == ref->slot && m->device == dev) {
            hit = m;
            break;
        }
        if (victim == NULL || !m->used || (victim->used && m->last_use < victim->last_use))
            victim = m;
    }
    zap_status_t st = ZAP_OK;
    if (hit != NULL && memcmp(hit->handle, ref->handle, ZAP_STAGE_HANDLE_BYTES) != 0) {
        /* The peer reallocated its slot: drop the old mapping. */
        (void)cudaIpcCloseMemHandle(hit->ptr);
        hit->used = false;
        victim = hit;
        hit = NULL;
    }
    if (hit == NULL) {
        if (victim->used)
            (void)cudaIpcCloseMemHandle(victim->ptr);
        victim->used = false;
        cudaIpcMemHandle_t h;
        memcpy(&h, ref->handle, sizeof(h));
        void *p = NULL;
        st = check(cudaIpcOpenMemHandle(&p, h, cudaIpcMemLazyEnablePeerAccess), "cudaIpcOpenMemHandle (peer staging)");
        if (st == ZAP_OK) {
            victim->used = true;
            victim->pid = ref->pid;
            victim->slot = ref->slot;
            victim->device = dev;
            memcpy(victim->handle, ref->handle, ZAP_STAGE_HANDLE_BYTES);
            victim->ptr = p;
            hit = victim;
        }
    }
    if (hit != NULL) {
        hit->last_use = ++use_clock;
        *base_p = hit->ptr;
    }
    pthread_mutex_unlock(&lock);
    return st;
}

zap_status_t zap_stage_copy(zap_stage_slot_t *slot, void *dst, const void *src, size_t bytes)
{
    if (bytes == 0 || dst == src)
        return ZAP_OK;
    return check(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDefault, slot->stream), "cudaMemcpyAsync (staging)");
}

zap_status_t zap_stage_reduce(zap_stage_slot_t *slot, zap_dtype_t dt, zap_op_t op, void *dst, const void *a,
                              const void *b, size_t count)
{
    return zap_cuda_reduce_async(slot->stream, dt, op, dst, a, b, count);
}

void zap_stage_prefetch(zap_stage_slot_t *slot, const void *ptr, size_t bytes)
{
    if (bytes == 0)
        return;
    struct cudaMemLocation loc = {.type = cudaMemLocationTypeDevice, .id = slot->device};
    if (cudaMemPrefetchAsync(ptr, bytes, loc, 0, slot->stream) != cudaSuccess)
        (void)cudaGetLastError(); /* a hint only */
}

zap_status_t zap_stage_fence(zap_stage_slot_t *slot)
{
    return check(cudaEventRecord(slot->event, slot->stream), "cudaEventRecord (staging)");
}

zap_status_t zap_stage_test(zap_stage_slot_t *slot)
{
    cudaError_t err = cudaEventQuery(slot->event);
    if (err == cudaErrorNotReady)
        return ZAP_INPROGRESS;
    return check(err, "staging copy or reduction");
}
