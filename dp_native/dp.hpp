// The max-load DP over ideals (NeurIPS 2020, section 5.1.1), on a graph already contracted by
// the Python side: each "unit" is a contracted forward node together with its backward
// partners, and communication is given as groups of original edges (see Instance).
//
// DP[c][a][I] = best max-load of placing the units of ideal I on c CPUs and a accelerators as a
// chain of ideals; DP[c][a][I] = min over sub-ideals J of I of
// max(DP[c-1][a][J], cpu(I\J)) and max(DP[c][a-1][J], acc(I\J)), with J = I meaning
// "leave that device empty". The answer is DP[l][k][all units].
#pragma once

#include <cstdint>
#include <vector>

#include "stop.hpp"

namespace exactplace {

// The DP's view of a graph. Units are numbered 0..units-1 by the caller.
struct Instance {
    int units = 0;
    std::vector<double> cpu_time, acc_time, memory;  // per unit (sums over its original nodes)
    std::vector<std::uint8_t> supported;             // 0: some node of the unit cannot run on an accelerator
    std::vector<std::int64_t> edge_src, edge_dst;    // the DAG whose ideals are enumerated
    // Communication groups (one per original node and distinct outgoing cost): a group costs
    // group_cost once on an accelerator set S when its source unit is in S and some target
    // unit is not, or its source unit is not in S and some target unit is.
    std::vector<double> group_cost;
    std::vector<std::int64_t> group_source;                // unit
    std::vector<std::int64_t> group_ptr, group_target;     // CSR: distinct target units, none = source
    // Empty: enumerate the ideals of the DAG. Otherwise a topological order of the units (every
    // edge goes forward in it) whose prefixes are the only ideals used: DPL, solved by chain.hpp.
    std::vector<std::int64_t> order;
};

struct Options {
    int accelerators = 1;
    int cpus = 0;
    double memory_cap = 0.0;     // per accelerator; may be +inf
    bool overlap = false;        // accelerator load = max(compute, communication)
    int threads = 1;
    std::int64_t max_ideals = 0; // TooManyIdeals beyond this, before any table is allocated
};

enum class Outcome { optimal, infeasible, stopped };

// How a solve ended, as the binding reports it (one enum instead of outcome + stop reason).
enum class Status { optimal, infeasible, time, interrupt };

struct Solution {
    Outcome outcome = Outcome::stopped;
    StopReason stop_reason = StopReason::none;
    double value = 0.0;           // optimal max-load (+inf when infeasible)
    std::vector<int> device;      // per unit (caller numbering): 0..k-1 accelerators, k.. CPUs
    std::int64_t ideals = 0, covers = 0, pairs = 0;
    double seconds_ideals = 0.0, seconds_dp = 0.0;
    int threads_used = 1;

    Status status() const {
        if (outcome == Outcome::optimal) return Status::optimal;
        if (outcome == Outcome::infeasible) return Status::infeasible;
        return stop_reason == StopReason::time ? Status::time : Status::interrupt;
    }
};

// A stopped solve may still carry a device (the best split found so far: DPL).
// Throws std::invalid_argument for malformed input and TooManyIdeals (ideals.hpp) when the
// lattice has more than options.max_ideals ideals.
Solution solve(const Instance& instance, const Options& options, Stopper& stop);

// Bytes solve() allocates for a lattice of `ideals` ideals and `covers` cover pairs.
std::int64_t memory_estimate(int units, int accelerators, int cpus, std::int64_t ideals, std::int64_t covers);

// Bytes solve() allocates for an instance with a non-empty `order` (the chain DP).
std::int64_t chain_memory_estimate(int units, int cpus, std::int64_t groups_members);

}  // namespace exactplace
