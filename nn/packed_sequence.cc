#include "nn/packed_sequence.h"

#include <algorithm>
#include <numeric>

#include "autograd/ops.h"
#include "kernels/factory.h"

namespace tandem::nn::utils::rnn {

namespace {

std::vector<int64_t> host_int64(const Tensor& t) {
  const Tensor host = t.reshape({-1}).to(Device(kCPU), kInt64).contiguous();
  return std::vector<int64_t>(host.data_ptr<int64_t>(), host.data_ptr<int64_t>() + host.numel());
}

// The shape of one step of `t` [T, B, *]: its trailing dims.
Shape trailing(const Tensor& t, int64_t from) { return Shape(t.sizes().begin() + from, t.sizes().end()); }

}  // namespace

PackedSequence::PackedSequence(Tensor data, Tensor batch_sizes, Tensor sorted_indices, Tensor unsorted_indices)
    : data_(std::move(data)),
      batch_sizes_(std::move(batch_sizes)),
      sorted_indices_(std::move(sorted_indices)),
      unsorted_indices_(std::move(unsorted_indices)) {
  TD_CHECK(data_.defined() && data_.dim() >= 1,
           "PackedSequence: the data must be a tensor [steps of all sequences, *]");
  const std::vector<int64_t> steps = detail::step_sizes(batch_sizes_, "PackedSequence");
  TD_CHECK(std::accumulate(steps.begin(), steps.end(), int64_t{0}) == data_.size(0), "PackedSequence: batch_sizes ",
           "sum to ", std::accumulate(steps.begin(), steps.end(), int64_t{0}), " but the data has ", data_.size(0),
           " rows");
  TD_CHECK(sorted_indices_.defined() || !unsorted_indices_.defined(),
           "PackedSequence: unsorted_indices without sorted_indices");
  if (sorted_indices_.defined()) {
    TD_CHECK(sorted_indices_.sizes() == Shape{steps.front()} && !is_floating(sorted_indices_.dtype()),
             "PackedSequence: sorted_indices must be [", steps.front(), "] integers, one per sequence, got ",
             shape_str(sorted_indices_.sizes()));
    // The inverse permutation: unsorted[sorted[i]] = i.
    const std::vector<int64_t> sorted = host_int64(sorted_indices_);
    std::vector<int64_t> inverse(sorted.size(), -1);
    for (size_t i = 0; i < sorted.size(); ++i) {
      TD_CHECK(sorted[i] >= 0 && sorted[i] < steps.front() && inverse[static_cast<size_t>(sorted[i])] < 0,
               "PackedSequence: sorted_indices must be a permutation of the ", steps.front(), " sequences, got ",
               shape_str(sorted));
      inverse[static_cast<size_t>(sorted[i])] = static_cast<int64_t>(i);
    }
    if (!unsorted_indices_.defined()) unsorted_indices_ = tensor(inverse).to(sorted_indices_.device());
  }
}

PackedSequence PackedSequence::to(const Device& device) const {
  auto move = [&](const Tensor& t) { return t.defined() ? t.to(device) : t; };
  return PackedSequence(data_.to(device), batch_sizes_, move(sorted_indices_), move(unsorted_indices_));
}

PackedSequence PackedSequence::to(DType dtype) const {
  return PackedSequence(data_.to(dtype), batch_sizes_, sorted_indices_, unsorted_indices_);
}

namespace detail {

std::vector<int64_t> step_sizes(const Tensor& batch_sizes, const char* op) {
  TD_CHECK(
      batch_sizes.defined() && batch_sizes.dim() == 1 && batch_sizes.numel() > 0 && !is_floating(batch_sizes.dtype()),
      op, ": batch_sizes must be a 1-D integer tensor with a size per step");
  const std::vector<int64_t> steps = host_int64(batch_sizes);
  for (size_t t = 0; t < steps.size(); ++t) {
    TD_CHECK(steps[t] > 0 && (t == 0 || steps[t] <= steps[t - 1]), op, ": batch_sizes must be positive and not ",
             "increase, got ", shape_str(steps));
  }
  return steps;
}

std::vector<int64_t> sorted_lengths(const std::vector<int64_t>& steps) {
  std::vector<int64_t> lengths(static_cast<size_t>(steps.front()), 0);
  for (int64_t size : steps) {
    for (int64_t i = 0; i < size; ++i) ++lengths[static_cast<size_t>(i)];
  }
  return lengths;
}

Tensor pack_sorted(const Tensor& padded, const std::vector<int64_t>& steps) {
  const int64_t batch = padded.size(1);
  std::vector<int64_t> rows;
  for (size_t t = 0; t < steps.size(); ++t) {
    for (int64_t i = 0; i < steps[t]; ++i) rows.push_back(static_cast<int64_t>(t) * batch + i);
  }
  return padded.flatten(0, 1).index_select(0, tensor(rows).to(padded.device()));
}

Tensor unpack_sorted(const Tensor& data, const std::vector<int64_t>& steps, double padding_value,
                     int64_t total_length) {
  const int64_t batch = steps.front(), padding_row = data.size(0);
  // Each place of the padded batch reads its row of the data, or the padding row appended below.
  std::vector<int64_t> rows(static_cast<size_t>(total_length * batch), padding_row);
  int64_t offset = 0;
  for (size_t t = 0; t < steps.size(); ++t) {
    for (int64_t i = 0; i < steps[t]; ++i) rows[t * static_cast<size_t>(batch) + static_cast<size_t>(i)] = offset + i;
    offset += steps[t];
  }
  Shape one_row = trailing(data, 1);
  one_row.insert(one_row.begin(), 1);
  const Tensor source = cat({data, full(one_row, padding_value, data.options())}, 0);
  Shape shape = trailing(data, 1);
  shape.insert(shape.begin(), {total_length, batch});
  return source.index_select(0, tensor(rows).to(data.device())).view(shape);
}

}  // namespace detail

PackedSequence pack_padded_sequence(const Tensor& input, const std::vector<int64_t>& lengths, bool batch_first,
                                    bool enforce_sorted) {
  constexpr const char* op = "pack_padded_sequence";
  TD_CHECK(input.defined() && input.dim() >= 2, op, ": expected a padded batch [T, B, *] (or [B, T, *] with ",
           "batch_first), got ", input.defined() ? shape_str(input.sizes()) : std::string("an undefined tensor"));
  TD_CHECK(input.numel() > 0, op, ": cannot pack the empty batch ", shape_str(input.sizes()));
  const Tensor time_major = batch_first ? input.transpose(0, 1) : input;
  const int64_t steps = time_major.size(0), batch = time_major.size(1);
  TD_CHECK(static_cast<int64_t>(lengths.size()) == batch, op, ": expected a length per sequence (", batch,
           " for the input ", shape_str(input.sizes()), "), got ", lengths.size());
  for (int64_t length : lengths) {
    TD_CHECK(length > 0 && length <= steps, op, ": every length must be in [1, ", steps, "] for the input ",
             shape_str(input.sizes()), ", got ", shape_str(lengths));
  }
  std::vector<int64_t> order(static_cast<size_t>(batch));
  std::iota(order.begin(), order.end(), int64_t{0});
  if (enforce_sorted) {
    TD_CHECK(std::is_sorted(lengths.rbegin(), lengths.rend()), op, ": the lengths ", shape_str(lengths),
             " must not increase along the batch with enforce_sorted; pass enforce_sorted = false to pack an ",
             "unsorted batch");
  } else {
    std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) { return lengths[a] > lengths[b]; });
  }
  std::vector<int64_t> step_sizes;
  for (int64_t t = 0; t < lengths[static_cast<size_t>(order.front())]; ++t) {
    step_sizes.push_back(std::count_if(lengths.begin(), lengths.end(), [t](int64_t l) { return l > t; }));
  }
  const Tensor sorted = enforce_sorted ? Tensor() : tensor(order).to(input.device());
  const Tensor in_order = enforce_sorted ? time_major : time_major.index_select(1, sorted);
  return PackedSequence(detail::pack_sorted(in_order, step_sizes), tensor(step_sizes), sorted);
}

PackedSequence pack_padded_sequence(const Tensor& input, const Tensor& lengths, bool batch_first, bool enforce_sorted) {
  TD_CHECK(lengths.defined() && lengths.dim() == 1 && is_integral(lengths.dtype(), false),
           "pack_padded_sequence: lengths must be a 1-D integer tensor, got ",
           lengths.defined() ? lengths.dtype() : kInt64, " ", lengths.defined() ? shape_str(lengths.sizes()) : "");
  return pack_padded_sequence(input, host_int64(lengths), batch_first, enforce_sorted);
}

std::tuple<Tensor, Tensor> pad_packed_sequence(const PackedSequence& sequence, bool batch_first, double padding_value,
                                               std::optional<int64_t> total_length) {
  constexpr const char* op = "pad_packed_sequence";
  TD_CHECK(sequence.defined(), op, ": the PackedSequence is empty");
  const std::vector<int64_t> steps = detail::step_sizes(sequence.batch_sizes(), op);
  const int64_t longest = static_cast<int64_t>(steps.size());
  TD_CHECK(!total_length || *total_length >= longest, op, ": total_length (", total_length.value_or(0),
           ") must be at least the longest sequence's length (", longest, ")");
  Tensor padded = detail::unpack_sorted(sequence.data(), steps, padding_value, total_length.value_or(longest));
  std::vector<int64_t> lengths = detail::sorted_lengths(steps);
  if (sequence.unsorted_indices().defined()) {
    padded = padded.index_select(1, sequence.unsorted_indices());
    const std::vector<int64_t> sorted = host_int64(sequence.sorted_indices());
    std::vector<int64_t> original(lengths.size());
    for (size_t i = 0; i < sorted.size(); ++i) original[static_cast<size_t>(sorted[i])] = lengths[i];
    lengths = original;
  }
  return {batch_first ? padded.transpose(0, 1) : padded, tensor(lengths)};
}

Tensor pad_sequence(const std::vector<Tensor>& sequences, bool batch_first, double padding_value,
                    const std::string& padding_side) {
  constexpr const char* op = "pad_sequence";
  TD_CHECK(!sequences.empty(), op, ": no sequences");
  TD_CHECK(padding_side == "right" || padding_side == "left", op,
           ": padding_side must be \"right\" or \"left\", got \"", padding_side, "\"");
  int64_t longest = 0;
  for (size_t i = 0; i < sequences.size(); ++i) {
    const Tensor& s = sequences[i];
    TD_CHECK(s.defined() && s.dim() >= 1, op, ": sequence ", i, " must be a tensor [L, *]");
    TD_CHECK(trailing(s, 1) == trailing(sequences[0], 1) && s.dtype() == sequences[0].dtype() &&
                 s.device() == sequences[0].device(),
             op, ": every sequence must have the first one's trailing shape, dtype and device (",
             shape_str(sequences[0].sizes()), ", ", sequences[0].dtype(), " on ", sequences[0].device(), "); sequence ",
             i, " is ", shape_str(s.sizes()), ", ", s.dtype(), " on ", s.device());
    longest = std::max(longest, s.size(0));
  }
  std::vector<Tensor> padded;
  for (const Tensor& s : sequences) {
    Shape fill = s.sizes();
    fill[0] = longest - s.size(0);
    const Tensor padding = full(fill, padding_value, s.options());
    padded.push_back(fill[0] == 0 ? s : padding_side == "right" ? cat({s, padding}, 0) : cat({padding, s}, 0));
  }
  return stack(padded, batch_first ? 0 : 1);
}

std::vector<Tensor> unpad_sequence(const Tensor& padded_sequences, const std::vector<int64_t>& lengths,
                                   bool batch_first) {
  constexpr const char* op = "unpad_sequence";
  TD_CHECK(padded_sequences.defined() && padded_sequences.dim() >= 2, op, ": expected a padded batch [T, B, *] or ",
           "[B, T, *], got ", padded_sequences.defined() ? shape_str(padded_sequences.sizes()) : std::string("none"));
  const Tensor batch_major = batch_first ? padded_sequences : padded_sequences.transpose(0, 1);
  const int64_t batch = batch_major.size(0), steps = batch_major.size(1);
  TD_CHECK(static_cast<int64_t>(lengths.size()) == batch, op, ": got ", lengths.size(), " lengths for a batch of ",
           batch, " sequences (", shape_str(padded_sequences.sizes()), ", batch_first ",
           batch_first ? "true" : "false", ")");
  std::vector<Tensor> sequences;
  for (int64_t b = 0; b < batch; ++b) {
    const int64_t length = lengths[static_cast<size_t>(b)];
    TD_CHECK(length >= 0 && length <= steps, op, ": length ", length, " of sequence ", b, " is not within the ",
             steps, " steps of the batch ", shape_str(padded_sequences.sizes()));
    sequences.push_back(batch_major.select(0, b).narrow(0, 0, length).clone());
  }
  return sequences;
}

std::vector<Tensor> unpad_sequence(const Tensor& padded_sequences, const Tensor& lengths, bool batch_first) {
  TD_CHECK(lengths.defined() && lengths.dim() == 1 && is_integral(lengths.dtype(), false), "unpad_sequence: lengths must ",
           "be a 1-D integer tensor, got ", lengths.defined() ? shape_str(lengths.sizes()) : std::string("none"));
  return unpad_sequence(padded_sequences, host_int64(lengths), batch_first);
}

std::vector<Tensor> unpack_sequence(const PackedSequence& packed_sequences) {
  TD_CHECK(packed_sequences.defined(), "unpack_sequence: the PackedSequence is empty");
  const auto [padded, lengths] = pad_packed_sequence(packed_sequences, /*batch_first=*/true);
  return unpad_sequence(padded, lengths, /*batch_first=*/true);
}

PackedSequence pack_sequence(const std::vector<Tensor>& sequences, bool enforce_sorted) {
  std::vector<int64_t> lengths;
  for (const Tensor& s : sequences) lengths.push_back(s.defined() && s.dim() >= 1 ? s.size(0) : 0);
  return pack_padded_sequence(pad_sequence(sequences), lengths, false, enforce_sorted);
}

}  // namespace tandem::nn::utils::rnn
