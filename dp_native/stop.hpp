// Cooperative stopping for long native loops: a wall-clock deadline and an optional poll
// (the Python binding polls for Ctrl-C). Pure C++, no Python here.
#pragma once

#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <functional>
#include <limits>

namespace exactplace {

enum class StopReason : int { none = 0, time = 1, interrupt = 2 };

class Stopper {
public:
    using Clock = std::chrono::steady_clock;

    // `seconds`: time budget from now (inf or NaN: none). `poll`: called from the owning thread
    // at most every `poll_interval`; returning true requests an interrupt stop.
    explicit Stopper(double seconds = std::numeric_limits<double>::infinity(),
                     std::function<bool()> poll = {})
        : poll_(std::move(poll)), has_deadline_(std::isfinite(seconds)), last_poll_(Clock::now()) {
        if (has_deadline_) {
            deadline_ = Clock::now() + std::chrono::duration_cast<Clock::duration>(
                                           std::chrono::duration<double>(seconds > 0 ? seconds : 0.0));
        }
    }

    // Cheap enough for inner loops: reads the clock only every 1024 calls of the same `ticks`
    // counter, which belongs to the calling thread (a shared counter would make every call
    // invalidate the other threads' cached copy). Only the thread that created the Stopper
    // may call it (the poll may need that thread, e.g. for the GIL).
    bool check_owner(std::uint32_t& ticks) {
        if ((++ticks & 1023u) != 0) return stopped();
        return check_owner_now();
    }

    // Reads the clock (and polls when due) right away.
    bool check_owner_now() {
        if (stopped()) return true;
        const auto now = Clock::now();
        if (has_deadline_ && now >= deadline_) {
            request(StopReason::time);
            return true;
        }
        if (poll_ && now - last_poll_ >= poll_interval) {
            last_poll_ = now;
            if (poll_()) {
                request(StopReason::interrupt);
                return true;
            }
        }
        return false;
    }

    // For helper threads: the deadline and the shared flag only (no poll).
    bool check_helper(std::uint32_t& ticks) {
        if ((++ticks & 1023u) != 0) return stopped();
        if (stopped()) return true;
        if (has_deadline_ && Clock::now() >= deadline_) {
            request(StopReason::time);
            return true;
        }
        return false;
    }

    bool stopped() const { return reason_.load(std::memory_order_relaxed) != 0; }
    StopReason reason() const { return static_cast<StopReason>(reason_.load(std::memory_order_relaxed)); }

    void request(StopReason why) {
        int expected = 0;
        reason_.compare_exchange_strong(expected, static_cast<int>(why));
    }

    static constexpr std::chrono::milliseconds poll_interval{50};

private:
    std::function<bool()> poll_;
    bool has_deadline_;
    Clock::time_point deadline_{};
    Clock::time_point last_poll_;
    // Read at every check by every thread and written once: alone on its cache line.
    alignas(64) std::atomic<int> reason_{0};
    char pad_[64 - sizeof(std::atomic<int>)] = {};
};

}  // namespace exactplace
