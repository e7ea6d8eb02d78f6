// The CPU verifier against the oracle (libsodium 1.0.18 through the RFC 8032
// and Wycheproof vectors), the batch path against single verification, and
// sharding.
#include <cstring>
#include <thread>
#include "verify_test_util.h"
#include "log_capture.h"
extern "C" {
#include "verify/verify_impl.h"
}

static int bit(const std::vector<uint32_t> &bm, uint64_t i) { return (bm[i / 32] >> (i % 32)) & 1; }

TEST(Vectors, Rfc8032AllValidUnderLibsodium)
{
    auto vs = load_rfc8032();
    ASSERT_EQ(vs.size(), 5u);
    for (const auto &v : vs)
        EXPECT_EQ(zap_verify_ed25519_one(v.pk.data(), v.sig.data(), v.msg.data(), v.msg.size()), 1) << v.name;
}

TEST(Vectors, WycheproofVerdictsEqualTheExpectedOnes)
{
    auto vs = load_wycheproof();
    ASSERT_EQ(vs.size(), 151u);
    int valid = 0;
    for (const auto &v : vs) {
        // A signature that is not 64 bytes (or a key not 32) cannot be a valid
        // Ed25519 signature; zap's records cannot even carry one.
        int got = v.sig.size() == 64 && v.pk.size() == 32 &&
                  zap_verify_ed25519_one(v.pk.data(), v.sig.data(), v.msg.data(), v.msg.size());
        EXPECT_EQ(got, v.valid ? 1 : 0) << v.name;
        valid += got;
    }
    EXPECT_EQ(valid, 88); // the file has no "acceptable" cases (README)
}

// Builds a variable-message batch from vectors with a 64-byte signature.
static std::vector<uint8_t> batch_of(const std::vector<Vec> &vs, std::vector<int> *expect)
{
    std::vector<const Vec *> use;
    uint64_t blob = 0;
    for (const auto &v : vs)
        if (v.sig.size() == 64 && v.pk.size() == 32) {
            use.push_back(&v);
            blob += v.msg.size();
        }
    zap_batch_layout_t l;
    EXPECT_EQ(zap_batch_layout(use.size(), 128, blob, &l), ZAP_OK);
    std::vector<uint8_t> b(l.total_bytes, 0);
    uint64_t off = 0;
    for (size_t i = 0; i < use.size(); i++) {
        uint8_t *rec = b.data() + l.records_off + 128 * i;
        memcpy(rec, use[i]->pk.data(), 32);
        memcpy(rec + 32, use[i]->sig.data(), 64);
        zap_put_le32(rec + 96, (uint32_t)off);
        zap_put_le32(rec + 100, (uint32_t)use[i]->msg.size());
        if (!use[i]->msg.empty())
            memcpy(b.data() + l.blob_off + off, use[i]->msg.data(), use[i]->msg.size());
        off += use[i]->msg.size();
        expect->push_back(use[i]->valid);
    }
    zap_batch_view_t v = {};
    v.scheme = 1;
    v.stride = 128;
    v.n_items = use.size();
    v.blob_len = blob;
    EXPECT_EQ(zap_batch_write_header(b.data(), b.size(), &v), ZAP_OK);
    return b;
}

TEST(Vectors, BatchPathGivesTheSameVerdictsOnAnyThreadCount)
{
    auto vs = load_wycheproof();
    auto rfc = load_rfc8032();
    vs.insert(vs.end(), rfc.begin(), rfc.end());
    std::vector<int> expect;
    auto b = batch_of(vs, &expect);
    zap_batch_view_t view;
    ASSERT_EQ(zap_batch_parse(b.data(), b.size(), 0, &view, nullptr, nullptr, 0), ZAP_OK);
    ASSERT_EQ(view.n_items, 139u + 5u);
    for (unsigned threads : {1u, 2u, 3u, 8u}) {
        zap_verify_params_t p = {};
        p.verifier = ZAP_VERIFIER_CPU;
        p.threads = threads;
        std::vector<uint32_t> bm((view.n_items + 31) / 32, 0xFFFFFFFFu);
        std::vector<uint8_t> verdicts(view.n_items, 9);
        zap_verify_stats_t st;
        ASSERT_EQ(zap_verify_batch(&view, &p, bm.data(), verdicts.data(), &st), ZAP_OK);
        for (uint64_t i = 0; i < view.n_items; i++) {
            ASSERT_EQ(verdicts[i], expect[i]) << "item " << i << " threads " << threads;
            ASSERT_EQ(bit(bm, i), expect[i]) << "item " << i;
        }
        EXPECT_EQ(bm.back() >> (view.n_items % 32), 0u) << "bits past n must be zero";
        EXPECT_EQ(st.checked, view.n_items);
        EXPECT_EQ(st.invalid, 139u - 88u);
        EXPECT_EQ(st.malformed, 0u);
        EXPECT_EQ(st.used, ZAP_VERIFIER_CPU);
    }
}

class GeneratedBatch : public ::testing::TestWithParam<int> {};

TEST_P(GeneratedBatch, LibsodiumAgreesWithTheGeneratorOnEveryKind)
{
    GenBatch b = make_batch(2000, 0.5, 11 + GetParam(), GetParam());
    zap_batch_view_t view;
    ASSERT_EQ(zap_batch_parse(b.bytes.data(), b.bytes.size(), 0, &view, nullptr, nullptr, 0), ZAP_OK);
    std::vector<uint32_t> bm(b.expected.size());
    zap_verify_params_t p = {};
    p.verifier = ZAP_VERIFIER_CPU;
    zap_verify_stats_t st;
    ASSERT_EQ(zap_verify_batch(&view, &p, bm.data(), nullptr, &st), ZAP_OK);
    int per_kind[ZAP_GEN_KIND_COUNT] = {};
    for (uint64_t i = 0; i < 2000; i++) {
        per_kind[b.kinds[i]]++;
        ASSERT_EQ(bit(bm, i), b.kinds[i] == ZAP_GEN_VALID) << "item " << i << " kind "
                                                           << zap_gen_kind_name((zap_gen_kind_t)b.kinds[i]);
    }
    EXPECT_EQ(bm, b.expected);
    for (int k = 0; k < ZAP_GEN_KIND_COUNT; k++)
        EXPECT_GT(per_kind[k], 50) << zap_gen_kind_name((zap_gen_kind_t)k);
}

INSTANTIATE_TEST_SUITE_P(FixedAndVariable, GeneratedBatch, ::testing::Values(0, 1));

TEST(Generator, OneKeyPairStillMakesEveryCorruptionInvalid)
{
    // With one key pair, a wrong-key item shows a key pair no item signs with,
    // so it cannot verify either: every item of an all-corrupt batch is invalid.
    GenBatch b = make_batch(700, 1.0, 77, 0, 1);
    zap_batch_view_t view;
    ASSERT_EQ(zap_batch_parse(b.bytes.data(), b.bytes.size(), 0, &view, nullptr, nullptr, 0), ZAP_OK);
    std::vector<uint32_t> bm(b.expected.size());
    zap_verify_params_t p = {};
    p.verifier = ZAP_VERIFIER_CPU;
    zap_verify_stats_t st;
    ASSERT_EQ(zap_verify_batch(&view, &p, bm.data(), nullptr, &st), ZAP_OK);
    int wrong_key = 0;
    for (uint64_t i = 0; i < 700; i++) {
        ASSERT_NE(b.kinds[i], ZAP_GEN_VALID) << "item " << i;
        ASSERT_EQ(bit(bm, i), 0) << "item " << i << " kind " << zap_gen_kind_name((zap_gen_kind_t)b.kinds[i]);
        wrong_key += b.kinds[i] == ZAP_GEN_WRONG_KEY;
    }
    EXPECT_GT(wrong_key, 50);
    EXPECT_EQ(st.invalid, 700u);
}

TEST(Generator, SameSeedSameBytesWhateverTheThreadCount)
{
    zap_gen_params_t p = {};
    p.items = 300;
    p.keys = 5;
    p.invalid_fraction = 0.3;
    p.seed = 99;
    p.variable = 1;
    zap_batch_layout_t l;
    ASSERT_EQ(zap_gen_layout(&p, &l), ZAP_OK);
    std::vector<uint8_t> a(l.total_bytes), b(l.total_bytes);
    p.threads = 1;
    ASSERT_EQ(zap_gen_batch(&p, a.data(), a.size(), nullptr, nullptr), ZAP_OK);
    p.threads = 3;
    ASSERT_EQ(zap_gen_batch(&p, b.data(), b.size(), nullptr, nullptr), ZAP_OK);
    EXPECT_EQ(a, b);
}

TEST(Verifier, MessageOutsideTheBlobIsMalformedNotFatal)
{
    GenBatch b = make_batch(40, 0, 21, 1);
    zap_batch_view_t view;
    ASSERT_EQ(zap_batch_parse(b.bytes.data(), b.bytes.size(), ZAP_BATCH_PARSE_SKIP_CRC, &view, nullptr, nullptr, 0),
              ZAP_OK);
    uint8_t *rec = b.bytes.data() + 64 + 7 * 128;
    zap_put_le32(rec + 96, (uint32_t)view.blob_len); // offset at the end,
    zap_put_le32(rec + 100, 1);                      // one byte past it
    std::vector<uint32_t> bm(2);
    std::vector<uint8_t> verdicts(40);
    zap_verify_params_t p = {};
    p.verifier = ZAP_VERIFIER_CPU;
    zap_verify_stats_t st;
    ASSERT_EQ(zap_verify_batch(&view, &p, bm.data(), verdicts.data(), &st), ZAP_OK);
    EXPECT_EQ(verdicts[7], 2);
    EXPECT_EQ(bit(bm, 7), 0);
    EXPECT_EQ(st.malformed, 1u);
    EXPECT_EQ(st.invalid, 1u);
    EXPECT_EQ(verdicts[6], 1);
}

// The job's peer watch cancels the calling thread's verifier: with the flag
// set no chunk is claimed and the call says CANCELED; cleared, the same call
// verifies everything; another thread's flag does not reach this one.
TEST(Verifier, CancelFlagStopsTheCpuVerifier)
{
    GenBatch b = make_batch(4096, 0.1, 31, 0);
    zap_batch_view_t view;
    ASSERT_EQ(zap_batch_parse(b.bytes.data(), b.bytes.size(), 0, &view, nullptr, nullptr, 0), ZAP_OK);
    std::vector<uint32_t> bm(128, 0);
    zap_verify_params_t p = {};
    p.verifier = ZAP_VERIFIER_CPU;
    p.threads = 2;
    int flag = 1;
    zap_verify_set_cancel(&flag);
    EXPECT_EQ(zap_verify_canceled(), 1);
    EXPECT_EQ(zap_verify_batch(&view, &p, bm.data(), nullptr, nullptr), ZAP_ERR_CANCELED);
    for (uint32_t w : bm)
        EXPECT_EQ(w, 0u); // nothing verified
    std::thread other([&] {
        EXPECT_EQ(zap_verify_canceled(), 0);
        std::vector<uint32_t> bm2(128, 0);
        EXPECT_EQ(zap_verify_batch(&view, &p, bm2.data(), nullptr, nullptr), ZAP_OK);
    });
    other.join();
    flag = 0;
    zap_verify_stats_t st;
    EXPECT_EQ(zap_verify_batch(&view, &p, bm.data(), nullptr, &st), ZAP_OK);
    EXPECT_EQ(st.checked, 4096u);
    zap_verify_set_cancel(nullptr);
    EXPECT_EQ(zap_verify_canceled(), 0);
}

TEST(Verifier, EmptyBatchNeedsNoBitmap)
{
    zap_batch_view_t view = {};
    view.scheme = 1;
    view.flags = ZAP_BATCH_FLAG_FIXED_MSG;
    view.stride = 128;
    zap_verify_stats_t st;
    EXPECT_EQ(zap_verify_batch(&view, nullptr, nullptr, nullptr, &st), ZAP_OK);
    EXPECT_EQ(st.checked, 0u);
}

TEST(Verifier, BadVerifierSettingIsInvalidParam)
{
    ScopedEnv env("ZAP_VERIFIER", "fastest");
    GenBatch b = make_batch(32, 0, 22, 0);
    zap_batch_view_t view;
    ASSERT_EQ(zap_batch_parse(b.bytes.data(), b.bytes.size(), 0, &view, nullptr, nullptr, 0), ZAP_OK);
    std::vector<uint32_t> bm(1);
    LogCapture log;
    EXPECT_EQ(zap_verify_batch(&view, nullptr, bm.data(), nullptr, nullptr), ZAP_ERR_INVALID_PARAM);
    EXPECT_TRUE(log.contains("ZAP_VERIFIER")) << log.all();
}

TEST(Verifier, OtherSchemesAreUnsupported)
{
    zap_batch_view_t view = {};
    view.scheme = 3;
    LogCapture log;
    EXPECT_EQ(zap_verify_batch(&view, nullptr, nullptr, nullptr, nullptr), ZAP_ERR_UNSUPPORTED);
}

TEST(Verifier, GpuWithoutDeviceIsUnsupported)
{
    GenBatch b = make_batch(64, 0.5, 23, 0);
    zap_batch_view_t view;
    ASSERT_EQ(zap_batch_parse(b.bytes.data(), b.bytes.size(), 0, &view, nullptr, nullptr, 0), ZAP_OK);
    std::vector<uint32_t> bm(2);
    zap_verify_params_t p = {};
    p.verifier = ZAP_VERIFIER_GPU;
    LogCapture log;
    zap_verify_stats_t st;
    zap_status_t s = zap_verify_batch(&view, &p, bm.data(), nullptr, &st);
    if (s == ZAP_OK) {
        // A device exists: then the GPU must agree with the generator.
        EXPECT_EQ(st.used, ZAP_VERIFIER_GPU);
        EXPECT_EQ(bm, b.expected);
        return;
    }
    EXPECT_EQ(s, ZAP_ERR_UNSUPPORTED);
    EXPECT_TRUE(log.contains("no CUDA device")) << log.all();
    // auto falls back to the CPU silently when there is no device.
    p.verifier = ZAP_VERIFIER_AUTO;
    ScopedEnv env("ZAP_GPU_MIN_ITEMS", "1");
    ASSERT_EQ(zap_verify_batch(&view, &p, bm.data(), nullptr, &st), ZAP_OK);
    EXPECT_EQ(st.used, ZAP_VERIFIER_CPU);
    EXPECT_EQ(bm, b.expected);
}

TEST(Shard, ShardsTileTheItemsOnWordBoundaries)
{
    for (uint64_t n : {0ull, 1ull, 31ull, 32ull, 33ull, 100ull, 1000ull, 200000ull, 1ull << 40})
        for (int R = 1; R <= 9; R++) {
            uint64_t next = 0;
            for (int r = 0; r < R; r++) {
                uint64_t f, c;
                ASSERT_EQ(zap_verify_shard(n, R, r, &f, &c), ZAP_OK);
                ASSERT_EQ(f, next) << "n " << n << " R " << R << " r " << r;
                ASSERT_EQ(f % 32, 0u);
                next = f + c;
            }
            ASSERT_EQ(next, n) << "n " << n << " R " << R;
        }
}

TEST(Shard, LargeBatchesAreSplitEvenly)
{
    uint64_t f, c;
    ASSERT_EQ(zap_verify_shard(200000, 4, 1, &f, &c), ZAP_OK);
    EXPECT_EQ(f, 49984u); // floor(50000 / 32) * 32
    EXPECT_EQ(c, 100000u - 49984u); // 100000 is a multiple of 32
}

TEST(Shard, MoreRanksThanItemsLeavesEmptyShards)
{
    uint64_t f, c;
    ASSERT_EQ(zap_verify_shard(5, 4, 0, &f, &c), ZAP_OK);
    EXPECT_EQ(c, 0u);
    ASSERT_EQ(zap_verify_shard(5, 4, 3, &f, &c), ZAP_OK);
    EXPECT_EQ(f, 0u);
    EXPECT_EQ(c, 5u);
}

TEST(Shard, RankOutOfRangeIsInvalidParam)
{
    uint64_t f, c;
    LogCapture log;
    EXPECT_EQ(zap_verify_shard(10, 4, 4, &f, &c), ZAP_ERR_INVALID_PARAM);
    EXPECT_EQ(zap_verify_shard(10, 0, 0, &f, &c), ZAP_ERR_INVALID_PARAM);
}
