/* NCCL, loaded at run time. The benchmark compares against NCCL where it is
 * installed, but zap's build machines need not have NCCL's headers: these
 * are the few public NCCL 2.x API types and entry points the coll mode uses,
 * resolved with dlopen("libnccl.so.2"). Values follow nccl.h (stable since
 * NCCL 2.0; bfloat16 since 2.10). */
#ifndef ZAP_PERF_NCCL_DL_H
#define ZAP_PERF_NCCL_DL_H
#include <stddef.h>
#include <cuda_runtime.h>

typedef struct ncclComm *ncclComm_t;
typedef struct {
    char internal[128];
} ncclUniqueId;
typedef enum { ncclSuccess = 0 } ncclResult_t;
typedef enum { ncclInt8 = 0, ncclUint8 = 1, ncclInt32 = 2, ncclUint32 = 3, ncclInt64 = 4, ncclUint64 = 5,
               ncclFloat16 = 6, ncclFloat32 = 7, ncclFloat64 = 8, ncclBfloat16 = 9 } ncclDataType_t;
typedef enum { ncclSum = 0, ncclProd = 1, ncclMax = 2, ncclMin = 3 } ncclRedOp_t;

/* Loads libnccl.so.2 once; 0 on success, -1 (with a message on stderr) when
 * NCCL is not installed or lacks an entry point. */
int nccl_dl_load(void);

extern ncclResult_t (*ncclGetUniqueId)(ncclUniqueId *id);
extern ncclResult_t (*ncclCommInitRank)(ncclComm_t *comm, int nranks, ncclUniqueId id, int rank);
extern ncclResult_t (*ncclAllReduce)(const void *sendbuff, void *recvbuff, size_t count, ncclDataType_t datatype,
                                     ncclRedOp_t op, ncclComm_t comm, cudaStream_t stream);
extern ncclResult_t (*ncclBroadcast)(const void *sendbuff, void *recvbuff, size_t count, ncclDataType_t datatype,
                                     int root, ncclComm_t comm, cudaStream_t stream);
extern ncclResult_t (*ncclCommDestroy)(ncclComm_t comm);
extern const char *(*ncclGetErrorString)(ncclResult_t result);
#endif
