#include "report/results_io.h"

#include <fmt/format.h>

#include <algorithm>
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

// Refuses the entry unless every case field of `read` (the entry's case, read from it) is
// `matched`'s, as the writer spells them: it would be written back as the matched case's.
void check_same_case(const json& e, const CaseResult& read, const CaseResult& matched) {
  for (const ResultsField& f : results_fields()) {
    if (f.role != FieldRole::Case) continue;
    const json have = f.write(read), want = f.write(matched);
    if (have == want) continue;
    FieldIn(e, f.name)
        .bad(fmt::format("{}, but the case with this id has {}",
                         e.contains(f.name) ? have.dump() : fmt::format("absent (read as {})", have.dump()),
                         want.dump()));
  }
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

void check_result_fields(const json& e, const std::vector<const char*>& names) {
  if (!e.is_object()) throw std::runtime_error(fmt::format("a case entry is {}, not an object", e.type_name()));
  CaseResult scratch;
  for (const char* name : names) {
    const auto& all = results_fields();
    const auto f =
        std::find_if(all.begin(), all.end(), [&](const ResultsField& r) { return r.name == std::string(name); });
    if (f == all.end() || f->role != FieldRole::Result)
      throw std::logic_error(fmt::format("check_result_fields: '{}' is not a result field", name));
    if (e.contains(name)) f->read(FieldIn(e, name), scratch);
  }
}

CaseResult case_result_from_json(const json& e, const Case* c) {
  if (!e.is_object()) throw std::runtime_error(fmt::format("a case entry is {}, not an object", e.type_name()));
  CaseResult cr;
  if (c) check_id(e, c->id(), fmt::format("expected {}", c->id()));
  read_fields(e, FieldRole::Case, cr);  // matched or not, the entry must have its case's fields
  if (c) {
    CaseResult matched;
    matched.c = *c;
    check_same_case(e, cr, matched);
    cr.c = *c;
  } else {
    check_id(e, cr.c.id(),
             fmt::format("the entry's fields make the id {}; written by another kvharness version?", cr.c.id()));
  }
  read_fields(e, FieldRole::Result, cr);
  return cr;
}

}  // namespace kvh
