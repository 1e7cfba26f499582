// The statistics behind kprof's comparisons against SciPy. Expected values were computed offline
// with Debian 12's python3-scipy 1.10.1 (scipy.special.betainc, scipy.stats.t.sf,
// scipy.stats.ttest_ind(equal_var=False)) and pasted here; the script is in the comments.
#include "analysis/statistics.h"

#include <gtest/gtest.h>

#include <cmath>

namespace kprof::analysis {
namespace {

RunningStats stats_of(std::initializer_list<double> values) {
  RunningStats stats;
  for (double v : values) stats.add(v);
  return stats;
}

// for a, b, x in cases: print(scipy.special.betainc(a, b, x))
TEST(Statistics, RegularizedIncompleteBetaMatchesScipy) {
  struct Case {
    double a, b, x, expected;
  };
  for (const Case& c : std::initializer_list<Case>{{0.5, 0.5, 0.3, 0.3690101195655454},
                                                   {2.0, 0.5, 0.9, 0.5414697392755847},
                                                   {2.5, 0.5, 0.1, 0.001114437541507422},
                                                   {10.0, 0.5, 0.99, 0.6579281751567843},
                                                   {50.0, 0.5, 0.5, 9.901688984594138e-17},
                                                   {1.0, 1.0, 0.25, 0.25},
                                                   {3.0, 7.0, 0.4, 0.768212992},
                                                   {0.5, 20.0, 0.02, 0.6283343133368392},
                                                   {200.0, 0.5, 0.999, 0.5272441070252669}}) {
    EXPECT_NEAR(regularized_incomplete_beta(c.a, c.b, c.x), c.expected, 1e-12 * c.expected + 1e-300)
        << c.a << " " << c.b << " " << c.x;
  }
  EXPECT_EQ(regularized_incomplete_beta(2, 3, 0), 0);
  EXPECT_EQ(regularized_incomplete_beta(2, 3, 1), 1);
}

// for t, df in cases: print(2 * scipy.stats.t.sf(abs(t), df))
TEST(Statistics, StudentTTwoSidedMatchesScipy) {
  struct Case {
    double t, dof, expected;
  };
  for (const Case& c : std::initializer_list<Case>{{0.0, 4.0, 1.0},
                                                   {1.0, 1.0, 0.49999999999999956},
                                                   {2.0, 3.0, 0.1393259685588431},
                                                   {2.776445105, 4.0, 0.05000000001011946},
                                                   {-3.5, 7.3, 0.00934313852848555},
                                                   {10.0, 2.2, 0.007104463710258443},
                                                   {1.96, 1000.0, 0.05027318495574871}}) {
    EXPECT_NEAR(student_t_two_sided_p(c.t, c.dof), c.expected, 1e-11 * c.expected)
        << c.t << " " << c.dof;
  }
}

// scipy.stats.ttest_ind(a, b, equal_var=False) for the same samples; our t is b - a.
TEST(Statistics, WelchTestMatchesScipy) {
  auto result =
      welch_t_test(stats_of({10.1, 10.3, 9.9, 10.0, 10.2}), stats_of({10.6, 10.9, 10.4, 10.8}));
  ASSERT_TRUE(result);
  EXPECT_NEAR(result->t, 4.372697328618904, 1e-9);
  EXPECT_NEAR(result->p, 0.006344644519709142, 1e-11);
  result = welch_t_test(stats_of({1, 2, 3}), stats_of({1.5, 2.5, 3.5, 4.5, 5.5, 6.5}));
  ASSERT_TRUE(result);
  EXPECT_NEAR(result->t, 2.0889318714683744, 1e-9);
  EXPECT_NEAR(result->p, 0.0762702443137421, 1e-11);
}

TEST(Statistics, WelchNeedsTwoSamplesASideAndHandlesNoSpread) {
  EXPECT_FALSE(welch_t_test(stats_of({1}), stats_of({1, 2})));
  EXPECT_EQ(welch_t_test(stats_of({5, 5}), stats_of({5, 5, 5}))->p, 1);
  EXPECT_EQ(welch_t_test(stats_of({5, 5}), stats_of({6, 6}))->p, 0);
}

TEST(Statistics, Median) {
  EXPECT_FALSE(median({}));
  EXPECT_EQ(*median({3, 1, 2}), 2);
  EXPECT_EQ(*median({4, 1, 3, 2}), 2.5);
}

}  // namespace
}  // namespace kprof::analysis
