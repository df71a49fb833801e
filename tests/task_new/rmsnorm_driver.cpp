
// Runs the kernel section over `blocks` blocks of kThreads threads, one block at a time.
extern "C" int emulated_rmsnorm(const uint16_t* x, const uint16_t* weight, uint16_t* y, int rows, int cols,
                                float eps, int blocks) {
    gridDim.x = static_cast<unsigned>(blocks);
    for (int block = 0; block < blocks; ++block) {
        std::barrier<> barrier(kThreads);
        block_barrier = &barrier;
        std::vector<std::thread> threads;
        for (int t = 0; t < kThreads; ++t) {
            threads.emplace_back([&, t] {
                threadIdx.x = static_cast<unsigned>(t);
                blockIdx.x = static_cast<unsigned>(block);
                rmsnorm_rows(reinterpret_cast<const __nv_bfloat16*>(x), reinterpret_cast<const __nv_bfloat16*>(weight),
                             reinterpret_cast<__nv_bfloat16*>(y), rows, cols, eps);
            });
        }
        for (auto& thread : threads) thread.join();
    }
    return 0;
}
