// libFuzzer target for the streaming Chrome trace reader.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "common/error.h"
#include "importers/chrome_trace/chrome_trace_reader.h"

namespace {
class DiscardingSink final : public kprof::importers::TraceEventSink {
 public:
  void on_event(const kprof::importers::TraceEvent& event) override {
    volatile size_t sink = event.name.size() + event.category.size();
    (void)sink;
  }
};
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::string_view bytes(reinterpret_cast<const char*>(data), size);
  DiscardingSink sink;
  try {
    kprof::importers::read_chrome_trace_bytes("fuzz.json", bytes, sink);
  } catch (const kprof::InputError&) {
  }
  return 0;
}
