/* The slab pool.
 *
 * Memory layout. A pool holds chunks taken from its backing. Each chunk
 * serves one size class and is cut into equal slabs; its length is
 * min(chunk_bytes, 32768 slabs), so a slab index always fits 15 bits and the
 * free-slab bitmap has three fixed levels (32768 -> 512 -> 8 -> 1 words), which
 * makes finding a free slab O(1) with three count-trailing-zeros. A cold
 * buffer (above 1 MiB) is a chunk of its own with a single slab. Free state
 * lives outside the slabs: a managed slab may be resident on the GPU, and
 * writing a free-list link into it would drag the page back to the host.
 *
 * Bookkeeping per slab is one generation byte plus a bit, about 0.44% of a
 * 256-byte slab and less for larger classes.
 *
 * Handles. A buffer handle packs pool serial (16 bits), generation (8),
 * class (3), chunk index (21) and slab (16). Freeing checks all of them, so a
 * stale copy of a freed handle is refused instead of freeing the slab's next
 * owner. The generation wraps after 256 reuses; the header says so.
 *
 * Locks. One spinlock per class (cold included) guards that class's chunks,
 * bitmaps and partial list; the pool mutex guards the chunk table, the sorted
 * address index, the budget and the hooks. Order: class lock, then pool mutex.
 * A chunk is only removed with both held, so holding a class lock keeps every
 * chunk of that class alive. */
#include "zap/pool.h"
#include "pool/backing.h"
#include "base/config_table.h"
#include "base/log.h"
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define NCLASS ZAP_POOL_NUM_CLASSES
#define COLD ZAP_POOL_COLD_CLASS
#define MAX_SLABS_PER_CHUNK 32768u
#define L0_WORDS (MAX_SLABS_PER_CHUNK / 64)
#define TABLE_PAGE 1024u
#define TABLE_PAGES 2048u /* 2^21 chunk indices */
#define MAX_POOLS 1024u

static const size_t class_sizes[NCLASS] = {256, 1024, 4096, 16384, 65536, 1048576};
static const char *const class_names[NCLASS + 1] = {"256B", "1KiB", "4KiB", "16KiB", "64KiB", "1MiB", "cold"};

typedef struct chunk {
    uint8_t *base;
    uint8_t *dev_base;
    size_t len;
    uint32_t index;      /* in the chunk table */
    uint8_t cls;
    uint32_t nslabs;
    uint32_t nfree;
    size_t slab_size;    /* for cold: the rounded length */
    size_t cold_request; /* cold: bytes asked for */
    uint64_t *l0;        /* 1 = free */
    uint64_t l1[8];
    uint64_t l2;
    uint8_t *gen;
    void *cookies[ZAP_POOL_MAX_HOOKS];
    struct chunk *prev, *next; /* partial list (chunks with a free slab) */
    bool on_partial;
} chunk_t;

typedef struct {
    atomic_flag lock;
    chunk_t *partial;
    _Atomic uint64_t out; /* buffers out */
} class_state_t;

typedef struct {
    uintptr_t base;
    size_t len;
    chunk_t *chunk;
} range_t;

struct zap_pool {
    uint16_t serial;
    char name[32];
    const zap_backing_ops_t *backing;
    void *backing_ctx;
    uint64_t budget;          /* 0 = unlimited */
    uint64_t chunk_bytes;
    size_t page;
    class_state_t classes[NCLASS + 1];

    pthread_mutex_t mutex;
    uint64_t reserved;        /* under mutex; mirrored atomically for stats */
    _Atomic uint64_t reserved_pub;
    _Atomic uint64_t in_use;
    _Atomic uint64_t high_water;
    _Atomic uint64_t cold_allocs;
    _Atomic uint64_t failed_allocs;
    _Atomic uint64_t nchunks;
    _Atomic uint64_t bookkeeping;

    _Atomic(chunk_t *) *table[TABLE_PAGES]; /* pages allocated on demand, never moved */
    uint32_t *free_idx;       /* recycled chunk indices (stack) */
    uint32_t free_idx_n, free_idx_cap;
    uint32_t next_idx;

    range_t *ranges;          /* sorted by base */
    uint32_t nranges, ranges_cap;
    /* The address span of every range, [span_lo, span_hi], written under the
     * mutex and read without it: lookup answers "not pool memory" for an
     * address outside it at the cost of two loads, which is what a message
     * in caller memory pays (no chunks at all: span_lo > span_hi). */
    _Atomic uintptr_t span_lo, span_hi;

    zap_pool_hooks_t hooks[ZAP_POOL_MAX_HOOKS];
    bool hook_used[ZAP_POOL_MAX_HOOKS];
};

/* ---- the registry of live pools, for decoding handles ------------------- */

static _Atomic(zap_pool_t *) registry[MAX_POOLS];
static _Atomic uint16_t registry_serial[MAX_POOLS];
static pthread_mutex_t registry_lock = PTHREAD_MUTEX_INITIALIZER;
static uint16_t registry_epoch[MAX_POOLS];

static zap_status_t registry_add(zap_pool_t *pool)
{
    pthread_mutex_lock(&registry_lock);
    for (uint32_t slot = 0; slot < MAX_POOLS; slot++) {
        if (atomic_load(&registry[slot]) == NULL) {
            /* serial = epoch (6 bits) << 10 | slot, never 0, so a zeroed
             * handle never names a pool */
            registry_epoch[slot] = (uint16_t)((registry_epoch[slot] + 1) & 63);
            if (registry_epoch[slot] == 0)
                registry_epoch[slot] = 1;
            pool->serial = (uint16_t)(registry_epoch[slot] << 10 | slot);
            atomic_store(&registry_serial[slot], pool->serial);
            atomic_store(&registry[slot], pool);
            pthread_mutex_unlock(&registry_lock);
            return ZAP_OK;
        }
    }
    pthread_mutex_unlock(&registry_lock);
    zap_error("pool: too many pools (%u)", MAX_POOLS);
    return ZAP_ERR_NO_RESOURCE;
}

static void registry_remove(zap_pool_t *pool)
{
    pthread_mutex_lock(&registry_lock);
    uint32_t slot = pool->serial & (MAX_POOLS - 1);
    atomic_store(&registry[slot], NULL);
    atomic_store(&registry_serial[slot], 0);
    pthread_mutex_unlock(&registry_lock);
}

static zap_pool_t *registry_find(uint16_t serial)
{
    uint32_t slot = serial & (MAX_POOLS - 1);
    if (serial == 0 || atomic_load(&registry_serial[slot]) != serial)
        return NULL;
    return atomic_load(&registry[slot]);
}

/* ---- handles ------------------------------------------------------------ */

static uint64_t handle_pack(uint16_t serial, uint8_t gen, unsigned cls, uint32_t chunk, uint32_t slab)
{
    return (uint64_t)serial << 48 | (uint64_t)gen << 40 | (uint64_t)(cls & 7) << 37 |
           (uint64_t)(chunk & 0x1fffff) << 16 | (slab & 0xffff);
}

typedef struct {
    uint16_t serial;
    uint8_t gen;
    unsigned cls;
    uint32_t chunk;
    uint32_t slab;
} handle_t;

static handle_t handle_unpack(uint64_t h)
{
    handle_t d = {(uint16_t)(h >> 48), (uint8_t)(h >> 40), (unsigned)(h >> 37) & 7,
                  (uint32_t)(h >> 16) & 0x1fffff, (uint32_t)h & 0xffff};
    return d;
}

/* ---- small helpers ------------------------------------------------------ */

static inline void class_lock(class_state_t *c)
{
    while (atomic_flag_test_and_set_explicit(&c->lock, memory_order_acquire)) {
#if defined(__x86_64__) || defined(__i386__)
        __builtin_ia32_pause();
#endif
    }
}

static inline void class_unlock(class_state_t *c) { atomic_flag_clear_explicit(&c->lock, memory_order_release); }

static int class_for(size_t size)
{
    for (int i = 0; i < NCLASS; i++) {
        if (size <= class_sizes[i])
            return i;
    }
    return -1;
}

size_t zap_pool_class_size(int cls) { return (cls >= 0 && cls < NCLASS) ? class_sizes[cls] : 0; }

static chunk_t *table_get(zap_pool_t *pool, uint32_t idx)
{
    _Atomic(chunk_t *) *page = pool->table[idx / TABLE_PAGE];
    if (idx / TABLE_PAGE >= TABLE_PAGES || page == NULL)
        return NULL;
    return atomic_load_explicit(&page[idx % TABLE_PAGE], memory_order_acquire);
}

static void note_in_use(zap_pool_t *pool, uint64_t add)
{
    uint64_t now = atomic_fetch_add_explicit(&pool->in_use, add, memory_order_relaxed) + add;
    uint64_t hw = atomic_load_explicit(&pool->high_water, memory_order_relaxed);
    while (now > hw &&
           !atomic_compare_exchange_weak_explicit(&pool->high_water, &hw, now, memory_order_relaxed,
                                                  memory_order_relaxed)) {
    }
}

/* Three-level bitmap: set/clear a slab's free bit and keep summaries right. */
static void bits_set_free(chunk_t *c, uint32_t s)
{
    c->l0[s / 64] |= 1ull << (s % 64);
    c->l1[s / 4096] |= 1ull << ((s / 64) % 64);
    c->l2 |= 1ull << (s / 4096);
}

static void bits_set_used(chunk_t *c, uint32_t s)
{
    c->l0[s / 64] &= ~(1ull << (s % 64));
    if (c->l0[s / 64] == 0) {
        c->l1[s / 4096] &= ~(1ull << ((s / 64) % 64));
        if (c->l1[s / 4096] == 0)
            c->l2 &= ~(1ull << (s / 4096));
    }
}

static inline bool bits_is_free(const chunk_t *c, uint32_t s) { return (c->l0[s / 64] >> (s % 64)) & 1; }

static uint32_t bits_first_free(const chunk_t *c)
{
    uint32_t i2 = (uint32_t)__builtin_ctzll(c->l2);
    uint32_t i1 = (uint32_t)__builtin_ctzll(c->l1[i2]);
    uint32_t w = i2 * 64 + i1;
    return w * 64 + (uint32_t)__builtin_ctzll(c->l0[w]);
}

static void partial_push(class_state_t *cs, chunk_t *c)
{
    c->prev = NULL;
    c->next = cs->partial;
    if (cs->partial != NULL)
        cs->partial->prev = c;
    cs->partial = c;
    c->on_partial = true;
}

static void partial_remove(class_state_t *cs, chunk_t *c)
{
    if (c->prev != NULL)
        c->prev->next = c->next;
    else
        cs->partial = c->next;
    if (c->next != NULL)
        c->next->prev = c->prev;
    c->prev = c->next = NULL;
    c->on_partial = false;
}

/* ---- chunk creation and release (pool mutex held) ----------------------- */

/* Publishes the span after a change to the ranges. A lookup racing with it
 * may see one bound old and one new; either pair still covers every range
 * present both before and after, and an address in a chunk that is coming or
 * going has no stable answer anyway. */
static void span_update(zap_pool_t *pool)
{
    uintptr_t lo = UINTPTR_MAX, hi = 0;
    if (pool->nranges > 0) {
        const range_t *last = &pool->ranges[pool->nranges - 1];
        lo = pool->ranges[0].base;
        hi = last->base + last->len;
    }
    atomic_store_explicit(&pool->span_lo, lo, memory_order_release);
    atomic_store_explicit(&pool->span_hi, hi, memory_order_release);
}

static zap_status_t ranges_insert(zap_pool_t *pool, chunk_t *c)
{
    if (pool->nranges == pool->ranges_cap) {
        uint32_t cap = pool->ranges_cap ? pool->ranges_cap * 2 : 64;
        range_t *r = realloc(pool->ranges, sizeof(range_t) * cap);
        if (r == NULL)
            return ZAP_ERR_NO_MEMORY;
        atomic_fetch_add(&pool->bookkeeping, sizeof(range_t) * (uint64_t)(cap - pool->ranges_cap));
        pool->ranges = r;
        pool->ranges_cap = cap;
    }
    uint32_t lo = 0, hi = pool->nranges;
    while (lo < hi) {
        uint32_t mid = (lo + hi) / 2;
        if (pool->ranges[mid].base < (uintptr_t)c->base)
            lo = mid + 1;
        else
            hi = mid;
    }
    memmove(&pool->ranges[lo + 1], &pool->ranges[lo], sizeof(range_t) * (pool->nranges - lo));
    pool->ranges[lo] = (range_t){(uintptr_t)c->base, c->len, c};
    pool->nranges++;
    span_update(pool);
    return ZAP_OK;
}

static void ranges_remove(zap_pool_t *pool, chunk_t *c)
{
    for (uint32_t i = 0; i < pool->nranges; i++) {
        if (pool->ranges[i].chunk == c) {
            memmove(&pool->ranges[i], &pool->ranges[i + 1], sizeof(range_t) * (pool->nranges - i - 1));
            pool->nranges--;
            span_update(pool);
            return;
        }
    }
}

static zap_status_t table_take_index(zap_pool_t *pool, uint32_t *idx_p)
{
    uint32_t idx;
    if (pool->free_idx_n > 0) {
        idx = pool->free_idx[--pool->free_idx_n];
    } else {
        if (pool->next_idx >= TABLE_PAGE * TABLE_PAGES) {
            zap_error("pool %s: chunk table full (%u chunks)", pool->name, pool->next_idx);
            return ZAP_ERR_NO_RESOURCE;
        }
        idx = pool->next_idx;
        if (pool->table[idx / TABLE_PAGE] == NULL) {
            _Atomic(chunk_t *) *page = calloc(TABLE_PAGE, sizeof(*page));
            if (page == NULL)
                return ZAP_ERR_NO_MEMORY;
            atomic_fetch_add(&pool->bookkeeping, TABLE_PAGE * sizeof(*page));
            pool->table[idx / TABLE_PAGE] = page;
        }
        pool->next_idx++;
    }
    *idx_p = idx;
    return ZAP_OK;
}

static void table_put_index(zap_pool_t *pool, uint32_t idx)
{
    atomic_store_explicit(&pool->table[idx / TABLE_PAGE][idx % TABLE_PAGE], NULL, memory_order_release);
    if (pool->free_idx_n == pool->free_idx_cap) {
        uint32_t cap = pool->free_idx_cap ? pool->free_idx_cap * 2 : 64;
        uint32_t *f = realloc(pool->free_idx, sizeof(uint32_t) * cap);
        if (f == NULL)
            return; /* the index is lost, not reused: harmless */
        atomic_fetch_add(&pool->bookkeeping, sizeof(uint32_t) * (uint64_t)(cap - pool->free_idx_cap));
        pool->free_idx = f;
        pool->free_idx_cap = cap;
    }
    pool->free_idx[pool->free_idx_n++] = idx;
}

static void hooks_remove_chunk(zap_pool_t *pool, chunk_t *c)
{
    for (int h = ZAP_POOL_MAX_HOOKS - 1; h >= 0; h--) {
        if (pool->hook_used[h] && pool->hooks[h].on_remove != NULL)
            pool->hooks[h].on_remove(pool->hooks[h].ctx, c->base, c->len, c->cookies[h]);
        c->cookies[h] = NULL;
    }
}

static zap_status_t hooks_add_chunk(zap_pool_t *pool, chunk_t *c)
{
    for (int h = 0; h < ZAP_POOL_MAX_HOOKS; h++) {
        if (!pool->hook_used[h] || pool->hooks[h].on_add == NULL)
            continue;
        zap_status_t st = pool->hooks[h].on_add(pool->hooks[h].ctx, c->base, c->len, pool->backing->kind,
                                                &c->cookies[h]);
        if (st != ZAP_OK) {
            for (int u = h - 1; u >= 0; u--) {
                if (pool->hook_used[u] && pool->hooks[u].on_remove != NULL)
                    pool->hooks[u].on_remove(pool->hooks[u].ctx, c->base, c->len, c->cookies[u]);
                c->cookies[u] = NULL;
            }
            return st;
        }
    }
    return ZAP_OK;
}

static size_t chunk_meta_bytes(const chunk_t *c)
{
    return sizeof(*c) + (c->cls == COLD ? 0 : (size_t)L0_WORDS * 8 + c->nslabs);
}

static void chunk_free_struct(zap_pool_t *pool, chunk_t *c)
{
    atomic_fetch_sub(&pool->bookkeeping, chunk_meta_bytes(c));
    free(c->l0);
    free(c->gen);
    free(c);
}

/* Takes a chunk of len bytes from the backing, within the budget. */
static zap_status_t chunk_create(zap_pool_t *pool, unsigned cls, size_t len, size_t slab, uint32_t nslabs,
                                 chunk_t **chunk_p)
{
    if (pool->budget != 0 && (pool->reserved > pool->budget || len > pool->budget - pool->reserved))
        return ZAP_ERR_NO_MEMORY;
    chunk_t *c = calloc(1, sizeof(*c));
    if (c == NULL)
        return ZAP_ERR_NO_MEMORY;
    c->cls = (uint8_t)cls;
    c->len = len;
    c->slab_size = slab;
    c->nslabs = nslabs;
    c->nfree = nslabs;
    if (cls != COLD) {
        c->l0 = calloc(L0_WORDS, sizeof(uint64_t));
        c->gen = calloc(nslabs, 1);
        if (c->l0 == NULL || c->gen == NULL) {
            free(c->l0);
            free(c->gen);
            free(c);
            return ZAP_ERR_NO_MEMORY;
        }
        for (uint32_t s = 0; s < nslabs; s++)
            bits_set_free(c, s);
    }
    zap_status_t st = table_take_index(pool, &c->index);
    if (st != ZAP_OK)
        goto err_free_struct;
    void *base = NULL, *dev = NULL;
    st = pool->backing->alloc(pool->backing_ctx, len, &base, &dev);
    if (st != ZAP_OK)
        goto err_put_index;
    c->base = base;
    c->dev_base = dev;
    st = hooks_add_chunk(pool, c);
    if (st != ZAP_OK)
        goto err_release;
    st = ranges_insert(pool, c);
    if (st != ZAP_OK)
        goto err_hooks;
    pool->reserved += len;
    atomic_store(&pool->reserved_pub, pool->reserved);
    atomic_fetch_add(&pool->bookkeeping, chunk_meta_bytes(c));
    if (cls != COLD)
        atomic_fetch_add(&pool->nchunks, 1);
    atomic_store_explicit(&pool->table[c->index / TABLE_PAGE][c->index % TABLE_PAGE], c, memory_order_release);
    *chunk_p = c;
    return ZAP_OK;

err_hooks:
    hooks_remove_chunk(pool, c);
err_release:
    pool->backing->release(pool->backing_ctx, c->base, len);
err_put_index:
    table_put_index(pool, c->index);
err_free_struct:
    free(c->l0);
    free(c->gen);
    free(c);
    return st;
}

static void chunk_destroy(zap_pool_t *pool, chunk_t *c)
{
    ranges_remove(pool, c);
    hooks_remove_chunk(pool, c);
    table_put_index(pool, c->index);
    pool->backing->release(pool->backing_ctx, c->base, c->len);
    pool->reserved -= c->len;
    atomic_store(&pool->reserved_pub, pool->reserved);
    if (c->cls != COLD)
        atomic_fetch_sub(&pool->nchunks, 1);
    chunk_free_struct(pool, c);
}

/* ---- create / destroy --------------------------------------------------- */

static zap_status_t choose_backing(zap_pool_backend_t want, int device, const zap_backing_ops_t **ops_p)
{
    if (want == ZAP_POOL_BACKEND_ENV) {
        int idx = 0;
        zap_status_t st = zap_cfg_get_choice(ZAP_CFG_POOL_BACKEND, &idx);
        if (st != ZAP_OK)
            return st;
        want = (zap_pool_backend_t)idx; /* choices are listed in enum order */
    }
    const char *why = NULL;
    switch (want) {
    case ZAP_POOL_BACKEND_AUTO:
        if (zap_cuda_backing(ZAP_POOL_BACKEND_MANAGED, ops_p, &why) == ZAP_OK)
            return ZAP_OK;
        zap_debug("pool: auto backing is host: %s", why ? why : "no CUDA device");
        *ops_p = &zap_backing_host;
        return ZAP_OK;
    case ZAP_POOL_BACKEND_MANAGED:
    case ZAP_POOL_BACKEND_PINNED: {
        zap_status_t st = zap_cuda_backing(want, ops_p, &why);
        if (st != ZAP_OK)
            zap_error("pool: %s backing unavailable: %s", want == ZAP_POOL_BACKEND_MANAGED ? "managed" : "pinned",
                      why ? why : "no CUDA device");
        return st;
    }
    case ZAP_POOL_BACKEND_HOST:
        *ops_p = &zap_backing_host;
        return ZAP_OK;
    default:
        zap_error("pool: unknown backend %d", (int)want);
        return ZAP_ERR_INVALID_PARAM;
    }
    (void)device;
}

zap_status_t zap_pool_create(const zap_pool_params_t *params, zap_pool_t **pool_p)
{
    zap_pool_params_t p = {0};
    if (pool_p == NULL)
        return ZAP_ERR_INVALID_PARAM;
    if (params != NULL)
        p = *params;
    else
        p.backend = ZAP_POOL_BACKEND_ENV;
    if (params == NULL)
        p.device = -1;

    uint64_t budget = p.budget_bytes;
    if (budget == 0) {
        zap_status_t st = zap_cfg_get_u64(ZAP_CFG_UMA_POOL_BYTES, &budget);
        if (st != ZAP_OK)
            return st;
    } else if (budget == ZAP_POOL_UNLIMITED) {
        budget = 0;
    }
    uint64_t chunk_bytes = p.chunk_bytes;
    if (chunk_bytes == 0) {
        zap_status_t st = zap_cfg_get_u64(ZAP_CFG_POOL_CHUNK_BYTES, &chunk_bytes);
        if (st != ZAP_OK)
            return st;
    } else if (chunk_bytes < (2u << 20) || chunk_bytes > (1u << 30) || (chunk_bytes & (chunk_bytes - 1)) != 0) {
        zap_error("pool: chunk_bytes %llu must be a power of two from 2 MiB to 1 GiB",
                  (unsigned long long)chunk_bytes);
        return ZAP_ERR_INVALID_PARAM;
    }
    /* ZAP_POOL_BACKEND is validated even when params choose, so a typo there
     * is never silently ignored. */
    int ignored;
    zap_status_t st = zap_cfg_get_choice(ZAP_CFG_POOL_BACKEND, &ignored);
    if (st != ZAP_OK)
        return st;
    const zap_backing_ops_t *ops = NULL;
    st = choose_backing(p.backend, p.device, &ops);
    if (st != ZAP_OK)
        return st;

    zap_pool_t *pool = calloc(1, sizeof(*pool));
    if (pool == NULL)
        return ZAP_ERR_NO_MEMORY;
    snprintf(pool->name, sizeof(pool->name), "%s", p.name ? p.name : "pool");
    pool->backing = ops;
    pool->budget = budget;
    pool->chunk_bytes = chunk_bytes;
    long pg = sysconf(_SC_PAGESIZE);
    pool->page = pg > 0 ? (size_t)pg : 4096;
    for (int i = 0; i <= NCLASS; i++)
        atomic_flag_clear(&pool->classes[i].lock);
    atomic_store(&pool->bookkeeping, sizeof(*pool));
    atomic_init(&pool->span_lo, UINTPTR_MAX);
    atomic_init(&pool->span_hi, 0);
    if (pthread_mutex_init(&pool->mutex, NULL) != 0) {
        st = ZAP_ERR_NO_RESOURCE;
        goto err_free;
    }
    st = ops->init(p.device, &pool->backing_ctx);
    if (st != ZAP_OK)
        goto err_mutex;
    st = registry_add(pool);
    if (st != ZAP_OK)
        goto err_backing;
    zap_debug("pool %s: created, backing %s, budget %llu, chunk %llu", pool->name, ops->name,
              (unsigned long long)budget, (unsigned long long)chunk_bytes);
    *pool_p = pool;
    return ZAP_OK;

err_backing:
    ops->fini(pool->backing_ctx);
err_mutex:
    pthread_mutex_destroy(&pool->mutex);
err_free:
    free(pool);
    return st;
}

static uint64_t buffers_out(zap_pool_t *pool)
{
    uint64_t n = 0;
    for (int i = 0; i <= NCLASS; i++)
        n += atomic_load(&pool->classes[i].out);
    return n;
}

zap_status_t zap_pool_destroy(zap_pool_t *pool)
{
    if (pool == NULL)
        return ZAP_OK;
    if (buffers_out(pool) != 0) {
        uint64_t bytes = atomic_load(&pool->in_use);
        zap_error("pool %s: destroy refused: %llu buffers (%llu bytes) still out", pool->name,
                  (unsigned long long)buffers_out(pool), (unsigned long long)bytes);
        for (int i = 0; i <= NCLASS; i++) {
            uint64_t n = atomic_load(&pool->classes[i].out);
            if (n != 0)
                zap_error("pool %s:   class %s: %llu buffers out", pool->name, class_names[i],
                          (unsigned long long)n);
        }
        return ZAP_ERR_BUSY;
    }
    registry_remove(pool);
    pthread_mutex_lock(&pool->mutex);
    for (uint32_t idx = 0; idx < pool->next_idx; idx++) {
        chunk_t *c = table_get(pool, idx);
        if (c != NULL)
            chunk_destroy(pool, c);
    }
    pthread_mutex_unlock(&pool->mutex);
    for (uint32_t pg = 0; pg < TABLE_PAGES; pg++)
        free(pool->table[pg]);
    free(pool->free_idx);
    free(pool->ranges);
    pool->backing->fini(pool->backing_ctx);
    pthread_mutex_destroy(&pool->mutex);
    free(pool);
    return ZAP_OK;
}

/* ---- alloc / free ------------------------------------------------------- */

static zap_status_t trim_class(zap_pool_t *pool, int cls, uint64_t *released)
{
    class_state_t *cs = &pool->classes[cls];
    class_lock(cs);
    chunk_t *c = cs->partial;
    while (c != NULL) {
        chunk_t *next = c->next;
        if (c->nfree == c->nslabs) {
            partial_remove(cs, c);
            pthread_mutex_lock(&pool->mutex);
            *released += c->len;
            chunk_destroy(pool, c);
            pthread_mutex_unlock(&pool->mutex);
        }
        c = next;
    }
    class_unlock(cs);
    return ZAP_OK;
}

zap_status_t zap_pool_trim(zap_pool_t *pool, uint64_t *released_p)
{
    if (pool == NULL)
        return ZAP_ERR_INVALID_PARAM;
    uint64_t released = 0;
    for (int i = 0; i < NCLASS; i++)
        trim_class(pool, i, &released);
    if (released_p != NULL)
        *released_p = released;
    return ZAP_OK;
}

static zap_status_t fail_alloc(zap_pool_t *pool, zap_status_t st, size_t size)
{
    atomic_fetch_add(&pool->failed_allocs, 1);
    if (st == ZAP_ERR_NO_MEMORY)
        zap_debug("pool %s: allocation of %zu bytes refused: budget %llu, reserved %llu", pool->name, size,
                  (unsigned long long)pool->budget, (unsigned long long)atomic_load(&pool->reserved_pub));
    return st;
}

/* Grows a class by one chunk; on budget exhaustion returns free chunks of
 * every class to the backing and tries once more. */
static zap_status_t grow_class(zap_pool_t *pool, int cls)
{
    size_t slab = class_sizes[cls];
    size_t len = pool->chunk_bytes;
    if (len / slab > MAX_SLABS_PER_CHUNK)
        len = slab * MAX_SLABS_PER_CHUNK;
    uint32_t nslabs = (uint32_t)(len / slab);
    for (int attempt = 0; attempt < 2; attempt++) {
        pthread_mutex_lock(&pool->mutex);
        chunk_t *c = NULL;
        zap_status_t st = chunk_create(pool, (unsigned)cls, len, slab, nslabs, &c);
        pthread_mutex_unlock(&pool->mutex);
        if (st == ZAP_OK) {
            class_state_t *cs = &pool->classes[cls];
            class_lock(cs);
            partial_push(cs, c);
            class_unlock(cs);
            return ZAP_OK;
        }
        if (st != ZAP_ERR_NO_MEMORY || attempt == 1)
            return st;
        uint64_t released = 0;
        zap_pool_trim(pool, &released);
        if (released == 0)
            return st;
    }
    return ZAP_ERR_NO_MEMORY;
}

static zap_status_t alloc_cold(zap_pool_t *pool, size_t size, zap_buf_t *buf_p)
{
    if (size > SIZE_MAX - pool->page)
        return fail_alloc(pool, ZAP_ERR_NO_MEMORY, size);
    size_t len = (size + pool->page - 1) / pool->page * pool->page;
    class_state_t *cs = &pool->classes[COLD];
    zap_status_t st = ZAP_ERR_NO_MEMORY;
    chunk_t *c = NULL;
    for (int attempt = 0; attempt < 2; attempt++) {
        class_lock(cs);
        pthread_mutex_lock(&pool->mutex);
        st = chunk_create(pool, COLD, len, len, 1, &c);
        pthread_mutex_unlock(&pool->mutex);
        if (st == ZAP_OK) {
            c->nfree = 0;
            c->cold_request = size;
            atomic_fetch_add_explicit(&cs->out, 1, memory_order_relaxed);
            class_unlock(cs);
            break;
        }
        class_unlock(cs);
        uint64_t released = 0;
        if (st != ZAP_ERR_NO_MEMORY || attempt == 1 || (zap_pool_trim(pool, &released), released == 0))
            return fail_alloc(pool, st, size);
    }
    atomic_fetch_add(&pool->cold_allocs, 1);
    note_in_use(pool, len);
    buf_p->ptr = c->base;
    buf_p->dev_ptr = c->dev_base;
    buf_p->size = size;
    buf_p->handle = handle_pack(pool->serial, 0, COLD, c->index, 0);
    return ZAP_OK;
}

zap_status_t zap_pool_alloc(zap_pool_t *pool, size_t size, zap_buf_t *buf_p)
{
    if (pool == NULL || buf_p == NULL || size == 0)
        return ZAP_ERR_INVALID_PARAM;
    int cls = class_for(size);
    if (cls < 0)
        return alloc_cold(pool, size, buf_p);
    class_state_t *cs = &pool->classes[cls];
    for (;;) {
        class_lock(cs);
        chunk_t *c = cs->partial;
        if (c != NULL) {
            uint32_t s = bits_first_free(c);
            bits_set_used(c, s);
            if (--c->nfree == 0)
                partial_remove(cs, c);
            uint8_t gen = c->gen[s];
            atomic_fetch_add_explicit(&cs->out, 1, memory_order_relaxed);
            class_unlock(cs);
            note_in_use(pool, c->slab_size);
            size_t off = (size_t)s * c->slab_size;
            buf_p->ptr = c->base + off;
            buf_p->dev_ptr = c->dev_base != NULL ? c->dev_base + off : NULL;
            buf_p->size = size;
            buf_p->handle = handle_pack(pool->serial, gen, (unsigned)cls, c->index, s);
            return ZAP_OK;
        }
        class_unlock(cs);
        zap_status_t st = grow_class(pool, cls);
        if (st != ZAP_OK)
            return fail_alloc(pool, st, size);
    }
}

static zap_status_t bad_handle(const char *why)
{
    zap_warn("pool: free of an invalid buffer handle: %s", why);
    return ZAP_ERR_INVALID_PARAM;
}

zap_status_t zap_buf_free(zap_buf_t *buf)
{
    if (buf == NULL)
        return ZAP_ERR_INVALID_PARAM;
    if (buf->handle == 0)
        return ZAP_OK; /* already freed through this struct, or empty */
    handle_t h = handle_unpack(buf->handle);
    zap_pool_t *pool = registry_find(h.serial);
    if (pool == NULL)
        return bad_handle("its pool was destroyed (or the handle is forged)");
    if (h.cls > COLD)
        return bad_handle("bad class");
    class_state_t *cs = &pool->classes[h.cls];
    class_lock(cs);
    chunk_t *c = table_get(pool, h.chunk);
    if (c == NULL || c->cls != h.cls || h.slab >= c->nslabs) {
        class_unlock(cs);
        return bad_handle("stale or forged handle (no such slab)");
    }
    if (h.cls == COLD) {
        if ((uint8_t *)buf->ptr != c->base) {
            class_unlock(cs);
            return bad_handle("stale handle (cold buffer reused)");
        }
        atomic_fetch_sub_explicit(&cs->out, 1, memory_order_relaxed);
        atomic_fetch_sub(&pool->in_use, c->len);
        pthread_mutex_lock(&pool->mutex);
        chunk_destroy(pool, c);
        pthread_mutex_unlock(&pool->mutex);
        class_unlock(cs);
    } else {
        if (bits_is_free(c, h.slab) || c->gen[h.slab] != h.gen ||
            (uint8_t *)buf->ptr != c->base + (size_t)h.slab * c->slab_size) {
            class_unlock(cs);
            return bad_handle("stale handle (slab already free or reused)");
        }
        c->gen[h.slab]++;
        bits_set_free(c, h.slab);
        if (c->nfree++ == 0)
            partial_push(cs, c);
        atomic_fetch_sub_explicit(&cs->out, 1, memory_order_relaxed);
        size_t slab = c->slab_size;
        class_unlock(cs);
        atomic_fetch_sub_explicit(&pool->in_use, slab, memory_order_relaxed);
    }
    memset(buf, 0, sizeof(*buf));
    return ZAP_OK;
}

/* Resolves a live handle to its pool, for the read-only queries. */
static zap_pool_t *handle_pool(const zap_buf_t *buf)
{
    if (buf == NULL || buf->handle == 0)
        return NULL;
    return registry_find(handle_unpack(buf->handle).serial);
}

zap_status_t zap_buf_prefetch(const zap_buf_t *buf, int to_device)
{
    zap_pool_t *pool = handle_pool(buf);
    if (pool == NULL)
        return ZAP_ERR_INVALID_PARAM;
    if (pool->backing->prefetch == NULL || buf->size == 0)
        return ZAP_OK;
    return pool->backing->prefetch(pool->backing_ctx, buf->ptr, buf->size, to_device);
}

zap_status_t zap_buf_kind(const zap_buf_t *buf, zap_mem_kind_t *kind_p)
{
    zap_pool_t *pool = handle_pool(buf);
    if (pool == NULL || kind_p == NULL)
        return ZAP_ERR_INVALID_PARAM;
    *kind_p = pool->backing->kind;
    return ZAP_OK;
}

zap_mem_kind_t zap_pool_kind(const zap_pool_t *pool) { return pool ? pool->backing->kind : ZAP_MEM_HOST; }

const char *zap_pool_backend_name(const zap_pool_t *pool) { return pool ? pool->backing->name : "none"; }

zap_status_t zap_pool_stats(zap_pool_t *pool, zap_pool_stats_t *stats_p)
{
    if (pool == NULL || stats_p == NULL)
        return ZAP_ERR_INVALID_PARAM;
    zap_pool_stats_t s = {0};
    s.budget_bytes = pool->budget;
    s.reserved_bytes = atomic_load(&pool->reserved_pub);
    s.in_use_bytes = atomic_load(&pool->in_use);
    s.high_water_bytes = atomic_load(&pool->high_water);
    s.bookkeeping_bytes = atomic_load(&pool->bookkeeping);
    s.chunks = atomic_load(&pool->nchunks);
    s.cold_allocs = atomic_load(&pool->cold_allocs);
    s.failed_allocs = atomic_load(&pool->failed_allocs);
    for (int i = 0; i <= NCLASS; i++) {
        s.class_size[i] = i < NCLASS ? class_sizes[i] : 0;
        s.class_in_use[i] = atomic_load(&pool->classes[i].out);
        s.buffers_out += s.class_in_use[i];
    }
    *stats_p = s;
    return ZAP_OK;
}

/* ---- hooks and lookup --------------------------------------------------- */

zap_status_t zap_pool_hooks_add(zap_pool_t *pool, const zap_pool_hooks_t *hooks, int *slot_p)
{
    if (pool == NULL || hooks == NULL || slot_p == NULL)
        return ZAP_ERR_INVALID_PARAM;
    pthread_mutex_lock(&pool->mutex);
    int slot = -1;
    for (int h = 0; h < ZAP_POOL_MAX_HOOKS; h++) {
        if (!pool->hook_used[h]) {
            slot = h;
            break;
        }
    }
    if (slot < 0) {
        pthread_mutex_unlock(&pool->mutex);
        return ZAP_ERR_NO_RESOURCE;
    }
    for (uint32_t i = 0; i < pool->nranges; i++) {
        chunk_t *c = pool->ranges[i].chunk;
        zap_status_t st = hooks->on_add ? hooks->on_add(hooks->ctx, c->base, c->len, pool->backing->kind,
                                                        &c->cookies[slot])
                                        : ZAP_OK;
        if (st != ZAP_OK) {
            for (uint32_t u = 0; u < i; u++) {
                chunk_t *d = pool->ranges[u].chunk;
                if (hooks->on_remove)
                    hooks->on_remove(hooks->ctx, d->base, d->len, d->cookies[slot]);
                d->cookies[slot] = NULL;
            }
            pthread_mutex_unlock(&pool->mutex);
            return st;
        }
    }
    pool->hooks[slot] = *hooks;
    pool->hook_used[slot] = true;
    pthread_mutex_unlock(&pool->mutex);
    *slot_p = slot;
    return ZAP_OK;
}

zap_status_t zap_pool_hooks_remove(zap_pool_t *pool, int slot)
{
    if (pool == NULL || slot < 0 || slot >= ZAP_POOL_MAX_HOOKS)
        return ZAP_ERR_INVALID_PARAM;
    pthread_mutex_lock(&pool->mutex);
    if (!pool->hook_used[slot]) {
        pthread_mutex_unlock(&pool->mutex);
        return ZAP_ERR_INVALID_PARAM;
    }
    for (uint32_t i = 0; i < pool->nranges; i++) {
        chunk_t *c = pool->ranges[i].chunk;
        if (pool->hooks[slot].on_remove)
            pool->hooks[slot].on_remove(pool->hooks[slot].ctx, c->base, c->len, c->cookies[slot]);
        c->cookies[slot] = NULL;
    }
    pool->hook_used[slot] = false;
    memset(&pool->hooks[slot], 0, sizeof(pool->hooks[slot]));
    pthread_mutex_unlock(&pool->mutex);
    return ZAP_OK;
}

/* The binary search of zap_pool_lookup, for an address inside the span. Out of
 * line, so that the answer for an address outside it, which a transport asks
 * for every small message in caller memory, saves no registers. */
__attribute__((noinline)) static zap_status_t lookup_ranges(zap_pool_t *pool, uintptr_t p, size_t len, int slot,
                                                            zap_pool_region_t *region_p)
{
    pthread_mutex_lock(&pool->mutex);
    uint32_t lo = 0, hi = pool->nranges;
    while (lo < hi) { /* first range with base > p */
        uint32_t mid = (lo + hi) / 2;
        if (pool->ranges[mid].base <= p)
            lo = mid + 1;
        else
            hi = mid;
    }
    zap_status_t st = ZAP_ERR_NOT_FOUND;
    if (lo > 0) {
        const range_t *r = &pool->ranges[lo - 1];
        if (p - r->base <= r->len && len <= r->len - (p - r->base)) {
            region_p->base = (void *)r->base;
            region_p->len = r->len;
            region_p->kind = pool->backing->kind;
            region_p->cookie = slot >= 0 ? r->chunk->cookies[slot] : NULL;
            st = ZAP_OK;
        }
    }
    pthread_mutex_unlock(&pool->mutex);
    return st;
}

zap_status_t zap_pool_lookup(zap_pool_t *pool, const void *ptr, size_t len, int slot, zap_pool_region_t *region_p)
{
    if (pool == NULL || region_p == NULL || slot >= ZAP_POOL_MAX_HOOKS)
        return ZAP_ERR_INVALID_PARAM;
    uintptr_t p = (uintptr_t)ptr;
    uintptr_t span_lo = atomic_load_explicit(&pool->span_lo, memory_order_acquire);
    uintptr_t span_hi = atomic_load_explicit(&pool->span_hi, memory_order_acquire);
    if (p < span_lo || p > span_hi || len > span_hi - p)
        return ZAP_ERR_NOT_FOUND;
    return lookup_ranges(pool, p, len, slot, region_p);
}
