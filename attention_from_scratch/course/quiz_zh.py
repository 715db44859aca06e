"""The quiz in Chinese: every English text of ``quiz`` (questions, options, notes, explanations) -> 中文.

The frame and the course's extra questions are here, the article's Q1-Q10 in ``quiz_zh_articles.py``.
Keys are the English as the quiz renders it; the numbers in a key are placeholders (see ``i18n.Catalog``),
so the Chinese always shows the numbers computed now.
tests/test_quiz.py renders every text and fails on one without a Chinese entry, or an entry nothing renders.
"""

from __future__ import annotations

from .i18n import Catalog
from .quiz_zh_articles import ARTICLE_QUESTIONS_ZH

__all__ = ["QUIZ_ZH"]

_FRAME = {
    "Right.": "正确。",
    "Not quite: the answer is {answer}.": "不太对：答案是 {answer}。",
    "Answer with one letter.": "请用一个字母作答。",
    'Select all that apply: answer with letters, e.g. "AC".': '多选题：选出所有正确项，用字母作答，例如 "AC"。',
    "Option by option:": "逐项说明：",
    "- {letter} (you chose it) is wrong: ": "- {letter}（你选了它）是错的：",
    "- {letter} (you left it out) is right: ": "- {letter}（你漏选了它）是对的：",
    "- {letter} is right: ": "- {letter} 是对的：",
    "Not answered yet: replace None with your answer (one letter) and run the cell again.":
        "还没有作答：把 None 换成你的答案（一个字母），再运行这个单元格。",
    "Not answered yet: replace None with your answer (letters) and run the cell again.":
        "还没有作答：把 None 换成你的答案（字母），再运行这个单元格。",
    "Not answered yet: replace None with your answer (a number) and run the cell again.":
        "还没有作答：把 None 换成你的答案（一个数），再运行这个单元格。",
}

_EXTRAS = {
    "What is the dot product (1, 2, 3, 4) · (2, 0, 1, 3)?": "点积 (1, 2, 3, 4) · (2, 0, 1, 3) 等于多少？",
    "Multiply position by position and add: 1·2 + 2·0 + 3·1 + 4·3 = 2 + 0 + 3 + 12 = 17.":
        "逐位相乘再相加：1·2 + 2·0 + 3·1 + 4·3 = 2 + 0 + 3 + 12 = 17。",
    "What is softmax([1, 2, 3])? Give the three weights (3 decimals are enough).":
        "softmax([1, 2, 3]) 等于多少？给出三个权重（保留 3 位小数即可）。",
    "exp(1), exp(2), exp(3) = 2.718, 7.389, 20.09, sum 30.19; divided by the sum: [0.09003, 0.2447, 0.6652]. "
    "Differences of 1 give ratios of e: the largest score wins, but not outright.":
        "exp(1)、exp(2)、exp(3) = 2.718、7.389、20.09，总和 30.19；各自除以总和：[0.09003, 0.2447, 0.6652]。"
        "分数相差 1，权重之比就是 e：最大的分数占优，但并非通吃。",
    "q and k have d_k = 64 independent entries, each of mean 0 and variance 1. What is the variance of the score q·k?":
        "q 和 k 各有 d_k = 64 个相互独立的分量，每个均值为 0、方差为 1。分数 q·k 的方差是多少？",
    "q·k is a sum of 64 independent products q_i k_i, each of mean 0 and variance E[q_i²] E[k_i²] = 1; variances "
    "of independent terms add, so Var(q·k) = d_k = 64. A Monte Carlo run with 20,000 pairs gives 63.71.":
        "q·k 是 64 个相互独立的乘积 q_i k_i 之和，每一项均值为 0、方差为 E[q_i²] E[k_i²] = 1；独立项的方差可以相加，"
        "所以 Var(q·k) = d_k = 64。用 20,000 对做蒙特卡洛模拟，得到 63.71。",
    "Why does attention divide the scores by sqrt(d_k)?": "注意力为什么要把分数除以 sqrt(d_k)？",
    "To make the matrix product faster": "为了让矩阵乘法更快",
    "To keep the scores' variance near 1, so softmax does not saturate and gradients do not vanish":
        "为了让分数的方差保持在 1 附近，使 Softmax 不饱和、梯度不消失",
    "To turn the dot product into a cosine similarity": "为了把点积变成余弦相似度",
    "Because the causal mask requires it": "因为因果掩码要求这样做",
    "the scale is one extra multiplication after the product; it makes nothing faster.":
        "缩放只是在乘法之后多做一次乘法，不会让任何东西变快。",
    "Scores grow like sqrt(d_k), softmax turns nearly one-hot and its gradient vanishes. For d_k = 512 and 16 keys "
    "the top weight averages 0.936 unscaled vs 0.245 scaled, and the softmax Jacobian norm 0.0834 vs 0.3059.":
        "分数的量级按 sqrt(d_k) 增长，Softmax 变得几乎是 one-hot，梯度随之消失。d_k = 512、16 个键时，"
        "最大权重平均为 0.936（未缩放）对 0.245（缩放后），Softmax 雅可比矩阵的范数为 0.0834 对 0.3059。",
    "cosine divides by |q||k|, which changes from pair to pair; sqrt(d_k) is one constant. Scaled scores are not "
    "confined to [-1, 1]: for d_k = 64 they reach 1.04 here.":
        "余弦相似度除以的是 |q||k|，每一对都不同；sqrt(d_k) 只是一个常数。缩放后的分数并不局限在 [-1, 1] 内："
        "这里 d_k = 64 时就达到了 1.04。",
    "the mask fills blocked scores with -inf after scaling and works with any scale.":
        "掩码是在缩放之后把被屏蔽的分数填成 -inf，与缩放系数取多少无关。",
    "Why are masked scores set to -inf rather than 0 before softmax?":
        "在 Softmax 之前，为什么把被掩码的分数设为 -inf 而不是 0？",
    "-inf is faster to compute": "-inf 算起来更快",
    "0 would make the row sum exceed 1": "填 0 会让一行之和超过 1",
    "exp(-inf) = 0 gives the masked key weight exactly 0, while exp(0) = 1 still gives it a share of the attention":
        "exp(-inf) = 0 让被掩码的键的权重恰好为 0，而 exp(0) = 1 仍会分给它一部分注意力",
    "There is no difference": "两者没有区别",
    "both are one fill of the same array; the point is the value exp(-inf) = 0, not speed.":
        "两者都是对同一个数组做一次填充；关键在于 exp(-inf) = 0 这个值，而不是速度。",
    "softmax divides by the row's sum, so rows sum to 1 whatever is filled in; the harm is where the weight goes "
    "(the masked key gets 0.6652 of [-2, -1, 0]).":
        "Softmax 会除以这一行的和，所以无论填什么，每行之和都是 1；问题在于权重流向了哪里"
        "（在 [-2, -1, 0] 中，被掩码的键分到 0.6652）。",
    "softmax gives exp(0) = 1, not 0, to a score set to 0: scores [2, 1, masked] get weights [0.6652, 0.2447, "
    "0.09003] with 0 but [0.7311, 0.2689, 0] with -inf, because exp(-inf) = 0. Worse, when the allowed scores are "
    "negative, 0 is the highest score in the row: scores [-2, -1, masked] filled with 0 give the masked key the "
    "largest weight, 0.6652.":
        "分数设为 0 时，Softmax 给它的是 exp(0) = 1，而不是 0：分数 [2, 1, 被掩码] 填 0 得到权重 "
        "[0.6652, 0.2447, 0.09003]，填 -inf 则得到 [0.7311, 0.2689, 0]，因为 exp(-inf) = 0。更糟的是，"
        "当允许的分数都是负数时，0 就成了这一行的最大分数：分数 [-2, -1, 被掩码] 填 0，被掩码的键反而得到最大的权重 0.6652。",
    "filled with 0, the masked key in scores [-2, -1, masked] gets weight 0.6652.":
        "填 0 时，分数 [-2, -1, 被掩码] 中被掩码的键得到权重 0.6652。",
    "A model with d_model = 512 uses 8 attention heads. What is d_k per head?":
        "一个 d_model = 512 的模型用 8 个注意力头。每个头的 d_k 是多少？",
    "The model width is split evenly across heads: d_k = d_model / h = 512 / 8 = 64, so eight heads cost about as "
    "much as one full-width head.":
        "模型宽度平均分给各个头：d_k = d_model / h = 512 / 8 = 64，所以八个头的计算量与一个全宽的头大致相当。",
    "How do the time and memory of standard attention grow with the sequence length n?":
        "标准注意力的时间和内存如何随序列长度 n 增长？",
    "that would multiply the cost by 2 when n doubles; measured, the weights grow from 524,288 to 2,097,152 bytes "
    "for n = 256 -> 512: x4 = 2², so O(n²).":
        "那样的话 n 翻倍时开销应乘以 2；实测 n = 256 -> 512 时，权重从 524,288 字节增长到 2,097,152 字节："
        "x4 = 2²，所以是 O(n²)。",
    "that would multiply the cost by about 2.2 when n doubles; measured, the weights grow from 524,288 to 2,097,152 "
    "bytes for n = 256 -> 512: x4 = 2², so O(n²).":
        "那样的话 n 翻倍时开销应乘以约 2.2；实测 n = 256 -> 512 时，权重从 524,288 字节增长到 2,097,152 字节："
        "x4 = 2²，所以是 O(n²)。",
    "that would multiply the cost by 8 when n doubles; measured, the weights grow from 524,288 to 2,097,152 bytes "
    "for n = 256 -> 512: x4 = 2², so O(n²).":
        "那样的话 n 翻倍时开销应乘以 8；实测 n = 256 -> 512 时，权重从 524,288 字节增长到 2,097,152 字节："
        "x4 = 2²，所以是 O(n²)。",
    "Every query meets every key: an n x n score matrix, O(n² d) time and O(n²) memory. Doubling n from 256 to 512 "
    "makes the weights grow from 524,288 to 2,097,152 bytes (x4).":
        "每个查询都要和每个键相遇：一个 n x n 的分数矩阵，O(n² d) 的时间和 O(n²) 的内存。n 从 256 翻倍到 512，"
        "权重从 524,288 字节增长到 2,097,152 字节（x4）。",
    "What does FlashAttention avoid storing in full in GPU memory?": "FlashAttention 避免在 GPU 显存中完整存储什么？",
    "The query matrix Q": "查询矩阵 Q",
    "The n x n matrix of scores / attention weights": "n x n 的分数 / 注意力权重矩阵",
    "The KV cache": "键值缓存（KV Cache）",
    "The output matrix": "输出矩阵",
    "Q is an input of n x d_k numbers; it is read tile by tile but exists in full, like K and V.":
        "Q 是 n x d_k 个数的输入；它被逐块读取，但和 K、V 一样是完整存在的。",
    "FlashAttention computes softmax(QKᵀ)V tile by tile with a running max and sum (online softmax), so the n x n "
    "scores/weights never exist in full in GPU memory: for n = 16,384 they would be 1.0 GiB per head in float32. "
    "It is exact, not an approximation.":
        "FlashAttention 借助运行最大值和运行和（在线 Softmax）逐块计算 softmax(QKᵀ)V，所以 n x n 的分数/权重"
        "从不完整地出现在 GPU 显存里：n = 16,384 时，float32 下每个头就要 1.0 GiB。它是精确计算，不是近似。",
    "the KV cache belongs to decoding and is shrunk by GQA/MQA/MLA (notebooks 09, 11); FlashAttention removes the "
    "n x n matrix.":
        "键值缓存属于解码阶段，靠 GQA/MQA/MLA 来缩小（第 09、11 课）；FlashAttention 去掉的是 n x n 矩阵。",
    "the output (n x d_v) is the result: it is written in full.": "输出 (n x d_v) 就是结果本身：它要完整写出。",
    "In self-attention, what are Q, K and V?": "在自注意力中，Q、K、V 是什么？",
    "The token embeddings X, used three times": "Token 嵌入 X 本身，用了三次",
    "Three learned linear projections of the same embeddings: X W_Q, X W_K, X W_V":
        "同一组嵌入的三个可学习线性投影：X W_Q、X W_K、X W_V",
    "Three independent random matrices": "三个相互独立的随机矩阵",
    "The outputs of three different layers": "三个不同层的输出",
    "with X used three times the scores X Xᵀ are symmetric (max asymmetry less than 1e-12): 'i looks for j' equals "
    "'j looks for i'. And x_i·x_i = |x_i|² tends to be the largest score of its row, so each token attends mostly to "
    "itself: for 4 random tokens (d = 8) the diagonal weights are [0.598, 0.8921, 0.5576, 0.5077], the largest of "
    "the row in 4 of 4 rows. Nothing is learned that could make a token look for something other than itself.":
        "X 用三次时，分数 X Xᵀ 是对称的（最大不对称量小于 1e-12）：“i 寻找 j”等于“j 寻找 i”。而且 "
        "x_i·x_i = |x_i|² 往往是所在行最大的分数，于是每个 Token 主要关注它自己：4 个随机 Token（d = 8）"
        "的对角线权重为 [0.598, 0.8921, 0.5576, 0.5077]，4 行中有 4 行是该行最大值。没有任何可学习的东西能让"
        "一个 Token 去寻找自身以外的内容。",
    "Q = X W_Q, K = X W_K, V = X W_V: learned projections of the same embeddings, so what a token looks for (W_Q) "
    "can differ from what it offers (W_K) and from what it passes on (W_V). Raw scores X Xᵀ are symmetric (max "
    "asymmetry less than 1e-12); projected scores are not (max asymmetry 7.04).":
        "Q = X W_Q，K = X W_K，V = X W_V：同一组嵌入的可学习投影，所以一个 Token 要找什么（W_Q）、"
        "能提供什么（W_K）、传递什么（W_V）可以各不相同。原始分数 X Xᵀ 是对称的（最大不对称量小于 1e-12）；"
        "投影后的分数则不对称（最大不对称量 7.04）。",
    "random matrices would ignore the tokens; W_Q, W_K, W_V are learned and applied to X.":
        "随机矩阵会无视 Token 本身；W_Q、W_K、W_V 是学出来的，并作用在 X 上。",
    "all three come from the same input X of the same layer, through three projections.":
        "三者都来自同一层的同一个输入 X，经过三个不同的投影。",
    "DeepSeek-V3's Multi-head Latent Attention: how many values does it cache per token per layer?":
        "DeepSeek-V3 的多头潜在注意力（MLA）：每个 Token 每层要缓存多少个数值？",
    "MLA caches the compressed c_KV (512 values) plus one shared RoPE key (64): 576 values per token per layer. "
    "Standard MHA with the same heads would cache K and V for 128 heads, 40,960 values -- 71x more.":
        "MLA 缓存压缩后的 c_KV（512 个数值）加一个共享的 RoPE 键（64 个）：每个 Token 每层 576 个数值。"
        "头数相同的标准 MHA 要为 128 个头缓存 K 和 V，共 40,960 个数值——多 71 倍。",
}

# formulas read the same in both languages ("-inf", "O(n²)" have no word, so they are left as they are)
_SAME = ["softmax(QKᵀ / sqrt(d_k)) V", "softmax(QVᵀ / sqrt(d_k)) K", "sigmoid(QKᵀ / sqrt(d_k)) V",
         "softmax(QᵀK / sqrt(d_k)) V"]

QUIZ_ZH = Catalog({**_FRAME, **ARTICLE_QUESTIONS_ZH, **_EXTRAS, **{s: s for s in _SAME}})
