/* pool_basics: take buffers from a pool, read its statistics, give them back,
 * and see what happens with a mistake (freeing a stale handle) and with a
 * budget that is too small. Uses the backing ZAP_POOL_BACKEND chooses (CUDA
 * managed memory where a GPU exists, host memory otherwise). */
#include <stdio.h>
#include <string.h>
#include <zap/pool.h>

int main(void)
{
    zap_pool_params_t params = {.budget_bytes = 64u << 20, .backend = ZAP_POOL_BACKEND_ENV, .device = -1,
                                .name = "example"};
    zap_pool_t *pool = NULL;
    zap_status_t st = zap_pool_create(&params, &pool);
    if (st != ZAP_OK) {
        fprintf(stderr, "pool_basics: zap_pool_create: %s\n", zap_status_string(st));
        return 1;
    }
    printf("backing: %s\n", zap_pool_backend_name(pool));

    zap_buf_t small, large;
    if (zap_pool_alloc(pool, 300, &small) != ZAP_OK || zap_pool_alloc(pool, 3u << 20, &large) != ZAP_OK)
        return 1;
    memset(small.ptr, 1, small.size); /* the CPU writes; a kernel could use small.dev_ptr */
    zap_buf_prefetch(&large, 1);      /* a hint: no-op unless the memory is managed */

    zap_pool_stats_t s;
    zap_pool_stats(pool, &s);
    printf("out: %llu buffers, %llu bytes in use, %llu reserved, %llu cold allocations\n",
           (unsigned long long)s.buffers_out, (unsigned long long)s.in_use_bytes,
           (unsigned long long)s.reserved_bytes, (unsigned long long)s.cold_allocs);

    zap_buf_t stale = small;
    zap_buf_free(&small);
    st = zap_buf_free(&stale); /* a copy of a freed handle is refused, not a double free */
    printf("freeing a stale copy: %s\n", zap_status_string(st));

    zap_buf_t huge;
    st = zap_pool_alloc(pool, 128u << 20, &huge); /* beyond the 64 MiB budget */
    printf("allocating past the budget: %s\n", zap_status_string(st));

    zap_buf_free(&large);
    st = zap_pool_destroy(pool);
    printf("destroy: %s\n", zap_status_string(st));
    return st == ZAP_OK ? 0 : 1;
}
