#include "chain.hpp"

#include <algorithm>
#include <cmath>
#include <deque>
#include <limits>
#include <stdexcept>
#include <string>
#include <vector>

namespace exactplace {

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

// Range addition and "first position in a range whose value is at most x" on 0..n-1.
// The additions stay on the nodes they cover (no push-down): a node's `min_` includes its own
// and its descendants' additions, and a query adds those of the ancestors on its way down.
class MinTree {
public:
    explicit MinTree(int n) : n_(n) {
        while (size_ < n_) size_ <<= 1;
        min_.assign(2 * static_cast<std::size_t>(size_), kInf);
        add_.assign(2 * static_cast<std::size_t>(size_), 0.0);
    }

    void reset(const std::vector<double>& base) {
        std::fill(add_.begin(), add_.end(), 0.0);
        for (int i = 0; i < size_; ++i) min_[size_ + i] = i < n_ ? base[i] : kInf;
        for (int v = size_ - 1; v >= 1; --v) min_[v] = std::min(min_[2 * v], min_[2 * v + 1]);
    }
    void add(int lo, int hi, double delta) {
        if (lo <= hi) add(1, 0, size_ - 1, lo, hi, delta);
    }
    int first_at_most(int lo, int hi, double x) const { return first(1, 0, size_ - 1, lo, hi, x, 0.0); }

private:
    void add(int v, int l, int r, int lo, int hi, double delta) {
        if (hi < l || r < lo) return;
        if (lo <= l && r <= hi) {
            min_[v] += delta;
            add_[v] += delta;
            return;
        }
        const int m = (l + r) / 2;
        add(2 * v, l, m, lo, hi, delta);
        add(2 * v + 1, m + 1, r, lo, hi, delta);
        min_[v] = std::min(min_[2 * v], min_[2 * v + 1]) + add_[v];
    }
    int first(int v, int l, int r, int lo, int hi, double x, double above) const {
        if (hi < l || r < lo || min_[v] + above > x) return -1;
        if (l == r) return l;
        const int m = (l + r) / 2;
        above += add_[v];
        const int found = first(2 * v, l, m, lo, hi, x, above);
        return found >= 0 ? found : first(2 * v + 1, m + 1, r, lo, hi, x, above);
    }

    int n_, size_ = 1;
    std::vector<double> min_, add_;
};

// The instance along the order: prefix sums by position and the communication events.
struct Chain {
    int n = 0;
    std::vector<int> unit;                   // unit at each position
    std::vector<long double> cpu, acc, mem;  // prefix sums, n + 1 entries (acc: supported units only)
    std::vector<int> last_unsupported;       // [i]: the last unsupported position below i, or -1
    // When the unit at position u joins the prefix, the communication of [j, u + 1) differs from
    // that of [j, u) by `delta` for j in [lo, hi]: the events of u.
    struct Event {
        int lo, hi;
        double delta;
    };
    std::vector<int> event_ptr;
    std::vector<Event> events;
    // Each group's cost and member positions (source and targets), for exact loads.
    std::vector<double> group_cost;
    std::vector<int> member_ptr, members;

    Chain(const Instance& in, const std::vector<std::int64_t>& order) : n(in.units) {
        if (static_cast<int>(order.size()) != n) throw std::invalid_argument("order must list every unit once");
        std::vector<int> position(n, -1);
        unit.resize(n);
        for (int p = 0; p < n; ++p) {
            const std::int64_t u = order[p];
            if (u < 0 || u >= n || position[u] >= 0) throw std::invalid_argument("order must list every unit once");
            position[u] = p;
            unit[p] = static_cast<int>(u);
        }
        for (std::size_t e = 0; e < in.edge_src.size(); ++e) {
            const std::int64_t s = in.edge_src[e], d = in.edge_dst[e];
            if (s < 0 || s >= n || d < 0 || d >= n) throw std::invalid_argument("an edge names a unit out of range");
            if (position[s] >= position[d]) throw std::invalid_argument("an edge goes backwards in the order");
        }
        cpu.assign(n + 1, 0.0L);
        acc.assign(n + 1, 0.0L);
        mem.assign(n + 1, 0.0L);
        last_unsupported.assign(n + 1, -1);
        for (int p = 0; p < n; ++p) {
            const int u = unit[p];
            cpu[p + 1] = cpu[p] + in.cpu_time[u];
            acc[p + 1] = acc[p] + (in.supported[u] ? in.acc_time[u] : 0.0);
            mem[p + 1] = mem[p] + in.memory[u];
            last_unsupported[p + 1] = in.supported[u] ? last_unsupported[p] : p;
        }
        // A group crosses [j, i) when it has members inside and outside, the source being inside,
        // or targets inside and the source outside. Adding members in position order m_1 < ... < m_r,
        // member m_t turns it on for j in (m_{t-1}, m_t] (nothing of the group was inside before,
        // now m_t is), and the last member turns it off for j <= m_1 (now every member is inside).
        const std::size_t groups = in.group_cost.size();
        std::vector<std::pair<int, Event>> timed;
        member_ptr.assign(1, 0);
        for (std::size_t g = 0; g < groups; ++g) {
            std::vector<int> m{position[in.group_source[g]]};
            for (std::int64_t t = in.group_ptr[g]; t < in.group_ptr[g + 1]; ++t) m.push_back(position[in.group_target[t]]);
            std::sort(m.begin(), m.end());
            const double c = in.group_cost[g];
            for (std::size_t t = 0; t < m.size(); ++t) {
                timed.push_back({m[t], {t == 0 ? 0 : m[t - 1] + 1, m[t], c}});
                if (t + 1 == m.size()) timed.push_back({m[t], {0, m[0], -c}});
            }
            group_cost.push_back(c);
            members.insert(members.end(), m.begin(), m.end());
            member_ptr.push_back(static_cast<int>(members.size()));
        }
        event_ptr.assign(n + 1, 0);
        for (const auto& te : timed) ++event_ptr[te.first + 1];
        for (int p = 0; p < n; ++p) event_ptr[p + 1] += event_ptr[p];
        events.resize(timed.size());
        std::vector<int> fill(event_ptr.begin(), event_ptr.end() - 1);
        for (const auto& te : timed) events[fill[te.first]++] = te.second;
    }
};

// One feasibility test: can the order be split with every load <= T? Keeps, per layer, the
// choice made at each prefix so that the split can be read back.
class Search {
public:
    Search(const Chain& chain, const Options& options, Stopper& stop)
        : ch_(chain), opt_(options), stop_(stop), k_(options.accelerators), l_(options.cpus), tree_(chain.n),
          base_(chain.n),
          choice_(static_cast<std::size_t>(l_ + 1) * (chain.n + 1)), from_(static_cast<std::size_t>(l_ + 1) * (chain.n + 1)) {
        for (int j = 0; j < ch_.n; ++j) base_[j] = opt_.overlap ? 0.0 : static_cast<double>(-ch_.acc[j]);
    }

    std::int64_t queries = 0;

    // Returns 1 if feasible, 0 if not, -1 if stopped.
    int feasible(double T) {
        const int n = ch_.n, none = k_ + 1;
        std::vector<int> previous(n + 1, none), current(n + 1, none);
        for (int c = 0; c <= l_; ++c) {
            std::deque<int> window;  // j in the CPU window, need[c-1][j] increasing
            int lo_cpu = 0, lo_acc = 0, run_first = 0;
            runs_.clear();
            if (k_ > 0) tree_.reset(base_);
            current[0] = 0;
            runs_.push_back({0, 0, 0});
            if (c > 0) window.push_back(0);
            for (int i = 1; i <= n; ++i) {
                if (stop_.check_owner(ticks_)) return -1;
                const int u = i - 1;
                int best = none, kind = 0, from = -1;
                if (c > 0) {
                    while (!window.empty() && previous[window.back()] >= previous[i]) window.pop_back();
                    window.push_back(i);
                    while (ch_.cpu[i] - ch_.cpu[lo_cpu] > T) ++lo_cpu;
                    while (window.front() < lo_cpu) window.pop_front();
                    best = previous[window.front()];
                    from = window.front();
                }
                if (k_ > 0) {
                    for (int e = ch_.event_ptr[u]; e < ch_.event_ptr[u + 1]; ++e) {
                        tree_.add(ch_.events[e].lo, ch_.events[e].hi, ch_.events[e].delta);
                    }
                    while (lo_acc < i && (ch_.mem[i] - ch_.mem[lo_acc] > opt_.memory_cap ||
                                          ch_.acc[i] - ch_.acc[lo_acc] > T)) {
                        ++lo_acc;  // communication is never negative, so compute alone bounds the load
                    }
                    lo_acc = std::max(lo_acc, ch_.last_unsupported[i] + 1);
                    // (the last run may still grow, so it is never passed)
                    while (run_first + 1 < static_cast<int>(runs_.size()) && runs_[run_first].last < lo_acc) {
                        ++run_first;
                    }
                    const double limit = opt_.overlap ? T : T - static_cast<double>(ch_.acc[i]);
                    if (best > 1 && lo_acc <= u) {
                        for (int r = run_first; r < static_cast<int>(runs_.size()); ++r) {
                            const Run& run = runs_[r];
                            if (run.need + 1 >= best) continue;
                            const int a = std::max(run.first, lo_acc), b = run.last;
                            ++queries;
                            // The same search decides and finds the start: a range minimum summed in
                            // another order could pass where the descent, by rounding, does not.
                            const int start = tree_.first_at_most(a, b, limit);
                            if (start >= 0) {
                                best = run.need + 1;
                                kind = 1;
                                from = start;
                                if (best == 1) break;
                            }
                        }
                    }
                }
                current[i] = std::min(best, none);
                const std::size_t at = static_cast<std::size_t>(c) * (n + 1) + i;
                choice_[at] = static_cast<std::uint8_t>(kind);
                from_[at] = from;
                if (runs_.back().need == current[i]) {
                    runs_.back().last = i;
                } else {
                    runs_.push_back({i, i, current[i]});
                }
            }
            std::swap(previous, current);
        }
        return previous[n] <= k_ ? 1 : 0;
    }

    // The split of the last successful test, as a device per position.
    std::vector<int> split() const {
        const int n = ch_.n;
        std::vector<int> device(n, -1);
        int next_acc = 0, next_cpu = k_, c = l_, i = n;
        while (i > 0) {
            const std::size_t at = static_cast<std::size_t>(c) * (n + 1) + i;
            const int j = from_[at];
            if (j < 0 || j > i || (choice_[at] == 0 && c == 0)) throw std::logic_error("broken chain choice");
            if (choice_[at] == 1) {
                for (int p = j; p < i; ++p) device[p] = next_acc;
                ++next_acc;
            } else {
                if (j < i) {
                    for (int p = j; p < i; ++p) device[p] = next_cpu;
                    ++next_cpu;
                }
                --c;
            }
            i = j;
        }
        return device;
    }

    // Max-load of a split, summed afresh unit by unit (as the evaluator does), not from prefix sums.
    double value(const std::vector<int>& device) const {
        const int devices = k_ + l_;
        std::vector<double> compute(devices, 0.0), comm(devices, 0.0);
        for (int p = 0; p < ch_.n; ++p) {
            const int d = device[p];
            compute[d] += d < k_ ? unit_acc_[p] : unit_cpu_[p];
        }
        // A group that spans several devices costs once on each of them (source and receivers).
        std::vector<int> seen;
        for (std::size_t g = 0; g < ch_.group_cost.size(); ++g) {
            seen.clear();
            for (int t = ch_.member_ptr[g]; t < ch_.member_ptr[g + 1]; ++t) {
                const int d = device[ch_.members[t]];
                if (std::find(seen.begin(), seen.end(), d) == seen.end()) seen.push_back(d);
            }
            if (seen.size() < 2) continue;
            for (const int d : seen) {
                if (d < k_) comm[d] += ch_.group_cost[g];
            }
        }
        double worst = 0.0;
        for (int d = 0; d < devices; ++d) {
            const double load = d < k_ ? (opt_.overlap ? std::max(compute[d], comm[d]) : compute[d] + comm[d])
                                       : compute[d];
            worst = std::max(worst, load);
        }
        return worst;
    }

    std::vector<double> unit_cpu_, unit_acc_;

private:
    struct Run {
        int first, last, need;
    };

    const Chain& ch_;
    const Options& opt_;
    Stopper& stop_;
    const int k_, l_;
    MinTree tree_;
    std::vector<double> base_;
    std::vector<Run> runs_;
    std::vector<std::uint8_t> choice_;  // [c][i]: 1 the last interval is on an accelerator, 0 on a CPU
    std::vector<int> from_;             // [c][i]: where that interval starts
    std::uint32_t ticks_ = 0;
};

}  // namespace

Solution solve_chain(const Instance& instance, const Options& options, const std::vector<std::int64_t>& order,
                     Stopper& stop) {
    Solution out;
    const auto t0 = Stopper::Clock::now();
    const Chain chain(instance, order);
    out.ideals = chain.n + 1;
    out.covers = chain.n;
    Search search(chain, options, stop);
    search.unit_cpu_.resize(chain.n);
    search.unit_acc_.resize(chain.n);
    for (int p = 0; p < chain.n; ++p) {
        const int u = chain.unit[p];
        search.unit_cpu_[p] = instance.cpu_time[u];
        search.unit_acc_[p] = instance.supported[u] ? instance.acc_time[u] : 0.0;
    }
    out.seconds_ideals = std::chrono::duration<double>(Stopper::Clock::now() - t0).count();
    const auto t1 = Stopper::Clock::now();

    auto finish = [&](Outcome outcome) {
        out.outcome = outcome;
        out.pairs = search.queries;
        out.seconds_dp = std::chrono::duration<double>(Stopper::Clock::now() - t1).count();
        if (stop.stopped()) out.stop_reason = stop.reason();
        return out;
    };
    std::vector<int> best;
    double best_value = kInf;
    auto test = [&](double T) {
        const int ok = search.feasible(T);
        if (ok == 1) {
            std::vector<int> device = search.split();
            const double v = search.value(device);
            if (v < best_value || best.empty()) {
                best_value = v;
                best = std::move(device);
            }
        }
        return ok;
    };
    auto keep = [&]() {
        out.value = best_value;
        out.device.assign(chain.n, -1);
        for (int p = 0; p < chain.n; ++p) out.device[chain.unit[p]] = best[p];
    };

    int ok = test(kInf);  // memory and support only
    if (ok < 0) return finish(Outcome::stopped);
    if (ok == 0) {
        out.value = kInf;
        return finish(Outcome::infeasible);
    }
    // Search T over the doubles: `lo` fails (or is below the optimum), `hi` passes. Bisect until
    // the bracket is narrow, then try the double just below the best split's value: failing proves
    // it optimal, passing gives a better split. A lower bound starts `lo` near the optimum: every
    // unit adds at least its cheaper compute time to some device, so the max-load is at least
    // the largest such time and their sum over the k + l devices.
    double lower = 0.0, total = 0.0;
    for (int p = 0; p < chain.n; ++p) {
        const int u = chain.unit[p];
        double cheapest = options.cpus > 0 ? instance.cpu_time[u] : kInf;
        if (options.accelerators > 0 && instance.supported[u] && instance.memory[u] <= options.memory_cap) {
            cheapest = std::min(cheapest, instance.acc_time[u]);
        }
        lower = std::max(lower, cheapest);
        total += cheapest;
    }
    lower = std::max(lower, total / (options.accelerators + options.cpus));
    double lo = std::isfinite(lower) ? lower * (1 - 1e-9) : 0.0;  // margin: `lower` was summed with rounding
    double hi = best_value;
    if (hi > 0.0 && lo == 0.0) {
        ok = test(0.0);
        if (ok < 0) {
            keep();
            return finish(Outcome::stopped);
        }
        if (ok == 1) hi = 0.0;
    }
    while (lo < hi) {
        const double mid = hi - lo > 1e-9 * hi ? lo + (hi - lo) / 2 : std::nextafter(hi, 0.0);
        if (!(lo < mid && mid < hi)) break;
        ok = test(mid);
        if (ok < 0) {
            keep();
            return finish(Outcome::stopped);
        }
        if (ok == 1) {
            hi = std::min(mid, best_value);
        } else {
            lo = mid;
        }
    }
    keep();
    return finish(Outcome::optimal);
}

}  // namespace exactplace
