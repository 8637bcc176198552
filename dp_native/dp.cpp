#include "dp.hpp"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <exception>
#include <limits>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>

#include "chain.hpp"
#include "ideals.hpp"

namespace exactplace {

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

double seconds_since(Stopper::Clock::time_point start) {
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
        to_csr(outs, out_ptr, out_group);
        to_csr(ins, in_ptr, in_group);
    }

private:
    void to_csr(std::vector<std::pair<int, int>>& pairs, std::vector<int>& ptr, std::vector<int>& out) const {
        std::sort(pairs.begin(), pairs.end());
        ptr.assign(n + 1, 0);
        for (const auto& p : pairs) ++ptr[p.first + 1];
        for (int i = 0; i < n; ++i) ptr[i + 1] += ptr[i];
        out.resize(pairs.size());
        for (std::size_t i = 0; i < pairs.size(); ++i) out[i] = pairs[i].second;
    }
};

// What a device holding a set of units computes, stores and communicates.
struct Sums {
    double cpu = 0.0, acc = 0.0, mem = 0.0, comm = 0.0;
    int unsupported = 0;

    double accelerator_load(bool overlap) const { return overlap ? std::max(acc, comm) : acc + comm; }
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
    double move(int v, bool joining) {
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

// Follows the enumeration DFS to record the cost of every ideal as one set (the DP's J = {} option).
class IdealCosts : public IdealObserver {
public:
    IdealCosts(const Model& model, const Options& options, std::int64_t count)
        : set_(model), options_(options) {
        cpu.reserve(count);
        acc.reserve(count);
    }
    void enter(int v) override {
        saved_.push_back(set_.sums);
        set_.add(v);
    }
    void leave(int v) override {
        set_.undo_add(v, saved_.back());
        saved_.pop_back();
    }
    bool visit(const IdealWalker&) override {
        const Sums& s = set_.sums;
        cpu.push_back(s.cpu);
        const bool fits = s.unsupported == 0 && s.mem <= options_.memory_cap;
        acc.push_back(fits ? s.accelerator_load(options_.overlap) : kInf);
        return true;
    }
    std::vector<double> cpu, acc;  // by DFS visit index

private:
    SetCost set_;
    std::vector<Sums> saved_;  // the sums before each unit of the current DFS path
    const Options& options_;
};

// Walk layers in runs along which the bound cannot increase: accelerator layers (c, a..k) for
// a fixed c, CPU layers (c..l, a) for a fixed a. `previous` is the layer-index offset of the
// layer that gets one device fewer.
struct LayerRun {
    int first, last, step, previous;
};

// The DP table and everything the workers share. Layer (c, a) = c * (k + 1) + a: c CPUs, a accelerators.
class Table {
public:
    Table(const Model& model, const Lattice& lattice, const Options& options, std::vector<double> cost_cpu,
          std::vector<double> cost_acc, Stopper& stop)
        : model(model), lattice(lattice), options(options), stop(stop), k(options.accelerators),
          l(options.cpus), layers((k + 1) * (l + 1)), top((k + 1) * (l + 1) - 1), count(lattice.count),
          cost_cpu(std::move(cost_cpu)), cost_acc(std::move(cost_acc)),
          value(static_cast<std::size_t>(count) * layers, kInf),
          choice(static_cast<std::size_t>(count) * layers, 0),
          done(new std::atomic<std::uint8_t>[static_cast<std::size_t>(count)]) {
        for (std::int64_t i = 0; i < count; ++i) done[i].store(0, std::memory_order_relaxed);
        // Layers with a single device take only J = {} (DP of a non-empty ideal on zero devices is
        // infinite); that option is applied before the walks, so the walks skip them. With
        // `bottom_up`, the accelerator side of the layers (c >= 1, 1) is left to the bottom-up
        // walk. The top layer (l, k) is only needed for the full ideal.
        const int k1 = k + 1;
        for (int with_top = 0; with_top < 2; ++with_top) {
            for (int c = 0; c <= l; ++c) {
                const int a_last = (c == l && !with_top) ? k - 1 : k;
                const int layer = c * k1 + 1;
                const bool up = c >= 1 && k >= 1 && (with_top || layer != top);
                if (up) up_layers[with_top].push_back(layer);
                for (int bottom_up = 0; bottom_up < 2; ++bottom_up) {
                    const int a_first = (bottom_up && up) ? 2 : std::max(1, 2 - c);
                    if (a_first <= a_last) {
                        acc_runs[with_top][bottom_up].push_back({c * k1 + a_first, c * k1 + a_last, 1, 1});
                    }
                }
            }
            for (int a = 0; a <= k; ++a) {
                const int c_first = std::max(1, 2 - a), c_last = (a == k && !with_top) ? l - 1 : l;
                if (c_first <= c_last) {
                    cpu_runs[with_top].push_back({c_first * k1 + a, c_last * k1 + a, k1, k1});
                }
            }
        }
    }

    const Model& model;
    const Lattice& lattice;
    const Options& options;
    Stopper& stop;
    const int k, l, layers, top;
    const std::int64_t count;
    std::vector<double> cost_cpu, cost_acc;   // by id: the ideal as one set
    std::vector<double> value;                // [id * layers + layer]
    std::vector<std::uint32_t> choice;        // sub-ideal id * 2 + (1: accelerator, 0: CPU)
    std::unique_ptr<std::atomic<std::uint8_t>[]> done;
    std::vector<LayerRun> acc_runs[2][2];  // [is the full ideal][the bottom-up walk runs]
    std::vector<LayerRun> cpu_runs[2];     // [is the full ideal]
    std::vector<int> up_layers[2];         // layers (c >= 1, 1), for the bottom-up walk
    // Written once per ideal by every thread: kept off the cache lines the walks read.
    alignas(64) std::atomic<std::int64_t> next{1};
};

// One thread's share of the DP: takes ideals in id order and fills their rows. Cache-line
// aligned so that two workers' counters, written at every step, never share a line.
class alignas(64) Worker {
public:
    Worker(Table& table, bool owner)
        : t_(table), owner_(owner), set_(table.model), rest_(table.model), held_(table.lattice.words, 0),
          best_(table.layers), bound_(table.layers), pick_(table.layers) {
        stack_.reserve(static_cast<std::size_t>(table.model.n) + 1);
    }

    // Returns false if stopped.
    bool run() {
        while (true) {
            const std::int64_t id = t_.next.fetch_add(1, std::memory_order_relaxed);
            if (id >= t_.count) return true;
            if (!process(id)) return false;
        }
    }

    std::int64_t pairs = 0;

private:
    struct Frame {
        std::int64_t ideal;
        std::int64_t cursor;  // next cover to try (bottom-up: starts past the label added last)
        int limit;            // top-down: only units with a smaller label may be removed (canonical order)
        int removed;          // the unit removed (top-down) or added (bottom-up) to get here; -1 at the root
        Sums before;          // the walk's sums before that step
    };

    bool should_stop() { return owner_ ? t_.stop.check_owner(ticks_) : t_.stop.check_helper(ticks_); }

    bool process(std::int64_t id) {
        const int layers = t_.layers;
        double* row = t_.value.data() + static_cast<std::size_t>(id) * layers;
        std::uint32_t* row_choice = t_.choice.data() + static_cast<std::size_t>(id) * layers;
        if (id == 0) {  // the empty ideal costs nothing anywhere
            std::fill(row, row + layers, 0.0);
            t_.done[0].store(1, std::memory_order_release);
            return true;
        }
        full_ = id == t_.count - 1;
        std::fill(best_.begin(), best_.end(), kInf);
        std::fill(pick_.begin(), pick_.end(), 0u);
        // J = {}: the whole ideal on one device (DP of the empty ideal is 0).
        for (int c = 0; c <= t_.l; ++c) {
            for (int a = 0; a <= t_.k; ++a) {
                const int layer = c * (t_.k + 1) + a;
                if (a > 0) offer_initial(layer, t_.cost_acc[id], 1);
                if (c > 0) offer_initial(layer, t_.cost_cpu[id], 0);
            }
        }
        // Bottom-up only pays when the whole ideal fits on one accelerator: otherwise S = I \ J
        // cannot fit until J is large, and the top-down walk's memory cut is the better bound.
        up_ = !t_.up_layers[full_].empty() && t_.cost_acc[id] < kInf;
        refresh_bounds();
        if (up_ && !walk_up(id)) return false;
        if (!walk(id)) return false;
        // Leaving a device empty: DP[c][a][I] may take DP[c-1][a][I] or DP[c][a-1][I].
        for (int c = 0; c <= t_.l; ++c) {
            for (int a = 0; a <= t_.k; ++a) {
                const int layer = c * (t_.k + 1) + a;
                double v = best_[layer];
                std::uint32_t pick = pick_[layer];
                if (layer == t_.top && !full_) v = kInf;  // only the full ideal needs every device
                if (c > 0 && row[layer - (t_.k + 1)] <= v) {
                    v = row[layer - (t_.k + 1)];
                    pick = static_cast<std::uint32_t>(id) * 2u;
                }
                if (a > 0 && row[layer - 1] <= v) {
                    v = row[layer - 1];
                    pick = static_cast<std::uint32_t>(id) * 2u + 1u;
                }
                row[layer] = v;
                row_choice[layer] = pick;
            }
        }
        t_.done[id].store(1, std::memory_order_release);
        return true;
    }

    void offer_initial(int layer, double v, std::uint32_t kind) {
        if (v < best_[layer]) {
            best_[layer] = v;
            pick_[layer] = kind;  // sub-ideal 0 (the empty set)
        }
    }

    // bound_[c][a]: an upper bound on the final DP[c][a][I] (every candidate found so far for
    // fewer devices, since a device may stay empty). A candidate must beat it to matter.
    void refresh_bounds() {
        const int k1 = t_.k + 1;
        for (int c = 0; c <= t_.l; ++c) {
            for (int a = 0; a <= t_.k; ++a) {
                const int layer = c * k1 + a;
                double v = best_[layer];
                if (c > 0) v = std::min(v, bound_[layer - k1]);
                if (a > 0) v = std::min(v, bound_[layer - 1]);
                bound_[layer] = v;
            }
        }
        refresh_thresholds();
    }

    // The largest bound a walk layer still has: below it nothing can improve. A run's first layer
    // has the run's largest bound.
    void refresh_thresholds() {
        acc_threshold_ = -kInf;
        for (const auto& run : t_.acc_runs[full_][up_]) acc_threshold_ = std::max(acc_threshold_, bound_[run.first]);
        cpu_threshold_ = -kInf;
        for (const auto& run : t_.cpu_runs[full_]) cpu_threshold_ = std::max(cpu_threshold_, bound_[run.first]);
    }

    void improve(int layer, double v, std::uint32_t pick) {
        best_[layer] = v;
        pick_[layer] = pick;
        const int k1 = t_.k + 1;
        const int c0 = layer / k1, a0 = layer % k1;
        for (int c = c0; c <= t_.l; ++c) {
            for (int a = a0; a <= t_.k; ++a) {
                double& b = bound_[c * k1 + a];
                b = std::min(b, v);
            }
        }
        refresh_thresholds();
    }

    // rest_ holds S = I \ J for the bottom-up walk; it starts each ideal from the previous one's
    // set by the members' symmetric difference (one unit per ideal on a DPL chain), then sums afresh.
    void hold(std::int64_t id) {
        const std::uint64_t* mine = t_.lattice.members(id);
        for (int w = 0; w < t_.lattice.words; ++w) {
            for (std::uint64_t diff = held_[w] ^ mine[w]; diff != 0; diff &= diff - 1) {
                const int v = (w << 6) + __builtin_ctzll(diff);
                if ((mine[w] >> (v & 63)) & 1u) {
                    rest_.add(v);
                } else {
                    rest_.remove(v);
                }
            }
            held_[w] = mine[w];
        }
        rest_.recompute(mine, t_.lattice.words);  // exact again, whatever the diffs' rounding
    }

    // The accelerator side of layers (c >= 1, 1): J on c CPUs, then S = I \ J on one accelerator.
    // On CPUs alone DP[J] cannot decrease as J grows (dropping units from a CPU-only chain never
    // raises a load), so sub-ideals are grown from {} by adding units in increasing label order
    // (each J reached once) and a branch is cut once DP[J][c][0] reaches the layer's bound. The
    // top-down walk would have to go almost all the way down for these layers, since slow CPUs
    // take a small J. It only runs when all of I fits on one accelerator, so every S does and
    // memory is never tested; S's sums shrink by subtraction, which only rounds the loads.
    bool walk_up(std::int64_t id) {
        const Lattice& lat = t_.lattice;
        hold(id);
        const std::uint64_t* mine = lat.members(id);
        stack_.clear();
        stack_.push_back({0, lat.up_ptr[0], -1, -1, rest_.sums});  // J = {}
        while (!stack_.empty()) {
            if (should_stop()) return false;
            Frame& f = stack_.back();
            std::int64_t e = f.cursor;
            const std::int64_t end = lat.up_ptr[f.ideal + 1];
            while (e < end && !((mine[lat.up_node[e] >> 6] >> (lat.up_node[e] & 63)) & 1u)) ++e;  // stay inside I
            if (e < end) {
                const int v = lat.up_node[e];
                const std::int64_t parent = lat.up_parent[e];
                f.cursor = e + 1;
                if (parent == id) continue;  // J = I leaves the accelerator empty: finalize covers it
                const Sums before = rest_.sums;
                rest_.remove(v);
                if (evaluate_up(parent)) {
                    std::int64_t start = lat.up_ptr[parent];
                    while (start < lat.up_ptr[parent + 1] && lat.up_node[start] <= v) ++start;
                    stack_.push_back({parent, start, -1, v, before});
                } else {
                    rest_.undo_remove(v, before);
                }
            } else {
                const int added = f.removed;
                const Sums before = f.before;
                stack_.pop_back();
                if (added >= 0) rest_.undo_remove(added, before);
            }
        }
        return true;
    }

    // Offers (I, J) to the layers (c >= 1, 1); returns whether a larger J may still help.
    bool evaluate_up(std::int64_t sub_id) {
        ++pairs;
        while (t_.done[sub_id].load(std::memory_order_acquire) == 0) {  // only ideals in flight on another thread
            if (should_stop()) return false;
            std::this_thread::yield();
        }
        const double* sub = t_.value.data() + static_cast<std::size_t>(sub_id) * t_.layers;
        const double load = rest_.sums.accelerator_load(t_.options.overlap);
        bool alive = false;
        for (const int layer : t_.up_layers[full_]) {
            const double on_cpus = sub[layer - 1];
            if (on_cpus >= bound_[layer]) continue;
            alive = true;
            const double candidate = std::max(on_cpus, load);
            if (candidate < bound_[layer]) improve(layer, candidate, static_cast<std::uint32_t>(sub_id) * 2u + 1u);
        }
        return alive;
    }

    // Sub-ideals J of I by removing units in decreasing label order, so each J is reached once
    // and S = I \ J grows by one unit per step. Compute, memory and unsupported units only grow
    // along a branch, so a branch is cut when no layer can still improve (communication may shrink,
    // so it never cuts).
    bool walk(std::int64_t id) {
        const Lattice& lat = t_.lattice;
        stack_.clear();
        stack_.push_back({id, lat.down_ptr[id], t_.model.n, -1, set_.sums});
        while (!stack_.empty()) {
            if (should_stop()) return false;
            Frame& f = stack_.back();
            if (f.cursor < lat.down_ptr[f.ideal + 1] && lat.down_node[f.cursor] < f.limit) {
                const int v = lat.down_node[f.cursor];
                const std::int64_t child = lat.down_child[f.cursor];
                ++f.cursor;
                const Sums before = set_.sums;
                set_.add(v);
                if (child != 0 && evaluate(child)) {
                    stack_.push_back({child, lat.down_ptr[child], v, v, before});
                } else {
                    set_.undo_add(v, before);
                }
            } else {
                const int removed = f.removed;
                const Sums before = f.before;
                stack_.pop_back();
                if (removed >= 0) set_.undo_add(removed, before);
            }
        }
        return true;
    }

    // Offers the pair (I, J) with S = I \ J to every layer; returns whether J's sub-ideals may still help.
    bool evaluate(std::int64_t child) {
        const Sums& s = set_.sums;
        const bool acc_live = s.unsupported == 0 && s.mem <= t_.options.memory_cap && s.acc < acc_threshold_;
        const bool cpu_live = s.cpu < cpu_threshold_;
        if (!acc_live && !cpu_live) return false;
        ++pairs;
        while (t_.done[child].load(std::memory_order_acquire) == 0) {  // only ideals in flight on another thread
            if (should_stop()) return false;
            std::this_thread::yield();
        }
        const double* sub = t_.value.data() + static_cast<std::size_t>(child) * t_.layers;
        const std::uint32_t code = static_cast<std::uint32_t>(child) * 2u;
        if (acc_live) {
            const double load = s.accelerator_load(t_.options.overlap);
            for (const auto& run : t_.acc_runs[full_][up_]) {
                // bound_ is non-increasing along a run, so the first layer it cannot beat ends the run.
                for (int layer = run.first; layer <= run.last && load < bound_[layer]; layer += run.step) {
                    const double candidate = std::max(sub[layer - run.previous], load);
                    if (candidate < bound_[layer]) improve(layer, candidate, code + 1u);
                }
            }
        }
        if (cpu_live) {
            const double load = s.cpu;
            for (const auto& run : t_.cpu_runs[full_]) {
                for (int layer = run.first; layer <= run.last && load < bound_[layer]; layer += run.step) {
                    const double candidate = std::max(sub[layer - run.previous], load);
                    if (candidate < bound_[layer]) improve(layer, candidate, code);
                }
            }
        }
        return true;
    }

    Table& t_;
    bool owner_;
    SetCost set_;                     // S = I \ J of the top-down walk
    SetCost rest_;                    // S = I \ J of the bottom-up walk
    std::vector<std::uint64_t> held_; // the ideal I that rest_ was built for
    std::vector<Frame> stack_;
    std::vector<double> best_, bound_;
    std::vector<std::uint32_t> pick_;
    double acc_threshold_ = kInf, cpu_threshold_ = kInf;
    bool full_ = false;
    bool up_ = false;  // the bottom-up walk handles the accelerator side of layers (c >= 1, 1)
    std::uint32_t ticks_ = 0;
};

void check_instance(const Instance& in, const Options& options) {
    const auto n = static_cast<std::size_t>(in.units);
    if (in.units <= 0) throw std::invalid_argument("the instance needs at least one unit");
    if (in.cpu_time.size() != n || in.acc_time.size() != n || in.memory.size() != n || in.supported.size() != n) {
        throw std::invalid_argument("cpu_time, acc_time, memory and supported need one value per unit");
    }
    for (std::size_t u = 0; u < n; ++u) {
        const bool bad = !(std::isfinite(in.cpu_time[u]) && in.cpu_time[u] >= 0) ||
                         !(std::isfinite(in.memory[u]) && in.memory[u] >= 0) ||
                         (in.supported[u] && !(std::isfinite(in.acc_time[u]) && in.acc_time[u] >= 0));
        if (bad) throw std::invalid_argument("unit " + std::to_string(u) + " has a negative, NaN or infinite value");
    }
    const std::size_t groups = in.group_cost.size();
    if (in.group_source.size() != groups || in.group_ptr.size() != groups + 1 || in.group_ptr[0] != 0 ||
        in.group_ptr[groups] != static_cast<std::int64_t>(in.group_target.size())) {
        throw std::invalid_argument("group_source, group_ptr and group_target do not describe the groups");
    }
    for (std::size_t g = 0; g < groups; ++g) {
        if (!(std::isfinite(in.group_cost[g]) && in.group_cost[g] >= 0)) {
            throw std::invalid_argument("group " + std::to_string(g) + " has a negative, NaN or infinite cost");
        }
        if (in.group_source[g] < 0 || in.group_source[g] >= in.units || in.group_ptr[g + 1] < in.group_ptr[g]) {
            throw std::invalid_argument("group " + std::to_string(g) + " is malformed");
        }
        for (std::int64_t t = in.group_ptr[g]; t < in.group_ptr[g + 1]; ++t) {
            if (in.group_target[t] < 0 || in.group_target[t] >= in.units || in.group_target[t] == in.group_source[g]) {
                throw std::invalid_argument("group " + std::to_string(g) + " has an invalid target");
            }
        }
    }
    if (options.accelerators < 0 || options.cpus < 0 || options.accelerators + options.cpus == 0) {
        throw std::invalid_argument("the cluster needs a non-negative number of devices, at least one");
    }
    if (std::isnan(options.memory_cap) || options.memory_cap < 0) {
        throw std::invalid_argument("the memory cap must be non-negative");
    }
    if (options.threads < 1) throw std::invalid_argument("threads must be at least 1");
    if (options.max_ideals < 1 || options.max_ideals > std::numeric_limits<std::int32_t>::max() / 2) {
        throw std::invalid_argument("max_ideals must be between 1 and 2**30");
    }
}

}  // namespace

std::int64_t memory_estimate(int units, int accelerators, int cpus, std::int64_t ideals, std::int64_t covers) {
    const std::int64_t words = (units + 63) / 64;
    const std::int64_t layers = static_cast<std::int64_t>(accelerators + 1) * (cpus + 1);
    // Per ideal: members bitset, hash, size (x2), visit/id maps, cover offsets (x3), hash table
    // (at most 4 slots), ideal costs by visit and by id, DP value + choice, done flag.
    const std::int64_t per_ideal = 8 * words + 8 + 8 + 12 + 24 + 16 + 32 + 12 * layers + 1;
    // Per cover: maximal-node list while building, down-cover node + child, up-cover node + parent.
    const std::int64_t per_cover = 20;
    return ideals * per_ideal + covers * per_cover;
}

std::int64_t chain_memory_estimate(int units, int cpus, std::int64_t groups_members) {
    // Per unit: three long-double prefix sums, the last-unsupported index, two need rows, the
    // segment tree (two doubles per node, up to four nodes per unit), its base values and the
    // choice (1 byte) and start (4 bytes) kept for every CPU count. Per group member: two events.
    const std::int64_t per_unit = 3 * 16 + 4 + 8 + 4 * 16 + 8 + 16 + 5 * (static_cast<std::int64_t>(cpus) + 1);
    return (static_cast<std::int64_t>(units) + 1) * per_unit + groups_members * 2 * 16 + 4096;
}

Solution solve(const Instance& instance, const Options& options, Stopper& stop) {
    check_instance(instance, options);
    if (!instance.order.empty()) {
        if (instance.units + 1 > options.max_ideals) throw TooManyIdeals(instance.units + 1, options.max_ideals);
        return solve_chain(instance, options, instance.order, stop);
    }
    Solution out;
    const auto t0 = Stopper::Clock::now();
    const Poset poset(instance.units, instance.edge_src, instance.edge_dst);
    const IdealCount counted = count_ideals(poset, options.max_ideals, stop);
    if (counted.exceeded) throw TooManyIdeals(counted.ideals, options.max_ideals);
    if (counted.stopped) {
        out.stop_reason = stop.reason();
        return out;
    }
    out.ideals = counted.ideals;
    out.covers = counted.covers;

    const Model model(instance, poset);
    Lattice lattice;
    std::vector<double> cost_cpu(counted.ideals), cost_acc(counted.ideals);
    {
        IdealCosts costs(model, options, counted.ideals);
        if (!lattice.build(poset, counted, &costs, stop)) {
            out.stop_reason = stop.reason();
            return out;
        }
        for (std::int64_t d = 0; d < lattice.count; ++d) {
            cost_cpu[lattice.id_of_visit[d]] = costs.cpu[d];
            cost_acc[lattice.id_of_visit[d]] = costs.acc[d];
        }
        std::vector<std::int64_t>().swap(lattice.id_of_visit);
    }
    out.seconds_ideals = seconds_since(t0);

    const auto t1 = Stopper::Clock::now();
    Table table(model, lattice, options, std::move(cost_cpu), std::move(cost_acc), stop);
    // A chain-like lattice (DPL) has one ideal per size: every ideal waits for the previous one,
    // so a second thread would only spin.
    const bool wide = lattice.count > 4 * (static_cast<std::int64_t>(model.n) + 1) && lattice.count > 256;
    out.threads_used = wide ? options.threads : 1;

    std::vector<std::unique_ptr<Worker>> workers;
    for (int w = 0; w < out.threads_used; ++w) workers.push_back(std::make_unique<Worker>(table, w == 0));
    std::atomic<int> running{out.threads_used - 1};
    std::mutex error_mutex;
    std::exception_ptr error;
    std::vector<std::thread> helpers;
    for (int w = 1; w < out.threads_used; ++w) {
        helpers.emplace_back([&, w] {
            try {
                workers[w]->run();
            } catch (...) {
                std::lock_guard<std::mutex> lock(error_mutex);
                error = std::current_exception();
                stop.request(StopReason::interrupt);
            }
            running.fetch_sub(1);
        });
    }
    try {
        workers[0]->run();
    } catch (...) {
        std::lock_guard<std::mutex> lock(error_mutex);
        error = std::current_exception();
        stop.request(StopReason::interrupt);
    }
    // Keep polling (Ctrl-C, deadline) while the helpers finish their last ideals.
    while (running.load() > 0) {
        stop.check_owner_now();
        std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
    for (auto& h : helpers) h.join();
    if (error) std::rethrow_exception(error);
    for (const auto& w : workers) out.pairs += w->pairs;
    out.seconds_dp = seconds_since(t1);
    if (stop.stopped()) {
        out.stop_reason = stop.reason();
        return out;
    }

    // Follow the choices back from (all units, l CPUs, k accelerators).
    const std::int64_t full = lattice.count - 1;
    out.value = table.value[static_cast<std::size_t>(full) * table.layers + table.top];
    if (!(out.value < kInf)) {
        out.outcome = Outcome::infeasible;
        return out;
    }
    std::vector<int> device_of_label(model.n, -1);
    int next_acc = 0, next_cpu = options.accelerators;
    std::int64_t id = full;
    int c = options.cpus, a = options.accelerators;
    while (id != 0) {
        const std::uint32_t pick = table.choice[static_cast<std::size_t>(id) * table.layers + c * (table.k + 1) + a];
        const std::int64_t sub = pick >> 1;
        const bool on_acc = (pick & 1u) != 0;
        if (sub != id) {
            const int device = on_acc ? next_acc++ : next_cpu++;
            const std::uint64_t* mine = lattice.members(id);
            const std::uint64_t* theirs = lattice.members(sub);
            for (int w = 0; w < lattice.words; ++w) {
                for (std::uint64_t word = mine[w] & ~theirs[w]; word != 0; word &= word - 1) {
                    device_of_label[(w << 6) + __builtin_ctzll(word)] = device;
                }
            }
        }
        (on_acc ? a : c) -= 1;
        if (a < 0 || c < 0) throw std::logic_error("the DP's choices use more devices than exist");
        id = sub;
    }
    out.device.assign(model.n, -1);
    for (int label = 0; label < model.n; ++label) out.device[poset.node_of(label)] = device_of_label[label];
    out.outcome = Outcome::optimal;
    return out;
}

}  // namespace exactplace
