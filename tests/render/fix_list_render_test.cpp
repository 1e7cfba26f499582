// What a fix list says before its first row (issue 43): on a held-out MoE decode step, host-bound
// (the GPU busy 3.4% of the steps' wall time) and with its grouped GEMM (52% of the GPU time) not
// joined, the list opened with its kernel table and a "1.005×" three lines down.
#include "render/fix_list_render.h"

#include <gtest/gtest.h>

namespace kprof::render {
namespace {

timeline::FixList one_group_list() {
  timeline::FixList list;
  list.pipeline_us = 10000;
  list.steps = 10;
  list.step_us = 900;
  timeline::FixGroup g;
  g.kernel = "elementwise";
  g.trace_launches = 300;
  g.trace_total_us = 3000;
  list.groups.push_back(g);
  return list;
}

// Class "the gate comes first".
TEST(FixListText, HostBoundStepsAreSaidInTheFirstLine) {
  timeline::FixList list = one_group_list();
  list.gate = timeline::StepGate{10, 10, 0, 1000, 34};
  std::string text = fix_list_text(list, 10, 40);
  EXPECT_EQ(text.rfind("the steps are host-bound (10 of 10 by kprof budget): the GPU is busy 3.4% "
                       "of each step's 1 ms wall time",
                       0),
            0u)
      << text;
  // At most all the busy time: 1000 / (1000 - 34).
  EXPECT_NE(text.find("at most 1.04× faster"), std::string::npos) << text;
  // Kernel-bound steps: no such line; the list starts with itself.
  list.gate = timeline::StepGate{10, 0, 10, 1000, 950};
  EXPECT_EQ(fix_list_text(list, 10, 40).rfind("fix list:", 0), 0u);
}

// Class "the kernel that matters is not joined": a trace kernel with more time than every joined
// group, which no captured launch was joined to, is named before any row.
TEST(FixListText, ALargeUnjoinedTraceKernelIsSaidBeforeAnyRow) {
  timeline::FixList list = one_group_list();
  list.trace_kernel_us = 9000;
  list.joined_kernel_us = 3000;
  list.unjoined_trace_kernels = {{"cutlass::device_kernel<GroupedGemm>", 4700}, {"tiny", 20}};
  std::string text = fix_list_text(list, 10, 40);
  EXPECT_EQ(text.rfind("the captures cover 33.3% of the trace's kernel time; its longest kernels "
                       "no captured launch was joined to: cutlass::device_kernel<GroupedGemm> "
                       "(52.2%)",
                       0),
            0u)
      << text;
  // Covered well, with nothing unjoined larger than a joined group: not said.
  list.joined_kernel_us = 8980;
  list.unjoined_trace_kernels = {{"tiny", 20}};
  EXPECT_EQ(text.find("the captures cover"), 0u);
  EXPECT_EQ(fix_list_text(list, 10, 40).find("the captures cover"), std::string::npos);
}

}  // namespace
}  // namespace kprof::render
