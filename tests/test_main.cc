// The main of every test binary: runs Catch2 (leaving out [slow] tests unless a test spec is
// given) and ends with one line the CI script counts: "tandem-tests: P passed, F failed, S skipped";
// each failed case is also named on a line "tandem-tests: failed: NAME". A case after which the
// GPU's context is lost (a kernel faulted: an illegal address, a trap) ends the process there, as
// every later case would fail with that error: "tandem-tests: lost the GPU context in: NAME",
// the counts so far, and exit status 3 (the GPU suite runs the cases after it in a new process).
// An error the GPU reports only after a case has ended fails that case too.
#define CATCH_CONFIG_RUNNER
#include <catch2/catch.hpp>

#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <set>
#include <string>

#include "tests/testing.h"

namespace tandem::testing {
std::set<std::string>& skipped_tests();
}

namespace {

struct Counts {
  int passed = 0, failed = 0, skipped = 0;
} counts;

void print_counts() {
  std::printf("tandem-tests: %d passed, %d failed, %d skipped\n", counts.passed, counts.failed, counts.skipped);
  std::fflush(stdout);
}

// What the GPUs report once a case has ended: an error of the work it queued (empty if none),
// and whether the error stays in the context (a kernel's fault: every later CUDA call of the
// process fails with it), which an error that a second synchronize no longer reports does not.
struct GpuState {
  std::string error;
  bool lost = false;
};
GpuState gpu_state_after_case() {
  GpuState state;
  if (!tandem::cuda::is_available()) return state;
  for (int attempt = 0; attempt < 2; ++attempt) {
    try {
      tandem::cuda::synchronize();
      return state;
    } catch (const tandem::Error& e) {
      state.error = e.what();
      state.lost = attempt == 1;
    }
  }
  return state;
}

class SummaryListener : public Catch::TestEventListenerBase {
 public:
  using TestEventListenerBase::TestEventListenerBase;

  void testCaseEnded(const Catch::TestCaseStats& stats) override {
    const GpuState gpu = gpu_state_after_case();
    const char* name = stats.testInfo.name.c_str();
    std::cout.flush();
    if (!gpu.error.empty()) std::printf("tandem-tests: after the case, the GPU reported: %s\n", gpu.error.c_str());
    if (stats.totals.testCases.failed > 0 || stats.totals.assertions.failed > 0 || !gpu.error.empty()) {
      ++counts.failed;
      // One line per failed case, in one piece (Catch2 wraps long names), for scripts to list.
      std::printf("tandem-tests: failed: %s\n", name);
      std::fflush(stdout);
    } else if (tandem::testing::skipped_tests().count(stats.testInfo.name)) {
      ++counts.skipped;
    } else {
      ++counts.passed;
    }
    if (gpu.lost) {
      std::printf("tandem-tests: lost the GPU context in: %s\n", name);
      print_counts();
      std::_Exit(3);
    }
  }

  void testRunEnded(const Catch::TestRunStats&) override { print_counts(); }
};

}  // namespace

CATCH_REGISTER_LISTENER(SummaryListener)

int main(int argc, char** argv) {
  Catch::Session session;
  int rc = session.applyCommandLine(argc, argv);
  if (rc != 0) return rc;
  if (session.configData().testsOrTags.empty()) session.configData().testsOrTags = {"~[slow]"};
  std::printf("tandem-tests: seed %llu (set TANDEM_TEST_SEED to repeat)\n",
              static_cast<unsigned long long>(tandem::testing::test_seed()));
  // 1 for any failure: Catch2's own result, the failed assertions up to 255, could read as a
  // timeout's 124 or a signal's 128 + N to the scripts that look at exit statuses.
  return session.run() == 0 ? 0 : 1;
}
