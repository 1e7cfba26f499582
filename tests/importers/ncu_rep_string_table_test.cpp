// Issue 43, "a report refused for its string table": a kernel result may name metric ids that a
// LATER block header's string table adds. The metric names of a .ncu-rep are ids into the string
// tables of all its block headers, concatenated in file order; an ncu 2023.3 report of an H800
// (public: flyinglandlord/sglang @ 16ab0c9, profile.ncu-rep) has its first result name ids
// 967-969 while its block header holds 967 names, and three later block headers (no results of
// their own) add one name each (nvlrx__bytes.sum.per_second, nvltx__bytes.sum.per_second,
// lts__gcomp_input_sectors.sum). kprof refused it ("names metric id 967 but the string table
// holds only 967 names"). The fixtures here are written with kprof's own wire schema in that
// shape: the container as the reference material describes it (magic, length-prefixed file
// header, then length-prefixed block headers each followed by its payload of length-prefixed
// results).
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "common/error.h"
#include "importers/importer.h"
#include "importers/ncu_rep/ncu_report_wire.pb.h"

namespace kprof::importers {
namespace {

std::string length_prefixed(const google::protobuf::MessageLite& message) {
  std::string bytes = message.SerializeAsString();
  std::uint32_t size = static_cast<std::uint32_t>(bytes.size());
  std::string out;
  for (int i = 0; i < 4; ++i) out.push_back(static_cast<char>(size >> (8 * i) & 0xff));
  return out + bytes;
}

// A block: its header (with these names appended to the string table) and its results.
std::string block(const std::vector<std::string>& names,
                  const std::vector<ncu_wire::KernelResult>& results, bool session = false) {
  std::string payload;
  for (const ncu_wire::KernelResult& result : results) payload += length_prefixed(result);
  ncu_wire::BlockHeader header;
  header.set_num_sources(0);
  header.set_num_results(static_cast<std::uint32_t>(results.size()));
  auto* table = header.mutable_string_table();
  for (const std::string& name : names) table->add_strings(name);
  header.set_payload_size(static_cast<std::uint32_t>(payload.size()));
  header.mutable_process()->set_process_id(406854);
  header.mutable_process()->set_process_name("python");
  if (session) {
    ncu_wire::DeviceAttributes* device = header.mutable_session()->add_devices();
    device->set_id(0);
    device->set_name("NVIDIA H800");
  }
  return length_prefixed(header) + payload;
}

ncu_wire::KernelResult result_naming(const std::vector<std::pair<std::uint32_t, double>>& ids) {
  ncu_wire::KernelResult result;
  result.set_function_name("pod_attention_kernel");
  result.mutable_grid()->set_x(132);
  result.mutable_block()->set_x(128);
  for (auto [id, value] : ids) {
    ncu_wire::MetricResult* metric = result.add_metrics();
    metric->set_name_id(id);
    metric->mutable_value()->set_double_value(value);
  }
  return result;
}

std::string report(const std::vector<std::string>& blocks) {
  ncu_wire::FileHeader file_header;
  file_header.set_version(7);
  std::string bytes = std::string("NVR\0", 4) + length_prefixed(file_header);
  for (const std::string& b : blocks) bytes += b;
  return bytes;
}

// The H800 report's shape: names 0-1 in the result's own block header, names 2 and 3 added by
// two later block headers that hold no result.
std::vector<std::string> later_names_blocks(std::uint32_t last_id_named) {
  const std::vector<std::string> names{"gpu__time_duration.sum",
                                       "sm__throughput.avg.pct_of_peak_sustained_elapsed"};
  return {
      block(names, {result_naming({{0, 1500.0}, {1, 12.5}, {2, 0.0}, {last_id_named, 7.0}})}, true),
      block({"nvlrx__bytes.sum.per_second"}, {}), block({"lts__gcomp_input_sectors.sum"}, {})};
}

std::string later_names_report(std::uint32_t last_id_named) {
  return report(later_names_blocks(last_id_named));
}

TEST(NcuRepStringTableSpreadOverBlocks, AResultNamesMetricsALaterBlockHeaderAdds) {
  model::Report read = import_bytes("h800.ncu-rep", later_names_report(3));
  ASSERT_EQ(read.kernels.size(), 1u);
  const model::Kernel& kernel = read.kernels[0];
  EXPECT_EQ(kernel.number("gpu__time_duration.sum"), 1500.0);
  EXPECT_EQ(kernel.number("sm__throughput.avg.pct_of_peak_sustained_elapsed"), 12.5);
  EXPECT_EQ(kernel.number("nvlrx__bytes.sum.per_second"), 0.0);
  EXPECT_EQ(kernel.number("lts__gcomp_input_sectors.sum"), 7.0);
  EXPECT_EQ(kernel.metrics.size(), 4u);
  ASSERT_EQ(read.devices.size(), 1u);
  EXPECT_EQ(read.devices[0].name, "NVIDIA H800");
}

// Parallel decoding must not change it: every result sees the whole table.
TEST(NcuRepStringTableSpreadOverBlocks, EveryResultSeesTheWholeTableWhateverTheThreads) {
  std::vector<std::string> blocks;
  std::vector<ncu_wire::KernelResult> results;
  for (int i = 0; i < 8; ++i) results.push_back(result_naming({{0, 1.0 + i}, {2, 10.0 + i}}));
  blocks.push_back(block({"gpu__time_duration.sum", "unused"}, results, true));
  blocks.push_back(block({"dram__bytes.sum"}, {}));
  std::string bytes = report(blocks);
  for (unsigned threads : {1u, 4u}) {
    ImportOptions options;
    options.threads = threads;
    model::Report read = import_bytes("r.ncu-rep", bytes, options);
    ASSERT_EQ(read.kernels.size(), 8u);
    for (size_t i = 0; i < read.kernels.size(); ++i) {
      EXPECT_EQ(read.kernels[i].number("dram__bytes.sum"), 10.0 + static_cast<double>(i));
    }
  }
}

// An id beyond every table of the file is still a damaged report: one error naming the file and
// the result's byte.
TEST(NcuRepStringTableSpreadOverBlocks, AnIdBeyondEveryTableIsStillRefused) {
  std::string bytes = later_names_report(4);
  // The result's length prefix follows the file header and the first block's header.
  const std::string first_block = later_names_blocks(4).front();
  const size_t result_at =
      report({}).size() + first_block.size() -
      (4 + result_naming({{0, 1500.0}, {1, 12.5}, {2, 0.0}, {4, 7.0}}).SerializeAsString().size());
  try {
    import_bytes("h800.ncu-rep", bytes);
    FAIL() << "an id beyond the string tables was accepted";
  } catch (const InputError& error) {
    EXPECT_EQ(error.code(), ExitCode::kInputInvalid);
    EXPECT_EQ(error.path(), "h800.ncu-rep");
    EXPECT_EQ(error.position().kind, InputPosition::Kind::kByte);
    EXPECT_EQ(error.position().value, result_at);
    EXPECT_NE(error.message().find("names metric id 4"), std::string::npos) << error.message();
    EXPECT_NE(error.message().find("hold only 4 names"), std::string::npos) << error.message();
  }
}

}  // namespace
}  // namespace kprof::importers
