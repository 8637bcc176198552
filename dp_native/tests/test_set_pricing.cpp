// Plain C++ tests of the device-set pricing DP (set_pricing.hpp), without Python: small cases with known
// answers, the floor, refusals and stopping. Built with -fsanitize=address,undefined by
// `make -C dp_native test`; the Python tests compare it with every subset and with the pure-Python DP.
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
}

}  // namespace

int main() {
    test_best_sets();
    test_apart();
    test_refusals();
    test_stops();
    return testing::report("set pricing");
}
