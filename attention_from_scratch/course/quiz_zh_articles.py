"""The quiz's article questions in Chinese: Q1-Q10 of the source article (``002_…txt``) -> 中文.

The questions, options, notes and explanations of ``quiz.question_ids("articles")``, as ``quiz_notes_articles.py``
holds their English explanations; ``quiz_zh.py`` adds the quiz's frame and the course's extra questions
and builds the catalog. Question data, so longer than a module.
"""

from __future__ import annotations

__all__ = ["ARTICLE_QUESTIONS_ZH"]

ARTICLE_QUESTIONS_ZH = {
    # --- Q1 ---
    "Q1. In scaled dot-product attention, what does the matrix QKᵀ hold?":
        "Q1. 在缩放点积注意力中，矩阵 QKᵀ 里存的是什么？",
    "A similarity score for every (query, key) pair": "每一对（查询, 键）的相似度分数",
    "Each query concatenated with each value": "每个查询与每个值拼接的结果",
    "Linear combinations of the keys and the values": "键和值的线性组合",
    "Differences of positional encodings": "位置编码之差",
    "QKᵀ holds one score per (query, key) pair: for T = 3 queries and S = 5 keys it is (3, 5), and entry "
    "[1, 2] = 0.0908 is the dot product q_1·k_2 = 0.0908.":
        "QKᵀ 为每一对（查询, 键）存一个分数：T = 3 个查询、S = 5 个键时它的形状是 (3, 5)，"
        "元素 [1, 2] = 0.0908 正是点积 q_1·k_2 = 0.0908。",
    "nothing is concatenated and V does not enter: QKᵀ is (3, 5), one number per (query, key) pair; a query "
    "joined to a value would be 4 + 6 = 10 numbers per pair.":
        "这里没有任何拼接，V 也根本不参与：QKᵀ 是 (3, 5)，每对（查询, 键）一个数；"
        "若把查询和值拼起来，每对会有 4 + 6 = 10 个数。",
    "a combination of values is the output P V, shape (3, 6); QKᵀ has shape (3, 5) and does not involve V at all.":
        "值的组合是输出 P V，形状 (3, 6)；QKᵀ 的形状是 (3, 5)，完全不涉及 V。",
    "no position enters QKᵀ: shuffling the keys only shuffles its columns (largest difference less than 1e-12); "
    "positions must be put into q and k, e.g. by RoPE (notebook 10).":
        "QKᵀ 里没有任何位置信息：打乱键的顺序只会打乱它的列（最大差异小于 1e-12）；"
        "位置必须另外注入 q 和 k，例如用 RoPE（第 10 课）。",
    # --- Q2 ---
    "Q2. What is the main reason for dividing the scores by sqrt(d_k)?":
        "Q2. 把分数除以 sqrt(d_k) 的主要原因是什么？",
    "To keep the variance of softmax's input stable": "让 Softmax 输入的方差保持稳定",
    "To reduce the number of parameters of the matrix product": "减少矩阵乘法的参数量",
    "To turn the key dimension into the value dimension": "把键的维度变成值的维度",
    "To make the attention weights sum to 1": "让注意力权重之和为 1",
    "for d_k = 64 and entries of variance 1, Var(q·k) = d_k: 20,000 sampled pairs give 63.71 unscaled and 0.995 "
    "after dividing by sqrt(64) = 8.":
        "d_k = 64、各分量方差为 1 时，Var(q·k) = d_k：抽样 20,000 对，未缩放时方差为 63.71，"
        "除以 sqrt(64) = 8 之后为 0.995。",
    "1/sqrt(d_k) is a constant, not a parameter: MultiHeadAttention(512, 8) holds 1,048,576 weights "
    "(4 x 512 x 512) with or without it.":
        "1/sqrt(d_k) 是常数，不是参数：无论有没有它，MultiHeadAttention(512, 8) 都有 1,048,576 个权重"
        "（4 x 512 x 512）。",
    "scaling changes no shape: the output is (4, 8) (T, d_v) with scale 1 and with 1/sqrt(16); its last axis "
    "comes from V, whatever d_k is.":
        "缩放不改变任何形状：缩放系数为 1 和为 1/sqrt(16) 时，输出都是 (4, 8)，即 (T, d_v)；"
        "最后一维来自 V，与 d_k 无关。",
    "rows sum to 1 because of softmax, scaled or not: unscaled weights for d_k = 512 deviate from 1 by less "
    "than 1e-12 (rounding).":
        "每行之和为 1 是 Softmax 的作用，与是否缩放无关：d_k = 512 时未缩放的权重，每行之和与 1 的偏差小于 "
        "1e-12（舍入误差）。",
    # --- Q3 ---
    "Q3. d_k is large and the scaling is forgotten: softmax is applied to the raw dot products. What typically "
    "happens?":
        "Q3. d_k 很大却忘了缩放：Softmax 直接作用在原始点积上。通常会发生什么？",
    "The weights get smoother and training speeds up": "权重变得更平滑，训练加快",
    "Softmax's output approaches one-hot and the gradients shrink": "Softmax 的输出趋近 one-hot，梯度变小",
    "The output vectors double in size": "输出向量的长度翻倍",
    "The attention weights sum to more than 1": "注意力权重之和大于 1",
    "the opposite: for d_k = 512 and 16 keys the mean top weight is 0.936 unscaled vs 0.245 scaled -- sharper, "
    "not smoother -- and the softmax Jacobian (the gradient) shrinks from 0.306 to 0.083.":
        "恰恰相反：d_k = 512、16 个键时，最大权重的平均值未缩放为 0.936，缩放后为 0.245——更尖锐，"
        "而不是更平滑；Softmax 的雅可比矩阵（即梯度）从 0.306 缩小到 0.083。",
    "for d_k = 512 and 16 keys the mean top weight is 0.936 unscaled vs 0.245 scaled -- sharper, not smoother -- "
    "and the softmax Jacobian (the gradient) shrinks from 0.306 to 0.083.":
        "d_k = 512、16 个键时，最大权重的平均值未缩放为 0.936，缩放后为 0.245——更尖锐，而不是更平滑；"
        "Softmax 的雅可比矩阵（即梯度）从 0.306 缩小到 0.083。",
    # --- Q4 ---
    "Q4. Which formula is scaled dot-product attention?": "Q4. 哪个公式是缩放点积注意力？",
    "QKᵀ (T, S) is divided by sqrt(d_k), softmax runs over the keys, and the weights average V into (T, d_v); "
    "written out in NumPy it equals the package's attention (largest difference less than 1e-12).":
        "QKᵀ (T, S) 除以 sqrt(d_k)，Softmax 沿键的方向归一化，再用这些权重对 V 加权平均，得到 (T, d_v)；"
        "用 NumPy 逐步写出来，与本包的注意力实现相等（最大差异小于 1e-12）。",
    "Q Vᵀ compares queries with contents, not labels, and returns a blend of keys. With d_k = 16 and d_v = 8 it "
    "does not even run: Q (4, 16) @ Vᵀ (8, 4) raises ValueError (16 and 8 differ).":
        "Q Vᵀ 是拿查询去比较内容而不是标签，返回的还是键的混合。d_k = 16、d_v = 8 时它甚至无法运行："
        "Q (4, 16) @ Vᵀ (8, 4) 会抛出 ValueError（16 与 8 不等）。",
    "sigmoid scores each key on its own, so a row is not a distribution: the rows of sigmoid(QKᵀ/sqrt(d_k)) for "
    "4 keys sum to [1.832, 1.584, 1.406, 1.997], not 1, and grow with the number of keys.":
        "sigmoid 对每个键单独打分，所以一行不是一个概率分布：4 个键时 sigmoid(QKᵀ/sqrt(d_k)) 各行之和为 "
        "[1.832, 1.584, 1.406, 1.997]，不是 1，而且会随键的个数增长。",
    "QᵀK sums over positions, not features: it is (16, 16) (d_k, d_k), and times V (4, 8) it raises ValueError "
    "(16 and 4 differ; when T = d_k it would run, mixing features, not positions).":
        "QᵀK 是对位置求和，而不是对特征：它是 (16, 16)，即 (d_k, d_k)，再乘 V (4, 8) 会抛出 ValueError"
        "（16 与 4 不等；若 T = d_k 倒是能运行，但混合的是特征而不是位置）。",
    # --- Q5 ---
    "Q5. Which value is usually written into the scores of positions that must not be attended to?":
        "Q5. 对于不允许关注的位置，通常往它们的分数里填什么值？",
    "The mean of the row": "这一行的平均值",
    "exp(0) = 1 is not 0: with scores [-2, -1, blocked] filled with 0, the blocked key gets weight 0.6652.":
        "exp(0) = 1 不是 0：分数 [-2, -1, 被屏蔽] 中被屏蔽的位置填 0 时，被屏蔽的键得到权重 0.6652。",
    "exp(1) = 2.718 is not 0: with scores [-2, -1, blocked] filled with 1, the blocked key gets weight 0.8438.":
        "exp(1) = 2.718 不是 0：分数 [-2, -1, 被屏蔽] 中被屏蔽的位置填 1 时，被屏蔽的键得到权重 0.8438。",
    "exp(-inf) = 0, so the blocked key gets weight 0.0 exactly. (A large negative number such as -1e9 also gives "
    "about 0, but a row with every key blocked then gets uniform weights [0.3333, 0.3333, 0.3333], and -1e9 is "
    "-inf in float16.)":
        "exp(-inf) = 0，所以被屏蔽的键的权重恰好是 0.0。（-1e9 这样的大负数也能得到约等于 0 的权重，"
        "但一整行的键都被屏蔽时，它会给出均匀权重 [0.3333, 0.3333, 0.3333]；而且在 float16 中 -1e9 就是 -inf。）",
    "exp(the row mean -1.5) = 0.2231 is not 0: with scores [-2, -1, blocked] filled with the row mean -1.5, the "
    "blocked key gets weight 0.3072.":
        "exp(行均值 -1.5) = 0.2231 不是 0：分数 [-2, -1, 被屏蔽] 中被屏蔽的位置填行均值 -1.5 时，"
        "被屏蔽的键得到权重 0.3072。",
    # --- Q6 ---
    "Q6. What is the main drawback of additive attention compared with scaled dot-product attention?":
        "Q6. 与缩放点积注意力相比，加性注意力的主要缺点是什么？",
    "An extra layer and a tanh per pair, hard to map onto optimised matrix products":
        "每一对都要多算一层和一个 tanh，难以映射到高度优化的矩阵乘法上",
    "The sequence length must equal the feature dimension": "序列长度必须等于特征维度",
    "It cannot model how related two words are in meaning": "它无法刻画两个词在语义上的相关程度",
    "It only handles fixed-length sentences": "它只能处理定长的句子",
    "for T = S = 256 and d_a = 64 hidden units, additive scoring builds a (256, 256, 64) tensor of tanh's -- "
    "4,194,304 numbers -- where the dot product needs one (256, 256) matrix product (65,536 scores); timed in "
    "notebooks 02 and 16.":
        "T = S = 256、隐藏单元 d_a = 64 时，加性打分要构造一个 (256, 256, 64) 的 tanh 张量——4,194,304 个数；"
        "而点积只需要一次 (256, 256) 的矩阵乘法（65,536 个分数）。第 02 课和第 16 课给出了计时。",
    "nothing must be equal: 3 queries of size 5 against 7 keys of size 4 give scores (3, 7) (additive scoring does "
    "not even need d_q = d_k).":
        "没有什么必须相等：3 个 5 维的查询对 7 个 4 维的键，得到 (3, 7) 的分数（加性打分甚至不要求 d_q = d_k）。",
    "it is a learned scorer, so it can model relevance: Bahdanau et al. (2015) learned translation alignments with "
    "it, and Vaswani et al. (2017, §3.2.1), citing Britz et al. (2017), report that it performs like the dot product "
    "for small d_k and better than the unscaled dot product for large d_k.":
        "它是一个可学习的打分器，当然能刻画相关性：Bahdanau 等人（2015）正是用它学会了翻译中的对齐；"
        "Vaswani 等人（2017，§3.2.1）引用 Britz 等人（2017）的结果指出，d_k 较小时它与点积表现相当，"
        "d_k 较大时优于未缩放的点积。",
    "the same weights score any number of keys: 3 keys give (1, 3), 7 keys give (1, 7); nothing in W_q, W_k, v_a "
    "depends on the length.":
        "同一组权重可以给任意多个键打分：3 个键得到 (1, 3)，7 个键得到 (1, 7)；W_q、W_k、v_a 都与长度无关。",
    # --- Q7 ---
    "Q7. Which of these are steps of scaled dot-product attention?": "Q7. 下面哪些是缩放点积注意力的步骤？",
    "Dot products of Q and K give a score matrix": "Q 与 K 的点积给出分数矩阵",
    "The scores are divided by sqrt(d_k)": "分数除以 sqrt(d_k)",
    "Softmax normalises the scores": "Softmax 对分数做归一化",
    "An element-wise convolution over V produces the output": "对 V 做逐元素卷积得到输出",
    "softmax turns each row of scores into weights >= 0 that sum to 1 (here: smallest weight 0.065; row sums "
    "differ from 1 by less than 1e-12).":
        "Softmax 把每一行分数变成非负、和为 1 的权重（这里最小的权重是 0.065；各行之和与 1 的差小于 1e-12）。",
    "there is no convolution: each output row is the weighted sum sum_j p_ij v_j of the value rows, checked by a "
    "loop against P V (largest difference less than 1e-12).":
        "这里没有卷积：输出的每一行是值向量的加权和 sum_j p_ij v_j，用循环逐项计算并与 P V 对比"
        "（最大差异小于 1e-12）。",
    # --- Q8 ---
    "Q8. Which statements about the factor 1/sqrt(d_k) are true?": "Q8. 关于系数 1/sqrt(d_k)，哪些说法正确？",
    "It acts as a softmax temperature": "它相当于 Softmax 的温度",
    "It counters the growth of the dot product's variance with d_k": "它抵消了点积方差随 d_k 的增长",
    "It makes all attention weights sum to 1": "它让所有注意力权重之和为 1",
    "It reduces the model's number of parameters": "它减少了模型的参数量",
    "softmax(s / sqrt(d_k)) is softmax at temperature tau = sqrt(d_k): for d_k = 64, softmax(s / 8) and "
    "softmax(s, temperature=8) agree (difference less than 1e-12); a larger tau gives flatter weights.":
        "softmax(s / sqrt(d_k)) 就是温度 tau = sqrt(d_k) 的 Softmax：d_k = 64 时，softmax(s / 8) 与 "
        "softmax(s, temperature=8) 一致（差异小于 1e-12）；tau 越大，权重越平坦。",
    # --- Q9 ---
    "Q9. What must hold between the shapes of Q and K for their dot products to exist?":
        "Q9. Q 和 K 的形状满足什么条件，它们的点积才有定义？",
    "Their last axes must be equal": "最后一维必须相等",
    "Their first axes must be equal": "第一维必须相等",
    "Both must be 2-D matrices": "两者都必须是二维矩阵",
    "Their shapes may differ arbitrarily": "形状可以任意不同",
    "Q (T, d_k) @ Kᵀ (d_k, S) pairs Q's last axis with K's last axis: both d_k = 16 here, giving scores (4, 6).":
        "Q (T, d_k) @ Kᵀ (d_k, S) 把 Q 的最后一维与 K 的最后一维配对：这里两者都是 d_k = 16，得到 (4, 6) 的分数。",
    "T and S may differ: Q (4, 16) against K (6, 16) gives scores (4, 6) -- decoding one new token against a long "
    "cache does exactly that.":
        "T 和 S 可以不同：Q (4, 16) 对 K (6, 16) 得到 (4, 6) 的分数——解码时用一个新 Token 去对一段很长的缓存，"
        "正是这种情形。",
    "leading axes (batch, heads) broadcast: Q (2, 3, 4, 16) and K (2, 3, 6, 16) give scores (2, 3, 4, 6).":
        "前面的维度（批、头）会广播：Q (2, 3, 4, 16) 和 K (2, 3, 6, 16) 得到 (2, 3, 4, 6) 的分数。",
    "mismatched last axes fail: Q (4, 16) with K (4, 8) raises ValueError: q and k must have the same d_k (last "
    "axis): q (4, 16), k (4, 8)":
        "最后一维不一致就会失败：Q (4, 16) 与 K (4, 8) 会抛出 ValueError：q and k must have the same d_k (last "
        "axis): q (4, 16), k (4, 8)",
    # --- Q10 ---
    "Q10. What does computing attention with matrix products gain?": "Q10. 用矩阵乘法计算注意力有什么好处？",
    "All positions are computed at once, which suits GPU parallelism": "所有位置一次算完，适合 GPU 并行",
    "The forward and the backward pass both reuse matrix-product kernels": "前向和反向传播都能复用矩阵乘法内核",
    "It lowers the complexity to O(n)": "它把复杂度降到 O(n)",
    "The intermediate score matrix need not be stored": "中间的分数矩阵不必存储",
    "one matrix product scores every (query, key) pair at once, with no loop over positions -- what GPUs run "
    "fastest; it equals the loop over queries and keys (largest difference less than 1e-12).":
        "一次矩阵乘法就给所有（查询, 键）对打完分，不需要对位置循环——这正是 GPU 最擅长的；"
        "结果与对查询和键的双重循环相等（最大差异小于 1e-12）。",
    "the backward pass is matrix products too: dV = Pᵀ dO, dP = dO Vᵀ, dQ = dS K / sqrt(d_k), dK = dSᵀ Q / "
    "sqrt(d_k); written out they equal attention_backward (largest difference less than 1e-12).":
        "反向传播同样是矩阵乘法：dV = Pᵀ dO，dP = dO Vᵀ，dQ = dS K / sqrt(d_k)，dK = dSᵀ Q / sqrt(d_k)；"
        "逐步写出来与 attention_backward 相等（最大差异小于 1e-12）。",
    "still O(n² d): doubling n from 256 to 512 multiplies the weight entries from 65,536 to 262,144 and the "
    "multiply-adds of QKᵀ and PV (d_k = d_v = 16) from 2,097,152 to 8,388,608 -- x4, not x2.":
        "仍然是 O(n² d)：n 从 256 翻倍到 512，权重元素从 65,536 个增加到 262,144 个，QKᵀ 和 PV 的乘加次数"
        "（d_k = d_v = 16）从 2,097,152 增加到 8,388,608——是 x4，不是 x2。",
    "the matrix-product form builds the whole (n, n) weight matrix: 524,288 bytes at n = 256, 2,097,152 at n = 512 "
    "(x4) in float64. Not storing it takes a different algorithm, FlashAttention's tiles with an online softmax "
    "(notebook 13).":
        "矩阵乘法的写法会构造完整的 (n, n) 权重矩阵：float64 下 n = 256 时 524,288 字节，n = 512 时 2,097,152 "
        "字节（x4）。要不存它，得换一种算法：FlashAttention 的分块加在线 Softmax（第 13 课）。",
}
