#pragma once
// The request driver: closed-loop OpenAI-compatible load against a serving engine (vLLM, SGLang,
// TensorRT-LLM, tools/serving/serve.py), its readiness wait and its figures. `kprof load` runs it
// alone; the warm capture sequence runs it for the length of each capture window.
#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

namespace kprof::load {

// What to send. Neither max_requests nor duration_s: the driver sends until stop().
struct LoadSpec {
  std::string base_url;             // http://HOST[:PORT][/prefix], no trailing /v1
  std::string model;                // empty: the first id GET /v1/models lists (read by start())
  std::string api = "completions";  // "completions" (/v1/completions) or "chat"
  int concurrency = 1;              // workers, each keeping one request in flight
  int prompt_tokens = 128;          // prompt length in words (one token each on serve.py)
  int output_tokens = 64;           // max_tokens of every request
  std::optional<std::int64_t> max_requests;  // send this many in all
  std::optional<double> duration_s;          // start new requests for this long
  double request_timeout_s = 600;            // one request's limit (and stop()'s wait)
  bool ignore_eos = true;  // send ignore_eos and min_tokens so each generates output_tokens
  // Sent as "Authorization: Bearer KEY" with every request (vLLM's and SGLang's --api-key,
  // trtllm-serve behind a gateway); empty: none.
  std::string api_key;
};

// Nearest rank: the smallest latency that at least p % of the completed requests did not exceed.
struct LatencySummary {
  double min_ms = 0, mean_ms = 0, p50_ms = 0, p90_ms = 0, p99_ms = 0, max_ms = 0;
};

struct LoadFigures {
  std::string endpoint;  // the full URL requests were POSTed to (its password, if any, redacted)
  std::string model, api;
  int concurrency = 0;
  int prompt_tokens = 0, output_tokens = 0;
  std::int64_t sent = 0, completed = 0, failed = 0;
  // In flight when abandon() stopped the load (Ctrl-C): neither completed nor failed.
  std::int64_t cancelled = 0;
  int max_in_flight = 0;
  double duration_s = 0;                               // from the first send to the last reply
  double requests_per_s = 0, output_tokens_per_s = 0;  // completed over duration_s
  std::optional<LatencySummary> latency;  // of completed requests; none completed: none
  std::map<std::string, std::int64_t> failures_by_cause;  // "HTTP 500", "connection", "timeout",
                                                          // "bad response"
  std::vector<std::string> failure_examples;              // at most 3, "cause: detail"
};

// Thrown for a server that cannot be driven: /v1/models unreachable or listing no model, a
// base URL that is not http(s)://HOST…. what() names the URL and what was wrong.
class LoadError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Requests to a loopback host (a local server, a kubectl port-forward) never go through a proxy
// (http_proxy and the like are ignored for them); others follow libcurl's proxy variables.
// Closed loop: start() launches `concurrency` workers, each sending one request, waiting for its
// reply, then sending the next, until the budget or duration is reached or stop() is called.
// The counters may be read from any thread while it runs.
class RequestDriver {
 public:
  explicit RequestDriver(LoadSpec spec);
  ~RequestDriver();  // stops (as stop()) if still running
  RequestDriver(const RequestDriver&) = delete;
  RequestDriver& operator=(const RequestDriver&) = delete;

  // Reads the model first when the spec names none (LoadError when it cannot), then starts the
  // workers. Once only (std::logic_error on a second call).
  void start();
  // Stops sending, waits for the requests in flight (each bounded by request_timeout_s) and
  // returns the figures. Idempotent: later calls return the same figures.
  LoadFigures stop();
  // Stops at once (Ctrl-C): the requests in flight are cut off within about a second and counted
  // as cancelled, not waited for. Then as stop().
  LoadFigures abandon();

  std::int64_t sent() const;
  std::int64_t completed() const;
  std::int64_t failed() const;
  int in_flight() const;
  // The budget or duration is reached and every worker has finished.
  bool finished() const;
  // The spec as started (model filled in once start() read it).
  const LoadSpec& spec() const;

 private:
  struct State;
  std::unique_ptr<State> state_;
};

struct Readiness {
  bool ready = false;
  std::string why_not;  // the last status or connection error seen, or "interrupted"
  double waited_s = 0;
};

// Polls GET base_url + path (about twice a second) until it answers 200, timeout_s passes or
// *interrupted turns true (may be null).
Readiness wait_ready(const std::string& base_url, const std::string& path, double timeout_s,
                     const std::atomic<bool>* interrupted, const std::string& api_key = "");

// Throws std::invalid_argument naming `what` when the value holds a control character (CR, LF,
// …): it would end its header and add others to every request. Every header value is checked,
// whatever it came from (KPROF_API_KEY, a pod's --api-key).
void check_header_value(const std::string& value, const std::string& what);

// Whether two URLs have the same scheme, host and port (the default port of the scheme when
// none is given): an API key given for one is sent to the other only then.
bool same_origin(const std::string& a, const std::string& b);

// "http://h:p/x/" and "http://h:p/x/v1" → "http://h:p/x" (the OpenAI base URL users give ends
// in /v1); LoadError for what is not an http(s) URL with a host, or has spaces, query, fragment.
std::string normalize_base_url(const std::string& base_url);

// The first model id of GET base_url/v1/models (within timeout_s, at most 30 s); LoadError
// naming the URL and what was wrong.
std::string read_served_model(const std::string& base_url, const std::string& api_key = "",
                              double timeout_s = 30);

}  // namespace kprof::load
