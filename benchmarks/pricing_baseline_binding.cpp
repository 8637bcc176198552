// A set pricing DP of another revision as its own extension module, for benchmarks/bench_set_pricing.py --against:
// that revision's dp_native/set_pricing.{hpp,cpp} (and stop.hpp) are compiled beside this file. module_local: the
// class does not clash with exactplace._native's SetPricer in one process. Its constructor takes what
// exactplace._native's does (set_bound._native_instance).
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

#include <cstdint>
#include <vector>

#include "set_pricing.hpp"

namespace py = pybind11;

template <typename T>
using Array = py::array_t<T, py::array::c_style | py::array::forcecast>;

template <typename T>
std::vector<T> to_vector(const Array<T>& array) {
    return std::vector<T>(array.data(), array.data() + array.shape(0));
}

PYBIND11_MODULE(pricing_baseline, m) {
    py::class_<exactplace::SetPricer>(m, "SetPricer", py::module_local())
        .def(py::init([](const Array<double>& time, const Array<std::uint8_t>& allowed, const Array<double>& group_cost,
                         const Array<std::int64_t>& group_ptr, const Array<std::int64_t>& group_member,
                         const Array<std::int64_t>& order, const Array<std::int64_t>& apart) {
                 exactplace::SetPricingInstance in;
                 in.time = to_vector(time);
                 in.allowed = to_vector(allowed);
                 in.group_cost = to_vector(group_cost);
                 in.group_ptr = to_vector(group_ptr);
                 in.group_member = to_vector(group_member);
                 in.order = to_vector(order);
                 in.apart = to_vector(apart);
                 return exactplace::SetPricer(std::move(in));
             }),
             py::kw_only(), py::arg("time"), py::arg("allowed"), py::arg("group_cost"), py::arg("group_ptr"),
             py::arg("group_member"), py::arg("order"), py::arg("apart"))
        .def("price", [](const exactplace::SetPricer& pricer, const Array<double>& duals, double capacity, double floor,
                         int keep) {
            const std::vector<double> pi = to_vector(duals);
            exactplace::Stopper stop;
            py::gil_scoped_release release;
            return pricer.price(pi, capacity, floor, keep, stop).value;
        });
}
