#pragma once
// The maximum of many lines k + m * t at a time t that only moves forward:
// a kinetic tournament tree. Each inner node keeps the leaf that wins its
// subtree now and the earliest time that may change (two winners cross);
// a query recomputes only the nodes whose time has come. Leaves are set
// and cleared at the current time (a task's score changes its piece, the
// task becomes ready or leaves). O(log n) per update plus the crossings.
#include <cstddef>
#include <cstdint>
#include <limits>
#include <vector>

namespace cronoq::sim {

class KineticMax {
public:
    explicit KineticMax(std::size_t leaves);

    /// From `now` on, leaf `i` is the line k + m * t. `now` never goes
    /// backwards across calls.
    void set(std::size_t i, double k, double m, double now);
    void clear(std::size_t i, double now);
    /// The largest value at `now`; -infinity when every leaf is clear.
    double max(double now);

private:
    static constexpr std::uint32_t none = std::numeric_limits<std::uint32_t>::max();
    static constexpr double inf = std::numeric_limits<double>::infinity();
    struct Line {
        double k = 0;
        double m = 0;
    };
    double value(std::uint32_t leaf, double t) const { return lines_[leaf].k + lines_[leaf].m * t; }
    void fix(std::size_t node, double now);
    void pull(std::size_t node, double now);
    void update_path(std::size_t leaf, double now);

    std::size_t size_ = 1;
    std::vector<Line> lines_;
    std::vector<std::uint32_t> winner_;  // per node: a leaf, or none
    std::vector<double> fail_;           // per node: when its winner may change
};

}  // namespace cronoq::sim
