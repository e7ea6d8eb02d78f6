/* The slab pool: size-classed buffers over CUDA managed memory (or pinned or
 * plain host memory) whose bytes the CPU, the GPU and the network all see.
 *
 * Buffers come from six size classes (256 B, 1 KiB, 4 KiB, 16 KiB, 64 KiB,
 * 1 MiB), carved from large chunks so that a chunk is registered with a network
 * stack once rather than per buffer. Larger requests take a cold path: one
 * backing allocation each, still counted against the budget. Alloc and free are
 * O(1) and thread-safe.
 *
 * A buffer is described by a zap_buf_t the caller holds by value. Freeing
 * through the same zap_buf_t twice is harmless (the handle is cleared), and a
 * stale copy of a freed handle is refused with ZAP_ERR_INVALID_PARAM rather than
 * freeing someone else's buffer (8-bit generation tag: a copy that is 256
 * reuses stale can go unnoticed). */
#ifndef ZAP_POOL_H
#define ZAP_POOL_H
#include <stddef.h>
#include <stdint.h>
#include "zap/common.h"
#include "zap/status.h"

#define ZAP_POOL_NUM_CLASSES 6
#define ZAP_POOL_COLD_CLASS ZAP_POOL_NUM_CLASSES /* class index of cold buffers */

typedef struct zap_pool zap_pool_t;

typedef enum zap_mem_kind {
    ZAP_MEM_HOST = 0,    /* pageable host memory; the GPU cannot address it */
    ZAP_MEM_PINNED = 1,  /* page-locked, mapped host memory; GPU reads it over the bus */
    ZAP_MEM_MANAGED = 2, /* CUDA managed memory; pages migrate on touch or prefetch */
    ZAP_MEM_DEVICE = 3   /* device-only memory (cudaMalloc); never from the pool */
} zap_mem_kind_t;

typedef enum zap_pool_backend {
    ZAP_POOL_BACKEND_AUTO = 0, /* managed where a CUDA device exists, else host */
    ZAP_POOL_BACKEND_MANAGED = 1,
    ZAP_POOL_BACKEND_PINNED = 2,
    ZAP_POOL_BACKEND_HOST = 3,
    ZAP_POOL_BACKEND_ENV = 4   /* whatever ZAP_POOL_BACKEND says (the default when params is NULL) */
} zap_pool_backend_t;

/* Options for zap_pool_create. All-zero means "defaults from the environment";
 * new fields are appended. */
typedef struct zap_pool_params {
    /* Budget in bytes for chunks plus cold buffers; 0 takes ZAP_UMA_POOL_BYTES.
     * Use ZAP_POOL_UNLIMITED for no budget. */
    uint64_t budget_bytes;
    /* Chunk size; 0 takes ZAP_POOL_CHUNK_BYTES. Power of two, 2 MiB to 1 GiB. */
    uint64_t chunk_bytes;
    /* Backing; 0 (AUTO) chooses, ZAP_POOL_BACKEND_ENV reads ZAP_POOL_BACKEND. */
    zap_pool_backend_t backend;
    /* CUDA device for managed/pinned backings; -1 means current device. */
    int device;
    /* Name used in log lines and leak reports; NULL means "pool". Borrowed for
     * the call only (copied). */
    const char *name;
} zap_pool_params_t;

#define ZAP_POOL_UNLIMITED UINT64_MAX

/* A buffer handed out by the pool. The caller owns the struct; the memory is
 * the pool's until zap_buf_free. */
typedef struct zap_buf {
    void *ptr;        /* host-visible address; NULL for an empty (freed) handle */
    void *dev_ptr;    /* device address: same as ptr for managed memory and for
                         pinned memory under unified addressing; NULL for host */
    size_t size;      /* requested size in bytes */
    uint64_t handle;  /* opaque: pool, chunk, slot and generation */
} zap_buf_t;

typedef struct zap_pool_stats {
    uint64_t budget_bytes;            /* 0 when unlimited */
    uint64_t reserved_bytes;          /* chunks plus cold buffers held from the backing */
    uint64_t in_use_bytes;            /* slab-rounded bytes of buffers now out */
    uint64_t high_water_bytes;        /* the most in_use_bytes has been */
    uint64_t bookkeeping_bytes;       /* the pool's own metadata */
    uint64_t chunks;                  /* chunks held (cold buffers excluded) */
    uint64_t cold_allocs;             /* cold-path allocations so far */
    uint64_t failed_allocs;           /* allocations refused (budget or backing) */
    uint64_t buffers_out;             /* buffers now out, all classes */
    uint64_t class_size[ZAP_POOL_NUM_CLASSES + 1];   /* slab size; 0 for cold */
    uint64_t class_in_use[ZAP_POOL_NUM_CLASSES + 1]; /* buffers out per class, cold last */
} zap_pool_stats_t;

/* Called for each chunk (and cold buffer) the pool takes from or gives back to
 * its backing, so that a network stack can register it once. on_add may set
 * *cookie_p; the same cookie comes back to on_remove. A failing on_add fails
 * the allocation that needed the chunk with its status. Called with pool locks
 * held: must not call back into the pool. */
typedef struct zap_pool_hooks {
    zap_status_t (*on_add)(void *ctx, void *base, size_t len, zap_mem_kind_t kind, void **cookie_p);
    void (*on_remove)(void *ctx, void *base, size_t len, void *cookie);
    void *ctx;
} zap_pool_hooks_t;

/* What zap_pool_lookup finds for an address inside pool memory. */
typedef struct zap_pool_region {
    void *base;            /* chunk (or cold buffer) start */
    size_t len;            /* its length */
    zap_mem_kind_t kind;
    void *cookie;          /* what the hook in the given slot set, else NULL */
} zap_pool_region_t;

#define ZAP_POOL_MAX_HOOKS 4

ZAP_BEGIN_DECLS

/* Creates a pool. params may be NULL (everything from the environment).
 * Returns: ZAP_OK and *pool_p (free with zap_pool_destroy);
 * ZAP_ERR_INVALID_PARAM for a malformed setting or parameter (logged with the
 * variable name, value and accepted form); ZAP_ERR_UNSUPPORTED when a CUDA
 * backing is asked for and the build or machine has no CUDA device;
 * ZAP_ERR_CUDA when the CUDA runtime fails; ZAP_ERR_NO_MEMORY. */
ZAP_API zap_status_t zap_pool_create(const zap_pool_params_t *params, zap_pool_t **pool_p);

/* Destroys a pool. With buffers still out it changes nothing, logs their count
 * and bytes per class and returns ZAP_ERR_BUSY: memory under a live buffer is
 * never freed. NULL is accepted (ZAP_OK). Not thread-safe against concurrent
 * use of the same pool. */
ZAP_API zap_status_t zap_pool_destroy(zap_pool_t *pool);

/* Takes a buffer of at least size bytes (size > 0). On success fills *buf_p.
 * Returns ZAP_ERR_INVALID_PARAM (size 0, NULL arguments), ZAP_ERR_NO_MEMORY
 * (budget exhausted, after returning wholly free chunks to the backing),
 * ZAP_ERR_CUDA. *buf_p is written only on success. Thread-safe, O(1). */
ZAP_API zap_status_t zap_pool_alloc(zap_pool_t *pool, size_t size, zap_buf_t *buf_p);

/* Returns a buffer to its pool and clears *buf (so a second call is a no-op
 * returning ZAP_OK). A stale copy of a freed handle, a handle of a destroyed
 * pool or a forged handle gives ZAP_ERR_INVALID_PARAM and changes nothing.
 * Thread-safe, O(1). */
ZAP_API zap_status_t zap_buf_free(zap_buf_t *buf);

/* Residency hint: moves a managed buffer's pages to the GPU (to_device != 0)
 * or to the host, asynchronously on the default stream. A no-op returning
 * ZAP_OK for host and pinned buffers. ZAP_ERR_INVALID_PARAM for a freed handle,
 * ZAP_ERR_CUDA when the prefetch fails. */
ZAP_API zap_status_t zap_buf_prefetch(const zap_buf_t *buf, int to_device);

/* The memory kind behind buf, or ZAP_ERR_INVALID_PARAM for a freed handle. */
ZAP_API zap_status_t zap_buf_kind(const zap_buf_t *buf, zap_mem_kind_t *kind_p);

/* Copies the pool's counters into *stats_p. Thread-safe; the counters are read
 * without stopping allocation, so they are each exact but not a snapshot. */
ZAP_API zap_status_t zap_pool_stats(zap_pool_t *pool, zap_pool_stats_t *stats_p);

/* The pool's memory kind and a constant backing name ("managed", "pinned",
 * "host"). */
ZAP_API zap_mem_kind_t zap_pool_kind(const zap_pool_t *pool);
ZAP_API const char *zap_pool_backend_name(const zap_pool_t *pool);

/* Returns every wholly free chunk to the backing; *released_p (optional) gets
 * the bytes. Thread-safe. */
ZAP_API zap_status_t zap_pool_trim(zap_pool_t *pool, uint64_t *released_p);

/* Installs hooks in a free slot; on_add runs at once for every chunk the pool
 * already holds. *slot_p identifies the hooks for zap_pool_lookup and
 * zap_pool_hooks_remove. ZAP_ERR_NO_RESOURCE when all ZAP_POOL_MAX_HOOKS slots
 * are taken; an on_add failure is returned after undoing the chunks done so far. */
ZAP_API zap_status_t zap_pool_hooks_add(zap_pool_t *pool, const zap_pool_hooks_t *hooks, int *slot_p);

/* Calls on_remove for every chunk and frees the slot. */
ZAP_API zap_status_t zap_pool_hooks_remove(zap_pool_t *pool, int slot);

/* Finds the chunk or cold buffer holding [ptr, ptr+len). ZAP_ERR_NOT_FOUND when
 * the range is not wholly inside pool memory. slot selects whose cookie is
 * returned (-1 for none). Thread-safe; O(log chunks), and no lock for an
 * address outside the span of all chunks. */
ZAP_API zap_status_t zap_pool_lookup(zap_pool_t *pool, const void *ptr, size_t len, int slot,
                                     zap_pool_region_t *region_p);

/* Slab size of class i (0 <= i < ZAP_POOL_NUM_CLASSES), else 0. */
ZAP_API size_t zap_pool_class_size(int cls);

ZAP_END_DECLS
#endif
