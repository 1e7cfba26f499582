// Hand-built CUPTI activity buffers: records laid out one after another as CUPTI writes them
// (every 13.0 record size is a multiple of 8), walked by CUPTI's own cuptiActivityGetNextRecord.
#pragma once

#include <cupti.h>

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

namespace kprof::tracer::testing {

class CuptiBuffer {
 public:
  template <class Record>
  Record& add(CUpti_ActivityKind kind) {
    static_assert(sizeof(Record) % 8 == 0);
    size_t offset = bytes_;
    bytes_ += sizeof(Record);
    words_.resize(bytes_ / 8, 0);
    auto* record = reinterpret_cast<Record*>(data() + offset);
    record->kind = kind;
    return *record;
  }
  std::uint8_t* data() { return reinterpret_cast<std::uint8_t*>(words_.data()); }
  size_t size() const { return bytes_; }

  // References stay valid only until the next add(): build one record at a time.
  CUpti_ActivityAPI& api(CUpti_ActivityKind kind, CUpti_CallbackId cbid, std::uint32_t correlation,
                         std::uint64_t start, std::uint64_t end, std::uint32_t pid,
                         std::uint32_t tid) {
    auto& a = add<CUpti_ActivityAPI>(kind);
    a.cbid = cbid;
    a.correlationId = correlation;
    a.start = start;
    a.end = end;
    a.processId = pid;
    a.threadId = tid;
    return a;
  }
  CUpti_ActivityKernel10& kernel(const char* name, std::uint32_t correlation, std::uint64_t start,
                                 std::uint64_t end, std::uint32_t device, std::uint32_t stream) {
    auto& k = add<CUpti_ActivityKernel10>(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
    k.name = name;
    k.correlationId = correlation;
    k.start = start;
    k.end = end;
    k.deviceId = device;
    k.contextId = 1;
    k.streamId = stream;
    k.gridX = 132, k.gridY = 1, k.gridZ = 1;
    k.blockX = 256, k.blockY = 1, k.blockZ = 1;
    k.registersPerThread = 64;
    k.staticSharedMemory = 1024;
    k.dynamicSharedMemory = 4096;
    return k;
  }
  CUpti_ActivityMarker2& marker(std::uint32_t flags, std::uint32_t id, std::uint64_t timestamp,
                                const char* name, std::uint32_t pid, std::uint32_t tid) {
    auto& m = add<CUpti_ActivityMarker2>(CUPTI_ACTIVITY_KIND_MARKER);
    m.flags = static_cast<CUpti_ActivityFlag>(flags);
    m.id = id;
    m.timestamp = timestamp;
    m.name = name;
    m.objectKind = CUPTI_ACTIVITY_OBJECT_THREAD;
    m.objectId.pt.processId = pid;
    m.objectId.pt.threadId = tid;
    return m;
  }

 private:
  std::vector<std::uint64_t> words_;
  size_t bytes_ = 0;
};

}  // namespace kprof::tracer::testing
