#include "path.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>
#include <tuple>

#include "csr.hpp"
#include "groups.hpp"
#include "ideals.hpp"

namespace exactplace {

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr int kMaxPaths = 32;  // paths are a bitmask per unit

double seconds_since(Stopper::Clock::time_point start) {
    return std::chrono::duration<double>(Stopper::Clock::now() - start).count();
}

void check_instance(const PathInstance& in) {
    const auto n = static_cast<std::size_t>(in.units);
    if (in.units < 0) throw std::invalid_argument("the number of units must be non-negative");
    if (in.cpu_time.size() != n || in.acc_time.size() != n || in.memory.size() != n) {
        throw std::invalid_argument("cpu_time, acc_time and memory need one value per unit");
    }
    for (std::size_t u = 0; u < n; ++u) {
        const bool bad = !(std::isfinite(in.cpu_time[u]) && in.cpu_time[u] >= 0) ||
                         !(std::isfinite(in.memory[u]) && in.memory[u] >= 0) ||
                         std::isnan(in.acc_time[u]) || in.acc_time[u] < 0;
        if (bad) throw std::invalid_argument("unit " + std::to_string(u) + " has a negative, NaN or infinite value");
    }
    if (std::isnan(in.memory_cap) || in.memory_cap < 0) throw std::invalid_argument("the memory cap must be non-negative");
    if (in.accelerators < 0) throw std::invalid_argument("the number of accelerators must be non-negative");
    const std::size_t groups = in.group_cost.size();
    check_groups(in.units, in.group_cost, in.group_source, in.group_ptr, in.group_target);
    if (in.group_stuck.size() != groups || in.group_sink_memory.size() != groups) {
        throw std::invalid_argument("group_stuck and group_sink_memory need one value per group");
    }
    for (std::size_t g = 0; g < groups; ++g) {
        if (std::isnan(in.group_sink_memory[g])) {
            throw std::invalid_argument("group " + std::to_string(g) + " has a NaN sink memory");
        }
    }
    if (in.path_ptr.empty() || in.path_ptr[0] != 0 ||
        in.path_ptr.back() != static_cast<std::int64_t>(in.path_node.size())) {
        throw std::invalid_argument("path_ptr does not describe the paths");
    }
    const std::size_t paths = in.path_ptr.size() - 1;
    if (paths == 0 || paths > kMaxPaths) throw std::invalid_argument("between 1 and 32 paths are needed");
    for (std::size_t p = 0; p < paths; ++p) {
        if (in.path_ptr[p + 1] < in.path_ptr[p]) throw std::invalid_argument("path_ptr must be non-decreasing");
    }
    for (const auto v : in.path_node) {
        if (v < 0 || v >= in.units) throw std::invalid_argument("a path names a unit outside 0..units-1");
    }
}

// The instance by the poset's topological labels.
struct PathModel {
    int n = 0, paths = 0;
    double cap = 0.0;
    std::vector<double> cpu, acc, mem;
    std::vector<std::uint32_t> on_path;  // bit p: the unit lies on path p
    std::vector<double> cost, sink_memory;
    std::vector<int> source, degree;     // source label, number of distinct targets
    std::vector<std::uint8_t> stuck;
    std::vector<int> out_ptr, out_group;  // groups whose source is the unit
    std::vector<int> in_ptr, in_group;    // groups that have the unit as a target (each once)

    PathModel(const PathInstance& in, const Poset& poset)
        : n(in.units), paths(static_cast<int>(in.path_ptr.size()) - 1), cap(in.memory_cap) {
        cpu.resize(n);
        acc.resize(n);
        mem.resize(n);
        on_path.assign(n, 0);
        for (int label = 0; label < n; ++label) {
            const int u = poset.node_of(label);
            cpu[label] = in.cpu_time[u];
            acc[label] = in.acc_time[u];
            mem[label] = in.memory[u];
        }
        for (int p = 0; p < paths; ++p) {
            for (std::int64_t i = in.path_ptr[p]; i < in.path_ptr[p + 1]; ++i) {
                on_path[poset.label_of(static_cast<int>(in.path_node[i]))] |= std::uint32_t{1} << p;
            }
        }
        const std::size_t groups = in.group_cost.size();
        cost = in.group_cost;
        sink_memory = in.group_sink_memory;
        stuck = in.group_stuck;
        source.resize(groups);
        degree.resize(groups);
        std::vector<std::pair<int, int>> outs, ins;
        std::vector<int> targets;
        for (std::size_t g = 0; g < groups; ++g) {
            source[g] = poset.label_of(static_cast<int>(in.group_source[g]));
            outs.emplace_back(source[g], static_cast<int>(g));
            targets.clear();
            for (std::int64_t t = in.group_ptr[g]; t < in.group_ptr[g + 1]; ++t) {
                targets.push_back(poset.label_of(static_cast<int>(in.group_target[t])));
            }
            std::sort(targets.begin(), targets.end());
            targets.erase(std::unique(targets.begin(), targets.end()), targets.end());
            degree[g] = static_cast<int>(targets.size());
            for (const int t : targets) {
                if (t <= source[g]) throw std::invalid_argument("a group's target does not follow its source");
                ins.emplace_back(t, static_cast<int>(g));
            }
        }
        pairs_to_csr(outs, n, out_ptr, out_group);
        pairs_to_csr(ins, n, in_ptr, in_group);
    }

};

// The sums of a subgraph S = J \ I, grown by units in increasing label order and shrunk in
// reverse. A group's source enters S before its targets, and a target outside S when the
// source is outside stays outside, so each counter only moves one way along a branch.
struct Sums {
    double used = 0.0, compute = 0.0, copy_in = 0.0;
    double out_all = 0.0;     // every group whose source is in S
    double out_closed = 0.0;  // those of them not copied out: every target in S, no sink to absorb
};

class Subgraph {
public:
    explicit Subgraph(const PathModel& model)
        : m_(model), inside_(model.n, 0), entering_(model.cost.size(), 0), targets_in_(model.cost.size(), 0),
          on_path_(model.paths, 0) {}

    void add(int v) {
        inside_[v] = 1;
        sums.used += m_.mem[v];
        sums.compute += m_.acc[v];
        for (std::uint32_t bits = m_.on_path[v]; bits != 0; bits &= bits - 1) ++on_path_[__builtin_ctz(bits)];
        for (int i = m_.in_ptr[v]; i < m_.in_ptr[v + 1]; ++i) {
            const int g = m_.in_group[i];
            if (!inside_[m_.source[g]]) {
                if (entering_[g]++ == 0) sums.copy_in += m_.cost[g];
            } else if (++targets_in_[g] == m_.degree[g]) {
                close(g);
            }
        }
        for (int i = m_.out_ptr[v]; i < m_.out_ptr[v + 1]; ++i) {
            const int g = m_.out_group[i];
            sums.out_all += m_.cost[g];
            if (m_.degree[g] == 0) close(g);
        }
    }

    // Reverse add(v), v being the unit added last; `before` and `options` as they were before it.
    void undo(int v, const Sums& before, std::size_t options) {
        for (int i = m_.in_ptr[v]; i < m_.in_ptr[v + 1]; ++i) {
            const int g = m_.in_group[i];
            if (!inside_[m_.source[g]]) {
                --entering_[g];
            } else {
                --targets_in_[g];
            }
        }
        for (std::uint32_t bits = m_.on_path[v]; bits != 0; bits &= bits - 1) --on_path_[__builtin_ctz(bits)];
        inside_[v] = 0;
        sums = before;
        options_.resize(options);
    }

    bool meets(int path) const { return on_path_[path] > 0; }
    std::size_t options() const { return options_.size(); }

    // Inputs copied in + compute + outputs copied out, less the best fractional absorption of
    // trivial sinks in the memory left (the Python DP's rule, step by step).
    double load() {
        double out = sums.out_all - sums.out_closed;
        if (!options_.empty()) {
            double room = m_.cap - sums.used;
            fitting_.clear();
            for (const int g : options_) {
                if (m_.sink_memory[g] <= room) fitting_.push_back(g);
            }
            const auto ratio = [this](int g) { return m_.sink_memory[g] > 0 ? m_.cost[g] / m_.sink_memory[g] : kInf; };
            std::stable_sort(fitting_.begin(), fitting_.end(), [&ratio](int a, int b) { return ratio(a) > ratio(b); });
            for (const int g : fitting_) {
                const double size = m_.sink_memory[g];
                const double take = size <= room ? 1.0 : room / size;
                out -= m_.cost[g] * take;
                room -= size * take;
            }
        }
        return sums.copy_in + sums.compute + out;
    }

    Sums sums;

private:
    // Every target of g is in S: copied out only to reach its sinks on a CPU, if it has some.
    void close(int g) {
        if (m_.stuck[g]) return;
        if (m_.sink_memory[g] >= 0) {
            options_.push_back(g);
        } else {
            sums.out_closed += m_.cost[g];
        }
    }

    const PathModel& m_;
    std::vector<std::uint8_t> inside_;
    std::vector<int> entering_, targets_in_;  // per group: targets in S with the source outside / inside
    std::vector<int> on_path_;                // per path: units of S on it
    std::vector<int> options_, fitting_;      // closed groups with absorbable sinks
};

// The DP table and the walk that fills it. Cell [id][p][j]: the least charge along path p of
// a chain from {} to the ideal with at most j subgraphs, and among such chains the least work
// off the path (a CPU node's time, a subgraph's load where the path does not meet it): the
// tie-break that makes the chain a good placement, never changing the charge. Cells are
// compared lexicographically; an ideal's row is final once every smaller id has been
// processed; processing it takes the row's running minimum over j, then relaxes its bigger
// ideals from the cells where the row still decreases (a cell equal to the one before it is
// dominated: the same charge and work with fewer subgraphs). Relaxing by min commutes with
// adding a charge (rounding is monotone), so the final charge is the same float as the least
// charge over every chain, however the minima were taken.
class Walk {
    const PathModel& m_;
    const Lattice& lat_;
    const int k_, k1_;
    const bool cpus_;
    Stopper& stop_;
    const std::size_t row_size_;

public:
    Walk(const PathModel& model, const Lattice& lattice, int accelerators, bool cpus, Stopper& stop)
        : m_(model), lat_(lattice), k_(accelerators), k1_(accelerators + 1), cpus_(cpus), stop_(stop),
          row_size_(static_cast<std::size_t>(model.paths) * (accelerators + 1)),
          value(static_cast<std::size_t>(lattice.count) * row_size_, kInf),
          work(static_cast<std::size_t>(lattice.count) * row_size_, kInf),
          set_(model), frames_(static_cast<std::size_t>(model.n) + 1), lo_(model.paths), hi_(model.paths) {
        std::fill(value.begin(), value.begin() + static_cast<std::ptrdiff_t>(row_size_), 0.0);
        std::fill(work.begin(), work.begin() + static_cast<std::ptrdiff_t>(row_size_), 0.0);
    }

    // Fills the table, ideals in increasing id (every sub-ideal first); false if stopped.
    bool run() {
        for (std::int64_t id = 0; id < lat_.count; ++id) {
            if (!process(id)) return false;
        }
        return true;
    }

    std::size_t row(std::int64_t id, int path) const {
        return static_cast<std::size_t>(id) * row_size_ + static_cast<std::size_t>(path) * k1_;
    }

    // Whether (charge, off) is lexicographically below (current, current_off).
    static bool better(double charge, double off, double current, double current_off) {
        return charge < current || (charge == current && off < current_off);
    }

    std::int64_t pairs = 0;
    std::vector<double> value;  // [id][path][at most j subgraphs]: the least charge
    std::vector<double> work;   // the same cells: the least work off the path at that charge

private:
    struct Frame {
        std::int64_t cursor, end;
        int added;  // the unit added to get here; -1 at the root
        std::size_t options;
        Sums before;
    };

    bool process(std::int64_t id) {
        bool any = false, any_free = false;  // a finite cell; one with an accelerator left
        for (int p = 0; p < m_.paths; ++p) {
            double* cell = value.data() + row(id, p);
            double* off = work.data() + row(id, p);
            for (int j = 1; j <= k_; ++j) {
                if (!better(cell[j], off[j], cell[j - 1], off[j - 1])) {
                    cell[j] = cell[j - 1];
                    off[j] = off[j - 1];
                }
            }
            int lo = 0;
            while (lo <= k_ && !(cell[lo] < kInf)) ++lo;
            int hi = lo;
            for (int j = lo + 1; j <= k_; ++j) {
                if (better(cell[j], off[j], cell[j - 1], off[j - 1])) hi = j;
            }
            lo_[p] = lo;
            hi_[p] = hi;
            any = any || lo <= k_;
            any_free = any_free || lo < k_;
        }
        if (!any) return true;
        if (cpus_) {  // one CPU node
            for (std::int64_t e = lat_.up_ptr[id]; e < lat_.up_ptr[id + 1]; ++e) {
                const int v = lat_.up_node[e];
                const std::int64_t bigger = lat_.up_parent[e];
                for (int p = 0; p < m_.paths; ++p) {
                    const bool on = (m_.on_path[v] >> p) & 1u;
                    relax(row(id, p), row(bigger, p), lo_[p], hi_[p], on ? m_.cpu[v] : 0.0, on ? 0.0 : m_.cpu[v]);
                }
            }
            if (stop_.check_owner(ticks_)) return false;
        }
        if (!any_free) return true;
        return walk(id);
    }

    // Cells to + j = min(cell to + j, cell from + j + (charge, off)) for j in [lo, hi], without
    // branches (the two rows are of different ideals: no aliasing), so the loop vectorizes.
    void relax(std::size_t from, std::size_t to, int lo, int hi, double charge, double off) {
        const double* __restrict fv = value.data() + from;
        const double* __restrict fw = work.data() + from;
        double* __restrict tv = value.data() + to;
        double* __restrict tw = work.data() + to;
        for (int j = lo; j <= hi; ++j) {
            const double candidate = fv[j] + charge, candidate_off = fw[j] + off;
            const double v = tv[j], w = tw[j];
            const bool take = (candidate < v) | ((candidate == v) & (candidate_off < w));
            tv[j] = take ? candidate : v;
            tw[j] = take ? candidate_off : w;
        }
    }

    // One accelerator subgraph: every bigger ideal whose difference fits the memory, each
    // reached once by adding units in increasing label order.
    bool walk(std::int64_t id) {
        std::size_t depth = 0;
        frames_[0] = {lat_.up_ptr[id], lat_.up_ptr[id + 1], -1, set_.options(), set_.sums};
        while (true) {
            Frame& f = frames_[depth];
            if (f.cursor < f.end) {
                const std::int64_t e = f.cursor++;
                const int v = lat_.up_node[e];
                if (set_.sums.used + m_.mem[v] > m_.cap) continue;
                const std::int64_t bigger = lat_.up_parent[e];
                Frame& next = frames_[depth + 1];
                next.before = set_.sums;
                next.options = set_.options();
                next.added = v;
                set_.add(v);
                ++pairs;
                if (stop_.check_owner(ticks_)) {
                    for (std::size_t d = depth + 1; d > 0; --d) {
                        set_.undo(frames_[d].added, frames_[d].before, frames_[d].options);
                    }
                    return false;
                }
                offer(id, bigger);
                std::int64_t cursor = lat_.up_ptr[bigger];
                next.end = lat_.up_ptr[bigger + 1];
                while (cursor < next.end && lat_.up_node[cursor] <= v) ++cursor;  // short lists: a scan
                next.cursor = cursor;
                ++depth;
            } else {
                if (depth == 0) break;
                set_.undo(f.added, f.before, f.options);
                --depth;
            }
        }
        return true;
    }

    // The step from `id` to `bigger` on an accelerator, for every path.
    void offer(std::int64_t id, std::int64_t bigger) {
        const double load = set_.load();
        for (int p = 0; p < m_.paths; ++p) {
            const bool on = set_.meets(p);
            if (on && std::isinf(load)) continue;  // a unit that cannot run on an accelerator
            const int last = std::min(hi_[p], k_ - 1);
            if (lo_[p] <= last) relax(row(id, p), row(bigger, p) + 1, lo_[p], last, on ? load : 0.0, on ? 0.0 : load);
        }
    }

    Subgraph set_;
    std::vector<Frame> frames_;  // the walk's stack, by depth
    std::vector<int> lo_, hi_;   // per path: the cells of the ideal being processed worth extending
    std::uint32_t ticks_ = 0;
};

// A chain reaching a final cell, followed back from the full ideal. At (J, j) some step into J
// set cell j exactly (once j is lowered to the fewest subgraphs with that cell): a CPU step
// from J \ {v} or a subgraph from a sub-ideal within the memory, whose charge and work are
// recomputed from scratch (a pair's load does not depend on how the walk reached it, so the
// sums are the same floats). The first such step found is taken.
class Backtrack {
public:
    Backtrack(const PathModel& model, const Lattice& lattice, const Walk& walk, bool cpus, Stopper& stop)
        : m_(model), lat_(lattice), walk_(walk), cpus_(cpus), stop_(stop), set_(model) {}

    // step_of_label and kinds: each unit's step and each step's kind, numbered from the last.
    // False if stopped, or if no step fits somewhere (a bug); the caller then returns no chain,
    // the value stands.
    bool follow(int path, std::int64_t full, int used, std::vector<std::int32_t>& step_of_label,
                std::vector<std::uint8_t>& kinds) {
        std::int64_t id = full;
        int j = used;
        while (id != 0) {
            const double* cell = walk_.value.data() + walk_.row(id, path);
            const double* off = walk_.work.data() + walk_.row(id, path);
            while (j > 0 && cell[j - 1] == cell[j] && off[j - 1] == off[j]) --j;
            std::int64_t sub = -1;
            for (std::int64_t e = lat_.down_ptr[id]; cpus_ && e < lat_.down_ptr[id + 1] && sub < 0; ++e) {
                const int v = lat_.down_node[e];
                const bool on = (m_.on_path[v] >> path) & 1u;
                const std::size_t below = walk_.row(lat_.down_child[e], path) + j;
                if (walk_.value[below] + (on ? m_.cpu[v] : 0.0) == cell[j] &&
                    walk_.work[below] + (on ? 0.0 : m_.cpu[v]) == off[j]) {
                    sub = lat_.down_child[e];
                }
            }
            const bool on_acc = sub < 0;
            if (on_acc && j > 0) sub = subgraph_step(path, id, j, cell[j], off[j]);
            if (sub < 0) return false;
            const std::uint64_t* mine = lat_.members(id);
            const std::uint64_t* theirs = lat_.members(sub);
            for (int w = 0; w < lat_.words; ++w) {
                for (std::uint64_t word = mine[w] & ~theirs[w]; word != 0; word &= word - 1) {
                    step_of_label[(w << 6) + __builtin_ctzll(word)] = static_cast<std::int32_t>(kinds.size());
                }
            }
            kinds.push_back(on_acc ? 1 : 0);
            if (on_acc) --j;
            id = sub;
        }
        return true;
    }

private:
    // A sub-ideal of `id` whose subgraph step reaches (target, target_off) from cell j - 1; -1 if
    // none. Sub-ideals are reached once each by removing units in decreasing label order.
    std::int64_t subgraph_step(int path, std::int64_t id, int j, double target, double target_off) {
        struct Frame {
            std::int64_t ideal, cursor;
            int limit;  // only units with a smaller label may be removed
            double used;
        };
        std::vector<Frame> stack{{id, lat_.down_ptr[id], m_.n, 0.0}};
        while (!stack.empty()) {
            Frame& f = stack.back();
            if (f.cursor < lat_.down_ptr[f.ideal + 1] && lat_.down_node[f.cursor] < f.limit) {
                const int v = lat_.down_node[f.cursor];
                const std::int64_t child = lat_.down_child[f.cursor];
                ++f.cursor;
                // S only grows along a branch. Summed in another order than the walk's, so cut
                // with a margin; step() applies the walk's own test.
                if (f.used + m_.mem[v] > m_.cap * (1 + 1e-9)) continue;
                if (stop_.check_owner(ticks_)) return -1;
                const Frame next{child, lat_.down_ptr[child], v, f.used + m_.mem[v]};
                removed_.resize(stack.size() - 1);
                removed_.push_back(v);
                const std::size_t below = walk_.row(child, path) + j - 1;
                if (walk_.value[below] < kInf) {
                    const auto [on, load, fits] = step(path, removed_);
                    if (fits && !(on && std::isinf(load)) && walk_.value[below] + (on ? load : 0.0) == target &&
                        walk_.work[below] + (on ? 0.0 : load) == target_off) {
                        return child;
                    }
                }
                stack.push_back(next);
            } else {
                stack.pop_back();
            }
        }
        return -1;
    }

    // Whether the subgraph `removed` (labels, decreasing) meets the path, its load, and whether
    // the walk took it (its memory, summed in increasing label order, within the cap).
    std::tuple<bool, double, bool> step(int path, const std::vector<int>& removed) {
        saved_.clear();
        for (auto v = removed.rbegin(); v != removed.rend(); ++v) {
            saved_.push_back({set_.sums, set_.options()});
            set_.add(*v);
        }
        const std::tuple<bool, double, bool> result{set_.meets(path), set_.load(), set_.sums.used <= m_.cap};
        for (std::size_t i = removed.size(); i > 0; --i) {
            set_.undo(removed[removed.size() - i], saved_[i - 1].first, saved_[i - 1].second);
        }
        return result;
    }

    const PathModel& m_;
    const Lattice& lat_;
    const Walk& walk_;
    const bool cpus_;  // CPU steps allowed
    Stopper& stop_;
    std::uint32_t ticks_ = 0;
    Subgraph set_;
    std::vector<int> removed_;
    std::vector<std::pair<Sums, std::size_t>> saved_;
};

}  // namespace

std::int64_t path_memory_estimate(int units, int accelerators, int paths, std::int64_t ideals, std::int64_t covers) {
    const std::int64_t words = (units + 63) / 64;
    // Per ideal, the lattice: members bitset, hash, size (x2), visit/id maps, cover offsets
    // (x3), hash table (at most 4 slots), fill offsets; the DP: a charge and a work per path
    // and number of subgraphs. Per cover: maximal-node list, down-cover and up-cover pairs.
    const std::int64_t per_ideal =
        8 * words + 8 + 8 + 12 + 24 + 16 + 8 + 16 * static_cast<std::int64_t>(paths) * (accelerators + 1);
    const std::int64_t per_cover = 20;
    return ideals * per_ideal + covers * per_cover + 4096;
}

PathResult path_bound(const PathInstance& instance, const PathOptions& options, Stopper& stop) {
    check_instance(instance);
    if (options.max_ideals < 1 || options.max_ideals > std::numeric_limits<std::int32_t>::max() / 2) {
        throw std::invalid_argument("max_ideals must be between 1 and 2**30");
    }
    PathResult out;
    const int paths = static_cast<int>(instance.path_ptr.size()) - 1;
    const auto t0 = Stopper::Clock::now();
    const Poset poset(instance.units, instance.edge_src, instance.edge_dst);
    const PathModel model(instance, poset);
    const IdealCount counted = count_ideals(poset, options.max_ideals, stop);
    out.ideals = counted.ideals;
    out.covers = counted.covers;
    const auto stopped = [&out, &stop] {
        out.status = stop.reason() == StopReason::time ? PathStatus::time : PathStatus::interrupt;
        return out;
    };
    if (counted.exceeded) {
        out.status = PathStatus::too_many_ideals;
        return out;
    }
    if (counted.stopped) return stopped();
    out.bytes = path_memory_estimate(instance.units, instance.accelerators, paths, counted.ideals, counted.covers);
    if (out.bytes > options.memory_budget) {
        out.status = PathStatus::over_budget;
        return out;
    }
    Lattice lattice;
    if (!lattice.build(poset, counted, nullptr, stop)) return stopped();
    std::vector<std::int64_t>().swap(lattice.id_of_visit);
    out.seconds_ideals = seconds_since(t0);

    const auto t1 = Stopper::Clock::now();
    Walk walk(model, lattice, instance.accelerators, instance.cpus, stop);
    const bool finished = walk.run();
    out.pairs = walk.pairs;
    out.seconds_dp = seconds_since(t1);
    if (!finished) return stopped();

    // Each path's least charge, and a chain that reaches it.
    const int k = instance.accelerators;
    const std::int64_t full = lattice.count - 1;
    out.values.assign(paths, kInf);
    out.step_of_unit.resize(paths);
    out.step_on_accelerator.resize(paths);
    out.has_chain.assign(paths, 0);
    Backtrack backtrack(model, lattice, walk, instance.cpus, stop);
    for (int p = 0; p < paths; ++p) {
        const double* last = walk.value.data() + walk.row(full, p);
        out.values[p] = last[k];  // rows are non-increasing in the number of subgraphs
        if (!(out.values[p] < kInf)) continue;
        std::vector<std::int32_t> step_of_label(model.n, -1);
        std::vector<std::uint8_t> kinds;
        if (!backtrack.follow(p, full, k, step_of_label, kinds)) continue;  // no chain: none returned
        // Steps were numbered from the last; number them from the first.
        const auto steps = static_cast<std::int32_t>(kinds.size());
        std::reverse(kinds.begin(), kinds.end());
        out.step_of_unit[p].assign(model.n, -1);
        for (int label = 0; label < model.n; ++label) {
            out.step_of_unit[p][poset.node_of(label)] = steps - 1 - step_of_label[label];
        }
        out.step_on_accelerator[p] = std::move(kinds);
        out.has_chain[p] = 1;
    }
    out.status = PathStatus::done;
    return out;
}

}  // namespace exactplace
