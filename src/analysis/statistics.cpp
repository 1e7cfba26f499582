#include "analysis/statistics.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace kprof::analysis {
namespace {

// The continued fraction of I_x(a, b) (Numerical Recipes' betacf, modified Lentz), good for
// x < (a + 1) / (a + b + 2); the other side through the symmetry I_x(a, b) = 1 - I_{1-x}(b, a).
double beta_continued_fraction(double a, double b, double x) {
  constexpr double kTiny = 1e-300;
  constexpr double kEpsilon = 1e-15;
  double qab = a + b, qap = a + 1, qam = a - 1;
  double c = 1, d = 1 - qab * x / qap;
  if (std::fabs(d) < kTiny) d = kTiny;
  d = 1 / d;
  double h = d;
  for (int m = 1; m <= 10000; ++m) {
    double m2 = 2.0 * m;
    double aa = m * (b - m) * x / ((qam + m2) * (a + m2));
    d = 1 + aa * d;
    if (std::fabs(d) < kTiny) d = kTiny;
    c = 1 + aa / c;
    if (std::fabs(c) < kTiny) c = kTiny;
    d = 1 / d;
    h *= d * c;
    aa = -(a + m) * (qab + m) * x / ((a + m2) * (qap + m2));
    d = 1 + aa * d;
    if (std::fabs(d) < kTiny) d = kTiny;
    c = 1 + aa / c;
    if (std::fabs(c) < kTiny) c = kTiny;
    d = 1 / d;
    double delta = d * c;
    h *= delta;
    if (std::fabs(delta - 1) < kEpsilon) break;
  }
  return h;
}

}  // namespace

double regularized_incomplete_beta(double a, double b, double x) {
  if (x <= 0) return 0;
  if (x >= 1) return 1;
  double log_front =
      std::lgamma(a + b) - std::lgamma(a) - std::lgamma(b) + a * std::log(x) + b * std::log1p(-x);
  double front = std::exp(log_front);
  if (x < (a + 1) / (a + b + 2)) return front * beta_continued_fraction(a, b, x) / a;
  return 1 - front * beta_continued_fraction(b, a, 1 - x) / b;
}

double student_t_two_sided_p(double t, double dof) {
  if (std::isnan(t)) return 1;
  if (std::isinf(t)) return 0;
  return regularized_incomplete_beta(dof / 2, 0.5, dof / (dof + t * t));
}

void RunningStats::add(double value) {
  ++count;
  total += value;
  double delta = value - mean;
  mean += delta / static_cast<double>(count);
  m2 += delta * (value - mean);
}

double RunningStats::variance() const {
  return count < 2 ? 0 : m2 / static_cast<double>(count - 1);
}

std::optional<WelchResult> welch_t_test(const RunningStats& a, const RunningStats& b) {
  if (a.count < 2 || b.count < 2) return std::nullopt;
  double va = a.variance() / static_cast<double>(a.count);
  double vb = b.variance() / static_cast<double>(b.count);
  WelchResult result;
  double spread = va + vb;
  if (spread <= 0) {
    result.t = a.mean == b.mean
                   ? 0
                   : std::copysign(std::numeric_limits<double>::infinity(), b.mean - a.mean);
    result.dof = static_cast<double>(a.count + b.count - 2);
    result.p = a.mean == b.mean ? 1 : 0;
    return result;
  }
  result.t = (b.mean - a.mean) / std::sqrt(spread);
  result.dof =
      spread * spread /
      (va * va / static_cast<double>(a.count - 1) + vb * vb / static_cast<double>(b.count - 1));
  result.p = student_t_two_sided_p(result.t, result.dof);
  return result;
}

std::optional<double> median(std::vector<double> values) {
  if (values.empty()) return std::nullopt;
  size_t mid = values.size() / 2;
  std::nth_element(values.begin(), values.begin() + static_cast<long>(mid), values.end());
  double upper = values[mid];
  if (values.size() % 2) return upper;
  double lower = *std::max_element(values.begin(), values.begin() + static_cast<long>(mid));
  return (lower + upper) / 2;
}

}  // namespace kprof::analysis
