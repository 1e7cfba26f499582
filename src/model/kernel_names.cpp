#include "model/kernel_names.h"

#include <cxxabi.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <memory>
#include <vector>

namespace kprof::model {
namespace {

constexpr std::string_view kAnonymous = "(anonymous namespace)";
// Real mangled kernel names run to a few KiB; far longer ones are not names a tool recorded, and
// the demangler's time and output grow with its input.
constexpr size_t kMaxMangledLength = 64 * 1024;
constexpr size_t kMaxDemangledLength = 1024 * 1024;

bool starts_with(std::string_view text, std::string_view prefix) {
  return text.substr(0, prefix.size()) == prefix;
}

bool ends_with(std::string_view text, std::string_view suffix) {
  return text.size() >= suffix.size() && text.substr(text.size() - suffix.size()) == suffix;
}

bool is_identifier_char(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }

std::string_view trim(std::string_view text) {
  while (!text.empty() && text.front() == ' ') text.remove_prefix(1);
  while (!text.empty() && text.back() == ' ') text.remove_suffix(1);
  return text;
}

void replace_all(std::string& text, std::string_view from, std::string_view to) {
  for (size_t at = text.find(from); at != std::string::npos; at = text.find(from, at + to.size())) {
    text.replace(at, from.size(), to);
  }
}

bool is_open(char c) { return c == '<' || c == '(' || c == '[' || c == '{'; }
bool is_close(char c) { return c == '>' || c == ')' || c == ']' || c == '}'; }
// "->" (as in a memcpy's "(Pinned -> Device)") is no bracket.
bool is_arrow(std::string_view text, size_t i) {
  return i > 0 && text[i] == '>' && text[i - 1] == '-';
}

// The index of the bracket closing the one at `open`, npos when the text ends first.
size_t matching_close(std::string_view text, size_t open) {
  int depth = 0;
  for (size_t i = open; i < text.size(); ++i) {
    if (is_arrow(text, i)) continue;
    if (is_open(text[i])) ++depth;
    if (is_close(text[i]) && --depth == 0) return i;
  }
  return std::string_view::npos;
}

bool balanced(std::string_view text) {
  int depth = 0;
  for (size_t i = 0; i < text.size(); ++i) {
    if (is_arrow(text, i)) continue;
    if (is_open(text[i])) ++depth;
    if (is_close(text[i]) && --depth < 0) return false;
  }
  return depth == 0;
}

// ncu writes integral template arguments as casts, libstdc++ as literals with a type suffix.
struct IntegralCast {
  std::string_view type;
  std::string_view suffix;
};
constexpr IntegralCast kIntegralCasts[] = {
    {"(int)", ""},         {"(unsigned int)", "u"},
    {"(long)", "l"},       {"(unsigned long)", "ul"},
    {"(long long)", "ll"}, {"(unsigned long long)", "ull"},
};

std::string rewrite_integral_casts(const std::string& text) {
  std::string out;
  out.reserve(text.size());
  size_t i = 0;
  while (i < text.size()) {
    bool argument_start = i > 0 && (text[i - 1] == '<' || text[i - 1] == ' ');
    if (text[i] == '(' && argument_start) {
      auto digits_at = [&](size_t at) {
        size_t end = at;
        if (end < text.size() && text[end] == '-') ++end;
        size_t first_digit = end;
        while (end < text.size() && std::isdigit(static_cast<unsigned char>(text[end]))) ++end;
        return end > first_digit ? end : std::string::npos;
      };
      std::string_view rest(text.data() + i, text.size() - i);
      bool rewritten = false;
      if (starts_with(rest, "(bool)0") || starts_with(rest, "(bool)1")) {
        size_t end = digits_at(i + 6);
        if (end == i + 7) {
          out += text[i + 6] == '1' ? "true" : "false";
          i = end;
          rewritten = true;
        }
      }
      for (const IntegralCast& cast : kIntegralCasts) {
        if (rewritten || !starts_with(rest, cast.type)) continue;
        size_t end = digits_at(i + cast.type.size());
        if (end == std::string::npos) continue;
        out.append(text, i + cast.type.size(), end - i - cast.type.size());
        out += cast.suffix;
        i = end;
        rewritten = true;
      }
      if (rewritten) continue;
    }
    out += text[i++];
  }
  return out;
}

// ncu's and nsys's own spellings of what libstdc++ spells otherwise.
std::string rewrite_ncu_spellings(std::string text) {
  replace_all(text, "<unnamed>", kAnonymous);
  replace_all(text, "operator ()", "operator()");
  // "[lambda(int) (instance 2)]" -> "{lambda(int)#2}"
  for (size_t at = text.find("[lambda("); at != std::string::npos;
       at = text.find("[lambda(", at + 1)) {
    size_t params_end = matching_close(text, at + 7);
    if (params_end == std::string::npos) break;
    size_t tail = params_end + 1;
    std::string_view rest(text.data() + tail, text.size() - tail);
    size_t skip = starts_with(rest, " mutable") ? 8 : 0;
    rest.remove_prefix(skip);
    if (!starts_with(rest, " (instance ")) continue;
    size_t digits = 11, end = digits;
    while (end < rest.size() && std::isdigit(static_cast<unsigned char>(rest[end]))) ++end;
    if (end == digits || rest.substr(end, 2) != ")]") continue;
    std::string instance(rest.substr(digits, end - digits));
    text.replace(tail, skip + end + 2, "#" + instance + "}");
    text[at] = '{';
  }
  return rewrite_integral_casts(text);
}

// Drops the parameter list and, for a template specialisation, the return type:
// "void ns::k<int>(int*)" -> "ns::k<int>".
std::string_view strip_signature(std::string_view name) {
  name = trim(name);
  if (!name.empty() && name.back() == ')') {
    int depth = 0;
    for (size_t i = name.size(); i-- > 0;) {
      if (is_arrow(name, i)) continue;
      if (name[i] == ')') ++depth;
      if (name[i] == '(' && --depth == 0) {
        // A parameter list follows its function's name directly ("f(int)", "f<T>(int)");
        // "Memcpy HtoD (Pinned -> Device)" has none.
        if (i > 0 && name[i - 1] != ' ') name = name.substr(0, i);
        break;
      }
    }
  }
  // Only a specialisation's demangled name starts with its return type (ncu's and libstdc++'s
  // alike): "void f<T>", "std::enable_if<...>::type f<T>".
  if (!name.empty() && name.back() == '>') {
    int depth = 0;
    size_t cut = std::string_view::npos;
    for (size_t i = 0; i < name.size(); ++i) {
      if (is_arrow(name, i)) continue;
      if (is_open(name[i])) ++depth;
      if (is_close(name[i])) --depth;
      if (name[i] == ' ' && depth == 0) cut = i;
    }
    if (cut != std::string_view::npos) name = name.substr(cut + 1);
  }
  return name;
}

std::vector<std::string_view> split_arguments(std::string_view inner) {
  std::vector<std::string_view> parts;
  int depth = 0;
  size_t start = 0;
  for (size_t i = 0; i < inner.size(); ++i) {
    if (is_arrow(inner, i)) continue;
    if (is_open(inner[i])) ++depth;
    if (is_close(inner[i])) --depth;
    if (inner[i] == ',' && depth == 0) {
      parts.push_back(inner.substr(start, i - start));
      start = i + 1;
    }
  }
  parts.push_back(inner.substr(start));
  return parts;
}

std::string normalize_arguments(std::string_view text);

// One template argument or parameter: libstdc++ writes "bool const*" where ncu writes
// "const bool *", and no return type before a function that scopes a lambda.
std::string normalize_argument(std::string_view argument) {
  argument = trim(argument);
  if (starts_with(argument, "void ") && argument.size() > 5 &&
      (is_identifier_char(argument[5]) || argument[5] == ':')) {
    argument.remove_prefix(5);
  }
  std::string text = normalize_arguments(argument);
  std::string tight;
  for (char c : text) {
    if ((c == '*' || c == '&') && !tight.empty() && tight.back() == ' ') tight.pop_back();
    tight += c;
  }
  if (starts_with(tight, "const ")) {
    size_t end = tight.size();
    while (end > 6 && (tight[end - 1] == '*' || tight[end - 1] == '&')) --end;
    std::string base(trim(std::string_view(tight).substr(6, end - 6)));
    tight = base + " const" + tight.substr(end);
  }
  return tight;
}

std::string normalize_arguments(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  size_t i = 0;
  while (i < text.size()) {
    if (text.substr(i, kAnonymous.size()) == kAnonymous) {
      out += kAnonymous;
      i += kAnonymous.size();
      continue;
    }
    char c = text[i];
    if (c != '<' && c != '(') {
      out += c;
      ++i;
      continue;
    }
    size_t close = matching_close(text, i);
    if (close == std::string_view::npos || text[close] != (c == '<' ? '>' : ')')) {
      out.append(text.substr(i));
      break;
    }
    std::string joined;
    std::string_view inner = text.substr(i + 1, close - i - 1);
    if (!trim(inner).empty()) {
      for (std::string_view argument : split_arguments(inner)) {
        if (!joined.empty()) joined += ", ";
        joined += normalize_argument(argument);
      }
    }
    std::string_view after = text.substr(close + 1);
    if (c == '<') {
      out += '<';
      out += joined;
      out += !joined.empty() && joined.back() == '>' ? " >" : ">";
    } else if (!(ends_with(out, ">") &&
                 (starts_with(after, "::") || starts_with(after, " const::")))) {
      // Kept unless it is a template function's parameter list scoping a local entity
      // ("f<T>(T1 const&)::{lambda()#1}"), which ncu spells with template parameters.
      out += '(';
      out += joined;
      out += ')';
    }
    i = close + 1;
  }
  return out;
}

}  // namespace

bool is_mangled_name(std::string_view name) { return name.size() > 2 && starts_with(name, "_Z"); }

std::optional<std::string> demangle(std::string_view name) {
  if (!is_mangled_name(name) || name.size() > kMaxMangledLength) return std::nullopt;
  std::string mangled(name);
  int status = 0;
  std::unique_ptr<char, decltype(&std::free)> demangled(
      abi::__cxa_demangle(mangled.c_str(), nullptr, nullptr, &status), &std::free);
  if (status != 0 || !demangled) return std::nullopt;
  std::string text(demangled.get());
  if (text.size() > kMaxDemangledLength) return std::nullopt;
  return text;
}

std::string readable_kernel_name(std::string_view name) {
  if (auto demangled = demangle(name)) return *demangled;
  return std::string(name);
}

std::string canonical_kernel_name(std::string_view name) {
  std::string readable = rewrite_ncu_spellings(readable_kernel_name(trim(name)));
  return normalize_arguments(strip_signature(readable));
}

std::string canonical_kernel_name(const Kernel& kernel) {
  if (auto demangled = demangle(kernel.mangled_name)) return canonical_kernel_name(*demangled);
  for (const std::string* name :
       {&kernel.demangled_name, &kernel.function_name, &kernel.mangled_name}) {
    if (!name->empty()) return canonical_kernel_name(*name);
  }
  return {};
}

namespace {

// The class a template argument names: "cutlass::gemm::kernel::B2bGemm<...>" -> "B2bGemm".
std::string_view class_of_argument(std::string_view argument) {
  argument = trim(argument);
  argument = argument.substr(0, argument.find('<'));
  size_t colons = argument.rfind("::");
  return colons == std::string_view::npos ? argument : argument.substr(colons + 2);
}

// The first template argument of "name<A, B>" ("" when there is none or it is cut short).
std::string_view first_template_argument(std::string_view name) {
  size_t open = name.find('<');
  if (open == std::string_view::npos) return {};
  size_t close = matching_close(name, open);
  if (close == std::string_view::npos) return {};
  auto arguments = split_arguments(name.substr(open + 1, close - open - 1));
  return arguments.empty() ? std::string_view() : trim(arguments.front());
}

bool is_identifier(std::string_view text) {
  return !text.empty() && !std::isdigit(static_cast<unsigned char>(text.front())) &&
         std::all_of(text.begin(), text.end(), is_identifier_char);
}

// FlashAttention 3 wraps its kernels in enable_sm90_or_later<> / enable_sm80_to_sm89<>.
bool is_architecture_wrapper(std::string_view name) { return name.rfind("enable_sm", 0) == 0; }

}  // namespace

bool is_wrapper_kernel_base(std::string_view function) {
  return function == "Kernel" || function == "Kernel2" || function == "device_kernel";
}

std::string wrapper_kernel_display_name(std::string_view name) {
  if (is_mangled_name(trim(name)) && !demangle(trim(name))) return {};
  std::string readable = rewrite_ncu_spellings(readable_kernel_name(trim(name)));
  if (!balanced(readable)) return {};
  std::string_view qualified = strip_signature(readable);
  size_t open = qualified.find('<');
  if (open == std::string_view::npos) return {};
  std::string_view base = class_of_argument(qualified.substr(0, open));
  if (!is_wrapper_kernel_base(base)) return {};
  std::string_view argument = first_template_argument(qualified);
  std::string_view operator_class = class_of_argument(argument);
  while (is_architecture_wrapper(operator_class)) {
    argument = first_template_argument(argument);
    operator_class = class_of_argument(argument);
  }
  if (!is_identifier(operator_class)) return {};
  return std::string(base) + "<" + std::string(operator_class) + ">";
}

std::vector<std::string> canonical_kernel_names(const Kernel& kernel) {
  std::vector<std::string> names;
  auto add = [&](std::string name) {
    if (!name.empty() && std::find(names.begin(), names.end(), name) == names.end()) {
      names.push_back(std::move(name));
    }
  };
  add(canonical_kernel_name(kernel));
  for (const std::string* name :
       {&kernel.mangled_name, &kernel.demangled_name, &kernel.function_name}) {
    if (!name->empty()) add(canonical_kernel_name(*name));
  }
  return names;
}

std::string function_base_name(std::string_view name) {
  if (is_mangled_name(trim(name)) && !demangle(trim(name))) return {};
  std::string readable = rewrite_ncu_spellings(readable_kernel_name(trim(name)));
  if (!balanced(readable)) return {};
  std::string_view base = strip_signature(readable);
  if (!base.empty() && base.back() == '>') {
    int depth = 0;
    for (size_t i = base.size(); i-- > 0;) {
      if (is_arrow(base, i)) continue;
      if (is_close(base[i])) ++depth;
      if (is_open(base[i]) && --depth == 0) {
        base = base.substr(0, i);
        break;
      }
    }
  }
  int depth = 0;
  size_t start = 0;
  for (size_t i = 0; i + 1 < base.size(); ++i) {
    if (is_open(base[i])) ++depth;
    if (is_close(base[i])) --depth;
    if (depth == 0 && base[i] == ':' && base[i + 1] == ':') start = i + 2;
  }
  base = base.substr(start);
  bool identifier = !base.empty() && !std::isdigit(static_cast<unsigned char>(base.front())) &&
                    std::all_of(base.begin(), base.end(), is_identifier_char);
  return identifier ? std::string(base) : std::string();
}

}  // namespace kprof::model
