#include "common/redact.h"

#include <algorithm>
#include <cctype>

namespace kprof {
namespace {

bool is_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

bool is_name_char(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '_' || c == '-' || c == '.';
}

std::string lowered(std::string_view text) {
  std::string out(text);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

bool ends_with(std::string_view text, std::string_view suffix) {
  return text.size() >= suffix.size() && text.substr(text.size() - suffix.size()) == suffix;
}

// What wraps a value in text: opening quotes and brackets before it, closing ones and list
// punctuation after it.
constexpr std::string_view kOpening = "'\"([{<`";
constexpr std::string_view kClosing = "'\"`)]}>,;";

// Where the value at the start of `text` ends: inside its quotes when it is quoted (a
// backslash escapes the next character), else at the first closing or list punctuation.
// `begin` is where the value itself starts (after its opening quotes and brackets).
size_t value_end(std::string_view text, size_t& begin) {
  begin = 0;
  while (begin < text.size() && kOpening.find(text[begin]) != std::string_view::npos) ++begin;
  const char quote = begin > 0 ? text[begin - 1] : '\0';
  if (quote == '\'' || quote == '"' || quote == '`') {
    for (size_t i = begin; i < text.size(); ++i) {
      if (text[i] == '\\') {
        ++i;
      } else if (text[i] == quote) {
        return i;
      }
    }
    return text.size();
  }
  size_t end = text.find_first_of(",;)]}>&'\"`", begin);
  return end == std::string_view::npos ? text.size() : end;
}

// The word with its value (what lies inside quotes and brackets) replaced; a word that is all
// punctuation stays. What follows the value (", port=8000") is left to the caller.
std::string redact_core(std::string_view word, size_t* rest_at = nullptr) {
  size_t begin = 0;
  size_t end = value_end(word, begin);
  if (rest_at != nullptr) *rest_at = end;
  if (end == begin) return std::string(word.substr(0, end));
  return std::string(word.substr(0, begin)) + std::string(kRedacted);
}

// A word without the quotes and brackets around it.
std::string_view unwrapped(std::string_view word) {
  while (!word.empty() && kOpening.find(word.front()) != std::string_view::npos)
    word.remove_prefix(1);
  while (!word.empty() && kClosing.find(word.back()) != std::string_view::npos)
    word.remove_suffix(1);
  return word;
}

bool is_auth_scheme(std::string_view word) {
  std::string w = lowered(unwrapped(word));
  return w == "bearer" || w == "basic" || w == "token" || w == "digest";
}

// "--api-key" is a secret flag — as a word of its own, or quoted as an argv's element in JSON or
// YAML ("--api-key",): its next word is the secret. Within a sentence ("(--api-key, in …") it is
// a flag's name, not a command line.
bool is_secret_flag(std::string_view word) {
  if (!word.empty() && word.back() == ',' && word.size() > 1 &&
      (word[word.size() - 2] == '"' || word[word.size() - 2] == '\'')) {
    word.remove_suffix(1);
  }
  if (word.size() >= 2 && (word.front() == '"' || word.front() == '\'') &&
      word.back() == word.front()) {
    word = word.substr(1, word.size() - 2);
  }
  return word.size() > 2 && word.substr(0, 2) == "--" && is_secret_name(word.substr(2));
}

std::string redact_inline(std::string_view word);

// NAME=VALUE or --NAME=VALUE (within any word: "Namespace(api_key='x',"): the value redacted when
// NAME names a secret. The name is the run of name characters before the '='; what follows the
// value is read again (api_key=x,token=y).
std::string redact_assignment(std::string_view word) {
  size_t equals = word.find('=');
  if (equals == std::string_view::npos) return std::string(word);
  size_t start = equals;
  while (start > 0 && is_name_char(word[start - 1])) --start;
  std::string_view name = word.substr(start, equals - start);
  while (!name.empty() && name.front() == '-') name.remove_prefix(1);
  std::string_view value = word.substr(equals + 1);
  if (!is_secret_name(name) || unwrapped(value).empty()) {
    return std::string(word.substr(0, equals + 1)) + redact_assignment(value);
  }
  size_t rest = 0;
  std::string redacted = redact_core(value, &rest);
  return std::string(word.substr(0, equals + 1)) + redacted + redact_inline(value.substr(rest));
}

enum class Next { kNothing, kSecret, kSecretAfterScheme };

// "api_key": or 'api_key': (JSON text, a Python repr) ends a word whose next word is the secret
// (after its scheme, for "Authorization":); "api_key":"x" in one word has its value redacted
// here, and what follows it read again.
Next redact_key_colon(std::string& word) {
  size_t colon = word.find(':');
  while (colon != std::string::npos) {
    // A URL's scheme ("http://") is no key, nor a C++ scope ("sort_key::kernel<int>").
    const bool scope = (colon + 1 < word.size() && word[colon + 1] == ':') ||
                       (colon > 0 && word[colon - 1] == ':');
    if (colon > 0 && !scope && !(colon + 1 < word.size() && word[colon + 1] == '/')) {
      size_t start = colon;
      while (start > 0 &&
             (is_name_char(word[start - 1]) || word[start - 1] == '"' || word[start - 1] == '\'')) {
        --start;
      }
      std::string_view key = unwrapped(std::string_view(word).substr(start, colon - start));
      if (is_secret_name(key)) {
        const bool header = lowered(key) == "authorization";
        std::string_view value = std::string_view(word).substr(colon + 1);
        if (unwrapped(value).empty()) return header ? Next::kSecretAfterScheme : Next::kSecret;
        if (header && is_auth_scheme(value)) return Next::kSecret;
        size_t rest = 0;
        std::string redacted = redact_core(value, &rest);
        std::string tail(value.substr(rest));
        Next after = redact_key_colon(tail);
        word = word.substr(0, colon + 1) + redacted + tail;
        return after;
      }
    }
    colon = word.find(':', colon + 1);
  }
  return Next::kNothing;
}

std::string redact_inline(std::string_view word) {
  std::string out = redact_assignment(word);
  redact_key_colon(out);
  return out;
}

// One word of text, and what the next word is.
std::string redact_word(std::string_view word, Next& next) {
  // A YAML list's bullet comes before the value it lists.
  if (next != Next::kNothing && word == "-") return std::string(word);
  if (next != Next::kNothing && !(word.size() > 2 && word.substr(0, 2) == "--")) {
    if (next == Next::kSecretAfterScheme && is_auth_scheme(word)) {
      next = Next::kSecret;
      return std::string(word);
    }
    next = Next::kNothing;
    size_t rest = 0;
    std::string redacted = redact_core(word, &rest);
    return redacted + redact_inline(word.substr(rest));
  }
  next = Next::kNothing;
  std::string out = redact_url(word);
  out = redact_assignment(out);
  if (lowered(unwrapped(out)) == "bearer") {
    next = Next::kSecret;
  } else if (is_secret_flag(out)) {
    next = Next::kSecret;
  } else {
    next = redact_key_colon(out);
  }
  return out;
}

// Cheap test first: most text kprof prints holds none of what a secret comes with.
bool might_hold_secret(std::string_view text) {
  std::string low = lowered(text);
  for (std::string_view cue :
       {"key", "token", "secret", "passw", "passwd", "bearer", "authorization", "@"}) {
    if (low.find(cue) != std::string::npos) return true;
  }
  return false;
}

}  // namespace

bool is_secret_name(std::string_view name) {
  while (!name.empty() && (name.front() == '-' || name.front() == '$')) name.remove_prefix(1);
  std::string n = lowered(name);
  std::replace(n.begin(), n.end(), '-', '_');
  if (n.empty()) return false;
  if (n.find("password") != std::string::npos || n.find("passwd") != std::string::npos ||
      n.find("secret") != std::string::npos) {
    return true;
  }
  return n == "key" || n == "token" || n == "apikey" || n == "authorization" ||
         ends_with(n, "_key") || ends_with(n, "_token") || ends_with(n, "_apikey");
}

std::string redact_url(std::string_view url) {
  size_t scheme = url.find("://");
  if (scheme == std::string_view::npos) return std::string(url);
  size_t authority = scheme + 3;
  size_t end = url.find_first_of("/?#", authority);
  if (end == std::string_view::npos) end = url.size();
  size_t at = url.rfind('@', end);
  if (at == std::string_view::npos || at < authority) return std::string(url);
  size_t colon = url.find(':', authority);
  if (colon == std::string_view::npos || colon > at || colon + 1 == at) return std::string(url);
  return std::string(url.substr(0, colon + 1)) + std::string(kRedacted) +
         std::string(url.substr(at));
}

std::string redact_secrets(std::string_view text) {
  if (!might_hold_secret(text)) return std::string(text);
  std::string out;
  out.reserve(text.size());
  Next next = Next::kNothing;
  // A value follows its flag on the same line (a command line, a log line); only a quoted one
  // — an element of an argv printed as a JSON array, one per line — has it on the next.
  bool quoted = false;
  size_t i = 0;
  while (i < text.size()) {
    if (is_space(text[i])) {
      if (text[i] == '\n' && !quoted) next = Next::kNothing;
      out.push_back(text[i++]);
      continue;
    }
    size_t end = i;
    while (end < text.size() && !is_space(text[end])) ++end;
    quoted = text[i] == '"' || text[i] == '\'';
    out += redact_word(text.substr(i, end - i), next);
    i = end;
  }
  return out;
}

std::vector<std::string> redact_secrets(const std::vector<std::string>& argv) {
  std::vector<std::string> out;
  out.reserve(argv.size());
  bool secret_next = false;
  for (const std::string& word : argv) {
    if (secret_next && !(word.size() > 2 && word.compare(0, 2, "--") == 0)) {
      out.emplace_back(word.empty() ? word : std::string(kRedacted));
      secret_next = false;
      continue;
    }
    secret_next = is_secret_flag(word) && unwrapped(word) == word;
    out.push_back(redact_secrets(word));
  }
  return out;
}

void redact_secrets_in_json(nlohmann::json& document) {
  if (document.is_string()) {
    document = redact_secrets(document.get_ref<const std::string&>());
    return;
  }
  if (document.is_array()) {
    bool all_strings = std::all_of(document.begin(), document.end(),
                                   [](const nlohmann::json& v) { return v.is_string(); });
    if (all_strings && !document.empty()) {
      std::vector<std::string> words = document.get<std::vector<std::string>>();
      // A name/value pair: ["HF_TOKEN", "…"].
      if (words.size() == 2 && !words[0].empty() && words[0][0] != '-' &&
          is_secret_name(words[0]) && !words[1].empty()) {
        words[1] = std::string(kRedacted);
      }
      document = redact_secrets(words);
      return;
    }
    for (auto& element : document) redact_secrets_in_json(element);
    return;
  }
  if (!document.is_object()) return;
  // A Kubernetes env entry: {"name": "HF_TOKEN", "value": "…"}.
  auto name = document.find("name");
  auto value = document.find("value");
  if (name != document.end() && value != document.end() && name->is_string() &&
      value->is_string() && is_secret_name(name->get_ref<const std::string&>()) &&
      !value->get_ref<const std::string&>().empty()) {
    *value = std::string(kRedacted);
  }
  for (auto& [key, entry] : document.items()) {
    if (is_secret_name(key) && entry.is_string() && !entry.get_ref<const std::string&>().empty()) {
      entry = std::string(kRedacted);
      continue;
    }
    redact_secrets_in_json(entry);
  }
}

}  // namespace kprof
