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
#include "tests/expect.hpp"

using namespace exactplace;
using testing::expect;

namespace {

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

// Accelerator types (heterogeneous clusters): a hand-checked case, the numbering of the result and
// input checks.
void test_types_small_cases() {
    const double inf = std::numeric_limits<double>::infinity();
    // Two units of 4 s accelerator time, no communication; one fast (speed 4) and one slow accelerator.
    Instance in = chain_instance({100.0, 100.0}, {4.0, 4.0}, 0.0);
    Options o = options(2, 0, inf);
    o.type_count = {1, 1};
    o.type_memory = {inf, inf};
    o.type_speed = {1.0, 4.0};
    Stopper stop;
    Solution s = solve(in, o, stop);
    expect(s.status() == Status::optimal && s.value == 2.0, "both units on the fast accelerator: 8 / 4");
    expect(s.device == std::vector<int>({1, 1}), "the fast accelerator is device 1 (type 1)");
    // The fast one holds one unit only: one unit on each, the slow one's 4 s decide.
    o.type_memory = {inf, 1.0};
    s = solve(in, o, stop);
    expect(s.status() == Status::optimal && s.value == 4.0, "memory of the fast type: 4");
    expect(s.device.size() == 2 && s.device[0] != s.device[1], "one unit per accelerator");
    // Neither type fits a unit and there is no CPU.
    o.type_memory = {0.5, 0.5};
    s = solve(in, o, stop);
    expect(s.status() == Status::infeasible, "nothing fits on any type: infeasible");
    // Malformed types are exceptions.
    const auto rejected = [&](Options bad, const char* what) {
        bool threw = false;
        try {
            solve(in, bad, stop);
        } catch (const std::invalid_argument&) {
            threw = true;
        }
        expect(threw, what);
    };
    Options bad = o;
    bad.type_count = {1, 2};
    rejected(bad, "type counts that do not sum to k are rejected");
    bad = o;
    bad.type_speed = {1.0, 0.0};
    rejected(bad, "a zero speed is rejected");
    bad = o;
    bad.type_memory = {1.0};
    rejected(bad, "one memory per type");
    bad = options(40, 1, inf);
    bad.type_count.assign(40, 1);
    bad.type_memory.assign(40, inf);
    bad.type_speed.assign(40, 1.0);
    rejected(bad, "2**40 device-count combinations are rejected");
    Instance ordered = in;
    ordered.order = {0, 1};
    bool threw = false;
    try {
        solve(ordered, o, stop);
    } catch (const std::invalid_argument&) {
        threw = true;
    }
    expect(threw, "the chain DP takes no accelerator types");
    expect(layer_count({2, 1}, 1) == 12, "layers (1 + 1) * (2 + 1) * (1 + 1)");
    expect(memory_estimate(10, std::vector<std::int64_t>(70, 1), 1, 5, 5) == std::numeric_limits<std::int64_t>::max(),
           "the memory estimate saturates");
    expect(memory_estimate(10, 3, 1, 5, 5) == memory_estimate(10, std::vector<std::int64_t>{3}, 1, 5, 5),
           "one type is the homogeneous estimate");
}

// Random DAGs: accelerators split into types that are all alike give the homogeneous optimum;
// speed s on every type equals accelerator times divided by s (powers of two: exact).
void test_types_match_homogeneous() {
    std::mt19937 rng(4242);
    std::uniform_int_distribution<int> value(0, 8), size(2, 8), coin(0, 3), split(0, 1);
    const double inf = std::numeric_limits<double>::infinity();
    for (int round = 0; round < 150; ++round) {
        const int n = size(rng);
        std::vector<double> cpu(n), acc(n);
        for (int u = 0; u < n; ++u) {
            cpu[u] = value(rng);
            acc[u] = value(rng) / 2.0;
        }
        Instance in = chain_instance(cpu, acc, value(rng) / 4.0);
        // Drop some chain edges (keeping their communication groups) so the lattice is not a chain.
        for (std::size_t e = in.edge_src.size(); e-- > 0;) {
            if (coin(rng) == 0) {
                in.edge_src.erase(in.edge_src.begin() + static_cast<std::ptrdiff_t>(e));
                in.edge_dst.erase(in.edge_dst.begin() + static_cast<std::ptrdiff_t>(e));
            }
        }
        for (int u = 0; u < n; ++u) {
            if (coin(rng) == 0) in.supported[u] = 0;
            in.memory[u] = value(rng) / 2.0;
        }
        const int k = 1 + coin(rng), l = coin(rng) % 3;
        const double cap = coin(rng) == 0 ? inf : 2.0 + value(rng);
        Options plain = options(k, l, cap);
        plain.overlap = split(rng) != 0;
        Options typed = plain;
        // k accelerators in 1..k types of the same memory and speed 1.
        for (int left = k; left > 0;) {
            const int take = left == 1 || split(rng) ? 1 : left;
            typed.type_count.push_back(take);
            typed.type_memory.push_back(cap);
            typed.type_speed.push_back(1.0);
            left -= take;
        }
        Stopper stop;
        const Solution a = solve(in, plain, stop);
        const Solution b = solve(in, typed, stop);
        expect(a.status() == b.status() && (a.status() != Status::optimal || a.value == b.value),
               "alike types = one type, round " + std::to_string(round) + ": " + std::to_string(a.value) + " vs " +
                   std::to_string(b.value));
        bool placed = b.status() != Status::optimal || static_cast<int>(b.device.size()) == n;
        for (int d : b.device) placed = placed && d >= 0 && d < k + l;
        expect(placed, "typed DP places every unit on an existing device");
        // Speed 2 on every type = accelerator times halved.
        Options fast = typed;
        fast.type_speed.assign(fast.type_speed.size(), 2.0);
        Instance halved = in;
        for (double& t : halved.acc_time) t /= 2.0;
        const Solution c = solve(in, fast, stop);
        const Solution d = solve(halved, plain, stop);
        expect(c.status() == d.status() && (c.status() != Status::optimal || c.value == d.value),
               "speed 2 = halved accelerator times, round " + std::to_string(round));
    }
}

}  // namespace

// Replicated stages: a stage on r accelerators has load (acc + comm + sync (r-1)/r) / r.
void test_replication_small_cases() {
    Stopper stop;
    const double inf = std::numeric_limits<double>::infinity();
    Instance one = chain_instance({12.0}, {12.0}, 0.0);
    one.sync = {3.0};
    Options o = options(4, 0, inf);
    o.replication = true;
    Solution s = solve(one, o, stop);
    expect(s.status() == Status::optimal && s.value == (12.0 + 3.0 * 3 / 4) / 4 && s.replicas.size() == 4 &&
               s.replicas[0] == 4, "one unit on four replicas");
    // Two units (acc 3 and 2, sync 1 and 2) on 4 accelerators: 2 replicas each, max(1.75, 1.5).
    Instance two = chain_instance({5.0, 1.0}, {3.0, 2.0}, 0.0);
    two.sync = {1.0, 2.0};
    s = solve(two, o, stop);
    expect(s.status() == Status::optimal && s.value == 1.75, "two units on 2 + 2 replicas: 1.75");
    // Without replication the same instance is the plain DP (3.0 on two accelerators).
    o.replication = false;
    s = solve(two, o, stop);
    expect(s.status() == Status::optimal && s.value == 3.0 && s.replicas.empty(), "replication off: the plain DP");
    // Replication refuses overlap and accelerator types.
    o.replication = true;
    o.overlap = true;
    bool threw = false;
    try {
        solve(two, o, stop);
    } catch (const std::invalid_argument&) {
        threw = true;
    }
    expect(threw, "replication with overlap is rejected");
}

// Four parallel chains of 6 units between a source and a sink (7^4 + 2 = 2,403 ideals), no
// communication: a cutoff just above the optimum skips ideals and keeps the optimum, on one thread
// and on four (which wait for covers in flight); at the optimum, nothing is below it.
void test_cutoff() {
    Instance in;
    in.units = 26;
    in.group_ptr.push_back(0);
    for (int u = 0; u < in.units; ++u) {
        in.cpu_time.push_back(8.0 * (1 + u % 3));
        in.acc_time.push_back(1 + u % 3);
        in.memory.push_back(1.0);
        in.supported.push_back(1);
    }
    for (int b = 0; b < 4; ++b) {
        int previous = 0;
        for (int j = 0; j < 6; ++j) {
            const int u = 1 + b * 6 + j;
            in.edge_src.push_back(previous);
            in.edge_dst.push_back(u);
            previous = u;
        }
        in.edge_src.push_back(previous);
        in.edge_dst.push_back(25);
    }
    const double inf = std::numeric_limits<double>::infinity();
    Stopper stop;
    const Solution plain = solve(in, options(4, 1, inf), stop);
    expect(plain.outcome == Outcome::optimal && plain.ideals == 2403 && plain.skipped == 0, "cutoff: the plain DP");
    for (const int threads : {1, 4}) {
        Options o = options(4, 1, inf);
        o.cutoff = std::nextafter(plain.value, inf);
        o.threads = threads;
        Stopper s;
        const Solution cut = solve(in, o, s);
        expect(cut.outcome == Outcome::optimal && cut.value == plain.value, "cutoff: the same optimum");
        expect(cut.skipped > 0 && cut.pairs < plain.pairs, "cutoff: ideals skipped, fewer pairs");
        o.cutoff = plain.value;
        Stopper s2;
        expect(solve(in, o, s2).outcome == Outcome::infeasible, "cutoff at the optimum: nothing below it");
    }
}

int main() {
    test_ideal_counts();
    test_cutoff();
    test_dp_small_cases();
    test_chain_matches_general_dp();
    test_stop_before_start();
    test_types_small_cases();
    test_types_match_homogeneous();
    test_replication_small_cases();
    return testing::report("native");
}
