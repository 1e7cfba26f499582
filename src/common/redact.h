// Secrets kept out of everything kprof prints or writes: command lines (a server's --api-key, a
// pod's args), environments (HF_TOKEN=…), URLs (http://user:pass@host), log lines (ncu's console,
// which carries the profiled program's own output) and JSON documents (bundle manifests, cleanup
// receipts, the sister Deployment). Applied where such a value enters what kprof shows (an argv
// as it is recorded, a log as it is read, a document kubectl returns), never over kprof's
// finished JSON, CSV or tables, whose kernel names are data. One rule:
//   - the value of a secret flag, as the next word or after '=': a flag whose name (case and
//     '-'/'_' aside) is key, token, secret or password, ends in _key, _token, _secret, _apikey, or
//     holds password, passwd or secret (--api-key, --hf-token, --db-password; not --tokenizer,
//     --max-tokens, --ssl-keyfile);
//   - the value of NAME=VALUE and of "NAME": VALUE / NAME: VALUE where NAME is such a name
//     (HF_TOKEN=…, api_key='…' in a Python repr, "api_key": "…" in JSON text; not a C++ scope,
//     sort_key::kernel);
//   - the credentials after "Bearer" and after "Authorization:" (its scheme kept);
//   - the password of a URL's user:password@.
// What is redacted is replaced by kRedacted; quotes and punctuation around a value stay, so a
// command line still reads as one.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

namespace kprof {

inline constexpr std::string_view kRedacted = "***";

// Whether NAME (a flag without its dashes, an environment variable, a JSON key) names a secret.
bool is_secret_name(std::string_view name);

// Text of any kind (a command line, a log, a message), its words redacted by the rule above.
std::string redact_secrets(std::string_view text);

// An argv: each word redacted, and the word after a secret flag.
std::vector<std::string> redact_secrets(const std::vector<std::string>& argv);

// A URL with its password (if any) replaced.
std::string redact_url(std::string_view url);

// Every string of a JSON document redacted as text; an array of strings also as an argv; the
// string value of a key that names a secret, of {"name": SECRET, "value": …} (a Kubernetes
// env entry) and of ["SECRET", "…"] (a name/value pair) replaced whole.
void redact_secrets_in_json(nlohmann::json& document);

}  // namespace kprof
