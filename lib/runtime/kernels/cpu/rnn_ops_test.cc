// Tests of the fused recurrent cells: LSTMBlockCell and GRUBlockCell against naive
// double-precision formulas (peepholes on and off, forget_bias, an active and an
// inactive cell_clip, empty batches, 1 and 3 threads), LSTMBlockCellGrad and
// GRUBlockCellGrad against central finite differences of the forward kernels (through
// TF's python gradients for x, h_prev, w and b: products of the gate gradients), and
// the exact shape errors.
#include <catch2/catch.hpp>
#include <cmath>
#include <functional>

#include "lib/runtime/kernels/cpu/testing/kernel_test_helpers.h"

namespace parallax {
namespace {

using kernel_test::ErrorOf;
using kernel_test::F32;
using kernel_test::Run;
using tensorflow::DT_FLOAT;
using testing::AttrMap;
using testing::CompareTensors;
using testing::RandomTensor;

double Sig(double x) { return 1.0 / (1.0 + std::exp(-x)); }

// Element (r, j) of a row-major float matrix with `cols` columns.
double At(const Tensor& t, int64_t r, int64_t j, int64_t cols) {
  return t.data<float>()[r * cols + j];
}

// ---- LSTM ----

struct LstmInputs {
  int64_t batch, input, cell;
  Tensor x, cs_prev, h_prev, w, wci, wcf, wco, b;
  std::vector<Tensor> All() const { return {x, cs_prev, h_prev, w, wci, wcf, wco, b}; }
};

LstmInputs RandomLstm(int64_t batch, int64_t input, int64_t cell, uint64_t seed) {
  LstmInputs in{batch, input, cell};
  in.x = RandomTensor(DT_FLOAT, TensorShape({batch, input}), seed);
  in.cs_prev = RandomTensor(DT_FLOAT, TensorShape({batch, cell}), seed + 1, -2, 2);
  in.h_prev = RandomTensor(DT_FLOAT, TensorShape({batch, cell}), seed + 2);
  in.w = RandomTensor(DT_FLOAT, TensorShape({input + cell, 4 * cell}), seed + 3);
  in.wci = RandomTensor(DT_FLOAT, TensorShape({cell}), seed + 4);
  in.wcf = RandomTensor(DT_FLOAT, TensorShape({cell}), seed + 5);
  in.wco = RandomTensor(DT_FLOAT, TensorShape({cell}), seed + 6);
  in.b = RandomTensor(DT_FLOAT, TensorShape({4 * cell}), seed + 7);
  return in;
}

AttrMap LstmAttrs(float forget_bias, float cell_clip, bool peephole) {
  return {{"T", TypeAttr(DT_FLOAT)},
          {"forget_bias", FloatAttr(forget_bias)},
          {"cell_clip", FloatAttr(cell_clip)},
          {"use_peephole", BoolAttr(peephole)}};
}

// i, cs, f, o, ci, co, h by TF's formulas, in double.
std::vector<Tensor> NaiveLstm(const LstmInputs& in, double forget_bias, double clip,
                              bool peephole) {
  const int64_t c = in.cell, n_in = in.input;
  std::vector<Tensor> out;
  for (int k = 0; k < 7; ++k) out.emplace_back(DT_FLOAT, TensorShape({in.batch, c}));
  for (int64_t r = 0; r < in.batch; ++r) {
    for (int64_t j = 0; j < c; ++j) {
      double bar[4];
      for (int g = 0; g < 4; ++g) {
        double sum = in.b.data<float>()[g * c + j];
        for (int64_t k = 0; k < n_in; ++k)
          sum += At(in.x, r, k, n_in) * At(in.w, k, g * c + j, 4 * c);
        for (int64_t k = 0; k < c; ++k)
          sum += At(in.h_prev, r, k, c) * At(in.w, n_in + k, g * c + j, 4 * c);
        bar[g] = sum;
      }
      const double prev = At(in.cs_prev, r, j, c);
      const double p = peephole ? 1.0 : 0.0;
      const double i = Sig(bar[0] + p * prev * in.wci.data<float>()[j]);
      const double ci = std::tanh(bar[1]);
      const double f = Sig(bar[2] + forget_bias + p * prev * in.wcf.data<float>()[j]);
      double cs = ci * i + prev * f;
      if (clip > 0) cs = std::min(std::max(cs, -clip), clip);
      const double o = Sig(bar[3] + p * cs * in.wco.data<float>()[j]);
      const double co = std::tanh(cs);
      const double values[7] = {i, cs, f, o, ci, co, co * o};
      for (int k = 0; k < 7; ++k)
        out[static_cast<size_t>(k)].data<float>()[r * c + j] = static_cast<float>(values[k]);
    }
  }
  return out;
}

TEST_CASE("LSTMBlockCell matches TF's formulas (peepholes, forget_bias, cell_clip, empty batch)") {
  uint64_t seed = 1;
  for (const auto& [batch, input, cell] : std::vector<std::tuple<int64_t, int64_t, int64_t>>{
           {1, 2, 1}, {3, 5, 4}, {2, 0, 3}, {0, 3, 2}, {64, 9, 33}}) {
    for (bool peephole : {false, true}) {
      for (float clip : {-1.0f, 3.0f, 0.25f}) {
        for (float forget_bias : {1.0f, 0.5f}) {
          for (int threads : {1, 3}) {
            INFO("batch " << batch << " input " << input << " cell " << cell << " peephole "
                          << peephole << " clip " << clip << " forget_bias " << forget_bias);
            const LstmInputs in = RandomLstm(batch, input, cell, seed += 10);
            const std::vector<Tensor> out =
                Run("LSTMBlockCell", in.All(), LstmAttrs(forget_bias, clip, peephole), threads);
            const std::vector<Tensor> expected = NaiveLstm(in, forget_bias, clip, peephole);
            REQUIRE(out.size() == 7);
            for (int k = 0; k < 7; ++k)
              CHECK(CompareTensors(out[static_cast<size_t>(k)], expected[static_cast<size_t>(k)],
                                   1e-5, 1e-5) == "");
            if (clip > 0 && clip < 1 && batch > 0) {
              // The clip bounds cs.
              for (float v : out[1].flat<float>()) CHECK(std::fabs(v) <= clip);
            }
          }
        }
      }
    }
  }
}

// sum(a .* g) in double.
double Dot(const Tensor& a, const Tensor& g) {
  double sum = 0;
  for (int64_t i = 0; i < a.num_elements(); ++i)
    sum += static_cast<double>(a.data<float>()[i]) * g.data<float>()[i];
  return sum;
}

// Central differences of loss(inputs) for every element of inputs[k], step eps.
std::vector<double> NumericGradient(std::vector<Tensor> inputs, size_t k, double eps,
                                    const std::function<double(const std::vector<Tensor>&)>& loss) {
  std::vector<double> grad(static_cast<size_t>(inputs[k].num_elements()));
  inputs[k] = inputs[k].DeepCopy();
  for (int64_t i = 0; i < inputs[k].num_elements(); ++i) {
    float& v = inputs[k].data<float>()[i];
    const float saved = v;
    v = static_cast<float>(saved + eps);
    const double plus = loss(inputs);
    v = static_cast<float>(saved - eps);
    const double minus = loss(inputs);
    v = saved;
    grad[static_cast<size_t>(i)] = (plus - minus) / (2 * eps);
  }
  return grad;
}

void CheckGradient(const std::vector<double>& numeric, const std::vector<double>& analytic,
                   const char* what) {
  REQUIRE(numeric.size() == analytic.size());
  for (size_t i = 0; i < numeric.size(); ++i) {
    INFO(what << "[" << i << "]: finite differences " << numeric[i] << ", kernel " << analytic[i]);
    CHECK(std::fabs(numeric[i] - analytic[i]) <= 2e-3 + 2e-2 * std::fabs(analytic[i]));
  }
}

std::vector<double> ToDoubles(const Tensor& t) {
  return std::vector<double>(t.data<float>(), t.data<float>() + t.num_elements());
}

// rows x cols = a^T [k, rows] * b [k, cols] (a: [k, rows] float, b: [k, cols] float).
std::vector<double> TransposeTimes(const Tensor& a, const Tensor& b) {
  const int64_t k = a.dim(0), rows = a.dim(1), cols = b.dim(1);
  std::vector<double> out(static_cast<size_t>(rows * cols), 0.0);
  for (int64_t i = 0; i < rows; ++i) {
    for (int64_t j = 0; j < cols; ++j) {
      for (int64_t t = 0; t < k; ++t)
        out[static_cast<size_t>(i * cols + j)] += At(a, t, i, rows) * At(b, t, j, cols);
    }
  }
  return out;
}
// [m, n] = a [m, k] * b[rows, k]^T restricted to rows [row0, row0 + n) of b.
std::vector<double> TimesTranspose(const Tensor& a, const Tensor& b, int64_t row0, int64_t n) {
  const int64_t m = a.dim(0), k = a.dim(1);
  std::vector<double> out(static_cast<size_t>(m * n), 0.0);
  for (int64_t i = 0; i < m; ++i) {
    for (int64_t j = 0; j < n; ++j) {
      for (int64_t t = 0; t < k; ++t)
        out[static_cast<size_t>(i * n + j)] += At(a, i, t, k) * At(b, row0 + j, t, k);
    }
  }
  return out;
}
std::vector<double> ColumnSums(const Tensor& t) {
  std::vector<double> sums(static_cast<size_t>(t.dim(1)), 0.0);
  for (int64_t r = 0; r < t.dim(0); ++r) {
    for (int64_t j = 0; j < t.dim(1); ++j) sums[static_cast<size_t>(j)] += At(t, r, j, t.dim(1));
  }
  return sums;
}
// [a, b] side by side along dimension 1.
Tensor SideBySide(const Tensor& a, const Tensor& b) {
  const int64_t m = a.dim(0), na = a.dim(1), nb = b.dim(1);
  Tensor out(DT_FLOAT, TensorShape({m, na + nb}));
  for (int64_t r = 0; r < m; ++r) {
    for (int64_t j = 0; j < na; ++j)
      out.data<float>()[r * (na + nb) + j] = a.data<float>()[r * na + j];
    for (int64_t j = 0; j < nb; ++j)
      out.data<float>()[r * (na + nb) + na + j] = b.data<float>()[r * nb + j];
  }
  return out;
}

TEST_CASE("LSTMBlockCellGrad is the gradient of <cs, cs_grad> + <h, h_grad> (finite differences)") {
  uint64_t seed = 500;
  for (const auto& [batch, input, cell] :
       std::vector<std::tuple<int64_t, int64_t, int64_t>>{{1, 2, 2}, {3, 2, 3}}) {
    for (bool peephole : {false, true}) {
      INFO("batch " << batch << " input " << input << " cell " << cell << " peephole " << peephole);
      const LstmInputs in = RandomLstm(batch, input, cell, seed += 10);
      const Tensor cs_grad = RandomTensor(DT_FLOAT, TensorShape({batch, cell}), seed + 8);
      const Tensor h_grad = RandomTensor(DT_FLOAT, TensorShape({batch, cell}), seed + 9);
      // No clip: TF's gradient is the unclipped cell's.
      const AttrMap attrs = LstmAttrs(0.7f, -1.0f, peephole);
      const auto loss = [&](const std::vector<Tensor>& inputs) {
        const std::vector<Tensor> out = Run("LSTMBlockCell", inputs, attrs);
        return Dot(out[1], cs_grad) + Dot(out[6], h_grad);
      };
      std::vector<Tensor> grad_inputs = in.All();
      const std::vector<Tensor> fwd = Run("LSTMBlockCell", in.All(), attrs);
      for (int k = 0; k < 6; ++k)
        grad_inputs.push_back(fwd[static_cast<size_t>(k)]);  // i, cs, f, o, ci, co
      grad_inputs.push_back(cs_grad);
      grad_inputs.push_back(h_grad);
      const std::vector<Tensor> grads =
          Run("LSTMBlockCellGrad", grad_inputs,
              {{"T", TypeAttr(DT_FLOAT)}, {"use_peephole", BoolAttr(peephole)}});
      REQUIRE(grads.size() == 5);
      const Tensor& dicfo = grads[1];
      const double eps = 4e-3;
      CheckGradient(NumericGradient(in.All(), 1, eps, loss), ToDoubles(grads[0]), "cs_prev");
      // TF's python gradient: b by column sums, x and h_prev by dicfo * w^T, w by xh^T dicfo.
      CheckGradient(NumericGradient(in.All(), 7, eps, loss), ColumnSums(dicfo), "b");
      CheckGradient(NumericGradient(in.All(), 0, eps, loss), TimesTranspose(dicfo, in.w, 0, input),
                    "x");
      CheckGradient(NumericGradient(in.All(), 2, eps, loss),
                    TimesTranspose(dicfo, in.w, input, cell), "h_prev");
      CheckGradient(NumericGradient(in.All(), 3, eps, loss),
                    TransposeTimes(SideBySide(in.x, in.h_prev), dicfo), "w");
      const char* names[] = {"wci", "wcf", "wco"};
      for (int k = 0; k < 3; ++k) {
        if (peephole) {
          CheckGradient(NumericGradient(in.All(), static_cast<size_t>(4 + k), eps, loss),
                        ToDoubles(grads[static_cast<size_t>(2 + k)]), names[k]);
        } else {
          CHECK(CompareTensors(grads[static_cast<size_t>(2 + k)],
                               F32(std::vector<float>(static_cast<size_t>(cell), 0.0f), {cell}), 0,
                               0) == "");
        }
      }
    }
  }
}

TEST_CASE("LSTMBlockCell(Grad): shape errors name the input and the expected shape") {
  const LstmInputs in = RandomLstm(2, 3, 4, 1);
  std::vector<Tensor> bad = in.All();
  bad[3] = RandomTensor(DT_FLOAT, TensorShape({7, 12}), 2);
  CHECK(ErrorOf("LSTMBlockCell", bad, LstmAttrs(1, -1, false)) ==
        "node 'op' (LSTMBlockCell): input 3 (w) must have shape [7,16] (input_size + cell_size, 4 "
        "* cell_size), got [7,12]");
  bad = in.All();
  bad[2] = RandomTensor(DT_FLOAT, TensorShape({3, 4}), 2);
  CHECK(ErrorOf("LSTMBlockCell", bad, LstmAttrs(1, -1, false)) ==
        "node 'op' (LSTMBlockCell): input 2 (h_prev) must have shape [2,4] (batch_size, "
        "cell_size), got [3,4]");
  bad = in.All();
  bad[4] = RandomTensor(DT_FLOAT, TensorShape({3}), 2);
  CHECK(ErrorOf("LSTMBlockCell", bad, LstmAttrs(1, -1, true)) ==
        "node 'op' (LSTMBlockCell): input 4 (wci) must have shape [4] (cell_size), got [3]");
  CHECK(Run("LSTMBlockCell", bad, LstmAttrs(1, -1, false)).size() ==
        7);  // unread without peepholes
  bad = in.All();
  bad[0] = RandomTensor(DT_FLOAT, TensorShape({2, 3, 1}), 2);
  CHECK(ErrorOf("LSTMBlockCell", bad, LstmAttrs(1, -1, false)) ==
        "node 'op' (LSTMBlockCell): input 0 (x) must have rank 2, got shape [2,3,1]");
  std::vector<Tensor> grad_inputs = in.All();
  for (int k = 0; k < 8; ++k) grad_inputs.push_back(RandomTensor(DT_FLOAT, TensorShape({2, 4}), 3));
  grad_inputs[15] = RandomTensor(DT_FLOAT, TensorShape({2, 5}), 3);
  CHECK(ErrorOf("LSTMBlockCellGrad", grad_inputs,
                {{"T", TypeAttr(DT_FLOAT)}, {"use_peephole", BoolAttr(false)}}) ==
        "node 'op' (LSTMBlockCellGrad): input 15 (h_grad) must have shape [2,4] (batch_size, "
        "cell_size), got [2,5]");
}

// ---- GRU ----

struct GruInputs {
  int64_t batch, input, cell;
  Tensor x, h_prev, w_ru, w_c, b_ru, b_c;
  std::vector<Tensor> All() const { return {x, h_prev, w_ru, w_c, b_ru, b_c}; }
};

GruInputs RandomGru(int64_t batch, int64_t input, int64_t cell, uint64_t seed) {
  GruInputs in{batch, input, cell};
  in.x = RandomTensor(DT_FLOAT, TensorShape({batch, input}), seed);
  in.h_prev = RandomTensor(DT_FLOAT, TensorShape({batch, cell}), seed + 1);
  in.w_ru = RandomTensor(DT_FLOAT, TensorShape({input + cell, 2 * cell}), seed + 2);
  in.w_c = RandomTensor(DT_FLOAT, TensorShape({input + cell, cell}), seed + 3);
  in.b_ru = RandomTensor(DT_FLOAT, TensorShape({2 * cell}), seed + 4);
  in.b_c = RandomTensor(DT_FLOAT, TensorShape({cell}), seed + 5);
  return in;
}

// r, u, c, h by TF's formulas, in double.
std::vector<Tensor> NaiveGru(const GruInputs& in) {
  const int64_t n = in.cell, n_in = in.input;
  std::vector<Tensor> out;
  for (int k = 0; k < 4; ++k) out.emplace_back(DT_FLOAT, TensorShape({in.batch, n}));
  for (int64_t r = 0; r < in.batch; ++r) {
    std::vector<double> rr(static_cast<size_t>(n)), uu(static_cast<size_t>(n));
    for (int64_t j = 0; j < n; ++j) {
      double r_bar = in.b_ru.data<float>()[j], u_bar = in.b_ru.data<float>()[n + j];
      for (int64_t k = 0; k < n_in; ++k) {
        r_bar += At(in.x, r, k, n_in) * At(in.w_ru, k, j, 2 * n);
        u_bar += At(in.x, r, k, n_in) * At(in.w_ru, k, n + j, 2 * n);
      }
      for (int64_t k = 0; k < n; ++k) {
        r_bar += At(in.h_prev, r, k, n) * At(in.w_ru, n_in + k, j, 2 * n);
        u_bar += At(in.h_prev, r, k, n) * At(in.w_ru, n_in + k, n + j, 2 * n);
      }
      rr[static_cast<size_t>(j)] = Sig(r_bar);
      uu[static_cast<size_t>(j)] = Sig(u_bar);
    }
    for (int64_t j = 0; j < n; ++j) {
      double c_bar = in.b_c.data<float>()[j];
      for (int64_t k = 0; k < n_in; ++k) c_bar += At(in.x, r, k, n_in) * At(in.w_c, k, j, n);
      for (int64_t k = 0; k < n; ++k)
        c_bar += At(in.h_prev, r, k, n) * rr[static_cast<size_t>(k)] * At(in.w_c, n_in + k, j, n);
      const double c = std::tanh(c_bar);
      const double u = uu[static_cast<size_t>(j)];
      const double values[4] = {rr[static_cast<size_t>(j)], u, c,
                                u * At(in.h_prev, r, j, n) + (1 - u) * c};
      for (int k = 0; k < 4; ++k)
        out[static_cast<size_t>(k)].data<float>()[r * n + j] = static_cast<float>(values[k]);
    }
  }
  return out;
}

TEST_CASE("GRUBlockCell matches TF's formulas (several shapes, empty batch, threads)") {
  uint64_t seed = 900;
  for (const auto& [batch, input, cell] : std::vector<std::tuple<int64_t, int64_t, int64_t>>{
           {1, 2, 1}, {3, 5, 4}, {2, 0, 3}, {0, 3, 2}, {50, 7, 21}}) {
    for (int threads : {1, 3}) {
      INFO("batch " << batch << " input " << input << " cell " << cell);
      const GruInputs in = RandomGru(batch, input, cell, seed += 10);
      const std::vector<Tensor> out =
          Run("GRUBlockCell", in.All(), {{"T", TypeAttr(DT_FLOAT)}}, threads);
      const std::vector<Tensor> expected = NaiveGru(in);
      REQUIRE(out.size() == 4);
      for (int k = 0; k < 4; ++k)
        CHECK(CompareTensors(out[static_cast<size_t>(k)], expected[static_cast<size_t>(k)], 1e-5,
                             1e-5) == "");
    }
  }
}

TEST_CASE("GRUBlockCellGrad is the gradient of <h, d_h> (finite differences)") {
  uint64_t seed = 1300;
  for (const auto& [batch, input, cell] :
       std::vector<std::tuple<int64_t, int64_t, int64_t>>{{1, 2, 2}, {3, 3, 2}}) {
    INFO("batch " << batch << " input " << input << " cell " << cell);
    const GruInputs in = RandomGru(batch, input, cell, seed += 10);
    const Tensor d_h = RandomTensor(DT_FLOAT, TensorShape({batch, cell}), seed + 7);
    const AttrMap attrs = {{"T", TypeAttr(DT_FLOAT)}};
    const auto loss = [&](const std::vector<Tensor>& inputs) {
      return Dot(Run("GRUBlockCell", inputs, attrs)[3], d_h);
    };
    const std::vector<Tensor> fwd = Run("GRUBlockCell", in.All(), attrs);
    std::vector<Tensor> grad_inputs = in.All();
    for (int k = 0; k < 3; ++k) grad_inputs.push_back(fwd[static_cast<size_t>(k)]);  // r, u, c
    grad_inputs.push_back(d_h);
    const std::vector<Tensor> grads = Run("GRUBlockCellGrad", grad_inputs, attrs);
    REQUIRE(grads.size() == 4);
    const double eps = 4e-3;
    CheckGradient(NumericGradient(in.All(), 0, eps, loss), ToDoubles(grads[0]), "x");
    CheckGradient(NumericGradient(in.All(), 1, eps, loss), ToDoubles(grads[1]), "h_prev");
    // TF's python gradient: biases by column sums, weights by [x, h_prev] and [x, h_prev r].
    CheckGradient(NumericGradient(in.All(), 5, eps, loss), ColumnSums(grads[2]), "b_c");
    CheckGradient(NumericGradient(in.All(), 4, eps, loss), ColumnSums(grads[3]), "b_ru");
    CheckGradient(NumericGradient(in.All(), 2, eps, loss),
                  TransposeTimes(SideBySide(in.x, in.h_prev), grads[3]), "w_ru");
    Tensor h_prevr(DT_FLOAT, in.h_prev.shape());
    for (int64_t i = 0; i < h_prevr.num_elements(); ++i)
      h_prevr.data<float>()[i] = in.h_prev.data<float>()[i] * fwd[0].data<float>()[i];
    CheckGradient(NumericGradient(in.All(), 3, eps, loss),
                  TransposeTimes(SideBySide(in.x, h_prevr), grads[2]), "w_c");
  }
}

TEST_CASE("GRUBlockCell(Grad): shape errors name the input and the expected shape") {
  const GruInputs in = RandomGru(2, 3, 4, 1);
  std::vector<Tensor> bad = in.All();
  bad[3] = RandomTensor(DT_FLOAT, TensorShape({7, 8}), 2);
  CHECK(ErrorOf("GRUBlockCell", bad, {{"T", TypeAttr(DT_FLOAT)}}) ==
        "node 'op' (GRUBlockCell): input 3 (w_c) must have shape [7,4] (input_size + cell_size, "
        "cell_size), got [7,8]");
  bad = in.All();
  bad[4] = RandomTensor(DT_FLOAT, TensorShape({4}), 2);
  CHECK(ErrorOf("GRUBlockCell", bad, {{"T", TypeAttr(DT_FLOAT)}}) ==
        "node 'op' (GRUBlockCell): input 4 (b_ru) must have shape [8] (2 * cell_size), got [4]");
  std::vector<Tensor> grad_inputs = in.All();
  for (int k = 0; k < 4; ++k) grad_inputs.push_back(RandomTensor(DT_FLOAT, TensorShape({2, 4}), 3));
  grad_inputs[7] = RandomTensor(DT_FLOAT, TensorShape({2, 3}), 3);
  CHECK(ErrorOf("GRUBlockCellGrad", grad_inputs, {{"T", TypeAttr(DT_FLOAT)}}) ==
        "node 'op' (GRUBlockCellGrad): input 7 (u) must have shape [2,4] (batch_size, cell_size), "
        "got [2,3]");
}

}  // namespace
}  // namespace parallax
