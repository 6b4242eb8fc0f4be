// `mxq demo`: quantize activation- and weight-like tensors in every recipe and report quality
// and speed.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "mxq/api.hpp"

namespace mxq::cli {

struct DemoRow {
  std::string tensor, recipe, backend;
  double bits_per_element, sqnr_db, max_rel_err, gbps, ms;
};

struct DemoOptions {
  int64_t act_rows = 1024, weight_rows = 2048, cols = 7168;
  uint64_t seed = 1234;
  int repeats = 3;
  Backend backend = Backend::automatic;
  std::vector<std::string> recipes;  // empty: all presets
};

std::vector<DemoRow> run_demo(const DemoOptions& opt);

// Deterministic test tensors (also used by the benchmarks): normal(0, 1) values with a few
// large outliers per row (activation-like) or small-variance normal values (weight-like).
std::vector<float> make_activation(int64_t rows, int64_t cols, uint64_t seed);
std::vector<float> make_weight(int64_t rows, int64_t cols, uint64_t seed);

}  // namespace mxq::cli
