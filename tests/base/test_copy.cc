// zap_copy (core/base/copy.h): memcpy's result at every distance between
// source and destination within a page, on both sides of the size from which
// the vector copy replaces memcpy, and for every tail length; nothing outside
// the destination range is written.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <algorithm>
#include <vector>

extern "C" {
#include "base/copy.h"
}

namespace {

constexpr size_t kGuard = 64;

void CheckCopy(size_t src_off, size_t dst_off, size_t n)
{
    // Page-aligned bases, so that the offsets set the distance within a page.
    const size_t src_bytes = n + 4096, dst_bytes = n + 4096 + 2 * kGuard;
    uint8_t *src = static_cast<uint8_t *>(std::aligned_alloc(4096, (src_bytes + 4095) / 4096 * 4096));
    uint8_t *dst = static_cast<uint8_t *>(std::aligned_alloc(4096, (dst_bytes + 4095) / 4096 * 4096));
    ASSERT_NE(src, nullptr);
    ASSERT_NE(dst, nullptr);
    for (size_t i = 0; i < src_bytes; i++)
        src[i] = static_cast<uint8_t>((i - src_off) * 131 + 7);
    std::memset(dst, 0xa5, dst_bytes);
    uint8_t *d = dst + kGuard + dst_off;
    zap_copy(d, src + src_off, n);
    for (size_t i = 0; i < n; i++)
        ASSERT_EQ(d[i], static_cast<uint8_t>(i * 131 + 7)) << "byte " << i << " of " << n << ", source offset "
                                                           << src_off << ", destination offset " << dst_off;
    for (size_t i = 0; i < kGuard; i++) {
        ASSERT_EQ(d[-1 - static_cast<ptrdiff_t>(i)], 0xa5) << "written before the range";
        ASSERT_EQ(d[n + i], 0xa5) << "written past the range";
    }
    std::free(src);
    std::free(dst);
}

}  // namespace

TEST(Copy, ShortDistanceIsThePagesOneTo63)
{
    alignas(4096) static uint8_t page[3 * 4096];
    EXPECT_FALSE(zap_copy_short_distance(page, page));
    EXPECT_TRUE(zap_copy_short_distance(page + 1, page));
    EXPECT_TRUE(zap_copy_short_distance(page + 16, page));
    EXPECT_TRUE(zap_copy_short_distance(page + 4096 + 63, page));
    EXPECT_FALSE(zap_copy_short_distance(page + 64, page));
    EXPECT_FALSE(zap_copy_short_distance(page, page + 16)); // the destination before the source
    EXPECT_FALSE(zap_copy_short_distance(page + 4096, page));
}

TEST(Copy, EveryDistanceAndTailGivesMemcpysBytes)
{
    const size_t sizes[] = {0, 1, 127, 2047, 2048, 2049, 2048 + 127, 4096, 4096 + 65, 65536 + 17};
    const size_t offs[] = {0, 1, 8, 15, 16, 31, 32, 48, 63, 64, 65, 100};
    for (size_t n : sizes)
        for (size_t so : offs)
            for (size_t dof : offs)
                CheckCopy(so, dof, n);
}

TEST(Copy, VectorCopyAloneGivesMemcpysBytes)
{
    std::vector<uint8_t> a(70000), b(70000 + 64, 0x5a);
    for (size_t i = 0; i < a.size(); i++)
        a[i] = static_cast<uint8_t>(i ^ (i >> 8));
    for (size_t n : {size_t(0), size_t(1), size_t(128), size_t(129), size_t(255), size_t(70000)}) {
        std::fill(b.begin(), b.end(), 0x5a);
        zap_copy_vector(b.data() + 16, a.data(), n);
        for (size_t i = 0; i < n; i++)
            ASSERT_EQ(b[16 + i], a[i]) << "byte " << i << " of " << n;
        ASSERT_EQ(b[16 + n], 0x5a) << "written past " << n;
        ASSERT_EQ(b[15], 0x5a);
    }
}
