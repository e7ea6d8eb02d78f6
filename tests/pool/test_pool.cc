#include <gtest/gtest.h>
#include <cstring>
#include <vector>
#include "log_capture.h"
extern "C" {
#include "zap/pool.h"
}

namespace {
zap_pool_t *make_host_pool(uint64_t budget = ZAP_POOL_UNLIMITED, uint64_t chunk = 2u << 20)
{
    zap_pool_params_t p = {};
    p.budget_bytes = budget;
    p.chunk_bytes = chunk;
    p.backend = ZAP_POOL_BACKEND_HOST;
    p.name = "test";
    zap_pool_t *pool = nullptr;
    EXPECT_EQ(zap_pool_create(&p, &pool), ZAP_OK);
    return pool;
}
} // namespace

TEST(Pool, EachRequestGetsTheSmallestClassThatFits)
{
    zap_pool_t *pool = make_host_pool();
    const size_t sizes[] = {1, 256, 257, 1024, 1025, 4096, 5000, 16384, 65536, 65537, 1 << 20};
    const int want_class[] = {0, 0, 1, 1, 2, 2, 3, 3, 4, 5, 5};
    for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
        zap_buf_t b;
        ASSERT_EQ(zap_pool_alloc(pool, sizes[i], &b), ZAP_OK);
        EXPECT_EQ(b.size, sizes[i]);
        zap_pool_stats_t s;
        zap_pool_stats(pool, &s);
        EXPECT_EQ(s.class_in_use[want_class[i]], 1u) << "size " << sizes[i];
        memset(b.ptr, 0xab, b.size); // the whole buffer is writable
        EXPECT_EQ(zap_buf_free(&b), ZAP_OK);
    }
    EXPECT_EQ(zap_pool_destroy(pool), ZAP_OK);
}

TEST(Pool, SlabsOfOneClassDoNotOverlap)
{
    zap_pool_t *pool = make_host_pool();
    std::vector<zap_buf_t> bufs(20000);
    for (size_t i = 0; i < bufs.size(); i++) {
        ASSERT_EQ(zap_pool_alloc(pool, 256, &bufs[i]), ZAP_OK);
        memset(bufs[i].ptr, (int)(i & 0xff), 256);
    }
    for (size_t i = 0; i < bufs.size(); i++) {
        const unsigned char *p = static_cast<const unsigned char *>(bufs[i].ptr);
        for (int k = 0; k < 256; k++)
            ASSERT_EQ(p[k], (unsigned char)(i & 0xff)) << "buffer " << i << " overwritten";
    }
    for (auto &b : bufs)
        ASSERT_EQ(zap_buf_free(&b), ZAP_OK);
    EXPECT_EQ(zap_pool_destroy(pool), ZAP_OK);
}

TEST(Pool, ColdPathServesLargeRequestsAndCountsAgainstBudget)
{
    zap_pool_t *pool = make_host_pool(8u << 20);
    zap_buf_t big;
    ASSERT_EQ(zap_pool_alloc(pool, (1u << 20) + 1, &big), ZAP_OK);
    zap_pool_stats_t s;
    zap_pool_stats(pool, &s);
    EXPECT_EQ(s.cold_allocs, 1u);
    EXPECT_EQ(s.class_in_use[ZAP_POOL_COLD_CLASS], 1u);
    EXPECT_GE(s.reserved_bytes, (1u << 20) + 1);
    memset(big.ptr, 1, big.size);
    // 7 MiB more does not fit next to the cold buffer in an 8 MiB budget.
    zap_buf_t too_big;
    EXPECT_EQ(zap_pool_alloc(pool, 7u << 20, &too_big), ZAP_ERR_NO_MEMORY);
    ASSERT_EQ(zap_buf_free(&big), ZAP_OK);
    // Cold memory goes back at once, so now it fits.
    ASSERT_EQ(zap_pool_alloc(pool, 7u << 20, &too_big), ZAP_OK);
    ASSERT_EQ(zap_buf_free(&too_big), ZAP_OK);
    zap_pool_stats(pool, &s);
    EXPECT_EQ(s.reserved_bytes, 0u);
    EXPECT_EQ(zap_pool_destroy(pool), ZAP_OK);
}

TEST(Pool, BudgetExhaustionFailsThenRecoversAfterFree)
{
    zap_pool_t *pool = make_host_pool(4u << 20, 2u << 20); // two chunks
    std::vector<zap_buf_t> got;
    zap_buf_t b;
    zap_status_t st;
    while ((st = zap_pool_alloc(pool, 1 << 20, &b)) == ZAP_OK)
        got.push_back(b);
    EXPECT_EQ(st, ZAP_ERR_NO_MEMORY);
    EXPECT_EQ(got.size(), 4u);
    zap_pool_stats_t s;
    zap_pool_stats(pool, &s);
    EXPECT_EQ(s.failed_allocs, 1u);
    EXPECT_LE(s.reserved_bytes, 4u << 20);
    for (auto &x : got)
        ASSERT_EQ(zap_buf_free(&x), ZAP_OK);
    // The 1 MiB chunks are now wholly free; a different class must be able to
    // take the budget back (free chunks are returned to the backing on demand).
    ASSERT_EQ(zap_pool_alloc(pool, 256, &b), ZAP_OK);
    ASSERT_EQ(zap_buf_free(&b), ZAP_OK);
    EXPECT_EQ(zap_pool_destroy(pool), ZAP_OK);
}

TEST(Pool, DoubleFreeThroughTheSameStructIsHarmless)
{
    zap_pool_t *pool = make_host_pool();
    zap_buf_t b;
    ASSERT_EQ(zap_pool_alloc(pool, 100, &b), ZAP_OK);
    EXPECT_EQ(zap_buf_free(&b), ZAP_OK);
    EXPECT_EQ(b.ptr, nullptr);
    EXPECT_EQ(zap_buf_free(&b), ZAP_OK);
    zap_pool_stats_t s;
    zap_pool_stats(pool, &s);
    EXPECT_EQ(s.buffers_out, 0u);
    EXPECT_EQ(zap_pool_destroy(pool), ZAP_OK);
}

TEST(Pool, StaleCopyOfAFreedHandleIsRefusedAndDoesNotFreeTheNewOwner)
{
    zap_pool_t *pool = make_host_pool();
    zap_buf_t a;
    ASSERT_EQ(zap_pool_alloc(pool, 100, &a), ZAP_OK);
    zap_buf_t stale = a;
    ASSERT_EQ(zap_buf_free(&a), ZAP_OK);
    zap_buf_t b; // reuses the same slab
    ASSERT_EQ(zap_pool_alloc(pool, 100, &b), ZAP_OK);
    EXPECT_EQ(b.ptr, stale.ptr);
    LogCapture log;
    EXPECT_EQ(zap_buf_free(&stale), ZAP_ERR_INVALID_PARAM);
    EXPECT_TRUE(log.contains("stale")) << log.all();
    zap_pool_stats_t s;
    zap_pool_stats(pool, &s);
    EXPECT_EQ(s.buffers_out, 1u) << "the new owner's buffer must still be out";
    ASSERT_EQ(zap_buf_free(&b), ZAP_OK);
    EXPECT_EQ(zap_pool_destroy(pool), ZAP_OK);
}

TEST(Pool, DestroyWithBuffersOutReportsThemAndFreesNothing)
{
    zap_pool_t *pool = make_host_pool();
    zap_buf_t a, b, c;
    ASSERT_EQ(zap_pool_alloc(pool, 300, &a), ZAP_OK);
    ASSERT_EQ(zap_pool_alloc(pool, 300, &b), ZAP_OK);
    ASSERT_EQ(zap_pool_alloc(pool, 3u << 20, &c), ZAP_OK);
    {
        LogCapture log;
        EXPECT_EQ(zap_pool_destroy(pool), ZAP_ERR_BUSY);
        EXPECT_TRUE(log.contains("3 buffers")) << log.all();
        EXPECT_TRUE(log.contains("1KiB: 2 buffers out")) << log.all();
        EXPECT_TRUE(log.contains("cold: 1 buffers out")) << log.all();
    }
    // Memory under the live buffers is still there and usable.
    memset(a.ptr, 7, a.size);
    memset(c.ptr, 7, c.size);
    ASSERT_EQ(zap_buf_free(&a), ZAP_OK);
    ASSERT_EQ(zap_buf_free(&b), ZAP_OK);
    ASSERT_EQ(zap_buf_free(&c), ZAP_OK);
    EXPECT_EQ(zap_pool_destroy(pool), ZAP_OK);
}

TEST(Pool, FreeAfterPoolDestroyedIsAnErrorNotACrash)
{
    zap_pool_t *pool = make_host_pool();
    zap_buf_t a;
    ASSERT_EQ(zap_pool_alloc(pool, 64, &a), ZAP_OK);
    zap_buf_t copy = a;
    ASSERT_EQ(zap_buf_free(&a), ZAP_OK);
    ASSERT_EQ(zap_pool_destroy(pool), ZAP_OK);
    LogCapture log;
    EXPECT_EQ(zap_buf_free(&copy), ZAP_ERR_INVALID_PARAM);
    EXPECT_TRUE(log.contains("pool was destroyed")) << log.all();
}

TEST(Pool, ForgedHandleIsRefused)
{
    zap_pool_t *pool = make_host_pool();
    zap_buf_t a;
    ASSERT_EQ(zap_pool_alloc(pool, 64, &a), ZAP_OK);
    zap_buf_t forged = a;
    forged.handle ^= 0xffffull << 16; // another chunk index
    LogCapture log;
    EXPECT_EQ(zap_buf_free(&forged), ZAP_ERR_INVALID_PARAM);
    forged = a;
    forged.ptr = static_cast<char *>(a.ptr) + 1;
    EXPECT_EQ(zap_buf_free(&forged), ZAP_ERR_INVALID_PARAM);
    ASSERT_EQ(zap_buf_free(&a), ZAP_OK);
    EXPECT_EQ(zap_pool_destroy(pool), ZAP_OK);
}

TEST(Pool, BadArgumentsAreInvalidParam)
{
    zap_pool_t *pool = make_host_pool();
    zap_buf_t b = {};
    EXPECT_EQ(zap_pool_alloc(pool, 0, &b), ZAP_ERR_INVALID_PARAM);
    EXPECT_EQ(zap_pool_alloc(nullptr, 8, &b), ZAP_ERR_INVALID_PARAM);
    EXPECT_EQ(zap_pool_alloc(pool, 8, nullptr), ZAP_ERR_INVALID_PARAM);
    EXPECT_EQ(zap_buf_free(nullptr), ZAP_ERR_INVALID_PARAM);
    EXPECT_EQ(zap_pool_stats(pool, nullptr), ZAP_ERR_INVALID_PARAM);
    EXPECT_EQ(zap_pool_create(nullptr, nullptr), ZAP_ERR_INVALID_PARAM);
    zap_pool_params_t p = {};
    p.backend = ZAP_POOL_BACKEND_HOST;
    p.chunk_bytes = 3u << 20;
    zap_pool_t *other = nullptr;
    EXPECT_EQ(zap_pool_create(&p, &other), ZAP_ERR_INVALID_PARAM);
    EXPECT_EQ(other, nullptr);
    EXPECT_EQ(zap_pool_destroy(nullptr), ZAP_OK);
    EXPECT_EQ(zap_pool_destroy(pool), ZAP_OK);
}

TEST(Pool, MalformedBudgetInEnvironmentFailsCreate)
{
    const char *bad[] = {"-1", "lots", "4GB!", ""};
    for (const char *v : bad) {
        ScopedEnv e("ZAP_UMA_POOL_BYTES", v);
        LogCapture log;
        zap_pool_t *pool = nullptr;
        EXPECT_EQ(zap_pool_create(nullptr, &pool), ZAP_ERR_INVALID_PARAM) << v;
        EXPECT_EQ(pool, nullptr);
        EXPECT_TRUE(log.contains("ZAP_UMA_POOL_BYTES")) << log.all();
    }
}

TEST(Pool, BudgetFromEnvironmentIsEnforced)
{
    ScopedEnv e("ZAP_UMA_POOL_BYTES", "2M");
    ScopedEnv c("ZAP_POOL_CHUNK_BYTES", "2M");
    ScopedEnv b("ZAP_POOL_BACKEND", "host");
    zap_pool_t *pool = nullptr;
    ASSERT_EQ(zap_pool_create(nullptr, &pool), ZAP_OK);
    zap_pool_stats_t s;
    zap_pool_stats(pool, &s);
    EXPECT_EQ(s.budget_bytes, 2u << 20);
    zap_buf_t x, y;
    ASSERT_EQ(zap_pool_alloc(pool, 256, &x), ZAP_OK);      // takes the one chunk
    EXPECT_EQ(zap_pool_alloc(pool, 4096, &y), ZAP_ERR_NO_MEMORY); // another class needs a chunk
    ASSERT_EQ(zap_buf_free(&x), ZAP_OK);
    EXPECT_EQ(zap_pool_destroy(pool), ZAP_OK);
}

TEST(Pool, ZeroBudgetMeansUnlimited)
{
    ScopedEnv e("ZAP_UMA_POOL_BYTES", "0");
    ScopedEnv b("ZAP_POOL_BACKEND", "host");
    zap_pool_t *pool = nullptr;
    ASSERT_EQ(zap_pool_create(nullptr, &pool), ZAP_OK);
    zap_pool_stats_t s;
    zap_pool_stats(pool, &s);
    EXPECT_EQ(s.budget_bytes, 0u);
    EXPECT_EQ(zap_pool_destroy(pool), ZAP_OK);
}

TEST(Pool, StatsTrackInUseAndHighWater)
{
    zap_pool_t *pool = make_host_pool();
    zap_buf_t a, b;
    ASSERT_EQ(zap_pool_alloc(pool, 1000, &a), ZAP_OK); // 1 KiB slab
    ASSERT_EQ(zap_pool_alloc(pool, 5000, &b), ZAP_OK); // 16 KiB slab
    zap_pool_stats_t s;
    zap_pool_stats(pool, &s);
    EXPECT_EQ(s.in_use_bytes, 1024u + 16384u);
    EXPECT_EQ(s.buffers_out, 2u);
    ASSERT_EQ(zap_buf_free(&b), ZAP_OK);
    zap_pool_stats(pool, &s);
    EXPECT_EQ(s.in_use_bytes, 1024u);
    EXPECT_EQ(s.high_water_bytes, 1024u + 16384u);
    EXPECT_EQ(s.chunks, 2u);
    ASSERT_EQ(zap_buf_free(&a), ZAP_OK);
    EXPECT_EQ(zap_pool_destroy(pool), ZAP_OK);
}

TEST(Pool, BookkeepingIsUnderOnePercentOfManagedBytes)
{
    zap_pool_t *pool = make_host_pool(ZAP_POOL_UNLIMITED, 8u << 20);
    std::vector<zap_buf_t> bufs;
    for (int cls = 0; cls < ZAP_POOL_NUM_CLASSES; cls++) {
        zap_buf_t b;
        ASSERT_EQ(zap_pool_alloc(pool, zap_pool_class_size(cls), &b), ZAP_OK);
        bufs.push_back(b);
    }
    zap_pool_stats_t s;
    zap_pool_stats(pool, &s);
    double ratio = (double)s.bookkeeping_bytes / (double)s.reserved_bytes;
    RecordProperty("bookkeeping_ratio", std::to_string(ratio));
    EXPECT_LT(ratio, 0.01) << s.bookkeeping_bytes << " of " << s.reserved_bytes;
    for (auto &b : bufs)
        ASSERT_EQ(zap_buf_free(&b), ZAP_OK);
    EXPECT_EQ(zap_pool_destroy(pool), ZAP_OK);
}

namespace {
struct HookLog {
    int adds = 0, removes = 0;
    size_t bytes = 0;
};
zap_status_t on_add(void *ctx, void *, size_t len, zap_mem_kind_t, void **cookie)
{
    auto *h = static_cast<HookLog *>(ctx);
    h->adds++;
    h->bytes += len;
    *cookie = reinterpret_cast<void *>(static_cast<uintptr_t>(0x1000 + h->adds));
    return ZAP_OK;
}
void on_remove(void *ctx, void *, size_t len, void *)
{
    auto *h = static_cast<HookLog *>(ctx);
    h->removes++;
    h->bytes -= len;
}
} // namespace

TEST(Pool, LookupFindsNothingBeforeTheFirstChunkAndAfterTheLastHasGone)
{
    zap_pool_t *pool = make_host_pool();
    zap_pool_region_t r;
    int outside = 0;
    EXPECT_EQ(zap_pool_lookup(pool, &outside, sizeof(outside), -1, &r), ZAP_ERR_NOT_FOUND);
    zap_buf_t cold; // a cold buffer is a chunk of its own, released when freed
    ASSERT_EQ(zap_pool_alloc(pool, 5u << 20, &cold), ZAP_OK);
    void *where = cold.ptr;
    ASSERT_EQ(zap_pool_lookup(pool, where, 1, -1, &r), ZAP_OK);
    EXPECT_EQ(zap_pool_lookup(pool, static_cast<char *>(where) - 1, 1, -1, &r), ZAP_ERR_NOT_FOUND);
    EXPECT_EQ(zap_pool_lookup(pool, static_cast<char *>(where) + r.len, 1, -1, &r), ZAP_ERR_NOT_FOUND);
    ASSERT_EQ(zap_buf_free(&cold), ZAP_OK);
    EXPECT_EQ(zap_pool_lookup(pool, where, 1, -1, &r), ZAP_ERR_NOT_FOUND);
    EXPECT_EQ(zap_pool_destroy(pool), ZAP_OK);
}

TEST(Pool, HooksSeeEveryChunkOnceAndLookupFindsIt)
{
    zap_pool_t *pool = make_host_pool();
    zap_buf_t early;
    ASSERT_EQ(zap_pool_alloc(pool, 64, &early), ZAP_OK); // a chunk before the hook
    HookLog h;
    zap_pool_hooks_t hooks = {on_add, on_remove, &h};
    int slot = -1;
    ASSERT_EQ(zap_pool_hooks_add(pool, &hooks, &slot), ZAP_OK);
    EXPECT_EQ(h.adds, 1);
    zap_buf_t a, cold;
    ASSERT_EQ(zap_pool_alloc(pool, 70000, &a), ZAP_OK);
    ASSERT_EQ(zap_pool_alloc(pool, 5u << 20, &cold), ZAP_OK);
    EXPECT_EQ(h.adds, 3);
    // Many buffers of a class share their chunk's registration.
    zap_buf_t more;
    ASSERT_EQ(zap_pool_alloc(pool, 64, &more), ZAP_OK);
    EXPECT_EQ(h.adds, 3);

    zap_pool_region_t r;
    ASSERT_EQ(zap_pool_lookup(pool, static_cast<char *>(a.ptr) + 10, 100, slot, &r), ZAP_OK);
    EXPECT_LE(r.base, a.ptr);
    EXPECT_NE(r.cookie, nullptr);
    ASSERT_EQ(zap_pool_lookup(pool, cold.ptr, cold.size, slot, &r), ZAP_OK);
    EXPECT_EQ(r.base, cold.ptr);
    int outside = 0;
    EXPECT_EQ(zap_pool_lookup(pool, &outside, sizeof(outside), slot, &r), ZAP_ERR_NOT_FOUND);
    EXPECT_EQ(zap_pool_lookup(pool, cold.ptr, r.len + 1, slot, &r), ZAP_ERR_NOT_FOUND);

    ASSERT_EQ(zap_buf_free(&cold), ZAP_OK);
    EXPECT_EQ(h.removes, 1);
    for (zap_buf_t *b : {&early, &a, &more})
        ASSERT_EQ(zap_buf_free(b), ZAP_OK);
    ASSERT_EQ(zap_pool_hooks_remove(pool, slot), ZAP_OK);
    EXPECT_EQ(h.adds, h.removes);
    EXPECT_EQ(h.bytes, 0u);
    EXPECT_EQ(zap_pool_destroy(pool), ZAP_OK);
}

TEST(Pool, PrefetchOfHostBufferIsANoOp)
{
    zap_pool_t *pool = make_host_pool();
    zap_buf_t a;
    ASSERT_EQ(zap_pool_alloc(pool, 64, &a), ZAP_OK);
    EXPECT_EQ(zap_buf_prefetch(&a, 1), ZAP_OK);
    EXPECT_EQ(zap_buf_prefetch(&a, 0), ZAP_OK);
    zap_mem_kind_t k;
    ASSERT_EQ(zap_buf_kind(&a, &k), ZAP_OK);
    EXPECT_EQ(k, ZAP_MEM_HOST);
    EXPECT_EQ(a.dev_ptr, nullptr);
    ASSERT_EQ(zap_buf_free(&a), ZAP_OK);
    EXPECT_EQ(zap_buf_prefetch(&a, 1), ZAP_ERR_INVALID_PARAM);
    EXPECT_EQ(zap_pool_destroy(pool), ZAP_OK);
}

TEST(Pool, TrimReturnsWhollyFreeChunks)
{
    zap_pool_t *pool = make_host_pool();
    zap_buf_t a;
    ASSERT_EQ(zap_pool_alloc(pool, 64, &a), ZAP_OK);
    ASSERT_EQ(zap_buf_free(&a), ZAP_OK);
    uint64_t released = 0;
    ASSERT_EQ(zap_pool_trim(pool, &released), ZAP_OK);
    EXPECT_EQ(released, 2u << 20);
    zap_pool_stats_t s;
    zap_pool_stats(pool, &s);
    EXPECT_EQ(s.reserved_bytes, 0u);
    EXPECT_EQ(zap_pool_destroy(pool), ZAP_OK);
}
