// Plain C++ tests of the device-set pricing DP (set_pricing.hpp), without Python: small cases with known
// answers, the floor, refusals and stopping. Built with -fsanitize=address,undefined by
// `make -C dp_native test`; the Python tests compare it with every subset and with the pure-Python DP.
#include <cmath>
#include <cstdint>
#include <stdexcept>
#include <vector>

#include "set_pricing.hpp"
#include "stop.hpp"
#include "tests/expect.hpp"

using namespace exactplace;
using testing::expect;

namespace {

// Three classes in a chain 0 - 1 - 2, each of time 1; copying 0's output costs 0.5, 1's costs 2.
SetPricingInstance chain() {
    SetPricingInstance in;
    in.time = {1.0, 1.0, 1.0};
    in.allowed = {1, 1, 1};
    in.group_cost = {0.5, 2.0};
    in.group_ptr = {0, 2, 4};
    in.group_member = {0, 1, 1, 2};
    in.order = {0, 1, 2};
    return in;
}

void test_best_sets() {
    const SetPricer pricer(chain());
    Stopper stop;
    // Values 1, 1, 1 within 2.5: {0, 1} loads 2 + 2 (group 1 split) = 4; {1, 2} loads 2 + 0.5 = 2.5: value 2.
    SetPricingResult r = pricer.price({1.0, 1.0, 1.0}, 2.5, 0.0, 10, stop);
    expect(!r.stopped && r.value == 2.0, "best value 2 within 2.5");
    expect(!r.sets.empty() && r.sets[0] == std::vector<std::uint8_t>{0, 1, 1}, "the best set is {1, 2}");
    for (std::size_t s = 1; s < r.sets.size(); ++s) expect(r.sets[s] != r.sets[0], "sets are distinct");
    // Everything within 3 (no group split): value 3, one set holding all.
    r = pricer.price({1.0, 1.0, 1.0}, 3.0, 0.0, 1, stop);
    expect(r.value == 3.0 && r.sets.size() == 1 && r.sets[0] == std::vector<std::uint8_t>{1, 1, 1}, "all within 3");
    // Nothing above the floor: the floor back, no sets.
    r = pricer.price({1.0, 1.0, 1.0}, 2.5, 2.0, 10, stop);
    expect(r.value == 2.0 && r.sets.empty(), "nothing above the floor");
    // A class that is not allowed is never chosen, whatever its value.
    SetPricingInstance in = chain();
    in.allowed = {1, 0, 1};
    r = SetPricer(in).price({1.0, 5.0, 1.0}, 10.0, 0.0, 10, stop);
    expect(r.value == 2.0 && !r.sets.empty() && r.sets[0][1] == 0, "a class not allowed stays out");
}

void test_apart() {
    Stopper stop;
    // Within 3 everything fits together (value 3); kept apart, 0 and 2 cannot both be in: {0, 1} (load 1 + 1
    // + group 1 split: 4) is over, so the best is {1, 2} (load 2.5, value 2).
    SetPricingInstance in = chain();
    in.apart = {2, 0};
    SetPricingResult r = SetPricer(in).price({1.0, 1.0, 1.0}, 3.0, 0.0, 10, stop);
    expect(r.value == 2.0 && !r.sets.empty() && r.sets[0] == std::vector<std::uint8_t>{0, 1, 1}, "0 and 2 apart");
    for (const auto& set : r.sets) expect(!(set[0] && set[2]), "no set holds a pair kept apart");
    // 1 kept apart from 2 as well: {1, 2} is out, {0, 1} over the capacity; {0} or {2} alone, value 1.
    in.apart = {0, 2, 1, 2};
    r = SetPricer(in).price({1.0, 1.0, 1.0}, 3.0, 0.0, 10, stop);
    expect(r.value == 1.0, "0 and 1 each apart from 2, {0, 1} over the capacity");
    // The same pair in the processing order's reverse: the pair's first member is the later class.
    in = chain();
    in.order = {2, 1, 0};
    in.apart = {0, 2};
    r = SetPricer(in).price({1.0, 1.0, 1.0}, 3.0, 0.0, 10, stop);
    expect(r.value == 2.0 && !r.sets.empty() && r.sets[0] == std::vector<std::uint8_t>{0, 1, 1}, "reversed order");
}

// A set's load as the pricing defines it: its classes' time plus each group with members on both sides, once.
double load_of(const SetPricingInstance& in, const std::vector<std::uint8_t>& set) {
    double load = 0.0;
    for (std::size_t u = 0; u < set.size(); ++u)
        if (set[u]) load += in.time[u];
    for (std::size_t g = 0; g + 1 < in.group_ptr.size(); ++g) {
        bool some_in = false, some_out = false;
        for (std::int64_t e = in.group_ptr[g]; e < in.group_ptr[g + 1]; ++e)
            (set[in.group_member[e]] ? some_in : some_out) = true;
        if (some_in && some_out) load += in.group_cost[g];
    }
    return load;
}

// Eight classes, each group a class and its next two (a branchy DAG's fan-out), times and costs varied.
SetPricingInstance fan_out() {
    SetPricingInstance in;
    in.time = {1.0, 2.0, 0.5, 1.5, 3.0, 1.0, 2.5, 0.5};
    in.allowed = {1, 1, 1, 1, 1, 1, 0, 1};
    in.group_ptr = {0};
    for (std::int64_t u = 0; u + 2 < 8; ++u) {
        in.group_member.insert(in.group_member.end(), {u, u + 1, u + 2});
        in.group_ptr.push_back(static_cast<std::int64_t>(in.group_member.size()));
        in.group_cost.push_back(0.25 * static_cast<double>(u % 3 + 1));
    }
    in.order = {0, 1, 2, 3, 4, 5, 6, 7};
    in.apart = {1, 4};
    return in;
}

void test_raised_floor() {
    // The floor raised by the greedy set and the partial sets met changes nothing but the sets returned: the same
    // maximum, its set first, at many duals (some negative) and capacities.
    const SetPricingInstance in = fan_out();
    const SetPricer pricer(in);
    Stopper stop;
    std::uint64_t seed = 12345;
    const auto uniform = [&seed]() {  // a small LCG: the test needs no <random> distribution's platform variance
        seed = seed * 6364136223846793005ULL + 1442695040888963407ULL;
        return static_cast<double>(seed >> 11) / 9007199254740992.0;
    };
    for (int trial = 0; trial < 200; ++trial) {
        std::vector<double> duals(8);
        for (double& d : duals) d = 2.0 * uniform() - 0.3;
        const double capacity = 1.0 + 8.0 * uniform(), floor = trial % 3 == 0 ? 1.0 : 0.0;
        const SetPricingResult plain = pricer.price(duals, capacity, floor, 5, stop, false);
        const SetPricingResult raised = pricer.price(duals, capacity, floor, 5, stop, true);
        expect(std::abs(plain.value - raised.value) <= 1e-12, "the same maximum with the floor raised");
        expect(plain.sets.empty() == raised.sets.empty(), "a best set with the floor raised too");
        for (const auto& set : raised.sets) {
            expect(load_of(in, set) <= capacity + 1e-12 && !set[6] && !(set[1] && set[4]), "raised: a legal set");
        }
        if (!raised.sets.empty()) {
            double value = 0.0;
            for (std::size_t u = 0; u < 8; ++u) value += raised.sets[0][u] ? duals[u] : 0.0;
            expect(std::abs(value - raised.value) <= 1e-12, "raised: the first set has the maximum's value");
        }
    }
}

void test_cover() {
    // Disjoint sets, each within the capacity, of allowed classes, no pair kept apart together, none empty.
    const SetPricingInstance in = fan_out();
    const SetPricer pricer(in);
    const std::vector<double> duals{1.0, 0.5, 2.0, 1.0, 1.5, 0.25, 3.0, -1.0};
    for (const double capacity : {2.5, 4.0, 20.0}) {
        const auto sets = pricer.cover(duals, capacity, 3);
        expect(!sets.empty() && sets.size() <= 3, "cover: one to three sets");
        std::vector<int> taken(8, 0);
        for (const auto& set : sets) {
            expect(load_of(in, set) <= capacity && !set[6] && !(set[1] && set[4]) && !set[7], "cover: a legal set");
            bool any = false;
            for (std::size_t u = 0; u < 8; ++u) taken[u] += set[u], any = any || set[u];
            expect(any, "cover: no empty set");
        }
        for (const int t : taken) expect(t <= 1, "cover: disjoint sets");
    }
    // Within a capacity of 20 every allowed class of positive value fits in the first set but 1, kept apart from 4
    // (taken before it: a better value per time); 1 makes the second.
    const auto all = pricer.cover(duals, 20.0, 3);
    expect(all.size() == 2 && all[0] == std::vector<std::uint8_t>{1, 0, 1, 1, 1, 1, 0, 0} &&
               all[1] == std::vector<std::uint8_t>{0, 1, 0, 0, 0, 0, 0, 0},
           "cover: within a large capacity, all but the pair kept apart, then the rest");
}

void test_refusals() {
    auto refused = [](SetPricingInstance in) {
        try {
            SetPricer pricer(std::move(in));
        } catch (const std::invalid_argument&) {
            return true;
        }
        return false;
    };
    SetPricingInstance bad = chain();
    bad.order = {0, 0, 2};
    expect(refused(bad), "order not a permutation");
    bad = chain();
    bad.group_ptr = {0, 2, 5};
    expect(refused(bad), "group_ptr past the members");
    bad = chain();
    bad.group_member[3] = 7;
    expect(refused(bad), "member out of range");
    bad = chain();
    bad.time[1] = -1.0;
    expect(refused(bad), "negative time");
    bad = chain();
    bad.apart = {0, 0};
    expect(refused(bad), "a pair of one class");
    bad.apart = {0, 1, 2};
    expect(refused(bad), "apart of odd length");
    const SetPricer pricer(chain());
    Stopper stop;
    bool threw = false;
    try {
        pricer.price({1.0, 1.0}, 2.0, 0.0, 1, stop);
    } catch (const std::invalid_argument&) {
        threw = true;
    }
    expect(threw, "duals of the wrong size");
}

void test_stops() {
    const SetPricer pricer(chain());
    Stopper stop;
    stop.request(StopReason::interrupt);
    expect(pricer.price({1.0, 1.0, 1.0}, 2.5, 0.0, 1, stop).stopped, "a stopped pricing says so");
    Stopper go;
    const SetPricingResult tight = pricer.price({1.0, 1.0, 1.0}, 2.5, 0.0, 1, go, true, 16);
    expect(tight.stopped && tight.over_budget, "a pricing past its memory budget stops and says why");
    const SetPricingResult roomy = pricer.price({1.0, 1.0, 1.0}, 2.5, 0.0, 1, go, true, 1 << 20);
    const SetPricingResult free = pricer.price({1.0, 1.0, 1.0}, 2.5, 0.0, 1, go);
    expect(!roomy.stopped && !roomy.over_budget && roomy.value == free.value, "within its budget: the same maximum");
}

}  // namespace

int main() {
    test_best_sets();
    test_apart();
    test_raised_floor();
    test_cover();
    test_refusals();
    test_stops();
    return testing::report("set pricing");
}
