/* A host-memory stand-in for the device side of the GPU-resident path
 * (cuda/coll/cuda_coll.h), linked into test_coll_stage only: slots
 * are malloc'd, copies are memcpy, reductions the CPU loops, and a fence is
 * "done" only on its second test, so the state machine's waits, rounds and
 * fallbacks run on machines without a GPU. Knobs make acquire and peer open
 * fail on demand. The memory-kind part (zap_cuda_ptr_kind, the synchronous
 * copies and reductions) is stood in for too: host ranges registered with
 * zap_fake_managed count as managed memory, and every synchronous call is
 * counted, as cuda/coll counts the real ones. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "coll/reduce/reduce.h"
#include "cuda_coll.h"
#include "stage_fake.h"

struct zap_stage_slot {
    bool busy;
    void *base;
    size_t cap;
    uint32_t gen;
    int polls;
    _Alignas(64) unsigned char mailbox[4096];
};

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t kind_lock = PTHREAD_MUTEX_INITIALIZER;
#define FAKE_MANAGED_MAX 64
static struct {
    const char *base;
    size_t bytes;
} managed[FAKE_MANAGED_MAX];
static atomic_ullong sync_calls;
static zap_stage_slot_t slots[ZAP_STAGE_SLOTS];
static atomic_int zap_fake_fail_acquire, zap_fake_fail_open, zap_fake_refuse_move, zap_fake_held, zap_fake_acquires;

void zap_fake_stage_fail(int fail_acquire, int fail_open)
{
    atomic_store(&zap_fake_fail_acquire, fail_acquire);
    atomic_store(&zap_fake_fail_open, fail_open);
}

void zap_fake_stage_refuse_move(int n) { atomic_store(&zap_fake_refuse_move, n); }

int zap_fake_stage_held(void) { return atomic_load(&zap_fake_held); }

int zap_fake_stage_acquires(void) { return atomic_load(&zap_fake_acquires); }


static bool take(atomic_int *knob)
{
    int v = atomic_load(knob);
    while (v > 0 && !atomic_compare_exchange_weak(knob, &v, v - 1))
        ;
    return v > 0;
}

bool zap_stage_device_present(void) { return true; }
bool zap_stage_can_move(zap_mem_kind_t kind)
{
    (void)kind;
    return !take(&zap_fake_refuse_move);
}
uint64_t zap_stage_host_id(void) { return 42; }

zap_status_t zap_stage_acquire(size_t bytes, zap_stage_slot_t **slot_p, zap_stage_ref_t *ref)
{
    atomic_fetch_add(&zap_fake_acquires, 1);
    if (take(&zap_fake_fail_acquire))
        return ZAP_ERR_NO_MEMORY;
    pthread_mutex_lock(&lock);
    zap_stage_slot_t *s = NULL;
    for (int i = 0; i < ZAP_STAGE_SLOTS && s == NULL; i++)
        if (!slots[i].busy)
            s = &slots[i];
    if (s != NULL)
        s->busy = true;
    pthread_mutex_unlock(&lock);
    if (s == NULL)
        return ZAP_ERR_BUSY;
    pthread_mutex_lock(&lock); /* peers read base and gen under the lock */
    if (bytes > s->cap) {
        free(s->base);
        s->base = malloc(bytes);
        s->cap = bytes;
        s->gen++;
        if (s->base == NULL)
            abort();
    }
    pthread_mutex_unlock(&lock);
    memset(ref, 0, sizeof(*ref));
    ref->host = 42;
    ref->pid = (int32_t)getpid();
    ref->slot = (int32_t)(s - slots);
    ref->gen = s->gen;
    atomic_fetch_add(&zap_fake_held, 1);
    *slot_p = s;
    return ZAP_OK;
}

void zap_stage_release(zap_stage_slot_t *slot)
{
    if (slot == NULL)
        return;
    pthread_mutex_lock(&lock);
    slot->busy = false;
    pthread_mutex_unlock(&lock);
    atomic_fetch_sub(&zap_fake_held, 1);
}

void *zap_stage_base(zap_stage_slot_t *slot) { return slot->base; }

void *zap_stage_mailbox(zap_stage_slot_t *slot, size_t *mailbox_bytes)
{
    *mailbox_bytes = sizeof(slot->mailbox);
    return slot->mailbox;
}

zap_status_t zap_stage_peer(const zap_stage_ref_t *ref, void **base_p)
{
    if (take(&zap_fake_fail_open))
        return ZAP_ERR_CUDA;
    if (ref->slot < 0 || ref->slot >= ZAP_STAGE_SLOTS)
        return ZAP_ERR_INVALID_PARAM;
    pthread_mutex_lock(&lock);
    bool same = ref->gen == slots[ref->slot].gen;
    *base_p = slots[ref->slot].base;
    pthread_mutex_unlock(&lock);
    return same ? ZAP_OK : ZAP_ERR_INVALID_PARAM;
}

zap_status_t zap_stage_copy(zap_stage_slot_t *slot, void *dst, const void *src, size_t bytes)
{
    (void)slot;
    if (bytes > 0 && dst != src)
        memmove(dst, src, bytes);
    return ZAP_OK;
}

zap_status_t zap_stage_reduce(zap_stage_slot_t *slot, zap_dtype_t dt, zap_op_t op, void *dst, const void *a,
                              const void *b, size_t count)
{
    (void)slot;
    zap_reduce_cpu(dt, op, dst, a, b, count);
    return ZAP_OK;
}

void zap_stage_prefetch(zap_stage_slot_t *slot, const void *ptr, size_t bytes)
{
    (void)slot;
    (void)ptr;
    (void)bytes;
}

zap_status_t zap_stage_fence(zap_stage_slot_t *slot)
{
    slot->polls = 0;
    return ZAP_OK;
}

zap_status_t zap_stage_test(zap_stage_slot_t *slot)
{
    return ++slot->polls >= 2 ? ZAP_OK : ZAP_INPROGRESS;
}

void zap_fake_managed(const void *ptr, size_t bytes)
{
    pthread_mutex_lock(&kind_lock);
    for (int i = 0; i < FAKE_MANAGED_MAX; i++)
        if (managed[i].base == NULL || (bytes == 0 && managed[i].base == ptr)) {
            managed[i].base = bytes == 0 ? NULL : ptr;
            managed[i].bytes = bytes;
            break;
        }
    pthread_mutex_unlock(&kind_lock);
}

zap_mem_kind_t zap_cuda_ptr_kind(const void *ptr)
{
    zap_mem_kind_t kind = ZAP_MEM_HOST;
    pthread_mutex_lock(&kind_lock);
    for (int i = 0; i < FAKE_MANAGED_MAX; i++)
        if (managed[i].base != NULL && (const char *)ptr >= managed[i].base &&
            (const char *)ptr < managed[i].base + managed[i].bytes)
            kind = ZAP_MEM_MANAGED;
    pthread_mutex_unlock(&kind_lock);
    return kind;
}

uint64_t zap_cuda_coll_sync_calls(void) { return atomic_load(&sync_calls); }

zap_status_t zap_cuda_copy(void *dst, const void *src, size_t bytes)
{
    atomic_fetch_add(&sync_calls, 1);
    memmove(dst, src, bytes);
    return ZAP_OK;
}

zap_status_t zap_cuda_reduce(zap_dtype_t dt, zap_op_t op, void *dst, const void *a, const void *b, size_t count)
{
    atomic_fetch_add(&sync_calls, 1);
    zap_reduce_cpu(dt, op, dst, a, b, count);
    return ZAP_OK;
}

zap_status_t zap_cuda_reduce_async(void *stream, zap_dtype_t dt, zap_op_t op, void *dst, const void *a,
                                   const void *b, size_t count)
{
    (void)stream;
    zap_reduce_cpu(dt, op, dst, a, b, count);
    return ZAP_OK;
}
