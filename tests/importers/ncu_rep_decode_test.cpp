// The .ncu-rep reader's decoding choices must not change what it reads: kernel results decoded
// in parallel or one by one, with or without per-instance values, and its own metric decoder
// against the message definitions protobuf generates (ncu_report_wire.proto), on real reports
// and on damaged copies of them.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <mutex>
#include <random>
#include <set>

#include "common/error.h"
#include "common/file_bytes.h"
#include "importers/importer.h"
#include "importers/ncu_rep/ncu_report_wire.pb.h"
#include "render/report_json.h"
#include "support/test_data.h"

namespace kprof::importers {
namespace {

using testing::data_path;

const char* const kReports[] = {"h200/big_full.ncu-rep.zst",
                                "h200/big_basic.ncu-rep.zst",
                                "h200/big_min.ncu-rep.zst",
                                "h200/two_kernels_full.ncu-rep.zst",
                                "h200/multi_process_basic.ncu-rep.zst",
                                "h200/bottleneck_suite_full.ncu-rep.zst",
                                "h200/diff_suite_basic_base_a.ncu-rep.zst"};

// Everything the model holds, instances included, as one text.
std::string everything(const model::Report& report) {
  std::vector<size_t> all(report.kernels.size());
  for (size_t i = 0; i < all.size(); ++i) all[i] = i;
  render::JsonOptions options;
  options.include_instances = true;
  return render::json_text(render::report_json(report, all, options));
}

TEST(NcuRepDecode, ParallelAndSerialGiveTheSameReport) {
  const std::vector<const char*> reports(std::begin(kReports), std::end(kReports));
  for (const char* name : testing::sanitizer_sample(reports)) {
    SCOPED_TRACE(name);
    FileBytes file = read_input_file(data_path(name));
    ImportOptions serial, parallel;
    serial.threads = 1;
    parallel.threads = 4;  // more than this machine's cores: interleavings differ run to run
    std::string expected = everything(import_bytes(name, file.bytes, serial));
    for (std::size_t run = 0; run < testing::sanitizer_share(3); ++run) {
      EXPECT_EQ(everything(import_bytes(name, file.bytes, parallel)), expected);
    }
  }
}

// A mapped report's pages are given back as the reader is done with them (ImportOptions::
// done_with): every byte is handed back, each slice of the input, and the
// model does not depend on it (it never refers to the input's bytes: they are overwritten here
// before it is read).
TEST(NcuRepDecode, EveryBlockIsHandedBackAndTheModelOwnsItsBytes) {
  for (const char* name : kReports) {
    std::string bytes = read_input_file(data_path(name)).bytes;
    const std::string reference = everything(import_bytes(name, bytes));
    std::mutex lock;
    std::vector<std::pair<size_t, size_t>> handed;  // [begin, end) offsets
    ImportOptions options;
    options.threads = 3;
    options.done_with = [&](std::string_view part) {
      std::lock_guard guard(lock);
      ASSERT_GE(part.data(), bytes.data());
      ASSERT_LE(part.data() + part.size(), bytes.data() + bytes.size());
      size_t begin = static_cast<size_t>(part.data() - bytes.data());
      handed.emplace_back(begin, begin + part.size());
    };
    model::Report report = import_bytes(name, bytes, options);
    std::fill(bytes.begin(), bytes.end(), '\xA5');
    EXPECT_EQ(everything(report), reference) << name;
    std::sort(handed.begin(), handed.end());
    size_t covered = 0;  // every byte before it was handed back
    for (auto [begin, end] : handed) {
      if (begin > covered) break;  // a gap
      covered = std::max(covered, end);
    }
    EXPECT_EQ(covered, bytes.size()) << name;
  }
}

TEST(NcuRepDecode, SkippingInstancesKeepsEveryAggregate) {
  for (const char* name : kReports) {
    SCOPED_TRACE(name);
    FileBytes file = read_input_file(data_path(name));
    model::Report with = import_bytes(name, file.bytes);
    ImportOptions options;
    options.instances = false;
    model::Report without = import_bytes(name, file.bytes, options);
    size_t instances = 0;
    for (model::Kernel& kernel : with.kernels) {
      for (model::Metric& metric : kernel.metrics) {
        instances += metric.instances.size();
        metric.instances.clear();
      }
    }
    if (std::string(name).find("full") != std::string::npos) {
      EXPECT_GT(instances, 0u);
    }
    EXPECT_EQ(everything(without), everything(with));
  }
}

// --- the generated parser as the reference ---

struct ResultSpan {
  size_t offset;  // of the message, after its length
  size_t size;
};

std::uint32_t u32_at(std::string_view bytes, size_t at) {
  std::uint32_t v;
  std::memcpy(&v, bytes.data() + at, 4);  // little-endian host, as the container
  return v;
}

// The kernel results of a well-formed report, located by walking the container as documented
// in ncu_rep_importer.h.
std::vector<ResultSpan> kernel_results(std::string_view bytes,
                                       std::vector<std::string>* strings = nullptr) {
  std::vector<ResultSpan> results;
  size_t at = 4;
  at += 4 + u32_at(bytes, at);  // file header
  while (at < bytes.size()) {
    std::uint32_t header_size = u32_at(bytes, at);
    ncu_wire::BlockHeader header;
    EXPECT_TRUE(header.ParseFromArray(bytes.data() + at + 4, static_cast<int>(header_size)));
    at += 4 + header_size;
    if (strings) {
      for (const auto& s : header.string_table().strings()) strings->push_back(s);
    }
    size_t end = at + header.payload_size();
    for (std::uint32_t i = 0; i < header.num_sources(); ++i) at += 4 + u32_at(bytes, at);
    for (std::uint32_t i = 0; i < header.num_results(); ++i) {
      results.push_back({at + 4, u32_at(bytes, at)});
      at += 4 + u32_at(bytes, at);
    }
    at = end;
  }
  return results;
}

std::optional<model::MetricValue> reference_value(const ncu_wire::MetricValue& value) {
  if (value.has_double_value()) return model::MetricValue::of_double(value.double_value());
  if (value.has_uint64_value()) return model::MetricValue::of_uint(value.uint64_value());
  if (value.has_float_value()) return model::MetricValue::of_double(value.float_value());
  if (value.has_uint32_value()) return model::MetricValue::of_uint(value.uint32_value());
  if (value.has_string_value()) return model::MetricValue::of_string(value.string_value());
  return std::nullopt;
}

// Equal, NaN included (ncu records NaN for some derived metrics).
bool same(const model::MetricValue& a, const model::MetricValue& b) {
  return a.kind() == b.kind() && a.integer() == b.integer() && a.text() == b.text() &&
         (a.real() == b.real() || (std::isnan(a.real()) && std::isnan(b.real())));
}

// A kernel's metrics as text (name id, value, instances), by the generated parser.
std::string reference_metrics(const ncu_wire::KernelResult& result) {
  std::string text;
  for (const auto& metric : result.metrics()) {
    auto value = metric.has_value() ? reference_value(metric.value()) : std::nullopt;
    if (!value) continue;
    text += std::to_string(metric.name_id()) + "=" + value->to_string() + "[";
    for (const auto& instance : metric.instances()) {
      auto v = reference_value(instance.value());
      if (!v) continue;
      text += reference_value(instance.correlation_id())
                  .value_or(model::MetricValue::of_uint(0))
                  .to_string() +
              ":" + v->to_string() + ",";
    }
    text += "]";
  }
  return text;
}

TEST(NcuRepDecode, MetricsMatchTheGeneratedParser) {
  // two_kernels_full: a --set full kernel with instanced metrics. Every metric the generated
  // parser finds with a value (the first of a repeated name, as the model keeps) must be in the
  // model with the same value and the same instances, and nothing else.
  FileBytes file = read_input_file(data_path("h200/two_kernels_full.ncu-rep.zst"));
  std::vector<std::string> strings;
  std::vector<ResultSpan> results = kernel_results(file.bytes, &strings);
  model::Report report = import_bytes("two_kernels_full", file.bytes);
  ASSERT_EQ(results.size(), report.kernels.size());
  for (size_t k = 0; k < results.size(); ++k) {
    ncu_wire::KernelResult result;
    ASSERT_TRUE(result.ParseFromArray(file.bytes.data() + results[k].offset,
                                      static_cast<int>(results[k].size)));
    std::set<std::string> seen;
    size_t instances = 0;
    for (const auto& metric : result.metrics()) {
      auto value = metric.has_value() ? reference_value(metric.value()) : std::nullopt;
      if (!value) continue;
      ASSERT_LT(metric.name_id(), strings.size());
      const std::string& name = strings[metric.name_id()];
      if (!seen.insert(name).second) continue;
      const model::Metric* found = report.kernels[k].find(name);
      ASSERT_NE(found, nullptr) << name;
      EXPECT_TRUE(same(found->value, *value)) << name;
      std::vector<model::MetricInstance> expected;
      for (const auto& instance : metric.instances()) {
        auto v = reference_value(instance.value());
        if (!v) continue;
        expected.push_back(
            {reference_value(instance.correlation_id()).value_or(model::MetricValue::of_uint(0)),
             *v});
      }
      ASSERT_EQ(found->instances.size(), expected.size()) << name;
      for (size_t i = 0; i < expected.size(); ++i) {
        EXPECT_TRUE(same(found->instances[i].correlation_id, expected[i].correlation_id)) << name;
        EXPECT_TRUE(same(found->instances[i].value, expected[i].value)) << name;
      }
      instances += expected.size();
    }
    EXPECT_EQ(report.kernels[k].metrics.size(), seen.size());
    EXPECT_GT(instances, 1000u);
  }
}

TEST(NcuRepDecode, DamagedResultsAreRefusedExactlyWhenTheGeneratedParserRefusesThem) {
  // Random single-byte changes inside kernel results: the reader must refuse a result exactly
  // when the generated parser does (a "corrupted kernel result" at its offset) and otherwise
  // read the same metrics.
  FileBytes file = read_input_file(data_path("h200/two_kernels_full.ncu-rep.zst"));
  std::vector<ResultSpan> results = kernel_results(file.bytes);
  ASSERT_FALSE(results.empty());
  std::mt19937_64 random(17);
  int refused = 0, accepted = 0;
  const int trials = static_cast<int>(testing::sanitizer_share(300));
  for (int trial = 0; trial < trials; ++trial) {
    const ResultSpan& span = results[random() % results.size()];
    std::string damaged = file.bytes;
    // Mostly near the start of the result (tags, names, the first metrics), some anywhere.
    size_t at = span.offset +
                (trial % 2 ? random() % std::min<size_t>(span.size, 4096) : random() % span.size);
    damaged[at] = static_cast<char>(random());
    ncu_wire::KernelResult reference;
    bool reference_ok =
        reference.ParseFromArray(damaged.data() + span.offset, static_cast<int>(span.size));
    ImportOptions serial;
    serial.threads = 1;
    try {
      model::Report report = import_bytes("damaged", damaged, serial);
      EXPECT_TRUE(reference_ok) << "accepted what protobuf refuses, byte " << at;
      if (!reference_ok) continue;
      ++accepted;
      // Same metrics: compare the generated parser's list with a re-read of the same bytes
      // by the reader, through counts of values and instances.
      size_t k = static_cast<size_t>(&span - results.data());
      size_t expected = 0;
      for (const auto& metric : reference.metrics()) {
        if (metric.name_id() < 100000 && metric.has_value() && reference_value(metric.value()))
          ++expected;
      }
      // Duplicated names keep the first (sort_metrics), so the model may hold fewer.
      EXPECT_LE(report.kernels[k].metrics.size(), expected);
      EXPECT_EQ(reference_metrics(reference).empty(), report.kernels[k].metrics.empty());
    } catch (const InputError& error) {
      std::string message = error.what();
      if (message.find("corrupted kernel result") != std::string::npos) {
        EXPECT_FALSE(reference_ok)
            << "refused what protobuf accepts, byte " << at << ": " << message;
        ++refused;
      }
      // Else a name id outside the string table or a section of the container: not this
      // parser's concern.
    }
  }
  // Both outcomes occur: over 10 of 300 each (at least one each in the sanitizers' 75).
  const int least = testing::under_sanitizers() ? 0 : 10;
  EXPECT_GT(refused, least);
  EXPECT_GT(accepted, least);
}

}  // namespace
}  // namespace kprof::importers
