// The records of one input file, as the file readers of both pipeline kinds see them:
// tf.data's TFRecordDataset / TextLineDataset / FixedLengthRecordDataset and TF1's
// TFRecordReader / TextLineReader / FixedLengthRecordReader / WholeFileReader.
//
// Formats: TFRecord (lib/runtime/data/tfrecord.h, CRCs checked; "", ZLIB, GZIP); text
// lines (without their "\n" or "\r\n"; a last line without a newline counts); fixed-
// length records after `header` bytes and before `footer` bytes, the next one `hop`
// bytes on (0: `record` bytes); the whole file as one record. Text and fixed-length files
// read "" or GZIP compression (zlib's gzread); ZLIB streams only for TFRecord.
//
// Keys (what TF1 readers output beside the value): "<file>:<n>" with n the record's
// number from 0 (TF uses byte offsets or line numbers; a key only has to be unique), and
// the file name itself for a whole file.
#ifndef PARALLAX_LIB_RUNTIME_PIPELINE_RECORD_FILE_H_
#define PARALLAX_LIB_RUNTIME_PIPELINE_RECORD_FILE_H_

#include <cstdint>
#include <memory>
#include <string>

#include "lib/base/status.h"

namespace parallax::pipeline {

enum class RecordFormat { kTFRecord, kTextLine, kFixedLength, kWholeFile };

struct RecordFileOptions {
  RecordFormat format = RecordFormat::kTFRecord;
  std::string compression;      // "", "ZLIB", "GZIP"
  int64_t skip_header_lines = 0;  // text
  int64_t header_bytes = 0, record_bytes = 0, footer_bytes = 0, hop_bytes = 0;  // fixed
};

class RecordFile {
 public:
  virtual ~RecordFile() = default;
  // Opens `path` (as given; resolve it first). Errors name the path.
  static StatusOr<std::unique_ptr<RecordFile>> Open(const std::string& path,
                                                    const RecordFileOptions& options);
  // The next record: true; false at the end; errors name the file and record.
  virtual StatusOr<bool> Next(std::string* record) = 0;
  // Records returned so far.
  int64_t records_read() const { return records_read_; }

 protected:
  int64_t records_read_ = 0;
};

}  // namespace parallax::pipeline

#endif  // PARALLAX_LIB_RUNTIME_PIPELINE_RECORD_FILE_H_
