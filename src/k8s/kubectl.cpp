#include "k8s/kubectl.h"

#include <fmt/format.h>
#include <re2/re2.h>

#include <algorithm>
#include <cstdlib>
#include <sstream>

#include "common/child_process.h"
#include "common/json_table.h"
#include "common/redact.h"
#include "common/text.h"

namespace kprof::k8s {

std::string classify_failure(const std::string& text) {
  auto has = [&](const char* what) { return text.find(what) != std::string::npos; };
  if (has("ephemeral containers are disabled")) return "ephemeral_disabled";
  if (has("unknown flag")) return "unknown_flag";
  if (has("(Forbidden)") || has("is forbidden") || has("Forbidden")) return "forbidden";
  if (has("(NotFound)") || has("not found")) return "not_found";
  if (has("Unable to connect") || has("connection refused") || has("no such host"))
    return "unreachable";
  return "other";
}

namespace {

// Control characters (a terminal escape in a server's message) shown as \xNN; tabs as spaces.
std::string printable(std::string_view line) {
  std::string out;
  for (unsigned char c : line) {
    if (c == '\t') {
      out += ' ';
    } else if (c < 0x20 || c == 0x7f) {
      out += fmt::format("\\x{:02x}", c);
    } else {
      out += static_cast<char>(c);
    }
  }
  return out;
}

}  // namespace

std::string condense_message(const std::string& stderr_text) {
  // klog's header: severity, MMDD, time, thread id, file:line]
  static const RE2 kKlog(R"([IWEF]\d{4} \d\d:\d\d:\d\d\.\d+\s+\d+ [^ \]]+\] (.*))");
  // Its structured form: "Unhandled Error" err="…" (kubectl 1.31+).
  static const RE2 kStructured(R"re("[^"]*" err="((?:[^"\\]|\\.)*)".*)re");
  std::vector<std::string> own, logged;
  std::istringstream lines(stderr_text);
  std::string line;
  while (std::getline(lines, line)) {
    std::string text(trim(line));
    if (text.empty()) continue;
    std::string message;
    if (RE2::FullMatch(text, kKlog, &message)) {
      std::string err;
      if (RE2::FullMatch(message, kStructured, &err)) {
        message.clear();
        for (size_t i = 0; i < err.size(); ++i) {
          if (err[i] == '\\' && i + 1 < err.size()) ++i;
          message += err[i];
        }
      }
      logged.push_back(printable(message));
    } else {
      own.push_back(printable(text));
    }
  }
  std::vector<std::string>& chosen = own.empty() ? logged : own;
  std::string out;
  std::vector<std::string> seen;
  for (const std::string& text : chosen) {
    if (std::find(seen.begin(), seen.end(), text) != seen.end()) continue;
    seen.push_back(text);
    out += (out.empty() ? "" : "; ") + text;
  }
  out = redact_secrets(out);  // kubectl's words may quote a pod's args: where a key enters
  constexpr size_t kLimit = 600;
  if (out.size() > kLimit) {
    size_t cut = kLimit;
    while (cut > 0 && (static_cast<unsigned char>(out[cut]) & 0xC0) == 0x80) --cut;  // UTF-8
    out = out.substr(0, cut) + "…";
  }
  return out;
}

std::string shown_call(const std::vector<std::string>& argv) {
  std::vector<std::string> shown = {"kubectl"};
  if (argv.size() > 1) shown.insert(shown.end(), argv.begin() + 1, argv.end());
  return quoted_command(redact_secrets(shown));  // an exec's command line may carry a key
}

Kubectl::Kubectl(std::string path, std::string context, std::string kubeconfig)
    : path_(std::move(path)), context_(std::move(context)), kubeconfig_(std::move(kubeconfig)) {}

KubectlResult Kubectl::run(std::vector<std::string> args, std::chrono::milliseconds timeout) const {
  return run(std::move(args), timeout, KubectlStream{});
}

KubectlResult Kubectl::run(
    std::vector<std::string> args, std::chrono::milliseconds timeout,
    const std::function<void(const std::string& line, bool from_stderr)>& on_line) const {
  KubectlStream stream;
  stream.on_line = on_line;
  return run(std::move(args), timeout, stream);
}

std::vector<std::string> Kubectl::global_args() const {
  std::vector<std::string> argv;
  if (!kubeconfig_.empty()) argv.insert(argv.end(), {"--kubeconfig", kubeconfig_});
  if (!context_.empty()) argv.insert(argv.end(), {"--context", context_});
  return argv;
}

KubectlResult Kubectl::run(std::vector<std::string> args, std::chrono::milliseconds timeout,
                           const KubectlStream& stream) const {
  std::vector<std::string> argv = {path_};
  for (std::string& arg : global_args()) argv.push_back(std::move(arg));
  argv.insert(argv.end(), args.begin(), args.end());
  ChildRequest request;
  request.argv = argv;
  request.timeout = timeout;
  request.survive_interrupt = cleaning_ || stream.survive_interrupt;
  request.keep_output = stream.keep_output;
  if (stream.on_line) {
    request.on_line = [&stream](const std::string& line, bool from_stderr) {
      stream.on_line(line, from_stderr);
      return false;
    };
  }
  request.on_tick = stream.on_tick;
  ChildResult child = run_child(request);
  KubectlResult result;
  result.argv = argv;
  result.started = child.started;
  result.exit_code = child.started ? child.exit_code : -1;
  result.interrupted = child.interrupted;
  result.elapsed = child.elapsed;
  result.combined = std::move(child.combined);
  result.out = std::move(child.out);
  result.err = child.started ? std::move(child.err) : child.start_error;
  if (child.timed_out)
    result.err += fmt::format("\n(kprof stopped kubectl after {} s)", timeout.count() / 1000);
  return result;
}

KubectlResult Kubectl::check(std::vector<std::string> args,
                             std::chrono::milliseconds timeout) const {
  KubectlResult result = run(std::move(args), timeout);
  if (!result.started) {
    throw KubectlError("unreachable", fmt::format("cannot run {}: {}", quoted_command({path_}),
                                                  condense_message(result.err)));
  }
  if (result.exit_code != 0) {
    std::string message = condense_message(result.err);
    throw KubectlError(classify_failure(result.err),
                       fmt::format("`{}` failed (exit {}): {}", shown_call(result.argv),
                                   result.exit_code, message.empty() ? "no message" : message));
  }
  return result;
}

nlohmann::json Kubectl::get_json(std::vector<std::string> args) const {
  KubectlResult result = check(std::move(args));
  nlohmann::json document = parse_json_or_discarded(result.out);
  if (document.is_discarded()) {
    throw KubectlError("other",
                       fmt::format("`{}` printed no JSON kprof can read", shown_call(result.argv)));
  }
  return document;
}

KubectlVersions parse_versions(const nlohmann::json& version_json) {
  KubectlVersions versions;
  auto minor_of = [](const nlohmann::json& v) {
    std::string minor = v.value("minor", "0");
    return std::atoi(minor.c_str());  // "31+" on some providers
  };
  if (version_json.contains("clientVersion")) {
    versions.client_minor = minor_of(version_json["clientVersion"]);
    versions.client_text = version_json["clientVersion"].value("gitVersion", "");
  }
  if (version_json.contains("serverVersion")) {
    versions.server_minor = minor_of(version_json["serverVersion"]);
    versions.server_text = version_json["serverVersion"].value("gitVersion", "");
  }
  return versions;
}

}  // namespace kprof::k8s
