// The request driver against the OpenAI stand-in (tools/serving/serve.py --backend fake): what
// it counts is what the server logged, concurrency reaches C, failures are counted by cause,
// readiness, timeouts, a server killed mid-run and a duration all end the load as they should.
#include "load/request_driver.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <thread>

#include "support/canned_http_server.h"
#include "support/fake_server.h"

namespace kprof::load {
namespace {

using testing::FakeServer;
using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

LoadSpec spec_for(const FakeServer& server, int concurrency, std::int64_t requests) {
  LoadSpec spec;
  spec.base_url = server.url();
  spec.concurrency = concurrency;
  spec.prompt_tokens = 8;
  spec.output_tokens = 4;
  spec.max_requests = requests;
  spec.request_timeout_s = 30;
  return spec;
}

// Waits for the driver to finish its budget or duration (bounded), then stops it.
LoadFigures run_to_end(RequestDriver& driver, double limit_s = 60) {
  const auto start = Clock::now();
  while (!driver.finished() && seconds_since(start) < limit_s) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  EXPECT_TRUE(driver.finished()) << "not finished after " << limit_s << " s";
  return driver.stop();
}

#define START_SERVER(name, ...) \
  FakeServer name(__VA_ARGS__); \
  ASSERT_TRUE(name.started()) << name.why_not();

// The OpenAI base URL users give ends in /v1; the warm capture's health URL is built from it
// (http://h/v1/health answered 404 for the whole --ready-timeout, found in review).
TEST(RequestDriver, ABaseUrlEndingInV1IsTheServersBase) {
  EXPECT_EQ(normalize_base_url("http://127.0.0.1:8000/v1"), "http://127.0.0.1:8000");
  EXPECT_EQ(normalize_base_url("http://127.0.0.1:8000/v1/"), "http://127.0.0.1:8000");
  EXPECT_EQ(normalize_base_url("https://h/api/"), "https://h/api");
  EXPECT_THROW(normalize_base_url("127.0.0.1:8000"), LoadError);
  EXPECT_THROW(normalize_base_url("http://h/x?y=1"), LoadError);
}

TEST(RequestDriver, CountsAndTokensAreWhatTheServerLogged) {
  START_SERVER(server, {"--fake-ms-per-token", "2"});
  RequestDriver driver(spec_for(server, 4, 20));
  driver.start();
  const LoadFigures f = run_to_end(driver);
  const auto logged = server.requests();
  ASSERT_EQ(logged.size(), 20u);
  std::int64_t tokens = 0;
  for (const auto& r : logged) {
    EXPECT_EQ(r["status"], 200);
    EXPECT_EQ(r["endpoint"], "/v1/completions");
    EXPECT_EQ(r["prompt_tokens"], 8);
    tokens += r["completion_tokens"].get<std::int64_t>();
  }
  EXPECT_EQ(tokens, 20 * 4);  // ignore_eos + min_tokens: every request generated output_tokens
  EXPECT_EQ(f.sent, 20);
  EXPECT_EQ(f.completed, 20);
  EXPECT_EQ(f.failed, 0);
  EXPECT_TRUE(f.failures_by_cause.empty());
  EXPECT_EQ(f.model, "kprof-llama-random");  // read from /v1/models
  EXPECT_EQ(f.endpoint, server.url() + "/v1/completions");
  ASSERT_GT(f.duration_s, 0);
  EXPECT_NEAR(f.output_tokens_per_s * f.duration_s, 80.0, 1e-6);
  EXPECT_NEAR(f.requests_per_s * f.duration_s, 20.0, 1e-6);
  ASSERT_TRUE(f.latency);
  // Each request's latency in the client holds its time in the server (5 steps of 2 ms).
  double server_min_ms = 1e9;
  for (const auto& r : logged)
    server_min_ms = std::min(server_min_ms, 1000 * r["latency_s"].get<double>());
  EXPECT_GE(f.latency->min_ms, server_min_ms);
  EXPECT_LE(f.latency->min_ms, f.latency->p50_ms);
  EXPECT_LE(f.latency->p50_ms, f.latency->p90_ms);
  EXPECT_LE(f.latency->p90_ms, f.latency->p99_ms);
  EXPECT_LE(f.latency->p99_ms, f.latency->max_ms);
  EXPECT_LE(f.max_in_flight, 4);
  EXPECT_EQ(driver.completed(), 20);
  const LoadFigures again = driver.stop();  // idempotent
  EXPECT_EQ(again.completed, 20);
  EXPECT_EQ(again.duration_s, f.duration_s);
}

TEST(RequestDriver, SixteenInFlightAtOnce) {
  START_SERVER(server, {"--fake-ms-per-token", "25", "--max-batch", "32"});
  LoadSpec spec = spec_for(server, 16, 48);
  RequestDriver driver(spec);
  driver.start();
  const LoadFigures f = run_to_end(driver);
  EXPECT_EQ(f.completed, 48);
  EXPECT_EQ(f.max_in_flight, 16);
  int most_at_server = 0;
  for (const auto& r : server.requests()) {
    most_at_server = std::max(most_at_server, r["in_flight_at_arrival"].get<int>());
  }
  EXPECT_EQ(most_at_server, 16);  // the server saw the 16 at once, not only the client's count
}

TEST(RequestDriver, ChatCompletions) {
  START_SERVER(server, {"--fake-ms-per-token", "1"});
  LoadSpec spec = spec_for(server, 2, 6);
  spec.api = "chat";
  spec.model = "kprof-llama-random";
  RequestDriver driver(spec);
  driver.start();
  const LoadFigures f = run_to_end(driver);
  EXPECT_EQ(f.completed, 6);
  EXPECT_EQ(f.endpoint, server.url() + "/v1/chat/completions");
  for (const auto& r : server.requests()) EXPECT_EQ(r["endpoint"], "/v1/chat/completions");
}

// A server started with --api-key (vLLM's, and serve.py's stand-in of it) answers its /v1 routes
// 401 without the key; every request of the driver carries it, /v1/models included.
TEST(RequestDriver, TheApiKeyGoesWithEveryRequest) {
  START_SERVER(server, {"--fake-ms-per-token", "1", "--api-key", "sk-test-7"});
  LoadSpec without = spec_for(server, 2, 4);
  EXPECT_THROW(
      {
        try {
          RequestDriver(without).start();
        } catch (const LoadError& error) {
          EXPECT_NE(std::string(error.what()).find("HTTP 401"), std::string::npos) << error.what();
          throw;
        }
      },
      LoadError);
  EXPECT_EQ(read_served_model(server.url(), "sk-test-7"), "kprof-llama-random");
  LoadSpec with = spec_for(server, 2, 4);
  with.api_key = "sk-test-7";
  RequestDriver driver(with);
  driver.start();
  const LoadFigures f = run_to_end(driver);
  EXPECT_EQ(f.completed, 4);
  EXPECT_EQ(f.failed, 0);
  // The wrong key: every request is a 401.
  LoadSpec wrong = spec_for(server, 1, 2);
  wrong.model = "kprof-llama-random";
  wrong.api_key = "sk-other";
  RequestDriver refused(wrong);
  refused.start();
  const LoadFigures r = run_to_end(refused);
  EXPECT_EQ(r.failed, 2);
  EXPECT_EQ(r.failures_by_cause.at("HTTP 401"), 2);
}

TEST(RequestDriver, FailuresCountedByCauseWithThreeExamples) {
  START_SERVER(server, {"--fake-ms-per-token", "1", "--fake-fail-every", "4"});
  RequestDriver driver(spec_for(server, 2, 20));
  driver.start();
  const LoadFigures f = run_to_end(driver);
  const auto logged = server.requests();
  const auto logged_500 =
      std::count_if(logged.begin(), logged.end(), [](const auto& r) { return r["status"] == 500; });
  EXPECT_EQ(logged_500, 5);
  EXPECT_EQ(f.sent, 20);
  EXPECT_EQ(f.failed, 5);
  EXPECT_EQ(f.completed, 15);
  ASSERT_EQ(f.failures_by_cause.size(), 1u);
  EXPECT_EQ(f.failures_by_cause.at("HTTP 500"), 5);
  ASSERT_EQ(f.failure_examples.size(), 3u);
  for (const auto& e : f.failure_examples) {
    EXPECT_EQ(e.rfind("HTTP 500: injected failure", 0), 0u) << e;
  }
}

TEST(RequestDriver, WaitReadyPollsUntilHealthAnswers200) {
  FakeServer server({"--fake-ready-after", "2"}, /*wait_ready=*/false);
  ASSERT_TRUE(server.started()) << server.why_not();
  const Readiness early = wait_ready(server.url(), "/health", 0.3, nullptr);
  EXPECT_FALSE(early.ready);
  EXPECT_EQ(early.why_not, "HTTP 503");
  const Readiness r = wait_ready(server.url(), "/health", 30, nullptr);
  EXPECT_TRUE(r.ready) << r.why_not;
  EXPECT_GT(r.waited_s, 0.5);  // it did wait for the warm-up
  EXPECT_LT(r.waited_s, 15);
  std::atomic<bool> interrupted{true};
  const Readiness stopped = wait_ready("http://127.0.0.1:9", "/health", 30, &interrupted);
  EXPECT_FALSE(stopped.ready);
  EXPECT_EQ(stopped.why_not, "interrupted");
}

TEST(RequestDriver, RequestsOverTheTimeoutFailAsTimeout) {
  START_SERVER(server, {"--fake-ms-per-token", "400"});
  LoadSpec spec = spec_for(server, 2, 2);
  spec.model = "kprof-llama-random";
  spec.request_timeout_s = 0.5;  // a request takes 5 steps of 400 ms
  RequestDriver driver(spec);
  const auto start = Clock::now();
  driver.start();
  const LoadFigures f = run_to_end(driver);
  EXPECT_LT(seconds_since(start), 1.5);
  EXPECT_EQ(f.failed, 2);
  EXPECT_EQ(f.failures_by_cause.at("timeout"), 2);
  EXPECT_FALSE(f.latency);
}

TEST(RequestDriver, ServerKilledMidRunIsConnectionFailuresAndNoHang) {
  START_SERVER(server, {"--fake-ms-per-token", "20"});
  LoadSpec spec = spec_for(server, 4, 0);
  spec.max_requests.reset();
  spec.duration_s = 3;
  RequestDriver driver(spec);
  driver.start();
  std::this_thread::sleep_for(std::chrono::milliseconds(800));
  server.kill_now();
  const auto killed = Clock::now();
  const LoadFigures f = run_to_end(driver, 20);
  EXPECT_LT(seconds_since(killed), 5);
  EXPECT_GT(f.completed, 0);
  EXPECT_GT(f.failed, 0);
  std::int64_t by_cause = 0;
  for (const auto& [cause, n] : f.failures_by_cause) {
    EXPECT_EQ(cause, "connection");
    by_cause += n;
  }
  EXPECT_EQ(by_cause, f.failed);
  EXPECT_EQ(f.sent, f.completed + f.failed);
}

TEST(RequestDriver, DurationStopsSendingThenInFlightFinish) {
  START_SERVER(server, {"--fake-ms-per-token", "10"});
  LoadSpec spec = spec_for(server, 3, 0);
  spec.max_requests.reset();
  spec.duration_s = 1.5;
  RequestDriver driver(spec);
  const auto start = Clock::now();
  driver.start();
  const LoadFigures f = run_to_end(driver, 20);
  const double took = seconds_since(start);
  EXPECT_GE(took, 1.5);
  EXPECT_LT(took, 4);
  EXPECT_GT(f.completed, 3);
  EXPECT_EQ(f.failed, 0);
  EXPECT_EQ(f.sent, f.completed);
  EXPECT_EQ(static_cast<std::int64_t>(server.requests().size()), f.completed);
  EXPECT_GE(f.duration_s, 1.4);
}

TEST(RequestDriver, StopWithoutBudgetEndsTheLoad) {
  START_SERVER(server, {"--fake-ms-per-token", "5"});
  LoadSpec spec = spec_for(server, 2, 0);
  spec.max_requests.reset();
  RequestDriver driver(spec);
  driver.start();
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  EXPECT_FALSE(driver.finished());
  const LoadFigures f = driver.stop();
  EXPECT_GT(f.completed, 0);
  EXPECT_EQ(f.sent, f.completed);
  EXPECT_EQ(static_cast<std::int64_t>(server.requests().size()), f.completed);
}

TEST(RequestDriver, AModelNameThatIsNotUtf8IsSentRepaired) {
  START_SERVER(server, {"--fake-ms-per-token", "1"});
  LoadSpec spec = spec_for(server, 1, 2);
  spec.model = "bad\xff";
  RequestDriver driver(spec);
  EXPECT_EQ(driver.spec().model, "bad\xEF\xBF\xBD");
  driver.start();
  const LoadFigures f = run_to_end(driver);
  EXPECT_EQ(f.sent, 2);
  EXPECT_EQ(f.failed, 2);  // the server knows no such model: an HTTP error each, no crash
  EXPECT_EQ(f.failures_by_cause.size(), 1u);
  EXPECT_EQ(f.failures_by_cause.begin()->first.rfind("HTTP 4", 0), 0u)
      << f.failures_by_cause.begin()->first;
}

TEST(RequestDriver, ServedModelAndItsErrors) {
  START_SERVER(server, {"--model-name", "my-model"});
  EXPECT_EQ(read_served_model(server.url()), "my-model");
  EXPECT_EQ(read_served_model(server.url() + "/v1/"), "my-model");  // an OpenAI base URL
  try {
    read_served_model(server.url() + "/nowhere");
    ADD_FAILURE() << "no error";
  } catch (const LoadError& e) {
    EXPECT_NE(std::string(e.what()).find(server.url() + "/nowhere/v1/models: HTTP 404"),
              std::string::npos)
        << e.what();
  }
  server.kill_now();
  try {
    read_served_model(server.url());
    ADD_FAILURE() << "no error";
  } catch (const LoadError& e) {
    EXPECT_NE(std::string(e.what()).find(server.url() + "/v1/models: "), std::string::npos)
        << e.what();
  }
  for (const char* url : {"ftp://x", "http://", "127.0.0.1:8000", "http://h:1/a b"}) {
    LoadSpec bad_url;
    bad_url.base_url = url;
    EXPECT_THROW(RequestDriver{bad_url}, LoadError) << url;
  }
  LoadSpec bad_api;
  bad_api.base_url = "http://127.0.0.1:1";
  bad_api.api = "embeddings";
  EXPECT_THROW(RequestDriver{bad_api}, std::invalid_argument);
}

// --- A hostile or odd server (issue 27): replies, headers and numbers a server controls. ---

// A canned OpenAI server: /v1/models lists "m", every completion is `completion`.
std::string openai_reply(const std::string& request, const std::string& completion) {
  if (request.rfind("GET /v1/models", 0) == 0) {
    return testing::CannedHttpServer::json_response(R"({"data": [{"id": "m"}]})");
  }
  if (request.rfind("GET /health", 0) == 0) return testing::CannedHttpServer::json_response("{}");
  return completion;
}

LoadSpec canned_spec(const testing::CannedHttpServer& server, std::int64_t requests) {
  LoadSpec spec;
  spec.base_url = server.url();
  spec.max_requests = requests;
  spec.request_timeout_s = 20;
  return spec;
}

// The environment variables a proxy is given by, set for one scope.
class ProxyEnvironment {
 public:
  explicit ProxyEnvironment(const std::string& proxy) {
    for (const char* name : kNames) ::setenv(name, proxy.c_str(), 1);
  }
  ~ProxyEnvironment() {
    for (const char* name : kNames) ::unsetenv(name);
  }

 private:
  static constexpr const char* kNames[] = {"http_proxy",  "HTTP_PROXY", "https_proxy",
                                           "HTTPS_PROXY", "all_proxy",  "ALL_PROXY"};
};

// Item 2: with a proxy in the environment, requests to a loopback server (the warm capture's, a
// port-forward's) go straight to it — never through the proxy, which would get every request's
// Authorization header.
TEST(HostileServer, LoopbackTargetsNeverGoThroughAProxy) {
  testing::CannedHttpServer proxy(
      [](const std::string&) { return testing::CannedHttpServer::json_response("{}"); });
  const std::string completion =
      testing::CannedHttpServer::json_response(R"({"choices": [{"text": "x"}]})");
  testing::CannedHttpServer server(
      [&](const std::string& r) { return openai_reply(r, completion); });
  ASSERT_TRUE(proxy.started() && server.started());
  ProxyEnvironment environment(proxy.url());
  LoadSpec spec = canned_spec(server, 2);
  spec.api_key = "sk-secret-9";
  RequestDriver driver(spec);
  driver.start();
  const LoadFigures f = run_to_end(driver);
  EXPECT_EQ(f.completed, 2);
  EXPECT_TRUE(wait_ready(server.url(), "/health", 5, nullptr, "sk-secret-9").ready);
  EXPECT_EQ(proxy.requests().size(), 0u);
  const auto seen = server.requests();
  ASSERT_EQ(seen.size(), 4u);  // /v1/models, two completions, /health
  for (const std::string& r : seen) {
    EXPECT_NE(r.find("Authorization: Bearer sk-secret-9\r\n"), std::string::npos) << r;
  }
}

TEST(HostileServer, AKeyGoesOnlyToTheOriginItWasGivenFor) {
  EXPECT_TRUE(same_origin("http://127.0.0.1:8000/health", "http://127.0.0.1:8000"));
  EXPECT_TRUE(same_origin("http://h/health", "http://h:80/v1"));  // the scheme's port
  EXPECT_FALSE(same_origin("http://127.0.0.2:8000/health", "http://127.0.0.1:8000"));
  EXPECT_FALSE(same_origin("http://127.0.0.1:8001/health", "http://127.0.0.1:8000"));
  EXPECT_FALSE(same_origin("https://h/health", "http://h"));
  EXPECT_FALSE(same_origin("not a url", "http://h"));
}

// Item 3: a key holding CR/LF (a pod's --api-key "k\r\nX-Injected: 1") would add a header to
// every request: refused whatever its source, before anything is sent.
TEST(HostileServer, AHeaderValueWithControlCharactersIsRefused) {
  testing::CannedHttpServer server([](const std::string&) { return std::string(); });
  ASSERT_TRUE(server.started());
  LoadSpec spec = canned_spec(server, 1);
  spec.api_key = "sk\r\nX-Injected: 1";
  EXPECT_THROW(RequestDriver{spec}, std::invalid_argument);
  EXPECT_THROW(wait_ready(server.url(), "/health", 1, nullptr, spec.api_key), LoadError);
  EXPECT_THROW(read_served_model(server.url(), spec.api_key), LoadError);
  EXPECT_THROW(check_header_value("a\tb", "x"), std::invalid_argument);
  EXPECT_NO_THROW(check_header_value("sk-proj-ABC_123.x", "x"));
  EXPECT_TRUE(server.requests().empty());
}

// Item 5: a reply of nested '[' took 2.2 GB for 30 MB (a DOM); it is read by a SAX pass that
// stops at 64 levels, and a reply past 8 MiB is not read on.
TEST(HostileServer, ADeeplyNestedOrHugeReplyIsABadResponseNotAMemoryBlowUp) {
  const std::string nested =
      testing::CannedHttpServer::json_response("{\"choices\": " + std::string(4 << 20, '['));
  const std::string huge = testing::CannedHttpServer::json_response(
      "{\"choices\": [{\"text\": \"" + std::string(9 << 20, 'x') + "\"}]}");
  for (const auto& [reply, cause] :
       {std::pair{&nested, "bad response: nested deeper than 64 levels"},
        std::pair{&huge,
                  "bad response: reply larger than 8 MiB (not "
                  "read on)"}}) {
    // A plain pointer for the lambda: clang 14 (the sanitizer build) cannot capture a structured
    // binding.
    const std::string* body = reply;
    testing::CannedHttpServer server([&](const std::string& r) { return openai_reply(r, *body); });
    ASSERT_TRUE(server.started());
    RequestDriver driver(canned_spec(server, 2));
    driver.start();
    const LoadFigures f = run_to_end(driver);
    EXPECT_EQ(f.failed, 2) << cause;
    ASSERT_EQ(f.failure_examples.size(), 2u);
    EXPECT_EQ(f.failure_examples[0], cause);
  }
}

// Item 12: a completion_tokens of INT64_MAX, -5 or 1e30 made tokens/s negative: every number a
// server returns is bounded (0 to 10,000,000 tokens) before it is summed.
TEST(HostileServer, ATokenCountOutOfRangeIsABadResponse) {
  for (const char* count : {"9223372036854775807", "-5", "1e30", "18446744073709551615"}) {
    const std::string completion = testing::CannedHttpServer::json_response(
        std::string(R"({"choices": [{"text": "x"}], "usage": {"completion_tokens": )") + count +
        "}}");
    testing::CannedHttpServer server(
        [&](const std::string& r) { return openai_reply(r, completion); });
    ASSERT_TRUE(server.started());
    RequestDriver driver(canned_spec(server, 2));
    driver.start();
    const LoadFigures f = run_to_end(driver);
    EXPECT_EQ(f.failed, 2) << count;
    EXPECT_EQ(f.completed, 0) << count;
    EXPECT_GE(f.output_tokens_per_s, 0) << count;
    ASSERT_FALSE(f.failure_examples.empty());
    EXPECT_EQ(f.failure_examples[0],
              "bad response: usage.completion_tokens is not a token count (0 to 10,000,000)");
  }
}

// Item 19: a 1 MB response header was "connection: Out of memory".
TEST(HostileServer, AnOversizedHeaderIsSaidAsSuch) {
  const std::string completion = testing::CannedHttpServer::json_response(
      R"({"choices": [{"text": "x"}]})", "X-Padding: " + std::string(1 << 20, 'p') + "\r\n");
  testing::CannedHttpServer server(
      [&](const std::string& r) { return openai_reply(r, completion); });
  ASSERT_TRUE(server.started());
  RequestDriver driver(canned_spec(server, 1));
  driver.start();
  const LoadFigures f = run_to_end(driver);
  EXPECT_EQ(f.failures_by_cause.count("bad response"), 1u);
  ASSERT_EQ(f.failure_examples.size(), 1u);
  EXPECT_EQ(f.failure_examples[0],
            "bad response: a response header larger than curl's limit (100 KiB)");
}

}  // namespace
}  // namespace kprof::load
