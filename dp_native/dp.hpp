// The max-load DP over ideals (NeurIPS 2020, section 5.1.1), on a graph already contracted by
// the Python side: each "unit" is a contracted forward node together with its backward
// partners, and communication is given as groups of original edges (see Instance).
//
// DP[c][a][I] = best max-load of placing the units of ideal I on c CPUs and a accelerators as a
// chain of ideals; DP[c][a][I] = min over sub-ideals J of I of
// max(DP[c-1][a][J], cpu(I\J)) and max(DP[c][a-1][J], acc(I\J)), with J = I meaning
// "leave that device empty". The answer is DP[l][k][all units].
//
// Heterogeneous clusters: the accelerators come in T types (a count, a memory cap and a speed
// each) and `a` becomes a vector (a_1..a_T) of accelerators used per type, with one option
// max(DP[c][a - e_t][J], acc_t(I\J)) per type t: acc_t divides the compute by the type's speed
// and checks the type's memory. One type of speed 1 is the homogeneous DP above, unchanged.
//
// Replication (paper Appendix C.2, Options::replication, homogeneous clusters only): a set S
// placed on an accelerator may run on r identical accelerators, each taking 1/r of the samples
// and all-reducing S's parameters: load (acc(S) + comm(S) + sync(S) (r-1)/r) / r, where sync is
// Instance::sync summed. DP[c][a][I] then also takes max(DP[c][a-r][J], load_r(I\J)) for every
// r <= a; `a` counts accelerators including replicas. Solution::replicas says each accelerator's r.
#pragma once

#include <cstdint>
#include <limits>
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
    // Per unit: time to all-reduce the unit's parameters among replicas (Options::replication);
    // empty reads as zeros.
    std::vector<double> sync;
};

struct Options {
    int accelerators = 1;        // k: every accelerator, of all types
    int cpus = 0;
    double memory_cap = 0.0;     // per accelerator when `type_count` is empty; may be +inf
    // Accelerator types (heterogeneous clusters). Empty: one type, `accelerators` accelerators of
    // `memory_cap` and speed 1. Otherwise type t has type_count[t] >= 1 accelerators (summing to
    // `accelerators`) of memory type_memory[t] (may be +inf) and speed type_speed[t] > 0 (an
    // accelerator's compute time is divided by it; communication is not). Solution::device numbers
    // the accelerators by type: type 0 gets 0..type_count[0]-1, type 1 the next ones, and so on.
    // The chain DP (non-empty Instance::order) takes one type of speed 1 only.
    std::vector<std::int64_t> type_count;
    std::vector<double> type_memory, type_speed;
    bool overlap = false;        // accelerator load = max(compute, communication)
    // Replicated stages (see the header comment); needs one type, no overlap and no `order`.
    bool replication = false;
    // Search only chain splits of max-load below `cutoff` (a caller that knows one of load L passes a
    // little more than L: DPL's split, say). A stage whose load reaches it is never tried, and an
    // ideal is skipped when a lower bound says that no split below it passes through the ideal on
    // any device count (see Worker::live in dp.cpp). The optimum is unchanged whenever it lies below `cutoff`;
    // with none below it, Outcome::infeasible. The DP with replication ignores it.
    double cutoff = std::numeric_limits<double>::infinity();
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
    std::vector<int> replicas;    // with Options::replication: per accelerator (1 when unused)
    std::int64_t ideals = 0, covers = 0, pairs = 0;
    std::int64_t skipped = 0;     // ideals no split below Options::cutoff passes through (not walked)
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

// Bytes solve() allocates for a lattice of `ideals` ideals and `covers` cover pairs, with one
// accelerator type (`accelerators` of them) or the given type counts. Saturates at INT64_MAX
// (a product of type counts too large to tabulate).
std::int64_t memory_estimate(int units, int accelerators, int cpus, std::int64_t ideals, std::int64_t covers);
std::int64_t memory_estimate(int units, const std::vector<std::int64_t>& type_count, int cpus, std::int64_t ideals,
                             std::int64_t covers);

// The DP's layers: (cpus + 1) * prod(type_count[t] + 1), saturated at INT64_MAX.
std::int64_t layer_count(const std::vector<std::int64_t>& type_count, int cpus);

// Bytes solve() allocates for an instance with a non-empty `order` (the chain DP).
std::int64_t chain_memory_estimate(int units, int cpus, std::int64_t groups_members);

}  // namespace exactplace
