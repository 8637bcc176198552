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
#include "dp_model.hpp"
#include "groups.hpp"
#include "ideals.hpp"

namespace exactplace {

namespace {

// The accelerator types of Options, normalized: the homogeneous form (no type_count) is one type of speed 1.
struct Types {
    int count = 0;
    std::vector<int> size;            // accelerators of each type
    std::vector<double> cap, speed;   // memory cap and speed of each type

    explicit Types(const Options& o) {
        if (o.type_count.empty()) {
            size = {o.accelerators};
            cap = {o.memory_cap};
            speed = {1.0};
        } else {
            for (const std::int64_t n : o.type_count) size.push_back(static_cast<int>(n));
            cap = o.type_memory;
            speed = o.type_speed;
        }
        count = static_cast<int>(size.size());
    }
};

// The least time each unit (by label) takes on any device of the cluster that can run it: on a
// CPU if there is one, or on an accelerator of the fastest type if the unit runs on one. Every
// device holding a set S has a load of at least the sum over S, least(S) (the cutoff's lower
// bound, Worker::live; device_capacity says by how much more). A unit that no device runs counts 0
// (the instance is infeasible anyway; 0 keeps the bound valid).
std::vector<double> least_times(const Model& model, const Options& options, const Types& types) {
    const double fastest = *std::max_element(types.speed.begin(), types.speed.end());
    std::vector<double> least(model.n);
    for (int v = 0; v < model.n; ++v) {
        double t = options.cpus > 0 ? model.cpu[v] : kInf;
        if (options.accelerators > 0 && !model.unsupported[v]) t = std::min(t, model.acc[v] / fastest);
        least[v] = t < kInf ? t : 0.0;
    }
    return least;
}

// Per device kind (each accelerator type, then CPUs): the most least time a device of that kind
// holds with a load below L, in units of L. Type t: acc(S) / speed_t < L and least(S) <=
// acc(S) / fastest give speed_t / fastest. A CPU: least(S) <= cpu(S) / rho with rho the smallest
// cpu / least over the units, so 1 / rho (slow CPUs hold little: layer_gnmt's take a tenth).
std::vector<double> device_capacity(const Model& model, const Options& options, const Types& types) {
    const double fastest = *std::max_element(types.speed.begin(), types.speed.end());
    std::vector<double> capacity;
    for (int t = 0; t < types.count; ++t) capacity.push_back(types.speed[t] / fastest);
    const std::vector<double> least = least_times(model, options, types);
    double rho = kInf;
    for (int v = 0; v < model.n; ++v) {
        if (least[v] > 0) rho = std::min(rho, model.cpu[v] / least[v]);
    }
    // Without CPUs the CPU side holds nothing: 0, never 1 / rho, which a unit with no CPU time makes
    // infinite (and 0 CPUs times infinity is NaN, which would declare every ideal dead).
    capacity.push_back(options.cpus == 0 ? 0.0 : rho < kInf ? 1.0 / rho : 1.0);
    return capacity;
}

// Follows the enumeration DFS to record the cost of every ideal as one set (the DP's J = {} option)
// and the sum of its units' least times.
class IdealCosts : public IdealObserver {
public:
    IdealCosts(const Model& model, const Options& options, const Types& types, std::int64_t count)
        : set_(model), options_(options), types_(types), least_unit_(least_times(model, options, types)) {
        cpu.reserve(count);
        acc.reserve(static_cast<std::size_t>(count) * types.count);
        least.reserve(count);
    }
    void enter(int v) override {
        saved_.push_back({set_.sums, least_});
        set_.add(v);
        least_ += least_unit_[v];
    }
    void leave(int v) override {
        set_.undo_add(v, saved_.back().sums);
        least_ = saved_.back().least;  // restored, not subtracted (see SetCost)
        saved_.pop_back();
    }
    bool visit(const IdealWalker&) override {
        const Sums& s = set_.sums;
        least.push_back(least_);
        cpu.push_back(s.cpu);
        for (int t = 0; t < types_.count; ++t) {
            const bool fits = s.unsupported == 0 && s.mem <= types_.cap[t];
            acc.push_back(fits ? s.accelerator_load(options_.overlap, types_.speed[t]) : kInf);
        }
        return true;
    }
    std::vector<double> cpu, acc, least;  // by DFS visit index (acc: [visit * types + type])

private:
    struct Saved {
        Sums sums;
        double least;
    };
    SetCost set_;
    std::vector<Saved> saved_;  // the sums before each unit of the current DFS path
    const Options& options_;
    const Types& types_;
    const std::vector<double> least_unit_;
    double least_ = 0.0;
};

// Walk layers in runs along which the bound cannot increase: for an accelerator type t, the
// layers with every count but a_t fixed, a_t increasing (one type: (c, a..k) for a fixed c); CPU
// layers (c..l, a) for fixed accelerator counts. `step` and `previous` are the layer-index offset
// of one more device of the run's kind.
struct LayerRun {
    int first, last, step, previous;
};

// The DP table and everything the workers share. A layer is a device count per dimension: one
// dimension per accelerator type t (a_t in 0..size[t]) and the last one for CPUs (c in 0..l).
// Layer index = sum a_t * stride[t] + c * stride[types]; with one type, c * (k + 1) + a.
class Table {
public:
    Table(const Model& model, const Lattice& lattice, const Options& options, const Types& types,
          std::vector<double> cost_cpu, std::vector<double> cost_acc, std::vector<double> least, Stopper& stop)
        : model(model), lattice(lattice), options(options), types(types), stop(stop), T(types.count),
          l(options.cpus), stride(strides(types)), cpu_stride(stride[T]), layers(cpu_stride * (l + 1)),
          top(layers - 1), count(lattice.count), cost_cpu(std::move(cost_cpu)), cost_acc(std::move(cost_acc)),
          least(std::move(least)), cutoff(options.cutoff), devices(options.accelerators + options.cpus),
          inherit(cutoff < kInf && std::all_of(model.group_cost.begin(), model.group_cost.end(),
                                               [](double c) { return c == 0.0; })),
          fewest(cutoff < kInf ? static_cast<std::size_t>(count) : 0, 0),
          value(static_cast<std::size_t>(count) * layers, kInf),
          choice(static_cast<std::size_t>(count) * layers, 0),
          kind(T > 1 ? static_cast<std::size_t>(count) * layers : 0, 0),
          done(new std::atomic<std::uint8_t>[static_cast<std::size_t>(count)]) {
        for (std::int64_t i = 0; i < count; ++i) done[i].store(0, std::memory_order_relaxed);
        const int dims = T + 1;
        high.assign(types.size.begin(), types.size.end());
        high.push_back(l);
        coord.resize(static_cast<std::size_t>(layers) * dims);
        layer_devices.assign(layers, 0);
        layer_capacity.assign(layers, 0.0);
        rest_capacity.assign(layers, 0.0);
        const std::vector<double> capacity = device_capacity(model, options, types);
        for (int layer = 0; layer < layers; ++layer) {
            for (int d = 0; d < dims; ++d) {
                const int n = layer / stride[d] % (high[d] + 1);
                coord[static_cast<std::size_t>(layer) * dims + d] = n;
                layer_devices[layer] += n;
                layer_capacity[layer] += n * capacity[d];
                rest_capacity[layer] += (high[d] - n) * capacity[d];
            }
        }
        // Layers with a single device take only J = {} (DP of a non-empty ideal on zero devices is
        // infinite); that option is applied before the walks, so the walks skip them. With
        // `bottom_up`, the type-t side of the layers (c >= 1, one accelerator of type t) is left to
        // the bottom-up walk. The top layer is only needed for the full ideal.
        for (int with_top = 0; with_top < 2; ++with_top) {
            acc_runs[with_top].resize(2 * T);
            up_layers[with_top].resize(T);
            for (int t = 0; t < T; ++t) {
                for (int base = 0; base < layers; ++base) {
                    if (at(base, t) != 0) continue;
                    int others = 0;         // devices of the other dimensions
                    bool top_line = true;   // every other dimension at its maximum
                    for (int d = 0; d < dims; ++d) {
                        if (d == t) continue;
                        others += at(base, d);
                        top_line = top_line && at(base, d) == high[d];
                    }
                    const int c = at(base, T);
                    const int a_last = (top_line && !with_top) ? high[t] - 1 : high[t];
                    const int layer = base + stride[t];
                    const bool up = c >= 1 && others == c && high[t] >= 1 && (with_top || layer != top);
                    if (up) up_layers[with_top][t].push_back(layer);
                    for (int bottom_up = 0; bottom_up < 2; ++bottom_up) {
                        const int a_first = (bottom_up && up) ? 2 : std::max(1, 2 - others);
                        if (a_first <= a_last) {
                            acc_runs[with_top][2 * t + bottom_up].push_back(
                                {base + a_first * stride[t], base + a_last * stride[t], stride[t], stride[t]});
                        }
                    }
                }
            }
            for (int base = 0; base < cpu_stride; ++base) {
                int accelerators = 0;
                bool top_line = true;
                for (int t = 0; t < T; ++t) {
                    accelerators += at(base, t);
                    top_line = top_line && at(base, t) == high[t];
                }
                const int c_first = std::max(1, 2 - accelerators), c_last = (top_line && !with_top) ? l - 1 : l;
                if (c_first <= c_last) {
                    cpu_runs[with_top].push_back({c_first * cpu_stride + base, c_last * cpu_stride + base,
                                                  cpu_stride, cpu_stride});
                }
            }
        }
    }

    // Devices of dimension d (a type, or T for CPUs) in a layer.
    int at(int layer, int d) const { return coord[static_cast<std::size_t>(layer) * (T + 1) + d]; }

    const Model& model;
    const Lattice& lattice;
    const Options& options;
    const Types& types;
    Stopper& stop;
    const int T, l;
    const std::vector<int> stride;            // per dimension (types, then CPUs)
    const int cpu_stride, layers, top;
    const std::int64_t count;
    std::vector<int> high;                    // per dimension: the most devices (size[t], then l)
    std::vector<int> coord;                   // [layer * (T + 1) + dimension]
    std::vector<double> cost_cpu, cost_acc;   // by id: the ideal as one set (cost_acc: [id * T + type])
    const std::vector<double> least;          // by id: the sum of the ideal's least times (least_times)
    const double cutoff;                      // Options::cutoff
    const int devices;                        // k + l
    // Without communication a chain split of I restricted to a sub-ideal J is one of J with no
    // larger load, so the devices J needs below the cutoff, I needs too (Worker::live).
    const bool inherit;
    std::vector<std::int32_t> fewest;         // by id, with a cutoff: a lower bound on the devices (Worker::live)
    std::vector<int> layer_devices;           // per layer: its devices of every kind
    // Per layer: the least time its devices hold below a load L, and the other devices, in units
    // of L (device_capacity).
    std::vector<double> layer_capacity, rest_capacity;
    std::vector<double> value;                // [id * layers + layer]
    std::vector<std::uint32_t> choice;        // sub-ideal id * 2 + (1: accelerator, 0: CPU)
    std::vector<std::uint8_t> kind;           // the accelerator type of a choice (empty with one type)
    std::unique_ptr<std::atomic<std::uint8_t>[]> done;  // by id: 0 in progress, else kDone or kDead
    std::vector<std::vector<LayerRun>> acc_runs[2];  // [is the full ideal][2 * type + the bottom-up walk runs]
    std::vector<LayerRun> cpu_runs[2];               // [is the full ideal]
    std::vector<std::vector<int>> up_layers[2];      // [is the full ideal][type]: layers (c >= 1, e_type)
    // Written once per ideal by every thread: kept off the cache lines the walks read.
    alignas(64) std::atomic<std::int64_t> next{1};

private:
    static std::vector<int> strides(const Types& types) {
        std::vector<int> out;
        int product = 1;
        for (int t = 0; t < types.count; ++t) {
            out.push_back(product);
            product *= types.size[t] + 1;
        }
        out.push_back(product);
        return out;
    }
};

// Table::done: the ideal's row is final, or it was skipped (Worker::live) and its row is infinite.
constexpr std::uint8_t kDone = 1, kDead = 2;

// One thread's share of the DP: takes ideals in id order and fills their rows. Cache-line
// aligned so that two workers' counters, written at every step, never share a line.
// `Typed` = false: one accelerator type of speed 1 (every homogeneous cluster), for which the
// walks compile to the paper's DP with a single accelerator count and no per-type loops.
template <bool Typed>
class alignas(64) Worker {
public:
    Worker(Table& table, bool owner)
        : t_(table), owner_(owner), set_(table.model), rest_(table.model), held_(table.lattice.words, 0),
          stack_(static_cast<std::size_t>(table.model.n) + 1),
          best_(table.layers), bound_(table.layers), pick_(table.layers), kind_(table.layers),
          acc_threshold_(table.T, kInf), up_(table.T, 0), live_(table.T, 0), low_(table.T + 1), at_(table.T + 1) {
    }

    // Returns false if stopped.
    bool run() {
        while (true) {
            const std::int64_t id = t_.next.fetch_add(1, std::memory_order_relaxed);
            if (id >= t_.count) return true;
            if (!process(id)) return false;
        }
    }

    std::int64_t pairs = 0, dead_ideals = 0;

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
            t_.done[0].store(kDone, std::memory_order_release);
            return true;
        }
        full_ = id == t_.count - 1;
        if (t_.cutoff < kInf) {
            if (!fewest_devices(id)) return false;
            if (!live(id)) {  // no split below the cutoff uses I: its row stays infinite
                std::fill(row, row + layers, kInf);
                t_.fewest[id] = static_cast<std::int32_t>(fewest_);
                ++dead_ideals;
                t_.done[id].store(kDead, std::memory_order_release);
                return true;
            }
        }
        const int T = t_.T;
        const double* cost_acc = t_.cost_acc.data() + static_cast<std::size_t>(id) * T;
        std::fill(best_.begin(), best_.end(), kInf);
        std::fill(pick_.begin(), pick_.end(), 0u);
        if constexpr (Typed) std::fill(kind_.begin(), kind_.end(), std::uint8_t{0});
        // J = {}: the whole ideal on one device (DP of the empty ideal is 0).
        if constexpr (!Typed) {
            const int k = t_.high[0];
            for (int c = 0; c <= t_.l; ++c) {
                for (int a = 0; a <= k; ++a) {
                    const int layer = c * (k + 1) + a;
                    if (a > 0) offer_initial(layer, cost_acc[0], 1, 0);
                    if (c > 0) offer_initial(layer, t_.cost_cpu[id], 0, 0);
                }
            }
        }
        for (int layer = 0; Typed && layer < layers; ++layer) {
            for (int t = 0; t < T; ++t) {
                if (t_.at(layer, t) > 0) offer_initial(layer, cost_acc[t], 1, t);
            }
            if (t_.at(layer, T) > 0) offer_initial(layer, t_.cost_cpu[id], 0, 0);
        }
        // Bottom-up only pays when the whole ideal fits on one accelerator: otherwise S = I \ J
        // cannot fit until J is large, and the top-down walk's memory cut is the better bound.
        // Decided per type: the ideal may fit on one type's accelerators and not on another's.
        bool any_up = false;
        for (int t = 0; t < T; ++t) {
            up_[t] = !t_.up_layers[full_][t].empty() && cost_acc[t] < kInf;
            any_up = any_up || up_[t];
        }
        refresh_bounds();
        if (any_up && !walk_up(id)) return false;
        if (!walk(id)) return false;
        if constexpr (!Typed) {
            // Leaving a device empty: DP[c][a][I] may take DP[c-1][a][I] or DP[c][a-1][I].
            const int k = t_.high[0], k1 = k + 1;
            for (int c = 0; c <= t_.l; ++c) {
                for (int a = 0; a <= k; ++a) {
                    const int layer = c * k1 + a;
                    double v = best_[layer];
                    std::uint32_t pick = pick_[layer];
                    if (layer == t_.top && !full_) v = kInf;  // only the full ideal needs every device
                    if (c > 0 && row[layer - k1] <= v) {
                        v = row[layer - k1];
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
            settle(id, row);
            t_.done[id].store(kDone, std::memory_order_release);
            return true;
        }
        // Leaving a device empty: DP[c][a][I] may take DP[c-1][a][I] or DP[c][a - e_t][I].
        std::uint8_t* row_kind = T > 1 ? t_.kind.data() + static_cast<std::size_t>(id) * layers : nullptr;
        for (int layer = 0; layer < layers; ++layer) {
            double v = best_[layer];
            std::uint32_t pick = pick_[layer];
            std::uint8_t kind = kind_[layer];
            if (layer == t_.top && !full_) v = kInf;  // only the full ideal needs every device
            if (t_.at(layer, T) > 0 && row[layer - t_.cpu_stride] <= v) {
                v = row[layer - t_.cpu_stride];
                pick = static_cast<std::uint32_t>(id) * 2u;
                kind = 0;
            }
            for (int t = 0; t < T; ++t) {
                if (t_.at(layer, t) > 0 && row[layer - t_.stride[t]] <= v) {
                    v = row[layer - t_.stride[t]];
                    pick = static_cast<std::uint32_t>(id) * 2u + 1u;
                    kind = static_cast<std::uint8_t>(t);
                }
            }
            row[layer] = v;
            row_choice[layer] = pick;
            if (row_kind != nullptr) row_kind[layer] = kind;
        }
        settle(id, row);
        t_.done[id].store(kDone, std::memory_order_release);
        return true;
    }

    // With a cutoff: fewest_ = a lower bound on the devices d that a chain split of I of load below
    // the cutoff needs (DP[d][I] < cutoff, whatever the mix of d devices): least(I) / d < cutoff
    // (no device holds more than the cutoff of least time, device_capacity), and without
    // communication as many as any cover J of I needs (Table::inherit, t_.fewest). The sum is
    // deflated by 1e-9 of least(V), far beyond its rounding, so that the bound stays one.
    // Returns false if stopped while waiting for a cover still in flight on another thread.
    bool fewest_devices(std::int64_t id) {
        const double mine = t_.least[static_cast<std::size_t>(id)] - 1e-9 * total_least();
        fewest_ = static_cast<int>(std::min<double>(std::floor(mine / t_.cutoff) + 1.0, t_.devices + 1.0));
        if (!t_.inherit) return true;
        const Lattice& lat = t_.lattice;
        for (std::int64_t e = lat.down_ptr[id]; e < lat.down_ptr[id + 1]; ++e) {
            const std::int64_t child = lat.down_child[e];
            if (child == 0) continue;  // the empty ideal needs no device (and no worker takes it)
            while (t_.done[child].load(std::memory_order_acquire) == 0) {
                if (should_stop()) return false;
                std::this_thread::yield();
            }
            fewest_ = std::max<int>(fewest_, t_.fewest[child]);
        }
        return true;
    }

    // Whether a chain split of max-load below the cutoff may pass through the ideal I (after
    // fewest_devices). Such a split would hold I on the devices of some layer L (at least fewest_
    // of them; not every device unless I is everything) and V \ I on the others, so
    // least(I) < layer_capacity[L] * cutoff and least(V \ I) < rest_capacity[L] * cutoff. (Deflated
    // as in fewest_devices. The same test applied to a sub-ideal J of a live I never cuts the
    // walk: J leaves V \ J = (V \ I) + S to the others and the device of S, and S holds less than
    // that device's capacity.)
    bool live(std::int64_t id) const {
        if (full_) return true;
        const double mine = t_.least[static_cast<std::size_t>(id)] - 1e-9 * total_least();
        const double rest = rest_least(id);
        for (int layer = 0; layer < t_.layers; ++layer) {
            if (t_.layer_devices[layer] >= fewest_ && mine < t_.layer_capacity[layer] * t_.cutoff &&
                rest < t_.rest_capacity[layer] * t_.cutoff) {
                return true;
            }
        }
        return false;
    }

    double total_least() const { return t_.least[static_cast<std::size_t>(t_.count - 1)]; }

    // least(V \ I), deflated as in fewest_devices.
    double rest_least(std::int64_t id) const {
        const double total = total_least();
        return total - t_.least[static_cast<std::size_t>(id)] - 1e-9 * total;
    }

    // With a cutoff, after I's row is final: t_.fewest[I], from the row. At every layer L with
    // least(V \ I) < rest_capacity[L] * cutoff the row is exact wherever DP[L][I] is below the
    // cutoff: a split of I on L below it ends with some J on L less the device of S = I \ J,
    // which leaves less than rest_capacity[L] * cutoff + the capacity of that device (S's least
    // time is below it) to the rest, so J was live and exact in turn. The fewest devices is then
    // at least that of the first layer holding a value below the cutoff or where the row may be
    // inexact; none: more than every device.
    void settle(std::int64_t id, const double* row) {
        if (!(t_.cutoff < kInf) || full_) return;
        const double rest = rest_least(id);
        int fewest = t_.devices + 1;
        for (int layer = 0; layer < t_.layers; ++layer) {
            const int d = t_.layer_devices[layer];
            if (d < fewest_ || d >= fewest) continue;
            if (row[layer] < t_.cutoff || !(rest < t_.rest_capacity[layer] * t_.cutoff)) fewest = d;
        }
        t_.fewest[id] = static_cast<std::int32_t>(fewest);
    }

    void offer_initial(int layer, double v, std::uint32_t code, int type) {
        if (v < best_[layer]) {
            best_[layer] = v;
            pick_[layer] = code;  // sub-ideal 0 (the empty set)
            if constexpr (Typed) kind_[layer] = static_cast<std::uint8_t>(type);
        }
    }

    // bound_[c][a]: an upper bound on the final DP[c][a][I] (every candidate found so far for
    // fewer devices, since a device may stay empty), and never above the cutoff: a larger value
    // belongs to no split below it. A candidate must beat it to matter.
    void refresh_bounds() {
        if constexpr (!Typed) {
            const int k = t_.high[0], k1 = k + 1;
            for (int c = 0; c <= t_.l; ++c) {
                for (int a = 0; a <= k; ++a) {
                    const int layer = c * k1 + a;
                    double v = best_[layer];
                    if (c > 0) v = std::min(v, bound_[layer - k1]);
                    if (a > 0) v = std::min(v, bound_[layer - 1]);
                    bound_[layer] = std::min(v, t_.cutoff);
                }
            }
            refresh_thresholds();
            return;
        }
        for (int layer = 0; layer < t_.layers; ++layer) {
            double v = best_[layer];
            for (int d = 0; d <= t_.T; ++d) {
                if (t_.at(layer, d) > 0) v = std::min(v, bound_[layer - t_.stride[d]]);
            }
            bound_[layer] = std::min(v, t_.cutoff);
        }
        refresh_thresholds();
    }

    // The largest bound a walk layer still has: below it nothing can improve. A run's first layer
    // has the run's largest bound.
    void refresh_thresholds() {
        if constexpr (!Typed) {
            double threshold = -kInf;
            for (const auto& run : t_.acc_runs[full_][up_[0]]) threshold = std::max(threshold, bound_[run.first]);
            acc_threshold_[0] = threshold;
        }
        for (int t = 0; Typed && t < t_.T; ++t) {
            double threshold = -kInf;
            for (const auto& run : t_.acc_runs[full_][2 * t + up_[t]]) threshold = std::max(threshold, bound_[run.first]);
            acc_threshold_[t] = threshold;
        }
        cpu_threshold_ = -kInf;
        for (const auto& run : t_.cpu_runs[full_]) cpu_threshold_ = std::max(cpu_threshold_, bound_[run.first]);
    }

    // A candidate v for `layer`: every layer with at least as many devices of each kind may take it.
    void improve(int layer, double v, std::uint32_t pick, int type) {
        best_[layer] = v;
        pick_[layer] = pick;
        if constexpr (!Typed) {
            const int k = t_.high[0], k1 = k + 1;
            const int c0 = layer / k1, a0 = layer % k1;
            for (int c = c0; c <= t_.l; ++c) {
                for (int a = a0; a <= k; ++a) {
                    double& b = bound_[c * k1 + a];
                    b = std::min(b, v);
                }
            }
        } else {  // an odometer over the box [coordinates of layer, high], dimension 0 fastest
            kind_[layer] = static_cast<std::uint8_t>(type);
            const int dims = t_.T + 1;
            for (int d = 0; d < dims; ++d) low_[d] = at_[d] = t_.at(layer, d);
            int index = layer;
            while (true) {
                double& b = bound_[index];
                b = std::min(b, v);
                int d = 0;
                for (; d < dims; ++d) {
                    if (at_[d] < t_.high[d]) {
                        ++at_[d];
                        index += t_.stride[d];
                        break;
                    }
                    index -= (at_[d] - low_[d]) * t_.stride[d];
                    at_[d] = low_[d];
                }
                if (d == dims) break;
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
    // memory is never tested; S's sums shrink by subtraction, which only rounds the loads. With
    // several accelerator types, it serves the layers (c >= 1, e_t) of the types t that I fits on.
    bool walk_up(std::int64_t id) {
        const Lattice& lat = t_.lattice;
        hold(id);
        const std::uint64_t* mine = lat.members(id);
        stack_.clear();
        stack_.push({0, lat.up_ptr[0], -1, -1, rest_.sums});  // J = {}
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
                    stack_.push({parent, start, -1, v, before});
                } else {
                    rest_.undo_remove(v, before);
                }
            } else {
                const int added = f.removed;
                const Sums before = f.before;
                stack_.pop();
                if (added >= 0) rest_.undo_remove(added, before);
            }
        }
        return true;
    }

    // Offers (I, J) to the layers (c >= 1, e_t) of the walk's types; returns whether a larger J may still help.
    bool evaluate_up(std::int64_t sub_id) {
        ++pairs;
        while (t_.done[sub_id].load(std::memory_order_acquire) == 0) {  // only ideals in flight on another thread
            if (should_stop()) return false;
            std::this_thread::yield();
        }
        // A skipped J says nothing of its supersets (a larger J leaves less to the other devices,
        // so it may be live), unlike the infinite DP it stores: keep growing it.
        if (t_.done[sub_id].load(std::memory_order_relaxed) == kDead) return true;
        const double* sub = t_.value.data() + static_cast<std::size_t>(sub_id) * t_.layers;
        bool alive = false;
        if constexpr (!Typed) {
            const double load = rest_.sums.accelerator_load(t_.options.overlap);
            for (const int layer : t_.up_layers[full_][0]) {
                const double on_cpus = sub[layer - 1];
                if (on_cpus >= bound_[layer]) continue;
                alive = true;
                const double candidate = std::max(on_cpus, load);
                if (candidate < bound_[layer]) improve(layer, candidate, static_cast<std::uint32_t>(sub_id) * 2u + 1u, 0);
            }
            return alive;
        }
        for (int t = 0; t < t_.T; ++t) {
            if (!up_[t]) continue;
            const double load = rest_.sums.accelerator_load(t_.options.overlap, t_.types.speed[t]);
            for (const int layer : t_.up_layers[full_][t]) {
                const double on_cpus = sub[layer - t_.stride[t]];
                if (on_cpus >= bound_[layer]) continue;
                alive = true;
                const double candidate = std::max(on_cpus, load);
                if (candidate < bound_[layer]) {
                    improve(layer, candidate, static_cast<std::uint32_t>(sub_id) * 2u + 1u, t);
                }
            }
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
        stack_.push({id, lat.down_ptr[id], t_.model.n, -1, set_.sums});
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
                    stack_.push({child, lat.down_ptr[child], v, v, before});
                } else {
                    set_.undo_add(v, before);
                }
            } else {
                const int removed = f.removed;
                const Sums before = f.before;
                stack_.pop();
                if (removed >= 0) set_.undo_add(removed, before);
            }
        }
        return true;
    }

    // Offers the pair (I, J) with S = I \ J to every layer; returns whether J's sub-ideals may still help.
    bool evaluate(std::int64_t child) {
        const Sums& s = set_.sums;
        const Types& types = t_.types;
        bool acc_live = false;
        if constexpr (Typed) {
            for (int t = 0; t < t_.T; ++t) {
                live_[t] = s.unsupported == 0 && s.mem <= types.cap[t] && s.acc / types.speed[t] < acc_threshold_[t];
                acc_live = acc_live || live_[t];
            }
        } else {
            acc_live = s.unsupported == 0 && s.mem <= types.cap[0] && s.acc < acc_threshold_[0];
        }
        const bool cpu_live = s.cpu < cpu_threshold_;
        if (!acc_live && !cpu_live) return false;
        ++pairs;
        while (t_.done[child].load(std::memory_order_acquire) == 0) {  // only ideals in flight on another thread
            if (should_stop()) return false;
            std::this_thread::yield();
        }
        const double* sub = t_.value.data() + static_cast<std::size_t>(child) * t_.layers;
        const std::uint32_t code = static_cast<std::uint32_t>(child) * 2u;
        if constexpr (!Typed) {
            if (acc_live) {
                const double load = s.accelerator_load(t_.options.overlap);
                for (const auto& run : t_.acc_runs[full_][up_[0]]) {
                    // bound_ is non-increasing along a run, so the first layer it cannot beat ends the run.
                    for (int layer = run.first; layer <= run.last && load < bound_[layer]; layer += run.step) {
                        const double candidate = std::max(sub[layer - run.previous], load);
                        if (candidate < bound_[layer]) improve(layer, candidate, code + 1u, 0);
                    }
                }
            }
        }
        for (int t = 0; Typed && acc_live && t < t_.T; ++t) {
            if (!live_[t]) continue;
            const double load = s.accelerator_load(t_.options.overlap, types.speed[t]);
            for (const auto& run : t_.acc_runs[full_][2 * t + up_[t]]) {
                // bound_ is non-increasing along a run, so the first layer it cannot beat ends the run.
                for (int layer = run.first; layer <= run.last && load < bound_[layer]; layer += run.step) {
                    const double candidate = std::max(sub[layer - run.previous], load);
                    if (candidate < bound_[layer]) improve(layer, candidate, code + 1u, t);
                }
            }
        }
        if (cpu_live) {
            const double load = s.cpu;
            for (const auto& run : t_.cpu_runs[full_]) {
                for (int layer = run.first; layer <= run.last && load < bound_[layer]; layer += run.step) {
                    const double candidate = std::max(sub[layer - run.previous], load);
                    if (candidate < bound_[layer]) improve(layer, candidate, code, 0);
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
    FixedStack<Frame> stack_;         // a walk's path: the root and at most one frame per unit
    std::vector<double> best_, bound_;
    std::vector<std::uint32_t> pick_;
    std::vector<std::uint8_t> kind_;          // the accelerator type of pick_ (0 for CPU picks)
    std::vector<double> acc_threshold_;       // per type
    double cpu_threshold_ = kInf;
    bool full_ = false;
    int fewest_ = 0;                  // fewest_devices() of the ideal being processed
    std::vector<std::uint8_t> up_;    // per type: the bottom-up walk handles the type's side of layers (c >= 1, e_t)
    std::vector<std::uint8_t> live_;  // per type: evaluate()'s set may still improve a layer on that type
    std::vector<int> low_, at_;       // improve()'s odometer
    std::uint32_t ticks_ = 0;
};

// Fills the table with `threads` workers (the calling thread is the first); records in `out` the
// pairs they tried and the ideals they skipped.
template <bool Typed>
void run_workers(Table& table, int threads, Stopper& stop, Solution& out) {
    std::vector<std::unique_ptr<Worker<Typed>>> workers;
    for (int w = 0; w < threads; ++w) workers.push_back(std::make_unique<Worker<Typed>>(table, w == 0));
    std::atomic<int> running{threads - 1};
    std::mutex error_mutex;
    std::exception_ptr error;
    std::vector<std::thread> helpers;
    for (int w = 1; w < threads; ++w) {
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
    for (const auto& w : workers) {
        out.pairs += w->pairs;
        out.skipped += w->dead_ideals;
    }
}


}  // namespace

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
    check_groups(in.units, in.group_cost, in.group_source, in.group_ptr, in.group_target);
    if (options.accelerators < 0 || options.cpus < 0 || options.accelerators + options.cpus == 0) {
        throw std::invalid_argument("the cluster needs a non-negative number of devices, at least one");
    }
    if (std::isnan(options.memory_cap) || options.memory_cap < 0) {
        throw std::invalid_argument("the memory cap must be non-negative");
    }
    const std::size_t types = options.type_count.size();
    if (types != 0) {
        if (options.type_memory.size() != types || options.type_speed.size() != types) {
            throw std::invalid_argument("type_count, type_memory and type_speed need one value per accelerator type");
        }
        std::int64_t total = 0;
        for (std::size_t t = 0; t < types; ++t) {
            if (options.type_count[t] < 1 || options.type_count[t] > options.accelerators) {
                throw std::invalid_argument("accelerator type " + std::to_string(t) + " needs 1 to k accelerators");
            }
            if (std::isnan(options.type_memory[t]) || options.type_memory[t] < 0) {
                throw std::invalid_argument("accelerator type " + std::to_string(t) + " has a negative or NaN memory");
            }
            if (!(std::isfinite(options.type_speed[t]) && options.type_speed[t] > 0)) {
                throw std::invalid_argument("accelerator type " + std::to_string(t) + " needs a positive finite speed");
            }
            total += options.type_count[t];
        }
        if (total != options.accelerators) {
            throw std::invalid_argument("the accelerator type counts must sum to the number of accelerators");
        }
        if (!in.order.empty()) {
            throw std::invalid_argument("the chain DP (a non-empty order) takes one accelerator type: leave type_count empty");
        }
    }
    const std::vector<std::int64_t> counts =
        types != 0 ? options.type_count : std::vector<std::int64_t>{options.accelerators};
    if (layer_count(counts, options.cpus) > std::numeric_limits<std::int32_t>::max()) {
        throw std::invalid_argument("too many device-count combinations (cpus + 1) * prod(type count + 1) for one table");
    }
    if (!in.sync.empty()) {
        if (in.sync.size() != n) throw std::invalid_argument("sync needs one value per unit, or none");
        for (std::size_t u = 0; u < n; ++u) {
            if (!(std::isfinite(in.sync[u]) && in.sync[u] >= 0)) {
                throw std::invalid_argument("unit " + std::to_string(u) + " has a negative, NaN or infinite sync");
            }
        }
    }
    if (options.replication) {
        if (types != 0 || options.overlap || !in.order.empty()) {
            throw std::invalid_argument("replication takes one accelerator type, no overlap and no order");
        }
        if (options.accelerators > 65535) throw std::invalid_argument("replication takes at most 65535 accelerators");
    }
    if (options.threads < 1) throw std::invalid_argument("threads must be at least 1");
    if (!(options.cutoff > 0)) throw std::invalid_argument("the cutoff must be positive (or infinite)");
    if (options.max_ideals < 1 || options.max_ideals > std::numeric_limits<std::int32_t>::max() / 2) {
        throw std::invalid_argument("max_ideals must be between 1 and 2**30");
    }
}

namespace {

constexpr std::int64_t kSaturated = std::numeric_limits<std::int64_t>::max();

// a * b and a + b for non-negative a and b, saturating at kSaturated.
std::int64_t saturated_product(std::int64_t a, std::int64_t b) {
    return (a != 0 && b > kSaturated / a) ? kSaturated : a * b;
}
std::int64_t saturated_sum(std::int64_t a, std::int64_t b) { return a > kSaturated - b ? kSaturated : a + b; }

}  // namespace

std::int64_t layer_count(const std::vector<std::int64_t>& type_count, int cpus) {
    std::int64_t layers = static_cast<std::int64_t>(cpus) + 1;
    for (const std::int64_t n : type_count) layers = saturated_product(layers, n + 1);
    return layers;
}

std::int64_t memory_estimate(int units, const std::vector<std::int64_t>& type_count, int cpus, std::int64_t ideals,
                             std::int64_t covers) {
    const std::int64_t words = (units + 63) / 64;
    const std::int64_t types = static_cast<std::int64_t>(type_count.size());
    const std::int64_t layers = layer_count(type_count, cpus);
    // Per ideal: members bitset, hash, size (x2), visit/id maps, cover offsets (x3), hash table
    // (at most 4 slots), ideal costs (CPU, least time, and one per accelerator type) by visit and
    // by id, the fewest devices (with a cutoff), DP value + choice (+ the accelerator type of the
    // choice, with several types), done flag.
    const std::int64_t per_layer = types > 1 ? 13 : 12;
    const std::int64_t per_ideal =
        saturated_sum(8 * words + 8 + 8 + 12 + 24 + 16 + 16 * (2 + types) + 4 + 1, saturated_product(per_layer, layers));
    // Per cover: maximal-node list while building, down-cover node + child, up-cover node + parent.
    const std::int64_t per_cover = 20;
    return saturated_sum(saturated_product(ideals, per_ideal), saturated_product(covers, per_cover));
}

std::int64_t memory_estimate(int units, int accelerators, int cpus, std::int64_t ideals, std::int64_t covers) {
    return memory_estimate(units, std::vector<std::int64_t>{accelerators}, cpus, ideals, covers);
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
    const Types types(options);
    const std::size_t T = static_cast<std::size_t>(types.count);
    Lattice lattice;
    std::vector<double> cost_cpu(counted.ideals), cost_acc(static_cast<std::size_t>(counted.ideals) * T),
        least(counted.ideals);
    {
        IdealCosts costs(model, options, types, counted.ideals);
        if (!lattice.build(poset, counted, &costs, stop)) {
            out.stop_reason = stop.reason();
            return out;
        }
        for (std::int64_t d = 0; d < lattice.count; ++d) {
            const std::size_t id = static_cast<std::size_t>(lattice.id_of_visit[d]);
            cost_cpu[id] = costs.cpu[d];
            least[id] = costs.least[d];
            for (std::size_t t = 0; t < T; ++t) cost_acc[id * T + t] = costs.acc[static_cast<std::size_t>(d) * T + t];
        }
        std::vector<std::int64_t>().swap(lattice.id_of_visit);
    }
    out.seconds_ideals = seconds_since(t0);

    if (options.replication) {
        const double cpu_capacity = device_capacity(model, options, types).back();
        return solve_replicated(instance, poset, lattice, options, least, cpu_capacity, stop, std::move(out));
    }
    const auto t1 = Stopper::Clock::now();
    Table table(model, lattice, options, types, std::move(cost_cpu), std::move(cost_acc), std::move(least), stop);
    const bool plain = types.count == 1 && types.speed[0] == 1.0;
    // A chain-like lattice (DPL) has one ideal per size: every ideal waits for the previous one,
    // so a second thread would only spin.
    const bool wide = lattice.count > 4 * (static_cast<std::int64_t>(model.n) + 1) && lattice.count > 256;
    out.threads_used = wide ? options.threads : 1;

    if (plain) {
        run_workers<false>(table, out.threads_used, stop, out);
    } else {
        run_workers<true>(table, out.threads_used, stop, out);
    }
    out.seconds_dp = seconds_since(t1);
    if (stop.stopped()) {
        out.stop_reason = stop.reason();
        return out;
    }

    // Follow the choices back from (all units, l CPUs, k accelerators).
    const std::int64_t full = lattice.count - 1;
    out.value = table.value[static_cast<std::size_t>(full) * table.layers + table.top];
    // A value at or above the cutoff comes from stages the walks were not bound to try in full.
    if (!(out.value < options.cutoff)) {
        out.value = kInf;
        out.outcome = Outcome::infeasible;
        return out;
    }
    // Accelerators are numbered by type: type t's come after those of types 0..t-1.
    std::vector<int> device_of_label(model.n, -1);
    std::vector<int> next_acc(T, 0), left(types.size);
    for (std::size_t t = 1; t < T; ++t) next_acc[t] = next_acc[t - 1] + types.size[t - 1];
    int next_cpu = options.accelerators;
    std::int64_t id = full;
    int c = options.cpus, layer = table.top;
    while (id != 0) {
        const std::size_t at = static_cast<std::size_t>(id) * table.layers + layer;
        const std::uint32_t pick = table.choice[at];
        const int type = T > 1 ? table.kind[at] : 0;
        const std::int64_t sub = pick >> 1;
        const bool on_acc = (pick & 1u) != 0;
        if (sub != id) {
            const int device = on_acc ? next_acc[type]++ : next_cpu++;
            const std::uint64_t* mine = lattice.members(id);
            const std::uint64_t* theirs = lattice.members(sub);
            for (int w = 0; w < lattice.words; ++w) {
                for (std::uint64_t word = mine[w] & ~theirs[w]; word != 0; word &= word - 1) {
                    device_of_label[(w << 6) + __builtin_ctzll(word)] = device;
                }
            }
        }
        if (on_acc) {
            left[type] -= 1;
            layer -= table.stride[type];
        } else {
            c -= 1;
            layer -= table.cpu_stride;
        }
        if (left[type] < 0 || c < 0) throw std::logic_error("the DP's choices use more devices than exist");
        id = sub;
    }
    out.device.assign(model.n, -1);
    for (int label = 0; label < model.n; ++label) out.device[poset.node_of(label)] = device_of_label[label];
    out.outcome = Outcome::optimal;
    return out;
}

}  // namespace exactplace
