#include "tracer/raw_dump.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstdio>
#include <cstring>
#include <fstream>

namespace kprof::tracer {
namespace {

std::string dump_failure(const std::string& path, const char* what, int error_number) {
  return path + ": " + what + ": " + std::strerror(error_number);
}

bool write_all(int fd, std::string_view bytes) {
  while (!bytes.empty()) {
    ssize_t n = ::write(fd, bytes.data(), bytes.size());
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    bytes.remove_prefix(static_cast<size_t>(n));
  }
  return true;
}

int create_new(const std::string& path, int extra_flags = 0) {
  return ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC | extra_flags,
                0644);
}

std::string escape_field(std::string_view text) {
  std::string out;
  for (char c : text) {
    switch (c) {
      case '\\':
        out += "\\\\";
        break;
      case '\t':
        out += "\\t";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\r':
        out += "\\r";
        break;
      default:
        out += c;
    }
  }
  return out;
}

bool unescape_field(std::string_view text, std::string* out) {
  for (size_t i = 0; i < text.size(); ++i) {
    if (text[i] != '\\') {
      *out += text[i];
      continue;
    }
    if (++i == text.size()) return false;
    switch (text[i]) {
      case '\\':
        *out += '\\';
        break;
      case 't':
        *out += '\t';
        break;
      case 'n':
        *out += '\n';
        break;
      case 'r':
        *out += '\r';
        break;
      default:
        return false;
    }
  }
  return true;
}

std::string buffer_name(std::uint64_t sequence) {
  char name[32];
  std::snprintf(name, sizeof name, "buffer.%06llu.bin", static_cast<unsigned long long>(sequence));
  return name;
}

}  // namespace

std::array<const char*, 2> record_strings(const CUpti_Activity& record) {
  switch (record.kind) {
    case CUPTI_ACTIVITY_KIND_KERNEL:
    case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL:
      return {reinterpret_cast<const CUpti_ActivityKernel10&>(record).name, nullptr};
    case CUPTI_ACTIVITY_KIND_MARKER: {
      const auto& marker = reinterpret_cast<const CUpti_ActivityMarker2&>(record);
      return {marker.name, marker.domain};
    }
    default:
      return {nullptr, nullptr};
  }
}

std::unique_ptr<RawDumpWriter> RawDumpWriter::create(
    const std::string& dir, const std::string& host, long pid,
    const std::vector<std::pair<std::string, std::string>>& meta, std::string* error) {
  std::string base = dir + "/kprof-raw." + host + "." + std::to_string(pid);
  std::string folder = base;
  for (int n = 2; ::mkdir(folder.c_str(), 0755) != 0; ++n) {
    if (errno != EEXIST || n > 1000) {
      *error = dump_failure(folder, "cannot create the raw dump folder", errno);
      return nullptr;
    }
    folder = base + "." + std::to_string(n);
  }
  std::string text;
  for (const auto& [key, value] : meta) text += key + " " + value + "\n";
  int meta_fd = create_new(folder + "/meta.txt");
  bool written = meta_fd >= 0 && write_all(meta_fd, text);
  int saved = errno;
  if (meta_fd >= 0) ::close(meta_fd);
  if (!written) {
    *error = dump_failure(folder + "/meta.txt", "cannot write", saved);
    return nullptr;
  }
  int names_fd = create_new(folder + "/names.tsv", O_APPEND);
  if (names_fd < 0) {
    *error = dump_failure(folder + "/names.tsv", "cannot create", errno);
    return nullptr;
  }
  return std::unique_ptr<RawDumpWriter>(new RawDumpWriter(folder, names_fd));
}

RawDumpWriter::~RawDumpWriter() {
  if (names_fd_ >= 0) ::close(names_fd_);
}

bool RawDumpWriter::write_buffer(
    const std::uint8_t* data, std::size_t size,
    const std::vector<std::pair<const char*, std::string_view>>& strings, std::string* error) {
  ++sequence_;
  std::string names;
  for (const auto& [pointer, text] : strings) {
    auto it = known_.find(pointer);
    if (it != known_.end() && it->second == text) continue;
    known_[pointer] = std::string(text);
    char address[32];
    std::snprintf(address, sizeof address, "0x%llx",
                  static_cast<unsigned long long>(reinterpret_cast<std::uintptr_t>(pointer)));
    names += std::to_string(sequence_) + "\t" + address + "\t" + escape_field(text) + "\n";
  }
  if (!names.empty() && !write_all(names_fd_, names)) {
    *error = dump_failure(folder_ + "/names.tsv", "cannot write", errno);
    return false;
  }
  std::string path = folder_ + "/" + buffer_name(sequence_);
  int fd = create_new(path);
  bool written =
      fd >= 0 && write_all(fd, std::string_view(reinterpret_cast<const char*>(data), size));
  int saved = errno;
  if (fd >= 0) ::close(fd);
  if (!written) {
    *error = dump_failure(path, "cannot write", saved);
    return false;
  }
  return true;
}

bool read_raw_dump(const std::string& folder, RawDump* dump, std::string* error) {
  std::ifstream meta(folder + "/meta.txt");
  if (!meta) {
    *error = folder + "/meta.txt: cannot open";
    return false;
  }
  std::string line;
  while (std::getline(meta, line)) {
    size_t space = line.find(' ');
    if (space == std::string::npos) continue;
    dump->meta[line.substr(0, space)] = line.substr(space + 1);
  }
  if (dump->meta["format"] != "kprof.cupti-raw/1") {
    *error = folder + "/meta.txt: not a kprof raw dump (format \"" + dump->meta["format"] + "\")";
    return false;
  }
  std::ifstream names(folder + "/names.tsv");
  if (!names) {
    *error = folder + "/names.tsv: cannot open";
    return false;
  }
  for (int number = 1; std::getline(names, line); ++number) {
    size_t tab1 = line.find('\t'),
           tab2 = tab1 == std::string::npos ? tab1 : line.find('\t', tab1 + 1);
    RawDump::Name name{};
    std::string_view sequence(line.data(), tab1 == std::string::npos ? 0 : tab1);
    std::string_view pointer = tab2 == std::string::npos
                                   ? std::string_view()
                                   : std::string_view(line).substr(tab1 + 1, tab2 - tab1 - 1);
    bool ok = tab2 != std::string::npos && pointer.substr(0, 2) == "0x";
    if (ok) {
      auto [end1, ec1] =
          std::from_chars(sequence.data(), sequence.data() + sequence.size(), name.sequence);
      auto [end2, ec2] =
          std::from_chars(pointer.data() + 2, pointer.data() + pointer.size(), name.pointer, 16);
      ok = ec1 == std::errc() && end1 == sequence.data() + sequence.size() && ec2 == std::errc() &&
           end2 == pointer.data() + pointer.size() &&
           unescape_field(std::string_view(line).substr(tab2 + 1), &name.text);
    }
    if (!ok) {
      *error = folder + "/names.tsv: line " + std::to_string(number) +
               ": expected SEQUENCE<TAB>0xPOINTER<TAB>TEXT";
      return false;
    }
    dump->names.push_back(std::move(name));
  }
  DIR* listing = ::opendir(folder.c_str());
  if (!listing) {
    *error = dump_failure(folder, "cannot list", errno);
    return false;
  }
  while (dirent* entry = ::readdir(listing)) {
    std::string_view file = entry->d_name;
    if (file.size() != 17 || file.substr(0, 7) != "buffer." || file.substr(13) != ".bin") continue;
    std::uint64_t sequence = 0;
    auto [end, ec] = std::from_chars(file.data() + 7, file.data() + 13, sequence);
    if (ec == std::errc() && end == file.data() + 13) {
      dump->buffers.emplace_back(sequence, folder + "/" + std::string(file));
    }
  }
  ::closedir(listing);
  std::sort(dump->buffers.begin(), dump->buffers.end());
  return true;
}

void DumpStrings::advance_to(std::uint64_t sequence) {
  while (next_ < names_.size() && names_[next_].sequence <= sequence) {
    current_[names_[next_].pointer] = names_[next_].text;
    ++next_;
  }
}

std::string_view DumpStrings::resolve(const char* pointer) const {
  auto address = reinterpret_cast<std::uintptr_t>(pointer);
  auto it = current_.find(address);
  if (it != current_.end()) return it->second;
  auto& placeholder = missing_[address];
  if (placeholder.empty()) {
    char text[64];
    std::snprintf(text, sizeof text, "<string 0x%llx not in the dump>",
                  static_cast<unsigned long long>(address));
    placeholder = text;
  }
  return placeholder;
}

}  // namespace kprof::tracer
