// Bad input to batch verification (docs/bad-input.md, rows V*): malformed
// batch files each refused with their own reason and status, without reading
// outside the buffer (ASan builds check that) or writing the view; bad
// verifier and job arguments refused; a refused batch fails the distributed
// job on every rank with the root's status, and the communicator stays usable.
#include <gtest/gtest.h>
#include <cstring>
#include <functional>
#include <thread>
#include <vector>
#include "log_capture.h"
extern "C" {
#include "zap/inproc.h"
#include "zap/verify.h"
#include "verify/batch_gen.h"
#include "verify/verify_impl.h"
}

namespace {
std::vector<uint8_t> batch(uint64_t n, int variable, uint64_t seed = 5)
{
    zap_gen_params_t p = {};
    p.items = n;
    p.keys = 3;
    p.invalid_fraction = 0.2;
    p.seed = seed;
    p.variable = variable;
    p.max_msg_len = 50;
    p.threads = 1;
    p.batch_id = seed;
    zap_batch_layout_t l;
    EXPECT_EQ(zap_gen_layout(&p, &l), ZAP_OK);
    std::vector<uint8_t> b(l.total_bytes);
    EXPECT_EQ(zap_gen_batch(&p, b.data(), b.size(), nullptr, nullptr), ZAP_OK);
    return b;
}

// Parses b; expects status and reason, and the view untouched on refusal.
void expect_refused(const std::vector<uint8_t> &b, zap_status_t st, zap_batch_reason_t reason, size_t len = SIZE_MAX)
{
    LogCapture log;
    zap_batch_view_t v;
    memset(&v, 0x5a, sizeof(v));
    zap_batch_view_t before = v;
    zap_batch_reason_t r = ZAP_BATCH_OK;
    char detail[200] = "";
    // A copy of exactly the parsed length, so a read past it is an ASan error.
    size_t n = len == SIZE_MAX ? b.size() : len;
    std::vector<uint8_t> exact(b.begin(), b.begin() + (ptrdiff_t)n);
    EXPECT_EQ(zap_batch_parse(exact.data(), n, 0, &v, &r, detail, sizeof(detail)), st);
    EXPECT_EQ(r, reason) << zap_batch_reason_string(r) << ": " << detail;
    EXPECT_EQ(memcmp(&v, &before, sizeof(v)), 0) << "view written on refusal";
    EXPECT_NE(detail[0], '\0');
    EXPECT_TRUE(log.contains(zap_batch_reason_string(reason))) << log.all();
}

std::vector<uint8_t> with_field(std::vector<uint8_t> b, size_t off, int width, uint64_t value)
{
    for (int i = 0; i < width; i++)
        b[off + i] = (uint8_t)(value >> (8 * i));
    return b;
}
} // namespace

TEST(BadBatch, ShorterThanHeaderIsCorrupt) { expect_refused(batch(2, 0), ZAP_ERR_CORRUPT, ZAP_BATCH_ERR_SHORT, 63); }
TEST(BadBatch, EmptyBufferIsCorrupt) { expect_refused(batch(2, 0), ZAP_ERR_CORRUPT, ZAP_BATCH_ERR_SHORT, 0); }
TEST(BadBatch, WrongMagicIsCorrupt)
{
    expect_refused(with_field(batch(2, 0), ZAP_BH_MAGIC, 1, 'T'), ZAP_ERR_CORRUPT, ZAP_BATCH_ERR_MAGIC);
}
TEST(BadBatch, NewerVersionIsVersion)
{
    expect_refused(with_field(batch(2, 0), ZAP_BH_VERSION, 2, 2), ZAP_ERR_VERSION, ZAP_BATCH_ERR_VERSION);
}
TEST(BadBatch, ReservedSchemeIsUnsupported)
{
    expect_refused(with_field(batch(2, 0), ZAP_BH_SCHEME, 2, ZAP_SCHEME_SECP256K1_ECDSA_LOWS), ZAP_ERR_UNSUPPORTED,
                   ZAP_BATCH_ERR_SCHEME);
}
TEST(BadBatch, UnknownSchemeIsUnsupported)
{
    expect_refused(with_field(batch(2, 0), ZAP_BH_SCHEME, 2, 999), ZAP_ERR_UNSUPPORTED, ZAP_BATCH_ERR_SCHEME);
}
TEST(BadBatch, UnknownFlagBitIsCorrupt)
{
    expect_refused(with_field(batch(2, 0), ZAP_BH_FLAGS, 4, 0x81), ZAP_ERR_CORRUPT, ZAP_BATCH_ERR_FLAGS);
}
TEST(BadBatch, DigestFlagForPureEd25519IsCorrupt)
{
    expect_refused(with_field(batch(2, 0), ZAP_BH_FLAGS, 4, 0x3), ZAP_ERR_CORRUPT, ZAP_BATCH_ERR_FLAGS);
}
TEST(BadBatch, FixedMessageLengthNot32IsCorrupt)
{
    expect_refused(with_field(batch(2, 0), ZAP_BH_FIXED_MSG_LEN, 4, 64), ZAP_ERR_CORRUPT, ZAP_BATCH_ERR_MSG_LEN);
}
TEST(BadBatch, FixedMessageLengthInVariableBatchIsCorrupt)
{
    expect_refused(with_field(batch(2, 1), ZAP_BH_FIXED_MSG_LEN, 4, 32), ZAP_ERR_CORRUPT, ZAP_BATCH_ERR_MSG_LEN);
}
TEST(BadBatch, NonzeroReservedFieldIsCorrupt)
{
    expect_refused(with_field(batch(2, 0), ZAP_BH_RESERVED, 4, 1), ZAP_ERR_CORRUPT, ZAP_BATCH_ERR_RESERVED);
}
TEST(BadBatch, StrideBelowRecordIsCorrupt)
{
    expect_refused(with_field(batch(2, 0), ZAP_BH_STRIDE, 4, 112), ZAP_ERR_CORRUPT, ZAP_BATCH_ERR_STRIDE);
}
TEST(BadBatch, StrideNotMultipleOf16IsCorrupt)
{
    expect_refused(with_field(batch(2, 0), ZAP_BH_STRIDE, 4, 136), ZAP_ERR_CORRUPT, ZAP_BATCH_ERR_STRIDE);
}
TEST(BadBatch, StrideAboveLimitIsCorrupt)
{
    expect_refused(with_field(batch(2, 0), ZAP_BH_STRIDE, 4, 8192), ZAP_ERR_CORRUPT, ZAP_BATCH_ERR_STRIDE);
}
TEST(BadBatch, ItemCountBeyondBufferIsCorrupt)
{
    expect_refused(with_field(batch(2, 0), ZAP_BH_N_ITEMS, 8, 3), ZAP_ERR_CORRUPT, ZAP_BATCH_ERR_COUNT);
}
TEST(BadBatch, HugeItemCountIsCorrupt)
{
    expect_refused(with_field(batch(2, 0), ZAP_BH_N_ITEMS, 8, UINT64_MAX), ZAP_ERR_CORRUPT, ZAP_BATCH_ERR_COUNT);
}
TEST(BadBatch, MisalignedRecordsOffsetIsCorrupt)
{
    expect_refused(with_field(batch(2, 0), ZAP_BH_RECORDS_OFF, 8, 72), ZAP_ERR_CORRUPT, ZAP_BATCH_ERR_OFFSETS);
}
TEST(BadBatch, RecordsOffsetInsideHeaderIsCorrupt)
{
    expect_refused(with_field(batch(2, 0), ZAP_BH_RECORDS_OFF, 8, 32), ZAP_ERR_CORRUPT, ZAP_BATCH_ERR_OFFSETS);
}
TEST(BadBatch, BlobPastTheEndIsCorrupt)
{
    auto b = batch(3, 1);
    expect_refused(with_field(b, ZAP_BH_BLOB_LEN, 4, b.size()), ZAP_ERR_CORRUPT, ZAP_BATCH_ERR_OFFSETS);
}
TEST(BadBatch, BlobOverlappingRecordsIsCorrupt)
{
    expect_refused(with_field(batch(3, 1), ZAP_BH_BLOB_OFF, 8, ZAP_BATCH_HEADER_SIZE), ZAP_ERR_CORRUPT,
                   ZAP_BATCH_ERR_OFFSETS);
}
TEST(BadBatch, BlobInFixedBatchIsCorrupt)
{
    expect_refused(with_field(batch(2, 0), ZAP_BH_BLOB_LEN, 4, 1), ZAP_ERR_CORRUPT, ZAP_BATCH_ERR_OFFSETS);
}
TEST(BadBatch, FlippedPayloadBitIsCrcCorrupt)
{
    auto b = batch(4, 1);
    b[ZAP_BATCH_HEADER_SIZE + 40] ^= 1;
    expect_refused(b, ZAP_ERR_CORRUPT, ZAP_BATCH_ERR_CRC);
}
TEST(BadBatch, TruncatedFileIsCorrupt)
{
    auto b = batch(4, 1);
    expect_refused(b, ZAP_ERR_CORRUPT, ZAP_BATCH_ERR_OFFSETS, b.size() - 1);
}

TEST(BadBatch, NullViewOrBufferIsInvalidParam)
{
    LogCapture log;
    auto b = batch(1, 0);
    zap_batch_view_t v;
    EXPECT_EQ(zap_batch_parse(b.data(), b.size(), 0, nullptr, nullptr, nullptr, 0), ZAP_ERR_INVALID_PARAM);
    EXPECT_EQ(zap_batch_parse(nullptr, 64, 0, &v, nullptr, nullptr, 0), ZAP_ERR_INVALID_PARAM);
}

TEST(BadBatch, LayoutThatOverflowsIsInvalidParam)
{
    LogCapture log;
    zap_batch_layout_t l{1, 2, 3};
    EXPECT_EQ(zap_batch_layout(UINT64_MAX / 64, 128, 0, &l), ZAP_ERR_INVALID_PARAM);
    EXPECT_EQ(zap_batch_layout(10, 0, 0, &l), ZAP_ERR_INVALID_PARAM);
    EXPECT_EQ(zap_batch_layout(10, 128, (uint64_t)UINT32_MAX + 1, &l), ZAP_ERR_INVALID_PARAM);
    EXPECT_EQ(l.records_off, 1u) << "layout written on refusal";
}

TEST(BadBatch, WriteHeaderIntoTooSmallBufferIsInvalidParam)
{
    LogCapture log;
    auto b = batch(3, 0);
    zap_batch_view_t v;
    ASSERT_EQ(zap_batch_parse(b.data(), b.size(), 0, &v, nullptr, nullptr, 0), ZAP_OK);
    std::vector<uint8_t> copy = b;
    EXPECT_EQ(zap_batch_write_header(copy.data(), copy.size() - 1, &v), ZAP_ERR_INVALID_PARAM);
    EXPECT_EQ(copy, b) << "buffer written on refusal";
    v.scheme = 3;
    EXPECT_EQ(zap_batch_write_header(copy.data(), copy.size(), &v), ZAP_ERR_INVALID_PARAM);
}

TEST(BadVerify, ShardOfRankOutsideRangeIsInvalidParam)
{
    LogCapture log;
    uint64_t f = 7, c = 7;
    EXPECT_EQ(zap_verify_shard(100, 4, 4, &f, &c), ZAP_ERR_INVALID_PARAM);
    EXPECT_EQ(zap_verify_shard(100, 4, -1, &f, &c), ZAP_ERR_INVALID_PARAM);
    EXPECT_EQ(zap_verify_shard(100, 0, 0, &f, &c), ZAP_ERR_INVALID_PARAM);
    EXPECT_EQ(f, 7u);
    EXPECT_EQ(c, 7u);
}

TEST(BadVerify, VerifyWithNullViewOrBitmapIsInvalidParam)
{
    LogCapture log;
    auto b = batch(3, 0);
    zap_batch_view_t v;
    ASSERT_EQ(zap_batch_parse(b.data(), b.size(), 0, &v, nullptr, nullptr, 0), ZAP_OK);
    uint32_t bits = 0;
    EXPECT_EQ(zap_verify_batch(nullptr, nullptr, &bits, nullptr, nullptr), ZAP_ERR_INVALID_PARAM);
    EXPECT_EQ(zap_verify_batch(&v, nullptr, nullptr, nullptr, nullptr), ZAP_ERR_INVALID_PARAM);
}

TEST(BadVerify, UnknownVerifierSettingIsInvalidParam)
{
    LogCapture log;
    ScopedEnv env("ZAP_VERIFIER", "fpga");
    auto b = batch(3, 0);
    zap_batch_view_t v;
    ASSERT_EQ(zap_batch_parse(b.data(), b.size(), 0, &v, nullptr, nullptr, 0), ZAP_OK);
    uint32_t bits = 0xffffffffu;
    EXPECT_EQ(zap_verify_batch(&v, nullptr, &bits, nullptr, nullptr), ZAP_ERR_INVALID_PARAM);
    EXPECT_TRUE(log.contains("ZAP_VERIFIER")) << log.all();
}

TEST(BadVerify, MalformedThreadCountSettingIsInvalidParam)
{
    LogCapture log;
    ScopedEnv env("ZAP_VERIFY_THREADS", "many");
    auto b = batch(3, 0);
    zap_batch_view_t v;
    ASSERT_EQ(zap_batch_parse(b.data(), b.size(), 0, &v, nullptr, nullptr, 0), ZAP_OK);
    uint32_t bits = 0;
    zap_verify_params_t p = {};
    p.verifier = ZAP_VERIFIER_CPU;
    EXPECT_EQ(zap_verify_batch(&v, &p, &bits, nullptr, nullptr), ZAP_ERR_INVALID_PARAM);
}

TEST(BadVerify, GpuVerifierWithoutDeviceIsUnsupported)
{
    LogCapture log;
    auto b = batch(3, 0);
    zap_batch_view_t v;
    ASSERT_EQ(zap_batch_parse(b.data(), b.size(), 0, &v, nullptr, nullptr, 0), ZAP_OK);
    uint32_t bits = 0;
    zap_verify_params_t p = {};
    p.verifier = ZAP_VERIFIER_GPU;
    zap_status_t st = zap_verify_batch(&v, &p, &bits, nullptr, nullptr);
    if (st == ZAP_OK)
        GTEST_SKIP() << "this machine has a CUDA device: the GPU verifier ran";
    EXPECT_EQ(st, ZAP_ERR_UNSUPPORTED);
}

namespace {
struct JobRanks {
    zap_inproc_world_t *w = nullptr;
    std::vector<zap_transport_t *> t;
    std::vector<zap_comm_t *> c;
    int n;
    explicit JobRanks(int nranks) : t(nranks), c(nranks, nullptr), n(nranks)
    {
        EXPECT_EQ(zap_inproc_world_create(n, nullptr, &w), ZAP_OK);
        for (int r = 0; r < n; r++)
            EXPECT_EQ(zap_inproc_transport(w, r, &t[r]), ZAP_OK);
        run([&](int r) { EXPECT_EQ(zap_comm_create(t[r], &c[r]), ZAP_OK); });
    }
    ~JobRanks()
    {
        for (auto *x : c)
            zap_comm_destroy(x);
        zap_inproc_world_destroy(w);
    }
    void run(const std::function<void(int)> &fn)
    {
        std::vector<std::thread> ts;
        for (int r = 0; r < n; r++)
            ts.emplace_back(fn, r);
        for (auto &x : ts)
            x.join();
    }
    // Runs the job with batch b on root 0 on every rank; returns the statuses.
    std::vector<zap_status_t> job(const std::vector<uint8_t> &b, int root = 0)
    {
        std::vector<zap_status_t> st(n);
        run([&](int r) {
            zap_verify_params_t p = {};
            p.verifier = ZAP_VERIFIER_CPU;
            p.threads = 1;
            p.root = root;
            zap_verify_result_t res;
            memset(&res, 0, sizeof(res));
            st[r] = zap_verify_job(c[r], b.data(), b.size(), &p, &res);
            zap_verify_result_cleanup(&res);
        });
        return st;
    }
};
} // namespace

TEST(BadVerify, JobWithRootOutsideCommIsInvalidParamEverywhere)
{
    LogCapture log;
    JobRanks k(3);
    auto b = batch(10, 0);
    for (zap_status_t s : k.job(b, 3))
        EXPECT_EQ(s, ZAP_ERR_INVALID_PARAM);
    for (zap_status_t s : k.job(b, 0))
        EXPECT_EQ(s, ZAP_OK) << "the communicator is not usable after the refusal";
}

TEST(BadVerify, JobWithCorruptBatchFailsEveryRankWithCorrupt)
{
    LogCapture log;
    JobRanks k(3);
    auto b = batch(40, 1);
    b[b.size() - 1] ^= 0x40; // in the blob: a CRC mismatch
    for (zap_status_t s : k.job(b))
        EXPECT_EQ(s, ZAP_ERR_CORRUPT);
    for (zap_status_t s : k.job(batch(40, 1)))
        EXPECT_EQ(s, ZAP_OK) << "the communicator is not usable after the refusal";
}

TEST(BadVerify, JobWithNewerFormatFailsEveryRankWithVersion)
{
    LogCapture log;
    JobRanks k(3);
    auto b = with_field(batch(10, 0), ZAP_BH_VERSION, 2, 7);
    for (zap_status_t s : k.job(b))
        EXPECT_EQ(s, ZAP_ERR_VERSION);
}

TEST(BadVerify, JobWithNullResultIsInvalidParam)
{
    LogCapture log;
    JobRanks k(1);
    auto b = batch(2, 0);
    EXPECT_EQ(zap_verify_job(k.c[0], b.data(), b.size(), nullptr, nullptr), ZAP_ERR_INVALID_PARAM);
    zap_verify_result_t res;
    EXPECT_EQ(zap_verify_job(nullptr, b.data(), b.size(), nullptr, &res), ZAP_ERR_INVALID_PARAM);
}
