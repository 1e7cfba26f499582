#include "mcp/roots.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "common/error.h"
#include "support/scratch_dir.h"

namespace kprof::mcp {
namespace {

namespace fs = std::filesystem;

struct Tree {
  std::string root, outside;
  Tree() {
    std::string base = testing::fresh_dir("mcp_roots");
    root = base + "/root";
    outside = base + "/outside";
    fs::create_directories(root + "/sub");
    fs::create_directories(outside);
    std::ofstream(root + "/sub/a.txt") << "a";
    std::ofstream(outside + "/secret.txt") << "s";
    fs::create_symlink(outside + "/secret.txt", root + "/link_out");
    fs::create_symlink(root + "/sub/a.txt", root + "/link_in");
    fs::create_directory_symlink(outside, root + "/dir_out");
    fs::create_symlink(outside + "/not_yet", root + "/dangling");
  }
};

std::string message_of(const Roots& roots, const std::string& path) {
  try {
    roots.resolve(path, "reports");
  } catch (const std::exception& e) {
    return e.what();
  }
  return "";
}

TEST(McpRoots, PathsInsideResolveToTheirRealPath) {
  Tree t;
  Roots roots({t.root});
  const std::string real = fs::canonical(t.root).string();
  EXPECT_EQ(roots.resolve("sub/a.txt", "reports"), real + "/sub/a.txt");
  EXPECT_EQ(roots.resolve(t.root + "/sub/../sub/a.txt", "reports"), real + "/sub/a.txt");
  EXPECT_EQ(roots.resolve("link_in", "reports"), real + "/sub/a.txt");
  // A missing file in a folder inside: its would-be path, for the reader's own message.
  EXPECT_EQ(roots.resolve("sub/missing.ncu-rep", "reports"), real + "/sub/missing.ncu-rep");
}

TEST(McpRoots, AnythingOutsideIsRefusedNamingTheArgument) {
  Tree t;
  Roots roots({t.root});
  for (const std::string& path : {t.outside + "/secret.txt", std::string("../outside/secret.txt"),
                                  std::string("link_out"), std::string("dir_out/secret.txt"),
                                  std::string("/etc/passwd"), std::string("dir_out/missing")}) {
    EXPECT_THROW(roots.resolve(path, "reports"), UsageError) << path;
    const std::string message = message_of(roots, path);
    EXPECT_EQ(message.rfind("argument 'reports': " + path, 0), 0u) << message;
    EXPECT_NE(message.find("is outside the folders this server may read"), std::string::npos);
  }
}

TEST(McpRoots, ADanglingLinkOrAMissingFolderIsUnreadable) {
  Tree t;
  Roots roots({t.root});
  EXPECT_THROW(roots.resolve("dangling", "log"), InputError);
  EXPECT_EQ(message_of(roots, "dangling"), "dangling: cannot open: a symbolic link to nothing");
  EXPECT_THROW(roots.resolve("no_such_dir/x", "log"), InputError);
  EXPECT_THROW(roots.resolve("", "log"), UsageError);
}

TEST(McpRoots, SeveralRootsAndAPrefixThatIsNotAFolder) {
  Tree t;
  Roots roots({t.root + "/sub", t.outside});
  EXPECT_NO_THROW(roots.resolve(t.outside + "/secret.txt", "trace"));
  // /…/root/sub is a root; /…/root/sub2 merely starts with its name.
  fs::create_directories(t.root + "/sub2");
  std::ofstream(t.root + "/sub2/b") << "b";
  EXPECT_THROW(roots.resolve(t.root + "/sub2/b", "trace"), UsageError);
}

TEST(McpRoots, ARootMustBeAFolder) {
  Tree t;
  EXPECT_THROW(Roots({t.root + "/sub/a.txt"}), UsageError);
  EXPECT_THROW(Roots({t.root + "/no_such"}), UsageError);
  EXPECT_THROW(Roots(std::vector<std::string>{}), UsageError);
}

}  // namespace
}  // namespace kprof::mcp
