#include "load/request_driver.h"

#include <curl/curl.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <mutex>
#include <nlohmann/json.hpp>
#include <thread>
#include <utility>

#include "common/redact.h"
#include "common/text.h"
#include "common/utf8.h"
#include "load/openai_reply.h"

// One libcurl easy handle per worker thread, each doing a blocking curl_easy_perform, rather than
// one multi handle driving every transfer: a worker is exactly the closed loop the load is (send,
// wait, send the next), each request's latency is measured around its own call, and each worker
// keeps its own keep-alive connection as load.py's workers do. The concurrencies a capture needs
// (1 to a few hundred) are a few hundred threads at most, which costs nothing next to an engine;
// a multi handle would only pay off at thousands of connections.

namespace kprof::load {
namespace {

using Clock = std::chrono::steady_clock;

// A completion reply of max_tokens is kilobytes; past this the transfer stops (each worker holds
// at most one reply).
constexpr std::size_t kMaxReplyBytes = 8u << 20;
constexpr std::size_t kMaxExamples = 3;
constexpr std::size_t kMaxDetailChars = 200;
// After a connection failure a worker waits this long before its next request, so a dead
// server is not hammered in a tight loop for the rest of a duration.
constexpr std::chrono::milliseconds kConnectionBackoff{100};

void init_curl_once() {
  static std::once_flag once;
  std::call_once(once, [] {
    if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) {
      throw LoadError("libcurl could not be initialised");
    }
  });
}

struct CurlHandle {
  CURL* curl = nullptr;
  curl_slist* headers = nullptr;
  explicit CurlHandle(const std::string& api_key) {
    // Checked before the handle exists: a constructor that throws runs no destructor, so a
    // handle made first was leaked by every refused key (LeakSanitizer, scripts/test-sanitizers).
    try {
      check_header_value(api_key, "the API key");
    } catch (const std::invalid_argument& error) {
      throw LoadError(error.what());
    }
    curl = curl_easy_init();
    if (curl == nullptr) throw LoadError("libcurl could not create a handle");
    headers = curl_slist_append(nullptr, "Content-Type: application/json");
    // No "Expect: 100-continue" round trip before a large prompt.
    headers = curl_slist_append(headers, "Expect:");
    if (!api_key.empty())
      headers = curl_slist_append(headers, ("Authorization: Bearer " + api_key).c_str());
    curl_easy_setopt(curl, CURLOPT_HTTPHEADER, headers);
  }
  ~CurlHandle() {
    curl_slist_free_all(headers);
    curl_easy_cleanup(curl);
  }
  CurlHandle(const CurlHandle&) = delete;
  CurlHandle& operator=(const CurlHandle&) = delete;
};

// Loopback targets (a local server, a kubectl port-forward) are never reached through a proxy:
// http_proxy/HTTPS_PROXY would send every request, with its Authorization header, to the proxy.
bool is_loopback_url(const std::string& url) {
  std::unique_ptr<CURLU, decltype(&curl_url_cleanup)> parsed(curl_url(), curl_url_cleanup);
  if (!parsed || curl_url_set(parsed.get(), CURLUPART_URL, url.c_str(), 0) != CURLUE_OK) {
    return false;
  }
  char* host = nullptr;
  if (curl_url_get(parsed.get(), CURLUPART_HOST, &host, 0) != CURLUE_OK) return false;
  std::string name(host);
  curl_free(host);
  for (char& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return name == "localhost" || name.rfind("127.", 0) == 0 || name == "[::1]" || name == "::1";
}

std::size_t append_reply(char* data, std::size_t size, std::size_t count, void* user) {
  auto* reply = static_cast<std::string*>(user);
  const std::size_t bytes = size * count;
  if (reply->size() + bytes > kMaxReplyBytes) return 0;  // aborts the transfer
  reply->append(data, bytes);
  return bytes;
}

// curl's "Failed to connect to h port p after 3 ms: …": the milliseconds vary from run to run
// and say nothing the cause does not.
std::string without_elapsed(std::string message) {
  const std::size_t at = message.find(" after ");
  if (at == std::string::npos) return message;
  std::size_t end = at + 7;
  while (end < message.size() && message[end] >= '0' && message[end] <= '9') ++end;
  if (end > at + 7 && message.compare(end, 3, " ms") == 0) message.erase(at, end + 3 - at);
  return message;
}

struct HttpResult {
  CURLcode code = CURLE_OK;
  std::string curl_error;  // CURLOPT_ERRORBUFFER, or curl_easy_strerror
  long status = 0;
  std::string body;
};

// curl's progress callback (about once a second, and on every chunk): non-zero aborts the
// transfer with CURLE_ABORTED_BY_CALLBACK.
int cancel_when_asked(void* cancel, curl_off_t, curl_off_t, curl_off_t, curl_off_t) {
  return static_cast<const std::atomic<bool>*>(cancel)->load() ? 1 : 0;
}

// GET or POST (a non-empty body) on a prepared handle; the handle keeps its connection. `cancel`
// (may be null) turning true cuts the transfer off.
HttpResult perform(CurlHandle& h, const std::string& url, const std::string* post_body,
                   double timeout_s, const std::atomic<bool>* cancel = nullptr) {
  HttpResult result;
  char error_buffer[CURL_ERROR_SIZE] = {};
  curl_easy_setopt(h.curl, CURLOPT_URL, url.c_str());
  curl_easy_setopt(h.curl, CURLOPT_NOSIGNAL, 1L);  // threads: no SIGALRM for name lookups
  curl_easy_setopt(h.curl, CURLOPT_TIMEOUT_MS,
                   static_cast<long>(std::max(1.0, std::ceil(timeout_s * 1000.0))));
  curl_easy_setopt(h.curl, CURLOPT_CONNECTTIMEOUT_MS,
                   static_cast<long>(std::max(1.0, std::ceil(std::min(timeout_s, 30.0) * 1000.0))));
  curl_easy_setopt(h.curl, CURLOPT_WRITEFUNCTION, append_reply);
  curl_easy_setopt(h.curl, CURLOPT_WRITEDATA, &result.body);
  curl_easy_setopt(h.curl, CURLOPT_ERRORBUFFER, error_buffer);
  curl_easy_setopt(h.curl, CURLOPT_PROTOCOLS_STR, "http,https");
  curl_easy_setopt(h.curl, CURLOPT_FOLLOWLOCATION, 0L);
  curl_easy_setopt(h.curl, CURLOPT_NOPROXY, is_loopback_url(url) ? "*" : nullptr);
  if (post_body != nullptr) {
    curl_easy_setopt(h.curl, CURLOPT_POSTFIELDS, post_body->c_str());
    curl_easy_setopt(h.curl, CURLOPT_POSTFIELDSIZE_LARGE,
                     static_cast<curl_off_t>(post_body->size()));
  } else {
    curl_easy_setopt(h.curl, CURLOPT_HTTPGET, 1L);
  }
  curl_easy_setopt(h.curl, CURLOPT_NOPROGRESS, cancel != nullptr ? 0L : 1L);
  if (cancel != nullptr) {
    curl_easy_setopt(h.curl, CURLOPT_XFERINFOFUNCTION, cancel_when_asked);
    curl_easy_setopt(h.curl, CURLOPT_XFERINFODATA, const_cast<std::atomic<bool>*>(cancel));
  }
  result.code = curl_easy_perform(h.curl);
  curl_easy_setopt(h.curl, CURLOPT_ERRORBUFFER, nullptr);
  if (result.code != CURLE_OK) {
    result.curl_error =
        without_elapsed(error_buffer[0] != '\0' ? std::string(error_buffer)
                                                : std::string(curl_easy_strerror(result.code)));
    // curl refuses a response header past its 100 KiB limit with "Out of memory": say what was
    // too large.
    if (result.code == CURLE_OUT_OF_MEMORY ||
        result.curl_error.find("giant realloc") != std::string::npos) {
      result.curl_error = "a response header larger than curl's limit (" +
                          std::to_string(CURL_MAX_HTTP_HEADER / 1024) + " KiB)";
    }
    return result;
  }
  curl_easy_getinfo(h.curl, CURLINFO_RESPONSE_CODE, &result.status);
  return result;
}

bool is_timeout(CURLcode code) { return code == CURLE_OPERATION_TIMEDOUT; }

std::string shorten(std::string_view text) {
  std::string out = to_valid_utf8(text.substr(0, kMaxDetailChars));
  if (text.size() > kMaxDetailChars) out += "…";
  return out;
}

// An OpenAI error body's message, else the start of the body.
std::string error_detail(const std::string& body) {
  if (std::optional<std::string> message = error_message_of(body)) return shorten(*message);
  return body.empty() ? std::string("(empty body)") : shorten(body);
}

std::string api_path(const std::string& api) {
  if (api == "completions") return "/v1/completions";
  if (api == "chat") return "/v1/chat/completions";
  throw std::invalid_argument("api must be completions or chat, not '" + api + "'");
}

// Distinct prompts (no two requests share a prefix beyond the first word), deterministic; the
// words of tools/serving/load.py, so both send the same text.
std::string prompt_text(std::int64_t index, int words) {
  std::string text = "load";
  for (int i = 0; i + 1 < words; ++i) {
    text += " r" + std::to_string(index) + "w" + std::to_string(i);
  }
  return text;
}

double nearest_rank(const std::vector<double>& sorted, double p) {
  const auto n = static_cast<double>(sorted.size());
  auto rank = static_cast<std::size_t>(std::max(1.0, std::ceil(p / 100.0 * n)));
  rank = std::min(rank, sorted.size());
  return sorted[rank - 1];
}

}  // namespace

void check_header_value(const std::string& value, const std::string& what) {
  for (unsigned char c : value) {
    if (c < 0x20 || c == 0x7f) {
      throw std::invalid_argument(what +
                                  " holds a control character (CR, LF or another): refused, it "
                                  "would add headers to every request");
    }
  }
}

bool same_origin(const std::string& a, const std::string& b) {
  auto origin = [](const std::string& url) -> std::optional<std::string> {
    std::unique_ptr<CURLU, decltype(&curl_url_cleanup)> parsed(curl_url(), curl_url_cleanup);
    if (!parsed || curl_url_set(parsed.get(), CURLUPART_URL, url.c_str(), 0) != CURLUE_OK) {
      return std::nullopt;
    }
    std::string parts;
    for (CURLUPart part : {CURLUPART_SCHEME, CURLUPART_HOST, CURLUPART_PORT}) {
      char* text = nullptr;
      if (curl_url_get(parsed.get(), part, &text, CURLU_DEFAULT_PORT) != CURLUE_OK) {
        return std::nullopt;
      }
      parts += std::string(text) + "|";
      curl_free(text);
    }
    for (char& c : parts) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return parts;
  };
  std::optional<std::string> x = origin(a), y = origin(b);
  return x && y && *x == *y;
}

std::string normalize_base_url(const std::string& base_url) {
  std::string url = base_url;
  const bool http = url.rfind("http://", 0) == 0;
  const bool https = url.rfind("https://", 0) == 0;
  const std::size_t host_at = http ? 7 : https ? 8 : 0;
  if (host_at == 0 || url.size() == host_at || url[host_at] == '/') {
    throw LoadError("'" + to_valid_utf8(redact_url(base_url)) +
                    "' is not an http:// or https:// URL with a host");
  }
  if (url.find_first_of(" \t\r\n?#") != std::string::npos) {
    throw LoadError("'" + to_valid_utf8(redact_url(base_url)) +
                    "': a base URL has no spaces, query or fragment");
  }
  while (!url.empty() && url.back() == '/') url.pop_back();
  if (url.size() >= 3 && url.compare(url.size() - 3, 3, "/v1") == 0 && url.size() - 3 > host_at) {
    url.resize(url.size() - 3);
  }
  return url;
}

struct RequestDriver::State {
  LoadSpec spec;
  std::string base;  // normalised base URL
  std::string endpoint;

  mutable std::mutex mutex;  // guards everything below that is not atomic
  std::condition_variable wake;
  bool started = false;
  bool stopping = false;
  std::optional<Clock::time_point> deadline;
  std::optional<Clock::time_point> first_send, last_finish;
  std::vector<double> latencies_ms;
  std::int64_t output_tokens = 0;
  std::map<std::string, std::int64_t> failures_by_cause;
  std::vector<std::string> failure_examples;
  int max_in_flight = 0;
  std::vector<std::unique_ptr<CurlHandle>> handles;  // one per worker, made before they start
  std::vector<std::thread> workers;
  std::optional<LoadFigures> figures;

  std::atomic<std::int64_t> sent{0}, completed{0}, failed{0}, cancelled{0};
  std::atomic<bool> cancel_in_flight{false};  // abandon(): cut off what is in flight
  std::atomic<int> in_flight{0};
  std::atomic<int> workers_running{0};

  std::mutex stop_mutex;  // one stop() at a time

  // The index of the next request, or nothing when stopping, the budget is sent or time is up.
  std::optional<std::int64_t> claim() {
    std::lock_guard lock(mutex);
    if (stopping) return std::nullopt;
    if (spec.max_requests && sent.load() >= *spec.max_requests) return std::nullopt;
    const auto now = Clock::now();
    if (deadline && now >= *deadline) return std::nullopt;
    const std::int64_t index = sent.fetch_add(1);
    max_in_flight = std::max(max_in_flight, in_flight.fetch_add(1) + 1);
    if (!first_send) first_send = now;
    return index;
  }

  void fail(const std::string& cause, const std::string& detail, Clock::time_point finished) {
    std::lock_guard lock(mutex);
    ++failures_by_cause[cause];
    if (failure_examples.size() < kMaxExamples) failure_examples.push_back(cause + ": " + detail);
    failed.fetch_add(1);
    finish(finished);
  }

  void succeed(double latency_ms, std::int64_t tokens, Clock::time_point finished) {
    std::lock_guard lock(mutex);
    latencies_ms.push_back(latency_ms);
    output_tokens += tokens;
    completed.fetch_add(1);
    finish(finished);
  }

  // Cut off by abandon(): not a reply, so not the last one either.
  void cancel() {
    std::lock_guard lock(mutex);
    cancelled.fetch_add(1);
    in_flight.fetch_sub(1);
  }

  void finish(Clock::time_point finished) {  // under mutex
    in_flight.fetch_sub(1);
    if (!last_finish || finished > *last_finish) last_finish = finished;
  }

  std::string body(std::int64_t index) const {
    nlohmann::json request = {
        {"model", spec.model}, {"max_tokens", spec.output_tokens}, {"temperature", 0.0}};
    if (spec.ignore_eos) {
      request["ignore_eos"] = true;
      request["min_tokens"] = spec.output_tokens;
    }
    const std::string text = prompt_text(index, spec.prompt_tokens);
    if (spec.api == "chat") {
      request["messages"] = nlohmann::json::array({{{"role", "user"}, {"content", text}}});
    } else {
      request["prompt"] = text;
    }
    return request.dump();
  }

  void run_worker(CurlHandle& handle) {
    while (const auto index = claim()) {
      const std::string request = body(*index);
      const auto sent_at = Clock::now();
      const HttpResult reply =
          perform(handle, endpoint, &request, spec.request_timeout_s, &cancel_in_flight);
      const auto finished = Clock::now();
      if (reply.code == CURLE_ABORTED_BY_CALLBACK) {
        cancel();
        continue;
      }
      if (reply.code != CURLE_OK) {
        if (is_timeout(reply.code)) {
          fail("timeout", "no reply within " + format_number(spec.request_timeout_s) + " s",
               finished);
        } else if (reply.code == CURLE_WRITE_ERROR) {
          fail("bad response",
               "reply larger than " + std::to_string(kMaxReplyBytes >> 20) + " MiB (not read on)",
               finished);
        } else if (reply.curl_error.rfind("a response header larger", 0) == 0) {
          fail("bad response", reply.curl_error, finished);
        } else {
          fail("connection", shorten(reply.curl_error), finished);
          std::unique_lock lock(mutex);
          wake.wait_for(lock, kConnectionBackoff, [this] { return stopping; });
        }
        continue;
      }
      if (reply.status != 200) {
        fail("HTTP " + std::to_string(reply.status), error_detail(reply.body), finished);
        continue;
      }
      const CompletionReply parsed = read_completion_reply(reply.body);
      if (!parsed.is_json || !parsed.has_choices) {
        fail("bad response", parsed.is_json ? "no choices in the reply" : parsed.problem, finished);
        continue;
      }
      // Every number a server returns is bounded before it is summed: a count of INT64_MAX or
      // -5 made tokens/s negative.
      if (parsed.completion_tokens_out_of_range ||
          (parsed.completion_tokens &&
           (*parsed.completion_tokens < 0 || *parsed.completion_tokens > kMaxCompletionTokens))) {
        fail("bad response",
             "usage.completion_tokens is not a token count (0 to " +
                 format_number(static_cast<double>(kMaxCompletionTokens)) + ")",
             finished);
        continue;
      }
      succeed(std::chrono::duration<double, std::milli>(finished - sent_at).count(),
              parsed.completion_tokens.value_or(0), finished);
    }
    workers_running.fetch_sub(1);
  }

  LoadFigures make_figures() const {  // under mutex, after the workers
    LoadFigures f;
    f.endpoint = redact_url(endpoint);  // what is shown: a URL's password is not
    f.model = spec.model;
    f.api = spec.api;
    f.concurrency = spec.concurrency;
    f.prompt_tokens = spec.prompt_tokens;
    f.output_tokens = spec.output_tokens;
    f.sent = sent.load();
    f.completed = completed.load();
    f.failed = failed.load();
    f.cancelled = cancelled.load();
    f.max_in_flight = max_in_flight;
    if (first_send && last_finish) {
      f.duration_s = std::chrono::duration<double>(*last_finish - *first_send).count();
    }
    if (f.duration_s > 0) {
      f.requests_per_s = static_cast<double>(f.completed) / f.duration_s;
      f.output_tokens_per_s = static_cast<double>(output_tokens) / f.duration_s;
    }
    if (!latencies_ms.empty()) {
      std::vector<double> sorted = latencies_ms;
      std::sort(sorted.begin(), sorted.end());
      LatencySummary l;
      l.min_ms = sorted.front();
      l.max_ms = sorted.back();
      double sum = 0;
      for (double v : sorted) sum += v;
      l.mean_ms = sum / static_cast<double>(sorted.size());
      l.p50_ms = nearest_rank(sorted, 50);
      l.p90_ms = nearest_rank(sorted, 90);
      l.p99_ms = nearest_rank(sorted, 99);
      f.latency = l;
    }
    f.failures_by_cause = failures_by_cause;
    f.failure_examples = failure_examples;
    return f;
  }
};

RequestDriver::RequestDriver(LoadSpec spec) : state_(std::make_unique<State>()) {
  if (spec.concurrency < 1) throw std::invalid_argument("concurrency must be at least 1");
  if (spec.prompt_tokens < 1) throw std::invalid_argument("prompt length must be at least 1");
  if (spec.output_tokens < 1) throw std::invalid_argument("output length must be at least 1");
  if (spec.max_requests && *spec.max_requests < 1) {
    throw std::invalid_argument("the request budget must be at least 1");
  }
  if (spec.duration_s && !(*spec.duration_s > 0)) {
    throw std::invalid_argument("the duration must be above 0 s");
  }
  if (!(spec.request_timeout_s > 0)) {
    throw std::invalid_argument("the request timeout must be above 0 s");
  }
  check_header_value(spec.api_key, "the API key");
  state_->endpoint = api_path(spec.api);  // checks api
  state_->base = normalize_base_url(spec.base_url);
  state_->endpoint = state_->base + state_->endpoint;
  // A request body is JSON, which holds only UTF-8: a model name given with other bytes is sent
  // repaired (U+FFFD) rather than ending a worker with nlohmann's type_error.
  spec.model = to_valid_utf8(spec.model);
  state_->spec = std::move(spec);
}

RequestDriver::~RequestDriver() {
  try {
    stop();
  } catch (...) {  // a destructor does not throw; stop() only joins
  }
}

void RequestDriver::start() {
  State& s = *state_;
  {
    std::lock_guard lock(s.mutex);
    if (s.started) throw std::logic_error("RequestDriver::start called twice");
  }
  init_curl_once();
  if (s.spec.model.empty()) {
    s.spec.model = read_served_model(s.base, s.spec.api_key, s.spec.request_timeout_s);
  }
  // Every handle exists before any worker runs: a failure here throws out of start() with
  // nothing sent, rather than leaving a worker short in the middle of a load.
  std::vector<std::unique_ptr<CurlHandle>> handles;
  for (int i = 0; i < s.spec.concurrency; ++i)
    handles.push_back(std::make_unique<CurlHandle>(s.spec.api_key));
  std::lock_guard lock(s.mutex);
  s.started = true;
  s.handles = std::move(handles);
  if (s.spec.duration_s) {
    s.deadline = Clock::now() + std::chrono::duration_cast<Clock::duration>(
                                    std::chrono::duration<double>(*s.spec.duration_s));
  }
  s.workers.reserve(s.handles.size());
  for (auto& handle : s.handles) {
    s.workers_running.fetch_add(1);
    try {
      s.workers.emplace_back([&s, h = handle.get()] { s.run_worker(*h); });
    } catch (...) {
      s.workers_running.fetch_sub(1);
      throw;  // the destructor stops the workers already running
    }
  }
}

LoadFigures RequestDriver::stop() {
  State& s = *state_;
  std::lock_guard stop_lock(s.stop_mutex);
  {
    std::lock_guard lock(s.mutex);
    if (s.figures) return *s.figures;
    s.stopping = true;
  }
  s.wake.notify_all();
  for (auto& worker : s.workers) worker.join();
  std::lock_guard lock(s.mutex);
  s.workers.clear();
  s.figures = s.make_figures();
  return *s.figures;
}

LoadFigures RequestDriver::abandon() {
  state_->cancel_in_flight.store(true);
  return stop();
}

std::int64_t RequestDriver::sent() const { return state_->sent.load(); }
std::int64_t RequestDriver::completed() const { return state_->completed.load(); }
std::int64_t RequestDriver::failed() const { return state_->failed.load(); }
int RequestDriver::in_flight() const { return state_->in_flight.load(); }

bool RequestDriver::finished() const {
  std::lock_guard lock(state_->mutex);
  return state_->started && state_->workers_running.load() == 0;
}

const LoadSpec& RequestDriver::spec() const { return state_->spec; }

Readiness wait_ready(const std::string& base_url, const std::string& path, double timeout_s,
                     const std::atomic<bool>* interrupted, const std::string& api_key) {
  init_curl_once();
  const std::string url = normalize_base_url(base_url) + path;
  const auto started = Clock::now();
  const auto waited = [&] { return std::chrono::duration<double>(Clock::now() - started).count(); };
  Readiness r;
  CurlHandle handle(api_key);
  while (true) {
    if (interrupted != nullptr && interrupted->load()) {
      r.why_not = "interrupted";
      break;
    }
    const double left = timeout_s - waited();
    const HttpResult reply = perform(handle, url, nullptr, std::clamp(left, 0.05, 5.0));
    if (reply.code == CURLE_OK && reply.status == 200) {
      r.ready = true;
      r.why_not.clear();
      break;
    }
    r.why_not =
        reply.code != CURLE_OK ? shorten(reply.curl_error) : "HTTP " + std::to_string(reply.status);
    if (waited() >= timeout_s) break;
    // Half a second between polls, in short sleeps so an interruption is seen at once.
    const auto next = Clock::now() + std::chrono::milliseconds(500);
    while (Clock::now() < next && waited() < timeout_s &&
           (interrupted == nullptr || !interrupted->load())) {
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
  }
  r.waited_s = waited();
  return r;
}

std::string read_served_model(const std::string& base_url, const std::string& api_key,
                              double timeout_s) {
  init_curl_once();
  const std::string url = normalize_base_url(base_url) + "/v1/models";
  CurlHandle handle(api_key);
  const HttpResult reply = perform(handle, url, nullptr, std::min(timeout_s, 30.0));
  if (reply.code != CURLE_OK) throw LoadError(redact_url(url) + ": " + shorten(reply.curl_error));
  if (reply.status != 200) {
    throw LoadError(redact_url(url) + ": HTTP " + std::to_string(reply.status) + ": " +
                    error_detail(reply.body));
  }
  if (!read_completion_reply(reply.body).is_json) {
    throw LoadError(redact_url(url) + ": the reply is not JSON (or nested deeper than " +
                    std::to_string(kMaxReplyDepth) + " levels)");
  }
  std::optional<std::string> model = first_model_id(reply.body);
  if (!model) throw LoadError(redact_url(url) + ": lists no model (no data[0].id)");
  return to_valid_utf8(*model);
}

}  // namespace kprof::load
