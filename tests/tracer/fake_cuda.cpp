// A stand-in for libcuda.so.1 (same soname) with only what libkprof_tracer.so looks up in the
// driver already loaded: reading a kernel node's parameters and its function's name. Built twice:
// whole, and without the name calls (FAKE_CUDA_WITHOUT_NAMES: a driver older than CUDA 12.3).
// (tests/support/fake_libcuda.cpp plays the driver kprof's own loader and selftest use; this one
// answers about the graph nodes fake_cupti makes, whose objects the two share.)
#include <cuda.h>

#include "fake_cuda_objects.h"

extern "C" {

CUresult CUDAAPI cuGraphKernelNodeGetParams(CUgraphNode node, CUDA_KERNEL_NODE_PARAMS* params) {
  if (!node || !params || node->type != CU_GRAPH_NODE_TYPE_KERNEL) return CUDA_ERROR_INVALID_VALUE;
  *params = node->params;
  return CUDA_SUCCESS;
}

#ifndef FAKE_CUDA_WITHOUT_NAMES
CUresult CUDAAPI cuFuncGetName(const char** name, CUfunction function) {
  if (!name || !function) return CUDA_ERROR_INVALID_VALUE;
  *name = function->name;
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuKernelGetName(const char** name, CUkernel kernel) {
  if (!name || !kernel) return CUDA_ERROR_INVALID_VALUE;
  *name = kernel->name;
  return CUDA_SUCCESS;
}
#endif

}  // extern "C"
