#include "report/results_io.h"

#include <fmt/format.h>

#include <stdexcept>

#include "report/results_fields.h"

namespace kvh {

namespace {

using json = nlohmann::json;

// Runs the reader of every field of `role`, in table order. An optional field the entry
// lacks keeps its default.
void read_fields(const json& e, FieldRole role, CaseResult& cr) {
  for (const ResultsField& f : results_fields())
    if (f.role == role && (!f.optional || e.contains(f.name))) f.read(FieldIn(e, f.name), cr);
}

// Refuses the entry unless its "id" is `id`; `why` says what the id should have been.
void check_id(const json& e, const std::string& id, const std::string& why) {
  const FieldIn f(e, "id");
  if (f.str() != id) f.bad(why);
}

}  // namespace

json case_result_json(const CaseResult& cr) {
  json e = json::object();
  for (const ResultsField& f : results_fields()) e[f.name] = f.write(cr);
  return e;
}

Status parse_status(const std::string& s) {
  for (Status st : {Status::Pass, Status::Fail, Status::Unsupported, Status::Crash, Status::Xpass, Status::Interrupted})
    if (s == to_string(st)) return st;
  throw std::runtime_error(fmt::format("verdict '{}' is not one this kvharness knows", s));
}

CaseResult case_result_from_json(const json& e, const Case* c) {
  if (!e.is_object()) throw std::runtime_error(fmt::format("a case entry is {}, not an object", e.type_name()));
  CaseResult cr;
  if (c) {
    cr.c = *c;
    check_id(e, c->id(), fmt::format("expected {}", c->id()));
  } else {
    read_fields(e, FieldRole::Case, cr);
    check_id(e, cr.c.id(),
             fmt::format("the entry's fields make the id {}; written by another kvharness version?", cr.c.id()));
  }
  read_fields(e, FieldRole::Result, cr);
  return cr;
}

}  // namespace kvh
