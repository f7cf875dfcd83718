// NameIndex: node name -> NodeId, as an open-addressing hash table of (hash, id) slots.
//
// The Graph's names live in its nodes, so the table stores only a 32-bit hash and the
// id (8 bytes a slot, load factor <= 1/2) and asks the graph for a name when hashes
// match: about 16 bytes a node instead of ~56 for std::unordered_map. Removal leaves a
// tombstone; tombstones are dropped when the table grows.
#ifndef PARALLAX_LIB_GRAPH_NAME_INDEX_H_
#define PARALLAX_LIB_GRAPH_NAME_INDEX_H_

#include <cstdint>
#include <functional>
#include <string_view>
#include <vector>

namespace parallax {

class NameIndex {
 public:
  using NameOf = std::function<std::string_view(int32_t)>;
  static constexpr int32_t kAbsent = -1;

  void Reserve(size_t count);
  // The id stored under `name`, or kAbsent.
  int32_t Find(std::string_view name, const NameOf& name_of) const;
  // Stores id under name; returns the id already stored there (and stores nothing), or
  // kAbsent.
  int32_t Insert(std::string_view name, int32_t id, const NameOf& name_of);
  void Erase(std::string_view name, const NameOf& name_of);
  size_t bytes() const { return slots_.capacity() * sizeof(Slot); }

 private:
  static constexpr int32_t kEmpty = -1;
  static constexpr int32_t kTombstone = -2;
  struct Slot {
    uint32_t hash = 0;
    int32_t id = kEmpty;
  };

  static uint32_t Hash(std::string_view name);
  // The slot holding `name`, or the first free slot on its probe sequence (-1 if none).
  size_t Probe(std::string_view name, uint32_t hash, const NameOf& name_of, bool* found) const;
  void Rehash(size_t capacity);

  std::vector<Slot> slots_;  // size is 0 or a power of two
  size_t live_ = 0;
  size_t tombstones_ = 0;
};

}  // namespace parallax

#endif  // PARALLAX_LIB_GRAPH_NAME_INDEX_H_
