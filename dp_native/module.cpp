// pybind11 entry point of exactplace._native: thin bindings over the pure C++ core
// (ideals.hpp, dp.hpp). Arrays are copied in, the GIL is released around the C++ work, and
// Ctrl-C is noticed by polling PyErr_CheckSignals from the calling thread.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

#include <cstdint>
#include <limits>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "dp.hpp"
#include "ideals.hpp"
#include "stop.hpp"

namespace py = pybind11;
using exactplace::StopReason;

namespace {

template <typename T>
std::vector<T> to_vector(const py::array_t<T, py::array::c_style | py::array::forcecast>& array, const char* name) {
    if (array.ndim() != 1) throw std::invalid_argument(std::string(name) + " must be a one-dimensional array");
    const T* data = array.data();
    return std::vector<T>(data, data + array.shape(0));
}

using IntArray = py::array_t<std::int64_t, py::array::c_style | py::array::forcecast>;
using FloatArray = py::array_t<double, py::array::c_style | py::array::forcecast>;
using ByteArray = py::array_t<std::uint8_t, py::array::c_style | py::array::forcecast>;

// Polls for Ctrl-C (and any exception raised by a Python signal handler) with the GIL held; the
// exception is kept and re-raised once the C++ work has unwound.
struct SignalPoll {
    std::optional<py::error_already_set> pending;
    bool operator()() {
        py::gil_scoped_acquire gil;
        if (PyErr_CheckSignals() != 0) {
            pending.emplace();  // fetches and clears the Python error
            return true;
        }
        return false;
    }
};

const char* reason_name(StopReason reason) { return reason == StopReason::time ? "time" : "interrupt"; }

py::object count_ideals(int units, const IntArray& src, const IntArray& dst, std::int64_t limit) {
    if (limit < 0) throw std::invalid_argument("limit must be non-negative");
    const auto s = to_vector(src, "src");
    const auto d = to_vector(dst, "dst");
    SignalPoll poll;
    exactplace::IdealCount count;
    {
        py::gil_scoped_release release;
        const exactplace::Poset poset(units, s, d);
        exactplace::Stopper stop(std::numeric_limits<double>::infinity(), [&poll] { return poll(); });
        count = exactplace::count_ideals(poset, limit, stop);
    }
    if (poll.pending) throw *poll.pending;
    if (count.exceeded) return py::none();
    return py::make_tuple(count.ideals, count.covers);
}

py::dict solve(int units, const FloatArray& cpu_time, const FloatArray& acc_time, const FloatArray& memory,
               const ByteArray& supported, const IntArray& edge_src, const IntArray& edge_dst,
               const FloatArray& group_cost, const IntArray& group_source, const IntArray& group_ptr,
               const IntArray& group_target, int accelerators, int cpus, double memory_cap, bool overlap,
               int threads, double time_limit, std::int64_t max_ideals) {
    exactplace::Instance instance;
    instance.units = units;
    instance.cpu_time = to_vector(cpu_time, "cpu_time");
    instance.acc_time = to_vector(acc_time, "acc_time");
    instance.memory = to_vector(memory, "memory");
    instance.supported = to_vector(supported, "supported");
    instance.edge_src = to_vector(edge_src, "edge_src");
    instance.edge_dst = to_vector(edge_dst, "edge_dst");
    instance.group_cost = to_vector(group_cost, "group_cost");
    instance.group_source = to_vector(group_source, "group_source");
    instance.group_ptr = to_vector(group_ptr, "group_ptr");
    instance.group_target = to_vector(group_target, "group_target");
    exactplace::Options options;
    options.accelerators = accelerators;
    options.cpus = cpus;
    options.memory_cap = memory_cap;
    options.overlap = overlap;
    options.threads = threads;
    options.max_ideals = max_ideals;

    SignalPoll poll;
    exactplace::Solution solution;
    {
        py::gil_scoped_release release;
        exactplace::Stopper stop(time_limit, [&poll] { return poll(); });
        solution = exactplace::solve(instance, options, stop);
    }
    if (poll.pending) throw *poll.pending;

    py::dict result;
    switch (solution.outcome) {
        case exactplace::Outcome::optimal: result["status"] = "optimal"; break;
        case exactplace::Outcome::infeasible: result["status"] = "infeasible"; break;
        case exactplace::Outcome::stopped: result["status"] = reason_name(solution.stop_reason); break;
    }
    result["value"] = solution.value;
    if (solution.device.empty()) {
        result["device"] = py::none();
    } else {
        py::array_t<std::int64_t> device(static_cast<py::ssize_t>(solution.device.size()));
        auto view = device.mutable_unchecked<1>();
        for (py::ssize_t i = 0; i < view.shape(0); ++i) view(i) = solution.device[i];
        result["device"] = device;
    }
    result["ideals"] = solution.ideals;
    result["covers"] = solution.covers;
    result["pairs"] = solution.pairs;
    result["seconds_ideals"] = solution.seconds_ideals;
    result["seconds_dp"] = solution.seconds_dp;
    result["threads"] = solution.threads_used;
    return result;
}

}  // namespace

PYBIND11_MODULE(_native, m) {
    m.doc() = "exactplace native core: ideals of a DAG and the max-load DP (C++17)";
    m.attr("abi_version") = 1;

    // TooManyIdeals(message, count, limit): the lattice is larger than max_ideals.
    PYBIND11_CONSTINIT static py::gil_safe_call_once_and_store<py::object> too_many;
    too_many.call_once_and_store_result(
        [&m] { return py::exception<exactplace::TooManyIdeals>(m, "TooManyIdeals", PyExc_RuntimeError); });
    py::register_exception_translator([](std::exception_ptr p) {
        try {
            if (p) std::rethrow_exception(p);
        } catch (const exactplace::TooManyIdeals& e) {
            const py::object& type = too_many.get_stored();
            const py::object error = type(py::str(e.what()), e.count(), e.limit());
            PyErr_SetObject(type.ptr(), error.ptr());
        }
    });

    m.def("count_ideals", &count_ideals, py::arg("units"), py::arg("src"), py::arg("dst"), py::arg("limit"),
          "Count the ideals of the DAG on nodes 0..units-1; (ideals, covers), or None beyond `limit`.");
    m.def("solve", &solve, py::arg("units"), py::arg("cpu_time"), py::arg("acc_time"), py::arg("memory"),
          py::arg("supported"), py::arg("edge_src"), py::arg("edge_dst"), py::arg("group_cost"),
          py::arg("group_source"), py::arg("group_ptr"), py::arg("group_target"), py::arg("accelerators"),
          py::arg("cpus"), py::arg("memory_cap"), py::arg("overlap"), py::arg("threads"), py::arg("time_limit"),
          py::arg("max_ideals"), "Run the max-load DP over the ideals of the unit DAG.");
    m.def("memory_estimate", &exactplace::memory_estimate, py::arg("units"), py::arg("accelerators"),
          py::arg("cpus"), py::arg("ideals"), py::arg("covers"),
          "Bytes solve() allocates for a lattice of the given size.");
}
