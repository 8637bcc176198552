// Pricing of the device-set relaxation (formulations/device_sets.py): max pi(S) over the class sets S
// one accelerator holds within a threshold, where a set's load is its classes' time plus the cost of
// every communication group with members on both sides of S, once.
//
// A dynamic program over the classes in a given order. A group is open while some of its members are
// decided and some are not; an open group whose decided members all lie on one side is recorded in
// the state by that side, a group found split is charged (once) and forgotten. Per state, the Pareto
// front of (load, value) pairs, ascending in both. A partial set whose value plus the fractional
// knapsack of the positive-value classes still to come (within the capacity left) cannot exceed
// `floor` is dropped, so the result is exact above the floor. The floor is raised most of the way (kRaiseShare)
// to the value of a set met: before the DP a set found greedily (by value per time, then single moves and swaps),
// during it any partial set that is a set within the capacity as it stands ("nothing more": its open groups whose
// decided members are all in are charged). The maximum lies above either, and the fewer states a floor lets live
// the faster the DP (branchy graphs keep many groups open). A pair kept apart (a branch of the
// relaxation's branch-and-price) is open like a group from its first member to its last, recorded in the
// state only when the first is in the set. Pure C++, no Python here.
#pragma once

#include <cstdint>
#include <limits>
#include <vector>

#include "stop.hpp"

namespace exactplace {

struct SetPricingInstance {
    std::vector<double> time;                          // per class, >= 0
    std::vector<std::uint8_t> allowed;                 // per class: may be in a set
    std::vector<double> group_cost;                    // per group, >= 0
    std::vector<std::int64_t> group_ptr, group_member;  // CSR: the distinct classes of each group
    std::vector<std::int64_t> order;                   // a permutation of the classes
    std::vector<std::int64_t> apart;                   // pairs of distinct classes no set may hold both of, flat
};

struct SetPricingResult {
    bool stopped = false;      // by the Stopper or the memory budget: value and sets are meaningless
    bool over_budget = false;  // stopped because its fronts would outgrow the memory budget
    double value = 0.0;    // max pi(S) when above `floor`, else `floor`
    std::vector<std::vector<std::uint8_t>> sets;  // up to `keep` sets of value above `floor`, best first
};

class SetPricer {
public:
    // Throws std::invalid_argument naming the field at fault.
    explicit SetPricer(SetPricingInstance instance);

    // Sets of load <= `capacity` (the threshold and its tolerance); `duals` per class. `raise_floor`: raise the
    // floor by the greedy set and the partial sets met (the value is the same; fewer sets may come back).
    // `memory_budget`: bytes the fronts and their trace back may hold; past it the DP stops (`over_budget`). Duals
    // of nearly one value per time leave the fronts unpruned: some 250 MB a second on a held-out BERT operator graph.
    SetPricingResult price(const std::vector<double>& duals, double capacity, double floor, int keep,
                           Stopper& stop, bool raise_floor = true,
                           std::int64_t memory_budget = std::numeric_limits<std::int64_t>::max()) const;

    // Up to `count` disjoint, non-empty sets within `capacity`, each found greedily (greedy_set) among the
    // classes the earlier ones left: columns that together cover much of the classes, for a master far from a
    // solution of its own (a heuristic: no bound rests on it).
    std::vector<std::vector<std::uint8_t>> cover(const std::vector<double>& duals, double capacity, int count) const;

    int classes() const { return static_cast<int>(in_.time.size()); }

private:
    // The DP itself, at the values `pi` (0 for classes not allowed); `valuable`: the positive ones, best per time
    // first. `bar`: the floor it ended at (raised from `floor` when `raise_floor`).
    SetPricingResult dynamic_program(const std::vector<double>& pi, const std::vector<std::int64_t>& valuable,
                                     double capacity, double floor, int keep, Stopper& stop, bool raise_floor,
                                     std::int64_t memory_budget, double& bar) const;
    // The duals checked (one per class, finite), 0 for the classes that may not be in a set.
    std::vector<double> values(const std::vector<double>& duals) const;
    // The classes of positive value `pi`, by value per time, best first (ties: processing order).
    std::vector<std::int64_t> ranked(const std::vector<double>& pi) const;
    // A set within `capacity` of classes `open` (per class: may enter), found greedily among `valuable` (ranked,
    // all open) and then by single moves (classes of no value in or out when that lowers the load) and swaps.
    std::vector<std::uint8_t> greedy_set(const std::vector<double>& pi, const std::vector<std::int64_t>& valuable,
                                         const std::vector<std::uint8_t>& open, double capacity) const;

    SetPricingInstance in_;
    std::vector<std::int64_t> position_;       // per class: its place in the order
    std::vector<std::int64_t> first_, last_;  // per group, then per pair kept apart: positions of its first and last member
    std::vector<std::vector<std::int64_t>> groups_of_;  // per class: its groups, then its pairs (as group count + pair)
};

}  // namespace exactplace
