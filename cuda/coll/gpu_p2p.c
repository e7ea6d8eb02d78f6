/* The GPU path's channels and IPC caches, host side (cuda_coll.h has the
 * contract, gpu_kernels.cu the kernels, gpu_p2p_impl.h the region layout).
 *
 * Two process-wide caches, under one mutex (ranks of the in-process
 * transport are threads of one process):
 *   exports  buffer id -> the allocation's base, size and IPC handle: a
 *            user's buffer costs one cudaIpcGetMemHandle per allocation, not
 *            per call;
 *   imports  (owner pid, owner buffer id, our device) -> the mapping:
 *            cudaIpcOpenMemHandle once per peer allocation. A mapping whose
 *            owner has since put another allocation at the same base (it
 *            freed the old one) is stale: it is closed once no channel of
 *            this process has a kernel pending, since one may still use it.
 * The buffer id (CU_POINTER_ATTRIBUTE_BUFFER_ID) is unique within a process
 * for its life, so a buffer freed and allocated again at the same address
 * gets a new id and can never be confused with its predecessor. The driver's
 * cuPointerGetAttributes is reached through the runtime's entry-point query,
 * so nothing links libcuda and builds run where no driver is installed.
 *
 * Every CUDA call is checked; failures are logged once with CUDA's text and
 * become ZAP_ERR_CUDA (or ZAP_ERR_NO_MEMORY for an allocation). */
#include <cuda.h>
#include <cuda_runtime.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "gpu_p2p_impl.h"
#include "base/log.h"

_Static_assert(sizeof(cudaIpcMemHandle_t) == ZAP_GPU_HANDLE_BYTES, "IPC handle size");

#define EXPORTS 64
#define IMPORTS 512
#define STAGE_ALIGN ((size_t)2 << 20)

struct zap_gpu_chan {
    int me, size, device;
    unsigned char *region;                     /* this rank's, device memory */
    zap_gpu_ref_t region_ref;
    unsigned char *regions[ZAP_GPU_MAX_RANKS]; /* every rank's in this process ([me] = region) */
    bool connected;
    cudaStream_t stream;
    unsigned long long *status_host, *status_dev; /* the pinned ring of launch outcomes */
    uint64_t slot_ticket[ZAP_GPU_STATUS_RING];    /* the pending launch using each word, 0: free */
    uint64_t tickets;                             /* launched so far */
    unsigned blocks;                              /* blocks launched so far (mod 2^32, as the region's counter) */
    int pending;
    unsigned polls;
    void *stage;
    size_t stage_cap;
    zap_gpu_ref_t stage_ref;
    int stage_holders;
};

typedef struct export_entry {
    uint64_t id, base, size, last_use;
    int device;
    cudaIpcMemHandle_t handle;
} export_entry_t;

typedef struct import_entry {
    bool used, stale, region;
    int32_t pid, device; /* owner pid; our device */
    uint64_t id, base;   /* owner's buffer id and base */
    void *ptr;
    uint64_t last_use;
} import_entry_t;

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static export_entry_t exports[EXPORTS];
static import_entry_t imports[IMPORTS];
static uint64_t use_clock;
static atomic_int pending_all; /* launches pending on every channel of the process */
static int stale_count;

typedef CUresult (*get_attrs_fn)(unsigned, CUpointer_attribute *, void **, CUdeviceptr);

static zap_status_t check(cudaError_t err, const char *what)
{
    if (err == cudaSuccess)
        return ZAP_OK;
    (void)cudaGetLastError(); /* a non-sticky error must not be blamed on a later call */
    zap_error("cuda: %s failed: %s (%s)", what, cudaGetErrorString(err), cudaGetErrorName(err));
    return err == cudaErrorMemoryAllocation ? ZAP_ERR_NO_MEMORY : ZAP_ERR_CUDA;
}

bool zap_gpu_device_present(void)
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

bool zap_gpu_can_move(zap_mem_kind_t kind) { return kind == ZAP_MEM_MANAGED || kind == ZAP_MEM_DEVICE; }

static uint64_t fnv(uint64_t h, const char *s, size_t n)
{
    for (size_t i = 0; i < n; i++)
        h = (h ^ (unsigned char)s[i]) * 1099511628211ull;
    return h;
}

uint64_t zap_gpu_host_id(void)
{
    static _Atomic uint64_t id;
    uint64_t v = id;
    if (v != 0)
        return v;
    char buf[256] = {0};
    v = 14695981039346656037ull;
    if (gethostname(buf, sizeof(buf) - 1) == 0)
        v = fnv(v, buf, strlen(buf));
    FILE *f = fopen("/proc/sys/kernel/random/boot_id", "r");
    if (f != NULL) {
        size_t n = fread(buf, 1, sizeof(buf) - 1, f);
        fclose(f);
        v = fnv(v, buf, n);
    }
    id = v; /* racing threads compute and store the same value */
    return v;
}

static get_attrs_fn driver_get_attrs(void)
{
    static get_attrs_fn fn;
    static atomic_int state; /* 0 unknown, 1 found, 2 absent */
    int s = atomic_load(&state);
    if (s == 0) {
        void *p = NULL;
        enum cudaDriverEntryPointQueryResult q;
        cudaError_t err = cudaGetDriverEntryPointByVersion("cuPointerGetAttributes", &p, 12000, cudaEnableDefault, &q);
        if (err != cudaSuccess || q != cudaDriverEntryPointSuccess || p == NULL) {
            (void)cudaGetLastError();
            zap_warn("cuda: the driver's cuPointerGetAttributes is not available: device buffers are staged");
            atomic_store(&state, 2);
            return NULL;
        }
        fn = (get_attrs_fn)p;
        atomic_store(&state, 1);
        return fn;
    }
    return s == 1 ? fn : NULL;
}

/* The allocation holding ptr: base, size, buffer id, device; false when the
 * memory cannot be exported with cudaIpcGetMemHandle. */
static bool alloc_info(const void *ptr, uint64_t *base, uint64_t *size, uint64_t *id, int *device)
{
    get_attrs_fn get = driver_get_attrs();
    if (get == NULL)
        return false;
    CUpointer_attribute attrs[] = {CU_POINTER_ATTRIBUTE_RANGE_START_ADDR, CU_POINTER_ATTRIBUTE_RANGE_SIZE,
                                   CU_POINTER_ATTRIBUTE_BUFFER_ID, CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL,
                                   CU_POINTER_ATTRIBUTE_IS_LEGACY_CUDA_IPC_CAPABLE, CU_POINTER_ATTRIBUTE_IS_MANAGED};
    CUdeviceptr start = 0;
    size_t range = 0;
    unsigned long long bid = 0;
    int ordinal = -1, ipc = 0, managed = 0;
    void *data[] = {&start, &range, &bid, &ordinal, &ipc, &managed};
    if (get(6, attrs, data, (CUdeviceptr)(uintptr_t)ptr) != CUDA_SUCCESS)
        return false;
    if (!ipc || managed || start == 0)
        return false;
    *base = (uint64_t)start;
    *size = (uint64_t)range;
    *id = (uint64_t)bid;
    *device = ordinal;
    return true;
}

zap_status_t zap_gpu_expose(zap_gpu_chan_t *ch, const void *ptr, size_t bytes, zap_gpu_ref_t *ref)
{
    (void)ch;
    uint64_t base = 0, size = 0, id = 0;
    int device = -1;
    if (ptr == NULL || !alloc_info(ptr, &base, &size, &id, &device))
        return ZAP_ERR_UNSUPPORTED;
    uint64_t off = (uint64_t)(uintptr_t)ptr - base;
    if (off + bytes > size)
        return ZAP_ERR_INVALID_PARAM; /* the range runs past its allocation */
    pthread_mutex_lock(&lock);
    export_entry_t *hit = NULL, *victim = &exports[0];
    for (int i = 0; i < EXPORTS; i++) {
        if (exports[i].id == id && exports[i].base == base) {
            hit = &exports[i];
            break;
        }
        if (exports[i].last_use < victim->last_use)
            victim = &exports[i];
    }
    zap_status_t st = ZAP_OK;
    if (hit == NULL) {
        cudaIpcMemHandle_t h;
        st = check(cudaIpcGetMemHandle(&h, (void *)(uintptr_t)base), "cudaIpcGetMemHandle (user buffer)");
        if (st == ZAP_OK) {
            *victim = (export_entry_t){.id = id, .base = base, .size = size, .device = device, .handle = h};
            hit = victim;
        }
    }
    if (hit != NULL) {
        hit->last_use = ++use_clock;
        memset(ref, 0, sizeof(*ref));
        ref->host = zap_gpu_host_id();
        ref->pid = (int32_t)getpid();
        ref->device = hit->device;
        ref->id = id;
        ref->base = base;
        ref->offset = off;
        memcpy(ref->handle, &hit->handle, sizeof(hit->handle));
    }
    pthread_mutex_unlock(&lock);
    return st;
}

/* Closes stale mappings once no kernel of this process can be using them
 * (lock held). */
static void close_stale(void)
{
    if (stale_count == 0 || atomic_load(&pending_all) != 0)
        return;
    for (int i = 0; i < IMPORTS; i++)
        if (imports[i].used && imports[i].stale) {
            (void)cudaIpcCloseMemHandle(imports[i].ptr);
            imports[i].used = false;
        }
    stale_count = 0;
}

/* Peer access from the current device to another one of this process. */
static void enable_peer(int device)
{
    int cur = 0;
    if (cudaGetDevice(&cur) != cudaSuccess || cur == device) {
        (void)cudaGetLastError();
        return;
    }
    cudaError_t err = cudaDeviceEnablePeerAccess(device, 0);
    if (err != cudaSuccess && err != cudaErrorPeerAccessAlreadyEnabled)
        zap_warn("cuda: peer access from device %d to %d: %s", cur, device, cudaGetErrorString(err));
    (void)cudaGetLastError();
}

static zap_status_t open_ref(const zap_gpu_ref_t *ref, bool region, void **ptr_p)
{
    if (ref->pid == (int32_t)getpid()) { /* ranks as threads: the owner's own address */
        enable_peer(ref->device);
        *ptr_p = (unsigned char *)(uintptr_t)ref->base + ref->offset;
        return ZAP_OK;
    }
    int dev = 0;
    (void)cudaGetDevice(&dev);
    pthread_mutex_lock(&lock);
    close_stale();
    import_entry_t *hit = NULL, *free_e = NULL;
    for (int i = 0; i < IMPORTS; i++) {
        import_entry_t *e = &imports[i];
        if (!e->used) {
            free_e = free_e != NULL ? free_e : e;
            continue;
        }
        if (e->pid != ref->pid || e->device != dev)
            continue;
        if (e->id == ref->id) {
            hit = e;
        } else if (e->base == ref->base && !e->stale) {
            e->stale = true; /* the owner freed it: another allocation sits at its base now */
            stale_count++;
        }
    }
    zap_status_t st = ZAP_OK;
    if (hit == NULL) {
        if (free_e == NULL) {
            zap_error("cuda: %d peer buffers mapped, no room for another: the call falls back", IMPORTS);
            st = ZAP_ERR_NO_RESOURCE;
        } else {
            cudaIpcMemHandle_t h;
            memcpy(&h, ref->handle, sizeof(h));
            void *p = NULL;
            st = check(cudaIpcOpenMemHandle(&p, h, cudaIpcMemLazyEnablePeerAccess),
                       region ? "cudaIpcOpenMemHandle (peer channel)" : "cudaIpcOpenMemHandle (peer buffer)");
            if (st == ZAP_OK) {
                *free_e = (import_entry_t){.used = true, .region = region, .pid = ref->pid, .device = dev,
                                           .id = ref->id, .base = ref->base, .ptr = p};
                hit = free_e;
            }
        }
    }
    if (hit != NULL) {
        hit->last_use = ++use_clock;
        *ptr_p = (unsigned char *)hit->ptr + ref->offset;
    }
    pthread_mutex_unlock(&lock);
    return st;
}

zap_status_t zap_gpu_open(zap_gpu_chan_t *ch, const zap_gpu_ref_t *ref, void **ptr_p)
{
    (void)ch;
    return open_ref(ref, false, ptr_p);
}

/* Closes the mapping of a peer's channel region (its id is the region's
 * alone). */
static void close_region(const zap_gpu_ref_t *ref)
{
    if (ref->pid == (int32_t)getpid())
        return;
    pthread_mutex_lock(&lock);
    for (int i = 0; i < IMPORTS; i++) {
        import_entry_t *e = &imports[i];
        if (e->used && e->region && e->pid == ref->pid && e->id == ref->id) {
            (void)cudaIpcCloseMemHandle(e->ptr);
            e->used = false;
        }
    }
    pthread_mutex_unlock(&lock);
}

zap_status_t zap_gpu_chan_create(int me, int size, zap_gpu_chan_t **ch_p, zap_gpu_ref_t *ref)
{
    if (!zap_gpu_device_present())
        return ZAP_ERR_UNSUPPORTED;
    if (size < 1 || size > ZAP_GPU_MAX_RANKS || me < 0 || me >= size)
        return ZAP_ERR_INVALID_PARAM;
    zap_gpu_chan_t *ch = calloc(1, sizeof(*ch));
    if (ch == NULL)
        return ZAP_ERR_NO_MEMORY;
    ch->me = me;
    ch->size = size;
    zap_status_t st = check(cudaGetDevice(&ch->device), "cudaGetDevice");
    if (st == ZAP_OK)
        st = check(cudaMalloc((void **)&ch->region, ZAP_GPU_REGION_BYTES), "cudaMalloc (GPU path channel)");
    if (st != ZAP_OK)
        goto free_chan;
    if ((st = check(cudaMemset(ch->region, 0, ZAP_GPU_REGION_BANKS), "cudaMemset (GPU path channel)")) != ZAP_OK)
        goto free_region;
    if ((st = check(cudaStreamCreateWithFlags(&ch->stream, cudaStreamDefault), "cudaStreamCreate (GPU path)")) !=
        ZAP_OK)
        goto free_region;
    st = check(cudaHostAlloc((void **)&ch->status_host, sizeof(unsigned long long) * ZAP_GPU_STATUS_RING,
                             cudaHostAllocMapped),
               "cudaHostAlloc (GPU path status)");
    if (st != ZAP_OK)
        goto free_stream;
    memset(ch->status_host, 0, sizeof(unsigned long long) * ZAP_GPU_STATUS_RING);
    if ((st = check(cudaHostGetDevicePointer((void **)&ch->status_dev, ch->status_host, 0),
                    "cudaHostGetDevicePointer (GPU path status)")) != ZAP_OK)
        goto free_status;
    /* The region's own export, described like any buffer. */
    if ((st = zap_gpu_expose(ch, ch->region, ZAP_GPU_REGION_BYTES, &ch->region_ref)) != ZAP_OK) {
        zap_error("cuda: the GPU path's channel region cannot be exported with CUDA IPC");
        st = ZAP_ERR_CUDA;
        goto free_status;
    }
    ch->regions[me] = ch->region;
    *ref = ch->region_ref;
    *ch_p = ch;
    return ZAP_OK;
free_status:
    (void)cudaFreeHost(ch->status_host);
free_stream:
    (void)cudaStreamDestroy(ch->stream);
free_region:
    (void)cudaFree(ch->region);
free_chan:
    free(ch);
    return st;
}

zap_status_t zap_gpu_chan_connect(zap_gpu_chan_t *ch, const zap_gpu_ref_t *refs)
{
    for (int q = 0; q < ch->size; q++) {
        if (q == ch->me)
            continue;
        void *p = NULL;
        zap_status_t st = open_ref(&refs[q], true, &p);
        if (st != ZAP_OK)
            return st;
        ch->regions[q] = p;
    }
    ch->connected = true;
    return ZAP_OK;
}

void zap_gpu_chan_destroy(zap_gpu_chan_t *ch)
{
    if (ch == NULL)
        return;
    /* Kernels of this channel may still run (a request freed early): wait. */
    cudaError_t err = cudaStreamSynchronize(ch->stream);
    if (err != cudaSuccess)
        zap_warn("cuda: GPU path channel: its last kernels failed: %s", cudaGetErrorString(err));
    atomic_fetch_sub(&pending_all, ch->pending);
    for (int q = 0; q < ch->size; q++) {
        if (q == ch->me || ch->regions[q] == NULL)
            continue;
        zap_gpu_ref_t r = {.pid = -1};
        /* Find the region's mapping by its address in the import table. */
        pthread_mutex_lock(&lock);
        for (int i = 0; i < IMPORTS; i++)
            if (imports[i].used && imports[i].region && imports[i].ptr == ch->regions[q]) {
                r.pid = imports[i].pid;
                r.id = imports[i].id;
            }
        pthread_mutex_unlock(&lock);
        if (r.pid >= 0)
            close_region(&r);
    }
    if (ch->stage != NULL)
        (void)cudaFree(ch->stage);
    (void)cudaFreeHost(ch->status_host);
    (void)cudaStreamDestroy(ch->stream);
    (void)cudaFree(ch->region);
    (void)cudaGetLastError();
    free(ch);
}

zap_status_t zap_gpu_stage_acquire(zap_gpu_chan_t *ch, size_t bytes, void **ptr_p, zap_gpu_ref_t *ref)
{
    if (bytes > ch->stage_cap) {
        if (ch->stage_holders > 0)
            return ZAP_ERR_BUSY;
        if (ch->stage != NULL) {
            /* No call holds it, so no kernel of this channel uses it; peers'
             * mappings of it go stale (a new buffer id) and close later. */
            (void)cudaFree(ch->stage);
            ch->stage = NULL;
            ch->stage_cap = 0;
        }
        size_t cap = (bytes + STAGE_ALIGN - 1) / STAGE_ALIGN * STAGE_ALIGN;
        void *p = NULL;
        zap_status_t st = check(cudaMalloc(&p, cap), "cudaMalloc (GPU path staging buffer)");
        if (st != ZAP_OK)
            return st;
        if ((st = zap_gpu_expose(ch, p, cap, &ch->stage_ref)) != ZAP_OK) {
            (void)cudaFree(p);
            return st == ZAP_ERR_UNSUPPORTED ? ZAP_ERR_CUDA : st;
        }
        ch->stage = p;
        ch->stage_cap = cap;
    }
    ch->stage_holders++;
    *ptr_p = ch->stage;
    *ref = ch->stage_ref;
    return ZAP_OK;
}

void zap_gpu_stage_release(zap_gpu_chan_t *ch)
{
    if (ch->stage_holders > 0)
        ch->stage_holders--;
}

/* Element sizes (cuda/coll sits below the collectives' layer and its
 * zap_dtype_size). */
static size_t dt_bytes(zap_dtype_t dt)
{
    static const size_t s[ZAP_DT_COUNT] = {1, 2, 4, 8, 1, 2, 4, 8, 2, 2, 4, 8};
    return (unsigned)dt < ZAP_DT_COUNT ? s[dt] : 0;
}

zap_status_t zap_gpu_launch(zap_gpu_chan_t *ch, const zap_gpu_launch_t *l, uint64_t *ticket_p)
{
    if (!ch->connected)
        return ZAP_ERR_INVALID_PARAM;
    uint64_t t = ch->tickets + 1;
    size_t slot = (size_t)(t % ZAP_GPU_STATUS_RING);
    if (ch->slot_ticket[slot] != 0)
        return ZAP_ERR_BUSY;
    size_t esize = dt_bytes(l->dt);
    if (esize == 0)
        return ZAP_ERR_INVALID_PARAM;
    zap_gpu_kargs_t k;
    memset(&k, 0, sizeof(k));
    k.work = (int)l->work;
    k.p = ch->size;
    k.me = ch->me;
    k.root = l->root;
    k.nblocks = zap_gpu_grid(l->work, l->count, esize, ch->size);
    k.dt = (int)l->dt;
    k.op = (int)l->op;
    k.stage_in = l->stage_in;
    k.stage_out = l->stage_out;
    k.ok = l->ok;
    k.count = l->count;
    k.esize = esize;
    k.src = l->src;
    k.dst = l->dst;
    k.stage = l->stage;
    for (int q = 0; q < ch->size; q++) {
        k.in[q] = l->in[q];
        k.out[q] = l->out[q];
        k.flags[q] = (unsigned long long *)ch->regions[q];
        k.bank[q] = ch->regions[q] + ZAP_GPU_REGION_BANKS + (size_t)(t & 1) * ZAP_GPU_BANK_BYTES;
    }
    if (l->work == ZAP_GPU_AR_ONESHOT || l->work == ZAP_GPU_BC_ONESHOT) {
        if (l->count * esize > ZAP_GPU_BANK_BYTES)
            return ZAP_ERR_INVALID_PARAM;
        k.ok = 1;
        for (int q = 0; q < ch->size; q++) /* the one-shot allreduce reduces the banks, its own input in place */
            k.in[q] = q == ch->me ? k.src : k.bank[q];
        k.out[ch->me] = k.dst;
    }
    k.verdict = (unsigned long long *)(ch->region + ZAP_GPU_REGION_VERDICT);
    k.done = (unsigned int *)(ch->region + ZAP_GPU_REGION_DONE);
    k.done_target = ch->blocks + (unsigned)k.nblocks;
    k.status = ch->status_dev + slot;
    k.ticket = t;
    double ns = l->timeout_s * 1e9;
    k.timeout_ns = !(ns < 1.8e19) ? ~0ull : ns < 1 ? 1ull : (unsigned long long)ns;
    ch->status_host[slot] = 0;
    size_t bytes = l->count * esize;
    struct cudaMemLocation loc = {.type = cudaMemLocationTypeDevice, .id = ch->device};
    if (l->prefetch_src && bytes > 0 && cudaMemPrefetchAsync(l->src, bytes, loc, 0, ch->stream) != cudaSuccess)
        (void)cudaGetLastError(); /* a hint only */
    if (l->prefetch_dst && bytes > 0 && l->dst != l->src &&
        cudaMemPrefetchAsync(l->dst, bytes, loc, 0, ch->stream) != cudaSuccess)
        (void)cudaGetLastError();
    zap_status_t st = zap_gpu_kernel_launch(ch->stream, &k);
    if (st != ZAP_OK)
        return st;
    ch->blocks += (unsigned)k.nblocks;
    ch->tickets = t;
    ch->slot_ticket[slot] = t;
    ch->pending++;
    atomic_fetch_add(&pending_all, 1);
    *ticket_p = t;
    return ZAP_OK;
}

static zap_status_t settle(zap_gpu_chan_t *ch, size_t slot)
{
    ch->slot_ticket[slot] = 0;
    ch->pending--;
    atomic_fetch_sub(&pending_all, 1);
    return ZAP_OK;
}

zap_status_t zap_gpu_test(zap_gpu_chan_t *ch, uint64_t ticket)
{
    size_t slot = (size_t)(ticket % ZAP_GPU_STATUS_RING);
    if (ch->slot_ticket[slot] != ticket)
        return ZAP_ERR_INVALID_PARAM;
    volatile unsigned long long *w = &ch->status_host[slot];
    unsigned long long v = *w;
    if ((v >> 8) != ticket) {
        /* Not finished, or failed without a word: ask the stream now and then
         * (a driver call), so a failed launch or a fault is not waited on
         * forever. */
        if ((++ch->polls & 63) != 0)
            return ZAP_INPROGRESS;
        cudaError_t err = cudaStreamQuery(ch->stream);
        if (err == cudaErrorNotReady)
            return ZAP_INPROGRESS;
        v = *w;
        if ((v >> 8) != ticket) {
            settle(ch, slot);
            if (err == cudaSuccess) { /* the stream is idle, yet the kernel never wrote its word */
                zap_error("cuda: GPU path kernel of rank %d (ticket %llu) ended without its status", ch->me,
                          (unsigned long long)ticket);
                return ZAP_ERR_CUDA;
            }
            return check(err, "GPU path kernel");
        }
    }
    __sync_synchronize(); /* the word before anything the kernel wrote that the host reads next */
    settle(ch, slot);
    switch (v & 15) {
    case ZAP_GPU_DONE_OK: return ZAP_OK;
    case ZAP_GPU_DONE_CANCELED: return ZAP_ERR_CANCELED;
    default:
        zap_error("cuda: GPU path kernel of rank %d: no flag from rank %d within the timeout", ch->me,
                  (int)((v >> 4) & 15));
        return ZAP_ERR_TIMED_OUT;
    }
}
