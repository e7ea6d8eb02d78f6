// The batch codec: CRC32C, the writer and every reason the parser refuses a
// buffer for (docs/batch-format.md).
#include <cstring>
#include <random>
#include "verify_test_util.h"
#include "log_capture.h"
extern "C" {
#include "verify/verify_impl.h"
}

TEST(Crc32c, StandardCheckValue)
{
    EXPECT_EQ(zap_crc32c(0, "123456789", 9), 0xE3069283u);
    EXPECT_EQ(zap_crc32c_sw(0, "123456789", 9), 0xE3069283u);
}

TEST(Crc32c, HardwareAndSoftwareAgreeAtEveryAlignmentAndSplit)
{
    std::mt19937 rng(7);
    std::vector<uint8_t> buf(4096 + 16);
    for (auto &b : buf)
        b = (uint8_t)rng();
    for (size_t off = 0; off < 8; off++)
        for (size_t len : {0, 1, 7, 8, 9, 63, 64, 1000, 4096}) {
            uint32_t whole = zap_crc32c(0, buf.data() + off, len);
            ASSERT_EQ(whole, zap_crc32c_sw(0, buf.data() + off, len)) << "off " << off << " len " << len;
            size_t half = len / 3;
            ASSERT_EQ(whole, zap_crc32c(zap_crc32c(0, buf.data() + off, half), buf.data() + off + half, len - half));
        }
}

TEST(Crc32c, CombineAndTheParallelFormEqualTheSequentialOne)
{
    std::mt19937 rng(8);
    std::vector<uint8_t> buf(50u << 20); // three 16 MiB pieces and a rest
    for (size_t i = 0; i < buf.size(); i += 8) {
        uint64_t w = ((uint64_t)rng() << 32) | rng();
        std::memcpy(&buf[i], &w, 8);
    }
    for (size_t len : {0, 1, 1000, 4096}) {
        uint32_t a = zap_crc32c(0, buf.data(), len);
        for (size_t split : {(size_t)0, len / 3, len}) {
            uint32_t c1 = zap_crc32c(0, buf.data(), split), c2 = zap_crc32c(0, buf.data() + split, len - split);
            ASSERT_EQ(zap_crc32c_combine(c1, c2, len - split), a) << "len " << len << " split " << split;
        }
    }
    for (size_t len : {buf.size(), buf.size() - 13, (size_t)(33u << 20)}) {
        uint32_t seq = zap_crc32c(0x1234u, buf.data() + 3, len - 3);
        EXPECT_EQ(zap_crc32c_parallel(0x1234u, buf.data() + 3, len - 3), seq) << "len " << len;
    }
}

static zap_status_t parse(const std::vector<uint8_t> &b, zap_batch_reason_t *r, std::string *detail = nullptr,
                          size_t len = SIZE_MAX)
{
    zap_batch_view_t v;
    char d[256];
    zap_status_t s = zap_batch_parse(b.data(), len == SIZE_MAX ? b.size() : len, 0, &v, r, d, sizeof(d));
    if (detail)
        *detail = d;
    return s;
}

TEST(BatchFormat, FixedBatchRoundTrips)
{
    GenBatch b = make_batch(100, 0.2, 1, 0);
    zap_batch_view_t v;
    zap_batch_reason_t r;
    ASSERT_EQ(zap_batch_parse(b.bytes.data(), b.bytes.size(), 0, &v, &r, nullptr, 0), ZAP_OK);
    EXPECT_EQ(r, ZAP_BATCH_OK);
    EXPECT_EQ(v.n_items, 100u);
    EXPECT_EQ(v.stride, 128u);
    EXPECT_EQ(v.flags, ZAP_BATCH_FLAG_FIXED_MSG);
    EXPECT_EQ(v.fixed_msg_len, 32u);
    EXPECT_EQ(v.batch_id, 1u);
    EXPECT_EQ(v.records, b.bytes.data() + 64);
    EXPECT_EQ(v.blob_len, 0u);
    EXPECT_EQ(b.bytes.size(), 64u + 100 * 128);
}

TEST(BatchFormat, VariableBatchRoundTrips)
{
    GenBatch b = make_batch(50, 0.2, 2, 1);
    zap_batch_view_t v;
    ASSERT_EQ(zap_batch_parse(b.bytes.data(), b.bytes.size(), 0, &v, nullptr, nullptr, 0), ZAP_OK);
    EXPECT_EQ(v.flags, 0u);
    EXPECT_EQ(v.fixed_msg_len, 0u);
    EXPECT_EQ(v.blob, b.bytes.data() + 64 + 50 * 128);
    EXPECT_EQ(v.blob_len, b.bytes.size() - 64 - 50 * 128);
}

TEST(BatchFormat, EmptyBatchParses)
{
    GenBatch b = make_batch(0, 0, 3, 0);
    zap_batch_view_t v;
    ASSERT_EQ(zap_batch_parse(b.bytes.data(), b.bytes.size(), 0, &v, nullptr, nullptr, 0), ZAP_OK);
    EXPECT_EQ(v.n_items, 0u);
}

// Mutates a valid batch, then expects the parser's status, reason and a
// message naming the cause, both in detail and in the log.
struct Refusal {
    const char *name;
    void (*mutate)(std::vector<uint8_t> &b);
    int variable;
    zap_status_t status;
    zap_batch_reason_t reason;
    const char *detail_has;
};

static void put32(std::vector<uint8_t> &b, size_t off, uint32_t v) { zap_put_le32(b.data() + off, v); }
static void put64(std::vector<uint8_t> &b, size_t off, uint64_t v) { zap_put_le64(b.data() + off, v); }

static const Refusal refusals[] = {
    {"Magic", [](std::vector<uint8_t> &b) { b[0] = 'X'; }, 0, ZAP_ERR_CORRUPT, ZAP_BATCH_ERR_MAGIC, "magic 58"},
    {"Version", [](std::vector<uint8_t> &b) { zap_put_le16(b.data() + 4, 2); }, 0, ZAP_ERR_VERSION,
     ZAP_BATCH_ERR_VERSION, "version 2"},
    {"SchemeReserved", [](std::vector<uint8_t> &b) { zap_put_le16(b.data() + 6, 2); }, 0, ZAP_ERR_UNSUPPORTED,
     ZAP_BATCH_ERR_SCHEME, "scheme 2 (ed25519-zip215)"},
    {"SchemeUnknown", [](std::vector<uint8_t> &b) { zap_put_le16(b.data() + 6, 99); }, 0, ZAP_ERR_UNSUPPORTED,
     ZAP_BATCH_ERR_SCHEME, "scheme 99"},
    {"FlagsUnknownBits", [](std::vector<uint8_t> &b) { put32(b, 8, 0x11); }, 0, ZAP_ERR_CORRUPT,
     ZAP_BATCH_ERR_FLAGS, "unknown bits 0x10"},
    {"FlagsDigest", [](std::vector<uint8_t> &b) { put32(b, 8, 0x3); }, 0, ZAP_ERR_CORRUPT, ZAP_BATCH_ERR_FLAGS,
     "msg_is_digest"},
    {"FixedMsgLen", [](std::vector<uint8_t> &b) { put32(b, 24, 64); }, 0, ZAP_ERR_CORRUPT, ZAP_BATCH_ERR_MSG_LEN,
     "fixed_msg_len 64"},
    {"VariableMsgLen", [](std::vector<uint8_t> &b) { put32(b, 24, 32); }, 1, ZAP_ERR_CORRUPT,
     ZAP_BATCH_ERR_MSG_LEN, "variable-message batch"},
    {"Reserved", [](std::vector<uint8_t> &b) { put32(b, 28, 1); }, 0, ZAP_ERR_CORRUPT, ZAP_BATCH_ERR_RESERVED,
     "reserved"},
    {"StrideTooSmall", [](std::vector<uint8_t> &b) { put32(b, 12, 112); }, 0, ZAP_ERR_CORRUPT,
     ZAP_BATCH_ERR_STRIDE, "record_stride 112"},
    {"StrideNotMultipleOf16", [](std::vector<uint8_t> &b) { put32(b, 12, 129); }, 0, ZAP_ERR_CORRUPT,
     ZAP_BATCH_ERR_STRIDE, "record_stride 129"},
    {"StrideTooLarge", [](std::vector<uint8_t> &b) { put32(b, 12, 8192); }, 0, ZAP_ERR_CORRUPT,
     ZAP_BATCH_ERR_STRIDE, "record_stride 8192"},
    {"CountPastEnd", [](std::vector<uint8_t> &b) { put64(b, 16, 101); }, 0, ZAP_ERR_CORRUPT, ZAP_BATCH_ERR_COUNT,
     "n_items 101"},
    {"CountOverflows", [](std::vector<uint8_t> &b) { put64(b, 16, UINT64_MAX / 64); }, 0, ZAP_ERR_CORRUPT,
     ZAP_BATCH_ERR_COUNT, "n_items"},
    {"RecordsOffInsideHeader", [](std::vector<uint8_t> &b) { put64(b, 40, 32); }, 0, ZAP_ERR_CORRUPT,
     ZAP_BATCH_ERR_OFFSETS, "records_off 32"},
    {"RecordsOffPastEnd", [](std::vector<uint8_t> &b) { put64(b, 40, 1ull << 40); }, 0, ZAP_ERR_CORRUPT,
     ZAP_BATCH_ERR_OFFSETS, "records_off 1099511627776"},
    {"RecordsOffUnaligned", [](std::vector<uint8_t> &b) { put64(b, 40, 72); }, 0, ZAP_ERR_CORRUPT,
     ZAP_BATCH_ERR_OFFSETS, "records_off 72"},
    {"BlobPastEnd", [](std::vector<uint8_t> &b) { put32(b, 56, zap_get_le32(b.data() + 56) + 1); }, 1,
     ZAP_ERR_CORRUPT, ZAP_BATCH_ERR_OFFSETS, "blob"},
    {"BlobOffPastEnd", [](std::vector<uint8_t> &b) { put64(b, 48, UINT64_MAX); }, 1, ZAP_ERR_CORRUPT,
     ZAP_BATCH_ERR_OFFSETS, "blob"},
    {"BlobOverlapsRecords", [](std::vector<uint8_t> &b) { put64(b, 48, 64); }, 1, ZAP_ERR_CORRUPT,
     ZAP_BATCH_ERR_OFFSETS, "records' end"},
    {"BlobInFixedBatch", [](std::vector<uint8_t> &b) { put32(b, 56, 16); }, 0, ZAP_ERR_CORRUPT,
     ZAP_BATCH_ERR_OFFSETS, "blob_len 16 in a fixed-message batch"},
    {"CrcOfRecord", [](std::vector<uint8_t> &b) { b[64 + 5 * 128 + 40] ^= 1; }, 0, ZAP_ERR_CORRUPT,
     ZAP_BATCH_ERR_CRC, "crc32c"},
    {"CrcOfBlob", [](std::vector<uint8_t> &b) { b[b.size() - 1] ^= 0x80; }, 1, ZAP_ERR_CORRUPT,
     ZAP_BATCH_ERR_CRC, "crc32c"},
    {"CrcField", [](std::vector<uint8_t> &b) { put32(b, 60, zap_get_le32(b.data() + 60) ^ 1); }, 0, ZAP_ERR_CORRUPT,
     ZAP_BATCH_ERR_CRC, "header says"},
};

class BatchRefusal : public ::testing::TestWithParam<Refusal> {};

TEST_P(BatchRefusal, ReportsItsReasonStatusAndMessage)
{
    const Refusal &c = GetParam();
    GenBatch b = make_batch(100, 0.1, 4, c.variable);
    c.mutate(b.bytes);
    LogCapture log;
    zap_batch_reason_t r = ZAP_BATCH_OK;
    std::string detail;
    EXPECT_EQ(parse(b.bytes, &r, &detail), c.status);
    EXPECT_EQ(r, c.reason) << zap_batch_reason_string(r);
    EXPECT_NE(detail.find(c.detail_has), std::string::npos) << detail;
    EXPECT_TRUE(log.contains(zap_batch_reason_string(c.reason))) << log.all();
    EXPECT_TRUE(log.contains(detail)) << log.all();
}

INSTANTIATE_TEST_SUITE_P(EachReason, BatchRefusal, ::testing::ValuesIn(refusals),
                         [](const ::testing::TestParamInfo<Refusal> &i) { return std::string(i.param.name); });

TEST(BatchFormat, ShortBufferIsRefusedBeforeReadingIt)
{
    std::vector<uint8_t> b(63, 0);
    memcpy(b.data(), "SVB1", 4);
    LogCapture log;
    zap_batch_reason_t r;
    EXPECT_EQ(parse(b, &r), ZAP_ERR_CORRUPT);
    EXPECT_EQ(r, ZAP_BATCH_ERR_SHORT);
    EXPECT_EQ(parse(b, &r, nullptr, 0), ZAP_ERR_CORRUPT);
    EXPECT_EQ(r, ZAP_BATCH_ERR_SHORT);
}

TEST(BatchFormat, EveryTruncationIsRefusedWithoutReadingPastTheEnd)
{
    // Each prefix is copied to its own exactly-sized heap block, so a read
    // past the end is caught by ASan builds.
    GenBatch b = make_batch(3, 0, 5, 1);
    LogCapture log;
    for (size_t len = 0; len < b.bytes.size(); len++) {
        std::vector<uint8_t> prefix(b.bytes.begin(), b.bytes.begin() + len);
        zap_batch_reason_t r = ZAP_BATCH_OK;
        zap_batch_view_t v;
        ASSERT_NE(zap_batch_parse(prefix.data(), len, 0, &v, &r, nullptr, 0), ZAP_OK) << "len " << len;
        ASSERT_NE(r, ZAP_BATCH_OK);
    }
}

TEST(BatchFormat, SkipCrcAcceptsAPayloadChange)
{
    GenBatch b = make_batch(10, 0, 6, 0);
    b.bytes[100] ^= 1;
    zap_batch_view_t v;
    LogCapture log;
    EXPECT_EQ(zap_batch_parse(b.bytes.data(), b.bytes.size(), ZAP_BATCH_PARSE_SKIP_CRC, &v, nullptr, nullptr, 0),
              ZAP_OK);
    EXPECT_EQ(log.count(), 0u);
}

TEST(BatchFormat, ViewIsUntouchedOnRefusal)
{
    GenBatch b = make_batch(10, 0, 7, 0);
    b.bytes[0] = 0;
    zap_batch_view_t v;
    memset(&v, 0xAB, sizeof(v));
    LogCapture log;
    EXPECT_NE(zap_batch_parse(b.bytes.data(), b.bytes.size(), 0, &v, nullptr, nullptr, 0), ZAP_OK);
    EXPECT_EQ(v.n_items, 0xABABABABABABABABull);
}

TEST(BatchFormat, WriterRefusesValuesTheParserWouldRefuse)
{
    std::vector<uint8_t> b(64 + 128);
    zap_batch_view_t v = {};
    v.scheme = 1;
    v.flags = ZAP_BATCH_FLAG_FIXED_MSG;
    v.stride = 128;
    v.fixed_msg_len = 32;
    v.n_items = 1;
    LogCapture log;
    EXPECT_EQ(zap_batch_write_header(b.data(), b.size(), &v), ZAP_OK);
    EXPECT_EQ(zap_batch_write_header(b.data(), b.size() - 1, &v), ZAP_ERR_INVALID_PARAM);
    v.stride = 120;
    EXPECT_EQ(zap_batch_write_header(b.data(), b.size(), &v), ZAP_ERR_INVALID_PARAM);
    v.stride = 128;
    v.scheme = 3;
    EXPECT_EQ(zap_batch_write_header(b.data(), b.size(), &v), ZAP_ERR_INVALID_PARAM);
}

TEST(BatchFormat, ReasonStringsAreDistinct)
{
    for (int a = 0; a < ZAP_BATCH_REASON_COUNT; a++)
        for (int b = a + 1; b < ZAP_BATCH_REASON_COUNT; b++)
            EXPECT_STRNE(zap_batch_reason_string((zap_batch_reason_t)a), zap_batch_reason_string((zap_batch_reason_t)b));
    EXPECT_STREQ(zap_batch_reason_string((zap_batch_reason_t)999), "unknown reason");
}
