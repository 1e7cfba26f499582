// The built-in stage table against real engine kernel names (tests/analysis/data/
// engine_kernel_names.tsv, see the README there): right on the two held-out batches it was not
// tuned on, wrong exactly where the data says it is, for the reason given there, and marking as
// communication exactly the names the data says move data between GPUs.
#include "analysis/stages.h"

#include <gtest/gtest.h>
#include <re2/re2.h>

#include <algorithm>
#include <cstdint>
#include <fstream>
#include <iomanip>
#include <iostream>
#include <map>
#include <memory>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "importers/importer.h"
#include "support/test_data.h"

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
      EXPECT_TRUE(n.split == "heldout" || n.split == "heldout2" || n.split == "heldout3") << n.name;
    } else {
      EXPECT_EQ(n.split, "tuning") << n.name;
    }
    ++splits[n.split];
  }
  EXPECT_EQ(splits["heldout"], 84);
  EXPECT_EQ(splits["heldout2"], 48);
  EXPECT_EQ(splits["heldout3"], 16);
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
// two misses each carry a word no tuning name has (see their known_miss). Issue 29's and issue
// 43's rules left it at 82. The tuning rows' three misses are explained in their known_miss
// (issue 43 added nvFuser's hand-scheduled Hopper matmul, whose name says no operation).
TEST(StageCorpus, HeldOutNamesFiledRight) {
  auto names = load_corpus();
  Score held_out = score(load_stage_table(), names, "heldout");
  print_score("held-out batch 1", held_out);
  ASSERT_EQ(held_out.total, 84);
  RecordProperty("held_out_right", held_out.right);
  EXPECT_GE(held_out.right, 82);
  Score tuning = score(load_stage_table(), names, "tuning");
  print_score("tuning", tuning);
  EXPECT_GE(tuning.right, tuning.total - 3);
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

// The third held-out batch: the issue-43 names (fusion compilers' generated kernels — nvFuser,
// Inductor without an op word, TileLang, Mojo —, DeepSeek-V3's MoE training kernels and
// DeepSeek's TileLang TileKernels — FP8 casts and cast-backs, expert counting, top-k routing,
// SwiGLU backward —, Transformer Engine's MoE router and permutation, activation backward)
// whose hash falls in the held-out residue, never tuned on. The table before issue 43 filed 8 of
// 16 right; measured once after the rules were extended on the tuning rows: 16 of 16.
TEST(StageCorpus, ThirdHeldOutBatchFiledRight) {
  Score held_out = score(load_stage_table(), load_corpus(), "heldout3");
  print_score("held-out batch 3", held_out);
  ASSERT_EQ(held_out.total, 16);
  RecordProperty("held_out_3_right", held_out.right);
  EXPECT_GE(held_out.right, 16);
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

// --- Issue 43: generated kernels, MoE training families, the kernel's own counters. ---

model::Kernel kernel_named(const std::string& function, const std::string& demangled = "") {
  model::Kernel kernel;
  kernel.function_name = function;
  kernel.demangled_name = demangled;
  return kernel;
}

model::Metric metric(const std::string& name, double value) {
  model::Metric m;
  m.name = name;
  m.value = model::MetricValue::of_double(value);
  return m;
}

// A kernel with the given counters (kept sorted, as importers leave them).
model::Kernel with_counters(model::Kernel kernel, std::vector<model::Metric> metrics) {
  kernel.metrics = std::move(metrics);
  std::sort(kernel.metrics.begin(), kernel.metrics.end(),
            [](const model::Metric& a, const model::Metric& b) { return a.name < b.name; });
  return kernel;
}

// nvFuser names a kernel nvfuser_<scheduler>_f<fusion>_c<concrete>_r<runtime>_g<group>
// (NVIDIA/Fuser csrc/scheduler/scheduler_types.cpp): the scheduler word gives the stage where it
// says one; 'none' (scheduled by hand, as the Hopper matmul tests are) and 'greedy' do not.
TEST(Stages, NvfuserGeneratedKernelsByScheduler) {
  StageTable table = load_stage_table();
  struct Case {
    const char* name;
    const char* stage;
    bool names_no_operation;
  };
  const Case cases[] = {
      {"nvfuser_matmul_f0_c1_r0_g0", "gemm", false},
      {"nvfuser_pointwise_f0_c1_r0_g0", "elementwise", false},
      {"nvfuser_reduction_f2_c1_r1_g1", "elementwise", false},
      {"nvfuser_inner_persistent_f0_c1_r0_g0", "norm", false},
      {"nvfuser_outer_persistent_f0_c1_r0_g0", "norm", false},
      {"nvfuser_inner_outer_persistent_f0_c1_r0_g0", "norm", false},
      {"nvfuser_transpose_f1_c2_r0_g3", "memory", false},
      {"nvfuser_resize_f0_c1_r0_g0", "memory", false},
      {"nvfuser_none_f0_c0_r0_g0", "other", true},
      {"nvfuser_greedy_f0_c1_r0_g0", "other", true},
      // The names as nsys (demangled) and NVRTC (mangled, anonymous namespace) spell them.
      {"<unnamed>::nvfuser_none_f0_c0_r0_g0(<unnamed>::Tensor<<unnamed>::__half, (int)3, (int)3>, "
       "<unnamed>::TensorMap)",
       "other", true},
      {"_ZN76_GLOBAL__N__00000000_37___tmp_kernel_pointwise_f0_c1_r0_g0_cu_8995cef2_"
       "3255329nvfuser_pointwise_f0_c1_r0_g0ENS_6TensorIfLi2ELi2EEES1_S1_",
       "elementwise", false},
  };
  for (const Case& c : cases) {
    StageDecision d = table.decide_by_name(c.name);
    EXPECT_EQ(d.stage, c.stage) << c.name;
    EXPECT_EQ(d.name_names_no_operation, c.names_no_operation) << c.name;
    EXPECT_EQ(d.source, StageSource::kName) << c.name;
  }
}

// Inductor names a kernel triton_<category[:3]>_<fused origins>_<n> (codegen/triton.py): an
// op-less "fused" (origins without an ATen op), the foreach and split-scan categories, and the
// older 'triton_' + Triton's argument specialisation ("triton__0d1d2de3") are fused Inductor
// kernels; an op-less template is FlexAttention's, whose name the counters may still correct.
TEST(Stages, InductorKernelsWithoutAnOpWord) {
  StageTable table = load_stage_table();
  EXPECT_EQ(table.stage_of_name("triton_poi_fused_0"), "triton_fused");
  EXPECT_EQ(table.stage_of_name("triton_red_fused_0"), "triton_fused");
  EXPECT_EQ(table.stage_of_name("triton_for_fused_1"), "triton_fused");
  EXPECT_EQ(table.stage_of_name("triton_spl_fused_cumsum_0"), "triton_fused");
  EXPECT_EQ(table.stage_of_name("triton__0d1d2de3"), "triton_fused");
  EXPECT_EQ(table.stage_of_name("triton_"), "triton_fused");
  StageDecision flex = table.decide_by_name("triton_tem_fused_0");
  EXPECT_EQ(flex.stage, "attention");
  EXPECT_TRUE(flex.name_names_no_operation);
  EXPECT_EQ(table.stage_of_name("triton_tem_fused_flex_attention_backward_2"), "attention");
  EXPECT_EQ(table.stage_of_name("triton_tem_fused_mm_0"), "gemm");
  EXPECT_EQ(table.stage_of_name("triton_tem_fused_convolution_0"), "gemm");
  EXPECT_FALSE(table.decide_by_name("triton_tem_fused_bmm_0").name_names_no_operation);
}

// TileLang names a kernel <prim_func>_kernel: "main_kernel" by default (no operation; the same
// name is an attention in one public source and a copy in another), an operation where the
// author named one (DeepSeek's TileKernels). Mojo names one after its function and parameters.
TEST(Stages, TileLangAndMojoGeneratedNames) {
  StageTable table = load_stage_table();
  StageDecision main = table.decide_by_name("main_kernel");
  EXPECT_EQ(main.stage, "other");
  EXPECT_TRUE(main.name_names_no_operation);
  EXPECT_TRUE(table.decide_by_name("default_function_kernel").name_names_no_operation);
  EXPECT_EQ(table.stage_of_name("cast_back_kernel_kernel"), "quantization");
  EXPECT_EQ(table.stage_of_name("group_count_kernel_kernel"), "moe_routing");
  EXPECT_EQ(table.stage_of_name("swiglu_backward_and_per_token_cast_kernel_kernel"), "activation");
  EXPECT_EQ(table.stage_of_name("p16_naive_matmul_Layout_Int6A6AcB6A6AsA6A6A"), "gemm");
  StageDecision unmatched = table.decide_by_name("kernel_fwd_kernel_DType_Int6A6AcB6A6AsA6A6A");
  EXPECT_EQ(unmatched.stage, "other");
  EXPECT_EQ(unmatched.source, StageSource::kNoEvidence);
  EXPECT_TRUE(unmatched.name_names_no_operation);
}

// MoE training's kernel families (issue 43: "quantisation casts, MoE routing and activation
// backward kernels are families of their own"): every corpus row of each family — DeepSeek-V3's
// training trace, TileKernels, Transformer Engine's router — is labelled and filed as the
// family's stage, the held-out ones among them too (they were never tuned on).
TEST(Stages, MoeTrainingFamiliesHeldOut) {
  struct Family {
    const char* pattern;  // RE2 over the corpus names of the family; the first that matches
    const char* stage;
  };
  const Family families[] = {
      // Activation first: SwiGLU fused with its FP8 cast is the activation's kernel.
      {"swiglu_(forward|backward|and|weight)|glu(_tanh)?_backward|geglu_bwd|sigmoid_backward|"
       "GeluBackward|silu_backward|"
       "dgated_act",
       "activation"},
      {"cast_back|per_(token|channel|block)_cast|cast_to_fp8_with", "quantization"},
      {"count_expert|group_count|tokens_per_expert|aux_fi|aux_loss", "moe_routing"},
      {"topk_sum|topk_gate|top2_sum_gate|topk_with_score|fused_mapping|unique_group",
       "moe_routing"},
      {"expand_to_fused|moe_?permute_kernel", "moe_dispatch"},
      {"reduce_fused|moe_?unpermute", "moe_combine"},
  };
  std::vector<std::unique_ptr<RE2>> patterns;
  for (const Family& family : families) patterns.push_back(std::make_unique<RE2>(family.pattern));
  StageTable table = load_stage_table();
  std::vector<int> rows(std::size(families), 0);
  int held_out = 0, held_out_right = 0;
  for (const LabelledName& n : load_corpus()) {
    for (size_t f = 0; f < std::size(families); ++f) {
      if (!RE2::PartialMatch(n.name, *patterns[f])) continue;
      ++rows[f];
      EXPECT_EQ(n.expected_stage, families[f].stage) << n.name;
      EXPECT_EQ(table.stage_of_name(n.name), families[f].stage) << n.split << " name: " << n.name;
      if (n.split == "heldout3") {
        ++held_out;
        if (table.stage_of_name(n.name) == families[f].stage) ++held_out_right;
      }
      break;
    }
  }
  for (size_t f = 0; f < std::size(families); ++f) {
    EXPECT_GE(rows[f], 2) << families[f].pattern;
  }
  std::cout << "MoE training families, held-out rows: " << held_out_right << " of " << held_out
            << " right\n";
  EXPECT_GE(held_out, 5);
  EXPECT_EQ(held_out_right, held_out);
}

// Where the name says nothing (nvFuser's hand-scheduled Hopper matmul: 'none'), a report's own
// counters decide: the tensor pipe busy is a GEMM, with the XU pipe beside it an attention; the
// decision says which counter it rests on. Counters never override a name that names an
// operation, and a busy FP32 pipe that leaks into the untyped tensor reading is no GEMM.
TEST(Stages, TensorPipeStagesAGeneratedGemm) {
  StageTable table = load_stage_table();
  const std::string none = "nvfuser_none_f0_c0_r0_g0";
  const std::string active = ".avg.pct_of_peak_sustained_active";
  const std::string elapsed = ".avg.pct_of_peak_sustained_elapsed";

  StageDecision bare = table.decide(kernel_named(none));
  EXPECT_EQ(bare.stage, "other");
  EXPECT_EQ(bare.source, StageSource::kName);

  model::Kernel matmul =
      with_counters(kernel_named(none), {metric("sm__pipe_tensor_cycles_active" + active, 87.2),
                                         metric("sm__inst_executed_pipe_xu" + active, 0.0)});
  StageDecision gemm = table.decide(matmul);
  EXPECT_EQ(gemm.stage, "gemm");
  EXPECT_EQ(table.stage_of(matmul), "gemm");
  EXPECT_EQ(gemm.source, StageSource::kCounters);
  EXPECT_STREQ(stage_source_name(gemm.source), "counters");
  EXPECT_NE(gemm.evidence.find("tensor pipe 87% busy (sm__pipe_tensor_cycles_active"),
            std::string::npos)
      << gemm.evidence;

  // A softmax's exponentials beside the MMAs (cuDNN's flash attention on the H200: XU 20%
  // against the tensor pipe's 38%).
  model::Kernel attention = with_counters(kernel_named("main_kernel"),
                                          {metric("sm__pipe_tensor_cycles_active" + active, 37.8),
                                           metric("sm__inst_executed_pipe_xu" + active, 19.9)});
  StageDecision att = table.decide(attention);
  EXPECT_EQ(att.stage, "attention");
  EXPECT_NE(att.evidence.find("XU pipe 20% beside it"), std::string::npos) << att.evidence;

  // The FP32 FMA loop of the H200 suite: the untyped tensor pipe reads 5.6%, the typed one 0.
  model::Kernel fma = with_counters(
      kernel_named("my_generated_kernel"),
      {metric("sm__pipe_tensor_cycles_active" + elapsed, 5.57),
       metric("sm__pipe_tensor_type_hmma_hgmma_qgmma_imma_igmma_bmma_bgmma_cycles_active" + elapsed,
              0.0)});
  EXPECT_EQ(table.decide(fma).stage, "other");
  ASSERT_TRUE(tensor_pipe_evidence(fma).has_value());
  EXPECT_FALSE(tensor_pipe_evidence(fma)->busy);

  // A skinny decode GEMM: the untyped pipe at 2.1% but tensor instructions are there.
  model::Kernel skinny = with_counters(
      kernel_named(none),
      {metric("sm__pipe_tensor_cycles_active" + elapsed, 2.1),
       metric("sm__pipe_tensor_type_hmma_hgmma_qgmma_imma_igmma_bmma_bgmma_cycles_active" + elapsed,
              2.1)});
  StageDecision decode = table.decide(skinny);
  EXPECT_EQ(decode.stage, "gemm");
  EXPECT_NE(decode.evidence.find("tensor-core instructions"), std::string::npos) << decode.evidence;
  model::Kernel wgmma = with_counters(
      kernel_named(none), {metric("sm__inst_executed_pipe_tensor_op_gmma" + active, 2.4)});
  EXPECT_EQ(table.stage_of(wgmma), "gemm");

  // A name that names its operation keeps its stage whatever the counters read.
  model::Kernel rms = with_counters(kernel_named("rms_norm_kernel"),
                                    {metric("sm__pipe_tensor_cycles_active" + active, 90.0)});
  StageDecision named = table.decide(rms);
  EXPECT_EQ(named.stage, "norm");
  EXPECT_EQ(named.evidence, "name");
  // A generated name's guess (FlexAttention) is corrected by counters that show no softmax.
  model::Kernel template_gemm = with_counters(
      kernel_named("triton_tem_fused_0"), {metric("sm__pipe_tensor_cycles_active" + active, 60.0),
                                           metric("sm__inst_executed_pipe_xu" + active, 0.5)});
  EXPECT_EQ(table.stage_of(template_gemm), "gemm");
}

// The thresholds against every kernel of the real H200 captures: the tensor-core kernels the
// names file as GEMMs and attention read busy, every other kernel does not, and the attention
// kernels alone show the XU pipe beside the tensor pipe.
TEST(Stages, TensorPipeThresholdsHoldOnTheH200Captures) {
  StageTable table = load_stage_table();
  const std::set<std::string> tensor_stages{"gemm", "attention", "attention_decode",
                                            "attention_prefill", "moe_gemm"};
  int busy = 0, idle = 0;
  for (const char* file :
       {"h200/big_full.ncu-rep.zst", "h200/big_basic.ncu-rep.zst",
        "h200/bottleneck_suite_full.ncu-rep.zst", "h200/compiled_decode_full.ncu-rep.zst",
        "h200/decode_eager_full.ncu-rep.zst"}) {
    model::Report report = importers::import_report(testing::data_path(file));
    for (const model::Kernel& kernel : report.kernels) {
      std::string name_stage = table.decide_by_name(kernel.display_name()).stage;
      bool tensor = tensor_stages.count(name_stage) > 0 ||
                    kernel.function_name == "k_tensor_wmma";  // the suite's WMMA loop
      // cuBLASLt's split-K reduce is filed with its GEMM but adds in FP32.
      if (kernel.display_name().find("splitKreduce") != std::string::npos) tensor = false;
      auto evidence = tensor_pipe_evidence(kernel);
      ASSERT_TRUE(evidence.has_value()) << file << ": " << kernel.display_name();
      EXPECT_EQ(evidence->busy, tensor) << file << ": " << kernel.display_name() << " "
                                        << describe(*evidence) << " " << evidence->tensor_pct;
      if (tensor) {
        ++busy;
        bool attention = name_stage.rfind("attention", 0) == 0;
        EXPECT_EQ(evidence->softmax_beside, attention) << file << ": " << kernel.display_name();
      } else {
        ++idle;
      }
    }
  }
  EXPECT_GE(busy, 30);
  EXPECT_GE(idle, 30);
}

// FlashInfer's tensor-core decode runs its prefill kernel: with MaskMode 0 and a 16-row query
// tile (flashinfer's planner picks 16 when the packed query length is at most 16: decode) it is
// decode attention — the name below is verbatim from a public SGLang serving profile's kernel
// table (find_string id 61581489350, LiquidAI/LFM2.5-8B-A1B at low concurrency); causal
// (MaskMode 1) it is prefill; otherwise the phase is the step's to say.
TEST(Stages, FlashInferPrefillKernelOnTheDecodePath) {
  StageTable table = load_stage_table();
  const std::string decode_path =
      "void flashinfer::BatchPrefillWithPagedKVCacheKernel<flashinfer::KernelTraits<"
      "(flashinfer::MaskMode)0, 16u, 1u, 4u, 4u, 4u, 1u, 4u, (flashinfer::PosEncodingMode)0, "
      "__nv_bfloat16, __nv_bfloat16, __nv_bfloat16, float, int, flashinfer::DefaultAttention<"
      "false, false, false, false> >, PagedParams>(PagedParams)";
  EXPECT_EQ(table.stage_of_name(decode_path), "attention_decode");
  std::string causal = decode_path;
  causal.replace(causal.find("MaskMode)0, 16u"), 15, "MaskMode)1, 128u");
  EXPECT_EQ(table.stage_of_name(causal), "attention_prefill");
  std::string wide = decode_path;
  wide.replace(wide.find("MaskMode)0, 16u"), 15, "MaskMode)0, 64u");
  EXPECT_EQ(table.stage_of_name(wide), "attention");
  EXPECT_EQ(table.stage_of_name("BatchPrefillWithPagedKVCacheKernel"), "attention");
  EXPECT_EQ(table.stage_of_name("BatchPrefillWithRaggedKVCacheKernel"), "attention_prefill");
  // The step's evidence (vLLM's execute_context_0(0)_generation_16(16): no prefill request).
  EXPECT_EQ(stage_in_step("attention", StepPhase::kDecodeOnly), "attention_decode");
  EXPECT_EQ(stage_in_step("attention", StepPhase::kPrefillOnly), "attention_prefill");
  EXPECT_EQ(stage_in_step("attention", StepPhase::kMixed), "attention");
  EXPECT_EQ(stage_in_step("attention_prefill", StepPhase::kDecodeOnly), "attention_prefill");
  EXPECT_EQ(stage_in_step("gemm", StepPhase::kDecodeOnly), "gemm");
}

// A trace's launching operator: operators whose kernels are all of one stage are listed;
// composite ones (aten::matmul, aten::linear) are left to their inner operators.
TEST(Stages, OperatorsStageTheKernelsTheyLaunch) {
  StageTable table = load_stage_table();
  EXPECT_EQ(table.stage_of_operator("aten::mm"), "gemm");
  EXPECT_EQ(table.stage_of_operator("aten::_scaled_mm"), "gemm");
  EXPECT_EQ(table.stage_of_operator("aten::_grouped_mm"), "moe_gemm");
  EXPECT_EQ(table.stage_of_operator("aten::_scaled_dot_product_flash_attention"), "attention");
  EXPECT_EQ(table.stage_of_operator("aten::_scaled_dot_product_efficient_attention_backward"),
            "attention");
  EXPECT_EQ(table.stage_of_operator("aten::native_layer_norm"), "norm");
  EXPECT_EQ(table.stage_of_operator("aten::matmul"), std::nullopt);
  EXPECT_EQ(table.stage_of_operator("aten::linear"), std::nullopt);
  EXPECT_EQ(table.stage_of_operator("aten::copy_"), std::nullopt);
  // A launch: nvFuser's or TileLang's op-less kernel under aten::mm is a GEMM; a name that
  // refines the operator's stage keeps it; an operator the table does not list leaves the name.
  StageDecision matmul = table.decide_launch("nvfuser_none_f0_c0_r0_g0", "aten::mm");
  EXPECT_EQ(matmul.stage, "gemm");
  EXPECT_EQ(matmul.source, StageSource::kOperator);
  EXPECT_EQ(matmul.evidence, "operator aten::mm");
  EXPECT_EQ(table.decide_launch("flash_fwd_splitkv_kernel", "aten::_flash_attention_forward").stage,
            "attention_decode");
  EXPECT_EQ(table.decide_launch("cublasLt::splitKreduce_kernel", "aten::addmm").stage, "gemm");
  EXPECT_EQ(table.decide_launch("triton_poi_fused_0", "triton_poi_fused_0").stage, "triton_fused");
  EXPECT_EQ(table.decide_launch("k_mystery", "").source, StageSource::kNoEvidence);
  EXPECT_EQ(table.decide_launch("main_kernel", "aten::bmm").stage, "gemm");
  // A user table's operators and generated rules.
  StageTable user = parse_stage_table("user.json", R"({
    "operators": [{"stage": "experts", "regex": "^my::experts$"}],
    "rules": [{"stage": "fused", "regex": "^gen_", "generated": true}]
  })");
  EXPECT_EQ(user.stage_of_operator("my::experts"), "experts");
  EXPECT_TRUE(user.decide_by_name("gen_0").name_names_no_operation);
  EXPECT_THROW(parse_stage_table("bad.json", R"({"rules": [{"stage": "x", "regex": "x",
                                                  "generated": "yes"}]})"),
               std::exception);
}

}  // namespace
}  // namespace kprof::analysis
