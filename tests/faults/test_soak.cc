// Soak (label soak/long, not in the default run): 4 inproc ranks exchange
// 10^6 point-to-point messages of seeded sizes (0 to 64 KiB, eager and
// rendezvous) around a ring and run 10^5 collectives (allreduce and bcast,
// alternating), every byte and element checked against its closed form;
// afterwards the pool has no buffer out. ZAP_SOAK_SCALE (default 1) scales
// both counts down for a quick run (e.g. 0.01).
#include <gtest/gtest.h>
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <thread>
#include <vector>
extern "C" {
#include "zap/coll.h"
#include "zap/inproc.h"
}

namespace {
uint64_t mix(uint64_t z)
{
    z += 0x9e3779b97f4a7c15ull;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}
size_t msg_size(int src, uint64_t m)
{
    uint64_t r = mix(((uint64_t)src << 48) ^ m);
    return (r & 7) == 0 ? (size_t)(r >> 8) % 65537 : (size_t)(r >> 8) % 1025; // 1 in 8 large
}
uint8_t msg_byte(int src, uint64_t m, size_t i) { return (uint8_t)(src * 131 + m * 7 + i * 13 + (i >> 8)); }
double scale()
{
    const char *s = getenv("ZAP_SOAK_SCALE");
    return s ? atof(s) : 1.0;
}
} // namespace

TEST(Soak, MillionMessagesAndHundredThousandCollectivesArriveIntact)
{
    const int n = 4, burst = 8;
    const uint64_t total_msgs = (uint64_t)(1e6 * scale()), total_colls = (uint64_t)(1e5 * scale());
    const uint64_t rounds = total_msgs / ((uint64_t)n * burst) + 1;
    const uint64_t colls_per_round = (total_colls + rounds - 1) / rounds;
    zap_inproc_world_t *w = nullptr;
    ASSERT_EQ(zap_inproc_world_create(n, nullptr, &w), ZAP_OK);
    std::vector<zap_transport_t *> t(n);
    std::vector<zap_comm_t *> c(n);
    for (int r = 0; r < n; r++)
        ASSERT_EQ(zap_inproc_transport(w, r, &t[r]), ZAP_OK);
    std::atomic<uint64_t> msgs{0}, colls{0}, bad{0};
    auto rank_main = [&](int r) {
        if (zap_comm_create(t[r], &c[r]) != ZAP_OK) {
            bad++;
            return;
        }
        int to = (r + 1) % n, from = (r + n - 1) % n;
        std::vector<uint8_t> sb((size_t)burst * 65536), rb((size_t)burst * 65536);
        std::vector<int64_t> x(512), y(512);
        uint64_t my_colls = 0;
        for (uint64_t round = 0; round < rounds && bad == 0; round++) {
            zap_request_t *sr[burst], *rr[burst];
            for (int k = 0; k < burst; k++) {
                uint64_t m = round * burst + k;
                size_t len = msg_size(r, m);
                uint8_t *s = &sb[(size_t)k * 65536];
                for (size_t i = 0; i < len; i++)
                    s[i] = msg_byte(r, m, i);
                ASSERT_EQ(zap_transport_irecv(t[r], from, 3, &rb[(size_t)k * 65536], 65536, &rr[k]), ZAP_OK);
                ASSERT_EQ(zap_transport_isend(t[r], to, 3, s, len, &sr[k]), ZAP_OK);
            }
            for (int k = 0; k < burst; k++) {
                uint64_t m = round * burst + k;
                ASSERT_EQ(zap_request_wait(rr[k]), ZAP_OK);
                size_t len = 0, want = msg_size(from, m);
                ASSERT_EQ(zap_request_received(rr[k], &len), ZAP_OK);
                const uint8_t *b = &rb[(size_t)k * 65536];
                bool ok = len == want;
                for (size_t i = 0; ok && i < len; i++)
                    ok = b[i] == msg_byte(from, m, i);
                if (!ok) {
                    ADD_FAILURE() << "rank " << r << " message " << m << " from " << from << " corrupt or lost";
                    bad++;
                }
                zap_request_free(rr[k]);
                ASSERT_EQ(zap_request_wait(sr[k]), ZAP_OK);
                zap_request_free(sr[k]);
                msgs++;
            }
            for (uint64_t j = 0; j < colls_per_round && my_colls < total_colls; j++) {
                size_t cnt = 1 + (size_t)(mix(round * 8 + j) % 512);
                if (my_colls % 2 == 0) {
                    for (size_t i = 0; i < cnt; i++)
                        x[i] = (int64_t)(r + 1) * (int64_t)(i + round);
                    ASSERT_EQ(zap_allreduce(c[r], x.data(), y.data(), cnt, ZAP_DT_INT64, ZAP_OP_SUM), ZAP_OK);
                    for (size_t i = 0; i < cnt; i++)
                        if (y[i] != (int64_t)(i + round) * n * (n + 1) / 2) {
                            ADD_FAILURE() << "allreduce round " << round << " index " << i;
                            bad++;
                            break;
                        }
                } else {
                    int root = (int)(round % n);
                    for (size_t i = 0; i < cnt; i++)
                        y[i] = r == root ? (int64_t)(i * 5 + round) : -1;
                    ASSERT_EQ(zap_bcast(c[r], y.data(), cnt, ZAP_DT_INT64, root), ZAP_OK);
                    for (size_t i = 0; i < cnt; i++)
                        if (y[i] != (int64_t)(i * 5 + round)) {
                            ADD_FAILURE() << "bcast round " << round << " index " << i;
                            bad++;
                            break;
                        }
                }
                my_colls++;
                colls++;
            }
        }
    };
    std::vector<std::thread> ts;
    for (int r = 0; r < n; r++)
        ts.emplace_back(rank_main, r);
    for (auto &x : ts)
        x.join();
    printf("soak: %llu messages, %llu collectives (%llu calls over %d ranks), %llu bad\n",
           (unsigned long long)msgs.load(), (unsigned long long)colls.load() / n, (unsigned long long)colls.load(), n,
           (unsigned long long)bad.load());
    EXPECT_EQ(bad.load(), 0u);
    EXPECT_GE(msgs.load(), total_msgs);
    EXPECT_EQ(colls.load(), total_colls * n);
    for (auto *x : c)
        zap_comm_destroy(x);
    zap_pool_stats_t s{};
    ASSERT_EQ(zap_pool_stats(zap_transport_pool(t[0]), &s), ZAP_OK);
    EXPECT_EQ(s.buffers_out, 0u);
    zap_inproc_world_destroy(w);
}
