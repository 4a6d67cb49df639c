// A provider that times itself (kvh_kernel_desc.time, kvharness 0.5), with a fake time entry around
// the built-in reshape_and_cache_flash, on the cpu backend (TimingOptions::on_cpu):
//   - the harness asks it instead of its own loop, on the verdict's arguments, with warmup/reps and
//     a zero-filled kvh_timing of its full struct_size; kernel_us, host_us and timing_method land in
//     the verdict and in results.json;
//   - a time entry that raises, returns an error code, measures nothing (method NONE) or a
//     non-positive time: PASS kept, kernel_us null, "timing: <why>" in the detail;
//   - a descriptor whose struct_size ends before `time` (a 0.4 provider): the field is never read;
//   - a case that does not PASS is never timed.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <cstddef>

#include "bench/timing.h"
#include "case/write_case.h"
#include "device/device.h"
#include "registry/registry.h"
#include "report/results_fields.h"

namespace kvh {
namespace {

struct Fake {
  int rc = 0;                 // what time() returns
  int32_t method = KVH_TIMING_GRAPH;
  double kernel_us = 7.5, host_us = 80.0;
  int calls = 0;              // of time()
  uint32_t seen_struct_size = 0;
  int32_t seen_warmup = -1, seen_reps = -1;
  int64_t seen_block_size = 0;
  bool corrupt = false;       // write() writes nothing: the case FAILs
};
Fake fake;

const Kernel& real_writer() {
  static const Registry builtins;
  return *builtins.find("reshape_and_cache_flash");
}

int fake_write(void*, const kvh_write_args* a, void* stream) {
  return fake.corrupt ? 0 : real_writer().write(a, stream);  // corrupt: writes nothing
}

int fake_time(void*, const void* args, void*, int32_t warmup, int32_t reps, kvh_timing* out) {
  ++fake.calls;
  fake.seen_struct_size = out->struct_size;
  fake.seen_warmup = warmup;
  fake.seen_reps = reps;
  fake.seen_block_size = static_cast<const kvh_write_args*>(args)->block_size;
  if (fake.rc != 0) return fake.rc;
  out->method = fake.method;
  out->kernel_us = fake.kernel_us;
  out->host_us = fake.host_us;
  return 0;
}

const char* fake_error(void*) { return "capture refused and no events today"; }

Registry with_fake(uint32_t struct_size = sizeof(kvh_kernel_desc)) {
  Registry reg(Registry::NoBuiltins{});
  kvh_kernel_desc d{};
  d.struct_size = struct_size;
  d.abi_version = KVH_ABI_VERSION;
  d.name = "test_self_timed_writer";
  d.role = KVH_ROLE_WRITER;
  d.cache_format = KVH_CACHE_NHD;
  d.write = fake_write;
  d.last_error = fake_error;
  d.time = fake_time;
  reg.add(d, "test");
  return reg;
}

// The case's results.json entry, as the report writer makes it.
nlohmann::json result_json(const CaseResult& r) {
  nlohmann::json j;
  for (const ResultsField& f : results_fields()) j[f.name] = f.write(r);
  return j;
}

Case flash_case() {
  Case c;
  c.model = "test";
  c.num_heads = 4;
  c.num_kv_heads = 2;
  c.head_size = 64;
  c.layout = Scheme::KvFirst;
  c.block_size = 16;
  c.batch_size = 32;
  c.writer = "test_self_timed_writer";
  c.seed = 5;
  return c;
}

TimingOptions on_cpu() {
  TimingOptions t;
  t.warmup = 2;
  t.reps = 9;
  t.on_cpu = true;
  return t;
}

CaseResult run_fake(const Registry& reg, Fake f = Fake{}) {
  fake = f;
  return run_write_case(flash_case(), reg, on_cpu());
}

TEST(ProviderTiming, TheProvidersMeasurementIsRecorded) {
  const Registry reg = with_fake();
  const CaseResult r = run_fake(reg);
  ASSERT_EQ(r.v.status, Status::Pass) << r.v.detail;
  EXPECT_EQ(fake.calls, 1);
  EXPECT_EQ(fake.seen_struct_size, sizeof(kvh_timing));
  EXPECT_EQ(fake.seen_warmup, 2);
  EXPECT_EQ(fake.seen_reps, 9);
  EXPECT_EQ(fake.seen_block_size, 16);  // the verdict's kvh_write_args
  EXPECT_EQ(r.v.kernel_us, 7.5);
  EXPECT_EQ(r.v.host_us, 80.0);
  EXPECT_EQ(r.v.timing_method, "graph");
  const nlohmann::json j = result_json(r);
  EXPECT_EQ(j.at("kernel_us"), 7.5);
  EXPECT_EQ(j.at("host_us"), 80.0);
  EXPECT_EQ(j.at("timing_method"), "graph");

  Fake batch;
  batch.method = KVH_TIMING_EVENTS_BATCH;
  batch.host_us = 0;  // not measured: null
  const CaseResult b = run_fake(reg, batch);
  EXPECT_EQ(b.v.timing_method, "events_batch");
  EXPECT_FALSE(b.v.host_us.has_value());
  EXPECT_TRUE(result_json(b).at("host_us").is_null());
}

TEST(ProviderTiming, AFailedMeasurementKeepsThePassWithANote) {
  const Registry reg = with_fake();
  struct Bad {
    Fake f;
    std::string note;
  };
  Fake raised, code, none, zero;
  raised.rc = KVH_RAISED;
  code.rc = 1;
  none.method = KVH_TIMING_NONE;
  zero.kernel_us = 0;
  for (const Bad& b : {Bad{raised, "timing: capture refused and no events today"}, Bad{code, "(error code 1)"},
                       Bad{none, "did not time the call (method 0)"}, Bad{zero, "measured kernel_us = 0"}}) {
    const CaseResult r = run_fake(reg, b.f);
    EXPECT_EQ(r.v.status, Status::Pass) << b.note;
    EXPECT_FALSE(r.v.kernel_us.has_value()) << b.note;
    EXPECT_FALSE(r.v.host_us.has_value()) << b.note;
    EXPECT_TRUE(r.v.timing_method.empty()) << b.note;
    EXPECT_NE(r.v.detail.find(b.note), std::string::npos) << r.v.detail;
    EXPECT_TRUE(result_json(r).at("timing_method").is_null());
  }
}

TEST(ProviderTiming, ADescriptorEndingBeforeTimeIsTimedByTheHarness) {
  const Registry reg = with_fake(uint32_t(offsetof(kvh_kernel_desc, time)));
  const CaseResult r = run_fake(reg);
  ASSERT_EQ(r.v.status, Status::Pass) << r.v.detail;
  EXPECT_EQ(fake.calls, 0);
  ASSERT_TRUE(r.v.kernel_us.has_value());
  EXPECT_NE(*r.v.kernel_us, 7.5);
  EXPECT_FALSE(r.v.host_us.has_value());
  EXPECT_EQ(r.v.timing_method, device::info().backend == "cpu" ? "host_clock" : "device_events");
}

TEST(ProviderTiming, AFailingCaseIsNeverTimed) {
  const Registry reg = with_fake();
  Fake f;
  f.corrupt = true;
  const CaseResult r = run_fake(reg, f);
  EXPECT_EQ(r.v.status, Status::Fail) << r.v.detail;
  EXPECT_EQ(fake.calls, 0);
  EXPECT_FALSE(r.v.kernel_us.has_value());
}

// Issue 24: the timed launches fit the budget (a share of the case's wall time, the warm-up's
// wall time per launch), at least 1 and at most reps; budget 0 or no warm-up to size by: reps.
TEST(TimingBudget, TheTimedLaunchesFitTheBudget) {
  TimingOptions t;
  t.reps = 20;
  t.budget = 0.08;
  EXPECT_EQ(budgeted_reps(t, 100.0, 30.0), 3);
  EXPECT_EQ(budgeted_reps(t, 100.0, 500.0), 1) << "a launch longer than the budget is still timed once";
  EXPECT_EQ(budgeted_reps(t, 1e6, 1.0), 20) << "never more than reps";
  EXPECT_EQ(budgeted_reps(t, 100.0, 0.0), 20) << "nothing to size by";
  t.budget = 0;
  EXPECT_EQ(budgeted_reps(t, 100.0, 30.0), 20);
}

// A case's timing_reps: how many launches its kernel_us is the median of; budget 0: all of them.
TEST(TimingBudget, ACaseRecordsItsTimedLaunches) {
  const Registry reg = with_fake(uint32_t(offsetof(kvh_kernel_desc, time)));  // timed by the harness
  TimingOptions t = on_cpu();
  t.reps = 9;
  t.budget = 0;
  const CaseResult all = run_write_case(flash_case(), reg, t);
  ASSERT_EQ(all.v.status, Status::Pass) << all.v.detail;
  EXPECT_EQ(all.v.timing_reps, 9);
  t.budget = 0.08;
  const CaseResult budgeted = run_write_case(flash_case(), reg, t);
  ASSERT_TRUE(budgeted.v.kernel_us.has_value());
  EXPECT_GE(budgeted.v.timing_reps, 1);
  EXPECT_LE(budgeted.v.timing_reps, 9);
}

}  // namespace
}  // namespace kvh
