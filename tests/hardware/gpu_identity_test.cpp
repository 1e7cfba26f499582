// Issue 43, "GPU identity": the hardware database's patterns were unanchored and first-match, so
// "NVIDIA GH200 480GB" was taken for an H200 SXM (4.8 TB/s instead of 4.0), "NVIDIA A100-SXM4-40GB"
// and "NVIDIA A100 80GB PCIe" for the A100 SXM 80GB, and `kprof gpus NAME` disagreed with
// `analyze` about the same name. The device names below are the ones CUDA and ncu report
// (device__attribute_display_name; those of the public reports kprof was checked on among them).
#include <gtest/gtest.h>

#include <cctype>
#include <set>

#include "hardware/gpu_specs.h"

namespace kprof::hardware {
namespace {

const GpuDatabase& builtin() {
  static const GpuDatabase db = load_gpu_database();
  return db;
}

struct Named {
  const char* device;  // as a report records it
  const char* entry;   // the database entry it is, "" for none
};

const Named kDevices[] = {
    {"NVIDIA GH200 480GB", "GH200"},
    {"NVIDIA GH200 144G HBM3e", "GH200 144GB HBM3e"},
    {"NVIDIA H200", "H200 SXM"},
    {"NVIDIA H200 NVL", "H200 NVL"},
    {"NVIDIA H20", "H20"},
    {"NVIDIA H100 80GB HBM3", "H100 SXM"},
    {"NVIDIA H100 PCIe", "H100 PCIe"},
    {"NVIDIA H100 NVL", "H100 NVL"},
    {"NVIDIA H800", "H800 SXM"},
    {"NVIDIA H800 PCIe", "H800 PCIe"},
    {"NVIDIA A100-SXM4-40GB", "A100 SXM 40GB"},
    {"NVIDIA A100-SXM4-80GB", "A100 SXM 80GB"},
    {"NVIDIA A100-PCIE-40GB", "A100 PCIe 40GB"},
    {"NVIDIA A100 80GB PCIe", "A100 PCIe 80GB"},
    {"NVIDIA B200", "B200"},
    {"NVIDIA GB200", "GB200"},
    {"NVIDIA B300 SXM6 AC", "B300"},
    {"NVIDIA GB10", "GB10 (DGX Spark)"},
    {"NVIDIA RTX PRO 6000 Blackwell Workstation Edition", "RTX PRO 6000 Blackwell"},
    {"NVIDIA L40S", "L40S"},
    {"NVIDIA L40", "L40"},
    {"NVIDIA L4", "L4"},
    {"NVIDIA A10G", "A10G"},
    {"NVIDIA A10", "A10"},
    {"NVIDIA A40", "A40"},
    {"Tesla T4", "T4"},
    {"Tesla V100-SXM2-32GB", "V100 SXM2"},
    {"Tesla V100-SXM2-16GB", "V100 SXM2"},
    {"Tesla V100-PCIE-16GB", "V100 PCIe"},
    {"Tesla V100S-PCIE-32GB", "V100S PCIe"},
    {"NVIDIA GeForce RTX 2080 Ti", "RTX 2080 Ti"},
    {"NVIDIA GeForce RTX 3070", "RTX 3070"},
    {"NVIDIA GeForce RTX 3080", "RTX 3080"},
    {"NVIDIA GeForce RTX 3090", "RTX 3090"},
    {"NVIDIA GeForce RTX 4060", "RTX 4060"},
    {"NVIDIA GeForce RTX 4070", "RTX 4070"},
    {"NVIDIA GeForce RTX 4080", "RTX 4080"},
    {"NVIDIA GeForce RTX 4090", "RTX 4090"},
    {"NVIDIA GeForce RTX 4060 Laptop GPU", "RTX 4060 Laptop"},
    {"NVIDIA GeForce RTX 4070 Laptop GPU", "RTX 4070 Laptop"},
    {"NVIDIA GeForce RTX 4080 Laptop GPU", "RTX 4080 Laptop"},
    {"NVIDIA GeForce RTX 4090 Laptop GPU", "RTX 4090 Laptop"},
    {"NVIDIA GeForce RTX 5060", "RTX 5060"},
    {"NVIDIA GeForce RTX 5070", "RTX 5070"},
    {"NVIDIA GeForce RTX 5080", "RTX 5080"},
    {"NVIDIA GeForce RTX 5090", "RTX 5090"},
    {"NVIDIA GeForce RTX 5060 Laptop GPU", "RTX 5060 Laptop"},
    {"NVIDIA GeForce RTX 5070 Laptop GPU", "RTX 5070 Laptop"},
    {"NVIDIA GeForce RTX 5080 Laptop GPU", "RTX 5080 Laptop"},
    {"NVIDIA GeForce RTX 5090 Laptop GPU", "RTX 5090 Laptop"},
    // Parts the database does not describe are no other part's: their reports' own device
    // attributes give the figures (analysis::gpu_figures).
    {"NVIDIA GeForce RTX 4070 Ti", ""},
    {"NVIDIA GeForce RTX 4090 D", ""},
    {"NVIDIA GeForce GTX 1660 Ti", ""},
    {"NVIDIA A100", ""},
    {"NVIDIA H10", ""},
    {"", ""},
};

TEST(GpuIdentity, WholeProductNamesNotSubstringsAndNotTheFirstPatternThatFits) {
  for (const Named& named : kDevices) {
    const GpuSpec* spec = builtin().find_for_device(named.device);
    EXPECT_EQ(spec ? spec->name : "", named.entry) << named.device;
  }
  // The figures that were wrong: GH200's HBM3 part is 4.0 TB/s, the A100 40 GB 1.555.
  EXPECT_EQ(builtin().find_for_device("NVIDIA GH200 480GB")->memory_bandwidth_tbs, 4.0);
  EXPECT_EQ(builtin().find_for_device("NVIDIA A100-SXM4-40GB")->memory_bandwidth_tbs, 1.555);
  EXPECT_EQ(builtin().find_for_device("NVIDIA A100 80GB PCIe")->memory_bandwidth_tbs, 1.935);
  // Case does not matter (ncu prints "PCIE" in one name and "PCIe" in another).
  EXPECT_EQ(builtin().find_for_device("nvidia a100-pcie-40gb")->name, "A100 PCIe 40GB");
}

// `kprof gpus NAME` and the analyses use one rule: a device name shows the entry `analyze` takes.
TEST(GpuIdentity, GpusCommandAndAnalyzeAgreeOnEveryDeviceName) {
  for (const Named& named : kDevices) {
    if (*named.entry == '\0') continue;
    std::vector<const GpuSpec*> shown = builtin().find_named(named.device);
    ASSERT_EQ(shown.size(), 1u) << named.device;
    EXPECT_EQ(shown[0], builtin().find_for_device(named.device)) << named.device;
  }
  // An entry's own name, in any case; words of names give every entry they name.
  EXPECT_EQ(builtin().find_by_name("h200 nvl")->name, "H200 NVL");
  std::set<std::string> h100;
  for (const GpuSpec* spec : builtin().find_named("H100")) h100.insert(spec->name);
  EXPECT_EQ(h100, (std::set<std::string>{"H100 SXM", "H100 PCIe", "H100 NVL"}));
  EXPECT_EQ(builtin().find_by_name("H100"), nullptr);  // several: none is the one
  EXPECT_TRUE(builtin().find_named("Voodoo2").empty());
  EXPECT_TRUE(builtin().find_named("H1").empty());  // words, not letters
}

// A user file's entry comes first among equals; the longest match wins whatever the order.
TEST(GpuIdentity, LongestMatchWinsAndUserEntriesComeFirstAmongEquals) {
  GpuDatabase db = load_gpu_database_text(
      "user.json", R"({"gpus": [{"name": "My H200", "match": "H200", "cc": "9.0"},
                                {"name": "My GH200", "match": "NVIDIA GH200 480GB", "cc": "9.0"}]})");
  EXPECT_EQ(db.find_for_device("NVIDIA H200")->name, "My H200");
  EXPECT_EQ(db.find_for_device("NVIDIA H200 NVL")->name, "H200 NVL");
  EXPECT_EQ(db.find_for_device("NVIDIA GH200 480GB")->name, "My GH200");
}

// Every figure names where it comes from: each figure group an entry has cites a source, and
// every cited source is in the table of sources.
TEST(GpuIdentity, EveryFigureOfEveryEntryCitesASource) {
  for (const GpuSpec& spec : builtin().gpus) {
    SCOPED_TRACE(spec.name);
    bool memory = spec.memory_gb || spec.memory_bandwidth_tbs || spec.l2_mb || spec.sms;
    bool limits = spec.smem_per_sm_kb || spec.registers_per_sm || spec.max_warps_per_sm;
    EXPECT_EQ(spec.sources.count("memory"), memory ? 1u : 0u);
    EXPECT_EQ(spec.sources.count("compute"), spec.peak_tflops.empty() ? 0u : 1u);
    EXPECT_EQ(spec.sources.count("limits"), limits ? 1u : 0u);
    for (const auto& [group, cited] : spec.sources) {
      bool found = false;
      for (const auto& [id, citation] : builtin().sources) {
        // An id cited as a word of the group's text ("S9", "S10, H200-measured").
        for (size_t at = cited.find(id); at != std::string::npos; at = cited.find(id, at + 1)) {
          size_t end = at + id.size();
          bool word_end =
              end == cited.size() || !std::isalnum(static_cast<unsigned char>(cited[end]));
          bool word_start = at == 0 || !std::isalnum(static_cast<unsigned char>(cited[at - 1]));
          found |= word_start && word_end;
        }
      }
      EXPECT_TRUE(found) << group << ": " << cited;
    }
  }
}

}  // namespace
}  // namespace kprof::hardware
