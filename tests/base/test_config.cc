#include <gtest/gtest.h>
#include <cmath>
#include <cstring>
#include "log_capture.h"
extern "C" {
#include "zap/clock.h"
#include "zap/config.h"
#include "base/config_table.h"
}

TEST(Config, TableHasOneEntryPerSettingWithText)
{
    ASSERT_EQ(zap_config_count(), (size_t)ZAP_CFG_COUNT);
    for (size_t i = 0; i < zap_config_count(); i++) {
        const zap_config_entry_t *e = zap_config_entry(i);
        ASSERT_NE(e, nullptr);
        EXPECT_EQ(strncmp(e->name, "ZAP_", 4), 0) << e->name;
        EXPECT_GT(strlen(e->help), 10u) << e->name;
        EXPECT_GT(strlen(e->accepted), 0u) << e->name;
    }
    EXPECT_EQ(zap_config_entry(zap_config_count()), nullptr);
}

TEST(Config, DefaultsAreValid)
{
    for (size_t i = 0; i < zap_config_count(); i++)
        unsetenv(zap_config_entry(i)->name);
    const char *bad = nullptr;
    EXPECT_EQ(zap_config_check(&bad), ZAP_OK) << (bad ? bad : "");
}

TEST(Config, SizesAcceptSuffixes)
{
    struct { const char *text; uint64_t want; } cases[] = {
        {"0", 0}, {"4096", 4096}, {"4K", 4096}, {"4KiB", 4096}, {"2M", 2u << 20},
        {"3G", 3ull << 30}, {"1T", 1ull << 40}, {"4294967296", 4294967296ull},
    };
    for (auto &c : cases) {
        ScopedEnv e("ZAP_UMA_POOL_BYTES", c.text);
        uint64_t v = 1;
        EXPECT_EQ(zap_cfg_get_u64(ZAP_CFG_UMA_POOL_BYTES, &v), ZAP_OK) << c.text;
        EXPECT_EQ(v, c.want) << c.text;
    }
}

TEST(Config, MalformedPoolBytesIsAnErrorNamingTheVariable)
{
    const char *bad_values[] = {"-1", "abc", "", "12x", "1.5G", "99999999999999999999", "4 G", "+5", "0x10",
                                "18446744073709551615T"};
    for (const char *text : bad_values) {
        ScopedEnv e("ZAP_UMA_POOL_BYTES", text);
        LogCapture log;
        uint64_t v = 12345;
        EXPECT_EQ(zap_cfg_get_u64(ZAP_CFG_UMA_POOL_BYTES, &v), ZAP_ERR_INVALID_PARAM) << "'" << text << "'";
        EXPECT_EQ(v, 12345u) << "output written on failure";
        EXPECT_TRUE(log.contains("ZAP_UMA_POOL_BYTES")) << log.all();
    }
}

TEST(Config, ChoicesAreCheckedAndListed)
{
    {
        ScopedEnv e("ZAP_POOL_BACKEND", "HOST");
        int idx = -1;
        EXPECT_EQ(zap_cfg_get_choice(ZAP_CFG_POOL_BACKEND, &idx), ZAP_OK);
        EXPECT_EQ(idx, 3);
    }
    {
        ScopedEnv e("ZAP_POOL_BACKEND", "gpu");
        LogCapture log;
        int idx = -1;
        EXPECT_EQ(zap_cfg_get_choice(ZAP_CFG_POOL_BACKEND, &idx), ZAP_ERR_INVALID_PARAM);
        EXPECT_TRUE(log.contains("auto|managed|pinned|host")) << log.all();
    }
}

TEST(Config, TimeoutMustBePositiveSeconds)
{
    const char *good[] = {"30", "0.5", "120.25"};
    for (const char *t : good) {
        ScopedEnv e("ZAP_TIMEOUT", t);
        double v = 0;
        EXPECT_EQ(zap_cfg_get_seconds(ZAP_CFG_TIMEOUT, &v), ZAP_OK) << t;
    }
    const char *bad[] = {"0", "-3", "nan", "inf", "5s", "", "None", "none ", "never"};
    for (const char *t : bad) {
        ScopedEnv e("ZAP_TIMEOUT", t);
        double v = 0;
        EXPECT_EQ(zap_cfg_get_seconds(ZAP_CFG_TIMEOUT, &v), ZAP_ERR_INVALID_PARAM) << t;
    }
}

// The accepted form the row states is the whole truth: what strtod would
// also take (hex, exponents, spaces, signs, a bare point) is refused, the
// range ends are inclusive, and the message states the range.
TEST(Config, TimeoutAcceptsExactlyTheStatedForm)
{
    struct { const char *text; double want; } good[] = {
        {"30", 30}, {"0.3", 0.3}, {"120.25", 120.25}, {"0.001", 0.001}, {"10000000", 1e7}, {"007.50", 7.5},
    };
    for (auto &g : good) {
        ScopedEnv e("ZAP_TIMEOUT", g.text);
        double v = 0;
        EXPECT_EQ(zap_cfg_get_seconds(ZAP_CFG_TIMEOUT, &v), ZAP_OK) << g.text;
        EXPECT_EQ(v, g.want) << g.text;
    }
    const char *bad[] = {"0x10", "0X1p4", "1e3", "1E3", " 5", "5 ", "\t5", "+5", ".5", "5.", "0.0009", "10000000.5",
                         "10000001", "infinity", "NaN", "3,5", "0.5.1"};
    for (const char *t : bad) {
        ScopedEnv e("ZAP_TIMEOUT", t);
        LogCapture log;
        double v = 12345;
        EXPECT_EQ(zap_cfg_get_seconds(ZAP_CFG_TIMEOUT, &v), ZAP_ERR_INVALID_PARAM) << "'" << t << "'";
        EXPECT_EQ(v, 12345) << "output written on failure";
        EXPECT_TRUE(log.contains("0.001 to 10000000")) << log.all();
    }
}

TEST(Config, SizesRefuseSpacesAroundTheDigits)
{
    for (const char *t : {" 5", "5 ", "\t4K", "4K "}) {
        ScopedEnv e("ZAP_UMA_POOL_BYTES", t);
        LogCapture log;
        uint64_t v = 7;
        EXPECT_EQ(zap_cfg_get_u64(ZAP_CFG_UMA_POOL_BYTES, &v), ZAP_ERR_INVALID_PARAM) << "'" << t << "'";
        EXPECT_EQ(v, 7u);
    }
    for (const char *t : {" 1", "1 "}) {
        ScopedEnv e("ZAP_CHECKSUM", t);
        LogCapture log;
        uint64_t v = 7;
        EXPECT_EQ(zap_cfg_get_u64(ZAP_CFG_CHECKSUM, &v), ZAP_ERR_INVALID_PARAM) << "'" << t << "'";
    }
}

TEST(Config, ChunkBytesMustBeAPowerOfTwoInRange)
{
    const char *bad[] = {"3M", "1M", "2G", "5000000"};
    for (const char *t : bad) {
        uint64_t v;
        EXPECT_EQ(zap_cfg_parse_u64(ZAP_CFG_POOL_CHUNK_BYTES, t, &v), ZAP_ERR_INVALID_PARAM) << t;
    }
    uint64_t v = 0;
    EXPECT_EQ(zap_cfg_parse_u64(ZAP_CFG_POOL_CHUNK_BYTES, "16M", &v), ZAP_OK);
    EXPECT_EQ(v, 16u << 20);
}

TEST(Config, CheckReportsTheFirstBadVariable)
{
    ScopedEnv e("ZAP_VERIFIER", "tpu");
    const char *bad = nullptr;
    EXPECT_EQ(zap_config_check(&bad), ZAP_ERR_INVALID_PARAM);
    ASSERT_NE(bad, nullptr);
    EXPECT_STREQ(bad, "ZAP_VERIFIER");
}

// A deadline is opt-in: unset or "none", ZAP_TIMEOUT means no deadline
// (INFINITY), and so does the process-wide reading of it.
TEST(Config, TimeoutUnsetOrNoneMeansNoDeadline)
{
    for (const char *t : {(const char *)nullptr, "none"}) {
        ScopedEnv e("ZAP_TIMEOUT", t);
        double v = 0;
        EXPECT_EQ(zap_cfg_get_seconds(ZAP_CFG_TIMEOUT, &v), ZAP_OK) << (t ? t : "unset");
        EXPECT_TRUE(std::isinf(v)) << (t ? t : "unset");
        EXPECT_EQ(zap_timeout_from_env(&v), ZAP_OK);
        EXPECT_TRUE(std::isinf(v));
        EXPECT_TRUE(std::isinf(zap_timeout_seconds()));
    }
    ScopedEnv e("ZAP_TIMEOUT", "2.5");
    EXPECT_EQ(zap_timeout_seconds(), 2.5);
}

TEST(Config, ValueShowsEnvironmentOrDefault)
{
    size_t idx = ZAP_CFG_TIMEOUT;
    {
        ScopedEnv e("ZAP_TIMEOUT", nullptr);
        EXPECT_STREQ(zap_config_value(idx), "none");
    }
    {
        ScopedEnv e("ZAP_TIMEOUT", "7");
        EXPECT_STREQ(zap_config_value(idx), "7");
    }
}

TEST(Config, UnknownVariableWarnsWithSuggestion)
{
    ScopedEnv e("ZAP_TIMOUT", "5");
    LogCapture log;
    zap_cfg_warn_unknown();
    EXPECT_TRUE(log.contains("unknown variable ZAP_TIMOUT")) << log.all();
    EXPECT_TRUE(log.contains("did you mean ZAP_TIMEOUT")) << log.all();
}
