"""The tour in Chinese: every English line the tour prints -> 中文 (``python -m attention_from_scratch --lang zh``).

Keys are the lines as the tour prints them (leading spaces aside); numbers are placeholders (see
``i18n.Catalog``), so the Chinese shows the numbers the tour computed and checked. tests/test_translations.py
runs the tour in Chinese and fails on an untranslated line or an entry no line uses.
"""

from __future__ import annotations

from .i18n import Catalog

__all__ = ["TOUR_ZH"]

TOUR_ZH = Catalog({
    "attention_from_scratch tour -- backend: {backend}": "attention_from_scratch 导览 —— 后端：{backend}",
    "All checks passed.": "所有检查均已通过。",
    # the dot product, norms
    "The dot product: a·b = sum_i a_i b_i = |a| |b| cos θ": "点积：a·b = sum_i a_i b_i = |a| |b| cos θ",
    "Norms via the self dot product: |a| = sqrt(a·a)": "用向量与自身的点积求长度：|a| = sqrt(a·a)",
    "a·a = 30 = |a|², so |a| = sqrt(30) = 5.4772": "a·a = 30 = |a|²，所以 |a| = sqrt(30) = 5.4772",
    "|a - b|² = a·a + b·b - 2 a·b = 30 + 14 - 34 = 10, so |a - b| = 3.1623":
        "|a - b|² = a·a + b·b - 2 a·b = 30 + 14 - 34 = 10，所以 |a - b| = 3.1623",
    # dividing by sqrt(d_k)
    "Why divide by sqrt(d_k): Var(q·k) = d_k for unit-variance entries":
        "为什么除以 sqrt(d_k)：各分量方差为 1 时，Var(q·k) = d_k",
    "d_k    Var(q·k)  Var(q·k / sqrt(d_k))   (10000 random pairs each)":
        "d_k    Var(q·k)  Var(q·k / sqrt(d_k))   （每行 10000 对随机向量）",
    "unscaled scores' variance grows like d_k (their spread like sqrt(d_k)); dividing by sqrt(d_k) brings the "
    "variance back to 1":
        "未缩放分数的方差随 d_k 增长（其离散程度随 sqrt(d_k) 增长）；除以 sqrt(d_k) 后方差回到 1",
    # softmax
    "Softmax saturates: [1, 2, 3] vs [10, 20, 30], and why we subtract the max":
        "Softmax 会饱和：[1, 2, 3] 对比 [10, 20, 30]，以及为什么要减去最大值",
    "softmax([1, 2, 3])    = {w}": "softmax([1, 2, 3])    = {w}",
    "softmax([10, 20, 30]) = {w}   <- nearly one-hot: tiny gradients": "softmax([10, 20, 30]) = {w}   <- 几乎是 one-hot：梯度极小",
    "naive  exp(x)/sum exp(x) on [1000, 0] = {w}   (exp(1000) = inf, inf/inf = nan)":
        "朴素的 exp(x)/sum exp(x) 作用于 [1000, 0] = {w}   （exp(1000) = inf，inf/inf = nan）",
    "stable, shifted by the max first      = {w}": "稳定版本，先减去最大值              = {w}",
    # from averaging to attention
    "From averaging to attention: equal scores under a causal mask average the past":
        "从平均到注意力：在因果掩码下，相等的分数就是对过去取平均",
    "position i averages tokens 0..i: w[i, j] = 1/(i + 1) for j <= i, 0 above the diagonal":
        "位置 i 对 Token 0..i 取平均：j <= i 时 w[i, j] = 1/(i + 1)，对角线以上为 0",
    "= softmax of all-zero scores with the causal mask (-inf above the diagonal), to 1e-15;":
        "= 全零分数加上因果掩码（对角线以上为 -inf）后的 Softmax，误差在 1e-15 以内；",
    "attention keeps the softmax and lets the scores q·k / sqrt(d_k) depend on the tokens":
        "注意力保留这个 Softmax，并让分数 q·k / sqrt(d_k) 随 Token 而变",
    # three tokens
    "Attention on three tokens: 猫吃鱼, 'the cat eats fish'": "三个 Token 上的注意力：猫吃鱼",
    "Q = X W_Q, K = X W_K, V = X W_V;  weights = softmax(Q Kᵀ / sqrt(d_k)), each row sums to 1":
        "Q = X W_Q，K = X W_K，V = X W_V；weights = softmax(Q Kᵀ / sqrt(d_k))，每行之和为 1",
    "猫 cat{a}吃 eats{b}鱼 fish": "    猫{a}     吃{b}     鱼",
    "猫 cat{row}": "猫    {row}",
    "吃 eats{row}": "吃     {row}",
    "鱼 fish{row}": "鱼     {row}",
    "(untrained random W_Q, W_K, W_V: the pattern means nothing yet; the loop agrees to 1e-12)":
        "（W_Q、W_K、W_V 是未经训练的随机矩阵：这个模式还没有任何含义；与循环实现的差异在 1e-12 以内）",
    # the causal mask
    "A causal mask: no peeking at the future, and why blocked scores are -inf, not 0":
        "因果掩码：不许偷看未来，以及为什么被屏蔽的分数填 -inf 而不是 0",
    "causal_mask(4), 1 = may attend:": "causal_mask(4)，1 = 可以关注：",
    "scores of query 1: {s}, keys 2 and 3 are in its future": "查询 1 的分数：{s}，键 2 和 3 在它的未来",
    "fill with -inf: weights {w}   (future gets exactly 0)": "填 -inf：权重 {w}   （未来恰好得到 0）",
    "fill with 0:    weights {w}   (future leaks in)": "填 0：   权重 {w}   （未来的信息泄漏进来）",
    # multi-head attention
    "Multi-head attention: h heads of d_k = d_model / h, decoding with a KV cache":
        "多头注意力：h 个头，每个 d_k = d_model / h；用键值缓存解码",
    "d_model = 16, 4 heads of d_k = 4: w_q (16, 16), w_o (16, 16)": "d_model = 16，4 个 d_k = 4 的头：w_q (16, 16)，w_o (16, 16)",
    "decoding 6 tokens one at a time with a KV cache = the full causal pass (max gap 4.4e-16)":
        "借助键值缓存逐个解码 6 个 Token = 一次完整的因果前向计算（最大差距 4.4e-16）",
    # FlashAttention
    "FlashAttention: tiles and an online softmax, never the (T, S) matrix":
        "FlashAttention：分块加在线 Softmax，从不构造 (T, S) 矩阵",
    "running max m, running sum l, rescaled accumulator: m' = max(m, max s), l' = l e^(m - m') + sum e^(s - m')":
        "运行最大值 m、运行和 l、重新缩放的累加器：m' = max(m, max s)，l' = l e^(m - m') + sum e^(s - m')",
    "T = S = 40, causal, block sizes 1, 7, 16, 64: max |flash - plain| = 4.4e-16":
        "T = S = 40，因果，块大小 1、7、16、64：max |flash - plain| = 4.4e-16",
    # RoPE
    "RoPE: rotate pairs by m·θ_i, and q·k then depends only on the distance m - n":
        "RoPE：把第 i 对分量旋转 m·θ_i 角，q·k 便只取决于位置之差 m - n",
    "q at 5, k at 2: q·k = {a};  q at 105, k at 102: q·k = {b}   (distance 3 both times)":
        "q 在位置 5、k 在位置 2：q·k = {a}；q 在 105、k 在 102：q·k = {b}   （两次距离都是 3）",
    "Re sum_i z_q conj(z_k) e^(3iθ_i) = {a}; q at 5, k at 3: q·k = {b}":
        "Re sum_i z_q conj(z_k) e^(3iθ_i) = {a}；q 在 5、k 在 3：q·k = {b}",
    "rotations keep lengths: |RoPE(q)| = |q| (to 1e-12)": "旋转不改变长度：|RoPE(q)| = |q|（误差在 1e-12 以内）",
    # KV cache: MHA vs MLA
    "KV cache: MHA vs MLA": "键值缓存：MHA 对比 MLA",
    "MLA caches 512 + 64 = 576 values/token/layer -> 70,272 bytes/token over 61 layers (BF16)":
        "MLA 每个 Token 每层缓存 512 + 64 = 576 个数值 -> 61 层共 70,272 字节/Token（BF16）",
    "MHA, same heads: 128 x (192 + 128) = 40,960 -> 4.77 MiB/token, 71.1x more":
        "头数相同的 MHA：128 x (192 + 128) = 40,960 -> 4.77 MiB/Token，多 71.1 倍",
    "the articles: 2 x 7168 x 61 = 874,496 values/token, 512/16384 = 3.1% (true ratio 576/40960 = 1.41%)":
        "文章的算法：2 x 7168 x 61 = 874,496 个数值/Token，512/16384 = 3.1%（真实比例 576/40960 = 1.41%）",
    "small layer: |naive - absorbed| = 7.8e-16; cache of 10 tokens = 1600 bytes = 10 x (16 + 4) x 8; softmax scale "
    "of DeepSeek-V3 = 0.135234":
        "小规模的层：|naive - absorbed| = 7.8e-16；10 个 Token 的缓存 = 1600 字节 = 10 x (16 + 4) x 8；"
        "DeepSeek-V3 的 Softmax 缩放系数 = 0.135234",
    # sparse attention
    "DeepSeek-V3.2's sparse attention: an indexer keeps each query's top-k keys":
        "DeepSeek-V3.2 的稀疏注意力：索引器为每个查询保留得分最高的 k 个键",
    "I(t, s) = sum_h w_t,h ReLU(q_t,h · k_s / sqrt(d_I)); top-3 keys per query (1 = attend):":
        "I(t, s) = sum_h w_t,h ReLU(q_t,h · k_s / sqrt(d_I))；每个查询保留得分最高的 3 个键（1 = 关注）：",
    "cache: 576 x 2 (the 512 + 64 latent row, BF16) + 128 (FP8 indexer key) + 4 (its FP32 scale) = 1,284 "
    "bytes/token/layer, 11.5% more than V3":
        "缓存：576 x 2（512 维潜在向量加 64 维 RoPE 键的一行，BF16）+ 128（FP8 索引器键）+ 4（它的 FP32 缩放因子）= 1,284 字节/Token/层，"
        "比 V3 多 11.5%",
    "fewer multiply-adds than dense MLA from 2,178 cached tokens (top-k = 2048 plus the indexer)":
        "缓存的 Token 数从 2,178 起，乘加次数就少于稠密 MLA（top-k = 2048，再加上索引器的计算）",
    # serving
    "Serving: sliding windows with sinks, split-KV decoding and ring attention":
        "推理服务：带汇点 Token 的滑动窗口、split-KV 解码与环形注意力",
    "window 3 with 1 sink: query {n} sees keys {keys} (the sink, then itself and the 2 before)":
        "窗口 3、1 个汇点 Token：查询 {n} 能看到键 {keys}（汇点 Token，以及它自己和它前面的 2 个键）",
    "2 sequences, one query each, over 1000 keys in 4 splits = plain attention (to 1e-12): (m, l, acc) merged as "
    "in flash":
        "2 个序列、每个一个查询，1000 个键分成 4 个分片 = 普通注意力（误差在 1e-12 以内）：按 FlashAttention 的方式合并 (m, l, acc)",
    "ring attention on 4 simulated devices, causal = plain attention (to 1e-12); 9,216 bytes sent":
        "在 4 台模拟设备上的因果环形注意力 = 普通注意力（误差在 1e-12 以内）；共发送 9,216 字节",
    # applications
    "Beyond attention: retrieval, InfoNCE and a recommender, all dot products":
        "注意力之外：检索、InfoNCE 和推荐系统，全都是点积",
    "retrieval: 'why divide attention scores' -> doc 0 (cosine 0.316)":
        "检索：'why divide attention scores' -> 文档 0（余弦相似度 0.316）",
    "InfoNCE: tau -> inf gives log 8 = 2.0794; dL/dq[0,0] = {g} (finite difference {fd})":
        "InfoNCE：tau -> inf 时得到 log 8 = 2.0794；dL/dq[0,0] = {g}（有限差分 {fd}）",
    "matrix factorisation: RMSE on unseen ratings 0.350 vs 0.972 for the mean":
        "矩阵分解：未见过的评分上 RMSE 为 0.350，而用均值预测为 0.972",
    # backpropagation
    "Backpropagation by hand: attention's gradients against finite differences":
        "手写反向传播：注意力的梯度与有限差分对照",
    "dV = Pᵀ dO, dP = dO Vᵀ, dS = P ⊙ (dP - rowsum(dO ⊙ O)), dQ = dS K / sqrt(d_k), dK = dSᵀ Q / sqrt(d_k)":
        "dV = Pᵀ dO，dP = dO Vᵀ，dS = P ⊙ (dP - rowsum(dO ⊙ O))，dQ = dS K / sqrt(d_k)，dK = dSᵀ Q / sqrt(d_k)",
    "9 entries of dq, dk, dv vs central finite differences: worst relative error below 1e-6 ({err})":
        "dq、dk、dv 的 9 个元素与中心有限差分对照：最大相对误差低于 1e-6（{err}）",
    # training
    "Attention that learns: a tiny Transformer, every gradient written by hand, learns to copy":
        "会学习的注意力：一个很小的 Transformer，每个梯度都是手写的，学会了复制",
    "250 Adam steps, loss 2.38 -> 0.85; the generated copies are 100% right":
        "250 步 Adam，损失 2.38 -> 0.85；生成的复制结果 100% 正确",
})
