// The built-in stage table against real engine kernel names (tests/analysis/data/
// engine_kernel_names.tsv, see the README there): right on the two held-out batches it was not
// tuned on, wrong exactly where the data says it is, for the reason given there, and marking as
// communication exactly the names the data says move data between GPUs.
#include "analysis/stages.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <fstream>
#include <iomanip>
#include <iostream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

namespace kprof::analysis {
namespace {

struct LabelledName {
  std::string name, expected_stage, library, source, provenance, split, known_miss, note;
};

std::string corpus_path(const std::string& file) {
  return std::string(KPROF_TESTS_DIR) + "/analysis/data/" + file;
}

std::string read_text(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

std::vector<std::string> split_tabs(const std::string& line) {
  std::vector<std::string> fields;
  std::string::size_type start = 0;
  for (;;) {
    auto tab = line.find('\t', start);
    fields.push_back(line.substr(start, tab - start));
    if (tab == std::string::npos) return fields;
    start = tab + 1;
  }
}

std::vector<LabelledName> load_corpus() {
  std::ifstream in(corpus_path("engine_kernel_names.tsv"));
  std::vector<LabelledName> names;
  std::string line;
  std::getline(in, line);
  EXPECT_EQ(line, "name\texpected_stage\tlibrary\tsource\tprovenance\tsplit\tknown_miss\tnote");
  while (std::getline(in, line)) {
    auto f = split_tabs(line);
    EXPECT_EQ(f.size(), 8u) << line;
    if (f.size() != 8) continue;
    names.push_back({f[0], f[1], f[2], f[3], f[4], f[5], f[6], f[7]});
  }
  return names;
}

// FNV-1a, 64 bits, over the name's bytes: a split anyone can recompute, independent of the order
// of the file and of the table under test.
std::uint64_t fnv1a64(const std::string& text) {
  std::uint64_t hash = 0xcbf29ce484222325ull;
  for (unsigned char c : text) {
    hash ^= c;
    hash *= 0x100000001b3ull;
  }
  return hash;
}

struct Score {
  int right = 0, total = 0;
};

// The figure in the test's output, so that a run shows it.
void print_score(const char* what, const Score& s) {
  std::cout << what << ": " << s.right << " of " << s.total << " right (" << std::fixed
            << std::setprecision(1) << (s.total ? 100.0 * s.right / s.total : 0.0) << " %)\n";
}

Score score(const StageTable& table, const std::vector<LabelledName>& names,
            const std::string& split) {
  Score s;
  for (const LabelledName& n : names) {
    if (n.split != split) continue;
    ++s.total;
    if (table.stage_of_name(n.name) == n.expected_stage) ++s.right;
  }
  return s;
}

TEST(StageCorpus, IsRealNamesWithSourcesSplitByHash) {
  auto names = load_corpus();
  ASSERT_GE(names.size(), 300u);
  std::set<std::string> distinct;
  std::map<std::string, int> splits;
  for (const LabelledName& n : names) {
    EXPECT_TRUE(distinct.insert(n.name).second) << "listed twice: " << n.name;
    EXPECT_FALSE(n.source.empty()) << n.name;
    EXPECT_TRUE(n.provenance == "verbatim" || n.provenance == "reconstructed") << n.name;
    // One name in five is held out: FNV-1a residue 1 modulo 5 (residue 0 was the first choice;
    // its misses were read while the table was written, so it is no longer held out). The names
    // added for issue 29 that fall in the residue are a second held-out batch, "heldout2", kept
    // apart so the first batch stays the 84 it was.
    if (fnv1a64(n.name) % 5 == 1) {
      EXPECT_TRUE(n.split == "heldout" || n.split == "heldout2") << n.name;
    } else {
      EXPECT_EQ(n.split, "tuning") << n.name;
    }
    ++splits[n.split];
  }
  EXPECT_EQ(splits["heldout"], 84);
  EXPECT_EQ(splits["heldout2"], 48);
}

TEST(StageCorpus, EveryExpectedStageIsOneTheTableCanGive) {
  StageTable table = load_stage_table();
  std::set<std::string> stages{"other"};
  for (const StageRule& rule : table.rules) stages.insert(rule.stage);
  for (const LabelledName& n : load_corpus()) {
    EXPECT_TRUE(stages.count(n.expected_stage)) << n.expected_stage << " for " << n.name;
  }
}

// The rows marked known_miss are exactly the names the table files wrongly: a fix shows up as a
// stale mark, a regression as an unexplained miss.
TEST(StageCorpus, MissesAreExactlyTheExplainedOnes) {
  StageTable table = load_stage_table();
  for (const LabelledName& n : load_corpus()) {
    std::string stage = table.stage_of_name(n.name);
    if (n.known_miss.empty()) {
      EXPECT_EQ(stage, n.expected_stage) << n.split << " name: " << n.name;
    } else {
      EXPECT_NE(stage, n.expected_stage) << "marked as a miss but right: " << n.name;
      // The reason starts with what the table does with it.
      EXPECT_EQ(n.known_miss.rfind("filed " + stage + ": ", 0), 0u) << n.known_miss;
    }
  }
}

// The table was written from the tuning rows only. Measured on the held-out rows once after the
// tuning set grew by 87 engine names (issue 14, second pass): 82 of 84 (97.6 %), up from 75; the
// two misses each carry a word no tuning name has (see their known_miss). Issue 29's rules left
// it at 82.
TEST(StageCorpus, HeldOutNamesFiledRight) {
  auto names = load_corpus();
  Score held_out = score(load_stage_table(), names, "heldout");
  print_score("held-out batch 1", held_out);
  ASSERT_EQ(held_out.total, 84);
  RecordProperty("held_out_right", held_out.right);
  EXPECT_GE(held_out.right, 82);
  Score tuning = score(load_stage_table(), names, "tuning");
  print_score("tuning", tuning);
  EXPECT_GE(tuning.right, tuning.total - 2);
}

// The second held-out batch: the issue-29 names (AMD/ROCm GEMMs and attention, expert-parallel
// all-to-all, triton_kernels MoE, FBGEMM, FP8 casts, CuPy, BatchNorm, ROCm runtime) whose hash
// falls in the held-out residue, never tuned on. The table before issue 29 filed 15 of 48 right;
// measured once after the rules were extended on the tuning rows: 48 of 48.
TEST(StageCorpus, SecondHeldOutBatchFiledRight) {
  Score held_out = score(load_stage_table(), load_corpus(), "heldout2");
  print_score("held-out batch 2", held_out);
  ASSERT_EQ(held_out.total, 48);
  RecordProperty("held_out_2_right", held_out.right);
  EXPECT_GE(held_out.right, 48);
}

// The table kprof shipped before issue 14 (tests/analysis/data/stages_before_issue14.json),
// scored on the same held-out rows in its own vocabulary: MoE dispatch and combine were one stage,
// routing was filed with the expert GEMMs, prefill attention was plain attention and quantisation
// had no stage.
TEST(StageCorpus, HeldOutBeatsTheTableBeforeIssue14) {
  const std::string path = corpus_path("stages_before_issue14.json");
  StageTable before = parse_stage_table(path, read_text(path));
  const std::map<std::string, std::string> old_vocabulary{{"moe_dispatch", "moe_dispatch_combine"},
                                                          {"moe_combine", "moe_dispatch_combine"},
                                                          {"moe_routing", "moe_gemm"},
                                                          {"attention_prefill", "attention"},
                                                          {"quantization", "other"}};
  auto names = load_corpus();
  int before_right = 0, before_right_strict = 0, total = 0;
  for (const LabelledName& n : names) {
    if (n.split != "heldout") continue;
    ++total;
    std::string stage = before.stage_of_name(n.name);
    auto folded = old_vocabulary.find(n.expected_stage);
    if (stage == (folded == old_vocabulary.end() ? n.expected_stage : folded->second)) {
      ++before_right;
    }
    if (stage == n.expected_stage) ++before_right_strict;
  }
  EXPECT_EQ(before_right, 60);         // 71.4 % of 84, even in its own vocabulary
  EXPECT_EQ(before_right_strict, 47);  // 56.0 % in today's
  EXPECT_GT(score(load_stage_table(), names, "heldout").right, before_right);
}

// The kernel families issue 14 names, each checked on the corpus rows of that family: every row
// the pattern selects is filed as its label says, and the label is the stage the issue asks for
// (FlashAttention's split-KV combine is attention, never MoE combine; MoE routing, finalize and the
// expert GEMMs have their own stages; FP8/FP4 quantisation is quantization; paged and split-KV
// decode attention is decode, BatchPrefill is prefill).
TEST(StageCorpus, IssueFourteenFamiliesFiledAsAsked) {
  struct Family {
    const char* pattern;  // a substring of the corpus names of the family
    const char* stage;
  };
  const Family families[] = {
      {"flash_fwd_splitkv_combine_kernel", "attention_decode"},
      {"flash_fwd_combine_kernel", "attention_decode"},
      {"FlashAttnFwdCombine", "attention_decode"},
      {"moe::dev::routing::", "moe_routing"},
      {"finalizeMoeRoutingKernel", "moe_combine"},
      {"MxE2m1", "moe_gemm"},
      {"scaled_fp8_quant", "quantization"},
      {"quantize_with_block_size", "quantization"},
      {"per_token_group_quant", "quantization"},
      {"::cvt_fp16_to_fp4<", "quantization"},
      {"paged_attention_v", "attention_decode"},
      {"BatchDecodeWithPagedKVCache", "attention_decode"},
      {"BatchPrefillWith", "attention_prefill"},
      {"apply_repetition_penalties", "sampling"},
  };
  StageTable table = load_stage_table();
  auto names = load_corpus();
  for (const Family& family : families) {
    int rows = 0;
    for (const LabelledName& n : names) {
      if (n.name.find(family.pattern) == std::string::npos) continue;
      ++rows;
      EXPECT_EQ(n.expected_stage, family.stage) << n.name;
      EXPECT_EQ(table.stage_of_name(n.name), family.stage) << n.name;
    }
    EXPECT_GT(rows, 0) << "no corpus row for " << family.pattern;
  }
}

// Communication is orthogonal to the stage: a row whose note starts "comm:" moves data between
// GPUs (expert-parallel all-to-all keeps its MoE stage), as does every row of the communication
// stage (a collective); no other row does.
TEST(StageCorpus, CommunicationIsExactlyTheCommRows) {
  StageTable table = load_stage_table();
  int expert_parallel = 0, collective = 0;
  for (const LabelledName& n : load_corpus()) {
    CommunicationKind kind = table.communication_kind(n.name);
    EXPECT_EQ(table.is_communication(n.name), kind != CommunicationKind::kNone) << n.name;
    CommunicationKind expected = CommunicationKind::kNone;
    if (n.expected_stage == "communication") {
      expected = CommunicationKind::kCollective;
    } else if (n.note.rfind("comm:", 0) == 0) {
      expected = CommunicationKind::kExpertParallel;
    }
    EXPECT_EQ(communication_kind_name(kind), std::string(communication_kind_name(expected)))
        << n.split << " name: " << n.name;
    if (expected == CommunicationKind::kExpertParallel) ++expert_parallel;
    if (expected == CommunicationKind::kCollective) ++collective;
  }
  EXPECT_GE(expert_parallel, 40);
  EXPECT_GE(collective, 50);
}

// A user table's "communication" list: the first entry that matches gives the kind, "none" an
// exception; a name no entry matches is a collective in the communication stage, else none.
TEST(StageTableCommunication, FirstEntryWinsElseTheCommunicationStage) {
  StageTable table = parse_stage_table("user.json", R"({
    "communication": [
      {"kind": "none", "regex": "layout"},
      {"kind": "expert_parallel", "regex": "^ep_"}
    ],
    "rules": [
      {"stage": "moe_dispatch", "regex": "dispatch"},
      {"stage": "communication", "regex": "allreduce"}
    ]
  })");
  EXPECT_EQ(table.communication_kind("ep_dispatch"), CommunicationKind::kExpertParallel);
  EXPECT_EQ(table.stage_of_name("ep_dispatch"), "moe_dispatch");
  EXPECT_EQ(table.communication_kind("ep_dispatch_layout"), CommunicationKind::kNone);
  EXPECT_EQ(table.communication_kind("allreduce_kernel"), CommunicationKind::kCollective);
  EXPECT_EQ(table.communication_kind("local_dispatch"), CommunicationKind::kNone);
  EXPECT_TRUE(table.is_communication("allreduce_kernel"));
  EXPECT_FALSE(table.is_communication("gemm"));
  EXPECT_STREQ(communication_kind_name(CommunicationKind::kNone), "none");
  EXPECT_STREQ(communication_kind_name(CommunicationKind::kCollective), "collective");
  EXPECT_STREQ(communication_kind_name(CommunicationKind::kExpertParallel), "expert_parallel");
  EXPECT_THROW(parse_stage_table("bad.json", R"({"communication": [{"kind": "p2p", "regex": "x"}],
                                                  "rules": []})"),
               std::exception);
}

}  // namespace
}  // namespace kprof::analysis
