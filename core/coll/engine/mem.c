/* Local data work by memory kind (mem.h).
 *
 * Who touches what: the host algorithms copy and reduce host, pinned and
 * managed data with the CPU; only device memory (cudaMalloc, not CPU
 * addressable) goes through cuda/coll's copies and kernels, each a call that
 * waits for the GPU. Managed memory is CPU addressable, and on the host path
 * the CPU touches it anyway (the transport reads and writes it with the CPU,
 * the shared-memory forms copy it into the segment): a CUDA copy or kernel
 * there adds a GPU round trip to every step, waits for a GPU time slice
 * where processes share the device (hundreds of microseconds for an 8-byte
 * call), and moves pages back to the GPU for the transport to fault over
 * again. Large GPU-resident calls take the GPU-resident path instead
 * (core/coll/gpu: ZAP_COLL_GPU_PATH, ZAP_COLL_GPU_MIN_BYTES), which moves
 * them GPU to GPU (docs/collectives.md, "Memory"). */
#include "coll/engine/mem.h"
#include "coll/reduce/reduce.h"
#include "base/log.h"
#include "base/vm_epoch.h"
#include "cuda_coll.h"
#include "base/copy.h"
#include <stdatomic.h>
#include <string.h>

/* Scratch for collectives on host data while the transport's pool is managed
 * memory (the default where a GPU exists). The CPU writes such scratch, so its
 * pages are on the host, but the UCX transport cannot know that and prefetches
 * every managed buffer to the host before sending it: a CUDA call and a
 * stream sync per message, which made small and medium host collectives
 * several times slower than Open MPI on a GPU host (docs/collectives.md,
 * "Memory"). Host scratch skips that. One pool per process, made on first use
 * and left for process exit (it is reachable, not leaked). */
static _Atomic(zap_pool_t *) host_scratch_pool;

static zap_pool_t *coll_host_scratch_pool(void)
{
    zap_pool_t *p = atomic_load_explicit(&host_scratch_pool, memory_order_acquire);
    if (p != NULL)
        return p;
    zap_pool_params_t params = {.backend = ZAP_POOL_BACKEND_HOST, .name = "coll-host-scratch"};
    if (zap_pool_create(&params, &p) != ZAP_OK)
        return NULL;
    zap_pool_t *expected = NULL;
    if (!atomic_compare_exchange_strong(&host_scratch_pool, &expected, p)) {
        (void)zap_pool_destroy(p);
        p = expected;
    }
    return p;
}

/* Above the pool's largest class a buffer is a mapping of its own: made,
 * registered by the transport's hooks and touched page by page on every
 * allocation, unmapped on every free. A collective of that size would pay it
 * per call (a 512 KiB recursive-doubling allreduce needs two 512 KiB slots),
 * so the communicator keeps such buffers (comm->keep). */
static bool kept_size(size_t size) { return size > zap_pool_class_size(ZAP_POOL_NUM_CLASSES - 1); }

/* What all communicators of the process keep, at most: a program with
 * thousands of communicators (an MPI library makes one per MPI
 * communicator) must not hold two large buffers in each until the pool's
 * budget runs out. */
#define KEEP_PROCESS_MAX ((size_t)256 << 20)
static atomic_size_t kept_bytes;

static void keep_clear(zap_comm_t *comm, int i, bool give_back)
{
    atomic_fetch_sub_explicit(&kept_bytes, comm->keep[i].buf.size, memory_order_relaxed);
    if (give_back)
        (void)zap_buf_free(&comm->keep[i].buf);
    memset(&comm->keep[i], 0, sizeof(comm->keep[i]));
}

static bool keep_take(zap_comm_t *comm, zap_pool_t *pool, size_t size, zap_buf_t *buf)
{
    int best = -1;
    for (int i = 0; i < ZAP_COLL_KEEP; i++)
        if (comm->keep[i].buf.handle != 0 && comm->keep[i].pool == pool && comm->keep[i].buf.size >= size &&
            (best < 0 || comm->keep[i].buf.size < comm->keep[best].buf.size))
            best = i;
    if (best < 0)
        return false;
    *buf = comm->keep[best].buf;
    keep_clear(comm, best, false);
    return true;
}

static bool keeps_any(const zap_comm_t *comm)
{
    for (int i = 0; i < ZAP_COLL_KEEP; i++)
        if (comm->keep[i].buf.handle != 0)
            return true;
    return false;
}

/* From pool: a kept buffer that fits, else a new one; when the budget
 * refuses, once more after giving the kept ones back. */
static zap_status_t scratch_from(zap_comm_t *comm, zap_pool_t *pool, size_t size, zap_buf_t *buf)
{
    if (pool == NULL)
        return ZAP_ERR_NO_MEMORY;
    if (kept_size(size) && keep_take(comm, pool, size, buf))
        return ZAP_OK;
    zap_status_t st = zap_pool_alloc(pool, size, buf);
    if (st == ZAP_ERR_NO_MEMORY && keeps_any(comm)) {
        zap_coll_scratch_drop(comm);
        st = zap_pool_alloc(pool, size, buf);
    }
    return st;
}

void zap_coll_scratch_free(zap_comm_t *comm, zap_buf_t *buf)
{
    if (buf->handle == 0)
        return;
    if (!kept_size(buf->size)) {
        (void)zap_buf_free(buf);
        return;
    }
    zap_pool_t *hp = atomic_load_explicit(&host_scratch_pool, memory_order_acquire);
    zap_pool_region_t r;
    zap_pool_t *pool = hp != NULL && zap_pool_lookup(hp, buf->ptr, 1, -1, &r) == ZAP_OK ? hp
                                                                                       : zap_transport_pool(comm->t);
    int slot = 0; /* an empty slot, else the smallest kept buffer */
    for (int i = 0; i < ZAP_COLL_KEEP; i++) {
        if (comm->keep[i].buf.handle == 0) {
            slot = i;
            break;
        }
        if (comm->keep[i].buf.size < comm->keep[slot].buf.size)
            slot = i;
    }
    size_t evicted = comm->keep[slot].buf.handle != 0 ? comm->keep[slot].buf.size : 0;
    if (evicted >= buf->size ||
        atomic_load_explicit(&kept_bytes, memory_order_relaxed) - evicted + buf->size > KEEP_PROCESS_MAX) {
        (void)zap_buf_free(buf);
        return;
    }
    if (evicted != 0)
        keep_clear(comm, slot, true);
    comm->keep[slot].buf = *buf;
    comm->keep[slot].pool = pool;
    atomic_fetch_add_explicit(&kept_bytes, buf->size, memory_order_relaxed);
    memset(buf, 0, sizeof(*buf));
}

void zap_coll_scratch_drop(zap_comm_t *comm)
{
    for (int i = 0; i < ZAP_COLL_KEEP; i++)
        if (comm->keep[i].buf.handle != 0)
            keep_clear(comm, i, true);
}

zap_status_t zap_coll_host_scratch(zap_coll_op_t *op, zap_buf_t *buf, size_t size)
{
    zap_status_t st = scratch_from(op->comm, coll_host_scratch_pool(), size, buf);
    if (st != ZAP_OK)
        zap_error("coll: rank %d: no host buffer of %zu bytes (%s)", op->comm->rank, size, zap_status_string(st));
    return st;
}

zap_status_t zap_coll_scratch(zap_coll_op_t *op, zap_buf_t *buf, size_t size)
{
    if (size == 0) {
        memset(buf, 0, sizeof(*buf));
        return ZAP_OK;
    }
    if (op->mem != ZAP_MEM_DEVICE && zap_pool_kind(zap_transport_pool(op->comm->t)) == ZAP_MEM_MANAGED &&
        scratch_from(op->comm, coll_host_scratch_pool(), size, buf) == ZAP_OK)
        return ZAP_OK;
    zap_status_t st = scratch_from(op->comm, zap_transport_pool(op->comm->t), size, buf);
    if (st != ZAP_OK)
        zap_error("coll: rank %d: no scratch buffer of %zu bytes from the transport pool (%s)", op->comm->rank,
                  size, zap_status_string(st));
    return st;
}

void zap_coll_copy(const zap_coll_op_t *op, void *dst, const void *src, size_t bytes)
{
    if (bytes == 0 || dst == src)
        return;
    if (op->mem == ZAP_MEM_DEVICE && zap_cuda_copy(dst, src, bytes) == ZAP_OK)
        return;
    zap_copy(dst, src, bytes);
}

zap_status_t zap_coll_reduce(const zap_coll_op_t *op, zap_dtype_t dt, zap_op_t zop, void *dst, const void *a,
                             const void *b, size_t count)
{
    if (count == 0)
        return ZAP_OK;
    /* Managed data is reduced by the CPU where it lies (no CUDA call per
     * step); device data never gets here with an op that has no kernel (the
     * collectives refuse it: zap_reduce_check). */
    if (op->mem == ZAP_MEM_DEVICE)
        return zap_cuda_reduce(dt, zop, dst, a, b, count);
    zap_reduce_cpu(dt, zop, dst, a, b, count);
    return ZAP_OK;
}

zap_mem_kind_t zap_coll_mem_kind_of(zap_mem_kind_t a, zap_mem_kind_t b)
{
    if (a == ZAP_MEM_DEVICE || b == ZAP_MEM_DEVICE)
        return ZAP_MEM_DEVICE;
    return a == ZAP_MEM_MANAGED || b == ZAP_MEM_MANAGED ? ZAP_MEM_MANAGED : ZAP_MEM_HOST;
}

/* Device memory under a host algorithm. The call's data is copied into host
 * scratch once (an allreduce's input; a broadcast's buffer on its root) and
 * the algorithm runs there as on host memory, in place; the result goes back
 * when the call completes (zap_coll_host_unstage). Two synchronous copies
 * per call: this is the fallback, not the GPU path. */
zap_status_t zap_coll_host_stage(zap_coll_op_t *op)
{
    zap_coll_args_t *a = &op->args;
    if (op->mem != ZAP_MEM_DEVICE || op->stage_user != NULL)
        return ZAP_OK;
    if (op->kind != ZAP_COLL_ALLREDUCE && op->kind != ZAP_COLL_BCAST) {
        zap_error("coll: rank %d: device memory is supported by allreduce and broadcast only", op->comm->rank);
        return ZAP_ERR_UNSUPPORTED;
    }
    size_t bytes = a->bytes;
    zap_status_t st = zap_coll_host_scratch(op, &op->host_stage, bytes > 0 ? bytes : 1);
    if (st != ZAP_OK)
        return st;
    bool fill = op->kind == ZAP_COLL_ALLREDUCE || op->comm->rank == a->root;
    const void *from = op->kind == ZAP_COLL_ALLREDUCE ? a->src : a->dst;
    if (fill && bytes > 0 && (st = zap_cuda_copy(op->host_stage.ptr, from, bytes)) != ZAP_OK) {
        zap_coll_scratch_free(op->comm, &op->host_stage);
        return st;
    }
    op->stage_user = a->dst;
    a->src = a->dst = op->host_stage.ptr;
    a->src_mem = a->dst_mem = ZAP_MEM_HOST;
    op->mem = ZAP_MEM_HOST;
    return ZAP_OK;
}

zap_status_t zap_coll_host_unstage(zap_coll_op_t *op)
{
    if (op->stage_user == NULL || op->args.bytes == 0)
        return ZAP_OK;
    if (op->kind == ZAP_COLL_BCAST && op->comm->rank == op->args.root)
        return ZAP_OK; /* the root's buffer is already the result */
    return zap_cuda_copy(op->stage_user, op->host_stage.ptr, op->args.bytes);
}

/* Plain host buffers this thread has recently been told about, each valid
 * while the address-space epoch it was recorded under lasts (vm_epoch.h): a
 * program that calls collectives on the same buffers pays the driver's
 * pointer query once, not on every call. Only host answers are kept: an
 * address stops being host memory only by being unmapped, which moves the
 * epoch; device and managed memory can be freed and reallocated as the other
 * kind without any event this layer sees. Per thread, so no lock. */
#define HOST_SEEN 8

typedef struct {
    uintptr_t lo, hi; /* [lo, hi) */
    uint64_t epoch;
} host_seen_t;

/* One thread-local block, so that a lookup from a library loaded with
 * dlopen (the Open MPI component) resolves one TLS address, not three; the
 * entry that answered last is tried first (a program alternates few
 * buffers). */
typedef struct {
    host_seen_t seen[HOST_SEEN];
    unsigned next, last;
} host_seen_tls_t;

static _Thread_local host_seen_tls_t host_tls;

static bool seen_host(uintptr_t lo, uintptr_t hi, uint64_t epoch)
{
    host_seen_tls_t *t = &host_tls;
    const host_seen_t *e = &t->seen[t->last % HOST_SEEN];
    if (e->epoch == epoch && e->lo <= lo && hi <= e->hi)
        return true;
    for (unsigned i = 0; i < HOST_SEEN; i++)
        if (t->seen[i].epoch == epoch && t->seen[i].lo <= lo && hi <= t->seen[i].hi) {
            t->last = i;
            return true;
        }
    return false;
}

static bool known_host(uintptr_t lo, uintptr_t hi, uint64_t epoch)
{
    return epoch != 0 && hi > lo && seen_host(lo, hi, epoch);
}

static zap_mem_kind_t ask_cuda(const void *ptr, uintptr_t lo, uintptr_t hi, uint64_t epoch)
{
    zap_mem_kind_t kind = zap_cuda_ptr_kind(ptr);
    if (kind == ZAP_MEM_PINNED)
        kind = ZAP_MEM_HOST;
    if (kind == ZAP_MEM_HOST && epoch != 0 && hi > lo) {
        host_seen_tls_t *t = &host_tls;
        t->last = t->next % HOST_SEEN;
        t->seen[t->last] = (host_seen_t){.lo = lo, .hi = hi, .epoch = epoch};
        t->next++;
    }
    return kind;
}

zap_mem_kind_t zap_coll_ptr_kind(const void *ptr, size_t len)
{
    if (ptr == NULL || len == 0 || !zap_gpu_device_present()) /* no device: every pointer is host memory */
        return ZAP_MEM_HOST;
    /* Read before asking, so an unmapping during the query makes the record
     * stale rather than wrong. 0: nobody watches, nothing is kept. */
    uint64_t epoch = zap_vm_epoch();
    uintptr_t lo = (uintptr_t)ptr, hi = lo + len;
    return known_host(lo, hi, epoch) ? ZAP_MEM_HOST : ask_cuda(ptr, lo, hi, epoch);
}

zap_mem_kind_t zap_coll_mem_kind(zap_comm_t *comm, const void *ptr, size_t len)
{
    /* No device: no pool holds managed or device memory either (a managed
     * pool needs one), so every pointer is host memory, as in
     * zap_coll_ptr_kind, without the pool's lookup. */
    if (ptr == NULL || len == 0 || !zap_gpu_device_present())
        return ZAP_MEM_HOST;
    uint64_t epoch = zap_vm_epoch(); /* before asking, as in zap_coll_ptr_kind */
    uintptr_t lo = (uintptr_t)ptr, hi = lo + len;
    if (known_host(lo, hi, epoch))
        return ZAP_MEM_HOST;
    zap_pool_region_t region;
    if (zap_pool_lookup(zap_transport_pool(comm->t), ptr, len, -1, &region) == ZAP_OK)
        return region.kind == ZAP_MEM_PINNED ? ZAP_MEM_HOST : region.kind;
    return ask_cuda(ptr, lo, hi, epoch);
}

/* The pipeline setting's default, and the cap of a per-size choice. */
#define SEGMENT_DEFAULT ((size_t)256 << 10)

size_t zap_coll_segment_bytes(const zap_comm_t *comm, size_t unit_bytes, size_t div, size_t lo, size_t hi)
{
    if (comm->set.pipeline_bytes != 0)
        return comm->set.pipeline_bytes;
    if (hi > SEGMENT_DEFAULT)
        hi = SEGMENT_DEFAULT;
    if (lo > hi)
        lo = hi;
    size_t want = unit_bytes / (div ? div : 1), seg = lo;
    while (seg * 2 <= want && seg * 2 <= hi)
        seg *= 2;
    return seg < hi ? seg : hi;
}
