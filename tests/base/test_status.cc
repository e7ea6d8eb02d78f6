#include <gtest/gtest.h>
#include <set>
#include <string>
extern "C" {
#include "zap/status.h"
}

TEST(Status, EveryCodeHasItsOwnConstantString)
{
    std::set<std::string> seen;
    for (int code = ZAP_ERR_REVOKED; code <= ZAP_INPROGRESS; code++) {
        const char *s = zap_status_string(static_cast<zap_status_t>(code));
        ASSERT_NE(s, nullptr);
        EXPECT_STRNE(s, "unknown status") << "code " << code;
        EXPECT_TRUE(seen.insert(s).second) << "duplicate text for code " << code;
        EXPECT_EQ(s, zap_status_string(static_cast<zap_status_t>(code))) << "not a constant";
    }
}

TEST(Status, UnknownCodesGiveOneFixedString)
{
    EXPECT_STREQ(zap_status_string(static_cast<zap_status_t>(-1000)), "unknown status");
    EXPECT_STREQ(zap_status_string(static_cast<zap_status_t>(77)), "unknown status");
}

TEST(Status, ValuesAreStable)
{
    // Part of the ABI: never renumbered.
    EXPECT_EQ(ZAP_OK, 0);
    EXPECT_EQ(ZAP_INPROGRESS, 1);
    EXPECT_EQ(ZAP_ERR_INVALID_PARAM, -1);
    EXPECT_EQ(ZAP_ERR_TIMED_OUT, -7);
    EXPECT_EQ(ZAP_ERR_PEER_FAILED, -8);
    EXPECT_EQ(ZAP_ERR_CANCELED, -16);
    EXPECT_EQ(ZAP_ERR_REVOKED, -17);
}
