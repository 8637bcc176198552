// A bounded search over ideals for the max-load chain split ("branch, bound and remember"), for
// graphs whose lattice of ideals is too large for the DP (dp.hpp) to enumerate.
//
// Same problem and same stage loads as the DP: a chain {} = I0 < I1 < ... of ideals of the unit DAG,
// each difference I_j \ I_{j-1} on its own device (a CPU: cpu time; an accelerator of type t: compute
// / speed_t plus communication, or their max with `overlap`, within the type's memory). Ideals are
// bitsets built on the fly, never enumerated. For a threshold T, a depth-first search fills one
// device after another with stages of load <= T; without communication only maximal stages (no
// addable unit still fits) are tried, since moving a unit into an earlier stage never raises a load.
// Each failed state (ideal, devices left) proves a lower bound on its best completion, kept in a
// hash table (the "remember" part) and returned: the least load any pruned branch would have
// needed (IDA*). Bounds at every state: the least time left over the devices' capacity, pigeonhole
// bounds on the largest units left, the largest unit, and on one kind of accelerator without CPUs
// Martello and Toth's bin-packing bound L2 and the head and tail of each unit left (its ancestors
// left fill ceil(a / T) devices up to its own, its descendants ceil(d / T) from its own on).
// Greedy splits (Hoffmann's rule: device after device the fullest stage a budgeted search finds,
// in three unit orders, then at random) lower the best split, first by bisection between the
// bound and it, then before each threshold. T moves between
// the best proven bound and the best split found (own or Options::cutoff, a known split's load),
// first just above the bound, then by bisection; the answer is certified when they meet. Without
// communication, maximal stages dominated by Jackson's rule (an addable unit with more descendants
// and resources could take a unit's place) are skipped, and the reversed graph is searched too:
// each threshold goes to both directions in turn, within budgets that double, until one decides it;
// each new attempt at a threshold orders stages of equal load differently (a restart that keeps the
// table): by label, then by positional weight, then by positional weights perturbed at random.
#pragma once

#include <cstdint>
#include <limits>
#include <vector>

#include "dp.hpp"
#include "stop.hpp"

namespace exactplace {

struct BoundedSettings {
    // States (ideal, devices left) whose bounds the table keeps; past it, no new ones are kept.
    std::int64_t memo_limit = 1 << 22;
    // Relative tolerance of the certificate: optimal once the best split is within it of the bound.
    double tolerance = 1e-9;
    // Consecutive failed thresholds just above the bound after which the next one bisects.
    int bisect_after = 2;
    // Bytes the candidate stages of the states on the search path may take; past it the search
    // stops (BoundedSolution::exhausted), keeping its best split and bound.
    std::int64_t stage_bytes = std::int64_t{1} << 30;
    // Stage search steps per device of the greedy split tried before each threshold's search
    // (Hoffmann's rule: the fullest stage found); 0: no greedy split.
    std::int64_t dive_nodes = 20000;
    // Greedy splits tried after the bisection, just below the best one, by positional weights
    // perturbed at random (each unit's by up to half).
    int random_dives = 30;
    // Without communication, search the reversed graph too: each threshold goes to both directions
    // in turn, each within a budget of steps (states and stage search steps) that starts at
    // `first_budget` and doubles every round, until one decides it (a bound either proves holds
    // for both). Each direction keeps half of `memo_limit`.
    bool bidirectional = true;
    std::int64_t first_budget = 10000;
};

struct BoundedSolution {
    Outcome outcome = Outcome::stopped;
    StopReason stop_reason = StopReason::none;
    double value = std::numeric_limits<double>::infinity();  // the best split's max-load (inf: none found)
    double bound = 0.0;          // proven: no chain split has a smaller max-load
    std::vector<int> device;     // per unit, numbered as Solution::device; empty when none found
    std::int64_t states = 0;     // search states entered
    std::int64_t stages = 0;     // candidate stages tried
    std::int64_t remembered = 0; // states pruned by the table
    std::int64_t thresholds = 0; // thresholds T searched
    bool exhausted = false;      // stopped by BoundedSettings::stage_bytes (stop_reason stays none)
    double seconds = 0.0;
};

// Options as for solve() (dp.hpp): accelerators, cpus, memory_cap or the accelerator types,
// overlap, and cutoff (a known split's max-load, or inf: the upper end of the bisection; the
// result is the search's own split either way). Replication and an `order` are rejected; threads
// and max_ideals do not apply. Throws std::invalid_argument for malformed input.
BoundedSolution solve_bounded(const Instance& instance, const Options& options, const BoundedSettings& settings,
                              Stopper& stop);

}  // namespace exactplace
