// tf.data's file readers: TFRecordDataset, TextLineDataset, FixedLengthRecordDataset(V2).
// Each yields one string scalar per record of its files, in file order (record formats:
// pipeline/record_file.h). File names are resolved through the session's input options
// (--input-dir, --input-map). Sharded for a job's ranks by file when the dataset has at
// least as many files as ranks, else by record (pipeline/dataset.h).
#include <fmt/format.h>

#include "lib/runtime/kernel.h"
#include "lib/runtime/pipeline/dataset.h"
#include "lib/runtime/pipeline/record_file.h"

namespace parallax {
namespace {

using namespace pipeline;  // NOLINT: the kernels of the pipeline module

constexpr DeviceType kCpu = DeviceType::kCpu;

class FileDataset : public Dataset {
 public:
  FileDataset(std::string name, std::vector<std::string> files, RecordFileOptions options)
      : Dataset(std::move(name), {tensorflow::DT_STRING}),
        files_(std::move(files)),
        options_(std::move(options)) {}

 protected:
  StatusOr<std::unique_ptr<DatasetIterator>> MakeIteratorImpl(Session& session) const override {
    auto it = std::make_unique<Iterator>();
    it->dataset = this;
    it->session = &session;
    return std::unique_ptr<DatasetIterator>(std::move(it));
  }

  StatusOr<std::shared_ptr<const Dataset>> ShardSource(int index, int count) const override {
    if (static_cast<int>(files_.size()) < count) return Dataset::ShardSource(index, count);
    std::vector<std::string> mine;
    for (size_t i = static_cast<size_t>(index); i < files_.size(); i += static_cast<size_t>(count)) {
      mine.push_back(files_[i]);
    }
    return MakeDataset<FileDataset>(name() + " (sharded by file)", std::move(mine), options_);
  }

 private:
  struct Iterator : DatasetIterator {
    const FileDataset* dataset;
    Session* session;
    size_t next_file = 0;
    std::unique_ptr<RecordFile> file;
    Status GetNext(Element* element, bool* end) override {
      for (;;) {
        if (!file) {
          if (next_file >= dataset->files_.size()) {
            *end = true;
            return Status::Ok();
          }
          const std::string path = session->ResolveInputPath(dataset->files_[next_file++]);
          StatusOr<std::unique_ptr<RecordFile>> opened = RecordFile::Open(path, dataset->options_);
          if (!opened.ok()) return opened.status().WithPrefix(dataset->name());
          file = std::move(*opened);
        }
        Tensor record(tensorflow::DT_STRING, TensorShape());
        StatusOr<bool> more = file->Next(record.data<std::string>());
        if (!more.ok()) return more.status().WithPrefix(dataset->name());
        if (*more) {
          *element = {std::move(record)};
          *end = false;
          return Status::Ok();
        }
        file.reset();
      }
    }
  };

  std::vector<std::string> files_;
  RecordFileOptions options_;
};

StatusOr<std::string> StringScalar(const KernelContext& context, int index, std::string_view what) {
  const Tensor& t = context.input(index);
  if (t.dtype() != tensorflow::DT_STRING || t.num_elements() != 1) {
    return InvalidArgumentError("{} must be a string scalar", what);
  }
  return t.data<std::string>()[0];
}

StatusOr<int64_t> Int64Scalar(const KernelContext& context, int index, std::string_view what) {
  const Tensor& t = context.input(index);
  if (t.dtype() != tensorflow::DT_INT64 || t.num_elements() != 1) {
    return InvalidArgumentError("{} must be an int64 scalar", what);
  }
  return t.data<int64_t>()[0];
}

class FileDatasetKernel : public OpKernel {
 public:
  FileDatasetKernel(const KernelInit& init, Status*)
      : name_(fmt::format("{} '{}'", init.node().op(), init.node().name())) {
    const std::string_view op = init.node().op();
    format_ = op == "TFRecordDataset"  ? RecordFormat::kTFRecord
              : op == "TextLineDataset" ? RecordFormat::kTextLine
                                        : RecordFormat::kFixedLength;
    v2_ = op == "FixedLengthRecordDatasetV2";
  }

  Status Compute(KernelContext& context) const override {
    const Tensor& names = context.input(0);
    if (names.dtype() != tensorflow::DT_STRING || names.rank() > 1) {
      return InvalidArgumentError("{}: filenames must be a string scalar or vector", name_);
    }
    std::vector<std::string> files(names.data<std::string>(),
                                   names.data<std::string>() + names.num_elements());
    RecordFileOptions o;
    o.format = format_;
    if (format_ == RecordFormat::kFixedLength) {
      PX_ASSIGN_OR_RETURN(o.header_bytes, Int64Scalar(context, 1, name_ + " header_bytes"));
      PX_ASSIGN_OR_RETURN(o.record_bytes, Int64Scalar(context, 2, name_ + " record_bytes"));
      PX_ASSIGN_OR_RETURN(o.footer_bytes, Int64Scalar(context, 3, name_ + " footer_bytes"));
      if (o.record_bytes <= 0 || o.header_bytes < 0 || o.footer_bytes < 0) {
        return InvalidArgumentError("{}: record_bytes must be positive, header and footer bytes "
                                    "not negative",
                                    name_);
      }
      if (v2_) {
        PX_ASSIGN_OR_RETURN(o.compression, StringScalar(context, 5, name_ + " compression_type"));
      }
    } else {
      PX_ASSIGN_OR_RETURN(o.compression, StringScalar(context, 1, name_ + " compression_type"));
    }
    if (o.compression != "" && o.compression != "ZLIB" && o.compression != "GZIP") {
      return InvalidArgumentError("{}: compression_type '{}' is not '', 'ZLIB' or 'GZIP'", name_,
                                  o.compression);
    }
    context.set_output(0, DatasetToTensor(MakeDataset<FileDataset>(name_, std::move(files), o)));
    return Status::Ok();
  }

 private:
  std::string name_;
  RecordFormat format_;
  bool v2_ = false;
};
PX_REGISTER_KERNEL(FileDatasetKernel, "TFRecordDataset", kCpu);
PX_REGISTER_KERNEL(FileDatasetKernel, "TextLineDataset", kCpu);
PX_REGISTER_KERNEL(FileDatasetKernel, "FixedLengthRecordDataset", kCpu);
PX_REGISTER_KERNEL(FileDatasetKernel, "FixedLengthRecordDatasetV2", kCpu);

}  // namespace
}  // namespace parallax
