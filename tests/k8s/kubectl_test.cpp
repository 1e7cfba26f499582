// kubectl's stderr condensed to one line for kprof's messages, on what kubectl 1.27 and 1.32
// really printed here against an address with nothing listening, a host that does not resolve,
// a missing object and a failed `kubectl cp`; and kubectl calls shown the way capture shows ncu's.
#include "k8s/kubectl.h"

#include <gtest/gtest.h>

namespace kprof::k8s {
namespace {

// kubectl 1.32 (structured klog), `get pods` against 127.0.0.1:1.
const char* kRefused132 =
    "E1130 18:49:56.006517    5780 memcache.go:265] \"Unhandled Error\" err=\"couldn't get "
    "current server API group list: Get \\\"http://127.0.0.1:1/api?timeout=32s\\\": dial tcp "
    "127.0.0.1:1: connect: connection refused\"\n"
    "E1130 18:49:56.007964    5780 memcache.go:265] \"Unhandled Error\" err=\"couldn't get "
    "current server API group list: Get \\\"http://127.0.0.1:1/api?timeout=32s\\\": dial tcp "
    "127.0.0.1:1: connect: connection refused\"\n"
    "E1130 18:49:56.012967    5780 memcache.go:265] \"Unhandled Error\" err=\"couldn't get "
    "current server API group list: Get \\\"http://127.0.0.1:1/api?timeout=32s\\\": dial tcp "
    "127.0.0.1:1: connect: connection refused\"\n"
    "E1130 18:49:56.015032    5780 memcache.go:265] \"Unhandled Error\" err=\"couldn't get "
    "current server API group list: Get \\\"http://127.0.0.1:1/api?timeout=32s\\\": dial tcp "
    "127.0.0.1:1: connect: connection refused\"\n"
    "E1130 18:49:56.016776    5780 memcache.go:265] \"Unhandled Error\" err=\"couldn't get "
    "current server API group list: Get \\\"http://127.0.0.1:1/api?timeout=32s\\\": dial tcp "
    "127.0.0.1:1: connect: connection refused\"\n"
    "The connection to the server 127.0.0.1:1 was refused - did you specify the right host or "
    "port?\n";

// kubectl 1.27 (plain klog), the same; only its klog lines kept (as if kubectl said nothing else).
const char* kRefused127Klog =
    "E1130 18:49:58.810334    6619 memcache.go:265] couldn't get current server API group list: "
    "Get \"http://127.0.0.1:1/api?timeout=32s\": dial tcp 127.0.0.1:1: connect: connection "
    "refused\n"
    "E1130 18:49:58.810930    6619 memcache.go:265] couldn't get current server API group list: "
    "Get \"http://127.0.0.1:1/api?timeout=32s\": dial tcp 127.0.0.1:1: connect: connection "
    "refused\n";

const char* kNoSuchHost =
    "E1130 18:49:56.409592    5911 memcache.go:265] \"Unhandled Error\" err=\"couldn't get "
    "current server API group list: Get \\\"https://no-such-host.invalid:6443/api?timeout=32s\\\": "
    "dial tcp: lookup no-such-host.invalid on 10.255.255.53:53: no such host\"\n"
    "Unable to connect to the server: dial tcp: lookup no-such-host.invalid on 10.255.255.53:53: "
    "no such host\n";

TEST(Kubectl, CondensesDiscoveryNoiseToKubectlsOwnLine) {
  EXPECT_EQ(condense_message(kRefused132),
            "The connection to the server 127.0.0.1:1 was refused - did you specify the right "
            "host or port?");
  EXPECT_EQ(classify_failure(kRefused132), "unreachable");
  EXPECT_EQ(condense_message(kNoSuchHost),
            "Unable to connect to the server: dial tcp: lookup no-such-host.invalid on "
            "10.255.255.53:53: no such host");
  EXPECT_EQ(classify_failure(kNoSuchHost), "unreachable");
}

TEST(Kubectl, KlogMessagesOnlyWhenKubectlSaidNothingElse) {
  EXPECT_EQ(condense_message(kRefused127Klog),
            "couldn't get current server API group list: Get "
            "\"http://127.0.0.1:1/api?timeout=32s\": dial tcp 127.0.0.1:1: connect: connection "
            "refused");
  // The structured form is unescaped the same way.
  std::string structured(kRefused132);
  structured = structured.substr(0, structured.rfind("The connection"));
  EXPECT_EQ(condense_message(structured), condense_message(kRefused127Klog));
}

TEST(Kubectl, KeepsEveryDistinctLineOnOneLine) {
  EXPECT_EQ(condense_message("Error from server (NotFound): deployments.apps \"x\" not found\n"),
            "Error from server (NotFound): deployments.apps \"x\" not found");
  EXPECT_EQ(condense_message("tar: /tmp/r.ncu-rep: Cannot stat: No such file or directory\n"
                             "tar: Exiting with failure status due to previous errors\n"
                             "command terminated with exit code 2\n"),
            "tar: /tmp/r.ncu-rep: Cannot stat: No such file or directory; tar: Exiting with "
            "failure status due to previous errors; command terminated with exit code 2");
  EXPECT_EQ(condense_message("a\n\nb\na\r\n"), "a; b");
  EXPECT_EQ(condense_message(""), "");
}

TEST(Kubectl, EscapesControlCharactersAndCapsTheLength) {
  EXPECT_EQ(condense_message("Error from server: \x1b]0;owned\x07 x\tz\n"),
            "Error from server: \\x1b]0;owned\\x07 x z");
  std::string longer;
  for (int i = 0; i < 100; ++i) longer += "line " + std::to_string(i) + " é\n";
  std::string condensed = condense_message(longer);
  EXPECT_LE(condensed.size(), 600u + std::string("…").size());
  EXPECT_EQ(condensed.substr(condensed.size() - 3), "…");
}

TEST(Kubectl, ShowsCallsQuotedLikeCapture) {
  EXPECT_EQ(shown_call({"/usr/bin/kubectl", "--kubeconfig", "/tmp/my config", "get", "deployment",
                        "-n", "serving", "-o", "json", "--", "llama-70b"}),
            "kubectl --kubeconfig '/tmp/my config' get deployment -n serving -o json -- "
            "llama-70b");
  EXPECT_EQ(shown_call({"kubectl", "exec", "--", "sh", "-c", "echo 'hi'; $X"}),
            "kubectl exec -- sh -c 'echo '\\''hi'\\''; $X'");
}

}  // namespace
}  // namespace kprof::k8s
