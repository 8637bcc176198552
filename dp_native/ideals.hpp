// Ideals (down-closed node sets) of a DAG: counting them, and building the lattice the DP walks.
//
// Nodes are relabelled by a topological order (Poset), so u < v for every edge u -> v. Every
// ideal is then generated exactly once by adding its elements in increasing label order (each
// prefix of that sequence is down-closed): a canonical depth-first search that needs no
// duplicate detection. The same argument top-down (remove elements in decreasing label order)
// lets the DP walk the sub-ideals of an ideal without revisiting any.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include "stop.hpp"

namespace exactplace {

// The DP would need more ideals than its limit allows; thrown before the big tables exist.
class TooManyIdeals : public std::runtime_error {
public:
    TooManyIdeals(std::int64_t count, std::int64_t limit)
        : std::runtime_error("more than " + std::to_string(limit) + " ideals"), count_(count), limit_(limit) {}
    std::int64_t count() const { return count_; }
    std::int64_t limit() const { return limit_; }

private:
    std::int64_t count_, limit_;
};

// A DAG on nodes 0..n-1 (the caller's numbering), relabelled 0..n-1 in a topological order.
class Poset {
public:
    // Throws std::invalid_argument for an out-of-range endpoint, a self-loop or a cycle.
    // Duplicate edges are allowed. The order is the smallest-caller-index-first topological
    // order, so it is deterministic.
    Poset(int n, const std::vector<std::int64_t>& src, const std::vector<std::int64_t>& dst);

    int size() const { return n_; }
    int words() const { return (n_ + 63) / 64; }
    int node_of(int label) const { return node_of_[label]; }
    int label_of(int node) const { return label_of_[node]; }

    const int* preds_begin(int v) const { return pred_.data() + pred_ptr_[v]; }
    const int* preds_end(int v) const { return pred_.data() + pred_ptr_[v + 1]; }
    const int* succs_begin(int v) const { return succ_.data() + succ_ptr_[v]; }
    const int* succs_end(int v) const { return succ_.data() + succ_ptr_[v + 1]; }

private:
    int n_;
    std::vector<int> node_of_, label_of_;
    std::vector<int> pred_ptr_, pred_, succ_ptr_, succ_;  // CSR over labels, duplicates removed
};

// The current ideal of a depth-first search, with what is needed to extend and shrink it in O(degree).
class IdealWalker {
public:
    explicit IdealWalker(const Poset& poset);

    void add(int v);     // v must be addable
    void remove(int v);  // v must be maximal in the ideal
    // Smallest addable label greater than `after` (-1 to start), or -1 when there is none.
    int next_addable(int after) const;

    int size() const { return size_; }
    std::int64_t addable_count() const { return addable_count_; }
    const std::vector<std::uint64_t>& members() const { return members_; }
    const std::vector<std::uint64_t>& maximal() const { return maximal_; }

private:
    const Poset& poset_;
    std::vector<std::uint64_t> members_, addable_, maximal_;
    std::vector<int> missing_preds_;  // predecessors outside the ideal
    std::vector<int> succs_inside_;   // successors inside the ideal
    int size_ = 0;
    std::int64_t addable_count_ = 0;
};

// Receives the canonical depth-first search over all ideals.
class IdealObserver {
public:
    virtual ~IdealObserver() = default;
    virtual void enter(int v) = 0;                // v was just added to the current ideal
    virtual void leave(int v) = 0;                // v is about to be removed
    virtual bool visit(const IdealWalker&) = 0;   // one ideal, in DFS order; false stops the search
};

// Calls `observer` on every ideal (the empty one first). Returns false if stopped (by the
// observer or by `stop`).
bool for_each_ideal(const Poset& poset, IdealObserver& observer, Stopper& stop);

struct IdealCount {
    std::int64_t ideals = 0;   // exact when !exceeded
    std::int64_t covers = 0;   // pairs (I, I + v) of ideals: the lattice's edges
    bool exceeded = false;     // more than `limit` ideals
    bool stopped = false;      // interrupted or out of time (counts are partial)
};

// Counts ideals, giving up as soon as there are more than `limit`.
IdealCount count_ideals(const Poset& poset, std::int64_t limit, Stopper& stop);

// All ideals, numbered by size (0: empty set, count-1: everything), with their down-covers:
// for ideal i, the pairs (v, j) with v maximal in i and j = i \ {v}, sorted by v; and their
// up-covers: the pairs (v, j) with j = i + {v}, sorted by v.
struct Lattice {
    int words = 0;
    std::int64_t count = 0;
    std::vector<std::int32_t> ideal_size;    // by id, non-decreasing
    std::vector<std::int64_t> down_ptr;      // CSR by id
    std::vector<std::int32_t> down_node, down_child;
    std::vector<std::int64_t> up_ptr;        // CSR by id
    std::vector<std::int32_t> up_node, up_parent;
    std::vector<std::int64_t> id_of_visit;   // DFS visit index -> id

    const std::uint64_t* members(std::int64_t id) const {
        return bits_.data() + static_cast<std::size_t>(dfs_of_id_[id]) * words;
    }

    // Builds the lattice; `observer` (may be null) follows the DFS, its visit index being the
    // one in id_of_visit. `expected` must come from count_ideals on the same poset (it sizes the
    // arrays exactly). Returns false if stopped.
    bool build(const Poset& poset, const IdealCount& expected, IdealObserver* observer, Stopper& stop);

private:
    std::vector<std::uint64_t> bits_;        // by DFS visit index
    std::vector<std::int32_t> dfs_of_id_;
};

}  // namespace exactplace
