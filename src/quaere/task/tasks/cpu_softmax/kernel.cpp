// Row softmax, float32, row-major: y[r, :] = exp(x[r, :] - max_r) / sum(exp(x[r, :] - max_r)).
// The initial kernel of quaere's CPU task: plain, correct, single-threaded, with a double-precision sum.
#include <cmath>

extern "C" int softmax_rows(const float* x, float* y, int rows, int cols) {
    if (x == nullptr || y == nullptr || rows <= 0 || cols <= 0) {
        return 1;  // unsupported arguments: the harness reports it, nothing is written
    }
    for (int r = 0; r < rows; ++r) {
        const float* in = x + static_cast<long>(r) * cols;
        float* out = y + static_cast<long>(r) * cols;
        float row_max = in[0];
        for (int c = 1; c < cols; ++c) {
            row_max = in[c] > row_max ? in[c] : row_max;
        }
        double sum = 0.0;
        for (int c = 0; c < cols; ++c) {
            const float e = std::exp(in[c] - row_max);
            out[c] = e;
            sum += e;
        }
        const float inv = static_cast<float>(1.0 / sum);
        for (int c = 0; c < cols; ++c) {
            out[c] *= inv;
        }
    }
    return 0;
}
