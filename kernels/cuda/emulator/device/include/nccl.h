// ember's emulated NCCL (EMBER_CUDA=EMULATED): the part of NCCL's API that ember uses, with NCCL's
// names, numeric values and signatures (those of NCCL 2.28), so that parallel/nccl_communicator.cpp
// compiles unchanged against it. Served by kernels/cuda/emulator/device/nccl_*.cpp: collectives
// run on the emulated GPUs' stream workers and meet through shared memory, so ranks may be devices
// of one process (ncclCommInitAll) or processes started by mpirun (ncclCommInitRank).
// What differs from NCCL: a peer that never comes is an error after EMBER_EMULATED_NCCL_TIMEOUT
// seconds (default 300) instead of a hang; collectives that differ between ranks are an error
// (ncclInvalidUsage) instead of undefined behaviour; half and bfloat16 reductions are refused.
// defines: ncclResult_t, ncclComm_t, ncclUniqueId, NCCL_UNIQUE_ID_BYTES, ncclDataType_t,
//          ncclRedOp_t, ncclGetVersion, ncclGetUniqueId, ncclCommInitRank, ncclCommInitAll,
//          ncclCommDestroy, ncclCommAbort, ncclCommGetAsyncError, ncclCommCount, ncclCommCuDevice,
//          ncclCommUserRank, ncclAllReduce, ncclBroadcast, ncclBcast, ncclGroupStart,
//          ncclGroupEnd, ncclGetErrorString, ncclGetLastError
#pragma once

#include <cstddef>

#include <cuda_runtime_api.h>

#define NCCL_MAJOR 2
#define NCCL_MINOR 28
#define NCCL_PATCH 0
#define NCCL_VERSION_CODE 22800
#define NCCL_UNIQUE_ID_BYTES 128

extern "C" {

typedef struct ncclComm* ncclComm_t;
typedef struct {
  char internal[NCCL_UNIQUE_ID_BYTES];
} ncclUniqueId;

// The enums have int as their underlying type here (NCCL's C header leaves it to the compiler),
// so that a caller's out-of-range value reaches the argument check as a value, not as undefined
// behaviour (UBSan's -fsanitize=enum stops on the load otherwise).
typedef enum : int {
  ncclSuccess = 0,
  ncclUnhandledCudaError = 1,
  ncclSystemError = 2,
  ncclInternalError = 3,
  ncclInvalidArgument = 4,
  ncclInvalidUsage = 5,
  ncclRemoteError = 6,
  ncclInProgress = 7,
  ncclNumResults = 8
} ncclResult_t;

typedef enum : int { ncclSum = 0, ncclProd = 1, ncclMax = 2, ncclMin = 3, ncclAvg = 4, ncclNumOps = 5 } ncclRedOp_t;

typedef enum : int {
  ncclInt8 = 0,
  ncclChar = 0,
  ncclUint8 = 1,
  ncclInt32 = 2,
  ncclInt = 2,
  ncclUint32 = 3,
  ncclInt64 = 4,
  ncclUint64 = 5,
  ncclFloat16 = 6,
  ncclHalf = 6,
  ncclFloat32 = 7,
  ncclFloat = 7,
  ncclFloat64 = 8,
  ncclDouble = 8,
  ncclBfloat16 = 9,
  ncclFloat8e4m3 = 10,
  ncclFloat8e5m2 = 11,
  ncclNumTypes = 12
} ncclDataType_t;

// NCCL_VERSION_CODE.
ncclResult_t ncclGetVersion(int* version);

// A fresh id, unique across processes: the name of the shared memory through which the ranks
// that pass it to ncclCommInitRank will meet.
ncclResult_t ncclGetUniqueId(ncclUniqueId* uniqueId);

// Rank `rank` of `nranks`, on the calling thread's current device. Blocks until every rank has
// called it with the same id (inside ncclGroupStart/End: until ncclGroupEnd).
ncclResult_t ncclCommInitRank(ncclComm_t* comm, int nranks, ncclUniqueId commId, int rank);
// One communicator per device of `devlist` (nullptr: devices 0 .. ndev - 1), rank i on devlist[i].
ncclResult_t ncclCommInitAll(ncclComm_t* comm, int ndev, const int* devlist);
// Frees the communicator; collectives already queued on streams still complete.
ncclResult_t ncclCommDestroy(ncclComm_t comm);
ncclResult_t ncclCommAbort(ncclComm_t comm);
// The error of a collective that failed on its stream (a peer that timed out or exited), or
// ncclSuccess.
ncclResult_t ncclCommGetAsyncError(ncclComm_t comm, ncclResult_t* asyncError);

ncclResult_t ncclCommCount(const ncclComm_t comm, int* count);
ncclResult_t ncclCommCuDevice(const ncclComm_t comm, int* device);
ncclResult_t ncclCommUserRank(const ncclComm_t comm, int* rank);

// Queued on `stream`, which must belong to the communicator's device, as must both buffers
// (ncclInvalidArgument otherwise). sendbuff == recvbuff is in-place. Every rank computes
// rank 0 (op) rank 1 (op) ..., in that order, so every rank's result is bit-identical;
// ncclAvg is that sum divided by nranks.
ncclResult_t ncclAllReduce(const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype,
                           ncclRedOp_t op, ncclComm_t comm, cudaStream_t stream);
// sendbuff is read on the root only.
ncclResult_t ncclBroadcast(const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype, int root,
                           ncclComm_t comm, cudaStream_t stream);
ncclResult_t ncclBcast(void* buff, size_t count, ncclDataType_t datatype, int root, ncclComm_t comm,
                       cudaStream_t stream);

// Nest per host thread. Collectives inside a group are queued as they are called (each rank's
// stream is asynchronous already, so one thread may drive several ranks without deadlock);
// ncclCommInitRank calls inside a group complete at the outermost ncclGroupEnd.
ncclResult_t ncclGroupStart();
ncclResult_t ncclGroupEnd();

const char* ncclGetErrorString(ncclResult_t result);
// The details of the most recent error of any call in this process (which call, what it expected,
// what it got); "" if none. `comm` is accepted and ignored, as by NCCL.
const char* ncclGetLastError(ncclComm_t comm);

}  // extern "C"
