// The main of every test binary: runs Catch2 (leaving out [slow] tests unless a test spec is
// given) and ends with one line the CI script counts: "tandem-tests: P passed, F failed, S skipped";
// each failed case is also named on a line "tandem-tests: failed: NAME". A case after which the
// GPU's context is lost (a kernel faulted: an illegal address, a trap) ends the process there, as
// every later case would fail with that error: "tandem-tests: lost the GPU context in: NAME",
// the counts so far, and exit status 3 (the GPU suite runs the cases after it in a new process).
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

// The error that a kernel's fault leaves in the GPU's context, where there is one: every CUDA call
// of the process fails with it from then on. An error that a second synchronize no longer reports
// was another kind (cleared once reported).
std::string lost_gpu_context() {
  if (!tandem::cuda::is_available()) return "";
  for (int attempt = 0;; ++attempt) {
    try {
      tandem::cuda::synchronize();
      return "";
    } catch (const tandem::Error& e) {
      if (attempt == 1) return e.what();
    }
  }
}

class SummaryListener : public Catch::TestEventListenerBase {
 public:
  using TestEventListenerBase::TestEventListenerBase;

  void testCaseEnded(const Catch::TestCaseStats& stats) override {
    const std::string lost = lost_gpu_context();
    const char* name = stats.testInfo.name.c_str();
    if (stats.totals.testCases.failed > 0 || stats.totals.assertions.failed > 0 || !lost.empty()) {
      ++counts.failed;
      // One line per failed case, in one piece (Catch2 wraps long names), for scripts to list.
      std::printf("tandem-tests: failed: %s\n", name);
      std::fflush(stdout);
    } else if (tandem::testing::skipped_tests().count(stats.testInfo.name)) {
      ++counts.skipped;
    } else {
      ++counts.passed;
    }
    if (!lost.empty()) {
      std::cout.flush();
      std::printf("tandem-tests: %s\ntandem-tests: lost the GPU context in: %s\n", lost.c_str(), name);
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
