// Bad input to the transport contract over inproc: each call is refused with
// its own status, the pool holds what it held, and the transport still
// carries a message afterwards (docs/bad-input.md, rows T*).
#include "badinput_util.h"
#include <thread>

namespace {
// Runs a rejected call, then checks the pool is unchanged and a ping works.
template <class F> void expect_refused_intact(PairWorld &w, zap_status_t expected, F call)
{
    PoolSnapshot before(zap_transport_pool(w.t0));
    EXPECT_EQ(call(), expected);
    before.expect_same_as(zap_transport_pool(w.t0));
    w.expect_ping();
}
} // namespace

TEST(BadTransport, WorldOfZeroRanksIsInvalidParam)
{
    LogCapture log;
    zap_inproc_world_t *w = nullptr;
    EXPECT_EQ(zap_inproc_world_create(0, nullptr, &w), ZAP_ERR_INVALID_PARAM);
    EXPECT_EQ(w, nullptr);
}

TEST(BadTransport, WorldOfTooManyRanksIsInvalidParam)
{
    LogCapture log;
    zap_inproc_world_t *w = nullptr;
    EXPECT_EQ(zap_inproc_world_create(4097, nullptr, &w), ZAP_ERR_INVALID_PARAM);
    EXPECT_EQ(zap_inproc_world_create(-3, nullptr, &w), ZAP_ERR_INVALID_PARAM);
    EXPECT_EQ(w, nullptr);
}

TEST(BadTransport, WorldWithNullOutputIsInvalidParam)
{
    LogCapture log;
    EXPECT_EQ(zap_inproc_world_create(2, nullptr, nullptr), ZAP_ERR_INVALID_PARAM);
}

TEST(BadTransport, TransportOfRankOutsideWorldIsNotFound)
{
    PairWorld w;
    zap_transport_t *t = nullptr;
    EXPECT_EQ(zap_inproc_transport(w.w, -1, &t), ZAP_ERR_NOT_FOUND);
    EXPECT_EQ(zap_inproc_transport(w.w, 2, &t), ZAP_ERR_NOT_FOUND);
    EXPECT_EQ(t, nullptr);
    EXPECT_EQ(zap_inproc_transport(nullptr, 0, &t), ZAP_ERR_INVALID_PARAM);
    EXPECT_EQ(zap_inproc_transport(w.w, 0, nullptr), ZAP_ERR_INVALID_PARAM);
    w.expect_ping();
}

TEST(BadTransport, SendOnNullTransportIsInvalidParam)
{
    char c = 1;
    zap_request_t *req = nullptr;
    EXPECT_EQ(zap_transport_isend(nullptr, 0, 1, &c, 1, &req), ZAP_ERR_INVALID_PARAM);
    EXPECT_EQ(zap_transport_send(nullptr, 0, 1, &c, 1), ZAP_ERR_INVALID_PARAM);
    EXPECT_EQ(req, nullptr);
    EXPECT_EQ(zap_transport_rank(nullptr), -1);
    EXPECT_EQ(zap_transport_size(nullptr), -1);
}

TEST(BadTransport, SendToNegativeRankIsNotFound)
{
    LogCapture log;
    PairWorld w;
    char c = 1;
    expect_refused_intact(w, ZAP_ERR_NOT_FOUND, [&] { return zap_transport_send(w.t0, -1, 1, &c, 1); });
    EXPECT_TRUE(log.contains("rank -1 is not in [0, 2)"));
}

TEST(BadTransport, SendToRankEqualToSizeIsNotFound)
{
    LogCapture log;
    PairWorld w;
    char c = 1;
    expect_refused_intact(w, ZAP_ERR_NOT_FOUND, [&] { return zap_transport_send(w.t0, 2, 1, &c, 1); });
}

TEST(BadTransport, ReceiveFromHugeRankIsNotFound)
{
    LogCapture log;
    PairWorld w;
    char c = 0;
    expect_refused_intact(w, ZAP_ERR_NOT_FOUND,
                          [&] { return zap_transport_recv(w.t1, 1 << 30, 1, &c, 1, nullptr); });
}

TEST(BadTransport, SendOfNullBufferWithLengthIsInvalidParam)
{
    PairWorld w;
    expect_refused_intact(w, ZAP_ERR_INVALID_PARAM, [&] { return zap_transport_send(w.t0, 1, 1, nullptr, 16); });
}

TEST(BadTransport, ReceiveIntoNullBufferWithCapacityIsInvalidParam)
{
    PairWorld w;
    expect_refused_intact(w, ZAP_ERR_INVALID_PARAM,
                          [&] { return zap_transport_recv(w.t1, 0, 1, nullptr, 16, nullptr); });
}

TEST(BadTransport, PostWithNullRequestPointerIsInvalidParam)
{
    PairWorld w;
    char c = 1;
    expect_refused_intact(w, ZAP_ERR_INVALID_PARAM, [&] { return zap_transport_isend(w.t0, 1, 1, &c, 1, nullptr); });
    expect_refused_intact(w, ZAP_ERR_INVALID_PARAM, [&] { return zap_transport_irecv(w.t1, 0, 1, &c, 1, nullptr); });
}

TEST(BadTransport, SendAfterCloseIsClosed)
{
    PairWorld w(3);
    zap_transport_t *t2 = nullptr;
    ASSERT_EQ(zap_inproc_transport(w.w, 2, &t2), ZAP_OK);
    zap_transport_close(t2);
    char c = 1;
    expect_refused_intact(w, ZAP_ERR_CLOSED, [&] { return zap_transport_send(t2, 0, 1, &c, 1); });
    expect_refused_intact(w, ZAP_ERR_CLOSED, [&] { return zap_transport_progress(t2); });
    zap_buf_t b{};
    expect_refused_intact(w, ZAP_ERR_CLOSED, [&] { return zap_transport_alloc(t2, 64, &b); });
    EXPECT_EQ(b.handle, 0u);
}

TEST(BadTransport, SendToClosedPeerIsPeerFailed)
{
    PairWorld w(3);
    zap_transport_t *t2 = nullptr;
    ASSERT_EQ(zap_inproc_transport(w.w, 2, &t2), ZAP_OK);
    zap_transport_close(t2);
    char c = 1;
    expect_refused_intact(w, ZAP_ERR_PEER_FAILED, [&] { return zap_transport_send(w.t0, 2, 1, &c, 1); });
    expect_refused_intact(w, ZAP_ERR_PEER_FAILED, [&] { return zap_transport_recv(w.t0, 2, 1, &c, 1, nullptr); });
}

TEST(BadTransport, ReceiveIntoTooSmallBufferIsTruncatedAndNextMessageArrives)
{
    PairWorld w;
    char big[100] = {1}, small[10];
    ASSERT_EQ(zap_transport_send(w.t0, 1, 5, big, sizeof(big)), ZAP_OK);
    PoolSnapshot before(zap_transport_pool(w.t0));
    EXPECT_EQ(zap_transport_recv(w.t1, 0, 5, small, sizeof(small), nullptr), ZAP_ERR_TRUNCATED);
    w.expect_ping(5);
    (void)before;
    zap_pool_stats_t s{};
    ASSERT_EQ(zap_pool_stats(zap_transport_pool(w.t0), &s), ZAP_OK);
    EXPECT_EQ(s.buffers_out, 0u) << "the truncated message's eager copy leaked";
}

TEST(BadTransport, ReceiveBufWithNullOutputIsInvalidParam)
{
    PairWorld w;
    expect_refused_intact(w, ZAP_ERR_INVALID_PARAM, [&] { return zap_transport_recv_buf(w.t1, 0, 1, nullptr); });
}

TEST(BadTransport, ReceiveBufFromBadRankIsNotFound)
{
    LogCapture log;
    PairWorld w;
    zap_buf_t b{};
    expect_refused_intact(w, ZAP_ERR_NOT_FOUND, [&] { return zap_transport_recv_buf(w.t1, 7, 1, &b); });
    EXPECT_EQ(b.handle, 0u);
}

TEST(BadTransport, AllocOfZeroBytesIsInvalidParam)
{
    PairWorld w;
    zap_buf_t b{};
    expect_refused_intact(w, ZAP_ERR_INVALID_PARAM, [&] { return zap_transport_alloc(w.t0, 0, &b); });
    expect_refused_intact(w, ZAP_ERR_INVALID_PARAM, [&] { return zap_transport_alloc(nullptr, 8, &b); });
}

TEST(BadTransport, CapsAndProgressWithNullAreInvalidParam)
{
    PairWorld w;
    zap_transport_caps_t caps{};
    EXPECT_EQ(zap_transport_caps(nullptr, &caps), ZAP_ERR_INVALID_PARAM);
    EXPECT_EQ(zap_transport_caps(w.t0, nullptr), ZAP_ERR_INVALID_PARAM);
    EXPECT_EQ(zap_transport_progress(nullptr), ZAP_ERR_INVALID_PARAM);
    EXPECT_EQ(zap_transport_pool(nullptr), nullptr);
    w.expect_ping();
}

TEST(BadTransport, RequestCallsWithNullAreInvalidParam)
{
    int done = 0;
    size_t len = 0;
    EXPECT_EQ(zap_request_test(nullptr, &done), ZAP_ERR_INVALID_PARAM);
    EXPECT_EQ(zap_request_wait(nullptr), ZAP_ERR_INVALID_PARAM);
    EXPECT_EQ(zap_request_wait_until(nullptr, 1.0), ZAP_ERR_INVALID_PARAM);
    EXPECT_EQ(zap_request_received(nullptr, &len), ZAP_ERR_INVALID_PARAM);
    EXPECT_EQ(zap_request_peer(nullptr), -1);
    zap_request_free(nullptr);
}

TEST(BadTransport, ReceivedLengthOfSendRequestIsInvalidParam)
{
    PairWorld w;
    char c = 3;
    zap_request_t *req = nullptr;
    ASSERT_EQ(zap_transport_isend(w.t0, 1, 8, &c, 1, &req), ZAP_OK);
    size_t len = 77;
    EXPECT_EQ(zap_request_received(req, &len), ZAP_ERR_INVALID_PARAM);
    EXPECT_EQ(len, 77u);
    ASSERT_EQ(zap_request_wait(req), ZAP_OK);
    zap_request_free(req);
    char in = 0;
    ASSERT_EQ(zap_transport_recv(w.t1, 0, 8, &in, 1, nullptr), ZAP_OK);
    EXPECT_EQ(in, 3);
}

TEST(BadTransport, ReceivedLengthBeforeCompletionIsInProgress)
{
    PairWorld w;
    char in = 0;
    zap_request_t *req = nullptr;
    ASSERT_EQ(zap_transport_irecv(w.t1, 0, 9, &in, 1, &req), ZAP_OK);
    size_t len = 77;
    EXPECT_EQ(zap_request_received(req, &len), ZAP_INPROGRESS);
    EXPECT_EQ(len, 77u);
    char c = 4;
    ASSERT_EQ(zap_transport_send(w.t0, 1, 9, &c, 1), ZAP_OK);
    ASSERT_EQ(zap_request_wait(req), ZAP_OK);
    EXPECT_EQ(zap_request_received(req, &len), ZAP_OK);
    EXPECT_EQ(len, 1u);
    zap_request_free(req);
}

TEST(BadTransport, WaitPastDeadlineIsTimedOutAndRequestStaysValid)
{
    LogCapture log;
    PairWorld w;
    char in = 0;
    zap_request_t *req = nullptr;
    ASSERT_EQ(zap_transport_irecv(w.t1, 0, 10, &in, 1, &req), ZAP_OK);
    EXPECT_EQ(zap_request_wait_until(req, zap_clock_now() + 0.05), ZAP_ERR_TIMED_OUT);
    EXPECT_TRUE(log.contains("waiting for a receive from peer rank 0")) << log.all();
    char c = 6;
    ASSERT_EQ(zap_transport_send(w.t0, 1, 10, &c, 1), ZAP_OK);
    EXPECT_EQ(zap_request_wait(req), ZAP_OK);
    EXPECT_EQ(in, 6);
    zap_request_free(req);
}

TEST(BadTransport, ClosedTransportCancelsItsPendingReceive)
{
    PairWorld w(3);
    zap_transport_t *t2 = nullptr;
    ASSERT_EQ(zap_inproc_transport(w.w, 2, &t2), ZAP_OK);
    char in = 0;
    zap_request_t *req = nullptr;
    ASSERT_EQ(zap_transport_irecv(t2, 0, 11, &in, 1, &req), ZAP_OK);
    zap_transport_close(t2);
    EXPECT_EQ(zap_request_wait(req), ZAP_ERR_CANCELED);
    zap_request_free(req);
    w.expect_ping();
}
