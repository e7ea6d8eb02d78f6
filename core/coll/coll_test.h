/* Test hooks of the collectives, for suites that need what the public API
 * does not offer; C and C++ (the suites are C++). Not for programs. */
#ifndef ZAP_COLL_TEST_H
#define ZAP_COLL_TEST_H
#include "zap/coll.h"

ZAP_BEGIN_DECLS
/* How many exchanges a one-way shared-memory exchange's writer may run ahead
 * of its readers on a communicator of p ranks (the segment's banks,
 * coll/shm/shm.h). */
int zap_coll_test_shm_banks(int p);
/* The same for comm's own segment (0: it has none): deeper where its maker
 * runs oversubscribed (coll/shm/shm.h). */
int zap_coll_test_comm_shm_banks(const zap_comm_t *comm);
/* Forces collective's ("allreduce", "bcast") algorithm to name ("auto": the
 * automatic choice) from comm's next call on, as params would have at
 * creation: for the suites that switch algorithms between calls on one
 * communicator, where its shared segment's order is what they test. Every
 * rank must make the same change at the same point of its calls. Returns
 * ZAP_OK; ZAP_ERR_INVALID_PARAM (logged) for an unknown collective or name. */
zap_status_t zap_coll_test_force(zap_comm_t *comm, const char *collective, const char *name);
/* Whether the collective request req is still in its argument agreement
 * (or waiting for its communicator's setup): for the suites that make a rank
 * fail between the agreement and the data. */
int zap_coll_test_agreeing(const zap_request_t *req);
/* How many blocking calls on comm ran in the fast form, without an
 * operation (engine/fast.h): for the suites that check it is taken. */
unsigned long long zap_coll_test_fast_calls(const zap_comm_t *comm);
ZAP_END_DECLS
#endif
