// The communication groups both native models take (the DP's Instance and the path DP's
// PathInstance), checked one way: a group is a source unit, its distinct target units (CSR over
// group_ptr / group_target) and a finite, non-negative cost.
#pragma once

#include <cmath>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

namespace exactplace {

// Throws std::invalid_argument naming the group at fault.
inline void check_groups(std::int64_t units, const std::vector<double>& cost, const std::vector<std::int64_t>& source,
                         const std::vector<std::int64_t>& ptr, const std::vector<std::int64_t>& target) {
    const std::size_t groups = cost.size();
    if (source.size() != groups || ptr.size() != groups + 1 || ptr[0] != 0 ||
        ptr[groups] != static_cast<std::int64_t>(target.size())) {
        throw std::invalid_argument("group_source, group_ptr and group_target do not describe the groups");
    }
    for (std::size_t g = 0; g < groups; ++g) {
        if (!(std::isfinite(cost[g]) && cost[g] >= 0)) {
            throw std::invalid_argument("group " + std::to_string(g) + " has a negative, NaN or infinite cost");
        }
        if (source[g] < 0 || source[g] >= units || ptr[g + 1] < ptr[g]) {
            throw std::invalid_argument("group " + std::to_string(g) + " is malformed");
        }
        for (std::int64_t t = ptr[g]; t < ptr[g + 1]; ++t) {
            if (target[t] < 0 || target[t] >= units || target[t] == source[g]) {
                throw std::invalid_argument("group " + std::to_string(g) + " has an invalid target");
            }
        }
    }
}

}  // namespace exactplace
