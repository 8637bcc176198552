// The max-load DP with replicated accelerator stages (dp.hpp, Options::replication), apart from
// the plain DP of dp.cpp (dp_model.hpp says why).
#include <algorithm>
#include <cstdint>
#include <stdexcept>
#include <utility>
#include <vector>

#include "dp_model.hpp"

namespace exactplace {

namespace {

// The DP with replicated accelerator stages (Options::replication, dp.hpp): one thread, one
// accelerator type, every sub-ideal J of each ideal I reached once by the top-down walk (units
// removed in decreasing label order), with S = I \ J's sums kept by a SetCost and its sync alongside.
// A branch is cut when S can improve no layer any more: its compute, memory, unsupported units and
// sync only grow along a branch (communication may shrink, so the accelerator cut uses compute
// alone: with at most `a` replicas a layer (c, a) sees a load of at least acc(S) / a).
class ReplicatedDP {
public:
    // `sync`: per unit label (empty: none).
    ReplicatedDP(const Model& model, std::vector<double> sync, const Lattice& lattice, const Options& options,
                 const std::vector<double>& least, double cpu_capacity, Stopper& stop)
        : model_(model), sync_of_(std::move(sync)), lattice_(lattice), least_(least), cpu_capacity_(cpu_capacity),
          stop_(stop), k_(options.accelerators), l_(options.cpus),
          k1_(k_ + 1), layers_((l_ + 1) * k1_), cap_(options.memory_cap), cutoff_(options.cutoff), set_(model),
          stack_(static_cast<std::size_t>(model.n) + 1), bound_(layers_),
          value(static_cast<std::size_t>(lattice.count) * layers_, kInf),
          choice(static_cast<std::size_t>(lattice.count) * layers_, 0),
          reps(static_cast<std::size_t>(lattice.count) * layers_, 0) {}

    // Returns false if stopped.
    bool run() {
        std::fill(value.begin(), value.begin() + layers_, 0.0);  // the empty ideal costs nothing anywhere
        for (std::int64_t id = 1; id < lattice_.count; ++id) {
            double* row = value.data() + static_cast<std::size_t>(id) * layers_;
            row_ = row;
            row_choice_ = choice.data() + static_cast<std::size_t>(id) * layers_;
            row_reps_ = reps.data() + static_cast<std::size_t>(id) * layers_;
            if (!live(id)) {  // no split below the cutoff uses I: its row stays infinite
                ++skipped;
                continue;
            }
            refresh();
            if (!walk(id)) return false;
            // Leaving a device empty: DP[c][a][I] may take DP[c-1][a][I] or DP[c][a-1][I].
            for (int c = 0; c <= l_; ++c) {
                for (int a = 0; a <= k_; ++a) {
                    const int layer = c * k1_ + a;
                    if (c > 0 && row[layer - k1_] <= row[layer]) {
                        row[layer] = row[layer - k1_];
                        row_choice_[layer] = static_cast<std::uint32_t>(id) * 2u;
                        row_reps_[layer] = 0;
                    }
                    if (a > 0 && row[layer - 1] <= row[layer]) {
                        row[layer] = row[layer - 1];
                        row_choice_[layer] = static_cast<std::uint32_t>(id) * 2u + 1u;
                        row_reps_[layer] = 1;
                    }
                }
            }
        }
        return true;
    }

    int layers() const { return layers_; }

private:
    struct Frame {
        std::int64_t ideal, cursor;
        int limit, removed;
        Sums before;
        double sync_before;
    };

    // Whether a split of max-load below the cutoff may pass through the ideal I (dp.cpp's
    // Worker::live with device counts): it would hold I on a accelerators (replicas counted) and
    // c CPUs and V \ I on the others, and a stage on r replicas holds less than r times the cutoff
    // of least time (its load is at least acc(S) / r), a CPU less than cpu_capacity times it. So
    // least(I) < (a + c cpu_capacity) cutoff and least(V \ I) < (k - a + (l - c) cpu_capacity)
    // cutoff for some (c, a). Deflated by 1e-9 of least(V), far beyond rounding, as in dp.cpp.
    bool live(std::int64_t id) const {
        if (!(cutoff_ < kInf)) return true;
        const double total = least_[static_cast<std::size_t>(lattice_.count - 1)];
        const double mine = least_[static_cast<std::size_t>(id)] - 1e-9 * total;
        const double rest = total - least_[static_cast<std::size_t>(id)] - 1e-9 * total;
        for (int c = 0; c <= l_; ++c) {
            for (int a = 0; a <= k_; ++a) {
                if (mine < (a + c * cpu_capacity_) * cutoff_ && rest < (k_ - a + (l_ - c) * cpu_capacity_) * cutoff_) {
                    return true;
                }
            }
        }
        return false;
    }

    // bound_[c][a]: the best value found so far for at most c CPUs and a accelerators, at most the
    // cutoff (Options::cutoff: only splits below it are searched, as in dp.cpp; rows of values at
    // or above it may be inexact, and a split through such a row is at or above it too); the cut
    // thresholds follow from it.
    void refresh() {
        double acc_threshold = -kInf, cpu_threshold = -kInf;
        for (int c = 0; c <= l_; ++c) {
            for (int a = 0; a <= k_; ++a) {
                const int layer = c * k1_ + a;
                double v = std::min(row_[layer], cutoff_);
                if (c > 0) v = std::min(v, bound_[layer - k1_]);
                if (a > 0) v = std::min(v, bound_[layer - 1]);
                bound_[layer] = v;
                if (a > 0) acc_threshold = std::max(acc_threshold, v * a);
                if (c > 0) cpu_threshold = std::max(cpu_threshold, v);
            }
        }
        acc_threshold_ = acc_threshold;
        cpu_threshold_ = cpu_threshold;
    }

    bool walk(std::int64_t id) {
        stack_.clear();
        sync_ = 0.0;
        stack_.push({id, lattice_.down_ptr[id], model_.n, -1, set_.sums, 0.0});
        while (!stack_.empty()) {
            if (stop_.check_owner(ticks_)) return false;
            Frame& f = stack_.back();
            if (f.cursor < lattice_.down_ptr[f.ideal + 1] && lattice_.down_node[f.cursor] < f.limit) {
                const int v = lattice_.down_node[f.cursor];
                const std::int64_t child = lattice_.down_child[f.cursor];
                ++f.cursor;
                const Sums before = set_.sums;
                const double sync_before = sync_;
                set_.add(v);
                if (!sync_of_.empty()) sync_ += sync_of_[v];
                if (evaluate(child)) {
                    stack_.push({child, lattice_.down_ptr[child], v, v, before, sync_before});
                } else {
                    set_.undo_add(v, before);
                    sync_ = sync_before;
                }
            } else {
                const int removed = f.removed;
                const Sums before = f.before;
                const double sync_before = f.sync_before;
                stack_.pop();
                if (removed >= 0) {
                    set_.undo_add(removed, before);
                    sync_ = sync_before;
                }
            }
        }
        return true;
    }

    // Offers S = I \ J (J = `child`) to every layer; returns whether J's sub-ideals may still help.
    bool evaluate(std::int64_t child) {
        const Sums& s = set_.sums;
        const bool acc_live = s.unsupported == 0 && s.mem <= cap_ && s.acc < acc_threshold_;
        const bool cpu_live = l_ > 0 && s.cpu < cpu_threshold_;
        if (!acc_live && !cpu_live) return false;
        ++pairs;
        const double* sub = value.data() + static_cast<std::size_t>(child) * layers_;
        const std::uint32_t code = static_cast<std::uint32_t>(child) * 2u;
        bool improved = false;
        if (acc_live) {
            const double base = s.acc + s.comm;
            for (int r = 1; r <= k_; ++r) {
                const double load = (base + sync_ * (r - 1) / r) / r;
                for (int c = 0; c <= l_; ++c) {
                    for (int a = r; a <= k_; ++a) {
                        const int layer = c * k1_ + a;
                        const double candidate = std::max(sub[layer - r], load);
                        if (candidate < row_[layer]) {
                            row_[layer] = candidate;
                            row_choice_[layer] = code + 1u;
                            row_reps_[layer] = static_cast<std::uint16_t>(r);
                            improved = true;
                        }
                    }
                }
            }
        }
        if (cpu_live) {
            for (int c = 1; c <= l_; ++c) {
                for (int a = 0; a <= k_; ++a) {
                    const int layer = c * k1_ + a;
                    const double candidate = std::max(sub[layer - k1_], s.cpu);
                    if (candidate < row_[layer]) {
                        row_[layer] = candidate;
                        row_choice_[layer] = code;
                        row_reps_[layer] = 0;
                        improved = true;
                    }
                }
            }
        }
        if (improved) refresh();
        return true;
    }

    const Model& model_;
    const std::vector<double> sync_of_;
    const Lattice& lattice_;
    const std::vector<double>& least_;  // by id
    const double cpu_capacity_;
    Stopper& stop_;
    const int k_, l_, k1_, layers_;
    const double cap_, cutoff_;
    SetCost set_;
    double sync_ = 0.0;
    FixedStack<Frame> stack_;
    std::vector<double> bound_;
    double acc_threshold_ = kInf, cpu_threshold_ = kInf;
    double* row_ = nullptr;
    std::uint32_t* row_choice_ = nullptr;
    std::uint16_t* row_reps_ = nullptr;
    std::uint32_t ticks_ = 0;

public:
    std::int64_t pairs = 0, skipped = 0;
    std::vector<double> value;          // [id * layers + c * (k + 1) + a]
    std::vector<std::uint32_t> choice;  // sub-ideal id * 2 + (1: accelerator, 0: CPU)
    std::vector<std::uint16_t> reps;    // replicas of an accelerator choice
};

}  // namespace

// Runs ReplicatedDP and follows its choices back (see solve() in dp.cpp for the plain DP's).
Solution solve_replicated(const Instance& instance, const Poset& poset, const Lattice& lattice, const Options& options,
                          const std::vector<double>& least, double cpu_capacity, Stopper& stop, Solution out) {
    const Model model(instance, poset);  // as solve() built it (a copy of its own: Model is internal to each file)
    const auto t1 = Stopper::Clock::now();
    std::vector<double> sync;  // by label, as the Model's arrays
    if (!instance.sync.empty()) {
        sync.resize(model.n);
        for (int label = 0; label < model.n; ++label) sync[label] = instance.sync[poset.node_of(label)];
    }
    ReplicatedDP dp(model, std::move(sync), lattice, options, least, cpu_capacity, stop);
    const bool finished = dp.run();
    out.pairs = dp.pairs;
    out.skipped = dp.skipped;
    out.seconds_dp = seconds_since(t1);
    if (!finished || stop.stopped()) {
        out.stop_reason = stop.reason();
        return out;
    }
    const int layers = dp.layers(), k1 = options.accelerators + 1;
    const std::int64_t full = lattice.count - 1;
    int layer = layers - 1;
    out.value = dp.value[static_cast<std::size_t>(full) * layers + layer];
    // A value at or above the cutoff comes from stages the walks were not bound to try in full.
    if (!(out.value < options.cutoff)) {
        out.value = kInf;
        out.outcome = Outcome::infeasible;
        return out;
    }
    std::vector<int> device_of_label(model.n, -1);
    out.replicas.assign(options.accelerators, 1);
    int next_acc = 0, next_cpu = options.accelerators;
    std::int64_t id = full;
    while (id != 0) {
        const std::size_t at = static_cast<std::size_t>(id) * layers + layer;
        const std::uint32_t pick = dp.choice[at];
        const int r = dp.reps[at];
        const std::int64_t sub = pick >> 1;
        const bool on_acc = (pick & 1u) != 0;
        if (sub != id) {
            const int device = on_acc ? next_acc++ : next_cpu++;
            if (on_acc) out.replicas[device] = r;
            const std::uint64_t* mine = lattice.members(id);
            const std::uint64_t* theirs = lattice.members(sub);
            for (int w = 0; w < lattice.words; ++w) {
                for (std::uint64_t word = mine[w] & ~theirs[w]; word != 0; word &= word - 1) {
                    device_of_label[(w << 6) + __builtin_ctzll(word)] = device;
                }
            }
        }
        const int step = on_acc ? std::max(r, 1) : k1;
        if ((on_acc && layer % k1 < step) || (!on_acc && layer < k1)) {
            throw std::logic_error("the DP's choices use more devices than exist");
        }
        layer -= step;
        id = sub;
    }
    out.device.assign(model.n, -1);
    for (int label = 0; label < model.n; ++label) out.device[poset.node_of(label)] = device_of_label[label];
    out.outcome = Outcome::optimal;
    return out;
}

}  // namespace exactplace
