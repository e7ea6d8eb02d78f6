// Bad input to the pool: each call is refused with its own status and the
// pool's counters are as they were (docs/bad-input.md, rows P*).
#include "badinput_util.h"
#include <climits>
#include <cstdint>

TEST(BadPool, CreateWithNullOutputIsInvalidParam)
{
    zap_pool_params_t pp{};
    pp.backend = ZAP_POOL_BACKEND_HOST;
    EXPECT_EQ(zap_pool_create(&pp, nullptr), ZAP_ERR_INVALID_PARAM);
}

TEST(BadPool, ChunkBytesBelowTwoMiBIsInvalidParam)
{
    LogCapture log;
    zap_pool_params_t pp{};
    pp.backend = ZAP_POOL_BACKEND_HOST;
    pp.chunk_bytes = 1u << 20;
    zap_pool_t *p = reinterpret_cast<zap_pool_t *>(0x1);
    EXPECT_EQ(zap_pool_create(&pp, &p), ZAP_ERR_INVALID_PARAM);
    EXPECT_EQ(p, reinterpret_cast<zap_pool_t *>(0x1)) << "output written on failure";
    EXPECT_TRUE(log.contains("chunk_bytes"));
}

TEST(BadPool, ChunkBytesNotPowerOfTwoIsInvalidParam)
{
    LogCapture log;
    zap_pool_params_t pp{};
    pp.backend = ZAP_POOL_BACKEND_HOST;
    pp.chunk_bytes = 3u << 20;
    zap_pool_t *p = nullptr;
    EXPECT_EQ(zap_pool_create(&pp, &p), ZAP_ERR_INVALID_PARAM);
    EXPECT_EQ(p, nullptr);
}

TEST(BadPool, ChunkBytesAboveOneGiBIsInvalidParam)
{
    LogCapture log;
    zap_pool_params_t pp{};
    pp.backend = ZAP_POOL_BACKEND_HOST;
    pp.chunk_bytes = 2ull << 30;
    zap_pool_t *p = nullptr;
    EXPECT_EQ(zap_pool_create(&pp, &p), ZAP_ERR_INVALID_PARAM);
}

TEST(BadPool, UnknownBackendValueIsInvalidParam)
{
    LogCapture log;
    zap_pool_params_t pp{};
    pp.backend = static_cast<zap_pool_backend_t>(42);
    zap_pool_t *p = nullptr;
    EXPECT_EQ(zap_pool_create(&pp, &p), ZAP_ERR_INVALID_PARAM);
    EXPECT_EQ(p, nullptr);
    EXPECT_TRUE(log.contains("unknown backend 42"));
}

TEST(BadPool, AllocOfZeroBytesIsInvalidParamAndChangesNothing)
{
    HostPool hp;
    PoolSnapshot before(hp.p);
    zap_buf_t b{};
    EXPECT_EQ(zap_pool_alloc(hp.p, 0, &b), ZAP_ERR_INVALID_PARAM);
    EXPECT_EQ(b.ptr, nullptr);
    EXPECT_EQ(b.handle, 0u);
    before.expect_same_as(hp.p);
    hp.expect_usable();
}

TEST(BadPool, AllocFromNullPoolIsInvalidParam)
{
    zap_buf_t b{};
    EXPECT_EQ(zap_pool_alloc(nullptr, 64, &b), ZAP_ERR_INVALID_PARAM);
    EXPECT_EQ(b.handle, 0u);
}

TEST(BadPool, AllocWithNullOutputIsInvalidParam)
{
    HostPool hp;
    PoolSnapshot before(hp.p);
    EXPECT_EQ(zap_pool_alloc(hp.p, 64, nullptr), ZAP_ERR_INVALID_PARAM);
    before.expect_same_as(hp.p);
}

TEST(BadPool, AllocOfSizeMaxIsNoMemoryAndChangesNothing)
{
    LogCapture log;
    HostPool hp;
    PoolSnapshot before(hp.p);
    zap_buf_t b{};
    EXPECT_EQ(zap_pool_alloc(hp.p, SIZE_MAX, &b), ZAP_ERR_NO_MEMORY);
    EXPECT_EQ(b.handle, 0u);
    before.expect_same_as(hp.p);
    hp.expect_usable();
}

TEST(BadPool, AllocBeyondBudgetIsNoMemoryAndChangesNothing)
{
    LogCapture log;
    HostPool hp(16ull << 20);
    zap_buf_t keep{};
    ASSERT_EQ(zap_pool_alloc(hp.p, 4096, &keep), ZAP_OK);
    PoolSnapshot before(hp.p);
    zap_buf_t b{};
    EXPECT_EQ(zap_pool_alloc(hp.p, 32u << 20, &b), ZAP_ERR_NO_MEMORY);
    before.expect_same_as(hp.p);
    zap_pool_stats_t s{};
    ASSERT_EQ(zap_pool_stats(hp.p, &s), ZAP_OK);
    EXPECT_EQ(s.failed_allocs, 1u);
    EXPECT_EQ(zap_buf_free(&keep), ZAP_OK);
    hp.expect_usable();
}

TEST(BadPool, FreeOfNullIsInvalidParam) { EXPECT_EQ(zap_buf_free(nullptr), ZAP_ERR_INVALID_PARAM); }

TEST(BadPool, SecondFreeThroughACopyIsInvalidParamAndChangesNothing)
{
    LogCapture log;
    HostPool hp;
    zap_buf_t b{}, other{};
    ASSERT_EQ(zap_pool_alloc(hp.p, 100, &b), ZAP_OK);
    ASSERT_EQ(zap_pool_alloc(hp.p, 100, &other), ZAP_OK);
    zap_buf_t copy = b;
    ASSERT_EQ(zap_buf_free(&b), ZAP_OK);
    PoolSnapshot before(hp.p);
    EXPECT_EQ(zap_buf_free(&copy), ZAP_ERR_INVALID_PARAM);
    before.expect_same_as(hp.p);
    EXPECT_TRUE(log.contains("stale handle"));
    EXPECT_EQ(zap_buf_free(&other), ZAP_OK);
}

TEST(BadPool, FreeOfAReleasedSlabNowReusedIsInvalidParam)
{
    // The released buffer's slab is handed out again; the stale copy must not
    // free the new owner's buffer.
    LogCapture log;
    HostPool hp;
    zap_buf_t b{};
    ASSERT_EQ(zap_pool_alloc(hp.p, 100, &b), ZAP_OK);
    zap_buf_t stale = b;
    ASSERT_EQ(zap_buf_free(&b), ZAP_OK);
    zap_buf_t reused{};
    ASSERT_EQ(zap_pool_alloc(hp.p, 100, &reused), ZAP_OK);
    EXPECT_EQ(reused.ptr, stale.ptr) << "test assumes the slab is reused";
    PoolSnapshot before(hp.p);
    EXPECT_EQ(zap_buf_free(&stale), ZAP_ERR_INVALID_PARAM);
    before.expect_same_as(hp.p);
    EXPECT_EQ(zap_buf_free(&reused), ZAP_OK);
}

TEST(BadPool, FreeOfForgedHandleIsInvalidParam)
{
    LogCapture log;
    HostPool hp;
    PoolSnapshot before(hp.p);
    zap_buf_t forged{};
    forged.ptr = &forged;
    forged.size = 8;
    forged.handle = 0x7fffffffffffffffull;
    EXPECT_EQ(zap_buf_free(&forged), ZAP_ERR_INVALID_PARAM);
    EXPECT_NE(forged.handle, 0u) << "a refused free must not clear the handle";
    before.expect_same_as(hp.p);
}

TEST(BadPool, FreeAfterPoolDestroyedIsInvalidParam)
{
    // Only an empty pool can be destroyed, so the handle is a copy of one
    // freed before: it must resolve to no pool at all.
    LogCapture log;
    zap_buf_t b{}, copy{};
    {
        HostPool hp;
        ASSERT_EQ(zap_pool_alloc(hp.p, 100, &b), ZAP_OK);
        copy = b;
        ASSERT_EQ(zap_buf_free(&b), ZAP_OK);
    }
    EXPECT_EQ(zap_buf_free(&copy), ZAP_ERR_INVALID_PARAM);
    EXPECT_TRUE(log.contains("pool was destroyed"));
}

TEST(BadPool, DestroyWithBuffersOutIsBusyAndPoolStaysUsable)
{
    LogCapture log;
    HostPool hp;
    zap_buf_t b{};
    ASSERT_EQ(zap_pool_alloc(hp.p, 100, &b), ZAP_OK);
    PoolSnapshot before(hp.p);
    EXPECT_EQ(zap_pool_destroy(hp.p), ZAP_ERR_BUSY);
    before.expect_same_as(hp.p);
    hp.expect_usable();
    EXPECT_EQ(zap_buf_free(&b), ZAP_OK);
}

TEST(BadPool, StatsWithNullArgumentsIsInvalidParam)
{
    HostPool hp;
    zap_pool_stats_t s{};
    EXPECT_EQ(zap_pool_stats(hp.p, nullptr), ZAP_ERR_INVALID_PARAM);
    EXPECT_EQ(zap_pool_stats(nullptr, &s), ZAP_ERR_INVALID_PARAM);
}

TEST(BadPool, KindOfFreedBufferIsInvalidParam)
{
    HostPool hp;
    zap_buf_t b{};
    ASSERT_EQ(zap_pool_alloc(hp.p, 100, &b), ZAP_OK);
    ASSERT_EQ(zap_buf_free(&b), ZAP_OK);
    zap_mem_kind_t k = ZAP_MEM_DEVICE;
    EXPECT_EQ(zap_buf_kind(&b, &k), ZAP_ERR_INVALID_PARAM);
    EXPECT_EQ(k, ZAP_MEM_DEVICE);
    EXPECT_EQ(zap_buf_prefetch(&b, 1), ZAP_ERR_INVALID_PARAM);
}

TEST(BadPool, HooksAddWithNullHooksIsInvalidParam)
{
    HostPool hp;
    int slot = -7;
    EXPECT_EQ(zap_pool_hooks_add(hp.p, nullptr, &slot), ZAP_ERR_INVALID_PARAM);
    EXPECT_EQ(slot, -7);
}

TEST(BadPool, HooksRemoveOfBadSlotIsInvalidParam)
{
    HostPool hp;
    EXPECT_EQ(zap_pool_hooks_remove(hp.p, -1), ZAP_ERR_INVALID_PARAM);
    EXPECT_EQ(zap_pool_hooks_remove(hp.p, ZAP_POOL_MAX_HOOKS), ZAP_ERR_INVALID_PARAM);
    EXPECT_EQ(zap_pool_hooks_remove(hp.p, 0), ZAP_ERR_INVALID_PARAM) << "slot 0 is not in use";
}

namespace {
zap_status_t on_add_ok(void *, void *, size_t, zap_mem_kind_t, void **cookie_p)
{
    *cookie_p = nullptr;
    return ZAP_OK;
}
void on_remove_ok(void *, void *, size_t, void *) {}
} // namespace

TEST(BadPool, FifthHookIsNoResourceAndTheFourStay)
{
    HostPool hp;
    zap_pool_hooks_t h{on_add_ok, on_remove_ok, nullptr};
    int slots[ZAP_POOL_MAX_HOOKS];
    for (int i = 0; i < ZAP_POOL_MAX_HOOKS; i++)
        ASSERT_EQ(zap_pool_hooks_add(hp.p, &h, &slots[i]), ZAP_OK);
    int extra = -7;
    EXPECT_EQ(zap_pool_hooks_add(hp.p, &h, &extra), ZAP_ERR_NO_RESOURCE);
    EXPECT_EQ(extra, -7);
    for (int i = 0; i < ZAP_POOL_MAX_HOOKS; i++)
        EXPECT_EQ(zap_pool_hooks_remove(hp.p, slots[i]), ZAP_OK);
}

TEST(BadPool, LookupOfForeignPointerIsNotFound)
{
    HostPool hp;
    zap_buf_t b{};
    ASSERT_EQ(zap_pool_alloc(hp.p, 100, &b), ZAP_OK); // the pool has a chunk to search
    int local = 0;
    zap_pool_region_t r{};
    EXPECT_EQ(zap_pool_lookup(hp.p, &local, sizeof(local), -1, &r), ZAP_ERR_NOT_FOUND);
    EXPECT_EQ(zap_pool_lookup(hp.p, b.ptr, 100, -1, nullptr), ZAP_ERR_INVALID_PARAM);
    EXPECT_EQ(zap_buf_free(&b), ZAP_OK);
}

TEST(BadPool, TrimOfNullPoolIsInvalidParam) { EXPECT_EQ(zap_pool_trim(nullptr, nullptr), ZAP_ERR_INVALID_PARAM); }
