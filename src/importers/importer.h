// One small interface per input format; import_report() picks the importer by content, never by
// file name, so a renamed or compressed file still reads.
#pragma once

#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "model/report.h"

namespace kprof::importers {

// What a command needs from a report; readers that can skip the rest while decoding do.
struct ImportOptions {
  // Per-instance values of instanced metrics (PC samples, per-unit values): inspect prints
  // them; analysis never reads them, and in a `--set full` report they are most of the bytes.
  bool instances = true;
  // With instances false: the metrics whose per-instance values are read all the same (`kprof
  // source` reads the per-PC source counters, a few dozen of ~2,200 metrics).
  std::function<bool(std::string_view metric)> instances_of;
  // The CUDA modules (cubins) and where their functions were loaded (.ncu-rep source entries,
  // model::Report::modules): megabytes that only `kprof source` reads; skipped otherwise.
  bool sources = false;
  // Threads decoding .ncu-rep kernel results (independent of each other); 0: one per hardware
  // thread. The result does not depend on it.
  unsigned threads = 0;
  // Called with a slice of the input the reader will not read again (a decoded kernel result),
  // so that a mapped file's pages are given back while the rest is decoded (import_report sets
  // it); the model never refers to the input's bytes. May be called from decoding threads.
  std::function<void(std::string_view)> done_with;
};

class Importer {
 public:
  virtual ~Importer() = default;
  virtual std::string_view name() const = 0;       // "ncu-rep"
  virtual std::string_view describes() const = 0;  // one line for error messages and --help
  // True when the first bytes (already decompressed) look like this format.
  virtual bool recognizes(std::string_view head) const = 0;
  // Parses the whole input; throws InputError with a position on anything malformed. Every
  // string of the report is valid UTF-8 (ill-formed bytes replaced by U+FFFD), whatever the
  // format allowed, so that every output (JSON above all) can trust its strings.
  model::Report import(const std::string& path, std::string_view bytes,
                       const ImportOptions& options = {}) const;

 protected:
  // The format's own reader, behind import().
  virtual model::Report parse(const std::string& path, std::string_view bytes,
                              const ImportOptions& options) const = 0;
};

const std::vector<const Importer*>& all_importers();

// Reads the file (decompressing zstd), detects its format and imports it.
model::Report import_report(const std::string& path, const ImportOptions& options = {});

// Same, over bytes already in memory (fuzzers, tests).
model::Report import_bytes(const std::string& path, std::string_view bytes,
                           const ImportOptions& options = {});

}  // namespace kprof::importers
