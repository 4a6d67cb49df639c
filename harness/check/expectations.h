// Which failures of a case are expected, and whether a declared failure
// happened. Rules (DESIGN.md "Regression fixtures", issue "a gate that never
// goes green by mistake"):
//   - a regression fixture exempts only wrong-output FAILs of its own
//     component (mismatch, out_of_view_write, unwritten_output, nan_or_inf of
//     a fixture_* writer or reader) and an old router policy's misroute;
//     never a launch_error, a CRASH, or another component's failure;
//   - a declaration (case file [[expected_failure]], --known-failures)
//     exempts the failures it allows in the cases it covers, and is strict:
//     a covered case that passes, or is UNSUPPORTED, is XPASS; one that
//     fails only otherwise is an unexpected failure;
//   - a harness failure (host allocation, I/O) is never expected.
#pragma once
#include <vector>

#include "expectation.h"
#include "registry/registry.h"
#include "check/verdict.h"

namespace kvh {

/// Sets cr.fixture, cr.expected, cr.expectations, each cause's expected_by,
/// and turns a covered PASS or UNSUPPORTED into XPASS. Leaves INTERRUPTED
/// cases alone. `declared`: every declaration of the run (case files and
/// known-failures files).
void judge_expectations(CaseResult& cr, const Registry& registry, const std::vector<ExpectedFailure>& declared);

}  // namespace kvh
