/* Knobs of the host-memory stand-in for the GPU path's device side
 * (stage_fake.c). */
#ifndef ZAP_TEST_STAGE_FAKE_H
#define ZAP_TEST_STAGE_FAKE_H
#ifdef __cplusplus
extern "C" {
#endif
/* The next fail_acquire slot acquires and fail_open peer opens fail. */
void zap_fake_stage_fail(int fail_acquire, int fail_open);
/* The next n buffers count as host memory (the rank votes no). */
void zap_fake_stage_refuse_move(int n);
/* Slots taken and not given back; slot acquires so far. */
int zap_fake_stage_held(void);
int zap_fake_stage_acquires(void);
/* [ptr, ptr + bytes) of host memory counts as managed memory from now on
 * (bytes 0: no longer); at most 64 ranges at once. */
void zap_fake_managed(const void *ptr, size_t bytes);
#ifdef __cplusplus
}
#endif
#endif
