#include "kinetic_max.hpp"

#include <algorithm>

namespace cronoq::sim {

KineticMax::KineticMax(std::size_t leaves) {
    while (size_ < leaves) size_ <<= 1;
    lines_.assign(size_, Line{});
    winner_.assign(2 * size_, none);
    fail_.assign(2 * size_, inf);
}

void KineticMax::pull(std::size_t node, double now) {
    const std::size_t left = 2 * node, right = left + 1;
    const std::uint32_t a = winner_[left], b = winner_[right];
    double fail = std::min(fail_[left], fail_[right]);
    if (a == none || b == none) {
        winner_[node] = a == none ? b : a;
        fail_[node] = fail;
        return;
    }
    const double va = value(a, now), vb = value(b, now);
    // On a tie the steeper line wins: it stays ahead longer.
    const bool a_wins = va > vb || (va == vb && lines_[a].m >= lines_[b].m);
    const std::uint32_t w = a_wins ? a : b, l = a_wins ? b : a;
    const double vw = a_wins ? va : vb, vl = a_wins ? vb : va;
    if (lines_[l].m > lines_[w].m) fail = std::min(fail, now + (vw - vl) / (lines_[l].m - lines_[w].m));
    winner_[node] = w;
    fail_[node] = fail;
}

void KineticMax::fix(std::size_t node, double now) {
    if (node >= size_ || fail_[node] > now) return;
    fix(2 * node, now);
    fix(2 * node + 1, now);
    pull(node, now);
}

void KineticMax::update_path(std::size_t leaf, double now) {
    for (std::size_t node = (leaf + size_) >> 1; node > 0; node >>= 1) {
        // Both children must be right at `now`: the one on the path is,
        // its sibling may have a crossing due.
        fix(2 * node, now);
        fix(2 * node + 1, now);
        pull(node, now);
    }
}

void KineticMax::set(std::size_t i, double k, double m, double now) {
    lines_[i] = Line{k, m};
    winner_[i + size_] = static_cast<std::uint32_t>(i);
    update_path(i, now);
}

void KineticMax::clear(std::size_t i, double now) {
    winner_[i + size_] = none;
    update_path(i, now);
}

double KineticMax::max(double now) {
    fix(1, now);
    return winner_[1] == none ? -inf : value(winner_[1], now);
}

}  // namespace cronoq::sim
