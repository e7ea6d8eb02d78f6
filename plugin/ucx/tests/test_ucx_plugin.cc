/* The plugin's public API and its memory domain, seen through UCT's public API
 * in one process (the library is linked, so its constructor has registered it
 * before main). The UCP-level and Open MPI behaviour is covered by
 * plugin_test.sh; these cases pin the contract of each call. */
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ucp/api/ucp.h>
#include <uct/api/uct.h>

#include "zap/ucx_plugin.h"

namespace {

/* Opens the "zap" memory domain the way any UCT user would. */
class ZapMd {
public:
    /* setting/value: one UCX_ZAP_* setting to change (without the prefix). */
    explicit ZapMd(const char *setting = nullptr, const char *value = nullptr)
    {
        if (uct_query_components(&comps_, &ncomps_) != UCS_OK) {
            return;
        }
        for (unsigned i = 0; i < ncomps_; ++i) {
            uct_component_attr_t attr;
            std::memset(&attr, 0, sizeof(attr));
            attr.field_mask = UCT_COMPONENT_ATTR_FIELD_NAME;
            if (uct_component_query(comps_[i], &attr) == UCS_OK &&
                std::strcmp(attr.name, ZAP_UCX_PLUGIN_COMPONENT) == 0) {
                comp_ = comps_[i];
            }
        }
        uct_md_config_t *cfg;
        if (comp_ != nullptr && uct_md_config_read(comp_, nullptr, nullptr, &cfg) == UCS_OK) {
            if (setting != nullptr && uct_config_modify(cfg, setting, value) != UCS_OK) {
                ADD_FAILURE() << "uct_config_modify " << setting << "=" << value;
            } else if (uct_md_open(comp_, ZAP_UCX_PLUGIN_COMPONENT, cfg, &md_) != UCS_OK) {
                md_ = nullptr;
            }
            uct_config_release(cfg);
        }
    }
    ~ZapMd()
    {
        close();
        if (comps_ != nullptr) {
            uct_release_component_list(comps_);
        }
    }
    void close()
    {
        if (md_ != nullptr) {
            uct_md_close(md_);
            md_ = nullptr;
        }
    }
    uct_md_h md() const { return md_; }

    /* uct_mem_alloc restricted to this MD. */
    ucs_status_t alloc(size_t len, uct_allocated_memory_t *mem)
    {
        uct_alloc_method_t method = UCT_ALLOC_METHOD_MD;
        uct_mem_alloc_params_t params;
        std::memset(&params, 0, sizeof(params));
        params.field_mask = UCT_MEM_ALLOC_PARAM_FIELD_FLAGS | UCT_MEM_ALLOC_PARAM_FIELD_MEM_TYPE |
                            UCT_MEM_ALLOC_PARAM_FIELD_MDS | UCT_MEM_ALLOC_PARAM_FIELD_NAME;
        params.flags = UCT_MD_MEM_ACCESS_ALL;
        params.mem_type = UCS_MEMORY_TYPE_HOST;
        params.mds.mds = &md_;
        params.mds.count = 1;
        params.name = "zap plugin test";
        return uct_mem_alloc(len, &method, 1, &params, mem);
    }

private:
    uct_component_h *comps_ = nullptr;
    unsigned ncomps_ = 0;
    uct_component_h comp_ = nullptr;
    uct_md_h md_ = nullptr;
};

/* uct_md_mem_attr_t is 32 bytes in 1.13 (our headers) and 48 in 1.16: leave room. */
union MemAttr {
    uct_md_mem_attr_t a;
    char pad[128];
};

zap_ucx_plugin_info_t Info()
{
    zap_ucx_plugin_info_t info;
    EXPECT_EQ(ZAP_OK, zap_ucx_plugin_info(&info));
    return info;
}

}  // namespace

TEST(UcxPlugin, InfoOfNullIsInvalidParam)
{
    EXPECT_EQ(ZAP_ERR_INVALID_PARAM, zap_ucx_plugin_info(nullptr));
}

TEST(UcxPlugin, RegistersWithTheRunningUcxLayout)
{
    unsigned major, minor, release;
    ucp_get_version(&major, &minor, &release);
    ASSERT_EQ(ZAP_OK, zap_ucx_plugin_register());
    zap_ucx_plugin_info_t info = Info();
    EXPECT_EQ(ZAP_UCX_PLUGIN_REGISTERED, info.state);
    EXPECT_STREQ("registered", info.reason);
    EXPECT_EQ(major, info.ucx_major);
    EXPECT_EQ(minor, info.ucx_minor);
    EXPECT_EQ(release, info.ucx_release);
    EXPECT_EQ(minor == 16 ? 116 : 113, info.abi);
}

TEST(UcxPlugin, RegisterAgainReturnsTheFirstOutcomeAndChangesNothing)
{
    ASSERT_EQ(ZAP_OK, zap_ucx_plugin_register());
    zap_ucx_plugin_info_t before = Info();
    EXPECT_EQ(ZAP_OK, zap_ucx_plugin_register());
    EXPECT_EQ(ZAP_OK, zap_ucx_plugin_register());
    zap_ucx_plugin_info_t after = Info();
    EXPECT_EQ(before.state, after.state);
    EXPECT_EQ(before.md_opens, after.md_opens);
    /* Registered once: UCT lists exactly one component named "zap". */
    uct_component_h *comps;
    unsigned n, named = 0;
    ASSERT_EQ(UCS_OK, uct_query_components(&comps, &n));
    for (unsigned i = 0; i < n; ++i) {
        uct_component_attr_t attr;
        std::memset(&attr, 0, sizeof(attr));
        attr.field_mask = UCT_COMPONENT_ATTR_FIELD_NAME;
        ASSERT_EQ(UCS_OK, uct_component_query(comps[i], &attr));
        named += std::strcmp(attr.name, ZAP_UCX_PLUGIN_COMPONENT) == 0;
    }
    uct_release_component_list(comps);
    EXPECT_EQ(1u, named);
}

TEST(UcxPlugin, OwnsNothingOutsideThePool)
{
    void *p = std::malloc(4096);
    ASSERT_NE(nullptr, p);
    EXPECT_EQ(0, zap_ucx_plugin_owns(p, 4096));
    EXPECT_EQ(0, zap_ucx_plugin_owns(nullptr, 1));
    std::free(p);
}

TEST(UcxPlugin, UctAllocationComesFromThePoolAndIsRecognised)
{
    ZapMd zap;
    ASSERT_NE(nullptr, zap.md());
    zap_ucx_plugin_info_t before = Info();
    uct_allocated_memory_t mem;
    ASSERT_EQ(UCS_OK, zap.alloc(65536, &mem));
    EXPECT_EQ(UCT_ALLOC_METHOD_MD, mem.method);
    EXPECT_EQ(1, zap_ucx_plugin_owns(mem.address, 65536));
    std::memset(mem.address, 0xa5, 65536);

    MemAttr m;
    std::memset(&m, 0, sizeof(m));
    m.a.field_mask = UCT_MD_MEM_ATTR_FIELD_MEM_TYPE | UCT_MD_MEM_ATTR_FIELD_BASE_ADDRESS |
                     UCT_MD_MEM_ATTR_FIELD_ALLOC_LENGTH;
    ASSERT_EQ(UCS_OK, uct_md_mem_query(zap.md(), mem.address, 65536, &m.a));
    EXPECT_EQ(UCS_MEMORY_TYPE_HOST, m.a.mem_type);
    EXPECT_LE(static_cast<char *>(m.a.base_address), static_cast<char *>(mem.address));
    EXPECT_GE(static_cast<char *>(m.a.base_address) + m.a.alloc_length,
              static_cast<char *>(mem.address) + 65536);

    ucs_memory_type_t type = UCS_MEMORY_TYPE_LAST;
    EXPECT_EQ(UCS_OK, uct_md_detect_memory_type(zap.md(), mem.address, 65536, &type));
    EXPECT_EQ(UCS_MEMORY_TYPE_HOST, type);

    EXPECT_EQ(UCS_OK, uct_mem_free(&mem));
    zap_ucx_plugin_info_t after = Info();
    EXPECT_EQ(before.allocs + 1, after.allocs);
    EXPECT_EQ(before.frees + 1, after.frees);
    EXPECT_GE(after.query_hits, before.query_hits + 2);
}

TEST(UcxPlugin, MemQueryAndDetectRefuseForeignMemory)
{
    ZapMd zap;
    ASSERT_NE(nullptr, zap.md());
    void *p = std::malloc(4096);
    ASSERT_NE(nullptr, p);
    MemAttr m;
    std::memset(&m, 0, sizeof(m));
    m.a.field_mask = UCT_MD_MEM_ATTR_FIELD_MEM_TYPE;
    EXPECT_NE(UCS_OK, uct_md_mem_query(zap.md(), p, 4096, &m.a));
    ucs_memory_type_t type;
    EXPECT_NE(UCS_OK, uct_md_detect_memory_type(zap.md(), p, 4096, &type));
    std::free(p);
}

TEST(UcxPlugin, RangeStraddlingThePoolEndIsNotPoolMemory)
{
    ZapMd zap;
    ASSERT_NE(nullptr, zap.md());
    uct_allocated_memory_t mem;
    ASSERT_EQ(UCS_OK, zap.alloc(4096, &mem));
    MemAttr m;
    std::memset(&m, 0, sizeof(m));
    m.a.field_mask = UCT_MD_MEM_ATTR_FIELD_BASE_ADDRESS | UCT_MD_MEM_ATTR_FIELD_ALLOC_LENGTH;
    ASSERT_EQ(UCS_OK, uct_md_mem_query(zap.md(), mem.address, 1, &m.a));
    char *end = static_cast<char *>(m.a.base_address) + m.a.alloc_length;
    EXPECT_EQ(1, zap_ucx_plugin_owns(end - 8, 8));
    EXPECT_EQ(0, zap_ucx_plugin_owns(end - 8, 16));
    EXPECT_EQ(UCS_OK, uct_mem_free(&mem));
}

TEST(UcxPlugin, LastMemoryDomainClosedWithNothingOutReleasesThePool)
{
    void *addr;
    {
        ZapMd zap;
        ASSERT_NE(nullptr, zap.md());
        uct_allocated_memory_t mem;
        ASSERT_EQ(UCS_OK, zap.alloc(4096, &mem));
        addr = mem.address;
        EXPECT_EQ(1, zap_ucx_plugin_owns(addr, 4096));
        ASSERT_EQ(UCS_OK, uct_mem_free(&mem));
    }
    EXPECT_EQ(0, zap_ucx_plugin_owns(addr, 4096));
}

/* UCX_ZAP_CHUNK_SIZE reaches the pool: a small buffer's enclosing region is
 * one chunk of that size. */
TEST(UcxPlugin, ChunkSizeSettingReachesThePool)
{
    for (size_t mib : {4, 16}) {
        char value[16];
        std::snprintf(value, sizeof(value), "%zum", mib);
        ZapMd zap("CHUNK_SIZE", value);
        ASSERT_NE(nullptr, zap.md());
        uct_allocated_memory_t mem;
        ASSERT_EQ(UCS_OK, zap.alloc(4096, &mem));
        MemAttr m;
        std::memset(&m, 0, sizeof(m));
        m.a.field_mask = UCT_MD_MEM_ATTR_FIELD_ALLOC_LENGTH;
        ASSERT_EQ(UCS_OK, uct_md_mem_query(zap.md(), mem.address, 4096, &m.a));
        EXPECT_EQ(mib << 20, m.a.alloc_length) << "UCX_ZAP_CHUNK_SIZE=" << value;
        EXPECT_EQ(UCS_OK, uct_mem_free(&mem));
    }
}

TEST(UcxPlugin, TwoOpenMemoryDomainsShareOnePool)
{
    ZapMd a, b;
    ASSERT_NE(nullptr, a.md());
    ASSERT_NE(nullptr, b.md());
    uct_allocated_memory_t mem;
    ASSERT_EQ(UCS_OK, a.alloc(4096, &mem));
    a.close();
    /* b still holds the pool: the buffer stays pool memory and b sees it. */
    EXPECT_EQ(1, zap_ucx_plugin_owns(mem.address, 4096));
    MemAttr m;
    std::memset(&m, 0, sizeof(m));
    m.a.field_mask = UCT_MD_MEM_ATTR_FIELD_MEM_TYPE;
    EXPECT_EQ(UCS_OK, uct_md_mem_query(b.md(), mem.address, 4096, &m.a));
    mem.md = b.md(); /* free through the MD still open */
    EXPECT_EQ(UCS_OK, uct_mem_free(&mem));
}
