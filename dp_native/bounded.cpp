#include "bounded.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <memory>
#include <stdexcept>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "dp_model.hpp"
#include "groups.hpp"
#include "ideals.hpp"

namespace exactplace {

namespace {

// What visit() returns when it completed the split within the threshold.
constexpr double kFound = -1.0;
// Units up to which per-unit bitset rows (descendants, dominance) are kept.
constexpr int kMaxRows = 4096;

void check_bounded(const Instance& in, const Options& options) {
    // The DP's checks, less its own table's: a cutoff here is an incumbent's load, which may be 0, and
    // no table of ideals is built.
    Options as_dp = options;
    as_dp.cutoff = kInf;
    as_dp.max_ideals = 1;
    check_instance(in, as_dp);
    if (options.replication || !in.order.empty()) {
        throw std::invalid_argument("the bounded search takes no replication and no order");
    }
    if (std::isnan(options.cutoff)) throw std::invalid_argument("the cutoff must not be NaN");
}

// The device kinds: the accelerator types (one of speed 1 on a homogeneous cluster), then the
// CPUs when there are any. `capacity`: the most least time a device of the kind holds with a
// load below L, in units of L (dp.cpp's device_capacity): every stage S on it has
// least(S) <= capacity * load(S).
struct Kinds {
    int count = 0, types = 0;
    std::vector<int> size;
    std::vector<double> memory, speed, capacity;
    std::vector<std::uint8_t> is_cpu;
    std::vector<double> least;  // per unit label: its least time on any device that runs it

    Kinds(const Options& o, const Model& model) {
        if (o.type_count.empty()) {
            if (o.accelerators > 0) add(o.accelerators, o.memory_cap, 1.0, false);
        } else {
            for (std::size_t t = 0; t < o.type_count.size(); ++t) {
                add(static_cast<int>(o.type_count[t]), o.type_memory[t], o.type_speed[t], false);
            }
        }
        types = count;
        double fastest = 0.0;
        for (int k = 0; k < count; ++k) fastest = std::max(fastest, speed[k]);
        least.resize(model.n);
        double rho = kInf;
        for (int v = 0; v < model.n; ++v) {
            double t = o.cpus > 0 ? model.cpu[v] : kInf;
            if (types > 0 && !model.unsupported[v]) t = std::min(t, model.acc[v] / fastest);
            least[v] = t < kInf ? t : 0.0;
            if (least[v] > 0) rho = std::min(rho, model.cpu[v] / least[v]);
        }
        for (int k = 0; k < count; ++k) capacity.push_back(speed[k] / fastest);
        if (o.cpus > 0) {
            add(o.cpus, kInf, 1.0, true);
            capacity.push_back(rho < kInf ? 1.0 / rho : 1.0);
        }
    }

private:
    void add(int n, double cap, double s, bool cpu) {
        size.push_back(n);
        memory.push_back(cap);
        speed.push_back(s);
        is_cpu.push_back(cpu ? 1 : 0);
        ++count;
    }
};

// The sum of `value` over the units of a bitset row of `words` words, less those in `minus` if given.
double sum_over(const std::uint64_t* row, int words, const std::vector<double>& value,
                const std::uint64_t* minus = nullptr) {
    double sum = 0.0;
    for (int w = 0; w < words; ++w) {
        for (std::uint64_t word = minus ? row[w] & ~minus[w] : row[w]; word != 0; word &= word - 1) {
            sum += value[(w << 6) + __builtin_ctzll(word)];
        }
    }
    return sum;
}

struct KeyHash {
    std::size_t operator()(const std::vector<std::uint64_t>& key) const {
        std::uint64_t h = 0x9e3779b97f4a7c15ull;
        for (std::uint64_t w : key) {
            w ^= w >> 33;
            w *= 0xff51afd7ed558ccdull;
            w ^= w >> 33;
            h = (h ^ w) * 0x100000001b3ull + 0x9e3779b97f4a7c15ull;
        }
        return static_cast<std::size_t>(h ^ (h >> 29));
    }
};

// How one threshold's search ended (Search::attempt).
struct Attempt {
    enum Kind { found, failed, paused, stopped } kind;
    double bound;  // failed: the proven bound above the threshold
};

class Search {
public:
    Search(const Instance& in, const Options& options, const BoundedSettings& settings, Stopper& stop)
        : poset_(in.units, in.edge_src, in.edge_dst), model_(in, poset_), kinds_(options, model_), options_(options),
          settings_(settings), stop_(stop), walker_(poset_), stage_cost_(model_), words_(poset_.words()),
          stage_bits_(words_, 0), left_(kinds_.size), key_(words_, 0) {
        const int n = model_.n;
        for (int v = 0; v < n; ++v) total_least_ += kinds_.least[v];
        slack_ = 1e-11 * total_least_;
        comm_ = std::any_of(model_.group_cost.begin(), model_.group_cost.end(), [](double c) { return c > 0; });
        by_least_.resize(n);
        for (int v = 0; v < n; ++v) by_least_[v] = v;
        std::stable_sort(by_least_.begin(), by_least_.end(),
                         [this](int a, int b) { return kinds_.least[a] > kinds_.least[b]; });
        rank_.resize(n);
        labels_.resize(n);
        for (int r = 0; r < n; ++r) {
            rank_[by_least_[r]] = r;
            labels_[r] = r;
        }
        const std::vector<std::uint64_t> below = descendants();
        weight_ = positional_weights(below);
        dominates_ = dominance(below);
        above_ = ancestors(below);
        weight_rank_ = ranks_by_weight(0.0);
        dive_next_.resize(static_cast<std::size_t>(n) + 1);
        integral_ = !comm_;
        for (int k = 0; k < kinds_.count && integral_; ++k) integral_ = kinds_.speed[k] == 1.0;
        for (int v = 0; v < n && integral_; ++v) {
            integral_ = (kinds_.types == 0 || model_.acc[v] == std::floor(model_.acc[v])) &&
                        (options.cpus == 0 || model_.cpu[v] == std::floor(model_.cpu[v]));
        }
        packing_ = kinds_.count == 1 && !kinds_.is_cpu[0];
        std::int64_t product = 1;
        for (int k = 0; k < kinds_.count; ++k) {
            stride_.push_back(product);
            if (product > (std::int64_t{1} << 40) / (kinds_.size[k] + 1)) {
                throw std::invalid_argument("too many device-count combinations for the bounded search");
            }
            product *= kinds_.size[k] + 1;
        }
        int devices = 0;
        for (int k = 0; k < kinds_.count; ++k) devices += kinds_.size[k];
        levels_.resize(static_cast<std::size_t>(std::min(devices, n)) + 2);
        if (devices > n) {  // more devices than units: the extra ones stay empty
            for (int k = 0; k < kinds_.count; ++k) left_[k] = std::min(left_[k], n);
        }
    }

    // The proven bound at the empty ideal with every device left.
    double root_bound() { return state_bound(0.0); }

    // One threshold's search, within `budget` states (-1: no budget), after the greedy splits when
    // `fresh` (the threshold's first attempt): found (record() takes the split), failed (`bound`:
    // proven, above T), paused (the budget is spent; the table keeps every bound proven so far, so
    // a later attempt at T resumes from it) or stopped (time limit, interruption or stage bytes).
    Attempt attempt(double T, bool fresh, std::int64_t budget) {
        T_ = T;
        round_ = fresh ? 0 : round_ + 1;
        path_.clear();
        if (fresh && dives()) return {Attempt::found, 0.0};
        if (stopped_) return {Attempt::stopped, 0.0};
        budget_end_ = budget < 0 ? std::numeric_limits<std::int64_t>::max() : work_ + budget;
        const double r = visit(0, 0.0);
        if (paused_) {
            paused_ = stopped_ = false;
            return {Attempt::paused, 0.0};
        }
        if (stopped_) return {Attempt::stopped, 0.0};
        return r == kFound ? Attempt{Attempt::found, 0.0} : Attempt{Attempt::failed, r};
    }

    bool certified(double lb, double ub) const {
        if (ub == kInf) return false;
        return integral_ ? ub <= lb : ub <= lb * (1.0 + settings_.tolerance);
    }

    // Just above the bound (IDA*), or halfway to the best split after `bisect_after` failures.
    double next_threshold(double lb, double upper, int fails) const {
        const bool bisect = fails >= settings_.bisect_after && upper < kInf;
        if (integral_) {
            if (bisect && upper - 1 > lb) return lb + std::floor((upper - 1 - lb) / 2);
            return lb;
        }
        if (bisect && upper > lb * (1.0 + settings_.tolerance)) return lb + (upper - lb) / 2;
        return lb * (1.0 + settings_.tolerance);
    }

    // The split on path_ (its stages, last first): device per unit; returns its max-load.
    double record(BoundedSolution& out) const {
        std::vector<int> next(kinds_.count, 0);
        int first = 0;
        for (int k = 0; k < kinds_.count; ++k) {
            next[k] = first;
            first += kinds_.size[k];
        }
        // CPUs come after every accelerator, whichever kinds exist.
        out.device.assign(model_.n, -1);
        double worst = 0.0;
        for (const Step& step : path_) {
            const int device = next[step.kind]++;
            worst = std::max(worst, step.load);
            for (int w = 0; w < words_; ++w) {
                for (std::uint64_t word = step.bits[w]; word != 0; word &= word - 1) {
                    out.device[poset_.node_of((w << 6) + __builtin_ctzll(word))] = device;
                }
            }
        }
        return worst;
    }

    // Adds this search's counts to `out`.
    void count_into(BoundedSolution& out) const {
        out.states += states_;
        out.stages += stages_;
        out.remembered += remembered_;
        out.exhausted = out.exhausted || exhausted_;
    }

    // Greedy splits for thresholds between the bound and the best split, by bisection, before any
    // exact search: each found lowers the best split. `low` only steers the bisection (a greedy
    // failure proves nothing).
    void descend(double lb, double& ub, BoundedSolution& out) {
        double low = lb;
        double high = std::min(ub, options_.cutoff);
        if (high == kInf) {
            T_ = std::numeric_limits<double>::max();  // finite: a stage over memory (load inf) stays out
            path_.clear();
            if (!dives()) return;
            high = ub = record(out);
        }
        for (int step = 0; step < 64 && !stopped_ && !certified(lb, ub); ++step) {
            const double t = integral_ ? std::floor((low + high - 1) / 2) : low + (high - low) / 2;
            if (t < low || (!integral_ && high <= low * (1.0 + settings_.tolerance))) break;
            T_ = t;
            path_.clear();
            if (dives()) {
                ub = std::min(ub, record(out));
                high = ub;
            } else {
                low = integral_ ? t + 1 : t;
            }
            if (high <= low) break;
        }
        random_dives(lb, ub, out);
    }

private:
    struct Candidate {
        std::size_t offset;  // into Level::bits
        double load, least;
        double weight;  // the order among stages of equal load, the greatest first (see round_)
    };
    struct Level {
        std::vector<std::uint64_t> bits;
        std::vector<Candidate> cands;
    };

    std::int64_t left_index() const {
        std::int64_t index = 0;
        for (int k = 0; k < kinds_.count; ++k) index += left_[k] * stride_[k];
        return index;
    }

    std::int64_t level_bytes(const Level& level) const {
        return static_cast<std::int64_t>(level.cands.size() * sizeof(Candidate) + level.bits.size() * sizeof(std::uint64_t));
    }

    double capacity_left() const {
        double capacity = 0.0;
        for (int k = 0; k < kinds_.count; ++k) capacity += left_[k] * kinds_.capacity[k];
        return capacity;
    }

    // A lower bound on the best completion from the current ideal (least time `least_in`) with
    // the devices left: least time left over their capacity, the largest unit left, and the
    // pigeonhole bounds (D devices, D + 1 or 2D + 1 largest units left: two or three share one).
    double state_bound(double least_in) {
        double capacity = 0.0, widest = 0.0;
        int devices = 0;
        for (int k = 0; k < kinds_.count; ++k) {
            if (left_[k] == 0) continue;
            capacity += left_[k] * kinds_.capacity[k];
            widest = std::max(widest, kinds_.capacity[k]);
            devices += left_[k];
        }
        const double rest = total_least_ - least_in - slack_;
        if (devices == 0) return rest > 0 ? kInf : 0.0;
        double lb = rest > 0 ? rest / capacity : 0.0;
        const std::vector<std::uint64_t>& in = walker_.members();
        top_.clear();
        const std::size_t want = 2 * static_cast<std::size_t>(devices) + 1;
        for (std::size_t i = 0; i < by_least_.size() && top_.size() < want; ++i) {
            const int v = by_least_[i];
            if (((in[v >> 6] >> (v & 63)) & 1u) == 0) top_.push_back(kinds_.least[v]);
        }
        const std::size_t d = static_cast<std::size_t>(devices);
        if (!top_.empty()) lb = std::max(lb, (top_[0] - slack_) / widest);
        if (top_.size() >= d + 1) lb = std::max(lb, (top_[d - 1] + top_[d] - slack_) / widest);
        if (top_.size() >= 2 * d + 1) {
            lb = std::max(lb, (top_[2 * d - 2] + top_[2 * d - 1] + top_[2 * d] - slack_) / widest);
        }
        return integral_ ? std::ceil(lb) : lb;
    }

    // The least threshold above t that the search tells apart from t.
    double just_above(double t) const {
        return integral_ ? t + 1 : std::max(std::nextafter(t, kInf), t * (1.0 + settings_.tolerance));
    }

    // Martello and Toth's bound L2 on the bins of capacity T_ the units left need, their times as
    // sizes (one kind of accelerator: a unit's least time is its load): for each alpha <= T_/2,
    // the units above T_ - alpha (J1) and above T_/2 (J2) take a bin each, J1's alone, and the
    // units in [alpha, T_/2] (J3) fill J2's bins before taking bins of their own.
    int packing_bound() {
        const std::vector<std::uint64_t>& in = walker_.members();
        sizes_.clear();
        for (const int v : by_least_) {
            if (kinds_.least[v] <= 0) break;
            if (((in[v >> 6] >> (v & 63)) & 1u) == 0) sizes_.push_back(kinds_.least[v]);
        }
        const double c = integral_ ? T_ : T_ * (1 + 1e-12) + slack_;  // err towards fewer bins
        const std::size_t n = sizes_.size();
        prefix_.assign(n + 1, 0.0);
        for (std::size_t i = 0; i < n; ++i) prefix_[i + 1] = prefix_[i] + sizes_[i];
        std::size_t half = 0;  // sizes_[0, half) exceed c / 2
        while (half < n && sizes_[half] > c / 2) ++half;
        int best = static_cast<int>(half);
        std::size_t big = half;  // sizes_[0, big) exceed c - alpha
        for (std::size_t end = half; end < n;) {
            const double alpha = sizes_[end];
            while (end < n && sizes_[end] >= alpha) ++end;  // J3 = sizes_[half, end)
            while (big > 0 && sizes_[big - 1] <= c - alpha) --big;
            const double room = static_cast<double>(half - big) * c - (prefix_[half] - prefix_[big]);
            const double spill = prefix_[end] - prefix_[half] - room;
            const int extra = spill > 0 ? static_cast<int>(std::ceil(spill / c - 1e-9)) : 0;
            best = std::max(best, static_cast<int>(half) + extra);
        }
        return best;
    }

    // Whether some unit left cannot find a device within T_ (one kind of accelerator, no CPU): its
    // ancestors left fill at least ceil(a / T_) devices up to and including its own, and its
    // descendants (positional weight) at least ceil(d / T_) from its own on.
    bool stations_short(int devices) {
        if (above_.empty()) return false;
        const std::vector<std::uint64_t>& in = walker_.members();
        const double c = integral_ ? T_ : T_ * (1 + 1e-12) + slack_;
        for (int j = 0; j < model_.n; ++j) {
            if ((in[j >> 6] >> (j & 63)) & 1u) continue;
            const double tail = std::ceil(weight_[j] / c - 1e-9);
            if (tail > devices) return true;
            const double head = sum_over(above_.data() + static_cast<std::size_t>(j) * words_, words_, kinds_.least,
                                         in.data());
            if (std::ceil(head / c - 1e-9) + tail - 1 > devices) return true;
        }
        return false;
    }

    // The compute, memory and support sums of a stage with unit v added (communication aside).
    Sums with_unit(Sums s, int v) const {
        s.cpu += model_.cpu[v];
        s.acc += model_.acc[v];
        s.mem += model_.mem[v];
        s.unsupported += model_.unsupported[v];
        return s;
    }

    // Unit v joins (leaves) the stage being grown: the current ideal and stage_bits_.
    void enter_stage(int v) {
        walker_.add(v);
        stage_bits_[v >> 6] |= std::uint64_t{1} << (v & 63);
    }
    void leave_stage(int v) {
        stage_bits_[v >> 6] &= ~(std::uint64_t{1} << (v & 63));
        walker_.remove(v);
    }

    // Compute (and memory and support) of a stage on kind k: a lower bound on the load of it and
    // of every larger stage.
    double compute_load(const Sums& s, int k) const {
        if (kinds_.is_cpu[k]) return s.cpu;
        if (s.unsupported > 0 || s.mem > kinds_.memory[k]) return kInf;
        return s.acc / kinds_.speed[k];
    }
    double stage_load(const Sums& s, int k) const {
        if (kinds_.is_cpu[k]) return s.cpu;
        if (s.unsupported > 0 || s.mem > kinds_.memory[k]) return kInf;
        return s.accelerator_load(options_.overlap, kinds_.speed[k]);
    }

    // The table holds, per ideal, bounds proven for some device counts left. A bound for more
    // devices of every kind holds for fewer too (an unused device may stay empty).
    bool covers(std::int64_t stored) const {
        for (int k = 0; k < kinds_.count; ++k) {
            if ((stored / stride_[k]) % (kinds_.size[k] + 1) < left_[k]) return false;
        }
        return true;
    }

    double recall() const {
        const auto hit = memo_.find(key_);
        double best = -kInf;
        if (hit == memo_.end()) return best;
        for (const Entry& e : hit->second) {
            if (e.bound > best && covers(e.left)) best = e.bound;
        }
        return best;
    }

    double remember(double value) {
        if (entries_ >= settings_.memo_limit) return value;
        const std::int64_t left = left_index();
        std::vector<Entry>& list = memo_[key_];
        for (Entry& e : list) {
            if (e.left == left) {
                e.bound = std::max(e.bound, value);
                return value;
            }
        }
        list.push_back({left, value});
        ++entries_;
        return value;
    }

    void set_key() {
        const std::vector<std::uint64_t>& in = walker_.members();
        std::copy(in.begin(), in.end(), key_.begin());
    }

    // The current ideal with the devices left_: kFound when it completes within T_ (path_ then
    // holds the stages), else a lower bound above T_ on its best completion.
    double visit(int depth, double least_in) {
        ++states_;
        if (spent()) return 0.0;
        if (stop_.check_owner(ticks_)) {
            stopped_ = true;
            return 0.0;
        }
        if (walker_.size() == model_.n) return kFound;
        int devices = 0, only = -1;
        for (int k = 0; k < kinds_.count; ++k) {
            devices += left_[k];
            if (left_[k] > 0) only = k;
        }
        if (devices == 0) return kInf;
        set_key();
        const double known = recall();
        if (known > T_) {
            ++remembered_;
            return known;
        }
        const double bound = state_bound(least_in);
        if (bound > T_) return bound;  // cheap to recompute: not kept
        if (packing_ && devices > 1 && packing_bound() > devices) return just_above(T_);
        if (packing_ && devices > 1 && stations_short(devices)) return just_above(T_);
        if (devices == 1) return last_stage(only);
        double best = kInf;
        Level& level = levels_[depth];
        for (int k = 0; k < kinds_.count; ++k) {
            if (left_[k] == 0) continue;
            bytes_ -= level_bytes(level);
            level.bits.clear();
            level.cands.clear();
            cut_ = kInf;
            if (comm_) {
                stage_cost_.sums = Sums{};  // the stage is empty: every group counter is zero
                grow<true>(k, -1, Sums{}, 0.0, level);
            } else {
                grow<false>(k, -1, Sums{}, 0.0, level);
            }
            if (stopped_) return 0.0;
            best = std::min(best, cut_);
            // The stage must leave the other devices no more least time than they hold within T_.
            const double others = capacity_left() - kinds_.capacity[k];
            const double needed = total_least_ - least_in - slack_ - others * T_ * (1 + 1e-12);
            std::size_t kept = 0;
            for (std::size_t c = 0; c < level.cands.size(); ++c) {
                const Candidate& cand = level.cands[c];
                if (cand.least >= needed) {
                    level.cands[kept++] = cand;
                    continue;
                }
                // Left out: the child's least-time bound (as state_bound's) exceeds T_.
                const double rest = total_least_ - least_in - cand.least - slack_;
                double lb = others > 0 ? rest / others : kInf;
                if (integral_) lb = std::ceil(lb);
                best = std::min(best, std::max(cand.load, lb));
            }
            bytes_ -= static_cast<std::int64_t>((level.cands.size() - kept) * sizeof(Candidate));
            level.cands.resize(kept);
            stages_ += static_cast<std::int64_t>(level.cands.size());
            std::stable_sort(level.cands.begin(), level.cands.end(), [](const Candidate& a, const Candidate& b) {
                return a.load > b.load || (a.load == b.load && a.weight > b.weight);
            });
            for (std::size_t c = 0; c < level.cands.size(); ++c) {
                const Candidate cand = level.cands[c];
                const std::uint64_t* bits = level.bits.data() + cand.offset;
                apply(bits, true);
                --left_[k];
                const double r = visit(depth + 1, least_in + cand.least);
                ++left_[k];
                apply(bits, false);
                if (stopped_) return 0.0;
                if (r == kFound) {
                    path_.push_back({k, cand.load, std::vector<std::uint64_t>(bits, bits + words_)});
                    bytes_ -= level_bytes(level);
                    level.bits.clear();
                    level.cands.clear();
                    return kFound;
                }
                best = std::min(best, std::max(cand.load, r));
            }
        }
        bytes_ -= level_bytes(level);
        level.bits.clear();
        level.cands.clear();
        set_key();
        return remember(best);
    }

    // A greedy split within T_ (Hoffmann's rule): device after device, the stage of the most least
    // time that a search of at most BoundedSettings::dive_nodes steps finds, adding units in
    // increasing `rank` (weight_rank_: the heaviest positional weight first; labels_: the
    // topological order; rank_: the longest first; the budget makes them find different stages).
    // True when it places every unit (path_ then holds its stages, last first); the current
    // ideal and the devices left are restored either way.
    bool dive(const std::vector<int>& rank) {
        if (settings_.dive_nodes <= 0) return false;
        std::vector<Step> applied;
        bool placed = false;
        while (!stopped_) {
            if (walker_.size() == model_.n) {
                placed = true;
                break;
            }
            int kind = -1, devices = 0;
            for (int k = 0; k < kinds_.count; ++k) {
                devices += left_[k];
                if (left_[k] > 0 && kind < 0) kind = k;
            }
            if (devices == 0) break;
            if (devices == 1) {  // the last device takes the rest: a step of path_, not applied
                set_key();
                placed = last_stage(kind) == kFound;
                break;
            }
            dive_nodes_left_ = settings_.dive_nodes;
            dive_least_ = 0.0;
            if (comm_) {
                stage_cost_.sums = Sums{};
                dive_grow<true>(rank, kind, -1, Sums{}, 0.0, 0);
            } else {
                dive_grow<false>(rank, kind, -1, Sums{}, 0.0, 0);
            }
            if (dive_least_ <= 0.0 || stopped_) break;
            applied.push_back({kind, dive_load_, dive_bits_});
            apply(dive_bits_.data(), true);
            --left_[kind];
        }
        for (auto step = applied.rbegin(); step != applied.rend(); ++step) {
            apply(step->bits.data(), false);
            ++left_[step->kind];
            if (placed) path_.push_back(std::move(*step));
        }
        if (!placed) path_.clear();
        return placed && !stopped_;
    }

    // The dive's stage search: units added in increasing `rank`, each set once; the set of the
    // most least time within T_ goes to dive_bits_.
    template <bool Comm>
    void dive_grow(const std::vector<int>& rank, int k, int after_rank, Sums s, double least, int size) {
        if (stop_.check_owner(ticks_)) {
            stopped_ = true;
            return;
        }
        if (dive_nodes_left_-- <= 0) return;
        if (size > 0 && least > dive_least_) {
            const double load = Comm ? stage_load(s, k) : compute_load(s, k);
            if (load <= T_) {
                dive_least_ = least;
                dive_load_ = load;
                dive_bits_ = stage_bits_;
            }
        }
        std::vector<int>& next = dive_next_[size];
        next.clear();
        for (int v = walker_.next_addable(-1); v >= 0; v = walker_.next_addable(v)) {
            if (rank[v] > after_rank) next.push_back(v);
        }
        std::sort(next.begin(), next.end(), [&rank](int a, int b) { return rank[a] < rank[b]; });
        for (std::size_t i = 0; i < next.size() && dive_nodes_left_ > 0; ++i) {
            const int v = next[i];
            const Sums t = with_unit(s, v);
            if (!(compute_load(t, k) <= T_)) continue;
            enter_stage(v);
            if constexpr (Comm) {
                const Sums before = stage_cost_.sums;
                stage_cost_.add(v);
                dive_grow<Comm>(rank, k, rank[v], stage_cost_.sums, least + kinds_.least[v], size + 1);
                stage_cost_.undo_add(v, before);
            } else {
                dive_grow<Comm>(rank, k, rank[v], t, least + kinds_.least[v], size + 1);
            }
            leave_stage(v);
            if (stopped_) return;
        }
    }

    // The order of the stage being grown among stages of equal load (Candidate::weight): each new
    // attempt at a threshold is a restart in another order that keeps the table, since one order
    // often finds a split or a proof far sooner than another: the enumeration's (label) order
    // first, then the heaviest positional weight first, then those weights perturbed at random.
    double order_weight() {
        if (round_ == 0) return 0.0;
        const double weight = sum_over(stage_bits_.data(), words_, weight_);
        return round_ == 1 ? weight : weight * (1.0 + uniform());
    }

    bool dives() { return dive(weight_rank_) || dive(labels_) || dive(rank_); }

    // Per unit (up to kMaxRows units; empty past that), the bitset row of its descendants, itself included.
    std::vector<std::uint64_t> descendants() const {
        const int n = model_.n;
        if (n > kMaxRows) return {};
        std::vector<std::uint64_t> below(static_cast<std::size_t>(n) * words_, 0);
        for (int v = n - 1; v >= 0; --v) {
            std::uint64_t* row = below.data() + static_cast<std::size_t>(v) * words_;
            row[v >> 6] |= std::uint64_t{1} << (v & 63);
            for (const int* t = poset_.succs_begin(v); t != poset_.succs_end(v); ++t) {
                const std::uint64_t* child = below.data() + static_cast<std::size_t>(*t) * words_;
                for (int w = 0; w < words_; ++w) row[w] |= child[w];
            }
        }
        return below;
    }

    // The transpose of descendants(): per unit, the bitset row of its ancestors, itself included.
    std::vector<std::uint64_t> ancestors(const std::vector<std::uint64_t>& below) const {
        if (below.empty()) return {};
        const int n = model_.n;
        std::vector<std::uint64_t> above(static_cast<std::size_t>(n) * words_, 0);
        for (int v = 0; v < n; ++v) {
            const std::uint64_t* row = below.data() + static_cast<std::size_t>(v) * words_;
            for (int w = 0; w < words_; ++w) {
                for (std::uint64_t word = row[w]; word != 0; word &= word - 1) {
                    const int j = (w << 6) + __builtin_ctzll(word);
                    above[static_cast<std::size_t>(j) * words_ + (v >> 6)] |= std::uint64_t{1} << (v & 63);
                }
            }
        }
        return above;
    }

    // Positional weights (Helgeson and Birnie): a unit's least time plus its descendants' (exact
    // up to kMaxRows units; past that, along its longest path to a sink).
    std::vector<double> positional_weights(const std::vector<std::uint64_t>& below) const {
        const int n = model_.n;
        std::vector<double> weight(n, 0.0);
        if (!below.empty()) {
            for (int v = 0; v < n; ++v) {
                weight[v] = sum_over(below.data() + static_cast<std::size_t>(v) * words_, words_, kinds_.least);
            }
        } else {
            for (int v = n - 1; v >= 0; --v) {
                double tail = 0.0;
                for (const int* t = poset_.succs_begin(v); t != poset_.succs_end(v); ++t) {
                    tail = std::max(tail, weight[*t]);
                }
                weight[v] = kinds_.least[v] + tail;
            }
        }
        return weight;
    }

    // Jackson's dominance between units: v dominates j when j's proper descendants are among v's
    // and j needs no more than v of every resource (cpu and accelerator time, memory, support),
    // ties going to the lower label (a strict order, so every chain of swaps ends). The rows of
    // dominates_: per v, the units it dominates. Empty with communication (a swap changes it) or
    // without descendant rows.
    std::vector<std::uint64_t> dominance(const std::vector<std::uint64_t>& below) const {
        const int n = model_.n;
        if (comm_ || below.empty()) return {};
        std::vector<std::uint64_t> rows(static_cast<std::size_t>(n) * words_, 0);
        for (int v = 0; v < n; ++v) {
            const std::uint64_t* dv = below.data() + static_cast<std::size_t>(v) * words_;
            for (int j = 0; j < n; ++j) {
                if (j == v || ((dv[j >> 6] >> (j & 63)) & 1u)) continue;  // a descendant j never meets v
                const std::uint64_t* dj = below.data() + static_cast<std::size_t>(j) * words_;
                bool covered = true, larger = false;
                for (int w = 0; w < words_ && covered; ++w) {
                    const std::uint64_t proper = w == (j >> 6) ? dj[w] & ~(std::uint64_t{1} << (j & 63)) : dj[w];
                    const std::uint64_t own = w == (v >> 6) ? dv[w] & ~(std::uint64_t{1} << (v & 63)) : dv[w];
                    covered = (proper & ~own) == 0;
                    larger = larger || own != proper;
                }
                if (!covered) continue;
                const double need[4] = {model_.cpu[j], model_.acc[j], model_.mem[j], double(model_.unsupported[j])};
                const double have[4] = {model_.cpu[v], model_.acc[v], model_.mem[v], double(model_.unsupported[v])};
                bool enough = true;
                for (int r = 0; r < 4; ++r) {
                    enough = enough && need[r] <= have[r];
                    larger = larger || need[r] < have[r];
                }
                if (enough && (larger || v < j)) rows[static_cast<std::size_t>(v) * words_ + (j >> 6)] |= std::uint64_t{1} << (j & 63);
            }
        }
        return rows;
    }

    // Whether the maximal stage being grown (sums `s`, on kind k) is dominated: an addable unit v
    // dominates a unit j of it and the stage with v in j's place fits within T_. Then swapping v
    // and j in any completion through the stage gives one through the swapped stage with no load
    // above max(T_, its own), and the stage need not be tried. The swap's sums are padded by a
    // relative 1e-9 (exact sums aside), so that rounding never prunes a stage that does not fit.
    bool dominated(const Sums& s, int k) {
        if (dominates_.empty()) return false;
        const double pad = integral_ ? 0.0 : 1e-9;
        for (int v = walker_.next_addable(-1); v >= 0; v = walker_.next_addable(v)) {
            const std::uint64_t* row = dominates_.data() + static_cast<std::size_t>(v) * words_;
            for (int w = 0; w < words_; ++w) {
                for (std::uint64_t word = row[w] & stage_bits_[w]; word != 0; word &= word - 1) {
                    const int j = (w << 6) + __builtin_ctzll(word);
                    Sums t = s;
                    t.cpu += model_.cpu[v] - model_.cpu[j] + pad * s.cpu;
                    t.acc += model_.acc[v] - model_.acc[j] + pad * s.acc;
                    t.mem += model_.mem[v] - model_.mem[j] + 1e-9 * s.mem;
                    t.unsupported += model_.unsupported[v] - model_.unsupported[j];
                    if (compute_load(t, k) <= T_) return true;
                }
            }
        }
        return false;
    }

    // Ranks by positional weight, the heaviest first, each weight scaled by 1 + noise * U[0, 1).
    std::vector<int> ranks_by_weight(double noise) {
        const int n = model_.n;
        std::vector<double> weight = weight_;
        for (int v = 0; v < n && noise > 0; ++v) weight[v] *= 1.0 + noise * uniform();
        std::vector<int> order(n);
        for (int v = 0; v < n; ++v) order[v] = v;
        std::stable_sort(order.begin(), order.end(), [&weight](int a, int b) { return weight[a] > weight[b]; });
        std::vector<int> rank(n);
        for (int r = 0; r < n; ++r) rank[order[r]] = r;
        return rank;
    }

    // Greedy splits just below the best one, by positional weights perturbed at random.
    void random_dives(double lb, double& ub, BoundedSolution& out) {
        if (ub == kInf) return;
        for (int round = 0; round < settings_.random_dives && !stopped_ && !certified(lb, ub); ++round) {
            T_ = integral_ ? ub - 1 : std::max(lb, ub * (1.0 - settings_.tolerance));
            if (T_ < lb) break;
            path_.clear();
            if (dive(ranks_by_weight(0.5))) ub = std::min(ub, record(out));
        }
    }

    // A uniform number in [0, 1) (xorshift64*, seeded the same on every run: results repeat).
    double uniform() {
        random_ ^= random_ >> 12;
        random_ ^= random_ << 25;
        random_ ^= random_ >> 27;
        return static_cast<double>((random_ * 0x2545F4914F6CDD1Dull) >> 11) * 0x1.0p-53;
    }

    // One device left (of kind k): it takes everything that is left.
    double last_stage(int k) {
        const std::vector<std::uint64_t>& in = walker_.members();
        std::vector<std::uint64_t> rest(words_);
        for (int w = 0; w < words_; ++w) rest[w] = ~in[w];
        if (model_.n % 64 != 0) rest[words_ - 1] &= (std::uint64_t{1} << (model_.n % 64)) - 1;
        // The stage's SetCost holds the empty set here: add the rest, read, take it out again.
        const Sums before = stage_cost_.sums;
        for (int w = 0; w < words_; ++w) {
            for (std::uint64_t word = rest[w]; word != 0; word &= word - 1) stage_cost_.add((w << 6) + __builtin_ctzll(word));
        }
        const double load = stage_load(stage_cost_.sums, k);
        for (int w = 0; w < words_; ++w) {
            for (std::uint64_t word = rest[w]; word != 0; word &= word - 1) stage_cost_.remove((w << 6) + __builtin_ctzll(word));
        }
        stage_cost_.sums = before;
        if (load <= T_) {
            path_.push_back({k, load, std::move(rest)});
            return kFound;
        }
        return remember(load);
    }

    // Counts a step of the exact search (a state or a stage search step); true, with the search
    // paused, once the attempt's budget is spent.
    bool spent() {
        if (++work_ <= budget_end_) return false;
        paused_ = stopped_ = true;
        return true;
    }

    // Adds (or removes, in reverse) the units of a stage to the current ideal, in label order.
    void apply(const std::uint64_t* bits, bool adding) {
        if (adding) {
            for (int w = 0; w < words_; ++w) {
                for (std::uint64_t word = bits[w]; word != 0; word &= word - 1) walker_.add((w << 6) + __builtin_ctzll(word));
            }
            return;
        }
        for (int w = words_ - 1; w >= 0; --w) {
            for (std::uint64_t word = bits[w]; word != 0;) {
                const int high = 63 - __builtin_clzll(word);
                walker_.remove((w << 6) + high);
                word &= ~(std::uint64_t{1} << high);
            }
        }
    }

    // The stages on kind k from the current ideal, by a canonical depth-first search (units added
    // in increasing label order, so each stage once): every stage within T_, or with `Comm` false
    // only the maximal ones. cut_ takes the least load of the stages just past T_.
    template <bool Comm>
    void grow(int k, int after, Sums s, double least, Level& level) {
        if (spent()) return;
        if (stop_.check_owner(ticks_)) {
            stopped_ = true;
            return;
        }
        bool maximal = true;
        for (int v = walker_.next_addable(-1); v >= 0; v = walker_.next_addable(v)) {
            const Sums t = with_unit(s, v);
            const double lower = compute_load(t, k);
            if (!(lower <= T_)) {
                if (v > after) cut_ = std::min(cut_, lower);
                continue;
            }
            maximal = false;
            if (v < after) continue;
            enter_stage(v);
            if constexpr (Comm) {
                const Sums before = stage_cost_.sums;
                stage_cost_.add(v);
                grow<Comm>(k, v, stage_cost_.sums, least + kinds_.least[v], level);
                stage_cost_.undo_add(v, before);
            } else {
                grow<Comm>(k, v, t, least + kinds_.least[v], level);
            }
            leave_stage(v);
            if (stopped_) return;
        }
        if (after < 0) return;  // the empty stage
        double load = compute_load(s, k);
        if constexpr (Comm) {
            load = stage_load(s, k);
            if (!(load <= T_)) {
                cut_ = std::min(cut_, load);
                return;
            }
        } else if (!maximal || dominated(s, k)) {
            return;
        }
        bytes_ += static_cast<std::int64_t>(sizeof(Candidate) + sizeof(std::uint64_t) * words_);
        if (bytes_ > settings_.stage_bytes) {
            exhausted_ = stopped_ = true;
            return;
        }
        level.cands.push_back({level.bits.size(), load, least, order_weight()});
        level.bits.insert(level.bits.end(), stage_bits_.begin(), stage_bits_.end());
    }

    struct Step {
        int kind;
        double load;
        std::vector<std::uint64_t> bits;
    };

    const Poset poset_;
    const Model model_;
    const Kinds kinds_;
    const Options& options_;
    const BoundedSettings& settings_;
    Stopper& stop_;
    IdealWalker walker_;
    SetCost stage_cost_;
    const int words_;
    std::vector<std::uint64_t> stage_bits_;
    std::vector<int> left_;
    std::vector<std::int64_t> stride_;
    std::vector<std::uint64_t> key_;
    std::vector<Level> levels_;
    std::vector<int> by_least_;
    std::vector<double> top_;
    std::vector<Step> path_;
    std::vector<double> sizes_, prefix_;  // packing_bound()'s scratch
    struct Entry {
        std::int64_t left;  // left_index() of the devices left
        double bound;
    };
    std::unordered_map<std::vector<std::uint64_t>, std::vector<Entry>, KeyHash> memo_;
    std::int64_t entries_ = 0;
    double total_least_ = 0.0, slack_ = 0.0, T_ = 0.0, cut_ = kInf;
    bool packing_ = false;  // one kind of accelerator, no CPU: packing_bound() applies
    bool comm_ = false, integral_ = false, stopped_ = false, exhausted_ = false;
    bool paused_ = false;  // stopped_ by the attempt's budget only
    int round_ = 0;  // attempts at the current threshold before this one (order_weight())
    std::int64_t work_ = 0;  // steps of the exact search so far (spent())
    std::int64_t budget_end_ = std::numeric_limits<std::int64_t>::max();  // work_ at which it pauses
    std::int64_t bytes_ = 0;  // candidate stages held by the levels
    std::uint32_t ticks_ = 0;
    std::int64_t dive_nodes_left_ = 0;  // stage search steps the dive has left
    std::vector<int> rank_, labels_;      // per label: its place in by_least_, and itself
    std::vector<double> weight_;          // per label: its positional weight
    std::vector<std::uint64_t> dominates_;  // dominance()'s rows
    std::vector<std::uint64_t> above_;      // ancestors()' rows
    std::vector<int> weight_rank_;        // per label: its place by positional weight
    std::uint64_t random_ = 0x9e3779b97f4a7c15ull;
    std::vector<std::vector<int>> dive_next_;  // dive_grow()'s children, by depth
    std::vector<std::uint64_t> dive_bits_;
    double dive_least_ = 0.0, dive_load_ = 0.0;
    std::int64_t states_ = 0, stages_ = 0, remembered_ = 0;
};

// The instance with every edge reversed: without communication a chain split of it, read backwards,
// is one of the instance with the same loads, and a search often decides a threshold far sooner
// in one direction than in the other.
Instance reversed(const Instance& in) {
    Instance out = in;
    std::swap(out.edge_src, out.edge_dst);
    out.group_cost.clear();
    out.group_source.clear();
    out.group_target.clear();
    out.group_ptr.assign(1, 0);
    return out;
}

// Alternates the searches on threshold T, each within a budget of states that doubles every round,
// until one decides it; `winner` is the one that did.
Attempt decide(std::vector<Search*>& searches, double T, std::int64_t first_budget, Search*& winner) {
    std::int64_t budget = searches.size() == 1 ? -1 : first_budget;
    for (bool fresh = true;; fresh = false) {
        for (Search* search : searches) {
            const Attempt a = search->attempt(T, fresh, budget);
            if (a.kind != Attempt::paused) {
                winner = search;
                return a;
            }
        }
        budget = budget > std::numeric_limits<std::int64_t>::max() / 2 ? -1 : 2 * budget;
    }
}

}  // namespace

BoundedSolution solve_bounded(const Instance& instance, const Options& options, const BoundedSettings& settings,
                              Stopper& stop) {
    check_bounded(instance, options);
    const auto t0 = Stopper::Clock::now();
    BoundedSolution out;
    const bool comm = std::any_of(instance.group_cost.begin(), instance.group_cost.end(), [](double c) { return c > 0; });
    const bool both = settings.bidirectional && !comm;
    BoundedSettings each = settings;
    if (both) each.memo_limit = settings.memo_limit / 2;
    Search forward(instance, options, each, stop);
    std::vector<Search*> searches{&forward};
    const Instance backward_instance = both ? reversed(instance) : Instance{};
    std::unique_ptr<Search> backward;
    if (both) {
        backward = std::make_unique<Search>(backward_instance, options, each, stop);
        searches.push_back(backward.get());
    }
    if (stop.check_owner_now()) {
        out.stop_reason = stop.reason();
        return out;
    }
    double lb = forward.root_bound();
    double ub = kInf;
    if (lb < kInf) {
        for (Search* search : searches) search->descend(lb, ub, out);
    }
    int fails = 0;
    while (true) {
        if (forward.certified(lb, ub)) {
            out.outcome = Outcome::optimal;
            break;
        }
        if (lb == kInf) {
            out.outcome = Outcome::infeasible;
            break;
        }
        const double T = forward.next_threshold(lb, std::min(ub, options.cutoff), fails);
        ++out.thresholds;
        Search* winner = nullptr;
        const Attempt a = decide(searches, T, settings.first_budget, winner);
        if (a.kind == Attempt::stopped) {
            out.stop_reason = stop.reason();
            break;
        }
        if (a.kind == Attempt::found) {
            ub = winner->record(out);
            fails = 0;
        } else {
            lb = std::max(lb, a.bound);
            ++fails;
        }
    }
    out.value = ub;
    out.bound = std::min(lb, ub);
    for (const Search* search : searches) search->count_into(out);
    out.seconds = seconds_since(t0);
    return out;
}

}  // namespace exactplace
