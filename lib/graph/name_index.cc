#include "lib/graph/name_index.h"

namespace parallax {

uint32_t NameIndex::Hash(std::string_view name) {
  const uint64_t h = std::hash<std::string_view>{}(name);
  return static_cast<uint32_t>(h ^ (h >> 32));
}

size_t NameIndex::Probe(std::string_view name, uint32_t hash, const NameOf& name_of,
                        bool* found) const {
  const size_t mask = slots_.size() - 1;
  size_t first_free = SIZE_MAX;
  for (size_t i = hash & mask, step = 1;; i = (i + step++) & mask) {  // triangular probing
    const Slot& slot = slots_[i];
    if (slot.id == kEmpty) {
      *found = false;
      return first_free != SIZE_MAX ? first_free : i;
    }
    if (slot.id == kTombstone) {
      if (first_free == SIZE_MAX) first_free = i;
    } else if (slot.hash == hash && name_of(slot.id) == name) {
      *found = true;
      return i;
    }
  }
}

void NameIndex::Rehash(size_t capacity) {
  std::vector<Slot> old = std::move(slots_);
  slots_.assign(capacity, Slot{});
  tombstones_ = 0;
  const size_t mask = capacity - 1;
  for (const Slot& slot : old) {
    if (slot.id < 0) continue;
    size_t i = slot.hash & mask;
    for (size_t step = 1; slots_[i].id != kEmpty; i = (i + step++) & mask) {
    }
    slots_[i] = slot;
  }
}

void NameIndex::Reserve(size_t count) {
  size_t capacity = 16;
  while (capacity < 2 * count) capacity *= 2;
  if (capacity > slots_.size()) Rehash(capacity);
}

int32_t NameIndex::Find(std::string_view name, const NameOf& name_of) const {
  if (slots_.empty()) return kAbsent;
  bool found = false;
  const size_t i = Probe(name, Hash(name), name_of, &found);
  return found ? slots_[i].id : kAbsent;
}

int32_t NameIndex::Insert(std::string_view name, int32_t id, const NameOf& name_of) {
  if (2 * (live_ + tombstones_ + 1) > slots_.size()) {
    Rehash(std::max<size_t>(16, 2 * (live_ + 1) > slots_.size() / 2 ? 2 * slots_.size()
                                                                     : slots_.size()));
  }
  const uint32_t hash = Hash(name);
  bool found = false;
  const size_t i = Probe(name, hash, name_of, &found);
  if (found) return slots_[i].id;
  if (slots_[i].id == kTombstone) --tombstones_;
  slots_[i] = Slot{hash, id};
  ++live_;
  return kAbsent;
}

void NameIndex::Erase(std::string_view name, const NameOf& name_of) {
  if (slots_.empty()) return;
  bool found = false;
  const size_t i = Probe(name, Hash(name), name_of, &found);
  if (!found) return;
  slots_[i].id = kTombstone;
  --live_;
  ++tombstones_;
}

}  // namespace parallax
