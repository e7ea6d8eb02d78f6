// The distributed job across emulated hosts (in-process ranks placed on
// hosts with zap_inproc_world_set_hosts): scatter mode then goes through
// the hosts' hierarchy (job_distribute_hier.c) and every rank must still end
// with the generator's verdicts; each other host receives its ranks' shards
// once, and the verdicts combine through the hierarchy.
#include <numeric>
#include <thread>
#include "verify_test_util.h"
extern "C" {
#include "zap/inproc.h"
#include "verify/job.h"
}

namespace {
struct HostRun {
    std::vector<zap_status_t> status;
    std::vector<std::vector<uint32_t>> bitmap;
    std::vector<uint64_t> xhost; // bytes each rank sent to other hosts
    std::vector<int> hierarchy;
};

HostRun run_on_hosts(const std::vector<uint64_t> &hosts, const std::vector<uint8_t> &batch, zap_verify_params_t p)
{
    int n = (int)hosts.size();
    zap_inproc_world_t *world = nullptr;
    EXPECT_EQ(zap_inproc_world_create(n, nullptr, &world), ZAP_OK);
    EXPECT_EQ(zap_inproc_world_set_hosts(world, hosts.data()), ZAP_OK);
    HostRun out{std::vector<zap_status_t>(n, ZAP_ERR_CANCELED), std::vector<std::vector<uint32_t>>(n),
                std::vector<uint64_t>(n, 0), std::vector<int>(n, 0)};
    std::vector<std::thread> th;
    for (int r = 0; r < n; r++)
        th.emplace_back([&, r] {
            zap_transport_t *t;
            zap_comm_t *comm;
            if (zap_inproc_transport(world, r, &t) != ZAP_OK || zap_comm_create(t, &comm) != ZAP_OK)
                return;
            zap_comm_attr_t a{};
            a.field_mask = ZAP_COMM_ATTR_HOSTS;
            zap_comm_query(comm, &a);
            out.hierarchy[r] = a.hierarchy;
            zap_transport_traffic_t before, after;
            zap_transport_traffic(t, &before);
            zap_verify_result_t res = {};
            out.status[r] = zap_verify_job(comm, r == p.root ? batch.data() : nullptr, r == p.root ? batch.size() : 0,
                                           &p, &res);
            zap_transport_traffic(t, &after);
            out.xhost[r] = after.bytes[ZAP_PEER_OTHER_HOST] - before.bytes[ZAP_PEER_OTHER_HOST];
            if (res.bitmap)
                out.bitmap[r].assign(res.bitmap, res.bitmap + res.bitmap_words);
            zap_verify_result_cleanup(&res);
            zap_comm_destroy(comm);
        });
    for (auto &x : th)
        x.join();
    zap_inproc_world_destroy(world);
    return out;
}
} // namespace

TEST(JobAcrossHosts, EveryLayoutRootAndMessageKindGivesTheGeneratorsVerdicts)
{
    const std::vector<std::vector<uint64_t>> layouts = {
        {1, 1, 2, 2}, {1, 1, 1, 2, 2, 2}, {1, 2, 2, 2}, {1, 1, 2, 2, 3, 3, 3}, {1, 2, 1, 2, 1, 2}};
    for (int variable : {0, 1}) {
        GenBatch b = make_batch(1000, 0.2, 77 + variable, variable);
        for (const auto &hosts : layouts)
            for (int root : {0, (int)hosts.size() - 1})
                for (zap_verify_combine_t combine : {ZAP_COMBINE_OR_ALLREDUCE, ZAP_COMBINE_ALLGATHERV}) {
                    if (combine == ZAP_COMBINE_ALLGATHERV && hosts.size() != 7)
                        continue;
                    zap_verify_params_t p = {};
                    p.verifier = ZAP_VERIFIER_CPU;
                    p.threads = 1;
                    p.mode = ZAP_VERIFY_SCATTER;
                    p.combine = combine;
                    p.root = root;
                    HostRun run = run_on_hosts(hosts, b.bytes, p);
                    for (size_t r = 0; r < hosts.size(); r++) {
                        ASSERT_EQ(run.status[r], ZAP_OK) << "rank " << r << " root " << root << " variable " << variable;
                        EXPECT_EQ(run.bitmap[r], b.expected) << "rank " << r << " root " << root;
                        EXPECT_EQ(run.hierarchy[r], 1);
                    }
                }
    }
}

TEST(JobAcrossHosts, EachOtherHostReceivesItsShardsOnce)
{
    // 2 hosts of 3: the root's host sends the other host its three shards
    // (half the records) once; the rest that crosses is the combine and the
    // small exchanges.
    const std::vector<uint64_t> hosts = {1, 1, 1, 2, 2, 2};
    GenBatch b = make_batch(20000, 0.1, 5, 0);
    zap_verify_params_t p = {};
    p.verifier = ZAP_VERIFIER_CPU;
    p.threads = 1;
    p.mode = ZAP_VERIFY_SCATTER;
    HostRun run = run_on_hosts(hosts, b.bytes, p);
    for (int r = 0; r < 6; r++)
        ASSERT_EQ(run.status[r], ZAP_OK);
    uint64_t root_host = run.xhost[0] + run.xhost[1] + run.xhost[2];
    zap_batch_view_t v;
    ASSERT_EQ(zap_batch_parse(b.bytes.data(), b.bytes.size(), 0, &v, NULL, NULL, 0), ZAP_OK);
    uint64_t shards = 0;
    for (int r = 3; r < 6; r++) {
        uint64_t f, c;
        zap_verify_shard(20000, 6, r, &f, &c);
        shards += c * v.stride;
    }
    EXPECT_GE(root_host, shards);
    EXPECT_LE(root_host, shards + shards / 20) << "the shards cross once, plus the combine";
}
