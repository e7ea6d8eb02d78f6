/* User ops (zap/coll.h: zap_op_create): a process-wide table of function,
 * context and commutative flag, indexed by op - ZAP_OP_USER_FIRST.
 *
 * The table is pages of slots allocated as they are needed and never moved
 * or freed, so a collective reads its op's slot without a lock while other
 * threads create and destroy other ops; creation and destruction take the
 * lock. A slot is published by its live flag (release), read with acquire.
 * Using an op after zap_op_destroy is the caller's error; the slot may by
 * then hold another op.
 *
 * MPI's user functions compute inout = in op inout, in being the lower
 * ranks' operand; zap's reductions compute dst = a op b with a the lower
 * ones. So dst == b is one call, fn(a, dst); dst distinct from both is a copy
 * of b into dst, then the call; and dst == a goes through a bounce buffer on
 * the stack, chunk by chunk, since the function writes its second operand. */
#include "coll/reduce/reduce.h"
#include "base/log.h"
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#define PAGE_SLOTS 1024
#define PAGES 64 /* 65536 user ops: ZAP_OP_USER_FIRST .. ZAP_OP_USER_LAST */
_Static_assert(PAGE_SLOTS * PAGES == ZAP_OP_USER_LAST - ZAP_OP_USER_FIRST + 1, "the table covers the op values");

typedef struct user_op {
    zap_op_fn fn;
    void *ctx;
    bool commutative;
    atomic_bool live;
} user_op_t;

static _Atomic(user_op_t *) pages[PAGES];
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static unsigned hint; /* no free slot below it (under lock) */

static user_op_t *slot_of(zap_op_t op)
{
    if (!zap_op_is_user(op))
        return NULL;
    unsigned i = (unsigned)op - (unsigned)ZAP_OP_USER_FIRST;
    user_op_t *page = atomic_load_explicit(&pages[i / PAGE_SLOTS], memory_order_acquire);
    return page != NULL ? &page[i % PAGE_SLOTS] : NULL;
}

static const user_op_t *live_slot(zap_op_t op)
{
    user_op_t *u = slot_of(op);
    return u != NULL && atomic_load_explicit(&u->live, memory_order_acquire) ? u : NULL;
}

zap_status_t zap_op_create(zap_op_fn fn, int commutative, void *ctx, zap_op_t *op_p)
{
    if (fn == NULL || op_p == NULL)
        return ZAP_ERR_INVALID_PARAM;
    pthread_mutex_lock(&lock);
    for (unsigned i = hint; i < PAGES * PAGE_SLOTS; i++) {
        user_op_t *page = atomic_load_explicit(&pages[i / PAGE_SLOTS], memory_order_relaxed);
        if (page == NULL) {
            page = calloc(PAGE_SLOTS, sizeof(user_op_t));
            if (page == NULL) {
                pthread_mutex_unlock(&lock);
                zap_error("coll: no memory for user ops");
                return ZAP_ERR_NO_MEMORY;
            }
            atomic_store_explicit(&pages[i / PAGE_SLOTS], page, memory_order_release);
        }
        user_op_t *u = &page[i % PAGE_SLOTS];
        if (atomic_load_explicit(&u->live, memory_order_relaxed))
            continue;
        u->fn = fn;
        u->ctx = ctx;
        u->commutative = commutative != 0;
        atomic_store_explicit(&u->live, true, memory_order_release);
        hint = i + 1;
        pthread_mutex_unlock(&lock);
        *op_p = (zap_op_t)(ZAP_OP_USER_FIRST + (int)i);
        return ZAP_OK;
    }
    pthread_mutex_unlock(&lock);
    zap_error("coll: zap_op_create: all %d user ops are in use", PAGES * PAGE_SLOTS);
    return ZAP_ERR_NO_RESOURCE;
}

void zap_op_destroy(zap_op_t op)
{
    pthread_mutex_lock(&lock);
    user_op_t *u = slot_of(op);
    if (u != NULL && atomic_load_explicit(&u->live, memory_order_relaxed)) {
        atomic_store_explicit(&u->live, false, memory_order_release);
        unsigned i = (unsigned)op - (unsigned)ZAP_OP_USER_FIRST;
        if (i < hint)
            hint = i;
    }
    pthread_mutex_unlock(&lock);
}

/* Process exit: the pages are reachable from the table, not leaked. */

bool zap_user_op_live(zap_op_t op) { return live_slot(op) != NULL; }

bool zap_op_commutative(zap_op_t op)
{
    if (!zap_op_is_user(op))
        return true;
    const user_op_t *u = live_slot(op);
    return u != NULL && u->commutative;
}

unsigned zap_op_lane(zap_op_t op)
{
    if (!zap_op_is_user(op))
        return (unsigned)op & 0xffu;
    return zap_op_commutative(op) ? 0xe1u : 0xe0u;
}

/* The bounce buffer of the dst == a case. */
#define BOUNCE_BYTES 4096

void zap_reduce_user(zap_dtype_t dt, zap_op_t op, void *dst, const void *a, const void *b, size_t count)
{
    const user_op_t *u = live_slot(op);
    size_t es = zap_dtype_size(dt);
    if (u == NULL || count == 0 || es == 0)
        return;
    if (dst == b) {
        u->fn(a, dst, count, u->ctx);
        return;
    }
    if (dst != a) {
        memmove(dst, b, count * es);
        u->fn(a, dst, count, u->ctx);
        return;
    }
    _Alignas(64) unsigned char bounce[BOUNCE_BYTES];
    size_t per = BOUNCE_BYTES / es;
    for (size_t first = 0; first < count; first += per) {
        size_t n = count - first < per ? count - first : per;
        unsigned char *d = (unsigned char *)dst + first * es;
        memcpy(bounce, (const unsigned char *)b + first * es, n * es);
        u->fn(d, bounce, n, u->ctx);
        memcpy(d, bounce, n * es);
    }
}
