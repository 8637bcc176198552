#include "ideals.hpp"

#include <algorithm>
#include <functional>
#include <queue>

namespace exactplace {

namespace {

inline bool test_bit(const std::vector<std::uint64_t>& bits, int v) { return (bits[v >> 6] >> (v & 63)) & 1u; }
inline void set_bit(std::vector<std::uint64_t>& bits, int v) { bits[v >> 6] |= std::uint64_t{1} << (v & 63); }
inline void clear_bit(std::vector<std::uint64_t>& bits, int v) { bits[v >> 6] &= ~(std::uint64_t{1} << (v & 63)); }

inline int lowest_bit(std::uint64_t word) { return __builtin_ctzll(word); }

// Zobrist key of a node: ideals are hashed as the XOR of their members' keys.
std::uint64_t node_key(int v) {
    std::uint64_t z = static_cast<std::uint64_t>(v) + 0x9E3779B97F4A7C15ull;  // splitmix64
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

void build_csr(int n, const std::vector<std::pair<int, int>>& pairs, std::vector<int>& ptr, std::vector<int>& out) {
    ptr.assign(n + 1, 0);
    for (const auto& p : pairs) ++ptr[p.first + 1];
    for (int i = 0; i < n; ++i) ptr[i + 1] += ptr[i];
    out.assign(pairs.size(), 0);
    std::vector<int> fill(ptr.begin(), ptr.end() - 1);
    for (const auto& p : pairs) out[fill[p.first]++] = p.second;
}

}  // namespace

Poset::Poset(int n, const std::vector<std::int64_t>& src, const std::vector<std::int64_t>& dst) : n_(n) {
    if (n < 0) throw std::invalid_argument("the number of nodes must be non-negative");
    if (src.size() != dst.size()) throw std::invalid_argument("src and dst must have the same length");
    std::vector<std::pair<int, int>> edges;
    edges.reserve(src.size());
    for (std::size_t e = 0; e < src.size(); ++e) {
        if (src[e] < 0 || src[e] >= n || dst[e] < 0 || dst[e] >= n) {
            throw std::invalid_argument("edge " + std::to_string(e) + " names a node outside 0.." + std::to_string(n - 1));
        }
        if (src[e] == dst[e]) throw std::invalid_argument("edge " + std::to_string(e) + " is a self-loop");
        edges.emplace_back(static_cast<int>(src[e]), static_cast<int>(dst[e]));
    }
    std::sort(edges.begin(), edges.end());
    edges.erase(std::unique(edges.begin(), edges.end()), edges.end());

    // Kahn's algorithm, smallest caller index first: a deterministic topological order.
    std::vector<int> indegree(n, 0), out_ptr, out;
    build_csr(n, edges, out_ptr, out);
    for (const auto& e : edges) ++indegree[e.second];
    std::priority_queue<int, std::vector<int>, std::greater<int>> ready;
    for (int v = 0; v < n; ++v) {
        if (indegree[v] == 0) ready.push(v);
    }
    node_of_.reserve(n);
    label_of_.assign(n, -1);
    while (!ready.empty()) {
        const int v = ready.top();
        ready.pop();
        label_of_[v] = static_cast<int>(node_of_.size());
        node_of_.push_back(v);
        for (int i = out_ptr[v]; i < out_ptr[v + 1]; ++i) {
            if (--indegree[out[i]] == 0) ready.push(out[i]);
        }
    }
    if (static_cast<int>(node_of_.size()) != n) throw std::invalid_argument("the graph has a directed cycle");

    std::vector<std::pair<int, int>> forward, backward;
    forward.reserve(edges.size());
    backward.reserve(edges.size());
    for (const auto& e : edges) {
        forward.emplace_back(label_of_[e.first], label_of_[e.second]);
        backward.emplace_back(label_of_[e.second], label_of_[e.first]);
    }
    std::sort(forward.begin(), forward.end());
    std::sort(backward.begin(), backward.end());
    build_csr(n, forward, succ_ptr_, succ_);
    build_csr(n, backward, pred_ptr_, pred_);
}

IdealWalker::IdealWalker(const Poset& poset)
    : poset_(poset),
      members_(poset.words(), 0),
      addable_(poset.words(), 0),
      maximal_(poset.words(), 0),
      missing_preds_(poset.size(), 0),
      succs_inside_(poset.size(), 0) {
    for (int v = 0; v < poset.size(); ++v) {
        missing_preds_[v] = static_cast<int>(poset.preds_end(v) - poset.preds_begin(v));
        if (missing_preds_[v] == 0) {
            set_bit(addable_, v);
            ++addable_count_;
        }
    }
}

void IdealWalker::add(int v) {
    set_bit(members_, v);
    clear_bit(addable_, v);
    --addable_count_;
    set_bit(maximal_, v);  // none of v's successors can be inside yet
    ++size_;
    for (const int* s = poset_.succs_begin(v); s != poset_.succs_end(v); ++s) {
        if (--missing_preds_[*s] == 0) {
            set_bit(addable_, *s);
            ++addable_count_;
        }
    }
    for (const int* p = poset_.preds_begin(v); p != poset_.preds_end(v); ++p) {
        if (succs_inside_[*p]++ == 0) clear_bit(maximal_, *p);
    }
}

void IdealWalker::remove(int v) {
    for (const int* p = poset_.preds_begin(v); p != poset_.preds_end(v); ++p) {
        if (--succs_inside_[*p] == 0) set_bit(maximal_, *p);
    }
    for (const int* s = poset_.succs_begin(v); s != poset_.succs_end(v); ++s) {
        if (missing_preds_[*s]++ == 0) {
            clear_bit(addable_, *s);
            --addable_count_;
        }
    }
    --size_;
    clear_bit(maximal_, v);
    set_bit(addable_, v);
    ++addable_count_;
    clear_bit(members_, v);
}

int IdealWalker::next_addable(int after) const {
    const int start = after + 1;
    if (start >= poset_.size()) return -1;
    int w = start >> 6;
    std::uint64_t word = addable_[w] & (~std::uint64_t{0} << (start & 63));
    const int words = static_cast<int>(addable_.size());
    while (true) {
        if (word != 0) return (w << 6) + lowest_bit(word);
        if (++w == words) return -1;
        word = addable_[w];
    }
}

bool for_each_ideal(const Poset& poset, IdealObserver& observer, Stopper& stop) {
    IdealWalker walker(poset);
    if (!observer.visit(walker)) return false;
    // frame: the element added last (-1 at the root) and the last child tried.
    struct Frame {
        int added, cursor;
    };
    std::vector<Frame> stack;
    stack.reserve(static_cast<std::size_t>(poset.size()) + 1);
    stack.push_back({-1, -1});
    std::uint32_t ticks = 0;
    while (!stack.empty()) {
        Frame& top = stack.back();
        const int v = walker.next_addable(top.cursor);
        if (v < 0) {
            const int added = top.added;
            stack.pop_back();
            if (added >= 0) {
                observer.leave(added);
                walker.remove(added);
            }
            continue;
        }
        top.cursor = v;
        walker.add(v);
        observer.enter(v);
        if (!observer.visit(walker) || stop.check_owner(ticks)) return false;
        stack.push_back({v, v});
    }
    return true;
}

namespace {

class Counter : public IdealObserver {
public:
    explicit Counter(std::int64_t limit) : limit_(limit) {}
    void enter(int) override {}
    void leave(int) override {}
    bool visit(const IdealWalker& walker) override {
        ++result.ideals;
        result.covers += walker.addable_count();
        if (result.ideals > limit_) {
            result.exceeded = true;
            return false;
        }
        return true;
    }
    IdealCount result;

private:
    std::int64_t limit_;
};

class Recorder : public IdealObserver {
public:
    Recorder(const IdealCount& expected, int words, IdealObserver* inner, std::vector<std::uint64_t>& bits,
             std::vector<std::uint64_t>& hashes, std::vector<std::int32_t>& sizes, std::vector<std::int64_t>& max_ptr,
             std::vector<std::int32_t>& max_node)
        : words_(words), inner_(inner), bits_(bits), hashes_(hashes), sizes_(sizes), max_ptr_(max_ptr),
          max_node_(max_node) {
        bits_.reserve(static_cast<std::size_t>(expected.ideals) * words);
        hashes_.reserve(expected.ideals);
        sizes_.reserve(expected.ideals);
        max_ptr_.reserve(expected.ideals + 1);
        max_ptr_.push_back(0);
        max_node_.reserve(expected.covers);
    }
    void enter(int v) override {
        hash_ ^= node_key(v);
        if (inner_) inner_->enter(v);
    }
    void leave(int v) override {
        hash_ ^= node_key(v);
        if (inner_) inner_->leave(v);
    }
    bool visit(const IdealWalker& walker) override {
        const auto& members = walker.members();
        bits_.insert(bits_.end(), members.begin(), members.end());
        hashes_.push_back(hash_);
        sizes_.push_back(walker.size());
        const auto& maximal = walker.maximal();
        for (int w = 0; w < words_; ++w) {
            for (std::uint64_t word = maximal[w]; word != 0; word &= word - 1) {
                max_node_.push_back((w << 6) + lowest_bit(word));
            }
        }
        max_ptr_.push_back(static_cast<std::int64_t>(max_node_.size()));
        return inner_ ? inner_->visit(walker) : true;
    }

private:
    int words_;
    IdealObserver* inner_;
    std::vector<std::uint64_t>& bits_;
    std::vector<std::uint64_t>& hashes_;
    std::vector<std::int32_t>& sizes_;
    std::vector<std::int64_t>& max_ptr_;
    std::vector<std::int32_t>& max_node_;
    std::uint64_t hash_ = 0;
};

}  // namespace

IdealCount count_ideals(const Poset& poset, std::int64_t limit, Stopper& stop) {
    Counter counter(limit);
    if (!for_each_ideal(poset, counter, stop) && !counter.result.exceeded) counter.result.stopped = true;
    return counter.result;
}

bool Lattice::build(const Poset& poset, const IdealCount& expected, IdealObserver* observer, Stopper& stop) {
    words = poset.words();
    std::vector<std::uint64_t> hashes;
    std::vector<std::int32_t> sizes;
    std::vector<std::int64_t> max_ptr;
    std::vector<std::int32_t> max_node;
    {
        Recorder recorder(expected, words, observer, bits_, hashes, sizes, max_ptr, max_node);
        if (!for_each_ideal(poset, recorder, stop)) return false;
    }
    count = static_cast<std::int64_t>(sizes.size());
    if (count != expected.ideals) throw std::logic_error("the ideal count changed between two enumerations");

    // Number ideals by size (counting sort), so every sub-ideal has a smaller id.
    const int n = poset.size();
    std::vector<std::int64_t> start(n + 2, 0);
    for (const auto s : sizes) ++start[s + 1];
    for (int s = 0; s <= n; ++s) start[s + 1] += start[s];
    id_of_visit.assign(count, 0);
    dfs_of_id_.assign(count, 0);
    ideal_size.assign(count, 0);
    for (std::int64_t d = 0; d < count; ++d) {
        const std::int64_t id = start[sizes[d]]++;
        id_of_visit[d] = id;
        dfs_of_id_[id] = static_cast<std::int32_t>(d);
        ideal_size[id] = sizes[d];
    }

    // Down-covers: ideal \ {v} is found by its hash, then confirmed by comparing members.
    std::size_t capacity = 1;
    while (capacity < static_cast<std::size_t>(2 * count)) capacity <<= 1;
    const std::size_t mask = capacity - 1;
    std::vector<std::int32_t> table(capacity, -1);
    for (std::int64_t d = 0; d < count; ++d) {
        std::size_t slot = hashes[d] & mask;
        while (table[slot] >= 0) slot = (slot + 1) & mask;
        table[slot] = static_cast<std::int32_t>(d);
    }
    down_ptr.assign(count + 1, 0);
    down_node.resize(max_node.size());
    down_child.resize(max_node.size());
    std::int64_t out = 0;
    for (std::int64_t id = 0; id < count; ++id) {
        const std::int64_t d = dfs_of_id_[id];
        const std::uint64_t* mine = bits_.data() + static_cast<std::size_t>(d) * words;
        for (std::int64_t i = max_ptr[d]; i < max_ptr[d + 1]; ++i) {
            const int v = max_node[i];
            const std::uint64_t target = hashes[d] ^ node_key(v);
            std::int64_t found = -1;
            for (std::size_t slot = target & mask; table[slot] >= 0; slot = (slot + 1) & mask) {
                const std::int64_t c = table[slot];
                if (hashes[c] != target) continue;
                const std::uint64_t* other = bits_.data() + static_cast<std::size_t>(c) * words;
                bool same = true;
                for (int w = 0; w < words && same; ++w) {
                    const std::uint64_t expect = w == (v >> 6) ? mine[w] & ~(std::uint64_t{1} << (v & 63)) : mine[w];
                    same = other[w] == expect;
                }
                if (same) {
                    found = c;
                    break;
                }
            }
            if (found < 0) throw std::logic_error("a sub-ideal is missing from the lattice");
            down_node[out] = v;
            down_child[out] = static_cast<std::int32_t>(id_of_visit[found]);
            ++out;
        }
        down_ptr[id + 1] = out;
        if ((id & 4095) == 0 && stop.check_owner_now()) return false;
    }

    // Up-covers: the down-covers inverted. Parents are visited in increasing id, and each
    // child's list must be sorted by node, so bucket by child then sort each (short) list.
    up_ptr.assign(count + 1, 0);
    for (std::int64_t e = 0; e < out; ++e) ++up_ptr[down_child[e] + 1];
    for (std::int64_t id = 0; id < count; ++id) up_ptr[id + 1] += up_ptr[id];
    up_node.resize(out);
    up_parent.resize(out);
    std::vector<std::int64_t> fill(up_ptr.begin(), up_ptr.end() - 1);
    for (std::int64_t id = 0; id < count; ++id) {
        for (std::int64_t e = down_ptr[id]; e < down_ptr[id + 1]; ++e) {
            const std::int64_t slot = fill[down_child[e]]++;
            up_node[slot] = down_node[e];
            up_parent[slot] = static_cast<std::int32_t>(id);
        }
    }
    std::vector<std::pair<std::int32_t, std::int32_t>> scratch;
    for (std::int64_t id = 0; id < count; ++id) {
        scratch.clear();
        for (std::int64_t e = up_ptr[id]; e < up_ptr[id + 1]; ++e) scratch.emplace_back(up_node[e], up_parent[e]);
        std::sort(scratch.begin(), scratch.end());
        for (std::size_t i = 0; i < scratch.size(); ++i) {
            up_node[up_ptr[id] + static_cast<std::int64_t>(i)] = scratch[i].first;
            up_parent[up_ptr[id] + static_cast<std::int64_t>(i)] = scratch[i].second;
        }
    }
    return true;
}

}  // namespace exactplace
