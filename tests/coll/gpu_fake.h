/* Knobs of the host-memory stand-in for the GPU path's device side
 * (gpu_fake.c). */
#ifndef ZAP_TEST_GPU_FAKE_H
#define ZAP_TEST_GPU_FAKE_H
#include <stdbool.h>
#ifdef __cplusplus
extern "C" {
#endif
/* The next create channel creations and open peer opens (a channel's
 * connection counts as one) fail. */
void zap_fake_gpu_fail(int create, int open);
/* The next n buffers cannot be exported (they are staged). */
void zap_fake_gpu_refuse_expose(int n);
/* This thread's buffers count as host memory (the rank votes no). */
void zap_fake_gpu_refuse_here(bool refuse);
/* Kernels launched and not tested to their end, plus staging buffers held. */
int zap_fake_gpu_held(void);
/* Launches and staging-buffer acquisitions so far. */
int zap_fake_gpu_launches(void);
int zap_fake_gpu_stages(void);
#ifdef __cplusplus
}
#endif
#endif
