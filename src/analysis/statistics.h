// The few statistics kprof's comparisons need: medians, Welford means and variances, and Welch's
// unequal-variance t-test, whose p-value comes from the regularised incomplete beta function
// (Student's t distribution: P(|T| > t) = I_{ν/(ν+t²)}(ν/2, 1/2)). Pure functions.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

namespace kprof::analysis {

// I_x(a, b) for a, b > 0 and 0 <= x <= 1 (continued fraction, Lentz's method; relative error
// below 1e-12 where the fraction converges, which is everywhere for the arguments t-tests use).
double regularized_incomplete_beta(double a, double b, double x);

// Two-sided tail probability of Student's t with `dof` degrees of freedom (dof > 0).
double student_t_two_sided_p(double t, double dof);

// Running count, mean and variance (Welford): samples never held.
struct RunningStats {
  std::uint64_t count = 0;
  double mean = 0, m2 = 0, total = 0;
  void add(double value);
  double variance() const;  // sample variance (n - 1); 0 below two samples
};

struct WelchResult {
  double t = 0, dof = 0;
  double p = 1;  // two-sided
};

// Welch's t-test of the two means; nullopt when a side has fewer than two samples. Both sides
// without spread: p = 0 when the means differ, 1 when they are equal.
std::optional<WelchResult> welch_t_test(const RunningStats& a, const RunningStats& b);

std::optional<double> median(std::vector<double> values);

}  // namespace kprof::analysis
