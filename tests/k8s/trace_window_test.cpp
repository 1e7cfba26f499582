// The pure parts of a trace window in a traced sister: the control write's argv and the reading
// of the tracer's folder. The window itself runs against the real kubectl in k8s_test.py.
#include "k8s/trace_window.h"

#include <gtest/gtest.h>

namespace kprof::k8s {
namespace {

TEST(TraceWindow, ControlWordsReachThePodAsPositionalParameters) {
  std::vector<std::string> call =
      control_call({"serving", "llama-70b-kprof-ab12c-x", "server"}, "start");
  ASSERT_EQ(call.size(), 13u);
  EXPECT_EQ(std::vector<std::string>(call.begin(), call.begin() + 9),
            (std::vector<std::string>{"exec", "-n", "serving", "llama-70b-kprof-ab12c-x", "-c",
                                      "server", "--", "sh", "-c"}));
  // The script names no path and no word: both arrive as $1 and $2.
  EXPECT_EQ(call[9].find("/kprof-tracer"), std::string::npos);
  EXPECT_EQ(call[9].find("start"), std::string::npos);
  EXPECT_EQ(call[10], "kprof-control");
  EXPECT_EQ(call[11], "/kprof-tracer/control");
  EXPECT_EQ(call[12], "start");
  EXPECT_EQ(control_call({"serving", "p", "server"}, "stop").back(), "stop");
}

TEST(TraceWindow, ListingSeparatesFinishedFromUnfinishedWindows) {
  // As `ls -1 /kprof-tracer` prints the volume: the library, CUPTI, the control file and its
  // temporary, finished and unfinished windows of two processes.
  TraceListing listing = parse_trace_listing(
      "control\ncontrol.kprof-tmp\nkprof-trace.node-7.4201.1.json.gz.partial\n"
      "kprof-trace.node-7.4200.1.json.gz\nlibcupti.so.13\nlibkprof_tracer.so\n"
      "kprof-trace.node-7.4200.1.json\nnot-kprof-trace.node.1.1.json.gz\r\n"
      "kprof-trace.node-7.4202.1.json.gz\r\n");
  EXPECT_EQ(listing.finished, (std::vector<std::string>{"kprof-trace.node-7.4200.1.json.gz",
                                                        "kprof-trace.node-7.4202.1.json.gz"}));
  EXPECT_EQ(listing.partial,
            (std::vector<std::string>{"kprof-trace.node-7.4201.1.json.gz.partial"}));
  EXPECT_TRUE(parse_trace_listing("").finished.empty());
}

TEST(TraceWindow, AWindowWithoutFilesFailed) {
  TraceWindowResult result;
  EXPECT_TRUE(result.failed());
  result.files.push_back({"/kprof-tracer/a.json.gz", "a.json.gz", "x", "x"});
  EXPECT_FALSE(result.failed());
  result.diagnoses.push_back({"trace_dropped", false, "", ""});  // a warning
  EXPECT_FALSE(result.failed());
  result.diagnoses.push_back({"copy_failed", true, "", ""});
  EXPECT_TRUE(result.failed());
}

}  // namespace
}  // namespace kprof::k8s
