// The distributed job with threads as ranks (inproc transport): every rank
// count gives the verdict set one rank gives, and failures reach every rank.
#include <thread>
#include "verify_test_util.h"
#include "log_capture.h"
extern "C" {
#include "zap/inproc.h"
#include "zap/pool.h"
#include "verify/verify_impl.h"
#include "verify/job.h"
#include "verify/stream.h"
#include "verify/watch.h"
#include "verify_device.h"
}

struct RankOut {
    zap_status_t status = ZAP_ERR_CANCELED;
    zap_verify_result_t res = {};
    std::vector<uint32_t> bitmap;
    double seconds = 0; // the job call's own time on this rank
};

// Runs the job on nranks threads; the root holds `batch`. pool: the world's
// pool (NULL: one from the environment); hooks: the job's test hooks (every
// rank's); cp: the communicators' parameters (NULL: from the environment).
static std::vector<RankOut> run_job(int nranks, const std::vector<uint8_t> &batch, zap_verify_params_t p,
                                    zap_pool_t *pool = nullptr, const zap_verify_hooks_t *hooks = nullptr,
                                    const zap_comm_params_t *cp = nullptr)
{
    zap_inproc_world_t *world = nullptr;
    EXPECT_EQ(zap_inproc_world_create(nranks, pool, &world), ZAP_OK);
    std::vector<RankOut> out(nranks);
    std::vector<std::thread> th;
    for (int r = 0; r < nranks; r++)
        th.emplace_back([&, r] {
            zap_transport_t *t;
            zap_comm_t *comm;
            if (zap_inproc_transport(world, r, &t) != ZAP_OK ||
                (cp ? zap_comm_create_ex(t, cp, &comm) : zap_comm_create(t, &comm)) != ZAP_OK)
                return;
            double t0 = zap_clock_now();
            out[r].status = zap_verify_job_hooked(comm, r == p.root ? batch.data() : nullptr,
                                                  r == p.root ? batch.size() : 0, &p, hooks, &out[r].res);
            out[r].seconds = zap_clock_now() - t0;
            if (out[r].res.bitmap)
                out[r].bitmap.assign(out[r].res.bitmap, out[r].res.bitmap + out[r].res.bitmap_words);
            zap_comm_destroy(comm);
        });
    for (auto &t : th)
        t.join();
    zap_inproc_world_destroy(world);
    return out;
}

static void cleanup(std::vector<RankOut> &v)
{
    for (auto &o : v)
        zap_verify_result_cleanup(&o.res);
}

struct JobCase {
    int variable;
    zap_verify_mode_t mode;
    zap_verify_combine_t combine;
    uint64_t segment_bytes; // 0: the default (one segment at this size)
};

class JobRanks : public ::testing::TestWithParam<JobCase> {};

TEST_P(JobRanks, OneToFourRanksGiveTheVerdictSetOfOneRank)
{
    const JobCase c = GetParam();
    GenBatch b = make_batch(1000, 0.3, 31 + c.variable, c.variable);
    zap_verify_params_t p = {};
    p.verifier = ZAP_VERIFIER_CPU;
    p.threads = 1;
    p.mode = c.mode;
    p.combine = c.combine;
    p.segment_bytes = c.segment_bytes;
    auto one = run_job(1, b.bytes, p);
    ASSERT_EQ(one[0].status, ZAP_OK);
    EXPECT_EQ(one[0].bitmap, b.expected);
    for (int R = 2; R <= 4; R++) {
        for (int root : {0, R - 1}) {
            p.root = root;
            auto many = run_job(R, b.bytes, p);
            for (int r = 0; r < R; r++) {
                ASSERT_EQ(many[r].status, ZAP_OK) << "R " << R << " rank " << r;
                EXPECT_EQ(many[r].bitmap, one[0].bitmap) << "R " << R << " rank " << r;
                EXPECT_EQ(memcmp(many[r].res.digest, one[0].res.digest, 32), 0);
                EXPECT_EQ(many[r].res.valid + many[r].res.invalid, 1000u);
                EXPECT_EQ(many[r].res.nranks, R);
                uint64_t items = 0;
                for (int q = 0; q < R; q++)
                    items += many[r].res.ranks[q].items;
                EXPECT_EQ(items, 1000u);
            }
            cleanup(many);
        }
    }
    cleanup(one);
}

INSTANTIATE_TEST_SUITE_P(Modes, JobRanks,
                         ::testing::Values(JobCase{0, ZAP_VERIFY_SCATTER, ZAP_COMBINE_OR_ALLREDUCE, 0},
                                           JobCase{1, ZAP_VERIFY_SCATTER, ZAP_COMBINE_OR_ALLREDUCE, 0},
                                           JobCase{0, ZAP_VERIFY_BCAST, ZAP_COMBINE_OR_ALLREDUCE, 0},
                                           JobCase{1, ZAP_VERIFY_BCAST, ZAP_COMBINE_ALLGATHERV, 0},
                                           JobCase{0, ZAP_VERIFY_SCATTER, ZAP_COMBINE_ALLGATHERV, 0},
                                           JobCase{1, ZAP_VERIFY_SCATTER, ZAP_COMBINE_ALLGATHERV, 0},
                                           // 1 byte: segments of 32, 64, 128... items, so every shard
                                           // of 250-500 items arrives in several
                                           JobCase{0, ZAP_VERIFY_SCATTER, ZAP_COMBINE_OR_ALLREDUCE, 1},
                                           JobCase{1, ZAP_VERIFY_SCATTER, ZAP_COMBINE_OR_ALLREDUCE, 1},
                                           JobCase{1, ZAP_VERIFY_SCATTER, ZAP_COMBINE_ALLGATHERV, 4096}),
                         [](const ::testing::TestParamInfo<JobCase> &i) {
                             return std::string(i.param.variable ? "Variable" : "Fixed") +
                                    (i.param.mode == ZAP_VERIFY_SCATTER ? "Scatter" : "Bcast") +
                                    (i.param.combine == ZAP_COMBINE_OR_ALLREDUCE ? "Or" : "Allgather") +
                                    (i.param.segment_bytes ? "Segments" + std::to_string(i.param.segment_bytes)
                                                           : std::string());
                         });

TEST(Job, SegmentPlanCoversTheShardInWordAlignedDoublingSegments)
{
    for (uint64_t count : {0ull, 1ull, 31ull, 32ull, 1000ull, 65536ull, 2097152ull, 2097184ull})
        for (uint64_t blob : {0ull, 777ull})
            for (uint64_t first : {1ull, 4096ull, 8ull << 20, ~0ull}) {
                size_t n = zap_verify_seg_plan(count, 128, blob, first, nullptr);
                std::vector<zap_verify_seg_t> segs(n + 1);
                ASSERT_EQ(zap_verify_seg_plan(count, 128, blob, first, segs.data()), n);
                size_t k = 0;
                if (blob) {
                    ASSERT_GE(n, 1u);
                    EXPECT_TRUE(segs[0].blob);
                    EXPECT_EQ(segs[0].len, blob);
                    k = 1;
                }
                uint64_t off = 0;
                for (; k < n; k++) {
                    EXPECT_FALSE(segs[k].blob);
                    EXPECT_EQ(segs[k].item_off, off);
                    EXPECT_EQ(segs[k].src_off, off * 128);
                    EXPECT_EQ(segs[k].len, segs[k].items * 128);
                    EXPECT_GT(segs[k].items, 0u);
                    if (k + 1 < n) {
                        EXPECT_EQ(segs[k].items % 32, 0u) << "count " << count << " seg " << k;
                    }
                    off += segs[k].items;
                }
                EXPECT_EQ(off, count);
                EXPECT_LE(n, 64u);
            }
    // 2^21 records from 8 MiB: 64k, 128k, 256k, 512k, then 1024k with the
    // short rest (64k) riding along, so 5 GPU calls rather than 6.
    std::vector<zap_verify_seg_t> segs(8);
    ASSERT_EQ(zap_verify_seg_plan(2097152, 128, 0, 8ull << 20, segs.data()), 5u);
    EXPECT_EQ(segs[4].items, 2097152u - 65536u * 15u);
}

TEST(Job, FarSegmentPlanStartsAtTheFarEndAndShrinksTowardTheRoot)
{
    for (uint64_t count : {0ull, 1ull, 31ull, 32ull, 1000ull, 65536ull, 2097152ull, 2097184ull})
        for (uint64_t blob : {0ull, 777ull})
            for (uint64_t first : {1ull, 4096ull, 8ull << 20, ~0ull})
                for (int top : {0, 1}) {
                    size_t n = zap_verify_seg_plan_far(count, 128, blob, first, top, nullptr);
                    std::vector<zap_verify_seg_t> segs(n + 1);
                    ASSERT_EQ(zap_verify_seg_plan_far(count, 128, blob, first, top, segs.data()), n);
                    size_t k = 0;
                    if (blob) {
                        ASSERT_GE(n, 1u);
                        EXPECT_TRUE(segs[0].blob);
                        EXPECT_EQ(segs[0].len, blob);
                        k = 1;
                    }
                    uint64_t lo = 0, hi = count; // not yet covered
                    for (; k < n; k++) {
                        const zap_verify_seg_t &g = segs[k];
                        EXPECT_FALSE(g.blob);
                        EXPECT_GT(g.items, 0u);
                        EXPECT_EQ(g.src_off, g.item_off * 128);
                        EXPECT_EQ(g.len, g.items * 128);
                        if (top) {
                            EXPECT_EQ(g.item_off + g.items, hi) << "count " << count << " seg " << k;
                            hi = g.item_off;
                            if (hi > 0) {
                                EXPECT_EQ(hi % 32, 0u);
                            }
                        } else {
                            EXPECT_EQ(g.item_off, lo) << "count " << count << " seg " << k;
                            lo += g.items;
                            if (lo < count) {
                                EXPECT_EQ(lo % 32, 0u);
                            }
                        }
                    }
                    EXPECT_EQ(top ? hi : count - lo, 0u) << "count " << count;
                    EXPECT_LE(n, 64u);
                }
    // 2^21 records from 8 MiB, from the top: 64k, 128k, 256k, 512k, then at
    // most half of what is left each, so the segment next to the root (the
    // bottom one) is about the first's size, not the largest.
    std::vector<zap_verify_seg_t> segs(64);
    size_t n = zap_verify_seg_plan_far(2097152, 128, 0, 8ull << 20, 1, segs.data());
    ASSERT_GE(n, 6u);
    EXPECT_EQ(segs[0].items, 65536u);
    EXPECT_EQ(segs[3].items, 524288u);
    EXPECT_EQ(segs[0].item_off, 2097152u - 65536u);
    EXPECT_EQ(segs[n - 1].item_off, 0u);
    EXPECT_LE(segs[n - 1].items, 65536u * 3 / 2);
    for (size_t k = 5; k < n - 1; k++)
        EXPECT_LE(segs[k].items, segs[k - 1].items) << "seg " << k;
}

// Every rank's row: the ranges tile [0, n) in rank order; the root and its
// neighbour share their two shards, every other rank keeps its own.
static void expect_balanced_rows(const std::vector<RankOut> &out, uint64_t n, int root)
{
    const int R = (int)out.size();
    const int partner = root + 1 < R ? root + 1 : root - 1;
    for (int r = 0; r < R; r++) {
        const zap_verify_result_t &res = out[r].res;
        ASSERT_NE(res.ranks, nullptr);
        uint64_t end = 0;
        for (int q = 0; q < R; q++) {
            EXPECT_EQ(res.ranks[q].first, end) << "rank " << q;
            end += res.ranks[q].items;
            uint64_t f, c, pf, pc;
            zap_verify_shard(n, R, q, &f, &c);
            zap_verify_shard(n, R, partner, &pf, &pc);
            if (q == root) {
                EXPECT_GE(res.ranks[q].items, c);
            } else if (q == partner) {
                uint64_t rf, rc;
                zap_verify_shard(n, R, root, &rf, &rc);
                EXPECT_EQ(res.ranks[q].items + res.ranks[root].items, c + rc);
            } else {
                EXPECT_EQ(res.ranks[q].first, f);
                EXPECT_EQ(res.ranks[q].items, c);
            }
        }
        EXPECT_EQ(end, n);
    }
}

TEST(Job, RootTakesTheLastSegmentsOfASlowNeighbour)
{
    // The root's neighbour sleeps 100 ms before each of its segments (32, 64,
    // 128... records from its far end): the root, done with its own shard,
    // verifies the neighbour's segments next to its own, and every rank still
    // ends with the generator's verdicts and the same digest.
    zap_verify_params_t p = {};
    p.verifier = ZAP_VERIFIER_CPU;
    p.threads = 1;
    p.segment_bytes = 1024;
    for (int variable = 0; variable < 2; variable++) {
        GenBatch b = make_batch(1600, 0.3, 60 + variable, variable);
        for (int R = 2; R <= 4; R++)
            for (int root : {0, R - 1}) {
                p.root = root;
                p.combine = R == 3 ? ZAP_COMBINE_ALLGATHERV : ZAP_COMBINE_OR_ALLREDUCE;
                zap_verify_hooks_t hooks = {};
                hooks.slow_rank = root + 1 < R ? root + 1 : root - 1;
                hooks.slow_seconds = 0.1;
                auto out = run_job(R, b.bytes, p, nullptr, &hooks);
                for (int r = 0; r < R; r++) {
                    ASSERT_EQ(out[r].status, ZAP_OK) << "R " << R << " root " << root << " rank " << r;
                    EXPECT_EQ(out[r].bitmap, b.expected) << "R " << R << " root " << root << " rank " << r;
                    EXPECT_EQ(memcmp(out[r].res.digest, out[0].res.digest, 32), 0);
                }
                expect_balanced_rows(out, 1600, root);
                uint64_t f, c;
                zap_verify_shard(1600, R, root, &f, &c);
                EXPECT_GT(out[0].res.ranks[root].items, c) << "R " << R << " root " << root;
                cleanup(out);
            }
    }
}

TEST(Job, SlowRootLeavesItsNeighbourItsShard)
{
    // The reverse: a root that is slow to verify its own shard takes nothing
    // its neighbour has asked for; the neighbour verifies its whole shard.
    GenBatch b = make_batch(320, 0.3, 62, 0);
    zap_verify_params_t p = {};
    p.verifier = ZAP_VERIFIER_CPU;
    p.threads = 1;
    p.segment_bytes = 1024;
    zap_verify_hooks_t hooks = {};
    hooks.slow_rank = 0;
    hooks.slow_seconds = 1.0;
    auto out = run_job(2, b.bytes, p, nullptr, &hooks);
    for (int r = 0; r < 2; r++) {
        ASSERT_EQ(out[r].status, ZAP_OK);
        EXPECT_EQ(out[r].bitmap, b.expected);
    }
    expect_balanced_rows(out, 320, 0);
    EXPECT_EQ(out[0].res.ranks[0].items, 160u);
    EXPECT_EQ(out[0].res.ranks[1].items, 160u);
    cleanup(out);
}

TEST(Job, ReceiveBufferFailureMidStreamFailsEveryRank)
{
    // 600k all-zero records (rejected at once: R of small order) over 2
    // ranks: rank 1 receives 38 MB in segments of 1, 2, 4, 8 and 23 MiB from
    // a pool of 24 MiB, so its first segment fits and a later one cannot. The
    // stream stops for rank 1 only and the job ends with ZAP_ERR_NO_MEMORY on
    // both ranks, without any deadline.
    const uint64_t n = 600000;
    zap_batch_layout_t l;
    ASSERT_EQ(zap_batch_layout(n, 128, 0, &l), ZAP_OK);
    std::vector<uint8_t> batch(l.total_bytes, 0);
    zap_batch_view_t v = {};
    v.version = ZAP_BATCH_VERSION;
    v.scheme = ZAP_SCHEME_ED25519_LIBSODIUM_1_0_18;
    v.flags = ZAP_BATCH_FLAG_FIXED_MSG;
    v.stride = 128;
    v.fixed_msg_len = 32;
    v.n_items = n;
    v.batch_id = 49;
    ASSERT_EQ(zap_batch_write_header(batch.data(), batch.size(), &v), ZAP_OK);
    zap_pool_params_t pp = {};
    pp.budget_bytes = 24u << 20;
    pp.chunk_bytes = 2u << 20;
    pp.backend = ZAP_POOL_BACKEND_HOST;
    zap_pool_t *pool = nullptr;
    ASSERT_EQ(zap_pool_create(&pp, &pool), ZAP_OK);
    zap_verify_params_t p = {};
    p.verifier = ZAP_VERIFIER_CPU;
    p.segment_bytes = 1u << 20;
    // The root verifies slowly, so it never takes rank 1's last segments
    // over (the scatter's balancing would, on a loaded machine, and then
    // rank 1 would rightly never need the buffer it could not get).
    zap_verify_hooks_t hooks = {};
    hooks.slow_rank = 0;
    hooks.slow_seconds = 0.2;
    LogCapture log;
    double t0 = zap_clock_now();
    auto out = run_job(2, batch, p, pool, &hooks);
    EXPECT_LT(zap_clock_now() - t0, 30.0);
    for (int r = 0; r < 2; r++)
        EXPECT_EQ(out[r].status, ZAP_ERR_NO_MEMORY) << "rank " << r << "\n" << log.all();
    EXPECT_TRUE(log.contains("no receive buffer for segment")) << log.all();
    cleanup(out);
    EXPECT_EQ(zap_pool_destroy(pool), ZAP_OK);
}

TEST(Job, RootGivingUpOnASilentRankLeavesNoRankWaiting)
{
    // The communicators' timeout is 0.3 s; rank 1 asks for its first
    // segment only after 3 s. The root's sender gives up on it after the
    // communicator's timeout (not ZAP_TIMEOUT's, unset here), and rank 1,
    // asking late, waits for that segment no longer than the same timeout:
    // both ranks fail, the root well before the stall ends (a root that
    // waited out the stall fails this), rank 1 within a few timeouts after. The bounds
    // leave room for a loaded machine (a first CUDA call on a GPU host).
    GenBatch b = make_batch(400, 0.3, 71, 0);
    zap_verify_params_t p = {};
    p.verifier = ZAP_VERIFIER_CPU;
    p.threads = 1;
    p.segment_bytes = 4096;
    zap_verify_hooks_t hooks = {};
    hooks.stall_rank = 1;
    hooks.stall_seconds = 3.0;
    zap_comm_params_t cp = {};
    cp.timeout_s = 0.3;
    LogCapture log;
    auto out = run_job(2, b.bytes, p, nullptr, &hooks, &cp);
    double took[2] = {out[0].seconds, out[1].seconds};
    printf("root: %s after %.3f s; rank 1: %s after %.3f s\n", zap_status_string(out[0].status), took[0],
           zap_status_string(out[1].status), took[1]);
    EXPECT_EQ(out[0].status, ZAP_ERR_TIMED_OUT) << log.all();
    EXPECT_NE(out[1].status, ZAP_OK) << log.all();
    EXPECT_NE(out[1].status, ZAP_ERR_CANCELED) << "rank 1 never ran its job\n" << log.all();
    EXPECT_LT(took[0], 2.5) << log.all();
    EXPECT_LT(took[1], 3.0 + 8 * 0.3 + 3.0) << log.all();
    cleanup(out);
}

TEST(Job, GpuVerifiesStreamedSegmentsFromDeviceCopies)
{
    // Ranks other than the root receive each record segment through the
    // pinned staging ring and verify its device copy; verdicts must not
    // change (fixed and variable messages, segments of 1 KiB and doubling,
    // in one chunk each and in chunks of 32 records, so the four slots are
    // reused many times over). Needs a CUDA device.
    zap_verify_params_t p = {};
    p.verifier = ZAP_VERIFIER_GPU;
    if (!zap_verify_gpu_planned(&p, 1000))
        GTEST_SKIP() << "no CUDA device";
    p.segment_bytes = 1024;
    for (uint64_t chunk : {(uint64_t)0, (uint64_t)4096})
        for (int variable = 0; variable < 2; variable++) {
            GenBatch b = make_batch(3000, 0.3, 50 + variable, variable);
            for (int R : {2, 3}) {
                zap_verify_hooks_t hooks = {};
                hooks.chunk_bytes = chunk;
                unsigned long copies = zap_verify_ring_copies();
                auto out = run_job(R, b.bytes, p, nullptr, &hooks);
                for (int r = 0; r < R; r++) {
                    ASSERT_EQ(out[r].status, ZAP_OK) << "R " << R << " rank " << r << " chunk " << chunk;
                    EXPECT_EQ(out[r].bitmap, b.expected)
                        << "R " << R << " rank " << r << " variable " << variable << " chunk " << chunk;
                    // (The root may have taken all of its neighbour's segments.)
                    for (int q = 0; q < R; q++)
                        if (out[r].res.ranks[q].items > 0) {
                            EXPECT_EQ(out[r].res.ranks[q].used, ZAP_VERIFIER_GPU) << "rank " << q;
                        }
                }
                uint64_t others = 0;
                for (int q = 1; q < R; q++)
                    others += out[0].res.ranks[q].items;
                if (others > 0) {
                    EXPECT_GT(zap_verify_ring_copies(), copies) << "R " << R << ": no segment came through the ring";
                }
                cleanup(out);
            }
        }
}

TEST(Job, SegmentsTravelInChunksOfWholeRecords)
{
    zap_verify_seg_t rec = {0, 100000000, 0, 0, 0}, blob = {0, 100000000, 0, 0, 1};
    EXPECT_EQ(zap_verify_seg_chunk(&blob, 128, 0), (uint64_t)ZAP_VERIFY_RING_SLOT_BYTES);
    EXPECT_EQ(zap_verify_seg_chunk(&rec, 128, 0), (uint64_t)ZAP_VERIFY_RING_SLOT_BYTES);
    EXPECT_EQ(zap_verify_seg_chunk(&rec, 144, 0) % 144, 0u);
    EXPECT_LE(zap_verify_seg_chunk(&rec, 144, 0), (uint64_t)ZAP_VERIFY_RING_SLOT_BYTES);
    EXPECT_GT(zap_verify_seg_chunk(&rec, 144, 0), (uint64_t)ZAP_VERIFY_RING_SLOT_BYTES - 144);
    // The chunk hook (cap 1000), as a job's sender and receivers apply it.
    EXPECT_EQ(zap_verify_seg_chunk(&blob, 128, 1000), 1000u);
    EXPECT_EQ(zap_verify_seg_chunk(&rec, 128, 1000), 896u);
    EXPECT_EQ(zap_verify_seg_chunk(&rec, 4096, 1000), 4096u); // never less than one record
}

TEST(Job, StreamedSegmentsArriveInChunks)
{
    // Segments of several chunks (a few records each, the last one shorter),
    // with and without a slow neighbour that the root balances: every rank
    // still ends with the generator's verdicts.
    zap_verify_params_t p = {};
    p.verifier = ZAP_VERIFIER_CPU;
    p.threads = 1;
    p.segment_bytes = 1024;
    for (uint64_t chunk : {(uint64_t)1000, (uint64_t)4096})
        for (int variable = 0; variable < 2; variable++) {
            GenBatch b = make_batch(1600, 0.3, 70 + variable, variable);
            for (int R : {2, 3})
                for (int slow = 0; slow < 2; slow++) {
                    p.root = R - 1;
                    zap_verify_hooks_t hooks = {};
                    hooks.chunk_bytes = chunk;
                    hooks.slow_rank = slow ? R - 2 : -1;
                    hooks.slow_seconds = slow ? 0.05 : 0;
                    auto out = run_job(R, b.bytes, p, nullptr, &hooks);
                    for (int r = 0; r < R; r++) {
                        ASSERT_EQ(out[r].status, ZAP_OK) << "R " << R << " rank " << r << " chunk " << chunk;
                        EXPECT_EQ(out[r].bitmap, b.expected) << "R " << R << " rank " << r << " chunk " << chunk;
                    }
                    expect_balanced_rows(out, 1600, R - 1);
                    cleanup(out);
                }
        }
}

TEST(Job, MoreRanksThanItems)
{
    GenBatch b = make_batch(5, 0.4, 41, 1);
    zap_verify_params_t p = {};
    p.verifier = ZAP_VERIFIER_CPU;
    auto out = run_job(4, b.bytes, p);
    for (int r = 0; r < 4; r++) {
        ASSERT_EQ(out[r].status, ZAP_OK);
        EXPECT_EQ(out[r].bitmap, b.expected);
    }
    EXPECT_EQ(out[0].res.ranks[0].items, 0u);
    EXPECT_EQ(out[0].res.ranks[3].items, 5u);
    cleanup(out);
}

TEST(Job, RankWithAnEmptyShardStillAgrees)
{
    // 40 items over 3 ranks: boundaries 13 -> 0 and 26 -> 0, so ranks 0 and 1
    // have nothing and rank 2 verifies all 40.
    GenBatch b = make_batch(40, 0.5, 42, 0);
    zap_verify_params_t p = {};
    p.verifier = ZAP_VERIFIER_CPU;
    p.root = 1;
    auto out = run_job(3, b.bytes, p);
    for (int r = 0; r < 3; r++) {
        ASSERT_EQ(out[r].status, ZAP_OK);
        EXPECT_EQ(out[r].bitmap, b.expected);
    }
    // The root (rank 1, nothing of its own) may take its neighbour's single
    // segment before rank 2 asks for it: either way ranks 1 and 2 share 40.
    EXPECT_EQ(out[0].res.ranks[0].items, 0u);
    EXPECT_EQ(out[0].res.ranks[1].items + out[0].res.ranks[2].items, 40u);
    EXPECT_EQ(out[0].res.ranks[1].first, 0u);
    EXPECT_EQ(out[0].res.ranks[2].first, out[0].res.ranks[1].items);
    cleanup(out);
}

TEST(Job, EmptyBatch)
{
    GenBatch b = make_batch(0, 0, 43, 0);
    zap_verify_params_t p = {};
    for (int R = 1; R <= 4; R++) {
        auto out = run_job(R, b.bytes, p);
        for (int r = 0; r < R; r++) {
            ASSERT_EQ(out[r].status, ZAP_OK);
            EXPECT_EQ(out[r].res.n_items, 0u);
            EXPECT_EQ(out[r].res.valid, 0u);
        }
        cleanup(out);
    }
}

TEST(Job, RefusedBatchFailsOnEveryRankWithTheRootsReason)
{
    GenBatch b = make_batch(100, 0, 44, 0);
    b.bytes[64 + 3] ^= 1; // CRC
    zap_verify_params_t p = {};
    LogCapture log;
    auto out = run_job(3, b.bytes, p);
    for (int r = 0; r < 3; r++)
        EXPECT_EQ(out[r].status, ZAP_ERR_CORRUPT) << "rank " << r;
    EXPECT_TRUE(log.contains("crc32c mismatch")) << log.all();
    EXPECT_TRUE(log.contains("the root (rank 0) refused the batch")) << log.all();
    cleanup(out);
}

TEST(Job, VerifierFailureOnOneRankFailsEveryRank)
{
    // gpu is refused without a device; where a device exists, every rank
    // succeeds instead and the test has nothing to show.
    GenBatch b = make_batch(200, 0, 45, 0);
    zap_verify_params_t p = {};
    p.verifier = ZAP_VERIFIER_GPU;
    LogCapture log;
    auto out = run_job(2, b.bytes, p);
    if (out[0].status == ZAP_OK)
        GTEST_SKIP() << "a CUDA device is present: the gpu verifier did not fail";
    for (int r = 0; r < 2; r++)
        EXPECT_EQ(out[r].status, ZAP_ERR_UNSUPPORTED) << "rank " << r;
    cleanup(out);
}

TEST(Job, BadRootIsInvalidParam)
{
    GenBatch b = make_batch(10, 0, 46, 0);
    zap_verify_params_t p = {};
    p.root = 5;
    LogCapture log;
    auto out = run_job(2, b.bytes, p);
    for (int r = 0; r < 2; r++)
        EXPECT_EQ(out[r].status, ZAP_ERR_INVALID_PARAM);
    cleanup(out);
}

TEST(Job, OneRankDisagreeingFailsEveryRankLoudly)
{
    GenBatch b = make_batch(100, 0.2, 47, 0);
    zap_verify_params_t p = {};
    p.verifier = ZAP_VERIFIER_CPU;
    LogCapture log;
    zap_verify_hooks_t hooks = {};
    hooks.flip = 1;
    hooks.flip_rank = 2;
    auto out = run_job(4, b.bytes, p, nullptr, &hooks);
    for (int r = 0; r < 4; r++) {
        EXPECT_EQ(out[r].status, ZAP_ERR_MISMATCH) << "rank " << r;
        ASSERT_NE(out[r].res.ranks, nullptr) << "the result is filled for the report";
        EXPECT_NE(memcmp(out[r].res.ranks[2].digest, out[r].res.ranks[0].digest, 32), 0);
    }
    EXPECT_TRUE(log.contains("VERDICT MISMATCH: rank 2 digest")) << log.all();
    cleanup(out);
}

// The peer watch is off on the inproc transport (one process: no rank dies
// alone), so a job there starts no watch thread and posts nothing.
TEST(JobWatch, OffOnInproc)
{
    zap_inproc_world_t *world = nullptr;
    ASSERT_EQ(zap_inproc_world_create(2, nullptr, &world), ZAP_OK);
    zap_transport_t *t = nullptr;
    ASSERT_EQ(zap_inproc_transport(world, 0, &t), ZAP_OK);
    int peer = 1;
    EXPECT_EQ(zap_verify_watch_start(t, &peer, 1), nullptr);
    EXPECT_EQ(zap_verify_watch_flag(nullptr), nullptr);
    EXPECT_EQ(zap_verify_watch_stop(nullptr), ZAP_OK);
    zap_inproc_world_destroy(world);
}
