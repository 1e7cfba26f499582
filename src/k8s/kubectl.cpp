#include "k8s/kubectl.h"

#include <fmt/format.h>

#include <cstdlib>

#include "capture/child_process.h"

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

Kubectl::Kubectl(std::string path, std::string context, std::string kubeconfig)
    : path_(std::move(path)), context_(std::move(context)), kubeconfig_(std::move(kubeconfig)) {}

KubectlResult Kubectl::run(std::vector<std::string> args, std::chrono::milliseconds timeout) const {
  std::vector<std::string> argv = {path_};
  if (!kubeconfig_.empty()) argv.insert(argv.end(), {"--kubeconfig", kubeconfig_});
  if (!context_.empty()) argv.insert(argv.end(), {"--context", context_});
  argv.insert(argv.end(), args.begin(), args.end());
  calls_.push_back(argv);
  capture::ChildRequest request;
  request.argv = argv;
  request.timeout = timeout;
  request.survive_interrupt = cleaning_;
  capture::ChildResult child = capture::run_child(request);
  KubectlResult result;
  result.argv = argv;
  result.started = child.started;
  result.exit_code = child.started ? child.exit_code : -1;
  result.interrupted = child.interrupted;
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
    throw KubectlError("unreachable", fmt::format("cannot run {}: {}", path_, result.err));
  }
  if (result.exit_code != 0) {
    std::string message = result.err;
    while (!message.empty() && (message.back() == '\n' || message.back() == ' '))
      message.pop_back();
    std::string shown;
    for (size_t i = 1; i < result.argv.size(); ++i) shown += " " + result.argv[i];
    throw KubectlError(classify_failure(result.err),
                       fmt::format("`kubectl{}` failed (exit {}): {}", shown, result.exit_code,
                                   message.empty() ? "no message" : message));
  }
  return result;
}

nlohmann::json Kubectl::get_json(std::vector<std::string> args) const {
  KubectlResult result = check(std::move(args));
  try {
    return nlohmann::json::parse(result.out);
  } catch (const nlohmann::json::exception& error) {
    throw KubectlError("other", fmt::format("kubectl printed no JSON: {}", error.what()));
  }
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
