// The max-load DP when the ideals are the prefixes of one order (DPL, paper section 5.1.2).
//
// With a total order u_0, ..., u_{n-1} the ideals are the n + 1 prefixes, and a chain split is a
// partition of the order into intervals [j, i), each on its own accelerator or CPU. The general
// DP (dp.cpp) tries every pair of prefixes: quadratic. Here the optimum max-load T* is found by a
// parametric search on T instead, with a feasibility test that is near-linear:
//
//   need[c][i] = fewest accelerators that, with at most c CPUs, cover the prefix of length i
//                with every interval's load <= T.
//
// A CPU interval's load only grows with the interval, so the usable j form a window [lo(i), i]
// found by two pointers, and the best need[c-1][j] in it is a sliding-window minimum. An
// accelerator interval's memory, compute and support are monotone too (another window), but
// its communication is not; it is kept for every j at once in a segment tree with range
// additions (each group changes it on O(1) ranges of j when one of its units joins the prefix),
// and the window is searched one run of equal need[c][j] at a time. T is bisected over the
// doubles, keeping the best split found; the result equals the general DP's optimum (up to
// rounding in the last bits).
#pragma once

#include "dp.hpp"

namespace exactplace {

// `order` lists every unit once; every edge of `instance` must go forward in it.
Solution solve_chain(const Instance& instance, const Options& options, const std::vector<std::int64_t>& order,
                     Stopper& stop);

}  // namespace exactplace
