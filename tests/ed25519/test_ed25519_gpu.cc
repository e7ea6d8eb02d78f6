// The GPU verifier against libsodium 1.0.18, verdict by verdict: the published
// vectors, seeded differential sets with every mutation kind (a large one of
// 10^6 items by default), every memory kind of input and output, the bitmap,
// and the argument checks. Each test skips, saying why, when the build has no
// CUDA or the machine no device.
#include <gtest/gtest.h>
#include <sodium.h>

#include <cstdio>
#include <cstring>
#include <map>
#include <vector>

#include "ed25519_gpu.h"
#include "ed25519_records.h"
#include "ed25519_testgen.h"
#include "ed25519_vectors.h"
#include "log_capture.h"

#ifdef ZAP_TEST_HAVE_CUDA
#include <cuda_runtime_api.h>
#endif

#define ZAP_SKIP_WITHOUT_GPU()                                                                 \
    do {                                                                                       \
        if (!zap_ed25519_gpu_available()) {                                                    \
            std::printf("skipped: %s\n", "no CUDA device (or zap built without CUDA)");      \
            GTEST_SKIP() << "no CUDA device (or zap built without CUDA)";                      \
        }                                                                                      \
    } while (0)

namespace {

// Records in the variable layout (any message length) from vectors; the
// vectors with a signature that is not 64 bytes are left out by the caller.
struct VarBatch {
    std::vector<uint8_t> records, blob;
    std::vector<uint8_t> expected;
    uint64_t n = 0;
};

void add_var_record(VarBatch &b, const std::vector<uint8_t> &pk, const std::vector<uint8_t> &sig,
                    const std::vector<uint8_t> &msg, int expected)
{
    size_t at = b.records.size();
    b.records.resize(at + 128, 0);
    std::memcpy(&b.records[at], pk.data(), 32);
    std::memcpy(&b.records[at + 32], sig.data(), 64);
    uint32_t off = (uint32_t)b.blob.size(), len = (uint32_t)msg.size();
    for (int k = 0; k < 4; k++) {
        b.records[at + 96 + k] = (uint8_t)(off >> (8 * k));
        b.records[at + 100 + k] = (uint8_t)(len >> (8 * k));
    }
    b.blob.insert(b.blob.end(), msg.begin(), msg.end());
    b.expected.push_back((uint8_t)expected);
    b.n++;
}

std::vector<uint32_t> pack_bitmap(const std::vector<uint8_t> &verdicts)
{
    std::vector<uint32_t> words((verdicts.size() + 31) / 32, 0);
    for (size_t i = 0; i < verdicts.size(); i++)
        if (verdicts[i] == 1)
            words[i / 32] |= 1u << (i % 32);
    return words;
}

zap_ed25519_batch_t generate(int variable_msgs, uint64_t n, uint32_t n_keys)
{
    zap_ed25519_gen_params_t p;
    std::memset(&p, 0, sizeof(p));
    p.seed = ed25519_test_seed() + (variable_msgs ? 1 : 0);
    p.n = n;
    p.n_keys = n_keys;
    p.variable_msgs = variable_msgs;
    p.max_msg_len = 300;
    p.all_mutations = 1;
    std::printf("ed25519 gpu differential: seed 0x%llx, n %llu, %s messages, %u keys\n",
                (unsigned long long)p.seed, (unsigned long long)n,
                variable_msgs ? "variable" : "32-byte", n_keys);
    zap_ed25519_batch_t b;
    if (zap_ed25519_gen(&p, &b) != 0)
        std::memset(&b, 0, sizeof(b));
    return b;
}

uint64_t count_mismatches(const zap_ed25519_batch_t &b, const std::vector<uint8_t> &got)
{
    uint64_t mismatches = 0;
    for (uint64_t i = 0; i < b.n; i++) {
        if (got[i] != b.expected[i]) {
            if (mismatches < 10)
                ADD_FAILURE() << "item " << i << " (" << zap_ed25519_mut_name(b.kind[i])
                              << "): gpu " << (int)got[i] << ", libsodium " << (int)b.expected[i];
            mismatches++;
        }
    }
    return mismatches;
}

void run_gpu_differential(int variable_msgs, uint64_t n, uint32_t n_keys)
{
    zap_ed25519_batch_t b = generate(variable_msgs, n, n_keys);
    ASSERT_EQ(n, b.n) << "generation failed";
    std::vector<uint8_t> got(n, 0xee);
    std::vector<uint32_t> bitmap((n + 31) / 32, 0xdeadbeefu);
    zap_ed25519_gpu_stats_t st;
    ASSERT_EQ(ZAP_OK, zap_ed25519_gpu_verify(b.records, b.stride, b.n, b.variable_msgs, b.blob,
                                             b.blob_len, got.data(), bitmap.data(), &st));
    std::printf("  gpu: h2d %.3f ms, kernel %.3f ms (%.0f items/s), d2h %.3f ms, total %.3f ms\n",
                st.h2d_ms, st.kernel_ms, (double)n / (st.kernel_ms / 1e3), st.d2h_ms, st.total_ms);
    std::map<int, std::pair<uint64_t, uint64_t>> per_kind;
    for (uint64_t i = 0; i < n; i++) {
        per_kind[b.kind[i]].first++;
        per_kind[b.kind[i]].second += b.expected[i] == 1;
    }
    for (const auto &k : per_kind)
        std::printf("  %-16s %9llu items, %9llu valid\n", zap_ed25519_mut_name(k.first),
                    (unsigned long long)k.second.first, (unsigned long long)k.second.second);
    EXPECT_EQ(0u, count_mismatches(b, got));
    EXPECT_EQ(pack_bitmap(std::vector<uint8_t>(b.expected, b.expected + n)), bitmap);
    zap_ed25519_batch_free(&b);
}

} // namespace

TEST(Ed25519Gpu, DeviceCountIsConsistentWithAvailability)
{
    EXPECT_EQ(zap_ed25519_gpu_available() != 0, zap_ed25519_gpu_device_count() > 0);
}

TEST(Ed25519Gpu, PublishedVectorsMatchLibsodium)
{
    ZAP_SKIP_WITHOUT_GPU();
    VarBatch b;
    auto rfc = ed25519_load_rfc8032();
    auto wp = ed25519_load_wycheproof();
    ASSERT_EQ(5u, rfc.size());
    ASSERT_EQ(151u, wp.size());
    int skipped = 0;
    for (const auto *set : {&rfc, &wp}) {
        for (const auto &v : *set) {
            if (v.sig.size() != 64 || v.pk.size() != 32) {
                skipped++; // cannot be put in a record: rejected before the GPU
                EXPECT_FALSE(v.valid) << v.name;
                continue;
            }
            add_var_record(b, v.pk, v.sig, v.msg, v.valid ? 1 : 0);
        }
    }
    EXPECT_EQ(12, skipped);
    std::vector<uint8_t> got(b.n, 0xee);
    ASSERT_EQ(ZAP_OK, zap_ed25519_gpu_verify(b.records.data(), 128, b.n, 1, b.blob.data(),
                                             b.blob.size(), got.data(), nullptr, nullptr));
    EXPECT_EQ(b.expected, got);
}

TEST(Ed25519Gpu, RejectsKnownBadItemAndAcceptsKnownGoodOne)
{
    ZAP_SKIP_WITHOUT_GPU();
    auto rfc = ed25519_load_rfc8032();
    ASSERT_FALSE(rfc.empty());
    VarBatch b;
    add_var_record(b, rfc[1].pk, rfc[1].sig, rfc[1].msg, 1);
    auto bad = rfc[1].sig;
    bad[40] ^= 1;
    add_var_record(b, rfc[1].pk, bad, rfc[1].msg, 0);
    std::vector<uint8_t> got(2, 0xee);
    uint32_t word = 0xffffffffu;
    ASSERT_EQ(ZAP_OK, zap_ed25519_gpu_verify(b.records.data(), 128, 2, 1, b.blob.data(),
                                             b.blob.size(), got.data(), &word, nullptr));
    EXPECT_EQ(1, got[0]);
    EXPECT_EQ(0, got[1]);
    EXPECT_EQ(1u, word);
}

TEST(Ed25519Gpu, DifferentialFixedMessagesMatchLibsodium)
{
    ZAP_SKIP_WITHOUT_GPU();
    run_gpu_differential(0, ed25519_env_u64("ZAP_ED25519_DIFF_N", 20000), 256);
}

TEST(Ed25519Gpu, DifferentialVariableMessagesMatchLibsodium)
{
    ZAP_SKIP_WITHOUT_GPU();
    run_gpu_differential(1, ed25519_env_u64("ZAP_ED25519_DIFF_N", 20000), 256);
}

TEST(Ed25519Gpu, DifferentialMillionItemsMatchLibsodium)
{
    ZAP_SKIP_WITHOUT_GPU();
    run_gpu_differential(0, ed25519_env_u64("ZAP_ED25519_GPU_LARGE_N", 1000000), 65536);
}

TEST(Ed25519Gpu, OddBatchSizesAndEveryMemoryKindGiveTheSameVerdicts)
{
    ZAP_SKIP_WITHOUT_GPU();
#ifdef ZAP_TEST_HAVE_CUDA
    zap_ed25519_batch_t b = generate(0, 1000, 64);
    ASSERT_EQ(1000u, b.n);
    size_t bytes = b.n * b.stride;
    std::vector<uint8_t> want(b.expected, b.expected + b.n);
    for (uint64_t n : {1ull, 31ull, 33ull, 1000ull}) {
        std::vector<uint8_t> got(n, 0xee);
        std::vector<uint32_t> bm((n + 31) / 32, 0xdeadbeefu);
        ASSERT_EQ(ZAP_OK, zap_ed25519_gpu_verify(b.records, b.stride, n, 0, nullptr, 0, got.data(),
                                                 bm.data(), nullptr));
        EXPECT_EQ(std::vector<uint8_t>(want.begin(), want.begin() + n), got) << "n " << n;
        EXPECT_EQ(pack_bitmap(got), bm) << "n " << n;
    }
    // pinned host, device and managed records; device and managed outputs
    void *pinned = nullptr, *dev = nullptr, *managed = nullptr, *dver = nullptr, *mver = nullptr;
    ASSERT_EQ(cudaSuccess, cudaMallocHost(&pinned, bytes));
    ASSERT_EQ(cudaSuccess, cudaMalloc(&dev, bytes));
    ASSERT_EQ(cudaSuccess, cudaMallocManaged(&managed, bytes, cudaMemAttachGlobal));
    ASSERT_EQ(cudaSuccess, cudaMalloc(&dver, b.n));
    ASSERT_EQ(cudaSuccess, cudaMallocManaged(&mver, b.n, cudaMemAttachGlobal));
    std::memcpy(pinned, b.records, bytes);
    std::memcpy(managed, b.records, bytes);
    ASSERT_EQ(cudaSuccess, cudaMemcpy(dev, b.records, bytes, cudaMemcpyHostToDevice));
    const void *inputs[3] = {pinned, dev, managed};
    const zap_ed25519_mem_kind_t kinds[3] = {ZAP_ED25519_MEM_PINNED, ZAP_ED25519_MEM_DEVICE,
                                             ZAP_ED25519_MEM_MANAGED};
    for (int k = 0; k < 3; k++) {
        std::vector<uint8_t> got(b.n, 0xee);
        zap_ed25519_gpu_stats_t st;
        ASSERT_EQ(ZAP_OK, zap_ed25519_gpu_verify(inputs[k], b.stride, b.n, 0, nullptr, 0,
                                                 got.data(), nullptr, &st));
        EXPECT_EQ(kinds[k], st.records_kind) << "input " << k;
        EXPECT_EQ(want, got) << "input " << k;
    }
    ASSERT_EQ(ZAP_OK, zap_ed25519_gpu_verify(dev, b.stride, b.n, 0, nullptr, 0, (uint8_t *)dver,
                                             nullptr, nullptr));
    std::vector<uint8_t> got(b.n, 0xee);
    ASSERT_EQ(cudaSuccess, cudaMemcpy(got.data(), dver, b.n, cudaMemcpyDeviceToHost));
    EXPECT_EQ(want, got) << "device verdicts";
    ASSERT_EQ(ZAP_OK, zap_ed25519_gpu_verify(managed, b.stride, b.n, 0, nullptr, 0,
                                             (uint8_t *)mver, nullptr, nullptr));
    ASSERT_EQ(cudaSuccess, cudaDeviceSynchronize());
    EXPECT_EQ(want, std::vector<uint8_t>((uint8_t *)mver, (uint8_t *)mver + b.n))
        << "managed verdicts";
    EXPECT_EQ(cudaSuccess, cudaFreeHost(pinned));
    EXPECT_EQ(cudaSuccess, cudaFree(dev));
    EXPECT_EQ(cudaSuccess, cudaFree(managed));
    EXPECT_EQ(cudaSuccess, cudaFree(dver));
    EXPECT_EQ(cudaSuccess, cudaFree(mver));
    zap_ed25519_batch_free(&b);
#else
    GTEST_SKIP() << "tests built without the CUDA runtime";
#endif
}

// Each kernel form on every batch size: the four-lane form (small batches by
// default) and the one-lane form (large batches) forced in turn through
// ZAP_ED25519_GPU_LANES, on the published vectors, a differential set with
// every mutation kind, and odd sizes with bitmaps.
TEST(Ed25519Gpu, BothKernelFormsMatchLibsodiumAtAnySize)
{
    ZAP_SKIP_WITHOUT_GPU();
    VarBatch vec;
    auto rfc = ed25519_load_rfc8032();
    auto wp = ed25519_load_wycheproof();
    for (const auto *set : {&rfc, &wp})
        for (const auto &v : *set)
            if (v.sig.size() == 64 && v.pk.size() == 32)
                add_var_record(vec, v.pk, v.sig, v.msg, v.valid ? 1 : 0);
    ASSERT_EQ(144u, vec.n);
    const uint64_t n = ed25519_env_u64("ZAP_ED25519_DIFF_N", 20000);
    zap_ed25519_batch_t fixed = generate(0, n, 256), var = generate(1, n / 4, 256);
    ASSERT_EQ(n, fixed.n);
    ASSERT_EQ(n / 4, var.n);
    for (const char *lanes : {"4", "1"}) {
        ASSERT_EQ(0, setenv("ZAP_ED25519_GPU_LANES", lanes, 1));
        std::vector<uint8_t> got(vec.n, 0xee);
        ASSERT_EQ(ZAP_OK, zap_ed25519_gpu_verify(vec.records.data(), 128, vec.n, 1,
                                                 vec.blob.data(), vec.blob.size(), got.data(),
                                                 nullptr, nullptr));
        EXPECT_EQ(vec.expected, got) << "vectors, lanes " << lanes;
        for (const zap_ed25519_batch_t *b : {&fixed, &var}) {
            std::vector<uint8_t> gv(b->n, 0xee);
            std::vector<uint32_t> bm((b->n + 31) / 32, 0xdeadbeefu);
            ASSERT_EQ(ZAP_OK, zap_ed25519_gpu_verify(b->records, b->stride, b->n, b->variable_msgs,
                                                     b->blob, b->blob_len, gv.data(), bm.data(),
                                                     nullptr));
            EXPECT_EQ(0u, count_mismatches(*b, gv)) << "lanes " << lanes;
            EXPECT_EQ(pack_bitmap(std::vector<uint8_t>(b->expected, b->expected + b->n)), bm)
                << "lanes " << lanes;
            for (uint64_t m : {1ull, 7ull, 31ull, 32ull, 33ull, 100ull, 1000ull}) {
                if (m > b->n)
                    continue;
                std::vector<uint8_t> g2(m, 0xee);
                std::vector<uint32_t> bm2((m + 31) / 32, 0xdeadbeefu);
                ASSERT_EQ(ZAP_OK, zap_ed25519_gpu_verify(b->records, b->stride, m,
                                                         b->variable_msgs, b->blob, b->blob_len,
                                                         g2.data(), bm2.data(), nullptr));
                EXPECT_EQ(std::vector<uint8_t>(b->expected, b->expected + m), g2)
                    << "n " << m << ", lanes " << lanes;
                EXPECT_EQ(pack_bitmap(g2), bm2) << "n " << m << ", lanes " << lanes;
            }
        }
    }
    ASSERT_EQ(0, unsetenv("ZAP_ED25519_GPU_LANES"));
    zap_ed25519_batch_free(&fixed);
    zap_ed25519_batch_free(&var);
}

// Host records of 2^18 items or more are copied and verified in chunks that
// overlap; an odd count leaves a short last chunk and a partial bitmap word,
// and variable messages are read from a blob copied whole before the chunks.
TEST(Ed25519Gpu, ChunkedHostBatchesMatchLibsodium)
{
    ZAP_SKIP_WITHOUT_GPU();
#ifdef ZAP_TEST_HAVE_CUDA
    const uint64_t n = (1u << 18) + 77;
    for (int variable_msgs = 0; variable_msgs < 2; variable_msgs++) {
        zap_ed25519_batch_t b = generate(variable_msgs, n, 1024);
        ASSERT_EQ(n, b.n);
        std::vector<uint8_t> want(b.expected, b.expected + n);
        void *pinned = nullptr;
        ASSERT_EQ(cudaSuccess, cudaMallocHost(&pinned, n * b.stride));
        std::memcpy(pinned, b.records, n * b.stride);
        const void *inputs[2] = {b.records, pinned}; // pageable, pinned
        for (int k = 0; k < 2; k++) {
            std::vector<uint8_t> got(n, 0xee);
            std::vector<uint32_t> bm((n + 31) / 32, 0xdeadbeefu);
            ASSERT_EQ(ZAP_OK, zap_ed25519_gpu_verify(inputs[k], b.stride, n, variable_msgs, b.blob,
                                                     b.blob_len, got.data(), bm.data(), nullptr));
            EXPECT_EQ(0u, count_mismatches(b, got)) << "input " << k;
            EXPECT_EQ(pack_bitmap(want), bm) << "input " << k;
        }
        EXPECT_EQ(cudaSuccess, cudaFreeHost(pinned));
        zap_ed25519_batch_free(&b);
    }
#else
    GTEST_SKIP() << "tests built without the CUDA runtime";
#endif
}

TEST(Ed25519Gpu, BadArgumentsAreInvalidParamAndLogged)
{
    LogCapture logs;
    uint8_t rec[128] = {0}, verdict = 7;
    zap_status_t st = zap_ed25519_gpu_verify(rec, 64, 1, 0, nullptr, 0, &verdict, nullptr, nullptr);
    if (!zap_ed25519_gpu_available() && st == ZAP_ERR_UNSUPPORTED) {
        std::printf("skipped: zap built without CUDA\n");
        GTEST_SKIP() << "zap built without CUDA";
    }
    EXPECT_EQ(ZAP_ERR_INVALID_PARAM, st);
    EXPECT_EQ(7, verdict);
    EXPECT_TRUE(logs.contains("stride 64")) << logs.all();
}
