// The device-set pricing DP (set_pricing.hpp).
#include "set_pricing.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <numeric>
#include <stdexcept>
#include <string>
#include <utility>

namespace exactplace {

namespace {

// Values must beat a kept one by this much (sums of floating-point duals).
constexpr double kValueSlack = 1e-12;

// A state's key: its open, unsplit groups as (group << 1 | side), ascending.
using Key = std::vector<std::int64_t>;

struct Candidate {
    double load, value;
    std::int32_t parent_state, parent_entry;
    std::uint8_t chosen;
};

// How a front entry was reached, for the trace back.
struct Back {
    std::int32_t parent_state, parent_entry;
    std::uint8_t chosen;
};

void require(bool ok, const std::string& what) {
    if (!ok) throw std::invalid_argument(what);
}

// The fractional knapsack of some positive-value classes as breakpoints (capacity, value): concave.
struct Knapsack {
    std::vector<double> capacity{0.0}, value{0.0};

    double at(double room) const {
        if (room <= 0.0) return 0.0;
        const auto j = static_cast<std::size_t>(std::upper_bound(capacity.begin(), capacity.end(), room) -
                                                capacity.begin()) - 1;
        if (j + 1 == capacity.size()) return value.back();
        return value[j] + (value[j + 1] - value[j]) * (room - capacity[j]) / (capacity[j + 1] - capacity[j]);
    }
};

// Sorts `candidates` by load, given the starts of its runs, each ascending in load: pairwise merges, O(n log runs).
// (Equal loads may stay in any order: the front then keeps a dominated entry, never drops an undominated one.)
void merge_runs(std::vector<Candidate>& candidates, std::vector<std::size_t> runs) {
    const auto by_load = [](const Candidate& a, const Candidate& b) { return a.load < b.load; };
    runs.push_back(candidates.size());
    while (runs.size() > 2) {
        std::vector<std::size_t> merged{0};
        for (std::size_t r = 0; r + 1 < runs.size(); r += 2) {
            const std::size_t end = r + 2 < runs.size() ? runs[r + 2] : runs[r + 1];
            if (r + 2 < runs.size()) {
                std::inplace_merge(candidates.begin() + static_cast<std::ptrdiff_t>(runs[r]),
                                   candidates.begin() + static_cast<std::ptrdiff_t>(runs[r + 1]),
                                   candidates.begin() + static_cast<std::ptrdiff_t>(end), by_load);
            }
            merged.push_back(end);
        }
        runs = std::move(merged);
    }
}

}  // namespace

SetPricer::SetPricer(SetPricingInstance instance) : in_(std::move(instance)) {
    const std::size_t n = in_.time.size();
    require(in_.allowed.size() == n, "allowed: one entry per class");
    require(in_.order.size() == n, "order: one entry per class");
    position_.assign(n, -1);
    for (std::size_t i = 0; i < n; ++i) {
        const std::int64_t u = in_.order[i];
        require(u >= 0 && static_cast<std::size_t>(u) < n && position_[u] < 0,
                "order: not a permutation of the classes");
        position_[u] = static_cast<std::int64_t>(i);
    }
    for (std::size_t u = 0; u < n; ++u) {
        require(!in_.allowed[u] || (std::isfinite(in_.time[u]) && in_.time[u] >= 0.0),
                "time: class " + std::to_string(u) + " is allowed but its time is negative or not finite");
    }
    const std::size_t groups = in_.group_cost.size();
    require(in_.group_ptr.size() == groups + 1 && in_.group_ptr.front() == 0 &&
                in_.group_ptr.back() == static_cast<std::int64_t>(in_.group_member.size()),
            "group_ptr: not a CSR index over group_member");
    first_.assign(groups, 0);
    last_.assign(groups, 0);
    groups_of_.assign(n, {});
    for (std::size_t g = 0; g < groups; ++g) {
        require(std::isfinite(in_.group_cost[g]) && in_.group_cost[g] >= 0.0,
                "group_cost: group " + std::to_string(g) + " is negative or not finite");
        require(in_.group_ptr[g] < in_.group_ptr[g + 1], "group_ptr: group " + std::to_string(g) + " has no member");
        first_[g] = std::numeric_limits<std::int64_t>::max();
        last_[g] = -1;
        for (std::int64_t e = in_.group_ptr[g]; e < in_.group_ptr[g + 1]; ++e) {
            const std::int64_t u = in_.group_member[e];
            require(u >= 0 && static_cast<std::size_t>(u) < n, "group_member: class out of range");
            first_[g] = std::min(first_[g], position_[u]);
            last_[g] = std::max(last_[g], position_[u]);
            auto& of = groups_of_[u];
            if (of.empty() || of.back() != static_cast<std::int64_t>(g)) of.push_back(static_cast<std::int64_t>(g));
        }
    }
    require(in_.apart.size() % 2 == 0, "apart: pairs of classes, flat (an even length)");
    for (std::size_t p = 0; p < in_.apart.size(); p += 2) {
        const std::int64_t a = in_.apart[p], b = in_.apart[p + 1];
        require(a >= 0 && b >= 0 && static_cast<std::size_t>(a) < n && static_cast<std::size_t>(b) < n && a != b,
                "apart: pair " + std::to_string(p / 2) + " is not two distinct classes");
        const auto id = static_cast<std::int64_t>(groups + p / 2);
        first_.push_back(std::min(position_[a], position_[b]));
        last_.push_back(std::max(position_[a], position_[b]));
        groups_of_[a].push_back(id);
        groups_of_[b].push_back(id);
    }
}

SetPricingResult SetPricer::price(const std::vector<double>& duals, double capacity, double floor, int keep,
                                  Stopper& stop) const {
    const std::size_t n = in_.time.size();
    require(duals.size() == n, "duals: one per class");
    require(keep >= 0, "keep: must be non-negative");
    std::vector<double> pi(n, 0.0);
    for (std::size_t u = 0; u < n; ++u) {
        require(std::isfinite(duals[u]), "duals: class " + std::to_string(u) + " is not finite");
        if (in_.allowed[u]) pi[u] = duals[u];
    }
    // The positive-value classes by value per time, best first (ties: processing order).
    std::vector<std::int64_t> valuable;
    for (std::size_t u = 0; u < n; ++u)
        if (pi[u] > 0.0) valuable.push_back(static_cast<std::int64_t>(u));
    std::sort(valuable.begin(), valuable.end(), [&](std::int64_t a, std::int64_t b) {
        const double lhs = pi[a] * in_.time[b], rhs = pi[b] * in_.time[a];
        return lhs != rhs ? lhs > rhs : position_[a] < position_[b];
    });

    SetPricingResult result;
    result.value = floor;
    const auto groups = static_cast<std::int64_t>(in_.group_cost.size());
    std::vector<std::vector<Candidate>> fronts{{Candidate{0.0, 0.0, -1, -1, 0}}};
    std::vector<Key> keys{Key{}};
    std::vector<std::vector<std::vector<Back>>> history;  // per step, per state, per front entry
    history.reserve(n);
    Knapsack rest;
    for (std::size_t i = 0; i < n; ++i) {
        if (stop.check_owner_now()) {
            result.stopped = true;
            return result;
        }
        const std::int64_t u = in_.order[i];
        rest = Knapsack{};
        for (const std::int64_t v : valuable) {
            if (position_[v] <= static_cast<std::int64_t>(i)) continue;
            rest.capacity.push_back(rest.capacity.back() + in_.time[v]);
            rest.value.push_back(rest.value.back() + pi[v]);
        }
        // Per new state: its candidates, as runs (one per parent state and choice) each ascending in load.
        std::map<Key, std::pair<std::vector<Candidate>, std::vector<std::size_t>>> grown;
        for (std::size_t s = 0; s < keys.size(); ++s) {
            for (std::uint8_t x = 0; x <= (in_.allowed[u] ? 1 : 0); ++x) {
                double charge = 0.0;
                bool clash = false;  // a pair kept apart would be in the set together
                Key after = keys[s];
                for (const std::int64_t g : groups_of_[u]) {
                    const auto it = std::lower_bound(after.begin(), after.end(), g << 1);
                    if (g >= groups) {  // a pair kept apart: recorded (side 1) while its first member is in the set
                        if (it != after.end() && (*it >> 1) == g) {
                            clash = clash || x == 1;
                            after.erase(it);
                        } else if (first_[g] == static_cast<std::int64_t>(i) && x == 1) {
                            after.insert(it, g << 1 | 1);
                        }
                    } else if (it != after.end() && (*it >> 1) == g) {
                        if ((*it & 1) != x) {
                            charge += in_.group_cost[g];  // split now: charged once, then forgotten
                            after.erase(it);
                        } else if (last_[g] == static_cast<std::int64_t>(i)) {
                            after.erase(it);  // closed on one side: never charged
                        }
                    } else if (first_[g] == static_cast<std::int64_t>(i) && last_[g] > first_[g]) {
                        after.insert(it, g << 1 | x);
                    }
                }
                if (clash) continue;
                const double add_load = (x ? in_.time[u] : 0.0) + charge, add_value = x ? pi[u] : 0.0;
                std::pair<std::vector<Candidate>, std::vector<std::size_t>>* into = nullptr;
                const auto& front = fronts[s];
                for (std::size_t e = 0; e < front.size(); ++e) {
                    const double load = front[e].load + add_load, value = front[e].value + add_value;
                    if (!(load <= capacity)) break;  // the front ascends in load
                    if (!(value + rest.at(capacity - load) > floor + kValueSlack)) continue;
                    if (into == nullptr) {
                        into = &grown[after];
                        into->second.push_back(into->first.size());
                    }
                    into->first.push_back(
                        Candidate{load, value, static_cast<std::int32_t>(s), static_cast<std::int32_t>(e), x});
                }
            }
        }
        keys.clear();
        fronts.clear();
        auto& steps = history.emplace_back();
        for (auto& [key, grown_runs] : grown) {
            auto& [candidates, runs] = grown_runs;
            merge_runs(candidates, runs);
            std::vector<Candidate> front;
            std::vector<Back> back;
            double best = -std::numeric_limits<double>::infinity();
            for (const Candidate& c : candidates) {
                if (!(c.value > best + kValueSlack)) continue;
                best = c.value;
                back.push_back(Back{c.parent_state, c.parent_entry, c.chosen});
                front.push_back(Candidate{c.load, c.value, -1, -1, 0});
            }
            keys.push_back(key);
            fronts.push_back(std::move(front));
            steps.push_back(std::move(back));
        }
        if (keys.empty()) return result;
    }
    // Every group is closed after the last class: the one state left has the empty key.
    if (keys.size() != 1 || !keys[0].empty()) return result;
    const auto& last = fronts[0];
    std::vector<std::int32_t> best(last.size());
    std::iota(best.begin(), best.end(), 0);
    std::stable_sort(best.begin(), best.end(), [&](std::int32_t a, std::int32_t b) { return last[a].value > last[b].value; });
    if (!last.empty() && last[best.front()].value > floor + kValueSlack) result.value = last[best.front()].value;
    for (const std::int32_t top : best) {
        if (static_cast<int>(result.sets.size()) >= keep || !(last[top].value > floor + kValueSlack)) break;
        std::vector<std::uint8_t> chosen(n, 0);
        std::int32_t state = 0, entry = top;
        for (std::size_t i = n; i-- > 0;) {
            const Back& b = history[i][state][entry];
            chosen[in_.order[i]] = b.chosen;
            state = b.parent_state;
            entry = b.parent_entry;
        }
        result.sets.push_back(std::move(chosen));
    }
    return result;
}

}  // namespace exactplace
