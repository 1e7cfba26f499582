// The launch join (timeline/launch_join.h): GPU work to its launch call by (process,
// correlation id), each rule of the header on a case built to need it.
#include "timeline/launch_join.h"

#include <gtest/gtest.h>

namespace kprof::timeline {
namespace {

TEST(LaunchJoin, AnIdOneProcessLaunchedJoinsWhateverTheWorksDevice) {
  std::vector<LaunchKey> launches = {{100, 1, 10.0}, {100, 2, 20.0}};
  std::vector<WorkKey> work = {
      {std::nullopt, 0, 2, 25.0}, {std::nullopt, 3, 1, 11.0}, {std::nullopt, 0, 9, 30.0}};
  EXPECT_EQ(join_launches(launches, work), (std::vector<std::size_t>{1, 0, kNoLaunch}));
}

TEST(LaunchJoin, WorkThatNamesItsProcessJoinsOnlyThatProcess) {
  // Two processes (an Nsight Systems export) launched id 5 at the same time.
  std::vector<LaunchKey> launches = {{100, 5, 10.0}, {200, 5, 10.0}};
  std::vector<WorkKey> work = {{200, 0, 5, 12.0}, {100, 1, 5, 12.0}, {300, 0, 5, 12.0}};
  EXPECT_EQ(join_launches(launches, work), (std::vector<std::size_t>{1, 0, kNoLaunch}));
}

TEST(LaunchJoin, ARepeatedIdGoesToTheProcessThatOwnsTheDevice) {
  // Process 100 feeds device 0 (id 1 is its alone), process 200 device 1 (id 3). Both launched
  // id 2 before either device ran it: the owner of each device decides, not the time.
  std::vector<LaunchKey> launches = {{100, 1, 1.0}, {200, 3, 1.0}, {100, 2, 5.0}, {200, 2, 6.0}};
  std::vector<WorkKey> work = {{std::nullopt, 0, 1, 2.0},
                               {std::nullopt, 1, 3, 2.0},
                               {std::nullopt, 1, 2, 7.0},
                               {std::nullopt, 0, 2, 7.0}};
  EXPECT_EQ(join_launches(launches, work), (std::vector<std::size_t>{0, 1, 3, 2}));
}

TEST(LaunchJoin, OnlyOneProcessHavingLaunchedAnIdYetDecidesAndTeachesTheOwner) {
  // Every id is repeated; process 100 ran 0.6 s earlier, so its work on device 0 had only its
  // own launch before it: that makes 100 device 0's owner, and the later, ambiguous work on
  // device 0 is 100's too; device 1's work, which both could have launched, then falls to the
  // last launch before it (200's).
  std::vector<LaunchKey> launches = {
      {100, 1, 0.0}, {100, 2, 1.0}, {200, 1, 600.0}, {200, 2, 601.0}};
  std::vector<WorkKey> work = {{std::nullopt, 0, 1, 0.5},
                               {std::nullopt, 1, 1, 600.5},
                               {std::nullopt, 0, 2, 700.0},
                               {std::nullopt, 1, 2, 601.5}};
  EXPECT_EQ(join_launches(launches, work), (std::vector<std::size_t>{0, 2, 1, 3}));
}

TEST(LaunchJoin, OfOneProcessesRepeatsTheNearestEarlierLaunchWins) {
  // CUPTI does not repeat an id within a process, but a trace may (a window reopened): the
  // launch nearest before the work.
  std::vector<LaunchKey> launches = {{100, 4, 50.0}, {100, 4, 10.0}};
  std::vector<WorkKey> work = {
      {std::nullopt, 0, 4, 55.0}, {std::nullopt, 0, 4, 12.0}, {std::nullopt, 0, 4, 5.0}};
  EXPECT_EQ(join_launches(launches, work), (std::vector<std::size_t>{0, 1, 1}));
}

}  // namespace
}  // namespace kprof::timeline
