// Which failures of a case are expected, and whether a declared failure
// happened. Rules (DESIGN.md "Regression fixtures", issue "a gate that never
// goes green by mistake"):
//   - a regression fixture exempts only FAILs of its own component: a
//     fixture_* writer's write failures, a fixture_* reader's output
//     failures, an old router policy's misroute; never a CRASH, never
//     another component's failure;
//   - a declaration (case file [[expected_failure]], --known-failures)
//     exempts the failures it allows in the cases it covers, and is strict:
//     a covered case that passes is XPASS, one that fails only otherwise is
//     an unexpected failure;
//   - a harness failure (host allocation, I/O) is never expected.
#pragma once
#include <vector>

#include "expectation.h"
#include "registry.h"
#include "verdict.h"

namespace kvh {

/// Sets cr.fixture, cr.expected, cr.expectations, each cause's expected_by,
/// and turns a covered PASS into XPASS. Leaves UNSUPPORTED and INTERRUPTED
/// cases alone. `declared`: every declaration of the run (case files and
/// known-failures files).
void judge_expectations(CaseResult& cr, const Registry& registry, const std::vector<ExpectedFailure>& declared);

}  // namespace kvh
