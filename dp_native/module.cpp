// pybind11 entry point of exactplace._native: thin bindings over the pure C++ core
// (ideals.hpp, dp.hpp, path.hpp, set_pricing.hpp). Arrays are copied in, the GIL is released around the C++ work, and
// Ctrl-C is noticed by polling PyErr_CheckSignals from the calling thread.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

#include <cstdint>
#include <limits>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "bounded.hpp"
#include "dp.hpp"
#include "ideals.hpp"
#include "path.hpp"
#include "set_pricing.hpp"
#include "stop.hpp"

namespace py = pybind11;

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

// Polls for Ctrl-C (and any exception raised by a Python signal handler) with the GIL held, and asks `cancelled`
// (a Python callable, when not None: a thread beside a solve is stopped by an event, signals reach only the main
// thread); the exception is kept and re-raised once the C++ work has unwound.
struct SignalPoll {
    py::object cancelled = py::none();
    std::optional<py::error_already_set> pending;
    bool operator()() {
        py::gil_scoped_acquire gil;
        if (PyErr_CheckSignals() != 0) {
            pending.emplace();  // fetches and clears the Python error
            return true;
        }
        return !cancelled.is_none() && cancelled().cast<bool>();
    }
};

// Runs `work(stop)` with the GIL released and a Stopper of `seconds` that polls for Ctrl-C (and `cancelled`); a
// Python exception the poll caught is raised once the C++ work has unwound.
template <typename Work>
auto without_gil(double seconds, Work&& work, py::object cancelled = py::none()) {
    SignalPoll poll{std::move(cancelled), std::nullopt};
    decltype(work(std::declval<exactplace::Stopper&>())) result;
    {
        py::gil_scoped_release release;
        exactplace::Stopper stop(seconds, [&poll] { return poll(); });
        result = work(stop);
    }
    if (poll.pending) throw *poll.pending;
    return result;
}

py::object count_ideals(int units, const IntArray& src, const IntArray& dst, std::int64_t limit) {
    if (limit < 0) throw std::invalid_argument("limit must be non-negative");
    const auto s = to_vector(src, "src");
    const auto d = to_vector(dst, "dst");
    const exactplace::IdealCount count =
        without_gil(std::numeric_limits<double>::infinity(), [&](exactplace::Stopper& stop) {
            const exactplace::Poset poset(units, s, d);
            return exactplace::count_ideals(poset, limit, stop);
        });
    if (count.exceeded) return py::none();
    return py::make_tuple(count.ideals, count.covers);
}

// The latency path bound (path.hpp) on the reduced graph; a dict, the chains as numpy arrays.
py::dict latency_path_bound(int units, const IntArray& edge_src, const IntArray& edge_dst, const FloatArray& cpu_time,
                            const FloatArray& acc_time, const FloatArray& memory, double memory_cap, int accelerators,
                            bool cpus, const FloatArray& group_cost, const IntArray& group_source,
                            const IntArray& group_ptr, const IntArray& group_target, const ByteArray& group_stuck,
                            const FloatArray& group_sink_memory, const IntArray& path_ptr, const IntArray& path_node,
                            std::int64_t max_ideals, std::int64_t memory_budget, double time_limit) {
    exactplace::PathInstance in;
    in.units = units;
    in.edge_src = to_vector(edge_src, "edge_src");
    in.edge_dst = to_vector(edge_dst, "edge_dst");
    in.cpu_time = to_vector(cpu_time, "cpu_time");
    in.acc_time = to_vector(acc_time, "acc_time");
    in.memory = to_vector(memory, "memory");
    in.memory_cap = memory_cap;
    in.accelerators = accelerators;
    in.cpus = cpus;
    in.group_cost = to_vector(group_cost, "group_cost");
    in.group_source = to_vector(group_source, "group_source");
    in.group_ptr = to_vector(group_ptr, "group_ptr");
    in.group_target = to_vector(group_target, "group_target");
    in.group_stuck = to_vector(group_stuck, "group_stuck");
    in.group_sink_memory = to_vector(group_sink_memory, "group_sink_memory");
    in.path_ptr = to_vector(path_ptr, "path_ptr");
    in.path_node = to_vector(path_node, "path_node");
    exactplace::PathOptions options;
    options.max_ideals = max_ideals;
    options.memory_budget = memory_budget;
    const exactplace::PathResult r =
        without_gil(time_limit, [&](exactplace::Stopper& stop) { return exactplace::path_bound(in, options, stop); });
    static const char* const names[] = {"done", "too_many_ideals", "over_budget", "time", "interrupt"};
    py::list chains;
    for (std::size_t p = 0; p < r.step_of_unit.size(); ++p) {
        if (!r.has_chain[p]) {
            chains.append(py::none());
            continue;
        }
        const auto& step = r.step_of_unit[p];
        const auto& kind = r.step_on_accelerator[p];
        chains.append(py::make_tuple(py::array_t<std::int32_t>(static_cast<py::ssize_t>(step.size()), step.data()),
                                     py::array_t<std::uint8_t>(static_cast<py::ssize_t>(kind.size()), kind.data())));
    }
    py::dict out;
    out["status"] = names[static_cast<int>(r.status)];
    out["values"] = py::array_t<double>(static_cast<py::ssize_t>(r.values.size()), r.values.data());
    out["chains"] = chains;
    out["ideals"] = r.ideals;
    out["covers"] = r.covers;
    out["pairs"] = r.pairs;
    out["bytes"] = r.bytes;
    out["seconds_ideals"] = r.seconds_ideals;
    out["seconds_dp"] = r.seconds_dp;
    return out;
}

// Class sets (one 0/1 entry per class each) as a bool array of shape (sets, classes).
py::array_t<bool> bool_rows(const std::vector<std::vector<std::uint8_t>>& found, int classes) {
    py::array_t<bool> rows({static_cast<py::ssize_t>(found.size()), static_cast<py::ssize_t>(classes)});
    auto out = rows.mutable_unchecked<2>();
    for (std::size_t s = 0; s < found.size(); ++s)
        for (py::ssize_t u = 0; u < classes; ++u) out(static_cast<py::ssize_t>(s), u) = found[s][u] != 0;
    return rows;
}

// The device-set pricing DP (set_pricing.hpp): built once per relaxation, priced many times.
std::unique_ptr<exactplace::SetPricer> make_set_pricer(const FloatArray& time, const ByteArray& allowed,
                                                      const FloatArray& group_cost, const IntArray& group_ptr,
                                                      const IntArray& group_member, const IntArray& order,
                                                      const IntArray& apart) {
    exactplace::SetPricingInstance in;
    in.time = to_vector(time, "time");
    in.allowed = to_vector(allowed, "allowed");
    in.group_cost = to_vector(group_cost, "group_cost");
    in.group_ptr = to_vector(group_ptr, "group_ptr");
    in.group_member = to_vector(group_member, "group_member");
    in.order = to_vector(order, "order");
    in.apart = to_vector(apart, "apart");
    return std::make_unique<exactplace::SetPricer>(std::move(in));
}

// (value, sets as a bool array of shape (len(sets), classes), stopped: out of `seconds` or of `memory_budget`, value
// and sets meaningless, over_budget: stopped by the memory budget).
py::tuple price_sets(const exactplace::SetPricer& pricer, const FloatArray& duals, double capacity, double floor,
                     int keep, bool raise_floor, double seconds, py::object cancelled, std::int64_t memory_budget) {
    const auto pi = to_vector(duals, "duals");
    const exactplace::SetPricingResult r = without_gil(
        seconds,
        [&](exactplace::Stopper& stop) {
            return pricer.price(pi, capacity, floor, keep, stop, raise_floor, memory_budget);
        },
        std::move(cancelled));
    return py::make_tuple(r.value, bool_rows(r.sets, pricer.classes()), r.stopped, r.over_budget);
}

// Disjoint greedy sets as a bool array of shape (len(sets), classes).
py::array_t<bool> cover_sets(const exactplace::SetPricer& pricer, const FloatArray& duals, double capacity,
                             int count) {
    const auto pi = to_vector(duals, "duals");
    const auto found = without_gil(std::numeric_limits<double>::infinity(), [&](exactplace::Stopper&) {
        return pricer.cover(pi, capacity, count);
    });
    return bool_rows(found, pricer.classes());
}

// Everything one solve() needs, as one object (instead of a long list of positional arguments).
struct Request {
    exactplace::Instance instance;
    exactplace::Options options;
    double time_limit = std::numeric_limits<double>::infinity();
};

exactplace::Solution solve(const Request& request) {
    return without_gil(request.time_limit, [&](exactplace::Stopper& stop) {
        return exactplace::solve(request.instance, request.options, stop);
    });
}

// The bounded search (bounded.hpp) on the same request as solve(); its tuning as arguments.
exactplace::BoundedSolution solve_bounded(const Request& request, std::int64_t memo_limit, double tolerance,
                                          int bisect_after, std::int64_t stage_bytes, std::int64_t dive_nodes,
                                          int random_dives, bool bidirectional, std::int64_t first_budget) {
    exactplace::BoundedSettings settings;
    settings.bidirectional = bidirectional;
    settings.first_budget = first_budget;
    settings.stage_bytes = stage_bytes;
    settings.dive_nodes = dive_nodes;
    settings.random_dives = random_dives;
    settings.memo_limit = memo_limit;
    settings.tolerance = tolerance;
    settings.bisect_after = bisect_after;
    return without_gil(request.time_limit, [&](exactplace::Stopper& stop) {
        return exactplace::solve_bounded(request.instance, request.options, settings, stop);
    });
}

// A read-write array attribute of Request: numpy in (copied, any convertible dtype), numpy out.
template <typename T, typename Field>
void array_field(py::class_<Request>& cls, const char* name, Field field) {
    cls.def_property(
        name,
        [field](const Request& r) {
            const std::vector<T>& v = field(const_cast<Request&>(r));
            return py::array_t<T>(static_cast<py::ssize_t>(v.size()), v.data());
        },
        [field, name](Request& r, const py::array_t<T, py::array::c_style | py::array::forcecast>& a) {
            field(r) = to_vector(a, name);
        });
}

}  // namespace

PYBIND11_MODULE(_native, m) {
    m.doc() = "exactplace native core: ideals of a DAG and the max-load DP (C++17)";
    m.attr("abi_version") = 9;  // bump on any change of this module's interface

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
    py::enum_<exactplace::Status>(m, "Status", "How a solve ended.")
        .value("optimal", exactplace::Status::optimal)
        .value("infeasible", exactplace::Status::infeasible)
        .value("time", exactplace::Status::time)
        .value("interrupt", exactplace::Status::interrupt);

    using exactplace::Instance;
    py::class_<Request> request(m, "Request", "The input of solve(): the unit graph, the cluster and the limits.");
    request.def(py::init<>())
        .def_property("units", [](const Request& r) { return r.instance.units; },
                      [](Request& r, int v) { r.instance.units = v; })
        .def_property("accelerators", [](const Request& r) { return r.options.accelerators; },
                      [](Request& r, int v) { r.options.accelerators = v; })
        .def_property("cpus", [](const Request& r) { return r.options.cpus; },
                      [](Request& r, int v) { r.options.cpus = v; })
        .def_property("memory_cap", [](const Request& r) { return r.options.memory_cap; },
                      [](Request& r, double v) { r.options.memory_cap = v; })
        .def_property("overlap", [](const Request& r) { return r.options.overlap; },
                      [](Request& r, bool v) { r.options.overlap = v; })
        .def_property("replication", [](const Request& r) { return r.options.replication; },
                      [](Request& r, bool v) { r.options.replication = v; })
        .def_property("threads", [](const Request& r) { return r.options.threads; },
                      [](Request& r, int v) { r.options.threads = v; })
        .def_property("max_ideals", [](const Request& r) { return r.options.max_ideals; },
                      [](Request& r, std::int64_t v) { r.options.max_ideals = v; })
        .def_property("cutoff", [](const Request& r) { return r.options.cutoff; },
                      [](Request& r, double v) { r.options.cutoff = v; })
        .def_readwrite("time_limit", &Request::time_limit);
    array_field<double>(request, "cpu_time", [](Request& r) -> std::vector<double>& { return r.instance.cpu_time; });
    array_field<double>(request, "acc_time", [](Request& r) -> std::vector<double>& { return r.instance.acc_time; });
    array_field<double>(request, "memory", [](Request& r) -> std::vector<double>& { return r.instance.memory; });
    array_field<std::uint8_t>(request, "supported",
                              [](Request& r) -> std::vector<std::uint8_t>& { return r.instance.supported; });
    array_field<std::int64_t>(request, "edge_src",
                              [](Request& r) -> std::vector<std::int64_t>& { return r.instance.edge_src; });
    array_field<std::int64_t>(request, "edge_dst",
                              [](Request& r) -> std::vector<std::int64_t>& { return r.instance.edge_dst; });
    array_field<double>(request, "group_cost",
                        [](Request& r) -> std::vector<double>& { return r.instance.group_cost; });
    array_field<std::int64_t>(request, "group_source",
                              [](Request& r) -> std::vector<std::int64_t>& { return r.instance.group_source; });
    array_field<std::int64_t>(request, "group_ptr",
                              [](Request& r) -> std::vector<std::int64_t>& { return r.instance.group_ptr; });
    array_field<std::int64_t>(request, "group_target",
                              [](Request& r) -> std::vector<std::int64_t>& { return r.instance.group_target; });
    array_field<double>(request, "sync", [](Request& r) -> std::vector<double>& { return r.instance.sync; });
    array_field<std::int64_t>(request, "order", [](Request& r) -> std::vector<std::int64_t>& { return r.instance.order; });
    array_field<std::int64_t>(request, "type_count",
                              [](Request& r) -> std::vector<std::int64_t>& { return r.options.type_count; });
    array_field<double>(request, "type_memory",
                        [](Request& r) -> std::vector<double>& { return r.options.type_memory; });
    array_field<double>(request, "type_speed",
                        [](Request& r) -> std::vector<double>& { return r.options.type_speed; });

    using exactplace::Solution;
    py::class_<Solution>(m, "Solution", "The result of solve().")
        .def_property_readonly("status", &Solution::status)
        .def_readonly("value", &Solution::value)
        .def_property_readonly("device", [](const Solution& s) -> py::object {
            if (s.device.empty()) return py::none();
            py::array_t<std::int64_t> device(static_cast<py::ssize_t>(s.device.size()));
            auto view = device.mutable_unchecked<1>();
            for (py::ssize_t i = 0; i < view.shape(0); ++i) view(i) = s.device[i];
            return device;
        })
        .def_property_readonly("replicas", [](const Solution& s) -> py::object {
            if (s.replicas.empty()) return py::none();
            py::array_t<std::int64_t> replicas(static_cast<py::ssize_t>(s.replicas.size()));
            auto view = replicas.mutable_unchecked<1>();
            for (py::ssize_t i = 0; i < view.shape(0); ++i) view(i) = s.replicas[i];
            return replicas;
        })
        .def_readonly("ideals", &Solution::ideals)
        .def_readonly("covers", &Solution::covers)
        .def_readonly("pairs", &Solution::pairs)
        .def_readonly("skipped", &Solution::skipped)
        .def_readonly("seconds_ideals", &Solution::seconds_ideals)
        .def_readonly("seconds_dp", &Solution::seconds_dp)
        .def_readonly("threads", &Solution::threads_used);

    m.def("solve", &solve, py::arg("request"),
          "Run the max-load DP over the ideals of the unit DAG (over the prefixes of `order` when it is set).");
    using exactplace::BoundedSolution;
    py::class_<BoundedSolution>(m, "BoundedSolution", "The result of solve_bounded().")
        .def_property_readonly("status",
                               [](const BoundedSolution& s) {
                                   if (s.outcome == exactplace::Outcome::optimal) return exactplace::Status::optimal;
                                   if (s.outcome == exactplace::Outcome::infeasible) {
                                       return exactplace::Status::infeasible;
                                   }
                                   // Out of stage memory (exhausted) reads as a time stop.
                                   return s.stop_reason == exactplace::StopReason::interrupt
                                              ? exactplace::Status::interrupt
                                              : exactplace::Status::time;
                               })
        .def_readonly("value", &BoundedSolution::value)
        .def_readonly("bound", &BoundedSolution::bound)
        .def_property_readonly("device", [](const BoundedSolution& s) -> py::object {
            if (s.device.empty()) return py::none();
            py::array_t<std::int64_t> device(static_cast<py::ssize_t>(s.device.size()));
            auto view = device.mutable_unchecked<1>();
            for (py::ssize_t i = 0; i < view.shape(0); ++i) view(i) = s.device[i];
            return device;
        })
        .def_readonly("states", &BoundedSolution::states)
        .def_readonly("stages", &BoundedSolution::stages)
        .def_readonly("remembered", &BoundedSolution::remembered)
        .def_readonly("thresholds", &BoundedSolution::thresholds)
        .def_readonly("exhausted", &BoundedSolution::exhausted)
        .def_readonly("seconds", &BoundedSolution::seconds);
    m.def("solve_bounded", &solve_bounded, py::arg("request"), py::arg("memo_limit") = std::int64_t{1} << 22,
          py::arg("tolerance") = 1e-9, py::arg("bisect_after") = 2, py::arg("stage_bytes") = std::int64_t{1} << 30,
          py::arg("dive_nodes") = 20000, py::arg("random_dives") = 30,
          py::arg("bidirectional") = true, py::arg("first_budget") = 10000,
          "The bounded search over ideals (bounded.hpp) on the request solve() takes (its cutoff: a known split's "
          "load); the best split, its value and a proven lower bound (exhausted: stopped by stage_bytes).");
    m.def(
        "memory_estimate",
        [](int units, int accelerators, int cpus, std::int64_t ideals, std::int64_t covers,
           const IntArray& type_count) {
            const std::vector<std::int64_t> counts = to_vector(type_count, "type_count");
            return counts.empty() ? exactplace::memory_estimate(units, accelerators, cpus, ideals, covers)
                                  : exactplace::memory_estimate(units, counts, cpus, ideals, covers);
        },
        py::arg("units"), py::arg("accelerators"), py::arg("cpus"), py::arg("ideals"), py::arg("covers"),
        py::arg("type_count") = IntArray(0),
        "Bytes solve() allocates for a lattice of the given size (with `type_count`: one count per accelerator "
        "type, which replaces `accelerators`); saturates at 2**63 - 1.");
    m.def("chain_memory_estimate", &exactplace::chain_memory_estimate, py::arg("units"), py::arg("cpus"),
          py::arg("group_members"), "Bytes solve() allocates for a request with an `order` (the chain DP).");
    py::class_<exactplace::SetPricer>(m, "SetPricer",
                                      "The device-set pricing DP (set_pricing.hpp); `price` releases the GIL.")
        .def(py::init(&make_set_pricer), py::kw_only(), py::arg("time"), py::arg("allowed"), py::arg("group_cost"),
             py::arg("group_ptr"), py::arg("group_member"), py::arg("order"),
             py::arg("apart") = IntArray(0))
        .def("price", &price_sets, py::arg("duals"), py::arg("capacity"), py::arg("floor"), py::arg("keep"),
             py::arg("raise_floor") = true, py::arg("seconds") = std::numeric_limits<double>::infinity(),
             py::arg("cancelled") = py::none(),
             py::arg("memory_budget") = std::numeric_limits<std::int64_t>::max(),
             "(max pi(S) above `floor`, else `floor`; up to `keep` sets of value above `floor`, best first; "
             "`raise_floor`: the DP's floor raised by the sets it meets, fewer sets back, the same value; "
             "stopped: out of `seconds`, once `cancelled()` is true or past `memory_budget` bytes of fronts, the "
             "value and sets meaningless; over_budget: stopped by the memory budget).")
        .def("cover", &cover_sets, py::arg("duals"), py::arg("capacity"), py::arg("count"),
             "Up to `count` disjoint sets within `capacity`, each greedy on the classes the others left.");
    m.def("latency_path_bound", &latency_path_bound, py::kw_only(), py::arg("units"), py::arg("edge_src"),
          py::arg("edge_dst"), py::arg("cpu_time"), py::arg("acc_time"), py::arg("memory"), py::arg("memory_cap"),
          py::arg("accelerators"), py::arg("cpus"), py::arg("group_cost"), py::arg("group_source"),
          py::arg("group_ptr"), py::arg("group_target"), py::arg("group_stuck"), py::arg("group_sink_memory"),
          py::arg("path_ptr"), py::arg("path_node"), py::arg("max_ideals"), py::arg("memory_budget"),
          py::arg("time_limit"),
          "The latency path bound's DP over the ideals of the reduced graph (see path.hpp); a dict.");
}
