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

// A raised floor lies this much (relative) below the value that raised it, and the set behind that value lies this
// much within the capacity: the DP sums the same loads and values in another order.
constexpr double kRaiseSlack = 1e-9;

double below(double value) { return value - kRaiseSlack * std::max(1.0, std::abs(value)); }

// A floor is raised this share of the way to the value met, not all of it: the sets between come back as columns
// too. (On layer_resnet50_inference, raised all the way, a pricing yields one or two columns and the bound takes far
// more pricings and time to the relaxation's limit, where 0.8 matches no raise; on LayerGraphs_inceptionv3_inference
// 0.8 prices faster than no raise, most of all early in a generation.)
constexpr double kRaiseShare = 0.8;

// The floor raised by a value met (a set's within the capacity), from the floor asked.
double raised(double asked, double current, double met) {
    return std::max(current, asked + kRaiseShare * (below(met) - asked));
}

// A state's key: its open, unsplit groups as (group << 1 | side), ascending.
using Key = std::vector<std::int64_t>;

// A front entry: a partial set's load and value.
struct Entry {
    double load, value;
};

// How a front entry was reached, for the trace back.
struct Back {
    std::int32_t parent_state, parent_entry;
    std::uint8_t chosen;
};

// A new state's run of candidates: a parent state's front, each entry with class `chosen` (1) or not (0), which adds
// `load` (its time and the groups it splits) and `value`. Ascending in load, as the parent's front.
struct Run {
    std::int32_t parent_state;
    std::uint8_t chosen;
    double load, value;
};

// A run being merged: its parent's front (`begin`), the entries left and the load of the next one's candidate (kNone
// when none is left).
struct Head {
    const Entry* begin;
    const Entry* at;
    const Entry* end;
    double load;
    const Run* run;
};

constexpr double kNone = std::numeric_limits<double>::infinity();

void require(bool ok, const std::string& what) {
    if (!ok) throw std::invalid_argument(what);
}

// The fractional knapsack of some positive-value classes as breakpoints (capacity, value): concave.
struct Knapsack {
    std::vector<double> capacity{0.0}, value{0.0};

    double at(double room) const {
        if (room <= 0.0) return 0.0;
        return at(room, static_cast<std::size_t>(std::upper_bound(capacity.begin(), capacity.end(), room) -
                                                 capacity.begin()) - 1);
    }

    // At `room` > 0 given its breakpoint `j`: capacity[j] <= room < capacity[j + 1] (or j the last).
    double at(double room, std::size_t j) const {
        if (j + 1 == capacity.size()) return value.back();
        return value[j] + (value[j + 1] - value[j]) * (room - capacity[j]) / (capacity[j + 1] - capacity[j]);
    }
};

// Knapsack::at for rooms that only shrink (the candidates of one new state, merged by ascending load): its
// breakpoint found by walking down from the last one, not by a search.
class ShrinkingRoom {
public:
    explicit ShrinkingRoom(const Knapsack& knapsack) : knapsack_(knapsack), j_(knapsack.capacity.size() - 1) {}

    double at(double room) {
        if (room <= 0.0) return 0.0;
        while (j_ > 0 && knapsack_.capacity[j_] > room) --j_;
        return knapsack_.at(room, j_);
    }

private:
    const Knapsack& knapsack_;
    std::size_t j_;
};

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

std::vector<double> SetPricer::values(const std::vector<double>& duals) const {
    const std::size_t n = in_.time.size();
    require(duals.size() == n, "duals: one per class");
    std::vector<double> pi(n, 0.0);
    for (std::size_t u = 0; u < n; ++u) {
        require(std::isfinite(duals[u]), "duals: class " + std::to_string(u) + " is not finite");
        if (in_.allowed[u]) pi[u] = duals[u];
    }
    return pi;
}

SetPricingResult SetPricer::price(const std::vector<double>& duals, double capacity, double floor, int keep,
                                  Stopper& stop, bool raise_floor, std::int64_t memory_budget) const {
    const std::size_t n = in_.time.size();
    require(keep >= 0, "keep: must be non-negative");
    const std::vector<double> pi = values(duals);
    const std::vector<std::int64_t> valuable = ranked(pi);
    double start = floor;
    if (raise_floor) {
        const std::vector<std::uint8_t> greedy = greedy_set(pi, valuable, in_.allowed, capacity);
        double value = 0.0;
        for (std::size_t u = 0; u < n; ++u)
            if (greedy[u]) value += pi[u];
        start = raised(floor, floor, value);
    }
    double reached = start;
    SetPricingResult result =
        dynamic_program(pi, valuable, capacity, start, keep, stop, raise_floor, memory_budget, reached);
    // Nothing found above a raised floor: the sums disagreed after all (never seen); again, as asked.
    if (!result.stopped && !(result.value > reached + kValueSlack) && reached > floor)
        result = dynamic_program(pi, valuable, capacity, floor, keep, stop, false, memory_budget, reached);
    if (!(result.value > floor + kValueSlack)) result.value = floor;
    return result;
}

std::vector<std::vector<std::uint8_t>> SetPricer::cover(const std::vector<double>& duals, double capacity,
                                                       int count) const {
    const std::size_t n = in_.time.size();
    const std::vector<double> pi = values(duals);
    std::vector<std::int64_t> valuable = ranked(pi);
    std::vector<std::uint8_t> left = in_.allowed;  // classes no set has taken yet
    std::vector<std::vector<std::uint8_t>> sets;
    while (static_cast<int>(sets.size()) < count && !valuable.empty()) {
        std::vector<std::uint8_t> chosen = greedy_set(pi, valuable, left, capacity);
        if (std::none_of(chosen.begin(), chosen.end(), [](std::uint8_t x) { return x != 0; })) break;
        valuable.erase(std::remove_if(valuable.begin(), valuable.end(), [&](std::int64_t u) { return chosen[u] != 0; }),
                       valuable.end());
        for (std::size_t u = 0; u < n; ++u)
            if (chosen[u]) left[u] = 0;
        sets.push_back(std::move(chosen));
    }
    return sets;
}

std::vector<std::int64_t> SetPricer::ranked(const std::vector<double>& pi) const {
    std::vector<std::int64_t> valuable;
    for (std::size_t u = 0; u < pi.size(); ++u)
        if (pi[u] > 0.0) valuable.push_back(static_cast<std::int64_t>(u));
    std::sort(valuable.begin(), valuable.end(), [&](std::int64_t a, std::int64_t b) {
        const double lhs = pi[a] * in_.time[b], rhs = pi[b] * in_.time[a];
        return lhs != rhs ? lhs > rhs : position_[a] < position_[b];
    });
    return valuable;
}

std::vector<std::uint8_t> SetPricer::greedy_set(const std::vector<double>& pi,
                                                const std::vector<std::int64_t>& valuable,
                                                const std::vector<std::uint8_t>& open, double capacity) const {
    const auto groups = static_cast<std::int64_t>(in_.group_cost.size());
    const std::size_t n = in_.time.size();
    const double room = below(capacity);
    std::vector<std::uint8_t> in(n, 0);
    std::vector<std::int64_t> inside(first_.size(), 0);  // per group, then per pair kept apart: members in the set
    double load = 0.0;
    // How much the load changes when class u moves in or out: its time, and each of its groups that starts or stops
    // being split.
    const auto change = [&](std::int64_t u) {
        const std::int64_t step = in[u] ? -1 : 1;
        double delta = static_cast<double>(step) * in_.time[u];
        for (const std::int64_t g : groups_of_[u]) {
            if (g >= groups) continue;
            const std::int64_t size = in_.group_ptr[g + 1] - in_.group_ptr[g], after = inside[g] + step;
            const bool was = inside[g] > 0 && inside[g] < size, now = after > 0 && after < size;
            if (was != now) delta += now ? in_.group_cost[g] : -in_.group_cost[g];
        }
        return delta;
    };
    const auto may_enter = [&](std::int64_t u) {
        if (in[u] || !open[u]) return false;
        for (const std::int64_t g : groups_of_[u])
            if (g >= groups && inside[g] > 0) return false;  // its partner kept apart is in
        return true;
    };
    const auto move = [&](std::int64_t u, double delta) {
        const std::int64_t step = in[u] ? -1 : 1;
        in[u] ^= 1;
        for (const std::int64_t g : groups_of_[u]) inside[g] += step;
        load += delta;
    };
    // Entries while they fit; then, until nothing changes (a few rounds at most), entries again, classes of no
    // value that lower the load in or out, and swaps of a member for a better class that fits once it is out.
    const auto enter_all = [&]() {
        bool moved = false;
        for (const std::int64_t u : valuable) {
            if (!may_enter(u)) continue;
            const double delta = change(u);
            if (load + delta <= room) {
                move(u, delta);
                moved = true;
            }
        }
        return moved;
    };
    enter_all();
    for (int round = 0; round < 8; ++round) {
        bool moved = enter_all();
        for (std::size_t u = 0; u < n; ++u) {
            const auto c = static_cast<std::int64_t>(u);
            if (pi[u] > 0.0 || (!in[u] && !may_enter(c))) continue;
            const double delta = change(c);
            if (delta < 0.0) {
                move(c, delta);
                moved = true;
            }
        }
        for (std::size_t v = 0; v < n; ++v) {
            const auto out = static_cast<std::int64_t>(v);
            if (!in[v] || !(pi[v] > 0.0)) continue;
            move(out, change(out));
            std::int64_t best = -1;
            double best_delta = 0.0;
            for (const std::int64_t u : valuable) {
                if (u == out || !(pi[u] > pi[v] + kValueSlack) || (best >= 0 && !(pi[u] > pi[best])) ||
                    !may_enter(u))
                    continue;
                const double delta = change(u);
                if (load + delta <= room) best = u, best_delta = delta;
            }
            if (best >= 0) {
                move(best, best_delta);
                moved = true;
            } else {
                move(out, change(out));
            }
        }
        if (!moved) break;
    }
    // The set's load summed afresh (the running load drifts by rounding).
    double total = 0.0;
    for (std::size_t u = 0; u < n; ++u)
        if (in[u]) total += in_.time[u];
    for (std::int64_t g = 0; g < groups; ++g) {
        const std::int64_t size = in_.group_ptr[g + 1] - in_.group_ptr[g];
        if (inside[g] > 0 && inside[g] < size) total += in_.group_cost[g];
    }
    if (!(total <= room)) std::fill(in.begin(), in.end(), std::uint8_t{0});
    return in;
}

SetPricingResult SetPricer::dynamic_program(const std::vector<double>& pi, const std::vector<std::int64_t>& valuable,
                                            double capacity, double floor, int keep, Stopper& stop,
                                            bool raise_floor, std::int64_t memory_budget, double& bar) const {
    const std::size_t n = in_.time.size();
    SetPricingResult result;
    result.value = floor;
    bar = floor;  // raised as partial sets are met that are sets as they stand
    const auto groups = static_cast<std::int64_t>(in_.group_cost.size());
    // The fronts of the states (`keys`) after the last class, and those being grown: both keep their vectors (and
    // their memory) from step to step, as `back` does (fresh pages were a tenth of a pricing's time in perf).
    std::vector<std::vector<Entry>> fronts{{Entry{0.0, 0.0}}}, grown_fronts;
    std::vector<Back> back;
    std::vector<Key> keys{Key{}};
    std::vector<std::vector<std::vector<Back>>> history;  // per step, per state, per front entry
    history.reserve(n);
    Knapsack rest;
    std::vector<Head> heads;  // per run of the new state being merged: its next candidate
    // Bytes held: the trace back of every step so far, the last step's fronts and the new step's so far.
    std::int64_t traced = 0, last_fronts = static_cast<std::int64_t>(sizeof(Entry)), new_fronts = 0;
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
        // Per new state: its runs, one per parent state and choice.
        std::map<Key, std::vector<Run>> grown;
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
                grown[std::move(after)].push_back(
                    Run{static_cast<std::int32_t>(s), x, (x ? in_.time[u] : 0.0) + charge, x ? pi[u] : 0.0});
            }
        }
        // Each new state's front: its runs merged by load (no candidate is stored), each candidate kept when within
        // the capacity, above every kept value (the Pareto front) and, with the fractional knapsack of the classes to
        // come, able to beat the floor. (Dropped by the floor, a candidate could only have dominated later ones that
        // the floor drops too: the order of the two tests does not matter.) Against storing every candidate and
        // merge-sorting them, 1.12-1.33x a pricing on the ResNet-50 and InceptionV3 layer graphs
        // (benchmarks/bench_set_pricing.py --against 4ff5243).
        keys.clear();
        auto& steps = history.emplace_back();
        for (auto& [key, runs] : grown) {
            if (grown_fronts.size() == keys.size()) grown_fronts.emplace_back();
            std::vector<Entry>& front = grown_fronts[keys.size()];
            front.clear();
            back.clear();
            heads.clear();
            for (const Run& run : runs) {
                const auto& parent = fronts[static_cast<std::size_t>(run.parent_state)];
                heads.push_back(Head{parent.data(), parent.data(), parent.data() + parent.size(),
                                     parent.front().load + run.load, &run});
            }
            ShrinkingRoom to_come(rest);
            double best = -std::numeric_limits<double>::infinity();
            for (;;) {
                Head* pick = &heads.front();
                for (Head& head : heads)
                    if (head.load < pick->load) pick = &head;
                const double load = pick->load;
                if (!(load <= capacity)) break;  // (every run ascends in load: nothing more fits)
                const Run& run = *pick->run;
                const Entry* parent = pick->at++;
                pick->load = pick->at < pick->end ? pick->at->load + run.load : kNone;
                const double value = parent->value + run.value;
                if (!(value > best + kValueSlack) || !(value + to_come.at(capacity - load) > bar + kValueSlack)) continue;
                best = value;
                front.push_back(Entry{load, value});
                back.push_back(Back{run.parent_state, static_cast<std::int32_t>(parent - pick->begin), run.chosen});
            }
            if (front.empty()) continue;
            if (raise_floor) {
                // Nothing more in the set: each open group whose decided members are all in is split, charged.
                double open_in = 0.0;
                for (const std::int64_t g : key)
                    if ((g & 1) && (g >> 1) < groups) open_in += in_.group_cost[g >> 1];
                const auto fits = std::upper_bound(front.begin(), front.end(), below(capacity) - open_in,
                                                   [](double limit, const Entry& e) { return limit < e.load; });
                if (fits != front.begin()) bar = raised(floor, bar, std::prev(fits)->value);
            }
            keys.push_back(key);
            steps.emplace_back(back.begin(), back.end());
            traced += static_cast<std::int64_t>(back.size() * sizeof(Back));
            new_fronts += static_cast<std::int64_t>(front.size() * sizeof(Entry));
            if (traced + last_fronts + new_fronts > memory_budget) {
                result.stopped = result.over_budget = true;
                return result;
            }
        }
        last_fronts = std::exchange(new_fronts, 0);
        std::swap(fronts, grown_fronts);
        if (keys.empty()) return result;
    }
    // Every group is closed after the last class: the one state left has the empty key.
    if (keys.size() != 1 || !keys[0].empty()) return result;
    const auto& last = fronts[0];
    std::vector<std::int32_t> best(last.size());
    std::iota(best.begin(), best.end(), 0);
    std::stable_sort(best.begin(), best.end(), [&](std::int32_t a, std::int32_t b) { return last[a].value > last[b].value; });
    if (!last.empty() && last[best.front()].value > bar + kValueSlack) result.value = last[best.front()].value;
    for (const std::int32_t top : best) {
        if (static_cast<int>(result.sets.size()) >= keep || !(last[top].value > bar + kValueSlack)) break;
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
