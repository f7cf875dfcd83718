// TensorFlow V2 checkpoints, entry by entry. The input's parts (fuzz_input.h SplitParts)
// are the data shard's bytes, the header entry's value (a BundleHeaderProto), then the
// keys and values (BundleEntryProto) of tensor entries in turn. The harness builds the
// index table from them with LevelDB as the writer does, and first sets each entry's
// checksums to match the data (its crc32c; for a string tensor also the checksum of the
// lengths inside the data), so that mutations reach what the index's block checksums
// and the tensors' CRCs keep tf_checkpoint_fuzzer.cc from: the checks of entries and
// slices, and the decoding of tensors. Then it reads every tensor (read_checkpoint.h).
#include <map>

#include "fuzz/read_checkpoint.h"
#include "lib/base/crc32c.h"
#include "lib/graph/wire.h"
#include "protos/tensor_bundle.pb.h"

namespace {

using parallax::Crc32c;
using parallax::Crc32cExtend;
using parallax::MaskCrc32c;

// `value` with its checksums made to match `shard` (see the file comment), when it is
// an entry of bytes inside shard 0; otherwise as it is.
std::string WithMatchingChecksums(const std::string& value, std::string* shard) {
  tensorflow::BundleEntryProto entry;
  if (!entry.ParseFromString(value) || entry.shard_id() != 0 || entry.offset() < 0 ||
      entry.size() < 0 || static_cast<uint64_t>(entry.offset()) > shard->size() ||
      static_cast<uint64_t>(entry.size()) >
          shard->size() - static_cast<uint64_t>(entry.offset())) {
    return value;
  }
  const size_t offset = static_cast<size_t>(entry.offset());
  const size_t size = static_cast<size_t>(entry.size());
  uint32_t crc = Crc32c(std::string_view(*shard).substr(offset, size));
  if (entry.dtype() == tensorflow::DT_STRING) {
    // Varint64 lengths, one per element; their checksum (of each as a little-endian
    // uint32, uint64 above 4 GiB); the bytes.
    uint64_t elements = 1;
    for (const auto& dim : entry.shape().dim()) {
      const int64_t dim_size = dim.size();
      if (dim_size < 0 || (dim_size > 0 && elements > size / static_cast<uint64_t>(dim_size))) {
        return value;
      }
      elements *= static_cast<uint64_t>(dim_size);
    }
    const std::string_view bytes = std::string_view(*shard).substr(offset, size);
    size_t pos = 0;
    crc = 0;
    for (uint64_t i = 0; i < elements; ++i) {
      uint64_t length = 0;
      if (!parallax::wire::ReadVarint(bytes, &pos, &length)) return value;
      char little_endian[8];
      for (int b = 0; b < 8; ++b) little_endian[b] = static_cast<char>((length >> (8 * b)) & 0xff);
      crc = Crc32cExtend(crc, std::string_view(little_endian, length <= UINT32_MAX ? 4 : 8));
    }
    if (size - pos < 4) return value;
    const uint32_t masked = MaskCrc32c(crc);
    for (size_t b = 0; b < 4; ++b) {
      (*shard)[offset + pos + b] = static_cast<char>((masked >> (8 * b)) & 0xff);
    }
    crc = Crc32cExtend(crc, std::string_view(*shard).substr(offset + pos, size - pos));
  }
  entry.set_crc32c(MaskCrc32c(crc));
  return entry.SerializeAsString();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace parallax;
  const std::vector<std::string_view> parts = fuzz::SplitParts(fuzz::AsText(data, size));
  if (parts.size() < 2) return 0;
  std::string shard(parts[0]);
  std::map<std::string, std::string> entries;  // LevelDB takes keys in order, each once
  for (size_t i = 2; i + 1 < parts.size(); i += 2) {
    if (!parts[i].empty()) entries.emplace(parts[i], parts[i + 1]);
  }
  for (auto& [key, value] : entries) value = WithMatchingChecksums(value, &shard);

  // Small blocks (4 KiB, LevelDB's default; TF's are 256 KiB), so that an index spans
  // several.
  StatusOr<std::string> index = BuildTfCheckpointIndex(parts[1], entries, 4096, "fuzz.index");
  if (!index.ok()) std::abort();
  StatusOr<TfCheckpointReader> reader =
      TfCheckpointReader::OpenInMemory("fuzz", *index, {std::move(shard)});
  fuzz::CheckStatus(reader);
  if (reader.ok()) fuzz::ReadEveryTensor(*reader);
  return 0;
}
