// The one redaction rule (common/redact.h), on the shapes secrets arrive in: engines' command
// lines, environments, URLs, ncu's console (the program's own output), JSON.
#include "common/redact.h"

#include <gtest/gtest.h>

namespace kprof {
namespace {

TEST(Redact, SecretNamesAndNotTheirLookalikes) {
  for (const char* name : {"api-key", "api_key", "API_KEY", "--api-key", "hf-token", "HF_TOKEN",
                           "KPROF_API_KEY", "HUGGING_FACE_HUB_TOKEN", "db-password", "PASSWD",
                           "client_secret", "token", "key", "openai_apikey", "Authorization"}) {
    EXPECT_TRUE(is_secret_name(name)) << name;
  }
  for (const char* name : {"tokenizer", "max-tokens", "max_num_batched_tokens", "ssl-keyfile",
                           "keys", "port", "model", "kv-cache-dtype", "prompt_tokens", ""}) {
    EXPECT_FALSE(is_secret_name(name)) << name;
  }
}

TEST(Redact, CommandLinesKeepTheirShape) {
  EXPECT_EQ(redact_secrets("vllm serve m --api-key sk-1 --port 8000"),
            "vllm serve m --api-key *** --port 8000");
  EXPECT_EQ(redact_secrets("python3 -m sglang.launch_server --api-key=sk-1 --tp 2"),
            "python3 -m sglang.launch_server --api-key=*** --tp 2");
  EXPECT_EQ(redact_secrets("HF_TOKEN=hf_abc KPROF_API_KEY='k1' vllm serve"),
            "HF_TOKEN=*** KPROF_API_KEY='***' vllm serve");
  EXPECT_EQ(redact_secrets("run(api_key=k1,token=t2,port=1)"), "run(api_key=***,token=***,port=1)");
  EXPECT_EQ(redact_secrets("--api-key --port 8000"), "--api-key --port 8000");  // no value given
  EXPECT_EQ(redact_secrets("--tokenizer t --max-tokens 64"), "--tokenizer t --max-tokens 64");
  EXPECT_EQ(redact_secrets("sh -c \"vllm serve m --api-key sk-1\""),
            "sh -c \"vllm serve m --api-key ***\"");
}

TEST(Redact, HeadersUrlsAndLogText) {
  EXPECT_EQ(redact_secrets("Authorization: Bearer sk-1"), "Authorization: Bearer ***");
  EXPECT_EQ(redact_secrets("curl -H 'Authorization: Bearer sk-1' http://h/v1"),
            "curl -H 'Authorization: Bearer ***' http://h/v1");
  EXPECT_EQ(redact_url("http://user:pa55@127.0.0.1:8000/v1"), "http://user:***@127.0.0.1:8000/v1");
  EXPECT_EQ(redact_url("http://user@h/x"), "http://user@h/x");  // no password
  EXPECT_EQ(redact_url("http://h/x@y"), "http://h/x@y");        // '@' in the path
  EXPECT_EQ(redact_secrets("--load-url http://u:p@h:1/v1 ok"), "--load-url http://u:***@h:1/v1 ok");
  // vLLM's start-up line and an argparse Namespace, as they reach ncu's console.
  EXPECT_EQ(redact_secrets("non-default args: {'model': 'm', 'api_key': 'sk-1', 'port': 8000}"),
            "non-default args: {'model': 'm', 'api_key': '***', 'port': 8000}");
  EXPECT_EQ(redact_secrets("Namespace(api_key='sk-1', port=8000)"),
            "Namespace(api_key='***', port=8000)");
  EXPECT_EQ(redact_secrets("{\"api_key\":\"sk-1\",\"n\":1}"), "{\"api_key\":\"***\",\"n\":1}");
  EXPECT_EQ(redact_secrets("{\"Authorization\": \"Bearer sk-1\"}"),
            "{\"Authorization\": \"Bearer ***\"}");
  // A flag ends its line: what the next line says is not its value (CLI11's "not expected: …
  // --api-key" then "Run 'kprof --help'"); in an argv printed as JSON, one word per line, it is.
  EXPECT_EQ(redact_secrets("not expected: --api-key\nRun 'kprof --help'"),
            "not expected: --api-key\nRun 'kprof --help'");
  EXPECT_EQ(redact_secrets("[\n  \"--api-key\",\n  \"sk-1\"\n]"),
            "[\n  \"--api-key\",\n  \"***\"\n]");
  EXPECT_EQ(redact_secrets("args:\n  - \"--api-key\"\n  - \"sk-1\"\n"),
            "args:\n  - \"--api-key\"\n  - \"***\"\n");  // the YAML of a dry run
  // kprof's own messages name the flag in a sentence; a flag with a value is a word of its own.
  EXPECT_EQ(redact_secrets("the API key in its command line (--api-key, in container s) holds"),
            "the API key in its command line (--api-key, in container s) holds");
  // kprof's own hint, which names the flag without a value, is left as it is.
  EXPECT_EQ(redact_secrets("check KPROF_API_KEY for a server started with --api-key"),
            "check KPROF_API_KEY for a server started with --api-key");
}

TEST(Redact, ArgvAndJson) {
  EXPECT_EQ(redact_secrets(std::vector<std::string>{"vllm", "--api-key", "sk 1", "--port", "1"}),
            (std::vector<std::string>{"vllm", "--api-key", "***", "--port", "1"}));
  nlohmann::json doc = {
      {"argv", {"serve", "--hf-token", "hf_1"}},
      {"env", {{"HF_TOKEN", "hf_1"}, {"CUDA_VISIBLE_DEVICES", "0"}}},
      {"k8s_env",
       {{{"name", "OPENAI_API_KEY"}, {"value", "sk-1"}}, {{"name", "A"}, {"value", "b"}}}},
      {"api_key", "sk-1"},
      {"command_line", "python serve.py --api-key sk-1"},
      {"endpoint", "http://u:p@h/v1/completions"},
      {"count", 3}};
  redact_secrets_in_json(doc);
  EXPECT_EQ(doc["argv"], nlohmann::json({"serve", "--hf-token", "***"}));
  EXPECT_EQ(doc["env"], nlohmann::json({{"HF_TOKEN", "***"}, {"CUDA_VISIBLE_DEVICES", "0"}}));
  EXPECT_EQ(doc["k8s_env"][0]["value"], "***");
  EXPECT_EQ(doc["k8s_env"][1]["value"], "b");
  EXPECT_EQ(doc["api_key"], "***");
  EXPECT_EQ(doc["command_line"], "python serve.py --api-key ***");
  EXPECT_EQ(doc["endpoint"], "http://u:***@h/v1/completions");
  EXPECT_EQ(doc["count"], 3);
}

TEST(Redact, TextWithoutCuesIsReturnedAsItIs) {
  std::string table = "id  kernel  us\n22  nvjet_sm90_tst  135.9\n";
  EXPECT_EQ(redact_secrets(table), table);
}

}  // namespace
}  // namespace kprof
