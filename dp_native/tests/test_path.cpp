// Plain C++ tests of the latency path bound (path.hpp), without Python: small cases with known
// values, the chain it returns, refusals and stopping. Built with -fsanitize=address,undefined
// by `make -C dp_native test`; the Python tests compare it with the pure-Python DP at large.
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <stdexcept>
#include <string>
#include <vector>

#include "path.hpp"
#include "stop.hpp"
#include "tests/expect.hpp"

using namespace exactplace;
using testing::expect;

namespace {

// n units in a chain, each 10 on a CPU, `acc` on an accelerator, memory 1, copying its output
// for `comm`; one path through all of them.
PathInstance chain(int n, double acc, double comm, double cap, int accelerators) {
    PathInstance in;
    in.units = n;
    in.cpu_time.assign(n, 10.0);
    in.acc_time.assign(n, acc);
    in.memory.assign(n, 1.0);
    in.memory_cap = cap;
    in.accelerators = accelerators;
    in.cpus = true;
    in.group_ptr.push_back(0);
    for (int u = 0; u + 1 < n; ++u) {
        in.edge_src.push_back(u);
        in.edge_dst.push_back(u + 1);
        in.group_cost.push_back(comm);
        in.group_source.push_back(u);
        in.group_target.push_back(u + 1);
        in.group_ptr.push_back(static_cast<std::int64_t>(in.group_target.size()));
        in.group_stuck.push_back(0);
        in.group_sink_memory.push_back(-1.0);
    }
    in.path_ptr = {0, n};
    for (int u = 0; u < n; ++u) in.path_node.push_back(u);
    return in;
}

void test_chain_values() {
    Stopper stop;
    // Three layers, two accelerators of memory 2: compute 3, one copy out and in (0.5 each).
    PathResult r = path_bound(chain(3, 1.0, 0.5, 2.0, 2), PathOptions{}, stop);
    expect(r.status == PathStatus::done && r.values.size() == 1 && r.values[0] == 4.0 && r.has_chain[0],
           "three layers: 4");
    expect(r.ideals == 4, "a chain of 3 has 4 ideals");
    // The chain: two subgraphs on accelerators, every unit in one of them, in order.
    const auto& step = r.step_of_unit[0];
    const auto& kind = r.step_on_accelerator[0];
    expect(kind.size() == 2 && kind[0] == 1 && kind[1] == 1, "two accelerator steps");
    expect(step.size() == 3 && step[0] <= step[1] && step[1] <= step[2] && step[0] == 0 && step[2] == 1,
           "the steps cover the chain in order");
    // One accelerator of memory 2: the third layer on the CPU (10) after copying out (0.5): 12.5.
    r = path_bound(chain(3, 1.0, 0.5, 2.0, 1), PathOptions{}, stop);
    expect(r.status == PathStatus::done && r.values[0] == 12.5, "one accelerator: 2 + 0.5 + 10");
    // Nothing fits and no CPU: no chain.
    PathInstance none = chain(2, 1.0, 0.5, 0.5, 1);
    none.cpus = false;
    r = path_bound(none, PathOptions{}, stop);
    expect(r.status == PathStatus::done && std::isinf(r.values[0]) && !r.has_chain[0], "no chain: inf");
    // Without CPUs every step is a subgraph: three unrelated units, one accelerator, room for all.
    PathInstance spread = chain(1, 1.0, 0.5, 10.0, 1);
    spread.units = 3;
    spread.cpu_time.assign(3, 0.0);
    spread.acc_time.assign(3, 1.0);
    spread.memory.assign(3, 1.0);
    spread.cpus = false;
    r = path_bound(spread, PathOptions{}, stop);
    expect(r.status == PathStatus::done && r.values[0] == 3.0 && r.step_on_accelerator[0].size() == 1 &&
               r.step_on_accelerator[0][0] == 1,
           "no CPU: the three units in one subgraph (compute 3)");
    // No units: the empty chain.
    PathInstance empty;
    empty.group_ptr = {0};
    empty.path_ptr = {0, 0};
    empty.accelerators = 1;
    r = path_bound(empty, PathOptions{}, stop);
    expect(r.status == PathStatus::done && r.values[0] == 0.0 && r.ideals == 1 && r.has_chain[0], "no units: 0");
}

void test_trivial_sink_absorbed_within_memory() {
    // a -> b, and a's output also goes to a sink absorbed within memory (group of a: sink memory 1).
    PathInstance in = chain(2, 1.0, 2.0, 3.0, 1);
    in.group_sink_memory[0] = 1.0;
    Stopper stop;
    PathResult r = path_bound(in, PathOptions{}, stop);
    expect(r.status == PathStatus::done && r.values[0] == 2.0, "room for the sink: nothing copied out");
    in.memory_cap = 2.0;
    r = path_bound(in, PathOptions{}, stop);
    expect(r.status == PathStatus::done && r.values[0] == 4.0, "no room: the copy to the sink is charged");
}

void test_refusals() {
    Stopper stop;
    PathInstance wide = chain(1, 1.0, 0.0, 100.0, 2);
    wide.units = 12;  // twelve unrelated units: 4096 ideals
    wide.cpu_time.assign(12, 1.0);
    wide.acc_time.assign(12, 1.0);
    wide.memory.assign(12, 1.0);
    PathOptions few;
    few.max_ideals = 100;
    expect(path_bound(wide, few, stop).status == PathStatus::too_many_ideals, "more ideals than allowed");
    PathOptions small;
    small.memory_budget = 1000;
    const PathResult r = path_bound(wide, small, stop);
    expect(r.status == PathStatus::over_budget && r.bytes > 1000, "tables beyond the memory budget");
    Stopper expired(0.0);
    expect(path_bound(wide, PathOptions{}, expired).status == PathStatus::time, "an expired deadline stops it");
    bool threw = false;
    PathInstance bad = chain(2, 1.0, 0.5, 2.0, 1);
    bad.memory[1] = std::nan("");
    try {
        path_bound(bad, PathOptions{}, stop);
    } catch (const std::invalid_argument&) {
        threw = true;
    }
    expect(threw, "a NaN memory is rejected");
}

}  // namespace

int main() {
    test_chain_values();
    test_trivial_sink_absorbed_within_memory();
    test_refusals();
    return testing::report("path bound");
}
