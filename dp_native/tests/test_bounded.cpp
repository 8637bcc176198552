// Plain C++ tests of the bounded search (bounded.hpp) against the DP (dp.hpp) on random small
// instances: pure SALBP-2 (identical accelerators, no CPU, no memory limit, no communication), then
// communication, memory caps, CPUs, unsupported units, overlap and accelerator types. Each split
// it returns is re-scored here from scratch. Built with sanitizers by `make -C dp_native test`.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <limits>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "bounded.hpp"
#include "dp.hpp"
#include "stop.hpp"
#include "tests/expect.hpp"

using namespace exactplace;
using testing::expect;

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

struct Case {
    Instance in;
    Options options;
};

// A random DAG on n units (edges forward in a random order), with one group per unit and target set.
Case random_case(std::mt19937& rng, int n, bool comm, bool memory, bool cpus, bool types, bool overlap) {
    std::uniform_real_distribution<double> time(0.0, 10.0);
    std::uniform_int_distribution<int> coin(0, 3);
    Case c;
    Instance& in = c.in;
    in.units = n;
    std::vector<int> order(n);
    for (int i = 0; i < n; ++i) order[i] = i;
    std::shuffle(order.begin(), order.end(), rng);
    for (int u = 0; u < n; ++u) {
        in.cpu_time.push_back(std::round(time(rng) * 3));
        in.acc_time.push_back(std::round(time(rng)));
        in.memory.push_back(memory ? std::round(time(rng)) : 0.0);
        in.supported.push_back(cpus && coin(rng) == 0 ? 0 : 1);
    }
    in.group_ptr.push_back(0);
    for (int a = 0; a < n; ++a) {
        std::vector<std::int64_t> targets;
        for (int b = a + 1; b < n; ++b) {
            if (coin(rng) == 0) {
                in.edge_src.push_back(order[a]);
                in.edge_dst.push_back(order[b]);
                targets.push_back(order[b]);
            }
        }
        if (comm && !targets.empty()) {
            in.group_cost.push_back(std::round(time(rng)) / 2);
            in.group_source.push_back(order[a]);
            for (const auto t : targets) in.group_target.push_back(t);
            in.group_ptr.push_back(static_cast<std::int64_t>(in.group_target.size()));
        }
    }
    Options& o = c.options;
    o.accelerators = 1 + coin(rng);
    o.cpus = cpus ? coin(rng) % 2 + 1 : 0;
    o.memory_cap = memory ? 12.0 + 3 * coin(rng) : kInf;
    o.overlap = overlap;
    if (types && o.accelerators >= 2) {
        o.type_count = {1, o.accelerators - 1};
        o.type_memory = {o.memory_cap, memory ? 8.0 + coin(rng) : kInf};
        o.type_speed = {1.0, 0.5 + coin(rng) * 0.5};
    }
    o.max_ideals = 1 << 20;
    return c;
}

// The max-load of `device` scored from scratch (dp.hpp's stage loads); inf if a stage does not fit.
double score(const Case& c, const std::vector<int>& device) {
    const Instance& in = c.in;
    const Options& o = c.options;
    const int k = o.accelerators;
    for (const int d : device) {
        if (d < 0 || d >= k + o.cpus) return std::nan("");
    }
    double worst = 0.0;
    for (int d = 0; d < k + o.cpus; ++d) {
        double cpu = 0, acc = 0, mem = 0, comm = 0;
        bool unsupported = false;
        for (int u = 0; u < in.units; ++u) {
            if (device[u] != d) continue;
            cpu += in.cpu_time[u];
            acc += in.acc_time[u];
            mem += in.memory[u];
            unsupported = unsupported || !in.supported[u];
        }
        for (std::size_t g = 0; g < in.group_cost.size(); ++g) {
            const bool source = device[in.group_source[g]] == d;
            bool other = false;
            for (std::int64_t t = in.group_ptr[g]; t < in.group_ptr[g + 1]; ++t) {
                other = other || (device[in.group_target[t]] == d) != source;
            }
            if (other) comm += in.group_cost[g];
        }
        if (d >= k) {
            worst = std::max(worst, cpu);
            continue;
        }
        double cap = o.memory_cap, speed = 1.0;
        if (!o.type_count.empty()) {
            const int type = d < o.type_count[0] ? 0 : 1;
            cap = o.type_memory[type];
            speed = o.type_speed[type];
        }
        if (acc == 0 && mem == 0 && !unsupported && comm == 0) continue;
        if (unsupported || mem > cap) return kInf;
        const double compute = acc / speed;
        worst = std::max(worst, o.overlap ? std::max(compute, comm) : compute + comm);
    }
    return worst;
}

bool close(double a, double b) { return std::fabs(a - b) <= 1e-9 * std::max(1.0, std::fabs(b)); }

int compare(std::mt19937& rng, int cases, int n_max, bool comm, bool memory, bool cpus, bool types, bool overlap,
            const char* what) {
    int mismatches = 0;
    for (int i = 0; i < cases; ++i) {
        const int n = 1 + static_cast<int>(rng() % static_cast<unsigned>(n_max));
        const Case c = random_case(rng, n, comm, memory, cpus, types, overlap);
        Stopper stop_dp, stop_bb;
        const Solution dp = solve(c.in, c.options, stop_dp);
        const BoundedSolution bb = solve_bounded(c.in, c.options, BoundedSettings{}, stop_bb);
        bool ok;
        if (dp.outcome == Outcome::infeasible) {
            ok = bb.outcome == Outcome::infeasible && bb.device.empty();
        } else {
            ok = bb.outcome == Outcome::optimal && close(bb.value, dp.value) && bb.bound <= bb.value &&
                 close(score(c, bb.device), bb.value);
        }
        if (!ok) {
            ++mismatches;
            std::fprintf(stderr, "%s case %d (n=%d): dp %g, bounded %g (bound %g, outcome %d)\n", what, i, n, dp.value,
                         bb.value, bb.bound, static_cast<int>(bb.outcome));
        }
    }
    expect(mismatches == 0, std::string(what) + ": the bounded search equals the DP");
    return mismatches;
}

void test_known_salbp() {
    // Tasks 0..5 with times 5 3 4 6 2 4, chain 0->1->2 and 3->4->5, on 2 stations: optimum 12.
    Case c;
    c.in.units = 6;
    c.in.acc_time = {5, 3, 4, 6, 2, 4};
    c.in.cpu_time = c.in.acc_time;
    c.in.memory.assign(6, 0.0);
    c.in.supported.assign(6, 1);
    c.in.edge_src = {0, 1, 3, 4};
    c.in.edge_dst = {1, 2, 4, 5};
    c.in.group_ptr = {0};
    c.options.accelerators = 2;
    c.options.memory_cap = kInf;
    Stopper stop;
    const BoundedSolution bb = solve_bounded(c.in, c.options, BoundedSettings{}, stop);
    expect(bb.outcome == Outcome::optimal && bb.value == 12.0 && bb.bound == 12.0, "SALBP-2 example: optimum 12");
    expect(score(c, bb.device) == 12.0, "SALBP-2 example: the split scores 12");
}

void test_stop() {
    std::mt19937 rng(7);
    Case c = random_case(rng, 40, false, false, false, false, false);
    c.options.accelerators = 6;
    Stopper stop(0.0);
    const BoundedSolution bb = solve_bounded(c.in, c.options, BoundedSettings{}, stop);
    expect(bb.outcome == Outcome::stopped && bb.stop_reason == StopReason::time, "a spent deadline stops the search");
    expect(bb.bound <= bb.value, "a stopped search's bound is at most its value");
}

void test_rejects() {
    Case c;
    c.in.units = 1;
    c.in.acc_time = {1};
    c.in.cpu_time = {1};
    c.in.memory = {0};
    c.in.supported = {1};
    c.in.group_ptr = {0};
    c.options.replication = true;
    Stopper stop;
    bool threw = false;
    try {
        solve_bounded(c.in, c.options, BoundedSettings{}, stop);
    } catch (const std::invalid_argument&) {
        threw = true;
    }
    expect(threw, "replication is rejected");
}

}  // namespace

int main() {
    std::mt19937 rng(12345);
    test_known_salbp();
    test_stop();
    test_rejects();
    compare(rng, 300, 9, false, false, false, false, false, "SALBP-2");
    compare(rng, 200, 8, true, false, false, false, false, "communication");
    compare(rng, 200, 8, true, false, false, false, true, "overlap");
    compare(rng, 200, 8, false, true, false, false, false, "memory");
    compare(rng, 200, 8, true, true, true, false, false, "CPUs");
    compare(rng, 200, 8, true, true, true, true, false, "accelerator types");
    compare(rng, 200, 8, false, true, true, true, false, "types without communication");
    return testing::report("bounded");
}
