// Per-op attribution on real PyTorch traces. Totals per op against an independent computation are
// checked by op_attribution_reference.py (ctest op_attribution_matches_reference); here: the
// answer does not depend on the order events arrive in (the sweep resolves everything at
// finish()), every GPU activity lands in exactly one bucket, and a trace without CPU ops puts
// everything in the named no-operator bucket.
#include "timeline/op_attribution.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <string>
#include <vector>

#include "importers/common/read_trace.h"
#include "support/test_data.h"

namespace kprof::timeline {
namespace {

using testing::data_path;

// The trace's events with their text owned, to be replayed in another order.
struct OwnedEvent {
  std::string category, name;
  importers::TraceEvent event;
};

class Recorder final : public importers::TraceEventSink {
 public:
  void on_event(const importers::TraceEvent& event) override {
    events.push_back({std::string(event.category), std::string(event.name), event});
  }
  std::vector<OwnedEvent> events;
};

OpAttribution replay(std::vector<OwnedEvent>& events, AttributeBy by) {
  OpAttributionBuilder builder(by);
  for (OwnedEvent& owned : events) {
    owned.event.category = owned.category;
    owned.event.name = owned.name;
    if (builder.wants_category(owned.category)) builder.on_event(owned.event);
  }
  return builder.finish();
}

OpAttribution attribute(const std::string& file, AttributeBy by = AttributeBy::kOp) {
  OpAttributionBuilder builder(by);
  importers::read_trace(data_path(file), builder);
  return builder.finish();
}

TEST(OpAttribution, DoesNotDependOnTheOrderEventsArrive) {
  for (std::string file : {"h200/trace_eager.json.gz", "h200/budget_eager_decode.json.gz"}) {
    SCOPED_TRACE(file);
    Recorder recorder;
    importers::read_trace(data_path(file), recorder);
    OpAttribution in_file_order = replay(recorder.events, AttributeBy::kOp);
    std::reverse(recorder.events.begin(), recorder.events.end());
    OpAttribution reversed = replay(recorder.events, AttributeBy::kOp);
    std::shuffle(recorder.events.begin(), recorder.events.end(), std::mt19937(14));
    OpAttribution shuffled = replay(recorder.events, AttributeBy::kOp);
    ASSERT_GT(in_file_order.ops.size(), 3u);
    for (const OpAttribution* other : {&reversed, &shuffled}) {
      ASSERT_EQ(other->ops.size(), in_file_order.ops.size());
      for (size_t i = 0; i < in_file_order.ops.size(); ++i) {
        EXPECT_EQ(other->ops[i].name, in_file_order.ops[i].name);
        EXPECT_EQ(other->ops[i].kernels, in_file_order.ops[i].kernels);
        EXPECT_NEAR(other->ops[i].total_us, in_file_order.ops[i].total_us, 1e-6);
      }
    }
  }
}

TEST(OpAttribution, EveryGpuActivityLandsInOneBucket) {
  OpAttribution ops = attribute("h200/trace_eager.json.gz");
  std::uint64_t kernels = 0;
  double total = 0, share = 0;
  for (const OpStats& op : ops.ops) {
    kernels += op.kernels;
    total += op.total_us;
    share += op.share;
  }
  EXPECT_EQ(kernels, ops.gpu_events);
  EXPECT_EQ(ops.gpu_events, 786u);  // 726 kernels, 48 memcpy, 12 memset (python's json count)
  EXPECT_NEAR(total, ops.gpu_time_us, 1e-6);
  EXPECT_NEAR(share, 1.0, 1e-9);
}

// A CUDA-graph replay traced without CPU activities: no cpu_op at all, so every kernel is in the
// named bucket, none silently dropped.
TEST(OpAttribution, ATraceWithoutCpuOpsPutsEverythingInTheNoOperatorBucket) {
  OpAttribution ops = attribute("h200/budget_graph_decode.json.gz");
  EXPECT_EQ(ops.cpu_ops, 0u);
  ASSERT_EQ(ops.ops.size(), 1u);
  EXPECT_EQ(ops.ops[0].name, kNoOperator);
  EXPECT_EQ(ops.ops[0].kernels, 240u);
  EXPECT_EQ(ops.unattributed, 240u);
}

// None of the committed traces was recorded with_modules=True: --by module says so by putting
// all GPU work in the no-module bucket rather than inventing paths.
TEST(OpAttribution, ByModuleWithoutModuleFramesIsAllNoModule) {
  OpAttribution ops = attribute("h200/trace_eager.json.gz", AttributeBy::kModule);
  EXPECT_EQ(ops.cpu_ops, 0u);
  ASSERT_EQ(ops.ops.size(), 1u);
  EXPECT_EQ(ops.ops[0].name, kNoModule);
  EXPECT_EQ(ops.ops[0].kernels, ops.gpu_events);
}

}  // namespace
}  // namespace kprof::timeline
