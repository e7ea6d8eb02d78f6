/* Knobs of the host-memory stand-in for the GPU path's device side
 * (stage_fake.c). */
#ifndef ZAP_TEST_STAGE_FAKE_H
#define ZAP_TEST_STAGE_FAKE_H
#ifdef __cplusplus
extern "C" {
#endif
/* The next fail_acquire slot acquires and fail_open peer opens fail. */
void zap_fake_stage_fail(int fail_acquire, int fail_open);
/* Slots taken and not given back. */
int zap_fake_stage_held(void);
#ifdef __cplusplus
}
#endif
#endif
