// Fixtures for the collective tests between processes: WorldTransport, one
// UCX transport over MPI_COMM_WORLD for the suite; OneHostComm, for tests
// whose ranks all run on one host, adds a fresh communicator per test that
// must have its shared-memory segment (a test may leave its own revoked).
// Derived suites add their helpers; each program defines the transport once
// (ZAP_ONE_HOST_FIXTURE_STORAGE in one translation unit).
#ifndef ZAP_MPI_TESTS_ONE_HOST_FIXTURE_H
#define ZAP_MPI_TESTS_ONE_HOST_FIXTURE_H
#include <gtest/gtest.h>
#include <mpi.h>
extern "C" {
#include "zap/coll.h"
#include "zap/ucp.h"
}

class WorldTransport : public ::testing::Test {
  protected:
    static void SetUpTestSuite() { ASSERT_EQ(zap_ucp_transport_create(MPI_COMM_WORLD, nullptr, &t_), ZAP_OK); }
    static void TearDownTestSuite()
    {
        zap_transport_close(t_);
        t_ = nullptr;
    }
    static zap_transport_t *t_;
};

class OneHostComm : public WorldTransport {
  protected:
    void SetUp() override
    {
        ASSERT_EQ(zap_comm_create(t_, &comm_), ZAP_OK);
        zap_comm_attr_t a{};
        a.field_mask = ZAP_COMM_ATTR_SHARED_MEMORY;
        ASSERT_EQ(zap_comm_query(comm_, &a), ZAP_OK);
        ASSERT_TRUE(a.shared_memory) << "all ranks of this test run on one host";
    }
    void TearDown() override
    {
        zap_comm_destroy(comm_);
        comm_ = nullptr;
    }
    zap_comm_t *comm_ = nullptr;
};

#define ZAP_ONE_HOST_FIXTURE_STORAGE zap_transport_t *WorldTransport::t_ = nullptr
#endif
