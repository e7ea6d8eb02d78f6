/* The stream's threads and the CUDA device they use (stream.h). Threads that
 * may touch CUDA (the transport stages managed pages; a GPU rank's receiver
 * fills device buffers) adopt the job thread's device first; the device
 * calls themselves are cuda/verify's (verify_device.h). */
#include "verify/stream.h"
#include "base/log.h"
#include "verify_device.h"
#include "zap/pool.h"
#include <stdlib.h>

int zap_verify_stream_device(zap_transport_t *t, int gpu_planned)
{
    /* Only a CUDA pool (allocation, staging of managed pages) or device
     * copies for a GPU verifier make the stream's threads call CUDA; CUDA is
     * not initialised for a host pool and the CPU verifier. */
    if (!gpu_planned && zap_pool_kind(zap_transport_pool(t)) == ZAP_MEM_HOST)
        return -1;
    return zap_verify_device_current();
}

void zap_verify_stream_adopt_device(int dev)
{
    if (dev >= 0 && zap_verify_device_select(dev) != ZAP_OK)
        zap_warn("verify: job: a stream thread could not select CUDA device %d", dev);
}

typedef struct helper {
    void *(*fn)(void *);
    void *arg;
    int dev;
} helper_t;

static void *helper_main(void *arg)
{
    helper_t h = *(helper_t *)arg;
    free(arg);
    zap_verify_stream_adopt_device(h.dev);
    return h.fn(h.arg);
}

int zap_verify_stream_thread(pthread_t *tid, void *(*fn)(void *), void *arg, int dev)
{
    helper_t *h = malloc(sizeof(*h));
    if (!h)
        return -1;
    *h = (helper_t){fn, arg, dev};
    if (pthread_create(tid, NULL, helper_main, h) != 0) {
        free(h);
        return -1;
    }
    return 0;
}
