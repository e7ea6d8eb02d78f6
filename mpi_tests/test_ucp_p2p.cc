// The transport contract over UCX between processes: every size, every pair,
// many messages in flight, ordering, pool buffers, recv_buf and the error
// statuses. Contents are checked against a pattern computed independently on
// both sides (seeded by sender, receiver, tag and size); seeds are in the
// failure messages.
#include <gtest/gtest.h>
#include <sys/resource.h>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>
#include "mpi_harness.h"
extern "C" {
#include "zap/ucp.h"
}

namespace {

// The pattern is made a 64-bit word at a time (a 64 MiB check must stay
// cheap on a 2-core CI machine running 4 ranks).
uint64_t pattern_word(uint64_t seed, size_t w)
{
    uint64_t x = seed + w * 0x9E3779B97F4A7C15ull;
    x ^= x >> 31;
    x *= 0xBF58476D1CE4E5B9ull;
    x ^= x >> 29;
    return x;
}

void fill(void *p, size_t n, uint64_t seed)
{
    auto *b = static_cast<uint8_t *>(p);
    size_t w = 0;
    for (; (w + 1) * 8 <= n; w++) {
        uint64_t x = pattern_word(seed, w);
        memcpy(b + w * 8, &x, 8);
    }
    uint64_t x = pattern_word(seed, w);
    memcpy(b + w * 8, &x, n - w * 8);
}

// Index of the first wrong byte, or -1.
long long first_bad(const void *p, size_t n, uint64_t seed)
{
    auto *b = static_cast<const uint8_t *>(p);
    size_t w = 0;
    for (; (w + 1) * 8 <= n; w++) {
        uint64_t x = pattern_word(seed, w);
        if (memcmp(b + w * 8, &x, 8) != 0)
            break;
    }
    for (size_t i = w * 8; i < n; i++) {
        uint64_t x = pattern_word(seed, i / 8);
        if (b[i] != reinterpret_cast<const uint8_t *>(&x)[i % 8])
            return (long long)i;
    }
    return -1;
}

uint64_t seed_of(int src, int dst, uint64_t tag, size_t len)
{
    return ((uint64_t)src << 48) ^ ((uint64_t)dst << 32) ^ (tag * 1000003u) ^ len;
}

// Sizes 0 B to 64 MiB: every power of two and odd sizes around the UCX
// protocol switches (eager short/bcopy, zcopy, rendezvous).
std::vector<size_t> all_sizes()
{
    std::vector<size_t> v{0};
    for (size_t s = 1; s <= (64u << 20); s *= 2)
        v.push_back(s);
    for (size_t s : {3u, 93u, 1023u, 8191u, 8193u, 8257u, 65537u, 262143u, 1048577u, 3000001u, 33554435u})
        v.push_back(s);
    return v;
}

class Ucp : public testing::Test {
  protected:
    static void SetUpTestSuite()
    {
        ASSERT_EQ(zap_ucp_transport_create(MPI_COMM_WORLD, nullptr, &t_), ZAP_OK);
    }
    static void TearDownTestSuite()
    {
        zap_transport_close(t_);
        t_ = nullptr;
    }
    int rank() const { return zap_transport_rank(t_); }
    int size() const { return zap_transport_size(t_); }
    // The partner in pairs (0,1), (2,3)...; -1 for the odd one out.
    int partner() const
    {
        int p = rank() ^ 1;
        return p < size() ? p : -1;
    }
    static zap_transport_t *t_;
};
zap_transport_t *Ucp::t_ = nullptr;

// A second transport over the same ranks whose waits give up after 0.3 s
// (zap_transport_params_t). Collective: every rank makes one and the
// destructor closes it on every rank.
class ShortTimeout {
  public:
    ShortTimeout()
    {
        zap_transport_params_t params{};
        params.timeout_s = 0.3;
        EXPECT_EQ(zap_ucp_transport_create_ex(MPI_COMM_WORLD, nullptr, &params, &t), ZAP_OK);
    }
    ~ShortTimeout() { zap_transport_close(t); }
    // A receive on this transport that may take longer than its own timeout
    // (a loaded machine): an explicit deadline instead.
    zap_status_t recv_patiently(int peer, uint64_t tag, void *buf, size_t cap, size_t *len_p)
    {
        zap_request_t *r = nullptr;
        zap_status_t st = zap_transport_irecv(t, peer, tag, buf, cap, &r);
        if (st != ZAP_OK)
            return st;
        st = zap_request_wait_until(r, zap_clock_now() + 20.0);
        if (st == ZAP_OK && len_p != nullptr)
            st = zap_request_received(r, len_p);
        zap_request_free(r);
        return st;
    }
    zap_transport_t *t = nullptr;
};

TEST_F(Ucp, CreateGivesRankAndSizeOfTheCommunicator)
{
    EXPECT_EQ(rank(), MpiRank());
    EXPECT_EQ(size(), MpiSize());
    zap_transport_caps_t caps;
    ASSERT_EQ(zap_transport_caps(t_, &caps), ZAP_OK);
    EXPECT_STREQ(caps.name, "ucp");
    EXPECT_TRUE(caps.flags & ZAP_CAP_MULTI_NODE);
}

TEST_F(Ucp, PingPongEverySizeKeepsContent)
{
    int peer = partner();
    if (peer < 0)
        return;
    std::vector<uint8_t> out(64u << 20), in((64u << 20) + 16);
    for (size_t len : all_sizes()) {
        uint64_t tag = 100 + (len % 997);
        bool first = rank() < peer;
        size_t got = ~(size_t)0;
        if (first) {
            fill(out.data(), len, seed_of(rank(), peer, tag, len));
            ASSERT_EQ(zap_transport_send(t_, peer, tag, out.data(), len), ZAP_OK) << "len " << len;
            ASSERT_EQ(zap_transport_recv(t_, peer, tag, in.data(), in.size(), &got), ZAP_OK) << "len " << len;
        } else {
            ASSERT_EQ(zap_transport_recv(t_, peer, tag, in.data(), in.size(), &got), ZAP_OK) << "len " << len;
            ASSERT_EQ(got, len);
            ASSERT_EQ(first_bad(in.data(), len, seed_of(peer, rank(), tag, len)), -1) << "len " << len;
            fill(out.data(), len, seed_of(rank(), peer, tag, len));
            ASSERT_EQ(zap_transport_send(t_, peer, tag, out.data(), len), ZAP_OK) << "len " << len;
            continue;
        }
        ASSERT_EQ(got, len);
        ASSERT_EQ(first_bad(in.data(), len, seed_of(peer, rank(), tag, len)), -1) << "len " << len;
    }
}

TEST_F(Ucp, AllPairsExchangeDeliversEveryMessageToItsReceiver)
{
    const int n = size(), me = rank();
    const uint64_t tag = 7;
    // Small (eager) and large (rendezvous) per pair, self included.
    for (size_t base : {(size_t)1000, (size_t)300000}) {
        std::vector<std::vector<uint8_t>> out(n), in(n);
        std::vector<zap_request_t *> reqs;
        for (int p = 0; p < n; p++) {
            size_t rlen = base + (size_t)p * 7 + (size_t)me;
            in[p].assign(rlen, 0);
            zap_request_t *r = nullptr;
            ASSERT_EQ(zap_transport_irecv(t_, p, tag, in[p].data(), rlen, &r), ZAP_OK);
            reqs.push_back(r);
        }
        for (int k = 0; k < n; k++) {
            int p = (me + k) % n; // staggered so not everyone hits rank 0 first
            size_t slen = base + (size_t)me * 7 + (size_t)p;
            out[p].resize(slen);
            fill(out[p].data(), slen, seed_of(me, p, tag, slen));
            zap_request_t *r = nullptr;
            ASSERT_EQ(zap_transport_isend(t_, p, tag, out[p].data(), slen, &r), ZAP_OK);
            reqs.push_back(r);
        }
        for (auto *r : reqs) {
            EXPECT_EQ(zap_request_wait(r), ZAP_OK) << "peer " << zap_request_peer(r);
            zap_request_free(r);
        }
        for (int p = 0; p < n; p++)
            EXPECT_EQ(first_bad(in[p].data(), in[p].size(), seed_of(p, me, tag, in[p].size())), -1)
                << "from rank " << p << " size " << in[p].size();
    }
}

TEST_F(Ucp, TenThousandMessagesInFlightArriveInOrder)
{
    int peer = partner();
    if (peer < 0)
        return;
    const int count = 10000;
    const uint64_t tag = 0xABCDEF;
    std::vector<uint64_t> out(count), in(count, ~0ull);
    std::vector<zap_request_t *> reqs(count);
    if (rank() < peer) {
        for (int i = 0; i < count; i++) {
            out[i] = (uint64_t)i * 31 + 5;
            ASSERT_EQ(zap_transport_isend(t_, peer, tag, &out[i], sizeof(uint64_t), &reqs[i]), ZAP_OK) << i;
        }
    } else {
        for (int i = 0; i < count; i++)
            ASSERT_EQ(zap_transport_irecv(t_, peer, tag, &in[i], sizeof(uint64_t), &reqs[i]), ZAP_OK) << i;
    }
    for (int i = 0; i < count; i++) {
        ASSERT_EQ(zap_request_wait(reqs[i]), ZAP_OK) << i;
        zap_request_free(reqs[i]);
    }
    if (rank() > peer) {
        for (int i = 0; i < count; i++)
            ASSERT_EQ(in[i], (uint64_t)i * 31 + 5) << "message " << i << " out of order or lost";
    }
}

TEST_F(Ucp, OrderIsKeptPerPeerAndTagWhateverTheSize)
{
    int peer = partner();
    if (peer < 0)
        return;
    // Two tags interleaved, sizes alternating eager and rendezvous; the
    // receiver posts tag B's receives first.
    const int per_tag = 40;
    const uint64_t tags[2] = {11, 12};
    auto len_of = [](int i) { return (i % 3 == 0) ? (size_t)200000 + i : (size_t)16 + i; };
    std::vector<std::vector<uint8_t>> bufs(2 * per_tag);
    std::vector<zap_request_t *> reqs;
    if (rank() < peer) {
        for (int i = 0; i < per_tag; i++)
            for (int k = 0; k < 2; k++) {
                auto &b = bufs[k * per_tag + i];
                b.resize(len_of(i));
                fill(b.data(), b.size(), seed_of(rank(), peer, tags[k], (size_t)i));
                zap_request_t *r = nullptr;
                ASSERT_EQ(zap_transport_isend(t_, peer, tags[k], b.data(), b.size(), &r), ZAP_OK);
                reqs.push_back(r);
            }
    } else {
        for (int k = 1; k >= 0; k--)
            for (int i = 0; i < per_tag; i++) {
                auto &b = bufs[k * per_tag + i];
                b.resize(len_of(i));
                zap_request_t *r = nullptr;
                ASSERT_EQ(zap_transport_irecv(t_, peer, tags[k], b.data(), b.size(), &r), ZAP_OK);
                reqs.push_back(r);
            }
    }
    for (auto *r : reqs) {
        ASSERT_EQ(zap_request_wait(r), ZAP_OK);
        zap_request_free(r);
    }
    if (rank() > peer) {
        for (int k = 0; k < 2; k++)
            for (int i = 0; i < per_tag; i++) {
                auto &b = bufs[k * per_tag + i];
                ASSERT_EQ(first_bad(b.data(), b.size(), seed_of(peer, rank(), tags[k], (size_t)i)), -1)
                    << "tag " << tags[k] << " message " << i;
            }
    }
}

TEST_F(Ucp, PoolBuffersOfEveryClassAndTheColdPathCarryMessages)
{
    int peer = partner();
    if (peer < 0)
        return;
    std::vector<size_t> sizes;
    for (int c = 0; c < ZAP_POOL_NUM_CLASSES; c++)
        sizes.push_back(zap_pool_class_size(c));
    sizes.push_back((size_t)5 << 20); // above the largest class: cold path
    for (size_t len : sizes) {
        zap_buf_t out{}, in{};
        ASSERT_EQ(zap_transport_alloc(t_, len, &out), ZAP_OK) << len;
        ASSERT_EQ(zap_transport_alloc(t_, len, &in), ZAP_OK) << len;
        const uint64_t tag = 500 + len % 1000;
        fill(out.ptr, len, seed_of(rank(), peer, tag, len));
        zap_request_t *rr = nullptr, *sr = nullptr;
        ASSERT_EQ(zap_transport_irecv(t_, peer, tag, in.ptr, len, &rr), ZAP_OK);
        ASSERT_EQ(zap_transport_isend(t_, peer, tag, out.ptr, len, &sr), ZAP_OK);
        EXPECT_EQ(zap_request_wait(sr), ZAP_OK) << len;
        EXPECT_EQ(zap_request_wait(rr), ZAP_OK) << len;
        size_t got = 0;
        EXPECT_EQ(zap_request_received(rr, &got), ZAP_OK);
        EXPECT_EQ(got, len);
        EXPECT_EQ(first_bad(in.ptr, len, seed_of(peer, rank(), tag, len)), -1) << len;
        zap_request_free(sr);
        zap_request_free(rr);
        EXPECT_EQ(zap_buf_free(&out), ZAP_OK);
        EXPECT_EQ(zap_buf_free(&in), ZAP_OK);
    }
}

TEST_F(Ucp, PoolAndUserMemoryMixInOneTransfer)
{
    int peer = partner();
    if (peer < 0)
        return;
    const size_t len = (size_t)3 << 20;
    const uint64_t tag = 77;
    zap_buf_t pb{};
    ASSERT_EQ(zap_transport_alloc(t_, len, &pb), ZAP_OK);
    std::vector<uint8_t> user(len);
    // Lower rank: pool -> user memory; then back: user -> pool.
    if (rank() < peer) {
        fill(pb.ptr, len, seed_of(rank(), peer, tag, len));
        ASSERT_EQ(zap_transport_send(t_, peer, tag, pb.ptr, len), ZAP_OK);
        ASSERT_EQ(zap_transport_recv(t_, peer, tag, pb.ptr, len, nullptr), ZAP_OK);
        EXPECT_EQ(first_bad(pb.ptr, len, seed_of(peer, rank(), tag, len)), -1);
    } else {
        ASSERT_EQ(zap_transport_recv(t_, peer, tag, user.data(), len, nullptr), ZAP_OK);
        EXPECT_EQ(first_bad(user.data(), len, seed_of(peer, rank(), tag, len)), -1);
        fill(user.data(), len, seed_of(rank(), peer, tag, len));
        ASSERT_EQ(zap_transport_send(t_, peer, tag, user.data(), len), ZAP_OK);
    }
    EXPECT_EQ(zap_buf_free(&pb), ZAP_OK);
}

TEST_F(Ucp, RecvBufReturnsAPoolBufferSizedToTheMessage)
{
    int peer = partner();
    if (peer < 0)
        return;
    for (size_t len : {(size_t)0, (size_t)100, (size_t)5000, (size_t)2 << 20}) {
        const uint64_t tag = 900 + len % 100;
        if (rank() < peer) {
            std::vector<uint8_t> out(len + 1);
            fill(out.data(), len, seed_of(rank(), peer, tag, len));
            ASSERT_EQ(zap_transport_send(t_, peer, tag, out.data(), len), ZAP_OK);
        } else {
            zap_buf_t b{};
            ASSERT_EQ(zap_transport_recv_buf(t_, peer, tag, &b), ZAP_OK) << len;
            ASSERT_EQ(b.size, len);
            if (len == 0) {
                EXPECT_EQ(b.ptr, nullptr);
            } else {
                EXPECT_EQ(first_bad(b.ptr, len, seed_of(peer, rank(), tag, len)), -1) << len;
                zap_mem_kind_t kind;
                EXPECT_EQ(zap_buf_kind(&b, &kind), ZAP_OK);
            }
            EXPECT_EQ(zap_buf_free(&b), ZAP_OK);
        }
    }
}

TEST_F(Ucp, UnknownRankIsNotFound)
{
    MpiExpectLog("is not in");
    zap_request_t *r = nullptr;
    char c = 0;
    EXPECT_EQ(zap_transport_isend(t_, size(), 1, &c, 1, &r), ZAP_ERR_NOT_FOUND);
    EXPECT_EQ(zap_transport_irecv(t_, -1, 1, &c, 1, &r), ZAP_ERR_NOT_FOUND);
    EXPECT_EQ(r, nullptr);
}

TEST_F(Ucp, LongerMessageThanTheBufferIsTruncated)
{
    int peer = partner();
    if (peer < 0)
        return;
    MpiExpectLog("exceeds the");
    for (size_t len : {(size_t)100, (size_t)1 << 20}) {
        const uint64_t tag = 4242 + len % 7;
        std::vector<uint8_t> buf(len);
        if (rank() < peer) {
            fill(buf.data(), len, 1);
            ASSERT_EQ(zap_transport_send(t_, peer, tag, buf.data(), len), ZAP_OK);
        } else {
            EXPECT_EQ(zap_transport_recv(t_, peer, tag, buf.data(), len / 2, nullptr), ZAP_ERR_TRUNCATED) << len;
        }
    }
    if (rank() > peer) {
        EXPECT_TRUE(MpiLogSeen("exceeds the")) << MpiLogText();
    }
}

TEST_F(Ucp, WaitGivesUpAfterTheTimeoutNamingThePeer)
{
    int peer = (rank() + 1) % size();
    MpiExpectLog("timed out");
    ShortTimeout st;
    ASSERT_NE(st.t, nullptr);
    EXPECT_EQ(zap_transport_timeout(st.t), 0.3);
    char c;
    zap_request_t *r = nullptr;
    ASSERT_EQ(zap_transport_irecv(st.t, peer, 0xDEAD, &c, 1, &r), ZAP_OK); // nobody sends this
    double t0 = zap_clock_now();
    EXPECT_EQ(zap_request_wait(r), ZAP_ERR_TIMED_OUT);
    double took = zap_clock_now() - t0;
    EXPECT_GE(took, 0.25);
    EXPECT_LT(took, 5.0);
    int done = 1;
    EXPECT_EQ(zap_request_test(r, &done), ZAP_OK);
    EXPECT_EQ(done, 0) << "a timed-out request stays pending";
    zap_request_free(r); // cancels it
    EXPECT_TRUE(MpiLogSeen("peer rank " + std::to_string(peer))) << MpiLogText();
}

// ZAP_TIMEOUT is read once, at create: changing it afterwards (to another
// value or to garbage) changes nothing for a transport that exists.
TEST_F(Ucp, TransportKeepsTheTimeoutItWasCreatedWith)
{
    int peer = (rank() + 1) % size();
    const char *old = getenv("ZAP_TIMEOUT");
    std::string saved = old ? old : "";
    setenv("ZAP_TIMEOUT", "0.3", 1);
    zap_transport_t *t = nullptr;
    ASSERT_EQ(zap_ucp_transport_create(MPI_COMM_WORLD, nullptr, &t), ZAP_OK);
    EXPECT_EQ(zap_transport_timeout(t), 0.3);
    MpiExpectLog("timed out");
    for (const char *later : {"20", "soon"}) {
        setenv("ZAP_TIMEOUT", later, 1);
        char c = 0;
        double t0 = zap_clock_now();
        EXPECT_EQ(zap_transport_recv(t, peer, 0xBEEF, &c, 1, nullptr), ZAP_ERR_TIMED_OUT) << later;
        double took = zap_clock_now() - t0;
        EXPECT_GE(took, 0.25) << later;
        EXPECT_LT(took, 5.0) << "ZAP_TIMEOUT=" << later << " set after create was used";
    }
    if (old)
        setenv("ZAP_TIMEOUT", saved.c_str(), 1);
    else
        unsetenv("ZAP_TIMEOUT");
    MPI_Barrier(MPI_COMM_WORLD);
    zap_transport_close(t);
}

// A timeout out of range fails create on every rank and creates nothing.
TEST_F(Ucp, CreateRefusesATimeoutOutOfRange)
{
    MpiExpectLog("out of range");
    for (double bad : {-2.0, 0.0005, 2e7}) {
        zap_transport_params_t params{};
        params.timeout_s = bad;
        zap_transport_t *t = nullptr;
        EXPECT_EQ(zap_ucp_transport_create_ex(MPI_COMM_WORLD, nullptr, &params, &t), ZAP_ERR_INVALID_PARAM) << bad;
        EXPECT_EQ(t, nullptr);
    }
}

// ZAP_TRANSPORT_TIMEOUT_NONE, like ZAP_TIMEOUT unset or "none": no deadline.
TEST_F(Ucp, NoTimeoutIsInfinite)
{
    zap_transport_params_t params{};
    params.timeout_s = ZAP_TRANSPORT_TIMEOUT_NONE;
    zap_transport_t *t = nullptr;
    ASSERT_EQ(zap_ucp_transport_create_ex(MPI_COMM_WORLD, nullptr, &params, &t), ZAP_OK);
    EXPECT_TRUE(std::isinf(zap_transport_timeout(t)));
    MPI_Barrier(MPI_COMM_WORLD);
    zap_transport_close(t);
}

// The blocking forms have their own path in the UCX transport (no zap
// request): the same contract, checked through zap_transport_send/recv.
TEST_F(Ucp, BlockingReceiveGivesUpAfterTheTimeoutNamingThePeerAndIsCancelled)
{
    ShortTimeout st; // collective, as is the barrier: the odd rank out takes part
    ASSERT_NE(st.t, nullptr);
    int peer = partner();
    const bool receiver = peer >= 0 && rank() > peer;
    if (receiver) {
        MpiExpectLog("timed out");
        char c = 0;
        double t0 = zap_clock_now();
        EXPECT_EQ(zap_transport_recv(st.t, peer, 0xD00D, &c, 1, nullptr), ZAP_ERR_TIMED_OUT);
        double took = zap_clock_now() - t0;
        EXPECT_GE(took, 0.25);
        EXPECT_LT(took, 5.0);
        EXPECT_TRUE(MpiLogSeen("a receive from peer rank " + std::to_string(peer))) << MpiLogText();
    }
    MPI_Barrier(MPI_COMM_WORLD);
    // The timed-out receive is gone: the next message on that tag goes to the
    // next receive.
    char v = 'y', got = 0;
    size_t len = 0;
    if (receiver) {
        ASSERT_EQ(st.recv_patiently(peer, 0xD00D, &got, 1, &len), ZAP_OK);
        EXPECT_EQ(got, 'y');
        EXPECT_EQ(len, 1u);
    } else if (peer >= 0) {
        ASSERT_EQ(zap_transport_send(st.t, peer, 0xD00D, &v, 1), ZAP_OK);
    }
}

// A rendezvous send nobody receives cannot be cancelled: the blocking send
// gives up after ZAP_TIMEOUT naming the peer and leaves the message to UCX,
// which delivers it when the peer receives it later.
TEST_F(Ucp, BlockingSendGivesUpAfterTheTimeoutNamingThePeer)
{
    ShortTimeout st; // collective, as is the barrier: the odd rank out takes part
    ASSERT_NE(st.t, nullptr);
    int peer = partner();
    const bool sender = peer >= 0 && rank() < peer;
    const size_t len = 1u << 20;
    const uint64_t tag = 0x5E17;
    std::vector<uint8_t> buf(len);
    if (sender) {
        MpiExpectLog("timed out");
        MpiExpectLog("gave up on a send to rank " + std::to_string(peer));
        fill(buf.data(), len, seed_of(rank(), peer, tag, len));
        double t0 = zap_clock_now();
        EXPECT_EQ(zap_transport_send(st.t, peer, tag, buf.data(), len), ZAP_ERR_TIMED_OUT);
        double took = zap_clock_now() - t0;
        EXPECT_GE(took, 0.25);
        EXPECT_LT(took, 5.0);
        EXPECT_TRUE(MpiLogSeen("a send to peer rank " + std::to_string(peer))) << MpiLogText();
    }
    MPI_Barrier(MPI_COMM_WORLD);
    // The peer takes the message now; the sender's buffer must live until
    // then, and the sender progresses (waiting for the ack) to finish it.
    char ack = 'k';
    if (sender) {
        char got = 0;
        ASSERT_EQ(st.recv_patiently(peer, tag + 1, &got, 1, nullptr), ZAP_OK);
        EXPECT_EQ(got, 'k');
    } else if (peer >= 0) {
        size_t got = 0;
        ASSERT_EQ(st.recv_patiently(peer, tag, buf.data(), len, &got), ZAP_OK);
        EXPECT_EQ(got, len);
        EXPECT_EQ(first_bad(buf.data(), len, seed_of(peer, rank(), tag, len)), -1);
        ASSERT_EQ(zap_transport_send(st.t, peer, tag + 1, &ack, 1), ZAP_OK);
    }
}

// A message that is already in the receiver's unexpected queue when the
// blocking receive is posted completes inside the post: its length must still
// be reported (UCX 1.13 leaves it out of an immediate completion).
TEST_F(Ucp, BlockingReceiveOfAMessageAlreadyThereReportsItsLength)
{
    int peer = partner();
    std::vector<uint8_t> out(70000), in(70000 + 8);
    for (size_t len : {(size_t)0, (size_t)8, (size_t)1000, (size_t)8193, (size_t)70000}) {
        const uint64_t tag = 0xA1A0 + len % 13;
        if (peer < 0) { // the odd rank out: only the barrier
            MPI_Barrier(MPI_COMM_WORLD);
        } else if (rank() < peer) {
            fill(out.data(), len, seed_of(rank(), peer, tag, len));
            zap_request_t *r = nullptr;
            ASSERT_EQ(zap_transport_isend(t_, peer, tag, out.data(), len, &r), ZAP_OK);
            MPI_Barrier(MPI_COMM_WORLD);
            EXPECT_EQ(zap_request_wait(r), ZAP_OK) << len;
            zap_request_free(r);
        } else {
            MPI_Barrier(MPI_COMM_WORLD);
            // Progress until the message (or a rendezvous request for it) has
            // been taken off the wire into the unexpected queue.
            double until = zap_clock_now() + 0.05;
            while (zap_clock_now() < until)
                ASSERT_EQ(zap_transport_progress(t_), ZAP_OK);
            size_t got = ~(size_t)0;
            ASSERT_EQ(zap_transport_recv(t_, peer, tag, in.data(), in.size(), &got), ZAP_OK) << len;
            EXPECT_EQ(got, len);
            EXPECT_EQ(first_bad(in.data(), len, seed_of(peer, rank(), tag, len)), -1) << len;
        }
    }
}

TEST_F(Ucp, BlockingFormsCheckTheirArguments)
{
    MpiExpectLog("is not in");
    char c = 0;
    EXPECT_EQ(zap_transport_send(t_, size(), 1, &c, 1), ZAP_ERR_NOT_FOUND);
    EXPECT_EQ(zap_transport_recv(t_, -1, 1, &c, 1, nullptr), ZAP_ERR_NOT_FOUND);
    EXPECT_EQ(zap_transport_send(t_, 0, 1, nullptr, 1), ZAP_ERR_INVALID_PARAM);
    EXPECT_EQ(zap_transport_recv(t_, 0, 1, nullptr, 1, nullptr), ZAP_ERR_INVALID_PARAM);
    EXPECT_EQ(zap_transport_send(nullptr, 0, 1, &c, 1), ZAP_ERR_INVALID_PARAM);
    EXPECT_EQ(zap_transport_recv(nullptr, 0, 1, &c, 1, nullptr), ZAP_ERR_INVALID_PARAM);
}

TEST_F(Ucp, FreeingAPendingReceiveCancelsIt)
{
    int peer = partner();
    if (peer < 0)
        return;
    char c = 0;
    zap_request_t *r = nullptr;
    ASSERT_EQ(zap_transport_irecv(t_, peer, 0x5151, &c, 1, &r), ZAP_OK);
    zap_request_free(r);
    // A message sent with that tag afterwards goes to the next receive.
    char v = 'x', got = 0;
    if (rank() < peer) {
        ASSERT_EQ(zap_transport_send(t_, peer, 0x5151, &v, 1), ZAP_OK);
    } else {
        ASSERT_EQ(zap_transport_recv(t_, peer, 0x5151, &got, 1, nullptr), ZAP_OK);
        EXPECT_EQ(got, 'x');
    }
}

TEST_F(Ucp, TagsDifferingOnlyInHighBitsBelow44DoNotMix)
{
    int peer = partner();
    if (peer < 0)
        return;
    // Collective-style tags: communicator id in the high bits of the 44.
    const uint64_t a = (uint64_t)3 << 40 | 5, b = (uint64_t)4 << 40 | 5;
    uint32_t va = 0xAAAA, vb = 0xBBBB, ga = 0, gb = 0;
    if (rank() < peer) {
        ASSERT_EQ(zap_transport_send(t_, peer, a, &va, 4), ZAP_OK);
        ASSERT_EQ(zap_transport_send(t_, peer, b, &vb, 4), ZAP_OK);
    } else {
        ASSERT_EQ(zap_transport_recv(t_, peer, b, &gb, 4, nullptr), ZAP_OK);
        ASSERT_EQ(zap_transport_recv(t_, peer, a, &ga, 4, nullptr), ZAP_OK);
        EXPECT_EQ(ga, va);
        EXPECT_EQ(gb, vb);
    }
}

TEST_F(Ucp, ThreadsShareOneTransport)
{
    // Ranks 0 and 1 only: every extra spinning thread costs seconds on a
    // 2-core CI machine.
    int peer = partner();
    if (peer < 0 || rank() > 1)
        return;
    // Three threads per rank, each ping-ponging with its twin on the partner
    // under its own tag, eager and rendezvous sizes mixed.
    const int nthreads = 3, rounds = 40;
    std::vector<std::thread> ts;
    std::vector<int> bad(nthreads, 0);
    for (int k = 0; k < nthreads; k++)
        ts.emplace_back([&, k] {
            const uint64_t tag = 0x7000 + (uint64_t)k;
            std::vector<uint8_t> out(70000), in(70000);
            for (int i = 0; i < rounds && !bad[k]; i++) {
                size_t len = (i % 4 == 0) ? 70000 : (size_t)(8 + i);
                uint64_t sseed = seed_of(rank(), peer, tag, (size_t)i);
                uint64_t rseed = seed_of(peer, rank(), tag, (size_t)i);
                fill(out.data(), len, sseed);
                size_t got = 0;
                zap_status_t a, b;
                if (rank() < peer) {
                    a = zap_transport_send(t_, peer, tag, out.data(), len);
                    b = zap_transport_recv(t_, peer, tag, in.data(), in.size(), &got);
                } else {
                    b = zap_transport_recv(t_, peer, tag, in.data(), in.size(), &got);
                    a = zap_transport_send(t_, peer, tag, out.data(), len);
                }
                if (a != ZAP_OK || b != ZAP_OK || got != len || first_bad(in.data(), len, rseed) != -1)
                    bad[k] = i + 1;
            }
        });
    for (auto &t : ts)
        t.join();
    for (int k = 0; k < nthreads; k++)
        EXPECT_EQ(bad[k], 0) << "thread " << k << " failed at round " << bad[k] - 1;
}

// The first connection to a peer on this host warms UCX's shared-memory
// ring of receive buffers on both sides (ucp_warm.h): after one round trip,
// a ring's worth of eager messages more (UCX 1.13's default: 64 buffers)
// takes no page faults in either process. Without the warm-up each of the
// first 64 messages faults on the sender's and the receiver's pages of its buffer.
// Over TCP nothing faults either way. A transport of its own, so that no
// earlier test has connected the pair.
TEST(UcpWarm, MessagesAfterTheFirstToAPeerOnThisHostTakeNoPageFaults)
{
    zap_transport_t *t = nullptr;
    ASSERT_EQ(zap_ucp_transport_create(MPI_COMM_WORLD, nullptr, &t), ZAP_OK);
    int me = zap_transport_rank(t);
    long faults = 0;
    if (me < 2) {
        int peer = 1 - me;
        std::vector<uint8_t> out(6000, 0x5a), in(6000, 0); // two pages of a buffer, sent by eager copy
        auto round = [&](uint64_t tag) {
            if (me == 0) {
                ASSERT_EQ(zap_transport_send(t, peer, tag, out.data(), out.size()), ZAP_OK);
                ASSERT_EQ(zap_transport_recv(t, peer, tag, in.data(), in.size(), nullptr), ZAP_OK);
            } else {
                ASSERT_EQ(zap_transport_recv(t, peer, tag, in.data(), in.size(), nullptr), ZAP_OK);
                ASSERT_EQ(zap_transport_send(t, peer, tag, out.data(), out.size()), ZAP_OK);
            }
        };
        round(1); // connects, each side's warm-up ahead of its first message
        struct rusage a, b;
        getrusage(RUSAGE_THREAD, &a);
        for (uint64_t i = 0; i < 128; i++)
            round(2 + i);
        getrusage(RUSAGE_THREAD, &b);
        faults = (b.ru_minflt - a.ru_minflt) + (b.ru_majflt - a.ru_majflt);
        EXPECT_EQ(in[5999], 0x5a);
    }
    EXPECT_LT(faults, 16) << "page faults in 128 round trips after the first";
    MPI_Barrier(MPI_COMM_WORLD);
    zap_transport_close(t);
}

// A transport of its own: closing it must cancel what is pending and refuse
// what comes after.
TEST(UcpClose, PendingRequestsAreCancelledAndLaterPostsAreClosed)
{
    zap_transport_t *t = nullptr;
    ASSERT_EQ(zap_ucp_transport_create(MPI_COMM_WORLD, nullptr, &t), ZAP_OK);
    int peer = (zap_transport_rank(t) + 1) % zap_transport_size(t);
    char c = 0;
    zap_request_t *r = nullptr;
    ASSERT_EQ(zap_transport_irecv(t, peer, 0x77, &c, 1, &r), ZAP_OK);
    zap_transport_close(t);
    int done = 0;
    EXPECT_EQ(zap_request_test(r, &done), ZAP_ERR_CANCELED);
    EXPECT_EQ(done, 1);
    zap_request_free(r);
    zap_request_t *r2 = nullptr;
    EXPECT_EQ(zap_transport_isend(t, peer, 1, &c, 1, &r2), ZAP_ERR_CLOSED);
    EXPECT_EQ(zap_transport_irecv(t, peer, 1, &c, 1, &r2), ZAP_ERR_CLOSED);
    EXPECT_EQ(r2, nullptr);
    EXPECT_EQ(zap_transport_send(t, peer, 1, &c, 1), ZAP_ERR_CLOSED);
    EXPECT_EQ(zap_transport_recv(t, peer, 1, &c, 1, nullptr), ZAP_ERR_CLOSED);
}

// Another thread blocked in zap_transport_recv when the transport closes:
// the receive ends with ZAP_ERR_CANCELED (the blocking receive holds the
// worker lock while it polls; close must still get it).
TEST(UcpClose, CloseEndsABlockingReceiveOfAnotherThread)
{
    zap_transport_t *t = nullptr;
    ASSERT_EQ(zap_ucp_transport_create(MPI_COMM_WORLD, nullptr, &t), ZAP_OK);
    int peer = (zap_transport_rank(t) + 1) % zap_transport_size(t);
    zap_status_t st = ZAP_OK;
    double ended = 0;
    std::thread waiter([&] {
        char c = 0;
        st = zap_transport_recv(t, peer, 0x99, &c, 1, nullptr); // nobody sends this
        ended = zap_clock_now();
    });
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    double t0 = zap_clock_now();
    zap_transport_close(t);
    waiter.join();
    EXPECT_EQ(st, ZAP_ERR_CANCELED);
    EXPECT_LT(ended - t0, 5.0);
}

TEST(UcpClose, TransportOverAGivenPoolRegistersAndReleasesItsChunks)
{
    zap_pool_params_t pp{};
    pp.backend = ZAP_POOL_BACKEND_HOST;
    pp.name = "mpi-test";
    pp.device = -1;
    zap_pool_t *pool = nullptr;
    ASSERT_EQ(zap_pool_create(&pp, &pool), ZAP_OK);
    zap_buf_t early{};
    ASSERT_EQ(zap_pool_alloc(pool, 1 << 20, &early), ZAP_OK); // chunk exists before the transport
    zap_transport_t *t = nullptr;
    ASSERT_EQ(zap_ucp_transport_create(MPI_COMM_WORLD, pool, &t), ZAP_OK);
    EXPECT_EQ(zap_transport_pool(t), pool);
    int me = zap_transport_rank(t), n = zap_transport_size(t);
    int to = (me + 1) % n, from = (me + n - 1) % n;
    zap_buf_t in{};
    ASSERT_EQ(zap_transport_alloc(t, 1 << 20, &in), ZAP_OK);
    fill(early.ptr, 1 << 20, seed_of(me, to, 3, 1));
    zap_request_t *rr = nullptr;
    ASSERT_EQ(zap_transport_irecv(t, from, 3, in.ptr, 1 << 20, &rr), ZAP_OK);
    EXPECT_EQ(zap_transport_send(t, to, 3, early.ptr, 1 << 20), ZAP_OK);
    EXPECT_EQ(zap_request_wait(rr), ZAP_OK);
    EXPECT_EQ(first_bad(in.ptr, 1 << 20, seed_of(from, me, 3, 1)), -1);
    zap_request_free(rr);
    // The chunk that existed before the transport was registered when the
    // transport installed its hooks (some hook slot holds a memh for it).
    auto registered = [&](const void *p) {
        for (int slot = 0; slot < ZAP_POOL_MAX_HOOKS; slot++) {
            zap_pool_region_t reg{};
            if (zap_pool_lookup(pool, p, 1, slot, &reg) == ZAP_OK && reg.cookie != nullptr)
                return true;
        }
        return false;
    };
    EXPECT_TRUE(registered(early.ptr));
    EXPECT_TRUE(registered(in.ptr));
    zap_transport_close(t);
    // Unregistered at close (the hooks are gone), and the pool is the
    // caller's: it still works after the transport is gone.
    EXPECT_FALSE(registered(early.ptr));
    EXPECT_EQ(zap_buf_free(&in), ZAP_OK);
    EXPECT_EQ(zap_buf_free(&early), ZAP_OK);
    EXPECT_EQ(zap_pool_destroy(pool), ZAP_OK);
}

TEST(UcpManaged, ManagedPoolBuffersTravelWithStaging)
{
    zap_pool_params_t pp{};
    pp.backend = ZAP_POOL_BACKEND_MANAGED;
    pp.device = -1;
    pp.budget_bytes = 64u << 20;
    pp.name = "mpi-managed";
    zap_pool_t *pool = nullptr;
    MpiExpectLog("managed backing unavailable"); // on machines without a GPU
    zap_status_t st = zap_pool_create(&pp, &pool);
    int ok = st == ZAP_OK, all_ok = 0;
    MPI_Allreduce(&ok, &all_ok, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    if (!all_ok) {
        zap_pool_destroy(pool);
        GTEST_SKIP() << "no managed memory on every rank (no CUDA device): " << zap_status_string(st);
    }
    zap_transport_t *t = nullptr;
    ASSERT_EQ(zap_ucp_transport_create(MPI_COMM_WORLD, pool, &t), ZAP_OK);
    int me = zap_transport_rank(t), n = zap_transport_size(t);
    int to = (me + 1) % n, from = (me + n - 1) % n;
    for (size_t len : {(size_t)8, (size_t)100000, (size_t)4 << 20}) {
        zap_buf_t out{}, in{};
        ASSERT_EQ(zap_transport_alloc(t, len, &out), ZAP_OK);
        ASSERT_EQ(zap_transport_alloc(t, len, &in), ZAP_OK);
        fill(out.ptr, len, seed_of(me, to, 9, len));
        EXPECT_EQ(zap_buf_prefetch(&out, 1), ZAP_OK); // resident on the GPU when sent
        zap_request_t *rr = nullptr;
        ASSERT_EQ(zap_transport_irecv(t, from, 9, in.ptr, len, &rr), ZAP_OK);
        EXPECT_EQ(zap_transport_send(t, to, 9, out.ptr, len), ZAP_OK);
        EXPECT_EQ(zap_request_wait(rr), ZAP_OK);
        EXPECT_EQ(first_bad(in.ptr, len, seed_of(from, me, 9, len)), -1) << len;
        zap_request_free(rr);
        zap_buf_free(&out);
        zap_buf_free(&in);
    }
    zap_transport_close(t);
    EXPECT_EQ(zap_pool_destroy(pool), ZAP_OK);
}

} // namespace
