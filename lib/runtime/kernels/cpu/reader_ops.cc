// TF1 readers: TFRecordReader, TextLineReader, FixedLengthRecordReader, WholeFileReader,
// IdentityReader (V1 string handles and V2 resources). ReaderRead(V2) takes the next
// record of the reader's current file, dequeuing the next file name from its work queue
// (which fills itself, pipeline/queue.h) when the file is done; ReaderReadUpTo(V2) up to
// n of them. In a job, rank r of N keeps the reader's records r, r+N, ... (by record:
// every rank reads every file). ReadFile and MatchingFiles resolve names through the
// session's input options.
#include <glob.h>

#include <fmt/format.h>

#include "lib/base/file.h"
#include "lib/runtime/kernel.h"
#include "lib/runtime/pipeline/queue.h"
#include "lib/runtime/pipeline/record_file.h"

namespace parallax {
namespace {

using namespace pipeline;  // NOLINT: the kernels of the pipeline module

constexpr DeviceType kCpu = DeviceType::kCpu;

std::string ResourceName(const KernelInit& init) {
  std::string shared;
  if (init.FindAttr("shared_name") != nullptr && init.GetAttr("shared_name", &shared).ok() &&
      !shared.empty()) {
    return shared;
  }
  return std::string(init.node().name());
}

StatusOr<std::string> HandleName(const KernelContext& context, int index) {
  const Tensor& t = context.input(index);
  if (t.dtype() == tensorflow::DT_RESOURCE && t.num_elements() == 1) return t.resource_name();
  if (t.dtype() == tensorflow::DT_STRING && t.num_elements() == 2) return t.data<std::string>()[1];
  return InvalidArgumentError("input {} is not a reader or queue handle", index);
}

class ReaderResource : public Resource {
 public:
  ReaderResource(std::string name, RecordFileOptions options, bool identity)
      : name_(std::move(name)), options_(std::move(options)), identity_(identity) {}
  std::string TypeName() const override { return "Reader"; }

  // The next (key, value) of this rank, or OutOfRange when the work queue is done.
  Status Read(QueueResource& queue, Session& session, std::string* key, std::string* value) {
    const InputOptions& input = session.input();
    for (;;) {
      PX_RETURN_IF_ERROR(ReadAny(queue, session, key, value));
      const int64_t position = produced_++;
      if (input.shard_count <= 1 || position % input.shard_count == input.shard_index) {
        return Status::Ok();
      }
    }
  }

 private:
  Status ReadAny(QueueResource& queue, Session& session, std::string* key, std::string* value) {
    for (;;) {
      if (!file_ && !identity_pending_) {
        PX_ASSIGN_OR_RETURN(Element work, queue.Dequeue(-1, false, session));
        if (work.size() != 1 || work[0].dtype() != tensorflow::DT_STRING ||
            work[0].num_elements() != 1) {
          return InvalidArgumentError("reader '{}': its queue must hold string scalars (file "
                                      "names)",
                                      name_);
        }
        work_ = work[0].data<std::string>()[0];
        if (identity_) {
          identity_pending_ = true;
        } else {
          StatusOr<std::unique_ptr<RecordFile>> opened =
              RecordFile::Open(session.ResolveInputPath(work_), options_);
          if (!opened.ok()) return opened.status().WithPrefix(fmt::format("reader '{}'", name_));
          file_ = std::move(*opened);
        }
      }
      if (identity_) {
        *key = *value = work_;
        identity_pending_ = false;
        return Status::Ok();
      }
      StatusOr<bool> more = file_->Next(value);
      if (!more.ok()) return more.status().WithPrefix(fmt::format("reader '{}'", name_));
      if (*more) {
        *key = options_.format == RecordFormat::kWholeFile
                   ? work_
                   : fmt::format("{}:{}", work_, file_->records_read() - 1);
        return Status::Ok();
      }
      file_.reset();
    }
  }

  std::string name_;
  RecordFileOptions options_;
  bool identity_;
  std::string work_;
  std::unique_ptr<RecordFile> file_;
  bool identity_pending_ = false;
  int64_t produced_ = 0;
};

class ReaderOp : public OpKernel {
 public:
  ReaderOp(const KernelInit& init, Status* status) : name_(ResourceName(init)) {
    const std::string_view op = init.node().op();
    v2_ = op.ends_with("V2") || op == "IdentityReader";
    identity_ = op.starts_with("IdentityReader");
    if (op.starts_with("TFRecordReader")) {
      options_.format = RecordFormat::kTFRecord;
      *status = init.GetAttrOr("compression_type", &options_.compression, std::string());
    } else if (op.starts_with("TextLineReader")) {
      options_.format = RecordFormat::kTextLine;
      *status = init.GetAttrOr("skip_header_lines", &options_.skip_header_lines, int64_t{0});
    } else if (op.starts_with("FixedLengthRecordReader")) {
      options_.format = RecordFormat::kFixedLength;
      *status = init.GetAttrOr("header_bytes", &options_.header_bytes, int64_t{0});
      if (status->ok()) *status = init.GetAttr("record_bytes", &options_.record_bytes);
      if (status->ok()) *status = init.GetAttrOr("footer_bytes", &options_.footer_bytes, int64_t{0});
      if (status->ok()) *status = init.GetAttrOr("hop_bytes", &options_.hop_bytes, int64_t{0});
      if (status->ok()) *status = init.GetAttrOr("encoding", &options_.compression, std::string());
    } else {
      options_.format = RecordFormat::kWholeFile;
    }
  }
  Status Compute(KernelContext& context) const override {
    RecordFileOptions options = options_;
    PX_RETURN_IF_ERROR(context.resources()
                           .LookupOrCreate<ReaderResource>(
                               name_,
                               [&]() -> StatusOr<std::shared_ptr<ReaderResource>> {
                                 return std::make_shared<ReaderResource>(name_, options, identity_);
                               })
                           .status());
    if (v2_) {
      context.set_output(0, Tensor::ResourceHandle(name_));
    } else {
      Tensor handle(tensorflow::DT_STRING, TensorShape({2}));
      handle.data<std::string>()[1] = name_;
      context.set_output(0, std::move(handle));
    }
    return Status::Ok();
  }

 private:
  std::string name_;
  bool v2_ = true, identity_ = false;
  RecordFileOptions options_;
};
PX_REGISTER_KERNEL(ReaderOp, "TFRecordReaderV2", kCpu);
PX_REGISTER_KERNEL(ReaderOp, "TFRecordReader", kCpu);
PX_REGISTER_KERNEL(ReaderOp, "TextLineReaderV2", kCpu);
PX_REGISTER_KERNEL(ReaderOp, "TextLineReader", kCpu);
PX_REGISTER_KERNEL(ReaderOp, "FixedLengthRecordReaderV2", kCpu);
PX_REGISTER_KERNEL(ReaderOp, "WholeFileReaderV2", kCpu);
PX_REGISTER_KERNEL(ReaderOp, "WholeFileReader", kCpu);
PX_REGISTER_KERNEL(ReaderOp, "IdentityReader", kCpu);

class ReaderReadOp : public OpKernel {
 public:
  ReaderReadOp(const KernelInit& init, Status*) : up_to_(init.node().op().starts_with("ReaderReadUpTo")) {}
  Status Compute(KernelContext& context) const override {
    PX_ASSIGN_OR_RETURN(std::string reader_name, HandleName(context, 0));
    PX_ASSIGN_OR_RETURN(std::string queue_name, HandleName(context, 1));
    PX_ASSIGN_OR_RETURN(std::shared_ptr<ReaderResource> reader,
                        context.resources().Lookup<ReaderResource>(reader_name));
    PX_ASSIGN_OR_RETURN(std::shared_ptr<QueueResource> queue,
                        context.resources().Lookup<QueueResource>(queue_name));
    if (!up_to_) {
      Tensor key(tensorflow::DT_STRING, TensorShape()), value(tensorflow::DT_STRING, TensorShape());
      PX_RETURN_IF_ERROR(reader->Read(*queue, context.session(), key.data<std::string>(),
                                      value.data<std::string>()));
      context.set_output(0, std::move(key));
      context.set_output(1, std::move(value));
      return Status::Ok();
    }
    const Tensor& count = context.input(2);
    if (count.dtype() != tensorflow::DT_INT64 || count.num_elements() != 1 ||
        count.data<int64_t>()[0] < 1) {
      return InvalidArgumentError("num_records must be a positive int64 scalar");
    }
    std::vector<std::string> keys, values;
    for (int64_t i = 0; i < count.data<int64_t>()[0]; ++i) {
      std::string k, v;
      Status read = reader->Read(*queue, context.session(), &k, &v);
      if (read.code() == StatusCode::kOutOfRange && !keys.empty()) break;
      PX_RETURN_IF_ERROR(read);
      keys.push_back(std::move(k));
      values.push_back(std::move(v));
    }
    const int64_t n = static_cast<int64_t>(keys.size());
    Tensor* k = context.AllocateOutput(0, tensorflow::DT_STRING, TensorShape({n}));
    Tensor* v = context.AllocateOutput(1, tensorflow::DT_STRING, TensorShape({n}));
    std::move(keys.begin(), keys.end(), k->data<std::string>());
    std::move(values.begin(), values.end(), v->data<std::string>());
    return Status::Ok();
  }

 private:
  bool up_to_;
};
PX_REGISTER_KERNEL(ReaderReadOp, "ReaderReadV2", kCpu);
PX_REGISTER_KERNEL(ReaderReadOp, "ReaderRead", kCpu);
PX_REGISTER_KERNEL(ReaderReadOp, "ReaderReadUpToV2", kCpu);

class ReadFileOp : public OpKernel {
 public:
  ReadFileOp(const KernelInit&, Status*) {}
  Status Compute(KernelContext& context) const override {
    const Tensor& name = context.input(0);
    if (name.dtype() != tensorflow::DT_STRING || name.num_elements() != 1) {
      return InvalidArgumentError("filename must be a string scalar");
    }
    Tensor out(tensorflow::DT_STRING, TensorShape());
    PX_ASSIGN_OR_RETURN(*out.data<std::string>(),
                        ReadFileToString(context.session().ResolveInputPath(name.data<std::string>()[0])));
    context.set_output(0, std::move(out));
    return Status::Ok();
  }
};
PX_REGISTER_KERNEL(ReadFileOp, "ReadFile", kCpu);

class MatchingFilesOp : public OpKernel {
 public:
  MatchingFilesOp(const KernelInit&, Status*) {}
  Status Compute(KernelContext& context) const override {
    const Tensor& patterns = context.input(0);
    if (patterns.dtype() != tensorflow::DT_STRING || patterns.rank() > 1) {
      return InvalidArgumentError("pattern must be a string scalar or vector");
    }
    std::vector<std::string> files;
    for (const std::string& pattern : patterns.flat<std::string>()) {
      const std::string resolved = context.session().ResolveInputPath(pattern);
      glob_t found{};
      const int rc = glob(resolved.c_str(), 0, nullptr, &found);
      std::vector<std::string> matched;
      if (rc == 0) {
        for (size_t i = 0; i < found.gl_pathc; ++i) matched.emplace_back(found.gl_pathv[i]);
      }
      globfree(&found);
      std::sort(matched.begin(), matched.end());
      files.insert(files.end(), matched.begin(), matched.end());
    }
    Tensor* out = context.AllocateOutput(0, tensorflow::DT_STRING,
                                         TensorShape({static_cast<int64_t>(files.size())}));
    std::move(files.begin(), files.end(), out->data<std::string>());
    return Status::Ok();
  }
};
PX_REGISTER_KERNEL(MatchingFilesOp, "MatchingFiles", kCpu);

}  // namespace
}  // namespace parallax
