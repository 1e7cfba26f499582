// Where an evidence bundle ends up when its final name is taken: never through a symbolic link,
// and never with less than the whole manifest (issue 11, item 10).
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "capture/evidence_bundle.h"
#include "common/error.h"

namespace kprof::capture {
namespace {
namespace fs = std::filesystem;

std::string read_file(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

class BundleCommit : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::path(::testing::TempDir()) /
           ("kprof-bundle-" + std::to_string(getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  std::string final_path() const { return (dir_ / "bundle").string(); }
  bool partial_left() const {
    for (const auto& entry : fs::directory_iterator(dir_)) {
      if (entry.path().filename().string().find(".partial-") != std::string::npos) return true;
    }
    return false;
  }

  // What a capture's manifest holds (abridged): every field must survive any ending.
  const nlohmann::json manifest_ = {
      {"schema", "kprof.bundle/1"},
      {"status", "ok"},
      {"ncu", {{"argv", {"ncu", "--clock-control", "none", "./app"}}, {"exit_code", 0}}},
      {"campaign", "c1"},
      {"diagnoses", nlohmann::json::array()},
      {"progress", {{"kernels_profiled", 4}}}};
  fs::path dir_;
};

TEST_F(BundleCommit, ADanglingLinkAtTheFinalPathIsTaken) {
  fs::create_symlink(dir_ / "nowhere", final_path());
  try {
    EvidenceBundle bundle(final_path());
    FAIL() << "a dangling link was taken for a free name";
  } catch (const InputError& error) {
    EXPECT_EQ(error.code(), ExitCode::kInputUnreadable);
    EXPECT_NE(error.message().find("a symbolic link to"), std::string::npos) << error.message();
  }
  EXPECT_THROW(EvidenceBundle::require_free(final_path() + "/"), InputError);
  EXPECT_FALSE(partial_left());
  EXPECT_FALSE(fs::exists(dir_ / "nowhere"));  // nothing was created through the link
}

// A link (or anything) appearing at the final path while ncu ran: the rename fails; the bundle
// is kept whole under .incomplete, the manifest with every field plus why.
TEST_F(BundleCommit, AFailedRenameKeepsTheWholeManifest) {
  {
    EvidenceBundle bundle(final_path());
    bundle.write("ncu.log", "==PROF== Report: report.ncu-rep\n");
    fs::create_symlink(dir_ / "nowhere", final_path());
    try {
      bundle.commit(manifest_);
      FAIL() << "the rename onto a symbolic link succeeded";
    } catch (const InputError& error) {
      EXPECT_EQ(error.code(), ExitCode::kOutputUnwritable);
      EXPECT_NE(error.message().find("the bundle is kept whole at " + final_path() + ".incomplete"),
                std::string::npos)
          << error.message();
    }
  }  // the destructor must not replace the manifest with a reduced one
  fs::path kept = final_path() + ".incomplete";
  ASSERT_TRUE(fs::exists(kept / "manifest.json"));
  nlohmann::json written = nlohmann::json::parse(read_file(kept / "manifest.json"));
  for (const auto& [key, value] : manifest_.items()) EXPECT_EQ(written[key], value) << key;
  EXPECT_EQ(written["incomplete_reason"], "rename_failed");
  EXPECT_NE(written["rename_error"].get<std::string>().find(final_path()), std::string::npos);
  EXPECT_TRUE(written["files"].contains("ncu.log"));
  EXPECT_EQ(read_file(kept / "ncu.log"), "==PROF== Report: report.ncu-rep\n");
  EXPECT_TRUE(fs::is_symlink(final_path()));  // left as it was
  EXPECT_FALSE(partial_left());
}

TEST_F(BundleCommit, AnAbandonedBundleStepsAroundALinkAtItsIncompleteName) {
  fs::create_symlink(dir_ / "nowhere", final_path() + ".incomplete");
  std::string written;
  {
    EvidenceBundle bundle(final_path());
    nlohmann::json manifest = manifest_;
    manifest["status"] = "incomplete";
    manifest["incomplete_reason"] = "timeout";
    written = bundle.abandon(manifest);
  }
  EXPECT_EQ(written, final_path() + ".incomplete.2");
  EXPECT_EQ(nlohmann::json::parse(read_file(fs::path(written) / "manifest.json"))["campaign"],
            "c1");
  EXPECT_TRUE(fs::is_symlink(final_path() + ".incomplete"));
  EXPECT_FALSE(fs::exists(dir_ / "nowhere"));
}

}  // namespace
}  // namespace kprof::capture
