// Batches of sequences of different lengths for the recurrent layers, as torch.nn.utils.rnn:
// pad_sequence stacks them padded; pack_padded_sequence packs a padded batch so that each time step
// holds only the sequences still running; pad_packed_sequence undoes it. RNN, LSTM and GRU take a
// PackedSequence through forward_with_packed_input, and each sequence's last state is its own.
#pragma once

#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "core/tensor.h"

namespace tandem::nn::utils::rnn {

// data [sum of the lengths, *]: time step 0 of every sequence, then step 1 of those at least 2
// long, ... (the sequences ordered by length, longest first); batch_sizes [steps] (int64, on the
// CPU): how many sequences each step holds; sorted_indices: the batch's order by length (undefined
// where the batch came sorted), unsorted_indices its inverse.
class PackedSequence {
 public:
  PackedSequence() = default;
  PackedSequence(Tensor data, Tensor batch_sizes, Tensor sorted_indices = Tensor(), Tensor unsorted_indices = Tensor());
  const Tensor& data() const { return data_; }
  const Tensor& batch_sizes() const { return batch_sizes_; }
  const Tensor& sorted_indices() const { return sorted_indices_; }
  const Tensor& unsorted_indices() const { return unsorted_indices_; }
  bool defined() const { return data_.defined(); }
  // The same packing on another device or dtype (batch_sizes stays on the CPU).
  PackedSequence to(const Device& device) const;
  PackedSequence to(DType dtype) const;

 private:
  Tensor data_, batch_sizes_, sorted_indices_, unsorted_indices_;
};

// Packs input [T, B, *] ([B, T, *] with batch_first) whose sequence b is lengths[b] steps long
// (each in [1, T]). With enforce_sorted the lengths must not increase along the batch; otherwise
// the batch is sorted here (stably: sequences of one length keep their order, where PyTorch's
// sort may swap them from 17 sequences on, which changes data's row order but nothing padded),
// and pad_packed_sequence and the recurrent layers put it back.
PackedSequence pack_padded_sequence(const Tensor& input, const Tensor& lengths, bool batch_first = false,
                                    bool enforce_sorted = true);
PackedSequence pack_padded_sequence(const Tensor& input, const std::vector<int64_t>& lengths, bool batch_first = false,
                                    bool enforce_sorted = true);
// The padded batch [T, B, *] (or [B, T, *]), padding_value past each sequence's end, T the longest
// length or total_length (at least that); and the lengths [B] (int64, on the CPU), in the order of
// the batch that was packed.
std::tuple<Tensor, Tensor> pad_packed_sequence(const PackedSequence& sequence, bool batch_first = false,
                                               double padding_value = 0,
                                               std::optional<int64_t> total_length = std::nullopt);
// Sequences [L_i, *] (one trailing shape) stacked into [max L, B, *] ([B, max L, *] with
// batch_first), each padded with padding_value after its end ("right") or before its start ("left").
Tensor pad_sequence(const std::vector<Tensor>& sequences, bool batch_first = false, double padding_value = 0,
                    const std::string& padding_side = "right");
// pack_padded_sequence of pad_sequence(sequences), with the sequences' lengths.
PackedSequence pack_sequence(const std::vector<Tensor>& sequences, bool enforce_sorted = true);
// The reverses: a padded batch [T, B, *] (or [B, T, *]) cut back into its B sequences [L_i, *]
// (copies, as PyTorch's; unlike PyTorch's, the batch is not transposed in place) by their
// lengths, and a packing unpacked into its sequences in the order they were packed in.
std::vector<Tensor> unpad_sequence(const Tensor& padded_sequences, const Tensor& lengths, bool batch_first = false);
std::vector<Tensor> unpad_sequence(const Tensor& padded_sequences, const std::vector<int64_t>& lengths,
                                   bool batch_first = false);
std::vector<Tensor> unpack_sequence(const PackedSequence& packed_sequences);

namespace detail {
// Each step's batch size, read from batch_sizes (checked: 1-D, positive, not increasing).
std::vector<int64_t> step_sizes(const Tensor& batch_sizes, const char* op);
// The length of each sequence of a packing, longest first.
std::vector<int64_t> sorted_lengths(const std::vector<int64_t>& steps);
// A batch [T, B, *] whose sequences are in packing order (longest first), packed by `steps`, and
// the reverse: packed data as such a batch, `padding_value` where a sequence has ended.
Tensor pack_sorted(const Tensor& padded, const std::vector<int64_t>& steps);
Tensor unpack_sorted(const Tensor& data, const std::vector<int64_t>& steps, double padding_value, int64_t total_length);
}  // namespace detail

}  // namespace tandem::nn::utils::rnn
