#include "check/expectations.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "router/router.h"

namespace kvh {

namespace {

bool kernel_is_fixture(const Registry& reg, const std::string& name) {
  const Kernel* d = name.empty() ? nullptr : reg.find(name);
  return d && d->fixture;
}

// The failures a fixture kernel is kept for: wrong output, never a refusal to run (launch_error) or a CRASH.
bool wrong_output(const std::string& reason) {
  return reason == reason::kMismatch || reason == reason::kOutOfView || reason == reason::kUnwritten ||
         reason == reason::kNanOrInf;
}

// The fixture that owns a failure of `cause`, or "" if none does.
std::string owning_fixture(const CaseResult& cr, const Registry& reg, const Cause& cause) {
  if (cause.crash) return "";
  const Case& c = cr.c;
  if (cause.component == component::kWriter && wrong_output(cause.reason) && kernel_is_fixture(reg, c.writer))
    return c.writer + " (writer)";
  // A reader a router picked is the router's choice: only a fixture router may own its fixture's failures
  // (a production router that sends a case to a known-bad kernel has failed).
  const bool routed = !c.router_policy.empty();
  if (cause.component == component::kReader && wrong_output(cause.reason) && kernel_is_fixture(reg, cr.routed_to) &&
      (!routed || routing::is_regression_fixture(c.router_policy)))
    return cr.routed_to + " (reader)";
  if (cause.component == component::kRouter && cause.reason == reason::kMisroute && !c.router_policy.empty() &&
      routing::is_regression_fixture(c.router_policy))
    return c.router_policy + " (router policy)";
  return "";
}

std::string allowed_text(const ExpectedFailure& d) {
  return fmt::format("{} {}", d.component.empty() ? "any kernel" : d.component,
                     d.reasons.empty() ? std::string("FAIL") : fmt::format("{}", fmt::join(d.reasons, "|")));
}

// "declared to fail with writer mismatch (file:line: why)".
std::string declared_text(const ExpectedFailure& d) {
  return fmt::format("declared to fail with {} ({}: {})", allowed_text(d), d.source, d.why);
}

// A case that `d` declared to fail showed no failure: XPASS, with `detail`.
void make_xpass(Verdict& v, const ExpectedFailure& d, std::string detail) {
  v.status = Status::Xpass;
  v.reason = reason::kXpass;
  v.component = d.component;
  v.detail = std::move(detail);
}

}  // namespace

void judge_expectations(CaseResult& cr, const Registry& reg, const std::vector<ExpectedFailure>& declared) {
  const Case& c = cr.c;
  cr.fixture = (!c.router_policy.empty() && routing::is_regression_fixture(c.router_policy)) ||
               kernel_is_fixture(reg, c.writer) || kernel_is_fixture(reg, c.reader) ||
               kernel_is_fixture(reg, cr.routed_to);
  if (cr.v.status == Status::Interrupted) return;
  std::vector<const ExpectedFailure*> covering;
  for (const auto& d : declared)
    if (d.covers(c)) covering.push_back(&d), cr.expectations.push_back(d.source);
  if (cr.v.status == Status::Unsupported) {
    // A case declared to fail that cannot run shows no failure: the declaration checks nothing.
    if (!covering.empty())
      make_xpass(cr.v, *covering.front(), declared_text(*covering.front()) + ", but UNSUPPORTED: " + cr.v.detail);
    return;
  }

  bool all_expected = !cr.v.causes.empty();
  for (Cause& cause : cr.v.causes) {
    if (cause.component != component::kHarness) {
      const std::string fixture = owning_fixture(cr, reg, cause);
      if (!fixture.empty()) cause.expected_by = "regression fixture " + fixture;
      // The first declaration that allows it adds its file:line and `why`, after the fixture if
      // there is one: the reader of the report learns what the bug is, not only that it is known.
      for (const ExpectedFailure* d : covering)
        if (d->allows(cause.component, cause.reason, cause.crash)) {
          cause.expected_by += fmt::format("{}{}: {}", cause.expected_by.empty() ? "" : "; ", d->source, d->why);
          break;
        }
    }
    all_expected &= !cause.expected_by.empty();
  }
  cr.expected = all_expected;

  // Strictness: each covering declaration must see a failure it allows.
  for (const ExpectedFailure* d : covering) {
    bool shown = false;
    for (const Cause& cause : cr.v.causes) shown |= d->allows(cause.component, cause.reason, cause.crash);
    if (shown) continue;
    const std::string note = declared_text(*d);
    if (cr.v.status == Status::Pass) {
      make_xpass(cr.v, *d, note + ", but it passed: the harness no longer sees this bug, or the declaration is stale");
    } else {
      cr.expected = false;
      cr.v.detail += "; " + note + ", which did not occur";
    }
  }
}

}  // namespace kvh
