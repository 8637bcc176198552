// Compressed sparse rows from (row, value) pairs: the adjacency lists both native models build.
#pragma once

#include <algorithm>
#include <cstddef>
#include <utility>
#include <vector>

namespace exactplace {

// Sorts `pairs` and writes, for rows 0..rows-1, row r's values as out[ptr[r] .. ptr[r + 1]).
inline void pairs_to_csr(std::vector<std::pair<int, int>>& pairs, int rows, std::vector<int>& ptr,
                         std::vector<int>& out) {
    std::sort(pairs.begin(), pairs.end());
    ptr.assign(rows + 1, 0);
    for (const auto& p : pairs) ++ptr[p.first + 1];
    for (int i = 0; i < rows; ++i) ptr[i + 1] += ptr[i];
    out.resize(pairs.size());
    for (std::size_t i = 0; i < pairs.size(); ++i) out[i] = pairs[i].second;
}

}  // namespace exactplace
