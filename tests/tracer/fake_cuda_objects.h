// What the stand-ins' CUDA handles point at: fake_cupti makes graph nodes and calls the tracer back
// with them (its GRAPHNODE_CREATED and _CLONED callbacks), fake_cuda (a libcuda.so.1 stand-in)
// answers the tracer's questions about them (cuGraphKernelNodeGetParams, cuFuncGetName,
// cuKernelGetName). The driver's handle types are opaque pointers; here they point at these.
#pragma once

#include <cuda.h>

#include <cstdint>

struct CUfunc_st {
  const char* name;
};

struct CUkern_st {
  const char* name;
};

struct CUgraph_st {
  std::uint32_t id;
};

struct CUgraphNode_st {
  std::uint64_t id;
  CUgraphNodeType type;
  CUDA_KERNEL_NODE_PARAMS params;  // kernel nodes
};
