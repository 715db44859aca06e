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
    # 1-2
    "The dot product: a·b = sum_i a_i b_i = |a| |b| cos θ": "点积：a·b = sum_i a_i b_i = |a| |b| cos θ",
    "Norms via the self dot product: |a| = sqrt(a·a)": "用向量与自身的点积求长度：|a| = sqrt(a·a)",
    "a·a = 30 = |a|², so |a| = sqrt(30) = 5.4772": "a·a = 30 = |a|²，所以 |a| = sqrt(30) = 5.4772",
    "|a - b|² = a·a + b·b - 2 a·b = 30 + 14 - 34 = 10, so |a - b| = 3.1623":
        "|a - b|² = a·a + b·b - 2 a·b = 30 + 14 - 34 = 10，所以 |a - b| = 3.1623",
    # 3
    "Why divide by sqrt(d_k): Var(q·k) = d_k for unit-variance entries":
        "为什么除以 sqrt(d_k)：各分量方差为 1 时，Var(q·k) = d_k",
    "d_k    Var(q·k)  Var(q·k / sqrt(d_k))   (10000 random pairs each)":
        "d_k    Var(q·k)  Var(q·k / sqrt(d_k))   （每行 10000 对随机向量）",
    "unscaled scores' variance grows like d_k (their spread like sqrt(d_k)); dividing by sqrt(d_k) brings the "
    "variance back to 1":
        "未缩放分数的方差随 d_k 增长（其离散程度随 sqrt(d_k) 增长）；除以 sqrt(d_k) 后方差回到 1",
    # 4
    "Softmax saturates: [1, 2, 3] vs [10, 20, 30], and why we subtract the max":
        "Softmax 会饱和：[1, 2, 3] 对比 [10, 20, 30]，以及为什么要减去最大值",
    "softmax([1, 2, 3])    = {w}": "softmax([1, 2, 3])    = {w}",
    "softmax([10, 20, 30]) = {w}   <- nearly one-hot: tiny gradients": "softmax([10, 20, 30]) = {w}   <- 几乎是 one-hot：梯度极小",
    "naive  exp(x)/sum exp(x) on [1000, 0] = {w}   (exp(1000) = inf, inf/inf = nan)":
        "朴素的 exp(x)/sum exp(x) 作用于 [1000, 0] = {w}   （exp(1000) = inf，inf/inf = nan）",
    "stable, shifted by the max first      = {w}": "稳定版本，先减去最大值              = {w}",
    # 5
    "Attention on three tokens: 猫吃鱼, 'the cat eats fish'": "三个 Token 上的注意力：猫吃鱼",
    "Q = X W_Q, K = X W_K, V = X W_V;  weights = softmax(Q Kᵀ / sqrt(d_k)), each row sums to 1":
        "Q = X W_Q，K = X W_K，V = X W_V；weights = softmax(Q Kᵀ / sqrt(d_k))，每行之和为 1",
    "猫 cat{a}吃 eats{b}鱼 fish": "    猫{a}     吃{b}     鱼",
    "猫 cat{row}": "猫    {row}",
    "吃 eats{row}": "吃     {row}",
    "鱼 fish{row}": "鱼     {row}",
    "(untrained random W_Q, W_K, W_V: the pattern means nothing yet; the loop agrees to 1e-12)":
        "（W_Q、W_K、W_V 是未经训练的随机矩阵：这个模式还没有任何含义；与循环实现的差异在 1e-12 以内）",
    # 6
    "A causal mask: no peeking at the future, and why blocked scores are -inf, not 0":
        "因果掩码：不许偷看未来，以及为什么被屏蔽的分数填 -inf 而不是 0",
    "causal_mask(4), 1 = may attend:": "causal_mask(4)，1 = 可以关注：",
    "scores of query 1: {s}, keys 2 and 3 are in its future": "查询 1 的分数：{s}，键 2 和 3 在它的未来",
    "fill with -inf: weights {w}   (future gets exactly 0)": "填 -inf：权重 {w}   （未来恰好得到 0）",
    "fill with 0:    weights {w}   (future leaks in)": "填 0：   权重 {w}   （未来的信息泄漏进来）",
    # 7
    "Multi-head attention: h heads of d_k = d_model / h, decoding with a KV cache":
        "多头注意力：h 个头，每个 d_k = d_model / h；用键值缓存解码",
    "d_model = 16, 4 heads of d_k = 4: w_q (16, 16), w_o (16, 16)": "d_model = 16，4 个 d_k = 4 的头：w_q (16, 16)，w_o (16, 16)",
    "decoding 6 tokens one at a time with a KV cache = the full causal pass (max gap 4.4e-16)":
        "借助键值缓存逐个解码 6 个 Token = 一次完整的因果前向计算（最大差距 4.4e-16）",
    # 8
    "FlashAttention: tiles and an online softmax, never the (T, S) matrix":
        "FlashAttention：分块加在线 Softmax，从不构造 (T, S) 矩阵",
    "running max m, running sum l, rescaled accumulator: m' = max(m, max s), l' = l e^(m - m') + sum e^(s - m')":
        "运行最大值 m、运行和 l、重新缩放的累加器：m' = max(m, max s)，l' = l e^(m - m') + sum e^(s - m')",
    "T = S = 40, causal, block sizes 1, 7, 16, 64: max |flash - plain| = 4.4e-16":
        "T = S = 40，因果，块大小 1、7、16、64：max |flash - plain| = 4.4e-16",
    # 9
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
    # 10
    "Beyond attention: retrieval, InfoNCE and a recommender, all dot products":
        "注意力之外：检索、InfoNCE 和推荐系统，全都是点积",
    "retrieval: 'why divide attention scores' -> doc 0 (cosine 0.316)":
        "检索：'why divide attention scores' -> 文档 0（余弦相似度 0.316）",
    "InfoNCE: tau -> inf gives log 8 = 2.0794; dL/dq[0,0] = {g} (finite difference {fd})":
        "InfoNCE：tau -> inf 时得到 log 8 = 2.0794；dL/dq[0,0] = {g}（有限差分 {fd}）",
    "matrix factorisation: RMSE on unseen ratings 0.350 vs 0.972 for the mean":
        "矩阵分解：未见过的评分上 RMSE 为 0.350，而用均值预测为 0.972",
    # 11
    "Attention that learns: a tiny Transformer, every gradient written by hand, learns to copy":
        "会学习的注意力：一个很小的 Transformer，每个梯度都是手写的，学会了复制",
    "250 Adam steps, loss 2.38 -> 0.85; the generated copies are 100% right":
        "250 步 Adam，损失 2.38 -> 0.85；生成的复制结果 100% 正确",
})
