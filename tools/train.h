// `tandem train`: trains the MLP or the CNN of examples/models.h on the built-in shapes data,
// MNIST or CIFAR-10, with a progress bar per epoch and a held-out accuracy at the end.
// Checkpoints hold the model, the optimizer, the data position and the random state, so a
// resumed run continues bit-exactly as the uninterrupted run would. With several --devices the
// model trains under DataParallel and the run ends with the per-device phase table. --amp trains
// in mixed precision: the forward and the loss under autocast, float16 with a GradScaler.
#pragma once

#include <cstdint>
#include <iosfwd>
#include <stdexcept>
#include <string>
#include <vector>

namespace tandem::train {

struct Options {
  std::string model = "mlp";      // mlp | cnn
  std::string data = "default";   // default | mnist:DIR | cifar10:DIR
  int64_t epochs = 3;
  int64_t batch_size = 64;
  double lr = 0;                  // 0: the optimizer's default (SGD 0.05, AdamW 0.001)
  std::string optimizer = "sgd";  // sgd (momentum 0.9) | adamw
  double dropout = 0;             // > 0: Dropout layers in the model, with this probability
  std::string amp = "off";        // off | bf16 | fp16: autocast's dtype (fp16 with loss scaling)
  std::string devices = "cpu:0";  // one device, a list (cpu:0,cpu:1) or all: DataParallel
  uint64_t seed = 0;
  std::string save;               // checkpoint written after every epoch
  std::string resume;             // checkpoint to continue from
  int64_t workers = 2;            // data loader threads
  int64_t train_size = 20000;     // default data only: examples generated for training
  int64_t test_size = 2000;       // ... and for the held-out accuracy
  bool progress = true;           // the per-epoch progress bar
};

struct Result {
  std::vector<double> epoch_losses;  // mean training loss of each epoch run
  double test_accuracy = 0;          // held-out accuracy after the last epoch
  int64_t steps = 0;                 // training steps, over the whole run
  int64_t skipped_steps = 0;         // of those, steps the loss scaler skipped (--amp fp16), this run
};

// Problems the user can fix (bad options, unreadable data, a mismatched checkpoint): the CLI
// reports them with exit code 2.
class UsageError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

Result run(const Options& options, std::ostream& log);

// `tandem trace`: a few DataParallel steps of the default model, then the phase table of the last
// one; with `trace` (or TANDEM_TRACE) also a Chrome / Perfetto trace of every step.
struct TraceOptions {
  std::string devices = "all";
  std::string model = "mlp";
  int64_t steps = 5;
  int64_t batch_size = 512;
  std::string trace;  // the trace file; empty: TANDEM_TRACE's, if set
};
void trace(const TraceOptions& options, std::ostream& log);

}  // namespace tandem::train
