// Cleanup receipts read back: the ones kprof wrote (tests/k8s/data/receipts, produced by
// tests/k8s/k8s_test.py's runs against the API-server stand-in, one by kprof before receipts
// recorded run ids) load; anything else is refused as "not a valid receipt" naming what is wrong,
// never read out of bounds and never an internal error.
#include "k8s/cleanup_receipt.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>
#include <sstream>

#include "common/error.h"

namespace kprof::k8s {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

std::string receipt_file(const std::string& name) {
  return std::string(KPROF_TESTS_DIR) + "/k8s/data/receipts/" + name;
}

std::string read_text(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

TEST(CleanupReceipt, LoadsTheReceiptsKprofWrote) {
  CleanupReceipt killed = CleanupReceipt::load(receipt_file("sister_killed.json"));
  EXPECT_EQ(killed.operation(), "sister");
  EXPECT_EQ(killed.status(), "running");
  ASSERT_EQ(killed.leftovers().size(), 1u);
  ReceiptObject sister = killed.leftovers()[0];
  EXPECT_EQ(sister.describe(), "Deployment serving/llama-70b-kprof-x2u84");
  EXPECT_EQ(sister.creating_run(), "x2u84");
  EXPECT_TRUE(sister.removable);

  // Written before receipts recorded the run: the run id is the one in the sister's name.
  CleanupReceipt older = CleanupReceipt::load(receipt_file("sister_killed_before_run_ids.json"));
  ASSERT_EQ(older.leftovers().size(), 1u);
  EXPECT_EQ(older.leftovers()[0].run, "");
  EXPECT_EQ(older.leftovers()[0].creating_run(), "dbrt2");

  CleanupReceipt ok = CleanupReceipt::load(receipt_file("sister_ok.json"));
  EXPECT_EQ(ok.status(), "ok");
  EXPECT_TRUE(ok.leftovers().empty());
  ASSERT_EQ(ok.objects().size(), 1u);
  EXPECT_TRUE(ok.objects()[0].deleted_at.has_value());

  CleanupReceipt sidecar = CleanupReceipt::load(receipt_file("sidecar_ok.json"));
  ASSERT_EQ(sidecar.objects().size(), 1u);
  EXPECT_EQ(sidecar.objects()[0].kind, "EphemeralContainer");
  EXPECT_FALSE(sidecar.objects()[0].removable);
  EXPECT_EQ(sidecar.objects()[0].creating_run(), sidecar.objects()[0].run);
  EXPECT_TRUE(sidecar.leftovers().empty());  // it cannot be removed: not a to-do
}

TEST(CleanupReceipt, WritesWhatItReadsBack) {
  for (const char* name : {"sister_killed.json", "sister_ok.json", "sidecar_ok.json"}) {
    std::string text = read_text(receipt_file(name));
    EXPECT_EQ(json::parse(CleanupReceipt::parse("r.json", text).json_text()), json::parse(text))
        << name;
  }
}

// One mutation of a receipt kprof wrote, and what the message must name.
struct Damage {
  std::string what;
  std::function<void(json&)> apply;
  std::string expected;
};

TEST(CleanupReceipt, RefusesWhatKprofDoesNotWrite) {
  json base = json::parse(read_text(receipt_file("sister_killed.json")));
  auto object = [](json& r) -> json& { return r["objects"][0]; };
  std::vector<Damage> damages = {
      {"name --all", [&](json& r) { object(r)["name"] = "--all"; },
       "objects[0].name: \"--all\" is not a Deployment name (a DNS-1123 subdomain"},
      {"name -l=x", [&](json& r) { object(r)["name"] = "-l=x"; }, "is not a Deployment name"},
      {"upper case", [&](json& r) { object(r)["name"] = "Llama"; }, "is not a Deployment name"},
      {"too long", [&](json& r) { object(r)["name"] = std::string(254, 'a'); },
       "is not a Deployment name"},
      {"empty", [&](json& r) { object(r)["name"] = ""; }, "is not a Deployment name"},
      {"namespace with a dot", [&](json& r) { object(r)["namespace"] = "a.b"; },
       "objects[0].namespace: \"a.b\" is not a namespace name (a DNS-1123 label"},
      {"namespace a flag", [&](json& r) { object(r)["namespace"] = "--all-namespaces"; },
       "is not a namespace name"},
      {"kind", [&](json& r) { object(r)["kind"] = "Secret"; },
       "objects[0].kind: \"Secret\" is not a kind kprof creates"},
      {"run a flag", [&](json& r) { object(r)["run"] = "--x"; }, "is not a kprof run id"},
      {"Deployment not removable", [&](json& r) { object(r)["removable"] = false; },
       "objects[0].removable: a Deployment kprof created is removable"},
      {"ephemeral removable",
       [&](json& r) {
         object(r)["kind"] = "EphemeralContainer";
         object(r)["name"] = "pod-1/kprof-ncu-ab12c";
       },
       "objects[0].removable: an ephemeral container cannot be removable"},
      {"ephemeral without pod",
       [&](json& r) {
         object(r)["kind"] = "EphemeralContainer";
         object(r)["name"] = "kprof-ncu-ab12c";
         object(r)["removable"] = false;
       },
       "is not POD/CONTAINER"},
      {"name a number", [&](json& r) { object(r)["name"] = 42; },
       "objects[0].name: expected a string, found 42"},
      {"removable a string", [&](json& r) { object(r)["removable"] = "yes"; },
       "objects[0].removable: expected true or false, found \"yes\""},
      {"deleted_at a number", [&](json& r) { object(r)["deleted_at"] = 5; },
       "objects[0].deleted_at: expected a string, found 5"},
      {"left_because an object", [&](json& r) { object(r)["left_because"] = json::object(); },
       "objects[0].left_because: expected a string"},
      {"object a string", [&](json& r) { r["objects"][0] = "llama-70b"; },
       "objects[0]: expected an object, found \"llama-70b\""},
      {"objects an object", [&](json& r) { r["objects"] = json::object(); },
       "objects: expected an array, found {}"},
      {"schema", [&](json& r) { r["schema"] = "kprof.cleanup-receipt/2"; },
       "schema: expected \"kprof.cleanup-receipt/1\""},
      {"operation", [&](json& r) { r["operation"] = 7; }, "operation: expected a string"},
      {"operation unknown", [&](json& r) { r["operation"] = "delete"; },
       "operation: expected \"sister\" or \"sidecar\""},
      {"status unknown", [&](json& r) { r["status"] = "fine"; }, "status: expected running"},
      {"leftovers", [&](json& r) { r["leftovers"] = 1; }, "leftovers: expected an array"},
      {"unknown field", [&](json& r) { r["extra"] = json::array({json::array()}); },
       "extra: unknown field"},
      {"unknown object field", [&](json& r) { object(r)["labels"] = json::object(); },
       "objects[0].labels: unknown field"},
      {"not an object", [&](json& r) { r = json::array(); }, "expected an object, found []"},
  };
  for (const char* key :
       {"kind", "namespace", "name", "created_at", "removable", "deleted_at", "note"}) {
    damages.push_back({std::string("missing ") + key, [&, key](json& r) { object(r).erase(key); },
                       std::string("objects[0]: \"") + key + "\" is missing"});
  }
  for (const char* key : {"schema", "operation", "context", "started_at", "status", "objects"}) {
    damages.push_back({std::string("missing ") + key, [key](json& r) { r.erase(key); },
                       std::string("\"") + key + "\" is missing"});
  }
  for (const Damage& damage : damages) {
    json receipt = base;
    damage.apply(receipt);
    try {
      CleanupReceipt::parse("bad.json", receipt.dump());
      ADD_FAILURE() << damage.what << ": accepted";
    } catch (const InputError& error) {
      EXPECT_EQ(error.code(), ExitCode::kInputInvalid) << damage.what;
      EXPECT_EQ(error.path(), "bad.json");
      EXPECT_EQ(error.message().rfind("not a valid receipt: ", 0), 0u) << error.message();
      EXPECT_NE(error.message().find(damage.expected), std::string::npos)
          << damage.what << ": " << error.message();
      EXPECT_EQ(std::string(error.what()).find('\n'), std::string::npos);
    }
  }
}

TEST(CleanupReceipt, NotJsonNamesTheByte) {
  std::string text = read_text(receipt_file("sister_killed.json"));
  try {
    CleanupReceipt::parse("cut.json", text.substr(0, 40));
    FAIL() << "accepted";
  } catch (const InputError& error) {
    EXPECT_EQ(error.code(), ExitCode::kInputInvalid);
    EXPECT_EQ(error.position().kind, InputPosition::Kind::kByte);
    EXPECT_EQ(error.message().rfind("not a valid receipt: not JSON", 0), 0u) << error.message();
  }
}

// Found by fuzz_cleanup_receipt: nlohmann::json reports a number beyond double's range as
// out_of_range, not parse_error (the bytes are kept in fuzz/corpus/cleanup_receipt).
TEST(CleanupReceipt, HugeNumbersAreNotAReceipt) {
  for (const char* text :
       {"77227700002E0702273762", "{\"schema\": 1e999}", "{\"objects\": [-1e400]}"}) {
    try {
      CleanupReceipt::parse("huge.json", text);
      ADD_FAILURE() << text << ": accepted";
    } catch (const InputError& error) {
      EXPECT_EQ(error.code(), ExitCode::kInputInvalid);
      EXPECT_EQ(error.message().rfind("not a valid receipt: not JSON", 0), 0u) << error.message();
    }
  }
}

class ReceiptFiles : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("kprof-receipt-test-" + std::to_string(getpid()));
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  fs::path dir_;
};

TEST_F(ReceiptFiles, ANewReceiptNeverOverwritesAnything) {
  std::string existing = (dir_ / "old.json").string();
  std::ofstream(existing) << "an earlier receipt";
  EXPECT_THROW(
      {
        try {
          CleanupReceipt(existing, "sister", "");
        } catch (const InputError& error) {
          EXPECT_EQ(error.code(), ExitCode::kInputUnreadable);
          EXPECT_NE(error.message().find("already exists"), std::string::npos);
          throw;
        }
      },
      InputError);
  EXPECT_EQ(read_text(existing), "an earlier receipt");
  // A dangling link is something there too: it is not followed.
  fs::create_symlink(dir_ / "target.json", dir_ / "link.json");
  EXPECT_THROW(CleanupReceipt((dir_ / "link.json").string(), "sister", ""), InputError);
  EXPECT_FALSE(fs::exists(dir_ / "target.json"));
}

TEST_F(ReceiptFiles, RecordsEveryStepOnDisk) {
  std::string path = (dir_ / "r.json").string();
  CleanupReceipt receipt(path, "sister", "ctx");
  EXPECT_EQ(CleanupReceipt::load(path).status(), "running");
  receipt.created("Deployment", "serving", "llama-70b-kprof-ab12c", true, "sister", "ab12c");
  receipt.created("Deployment", "serving", "other-kprof-cd34e", true, "sister", "cd34e");
  EXPECT_EQ(CleanupReceipt::load(path).leftovers().size(), 2u);
  receipt.left("Deployment", "serving", "other-kprof-cd34e", "kprof refused to delete it: x");
  receipt.deleted("Deployment", "serving", "llama-70b-kprof-ab12c");
  receipt.finish("failed");
  CleanupReceipt back = CleanupReceipt::load(path);
  EXPECT_EQ(back.status(), "failed");
  ASSERT_EQ(back.leftovers().size(), 1u);
  EXPECT_EQ(back.leftovers()[0].name, "other-kprof-cd34e");
  EXPECT_EQ(back.leftovers()[0].left_because, "kprof refused to delete it: x");
  json written = json::parse(read_text(path));
  EXPECT_EQ(written["leftovers"].size(), 1u);
  EXPECT_EQ(written["objects"][0]["run"], "ab12c");
}

}  // namespace
}  // namespace kprof::k8s
