// What the plain C++ test programs share: a failed expectation is printed and counted, and
// `report` turns the count into the program's exit status.
#pragma once

#include <cstdio>
#include <cstdlib>
#include <string>

namespace exactplace::testing {

inline int failures = 0;

inline void expect(bool ok, const std::string& what) {
    if (!ok) {
        std::fprintf(stderr, "FAILED: %s\n", what.c_str());
        ++failures;
    }
}

// EXIT_SUCCESS if every expectation held, else EXIT_FAILURE; `suite` names the program's tests.
inline int report(const char* suite) {
    if (failures != 0) {
        std::fprintf(stderr, "%d %s test(s) failed\n", failures, suite);
        return EXIT_FAILURE;
    }
    std::printf("%s tests passed\n", suite);
    return EXIT_SUCCESS;
}

}  // namespace exactplace::testing
