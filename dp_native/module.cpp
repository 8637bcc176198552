// pybind11 entry point of exactplace._native. The DP sources register their functions here.
#include <pybind11/pybind11.h>

namespace py = pybind11;

PYBIND11_MODULE(_native, m) {
    m.doc() = "exactplace native core: ideals of a DAG and the max-load DP (C++17)";
    m.attr("abi_version") = 1;
}
