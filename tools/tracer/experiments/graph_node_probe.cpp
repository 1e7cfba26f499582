// Probe of CUPTI graph-node semantics on a real GPU (issue 40; not run yet): logs resource
// callbacks for graph nodes (created/cloned, ids), a kernel node's name via
// cuGraphKernelNodeGetParams+cuFuncGetName called inside the callback, GRAPHEXEC_CREATED ids, and
// kernel activity records' graphId and graphNodeId. Injection: CUDA_INJECTION64_PATH=libprobe.so.
// Output: $PROBE_OUT (text lines).
#include <cuda.h>
#include <cupti.h>
#include <dlfcn.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
static FILE* out;
static std::mutex mu;
using GetParams = CUresult (*)(CUgraphNode, CUDA_KERNEL_NODE_PARAMS*);
using FuncName = CUresult (*)(const char**, CUfunction);
using KernName = CUresult (*)(const char**, CUkernel);
static GetParams get_params;
static FuncName func_name;
static KernName kern_name;
static void resolve() {
  void* h = dlopen("libcuda.so.1", RTLD_NOLOAD | RTLD_LAZY);
  if (!h) {
    fprintf(out, "no libcuda loaded\n");
    return;
  }
  get_params = (GetParams)dlsym(h, "cuGraphKernelNodeGetParams_v2");
  func_name = (FuncName)dlsym(h, "cuFuncGetName");
  kern_name = (KernName)dlsym(h, "cuKernelGetName");
  fprintf(out, "syms %p %p %p\n", (void*)get_params, (void*)func_name, (void*)kern_name);
}
static void CUPTIAPI cb(void*, CUpti_CallbackDomain d, CUpti_CallbackId id, const void* data) {
  if (d != CUPTI_CB_DOMAIN_RESOURCE) return;
  auto* r = static_cast<const CUpti_ResourceData*>(data);
  auto* g = static_cast<CUpti_GraphData*>(r->resourceDescriptor);
  std::lock_guard<std::mutex> l(mu);
  if (!get_params && !func_name) resolve();
  uint32_t gid = 0, ogid = 0;
  uint64_t nid = 0, onid = 0;
  if (g->graph) cuptiGetGraphId(g->graph, &gid);
  if (g->originalGraph) cuptiGetGraphId(g->originalGraph, &ogid);
  if (g->node) cuptiGetGraphNodeId(g->node, &nid);
  if (g->originalNode) cuptiGetGraphNodeId(g->originalNode, &onid);
  long tid = syscall(SYS_gettid);
  if (id == CUPTI_CBID_RESOURCE_GRAPHNODE_CREATED) {
    const char* name = "";
    unsigned gx = 0, bx = 0;
    if (g->nodeType == CU_GRAPH_NODE_TYPE_KERNEL && get_params) {
      CUDA_KERNEL_NODE_PARAMS p{};
      CUresult rc = get_params(g->node, &p);
      if (rc == CUDA_SUCCESS) {
        gx = p.gridDimX;
        bx = p.blockDimX;
        if (p.func && func_name)
          func_name(&name, p.func);
        else if (p.kern && kern_name)
          kern_name(&name, p.kern);
      } else
        fprintf(out, "getparams rc %d\n", rc);
    }
    fprintf(out, "CREATED graph %u node %lu type %d tid %ld grid %u block %u name %.80s\n", gid,
            nid, (int)g->nodeType, tid, gx, bx, name ? name : "(null)");
  } else if (id == CUPTI_CBID_RESOURCE_GRAPHNODE_CLONED) {
    fprintf(out, "NODE_CLONED graph %u node %lu <- orig graph %u node %lu type %d\n", gid, nid,
            ogid, onid, (int)g->nodeType);
  } else if (id == CUPTI_CBID_RESOURCE_GRAPH_CREATED) {
    fprintf(out, "GRAPH_CREATED graph %u tid %ld\n", gid, tid);
  } else if (id == CUPTI_CBID_RESOURCE_GRAPH_CLONED) {
    fprintf(out, "GRAPH_CLONED graph %u <- %u\n", gid, ogid);
  } else if (id == CUPTI_CBID_RESOURCE_GRAPHEXEC_CREATED) {
    uint32_t eid = 0;
    if (g->graphExec) cuptiGetGraphExecId(g->graphExec, &eid);
    fprintf(out, "EXEC_CREATED exec %u from graph %u\n", eid, gid);
  } else if (id == CUPTI_CBID_RESOURCE_GRAPH_NODE_UPDATED ||
             id == CUPTI_CBID_RESOURCE_GRAPH_NODE_SET_PARAMS) {
    fprintf(out, "NODE_UPDATE id %u graph %u node %lu\n", id, gid, nid);
  }
}
static void CUPTIAPI req(uint8_t** b, size_t* s, size_t* m) {
  *s = 8 << 20;
  *b = (uint8_t*)aligned_alloc(8, *s);
  *m = 0;
}
static unsigned long kernels, graph_kernels;
static void CUPTIAPI done(CUcontext, uint32_t, uint8_t* b, size_t, size_t valid) {
  CUpti_Activity* r = nullptr;
  std::lock_guard<std::mutex> l(mu);
  while (cuptiActivityGetNextRecord(b, valid, &r) == CUPTI_SUCCESS) {
    if (r->kind == CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL) {
      auto* k = (CUpti_ActivityKernel10*)r;
      ++kernels;
      if (k->graphNodeId) {
        ++graph_kernels;
        if (graph_kernels <= 400 || graph_kernels % 500 == 0)
          fprintf(out, "KERNEL graphId %u graphNodeId %lu corr %u name %.60s\n", k->graphId,
                  (unsigned long)k->graphNodeId, k->correlationId, k->name);
      }
    }
  }
  free(b);
}
static void fin() {
  cuptiActivityFlushAll(1);
  std::lock_guard<std::mutex> l(mu);
  fprintf(out, "END kernels %lu graph_kernels %lu\n", kernels, graph_kernels);
  fclose(out);
}
extern "C" __attribute__((visibility("default"))) int InitializeInjection(void) {
  const char* p = getenv("PROBE_OUT");
  out = fopen(p ? p : "/tmp/probe.txt", "w");
  CUpti_SubscriberHandle s;
  if (cuptiSubscribe(&s, cb, nullptr) != CUPTI_SUCCESS) {
    fprintf(out, "subscribe failed\n");
    return 1;
  }
  for (CUpti_CallbackId id :
       {CUPTI_CBID_RESOURCE_GRAPHNODE_CREATED, CUPTI_CBID_RESOURCE_GRAPHNODE_CLONED,
        CUPTI_CBID_RESOURCE_GRAPH_CREATED, CUPTI_CBID_RESOURCE_GRAPH_CLONED,
        CUPTI_CBID_RESOURCE_GRAPHEXEC_CREATED, CUPTI_CBID_RESOURCE_GRAPH_NODE_UPDATED,
        CUPTI_CBID_RESOURCE_GRAPH_NODE_SET_PARAMS})
    cuptiEnableCallback(1, s, CUPTI_CB_DOMAIN_RESOURCE, id);
  cuptiActivityRegisterCallbacks(req, done);
  cuptiActivityEnable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
  atexit(fin);
  return 1;
}
