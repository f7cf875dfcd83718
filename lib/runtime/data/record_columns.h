// Feed sources with named columns: `--feed NAME=FILE:KEY` takes column KEY of a CSV file
// (by its header's name) or feature KEY of a TFRecord file of tf.train.Example records.
// FILE is recognised by content: a valid first TFRecord frame (length and its masked
// crc32c) makes it TFRecord, anything else is read as CSV.
//
// CSV: the first row names the columns; fields are separated by ',', may be quoted
// ("" inside quotes is one "); a column whose every value is an integer becomes int64,
// else every value must be a number and it becomes double (the feeder casts to the fed
// dtype). Each row is one example of shape [].
// TFRecord: every record must hold feature KEY, an int64_list (-> int64) or float_list
// (-> float) of one length L in every record; each record is one example of shape [L]
// ([] when L is 1). bytes_list features are refused (decode them in the graph instead).
// Errors are one line naming the file, the row or record, and the column or feature.
#ifndef PARALLAX_LIB_RUNTIME_DATA_RECORD_COLUMNS_H_
#define PARALLAX_LIB_RUNTIME_DATA_RECORD_COLUMNS_H_

#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include "lib/base/status.h"
#include "lib/runtime/data/dataset.h"
#include "lib/runtime/data/tfrecord.h"

namespace parallax {

// "FILE:KEY" -> (FILE, KEY) when FILE exists and "FILE:KEY" as a whole does not;
// nullopt otherwise (the source is a plain file name).
std::optional<std::pair<std::string, std::string>> SplitKeyedSource(const std::string& source);

StatusOr<std::shared_ptr<TensorColumn>> LoadCsvColumn(const std::string& path,
                                                      const std::string& column);
StatusOr<std::shared_ptr<TensorColumn>> LoadExampleColumn(const std::string& path,
                                                          const std::string& feature);
// Either, by content.
StatusOr<std::shared_ptr<TensorColumn>> LoadKeyedColumn(const std::string& path,
                                                        const std::string& key);

// The same from bytes in memory (fuzzing, tests); `source` names them as a path would.
StatusOr<std::shared_ptr<TensorColumn>> ParseCsvColumn(std::string_view text,
                                                       const std::string& column,
                                                       const std::string& source);
// Feature `feature` of every record `reader` has left.
StatusOr<std::shared_ptr<TensorColumn>> ReadExampleColumn(TFRecordReader& reader,
                                                          const std::string& feature);
StatusOr<std::shared_ptr<TensorColumn>> ParseKeyedColumn(std::string contents,
                                                         const std::string& key,
                                                         const std::string& source);

}  // namespace parallax

#endif  // PARALLAX_LIB_RUNTIME_DATA_RECORD_COLUMNS_H_
