// Runs the emulated kernel over its whole grid, one block at a time, with the host side's parameter setup.
// Appended after prelude.h and the kernel section of kernel.cu by tests/fa_task/test_emulation.py.

template <int D, int kBlockN>
void run_grid(const AttentionParams& p, int batch) {
    const size_t smem = size_t(kBlockM + 4 * kBlockN) * (D + 8) * sizeof(uint16_t);
    std::vector<unsigned char> buffer(smem);
    g_smem = buffer.data();
    gridDim = {unsigned((p.seqlen_q + kBlockM - 1) / kBlockM), unsigned(p.heads_q), unsigned(batch)};
    Barrier block(kThreads);
    Barrier w0(32), w1(32), w2(32), w3(32);
    g_block_barrier = &block;
    g_warp_barrier[0] = &w0;
    g_warp_barrier[1] = &w1;
    g_warp_barrier[2] = &w2;
    g_warp_barrier[3] = &w3;
    std::vector<std::thread> threads;
    for (int tid = 0; tid < kThreads; ++tid) {
        threads.emplace_back([&, tid] {
            threadIdx = {unsigned(tid), 0, 0};
            for (unsigned z = 0; z < gridDim.z; ++z)
                for (unsigned y = 0; y < gridDim.y; ++y)
                    for (unsigned x = 0; x < gridDim.x; ++x) {
                        blockIdx = {x, y, z};
                        if (tid == 0) memset(g_smem, 0xff, smem);  // every bf16 in shared memory is a NaN
                        block.arrive_and_wait();
                        attention_forward_kernel<D, kBlockN>(p);
                        block.arrive_and_wait();
                    }
        });
    }
    for (std::thread& t : threads) t.join();
}

// Same arguments as attention_forward, minus workspace and stream, plus the two alignment paths to force.
extern "C" int emulated_attention_forward(const void* q, const void* k, const void* v, void* o, float* lse,
                                          int batch, int seqlen_q, int seqlen_k, int heads_q, int heads_kv,
                                          int head_dim, float softmax_scale, int causal, int use_cp_async,
                                          int output_4b_aligned) {
    AttentionParams p =
        make_attention_params(q, k, v, o, lse, seqlen_q, seqlen_k, heads_q, heads_kv, softmax_scale, causal);
    p.inputs_16b_aligned = p.inputs_16b_aligned && use_cp_async;  // force the fallback paths on request
    p.output_4b_aligned = p.output_4b_aligned && output_4b_aligned;
    switch (head_dim) {  // the tile shapes of the host dispatch in kernel.cu
        case 64: run_grid<64, 64>(p, batch); return 0;
        case 128: run_grid<128, 64>(p, batch); return 0;
        case 256: run_grid<256, 32>(p, batch); return 0;
        default: return 3;
    }
}
