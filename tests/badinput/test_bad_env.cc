// Bad environment values: each malformed or out-of-range ZAP_* setting makes
// the create call that reads it fail with ZAP_ERR_INVALID_PARAM and a message
// naming the variable and the value (docs/bad-input.md, rows E*); the same
// value is also what zap_config_check reports.
#include "badinput_util.h"
#include <string>
extern "C" {
#include "zap/config.h"
#include "base/config_table.h"
}

namespace {
// zap_config_check names the variable, and the log line names it with the value.
void expect_check_names(const char *var, const char *value)
{
    LogCapture log;
    ScopedEnv env(var, value);
    const char *bad = nullptr;
    EXPECT_EQ(zap_config_check(&bad), ZAP_ERR_INVALID_PARAM) << var << "=" << value;
    ASSERT_NE(bad, nullptr);
    EXPECT_STREQ(bad, var);
    EXPECT_TRUE(log.contains(var)) << log.all();
    EXPECT_TRUE(log.contains(std::string("'") + value + "'")) << log.all();
}

void expect_pool_create_refused(const char *var, const char *value)
{
    LogCapture log;
    ScopedEnv env(var, value);
    zap_pool_t *p = nullptr;
    EXPECT_EQ(zap_pool_create(nullptr, &p), ZAP_ERR_INVALID_PARAM) << var << "=" << value;
    EXPECT_EQ(p, nullptr);
    EXPECT_TRUE(log.contains(var)) << log.all();
}
} // namespace

TEST(BadEnv, PoolBytesNotANumberFailsPoolCreate) { expect_pool_create_refused("ZAP_UMA_POOL_BYTES", "lots"); }
TEST(BadEnv, PoolBytesUnknownSuffixFailsPoolCreate) { expect_pool_create_refused("ZAP_UMA_POOL_BYTES", "12Q"); }
TEST(BadEnv, PoolBytesNegativeFailsPoolCreate) { expect_pool_create_refused("ZAP_UMA_POOL_BYTES", "-5"); }
TEST(BadEnv, PoolBytesFractionFailsPoolCreate) { expect_pool_create_refused("ZAP_UMA_POOL_BYTES", "1.5G"); }
TEST(BadEnv, PoolBytesOverflowFailsPoolCreate)
{
    expect_pool_create_refused("ZAP_UMA_POOL_BYTES", "99999999999999999999999");
}
TEST(BadEnv, PoolBytesSuffixOverflowFailsPoolCreate) { expect_pool_create_refused("ZAP_UMA_POOL_BYTES", "20000000T"); }
TEST(BadEnv, PoolBytesEmptyFailsPoolCreate) { expect_pool_create_refused("ZAP_UMA_POOL_BYTES", ""); }
TEST(BadEnv, ChunkBytesNotPowerOfTwoFailsPoolCreate) { expect_pool_create_refused("ZAP_POOL_CHUNK_BYTES", "3M"); }
TEST(BadEnv, ChunkBytesBelowRangeFailsPoolCreate) { expect_pool_create_refused("ZAP_POOL_CHUNK_BYTES", "1M"); }
TEST(BadEnv, ChunkBytesAboveRangeFailsPoolCreate) { expect_pool_create_refused("ZAP_POOL_CHUNK_BYTES", "2G"); }
TEST(BadEnv, UnknownBackendNameFailsPoolCreate) { expect_pool_create_refused("ZAP_POOL_BACKEND", "gpu"); }

TEST(BadEnv, BackendTypoFailsEvenWhenParamsChoose)
{
    // The variable is checked although params pick the backing.
    LogCapture log;
    ScopedEnv env("ZAP_POOL_BACKEND", "hots");
    zap_pool_params_t pp{};
    pp.backend = ZAP_POOL_BACKEND_HOST;
    zap_pool_t *p = nullptr;
    EXPECT_EQ(zap_pool_create(&pp, &p), ZAP_ERR_INVALID_PARAM);
}

TEST(BadEnv, EagerBytesAboveOneMiBFailsWorldCreate)
{
    LogCapture log;
    ScopedEnv env("ZAP_INPROC_EAGER_BYTES", "2M");
    zap_inproc_world_t *w = nullptr;
    EXPECT_EQ(zap_inproc_world_create(2, nullptr, &w), ZAP_ERR_INVALID_PARAM);
    EXPECT_EQ(w, nullptr);
    EXPECT_TRUE(log.contains("ZAP_INPROC_EAGER_BYTES"));
}

TEST(BadEnv, TimeoutNotANumberFailsWorldCreate)
{
    // A malformed timeout must fail at create time, not silently become the
    // default at every wait.
    LogCapture log;
    ScopedEnv env("ZAP_TIMEOUT", "soon");
    zap_inproc_world_t *w = nullptr;
    EXPECT_EQ(zap_inproc_world_create(2, nullptr, &w), ZAP_ERR_INVALID_PARAM);
    EXPECT_EQ(w, nullptr);
    EXPECT_TRUE(log.contains("ZAP_TIMEOUT"));
    zap_inproc_world_destroy(w);
}

TEST(BadEnv, TimeoutNotANumberIsReported) { expect_check_names("ZAP_TIMEOUT", "soon"); }
TEST(BadEnv, TimeoutZeroIsReported) { expect_check_names("ZAP_TIMEOUT", "0"); }
TEST(BadEnv, TimeoutNegativeIsReported) { expect_check_names("ZAP_TIMEOUT", "-1"); }
TEST(BadEnv, TimeoutInfinityIsReported) { expect_check_names("ZAP_TIMEOUT", "inf"); }
TEST(BadEnv, TimeoutNanIsReported) { expect_check_names("ZAP_TIMEOUT", "nan"); }
TEST(BadEnv, TimeoutWithUnitIsReported) { expect_check_names("ZAP_TIMEOUT", "30s"); }
TEST(BadEnv, TimeoutHexIsReported) { expect_check_names("ZAP_TIMEOUT", "0x10"); }
TEST(BadEnv, TimeoutExponentIsReported) { expect_check_names("ZAP_TIMEOUT", "1e3"); }
TEST(BadEnv, TimeoutAboveRangeIsReported) { expect_check_names("ZAP_TIMEOUT", "10000001"); }
TEST(BadEnv, TimeoutBelowRangeIsReported) { expect_check_names("ZAP_TIMEOUT", "0.0001"); }
TEST(BadEnv, PoolBytesLeadingSpaceIsReported) { expect_check_names("ZAP_UMA_POOL_BYTES", " 4G"); }
TEST(BadEnv, LogLevelUnknownIsReported) { expect_check_names("ZAP_LOG_LEVEL", "loud"); }
TEST(BadEnv, ChecksumTwoIsReported) { expect_check_names("ZAP_CHECKSUM", "2"); }
TEST(BadEnv, ChecksumWordIsReported) { expect_check_names("ZAP_CHECKSUM", "yes"); }
TEST(BadEnv, AllreduceAlgUnknownIsReported) { expect_check_names("ZAP_ALLREDUCE_ALG", "fastest"); }
TEST(BadEnv, BcastAlgUnknownIsReported) { expect_check_names("ZAP_BCAST_ALG", "tree"); }
TEST(BadEnv, PipelineBytesBelowRangeIsReported) { expect_check_names("ZAP_COLL_PIPELINE_BYTES", "1K"); }
TEST(BadEnv, VerifyThreadsAboveRangeIsReported) { expect_check_names("ZAP_VERIFY_THREADS", "5000"); }
TEST(BadEnv, VerifierUnknownIsReported) { expect_check_names("ZAP_VERIFIER", "fpga"); }
TEST(BadEnv, UcpStagingUnknownIsReported) { expect_check_names("ZAP_UCP_STAGING", "eager"); }
TEST(BadEnv, UcpPreconnectUnknownIsReported) { expect_check_names("ZAP_UCP_PRECONNECT", "yes"); }
TEST(BadEnv, GpuMinItemsNegativeIsReported) { expect_check_names("ZAP_GPU_MIN_ITEMS", "-1"); }
TEST(BadEnv, CollShmUnknownIsReported) { expect_check_names("ZAP_COLL_SHM", "yes"); }
TEST(BadEnv, CollCmaUnknownIsReported) { expect_check_names("ZAP_COLL_CMA", "yes"); }

TEST(BadEnv, UnknownZapVariableWarnsWithSuggestion)
{
    LogCapture log;
    ScopedEnv env("ZAP_TIMEOUTS", "5");
    const char *bad = nullptr;
    EXPECT_EQ(zap_config_check(&bad), ZAP_OK);
    zap_cfg_warn_unknown();
    EXPECT_TRUE(log.contains("ZAP_TIMEOUTS")) << log.all();
    EXPECT_TRUE(log.contains("ZAP_TIMEOUT")) << log.all();
}
