// Pricing of the device-set relaxation (formulations/device_sets.py): max pi(S) over the class sets S
// one accelerator holds within a threshold, where a set's load is its classes' time plus the cost of
// every communication group with members on both sides of S, once.
//
// A dynamic program over the classes in a given order. A group is open while some of its members are
// decided and some are not; an open group whose decided members all lie on one side is recorded in
// the state by that side, a group found split is charged (once) and forgotten. Per state, the Pareto
// front of (load, value) pairs, ascending in both. A partial set whose value plus the fractional
// knapsack of the positive-value classes still to come (within the capacity left) cannot exceed
// `floor` is dropped, so the result is exact above the floor. A pair kept apart (a branch of the
// relaxation's branch-and-price) is open like a group from its first member to its last, recorded in the
// state only when the first is in the set. Pure C++, no Python here.
#pragma once

#include <cstdint>
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
    bool stopped = false;  // by the Stopper: value and sets are meaningless
    double value = 0.0;    // max pi(S) when above `floor`, else `floor`
    std::vector<std::vector<std::uint8_t>> sets;  // up to `keep` sets of value above `floor`, best first
};

class SetPricer {
public:
    // Throws std::invalid_argument naming the field at fault.
    explicit SetPricer(SetPricingInstance instance);

    // Sets of load <= `capacity` (the threshold and its tolerance); `duals` per class.
    SetPricingResult price(const std::vector<double>& duals, double capacity, double floor, int keep,
                           Stopper& stop) const;

    int classes() const { return static_cast<int>(in_.time.size()); }

private:
    SetPricingInstance in_;
    std::vector<std::int64_t> position_;       // per class: its place in the order
    std::vector<std::int64_t> first_, last_;  // per group, then per pair kept apart: positions of its first and last member
    std::vector<std::vector<std::int64_t>> groups_of_;  // per class: its groups, then its pairs (as group count + pair)
};

}  // namespace exactplace
