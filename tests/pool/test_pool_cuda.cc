// CUDA backings. These need a device; without one they skip and say why.
#include <gtest/gtest.h>
#include <cstring>
extern "C" {
#include "zap/pool.h"
#include "pool/backing.h"
}

namespace {
bool have_device(const char **why)
{
    return zap_cuda_device_count(why) > 0;
}
} // namespace

TEST(PoolCuda, AutoBackingIsManagedWithADeviceAndHostWithout)
{
    const char *why = nullptr;
    zap_pool_params_t p = {};
    p.backend = ZAP_POOL_BACKEND_AUTO;
    p.budget_bytes = 64u << 20;
    p.device = -1;
    zap_pool_t *pool = nullptr;
    ASSERT_EQ(zap_pool_create(&p, &pool), ZAP_OK);
    if (have_device(&why))
        EXPECT_STREQ(zap_pool_backend_name(pool), "managed");
    else
        EXPECT_STREQ(zap_pool_backend_name(pool), "host") << why;
    EXPECT_EQ(zap_pool_destroy(pool), ZAP_OK);
}

TEST(PoolCuda, ExplicitCudaBackingWithoutDeviceIsUnsupported)
{
    const char *why = nullptr;
    if (have_device(&why))
        GTEST_SKIP() << "a CUDA device is present; this checks the no-device path";
    for (zap_pool_backend_t b : {ZAP_POOL_BACKEND_MANAGED, ZAP_POOL_BACKEND_PINNED}) {
        zap_pool_params_t p = {};
        p.backend = b;
        zap_pool_t *pool = nullptr;
        EXPECT_EQ(zap_pool_create(&p, &pool), ZAP_ERR_UNSUPPORTED);
        EXPECT_EQ(pool, nullptr);
    }
}

class PoolCudaBacking : public ::testing::TestWithParam<zap_pool_backend_t> {};

TEST_P(PoolCudaBacking, BuffersAreSharedBetweenHostAndDevice)
{
    const char *why = nullptr;
    if (!have_device(&why))
        GTEST_SKIP() << "no CUDA device: " << why;
    zap_pool_params_t p = {};
    p.backend = GetParam();
    p.budget_bytes = 256u << 20;
    p.device = -1;
    zap_pool_t *pool = nullptr;
    ASSERT_EQ(zap_pool_create(&p, &pool), ZAP_OK);
    for (size_t size : {(size_t)100, (size_t)70000, (size_t)(3u << 20)}) {
        zap_buf_t b;
        ASSERT_EQ(zap_pool_alloc(pool, size, &b), ZAP_OK);
        ASSERT_NE(b.dev_ptr, nullptr);
        if (GetParam() == ZAP_POOL_BACKEND_MANAGED) {
            EXPECT_EQ(b.dev_ptr, b.ptr);
        }
        memset(b.ptr, 0x5a, size);
        EXPECT_EQ(zap_buf_prefetch(&b, 1), ZAP_OK);
        EXPECT_EQ(zap_buf_prefetch(&b, 0), ZAP_OK);
        zap_pool_region_t r;
        EXPECT_EQ(zap_pool_lookup(pool, b.ptr, size, -1, &r), ZAP_OK);
        EXPECT_EQ(r.kind, GetParam() == ZAP_POOL_BACKEND_MANAGED ? ZAP_MEM_MANAGED : ZAP_MEM_PINNED);
        ASSERT_EQ(zap_buf_free(&b), ZAP_OK);
    }
    EXPECT_EQ(zap_pool_destroy(pool), ZAP_OK);
}

INSTANTIATE_TEST_SUITE_P(Backings, PoolCudaBacking,
                         ::testing::Values(ZAP_POOL_BACKEND_MANAGED, ZAP_POOL_BACKEND_PINNED),
                         [](const auto &info) {
                             return std::string(info.param == ZAP_POOL_BACKEND_MANAGED ? "managed" : "pinned");
                         });

TEST(PoolCuda, ManagedPoolNeverTakesMoreThanTheDeviceHasFree)
{
    const char *why = nullptr;
    if (!have_device(&why))
        GTEST_SKIP() << "no CUDA device: " << why;
    uint64_t fr = 0, tot = 0;
    ASSERT_EQ(zap_cuda_device_info(0, nullptr, 0, &fr, &tot), ZAP_OK);
    zap_pool_params_t p = {};
    p.backend = ZAP_POOL_BACKEND_MANAGED;
    p.budget_bytes = ZAP_POOL_UNLIMITED;
    p.device = 0;
    zap_pool_t *pool = nullptr;
    ASSERT_EQ(zap_pool_create(&p, &pool), ZAP_OK);
    zap_buf_t b;
    // One cold buffer the size of all free memory must be refused up front.
    EXPECT_EQ(zap_pool_alloc(pool, (size_t)fr, &b), ZAP_ERR_NO_MEMORY);
    EXPECT_EQ(zap_pool_destroy(pool), ZAP_OK);
}
