// The latency path bound (exactplace/bounds/latency_path.py): a shortest-path DP over the
// ideals of the reduced graph, charging a subgraph step its load and a CPU step its CPU time
// only where the step meets a given path of the graph.
//
// A chain {} = I_0 < I_1 < ... < I_t = V of ideals whose steps are one accelerator subgraph (at
// most `accelerators` of them, each within `memory_cap`) or one CPU node; its charge along a
// path P is the sum of load(I_{i+1} \ I_i) over the subgraph steps that meet P plus the CPU
// time of P's CPU steps. The DP finds the least charge of every path at once (the steps are
// enumerated once and charged for each path), and for each path one chain that reaches it.
//
// load(S) = inputs copied in + compute + outputs copied out, less what S saves by absorbing
// its sources' trivial sinks within the memory left (a fractional knapsack), as the Python
// docstring explains. Pairs (I, J) are enumerated from I by adding units in increasing label
// order (each J once), cut where the memory exceeds the cap; along a branch the sums are
// sums (the one subtraction, outputs that stopped leaving, is taken once per pair), so a
// pair's charge does not depend on the branch that found it.
#pragma once

#include <cstdint>
#include <vector>

#include "stop.hpp"

namespace exactplace {

// The reduced graph. Units are numbered 0..units-1 by the caller.
struct PathInstance {
    int units = 0;
    std::vector<std::int64_t> edge_src, edge_dst;  // the DAG whose ideals are enumerated
    std::vector<double> cpu_time;                  // per unit
    std::vector<double> acc_time;                  // per unit, already divided by the speed; +inf: unsupported
    std::vector<double> memory;                    // per unit
    double memory_cap = 0.0;                       // of one accelerator (the largest); may be +inf
    int accelerators = 0;
    bool cpus = false;  // CPU steps allowed
    // Communication groups with a cost: copied out of S when the source is in S and `stuck`
    // or some target is not; copied in when some target is in S and the source is not. A group
    // whose targets are all in S and that has absorbable trivial sinks (sink_memory >= 0) is
    // copied out unless the knapsack absorbs them.
    std::vector<double> group_cost;
    std::vector<std::int64_t> group_source;
    std::vector<std::int64_t> group_ptr, group_target;  // CSR: target units, each also an edge's target
    std::vector<std::uint8_t> group_stuck;
    std::vector<double> group_sink_memory;              // -1: none
    std::vector<std::int64_t> path_ptr, path_node;      // CSR: the paths to charge
};

struct PathOptions {
    std::int64_t max_ideals = 1'000'000;
    std::int64_t memory_budget = std::int64_t{2} << 30;  // bytes of the lattice and the tables
};

enum class PathStatus { done, too_many_ideals, over_budget, time, interrupt };

struct PathResult {
    PathStatus status = PathStatus::done;
    std::vector<double> values;  // per path: the least charge (+inf: no chain)
    // Per path, whether a chain reaching its value is given (not when +inf), and that chain: the
    // step of every unit (caller numbering) and whether each step is an accelerator subgraph (1)
    // or a CPU node (0).
    std::vector<std::uint8_t> has_chain;
    std::vector<std::vector<std::int32_t>> step_of_unit;
    std::vector<std::vector<std::uint8_t>> step_on_accelerator;
    std::int64_t ideals = 0, covers = 0, pairs = 0, bytes = 0;
    double seconds_ideals = 0.0, seconds_dp = 0.0;
};

// Throws std::invalid_argument for malformed input. Stops (status time / interrupt) through `stop`;
// stopped while following the chains back, it returns the values (status done) without chains.
PathResult path_bound(const PathInstance& instance, const PathOptions& options, Stopper& stop);

// Bytes path_bound() allocates for a lattice of `ideals` ideals and `covers` cover pairs.
std::int64_t path_memory_estimate(int units, int accelerators, int paths, std::int64_t ideals, std::int64_t covers);

}  // namespace exactplace
