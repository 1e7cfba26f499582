// KPROF_TRACE_DUMP_RAW: CUPTI's completed buffers written as they are, so buffers recorded on a
// GPU machine become test data for the converter. Records hold pointers into the traced process
// (kernel names, NVTX names and domains); the strings behind them go into names.tsv, keyed by
// the buffer they were first seen valid in, so a replay never dereferences a recorded pointer.
//
// Folder kprof-raw.<host>.<pid>/ (".2", ".3"… when taken):
//   meta.txt           "key value" lines: format, versions, pid, host, base_ns, record sizes
//   buffer.NNNNNN.bin  one completed buffer, its valid bytes only, numbered from 1 in the order
//                      CUPTI completed them
//   names.tsv          "SEQ<TAB>0xPOINTER<TAB>STRING" lines; STRING with \\, \t, \n, \r escaped;
//                      a pointer's string holds from buffer SEQ on until a later line changes it
#pragma once

#include <cupti.h>

#include <array>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "tracer/record_converter.h"

namespace kprof::tracer {

// The string pointers a record holds (kernel name; NVTX name and domain), nullptr where none.
std::array<const char*, 2> record_strings(const CUpti_Activity& record);

class RawDumpWriter {
 public:
  // Creates the folder under dir; nullptr with *error set when it cannot.
  static std::unique_ptr<RawDumpWriter> create(
      const std::string& dir, const std::string& host, long pid,
      const std::vector<std::pair<std::string, std::string>>& meta, std::string* error);
  ~RawDumpWriter();
  RawDumpWriter(const RawDumpWriter&) = delete;
  RawDumpWriter& operator=(const RawDumpWriter&) = delete;

  // One completed buffer and the strings its records point to.
  bool write_buffer(const std::uint8_t* data, std::size_t size,
                    const std::vector<std::pair<const char*, std::string_view>>& strings,
                    std::string* error);
  const std::string& folder() const { return folder_; }

 private:
  RawDumpWriter(std::string folder, int names_fd)
      : folder_(std::move(folder)), names_fd_(names_fd) {}
  std::string folder_;
  int names_fd_ = -1;
  std::uint64_t sequence_ = 0;
  std::unordered_map<const char*, std::string> known_;
};

struct RawDump {
  std::map<std::string, std::string> meta;
  std::vector<std::pair<std::uint64_t, std::string>> buffers;  // sequence, path; in order
  struct Name {
    std::uint64_t sequence;
    std::uintptr_t pointer;
    std::string text;
  };
  std::vector<Name> names;  // in file order
};

// Reads a dump folder's index (not the buffers); false with *error set ("PATH: line N: …").
bool read_raw_dump(const std::string& folder, RawDump* dump, std::string* error);

// The recorded strings as of one buffer: advance_to(sequence) before converting that buffer.
class DumpStrings final : public StringSource {
 public:
  explicit DumpStrings(const std::vector<RawDump::Name>& names) : names_(names) {}
  void advance_to(std::uint64_t sequence);
  std::string_view resolve(const char* pointer) const override;

 private:
  const std::vector<RawDump::Name>& names_;
  size_t next_ = 0;
  std::unordered_map<std::uintptr_t, std::string> current_;
  mutable std::unordered_map<std::uintptr_t, std::string> missing_;
};

}  // namespace kprof::tracer
