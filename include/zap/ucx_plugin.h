/* The zap UCX plugin: a UCT component named "zap" whose memory domain hands out
 * and recognises zap pool memory, so that an unmodified UCX (and Open MPI's
 * pml ucx above it) can allocate from the pool and knows pool pointers.
 *
 * The plugin is a separate shared library, libzap_ucx.so. Loading it is enough:
 * its constructor registers the component (LD_PRELOAD, or mpirun -x LD_PRELOAD
 * for every rank). A program that links the library can instead call
 * zap_ucx_plugin_register() itself; either way this must happen before the
 * first ucp_init or MPI_Init, because UCX snapshots its component list when a
 * context is created.
 *
 * It relies on UCX internals that change with every minor release. It
 * registers only with UCX 1.13.x or 1.16.x, and only after a layout self-check
 * against a component the running libuct exports; otherwise it declines with
 * one log line and UCX runs exactly as without it. ZAP_UCX_PLUGIN_FORCE_MISMATCH
 * (layout or version) forces that path for tests. The library is never
 * unloaded (UCX cannot forget a component). See docs/plugin.md. */
#ifndef ZAP_UCX_PLUGIN_H
#define ZAP_UCX_PLUGIN_H
#include <stddef.h>
#include <stdint.h>
#include "zap/common.h"
#include "zap/status.h"

/* The names UCX shows: component and memory domain "zap", transport "zap"
 * with the single device "pool". UCX_TLS must list "zap" when it is set. */
#define ZAP_UCX_PLUGIN_COMPONENT "zap"
#define ZAP_UCX_PLUGIN_TL "zap"
#define ZAP_UCX_PLUGIN_DEVICE "pool"

typedef enum zap_ucx_plugin_state {
    ZAP_UCX_PLUGIN_NOT_TRIED = 0,  /* registration has not run yet */
    ZAP_UCX_PLUGIN_REGISTERED = 1, /* the component is in UCX's list */
    ZAP_UCX_PLUGIN_DECLINED = 2    /* version or layout refused; UCX untouched */
} zap_ucx_plugin_state_t;

/* What the plugin did and what UCX asked of it. Counters cover the whole
 * process and only grow. */
typedef struct zap_ucx_plugin_info {
    zap_ucx_plugin_state_t state;
    unsigned ucx_major, ucx_minor, ucx_release; /* running UCX; 0 when unknown */
    int abi;                 /* 113 or 116 once registered, else 0 */
    const char *reason;      /* constant text: why it declined, or "registered" */
    uint64_t md_opens;       /* memory domains UCX opened */
    uint64_t allocs;         /* mem_alloc calls served from the pool */
    uint64_t alloc_bytes;    /* bytes those calls asked for */
    uint64_t frees;          /* mem_free calls */
    uint64_t regs;           /* mem_reg calls */
    uint64_t query_hits;     /* mem_query/detect calls on pool memory */
    uint64_t query_misses;   /* ... on memory that is not the pool's (refused) */
    uint64_t iface_opens;    /* transport interfaces UCX opened */
    const char *pool_backend; /* "managed", "pinned" or "host": backing of the pool
                                 last created by a memory domain; NULL before */
} zap_ucx_plugin_info_t;

ZAP_BEGIN_DECLS

/* Registers the "zap" component with the running UCX, if that UCX is 1.13.x
 * or 1.16.x and its layout self-check passes. Idempotent: later calls return
 * the first outcome. Call before the first ucp_init/MPI_Init.
 * Blocking: no (a few dlsym calls). Thread-safe: yes (runs once).
 * Returns ZAP_OK when the component is registered; ZAP_ERR_VERSION when the
 * plugin declined (one warning says why; UCX is left as it was). */
ZAP_API zap_status_t zap_ucx_plugin_register(void);

/* Copies the plugin's state and counters into *info_p (NULL: ZAP_ERR_INVALID_PARAM).
 * Thread-safe; each counter is exact, the set is not a snapshot. */
ZAP_API zap_status_t zap_ucx_plugin_info(zap_ucx_plugin_info_t *info_p);

/* 1 when [ptr, ptr+len) lies wholly inside memory of the pool the plugin's
 * memory domain serves, else 0 (also before any memory domain was opened).
 * Borrows nothing. Thread-safe. */
ZAP_API int zap_ucx_plugin_owns(const void *ptr, size_t len);

ZAP_END_DECLS
#endif
