#include "tools/bench/bench.h"

#include <benchmark/benchmark.h>
#include <fmt/core.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <regex>
#include <stdexcept>
#include <vector>

#include "kernels/cpu/cpu_ops.h"
#include "tandem.h"
#include "tools/bench/cuda_benchmarks.h"
#include "tools/bench/parallel_benchmarks.h"

namespace tandem::bench {

namespace {

namespace fs = std::filesystem;

// What each figure is expected to reach (issue: "Aims"), as a limit on tandem / PyTorch.
struct Aim {
  double max_ratio;
  const char* text;
};

Aim aim_for(const std::string& name) {
  if (name.rfind("cuda_copy", 0) == 0) return {0, "the copy bandwidth (ceiling)"};
  if (name.rfind("cuda_comm", 0) == 0) return {0, ">= 90% of copy bandwidth"};
  if (name.rfind("cuda_dp", 0) == 0) return {0, "data parallel: 2 devices against 1"};
  if (name.rfind("cuda_gemm", 0) == 0) return {1 / 0.97, ">= 0.97x torch.matmul speed"};
  if (name.rfind("cuda_", 0) == 0 && name.find("train_step") != std::string::npos) {
    return {1 / 1.25, ">= 1.25x PyTorch eager speed"};
  }
  if (name.rfind("cuda_", 0) == 0) return {1 / 1.2, ">= 1.2x PyTorch eager speed and >= 90% of copy bandwidth"};
  if (name.rfind("sgemm", 0) == 0) return {1 / 0.9, ">= 0.9x PyTorch speed"};
  if (name == "add_1elem") return {0, "<= 1.5 us per op"};
  if (name == "mlp_train_step") return {1 / 1.5, ">= 1.5x PyTorch speed"};
  if (name == "cnn_train_step") return {0, "measured"};
  if (name.rfind("mlp512_", 0) == 0) return {0, "data parallel: see below"};
  if (name.rfind("comm_cpu", 0) == 0) return {0, "one phase of the step below"};
  return {1.0, "as fast as PyTorch"};
}

// Collects the median of each benchmark's repetitions, in seconds.
class Collector : public benchmark::BenchmarkReporter {
 public:
  bool ReportContext(const Context&) override { return true; }
  void ReportRuns(const std::vector<Run>& runs) override {
    for (const Run& run : runs) {
      if (run.error_occurred) {
        errors[name_of(run)] = run.error_message;
        continue;
      }
      if (run.run_type == Run::RT_Aggregate && run.aggregate_name != "median") continue;
      seconds[name_of(run)] = run.GetAdjustedRealTime() / benchmark::GetTimeUnitMultiplier(run.time_unit);
      for (const auto& [counter, value] : run.counters) counters[name_of(run)][counter] = value.value;
    }
  }
  std::map<std::string, double> seconds;
  std::map<std::string, std::map<std::string, double>> counters;  // a benchmark's own figures
  std::map<std::string, std::string> errors;

 private:
  static std::string name_of(const Run& run) {
    return run.run_name.function_name + (run.run_name.args.empty() ? "" : "/" + run.run_name.args);
  }
};

std::string find_script(const char* argv0) {
  std::vector<fs::path> roots;
  for (const char* env : {"TANDEM_ROOT", "BUILD_WORKSPACE_DIRECTORY"}) {
    if (const char* v = std::getenv(env)) roots.emplace_back(v);
  }
  roots.emplace_back(".");
  roots.emplace_back(std::string(argv0) + ".runfiles/tandem");
  for (const fs::path& root : roots) {
    fs::path p = root / "tools/bench/torch_bench.py";
    if (fs::exists(p)) return p.string();
  }
  return "";
}

std::string default_python() {
  if (const char* v = std::getenv("TANDEM_VENV")) return std::string(v) + "/bin/python";
  if (const char* home = std::getenv("HOME")) return std::string(home) + "/.cache/tandem/venv/bin/python";
  return "python3";
}

std::string run_command(const std::string& command) {
  std::string out;
  FILE* pipe = popen(command.c_str(), "r");
  if (!pipe) return out;
  char buf[4096];
  while (size_t n = fread(buf, 1, sizeof buf, pipe)) out.append(buf, n);
  pclose(pipe);
  return out;
}

std::string human(double seconds) {
  if (seconds < 1e-6) return fmt::format("{:.1f} ns", seconds * 1e9);
  if (seconds < 1e-3) return fmt::format("{:.2f} us", seconds * 1e6);
  if (seconds < 1) return fmt::format("{:.2f} ms", seconds * 1e3);
  return fmt::format("{:.3f} s", seconds);
}

std::string shell_quote(const std::string& s) {
  std::string out = "'";
  for (char c : s) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

}  // namespace

int run(const Options& options, const char* argv0) {
  // A --json file that cannot be written is said before the benchmarks run, not after.
  if (!options.json.empty() && !std::ofstream(options.json, std::ios::app)) {
    fmt::print(stderr, "tandem bench: cannot write --json {}\n", options.json);
    return 2;
  }
  if (options.threads > 0) set_num_threads(options.threads);
  const int threads = num_threads();

  // tandem's side: Google Benchmark with our own reporter.
  std::vector<std::string> args = {
      "tandem-bench",
      "--benchmark_filter=" + options.filter,
      fmt::format("--benchmark_min_time={}", options.min_time / options.repetitions),
      fmt::format("--benchmark_repetitions={}", options.repetitions),
      "--benchmark_report_aggregates_only=true",
  };
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  int argc = static_cast<int>(argv.size());
  benchmark::Initialize(&argc, argv.data());
  register_cuda_benchmarks(options.min_time / options.repetitions);
  if (!cuda::is_available()) {  // say why where the filter asks for them
    bool asks_for_cuda = false;
    try {
      asks_for_cuda = options.filter.find("cuda") != std::string::npos ||
                      std::regex_search("cuda_copy/MiB:64", std::regex(options.filter));
    } catch (const std::regex_error&) {
    }
    if (asks_for_cuda) fmt::print("tandem bench: no CUDA benchmarks: {}\n", cuda::unavailable_reason());
  }
  fmt::print("tandem bench: running tandem's benchmarks on {} threads...\n", threads);
  std::fflush(stdout);
  Collector ours;
  benchmark::RunSpecifiedBenchmarks(&ours);
  for (const auto& [name, error] : ours.errors) fmt::print("  {} failed: {}\n", name, error);

  // PyTorch's side, same names.
  std::map<std::string, double> theirs;
  std::map<std::string, std::string> their_errors;
  std::string torch_version;
  std::string python = options.python.empty() ? default_python() : options.python;
  std::string script = find_script(argv0);
  if (script.empty() || (python.find('/') != std::string::npos && !fs::exists(python))) {
    fmt::print("tandem bench: PyTorch side skipped ({} not found; run tools/setup.sh)\n",
               script.empty() ? "tools/bench/torch_bench.py" : python);
  } else {
    fmt::print("tandem bench: running PyTorch's side with {}...\n", python);
    std::fflush(stdout);
    std::string out = run_command(fmt::format("{} {} --threads {} --filter {} --min-time {} --repetitions {}",
                                              shell_quote(python), shell_quote(script), threads,
                                              shell_quote(options.filter), options.min_time, options.repetitions));
    try {
      // The last line that is JSON: a library the script loads may print lines of its own before
      // and after it (NCCL's warnings go to standard output).
      nlohmann::json j = nlohmann::json::parse(out, nullptr, /*allow_exceptions=*/false);
      for (size_t end = out.size(); j.is_discarded() && end > 0;) {
        const size_t start = end >= 2 ? out.rfind('\n', end - 2) : std::string::npos;
        const size_t from = start == std::string::npos ? 0 : start + 1;
        j = nlohmann::json::parse(out.substr(from, end - from), nullptr, /*allow_exceptions=*/false);
        end = from;
      }
      if (j.is_discarded()) throw std::runtime_error("no line of JSON");
      torch_version = j["torch"].get<std::string>();
      for (auto& [name, value] : j["results"].items()) theirs[name] = value.get<double>();
      if (j.contains("errors")) {
        for (auto& [name, value] : j["errors"].items()) their_errors[name] = value.get<std::string>();
      }
    } catch (const std::exception& e) {
      fmt::print("tandem bench: could not read PyTorch's results ({}): {}\n", e.what(), out);
    }
  }

  std::time_t now = std::time(nullptr);
  char date[32];
  std::strftime(date, sizeof date, "%Y-%m-%d", std::localtime(&now));
  char host[256] = "?";
  gethostname(host, sizeof host - 1);
  const std::string blas = kernels::cpu::blas_description();
  fmt::print("\n{} on {}, {} threads; {}; PyTorch {}; median of {} batches\n", date, host, threads, blas,
             torch_version.empty() ? "not run" : torch_version, options.repetitions);
  fmt::print("{:<28} {:>12} {:>12} {:>8}   {}\n", "benchmark", "tandem", "PyTorch", "ratio", "aim (ratio = tandem / PyTorch time)");
  nlohmann::json report = {{"date", date},   {"threads", threads},
                            {"blas", blas},   {"torch", torch_version},
                            {"results", nlohmann::json::object()}};
  for (const auto& [name, t] : ours.seconds) {
    auto it = theirs.find(name);
    Aim aim = aim_for(name);
    std::string ratio = "-", verdict;
    if (it != theirs.end()) {
      double r = t / it->second;
      ratio = fmt::format("{:.2f}", r);
      if (aim.max_ratio > 0) verdict = r <= aim.max_ratio ? "met" : "not met";
    }
    if (name == "add_1elem") verdict = t <= 1.5e-6 ? "met" : "not met";
    // GPU memory-bound kernels: bandwidth against the copy's at the same size.
    std::string of_copy;
    if (double bytes = cuda_bytes_per_call(name); bytes > 0 && name.rfind("cuda_copy", 0) != 0) {
      const std::string size = name.substr(name.find('/'));
      auto copy = ours.seconds.find("cuda_copy" + size);
      if (copy != ours.seconds.end()) {
        const double fraction = (bytes / t) / (cuda_bytes_per_call("cuda_copy" + size) / copy->second);
        of_copy = fmt::format("{:.0f}% of copy bandwidth", 100 * fraction);
        if (fraction < 0.9) verdict = "not met";
        if (name.rfind("cuda_comm", 0) == 0) verdict = fraction >= 0.9 ? "met" : "not met";
        report["results"][name]["fraction_of_copy_bandwidth"] = fraction;
      }
    }
    if (double bytes = cuda_bytes_per_call(name); bytes > 0 && name.rfind("cuda_copy", 0) == 0) {
      of_copy = fmt::format("{:.0f} GB/s", bytes / t / 1e9);
    }
    if (aim.max_ratio == 0 && name != "add_1elem" && name.rfind("cuda_comm", 0) != 0) verdict = "";
    fmt::print("{:<28} {:>12} {:>12} {:>8}   {} ({}){}\n", name, human(t),
               it != theirs.end() ? human(it->second) : "-", ratio, aim.text, verdict.empty() ? "-" : verdict,
               of_copy.empty() ? "" : "; " + of_copy);
    report["results"][name]["tandem_s"] = t;
    report["results"][name]["torch_s"] = it != theirs.end() ? nlohmann::json(it->second) : nlohmann::json();
    report["results"][name]["verdict"] = verdict;
  }
  // Data parallelism over CPU devices, against tandem itself (PyTorch's DataParallel needs GPUs).
  auto one_core = ours.seconds.find("mlp512_one_device/threads:1");
  auto all_cores = ours.seconds.find("mlp512_one_device/threads:0");
  auto two = ours.seconds.find("mlp512_data_parallel/devices:2");
  const bool apart = two != ours.seconds.end() && one_core != ours.seconds.end() && all_cores != ours.seconds.end();
  if (apart) {
    double scaling = one_core->second / two->second, versus_threads = all_cores->second / two->second;
    fmt::print("\ndata parallel, MLP batch 512: 2 CPU devices are {:.2f}x one device on one core, "
               "{:.2f}x one device on all {} threads\n",
               scaling, versus_threads, threads);
    report["data_parallel"] = {{"speedup_vs_one_core", scaling}, {"speedup_vs_all_threads", versus_threads}};
  }
  // The aim is judged on steps taken in turns, which share the machine's drift in speed.
  if (auto turns = ours.counters.find("mlp512_in_turns"); turns != ours.counters.end()) {
    const double one = turns->second["one_core_s"], two_devices = turns->second["data_parallel_s"];
    if (one > 0 && two_devices > 0) {
      const double scaling = one / two_devices;
      fmt::print("{}in turns, step by step: 2 CPU devices are {:.2f}x one device on one core (aim >= 1.7x: {}; "
                 "median step {} against {})\n",
                 apart ? "" : "\n", scaling, scaling >= 1.7 ? "met" : "not met", human(two_devices), human(one));
      report["data_parallel"]["speedup_vs_one_core_in_turns"] = scaling;
    }
  }
  if (two != ours.seconds.end()) fmt::print("phases of the last data-parallel step:\n{}", last_data_parallel_table());
  // A benchmark that failed on either side is named, so that a missing row is not read as a pass.
  report["errors"] = {{"tandem", ours.errors}, {"torch", their_errors}};
  if (!options.json.empty()) {
    std::ofstream file(options.json);
    file << report.dump(2) << "\n";
    file.close();
    if (!file) {
      fmt::print(stderr, "tandem bench: could not write the results to {}\n", options.json);
      return 1;
    }
    fmt::print("results written to {}\n", options.json);
  }
  return ours.errors.empty() ? 0 : 1;
}

}  // namespace tandem::bench
