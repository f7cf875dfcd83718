// TensorFlow's V2 checkpoints (the "tensor bundle"), read and written byte for byte as
// TensorFlow lays them out: Parallax restores what tf.train.Saver wrote, and
// tf.train.Saver().restore / tf.train.load_checkpoint read what Parallax writes.
//
// Files of a checkpoint *prefix* P (e.g. "train/model.ckpt-1000"):
//   P.index                 a LevelDB-format table (written and read with leveldb::Table):
//                           key "" -> BundleHeaderProto {num_shards, endianness, version};
//                           each tensor name -> BundleEntryProto {dtype, shape, shard_id,
//                           offset, size, crc32c, slices}. Keys sorted bytewise; written as
//                           TF writes it: uncompressed 256 KiB blocks, restart interval 16,
//                           an empty metaindex, a masked crc32c after every block, and the
//                           48-byte footer ending in the magic 0xdb4775248b80fb57.
//   P.data-SSSSS-of-NNNNN   the bytes of the tensors of shard S: a tensor at
//                           [offset, offset + size), packed without padding in the order
//                           they were added (TF's default alignment of 1).
// A tensor's bytes: numeric dtypes raw, little-endian, row-major (half and bfloat16 as their
// bit patterns); DT_STRING as a varint64 length per element, a masked crc32c of those
// lengths, then the bytes of every element. The entry's crc32c is the masked CRC-32C of
// the tensor's bytes; for strings TF checksums each length as a little-endian uint32
// (uint64 above 4 GiB), not as its varint, then the length checksum and the bytes.
// A tensor saved as slices (a partitioned variable) has an entry with its dtype, full
// shape and slices, and one entry per slice (tensor_slice.h); listings leave the slices'
// own entries out.
//
// The `checkpoint` file of a directory (tf.train.Saver / CheckpointManager write it) is
// a CheckpointState in protobuf text format: model_checkpoint_path names the newest
// prefix, relative to the directory or absolute.
//
// Errors are one line naming the file, then the tensor and the field at fault:
//   ck/model.ckpt-10.index: corrupt checkpoint index: block checksum mismatch
//   ck/model.ckpt-10.data-00000-of-00001: tensor 'w': crc32c mismatch (stored 0x..., ...)
// Limits: little-endian checkpoints only (as every TF build on x86 and ARM writes);
// DT_VARIANT and DT_RESOURCE tensors are listed but not read or written; the writer
// writes one data shard (MergeTfCheckpoints joins several into one checkpoint).
#ifndef PARALLAX_LIB_RUNTIME_CHECKPOINT_TF_CHECKPOINT_H_
#define PARALLAX_LIB_RUNTIME_CHECKPOINT_TF_CHECKPOINT_H_

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "lib/base/status.h"
#include "lib/runtime/checkpoint/tensor_slice.h"
#include "lib/runtime/tensor.h"
#include "protos/tensor_bundle.pb.h"

namespace parallax {

// The bundle format version this code reads and writes (TF's kTensorBundleVersion).
inline constexpr int kTfBundleVersion = 1;
// The CheckpointState file beside checkpoints.
inline constexpr std::string_view kTfCheckpointStateFile = "checkpoint";

// P.index
std::string TfCheckpointIndexPath(std::string_view prefix);
// P.data-00000-of-00001 (shard 0 of 1)
std::string TfCheckpointDataPath(std::string_view prefix, int shard, int num_shards);

// One tensor of a checkpoint as its index describes it.
struct TfCheckpointEntry {
  std::string name;
  DataType dtype = tensorflow::DT_INVALID;
  TensorShape shape;                // of the whole tensor
  std::vector<TensorSlice> slices;  // empty: stored whole
  // Stored whole: where its bytes are. Sliced: `size` is the sum of the slices' sizes.
  int32_t shard = 0;
  int64_t offset = 0;
  int64_t size = 0;
  uint32_t masked_crc32c = 0;
};

class TfCheckpointReader {
 public:
  // Reads P.index whole (every block's checksum verified) and checks the header and
  // every entry: dtype, shape, shard, offset and size. The data files are opened when
  // a tensor is read. Errors: a missing index file, a corrupt or truncated one, a header
  // of another version or endianness, an entry that does not parse or is inconsistent.
  static StatusOr<TfCheckpointReader> Open(const std::string& prefix);
  // The same for a checkpoint held in memory: `index` is P.index's bytes, data_shards[S]
  // the bytes of P.data-S-of-N (a shard past the end of the vector is a missing file);
  // messages name the files of `prefix` as Open's do. For fuzzing and tests.
  static StatusOr<TfCheckpointReader> OpenInMemory(const std::string& prefix,
                                                   std::string_view index,
                                                   std::vector<std::string> data_shards);

  const std::string& prefix() const { return prefix_; }
  std::string index_path() const { return TfCheckpointIndexPath(prefix_); }
  int num_shards() const { return num_shards_; }

  // The tensors, sorted by name (the entries of a sliced tensor's slices are not listed:
  // they are read through it).
  const std::vector<TfCheckpointEntry>& entries() const { return entries_; }
  const TfCheckpointEntry* Find(std::string_view name) const;

  // The whole tensor (a sliced one assembled from its slices), its crc32c checked.
  // Errors: no such tensor, a missing or truncated data file, a crc mismatch, a dtype this
  // reader cannot hold (variant, resource), slices that do not cover the tensor.
  StatusOr<Tensor> Read(std::string_view name) const;
  // The same, refusing a tensor of another dtype or shape than asked for.
  StatusOr<Tensor> Read(std::string_view name, DataType dtype, const TensorShape& shape) const;
  // The elements of `slice` of the tensor (stored whole or as slices that cover it).
  StatusOr<Tensor> ReadSlice(std::string_view name, const TensorSlice& slice) const;
  // RestoreV2 for one tensor: shape_and_slice "" reads it whole; otherwise "dims slice"
  // (tensor_slice.h), whose dims must be the stored shape, reads that slice. The stored
  // dtype must be `dtype`.
  StatusOr<Tensor> Restore(std::string_view name, std::string_view shape_and_slice,
                           DataType dtype) const;

 private:
  TfCheckpointReader() = default;
  static StatusOr<TfCheckpointReader> FromIndex(const std::string& prefix,
                                                std::string_view index);
  // Checks that the bytes of `entry` lie inside its data shard and, with `out`, copies
  // them there. Called without `out` before anything is allocated for a tensor, so that
  // an index claiming more bytes than its data file holds costs no memory.
  Status ReadStoredBytes(std::string_view name, const tensorflow::BundleEntryProto& entry,
                         char* out) const;
  // The bytes of an entry stored whole, decoded into `out` (allocated by the caller with
  // the entry's dtype and shape); `name` names the tensor in messages.
  Status ReadStored(std::string_view name, const tensorflow::BundleEntryProto& entry,
                    Tensor* out) const;
  const tensorflow::BundleEntryProto* FindKey(std::string_view key) const;

  std::string prefix_;
  int num_shards_ = 1;
  std::vector<TfCheckpointEntry> entries_;
  std::map<std::string, size_t, std::less<>> by_name_;  // into entries_
  // Every key of the index but the header's (slices' own entries too).
  std::map<std::string, tensorflow::BundleEntryProto, std::less<>> keys_;
  // OpenInMemory: the data files' bytes, by shard, instead of the files.
  bool data_in_memory_ = false;
  std::vector<std::string> data_shards_;
};

// Writes one checkpoint: P.data-00000-of-00001 and P.index. Tensors go to a temporary
// sibling of the data file as they are added; Finish writes the index to a temporary
// sibling too, then renames both into place (the data file first), so that P shows
// nothing half-written after an error. Without Finish, the destructor removes the
// temporary file. The directory of P is created when missing. Not thread-safe.
class TfCheckpointWriter {
 public:
  explicit TfCheckpointWriter(std::string prefix);
  ~TfCheckpointWriter();
  TfCheckpointWriter(const TfCheckpointWriter&) = delete;
  TfCheckpointWriter& operator=(const TfCheckpointWriter&) = delete;

  // Adds a whole tensor. Errors (after which every call returns the first one): a name
  // added before or empty, a dtype that cannot be stored, a write failure.
  Status Add(std::string_view name, const Tensor& tensor);
  // Adds one slice of a tensor of `shape` (SaveV2 with a shape_and_slice): the tensor's
  // entry lists its slices. A slice that covers the whole shape is added whole, as TF
  // does. Errors as Add, and: a slice_tensor whose shape is not the slice's, a dtype or
  // shape other than earlier slices of the same tensor.
  Status AddSlice(std::string_view name, const TensorShape& shape, const TensorSlice& slice,
                  const Tensor& slice_tensor);
  // Writes the index and renames both files into place. An empty checkpoint is valid.
  Status Finish();

  const std::string& prefix() const { return prefix_; }

 private:
  Status Fail(Status status);
  Status OpenData();
  Status Append(const char* data, size_t size, uint32_t* crc);
  Status Flush();
  void RemoveTemporaries();

  std::string prefix_;
  std::string data_tmp_;   // the data file's temporary name
  std::string index_tmp_;  // the index's
  int fd_ = -1;
  int64_t size_ = 0;  // bytes of the data file so far
  std::vector<char> buffer_;
  size_t buffered_ = 0;
  std::map<std::string, tensorflow::BundleEntryProto> entries_;  // by key
  Status status_;
  bool finished_ = false;
};

// The bytes of an index file holding `header` (a serialized BundleHeaderProto) under the
// empty key, then `entries` (key -> serialized BundleEntryProto, any bytes), laid out as
// TF's TableBuilder does with blocks of `block_bytes` (TF: 256 KiB). The writers use it;
// the fuzz harness passes mutated values and small blocks. Errors name `path`.
StatusOr<std::string> BuildTfCheckpointIndex(std::string_view header,
                                             const std::map<std::string, std::string>& entries,
                                             size_t block_bytes, const std::string& path);

// Writes `tensors` as the checkpoint P in one call (in name order).
Status WriteTfCheckpoint(const std::string& prefix, const std::map<std::string, Tensor>& tensors);

// TF's MergeBundles (the MergeV2Checkpoints op, the last step of a sharded save): the
// checkpoints at `prefixes` become one at `destination` — their data files are renamed
// to destination.data-K-of-N (N = all their shards, in the order of `prefixes`), their
// entries written to one index with the shard ids changed (the slices of a tensor saved
// in several pieces joined into one entry), and their index files deleted. With
// `delete_old_dirs`, each prefix's directory is then removed when it is empty and is not
// the destination's. With `allow_missing_files`, prefixes without an index are skipped
// (at least one must exist). Errors: a missing or corrupt input, the same tensor in two
// inputs (other than slices of one tensor), inputs of another version; nothing is renamed
// before every input has been read.
Status MergeTfCheckpoints(const std::vector<std::string>& prefixes, const std::string& destination,
                          bool delete_old_dirs = true, bool allow_missing_files = false);

// DIR/checkpoint, parsed (text format). Errors: missing, unparsable, or without
// model_checkpoint_path.
StatusOr<tensorflow::CheckpointState> ReadTfCheckpointState(const std::string& dir);
// The same for the file's text; `source` (its path) starts every message.
StatusOr<tensorflow::CheckpointState> ParseTfCheckpointState(std::string_view text,
                                                             std::string_view source);
// Writes DIR/checkpoint atomically in the text format TensorFlow writes.
Status WriteTfCheckpointState(const std::string& dir, const tensorflow::CheckpointState& state);
// The newest checkpoint prefix named by DIR/checkpoint: model_checkpoint_path, relative
// paths resolved against DIR. An absolute path whose index is gone (the directory was
// moved or copied from another machine) is looked for in DIR by its base name.
StatusOr<std::string> LatestTfCheckpoint(const std::string& dir);

}  // namespace parallax

#endif  // PARALLAX_LIB_RUNTIME_CHECKPOINT_TF_CHECKPOINT_H_
