// Plain C++ tests of the native core (no Python): ideal counts, the general DP, the chain DP and
// their agreement, input checks and stopping. Built with -fsanitize=address,undefined by
// `make -C dp_native test`, so memory errors and undefined behaviour fail the run.
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "chain.hpp"
#include "dp.hpp"
#include "ideals.hpp"
#include "stop.hpp"

using namespace exactplace;

namespace {

int failures = 0;

void expect(bool ok, const std::string& what) {
    if (!ok) {
        std::fprintf(stderr, "FAILED: %s\n", what.c_str());
        ++failures;
    }
}

std::int64_t ideals_of(int n, const std::vector<std::int64_t>& src, const std::vector<std::int64_t>& dst) {
    const Poset poset(n, src, dst);
    Stopper stop;
    return count_ideals(poset, 1 << 20, stop).ideals;
}

// n units in a chain 0 -> 1 -> ... with one communication group per edge.
Instance chain_instance(const std::vector<double>& cpu, const std::vector<double>& acc, double comm) {
    Instance in;
    in.units = static_cast<int>(cpu.size());
    in.cpu_time = cpu;
    in.acc_time = acc;
    in.memory.assign(cpu.size(), 1.0);
    in.supported.assign(cpu.size(), 1);
    in.group_ptr.push_back(0);
    for (int u = 0; u + 1 < in.units; ++u) {
        in.edge_src.push_back(u);
        in.edge_dst.push_back(u + 1);
        in.group_cost.push_back(comm);
        in.group_source.push_back(u);
        in.group_target.push_back(u + 1);
        in.group_ptr.push_back(static_cast<std::int64_t>(in.group_target.size()));
    }
    return in;
}

Options options(int k, int l, double cap) {
    Options o;
    o.accelerators = k;
    o.cpus = l;
    o.memory_cap = cap;
    o.max_ideals = 1 << 20;
    return o;
}

void test_ideal_counts() {
    expect(ideals_of(3, {}, {}) == 8, "an antichain of 3 has 8 ideals");
    expect(ideals_of(3, {0, 1}, {1, 2}) == 4, "a chain of 3 has 4 ideals");
    expect(ideals_of(4, {0, 0, 1, 2}, {1, 2, 3, 3}) == 6, "a diamond has 6 ideals");
    expect(ideals_of(4, {0, 1, 0}, {1, 2, 2}) == 8, "a chain of 3 beside a free unit has 4 * 2 ideals");
    bool threw = false;
    try {
        ideals_of(2, {0, 1}, {1, 0});
    } catch (const std::invalid_argument&) {
        threw = true;
    }
    expect(threw, "a cycle is rejected");
}

void test_dp_small_cases() {
    Stopper stop;
    // Two units, 1 s on a CPU and 1 s on an accelerator each, 0.5 to communicate: one each is 1.5.
    Instance in = chain_instance({1.0, 1.0}, {1.0, 1.0}, 0.5);
    Solution s = solve(in, options(1, 1, std::numeric_limits<double>::infinity()), stop);
    expect(s.status() == Status::optimal && s.value == 1.5, "two units on one accelerator and one CPU: 1.5");
    // Both on one accelerator: 2.0 with no communication; with two accelerators 1.5.
    s = solve(in, options(2, 0, std::numeric_limits<double>::infinity()), stop);
    expect(s.status() == Status::optimal && s.value == 1.5, "two accelerators: 1.5");
    // Memory 1 per unit, cap 0.5: nothing fits on an accelerator and there is no CPU.
    s = solve(in, options(1, 0, 0.5), stop);
    expect(s.status() == Status::infeasible && s.device.empty(), "nothing fits: infeasible");
    // Malformed input is an exception, never a crash.
    Instance bad = in;
    bad.cpu_time[1] = std::nan("");
    bool threw = false;
    try {
        solve(bad, options(1, 1, 1.0), stop);
    } catch (const std::invalid_argument&) {
        threw = true;
    }
    expect(threw, "a NaN time is rejected");
}

// The chain DP against the general DP on the linearized graph, on random chains with skip edges.
void test_chain_matches_general_dp() {
    std::mt19937 rng(12345);
    std::uniform_int_distribution<int> value(0, 6), size(2, 9), devices(0, 2), coin(0, 3);
    for (int round = 0; round < 200; ++round) {
        const int n = size(rng);
        std::vector<double> cpu(n), acc(n);
        for (int u = 0; u < n; ++u) {
            cpu[u] = value(rng);
            acc[u] = value(rng) / 2.0;
        }
        Instance in = chain_instance(cpu, acc, value(rng) / 3.0);
        for (int u = 0; u < n; ++u) {
            if (coin(rng) == 0) in.supported[u] = 0;
        }
        // A few extra groups with several targets, some before their source (backward communication).
        for (int g = 0; g < 2 && n > 2; ++g) {
            const int source = rng() % n;
            std::vector<std::int64_t> targets;
            for (int t = 0; t < n; ++t) {
                if (t != source && coin(rng) == 0) targets.push_back(t);
            }
            if (targets.empty()) continue;
            in.group_cost.push_back(value(rng) / 2.0);
            in.group_source.push_back(source);
            in.group_target.insert(in.group_target.end(), targets.begin(), targets.end());
            in.group_ptr.push_back(static_cast<std::int64_t>(in.group_target.size()));
        }
        int k = devices(rng), l = devices(rng);
        if (k + l == 0) l = 1;
        const Options o = options(k, l, coin(rng) == 0 ? 2.5 : std::numeric_limits<double>::infinity());
        for (int overlap = 0; overlap < 2; ++overlap) {
            Options oo = o;
            oo.overlap = overlap != 0;
            Stopper stop;
            const Solution general = solve(in, oo, stop);
            Instance ordered = in;
            for (int u = 0; u < n; ++u) ordered.order.push_back(u);
            const Solution chain = solve(ordered, oo, stop);
            const bool same = chain.status() == general.status() &&
                              (general.status() != Status::optimal ||
                               std::fabs(chain.value - general.value) <= 1e-9 * (1 + std::fabs(general.value)));
            expect(same, "chain DP = general DP, round " + std::to_string(round) + ": " +
                             std::to_string(chain.value) + " vs " + std::to_string(general.value));
            if (chain.status() == Status::optimal) {
                bool placed = static_cast<int>(chain.device.size()) == n;
                for (int d : chain.device) placed = placed && d >= 0 && d < k + l;
                expect(placed, "the chain DP places every unit on an existing device");
            }
        }
    }
}

void test_stop_before_start() {
    Instance in = chain_instance(std::vector<double>(50, 1.0), std::vector<double>(50, 1.0), 0.1);
    for (int u = 0; u < 50; ++u) in.order.push_back(u);
    Stopper stop(0.0);  // the deadline has passed
    const Solution s = solve(in, options(2, 1, std::numeric_limits<double>::infinity()), stop);
    expect(s.status() == Status::time, "an expired deadline stops the chain DP with status time");
}

}  // namespace

int main() {
    test_ideal_counts();
    test_dp_small_cases();
    test_chain_matches_general_dp();
    test_stop_before_start();
    if (failures != 0) {
        std::fprintf(stderr, "%d native test(s) failed\n", failures);
        return EXIT_FAILURE;
    }
    std::puts("native tests passed");
    return EXIT_SUCCESS;
}
