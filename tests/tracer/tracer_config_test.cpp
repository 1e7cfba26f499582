// KPROF_TRACE_* settings: every variable read, every unusable value refused with its name.
#include "tracer/tracer_config.h"

#include <gtest/gtest.h>

#include <map>
#include <nlohmann/json.hpp>

#include "support/test_data.h"

namespace kprof::tracer {
namespace {

ConfigResult parse(const std::map<std::string, std::string>& env) {
  return parse_tracer_config([&](const char* name) -> const char* {
    auto it = env.find(name);
    return it == env.end() ? nullptr : it->second.c_str();
  });
}

TEST(TracerConfig, DefaultsWithoutAnyVariable) {
  auto result = parse({});
  ASSERT_TRUE(result.config) << result.error;
  const TracerConfig& c = *result.config;
  EXPECT_EQ(c.output_dir, ".");
  EXPECT_EQ(c.name_pattern, "kprof-trace.{host}.{pid}.{window}.json.gz");
  EXPECT_EQ(c.start, StartMode::kNow);
  EXPECT_EQ(c.delay_s, 0);
  EXPECT_EQ(c.duration_s, 0);
  EXPECT_EQ(c.control_path, "");
  EXPECT_EQ(c.max_events, 2'000'000u);
  EXPECT_EQ(c.memory_mb, 256u);
  EXPECT_EQ(c.device_buffer_mb, 0u);
  EXPECT_EQ(c.raw_dump_dir, "");
  EXPECT_FALSE(c.base_ns);
  EXPECT_TRUE(c.flows);
  EXPECT_TRUE(c.api_records);
}

TEST(TracerConfig, EveryVariableIsRead) {
  auto result = parse({{"KPROF_TRACE_DIR", "/tmp/traces"},
                       {"KPROF_TRACE_NAME", "t.{pid}.{window}.{host}.json.gz"},
                       {"KPROF_TRACE_START", "on-control"},
                       {"KPROF_TRACE_CONTROL", "/tmp/ctl"},
                       {"KPROF_TRACE_DURATION_S", "2.5"},
                       {"KPROF_TRACE_MAX_EVENTS", "1000"},
                       {"KPROF_TRACE_MEMORY_MB", "64"},
                       {"KPROF_TRACE_DEVICE_BUFFER_MB", "32"},
                       {"KPROF_TRACE_DUMP_RAW", "/tmp/raw"},
                       {"KPROF_TRACE_BASE_NS", "1790857026000000000"},
                       {"KPROF_TRACE_FLOWS", "0"},
                       {"KPROF_TRACE_API", "0"}});
  ASSERT_TRUE(result.config) << result.error;
  const TracerConfig& c = *result.config;
  EXPECT_EQ(c.output_dir, "/tmp/traces");
  EXPECT_EQ(c.name_pattern, "t.{pid}.{window}.{host}.json.gz");
  EXPECT_EQ(c.start, StartMode::kOnControl);
  EXPECT_EQ(c.control_path, "/tmp/ctl");
  EXPECT_EQ(c.duration_s, 2.5);
  EXPECT_EQ(c.max_events, 1000u);
  EXPECT_EQ(c.memory_mb, 64u);
  EXPECT_EQ(c.device_buffer_mb, 32u);
  EXPECT_EQ(c.raw_dump_dir, "/tmp/raw");
  EXPECT_EQ(c.base_ns, 1790857026000000000ull);
  EXPECT_FALSE(c.flows);
  EXPECT_FALSE(c.api_records);
  auto delayed = parse({{"KPROF_TRACE_DELAY_S", "30"}, {"KPROF_TRACE_START", "now"}});
  ASSERT_TRUE(delayed.config);
  EXPECT_EQ(delayed.config->delay_s, 30);
}

TEST(TracerConfig, UnusableValuesAreRefusedNamingTheVariable) {
  struct Case {
    std::map<std::string, std::string> env;
    std::string starts_with;
  };
  for (const Case& c : std::vector<Case>{
           {{{"KPROF_TRACE_DELAY_S", "soon"}}, "KPROF_TRACE_DELAY_S=\"soon\": expected seconds"},
           {{{"KPROF_TRACE_DELAY_S", "-1"}}, "KPROF_TRACE_DELAY_S=\"-1\""},
           {{{"KPROF_TRACE_DELAY_S", "inf"}}, "KPROF_TRACE_DELAY_S=\"inf\""},
           {{{"KPROF_TRACE_DURATION_S", "nan"}}, "KPROF_TRACE_DURATION_S=\"nan\""},
           {{{"KPROF_TRACE_DURATION_S", "5s"}}, "KPROF_TRACE_DURATION_S=\"5s\""},
           {{{"KPROF_TRACE_START", "later"}}, "KPROF_TRACE_START=\"later\""},
           {{{"KPROF_TRACE_START", "on-control"}},
            "KPROF_TRACE_START=on-control needs KPROF_TRACE_CONTROL"},
           {{{"KPROF_TRACE_START", "on-control"},
             {"KPROF_TRACE_CONTROL", "/c"},
             {"KPROF_TRACE_DELAY_S", "1"}},
            "KPROF_TRACE_DELAY_S=\"1\": applies to KPROF_TRACE_START=now"},
           {{{"KPROF_TRACE_NAME", "trace.json.gz"}},
            "KPROF_TRACE_NAME=\"trace.json.gz\": must contain {pid} and {window}"},
           {{{"KPROF_TRACE_NAME", "{pid}.json.gz"}},
            "KPROF_TRACE_NAME=\"{pid}.json.gz\": must contain"},
           {{{"KPROF_TRACE_NAME", "d/{pid}.{window}.json.gz"}},
            "KPROF_TRACE_NAME=\"d/{pid}.{window}.json.gz\": a file name"},
           {{{"KPROF_TRACE_NAME", "{pid}.{window}.{rank}.json.gz"}},
            "KPROF_TRACE_NAME=\"{pid}.{window}.{rank}.json.gz\": unknown placeholder {rank}"},
           {{{"KPROF_TRACE_NAME", "{pid}.{window}.json"}},
            "KPROF_TRACE_NAME=\"{pid}.{window}.json\": must end in .json.gz"},
           {{{"KPROF_TRACE_MAX_EVENTS", "0"}}, "KPROF_TRACE_MAX_EVENTS=\"0\""},
           {{{"KPROF_TRACE_MAX_EVENTS", "1e6"}}, "KPROF_TRACE_MAX_EVENTS=\"1e6\""},
           {{{"KPROF_TRACE_MEMORY_MB", "8"}},
            "KPROF_TRACE_MEMORY_MB=\"8\": expected megabytes from 16"},
           {{{"KPROF_TRACE_DEVICE_BUFFER_MB", "0"}}, "KPROF_TRACE_DEVICE_BUFFER_MB=\"0\""},
           {{{"KPROF_TRACE_BASE_NS", "-5"}}, "KPROF_TRACE_BASE_NS=\"-5\""},
           {{{"KPROF_TRACE_FLOWS", "yes"}}, "KPROF_TRACE_FLOWS=\"yes\": expected 0 or 1"},
           {{{"KPROF_TRACE_API", "off"}}, "KPROF_TRACE_API=\"off\": expected 0 or 1"}}) {
    auto result = parse(c.env);
    EXPECT_FALSE(result.config) << c.starts_with;
    EXPECT_EQ(result.error.substr(0, c.starts_with.size()), c.starts_with) << result.error;
  }
}

TEST(TracerConfig, EmptyValuesCountAsUnset) {
  auto result = parse({{"KPROF_TRACE_DELAY_S", ""}, {"KPROF_TRACE_NAME", ""}});
  ASSERT_TRUE(result.config) << result.error;
  EXPECT_EQ(result.config->delay_s, 0);
}

TEST(TracerConfig, OutputNamesPerProcessAndWindow) {
  EXPECT_EQ(expand_output_name("kprof-trace.{host}.{pid}.{window}.json.gz", "node-1", 4242, 3),
            "kprof-trace.node-1.4242.3.json.gz");
  EXPECT_EQ(expand_output_name("{pid}{pid}.{window}.json.gz", "h", 7, 12), "77.12.json.gz");
}

// The H200 PyTorch traces carry Kineto's base; any time inside them floors to it.
TEST(TracerConfig, BaseTimeFollowsKinetosRule) {
  auto trace = nlohmann::json::parse(kprof::testing::read_gzip_text(
      kprof::testing::data_path("h200/budget_eager_decode.json.gz")));
  std::uint64_t base = trace["baseTimeNanoseconds"];
  for (const auto& e : trace["traceEvents"]) {
    if (!e.contains("ts")) continue;
    auto realtime = base + static_cast<std::uint64_t>(e["ts"].get<double>() * 1000);
    EXPECT_EQ(kineto_base_time_ns(realtime), base);
    break;
  }
  EXPECT_EQ(kineto_base_time_ns(base), base);
  EXPECT_EQ(kineto_base_time_ns(base - 1), base - 7'889'238ull * 1'000'000'000ull);
}

}  // namespace
}  // namespace kprof::tracer
