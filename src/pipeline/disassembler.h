// SASS text for `kprof source`: reports store the cubin but not its disassembly, so the text
// comes from NVIDIA's nvdisasm, run on the cubin as the report stored it. A seam (as ninja's
// CommandRunner): the pipeline asks a Disassembler, tests hand it a recorded one, and without
// nvdisasm the command still shows offsets and counters.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

namespace kprof::pipeline {

class Disassembler {
 public:
  virtual ~Disassembler() = default;
  // What it is, for notes ("nvdisasm /usr/local/cuda/bin/nvdisasm").
  virtual std::string describe() const = 0;
  // One function's instructions by offset from its start, or nullopt with why in `failure`
  // (nvdisasm failed, printed nothing usable). symbol_index: the function's symbol in the
  // cubin's symbol table, which `nvdisasm -fun` takes.
  virtual std::optional<std::map<std::uint64_t, std::string>> disassemble(
      std::string_view cubin, std::uint32_t symbol_index, std::string& failure) = 0;
};

// Where nvdisasm is: explicit_path (--nvdisasm) when given — it must then be executable, else
// UsageError —, else `nvdisasm` on PATH, else $CUDA_HOME/bin/nvdisasm, else
// /usr/local/cuda/bin/nvdisasm; "" when none is found.
std::string locate_nvdisasm(const std::string& explicit_path);

// Runs `NVDISASM -c -fun INDEX FILE` from an argv (no shell) on the cubin written to a private
// temporary folder, removed afterwards; 60 s at most.
std::unique_ptr<Disassembler> nvdisasm_at(const std::string& path);

// nvdisasm -c output: `/*OFFSET*/  TEXT ;` lines into offset → text, white space squeezed,
// `.reuse` operand flags (which ncu does not show) dropped, the ` ;` and trailing comment cut.
std::map<std::uint64_t, std::string> parse_nvdisasm(std::string_view output);

}  // namespace kprof::pipeline
