// Internal to the native core (no Python): what the max-load DP (dp.cpp), the DP with
// replicated stages (replicated.cpp) and the bounded search (bounded.cpp) share: the instance
// relabelled by the poset's topological labels (Model), the sums of a set of units (Sums, SetCost),
// the walks' stack (FixedStack), and the replicated DP's entry.
//
// The two DPs are separate translation units so that neither one's code generation depends on
// the other's: while they shared dp.cpp, GCC inlined SetCost differently and the plain DP's walk
// executed measurably more instructions, its own code unchanged. For the same
// reason the shared pieces have internal linkage (an unnamed namespace, one copy per translation
// unit) as they had inside dp.cpp: as inline functions with external linkage GCC stops inlining
// SetCost::add into the typed walk (Worker<true>). Keep this header to these pieces.
#pragma once

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <limits>
#include <utility>
#include <vector>

#include "csr.hpp"
#include "dp.hpp"
#include "ideals.hpp"
#include "stop.hpp"

namespace exactplace {

// Runs the DP with replicated stages (Options::replication) on the lattice solve() built and
// follows its choices back into `out` (which carries solve()'s counts and timings so far). `least`:
// by ideal id, the sum of its units' least times; `cpu_capacity`: the least time a CPU holds below
// a load L, in units of L (dp.cpp: least_times, device_capacity), for the cutoff's skipping.
Solution solve_replicated(const Instance& instance, const Poset& poset, const Lattice& lattice, const Options& options,
                          const std::vector<double>& least, double cpu_capacity, Stopper& stop, Solution out);

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

inline double seconds_since(Stopper::Clock::time_point start) {
    return std::chrono::duration<double>(Stopper::Clock::now() - start).count();
}

// Instance data relabelled by the poset's topological labels, in the shape the walk needs.
struct Model {
    int n = 0;
    std::vector<double> cpu, acc, mem;      // acc is 0 for unsupported units (they count in `unsupported`)
    std::vector<std::uint8_t> unsupported;
    std::vector<double> group_cost;
    std::vector<int> group_degree;
    std::vector<int> out_ptr, out_group;    // groups whose source is the unit
    std::vector<int> in_ptr, in_group;      // groups that have the unit as a target

    Model(const Instance& in, const Poset& poset) : n(in.units) {
        cpu.resize(n);
        acc.resize(n);
        mem.resize(n);
        unsupported.resize(n);
        for (int label = 0; label < n; ++label) {
            const int u = poset.node_of(label);
            cpu[label] = in.cpu_time[u];
            unsupported[label] = in.supported[u] ? 0 : 1;
            acc[label] = in.supported[u] ? in.acc_time[u] : 0.0;
            mem[label] = in.memory[u];
        }
        const std::size_t groups = in.group_cost.size();
        group_cost = in.group_cost;
        group_degree.resize(groups);
        std::vector<std::pair<int, int>> outs, ins;
        for (std::size_t g = 0; g < groups; ++g) {
            group_degree[g] = static_cast<int>(in.group_ptr[g + 1] - in.group_ptr[g]);
            outs.emplace_back(poset.label_of(static_cast<int>(in.group_source[g])), static_cast<int>(g));
            for (std::int64_t t = in.group_ptr[g]; t < in.group_ptr[g + 1]; ++t) {
                ins.emplace_back(poset.label_of(static_cast<int>(in.group_target[t])), static_cast<int>(g));
            }
        }
        pairs_to_csr(outs, n, out_ptr, out_group);
        pairs_to_csr(ins, n, in_ptr, in_group);
    }

};

// What a device holding a set of units computes, stores and communicates.
struct Sums {
    double cpu = 0.0, acc = 0.0, mem = 0.0, comm = 0.0;
    int unsupported = 0;

    // On an accelerator of the given speed (compute is divided by it, communication is not).
    double accelerator_load(bool overlap, double speed = 1.0) const {
        const double compute = acc / speed;
        return overlap ? std::max(compute, comm) : compute + comm;
    }
};

// The Sums of a set S of units, updated in O(degree) per unit. Communication is per group, from
// how many of its targets are in S and whether its source is.
//
// Undoing a step restores the sums saved before it instead of subtracting: subtraction can
// cancel (3.5 + 1e-38 - 3.5 == 0), and a set holding memory would then seem to fit in none.
class SetCost {
public:
    explicit SetCost(const Model& model)
        : m_(model), source_in_(model.group_cost.size(), 0), targets_in_(model.group_cost.size(), 0),
          stamp_(model.group_cost.size(), 0) {}

    // v joins S.
    void add(int v) {
        sums.cpu += m_.cpu[v];
        sums.acc += m_.acc[v];
        sums.mem += m_.mem[v];
        sums.unsupported += m_.unsupported[v];
        sums.comm += move(v, true);
    }
    // v leaves S. Only the bottom-up walk, whose S shrinks, subtracts (see walk_up).
    void remove(int v) {
        sums.cpu -= m_.cpu[v];
        sums.acc -= m_.acc[v];
        sums.mem -= m_.mem[v];
        sums.unsupported -= m_.unsupported[v];
        sums.comm += move(v, false);
    }
    // Reverse add(v) / remove(v), the sums going back to what they were before it.
    void undo_add(int v, const Sums& before) {
        move(v, false);
        sums = before;
    }
    void undo_remove(int v, const Sums& before) {
        move(v, true);
        sums = before;
    }

    // Sums of S computed afresh (S must be the set `members`), in O(degree of S).
    void recompute(const std::uint64_t* members, int words) {
        sums = Sums{};
        ++epoch_;
        for (int w = 0; w < words; ++w) {
            for (std::uint64_t word = members[w]; word != 0; word &= word - 1) {
                const int v = (w << 6) + __builtin_ctzll(word);
                sums.cpu += m_.cpu[v];
                sums.acc += m_.acc[v];
                sums.mem += m_.mem[v];
                sums.unsupported += m_.unsupported[v];
                for (int i = m_.out_ptr[v]; i < m_.out_ptr[v + 1]; ++i) count_once(m_.out_group[i]);
                for (int i = m_.in_ptr[v]; i < m_.in_ptr[v + 1]; ++i) count_once(m_.in_group[i]);
            }
        }
    }

    Sums sums;

private:
    bool crossing(int g) const { return source_in_[g] ? targets_in_[g] < m_.group_degree[g] : targets_in_[g] > 0; }

    // Updates the group counters for v joining or leaving S; returns the change in communication.
    __attribute__((always_inline)) double move(int v, bool joining) {
        double delta = 0.0;
        for (int i = m_.out_ptr[v]; i < m_.out_ptr[v + 1]; ++i) {
            const int g = m_.out_group[i];
            const bool before = crossing(g);
            source_in_[g] = joining ? 1 : 0;
            if (before != crossing(g)) delta += before ? -m_.group_cost[g] : m_.group_cost[g];
        }
        for (int i = m_.in_ptr[v]; i < m_.in_ptr[v + 1]; ++i) {
            const int g = m_.in_group[i];
            const bool before = crossing(g);
            targets_in_[g] += joining ? 1 : -1;
            if (before != crossing(g)) delta += before ? -m_.group_cost[g] : m_.group_cost[g];
        }
        return delta;
    }

    void count_once(int g) {
        if (stamp_[g] == epoch_) return;
        stamp_[g] = epoch_;
        if (crossing(g)) sums.comm += m_.group_cost[g];
    }

    const Model& m_;
    std::vector<std::uint8_t> source_in_;
    std::vector<int> targets_in_;
    std::vector<std::uint32_t> stamp_;  // groups already counted by recompute()
    std::uint32_t epoch_ = 0;
};


// A DFS stack of at most `capacity` frames, allocated once. (std::vector's push_back stayed out of
// line in the walks' loop: 15% of layer_gnmt_inference's DP time under perf.)
template <typename T>
class FixedStack {
public:
    explicit FixedStack(std::size_t capacity) : items_(capacity) {}
    void clear() { size_ = 0; }
    bool empty() const { return size_ == 0; }
    void push(const T& item) { items_[size_++] = item; }
    T& back() { return items_[size_ - 1]; }
    void pop() { --size_; }

private:
    std::vector<T> items_;
    std::size_t size_ = 0;
};

}  // namespace
// Throws std::invalid_argument naming what is malformed in an instance and its options (dp.cpp).
void check_instance(const Instance& in, const Options& options);

}  // namespace exactplace
